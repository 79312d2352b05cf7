"""A small real MCP server for the test suite, written with the SDK's ``MCPServer``.

Run as a script it serves over stdio (``--http PORT`` serves streamable HTTP instead).
Its tools let a test change the tool list at runtime (``add_tool``, ``remove_tool``,
``describe``; each sends ``notifications/tools/list_changed``; ``add_tool_quietly`` does
not), look at the server's environment (``env``, ``cwd``), wait (``slow``), fail
(``fail``) and kill the server (``crash``). With ``FIXTURE_PID_FILE`` set the server
writes its pid there. ``--crash-at-start`` writes a message to stderr and exits with status 3
before speaking MCP; ``--hang`` never answers. ``--flood-stderr MB`` writes that many
megabytes to stderr as fast as the pipe takes them while it serves (``flooded`` tells how
many bytes so far); ``crash`` stops the flood before its last word.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

if __name__ == "__main__" and "--crash-at-start" in sys.argv:
    # Before importing the SDK, so the failure is as quick as a real misconfiguration.
    print("fixture: refusing to start (bad configuration)", file=sys.stderr, flush=True)
    sys.exit(3)
if __name__ == "__main__" and "--hang" in sys.argv:
    print("fixture: hanging", file=sys.stderr, flush=True)
    time.sleep(600)
    sys.exit(0)

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer(
    "fixture", version="1.0", instructions="A fixture server for dagctx tests.", log_level="WARNING"
)


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str, repeat: int = 1) -> str:
    """Echo text back, repeated."""
    return text * repeat


@server.tool()
def fail(message: str) -> str:
    """Always fails with the given message."""
    raise ToolError(message)


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Register a new tool at runtime that returns its own name."""

    def dynamic(suffix: str = "") -> str:
        return name + suffix

    server.add_tool(dynamic, name=name, description=f"Dynamic tool {name}.")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


@server.tool()
async def remove_tool(name: str, ctx: Context) -> str:
    """Remove a tool at runtime."""
    server.remove_tool(name)
    await ctx.session.send_tool_list_changed()
    return f"removed {name}"


@server.tool()
async def describe(name: str, description: str, ctx: Context) -> str:
    """Change the description of a tool at runtime."""
    tool = server._tool_manager.get_tool(name)
    if tool is None:
        raise ToolError(f"no tool {name}")
    tool.description = description
    await ctx.session.send_tool_list_changed()
    return f"described {name}"


@server.tool()
async def add_tool_quietly(name: str) -> str:
    """Register a new tool at runtime without notifying the client."""

    def quiet() -> str:
        return name

    server.add_tool(quiet, name=name, description=f"Quiet tool {name}.")
    return f"added {name}"


@server.tool()
def env(name: str) -> str:
    """The value of an environment variable of the server process ('' if unset)."""
    return os.environ.get(name, "")


@server.tool()
def cwd() -> str:
    """The server's working directory."""
    return os.getcwd()


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await anyio.sleep(seconds)
    return "done"


_flood = {"bytes": 0, "stop": False}


def flood_stderr(megabytes: int) -> None:
    line = b"flood " + b"x" * 1017 + b"\n"  # 1 KiB lines
    for _ in range(megabytes * 1024):
        if _flood["stop"]:
            return
        os.write(2, line)
        _flood["bytes"] += len(line)


def flooded() -> int:
    """Bytes written to stderr by --flood-stderr so far (a tool with --flood-stderr)."""
    return _flood["bytes"]


@server.tool()
def crash(code: int = 7) -> str:
    """Write a last word to stderr and kill the server process."""
    _flood["stop"] = True
    time.sleep(0.2)
    print(f"fixture server crashing with code {code}", file=sys.stderr, flush=True)
    os._exit(code)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=None, metavar="PORT")
    parser.add_argument("--flood-stderr", type=int, default=0, metavar="MB")
    args = parser.parse_args()
    if args.flood_stderr:
        server.tool()(flooded)
        threading.Thread(target=flood_stderr, args=(args.flood_stderr,), daemon=True).start()
    if os.environ.get("FIXTURE_PID_FILE"):
        with open(os.environ["FIXTURE_PID_FILE"], "w") as handle:
            handle.write(str(os.getpid()))
    if os.environ.get("FIXTURE_GREETING"):
        print(f"greeting: {os.environ['FIXTURE_GREETING']}", file=sys.stderr, flush=True)
    if args.http is not None:
        server.run("streamable-http", port=args.http)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
