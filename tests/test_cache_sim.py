"""The prompt cache simulator's provider models (benchmarks/cache_sim.py): Anthropic's
breakpoints read a prefix written earlier at a block boundary up to LOOKBACK blocks
before them; OpenAI reads the longest shared prefix in steps."""

from __future__ import annotations

from pathlib import Path

from benchmarks.cache_sim import LOOKBACK, Anthropic, OpenAI, run, tokens, unread_table

BLOCK = "word " * 1100  # over the 1,024-token minimum on its own


class TestAnthropic:
    def test_a_breakpoint_reads_a_prefix_written_at_an_earlier_block_boundary(self) -> None:
        cache = Anthropic()
        cache.request([BLOCK, "first message"], {1}, now=0.0)
        assert cache.tally.read == 0
        cache.request([BLOCK, "first message", "second message"], {2}, now=30.0)
        assert cache.tally.read == cache.system + tokens(BLOCK) + tokens("first message")

    def test_it_looks_back_no_further_than_lookback_blocks(self) -> None:
        cache = Anthropic()
        cache.request([BLOCK], {0}, now=0.0)
        more = [f"message {k}" for k in range(LOOKBACK + 1)]
        cache.request([BLOCK, *more], {LOOKBACK + 1}, now=30.0)
        assert cache.tally.read == 0
        cache.request([BLOCK, *more[:LOOKBACK]], {LOOKBACK}, now=60.0)
        assert cache.tally.read == cache.system + tokens(BLOCK)

    def test_an_entry_expires_after_five_minutes(self) -> None:
        cache = Anthropic()
        cache.request([BLOCK, "a"], {1}, now=0.0)
        cache.request([BLOCK, "a", "b"], {2}, now=301.0)
        assert cache.tally.read == 0


class TestOpenAI:
    def test_the_shared_prefix_is_read_in_steps_of_128(self) -> None:
        cache = OpenAI()
        cache.request(BLOCK + "one", now=0.0)
        cache.request(BLOCK + "two", now=30.0)
        assert cache.tally.read > 0 and cache.tally.read % 128 == 0


class TestUnread:
    def test_each_turns_unread_tokens_go_to_its_events(self, tmp_path: Path) -> None:
        outcome = run("volatility", 8, tmp_path)  # the budget changes at turn 4
        assert sum(outcome.events.values()) == 8
        assert outcome.events["first edit"] >= 1  # turn 3 (and maybe 6)
        assert outcome.events["budget"] == outcome.events["user message"] == 1
        for tally in (outcome.anthropic, outcome.openai):
            assert set(tally.unread) == set(outcome.events)
            assert sum(tally.unread.values()) == tally.prompt - tally.read
        assert "first edit" in unread_table(outcome)
