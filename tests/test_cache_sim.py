"""The prompt cache simulator's provider models (benchmarks/cache_sim.py): Anthropic's
breakpoints read a prefix written earlier at a block boundary up to LOOKBACK blocks
before them; OpenAI reads the longest shared prefix in steps."""

from __future__ import annotations

from benchmarks.cache_sim import LOOKBACK, Anthropic, OpenAI, tokens

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
