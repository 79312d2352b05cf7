r"""Section text and token counts, cached per (node, version, state).

A section is a node's render normalised to end with one blank line, so that sections can
be concatenated and their token counts summed. Whether the sum is the count of the whole
depends on the encoding's pre-tokenizer (tiktoken splits text into pieces with a regular
expression and encodes each piece on its own). For the patterns in :data:`JUNCTIONS` it is
proven, with a fixed correction, when no section starts with whitespace or ``"/"``
(:func:`unsafe_start`). A section ends with a character that is not whitespace followed
by ``"\n\n"``; the next starts with a character that is neither. Then:

- ``cl100k_base``: the punctuation piece's ``[\r\n]*+`` takes both newlines and stops
  at the next section, and otherwise ``\s*[\r\n]`` makes ``"\n\n"`` one piece, as
  ``\s++$`` does at the end of the section alone: the boundary is a piece boundary in
  both, so the counts add up (correction 0).
- ``o200k_base``: the same with ``[\r\n/]*`` and ``\s*[\r\n]+``; a next section that
  starts with ``"/"`` would join the punctuation piece, hence ``"/"`` is unsafe.
- ``p50k_base``, ``p50k_edit``, ``r50k_base`` (the GPT-2 pattern): alone, ``\s++$`` makes
  the final ``"\n\n"`` one piece; followed by a non-space, ``\s+(?!\S)`` and ``\s``
  make it two ``"\n"`` pieces. Nothing else crosses the boundary, so each boundary adds
  ``2 × count("\n") − count("\n\n")`` tokens (1).

:class:`SectionCache` adds that correction to every non-empty count it hands out (the
cost of a section with another after it), so the allocation budgets for it and the
count of a whole text of pieces is the sum minus one correction. An encoding with any
other pattern (:func:`junction_tokens` is None) or a text with an unsafe section is
counted exactly instead; either way the projector proves the budget on the final text.

Counts are kept for every state a node was measured at; rendered text is not kept (the
projection keeps the text of the sections it shows). Texts rendered while counting are
parked until :meth:`SectionCache.release`, so a section counted and then shown in the same
projection is rendered once.

With a focus (:meth:`SectionCache.refocus`), a text file's outline (SUMMARY) keeps the
definitions matching it first (:meth:`~dagctx.nodes.text.TextNode.focused_summary`)
where that changes it: such an outline is made once per node version and focus, and
counted once per text (the counts of recent ones are kept, so focuses taken again are
not counted again); a file whose content holds no word of the focus, or whose outline
shows the matching definitions anyway, has its outline without a focus and that count.
A new focus names the files whose outline was counted and may read otherwise now, for
the projector to count again: only those whose outline reads otherwise are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from dagctx._quote import inline
from dagctx.nodes.base import Node, NodeState
from dagctx.nodes.text import TextNode
from dagctx.projection.file_terms import SavedReads
from dagctx.tokens import TokenCounter

if TYPE_CHECKING:
    import tiktoken

_STATES = tuple(NodeState)
_SUMMARY = int(NodeState.SUMMARY)
#: Counts of focused outlines kept (most recently used), by node and text.
OUTLINE_COUNTS_KEPT = 1024

_CL100K = (
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"
    r"| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"
)
_O200K = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_GPT2 = r"'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"


def _split_blank_line(encoding: tiktoken.Encoding) -> int:
    encode = encoding.encode_ordinary
    return 2 * len(encode("\n")) - len(encode("\n\n"))


#: Pre-tokenizer pattern → the tokens each section boundary adds (module docstring).
JUNCTIONS: dict[str, Callable[[tiktoken.Encoding], int]] = {
    _CL100K: lambda _: 0,
    _O200K: lambda _: 0,
    _GPT2: _split_blank_line,
}


def junction_tokens(counter: TokenCounter) -> int | None:
    """Tokens a section boundary adds to the sum of the sections' own counts in the
    counter's encoding, or None when its pattern is not one of :data:`JUNCTIONS`."""
    rule = JUNCTIONS.get(getattr(counter.encoding, "_pat_str", ""))
    return None if rule is None else rule(counter.encoding)


def unsafe_start(text: str) -> bool:
    """Whether a section's text starts where a boundary before it may not split pieces."""
    return text[:1].isspace() or text[:1] == "/"


def section_text(rendered: str) -> str:
    """Normalise a node render into section text (empty stays empty)."""
    body = rendered.rstrip()
    return f"{body}\n\n" if body else ""


def reference_text(node: Node) -> str:
    """The one-line reference shown where a node already rendered appears again."""
    return section_text(f"(see #{node.id} above: {inline(node.label())})")


_FIELD = 32  # bits per field of a packed entry (each state's count + 1)
_MASK = (1 << _FIELD) - 1
_VERSION = 4 * _FIELD  # where the version starts, above the four counts
_FIELDS = (1 << _VERSION) - 1  # the four counts
_ONES = sum(1 << (_FIELD * k) for k in range(4))  # one in each field
_HIGH_BITS = _ONES << (_FIELD - 1)  # the top bit of each field
_LOW_BITS = _FIELDS ^ _HIGH_BITS  # the others


class SectionCache:
    """Token counts per node version and state; see the module docstring.

    Each node's counts are one integer: each visible state's count + 1 in 32 bits (0:
    not counted yet), the first state lowest, and the node's version above them (from
    bit 128), so that a node counted at its first state only, as most nodes of a large
    tree are, holds a small int while its version is 0: for a file counted by name, an
    int Python keeps one of for the whole process (up to 256) instead of 32 bytes of its
    own. A node whose version does not fit in 32 bits keeps no counts (they are counted
    again). The counter is asked not to remember section texts, which this cache already
    keys by node version.

    Every non-empty count includes :attr:`junction` (see the module docstring).
    ``renders`` counts actual renders (cache misses) and ``renders_at`` the same per
    state (index = state value), for tests and benchmarks: how many outlines (SUMMARY) a
    projection made, for instance.
    """

    __slots__ = (
        "_asked",
        "_counts",
        "_extra",
        "_focus",
        "_mentions",
        "_outline_counts",
        "_parked",
        "_variants",
        "counter",
        "file_terms",
        "junction",
        "projector",
        "renders",
        "renders_at",
    )

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        #: Tokens a section boundary adds (None: counts of this encoding are not summed).
        self.junction = junction_tokens(counter)
        self._extra = self.junction or 0
        self._counts: dict[str, int] = {}  # node id → version << 128 | packed counts
        self._parked: dict[tuple[str, int, int], str] = {}
        self.renders = 0
        self.renders_at = [0] * len(_STATES)
        #: The incremental projector of the graph this cache serves (set by it).
        self.projector: object | None = None
        #: What the ranking read of each file's content, by node id, taken back from a
        #: session file (:mod:`dagctx.projection.file_terms`): the projector's relevance
        #: uses an entry while its node shows that content.
        self.file_terms = SavedReads()
        self._focus: str | None = None  # what outlines are rendered for (refocus)
        self._mentions: Callable[[str], bool] | None = None
        # node id → (version, its focused outline's section text; None: the one without)
        self._variants: dict[str, tuple[int, str | None]] = {}
        self._outline_counts: dict[tuple[str, str], int] = {}  # (node id, text) → count
        self._asked: set[str] = set()  # text nodes whose outline's count was handed out

    def refocus(
        self, focus: str | None, mentions: Callable[[str], bool] | None = None
    ) -> list[str]:
        """Render text files' outlines for ``focus`` from now on; ``mentions(node_id)``
        tells whether a file's content holds a word of it (one that holds none has its
        outline without a focus; None: any may). Returns the ids of the text nodes whose
        outline's count was handed out and may read otherwise now: those whose outline
        was a focused one and those whose content holds a word of the new focus (none
        when ``focus`` is the one in effect)."""
        if focus == self._focus:
            self._mentions = mentions
            return []
        variants = self._variants
        moved = [
            nid
            for nid in self._asked
            if (nid in variants and variants[nid][1] is not None)
            or (focus is not None and (mentions is None or mentions(nid)))
        ]
        self._focus, self._mentions, self._variants = focus, mentions, {}
        self._parked = {key: text for key, text in self._parked.items() if key[2] != _SUMMARY}
        return moved

    def _variant(self, node: Node) -> str | None:
        """The section text of ``node`` at SUMMARY for the focus in effect where it is not
        the one without a focus (:meth:`TextNode.focused_summary`), else None; made once
        per node version and focus."""
        focus = self._focus
        if focus is None or not isinstance(node, TextNode):
            return None
        nid = node.id
        known = self._variants.get(nid)
        if known is not None and known[0] == node.version:
            return known[1]
        text = None
        if self._mentions is None or self._mentions(nid):
            rendered = node.focused_summary(focus)
            if rendered is not None:
                text = section_text(rendered)
                self.renders += 1
                self.renders_at[_SUMMARY] += 1
        self._variants[nid] = (node.version, text)
        return text

    def _outline_tokens(self, node_id: str, text: str) -> int:
        """The count of the focused outline section ``text`` of ``node_id``: kept, or
        counted now and kept (the :data:`OUTLINE_COUNTS_KEPT` most recent)."""
        counts = self._outline_counts
        key = (node_id, text)
        count = counts.pop(key, None)
        if count is None:
            count = self.count(text, remember=False)
        counts[key] = count
        if len(counts) > OUTLINE_COUNTS_KEPT:
            del counts[next(iter(counts))]
        return count

    def _summary_counted(self, node: TextNode, packed: int | None) -> int:
        """:meth:`counted` of a text node at SUMMARY (``packed``: its counts): with a
        focus in effect, -1 while its outline for the focus is not known without making
        it."""
        version = node.version
        plain = -1  # the count of its outline without a focus
        if packed is not None and packed >> _VERSION == version:
            plain = ((packed >> _FIELD) & _MASK) - 1
        count = plain
        if self._focus is not None:
            known = self._variants.get(node.id)
            if known is None or known[0] != version:
                if plain < 0 or self._mentions is None or self._mentions(node.id):
                    return -1  # its outline for the focus is to be made
                self._variants[node.id] = (version, None)  # as without a focus
            elif known[1] is not None:
                count = self._outline_counts.get((node.id, known[1]), -1)
        if count >= 0:
            self._asked.add(node.id)
        return count

    def _known(self, node: Node, state: int) -> int:
        """The stored count of ``node`` at visible ``state``, or -1."""
        packed = self._counts.get(node.id)
        if packed is None or packed >> _VERSION != node.version:
            return -1
        return ((packed >> (_FIELD * (state - 1))) & _MASK) - 1

    def _store(self, node: Node, state: int, count: int) -> None:
        version = node.version
        if version > _MASK:
            return
        packed = self._counts.get(node.id)
        if packed is None or packed >> _VERSION != version:
            packed = version << _VERSION
        shift = _FIELD * (state - 1)
        self._counts[node.id] = packed & ~(_MASK << shift) | (min(count, _MASK - 1) + 1) << shift

    def _render(self, node: Node, state: int) -> str:
        if state == _SUMMARY and self._focus is not None:
            text = self._variant(node)
            if text is not None:
                return text
        self.renders += 1
        self.renders_at[state] += 1
        return section_text(node.render_section(_STATES[state])) if state else ""

    def counted(self, node: Node, state: int) -> int:
        """The count of ``node``'s section at ``state`` if it is known (-1: not counted
        yet for this version, or a text file's outline whose form for the focus in effect
        is not known yet; 0 when HIDDEN). :meth:`_known`, inline: the allocation asks
        this of most files at each focus change."""
        if not state:  # HIDDEN
            return 0
        packed = self._counts.get(node.id)
        if state == _SUMMARY and isinstance(node, TextNode):
            return self._summary_counted(node, packed)
        if packed is None or packed >> _VERSION != node.version:
            return -1
        return ((packed >> (_FIELD * (state - 1))) & _MASK) - 1

    def least(self, node: Node, state: int, min_chars: int = 0) -> int:
        """A lower bound on :meth:`tokens` of ``node`` at ``state`` from its length
        (:meth:`TokenCounter.least`), without counting: -1 when the section is shorter
        than ``min_chars`` (count it instead). The render is parked like a counted one;
        a node that knows a long enough lower bound on its render's length without
        rendering (:meth:`~dagctx.nodes.base.Node.least_chars`) is not rendered."""
        if state == _SUMMARY and isinstance(node, TextNode):
            self._asked.add(node.id)
        key = (node.id, node.version, state)
        text = self._parked.get(key)
        if text is None:
            chars = node.least_chars(_STATES[state])
            if chars is not None and chars >= max(min_chars, 1):
                return self.counter.least(chars) + self._extra
            text = self._parked[key] = self._render(node, state)
        if not text or len(text) < min_chars:
            return -1
        return self.counter.least(len(text)) + self._extra

    def tokens(self, node: Node, state: int) -> int:
        """Token count of ``node``'s section at ``state`` (0 when HIDDEN)."""
        if state == NodeState.HIDDEN:
            return 0
        if state == _SUMMARY and isinstance(node, TextNode):
            self._asked.add(node.id)
            text = self._variant(node)
            if text is not None:
                return self._outline_tokens(node.id, text)
        count = self._known(node, state)
        if count < 0:
            key = (node.id, node.version, state)
            text = self._parked.get(key)
            if text is None:
                text = self._parked[key] = self._render(node, state)
            count = self.count(text, remember=False)
            self._store(node, state, count)
        return count

    def count(self, text: str, *, remember: bool = True) -> int:
        """Tokens of section text ``text`` followed by another section (its own count
        plus :attr:`junction`; 0 for ``""``)."""
        return self.counter.count(text, remember=remember) + self._extra if text else 0

    def text(self, node: Node, state: int) -> str:
        """Section text of ``node`` at ``state`` (a parked render, or a new one)."""
        if state == NodeState.HIDDEN:
            return ""
        parked = self._parked.pop((node.id, node.version, state), None)
        return parked if parked is not None else self._render(node, state)

    def get(self, node: Node, state: int) -> tuple[str, int]:
        """Section text and token count of ``node`` rendered at ``state``."""
        tokens = self.tokens(node, state)
        return self.text(node, state), tokens

    def prime(self, pairs: Iterable[tuple[Node, int]]) -> None:
        """Count the sections of many (node, state) pairs at once, in parallel batches."""
        todo: list[tuple[Node, int, tuple[str, int, int], str]] = []
        for node, state in pairs:
            if state == _SUMMARY and isinstance(node, TextNode):
                self._asked.add(node.id)
                text = self._variant(node)
                if text is not None:
                    self._outline_tokens(node.id, text)
                    continue
            if state == NodeState.HIDDEN or self._known(node, state) >= 0:
                continue
            key = (node.id, node.version, state)
            text = self._parked.get(key)
            if text is None:
                text = self._render(node, state)
            todo.append((node, state, key, text))
        if not todo:
            return
        counts = self.counter.count_many([t[3] for t in todo], remember=False)
        extra = self._extra
        for (node, state, key, text), count in zip(todo, counts, strict=True):
            self._store(node, state, count + extra if text else 0)
            self._parked[key] = text

    def release(self) -> None:
        """Drop the texts parked by counting (end of a projection)."""
        self._parked.clear()

    def measure(self, text: str, *, remember: bool = True) -> tuple[str, int]:
        """Section text and tokens of free text (changes list, footer), cached by content.

        ``remember=False`` for trial texts that change from turn to turn (a search for
        the most lines that fit): their counts go to the counter's bounded recent memory.
        """
        section = section_text(text)
        return section, self.count(section, remember=remember)

    def saved(self, node_id: str) -> int | None:
        """The counts kept for a node as one int, for a saved session to hand back to
        :meth:`restore`: ``version << 128`` and each visible state's count in 32 bits
        (all ones: not counted), the first state lowest (the session file's form)."""
        packed = self._counts.get(node_id)
        if packed is None:
            return None
        saved = packed >> _VERSION << _VERSION
        for k in range(4):
            count = (packed >> (_FIELD * k)) & _MASK
            saved |= (count - 1 if count else _MASK) << (_FIELD * k)
        return saved

    def restore(self, node: Node, packed: int) -> None:
        """Take back counts :meth:`saved` gave for ``node``, if they are for its current
        version (they are used only while it stays at that version).

        Raises:
            ValueError: ``packed`` is not such an int.
        """
        self.restore_many(((node, packed),))

    def restore_many(self, saved: Iterable[tuple[Node, int]]) -> None:
        """:meth:`restore` for each (node, counts) pair, in one pass (a loaded session's).

        Raises:
            ValueError: a count is not such an int (the pairs before it are taken).
        """
        counts, mask, top = self._counts, _MASK, _VERSION
        fields, high, low, ones = _FIELDS, _HIGH_BITS, _LOW_BITS, _ONES
        for node, packed in saved:
            if type(packed) is not int or packed < 0:
                raise ValueError(f"saved token counts must be an int >= 0, got {packed!r}")
            version = node.version
            if packed >> top != version or version > mask:
                continue
            # each field plus one, wrapping within it (all ones, not counted, to 0): the
            # low bits plus one carry at most into the field's high bit, kept apart
            each = packed & fields
            counts[node.id] = version << top | ((each & low) + ones) ^ (each & high)

    def forget(self, node_id: str) -> None:
        """Drop what is cached for a node (it left the graph, or its section changed at
        the same version: :meth:`~dagctx.graph.ContextGraph.take_moved`)."""
        self._counts.pop(node_id, None)
        self._variants.pop(node_id, None)
        self._asked.discard(node_id)

    def __len__(self) -> int:
        return len(self._counts)


def reference_section(node: Node, cache: SectionCache) -> tuple[str, int]:
    """Text and tokens of the reference to ``node``."""
    text = reference_text(node)
    return text, cache.count(text)
