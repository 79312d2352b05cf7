"""Secrets (issue 14 item 11): secret-bearing files are withheld and secrets in content
redacted by default, on real files; ``include_secrets`` (``--include-secrets``) shows them.

Fixtures are real files: a PEM private key (random key material in the real format), a
``.env`` with AWS- and GitHub-shaped tokens, a Python file with hard-coded tokens, a test
module embedding a private key.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import ClientSession, StdioServerParameters, stdio_client

import dagctx.nodes.shell as shell_module
import dagctx.nodes.text as text_module
from dagctx import Session
from dagctx._lines import split_lines
from dagctx._secrets import redact, secret_file_reason
from dagctx.context import Context
from dagctx.knowledge import KnowledgeStore, Workspace
from dagctx.tokens import DEFAULT_ENCODING, TokenCounter
from dagctx.tools import ContextTool, get_file_tools, get_graph_tools
from dagctx.tools.knowledge import add_knowledge, search_knowledge
from dagctx.watch.scan import scan_tree

GITHUB = "ghp_" + "wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx"
AWS_ID = "AKIA" + "QYLPMN5HFIQR7XYZ"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
SLACK = "xoxb-" + "263594206564-2343594206574-FGqddMF8t08v8N7Oq4i57vs1"
KEY_BODY_LINES = 25


def private_key(seed: int = 0) -> str:
    """A PEM private key block: random key material in the real format."""
    rng = random.Random(seed)
    body = base64.b64encode(bytes(rng.randrange(256) for _ in range(48 * KEY_BODY_LINES)))
    lines = [body[i : i + 64].decode() for i in range(0, len(body), 64)][:KEY_BODY_LINES]
    return (
        "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----\n"
    )


CONFIG_PY = f'''"""Settings with hard-coded credentials."""
GITHUB_TOKEN = "{GITHUB}"
AWS_ACCESS_KEY_ID = "{AWS_ID}"
STRIPE_KEY = "{STRIPE}"
SLACK_TOKEN = "{SLACK}"


def token() -> str:
    return GITHUB_TOKEN
'''
ENV = f"AWS_ACCESS_KEY_ID={AWS_ID}\nAWS_SECRET_ACCESS_KEY={AWS_SECRET}\nGITHUB_TOKEN={GITHUB}\n"
SECRETS = (GITHUB, AWS_ID, AWS_SECRET, STRIPE, SLACK)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "server.key").write_text(private_key(1))
    (tmp_path / "certs" / "server.pem").write_text(private_key(2))
    (tmp_path / ".env").write_text(ENV)
    (tmp_path / ".env.production").write_text(ENV)
    (tmp_path / "config.py").write_text(CONFIG_PY)
    (tmp_path / "test_tls.py").write_text(
        f'KEY = """\\\n{private_key(3)}"""\n\n\ndef test_key():\n    assert KEY\n'
    )
    (tmp_path / "README.md").write_text("# Demo\nUses GITHUB_TOKEN from the environment.\n")
    return tmp_path


def drive_mcp(root: Path, scenario: Callable[[ClientSession], Awaitable[None]]) -> None:
    """Run ``scenario`` against a real ``dagctx mcp root`` (stdio), bounded in time."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "dagctx.cli", "mcp", str(root)],
        cwd=str(root),
        env=dict(os.environ),  # stdio_client passes only a few variables: PYTHONPATH too
    )

    async def main() -> None:
        with anyio.fail_after(60), (root.parent / "mcp-stderr.log").open("w") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                await scenario(client)

    anyio.run(main)


def render(root: Path, budget: int = 8000, **options: bool) -> tuple[Session, str]:
    session = Session(root, budget=budget, **options)
    scan_tree(session, ".")
    return session, session.project().text


class TestWithheldFiles:
    def test_secret_bearing_files_are_named_not_shown(self, tree: Path) -> None:
        session, text = render(tree)
        with session:
            for name in (".env", ".env.production", "certs/server.key", "certs/server.pem"):
                assert f"### {name} (#" in text
            assert "[withheld: environment file, may hold secrets]" in text
            assert "[withheld: private key file, may hold secrets]" in text
            assert "PRIVATE KEY-----\n" + private_key(1).split("\n")[1] not in text
            for secret in SECRETS:
                assert secret not in text

    def test_explain_lists_each_with_its_reason(self, tree: Path) -> None:
        session = Session(tree, budget=8000)
        with session:
            scan_tree(session, ".")
            projection = session.project()
            notes = {projection.labels[k]: v for k, v in projection.notes.items()}
            explain = projection.explain()
        assert notes[".env"].startswith("withheld: environment file")
        assert notes["certs/server.key"].startswith("withheld: private key file")
        assert notes["config.py"].startswith("4 secrets redacted (")
        assert notes["test_tls.py"] == "1 secret redacted (private key)"
        assert "README.md" not in notes
        assert "withheld: environment file, may hold secrets (include secrets" in explain
        assert "secrets: 4 secret-bearing files withheld, 2 files with secrets redacted" in explain
        assert json.loads(projection.to_json())["notes"] == projection.notes

    @pytest.mark.parametrize(
        ("path", "reason"),
        [
            (".env", "environment file"), ("deploy/.env.local", "environment file"),
            ("prod.env", "environment file"), (".envrc", "environment file"),
            ("home/.ssh/id_rsa", "private key file"), ("id_ed25519", "private key file"),
            ("tls/server.KEY", "private key file"), ("store.jks", "keystore"),
            ("client.p12", "keystore"), ("ca.crt", "certificate"),
            (".npmrc", "credentials file"), (".pypirc", "credentials file"),
            ("u/.netrc", "credentials file"), (".aws/credentials", "credentials file"),
            ("infra/terraform.tfstate", "credentials file"),
            ("id_rsa.pub", None), ("keys.py", None), ("environment.py", None),
            ("docs/env.md", None), ("monkey.py", None), ("credentials.md", None),
        ],
    )  # fmt: skip
    def test_names(self, path: str, reason: str | None) -> None:
        assert secret_file_reason(path) == reason


class TestRedaction:
    def test_tokens_in_code_are_redacted_and_the_code_is_kept(self, tree: Path) -> None:
        session, text = render(tree)
        with session:
            assert 'GITHUB_TOKEN = "[REDACTED GitHub Token]"' in text
            assert 'AWS_ACCESS_KEY_ID = "[REDACTED AWS Access Key]"' in text
            assert 'STRIPE_KEY = "[REDACTED Stripe Access Key]"' in text
            assert 'SLACK_TOKEN = "[REDACTED Slack Token]"' in text
            assert "def token() -> str:\n    return GITHUB_TOKEN" in text

    def test_an_embedded_private_key_keeps_its_line_numbers(self, tree: Path) -> None:
        with Session(tree, budget=8000) as session:
            node = session.text("test_tls.py", state="ALL")
            shown = session.project().text
        lines = split_lines((tree / "test_tls.py").read_text())
        assert len(node.lines) == len(lines)
        number, width = lines.index("def test_key():") + 1, len(str(1 + len(lines)))
        assert f"\n{number:>{width}} def test_key():\n" in shown
        assert "-----BEGIN RSA PRIVATE KEY-----\n" in "\n".join(node.lines) + "\n"
        assert node.lines[2] == "[REDACTED private key]"
        assert all(line == "" for line in node.lines[3 : 2 + KEY_BODY_LINES])
        assert node.lines[2 + KEY_BODY_LINES] == "-----END RSA PRIVATE KEY-----"
        assert private_key(3).split("\n")[1] not in shown

    def test_the_budget_counts_the_redacted_text(self, tree: Path) -> None:
        counter = TokenCounter(DEFAULT_ENCODING)
        for budget in (60, 120, 400, 8000):
            session, _ = render(tree, budget=budget)
            with session:
                projection = session.project()
                assert projection.tokens == counter.count_exact(projection.text) <= budget
                for secret in SECRETS:
                    assert secret not in projection.text

    def test_redaction_runs_once_per_content(
        self, tree: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        calls: list[int] = []
        real = text_module.redact

        def counting(text: str) -> object:
            calls.append(len(text))
            return real(text)

        monkeypatch.setattr(text_module, "redact", counting)
        with Session(tree, budget=8000) as session:
            node = session.text("config.py")
            assert len(calls) == 1
            for _ in range(5):
                session.tick()
            assert len(calls) == 1  # unchanged file: no re-read, no re-scan
            path = tree / "config.py"
            path.write_text(CONFIG_PY + f'NEW = "{STRIPE}x"\n')
            os.utime(path, ns=(1, 1))
            session.tick()
            assert len(calls) == 2
            assert node.content.endswith('NEW = "[REDACTED Stripe Access Key]"')

    def test_an_edit_that_adds_a_token_is_redacted_at_the_next_tick(self, tree: Path) -> None:
        with Session(tree, budget=8000) as session:
            scan_tree(session, ".")
            (tree / "README.md").write_text(f"# Demo\nexport GITHUB_TOKEN={GITHUB}\n")
            session.file_changed("README.md")
            text = session.tick().projection.text
        assert "export GITHUB_TOKEN=[REDACTED GitHub Token]" in text
        assert GITHUB not in text

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        st.lists(
            st.one_of(
                st.text(st.characters(codec="utf-8", exclude_characters="\r"), max_size=40),
                st.sampled_from(SECRETS),
                st.sampled_from(['key = "', "://u:", "@h", "-----BEGIN RSA PRIVATE KEY-----"]),
                st.just("\n"),
            ),
            max_size=30,
        )
    )
    def test_redaction_keeps_lines_and_removes_every_planted_token(self, pieces: list[str]) -> None:
        text = "".join(pieces)
        redacted, found = redact(text)
        assert len(split_lines(redacted)) == len(split_lines(text))
        for secret in (GITHUB, AWS_ID, STRIPE, SLACK):
            assert secret not in redacted
        assert (redacted == text) == (not found)


class TestOptIn:
    def test_include_secrets_shows_everything(self, tree: Path) -> None:
        session, text = render(tree, include_secrets=True)
        with session:
            for secret in SECRETS:
                assert secret in text
            assert private_key(1).split("\n")[1] in text
            assert session.project().notes == {}

    def test_the_choice_survives_save_and_load(self, tree: Path) -> None:
        path = tree / "saved.db"
        with Session(tree, budget=8000, include_secrets=True) as session:
            session.text(".env")
            session.save(path)
        with Session.load(path) as loaded:
            assert loaded.include_secrets
            assert GITHUB in loaded.project().text

    def test_cli_render_withholds_by_default_and_includes_on_request(self, tree: Path) -> None:
        def run(*extra: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "dagctx.cli", "render", str(tree), "--budget", "8000",
                 "--explain", *extra],
                capture_output=True, text=True, timeout=120, check=True,
            )  # fmt: skip

        default = run()
        assert GITHUB not in default.stdout and "[withheld: environment file" in default.stdout
        assert "secrets: 4 secret-bearing files withheld" in default.stderr
        included = run("--include-secrets")
        assert GITHUB in included.stdout and "[withheld" not in included.stdout


class TestReadFile:
    """``read_file`` hands files to the model directly: the same rules hold there."""

    def run(self, tree: Path, path: str, **state: object) -> str:
        ctx = Context("t")
        ctx.state.set("working_dir", str(tree))
        for key, value in state.items():
            ctx.state.set(key, value)
        tool = get_file_tools()[0].bind(ctx)
        return str(asyncio.run(tool.execute(path=path)))

    def test_secret_bearing_files_are_refused(self, tree: Path) -> None:
        assert self.run(tree, ".env") == (
            "Refused '.env': a secret-bearing file (environment file) is not shown."
        )
        assert self.run(tree, "certs/../certs/server.key") == (
            "Refused 'certs/../certs/server.key': a secret-bearing file (private key file) is"
            " not shown."
        )

    def test_secrets_in_content_are_redacted(self, tree: Path) -> None:
        result = self.run(tree, "config.py")
        assert 'GITHUB_TOKEN = "[REDACTED GitHub Token]"' in result
        assert all(secret not in result for secret in SECRETS)

    def test_include_secrets_reads_everything(self, tree: Path) -> None:
        assert self.run(tree, ".env", include_secrets=True) == ENV
        assert self.run(tree, "config.py", include_secrets=True) == CONFIG_PY


class TestShellOutput:
    """A command that prints a secret (``cat .env``) is redacted like a file's content."""

    def test_a_shell_job_printing_a_key_is_redacted_once(
        self, tree: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        calls: list[int] = []
        real = shell_module.redact

        def counting(text: str, *, unquoted: bool = False) -> object:
            calls.append(len(text))
            return real(text, unquoted=unquoted)

        monkeypatch.setattr(shell_module, "redact", counting)
        with Session(tree, budget=8000) as session:
            node = session.wait(session.shell("cat", [".env"]), timeout=30)
            script = "import sys; sys.stderr.write(open('config.py').read())"
            both = session.wait(session.shell(sys.executable, ["-c", script]), timeout=30)
            assert len(calls) == 4  # stdout and stderr of each command, once
            projection = session.project()
            for _ in range(3):
                session.tick()
            assert len(calls) == 4
        assert node.status == "completed"
        assert "AWS_ACCESS_KEY_ID=[REDACTED AWS Access Key]" in projection.text
        assert "GITHUB_TOKEN=[REDACTED GitHub Token]" in projection.text
        assert 'STRIPE_KEY = "[REDACTED Stripe Access Key]"' in projection.text
        for secret in SECRETS:
            assert secret not in projection.text
        assert projection.notes[node.id] == (
            "output: 3 secrets redacted (GitHub Token, Secret Keyword, AWS Access Key)"
        )
        assert projection.notes[both.id].startswith("output: 4 secrets redacted (")
        assert "2 command outputs with secrets redacted" in projection.explain()
        counter = TokenCounter(DEFAULT_ENCODING)
        assert projection.tokens == counter.count_exact(projection.text) <= 8000

    def test_the_run_shell_tool_and_a_saved_session_keep_it_redacted(self, tree: Path) -> None:
        path = tree / "saved.db"
        with Session(tree, budget=8000) as session:
            tool = next(t for t in get_graph_tools() if t.name == "run_shell").bind(session)
            reply = str(asyncio.run(tool.execute(command="cat", args=[".env"])))
            session.tick()
            session.save(path)
        assert "GITHUB_TOKEN=[REDACTED GitHub Token]" in reply and GITHUB not in reply
        with Session.load(path) as loaded:
            text = loaded.project().text
            assert GITHUB not in text and "[REDACTED GitHub Token]" in text
            assert any(note.startswith("output: ") for note in loaded.project().notes.values())

    def test_include_secrets_shows_the_output(self, tree: Path) -> None:
        with Session(tree, budget=8000, include_secrets=True) as session:
            node = session.wait(session.shell("cat", [".env"]), timeout=30)
            projection = session.project()
        assert GITHUB in projection.text and AWS_ID in projection.text
        assert node.id not in projection.notes


class TestKnowledge:
    """What the knowledge tools store and find is redacted: ``add_knowledge`` text and
    files, and the repository docs ``dagctx mcp`` indexes (a real ``dagctx mcp``)."""

    def test_dagctx_mcp_search_never_returns_a_secret(self, tree: Path) -> None:
        (tree / "docs").mkdir()
        (tree / "docs" / "deploy.md").write_text(
            f"# Deploy\n\nThe zeppelin deploy uses AWS_ACCESS_KEY_ID={AWS_ID} today.\n"
        )
        replies: dict[str, str] = {}

        async def scenario(client: ClientSession) -> None:
            for name, arguments in (
                ("add", {"name": "ops", "text": f"blimp token: {GITHUB}\n"}),
                ("add_file", {"name": "cfg", "path": "config.py"}),
            ):
                result = await client.call_tool("add_knowledge", arguments)
                replies[name] = str(result.content[0].text)  # type: ignore[union-attr]
            for query in ("zeppelin deploy", "blimp token", "GITHUB_TOKEN"):
                result = await client.call_tool("search_knowledge", {"query": query})
                replies[query] = str(result.content[0].text)  # type: ignore[union-attr]
            result = await client.call_tool("get_knowledge", {"name": "ops"})
            replies["get"] = str(result.content[0].text)  # type: ignore[union-attr]

        drive_mcp(tree, scenario)
        assert "AWS_ACCESS_KEY_ID=[REDACTED AWS Access Key]" in replies["zeppelin deploy"]
        assert "blimp token: [REDACTED GitHub Token]" in replies["blimp token"]
        assert 'GITHUB_TOKEN = "[REDACTED GitHub Token]"' in replies["GITHUB_TOKEN"]
        assert "; 1 secret redacted (GitHub Token);" in replies["add"]
        assert "; 4 secrets redacted (" in replies["add_file"]
        for reply in replies.values():
            assert all(secret not in reply for secret in SECRETS), reply

    def test_include_secrets_stores_them(self, tree: Path) -> None:
        ctx = Context("t")
        store = KnowledgeStore()
        ctx.state.set("workspace", Workspace("w", knowledge_store=store))
        ctx.state.set("knowledge_store", store)
        ctx.state.set("include_secrets", True)
        tool = ContextTool(add_knowledge).bind(ctx)
        reply = str(asyncio.run(tool.execute(name="ops", text=f"blimp token: {GITHUB}\n")))
        assert "redacted" not in reply
        assert GITHUB in search_knowledge(ctx, "blimp token")


_PIECES = st.sampled_from(
    [
        "a", "Z", "0", "7", "+", "=", "/", ".", "_", "-", " ", "\n", "Key", "TOKEN",
        "password", "secret", "cred", "://", "user:pw@", "BEGIN RSA PRIVATE KEY",
        "AKIAIOSFODNN7EXAMPLE", "deadbeef" * 3, "abcdefghijklmnop", "q1w2e3r4t5y6u7i8o9",
        "1234567890123456", "x" * 20,
    ]
)  # fmt: skip


def _reference_candidate_lines(text: str) -> list[str]:
    """The candidate lines as the first implementation found them: one regex per kind
    of line, every match looked at (the spec the faster scan must keep)."""
    import re
    import string

    part = re.compile(r"(?<![A-Za-z0-9+=])(?=[A-Za-z0-9+=]{16})(?=[A-Za-z+=]*\d)[A-Za-z0-9+=]+")
    special = re.compile(r"://[^\s/:@]+:[^\s/@]+@|BEGIN [A-Z ]*PRIVATE KEY")
    run = re.compile(r"[A-Za-z0-9+/=_.\-]{20}")
    keyword = re.compile(r"(?i)pass|pwd|secret|token|key|auth|cred")

    def line_at(at: int) -> tuple[int, int]:
        end = text.find("\n", at)
        return text.rfind("\n", 0, at) + 1, len(text) if end == -1 else end

    starts: dict[int, int] = {}
    for match in part.finditer(text):
        found = match.group()
        if found.strip(string.hexdigits) and not found.isdigit():
            first, end = line_at(match.start())
            starts[first] = end
    for match in special.finditer(text):
        first, end = line_at(match.start())
        starts[first] = end
    for match in keyword.finditer(text):
        first, end = line_at(match.start())
        if first not in starts and run.search(text, first, end):
            starts[first] = end
    return list(dict.fromkeys(text[first : starts[first]] for first in sorted(starts)))


class TestCandidateLines:
    @settings(max_examples=400, deadline=None)
    @given(pieces=st.lists(_PIECES, max_size=40))
    def test_the_lines_a_detector_could_flag_are_those_of_the_reference_scan(
        self, pieces: list[str]
    ) -> None:
        from dagctx._secrets import _candidate_lines

        text = "".join(pieces)
        assert _candidate_lines(text) == _reference_candidate_lines(text)

    @settings(max_examples=400, deadline=None)
    @given(
        pieces=st.lists(
            _PIECES | st.sampled_from(["é", "€ key", "ß" * 16, "\u212aey", "İ", "\udc80"]),
            max_size=40,
        )
    )
    def test_text_with_other_characters_finds_the_lines_of_the_reference_scan(
        self, pieces: list[str]
    ) -> None:
        from dagctx._secrets import _candidate_lines

        text = "".join(pieces)  # a Kelvin sign is a K to (?i); İ lowers to two characters
        assert _candidate_lines(text) == _reference_candidate_lines(text)

    def test_a_credential_line_needs_the_word_and_the_run_on_the_same_line(self) -> None:
        from dagctx._secrets import _candidate_lines

        text = "x" * 24 + "\nkey = 1\nnothing\ntoken = " + "y" * 20 + "\n" + "z" * 30 + " auth"
        assert _candidate_lines(text) == ["token = " + "y" * 20, "z" * 30 + " auth"]
        assert _candidate_lines(text.replace("x", "é")) == _candidate_lines(text)

    def test_a_text_without_a_url_or_key_header_is_not_searched_for_them(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import dagctx._secrets as secrets_module

        searched: list[str] = []

        class Counting:
            def __init__(self, pattern: re.Pattern[str]) -> None:
                self.pattern = pattern

            def finditer(self, text: str):  # type: ignore[no-untyped-def]
                searched.append(text)
                return self.pattern.finditer(text)

        for name in ("_URL_CREDENTIALS", "_KEY_HEADER"):
            monkeypatch.setattr(secrets_module, name, Counting(getattr(secrets_module, name)))
        secrets_module._candidate_lines("def f(x):\n    return x + 1\n" * 50)
        assert searched == []
        found = secrets_module._candidate_lines("url = 'https://user:hunter2@example.com'\n")
        assert searched and found == ["url = 'https://user:hunter2@example.com'"]


_KEYWORD_PIECES = st.sampled_from(
    [
        "password", "api_key", "secret", "db_pass", "PWD", " ", "=", "==", ":", "=>", ";",
        "!==", "(", ")", "[", "]", ",", "hunter2hunter2", "value_12345678", "\t", "x",
    ]
)  # fmt: skip


class TestKeywordDetector:
    @settings(max_examples=300, deadline=None)
    @given(pieces=st.lists(_KEYWORD_PIECES, max_size=20))
    def test_its_quoted_patterns_find_nothing_in_a_line_without_a_quote(
        self, pieces: list[str]
    ) -> None:
        from detect_secrets.plugins.keyword import KeywordDetector

        line = "".join(pieces)  # what lets the quoted finder skip such a line
        assert list(KeywordDetector().analyze_string(line, None)) == []

    def test_a_line_without_a_quote_is_not_handed_to_it_unless_unquoted(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from detect_secrets.plugins.keyword import KeywordDetector

        import dagctx._secrets as secrets_module

        analyzed: list[str] = []
        analyze = KeywordDetector.analyze_string

        def spy(self, string, denylist=None):  # type: ignore[no-untyped-def]
            analyzed.append(string)
            return analyze(self, string, denylist)

        monkeypatch.setattr(KeywordDetector, "analyze_string", spy)
        secrets_module._keyword_finder.cache_clear()
        try:
            quoted = secrets_module._keyword_finder(unquoted=False)
            assert list(quoted("password = hunter2hunter2hunter2")) == []
            assert analyzed == []
            assert set(quoted('password = "hunter2hunter2hunter2"')) == {"hunter2hunter2hunter2"}
            unquoted = secrets_module._keyword_finder(unquoted=True)
            assert set(unquoted("PASSWORD=hunter2hunter2hunter2")) == {"hunter2hunter2hunter2"}
            assert len(analyzed) == 2
        finally:
            secrets_module._keyword_finder.cache_clear()
