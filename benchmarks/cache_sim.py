"""``python -m benchmarks.cache_sim [--quick]``: provider prompt caches over a scripted session.

A scripted agent session (200 turns; 60 with ``--quick``) over a generated repository of
1,000 files (:func:`benchmarks.workloads.write_repo`, ``depth=2``): the agent edits files
(mostly a small working set, sometimes another), adds new files, runs commands (a tool
call and its output in the conversation), user and assistant messages, focus changes and
one budget change (32k → 24k at the half). Every turn's request
(``to_messages(provider=...)``) is fed to a simulation of each provider's published rules:

- Anthropic: explicit ``cache_control`` breakpoints (at most 4); each breakpoint's
  prefix is written to the cache (1.25× input price). A breakpoint reads (0.1×) the
  longest prefix an earlier request wrote that ends at a block boundary of this request
  among the :data:`LOOKBACK` positions ending at it (the breakpoint itself counted as
  the first, as Anthropic's documentation counts them: a breakpoint 20 blocks after the
  last write misses it), if it was written or read within the 5-minute TTL (a read
  refreshes it); prefixes under 1,024 tokens are not cached.
- OpenAI: automatic prefix caching: the longest prefix shared with an earlier prompt
  (within the retention), in 128-token steps from 1,024 tokens, is read at 0.5×.

Turns are 30 s apart. Three layouts are compared: *walk order* (every section in walk
order, volatile ones last: dagctx before the volatility layout), *volatility* (today's
:mod:`dagctx.projection.bands`) and *append-only history* (a baseline agent that keeps the
first projection and appends each turn's new messages and edited files whole, with no
budget). Reported per layout and provider: the share of prompt tokens read from the
cache, tokens written to it, and the cost in input-token units; plus the largest
projection against its budget, where the volatility layout's unread tokens went by kind
of turn (its events: a user message, a file's first edit, ...; :func:`unread_table`), and
on how many turns the two dagctx layouts show the
same sections at the same states. They need not: the walk order layout counts the
conversation as workspace, so the reservation for the later bands
(:func:`dagctx.projection.bands.workspace_room`) covers only the session node and the
changes there; whether the volatility layout costs relevance is measured by the
relevance benchmark (``python -m benchmarks.relevance``).

``make bench`` runs it through :func:`cache_sim` (200 turns; 60 in ``make bench-quick``):
a row per layout and provider with the read share, the volatility layout's against the
target of :data:`TARGET` (SPEC §11 / issue 17), then the hard budget and the turns
with the same states.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

from benchmarks.scenarios import Bench, Row, row
from benchmarks.workloads import write_repo
from dagctx import Session
from dagctx.nodes.base import Node
from dagctx.projection import bands
from dagctx.projection.messages import CONTEXT_INSTRUCTIONS
from dagctx.tokens import get_encoding
from dagctx.watch.scan import scan_tree

TURN_SECONDS = 30.0
ANTHROPIC_TTL = 300.0
LOOKBACK = 20  # block positions an Anthropic breakpoint checks for a hit, its own the first
OPENAI_RETENTION = 600.0
MIN_CACHED = 1024
OPENAI_STEP = 128
PRICE = {"write": 1.25, "anthropic_read": 0.1, "openai_read": 0.5}
TARGET = 0.80
LAYOUTS = ("walk order", "volatility", "append-only history")

ENC = get_encoding()


def tokens(text: str) -> int:
    return len(ENC.encode_ordinary(text))


@dataclass
class Tally:
    """What one provider's cache did over a session."""

    prompt: int = 0
    read: int = 0
    written: int = 0
    unread: dict[str, int] = field(default_factory=dict)  # turn's events → tokens not read

    @property
    def share(self) -> float:
        return self.read / self.prompt if self.prompt else 0.0

    def cost(self, read_price: float) -> float:
        uncached = self.prompt - self.read - self.written
        return uncached + self.written * PRICE["write"] + self.read * read_price


@dataclass
class Anthropic:
    """Breakpoint prefixes in the cache: key → last time written or read."""

    tally: Tally = field(default_factory=Tally)
    entries: dict[str, float] = field(default_factory=dict)
    system: int = field(default_factory=lambda: tokens(CONTEXT_INSTRUCTIONS))

    def request(self, blocks: list[str], marked: set[int], now: float) -> None:
        """One request of content ``blocks``, those at the indices ``marked`` carrying a
        breakpoint (module docstring)."""
        keys, sizes = [], []  # per block: the key and tokens of the prefix ending there
        digest, size = hashlib.sha256(), self.system
        for block in blocks:
            digest.update(block.encode())
            size += tokens(block)
            keys.append(digest.hexdigest())
            sizes.append(size)
        read, hit = 0, None
        for j in marked:
            for i in range(j, max(-1, j - LOOKBACK), -1):
                alive = now - self.entries.get(keys[i], -1e9) <= ANTHROPIC_TTL
                if alive and sizes[i] >= MIN_CACHED and sizes[i] > read:
                    read, hit = sizes[i], keys[i]
        last = max((sizes[j] for j in marked), default=0)
        written = max(0, last - read) if last >= MIN_CACHED else 0
        if hit is not None:
            self.entries[hit] = now
        for j in marked:
            if sizes[j] >= MIN_CACHED:
                self.entries[keys[j]] = now
        self.tally.prompt += self.system + tokens("".join(blocks))
        self.tally.read += read
        self.tally.written += written


@dataclass
class OpenAI:
    """Earlier prompts (text, time); the longest shared prefix is read."""

    tally: Tally = field(default_factory=Tally)
    earlier: list[tuple[str, float]] = field(default_factory=list)

    def request(self, text: str, now: float) -> None:
        prompt = CONTEXT_INSTRUCTIONS + text
        self.earlier = [(p, t) for p, t in self.earlier if now - t <= OPENAI_RETENTION]
        shared = max((_common(prompt, p) for p, _ in self.earlier), default=0)
        read = 0
        if shared:
            # the shared characters' tokens, less the one that may straddle the boundary
            cached = max(0, tokens(prompt[:shared]) - 1)
            read = cached // OPENAI_STEP * OPENAI_STEP if cached >= MIN_CACHED else 0
        self.tally.prompt += tokens(prompt)
        self.tally.read += read
        self.earlier.append((prompt, now))


def _common(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` (bisection on slices)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass
class Outcome:
    layout: str
    anthropic: Tally
    openai: Tally
    worst: float  # the largest tokens / budget over the session
    shown: list[list[tuple[str, int]]]  # per turn: (node id, rendered state) shown
    events: dict[str, int]  # what a turn did (its events joined by "+") → turns


def _walk_order(node: Node) -> int:
    return bands.VOLATILE if node.volatile else bands.STABLE


@contextmanager
def _layout(name: str) -> Iterator[None]:
    if name == "walk order":
        with mock.patch("dagctx.projection.projector.band_of", _walk_order):
            yield
    else:
        yield


def run(layout: str, turns: int, work: Path) -> Outcome:
    """Play the script under ``layout`` in a fresh copy of the repository."""
    repo = write_repo(work / "repo", depth=2)
    rng = random.Random(17)
    working = rng.sample(repo.files, 6)
    anthropic, openai = Anthropic(), OpenAI()
    shown: list[list[tuple[str, int]]] = []
    worst = 0.0
    history: list[str] = []
    events: dict[str, int] = {}
    edited: set[str] = set()
    with _layout(layout), Session(repo.root, budget=32_000) as s:
        scan_tree(s, ".")
        s.topic("work")
        s.message("user", f"fix the bug in {working[0]}")
        s.focus(f"fix the bug in {working[0]}")
        for turn in range(1, turns + 1):
            delta: list[str] = []
            kinds: list[str] = []
            if turn == turns // 2:
                s.budget = 24_000
                kinds.append("budget")
            if turn % 50 == 0:
                s.focus(f"look at {working[turn % len(working)]}")
                kinds.append("focus")
            if turn % 3 == 0:  # the agent edits a file of its working set (or another)
                rel = rng.choice(working) if rng.random() < 0.85 else rng.choice(repo.files)
                kinds.append("edit" if rel in edited else "first edit")
                edited.add(rel)
                path = repo.root / rel
                path.write_text(path.read_text() + f"\n# turn {turn}\n")
                s.file_changed(path)
                delta.append(path.read_text())
            if turn % 25 == 0:
                rel = f"new_{turn}.py"
                (repo.root / rel).write_text(f"def new_{turn}():\n    return {turn}\n")
                s.text(rel)
                delta.append(rel)
                kinds.append("new file")
            if turn % 7 == 0:
                out = "\n".join(f"test_{turn}_{k} PASSED" for k in range(20))
                call = f"c{turn}"
                s.message("tool_call", '{"cmd": "pytest -q"}', tool_call_id=call, name="shell")
                s.message("tool_result", out, tool_call_id=call, name="shell")
                delta.append(out)
                kinds.append("tool output")
            if turn % 5 == 0:
                s.message("user", f"turn {turn}: what next?")
                delta.append(f"turn {turn}: what next?")
                kinds.append("user message")
            s.message("assistant", f"turn {turn}: working on it")
            delta.append(f"turn {turn}: working on it")
            p = s.tick().projection
            worst = max(worst, p.tokens / p.budget)
            shown.append(sorted((x.node_id, int(x.rendered_state)) for x in p.sections))
            now = turn * TURN_SECONDS
            label = "+".join(kinds) or "messages only"
            events[label] = events.get(label, 0) + 1
            with _unread(label, anthropic.tally, openai.tally):
                if layout == "append-only history":
                    # each turn is appended as a new block, with a breakpoint on the last
                    history.append(p.text if not history else "".join(delta))
                    anthropic.request(history, {len(history) - 1}, now)
                    openai.request("".join(history), now)
                    continue
                request = p.to_messages(provider="anthropic")["messages"]
                content = request[0]["content"] if request else []
                marked = {k for k, block in enumerate(content) if "cache_control" in block}
                anthropic.request([block["text"] for block in content], marked, now)
                openai.request(p.text, now)
    return Outcome(layout, anthropic.tally, openai.tally, worst, shown, events)


@contextmanager
def _unread(label: str, *tallies: Tally) -> Iterator[None]:
    """Add the prompt tokens the requests inside leave unread to ``label`` in each tally."""
    before = [(t.prompt, t.read) for t in tallies]
    try:
        yield
    finally:
        for t, (prompt, read) in zip(tallies, before, strict=True):
            t.unread[label] = t.unread.get(label, 0) + (t.prompt - prompt) - (t.read - read)


def simulate(turns: int, log: Callable[[str], None] = lambda _: None) -> list[Outcome]:
    outcomes = []
    for layout in LAYOUTS:
        with tempfile.TemporaryDirectory(prefix="dagctx-cache-") as work:
            log(f"cache simulation: {layout} …")
            outcomes.append(run(layout, turns, Path(work)))
    return outcomes


def table(outcomes: list[Outcome]) -> str:
    lines = [
        f"{'layout':<22} {'provider':<10} {'read share':>10} {'written':>10} {'cost':>12}"
        f" {'prompt':>12}"
    ]
    for o in outcomes:
        for name, tally, price in (
            ("anthropic", o.anthropic, PRICE["anthropic_read"]),
            ("openai", o.openai, PRICE["openai_read"]),
        ):
            lines.append(
                f"{o.layout:<22} {name:<10} {100 * tally.share:>9.1f}% {tally.written:>10,}"
                f" {tally.cost(price):>12,.0f} {tally.prompt:>12,}"
            )
    return "\n".join(lines)


def unread_table(o: Outcome) -> str:
    """Where ``o``'s prompt tokens not read from the cache went: per kind of turn (its
    events), the turns and each provider's unread tokens as a share of the session's
    prompt tokens, most first."""
    lines = [f"{'turn (events)':<34} {'turns':>5} {'anthropic unread':>16} {'openai unread':>14}"]
    share = {
        name: {k: v / max(1, tally.prompt) for k, v in tally.unread.items()}
        for name, tally in (("anthropic", o.anthropic), ("openai", o.openai))
    }
    for label in sorted(o.events, key=lambda k: -share["anthropic"].get(k, 0.0)):
        lines.append(
            f"{label:<34} {o.events[label]:>5} {100 * share['anthropic'].get(label, 0.0):>15.1f}%"
            f" {100 * share['openai'].get(label, 0.0):>13.1f}%"
        )
    return "\n".join(lines)


def _same_turns(a: Outcome, b: Outcome) -> float:
    """Turns on which ``a`` and ``b`` show the same sections at the same states."""
    return float(sum(x == y for x, y in zip(a.shown, b.shown, strict=True)))


def cache_sim(b: Bench) -> list[Row]:
    """The ``make bench`` rows (module docstring)."""
    turns = 60 if b.quick else 200
    outcomes = simulate(turns)
    rows: list[Row] = []
    for o in outcomes:
        for name, tally, price in (
            ("anthropic", o.anthropic, PRICE["anthropic_read"]),
            ("openai", o.openai, PRICE["openai_read"]),
        ):
            gated = o.layout == "volatility"
            rows.append(
                row(
                    f"cache, {turns} turns: {o.layout}, {name} read share (written"
                    f" {tally.written:,}, cost {tally.cost(price):,.0f} of {tally.prompt:,})",
                    100 * tally.share,
                    "%",
                    target_text=f"≥ {100 * TARGET:.0f} %" if gated else "",
                    passed=tally.share >= TARGET if gated else None,
                )
            )
    dagctx_layouts = outcomes[:2]
    worst = max(o.worst for o in dagctx_layouts)
    rows.append(row(f"cache, {turns} turns: largest projection / budget", worst, "", target=1.0))
    rows.append(
        row(
            f"cache, {turns} turns: turns with the same sections and states in both layouts",
            _same_turns(*dagctx_layouts),
            "",
        )
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cache_sim", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="60 turns instead of 200")
    args = parser.parse_args(argv)
    outcomes = simulate(60 if args.quick else 200, lambda m: print(m, file=sys.stderr))
    print(table(outcomes))
    walk, volatility = outcomes[0], outcomes[1]
    print("\nvolatility layout, prompt tokens not read by kind of turn:")
    print(unread_table(volatility), end="\n\n")
    same = _same_turns(walk, volatility)
    worst = max(o.worst for o in outcomes[:2])
    print(f"largest projection / budget: {worst:.3f}")
    print(f"turns with the same sections and states in both dagctx layouts: {same:.0f}")
    shares = (volatility.anthropic.share, volatility.openai.share)
    return 0 if min(shares) >= TARGET and worst <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
