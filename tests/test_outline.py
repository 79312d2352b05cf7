"""Outlines from real tree-sitter grammars (no mocks), markdown, JSON/TOML/YAML keys, the
regex fallback, the cost bound, and TextNode SUMMARY showing the outline."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagctx import NodeState, TextNode
from dagctx.outline import MAX_PARSE_BYTES, Entry, Outline, names, outline, referable

PY = '''"""Module doc."""
import os


@decorator
def top(a: int,
        b: str = "x") -> bool:
    """Return whether a matches b.

    More text.
    """
    def inner():
        pass
    return True


class Store(Base):
    \'\'\'A key-value store.\'\'\'

    def get(self, key):
        # no docstring
        return key

    class Meta:
        pass


if TYPE_CHECKING:
    def typed() -> None: ...
'''
JS = """// Utilities for carts.
import x from "y";

/**
 * A shopping cart.
 */
export class Cart extends Base {
  constructor(items) {
    super();
  }

  // Sum of the prices.
  total() {
    return this.items.reduce((a, b) => a + b.price, 0);
  }
}

export function add(a, b) {
  return a + b;
}

const helper = (x) => {
  const nested = () => 1;
  return x;
};

export const LIMIT = 10;

describe("x", () => {
  const notShown = () => 2;
});
"""
TS = """/** A user. */
export interface User {
  id: number;
  greet(name: string): string;
}

export type Id = string | number;

enum Color { Red, Green }

export abstract class Repo<T> implements Store<T> {
  abstract find(id: Id): T;
  save(item: T): void {}
}

namespace Util {
  export function clamp(x: number): number { return x; }
}

export const fetchUser = async (id: Id): Promise<User> => {
  return { id } as User;
};
"""
TSX = """import React from "react";

/** The page header. */
export function Header({ title }: { title: string }) {
  return <h1>{title}</h1>;
}

export const Footer = () => <footer />;
"""
GO = """package store

import "errors"

// Store keeps values by key.
type Store struct {
	items map[string]int
}

// Getter reads values.
type Getter interface {
	Get(key string) (int, error)
}

// New makes an empty store.
func New() *Store {
	return &Store{items: map[string]int{}}
}

// Get returns the value of key.
func (s *Store) Get(key string) (int, error) {
	v, ok := s.items[key]
	if !ok {
		return 0, errors.New("missing")
	}
	return v, nil
}
"""
RUST = """use std::fmt;

/// A point in the plane.
#[derive(Debug, Clone)]
pub struct Point {
    x: f64,
    y: f64,
}

/// Shapes with an area.
pub trait Shape {
    fn area(&self) -> f64;
}

pub enum Kind { Circle, Square }

impl Shape for Point {
    /// A point has no area.
    fn area(&self) -> f64 {
        0.0
    }
}

mod geometry {
    pub fn distance(a: &Point, b: &Point) -> f64 {
        ((a.x - b.x).powi(2) + (a.y - b.y).powi(2)).sqrt()
    }
}
"""
JAVA = """package shop;

import java.util.List;

/**
 * An order of items.
 */
@Entity
public class Order implements Comparable<Order> {
    private final List<Item> items;

    /** Makes an empty order. */
    public Order() {
        this.items = new ArrayList<>();
    }

    @Override
    public int compareTo(Order other) {
        return 0;
    }

    interface Visitor {
        void visit(Item item);
    }
}
"""
C = """#include <stdio.h>

/* A growable buffer. */
struct buffer {
    char *data;
    size_t len;
};

typedef struct { int x; } point;

/* Append n bytes. */
int buffer_append(struct buffer *b,
                  const char *src, size_t n);

static char *
buffer_take(struct buffer *b)
{
    return b->data;
}
"""
CPP = """#include <string>

namespace geo {

// A named shape.
template <typename T>
class Shape : public Base {
 public:
  virtual double area() const;
  std::string name() const { return name_; }
 private:
  std::string name_;
};

double Shape<int>::area() const { return 0; }

}  // namespace geo

struct Pair { int a; int b; };
"""
RUBY = """require "json"

# Tools for accounts.
module Billing
  # An invoice.
  class Invoice < Base
    # The total in cents.
    def total(tax = 0)
      @lines.sum + tax
    end

    def self.load(path)
      new
    end
  end
end
"""
CSHARP = """using System;

namespace Shop.Orders
{
    /// <summary>An order.</summary>
    [Serializable]
    public class Order : IOrder
    {
        public int Count { get; set; }

        /// <summary>
        /// Makes an order.
        /// </summary>
        public Order(int count) { Count = count; }

        public void Add(Item item) { }
    }

    public interface IOrder
    {
        void Add(Item item);
    }
}
"""
PHP = """<?php
namespace App\\Models;

/**
 * A user of the site.
 */
class User extends Model implements Auth
{
    // The display name.
    public function name(): string
    {
        return $this->name;
    }
}

interface Auth {}

function helper(int $a): int
{
    return $a;
}
"""


def shape(o: Outline) -> list[tuple[str, str, int, int, int]]:
    """(name, kind, start, end, depth) of each entry."""
    return [(e.name, e.kind, e.start, e.end, e.depth) for e in o.entries]


def by_name(o: Outline, name: str) -> Entry:
    return next(e for e in o.entries if e.name == name)


class TestFileDoc:
    """The first line of what a file says of itself, where its language has a convention."""

    def test_python_module_docstring_after_comments(self) -> None:
        text = '#!/usr/bin/env python\n# coding: utf-8\n"""\n  Read and write the store.\n"""\n'
        assert outline("s.py", text + "def f():\n    pass\n").doc == "Read and write the store."
        assert outline("s.py", "import os\n'Not a docstring.'\ndef f():\n    pass\n").doc == ""

    def test_go_package_comment_right_above_package(self) -> None:
        text = (
            "// Copyright 2020 A.\n\n// Package cobra builds commands.\n// More.\npackage cobra\n"
        )
        assert outline("c.go", text + "func A() {}\n").doc == "Package cobra builds commands."
        detached = "// Copyright 2020 A.\n\n// Commands like git.\n\npackage cobra\n"
        assert outline("c.go", detached).doc == ""  # a blank line: not the package's

    def test_rust_inner_doc_comments(self) -> None:
        text = "// SPDX: MIT\n//! Fast line search.\n//! More.\nuse std::io;\nfn main() {}\n"
        assert outline("lib.rs", text).doc == "Fast line search."
        assert outline("lib.rs", "/// Outer doc.\nfn main() {}\n").doc == ""

    def test_languages_whose_leading_comment_is_often_a_license(self) -> None:
        text = "/**\n * Express: a web framework.\n */\nfunction app() {}\n"
        assert outline("app.js", text).doc == ""


class TestGrammars:
    def test_python(self) -> None:
        o = outline("pkg/store.py", PY)
        assert o.source == "tree-sitter" and o.language == "python"
        assert shape(o) == [
            ("top", "function", 5, 14, 0),  # from the decorator; inner() is not outlined
            ("Store", "class", 17, 25, 0),
            ("get", "method", 20, 22, 1),
            ("Meta", "class", 24, 25, 1),
            ("typed", "function", 29, 29, 0),  # under `if TYPE_CHECKING:`
        ]
        top = by_name(o, "top")
        assert top.signature == 'def top(a: int, b: str = "x") -> bool:'
        assert top.doc == "Return whether a matches b."
        assert by_name(o, "Store").doc == "A key-value store."
        assert by_name(o, "get").parent == 1 and by_name(o, "get").doc == ""  # a comment inside
        assert o.doc == "Module doc."
        assert o.render()[:4] == [
            '"Module doc."',  # what the module says of itself first
            'def top(a: int, b: str = "x") -> bool:  [L5-14]  "Return whether a matches b."',
            'class Store(Base):  [L17-25]  "A key-value store."',
            "  def get(self, key):  [L20-22]",
        ]

    def test_javascript(self) -> None:
        o = outline("cart.js", JS)
        assert shape(o) == [
            ("Cart", "class", 7, 16, 0),
            ("constructor", "method", 8, 10, 1),
            ("total", "method", 13, 15, 1),
            ("add", "function", 18, 20, 0),
            ("helper", "function", 22, 25, 0),  # nested arrows and callbacks left out
            ("LIMIT", "const", 27, 27, 0),
            ("x", "suite", 29, 31, 0),  # a test suite; the arrow in its callback left out
        ]
        assert by_name(o, "Cart").signature == "export class Cart extends Base"
        assert by_name(o, "Cart").doc == "A shopping cart."
        assert by_name(o, "total").doc == "Sum of the prices."
        assert by_name(o, "helper").signature == "const helper = (x) =>"

    def test_a_jsdoc_block_one_blank_line_above_is_the_doc(self) -> None:
        # express's style: a blank line between each JSDoc block and its function; a plain
        # comment or a line comment that far above is not a doc
        text = (
            "/**\n * Module dependencies.\n */\n\nvar send = require('send');\n\n"
            "/**\n * Send a response.\n *\n * @public\n */\n\n"
            "res.send = function send(body) {\n  return body;\n};\n\n"
            "/* a section */\n\nfunction json(obj) {\n  return obj;\n}\n\n"
            "// a note\n\nfunction text(obj) {\n  return obj;\n}\n\n"
            "/**\n * Far above.\n */\n\n\nfunction far(obj) {\n  return obj;\n}\n"
        )
        o = outline("lib/response.js", text)
        assert [(e.name, e.doc) for e in o.entries] == [
            ("send", "Send a response."),
            ("json", ""),
            ("text", ""),
            ("far", ""),
        ]

    def test_functions_assigned_to_properties_and_names(self) -> None:
        """CommonJS style (express's ``res.redirect = function redirect(url) {``): each
        top-level function assigned to a property or a name is a definition, named by
        what it is assigned to; assignments inside functions and of other values are not."""
        text = (
            "var res = Object.create(http.ServerResponse.prototype);\n"
            "module.exports = res;\n\n"
            "// Redirect to the given url.\n"
            "res.redirect = function redirect(url) {\n"
            "  this.inner = function () {};\n"
            "  this.location(url);\n"
            "};\n\n"
            "Router.prototype.route = (path) => new Route(path);\n"
            "exports = module.exports = createApplication;\n"
            "handler = async function (req) {\n  return req;\n};\n"
        )
        o = outline("lib/response.js", text)
        assert shape(o) == [
            ("redirect", "function", 5, 8, 0),
            ("route", "function", 10, 10, 0),
            ("handler", "function", 12, 14, 0),
        ]
        assert by_name(o, "redirect").signature == "res.redirect = function redirect(url)"
        assert by_name(o, "redirect").doc == "Redirect to the given url."
        assert by_name(o, "route").signature == "Router.prototype.route = (path) =>"
        assert names("lib/response.js", text) == ["redirect", "route", "handler"]

    def test_javascript_test_suites(self) -> None:
        """A mocha / jest test file (express's test/*.js) outlines as its suites and tests,
        nested, each with its title, with the functions a suite defines; other calls with
        a callback and what the tests' callbacks hold are not outlined."""
        text = (
            "var request = require('supertest');\n\n"
            "describe('res.redirect(url)', function () {\n"
            "  // the default status\n"
            "  it('should default to a 302 redirect', function (done) {\n"
            "    app.use(function (req, res) { res.redirect('http://x'); });\n"
            "    done();\n"
            "  })\n\n"
            "  function helper() {\n    return 1;\n  }\n\n"
            "  context(`when the url is absolute`, () => {\n"
            '    test("it\'s encoded", async () => { await helper(); })\n'
            "  })\n"
            "})\n\n"
            "app.get('/', function (req, res) { res.end(); });\n"
        )
        o = outline("test/res.redirect.js", text)
        assert shape(o) == [
            ("res.redirect(url)", "suite", 3, 17, 0),
            ("should default to a 302 redirect", "test", 5, 8, 1),
            ("helper", "function", 10, 12, 1),  # a function the suite defines
            ("when the url is absolute", "suite", 14, 16, 1),
            ("it's encoded", "test", 15, 15, 2),
        ]
        assert [e.signature for e in o.entries] == [
            "describe('res.redirect(url)')",
            "it('should default to a 302 redirect')",
            "function helper()",
            "context('when the url is absolute')",
            'test("it\'s encoded")',
        ]
        assert by_name(o, "should default to a 302 redirect").doc == "the default status"
        ts = outline("spec/cart.spec.ts", "describe('Cart', () => {\n  it('adds', () => {})\n})\n")
        assert shape(ts) == [("Cart", "suite", 1, 3, 0), ("adds", "test", 2, 2, 1)]

    def test_typescript(self) -> None:
        o = outline("repo.ts", TS)
        assert shape(o) == [
            ("User", "interface", 2, 5, 0),
            ("greet", "method", 4, 4, 1),
            ("Id", "type", 7, 7, 0),
            ("Color", "enum", 9, 9, 0),
            ("Repo", "class", 11, 14, 0),
            ("find", "method", 12, 12, 1),
            ("save", "method", 13, 13, 1),
            ("Util", "module", 16, 18, 0),
            ("clamp", "function", 17, 17, 1),
            ("fetchUser", "function", 20, 22, 0),
        ]
        assert by_name(o, "User").doc == "A user."
        assert by_name(o, "Repo").signature == ("export abstract class Repo<T> implements Store<T>")
        assert by_name(o, "fetchUser").signature == (
            "export const fetchUser = async (id: Id): Promise<User> =>"
        )

    def test_tsx(self) -> None:
        o = outline("header.tsx", TSX)
        assert shape(o) == [("Header", "function", 4, 6, 0), ("Footer", "function", 8, 8, 0)]
        assert by_name(o, "Header").doc == "The page header."

    def test_go(self) -> None:
        o = outline("store.go", GO)
        assert shape(o) == [
            ("Store", "struct", 6, 8, 0),
            ("Getter", "interface", 11, 13, 0),
            ("New", "function", 16, 18, 0),
            ("Get", "method", 21, 27, 0),
        ]
        assert by_name(o, "Store").signature == "type Store struct"
        assert by_name(o, "Store").doc == "Store keeps values by key."
        assert by_name(o, "Get").signature == "func (s *Store) Get(key string) (int, error)"

    def test_rust(self) -> None:
        o = outline("geo.rs", RUST)
        assert shape(o) == [
            ("Point", "struct", 4, 8, 0),  # from its attribute
            ("Shape", "trait", 11, 13, 0),
            ("area", "method", 12, 12, 1),
            ("Kind", "enum", 15, 15, 0),
            ("Shape for Point", "impl", 17, 22, 0),
            ("area", "method", 19, 21, 1),
            ("geometry", "module", 24, 28, 0),
            ("distance", "function", 25, 27, 1),
        ]
        assert by_name(o, "Point").doc == "A point in the plane."
        assert o.entries[5].doc == "A point has no area."
        assert by_name(o, "distance").signature == "pub fn distance(a: &Point, b: &Point) -> f64"

    def test_java(self) -> None:
        o = outline("Order.java", JAVA)
        assert shape(o) == [
            ("Order", "class", 8, 25, 0),
            ("Order", "method", 13, 15, 1),
            ("compareTo", "method", 17, 20, 1),
            ("Visitor", "interface", 22, 24, 1),
            ("visit", "method", 23, 23, 2),
        ]
        assert o.entries[0].signature == "public class Order implements Comparable<Order>"
        assert o.entries[0].doc == "An order of items."
        assert o.entries[1].doc == "Makes an empty order."
        assert by_name(o, "compareTo").signature == "public int compareTo(Order other)"

    def test_c(self) -> None:
        o = outline("buffer.c", C)
        assert shape(o) == [
            ("buffer", "struct", 4, 7, 0),
            ("point", "type", 9, 9, 0),
            ("buffer_append", "function", 12, 13, 0),
            ("buffer_take", "function", 15, 19, 0),
        ]
        assert by_name(o, "buffer").doc == "A growable buffer."
        assert by_name(o, "buffer_append").signature == (
            "int buffer_append(struct buffer *b, const char *src, size_t n);"
        )
        assert by_name(o, "buffer_take").signature == "static char * buffer_take(struct buffer *b)"

    def test_cpp(self) -> None:
        o = outline("shape.cpp", CPP)
        assert shape(o) == [
            ("geo", "module", 3, 17, 0),
            ("Shape", "class", 6, 13, 1),  # from its template line
            ("area", "method", 9, 9, 2),
            ("name", "method", 10, 10, 2),
            ("Shape<int>::area", "function", 15, 15, 1),
            ("Pair", "struct", 19, 19, 0),
        ]
        assert by_name(o, "Shape").doc == "A named shape."
        assert by_name(o, "Shape").signature == "class Shape : public Base"

    def test_ruby(self) -> None:
        o = outline("billing.rb", RUBY)
        assert shape(o) == [
            ("Billing", "module", 4, 16, 0),
            ("Invoice", "class", 6, 15, 1),
            ("total", "method", 8, 10, 2),
            ("load", "method", 12, 14, 2),
        ]
        assert [e.doc for e in o.entries[:3]] == [
            "Tools for accounts.",
            "An invoice.",
            "The total in cents.",
        ]
        assert by_name(o, "load").signature == "def self.load(path)"

    def test_csharp(self) -> None:
        o = outline("Order.cs", CSHARP)
        assert shape(o) == [
            ("Shop.Orders", "module", 3, 23, 0),
            ("Order", "class", 6, 17, 1),  # from its attribute
            ("Order", "method", 14, 14, 2),
            ("Add", "method", 16, 16, 2),
            ("IOrder", "interface", 19, 22, 1),
            ("Add", "method", 21, 21, 2),
        ]
        assert o.entries[1].signature == "public class Order : IOrder"
        assert o.entries[1].doc == "An order."  # XML tags dropped
        assert o.entries[2].doc == "Makes an order."

    def test_php(self) -> None:
        o = outline("User.php", PHP)
        assert shape(o) == [
            ("App\\Models", "module", 2, 2, 0),
            ("User", "class", 7, 14, 0),
            ("name", "method", 10, 13, 1),
            ("Auth", "interface", 16, 16, 0),
            ("helper", "function", 18, 21, 0),
        ]
        assert by_name(o, "User").doc == "A user of the site."
        assert by_name(o, "name").signature == "public function name(): string"

    def test_a_language_name_works_like_a_path(self) -> None:
        assert outline("python", PY) == outline("x.py", PY)

    def test_first_line_shifts_line_numbers(self) -> None:
        o = outline("x.py", PY, first_line=101)
        assert shape(o)[0] == ("top", "function", 105, 114, 0)

    def test_same_text_same_outline(self) -> None:
        assert outline("a.go", GO) == outline("a.go", GO)


class TestOtherFormats:
    def test_markdown_headings_nest_and_skip_code(self) -> None:
        text = "# Title\nintro\n## Install\n```sh\n# not a heading\n```\n### Linux\n## Use\n"
        o = outline("README.md", text)
        assert shape(o) == [
            ("Title", "heading", 1, 8, 0),
            ("Install", "heading", 3, 7, 1),
            ("Linux", "heading", 7, 7, 2),
            ("Use", "heading", 8, 8, 1),
        ]
        assert o.render()[1] == "  ## Install  [L3-7]"

    def test_markdown_setext_headings_outside_front_matter_tables_and_lists(self) -> None:
        text = (
            "---\ntitle: page\n---\nTitle\n=====\n\nUsage\n-----\n\n| a |\n|---|\n\n"
            "- item\n---\n\ntext\nmore text\n---\n\n## Last\n"
        )
        o = outline("doc.md", text)
        assert shape(o) == [
            ("Title", "heading", 4, 20, 0),
            ("Usage", "heading", 7, 19, 1),
            ("Last", "heading", 20, 20, 1),
        ]
        assert o.render()[1] == "  ## Usage  [L7-19]"

    def test_rst_section_titles_nest_by_the_order_of_their_styles(self) -> None:
        text = (
            "=====\nGuide\n=====\n\nIntro\n\nInstall\n-------\n\n::\n\n    code\n"
            "    ----\n\nLinux\n~~~~~\n\n----------\n\nUse\n---\n\nnot a title.\n"
            "function or CLI command.\n"
        )
        o = outline("docs/guide.rst", text)
        assert o.source == "rst"
        assert shape(o) == [
            ("Guide", "heading", 1, 24, 0),
            ("Install", "heading", 7, 19, 1),
            ("Linux", "heading", 15, 19, 2),
            ("Use", "heading", 20, 24, 1),
        ]
        assert o.render()[:2] == ["Guide  [L1-24]", "  Install  [L7-19]"]

    def test_json_top_level_keys(self) -> None:
        text = (
            '{\n  "name": "app",\n  "scripts": {\n    "name": "nested"\n  },\n'
            '  "files": [1, 2]\n}\n'
        )
        o = outline("package.json", text)
        assert o.source == "json"
        assert shape(o) == [
            ("name", "key", 2, 2, 0),
            ("scripts", "key", 3, 5, 0),
            ("files", "key", 6, 7, 0),
        ]
        assert [e.signature for e in o.entries] == [
            '"name": "app"',
            '"scripts": {…1 keys}',
            '"files": […2 items]',
        ]

    def test_toml_top_level_keys_and_tables(self) -> None:
        text = 'title = "x"\n\n[tool.ruff]\nline-length = 100\n\n[[bin]]\nname = "a"\n'
        o = outline("pyproject.toml", text)
        assert o.source == "toml"
        assert shape(o) == [
            ("title", "key", 1, 2, 0),
            ("tool", "key", 3, 5, 0),
            ("bin", "key", 6, 7, 0),
        ]
        assert [e.signature for e in o.entries] == ['title = "x"', "[tool] {…1 keys}", "[[bin]] ×1"]

    def test_yaml_top_level_keys(self) -> None:
        text = "# CI\nname: build\non:\n  push: {}\nscript: |\n  echo: not a key\nlast: 1\n"
        o = outline("ci.yml", text)
        assert o.source == "yaml"
        assert [(e.name, e.start) for e in o.entries] == [
            ("name", 2), ("on", 3), ("script", 5), ("last", 7),
        ]  # fmt: skip

    def test_broken_json_falls_back_to_the_regex(self) -> None:
        o = outline("x.json", '{"a": \n')
        assert o.source == "regex" and o.entries == ()

    def test_unknown_language_uses_the_regex_fallback(self) -> None:
        text = "intro\nfunction go() {\n  x\n}\nclass Thing\n"
        o = outline("script.lua", text)
        assert o.source == "regex" and o.language == ""
        assert [(e.signature, e.start) for e in o.entries] == [
            ("function go() {", 2),
            ("class Thing", 5),
        ]


class TestNames:
    @pytest.mark.parametrize(
        ("path", "text"),
        [
            ("x.py", PY), ("x.js", JS), ("x.ts", TS), ("x.tsx", TSX), ("x.go", GO),
            ("x.rs", RUST), ("x.java", JAVA), ("x.c", C), ("x.cpp", CPP), ("x.rb", RUBY),
            ("x.cs", CSHARP), ("x.php", PHP), ("x.md", "# a\n## b\n"), ("x.txt", "def f():"),
            ("deep.py", "(" * 600 + "\ndef f(): pass\n"),
        ],
    )  # fmt: skip
    def test_names_are_the_outlines_entries_names(self, path: str, text: str) -> None:
        """What the reference graph reads: the outline's names but for tests' titles
        (JS has a suite), made without signatures and docstrings (the regex outline's
        where the parser is not used)."""
        made = outline(path, text)
        entries = made.entries
        expected = [e.name for e in entries if e.kind not in ("suite", "test")]
        assert len(expected) == len(entries) - (path == "x.js")
        assert names(path, text) == expected and expected
        assert referable(made) == expected  # a changed file's names, from its outline

    @settings(max_examples=150, deadline=None)
    @given(st.text(st.sampled_from("def class x_(): \n\t'\"#{}[]A"), max_size=120))
    def test_names_of_any_python_text(self, text: str) -> None:
        made = outline("x.py", text)
        assert names("x.py", text) == [e.name for e in made.entries] == referable(made)

    @settings(max_examples=200, deadline=None)
    @given(st.text(st.sampled_from("Ab =-~#|>\n\n"), max_size=160))
    @pytest.mark.parametrize("path", ["x.md", "x.rst"])
    def test_headings_of_any_text_are_well_formed_sections(self, path: str, text: str) -> None:
        """Markdown and reStructuredText titles from any text: in file order, each section
        inside the file and inside its parent's, depth one more than the parent's."""
        o = outline(path, text)
        entries = o.entries
        assert [e.start for e in entries] == sorted({e.start for e in entries})
        for e in entries:
            assert 1 <= e.start <= e.end <= max(o.lines, 1)
            if e.parent is not None:
                up = entries[e.parent]
                assert up.start < e.start and e.end <= up.end and e.depth == up.depth + 1


class TestCost:
    def test_a_huge_file_is_parsed_only_up_to_the_cap(self) -> None:
        text = "def f(x):\n    return x\n" * 1_000_000  # 23 MB
        started = time.process_time()
        o = outline("big.py", text)
        assert time.process_time() - started < 2.0
        assert o.lines == 2_000_000 and o.parsed_lines < o.lines
        assert len(o.entries) == (o.parsed_lines + 1) // 2 <= MAX_PARSE_BYTES // 20
        assert o.render()[-1] == f"[outline of lines 1-{o.parsed_lines} only, of 2000000]"
        assert o.render()[-2].startswith("[… ") and len(o.render()) == 82

    def test_many_headings_are_linear(self) -> None:
        started = time.process_time()
        o = outline("x.md", "# a\n## b\n" * 50_000)
        assert time.process_time() - started < 2.0 and o.entries[-1].depth == 1

    @pytest.mark.parametrize("path", ["x.py", "x.c", "x.json", "x.md", "x.yaml", "x.txt"])
    def test_pathological_input_is_bounded(self, path: str) -> None:
        text = "(" * 3_000_000 + "\x00\xff{[" * 100_000 + "\n" + "x" * 1_000_000
        started = time.process_time()
        o = outline(path, text)
        assert time.process_time() - started < 2.0
        assert o.parsed_lines <= 1


class TestTextNodeSummary:
    def test_summary_is_the_real_outline(self, tmp_path: Path) -> None:
        (tmp_path / "store.go").write_text(GO)
        node = TextNode("store.go", root=tmp_path)
        assert node.render(NodeState.SUMMARY).splitlines() == [
            "### store.go (#)".replace("#)", f"#{node.id})"),
            "(27 lines; outline)",
            "```",  # fenced: outline lines quote the file (issue 14 item 12)
            'type Store struct  [L6-8]  "Store keeps values by key."',
            'type Getter interface  [L11-13]  "Getter reads values."',
            'func New() *Store  [L16-18]  "New makes an empty store."',
            "func (s *Store) Get(key string) (int, error)  [L21-27]"
            '  "Get returns the value of key."',
            "```",
        ]

    def test_a_line_range_numbers_lines_in_the_file(self, tmp_path: Path) -> None:
        (tmp_path / "store.py").write_text(PY)
        node = TextNode("store.py", root=tmp_path, start_line=17, end_line=25)
        assert 'class Store(Base):  [L17-25]  "A key-value store."' in node.render(
            NodeState.SUMMARY
        )

    def test_no_definitions_shows_the_first_lines(self, tmp_path: Path) -> None:
        (tmp_path / "notes.txt").write_text("a\nb\nc\nd\ne\nf\n")
        summary = TextNode("notes.txt", root=tmp_path).render(NodeState.SUMMARY)
        # fenced: the first lines quote the file (issue 14 item 12)
        lines = ["(6 lines; first 5)", "```", "a", "b", "c", "d", "e", "```"]
        assert summary.splitlines()[1:] == lines

    def test_the_outline_is_made_once_per_content(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import dagctx.nodes.text as text_module

        calls: list[str] = []

        def counting(path: str, text: str, *, first_line: int = 1) -> Outline:
            calls.append(path)
            return outline(path, text, first_line=first_line)

        monkeypatch.setattr(text_module, "outline", counting)
        path = tmp_path / "m.py"
        path.write_text("def a():\n    pass\n")
        node = TextNode("m.py", root=tmp_path)
        assert calls == []  # nothing parsed until SUMMARY is rendered
        for _ in range(3):
            node.render(NodeState.SUMMARY)
            node.recompute()
        assert len(calls) == 1
        path.write_text("def a():\n    pass\n\n\ndef b():\n    pass\n")
        assert node.recompute()
        assert len(calls) == 1  # a changed file is parsed only when SUMMARY is rendered
        assert "def b():  [L5-6]" in node.render(NodeState.SUMMARY)
        assert len(calls) == 2

    def test_outlines_are_kept_for_the_most_recent_contents_only(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import dagctx.nodes.text as text_module

        calls: list[str] = []

        def counting(path: str, text: str, *, first_line: int = 1) -> Outline:
            calls.append(path)
            return outline(path, text, first_line=first_line)

        monkeypatch.setattr(text_module, "outline", counting)
        monkeypatch.setattr(text_module, "OUTLINES_KEPT", 4)
        monkeypatch.setattr(text_module, "_outlines", {})
        monkeypatch.setattr(text_module, "MADE_KEPT", 4)
        monkeypatch.setattr(text_module, "_made", {})
        nodes = []
        for k in range(10):
            (tmp_path / f"m{k}.py").write_text(f"def f{k}():\n    pass\n")
            nodes.append(TextNode(f"m{k}.py", root=tmp_path))
        first = [node.render(NodeState.SUMMARY) for node in nodes]
        assert len(calls) == 10 and len(text_module._outlines) == 4
        assert nodes[9].render(NodeState.SUMMARY) == first[9]
        assert len(calls) == 10  # among the most recent: not parsed again
        assert nodes[0].render(NodeState.SUMMARY) == first[0]
        assert calls[10:] == ["m0.py"]  # not held by the node: parsed again, same text


def _big_module(classes: int, methods: int) -> str:
    """``classes`` classes of ``methods`` one-line methods; class c spans lines
    1 + c * (2 * methods + 4) to its last method's line."""
    parts = []
    for c in range(classes):
        parts.append(f"class Thing{c}:\n    '''Thing number {c}.'''\n")
        for m in range(methods):
            parts.append(
                f"    def method_{c}_{m}(self, value: int) -> int:\n        return value\n"
            )
        parts.append("\n\n")
    return "".join(parts)


def _entry_chars(lines: list[str]) -> int:
    return sum(len(x) + 1 for x in lines if "more definition" not in x)


class TestCompactOutline:
    def test_an_outline_that_fits_is_shown_whole(self) -> None:
        o = outline("store.go", GO)
        assert o.compact(10_000) == o.render()

    def test_nested_entries_drop_their_doc_line(self) -> None:
        o = outline("x.py", PY.replace("# no docstring", '"""Read key."""'))
        assert o.entries[2].doc == "Read key."
        full, compact = o.render(), o.compact(10_000)
        assert full[0] == compact[0] == '"Module doc."'
        assert len(full) == len(compact)
        for entry, long, short in zip(o.entries, full[1:], compact[1:], strict=True):
            if entry.depth == 0:
                assert short == long
            else:
                assert short == long.split(f'  "{entry.doc}"')[0] and '"' not in short

    def test_the_files_own_doc_line_comes_first_while_it_leaves_room(self) -> None:
        o = outline("m.py", '"""Sessions: open, tick, save."""\n' + _big_module(4, 10))
        assert o.compact(400)[0] == '"Sessions: open, tick, save."'
        assert _entry_chars(o.compact(400)) <= 400
        # no room for the doc line and a marker of all entries: the marker alone
        assert not any(line.startswith('"') for line in o.compact(40))
        assert outline("c.py", '"""Constants."""\nA = 1\n').render() == []  # no entries

    def test_top_level_first_then_methods_with_markers(self) -> None:
        o = outline("m.py", _big_module(4, 10))
        lines = o.compact(400)
        assert _entry_chars(lines) <= 400
        classes = [x for x in lines if x.startswith("class ")]
        assert len(classes) == 4  # every class before any method
        markers = [x for x in lines if "more definition" in x]
        assert markers and all(x.startswith("  … ") for x in markers)
        shown = sum(1 for x in lines if x.startswith("  def "))
        assert shown + sum(int(x.split()[1]) for x in markers) == 40
        # the last class's methods are all left out: one marker with their line range
        last = [e for e in o.entries if e.name.startswith("method_3_")]
        assert lines[-1] == f"  … 10 more definitions (lines {last[0].start}-{last[-1].end})"

    def test_a_run_of_left_out_functions_is_one_marker(self) -> None:
        text = "".join(f"def f{i}(a, b):\n    return a\n\n" for i in range(100))
        lines = outline("m.py", text).compact(200)
        shown = len(lines) - 1
        assert all(x.startswith(f"def f{i}(a, b):") for i, x in enumerate(lines[:-1]))
        assert lines[-1] == f"… {100 - shown} more definitions (lines {3 * shown + 1}-299)"

    @given(classes=st.integers(0, 12), methods=st.integers(0, 12), cap=st.integers(0, 2000))
    @settings(max_examples=40, deadline=None)
    def test_bounded_complete_and_deterministic(self, classes: int, methods: int, cap: int) -> None:
        o = outline("m.py", _big_module(classes, methods))
        lines = o.compact(cap)
        assert lines == o.compact(cap) and _entry_chars(lines) <= cap
        markers = [x for x in lines if "more definition" in x]
        assert len(lines) - len(markers) + sum(int(x.split()[1]) for x in markers) == len(o.entries)

    @given(classes=st.integers(0, 12), methods=st.integers(0, 12), cap=st.integers(0, 2000))
    @settings(max_examples=40, deadline=None)
    def test_markers_count_toward_the_cap(self, classes: int, methods: int, cap: int) -> None:
        """Entry lines and markers together stay within the cap, unless not even the one
        marker of every entry fits (then that marker alone)."""
        o = outline("m.py", _big_module(classes, methods))
        lines = o.compact(cap)
        total = sum(len(x) + 1 for x in lines)
        assert total <= cap or (len(lines) == 1 and lines[0].startswith("… "))

    def test_a_changelog_outline_is_not_doubled_by_its_markers(self) -> None:
        text = "# Changes\n\n" + "".join(
            f"## Version 1.{v}\n\n" + "".join(f"### Part {p}\n\nx\n\n" for p in range(4))
            for v in range(60)
        )
        lines = outline("CHANGES.md", text).compact(480)
        assert sum(len(x) + 1 for x in lines) <= 480  # was 1,250: a marker under each version
        assert lines[0] == "# Changes  [L1-1082]" and lines[1].startswith("  ## Version 1.0  ")

    def test_text_node_summary_is_compact_tests_tersest(self, tmp_path: Path) -> None:
        (tmp_path / "tests").mkdir()
        source = _big_module(6, 12)
        (tmp_path / "big.py").write_text(source)
        (tmp_path / "tests" / "test_big.py").write_text(source)
        src = TextNode("big.py", root=tmp_path).render(NodeState.SUMMARY)
        test = TextNode("tests/test_big.py", root=tmp_path).render(NodeState.SUMMARY)
        assert "more definitions" in src and len(test) < len(src) < 1200


class TestFocusedOutline:
    """An outline under a focus shows the definitions matching it first, with the ones
    they are nested in (Outline.focused; TextNode.focused_summary picks them as the
    focused cut matches them)."""

    def test_a_late_nested_entry_is_kept_with_its_class_line(self) -> None:
        o = outline("m.py", _big_module(6, 12))
        wanted = next(k for k, e in enumerate(o.entries) if e.name == "method_5_10")
        method, owner = o.entries[wanted], o.entries[o.entries[wanted].parent or 0]
        line = f"  def method_5_10(self, value: int) -> int:  [L{method.start}-{method.end}]"
        assert line not in o.compact(400)
        lines = o.focused(400, [wanted])
        assert lines is not None and sum(len(x) + 1 for x in lines) <= 400
        at = lines.index(line)
        assert f'class Thing5:  [L{owner.start}-{owner.end}]  "Thing number 5."' in lines[:at]
        # the methods of Thing5 around it are marked as left out, by their line ranges
        first, before, after = (o.entries[wanted + d] for d in (-10, -1, 1))
        assert lines[at - 1] == f"  … 10 more definitions (lines {first.start}-{before.end})"
        assert lines[at + 1] == f"  … 1 more definition (lines {after.start}-{after.end})"
        shown = sum(1 for x in lines if "more definition" not in x)
        markers = [x for x in lines if "more definition" in x]
        assert shown + sum(int(x.split()[1]) for x in markers) == len(o.entries)

    def test_entries_the_outline_shows_anyway_leave_it_as_it_is(self) -> None:
        o = outline("m.py", _big_module(6, 12))
        first_class = 0
        assert o.focused(400, [first_class]) is None
        assert o.focused(400, []) is None
        assert outline("c.py", "A = 1\n").focused(400, [0]) is None  # no entries

    def test_the_best_entries_come_first_while_they_fit(self) -> None:
        o = outline("m.py", _big_module(6, 12))
        names = {e.name: k for k, e in enumerate(o.entries)}
        wanted = [names["method_5_11"], names["method_4_9"], names["method_3_7"]]
        lines = o.focused(300, wanted)
        assert lines is not None
        text = "\n".join(lines)
        assert "method_5_11" in text and "class Thing5" in text
        assert "method_4_9" not in text  # no room left for the next one and its class
        assert o.focused(200, wanted) is None  # not even the best one fits with its markers

    @given(
        classes=st.integers(1, 8),
        methods=st.integers(0, 12),
        cap=st.integers(0, 1200),
        picks=st.lists(st.integers(0, 200), max_size=5),
    )
    @settings(max_examples=60, deadline=None)
    def test_bounded_complete_and_the_same_where_nothing_changes(
        self, classes: int, methods: int, cap: int, picks: list[int]
    ) -> None:
        o = outline("m.py", _big_module(classes, methods))
        wanted = [p % len(o.entries) for p in picks]
        lines = o.focused(cap, wanted)
        if lines is None:
            return
        assert lines != o.compact(cap)
        assert any(o.entries[k].signature in "\n".join(lines) for k in wanted)
        total = sum(len(x) + 1 for x in lines)
        assert total <= cap or (len(lines) == 1 and lines[0].startswith("… "))
        markers = [x for x in lines if "more definition" in x]
        assert len(lines) - len(markers) + sum(int(x.split()[1]) for x in markers) == len(o.entries)


def _three_line_methods(classes: int, methods: int) -> str:
    """:func:`_big_module` with methods of three lines (a focused cut's parts)."""
    return _big_module(classes, methods).replace(
        "        return value\n", "        value += 1\n        return value\n"
    )


class TestFocusedSummary:
    def test_a_focus_naming_a_late_method_shows_it_with_its_class(self, tmp_path: Path) -> None:
        (tmp_path / "big.py").write_text(_three_line_methods(6, 12))
        node = TextNode("big.py", root=tmp_path)
        plain = node.render(NodeState.SUMMARY)
        assert "method_5_10" not in plain
        focused = node.focused_summary("fix method_5_10 returning the wrong value")
        assert focused is not None
        assert focused.split("\n")[:2] == plain.split("\n")[:2]  # same header
        assert "\nclass Thing5:  [L" in focused and "\n  def method_5_10(self" in focused
        assert focused.index("class Thing5") < focused.index("def method_5_10")
        assert len(focused) < 1200 and "more definitions" in focused

    def test_no_match_or_a_match_shown_anyway_is_the_outline_without_a_focus(
        self, tmp_path: Path
    ) -> None:
        (tmp_path / "big.py").write_text(_three_line_methods(6, 12))
        node = TextNode("big.py", root=tmp_path)
        assert node.focused_summary("unrelated words entirely") is None
        assert node.focused_summary("Thing0 method_0_0") is None  # shown without a focus
        (tmp_path / "small.py").write_text("def method_5_10(x):\n    x += 1\n    return x\n")
        assert TextNode("small.py", root=tmp_path).focused_summary("method_5_10") is None
