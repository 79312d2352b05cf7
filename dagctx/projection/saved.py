"""A projection as a session file keeps it: :func:`save_projection` and :func:`load_projection`.

A resumed session whose graph, budget and settings are the saved ones projects what was
saved (:mod:`dagctx.session.resume` decides when); this module only turns a
:class:`Projection` into two parts and back:

- the *head*, JSON text: what every turn reads (``text``, ``tokens``, ``budget``, the
  sections, the stable prefix and what ended it, the band and block ends, the cache
  key) and what made it (:data:`FORMAT` and the caller's ``made_by``: the code that
  projects), as JSON text after the SHA-256 of that text and the account (64 hex
  digits);
- the *account*: what the projection left out and why, every node's label, relevance
  score and safety note (:class:`~dagctx.projection.result.Account`), as zlib-compressed
  JSON naming each node id once (about 11 bytes a node), decompressed and decoded only
  when one of them is read.

:func:`load_projection` checks both parts against that digest and the head field by
field, and returns None for anything else (another version, a damaged or tampered
part): the caller projects afresh then, so a bad saved projection is never an error.

Imports the projection's result types and the node states; must not import the session,
the graph or anything that does I/O.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Callable
from typing import Any

from dagctx.nodes.base import NodeState
from dagctx.projection.relevance import Score
from dagctx.projection.result import Account, Projection, Section

FORMAT = 1
"""The layout of the two parts; a head of another layout is not taken back."""

_STATES = tuple(NodeState)
_CHECK = 64  # hex digits of the SHA-256 a head starts with


def save_projection(projection: Projection, made_by: str) -> tuple[str, bytes]:
    """The head (JSON text) and the account (compressed JSON) of ``projection``, made by
    the code ``made_by`` names; reads every part of its account (module docstring)."""
    blob = zlib.compress(json.dumps(_account(projection), separators=(",", ":")).encode(), 1)
    head = {
        "format": FORMAT,
        "made_by": made_by,
        "text": projection.text,
        "tokens": projection.tokens,
        "budget": projection.budget,
        "sections": [
            [
                s.node_id,
                int(s.requested_state),
                int(s.rendered_state),
                s.tokens,
                s.cut_lines,
                s.reference,
                s.version,
            ]
            for s in projection.sections
        ],
        "stable_prefix_tokens": projection.stable_prefix_tokens,
        "prefix_break": projection.prefix_break,
        "band_ends": list(projection.band_ends),
        "block_ends": list(projection.block_ends),
        "cache_key": projection.cache_key,
    }
    text = json.dumps(head, separators=(",", ":"))
    return _check(text.encode(), blob) + text, blob


def _check(head: bytes, blob: bytes) -> str:
    """The SHA-256 (hex) of a head's JSON and an account, as the head starts with it."""
    return hashlib.sha256(head + b"\0" + blob).hexdigest()


def _account(projection: Projection) -> dict[str, Any]:
    """The account of ``projection`` as JSON values: each node id once (``ids``, the
    keys of ``labels``, in order), other parts naming a node by its index there (its id
    for one not labelled), each in its own order, and each distinct reason and score
    part once."""
    labels = projection.labels
    index = {nid: i for i, nid in enumerate(labels)}

    def ref(nid: str) -> int | str:
        return index.get(nid, nid)

    reasons = projection.reasons
    reason_texts: dict[str, int] = {}
    score_parts: dict[tuple[Any, ...], int] = {}
    scores = projection.scores
    return {
        "ids": list(labels),
        "labels": list(labels.values()),
        "omitted": [ref(nid) for nid in projection.omitted],
        "reasons": [ref(nid) for nid in reasons],
        "reason_of": [reason_texts.setdefault(why, len(reason_texts)) for why in reasons.values()],
        "reason_texts": list(reason_texts),
        "scores": [ref(nid) for nid in scores],
        "levels": [score.level for score in scores.values()],
        "parts_of": [
            score_parts.setdefault(
                (s.lexical, s.tier, s.inherited, s.graph, s.recent), len(score_parts)
            )
            for s in scores.values()
        ],
        "parts": list(score_parts),
        "notes": [[ref(nid), note] for nid, note in projection.notes.items()],
    }


def load_projection(
    head_text: object, blob: object, made_here: Callable[[object], bool]
) -> Projection | None:
    """The projection :func:`save_projection` gave ``head_text`` and ``blob`` for, or
    None when they are not such parts of one made by code that ``made_here`` takes (it
    is given the saved ``made_by``; never raises)."""
    if not isinstance(head_text, str | bytes) or type(blob) is not bytes:
        return None
    raw = head_text.encode() if isinstance(head_text, str) else head_text
    if raw[:_CHECK].decode("ascii", "replace") != _check(raw[_CHECK:], blob):
        return None
    try:
        head = json.loads(raw[_CHECK:])
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    if type(head) is not dict or head.get("format") != FORMAT or not made_here(head.get("made_by")):
        return None
    ints = ("tokens", "budget", "stable_prefix_tokens")
    strings = ("text", "prefix_break", "cache_key")
    if not all(_is_count(head.get(key)) for key in ints):
        return None
    if not all(type(head.get(key)) is str for key in strings):
        return None
    band_ends, block_ends = _counts(head.get("band_ends")), _counts(head.get("block_ends"))
    if band_ends is None or block_ends is None:
        return None
    sections = _sections(head.get("sections"))
    if sections is None or head["tokens"] > head["budget"]:
        return None
    account = _Account(blob)
    return Projection(
        head["text"],
        head["tokens"],
        head["budget"],
        sections,
        stable_prefix_tokens=head["stable_prefix_tokens"],
        account=Account(
            account.omitted, account.reasons, account.labels, account.scores, account.notes
        ),
        prefix_break=head["prefix_break"],
        band_ends=band_ends,
        block_ends=block_ends,
        cache_key=head["cache_key"],
    )


def _is_count(value: object) -> bool:
    return type(value) is int and value >= 0


def _counts(values: object) -> list[int] | None:
    """``values`` if it is a list of ints >= 0, else None."""
    if type(values) is not list or not all(map(_is_count, values)):
        return None
    return values


def _sections(rows: object) -> list[Section] | None:
    """The sections of saved ``rows``, or None when one is malformed."""
    if type(rows) is not list:
        return None
    sections = []
    for row in rows:
        if type(row) is not list or len(row) != 7:
            return None
        node_id, requested, rendered, tokens, cut, reference, version = row
        states_ok = all(type(s) is int and 0 <= s < len(_STATES) for s in (requested, rendered))
        if not (type(node_id) is str and states_ok and type(reference) is bool):
            return None
        if not all(map(_is_count, (tokens, cut, version))):
            return None
        sections.append(
            Section(node_id, _STATES[requested], _STATES[rendered], tokens, cut, reference, version)
        )
    return sections


class _Account:
    """The saved account of a projection (:func:`_account`), decoded on first use (its
    digest was checked when the head was read, so it is what :func:`save_projection`
    wrote); each part is made anew when asked for (the projection keeps it)."""

    __slots__ = ("_blob", "_ids", "_parts")

    def __init__(self, blob: bytes) -> None:
        self._blob = blob
        self._parts: dict[str, Any] = {}
        self._ids: list[str] = []

    def _part(self, name: str) -> Any:
        if not self._parts:
            self._parts = json.loads(zlib.decompress(self._blob))
            self._ids = self._parts["ids"]
        return self._parts[name]

    def _nodes(self, name: str) -> list[str]:
        refs = self._part(name)
        ids = self._ids
        return [ids[r] if type(r) is int else r for r in refs]

    def omitted(self) -> list[str]:
        return self._nodes("omitted")

    def reasons(self) -> dict[str, str]:
        texts = self._part("reason_texts")
        why = [texts[k] for k in self._part("reason_of")]
        return dict(zip(self._nodes("reasons"), why, strict=True))

    def labels(self) -> dict[str, str]:
        return dict(zip(self._part("ids"), self._part("labels"), strict=True))

    def scores(self) -> dict[str, Score]:
        parts = self._part("parts")
        made = zip(self._part("levels"), self._part("parts_of"), strict=True)
        scores = [Score(level, *parts[k]) for level, k in made]
        return dict(zip(self._nodes("scores"), scores, strict=True))

    def notes(self) -> dict[str, str]:
        ids = self._part("ids")
        return {ids[r] if type(r) is int else r: note for r, note in self._part("notes")}


__all__ = ["FORMAT", "load_projection", "save_projection"]
