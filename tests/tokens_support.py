"""Encodings beyond the offline default, for tests (not a test module).

:func:`other_encodings` points ``TIKTOKEN_CACHE_DIR`` at the project's copy of the
``p50k_base`` and ``o200k_base`` data files (``../shared/encodings`` from the project
root, where tiktoken would otherwise download them) and, on leaving, forgets every
encoding loaded meanwhile, in tiktoken's registry and in dagctx's, so the tests that
check the behaviour without network (``test_tokens.py``) still see it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import tiktoken.registry

from dagctx import tokens

ENCODINGS_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "encodings"


@contextmanager
def other_encodings() -> Iterator[Path]:
    """Make ``p50k_base`` and ``o200k_base`` loadable inside the ``with`` block."""
    assert ENCODINGS_DIR.is_dir(), f"the tiktoken data files are missing: {ENCODINGS_DIR}"
    before = os.environ.get("TIKTOKEN_CACHE_DIR")
    loaded = set(tiktoken.registry.ENCODINGS)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(ENCODINGS_DIR)
    try:
        yield ENCODINGS_DIR
    finally:
        if before is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = before
        for name in set(tiktoken.registry.ENCODINGS) - loaded:
            del tiktoken.registry.ENCODINGS[name]
        tokens._get_encoding.cache_clear()
