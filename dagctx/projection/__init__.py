"""Budgeted rendering of the context graph into a prompt.

Owns the walk, the section cache, the degrade order, the allocation under the hard
budget, the layout by volatility and the :class:`Projection` result; :mod:`.build` is the
entry point. Reads the graph and the nodes and counts with :mod:`dagctx.tokens`; must not
import the session, the watcher, the stores or anything that does I/O.

Layout by volatility (:mod:`.bands`), so that provider prompt caches keep hitting: the
text is four bands, each in walk order — *stable* (the workspace: groups, files,
outlines, tools), *changed* (files whose content changed during the session),
*conversation* (topics and messages), *volatile* (the session node) — then the changes
since last turn and the left-out footer. What the allocation decides does not depend on
the order, so the budget stays exact and the text deterministic.

Cache policy, each part a function of the graph, the focus and the budget (never of
earlier turns), so a fresh projector renders the same text and a checkpoint restore with
no content change in between gives back the saved text:

- *Hysteresis*: a file moves to the changed band at its first content change and stays
  there (:attr:`~dagctx.nodes.text.TextNode.edited`, untouched by a restore, which does
  not touch content either); it never moves back, so an agent's working set rewrites
  the stable band once per file, not once per edit. The flag is saved with the node (a
  loaded session goes on like the original); a resume does not set it for files edited
  while nobody watched (those are changes found, not made in the session), so a session
  saved from a cold start and resumed after offline edits lays out its text as a cold
  start does.
- *What stays byte-identical* (SPEC §4.6, as issue 17 refines it): when one node changes
  and no other node's rendered state does, the text before its section is
  byte-identical to the previous turn's — except on the one turn a file moves to the
  changed band, when the text before the place it leaves is.
- *Reservation*: under pressure the later bands and the changes section get a reservation
  that grows in steps of 1/32 of the budget, 1/16 while a conversation is shown
  (:func:`.bands.workspace_room`), so a new message or an edit of a changed file does
  not move the workspace's allocation; what the workspace loses to the rounding is at
  most one step.

:attr:`Projection.stable_prefix_tokens` measures the identical prefix on the text
(:mod:`.prefix`); :meth:`Projection.to_messages` splits the text into content blocks at
the band ends, at each recent conversation section's end and where the settled band
ended before its last chunk, with providers' cache breakpoints at the band ends
(:mod:`.messages`).
"""

from dagctx.projection.build import build_projection
from dagctx.projection.messages import CONTEXT_INSTRUCTIONS
from dagctx.projection.result import Projection, Section
from dagctx.projection.sections import SectionCache

__all__ = ["CONTEXT_INSTRUCTIONS", "Projection", "Section", "SectionCache", "build_projection"]
