"""The outline value types: :class:`Entry` (one definition) and :class:`Outline` (a file's).

Owns how an outline reads as text. Imports nothing from dagctx.
"""

from __future__ import annotations

from dataclasses import dataclass

SIGNATURE_CHARS = 160  # a signature longer than this is cut with "…"
DOC_CHARS = 100  # the same for the first line of a docstring
DEFAULT_MAX_ENTRIES = 80  # entries :meth:`Outline.render` shows by default


def clip(text: str, limit: int) -> str:
    """``text`` with runs of whitespace made one space, cut to ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass(frozen=True, slots=True)
class Entry:
    """One definition (or heading, or key) of a file.

    ``start`` and ``end`` are 1-based line numbers, inclusive; ``parent`` is the index in
    :attr:`Outline.entries` of the entry this one is nested in (None: top level) and
    ``depth`` how deep that nesting goes (0: top level). ``signature`` is the definition's
    head as written, on one line; ``doc`` the first line of its docstring or leading doc
    comment ("" if none).
    """

    name: str
    kind: str
    start: int
    end: int
    signature: str
    doc: str = ""
    depth: int = 0
    parent: int | None = None


@dataclass(frozen=True, slots=True)
class Outline:
    """A file's outline: its entries in source order and how they were found.

    ``source`` is ``"tree-sitter"``, ``"json"``, ``"toml"``, ``"yaml"``, ``"markdown"`` or
    ``"regex"`` (the fallback). ``parsed_lines`` is how many of the ``lines`` lines were
    looked at: fewer when the text was longer than the parse cap.
    """

    language: str
    source: str
    entries: tuple[Entry, ...]
    lines: int
    parsed_lines: int

    def render(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> list[str]:
        """The outline as text lines: one per entry, indented two spaces per nesting level,
        ``signature  [Lstart-end]`` and the doc line in quotes. Over ``max_entries`` the
        deepest levels go first (top-level definitions stay), then the tail, and a last
        line says how many entries were left out. Empty when there are no entries."""
        shown = self.entries
        if len(shown) > max_entries:
            depth = max(e.depth for e in shown)
            while depth > 0 and sum(e.depth <= depth for e in shown) > max_entries:
                depth -= 1
            shown = tuple(e for e in shown if e.depth <= depth)[:max_entries]
        out = [_line(e) for e in shown]
        if len(shown) < len(self.entries):
            out.append(f"[… {len(self.entries) - len(shown)} more entries not shown]")
        if self.parsed_lines < self.lines:
            out.append(f"[outline of lines 1-{self.parsed_lines} only, of {self.lines}]")
        return out


def _line(entry: Entry) -> str:
    where = f"L{entry.start}" if entry.start == entry.end else f"L{entry.start}-{entry.end}"
    text = f"{'  ' * entry.depth}{entry.signature}  [{where}]"
    return f'{text}  "{entry.doc}"' if entry.doc else text
