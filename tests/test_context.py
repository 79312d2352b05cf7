"""Task contexts: configuration, presets, hierarchical state, fork/merge, tokens, snapshots."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import dagctx.context
from dagctx.checkpoint import (
    Checkpoint,
    CheckpointError,
    CheckpointStore,
    SQLiteCheckpointStore,
)
from dagctx.context import (
    AutomationMode,
    Context,
    ContextConfig,
    ContextError,
    ContextKeyError,
    ContextState,
    make_config,
)
from dagctx.errors import DagctxError


class TestContextConfig:
    def test_defaults(self) -> None:
        config = ContextConfig()
        assert config.mode is AutomationMode.COPILOT
        assert (config.history_rounds, config.summary_threshold, config.offload_threshold) == (
            20,
            10,
            50,
        )
        assert config.enable_retrieval is False
        assert config.token_budget is None
        assert config.extra == {}

    def test_is_immutable(self) -> None:
        config = ContextConfig()
        with pytest.raises(ValidationError):
            config.history_rounds = 5  # type: ignore[misc]
        assert config.history_rounds == 20

    @pytest.mark.parametrize(
        "mode", ["navigator", "NAVIGATOR", "Navigator", AutomationMode.NAVIGATOR]
    )
    def test_mode_names_coerce_in_any_case(self, mode: Any) -> None:
        assert ContextConfig(mode=mode).mode is AutomationMode.NAVIGATOR

    @pytest.mark.parametrize(
        "changes",
        [
            {"mode": "autopilot"},
            {"mode": 3},
            {"history_rounds": 0},
            {"history_rounds": -1},
            {"history_rounds": True},
            {"history_rounds": "20"},
            {"history_rounds": 20.0},
            {"summary_threshold": 0},
            {"offload_threshold": 0},
            {"token_budget": 0},
            {"token_budget": True},
            {"enable_retrieval": "yes"},
            {"extra": ["not", "a", "dict"]},
            {"unknown_setting": 1},
        ],
    )
    def test_out_of_range_or_mistyped_values_are_rejected(self, changes: dict[str, Any]) -> None:
        with pytest.raises(ValidationError):
            ContextConfig(**changes)

    def test_summary_threshold_may_not_exceed_offload_threshold(self) -> None:
        with pytest.raises(
            ValidationError, match=r"summary_threshold \(51\).*offload_threshold \(50\)"
        ):
            ContextConfig(summary_threshold=51)
        same = ContextConfig(summary_threshold=50, offload_threshold=50)
        assert same.summary_threshold == same.offload_threshold == 50

    def test_extra_is_copied_from_the_callers_dict(self) -> None:
        mine = {"team": "search"}
        config = ContextConfig(extra=mine, token_budget=8000)
        mine["team"] = "changed"
        assert config.extra == {"team": "search"}
        assert config.token_budget == 8000

    def test_equal_settings_make_equal_configs(self) -> None:
        assert ContextConfig(mode="pilot") == ContextConfig(mode=AutomationMode.PILOT)


def documented_presets() -> dict[str, dict[str, Any]]:
    """Parse the preset table out of the module docstring."""
    doc = dagctx.context.__doc__ or ""
    rows = re.findall(r"^``(\w+)``\s+(\d+)\s+(\d+)\s+(\d+)\s+(True|False)\s*$", doc, re.M)
    return {
        mode: {
            "history_rounds": int(history),
            "summary_threshold": int(summary),
            "offload_threshold": int(offload),
            "enable_retrieval": retrieval == "True",
        }
        for mode, history, summary, offload, retrieval in rows
    }


class TestMakeConfig:
    def test_the_documented_table_is_what_make_config_returns(self) -> None:
        table = documented_presets()
        assert set(table) == {"pilot", "copilot", "navigator"}
        for mode, expected in table.items():
            config = make_config(mode)
            assert config.mode == mode
            assert {name: getattr(config, name) for name in expected} == expected

    def test_copilot_is_the_default_configuration(self) -> None:
        assert make_config("copilot") == ContextConfig()

    def test_pilot_automates_least_and_navigator_most(self) -> None:
        pilot, copilot, navigator = (make_config(m) for m in AutomationMode)
        assert pilot.summary_threshold > copilot.summary_threshold > navigator.summary_threshold
        assert pilot.offload_threshold > copilot.offload_threshold > navigator.offload_threshold
        assert navigator.enable_retrieval and not pilot.enable_retrieval

    def test_overrides_win_over_the_preset(self) -> None:
        config = make_config(AutomationMode.NAVIGATOR, summary_threshold=2, token_budget=4000)
        assert (config.summary_threshold, config.offload_threshold) == (2, 20)
        assert config.token_budget == 4000
        assert config.enable_retrieval is True
        assert make_config("NAVIGATOR", enable_retrieval=False).enable_retrieval is False

    def test_an_unknown_mode_raises_context_error_listing_the_modes(self) -> None:
        with pytest.raises(ContextError, match=r"'autopilot'.*pilot, copilot, navigator"):
            make_config("autopilot")
        with pytest.raises(ContextError, match="None"):
            make_config(None)  # type: ignore[arg-type]

    @pytest.mark.parametrize("name", ["histroy_rounds", "mode"])
    def test_an_unknown_setting_raises_context_error_naming_it(self, name: str) -> None:
        with pytest.raises(ContextError, match=name):
            make_config("pilot", **{name: 3})

    @pytest.mark.parametrize(
        ("overrides", "named"),
        [
            ({"history_rounds": 0}, "history_rounds=0"),
            ({"token_budget": -5}, "token_budget=-5"),
            ({"summary_threshold": "ten"}, "summary_threshold='ten'"),
            ({"summary_threshold": 30}, r"summary_threshold \(30\).*offload_threshold \(20\)"),
        ],
    )
    def test_a_bad_value_raises_context_error_naming_it(
        self, overrides: dict[str, Any], named: str
    ) -> None:
        with pytest.raises(ContextError, match=named) as info:
            make_config("navigator", **overrides)
        assert isinstance(info.value, DagctxError)


class TestContextState:
    def chain(self) -> tuple[ContextState, ContextState]:
        parent = ContextState({"a": 1, "b": 2})
        return parent, ContextState({"b": 20, "c": 30}, parent=parent)

    def test_reads_walk_the_chain_nearest_level_winning(self) -> None:
        parent, child = self.chain()
        assert (child.get("a"), child["b"], child.get("c")) == (1, 20, 30)
        assert child.get("zzz") is None
        assert child.get("zzz", "fallback") == "fallback"
        assert "a" in child and "c" in child and "zzz" not in child
        assert 1 not in child
        assert child.parent is parent
        assert parent.parent is None

    def test_reads_see_later_changes_of_the_parent(self) -> None:
        parent, child = self.chain()
        parent["a"] = 100
        parent.set("new", "x")
        assert (child["a"], child["new"]) == (100, "x")

    def test_writes_stay_on_their_level(self) -> None:
        parent, child = self.chain()
        child.set("a", "mine")
        child["d"] = 4
        assert parent.to_dict() == {"a": 1, "b": 2}
        assert child.local_dict() == {"b": 20, "c": 30, "a": "mine", "d": 4}

    def test_a_missing_key_raises_a_key_error_that_is_a_context_error(self) -> None:
        _, child = self.chain()
        with pytest.raises(ContextKeyError, match="'zzz' is not set") as info:
            child["zzz"]
        assert isinstance(info.value, KeyError) and isinstance(info.value, ContextError)

    def test_delete_removes_only_the_local_value_and_uncovers_the_parents(self) -> None:
        parent, child = self.chain()
        child.delete("b")
        assert child["b"] == 2
        child["b"] = 21
        del child["b"]
        assert child["b"] == 2
        assert parent["b"] == 2

    @pytest.mark.parametrize("remove", ["delete", "del", "pop"])
    def test_an_inherited_key_cannot_be_removed_from_the_child(self, remove: str) -> None:
        parent, child = self.chain()
        with pytest.raises(ContextKeyError, match="'a' is inherited"):
            if remove == "delete":
                child.delete("a")
            elif remove == "del":
                del child["a"]
            else:
                child.pop("a")
        assert child["a"] == 1 and parent.local_dict() == {"a": 1, "b": 2}

    def test_removing_an_unknown_key_raises_naming_it(self) -> None:
        _, child = self.chain()
        with pytest.raises(ContextKeyError, match="'nope' is not set"):
            child.delete("nope")

    def test_pop_returns_the_local_value_or_the_default(self) -> None:
        _, child = self.chain()
        assert child.pop("c") == 30
        assert "c" not in child
        assert child.pop("c", "gone") == "gone"
        assert child.pop("a", "local only") == "local only"
        assert child["a"] == 1
        assert child.pop("b") == 20
        assert child["b"] == 2

    def test_popitem_takes_the_latest_local_item(self) -> None:
        _, child = self.chain()
        assert child.popitem() == ("c", 30)
        assert child.popitem() == ("b", 20)
        with pytest.raises(ContextKeyError, match="no local keys"):
            child.popitem()
        assert child.to_dict() == {"a": 1, "b": 2}

    def test_clear_removes_the_local_level_only(self) -> None:
        parent, child = self.chain()
        child.clear()
        assert child.local_dict() == {}
        assert child.to_dict() == {"a": 1, "b": 2} == parent.to_dict()

    def test_update_from_mapping_keywords_and_another_states_local_data(self) -> None:
        parent, child = self.chain()
        target = ContextState()
        target.update({"x": 1}, y=2)
        target.update(child)  # child's own entries only, not what it inherits
        assert target.to_dict() == {"x": 1, "y": 2, "b": 20, "c": 30}
        target.update(b=0)
        target.update()
        assert target["b"] == 0
        assert parent.to_dict() == {"a": 1, "b": 2}

    @pytest.mark.parametrize("bad", [{1: "x"}, {"ok": 1, None: 2}])
    def test_update_with_a_bad_key_writes_nothing(self, bad: dict[Any, Any]) -> None:
        state = ContextState({"keep": True})
        with pytest.raises(ContextError, match="strings"):
            state.update(bad)
        assert state.to_dict() == {"keep": True}

    def test_update_needs_a_mapping(self) -> None:
        with pytest.raises(ContextError, match="list"):
            ContextState().update([("a", 1)])  # type: ignore[arg-type]

    def test_keys_must_be_strings(self) -> None:
        state = ContextState()
        with pytest.raises(ContextError, match="5"):
            state.set(5, "x")  # type: ignore[arg-type]
        with pytest.raises(ContextError):
            state[("a",)] = 1  # type: ignore[index]
        assert len(state) == 0

    def test_iteration_is_local_keys_in_insertion_order_then_inherited(self) -> None:
        grand = ContextState({"g1": 1, "shared": "grand", "g2": 2})
        parent = ContextState({"p": 1, "shared": "parent"}, parent=grand)
        child = ContextState({"z": 1, "a": 2}, parent=parent)
        child["shared"] = "child"
        assert list(child) == ["z", "a", "shared", "p", "g1", "g2"]
        assert list(child.keys()) == ["z", "a", "shared", "p", "g1", "g2"]
        assert list(child.to_dict().items()) == [
            ("z", 1),
            ("a", 2),
            ("shared", "child"),
            ("p", 1),
            ("g1", 1),
            ("g2", 2),
        ]
        assert len(child) == 6
        assert dict(child.items()) == child.to_dict()

    def test_equality_compares_the_flattened_view(self) -> None:
        _, child = self.chain()
        assert child == {"a": 1, "b": 20, "c": 30}
        assert child != {"b": 20, "c": 30}

    def test_repr_shows_local_data_and_what_is_inherited(self) -> None:
        parent, child = self.chain()
        assert repr(parent) == "ContextState({'a': 1, 'b': 2})"
        assert repr(child) == "ContextState({'b': 20, 'c': 30}, inherited=['a'], depth=1)"
        huge = ContextState({"text": "x" * 10_000, **{f"k{n}": n for n in range(100)}})
        assert len(repr(huge)) < 300

    def test_parent_must_be_a_context_state(self) -> None:
        with pytest.raises(ContextError, match="dict"):
            ContextState(parent={"a": 1})  # type: ignore[arg-type]


KEYS = st.sampled_from(["a", "b", "c", "d"])
LEVELS = st.integers(0, 2)
OPERATIONS = st.one_of(
    st.tuples(st.just("set"), LEVELS, KEYS, st.integers()),
    st.tuples(st.just("delete"), LEVELS, KEYS),
    st.tuples(st.just("pop"), LEVELS, KEYS),
    st.tuples(st.just("clear"), LEVELS),
    st.tuples(st.just("update"), LEVELS, st.dictionaries(KEYS, st.integers(), max_size=3)),
)


def model_view(model: list[dict[str, int]], level: int) -> dict[str, int]:
    """The flattened view of ``level`` in a chain of plain dicts (0 is the root)."""
    view: dict[str, int] = {}
    for data in reversed(model[: level + 1]):
        for key, value in data.items():
            view.setdefault(key, value)
    return view


class TestContextStateProperties:
    """A three-level chain behaves like a list of dicts read nearest-first."""

    @settings(max_examples=300)
    @given(operations=st.lists(OPERATIONS, max_size=40))
    def test_chain_matches_the_dict_model(self, operations: list[tuple[Any, ...]]) -> None:
        root = ContextState()
        states = [root, ContextState(parent=root)]
        states.append(ContextState(parent=states[1]))
        model: list[dict[str, int]] = [{}, {}, {}]
        for op, level, *args in operations:
            state, data = states[level], model[level]
            if op == "set":
                state.set(args[0], args[1])
                data[args[0]] = args[1]
            elif op == "update":
                state.update(args[0])
                data.update(args[0])
            elif op == "clear":
                state.clear()
                data.clear()
            elif args[0] in data:
                expected = data.pop(args[0])
                removed = state.pop(args[0]) if op == "pop" else state.delete(args[0])
                assert removed == (expected if op == "pop" else None)
            else:
                with pytest.raises(ContextKeyError):
                    state.pop(args[0]) if op == "pop" else state.delete(args[0])
            for index, checked in enumerate(states):
                view = model_view(model, index)
                assert checked.local_dict() == model[index]
                assert list(checked.to_dict().items()) == list(view.items())
                assert len(checked) == len(view)
                for key in "abcd":
                    assert (key in checked) == (key in view)
                    assert checked.get(key, "missing") == view.get(key, "missing")


class TestContextConstruction:
    @pytest.mark.parametrize("task_id", ["", None, 42])
    def test_task_id_must_be_a_non_empty_string(self, task_id: Any) -> None:
        with pytest.raises(ContextError, match="task_id"):
            Context(task_id)

    def test_a_root_context_gets_the_default_config_and_an_empty_state(self) -> None:
        ctx = Context("root")
        assert ctx.config == ContextConfig()
        assert ctx.parent is None and ctx.children == []
        assert ctx.state.to_dict() == {} and ctx.state.parent is None
        assert ctx.token_usage == {}
        assert isinstance(ctx.checkpoints, CheckpointStore)
        assert ctx.checkpoints.task_id == "root"

    def test_config_is_inherited_from_the_parent_unless_given(self) -> None:
        parent = Context("root", config=make_config("navigator"))
        assert Context("child", parent=parent).config is parent.config
        assert parent.fork("fork").config is parent.config
        own = make_config("pilot")
        assert Context("other", parent=parent, config=own).config is own

    def test_a_given_state_is_used_as_is(self) -> None:
        state = ContextState({"x": 1})
        assert Context("t", state=state).state is state

    def test_a_constructed_child_is_a_fork(self) -> None:
        parent = Context("root")
        parent.add_tokens({"in": 5})
        child = Context("child", parent=parent)
        assert parent.children == [child]
        assert child.state.parent is parent.state
        assert child.token_usage == {"in": 5}

    @pytest.mark.parametrize(
        ("name", "value"),
        [("config", {"mode": "pilot"}), ("parent", "root"), ("state", {"a": 1}), ("store", [])],
    )
    def test_arguments_of_the_wrong_type_raise(self, name: str, value: Any) -> None:
        parent = Context("root")
        with pytest.raises(ContextError, match=name):
            Context("t", **{name: value})
        assert parent.children == []

    def test_a_store_must_belong_to_the_task(self, tmp_path: Path) -> None:
        parent = Context("root")
        with pytest.raises(ContextError, match=r"'other'.*'child'"):
            Context("child", parent=parent, store=CheckpointStore("other"))
        assert parent.children == []  # a refused child is not registered

    def test_either_store_backend_can_be_given(self, tmp_path: Path) -> None:
        memory = CheckpointStore("t")
        assert Context("t", store=memory).checkpoints is memory
        with SQLiteCheckpointStore(tmp_path / "cp.db", "t") as durable:
            ctx = Context("t", store=durable)
            ctx.state["x"] = [1]
            assert ctx.snapshot().version == 1
            assert durable.get(1).values == {"x": [1]}

    def test_repr_summarizes_the_context(self) -> None:
        ctx = Context("main", config=make_config("pilot"))
        ctx.state["a"] = 1
        ctx.add_tokens({"in": 3})
        ctx.fork("sub")
        assert repr(ctx) == (
            "Context(task_id='main', mode=pilot, state_keys=1, children=1, token_usage={'in': 3})"
        )


class TestTokenUsage:
    def test_counts_accumulate_per_metric(self) -> None:
        ctx = Context("t")
        ctx.add_tokens({"input_tokens": 100, "output_tokens": 50})
        ctx.add_tokens({"input_tokens": 1, "cached": 0})
        assert ctx.token_usage == {"input_tokens": 101, "output_tokens": 50, "cached": 0}

    def test_token_usage_is_a_copy(self) -> None:
        ctx = Context("t")
        ctx.add_tokens({"in": 1})
        ctx.token_usage["in"] = 1000
        assert ctx.token_usage == {"in": 1}

    @pytest.mark.parametrize(
        ("usage", "named"),
        [
            ({"in": -1}, "-1"),
            ({"in": 1.5}, "1.5"),
            ({"in": True}, "True"),
            ({"in": "5"}, "'5'"),
            ({"in": None}, "None"),
            ({"": 5}, "''"),
            ({7: 5}, "7"),
            ([("in", 5)], "list"),
        ],
    )
    def test_bad_counts_raise_and_add_nothing(self, usage: Any, named: str) -> None:
        ctx = Context("t")
        ctx.add_tokens({"in": 10})
        with pytest.raises(ContextError, match=re.escape(named)):
            ctx.add_tokens({"out": 3, **usage} if isinstance(usage, dict) else usage)
        assert ctx.token_usage == {"in": 10}


class TestFork:
    def test_the_child_is_registered_and_shares_config(self) -> None:
        parent = Context("root")
        first, second = parent.fork("a"), parent.fork("b")
        assert parent.children == [first, second]
        assert first.parent is parent
        assert first.task_id == "a"
        assert first.config is parent.config

    def test_reads_inherit_and_writes_isolate(self) -> None:
        parent = Context("root")
        parent.state["input"] = "build"
        child = parent.fork("sub")
        child.state["input"] = "search"
        child.state["found"] = [1]
        assert child.state["input"] == "search"
        assert parent.state.to_dict() == {"input": "build"}

    def test_the_child_starts_with_a_copy_of_the_parents_usage(self) -> None:
        parent = Context("root")
        parent.add_tokens({"in": 100})
        child = parent.fork("sub")
        child.add_tokens({"in": 5})
        assert child.token_usage == {"in": 105}
        assert parent.token_usage == {"in": 100}

    def test_fork_with_an_empty_task_id_raises_and_registers_nothing(self) -> None:
        parent = Context("root")
        with pytest.raises(ContextError):
            parent.fork("")
        assert parent.children == []

    def test_fork_can_take_a_store(self) -> None:
        store = CheckpointStore("sub")
        assert Context("root").fork("sub", store=store).checkpoints is store


class TestMerge:
    def test_merge_copies_the_childs_local_state_into_the_parent(self) -> None:
        parent = Context("root")
        parent.state.update(input="build", shared="old")
        child = parent.fork("sub")
        child.state.update(shared="new", found=["r1"])
        parent.merge(child)
        assert parent.state.local_dict() == {"input": "build", "shared": "new", "found": ["r1"]}

    def test_merge_adds_only_the_childs_net_usage(self) -> None:
        parent = Context("root")
        parent.add_tokens({"in": 100, "out": 50})
        child = parent.fork("sub")
        parent.add_tokens({"in": 7})  # the parent's own work meanwhile counts once
        child.add_tokens({"in": 200, "out": 80, "cached": 9})
        parent.merge(child)
        assert parent.token_usage == {"in": 307, "out": 130, "cached": 9}

    def test_merged_children_leave_the_list(self) -> None:
        parent = Context("root")
        first, second = parent.fork("a"), parent.fork("b")
        parent.merge(first)
        assert parent.children == [second]
        assert first.parent is parent  # the child stays readable
        assert first.state.parent is parent.state

    def test_merging_twice_raises_and_changes_nothing(self) -> None:
        parent = Context("root")
        child = parent.fork("sub")
        child.add_tokens({"in": 10})
        parent.merge(child)
        with pytest.raises(ContextError, match="'sub' was already merged"):
            parent.merge(child)
        assert parent.token_usage == {"in": 10}

    def test_merging_a_context_that_is_not_a_child_raises(self) -> None:
        root = Context("root")
        child = root.fork("child")
        grandchild = child.fork("grandchild")
        sibling = root.fork("sibling")
        for stranger in (Context("unrelated"), root, sibling, child):
            with pytest.raises(ContextError, match="is not a child of 'child'"):
                child.merge(stranger)
        with pytest.raises(ContextError, match="'grandchild' is not a child of 'root'"):
            root.merge(grandchild)
        with pytest.raises(ContextError, match="is not a child of 'sibling'"):
            sibling.merge(child)
        with pytest.raises(ContextError, match="str"):
            root.merge("child")  # type: ignore[arg-type]
        assert root.children == [child, sibling]
        assert child.children == [grandchild]

    def test_nested_forks_fold_up_level_by_level(self) -> None:
        root = Context("root")
        root.add_tokens({"in": 1})
        child = root.fork("child")
        child.add_tokens({"in": 10})
        grandchild = child.fork("grandchild")
        grandchild.add_tokens({"in": 100})
        grandchild.state["deep"] = True
        child.merge(grandchild)
        assert child.token_usage == {"in": 111}
        root.merge(child)
        assert root.token_usage == {"in": 111}
        assert root.state["deep"] is True


class TestTokenAccountingProperties:
    @settings(max_examples=200)
    @given(
        steps=st.lists(
            st.tuples(st.sampled_from(["fork", "add", "merge"]), st.integers(0, 50)), max_size=30
        )
    )
    def test_each_added_token_reaches_the_root_once_all_its_contexts_merge(
        self, steps: list[tuple[str, int]]
    ) -> None:
        root = Context("root")
        live = [root]
        own = {id(root): 0}  # tokens added in a context or merged into it
        start = {id(root): 0}  # the context's count when it was forked
        for action, number in steps:
            ctx = live[number % len(live)]
            if action == "fork":
                child = ctx.fork(f"t{len(own)}")
                live.append(child)
                own[id(child)] = 0
                start[id(child)] = ctx.token_usage.get("in", 0)
            elif action == "add":
                ctx.add_tokens({"in": number})
                own[id(ctx)] += number
            elif ctx.parent is not None and not ctx.children:
                ctx.parent.merge(ctx)
                own[id(ctx.parent)] += own[id(ctx)]
                live.remove(ctx)
        for ctx in live:
            assert ctx.token_usage.get("in", 0) == start[id(ctx)] + own[id(ctx)]
        while len(live) > 1:  # merge everything, deepest first
            leaf = next(c for c in reversed(live) if not c.children)
            assert leaf.parent is not None
            leaf.parent.merge(leaf)
            own[id(leaf.parent)] += own[id(leaf)]
            live.remove(leaf)
        total = sum(n for action, n in steps if action == "add")
        assert root.token_usage.get("in", 0) == own[id(root)] == total


class TestSnapshot:
    def test_snapshot_saves_state_usage_and_metadata_in_the_store(self) -> None:
        ctx = Context("t")
        ctx.state["step"] = 1
        ctx.add_tokens({"in": 4})
        cp = ctx.snapshot(metadata={"why": "test"})
        assert (cp.task_id, cp.version, cp.values, cp.token_usage, cp.metadata) == (
            "t",
            1,
            {"step": 1},
            {"in": 4},
            {"why": "test"},
        )
        assert ctx.checkpoints.latest == cp
        assert ctx.snapshot().version == 2

    def test_the_checkpoint_is_a_deep_copy(self) -> None:
        ctx = Context("t")
        ctx.state["results"] = ["r1", {"nested": [1]}]
        cp = ctx.snapshot()
        ctx.state["results"].append("r2")
        ctx.state["results"][1]["nested"].append(2)
        ctx.add_tokens({"in": 1})
        assert cp.values == {"results": ["r1", {"nested": [1]}]}
        assert ctx.checkpoints.get(1).values == {"results": ["r1", {"nested": [1]}]}
        assert cp.token_usage == {}

    def test_a_childs_snapshot_holds_the_flattened_state(self) -> None:
        parent = Context("root")
        parent.state.update(a=1, b=2)
        child = parent.fork("sub")
        child.state["b"] = 20
        assert child.snapshot().values == {"b": 20, "a": 1}
        assert len(parent.checkpoints) == 0

    def test_a_value_the_durable_store_cannot_hold_raises_and_saves_nothing(
        self, tmp_path: Path
    ) -> None:
        with SQLiteCheckpointStore(tmp_path / "cp.db", "t") as store:
            ctx = Context("t", store=store)
            ctx.state["pair"] = (1, 2)
            with pytest.raises(CheckpointError, match="'pair'"):
                ctx.snapshot()
            assert len(store) == 0
            assert ctx.state["pair"] == (1, 2)


class TestRestore:
    def test_restore_rebuilds_a_root_context(self) -> None:
        parent = Context("root")
        parent.state["a"] = 1
        child = parent.fork("sub")
        child.state["b"] = [2]
        child.add_tokens({"in": 3})
        cp = child.snapshot()
        restored = Context.restore(cp)
        assert restored.task_id == "sub"
        assert restored.parent is None and restored.state.parent is None
        assert restored.state.local_dict() == {"b": [2], "a": 1}
        assert restored.token_usage == {"in": 3}
        assert restored.config == ContextConfig()

    def test_restore_takes_a_config_and_a_store(self) -> None:
        ctx = Context("t")
        ctx.snapshot()
        cp = ctx.snapshot()
        config = make_config("navigator")
        restored = Context.restore(cp, config=config, store=ctx.checkpoints)
        assert restored.config is config
        assert restored.snapshot().version == 3  # continues the original store's versions

    def test_the_restored_state_is_independent_of_the_checkpoint(self) -> None:
        ctx = Context("t")
        ctx.state["items"] = [1]
        cp = ctx.snapshot()
        restored = Context.restore(cp)
        restored.state["items"].append(2)
        restored.add_tokens({"in": 1})
        assert cp.values == {"items": [1]} and cp.token_usage == {}

    def test_restore_of_something_else_raises_checkpoint_error(self) -> None:
        cp = Context("t").snapshot()
        with pytest.raises(CheckpointError, match=r"dict.*from_dict"):
            Context.restore(cp.to_dict())  # type: ignore[arg-type]
        assert Context.restore(Checkpoint.from_dict(cp.to_dict())).task_id == "t"

    def test_a_durable_context_survives_a_new_process_view(self, tmp_path: Path) -> None:
        path = tmp_path / "session.db"
        with SQLiteCheckpointStore(path, "main") as store:
            ctx = Context("main", store=store)
            ctx.state.update(goal="ship", files=["a.py"])
            ctx.add_tokens({"prompt_tokens": 1234})
            ctx.snapshot(metadata={"turn": 7})
        with SQLiteCheckpointStore(path, "main") as store:
            latest = store.latest
            assert latest is not None
            resumed = Context.restore(latest, store=store)
            assert resumed.state.to_dict() == {"goal": "ship", "files": ["a.py"]}
            assert resumed.token_usage == {"prompt_tokens": 1234}
            assert resumed.snapshot().version == 2
