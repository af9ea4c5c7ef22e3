"""The semantic layer's per-catalog caches: bounded, least recently used out, a read counting as
a use, safe under threads. (Before cachetools, a read did not refresh an entry: the caches evicted
in insertion order, so a hot vid's tables were dropped after 8 newer vids however often read.)"""

from __future__ import annotations

import threading

from semantic.history import Cache


def test_a_read_keeps_an_entry_and_the_bound_holds() -> None:
    tables = Cache().tables  # vid -> {name: Obj}, at most 8 vids
    for vid in range(8):
        tables.put(vid, {"vid": vid})
    assert tables.take(0) == {"vid": 0}  # vid 0 read: now the most recently used
    for vid in range(8, 15):
        tables.put(vid, {"vid": vid})
        assert tables.take(0) == {"vid": 0}, f"a vid read after every put was evicted at put {vid}"
    assert len(tables) == 8
    assert tables.take(1) is None and tables.take(7) is None  # the least recently used went first
    assert sorted(tables) == [0, *range(8, 15)]


def test_threads_share_a_cache() -> None:
    timelines = Cache().timelines
    errors: list[BaseException] = []

    def work(base: int) -> None:
        try:
            for i in range(5000):
                timelines.put((base, i), i)
                timelines.take((base, i // 2))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(timelines) == 4096
