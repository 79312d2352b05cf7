"""A session's place on a coordination store: its :class:`~dagctx.runtime.coordination.WorkBoard`.

:class:`Coordination` exists from the session's creation but holds no board until the
first work verb (or ``use_coordination``) opens one: a session that coordinates nothing
creates no ``.dagctx/coordination.db``. Choosing another store replaces the board and
closes the old one; :meth:`Coordination.close` closes the board, which releases every
claim of the session's agent.

The verbs are in :mod:`dagctx.session.work`. Must not import the rest of
:mod:`dagctx.session`.
"""

from __future__ import annotations

from dagctx.runtime.coordination import WorkBoard


class Coordination:
    """The session's work board, once one is opened."""

    def __init__(self) -> None:
        self.board: WorkBoard | None = None
        self._closed = False

    def replace(self, board: WorkBoard) -> None:
        """Use ``board`` from now on; close the one used so far."""
        previous, self.board = self.board, board
        if previous is not None:
            previous.close()

    def close(self) -> None:
        """Close the board (releasing the agent's claims), if one was opened. Idempotent."""
        if self.board is not None and not self._closed:
            self._closed = True
            self.board.close()
