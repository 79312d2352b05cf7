"""Node types by type name, so serialized nodes come back as the right class.

Defining a :class:`~dagctx.nodes.base.Node` subclass with a ``type_name`` registers it;
adding a node type means adding one module, never editing a dispatch chain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dagctx.errors import GraphError

if TYPE_CHECKING:
    from dagctx.nodes.base import Node

_NODE_TYPES: dict[str, type[Node]] = {}


def register_node_type(name: str, cls: type[Node]) -> None:
    """Register ``cls`` under ``name``; a second class may not take a taken name."""
    existing = _NODE_TYPES.get(name)
    if existing is not None and existing.__qualname__ != cls.__qualname__:
        raise GraphError(f"node type name {name!r} is taken by {existing.__qualname__}", value=name)
    _NODE_TYPES[name] = cls


def resolve_node_type(name: Any) -> type[Node]:
    """Return the class registered under ``name``.

    Raises:
        GraphError: no class is registered under ``name``.
    """
    cls = _NODE_TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        known = ", ".join(sorted(_NODE_TYPES))
        raise GraphError(f"unknown node type {name!r}; registered types: {known}", value=name)
    return cls


def node_types() -> dict[str, type[Node]]:
    """A copy of the registry: type name → class."""
    return dict(_NODE_TYPES)
