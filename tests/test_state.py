"""Specification of dagctx.state: the reducers, AgentState, StateManager and event helpers."""

from __future__ import annotations

import copy
import functools
import inspect
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, get_type_hints

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagctx.capability import (
    CapabilityContext,
    CapabilityError,
    CapabilityTypeError,
    ContextManager,
    ContextRegistry,
)
from dagctx.errors import ContextError
from dagctx.state import (
    DELETE,
    EXECUTION_FIELDS,
    PERSISTENT_FIELDS,
    AgentState,
    StateError,
    StateManager,
    create_progress_event,
    create_status_update,
    get_execution_steps_summary,
    merge_capability_context_data,
    merge_session_state,
)


class Notes(CapabilityContext):
    """Registered in the default registry, under a type no other test module uses."""

    CONTEXT_TYPE: ClassVar[str] = "DAGCTX_STATE_NOTES"
    CONTEXT_CATEGORY: ClassVar[str] = "TEXT"
    text: str

    def get_access_details(self, key: str) -> dict[str, Any]:
        return {"text": f"context.DAGCTX_STATE_NOTES.{key}.text"}


class Unregistered(CapabilityContext, register=False):
    CONTEXT_TYPE: ClassVar[str] = "DAGCTX_STATE_UNREGISTERED"
    CONTEXT_CATEGORY: ClassVar[str] = "TEXT"
    value: int

    def get_access_details(self, key: str) -> dict[str, Any]:
        return {}


# --- hypothesis strategies: small alphabets so that merges collide often -------------

entries = st.dictionaries(st.sampled_from(["v", "w"]), st.integers(0, 3), max_size=2)
plain_data = st.dictionaries(
    st.sampled_from(["A", "B", "C"]),
    st.dictionaries(st.sampled_from(["k1", "k2", "k3"]), entries, max_size=3),
    max_size=3,
)
updates = st.dictionaries(
    st.sampled_from(["A", "B", "C"]),
    st.just(DELETE)
    | st.dictionaries(st.sampled_from(["k1", "k2", "k3"]), entries | st.just(DELETE), max_size=3),
    max_size=3,
)
maybe_plain = st.none() | plain_data
maybe_update = st.none() | updates


def reference_apply(state: dict[str, Any] | None, steps: list[dict[str, Any] | None]) -> Any:
    """The reducer's meaning, written over a flat {(type, key): entry} map."""
    flat = {(t, k): e for t, es in (state or {}).items() for k, e in es.items()}
    for update in steps:
        for t, es in (update or {}).items():
            if es == DELETE:
                flat = {(tt, kk): e for (tt, kk), e in flat.items() if tt != t}
                continue
            for k, e in es.items():
                if e == DELETE:
                    flat.pop((t, k), None)
                else:
                    flat[(t, k)] = e
    nested: dict[str, dict[str, Any]] = {}
    for (t, k), e in flat.items():
        nested.setdefault(t, {})[k] = e
    return nested


def contains_delete(data: Any) -> bool:
    if data == DELETE:
        return True
    return isinstance(data, dict) and any(contains_delete(v) for v in data.values())


class TestMergeExamples:
    def test_entries_are_replaced_whole_and_other_entries_kept(self) -> None:
        existing = {
            "PV_ADDRESSES": {"step_1": {"pvs": ["A"], "count": 1}},
            "ANALYSIS_RESULTS": {"beam_analysis_20240115": {"mean": 1.0}},
        }
        new = {"PV_ADDRESSES": {"step_1": {"pvs": ["B"]}, "step_2": {"pvs": ["C"]}}}
        assert merge_capability_context_data(existing, new) == {
            "PV_ADDRESSES": {"step_1": {"pvs": ["B"]}, "step_2": {"pvs": ["C"]}},
            "ANALYSIS_RESULTS": {"beam_analysis_20240115": {"mean": 1.0}},
        }

    def test_none_on_either_side_counts_as_empty(self) -> None:
        data = {"A": {"k": {"v": 1}}}
        assert merge_capability_context_data(None, None) == {}
        assert merge_capability_context_data(None, data) == data
        assert merge_capability_context_data(data, None) == data

    def test_a_tombstone_deletes_an_entry_or_a_type(self) -> None:
        existing = {"A": {"k1": {"v": 1}, "k2": {"v": 2}}, "B": {"k": {"v": 3}}}
        assert merge_capability_context_data(existing, {"A": {"k1": DELETE}}) == {
            "A": {"k2": {"v": 2}},
            "B": {"k": {"v": 3}},
        }
        assert merge_capability_context_data(existing, {"A": DELETE}) == {"B": {"k": {"v": 3}}}

    def test_a_type_left_empty_is_dropped_and_unknown_deletions_are_no_ops(self) -> None:
        existing = {"A": {"k": {"v": 1}}}
        assert merge_capability_context_data(existing, {"A": {"k": DELETE}}) == {}
        assert (
            merge_capability_context_data(existing, {"Z": {"k": DELETE}, "Y": DELETE}) == existing
        )

    def test_a_combined_update_loses_a_deletion_its_own_value_masks(self) -> None:
        # The documented limit of associativity: apply deleting updates in order.
        state = {"A": {"k": {"v": 0}}}
        first, second = {"A": {"k": {"v": 1}}}, {"A": {"k": DELETE}}
        one_by_one = merge_capability_context_data(
            merge_capability_context_data(state, first), second
        )
        combined = merge_capability_context_data(
            state, merge_capability_context_data(first, second)
        )
        assert one_by_one == {}
        assert combined == state

    @pytest.mark.parametrize(
        ("new", "message"),
        [
            (["A"], r"\(new\) must be a mapping or None, got list"),
            ({"A": ["k"]}, "A must map keys to entries or be DELETE, got list"),
            ({"A": {"k": 3}}, r"entry A\.k must be a mapping of fields or DELETE, got int"),
            ({"A": {"k": "delete"}}, r"entry A\.k must be a mapping"),
            ({"": {}}, "context type that is not a non-empty string"),
            ({"A": {7: {}}}, "key that is not a non-empty string: 7"),
        ],
    )
    def test_malformed_updates_are_refused(self, new: Any, message: str) -> None:
        with pytest.raises(CapabilityError, match=message):
            merge_capability_context_data({"A": {"k": {"v": 1}}}, new)

    def test_it_works_as_a_fold_over_updates(self) -> None:
        steps = [{"A": {"k1": {"v": 1}}}, None, {"A": {"k2": {"v": 2}}}, {"A": {"k1": DELETE}}]
        result = functools.reduce(merge_capability_context_data, steps, None)
        assert result == {"A": {"k2": {"v": 2}}}
        assert len(inspect.signature(merge_capability_context_data).parameters) == 2


class TestMergeProperties:
    @given(maybe_plain, maybe_plain, maybe_plain)
    def test_successive_merges_are_associative(
        self, a: dict[str, Any] | None, b: dict[str, Any] | None, c: dict[str, Any] | None
    ) -> None:
        merge = merge_capability_context_data
        assert merge(merge(a, b), c) == merge(a, merge(b, c))

    @given(maybe_plain, st.lists(maybe_update, max_size=5))
    def test_successive_merges_match_the_reference(
        self, state: dict[str, Any] | None, steps: list[dict[str, Any] | None]
    ) -> None:
        start = merge_capability_context_data(state, None)
        result = functools.reduce(merge_capability_context_data, steps, start)
        assert result == reference_apply(state, steps)

    @given(maybe_update, maybe_update)
    def test_the_result_holds_no_tombstones_and_no_empty_types(
        self, existing: dict[str, Any] | None, new: dict[str, Any] | None
    ) -> None:
        result = merge_capability_context_data(existing, new)
        assert not contains_delete(result)
        assert all(result.values())

    @given(maybe_update, maybe_update)
    def test_inputs_are_untouched_even_when_the_result_is_mutated(
        self, existing: dict[str, Any] | None, new: dict[str, Any] | None
    ) -> None:
        before = copy.deepcopy((existing, new))
        result = merge_capability_context_data(existing, new)
        assert (existing, new) == before
        for entries_of_type in result.values():
            for entry in entries_of_type.values():
                entry["mutated"] = True
            entries_of_type["added"] = {}
        result["ADDED"] = {}
        assert (existing, new) == before

    @given(maybe_update)
    def test_none_is_the_same_as_empty_on_both_sides(self, data: dict[str, Any] | None) -> None:
        merge = merge_capability_context_data
        assert merge(None, data) == merge({}, data)
        assert merge(data, None) == merge(data, {})

    @given(plain_data)
    def test_merging_a_state_into_itself_changes_nothing(self, data: dict[str, Any]) -> None:
        normalized = merge_capability_context_data(data, None)
        assert merge_capability_context_data(normalized, normalized) == normalized


class TestSessionStateReducer:
    def test_keys_are_updated_and_deleted(self) -> None:
        existing = {"user": "ada", "beamline": "SR", "theme": "dark"}
        new = {"beamline": "BTS", "theme": DELETE}
        assert merge_session_state(existing, new) == {"user": "ada", "beamline": "BTS"}
        assert existing == {"user": "ada", "beamline": "SR", "theme": "dark"}

    def test_none_and_bad_input(self) -> None:
        assert merge_session_state(None, None) == {}
        assert merge_session_state(None, {"a": 1, "b": DELETE}) == {"a": 1}
        with pytest.raises(StateError, match="session_state must be a mapping"):
            merge_session_state({"a": 1}, ["a"])  # type: ignore[arg-type]

    @given(
        st.none() | st.dictionaries(st.sampled_from("abc"), st.integers(0, 2)),
        st.lists(
            st.none()
            | st.dictionaries(st.sampled_from("abc"), st.integers(0, 2) | st.just(DELETE)),
            max_size=4,
        ),
    )
    def test_successive_merges_match_dict_updates(
        self, state: dict[str, Any] | None, steps: list[dict[str, Any] | None]
    ) -> None:
        expected = dict(state or {})
        for step in steps:
            for key, value in (step or {}).items():
                if value == DELETE:
                    expected.pop(key, None)
                else:
                    expected[key] = value
        start = merge_session_state(state, None)
        assert functools.reduce(merge_session_state, steps, start) == expected


def dirty_state() -> dict[str, Any]:
    """A state after a turn: every execution-scoped field away from its default."""
    return {
        "capability_context_data": {"DAGCTX_STATE_NOTES": {"turn_1": {"text": "beam"}}},
        "session_state": {"user": "ada"},
        "task_user_input": "find the beam current PVs",
        "task_current_task": "Find beam current PVs",
        "task_depends_on_chat_history": True,
        "task_depends_on_user_memory": True,
        "planning_active_capabilities": ["pv_address_finding"],
        "planning_execution_plan": {"steps": [{"context_key": "turn_1"}]},
        "planning_current_step_index": 1,
        "execution_step_results": {"turn_1": {"step_index": 0}},
        "execution_last_result": {"ok": True},
        "control_needs_reclassification": True,
        "control_retry_count": 2,
        "control_has_error": True,
        "control_error_info": {"message": "boom"},
        "react_messages": [{"role": "assistant", "content": "thinking"}],
        "react_step_count": 4,
        "ui_captured_figures": [{"figure_path": "a.png"}],
        "ui_captured_notebooks": ["http://localhost:8888/a.ipynb"],
        "undeclared_field": "dropped",
    }


class TestFreshState:
    def test_the_field_sets_cover_agent_state_exactly(self) -> None:
        declared = set(get_type_hints(AgentState))
        assert declared == PERSISTENT_FIELDS | EXECUTION_FIELDS
        assert not PERSISTENT_FIELDS & EXECUTION_FIELDS
        assert set(StateManager.create_fresh_state("hi")) == declared

    def test_every_execution_scoped_field_is_reset(self) -> None:
        previous = dirty_state()
        fresh = StateManager.create_fresh_state("How about New York?", previous)
        blank = StateManager.create_fresh_state("How about New York?")
        for field in EXECUTION_FIELDS:
            assert fresh[field] == blank[field], field  # type: ignore[literal-required]
            assert fresh[field] != previous[field], field  # type: ignore[literal-required]
        assert fresh["task_user_input"] == "How about New York?"
        assert fresh["react_step_count"] == 0 and fresh["control_has_error"] is False
        assert "undeclared_field" not in fresh

    def test_persistent_fields_are_kept_as_copies(self) -> None:
        previous = dirty_state()
        snapshot = copy.deepcopy(previous)
        fresh = StateManager.create_fresh_state("next", previous)
        assert fresh["capability_context_data"] == previous["capability_context_data"]
        assert fresh["session_state"] == {"user": "ada"}
        fresh["capability_context_data"]["DAGCTX_STATE_NOTES"]["turn_1"]["text"] = "changed"
        fresh["session_state"]["user"] = "bob"
        assert previous == snapshot

    def test_a_first_turn_starts_empty(self) -> None:
        fresh = StateManager.create_fresh_state("What's the weather in San Francisco?")
        assert fresh["capability_context_data"] == {} and fresh["session_state"] == {}
        assert fresh["task_user_input"] == "What's the weather in San Francisco?"

    def test_the_second_turn_finds_the_first_turns_context(self) -> None:
        state = StateManager.create_fresh_state("What's the weather in San Francisco?")
        update = StateManager.store_context(state, "DAGCTX_STATE_NOTES", "sf", Notes(text="18C"))
        state["capability_context_data"] = merge_capability_context_data(
            state["capability_context_data"], update["capability_context_data"]
        )
        second = StateManager.create_fresh_state("How about New York?", state)
        assert ContextManager(second).DAGCTX_STATE_NOTES.sf == Notes(text="18C")

    def test_fresh_states_share_no_mutable_defaults(self) -> None:
        first = StateManager.create_fresh_state("a")
        first["react_messages"].append({"role": "assistant", "content": "x"})
        first["execution_step_results"]["x"] = 1
        second = StateManager.create_fresh_state("b")
        assert second["react_messages"] == [] and second["execution_step_results"] == {}

    def test_bad_input_is_refused(self) -> None:
        with pytest.raises(StateError, match="user_input must be a string, got int"):
            StateManager.create_fresh_state(3)  # type: ignore[arg-type]
        with pytest.raises(StateError, match="current_state must be a mapping"):
            StateManager.create_fresh_state("x", ["state"])  # type: ignore[arg-type]
        with pytest.raises(CapabilityError, match="must be a mapping of fields"):
            StateManager.create_fresh_state("x", {"capability_context_data": {"A": {"k": 1}}})
        assert issubclass(StateError, ContextError)


class TestStoreContext:
    def test_the_update_holds_only_the_new_entry_and_merges_in(self) -> None:
        state = StateManager.create_fresh_state("x", dirty_state())
        snapshot = copy.deepcopy(state)
        update = StateManager.store_context(state, "DAGCTX_STATE_NOTES", "turn_2", Notes(text="b"))
        assert update == {
            "capability_context_data": {"DAGCTX_STATE_NOTES": {"turn_2": {"text": "b"}}}
        }
        assert state == snapshot
        merged = merge_capability_context_data(
            state["capability_context_data"], update["capability_context_data"]
        )
        manager = ContextManager({"capability_context_data": merged})
        assert manager.get_all_of_type("DAGCTX_STATE_NOTES") == {
            "turn_1": Notes(text="beam"),
            "turn_2": Notes(text="b"),
        }

    def test_the_task_objective_comes_from_the_matching_plan_step(self) -> None:
        state = {
            "planning_execution_plan": {
                "steps": [
                    {"context_key": "pvs", "task_objective": "Find PVs"},
                    {"context_key": "notes", "task_objective": "Write notes"},
                ]
            },
            "planning_current_step_index": 1,
        }

        def objective(update: dict[str, Any], key: str) -> str | None:
            manager = ContextManager(update)
            return manager.get_task_objective("DAGCTX_STATE_NOTES", key)

        matching = StateManager.store_context(state, "DAGCTX_STATE_NOTES", "notes", Notes(text="a"))
        other = StateManager.store_context(state, "DAGCTX_STATE_NOTES", "pvs", Notes(text="a"))
        explicit = StateManager.store_context(
            state, "DAGCTX_STATE_NOTES", "notes", Notes(text="a"), task_objective="Mine"
        )
        assert objective(matching, "notes") == "Write notes"
        assert objective(other, "pvs") is None
        assert objective(explicit, "notes") == "Mine"

    def test_a_value_of_the_wrong_type_is_refused(self) -> None:
        with pytest.raises(
            CapabilityTypeError, match="cannot be stored under 'DAGCTX_STATE_NOTES'"
        ):
            StateManager.store_context({}, "DAGCTX_STATE_NOTES", "k", Unregistered(value=1))

    def test_a_registry_can_be_given(self) -> None:
        own = ContextRegistry()
        own.register(Unregistered)
        update = StateManager.store_context(
            {}, "DAGCTX_STATE_UNREGISTERED", "k", Unregistered(value=2), registry=own
        )
        manager = ContextManager(update, registry=own)
        assert manager.DAGCTX_STATE_UNREGISTERED.k == Unregistered(value=2)

    def test_delete_context_updates_remove_an_entry_or_a_type(self) -> None:
        data = {"A": {"k1": {"v": 1}, "k2": {"v": 2}}}
        one = StateManager.delete_context("A", "k1")["capability_context_data"]
        whole = StateManager.delete_context("A")["capability_context_data"]
        assert merge_capability_context_data(data, one) == {"A": {"k2": {"v": 2}}}
        assert merge_capability_context_data(data, whole) == {}
        with pytest.raises(StateError, match="context_key must be a non-empty string"):
            StateManager.delete_context("A", "")
        with pytest.raises(StateError, match="context_type"):
            StateManager.delete_context("")


PLAN = {
    "steps": [
        {"context_key": "pvs", "capability": "pv_address_finding", "task_objective": "Find PVs"},
        {"context_key": "data", "capability": "archiver_retrieval", "task_objective": "Get data"},
    ]
}


class TestPlanAccess:
    def test_plan_and_current_step(self) -> None:
        state = {"planning_execution_plan": PLAN, "planning_current_step_index": 1}
        assert StateManager.get_execution_plan(state) == PLAN
        assert StateManager.get_current_step(state)["capability"] == "archiver_retrieval"
        assert (
            StateManager.get_current_step({"planning_execution_plan": PLAN})["context_key"] == "pvs"
        )

    def test_no_plan(self) -> None:
        assert StateManager.get_execution_plan({}) is None
        assert StateManager.get_execution_plan(StateManager.create_fresh_state("x")) is None
        with pytest.raises(StateError, match="no execution plan"):
            StateManager.get_current_step({})

    def test_an_index_past_the_end_is_reported(self) -> None:
        state = {"planning_execution_plan": PLAN, "planning_current_step_index": 2}
        with pytest.raises(StateError, match="index 2 is past the end of the 2-step plan"):
            StateManager.get_current_step(state)
        with pytest.raises(StateError, match="non-negative integer, got -1"):
            StateManager.get_current_step({**state, "planning_current_step_index": -1})

    def test_a_malformed_plan_is_reported(self) -> None:
        with pytest.raises(StateError, match=r"must be \{'steps'"):
            StateManager.get_execution_plan({"planning_execution_plan": {"steps": "x"}})


class TestArtefactRegistration:
    def test_a_figure_is_appended_to_a_new_list(self) -> None:
        state = {"ui_captured_figures": [{"figure_path": "old.png"}]}
        update = StateManager.register_figure(
            state, "plotting", Path("out") / "beam.png", "Beam current", {"dpi": 100}
        )
        figures = update["ui_captured_figures"]
        assert figures[0] == {"figure_path": "old.png"}
        assert figures[1]["figure_path"] == str(Path("out") / "beam.png")
        assert figures[1]["capability"] == "plotting"
        assert figures[1]["display_name"] == "Beam current"
        assert figures[1]["metadata"] == {"dpi": 100}
        assert datetime.fromisoformat(figures[1]["created_at"]).tzinfo is not None
        assert state == {"ui_captured_figures": [{"figure_path": "old.png"}]}

    def test_a_notebook_keeps_its_link(self) -> None:
        update = StateManager.register_notebook(
            {}, "python_executor", "runs/analysis.ipynb", "http://localhost:8888/x"
        )
        assert update["ui_captured_notebooks"] == ["http://localhost:8888/x"]

    def test_bad_arguments_are_refused(self) -> None:
        with pytest.raises(StateError, match="capability must be a non-empty string"):
            StateManager.register_figure({}, "", "a.png")
        with pytest.raises(StateError, match="figure_path must be a non-empty path"):
            StateManager.register_figure({}, "plotting", "")
        with pytest.raises(StateError, match="ui_captured_figures must be a list"):
            StateManager.register_figure({"ui_captured_figures": "a.png"}, "plotting", "b.png")


class TestEvents:
    def test_status_update(self) -> None:
        event = create_status_update("Retrieving data", 0.5, node="archiver", run_id="r1")
        assert {k: v for k, v in event.items() if k != "timestamp"} == {
            "event_type": "status",
            "message": "Retrieving data",
            "progress": 0.5,
            "complete": False,
            "node": "archiver",
            "run_id": "r1",
        }
        assert datetime.fromisoformat(event["timestamp"]).tzinfo is not None

    def test_progress_event(self) -> None:
        event = create_progress_event(1, 4, "Finding PVs", "pv_address_finding")
        assert event["event_type"] == "progress"
        assert event["progress"] == 0.25
        assert (event["current_step"], event["total_steps"]) == (1, 4)
        assert event["capability"] == "pv_address_finding"

    @pytest.mark.parametrize("progress", [-0.1, 1.5, True, "half"])
    def test_a_progress_outside_0_to_1_is_refused(self, progress: Any) -> None:
        with pytest.raises(StateError, match="between 0 and 1"):
            create_status_update("x", progress)

    @pytest.mark.parametrize(("current", "total"), [(5, 4), (-1, 4), (0, 0), (1.0, 2)])
    def test_impossible_step_counts_are_refused(self, current: Any, total: Any) -> None:
        with pytest.raises(StateError, match="current_step"):
            create_progress_event(current, total, "x")

    def test_extra_fields_cannot_overwrite_standard_ones(self) -> None:
        with pytest.raises(StateError, match=r"\['event_type'\]"):
            create_status_update("x", event_type="other")
        with pytest.raises(StateError, match=r"\['timestamp'\]"):
            create_progress_event(0, 1, "x", timestamp="yesterday")


class TestExecutionStepsSummary:
    def test_lines_follow_step_index_with_fallback_labels(self) -> None:
        state = {
            "execution_step_results": {
                "data": {"step_index": 1, "capability": "archiver_retrieval", "success": False},
                "loose": {"task_objective": "Unplanned check"},
                "pvs": {"step_index": 0, "task_objective": "Find PVs", "success": True},
                "bare": {"step_index": 2},
            }
        }
        assert get_execution_steps_summary(state) == [
            "Step 1: Find PVs",
            "Step 2: archiver_retrieval [failed]",
            "Step 3: bare",
            "Step 4: Unplanned check",
        ]

    def test_nothing_executed(self) -> None:
        assert get_execution_steps_summary({}) == []
        assert get_execution_steps_summary(StateManager.create_fresh_state("x")) == []

    def test_malformed_results_are_reported(self) -> None:
        with pytest.raises(StateError, match="execution_step_results must map"):
            get_execution_steps_summary({"execution_step_results": {"a": 1}})


@settings(max_examples=50)
@given(st.text(max_size=20), st.booleans())
def test_fresh_state_keeps_any_user_input(user_input: str, with_previous: bool) -> None:
    previous = dirty_state() if with_previous else None
    fresh = StateManager.create_fresh_state(user_input, previous)
    assert fresh["task_user_input"] == user_input
