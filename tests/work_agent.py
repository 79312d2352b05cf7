"""A second agent for the work-coordination tests (not a test module).

``python work_agent.py ROOT NAME STALE_AFTER MODE INTENT [FILE ...]`` opens a session on
ROOT, claims FILE... for INTENT, prints ``ready AGENT_ID`` and then answers one line per
command read from stdin:

- ``tick``: tick and print the WorkNode as JSON (status, conflicts, peer count);
- ``update FILE ...``: replace the claimed files; prints ``ok``;
- ``done``: release the claim; prints ``ok``;
- ``quit``: close the session (releasing its claims) and exit.

With ``WALL_CLOCK_STEP=SECONDS`` in the environment, the process's wall clock
(``time.time``) runs that far ahead: a wall-clock step, as NTP or an admin makes one.

``python work_agent.py --hammer ROOT NAME ROUNDS`` writes as fast as it can instead: each
round claims a file, updates it, ticks, and releases every other claim; it prints
``live N`` (its claims still held) and waits for ``quit``.
"""

from __future__ import annotations

import json
import os
import sys
import time

from dagctx.nodes.work import WorkNode
from dagctx.session import Session


def describe(node: WorkNode) -> str:
    return json.dumps(
        {
            "status": node.status,
            "conflicts": [
                {"path": node.show(c.path), "agent": c.agent_name, "kind": c.kind}
                for c in node.conflicts
            ],
            "peers": len(node.peers),
        }
    )


def serve(
    root: str, name: str, stale_after: float, mode: str, intent: str, files: list[str]
) -> None:
    with Session(root) as s:
        s.use_coordination(stale_after=stale_after, agent_name=name)
        node = s.work_on(intent, *files, mode=mode)
        print("ready", s.coordination().agent.id, flush=True)
        for line in sys.stdin:
            command, *args = line.split()
            if command == "tick":
                s.tick()
                print(describe(node), flush=True)
            elif command == "update":
                s.work_update(node, files=args)
                print("ok", flush=True)
            elif command == "done":
                s.work_done(node)
                print("ok", flush=True)
            elif command == "quit":
                break


def hammer(root: str, name: str, rounds: int) -> None:
    with Session(root) as s:
        s.use_coordination(agent_name=name)
        live = 0
        for i in range(rounds):
            node = s.work_on(f"{name} task {i}", f"f{i % 7}.py")
            s.work_update(node, files=[f"f{i % 7}.py", f"g{i % 3}.py"])
            s.tick()
            if i % 2:
                s.work_done(node)
            else:
                live += 1
        print("live", live, flush=True)
        sys.stdin.readline()


if __name__ == "__main__":
    if step := float(os.environ.get("WALL_CLOCK_STEP", "0")):
        wall_clock = time.time
        time.time = lambda: wall_clock() + step
    if sys.argv[1] == "--hammer":
        hammer(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        root, name, stale_after, mode, intent, *files = sys.argv[1:]
        serve(root, name, float(stale_after), mode, intent, files)
