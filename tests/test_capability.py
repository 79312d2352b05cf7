"""Specification of dagctx.capability: typed capability contexts and the ContextManager."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import Field

from dagctx.capability import (
    META_KEY,
    CapabilityContext,
    CapabilityError,
    CapabilityTypeError,
    ContextManager,
    ContextNamespace,
    ContextRegistry,
    RawContext,
    context_registry,
    load_context,
)
from dagctx.errors import ContextError, DagctxError

# The classes below stay out of the global registry (register=False) so that other test
# modules may define their own PV_ADDRESSES; the managers here use `registry`.
registry = ContextRegistry()


@registry.register
class PVAddresses(CapabilityContext, register=False):
    CONTEXT_TYPE: ClassVar[str] = "PV_ADDRESSES"
    CONTEXT_CATEGORY: ClassVar[str] = "METADATA"

    pvs: list[str] = Field(description="PV addresses")
    description: str = ""

    def get_access_details(self, key: str) -> dict[str, Any]:
        return {"pvs": f"context.PV_ADDRESSES.{key}.pvs", "count": len(self.pvs)}

    def get_summary(self) -> dict[str, Any]:
        return {"type": "PV Addresses", "count": len(self.pvs), "pvs": self.pvs[:3]}


@registry.register
class AnalysisResults(CapabilityContext, register=False):
    CONTEXT_TYPE: ClassVar[str] = "ANALYSIS_RESULTS"
    CONTEXT_CATEGORY: ClassVar[str] = "COMPUTATIONAL_DATA"

    method: str
    values: list[float] = Field(default_factory=list)
    computed_at: datetime | None = None
    tags: set[str] = Field(default_factory=set)

    def get_access_details(self, key: str) -> dict[str, Any]:
        return {"method": self.method, "values": f"context.ANALYSIS_RESULTS.{key}.values"}


@registry.register
class TimeRange(CapabilityContext, register=False):
    CONTEXT_TYPE: ClassVar[str] = "TIME_RANGE"
    CONTEXT_CATEGORY: ClassVar[str] = "METADATA"

    start: str
    end: str | None = None

    def get_access_details(self, key: str) -> dict[str, Any]:
        return {"start": self.start, "end": self.end}


@registry.register
class Payload(CapabilityContext, register=False):
    """Untyped data: pydantic keeps an Any value as given, without copying it."""

    CONTEXT_TYPE: ClassVar[str] = "PAYLOAD"
    CONTEXT_CATEGORY: ClassVar[str] = "RAW"
    payload: Any = None

    def get_access_details(self, key: str) -> dict[str, Any]:
        return {"payload": f"context.PAYLOAD.{key}.payload"}


class OtherPV(CapabilityContext, register=False):
    """Same CONTEXT_TYPE as PVAddresses, but not the registered class."""

    CONTEXT_TYPE: ClassVar[str] = "PV_ADDRESSES"
    CONTEXT_CATEGORY: ClassVar[str] = "METADATA"
    pvs: list[str]

    def get_access_details(self, key: str) -> dict[str, Any]:
        return {}


# The seed's example of the three-level dict, as another process might have stored it.
SEED_DATA = {
    "WEATHER_DATA": {
        "step_0": {
            "location": "San Francisco",
            "temperature": 18.5,
            "conditions": "Sunny",
            "timestamp": "2024-01-01T12:00:00Z",
        }
    },
    "PV_ADDRESSES": {
        "beam_current": {
            "pvs": ["SR:C01:BI:Current", "SR:C02:BI:Current"],
            "description": "Beam current monitoring PVs",
            "count": 2,
        }
    },
}


@pytest.fixture
def cm() -> ContextManager:
    return ContextManager({"capability_context_data": {}}, registry=registry)


def pv(*names: str) -> PVAddresses:
    return PVAddresses(pvs=list(names))


class TestClassContract:
    def test_a_concrete_class_without_context_type_fails_at_creation(self) -> None:
        with pytest.raises(CapabilityTypeError, match="NoType must set CONTEXT_TYPE") as info:

            class NoType(CapabilityContext, register=False):
                CONTEXT_CATEGORY: ClassVar[str] = "METADATA"

                def get_access_details(self, key: str) -> dict[str, Any]:
                    return {}

        assert isinstance(info.value, DagctxError)
        assert isinstance(info.value, TypeError)

    def test_a_concrete_class_without_context_category_fails_at_creation(self) -> None:
        with pytest.raises(CapabilityTypeError, match="NoCategory must set CONTEXT_CATEGORY"):

            class NoCategory(CapabilityContext, register=False):
                CONTEXT_TYPE: ClassVar[str] = "NO_CATEGORY"

                def get_access_details(self, key: str) -> dict[str, Any]:
                    return {}

    def test_an_empty_context_type_is_refused(self) -> None:
        with pytest.raises(CapabilityTypeError, match="non-empty string"):

            class Blank(CapabilityContext, register=False):
                CONTEXT_TYPE: ClassVar[str] = "  "
                CONTEXT_CATEGORY: ClassVar[str] = "METADATA"

                def get_access_details(self, key: str) -> dict[str, Any]:
                    return {}

    def test_a_constant_declared_as_a_field_gets_a_classvar_hint(self) -> None:
        with pytest.raises(CapabilityTypeError, match="ClassVar"):

            class AsField(CapabilityContext, register=False):
                CONTEXT_TYPE: str = "AS_FIELD"  # type: ignore[misc]
                CONTEXT_CATEGORY: ClassVar[str] = "METADATA"

                def get_access_details(self, key: str) -> dict[str, Any]:
                    return {}

    def test_an_abstract_intermediate_base_needs_no_constants(self) -> None:
        class Measurement(CapabilityContext, register=False):
            unit: str = "A"

        class Current(Measurement, register=False):
            CONTEXT_TYPE: ClassVar[str] = "CURRENT"
            CONTEXT_CATEGORY: ClassVar[str] = "LIVE_DATA"

            def get_access_details(self, key: str) -> dict[str, Any]:
                return {"unit": self.unit}

        assert Current().context_type == "CURRENT"
        with pytest.raises(TypeError, match="abstract"):
            Measurement()  # type: ignore[abstract]

    def test_pydantic_class_options_still_work(self) -> None:
        class Frozen(CapabilityContext, register=False, frozen=True):  # type: ignore[misc]
            CONTEXT_TYPE: ClassVar[str] = "FROZEN"
            CONTEXT_CATEGORY: ClassVar[str] = "METADATA"
            value: int

            def get_access_details(self, key: str) -> dict[str, Any]:
                return {}

        with pytest.raises(ValueError, match="frozen"):
            Frozen(value=1).value = 2  # type: ignore[misc]

    def test_context_type_property_and_validation(self) -> None:
        assert pv("A").context_type == "PV_ADDRESSES"
        with pytest.raises(ValueError):
            PVAddresses(pvs="not a list")  # type: ignore[arg-type]


class TestDefaultSummary:
    def test_summary_is_small_and_json_whatever_the_data_size(self) -> None:
        results = AnalysisResults(
            method="x" * 10_000,
            values=[float(i) for i in range(100_000)],
            computed_at=datetime(2024, 1, 15, 12, 0),
            tags={"beam"},
        )
        summary = results.get_summary()
        text = json.dumps(summary)
        assert len(text) < 1000
        assert summary["type"] == "ANALYSIS_RESULTS"
        fields = summary["fields"]
        assert fields["method"].startswith("x" * 80)
        assert "(+9920 chars)" in fields["method"]
        assert fields["values"] == [0.0, 1.0, 2.0, "… 99997 more items"]
        assert fields["computed_at"] == "2024-01-15T12:00:00"

    def test_nested_data_is_cut_by_depth_and_breadth(self) -> None:
        raw = RawContext("NESTED", {"tree": {f"k{i}": {"deep": [1, 2]} for i in range(8)}})
        tree = raw.get_summary()["fields"]["tree"]
        assert tree["k0"] == {"deep": "<list of 2 items>"}
        assert tree["…"] == "3 more keys"
        json.dumps(tree)


class TestRegistry:
    def test_a_concrete_class_registers_itself_by_type(self) -> None:
        class AutoRegistered(CapabilityContext):
            CONTEXT_TYPE: ClassVar[str] = "DAGCTX_TEST_AUTO"
            CONTEXT_CATEGORY: ClassVar[str] = "METADATA"
            value: int

            def get_access_details(self, key: str) -> dict[str, Any]:
                return {"value": self.value}

        try:
            assert context_registry.get("DAGCTX_TEST_AUTO") is AutoRegistered
            manager = ContextManager()
            manager.set_context("DAGCTX_TEST_AUTO", "k", AutoRegistered(value=3))
            assert manager.get_context("DAGCTX_TEST_AUTO", "k") == AutoRegistered(value=3)
        finally:
            context_registry.unregister("DAGCTX_TEST_AUTO")

    def test_register_false_keeps_a_class_out(self) -> None:
        assert "TIME_RANGE" not in context_registry
        assert registry.get("TIME_RANGE") is TimeRange

    def test_another_class_claiming_a_taken_type_fails_at_creation(self) -> None:
        class First(CapabilityContext):
            CONTEXT_TYPE: ClassVar[str] = "DAGCTX_TEST_TAKEN"
            CONTEXT_CATEGORY: ClassVar[str] = "METADATA"

            def get_access_details(self, key: str) -> dict[str, Any]:
                return {}

        try:
            with pytest.raises(CapabilityTypeError, match="First already holds") as info:

                class Second(CapabilityContext):
                    CONTEXT_TYPE: ClassVar[str] = "DAGCTX_TEST_TAKEN"
                    CONTEXT_CATEGORY: ClassVar[str] = "METADATA"

                    def get_access_details(self, key: str) -> dict[str, Any]:
                        return {}

            assert "Second" in str(info.value)
            assert context_registry.get("DAGCTX_TEST_TAKEN") is First
        finally:
            context_registry.unregister("DAGCTX_TEST_TAKEN")

    def test_a_redefinition_of_the_same_class_replaces_it(self) -> None:
        def define() -> type[CapabilityContext]:
            class Redefined(CapabilityContext):
                CONTEXT_TYPE: ClassVar[str] = "DAGCTX_TEST_REDEFINED"
                CONTEXT_CATEGORY: ClassVar[str] = "METADATA"

                def get_access_details(self, key: str) -> dict[str, Any]:
                    return {}

            return Redefined

        try:
            define()
            second = define()
            assert context_registry.get("DAGCTX_TEST_REDEFINED") is second
        finally:
            context_registry.unregister("DAGCTX_TEST_REDEFINED")

    def test_register_refuses_what_is_not_a_concrete_context_class(self) -> None:
        own = ContextRegistry()
        with pytest.raises(CapabilityTypeError, match="not a CapabilityContext"):
            own.register(dict)  # type: ignore[type-var]
        with pytest.raises(CapabilityTypeError, match="abstract"):
            own.register(CapabilityContext)  # type: ignore[type-abstract]
        own.register(PVAddresses)
        with pytest.raises(CapabilityTypeError):
            own.register(OtherPV)
        own.register(OtherPV, replace=True)
        assert own.get("PV_ADDRESSES") is OtherPV
        assert list(own) == ["PV_ADDRESSES"] and len(own) == 1

    def test_unregistering_an_unknown_type_names_it(self) -> None:
        with pytest.raises(CapabilityError, match="'NOPE'"):
            ContextRegistry().unregister("NOPE")


class TestStoreAndGet:
    def test_a_stored_context_comes_back_as_an_equal_fresh_object(self, cm: ContextManager) -> None:
        original = pv("SR:C01:BI:Current")
        cm.set_context("PV_ADDRESSES", "step_1", original)
        again = cm.get_context("PV_ADDRESSES", "step_1")
        assert isinstance(again, PVAddresses)
        assert again == original and again is not original

    def test_data_is_stored_as_json_and_rebuilt_with_types(self, cm: ContextManager) -> None:
        stamp = datetime(2024, 1, 15, 8, 30)
        results = AnalysisResults(method="fft", values=[1.5], computed_at=stamp, tags={"a"})
        cm.set_context("ANALYSIS_RESULTS", "beam_analysis_20240115", results)
        raw = cm.get_raw_data()["ANALYSIS_RESULTS"]["beam_analysis_20240115"]
        assert raw == {
            "method": "fft",
            "values": [1.5],
            "computed_at": "2024-01-15T08:30:00",
            "tags": ["a"],
        }
        rebuilt = cm.get_context("ANALYSIS_RESULTS", "beam_analysis_20240115")
        assert rebuilt == results
        assert isinstance(rebuilt, AnalysisResults) and rebuilt.computed_at == stamp

    def test_data_from_a_state_is_rebuilt_as_the_registered_class(self) -> None:
        cm = ContextManager({"capability_context_data": SEED_DATA}, registry=registry)
        beam = cm.get_context("PV_ADDRESSES", "beam_current")
        assert isinstance(beam, PVAddresses)
        assert beam.pvs == ["SR:C01:BI:Current", "SR:C02:BI:Current"]

    def test_setting_the_same_key_replaces_the_entry(self, cm: ContextManager) -> None:
        cm.set_context("PV_ADDRESSES", "k", pv("A"))
        cm.set_context("PV_ADDRESSES", "k", pv("B"))
        assert cm.get_all_of_type("PV_ADDRESSES") == {"k": pv("B")}

    def test_a_value_of_another_class_is_refused_and_nothing_changes(
        self, cm: ContextManager
    ) -> None:
        cm.set_context("PV_ADDRESSES", "k", pv("A"))
        before = cm.get_raw_data()
        with pytest.raises(CapabilityTypeError, match=r"registered to .*PVAddresses") as info:
            cm.set_context("PV_ADDRESSES", "k", OtherPV(pvs=["B"]))
        assert "OtherPV" in str(info.value)
        with pytest.raises(CapabilityTypeError, match="cannot be stored under 'TIME_RANGE'"):
            cm.set_context("TIME_RANGE", "k", pv("B"))
        with pytest.raises(CapabilityTypeError, match="must be a CapabilityContext, got dict"):
            cm.set_context("PV_ADDRESSES", "k", {"pvs": ["B"]})  # type: ignore[arg-type]
        with pytest.raises(CapabilityError, match="context key"):
            cm.set_context("PV_ADDRESSES", "", pv("B"))
        assert cm.get_raw_data() == before

    def test_the_state_is_never_mutated(self) -> None:
        state = {"capability_context_data": json.loads(json.dumps(SEED_DATA))}
        cm = ContextManager(state, registry=registry)
        cm.set_context("PV_ADDRESSES", "beam_current", pv("X"))
        cm.set_context("TIME_RANGE", "t", TimeRange(start="now"))
        assert state == {"capability_context_data": SEED_DATA}

    def test_returned_objects_and_raw_data_do_not_alias_the_store(self, cm: ContextManager) -> None:
        cm.set_context("PV_ADDRESSES", "k", pv("A"))
        got = cm.get_context("PV_ADDRESSES", "k")
        assert isinstance(got, PVAddresses)
        got.pvs.append("B")
        cm.get_raw_data()["PV_ADDRESSES"]["k"]["pvs"].append("C")
        assert cm.get_context("PV_ADDRESSES", "k") == pv("A")
        cm.set_context("PAYLOAD", "k", Payload(payload={"rows": [1]}))
        untyped = cm.get_context("PAYLOAD", "k")
        assert isinstance(untyped, Payload)
        untyped.payload["rows"].append(2)
        assert cm.get_context("PAYLOAD", "k") == Payload(payload={"rows": [1]})

    def test_task_objective_is_kept_beside_the_fields(self, cm: ContextManager) -> None:
        cm.set_context("PV_ADDRESSES", "k", pv("A"), task_objective="Find beam current PVs")
        assert cm.get_task_objective("PV_ADDRESSES", "k") == "Find beam current PVs"
        assert cm.get_raw_data()["PV_ADDRESSES"]["k"][META_KEY] == {
            "task_objective": "Find beam current PVs"
        }
        assert cm.get_context("PV_ADDRESSES", "k") == pv("A")
        assert cm.get_task_objective("PV_ADDRESSES", "missing") is None

    def test_missing_entries(self, cm: ContextManager) -> None:
        assert cm.get_context("PV_ADDRESSES", "nope") is None
        assert cm.get_all_of_type("NOPE") == {}
        assert cm.get_all() == {}

    def test_get_all_is_nested_in_storage_order(self, cm: ContextManager) -> None:
        cm.set_context("TIME_RANGE", "t", TimeRange(start="a"))
        cm.set_context("PV_ADDRESSES", "p2", pv("2"))
        cm.set_context("PV_ADDRESSES", "p1", pv("1"))
        everything = cm.get_all()
        assert list(everything) == ["TIME_RANGE", "PV_ADDRESSES"]
        assert list(everything["PV_ADDRESSES"]) == ["p2", "p1"]
        assert everything["TIME_RANGE"]["t"] == TimeRange(start="a")

    def test_stored_data_that_no_longer_validates_is_reported(self) -> None:
        data = {"PV_ADDRESSES": {"old": {"pvs": "not-a-list"}}}
        cm = ContextManager.from_data(data, registry=registry)
        with pytest.raises(CapabilityError, match=r"PV_ADDRESSES\.old .*PVAddresses.*pvs"):
            cm.get_context("PV_ADDRESSES", "old")

    @pytest.mark.parametrize(
        ("data", "message"),
        [
            (["not", "a", "dict"], "must be a mapping, got list"),
            ({"PV_ADDRESSES": ["x"]}, "entries of 'PV_ADDRESSES' must be a mapping"),
            ({"PV_ADDRESSES": {"k": "x"}}, r"entry PV_ADDRESSES\.k must be a mapping"),
            ({"": {}}, "context type must be a non-empty string"),
        ],
    )
    def test_malformed_state_data_is_refused(self, data: object, message: str) -> None:
        with pytest.raises(CapabilityError, match=message):
            ContextManager({"capability_context_data": data})

    def test_a_state_without_data_gives_an_empty_manager(self) -> None:
        assert ContextManager().get_all() == {}
        assert ContextManager({"capability_context_data": None}).get_all() == {}
        assert ContextManager({"task_current_task": "x"}).get_all() == {}

    def test_capability_errors_are_context_errors(self) -> None:
        assert issubclass(CapabilityError, ContextError)
        assert issubclass(CapabilityTypeError, ContextError)


class TestUnregisteredTypes:
    def test_raw_entries_read_by_attribute_and_item(self) -> None:
        cm = ContextManager.from_data(SEED_DATA, registry=registry)
        weather = cm.get_context("WEATHER_DATA", "step_0")
        assert isinstance(weather, RawContext)
        assert weather.location == "San Francisco"
        assert weather["temperature"] == 18.5
        assert weather.context_type == "WEATHER_DATA"
        assert dict(weather) == SEED_DATA["WEATHER_DATA"]["step_0"]

    def test_a_missing_field_names_the_fields_there_are(self) -> None:
        weather = ContextManager.from_data(SEED_DATA).WEATHER_DATA.step_0
        with pytest.raises(AttributeError, match="no field 'wind'; fields: location"):
            _ = weather.wind

    def test_raw_entries_are_read_only_copies(self) -> None:
        cm = ContextManager.from_data(SEED_DATA)
        weather = cm.WEATHER_DATA.step_0
        with pytest.raises(AttributeError):
            weather.location = "Berkeley"
        copy_of_fields = weather.to_dict()
        copy_of_fields["location"] = "Berkeley"
        assert cm.WEATHER_DATA.step_0.location == "San Francisco"

    def test_raw_entries_have_json_summaries_and_access_details(self) -> None:
        weather = ContextManager.from_data(SEED_DATA).WEATHER_DATA.step_0
        assert weather.get_summary() == {
            "type": "WEATHER_DATA",
            "fields": SEED_DATA["WEATHER_DATA"]["step_0"],
        }
        assert weather.get_access_details("step_0") == {
            "access": "context.WEATHER_DATA.step_0",
            "fields": ["location", "temperature", "conditions", "timestamp"],
        }
        json.dumps([weather.get_summary(), weather.get_access_details("step_0")])


class TestDotAccess:
    def test_type_then_key(self, cm: ContextManager) -> None:
        cm.set_context("PV_ADDRESSES", "step_1", pv("A"))
        assert isinstance(cm.PV_ADDRESSES, ContextNamespace)
        assert cm.PV_ADDRESSES.step_1 == pv("A")
        assert cm["PV_ADDRESSES"]["step_1"] == pv("A")

    def test_keys_that_are_not_identifiers_by_item(self, cm: ContextManager) -> None:
        cm.set_context("PV_ADDRESSES", "step 1", pv("A"))
        assert cm.PV_ADDRESSES["step 1"] == pv("A")
        assert "step 1" in cm.PV_ADDRESSES

    def test_missing_names_are_reported_with_what_exists(self, cm: ContextManager) -> None:
        cm.set_context("PV_ADDRESSES", "step_1", pv("A"))
        with pytest.raises(AttributeError, match=r"'NOPE'.*stored types: PV_ADDRESSES"):
            _ = cm.NOPE
        with pytest.raises(KeyError, match="NOPE"):
            _ = cm["NOPE"]
        with pytest.raises(AttributeError, match="'step_2'; stored keys: step_1"):
            _ = cm.PV_ADDRESSES.step_2
        with pytest.raises(KeyError, match="step_2"):
            _ = cm.PV_ADDRESSES["step_2"]

    def test_a_namespace_is_a_live_view(self, cm: ContextManager) -> None:
        cm.set_context("PV_ADDRESSES", "a", pv("A"))
        namespace = cm.PV_ADDRESSES
        cm.set_context("PV_ADDRESSES", "b", pv("B"))
        assert namespace.keys() == ["a", "b"] and len(namespace) == 2
        assert list(namespace) == ["a", "b"]
        assert namespace.b == pv("B")

    def test_listing_keys_does_not_rebuild_entries(self) -> None:
        cm = ContextManager.from_data({"PV_ADDRESSES": {"bad": {"pvs": 3}}}, registry=registry)
        assert cm.PV_ADDRESSES.keys() == ["bad"] and "bad" in cm.PV_ADDRESSES
        with pytest.raises(CapabilityError, match=r"PV_ADDRESSES\.bad"):
            _ = cm.PV_ADDRESSES.bad

    def test_membership_and_completion(self, cm: ContextManager) -> None:
        cm.set_context("PV_ADDRESSES", "step_1", pv("A"))
        assert "PV_ADDRESSES" in cm and "NOPE" not in cm
        assert "PV_ADDRESSES" in dir(cm) and "set_context" in dir(cm)
        assert dir(cm.PV_ADDRESSES) == ["step_1"]
        assert "PV_ADDRESSES: 1" in repr(cm)


class TestExtractFromStep:
    @pytest.fixture
    def filled(self, cm: ContextManager) -> ContextManager:
        cm.set_context("PV_ADDRESSES", "set1", pv("PV1"))
        cm.set_context("PV_ADDRESSES", "set2", pv("PV2"))
        cm.set_context("TIME_RANGE", "time", TimeRange(start="2025-01-01"))
        return cm

    def test_one_context_of_a_type_comes_back_as_the_object(self, filled: ContextManager) -> None:
        contexts = filled.extract_from_step({"inputs": [{"TIME_RANGE": "time"}]})
        assert contexts == {"TIME_RANGE": TimeRange(start="2025-01-01")}

    def test_several_of_a_type_come_back_as_a_list_in_input_order(
        self, filled: ContextManager
    ) -> None:
        step = {
            "inputs": [{"PV_ADDRESSES": "set2"}, {"TIME_RANGE": "time"}, {"PV_ADDRESSES": "set1"}]
        }
        contexts = filled.extract_from_step(step)
        assert contexts["PV_ADDRESSES"] == [pv("PV2"), pv("PV1")]
        assert contexts["TIME_RANGE"] == TimeRange(start="2025-01-01")

    def test_a_repeated_input_names_one_context(self, filled: ContextManager) -> None:
        step = {"inputs": [{"TIME_RANGE": "time"}, {"TIME_RANGE": "time"}]}
        assert filled.extract_from_step(step) == {"TIME_RANGE": TimeRange(start="2025-01-01")}

    def test_no_inputs_give_an_empty_dict(self, filled: ContextManager) -> None:
        assert filled.extract_from_step({"inputs": []}) == {}
        assert filled.extract_from_step({}) == {}

    def test_a_missing_context_is_an_error_naming_it(self, filled: ContextManager) -> None:
        with pytest.raises(CapabilityError, match=r"PV_ADDRESSES\.set9 not found.*set1, set2"):
            filled.extract_from_step({"inputs": [{"PV_ADDRESSES": "set9"}]})

    def test_hard_constraints_need_every_type(self, filled: ContextManager) -> None:
        step = {"inputs": [{"PV_ADDRESSES": "set1"}]}
        with pytest.raises(CapabilityError, match=r"lacks required context type.*TIME_RANGE"):
            filled.extract_from_step(step, constraints=["PV_ADDRESSES", "TIME_RANGE"])
        both = {"inputs": [{"PV_ADDRESSES": "set1"}, {"TIME_RANGE": "time"}]}
        assert set(filled.extract_from_step(both, constraints=["PV_ADDRESSES", "TIME_RANGE"])) == {
            "PV_ADDRESSES",
            "TIME_RANGE",
        }

    def test_soft_constraints_need_one_type(self, filled: ContextManager) -> None:
        step = {"inputs": [{"TIME_RANGE": "time"}]}
        contexts = filled.extract_from_step(
            step, constraints=["ANALYSIS_RESULTS", "TIME_RANGE"], constraint_mode="soft"
        )
        assert list(contexts) == ["TIME_RANGE"]
        with pytest.raises(CapabilityError, match="none of the context types ANALYSIS_RESULTS"):
            filled.extract_from_step(step, constraints=["ANALYSIS_RESULTS"], constraint_mode="soft")

    def test_cardinality_constraints(self, filled: ContextManager) -> None:
        one = {"inputs": [{"PV_ADDRESSES": "set1"}]}
        two = {"inputs": [{"PV_ADDRESSES": "set1"}, {"PV_ADDRESSES": "set2"}]}
        assert filled.extract_from_step(one, constraints=[("PV_ADDRESSES", "single")])
        assert filled.extract_from_step(two, constraints=[("PV_ADDRESSES", "multiple")])
        with pytest.raises(CapabilityError, match=r"expected single instance .* but got 2"):
            filled.extract_from_step(two, constraints=[("PV_ADDRESSES", "single")])
        with pytest.raises(CapabilityError, match=r"expected multiple instances .* but got single"):
            filled.extract_from_step(one, constraints=[("PV_ADDRESSES", "multiple")])
        with pytest.raises(CapabilityError, match="expected single instance"):
            filled.extract_from_step(
                two,
                constraints=[("TIME_RANGE", "single"), ("PV_ADDRESSES", "single")],
                constraint_mode="soft",
            )

    @pytest.mark.parametrize(
        ("constraints", "mode", "message"),
        [
            ([("PV_ADDRESSES", "many")], "hard", "invalid cardinality 'many'.*'single' or"),
            ("PV_ADDRESSES", "hard", "constraints must be a list"),
            ([42], "hard", "constraint 42 must be"),
            (None, "strict", "constraint_mode must be 'hard' or 'soft', got 'strict'"),
        ],
    )
    def test_bad_constraints_are_refused(
        self, filled: ContextManager, constraints: Any, mode: Any, message: str
    ) -> None:
        with pytest.raises(CapabilityError, match=message):
            filled.extract_from_step(
                {"inputs": [{"TIME_RANGE": "time"}]}, constraints=constraints, constraint_mode=mode
            )

    @pytest.mark.parametrize(
        ("step", "message"),
        [
            (["TIME_RANGE"], "step must be a mapping"),
            ({"inputs": "TIME_RANGE"}, r"step\['inputs'\] must be a list"),
            ({"inputs": ["TIME_RANGE"]}, "step input 'TIME_RANGE' must be a mapping"),
            ({"inputs": [{"TIME_RANGE": 3}]}, "context key for TIME_RANGE"),
        ],
    )
    def test_malformed_steps_are_refused(
        self, filled: ContextManager, step: Any, message: str
    ) -> None:
        with pytest.raises(CapabilityError, match=message):
            filled.extract_from_step(step)


class TestSummaries:
    def test_every_entry_in_storage_order(self, cm: ContextManager) -> None:
        cm.set_context("PV_ADDRESSES", "a", pv("PV1", "PV2"))
        cm.set_context("TIME_RANGE", "t", TimeRange(start="2025-01-01"))
        summaries = cm.get_summaries()
        assert summaries[0] == {"type": "PV Addresses", "count": 2, "pvs": ["PV1", "PV2"]}
        assert summaries[1] == {
            "type": "TIME_RANGE",
            "fields": {"start": "2025-01-01", "end": None},
        }

    def test_the_entries_a_step_names_in_input_order(self, cm: ContextManager) -> None:
        cm.set_context("PV_ADDRESSES", "a", pv("A"))
        cm.set_context("PV_ADDRESSES", "b", pv("B"))
        cm.set_context("TIME_RANGE", "t", TimeRange(start="x"))
        step = {"inputs": [{"PV_ADDRESSES": "b"}, {"PV_ADDRESSES": "a"}]}
        assert [s["pvs"] for s in cm.get_summaries(step=step)] == [["B"], ["A"]]
        assert cm.get_summaries(step={"inputs": []}) == []
        with pytest.raises(CapabilityError, match="not found"):
            cm.get_summaries(step={"inputs": [{"PV_ADDRESSES": "zzz"}]})


class TestAccessDescription:
    def test_describes_path_category_objective_and_details(self, cm: ContextManager) -> None:
        cm.set_context("PV_ADDRESSES", "step_1", pv("A", "B"), task_objective="Find PVs")
        text = cm.get_context_access_description()
        assert text.splitlines() == [
            "context.PV_ADDRESSES.step_1 [METADATA] (task: Find PVs)",
            '  {"pvs": "context.PV_ADDRESSES.step_1.pvs", "count": 2}',
        ]

    def test_filter_by_type_or_entry(self, cm: ContextManager) -> None:
        cm.set_context("PV_ADDRESSES", "a", pv("A"))
        cm.set_context("PV_ADDRESSES", "b", pv("B"))
        cm.set_context("TIME_RANGE", "t", TimeRange(start="x"))
        only_pvs = cm.get_context_access_description(["PV_ADDRESSES"])
        assert "PV_ADDRESSES.a" in only_pvs and "PV_ADDRESSES.b" in only_pvs
        assert "TIME_RANGE" not in only_pvs
        one = cm.get_context_access_description([{"TIME_RANGE": "t"}])
        assert one.startswith("context.TIME_RANGE.t [METADATA]") and "PV_ADDRESSES" not in one
        with pytest.raises(CapabilityError, match="'NOPE'"):
            cm.get_context_access_description(["NOPE"])
        with pytest.raises(CapabilityError, match=r"TIME_RANGE\.zzz not found"):
            cm.get_context_access_description([{"TIME_RANGE": "zzz"}])

    def test_unusual_names_get_item_syntax_and_raw_entries_are_described(self) -> None:
        cm = ContextManager.from_data({"WEATHER DATA": {"step 0": {"t": 1}}})
        text = cm.get_context_access_description()
        assert text.startswith("context['WEATHER DATA']['step 0']\n")
        assert '"fields": ["t"]' in text

    def test_nothing_stored(self, cm: ContextManager) -> None:
        assert cm.get_context_access_description() == "No capability contexts are stored."


class TestFiles:
    def test_save_then_load_round_trips(self, cm: ContextManager, tmp_path: Path) -> None:
        cm.set_context("PV_ADDRESSES", "step_1", pv("A"), task_objective="Find PVs")
        cm.set_context("TIME_RANGE", "t", TimeRange(start="x"))
        path = cm.save_context_to_file(tmp_path / "run" / "1")
        assert path == tmp_path / "run" / "1" / "context.json"
        assert json.loads(path.read_text(encoding="utf-8")) == cm.get_raw_data()
        loaded = load_context(path, registry=registry)
        assert loaded.PV_ADDRESSES.step_1 == pv("A")
        assert loaded.get_task_objective("PV_ADDRESSES", "step_1") == "Find PVs"
        assert load_context(path.parent, registry=registry).get_raw_data() == cm.get_raw_data()

    def test_another_process_reads_the_file_without_the_classes(
        self, cm: ContextManager, tmp_path: Path
    ) -> None:
        cm.set_context("PV_ADDRESSES", "step_1", pv("SR:C01:BI:Current"))
        path = cm.save_context_to_file(tmp_path, "ctx.json")
        script = (
            "import json, sys\n"
            "from dagctx.capability import load_context\n"
            "context = load_context(sys.argv[1])\n"
            "print(json.dumps(context.PV_ADDRESSES.step_1.pvs))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script, str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert json.loads(done.stdout) == ["SR:C01:BI:Current"]

    def test_saving_replaces_the_file_and_leaves_no_temporaries(
        self, cm: ContextManager, tmp_path: Path
    ) -> None:
        cm.set_context("PV_ADDRESSES", "a", pv("A"))
        cm.save_context_to_file(tmp_path)
        cm.set_context("PV_ADDRESSES", "a", pv("B"))
        cm.save_context_to_file(tmp_path)
        assert [p.name for p in tmp_path.iterdir()] == ["context.json"]
        assert load_context(tmp_path, registry=registry).PV_ADDRESSES.a == pv("B")

    @pytest.mark.parametrize("filename", ["", "sub/context.json", "..", "../x.json"])
    def test_a_filename_must_be_a_plain_name(
        self, cm: ContextManager, tmp_path: Path, filename: str
    ) -> None:
        with pytest.raises(CapabilityError, match="plain file name"):
            cm.save_context_to_file(tmp_path, filename)

    def test_data_that_is_not_json_is_refused_and_no_file_is_written(self, tmp_path: Path) -> None:
        cm = ContextManager.from_data({"RAW": {"ok": {"x": 1}, "bad": {"x": object()}}})
        with pytest.raises(CapabilityError, match=r"RAW\.bad is not JSON-serialisable"):
            cm.save_context_to_file(tmp_path)
        assert list(tmp_path.iterdir()) == []

    def test_loading_a_missing_or_broken_file_names_it(self, tmp_path: Path) -> None:
        with pytest.raises(CapabilityError, match=r"cannot read context file .*missing.json"):
            load_context(tmp_path / "missing.json")
        broken = tmp_path / "broken.json"
        broken.write_text('{"PV": {', encoding="utf-8")
        with pytest.raises(CapabilityError, match=r"broken.json.*not valid JSON.*line 1"):
            load_context(broken)
        wrong = tmp_path / "wrong.json"
        wrong.write_text('{"PV": [1]}', encoding="utf-8")
        with pytest.raises(CapabilityError, match="entries of 'PV' must be a mapping"):
            load_context(wrong)
