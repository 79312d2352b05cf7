"""Compiling a regular expression that a model or a user wrote, at a bounded cost.

The ``regex`` package (like ``re``) expands a counted repeat into its compiled program, so
``a{4294967294}`` allocates until the process runs out of memory, and nested counts
multiply (``(a{1000}){1000}``). :func:`compile_bounded` estimates the expanded size of a
pattern before compiling it (:func:`expanded_size`) and refuses one above
:data:`MAX_EXPANDED_SIZE` with a message that says what to change. Matching time is bounded
separately, by the ``timeout`` the ``regex`` package takes on each match call.

Imports nothing from dagctx.
"""

from __future__ import annotations

import regex

#: The largest expanded size :func:`compile_bounded` compiles (about 3 MB of compiled
#: program; an everyday search pattern is under 100).
MAX_EXPANDED_SIZE = 10_000

_COUNT = regex.compile(r"\{(\d*)(?:,(\d*))?\}")
_BRACED_ESCAPES = {"x": "}", "N": "}", "p": "}", "P": "}", "u": "}", "g": ">"}


#: The deepest nesting of groups :func:`compile_bounded` compiles (the compiler recurses
#: once per level).
MAX_GROUP_DEPTH = 100


class PatternTooLargeError(ValueError):
    """A pattern whose expanded size is over :data:`MAX_EXPANDED_SIZE` or whose groups nest
    deeper than :data:`MAX_GROUP_DEPTH`; the message says what to change."""

    def __init__(self, pattern: str, size: int, depth: int) -> None:
        self.pattern = pattern
        self.size = size
        self.depth = depth
        shown = pattern if len(pattern) <= 60 else pattern[:57] + "..."
        if depth > MAX_GROUP_DEPTH:
            why = f"its groups nest more than {MAX_GROUP_DEPTH} deep. Use fewer nested parentheses."
        else:
            why = (
                f"its counted repeats expand to more than {MAX_EXPANDED_SIZE:,} elements "
                f"(at least {min(size, 10**12):,}). Use smaller counts such as a{{2,50}}, "
                "or + and * instead of large {n} counts."
            )
        super().__init__(f"Pattern {shown!r} is too large: {why}")


def _skip_class(pattern: str, i: int) -> int:
    """The index after the character class that starts at ``pattern[i] == "["``.

    The class ends at the first unescaped ``]`` after an optional ``^`` and a leading
    ``]``; nested sets end it early, which only makes the estimate larger.
    """
    n = len(pattern)
    j = i + 1
    if j < n and pattern[j] == "^":
        j += 1
    if j < n and pattern[j] == "]":
        j += 1
    while j < n and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


def _skip_escape(pattern: str, i: int) -> int:
    """The index after the escape that starts at ``pattern[i] == "\\"``."""
    j = i + 2
    close = _BRACED_ESCAPES.get(pattern[i + 1 : i + 2])
    if close is not None and pattern[j : j + 1] in ("{", "<"):
        end = pattern.find(close, j)
        j = end + 1 if end != -1 else len(pattern)
    return j


def expanded_size(pattern: str, limit: int = MAX_EXPANDED_SIZE) -> tuple[int, int]:
    """An upper estimate of how many elements compiling ``pattern`` expands to, and the
    deepest nesting of its groups: (size, depth).

    Every literal, escape, class, ``.`` and group counts 1; a counted repeat (``{n}``, ``{m,n}``,
    ``{m,}``, ``{,n}``) multiplies what it repeats by its largest count (its lower bound
    when unbounded); groups and alternatives add up. Stops early and returns a value over
    ``limit`` as soon as the estimate passes it (or a depth over :data:`MAX_GROUP_DEPTH`
    as soon as the nesting passes that), so a pattern of any length costs one pass.
    """
    # One frame per open group: [size of the finished items, size of the last item].
    frames: list[list[int]] = [[0, 0]]
    i, n, depth = 0, len(pattern), 0
    while i < n:
        frame = frames[-1]
        c = pattern[i]
        if c == "(":
            frames.append([0, 0])
            depth = max(depth, len(frames) - 1)
            if depth > MAX_GROUP_DEPTH:
                return 0, depth
            i += 1
            continue
        if c in ")|":
            if c == "|" or len(frames) == 1:
                frame[0] += frame[1]
                frame[1] = 0
            else:
                finished = frames.pop()
                parent = frames[-1]
                parent[0] += parent[1]
                parent[1] = finished[0] + finished[1] + 1  # the group itself
            i += 1
            continue
        if c in "*+?":
            i += 1
            continue
        if c == "{":
            count = _COUNT.match(pattern, i)
            if count is not None and (count.group(1) or count.group(2)):
                low, high = count.group(1), count.group(2)
                largest = max(int(low or 0), int(high or 0) if high is not None else 0)
                frame[1] *= max(largest, 1)
                i = count.end()
                if frame[0] + frame[1] > limit:
                    return frame[0] + frame[1], depth
                continue
        if c == "\\":
            end = _skip_escape(pattern, i)
        elif c == "[":
            end = _skip_class(pattern, i)
        else:
            end = i + 1
        frame[0] += frame[1]
        frame[1] = 1
        if frame[0] > limit:
            return frame[0], depth
        i = end
    return sum(total + last for total, last in frames), depth


def compile_bounded(pattern: str) -> regex.Pattern[str]:
    """``regex.compile(pattern)`` for a pattern whose :func:`expanded_size` is within
    :data:`MAX_EXPANDED_SIZE` and :data:`MAX_GROUP_DEPTH`.

    Raises:
        PatternTooLargeError: the pattern expands or nests beyond the bounds.
        regex.error: the pattern is not a valid regular expression.
    """
    size, depth = expanded_size(pattern)
    if size > MAX_EXPANDED_SIZE or depth > MAX_GROUP_DEPTH:
        raise PatternTooLargeError(pattern, size, depth)
    return regex.compile(pattern)
