"""Session: a context graph rooted in a directory, ticked once per agent turn.

**Sync/async twins.** Every verb has one native colour. A verb that is natively
synchronous and has an async twin names it ``a`` + its name, with PEP 8's trailing
underscore where that makes a keyword: ``tick`` → ``atick``, ``wait`` → ``await_``,
``wait_all`` → ``await_all``, ``wait_any`` → ``await_any``. A verb that is natively async
and has a blocking twin names it with a ``_sync`` suffix: ``await s.mcp_connect(...)`` →
``s.mcp_connect_sync(...)``, likewise ``mcp_call``, ``mcp_refresh``,
``mcp_disconnect``. (``wait_async``, ``wait_all_async`` and ``wait_any_async``, the names
before this rule, remain as aliases of ``await_``, ``await_all`` and ``await_any``.) A
blocking twin must not be called on the session's own loop; it raises
:class:`~dagctx.errors.BlockingCallError` naming the async twin.

**Where things are.** :class:`Session` is :class:`~dagctx.session.core.SessionCore` (the
graph, the tick, the parts, ``close``) plus one verb mixin per concern, each a subclass
of ``SessionCore`` in its own module, so type checkers see the real session in every
verb: :mod:`.jobs` (shell, lock, wait), :mod:`.mcp`, :mod:`.work`, :mod:`.conversation`,
:mod:`.artifacts`, :mod:`.markdown`, :mod:`.capability`, :mod:`.info`, :mod:`.focus`, and ``watch``
from :mod:`dagctx.watch.loop`. What a session holds besides the graph (the background
loop, the intake of background results, jobs, MCP connections, the work board) is a part
in :mod:`.parts`, created in ``SessionCore.__init__`` and closed by ``close()`` in one
fixed order (see :meth:`~dagctx.session.core.SessionCore.close`); a verb reaches its
concern's part as ``self._jobs``, ``self._mcp``, ``self._work``. :mod:`.store` saves and
loads a whole session (:mod:`.file` is its file format). A verb module imports ``core``,
the parts and the nodes it builds, never another verb module nor this package.

**Adding a node type with a verb.** Write the node in its own module under
:mod:`dagctx.nodes` (a :class:`~dagctx.nodes.base.Node` subclass with a ``type_name``,
which registers it for save/load), and add the verb as a method of the mixin of its
concern (e.g. :class:`.artifacts.ArtifactVerbs`): it checks its arguments, builds the
node and ``self.add(node, parent=parent)``. A new concern is a new mixin module, listed
once in :class:`Session`'s bases. Optional: export the class from :mod:`dagctx.nodes`
and give the verb a free function in :mod:`dagctx.dsl`. Only a node that keeps a live
resource (a process, a connection) also needs a part in :mod:`.parts`, created in
``SessionCore.__init__`` and added to ``close``'s order.
"""

from __future__ import annotations

import os
from pathlib import Path

from dagctx.session import store
from dagctx.session.artifacts import ArtifactVerbs
from dagctx.session.capability import CapabilityVerbs
from dagctx.session.conversation import ConversationVerbs
from dagctx.session.core import SessionCore, TickResult, check_budget, current_session
from dagctx.session.focus import FocusVerbs
from dagctx.session.info import SessionInfoVerbs
from dagctx.session.jobs import JobVerbs
from dagctx.session.markdown import MarkdownVerbs
from dagctx.session.mcp import MCPVerbs
from dagctx.session.parts.files import FileWatchInfo
from dagctx.session.work import WorkVerbs
from dagctx.watch.loop import WatchVerbs


class Session(
    JobVerbs,
    WatchVerbs,
    ConversationVerbs,
    ArtifactVerbs,
    WorkVerbs,
    SessionInfoVerbs,
    MCPVerbs,
    MarkdownVerbs,
    CapabilityVerbs,
    FocusVerbs,
    SessionCore,
):
    """A context graph over the files under ``root``, with a token budget.

    Args:
        root: the directory files are read from; paths outside it are refused.
        budget: the token budget of each projection (a positive int).
        encoding: the tiktoken encoding to count with (default works offline).

    Raises:
        BudgetError, EncodingError, PathError: bad budget, encoding or root.
    """

    def save(self, path: str | os.PathLike[str] | None = None) -> Path | str:
        """Save the whole session to ``path`` (default ``<root>/.dagctx/session.db``, or
        the session's PostgreSQL ``store``).

        Returns the path written (for PostgreSQL: the URL without its password and
        ``#name``, the session's row; a ``#name`` on a URL given chooses the name). With
        PostgreSQL the save is one transaction with a compare-and-swap: a session that
        another writer saved since this one last loaded or saved it is refused with
        :class:`~dagctx.errors.SessionConflictError` (:mod:`dagctx.session.file_pg`).
        The file is replaced as one transaction: a crash at any instant leaves the
        previous save or this one. See :mod:`dagctx.session.store`
        for what is saved.

        Raises:
            CheckpointError: a node or context value cannot be stored as JSON, or ``path``
                cannot be written, is not SQLite, is the database of another application
                or holds another session schema; the file is left as it was.
        """
        return store.save(self, path)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        root: str | os.PathLike[str] | None = None,
    ) -> Session:
        """Load a session saved by :meth:`save`.

        Args:
            path: the session file (default ``<root>/.dagctx/session.db``), or a
                ``postgresql://`` URL (default too when ``DAGCTX_STORE`` holds one): the
                loaded session keeps using that store.
            root: the root of the loaded session (default: the saved root when ``path`` is
                given, else the current directory).

        Raises:
            CheckpointError: no such file; the file is truncated, corrupt, not a session
                file or written by another session schema (the message names both
                versions); or its content cannot be rebuilt here (unknown node type,
                missing root directory, unavailable encoding). No session is returned.
        """
        return store.load(cls, path, root=root)


__all__ = ["FileWatchInfo", "Session", "TickResult", "check_budget", "current_session"]
