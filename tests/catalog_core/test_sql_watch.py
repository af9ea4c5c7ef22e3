"""Change notification for the cached SQL entries (`catalog_core.sql.watch`): a warm check skips
the per-file `lstat` only while inotify says nothing the entry depends on changed, and every kind
of change that the `lstat` check sees is still seen on the next check. Real files, real inotify,
real worker processes; no timings."""

from __future__ import annotations

import gc
import os
import shutil
import struct
import subprocess
import sys
import warnings

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from inotify_simple import parse_events

import catalog_core as cc
from catalog_core.errors import SqlRefusedError
from catalog_core.sql import cache, reader, snapcache, watch, worker

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux only")

SUM = "SELECT sum(id) FROM wh.sales.orders"
NEW = pa.table({"id": pa.array([100, 200, 300], pa.int64()), "price": [1.0, 2.0, 3.0], "note": ["x", "y", "z"]})


@pytest.fixture(autouse=True)
def fresh_watcher(monkeypatch):
    monkeypatch.delenv(watch.ENV, raising=False)
    watch.reset()
    before = snapcache.budget()
    cc.set_sql_cache_budget(64 << 20)
    yield
    cc.set_sql_cache_budget(before)
    cache.clear()
    gc.collect()
    watch.reset()


def run(cat, sql=SUM, **kw):
    return cc.run_sql(cat, sql, **kw).rows


def hit() -> bool:
    snap = worker.last_snapshot()
    return bool(snap and snap["hit"])


def entry(cat, vid) -> cache.Entry:
    c = cache.catalog_cache(cat)
    assert c is not None
    return next(e for k, e in c.entries.items() if k[0] == vid and k[1] and k[2].endswith("/orders"))


def armed(e: cache.Entry) -> watch.Armed:
    """The entry's record, asserted armed and clean: the next check takes the fast path."""
    w = watch.watcher()
    assert w is not None and e.armed and e.armed[0] is not None
    assert w.unchanged(e.armed[0])
    return e.armed[0]


def record(wd: int, mask: int, name: str = "") -> bytes:
    """One inotify event as the kernel writes it: struct inotify_event, then the name padded with NULs."""
    b = name.encode()
    if b:
        b += b"\0" * (16 - len(b) % 16)
    return struct.pack("iIII", wd, mask, 0, len(b)) + b


def spec_entry(cat, vid) -> cache.Entry:
    """The orders entry at `vid`, built by the reader (catalog reads and footers; no worker)."""
    reader._keyed_views(cat, vid, True)
    return entry(cat, vid)


# ---------------------------------------------------------------- every change kind, through run_sql

def rewrite(wh, tmp_path):
    pq.write_table(NEW, wh.paths["a"])                       # in place: same inode


def replace(wh, tmp_path):
    tmp = wh.paths["a"] + ".tmp"
    pq.write_table(NEW, tmp)
    os.replace(tmp, wh.paths["a"])                          # a sibling renamed over it


def rename_over(wh, tmp_path):
    other = str(tmp_path / "elsewhere.parquet")
    pq.write_table(NEW, other)
    os.rename(other, wh.paths["a"])                         # renamed over from another directory


def swap_parent(wh, tmp_path):
    d = os.path.dirname(wh.paths["a"])
    os.rename(d, d + ".old")                                # the partition directory swapped
    os.mkdir(d)
    pq.write_table(NEW, wh.paths["a"])


def swap_root(wh, tmp_path):
    os.rename(wh.loc, wh.loc + ".old")                      # the table's directory swapped
    shutil.copytree(wh.loc + ".old", wh.loc, symlinks=True)
    pq.write_table(NEW, wh.paths["a"])


def swap_above_root(wh, tmp_path):
    above = os.path.dirname(wh.loc)                         # no watch sees this: the root's stat does
    os.rename(above, above + ".old")
    shutil.copytree(above + ".old", above, symlinks=True)
    pq.write_table(NEW, wh.paths["a"])


def parent_symlink(wh, tmp_path):
    d = os.path.dirname(wh.paths["a"])
    elsewhere = str(tmp_path / "elsewhere")
    os.rename(d, elsewhere)
    pq.write_table(NEW, os.path.join(elsewhere, os.path.basename(wh.paths["a"])))
    os.symlink(elsewhere, d)                                # the partition directory now a symlink


@pytest.mark.parametrize("change", [rewrite, replace, rename_over, swap_parent, swap_root, swap_above_root,
                                    parent_symlink], ids=lambda f: f.__name__)
def test_a_changed_file_is_read_again_on_the_next_call(wh, pool1, tmp_path, change):
    assert run(wh.cat, snapshot=wh.v3) == [[45]]
    assert run(wh.cat, snapshot=wh.v3) == [[45]] and hit()
    armed(entry(wh.cat, wh.v3))                              # the warm path checks without lstat now
    change(wh, tmp_path)
    try:
        got = run(wh.cat, snapshot=wh.v3)
    except SqlRefusedError as e:                            # reached through a symlink: refused, never old rows
        assert change is parent_symlink and e.rule == "file_access"
        return
    assert got == [[600 + 39]] and not hit()
    assert run(wh.cat, snapshot=wh.v3) == [[600 + 39]] and hit()


def test_a_removed_file_fails_the_next_call(wh, pool1):
    assert run(wh.cat, snapshot=wh.v3) == [[45]]
    assert run(wh.cat, snapshot=wh.v3) == [[45]] and hit()
    armed(entry(wh.cat, wh.v3))
    os.remove(wh.paths["b"])
    with pytest.raises(cc.CatalogError) as err:
        run(wh.cat, snapshot=wh.v3)
    assert "wh.sales.orders" in err.value.message


def test_a_file_turned_into_a_symlink_is_refused(wh, pool1, tmp_path):
    outside = str(tmp_path / "outside.parquet")
    pq.write_table(NEW, outside)
    assert run(wh.cat, snapshot=wh.v3) == [[45]]
    assert run(wh.cat, snapshot=wh.v3) == [[45]] and hit()
    armed(entry(wh.cat, wh.v3))
    os.remove(wh.paths["c"])
    os.symlink(outside, wh.paths["c"])
    with pytest.raises(SqlRefusedError) as err:
        run(wh.cat, snapshot=wh.v3)
    assert err.value.rule == "file_access"


# ---------------------------------------------------------------- the entry's check itself

def test_the_first_check_is_the_full_one_and_sees_a_change_since_the_stat(wh):
    e = spec_entry(wh.cat, wh.v3)
    assert e.armed == []                                    # built with its lstat, not armed yet
    pq.write_table(NEW, wh.paths["a"])                      # changed between the stat and the first check
    assert not e.valid()


def test_a_warm_check_is_fast_until_something_it_depends_on_changes(wh):
    e = spec_entry(wh.cat, wh.v3)
    assert e.valid()
    rec = armed(e)
    assert e.valid() and e.armed[0] is rec                  # the fast path: the same record, still clean
    # a new partition and a new file beside the table's files: no name the entry depends on
    wh.write("2001-06-09", "z", [1])
    pq.write_table(NEW, os.path.join(os.path.dirname(wh.paths["a"]), "other.parquet"))
    assert armed(e) is rec
    # touched and put back: an event on one of its files, the same stats -> one full check, re-armed
    st = os.stat(wh.paths["b"])
    os.utime(wh.paths["b"], ns=(st.st_atime_ns, st.st_mtime_ns))
    w = watch.watcher()
    assert w is not None and not w.unchanged(rec)
    assert e.valid()
    assert armed(e) is not rec


def test_an_event_queue_overflow_falls_back_to_the_full_check(wh):
    e = spec_entry(wh.cat, wh.v3)
    assert e.valid()
    rec = armed(e)
    w = watch.watcher()
    assert w is not None
    with w.lock:
        w.apply(parse_events(record(-1, watch.IN_Q_OVERFLOW)))   # the kernel's record for it
    assert not w.unchanged(rec)                             # every record is disarmed ...
    pq.write_table(NEW, wh.paths["a"])
    assert not e.valid()                                    # ... and the lstat comparison decides
    e2 = spec_entry(wh.cat, wh.v1)
    assert e2.valid() and armed(e2).epoch == w.epoch        # entries armed after it use the new epoch


def test_an_event_on_a_name_it_depends_on_dirties_only_its_records(wh):
    e = spec_entry(wh.cat, wh.v3)
    assert e.valid()
    rec = armed(e)
    w = watch.watcher()
    assert w is not None
    wd = next(wd for (wd, name) in rec.keys if name == os.path.basename(wh.paths["a"]))
    with w.lock:
        w.apply(parse_events(record(wd, watch.IN_CREATE, "other.parquet")))
    assert w.unchanged(rec)
    with w.lock:
        w.apply(parse_events(record(wd, watch.IN_MOVED_TO, os.path.basename(wh.paths["a"]))))
    assert not w.unchanged(rec)


def test_files_where_inotify_cannot_see_take_the_lstat_path(wh, monkeypatch):
    w = watch.watcher()
    assert w is not None
    assert w.arm(["/proc/self/status"]) is None             # procfs: not a known local file system
    assert w.fs_type(os.stat("/proc").st_dev) == "proc" and not w.local(os.stat("/proc").st_dev)
    assert w.local(os.stat(wh.paths["a"]).st_dev)
    assert w.arm(["relative/path.parquet"]) is None
    # past the cap on watches: the entry is checked with lstat, and still sees changes
    monkeypatch.setattr(watch, "MAX_WATCHES", 2)
    e = spec_entry(wh.cat, wh.v3)
    assert e.valid() and e.armed == [None]
    pq.write_table(NEW, wh.paths["a"])
    assert not e.valid()


def test_a_symlinked_file_is_never_watched(wh, tmp_path):
    target = str(tmp_path / "t.parquet")
    pq.write_table(NEW, target)
    link = os.path.join(os.path.dirname(wh.paths["a"]), "link.parquet")
    os.symlink(target, link)
    w = watch.watcher()
    assert w is not None and w.arm([link]) is None and w.arm([wh.paths["a"]]) is not None


def test_the_setting_turns_the_watcher_off(wh, monkeypatch):
    monkeypatch.setenv(watch.ENV, "0")
    watch.reset()
    assert watch.watcher() is None
    e = spec_entry(wh.cat, wh.v3)
    assert e.valid() and e.armed == []                      # the lstat path
    pq.write_table(NEW, wh.paths["a"])
    assert not e.valid()


def test_a_forked_child_never_reads_the_parents_events(wh):
    e = spec_entry(wh.cat, wh.v3)
    assert e.valid()
    rec = armed(e)
    parent = watch.watcher()
    st = os.stat(wh.paths["b"])
    os.utime(wh.paths["b"], ns=(st.st_atime_ns, st.st_mtime_ns))   # an event queued, not read yet
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # fork() with threads: the child only does this
        pid = os.fork()
    if pid == 0:
        code = 1
        try:
            w = watch.watcher()
            ok = w is not None and w is not parent and w.pid == os.getpid()
            if w is not None:
                e.valid()                                    # the child checks the entry with its own watcher
                w.watches()
            code = 0 if ok else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert parent is not None and not parent.unchanged(rec)   # the parent still got its event
    assert watch.watcher() is parent
    assert os.waitstatus_to_exitcode(status) == 0            # the child made its own watcher


def test_watches_are_released_with_their_entries(wh):
    w = watch.watcher()
    assert w is not None
    base = w.watches()
    entries = [spec_entry(wh.cat, v) for v in (wh.v1, wh.v2, wh.v3)]
    assert all(e.valid() for e in entries)
    held = w.watches()
    # v3's files and directories (3 files, 3 partitions, the table's directory); v1 and v2 share them
    assert held - base == 7
    cache.clear()
    del entries
    gc.collect()
    assert w.watches() == base


def test_a_mount_over_a_directory_on_the_way_is_seen(wh):
    """A mount makes no inotify event: the mount table's poll disarms every entry."""
    e = spec_entry(wh.cat, wh.v3)
    assert e.valid()
    rec = armed(e)
    d = os.path.dirname(wh.paths["a"])
    if subprocess.run(["mount", "-t", "tmpfs", "semcat-test", d], capture_output=True).returncode != 0:
        pytest.skip("cannot mount here (needs root and CAP_SYS_ADMIN)")
    try:
        pq.write_table(NEW, wh.paths["a"])                   # the same path, now on the tmpfs
        w = watch.watcher()
        assert w is not None and not w.unchanged(rec)
        assert not e.valid()
    finally:
        subprocess.run(["umount", d], check=True)
