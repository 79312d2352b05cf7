"""The outline value types: :class:`Entry` (one definition) and :class:`Outline` (a file's).

Owns how an outline reads as text. Imports nothing from dagctx.
"""

from __future__ import annotations

from collections.abc import Sequence
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

    ``source`` is ``"tree-sitter"``, ``"json"``, ``"toml"``, ``"yaml"``, ``"markdown"``,
    ``"rst"`` or ``"regex"`` (the fallback). ``parsed_lines`` is how many of the ``lines``
    lines were looked at: fewer when the text was longer than the parse cap. ``doc`` is
    the first line of what the file says of itself (a module docstring), "" if none.
    """

    language: str
    source: str
    entries: tuple[Entry, ...]
    lines: int
    parsed_lines: int
    doc: str = ""

    def render(
        self, max_entries: int = DEFAULT_MAX_ENTRIES, max_chars: int | None = None
    ) -> list[str]:
        """The outline as text lines: the file's :attr:`doc` in quotes, then one per entry,
        indented two spaces per nesting level, ``signature  [Lstart-end]`` and the doc
        line in quotes. Empty when there are no entries.

        Without ``max_chars``: over ``max_entries`` the deepest levels go first (top-level
        definitions stay), then the tail, and a last line says how many entries were left
        out. With ``max_chars`` (see :meth:`compact`): the lines shown, the markers of what
        is left out (where it was) included, take at most that many characters.
        """
        if max_chars is not None:
            return self.compact(max_chars)
        if not self.entries:
            return []
        shown = self.entries
        if len(shown) > max_entries:
            depth = max(e.depth for e in shown)
            while depth > 0 and sum(e.depth <= depth for e in shown) > max_entries:
                depth -= 1
            shown = tuple(e for e in shown if e.depth <= depth)[:max_entries]
        out = [*self._head(), *map(_line, shown)]
        if len(shown) < len(self.entries):
            out.append(f"[… {len(self.entries) - len(shown)} more entries not shown]")
        return out + self._partial()

    def compact(self, max_chars: int) -> list[str]:
        """The outline in at most ``max_chars`` characters, the markers of what is left out
        included: the file's :attr:`doc` line when it leaves room for a line of an entry
        or a marker, then a line of :meth:`_lines` for the largest share of entry lines
        whose whole text fits (when not even the one marker of all entries fits, that
        marker). Empty when there are no entries.
        """
        return self._outline(max_chars, ())[0]

    def focused(self, max_chars: int, wanted: Sequence[int]) -> list[str] | None:
        """The outline in at most ``max_chars`` characters (as :meth:`compact`) that shows
        the entries at the indexes ``wanted`` (best first: those matching a focus) before
        any other, each with the entries it is nested in, as many of them as fit; the
        rest as :meth:`compact` takes them. None when that shows none of them that
        :meth:`compact` does not show (then it is that outline: every one is shown anyway,
        or none fits) or there are no entries."""
        lines, changed = self._outline(max_chars, tuple(wanted))
        return lines if changed else None

    def _outline(self, max_chars: int, wanted: tuple[int, ...]) -> tuple[list[str], bool]:
        """(:meth:`focused`'s lines, or :meth:`compact`'s when it shows every entry of
        ``wanted``; whether they are :meth:`focused`'s)."""
        if not self.entries:
            return [], False
        head = self._head()
        rows = [_line(e) if e.depth == 0 else _line(e, doc=False) for e in self.entries]
        least = self._lines(self._choose(rows, 0, ()), rows)  # the marker of every entry
        if head and _chars(head) + _chars(least) <= max_chars:
            max_chars -= _chars(head)
        else:
            head = []
        lines, shown = self._fit(rows, max_chars, ())
        if wanted and not all(shown[k] for k in wanted):
            focused, kept = self._fit(rows, max_chars, wanted)
            if any(kept[k] and not shown[k] for k in wanted):
                return head + focused + self._partial(), True
        return head + lines + self._partial(), False

    def _fit(
        self, rows: list[str], max_chars: int, wanted: tuple[int, ...]
    ) -> tuple[list[str], list[bool]]:
        """The entry lines and markers of :meth:`_outline` in at most ``max_chars``, and
        which entries they show: the most entry characters (``rows`` are the entries'
        lines) whose lines and markers fit."""
        shown = self._choose(rows, max_chars, wanted)
        lines = self._lines(shown, rows)
        if _chars(lines) <= max_chars:
            return lines, shown
        low, high = 0, max_chars  # entry characters: the most whose lines and markers fit
        while low < high:
            middle = (low + high + 1) // 2
            if _chars(self._lines(self._choose(rows, middle, wanted), rows)) <= max_chars:
                low = middle
            else:
                high = middle - 1
        shown = self._choose(rows, low, wanted)
        return self._lines(shown, rows), shown

    def _choose(self, rows: list[str], max_chars: int, wanted: tuple[int, ...]) -> list[bool]:
        """Which entries are shown when their lines (``rows``) take at most ``max_chars``
        characters, markers apart.

        First each entry of ``wanted`` in turn with the entries it is nested in, while
        their lines fit; then level by level — every top-level definition in source order
        first, then what they nest, one level at a time — each while its line fits (an
        entry whose line does not fit is skipped, and with it what it nests). Nested
        entries are shown without their doc line (``rows`` has them so).
        """
        entries = self.entries
        shown = [False] * len(entries)
        used = 0
        for k in wanted:
            chain: list[int] = []
            at: int | None = k
            while at is not None and not shown[at]:
                chain.append(at)
                at = entries[at].parent
            cost = sum(len(rows[j]) + 1 for j in chain)
            if chain and used + cost <= max_chars:
                for j in chain:
                    shown[j] = True
                used += cost
        for depth in range(max((e.depth for e in entries), default=-1) + 1):
            for k, e in enumerate(entries):
                if e.depth != depth or shown[k] or (e.parent is not None and not shown[e.parent]):
                    continue
                cost = len(rows[k]) + 1
                if used + cost <= max_chars:
                    shown[k] = True
                    used += cost
        return shown

    def _lines(self, shown: list[bool], rows: list[str]) -> list[str]:
        """The outline lines of the entries ``shown`` (their ``rows``), in source order;
        each run of left-out siblings (with what they nest) becomes one line at their
        indentation, ``… N more definitions (lines a-b)``."""
        entries = self.entries
        out: list[str] = []
        run: list[int] = []  # the current run of left-out entries (their subtrees included)

        def close() -> None:
            if run:
                head = entries[run[0]]
                first = min(entries[k].start for k in run)
                last = max(entries[k].end for k in run)
                out.append(
                    f"{'  ' * head.depth}… {len(run)} more definition{'s' * (len(run) > 1)}"
                    f" (lines {first}-{last})"
                )
                run.clear()

        for k, e in enumerate(entries):
            if shown[k]:
                close()
                out.append(rows[k])
                continue
            if run and e.parent is not None and not shown[e.parent]:
                run.append(k)  # nested in a left-out entry: part of its run
                continue
            if run and entries[run[0]].parent != e.parent:
                close()
            run.append(k)
        close()
        return out

    def _head(self) -> list[str]:
        """The line of the file's :attr:`doc`, in quotes (none without one)."""
        return [f'"{self.doc}"'] if self.doc else []

    def _partial(self) -> list[str]:
        """The line saying only part of the text was looked at (none when all was)."""
        if self.parsed_lines < self.lines:
            return [f"[outline of lines 1-{self.parsed_lines} only, of {self.lines}]"]
        return []


def _chars(lines: list[str]) -> int:
    """The characters of ``lines`` shown one per line."""
    return sum(len(line) + 1 for line in lines)


def _line(entry: Entry, *, doc: bool = True) -> str:
    where = f"L{entry.start}" if entry.start == entry.end else f"L{entry.start}-{entry.end}"
    text = f"{'  ' * entry.depth}{entry.signature}  [{where}]"
    return f'{text}  "{entry.doc}"' if doc and entry.doc else text
