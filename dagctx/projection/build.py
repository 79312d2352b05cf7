"""Budgeted projection of a context graph: the entry point and the algorithm it follows.

For a budget ``B``:

1. Walk the graph at the requested states (:mod:`dagctx.projection.walk`) and cost every
   entry (cached per node version and state). If everything plus the "changes since last
   turn" section fits, render it as is (fidelity: identical to an unbudgeted render).
2. Otherwise (with the changes section limited to ``B / 8``) degrade, least important
   first — by priority, then relevance level (:mod:`dagctx.projection.relevance`: the
   focus, the file's kind), then recency, a container counting as important as the most
   important node it shows — each node one level at a time down to COLLAPSED (or its
   ``min_state``; with a focus, a file unrelated to it down to omitted) until three
   quarters of the room is enough (all of it when that would leave nodes out, or
   degrade the most important file while it needs at most 30 % of the room or nothing
   else relates to the focus; a longer one, and any other file kept whole that needs
   more than 30 %, is cut to at most 25 % of the room first); if that is not enough,
   omit nodes in the same order. A container that stops showing its children hides them
   (their cost leaves the total; they count as left out). Once anything is left out,
   room is kept for the footer that lists it (by directory).
3. Breadth before depth: with a focus, give the best degraded files (one per 1,000
   tokens) the least focused cut that shows a definition in full, while those leave a
   quarter of the room; going back from the most important node, bring degraded nodes
   up to SUMMARY (outlines) while each fits; cut the file the degrade stopped at to what
   is left; then, no further down than the first that did not fit, upgrade every
   degraded node one level at a time while the next level fits. A directory shown with
   every file in it left out is left out too (the footer counts it); one that shows
   only subdirectories, its own files all left out, shows no heading (theirs carry
   their paths).
4. Fill what is left by deepening those least cuts (the best file first), then by
   cutting long text nodes (most important first): a source file
   shows the definitions that match the focus in full and the rest as outline lines,
   each elided range marked with its line numbers (without a focus its head and
   structure first); a file without an outline shows its first whole lines that fit,
   with a marker saying how many lines were cut.
5. Drop a tool call shown without its result (and vice versa); assemble the sections by
   band (:mod:`dagctx.projection.bands`: stable, conversation, volatile; walk
   order inside each), then the changes section and the footer, and prove
   ``tokens <= B`` on the final text: its exact count is the sum of the section counts
   where that is proven for the encoding's pre-tokenizer
   (:mod:`dagctx.projection.sections`), otherwise the text is encoded whole; while it
   does not fit, the last section is dropped and the text counted again.

Default priorities come from the node type (``Node.default_priority``: sessions and
conversation highest, groups 60, shell output 55, text files 40); within a priority the
relevance level decides, and ties go to the more recently changed node.

The work is incremental (:mod:`dagctx.projection.projector`): a turn after a few changes
re-renders and re-counts only the changed nodes and moves the allocation by what changed.
"""

from __future__ import annotations

from collections.abc import Sequence

from dagctx.graph import ContextGraph
from dagctx.nodes.base import Trace
from dagctx.projection.projector import Projector
from dagctx.projection.result import Projection
from dagctx.projection.sections import SectionCache, section_text


def build_projection(
    graph: ContextGraph,
    cache: SectionCache,
    budget: int,
    *,
    changes: Sequence[Trace] = (),
    previous: Projection | None = None,
    cache_key: str = "",
) -> Projection:
    """Render ``graph`` into a :class:`Projection` of at most ``budget`` tokens.

    ``cache`` keeps the incremental state between calls (for one graph at a time);
    ``changes`` are the traces shown in the changes section; ``previous`` is the last
    projection, for :attr:`Projection.stable_prefix_tokens`; ``cache_key`` is the
    session's prompt cache key (:attr:`Projection.cache_key`).
    """
    projector = cache.projector
    if not isinstance(projector, Projector) or projector.graph is not graph:
        projector = Projector(graph, cache)
        cache.projector = projector
    return projector.project(budget, changes, previous, cache_key)


__all__ = ["build_projection", "section_text"]
