"""Per-turn agent state: what persists across conversation turns and what starts afresh.

Owns :class:`AgentState` (a TypedDict that also works as a LangGraph state schema), the
reducers of its persistent fields, :class:`StateManager` (state creation, context storage,
plan access, figure and notebook registration) and the event helpers. LangGraph is not
imported here; with the ``dagctx[langgraph]`` extra, ``StateGraph(AgentState)`` picks the
reducers up from the ``Annotated`` fields.

Invariants kept here:

- the persistent fields (``capability_context_data``, ``session_state``) change only
  through their reducers, which are pure: they return new dicts and never mutate their
  inputs; the result never contains a :data:`DELETE` tombstone;
- :meth:`StateManager.create_fresh_state` lists every execution-scoped field with its
  default, so a LangGraph invocation with it resets them all (a channel that is not
  written keeps its checkpointed value), while an empty persistent field merges as a no-op;
- every helper returns a new state or a state update (:data:`StateUpdate`) and leaves
  the state it is given alone.

Not here: the typed contexts themselves (:mod:`dagctx.capability`).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Final, TypedDict, cast

from dagctx._validate import is_int, is_number
from dagctx.capability import (
    CapabilityContext,
    CapabilityError,
    ContextData,
    ContextManager,
    ContextRegistry,
)
from dagctx.errors import StateError

#: Tombstone: as an entry value (``{type: {key: DELETE}}``) it deletes that entry, as a
#: type value (``{type: DELETE}``) every entry of the type, as a ``session_state`` value
#: that key. A plain string, so it survives any checkpoint serializer.
DELETE: Final = "__dagctx_delete__"

#: A partial state returned by a node or helper, merged into the state by the caller
#: (LangGraph applies each field's reducer).
StateUpdate = dict[str, Any]


def _is_delete(value: object) -> bool:
    return isinstance(value, str) and value == DELETE


def merge_capability_context_data(
    existing: Mapping[str, Any] | None, new: Mapping[str, Any] | None
) -> ContextData:
    """Return ``existing`` updated by ``new``: the reducer of ``capability_context_data``.

    Each ``{type: {key: entry}}`` of ``new`` replaces that whole entry (fields are not
    merged); :data:`DELETE` as an entry removes it, as a type value removes the type.
    None on either side counts as empty; tombstones in ``existing`` count as absent; a
    type left without entries is dropped. The inputs are not mutated, and the result owns
    its type and entry dicts (field values are shared, not copied).

    Without tombstones, successive merges are associative:
    ``merge(merge(a, b), c) == merge(a, merge(b, c))``. A tombstone deletes from what it is
    merged into, so updates that delete must be applied in order (as LangGraph does).

    Raises :class:`~dagctx.capability.CapabilityError` when a side is not a
    ``{str: {str: mapping | DELETE} | DELETE}`` mapping.
    """
    result: ContextData = {}
    for context_type, entries in _type_items(existing, "existing"):
        if _is_delete(entries):
            continue
        kept = {
            key: dict(entry)
            for key, entry in _entry_items(context_type, entries, "existing")
            if not _is_delete(entry)
        }
        if kept:
            result[context_type] = kept
    for context_type, entries in _type_items(new, "new"):
        if _is_delete(entries):
            result.pop(context_type, None)
            continue
        merged = result.get(context_type, {})
        for key, entry in _entry_items(context_type, entries, "new"):
            if _is_delete(entry):
                merged.pop(key, None)
            else:
                merged[key] = dict(entry)
        if merged:
            result[context_type] = merged
        else:
            result.pop(context_type, None)
    return result


def merge_session_state(
    existing: Mapping[str, Any] | None, new: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Return ``existing`` updated key by key by ``new``: the reducer of ``session_state``.

    :data:`DELETE` as a value removes the key. None on either side counts as empty. The
    inputs are not mutated; values are shared, not copied. Raises :class:`StateError`
    when a side is not a mapping with string keys.
    """
    result = {key: value for key, value in _session_items(existing) if not _is_delete(value)}
    for key, value in _session_items(new):
        if _is_delete(value):
            result.pop(key, None)
        else:
            result[key] = value
    return result


class PlannedStep(TypedDict, total=False):
    """One step of an execution plan, as an orchestrator writes it."""

    context_key: str
    capability: str
    task_objective: str
    expected_output: str | None
    success_criteria: str
    inputs: list[dict[str, str]]
    parameters: dict[str, Any] | None


class ExecutionPlan(TypedDict):
    """The orchestrator's plan: ordered steps."""

    steps: list[PlannedStep]


class ReactMessage(TypedDict):
    """One entry of the ReAct loop: a decision (``assistant``) or an ``observation``."""

    role: str
    content: str


class AgentState(TypedDict, total=False):
    """The state of an agent graph, one turn at a time.

    Persistent (kept across turns, merged by reducers): ``capability_context_data``
    ``{context_type: {context_key: {field: value}}}`` and ``session_state``. Every other
    field is execution-scoped and reset by :meth:`StateManager.create_fresh_state`.
    Extend it by subclassing (for example with a ``messages`` field under LangGraph's
    ``add_messages``).
    """

    # Persistent.
    capability_context_data: Annotated[ContextData, merge_capability_context_data]
    session_state: Annotated[dict[str, Any], merge_session_state]

    # Execution-scoped: task.
    task_user_input: str | None
    task_current_task: str | None
    task_depends_on_chat_history: bool
    task_depends_on_user_memory: bool

    # Execution-scoped: planning.
    planning_active_capabilities: list[str]
    planning_execution_plan: ExecutionPlan | None
    planning_current_step_index: int

    # Execution-scoped: execution.
    execution_step_results: dict[str, Any]
    execution_last_result: dict[str, Any] | None

    # Execution-scoped: control flow.
    control_needs_reclassification: bool
    control_retry_count: int
    control_has_error: bool
    control_error_info: dict[str, Any] | None

    # Execution-scoped: reactive orchestration.
    react_messages: list[ReactMessage]
    react_step_count: int

    # Execution-scoped: artefacts shown to the user.
    ui_captured_figures: list[dict[str, Any]]
    ui_captured_notebooks: list[str]


PERSISTENT_FIELDS: Final = frozenset({"capability_context_data", "session_state"})


def _execution_defaults() -> dict[str, Any]:
    return {
        "task_user_input": None,
        "task_current_task": None,
        "task_depends_on_chat_history": False,
        "task_depends_on_user_memory": False,
        "planning_active_capabilities": [],
        "planning_execution_plan": None,
        "planning_current_step_index": 0,
        "execution_step_results": {},
        "execution_last_result": None,
        "control_needs_reclassification": False,
        "control_retry_count": 0,
        "control_has_error": False,
        "control_error_info": None,
        "react_messages": [],
        "react_step_count": 0,
        "ui_captured_figures": [],
        "ui_captured_notebooks": [],
    }


EXECUTION_FIELDS: Final = frozenset(_execution_defaults())


class StateManager:
    """Helpers over :class:`AgentState`. Each returns a new state or a
    :data:`StateUpdate` and never mutates the state it is given."""

    @staticmethod
    def create_fresh_state(
        user_input: str, current_state: Mapping[str, Any] | None = None
    ) -> AgentState:
        """Return the state a new turn starts from: every execution-scoped field at its
        default, ``task_user_input`` set, and deep copies of the persistent fields of
        ``current_state`` (empty without one; under LangGraph the reducers then keep the
        checkpointed values). Fields AgentState does not declare are not carried over.

        Raises :class:`StateError` when ``user_input`` is not a string, and
        :class:`~dagctx.capability.CapabilityError` when the persistent data is malformed.
        """
        if not isinstance(user_input, str):
            raise StateError(
                f"user_input must be a string, got {type(user_input).__name__}", value=user_input
            )
        current: Mapping[str, Any] = {} if current_state is None else current_state
        if not isinstance(current, Mapping):
            raise StateError(
                f"current_state must be a mapping or None, got {type(current).__name__}",
                value=current,
            )
        context_data = merge_capability_context_data(current.get("capability_context_data"), None)
        session = merge_session_state(current.get("session_state"), None)
        fresh: dict[str, Any] = {
            "capability_context_data": copy.deepcopy(context_data),
            "session_state": copy.deepcopy(session),
            **_execution_defaults(),
            "task_user_input": user_input,
        }
        return cast("AgentState", fresh)

    @staticmethod
    def store_context(
        state: Mapping[str, Any],
        context_type: str,
        context_key: str,
        context_object: CapabilityContext,
        task_objective: str | None = None,
        *,
        registry: ContextRegistry | None = None,
    ) -> StateUpdate:
        """Return the update that stores ``context_object`` under ``context_type`` /
        ``context_key``: ``{"capability_context_data": {type: {key: data}}}``.

        Without ``task_objective``, the objective of the current plan step is used when
        that step's ``context_key`` is ``context_key``. Raises what
        :meth:`ContextManager.set_context` raises for a value of the wrong type.
        """
        if task_objective is None:
            task_objective = _objective_for(state, context_key)
        manager = ContextManager(registry=registry)
        manager.set_context(
            context_type, context_key, context_object, task_objective=task_objective
        )
        return {"capability_context_data": manager.get_raw_data()}

    @staticmethod
    def delete_context(context_type: str, context_key: str | None = None) -> StateUpdate:
        """Return the update that deletes one entry, or every entry of ``context_type``
        when ``context_key`` is None. Raises :class:`StateError` for an empty name."""
        if not isinstance(context_type, str) or not context_type:
            raise StateError(
                f"context_type must be a non-empty string, got {context_type!r}", value=context_type
            )
        if context_key is None:
            return {"capability_context_data": {context_type: DELETE}}
        if not isinstance(context_key, str) or not context_key:
            raise StateError(
                f"context_key must be a non-empty string, got {context_key!r}", value=context_key
            )
        return {"capability_context_data": {context_type: {context_key: DELETE}}}

    @staticmethod
    def get_execution_plan(state: Mapping[str, Any]) -> ExecutionPlan | None:
        """Return the plan in ``planning_execution_plan``, or None when there is none.
        Raises :class:`StateError` when it is not ``{"steps": [mapping, ...]}``."""
        plan = state.get("planning_execution_plan")
        if plan is None:
            return None
        steps = plan.get("steps") if isinstance(plan, Mapping) else None
        if not isinstance(steps, list) or not all(isinstance(s, Mapping) for s in steps):
            raise StateError(
                f"planning_execution_plan must be {{'steps': [step, ...]}}, got {plan!r:.120}",
                value=plan,
            )
        return cast("ExecutionPlan", plan)

    @staticmethod
    def get_current_step_index(state: Mapping[str, Any]) -> int:
        """Return ``planning_current_step_index`` (0 when unset). Raises
        :class:`StateError` when it is not a non-negative integer."""
        index = state.get("planning_current_step_index", 0)
        if not is_int(index) or index < 0:
            raise StateError(
                f"planning_current_step_index must be a non-negative integer, got {index!r}",
                value=index,
            )
        return index

    @staticmethod
    def get_current_step(state: Mapping[str, Any]) -> PlannedStep:
        """Return the plan step at ``planning_current_step_index``. Raises
        :class:`StateError` when there is no plan or the index is past its end."""
        plan = StateManager.get_execution_plan(state)
        if plan is None:
            raise StateError("the state has no execution plan (planning_execution_plan is unset)")
        index = StateManager.get_current_step_index(state)
        steps = plan["steps"]
        if index >= len(steps):
            raise StateError(
                f"planning_current_step_index {index} is past the end of the "
                f"{len(steps)}-step plan",
                value=index,
            )
        return steps[index]

    @staticmethod
    def register_figure(
        state: Mapping[str, Any],
        capability: str,
        figure_path: str | os.PathLike[str],
        display_name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> StateUpdate:
        """Return the update appending a figure to ``ui_captured_figures`` (the whole new
        list: the field has no reducer). Raises :class:`StateError` for an empty
        capability or path."""
        entry = _artefact(capability, figure_path, display_name, metadata, "figure_path")
        return {"ui_captured_figures": [*_list_field(state, "ui_captured_figures"), entry]}

    @staticmethod
    def register_notebook(
        state: Mapping[str, Any],
        capability: str,
        notebook_path: str | os.PathLike[str],
        notebook_link: str,
        display_name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> StateUpdate:
        """Return the update appending ``notebook_link`` (for example a Jupyter URL) to
        ``ui_captured_notebooks``, a list of link strings as in osprey (the whole new list:
        the field has no reducer). ``capability`` and ``notebook_path`` are checked but, as
        in osprey, only the link is stored; ``display_name`` and ``metadata`` are not
        stored. Raises :class:`StateError` for an empty capability, path or link."""
        _artefact(capability, notebook_path, display_name, metadata, "notebook_path")
        if not isinstance(notebook_link, str) or not notebook_link:
            raise StateError(
                f"notebook_link must be a non-empty string, got {notebook_link!r}",
                value=notebook_link,
            )
        return {
            "ui_captured_notebooks": [*_list_field(state, "ui_captured_notebooks"), notebook_link]
        }


def create_status_update(
    message: str,
    progress: float | None = None,
    complete: bool = False,
    node: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Return a status event ``{"event_type": "status", "message", "progress",
    "complete", "node", "timestamp", **extra}`` (timestamp: ISO 8601, UTC). Raises
    :class:`StateError` for a progress outside [0, 1] or an ``extra`` key that would
    overwrite a standard one."""
    if progress is not None and (not is_number(progress) or not 0 <= progress <= 1):
        raise StateError(
            f"progress must be a number between 0 and 1, got {progress!r}", value=progress
        )
    event = {
        "event_type": "status",
        "message": message,
        "progress": progress,
        "complete": complete,
        "node": node,
        "timestamp": _now(),
    }
    return _with_extra(event, extra)


def create_progress_event(
    current_step: int,
    total_steps: int,
    description: str,
    capability: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Return a progress event ``{"event_type": "progress", "current_step",
    "total_steps", "progress" (current/total), "description", "capability",
    "timestamp", **extra}``. Raises :class:`StateError` unless
    ``0 <= current_step <= total_steps`` and ``total_steps >= 1``, or for an ``extra``
    key that would overwrite a standard one."""
    for name, value in (("current_step", current_step), ("total_steps", total_steps)):
        if not is_int(value):
            raise StateError(f"{name} must be an integer, got {value!r}", value=value)
    if total_steps < 1 or not 0 <= current_step <= total_steps:
        raise StateError(
            f"need 0 <= current_step <= total_steps and total_steps >= 1, "
            f"got current_step={current_step}, total_steps={total_steps}",
            value=(current_step, total_steps),
        )
    event = {
        "event_type": "progress",
        "current_step": current_step,
        "total_steps": total_steps,
        "progress": current_step / total_steps,
        "description": description,
        "capability": capability,
        "timestamp": _now(),
    }
    return _with_extra(event, extra)


def get_execution_steps_summary(state: Mapping[str, Any]) -> list[str]:
    """Return one line per entry of ``execution_step_results``, ordered by the results'
    ``step_index`` (results without one last, in stored order):
    ``"Step 1: <task_objective>"`` (the capability, else the result key, when there is no
    objective), with `` [failed]`` when the result's ``success`` is False. Raises
    :class:`StateError` when the results are not a mapping of mappings."""
    results = state.get("execution_step_results") or {}
    if not isinstance(results, Mapping) or not all(
        isinstance(r, Mapping) for r in results.values()
    ):
        raise StateError(
            f"execution_step_results must map step keys to result mappings, got {results!r:.120}",
            value=results,
        )

    def order(item: tuple[int, tuple[str, Mapping[str, Any]]]) -> tuple[float, int]:
        position, (_, result) = item
        index = result.get("step_index")
        if is_int(index):
            return (index, position)
        return (float("inf"), position)

    lines = []
    ordered = sorted(enumerate(results.items()), key=order)
    for number, (_, (key, result)) in enumerate(ordered, start=1):
        label = result.get("task_objective") or result.get("capability") or key
        line = f"Step {number}: {label}"
        if result.get("success") is False:
            line += " [failed]"
        lines.append(line)
    return lines


# --- helpers --------------------------------------------------------------------------


def _type_items(side: Mapping[str, Any] | None, name: str) -> list[tuple[str, Any]]:
    if side is None:
        return []
    if not isinstance(side, Mapping):
        raise CapabilityError(
            f"capability_context_data ({name}) must be a mapping or None, "
            f"got {type(side).__name__}",
            value=side,
        )
    for context_type in side:
        if not isinstance(context_type, str) or not context_type:
            raise CapabilityError(
                f"capability_context_data ({name}) has a context type that is not a "
                f"non-empty string: {context_type!r}",
                value=context_type,
            )
    return list(side.items())


def _entry_items(context_type: str, entries: Any, name: str) -> list[tuple[str, Any]]:
    if not isinstance(entries, Mapping):
        raise CapabilityError(
            f"capability_context_data ({name}): {context_type} must map keys to entries "
            f"or be DELETE, got {type(entries).__name__}",
            value=entries,
        )
    for key, entry in entries.items():
        if not isinstance(key, str) or not key:
            raise CapabilityError(
                f"capability_context_data ({name}): {context_type} has a key that is not a "
                f"non-empty string: {key!r}",
                value=key,
            )
        if not (isinstance(entry, Mapping) or _is_delete(entry)):
            raise CapabilityError(
                f"capability_context_data ({name}): entry {context_type}.{key} must be a "
                f"mapping of fields or DELETE, got {type(entry).__name__}",
                value=entry,
            )
    return list(entries.items())


def _session_items(side: Mapping[str, Any] | None) -> list[tuple[str, Any]]:
    if side is None:
        return []
    if not isinstance(side, Mapping) or not all(isinstance(k, str) for k in side):
        raise StateError(
            f"session_state must be a mapping with string keys, got {side!r:.120}", value=side
        )
    return list(side.items())


def _objective_for(state: Mapping[str, Any], context_key: str) -> str | None:
    plan = StateManager.get_execution_plan(state)
    if plan is None:
        return None
    steps = plan["steps"]
    index = StateManager.get_current_step_index(state)
    if index >= len(steps) or steps[index].get("context_key") != context_key:
        return None
    objective = steps[index].get("task_objective")
    return objective if isinstance(objective, str) else None


def _list_field(state: Mapping[str, Any], name: str) -> list[Any]:
    value = state.get(name) or []
    if not isinstance(value, list):
        raise StateError(f"{name} must be a list, got {type(value).__name__}", value=value)
    return value


def _artefact(
    capability: str,
    path: str | os.PathLike[str],
    display_name: str | None,
    metadata: Mapping[str, Any] | None,
    path_field: str,
) -> dict[str, Any]:
    if not isinstance(capability, str) or not capability:
        raise StateError(
            f"capability must be a non-empty string, got {capability!r}", value=capability
        )
    path_text = os.fspath(path) if isinstance(path, str | os.PathLike) else None
    if not path_text:
        raise StateError(f"{path_field} must be a non-empty path, got {path!r}", value=path)
    return {
        "capability": capability,
        path_field: str(path_text),
        "display_name": display_name,
        "metadata": dict(metadata or {}),
        "created_at": _now(),
    }


def _with_extra(event: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    clash = sorted(set(extra) & set(event))
    if clash:
        raise StateError(
            f"extra fields would overwrite standard event fields: {clash}", value=clash
        )
    return {**event, **extra}


def _now() -> str:
    return datetime.now(UTC).isoformat()


__all__ = [
    "DELETE",
    "EXECUTION_FIELDS",
    "PERSISTENT_FIELDS",
    "AgentState",
    "ExecutionPlan",
    "PlannedStep",
    "ReactMessage",
    "StateError",
    "StateManager",
    "StateUpdate",
    "create_progress_event",
    "create_status_update",
    "get_execution_steps_summary",
    "merge_capability_context_data",
    "merge_session_state",
]
