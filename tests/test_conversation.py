"""Topics and messages: rendering per state, validation, tool call/result pairing under
budget pressure, recency-ordered degradation, and serialization."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from graph_copy import VISIBLE_STATES, rebuild, renders

from dagctx.errors import DagctxError, NodeNotFoundError
from dagctx.nodes.base import Node, NodeState
from dagctx.nodes.message import MessageNode
from dagctx.nodes.topic import TopicNode
from dagctx.session import Session


@pytest.fixture
def s(tmp_path: Path) -> Iterator[Session]:
    with Session(tmp_path, budget=4000) as session:
        yield session


def snapshot(s: Session) -> tuple[list[str], list[tuple[str, int]]]:
    """Node ids and (id, version) pairs: what a refused call must leave as it was."""
    return [n.id for n in s.nodes()], [(n.id, n.version) for n in s.nodes()]


class TestTopic:
    def test_a_topic_is_an_active_details_container_with_priority_75(self, s: Session) -> None:
        t = s.topic("auth bug")
        assert isinstance(t, TopicNode)
        assert (t.title, t.status, t.state, t.priority) == (
            "auth bug", "active", NodeState.DETAILS, 75,
        )  # fmt: skip
        assert t.expands_at == {NodeState.DETAILS, NodeState.ALL}

    @pytest.mark.parametrize("title", ["", "   ", None, 3])
    def test_a_topic_needs_a_title(self, s: Session, title: object) -> None:
        with pytest.raises(DagctxError, match="title"):
            s.topic(title)  # type: ignore[arg-type]
        assert s.nodes() == []

    def test_renders_distinctly_at_each_state(self, s: Session) -> None:
        t = s.topic("auth bug")
        s.message("user", "why does login fail?")
        s.message("assistant", "checking")
        collapsed, summary, details, full = renders(t)
        assert collapsed == "## Topic: auth bug (#topic_1, active, 2 messages, collapsed)"
        assert summary.splitlines() == [
            "## Topic: auth bug (#topic_1, active, 2 messages, summary)",
            "- **user** (#message_1): why does login fail?",
            "- **assistant** (#message_2): checking",
        ]
        assert details == "## Topic: auth bug (#topic_1, active)"
        assert full == "## Topic: auth bug (#topic_1, active, 2 messages: 1 user, 1 assistant)"

    def test_summary_lists_the_latest_twenty_messages(self, s: Session) -> None:
        t = s.topic("long")
        for i in range(25):
            s.message("user", f"message number {i}")
        lines = t.render(NodeState.SUMMARY).splitlines()
        assert lines[1] == "- … 5 earlier messages"
        assert lines[2].endswith("message number 5")
        assert lines[-1].endswith("message number 24")
        assert len(lines) == 22

    def test_projection_walks_messages_only_when_expanded(self, s: Session) -> None:
        t = s.topic("t")
        s.message("user", "hello there")
        assert "hello there" in s.project().text
        t.set_state("COLLAPSED")
        text = s.project().text
        assert "hello there" not in text
        assert "1 message, collapsed" in text

    def test_a_new_message_bumps_the_topic_so_cached_renders_stay_right(self, s: Session) -> None:
        t = s.topic("t", state="COLLAPSED")
        s.message("user", "one")
        assert "1 message," in s.tick().projection.text
        v = t.version
        s.message("user", "two")
        assert t.version > v
        assert "2 messages" in s.tick().projection.text

    def test_close_topic_is_a_change_and_idempotent(self, s: Session) -> None:
        t = s.topic("t")
        s.tick()
        assert s.close_topic(t) is t
        assert t.status == "closed"
        changes = s.tick().changes
        assert [(c.node_id, c.description) for c in changes] == [(t.id, "topic closed")]
        version = t.version
        s.close_topic(t.id)
        assert t.version == version
        assert "closed" in t.render(NodeState.DETAILS)

    def test_closing_lowers_only_a_default_priority(self, s: Session) -> None:
        plain, pinned = s.topic("plain"), s.topic("pinned", priority=99)
        s.close_topic(plain)
        s.close_topic(pinned)
        assert (plain.priority, pinned.priority) == (65, 99)

    def test_close_topic_refuses_other_nodes(self, s: Session) -> None:
        a = s.artifact("x")
        with pytest.raises(DagctxError, match=r"artifact_1.*not a topic"):
            s.close_topic(a)
        with pytest.raises(NodeNotFoundError):
            s.close_topic("topic_9")


class TestMessage:
    def test_a_message_is_a_details_child_of_its_topic_with_priority_70(self, s: Session) -> None:
        t = s.topic("t")
        m = s.message("user", "hi", topic=t)
        assert isinstance(m, MessageNode)
        assert m.parents == [t]
        assert t.messages() == [m]
        assert (m.role, m.content, m.state, m.priority) == ("user", "hi", NodeState.DETAILS, 70)

    def test_the_default_topic_is_the_latest_active_one(self, s: Session) -> None:
        first, second = s.topic("first"), s.topic("second")
        assert s.message("user", "a").parents == [second]
        s.close_topic(second)
        assert s.message("user", "b").parents == [first]
        assert s.message("user", "c", topic=first.id).parents == [first]

    def test_no_active_topic_is_an_error_that_says_what_to_do(self, s: Session) -> None:
        with pytest.raises(DagctxError, match="no active topic"):
            s.message("user", "hi")
        s.close_topic(s.topic("t"))
        with pytest.raises(DagctxError, match="no active topic"):
            s.message("user", "hi")

    @pytest.mark.parametrize(
        ("role", "content", "options", "named"),
        [
            ("shout", "hi", {}, "'shout'"),
            ("USER", "hi", {}, "'USER'"),
            ("user", b"bytes", {}, "bytes"),
            ("user", "hi", {"name": 3}, "3"),
            ("tool_call", "{}", {}, "tool_call_id"),
            ("tool_result", "ok", {"tool_call_id": ""}, "tool_call_id"),
            ("user", "hi", {"tool_call_id": "c1"}, "'c1'"),
            ("assistant", "hi", {"tool_call_id": "c1"}, "'c1'"),
        ],
    )
    def test_bad_fields_are_refused_naming_the_value_and_change_nothing(
        self, s: Session, role: str, content: object, options: dict[str, object], named: str
    ) -> None:
        s.topic("t")
        before = snapshot(s)
        with pytest.raises(DagctxError, match=named):
            s.message(role, content, **options)  # type: ignore[arg-type]
        assert snapshot(s) == before

    def test_a_closed_topic_takes_no_messages(self, s: Session) -> None:
        t = s.topic("old")
        s.close_topic(t)
        before = snapshot(s)
        with pytest.raises(DagctxError, match=r"'old'.*closed"):
            s.message("user", "late", topic=t)
        assert snapshot(s) == before

    def test_the_topic_must_be_a_topic(self, s: Session) -> None:
        s.topic("t")
        a = s.artifact("x")
        with pytest.raises(DagctxError, match="not a topic"):
            s.message("user", "hi", topic=a)
        with pytest.raises(NodeNotFoundError, match="topic_7"):
            s.message("user", "hi", topic="topic_7")

    def test_renders_distinctly_at_each_state(self, s: Session) -> None:
        s.topic("t")
        m = s.message("assistant", "line 1\nline 2\nline 3\nline 4\nline 5")
        collapsed, summary, details, full = renders(m)
        assert collapsed == "- **assistant** (#message_1): line 1 (+4 lines)"
        # Issue 14 item 12: the content is quoted in a fence.
        assert summary.splitlines() == [
            "**assistant** (#message_1):", "```", "line 1", "line 2", "line 3", "```",
            "[… 2 more lines]",
        ]  # fmt: skip
        assert details == (
            "**assistant** (#message_1)\n```\nline 1\nline 2\nline 3\nline 4\nline 5\n```"
        )
        assert full.splitlines()[1] == "(5 lines, 34 chars)"
        assert full.splitlines()[2:] == details.splitlines()[1:]

    def test_collapsed_clips_a_long_first_line_and_empty_content_shows(self, s: Session) -> None:
        s.topic("t")
        long = s.message("user", "x" * 500)
        empty = s.message("assistant", "")
        assert len(long.render(NodeState.COLLAPSED)) < 150
        assert long.render(NodeState.COLLAPSED).endswith("…")
        assert empty.render(NodeState.DETAILS).endswith("(empty)")

    def test_tool_messages_show_their_tool_and_call_id(self, s: Session) -> None:
        s.topic("t")
        call = s.message("tool_call", '{"q": 1}', tool_call_id="c1", name="grep")
        assert call.render(NodeState.DETAILS) == (
            '**tool_call** grep [c1] (#message_1)\n```\n{"q": 1}\n```'  # fenced: item 12
        )


class TestToolPairs:
    def test_a_result_pairs_with_its_call(self, s: Session) -> None:
        s.topic("t")
        call = s.message("tool_call", "{}", tool_call_id="c1", name="ls")
        assert call.companions() == ()
        result = s.message("tool_result", "a.py", tool_call_id="c1", name="ls")
        assert call.companions() == (result.id,)
        assert result.companions() == (call.id,)

    def test_pairing_works_across_topics(self, s: Session) -> None:
        s.topic("one")
        call = s.message("tool_call", "{}", tool_call_id="c1")
        other = s.topic("two")
        result = s.message("tool_result", "ok", tool_call_id="c1", topic=other)
        assert (call.peer, result.peer) == (result.id, call.id)

    @pytest.mark.parametrize(
        ("setup", "role", "call_id", "named"),
        [
            ([], "tool_result", "c9", "no tool_call.*'c9'"),
            ([("tool_call", "c1")], "tool_call", "c1", "'c1' is already used"),
            ([("tool_call", "c1"), ("tool_result", "c1")], "tool_result", "c1", "already has"),
        ],
    )
    def test_unpaired_or_duplicate_tool_messages_are_refused(
        self, s: Session, setup: list[tuple[str, str]], role: str, call_id: str, named: str
    ) -> None:
        s.topic("t")
        for r, cid in setup:
            s.message(r, "x", tool_call_id=cid)
        before = snapshot(s)
        peers = [(n.id, getattr(n, "peer", None)) for n in s.nodes()]
        with pytest.raises(DagctxError, match=named):
            s.message(role, "y", tool_call_id=call_id)
        assert snapshot(s) == before
        assert [(n.id, getattr(n, "peer", None)) for n in s.nodes()] == peers

    def test_a_call_and_its_result_are_shown_together_or_not_at_all(self, s: Session) -> None:
        """Sweep budgets from starved to ample: whenever either half of a pair is shown,
        both are; and some budgets do leave a pair out while showing other messages."""
        s.topic("debugging")
        pairs = []
        for i in range(4):
            s.message("user", f"question {i}: " + "why is this slow? " * 5)
            call = s.message("tool_call", f'{{"pattern": "p{i}"}}', tool_call_id=f"c{i}")
            result = s.message(
                "tool_result", "\n".join(f"src/m{i}.py:{k}: match" for k in range(30)),
                tool_call_id=f"c{i}",
            )  # fmt: skip
            pairs.append((call.id, result.id))
        s.message("assistant", "the loop in m3 is quadratic")
        s.tick()
        dropped_while_others_shown = 0
        for budget in range(10, 1200, 6):
            p = s.project(budget)
            shown = {sec.node_id for sec in p.sections if not sec.reference}
            for call_id, result_id in pairs:
                assert (call_id in shown) == (result_id in shown), (budget, call_id)
                if call_id not in shown and len(shown) > 1:
                    dropped_while_others_shown += 1
                    assert p.reasons.get(call_id)
        assert dropped_while_others_shown > 0

    def test_a_call_whose_result_left_the_graph_is_not_shown(self, s: Session) -> None:
        s.topic("t")
        call = s.message("tool_call", "{}", tool_call_id="c1")
        result = s.message("tool_result", "ok", tool_call_id="c1")
        s.remove(result)
        p = s.project()
        assert call.id in p.omitted
        assert call.id not in {sec.node_id for sec in p.sections}


class TestRecency:
    def test_old_messages_degrade_before_recent_ones(self, s: Session) -> None:
        s.topic("chat")
        msgs = [
            s.message("user" if i % 2 == 0 else "assistant",
                      "\n".join(f"turn {i} line {k}: some words here" for k in range(8)))
            for i in range(12)
        ]  # fmt: skip
        s.tick()
        full = s.project(100_000)
        p = s.project(full.tokens // 2)
        assert p.tokens <= full.tokens // 2
        rendered = {sec.node_id: sec.rendered_state for sec in p.sections}
        levels = [rendered.get(m.id, NodeState.HIDDEN) for m in msgs]
        assert levels == sorted(levels), levels  # never older-more-detailed than newer
        assert levels[0] < NodeState.DETAILS
        assert levels[-1] == NodeState.DETAILS
        assert rendered["topic_1"] == NodeState.DETAILS

    def test_an_active_topic_stays_expanded_while_old_messages_are_left_out(
        self, s: Session
    ) -> None:
        t = s.topic("chat")
        msgs = [s.message("user", f"message {i}: " + "words " * 30) for i in range(10)]
        s.tick()
        p = s.project(200)
        rendered = {sec.node_id: sec.rendered_state for sec in p.sections}
        assert rendered[t.id] == NodeState.DETAILS
        assert msgs[0].id in p.omitted
        shown = [m for m in msgs if m.id in rendered]
        assert len(shown) >= 3
        assert shown == msgs[-len(shown) :]  # a suffix: the newest ones
        levels = [rendered[m.id] for m in shown]
        assert levels == sorted(levels)

    def test_a_closed_topic_folds_before_the_active_one(self, s: Session) -> None:
        old = s.topic("yesterday")
        for i in range(6):
            s.message("user", f"old {i}: " + "words " * 30)
        s.close_topic(old)
        new = s.topic("today")
        latest = [s.message("user", f"new {i}: " + "words " * 30) for i in range(3)]
        s.tick()
        full = s.project(100_000)
        p = s.project(full.tokens * 2 // 3)
        rendered = {sec.node_id: sec.rendered_state for sec in p.sections}
        assert rendered[old.id] < NodeState.DETAILS
        assert rendered[new.id] == NodeState.DETAILS
        assert all(rendered[m.id] == NodeState.DETAILS for m in latest)

    def test_an_explicit_priority_overrides_recency(self, s: Session) -> None:
        s.topic("chat")
        body = "\n".join(f"line {k}: the same amount of words" for k in range(8))
        pinned = s.message("user", "the task: " + body, priority=95)
        rest = [s.message("assistant", body) for _ in range(8)]
        s.tick()
        full = s.project(100_000)
        p = s.project(full.tokens // 2)
        rendered = {sec.node_id: sec.rendered_state for sec in p.sections}
        assert rendered[pinned.id] == NodeState.DETAILS
        assert rendered.get(rest[0].id, NodeState.HIDDEN) < NodeState.DETAILS


class TestPromptCache:
    def test_appending_a_message_keeps_the_text_before_it(self, s: Session) -> None:
        s.topic("chat")
        s.message("user", "hello")
        before = s.tick().projection.text
        s.message("assistant", "hi there")
        after = s.tick().projection.text
        assert after.startswith(before.split("## Changes")[0])

    def test_stable_prefix_tokens_count_the_unchanged_text(self, s: Session) -> None:
        s.topic("chat")
        first = s.message("user", "hello")
        s.tick()
        s.message("assistant", "hi there")
        p = s.tick().projection
        unchanged = [sec for sec in p.sections if sec.node_id in ("topic_1", first.id)]
        assert p.stable_prefix_tokens == sum(sec.tokens for sec in unchanged)


class TestSerialization:
    def test_topics_and_messages_round_trip_with_their_pairing(self, s: Session) -> None:
        s.topic("t")
        s.message("user", "find the bug\nplease", name="ada")
        s.message("tool_call", '{"q": "bug"}', tool_call_id="c1", name="grep")
        s.message("tool_result", "src/a.py:3", tool_call_id="c1", name="grep")
        s.close_topic("topic_1")
        copy = rebuild(s.nodes())
        for node in s.nodes():
            twin = copy.get(node.id)
            assert type(twin) is type(node)
            assert twin.to_dict()["data"] == node.to_dict()["data"]
            assert renders(twin) == renders(node)
            assert twin.companions() == node.companions()

    def test_from_dict_keeps_state_and_priority(self, s: Session) -> None:
        s.topic("t")
        m = s.message("user", "x", state="SUMMARY", priority=3)
        twin = Node.from_dict(m.to_dict())
        assert (twin.state, twin.priority) == (NodeState.SUMMARY, 3)

    @pytest.mark.parametrize("state", VISIBLE_STATES)
    def test_every_state_renders_after_a_round_trip(self, s: Session, state: NodeState) -> None:
        t = s.topic("t")
        s.message("user", "a\nb")
        copy = rebuild(s.nodes())
        assert copy.get(t.id).render(state) == t.render(state)
