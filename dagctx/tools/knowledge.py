"""Knowledge tools: add, read, grep and search the artifacts attached to a context.

``add_knowledge`` stores a note (text, or a file under ``ctx.state["working_dir"]`` read
as ``read_file`` reads it) as the next version of an artifact in the workspace, whose
knowledge store indexes it; it is not one of `get_knowledge_tools` (which only read), so a
host chooses to offer it (``dagctx mcp`` does). Secrets in what it stores are redacted
once, before the write (:func:`dagctx._secrets.redact`, the rule of ``read_file`` and the
projection), unless ``ctx.state["include_secrets"]`` is true; its answer says how many,
so the workspace, the knowledge store and every search hold only the redacted text.

``get_knowledge`` and ``grep_knowledge`` use the `Workspace` in ``ctx.state["workspace"]``
(``get_knowledge`` returns at most ``ctx.state["read_limit"]`` characters when it is set,
as ``read_file`` does);
``search_knowledge`` uses the `KnowledgeStore` in ``ctx.state["knowledge_store"]``. A
missing workspace or store, an unknown artifact, an invalid or too slow regex all come
back as messages. A regex's compile cost is bounded before it is compiled
(:func:`dagctx._regex.compile_bounded`: ``a{4294967294}`` or 200 nested groups are refused
with a message, never allowed to exhaust memory), and it gets `GREP_TIMEOUT` seconds in
total over the artifact (the ``regex`` package enforces it inside the matcher), so a
catastrophically backtracking pattern such as ``(a|aa)+$`` returns a message instead of
hanging the tool.
"""

from __future__ import annotations

import asyncio
import time
from typing import TypeVar

import regex

from dagctx._lines import split_lines
from dagctx._regex import PatternTooLargeError, compile_bounded
from dagctx._secrets import describe, redact
from dagctx.context import Context
from dagctx.errors import KnowledgeError, ToolError
from dagctx.knowledge import KnowledgeStore, Workspace, tokenize
from dagctx.tools.base import ContextTool, Refusal
from dagctx.tools.files import INCLUDE_SECRETS_KEY, READ_LIMIT_KEY, read_unredacted

__all__ = [
    "add_knowledge",
    "get_knowledge",
    "get_knowledge_tools",
    "grep_knowledge",
    "search_knowledge",
]

WORKSPACE_KEY = "workspace"
KNOWLEDGE_STORE_KEY = "knowledge_store"
UNINDEXED_KEY = "unindexed_docs"
"""``ctx.state`` key: how many of the host's doc files it left out of the knowledge store
(``dagctx mcp`` indexes at most 500); a search's answer says so."""
GREP_TIMEOUT = 1.0
"""Seconds a pattern may spend matching one artifact."""
GREP_MAX_MATCHES = 200
"""Matching lines shown; the rest are counted."""
_NAMED = 10  # artifacts a search without results names

_T = TypeVar("_T")


def _attached(ctx: Context, key: str, kind: type[_T]) -> _T | str:
    """``ctx.state[key]`` if it is a `kind`; a message if absent; `ToolError` if wrong."""
    value = ctx.state.get(key)
    if value is None:
        return Refusal(
            f"No {kind.__name__} is attached to this context (ctx.state[{key!r}] is unset)."
        )
    if not isinstance(value, kind):
        raise ToolError(
            f"ctx.state[{key!r}] must be a {kind.__name__}, got {type(value).__name__}", value=value
        )
    return value


def _not_found(workspace: Workspace, name: str) -> str:
    available = ", ".join(workspace.names()) or "none"
    return Refusal(f"Artifact {name!r} not found. Available artifacts: {available}.")


def _holding(names: list[str]) -> str:
    """What a search looked through: ``3 artifacts: a, b, c`` (the first 10 named)."""
    if not names:
        return "the knowledge store, which is empty"
    shown = ", ".join(names[:_NAMED])
    more = f" and {len(names) - _NAMED} more" if len(names) > _NAMED else ""
    return f"{len(names)} artifact{'s' * (len(names) != 1)}: {shown}{more}"


def get_knowledge(ctx: Context, name: str) -> str:
    """Retrieve a knowledge artifact by name from the workspace attached to context.

    An artifact longer than the context's read limit comes back cut to its first lines,
    with a line in brackets saying so.

    Args:
        name: The artifact name to retrieve.
    """
    workspace = _attached(ctx, WORKSPACE_KEY, Workspace)
    if isinstance(workspace, str):
        return workspace
    artifact = workspace.get(name)
    if artifact is None:
        return _not_found(workspace, name)
    limit = ctx.state.get(READ_LIMIT_KEY)
    content = artifact.content
    if limit is None or len(content) <= limit:
        return content
    cut = content.rfind("\n", 0, limit) + 1  # whole lines
    if cut:
        shown, lines = content[:cut], f"lines 1-{len(split_lines(content[:cut]))}"
    else:  # the first line alone is longer than the limit
        shown, lines = content[:limit] + "\n", "the start of line 1"
    return (
        f"{shown}[get_knowledge: {lines} of {len(split_lines(content))} of {name!r} shown"
        f" (at most {limit:,} characters a call); grep_knowledge and search_knowledge find"
        " the rest]"
    )


async def grep_knowledge(ctx: Context, name: str, pattern: str) -> str:
    """Search a knowledge artifact for lines matching a regex pattern.

    Returns the matching lines as "line_number: text" (line numbers start at 1).

    Args:
        name: The artifact name to search in.
        pattern: A regex pattern to match against each line.
    """
    workspace = _attached(ctx, WORKSPACE_KEY, Workspace)
    if isinstance(workspace, str):
        return workspace
    artifact = workspace.get(name)
    if artifact is None:
        return _not_found(workspace, name)
    try:
        compiled = compile_bounded(pattern)
    except PatternTooLargeError as exc:
        return f"{exc} Fix the pattern and try again."
    except regex.error as exc:
        return Refusal(f"Invalid regex {pattern!r}: {exc}. Fix the pattern and try again.")
    # The matcher may run for up to GREP_TIMEOUT; keep the event loop free meanwhile.
    return await asyncio.to_thread(_grep, compiled, name, artifact.content)


def _grep(compiled: regex.Pattern[str], name: str, content: str) -> str:
    deadline = time.monotonic() + GREP_TIMEOUT
    hits: list[str] = []
    total = 0
    try:
        for number, line in enumerate(split_lines(content), start=1):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            if compiled.search(line, timeout=remaining):
                total += 1
                if len(hits) < GREP_MAX_MATCHES:
                    hits.append(f"{number}: {line}")
    except TimeoutError:
        return Refusal(
            f"Pattern {compiled.pattern!r} took longer than {GREP_TIMEOUT:g} s on artifact "
            f"{name!r} and was stopped. Use a simpler pattern (avoid nested or overlapping "
            "repetition such as (a|aa)+)."
        )
    if not hits:
        return f"No lines in {name!r} match {compiled.pattern!r}."
    if total > len(hits):
        hits.append(f"... and {total - len(hits)} more matching lines; narrow the pattern.")
    return "\n".join(hits)


def search_knowledge(ctx: Context, query: str, top_k: int = 5) -> str:
    """Search across all knowledge artifacts using keyword matching.

    Results are chunks of artifacts ranked by BM25 relevance, best first.

    Args:
        query: The search query string.
        top_k: Maximum number of results to return.
    """
    store = _attached(ctx, KNOWLEDGE_STORE_KEY, KnowledgeStore)
    if isinstance(store, str):
        return store
    if top_k < 1:
        return Refusal(f"top_k must be at least 1, got {top_k}.")
    if not tokenize(query):
        return Refusal(f"Query {query!r} contains no words to search for.")
    results = store.search(query, top_k)
    left_out = _unindexed(ctx)
    if not results:
        return f"No results for {query!r} in {_holding(store.names())}.{left_out}"
    found = "\n\n".join(
        f"{rank}. {r.name} (chunk {r.chunk_index}, score {r.score:.2f})\n{r.text.strip()}"
        for rank, r in enumerate(results, start=1)
    )
    return f"{found}\n\n{left_out.strip()}" if left_out else found


def _unindexed(ctx: Context) -> str:
    """`` (N doc files were not indexed ...)`` when the host left some out, else ``""``."""
    left = ctx.state.get(UNINDEXED_KEY) or 0
    if not isinstance(left, int) or left <= 0:
        return ""
    return (
        f" ({left} more doc file{'s' * (left != 1)} of the repository"
        f" {'were' if left != 1 else 'was'} not indexed; read_file reads any file.)"
    )


async def add_knowledge(ctx: Context, name: str, text: str = "", path: str = "") -> str:
    """Store knowledge for later: a note, or a file of the project, which get_knowledge,
    grep_knowledge and search_knowledge then find under its name.

    Storing under a name that exists adds a new version; the latest is what is found.

    Args:
        name: Name to store it under, e.g. "deploy-notes" or the file's path.
        text: The text to store (give text or path, not both).
        path: A file to store, relative to the working directory (give text or path).
    """
    workspace = _attached(ctx, WORKSPACE_KEY, Workspace)
    if isinstance(workspace, str):
        return workspace
    if bool(text) == bool(path):
        return Refusal("Give either text or path (a file in the working directory), not both.")
    content = read_unredacted(ctx, path) if path else text
    if isinstance(content, Refusal):
        return content
    redacted = ""
    if ctx.state.get(INCLUDE_SECRETS_KEY) is not True:
        # A note is not code: unquoted KEY=value assignments are secrets there too.
        content, found = redact(content, unquoted=not path)
        redacted = f"; {describe(found)}" if found else ""
    try:
        artifact = await workspace.write(name, content)
    except KnowledgeError as exc:
        return Refusal(f"add_knowledge failed: {exc}")
    lines = len(split_lines(content))
    return (
        f"Stored {name!r} (version {artifact.version}, {lines} {_plural(lines, 'line')})"
        f"{redacted}; the knowledge tools find it now."
    )


def _plural(count: int, word: str) -> str:
    return word if count == 1 else f"{word}s"


def get_knowledge_tools() -> list[ContextTool]:
    """Fresh, unbound ``get_knowledge``, ``grep_knowledge`` and ``search_knowledge`` tools."""
    return [ContextTool(get_knowledge), ContextTool(grep_knowledge), ContextTool(search_knowledge)]
