"""The driver's thread pool helper (sparkberg.threads)."""
import threading

import pytest

from sparkberg.threads import DRIVER_THREADS, by_threads


def test_results_come_in_the_items_order_whatever_thread_ran_them():
    import time
    # (later items finish first)
    assert by_threads(lambda i: (time.sleep((20 - i) / 2000), i * i)[1], list(range(20)), threads=4) == \
        [i * i for i in range(20)]
    assert 1 <= DRIVER_THREADS <= 8


def test_one_thread_or_one_item_runs_in_the_calling_thread():
    me = threading.current_thread().name
    assert by_threads(lambda _: threading.current_thread().name, [1, 2, 3], threads=1) == [me] * 3
    assert by_threads(lambda _: threading.current_thread().name, [1], threads=4) == [me]
    assert by_threads(lambda x: x, [], threads=4) == []


def test_an_error_in_one_item_reaches_the_caller():
    def fn(i):
        if i == 3:
            raise ValueError("item 3")
        return i
    with pytest.raises(ValueError, match="item 3"):
        by_threads(fn, list(range(6)), threads=3)
