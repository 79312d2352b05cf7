"""WorkNode: what this agent is working on, and who else is working on the same files.

A WorkNode mirrors one claim of this session's agent in the coordination store
(:mod:`dagctx.runtime.coordination`). It is recomputed every tick: the session's
:class:`~dagctx.runtime.coordination.WorkBoard` heartbeats the agent's claims and lists every live
claim once per tick, and the node derives from that list its status (``active``, or
``expired`` when its claim lapsed without a heartbeat), its conflicts (other agents'
claims overlapping its files where one side writes) and the other agents' claims. The
version bumps only when one of these differs (early cutoff): heartbeats and expiry times
are never rendered. Every rendered line is escaped onto its line
(:func:`dagctx._quote.inline`): intents, paths and agent names come from other agents.

The board reference is not serialized: a node rebuilt by
:meth:`~dagctx.nodes.base.Node.from_dict` is detached and renders what it last saw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import PurePosixPath
from typing import Any, ClassVar

from dagctx._quote import inline
from dagctx.nodes.base import Node, NodeState, TickFrequency
from dagctx.runtime.coordination import Claim, Conflict, WorkBoard, agent_label, find_conflicts

STATUSES = ("active", "done", "expired")
PEERS_SHOWN = 10  # DETAILS lists this many other claims; ALL lists all


@dataclass(frozen=True, slots=True)
class PeerClaim:
    """Another agent's live claim, without its (ever-changing) expiry time."""

    claim_id: str
    agent: str
    intent: str
    mode: str
    files: tuple[str, ...]

    @classmethod
    def of(cls, claim: Claim) -> PeerClaim:
        return cls(claim.claim_id, claim.agent_label(), claim.intent, claim.mode, claim.files)


class WorkNode(Node):
    """One claim of this agent: intent, files, mode, status, conflicts, other claims.

    Attributes:
        intent: what the agent is doing.
        access: the claim's mode, ``"write"`` or ``"read"`` (``mode`` is the node's
            running/paused mode, as for every node).
        paths: the claimed absolute paths (shown relative to ``root``).
        status: ``active``, ``done`` or ``expired``.
        conflicts: overlaps with other agents' claims (see :func:`find_conflicts`).
        peers: every other agent's live claim.
    """

    type_name: ClassVar[str] = "work"
    default_state: ClassVar[NodeState] = NodeState.DETAILS
    default_priority: ClassVar[int] = 80
    default_frequency: ClassVar[TickFrequency] = TickFrequency.turn()

    __slots__ = (
        "access",
        "agent_id",
        "agent_name",
        "board",
        "claim_id",
        "conflicts",
        "intent",
        "paths",
        "peers",
        "root",
        "status",
    )

    def __init__(
        self,
        claim: Claim,
        *,
        root: str,
        board: WorkBoard | None = None,
        status: str = "active",
        **node_fields: Any,
    ) -> None:
        super().__init__(**node_fields)
        self.claim_id = claim.claim_id
        self.agent_id = claim.agent_id
        self.agent_name = claim.agent_name
        self.intent = claim.intent
        self.access = claim.mode
        self.paths = claim.files
        self.root = root
        self.board = board
        self.status = status
        self.conflicts: tuple[Conflict, ...] = ()
        self.peers: tuple[PeerClaim, ...] = ()

    @property
    def files(self) -> list[str]:
        """The claimed paths as shown: relative to the session root when under it."""
        return [self.show(p) for p in self.paths]

    def show(self, path: str) -> str:
        """``path`` relative to the session root if it is under it, else as is."""
        try:
            relative = PurePosixPath(path).relative_to(self.root)
        except ValueError:
            return path
        return relative.as_posix()

    # -- change -----------------------------------------------------------------------

    def adopt_claim(self, claim: Claim) -> None:
        """Take the intent, mode and files of a renewed claim (no version bump: the
        caller refreshes and records the change)."""
        self.intent, self.access, self.paths, self.status = (
            claim.intent, claim.mode, claim.files, "active",
        )  # fmt: skip

    def finish(self) -> bool:
        """Mark the work done (the caller released the claim); False if it was already."""
        if self.status == "done":
            return False
        self.status, self.conflicts, self.peers = "done", (), ()
        self.mark_changed("work done")
        return True

    def recompute(self) -> bool:
        """Refresh from this tick's snapshot of the store; return whether anything shown
        changed. A detached, done or expired node does not change."""
        if self.board is None or self.status != "active":
            return False
        return self.refresh(self.board.snapshot())

    def observe(self, claims: Sequence[Claim]) -> str | None:
        """Derive status, conflicts and peers from the live ``claims`` without recording
        a change (for a node not yet in a graph); return a description of what differs,
        or None when nothing does."""
        own = next((c for c in claims if c.claim_id == self.claim_id), None)
        if own is None:
            status = "expired" if self.status == "active" else self.status
            conflicts: tuple[Conflict, ...] = ()
            peers: tuple[PeerClaim, ...] = ()
        else:
            status = "active"
            conflicts = find_conflicts(own, claims)
            peers = tuple(PeerClaim.of(c) for c in claims if c.agent_id != self.agent_id)
        if (status, conflicts, peers) == (self.status, self.conflicts, self.peers):
            return None
        description = self._describe(status, conflicts, peers)
        self.status, self.conflicts, self.peers = status, conflicts, peers
        return description

    def refresh(self, claims: Sequence[Claim], description: str | None = None) -> bool:
        """Like :meth:`observe`, but record a change when something differs or when
        ``description`` is given (an explicit update); return whether one was recorded."""
        observed = self.observe(claims)  # always: the view must follow the claims
        description = description or observed
        if description is None:
            return False
        self.mark_changed(description)
        return True

    def _describe(
        self, status: str, conflicts: tuple[Conflict, ...], peers: tuple[PeerClaim, ...]
    ) -> str:
        """A trace description of the step from the current view to the given one."""
        if status == "expired":
            return "claim expired (no heartbeat in time)"
        if conflicts != self.conflicts:
            if not conflicts:
                return "no conflicts"
            first = conflicts[0]
            more = f" and {len(conflicts) - 1} more" if len(conflicts) > 1 else ""
            return (
                f"{len(conflicts)} conflict{'s' * (len(conflicts) != 1)}: "
                f"{self.show(first.path)} with {first.agent_label()}{more}"
            )
        return f"other agents' claims: {len(peers)}"

    # -- rendering --------------------------------------------------------------------

    def label(self) -> str:
        return self.intent

    def _files_line(self, limit: int | None = None) -> str:
        files = self.files
        if not files:
            return "(no files)"
        shown = files if limit is None else files[:limit]
        more = f", +{len(files) - len(shown)} more" if len(shown) < len(files) else ""
        return ", ".join(shown) + more

    def _conflict_line(self, c: Conflict) -> str:
        theirs = "" if c.other_path == c.path else f" (they claim {self.show(c.other_path)})"
        return (
            f"- CONFLICT {c.kind} on {self.show(c.path)}: {c.agent_label()} is working on"
            f" {c.intent!r}{theirs}"
        )

    def _peer_line(self, p: PeerClaim, with_id: bool) -> str:
        files = ", ".join(self.show(f) for f in p.files) or "no files"
        claim = f" [claim {p.claim_id}]" if with_id else ""
        return f"- {p.agent}: {p.intent!r} ({p.mode}: {files}){claim}"

    def render_state(self, state: NodeState) -> str:
        return "\n".join(inline(line) for line in self._lines(state))

    def _lines(self, state: NodeState) -> list[str]:
        """The render's lines, unescaped."""
        n = len(self.conflicts)
        conflicts = f"{n} conflict{'s' * (n != 1)}"
        if state == NodeState.COLLAPSED:
            return [
                f"- work #{self.id}: {self.intent} ({self.status}; {self.access}"
                f" {self._files_line(3)}; {conflicts})"
            ]
        header = f"### Work: {self.intent} (#{self.id}, {self.status})"
        if state == NodeState.SUMMARY:
            lines = [header, f"{self.access}: {self._files_line(10)}"]
            if self.conflicts:
                where = sorted({f"{self.show(c.path)} ({c.agent_label()})" for c in self.conflicts})
                lines.append(f"{conflicts}: " + ", ".join(where))
            else:
                lines.append("no conflicts")
            lines.append(f"other agents: {len(self.peers)} active claims")
            return lines
        full = state >= NodeState.ALL
        agent = agent_label(self.agent_name, self.agent_id)
        lines = [header, f"agent: {agent}; mode: {self.access}"]
        if full:
            lines.append(f"claim: {self.claim_id}")
        lines.append("files: " + self._files_line())
        lines.extend(self._conflict_line(c) for c in self.conflicts)
        if not self.conflicts:
            lines.append("no conflicts")
        peers = self.peers if full else self.peers[:PEERS_SHOWN]
        if peers:
            lines.append(f"other agents' claims ({len(self.peers)}):")
            lines.extend(self._peer_line(p, full) for p in peers)
            if len(peers) < len(self.peers):
                lines.append(f"- … {len(self.peers) - len(peers)} more")
        return lines

    # -- serialization ----------------------------------------------------------------

    def data_dict(self) -> dict[str, Any]:
        return {
            "claim_id": self.claim_id,
            "agent_id": self.agent_id,
            "agent_name": self.agent_name,
            "intent": self.intent,
            "access": self.access,
            "paths": list(self.paths),
            "root": self.root,
            "status": self.status,
            "conflicts": [asdict(c) for c in self.conflicts],
            "peers": [asdict(p) for p in self.peers],
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> WorkNode:
        claim = Claim(
            data["claim_id"], data["agent_id"], data.get("agent_name"), 0, data["intent"],
            data["access"], tuple(data.get("paths", ())), 0.0, 0.0,
        )  # fmt: skip
        node = cls(claim, root=data["root"], status=data.get("status", "active"))
        node.conflicts = tuple(Conflict(**c) for c in data.get("conflicts", ()))
        node.peers = tuple(
            PeerClaim(**{**p, "files": tuple(p.get("files", ()))}) for p in data.get("peers", ())
        )
        return node
