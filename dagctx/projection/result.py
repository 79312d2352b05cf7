"""The Projection: the rendered, budgeted prompt text and the account of how it was made."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import FrozenInstanceError, dataclass
from typing import Any, TypeVar, overload

from dagctx.nodes.base import NodeState
from dagctx.projection.messages import CONTEXT_INSTRUCTIONS, Provider, request
from dagctx.projection.relevance import Score

_T = TypeVar("_T")
_STATES = tuple(NodeState)


class Section:
    """One rendered node: what was asked for, what was shown, what it cost.

    ``cut_lines`` counts lines cut from a long text node; ``reference`` marks a one-line
    ``see #id`` for a node already rendered earlier (multi-parent).

    Immutable, compared and hashed by its fields as a dataclass is. A projection holds
    one per shown node (7,000 at repo-10k and 128k), so it keeps four fields, not seven:
    both states, the reference mark and the cut lines are one int (a small one, shared
    by every section with the same states, unless lines were cut).
    """

    __slots__ = ("_packed", "node_id", "tokens", "version")
    __match_args__ = (
        "node_id",
        "requested_state",
        "rendered_state",
        "tokens",
        "cut_lines",
        "reference",
        "version",
    )

    node_id: str
    tokens: int
    version: int
    _packed: int  # cut_lines << 7 | reference << 6 | rendered_state << 3 | requested_state

    def __init__(
        self,
        node_id: str,
        requested_state: NodeState,
        rendered_state: NodeState,
        tokens: int,
        cut_lines: int = 0,
        reference: bool = False,
        version: int = 0,
    ) -> None:
        put = object.__setattr__
        put(self, "node_id", node_id)
        put(self, "tokens", tokens)
        put(self, "version", version)
        packed = cut_lines << 7 | rendered_state << 3 | requested_state
        put(self, "_packed", packed | 64 if reference else packed)

    @property
    def requested_state(self) -> NodeState:
        return _STATES[self._packed & 7]

    @property
    def rendered_state(self) -> NodeState:
        return _STATES[self._packed >> 3 & 7]

    @property
    def reference(self) -> bool:
        return bool(self._packed & 64)

    @property
    def cut_lines(self) -> int:
        return self._packed >> 7

    def _fields(self) -> tuple[str, int, int, int]:
        return self.node_id, self.tokens, self.version, self._packed

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Section:
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[type[Section], tuple[Any, ...]]:
        return Section, tuple(getattr(self, name) for name in self.__match_args__)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__match_args__)
        return f"Section({fields})"


@dataclass(frozen=True, slots=True)
class Account:
    """What a projection left out and why, computed on first use (it can list every node
    of a large graph, which a turn that only reads ``text`` should not pay for)."""

    omitted: Callable[[], list[str]]
    reasons: Callable[[], dict[str, str]]
    labels: Callable[[], dict[str, str]]
    scores: Callable[[], dict[str, Score]] = dict
    notes: Callable[[], dict[str, str]] = dict


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
            projection of the same session (what a provider prompt cache can reuse):
            the leading sections whose text is byte-identical to the previous text at the
            same place (all tokens when the whole text is), measured on the text.
        prefix_break: what ended the stable prefix: the first differing section as
            ``#id (label)``, the changes/footer after identical sections, ``"no previous
            projection"``, or ``""`` when the text is identical to the previous one.
        band_ends: offsets in ``text`` where each band of the layout by volatility ends
            (:mod:`dagctx.projection.bands`).
        block_ends: offsets where :meth:`to_messages` splits ``text`` into content
            blocks: the band ends, the end of each recent conversation section and
            where the settled band ended before its last chunk (:func:`.bands.ends`;
            the band ends when not given); the Anthropic format also splits the
            workspace (:func:`~dagctx.projection.messages.splits`).
        labels: node id → label, for every node the projection accounts for.
        scores: node id → relevance :class:`~dagctx.projection.relevance.Score` (what
            decided who degrades first, after priority).
        notes: node id → what the node holds back for safety (a secret-bearing file
            withheld, secrets redacted: :meth:`Node.safety_note`).

    ``omitted``, ``degraded``, ``reasons``, ``labels``, ``scores`` and ``notes`` are
    computed on first access when the projection was built with an :class:`Account`.
    Projections are immutable.
    """

    __slots__ = (
        "_account",
        "_degraded",
        "_labels",
        "_notes",
        "_omitted",
        "_reasons",
        "_scores",
        "band_ends",
        "block_ends",
        "budget",
        "cache_key",
        "prefix_break",
        "sections",
        "stable_prefix_tokens",
        "text",
        "tokens",
    )

    text: str
    tokens: int
    budget: int
    sections: list[Section]
    stable_prefix_tokens: int
    prefix_break: str
    band_ends: tuple[int, ...]
    block_ends: tuple[int, ...]
    cache_key: str
    _account: Account | None
    _omitted: list[str] | None
    _degraded: dict[str, tuple[NodeState, NodeState]] | None
    _reasons: dict[str, str] | None
    _labels: dict[str, str] | None
    _scores: dict[str, Score] | None
    _notes: dict[str, str] | None

    def __init__(
        self,
        text: str,
        tokens: int,
        budget: int,
        sections: list[Section],
        omitted: list[str] | None = None,
        degraded: dict[str, tuple[NodeState, NodeState]] | None = None,
        reasons: dict[str, str] | None = None,
        stable_prefix_tokens: int = 0,
        labels: dict[str, str] | None = None,
        *,
        account: Account | None = None,
        scores: dict[str, Score] | None = None,
        notes: dict[str, str] | None = None,
        prefix_break: str = "",
        band_ends: Iterable[int] = (),
        block_ends: Iterable[int] = (),
        cache_key: str = "",
    ) -> None:
        put = object.__setattr__
        put(self, "text", text)
        put(self, "tokens", tokens)
        put(self, "budget", budget)
        put(self, "sections", sections)
        put(self, "stable_prefix_tokens", stable_prefix_tokens)
        put(self, "prefix_break", prefix_break)
        put(self, "band_ends", tuple(band_ends))
        put(self, "block_ends", tuple(block_ends) or tuple(band_ends))
        put(self, "cache_key", cache_key)
        put(self, "_account", account)
        empty = account is None
        put(self, "_omitted", omitted if omitted is not None or not empty else [])
        put(self, "_degraded", degraded)
        put(self, "_reasons", reasons if reasons is not None or not empty else {})
        put(self, "_labels", labels if labels is not None or not empty else {})
        put(self, "_scores", scores if scores is not None or not empty else {})
        put(self, "_notes", notes if notes is not None or not empty else {})

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Projection is immutable (cannot set {name!r})")

    def _lazy(self, name: str, make: Callable[[], _T]) -> _T:
        value: _T | None = getattr(self, name)
        if value is None:
            value = make()
            object.__setattr__(self, name, value)
        return value

    @property
    def omitted(self) -> list[str]:
        return self._lazy("_omitted", lambda: self._account.omitted())  # type: ignore[union-attr]

    @property
    def reasons(self) -> dict[str, str]:
        return self._lazy("_reasons", lambda: self._account.reasons())  # type: ignore[union-attr]

    @property
    def labels(self) -> dict[str, str]:
        return self._lazy("_labels", lambda: self._account.labels())  # type: ignore[union-attr]

    @property
    def scores(self) -> dict[str, Score]:
        return self._lazy("_scores", lambda: self._account.scores())  # type: ignore[union-attr]

    @property
    def notes(self) -> dict[str, str]:
        return self._lazy("_notes", lambda: self._account.notes())  # type: ignore[union-attr]

    @property
    def degraded(self) -> dict[str, tuple[NodeState, NodeState]]:
        return self._lazy(
            "_degraded",
            lambda: {
                s.node_id: (s.requested_state, s.rendered_state)
                for s in self.sections
                if not s.reference and (s.rendered_state < s.requested_state or s.cut_lines)
            },
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Projection):
            return NotImplemented
        return (self.text, self.tokens, self.budget, self.sections, self.omitted) == (
            other.text,
            other.tokens,
            other.budget,
            other.sections,
            other.omitted,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"<Projection {self.tokens}/{self.budget} tokens, {len(self.sections)} sections,"
            f" {len(self.omitted)} left out>"
        )

    def explain(self, full: bool = False, nodes: str | None = None) -> str:
        """Where the tokens went, as text (see :mod:`dagctx.projection.explain`).

        By default a summary that stays a screenful at any size: tokens and nodes by
        rendered state and by directory, the top nodes by tokens with their relevance
        score, the degraded, left-out and held-back (secrets) nodes grouped by directory
        and reason with counts. With ``full`` a table of every node: its states, tokens,
        relevance score with its parts, why it was degraded or left out, and what it holds
        back for safety; ``nodes`` (a glob over labels and ids, ``*`` crossing ``/``)
        gives that table for the nodes it matches. Both end with the totals line (the
        stable prefix and what ended it, :attr:`prefix_break`) and, when a node holds
        something back, a line counting withheld and redacted files."""
        from dagctx.projection.explain import full_table, summary

        if full or nodes is not None:
            return full_table(self, nodes)
        return summary(self)

    @overload
    def to_messages(self, provider: None = None) -> list[dict[str, str]]: ...

    @overload
    def to_messages(self, provider: Provider) -> dict[str, Any]: ...

    def to_messages(
        self, provider: Provider | None = None
    ) -> list[dict[str, str]] | dict[str, Any]:
        """The projection as a model request.

        Without ``provider``: OpenAI-style chat messages: a short system message saying how
        to read it (:data:`CONTEXT_INSTRUCTIONS`), then the text as a user message. The text
        quotes files, outlines and tool descriptions that anyone may have written, so it
        never goes in the system role. An empty projection gives no messages.

        With ``provider`` (``"anthropic"``, ``"openai"`` or ``"openai-responses"``): the
        keyword arguments of that provider's create call (all but ``model`` and the output
        limit), with cache hints: Anthropic content blocks split at :attr:`block_ends`
        and inside the workspace, with ``cache_control`` breakpoints at the band ends
        (:attr:`band_ends`) and, in rotation, at one of the workspace's blocks, OpenAI's
        ``prompt_cache_key`` (:attr:`cache_key`); see :mod:`dagctx.projection.messages`.

        Raises:
            ArgumentError: ``provider`` is not one of those.
        """
        if provider is not None:
            return request(
                provider, self.text, self.band_ends, self.block_ends, self.cache_key, self.budget
            )
        if not self.text:
            return []
        return [
            {"role": "system", "content": CONTEXT_INSTRUCTIONS},
            {"role": "user", "content": self.text},
        ]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable account of the projection (text included): each section and
        each node left out with its node id and label (a file's path)."""
        labels, reasons = self.labels, self.reasons
        return {
            "text": self.text,
            "tokens": self.tokens,
            "budget": self.budget,
            "stable_prefix_tokens": self.stable_prefix_tokens,
            "prefix_break": self.prefix_break,
            "sections": [
                {
                    "node_id": s.node_id,
                    "requested_state": s.requested_state.name,
                    "rendered_state": s.rendered_state.name,
                    "label": labels.get(s.node_id, ""),
                    "tokens": s.tokens,
                    "cut_lines": s.cut_lines,
                    "reference": s.reference,
                }
                for s in self.sections
            ],
            "omitted": [
                {"node_id": n, "label": labels.get(n, ""), "reason": reasons.get(n, "budget")}
                for n in self.omitted
            ],
            "degraded": {k: [a.name, b.name] for k, (a, b) in self.degraded.items()},
            "reasons": dict(reasons),
            "notes": dict(self.notes),
        }

    def to_html(self, *, changed: Iterable[str] = ()) -> str:
        """The projection as one self-contained HTML page (inline style and script, nothing
        fetched): the budget bar, a treemap of the sections (area = tokens, grouped by
        folder, colour = rendered state), the nodes in ``changed`` (e.g. the ids of the
        last tick's traces) highlighted, and the degraded and left-out nodes with why and
        their score; see :mod:`dagctx.viz.page`."""
        from dagctx.viz.page import page_html

        return page_html(self, changed=changed)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)
