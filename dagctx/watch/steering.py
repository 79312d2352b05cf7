"""The user's steering of a tree: which files it takes in and how the matching files ask
to be shown.

A :class:`Steering` holds four lists of gitignore-style patterns, relative to the session
root (compiled by :mod:`dagctx.watch.patterns`, matched by
:class:`~dagctx.watch.ignore.Globs`):

- ``exclude``: paths never taken in, as one more ignore file that tracked files do not
  escape (an excluded directory is not entered);
- ``include``: when given, only the files it matches are taken in (directories are still
  entered; a pattern matching a directory includes the files below it);
- ``priority``: ``(pattern, int)`` rules; a text node whose path (or one of its
  directories) a pattern matches gets that priority (higher survives budget pressure
  longer; text files default to 40);
- ``state``: ``(pattern, NodeState)`` rules; the matching text nodes get that state.

When several rules match one path, the last one wins (as in a ``.gitignore``). Rules apply
to the text nodes of whole files that the scan makes (:func:`~dagctx.watch.scan.scan_tree`)
and that a :class:`~dagctx.watch.tracker.TreeTracker` adds while watching (a new file, a
file renamed), and to the files of a resumed session when it is adopted. A node a rule
steered carries the tag :data:`PRIORITY_TAG` or :data:`STATE_TAG` (saved with the
session), so that when no rule matches it any more (a rule dropped between two runs, a
file renamed away) it gets back its type's default; a file no rule ever matched keeps its
own priority and state.

Building a steering from command-line flags and config files, with errors that name
where a bad value came from, is :mod:`dagctx.cli.settings`' business.

Imports nothing from dagctx but :mod:`dagctx.watch.ignore`, :mod:`dagctx.watch.patterns`
and the node types.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dagctx.nodes.base import NodeState
from dagctx.nodes.text import TextNode
from dagctx.watch.ignore import NO_GLOBS, Globs, TreeFilter
from dagctx.watch.patterns import Pattern


@dataclass(frozen=True, slots=True)
class Steering:
    """Include and exclude patterns, and priority and state rules (see the module
    docstring); ``priorities[i]`` and ``states[i]`` go with the i-th pattern of
    ``priority`` and ``state``. The default steers nothing. Build one with :meth:`of`."""

    include: Globs = NO_GLOBS
    exclude: Globs = NO_GLOBS
    priority: Globs = NO_GLOBS
    priorities: tuple[int, ...] = ()
    state: Globs = NO_GLOBS
    states: tuple[NodeState, ...] = ()

    @classmethod
    def of(
        cls,
        *,
        include: Sequence[Pattern] = (),
        exclude: Sequence[Pattern] = (),
        priority: Sequence[tuple[Pattern, int]] = (),
        state: Sequence[tuple[Pattern, NodeState]] = (),
    ) -> Steering:
        """A steering from compiled patterns and (pattern, value) rules, in order."""
        return cls(
            include=Globs(tuple(include)),
            exclude=Globs(tuple(exclude)),
            priority=Globs(tuple(p for p, _ in priority)),
            priorities=tuple(n for _, n in priority),
            state=Globs(tuple(p for p, _ in state)),
            states=tuple(s for _, s in state),
        )

    def tree_filter(
        self, root: Path, *, top: str = "", ignore: Iterable[str | os.PathLike[str]] = ()
    ) -> TreeFilter:
        """The :class:`~dagctx.watch.ignore.TreeFilter` of a tree with this steering's
        include and exclude patterns (``root``, ``top`` and ``ignore`` as there)."""
        return TreeFilter(root, top=top, ignore=ignore, include=self.include, exclude=self.exclude)

    def node_fields(self, rel: str) -> dict[str, Any]:
        """The ``priority`` and ``state`` the rules give the file at ``rel`` (root-relative
        posix path), with the ``tags`` saying so, as keyword arguments of a new node;
        empty when no rule matches."""
        fields: dict[str, Any] = {}
        index = self.priority.last_match(rel, False, inherit=True)
        if index is not None:
            fields["priority"] = self.priorities[index]
        index = self.state.last_match(rel, False, inherit=True)
        if index is not None:
            fields["state"] = self.states[index]
        if fields:
            fields["tags"] = {tag for key, tag in _TAGS if key in fields}
        return fields

    def apply(self, node: TextNode) -> None:
        """Give ``node`` the priority and state its path's rules name, and give a node
        no rule matches any more its type's default for what a rule had set (each a
        change when it differs)."""
        fields = self.node_fields(node.path) if self.priorities or self.states else {}
        if "priority" in fields:
            node.priority = fields["priority"]
            node.tags.add(PRIORITY_TAG)
        elif node.has_tag(PRIORITY_TAG):
            node.priority = None
            node.tags.discard(PRIORITY_TAG)
        if "state" in fields:
            node.set_state(fields["state"])
            node.tags.add(STATE_TAG)
        elif node.has_tag(STATE_TAG):
            node.set_state(node.default_state)
            node.tags.discard(STATE_TAG)

    def apply_all(self, nodes: Mapping[str, TextNode]) -> None:
        """:meth:`apply` to each of ``nodes`` (by root-relative posix path), in path
        order. Without priority and state rules it changes only a node carrying a tag a
        rule of an earlier run gave it (a node without an extras record has no tags), so
        only those are visited."""
        if not (self.priorities or self.states):
            nodes = {
                rel: node
                for rel, node in nodes.items()
                if node._extras is not None
                and (node.has_tag(PRIORITY_TAG) or node.has_tag(STATE_TAG))
            }
        for rel in sorted(nodes):
            self.apply(nodes[rel])


#: The tag of a node whose priority a rule set.
PRIORITY_TAG = "dagctx:steered-priority"
#: The tag of a node whose state a rule set.
STATE_TAG = "dagctx:steered-state"
_TAGS = (("priority", PRIORITY_TAG), ("state", STATE_TAG))


#: Steers nothing: every file the ignore rules keep, with its own priority and state.
NO_STEERING = Steering()
