"""The reference graph between files and the ranking it adds: definitions from the real
parsers, links both ways (caller ↔ callee), personalized PageRank from seed files, and a
fixture repository where the graph, not the words, lifts the files a task needs."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import tree_sitter
from hypothesis import given, settings
from hypothesis import strategies as st

from dagctx import Session
from dagctx.outline import code
from dagctx.outline.references import (
    MAX_DEFINERS,
    GraphBuild,
    ReferenceGraph,
    definitions,
    references,
)
from dagctx.projection.relevance import GRAPH_WEIGHT
from dagctx.watch.scan import scan_tree

# The task names the cookie; the code that sets it calls a helper in another module
# (defined there, with no word of the task in it), and a view module calls the cookie code.
FILES = {
    "app/cookies.py": (
        "from app.headers import format_header_value\n\n\n"
        "def set_session_cookie(response, value, samesite):\n"
        "    '''Set the session cookie with its samesite attribute.'''\n"
        "    response.headers['Set-Cookie'] = format_header_value(value, samesite)\n"
    ),
    "app/headers.py": ("def format_header_value(value, flag):\n    return f'{value}; {flag}'\n"),
    "app/views.py": (
        "from app.cookies import set_session_cookie\n\n\n"
        "def login_view(response):\n"
        "    set_session_cookie(response, 'x', 'Lax')\n"
    ),
}
NAMES = ("alpha", "beta", "gamma", "delta")
UNRELATED = (
    "def compute_checksum_{i}(data):\n"
    "    total = 0\n"
    "    for byte in data:\n"
    "        total = (total * 31 + byte) % 65521\n"
    "    return total\n"
)


def make_repo(root: Path, unrelated: int = 12) -> Path:
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    for i in range(unrelated):
        (root / "app" / f"util_{i:02}.py").write_text(UNRELATED.format(i=i) * 3)
    return root


class TestGraph:
    def test_definitions_come_from_the_parser(self) -> None:
        assert definitions("a.py", FILES["app/cookies.py"]) == {"set_session_cookie"}
        assert definitions("a.go", "package a\nfunc Run() {}\n") == {"Run"}
        assert definitions("notes.txt", "def fake(): pass") == frozenset()
        assert "format_header_value" in references(FILES["app/cookies.py"])

    def test_links_go_both_ways(self) -> None:
        g = ReferenceGraph()
        for k, (path, text) in enumerate(FILES.items()):
            g.update(f"n{k}", 0, path, text)
        assert set(g.neighbours("n0")) == {"n1", "n2"}  # the callee and the caller
        assert set(g.neighbours("n1")) == {"n0"} and set(g.neighbours("n2")) == {"n0"}

    def test_update_and_remove_follow_one_file(self) -> None:
        g = ReferenceGraph()
        for k, (path, text) in enumerate(FILES.items()):
            g.update(f"n{k}", 0, path, text)
        assert not g.update("n1", 0, "app/headers.py", "")  # same version: nothing read
        assert g.update("n1", 1, "app/headers.py", "def other():\n    pass\n")
        assert set(g.neighbours("n0")) == {"n2"}
        g.remove("n2")
        assert g.neighbours("n0") == {} and "n2" not in g

    def test_a_name_many_files_define_links_nothing(self) -> None:
        g = ReferenceGraph()
        for k in range(MAX_DEFINERS + 1):
            g.update(f"d{k}", 0, f"d{k}.py", "def run():\n    pass\n")
        g.update("user", 0, "user.py", "run()\n")
        assert g.neighbours("user") == {}

    def test_rank_is_personalized_and_order_free(self) -> None:
        items = list(FILES.items()) + [
            (f"app/util_{i}.py", UNRELATED.format(i=i)) for i in range(5)
        ]
        ranks = []
        for seed in (1, 2, 3):
            g = ReferenceGraph()
            shuffled = list(enumerate(items))
            random.Random(seed).shuffle(shuffled)
            for k, (path, text) in shuffled:
                g.update(f"n{k}", 0, path, text)
            ranks.append(g.rank({"n0": 1.0}, walked_only=True))
        assert ranks[0] == ranks[1] == ranks[2]  # the same floats, whatever the build order
        assert set(ranks[0]) <= {"n0", "n1", "n2"} and ranks[0]["n1"] > 0 < ranks[0]["n2"]

    @given(
        st.lists(st.tuples(st.integers(0, 5), st.sampled_from(list(FILES.values()))), max_size=12)
    )
    @settings(max_examples=30, deadline=None)
    def test_incremental_equals_built_at_once(self, edits: list[tuple[int, str]]) -> None:
        texts = dict(enumerate([*FILES.values(), "", "", ""]))
        g = ReferenceGraph()
        for k, text in texts.items():
            g.update(f"n{k}", 0, f"f{k}.py", text)
        for version, (k, text) in enumerate(edits, 1):
            texts[k] = text
            g.update(f"n{k}", version, f"f{k}.py", text)
        fresh = ReferenceGraph()
        for k, text in texts.items():
            fresh.update(f"n{k}", 0, f"f{k}.py", text)
        for k in texts:
            assert g.neighbours(f"n{k}") == fresh.neighbours(f"n{k}")

    def test_links_kept_follow_a_name_crossing_the_definers_bound(self) -> None:
        g = ReferenceGraph()
        for k in range(MAX_DEFINERS + 1):
            g.update(f"d{k}", 0, f"d{k}.py", "def run():\n    pass\n")
        g.update("user", 0, "user.py", "run()\n")
        g.rank({"user": 1.0, "d0": 1.0})  # their links kept: none
        g.remove(f"d{MAX_DEFINERS}")  # run has MAX_DEFINERS definers now: it links
        assert set(g.neighbours("user")) == {f"d{k}" for k in range(MAX_DEFINERS)}
        assert g.neighbours("d0") == {"user": 1.0 / MAX_DEFINERS}
        g.rank({"user": 1.0, "d0": 1.0})
        g.update("user2", 0, "user2.py", "run()\n")  # a second user of it
        assert g.neighbours("d0") == {"user": 1.0 / MAX_DEFINERS, "user2": 1.0 / MAX_DEFINERS}
        g.remove("user2")
        g.rank({"user": 1.0, "d0": 1.0})
        g.update("d8", 1, "d8.py", "def run():\n    pass\n")  # one too many again
        assert g.neighbours("user") == {} and g.neighbours("d0") == {}
        g.rank({"user": 1.0, "d0": 1.0})
        g.update("user", 1, "user.py", "pass\n")  # uses it no more
        g.remove("d8")
        assert g.neighbours("d0") == {} and g.neighbours("user") == {}

    @given(
        st.lists(
            st.tuples(
                st.integers(0, MAX_DEFINERS + 2),
                st.none()
                | st.tuples(st.sets(st.sampled_from(NAMES)), st.sets(st.sampled_from(NAMES))),
                st.booleans(),
            ),
            max_size=60,
        )
    )
    @settings(max_examples=100, deadline=None)
    def test_links_kept_between_walks_equal_links_found_afresh(
        self, steps: list[tuple[int, tuple[set[str], set[str]] | None, bool]]
    ) -> None:
        """Walks (rank) keep each file's links; updates and removals of files defining
        or using names shared by about MAX_DEFINERS files forget the ones they move."""
        g = ReferenceGraph()
        texts: dict[int, str] = {}
        for version, (k, names, walk) in enumerate(steps, 1):
            if names is None:
                texts.pop(k, None)
                g.remove(f"n{k}")
            else:
                defs, refs = names
                texts[k] = "".join(f"def {n}():\n    pass\n" for n in sorted(defs))
                texts[k] += "x = [" + ", ".join(sorted(refs)) + "]\n"
                g.update(f"n{k}", version, f"f{k}.py", texts[k])
            if walk and texts:
                g.rank({f"n{j}": 1.0 for j in list(texts)[:3]})
            fresh = ReferenceGraph()
            for j, text in texts.items():
                fresh.update(f"n{j}", 0, f"f{j}.py", text)
            for j in range(MAX_DEFINERS + 3):
                assert g.neighbours(f"n{j}") == fresh.neighbours(f"n{j}")
            assert g._defined_by == fresh._defined_by  # no posting left behind
            assert g._referenced_by == fresh._referenced_by
            seeds = {f"n{j}": 1.0 + j for j in texts}
            assert g.rank(seeds) == fresh.rank(seeds)


class TestRankingOnAFixtureRepository:
    def test_caller_and_callee_rank_up(self, tmp_path: Path) -> None:
        root = make_repo(tmp_path)
        with Session(root, budget=400) as s:
            scan_tree(s, ".")
            s.focus("make the session cookie samesite attribute configurable")
            p = s.tick().projection
            scores = {
                s.get(nid).path: sc for nid, sc in p.scores.items() if hasattr(s.get(nid), "path")
            }
        cookies, headers, views = (scores[p] for p in FILES)
        assert cookies.lexical > 0 and headers.lexical == 0
        assert headers.graph > 0 and views.graph > 0  # the graph, not the words
        for i in range(12):
            other = scores[f"app/util_{i:02}.py"]
            assert other.graph == 0 and other.level < headers.level and other.level < views.level
        assert "graph" in p.explain(full=True) and f"×{GRAPH_WEIGHT:g}" in p.explain(full=True)

    def test_an_edited_file_seeds_the_graph(self, tmp_path: Path) -> None:
        root = make_repo(tmp_path)
        with Session(root, budget=400) as s:
            scan_tree(s, ".")
            s.focus("checksum")  # matches only the utilities
            s.tick()
            (root / "app" / "headers.py").write_text(FILES["app/headers.py"] + "# edited\n")
            s.file_changed("app/headers.py")
            p = s.tick().projection
            by_path = {
                s.get(nid).path: sc for nid, sc in p.scores.items() if hasattr(s.get(nid), "path")
            }
        assert by_path["app/headers.py"].recent == 1.0
        assert by_path["app/cookies.py"].graph > 0  # reached from the edited file
        assert by_path["app/views.py"].graph < by_path["app/cookies.py"].graph  # two steps

    def test_a_changed_file_is_parsed_once_a_turn(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # its definitions for the graph, its outline and its cuts come from one parse
        root = make_repo(tmp_path)
        path = root / "app" / "cookies.py"
        with Session(root, budget=400) as s:
            scan_tree(s, ".")
            s.focus("make the session cookie samesite attribute configurable")
            s.tick()
            parsed: list[bytes] = []
            parse = code._parse

            def counted(language: str, data: bytes) -> tree_sitter.Tree:
                parsed.append(data)
                return parse(language, data)

            monkeypatch.setattr(code, "_parse", counted)
            more = "".join(f"\n\ndef clear_cookie_{i}(response):\n    pass\n" for i in range(40))
            path.write_text(path.read_text() + more)
            s.file_changed("app/cookies.py")
            text = s.tick().projection.text
        assert "def clear_cookie_0(response):" in text  # a focused cut, made by the outline
        assert "of 166 lines of app/cookies.py shown" in text
        assert sum(b"def clear_cookie_39" in data for data in parsed) == 1


class TestGraphBuild:
    FILES = (
        ("a", 0, "a.py", "def restore(name):\n    return load_snapshot(name)\n"),
        ("b", 3, "b.py", "def load_snapshot(name):\n    return name\n"),
        ("c", 1, "c.py", "def other():\n    return restore('x')\n"),
    )

    def test_a_worker_reads_the_graph_the_caller_would(self) -> None:
        direct = ReferenceGraph()
        for key, version, path, text in self.FILES:
            direct.update(key, version, path, text)
        build = GraphBuild(self.FILES)
        build.start()
        built = build.result()
        assert sorted(built) == sorted(direct)
        for key, *_ in self.FILES:
            assert built.neighbours(key) == direct.neighbours(key)
        assert built.rank({"a": 1.0}) == direct.rank({"a": 1.0})
        assert not built.update("b", 3, "b.py", "")  # held at the version it was read at

    def test_never_started_it_reads_in_the_caller(self) -> None:
        assert sorted(GraphBuild(self.FILES).result()) == ["a", "b", "c"]

    def test_an_error_while_reading_is_raised_to_the_caller(self) -> None:
        build = GraphBuild([("a", 0, "a.py", None)])  # type: ignore[list-item]
        build.start()
        with pytest.raises(TypeError):
            build.result()
