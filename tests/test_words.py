"""Splitting text for ranking, the fast way: the same words and names as the plain regexes.

The relevance score splits every file into words and finds the names it defines when a
focus is set; these tests pin the faster paths (an ASCII text split without a regex, the
definition pattern anchored at newlines, a fence that skips the backtick search) to the
plain definitions they replace.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dagctx._quote import fence
from dagctx._words import tokenize, words
from dagctx.projection.relevance import defined_names

# Every ASCII character, a few that are word characters only in Unicode, and blanks.
_CHARS = st.sampled_from([*map(chr, range(128)), "é", "ß", "İ", "\u00a0", "\u2028", "٣"])
_KEYWORDS = ("def", "class", "function", "fn", "func", "struct", "type", "module")
_PIECES = st.sampled_from(
    [*_KEYWORDS, "export ", "pub ", "pub(crate) ", "async ", " ", "\t", "\n", "x", "_y1", "(", ":"]
)
_PLAIN_SYMBOL = re.compile(
    r"^[ \t]*(?:export[ \t]+)?(?:pub(?:\(\w+\))?[ \t]+)?(?:async[ \t]+)?"
    r"(?:def|class|function|fn|func|struct|interface|enum|trait|impl|type|module)[ \t]+"
    r"(\w+)",
    re.MULTILINE,
)


class TestWords:
    @settings(max_examples=400, deadline=None)
    @given(text=st.text(_CHARS, max_size=200))
    @example(text="".join(map(chr, range(128))))
    @example(text="snake_case camelCase\tx1\x0by\x1cz")
    def test_the_runs_of_word_characters_as_the_regex_finds_them(self, text: str) -> None:
        assert words(text) == re.findall(r"\w+", text)
        assert tokenize(text) == re.findall(r"\w+", text.casefold())


class TestDefinedNames:
    @settings(max_examples=400, deadline=None)
    @given(text=st.lists(_PIECES, max_size=40).map("".join))
    @example(text="def first():\n  class Inner:\n\tasync def go(): pass\nexport function f() {}")
    @example(text="  pub(crate) fn run()\nnot def x\n\n    struct S")
    def test_the_names_the_multiline_pattern_finds(self, text: str) -> None:
        assert defined_names(text) == _PLAIN_SYMBOL.findall(text)

    @pytest.mark.parametrize(
        ("line", "name"),
        [
            ("public final class Gson {", "Gson"),
            ("  public static <T> T fromJson(String json, Class<T> classOfT) {", "fromJson"),
            ("  protected synchronized List<String>[] names(int x) {", "names"),
            ("  private static final Map<String, Object> CACHE = new HashMap<>();", None),
            ("  public Gson() {", None),
            ("record Point(int x, int y) {}", "Point"),
            ("func (c *Context) JSON(code int, obj any) {", "JSON"),
            ("func (n *node[T]) insert(path string) {", "insert"),
            ("func New() *Engine {", "New"),
            ("export default class Router {", "Router"),
            ("export abstract class Base {", "Base"),
            ("export const cors = (options?: CORSOptions) => {", "cors"),
            ("const local = 1", None),
            ("pub unsafe fn raw() {", "raw"),
            ("pub const fn new() -> Self {", "new"),
            ("    return foo(x)", None),
            ("    else if (x) {", None),
        ],
    )
    def test_definitions_of_java_go_typescript_and_rust(self, line: str, name: str | None) -> None:
        """Java's and C#'s modifiers, a Go method's receiver, ``export default``, ``export
        const`` and Rust's ``unsafe``/``const`` stand between the line's start and the name
        (before, a Java file defined nothing and a Go method was not seen): the names a
        file defines count more in its match."""
        assert defined_names(f"x = 1\n{line}\n") == ([name] if name else [])


class TestFence:
    @given(body=st.text(st.sampled_from("`a\n "), max_size=30))
    def test_longer_than_any_run_of_backticks_in_the_body(self, body: str) -> None:
        longest = max((len(run) for run in re.findall("`+", body)), default=0)
        marks = "`" * max(3, longest + 1)
        assert fence(body, "py") == f"{marks}py\n{body}\n{marks}"
