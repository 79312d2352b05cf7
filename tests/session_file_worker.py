"""Helpers for the session save/load tests, also run as a subprocess (not a test module).

``describe(session)`` is a JSON-able picture of everything ``Session.save`` keeps, so two
sessions compare with ``==`` and a picture can cross a process boundary.

Run as ``python session_file_worker.py describe FILE`` to load a saved session in a fresh
interpreter and print its picture, or ``python session_file_worker.py crash FILE ROOT`` for
the crash test: for each ``go TRIAL`` line on stdin the harness (dagctx imported and the
encoding loaded once, so each trial is quick) forks a writer and prints
``child PID``; the writer builds a session and saves it after each change, printing
``saved TRIAL SEQ`` (one unbuffered write) once ``save`` has returned, until the test kills
it with SIGKILL; the harness reaps it and prints ``done TRIAL``.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import astuple
from pathlib import Path
from typing import Any

from dagctx.graph import StructureCheckpoint
from dagctx.session import Session
from dagctx.tokens import DEFAULT_ENCODING, get_encoding

CRASH_FILES = 8  # files under the crash-test root: f0.py .. f7.py
CRASH_BASE_NODES = 2  # nodes a crash writer's session has before its loop
MAX_SAVES = 100_000  # a writer the test forgot to kill still ends


def describe(session: Session, tight_budget: int = 120) -> dict[str, Any]:
    """Everything a saved session should restore, as plain JSON data."""
    graph = session.graph
    context = session.context
    picture = {
        "root": str(session.root),
        "budget": session.budget,
        "encoding": session.encoding,
        "turn": session.turn,
        "trace_mark": session._trace_mark.position,
        "nodes": [{**n.to_dict(), "seq": n.seq, "last_run": n.last_run} for n in graph],
        "children": {n.id: [c.id for c in n.children] for n in graph},
        "parents": {n.id: [p.id for p in n.parents] for n in graph},
        "roots": [n.id for n in graph.roots()],
        "checkpoints": {
            name: describe_checkpoint(graph.get_checkpoint(name)) for name in graph.checkpoints()
        },
        "traces": [list(astuple(trace)) for trace in graph.traces],
        "context": {
            "task_id": context.task_id,
            "config": context.config.model_dump(mode="json"),
            "state": context.state.to_dict(),
            "token_usage": context.token_usage,
            "checkpoints": [
                context.checkpoints.get(v).to_dict() for v in context.checkpoints.list_versions()
            ],
        },
        "projection": session.project().text,
        "tight_projection": session.project(budget=tight_budget).text,
    }
    return json.loads(json.dumps(picture))  # tuples → lists, as a subprocess would see them


def timeless(picture: dict[str, Any]) -> dict[str, Any]:
    """``picture`` without the clock times of changes (two sessions changed by the same calls
    a moment apart differ only there)."""

    def node(data: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in data.items() if k not in ("updated_at", "last_run")}

    checkpoints = {
        name: {**cp, "nodes": {nid: node(n) for nid, n in cp["nodes"].items()}}
        for name, cp in picture["checkpoints"].items()
    }
    return {
        **picture,
        "nodes": [node(n) for n in picture["nodes"]],
        "traces": [trace[:4] + trace[5:] for trace in picture["traces"]],
        "checkpoints": checkpoints,
    }


def describe_checkpoint(saved: StructureCheckpoint) -> dict[str, Any]:
    return {
        "children": {p: list(kids) for p, kids in saved.children.items()},
        "roots": list(saved.roots),
        "states": {n: s.name for n, s in saved.states.items()},
        "nodes": {n: node.to_dict() for n, node in saved.nodes.items()},
    }


def write_crash_root(root: Path) -> None:
    """The files a crash writer's session shows."""
    for i in range(CRASH_FILES):
        (root / f"f{i}.py").write_text(
            "".join(f"def f{i}_{j}():\n    return {j}\n" for j in range(40))
        )


def save_until_killed(path: str, root: str, trial: int) -> None:
    """Grow a session one change at a time and save it after each; report each save."""
    session = Session(root, budget=2000)
    first = session.text("f0.py")
    session.group(first, title="base")
    for seq in range(MAX_SAVES):
        node = session.text(f"f{seq % CRASH_FILES}.py", lines=(1, 1 + seq % 40))
        session.context.state.update(trial=trial, seq=seq)
        session.checkpoint(f"c{seq}")
        session.link("group_1", node)
        session.tick()
        session.save(path)
        os.write(1, f"saved {trial} {seq}\n".encode())


def crash_harness(path: str, root: str) -> None:
    get_encoding(DEFAULT_ENCODING).encode("warm")  # load the encoding once, before forking
    for line in iter(sys.stdin.readline, ""):
        trial = int(line.split()[1])
        pid = os.fork()
        if pid == 0:
            try:
                save_until_killed(path, root, trial)
            finally:
                os._exit(0)
        sys.stdout.write(f"child {pid}\n")
        sys.stdout.flush()
        os.waitpid(pid, 0)
        sys.stdout.write(f"done {trial}\n")
        sys.stdout.flush()


def main() -> None:
    command, path = sys.argv[1], sys.argv[2]
    if command == "describe":
        with Session.load(path) as session:
            print(json.dumps(describe(session)))
    elif command == "crash":
        crash_harness(path, sys.argv[3])
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main()
