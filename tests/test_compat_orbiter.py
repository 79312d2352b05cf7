"""Code written against orbiter's ``orbiter.context`` keeps working.

Each test follows orbiter's documented behaviour (``packages/orbiter-context`` of
``hazel-core/orbiter-ai``: docstrings and its own tests); the deliberate differences are
listed in the README's "Coming from orbiter / osprey".
"""

from __future__ import annotations

from collections.abc import KeysView

from dagctx.context import ContextState, make_config


class TestContextStateKeys:
    """Item 11: ``keys()`` is a keys view: set semantics, deterministic order."""

    def test_keys_compare_as_a_set(self) -> None:
        state = ContextState({"b": 2, "a": 1})
        assert state.keys() == {"a", "b"}
        assert isinstance(state.keys(), KeysView)

    def test_set_operations_work_across_the_parent_chain(self) -> None:
        parent = ContextState({"p": 1, "shared": 0})
        child = ContextState({"c": 1, "shared": 1}, parent=parent)
        assert child.keys() & {"p", "zzz"} == {"p"}
        assert child.keys() - parent.keys() == {"c"}
        assert child.keys() | {"x"} == {"c", "shared", "p", "x"}

    def test_the_view_is_live_and_iterates_in_spec_order(self) -> None:
        parent = ContextState({"p": 1})
        child = ContextState({"z": 1, "a": 2}, parent=parent)
        keys = child.keys()
        child["m"] = 3
        assert list(keys) == ["z", "a", "m", "p"]
        assert len(keys) == 4 and "p" in keys


class TestMakeConfigPresets:
    """Item 12: orbiter's presets, and ``make_config()`` defaulting to copilot."""

    def test_pilot_offloads_at_100(self) -> None:
        pilot = make_config("pilot")
        assert (pilot.history_rounds, pilot.summary_threshold, pilot.offload_threshold) == (
            100,
            100,
            100,
        )
        assert pilot.enable_retrieval is False

    def test_copilot_and_navigator(self) -> None:
        copilot, navigator = make_config("copilot"), make_config("navigator")
        assert (copilot.history_rounds, copilot.summary_threshold, copilot.offload_threshold) == (
            20,
            10,
            50,
        )
        assert (navigator.summary_threshold, navigator.offload_threshold) == (5, 20)
        assert navigator.enable_retrieval is True

    def test_the_default_mode_is_copilot(self) -> None:
        assert make_config() == make_config("copilot")
        assert make_config(history_rounds=3).history_rounds == 3
