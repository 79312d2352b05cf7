"""Deterministic benchmark workloads (fixed seeds; written to temporary directories).

- :func:`write_repo`: a source tree of ``dirs^depth`` leaf directories holding
  ``files_per_dir`` files of about ``file_bytes`` bytes of Python-like code each. With the
  defaults, ``depth=3`` is **repo-10k** (10,000 files, 1,111 directories: 11,111 nodes);
  ``depth=2`` and ``depth=4`` are the 1k and 100k points of the size sweep.
- :func:`build_graph`: **graph-100k**, 100,000 nodes built directly in a
  :class:`~dagctx.graph.ContextGraph`: a deep tree (every node below the roots has a tree
  parent one level up) plus shared children (about 5 % of the nodes get a second parent
  on the level above, which makes diamonds), with lightweight :class:`Note` leaves.

Nothing here is committed data: every run regenerates the same bytes from the seeds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from dagctx.graph import ContextGraph
from dagctx.nodes.base import Node, NodeState
from dagctx.nodes.group import GroupNode

_WORDS = [
    "value",
    "data",
    "items",
    "result",
    "index",
    "count",
    "name",
    "key",
    "path",
    "node",
    "graph",
    "state",
    "cache",
    "token",
    "budget",
    "text",
    "group",
    "child",
    "parent",
    "order",
    "level",
    "depth",
    "change",
    "version",
    "trace",
    "entry",
    "section",
    "render",
    "summary",
    "detail",
    "buffer",
    "stream",
    "record",
    "config",
    "option",
    "handler",
    "client",
    "server",
]


@dataclass(frozen=True, slots=True)
class Repo:
    """A generated source tree: its root and its files (root-relative posix paths)."""

    root: Path
    files: list[str]
    dirs: int

    @property
    def nodes(self) -> int:
        """Nodes a scan of the tree creates (one per directory, root included, and file)."""
        return self.dirs + len(self.files)


def _line_pool(rng: random.Random, size: int = 4000) -> list[str]:
    """Lines of plausible Python: definitions, assignments, calls, comments."""
    pool = []
    for _ in range(size):
        a, b, c = (rng.choice(_WORDS) for _ in range(3))
        kind = rng.random()
        if kind < 0.08:
            pool.append(f"def {a}_{b}({c}, {rng.choice(_WORDS)}=None):")
        elif kind < 0.11:
            pool.append(f"class {a.title()}{b.title()}:")
        elif kind < 0.25:
            pool.append(f"    # {a} {b} {c} {rng.choice(_WORDS)}")
        elif kind < 0.35:
            pool.append(f"    return {a}.{b}({c})")
        elif kind < 0.45:
            pool.append("")
        else:
            indent = "    " * rng.randint(1, 3)
            pool.append(f"{indent}{a}_{b} = {c}[{rng.randint(0, 99)}] + {rng.random():.3f}")
    return pool


def source_file(rng: random.Random, pool: list[str], index: int, size: int) -> str:
    """One file of about ``size`` bytes; the first lines make it unique."""
    lines = [f'"""Module {index}: generated for the dagctx benchmarks."""', ""]
    lines.append(f"def module_{index}_entry(arg):")
    lines.append(f"    return arg + {index}")
    total = sum(len(x) + 1 for x in lines)
    while total < size:
        line = pool[rng.randrange(len(pool))]
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines) + "\n"


def write_repo(
    root: Path,
    *,
    depth: int = 3,
    dirs: int = 10,
    files_per_dir: int = 10,
    file_bytes: int = 2048,
    seed: int = 10_000,
) -> Repo:
    """Write the tree under ``root`` (created) and return its description."""
    rng = random.Random(seed)
    pool = _line_pool(rng)
    root.mkdir(parents=True, exist_ok=True)
    files: list[str] = []
    n_dirs = 1
    frontier = [""]
    for _ in range(depth):
        nxt = []
        for parent in frontier:
            for d in range(dirs):
                rel = f"{parent}/pkg_{d}" if parent else f"pkg_{d}"
                (root / rel).mkdir()
                nxt.append(rel)
        n_dirs += len(nxt)
        frontier = nxt
    for directory in frontier:
        for f in range(files_per_dir):
            rel = f"{directory}/mod_{f}.py"
            size = int(file_bytes * rng.uniform(0.75, 1.25))
            (root / rel).write_text(source_file(rng, pool, len(files), size))
            files.append(rel)
    return Repo(root, files, n_dirs)


def rewrite(repo: Repo, rel: str, turn: int) -> None:
    """Change one file of ``repo`` (same size class, new content) for turn ``turn``."""
    path = repo.root / rel
    text = path.read_text()
    path.write_text(f"# edited in turn {turn}\n{text}")


class Note(Node):
    """A lightweight leaf for graph-100k: one short line of text."""

    type_name: ClassVar[str] = "bench_note"
    __slots__ = ("text",)

    def __init__(self, text: str = "", **fields: Any) -> None:
        super().__init__(**fields)
        self.text = text

    def render_state(self, state: NodeState) -> str:
        if state == NodeState.COLLAPSED:
            return f"- note #{self.id}"
        return f"- note #{self.id}: {self.text}"

    def data_dict(self) -> dict[str, Any]:
        return {"text": self.text}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Note:
        return cls(data.get("text", ""))


@dataclass(slots=True)
class Graph100k:
    """graph-100k: the graph, its nodes by creation order, and each node's depth."""

    graph: ContextGraph
    nodes: list[Node]
    depth: list[int]

    def leaf_at_depth(self, depth: int) -> Node:
        """The first leaf (a node without children) at ``depth``."""
        for node, d in zip(self.nodes, self.depth, strict=True):
            if d == depth and not self.graph.child_ids(node.id):
                return node
        raise LookupError(f"no leaf at depth {depth}")


def build_graph(
    n: int = 100_000, *, roots: int = 4, shared: float = 0.05, seed: int = 100
) -> Graph100k:
    """Build graph-100k: a random deep tree plus shared children (diamonds).

    Node ``i`` (after the roots) hangs under a node of the level above chosen so that
    levels grow by a factor of about 2.2 (depth ~13 at 100,000 nodes); internal nodes are
    :class:`GroupNode` s at DETAILS, leaves :class:`Note` s.
    """
    rng = random.Random(seed)
    graph = ContextGraph()
    # Decide the shape first (parent of each node), then create groups vs notes.
    parent = [-1] * n
    depth = [0] * n
    levels: list[list[int]] = [list(range(roots))]
    i = roots
    while i < n:
        above = levels[-1]
        size = min(n - i, max(1, int(len(above) * 2.2)))
        level = list(range(i, i + size))
        for j in level:
            parent[j] = above[rng.randrange(len(above))]
            depth[j] = len(levels)
        levels.append(level)
        i += size
    has_children = [False] * n
    for j in range(roots, n):
        has_children[parent[j]] = True
    nodes: list[Node] = []
    with graph.batch():
        for j in range(n):
            if has_children[j]:
                node: Node = GroupNode(f"group {j}", state=NodeState.DETAILS)
            else:
                node = Note(f"item {j} {_WORDS[j % len(_WORDS)]} {_WORDS[(j * 7) % len(_WORDS)]}")
            graph.add(node)
            nodes.append(node)
        for j in range(roots, n):
            graph.link(nodes[parent[j]], nodes[j])
        for lv in range(1, len(levels)):
            above = levels[lv - 1]
            for j in levels[lv]:
                if rng.random() < shared:
                    other = above[rng.randrange(len(above))]
                    if other != parent[j] and has_children[other]:
                        graph.link(nodes[other], nodes[j])
    return Graph100k(graph, nodes, depth)
