"""Typed access to the three-level dict of capability contexts an agent state carries.

Owns :class:`ContextManager` (reads and writes ``{context_type: {context_key: {field:
value}}}``, ``capability_context_data`` in :mod:`dagctx.state`), the dot-access view
:class:`ContextNamespace`, and the file round trip (:meth:`ContextManager.save_context_to_file`,
:func:`load_context`).

Invariants kept here:

- stored data is plain JSON (``model_dump(mode="json")``), so any checkpointer can
  persist it and :func:`load_context` can read it back in another process;
- a ContextManager works on its own deep copy: nothing done through it mutates the state
  it was built from, and nothing it returns aliases its data.

Not here: the context classes and their registry (:mod:`dagctx.capability.context`),
merging state updates (:mod:`dagctx.state`), rendering under a token budget
(:class:`dagctx.nodes.capability.CapabilityNode`).
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from dagctx._fs import write_atomic
from dagctx.capability.context import (
    META_KEY,
    CapabilityContext,
    ContextRegistry,
    RawContext,
    StoredContext,
    check_name,
    context_registry,
    dump_context,
    qualified_name,
)
from dagctx.capability.steps import (
    Constraint,
    ConstraintMode,
    check_constraints,
    input_pairs,
    parse_constraints,
    step_inputs,
)
from dagctx.capability.summary import access_path
from dagctx.errors import CapabilityError, CapabilityTypeError

DEFAULT_CONTEXT_FILENAME = "context.json"

ContextData = dict[str, dict[str, dict[str, Any]]]


class ContextNamespace:
    """Dot access to the entries of one context type: ``cm.PV_ADDRESSES.step_1``.

    A live view of its :class:`ContextManager`; ``ns["step 1"]`` reaches keys that are not
    identifiers. A missing key raises AttributeError (dot) or KeyError (item).
    """

    __slots__ = ("_context_type", "_manager")

    def __init__(self, manager: ContextManager, context_type: str) -> None:
        self._manager = manager
        self._context_type = context_type

    def __getattr__(self, key: str) -> Any:
        if key.startswith("_"):
            raise AttributeError(key)
        value = self._manager.get_context(self._context_type, key)
        if value is None:
            raise AttributeError(self._missing(key))
        return value

    def __getitem__(self, key: str) -> Any:
        value = self._manager.get_context(self._context_type, key)
        if value is None:
            raise KeyError(self._missing(key))
        return value

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def __dir__(self) -> list[str]:
        return [key for key in self.keys() if key.isidentifier()]

    def __repr__(self) -> str:
        return f"ContextNamespace({self._context_type!r}, keys={self.keys()!r})"

    def keys(self) -> list[str]:
        """Return the keys stored under this type, in storage order."""
        return self._manager._keys(self._context_type)

    def _missing(self, key: str) -> str:
        return (
            f"no {self._context_type} context under key {key!r}; "
            f"stored keys: {', '.join(self.keys()) or 'none'}"
        )


class ContextManager:
    """Typed access to the capability contexts of an agent state.

    Works on a deep copy of ``state["capability_context_data"]`` (missing or None: empty),
    so the state is never mutated; hand changes back to the state with
    :meth:`get_raw_data` or through :meth:`dagctx.state.StateManager.store_context`.
    Raises :class:`CapabilityError` when that data is not a three-level dict of mappings.

    ``cm.PV_ADDRESSES`` (or ``cm["PV_ADDRESSES"]`` for a type named like a method, or
    not an identifier) is a :class:`ContextNamespace` over the entries of that type.
    """

    def __init__(
        self, state: Mapping[str, Any] | None = None, *, registry: ContextRegistry | None = None
    ) -> None:
        raw = None if state is None else state.get("capability_context_data")
        self._registry = context_registry if registry is None else registry
        self._data: ContextData = _validated_copy(raw)

    @classmethod
    def from_data(
        cls, data: Mapping[str, Any] | None, *, registry: ContextRegistry | None = None
    ) -> ContextManager:
        """Return a manager over a bare ``{context_type: {context_key: {field: value}}}``."""
        return cls({"capability_context_data": data}, registry=registry)

    # --- storage and retrieval -------------------------------------------------------

    def set_context(
        self,
        context_type: str,
        key: str,
        value: CapabilityContext,
        skip_validation: bool = False,
        task_objective: str | None = None,
    ) -> None:
        """Store ``value`` under ``context_type`` / ``key``, replacing any previous entry.

        The argument order is osprey's. ``skip_validation=True`` skips the type checks
        (the value's ``CONTEXT_TYPE`` and the class registered for ``context_type``), for
        tests and ad-hoc types; the value must still be a CapabilityContext that dumps to
        JSON. ``task_objective`` is kept as metadata (:meth:`get_context_metadata`).

        Raises :class:`CapabilityTypeError` when ``value`` is not a CapabilityContext,
        cannot be dumped to JSON, or (unless skipped) is not of that type (an instance of
        the class registered for it, if any); :class:`CapabilityError` for an empty type
        or key or a non-bool ``skip_validation``.
        """
        check_name("context type", context_type)
        check_name("context key", key)
        if not isinstance(skip_validation, bool):
            raise CapabilityError(
                f"skip_validation must be True or False, got {skip_validation!r}",
                value=skip_validation,
            )
        if not isinstance(value, CapabilityContext):
            raise CapabilityTypeError(
                f"the value stored as {context_type}.{key} must be a CapabilityContext, "
                f"got {type(value).__name__}",
                value=value,
            )
        if not skip_validation:
            self._check_type(context_type, value)
        if task_objective is not None and not isinstance(task_objective, str):
            raise CapabilityTypeError(
                f"task_objective must be a string, got {type(task_objective).__name__}",
                value=task_objective,
            )
        raw = dump_context(value, f"{context_type}.{key}")
        if task_objective is not None:
            raw[META_KEY] = {"task_objective": task_objective}
        self._data.setdefault(context_type, {})[key] = raw

    def _check_type(self, context_type: str, value: CapabilityContext) -> None:
        if context_type != value.CONTEXT_TYPE:
            raise CapabilityTypeError(
                f"{type(value).__name__} has CONTEXT_TYPE {value.CONTEXT_TYPE!r} and cannot be "
                f"stored under {context_type!r}",
                value=value,
            )
        expected = self._registry.get(context_type)
        if expected is not None and not isinstance(value, expected):
            raise CapabilityTypeError(
                f"{context_type!r} is registered to {qualified_name(expected)}; "
                f"{qualified_name(type(value))} is not an instance of it",
                value=value,
            )

    def get_context(self, context_type: str, key: str) -> StoredContext | None:
        """Return the entry as a fresh object of its registered class, a
        :class:`RawContext` when no class is registered, or None when there is no entry.

        Raises :class:`CapabilityError` when the stored data no longer validates as the
        registered class (for example after a schema change).
        """
        raw = self._data.get(context_type, {}).get(key)
        return None if raw is None else self._build(context_type, key, raw)

    def get_task_objective(self, context_type: str, key: str) -> str | None:
        """Return the task objective the entry was stored with, or None."""
        raw = self._data.get(context_type, {}).get(key) or {}
        meta = raw.get(META_KEY)
        return meta.get("task_objective") if isinstance(meta, Mapping) else None

    def get_context_metadata(self, context_type: str, key: str) -> dict[str, Any] | None:
        """Return a copy of the entry's metadata (``{"task_objective": ...}``), or None
        when the entry does not exist or was stored without metadata."""
        raw = self._data.get(context_type, {}).get(key) or {}
        meta = raw.get(META_KEY)
        return copy.deepcopy(dict(meta)) if isinstance(meta, Mapping) else None

    def get_all_context_metadata(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Return ``{context_type: {key: metadata}}`` for the entries stored with metadata
        (storage order; types without any are left out), as copies."""
        result: dict[str, dict[str, dict[str, Any]]] = {}
        for context_type, key in self._pairs():
            meta = self.get_context_metadata(context_type, key)
            if meta:
                result.setdefault(context_type, {})[key] = meta
        return result

    def get_all_of_type(self, context_type: str) -> dict[str, StoredContext]:
        """Return ``{key: context}`` for one type, in storage order (empty if unknown)."""
        entries = self._data.get(context_type, {})
        return {key: self._build(context_type, key, raw) for key, raw in entries.items()}

    def get_all(self) -> dict[str, dict[str, StoredContext]]:
        """Return ``{context_type: {key: context}}`` for every entry, in storage order."""
        return {context_type: self.get_all_of_type(context_type) for context_type in self._data}

    # --- steps, summaries and descriptions ---------------------------------------------

    def extract_from_step(
        self,
        step: Mapping[str, Any],
        state: Mapping[str, Any] | None = None,
        constraints: Iterable[Constraint] | None = None,
        constraint_mode: ConstraintMode = "hard",
    ) -> dict[str, StoredContext | list[StoredContext]]:
        """Return the contexts a plan step names in ``step["inputs"]`` (a list of
        ``{context_type: key}`` mappings) as ``{context_type: context}``, or
        ``{context_type: [context, ...]}`` when the step names several keys of one type.

        The call shape is osprey's: ``extract_from_step(step, state, constraints=[...],
        constraint_mode="hard")``. ``state`` (the agent state, or None) is only checked to
        be a mapping: the contexts come from this manager's data.
        ``constraints`` lists required types, each a name or ``(name, "single" |
        "multiple")``. In ``"hard"`` mode every listed type must be present; in ``"soft"``
        mode at least one (so a step without inputs fails any constraint). A cardinality is
        checked for every present type that has one.
        Raises :class:`CapabilityError` (a ValueError, as osprey's capabilities catch) for
        a named entry that does not exist, a state that is not a mapping, a malformed step
        or constraint, an unknown mode, or an unmet constraint.
        """
        if state is not None and not isinstance(state, Mapping):
            raise CapabilityError(
                f"state must be the agent state (a mapping) or None, got "
                f"{type(state).__name__}: {state!r:.80}; pass constraints by keyword: "
                "extract_from_step(step, state, constraints=[...])",
                value=state,
            )
        parsed = parse_constraints(constraints)
        if constraint_mode not in ("hard", "soft"):
            raise CapabilityError(
                f"constraint_mode must be 'hard' or 'soft', got {constraint_mode!r}",
                value=constraint_mode,
            )
        found: dict[str, list[StoredContext]] = {}
        for context_type, key in step_inputs(step):
            found.setdefault(context_type, []).append(self._require(context_type, key))
        check_constraints(found, parsed, constraint_mode)
        return {t: values[0] if len(values) == 1 else values for t, values in found.items()}

    def get_summaries(self, step: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Return the ``get_summary()`` of every entry (storage order), or of the entries a
        step names (input order). Raises :class:`CapabilityError` like
        :meth:`extract_from_step` for a step naming a missing entry."""
        pairs = self._pairs() if step is None else step_inputs(step)
        return [self._require(context_type, key).get_summary() for context_type, key in pairs]

    def get_context_access_description(
        self, filter: Iterable[str | Mapping[str, str]] | None = None
    ) -> str:
        """Return a text telling a model how to reach each entry (``context.TYPE.key``),
        with its category, task objective and ``get_access_details(key)`` as JSON.

        ``filter`` limits it to whole types (strings) and single entries
        (``{context_type: key}`` mappings). Raises :class:`CapabilityError` when the filter
        names an entry or type that is not stored.
        """
        pairs = self._pairs() if filter is None else self._filtered_pairs(filter)
        if not pairs:
            return "No capability contexts are stored."
        blocks = []
        for context_type, key in pairs:
            context = self._require(context_type, key)
            header = access_path(context_type, key)
            category = getattr(type(context), "CONTEXT_CATEGORY", None)
            if isinstance(category, str):
                header += f" [{category}]"
            objective = self.get_task_objective(context_type, key)
            if objective:
                header += f" (task: {objective})"
            details = json.dumps(context.get_access_details(key), ensure_ascii=False, default=str)
            blocks.append(f"{header}\n  {details}")
        return "\n".join(blocks)

    # --- raw data and files -----------------------------------------------------------

    def get_raw_data(self) -> ContextData:
        """Return a deep copy of the three-level dict (JSON data, task objectives under
        :data:`META_KEY`)."""
        return copy.deepcopy(self._data)

    def save_context_to_file(
        self, folder: str | os.PathLike[str], filename: str = DEFAULT_CONTEXT_FILENAME
    ) -> Path:
        """Write the raw data as JSON to ``folder/filename`` (creating ``folder``) and
        return the path. The file is replaced atomically: a reader sees the old or the new
        content, never a partial one. Raises :class:`CapabilityError` for a filename that
        is not a plain name, data that is not JSON-serialisable, or an OS error."""
        if not filename or Path(filename).name != filename or filename in (".", ".."):
            raise CapabilityError(
                f"filename must be a plain file name, got {filename!r}", value=filename
            )
        text = self._to_json()
        target = Path(folder) / filename
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, text)
        except OSError as error:
            raise CapabilityError(
                f"cannot write context file {str(target)!r}: {error}", value=target
            ) from error
        return target

    # --- dot access -------------------------------------------------------------------

    def __getattr__(self, context_type: str) -> ContextNamespace:
        if context_type.startswith("_"):
            raise AttributeError(context_type)
        if context_type not in self._data:
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {context_type!r}, and "
                + self._missing_type(context_type)
            )
        return ContextNamespace(self, context_type)

    def __getitem__(self, context_type: str) -> ContextNamespace:
        if context_type not in self._data:
            raise KeyError(self._missing_type(context_type))
        return ContextNamespace(self, context_type)

    def __contains__(self, context_type: object) -> bool:
        return context_type in self._data

    def __dir__(self) -> list[str]:
        types = [t for t in self._data if t.isidentifier()]
        return sorted(set(super().__dir__()) | set(types))

    def __repr__(self) -> str:
        counts = ", ".join(f"{t}: {len(entries)}" for t, entries in self._data.items())
        return f"ContextManager({{{counts}}})"

    # --- internals --------------------------------------------------------------------

    def _build(self, context_type: str, key: str, raw: Mapping[str, Any]) -> StoredContext:
        # Copied first: a model field typed Any would otherwise alias the stored data.
        fields = {name: copy.deepcopy(v) for name, v in raw.items() if name != META_KEY}
        cls = self._registry.get(context_type)
        if cls is None:
            return RawContext(context_type, fields)
        try:
            return cls.model_validate(fields)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(entry)"
            raise CapabilityError(
                f"stored {context_type}.{key} does not validate as {cls.__qualname__}: "
                f"{error.error_count()} error(s), first at {where}: {first['msg']}",
                value=fields,
            ) from error

    def _require(self, context_type: str, key: str) -> StoredContext:
        context = self.get_context(context_type, key)
        if context is None:
            stored = ", ".join(self._data.get(context_type, {})) or "none"
            raise CapabilityError(
                f"context {context_type}.{key} not found; stored keys of {context_type}: {stored}",
                value=key,
            )
        return context

    def _keys(self, context_type: str) -> list[str]:
        return list(self._data.get(context_type, {}))

    def _pairs(self) -> list[tuple[str, str]]:
        return [(t, key) for t, entries in self._data.items() for key in entries]

    def _filtered_pairs(
        self, selection: Iterable[str | Mapping[str, str]]
    ) -> list[tuple[str, str]]:
        if isinstance(selection, str | bytes | Mapping):
            raise CapabilityError(
                f"filter must be a list of context types and {{type: key}} mappings, "
                f"got {selection!r}",
                value=selection,
            )
        pairs: list[tuple[str, str]] = []
        for item in selection:
            if isinstance(item, str):
                if item not in self._data:
                    raise CapabilityError(self._missing_type(item), value=item)
                pairs.extend((item, key) for key in self._data[item])
            elif isinstance(item, Mapping):
                pairs.extend(input_pairs(item))
            else:
                raise CapabilityError(
                    f"filter items must be context types or {{type: key}} mappings, got {item!r}",
                    value=item,
                )
        return list(dict.fromkeys(pairs))

    def _missing_type(self, context_type: str) -> str:
        return (
            f"no capability context of type {context_type!r} is stored; "
            f"stored types: {', '.join(self._data) or 'none'}"
        )

    def _to_json(self) -> str:
        try:
            return json.dumps(self._data, ensure_ascii=False, indent=2)
        except (TypeError, ValueError) as error:
            where = "the context data"
            for context_type, key in self._pairs():
                try:
                    json.dumps(self._data[context_type][key])
                except (TypeError, ValueError):
                    where = f"context {context_type}.{key}"
                    break
            raise CapabilityError(
                f"{where} is not JSON-serialisable: {error}", value=where
            ) from error


def load_context(
    path: str | os.PathLike[str] = DEFAULT_CONTEXT_FILENAME,
    *,
    registry: ContextRegistry | None = None,
) -> ContextManager:
    """Return a :class:`ContextManager` over a file written by
    :meth:`ContextManager.save_context_to_file` (a folder means its ``context.json``).

    Raises :class:`CapabilityError` when the file cannot be read, is not JSON, or is not a
    three-level dict.
    """
    target = Path(path)
    if target.is_dir():
        target = target / DEFAULT_CONTEXT_FILENAME
    try:
        data = json.loads(target.read_text(encoding="utf-8"))
    except OSError as error:
        raise CapabilityError(
            f"cannot read context file {str(target)!r}: {error}", value=target
        ) from error
    except json.JSONDecodeError as error:
        raise CapabilityError(
            f"context file {str(target)!r} is not valid JSON: {error.msg} "
            f"(line {error.lineno}, column {error.colno})",
            value=target,
        ) from error
    return ContextManager.from_data(data, registry=registry)


# --- helpers --------------------------------------------------------------------------


def _validated_copy(raw: object) -> ContextData:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise CapabilityError(
            f"capability_context_data must be a mapping, got {type(raw).__name__}", value=raw
        )
    data: ContextData = {}
    for context_type, entries in raw.items():
        check_name("context type", context_type)
        if not isinstance(entries, Mapping):
            raise CapabilityError(
                f"entries of {context_type!r} must be a mapping {{key: {{field: value}}}}, "
                f"got {type(entries).__name__}",
                value=entries,
            )
        data[context_type] = {}
        for key, entry in entries.items():
            check_name(f"key of {context_type}", key)
            if not isinstance(entry, Mapping):
                raise CapabilityError(
                    f"entry {context_type}.{key} must be a mapping of fields, "
                    f"got {type(entry).__name__}: {entry!r:.80}",
                    value=entry,
                )
            data[context_type][key] = copy.deepcopy(dict(entry))
    return data
