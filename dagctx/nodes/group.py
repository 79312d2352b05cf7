"""GroupNode: a named set of children, shown as a summary or expanded.

At DETAILS and ALL the projection renders the group's header and walks its children (at
DETAILS no header for a directory holding only directories, whose headings carry their
paths: see :meth:`GroupNode._passes_through`; under a budget, none either for one whose
files are all left out: :meth:`~dagctx.projection.allocation.Allocation._mute_headings`). At
SUMMARY it shows the group's summary instead of the children. The default summarizer is
deterministic (one line per child, from the child's COLLAPSED render) and is computed at
render time, so it is always fresh. A custom summarizer (sync or async callable, e.g. an
LLM) is run only at tick: when a child changes, the summary goes stale and SUMMARY shows
the children collapsed until the next tick refreshes it.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

from dagctx._fs import display_path
from dagctx._plural import counted
from dagctx.errors import GraphError
from dagctx.nodes.base import Node, NodeState, check_column, of_types

Summarizer = Callable[["GroupNode", Sequence[Node]], "str | Awaitable[str]"]

SUMMARY_LINES = 50
_TEXTS = of_types(str, type(None))


def _str_or_none(value: Any) -> bool:
    return value is None or type(value) is str


def default_summary(children: Sequence[Node]) -> str:
    """One line per child (its COLLAPSED render), at most :data:`SUMMARY_LINES` lines."""
    lines = [child.render(NodeState.COLLAPSED).split("\n", 1)[0] for child in children]
    lines = [line if line.startswith("- ") else f"- {line}" for line in lines[:SUMMARY_LINES]]
    if len(children) > SUMMARY_LINES:
        lines.append(f"- … and {len(children) - SUMMARY_LINES} more")
    return "\n".join(lines)


class GroupNode(Node):
    """A named group of child nodes."""

    type_name: ClassVar[str] = "group"
    default_state: ClassVar[NodeState] = NodeState.SUMMARY
    default_priority: ClassVar[int] = 60
    data_checked: ClassVar[bool] = True  # from_data takes strings or None only
    column_keys: ClassVar[tuple[str, ...]] = ("title", "summary", "notice")

    __slots__ = ("_summary", "notice", "stale", "summarizer", "title")

    def __init__(
        self, title: str | None = None, *, summarizer: Summarizer | None = None, **fields: Any
    ) -> None:
        super().__init__(**fields)
        self.title = title
        self.summarizer = summarizer
        self._summary: str | None = None
        self.stale = summarizer is not None
        #: A line shown under the header (a scanned directory that could not be listed).
        self.notice: str | None = None

    def label(self) -> str:
        """The title as shown (a directory's name that is not UTF-8 with ``\\xNN``
        escapes), or the id."""
        return display_path(self.title) if self.title else self.id

    def on_child_changed(self, child: Node, description: str) -> None:
        """A change below changes the SUMMARY render (and makes a custom summary stale),
        so the group's version goes up (a derived change)."""
        if self.summarizer is not None:
            self.stale = True
        self.mark_changed(f"below: {description}", derived=True)

    @property
    def summary(self) -> str | None:
        """The current summary, or None while a custom summary is stale or not yet made."""
        if self.summarizer is None:
            return default_summary(self.children)
        return None if self.stale else self._summary

    async def refresh_summary(self) -> bool:
        """Run the custom summarizer if the summary is stale; return whether it changed."""
        if self.summarizer is None or not self.stale:
            return False
        result = self.summarizer(self, self.children)
        text = await result if inspect.isawaitable(result) else result
        self._summary, self.stale = str(text), False
        self.mark_changed("summary refreshed")
        return True

    def _child_count(self) -> int:
        return self.graph.child_count(self) if self.graph is not None else 0

    def render_state(self, state: NodeState) -> str:
        text = self._render(state)
        return text if self.notice is None else f"{text}\n{self.notice}"

    def _render(self, state: NodeState) -> str:
        if state == NodeState.COLLAPSED:
            n = self._child_count()
            return f"## {self.label()} (#{self.id}, {counted(n, 'child', 'children')}, collapsed)"
        if state == NodeState.SUMMARY:
            summary = self.summary
            if summary is None:
                stale = default_summary(self.children)
                return f"## {self.label()} (#{self.id}, summary pending)\n{stale}"
            return f"## {self.label()} (#{self.id}, summary)\n{summary}"
        if state == NodeState.ALL:
            children = counted(self._child_count(), "child", "children")
            return f"## {self.label()} (#{self.id}, {children})"
        if self.notice is None and self._passes_through():
            return ""
        return f"## {self.label()} (#{self.id})"

    def _passes_through(self) -> bool:
        """Whether this is a directory (a title ending in ``/``) holding only directories
        below it, each titled with its path (``src/main/`` in ``src/``): their headings
        say where they are, so its own heading would say nothing (a Java tree has a
        chain of them, ``src/``, ``src/main/``, ``src/main/java/``, … before any file).
        Linking or unlinking a child changes the version, so a render kept per version
        stays right."""
        title = self.title
        if not title or not title.endswith("/"):
            return False
        children = self.children
        return bool(children) and all(
            isinstance(child, GroupNode)
            and child.title is not None
            and child.title.startswith(title)
            for child in children
        )

    def data_dict(self) -> dict[str, Any]:
        return {"title": self.title, "summary": self._summary, "notice": self.notice}

    def snapshot(self) -> dict[str, Any] | None:
        """Nothing read from outside (a group's fields are all in :meth:`data_dict`): an
        empty snapshot, so a session saves its groups together as one block of columns
        (:meth:`~dagctx.nodes.base.Node.to_columns`); None for a subclass, saved one by
        one."""
        return {} if type(self) is GroupNode else None

    @classmethod
    def _restore_columns(cls, nodes: list[Node], columns: dict[str, list[Any]]) -> None:
        """Give ``nodes`` (made by :meth:`~dagctx.nodes.base.Node.from_columns`) the
        title, summary and notice of ``columns``, each checked to be a string or None
        (no summarizer: a custom one is never saved).

        Raises:
            GraphError: a bad value (named), or ``cls`` is a subclass (never saved as
                columns).
        """
        if cls is not GroupNode:
            raise GraphError(f"{cls.type_name} nodes are not saved as columns", value=cls.type_name)
        for key in cls.column_keys:
            check_column(columns[key], key, _str_or_none, rule="a string or None", whole=_TEXTS)
        rows = zip(nodes, columns["title"], columns["summary"], columns["notice"], strict=True)
        for node, title, summary, notice in rows:
            assert isinstance(node, GroupNode)
            node.title, node.summarizer, node._summary = title, None, summary
            node.stale, node.notice = False, notice

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> GroupNode:
        """A group of ``data`` (:meth:`data_dict`): its title, summary and notice, each a
        string or None (a notice of another type is dropped).

        Raises:
            TypeError: the title or the summary is neither a string nor None.
        """
        title, summary = data.get("title"), data.get("summary")
        for name, value in (("title", title), ("summary", summary)):
            if value is not None and type(value) is not str:
                raise TypeError(f"a group's {name} must be a string or None, got {value!r}")
        group = cls(title)
        group._summary = summary
        notice = data.get("notice")
        group.notice = notice if isinstance(notice, str) else None
        return group
