"""Graph tools: let a model steer the context DAG of a `Session`.

``get_graph_tools()`` returns fresh `SessionTool` instances, to be bound to a `Session`:

- ``list_nodes``: id, type, state, tokens at that state and label of each node;
- ``open_file``: add a text node for a file (or a line range) under the session root;
- ``set_node_state`` / ``hide_node``: expand, collapse or hide a node;
- ``run_shell``: start a command (a `ShellNode`), wait briefly, report its status and output;
- ``shell_output``: wait for a command ``run_shell`` left running, report the same;
- ``checkpoint`` / ``restore``: save and put back the graph's structure;
- ``set_budget``: change the token budget of later projections;
- ``set_focus``: say what the task is about (files matching it are shown first);
- ``show_projection_stats``: tokens used of the budget, degraded and omitted nodes, the
  largest sections.

Each tool returns a short text the model can read. Whatever the model gets wrong (an
unknown node id, a path outside the root, a bad budget) comes back as a message: every
`DagctxError` the session raises is turned into one, and the session is left as it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from dagctx._lines import split_lines
from dagctx._validate import is_number
from dagctx.errors import DagctxError, ToolError
from dagctx.nodes.base import Node, NodeState
from dagctx.nodes.shell import ShellNode
from dagctx.nodes.text import TextNode
from dagctx.tools.base import Refusal, Tool, line_range_refusal

if TYPE_CHECKING:
    from dagctx.session import Session

__all__ = [
    "LIST_LIMIT",
    "OPENED_PRIORITY",
    "RUN_SHELL_WAIT",
    "SHELL_OUTPUT_WAIT",
    "SessionTool",
    "checkpoint",
    "get_graph_tools",
    "hide_node",
    "list_nodes",
    "open_file",
    "restore",
    "run_shell",
    "set_budget",
    "set_focus",
    "set_node_state",
    "shell_output",
    "show_projection_stats",
]

LIST_LIMIT = 100
"""Nodes ``list_nodes`` shows by default (at most `_LIST_MAX` per call)."""
_LIST_MAX = 500
OPENED_PRIORITY = TextNode.default_priority + 5
"""Priority of a file node ``open_file`` opened (or raised): above a text node's default,
so a file the model asked to see is shown before the files it did not, in full while
the budget allows; below a command's output and the conversation."""
RUN_SHELL_WAIT = 2.0
"""Seconds ``run_shell`` waits for a command before reporting it as still running."""
SHELL_OUTPUT_WAIT = 8.0
"""Seconds ``shell_output`` waits by default (under the 10 s a client such as the MCP
Inspector gives a request)."""
_WAIT_MAX = 600.0
_TOP_SECTIONS = 5
_ECHOED = 200  # characters of a focus set_focus reads back
_STATE_NAMES = ", ".join(name.lower() for name in NodeState.__members__)


class SessionTool(Tool["Session"]):
    """A tool acting on a `Session`; a `DagctxError` it meets becomes its message."""

    target_parameter: ClassVar[str] = "session"

    def check_target(self, target: object) -> None:
        """Raise `ToolError` unless `target` is a `Session`."""
        from dagctx.session import Session

        super().check_target(target)
        if not isinstance(target, Session):
            raise ToolError(
                f"tool {self.name!r} binds a Session, got {type(target).__name__}",
                tool=self.name,
                value=target,
            )

    async def execute(self, **kwargs: Any) -> str:
        """Like `Tool.execute`; a `DagctxError` from the session comes back as a message.

        Raises:
            ToolError: The tool is not bound.
        """
        try:
            return await super().execute(**kwargs)
        except ToolError:
            raise
        except DagctxError as exc:
            return Refusal(f"{self.name} failed: {exc}")


# -- looking at the graph ---------------------------------------------------------------


def list_nodes(session: Session, offset: int = 0, limit: int = LIST_LIMIT) -> str:
    """List the nodes of the context graph with their type, state and token cost.

    One line per node, in creation order: id, type, state, tokens the node costs at its
    state (a HIDDEN node costs 0), and a label (file path, command, title).

    Args:
        offset: Number of nodes to skip (for paging through a large graph).
        limit: Largest number of nodes to list.
    """
    if offset < 0:
        return Refusal(f"offset must be 0 or more, got {offset}.")
    if not 1 <= limit <= _LIST_MAX:
        return Refusal(f"limit must be between 1 and {_LIST_MAX}, got {limit}.")
    nodes = session.nodes()
    if not nodes:
        return "The graph has no nodes yet; add one with open_file or run_shell."
    page = nodes[offset : offset + limit]
    if not page:
        return Refusal(f"No nodes from offset {offset}; the graph has {len(nodes)} nodes.")
    rows = [
        (node.id, node.type_name, node.state.name, str(_tokens(session, node)), node.label())
        for node in page
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True))
        + f"  {row[4]}"
        for row in rows
    ]
    shown = f"nodes {offset + 1}-{offset + len(page)} of {len(nodes)}"
    lines.insert(0, f"{shown} (id, type, state, tokens at that state, label):")
    rest = len(nodes) - offset - len(page)
    if rest > 0:
        lines.append(f"{rest} more; call list_nodes with offset={offset + len(page)}.")
    return "\n".join(lines)


def show_projection_stats(session: Session) -> str:
    """Show how the current projection spends the token budget.

    Reports tokens used of the budget, how many nodes were shown at less than their
    requested state (degraded) or left out (omitted), and the largest sections.
    """
    projection = session.project()
    used = projection.tokens / projection.budget
    lines = [
        f"Projection: {projection.tokens}/{projection.budget} tokens ({used:.1%});"
        f" {len(projection.sections)} sections, {len(projection.degraded)} degraded,"
        f" {len(projection.omitted)} omitted."
    ]
    top = sorted(projection.sections, key=lambda s: (-s.tokens, s.node_id))[:_TOP_SECTIONS]
    if top:
        lines.append("Largest sections:")
        for s in top:
            label = projection.labels.get(s.node_id, "")
            lines.append(f"  {s.node_id} {s.rendered_state.name} {s.tokens} tokens  {label}")
    if projection.degraded:
        shown = [
            f"{node_id} ({a.name} → {b.name})"
            for node_id, (a, b) in list(projection.degraded.items())[:_TOP_SECTIONS]
        ]
        lines.append("Degraded: " + ", ".join(shown) + _more(projection.degraded))
    if projection.omitted:
        lines.append(
            "Omitted: " + ", ".join(projection.omitted[:_TOP_SECTIONS]) + _more(projection.omitted)
        )
    return "\n".join(lines)


# -- changing what the projection shows -------------------------------------------------


def open_file(
    session: Session, path: str, start_line: int | None = None, end_line: int | None = None
) -> str:
    """Open a file under the session root so its content shows in the context.

    Adds a text node for the whole file or for a line range, or raises the file's node
    when the context already tracks it; from the next render on the projection shows it
    ahead of the files not opened, in full while the budget allows.

    Args:
        path: File path relative to the session root.
        start_line: First line to show (1-based); omit to start at the top.
        end_line: Last line to show (inclusive); omit to show to the end.
    """
    bad = line_range_refusal(start_line, end_line)
    if bad is not None:
        return bad
    first = None if start_line == 1 else start_line
    try:
        absolute, relative = session.resolve_path(path)
    except DagctxError as exc:
        return Refusal(f"Refused {path!r}: {exc}. Give a path inside the session root.")
    if not absolute.exists():
        return Refusal(f"File not found: {path!r} (under the session root).")
    if not absolute.is_file():
        return Refusal(f"Refused {path!r}: it is not a regular file.")
    existing = _already_open(session, relative, first, end_line)
    if existing is not None:
        raised = existing.priority < OPENED_PRIORITY
        if raised:
            existing.priority = OPENED_PRIORITY
        if existing.state == NodeState.HIDDEN:
            existing.set_state(existing.default_state)
            return f"{existing.label()} was hidden as {existing.id}; it is visible again."
        if raised:
            return (
                f"Opened {existing.label()} as {existing.id}, the node the context tracked it"
                f" by: {_tokens(session, existing)} tokens at {existing.state.name}, now ahead"
                " of the files not opened."
            )
        return f"{existing.label()} is already open as {existing.id} ({existing.state.name})."
    node = TextNode(
        relative,
        root=session.root,
        start_line=first,
        end_line=end_line,
        include_secrets=session.include_secrets,
        priority=OPENED_PRIORITY,
    )
    if node.placeholder is None and not node.lines and first is not None:
        if node.notice is not None:  # the range's first line alone exceeds max_bytes
            return (
                f"Nothing was opened: line {first} of {relative} is longer than"
                f" {node.max_bytes:,} bytes, the most a text node reads."
            )
        return Refusal(f"{relative} has fewer than {first} lines; nothing was opened.")
    session.add(node)
    if node.placeholder is not None:
        return f"Opened {node.label()} as {node.id}, but it shows only {node.placeholder}."
    count = len(node.lines)
    return (
        f"Opened {node.label()} as {node.id}: {count} line{'' if count == 1 else 's'}, "
        f"{_tokens(session, node)} tokens at {node.state.name}."
    )


def set_node_state(session: Session, node_id: str, state: str) -> str:
    """Set how much of a node the projection shows.

    Args:
        node_id: Id of the node, as list_nodes shows it (e.g. text_3).
        state: One of hidden, collapsed, summary, details, all (increasing detail).
    """
    try:
        wanted = NodeState.parse(state)
    except DagctxError:
        return Refusal(f"Unknown state {state!r}; use one of {_STATE_NAMES}.")
    node = _find(session, node_id)
    if isinstance(node, str):
        return node
    if node.state == wanted:
        return f"{node.id} is already {wanted.name}{_shown_less(session, node)}."
    old = node.state
    node.set_state(wanted)
    return (
        f"{node.id}: {old.name} → {wanted.name} ({_tokens(session, node)} tokens at {wanted.name})."
    )


def hide_node(session: Session, node_id: str) -> str:
    """Hide a node: the projection leaves it (and what is reachable only through it) out.

    Args:
        node_id: Id of the node, as list_nodes shows it (e.g. text_3).
    """
    node = _find(session, node_id)
    if isinstance(node, str):
        return node
    if node.state == NodeState.HIDDEN:
        return f"{node.id} is already hidden."
    node.set_state(NodeState.HIDDEN)
    return f"Hid {node.id}; show it again with set_node_state({node.id!r}, 'details')."


# -- work, structure and budget ---------------------------------------------------------


async def run_shell(
    session: Session, command: str, args: list[str] | None = None, timeout: float = 30.0
) -> str:
    """Run a command in the session root and add its output to the context.

    The command runs without a shell: command is the program, args its arguments. The
    tool waits a moment for it and returns its status and output (each stream capped: its
    start and end kept); a longer command keeps running: shell_output waits for it and
    returns its output, and it shows in the projection at a later turn.

    Args:
        command: The program to run, e.g. "pytest" or "ls" (no shell syntax).
        args: Arguments passed to the program, one per item.
        timeout: Seconds after which the command is killed.
    """
    node = session.shell(command, args or [], timeout=timeout)
    waited = min(RUN_SHELL_WAIT, timeout)
    await session.await_(node, timeout=waited)
    hint = ""
    if node.error and args is None and " " in command.strip():
        hint = "\nThe command is run without a shell: put its arguments in args."
    return _shell_report(node, waited, hint)


async def shell_output(session: Session, node_id: str, wait: float = SHELL_OUTPUT_WAIT) -> str:
    """Show the status and output of a command run_shell started, waiting for it to end.

    For a command run_shell reported still running: returns its output once it ends,
    as run_shell does, or says it is still running after the wait (call again).

    Args:
        node_id: Id of the command's node, as run_shell names it (e.g. shell_3).
        wait: Seconds to wait for a running command to end; 0 to look without waiting.
    """
    node = _find(session, node_id)
    if isinstance(node, str):
        return node
    if not isinstance(node, ShellNode):
        return Refusal(
            f"{node.id} is a {node.type_name} node, not a command; give the id run_shell named."
        )
    if not (is_number(wait) and 0 <= wait <= _WAIT_MAX):
        return Refusal(f"wait must be between 0 and {_WAIT_MAX:g} seconds, got {wait!r}.")
    if not node.finished and wait > 0:
        await session.await_(node, timeout=wait)
    return _shell_report(node, wait)


def _shell_report(node: ShellNode, waited: float, hint: str = "") -> str:
    """A command's headline and, once it ended, its output (a `Refusal` when it failed)."""
    headline = f"{node.id}: {node.render(NodeState.COLLAPSED)}"
    if not node.finished:
        return (
            f"{headline}. Still {node.status} after {waited:g} s; shell_output({node.id!r})"
            f" waits for it, and its result shows in the projection as {node.id} when it ends."
        )
    details = split_lines(node.render(NodeState.DETAILS))[1:]
    text = "\n".join([headline, *details]) + hint
    return Refusal(text) if node.error else text


def checkpoint(session: Session, name: str) -> str:
    """Save the graph's structure (links, order, node states) under a name.

    Args:
        name: Name to save it under; an existing checkpoint of that name is replaced.
    """
    if not name.strip():
        return Refusal("Give the checkpoint a non-empty name.")
    replaced = name in session.checkpoints()
    session.checkpoint(name)
    verb = "Replaced" if replaced else "Saved"
    count = len(session.nodes())
    return f"{verb} checkpoint {name!r} ({count} nodes); restore({name!r}) returns to it."


def restore(session: Session, name: str) -> str:
    """Put back the structure saved by checkpoint; nodes created since stay as roots.

    Args:
        name: Name of the checkpoint to restore.
    """
    if name not in session.checkpoints():
        known = ", ".join(repr(n) for n in session.checkpoints()) or "none"
        return Refusal(f"No checkpoint named {name!r}. Saved checkpoints: {known}.")
    newer = session.restore(name)
    kept = f"; nodes created since stay as roots: {', '.join(newer)}" if newer else ""
    return f"Restored checkpoint {name!r}{kept}."


def set_budget(session: Session, tokens: int) -> str:
    """Set the token budget of the projection.

    Args:
        tokens: The new budget, a positive number of tokens.
    """
    if tokens < 1:
        return Refusal(f"The budget must be a positive number of tokens, got {tokens}.")
    old = session.budget
    session.set_budget(tokens)
    return f"Budget: {old} → {tokens} tokens."


def set_focus(session: Session, text: str) -> str:
    """Say what you are working on: files whose path, names or content match it are shown
    in full first, the others as outlines or names. An empty text clears the focus.

    Args:
        text: The task, in a sentence or a few words (e.g. "how are checkpoints restored").
    """
    focus = text.strip() or None
    session.focus(focus)
    if focus is None:
        return "Focus cleared from the next turn."
    if len(focus) > _ECHOED:  # a pasted issue: no need to read it back in full
        return f"Focus from the next turn: {focus[:_ECHOED]!r}… ({len(focus):,} characters)."
    return f"Focus from the next turn: {focus!r}."


# -- helpers ------------------------------------------------------------------------------


def _tokens(session: Session, node: Node) -> int:
    return session.cache.tokens(node, node.state)


def _find(session: Session, node_id: str) -> Node | str:
    """The node, or a message naming the unknown id."""
    try:
        return session.get(node_id)
    except DagctxError:
        return Refusal(f"No node {node_id!r}; list_nodes shows the ids.")


def _shown_less(session: Session, node: Node) -> str:
    """What the last projection did to `node` when it showed less than the node asks
    for (left it out, cut or degraded it to fit the budget) and, for a file, which tool
    shows more (open_file raises it, read_file reads the lines a cut left out); "" when
    it showed the node as asked."""
    last = session.last_projection
    if last is None or (node.id not in last.degraded and node.id not in last.omitted):
        return ""
    why = last.reasons.get(node.id) or "budget"
    done = "left it out" if node.id in last.omitted else "showed it at less"
    why = why.removeprefix("left out: ")
    hint = ""
    if isinstance(node, TextNode):
        requested, rendered = last.degraded.get(node.id, (node.state, NodeState.HIDDEN))
        if rendered == requested:  # a cut: the lines the projection left out
            hint = f"; read_file({node.path!r}) reads the rest"
        else:
            hint = f"; open_file({node.path!r}) puts it ahead of the files not opened"
    return f", but the last projection {done} ({why}){hint}"


def _already_open(
    session: Session, relative: str, start: int | None, end: int | None
) -> TextNode | None:
    for node in session.text_nodes(relative):
        first = None if node.start_line == 1 else node.start_line
        if (first, node.end_line) == (start, end):
            return node
    return None


def _more(items: dict[str, Any] | list[str]) -> str:
    extra = len(items) - _TOP_SECTIONS
    return f" and {extra} more" if extra > 0 else ""


def get_graph_tools() -> list[SessionTool]:
    """Fresh, unbound graph tools, to be bound to a `Session` with ``tool.bind(session)``."""
    return [
        SessionTool(fn)
        for fn in (
            list_nodes,
            open_file,
            set_node_state,
            hide_node,
            run_shell,
            shell_output,
            checkpoint,
            restore,
            set_budget,
            set_focus,
            show_projection_stats,
        )
    ]
