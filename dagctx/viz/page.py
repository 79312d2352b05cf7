"""The viz page as HTML: where a projection's tokens went, drawn without any script library.

`page_html` is one self-contained document (inline CSS and script, nothing fetched) that
`Projection.to_html` returns and ``dagctx viz`` serves; `view_html` is the part that
changes from tick to tick (the budget bar, the treemap as inline SVG, the lists of
changed, degraded and left-out nodes), which the live page swaps in when the server
pushes a new one. Every drawn node carries its figures as ``data-*`` attributes, which
the node panel shows and the tests read. The style and the script are the files
``page.css`` and ``page.js`` beside this module (shipped in the wheel), inlined here.

Reads a `Projection` only; must not import the session, the server or third-party
packages (``to_html`` works in a bare install).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

from dagctx.viz.treemap import HEADER, Box, Folder, Rect, layout

if TYPE_CHECKING:
    from dagctx.projection.result import Projection, Section

WIDTH, HEIGHT = 1200.0, 640.0
"""The treemap's drawing area (SVG user units; the page scales it to the window)."""
MIN_AREA = WIDTH * HEIGHT / 1500
"""Below this area a node is drawn in an aggregate box: at most ~1,500 boxes at any size."""
LIST_ROWS = 200
"""Rows shown of each list (degraded, left out, changed); the rest are counted."""

STATE_COLOURS = {
    "ALL": "#1d4ed8",
    "DETAILS": "#3b82f6",
    "SUMMARY": "#93c5fd",
    "COLLAPSED": "#cbd5e1",
    "HIDDEN": "#f1f5f9",
}
_CSS = (Path(__file__).parent / "page.css").read_text(encoding="utf-8")
_JS = (Path(__file__).parent / "page.js").read_text(encoding="utf-8")
_REFERENCE_COLOUR = "#ddd6fe"
_AGGREGATE_COLOUR = "#e5e7eb"


def page_html(
    projection: Projection, *, changed: Iterable[str] = (), live: bool = False, title: str = ""
) -> str:
    """The whole page for ``projection``: `view_html` inside the document, its style and
    its script. With ``live`` the script follows the server's ``/events`` stream and the
    node panel offers the state verbs; without, the page is a static report."""
    heading = f"dagctx — {title}" if title else "dagctx — where the tokens go"
    config = json.dumps({"live": live})
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{escape(heading)}</title>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<style>{_CSS}</style></head><body>"
        f"<header><h1>{escape(heading)}</h1><span id=status></span></header>"
        f"<main><div id=view>{view_html(projection, changed=changed)}</div>"
        "<aside id=panel><p class=hint>Click a node to see it here.</p></aside></main>"
        f"<script>const DAGCTX = {config};\n{_JS}</script></body></html>\n"
    )


def view_html(projection: Projection, *, changed: Iterable[str] = ()) -> str:
    """The part of the page that follows the projection: budget bar, legend, treemap,
    and the lists of nodes changed last turn, degraded and left out."""
    changed_ids = set(changed)
    return "".join(
        (
            _budget_bar(projection),
            _legend(),
            _treemap(projection, changed_ids),
            _changed_list(projection, changed_ids),
            _degraded_list(projection),
            _omitted_list(projection),
        )
    )


# -- the budget bar ----------------------------------------------------------------------


def _budget_bar(p: Projection) -> str:
    budget = max(p.budget, 1)
    prefix = min(p.stable_prefix_tokens, p.tokens)
    free = max(p.budget - p.tokens, 0)
    parts = (
        ("prefix", prefix, "stable prefix (cacheable)"),
        ("used", p.tokens - prefix, "used, changed since the last projection"),
        ("free", free, "free"),
    )
    bar = "".join(
        f'<div class="seg {name}" style="width:{100 * value / budget:.3f}%"'
        f' title="{escape(what)}: {value:,} tokens"></div>'
        for name, value, what in parts
    )
    figures = (
        f'<span id=used data-value="{p.tokens}">{p.tokens:,}</span> of '
        f'<span id=budget data-value="{p.budget}">{p.budget:,}</span> tokens used'
        f" ({100 * p.tokens / budget:.1f}%) · "
        f'<span id=free data-value="{free}">{free:,}</span> free · stable prefix '
        f'<span id=prefix data-value="{p.stable_prefix_tokens}">{p.stable_prefix_tokens:,}</span>'
        f' · <span id=sections data-value="{len(p.sections)}">{len(p.sections):,}</span>'
        f' sections, <span id=degraded-count data-value="{len(p.degraded)}">'
        f"{len(p.degraded):,}</span> degraded,"
        f' <span id=omitted-count data-value="{len(p.omitted)}">{len(p.omitted):,}</span>'
        " left out"
    )
    return (
        f"<section id=budgetbar><div class=bar>{bar}</div><p class=figures>{figures}</p></section>"
    )


def _legend() -> str:
    swatches = [
        (name.lower(), colour) for name, colour in STATE_COLOURS.items() if name != "HIDDEN"
    ]
    swatches += [("reference", _REFERENCE_COLOUR), ("many small nodes", _AGGREGATE_COLOUR)]
    items = "".join(
        f'<span><i style="background:{colour}"></i>{escape(name)}</span>'
        for name, colour in swatches
    )
    return (
        f"<p class=legend>Area = tokens, colour = rendered state: {items}"
        '<span><i class="degraded-key"></i>degraded</span>'
        '<span><i class="changed-key"></i>changed last turn</span></p>'
    )


# -- the treemap -------------------------------------------------------------------------


def folder_of(label: str) -> str:
    """The folder a node is drawn in: a directory group's own path ("a/b/" → "a/b"), a
    file's directory ("a/b/c.py" → "a/b"), "" (the top) for anything else."""
    if label.endswith("/"):
        return label.rstrip("/")
    return label.rpartition("/")[0]


def _treemap(p: Projection, changed: set[str]) -> str:
    labels = p.labels
    root: Folder[Section] = Folder()
    for section in p.sections:
        root.add(folder_of(labels.get(section.node_id, "")), section, section.tokens)
    boxes = layout(root, Rect(0, 0, WIDTH, HEIGHT), MIN_AREA)
    drawn = "".join(_box(p, box, changed) for box in boxes)
    return (
        f'<section id=treemap-box><svg id=treemap viewBox="0 0 {WIDTH:g} {HEIGHT:g}"'
        f' data-boxes="{len(boxes)}" role=img aria-label="treemap of the projection">'
        f"{drawn}</svg></section>"
    )


def _box(p: Projection, box: Box[Section], changed: set[str]) -> str:
    r = box.rect
    geometry = f'x="{r.x:.1f}" y="{r.y:.1f}" width="{r.w:.1f}" height="{r.h:.1f}"'
    if box.frame:
        name = box.folder.rpartition("/")[2] or "/"
        return (
            f'<g class=folder data-folder="{escape(box.folder)}" data-tokens="{box.weight}">'
            f"<rect {geometry}><title>{escape(box.folder)}/: {box.weight:,} tokens,"
            f" {box.count:,} nodes</title></rect>"
            + _caption(r, f"{name}/ · {box.weight:,}", top=True)
            + "</g>"
        )
    section = box.item
    if section is None:
        what = f"{box.count:,} small nodes in {box.folder or 'the top folder'}"
        return (
            f'<g class=aggregate data-folder="{escape(box.folder)}" data-count="{box.count}"'
            f' data-tokens="{box.weight}"><rect {geometry} fill="{_AGGREGATE_COLOUR}">'
            f"<title>{escape(what)}: {box.weight:,} tokens</title></rect>"
            + _caption(r, f"{box.count:,} nodes · {box.weight:,}")
            + "</g>"
        )
    node_id = section.node_id
    label = p.labels.get(node_id, "")
    state = section.rendered_state.name
    colour = _REFERENCE_COLOUR if section.reference else STATE_COLOURS.get(state, "#ccc")
    classes = ["node"]
    if node_id in p.degraded:
        classes.append("degraded")
    if node_id in changed:
        classes.append("changed")
    shown = label.rstrip("/").rpartition("/")[2] or label or node_id
    return (
        f'<g class="{" ".join(classes)}" {_node_data(p, section, label)}>'
        f'<rect {geometry} fill="{colour}"><title>{escape(label)} ({escape(node_id)}):'
        f" {section.tokens:,} tokens, {state.lower()}</title></rect>"
        + _caption(r, f"{shown} · {section.tokens:,}")
        + "</g>"
    )


def _node_data(p: Projection, section: Section, label: str) -> str:
    score = p.scores.get(section.node_id)
    why = p.reasons.get(section.node_id, "")
    if section.reference:
        why = "reference to a node shown earlier"
    fields = {
        "node": section.node_id,
        "label": label,
        "tokens": str(section.tokens),
        "requested": section.requested_state.name,
        "rendered": section.rendered_state.name,
        "version": str(section.version),
        "cut": str(section.cut_lines),
        "why": why,
        "score": score.describe() if score is not None else "",
    }
    return " ".join(f'data-{key}="{escape(value)}"' for key, value in fields.items())


def _caption(r: Rect, text: str, *, top: bool = False) -> str:
    if r.w < 40 or r.h < (HEADER if top else 16):
        return ""
    room = int((r.w - 6) / 6.5)
    shown = text if len(text) <= room else text[: max(room - 1, 1)] + "…"
    y = r.y + 11 if top else r.y + 13
    return f'<text x="{r.x + 3:.1f}" y="{y:.1f}">{escape(shown)}</text>'


# -- the lists ---------------------------------------------------------------------------


def _table(ident: str, heading: str, head: tuple[str, ...], rows: list[str], total: int) -> str:
    more = (
        f"<p class=more>and {total - len(rows):,} more (see explain())</p>"
        if total > len(rows)
        else ""
    )
    cells = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join(rows) if rows else f'<tr><td colspan="{len(head)}">none</td></tr>'
    return (
        f'<section id={ident} data-count="{total}"><h2>{escape(heading)} ({total:,})</h2>'
        f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>{more}</section>"
    )


def _row(node_id: str, cells: Iterable[str]) -> str:
    tds = "".join(f"<td>{escape(cell)}</td>" for cell in cells)
    return f'<tr data-node="{escape(node_id)}">{tds}</tr>'


def _score(p: Projection, node_id: str) -> str:
    score = p.scores.get(node_id)
    return score.describe() if score is not None else ""


def _changed_list(p: Projection, changed: set[str]) -> str:
    by_id = {s.node_id: s for s in p.sections}
    ordered = sorted(changed)
    rows = [
        _row(
            node_id,
            (
                node_id,
                p.labels.get(node_id, ""),
                by_id[node_id].rendered_state.name if node_id in by_id else "not shown",
                str(by_id[node_id].tokens) if node_id in by_id else "0",
            ),
        )
        for node_id in ordered[:LIST_ROWS]
    ]
    return _table(
        "changed", "Changed last turn", ("node", "label", "shown as", "tokens"), rows, len(ordered)
    )


def _degraded_list(p: Projection) -> str:
    by_id = {s.node_id: s for s in p.sections}
    degraded = list(p.degraded.items())
    rows = []
    for node_id, (requested, rendered) in degraded[:LIST_ROWS]:
        section = by_id[node_id]
        shown = rendered.name + (f" (-{section.cut_lines} lines)" if section.cut_lines else "")
        rows.append(
            _row(
                node_id,
                (
                    node_id,
                    p.labels.get(node_id, ""),
                    requested.name,
                    shown,
                    str(section.tokens),
                    p.reasons.get(node_id, ""),
                    _score(p, node_id),
                ),
            )
        )
    head = ("node", "label", "requested", "rendered", "tokens", "why", "score")
    return _table("degraded", "Degraded", head, rows, len(degraded))


def _omitted_list(p: Projection) -> str:
    omitted = p.omitted
    rows = [
        _row(
            node_id,
            (
                node_id,
                p.labels.get(node_id, ""),
                p.reasons.get(node_id, "budget"),
                _score(p, node_id),
            ),
        )
        for node_id in omitted[:LIST_ROWS]
    ]
    return _table("omitted", "Left out", ("node", "label", "why", "score"), rows, len(omitted))
