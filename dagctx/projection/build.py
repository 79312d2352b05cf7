"""Budget allocation and assembly of a :class:`Projection`.

The algorithm, for a budget ``B``:

1. Walk the graph at the requested states (:mod:`dagctx.projection.walk`) and cost every
   entry from the section cache. If everything plus the changes section fits, render it
   as is (fidelity: identical to an unbudgeted render).
2. Otherwise reserve room for the "left out" footer and degrade, in ascending order of
   (priority, recency, position): each node one level at a time down to COLLAPSED, then,
   if still over, omit nodes in the same order. A container that stops showing its
   children covers them (their cost leaves the total; they count as left out).
3. Upgrade, highest priority first, any degraded node whose next level fits in the slack.
4. Fill the remaining slack by cutting one long text node to the whole lines that fit.
5. Re-walk at the decided states, assemble sections, and prove ``tokens <= B``: summed
   section counts are exact for section boundaries, and an exact count of the final text
   is made whenever the sum is within a safety margin of ``B``. If the proof fails, the
   last sections are dropped until it holds.

Default priorities come from the node type (``Node.default_priority``: sessions and
conversation highest, groups 60, shell output 55, text files 40); ties go to the more
recently changed node, then to the earlier position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dagctx.graph import ContextGraph
from dagctx.nodes.base import Node, NodeState, Trace
from dagctx.projection.result import Projection, Section
from dagctx.projection.sections import SectionCache, section_text
from dagctx.projection.walk import Entry, walk

OMITTED = NodeState.HIDDEN  # allocation marker for "left out" (user-HIDDEN nodes never walk)
CHANGES_SHARE = 8  # the changes section takes at most 1/8 of the budget
FOOTER_TOKENS = 64  # room reserved for the "left out" footer (at most 1/20 of the budget)


@dataclass(slots=True)
class _Plan:
    """Mutable allocation state over the walk entries."""

    entries: list[Entry]
    cache: SectionCache
    state: dict[str, NodeState] = field(default_factory=dict)
    covered: list[bool] = field(default_factory=list)
    cut: dict[str, tuple[int, str, int]] = field(default_factory=dict)  # id → (lines, text, tok)
    total: int = 0

    def cost(self, entry: Entry, state: NodeState | None = None) -> int:
        if entry.reference:
            return 0 if state == OMITTED else _reference(entry.node, self.cache)[1]
        st = self.state[entry.node.id] if state is None else state
        if st == OMITTED:
            return 0
        cut = self.cut.get(entry.node.id)
        if cut is not None and state is None:
            return cut[2]
        return self.cache.tokens(entry.node, st)

    def expanded(self, entry: Entry) -> bool:
        return not entry.reference and self.state[entry.node.id] in entry.node.expands_at

    def span_cost(self, index: int) -> int:
        """Cost of the entries a container at ``index`` shows when expanded."""
        entries, total, j = self.entries, 0, index + 1
        end = entries[index].end
        while j < end:
            total += self.cost(entries[j])
            j = entries[j].end if not self.expanded(entries[j]) else j + 1
        return total

    def set_covered(self, index: int, covered: bool) -> None:
        entries, j = self.entries, index + 1
        end = entries[index].end
        while j < end:
            self.covered[j] = covered
            j = entries[j].end if not self.expanded(entries[j]) else j + 1

    def change(self, index: int, new: NodeState) -> None:
        """Move entry ``index`` to state ``new``, keeping ``total`` and coverage right."""
        entry = self.entries[index]
        nid = entry.node.id
        self.cut.pop(nid, None)
        was_expanded = self.expanded(entry)
        self.total -= self.cost(entry)
        if was_expanded and new not in entry.node.expands_at:
            self.total -= self.span_cost(index)
            self.set_covered(index, True)
        self.state[nid] = new
        if not was_expanded and self.expanded(entry):
            self.set_covered(index, False)
            self.total += self.span_cost(index)
        self.total += self.cost(entry)


def _reference(node: Node, cache: SectionCache) -> tuple[str, int]:
    return cache.measure(f"(see #{node.id} above: {node.label()})")


def _lower(state: NodeState, floor: NodeState) -> NodeState | None:
    return NodeState(state - 1) if state > floor else None


def _changes_section(traces: Sequence[Trace], graph: ContextGraph, cache: SectionCache,
                     limit: int) -> tuple[str, int]:  # fmt: skip
    lines = []
    for t in traces:
        if t.derived:
            continue
        label = graph.get(t.node_id).label() if t.node_id in graph else "(removed)"
        lines.append(f"- #{t.node_id} {label}: {t.description} (v{t.old_version}→v{t.new_version})")
    if not lines:
        return "", 0
    head = "## Changes since last turn"
    whole = cache.measure("\n".join([head, *lines]))
    if whole[1] <= limit:
        return whole
    lo, hi, best = 0, len(lines) - 1, ("", 0)
    while lo <= hi:  # the most change lines that fit
        keep = (lo + hi) // 2
        more = [f"- … {len(lines) - keep} more changes"] if keep < len(lines) else []
        text, tokens = cache.measure("\n".join([head, *lines[:keep], *more]))
        if tokens <= limit:
            best, lo = (text, tokens), keep + 1
        else:
            hi = keep - 1
    return best


def _footer(omitted: list[str], graph: ContextGraph, cache: SectionCache, budget: int,
            limit: int) -> tuple[str, int]:  # fmt: skip
    if not omitted:
        return "", 0
    names = [f"#{nid} ({graph.get(nid).label()})" for nid in omitted[:200]]
    n = len(omitted)
    lo, hi, best = 0, len(names), ("", 0)
    while lo <= hi:  # the most names that fit
        mid = (lo + hi) // 2
        rest = f", … +{n - mid} more" if mid < n else ""
        listed = ": " + ", ".join(names[:mid]) + rest if mid else ""
        text, tokens = cache.measure(
            f"[dagctx left out {n} node{'s' * (n != 1)} to fit {budget} tokens{listed}]"
        )
        if tokens <= limit:
            best, lo = (text, tokens), mid + 1
        else:
            hi = mid - 1
    return best


def build_projection(
    graph: ContextGraph,
    cache: SectionCache,
    budget: int,
    *,
    changes: Sequence[Trace] = (),
    previous: Projection | None = None,
) -> Projection:
    """Render ``graph`` into a :class:`Projection` of at most ``budget`` tokens."""
    entries = walk(graph, lambda n: n.state)
    plan = _Plan(entries, cache, {e.node.id: e.node.state for e in entries if not e.reference})
    plan.covered = [False] * len(entries)
    plan.total = sum(plan.cost(e) for e in entries)
    changes_text, changes_tokens = _changes_section(changes, graph, cache, budget)
    reasons: dict[str, str] = {}
    if plan.total + changes_tokens > budget:
        changes_text, changes_tokens = _changes_section(
            changes, graph, cache, budget // CHANGES_SHARE
        )
        reserve = min(FOOTER_TOKENS, budget // 20)
        _allocate(plan, max(0, budget - changes_tokens), reserve, reasons)
    return _assemble(graph, plan, budget, changes_text, changes_tokens, reasons, previous)


def _order(plan: _Plan) -> list[int]:
    """Indices of non-reference entries, least important first."""
    idx = [i for i, e in enumerate(plan.entries) if not e.reference]
    idx.sort(key=lambda i: (plan.entries[i].node.priority, plan.entries[i].node.seq, -i))
    return idx


def _allocate(plan: _Plan, room: int, footer_reserve: int, reasons: dict[str, str]) -> None:
    """Decide a state per entry so that the sections fit in ``room`` tokens.

    ``footer_reserve`` tokens are kept free as soon as anything gets left out (or covered),
    for the footer that lists what was.
    """
    order = _order(plan)
    entries = plan.entries
    avail = room
    # Pass 1 and 2: degrade down to COLLAPSED, then omit, least important first.
    for floor in (NodeState.COLLAPSED, OMITTED):
        for i in order:
            if plan.total <= avail:
                break
            if plan.covered[i]:
                continue
            node = entries[i].node
            lowest = max(floor, node.min_state()) if floor != OMITTED else OMITTED
            while plan.total > avail:
                nxt = _lower(plan.state[node.id], lowest)
                if nxt is None:
                    break
                plan.change(i, nxt)
                if nxt == OMITTED or (not plan.expanded(entries[i]) and entries[i].end > i + 1):
                    avail = room - footer_reserve
    # Pass 3: upgrade, most important first, while the next level fits.
    for i in reversed(order):
        if plan.covered[i]:
            continue
        node = entries[i].node
        while plan.state[node.id] < node.state:
            nxt = NodeState(plan.state[node.id] + 1)
            plan.change(i, nxt)
            if plan.total > avail:
                plan.change(i, NodeState(nxt - 1))
                break
    # Pass 4: fill the slack with long text nodes cut to the lines that fit.
    for i in reversed(order):
        if plan.total >= avail:
            break
        node = entries[i].node
        if plan.covered[i] or node.state < NodeState.DETAILS:
            continue
        if plan.state[node.id] < NodeState.DETAILS:
            _fill_cut(plan, i, avail)
    for i in order:
        node = entries[i].node
        st = plan.state[node.id]
        if plan.covered[i]:
            reasons[node.id] = "inside a collapsed parent (budget)"
        elif st == OMITTED:
            reasons[node.id] = f"left out: budget (priority {node.priority})"
        elif node.id in plan.cut:
            reasons[node.id] = f"cut to {plan.cut[node.id][0]} lines to fit the budget"
        elif st < node.state:
            reasons[node.id] = f"degraded for budget (priority {node.priority})"


def _fill_cut(plan: _Plan, index: int, avail: int) -> bool:
    """Show entry ``index`` at DETAILS cut to the most whole lines that fit; True if done."""
    node = plan.entries[index].node
    cuttable = getattr(node, "cuttable_lines", None)
    render_cut = getattr(node, "render_cut", None)
    if cuttable is None or render_cut is None:
        return False
    n = cuttable()
    if n <= 1:
        return False
    current = plan.cost(plan.entries[index])
    room = avail - plan.total + current
    state = min(node.state, NodeState.ALL)
    lo, hi, best = 1, n - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        text, tokens = plan.cache.measure(render_cut(state, mid))
        if tokens <= room:
            best, lo = (mid, text, tokens), mid + 1
        else:
            hi = mid - 1
    if best is None:
        return False
    plan.total -= current
    plan.state[node.id] = state
    plan.cut[node.id] = best
    plan.total += best[2]
    return True


def _assemble(
    graph: ContextGraph,
    plan: _Plan,
    budget: int,
    changes_text: str,
    changes_tokens: int,
    reasons: dict[str, str],
    previous: Projection | None,
) -> Projection:
    requested = {e.node.id: e.node.state for e in plan.entries}
    final = walk(graph, lambda n: plan.state.get(n.id, n.state))
    body: list[tuple[Section, str]] = []
    tail: list[tuple[Section, str]] = []
    shown: set[str] = set()
    for entry in final:
        node = entry.node
        st = plan.state.get(node.id, node.state)
        if entry.reference:
            text, tokens = _reference(node, plan.cache)
            section = Section(node.id, node.state, st, tokens, reference=True, version=node.version)
        else:
            shown.add(node.id)
            cut = plan.cut.get(node.id)
            if cut is not None:
                lines, text, tokens = cut
                section = Section(
                    node.id, node.state, st, tokens, _cut_count(node, lines), version=node.version
                )
            else:
                text, tokens = plan.cache.get(node, st)
                section = Section(node.id, node.state, st, tokens, version=node.version)
        (tail if node.volatile else body).append((section, text))
    companions = {e.node.id: e.node.companions() for e in final if e.node.companions()}
    _drop_lone_companions(body, tail, companions, shown, reasons)
    while True:
        omitted = [nid for nid in requested if nid not in shown]
        for nid in omitted:
            reasons.setdefault(nid, "left out: budget")
        parts = body + tail
        used = sum(s.tokens for s, _ in parts) + changes_tokens
        footer_text, footer_tokens = _footer(omitted, graph, plan.cache, budget, budget - used)
        text = "".join(t for _, t in parts) + changes_text + footer_text
        tokens = used + footer_tokens
        if tokens > budget - max(8, budget // 50):
            tokens = plan.cache.counter.count_exact(text)
        if tokens <= budget or not parts:
            break
        # The proof failed (multi-parent moves or a boundary merge): drop the last section,
        # with its references and its companions.
        dropped, _ = (tail or body).pop()
        if not dropped.reference:
            shown.discard(dropped.node_id)
            reasons[dropped.node_id] = "left out: budget (final check)"
            body[:] = [(s, t) for s, t in body if s.node_id in shown]
            tail[:] = [(s, t) for s, t in tail if s.node_id in shown]
            _drop_lone_companions(body, tail, companions, shown, reasons)
    if tokens > budget:  # nothing left but changes/footer: drop them too
        text, tokens = "", 0
    sections = [s for s, _ in body + tail]
    degraded = {
        s.node_id: (s.requested_state, s.rendered_state)
        for s in sections
        if not s.reference and (s.rendered_state < s.requested_state or s.cut_lines)
    }
    for nid in list(reasons):
        if nid not in degraded and nid not in omitted:
            del reasons[nid]
    labels = {nid: graph.get(nid).label() for nid in requested}
    return Projection(
        text=text,
        tokens=tokens,
        budget=budget,
        sections=sections,
        omitted=omitted,
        degraded=degraded,
        reasons=reasons,
        stable_prefix_tokens=_stable_prefix(sections, previous),
        labels=labels,
    )


def _drop_lone_companions(
    body: list[tuple[Section, str]],
    tail: list[tuple[Section, str]],
    companions: dict[str, tuple[str, ...]],
    shown: set[str],
    reasons: dict[str, str],
) -> None:
    """Drop every shown node whose companion (tool call ↔ result) is not shown."""
    while True:
        lone = {nid for nid, peers in companions.items()
                if nid in shown and any(p not in shown for p in peers)}  # fmt: skip
        if not lone:
            return
        for nid in lone:
            shown.discard(nid)
            reasons[nid] = "left out with its companion (a tool call and its result go together)"
        body[:] = [(s, t) for s, t in body if s.reference or s.node_id not in lone]
        tail[:] = [(s, t) for s, t in tail if s.reference or s.node_id not in lone]


def _cut_count(node: Node, kept: int) -> int:
    cuttable = getattr(node, "cuttable_lines", None)
    return (cuttable() - kept) if cuttable is not None else 0


def _stable_prefix(sections: list[Section], previous: Projection | None) -> int:
    """Tokens of the leading sections identical (same node, version, state) to last time."""
    if previous is None:
        return 0
    total = 0
    for now, before in zip(sections, previous.sections, strict=False):
        if now != before:
            break
        total += now.tokens
    return total


__all__ = ["build_projection", "section_text"]
