"""Every example of the two source documents on task contexts and checkpoints
(seeds/000_*.txt and seeds/002_*.txt), adapted only in their import lines
(``orbiter.context...`` → ``dagctx.context`` / ``dagctx.checkpoint``)."""

from __future__ import annotations

import ast

import pytest


class TestContextDocument:
    """seeds/000: ``orbiter.context.context``."""

    def test_the_fork_merge_snapshot_example_prints_what_the_seed_says(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        import asyncio

        from dagctx.context import AutomationMode, Context, ContextConfig

        async def main():  # type: ignore[no-untyped-def]
            # Create root context
            ctx = Context("main-task", config=ContextConfig(mode=AutomationMode.COPILOT))

            # Set state
            ctx.state.set("task_input", "Build a web server")
            ctx.add_tokens({"input_tokens": 100, "output_tokens": 50})

            # Fork for sub-task
            child = ctx.fork("subtask-search")
            child.state.set("search_results", ["result1", "result2"])
            child.add_tokens({"input_tokens": 200, "output_tokens": 80})

            # Merge child back
            ctx.merge(child)
            print(ctx.state.get("search_results"))  # ["result1", "result2"]
            print(ctx.token_usage)  # includes net child usage

            # Checkpoint and restore
            cp = ctx.snapshot(metadata={"step": "after search"})
            restored = Context.restore(cp)
            print(restored.state.get("search_results"))  # ["result1", "result2"]

        asyncio.run(main())

        lines = capsys.readouterr().out.splitlines()
        assert lines == [
            "['result1', 'result2']",
            "{'input_tokens': 300, 'output_tokens': 130}",
            "['result1', 'result2']",
        ]
        assert ast.literal_eval(lines[0]) == ["result1", "result2"]
        # "includes net child usage": the parent's 100/50 plus the child's 200/80.
        assert ast.literal_eval(lines[1]) == {"input_tokens": 100 + 200, "output_tokens": 50 + 80}

    def test_the_lifecycle_diagram(self) -> None:
        from dagctx.context import Context

        root = Context("main")
        root.state.set("shared", "from root")
        root.add_tokens({"input_tokens": 10})
        child = root.fork("sub-1")
        # state: inherits from parent (reads go up the chain)
        assert child.state.get("shared") == "from root"
        # writes: isolated to child's local state
        child.state.set("shared", "from child")
        assert root.state.get("shared") == "from root"
        # tokens: snapshot of parent's usage at fork time
        assert child.token_usage == {"input_tokens": 10}
        child.add_tokens({"input_tokens": 5})
        local = child.state.local_dict()
        # merge(child) <-- child.local_dict() -> parent.state.update()
        root.merge(child)
        assert {key: root.state.get(key) for key in local} == local
        # net tokens: child_current - snapshot_at_fork -> added to parent
        assert root.token_usage == {"input_tokens": 10 + (15 - 10)}
        assert root.children == []

    def test_the_documented_errors(self) -> None:
        from dagctx.context import Context, ContextError

        with pytest.raises(ContextError):
            Context("")
        with pytest.raises(ContextError):
            Context("a").merge(Context("b"))


class TestCheckpointDocument:
    """seeds/002: ``orbiter.context.checkpoint``."""

    def test_the_store_example_runs_and_its_asserts_hold(self) -> None:
        from dagctx.checkpoint import Checkpoint, CheckpointStore

        # Create store
        store = CheckpointStore("task-1")
        # Save checkpoints
        cp1 = store.save(
            values={"step": 1, "data": "initial"},
            token_usage={"input_tokens": 100, "output_tokens": 50},
            metadata={"description": "After step 1"},
        )
        assert cp1.version == 1
        cp2 = store.save(
            values={"step": 2, "data": "updated"},
            token_usage={"input_tokens": 250, "output_tokens": 120},
        )
        assert cp2.version == 2
        # Retrieve
        assert store.latest == cp2
        assert store.get(1) == cp1
        # List versions
        assert store.list_versions() == [1, 2]
        # Serialize/deserialize
        data = cp1.to_dict()
        restored = Checkpoint.from_dict(data)
        assert restored.task_id == "task-1"
        assert restored.version == 1

    def test_the_context_integration_example_runs_and_its_asserts_hold(self) -> None:
        from dagctx.context import Context

        ctx = Context("task-1")
        ctx.state.set("progress", "step 1")
        ctx.add_tokens({"input_tokens": 100})
        # Snapshot via Context
        cp = ctx.snapshot(metadata={"step": 1})
        # Restore via Context
        restored_ctx = Context.restore(cp)
        assert restored_ctx.state.get("progress") == "step 1"

    def test_the_documented_store_properties_and_dunders(self) -> None:
        from dagctx.checkpoint import CheckpointError, CheckpointStore

        store = CheckpointStore("task-1")
        assert (store.task_id, store.version, store.latest, len(store)) == ("task-1", 0, None, 0)
        for step in range(3):
            store.save({"step": step}, {})
        assert store.version == len(store) == 3
        assert repr(store) == "CheckpointStore(task_id='task-1', checkpoints=3)"
        with pytest.raises(CheckpointError):
            store.get(4)
        with pytest.raises(CheckpointError):
            CheckpointStore("")

    def test_checkpoint_is_a_frozen_slotted_dataclass_with_the_documented_fields(self) -> None:
        import dataclasses
        from datetime import UTC

        from dagctx.checkpoint import Checkpoint

        params = Checkpoint.__dataclass_params__  # type: ignore[attr-defined]
        assert params.frozen
        assert hasattr(Checkpoint, "__slots__")
        assert [f.name for f in dataclasses.fields(Checkpoint)] == [
            "task_id",
            "version",
            "values",
            "token_usage",
            "metadata",
            "created_at",
        ]
        cp = Checkpoint("task-1", 1, {}, {})
        assert cp.metadata == {} and cp.created_at.tzinfo == UTC
