"""``python -m benchmarks [--quick]``: run the SPEC §11 suite, print one table, write
``benchmarks/results.json``, exit 1 if a target is missed.

``--quick`` runs fewer repeats and smaller sweeps (1k → 10k nodes instead of → 100k) so
that the whole run stays under a minute, plus the prompt cache simulation
(:mod:`benchmarks.cache_sim`) over 60 turns instead of 200 (a minute or two of its own).
The README-tour rows (running text nodes, no ``file_changed``) come from
``benchmarks.tour``; the watch scenarios from ``benchmarks.bench_watch`` when that module
is present.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks.cache_sim import cache_sim
from benchmarks.cold_render import cold_render
from benchmarks.resume import resume
from benchmarks.scenarios import SCENARIOS, Row, bench, row
from benchmarks.startup import startup
from benchmarks.tour import tour

RESULTS = Path(__file__).with_name("results.json")


def _watch_rows(quick: bool) -> list[Row]:
    try:
        module = importlib.import_module("benchmarks.bench_watch")
    except ImportError:
        return []
    rows: list[Row] = []
    for r in module.run(quick):
        target = r.get("target")
        rows.append({**r, "target_text": f"≤ {target:g} {r.get('unit', '')}".rstrip()})
    return rows


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return ""
    if unit == "s" and value < 1:
        value, unit = value * 1000, "ms"
    if unit == "ms" and value >= 1000:
        value, unit = value / 1000, "s"
    digits = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2
    return f"{value:,.{digits}f} {unit}".rstrip()


def _vs(r: Row) -> str:
    measured, baseline = r["measured"], r.get("baseline")
    if not baseline or not measured:
        return ""
    if baseline >= measured:
        return f"{baseline / measured:,.0f}× faster"
    return f"{measured / baseline:.2f}× baseline"


def render(rows: list[Row], console: Console, title: str) -> None:
    table = Table(title=title, title_justify="left")
    for column in ("scenario", "measured", "baseline", "ratio", "target", ""):
        table.add_column(column, justify="left" if column in ("scenario", "target") else "right")
    for r in rows:
        verdict = {True: "[green]pass[/]", False: "[red]FAIL[/]", None: ""}[r["passed"]]
        table.add_row(
            r["scenario"],
            _fmt(r["measured"], r["unit"]),
            _fmt(r.get("baseline"), r["unit"]),
            _vs(r),
            r.get("target_text", ""),
            verdict,
        )
    console.print(table)


def run(quick: bool, console: Console) -> list[Row]:
    rows: list[Row] = []
    with bench(quick) as b:
        for scenario in (*SCENARIOS, tour, cold_render, resume, startup, cache_sim):
            started = time.perf_counter()
            console.log(f"{scenario.__name__} …")
            try:
                rows += scenario(b)
            except Exception:  # a crashed scenario is a missed target, not a crashed run
                console.print(traceback.format_exc())
                rows.append(row(f"{scenario.__name__} (crashed)", 0.0, "", passed=False))
            console.log(f"{scenario.__name__} done in {time.perf_counter() - started:.1f} s")
    console.log("watch …")
    try:
        rows += _watch_rows(quick)
    except Exception:
        console.print(traceback.format_exc())
        rows.append(row("watch (crashed)", 0.0, "", passed=False))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="reduced run, under a minute")
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    started = time.perf_counter()
    rows = run(args.quick, console)
    elapsed = time.perf_counter() - started
    title = (
        f"dagctx benchmarks ({'quick' if args.quick else 'full'}, {elapsed:.0f} s,"
        f" Python {platform.python_version()}, {platform.machine()})"
    )
    out = Console()
    if not out.is_terminal:  # a log or a pipe: wide enough for one line per row
        out = Console(width=170)
    render(rows, out, title)
    RESULTS.write_text(
        json.dumps(
            {"quick": args.quick, "seconds": round(elapsed, 1), "rows": rows},
            indent=2,
            ensure_ascii=False,
            default=_json_default,
        )
        + "\n"
    )
    missed = [r["scenario"] for r in rows if r["passed"] is False]
    if missed:
        print(f"{len(missed)} target(s) missed: {'; '.join(missed)}", file=sys.stderr)
        return 1
    return 0


def _json_default(value: Any) -> Any:
    return str(value)


if __name__ == "__main__":
    sys.exit(main())
