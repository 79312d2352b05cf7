"""Cuts of a file from its outline: some parts in full, the rest as outline, every elided
range marked with its line numbers.

:func:`partition` splits a file's lines (one line per ``"\\n"``, the same lines the
outline numbers) into *units*, each shown whole or elided whole: every definition without
children, the head of a container longer than :data:`HEAD_LINES` (after its signature),
every run of lines between definitions, and the file's head (the lines before its first
definition, after the first: module docstring, imports). What is in no unit is always
shown: the file's first line, the first lines of containers up to their signature (a
class, a heading with subsections) so that nesting stays visible, a container's head up
to :data:`HEAD_LINES` lines, and runs between definitions with at most one line that is
not blank (a closing brace). Definitions shorter than :data:`MIN_LINES` lines are shown,
not marked.

A :class:`Cut` renders a *step* of a :class:`Ladder` (from a score per unit): the best
matching units in full with one marker line per range between them; then, one line at a
time, the *outline layout*: each unit not in full as one marker line indented like its
first line, ``… lines 120–260 elided: def load(self, name)  "Load a checkpoint."`` for a
definition, ``… lines 3–40 elided`` for other lines (with the container's docstring line
for its head); then more units in full. A unit in full keeps of a long doc comment (the
block comment or ``//`` / ``#`` lines above a definition, a Python docstring) its first
paragraph, at most :data:`DOC_LINES` lines that say something, and its closing ``*/`` or
quotes; the lines between are one marker, ``… lines 254–290 elided``, so the code of a
five-line method is not pushed out by forty lines of its Javadoc. Values only; imports only
:mod:`dagctx.outline.model`, must not import the rest of dagctx.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from dagctx.outline.model import Entry, Outline

HEAD_LINES = 8  # a container's head up to this many lines is shown with its first line
MIN_LINES = 3  # a shorter definition is shown, not marked (its marker would cost as much)
DOC_LINES = 3  # a definition in full keeps this much of its doc comment's first paragraph
_C_LIKE = ("//", "/*", "*")
# what starts a line of a comment (or an annotation) written above a definition, by language
_COMMENTS: dict[str, tuple[str, ...]] = {
    "python": ("#",),
    "ruby": ("#",),
    "c": _C_LIKE,  # not "#": a preprocessor line is code
    "cpp": _C_LIKE,
    "go": _C_LIKE,
    "javascript": (*_C_LIKE, "@"),
    "jsx": (*_C_LIKE, "@"),
    "typescript": (*_C_LIKE, "@"),
    "tsx": (*_C_LIKE, "@"),
    "java": (*_C_LIKE, "@"),
    "csharp": (*_C_LIKE, "["),
    "rust": (*_C_LIKE, "#["),
    "php": (*_C_LIKE, "#"),
}


@dataclass(frozen=True, slots=True)
class Unit:
    """Lines ``start``..``end`` (0-based indexes into the lines, inclusive), shown whole or
    elided whole. ``kind`` is ``"head"`` (the file's head), ``"entry"`` (a definition:
    ``name`` and ``label`` from its outline entry) or ``"lines"`` (anything else).
    ``entry`` is the index in the outline's entries of the definition a unit of kind
    ``"entry"`` is, -1 for the others. ``trim`` is the range of lines (inclusive; empty
    when its start is past its end) of the unit's long doc comment or docstring that a cut
    showing the unit in full marks as elided (:func:`_doc_trim`)."""

    start: int
    end: int
    kind: str
    name: str = ""
    label: str = ""
    entry: int = -1
    trim: tuple[int, int] = (0, -1)


@dataclass(frozen=True, slots=True)
class Ladder:
    """The steps of one order of a :class:`Cut`'s units (:meth:`Cut.ladder`).

    ``order`` lists the units as steps show them in full, the first ``hits`` of them
    matching the focus; ``starts`` holds the file line (0-based) at which each line of
    the *outline layout* starts: the hits in full, every other unit as its marker line.
    """

    order: tuple[int, ...]
    hits: int
    starts: tuple[int, ...]

    @property
    def steps(self) -> int:
        """How many steps there are (see :meth:`Cut.render`)."""
        return len(self.starts) + len(self.order) - 1 + (self.hits > 0)


@dataclass(frozen=True, slots=True)
class Cut:
    """A file's units (in source order) over ``lines`` lines numbered from ``first``."""

    units: tuple[Unit, ...]
    lines: int
    first: int

    def ladder(self, lines: Sequence[str], scores: Sequence[float]) -> Ladder:
        """The steps for a score per unit. Units scoring above 0 come first, best first
        (all but one at most: a step never shows the whole file); then the file's head;
        then the other lines between definitions (constants, a container's docstring);
        then the remaining definitions; each group in source order, ties too."""
        units = self.units
        hit = sorted((i for i in range(len(units)) if scores[i] > 0), key=lambda i: -scores[i])
        del hit[len(units) - 1 :]  # every unit in full would be the whole file, not a cut
        chosen = set(hit)
        rest = [i for i in range(len(units)) if i not in chosen]
        rank = {"head": 0, "lines": 1, "entry": 2}
        order = (*hit, *sorted(rest, key=lambda i: rank[units[i].kind]))
        _, _, starts = self._lay(lines, chosen, self.lines, False)
        return Ladder(order, len(hit), tuple(starts))

    def render(
        self, lines: Sequence[str], ladder: Ladder, step: int, *, numbered: bool = False
    ) -> tuple[list[str], int, list[str]]:
        """The lines of step ``step`` (< ``ladder.steps``): (output lines, how many lines of
        the file they show, the names of the definitions shown in full).

        With hits, step 0 shows the file's first line and marks the rest (the least cut,
        as without); the next ``hits`` steps show 1 to ``hits`` of the hits in full and
        mark every range between them with one line (``… lines 2–80 elided``); the next
        steps show,
        one more line at a time, the outline layout (every other unit as its marker with a
        signature, containers' first lines) down to the whole of it; each step after
        that one more unit in full, up to all but one (all would be the whole file).
        ``numbered`` puts each shown line's number before it (markers are not numbered).
        Blank lines next to a marker are left out (they separate nothing).
        """
        hits, starts = ladder.hits, ladder.starts
        if hits:
            if step == 0:  # the least cut: the first line
                width = len(str(self.first + self.lines))
                first = f"{self.first:>{width}} {lines[0]}" if numbered else lines[0]
                rest = f"… lines {self.first + 1}–{self.first + self.lines - 1} elided"
                return [first, rest], 1, []
            step -= 1
        step += 1  # the step that shows nothing is not one
        if step <= hits:
            shown, frontier = step, 0
        elif step - hits < len(starts):
            shown, frontier = hits, starts[step - hits]
        else:
            shown, frontier = step - len(starts), self.lines
        full = ladder.order[:shown]
        out, kinds, _ = self._lay(lines, set(full), frontier, numbered)
        kept = sum(1 for k in kinds if k < 2)
        names = [self.units[u].name for u in full if self.units[u].name]
        return out, kept, names

    def adds(self, ladder: Ladder, step: int, kept: int) -> bool:
        """Whether step ``step`` of ``ladder``, showing ``kept`` of the file's lines,
        shows more than the file's outline: a definition in full, or more lines than the
        outline has definitions (as :meth:`render` lays them out, without rendering)."""
        if self._whole(ladder, step):
            return True
        return kept > 1 + sum(1 for u in self.units if u.kind == "entry")

    def _whole(self, ladder: Ladder, step: int) -> int:
        """How many definitions step ``step`` of ``ladder`` shows in full."""
        hits, starts = ladder.hits, ladder.starts
        if hits:
            if step == 0:
                return 0
            step -= 1
        step += 1
        if step <= hits:
            shown = step
        elif step - hits < len(starts):
            shown = hits
        else:
            shown = step - len(starts)
        return sum(1 for u in ladder.order[:shown] if self.units[u].kind == "entry")

    def _lay(
        self, lines: Sequence[str], full: set[int], frontier: int, numbered: bool
    ) -> tuple[list[str], bytearray, list[int]]:
        """(output lines, their kinds: 0 text, 1 blank, 2 marker; the index of the file
        line each starts at) with the units in ``full`` shown. Before line ``frontier``
        every other unit is its marker and the rest is shown; from it on, every run of
        lines outside ``full`` is one marker."""
        units = self.units
        out: list[str] = []
        kinds = bytearray()
        where: list[int] = []
        width = len(str(self.first + self.lines))
        at, u, n = 0, 0, min(self.lines, len(lines))
        while at < n:
            while u < len(units) and units[u].end < at:
                u += 1
            unit = units[u] if u < len(units) and units[u].start <= at else None
            where.append(at)
            if at >= frontier and (unit is None or u not in full):
                end = at  # a run up to the next unit in full
                while end + 1 < n:
                    while u < len(units) and units[u].end <= end:
                        u += 1
                    if u < len(units) and units[u].start <= end + 1 and u in full:
                        break
                    end += 1
                if any(lines[i].strip() for i in range(at, end + 1)):
                    out.append(self._span(lines, at, end))
                    kinds.append(2)
                else:  # blank lines only
                    for i in range(at, end + 1):
                        where.append(i)
                        out.append(f"{self.first + i:>{width}} " if numbered else "")
                        kinds.append(1)
                    where.pop()
                at = end + 1
                continue
            if unit is not None and u not in full:
                out.append(self._marker(lines, unit))
                kinds.append(2)
                at = unit.end + 1
                continue
            if unit is not None and unit.trim[0] == at <= unit.trim[1]:  # a long doc comment
                out.append(self._span(lines, at, unit.trim[1]))
                kinds.append(2)
                at = unit.trim[1] + 1
                continue
            line = lines[at]
            out.append(f"{self.first + at:>{width}} {line}" if numbered else line)
            kinds.append(0 if line.strip() else 1)
            at += 1
        keep = _without_blanks_by_markers(kinds)
        picked = [k for k in range(len(out)) if keep[k] < 3]
        return (
            [out[k] for k in picked],
            bytearray(kinds[k] for k in picked),
            [where[k] for k in picked],
        )

    def _span(self, lines: Sequence[str], start: int, end: int) -> str:
        first = next(lines[i] for i in range(start, end + 1) if lines[i].strip())
        indent = first[: len(first) - len(first.lstrip())]
        return f"{indent}… lines {self.first + start}–{self.first + end} elided"

    def _marker(self, lines: Sequence[str], unit: Unit) -> str:
        first = lines[unit.start]
        indent = first[: len(first) - len(first.lstrip())]
        where = f"{self.first + unit.start}–{self.first + unit.end}"
        label = f": {unit.label}" if unit.label else ""
        return f"{indent}… lines {where} elided{label}"


def _without_blanks_by_markers(kinds: bytearray) -> bytearray:
    """``kinds`` with each blank line next to a marker (no text line between) set to 3
    (left out)."""
    result = bytearray(kinds)
    m = len(kinds)
    near = False  # the last line that is not blank, going forward, is a marker
    for k in range(m):
        if kinds[k] != 1:
            near = kinds[k] == 2
        elif near:
            result[k] = 3
    near = False
    for k in range(m - 1, -1, -1):
        if kinds[k] != 1:
            near = kinds[k] == 2
        elif near:
            result[k] = 3
    return result


def partition(outline: Outline, lines: Sequence[str], first: int = 1) -> Cut | None:
    """The units of a file of ``lines`` (numbered from ``first``) with ``outline``; None
    when the outline has no entries (nothing to cut by but line count)."""
    entries = outline.entries
    if not entries:
        return None
    n = len(lines)
    children: dict[int | None, list[int]] = {}
    for k, e in enumerate(entries):
        children.setdefault(e.parent, []).append(k)
    units: list[Unit] = []
    parsed = outline.source == "tree-sitter"
    comments = _COMMENTS.get(outline.language, ()) if parsed else ()
    docstrings = parsed and outline.language == "python"
    _within(entries, children, None, 0, n - 1, lines, first, units, comments, docstrings)
    return Cut(tuple(units), n, first)


def _within(
    entries: Sequence[Entry],
    children: dict[int | None, list[int]],
    parent: int | None,
    lo: int,
    hi: int,
    lines: Sequence[str],
    first: int,
    units: list[Unit],
    comments: tuple[str, ...],
    docstrings: bool,
) -> None:
    """Add the units of lines ``lo``..``hi`` (0-based), the span of ``parent``'s
    children (the whole file for None). A definition without children takes the comment
    block written right above it (lines starting with one of ``comments``) into its unit,
    so that its doc comment is shown or elided with it, never alone; of a long doc
    comment (or, with ``docstrings``, a Python docstring) the unit keeps the range a cut
    showing it in full elides (:attr:`Unit.trim`)."""
    at = lo
    for k in children.get(parent, ()):
        e = entries[k]
        start, end = e.start - first, min(e.end - first, hi)
        if start < at or start > end:  # out of order or outside its parent: lines
            continue
        inner = [c for c in children.get(k, ()) if at <= entries[c].start - first <= end]
        top = start
        if not inner:  # the file's first line stays out of every unit
            top = _comment_top(lines, max(at, 1 if parent is None else at), start, comments)
        _gap(at, top - 1, lines, units, head=parent is None and at == 0 and not units)
        if not inner:
            if end - top + 1 >= MIN_LINES:
                trim = _doc_trim(lines, _doc_block(lines, top, start, end, e, docstrings))
                units.append(Unit(top, end, "entry", e.name, _label(e), k, trim))
        else:
            body = entries[inner[0]].start - first
            if body - start > HEAD_LINES:  # a long head: to its signature, then a unit
                doc = f'"{e.doc}"' if e.doc else ""
                signature = _signature_line(e, lines, start)
                block = _docstring(lines, signature, body - 1) if docstrings else None
                trim = _doc_trim(lines, block)
                units.append(Unit(signature + 1, body - 1, "lines", label=doc, trim=trim))
            _within(entries, children, k, body, end, lines, first, units, comments, docstrings)
        at = end + 1
    _gap(at, hi, lines, units, head=parent is None and at == 0)


def _comment_top(lines: Sequence[str], lo: int, start: int, comments: tuple[str, ...]) -> int:
    """The first line of the comment block right above line ``start`` (no blank line
    between, none before ``lo``): lines starting with one of ``comments``, and a block
    comment's inner lines between its ``/*`` and ``*/``; with none, a doc comment
    (``/** … */``) one blank line above, as JSDoc is often written (express); ``start``
    when there is none."""
    top = start
    if not comments:
        return top
    at = start - 1
    while at >= lo:
        text = lines[at].strip()
        if text.endswith("*/") and "/*" not in text:  # the end of a block comment
            opening = _block_opening(lines, lo, at)
            if opening < 0:
                break
            top = at = opening
        elif text and text.startswith(comments):
            top = at
        else:
            break
        at -= 1
    if top == start and "/*" in comments and at == start - 1 > lo and not lines[at].strip():
        end = at - 1  # one blank line above: a doc comment ending there
        if lines[end].rstrip().endswith("*/"):
            opening = _block_opening(lines, lo, end)
            if opening >= 0 and lines[opening].lstrip().startswith("/**"):
                return opening
    return top


def _block_opening(lines: Sequence[str], lo: int, end: int) -> int:
    """The line of the ``/*`` opening the block comment whose ``*/`` ends line ``end`` (at
    or after ``lo``, no blank line inside; the line itself when it holds both), or -1."""
    opening = end
    while opening >= lo and "/*" not in lines[opening]:
        opening -= 1
    if opening < lo or not all(lines[i].strip() for i in range(opening, end)):
        return -1
    return opening


def _doc_block(
    lines: Sequence[str], top: int, start: int, end: int, entry: Entry, docstrings: bool
) -> tuple[int, int] | None:
    """The lines (first, last) of the doc comment of a definition whose unit spans
    ``top``..``end`` and whose own lines start at ``start``: the block comment (``/* …
    */``) or run of ``//`` or ``#`` lines opening its comment block above (``top`` <
    ``start``), else with ``docstrings`` its Python docstring; None when it has none."""
    if top < start:
        text = lines[top].lstrip()
        if text.startswith("/*"):
            close = next((at for at in range(top, start) if "*/" in lines[at]), -1)
            return (top, close) if close >= 0 else None
        for mark in ("//", "#"):
            if text.startswith(mark) and not text.startswith("#["):
                last = top
                while last + 1 < start and lines[last + 1].lstrip().startswith(mark):
                    last += 1
                return top, last
        return None
    return _docstring(lines, _signature_line(entry, lines, start), end) if docstrings else None


_DOCSTRING = re.compile(r"\s*[rRuU]?(\"\"\"|''')")


def _docstring(lines: Sequence[str], signature: int, hi: int) -> tuple[int, int] | None:
    """The lines (first, last) of the docstring of a Python definition whose signature
    starts at line ``signature``, within line ``hi``: the first statement after the line
    ending the signature (with ``:``), when it is a triple-quoted string on more than one
    line; None otherwise."""
    at = signature
    while at <= hi and not lines[at].rstrip().endswith(":"):
        at += 1
    at += 1
    while at <= hi and not lines[at].strip():
        at += 1
    opening = _DOCSTRING.match(lines[at]) if at <= hi else None
    if opening is None or opening.group(1) in lines[at][opening.end() :]:
        return None  # no docstring, or one on one line
    quote = opening.group(1)
    close = next((k for k in range(at + 1, hi + 1) if quote in lines[k]), -1)
    return (at, close) if close >= 0 else None


_DOC_MARKS = re.compile(r"\s*(?:/\*+!?|\*/|\*|//[/!]?|#|[rRuU]?(?:\"\"\"|'''))?")


def _doc_words(line: str) -> str:
    """What a line of a doc comment or docstring says, without its delimiters."""
    text = _DOC_MARKS.sub("", line, count=1).strip()
    for closing in ("*/", '"""', "'''"):
        text = text.removesuffix(closing)
    return text.strip()


def _doc_trim(lines: Sequence[str], block: tuple[int, int] | None) -> tuple[int, int]:
    """The lines of the doc comment ``block`` (first, last) a cut showing its definition in
    full elides: those after its first paragraph, or after its first :data:`DOC_LINES`
    lines that say something, up to its last line (kept when it only closes the comment,
    a ``*/`` or closing quotes); none, ``(0, -1)``, when fewer than :data:`MIN_LINES`
    would be."""
    if block is None:
        return (0, -1)
    first, last = block
    said, at = 0, first
    while at <= last:
        if _doc_words(lines[at]):
            if said == DOC_LINES:
                break
            said += 1
        elif said:  # a line that says nothing ends the first paragraph
            break
        at += 1
    end = last - 1 if last > first and not _doc_words(lines[last]) else last
    if end - at + 1 < MIN_LINES or not any(lines[k].strip() for k in range(at, end + 1)):
        return (0, -1)
    return (at, end)


def _gap(lo: int, hi: int, lines: Sequence[str], units: list[Unit], *, head: bool) -> None:
    """Lines ``lo``..``hi`` between definitions: a unit unless at most one is not blank;
    the file's head keeps its first line out of the unit (a docstring's first line, a
    package clause)."""
    if head and lo <= hi and lines[lo].strip():
        lo += 1
    if hi < lo or sum(1 for i in range(lo, hi + 1) if lines[i].strip()) <= 1:
        return
    units.append(Unit(lo, hi, "head" if head else "lines"))


def _signature_line(entry: Entry, lines: Sequence[str], start: int) -> int:
    """The line where ``entry``'s signature starts (after its decorators or
    annotations), looked for in its first :data:`HEAD_LINES` lines; else its first."""
    key = entry.signature[:20]
    for at in range(start, min(len(lines), start + HEAD_LINES)):
        text = " ".join(lines[at].split())
        if text and (text.startswith(key) or (len(text) < len(key) and key.startswith(text))):
            return at
    return start


def _label(entry: Entry) -> str:
    return f'{entry.signature}  "{entry.doc}"' if entry.doc else entry.signature
