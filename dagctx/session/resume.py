"""The first projection of a resumed session, saved with it and taken back when nothing
changed.

A save keeps, beside the graph, the projection the session's next tick would make if
nothing changed (:func:`plan_to_save`: the session's own projector at its budget, with no
changes to show and no previous projection, as a resumed session's first tick projects);
:mod:`dagctx.projection.saved` turns it into a head and an account. A load offers it back
(:func:`offer`), and the first tick after the load takes it instead of projecting
(:func:`take_back`) only when that tick would project exactly the same:

- the head and the account are intact and were made by this code (:func:`made_by`: the
  stat keys of the ``dagctx`` package's modules, :func:`code_stamp`, and a digest of
  their source, :func:`code_digest`; :func:`made_here` reads the source only when a
  module's stat key changed since), for this session's root (its cache key) and budget;
- the graph is as loaded: no trace since the load and no change of structure (an edit
  found by the survey, a focus, a steering rule, any node changed: all leave traces);
- the disk was compared with every text node since the load: a resume survey of a
  watched tree that tracks every path the session's text nodes read
  (:func:`files_compared`; a text node restored from its snapshot reads its file only
  when it is shown, so without that survey a file changed offline would show its new
  text in a projection made afresh).

Otherwise the tick projects afresh, as it always did. A projection is saved only when it
describes what a resume loads: no changes wait for the next tick, no focus is in effect
(a resumed session's first projection levels a focus without the reference graph, which
it reads later), and every node that reads a file is saved with a snapshot of what it
read (another re-reads its file at the load). The plan of the next turn (the projector's
layout and allocation) is not saved: the next projection builds it, as the first
projection of a resume otherwise does (a watch asks for it as soon as it has handed over
the first result: :meth:`~dagctx.session.core.SessionCore._plan_ahead`).

Imports the projection and the node types; the session is only a type here (this module
must not import it).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from dagctx.nodes.base import Trace
from dagctx.nodes.text import stat_key
from dagctx.projection import Projection, build_projection
from dagctx.projection.projector import Projector
from dagctx.projection.saved import load_projection, save_projection

if TYPE_CHECKING:
    from dagctx.session.core import SessionCore


@dataclass(slots=True)
class SavedPlan:
    """A saved projection as the session file holds it, and what it was made for.

    ``end`` and ``structure`` are the graph's trace log end and structure version when
    it was made or loaded; ``projection`` is the projection a load offers to the first
    tick (None once that tick ran, or for one made by a save); ``compared`` says
    whether the disk was compared with every text node since the load.
    """

    head: str | bytes
    account: bytes
    budget: int
    end: int
    structure: int
    projection: Projection | None = None
    compared: bool = False


def _modules(package: str) -> list[str]:
    """The paths of the modules (``.py`` files) of the package in directory ``package``,
    sorted (its ``__pycache__`` directories hold none and are not listed)."""
    modules: list[str] = []
    for directory, subdirectories, names in os.walk(package):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        modules.extend(os.path.join(directory, n) for n in names if n.endswith(".py"))
    return sorted(modules)


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The directory of the ``dagctx`` package."""


@cache
def code_digest(package: str = _PACKAGE) -> str:
    """A digest of the source of the package in ``package`` (default ``dagctx``: each
    module's path in it and its bytes): what makes projections."""
    digest = hashlib.blake2b(digest_size=16)
    start = len(package) + 1
    for path in _modules(package):
        digest.update(path[start:].encode())
        with open(path, "rb") as module:
            digest.update(module.read())
    return digest.hexdigest()


@cache
def code_stamp(package: str = _PACKAGE) -> str:
    """A digest of the stat keys of the modules of the package in ``package`` (default
    ``dagctx``: each module's path in it and :func:`~dagctx.nodes.text.stat_key`, the
    mtime, size and identity of the file it leads to, and of the link too for a symlink):
    unchanged while no module is written, replaced, added or removed. One ``lstat`` per
    module (and a ``stat`` of a symlink's target); nothing is read."""
    digest = hashlib.blake2b(digest_size=16)
    start = len(package) + 1
    for path in _modules(package):
        digest.update(f"{path[start:]}\0{stat_key(path)}\n".encode())
    return digest.hexdigest()


def made_by(package: str = _PACKAGE) -> str:
    """What a saved projection records of the code that made it: :func:`code_stamp` and
    :func:`code_digest` of ``package`` (default ``dagctx``)."""
    return f"{code_stamp(package)} {code_digest(package)}"


def made_here(saved: object, package: str = _PACKAGE) -> bool:
    """Whether ``saved``, what a saved projection records of the code that made it
    (:func:`made_by`), names the code of ``package`` (default ``dagctx``) as it is now:
    the same stamp (no module changed since, by its stat keys: nothing is read, as
    Python takes a module's cached bytecode by its source's mtime and size) or, when a
    module's stat key changed (a checkout, a copy, a ``touch``), the same source."""
    if type(saved) is not str:
        return False
    stamp, _, digest = saved.partition(" ")
    return stamp == code_stamp(package) or digest == code_digest(package)


def plan_to_save(session: SessionCore, files_snapshotted: bool) -> tuple[Any, bytes] | None:
    """The head and account to save with ``session`` (module docstring), or None when
    none describes what a resume of it loads. ``files_snapshotted``: every node that
    reads a file is saved with a snapshot of what it read."""
    graph = session.graph
    end, structure = len(graph.traces), graph.structure_version
    if not files_snapshotted or end != session._trace_mark.position:
        return None
    kept = session._saved_plan
    if kept is not None and (kept.end, kept.structure, kept.budget) == (
        end,
        structure,
        session.budget,
    ):
        return kept.head, kept.account  # the graph is as when it was made
    live = session.cache.projector
    if (
        session.last_projection is None
        or not isinstance(live, Projector)
        or live.graph is not graph
        or live.relevance.focus is not None
        or live.relevance.later
    ):
        return None
    projection = build_projection(
        graph, session.cache, session.budget, previous=None, cache_key=session.cache_key
    )
    head, account = save_projection(projection, made_by())
    session._saved_plan = SavedPlan(head, account, session.budget, end, structure)
    return head, account


def offer(session: SessionCore, saved: tuple[Any, Any] | None) -> None:
    """Keep the projection a session file held (``saved``: its head and account as
    read) for the first tick of ``session``, just loaded, if it is intact, made by this
    code and for this session's root."""
    if saved is None:
        return
    projection = load_projection(saved[0], saved[1], made_here)
    if projection is None or projection.cache_key != session.cache_key:
        return
    graph = session.graph
    session._saved_plan = SavedPlan(
        saved[0],
        saved[1],
        projection.budget,
        len(graph.traces),
        graph.structure_version,
        projection,
    )


def files_compared(session: SessionCore) -> None:
    """Record that the disk was compared with every text node of ``session`` since it
    was loaded (a resume survey that tracks every path they read)."""
    kept = session._saved_plan
    if kept is not None:
        kept.compared = True


def take_back(session: SessionCore, changes: Sequence[Trace]) -> Projection | None:
    """The projection offered to the first tick after a load, if the tick (about to
    show ``changes``) would project the same (module docstring); None otherwise. Only
    the first tick after a load is offered one."""
    kept = session._saved_plan
    if kept is None or kept.projection is None:
        return None
    projection, kept.projection = kept.projection, None
    graph = session.graph
    now = (len(graph.traces), graph.structure_version, session.budget)
    same = now == (kept.end, kept.structure, kept.budget)
    if not same or not kept.compared or changes or session.last_projection is not None:
        return None
    return projection


__all__ = [
    "SavedPlan",
    "code_digest",
    "code_stamp",
    "files_compared",
    "made_by",
    "made_here",
    "offer",
    "plan_to_save",
    "take_back",
]
