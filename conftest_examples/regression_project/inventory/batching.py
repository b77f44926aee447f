"""Split orders into shipping batches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def chunked(items: Sequence[T], size: int) -> list[list[T]]:
    """Split ``items`` into lists of ``size`` items, in order; the last one may be shorter."""
    if size < 1:
        raise ValueError("size must be at least 1")
    return [list(items[start : start + size]) for start in range(0, len(items), size)]


def batch_count(items: Sequence[T], size: int) -> int:
    """How many batches ``chunked`` makes."""
    return len(chunked(items, size))
