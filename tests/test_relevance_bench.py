"""The relevance benchmark's own parts: task extraction from a real git history, the frozen
task list, the BM25 baseline, task selection and the target check."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from benchmarks.relevance import (
    BUDGETS,
    TARGETS,
    bm25_rank,
    by_repository,
    checkout,
    misses,
    results_path,
    run_bm25,
    run_dagctx,
    select,
    summarize,
    terms,
)
from benchmarks.relevance_tasks import (
    HELDOUT_TASKS,
    MIN_SOURCE_FILES,
    REPOSITORIES,
    TASKS,
    candidates,
    is_source,
    pick,
)


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("flask/app.py", True),
        ("command.go", True),
        ("lib/router/index.js", True),
        ("tests/test_app.py", False),
        ("flask/testsuite/helpers.py", False),
        ("command_test.go", False),
        ("lib/router.test.js", False),
        ("docs/conf.py", False),
        ("vendor/x/y.go", False),
        ("CHANGES.rst", False),
        ("package-lock.json", False),
        ("setup.py", False),
        ("gson/src/main/java/com/google/gson/Gson.java", True),
        ("gson/src/test/java/com/google/gson/GsonTest.java", False),
        ("extras/src/main/java/x/FooTest.java", False),
        ("test-jpms/src/main/java/x/Module.java", False),
        ("crates/ignore/src/walk.rs", True),
        ("crates/searcher/src/tests.rs", False),
        ("benches/bench.rs", False),
        ("packages/zod/src/v4/core/schemas.ts", True),
        ("src/router/node.mts", True),
        ("src/context.spec.ts", False),
        ("src/types.test-d.ts", False),
    ],
)
def test_is_source(path: str, source: bool) -> None:
    assert is_source(path) is source


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def test_candidates_from_a_real_history(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "a@b.c")
    _git(repo, "config", "user.name", "a")
    base = {f"pkg/m{i}.py": f"x = {i}\n" for i in range(MIN_SOURCE_FILES)}
    first = _commit(repo, base, "Add the package modules")
    good = _commit(
        repo,
        {"pkg/m1.py": "x = 10\n", "tests/test_m1.py": "assert 1\n", "CHANGES.rst": "x\n"},
        "Handle redirects in the session\n\nThe body explains why.",
    )
    _commit(repo, {"pkg/m2.py": "x = 20\n"}, "Fix typo in the session module")
    _commit(repo, {"pkg/new.py": "y = 1\n", "pkg/m3.py": "x = 30\n"}, "Add a brand new module")
    _commit(repo, {"pkg/m4.py": "x = 40\n"}, "Release 1.2.3 of everything")
    found = candidates(repo)
    assert [c["commit"] for c in found] == [good]
    assert found[0]["parent"] == first
    assert found[0]["truth"] == ["pkg/m1.py"]
    assert found[0]["task"] == "Handle redirects in the session\n\nThe body explains why."


def test_two_checkouts_of_a_task_give_the_same_projections(tmp_path: Path) -> None:
    """Each checkout is made in a new temporary directory, but the tree's root has the
    same name every time: the projection shows that name, and a random one changed the
    tokens left for the rest by a few, which moved allocations that were tight by a few."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "a@b.c")
    _git(repo, "config", "user.name", "a")
    files = {
        f"pkg/m{i}.py": "".join(
            f"def session_{i}_{k}(x):\n    return x + {k}\n\n" for k in range(60)
        )
        for i in range(12)
    }
    commit = _commit(repo, files, "Add the package modules")
    runs = []
    for _ in range(2):
        with checkout(repo, commit, "project") as root:
            assert root.name == "project"
            runs.append(run_dagctx(root, "resolve the session in m3", ["pkg/m3.py"])["budgets"])
    assert runs[0] == runs[1]
    assert runs[0][4000]["tokens"] > 3000  # the budget binds: a token more would show


def test_an_empty_task_leaves_the_session_unfocused(tmp_path: Path) -> None:
    """``--no-focus`` runs each method with no task text: dagctx is not focused, so its
    projection is the focus-free order's, the same whatever the task was."""
    (tmp_path / "pkg").mkdir()
    for i in range(12):
        body = "".join(f"def session_{i}_{k}(x):\n    return x + {k}\n\n" for k in range(60))
        (tmp_path / "pkg" / f"m{i}.py").write_text(body)
    unfocused = run_dagctx(tmp_path, "", ["pkg/m3.py"])["budgets"]
    focused = run_dagctx(tmp_path, "resolve the session in m3", ["pkg/m3.py"])["budgets"]
    assert unfocused[4000]["digest"] != focused[4000]["digest"]
    assert focused[4000]["content"] == 1.0 > unfocused[4000]["content"]


def test_pick_is_evenly_spaced_and_deterministic() -> None:
    items = [{"n": i} for i in range(10)]
    assert [x["n"] for x in pick(items, 4)] == [0, 2, 5, 7]
    assert pick(items, 20) == items


def test_frozen_task_list_meets_the_issue() -> None:
    tasks = json.loads(TASKS.read_text(encoding="utf-8"))
    assert len(tasks) >= 150
    repositories = {t["repository"] for t in tasks}
    assert len(repositories) >= 4
    assert {t["language"] for t in tasks} - {"python"}
    for task in tasks:
        assert set(task) >= {"repository", "commit", "parent", "task", "truth"}
        assert 1 <= len(task["truth"]) <= 5 and all(map(is_source, task["truth"]))


def test_heldout_task_list_is_other_repositories_and_languages() -> None:
    """The held-out set checks that the ranking tuned on the main set generalizes: none of
    its repositories is in the main set, and it holds languages the main set lacks."""
    tasks = json.loads(HELDOUT_TASKS.read_text(encoding="utf-8"))
    main = json.loads(TASKS.read_text(encoding="utf-8"))
    assert not {t["repository"] for t in tasks} & set(REPOSITORIES)
    assert {"rust", "typescript", "java"} <= {t["language"] for t in tasks}
    assert {"rust", "typescript", "java"}.isdisjoint({t["language"] for t in main})
    for task in tasks:
        assert set(task) >= {"repository", "language", "commit", "parent", "task", "truth"}
        assert 1 <= len(task["truth"]) <= 5 and all(map(is_source, task["truth"]))


def test_results_path_per_set_and_focus() -> None:
    assert results_path("main", True).name == "relevance_results.json"
    assert results_path("main", False).name == "relevance_results_unfocused.json"
    assert results_path("heldout", True).name == "relevance_results_heldout.json"
    assert results_path("heldout", False).name == "relevance_results_heldout_unfocused.json"


def test_by_repository_means_per_repository() -> None:
    def run(content: float) -> dict[str, object]:
        budgets = {b: {"content": content, "any": 1.0, "tokens": b // 2} for b in BUDGETS}
        return {"budgets": budgets, "seconds": 1.0}

    rows = [
        {"repository": "a/x", "language": "go", "dagctx": run(1.0), "bm25": run(0.0)},
        {"repository": "a/x", "language": "go", "dagctx": run(0.5), "bm25": run(0.0)},
        {"repository": "b/y", "language": "java", "dagctx": run(0.0), "bm25": run(1.0)},
    ]
    table = by_repository(rows)
    assert table["a/x"]["language"] == "go" and table["a/x"]["tasks"] == 2
    assert table["a/x"]["dagctx"]["8000"] == {"content": 0.75, "any": 1.0}
    assert table["b/y"]["bm25"]["4000"]["content"] == 1.0
    assert "aider" not in table["a/x"]  # no aider run: left out, not averaged as zero


def test_terms_split_identifiers() -> None:
    assert terms("resolveRedirects in get_session_cookie HTTPAdapter") == [
        "resolve",
        "redirects",
        "in",
        "get",
        "session",
        "cookie",
        "http",
        "adapter",
    ]


def test_bm25_ranks_the_matching_file_first() -> None:
    docs = {
        "a.py": "def render(): pass\n" * 5,
        "b.py": "def resolve_redirects(session): follow redirect\n",
        "c.py": "import os\n",
    }
    assert bm25_rank("follow redirects in the session", docs)[0] == "b.py"


def test_bm25_whole_files_never_over_budget(tmp_path: Path) -> None:
    for i in range(30):
        name = "compute_checksum" if i == 3 else f"helper_{i}"
        (tmp_path / f"m{i}.py").write_text(f"def {name}():\n    return {i}\n" * (20 * i + 1))
    result = run_bm25(tmp_path, "compute the checksum", ["m3.py"])
    for budget, cell in result["budgets"].items():
        assert 0 < cell["tokens"] <= budget
    assert result["budgets"][32000]["content"] == 1.0


def test_select_round_robin_across_repositories() -> None:
    tasks = [{"repository": r, "n": i} for r in ("a", "b") for i in range(3)]
    assert [(t["repository"], t["n"]) for t in select(tasks, 3)] == [
        ("a", 0),
        ("b", 0),
        ("a", 1),
    ]
    assert select(tasks, None) == tasks


def test_skip_gives_the_tasks_a_limit_leaves_out() -> None:
    tasks = [{"repository": r, "n": i} for r in ("a", "b", "c") for i in range(3 if r < "c" else 1)]
    first, rest = select(tasks, 4), select(tasks, None, skip=4)
    assert [(t["repository"], t["n"]) for t in rest] == [("b", 1), ("a", 2), ("b", 2)]
    assert sorted(map(str, first + rest)) == sorted(map(str, tasks))
    assert select(tasks, 2, skip=4) == rest[:2]


def test_misses_names_each_missed_target() -> None:
    cell = {"content": 1.0, "any": 1.0, "over_budget": 0}
    summary = {"dagctx": {str(b): dict(cell) for b in (4000, 8000, 16000, 32000)}}
    assert misses(summary) == []
    summary["dagctx"]["8000"]["content"] = 0.5
    summary["dagctx"]["4000"]["over_budget"] = 2
    assert misses(summary) == [
        "content recall at 8k: 0.50 < 0.60 (short by 0.10)",
        "over budget in 2 projections",
    ]
    assert len(TARGETS) == 3


def test_summary_drops_a_method_that_missed_tasks() -> None:
    cell = {"content": 1.0, "any": 1.0, "tokens": 10}
    run = {"budgets": dict.fromkeys((4000, 8000, 16000, 32000), cell), "seconds": 1.0}
    rows = [{"dagctx": run, "bm25": run, "aider": run}, {"dagctx": run, "bm25": run}]
    summary = summarize(rows)
    assert summary["dagctx"]["8000"]["tasks"] == 2
    assert summary["dagctx"]["8000"]["tokens_per_budget"] == 10 / 8000
    assert summary["aider"]["8000"] == {"tasks": 0}
