"""The stable prefix: how much of a projection's text a provider prompt cache can reuse.

A provider caches a byte-identical prefix of the prompt. :func:`stable_prefix` compares
the new text with the previous projection's, section by section in text order, and
counts the tokens of the leading sections whose text is byte-identical at the same
place (whole sections only: a section that differs anywhere counts nothing, since token
boundaries inside it are not known to line up). It also names what ended the prefix.
Reads only the text and the sections it is given; must not import the projector, the
allocation or the session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dagctx.projection.result import Projection, Section

#: ``prefix_break`` when the whole text is byte-identical to the previous projection's.
UNCHANGED = ""
NO_PREVIOUS = "no previous projection"
TAIL = "the changes since last turn or the left-out footer"


def stable_prefix(
    text: str,
    tokens: int,
    sections: Sequence[Section],
    lengths: Sequence[int],
    previous: Projection | None,
    label: Callable[[str], str],
    known: tuple[int, int, int] = (0, 0, 0),
) -> tuple[int, str]:
    """(tokens, break) for ``text`` made of the texts of ``sections`` (in text order, the
    length of each in ``lengths``), followed by the changes section and the footer.

    The first is ``tokens`` (the count of all of ``text``) when the whole text is
    byte-identical to ``previous.text``, otherwise the tokens of the leading sections
    byte-identical to it at the same offset. ``break`` names the first section that differs as
    ``#id (label)`` (``label`` gives a node's label; the node there before instead when it
    moved further on and the one now there only closed the gap), :data:`TAIL` when every section is
    identical and only what follows them differs, :data:`UNCHANGED` when the whole text
    is identical, :data:`NO_PREVIOUS` without a previous projection. ``known`` is (count,
    characters, tokens) of leading sections the caller knows are unchanged (their texts
    are not compared).
    """
    if previous is None:
        return 0, NO_PREVIOUS
    old = previous.text
    if text == old:
        return tokens, UNCHANGED
    first, offset, tokens = known
    for k in range(first, len(sections)):
        end = offset + lengths[k]
        if end > len(old) or old[offset:end] != text[offset:end]:
            nid = _breaker(sections, previous.sections, k)
            return tokens, f"#{nid} ({label(nid)})"
        tokens += sections[k].tokens
        offset = end
    return tokens, TAIL


def _breaker(sections: Sequence[Section], before: Sequence[Section], k: int) -> str:
    """The node that ended the prefix at section ``k`` (the first ``k`` are the same in
    ``sections`` and ``before``): the one now there, unless the one there before moved
    further on (a file that moved to a later band) while the one now there was further
    on before (it only closed the gap): then the one that moved."""
    now = sections[k].node_id
    if k < len(before) and before[k].node_id != now:
        left = before[k].node_id
        if any(s.node_id == now for s in before[k + 1 :]) and any(
            s.node_id == left for s in sections[k + 1 :]
        ):
            return left
    return now
