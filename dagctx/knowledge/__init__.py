"""Knowledge an agent keeps beside its context: versioned artifacts and ranked search.

The shapes are orbiter's (``orbiter.context`` workspace and knowledge store); the README's
"Coming from orbiter / osprey" lists where dagctx deliberately differs.

- :mod:`dagctx.knowledge.workspace` — `Workspace` (async writes, observers, versions,
  optional storage), `Artifact`, `ArtifactVersion`, `ArtifactType`;
- :mod:`dagctx.knowledge.store` — `KnowledgeStore` (BM25 over chunks), `chunk_text`,
  `Chunk`, `SearchResult`.

This package does not know about tools or contexts; `dagctx.tools.knowledge` exposes it
to a model.
"""

from dagctx._words import tokenize
from dagctx.errors import ArtifactNotFoundError, KnowledgeError
from dagctx.knowledge.store import Chunk, KnowledgeStore, SearchResult, chunk_text
from dagctx.knowledge.workspace import (
    WORKSPACE_EVENTS,
    Artifact,
    ArtifactType,
    ArtifactVersion,
    Observer,
    Workspace,
)

__all__ = [
    "WORKSPACE_EVENTS",
    "Artifact",
    "ArtifactNotFoundError",
    "ArtifactType",
    "ArtifactVersion",
    "Chunk",
    "KnowledgeError",
    "KnowledgeStore",
    "Observer",
    "SearchResult",
    "Workspace",
    "chunk_text",
    "tokenize",
]
