"""Budgeted rendering of the context graph into a prompt.

Owns the walk, the section cache, the degrade order, the allocation under the hard
budget and the :class:`Projection` result; :mod:`.build` is the entry point. Reads the
graph and the nodes and counts with :mod:`dagctx.tokens`; must not import the session,
the watcher, the stores or anything that does I/O.
"""

from dagctx.projection.build import build_projection
from dagctx.projection.messages import CONTEXT_INSTRUCTIONS
from dagctx.projection.result import Projection, Section
from dagctx.projection.sections import SectionCache

__all__ = ["CONTEXT_INSTRUCTIONS", "Projection", "Section", "SectionCache", "build_projection"]
