"""Run grep_knowledge over patterns read from stdin (a JSON list) under a memory limit.

Usage: ``python regex_worker.py LIMIT_BYTES``. Prints one JSON object per pattern:
``{"pattern": ..., "result": ..., "seconds": ...}``. A regression that allocates without
bound dies here (MemoryError or the kernel's refusal), never in the test run itself.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time

from dagctx.context import Context
from dagctx.knowledge import Workspace
from dagctx.tools import get_knowledge_tools


def main() -> None:
    limit = int(sys.argv[1])
    patterns = json.load(sys.stdin)
    workspace = Workspace("ws")
    workspace.write_sync("notes", "a" * 200 + "\n" + "ab" * 100 + "\nplain line\n")
    ctx = Context("t")
    ctx.state.set("workspace", workspace)
    grep = next(t for t in get_knowledge_tools() if t.name == "grep_knowledge").bind(ctx)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    for pattern in patterns:
        started = time.monotonic()
        result = asyncio.run(grep.execute(name="notes", pattern=pattern))
        seconds = time.monotonic() - started
        print(json.dumps({"pattern": pattern, "result": result, "seconds": seconds}), flush=True)


if __name__ == "__main__":
    main()
