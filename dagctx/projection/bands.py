"""The volatility layout: which band each rendered section goes in, and the band order.

A provider caches the longest byte-identical prefix of a prompt, so the projection puts
what rarely changes first and what changes often last. Sections are placed in five
bands, in this order:

1. **stable**: the workspace — groups, directories, files, outlines, tool definitions —
   in walk order.
2. **settled**: the older part of the conversation (:func:`settled`): its first
   conversation sections in walk order, in whole chunks of :data:`SETTLE`, while at
   least :data:`SETTLE` more follow them; the chunk never ends between a tool call and
   its result. It only grows, a chunk at a time (about every :data:`SETTLE` messages),
   so an edit of a changed file no longer rewrites the whole conversation after it:
   only the recent messages.
3. **changed**: files whose content has changed during the session
   (:attr:`~dagctx.nodes.text.TextNode.edited`), in the order of their last change
   (oldest first: :attr:`~dagctx.nodes.base.Node.seq`, the graph's logical clock), so
   the files an agent keeps editing gather at the band's end and an edit rewrites only
   the files changed after the edited one, not every edited file after it in walk
   order (:func:`within`). Hysteresis: a file
   moves here at its first change, once, and stays, so an agent's working set stops
   rewriting the stable band after each file's first edit, and a file never moves back
   and forth. The flag is part of the node (saved with it; a checkpoint restore, which
   leaves content alone, leaves it alone), so the band is a function of the graph; a
   resume does not set it for the files edited while nobody watched, so a session saved
   from a cold start and resumed after offline edits lays out its text as a cold start
   does.
4. **conversation**: the other topics and messages (the recent ones), which grow at
   their end every turn.
5. **volatile**: nodes that declare ``volatile`` (the session node: turn, time, the last
   changes).

The "changes since last turn" section and the left-out footer follow the last band.
Inside every other band sections keep their walk order, so the group structure reads the
same.
A band depends only on the node (and, for a conversation section, on how many follow it
in walk order), never on the budget: the same graph gives the same order (determinism),
and an unbudgeted render is ordered the same way (fidelity). When one node changes, the
text before its section is byte-identical to the previous turn's, except when its section
moves to a later place (a file's first change moves it to the changed band, a changed
file's next change to that band's end): then the text before the place it leaves is.

The later bands grow every turn (a new message, the session node's turn), and so does
the "changes since last turn" section; if the workspace got whatever they leave, its
allocation would move with every message and rewrite the stable band. So under pressure
the workspace gets the budget less a *reservation* for them that grows in steps of
``budget // HELD_STEPS`` (:func:`workspace_room`): while what they need stays inside one
step, the allocation sees the same room for the workspace and decides the same states.
The reservation is a function of what the later bands hold now, never of earlier turns,
so the projection stays a function of the graph, the focus and the budget. While the
projection holds a conversation (a topic or a message), the steps are of
``budget // TALK_STEPS``, twice as long: each step crossed rewrites the workspace and
everything after it, and an agent's conversation grows by its tool output every turn
(often a few percent of the budget), so a step of 1/32 is crossed nearly every turn.
Without one, the later bands are changed files and the session node, which grow by a
line now and then, and the shorter step leaves the workspace more room. What a step
costs is the room between what the later bands hold and the step above it (the left-out
footer's names take part of it).

What the stable band shows is decided by the focus, so a focus that moves with every
message would rewrite it, and the whole prompt after it, at each one. The focus is
sticky (:meth:`~dagctx.projection.relevance.Relevance.offer_focus`): ``Session.focus``
always takes effect at the next tick, and so does the first user message while no focus
is in effect, but a later user message replaces the focus only when it names a file or
directory of the workspace (a word of a path, numbers aside). "What next?" or "continue"
is appended to the conversation and leaves the workspace as it was.

Reads nodes only; must not import the projector, the allocation or the session.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from dagctx.nodes.base import Node
from dagctx.nodes.message import MessageNode
from dagctx.nodes.text import TextNode
from dagctx.nodes.topic import TopicNode

STABLE, SETTLED, CHANGED, CONVERSATION, VOLATILE = range(5)
SETTLE = 16  # the settled band takes the conversation's older sections in chunks of this many
HELD_STEPS = 32  # the later bands' reservation grows in steps of budget // HELD_STEPS
TALK_STEPS = 16  # ... of budget // TALK_STEPS while the projection holds a conversation

_T = TypeVar("_T")


def band_of(node: Node) -> int:
    """The band of ``node``'s section, the conversation's counted as :data:`CONVERSATION`
    (:func:`settled` says which of them are :data:`SETTLED`)."""
    if node.volatile:
        return VOLATILE
    if isinstance(node, (TopicNode, MessageNode)):
        return CONVERSATION
    if isinstance(node, TextNode) and node.edited:
        return CHANGED
    return STABLE


def settled(conversation: Sequence[Node]) -> int:
    """How many of the ``conversation`` sections (in walk order) go in the settled band:
    whole chunks of :data:`SETTLE` while at least :data:`SETTLE` follow them, ending
    neither after a tool call nor before a tool result, so that tool calls and their
    results stay together (the chunk ends before the calls instead)."""
    count = len(conversation)
    cut = (count - SETTLE) // SETTLE * SETTLE if count > SETTLE else 0
    while cut > 0 and (
        _role(conversation[cut - 1]) == "tool_call" or _role(conversation[cut]) == "tool_result"
    ):
        cut -= 1
    return cut


def last_chunk(conversation: Sequence[Node]) -> int:
    """How many of the ``conversation`` sections settled before the settled band's last
    chunk: what :func:`settled` gave while the conversation was :data:`SETTLE` sections
    shorter (the settled band's end before its last chunk settled)."""
    return settled(conversation[: max(0, len(conversation) - SETTLE)])


def _role(node: Node) -> str:
    return node.role if isinstance(node, MessageNode) else ""


def within(band: int, node: Node) -> int:
    """Where ``node``'s section goes inside ``band`` before walk order breaks ties: its
    last change (:attr:`~dagctx.nodes.base.Node.seq`) in the changed band, else 0 (walk
    order)."""
    return node.seq if band == CHANGED else 0


def in_bands(items: Iterable[tuple[int, Node, _T]]) -> list[_T]:
    """The items (band, node, item), given in walk order, in text order: by band, then
    :func:`within` the band (walk order kept for ties)."""
    return [item for *_, item in sorted(items, key=lambda t: (t[0], within(t[0], t[1])))]


def ends(
    texts: Sequence[str], bands: Sequence[int], chunked: Sequence[bool] = ()
) -> tuple[list[int], list[int]]:
    """(band ends, block ends) of the text made of ``texts`` (in band order, their bands
    in ``bands``), offsets ascending. Band ends: one per band present. Block ends, where
    the text is split into a provider's content blocks: the band ends, the end of each
    section of the conversation band, so that a message appended leaves the blocks before
    it, and the boundary where the conversation ended, as they were (a provider that
    reads a cached prefix at an earlier block boundary finds it there), and the end of
    the settled section ``k`` where ``chunked[k]`` (:func:`last_chunk`: where the settled
    band ended before its last chunk settled). So the settled band is at most two blocks,
    and a breakpoint at its end looks back past it into the workspace's blocks."""
    band_ends: list[int] = []
    block_ends: list[int] = []
    offset = 0
    for k, text in enumerate(texts):
        offset += len(text)
        closes = k + 1 == len(texts) or bands[k + 1] != bands[k]
        if closes:
            band_ends.append(offset)
        if (
            closes
            or bands[k] == CONVERSATION
            or (bands[k] == SETTLED and k < len(chunked) and chunked[k])
        ):
            block_ends.append(offset)
    return band_ends, block_ends


def workspace_room(budget: int, changes: int, held: int, steps: int = HELD_STEPS) -> int:
    """The room the allocation decides over when everything does not fit in ``budget``:
    ``held`` (the later bands' sections at their requested states) plus what is left
    after reserving ``changes + held`` (with the changes section's ``changes`` tokens)
    rounded up to a step of ``budget // steps`` (:data:`TALK_STEPS` while a conversation
    is shown). At most ``budget - changes``, and at most one step less."""
    step = max(1, budget // steps)
    reserved = -(-(changes + held) // step) * step
    return max(0, budget - reserved + held)
