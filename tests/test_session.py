"""Session: verbs, tick order, file changes, DSL, paths and bad input."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from dagctx import (
    BudgetError,
    CheckpointError,
    DagctxError,
    EncodingError,
    NodeState,
    PathError,
    Session,
    TickFrequency,
    dsl,
)


class TestVerbs:
    def test_group_takes_children_off_the_roots(self, session: Session) -> None:
        v = session.text("src/auth.py")
        g1 = session.group(v, title="auth")
        g2 = session.group(v)
        assert session.graph.roots() == [g1, g2]
        assert v.parents == [g1, g2]

    def test_text_with_a_line_range(self, session: Session) -> None:
        node = session.text("src/auth.py", lines=(1, 2))
        assert node.lines == ["def login(user):", "    return check(user)"]
        assert node.label() == "src/auth.py:1-2"

    def test_checkpoint_and_restore_through_the_session(self, session: Session) -> None:
        v = session.text("src/auth.py")
        g = session.group(v, title="auth")
        session.checkpoint("exploration")
        session.unlink(g, v)
        extra = session.text("README.md")
        assert session.restore("exploration") == [extra.id]
        assert g.children == [v]
        assert session.checkpoints() == ["exploration"]

    def test_text_nodes_of_a_path_through_removal_and_restore(self, session: Session) -> None:
        whole = session.text("src/auth.py")
        part = session.text("src/auth.py", lines=(1, 2))
        other = session.text("README.md")
        assert session.text_nodes("src/auth.py") == [whole, part]
        session.checkpoint("both")
        session.remove(whole)
        assert session.text_nodes("src/auth.py") == [part]
        session.remove(part)
        assert session.text_nodes("src/auth.py") == []
        assert session.text_nodes("README.md") == [other]
        session.restore("both")
        assert session.text_nodes("src/auth.py") == [whole, part]
        session.remove(part)
        assert session.text_nodes("src/auth.py") == [whole]
        session.file_changed("src/auth.py")  # found by path: no error, nothing else read

    def test_set_budget(self, session: Session) -> None:
        session.set_budget(123)
        assert session.project().budget == 123


class TestTick:
    def test_tick_counts_turns_and_reports_changes(self, project: Path, session: Session) -> None:
        v = session.text("src/auth.py")
        first = session.tick()
        assert first.turn == 1 and first.recomputed == []
        (project / "src" / "auth.py").write_text("def login(user):\n    return False\n")
        second = session.tick()
        assert second.turn == 2
        assert second.recomputed == [v.id]
        assert [(t.node_id, t.description) for t in second.changes] == [(v.id, "content changed")]
        assert "return False" in second.projection.text

    def test_identical_rewrite_does_not_bump_the_version(
        self, project: Path, session: Session
    ) -> None:
        v = session.text("src/auth.py")
        session.tick()
        path = project / "src" / "auth.py"
        path.write_text(path.read_text())
        os.utime(path, ns=(1, 1))  # a different mtime, the same content
        result = session.tick()
        assert v.version == 0 and result.changes == []

    def test_paused_and_never_nodes_are_not_recomputed(
        self, project: Path, session: Session
    ) -> None:
        paused = session.text("src/auth.py")
        paused.pause()
        never = session.text("src/db.py", frequency=TickFrequency.never())
        (project / "src" / "auth.py").write_text("x = 1\n")
        (project / "src" / "db.py").write_text("y = 2\n")
        assert session.tick().recomputed == []
        assert paused.version == never.version == 0
        session.file_changed("src/db.py")
        assert session.tick().recomputed == [never.id]

    def test_period_frequency(self, project: Path, session: Session) -> None:
        v = session.text("src/auth.py", frequency=TickFrequency.period(3600))
        session.tick()
        (project / "src" / "auth.py").write_text("z = 3\n")
        assert session.tick().recomputed == []  # not due for an hour
        assert v.version == 0

    def test_deleted_file_renders_a_placeholder(self, project: Path, session: Session) -> None:
        v = session.text("src/db.py")
        (project / "src" / "db.py").unlink()
        result = session.tick()
        assert v.id in result.recomputed
        assert "[file deleted]" in result.projection.text

    def test_async_twin(self, session: Session) -> None:
        session.text("src/auth.py")

        async def run() -> int:
            return (await session.atick()).turn

        assert asyncio.run(run()) == 1

    def test_custom_async_summarizer_refreshes_at_tick(
        self, project: Path, session: Session
    ) -> None:
        calls: list[int] = []

        async def summarize(group, children):  # type: ignore[no-untyped-def]
            calls.append(len(children))
            return f"{len(children)} files about auth"

        v = session.text("src/auth.py")
        g = session.group(v, title="auth", summarizer=summarize)
        assert "summary pending" in session.project().text
        result = session.tick()
        assert "1 files about auth" in result.projection.text and calls == [1]
        (project / "src" / "auth.py").write_text("changed = 1\n")
        assert "1 files about auth" in session.tick().projection.text
        assert calls == [1, 1] and not g.stale


class TestDsl:
    def test_free_functions_use_the_current_session(self, project: Path) -> None:
        with Session(project, budget=2000) as s:
            v = dsl.text("src/auth.py")
            g1 = dsl.group(v)
            g2 = dsl.group(v)
            dsl.checkpoint("start")
            dsl.unlink(g2, v)
            dsl.restore("start")
            assert v.parents == [g1, g2]
            assert dsl.tick().turn == 1 and s.turn == 1

    def test_free_functions_cover_the_node_catalogue(self, project: Path) -> None:
        with Session(project, budget=4000) as s:
            talk = dsl.topic("planning")
            dsl.message("user", "what does login do?", topic=talk)
            doc = dsl.markdown("README.md")
            art = dsl.artifact("print('hi')", kind="code", language="python")
            job = s.wait(dsl.shell("echo", ["from the dsl"]), timeout=30)
            text = dsl.tick().projection.text
            assert "what does login do?" in text and "from the dsl" in text
            assert {talk.id, doc.id, art.id, job.id} <= {n.id for n in s.nodes()}

    def test_free_functions_without_a_session_raise(self) -> None:
        with pytest.raises(DagctxError, match="no current session"):
            dsl.text("x.py")


class TestBadInput:
    @pytest.mark.parametrize("path", ["../outside.py", "/etc/passwd", "src/../../x", "a\x00b", ""])
    def test_paths_outside_the_root_are_refused(self, session: Session, path: str) -> None:
        with pytest.raises(PathError):
            session.text(path)
        assert len(session.graph) == 0

    def test_symlink_pointing_out_is_refused(
        self, project: Path, session: Session, tmp_path_factory: pytest.TempPathFactory
    ) -> None:
        outside = tmp_path_factory.mktemp("outside") / "secret.txt"
        outside.write_text("secret")
        (project / "link.txt").symlink_to(outside)
        with pytest.raises(PathError, match="outside"):
            session.text("link.txt")

    def test_missing_file_and_directory_are_refused(self, session: Session) -> None:
        with pytest.raises(PathError, match="no such file"):
            session.text("nope.py")
        with pytest.raises(PathError, match="not a regular file"):
            session.text("src")

    @pytest.mark.parametrize("lines", [(0, 3), (5, 2), (1,), "1-3", (1.0, 2)])
    def test_bad_line_ranges(self, session: Session, lines: object) -> None:
        with pytest.raises(PathError, match=r"line range|pair"):
            session.text("src/auth.py", lines=lines)  # type: ignore[arg-type]
        assert len(session.graph) == 0

    @pytest.mark.parametrize("budget", [0, -1, 2.5, "8000", None, True])
    def test_bad_budgets(self, project: Path, budget: object) -> None:
        with pytest.raises(BudgetError, match="budget"):
            Session(project, budget=budget)  # type: ignore[arg-type]

    def test_bad_budget_change_keeps_the_old_budget(self, session: Session) -> None:
        with pytest.raises(BudgetError):
            session.set_budget(0)
        assert session.budget == 4000

    def test_unknown_encoding(self, project: Path) -> None:
        with pytest.raises(EncodingError, match="nope"):
            Session(project, encoding="nope")

    def test_root_must_be_a_directory(self, project: Path) -> None:
        with pytest.raises(PathError, match="not a directory"):
            Session(project / "README.md")

    def test_unknown_checkpoint_changes_nothing(self, session: Session) -> None:
        v = session.text("src/auth.py")
        g = session.group(v)
        with pytest.raises(CheckpointError, match="'missing'"):
            session.restore("missing")
        assert g.children == [v]

    def test_group_with_unknown_child_adds_nothing(self, session: Session) -> None:
        with pytest.raises(DagctxError, match="ghost"):
            session.group("ghost")
        assert len(session.graph) == 0

    def test_bad_state_names(self, session: Session) -> None:
        v = session.text("src/auth.py")
        with pytest.raises(DagctxError, match="'LOUD'"):
            v.set_state("LOUD")
        assert v.state == NodeState.DETAILS and v.version == 0

    def test_closed_session_refuses_ticks(self, project: Path) -> None:
        s = Session(project)
        s.close()
        with pytest.raises(DagctxError, match="closed"):
            s.tick()


class TestChangesSection:
    def test_the_first_turn_lists_no_changes(self, session: Session) -> None:
        v = session.text("src/auth.py")
        session.group(v, title="auth")
        assert "Changes since last turn" not in session.project().text
        first = session.tick()
        assert first.changes  # the building of the graph is still reported in the result
        assert "Changes since last turn" not in first.projection.text

    def test_later_turns_list_what_changed(self, project: Path, session: Session) -> None:
        session.text("src/auth.py")
        session.tick()
        (project / "src" / "auth.py").write_text("x = 1\n")
        assert "content changed" in session.tick().projection.text

    def test_a_reader_who_missed_ticks_sees_every_change_since_its_look(
        self, project: Path, session: Session
    ) -> None:
        first = session.text("src/auth.py")
        second = session.text("src/db.py")
        session.tick()
        looked = len(session.graph.traces)
        (project / "src" / "auth.py").write_text("x = 1\n")
        session.tick()  # a tick the reader did not see
        (project / "src" / "db.py").write_text("y = 2\n")
        last = session.tick().projection.text
        assert f"#{second.id} src/db.py: content changed" in last
        assert f"#{first.id} src/auth.py" not in last.partition("## Changes since")[2]
        seen = session.project(since=looked).text
        changes = seen.partition("## Changes since last turn")[2]
        assert f"#{first.id} src/auth.py: content changed" in changes
        assert f"#{second.id} src/db.py: content changed" in changes
        assert seen.partition("## Changes since")[0] == last.partition("## Changes since")[0]
        assert session.project(since=len(session.graph.traces)).text == session.project().text

    @pytest.mark.parametrize("since", [-1, 10**6, 1.0, True, "0"])
    def test_a_position_outside_the_log_is_refused(self, session: Session, since: object) -> None:
        session.text("src/auth.py")
        session.tick()
        before = session.project().text
        with pytest.raises(DagctxError, match="since must be a position of the trace log") as e:
            session.project(since=since)  # type: ignore[arg-type]
        assert e.value.value == since
        assert session.project().text == before
