"""CapabilityNode: one typed capability result in the context DAG, budgeted like the rest.

A capability result (a :class:`~dagctx.capability.CapabilityContext`, or a
:class:`~dagctx.capability.RawContext` when its class is unknown) stored under a key
renders at four levels of detail:

- COLLAPSED: one line naming the type, the key and the category;
- SUMMARY: its ``get_summary()``;
- DETAILS: the summary and its ``get_access_details(key)`` (how code reaches the data);
- ALL: the access details and the full data as JSON.

So a result of any size costs what the budget allows: the projection degrades it one
level at a time instead of overflowing the prompt.

Invariants kept here:

- the node holds its own copy of the context, rebuilt from the JSON dump
  (``model_dump(mode="json")``): changing the caller's object afterwards changes nothing,
  and what the node renders is exactly what :meth:`Node.from_dict` brings back;
- the content changes only through :meth:`CapabilityNode.update`, which bumps the
  version (with a trace) only when the type's data, class or category differ (early
  cutoff);
- rendering never raises: a ``get_summary`` or ``get_access_details`` that fails or
  returns something that is not JSON renders a one-line placeholder naming the error.

Not here: finding the node of a type/key in a session (the ``capability`` verb in
:mod:`dagctx.session.capability`) and the three-level dict of an agent state
(:class:`~dagctx.capability.ContextManager`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import ValidationError

from dagctx.capability import (
    CapabilityContext,
    CapabilityError,
    CapabilityTypeError,
    RawContext,
    StoredContext,
    context_registry,
)
from dagctx.capability.context import check_name, dump_context, qualified_name
from dagctx.capability.summary import access_path
from dagctx.nodes.base import Node, NodeState

_CHANGED_FIELDS_SHOWN = 5


@dataclass(frozen=True, slots=True)
class HeldContext:
    """A validated, private copy of a capability context, ready for a node to hold.

    ``data`` is the JSON dump the copy was rebuilt from; ``category`` the class's
    ``CONTEXT_CATEGORY`` (or the one given for an untyped context).
    """

    context: StoredContext
    data: dict[str, Any]
    category: str | None

    @property
    def context_type(self) -> str:
        return self.context.context_type


def hold(context: object, key: str, *, category: str | None = None) -> HeldContext:
    """Return a private copy of ``context`` (stored under ``key``) rebuilt from its JSON dump.

    ``category`` is used only for an untyped :class:`RawContext`; a typed context's
    category is its class's ``CONTEXT_CATEGORY``.

    Raises:
        CapabilityTypeError: ``context`` is neither a CapabilityContext nor a RawContext,
            cannot be dumped to JSON, or does not validate again from its own dump.
        CapabilityError: ``key`` (or ``category``) is not a non-empty string.
    """
    check_name("capability key", key)
    if category is not None:
        check_name("capability category", category)
    if isinstance(context, RawContext):
        data = dump_context(context, f"{context.context_type}.{key}")
        return HeldContext(RawContext(context.context_type, data), data, category)
    if not isinstance(context, CapabilityContext):
        raise CapabilityTypeError(
            f"a capability node holds a CapabilityContext or a RawContext, "
            f"got {type(context).__name__}: {context!r:.80}",
            value=context,
        )
    where = f"{context.CONTEXT_TYPE}.{key}"
    data = dump_context(context, where)
    try:  # validated from a fresh parse of the dump, so the copy shares nothing with ``data``
        copy = type(context).model_validate(json.loads(json.dumps(data)))
    except ValidationError as error:
        raise CapabilityTypeError(
            f"{qualified_name(type(context))} stored as {where} does not validate again "
            f"from its own JSON dump, so it could not be saved and loaded: "
            f"{error.error_count()} error(s), first: {error.errors()[0]['msg']}",
            value=context,
        ) from error
    return HeldContext(copy, data, context.CONTEXT_CATEGORY)


def rebuild(context_type: str, data: dict[str, Any]) -> StoredContext:
    """Return the typed context of ``context_type`` rebuilt from JSON ``data`` through the
    default registry, or a :class:`RawContext` when no class is registered for the type or
    the registered class no longer accepts the data (its schema changed): the data is kept
    either way."""
    cls = context_registry.get(context_type)
    if cls is not None:
        try:
            return cls.model_validate(json.loads(json.dumps(data)))
        except ValidationError:
            pass
    return RawContext(context_type, data)


class CapabilityNode(Node):
    """A capability result stored under ``key`` (see the module docstring for the states).

    Args:
        context: a :class:`~dagctx.capability.CapabilityContext` (or a
            :class:`~dagctx.capability.RawContext`); the node keeps its own copy.
        key: the context key (``"step_1"``), unique per type in a session.
        category: the category of an untyped RawContext (ignored for typed contexts).

    Raises:
        CapabilityTypeError, CapabilityError: as :func:`hold`.
    """

    type_name: ClassVar[str] = "capability"
    default_state: ClassVar[NodeState] = NodeState.DETAILS
    default_priority: ClassVar[int] = 50

    __slots__ = ("_held", "key")

    def __init__(
        self,
        context: StoredContext,
        key: str,
        *,
        category: str | None = None,
        **node_fields: Any,
    ) -> None:
        held = hold(context, key, category=category)
        super().__init__(**node_fields)
        self.key = key
        self._held = held

    # -- content ----------------------------------------------------------------------

    @property
    def context_type(self) -> str:
        """The ``CONTEXT_TYPE`` the result is stored under."""
        return self._held.context_type

    @property
    def category(self) -> str | None:
        """The ``CONTEXT_CATEGORY`` (None for an untyped context without one)."""
        return self._held.category

    @property
    def context(self) -> StoredContext:
        """A copy of the held context (changing it does not change the node; store it
        again with :meth:`update` or ``Session.capability``)."""
        held = self._held.context
        if isinstance(held, RawContext):
            return RawContext(held.context_type, held.to_dict())
        return held.model_copy(deep=True)

    @property
    def data(self) -> dict[str, Any]:
        """A copy of the full data as JSON (what ALL renders and :meth:`to_dict` stores)."""
        data: dict[str, Any] = json.loads(json.dumps(self._held.data))
        return data

    def update(self, context: StoredContext) -> bool:
        """Hold ``context`` instead; return whether the node changed.

        Version + 1 and a trace only when the data, the class or the category differ.

        Raises:
            CapabilityError: ``context`` has another type than the node.
            CapabilityTypeError: as :func:`hold`. Nothing changes on error.
        """
        return self.adopt(hold(context, self.key, category=self._held.category))

    def adopt(self, held: HeldContext) -> bool:
        """Hold an already validated copy (from :func:`hold`); return whether it changed.

        Raises:
            CapabilityError: ``held`` has another type than the node (nothing changes).
        """
        if held.context_type != self.context_type:
            raise CapabilityError(
                f"#{self.id} holds {self.label()}; a {held.context_type} context cannot "
                f"replace it (store it under its own type)",
                value=held.context_type,
            )
        old = self._held
        same_class = type(old.context) is type(held.context)
        if same_class and old.category == held.category and old.data == held.data:
            return False
        self._held = held
        self.mark_changed(_describe_update(old, held))
        return True

    # -- rendering --------------------------------------------------------------------

    def label(self) -> str:
        return f"{self.context_type}.{self.key}"

    def _title(self) -> str:
        category = f" [{self.category}]" if self.category else ""
        return f"capability {self.label()}{category} (#{self.id})"

    def render_state(self, state: NodeState) -> str:
        if state == NodeState.COLLAPSED:
            fields = len(self._held.data)
            return f"- {self._title()}: {fields} field{'s' * (fields != 1)}"
        context = self._held.context
        lines = [f"### {self._title()}"]
        if state in (NodeState.SUMMARY, NodeState.DETAILS):
            lines.append("summary: " + _json_of(context.get_summary, "get_summary()"))
        if state >= NodeState.DETAILS:
            details = _json_of(lambda: context.get_access_details(self.key), "get_access_details()")
            lines.append(f"access {access_path(self.context_type, self.key)}: {details}")
        if state == NodeState.ALL:
            lines.append("data: " + _json_of(lambda: self._held.data, "data"))
        return "\n".join(lines)

    # -- serialization ----------------------------------------------------------------

    def data_dict(self) -> dict[str, Any]:
        return {
            "context_type": self.context_type,
            "key": self.key,
            "category": self.category,
            "data": self.data,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> CapabilityNode:
        """Rebuild the node; the context comes back typed when its type is registered in
        the default registry and accepts the data, else as a :class:`RawContext`."""
        context_type, fields = data["context_type"], data["data"]
        check_name("capability context type", context_type)
        if not isinstance(fields, dict):
            raise CapabilityError(
                f"capability data of {context_type!r} must be a dict of fields, "
                f"got {type(fields).__name__}",
                value=fields,
            )
        return cls(rebuild(context_type, fields), data["key"], category=data.get("category"))


def _json_of(produce: Callable[[], Any], what: str) -> str:
    """``produce()`` as one line of JSON, or a placeholder naming what failed (user code
    must not break the projection)."""
    try:
        return json.dumps(produce(), ensure_ascii=False, default=str)
    except Exception as error:  # any failure of user code becomes a placeholder
        return f"[{what} failed: {type(error).__name__}: {error}]"


def _describe_update(old: HeldContext, new: HeldContext) -> str:
    if type(old.context) is not type(new.context):
        return f"replaced by a {type(new.context).__name__}"
    names = sorted(
        name
        for name in old.data.keys() | new.data.keys()
        if old.data.get(name, _MISSING) != new.data.get(name, _MISSING)
    )
    if not names:
        return f"category: {old.category} → {new.category}"
    shown = ", ".join(names[:_CHANGED_FIELDS_SHOWN])
    if len(names) > _CHANGED_FIELDS_SHOWN:
        shown += f" and {len(names) - _CHANGED_FIELDS_SHOWN} more"
    return f"updated {shown}"


_MISSING = object()
