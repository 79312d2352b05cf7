"""Counted nouns in what dagctx shows people and models: ``1 line``, ``2 lines``.

Pure functions; must not import anything of dagctx.
"""

from __future__ import annotations


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """``count`` and the noun in the number it needs (``plural`` defaults to
    ``singular + "s"``), e.g. ``counted(1, "child", "children") == "1 child"``."""
    noun = singular if count == 1 else (plural or f"{singular}s")
    return f"{count} {noun}"
