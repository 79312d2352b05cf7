"""Quoting untrusted text into the projection: names on one line, bodies inside fences.

The projection's structure is its own: section headings (``### path (#id)``) and code
fences. Text that dagctx does not write — file names, file content and outlines, MCP tool
names, descriptions and parameters — must not be able to start a line that reads as
structure. Two rules, applied wherever such text is rendered:

- :func:`inline`: a name or title stays on its line: every character that ends a line
  (``\\n``, ``\\r``, ``\\v``, ``\\f``, ``\\x1c``-``\\x1e``, ``\\x85``, U+2028, U+2029)
  and every other control character except tab is written as a backslash escape
  (``\\n``, ``\\r``, ``\\xNN``, ``\\uNNNN``), so it cannot break the line it sits in.
- :func:`fence`: a body goes inside a backtick fence longer than any run of backticks in
  it (at least three), so no line of it can close the fence early.

Imports nothing of dagctx.
"""

from __future__ import annotations

import re

_BREAKING = re.compile("[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r"}
_BACKTICKS = re.compile("`+")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inline(text: str) -> str:
    """``text`` with line breaks and control characters (tab excepted) escaped, so it
    renders on one line; text without any is returned as it is."""
    return _BREAKING.sub(_escape, text) if _BREAKING.search(text) else text


def fence(body: str, info: str = "") -> str:
    """``body`` inside a backtick fence longer than its longest run of backticks (at least
    three), with ``info`` (a language name) after the opening fence."""
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0) if "`" in body else 0
    marks = "`" * max(3, longest + 1)
    return f"{marks}{inline(info)}\n{body}\n{marks}"
