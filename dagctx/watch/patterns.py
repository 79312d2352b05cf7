"""One line of a ``.gitignore`` file, compiled to a regular expression with git's meaning.

:func:`compile_line` reads a line as git does (``dir.c``: comments, trailing spaces unless
escaped, ``!`` negation, a trailing ``/`` for directories only, a pattern without ``/``
matching the last path component) and translates its glob as git's ``wildmatch`` does with
``WM_PATHNAME``: ``*``, ``?`` and ``[...]`` never match ``/``; ``**`` as a whole segment
matches any number of directories (one or more when it ends the pattern); other runs of
``*`` are one ``*``; ``[!...]``/``[^...]``, ranges and ``[:alpha:]``-style classes; a
pattern with an unterminated ``[`` or an unknown class never matches.

A pattern is matched against one path at a time (its own level, as git checks each
directory before entering it), not against everything beneath a matching directory: that
is :mod:`dagctx.watch.ignore`'s business. pathspec's ``GitIgnoreSpec`` answers the other
question (a path and all its parents at once) and its regular expressions backtrack
exponentially on patterns like ``a*a*a*a*a*a*a*a*a*b``; these do not: every ``*`` but the
last of a path component, and every ``**`` but the last, is matched at its leftmost
possible place inside an atomic group (what comes after it can absorb the rest), so a
match costs about (path length × pattern length).

Imports nothing from dagctx.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SEGMENT = "[^/]"  # one character of a path component
_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
    "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z",
    "xdigit": "0-9a-fA-F",
}


class _Unmatchable(Exception):
    """The pattern can never match (git's wildmatch aborts on it)."""


@dataclass(frozen=True, slots=True)
class Pattern:
    """One compiled ``.gitignore`` line.

    ``regex`` is matched in full against the path's last component (``basename``) or
    against the path relative to the ``.gitignore``'s directory; ``negated`` patterns
    re-include; ``dir_only`` patterns match directories only.
    """

    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    basename: bool

    def matches(self, relative: str, name: str, is_dir: bool) -> bool:
        """Whether the pattern matches the path itself (``relative`` to the file's
        directory, ``name`` its last component)."""
        if self.dir_only and not is_dir:
            return False
        return self.regex.fullmatch(name if self.basename else relative) is not None


def compile_line(line: str) -> Pattern | None:
    """The pattern of one ``.gitignore`` line (without its line end); None for blank
    lines, comments and patterns that can never match."""
    if not line or line.startswith("#"):
        return None
    line = _trim_trailing_spaces(line)
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    dir_only = line.endswith("/")
    if dir_only:
        line = line[:-1]
    if not line:
        return None
    basename = "/" not in line  # as git: an escaped or bracketed "/" counts too
    try:
        if basename:
            regex = _component(_tokenize(line))
        else:  # a leading "/" anchors the pattern, which a pathname pattern is anyway
            regex = _pathname(_tokenize(line[1:] if line.startswith("/") else line))
    except _Unmatchable:
        return None
    return Pattern(re.compile(regex, re.DOTALL), negated, dir_only, basename)


def _trim_trailing_spaces(line: str) -> str:
    """Drop trailing spaces not escaped by a backslash (git's ``trim_trailing_spaces``)."""
    last_space = None
    i = 0
    while i < len(line):
        char = line[i]
        if char == " ":
            if last_space is None:
                last_space = i
        else:
            if char == "\\":
                i += 1
                if i == len(line):
                    return line
            last_space = None
        i += 1
    return line if last_space is None else line[:last_space]


# A token is "/" (a separator), an int (a run of that many "*") or a regex for one
# character of a path component.
_Token = str | int


def _tokenize(pattern: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "*":
            run = len(pattern) - i - len(pattern[i:].lstrip("*"))
            tokens.append(run)
            i += run
            continue
        if char == "\\":
            i += 1
            if i == len(pattern):
                raise _Unmatchable
            char = pattern[i]
            tokens.append("/" if char == "/" else re.escape(char))
        elif char == "?":
            tokens.append(_SEGMENT)
        elif char == "[":
            regex, i = _bracket(pattern, i)
            tokens.append(regex)
            continue
        elif char == "/":
            tokens.append("/")
        else:
            tokens.append(re.escape(char))
        i += 1
    return tokens


def _bracket(pattern: str, start: int) -> tuple[str, int]:
    """The regex of the bracket expression at ``start`` and the index after it (git's
    wildmatch: the first character is taken before ``]`` can close; ``/`` never matches)."""
    i = start + 1
    negated = i < len(pattern) and pattern[i] in "!^"
    if negated:
        i += 1
    items: list[str] = []
    previous: str | None = None
    first = True
    while True:
        if i >= len(pattern):
            raise _Unmatchable
        char = pattern[i]
        if char == "]" and not first:
            break
        first = False
        if char == "\\":
            i += 1
            if i >= len(pattern):
                raise _Unmatchable
            previous = pattern[i]
            items.append(re.escape(previous))
        elif (
            char == "-" and previous is not None and i + 1 < len(pattern) and pattern[i + 1] != "]"
        ):
            i += 1
            end = pattern[i]
            if end == "\\":
                i += 1
                if i >= len(pattern):
                    raise _Unmatchable
                end = pattern[i]
            if previous <= end:
                items.append(f"{re.escape(previous)}-{re.escape(end)}")
            previous = None
        elif char == "[" and pattern.startswith(":", i + 1):
            close = pattern.find("]", i + 2)
            if close < 0:
                raise _Unmatchable
            if close - 1 < i + 2 or pattern[close - 1] != ":":
                previous = "["  # no ":]": a plain "[" in the set
                items.append(re.escape("["))
            else:
                name = pattern[i + 2 : close - 1]
                if name not in _POSIX_CLASSES:
                    raise _Unmatchable
                items.append(_POSIX_CLASSES[name])
                previous = None
                i = close
        else:
            previous = char
            items.append(re.escape(char))
        i += 1
    body = "".join(items)
    if negated:
        return f"[^/{body}]", i + 1
    return (f"(?!/)[{body}]" if body else "(?!)"), i + 1


def _component(tokens: list[_Token]) -> str:
    """The regex for one path component: every ``*`` run but the last matches at its
    leftmost place (atomic), so the cost stays linear in the component's length."""
    chunks: list[list[str]] = [[]]
    for token in tokens:
        if isinstance(token, int):
            chunks.append([])
        else:
            chunks[-1].append(token)
    parts = ["".join(chunks[0])]
    for middle in chunks[1:-1]:
        parts.append(f"(?>{_SEGMENT}*?{''.join(middle)})")
    if len(chunks) > 1:
        parts.append(f"{_SEGMENT}*{''.join(chunks[-1])}")
    return "".join(parts)


def _pathname(tokens: list[_Token]) -> str:
    """The regex for a pattern matched against a relative path (segments split at "/").

    A whole-segment ``**`` matches zero or more directories, or, ending the pattern,
    everything below. The segments between two ``**`` are matched at their leftmost
    place (atomic): the ``**`` after them can absorb whatever a later place would skip.
    """
    runs: list[list[str]] = [[]]  # the ordinary segments before, between, after "**"s
    segment: list[_Token] = []
    for token in [*tokens, "/"]:
        if token != "/":
            segment.append(token)
            continue
        if len(segment) == 1 and isinstance(segment[0], int) and segment[0] >= 2:
            if runs[-1] or len(runs) == 1:  # "**/**" is one "**"
                runs.append([])
        else:
            runs[-1].append(_component(segment))
        segment = []
    regex = "/".join(runs[0])
    if len(runs) == 1:
        return regex
    if runs[0]:
        regex += "/"
    for index, run in enumerate(runs[1:], start=1):
        body = "/".join(run)
        if not run:  # only the last: the pattern ends with "**"
            regex += ".+"
        elif index < len(runs) - 1:
            regex += f"(?>(?:{_SEGMENT}+/)*?{body}/)"
        else:
            regex += f"(?:{_SEGMENT}+/)*{body}"
    return regex
