"""Change notification for the files of cached SQL entries, so a warm check costs O(changes), not
O(files).

A cached `cache.Entry` is used only while every local file of its table still has the `lstat`
(device, inode, size, mtime, mode) recorded when it was built. Checking that means one `lstat` per
file per call (~780 for a 772-file table). This module lets most checks skip that loop: an entry is
*armed* once (inotify watches on every file, on every directory from the entry's root down to its
files, and the root's (st_dev, st_ino)), and a later check only drains the inotify queue without
blocking, looks whether anything the entry depends on moved, and `os.stat`s the root. Anything else
takes the full `lstat` comparison, exactly as before; when that still matches, the entry is armed
again at the current state.

Why that is exactly the `lstat` guarantee (every path resolves to the inode it had, with the same
size, mtime and mode) for the changes that matter: inotify queues an event synchronously, inside
the writer's syscall, so every change that completed before the check's drain is seen by it.

- a file written, truncated, touched or chmod-ed (`IN_MODIFY`, `IN_ATTRIB`, `IN_CLOSE_WRITE`): on
  the file's own watch, whatever path (hard link) it was written through;
- a file removed, renamed away, renamed over, replaced by a symlink or another file (`IN_DELETE`,
  `IN_MOVED_FROM`, `IN_MOVED_TO`, `IN_CREATE` for its name), and the same for any directory
  between the root and the file: on its parent directory's watch;
- a watched directory removed or moved (`IN_DELETE_SELF`, `IN_MOVE_SELF`), or a watch gone
  (`IN_IGNORED`): on its own watch;
- the root or any directory above it swapped (renamed, replaced by a symlink): the root's path
  resolves to another (st_dev, st_ino) (a watch holds its inode, so the number cannot be reused
  while the entry is armed);
- a file system mounted or unmounted anywhere (a mount over a directory makes no inotify event):
  `/proc/self/mountinfo` is polled (`POLLPRI`), and any change disarms every entry;
- the kernel's event queue overflowing (`IN_Q_OVERFLOW`): disarms every entry.

Where inotify cannot see changes it is never trusted, and the entry keeps the per-file `lstat`:
file systems other than the known local ones (`LOCAL_FS`, looked up by each file's and
directory's st_dev in `/proc/self/mountinfo`: NFS, CIFS, FUSE and anything unknown are refused),
symlinks on the way (a file or a directory below the root that is a symlink), a failed
`inotify_add_watch` (ENOSPC: `fs.inotify.max_user_watches`), more than `MAX_WATCHES` watches in the
process, a system without inotify, or `SEMCAT_SQL_WATCH=0` in the environment (read once, when the
watcher is first made). Not seen by inotify, so not covered with the watcher on (as they are by
the `lstat` loop): writes through a shared writable `mmap` (no event is made for them); a lake
whose files are written that way should run with `SEMCAT_SQL_WATCH=0`.

State (one `Watcher` per process, made lazily; a forked child makes its own and closes the
inherited descriptor, so it never reads the parent's events), all under `Watcher.lock`:

- `deps[(wd, name)]`: the armed records that depend on entry `name` of watch `wd` (a child of a
  watched directory on the way to a file) or, for name "", on the watched object itself. Every
  record is in `deps[(wd, "")]` for each of its watches, so a self event dirties all it concerns;
- `refs[wd]`: how many live records use watch `wd`; at 0 the watch is removed (`inotify_rm_watch`),
  so watches are held exactly for armed entries that are still alive. A record is released when
  its entry is re-armed or garbage collected (a finalizer queues it on `released`; it is processed
  under the lock by the next check or arm);
- `epoch`: bumped by an overflow or a mount change; a record is valid only at the epoch it was
  armed at;
- a record (`Armed`) is `dirty` from the first event on anything it depends on; it never becomes
  clean again (a new record replaces it after a full check).

Invariant: an armed, clean record at the current epoch whose root still resolves to its inode
describes files that had, at the check's drain, the stats the entry's full check last confirmed;
the record is registered on its watches *before* that full `lstat` comparison, so a change made
between the entry's first `lstat` and its first check, or during the comparison, is either seen by
the comparison or queued for the next check."""

from __future__ import annotations

import collections
import os
import select
import stat
import sys
import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Armed", "Watcher", "watcher", "enabled", "LOCAL_FS", "MAX_WATCHES", "ENV"]

ENV = "SEMCAT_SQL_WATCH"
MAX_WATCHES = 65_536   # watches per process (the user's limit, fs.inotify.max_user_watches, is shared)
LOCAL_FS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", "f2fs"})

# inotify(7) event bits
IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
        | IN_DELETE_SELF | IN_MOVE_SELF)


@dataclass(eq=False)
class Armed:
    """One entry's watches: what it depends on and whether anything of it moved."""
    owner: Watcher
    epoch: int
    root: str
    root_id: tuple[int, int]
    keys: list[tuple[int, str]] = field(default_factory=list)
    wds: list[int] = field(default_factory=list)
    dirty: bool = False
    released: bool = False


def enabled() -> bool:
    """Whether the environment lets the watcher be used (`SEMCAT_SQL_WATCH`, default on)."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def _chain(paths: Iterable[str]) -> tuple[str, dict[str, set[str]]] | None:
    """The root (the deepest directory holding every path) and, per directory from the root down,
    the names of its children on the way to the files (None: relative paths or no paths)."""
    dirs: dict[str, set[str]] = {}
    for p in paths:
        if not os.path.isabs(p):
            return None
        d, name = os.path.split(os.path.normpath(p))
        dirs.setdefault(d, set()).add(name)
    if not dirs:
        return None
    root = os.path.commonpath(list(dirs))
    children: dict[str, set[str]] = {d: set(n) for d, n in dirs.items()}
    for d in dirs:
        while d != root:
            parent, name = os.path.split(d)
            children.setdefault(parent, set()).add(name)
            d = parent
    return root, children


class Watcher:
    """The process's inotify instance and the state described in the module docstring."""

    def __init__(self) -> None:
        from inotify_simple import INotify  # Linux only (libc's inotify_init1)
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.ino = INotify()
        self.epoch = 0
        self.deps: dict[tuple[int, str], set[Armed]] = {}
        self.refs: dict[int, int] = {}
        self.released: collections.deque[Armed] = collections.deque()
        self._fs: dict[int, str] = {}
        self._mounts = open("/proc/self/mountinfo", "rb")  # noqa: SIM115  (held: polled for mount changes)
        self._poll = select.poll()
        self._poll.register(self._mounts, select.POLLPRI | select.POLLERR)
        self._read_mounts()

    # ---------------------------------------------------------------- mounts

    def _read_mounts(self) -> None:
        self._mounts.seek(0)
        fs: dict[int, str] = {}
        for line in self._mounts.read().decode(errors="replace").splitlines():
            parts = line.split()
            try:
                major, minor = parts[2].split(":")
                fs[os.makedev(int(major), int(minor))] = parts[parts.index("-", 6) + 1]
            except (IndexError, ValueError):
                continue
        self._fs = fs

    def fs_type(self, dev: int) -> str | None:
        return self._fs.get(dev)

    def local(self, dev: int) -> bool:
        return self._fs.get(dev) in LOCAL_FS

    # ---------------------------------------------------------------- events

    def apply(self, events: Iterable[Any]) -> None:
        """Apply inotify events ((wd, mask, cookie, name), as `inotify_simple` parses them from the
        descriptor): dirty the records that depend on what changed, bump the epoch on an overflow.
        Caller holds the lock."""
        for wd, mask, _cookie, name in events:
            if mask & IN_Q_OVERFLOW or wd < 0:
                self.epoch += 1
                continue
            got = self.deps.get((wd, name))   # a child's name, or "": the watched object itself
            if got:
                for rec in got:
                    rec.dirty = True
            if mask & IN_IGNORED:   # the watch is gone: forget it (its records are dirty above)
                self.refs.pop(wd, None)

    def drain(self) -> None:
        """Read every queued event without blocking and poll the mount table. Caller holds the lock."""
        self._release()
        events = self.ino.read(timeout=0)   # FIONREAD, then one read of what is queued: never blocks
        if events:
            self.apply(events)
        if self._poll.poll(0):
            self.epoch += 1
            self._read_mounts()

    # ---------------------------------------------------------------- records

    def arm(self, paths: list[str]) -> Armed | None:
        """Watches on `paths` (absolute, local files) and every directory from their root down,
        registered as a new record, or None where the watcher must not be trusted (see the module
        docstring). The caller then compares the files' `lstat` with the entry's: watches first, so
        a change after that comparison is always queued."""
        chain = _chain(paths)
        if chain is None:
            return None
        root, children = chain
        with self.lock:
            self.drain()
            if len(self.refs) + len(children) + len(paths) > MAX_WATCHES:
                return None
            try:
                st = os.stat(root)
                if not stat.S_ISDIR(st.st_mode) or not self.local(st.st_dev):
                    return None
                rec = Armed(self, self.epoch, root, (st.st_dev, st.st_ino))
                ok = False
                try:
                    for d in sorted(children, key=len):   # parents before children
                        if d != root:
                            ds = os.lstat(d)
                            if not stat.S_ISDIR(ds.st_mode) or not self.local(ds.st_dev):
                                return None
                        wd = self.ino.add_watch(d, MASK | IN_ONLYDIR | (IN_DONT_FOLLOW if d != root else 0))
                        self._use(rec, wd, children[d])
                    for p in paths:
                        ps = os.lstat(p)
                        if not stat.S_ISREG(ps.st_mode) or not self.local(ps.st_dev):
                            return None
                        self._use(rec, self.ino.add_watch(p, MASK | IN_DONT_FOLLOW), ())
                    ok = True
                finally:
                    if not ok:
                        self._drop(rec)
            except OSError:   # gone, unreadable, ENOSPC (max_user_watches): the lstat path
                return None
        return rec

    def _use(self, rec: Armed, wd: int, names: Iterable[str]) -> None:
        self.refs[wd] = self.refs.get(wd, 0) + 1
        rec.wds.append(wd)
        for key in [(wd, "")] + [(wd, n) for n in names]:
            self.deps.setdefault(key, set()).add(rec)
            rec.keys.append(key)

    def _drop(self, rec: Armed) -> None:
        """Unregister `rec`; remove the watches no live record uses any more. Caller holds the lock."""
        if rec.released:
            return
        rec.released = True
        rec.dirty = True
        for key in rec.keys:
            got = self.deps.get(key)
            if got is not None:
                got.discard(rec)
                if not got:
                    del self.deps[key]
        for wd in rec.wds:
            n = self.refs.get(wd)
            if n is None:
                continue
            if n <= 1:
                del self.refs[wd]
                try:
                    self.ino.rm_watch(wd)
                except OSError:
                    pass   # already gone (IN_IGNORED not read yet)
            else:
                self.refs[wd] = n - 1
        rec.keys = []
        rec.wds = []

    def release(self, rec: Armed) -> None:
        """Queue `rec` for release (safe from a finalizer, in any thread, lock held or not)."""
        self.released.append(rec)

    def _release(self) -> None:
        while self.released:
            try:
                rec = self.released.popleft()
            except IndexError:
                break
            self._drop(rec)

    def unchanged(self, rec: Armed) -> bool:
        """True when nothing `rec` depends on changed since it was armed (the entry's files then
        have the stats its last full check confirmed); False: do the full check."""
        if rec.owner is not self or self.pid != os.getpid():
            return False
        with self.lock:
            if rec.released:
                return False
            self.drain()
            if rec.dirty or rec.epoch != self.epoch:
                return False
        try:
            st = os.stat(rec.root)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == rec.root_id

    def watches(self) -> int:
        with self.lock:
            self._release()
            return len(self.refs)

    def close(self) -> None:
        try:
            self.ino.close()
        finally:
            self._mounts.close()


_watcher: Watcher | None = None
_failed_pid: int | None = None
_lock = threading.Lock()


def watcher() -> Watcher | None:
    """The process's watcher (made on first use; a forked child makes its own), or None: not Linux,
    inotify unavailable, or turned off (`SEMCAT_SQL_WATCH=0`)."""
    global _watcher, _failed_pid
    w = _watcher
    pid = os.getpid()
    if w is not None and w.pid == pid:
        return w
    if _failed_pid == pid:
        return None
    with _lock:
        w = _watcher
        if w is not None and w.pid == pid:
            return w
        if w is not None:   # inherited from the parent: never read its queue; close this process's copy
            _watcher = None
            try:
                w.close()
            except OSError:
                pass
        if not sys.platform.startswith("linux") or not enabled():
            _failed_pid = pid
            return None
        try:
            _watcher = Watcher()
        except Exception:   # no libc inotify, EMFILE, no /proc: the lstat path
            _failed_pid = pid
            return None
        return _watcher


def reset() -> None:
    """Close the process's watcher and read the setting again on next use (tests)."""
    global _watcher, _failed_pid
    with _lock:
        if _watcher is not None and _watcher.pid == os.getpid():
            _watcher.close()
        _watcher = None
        _failed_pid = None


def _after_fork() -> None:
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork)


def _release_slot(slot: list[Armed | None]) -> None:
    rec = slot[0] if slot else None
    if rec is not None:
        rec.owner.release(rec)


def finalize(entry: Any, slot: list[Armed | None]) -> None:
    """Release the record in `slot` (whichever it holds then) when `entry` is garbage collected.
    Called once per entry, before its slot first gets a record."""
    weakref.finalize(entry, _release_slot, slot)
