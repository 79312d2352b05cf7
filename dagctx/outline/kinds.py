"""What kind of file a path names (source, docs, tests, ...), and how long its outline may be.

Owns :func:`file_kind` (read by the relevance ranking) and :func:`outline_chars` (read by
a text node's SUMMARY). Decided from the path alone. Imports nothing from dagctx.
"""

from __future__ import annotations

import functools
import re

SOURCE, DOCS, OTHER, TESTS, FIXTURES = 4, 3, 2, 1, 0
#: Characters of entry lines an outline shows (:meth:`~dagctx.outline.Outline.compact`),
#: by file kind: about 200 tokens for source, less where the definitions matter less.
OUTLINE_CHARS = {SOURCE: 800, DOCS: 480, OTHER: 480, TESTS: 240, FIXTURES: 160}

_TEST_DIRS = frozenset({"test", "tests", "testsuite", "spec", "specs", "__tests__", "testing"})
#: A directory whose name is words joined by ``-`` or ``_``, one of them one of these, holds
#: tests too: ``test-utils``, ``runtime_tests``, ``e2e-tests``, gson's ``test-shrinker``.
_TEST_WORDS = frozenset({"test", "tests", "testing"})
_WORD_JOINS = re.compile(r"[-_]")
#: Generated output (``javadoc``/``javadocs``/``apidocs``: API docs rendered from the code's
#: doc comments, which repeat every word of it) counts as fixtures, as built code does.
_FIXTURE_DIRS = frozenset(
    {"fixtures", "fixture", "testdata", "vendor", "node_modules", "dist", "build", "third_party",
     "javadoc", "javadocs", "apidocs"}
)  # fmt: skip
_LOCKFILES = frozenset(
    {"package-lock.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock", "cargo.lock",
     "uv.lock", "go.sum", "gemfile.lock", "composer.lock", "pipfile.lock"}
)  # fmt: skip
_SOURCE = frozenset(
    {".py", ".pyi", ".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".go", ".rs", ".java",
     ".kt", ".c", ".h", ".cc", ".cpp", ".hpp", ".rb", ".cs", ".php", ".swift", ".scala",
     ".sh", ".sql"}
)  # fmt: skip
_DOCS = frozenset({".md", ".rst", ".txt", ".adoc"})
_TEST_NAME = re.compile(r"[._-](test|spec)s?\.")


def file_kind(path: str) -> int:
    """What a file at ``path`` is, by how much it tends to matter to a task: 4 source,
    3 docs, 2 other files, 1 tests, 0 fixtures, vendored code and lockfiles."""
    directory, _, name = path.casefold().rpartition("/")
    dot = name.rfind(".")
    ext = name[dot:] if dot > 0 else ""
    held = _directory_kind(directory)
    if held == FIXTURES or name in _LOCKFILES or name.endswith((".lock", ".min.js", ".map")):
        return FIXTURES
    if held == TESTS or name.startswith("test_") or _TEST_NAME.search(name):
        return TESTS
    if ext in _SOURCE:
        return SOURCE
    return DOCS if ext in _DOCS else OTHER


@functools.lru_cache(maxsize=256)  # files come directory by directory (a walk's order)
def _directory_kind(directory: str) -> int | None:
    """FIXTURES or TESTS when a directory on the (case-folded) path ``directory`` makes
    every file below it one (fixtures first; a test directory by its name or by a word of
    it, :data:`_TEST_WORDS`), else None: asked once per directory while its files are
    asked in a row."""
    dirs = set(directory.split("/"))
    if dirs & _FIXTURE_DIRS:
        return FIXTURES
    if dirs & _TEST_DIRS:
        return TESTS
    joined = (_WORD_JOINS.split(d) for d in dirs if "-" in d or "_" in d)
    return TESTS if any(not _TEST_WORDS.isdisjoint(words) for words in joined) else None


def outline_chars(path: str) -> int:
    """How many characters of entry lines the outline of the file at ``path`` shows."""
    return OUTLINE_CHARS[file_kind(path)]
