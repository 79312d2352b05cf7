"""The projection an incremental turn must equal (not a test module).

:func:`from_scratch` builds the session's graph again with a new section cache, showing
the changes the turn showed (none at the first turn, which lists none), so a test compares
each turn of a session with a build that shares none of its incremental state.
"""

from __future__ import annotations

from dagctx import Session
from dagctx.projection import Projection, SectionCache, build_projection
from dagctx.session import TickResult


def from_scratch(s: Session, result: TickResult) -> Projection:
    """``s``'s graph projected at its budget by a new cache, with ``result``'s changes."""
    shown = result.changes if result.turn > 1 else []
    return build_projection(s.graph, SectionCache(s.counter), s.budget, changes=shown)
