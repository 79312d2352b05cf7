"""Timing helpers and the baselines every figure is compared against (same run, same data).

- :func:`median_seconds`: the median of several timed calls (``time.perf_counter``).
- :func:`naive_turn`: what a turn costs without dagctx's caches — render every visible
  node at its requested state, concatenate, count the whole text with tiktoken.
- :func:`tiktoken_alone`: the time tiktoken needs to count a list of texts with two
  threads, the faster of its own batch API and two chunked threads (the figure the cold
  build is held to).
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import tiktoken

from dagctx.session import Session

THREADS = 2


def median_seconds(
    run: Callable[[], Any], repeats: int, *, setup: Callable[[], Any] | None = None
) -> float:
    """Median wall time of ``run()`` over ``repeats`` calls (``setup()`` untimed before each)."""
    times = []
    for _ in range(repeats):
        if setup is not None:
            setup()
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def collect() -> None:
    """A full garbage collection, so that one scenario's garbage is not the next one's pause."""
    gc.collect()


def naive_turn(session: Session) -> int:
    """Render every visible node at its requested state, join, count: the full re-render +
    re-count a turn costs without per-node caches. Returns the token count."""
    parts = [node.render(node.state) for node in session.walk_nodes()]
    text = "\n\n".join(p for p in parts if p)
    return len(session.counter.encoding.encode_ordinary(text))


def _count_chunk(encoding: tiktoken.Encoding, texts: Sequence[str]) -> int:
    return sum(len(encoding.encode_ordinary(t)) for t in texts)


def tiktoken_alone(encoding: tiktoken.Encoding, texts: Sequence[str]) -> tuple[float, float]:
    """Seconds tiktoken alone needs to count ``texts`` on two threads, two ways:
    its batch API, ``encode_ordinary_batch(num_threads=2)`` (the baseline the suite's
    target uses), and the texts split into two chunks encoded on two threads (faster:
    one task per thread instead of one per text)."""
    started = time.perf_counter()
    total = sum(map(len, encoding.encode_ordinary_batch(list(texts), num_threads=THREADS)))
    batch = time.perf_counter() - started
    half = len(texts) // 2
    started = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        chunked_total = sum(
            pool.map(lambda chunk: _count_chunk(encoding, chunk), (texts[:half], texts[half:]))
        )
    chunked = time.perf_counter() - started
    assert chunked_total == total
    return batch, chunked
