"""Regex bounds (issue 14 item 15): a pattern a model sends to ``grep_knowledge`` cannot
exhaust memory or hang the tool, whatever its counted repeats or nesting.

The hostile patterns run in a real subprocess under ``RLIMIT_AS`` (tests/regex_worker.py),
so a regression dies there with MemoryError instead of taking the test run down with it.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from dagctx._regex import MAX_EXPANDED_SIZE, PatternTooLargeError, compile_bounded, expanded_size

WORKER = Path(__file__).with_name("regex_worker.py")
MEMORY_LIMIT = 768 << 20  # bytes of address space; the worker needs under 100 MB

HOSTILE = [
    "a{4294967294}",
    "(?:a|b){2000000000}",
    "(a{1000}){1000}",
    "((a{100}){100}){100}",
    "[ab]{4294967294}",
    r"\d{99999999}",
    "a{,4294967294}",
    "(?:x{65535}){65535}",
    "a{1000000}b{1000000}",
    "x" * 200_000,
    "(" * 5_000 + ")" * 5_000,
    "(?:" * 20_000 + "a" + ")" * 20_000,
    "(a|aa)+$",
    "(a*)*b",
    "((a+)+)+c",
]


def _random_hostile(rng: random.Random, depth: int = 0) -> str:
    """A pattern of literals, classes and groups with counts up to 2**32 - 2."""
    pieces = []
    for _ in range(rng.randint(1, 4)):
        kind = rng.random()
        if kind < 0.3 and depth < 4:
            piece = f"(?:{_random_hostile(rng, depth + 1)})"
        elif kind < 0.5:
            piece = rng.choice(["[a-z]", r"\w", ".", r"\x{41}"])
        else:
            piece = rng.choice("ab")
        if rng.random() < 0.6:
            count = rng.choice([rng.randint(0, 50), rng.randint(0, 2**32 - 2)])
            piece += rng.choice([f"{{{count}}}", f"{{{count},}}", f"{{1,{count}}}"])
        pieces.append(piece)
    return "|".join(pieces) if rng.random() < 0.2 else "".join(pieces)


def _run_worker(patterns: list[str]) -> list[dict[str, object]]:
    env = dict(os.environ)
    done = subprocess.run(
        [sys.executable, str(WORKER), str(MEMORY_LIMIT)],
        input=json.dumps(patterns),
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


class TestHostilePatternsInALimitedProcess:
    def test_huge_counts_and_deep_nesting_come_back_as_messages(self) -> None:
        results = _run_worker(HOSTILE)
        assert [r["pattern"] for r in results] == HOSTILE
        by_pattern = {r["pattern"]: r for r in results}
        for pattern in HOSTILE[:12]:
            result = str(by_pattern[pattern]["result"])
            assert "is too large" in result and "try again" in result, (pattern[:40], result)
            assert float(str(by_pattern[pattern]["seconds"])) < 1.0
        for pattern in HOSTILE[12:]:
            result = str(by_pattern[pattern]["result"])
            assert "took longer than" in result or regex.match(r"\d+: |No lines", result), result

    def test_random_counted_patterns_never_exhaust_memory(self) -> None:
        rng = random.Random(15)
        patterns = [_random_hostile(rng) for _ in range(300)]
        results = _run_worker(patterns)
        assert len(results) == len(patterns)
        refused = 0
        for r in results:
            result = str(r["result"])
            refused += "is too large" in result
            assert regex.match(r"\d+: |No lines|Pattern |Invalid regex", result), result
        assert refused > 50  # the generator does produce huge counts


class TestBoundedCompile:
    def test_message_names_the_pattern_and_the_fix(self) -> None:
        try:
            compile_bounded("a{4294967294}")
        except PatternTooLargeError as exc:
            assert "'a{4294967294}'" in str(exc) and "a{2,50}" in str(exc)
            assert exc.size == 4294967294
        else:
            raise AssertionError("not refused")

    def test_everyday_patterns_compile(self) -> None:
        for pattern in [
            r"(?i)cache",
            r"\d+ MB$",
            r"^\s*def \w+\(",
            r"[A-Z]{2,8}-\d{1,6}",
            "a{10000}",
        ]:
            assert compile_bounded(pattern).pattern == pattern

    def test_escapes_and_classes_with_braces_are_not_counts(self) -> None:
        assert expanded_size(r"\x{41}\p{L}\N{BULLET}[{}]")[0] == 4
        assert expanded_size("[]{99999}]")[0] == 1

    @settings(max_examples=200, deadline=None)
    @given(
        st.recursive(
            st.sampled_from(["a", "b", r"\w", "[xy]", "."]),
            lambda inner: st.one_of(
                st.tuples(inner, inner).map("".join),
                st.tuples(inner, inner).map(lambda p: f"(?:{p[0]}|{p[1]})"),
                st.tuples(inner, st.integers(0, 9)).map(lambda p: f"(?:{p[0]}){{{p[1]}}}"),
            ),
            max_leaves=8,
        )
    )
    def test_small_patterns_compile_as_regex_does(self, pattern: str) -> None:
        """The bound refuses nothing of an everyday size: every pattern of at most 8 atoms
        with counts under 10 (size at most 8 * 9**depth, here far below the bound)."""
        size, _ = expanded_size(pattern)
        assert size <= MAX_EXPANDED_SIZE or pattern.count("{") >= 4
        if size <= MAX_EXPANDED_SIZE:
            assert compile_bounded(pattern).pattern == regex.compile(pattern).pattern
