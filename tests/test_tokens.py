"""Token counting: offline default encoding, typed errors, content-keyed cache."""

from __future__ import annotations

import sys

import pytest

from dagctx import EncodingError, TokenCounter
from dagctx.tokens import _RECENT, get_encoding


class TestEncodings:
    def test_default_encoding_loads_offline_under_its_ordinary_name(self) -> None:
        encoding = get_encoding()
        assert encoding.name == "cl100k_base"
        # A known cl100k_base tokenization: "hello world" is two tokens, 15339 and 1917.
        assert encoding.encode_ordinary("hello world") == [15339, 1917]

    def test_unknown_encoding_names_the_encoding(self) -> None:
        with pytest.raises(EncodingError, match="no_such_encoding"):
            TokenCounter("no_such_encoding")

    def test_encoding_without_offline_data_names_encoding_and_fix(self) -> None:
        with pytest.raises(EncodingError, match=r"o200k_base.*TIKTOKEN_CACHE_DIR"):
            get_encoding("o200k_base")

    @pytest.mark.parametrize("bad", ["", None, 3])
    def test_non_string_names_are_refused(self, bad: object) -> None:
        with pytest.raises(EncodingError):
            get_encoding(bad)  # type: ignore[arg-type]


class TestCache:
    def test_identical_text_is_encoded_once(self) -> None:
        counter = TokenCounter()
        first = counter.count("def f(x):\n    return x\n")
        again = counter.count("def f(x):\n    return x\n")
        assert first == again == counter.count_exact("def f(x):\n    return x\n")
        assert counter.encodings == 1

    def test_count_many_batches_only_the_misses(self) -> None:
        counter = TokenCounter()
        counter.count("alpha beta")
        counts = counter.count_many(["alpha beta", "gamma", "delta epsilon zeta"])
        assert counts == [
            counter.count_exact(t) for t in ["alpha beta", "gamma", "delta epsilon zeta"]
        ]
        assert counter.encodings == 3

    def test_special_tokens_count_as_ordinary_text(self) -> None:
        counter = TokenCounter()
        assert counter.count("<|endoftext|>") > 1

    def test_truncate_returns_a_prefix_within_the_limit(self) -> None:
        counter = TokenCounter()
        text = "word " * 100
        cut = counter.truncate(text, 10)
        assert text.startswith(cut)
        assert counter.count_exact(cut) <= 10
        assert counter.truncate(text, 0) == ""


class TestRecentMemory:
    """Counts asked not to be remembered are kept for the last 4,096 texts, in a table no
    larger than a fresh copy of it, however many texts went through."""

    def test_the_last_texts_are_kept_in_a_compact_table(self) -> None:
        counter = TokenCounter()
        texts = [f"line {i}" for i in range(10_000)]
        for text in texts:
            counter.count(text, remember=False)
            assert sys.getsizeof(counter._recent) <= sys.getsizeof(dict(counter._recent))
        assert counter.encodings == len(texts)
        for text in texts[-_RECENT:]:
            assert counter.count(text, remember=False) == counter.count_exact(text)
        assert counter.encodings == len(texts)
        counter.count(texts[-_RECENT - 1], remember=False)
        assert counter.encodings == len(texts) + 1

    def test_count_many_keeps_the_same(self) -> None:
        counter = TokenCounter()
        texts = [f"word {i}" for i in range(3 * _RECENT)]
        counts = counter.count_many(texts, remember=False)
        assert counts == [counter.count_exact(t) for t in texts]
        assert len(counter._recent) == _RECENT
        assert sys.getsizeof(counter._recent) <= sys.getsizeof(dict(counter._recent))
        counter.count_many(texts[-_RECENT:], remember=False)
        assert counter.encodings == len(texts)
