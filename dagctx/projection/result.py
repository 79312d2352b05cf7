"""The Projection: the rendered, budgeted prompt text and the account of how it was made."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from dagctx.nodes.base import NodeState


@dataclass(frozen=True, slots=True)
class Section:
    """One rendered node: what was asked for, what was shown, what it cost.

    ``cut_lines`` counts lines cut from a long text node; ``reference`` marks a one-line
    ``see #id`` for a node already rendered earlier (multi-parent).
    """

    node_id: str
    requested_state: NodeState
    rendered_state: NodeState
    tokens: int
    cut_lines: int = 0
    reference: bool = False
    version: int = 0


@dataclass(frozen=True, slots=True)
class Projection:
    """A prompt that fits its budget, with where the tokens went.

    Attributes:
        text: the prompt text.
        tokens: exact token count of ``text`` in the session's encoding.
        budget: the budget it was built for; ``tokens <= budget`` always.
        sections: rendered nodes in text order.
        omitted: ids of visible nodes left out, in walk order.
        degraded: node id → (requested state, rendered state) for nodes shown at less.
        reasons: node id → why it was degraded or left out.
        stable_prefix_tokens: tokens at the start of ``text`` identical to the previous
            projection of the same session (what a provider prompt cache can reuse).
    """

    text: str
    tokens: int
    budget: int
    sections: list[Section]
    omitted: list[str]
    degraded: dict[str, tuple[NodeState, NodeState]]
    reasons: dict[str, str] = field(default_factory=dict)
    stable_prefix_tokens: int = 0
    labels: dict[str, str] = field(default_factory=dict)

    def explain(self) -> str:
        """A plain-text table: each node's states, tokens, and why it was degraded/left out."""
        rows = [("node", "label", "requested", "rendered", "tokens", "why")]
        for s in self.sections:
            why = self.reasons.get(s.node_id, "")
            if s.reference:
                why = "reference to a node shown earlier"
            rows.append(
                (
                    s.node_id,
                    self.labels.get(s.node_id, ""),
                    s.requested_state.name,
                    s.rendered_state.name + (f" (-{s.cut_lines} lines)" if s.cut_lines else ""),
                    str(s.tokens),
                    why,
                )
            )
        for node_id in self.omitted:
            rows.append(
                (node_id, self.labels.get(node_id, ""), "", "OMITTED", "0",
                 self.reasons.get(node_id, "budget"))
            )  # fmt: skip
        widths = [min(40, max(len(r[i]) for r in rows)) for i in range(5)]
        lines = [
            "  ".join(cell[:40].ljust(w) for cell, w in zip(r[:5], widths, strict=True))
            + "  "
            + r[5]
            for r in rows
        ]
        used = f"{self.tokens}/{self.budget} tokens ({100 * self.tokens / self.budget:.1f}%)"
        lines.append(
            f"total: {used}; {len(self.sections)} sections, {len(self.degraded)} degraded,"
            f" {len(self.omitted)} left out; stable prefix {self.stable_prefix_tokens} tokens"
        )
        return "\n".join(lines)

    def to_messages(self) -> list[dict[str, str]]:
        """The projection as OpenAI-style chat messages (one system message)."""
        return [{"role": "system", "content": self.text}] if self.text else []

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable account of the projection (text included)."""
        return {
            "text": self.text,
            "tokens": self.tokens,
            "budget": self.budget,
            "stable_prefix_tokens": self.stable_prefix_tokens,
            "sections": [
                {
                    "node_id": s.node_id,
                    "requested_state": s.requested_state.name,
                    "rendered_state": s.rendered_state.name,
                    "tokens": s.tokens,
                    "cut_lines": s.cut_lines,
                    "reference": s.reference,
                }
                for s in self.sections
            ],
            "omitted": list(self.omitted),
            "degraded": {k: [a.name, b.name] for k, (a, b) in self.degraded.items()},
            "reasons": dict(self.reasons),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)
