"""A focused resume takes back what the ranking read of each unchanged file.

Real files and real ``session.db`` files: a session with a focus is scanned, ticked and
saved (as ``dagctx watch --focus`` does), and the resumed session with the same focus
must rank the files without tokenizing or parsing those that did not change (counted at
the functions that do: :func:`dagctx.projection.relevance.document_terms` and
:func:`dagctx.outline.references.definitions`), and project what a projection made
from scratch of the same graph makes.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from itertools import islice
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scratch_support import from_scratch

from dagctx.outline import references
from dagctx.projection import relevance
from dagctx.projection.file_terms import FileTerms, Read, Words, codes, digest_of, pack, unpack
from dagctx.session import Session, TickResult
from dagctx.session.store import SESSION_FILE
from dagctx.watch.tracker import TreeTracker

FOCUS = "parse the header checksum"
BUDGET = 1_500


def _write_tree(root: Path, files: int = 12) -> None:
    for i in range(files):
        path = root / f"pkg{i % 3}" / f"mod{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "".join(f"def f{i}_{k}(x):\n    return helper_{k}(x) + {k}\n" for k in range(30))
        path.write_text(body)
    (root / "pkg0" / "helpers.py").write_text(
        "".join(f"def helper_{k}(x):\n    return x * {k}\n" for k in range(30))
    )
    (root / "README.md").write_text("# Demo\n\nA tree to resume with a focus.\n")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    _write_tree(root)
    return root


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts of the files tokenized for the BM25 index (``"terms"``) and parsed for the
    reference graph (``"definitions"``, by path), through the functions that do it."""
    counted: Counter[str] = Counter()
    document_terms, definitions = relevance.document_terms, references.definitions

    def terms_spy(content: str, names: list[str]) -> Counter[str]:
        counted["terms"] += 1
        return document_terms(content, names)

    def definitions_spy(path: str, text: str, named: object = None) -> frozenset[str]:
        counted[path] += 1
        counted["definitions"] += 1
        return definitions(path, text, named)  # type: ignore[arg-type]

    monkeypatch.setattr(relevance, "document_terms", terms_spy)
    monkeypatch.setattr(references, "definitions", definitions_spy)
    yield counted


def _focused(session: Session) -> TickResult:
    session.focus(FOCUS)  # as dagctx watch --focus does at every start
    TreeTracker(session, ".").load()
    return session.tick()


def _cold_saved(root: Path) -> TickResult:
    session = Session(root, budget=BUDGET)
    with session:
        result = _focused(session)
        session.save()
    return result


def _resumed(root: Path) -> tuple[Session, TickResult]:
    session = Session.load(root=root)
    session.set_budget(BUDGET)
    return session, _focused(session)


class TestTakenBack:
    def test_a_focused_resume_tokenizes_and_parses_no_unchanged_file(
        self, tree: Path, reads: Counter[str]
    ) -> None:
        cold = _cold_saved(tree)
        assert reads["terms"] == 14 and reads["definitions"] == 14  # the cold start read all
        reads.clear()
        session, result = _resumed(tree)
        with session:
            assert "elided" in result.projection.text  # the budget binds: the ranking counts
            assert result.projection.text == cold.projection.text
            assert reads == {}
            again = session.tick()
            assert again.projection.text == from_scratch(session, again).text

    def test_an_offline_edit_is_ranked_again_alone_and_as_from_scratch(
        self, tree: Path, reads: Counter[str]
    ) -> None:
        _cold_saved(tree)
        edited = tree / "pkg1" / "mod7.py"
        edited.write_text(
            "def parse_header(data):\n    return header_checksum(data)\n\n"
            "def header_checksum(data):\n    return sum(data) % 256  # the checksum\n"
        )
        reads.clear()
        session, result = _resumed(tree)
        with session:
            assert reads == {"terms": 1, "definitions": 1, "pkg1/mod7.py": 1}
            scratch = from_scratch(session, result)
            assert result.projection.text == scratch.text
            assert "def header_checksum(data):" in result.projection.text  # ranked up

    def test_a_graph_read_later_takes_back_every_unchanged_file(
        self, tree: Path, reads: Counter[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(relevance, "LATER_FILES", 4)  # a tree "too large": read later
        session = Session(tree, budget=BUDGET)
        with session:
            _focused(session)
            second = session.tick()  # with the reference graph
            session.save()
        (tree / "README.md").write_text("# Demo\n\nParse the header checksum.\n")
        reads.clear()
        resumed, _ = _resumed(tree)
        with resumed:
            again = resumed.tick()  # the graph, read in a worker thread, taken
            assert reads == {"terms": 1, "definitions": 1, "README.md": 1}
            assert again.projection.text == from_scratch(resumed, again).text
            assert again.projection.text != second.projection.text  # the README moved

    def test_a_relevel_after_a_save_checks_no_file_the_ranking_holds_as_it_is(
        self, tree: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # a save keeps what it wrote for the next save; a new layout (a file created)
        # levels every file again, and the files the index holds at their version are
        # not compared with what was read before (a digest of each content)
        checked: list[bytes] = []
        fits = FileTerms.fits

        def fits_spy(read: FileTerms, digest: bytes) -> bool:
            checked.append(digest)
            return fits(read, digest)

        session = Session(tree, budget=BUDGET)
        with session:
            tracker = TreeTracker(session, ".")
            _focused(session)
            session.save()
            monkeypatch.setattr(FileTerms, "fits", fits_spy)
            (tree / "pkg0" / "header.py").write_text("def checksum():\n    return 0\n")
            session.queue_result(tracker.load)
            result = session.tick()
            assert "pkg0/header.py" in result.projection.text
            assert checked == []
            assert result.projection.text == from_scratch(session, result).text


_edit = st.tuples(
    st.sampled_from(["edit", "focus", "delete", "create", "touch"]), st.integers(0, 11)
)


class TestOfflineEdits:
    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(edits=st.lists(_edit, max_size=5), later=st.booleans())
    def test_a_focused_resume_after_any_offline_edits_projects_as_from_scratch(
        self, tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[str, int]], later: bool
    ) -> None:
        root = tmp_path_factory.mktemp("edits") / "repo"
        _write_tree(root)
        limit = 4 if later else relevance.LATER_FILES  # the graph read later, or at once
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(relevance, "LATER_FILES", limit)
            _cold_saved(root)
            for kind, i in edits:
                path = root / f"pkg{i % 3}" / f"mod{i}.py"
                if kind == "edit" and path.exists():
                    path.write_text(f"def changed_{i}():\n    return {len(edits)}\n")
                elif kind == "focus" and path.exists():  # ranked up by the focus words
                    path.write_text(f"def parse_header_checksum_{i}():\n    return {i}\n")
                elif kind == "delete":
                    path.unlink(missing_ok=True)
                elif kind == "create":
                    (root / f"pkg{i % 3}" / f"header{i}.py").write_text("CHECKSUM = 1\n")
                elif kind == "touch" and path.exists():
                    path.write_text(path.read_text())
            session, result = _resumed(root)
            with session:
                assert result.projection.text == from_scratch(session, result).text
                again = session.tick()  # with the reference graph (taken when read later)
                assert again.projection.text == from_scratch(session, again).text


def _drop_the_row(conn: sqlite3.Connection) -> None:
    conn.execute("DROP TABLE session_file_terms")  # as the previous version wrote


def _swap_terms(conn: sqlite3.Connection, *, in_step: bool = False) -> None:
    """Swap two files' terms in the row (each stays well formed); ``in_step``: and write
    the new row's digest where the text nodes name it (the file's node digest differs)."""
    (text,) = conn.execute("SELECT data FROM session_file_terms").fetchone()
    saved = json.loads(text)
    saved["terms"][0], saved["terms"][1] = saved["terms"][1], saved["terms"][0]
    swapped = json.dumps(saved)
    conn.execute("UPDATE session_file_terms SET data = ?", (swapped,))
    if in_step:
        (block,) = conn.execute("SELECT data FROM session_columns WHERE type = 'text'").fetchone()
        block = block.replace(digest_of(text), digest_of(swapped))
        conn.execute("UPDATE session_columns SET data = ? WHERE type = 'text'", (block,))


class TestNotTakenBack:
    @pytest.mark.parametrize(
        "edit",
        [_drop_the_row, _swap_terms, partial(_swap_terms, in_step=True)],
        ids=["saved-before-the-row", "row-not-the-one-named", "row-and-digest-rewritten"],
    )
    def test_a_file_without_its_saved_reads_loads_and_reads_every_file(
        self, tree: Path, reads: Counter[str], edit: Callable[[sqlite3.Connection], None]
    ) -> None:
        cold = _cold_saved(tree)
        with sqlite3.connect(tree / SESSION_FILE) as conn:
            edit(conn)
        reads.clear()
        session, result = _resumed(tree)
        with session:
            assert reads["terms"] == 14 and reads["definitions"] == 14
            assert result.projection.text == cold.projection.text


def _files(written: dict[str, FileTerms]) -> list[tuple[str, bytes, FileTerms]]:
    return [(nid, taken.digest, taken) for nid, taken in written.items()]


_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyzAB_019", min_size=1, max_size=12)


class TestPacking:
    @settings(max_examples=200, deadline=None)
    @given(
        files=st.lists(
            st.tuples(
                st.dictionaries(_word, st.integers(1, 300), max_size=40),
                st.one_of(st.none(), st.tuples(st.sets(_word), st.sets(_word))),
            ),
            max_size=6,
        )
    )
    def test_what_is_packed_is_what_is_taken_back(
        self, files: list[tuple[dict[str, int], tuple[set[str], set[str]] | None]]
    ) -> None:
        packed = [
            (
                f"text_{i}",
                bytes([i + 1]) * 16,
                Read(Counter(counts), sum(counts.values()), "\nx\n", names),
            )
            for i, (counts, names) in enumerate(files)
        ]
        text, written = pack(packed, "code")
        back = unpack(text, lambda by: by == "code")
        assert unpack(text, lambda by: False) == {}
        assert written.keys() == back.keys()
        assert set(back) == {nid for nid, _, _ in packed}
        for nid, digest, read in packed:
            taken = back[nid]
            assert taken.fits(digest) and not taken.fits(bytes(16))
            assert {t: taken.get(t) for t in read.counts} == dict(read.counts)
            assert all(t in taken for t in read.counts)
            assert "absent term" not in taken and taken.get("zz_absent") == 0
            assert (taken.length, taken.defined) == (read.length, read.defined)
            assert taken.names() == (
                None if read.names is None else tuple(map(frozenset, read.names))
            )
        # saved again: the files taken back as they were (their vocabulary kept), a new one
        # and one taken back and read again numbered after them
        new = Counter({"brand_new": 2, "zz": 1, **(files[0][0] if files else {})})
        again = [
            (nid, digest, Read(back[nid], read.length, "", read.names))
            for nid, digest, read in packed
        ]
        again[:1] = [("text_new", bytes(16), Read(new, 9, "", None))]
        text_again, written_again = pack(again, "code")
        read_words = {w for counts, _ in files for w in counts} | set(new)
        back_again = unpack(text_again, lambda by: by == "code")
        repacked, _ = pack(
            [(nid, d, Read(f, f.length, f.defined, None)) for nid, d, f in _files(written_again)],
            "code",
        )
        vocabulary = next(iter(written_again.values())).words
        if len(vocabulary.codes) <= 2 * vocabulary.built:  # else numbered afresh (_base)
            for key in ("id", "terms", "counts", "defs", "refs"):  # as a save wrote them
                assert json.loads(repacked)[key] == json.loads(text_again)[key]
        for nid, taken in unpack(repacked, lambda by: True).items():
            assert taken.names() == written_again[nid].names()
            assert [taken.get(w) for w in read_words] == [
                written_again[nid].get(w) for w in read_words
            ]
        first = {nid: read for nid, _, read in packed}
        for nid, _, read in again:
            taken = back_again[nid]
            counts = first[nid].counts if nid in first else read.counts
            assert {t: taken.get(t) for t in counts} == dict(counts)
            names = read.names
            assert taken.names() == (None if names is None else tuple(map(frozenset, names)))

    def test_codes_are_read_whole_and_numbered_past_the_short_ones(self) -> None:
        made = list(islice(codes(), 2_000))
        assert len(set(made)) == 2_000 and {len(c) for c in made} == {2, 3}
        words = Words([f"w{i}" for i in range(2_000)])
        joined = "".join(made[1_100:1_110])
        assert words.decode(joined) == [f"w{i}" for i in range(1_100, 1_110)]
        assert all(c not in joined for c in made[:1_100])  # no code inside another's
