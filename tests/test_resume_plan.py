"""The projection saved with a session and taken back by the first tick of a resume.

Real trees and real ``session.db`` files, in ``dagctx watch``'s configuration (a
:class:`TreeTracker` adopts the tree and surveys it at the first tick). A session
resumed with the saved projection is compared with one resumed from a copy of the file
without it (which projects afresh, as every resume did before): the first projection
and the projections after later edits must be equal in every part, and every kind of
mismatch must make the tick project afresh, never fail.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import aclosing
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dagctx
from dagctx.projection import Projection
from dagctx.session import Session, TickResult, resume
from dagctx.session.file import SESSION_SCHEMA
from dagctx.watch.patterns import compile_line
from dagctx.watch.steering import Steering
from dagctx.watch.tracker import TreeTracker

_PARTS = (
    "text",
    "tokens",
    "budget",
    "sections",
    "omitted",
    "reasons",
    "labels",
    "scores",
    "notes",
    "degraded",
    "stable_prefix_tokens",
    "prefix_break",
    "band_ends",
    "block_ends",
    "cache_key",
)


def _write_tree(root: Path, files: int = 12) -> None:
    for i in range(files):
        path = root / f"pkg{i % 3}" / f"mod{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "".join(f"def f{i}_{k}(x):\n    return x + {k}\n" for k in range(30))
        path.write_text(body)
    (root / "README.md").write_text("# Demo\n\nA tree to resume.\n")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    _write_tree(root)
    return root


def _save(root: Path, budget: int, *, focus: str | None = None) -> None:
    """Scan, tick and save as ``dagctx watch`` does."""
    with Session(root, budget=budget) as session:
        if focus is not None:
            session.focus(focus)
        TreeTracker(session, ".").load()
        session.tick()
        session.save()


def _without_plan(root: Path) -> Path:
    """A copy of the saved session without its saved projection, beside the tree."""
    copy = root.parent / f"{root.name}-fresh.db"
    shutil.copy(root / ".dagctx" / "session.db", copy)
    with sqlite3.connect(copy) as con:
        con.execute("DELETE FROM session_projection")
    return copy


def _tamper(root: Path, sql: str, *args: object) -> None:
    with sqlite3.connect(root / ".dagctx" / "session.db") as con:
        con.execute(sql, args)


def _rewrite_head(root: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Change the saved projection's head as ``change`` says, with a digest that
    matches (as :func:`dagctx.projection.saved.save_projection` makes one)."""
    with sqlite3.connect(root / ".dagctx" / "session.db") as con:
        head, account = con.execute("SELECT head, account FROM session_projection").fetchone()
        raw = json.loads(head[64:])
        change(raw)
        text = json.dumps(raw, separators=(",", ":"))
        digest = hashlib.sha256(text.encode() + b"\0" + account).hexdigest()
        con.execute("UPDATE session_projection SET head = ?", (digest + text,))


def _start(
    root: Path,
    path: Path | None = None,
    budget: int | None = None,
    steering: Steering | None = None,
) -> tuple[Session, TreeTracker, TickResult]:
    session = Session.load(path, root=root)
    if budget is not None:
        session.set_budget(budget)
    tracker = (
        TreeTracker(session, ".")
        if steering is None
        else TreeTracker(session, ".", steering=steering)
    )
    tracker.load()
    return session, tracker, session.tick()


def _taken_back(session: Session) -> bool:
    """Whether the session's last tick took the saved projection back (it builds no
    projector then)."""
    return session.cache.projector is None


def _assert_same(taken: Projection, fresh: Projection) -> None:
    for part in _PARTS:
        mine, theirs = getattr(taken, part), getattr(fresh, part)
        assert mine == theirs, part
        if isinstance(mine, dict):  # in the same order too
            assert list(mine) == list(theirs), part


def _resume_both(root: Path, budget: int | None = None, steering: Steering | None = None) -> bool:
    """Resume from the saved file and from a copy without its projection; check that
    both first projections are equal; return whether the first took the saved
    projection back."""
    copy = _without_plan(root)
    saved, _, first = _start(root, budget=budget, steering=steering)
    fresh, _, again = _start(root, copy, budget=budget, steering=steering)
    assert not _taken_back(fresh)
    _assert_same(first.projection, again.projection)
    taken = _taken_back(saved)
    saved.close()
    fresh.close()
    return taken


class TestTakenBack:
    @pytest.mark.parametrize("budget", [900, 2_500, 100_000])
    def test_an_unchanged_tree_takes_back_a_projection_equal_in_every_part(
        self, tree: Path, budget: int
    ) -> None:
        _save(tree, budget)
        taken = _resume_both(tree)
        assert taken

    def test_the_next_turns_after_edits_equal_those_of_a_resume_that_projected(
        self, tree: Path
    ) -> None:
        _save(tree, 1_500)
        copy = _without_plan(tree)
        saved, saved_tracker, first = _start(tree)
        fresh, fresh_tracker, again = _start(tree, copy)
        with saved, fresh:
            assert _taken_back(saved)
            _assert_same(first.projection, again.projection)
            assert "## Changes since last turn" not in first.projection.text
            (tree / "pkg1" / "mod4.py").write_text("def edited():\n    return 4\n")
            (tree / "pkg2" / "new.py").write_text("NEW = 1\n")
            for session, tracker in ((saved, saved_tracker), (fresh, fresh_tracker)):
                session.queue_result(partial(tracker.apply_survey, tracker.top))
            after = [saved.tick().projection, fresh.tick().projection]
            _assert_same(*after)
            assert "pkg1/mod4.py: content changed" in after[0].text
            assert after[0].stable_prefix_tokens > 0  # measured against the taken-back one
            _assert_same(saved.tick().projection, fresh.tick().projection)

    def test_a_save_after_a_take_back_keeps_the_projection_without_projecting(
        self, tree: Path
    ) -> None:
        _save(tree, 2_000)
        saved, _, first = _start(tree)
        with saved:
            saved.save()
            assert _taken_back(saved)  # the save made no projector either
        again, _, second = _start(tree)
        with again:
            assert _taken_back(again)
            _assert_same(second.projection, first.projection)

    def test_the_account_is_read_only_when_asked_for(self, tree: Path) -> None:
        _save(tree, 900)
        saved, _, first = _start(tree)
        with saved:
            assert first.projection._omitted is None  # not decoded by the tick
            assert first.projection.reasons and first.projection.labels


class TestProjectedAfresh:
    def test_a_file_edited_offline(self, tree: Path) -> None:
        _save(tree, 1_500)
        (tree / "pkg0" / "mod3.py").write_text("def offline():\n    return 3\n")
        taken = _resume_both(tree)
        assert not taken

    def test_a_file_touched_offline_with_the_same_bytes_is_still_taken_back(
        self, tree: Path
    ) -> None:
        _save(tree, 1_500)
        path = tree / "pkg0" / "mod3.py"
        path.write_text(path.read_text())
        taken = _resume_both(tree)
        assert taken

    def test_another_budget(self, tree: Path) -> None:
        _save(tree, 1_500)
        taken = _resume_both(tree, budget=1_400)
        assert not taken

    def test_the_same_budget_set_again(self, tree: Path) -> None:
        _save(tree, 1_500)
        taken = _resume_both(tree, budget=1_500)
        assert taken

    def test_a_focus_set_after_the_load(self, tree: Path) -> None:
        _save(tree, 1_500)
        copy = _without_plan(tree)
        results = []
        for path in (None, copy):
            session = Session.load(path, root=tree)
            with session:
                session.focus("f7_3 in mod7")
                TreeTracker(session, ".").load()
                results.append(session.tick().projection)
                assert not _taken_back(session)
        _assert_same(*results)

    def test_a_session_with_a_focus_saves_no_projection(self, tree: Path) -> None:
        _save(tree, 1_500, focus="f7_3 in mod7")
        with sqlite3.connect(tree / ".dagctx" / "session.db") as con:
            assert con.execute("SELECT COUNT(*) FROM session_projection").fetchone() == (0,)
        taken = _resume_both(tree)
        assert not taken

    def test_a_steering_rule_changed_since(self, tree: Path) -> None:
        _save(tree, 1_500)
        rule = compile_line("pkg1/**")
        assert rule is not None
        steering = Steering.of(priority=[(rule, 90)])
        taken = _resume_both(tree, steering=steering)
        assert not taken

    def test_no_survey_of_the_tree(self, tree: Path) -> None:
        _save(tree, 100_000)
        (tree / "pkg0" / "mod3.py").write_text("def offline():\n    return 3\n")
        copy = _without_plan(tree)
        results = []
        for path in (None, copy):  # no tracker: nothing compares the disk with the nodes
            with Session.load(path, root=tree) as session:
                results.append(session.tick().projection)
                assert not _taken_back(session)
        _assert_same(*results)
        assert "def offline" in results[0].text  # read when shown

    @pytest.mark.parametrize("key, value", [("made_by", "0" * 32), ("format", 2)])
    def test_a_projection_made_by_other_code(self, tree: Path, key: str, value: object) -> None:
        _save(tree, 1_500)
        _rewrite_head(tree, lambda raw: raw.update({key: value}))
        taken = _resume_both(tree)
        assert not taken

    def test_a_head_rewritten_with_its_digest_is_taken_as_it_says(self, tree: Path) -> None:
        # the digest finds damage, not a forger: a rewritten head is what it says
        _save(tree, 1_500)
        _rewrite_head(tree, lambda raw: raw.update({"text": raw["text"] + "\n"}))
        with Session.load(root=tree) as session:
            TreeTracker(session, ".").load()
            assert session.tick().projection.text.endswith("\n\n")
            assert _taken_back(session)

    def test_a_session_file_of_schema_3(self, tree: Path) -> None:
        _save(tree, 1_500)
        _tamper(tree, "DROP TABLE session_projection")
        _tamper(tree, "UPDATE dagctx_meta SET value = '3' WHERE key = 'session_schema'")
        with Session.load(root=tree) as old:
            TreeTracker(old, ".").load()
            old.tick()
            assert not _taken_back(old)
            old.save()  # upgrades the file, with a projection
        with sqlite3.connect(tree / ".dagctx" / "session.db") as con:
            assert con.execute(
                "SELECT value FROM dagctx_meta WHERE key = 'session_schema'"
            ).fetchone() == (str(SESSION_SCHEMA),)
        taken = _resume_both(tree)
        assert taken

    @pytest.mark.parametrize(
        "damage",
        [
            "UPDATE session_projection SET account = substr(account, 1, length(account) / 2)",
            "UPDATE session_projection SET account = zeroblob(64)",
            "UPDATE session_projection SET head = substr(head, 1, length(head) / 2)",
            "UPDATE session_projection SET head = CAST(x'80ff7b7d' AS TEXT)",
            "UPDATE session_projection SET head = '[]'",
            "UPDATE session_projection SET head = replace(head, 'pkg0', 'pkgX')",
            "UPDATE session_projection SET account = 'not a blob'",
        ],
    )
    def test_a_damaged_saved_projection(self, tree: Path, damage: str) -> None:
        _save(tree, 1_500)
        _tamper(tree, damage)
        taken = _resume_both(tree)
        assert not taken


def _package(root: Path) -> str:
    """A package of three modules, one in a subpackage, with a ``__pycache__``."""
    for rel in ("__init__.py", "a.py", "sub/__init__.py", "sub/b.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"NAME = {rel!r}\n")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0" * 16)
    return str(root)


class TestMadeHere:
    """The code a saved projection names is this code: taken by the modules' stat keys
    while none changed, by their source once one did."""

    @pytest.fixture
    def package(self, tmp_path: Path) -> Any:
        clear = (resume.code_stamp.cache_clear, resume.code_digest.cache_clear)
        for forget in clear:
            forget()
        yield _package(tmp_path / "pkg")
        for forget in clear:  # each is computed once per process: fresh for the next test
            forget()

    @staticmethod
    def _again(package: str, saved: str) -> bool:
        """``made_here`` in a new process (nothing computed yet)."""
        resume.code_stamp.cache_clear()
        resume.code_digest.cache_clear()
        return resume.made_here(saved, package)

    def test_unchanged_code_is_taken_by_its_stamp_alone(self, package: str) -> None:
        saved = resume.made_by(package)
        stamp, digest = saved.split(" ")
        assert (stamp, digest) == (resume.code_stamp(package), resume.code_digest(package))
        assert self._again(package, saved)
        # the source is not compared while the stamp is the same
        assert self._again(package, f"{stamp} {'0' * 32}")
        assert not self._again(package, f"{'0' * 32} {'0' * 32}")

    def test_a_module_touched_with_the_same_bytes_is_taken_by_its_source(
        self, package: str
    ) -> None:
        saved = resume.made_by(package)
        module = Path(package) / "sub" / "b.py"
        stat = module.stat()
        os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
        assert resume.code_stamp.__wrapped__(package) != saved.split(" ")[0]
        assert self._again(package, saved)

    @pytest.mark.parametrize("change", ["edit", "same size", "add", "remove", "rename"])
    def test_changed_source_is_not_this_code(self, package: str, change: str) -> None:
        saved = resume.made_by(package)
        module = Path(package) / "sub" / "b.py"
        if change == "edit":
            module.write_text("NAME = 'changed'\n")
        elif change == "same size":  # same size and mtime: another inode (a replaced file)
            stat = module.stat()
            replacement = module.with_name("b.new")
            replacement.write_text(module.read_text().upper())
            os.utime(replacement, ns=(stat.st_atime_ns, stat.st_mtime_ns))
            replacement.replace(module)
        elif change == "add":
            (Path(package) / "c.py").write_text("")
        elif change == "remove":
            module.unlink()
        else:
            module.rename(module.with_name("c.py"))
        assert not self._again(package, saved)

    def test_a_module_in_pycache_is_not_source(self, package: str) -> None:
        saved = resume.made_by(package)
        (Path(package) / "__pycache__" / "stray.py").write_text("X = 1\n")
        assert self._again(package, saved)

    def test_the_saved_projection_names_the_dagctx_package(self, tree: Path) -> None:
        _save(tree, 1_500)
        with sqlite3.connect(tree / ".dagctx" / "session.db") as con:
            (head,) = con.execute("SELECT head FROM session_projection").fetchone()
        assert json.loads(head[64:])["made_by"] == resume.made_by()
        package = Path(dagctx.__file__).parent
        assert resume.made_by() == resume.made_by(str(package))


_head_keys = st.sampled_from(
    [
        "text",
        "tokens",
        "budget",
        "sections",
        "stable_prefix_tokens",
        "prefix_break",
        "band_ends",
        "block_ends",
        "cache_key",
        "format",
    ]
)
_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 2**40) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=6,
)


class TestAnyHead:
    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(key=_head_keys, value=_values)
    def test_a_head_field_of_any_value_is_refused_or_taken_without_error(
        self, tmp_path: Path, key: str, value: object
    ) -> None:
        root = tmp_path / "t"
        if not root.exists():
            _write_tree(root, files=4)
            _save(root, 400)
            shutil.copy(root / ".dagctx" / "session.db", tmp_path / "good.db")
        shutil.copy(tmp_path / "good.db", root / ".dagctx" / "session.db")
        changed = []

        def change(raw: dict[str, Any]) -> None:
            changed.append(raw.get(key) != value)
            raw[key] = value

        _rewrite_head(root, change)  # a forged head with a digest that matches
        with Session.load(root=root) as session:
            TreeTracker(session, ".").load()
            projection = session.tick().projection
            assert projection.tokens <= session.budget
            assert isinstance(projection.explain(full=True), str)
            if changed[0] and key in ("budget", "cache_key", "format"):
                assert not _taken_back(session)


_edit = st.tuples(st.sampled_from(["edit", "delete", "create"]), st.integers(0, 11))


def _apply(root: Path, edits: list[tuple[str, int]], mark: int) -> None:
    for kind, i in edits:
        path = root / f"pkg{i % 3}" / f"mod{i}.py"
        if kind == "edit" and path.exists():
            path.write_text(f"def changed_{i}_{mark}():\n    return {mark}\n")
        elif kind == "delete":
            path.unlink(missing_ok=True)
        elif kind == "create":
            (root / f"pkg{i % 3}" / f"extra{i}_{mark}.py").write_text(f"EXTRA = {i}\n")


class TestSameAsProjectingAfresh:
    @settings(
        max_examples=15,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(
        budget=st.sampled_from([400, 900, 2_500, 100_000]),
        before=st.lists(_edit, max_size=4),
        after=st.lists(_edit, max_size=4),
        ahead=st.booleans(),
    )
    def test_a_resumed_session_projects_as_one_that_projected_afresh(
        self,
        tmp_path: Path,
        budget: int,
        before: list[tuple[str, int]],
        after: list[tuple[str, int]],
        ahead: bool,
    ) -> None:
        root = tmp_path / "h"
        shutil.rmtree(root, ignore_errors=True)
        _write_tree(root)
        with Session(root, budget=budget) as live:  # the saved plan comes from turns
            tracker = TreeTracker(live, ".")
            tracker.load()
            live.tick()
            _apply(root, before, 1)
            live.queue_result(partial(tracker.apply_survey, tracker.top))
            live.tick()
            if tracker.pending_removals():
                live.queue_result(tracker.reap)
                live.tick()
            live.save()
        copy = _without_plan(root)
        saved, saved_tracker, first = _start(root)
        fresh, fresh_tracker, again = _start(root, copy)
        with saved, fresh:
            assert _taken_back(saved)
            _assert_same(first.projection, again.projection)
            if ahead:  # as a watch does while it waits for events
                saved._plan_ahead()
                assert not _taken_back(saved)
            _apply(root, after, 2)
            for _ in range(2):  # the edits, then the removal of the deleted files
                for session, tracker in ((saved, saved_tracker), (fresh, fresh_tracker)):
                    session.queue_result(partial(tracker.apply_survey, tracker.top))
                    if tracker.pending_removals():
                        session.queue_result(tracker.reap)
                _assert_same(saved.tick().projection, fresh.tick().projection)


class TestWatch:
    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.mark.anyio
    async def test_a_resumed_watch_builds_the_next_plan_while_it_waits(
        self, tree: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _save(tree, 1_500)
        copy = _without_plan(tree)
        results = []
        original = Session.project
        projected: list[int] = []

        def project(session: Session, *args: Any) -> Projection:
            projected.append(1)
            return original(session, *args)

        edited = tree / "pkg0" / "mod3.py"
        text = edited.read_text()
        for path in (None, copy):
            with Session.load(path, root=tree) as session:
                async with aclosing(session.watch()) as watch:
                    first = await asyncio.wait_for(anext(watch), 30)
                    assert _taken_back(session) is (path is None)
                    projected.clear()
                    monkeypatch.setattr(Session, "project", project)
                    edited.write_text(f"def edit_{len(results)}():\n    pass\n")
                    second = await asyncio.wait_for(anext(watch), 30)
                    monkeypatch.undo()
                    assert projected == ([1] if path is None else [])
                    assert "pkg0/mod3.py: content changed" in second.projection.text
                    results.append((first.projection, second.projection))
            edited.write_text(text)  # the next resume starts from the same files
        _assert_same(results[0][0], results[1][0])
