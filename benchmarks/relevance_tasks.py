"""Extract the relevance benchmark's tasks from git histories and freeze them as JSON.

``python -m benchmarks.relevance_tasks --mirrors DIR [--per-repo N] [--set heldout]`` reads
the bare git mirrors ``DIR/<owner>+<name>/repo`` of a set's repositories (:data:`SETS`) and
writes its file: ``main`` (:data:`REPOSITORIES`, the set the ranking was developed on) to
``benchmarks/relevance_tasks.json``, ``heldout`` (:data:`HELDOUT_REPOSITORIES`, other
repositories and languages, to check that what was tuned on the first generalizes) to
``benchmarks/relevance_tasks_heldout.json``. A task is one non-merge commit: its message
(subject and body) is the task text, its parent is the tree, and the truth is the source
files it modified. A commit qualifies when it modifies 1–5 source files (by extension,
outside tests, docs, examples, vendored code and CI) and adds, deletes or renames none
(a file the parent tree does not hold cannot be found there), and its subject reads like
a task (not a release, version bump, merge, revert or dependency bump, nor about wording,
style or tooling), and the parent holds at least :data:`MIN_SOURCE_FILES` source files (a
tree where finding the file is a search). Candidates are
taken from the default branch's first-parent history, oldest first, and ``N`` of them
are picked evenly spaced: the same mirrors give the same file.

This module reads git only (``git`` on the path); it does not import dagctx.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path
from typing import Any

TASKS = Path(__file__).with_name("relevance_tasks.json")
HELDOUT_TASKS = Path(__file__).with_name("relevance_tasks_heldout.json")

# owner/name → language (for the report only).
REPOSITORIES = {
    "pallets/flask": "python",
    "psf/requests": "python",
    "spf13/cobra": "go",
    "expressjs/express": "javascript",
}
HELDOUT_REPOSITORIES = {
    "encode/httpx": "python",
    "gin-gonic/gin": "go",
    "BurntSushi/ripgrep": "rust",
    "colinhacks/zod": "typescript",
    "honojs/hono": "typescript",
    "google/gson": "java",
}
# set name → (task file, repositories).
SETS = {"main": (TASKS, REPOSITORIES), "heldout": (HELDOUT_TASKS, HELDOUT_REPOSITORIES)}

SOURCE_EXTENSIONS = (
    ".py",
    ".go",
    ".js",
    ".mjs",
    ".cjs",
    ".ts",
    ".mts",
    ".cts",
    ".tsx",
    ".rs",
    ".java",
)
_SKIP_DIRS = {
    "test",
    "tests",
    "testing",
    "testsuite",
    "spec",
    "__tests__",
    "docs",
    "doc",
    "examples",
    "example",
    "benchmarks",
    "bench",
    "benches",
    "vendor",
    "node_modules",
    "third_party",
    "artwork",
    "scripts",
    ".github",
}
_TEST_NAME = re.compile(
    r"(^test_.*\.py$|_test\.(py|go)$|\.(test|spec|test-d)\.[mc]?[jt]sx?$|^conftest\.py$"
    r"|^tests?\.rs$|(Test|Tests|IT)\.java$)"
)
# Directories of test projects (gson's test-jpms/, test-shrinker/).
_TEST_DIR = re.compile(r"^tests?[-_]", re.IGNORECASE)
_SKIP_NAMES = {"setup.py", "noxfile.py", "gulpfile.js", "Gruntfile.js"}
_NOT_A_TASK = re.compile(
    r"^(merge|revert|release|bump|version|prepare|update (changelog|history|version)"
    r"|v?\d+\.\d+|build\(deps|chore\(deps|deps(-dev)?:|\[?ci\]?[: ])",
    re.IGNORECASE,
)
# Subjects of changes that no file search could aim at (wording, style, tooling).
_NOT_ABOUT_CODE = re.compile(
    r"typo|spelling|misspel|docstring|documentation|whitespace|copyright|lint|format"
    r"|version bump|pep ?8",
    re.IGNORECASE,
)
MIN_SOURCE_FILES = 20
_SEP = "\x1e"


def is_source(path: str) -> bool:
    """Whether ``path`` is a non-test, non-doc, non-vendored source file."""
    parts = path.split("/")
    name = parts[-1]
    if not name.endswith(SOURCE_EXTENSIONS) or name in _SKIP_NAMES or name.startswith("."):
        return False
    if _TEST_NAME.search(name):
        return False
    return not any(part.lower() in _SKIP_DIRS or _TEST_DIR.match(part) for part in parts[:-1])


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def _is_task(subject: str) -> bool:
    return (
        len(subject) >= 15
        and len(subject.split()) >= 3
        and not _NOT_A_TASK.match(subject)
        and not _NOT_ABOUT_CODE.search(subject)
    )


def source_files(repo: Path, tree: str) -> int:
    """How many source files (:func:`is_source`) ``tree`` holds."""
    return sum(map(is_source, _git(repo, "ls-tree", "-r", "--name-only", tree).splitlines()))


def candidates(repo: Path) -> list[dict[str, Any]]:
    """Qualifying commits of ``repo``'s HEAD first-parent history, oldest first."""
    log = _git(
        repo,
        "log",
        "--first-parent",
        "--no-merges",
        "--reverse",
        "--no-renames",
        f"--format={_SEP}%H %P%n%B{_SEP}",
        "--name-status",
        "HEAD",
    )
    found: list[dict[str, Any]] = []
    chunks = log.split(_SEP)
    # chunks: "", header+message, file list, header+message, file list, ...
    for i in range(1, len(chunks) - 1, 2):
        head, _, message = chunks[i].partition("\n")
        shas = head.split()
        if len(shas) != 2:
            continue
        commit, parent = shas
        message = message.strip()
        subject = message.splitlines()[0] if message else ""
        if not _is_task(subject):
            continue
        changes = [line.split("\t") for line in chunks[i + 1].strip().splitlines() if line]
        source = [(c[0], c[-1]) for c in changes if is_source(c[-1])]
        if not 1 <= len(source) <= 5 or any(status != "M" for status, _ in source):
            continue
        if source_files(repo, parent) < MIN_SOURCE_FILES:
            continue
        found.append(
            {
                "commit": commit,
                "parent": parent,
                "task": message,
                "truth": sorted(path for _, path in source),
            }
        )
    return found


def pick(items: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """``n`` items of ``items`` evenly spaced (all of them when there are at most ``n``)."""
    if len(items) <= n:
        return list(items)
    return [items[(k * len(items)) // n] for k in range(n)]


def main(argv: list[str] | None = None) -> int:
    """Write the task file of the set named on the command line (:data:`SETS`) from the
    mirrors named there."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, required=True, help="DIR/<owner>+<name>/repo")
    parser.add_argument("--per-repo", type=int, default=40)
    parser.add_argument("--set", choices=sorted(SETS), default="main", help="which task set")
    args = parser.parse_args(argv)
    path, repositories = SETS[args.set]
    tasks: list[dict[str, Any]] = []
    for name, language in repositories.items():
        repo = args.mirrors / name.replace("/", "+") / "repo"
        found = candidates(repo)
        chosen = pick(found, args.per_repo)
        print(f"{name}: {len(found)} candidates, {len(chosen)} tasks")
        for task in chosen:
            tasks.append({"repository": name, "language": language, **task})
    path.write_text(json.dumps(tasks, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(tasks)} tasks to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
