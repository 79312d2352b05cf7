"""Budgeted rendering of the context graph into a prompt.

Owns the walk, the section cache, the degrade order, the allocation under the hard
budget, the layout by volatility and the :class:`Projection` result; :mod:`.build` is the
entry point. Reads the graph and the nodes and counts with :mod:`dagctx.tokens`; must not
import the session, the watcher, the stores or anything that does I/O.

Layout by volatility (:mod:`.bands`), so that provider prompt caches keep hitting: the
text is three bands, each in walk order — *stable* (the workspace: groups, files,
outlines, tools; an edited file changes in place), *conversation* (topics and messages),
*volatile* (the session node) — then the changes since last turn and the left-out
footer. What the allocation decides does not depend on the order, so the budget stays
exact and the text deterministic. Under pressure the later bands and the changes section
are given a reservation that grows in steps of 1/32 of the budget
(:func:`.bands.workspace_room`), so a new message does not move the workspace's
allocation. :attr:`Projection.stable_prefix_tokens` measures the identical prefix on the
text (:mod:`.prefix`); :meth:`Projection.to_messages` splits the text at the band ends for
providers' cache breakpoints (:mod:`.messages`).
"""

from dagctx.projection.build import build_projection
from dagctx.projection.messages import CONTEXT_INSTRUCTIONS
from dagctx.projection.result import Projection, Section
from dagctx.projection.sections import SectionCache

__all__ = ["CONTEXT_INSTRUCTIONS", "Projection", "Section", "SectionCache", "build_projection"]
