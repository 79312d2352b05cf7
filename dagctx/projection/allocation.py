"""Budget allocation, kept up to date incrementally between turns (one per budget).

The allocation decides a state per visible node so that the sections fit in ``room``
tokens (the budget minus the changes section). It is the greedy of
:mod:`dagctx.projection.build`, computed so that a turn after a few changes costs
O(changed nodes × (depth + log n)) instead of a pass over the graph:

- **Degrade order.** Nodes are degraded least important first: by (priority, recency)
  where a container counts as important as the most important node it shows, so the
  nodes a container shows always come before the container itself. Each node has a *slot*
  in that order; a changed node gets the newest recency, so it moves to the end of its
  block, and a node whose relevance level moves goes where its key belongs in its new
  block (:mod:`.order`: into a hole or the gap left after each block; slots are re-laid
  out when a gap fills).
- **Static step deltas.** Because a container comes after everything it shows, when it
  collapses its children are already at their floor: the token delta of every degrade step
  is known in advance (a container's collapse removes the cost of its *frontier*, the
  entries it shows at their floor states). Pass A degrades every node to its floor
  (COLLAPSED or its ``min_state``), pass B then omits nodes; both are prefix-sum searches
  over the slots (:class:`~dagctx.projection._segtree.PrefixTree`): the greedy stops at the
  first step after which the total fits. Once a node is omitted or a container collapses,
  room for the "left out" footer is reserved.
- **Unrelated files first.** With a focus set, a file unrelated to it
  (:func:`~dagctx.projection.relevance.unrelated`) has OMIT as its floor: it is left out
  (and counted in the footer by directory) at its place in the order, before any
  related file is degraded, instead of showing as a name.
- **Breadth before depth.** The degrade aims at :data:`FULL_SHARE` percent of the room
  (the whole room when that share cannot hold every node as a name, or would degrade
  the most important text node while that file needs at most :data:`WHOLE_SHARE`
  percent of the room or, with a focus, no other file is related to it; a longer best
  file gets a focused cut of up to :data:`TOP_CUT_SHARE` percent first, the degrade
  aiming at the share less that — without a focus only a file of prose, a README, whose
  cut is the sections it opens with: there the rest of the project is what else there
  is to show, so no file takes the room). When the best file is kept whole within the share, so is
  any other file the degrade keeps whole that needs more than :data:`WHOLE_SHARE`
  percent, while others relate to the focus: each gets a focused cut of up to
  :data:`TOP_CUT_SHARE` percent and the degrade aims at the share less those
  (:meth:`Allocation._long_files`), so a long file does not leave the next related
  files as outlines; without a focus, a README kept so is cut the same way (the
  sections it opens with), as when it would be degraded. These shares are of the room
  less what the sections outside the stable band need (:meth:`Allocation.decide`'s
  ``held``; those come on top), so a new message does not move them. With a focus,
  the best files the degrade took down (one per :data:`DEPTH_TOKENS` of the room) then
  get the least focused cut that shows a definition in full, while it fits in their
  outline plus :data:`DEPTH_EXTRA` percent of the room and leaves :data:`DEPTH_KEEP`
  percent to the outlines (:meth:`Allocation._deepen`). Then, going back from the most
  important node, degraded nodes are brought up to SUMMARY (an outline) while each fits, up to the
  first that does not (at most :data:`MAX_OUTLINES`); when the best file was kept
  whole, the file the degrade stopped at then gets a focused cut of what is left
  (:meth:`Allocation._cut_next`), before smaller files ranked after it are raised;
  then, from the most important
  node again and no further than that one, each is upgraded one level at a time while
  the next level fits. So a node is never shown at more than a name while a more
  important one is left a name by the fill. A
  :class:`~dagctx.projection._segtree.MinTree` over the upgrade cost of each slot finds
  the next candidate directly. Then a directory group shown expanded with all its
  children left out, or with none (a directory holding only skipped files), is left
  out too (its heading would say nothing the footer does not count;
  :meth:`Allocation._drop_bare_groups`), and a directory that shows only its
  subdirectories (its files all left out) shows no heading, theirs carrying their paths
  (:meth:`Allocation._mute_headings`); what is left deepens the least cuts
  (best file first), and long text nodes (most important first) are cut to the rest.
  These last two take what is left in whole grains of 1/:data:`FILL_GRAINS` of the
  workspace's room: a few tokens more or less (an edit of a file shown cut in a later
  band moves the room by its growth) leave the cuts as they were rather than lengthening
  one by a line, which would rewrite the workspace's text and the provider's cached
  prompt after it.
- **Cuts.** A cut is a ladder of steps, each showing more and measured exactly when
  tried: a text node with an outline has focused cuts
  (:meth:`~dagctx.nodes.text.TextNode.render_focused_cut`: the definitions matching the
  focus in full, the rest as marked outline lines), any other its first lines. Both
  start from the same least step, the first line with the rest left out (the cut by
  lines), so a cut is keyed by its smallest step's tokens, the same for every focus,
  without outlining the file (:meth:`Allocation._measure_t1`).
- **Counted on demand.** A long requested section not counted yet starts as a lower
  bound from its length (:meth:`Allocation._init_costs`), so :attr:`Allocation.t0` is a
  lower bound: when it already exceeds the room no count is needed to know the budget
  binds (:meth:`Allocation.over`), and the degrade counts only the entries that keep
  their requested state (:meth:`Allocation._find_stop`). Pressure counts every node at
  its floor; a level in between (a file's outline) is counted only when a search lands
  on it: pass A's leaves take it as 0 tokens for their minimum running sum (a lower bound,
  so the search may land early; :meth:`Allocation._first_fit` checks each landing
  exactly), the fill tree keys it -INF (measured when found, passed over when it does
  not fit), as the cut tree does for a cut's first line.

The module is long because it is one algorithm whose passes share the same state; the
parts that stand alone live beside it (:mod:`.order`, :mod:`.segtree`, :mod:`.assembly`).

States only move through :meth:`Allocation.set_state`, which keeps the visibility of
entries (a collapsed or omitted container hides what it shows), the search trees and the
set of *dirty* entries (whose section must be re-rendered) in step (a hidden entry shows
nothing and is no candidate whatever its state: only its parent's count of shown
children follows); the one exception, a
bare group left out, leaves its children (all left out already) visible. Fill, cut, bare
groups and dropped companions are undone at the start of the next turn; the degrade
prefix is moved, not recomputed. The headings shown without text (:attr:`muted`) follow
from the states each turn: only those that come or go are re-examined.

A turn whose changes move most keys (a focus change that moves most files' levels) builds
the plan again, from the kept one (:meth:`Allocation._carry`): the counts, floors,
frontier sums and states are taken over, the order is laid out again and each search
tree's leaves follow their entries to their new slots; the move to the new stop then
sets the states that differ.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import compress, repeat
from operator import ne

from dagctx.nodes.base import Node, NodeState
from dagctx.nodes.group import GroupNode
from dagctx.outline.kinds import DOCS, file_kind
from dagctx.projection._segtree import INF, MinTree, PrefixTree
from dagctx.projection.assembly import most_that_fit
from dagctx.projection.layout import Layout
from dagctx.projection.order import DegradeOrder
from dagctx.projection.relevance import RELATED_BUCKET, TIERS, peripheral, unrelated
from dagctx.projection.sections import SectionCache, reference_section

OMIT = 0  # NodeState.HIDDEN: the allocation's "left out"
COLLAPSED, SUMMARY, DETAILS, ALL = 1, 2, 3, 4
_UNKNOWN = -2  # a cut cost not measured yet
FULL_SHARE = 75  # percent of the room the degrade aims at; the rest first buys outlines
WHOLE_SHARE = 30  # a file is kept whole when it needs at most this percent of the room
TOP_CUT_SHARE = 25  # else a focused cut of it gets up to this percent, before the fill
LOW_CHARS = 256  # a section this long is counted only when it may be shown
MAX_OUTLINES = 32  # nodes the outline round raises per projection
TOP_FILE_SCAN = 4096  # entries searched from the top for the most important file
# a turn whose changes move the keys of more entries than this, and of more than an eighth
# of all, builds the plan again from the kept one (Allocation._carry): laying the order
# out again costs less than that many moves in it
MANY_MOVES = 1024
# a move of the degrade's stop over more slots than this sets the search trees' leaves of
# the entries it changes once, at its end (MinTree.set_many), not at each change
BATCH_SLOTS = 2048
NEXT_FILE_SCAN = 64  # slots searched from the degrade's stop for the file it degraded
# with a focus, one of the best files the degrade took down gets a focused cut before the
# outlines per this many tokens of the room ...
DEPTH_TOKENS = 1000
DEPTH_EXTRA = 5  # ... when it fits in this percent of the room beyond the file's outline
DEPTH_KEEP = 25  # ... and leaves this percent of the room to the outlines
FILL_GRAINS = 256  # the fill takes what is left in whole 1/256ths of the workspace room
LEAST_STEPS = 8  # steps of a focused cut searched for the first that shows a definition
_NOT_CUTTABLE = -1
_RELATED_LEVEL = RELATED_BUCKET * TIERS  # the lowest level not unrelated to the focus
# the stop of a plan whose order was laid out again (_carry): in no phase, so the next
# move_to sets the state of every entry that differs from the new stop's
_NO_STOP = (0, 0, 0)
# what a plan built from the one it replaces takes over as it is (_carry)
_CARRIED = (
    "bare", "companions", "cost", "cref", "cur", "dirs", "dirty", "dropped", "f1", "heads",
    "kids", "muted", "owner", "pressure", "sa", "shown_kids", "subdirs", "t0", "t1",
    "unsettled", "va", "vb", "vis",
)  # fmt: skip


class Allocation:
    """The incremental plan of one budget over one :class:`Layout` (module docstring)."""

    __slots__ = (
        "_deferred",
        "a_tree",
        "b_tree",
        "bare",
        "bared",
        "c_tree",
        "cache",
        "cap",
        "companions",
        "cost",
        "cref",
        "cur",
        "cut",
        "dirs",
        "dirty",
        "dropped",
        "edge",
        "entry_at",
        "f1",
        "f_tree",
        "focus",
        "heads",
        "kids",
        "layout",
        "least",
        "mods",
        "muted",
        "order",
        "owner",
        "pressure",
        "sa",
        "shown_kids",
        "slot",
        "stop",
        "subdirs",
        "t0",
        "t1",
        "top",
        "total",
        "triggered",
        "unsettled",
        "va",
        "vb",
        "vis",
    )

    def __init__(
        self,
        layout: Layout,
        cache: SectionCache,
        focus: str | None = None,
        *,
        previous: Allocation | None = None,
        changed: Sequence[int] = (),
        relevelled: Iterable[int] = (),
    ) -> None:
        """The plan of ``layout`` for ``focus``: built from scratch, or from ``previous``
        (the plan of the same layout it replaces, whose last turn is undone and whose
        parts it takes) after the nodes at entries ``changed`` changed and the levels
        of ``relevelled`` moved (:meth:`_carry`; from scratch when that cannot be)."""
        self.layout = layout
        self.cache = cache
        self.focus = focus  # what focused cuts show in full first
        if previous is not None and self._carry(previous, changed, relevelled):
            return
        n = len(layout)
        self.cur = bytearray(layout.requested)
        self.vis = bytearray(b"\x01") * n
        self.dropped = bytearray(n)
        self.kids = bytearray(1 if layout.end[i] > i + 1 else 0 for i in range(n))
        # per entry, its walk children not left out (a reference counts as shown), and
        # the groups none of whose children is (:meth:`_drop_bare_groups`): from the
        # start, the groups with no child (a directory holding only skipped files)
        self.shown_kids = array("i", bytes(4 * n))
        for p in layout.parent:
            if p >= 0:
                self.shown_kids[p] += 1
        nodes = layout.nodes
        self.bare: set[int] = {
            i for i in range(n) if not self.kids[i] and isinstance(nodes[i], GroupNode)
        }
        self.bared: list[tuple[int, int]] = []  # groups left out this turn, their states
        self._find_dirs()
        self.cut: dict[int, tuple[int, str, int]] = {}
        self.least: list[int] = []  # entries :meth:`_deepen` cut least this turn, best first
        self.mods: list[tuple[int, int]] = []
        self.dirty: set[int] = set(range(n))
        self.cost = array("i", [-1]) * (5 * n)
        self.cref = array("i", bytes(4 * n))
        self.companions: dict[int, tuple[str, ...]] = {}
        self.pressure = False
        self.stop = (1, 0, 0)
        self.triggered = False
        self.total = 0
        # the entry of _top_file_slot's answer (-1: none; None: not known)
        self.top: int | None = None
        self.unsettled = 0  # entries whose requested cost is a lower bound in t0
        # entries whose search-tree leaves are set at the end of a long move (move_to)
        self._deferred: set[int] | None = None
        self._init_costs()

    # -- costs --------------------------------------------------------------------------

    def _init_costs(self) -> None:
        """Count every node at its requested state, except that a long section not
        counted yet of a node that can be degraded gets a lower bound instead (kept in
        ``cost[5 * i]``, the slot of OMIT, which is never read as a count) until it is
        settled (:meth:`_settle`); :attr:`t0` is then a lower bound too."""
        layout, cache = self.layout, self.cache
        nodes, ref, requested = layout.nodes, layout.ref, layout.requested
        cost, cref = self.cost, self.cref
        t0 = 0
        todo: list[int] = []
        for i, node in enumerate(nodes):
            if ref[i]:
                cref[i] = reference_section(node, cache)[1]
                t0 += cref[i]
                continue
            peers = node.companions()
            if peers:
                self.companions[i] = peers
            r = requested[i]
            if r > max(COLLAPSED, int(node.min_state())) and cache.counted(node, r) < 0:
                low = cache.least(node, r, LOW_CHARS)
                if low >= 0:
                    cost[5 * i] = low
                    t0 += low
                    self.unsettled += 1
                    continue
            todo.append(i)
        cache.prime([(nodes[i], requested[i]) for i in todo])
        for i in todo:
            t0 += self.c(i, requested[i])
        self.t0 = t0

    def _floor(self, i: int) -> int:
        """The lowest state pass A takes entry ``i`` to: COLLAPSED (a name) or its
        ``min_state``; OMIT for a file unrelated to the focus
        (:func:`~dagctx.projection.relevance.unrelated`), so that with a focus set a file
        with nothing to do with it is left out before a related file is degraded, and
        the names of unrelated files do not crowd out the outlines of related ones.
        Without a focus, likewise for a file outside the project's own code and
        manifests (:func:`~dagctx.projection.relevance.peripheral`: docs, samples,
        tests, ...), which depends on its path alone."""
        node = self.layout.nodes[i]
        floor = max(COLLAPSED, int(node.min_state()))
        if (
            floor == COLLAPSED
            and not self.kids[i]
            and getattr(node, "cuttable_lines", None) is not None
        ):
            level = self.layout.level[i]
            if unrelated(level) if self.focus is not None else peripheral(level):
                return OMIT
        return floor

    def _r(self, i: int) -> int:
        """Entry ``i``'s cost at its requested state as :attr:`t0` holds it: the count,
        or its lower bound while not settled."""
        low = self.cost[5 * i]
        return low if low >= 0 else self.c(i, self.layout.requested[i])

    def _settle(self, entries: list[int]) -> bool:
        """Count exactly the requested sections of ``entries`` that have a lower bound
        in :attr:`t0` (at once, in parallel batches); False when none had."""
        cost, nodes, requested = self.cost, self.layout.nodes, self.layout.requested
        todo = [i for i in entries if cost[5 * i] >= 0]
        if not todo:
            return False
        self.cache.prime([(nodes[i], requested[i]) for i in todo])
        for i in todo:
            low, cost[5 * i] = cost[5 * i], -1
            self.t0 += self.c(i, requested[i]) - low
            self.unsettled -= 1
            if self.pressure:
                self._leaves(i)
        return True

    def over(self, room: int) -> bool:
        """Whether everything at its requested state needs more than ``room`` tokens;
        counts the unsettled sections when their lower bounds do not prove it."""
        if self.unsettled and self.t0 <= room:
            self._settle([i for i in range(len(self.layout)) if self.cost[5 * i] >= 0])
        return self.t0 > room

    def c(self, i: int, state: int) -> int:
        """Tokens of entry ``i`` at ``state`` (0 when omitted)."""
        if state == OMIT:
            return 0
        k = 5 * i + state
        value = self.cost[k]
        if value < 0:
            value = self.cost[k] = self.cache.tokens(self.layout.nodes[i], state)
        return value

    def known(self, i: int, state: int) -> int:
        """Tokens of entry ``i`` at ``state`` if already counted, else -1 (nothing is
        rendered or counted)."""
        if state == OMIT:
            return 0
        k = 5 * i + state
        value = self.cost[k]
        if value < 0:
            value = self.cache.counted(self.layout.nodes[i], state)
            if value >= 0:
                self.cost[k] = value
        return value

    # -- pressure structures ----------------------------------------------------------

    def ensure_pressure(self) -> None:
        """Build the degrade order and search trees (the first time the budget binds)."""
        if self.pressure:
            return
        layout = self.layout
        nodes, ref, requested, parent = layout.nodes, layout.ref, layout.requested, layout.parent
        n = len(nodes)
        f1 = bytearray(n)
        sa = bytearray(n)
        pairs: list[tuple[Node, int]] = []
        for i in range(n):
            if ref[i]:
                continue
            node = nodes[i]
            floor = self._floor(i)
            f1[i] = floor
            r = requested[i]
            sa[i] = min(r, floor)
            if OMIT < sa[i] < r:  # the levels in between are counted when a search needs them
                pairs.append((node, sa[i]))
        self.cache.prime(pairs)
        self.f1, self.sa = f1, sa
        # owner: the nearest walk ancestor that pass A collapses (its frontier holds i)
        owner = array("i", [-1]) * n
        va = array("q", bytes(8 * n))
        vb = array("q", bytes(8 * n))
        for i in range(n):
            p = parent[i]
            if p >= 0:
                owner[i] = p if sa[p] not in nodes[p].expands_at else owner[p]
                if ref[i]:
                    vb[p] += self.cref[i]
            o = owner[i]
            if o >= 0:
                va[o] += self.cref[i] if ref[i] else self.c(i, sa[i])
        self.owner, self.va, self.vb = owner, va, vb
        self.t1 = array("i", [_UNKNOWN]) * n
        self._layout_slots()
        self.pressure = True

    def _layout_slots(self) -> None:
        """Put the entries in degrade order and load the search trees."""
        self.order = DegradeOrder(self.layout)
        self._load_trees()

    def _load_trees(self) -> None:
        """(Re)build the search trees over the order's slots."""
        order = self.order
        self.slot, self.entry_at, self.cap = order.slot, order.entry_at, order.cap
        self.edge = order.top_edge(TOP_FILE_SCAN)
        cap = self.cap
        self.top = None
        self.a_tree = PrefixTree(cap)
        self.b_tree: PrefixTree | None = None  # built when pass A first runs out
        self.f_tree = MinTree(cap)
        self.c_tree = MinTree(cap)
        a_leaves = [(0, INF, 0)] * cap
        fill = [INF] * cap
        cut = [INF] * cap
        for slot, i in enumerate(self.entry_at):
            if i >= 0:
                a_leaves[slot] = self._a_leaf(i)
                fill[slot] = self._up_key(i)
                cut[slot] = self._cut_key(i)
        self.a_tree.load(a_leaves)
        self.f_tree.load(fill)
        self.c_tree.load(cut)

    def _pass_b(self) -> PrefixTree:
        """The tree of pass B's steps (omissions), built on first use."""
        if self.b_tree is None:
            leaves = [(0, INF, 0)] * self.cap
            for slot, i in enumerate(self.entry_at):
                if i >= 0:
                    leaves[slot] = self._b_leaf(i)
            tree = PrefixTree(self.cap)
            tree.load(leaves)
            self.b_tree = tree
        return self.b_tree

    def _relayout(self, new: set[int] | None = None) -> None:
        """Lay the slots out again (a block ran out of room, or keys moved to blocks
        ``new`` that have no slots yet): states do not change, the stop is carried over
        to the new slots."""
        entry_at, cap = self.entry_at, self.cap
        phase, j, k = self.stop
        after = next((i for i in entry_at[j:] if i >= 0), -1) if j < cap else -1
        partial = j < cap and entry_at[j] >= 0
        self.order.relayout(new)
        self._load_trees()
        if after < 0:
            self.stop = (phase, self.cap, 0)
        else:
            self.stop = (phase, self.slot[after], k if partial else 0)

    # -- step deltas ------------------------------------------------------------------

    def _a_steps(self, i: int, exact: bool = True) -> tuple[list[int], int]:
        """Pass A's deltas for entry ``i`` (requested → floor) and the 1-based index of
        its first step after which it hides children (0: none). The requested level
        costs what :attr:`t0` holds (:meth:`_r`). Not ``exact``: a level between the two
        that is not counted yet counts as 0 tokens, so every running sum is a lower bound
        and the last one (the floor's, counted) is exact. Each level's cost is read once
        (a step's upper level is the one the step before went down to)."""
        r, floor = self.layout.requested[i], self.f1[i]
        if r <= floor:
            return [], 0
        expands = self.layout.nodes[i].expands_at
        kids, v = self.kids[i], self.va[i]
        deltas, trig = [], 0
        upper, was = self._r(i), r in expands
        for s in range(r - 1, floor - 1, -1):  # each step goes down to level s
            lower = self.c(i, s) if exact or s == floor else max(0, self.known(i, s))
            d = lower - upper
            if kids:
                now = s in expands
                if was and not now:
                    d -= v
                elif now and not was:
                    d += v
                if not now and not trig:
                    trig = r - s
                was = now
            deltas.append(d)
            upper = lower
        if floor == OMIT and not trig:  # a file left out: room for the footer from then on
            trig = len(deltas)
        return deltas, trig

    def _a_leaf(self, i: int) -> tuple[int, int, int]:
        """Pass A's leaf for entry ``i``: (sum, minimum running sum, trigger). The sum is
        exact; the minimum a lower bound when levels in between are not counted yet
        (:meth:`_a_steps`), which :meth:`_first_fit` checks exactly. For an entry
        without children the running sums telescope: each is the level's cost less the
        requested one's, so the leaf comes from the costs alone."""
        if not self.kids[i]:
            r, floor = self.layout.requested[i], self.f1[i]
            if r <= floor:
                return 0, INF, 0
            if floor == OMIT:  # no level costs less than nothing
                top = self._r(i)
                return -top, -top, 1
            low = last = self.c(i, floor)
            for s in range(floor + 1, r):
                known = self.known(i, s)
                if known < low:
                    low = known if known > 0 else 0
            top = self._r(i)
            return last - top, low - top, 1 if floor == OMIT else 0
        deltas, trig = self._a_steps(i, exact=False)
        if not deltas:
            return 0, INF, 0
        run, low = 0, INF
        for d in deltas:
            run += d
            if run < low:
                low = run
        return run, low, 1 if trig else 0

    def _b_delta(self, i: int) -> int:
        s = self.sa[i]
        d = -self.c(i, s)
        if self.kids[i] and s in self.layout.nodes[i].expands_at:
            d -= self.vb[i]
        return d

    def _b_leaf(self, i: int) -> tuple[int, int, int]:
        if self.owner[i] >= 0:  # covered once pass A is through: never omitted by B
            return 0, INF, 0
        d = self._b_delta(i)
        return d, d, 1

    def _next(self, i: int, state: int) -> int:
        """The level a fill upgrade takes entry ``i`` to from ``state``: an omitted node
        comes back at its floor (not below its ``min_state``); a collapsed container goes
        straight to the lowest level that shows its children (a directory re-opens with
        its files at their floor, which the fill can raise in turn, rather than showing
        a summary the fill cannot look into)."""
        if state == OMIT:
            return self.sa[i] or COLLAPSED
        if self.kids[i]:
            expands = self.layout.nodes[i].expands_at
            if state not in expands:
                for s in range(state + 1, self.layout.requested[i] + 1):
                    if s in expands:
                        return s
        return state + 1

    def _up_key(self, i: int) -> int:
        """The fill tree's key of entry ``i``: :meth:`_up`, or -INF while the level it
        would go to is not counted yet (measured when a search lands on it)."""
        s = self.cur[i]
        if not self.vis[i] or s >= self.layout.requested[i] or self.dropped[i]:
            return INF
        if self.known(i, self._next(i, s)) < 0:
            return -INF
        return self._up(i)

    def _up(self, i: int) -> int:
        """Cost of upgrading entry ``i`` one level from its current state (INF: none)."""
        s = self.cur[i]
        if not self.vis[i] or s >= self.layout.requested[i] or self.dropped[i]:
            return INF
        nxt = self._next(i, s)
        d = self.c(i, nxt) - self.c(i, s)
        if self.kids[i]:
            expands = self.layout.nodes[i].expands_at
            was, now = s != OMIT and s in expands, nxt in expands
            if was != now:
                v = self.va[i] if self.sa[i] not in expands else self.vb[i]
                d += v if now else -v
        return d

    def _cut_key(self, i: int) -> int:
        """Room a cut of entry ``i`` needs beyond its current cost (INF: not a candidate,
        -INF: not measured yet)."""
        s = self.cur[i]
        if (
            not self.vis[i]
            or self.kids[i]
            or self.dropped[i]
            or i in self.cut
            or s == OMIT
            or s >= DETAILS
            or self.layout.requested[i] < DETAILS
        ):
            return INF
        t1 = self.t1[i]
        if t1 == _NOT_CUTTABLE:
            return INF
        if t1 == _UNKNOWN:
            return -INF
        return t1 - self.c(i, s)

    def _refresh(self, i: int) -> None:
        if self.pressure:
            if self._deferred is not None:  # set at the end of a long move (move_to)
                self._deferred.add(i)
                return
            slot = self.slot[i]
            self.f_tree.set(slot, self._up_key(i))
            self.c_tree.set(slot, self._cut_key(i))

    # -- changes ----------------------------------------------------------------------

    def apply_changes(self, changed: list[int]) -> bool:
        """Account for new versions of the nodes at entries ``changed`` (ascending walk
        order; also those whose relevance level moved): costs, frontier sums, keys (each
        entry whose key moved goes where it belongs, :meth:`_move`). Returns False when
        the plan must be rebuilt instead (a floor went down, too many entries would move
        in a block, or the keys of more than :data:`MANY_MOVES` entries and an eighth of
        all moved: a focus change that moves most files' levels)."""
        accounted = self._account(changed)
        if accounted is None:
            return False
        if not self.pressure:
            return True
        touched, refloored = accounted
        moved = self.order.rekey(changed)
        if len(moved) > MANY_MOVES and len(moved) * 8 > len(self.layout):
            return False
        new = self.order.missing(moved)
        if new and not self.order.open_blocks(new):
            self._relayout(new)
        for i in moved:
            if not self._move(i):
                return False
        touched.update(moved)
        for i in refloored:
            self.set_state(i, self.prefix_state(i, self.stop))
        for i in touched:
            self._leaves(i)
        self._follow_top(moved)
        return True

    def _account(self, changed: list[int]) -> tuple[set[int], list[int]] | None:
        """Count the nodes at entries ``changed`` at their new versions: costs,
        companions, references, floors and frontier sums (the search trees and the
        order aside). Returns the entries whose leaves are to be set again and those
        whose floor moved (a file became related or unrelated to the focus); None when
        a container's floor moved (the plan must be rebuilt)."""
        layout, cache = self.layout, self.cache
        nodes, requested, parent = layout.nodes, layout.requested, layout.parent
        cost, cref, press = self.cost, self.cref, self.pressure
        if press:
            sa = self.sa
            cache.prime((nodes[i], s) for i in changed for s in {sa[i], requested[i]} if s)
        else:
            cache.prime((nodes[i], requested[i]) for i in changed)
        touched: set[int] = set(changed)
        refloored: list[int] = []
        for i in changed:
            node = nodes[i]
            base = 5 * i
            old_r = cost[base] if cost[base] >= 0 else cost[base + requested[i]]
            self.unsettled -= cost[base] >= 0
            old_a = cost[base + self.sa[i]] if press and self.sa[i] != OMIT else 0
            for s in range(5):
                cost[base + s] = -1
            self.t0 += self.c(i, requested[i]) - old_r
            peers = node.companions()
            if peers:
                self.companions[i] = peers
            else:
                self.companions.pop(i, None)
            for e in layout.refs.get(node.id, ()):
                d = reference_section(node, cache)[1] - cref[e]
                if d:
                    cref[e] += d
                    self.t0 += d
                    if press:
                        self._add_frontier(e, d, touched)
                        self.vb[parent[e]] += d
                        touched.add(parent[e])
            self._touch(i)
            if press:
                floor = self._floor(i)
                if floor != self.f1[i]:  # a file became related or unrelated to the focus
                    if self.kids[i]:
                        return None
                    self.f1[i], self.sa[i] = floor, min(requested[i], floor)
                    refloored.append(i)
                self._add_frontier(i, self.c(i, self.sa[i]) - old_a, touched)
                self.t1[i] = _UNKNOWN
        return touched, refloored

    def _carry(self, old: Allocation, changed: Sequence[int], relevelled: Iterable[int]) -> bool:
        """Build this plan from ``old`` (the plan of the same layout, under pressure,
        for a focus set as this one's is or not): its last turn undone, its states,
        counts, floors and frontier sums are taken over and brought up to date for the
        nodes at entries ``changed`` (new versions) and the files of ``relevelled``
        (new levels: a floor follows the relation to the focus); the degrade order is
        laid out again from the kept order's keys at the new levels (only the changed
        nodes' and the containers' keys made afresh), as a fresh build lays it out, and
        each search tree's leaves follow their entries to their new slots (what a leaf
        holds does not depend on its slot). The states are left as they were, with no stop in the
        new order (:data:`_NO_STOP`): :meth:`decide`'s move to its stop sets each entry
        whose state differs. So a focus change that moves most files' levels costs a
        sort and a pass over the slots, not a count of every node. False (nothing of
        ``old`` changed) when it cannot be carried."""
        if old.layout is not self.layout or not old.pressure:
            return False
        if (old.focus is None) != (self.focus is None):
            return False
        if any(old.kids[i] and old._floor(i) != old.f1[i] for i in changed):
            return False
        old.undo_turn()
        for name in _CARRIED:
            setattr(self, name, getattr(old, name))
        self.bared, self.mods, self.least = [], [], []
        self.cut = {}
        self.total, self.triggered, self.top, self._deferred = 0, False, None, None
        refresh: list[int] = []  # entries whose cut cost was measured for the old focus
        if self.focus != old.focus:
            t1 = old.t1
            refresh = list(compress(range(len(t1)), map(ne, t1, repeat(_UNKNOWN))))
            self.t1 = array("i", [_UNKNOWN]) * len(t1)
        accounted = self._account(list(changed))
        assert accounted is not None  # containers' floors checked above
        touched, _ = accounted
        old_slot = old.slot
        # pass A's leaves by old slot: those of the refloored files written as they are
        # found, then those of the other entries touched
        leaves = sums, mins, trigs = old.a_tree.leaves()
        refloored = self._refloor(relevelled, touched, leaves, old_slot)
        for i in touched:
            k = old_slot[i]
            sums[k], mins[k], trigs[k] = self._a_leaf(i)
        touched |= refloored
        self.order = order = DegradeOrder(self.layout, old.order, changed)
        self.slot, self.entry_at, self.cap = order.slot, order.entry_at, order.cap
        self.edge = order.top_edge(TOP_FILE_SCAN)
        slot, cap = order.slot, order.cap
        source = [old_slot[i] if i >= 0 else -1 for i in order.entry_at]
        self.stop = _NO_STOP
        self.a_tree = PrefixTree.gathered(cap, source, leaves)
        self.b_tree = None
        if old.b_tree is not None:  # an entry pass A covers has an empty leaf whatever it is
            owner = self.owner
            b_leaves = {slot[i]: self._b_leaf(i) for i in touched if owner[i] < 0}
            self.b_tree = old.b_tree.moved(cap, source, b_leaves)
        vis = self.vis  # a hidden entry's keys are INF, as they were
        shown = [i for i in touched if vis[i]]
        old_entry_at = old.entry_at

        def where(k: int) -> int:  # the new slot of the entry at old slot k
            i = old_entry_at[k]
            return slot[i] if i >= 0 else -1

        self.f_tree = old.f_tree.moved(cap, where, {slot[i]: self._up_key(i) for i in shown})
        refresh.extend(shown)
        self.c_tree = old.c_tree.moved(cap, where, {slot[i]: self._cut_key(i) for i in refresh})
        return True

    def _refloor(
        self,
        relevelled: Iterable[int],
        touched: set[int],
        leaves: tuple[list[int], list[int], list[int]],
        at: Sequence[int],
    ) -> set[int]:
        """Give the files of ``relevelled`` (their nodes unchanged, their levels moved)
        that became related or unrelated to the focus their new floor (:meth:`_floor`:
        a name, or left out), and their owners' frontier sums the difference (the
        owners go in ``touched``). Each of those files' new pass A leaf
        (:meth:`_a_leaf`, from the costs at hand) is written in ``leaves`` (sums,
        minimum prefixes, triggers) at its index in ``at``; returns those files."""
        done: set[int] = set()
        if self.focus is None:
            return done  # a file's floor follows its path alone (peripheral)
        layout, kids, f1, sa, owner, va, cost = (
            self.layout, self.kids, self.f1, self.sa, self.owner, self.va, self.cost,
        )  # fmt: skip
        requested, ref, level, nodes = layout.requested, layout.ref, layout.level, layout.nodes
        counted = self.cache.counted
        sums, mins, trigs = leaves
        add = touched.add
        for i in relevelled:
            f = f1[i]
            if kids[i] or ref[i] or (f == OMIT) == (level[i] < _RELATED_LEVEL):  # unrelated
                continue  # a container's floor does not follow the focus; nor did this one
            if f == OMIT:
                floor = COLLAPSED  # the floor it had (its node did not change)
            elif f == COLLAPSED and getattr(nodes[i], "cuttable_lines", None) is not None:
                floor = OMIT
            else:
                continue  # its min_state is above a name: never left out
            r, k = requested[i], 5 * i
            was, now = sa[i], r if r < floor else floor
            f1[i], sa[i] = floor, now
            done.add(i)
            j = at[i]
            if r < COLLAPSED:
                sums[j], mins[j], trigs[j] = 0, INF, 0
                continue
            named = cost[k + COLLAPSED]  # c(i, COLLAPSED), inline
            if named < 0:
                named = self.c(i, COLLAPSED)
            o = owner[i]
            if o >= 0 and was != now:  # one of them is OMIT (no cost), the other a name
                va[o] += named if now else -named
                add(o)
            if r <= floor:
                sums[j], mins[j], trigs[j] = 0, INF, 0
                continue
            top = cost[k] if cost[k] >= 0 else self.c(i, r)  # _r
            if floor == OMIT:
                sums[j], mins[j], trigs[j] = -top, -top, 1
                continue
            low = named
            for state in range(COLLAPSED + 1, r):
                known = cost[k + state]
                if known < 0:
                    known = counted(nodes[i], state)
                if known < low:
                    low = known if known > 0 else 0
                    if not low:  # no level costs less than nothing
                        break
            sums[j], mins[j], trigs[j] = named - top, low - top, 0
        return done

    def moves_many(self, changed: Iterable[int]) -> bool:
        """Whether :meth:`apply_changes` of ``changed`` would give up for moving the keys of
        too many entries, told without changing anything: by the files among them whose
        level moved alone (:meth:`DegradeOrder.relevelled`, a lower bound on the moves,
        counted until it is enough). So a focus change that moves most files builds the
        plan again (from this one: :meth:`_carry`) without first moving each of them."""
        if not self.pressure:
            return False
        many = max(MANY_MOVES, len(self.layout) // 8)
        return self.order.relevelled(changed, many + 1) > many

    def refocus(self, focus: str | None) -> bool:
        """Take ``focus`` for the focused cuts (after :meth:`undo_turn`); the smallest
        cuts measured stay (:meth:`_measure_t1`: the same for every focus). Returns
        False when the plan must be rebuilt instead (a focus set or cleared)."""
        if focus == self.focus:
            return True
        if (focus is None) != (self.focus is None):
            return False
        self.focus = focus
        return True

    def _follow_top(self, changed: list[int]) -> None:
        """Keep :attr:`top` right after the entries ``changed`` moved (the others kept
        their order: :meth:`_move` forgets the top file when it went down, or when none
        was known and entries moved on), so the top file is the highest of the known one
        and the moved ones that can be shown in full; unknown again when the known one
        can no longer be."""
        top = self.top
        if top is None:
            return
        if top >= 0 and not self._whole_file(top):
            self.top = None
            return
        slot = self.slot
        best = slot[top] if top >= 0 else self.edge - 1
        for i in changed:
            if slot[i] > best and self._whole_file(i):
                best, top = slot[i], i
        self.top = top

    def _add_frontier(self, i: int, delta: int, touched: set[int]) -> None:
        """Entry ``i``'s floor cost changed by ``delta``: so did its owner's frontier."""
        owner = self.owner[i]
        if delta and owner >= 0:
            self.va[owner] += delta
            touched.add(owner)

    def _move(self, i: int) -> bool:
        """Give entry ``i`` (whose key moved) the slot its key belongs at
        (:meth:`DegradeOrder.insert`), keeping the stop on the entries it was on. False
        when too many entries would have to move."""
        order = self.order
        if order.full(i):
            self._relayout()
        was = self.slot[i]
        old = order.vacate(i)
        self.a_tree.set(old, 0, INF, 0)
        if self.b_tree is not None:
            self.b_tree.set(old, 0, INF, 0)
        self.f_tree.set(old, INF)
        self.c_tree.set(old, INF)
        placed = order.insert(i)
        if placed is None:
            return False
        lo, hi = placed
        if hi - lo > 1:  # the entries of lo..hi - 2 moved one slot on
            if self.top == -1:  # none in the scanned slots: only one can have come in
                edge = self.edge
                if lo < edge < hi and self._whole_file(self.entry_at[edge]):
                    self.top = self.entry_at[edge]
            phase, j, k = self.stop
            if lo <= j < hi:
                self.stop = (phase, j + 1, k)
            # their leaves move with them (what a leaf holds does not depend on its slot)
            for tree in (self.a_tree, self.b_tree, self.f_tree, self.c_tree):
                if tree is not None:
                    tree.shift(lo, hi)
        if self.top == i and self.slot[i] < was:
            self.top = None  # it went down: another may be the top file now
        self.set_state(i, self.prefix_state(i, self.stop))
        return True

    def _leaves(self, i: int) -> None:
        slot = self.slot[i]
        self.a_tree.set(slot, *self._a_leaf(i))
        if self.b_tree is not None:
            self.b_tree.set(slot, *self._b_leaf(i))
        self.f_tree.set(slot, self._up_key(i))
        self.c_tree.set(slot, self._cut_key(i))

    # -- states -----------------------------------------------------------------------

    def set_state(self, i: int, state: int) -> None:
        """Move entry ``i`` to ``state``, keeping visibility, trees and dirt right. An
        entry hidden by a container shows no section whatever its state, its search
        keys are INF (not a candidate) either way and what it shows is hidden too: only
        its parent's count of shown children follows (a container that shows it marks
        it dirty and sets its keys when it does)."""
        old = self.cur[i]
        if old == state:
            return
        self.cur[i] = state
        if (old == OMIT) != (state == OMIT):
            self._count_shown(i, old == OMIT)
        if not self.vis[i]:
            return
        self._touch(i)
        if self.kids[i]:
            expands = self.layout.nodes[i].expands_at
            was, now = old != OMIT and old in expands, state != OMIT and state in expands
            if was != now:
                self._frontier(i, now)
        self._refresh(i)

    def _count_shown(self, i: int, shown: bool) -> None:
        """Entry ``i`` was left out and is ``shown`` now, or the other way round: keep
        its walk parent's count of children not left out, :attr:`bare`, and for a
        directory its count of subdirectories not left out and :attr:`heads`, in step."""
        p = self.layout.parent[i]
        if p >= 0:
            left = self.shown_kids[p] = self.shown_kids[p] + (1 if shown else -1)
            if left == 0:
                self.bare.add(p)
            else:
                self.bare.discard(p)
            dirs = self.dirs
            if p in dirs:
                if i in self.subdirs:
                    dirs[p] += 1 if shown else -1
                if 0 < left == dirs[p]:
                    self.heads.add(p)
                elif p in self.heads:
                    self.heads.remove(p)

    def _touch(self, i: int) -> None:
        self.dirty.add(i)
        refs = self.layout.refs.get(self.layout.nodes[i].id)
        if refs:
            self.dirty.update(refs)

    def _frontier(self, u: int, show: bool) -> None:
        """Show or hide what container ``u`` shows when expanded."""
        layout = self.layout
        ref, end, nodes = layout.ref, layout.end, layout.nodes
        cur, vis = self.cur, self.vis
        flag = 1 if show else 0
        j, stop = u + 1, end[u]
        while j < stop:
            vis[j] = flag
            if ref[j]:
                self.dirty.add(j)
                j += 1
                continue
            self._touch(j)
            self._refresh(j)
            s = cur[j]
            j = j + 1 if s != OMIT and s in nodes[j].expands_at else end[j]

    def prefix_state(self, i: int, stop: tuple[int, int, int]) -> int:
        """Entry ``i``'s state when the degrade passes have gone as far as ``stop``."""
        phase, j, k = stop
        r = self.layout.requested[i]
        if not self.pressure:
            return r
        slot = self.slot[i]
        if phase == 1:
            if slot < j:
                return self.sa[i]
            return r - k if slot == j else r
        if self.owner[i] < 0 and slot < j:
            return OMIT
        return self.sa[i]

    def move_to(self, stop: tuple[int, int, int]) -> None:
        """Move the degrade prefix from :attr:`stop` to ``stop`` (states in between)."""
        old = self.stop
        self.stop = stop
        if old == stop:
            return
        if old[0] == stop[0]:
            lo, hi = min(old[1], stop[1]), max(old[1], stop[1]) + 1
        else:
            lo, hi = 0, self.cap
        entry_at = self.entry_at
        hi = min(hi, self.cap)
        if hi - lo > BATCH_SLOTS:  # the search trees' leaves are set once, at the end
            self._deferred = set()
        phase, j, k = stop
        cur, sa, owner, requested = self.cur, self.sa, self.owner, self.layout.requested
        vis, parent, shown_kids, bare = self.vis, self.layout.parent, self.shown_kids, self.bare
        dirs, subdirs, heads = self.dirs, self.subdirs, self.heads
        try:
            for slot in range(lo, hi):
                i = entry_at[slot]
                if i < 0:
                    continue
                # prefix_state, inline: most entries keep their state
                if phase == 1:
                    state = sa[i] if slot < j else requested[i] - k if slot == j else requested[i]
                else:
                    state = OMIT if slot < j and owner[i] < 0 else sa[i]
                if state == cur[i]:
                    continue
                if vis[i]:
                    self.set_state(i, state)
                    continue
                # set_state of a hidden entry, inline: most moved entries are hidden
                if (cur[i] == OMIT) != (state == OMIT):  # _count_shown, inline
                    p = parent[i]
                    if p >= 0:
                        one = 1 if state != OMIT else -1
                        left = shown_kids[p] = shown_kids[p] + one
                        if left == 0:
                            bare.add(p)
                        else:
                            bare.discard(p)
                        if p in dirs:
                            if i in subdirs:
                                dirs[p] += one
                            if 0 < left == dirs[p]:
                                heads.add(p)
                            elif p in heads:  # most moves leave it out: no call
                                heads.remove(p)
                cur[i] = state
        finally:
            deferred, self._deferred = self._deferred, None
        if deferred:
            where = self.slot
            self.f_tree.set_many({where[i]: self._up_key(i) for i in deferred})
            self.c_tree.set_many({where[i]: self._cut_key(i) for i in deferred})

    # -- one turn ---------------------------------------------------------------------

    def undo_turn(self) -> None:
        """Undo the fill, cuts, bare groups and companion drops of the last turn."""
        bared, self.bared = self.bared, []
        for i, old in reversed(bared):
            self._bare_state(i, old)
        self.least = []
        for i in list(self.cut):
            del self.cut[i]
            self._touch(i)
        mods, self.mods = self.mods, []
        for i, old in reversed(mods):
            if old < 0:  # a dropped companion
                self.dropped[i] = 0
                self._touch(i)
                self._refresh(i)
            else:
                self.set_state(i, old)

    def decide(self, room: int, reserve: int, held: int = 0) -> None:
        """Decide every state for ``room`` tokens (``reserve`` kept for the footer once
        anything is left out or hidden). ``held`` of the room is what the sections
        outside the stable band need at their requested states: the breadth-first share and
        the best file's shares apply to the rest, so that their growth does not move them."""
        if not self.over(room):
            if self.pressure:
                self.move_to((1, 0, 0))
            self.total, self.triggered = self.t0, False
            self._mute(set())
            return
        self.ensure_pressure()
        # Breadth before depth: degrade as far as a share of the room needs, so the
        # rest can show the next nodes as outlines; when names alone do not fit that
        # share (pass B would leave nodes out), degrade for the whole room instead.
        work = max(0, room - held)  # the shares below are of the workspace's part
        share = work * FULL_SHARE // 100 + min(room, held)
        stop, total, triggered = self._find_stop(share, share - reserve)
        top, keep, nxt = -1, 0, False
        requested = self.layout.requested
        cuts: dict[int, int] = {}  # long files kept whole within the share → their cut's room
        if stop[0] == 2:
            stop, total, triggered = self._find_stop(room, room - reserve)
        elif stop[1] < self._top_file_slot():  # the best file is kept whole
            stop, total, triggered = self._long_files(
                stop, total, triggered, share, reserve, work, cuts
            )
            nxt = True
        else:  # the best file would be degraded:
            top = self.top if self.top is not None else -1  # keep it whole if it can be
            whole = self.c(top, requested[top])  # exact, not a lower bound
            focused = self.focus is not None
            if whole <= work * WHOLE_SHARE // 100 or (focused and not self._others_related(top)):
                stop, total, triggered = self._find_stop(room, room - reserve)
                top = -1
            elif focused or self._prose(top):  # too long to keep whole: a cut first
                keep = self._top_cut_room(top, work * TOP_CUT_SHARE // 100)
                if keep:
                    stop, total, triggered = self._find_stop(share - keep, share - keep - reserve)
        self.move_to(stop)
        self.total, self.triggered = total, triggered
        avail = room - reserve if triggered else room
        for i, room_i in cuts.items():  # most important first
            self.mods.append((i, requested[i]))
            self.set_state(i, self.sa[i])
            self.total -= self.c(i, requested[i]) - self.c(i, self.sa[i])
            fits = min(room_i, avail - self.total) + self.c(i, self.sa[i])
            if self.t1[i] <= fits:
                self._apply_cut(i, fits)
        if keep and self.cur[top] < requested[top]:
            fits = min(keep, avail - self.total) + self.c(top, self.cur[top])
            if self.t1[top] <= fits:
                self._apply_cut(top, fits)
        self._deepen(work, avail)
        low = self._fill_outlines(avail)
        if nxt:
            self._cut_next(stop[1], avail - self.total)
        self._fill(avail, low)
        self._drop_bare_groups()
        self._mute_headings()
        # the cuts below lengthen by what is left in whole grains, so a turn that moves
        # it by a few tokens (an edit of a file shown cut) leaves them as they were
        avail -= max(0, avail - self.total) % max(1, work // FILL_GRAINS)
        for i in self.least:  # the best files first: what is left deepens their cuts
            self._grow(i, avail - self.total)
        self._cut(avail)
        # files cut to a share, the best first, take what no other file could use
        for i in ([top] if keep else []) + list(cuts):
            if i in self.cut:
                self._grow(i, avail - self.total)

    def _drop_bare_groups(self) -> None:
        """Leave out every group shown expanded whose children are all left out (or that
        has none), and then a group left with only such groups: its heading would show
        nothing the footer does not already count. Its children keep their visibility (all are
        left out: hiding them would change no section but re-examine each of them every
        turn); :meth:`undo_turn` brings the groups back first."""
        todo = list(self.bare)
        cur, vis, nodes, parent = self.cur, self.vis, self.layout.nodes, self.layout.parent
        while todo:
            i = todo.pop()
            s = cur[i]
            if not vis[i] or s == OMIT or s not in nodes[i].expands_at:
                continue
            if not isinstance(nodes[i], GroupNode):
                continue
            self.bared.append((i, s))
            self.total -= self.c(i, s)
            self._bare_state(i, OMIT)
            if parent[i] in self.bare:
                todo.append(parent[i])

    def _find_dirs(self) -> None:
        """Find the directories of the layout that hold both subdirectories and other
        entries, and those subdirectories, for :meth:`_mute_headings`; every entry is at
        its requested state (none left out), so no heading is muted yet. A directory is
        a group entry titled ``path/``; a subdirectory, a group entry whose title starts
        with its walk parent's, a directory's (its heading says where it is). A
        directory holding only subdirectories renders no heading at DETAILS anyway
        (:meth:`GroupNode._passes_through`) and one holding none never shows only
        subdirectories: neither is kept, so that a tree of directories of files (as
        repo-10k is) costs its turns nothing. Only groups with children are looked at:
        an empty one is not taken for a subdirectory (it is left out as bare under a
        budget, :meth:`_drop_bare_groups`). :attr:`dirs` holds each kept directory's
        count of subdirectories not left out, kept as states move
        (:meth:`_count_shown`); titles do not change within a layout."""
        layout = self.layout
        nodes, parent = layout.nodes, layout.parent
        dirs: dict[int, int] = {}
        titles: dict[int, str] = {}  # each directory's title
        subdirs: list[int] = []
        for i in compress(range(len(nodes)), self.kids):  # a reference has no children
            node = nodes[i]
            if not isinstance(node, GroupNode) or not node.title:
                continue
            title = node.title
            p = parent[i]
            if p in dirs and title.startswith(titles[p]):
                subdirs.append(i)
                dirs[p] += 1
            if title.endswith("/"):
                dirs[i], titles[i] = 0, title
        shown = self.shown_kids  # each entry's children, all shown
        self.dirs = {p: k for p, k in dirs.items() if 0 < k < shown[p]}
        self.subdirs: set[int] = {i for i in subdirs if parent[i] in self.dirs}
        self.heads: set[int] = set()
        self.muted: set[int] = set()

    def _mute_headings(self) -> None:
        """Show no heading for a directory shown expanded (DETAILS) whose children not
        left out are all its subdirectories (:attr:`heads`): their headings carry their
        paths, and nothing of its own follows its heading (its files are all left out,
        and counted by the footer; one holding only directories renders none at DETAILS
        anyway, :meth:`GroupNode._passes_through`). A heading with a notice stays. The
        heading's tokens go to what is left. It is still shown (not left out): a section
        of no text."""
        cur, vis, nodes = self.cur, self.vis, self.layout.nodes
        muted = {
            p
            for p in self.heads
            if vis[p] and cur[p] == DETAILS and getattr(nodes[p], "notice", None) is None
        }
        for p in muted:
            self.total -= self.c(p, DETAILS)
        self._mute(muted)

    def _mute(self, muted: set[int]) -> None:
        """Make ``muted`` the entries shown with no heading; those that come or go are
        dirty."""
        for p in muted ^ self.muted:
            self._touch(p)
        self.muted = muted

    def _bare_state(self, i: int, state: int) -> None:
        """Move the bare group at entry ``i`` between its shown state and OMIT
        (:meth:`_drop_bare_groups`), leaving its children as they are."""
        old, self.cur[i] = self.cur[i], state
        self._count_shown(i, old == OMIT)
        self._touch(i)
        self._refresh(i)

    def _long_files(
        self,
        stop: tuple[int, int, int],
        total: int,
        triggered: bool,
        share: int,
        reserve: int,
        work: int,
        cuts: dict[int, int],
    ) -> tuple[tuple[int, int, int], int, bool]:
        """With the degrade stopped at ``stop`` for ``share``: the files kept whole above
        it that need more than :data:`WHOLE_SHARE` percent of ``work``, while another file
        is related to the focus, each get a focused cut of up to :data:`TOP_CUT_SHARE`
        percent instead (their entry → that room, put in ``cuts``, most important first),
        and the degrade aims at the share less those rooms; the stop, total and trigger
        for that (the given ones when there is no such file)."""
        limit, most = work * WHOLE_SHARE // 100, work * TOP_CUT_SHARE // 100
        entry_at, requested = self.entry_at, self.layout.requested
        over = 0
        found = stop
        for _ in range(4):  # a lower stop can keep more files whole: look again
            new = False
            lowest = max(found[1], self.edge - 1)
            for slot in range(self.cap - 1, lowest, -1):
                i = entry_at[slot]
                if i < 0 or i in cuts or not self._whole_file(i):
                    continue
                whole = self.c(i, requested[i])
                if whole <= limit:
                    continue
                if not cuts and not self._cut_first(i):
                    return stop, total, triggered
                keep = self._top_cut_room(i, most)
                if keep:
                    cuts[i] = keep
                    over += whole - keep
                    new = True
            if not new:
                break
            found, found_total, found_triggered = self._find_stop(
                share + over, share + over - reserve
            )
            if found[0] == 2 or any(found[1] >= self.slot[i] for i in cuts):
                cuts.clear()  # one of them would be degraded after all: as before
                return stop, total, triggered
            stop, total, triggered = found, found_total, found_triggered
        return stop, total, triggered

    def _deepen(self, work: int, avail: int) -> None:
        """With a focus, the most important text files the degrade took below their
        requested state (one per :data:`DEPTH_TOKENS` of ``work``, the workspace's room)
        each get the least focused cut that shows more than the outline
        (:meth:`_least_cut`), when it fits in their outline's cost plus
        :data:`DEPTH_EXTRA` percent of ``work`` and leaves :data:`DEPTH_KEEP` percent of
        it (of ``avail``) to the outlines: the best files as focused cuts before the
        next ones' outlines. What is left after the fill deepens these cuts first."""
        if self.focus is None:
            return
        requested, cur, vis = self.layout.requested, self.cur, self.vis
        files, extra = max(1, work // DEPTH_TOKENS), work * DEPTH_EXTRA // 100
        limit = avail - work * DEPTH_KEEP // 100
        # the entries from the top slot down to the edge, those shown below their requested
        # state picked out as the loop reaches them (a cut changes its own entry only): the
        # loop stops after a few files, most often far above the edge
        entry_at = self.entry_at
        for slot in range(self.cap - 1, self.edge - 1, -1):
            i = entry_at[slot]
            if i < 0 or not vis[i] or cur[i] >= requested[i]:
                continue
            if not self._whole_file(i) or i in self.cut:
                continue
            room = min(self.c(i, SUMMARY) + extra, limit - self.total + self.c(i, cur[i]))
            if self.t1[i] == _UNKNOWN:
                self.t1[i] = self._measure_t1(i)
                self._refresh(i)
            if 0 <= self.t1[i] <= room:
                self._least_cut(i, room)
            files -= 1
            if not files:
                return

    def _cut_next(self, slot: int, room: int) -> None:
        """Cut the most important file the degrade took below its requested state (at or
        under ``slot``, among :data:`NEXT_FILE_SCAN` slots) to what ``room`` tokens more
        than its current state allow, when its smallest cut fits (a file :meth:`_deepen`
        cut already grows its cut by ``room`` instead): the share's rest goes on in rank
        order rather than to smaller files ranked after it."""
        entry_at, requested, cur = self.entry_at, self.layout.requested, self.cur
        for s in range(slot, max(-1, slot - NEXT_FILE_SCAN), -1):
            i = entry_at[s]
            if i in self.least:
                self._grow(i, room)
                return
            if i < 0 or not self._whole_file(i) or cur[i] >= requested[i] or i in self.cut:
                continue
            if self.t1[i] == _UNKNOWN:
                self.t1[i] = self._measure_t1(i)
                self._refresh(i)
            current = self.c(i, cur[i])
            if 0 <= self.t1[i] <= room + current:
                self._apply_cut(i, room + current)
            return

    def _others_related(self, i: int) -> bool:
        """Whether a file other than entry ``i`` is related to the focus (none without
        a focus): only then is there more to show than the best file."""
        if self.focus is None:
            return False
        level, kids, nodes = self.layout.level, self.kids, self.layout.nodes
        return any(
            not kids[j] and j != i and getattr(nodes[j], "cuttable_lines", None) is not None
            for j in range(len(level))
            if not unrelated(level[j])
        )

    def _cut_first(self, i: int) -> bool:
        """Whether entry ``i``, the best file and too long to keep whole, gets a cut
        before the fill: with a focus when another file is related to it, without one
        when it is a file of prose (:meth:`_prose`), whose opening sections leave the
        rest of the room to the project's code."""
        return self._others_related(i) if self.focus is not None else self._prose(i)

    def _prose(self, i: int) -> bool:
        """Whether entry ``i`` is a file of prose (docs: a README): read from its start, so
        without a focus its cut (the sections it opens with) is worth room before the
        outlines, where a file of code would show its imports."""
        return file_kind(getattr(self.layout.nodes[i], "path", "")) == DOCS

    def _top_cut_room(self, i: int, most: int) -> int:
        """The room a cut of entry ``i`` (the best file, too long to keep whole) is given
        before the fill: ``most`` tokens, or 0 when even its smallest cut needs more."""
        if self.t1[i] == _UNKNOWN:
            self.t1[i] = self._measure_t1(i)
            self._refresh(i)
        t1 = self.t1[i]
        return most if 0 <= t1 <= most else 0

    def _scan(self, i: int, pre: int, before: int, after: int) -> tuple[int, int] | None:
        """First step of entry ``i`` at which ``pre`` + deltas fits (``before`` as the
        bound until its trigger step, ``after`` from it on); (steps, running) or None."""
        deltas, trig = self._a_steps(i)
        run = pre
        for k, d in enumerate(deltas, 1):
            run += d
            if run <= (after if trig and k >= trig else before):
                return k, run
        return None

    def _first_fit(self, bound: int, lo: int, hi: int) -> tuple[int, tuple[int, int]] | None:
        """The first slot in [lo, hi) where pass A's running sum fits ``bound``, with
        :meth:`_scan`'s answer there; None if none. A leaf's minimum is only a lower
        bound (:meth:`_a_leaf`), so each slot found is checked exactly; where it does not
        fit after all, the search goes on after it."""
        a = self.a_tree
        while True:
            j, pre = a.find_first(bound, lo, hi)
            if j < 0:
                return None
            hit = self._scan(self.entry_at[j], pre, bound, bound)
            if hit is not None:
                return j, hit
            a.set(j, *self._a_leaf(self.entry_at[j]))  # its levels are counted now: exact
            lo = j + 1

    def _find_stop(self, x1: int, x2: int) -> tuple[tuple[int, int, int], int, bool]:
        """The degrade stop for bounds ``x1`` / ``x2`` (:meth:`_search_stop`), its total
        and whether it hides or leaves out anything. Unsettled requested costs are lower
        bounds, so the stop found is never after the one exact counts give; the
        unsettled entries from it on (those that keep their requested state) are settled
        and the search repeated, until none is: then every total at or after the stop is
        exact and every one before it, a lower bound, did not fit, which is the stop of
        exact counts."""
        while True:
            stop, total, triggered = self._search_stop(x1, x2)
            if stop[0] == 2 or not self.unsettled:
                return stop, total, triggered
            entry_at = self.entry_at
            if not self._settle([i for i in entry_at[stop[1] :] if i >= 0]):
                return stop, total, triggered

    def _search_stop(self, x1: int, x2: int) -> tuple[tuple[int, int, int], int, bool]:
        t0, cap, a = self.t0, self.cap, self.a_tree
        tau = a.first_trigger()
        found = self._first_fit(x1 - t0, 0, tau)
        if found is not None:
            j, (k, run) = found
            return (1, j, k), t0 + run, False
        if tau < cap:
            i = self.entry_at[tau]
            hit = self._scan(i, a.prefix(tau), x1 - t0, x2 - t0)
            if hit is not None:
                trig = self._a_steps(i)[1]
                return (1, tau, hit[0]), t0 + hit[1], hit[0] >= trig
            found = self._first_fit(x2 - t0, tau + 1, cap)
            if found is not None:
                j, (k, run) = found
                return (1, j, k), t0 + run, True
        ta = t0 + a.total()
        b = self._pass_b()
        j, pre = b.find_first(x2 - ta, 0, cap)
        if j >= 0:
            return (2, j + 1, 0), ta + pre + self._b_delta(self.entry_at[j]), True
        return (2, cap, 0), ta + b.total(), True

    def _top_file_slot(self) -> int:
        """The slot of the most important text node that can be shown in full (looked
        for among the slots from :attr:`edge` up, which held the last
        :data:`TOP_FILE_SCAN` entries of the order when it was laid out; -1: none there).
        Searched when the slots are laid out, then kept up to date by :meth:`_follow_top`."""
        if self.top is None:
            entry_at = self.entry_at
            self.top = -1
            for slot in range(self.cap - 1, self.edge - 1, -1):
                i = entry_at[slot]
                if i >= 0 and self._whole_file(i):
                    self.top = i
                    break
        return self.slot[self.top] if self.top >= 0 else -1

    def _whole_file(self, i: int) -> bool:
        """Whether entry ``i`` is a text node asked for in full with lines to show."""
        if self.kids[i] or self.layout.requested[i] < DETAILS:
            return False
        cuttable = getattr(self.layout.nodes[i], "cuttable_lines", None)
        return cuttable is not None and cuttable() > 0

    def _raise(self, i: int, target: int, slack: int) -> int:
        """Upgrade entry ``i`` one level at a time up to ``target`` while the next level
        fits in ``slack``; return the slack left."""
        cur = self.cur
        while cur[i] < target:
            d = self._up(i)
            if d > slack:
                self._refresh(i)  # the level above is counted now: the key is exact
                break
            self.mods.append((i, cur[i]))
            self.set_state(i, self._next(i, cur[i]))
            slack -= d
        return slack

    def _fill_outlines(self, avail: int) -> int:
        """Going back from the most important node, bring every degraded node below
        SUMMARY up to SUMMARY (an outline) while it fits, at most :data:`MAX_OUTLINES`;
        return the slot of the first that does not fit or is past that number (-1: all
        did). Nodes after it stay as they are."""
        slack = avail - self.total
        pos, tree, cur, requested = self.cap, self.f_tree, self.cur, self.layout.requested
        low, raised = -1, 0
        while True:
            j = tree.find_last(pos, INF - 1)
            if j < 0:
                break
            i = self.entry_at[j]
            target = min(SUMMARY, requested[i])
            if cur[i] < target:
                if raised == MAX_OUTLINES:  # redone every turn: bounded
                    low = j
                    break
                slack = self._raise(i, target, slack)
                raised += 1
                if cur[i] < target:
                    low = j
                    break
            pos = j
        self.total = avail - slack
        return low

    def _fill(self, avail: int, low: int) -> None:
        """Going back from the most important node (down to slot ``low``, exclusive),
        upgrade each degraded node one level at a time while the next level fits."""
        slack = avail - self.total
        pos, tree, requested = self.cap, self.f_tree, self.layout.requested
        while True:
            j = tree.find_last(pos, slack)
            if j <= low:
                break
            i = self.entry_at[j]
            slack = self._raise(i, requested[i], slack)
            pos = j  # one whose key was not measured and does not fit is passed too
        self.total = avail - slack

    def _cut(self, avail: int) -> None:
        pos, tree = self.cap, self.c_tree
        while self.total < avail:
            slack = avail - self.total
            j = tree.find_last(pos, slack)
            if j < 0:
                return
            i = self.entry_at[j]
            if self.t1[i] == _UNKNOWN:
                self.t1[i] = self._measure_t1(i)
                tree.set(j, self._cut_key(i))
                continue  # search again from the same place with the measured key
            self._apply_cut(i, avail - self.total + self.c(i, self.cur[i]))
            pos = j

    def _cut_target(
        self, i: int, focused: bool = True
    ) -> tuple[int, Callable[[int], tuple[str, int]], int, Callable[[int, int], bool] | None]:
        """(state, cut, steps, adds): ``cut(k)`` renders entry ``i`` cut at step ``k`` in
        0..steps-1 (more shown the higher ``k``; step 0 the least) and says how many of
        its lines that shows. A focused cut (:meth:`TextNode.render_focused_cut`, for the
        focus unless not ``focused``) where the node has one, with ``adds(k, kept)``
        whether step ``k`` shows more than the outline (:meth:`TextNode.cut_adds`); else
        its first ``k + 1`` lines (steps 0: not cuttable) and ``adds`` None."""
        node = self.layout.nodes[i]
        state = NodeState(min(self.layout.requested[i], ALL))
        focus = self.focus if focused else None
        steps_of = getattr(node, "cut_steps", None)
        steps = steps_of(focus) if steps_of is not None else 0
        if steps > 0:
            render = node.render_focused_cut  # type: ignore[attr-defined]
            adds = node.cut_adds  # type: ignore[attr-defined]
            return (
                int(state),
                lambda k: render(state, k, focus),
                steps,
                lambda k, n: adds(k, focus, n),
            )
        render_cut = getattr(node, "render_cut", None)
        cuttable = getattr(node, "cuttable_lines", None)
        if render_cut is None or cuttable is None:
            return int(state), lambda k: ("", 0), 0, None
        return int(state), lambda k: (render_cut(state, k + 1), k + 1), cuttable() - 1, None

    def _measure_t1(self, i: int) -> int:
        """Tokens of entry ``i``'s smallest cut (step 0 of :meth:`_cut_target`), or
        :data:`_NOT_CUTTABLE`. Step 0 of either kind of cut is the cut by lines that keeps
        the first line (a focused cut's least step is rendered that way:
        :meth:`TextNode.render_focused_cut`), and a node with fewer than two lines to cut
        has neither kind; so the file is neither outlined nor parsed to know it."""
        node = self.layout.nodes[i]
        render_cut = getattr(node, "render_cut", None)
        cuttable = getattr(node, "cuttable_lines", None)
        if render_cut is None or cuttable is None or cuttable() < 2:
            return _NOT_CUTTABLE
        state = NodeState(min(self.layout.requested[i], ALL))
        return self.cache.measure(render_cut(state, 1), remember=False)[1]

    def _best_cut(
        self, i: int, room: int, *, focused: bool
    ) -> tuple[int, tuple[int, str, int], bool]:
        """(state, (lines shown, text, tokens), whether it shows more than the outline:
        always for a cut by lines) of the highest step of entry ``i``'s cut
        (:meth:`_cut_target`) that fits in ``room`` (step 0 when none does)."""
        state, cut, steps, adds = self._cut_target(i, focused)
        measure = self.cache.measure
        full = self.c(i, state)
        kept: dict[int, int] = {}

        def measured(k: int) -> tuple[str, int]:
            text, kept[k] = cut(k)
            return measure(text, remember=False)

        # Start near the share of the whole text that the room allows.
        k, text, tokens = most_that_fit(measured, steps - 1, room, steps * room // max(full, 1))
        if k < 0:  # only when a higher step costs fewer tokens somewhere: step 0 fits
            k, (text, tokens) = 0, measured(0)
        return state, (kept[k], text, tokens), adds is None or adds(k, kept[k])

    def _apply_cut(self, i: int, room: int) -> None:
        """Show entry ``i`` cut at the highest step that fits in ``room`` tokens (step 0
        is known to fit): the most whole lines, or for a focused cut the most parts in
        full. In place of an outline already shown, a focused cut that shows no more
        than it (no definition in full, no more lines than the outline has definitions)
        is not shown: the cut without a focus (its head and outline first) is tried,
        and if that shows no more either, nothing changes; nor does a cut smaller than
        the outline. In place of a name, any cut shows more, except for a file unrelated
        to the focus, which gets no cut that shows no more than its outline."""
        state, best, adds = self._best_cut(i, room, focused=True)
        if not adds and self.focus is not None:
            state, best, adds = self._best_cut(i, room, focused=False)
        cur = self.cur[i]
        current = self.c(i, cur)
        if cur >= SUMMARY and best[2] < current:
            return
        if not adds and (cur >= SUMMARY or self.f1[i] == OMIT):
            return
        self._show_cut(i, state, best)

    def _least_cut(self, i: int, room: int) -> None:
        """Show entry ``i`` at the first step of its focused cut (among the first
        :data:`LEAST_STEPS`) that shows more than its outline, when that step fits in
        ``room`` tokens."""
        state, cut, steps, adds = self._cut_target(i)
        if adds is None:
            return
        for k in range(min(steps, LEAST_STEPS)):
            text, kept = cut(k)
            if adds(k, kept):
                text, tokens = self.cache.measure(text, remember=False)
                if tokens <= room:
                    self._show_cut(i, state, (kept, text, tokens))
                    self.least.append(i)
                return

    def _grow(self, i: int, room: int) -> None:
        """Show the cut of entry ``i`` at the highest step that fits in its tokens plus
        ``room``, when that shows more lines: its focused cut, or where that shows no
        more than the outline, the cut without a focus (as :meth:`_apply_cut` chose)."""
        if room <= 0:
            return
        have = self.cut[i]
        _, best, adds = self._best_cut(i, have[2] + room, focused=True)
        if not adds and self.focus is not None:
            _, best, _ = self._best_cut(i, have[2] + room, focused=False)
        if best[0] > have[0] and best[2] <= have[2] + room:
            self.cut[i] = best
            self.total += best[2] - have[2]
            self._touch(i)

    def _show_cut(self, i: int, state: int, best: tuple[int, str, int]) -> None:
        """Show entry ``i`` at ``state`` as the cut ``best`` (lines shown, text, tokens)."""
        cur = self.cur[i]
        current = self.c(i, cur)
        self.mods.append((i, cur))
        self.set_state(i, state)
        self.cut[i] = best
        self._touch(i)
        self._refresh(i)
        self.total += best[2] - current

    def drop_lone_companions(self, first: Mapping[str, int]) -> None:
        """Drop every shown node whose companion (tool call ↔ result) is not shown."""
        if not self.companions:
            return

        def shown(i: int) -> bool:
            return bool(self.vis[i]) and self.cur[i] != OMIT and not self.dropped[i]

        while True:
            lone = [
                i
                for i, peers in self.companions.items()
                if shown(i) and any(p not in first or not shown(first[p]) for p in peers)
            ]
            if not lone:
                return
            for i in lone:
                self.dropped[i] = 1
                self.mods.append((i, -1))
                self._touch(i)
                self._refresh(i)
