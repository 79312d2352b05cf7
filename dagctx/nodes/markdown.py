"""MarkdownNode: a markdown file parsed into one child node per heading section.

The document is read like a :class:`~dagctx.nodes.text.TextNode` (it is one: file
changes are detected by mtime and size first and content second, and ``file_changed``
finds it by path) and parsed with markdown-it-py, so headings inside code fences, block
quotes or lists do not start sections. Each top-level heading starts a
:class:`MarkdownSectionNode`; sections nest by heading level (a ``###`` under the
preceding ``##``). The document node itself shows the title, the outline and the text
before the first heading (the preamble); each section shows its heading and its own text
(up to the next heading of any level).

Incremental: after an edit, sections are matched to the existing nodes by their heading
path (the headings from the top down to them, with a counter for repeated headings), so
only the sections whose text changed bump their version; new sections become new
children and vanished ones are removed, each with a trace. The document's own version
bumps only when its title, outline or preamble changed.

What comes from the file cannot forge the projection's structure (:mod:`dagctx._quote`):
headings, the title and the path are escaped onto one line; the preamble and each
section's body (and a summary's first lines) are fenced as ``markdown`` with a fence
longer than any backtick run in them, so they still read as markdown.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, ClassVar

from markdown_it import MarkdownIt

from dagctx._fs import display_path
from dagctx._plural import counted
from dagctx._quote import fence, inline
from dagctx.nodes.base import Node, NodeState
from dagctx.nodes.text import DEFAULT_MAX_BYTES, ReadResult, TextNode

if TYPE_CHECKING:
    pass

SUMMARY_LINES = 3
Key = tuple[tuple[str, int], ...]

_PARSER = MarkdownIt("commonmark")


@dataclass(slots=True)
class _Section:
    """A parsed heading section: its key (heading path), level, heading, own body lines."""

    key: Key
    level: int
    heading: str
    body: list[str]
    children: list[_Section] = field(default_factory=list)


def _trim(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def parse_sections(lines: list[str]) -> tuple[list[str], list[_Section]]:
    """Split markdown ``lines`` into (preamble, top-level sections with nested children)."""
    heads: list[tuple[int, str, int, int]] = []  # level, heading, first line, end line
    # markdown-it also ends a line at a lone "\r"; dagctx does not (dagctx._lines), so the
    # parser sees a space there and its line numbers stay ours.
    tokens = _PARSER.parse("\n".join(lines).replace("\r", " "))
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0 and token.map is not None:
            inline = tokens[i + 1] if i + 1 < len(tokens) else None
            text = inline.content.strip() if inline is not None and inline.type == "inline" else ""
            heads.append((int(token.tag[1:]), text, token.map[0], token.map[1]))
    preamble = _trim(lines[: heads[0][2]] if heads else lines)
    roots: list[_Section] = []
    stack: list[_Section] = []
    for n, (level, heading, _, body_start) in enumerate(heads):
        body_end = heads[n + 1][2] if n + 1 < len(heads) else len(lines)
        while stack and stack[-1].level >= level:
            stack.pop()
        siblings = stack[-1].children if stack else roots
        parent_key: Key = stack[-1].key if stack else ()
        repeat = sum(1 for s in siblings if s.heading == heading)
        section = _Section(
            (*parent_key, (heading, repeat)), level, heading, _trim(lines[body_start:body_end])
        )
        siblings.append(section)
        stack.append(section)
    return preamble, roots


def _fenced(lines: list[str]) -> list[str]:
    """``lines`` inside one ``markdown`` fence (none when there are no lines)."""
    return [fence("\n".join(lines), "markdown")] if lines else []


def _walk(sections: list[_Section], depth: int = 0) -> Iterator[tuple[int, _Section]]:
    for section in sections:
        yield depth, section
        yield from _walk(section.children, depth + 1)


class MarkdownSectionNode(Node):
    """One heading section of a markdown document: heading and own text (subsections are
    its children).

    COLLAPSED: the heading and its size; SUMMARY: the first lines and the subsection
    headings; DETAILS: the heading and the full text; ALL: the same under a breadcrumb
    of the headings above it.
    """

    type_name: ClassVar[str] = "markdown_section"
    default_state: ClassVar[NodeState] = NodeState.DETAILS
    default_priority: ClassVar[int] = 40

    __slots__ = ("body", "doc_path", "heading", "key", "level")

    def __init__(
        self, doc_path: str, key: Key, level: int, heading: str, body: list[str], **fields: Any
    ) -> None:
        super().__init__(**fields)
        self.doc_path = doc_path
        self.key: Key = tuple((str(h), int(n)) for h, n in key)
        self.level = level
        self.heading = heading
        self.body = list(body)

    def update(self, level: int, heading: str, body: list[str]) -> bool:
        """Adopt re-parsed content; return whether it changed (the version bumps then)."""
        if (level, heading, body) == (self.level, self.heading, self.body):
            return False
        what = "text changed" if body != self.body else "heading changed"
        self.level, self.heading, self.body = level, heading, list(body)
        self.mark_changed(f"section {heading!r}: {what}")
        return True

    def label(self) -> str:
        return f"{self.doc_path} § {self.heading}"

    def _head(self) -> str:
        return f"{'#' * self.level} {inline(self.heading)} (#{self.id})"

    def render_state(self, state: NodeState) -> str:
        n = len(self.body)
        if state == NodeState.COLLAPSED:
            heading = inline(self.heading)
            return f"- {'#' * self.level} {heading} ({counted(n, 'line')}) (#{self.id})"
        if state == NodeState.SUMMARY:
            first: list[str] = []
            for line in self.body:
                if not line.strip():
                    if first:
                        break
                    continue
                first.append(line)
            shown = first[:SUMMARY_LINES]
            lines = [self._head(), *_fenced(shown)]
            if n > len(shown):
                lines.append(f"[… {n - len(shown)} more lines]")
            subs = [c for c in self.children if isinstance(c, MarkdownSectionNode)]
            lines += [f"- {'#' * c.level} {inline(c.heading)}" for c in subs]
            return "\n".join(lines)
        return self.render_cut(state, n)

    def cuttable_lines(self) -> int:
        """How many body lines the projection may cut."""
        return len(self.body)

    def render_cut(self, state: NodeState, keep: int) -> str:
        """The heading and the first ``keep`` body lines, fenced (ALL: under the
        breadcrumb)."""
        lines = [self._head(), *_fenced(self.body[:keep])]
        if keep < len(self.body):
            lines.append(
                f"[… {len(self.body) - keep} more lines of this section cut to fit the budget]"
            )
        if state >= NodeState.ALL:
            crumbs = " › ".join([display_path(self.doc_path), *(h for h, _ in self.key)])
            lines.insert(0, f"[{inline(crumbs)}]")
        return "\n".join(lines)

    def data_dict(self) -> dict[str, Any]:
        return {
            "doc_path": self.doc_path,
            "key": [list(part) for part in self.key],
            "level": self.level,
            "heading": self.heading,
            "body": self.body,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> MarkdownSectionNode:
        key = tuple((str(h), int(n)) for h, n in data["key"])
        return cls(data["doc_path"], key, int(data["level"]), data["heading"], data["body"])


class MarkdownNode(TextNode):
    """A markdown file: title, outline and preamble here, one child per heading section.

    COLLAPSED: the title; SUMMARY: the outline of headings; DETAILS: the preamble (the
    projection walks into the sections for the rest); ALL: outline and preamble.
    """

    type_name: ClassVar[str] = "markdown"
    default_state: ClassVar[NodeState] = NodeState.DETAILS

    __slots__ = ("_shown", "_synced", "_tree", "preamble", "title")

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        root: str | os.PathLike[str] = ".",
        max_bytes: int = DEFAULT_MAX_BYTES,
        **node_fields: Any,
    ) -> None:
        # Set before TextNode.__init__, whose first read calls _load (and so _parse).
        self._tree: list[_Section] = []
        self.preamble: list[str] = []
        self.title = ""
        self._shown: tuple[Any, ...] = ()
        self._synced = False
        super().__init__(path, root=root, max_bytes=max_bytes, **node_fields)

    # -- parsing ----------------------------------------------------------------------

    def _load(self, read: ReadResult) -> bool:
        changed = super()._load(read)
        if changed:
            self._parse()
        return changed

    def _parse(self) -> None:
        self.preamble, self._tree = parse_sections(self.lines)
        h1 = next((s.heading for _, s in _walk(self._tree) if s.level == 1), None)
        first = self._tree[0].heading if self._tree else None
        self.title = h1 or first or PurePosixPath(self.path).name

    def _own_content(self) -> tuple[Any, ...]:
        """Everything the document node's own render depends on."""
        outline = tuple((s.level, s.heading) for _, s in _walk(self._tree))
        return (self.placeholder, self.notice, self.title, tuple(self.preamble), outline)

    @property
    def sections(self) -> list[MarkdownSectionNode]:
        """Every section node below the document, in document order."""
        out: list[MarkdownSectionNode] = []

        def collect(node: Node) -> None:
            for child in node.children:
                if isinstance(child, MarkdownSectionNode) and child.doc_path == self.path:
                    out.append(child)
                    collect(child)

        collect(self)
        return out

    def recompute(self, *, changed: bool = False, edit: bool = True) -> bool:
        """Re-read the file if its stat key changed (or ``changed``: the OS reported a
        change); re-parse it if its content changed, and update only the sections that
        changed. Return whether anything did. A document is never marked
        :attr:`~dagctx.nodes.text.TextNode.edited` (``edit`` is not read): its sections are
        nodes of their own, which keep their band when it changes."""
        if not self._synced:
            return self.sync_sections()
        if not self._reread(changed):
            return False
        return self.sync_sections()

    # -- sections ---------------------------------------------------------------------

    def sync_sections(self) -> bool:
        """Make the section children match the parsed document (add, update, remove,
        reorder) and bump the document's version if its own render changed (the trace
        names the sections added and removed). Return whether anything changed. Outside
        a graph nothing happens."""
        graph = self.graph
        if graph is None:
            return False
        first_sync, self._synced = not self._synced, True
        # Reverse document order: the first of duplicate keys wins, children come first.
        existing = {s.key: s for s in reversed(self.sections)}
        wanted = {s.key for _, s in _walk(self._tree)}
        removed = [node for node in existing.values() if node.key not in wanted]
        for node in removed:
            graph.remove(node)
        added: list[str] = []
        changed = self._place(self, self._tree, existing, added) or bool(removed)
        shown = self._own_content()
        if first_sync:
            self._shown = shown  # what the node shows from the start, not a change
        elif shown != self._shown:
            self._shown = shown
            self.mark_changed(self._describe(added, [n.heading for n in reversed(removed)]))
            changed = True
        return changed

    def _describe(self, added: list[str], removed: list[str]) -> str:
        if self.placeholder == "[file deleted]":
            return "file deleted"
        parts = [f"added {', '.join(map(repr, added))}"] if added else []
        parts += [f"removed {', '.join(map(repr, removed))}"] if removed else []
        if not parts:
            return "preamble or outline changed"
        return f"sections {'; '.join(parts)}"

    def _place(
        self,
        parent: Node,
        sections: list[_Section],
        existing: dict[Key, MarkdownSectionNode],
        added: list[str],
    ) -> bool:
        graph = self.graph
        assert graph is not None
        changed = False
        placed: list[MarkdownSectionNode] = []
        for section in sections:
            node = existing.get(section.key)
            if node is not None and node.graph is graph:
                changed |= node.update(section.level, section.heading, section.body)
            else:
                node = MarkdownSectionNode(
                    self.path, section.key, section.level, section.heading, section.body
                )
                graph.add(node)
                added.append(section.heading)
                changed = True
            changed |= self._put(parent, node, placed[-1] if placed else None)
            placed.append(node)
            changed |= self._place(node, section.children, existing, added)
        return changed

    def _put(
        self, parent: Node, node: MarkdownSectionNode, after: MarkdownSectionNode | None
    ) -> bool:
        """Link ``node`` under ``parent`` right after ``after`` (first section if None)."""
        graph = self.graph
        assert graph is not None
        children = parent.children
        sections = [c for c in children if isinstance(c, MarkdownSectionNode)]
        position = sections.index(after) + 1 if after is not None else 0
        if position < len(sections) and sections[position] is node:
            return False
        if node in children:
            graph.unlink(parent, node)
        if after is not None:
            graph.link(parent, node, after=after)
        else:
            first = next((i for i, c in enumerate(parent.children) if c in sections), None)
            graph.link(parent, node, index=first if first is not None else len(parent.children))
        return True

    # -- rendering --------------------------------------------------------------------

    def _outline(self) -> list[str]:
        return [f"{'  ' * depth}- {inline(s.heading)}" for depth, s in _walk(self._tree)]

    def _head(self) -> str:
        return f"### {display_path(self.path)} (#{self.id}): {inline(self.title)}"

    def render_state(self, state: NodeState) -> str:
        path = display_path(self.path)
        if self.placeholder is not None:
            if state == NodeState.COLLAPSED:
                return f"- {path} {self.placeholder} (#{self.id})"
            return f"{self._head()}\n{self.placeholder}"
        count = sum(1 for _ in _walk(self._tree))
        if state == NodeState.COLLAPSED:
            title = inline(self.title)
            return f"- {path}: {title} (markdown, {count} sections) (#{self.id})"
        if state == NodeState.SUMMARY:
            return "\n".join([self._head(), "outline:", *(self._outline() or ["(no headings)"])])
        return self.render_cut(state, len(self.preamble))

    def cuttable_lines(self) -> int:
        """How many preamble lines the projection may cut (sections are cut on their own)."""
        return 0 if self.placeholder is not None else len(self.preamble)

    def cut_steps(self, focus: str | None) -> int:
        """0: the document is cut by lines of its preamble (:meth:`render_cut`), what it
        shows, never by the outline of the whole file (its sections are cut on their own)."""
        return 0

    def focused_summary(self, focus: str) -> str | None:
        """None: the outline at SUMMARY is the tree of section headings whatever the focus
        (its sections are nodes of their own, each ranked by the focus)."""
        return None

    def render_cut(self, state: NodeState, keep: int) -> str:
        """The header and the first ``keep`` preamble lines, fenced (ALL: after the
        outline)."""
        lines = [self._head()]
        if state >= NodeState.ALL:
            lines += ["outline:", *(self._outline() or ["(no headings)"])]
        lines += _fenced(self.preamble[:keep])
        if keep < len(self.preamble):
            lines.append(
                f"[… {len(self.preamble) - keep} more preamble lines cut to fit the budget]"
            )
        if self.notice:
            lines.append(self.notice)
        return "\n".join(lines)

    # -- serialization ----------------------------------------------------------------

    def data_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "root": str(self.root),
            "max_bytes": self.max_bytes,
            "include_secrets": self.include_secrets,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> MarkdownNode:
        return cls(
            data["path"],
            root=data.get("root", "."),
            max_bytes=data.get("max_bytes", DEFAULT_MAX_BYTES),
            include_secrets=bool(data.get("include_secrets", False)),
        )
