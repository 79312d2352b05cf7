"""Outlines without a grammar: markdown and reStructuredText section titles, the top-level
keys of JSON, TOML and YAML, and the regex fallback for everything else.

JSON and TOML are read with the standard library (a text that does not parse falls back
to the regex outline); YAML's top-level keys come from a line scan (a key at column 0
outside block scalars), not a YAML parser. Imports only :mod:`dagctx.outline.model`.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Iterable

from dagctx.outline.model import SIGNATURE_CHARS, Entry, clip

# Lines that usually start a definition, in most languages: the fallback outline.
FALLBACK = re.compile(
    r"^(?:(?:async\s+)?def |class |function |export |interface |struct |enum |impl |"
    r"(?:pub\s+)?fn |func |type |#{1,3} )"
)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
# A reStructuredText section adornment: one punctuation character repeated, 3 or more.
_RST_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}\s*$")
_YAML_KEY = re.compile(r"""^(?:"([^"]+)"|'([^']+)'|([^\s#:\-?&*!|>'"%@`{\[][^:#]*?))\s*:(?:\s|$)""")
_BLOCK_SCALAR = re.compile(r":\s*[|>][-+0-9]*\s*(?:#.*)?$")


def fallback_entries(lines: list[str], first_line: int = 1) -> list[Entry]:
    """One entry per line that starts like a definition (:data:`FALLBACK`), the line as
    written (its indentation kept) as the signature."""
    return [
        Entry(line.strip(), "line", i, i, clip(line, SIGNATURE_CHARS))
        for i, line in enumerate(lines, first_line)
        if FALLBACK.match(line)
    ]


def markdown_entries(lines: list[str], first_line: int = 1) -> list[Entry]:
    """One entry per heading outside fenced code and front matter, nested by level: ATX
    (``## Title``) and setext (a one-line paragraph underlined with ``===`` for level 1 or
    ``---`` for level 2). Each section runs to the line before the next heading of the same
    or a higher level; the signature is written ATX style."""
    found: list[tuple[int, int, str]] = []  # (line, level, title)
    fence = ""
    start = _front_matter_end(lines)
    for k in range(start, len(lines)):
        line = lines[k]
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            continue
        if opened:
            fence = opened.group(1)
        elif (m := _HEADING.match(line)) is not None:
            found.append((k + first_line, len(m.group(1)), m.group(2)))
        elif (under := _SETEXT.match(line)) is not None and _paragraph_line(lines, k - 1, start):
            level = 1 if under.group(1)[0] == "=" else 2
            found.append((k - 1 + first_line, level, lines[k - 1].strip()))
    return _sections(
        found, first_line + len(lines) - 1, lambda level, title: f"{'#' * level} {title}"
    )


def rst_entries(lines: list[str], first_line: int = 1) -> list[Entry]:
    """One entry per reStructuredText section title, nested by level: a title line at
    column 0 after a blank line, underlined (and maybe overlined) by one punctuation
    character repeated at least as long as the title (or 4 or more times). Levels follow
    the order in which the adornment styles first appear, as in docutils."""
    styles: list[tuple[str, bool]] = []
    found: list[tuple[int, int, str]] = []
    k = 0
    while k < len(lines):
        title, style, used = _rst_title(lines, k)
        if style is None:
            k += 1
            continue
        if style not in styles:
            styles.append(style)
        found.append((k + first_line, styles.index(style) + 1, title))
        k += used
    return _sections(found, first_line + len(lines) - 1, lambda _level, title: title)


def _rst_title(lines: list[str], k: int) -> tuple[str, tuple[str, bool] | None, int]:
    """The section title starting at line ``k`` (overlined or not), its adornment style
    (character, overlined) and how many lines it takes; ``("", None, 0)`` when none does."""
    over = _RST_ADORNMENT.match(lines[k])
    if over is not None:
        if k + 2 < len(lines):
            title, under = lines[k + 1].strip(), _RST_ADORNMENT.match(lines[k + 2])
            if title and under is not None and under.group(1) == over.group(1):
                return title, (over.group(1), True), 3
        return "", None, 0
    title = lines[k].rstrip()
    if (
        k + 1 < len(lines)
        and title[:1].strip()
        and (k == 0 or not lines[k - 1].strip())
        and (under := _RST_ADORNMENT.match(lines[k + 1])) is not None
        and len(lines[k + 1].rstrip()) >= min(len(title), 4)
    ):
        return title, (under.group(1), False), 2
    return "", None, 0


def _front_matter_end(lines: list[str]) -> int:
    """The index of the first line after a YAML front matter block (``---`` ... ``---``
    at the very top), or 0 when there is none."""
    if lines and lines[0].rstrip() == "---":
        for k in range(1, len(lines)):
            if lines[k].rstrip() in ("---", "..."):
                return k + 1
    return 0


def _paragraph_line(lines: list[str], k: int, start: int) -> bool:
    """Whether line ``k`` is a one-line paragraph a setext underline can make a heading:
    text not indented as code, after a blank line (or the start), not itself a heading,
    list item, quote or table row."""
    if k < start or not lines[k].strip() or lines[k].startswith("    "):
        return False
    if k > start and lines[k - 1].strip():
        return False
    first = lines[k].lstrip()[:1]
    return first not in ("#", ">", "|", "-", "*", "+", "<") and _SETEXT.match(lines[k]) is None


def _sections(
    found: list[tuple[int, int, str]], last: int, signature: Callable[[int, str], str]
) -> list[Entry]:
    """Heading entries from ``(line, level, title)`` in file order: each section runs to
    the line before the next heading of the same or a higher level (or to ``last``), and
    nests under the nearest open heading of a higher level."""
    ends = [last] * len(found)
    parents: list[int | None] = []
    stack: list[int] = []  # indexes of the headings still open, levels increasing
    for k, (at, level, _) in enumerate(found):
        while stack and found[stack[-1]][1] >= level:
            ends[stack.pop()] = at - 1
        parents.append(stack[-1] if stack else None)
        stack.append(k)
    entries: list[Entry] = []
    for (at, level, title), end, parent in zip(found, ends, parents, strict=True):
        depth = entries[parent].depth + 1 if parent is not None else 0
        text = clip(signature(level, title), SIGNATURE_CHARS)
        entries.append(Entry(title, "heading", at, end, text, "", depth, parent))
    return entries


def _describe(value: object) -> str:
    """A short picture of a value: scalars as JSON, containers by size."""
    if isinstance(value, dict):
        return f"{{…{len(value)} keys}}"
    if isinstance(value, list):
        return f"[…{len(value)} items]"
    return json.dumps(value, default=str, ensure_ascii=False)


def _keyed(keys: Iterable[tuple[str, str]], lines: list[str], find: str, first: int) -> list[Entry]:
    """Entries for top-level keys, each placed at the first line (after the previous
    key's) that ``find`` (a pattern with ``{key}``) matches; a key not found is left out.
    Each runs to the line before the next key."""
    placed: list[tuple[int, str, str]] = []
    at = 0
    for key, shown in keys:
        pattern = re.compile(find.format(key=re.escape(key)))
        for i in range(at, len(lines)):
            if pattern.match(lines[i]):
                placed.append((i, key, shown))
                at = i + 1
                break
    placed.sort()
    entries: list[Entry] = []
    for k, (i, key, shown) in enumerate(placed):
        end = placed[k + 1][0] - 1 if k + 1 < len(placed) else len(lines) - 1
        entries.append(Entry(key, "key", i + first, end + first, clip(shown, SIGNATURE_CHARS)))
    return entries


def json_entries(text: str, lines: list[str], first_line: int = 1) -> list[Entry] | None:
    """The top-level keys of a JSON object (``"key": value-picture``); None if the text is
    not JSON, [] if it is JSON but not an object."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return []
    keys = [(k, f"{json.dumps(k, ensure_ascii=False)}: {_describe(v)}") for k, v in value.items()]
    return _keyed(
        ((json.dumps(k)[1:-1], s) for k, s in keys), lines, r'^\s*"{key}"\s*:', first_line
    )


def toml_entries(text: str, lines: list[str], first_line: int = 1) -> list[Entry] | None:
    """The top-level keys and tables of a TOML document; None if it is not TOML."""
    try:
        value = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return None
    keys = []
    for key, item in value.items():
        if isinstance(item, dict):
            keys.append((key, f"[{key}] {_describe(item)}"))
        elif isinstance(item, list) and item and all(isinstance(x, dict) for x in item):
            keys.append((key, f"[[{key}]] ×{len(item)}"))
        else:
            keys.append((key, f"{key} = {_describe(item)}"))
    find = r"""^\s*(?:\[\[?\s*["']?{key}["']?\s*[.\]]|["']?{key}["']?\s*[=.])"""
    return _keyed(keys, lines, find, first_line)


def yaml_entries(lines: list[str], first_line: int = 1) -> list[Entry]:
    """The keys at column 0 of a YAML text (a line scan that skips block scalars and
    comments), each shown as its line."""
    entries: list[tuple[int, str, str]] = []
    in_block = False
    for i, line in enumerate(lines):
        if in_block and (not line.strip() or line[:1].isspace()):
            continue
        in_block = False
        m = _YAML_KEY.match(line)
        if m is None:
            continue
        key = next(g for g in m.groups() if g is not None).strip()
        entries.append((i, key, line.rstrip()))
        in_block = bool(_BLOCK_SCALAR.search(line))
    out = []
    for k, (i, key, shown) in enumerate(entries):
        end = entries[k + 1][0] - 1 if k + 1 < len(entries) else len(lines) - 1
        out.append(
            Entry(key, "key", i + first_line, end + first_line, clip(shown, SIGNATURE_CHARS))
        )
    return out
