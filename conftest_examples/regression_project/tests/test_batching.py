"""The tests of the regression example: all pass at the first commit; the second commit breaks one."""

from __future__ import annotations

import pytest
from inventory.batching import batch_count, chunked
from inventory.labels import label


def test_an_even_split() -> None:
    assert chunked([1, 2, 3, 4, 5, 6], 3) == [[1, 2, 3], [4, 5, 6]]


def test_the_last_batch_may_be_short() -> None:
    assert chunked(["a", "b", "c", "d", "e", "f", "g"], 3) == [["a", "b", "c"], ["d", "e", "f"], ["g"]]


def test_the_batch_size_must_be_positive() -> None:
    with pytest.raises(ValueError):
        chunked([1, 2], 0)


def test_batch_count() -> None:
    assert batch_count(range(9), 3) == 3


def test_labels_are_zero_padded() -> None:
    assert label(42, 2) == "order 000042 / batch 2"
