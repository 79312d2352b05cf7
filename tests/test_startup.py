"""Starting is cheap: ``import dagctx`` and ``dagctx --help`` / ``--version`` import no
third-party package (issue 15 item 4); every public name still imports from ``dagctx``.

Each check runs in a fresh interpreter (a subprocess), where ``sys.modules`` shows what an
import really pulled in. Timings are benchmarks (``python -m benchmarks``), not tests.
"""

from __future__ import annotations

import json
import subprocess
import sys

import dagctx

HEAVY = ("networkx", "pydantic", "mcp", "tiktoken", "anyio", "tree_sitter", "rich")


def _run(code: str) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; it prints one JSON value, returned here."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


_THIRD_PARTY = """
import json, sys
def third_party():
    top = {name.partition(".")[0] for name in sys.modules}
    ours = {"__main__", "dagctx", "_distutils_hack"}  # this script, the package, site hooks
    return sorted(top - set(sys.stdlib_module_names) - ours)
"""


class TestImportIsLazy:
    def test_import_dagctx_imports_no_third_party_package(self) -> None:
        found = _run(_THIRD_PARTY + "import dagctx\nprint(json.dumps(third_party()))")
        assert found == []

    def test_public_names_import_on_first_use(self) -> None:
        code = (
            "import json, sys\nimport dagctx\n"
            "before = 'networkx' in sys.modules\n"
            "missing = [n for n in dagctx.__all__ if getattr(dagctx, n, None) is None]\n"
            "from dagctx import Session, CycleError, NodeState\n"
            "print(json.dumps([before, missing, 'networkx' in sys.modules,"
            " Session.__module__, sorted(set(dagctx.__all__) - set(dir(dagctx)))]))"
        )
        before, missing, after, module, undirected = _run(code)  # type: ignore[misc]
        assert before is False and missing == [] and after is True
        assert module == "dagctx.session.core" or str(module).startswith("dagctx.session")
        assert undirected == []

    def test_subpackages_are_attributes(self) -> None:
        assert dagctx.tools.get_context_tools is not None
        assert dagctx.checkpoint.SQLiteCheckpointStore is dagctx.SQLiteCheckpointStore

    def test_an_unknown_name_is_an_attribute_error(self) -> None:
        try:
            dagctx.not_a_name  # type: ignore[attr-defined]  # noqa: B018
        except AttributeError as exc:
            assert "not_a_name" in str(exc)
        else:
            raise AssertionError("no AttributeError")


class TestCommandLineStart:
    def test_help_and_version_import_no_third_party_package(self) -> None:
        for flag in ("--help", "--version"):
            code = (
                _THIRD_PARTY
                + "import contextlib, io\nfrom dagctx.cli import main\n"
                + "out = io.StringIO()\n"
                + "with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):\n"
                + f"    main([{flag!r}])\n"
                + "print(json.dumps([out.getvalue(), third_party()]))"
            )
            shown, found = _run(code)  # type: ignore[misc]
            assert found == [], flag
            assert "dagctx" in str(shown)

    def test_version_prints_the_version(self) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "dagctx.cli", "--version"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0
        assert done.stdout.startswith("dagctx ") and len(done.stdout.split()) == 2

    def test_python_m_dagctx_is_the_command(self) -> None:
        """``python -m dagctx`` runs the same command as ``python -m dagctx.cli``."""
        runs = [
            subprocess.run(
                [sys.executable, "-m", module, "--version"],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            for module in ("dagctx", "dagctx.cli")
        ]
        assert [run.returncode for run in runs] == [0, 0]
        assert runs[0].stdout == runs[1].stdout
        assert runs[0].stdout.startswith("dagctx ")
