"""Projection invariants over random mixed graphs: text files, groups (shared children),
topics with messages and tool call/result pairs, artifacts; random states, priorities and
budgets from 1 to 20,000 tokens.

Checked at a tick and again after further changes:
- hard budget: the text's exact token count never exceeds the budget;
- a tool call and its result are shown together or not at all;
- nothing is silently dropped: every visible node is in ``sections`` or ``omitted``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagctx.nodes.base import Node, NodeState
from dagctx.nodes.message import MessageNode
from dagctx.projection import Projection
from dagctx.session import Session
from dagctx.tokens import get_encoding

FILES = {
    "one_line.py": "x = 1\n",
    "small.py": "".join(f"def f{i}():\n    return {i}\n\n" for i in range(10)),
    "long.md": "".join(f"# Part {i}\n\n{'word ' * 40}\n\n" for i in range(120)),
    "wide.txt": ("lorem ipsum " * 200 + "\n") * 30,
    "unicode.txt": "naïve café — 東京 ✓\n" * 50,
}
STATES = st.sampled_from(
    [None, None, None, "HIDDEN", "COLLAPSED", "SUMMARY", "DETAILS", "ALL"]
)  # None: the type's default
PRIORITIES = st.one_of(st.none(), st.none(), st.integers(0, 100))
WORDS = st.text(alphabet="abcdefghij klmnop\n{}:\"'`#-", min_size=0, max_size=400)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mixed")
    for name, content in FILES.items():
        (root / name).write_text(content)
    (root / "blob.bin").write_bytes(b"\x00\x01binary" * 100)
    return root


def visible_ids(s: Session) -> set[str]:
    """Nodes the projection must account for: reachable from a root through expanded,
    non-hidden nodes (the rule of dagctx.projection.walk, restated)."""
    seen: set[str] = set()
    stack: list[Node] = list(s.graph.roots())
    while stack:
        node = stack.pop()
        if node.state == NodeState.HIDDEN or node.id in seen:
            continue
        seen.add(node.id)
        if node.state in node.expands_at:
            stack.extend(node.children)
    return seen


def check(s: Session, p: Projection, budget: int, pairs: list[tuple[str, str]]) -> None:
    assert len(get_encoding().encode_ordinary(p.text)) <= budget
    shown = {sec.node_id for sec in p.sections if not sec.reference}
    for call, result in pairs:
        assert (call in shown) == (result in shown), (call, result, budget)
    accounted = {sec.node_id for sec in p.sections} | set(p.omitted)
    missing = visible_ids(s) - accounted
    assert not missing, (missing, budget)


def build(s: Session, data: st.DataObject) -> list[tuple[str, str]]:
    """Add a random mix of nodes; return the (call id, result id) pairs."""
    made: list[Node] = []
    pairs: list[tuple[str, str]] = []
    opts = lambda: {"state": data.draw(STATES), "priority": data.draw(PRIORITIES)}  # noqa: E731
    for _ in range(data.draw(st.integers(1, 7))):
        kind = data.draw(st.sampled_from(["text", "group", "topic", "artifact"]))
        if kind == "text":
            name = data.draw(st.sampled_from([*FILES, "blob.bin"]))
            made.append(s.text(name, **opts()))
        elif kind == "artifact":
            made.append(
                s.artifact(
                    data.draw(WORDS),
                    data.draw(st.sampled_from(["code", "output", "error"])),
                    **opts(),
                )
            )
        elif kind == "group" and made:
            members = data.draw(st.lists(st.sampled_from(made), max_size=3, unique_by=id))
            made.append(s.group(*members, title=data.draw(WORDS)[:20] or None, **opts()))
        elif kind == "topic":
            topic = s.topic("topic " + data.draw(WORDS)[:20], **opts())
            made.append(topic)
            pairs += add_messages(s, data, topic.id)
            if data.draw(st.booleans()):
                s.close_topic(topic)
    return pairs


def add_messages(s: Session, data: st.DataObject, topic: str) -> list[tuple[str, str]]:
    pairs = []
    for _ in range(data.draw(st.integers(0, 6))):
        role = data.draw(st.sampled_from(["user", "assistant", "pair"]))
        state, priority = data.draw(STATES), data.draw(PRIORITIES)
        if role != "pair":
            s.message(role, data.draw(WORDS), topic=topic, state=state, priority=priority)
            continue
        call_id = f"call_{len(s.nodes())}"
        call = s.message("tool_call", data.draw(WORDS), topic=topic, tool_call_id=call_id,
                         name="grep", state=state, priority=priority)  # fmt: skip
        if data.draw(st.booleans()):  # something may come between a call and its result
            s.message("assistant", data.draw(WORDS), topic=topic)
        result = s.message("tool_result", data.draw(WORDS) * data.draw(st.integers(1, 20)),
                           topic=topic, tool_call_id=call_id, name="grep",
                           state=data.draw(STATES), priority=data.draw(PRIORITIES))  # fmt: skip
        assert isinstance(call, MessageNode)
        pairs.append((call.id, result.id))
    return pairs


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), budget=st.integers(1, 20_000))
def test_mixed_graphs_stay_within_budget_and_keep_pairs(
    tree: Path, data: st.DataObject, budget: int
) -> None:
    with Session(tree, budget=budget) as s:
        pairs = build(s, data)
        s.session_node()
        check(s, s.tick().projection, budget, pairs)
        # Further changes, projected without a tick (the changes section is non-empty).
        for node in s.nodes():
            if node.type_name == "artifact" and data.draw(st.booleans()):
                s.update_artifact(node, data.draw(WORDS) + "\nupdated")
        pairs += add_messages(s, data, s.topic("late").id)
        second = data.draw(st.integers(1, 20_000))
        check(s, s.project(second), second, pairs)
