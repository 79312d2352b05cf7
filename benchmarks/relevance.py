"""``python -m benchmarks.relevance [--quick | --limit N] [--skip N] [--tasks heldout]``: does
the projection show what a real task needs? (issue 13, "Measure").

Each task of ``benchmarks/relevance_tasks.json`` (``--tasks heldout``:
``benchmarks/relevance_tasks_heldout.json``, repositories and languages the ranking was not
developed on) is a commit of a real repository: its
message is the task, the non-test source files it modified are the truth, and its
parent commit is the tree. For each task the parent commit is checked out (a clone
sharing the mirror's objects) into a temporary directory and three methods are run over
it at budgets of 4k, 8k, 16k and 32k cl100k tokens:

- **dagctx**: a :class:`~dagctx.session.Session` over the tree, scanned as ``dagctx
  render`` does (``scan_tree``), focused on the task text (``Session.focus``),
  ticked once, then projected at each budget. A truth file counts as *content* when its
  section was rendered at DETAILS or ALL (cut or not) and as *any form* when rendered at
  SUMMARY or more. Each projection's text is kept as a digest, so two runs can be
  compared task by task (the same code gives the same digests).
- **bm25**: code files ranked by BM25 against the task text, whole files in rank order
  (a file that does not fit is skipped) until the budget is full; counts are exact.
- **aider**: Aider's repo map (``benchmarks/relevance_aider.py`` in the aider venv), an
  outline of ranked files; a truth file counts as *any form* when the map lists it.

With ``--no-focus`` the same tasks measure the focus-free order (what ``dagctx watch .``
or an MCP client shows before a focus is set): dagctx is not focused, aider's map gets
no mentioned words or files (its PageRank over the whole repository), BM25 has no query
and does not run; the targets are not checked and the results go to
``benchmarks/relevance_results_unfocused.json``.

Per method and budget the table shows content recall, any-form recall (means over tasks
of the share of truth files found), mean and max tokens/budget, how many outputs were over
budget, and seconds per task (all four budgets); a second table shows content and any-form
recall per repository (with its language). dagctx is held to the issue's targets:
content recall ≥ 0.60 at 8k and ≥ 0.90 at 32k, any-form ≥ 0.95 at 8k, never over budget;
the exit status is 1 when one is missed. Results go to ``benchmarks/relevance_results.json``
(``relevance_results_heldout.json`` for the held-out set; ``_unfocused`` before ``.json``
with ``--no-focus``).

Repositories are read from bare mirrors under ``$DAGCTX_MIRRORS`` (``DIR/owner+name/repo``
or ``DIR/owner+name``) when set, else cloned from GitHub into a temporary directory for
the run. The aider venv is ``$DAGCTX_AIDER_PYTHON`` or ``.venv-aider/bin/python`` (``make
bench-relevance`` creates it); when it is missing or fails, aider's rows print ``n/a``
with the reason.

Imports dagctx's public session, scan and token modules; nothing imports this module.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks.relevance_tasks import SETS, SOURCE_EXTENSIONS
from dagctx.nodes.base import NodeState
from dagctx.session import Session
from dagctx.tokens import get_encoding
from dagctx.watch.scan import scan_tree

AIDER_WORKER = Path(__file__).with_name("relevance_aider.py")
DEFAULT_AIDER_PYTHON = Path(__file__).resolve().parent.parent / ".venv-aider" / "bin" / "python"
BUDGETS = (4000, 8000, 16000, 32000)
METHODS = ("dagctx", "bm25", "aider")
QUICK_TASKS = 20
# (metric, budget, minimum) the dagctx rows must reach; "never over budget" is checked apart.
TARGETS = (("content", 8000, 0.60), ("content", 32000, 0.90), ("any", 8000, 0.95))

_ENCODING = get_encoding("cl100k_base")


def count(text: str) -> int:
    """Exact cl100k tokens of ``text``."""
    return len(_ENCODING.encode(text, disallowed_special=()))


# -- repositories and trees ------------------------------------------------------------


def _git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", *args], check=True, cwd=cwd, capture_output=True)


def mirror(name: str, mirrors: Path | None, clones: Path) -> Path:
    """A git directory holding ``name``'s history: a local mirror, or a fresh bare clone."""
    if mirrors is not None:
        for where in (
            mirrors / name.replace("/", "+") / "repo",
            mirrors / name.replace("/", "+"),
            mirrors / name,
        ):
            if (where / "HEAD").is_file() or (where / ".git").exists():
                return where
        raise SystemExit(f"no mirror of {name} under {mirrors}")
    target = clones / name.replace("/", "+")
    if not target.exists():
        print(f"cloning {name} …", file=sys.stderr)
        _git("clone", "--bare", "--quiet", f"https://github.com/{name}.git", str(target))
    return target


@contextmanager
def checkout(repo: Path, commit: str, name: str) -> Iterator[Path]:
    """A git checkout of ``commit`` in a directory called ``name`` (removed on exit).

    A clone sharing ``repo``'s objects, so that the scan sees a git repository as a user's
    would: tracked files are kept even where a ``.gitignore`` pattern matches them. The
    directory's name is fixed, not the temporary directory's random one: the projection
    shows the root's name, and a name that tokenizes differently from run to run would
    move every allocation that is tight by a token or two.
    """
    with tempfile.TemporaryDirectory(prefix="relbench-") as tmp:
        tree = Path(tmp) / name
        _git("clone", "--quiet", "--shared", "--no-checkout", str(repo), str(tree))
        _git("-C", str(tree), "checkout", "--quiet", "--detach", commit)
        yield tree


def _tree_files(root: Path) -> list[str]:
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(root).parts
    )


# -- dagctx ---------------------------------------------------------------------------


def run_dagctx(root: Path, task: str, truth: list[str]) -> dict[str, Any]:
    """Scan, focus on ``task`` (none when it is empty), tick, and project ``root`` at every
    budget."""
    start = time.perf_counter()
    per_budget: dict[int, dict[str, Any]] = {}
    with Session(root, budget=BUDGETS[-1]) as session:
        scan_tree(session, ".")
        if task:
            session.focus(task)
        session.tick()
        for budget in BUDGETS:
            projection = session.project(budget)
            shown: dict[str, NodeState] = {}
            for section in projection.sections:
                if section.reference:
                    continue
                path = getattr(session.get(section.node_id), "path", None)
                if isinstance(path, str):
                    shown[path] = max(section.rendered_state, shown.get(path, NodeState.HIDDEN))
            per_budget[budget] = {
                "content": _share(truth, {p for p, s in shown.items() if s >= NodeState.DETAILS}),
                "any": _share(truth, {p for p, s in shown.items() if s >= NodeState.SUMMARY}),
                "tokens": projection.tokens,
                "states": {p: shown.get(p, NodeState.HIDDEN).name for p in truth},
                "digest": hashlib.blake2b(projection.text.encode(), digest_size=8).hexdigest(),
            }
    return {"budgets": per_budget, "seconds": time.perf_counter() - start}


def _share(truth: list[str], found: set[str]) -> float:
    return sum(path in found for path in truth) / len(truth)


# -- BM25 -----------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|[0-9]+")


def terms(text: str) -> list[str]:
    """Lower-cased words of ``text``, identifiers split at case changes and underscores."""
    return [w.lower() for w in _WORD.findall(text) if len(w) > 1]


def bm25_rank(query: str, docs: dict[str, str], k1: float = 1.2, b: float = 0.75) -> list[str]:
    """Names of ``docs`` by decreasing BM25 score against ``query`` (ties by name)."""
    bags = {name: Counter(terms(name + "\n" + text)) for name, text in docs.items()}
    lengths = {name: sum(bag.values()) for name, bag in bags.items()}
    average = sum(lengths.values()) / max(len(bags), 1)
    frequency: Counter[str] = Counter()
    for bag in bags.values():
        frequency.update(bag.keys())
    n = len(bags)
    query_terms = set(terms(query))

    def score(name: str) -> float:
        bag, norm = bags[name], k1 * (1 - b + b * lengths[name] / max(average, 1))
        total = 0.0
        for term in query_terms:
            tf = bag.get(term, 0)
            if tf:
                idf = math.log(1 + (n - frequency[term] + 0.5) / (frequency[term] + 0.5))
                total += idf * tf * (k1 + 1) / (tf + norm)
        return total

    return sorted(docs, key=lambda name: (-score(name), name))


def _block(path: str, text: str) -> str:
    return f"{path}\n```\n{text.rstrip()}\n```\n\n"


def run_bm25(root: Path, task: str, truth: list[str]) -> dict[str, Any]:
    """Whole code files in BM25 order until each budget is full."""
    start = time.perf_counter()
    docs: dict[str, str] = {}
    for path in _tree_files(root):
        if path.endswith(SOURCE_EXTENSIONS):
            try:
                docs[path] = (root / path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
    ranked = bm25_rank(task, docs)
    sizes = {path: count(_block(path, docs[path])) for path in ranked}
    per_budget: dict[int, dict[str, Any]] = {}
    for budget in BUDGETS:
        chosen: list[str] = []
        used = 0
        for path in ranked:
            if used + sizes[path] <= budget:
                chosen.append(path)
                used += sizes[path]
        # Exact count of the joined text (block counts are not quite additive).
        tokens = count("".join(_block(p, docs[p]) for p in chosen))
        while chosen and tokens > budget:
            chosen.pop()
            tokens = count("".join(_block(p, docs[p]) for p in chosen))
        found = set(chosen)
        per_budget[budget] = {
            "content": _share(truth, found),
            "any": _share(truth, found),
            "tokens": tokens,
        }
    return {"budgets": per_budget, "seconds": time.perf_counter() - start}


# -- Aider ----------------------------------------------------------------------------


class Aider:
    """Aider's repo map through the worker in the aider venv; ``reason`` says why not."""

    def __init__(self, python: Path) -> None:
        self.reason: str | None = None
        self.process: subprocess.Popen[str] | None = None
        if not python.is_file():
            self.reason = f"no aider venv at {python} (make bench-relevance creates it)"
            return
        self.process = subprocess.Popen(
            [str(python), str(AIDER_WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=tempfile.gettempdir(),
            env={**os.environ, "PYTHONHASHSEED": "0"},  # aider's ties follow set order
        )

    def run(self, root: Path, task: str, truth: list[str]) -> dict[str, Any] | None:
        """The map at every budget, scored; None when aider is not available."""
        if self.process is None or self.reason is not None:
            return None
        assert self.process.stdin is not None and self.process.stdout is not None
        request = {"root": str(root), "task": task, "budgets": list(BUDGETS)}
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            answer = json.loads(self.process.stdout.readline() or "null")
        except (OSError, ValueError) as exc:
            answer = {"error": f"worker died: {exc}"}
        if not answer or "error" in answer:
            self.reason = (answer or {}).get("error", "the worker exited")
            return None
        per_budget: dict[int, dict[str, Any]] = {}
        for budget in BUDGETS:
            text = answer["maps"][str(budget)]
            listed = {line.rstrip().removesuffix(":") for line in text.splitlines()}
            per_budget[budget] = {
                "content": None,
                "any": _share(truth, listed),
                "tokens": count(text),
            }
        return {"budgets": per_budget, "seconds": answer["seconds"]}

    def close(self) -> None:
        """Stop the worker."""
        if self.process is not None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait(timeout=30)


# -- the run --------------------------------------------------------------------------


def select(tasks: list[dict[str, Any]], limit: int | None, skip: int = 0) -> list[dict[str, Any]]:
    """The first ``limit`` tasks taken round-robin across repositories (all without one),
    after the first ``skip`` of that order: ``skip=80`` gives the tasks ``limit=80``
    leaves out. All tasks in their own order when neither is given."""
    if skip <= 0 and (limit is None or limit >= len(tasks)):
        return tasks
    queues: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        queues.setdefault(task["repository"], []).append(task)
    order: list[dict[str, Any]] = []
    while len(order) < len(tasks):
        for queue in queues.values():
            if queue:
                order.append(queue.pop(0))
    return order[skip:] if limit is None else order[skip : skip + limit]


def summarize(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """method → budget → {content, any, tokens_per_budget mean/max, over, seconds, tasks}.

    A method that did not run on every task (aider failing midway) gets ``{"tasks": 0}``:
    means over a subset would not compare with the others.
    """
    summary: dict[str, dict[str, dict[str, Any]]] = {}
    for method in METHODS:
        runs = [row[method] for row in rows if row.get(method)]
        summary[method] = {}
        for budget in BUDGETS:
            if not runs or len(runs) < len(rows):
                summary[method][str(budget)] = {"tasks": 0}
                continue
            cells = [run["budgets"][budget] for run in runs]
            ratios = [cell["tokens"] / budget for cell in cells]
            content = [cell["content"] for cell in cells if cell["content"] is not None]
            summary[method][str(budget)] = {
                "tasks": len(cells),
                "content": sum(content) / len(content) if content else None,
                "any": sum(cell["any"] for cell in cells) / len(cells),
                "tokens_per_budget": sum(ratios) / len(ratios),
                "max_tokens_per_budget": max(ratios),
                "over_budget": sum(cell["tokens"] > budget for cell in cells),
                "seconds_per_task": sum(run["seconds"] for run in runs) / len(runs),
            }
    return summary


def results_path(task_set: str, focused: bool) -> Path:
    """Where a run over ``task_set`` writes its results."""
    stem = "relevance_results" + ("" if task_set == "main" else f"_{task_set}")
    return Path(__file__).with_name(stem + ("" if focused else "_unfocused") + ".json")


def by_repository(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """repository → {language, tasks, method → budget → {content, any}} (means over its
    tasks; a method missing on any of them is left out, as in :func:`summarize`)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["repository"], []).append(row)
    table: dict[str, dict[str, Any]] = {}
    for name, group in groups.items():
        summary = summarize(group)
        table[name] = {
            "language": group[0].get("language", ""),
            "tasks": len(group),
            **{
                method: {
                    budget: {"content": cell["content"], "any": cell["any"]}
                    for budget, cell in summary[method].items()
                }
                for method in METHODS
                if summary[method][str(BUDGETS[0])].get("tasks")
            },
        }
    return table


def print_repositories(table: dict[str, dict[str, Any]], console: Console) -> None:
    """Per repository and budget: dagctx content / any form, BM25, Aider any form."""
    out = Table(title="per repository: dagctx content / any form, BM25, Aider (any form)")
    for column in ("repository", "language", "tasks", *(f"{b // 1000}k" for b in BUDGETS)):
        left = column in ("repository", "language")
        out.add_column(column, justify="left" if left else "right", no_wrap=True)
    for name, entry in sorted(table.items(), key=lambda item: (item[1]["language"], item[0])):
        cells = []
        for budget in BUDGETS:
            d = entry["dagctx"][str(budget)]
            text = f"{_fmt(d['content'])}/{_fmt(d['any'])}"
            for method, metric in (("bm25", "content"), ("aider", "any")):
                if method in entry:
                    text += f" {_fmt(entry[method][str(budget)][metric])}"
            cells.append(text)
        out.add_row(name, entry["language"], str(entry["tasks"]), *cells)
    console.print(out)


def misses(summary: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """The dagctx targets not reached, each with by how much."""
    missed = []
    for metric, budget, minimum in TARGETS:
        value = summary["dagctx"][str(budget)].get(metric)
        if value is None or value < minimum:
            missed.append(
                f"{metric} recall at {budget // 1000}k: {value:.2f} < {minimum:.2f}"
                f" (short by {minimum - value:.2f})"
            )
    over = sum(summary["dagctx"][str(b)].get("over_budget", 0) for b in BUDGETS)
    if over:
        missed.append(f"over budget in {over} projections")
    return missed


def _fmt(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def print_table(
    summary: dict[str, dict[str, dict[str, Any]]], aider_reason: str | None, console: Console
) -> None:
    """One row per method × budget."""
    table = Table(title="relevance: recall of the files each task changed")
    for column in (
        "method",
        "budget",
        "content",
        "any form",
        "tokens/budget",
        "max",
        "over",
        "s/task",
    ):
        table.add_column(column, justify="left" if column == "method" else "right")
    targets = {(metric, budget): minimum for metric, budget, minimum in TARGETS}
    for method in METHODS:
        for budget in BUDGETS:
            cell = summary[method][str(budget)]
            if not cell.get("tasks"):
                table.add_row(method, f"{budget // 1000}k", *["n/a"] * 6)
                continue
            marks = []
            for metric in ("content", "any"):
                text = _fmt(cell[metric])
                minimum = targets.get((metric, budget))
                if method == "dagctx" and minimum is not None:
                    text += f" (≥{minimum:.2f})"
                marks.append(text)
            table.add_row(
                method,
                f"{budget // 1000}k",
                *marks,
                _fmt(cell["tokens_per_budget"]),
                _fmt(cell["max_tokens_per_budget"], 3),
                f"{cell['over_budget']}/{cell['tasks']}",
                _fmt(cell["seconds_per_task"], 1),
            )
    console.print(table)
    if aider_reason:
        console.print(f"aider: n/a — {aider_reason}")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; return 1 when a dagctx target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"the first {QUICK_TASKS} tasks")
    parser.add_argument("--limit", type=int, help="the first N tasks (round-robin by repo)")
    parser.add_argument(
        "--skip", type=int, default=0, help="leave out the first N of that order (--skip 80)"
    )
    parser.add_argument(
        "--no-focus", action="store_true", help="the focus-free order: no task text given"
    )
    parser.add_argument(
        "--tasks", choices=sorted(SETS), default="main", help="which frozen task set"
    )
    args = parser.parse_args(argv)
    limit = args.limit if args.limit is not None else QUICK_TASKS if args.quick else None
    task_file = SETS[args.tasks][0]
    tasks = select(json.loads(task_file.read_text(encoding="utf-8")), limit, args.skip)
    mirrors_env = os.environ.get("DAGCTX_MIRRORS")
    mirrors = Path(mirrors_env) if mirrors_env else None
    aider_python = Path(os.environ.get("DAGCTX_AIDER_PYTHON") or DEFAULT_AIDER_PYTHON)
    console = Console(width=110)
    wall = time.perf_counter()
    rows: list[dict[str, Any]] = []
    aider = Aider(aider_python)
    with tempfile.TemporaryDirectory(prefix="relbench-clones-") as clones:
        repos: dict[str, Path] = {}
        try:
            for i, task in enumerate(tasks, 1):
                name = task["repository"]
                if name not in repos:
                    repos[name] = mirror(name, mirrors, Path(clones))
                row: dict[str, Any] = {
                    k: task[k] for k in ("repository", "language", "commit", "truth")
                }
                with checkout(repos[name], task["parent"], name.split("/")[-1]) as root:
                    text = "" if args.no_focus else task["task"]
                    row["dagctx"] = run_dagctx(root, text, task["truth"])
                    if text:
                        row["bm25"] = run_bm25(root, text, task["truth"])
                    # Last: aider writes its tags cache into the tree.
                    row["aider"] = aider.run(root, text, task["truth"])
                rows.append(row)
                d = row["dagctx"]["budgets"][8000]
                print(
                    f"[{i}/{len(tasks)}] {name} {task['commit'][:8]}"
                    f" dagctx@8k content={d['content']:.2f} any={d['any']:.2f}"
                    f" ({row['dagctx']['seconds']:.1f} s)",
                    file=sys.stderr,
                )
        finally:
            aider.close()
    seconds = time.perf_counter() - wall
    summary = summarize(rows)
    repositories = by_repository(rows)
    missed = [] if args.no_focus else misses(summary)
    print_table(summary, aider.reason, console)
    print_repositories(repositories, Console(width=150))
    console.print(
        f"{len(rows)} tasks from {len({r['repository'] for r in rows})} repositories,"
        f" {'no focus' if args.no_focus else 'focused on each task'},"
        f" wall time {seconds:.0f} s"
    )
    results_path(args.tasks, not args.no_focus).write_text(
        json.dumps(
            {
                "tasks": len(rows),
                "focus": not args.no_focus,
                "wall_seconds": seconds,
                "aider": aider.reason or "ok",
                "summary": summary,
                "repositories": repositories,
                "missed": missed,
                "rows": rows,
            },
            indent=1,
            default=str,
        )
        + "\n",
        encoding="utf-8",
    )
    for line in missed:
        console.print(f"[red]target missed[/red]: dagctx {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
