"""Where a projection's tokens went, as text: the summary :meth:`Projection.explain`
prints by default and the full per-node table it prints on request.

The summary stays a screenful at any graph size: totals by rendered state, the
directories with the most tokens, the top nodes by tokens (with their relevance score),
the degraded, left-out and held-back nodes grouped by directory and reason with counts,
then the totals line (used / budget, stable prefix and what ended it) and the secrets
line. The full table has one row per node in text order, then the nodes left out; a
node filter (a glob over labels and ids) narrows it to the nodes a user asks about.

Owns only the formatting; must not import the projector or the session (it reads a
finished :class:`~dagctx.projection.result.Projection`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from dagctx._plural import counted
from dagctx.nodes.base import NodeState

if TYPE_CHECKING:
    from dagctx.projection.relevance import Score
    from dagctx.projection.result import Projection

#: A cell of the full table wider than this is shortened with an ellipsis.
CELL_WIDTH = 40
#: How many rows each part of the summary lists before "and N more".
TOP = 10
#: The summary groups nodes by the first directories of their path: as many levels as
#: keep the number of directories at most :data:`DIRECTORIES`, up to this many.
MAX_DEPTH = 3
DIRECTORIES = 2 * TOP
#: The directory of nodes whose label is not a path below the root (messages, tools...).
TOP_DIRECTORY = "./"

_PRIORITY = re.compile(r" \(priority -?\d+\)$")


def shorten(cell: str, width: int = CELL_WIDTH, *, keep_end: bool = False) -> str:
    """``cell`` cut to ``width`` characters with an ellipsis where it was cut: at the end,
    or at the start when ``keep_end`` (a path's file name matters most)."""
    if len(cell) <= width:
        return cell
    return "…" + cell[-(width - 1) :] if keep_end else cell[: width - 1] + "…"


def directory_of(label: str, depth: int) -> str:
    """The directory the summary counts a node in: the first ``depth`` directories of a
    file's path (``"a/b/c/d.py"`` at depth 2 → ``"a/b/"``), a directory group's own path so cut, and
    :data:`TOP_DIRECTORY` for a file at the top or a node that is not a path."""
    folder = label if label.endswith("/") else label.rpartition("/")[0]
    parts = [part for part in folder.split("/") if part][:depth]
    return "/".join(parts) + "/" if parts else TOP_DIRECTORY


def grouping_depth(labels: Iterable[str]) -> int:
    """How many directory levels the summary groups by: the most (1 to :data:`MAX_DEPTH`)
    that give at most :data:`DIRECTORIES` directories (else 1), and no more levels than
    it takes to tell those directories apart."""
    folders = {label if label.endswith("/") else label.rpartition("/")[0] for label in labels}
    counts = [len({directory_of(f + "/", d) for f in folders}) for d in range(MAX_DEPTH + 1)]
    depth = max((d for d in range(1, MAX_DEPTH + 1) if counts[d] <= DIRECTORIES), default=1)
    while depth > 1 and counts[depth - 1] == counts[depth]:
        depth -= 1
    return depth


def matches(pattern: str, node_id: str, label: str) -> bool:
    """Whether a node filter selects a node: ``pattern`` (an fnmatch glob, ``*`` crossing
    ``/``) matches its label or its id (with or without ``#``)."""
    return (
        fnmatchcase(label, pattern)
        or fnmatchcase(node_id, pattern)
        or fnmatchcase(f"#{node_id}", pattern)
    )


def totals_lines(p: Projection) -> list[str]:
    """The totals line and, when a node holds something back, the secrets line."""
    used = f"{p.tokens}/{p.budget} tokens ({100 * p.tokens / p.budget:.1f}%)"
    lines = [
        f"total: {used}; {len(p.sections)} sections, {len(p.degraded)} degraded,"
        f" {len(p.omitted)} left out; stable prefix {p.stable_prefix_tokens} tokens"
        + (f" (ended by {p.prefix_break})" if p.prefix_break else "")
    ]
    notes = p.notes
    if notes:
        withheld = sum(1 for note in notes.values() if note.startswith("withheld: "))
        outputs = sum(1 for note in notes.values() if note.startswith("output: "))
        files = len(notes) - withheld - outputs
        more = f", {counted(outputs, 'command output')} with secrets redacted" if outputs else ""
        lines.append(
            f"secrets: {withheld} secret-bearing files withheld, {files} files with secrets"
            f" redacted{more} (include_secrets=True or --include-secrets shows them)"
        )
    return lines


def full_table(p: Projection, nodes: str | None = None) -> str:
    """One row per section (node, label, requested and rendered state, tokens, why,
    relevance score with its parts) in text order, then one per node left out, then the
    totals; with ``nodes`` (a glob, see :func:`matches`) only the rows it selects."""
    labels, reasons, scores, notes = p.labels, p.reasons, p.scores, p.notes

    def score(node_id: str) -> str:
        found = scores.get(node_id)
        return found.describe() if found is not None else ""

    def wanted(node_id: str) -> bool:
        return nodes is None or matches(nodes, node_id, labels.get(node_id, ""))

    rows = [("node", "label", "requested", "rendered", "tokens", "why", "score")]
    for s in p.sections:
        if not wanted(s.node_id):
            continue
        why = reasons.get(s.node_id, "")
        if s.reference:
            why = "reference to a node shown earlier"
        elif s.node_id in notes:
            why = "; ".join(filter(None, (why, notes[s.node_id])))
        rendered = s.rendered_state.name + (
            f" (-{counted(s.cut_lines, 'line')})" if s.cut_lines else ""
        )
        rows.append(
            (
                s.node_id,
                labels.get(s.node_id, ""),
                s.requested_state.name,
                rendered,
                str(s.tokens),
                why,
                "" if s.reference else score(s.node_id),
            )
        )
    for node_id in p.omitted:
        if not wanted(node_id):
            continue
        why = reasons.get(node_id, "budget")
        if node_id in notes:
            why = f"{why}; {notes[node_id]}"
        rows.append((node_id, labels.get(node_id, ""), "", "OMITTED", "0", why, score(node_id)))
    cells = [
        [shorten(cell, keep_end=i == 1) for i, cell in enumerate(row[:5])] + list(row[5:])
        for row in rows
    ]
    widths = [max(len(r[i]) for r in cells) for i in range(6)]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(r[:6], widths, strict=True)) + "  " + r[6]
        for r in cells
    ]
    if nodes is not None:
        lines.append(f"{counted(len(rows) - 1, 'node')} match {nodes!r}")
    return "\n".join(line.rstrip() for line in lines + totals_lines(p))


def summary(p: Projection) -> str:
    """The summary: by state, by directory, the top nodes by tokens, the degraded,
    left-out and held-back nodes by directory and reason, how to see every row, then the
    totals (the last lines, as in the full table)."""
    labels = p.labels
    depth = grouping_depth(labels.values())
    lines = [*_by_state(p), "", *_by_directory(p, depth), "", *_top_nodes(p)]
    degraded = [
        (node_id, _reason(p.reasons.get(node_id, "degraded")) + f" ({a.name} → {b.name})")
        for node_id, (a, b) in p.degraded.items()
    ]
    omitted = [(node_id, _reason(p.reasons.get(node_id, "budget"))) for node_id in p.omitted]
    for title, entries in (
        ("degraded", degraded),
        ("left out", omitted),
        ("held back for safety", list(p.notes.items())),
    ):
        if entries:
            lines += ["", *_grouped(title, entries, labels, depth)]
    lines += [
        "",
        "every node: explain(full=True) or --explain=full; some nodes:"
        " explain(nodes='lib/*') or --explain='lib/*'",
        *totals_lines(p),
    ]
    return "\n".join(lines)


def _reason(why: str) -> str:
    """A reason without its node's priority, so that equal reasons group together."""
    return _PRIORITY.sub("", why)


def _brief(score: Score) -> str:
    """A score on a few characters: ``level 179 (lexical 0.71, graph 0.40, recent 0.00,
    tier 19)``; the full table spells out the weights."""
    if score.inherited:
        return f"level {score.level} (best child)"
    return (
        f"level {score.level} (lexical {score.lexical:.2f}, graph {score.graph:.2f},"
        f" recent {score.recent:.2f}, tier {score.tier})"
    )


def _by_state(p: Projection) -> list[str]:
    nodes: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    for s in p.sections:
        name = "reference" if s.reference else s.rendered_state.name
        nodes[name] += 1
        tokens[name] += s.tokens
    order = [state.name for state in sorted(NodeState, reverse=True)] + ["reference"]
    rows = [(name, nodes[name], tokens[name]) for name in order if nodes[name]]
    if p.omitted:
        rows.append(("OMITTED", len(p.omitted), 0))
    lines = ["by rendered state:"]
    lines += [f"  {name:<10} {counted(n, 'node'):>14}  {t:>8,} tokens" for name, n, t in rows]
    return lines


def _by_directory(p: Projection, depth: int) -> list[str]:
    labels = p.labels
    tokens: Counter[str] = Counter()
    shown: Counter[str] = Counter()
    degraded: Counter[str] = Counter()
    left: Counter[str] = Counter()
    degraded_ids = p.degraded
    for s in p.sections:
        where = directory_of(labels.get(s.node_id, ""), depth)
        tokens[where] += s.tokens
        shown[where] += 1
        degraded[where] += s.node_id in degraded_ids
    for node_id in p.omitted:
        left[directory_of(labels.get(node_id, ""), depth)] += 1
    order = sorted(set(shown) | set(left), key=lambda d: (-tokens[d], -left[d], d))
    width = max((len(shorten(d, keep_end=True)) for d in order[:TOP]), default=0)
    levels = counted(depth, "level")
    lines = [f"by directory ({levels} deep), most tokens first:"]
    for where in order[:TOP]:
        lines.append(
            f"  {shorten(where, keep_end=True):<{width}}  {tokens[where]:>8,} tokens"
            f"  {shown[where]:>6,} shown  {degraded[where]:>6,} degraded"
            f"  {left[where]:>6,} left out"
        )
    rest = order[TOP:]
    if rest:
        lines.append(
            f"  and {counted(len(rest), 'more directory', 'more directories')}:"
            f" {sum(tokens[d] for d in rest):,} tokens, {sum(left[d] for d in rest):,} left out"
        )
    return lines


def _top_nodes(p: Projection) -> list[str]:
    labels, scores = p.labels, p.scores
    top = sorted((s for s in p.sections if not s.reference), key=lambda s: -s.tokens)[:TOP]
    lines = [f"top {len(top)} nodes by tokens:"]
    width = max((len(shorten(labels.get(s.node_id, ""), keep_end=True)) for s in top), default=0)
    for s in top:
        score = scores.get(s.node_id)
        rendered = s.rendered_state.name + (
            f" (-{counted(s.cut_lines, 'line')})" if s.cut_lines else ""
        )
        lines.append(
            f"  {s.tokens:>7,}  {shorten(labels.get(s.node_id, ''), keep_end=True):<{width}}"
            f"  #{s.node_id}  {rendered}" + (f"  {_brief(score)}" if score is not None else "")
        )
    return lines


def _grouped(
    title: str, entries: Iterable[tuple[str, str]], labels: dict[str, str], depth: int
) -> list[str]:
    """``title``'s nodes counted by (directory, reason), the largest groups first."""
    groups: Counter[tuple[str, str]] = Counter()
    example: dict[tuple[str, str], str] = {}
    total = 0
    for node_id, why in entries:
        label = labels.get(node_id, "")
        key = (directory_of(label, depth), why)
        groups[key] += 1
        example.setdefault(key, label or f"#{node_id}")
        total += 1
    order = sorted(groups, key=lambda k: (-groups[k], k))
    lines = [f"{title}: {counted(total, 'node')}, by directory and reason:"]
    width = max(len(shorten(d, keep_end=True)) for d, _ in order[:TOP])
    for key in order[:TOP]:
        where, why = key
        what = f"e.g. {shorten(example[key], keep_end=True)}" if groups[key] > 1 else example[key]
        lines.append(
            f"  {shorten(where, keep_end=True):<{width}}  {groups[key]:>6,}×  {why}  ({what})"
        )
    rest = order[TOP:]
    if rest:
        lines.append(
            f"  and {counted(len(rest), 'more group')} of {sum(groups[k] for k in rest):,} nodes"
        )
    return lines
