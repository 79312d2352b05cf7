"""Budgeted rendering of the context graph into a prompt (see :mod:`.build`)."""

from dagctx.projection.build import build_projection
from dagctx.projection.result import Projection, Section
from dagctx.projection.sections import SectionCache

__all__ = ["Projection", "Section", "SectionCache", "build_projection"]
