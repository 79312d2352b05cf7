"""One definition of a line, for every line dagctx numbers, counts, cuts or reads by range.

A line ends at ``"\\n"``; a ``"\\r"`` right before it belongs to the line end, so a CRLF
file numbers as its editor shows it. Nothing else ends a line: form feed, vertical tab,
``\\x1c``-``\\x1e``, ``\\x85``, U+2028 and U+2029 are characters inside a line, as they
are for ``readline`` (which reads line ranges), git, grep and tree-sitter. That is why
:meth:`str.splitlines`, which breaks at all of them, is not used on text in dagctx.

Must not import anything from dagctx.
"""

from __future__ import annotations


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` without their line ends (see the module docstring).

    Like :meth:`str.splitlines`, a final line end does not start an empty last line and
    ``""`` has no lines; unlike it, only ``"\\n"`` (or ``"\\r\\n"``) ends a line.
    """
    if not text:
        return []
    lines = text.split("\n")
    last = lines.pop()  # after the final "\n": no line end of its own
    if "\r" in text:
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if last:
        lines.append(last)
    return lines
