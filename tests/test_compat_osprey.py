"""Code written against osprey's ``osprey.context`` / ``osprey.state`` keeps working.

Each test follows osprey's documented behaviour (docstrings of ``ContextManager`` and
``StateManager`` before osprey removed LangGraph); the deliberate differences are listed
in the README's "Coming from orbiter / osprey".
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from dagctx.capability import (
    CapabilityContext,
    CapabilityError,
    CapabilityTypeError,
    ContextManager,
    ContextRegistry,
    DictNamespace,
    RawContext,
)
from dagctx.state import StateManager

registry = ContextRegistry()


@registry.register
class PVAddresses(CapabilityContext, register=False):
    CONTEXT_TYPE: ClassVar[str] = "PV_ADDRESSES"
    CONTEXT_CATEGORY: ClassVar[str] = "METADATA"

    pvs: list[str]

    def get_access_details(self, key: str) -> dict[str, Any]:
        return {"pvs": f"context.PV_ADDRESSES.{key}.pvs"}


@registry.register
class TimeRange(CapabilityContext, register=False):
    CONTEXT_TYPE: ClassVar[str] = "TIME_RANGE"
    CONTEXT_CATEGORY: ClassVar[str] = "METADATA"

    start: str

    def get_access_details(self, key: str) -> dict[str, Any]:
        return {"start": self.start}


class Scratch(CapabilityContext, register=False):
    """A context class osprey's tests store with ``skip_validation=True``."""

    CONTEXT_TYPE: ClassVar[str] = "SCRATCH"
    CONTEXT_CATEGORY: ClassVar[str] = "TEST"

    note: str

    def get_access_details(self, key: str) -> dict[str, Any]:
        return {"note": self.note}


@pytest.fixture
def state() -> dict[str, Any]:
    manager = ContextManager(registry=registry)
    manager.set_context("PV_ADDRESSES", "beam", PVAddresses(pvs=["SR:C01:BPM1"]))
    manager.set_context("TIME_RANGE", "last_hour", TimeRange(start="2025-01-01T00:00"))
    return {"capability_context_data": manager.get_raw_data(), "planning_execution_plan": None}


@pytest.fixture
def cm(state: dict[str, Any]) -> ContextManager:
    return ContextManager(state, registry=registry)


class TestExtractFromStep:
    """Item 1: ``extract_from_step(step, state, constraints=[...], constraint_mode=...)``."""

    step: ClassVar[dict[str, Any]] = {
        "inputs": [{"PV_ADDRESSES": "beam"}, {"TIME_RANGE": "last_hour"}]
    }

    def test_the_documented_call_with_state_and_constraints(
        self, cm: ContextManager, state: dict[str, Any]
    ) -> None:
        contexts = cm.extract_from_step(
            self.step,
            state,
            constraints=[("PV_ADDRESSES", "single"), ("TIME_RANGE", "single")],
            constraint_mode="hard",
        )
        assert contexts["PV_ADDRESSES"] == PVAddresses(pvs=["SR:C01:BPM1"])
        assert contexts["TIME_RANGE"] == TimeRange(start="2025-01-01T00:00")

    def test_the_simple_call_takes_the_state_as_the_state(
        self, cm: ContextManager, state: dict[str, Any]
    ) -> None:
        assert set(cm.extract_from_step(self.step, state)) == {"PV_ADDRESSES", "TIME_RANGE"}

    def test_unmet_constraints_raise_value_error_as_capabilities_catch(
        self, cm: ContextManager, state: dict[str, Any]
    ) -> None:
        step = {"inputs": [{"PV_ADDRESSES": "beam"}]}
        with pytest.raises(ValueError, match="TIME_RANGE"):
            cm.extract_from_step(step, state, constraints=["TIME_RANGE"], constraint_mode="hard")
        soft = cm.extract_from_step(
            step, state, constraints=["TIME_RANGE", "PV_ADDRESSES"], constraint_mode="soft"
        )
        assert list(soft) == ["PV_ADDRESSES"]

    def test_a_state_that_is_not_a_mapping_is_blamed_as_the_state(self, cm: ContextManager) -> None:
        with pytest.raises(CapabilityError, match=r"state must be the agent state.*list"):
            cm.extract_from_step(self.step, ["PV_ADDRESSES"])  # type: ignore[arg-type]


class TestSetContext:
    """Item 2: ``set_context(type, key, value, skip_validation=False, task_objective=None)``."""

    def test_skip_validation_stores_a_value_of_another_type(self) -> None:
        cm = ContextManager(registry=registry)
        cm.set_context("PV_ADDRESSES", "k", Scratch(note="x"), skip_validation=True)
        assert cm.get_raw_data() == {"PV_ADDRESSES": {"k": {"note": "x"}}}
        with pytest.raises(CapabilityTypeError):
            cm.set_context("PV_ADDRESSES", "k2", Scratch(note="y"))
        assert "k2" not in cm.get_raw_data()["PV_ADDRESSES"]

    def test_the_positional_order_is_ospreys(self) -> None:
        cm = ContextManager(registry=registry)
        cm.set_context("SCRATCH", "k", Scratch(note="x"), True, "explore")
        assert cm.get_context_metadata("SCRATCH", "k") == {"task_objective": "explore"}

    def test_skip_validation_still_needs_a_capability_context(self) -> None:
        cm = ContextManager(registry=registry)
        with pytest.raises(CapabilityTypeError, match="must be a CapabilityContext"):
            cm.set_context("SCRATCH", "k", {"note": "x"}, skip_validation=True)  # type: ignore[arg-type]
        with pytest.raises(CapabilityError, match="skip_validation must be True or False"):
            cm.set_context("SCRATCH", "k", Scratch(note="x"), "yes")  # type: ignore[arg-type]
        assert cm.get_raw_data() == {}


class TestMetadata:
    """Item 3: ``get_context_metadata`` / ``get_all_context_metadata``."""

    def test_metadata_of_one_entry(self) -> None:
        cm = ContextManager(registry=registry)
        cm.set_context("PV_ADDRESSES", "a", PVAddresses(pvs=[]), task_objective="find PVs")
        cm.set_context("PV_ADDRESSES", "b", PVAddresses(pvs=[]))
        assert cm.get_context_metadata("PV_ADDRESSES", "a") == {"task_objective": "find PVs"}
        assert cm.get_context_metadata("PV_ADDRESSES", "b") is None
        assert cm.get_context_metadata("PV_ADDRESSES", "missing") is None
        assert cm.get_context_metadata("NO_SUCH_TYPE", "a") is None

    def test_all_metadata_lists_only_entries_that_have_some(self) -> None:
        cm = ContextManager(registry=registry)
        cm.set_context("PV_ADDRESSES", "a", PVAddresses(pvs=[]), task_objective="find PVs")
        cm.set_context("PV_ADDRESSES", "b", PVAddresses(pvs=[]))
        cm.set_context("TIME_RANGE", "t", TimeRange(start="now"))
        assert cm.get_all_context_metadata() == {
            "PV_ADDRESSES": {"a": {"task_objective": "find PVs"}}
        }

    def test_returned_metadata_is_a_copy(self) -> None:
        cm = ContextManager(registry=registry)
        cm.set_context("PV_ADDRESSES", "a", PVAddresses(pvs=[]), task_objective="find PVs")
        meta = cm.get_context_metadata("PV_ADDRESSES", "a")
        assert meta is not None
        meta["task_objective"] = "changed"
        assert cm.get_all_context_metadata()["PV_ADDRESSES"]["a"]["task_objective"] == "find PVs"

    def test_a_misspelt_method_is_named_as_an_attribute(self, cm: ContextManager) -> None:
        with pytest.raises(AttributeError, match="has no attribute 'get_context_metadta'"):
            cm.get_context_metadta  # noqa: B018


class TestUnregisteredData:
    """Item 4: data without a registered class gets nested dot access (DictNamespace)."""

    data: ClassVar[dict[str, Any]] = {
        "BEAM_REPORT": {
            "r1": {
                "outer": {"inner": {"value": 3}},
                "rows": [{"name": "a"}, {"name": "b"}, 7],
                "keys": "a field named like a method",
            }
        }
    }

    def test_dots_chain_through_nested_mappings_and_lists(self) -> None:
        report = ContextManager.from_data(self.data, registry=registry).BEAM_REPORT.r1
        assert isinstance(report, RawContext)
        assert report.outer.inner.value == 3
        assert [row.name for row in report.rows[:2]] == ["a", "b"]
        assert report.rows[2] == 7
        assert isinstance(report.outer, DictNamespace)

    def test_subscripts_and_mapping_behaviour_still_work(self) -> None:
        report = ContextManager.from_data(self.data).get_context("BEAM_REPORT", "r1")
        assert report is not None
        assert report["outer"]["inner"]["value"] == 3
        assert report.outer == {"inner": {"value": 3}}
        assert "inner" in report.outer and report.outer.to_dict() == {"inner": {"value": 3}}
        assert report["keys"] == "a field named like a method"

    def test_a_missing_nested_field_names_the_fields_there_are(self) -> None:
        report = ContextManager.from_data(self.data).BEAM_REPORT.r1
        with pytest.raises(AttributeError, match="no field 'nope'; fields: inner"):
            _ = report.outer.nope


class TestRegisterNotebook:
    """Item 5: ``ui_captured_notebooks`` holds link strings, as osprey stores them."""

    def test_the_link_is_appended_to_a_new_list(self) -> None:
        state = {"ui_captured_notebooks": ["http://localhost:8888/old"]}
        update = StateManager.register_notebook(
            state, "python_executor", "runs/a.ipynb", "http://localhost:8888/a", "Analysis"
        )
        assert update == {
            "ui_captured_notebooks": ["http://localhost:8888/old", "http://localhost:8888/a"]
        }
        assert state == {"ui_captured_notebooks": ["http://localhost:8888/old"]}

    def test_a_link_is_required(self) -> None:
        with pytest.raises(TypeError):
            StateManager.register_notebook({}, "python_executor", "a.ipynb")  # type: ignore[call-arg]
        with pytest.raises(ValueError, match="notebook_link must be a non-empty string"):
            StateManager.register_notebook({}, "python_executor", "a.ipynb", "")
