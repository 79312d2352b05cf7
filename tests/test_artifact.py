"""Artifacts: kinds, rendering per state, updates with early cutoff, budget cuts that
keep the useful end, and serialization."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from graph_copy import rebuild, renders

from dagctx.errors import DagctxError, NodeNotFoundError
from dagctx.nodes.artifact import ArtifactNode
from dagctx.nodes.base import Node, NodeState
from dagctx.session import Session

CODE = "\n".join(f"def f{i}(x):\n    return x + {i}" for i in range(4))  # 8 lines


@pytest.fixture
def s(tmp_path: Path) -> Iterator[Session]:
    with Session(tmp_path, budget=4000) as session:
        yield session


class TestCreation:
    def test_defaults_are_a_code_artifact_at_details(self, s: Session) -> None:
        a = s.artifact("print(1)")
        assert isinstance(a, ArtifactNode)
        assert (a.kind, a.language, a.title, a.content) == ("code", None, None, "print(1)")
        assert (a.state, a.priority, a.version) == (NodeState.DETAILS, 65, 0)
        assert s.graph.roots() == [a]

    def test_an_artifact_can_go_under_a_parent(self, s: Session) -> None:
        g = s.group(title="results")
        a = s.artifact("ok", "output", parent=g)
        assert a.parents == [g]

    @pytest.mark.parametrize(
        ("args", "named"),
        [
            (("x", "binary"), "'binary'"),
            ((b"x", "code"), "bytes"),
            (("x", "code", 3), "language.*3"),
            (("x", "code", None, ["t"]), "title"),
        ],
    )
    def test_bad_fields_are_refused_and_change_nothing(
        self, s: Session, args: tuple[object, ...], named: str
    ) -> None:
        with pytest.raises(DagctxError, match=named):
            s.artifact(*args)  # type: ignore[arg-type]
        assert s.nodes() == []

    def test_an_unknown_parent_adds_nothing(self, s: Session) -> None:
        with pytest.raises(NodeNotFoundError):
            s.artifact("x", parent="group_9")
        assert s.nodes() == []


class TestRendering:
    def test_code_renders_distinctly_at_each_state(self, s: Session) -> None:
        a = s.artifact(CODE, language="python", title="helpers")
        collapsed, summary, details, full = renders(a)
        assert collapsed == "- code: helpers (python, 8 lines) (#artifact_1)"
        assert summary.splitlines() == [
            "### Code: helpers (#artifact_1)",
            "(8 lines; first 5)",
            *CODE.splitlines()[:5],
        ]
        assert details == f"### Code: helpers (#artifact_1)\n```python\n{CODE}\n```"
        assert full.splitlines()[2] == "1 def f0(x):"
        assert full.splitlines()[-1] == f"(8 lines, {len(CODE)} chars)"

    def test_output_and_errors_summarize_by_their_last_lines(self, s: Session) -> None:
        trace = "\n".join(["Traceback (most recent call last):", *["  frame"] * 6, "KeyError: 'x'"])
        e = s.artifact(trace, "error")
        summary = e.render(NodeState.SUMMARY).splitlines()
        assert summary[:2] == [f"### Error (#{e.id})", "(8 lines; last 5)"]
        assert summary[-1] == "KeyError: 'x'"
        assert e.label() == f"error {e.id}"

    def test_content_with_backticks_gets_a_longer_fence(self, s: Session) -> None:
        a = s.artifact("```\ninner\n```", "output")
        assert a.render(NodeState.DETAILS).splitlines()[1] == "````"


class TestUpdate:
    def test_identical_content_changes_nothing(self, s: Session) -> None:
        a = s.artifact(CODE)
        s.tick()
        assert s.update_artifact(a, CODE) is False
        assert a.version == 0
        assert s.tick().changes == []

    def test_new_content_bumps_the_version_once_with_a_trace(self, s: Session) -> None:
        a = s.artifact(CODE)
        s.tick()
        assert s.update_artifact(a.id, "x = 1") is True
        assert a.version == 1
        assert a.render(NodeState.DETAILS).endswith("x = 1\n```")
        changes = s.tick().changes
        assert [(c.node_id, c.description) for c in changes] == [(a.id, "content updated (1 line)")]
        assert "x = 1" in s.project().text

    def test_update_refuses_non_artifacts_and_bad_content(self, s: Session) -> None:
        a = s.artifact(CODE)
        t = s.topic("t")
        with pytest.raises(DagctxError, match="topic_1 is a topic node, not an artifact"):
            s.update_artifact(t, "x")
        with pytest.raises(DagctxError, match="NoneType"):
            s.update_artifact(a, None)  # type: ignore[arg-type]
        assert (a.content, a.version) == (CODE, 0)


class TestBudget:
    def _long(self, s: Session, kind: str) -> ArtifactNode:
        body = "\n".join(f"{kind} line {i:03d} with a few words of text" for i in range(200))
        return s.artifact(body, kind)

    @pytest.mark.parametrize(("kind", "kept", "lost"), [
        ("code", "code line 000", "code line 199"),
        ("error", "error line 199", "error line 000"),
        ("output", "output line 199", "output line 000"),
    ])  # fmt: skip
    def test_a_long_artifact_is_cut_keeping_its_useful_end(
        self, s: Session, kind: str, kept: str, lost: str
    ) -> None:
        a = self._long(s, kind)
        s.tick()
        p = s.project(600)
        assert p.tokens <= 600
        (section,) = [sec for sec in p.sections if sec.node_id == a.id]
        assert section.rendered_state == NodeState.DETAILS
        assert 0 < section.cut_lines < 200
        assert kept in p.text and lost not in p.text
        assert f"[… {section.cut_lines} lines cut to fit the budget" in p.text

    def test_render_cut_at_all_keeps_true_line_numbers(self, s: Session) -> None:
        a = self._long(s, "error")
        lines = a.render_cut(NodeState.ALL, 2).splitlines()
        assert lines[1] == "[… 198 lines cut to fit the budget: lines 1-198]"
        assert lines[3].startswith("199 error line 198")


class TestSerialization:
    @pytest.mark.parametrize("kind", ["code", "output", "error"])
    def test_round_trip_renders_identically(self, s: Session, kind: str) -> None:
        a = s.artifact(CODE, kind, language="python", title="t", state="SUMMARY", priority=7)
        s.update_artifact(a, CODE + "\n# more")
        twin = rebuild(s.nodes()).get(a.id)
        assert isinstance(twin, ArtifactNode)
        assert renders(twin) == renders(a)
        assert (twin.state, twin.priority, twin.version) == (NodeState.SUMMARY, 7, 1)
        assert Node.from_dict(a.to_dict()).to_dict() == a.to_dict()
