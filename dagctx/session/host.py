"""The parts of :class:`~dagctx.session.Session` that the verb mixins use.

:class:`SessionParts` declares them for type checkers only (at run time it is an empty
class); ``Session`` provides them, and mypy checks that its definitions match these.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dagctx.graph import ContextGraph, NodeRef
    from dagctx.nodes.base import Node
    from dagctx.projection import Projection
    from dagctx.session.loop import BackgroundLoop


class SessionParts:
    """Base of the session verb mixins: what they may use of the session."""

    if TYPE_CHECKING:  # provided by Session
        root: Path
        graph: ContextGraph
        background: BackgroundLoop
        turn: int
        budget: int
        encoding: str
        closed: bool
        _last_projection: Projection | None

        def add(self, node: Node, *, parent: NodeRef | None = None) -> Node: ...
        def get(self, node_id: NodeRef) -> Node: ...
        def resolve_path(self, path: str | os.PathLike[str]) -> tuple[Path, str]: ...
        def on_close(self, callback: Callable[[], None]) -> None: ...
        def queue_result(self, apply: Callable[[], None]) -> None: ...
        def _check_open(self) -> None: ...
        def _apply_intake(self) -> list[str]: ...
