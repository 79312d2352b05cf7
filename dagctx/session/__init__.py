"""Session: a context graph rooted in a directory, ticked once per agent turn.

:class:`Session` (:mod:`.core`) owns the graph, the token counter, the section cache and
its parts; the verbs of each family of nodes live beside it, one module per concern
(conversation, artifacts, jobs, MCP, work, markdown, capability), and :mod:`.store` saves
and loads a whole session.
"""

from dagctx.session.core import Session, TickResult, check_budget, current_session

__all__ = ["Session", "TickResult", "check_budget", "current_session"]
