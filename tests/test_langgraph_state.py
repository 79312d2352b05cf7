"""AgentState as the state schema of a real LangGraph graph (the dagctx[langgraph] extra).

The graph is checkpointed with LangGraph's SQLite saver in a real file and run for several
turns, the last one in another process: capability contexts and session state survive
turns and the restart, execution-scoped fields start every turn at their defaults.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, ClassVar

import pytest

pytest.importorskip(
    "langgraph", reason="LangGraph is not installed: pip install 'dagctx[langgraph]'"
)
pytest.importorskip(
    "langgraph.checkpoint.sqlite",
    reason="the LangGraph SQLite checkpointer is not installed: pip install 'dagctx[langgraph]'",
)

from langchain_core.messages import AnyMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from dagctx.capability import CapabilityContext, ContextManager
from dagctx.state import DELETE, AgentState, StateManager, StateUpdate

NOTES = "DAGCTX_LG_NOTES"


class ChatState(AgentState):
    """AgentState with LangGraph's chat history, as the seed's MessagesState base had."""

    messages: Annotated[list[AnyMessage], add_messages]


class TurnNote(CapabilityContext):
    CONTEXT_TYPE: ClassVar[str] = NOTES
    CONTEXT_CATEGORY: ClassVar[str] = "TEXT"
    text: str

    def get_access_details(self, key: str) -> dict[str, Any]:
        return {"text": f"context.{NOTES}.{key}.text"}


def capability_node(state: AgentState) -> StateUpdate:
    """Records what the turn started with, stores a note, deletes one on "forget KEY"."""
    observed = {
        "task_user_input": state["task_user_input"],
        "react_step_count": state["react_step_count"],
        "react_messages": state["react_messages"],
        "control_has_error": state["control_has_error"],
        "execution_step_results": state["execution_step_results"],
        "note_keys": list(state["capability_context_data"].get(NOTES, {})),
        "session_state": state["session_state"],
    }
    turn = state["session_state"].get("turns", 0) + 1
    user_input = state["task_user_input"] or ""
    update = StateManager.store_context(state, NOTES, f"turn_{turn}", TurnNote(text=user_input))
    if user_input.startswith("forget "):
        update["capability_context_data"][NOTES][user_input.removeprefix("forget ")] = DELETE
    return {
        **update,
        "session_state": {"turns": turn},
        "execution_step_results": {"observed": observed},
        "react_step_count": state["react_step_count"] + 1,
        "react_messages": [{"role": "assistant", "content": f"stored turn_{turn}"}],
        "control_has_error": True,
    }


def react_node(state: AgentState) -> StateUpdate:
    return {
        "react_step_count": state["react_step_count"] + 1,
        "react_messages": [*state["react_messages"], {"role": "observation", "content": "ok"}],
    }


def build_graph(checkpointer: SqliteSaver) -> Any:
    builder = StateGraph(AgentState)
    builder.add_node("capability", capability_node)
    builder.add_node("react", react_node)
    builder.add_edge(START, "capability")
    builder.add_edge("capability", "react")
    builder.add_edge("react", END)
    return builder.compile(checkpointer=checkpointer)


def run_turns(db_path: str, thread_id: str, inputs: list[str]) -> list[dict[str, Any]]:
    """Run one graph invocation per input on a fresh checkpointer over ``db_path``."""
    config = {"configurable": {"thread_id": thread_id}}
    reports = []
    with SqliteSaver.from_conn_string(db_path) as saver:
        graph = build_graph(saver)
        for user_input in inputs:
            out = graph.invoke(StateManager.create_fresh_state(user_input), config)
            reports.append(
                {
                    "observed": out["execution_step_results"]["observed"],
                    "note_keys": list(out["capability_context_data"].get(NOTES, {})),
                    "react_step_count": out["react_step_count"],
                    "control_has_error": out["control_has_error"],
                    "session_state": out["session_state"],
                }
            )
    return reports


def persisted_values(db_path: Path, thread_id: str) -> dict[str, Any]:
    with SqliteSaver.from_conn_string(str(db_path)) as saver:
        snapshot = build_graph(saver).get_state({"configurable": {"thread_id": thread_id}})
        return dict(snapshot.values)


FRESH_EXECUTION = {
    "react_step_count": 0,
    "react_messages": [],
    "control_has_error": False,
    "execution_step_results": {},
}


class TestCheckpointedTurns:
    def test_persistent_data_survives_turns_and_a_restart(self, tmp_path: Path) -> None:
        db_path = tmp_path / "agent.sqlite"
        first = run_turns(str(db_path), "beam", ["find PVs", "get data", "plot it"])

        for number, report in enumerate(first, start=1):
            observed = report["observed"]
            assert {k: observed[k] for k in FRESH_EXECUTION} == FRESH_EXECUTION
            assert observed["note_keys"] == [f"turn_{n}" for n in range(1, number)]
            assert report["note_keys"] == [f"turn_{n}" for n in range(1, number + 1)]
            assert report["react_step_count"] == 2 and report["control_has_error"] is True
            assert report["session_state"] == {"turns": number}
        assert first[1]["observed"]["task_user_input"] == "get data"

        with sqlite3.connect(db_path) as conn:
            (count,) = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
        assert count > 0

        script = (
            "import json, sys\n"
            "sys.path.insert(0, sys.argv[1])\n"
            "import test_langgraph_state as t\n"
            "print(json.dumps(t.run_turns(sys.argv[2], 'beam', ['forget turn_1'])))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script, str(Path(__file__).parent), str(db_path)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        (after_restart,) = json.loads(done.stdout.strip().splitlines()[-1])
        observed = after_restart["observed"]
        assert {k: observed[k] for k in FRESH_EXECUTION} == FRESH_EXECUTION
        assert observed["note_keys"] == ["turn_1", "turn_2", "turn_3"]
        assert observed["session_state"] == {"turns": 3}
        assert after_restart["note_keys"] == ["turn_2", "turn_3", "turn_4"]

        values = persisted_values(db_path, "beam")
        notes = ContextManager(values).get_all_of_type(NOTES)
        assert notes == {
            "turn_2": TurnNote(text="get data"),
            "turn_3": TurnNote(text="plot it"),
            "turn_4": TurnNote(text="forget turn_1"),
        }
        assert values["session_state"] == {"turns": 4}

    def test_threads_are_kept_apart(self, tmp_path: Path) -> None:
        db_path = str(tmp_path / "agent.sqlite")
        run_turns(db_path, "one", ["a", "b"])
        (other,) = run_turns(db_path, "two", ["c"])
        assert other["observed"]["note_keys"] == []
        assert other["note_keys"] == ["turn_1"]

    def test_passing_the_previous_state_changes_nothing(self, tmp_path: Path) -> None:
        # Outside LangGraph the caller hands the previous state to create_fresh_state;
        # inside, the reducers make re-sending the persistent data a no-op.
        db_path = tmp_path / "agent.sqlite"
        run_turns(str(db_path), "beam", ["a", "b"])
        config = {"configurable": {"thread_id": "beam"}}
        with SqliteSaver.from_conn_string(str(db_path)) as saver:
            graph = build_graph(saver)
            previous = graph.get_state(config).values
            out = graph.invoke(StateManager.create_fresh_state("c", previous), config)
        assert list(out["capability_context_data"][NOTES]) == ["turn_1", "turn_2", "turn_3"]
        assert out["execution_step_results"]["observed"]["react_step_count"] == 0


class TestParallelWrites:
    def test_branches_writing_contexts_in_one_step_are_merged(self) -> None:
        def branch(key: str) -> Any:
            def node(state: AgentState) -> StateUpdate:
                return StateManager.store_context(state, NOTES, key, TurnNote(text=key))

            return node

        builder = StateGraph(AgentState)
        for key in ("left", "right"):
            builder.add_node(key, branch(key))
            builder.add_edge(START, key)
            builder.add_edge(key, END)
        out = builder.compile().invoke(StateManager.create_fresh_state("go"))
        assert sorted(out["capability_context_data"][NOTES]) == ["left", "right"]


class TestMessagesExtension:
    def test_a_subclass_adds_a_chat_history_that_accumulates(self, tmp_path: Path) -> None:
        def reply(state: ChatState) -> StateUpdate:
            return {
                "messages": [{"role": "assistant", "content": f"echo {state['task_user_input']}"}],
                "react_step_count": state["react_step_count"] + 1,
            }

        builder = StateGraph(ChatState)
        builder.add_node("reply", reply)
        builder.add_edge(START, "reply")
        builder.add_edge("reply", END)
        config: Any = {"configurable": {"thread_id": "chat"}}
        with SqliteSaver.from_conn_string(str(tmp_path / "chat.sqlite")) as saver:
            graph = builder.compile(checkpointer=saver)
            for text in ("hello", "again"):
                fresh = StateManager.create_fresh_state(text)
                turn_input: Any = {**fresh, "messages": [{"role": "user", "content": text}]}
                out = graph.invoke(turn_input, config)
        assert [m.content for m in out["messages"]] == [
            "hello",
            "echo hello",
            "again",
            "echo again",
        ]
        assert out["react_step_count"] == 1
