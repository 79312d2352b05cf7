"""Source-code outlines from tree-sitter grammars that ship compiled inside their wheels.

Owns the table of languages (grammar module, the query naming each language's
definitions, its comment node types) and turning a parse tree into :class:`Entry` values.
Grammars are imported on first use and work offline. At most :data:`MAX_PARSE_BYTES` of a
text are parsed (cut at a line end), so the cost of one outline is bounded whatever the file.
Imports only :mod:`dagctx.outline.model`; must not import the rest of dagctx.
"""

from __future__ import annotations

import functools
import importlib
import re
from dataclasses import dataclass

import tree_sitter

from dagctx._lines import split_lines
from dagctx.outline.model import DOC_CHARS, SIGNATURE_CHARS, Entry, clip

MAX_PARSE_BYTES = 256 * 1024  # ~80 ms of parsing at worst on this kind of machine
_HEAD_BYTES = 600  # a signature is read from at most this many bytes of its head

# Definitions whose children are outlined (methods in a class, items in a module);
# inside anything else (a function body, a type alias) nothing more is looked for.
# (A "suite" is a JavaScript test suite, ``describe("…", () => …)``; a "test" is its ``it``.)
_CONTAINERS = frozenset(
    {"class", "struct", "interface", "trait", "impl", "module", "enum", "suite"}
)
_CLASSLIKE = _CONTAINERS - {"module", "suite"}
TESTS = frozenset({"suite", "test"})  # kinds that name a test, not a definition
# Nodes around a definition that belong to it: decorators, attributes, export, template.
_WRAPPERS = frozenset({"decorated_definition", "export_statement", "template_declaration"})
_LEADING = frozenset(
    {"decorator", "attribute_list", "attribute_item", "annotation", "marker_annotation"}
)

_JS = """
(class_declaration) @class
(function_declaration) @function
(generator_function_declaration) @function
(method_definition) @method
(program (lexical_declaration
  (variable_declarator value: [(arrow_function) (function_expression)]) @function))
(program (variable_declaration
  (variable_declarator value: [(arrow_function) (function_expression)]) @function))
(program (export_statement (lexical_declaration
  (variable_declarator value: [(arrow_function) (function_expression)]) @function)))
(program (export_statement (lexical_declaration (variable_declarator) @const)))
(program (expression_statement (assignment_expression
  left: [(member_expression) (identifier)]
  right: [(arrow_function) (function_expression)]) @function))
(expression_statement (call_expression function: (identifier) @_call
  arguments: (arguments . [(string) (template_string)] [(arrow_function) (function_expression)]))
  @suite (#match? @_call "^(describe|context|suite)$"))
(expression_statement (call_expression function: (identifier) @_call
  arguments: (arguments . [(string) (template_string)] [(arrow_function) (function_expression)]))
  @test (#match? @_call "^(it|test|specify)$"))
"""
_TS = (
    _JS
    + """
(abstract_class_declaration) @class
(interface_declaration) @interface
(type_alias_declaration) @type
(enum_declaration) @enum
(internal_module) @module
(function_signature) @function
(method_signature) @method
(abstract_method_signature) @method
"""
)
_C = """
(function_definition) @function
(declaration declarator: (function_declarator)) @function
(declaration declarator: (pointer_declarator declarator: (function_declarator))) @function
(struct_specifier name: (_) body: (_)) @struct
(union_specifier name: (_) body: (_)) @struct
(enum_specifier name: (_) body: (_)) @enum
(type_definition declarator: (type_identifier)) @type
"""
_CPP = (
    _C
    + """
(class_specifier name: (_) body: (_)) @class
(namespace_definition) @module
(field_declaration declarator: (function_declarator)) @method
"""
)


@dataclass(frozen=True, slots=True)
class _Spec:
    module: str  # the grammar's Python module
    loader: str  # its function returning the language pointer
    query: str  # capture names are entry kinds
    comments: frozenset[str] = frozenset({"comment"})


_SPECS: dict[str, _Spec] = {
    "python": _Spec(
        "tree_sitter_python",
        "language",
        "(class_definition) @class (function_definition) @function",
    ),
    "javascript": _Spec("tree_sitter_javascript", "language", _JS),
    "typescript": _Spec("tree_sitter_typescript", "language_typescript", _TS),
    "tsx": _Spec("tree_sitter_typescript", "language_tsx", _TS),
    "go": _Spec(
        "tree_sitter_go",
        "language",
        "(function_declaration) @function (method_declaration) @method (type_spec) @type"
        " (type_alias) @type",
    ),
    "rust": _Spec(
        "tree_sitter_rust",
        "language",
        """(struct_item) @struct (union_item) @struct (enum_item) @enum (trait_item) @trait
        (impl_item) @impl (mod_item) @module (type_item) @type (macro_definition) @macro
        (function_item) @function (function_signature_item) @function""",
        frozenset({"line_comment", "block_comment"}),
    ),
    "java": _Spec(
        "tree_sitter_java",
        "language",
        """(class_declaration) @class (record_declaration) @class
        (interface_declaration) @interface (annotation_type_declaration) @interface
        (enum_declaration) @enum (method_declaration) @method
        (constructor_declaration) @method""",
        frozenset({"line_comment", "block_comment"}),
    ),
    "c": _Spec("tree_sitter_c", "language", _C),
    "cpp": _Spec("tree_sitter_cpp", "language", _CPP),
    "ruby": _Spec(
        "tree_sitter_ruby",
        "language",
        """(module) @module (class) @class (singleton_class) @class
        (method) @method (singleton_method) @method""",
    ),
    "csharp": _Spec(
        "tree_sitter_c_sharp",
        "language",
        """(class_declaration) @class (record_declaration) @class
        (struct_declaration) @struct (interface_declaration) @interface
        (enum_declaration) @enum (namespace_declaration) @module
        (file_scoped_namespace_declaration) @module (delegate_declaration) @type
        (method_declaration) @method (constructor_declaration) @method""",
    ),
    "php": _Spec(
        "tree_sitter_php",
        "language_php",
        """(namespace_definition) @module (class_declaration) @class
        (interface_declaration) @interface (trait_declaration) @trait
        (enum_declaration) @enum (function_definition) @function
        (method_declaration) @method""",
    ),
}
_SPECS["jsx"] = _SPECS["javascript"]

LANGUAGES = frozenset(_SPECS)


@functools.cache
def _language(name: str) -> tuple[tree_sitter.Language, tree_sitter.Query]:
    spec = _SPECS[name]
    grammar = getattr(importlib.import_module(spec.module), spec.loader)()
    language = tree_sitter.Language(grammar)
    return language, tree_sitter.Query(language, spec.query)


def parse_cap(data: bytes) -> bytes:
    """``data`` cut to at most :data:`MAX_PARSE_BYTES`, at the end of a line."""
    if len(data) <= MAX_PARSE_BYTES:
        return data
    end = data.rfind(b"\n", 0, MAX_PARSE_BYTES)
    return data[: end + 1] if end >= 0 else data[:MAX_PARSE_BYTES]


_BRACKETS = bytes.maketrans(b"[{]}", b"(())")
_NOT_BRACKETS = bytes(set(range(256)) - set(b"()[]{}"))
MAX_NESTING = 500  # deeper (or more unclosed) brackets than this: the regex outline instead


def too_deep(data: bytes) -> bool:
    """Whether ``data`` nests brackets deeper than :data:`MAX_NESTING`, or leaves more
    than that unclosed (strings and comments counted too).

    tree-sitter parses such text fast, but querying the error-recovery tree of many
    unclosed brackets costs time quadratic in their number (seconds for 20,000). Each
    pass drops the innermost pairs, at C speed, for at most MAX_NESTING passes.
    """
    brackets = data.translate(_BRACKETS, _NOT_BRACKETS)
    for passes in range(MAX_NESTING + 1):
        inner = brackets.replace(b"()", b"")
        if inner == brackets:
            return passes + brackets.count(b"(") > MAX_NESTING
        brackets = inner
    return True


def code_outline(language: str, data: bytes, first_line: int = 1) -> tuple[list[Entry], str]:
    """The definitions in ``data`` (source in ``language``, a key of :data:`LANGUAGES`),
    in source order, nested by containment, line numbers starting at ``first_line``; and
    the first line of what the file says of itself (:func:`_file_doc`), "" if nothing.

    Raises ImportError if the language's grammar wheel is not installed. The caller
    checks :func:`too_deep` first.
    """
    comments = _SPECS[language].comments
    tree = _parse(language, data)
    entries: list[Entry] = []
    for kind, node, parent in _definitions(language, tree):
        anchor = _anchor(node)
        entries.append(
            Entry(
                name=_name(node),
                kind=kind,
                start=anchor.start_point[0] + first_line,
                end=_end_row(node) + first_line,
                signature=_signature(node, data, kind),
                doc=_doc(node, anchor, comments, python=language == "python"),
                depth=entries[parent].depth + 1 if parent is not None else 0,
                parent=parent,
            )
        )
    return entries, _file_doc(language, tree.root_node)


def code_names(language: str, data: bytes) -> list[str]:
    """The names of :func:`code_outline`'s definitions that other code can refer to (same
    order; a JavaScript test suite's or test's title is not one), without reading
    signatures or docstrings. Raises ImportError as it does."""
    tree = _parse(language, data)
    return [_name(node) for kind, node, _ in _definitions(language, tree) if kind not in TESTS]


def _parse(language: str, data: bytes) -> tree_sitter.Tree:
    return tree_sitter.Parser(_language(language)[0]).parse(data)


def _definitions(
    language: str, tree: tree_sitter.Tree
) -> list[tuple[str, tree_sitter.Node, int | None]]:
    """(kind, node, index of the parent definition) of each definition in ``tree``, in
    source order; those inside anything but a container are left out."""
    captures = tree_sitter.QueryCursor(_language(language)[1]).captures(tree.root_node)
    seen: dict[tuple[int, int], tuple[str, tree_sitter.Node]] = {}
    kinds = sorted(k for k in captures if not k.startswith("_"))  # "_call": a predicate's
    for kind in ("function", "method", *(k for k in kinds if k not in ("function", "method"))):
        for node in captures.get(kind, ()):
            seen.setdefault((node.start_byte, node.end_byte), (kind, node))
    found = sorted(seen.values(), key=lambda kn: (kn[1].start_byte, -kn[1].end_byte))
    out: list[tuple[str, tree_sitter.Node, int | None]] = []
    stack: list[tuple[int, int]] = []  # (end byte, index in out) of open containers
    for kind, node in found:
        while stack and stack[-1][0] <= node.start_byte:
            stack.pop()
        parent = stack[-1][1] if stack else None
        if parent is not None and out[parent][0] not in _CONTAINERS:
            continue  # inside a function body or a type alias
        kind = _refine(kind, node, out[parent][0] if parent is not None else None)
        out.append((kind, node, parent))
        stack.append((node.end_byte, len(out) - 1))
    return out


def _refine(kind: str, node: tree_sitter.Node, parent_kind: str | None) -> str:
    """Functions in a class-like definition are methods; a Go type says whether it is a
    struct or an interface."""
    if kind == "function" and parent_kind in _CLASSLIKE:
        return "method"
    if node.type == "type_spec":
        shape = node.child_by_field_name("type")
        if shape is not None and shape.type in ("struct_type", "interface_type"):
            return shape.type.removesuffix("_type")
    return kind


def _anchor(node: tree_sitter.Node) -> tree_sitter.Node:
    """The outermost node that belongs to the definition: its declaration (for a
    variable) or statement (for an assignment), its decorators, export, template, and
    attributes written before it."""
    parent = node.parent
    if parent is not None and (
        node.type in ("variable_declarator", "assignment_expression", "call_expression")
        or (node.type == "type_spec" and parent.named_child_count == 1)
    ):
        node = parent  # Go: the comment is above "type", not the spec
    while node.parent is not None and node.parent.type in _WRAPPERS:
        node = node.parent
    while (prev := node.prev_named_sibling) is not None and prev.type in _LEADING:
        node = prev
    return node


def _end_row(node: tree_sitter.Node) -> int:
    """The 0-based row of the node's last character (a node ending at column 0 of a row
    ends on the row before)."""
    row, column = node.end_point
    return row - 1 if column == 0 and row > node.start_point[0] else row


def _text(node: tree_sitter.Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text else ""


def _name(node: tree_sitter.Node) -> str:
    """The defined name: the ``name`` field, a C declarator's innermost name, an impl's
    ``Trait for Type``, the property (or variable) a JavaScript function is assigned to
    (``redirect`` of ``res.redirect = function …``), a JavaScript test's title."""
    name = node.child_by_field_name("name")
    if name is not None:
        return _text(name)
    if node.type == "call_expression":  # a test suite or test: its title
        return _title(node)
    if node.type == "assignment_expression":
        left = node.child_by_field_name("left")
        target = left.child_by_field_name("property") if left is not None else None
        return _text(target if target is not None else left)
    if node.type == "impl_item":
        trait, target = node.child_by_field_name("trait"), node.child_by_field_name("type")
        return f"{_text(trait)} for {_text(target)}" if trait is not None else _text(target)
    inner = node
    while (down := inner.child_by_field_name("declarator")) is not None:
        inner = down
    return _text(inner) if inner is not node else "?"


def _title(call: tree_sitter.Node) -> str:
    """The first argument of a test call, ``describe('res.redirect(url)', …)``, unquoted."""
    arguments = call.child_by_field_name("arguments")
    first = arguments.named_children[0] if arguments is not None else None
    return " ".join(_text(first)[1:-1].split()) if first is not None else "?"


def _head_start(node: tree_sitter.Node) -> int:
    """Where the signature starts: the definition (with ``export`` and, for a variable,
    its declaration), after any decorators, attributes and annotations."""
    if node.type == "variable_declarator" and node.parent is not None:
        node = node.parent
    if node.parent is not None and node.parent.type == "export_statement":
        node = node.parent
    start = node.start_byte
    for child in node.children:
        if child.type in _LEADING:
            start = child.end_byte
        elif child.type == "modifiers":  # Java: annotations sit inside the modifiers
            for part in child.children:
                if part.type not in _LEADING:
                    return max(start, part.start_byte)
                start = part.end_byte
        else:
            break
    return start


def _parameters_end(node: tree_sitter.Node) -> int | None:
    """The end of the parameter list (found through a C declarator or a variable's
    function value), or None if the definition has none."""
    probe: tree_sitter.Node | None = node
    if node.type in _VALUE_FIELD:
        probe = node.child_by_field_name(_VALUE_FIELD[node.type])
    while probe is not None:
        params = probe.child_by_field_name("parameters")
        if params is not None:
            return params.end_byte
        probe = probe.child_by_field_name("declarator")
    return None


def _body(node: tree_sitter.Node) -> tree_sitter.Node | None:
    if node.type in _VALUE_FIELD:
        value = node.child_by_field_name(_VALUE_FIELD[node.type])
        return value.child_by_field_name("body") if value is not None else None
    return node.child_by_field_name("body")


# Definitions whose function is a value: the field that holds it.
_VALUE_FIELD = {"variable_declarator": "value", "assignment_expression": "right"}


def _signature(node: tree_sitter.Node, data: bytes, kind: str) -> str:
    """The definition's head as written, on one line: from its start (after decorators)
    to its body, ending at the line end after the parameters (or after the first line
    when it has none); without a body, up to the first ``{``. A JavaScript test is its
    call and title: ``it('redirects to the url')``."""
    if node.type == "call_expression":
        call = _text(node.child_by_field_name("function"))
        return clip(f"{call}({_quote(_title(node))})", SIGNATURE_CHARS)
    start = _head_start(node)
    while start < len(data) and data[start : start + 1].isspace():
        start += 1
    body = _body(node)
    end = min(body.start_byte if body is not None else node.end_byte, start + _HEAD_BYTES)
    params = _parameters_end(node)
    line_end = data.find(b"\n", params if params is not None and params <= end else start, end)
    head = data[start : line_end if line_end >= 0 else end].decode("utf-8", "replace")
    if body is None and node.type not in _VALUE_FIELD and "{" in head:
        head = head[: head.index("{")].rstrip()
        name = _name(node)
        if name not in head:
            head = f"{head} {{…}} {name}"  # typedef struct {…} T
    if node.type == "type_spec":
        head = f"type {head}"
    head = _AFTER_OPEN.sub(r"\1", _BEFORE_CLOSE.sub(r"\1", " ".join(head.split())))
    return clip(head, SIGNATURE_CHARS)


def _quote(title: str) -> str:
    return f"'{title}'" if "'" not in title else f'"{title}"'


_AFTER_OPEN = re.compile(r"([(\[]) ")  # "f( a" from a parameter list written one per line
_BEFORE_CLOSE = re.compile(r",? ([)\]])")  # "b, )" likewise
_COMMENT_MARKS = re.compile(r"^\s*(?:/{2,3}!?|/\*+!?|\*+/?|#+|--)\s?")
_TAGS = re.compile(r"<[^>]*>")


def _clean_comment(text: str) -> str:
    """The first line of a comment that has words in it, without comment marks or XML tags."""
    for line in split_lines(text):
        line = _TAGS.sub("", _COMMENT_MARKS.sub("", line)).removesuffix("*/").strip()
        if any(ch.isalnum() for ch in line):
            return clip(line, DOC_CHARS)
    return ""


def _docstring(node: tree_sitter.Node) -> str:
    """A Python docstring's first line with words, or ""."""
    body = node.child_by_field_name("body")
    first = body.named_children[0] if body is not None and body.named_children else None
    if first is None or first.type != "expression_statement" or not first.named_children:
        return ""
    string = first.named_children[0]
    if string.type != "string":
        return ""
    content = "".join(_text(c) for c in string.named_children if c.type == "string_content")
    for line in split_lines(content):
        if line.strip():
            return clip(line.strip(), DOC_CHARS)
    return ""


def _file_doc(language: str, root: tree_sitter.Node) -> str:
    """The first line with words of what a file says of itself, where its language has a
    convention for it: a Python module's docstring (after any comments), a Go package
    comment (the comment block right above ``package``), Rust's inner doc comments
    (``//!``, ``/*!``) at its top. Other languages' leading comments are as often a
    license as a description: ""."""
    children = root.named_children
    if language == "python":
        first = next((c for c in children if c.type != "comment"), None)
        if first is not None and first.type == "expression_statement" and first.named_children:
            string = first.named_children[0]
            if string.type == "string":
                parts = (_text(c) for c in string.named_children if c.type == "string_content")
                return _clean_comment("".join(parts))
    elif language == "go":
        package = next((c for c in children if c.type == "package_clause"), None)
        prev = package.prev_named_sibling if package is not None else None
        block: list[tree_sitter.Node] = []
        below = package.start_point[0] if package is not None else 0
        while prev is not None and prev.type == "comment" and _end_row(prev) >= below - 1:
            block.append(prev)
            below = prev.start_point[0]
            prev = prev.prev_named_sibling
        return _clean_comment("\n".join(_text(c) for c in reversed(block)))
    elif language == "rust":
        inner = []
        for c in children:
            text = _text(c)
            if c.type not in ("line_comment", "block_comment"):
                break
            if text.startswith(("//!", "/*!")):
                inner.append(text)
        return _clean_comment("\n".join(inner))
    return ""


def _doc(
    node: tree_sitter.Node, anchor: tree_sitter.Node, comments: frozenset[str], *, python: bool
) -> str:
    """The first line of the docstring, else of the comment block written right above the
    definition (no blank line between), else of a doc comment (``/** … */``) one blank
    line above it, as JSDoc is often written (express)."""
    if python:
        doc = _docstring(node)
        if doc:
            return doc
    prev = anchor.prev_named_sibling
    if prev is None and anchor.parent is not None and anchor.parent.start_byte == anchor.start_byte:
        prev = anchor.parent.prev_named_sibling  # Ruby: a comment before the body_statement
    block: list[tree_sitter.Node] = []
    below = anchor.start_point[0]
    while prev is not None and prev.type in comments and _end_row(prev) >= below - 1:
        block.append(prev)
        below = prev.start_point[0]
        prev = prev.prev_named_sibling
    if (
        not block
        and prev is not None
        and prev.type in comments
        and _end_row(prev) == below - 2
        and _text(prev).startswith("/**")
    ):
        block.append(prev)
    for comment in reversed(block):
        doc = _clean_comment(_text(comment))
        if doc:
            return doc
    return ""
