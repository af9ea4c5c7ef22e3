import gc
import threading

from catalog_core._gcpause import gc_paused


def test_pause_is_reentrant_and_restores_state():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()


def test_pause_keeps_a_disabled_gc_disabled():
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_pauses_from_threads_end_enabled():
    inside, release = threading.Barrier(4), threading.Event()

    def worker():
        with gc_paused():
            inside.wait(5)
            release.wait(5)

    ths = [threading.Thread(target=worker) for _ in range(3)]
    [t.start() for t in ths]
    inside.wait(5)
    assert not gc.isenabled()
    release.set()
    [t.join(5) for t in ths]
    assert gc.isenabled()


def test_exception_inside_pause_restores(cat):
    from tests.helpers import lake

    try:
        with gc_paused():
            raise ValueError("x")
    except ValueError:
        pass
    assert gc.isenabled()
    lake(cat)
    assert len(cat.query('/[obj_id = "wh"]/*/*/*/*')) == 6 and gc.isenabled()
    assert len(cat.plan_files("wh.sales.orders", where='d = "2001-06-02"')) == 2 and gc.isenabled()
    try:
        cat.plan_files("wh.sales.orders", where="d >>> 1")
    except Exception:
        pass
    assert gc.isenabled()
