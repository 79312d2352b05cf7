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
        # LOOKBACK positions, the breakpoint's own the first: a write LOOKBACK blocks
        # before the breakpoint is one position outside the window
        cache = Anthropic()
        cache.request([BLOCK], {0}, now=0.0)
        more = [f"message {k}" for k in range(LOOKBACK)]
        cache.request([BLOCK, *more], {LOOKBACK}, now=30.0)
        assert cache.tally.read == 0
        cache.request([BLOCK, *more[: LOOKBACK - 1]], {LOOKBACK - 1}, now=60.0)
        assert cache.tally.read == cache.system + tokens(BLOCK)

    def test_the_documented_growing_conversation(self) -> None:
        # Anthropic's prompt caching page: a write at block 10 is read from a breakpoint
        # on block 15; from block 35 the write at block 15 is one position outside the
        # 20 checked (35 through 16), unless a second breakpoint on block 15 finds it
        blocks = [BLOCK, *(f"block {k}" for k in range(2, 36))]  # blocks 1..35
        for marked, found in (({34}, 0), ({14, 34}, 15)):
            cache = Anthropic()
            cache.request(blocks[:10], {9}, now=0.0)
            cache.request(blocks[:15], {14}, now=30.0)
            assert cache.tally.read == cache.system + sum(map(tokens, blocks[:10]))
            read = cache.tally.read
            cache.request(blocks, marked, now=60.0)
            assert cache.tally.read - read == (found and cache.system) + sum(
                map(tokens, blocks[:found])
            )

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
