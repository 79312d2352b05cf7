"""The volatility layout: which band each rendered section goes in, and the band order.

A provider caches the longest byte-identical prefix of a prompt, so the projection puts
what rarely changes first and what changes often last. Sections are placed in three
bands, in this order:

1. **stable**: the workspace — groups, directories, files, outlines, tool definitions —
   in walk order; an edited file changes in place, so the text before it stays.
2. **conversation**: topics and messages, which grow at their end every turn.
3. **volatile**: nodes that declare ``volatile`` (the session node: turn, time, the last
   changes).

The "changes since last turn" section and the left-out footer follow the last band.
Inside each band sections keep their walk order, so the group structure reads the same.
A band depends only on the node, never on the budget: the same graph gives the same
order (determinism), and an unbudgeted render is ordered the same way (fidelity). When
one node changes, the text before its section is byte-identical to the previous turn's.

Reads nodes only; must not import the projector, the allocation or the session.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from dagctx.nodes.base import Node
from dagctx.nodes.message import MessageNode
from dagctx.nodes.topic import TopicNode

STABLE, CONVERSATION, VOLATILE = range(3)

_T = TypeVar("_T")


def band_of(node: Node) -> int:
    """The band of ``node``'s section."""
    if node.volatile:
        return VOLATILE
    if isinstance(node, (TopicNode, MessageNode)):
        return CONVERSATION
    return STABLE


def in_bands(items: Iterable[tuple[int, _T]]) -> list[_T]:
    """The items (band, item), given in walk order, ordered by band (walk order kept
    inside each band)."""
    return [item for _, item in sorted(items, key=lambda pair: pair[0])]


def ends(texts: Sequence[str], bands: Sequence[int]) -> list[int]:
    """Offsets where each band ends in the text made of ``texts`` (in band order, their
    bands in ``bands``): one offset per band present, ascending."""
    out: list[int] = []
    offset = 0
    for k, text in enumerate(texts):
        offset += len(text)
        if k + 1 == len(texts) or bands[k + 1] != bands[k]:
            out.append(offset)
    return out
