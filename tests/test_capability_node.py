"""CapabilityNode and the ``capability`` session verb: typed capability results in the
context DAG, rendered per state, saved and loaded, updated in place, and budgeted."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import field_serializer

from dagctx import GraphError, NodeNotFoundError, NodeState, Session
from dagctx.capability import (
    CapabilityContext,
    CapabilityError,
    CapabilityTypeError,
    ContextManager,
    RawContext,
)
from dagctx.errors import CycleError
from dagctx.nodes import CapabilityNode, Node
from dagctx.tokens import TokenCounter

# Context types here are prefixed CAPNODE_ so that they never collide with the types other
# test modules put in the global registry; the node rebuilds typed contexts through it.


class PVAddresses(CapabilityContext):
    CONTEXT_TYPE: ClassVar[str] = "CAPNODE_PV_ADDRESSES"
    CONTEXT_CATEGORY: ClassVar[str] = "METADATA"
    pvs: list[str]
    description: str = ""

    def get_access_details(self, key: str) -> dict[str, Any]:
        return {"pvs": f"context.{self.CONTEXT_TYPE}.{key}.pvs", "count": len(self.pvs)}


class Unregistered(CapabilityContext, register=False):
    CONTEXT_TYPE: ClassVar[str] = "CAPNODE_UNREGISTERED"
    CONTEXT_CATEGORY: ClassVar[str] = "LOCAL"
    value: int

    def get_access_details(self, key: str) -> dict[str, Any]:
        return {"value": f"context.{self.CONTEXT_TYPE}.{key}.value"}


class Broken(CapabilityContext):
    CONTEXT_TYPE: ClassVar[str] = "CAPNODE_BROKEN"
    CONTEXT_CATEGORY: ClassVar[str] = "TEST"
    value: int

    def get_summary(self) -> dict[str, Any]:
        raise RuntimeError("summary backend down")

    def get_access_details(self, key: str) -> dict[str, Any]:
        return {"not json": {1, 2}}  # a set: json.dumps falls back to str()


class OneWay(CapabilityContext):
    """Dumps a field to a form it does not accept back: it could not be saved and loaded."""

    CONTEXT_TYPE: ClassVar[str] = "CAPNODE_ONE_WAY"
    CONTEXT_CATEGORY: ClassVar[str] = "TEST"
    count: int

    @field_serializer("count")
    def _spell(self, count: int) -> str:
        return f"{count} items"

    def get_access_details(self, key: str) -> dict[str, Any]:
        return {}


class ArchiverData(CapabilityContext):
    """Archived channel values, with the kind of per-channel summary and access details
    users write, whose size grows with the data."""

    CONTEXT_TYPE: ClassVar[str] = "CAPNODE_ARCHIVER_DATA"
    CONTEXT_CATEGORY: ClassVar[str] = "ARCHIVER"
    channels: dict[str, list[float]]

    def get_summary(self) -> dict[str, Any]:
        stats = {
            name: {"min": min(v), "max": max(v), "mean": round(statistics.fmean(v), 4)}
            for name, v in self.channels.items()
        }
        return {"type": self.CONTEXT_TYPE, "channels": stats}

    def get_access_details(self, key: str) -> dict[str, Any]:
        return {
            "channels": {
                name: f"context.{self.CONTEXT_TYPE}.{key}.channels['{name}'] ({len(v)} floats)"
                for name, v in self.channels.items()
            }
        }


def archiver_data(channels: int = 160, samples: int = 24) -> ArchiverData:
    return ArchiverData(
        channels={
            f"SR:C{i // 10:02d}:BPM{i % 10}:X": [
                round(((i * 37 + j * 11) % 997) / 7.3, 3) for j in range(samples)
            ]
            for i in range(channels)
        }
    )


def rendered(node: Node) -> dict[NodeState, str]:
    return {state: node.render(state) for state in NodeState}


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    (tmp_path / "notes.md").write_text("# Notes\n\nBeam current dropped at 10:42.\n")
    with Session(tmp_path, budget=8000) as s:
        yield s


@pytest.fixture
def node(session: Session) -> CapabilityNode:
    return session.capability(PVAddresses(pvs=["SR:C01:BI:Current", "SR:C02:BI:Current"]), "step_1")


class TestRendering:
    def test_collapsed_is_one_line_with_type_key_and_category(self, node: CapabilityNode) -> None:
        line = node.render(NodeState.COLLAPSED)
        assert "\n" not in line
        assert line == f"- capability CAPNODE_PV_ADDRESSES.step_1 [METADATA] (#{node.id}): 2 fields"

    def test_summary_renders_get_summary(self, node: CapabilityNode) -> None:
        text = node.render(NodeState.SUMMARY)
        summary = PVAddresses(pvs=["SR:C01:BI:Current", "SR:C02:BI:Current"]).get_summary()
        assert text == (
            f"### capability CAPNODE_PV_ADDRESSES.step_1 [METADATA] (#{node.id})\n"
            f"summary: {json.dumps(summary)}"
        )
        assert "access" not in text

    def test_details_add_the_access_details(self, node: CapabilityNode) -> None:
        text = node.render(NodeState.DETAILS)
        assert text.startswith(node.render(NodeState.SUMMARY) + "\n")
        details = {"pvs": "context.CAPNODE_PV_ADDRESSES.step_1.pvs", "count": 2}
        assert text.endswith(f"\naccess context.CAPNODE_PV_ADDRESSES.step_1: {json.dumps(details)}")

    def test_all_renders_the_full_data_as_json(self, node: CapabilityNode) -> None:
        text = node.render(NodeState.ALL)
        data_line = text.splitlines()[-1]
        assert data_line.startswith("data: ")
        assert json.loads(data_line.removeprefix("data: ")) == {
            "pvs": ["SR:C01:BI:Current", "SR:C02:BI:Current"],
            "description": "",
        }
        assert "access context.CAPNODE_PV_ADDRESSES.step_1:" in text

    def test_hidden_renders_nothing(self, node: CapabilityNode) -> None:
        assert node.render(NodeState.HIDDEN) == ""

    def test_default_state_is_details(self, node: CapabilityNode) -> None:
        assert node.state == NodeState.DETAILS

    def test_untyped_context_renders_with_a_given_category(self) -> None:
        node = CapabilityNode(RawContext("CAPNODE_RAW", {"a": 1}), "k", category="FOUND")
        assert "CAPNODE_RAW.k [FOUND]" in node.render(NodeState.COLLAPSED)
        assert '"fields": ["a"]' in node.render(NodeState.DETAILS)

    def test_failing_user_methods_render_a_placeholder(self) -> None:
        node = CapabilityNode(Broken(value=1), "k")
        text = node.render(NodeState.DETAILS)
        assert "summary: [get_summary() failed: RuntimeError: summary backend down]" in text
        assert '"not json": "{1, 2}"' in text


class TestHolding:
    def test_the_node_keeps_its_own_copy(self) -> None:
        value = PVAddresses(pvs=["A"])
        node = CapabilityNode(value, "k")
        before = rendered(node)
        value.pvs.append("B")
        assert rendered(node) == before
        copy = node.context
        assert isinstance(copy, PVAddresses)
        copy.pvs.append("C")
        assert rendered(node) == before and node.data == {"pvs": ["A"], "description": ""}

    def test_anything_but_a_capability_context_is_refused(self) -> None:
        with pytest.raises(CapabilityTypeError, match="got dict"):
            CapabilityNode({"pvs": []}, "k")  # type: ignore[arg-type]

    def test_a_context_that_does_not_survive_its_json_dump_is_refused(self) -> None:
        with pytest.raises(CapabilityTypeError, match=r"OneWay stored as CAPNODE_ONE_WAY\.k"):
            CapabilityNode(OneWay(count=3), "k")

    def test_an_empty_key_is_refused(self) -> None:
        with pytest.raises(CapabilityError, match="capability key must be a non-empty string"):
            CapabilityNode(PVAddresses(pvs=[]), "")


class TestRoundTrip:
    def reloaded(self, node: Node) -> Node:
        return Node.from_dict(json.loads(json.dumps(node.to_dict())))

    def test_a_registered_type_comes_back_typed_and_renders_the_same(
        self, session: Session, node: CapabilityNode
    ) -> None:
        node.set_state(NodeState.ALL)
        back = self.reloaded(node)
        assert isinstance(back, CapabilityNode)
        assert (back.id, back.version, back.state) == (node.id, node.version, NodeState.ALL)
        assert (back.context_type, back.key, back.category) == (
            "CAPNODE_PV_ADDRESSES",
            "step_1",
            "METADATA",
        )
        assert isinstance(back.context, PVAddresses)
        assert back.context == node.context
        assert rendered(back) == rendered(node)

    def test_the_stored_form_is_type_key_category_and_json_data(self, node: CapabilityNode) -> None:
        data = node.to_dict()
        assert data["type"] == "capability"
        assert data["data"] == {
            "context_type": "CAPNODE_PV_ADDRESSES",
            "key": "step_1",
            "category": "METADATA",
            "data": {"pvs": ["SR:C01:BI:Current", "SR:C02:BI:Current"], "description": ""},
        }

    def test_an_unregistered_type_comes_back_as_raw_context_with_its_data(self) -> None:
        node = CapabilityNode(Unregistered(value=7), "k")
        back = self.reloaded(node)
        assert isinstance(back, CapabilityNode)
        assert isinstance(back.context, RawContext)
        assert back.context.to_dict() == {"value": 7}
        assert back.category == "LOCAL"
        assert back.render(NodeState.COLLAPSED) == node.render(NodeState.COLLAPSED)
        assert json.loads(back.render(NodeState.ALL).splitlines()[-1][6:]) == {"value": 7}
        assert self.reloaded(back).to_dict() == back.to_dict()

    def test_data_the_registered_class_no_longer_accepts_is_kept_raw(
        self, node: CapabilityNode
    ) -> None:
        data = node.to_dict()
        data["data"]["data"]["pvs"] = "not a list"  # as after a schema change
        back = Node.from_dict(data)
        assert isinstance(back, CapabilityNode) and isinstance(back.context, RawContext)
        assert back.data["pvs"] == "not a list"

    @pytest.mark.parametrize(
        "broken",
        [
            {"key": "k", "data": {}},
            {"context_type": "CAPNODE_X", "key": "k", "data": ["not", "fields"]},
            {"context_type": "CAPNODE_X", "key": "", "data": {}},
        ],
    )
    def test_malformed_node_data_raises_graph_error(
        self, node: CapabilityNode, broken: dict[str, Any]
    ) -> None:
        data = node.to_dict()
        data["data"] = broken
        with pytest.raises(GraphError, match="malformed capability node data"):
            Node.from_dict(data)


class TestUpdateInPlace:
    def test_same_type_and_key_updates_the_node_with_a_trace(
        self, session: Session, node: CapabilityNode
    ) -> None:
        traces = len(session.graph.traces)
        again = session.capability(PVAddresses(pvs=["SR:C03:BI:Current"]), "step_1")
        assert again is node
        assert node.version == 1
        assert [n for n in session.nodes() if isinstance(n, CapabilityNode)] == [node]
        assert node.data["pvs"] == ["SR:C03:BI:Current"]
        (trace,) = session.graph.traces[traces:]
        assert (trace.node_id, trace.old_version, trace.new_version) == (node.id, 0, 1)
        assert trace.description == "updated pvs"

    def test_identical_data_is_an_early_cutoff(
        self, session: Session, node: CapabilityNode
    ) -> None:
        traces = len(session.graph.traces)
        session.capability(PVAddresses(pvs=["SR:C01:BI:Current", "SR:C02:BI:Current"]), "step_1")
        assert node.version == 0
        assert session.graph.traces[traces:] == []
        assert node.update(node.context) is False

    def test_the_next_tick_lists_the_update_as_a_change(
        self, session: Session, node: CapabilityNode
    ) -> None:
        session.tick()
        session.capability(PVAddresses(pvs=["B"], description="beam"), "step_1")
        result = session.tick()
        assert [t.description for t in result.changes] == ["updated description, pvs"]
        assert "CAPNODE_PV_ADDRESSES.step_1: updated description, pvs" in result.projection.text

    def test_another_key_or_type_adds_a_node(self, session: Session, node: CapabilityNode) -> None:
        other_key = session.capability(PVAddresses(pvs=[]), "step_2")
        other_type = session.capability(RawContext("CAPNODE_OTHER", {"x": 1}), "step_1")
        assert len({node.id, other_key.id, other_type.id}) == 3
        assert session.find_capability("CAPNODE_PV_ADDRESSES", "step_2") is other_key
        assert session.find_capability("CAPNODE_OTHER", "step_1") is other_type
        assert session.find_capability("CAPNODE_OTHER", "step_9") is None

    def test_an_update_reaches_the_parent_group(self, session: Session) -> None:
        group = session.group(title="results")
        node = session.capability(PVAddresses(pvs=["A"]), "step_1", parent=group)
        assert node.parents == [group]
        before = group.version
        session.capability(PVAddresses(pvs=["B"]), "step_1")
        assert group.version == before + 1

    def test_state_priority_and_parent_apply_to_the_existing_node(
        self, session: Session, node: CapabilityNode
    ) -> None:
        group = session.group(title="step 1")
        same = session.capability(node.context, "step_1", group, state="SUMMARY", priority=80)
        assert same is node
        assert node.parents == [group]
        assert (node.state, node.priority) == (NodeState.SUMMARY, 80)

    def test_node_update_refuses_another_type(self, node: CapabilityNode) -> None:
        with pytest.raises(CapabilityError, match="CAPNODE_OTHER context cannot replace"):
            node.update(RawContext("CAPNODE_OTHER", {}))
        assert node.version == 0


class TestBadInputChangesNothing:
    def snapshot(self, session: Session) -> tuple[Any, ...]:
        nodes = [(n.id, n.version, n.state, n.to_dict()["data"]) for n in session.nodes()]
        return nodes, list(session.graph.traces), [r.id for r in session.graph.roots()]

    def test_a_bad_object_adds_nothing(self, session: Session, node: CapabilityNode) -> None:
        before = self.snapshot(session)
        with pytest.raises(CapabilityTypeError, match="got str"):
            session.capability("PV list", "step_1")  # type: ignore[arg-type]
        assert self.snapshot(session) == before

    def test_an_unknown_parent_changes_nothing(
        self, session: Session, node: CapabilityNode
    ) -> None:
        before = self.snapshot(session)
        with pytest.raises(NodeNotFoundError):
            session.capability(PVAddresses(pvs=["Z"]), "step_1", parent="group_99")
        with pytest.raises(NodeNotFoundError):
            session.capability(PVAddresses(pvs=["Z"]), "step_2", parent="group_99")
        assert self.snapshot(session) == before

    def test_a_cycle_or_bad_state_leaves_the_node_as_it_was(
        self, session: Session, node: CapabilityNode
    ) -> None:
        child = session.group(title="under the capability")
        session.link(node, child)
        before = self.snapshot(session)
        with pytest.raises(CycleError):
            session.capability(PVAddresses(pvs=["Z"]), "step_1", parent=child)
        with pytest.raises(GraphError, match="unknown node state 'LOUD'"):
            session.capability(PVAddresses(pvs=["Z"]), "step_1", state="LOUD")
        with pytest.raises(GraphError, match="priority must be an int, got 'high'"):
            session.capability(PVAddresses(pvs=["Z"]), "step_1", priority="high")  # type: ignore[arg-type]
        assert self.snapshot(session) == before


class TestBudget:
    """A capability result of ~20k tokens, where the original system's prompt overflowed."""

    def test_a_20k_token_result_is_degraded_to_fit_8k(self, session: Session) -> None:
        counter = TokenCounter(session.encoding)
        big = archiver_data()
        data_tokens = counter.count(json.dumps(big.model_dump(mode="json")))
        assert 18_000 <= data_tokens <= 24_000

        # The naive prompt: every summary plus every access description, concatenated.
        cm = ContextManager()
        cm.set_context("CAPNODE_PV_ADDRESSES", "step_1", PVAddresses(pvs=["SR:C01:BI:Current"]))
        cm.set_context("CAPNODE_ARCHIVER_DATA", "step_2", big)
        naive = json.dumps(cm.get_summaries()) + "\n" + cm.get_context_access_description()
        assert counter.count(naive) > 8000

        # The same contexts in the DAG, the big one requested in full.
        notes = session.text("notes.md")
        stored = cm.get_all()
        pvs = session.capability(stored["CAPNODE_PV_ADDRESSES"]["step_1"], "step_1")
        archived = session.capability(stored["CAPNODE_ARCHIVER_DATA"]["step_2"], "step_2")
        archived.set_state(NodeState.ALL)

        p = session.tick().projection
        assert p.tokens <= 8000
        assert p.tokens == counter.count_exact(p.text)
        assert archived.id in p.omitted or p.degraded[archived.id][1] < NodeState.ALL
        shown = {s.node_id: s.rendered_state for s in p.sections}
        assert shown[pvs.id] == NodeState.DETAILS and shown[notes.id] == NodeState.DETAILS
        assert f"capability CAPNODE_ARCHIVER_DATA.step_2 [ARCHIVER] (#{archived.id})" in p.text

    @pytest.mark.parametrize("budget", [4000, 1000, 200])
    def test_tighter_budgets_hold_and_nothing_is_dropped_silently(
        self, session: Session, budget: int
    ) -> None:
        archived = session.capability(archiver_data(), "step_2", state="ALL")
        p = session.project(budget)
        assert p.tokens <= budget
        shown = {s.node_id for s in p.sections}
        assert archived.id in shown or archived.id in p.omitted
        assert archived.id in p.degraded or archived.id in p.omitted
