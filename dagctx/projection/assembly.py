"""Assembly of the prompt text: the shown sections, patched entry by entry between turns,
plus the "changes since last turn" section and the "left out" footer.

:class:`Body` keeps the sections shown for one budget together with their texts: those of
the stable band (:mod:`dagctx.projection.bands`) in a list in walk order with the length
of each one's text, their text as one string (the last projection's text, which starts
with it: the section texts are not held a second time), the later bands in a tail, put in
text order (by band, then as each band orders its sections) when the text is made. A
turn re-examines only the entries the allocation marked dirty; Fenwick trees over walk
positions give each one's place in the list and the characters and tokens before it (the
stable prefix, and where its text is in the stable band's), and the band ends are the
stable band's length plus the tail's, so no part of a turn's assembly walks every shown
section but the joins of the text and the sort of the tail.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, MutableSequence, Sequence
from typing import Any

from dagctx._quote import inline
from dagctx.graph import ContextGraph
from dagctx.nodes.base import Trace
from dagctx.projection.bands import STABLE, ends
from dagctx.projection.result import Section
from dagctx.projection.sections import SectionCache, section_text, unsafe_start

CHANGES_SHARE = 8  # under pressure the changes section takes at most 1/8 of the budget
FOOTER_TOKENS = 64  # room reserved for the "left out" footer (at most 1/20 of the budget)
FOOTER_NAMES = 200  # at most this many left-out nodes are named in the footer


class Fenwick:
    """Prefix sums over positions 0..n-1 with point updates, O(log n) each.

    Values are kept in 32 bits (a body's counts, tokens and text lengths: 4 bytes per
    entry, not 8) until one does not fit; then in 64 bits."""

    __slots__ = ("n", "tree")

    def __init__(self, n: int) -> None:
        self.n = n
        self.tree = array("i", [0]) * (n + 1)

    def _widen(self, values: array[int]) -> array[int]:
        """The tree as 64-bit values (``values``, or zeros for a new one)."""
        self.tree = array("q", values)
        return self.tree

    def load(self, values: list[int]) -> None:
        """Set position i to ``values[i]`` for all i at once (O(n))."""
        n = self.n
        while True:
            tree = self.tree
            try:
                for i, v in enumerate(values, 1):
                    tree[i] = v
                for i in range(1, n + 1):
                    j = i + (i & -i)
                    if j <= n:
                        tree[j] += tree[i]
                return
            except OverflowError:  # start again in 64 bits
                self._widen(array("q", [0]) * (n + 1))

    def add(self, i: int, delta: int) -> None:
        tree, n = self.tree, self.n
        i += 1
        while i <= n:
            try:
                tree[i] += delta
            except OverflowError:  # nothing stored at i: store it in 64 bits
                tree = self._widen(tree)
                continue
            i += i & -i

    def prefix(self, i: int) -> int:
        """Sum over positions [0, i)."""
        tree, total = self.tree, 0
        while i > 0:
            total += tree[i]
            i -= i & -i
        return total


Shown = tuple[Section, str] | None


class Body:
    """The sections shown for one budget, in text order (see the module docstring)."""

    __slots__ = (
        "chars",
        "count",
        "moved",
        "nodes",
        "sections",
        "shown",
        "sizes",
        "stale",
        "tail",
        "text",
        "tokens",
        "toks",
        "unsafe",
        "valid",
        "within",
    )

    def __init__(self, n: int, within: Callable[[int], int] | None = None) -> None:
        self.within = within  # where a later band's entry goes inside its band (walk order)
        self.shown = bytearray(n)  # 1: in the body list (stable band), 1 + band: in the tail
        self.count = Fenwick(n)
        self.toks = Fenwick(n)
        self.chars = Fenwick(n)  # the length of each stable section's text
        self.sections: list[Section] = []
        self.sizes = array("q")  # the length of each stable section's text, as sections
        self.text = ""  # starts with the stable band's text (see keep)
        self.tail: dict[int, tuple[Section, str]] = {}
        self.tokens = 0
        self.nodes = 0  # shown sections that are not references
        self.unsafe = 0  # shown sections with an unsafe start (sections.unsafe_start)
        self.moved = True  # whether the last update showed or hid any entry
        self.valid = False
        # entries whose text may differ from the one shown though their section is the
        # same (an outline for a new focus): the next patch renders them again
        self.stale: set[int] = set()

    def rebuild(self, n: int, section: Callable[[int], tuple[Shown, int]]) -> None:
        """Recompute every entry (a new layout, or after an exceptional assembly);
        ``section(i)`` gives entry ``i``'s section and text (or None) and its band."""
        self.__init__(n, self.within)  # type: ignore[misc]
        sections, sizes, flags = self.sections, self.sizes, self.shown
        texts: list[str] = []
        ones, tokens, chars = [0] * n, [0] * n, [0] * n
        for i in range(n):
            shown, band = section(i)
            if shown is None:
                continue
            sec, text = shown
            self.tokens += sec.tokens
            self.nodes += not sec.reference
            self.unsafe += _unsafe(text)
            if band != STABLE:
                self.tail[i] = shown
                flags[i] = 1 + band
            else:
                flags[i] = 1
                ones[i], tokens[i], chars[i] = 1, sec.tokens, len(text)
                sections.append(sec)
                sizes.append(len(text))
                texts.append(text)
        self.text = "".join(texts)
        self.count.load(ones)
        self.toks.load(tokens)
        self.chars.load(chars)
        self.valid = True

    def patch(
        self,
        dirty: Sequence[int],
        section: Callable[[int], Section | None],
        text: Callable[[int, Section], str],
        band: Callable[[int], int],
    ) -> int:
        """Bring the ``dirty`` entries (ascending) up to date; return the walk index of the
        first entry whose text in the body list changed, was added or was taken out (or
        -1): a section replaced by one with the same text (a container's new version
        after a change below it) does not count, so the text before that index is the
        previous turn's. The stable band's text is made again from the old one's pieces
        between the entries that changed and the new texts of those. An entry of
        :attr:`stale` is rendered again even when its section is the one shown."""
        first = -1
        self.moved = False
        stale, self.stale = self.stale, set()
        sections, sizes, old, chars = self.sections, self.sizes, self.text, self.chars
        end = chars.prefix(chars.n)  # the old stable band's length
        pieces: list[str] = []  # the new stable band: the old one's pieces, new texts
        done = 0  # characters of the old stable band taken into pieces (or dropped)
        grown = 0  # characters the band's edits so far add before the current entry
        for i in dirty:
            new = section(i)
            where = self.shown[i]
            if where >= 2:
                old_section = self.tail[i][0]
                if new == old_section and i not in stale:
                    continue
                self._drop_tail(i)
            elif where == 1:
                k = self.count.prefix(i)
                old_section = sections[k]
                if new == old_section and i not in stale:
                    continue
                at, size = chars.prefix(i) - grown, sizes[k]
                pieces.append(old[done:at])
                done = at + size
                self.tokens -= old_section.tokens
                self.unsafe -= _unsafe(old[at : at + min(size, 1)])
                self.toks.add(i, -old_section.tokens)
                chars.add(i, -size)
                if new is not None and band(i) == STABLE:  # shown before and now: in place
                    body = text(i, new)
                    if first < 0 and body != old[at:done]:  # not a new version of the same text
                        first = i
                    sections[k], sizes[k] = new, len(body)
                    pieces.append(body)
                    grown += len(body) - size
                    self.tokens += new.tokens
                    self.unsafe += _unsafe(body)
                    self.toks.add(i, new.tokens)
                    chars.add(i, len(body))
                    continue
                if first < 0:
                    first = i
                del sections[k]
                del sizes[k]
                grown -= size
                self.count.add(i, -1)
                self.nodes -= not old_section.reference
                self.shown[i] = 0
                self.moved = True
            if new is None:
                continue
            body = text(i, new)
            self.tokens += new.tokens
            self.nodes += not new.reference
            self.unsafe += _unsafe(body)
            b = band(i)
            if b != STABLE:
                self.tail[i] = (new, body)
                self.shown[i] = 1 + b
                self.moved = True
                continue
            if first < 0:
                first = i
            at = chars.prefix(i) - grown
            pieces += (old[done:at], body)
            done = at
            grown += len(body)
            k = self.count.prefix(i)
            sections.insert(k, new)
            sizes.insert(k, len(body))
            self.count.add(i, 1)
            self.toks.add(i, new.tokens)
            chars.add(i, len(body))
            self.shown[i] = 1
            self.moved = True
        if pieces:
            pieces.append(old[done:end])
            self.text = "".join(pieces)
        return first

    def _drop_tail(self, i: int) -> None:
        sec, text = self.tail.pop(i)
        self.tokens -= sec.tokens
        self.nodes -= not sec.reference
        self.unsafe -= _unsafe(text)
        self.shown[i] = 0
        self.moved = True

    def ordered(
        self, chunk_end: str = ""
    ) -> tuple[list[Section], list[str], array[int], tuple[list[int], list[int]]]:
        """The shown sections in text order (by band, then :attr:`within` for the later
        bands' entries when given, then walk order); their text in pieces (the stable
        band's, then each later section's) and each section's length; and the offsets
        where each band and each content block ends in that text
        (:func:`~dagctx.projection.bands.ends`, a settled block ending after the section
        of node ``chunk_end``; the stable band, one block, from :attr:`chars`, so only
        the tail's texts are walked)."""
        stable = self.chars.prefix(self.chars.n)
        head = [stable] if self.sections else []
        pieces = [self.text[:stable]] if stable else []
        if not self.tail:
            return list(self.sections), pieces, array("q", self.sizes), (head, list(head))
        shown, within = self.shown, self.within
        order = sorted(self.tail, key=lambda i: (shown[i], within(i) if within else 0, i))
        later = [self.tail[i][1] for i in order]
        sections = self.sections + [self.tail[i][0] for i in order]
        chunked = [self.tail[i][0].node_id == chunk_end for i in order]
        band_ends, block_ends = ends(later, [shown[i] - 1 for i in order], chunked)
        return (
            sections,
            pieces + later,
            self.sizes + array("q", map(len, later)),
            (head + [stable + e for e in band_ends], head + [stable + e for e in block_ends]),
        )

    def keep(self, text: str) -> None:
        """Hold ``text``, made of the pieces :meth:`ordered` gave and more after them, as
        the stable band's text (one string with the projection's, not a second copy)."""
        self.text = text

    def before(self, first: int) -> tuple[int, int, int]:
        """(sections, characters, tokens) of the stable band before walk index ``first``
        (the whole band when ``first`` is -1): what
        :func:`~dagctx.projection.prefix.stable_prefix` takes as known when nothing
        before ``first`` changed."""
        at = self.count.n if first < 0 else first
        return self.count.prefix(at), self.chars.prefix(at), self.toks.prefix(at)


def _unsafe(text: str) -> int:
    return 1 if unsafe_start(text) else 0


def changes_section(
    traces: Sequence[Trace], graph: ContextGraph, cache: SectionCache, limit: int
) -> tuple[str, int]:
    """The "changes since last turn" section: as many change lines as fit in ``limit``."""
    lines = []
    for t in traces:
        if t.derived:
            continue
        label = graph.get(t.node_id).label() if t.node_id in graph else "(removed)"
        line = f"- #{t.node_id} {label}: {t.description} (v{t.old_version}→v{t.new_version})"
        lines.append(inline(line))  # labels and descriptions can quote file and tool names
    if not lines:
        return "", 0
    head = "## Changes since last turn"
    whole = cache.measure("\n".join([head, *lines]), remember=False)
    if whole[1] <= limit:
        return whole
    lo, hi, best = 0, len(lines) - 1, ("", 0)
    while lo <= hi:  # the most change lines that fit
        keep = (lo + hi) // 2
        more = [f"- … {len(lines) - keep} more changes"] if keep < len(lines) else []
        text, tokens = cache.measure("\n".join([head, *lines[:keep], *more]), remember=False)
        if tokens <= limit:
            best, lo = (text, tokens), keep + 1
        else:
            hi = keep - 1
    return best


def footer(
    count: int,
    names: Sequence[tuple[str, int]],
    cache: SectionCache,
    budget: int,
    limit: int,
    sizes: dict[str, int] | None = None,
) -> tuple[str, int]:
    """The "left out" line for ``count`` nodes naming as many of ``names`` (each with the
    number of nodes it stands for: :func:`left_out_names`) as fit.

    With ``sizes`` (kept between turns) and an encoding whose section counts add up
    (:attr:`SectionCache.junction` not None), a line's count is summed from the counts
    of its parts (:func:`_footer_counts`), each name's kept in ``sizes``: the counts
    measuring each line gives, and the same search, without encoding a line of 200
    names a dozen times a turn."""
    if not count:
        return "", 0
    covered = [0]
    for _, n in names:
        covered.append(covered[-1] + n)
    head = f"[dagctx left out {count} node{'s' * (count != 1)} to fit {budget} tokens"

    def rest(k: int) -> str:
        return f", … +{count - covered[k]} more" if covered[k] < count else ""

    def text(k: int) -> str:
        listed = ": " + ", ".join(name for name, _ in names[:k]) + rest(k) if k else ""
        return section_text(f"{head}{listed}]")

    if sizes is None or cache.junction is None:
        _, shown, tokens = most_that_fit(
            lambda k: (text(k), cache.count(text(k), remember=False)), len(names), limit
        )
        return shown, tokens
    summed = _footer_counts(head, [name for name, _ in names], rest, cache, sizes)
    k, _, tokens = most_that_fit(lambda k: ("", summed(k)), len(names), limit)
    return (text(k), tokens) if k >= 0 else ("", 0)


def _footer_counts(
    head: str,
    names: Sequence[str],
    rest: Callable[[int], str],
    cache: SectionCache,
    sizes: dict[str, int],
) -> Callable[[int], int]:
    """The count of the footer's section naming the first ``k`` of ``names``, as a
    function of ``k``, summed from its parts: ``head + ":"``, then ``" " + name + ","``
    for each name but the last, then the last name and the ending (``rest(k)``, ``"]"``
    and the section's blank line).

    Every part but the first starts with the space after a ``,`` or ``:`` and every
    part but the last ends with that mark. In each pre-tokenizer of
    :data:`~dagctx.projection.sections.JUNCTIONS` a mark followed by a space can only
    be in a piece of punctuation (every other kind of piece needs a letter, a digit or
    an apostrophe after it, or is whitespace), and such a piece stops at the space; a
    piece that starts at the space depends only on the text from there on (no
    look-behind; a part ends in a mark, so ``\\s+$`` and ``\\s+(?!\\S)`` see the same
    text inside a part as in the line). So the pieces of the line are the pieces of its
    parts, each encoded on its own: the counts add up exactly. ``sizes`` keeps the count
    of ``" " + name + ","`` by name (emptied when it holds many more names than a
    footer lists)."""
    count = cache.counter.count_exact
    if len(sizes) > 4 * FOOTER_NAMES:
        sizes.clear()
    first = count(head + ":") + (cache.junction or 0)
    whole = [0]
    for name in names:
        size = sizes.get(name)
        if size is None:
            size = sizes[name] = count(f" {name},")
        whole.append(whole[-1] + size)
    endings: dict[str, int] = {}

    def summed(k: int) -> int:
        if k == 0:
            return cache.count(section_text(head + "]"), remember=False)
        ending = rest(k)
        if not ending:  # every left-out node named: the last name ends the line
            return first + whole[k - 1] + count(f" {names[k - 1]}]\n\n")
        if ending not in endings:  # the last name's part ends in the ending's comma
            endings[ending] = count(ending[1:] + "]\n\n")
        return first + whole[k] + endings[ending]

    return summed


def directory(label: str) -> str:
    """The directory the footer groups a node of ``label`` under: the label up to its
    last ``/``, or "" for a label with none past its start; a directory below the top
    (``a/b/``) is grouped under itself, with its files, so that it is not named once
    in its parent's count and again as its own (a top one, ``src/``, under "")."""
    cut = label.rstrip("/").rfind("/")
    if cut <= 0:
        return ""
    return label if label.endswith("/") else label[: cut + 1]


def left_out_names(left: Iterable[tuple[str, str]]) -> list[tuple[str, int]]:
    """How the footer names the nodes ``left`` out ((id, label) in walk order), each name
    with the number of nodes it stands for: the nodes of a directory (:func:`directory`)
    with more than one left out as one ``N in dir/`` (``N`` counts its files, not the
    directory itself; most files first, then walk order), every other node as
    ``#id (label)`` in walk order after them. At most :data:`FOOTER_NAMES` names."""
    items = list(left)
    by_dir: dict[str, int] = {}
    own: dict[str, int] = {}  # per directory, its own entries left out (one, in a tree)
    dirs = []
    for _, label in items:
        d = directory(label)
        dirs.append(d)
        if d:
            by_dir[d] = by_dir.get(d, 0) + 1
            if label == d:
                own[d] = own.get(d, 0) + 1
    files = {d: n - own.get(d, 0) for d, n in by_dir.items()}
    grouped = sorted((d for d, n in by_dir.items() if n > 1), key=lambda d: -files[d])
    names = [(f"{files[d]} in {d}", by_dir[d]) for d in grouped]
    many = set(grouped)
    names += [
        (f"#{nid} ({label})", 1)
        for (nid, label), d in zip(items, dirs, strict=True)
        if d not in many
    ]
    return names[:FOOTER_NAMES]


class LeftOut:
    """The left-out entries of one body by directory, kept as entries are hidden
    (:meth:`add`) and shown (:meth:`remove`), so that the footer's names cost the change
    rather than a pass over every left-out entry: :meth:`names` gives what
    :func:`left_out_names` gives for the same entries in walk order.

    Per directory the sorted walk positions of its left-out entries (an ``array('i')``:
    under a tight budget nearly every file is left out, and a list would hold an int
    object per file); per directory below the top, how many of its own entries are left
    out (its count names its files); the directories with more than one in a list sorted
    as the footer names them, by (-files, first position); and, sorted, the entries
    named one by one (no directory, or alone in theirs).
    """

    __slots__ = ("_groups", "_members", "_names", "_own", "_singles")

    def __init__(self) -> None:
        self._members: dict[str, array[int]] = {}
        self._own: dict[str, int] = {}  # per directory, its own entries left out
        self._groups: list[tuple[int, int, str]] = []  # (-count, first entry, directory)
        self._singles: list[int] = []
        self._names: list[tuple[str, int]] | None = None

    @classmethod
    def of(cls, left: Iterable[tuple[int, str]]) -> LeftOut:
        """The entries ``left`` ((entry, label) in walk order), counted in one pass."""
        out = cls()
        members = out._members
        for i, label in left:
            d = directory(label)
            if d:
                if label == d:
                    out._own[d] = out._own.get(d, 0) + 1
                at = members.get(d)
                if at is None:
                    at = members[d] = array("i")
                at.append(i)
            else:
                out._singles.append(i)
        out._singles += [m[0] for m in members.values() if len(m) == 1]
        out._singles.sort()
        out._groups = sorted(out._key(d, m) for d, m in members.items() if len(m) > 1)
        return out

    def add(self, i: int, label: str) -> None:
        """Count entry ``i`` (whose label is ``label``) as left out."""
        self._names = None
        d = directory(label)
        members = self._members.get(d) if d else None
        if members is not None:
            if len(members) == 1:
                _discard(self._singles, members[0])
            else:
                _discard(self._groups, self._key(d, members))
        if d and label == d:
            self._own[d] = self._own.get(d, 0) + 1
        if members is None:
            if d:
                self._members[d] = array("i", (i,))
            insort(self._singles, i)
            return
        insort(members, i)
        insort(self._groups, self._key(d, members))

    def remove(self, i: int, label: str) -> None:
        """Count entry ``i`` (counted with ``label``) as shown again."""
        self._names = None
        d = directory(label)
        members = self._members.get(d) if d else None
        if members is not None and len(members) > 1:
            _discard(self._groups, self._key(d, members))
        if d and label == d:
            self._own[d] -= 1
            if not self._own[d]:
                del self._own[d]
        if members is None or len(members) == 1:
            _discard(self._singles, i)
            if members is not None:
                del self._members[d]
            return
        _discard(members, i)
        if len(members) == 1:
            insort(self._singles, members[0])
        else:
            insort(self._groups, self._key(d, members))

    def _key(self, d: str, members: array[int]) -> tuple[int, int, str]:
        """Where directory ``d`` (more than one of its entries left out: ``members``)
        sorts among the footer's names: most files first, then walk order."""
        return (self._own.get(d, 0) - len(members), members[0], d)

    def names(
        self, node_id: Callable[[int], str], label: Callable[[int], str]
    ) -> list[tuple[str, int]]:
        """The footer's names (:func:`left_out_names`), the ones directly named made with
        ``node_id`` and ``label`` of their entry."""
        if self._names is None:
            own = self._own
            groups = self._groups[:FOOTER_NAMES]
            names = [(f"{-files} in {d}", own.get(d, 0) - files) for files, _, d in groups]
            rest = self._singles[: FOOTER_NAMES - len(names)]
            names += [(f"#{node_id(i)} ({label(i)})", 1) for i in rest]
            self._names = names
        return self._names


def _discard(items: MutableSequence[Any], item: Any) -> None:
    """Take ``item`` out of the sorted sequence ``items`` (it is there)."""
    del items[bisect_left(items, item)]


def most_that_fit(
    measure: Callable[[int], tuple[str, int]], most: int, limit: int, guess: int = 0
) -> tuple[int, str, int]:
    """(k, text, tokens) for the largest ``k`` in 0..``most`` whose ``measure(k)`` fits in
    ``limit`` tokens ((-1, "", 0) when none does), assuming more ``k`` never costs fewer.

    Gallops out from ``guess`` (doubling the step) before bisecting, so a small answer
    near the guess costs a few small measurements rather than one of half the range.
    """
    best = (-1, "", 0)
    lo, hi = 0, most  # the answer lies in [lo, hi]; lo - 1 is known to fit (or lo == 0)
    k, step = max(0, min(guess, most)), 1
    while lo <= hi:
        text, tokens = measure(k)
        if tokens <= limit:
            best, lo = (k, text, tokens), k + 1
            k = min(hi, k + step)
        else:
            hi = k - 1
            k = max(lo, k - step)
        step *= 2
        if step > 2 and lo <= hi and (k < lo or k > hi or step > hi - lo):
            k = (lo + hi) // 2
    return best
