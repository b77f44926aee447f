"""A hang: a consumer waits for a batch from a producer thread that died. The marker sets a 3 s faildiag
timeout for this test (pytest.ini sets 60 s for the others), so it fails after 3 s with every thread's
stack, the stuck line and the process tree, and the session goes on."""

from __future__ import annotations

import queue
import threading

import pytest


def producer(q: queue.Queue) -> None:
    for i in range(3):
        q.put(i)
    raise ConnectionError("lost the connection to the feature store")  # dies in its thread, silently


@pytest.mark.faildiag_timeout(3)
def test_the_consumer_waits_for_a_batch_that_never_comes() -> None:
    q: queue.Queue = queue.Queue()
    threading.Thread(target=producer, args=(q,), daemon=True, name="producer").start()
    batches = [q.get() for _ in range(4)]  # the fourth get() never returns
    assert len(batches) == 4


def test_the_session_goes_on_after_the_hang() -> None:
    assert sum(range(4)) == 6
