"""ArtifactNode: code, command output or an error produced during the work.

An artifact holds text the agent made or received (a patch, a tool's output, a
traceback), unlike a :class:`~dagctx.nodes.text.TextNode`, which mirrors a file. Its
content changes only through :meth:`ArtifactNode.update`, which bumps the version only
when the content differs. Under budget pressure the projection may cut a long artifact to
the lines that fit: code keeps its first lines, output and errors keep their last lines
(where the result or the exception is).
"""

from __future__ import annotations

from typing import Any, ClassVar

from dagctx._lines import split_lines
from dagctx._plural import counted
from dagctx._quote import fence
from dagctx.errors import NodeFieldError
from dagctx.nodes.base import Node, NodeState

KINDS = ("code", "output", "error")
SUMMARY_LINES = 5


def check_artifact_fields(
    content: object, kind: object, language: object, title: object
) -> tuple[str, str]:
    """Validate an artifact's fields; return (content, kind).

    Raises:
        NodeFieldError: an unknown kind, or content / language / title of the wrong type.
    """
    if not isinstance(kind, str) or kind not in KINDS:
        raise NodeFieldError(
            f"unknown artifact kind {kind!r}; expected one of {', '.join(KINDS)}",
            field="kind",
            value=kind,
        )
    if not isinstance(content, str):
        raise NodeFieldError(
            f"artifact content must be a string, got {type(content).__name__}",
            field="content",
            value=content,
        )
    for field, value in (("language", language), ("title", title)):
        if value is not None and not isinstance(value, str):
            raise NodeFieldError(
                f"artifact {field} must be a string or None, got {value!r}",
                field=field,
                value=value,
            )
    return content, kind


class ArtifactNode(Node):
    """A piece of code, output or error text, with an optional language and title."""

    type_name: ClassVar[str] = "artifact"
    default_state: ClassVar[NodeState] = NodeState.DETAILS
    default_priority: ClassVar[int] = 65

    __slots__ = ("_lines", "content", "kind", "language", "title")

    def __init__(
        self,
        content: str,
        *,
        kind: str = "code",
        language: str | None = None,
        title: str | None = None,
        **node_fields: Any,
    ) -> None:
        content, kind = check_artifact_fields(content, kind, language, title)
        super().__init__(**node_fields)
        self.kind = kind
        self.language = language
        self.title = title
        self.content = content
        self._lines = split_lines(content)

    @property
    def lines(self) -> list[str]:
        return self._lines

    def update(self, content: str) -> bool:
        """Replace the content; return whether it changed (the version bumps only then).

        Raises:
            NodeFieldError: ``content`` is not a string.
        """
        check_artifact_fields(content, self.kind, self.language, self.title)
        if content == self.content:
            return False
        self.content, self._lines = content, split_lines(content)
        n = len(self._lines)
        self.mark_changed(f"content updated ({n} line{'s' * (n != 1)})")
        return True

    # -- rendering --------------------------------------------------------------------

    def label(self) -> str:
        return self.title or f"{self.kind} {self.id}"

    def _header(self) -> str:
        name = f": {self.title}" if self.title else ""
        return f"### {self.kind.capitalize()}{name} (#{self.id})"

    def _keeps_tail(self) -> bool:
        return self.kind != "code"

    def _fence(self, body: str) -> str:
        return fence(body, self.language or "")

    def render_state(self, state: NodeState) -> str:
        n = len(self._lines)
        if state == NodeState.COLLAPSED:
            facts = ", ".join([*([self.language] if self.language else []), counted(n, "line")])
            return f"- {self.kind}: {self.label()} ({facts}) (#{self.id})"
        if state == NodeState.SUMMARY:
            tail = self._keeps_tail()
            shown = self._lines[-SUMMARY_LINES:] if tail else self._lines[:SUMMARY_LINES]
            where = "last" if tail else "first"
            rest = (
                f"({counted(n, 'line')}; {where} {len(shown)})"
                if n > len(shown)
                else f"({counted(n, 'line')})"
            )
            return "\n".join([self._header(), rest, *shown])
        return self.render_cut(state, n)

    def cuttable_lines(self) -> int:
        """How many lines the projection may cut (all of them)."""
        return len(self._lines)

    def render_cut(self, state: NodeState, keep: int) -> str:
        """Render at DETAILS (plain) or ALL (numbered lines, sizes) keeping ``keep`` lines:
        the first ones for code, the last ones for output and errors."""
        n = len(self._lines)
        keep = max(0, min(keep, n))
        start = n - keep if self._keeps_tail() else 0
        shown = self._lines[start : start + keep]
        if state >= NodeState.ALL:
            width = len(str(n))
            shown = [f"{start + i + 1:>{width}} {line}" for i, line in enumerate(shown)]
        parts = [self._header(), self._fence("\n".join(shown))]
        if keep < n:
            first, last = (1, n - keep) if self._keeps_tail() else (keep + 1, n)
            parts.insert(1 if self._keeps_tail() else 2, self._cut_marker(n - keep, first, last))
        if state >= NodeState.ALL:
            parts.append(f"({counted(n, 'line')}, {len(self.content)} chars)")
        return "\n".join(parts)

    @staticmethod
    def _cut_marker(cut: int, first: int, last: int) -> str:
        return f"[… {counted(cut, 'line')} cut to fit the budget: lines {first}-{last}]"

    # -- serialization ----------------------------------------------------------------

    def data_dict(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "kind": self.kind,
            "language": self.language,
            "title": self.title,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> ArtifactNode:
        return cls(
            data["content"],
            kind=data.get("kind", "code"),
            language=data.get("language"),
            title=data.get("title"),
        )
