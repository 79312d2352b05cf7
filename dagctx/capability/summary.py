"""How a stored capability context is shown to a model: bounded previews and access paths.

Owns :func:`summarize` (the default ``get_summary()`` of every context: field names with
long strings cut and long collections shortened, so a summary stays small whatever the
size of the data) and :func:`access_path` (how generated code reaches an entry:
``context.TYPE.key``). Pure functions over JSON data; they know nothing of classes,
registries or the reserved metadata field, which callers strip first.
"""

from __future__ import annotations

import keyword
from collections.abc import Mapping
from typing import Any

SUMMARY_TEXT_CHARS = 80
SUMMARY_ITEMS = 3
SUMMARY_KEYS = 5
SUMMARY_FIELDS = 20
SUMMARY_DEPTH = 2


def summarize(context_type: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``{"type": context_type, "fields": {...}}`` with at most
    :data:`SUMMARY_FIELDS` fields, each a bounded :func:`preview` of its value."""
    names = list(data)
    fields = {str(name): preview(data[name]) for name in names[:SUMMARY_FIELDS]}
    if len(names) > SUMMARY_FIELDS:
        fields["…"] = f"{len(names) - SUMMARY_FIELDS} more fields"
    return {"type": context_type, "fields": fields}


def preview(value: Any, depth: int = 0) -> Any:
    """Return a JSON-safe, bounded stand-in for ``value``: strings cut after
    :data:`SUMMARY_TEXT_CHARS` characters, mappings and sequences shortened, nesting below
    :data:`SUMMARY_DEPTH` replaced by a count, anything else shown through ``str``."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        if len(value) <= SUMMARY_TEXT_CHARS:
            return value
        return f"{value[:SUMMARY_TEXT_CHARS]}… (+{len(value) - SUMMARY_TEXT_CHARS} chars)"
    if isinstance(value, Mapping):
        if depth >= SUMMARY_DEPTH:
            return f"<mapping of {len(value)} keys>"
        keys = list(value)
        shown = {
            preview(str(k), depth + 1): preview(value[k], depth + 1) for k in keys[:SUMMARY_KEYS]
        }
        if len(keys) > SUMMARY_KEYS:
            shown["…"] = f"{len(keys) - SUMMARY_KEYS} more keys"
        return shown
    if isinstance(value, list | tuple | set | frozenset):
        items = list(value)
        if depth >= SUMMARY_DEPTH:
            return f"<list of {len(items)} items>"
        shown_items = [preview(item, depth + 1) for item in items[:SUMMARY_ITEMS]]
        if len(items) > SUMMARY_ITEMS:
            shown_items.append(f"… {len(items) - SUMMARY_ITEMS} more items")
        return shown_items
    return preview(str(value), depth)


def access_path(context_type: str, key: str) -> str:
    """Return how code reaches the entry: ``context.TYPE.key``, or the item form
    ``context['TYPE']['key']`` when either name is not a usable attribute name."""

    def usable(name: str) -> bool:
        return name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_")

    if usable(context_type) and usable(key):
        return f"context.{context_type}.{key}"
    return f"context[{context_type!r}][{key!r}]"
