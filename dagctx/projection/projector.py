"""The incremental projector: one per (graph, section cache), one plan per budget.

A :class:`Projector` keeps, between turns, the walk of the graph (:class:`Layout`), and
per budget an :class:`Allocation` and a :class:`~dagctx.projection.assembly.Body`. A
projection reads the graph's traces since the budget's last projection to learn which
nodes changed, updates the plan and the shown sections for those, and assembles the
text. A structure change (nodes, edges, order, a requested state) rebuilds the layout;
the first projection of a budget builds its plan — both O(graph). Positions in the trace
log are plain ints, not cursors: when the log dropped traces after one, that layout or
plan is rebuilt the same way.

The projector also keeps the :class:`~dagctx.projection.relevance.Relevance` that levels
each entry: a focus set where there was none levels every entry and rebuilds the plans;
a new focus in place of another (or none) and changed nodes level again the entries
whose score moved, and the entries whose level moved without a trace of their own (a
file's BM25 moves when another file changes or the focus does) are handed to each plan
as changed (a plan whose focus was set or cleared is rebuilt;
:meth:`~dagctx.projection.allocation.Allocation.refocus`). Changes that move the levels
of most files (a new focus) build the plan again from the kept one
(:meth:`~dagctx.projection.allocation.Allocation.moves_many`; ``previous``): its counts,
states and search-tree leaves are taken over, the degrade order laid out again, and the
shown sections are patched, not assembled afresh. A new focus also names the files whose
outline was counted and may read otherwise under it
(:meth:`~dagctx.projection.sections.SectionCache.refocus`): each plan takes them as
changed (counted again where the outline reads otherwise, rendered again where shown).
When a first focus left the
reference graph to be read later (:attr:`~dagctx.projection.relevance.Relevance.later`),
the worker reading it is started once the projection is made, and the next projection
levels every entry with it and rebuilds the plans.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from dagctx._plural import counted
from dagctx._quote import inline
from dagctx.graph import ContextGraph
from dagctx.nodes.base import Node, NodeState, Trace
from dagctx.nodes.text import TextNode
from dagctx.projection.allocation import OMIT, Allocation
from dagctx.projection.assembly import (
    CHANGES_SHARE,
    FOOTER_TOKENS,
    Body,
    LeftOut,
    changes_section,
    footer,
    left_out_names,
)
from dagctx.projection.bands import (
    CONVERSATION,
    HELD_STEPS,
    SETTLED,
    STABLE,
    TALK_STEPS,
    band_of,
    ends,
    in_bands,
    last_chunk,
    settled,
    within,
    workspace_room,
)
from dagctx.projection.layout import Layout
from dagctx.projection.prefix import stable_prefix
from dagctx.projection.relevance import Relevance
from dagctx.projection.result import Account, Projection, Section
from dagctx.projection.sections import SectionCache, reference_text, unsafe_start
from dagctx.projection.walk import walk

STATES = tuple(NodeState)
KEPT_BUDGETS = 3  # plans kept for this many budgets (most recently used)
COMPANION_REASON = "left out with its companion (a tool call and its result go together)"


@dataclass(slots=True)
class _Plan:
    """What is kept for one budget between projections."""

    alloc: Allocation
    body: Body
    mark: int  # trace log position up to which changes are accounted for
    last: Projection | None = None
    left: LeftOut | None = None  # the left-out nodes by directory (None: count afresh)
    # the count of each name the footer listed lately (assembly.footer sums them)
    names: dict[str, int] = field(default_factory=dict)


class Projector:
    """Builds projections of ``graph`` incrementally (see the module docstring)."""

    __slots__ = (
        "_chunk_end",
        "_held",
        "_held_total",
        "_key",
        "_labels_shared",
        "_lock",
        "_mark",
        "_plans",
        "_prio_shared",
        "_recounted",
        "_releveled",
        "_settled",
        "_talk",
        "cache",
        "graph",
        "labels",
        "layout",
        "prio",
        "relevance",
    )

    def __init__(self, graph: ContextGraph, cache: SectionCache) -> None:
        self.graph = graph
        self.cache = cache
        self.layout: Layout | None = None
        self._plans: dict[int, _Plan] = {}
        self._mark = 0
        self.labels: list[str] = []
        # each entry's priority where it is not its type's default (the reasons of the
        # account name it; most nodes keep the default)
        self.prio: dict[int, int] = {}
        self._labels_shared = self._prio_shared = False
        self.relevance = Relevance(cache.file_terms)
        # (trace position, entries whose relevance level changed then without a trace)
        self._releveled: list[tuple[int, list[int]]] = []
        # (trace position, entries whose outline may read otherwise since, for a new focus)
        self._recounted: list[tuple[int, list[int]]] = []
        self._lock = threading.Lock()
        self._key = ""  # the cache key of the projection being built
        # the tokens of each entry's section at its requested state, for the entries
        # outside the stable band with any (a few conversation sections, not an entry per
        # file), and their sum
        self._held: dict[int, int] = {}
        self._held_total = 0
        self._settled: set[str] = set()  # ids of the conversation's settled sections
        self._chunk_end = ""  # id of the last settled section before the last chunk
        self._talk = False  # whether the layout holds a conversation (a topic or a message)

    # -- layout -----------------------------------------------------------------------

    def _new_layout(self) -> Layout:
        graph = self.graph
        for moved in graph.take_moved():
            self.cache.forget(moved)
        layout = Layout(graph)
        self.layout = layout
        self._plans.clear()
        hidden = (graph.get(nid) for nid in layout.hidden if nid in graph)
        self.relevance.find_focus(layout, hidden)
        self.relevance.level_all(layout)
        self.cache.refocus(self.relevance.focus, self.relevance.mentions)
        self._releveled.clear()
        self._recounted.clear()
        nodes, ref = layout.nodes, layout.ref
        self.labels = [("" if ref[i] else inline(n.label())) for i, n in enumerate(nodes)]
        self.prio = {
            i: n.priority
            for i, n in enumerate(nodes)
            if not ref[i] and n.priority != n.default_priority
        }
        talk = [n for i, n in enumerate(nodes) if not ref[i] and band_of(n) == CONVERSATION]
        cut, before = settled(talk), last_chunk(talk)
        self._settled = {n.id for n in talk[:cut]}
        self._talk = bool(talk)
        self._chunk_end = talk[before - 1].id if 0 < before < cut else ""
        self._labels_shared = self._prio_shared = False
        self._mark = len(self.graph.traces)
        self._held, self._held_total = {}, 0
        self._hold(range(len(layout)))
        return layout

    def _hold(self, entries: Iterable[int]) -> None:
        """Recount :attr:`_held` for ``entries`` (their nodes may have changed)."""
        layout, held, cache = self.layout, self._held, self.cache
        assert layout is not None
        nodes, ref, requested = layout.nodes, layout.ref, layout.requested
        total = self._held_total
        for i in entries:
            new = 0
            if not ref[i] and band_of(nodes[i]) != STABLE:
                new = cache.tokens(nodes[i], requested[i])
            total += new - held.pop(i, 0)
            if new:
                held[i] = new
        self._held_total = total

    def _current_layout(self) -> Layout:
        """The layout, rebuilt if structure or a requested state changed since."""
        graph, layout = self.graph, self.layout
        traces = graph.traces
        stale = not traces.start <= self._mark <= len(traces)  # another graph, or dropped
        if layout is None or layout.version != graph.structure_version or stale:
            return self._new_layout()
        relevance = self.relevance
        later = relevance.later
        if self._mark == len(traces):
            return self._take_later(layout) if later else layout
        first, requested, nodes = layout.first, layout.requested, layout.nodes
        focus = relevance.focus
        seen: set[str] = set()
        changed: list[int] = []
        for t in traces.since(self._mark):
            nid = t.node_id
            if nid in seen:
                continue
            seen.add(nid)
            i = first.index(nid)
            if i < 0:
                if nid in layout.hidden and nid in graph and graph.get(nid).state:
                    return self._new_layout()  # a hidden node asks to be shown now
                continue
            node = nodes[i]
            if node.state != requested[i]:
                return self._new_layout()
            relevance.offer_focus(node)
            changed.append(i)
            label, prio = node.label(), node.priority
            if label != self.labels[i]:
                if self._labels_shared:
                    self.labels, self._labels_shared = list(self.labels), False
                self.labels[i] = label
                for plan in self._plans.values():
                    plan.left = None
            if prio != self.prio.get(i, node.default_priority):
                if self._prio_shared:
                    self.prio, self._prio_shared = dict(self.prio), False
                if prio == node.default_priority:
                    del self.prio[i]
                else:
                    self.prio[i] = prio
        self._mark = len(traces)
        if relevance.focus != focus:
            moved = relevance.refocus(layout, changed)
            if moved is None:  # a focus where there was none: every file is indexed
                relevance.level_all(layout)
                self._plans.clear()
                self._releveled.clear()
                self._recounted.clear()
            elif moved:
                self._releveled.append((self._mark, moved))
            outlined = self._refocus_outlines(layout)
            if outlined and self._plans:
                self._recounted.append((self._mark, outlined))
            self._hold(outlined)
        elif changed:
            moved = relevance.relevel(layout, changed)
            if moved:
                self._releveled.append((self._mark, moved))
        self._hold(changed)
        return self._take_later(layout) if later and relevance.later else layout

    def _refocus_outlines(self, layout: Layout) -> list[int]:
        """Have the section cache render outlines for the focus in effect; returns the
        entries whose outline was counted and may read otherwise now
        (:meth:`SectionCache.refocus`), which each plan counts again as changed."""
        relevance, first = self.relevance, layout.first
        ids = self.cache.refocus(relevance.focus, relevance.mentions)
        return sorted(first[nid] for nid in ids if nid in first)

    def _take_later(self, layout: Layout) -> Layout:
        """Level every entry with the reference graph read since the last projection
        (waiting for it if need be) and rebuild the plans, as for a new focus."""
        self.relevance.level_all(layout)
        self._plans.clear()
        self._releveled.clear()
        return layout

    # -- projection -------------------------------------------------------------------

    def project(
        self,
        budget: int,
        changes: Sequence[Trace] = (),
        previous: Projection | None = None,
        cache_key: str = "",
    ) -> Projection:
        """Render the graph into a :class:`Projection` of at most ``budget`` tokens
        (carrying ``cache_key`` as :attr:`Projection.cache_key`).

        Projections of one projector run one at a time (a tick on the session's loop and a
        ``project()`` from another thread share its state).
        """
        with self._lock:
            self._key = cache_key
            try:
                projection = self._project(budget, changes, previous)
            finally:
                self.cache.release()
            self.relevance.read_later()
            return projection

    def pack_reads(self, files: Sequence[tuple[TextNode, bytes]], made_by: str) -> str:
        """What a session file keeps of what the ranking read of ``files``
        (:meth:`~dagctx.projection.relevance.Relevance.pack`)."""
        with self._lock:
            return self.relevance.pack(files, made_by)

    def _plan(self, layout: Layout, budget: int) -> _Plan:
        traces = self.graph.traces
        focus = self.relevance.focus
        plan = self._plans.pop(budget, None)
        if plan is not None and traces.start <= plan.mark <= len(traces):
            first = layout.first
            traced = {first[t.node_id] for t in traces.since(plan.mark) if t.node_id in first}
            for mark, outlined in self._recounted:
                if mark > plan.mark:
                    traced.update(outlined)
                    plan.body.stale.update(outlined)
            changed = set(traced)
            for mark, moved in self._releveled:
                if mark > plan.mark:
                    changed.update(moved)
            if plan.alloc.moves_many(changed):  # built again from the kept plan's parts
                plan.alloc = Allocation(
                    layout,
                    self.cache,
                    focus,
                    previous=plan.alloc,
                    changed=sorted(traced),
                    relevelled=changed - traced,
                )
            elif not self._takes(plan.alloc, changed):
                plan.alloc = Allocation(layout, self.cache, focus)
            plan.mark = len(traces)
        else:
            body = Body(len(layout), self._within)
            plan = _Plan(Allocation(layout, self.cache, focus), body, len(traces))
        while len(self._plans) >= KEPT_BUDGETS:
            del self._plans[next(iter(self._plans))]
        self._plans[budget] = plan
        self._prune_releveled()
        return plan

    def _takes(self, alloc: Allocation, changed: set[int]) -> bool:
        """Whether the kept plan ``alloc`` takes the changes at entries ``changed`` (its
        last turn undone), or is to be built again: a focus set or cleared, or changes
        :meth:`Allocation.apply_changes` gives up on."""
        alloc.undo_turn()
        return alloc.refocus(self.relevance.focus) and (
            not changed or alloc.apply_changes(sorted(changed))
        )

    def _prune_releveled(self) -> None:
        """Forget the level and outline changes every kept plan has accounted for."""
        if self._releveled or self._recounted:
            oldest = min(p.mark for p in self._plans.values())
            self._releveled = [(m, moved) for m, moved in self._releveled if m > oldest]
            self._recounted = [(m, moved) for m, moved in self._recounted if m > oldest]

    def _project(
        self, budget: int, changes: Sequence[Trace], previous: Projection | None
    ) -> Projection:
        graph, cache = self.graph, self.cache
        layout = self._current_layout()
        plan = self._plan(layout, budget)
        alloc = plan.alloc
        changes_text, changes_tokens = changes_section(changes, graph, cache, budget)
        if alloc.over(budget - changes_tokens):
            changes_text, changes_tokens = changes_section(
                changes, graph, cache, budget // CHANGES_SHARE
            )
        room = max(0, budget - changes_tokens)
        held = self._held_total
        if alloc.over(room):  # the later bands' growth must not move the workspace
            steps = TALK_STEPS if self._talk else HELD_STEPS
            room = min(room, workspace_room(budget, changes_tokens, held, steps))
        alloc.decide(room, min(FOOTER_TOKENS, budget // 20), held)
        alloc.drop_lone_companions(layout.first)
        if self._moves(alloc):
            projection = self._assemble_slow(plan, budget, changes_text, changes_tokens, previous)
        else:
            projection = self._assemble(plan, budget, changes_text, changes_tokens, previous)
        plan.last = projection
        return projection

    # -- assembly ---------------------------------------------------------------------

    def _moves(self, alloc: Allocation) -> bool:
        """Whether a multi-parent node whose first place is hidden shows up elsewhere."""
        layout = self.layout
        assert layout is not None
        vis = alloc.vis
        for nid, refs in layout.refs.items():
            if not vis[layout.first[nid]] and any(vis[e] for e in refs):
                return True
        return False

    def _section(self, alloc: Allocation, i: int) -> Section | None:
        layout = self.layout
        assert layout is not None
        node = layout.nodes[i]
        vis, cur = alloc.vis, alloc.cur
        if not vis[i]:
            return None
        if layout.ref[i]:
            f = layout.first[node.id]
            if not vis[f] or cur[f] == OMIT or alloc.dropped[f]:
                return None
            return Section(
                node.id,
                STATES[layout.requested[i]],
                STATES[cur[f]],
                alloc.cref[i],
                reference=True,
                version=node.version,
            )
        state = cur[i]
        if state == OMIT or alloc.dropped[i]:
            return None
        if i in alloc.muted:  # a directory's heading that says nothing: no text
            return Section(
                node.id, STATES[layout.requested[i]], STATES[state], 0, version=node.version
            )
        cut = alloc.cut.get(i)
        if cut is not None:
            cuttable = getattr(node, "cuttable_lines", None)
            lines = (cuttable() - cut[0]) if cuttable is not None else 0
            return Section(
                node.id, STATES[layout.requested[i]], STATES[state], cut[2], lines,
                version=node.version,
            )  # fmt: skip
        return Section(
            node.id, STATES[layout.requested[i]], STATES[state], alloc.c(i, state),
            version=node.version,
        )  # fmt: skip

    def _text(self, alloc: Allocation, i: int, section: Section) -> str:
        layout = self.layout
        assert layout is not None
        node = layout.nodes[i]
        if section.reference:
            return reference_text(node)
        if i in alloc.muted:
            return ""
        cut = alloc.cut.get(i)
        if cut is not None:
            return cut[1]
        return self.cache.text(node, section.rendered_state)

    def _assemble(
        self,
        plan: _Plan,
        budget: int,
        changes_text: str,
        changes_tokens: int,
        previous: Projection | None,
    ) -> Projection:
        layout = self.layout
        assert layout is not None
        alloc, body = plan.alloc, plan.body
        dirty, alloc.dirty = alloc.dirty, set()
        if not body.valid or len(dirty) * 4 > len(layout):
            body.rebuild(
                len(layout),
                lambda i: self._shown(alloc, i),
            )
            first = 0
            plan.left = None
        else:
            order = sorted(dirty)
            was = [body.shown[i] for i in order]
            first = body.patch(
                order,
                lambda i: self._section(alloc, i),
                lambda i, s: self._text(alloc, i, s),
                self._band,
            )
            if body.moved and plan.left is not None:
                self._left_moved(plan.left, body, order, was)
        sections, pieces, lengths, (band_ends, block_ends) = body.ordered(self._chunk_end)
        omitted = len(layout.first) - body.nodes
        used = body.tokens + changes_tokens
        if plan.left is None:
            plan.left = self._left_out(body)
        names = plan.left.names(self._node_id, self._entry_label) if omitted else []
        footer_text, footer_tokens = footer(
            omitted, names, self.cache, budget, budget - used, plan.names
        )
        text = "".join([*pieces, changes_text, footer_text])
        body.keep(text)
        unsafe = body.unsafe or unsafe_start(changes_text) or unsafe_start(footer_text)
        tokens = self._final_count(text, used + footer_tokens, unsafe)
        if tokens > budget:  # the sum was not exact: let the careful path drop sections
            body.valid = False
            return self._assemble_slow(plan, budget, changes_text, changes_tokens, previous)
        known = body.before(first) if previous is plan.last and first != 0 else (0, 0, 0)
        stable, broken = stable_prefix(
            text, tokens, sections, lengths, previous, self._label, known
        )
        return Projection(
            text,
            tokens,
            budget,
            sections,
            stable_prefix_tokens=stable,
            account=self._account(alloc, body),
            prefix_break=broken,
            band_ends=band_ends,
            block_ends=block_ends,
            cache_key=self._key,
        )

    def _final_count(self, text: str, summed: int, unsafe: int | bool) -> int:
        """The exact token count of the final ``text``, whose pieces' cache counts add up
        to ``summed``: that sum less one section boundary where the sum is proven
        (:mod:`dagctx.projection.sections`), else an encoding of the whole text."""
        junction = self.cache.junction
        if junction is None or unsafe:
            return self.cache.counter.count_exact(text)
        return summed - junction if text else 0

    def _band(self, i: int) -> int:
        """Entry ``i``'s band (:mod:`dagctx.projection.bands`; a reference goes with the
        node it points to)."""
        layout = self.layout
        assert layout is not None
        return self._band_of(layout.nodes[i])

    def _band_of(self, node: Node) -> int:
        """``node``'s band: :func:`~.bands.band_of`, the conversation's older sections
        settled (:func:`~.bands.settled`, counted when the layout was built)."""
        band = band_of(node)
        return SETTLED if band == CONVERSATION and node.id in self._settled else band

    def _within(self, i: int) -> int:
        """Where entry ``i`` goes inside its band (:func:`~.bands.within`)."""
        layout = self.layout
        assert layout is not None
        node = layout.nodes[i]
        return within(band_of(node), node)

    def _shown(self, alloc: Allocation, i: int) -> tuple[tuple[Section, str] | None, int]:
        layout = self.layout
        assert layout is not None
        section = self._section(alloc, i)
        if section is None:
            return None, False
        return (section, self._text(alloc, i, section)), self._band(i)

    def _left_out(self, body: Body) -> LeftOut:
        """The nodes not shown in ``body``, counted afresh (one pass over the layout)."""
        layout = self.layout
        assert layout is not None
        ref, shown, labels = layout.ref, body.shown, self.labels

        def left() -> Iterator[tuple[int, str]]:
            i, n = 0, len(ref)
            while i < n:
                i = shown.find(0, i)
                if i < 0:
                    break
                if not ref[i]:
                    yield i, labels[i]
                i += 1

        return LeftOut.of(left())

    def _left_moved(self, left: LeftOut, body: Body, order: list[int], was: list[int]) -> None:
        """Bring ``left`` up to date with the entries of ``order`` (shown as in ``was``
        before ``body`` was patched) that were hidden or shown."""
        layout = self.layout
        assert layout is not None
        ref, shown, labels = layout.ref, body.shown, self.labels
        for i, before in zip(order, was, strict=True):
            if ref[i] or bool(before) == bool(shown[i]):
                continue
            if before:
                left.add(i, labels[i])
            else:
                left.remove(i, labels[i])

    def _node_id(self, i: int) -> str:
        layout = self.layout
        assert layout is not None
        return layout.nodes[i].id

    def _entry_label(self, i: int) -> str:
        return self.labels[i]

    def _label(self, node_id: str) -> str:
        layout = self.layout
        assert layout is not None
        return self.labels[layout.first[node_id]]

    def _account(self, alloc: Allocation, body: Body) -> Account:
        layout = self.layout
        assert layout is not None
        nodes, ref, requested = layout.nodes, layout.ref, layout.requested
        cur, vis, dropped, gone = (
            bytes(alloc.cur),
            bytes(alloc.vis),
            bytes(alloc.dropped),
            bytes(body.shown),
        )
        cut = {i: keep for i, (keep, _, _) in alloc.cut.items()}
        labels, prio = self.labels, self.prio
        self._labels_shared = self._prio_shared = True

        def omitted() -> list[str]:
            return [nodes[i].id for i in range(len(nodes)) if not gone[i] and not ref[i]]

        def priority(i: int) -> int:
            return prio.get(i, nodes[i].default_priority)

        def reasons() -> dict[str, str]:
            out: dict[str, str] = {}
            for i in range(len(nodes)):
                if ref[i]:
                    continue
                if dropped[i]:
                    why = COMPANION_REASON
                elif not vis[i]:
                    why = "inside a collapsed parent (budget)"
                elif cur[i] == OMIT:
                    why = f"left out: budget (priority {priority(i)})"
                elif i in cut:
                    why = f"cut to {counted(cut[i], 'line')} to fit the budget"
                elif cur[i] < requested[i]:
                    why = f"degraded for budget (priority {priority(i)})"
                else:
                    continue
                out[nodes[i].id] = why
            return out

        def label_map() -> dict[str, str]:
            return {nodes[i].id: labels[i] for i in range(len(nodes)) if not ref[i]}

        def notes() -> dict[str, str]:
            found = ((i, nodes[i].safety_note()) for i in range(len(nodes)) if not ref[i])
            return {nodes[i].id: note for i, note in found if note is not None}

        return Account(omitted, reasons, label_map, self.relevance.snapshot(layout), notes)

    # -- the careful path ----------------------------------------------------------------

    def _assemble_slow(
        self,
        plan: _Plan,
        budget: int,
        changes_text: str,
        changes_tokens: int,
        previous: Projection | None,
    ) -> Projection:
        """Re-walk the graph at the decided states and assemble from scratch, dropping the
        last sections until the exact count of the text (:meth:`_final_count`) proves
        the budget. Used when a multi-parent node moves to a later parent (its first
        place is hidden) or when the final text did not fit."""
        layout = self.layout
        assert layout is not None
        alloc, body = plan.alloc, plan.body
        body.valid = False
        alloc.dirty.clear()
        nodes, ref, first = layout.nodes, layout.ref, layout.first
        state = {nodes[i].id: alloc.cur[i] for i in range(len(nodes)) if not ref[i]}
        cut = {nodes[i].id: c for i, c in alloc.cut.items()}
        dropped = {nodes[i].id for i in range(len(nodes)) if alloc.dropped[i]}
        muted = {nodes[i].id for i in alloc.muted}
        reasons: dict[str, str] = {nid: COMPANION_REASON for nid in dropped}
        # (band, node, section, text) in walk order
        parts: list[tuple[int, Node, Section, str]] = []
        shown: set[str] = set()
        for entry in walk(self.graph, lambda n: STATES[state.get(n.id, n.state)]):
            node = entry.node
            st = STATES[state.get(node.id, node.state)]
            if node.id in dropped:
                continue
            if entry.reference:
                text = reference_text(node)
                section = Section(
                    node.id, node.state, st, self.cache.count(text), reference=True,
                    version=node.version,
                )  # fmt: skip
            else:
                shown.add(node.id)
                c = cut.get(node.id)
                if node.id in muted:
                    text, section = "", Section(node.id, node.state, st, 0, version=node.version)
                elif c is not None:
                    cuttable = getattr(node, "cuttable_lines", None)
                    lines = (cuttable() - c[0]) if cuttable is not None else 0
                    text = c[1]
                    section = Section(node.id, node.state, st, c[2], lines, version=node.version)
                else:
                    text, tokens = self.cache.get(node, st)
                    section = Section(node.id, node.state, st, tokens, version=node.version)
            parts.append((self._band_of(node), node, section, text))
        for i, peers in alloc.companions.items():
            nid = nodes[i].id
            if nid in shown and any(p not in shown for p in peers):
                shown.discard(nid)
                reasons[nid] = COMPANION_REASON
                parts = [p for p in parts if p[2].reference or p[2].node_id != nid]
        omitted = [nodes[i].id for i in range(len(nodes)) if not ref[i]]
        omitted = [nid for nid in omitted if nid not in shown]
        account = self._account(alloc, body)
        base = account.reasons()
        for nid in omitted:
            reasons.setdefault(nid, base.get(nid, "left out: budget"))
        placed = in_bands((b, node, (b, section, text)) for b, node, section, text in parts)
        unsafe = unsafe_start(changes_text) or any(unsafe_start(t) for _, _, t in placed)
        while True:
            used = sum(s.tokens for _, s, _ in placed) + changes_tokens
            names = left_out_names((nid, self.labels[first[nid]]) for nid in omitted)
            footer_text, footer_tokens = footer(
                len(omitted), names, self.cache, budget, budget - used, plan.names
            )
            text = "".join(t for _, _, t in placed) + changes_text + footer_text
            tokens = self._final_count(
                text, used + footer_tokens, unsafe or unsafe_start(footer_text)
            )
            if tokens <= budget or not placed:
                break
            # Deterministic: the last section goes (latest band first), then count again.
            _, dropped_section, _ = placed.pop()
            if not dropped_section.reference:
                omitted.append(dropped_section.node_id)
                reasons[dropped_section.node_id] = "left out: budget (final check)"
        if tokens > budget:
            text, tokens = "", 0
        sections = [s for _, s, _ in placed]
        for s in sections:
            if not s.reference and s.rendered_state < s.requested_state:
                reasons.setdefault(s.node_id, base.get(s.node_id, "degraded for budget"))
        degraded = {
            s.node_id: (s.requested_state, s.rendered_state)
            for s in sections
            if not s.reference and (s.rendered_state < s.requested_state or s.cut_lines)
        }
        reasons = {k: v for k, v in reasons.items() if k in degraded or k in omitted}
        texts = [t for _, _, t in placed]
        chunked = [s.node_id == self._chunk_end for _, s, _ in placed]
        band_ends, block_ends = ends(texts, [b for b, _, _ in placed], chunked)
        lengths = [len(t) for t in texts]
        stable, broken = stable_prefix(text, tokens, sections, lengths, previous, self._label)
        return Projection(
            text,
            tokens,
            budget,
            sections,
            omitted,
            degraded,
            reasons,
            stable,
            account.labels(),
            scores=account.scores(),
            notes=account.notes(),
            prefix_break=broken,
            band_ends=band_ends,
            block_ends=block_ends,
            cache_key=self._key,
        )
