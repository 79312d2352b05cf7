"""Code outlines from real parsers: what a file defines, where, and how it nests.

:func:`outline` turns a file's text into an :class:`Outline` of :class:`Entry` values
(name, kind, 1-based start and end line, signature as written, first docstring line,
parent) and, where the language has a convention for it (a module docstring, a Go
package comment, Rust's ``//!``), the first line of what the file says of itself:
tree-sitter grammars for Python, JavaScript/JSX, TypeScript/TSX, Go, Rust, Java, C,
C++, Ruby, C# and PHP (:mod:`.code`); markdown and reStructuredText section titles and
the top-level keys of JSON, TOML and YAML (:mod:`.data`); for anything else, or a grammar
that cannot be loaded, a regex over line starts.

The cost is bounded: at most :data:`MAX_PARSE_BYTES` of a text are looked at. Outlines
are values: the same text gives the same outline. This package must not import the rest
of dagctx (nodes, projection and session import it, not the other way round).
"""

from __future__ import annotations

import os

from dagctx._lines import split_lines
from dagctx.outline.code import (
    LANGUAGES,
    MAX_PARSE_BYTES,
    TESTS,
    code_names,
    code_outline,
    parse_cap,
    too_deep,
)
from dagctx.outline.data import (
    fallback_entries,
    json_entries,
    markdown_entries,
    rst_entries,
    toml_entries,
    yaml_entries,
)
from dagctx.outline.model import Entry, Outline

__all__ = ["MAX_PARSE_BYTES", "Entry", "Outline", "language_of", "names", "outline", "referable"]

_EXTENSIONS = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript",
    ".cjs": "javascript", ".jsx": "jsx", ".ts": "typescript", ".mts": "typescript",
    ".cts": "typescript", ".tsx": "tsx", ".go": "go", ".rs": "rust", ".java": "java",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp",
    ".hh": "cpp", ".hxx": "cpp", ".rb": "ruby", ".cs": "csharp", ".php": "php",
    ".md": "markdown", ".markdown": "markdown", ".json": "json", ".toml": "toml",
    ".yaml": "yaml", ".yml": "yaml", ".rst": "rst", ".rest": "rst",
}  # fmt: skip
_OTHERS = frozenset({"markdown", "rst", "json", "toml", "yaml"})


def language_of(path_or_language: str) -> str:
    """The outline language for a path (by its extension) or a language name itself;
    ``""`` when neither is known (the regex fallback applies)."""
    if path_or_language in LANGUAGES or path_or_language in _OTHERS:
        return path_or_language
    return _EXTENSIONS.get(os.path.splitext(path_or_language)[1].lower(), "")


def outline(path_or_language: str, text: str, *, first_line: int = 1) -> Outline:
    """The outline of ``text``, a file named ``path_or_language`` (or in that language).

    ``first_line`` is the line number of the text's first line (for a line range of a
    file). Only the first :data:`MAX_PARSE_BYTES` of the text (cut at a line end) are
    looked at; :attr:`Outline.parsed_lines` says how many lines that was. Never raises for
    any text: what a parser cannot read, and code nesting brackets deeper than
    :data:`~dagctx.outline.code.MAX_NESTING`, falls back to the regex outline.
    """
    language = language_of(path_or_language)
    total = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    head, data = _parsed_head(text)
    if len(data) < len(head):  # many multi-byte characters: the byte cap cut more
        head = data.decode("utf-8", "ignore")
    lines = split_lines(head)
    parsed = total if len(head) == len(text) else len(lines)
    if language in LANGUAGES and not too_deep(data):
        try:
            entries, doc = code_outline(language, data, first_line)
        except ImportError:
            return Outline(
                language, "regex", tuple(fallback_entries(lines, first_line)), total, parsed
            )
        return Outline(language, "tree-sitter", tuple(entries), total, parsed, doc)
    if language == "markdown":
        return Outline(
            language, "markdown", tuple(markdown_entries(lines, first_line)), total, parsed
        )
    if language == "rst":
        return Outline(language, "rst", tuple(rst_entries(lines, first_line)), total, parsed)
    if language == "yaml":
        return Outline(language, "yaml", tuple(yaml_entries(lines, first_line)), total, parsed)
    if language in ("json", "toml") and parsed == total:
        read = json_entries if language == "json" else toml_entries
        found = read(head, lines, first_line)
        if found is not None:
            return Outline(language, language, tuple(found), total, parsed)
    return Outline(language, "regex", tuple(fallback_entries(lines, first_line)), total, parsed)


def names(path_or_language: str, text: str) -> list[str]:
    """The names of the entries of :func:`outline` of ``text`` (same order) that other
    code can refer to (not a test's title), made without reading the signatures and
    docstrings of code definitions."""
    language = language_of(path_or_language)
    if language in LANGUAGES:
        data = _parsed_head(text)[1]
        if not too_deep(data):
            try:
                return code_names(language, data)
            except ImportError:
                pass  # the regex outline's names
    return [entry.name for entry in outline(path_or_language, text).entries]


def referable(made: Outline) -> list[str]:
    """The names of ``made``'s entries that other code can refer to (not a test's title):
    :func:`names` of the text ``made`` outlines, for a caller that has its outline."""
    return [entry.name for entry in made.entries if entry.kind not in TESTS]


def _parsed_head(text: str) -> tuple[str, bytes]:
    """The part of ``text`` an outline looks at (at most :data:`MAX_PARSE_BYTES`, cut at
    a line end) and its UTF-8 bytes as parsed (:func:`parse_cap`)."""
    head = text[:MAX_PARSE_BYTES]
    if len(head) < len(text):
        head = head[: head.rfind("\n") + 1] or head
    return head, parse_cap(head.encode("utf-8", "surrogatepass"))
