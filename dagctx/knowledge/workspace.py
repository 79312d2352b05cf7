"""Named, versioned text artifacts: `Workspace`, `Artifact`, `ArtifactVersion`, `ArtifactType`.

The API is orbiter's: an async `Workspace` (``await ws.write(...)``, ``await
ws.delete(...)``, blocking twins ``write_sync`` / ``delete_sync``) with artifact types and
observers. Every write appends a version (nothing is ever overwritten), and with a
`storage_path` each artifact lives in one JSON file whose name is a hash of the artifact
name, so no name (``../x``, ``/etc/passwd``, ``a\\0b``) can place a file outside that
directory. Files are replaced atomically. An attached
:class:`~dagctx.knowledge.store.KnowledgeStore` is kept in step with the latest version of
every artifact.

Must not import tools or contexts; `dagctx.tools.knowledge` exposes a workspace to a model.
"""

from __future__ import annotations

import asyncio
import builtins
import hashlib
import inspect
import json
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from dagctx._fs import write_atomic
from dagctx._validate import is_int
from dagctx.errors import ArtifactNotFoundError, KnowledgeError
from dagctx.knowledge.store import KnowledgeStore

_MAX_NAME_LENGTH = 256


class ArtifactType(StrEnum):
    """What kind of content an artifact holds (recorded, not interpreted)."""

    CODE = "code"
    CSV = "csv"
    IMAGE = "image"
    JSON = "json"
    MARKDOWN = "markdown"
    TEXT = "text"


@dataclass(frozen=True, slots=True)
class ArtifactVersion:
    """One immutable version of an artifact: its `content` and when it was written.

    ``ArtifactVersion(content, timestamp=...)`` as in orbiter; the timestamp defaults to
    now (so does an explicit ``None``). `version` is its 1-based number in its artifact's
    history (``None`` for a version built outside a workspace);
    :meth:`Workspace.revert_to_version` takes the 0-based index into
    :meth:`Workspace.version_history` instead.
    """

    content: str
    timestamp: float = field(default_factory=time.time)
    version: int | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        # orbiter's signature is ``timestamp: float | None = None``; None means now.
        if self.timestamp is None:
            object.__setattr__(self, "timestamp", time.time())

    @property
    def created_at(self) -> float:
        """When the version was written (same as `timestamp`)."""
        return self.timestamp


@dataclass(frozen=True, slots=True)
class Artifact:
    """A snapshot of a named artifact: its type and all its versions, oldest first.

    Later writes do not change a snapshot; :meth:`Workspace.get` returns the current one.
    """

    name: str
    versions: tuple[ArtifactVersion, ...]
    artifact_type: ArtifactType = ArtifactType.TEXT

    @property
    def latest(self) -> ArtifactVersion:
        """The newest version."""
        return self.versions[-1]

    @property
    def content(self) -> str:
        """The content of the newest version."""
        return self.versions[-1].content

    @property
    def version(self) -> int:
        """The 1-based number of the newest version (equal to `version_count`)."""
        return len(self.versions)

    @property
    def version_count(self) -> int:
        """How many versions the artifact has."""
        return len(self.versions)


WORKSPACE_EVENTS = ("on_create", "on_update", "on_delete")
"""The events :meth:`Workspace.on` accepts."""

Observer = Callable[[str, Artifact], Awaitable[None] | None]
"""``callback(event, artifact)``: an async function, or a plain one."""


class Workspace:
    """Named, versioned text artifacts, optionally persisted and indexed for search.

    The API is orbiter's: ``await ws.write(name, content, artifact_type=...)`` and ``await
    ws.delete(name)`` are coroutines that notify the observers registered with
    :meth:`on`; ``write_sync`` and ``delete_sync`` are their blocking twins (the session's
    ``_sync`` naming rule). Reads (`read`, `get`, `list`, `version_history`) answer
    ``None`` or ``[]`` for a missing name. Every write appends a version; nothing is
    overwritten.

    Args:
        workspace_id: A non-empty identifier, recorded in every persisted file.
        storage_path: Directory holding this workspace's files (created if missing);
            existing artifacts there are loaded. ``None`` keeps everything in memory.
        knowledge_store: Kept in step with the latest version of every artifact.

    Raises:
        KnowledgeError: `workspace_id` is empty, or a stored file is malformed or belongs
            to another workspace.
    """

    def __init__(
        self,
        workspace_id: str,
        storage_path: str | os.PathLike[str] | None = None,
        *,
        knowledge_store: KnowledgeStore | None = None,
    ) -> None:
        if not isinstance(workspace_id, str) or not workspace_id.strip():
            raise KnowledgeError(
                f"workspace_id must be a non-empty string, got {workspace_id!r}", value=workspace_id
            )
        self.workspace_id = workspace_id
        self.storage_path = Path(storage_path) if storage_path is not None else None
        self.knowledge_store = knowledge_store
        self._artifacts: dict[str, Artifact] = {}
        self._observers: dict[str, builtins.list[Observer]] = {}
        if self.storage_path is not None:
            self.storage_path.mkdir(parents=True, exist_ok=True)
            self._load()

    def __contains__(self, name: object) -> bool:
        return name in self._artifacts

    def __len__(self) -> int:
        return len(self._artifacts)

    def __repr__(self) -> str:
        return f"Workspace(id={self.workspace_id!r}, artifacts={len(self)})"

    # ------------------------------------------------------------------ observers

    def on(self, event: str, callback: Observer) -> Workspace:
        """Call ``callback(event, artifact)`` after every `event` and return the workspace
        (for chaining). Events: ``on_create`` and ``on_update`` (a write of a new or an
        existing name; the artifact as written) and ``on_delete`` (the artifact as it was).
        Callbacks run in registration order and may be async; an exception from one
        propagates after the change is made.

        Raises:
            KnowledgeError: `event` is not one of those three, or `callback` is not callable.
        """
        if event not in WORKSPACE_EVENTS:
            raise KnowledgeError(
                f"unknown workspace event {event!r}; events: {', '.join(WORKSPACE_EVENTS)}",
                value=event,
            )
        if not callable(callback):
            raise KnowledgeError(f"observer must be callable, got {callback!r}", value=callback)
        self._observers.setdefault(event, []).append(callback)
        return self

    async def _notify(self, event: str, artifact: Artifact) -> None:
        for callback in builtins.list(self._observers.get(event, ())):
            result = callback(event, artifact)
            if inspect.isawaitable(result):
                await result

    def _notify_sync(self, event: str, artifact: Artifact) -> None:
        if self._observers.get(event):
            asyncio.run(self._notify(event, artifact))

    def _check_blocking(self, verb: str, events: tuple[str, ...]) -> None:
        """A blocking twin cannot run observers on this thread's running event loop."""
        if not any(self._observers.get(event) for event in events):
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        raise KnowledgeError(
            f"{verb}_sync cannot run the workspace's observers inside a running event loop; "
            f"use `await ws.{verb}(...)`",
            value=verb,
        )

    # ------------------------------------------------------------------ writes

    async def write(
        self, name: str, content: str, *, artifact_type: ArtifactType | str | None = None
    ) -> Artifact:
        """Append `content` as the next version of `name`, then notify ``on_create`` (a
        new name) or ``on_update`` observers; returns the artifact as written.

        `artifact_type` sets the type (default: ``TEXT`` for a new artifact, unchanged for
        an existing one). The file is written before memory and index change, so a failed
        write leaves the workspace as it was.

        Raises:
            KnowledgeError: `name` is empty, too long or contains a NUL byte, `content` is
                not a string, or `artifact_type` is not an `ArtifactType`.
            OSError: The artifact file cannot be written.
        """
        event, artifact = self._write(name, content, artifact_type)
        await self._notify(event, artifact)
        return artifact

    def write_sync(
        self, name: str, content: str, *, artifact_type: ArtifactType | str | None = None
    ) -> Artifact:
        """The blocking twin of :meth:`write` (async observers are run to completion).

        Raises what :meth:`write` raises, and `KnowledgeError` (changing nothing) when
        observers would have to run inside this thread's running event loop.
        """
        self._check_blocking("write", ("on_create", "on_update"))
        event, artifact = self._write(name, content, artifact_type)
        self._notify_sync(event, artifact)
        return artifact

    async def delete(self, name: str) -> bool:
        """Remove `name`, its history, its file and its index entry, then notify
        ``on_delete`` observers. Returns whether the artifact existed.

        Raises:
            OSError: The artifact file cannot be removed (the artifact is kept).
        """
        removed = self._delete(name)
        if removed is not None:
            await self._notify("on_delete", removed)
        return removed is not None

    def delete_sync(self, name: str) -> bool:
        """The blocking twin of :meth:`delete`; raises like :meth:`write_sync`."""
        self._check_blocking("delete", ("on_delete",))
        removed = self._delete(name)
        if removed is not None:
            self._notify_sync("on_delete", removed)
        return removed is not None

    def revert_to_version(self, name: str, version: int) -> Artifact:
        """Append a new version of `name` holding the content of its version at 0-based
        index `version` (as in orbiter: ``version_history(name)[version]``), re-index it
        and return the artifact. History is kept: with three versions, reverting to 0
        creates a fourth equal to the first. Observers are not notified (as in orbiter).

        Raises:
            ArtifactNotFoundError: There is no artifact `name`.
            KnowledgeError: `version` is not an index of its history.
        """
        artifact = self._require(name)
        if not is_int(version) or not 0 <= version < artifact.version_count:
            raise KnowledgeError(
                f"artifact {name!r} has no version index {version!r} "
                f"(indexes 0..{artifact.version_count - 1}, oldest first)",
                value=version,
            )
        return self._write(name, artifact.versions[version].content, None)[1]

    # ------------------------------------------------------------------ reads

    def read(self, name: str, version: int | None = None) -> str | None:
        """The content of version number `version` (1-based; the newest when ``None``) of
        `name`, or ``None`` when there is no artifact `name`.

        Raises:
            KnowledgeError: `name` has no such version.
        """
        artifact = self._artifacts.get(name)
        if artifact is None:
            return None
        if version is None:
            return artifact.content
        if not is_int(version) or not 1 <= version <= artifact.version:
            raise KnowledgeError(
                f"artifact {name!r} has no version {version!r} (versions 1..{artifact.version})",
                value=version,
            )
        return artifact.versions[version - 1].content

    def get(self, name: str) -> Artifact | None:
        """The artifact `name` with its whole history, or ``None``."""
        return self._artifacts.get(name)

    def list(self, *, artifact_type: ArtifactType | str | None = None) -> builtins.list[Artifact]:
        """All artifacts (of `artifact_type`, when given), sorted by name."""
        wanted = None if artifact_type is None else _artifact_type(artifact_type)
        return [
            self._artifacts[name]
            for name in self.names()
            if wanted is None or self._artifacts[name].artifact_type is wanted
        ]

    def names(self) -> builtins.list[str]:
        """Names of all artifacts, sorted."""
        return sorted(self._artifacts)

    def version_history(self, name: str) -> builtins.list[ArtifactVersion]:
        """Every version of `name`, oldest first (empty when there is no artifact `name`)."""
        artifact = self._artifacts.get(name)
        return builtins.list(artifact.versions) if artifact is not None else []

    # ------------------------------------------------------------------ internals

    def _write(
        self, name: str, content: str, artifact_type: ArtifactType | str | None
    ) -> tuple[str, Artifact]:
        _check_name(name)
        if not isinstance(content, str):
            raise KnowledgeError(
                f"content of artifact {name!r} must be a str, got {type(content).__name__}",
                value=content,
            )
        previous = self._artifacts.get(name)
        if artifact_type is not None:
            kind = _artifact_type(artifact_type)
        else:
            kind = previous.artifact_type if previous else ArtifactType.TEXT
        history = previous.versions if previous else ()
        version = ArtifactVersion(content, time.time(), version=len(history) + 1)
        artifact = Artifact(name, (*history, version), kind)
        self._commit(artifact)
        return ("on_update" if previous else "on_create"), artifact

    def _delete(self, name: str) -> Artifact | None:
        artifact = self._artifacts.get(name)
        if artifact is None:
            return None
        if self.storage_path is not None:
            self._file_for(name).unlink(missing_ok=True)
        del self._artifacts[name]
        if self.knowledge_store is not None:
            self.knowledge_store.remove(name)
        return artifact

    def _require(self, name: str) -> Artifact:
        artifact = self._artifacts.get(name)
        if artifact is None:
            known = ", ".join(self.names()) or "none"
            raise ArtifactNotFoundError(
                f"no artifact {name!r} in workspace {self.workspace_id!r} (artifacts: {known})",
                name=name,
            )
        return artifact

    def _commit(self, artifact: Artifact) -> None:
        if self.storage_path is not None:
            self._persist(artifact)
        self._artifacts[artifact.name] = artifact
        if self.knowledge_store is not None:
            self.knowledge_store.add(artifact.name, artifact.content)

    def _file_for(self, name: str) -> Path:
        assert self.storage_path is not None
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:40]
        return self.storage_path / f"{digest}.json"

    def _persist(self, artifact: Artifact) -> None:
        assert self.storage_path is not None
        record = {
            "workspace_id": self.workspace_id,
            "name": artifact.name,
            "artifact_type": artifact.artifact_type.value,
            "versions": [
                {"version": number, "content": v.content, "created_at": v.timestamp}
                for number, v in enumerate(artifact.versions, start=1)
            ],
        }
        write_atomic(self._file_for(artifact.name), json.dumps(record, ensure_ascii=False))

    def _load(self) -> None:
        assert self.storage_path is not None
        loaded: dict[str, Artifact] = {}
        for path in sorted(self.storage_path.glob("[0-9a-f]*.json")):
            artifact = self._parse(path)
            if path != self._file_for(artifact.name):
                raise KnowledgeError(f"{path} does not hold the artifact its name says", value=path)
            loaded[artifact.name] = artifact
        for artifact in sorted(loaded.values(), key=lambda a: (a.versions[0].timestamp, a.name)):
            self._artifacts[artifact.name] = artifact
            if self.knowledge_store is not None:
                self.knowledge_store.add(artifact.name, artifact.content)

    def _parse(self, path: Path) -> Artifact:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            owner, name = record["workspace_id"], record["name"]
            kind = ArtifactType(record.get("artifact_type", ArtifactType.TEXT))
            numbers = [int(v["version"]) for v in record["versions"]]
            versions = tuple(
                ArtifactVersion(str(v["content"]), float(v["created_at"]), version=number)
                for number, v in zip(numbers, record["versions"], strict=True)
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise KnowledgeError(f"cannot load artifact file {path}: {exc}", value=path) from exc
        if owner != self.workspace_id:
            raise KnowledgeError(
                f"{path} belongs to workspace {owner!r}, not {self.workspace_id!r}; "
                "give each workspace its own storage_path",
                value=path,
            )
        if not versions or numbers != builtins.list(range(1, len(versions) + 1)):
            raise KnowledgeError(f"{path} has missing or out-of-order versions", value=path)
        return Artifact(str(name), versions, kind)


def _artifact_type(value: ArtifactType | str) -> ArtifactType:
    try:
        return ArtifactType(value)
    except ValueError:
        known = ", ".join(t.value for t in ArtifactType)
        raise KnowledgeError(
            f"unknown artifact type {value!r}; types: {known}", value=value
        ) from None


def _check_name(name: object) -> None:
    if not isinstance(name, str) or not name.strip():
        raise KnowledgeError(f"artifact name must be a non-empty string, got {name!r}", value=name)
    if "\x00" in name:
        raise KnowledgeError(f"artifact name must not contain a NUL byte, got {name!r}", value=name)
    if len(name) > _MAX_NAME_LENGTH:
        raise KnowledgeError(
            f"artifact name is {len(name)} characters; the limit is {_MAX_NAME_LENGTH}", value=name
        )
