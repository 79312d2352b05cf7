"""The treemap's geometry: a squarified layout of a folder tree of weighted tiles.

Owns the arithmetic only (rectangles from weights); it knows nothing of projections,
HTML or the session and must not import them. Below ``min_area`` square units siblings
are merged into one aggregate box, so a tree of any size draws a bounded number of
boxes (about ``width * height / min_area``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")

HEADER = 14.0
"""Height of a folder's title strip."""
_PAD = 1.0


@dataclass(frozen=True, slots=True)
class Rect:
    x: float
    y: float
    w: float
    h: float

    @property
    def area(self) -> float:
        return self.w * self.h


@dataclass(slots=True)
class Folder(Generic[T]):
    """A folder of the tree: sub-folders by name and the items directly in it."""

    path: str = ""
    folders: dict[str, Folder[T]] = field(default_factory=dict)
    items: list[tuple[T, int]] = field(default_factory=list)

    def add(self, path: str, item: T, weight: int) -> None:
        """Put ``item`` (of ``weight`` tokens) in the folder ``path`` ("a/b"; "" is this
        folder), making the folders on the way."""
        folder = self
        for part in filter(None, path.split("/")):
            child = folder.folders.get(part)
            if child is None:
                child = Folder(f"{folder.path}/{part}" if folder.path else part)
                folder.folders[part] = child
            folder = child
        folder.items.append((item, weight))

    def weight(self) -> int:
        return sum(w for _, w in self.items) + sum(f.weight() for f in self.folders.values())

    def count(self) -> int:
        return len(self.items) + sum(f.count() for f in self.folders.values())


@dataclass(frozen=True, slots=True)
class Box(Generic[T]):
    """One drawn rectangle: an item (``item`` set, ``count`` 1), a folder's frame
    (``folder`` set) or an aggregate of ``count`` small items and folders under
    ``folder`` (``item`` None)."""

    rect: Rect
    weight: int
    folder: str
    item: T | None = None
    count: int = 1
    frame: bool = False


def squarify(weights: Sequence[float], rect: Rect) -> list[Rect]:
    """Rectangles tiling ``rect`` with areas proportional to ``weights`` (positive, in
    descending order), laid out in rows that keep each aspect ratio near 1 (Bruls,
    Huizing and van Wijk's squarified treemap). Returns one rectangle per weight, in order.
    """
    total = sum(weights)
    if total <= 0 or rect.area <= 0:
        return [Rect(rect.x, rect.y, 0, 0) for _ in weights]
    scale = rect.area / total
    areas = [w * scale for w in weights]
    out: list[Rect] = []
    x, y, w, h = rect.x, rect.y, rect.w, rect.h
    i = 0
    while i < len(areas):
        side = min(w, h)
        row = [areas[i]]
        i += 1
        while i < len(areas) and _worst([*row, areas[i]], side) <= _worst(row, side):
            row.append(areas[i])
            i += 1
        thick = sum(row) / side if side > 0 else 0
        offset = 0.0
        for area in row:
            length = area / thick if thick > 0 else 0
            if w >= h:  # a column on the left, items stacked downwards
                out.append(Rect(x, y + offset, thick, length))
            else:  # a row along the top
                out.append(Rect(x + offset, y, length, thick))
            offset += length
        if w >= h:
            x, w = x + thick, max(0.0, w - thick)
        else:
            y, h = y + thick, max(0.0, h - thick)
    return out


def _worst(row: list[float], side: float) -> float:
    total = sum(row)
    if total <= 0 or side <= 0:
        return float("inf")
    return max(
        max(side * side * r / (total * total), total * total / (side * side * r)) for r in row
    )


def layout(root: Folder[T], rect: Rect, min_area: float) -> list[Box[T]]:
    """The boxes of ``root`` drawn in ``rect``: folder frames before what they hold.

    Items and folders whose share of their parent's area is below ``min_area`` are drawn
    together as one aggregate box (when there are at least two of them); so is a folder
    too small to show a title strip. A folder holding one item is drawn as that item.
    """
    return list(_layout(root, rect, min_area))


def _layout(folder: Folder[T], rect: Rect, min_area: float) -> Iterator[Box[T]]:
    entries: list[tuple[int, Folder[T] | None, T | None]] = [
        (w, None, item) for item, w in folder.items if w > 0
    ]
    entries += [(f.weight(), f, None) for f in folder.folders.values()]
    entries = [e for e in entries if e[0] > 0]
    total = sum(e[0] for e in entries)
    if not entries or rect.area <= 0:
        return
    scale = rect.area / total
    entries.sort(key=lambda e: -e[0])
    small = [e for e in entries if e[0] * scale < min_area]
    aggregate = len(small) >= 2
    if aggregate:
        entries = entries[: len(entries) - len(small)]
    weights = [e[0] for e in entries]
    if aggregate:
        weights.append(sum(e[0] for e in small))
    rects = squarify(weights, rect)
    for (weight, sub, item), box in zip(entries, rects, strict=False):
        if sub is not None and sub.count() == 1:  # a folder of one: draw the item itself
            item = _only_item(sub)
            yield Box(box, weight, sub.path, item)
        elif sub is None:
            yield Box(box, weight, folder.path, item)
        elif box.w < 4 * HEADER or box.h < 2 * HEADER:
            yield Box(box, weight, sub.path, None, sub.count())
        else:
            yield Box(box, weight, sub.path, None, sub.count(), frame=True)
            inner = Rect(
                box.x + _PAD, box.y + HEADER, max(0.0, box.w - 2 * _PAD), box.h - HEADER - _PAD
            )
            yield from _layout(sub, inner, min_area)
    if aggregate:
        count = sum(1 if sub is None else sub.count() for _, sub, _ in small)
        yield Box(rects[-1], weights[-1], folder.path, None, count)


def _only_item(folder: Folder[T]) -> T:
    while not folder.items:
        folder = next(iter(folder.folders.values()))
    return folder.items[0][0]
