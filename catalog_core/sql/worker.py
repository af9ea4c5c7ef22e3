"""The worker processes that run agent statements for `run_sql`, so that their limits hold.

Why a process. DuckDB cannot stop everything from inside (measured on DuckDB 2.0):
`con.interrupt()` and `max_execution_time` are checked between vectors, never inside one scalar
function call, and the list and string builders allocate outside the buffer manager, where
`memory_limit` does not look. `SELECT len(range(200000000))` ran 21 s past a 1 s interrupt and
`SELECT length(repeat('a', 2000000000))` 37 s, both growing to 3-4 GB under a 1 GB
`memory_limit`. So the statement runs in a child process that the caller can hold to both limits
whatever the statement calls:

- memory: before each statement the child sets its soft `RLIMIT_AS` to the statement's
  `memory_limit` plus `HEADROOM` (the interpreter, DuckDB's code, thread stacks; glibc's
  per-thread malloc arenas are capped with `MALLOC_ARENA_MAX=2` so they do not reserve address
  space); DuckDB's own `memory_limit` is the statement's limit. An allocation past it fails inside
  DuckDB (`OutOfMemoryException`, refused with rule `memory_limit`); should the child die
  instead, the caller reports the same rule. The hard limit is set once, at the worker's first
  statement, to `max(memory_limit, sandbox.MEMORY_LIMIT) + HEADROOM`, and the caller sends a
  worker only statements whose limit fits under it. Why a soft limit per statement is enough:
  only the process itself can raise its soft limit (`setrlimit`; the worker runs as the caller's
  user, so the hard limit is what stops the process, not another user), and nothing a statement
  can run calls `setrlimit`: the sandbox loads no extensions, registers no Python functions or
  replacement scans, and DuckDB's SQL has no way to call into libc or Python. Lowering the hard
  limit too would make a worker unusable for a later statement with a larger limit.
- time: a timer in the child calls `con.interrupt()` at `timeout_s` (the clean path); the caller
  kills the child (SIGKILL) at `timeout_s + GRACE_S` if it has not answered by then.

Reuse. Starting an interpreter and importing DuckDB costs ~0.4 s (1-2 s on a loaded machine),
and a DuckDB database ~50 ms, so a worker serves statements in a loop. Each statement runs on a
connection of its own (`cursor()`, closed after it: no temp object, prepared statement,
variable, random seed or session setting outlives a statement) to an in-memory DuckDB database
holding its views: a brand-new one (created, with the sandbox's settings, while the worker waits
for the statement), or the one it built for its last statement, when the job's `key` is the same
(the caller sends a job to an idle worker holding its key when there is one). The key
(`reader.run_sql`) covers the home catalog, each table's spec, view body and file stats
(`cache.Entry.digest`), the time limit and the memory limit, so a cached database has the very
views, allowed files and limits a new one would get; its settings are locked, and each statement
runs in a transaction that is rolled back, so what it could write (the check refuses writes
anyway) is undone (installing the views of a 772-file table costs ~1 s, and its footers are then
in the database's Parquet metadata cache). A database is cached only after a statement that
ended cleanly and left the database as it found it (`_fingerprint`). A worker holds one database
at a time, as without the cache: a DuckDB database maps 60-90 MB of address space even empty,
which counts against the next statement's `RLIMIT_AS` and `RETIRE_GROWTH`. A worker goes back to
a small pool (`pool_size()`, 2 unless `SEMCAT_SQL_POOL` or `set_pool_size` says otherwise) only when its statement ended cleanly: answered within its
time, with rows or an ordinary SQL error. A worker that timed out (interrupted or killed), died,
ran out of memory (DuckDB's or Python's) or failed in an unexpected way is killed, and a fresh
one is started in its place. A worker also retires itself when its address space after a
statement has grown more than `RETIRE_GROWTH` over what it was after its first: what the
allocator keeps mapped counts against the next statement's `RLIMIT_AS`. At most
`max_concurrent()` statements (8 unless `set_max_concurrent` says otherwise) run at once, each
in its own worker; more wait for one to finish (so at most that many workers plus the pool).

The caller does every catalog read itself (the child never sees the catalog) and sends the view
specs with the statement; the child answers with JSON only, so nothing it produces is unpickled.

Protocol, per statement: the child writes `S` when it is ready for a statement (imports done,
the next database created; `prestart` waits for it). The caller writes one frame: an 8-byte
big-endian length, then the pickled job. The child writes `R` once the views exist (the time
limit starts), then a frame holding one JSON document; or `E` and a JSON error frame when the
views cannot be built. Then it closes the database and, unless it retires (exits), writes `S`
again. `workers()` lists the pids of the live workers, for tests and operators."""

from __future__ import annotations

import atexit
import functools
import json
import os
import pickle
import resource
import selectors
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import IO, Any

__all__ = ["Job", "WorkerDied", "run", "prestart", "main", "workers", "holds", "last_worker", "last_cached", "last_snapshot",
           "may_serve",
           "pool_size",
           "set_pool_size", "max_concurrent", "set_max_concurrent", "HEADROOM", "GRACE_S", "SETUP_TIMEOUT_S",
           "RETIRE_GROWTH"]

HEADROOM = 512 << 20      # bytes of address space above memory_limit for the interpreter and DuckDB itself
GRACE_S = 0.5            # how long past timeout_s the caller waits before it kills the worker
SETUP_TIMEOUT_S = 60.0   # starting the interpreter and creating the views
MAX_CONCURRENT = 8       # default: statements running at once (each in its own worker); more wait for one
RETIRE_GROWTH = 128 << 20  # a worker whose address space grew more than this retires
# address space for the snapshot cache (`snapcache`), when on: its own database (~80 MB) and
# pyarrow (~280 MB mapped once imported), which carries the rows into it
STORE_HEADROOM = 448 << 20
_MAX_POOL = 4
PRELOAD_S = 40.0         # a preload (`Job.preload`) stops copying after this many seconds (< SETUP_TIMEOUT_S)
PRELOAD_FILE_COST = 64 << 10  # bytes a file counts as at least in a preload's order (its open, footer, path checks)

# DuckDB errors after which the worker is not reused: it hit a limit, or DuckDB itself is unsure.
_UNCLEAN_DUCKDB = frozenset({"OutOfMemoryException", "InterruptException", "FatalException", "InternalException"})
_FRAME = struct.Struct(">Q")


@dataclass
class Job:
    text: str                # the checked statement
    # duck.Views (home catalog and (spec, view body) pairs), or it pickled; None: served by the
    # snapshot cache or not at all (the answer is then `{"miss": true}` and nothing ran)
    views: Any
    limit: int
    timeout_s: float
    memory_limit: int
    # Identifies the view set (cache entry digests, home catalog) and the limits above: a worker
    # keeps the database it built for its last job and serves a job with the same key from it
    # (None: build a new database).
    key: str | None = None
    # The snapshot cache (`snapcache`): each table's (catalog, namespace, table) -> the digest of
    # its exact rows (`cache.Entry.data`); None: not used for this statement (introspection).
    cache: dict[tuple[str, str, str], str] | None = None
    names: frozenset[str] | None = None  # lower-case table names the statement reads
    home: str | None = None              # the home catalog (`USE`d)
    budget: int = 0                      # bytes of cached tables the worker may hold (0: cache off)
    # Lower-case names of the tables whose views the statement needs (None: every view, as for a
    # statement that looks at DuckDB's catalog): the database's other views are created only when
    # a later statement names them (`duck.install_views` with `only`); the database still allows
    # every view's files and has every catalog and schema, and a statement whose name lookup
    # fails gets every view and runs again, so what it answers is the same.
    tables: frozenset[str] | None = None
    # An empty `text`: no statement, only copy the tables in `names` into the cache (`warm`).
    # `preload` > 0 (with an empty `text`, `names` None: `reader.prepare`): before answering, copy
    # the view set's tables into the snapshot cache, the costliest to read from their files first,
    # until it holds this many bytes (`_preload`); the answer's `snap.tables` lists the digests held.
    preload: int = 0


def _extra(budget: int) -> int:
    """Address space a worker needs above memory_limit + HEADROOM for a cache of `budget` bytes."""
    return budget + STORE_HEADROOM if budget else 0


class WorkerDied(Exception):
    """The worker ended without an answer (killed, or crashed out of memory)."""

    def __init__(self, message: str, timed_out: bool, busy: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out
        self.busy = busy  # no worker was free: the statement never ran


# ---------------------------------------------------------------- the caller's side

class _Worker:
    """One worker process as the caller sees it."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.ready = False           # its `S` for the next statement was read
        self.cap: int | None = None  # its hard RLIMIT_AS once its first statement set it
        self.served = 0
        self.key: str | None = None  # the key of the database it holds (as far as the caller knows)
        self.snap: str | None = None  # the key of the last job its snapshot cache served
        # digests (`Job.cache`) of the tables it read with the snapshot cache on, by the limits of the
        # statements that read them (`_limits`: its cache serves only statements of the limits it was
        # created with): what it may hold or copy in on their second use (a superset: evictions are
        # not reported back)
        self.may_hold: dict[tuple[float, int, int], set[str]] = {}

    def fits(self, memory_limit: int) -> bool:
        return self.cap is None or memory_limit + HEADROOM <= self.cap

    def alive(self) -> bool:
        return self.proc.poll() is None


def _default_pool_size() -> int:
    raw = os.environ.get("SEMCAT_SQL_POOL", "2")
    try:
        n = int(raw)
    except ValueError:
        n = -1
    if not 1 <= n <= _MAX_POOL:
        raise ValueError(f"SEMCAT_SQL_POOL must be a whole number from 1 to {_MAX_POOL}, got {raw!r}")
    return n


_pool_size = _default_pool_size()
_idle: list[_Worker] = []           # ready for a statement, most recently used last
_busy: set[_Worker] = set()
_lock = threading.Lock()
_max_concurrent = MAX_CONCURRENT
_slots = threading.BoundedSemaphore(MAX_CONCURRENT)
_last = threading.local()


def pool_size() -> int:
    """How many workers are kept started (idle, or busy and coming back) for the next statements."""
    return _pool_size


def set_pool_size(n: int) -> None:
    """Keep `n` (1 to 4) workers started; extra idle ones are stopped."""
    global _pool_size
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= _MAX_POOL:
        from catalog_core.errors import InvalidValueError

        raise InvalidValueError(f"the SQL worker pool size must be an integer from 1 to {_MAX_POOL}, got {n!r}")
    with _lock:
        _pool_size = n
        extra = _idle[:max(0, len(_idle) - n)]
        del _idle[:len(extra)]
    for w in extra:
        _stop(w)


def max_concurrent() -> int:
    """How many statements may run at once (each in its own worker)."""
    return _max_concurrent


def set_max_concurrent(n: int) -> None:
    """Let `n` (1 to 64) statements run at once; statements already running keep their slot."""
    global _max_concurrent, _slots
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 64:
        from catalog_core.errors import InvalidValueError

        raise InvalidValueError(f"the number of concurrent SQL statements must be an integer from 1 to 64, got {n!r}")
    with _lock:
        _max_concurrent, _slots = n, threading.BoundedSemaphore(n)


def _limits(job: Job) -> tuple[float, int, int]:
    """The limits a worker's snapshot cache is created with and serves (`snapcache.Store.settings`)."""
    return float(job.timeout_s), job.memory_limit, job.budget


def may_serve(digests: set[str], limits: tuple[float, int, int] | None = None) -> bool:
    """Could a live worker hold (or copy in from its views) every table of `digests`, for
    statements of `limits` (time limit, memory limit, cache budget; None: any)? False when none
    has read them all: a statement on them then goes straight to the files, without first asking
    a worker's snapshot cache (a round trip that, on a fresh pool, also overlaps the start of the
    next worker with the statement)."""
    with _lock:
        return any(digests <= held for w in list(_idle) + list(_busy) if w.alive()
                   for lim, held in w.may_hold.items() if limits is None or lim == limits)


def holds(key: str) -> bool:
    """Does a live worker hold the database of job key `key` (`Job.key`)?"""
    with _lock:
        return any(w.key == key for w in list(_idle) + list(_busy) if w.alive())


def last_worker() -> int | None:
    """The pid of the worker that ran this thread's last statement (None: none yet)."""
    return getattr(_last, "pid", None)


def last_snapshot() -> dict[str, Any] | None:
    """What this thread's last statement's worker said of its snapshot cache (`snapcache`):
    `hit` (the statement read cached tables), `held` and `limit` bytes and `tables` (digests,
    least recently used first); None when the cache was not used."""
    return getattr(_last, "snap", None)


def last_cached() -> bool | None:
    """Whether this thread's last statement ran on a database its worker had cached (None: no
    answer yet)."""
    return getattr(_last, "cached", None)


def workers() -> dict[str, list[int]]:
    """The pids of the live workers: `idle` (in the pool, oldest first) and `busy` (running a
    statement)."""
    with _lock:
        return {"idle": [w.proc.pid for w in _idle if w.alive()], "busy": sorted(w.proc.pid for w in _busy)}


def _spawn() -> _Worker:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["MALLOC_ARENA_MAX"] = "2"
    # pyarrow's default pool (jemalloc/mimalloc) reserves ~1 GB of address space at first use;
    # malloc's does not, and what it frees `_trim` can give back
    env["ARROW_DEFAULT_MEMORY_POOL"] = "system"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return _Worker(subprocess.Popen([sys.executable, "-c", "from catalog_core.sql.worker import main; main()"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, bufsize=0,
                                    close_fds=True))


def _stop(w: _Worker) -> None:
    if w.proc.poll() is None:
        w.proc.kill()
    w.proc.wait()
    for f in (w.proc.stdin, w.proc.stdout):
        if f is not None:
            try:
                f.close()
            except OSError:
                pass


def _ready_now(w: _Worker) -> bool:
    """Has `w` said it is ready (its `S` is waiting in the pipe)? Never blocks."""
    if w.ready:
        return True
    assert w.proc.stdout is not None
    fd = w.proc.stdout.fileno()
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        if not sel.select(0):
            return False
    w.ready = os.read(fd, 1) == b"S"  # (EOF: it exited; `alive` will say so)
    return w.ready


def _take(memory_limit: int, key: str | None, want: set[str] | None, limits: tuple[float, int, int]) -> _Worker:
    """An idle worker whose hard limit fits `memory_limit`: one that holds the database of `key`,
    else (`want`: the table digests of a job for the snapshot cache alone) one that may hold them
    all (`_Worker.may_hold` under the job's `limits`: what a preload or its statements copied in), else one that is ready now, else the most recently used that has served (it is creating its
    next database), else a starting one; or a new one. (With two idle workers, back-to-back
    statements of different views alternate, so one worker's next database is created while the
    other runs a statement.)"""
    dead: list[_Worker] = []
    with _lock:
        fit: list[_Worker] = []
        for i in list(_idle):
            if not i.alive():
                _idle.remove(i)
                dead.append(i)
            elif i.fits(memory_limit):
                fit.append(i)
        pick = next((i for i in reversed(fit) if key is not None and key in (i.key, i.snap)), None)
        pick = pick or next((i for i in reversed(fit) if want and want <= i.may_hold.get(limits, set())), None)
        pick = pick or next((i for i in reversed(fit) if _ready_now(i)), None)
        pick = pick or next((i for i in reversed(fit) if i.served), fit[-1] if fit else None)
        if pick is None:
            pick = _spawn()
        else:
            _idle.remove(pick)
        _busy.add(pick)
    for d in dead:
        _stop(d)
    return pick


def _surplus() -> int:
    """The index in `_idle` of the worker to stop when more than `_pool_size` are idle: a spare
    that never served (it holds no database and no cached table), else the least recently used."""
    return next((n for n, i in enumerate(_idle) if not i.served), 0)


def _release(w: _Worker, keep: bool) -> None:
    """Back to the pool (when `keep` and it is alive), else stopped; and one worker started when
    fewer than `pool_size()` are idle or busy (a busy one comes back), so that the next statement
    does not wait for an interpreter. Past `pool_size()` idle workers (after more statements ran at
    once), a spare that never served is stopped before one that holds a database or cached tables.
    (Starting a spare for every busy worker, then stopping the oldest idle one when the busy one
    came back, threw away the database and snapshot cache of a worker a background warm-up had
    kept busy: 53 interpreters and their copies for one 60-episode eval run.)"""
    out: list[_Worker] = []
    with _lock:
        _busy.discard(w)
        if keep and w.alive():
            _idle.append(w)
            while len(_idle) > _pool_size:
                out.append(_idle.pop(_surplus()))
        else:
            out.append(w)
        if len(_idle) + len(_busy) < _pool_size:
            _idle.append(_spawn())
    for d in out:
        _stop(d)


def _await_start(w: _Worker, timeout_s: float) -> bool:
    if w.ready:
        return True
    try:
        w.ready = _read_until(w.proc, time.monotonic() + timeout_s, 1) == b"S"
    except TimeoutError:
        return False
    return w.ready


def prestart(timeout_s: float = SETUP_TIMEOUT_S) -> bool:
    """Make sure an idle worker is started and ready (a server may call this at startup, so the
    first statement does not wait for an interpreter); whether it is ready within `timeout_s`."""
    dead: list[_Worker] = []
    with _lock:
        dead = [w for w in _idle if not w.alive()]
        for w in dead:
            _idle.remove(w)
        w = _idle.pop() if _idle else _spawn()
        _busy.add(w)  # no statement reads from it while this waits
    for d in dead:
        _stop(d)
    ok = _await_start(w, timeout_s)
    with _lock:
        _busy.discard(w)
        _idle.append(w)
    return ok


@atexit.register
def stop_all() -> None:
    with _lock:
        ws = list(_idle) + list(_busy)
        _idle.clear()
    for w in ws:
        _stop(w)


def _read_until(proc: subprocess.Popen[bytes], deadline: float, want: int | None) -> bytes:
    """Bytes from the worker's stdout: `want` of them (fewer only at EOF), or all until EOF;
    TimeoutError at `deadline`."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    chunks: list[bytes] = []
    got = 0
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while want is None or got < want:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                raise TimeoutError
            chunk = os.read(fd, (want - got) if want is not None else 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    return b"".join(chunks)


def _read_frame(proc: subprocess.Popen[bytes], deadline: float) -> bytes:
    head = _read_until(proc, deadline, _FRAME.size)
    if len(head) < _FRAME.size:
        return b""
    return _read_until(proc, deadline, _FRAME.unpack(head)[0])


def _clean(answer: dict[str, Any]) -> bool:
    """Did the statement end in a way that leaves its worker fit for the next one?"""
    if "ok" in answer or answer.get("miss") is True:
        return True
    err = answer.get("error")
    if not isinstance(err, dict):
        return False
    return err.get("kind") == "catalog" or (err.get("kind") == "duckdb" and err.get("type") not in _UNCLEAN_DUCKDB)


class _NotStarted(Exception):
    """The worker never said it was ready: the statement did not reach it."""


def _exchange(w: _Worker, job: Job, data: bytes, meanwhile: Callable[[], object] | None = None
              ) -> tuple[bytes, bytes, bool]:
    """Send `job` to `w`, call `meanwhile` (while the worker runs it); (tag, body, timed_out)."""
    assert w.proc.stdin is not None
    try:
        w.proc.stdin.write(_FRAME.pack(len(data)) + data)
        w.proc.stdin.flush()
    except (BrokenPipeError, ValueError):
        pass  # the worker is gone: reported below
    if meanwhile is not None:
        meanwhile()
    if not _await_start(w, SETUP_TIMEOUT_S):
        raise _NotStarted
    w.ready = False
    w.served += 1
    if w.cap is None:
        w.cap = max(job.memory_limit, _default_memory_limit()) + HEADROOM + _extra(job.budget)
    try:
        tag = _read_until(w.proc, time.monotonic() + SETUP_TIMEOUT_S, 1)
        deadline = time.monotonic() + (job.timeout_s + GRACE_S if tag == b"R" else SETUP_TIMEOUT_S)
        body = _read_frame(w.proc, deadline) if tag else b""
    except TimeoutError:
        return b"", b"", True
    return tag, body, False


def _default_memory_limit() -> int:
    from catalog_core.sql.sandbox import MEMORY_LIMIT

    return MEMORY_LIMIT


def run(job: Job, meanwhile: Callable[[], object] | None = None) -> dict[str, Any]:
    """Run `job` in a worker; its JSON answer (`{"ok": ...}` or `{"error": ...}`). Raises
    WorkerDied when the worker was killed at the deadline or ended without an answer.
    `meanwhile` is called after the job is sent to a worker, before its answer is read (again
    when the job is sent to another worker)."""
    slots = _slots
    if not slots.acquire(timeout=SETUP_TIMEOUT_S):
        raise WorkerDied(f"all {_max_concurrent} SQL workers stayed busy for {SETUP_TIMEOUT_S:g} s",
                         timed_out=True, busy=True)
    try:
        data = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
        want = ({job.cache[p] for p in job.cache if job.names is None or p[2].lower() in job.names}
                if job.views is None and job.cache else None)
        while True:
            w = _take(job.memory_limit + _extra(job.budget), job.key, want, _limits(job))
            _last.pid = w.proc.pid
            reused = w.served > 0
            try:
                tag, body, timed_out = _exchange(w, job, data, meanwhile)
            except _NotStarted:
                _release(w, keep=False)
                if reused:
                    continue  # it retired after its last statement; the job never reached it
                raise WorkerDied("the SQL worker did not start", timed_out=False) from None
            except BaseException:
                _release(w, keep=False)
                raise
            answer = None
            if tag in (b"R", b"E") and body:
                try:
                    answer = json.loads(body)
                except ValueError:
                    answer = None
            ok = isinstance(answer, dict)
            # (no `snap` in the answer: the worker's cache was created with other limits, and the job ran
            # on its files without it)
            if isinstance(answer, dict) and _clean(answer) and job.cache and job.budget and not answer.get("miss") \
                    and isinstance(answer.get("snap"), dict):
                if sum(map(len, w.may_hold.values())) > 100_000:
                    w.may_hold.clear()
                held_now = w.may_hold.setdefault(_limits(job), set())
                if job.preload:  # what the preload copied in: the digests its answer lists
                    held = answer["snap"].get("tables")
                    held_now.update(set(job.cache.values()) & set(held if isinstance(held, list) else []))
                else:
                    held_now.update(job.cache[p] for p in job.cache if job.names is None or p[2].lower() in job.names)
            if job.views is None:  # the snapshot cache only: its database is not the worker's own
                w.snap = job.key if ok and "ok" in answer else w.snap  # type: ignore[operator]
            else:
                w.key = job.key if ok and _clean(answer) else None  # type: ignore[arg-type]
            _release(w, keep=ok and not timed_out and _clean(answer))  # type: ignore[arg-type]
            if isinstance(answer, dict):
                _last.cached = answer.pop("cached", None) is True
                _last.snap = answer.pop("snap", None)
                return answer
            if timed_out:
                raise WorkerDied("killed at the deadline", timed_out=True)
            code = w.proc.returncode
            how = (f"was killed by signal {signal.Signals(-code).name}" if code is not None and code < 0
                   else f"exited with status {code}")
            raise WorkerDied(f"the SQL worker {how} without an answer", timed_out=False)
    finally:
        slots.release()


# ---------------------------------------------------------------- the worker's side

def _answer(out: IO[bytes], tag: bytes, doc: dict[str, Any]) -> None:
    try:
        data = json.dumps(doc).encode()
    except (TypeError, ValueError, OverflowError) as e:
        data = json.dumps({"error": {"kind": "other", "type": type(e).__name__, "message": str(e)}}).encode()
    out.write(tag + _FRAME.pack(len(data)) + data)
    out.flush()


def _error(e: BaseException) -> dict[str, Any]:
    import duckdb

    from catalog_core.errors import CatalogError

    if isinstance(e, duckdb.Error):
        return {"kind": "duckdb", "type": type(e).__name__, "message": str(e)}
    if isinstance(e, CatalogError):
        return {"kind": "catalog", "type": type(e).__name__, "message": e.message}
    if isinstance(e, MemoryError):
        return {"kind": "memory", "type": "MemoryError", "message": "Python ran out of memory converting the rows"}
    return {"kind": "other", "type": type(e).__name__, "message": str(e)}


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks: list[bytes] = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _read_job(fd: int) -> Job | None:
    head = _read_exact(fd, _FRAME.size)
    data = _read_exact(fd, _FRAME.unpack(head)[0]) if head is not None else None
    return None if data is None else pickle.loads(data)


def _limit_memory(memory_limit: int, budget: int = 0, held: int | None = 0) -> None:
    """This statement's soft RLIMIT_AS (plus the snapshot cache's `held` bytes and its database;
    held None: up to the hard limit, to copy a table in); the hard one is set at the first
    statement and never raised (see the module docstring for why the soft limit holds)."""
    from catalog_core.sql.sandbox import MEMORY_LIMIT

    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    if hard == resource.RLIM_INFINITY:
        hard = max(memory_limit, MEMORY_LIMIT) + HEADROOM + _extra(budget)
    soft = hard if held is None else min(hard, memory_limit + HEADROOM + (held + STORE_HEADROOM if budget else 0))
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))  # ValueError when soft > hard: the caller never sends that


def _address_space() -> int:
    """Bytes of address space mapped now (VmSize); 0 when unknown."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


TRIM_GROWTH = 16 << 20  # a statement on the snapshot cache trims the heap only past this much growth
_trimmed_at = [0]  # the address space after the last trim


def _trim() -> None:
    """Give freed heap back to the system, so it does not count against the next statement."""
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
    _trimmed_at[0] = _address_space()


def _trim_if_grown() -> None:
    """`_trim` when the address space grew more than `TRIM_GROWTH` since the last one (or is
    unknown): after a statement on the snapshot cache, whose small answer rarely leaves much heap
    to give back, and a trim walks the whole heap (5-10 ms on a loaded machine). What it leaves
    mapped is at most `TRIM_GROWTH` of the `HEADROOM` above the next statement's limit, and the
    retirement check (`RETIRE_GROWTH`) still sees it."""
    size = _address_space()
    if not size or size > _trimmed_at[0] + TRIM_GROWTH:
        _trim()


class _Watchdog:
    """One thread that interrupts a statement's connection at its deadline, armed and disarmed
    around each statement (a `threading.Timer` per statement costs a thread start, 1-3 ms on a
    loaded machine). Invariant: the interrupt runs under the lock and only while its statement is
    armed, so once `disarm` returns it never reaches that connection or a later statement's."""

    IDLE_WAIT = 1.0  # seconds an idle watchdog sleeps between looks

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.deadline: float | None = None
        self.fn: Callable[[], None] | None = None
        self.thread: threading.Thread | None = None
        self.wake_at = 0.0  # the latest time the thread looks at `deadline` again

    def arm(self, timeout_s: float, fn: Callable[[], None]) -> None:
        with self.cond:
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="semcat-sql-watchdog", daemon=True)
                self.thread.start()
            self.deadline, self.fn = time.monotonic() + timeout_s, fn
            # woken only when it would look too late: waking it costs the statement a GIL hand-off
            if self.deadline < self.wake_at:
                self.cond.notify()

    def disarm(self) -> None:
        with self.cond:
            self.deadline, self.fn = None, None

    def _run(self) -> None:
        with self.cond:
            while True:
                now = time.monotonic()
                if self.deadline is None:
                    self.wake_at = now + self.IDLE_WAIT
                    self.cond.wait(self.IDLE_WAIT)
                    continue
                left = self.deadline - now
                if left > 0:
                    self.wake_at = self.deadline
                    self.cond.wait(left)
                    continue
                fn, self.deadline, self.fn = self.fn, None, None
                if fn is not None:
                    fn()


_watchdog = _Watchdog()


# (`temp` is each connection's own, and ends with it)
_FINGERPRINT = """SELECT
    (SELECT list(database_name || ':' || database_oid ORDER BY database_name) FROM duckdb_databases()
     WHERE database_name <> 'temp'),
    (SELECT list(view_oid ORDER BY view_oid) FROM duckdb_views() WHERE NOT internal AND database_name <> 'temp'),
    (SELECT list(table_oid ORDER BY table_oid) FROM duckdb_tables() WHERE database_name <> 'temp'),
    (SELECT list(oid ORDER BY oid) FROM duckdb_schemas() WHERE database_name <> 'temp'),
    (SELECT count(*) FROM duckdb_sequences() WHERE database_name <> 'temp')"""


_DATABASES = ("SELECT list(database_name || ':' || database_oid ORDER BY database_name) FROM duckdb_databases() "
              "WHERE database_name <> 'temp'")


def _databases(db: Any) -> str:
    """The part of `_fingerprint` still compared after a statement on the snapshot cache whose
    transaction was rolled back: the attached databases. The schemas, views, tables and sequences
    a transaction creates or drops are undone by its rollback (DuckDB's catalog is transactional),
    and listing them costs four more catalog scans (5-50 ms on a loaded machine, on the path of
    the next statement); when the rollback fails (the statement ended its transaction) the whole
    fingerprint is compared, as before."""
    cur = db.cursor()
    try:
        return repr(cur.execute(_DATABASES).fetchone())
    finally:
        cur.close()


def _fingerprint(db: Any) -> str:
    """What a statement could have changed in a database that outlives it (its databases,
    schemas, views, tables, sequences), compared before it is cached again: a second layer under
    the transaction each statement runs in, which is rolled back (macros and types, whose
    listing costs 60 ms, rely on it alone)."""
    cur = db.cursor()
    try:
        return repr(cur.execute(_FINGERPRINT).fetchone())
    finally:
        cur.close()


def _run_timed(con: Any, timeout_s: float, fetch: Callable[[], tuple[list[Any], list[Any]]],
               status: dict[str, bool] | None = None, end: bool = True) -> dict[str, Any]:
    """`fetch()` (columns, rows) on connection `con` under a timer that interrupts it at
    `timeout_s`; the answer document (`ok` with the JSON-ready columns and rows, or `error`).
    Then (unless not `end`: the caller calls `_end` itself, after it answered) the statement's
    transaction is rolled back and `con` closed, whatever happened."""
    from catalog_core.sql import duck

    _watchdog.arm(timeout_s, duck.interrupter(con))
    try:
        columns, rows = fetch()
        doc: dict[str, Any] = {"ok": {"columns": [[c.name, c.type] for c in columns],
                                      "rows": [[duck.jsonable(v) for v in row] for row in rows]}}
        del rows
    except BaseException as e:
        doc = {"error": _error(e)}
    finally:
        _watchdog.disarm()
    if end:
        _end(con, status)
    return doc


def _end(con: Any, status: dict[str, bool] | None = None) -> None:
    """Roll the statement's transaction back and close its connection; `status["rolled_back"]`
    says whether there was a transaction left to roll back."""
    rolled_back = False
    try:
        con.execute("ROLLBACK")
        rolled_back = True
    except Exception:  # noqa: S110  (no transaction left: the statement ended it; the caller checks the database)
        pass
    if status is not None:
        status["rolled_back"] = rolled_back
    con.close()


def _statement(out: IO[bytes], db: Any, job: Job, installed: str | None, held: int = 0,
               snap: dict[str, Any] | None = None,
               deferred: dict[str, list[Any]] | None = None,
               setup: Callable[[], dict[str, Any]] | None = None) -> str | None:
    """Run `job` on a new connection (cursor) to database `db`, installing the views first
    unless `installed` (then: the database's fingerprint after its views were installed); the
    fingerprint when the database may serve a later job with the same key (None: close it).
    `held`: bytes the snapshot cache holds; `snap`: its stats for the answer. An empty
    `job.text` runs nothing (a `warm` job, or one that only prepares the database) and answers
    no rows. `deferred` (the database's views not created yet, by lower-case table name; kept
    by the caller with `db`): filled when the views are installed for `job.tables` only, and the
    views a statement names are created from it before it runs; should its name lookup fail
    while views are still deferred, all of them are created and it runs once more. `setup`
    (a preload, `_preload`): called once the views exist, before `R` (under the caller's setup
    time, not the statement's), its result sent as the answer's `snap`."""
    from catalog_core.sql import duck
    from catalog_core.sql.types import quote_ident

    con = None
    if deferred is None:
        deferred = {}
    reused = installed is not None
    try:
        _limit_memory(job.memory_limit, job.budget, held)
        if not installed:
            deferred.clear()
            duck.job_settings(db, job.timeout_s, job.memory_limit)
            views = pickle.loads(job.views) if isinstance(job.views, bytes) else job.views
            deferred.update(duck.install_views(db, views, True, only=job.tables))
        elif deferred and duck.add_views(db, deferred, job.tables):
            installed = None  # new views: the fingerprint is taken again
        before = installed or (_fingerprint(db) if job.key is not None else None)
        if setup is not None:
            snap = setup()
        # A connection of its own: temp objects, prepared statements, variables, the random
        # seed and session settings live in it and end with it (the statement check refuses
        # them anyway), and a transaction that is rolled back: the database's settings are
        # locked, and what the statement could write to it (the check refuses that too) is undone.
        con = db.cursor()
        home = db.execute("SELECT current_database()").fetchone()[0]
        if home != "memory":
            con.execute(f"USE {quote_ident(home)}")
        con.execute("BEGIN TRANSACTION")
    except BaseException as e:
        if con is not None:
            con.close()
        _answer(out, b"E", {"error": _error(e)})
        return None
    out.write(b"R")
    text, limit = job.text, job.limit
    fps = [before]

    def fetch() -> tuple[list[Any], list[Any]]:
        if not text:
            return [], []
        import duckdb

        try:
            return duck.fetch(con, text, limit)
        except duckdb.CatalogException:
            if not deferred:
                raise
        # A name not found while some views are deferred: every view, then the statement again
        # (in a new transaction, which sees them), so its answer or error is the one it gets
        # with every view installed.
        con.execute("ROLLBACK")
        duck.add_views(db, deferred, None)
        fps[0] = _fingerprint(db) if fps[0] is not None else None
        con.execute("BEGIN TRANSACTION")
        return duck.fetch(con, text, limit)

    doc = _run_timed(con, job.timeout_s, fetch)
    before = fps[0]
    doc["cached"] = reused
    if snap is not None:
        doc["snap"] = snap
    _answer(out, b"", doc)  # `R` went ahead
    if before is None or not _clean(doc):
        return None
    try:
        return before if _fingerprint(db) == before else None
    except Exception:
        return None


def _snap_statement(out: IO[bytes], store: Any, job: Job) -> bool | None:
    """Run `job` on the snapshot cache's database (`snapcache.Store`), every table it names
    being held there. False: it did not bind there (a name not found, or any other error before
    it ran; nothing was written to the caller, so it runs on the file views instead); True: it
    ran and the store is still clean; None: it ran and the store must be dropped (also when its
    transaction could not be rolled back: what it changed is then not known)."""
    from catalog_core.sql import duck
    from catalog_core.sql.types import quote_ident

    assert job.cache is not None and job.key is not None
    con = None
    try:
        _limit_memory(job.memory_limit, job.budget, store.held)
        # Its attached databases (`_databases`, one catalog scan) are what is compared after the
        # statement: its transaction is rolled back, which undoes the rest (the whole
        # `_fingerprint`, five scans, cost a statement's first use of a table set 20-60 ms).
        store.use(job.key, job.home, job.cache, job.names, _databases)
        con = store.db.cursor()
        home = store.home  # the database's current one (`Store.use` sets it)
        if home != "memory":
            con.execute(f"USE {quote_ident(home)}")
        con.execute("BEGIN TRANSACTION")
        rel = con.sql(job.text)  # bound here: a lookup error must not show the cache's names
        if rel is None:
            raise ValueError("no result set")
    except BaseException:
        if con is not None:
            con.close()
        return False
    out.write(b"R")
    held = [rel]  # taken by the fetch, so the relation is gone before the rollback
    del rel
    limit = job.limit
    status: dict[str, bool] = {}
    doc = _run_timed(con, job.timeout_s, lambda: duck.fetch_rel(con, held.pop(), limit), status, end=False)
    doc["cached"] = True
    doc["snap"] = {"hit": True, **store.stats()}
    _answer(out, b"", doc)  # the rows are out: the rollback and the checks below are off the caller's path
    _end(con, status)
    try:
        if not _clean(doc):
            return None
        if status.get("rolled_back"):  # its transaction undid all but the attached databases
            return True if _databases(store.db) == store.fp else None
        return None  # it ended its own transaction (the check lets no such statement through): drop the store
    except Exception:
        return None


def _warm(db: Any, job: Job, store: Any, deferred: dict[str, list[Any]] | None = None) -> None:
    """After the answer: copy the tables the job names into the snapshot cache, reading them
    through `db` (the job's sandboxed views over its files; a table whose view is still
    `deferred` is left out)."""
    assert job.cache is not None
    _limit_memory(job.memory_limit, job.budget, None)
    try:
        for parts in store.wanted(job.cache, job.names):
            if deferred and parts[2].lower() in deferred:
                continue
            store.add(db, parts, job.cache[parts])
    finally:
        _limit_memory(job.memory_limit, job.budget, store.held)


def _preload(db: Any, job: Job, store: Any) -> dict[str, Any]:
    """Before answering a preload job (`Job.preload`, `reader.prepare`): copy the tables of its
    view set into the snapshot cache through `db` (its sandboxed views over their files), those
    that cost most to read from their files first (the most file bytes, each file counted as at
    least `PRELOAD_FILE_COST`: a 772-file table of 2 MB before a 1-file table of 5 MB), while the
    cache holds less than `job.preload` bytes and for at most `PRELOAD_S` seconds (a table's copy
    is stopped at that time), skipping a table whose files alone outweigh the room left; the
    cache's stats (`snap` of the answer). A table is copied only when its files' lstat now gives
    the digest the caller sent (`cache.data_digest`: the rows are that digest's) and kept only
    when they still have that lstat after the copy."""
    from catalog_core.sql.cache import data_digest, file_sig

    assert job.cache is not None
    start = time.monotonic()
    todo: list[tuple[int, Any, Any, Any, str]] = []
    for spec, body in job.views[1]:
        digest = job.cache.get(spec.parts)
        if digest is None or digest in store.tables or digest in store.refused:
            continue
        sig = file_sig(spec)
        todo.append((sum(st[2] for st in sig if st is not None), spec, body, sig, digest))
    todo.sort(key=lambda t: -sum(max(st[2], PRELOAD_FILE_COST) if st is not None else 0 for st in t[3]))
    _limit_memory(job.memory_limit, job.budget, None)
    try:
        for size, spec, body, sig, digest in todo:
            left = PRELOAD_S - (time.monotonic() - start)
            if store.held >= job.preload or left <= 0:
                break
            if size > job.preload - store.held or data_digest(spec, body, sig) != digest:
                continue
            if store.add(db, spec.parts, digest, timeout_s=left) and file_sig(spec) != sig:
                store.evict(digest)
    finally:
        _limit_memory(job.memory_limit, job.budget, store.held)
    return {"hit": False, **store.stats()}


def _flush(db: Any, job: Job, store: Any, pending: dict[str, Any], specs: dict[Any, Any],
           digests: Iterable[str], deferred: dict[str, list[Any]] | None = None) -> None:
    """Copy the pending tables `digests` (statements already answered read them from the files of
    `db`) into the snapshot cache, each only while its local files still have the `lstat` they
    had when its statement ran (else it is dropped: its rows may not be that digest's any more)."""
    from catalog_core.sql.cache import file_sig

    todo = [(d, pending.pop(d)) for d in list(digests) if d in pending]
    if not todo:
        return
    _limit_memory(job.memory_limit, job.budget, None)
    try:
        for digest, (parts, sig) in todo:
            spec = specs.get(parts)
            if deferred and parts[2].lower() in deferred:
                continue  # (never read through `db`: its view was not created)
            if spec is not None and file_sig(spec) == sig:
                store.add(db, parts, digest)
    finally:
        _limit_memory(job.memory_limit, job.budget, store.held)


def _serve() -> None:  # noqa: C901 - the worker's job loop: connection recycling, the snapshot cache's settings and each answer share its locals
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # nothing but the answers reach the caller's pipe
    import duckdb  # noqa: F401  (imported once, before the first statement)

    from catalog_core.sql import duck, snapcache

    if snapcache.budget() > 0:
        import pyarrow  # noqa: F401  (mapped before `base` is measured: it is not growth)

    stdin = sys.stdin.fileno()
    base = 0
    # At most one database at a time, as without the cache (each costs 60-90 MB of address space
    # even empty, which counts against RLIMIT_AS): the last one, with its views (`key`), or a
    # brand-new one created while the worker waits.
    key: str | None = None
    fp: str | None = None  # the database's fingerprint once it holds the views of `key`
    db: Any = None
    store: Any = None  # the snapshot cache (`snapcache.Store`), once a job asked for it
    # Materialized on second use: digest -> ((catalog, namespace, table), its files' lstat) of the
    # tables that statements answered on `db` read from their files, copied into the cache (`_flush`)
    # only when a later statement names them again or before `db` makes way for another view set,
    # so that the first statement on a table, and the statements right after it on other tables,
    # never wait for a copy. `specs`: the `TableSpec` of each view in `db`.
    pending: dict[str, Any] = {}
    specs: dict[Any, Any] = {}
    deferred: dict[str, list[Any]] = {}  # the views of `db` not created yet (`_statement`)
    while True:
        if db is None:
            db, key = duck.connect(True), None
            pending.clear()
            specs.clear()
            deferred.clear()
        size = _address_space()
        base = base or size
        if size > base + RETIRE_GROWTH + (store.held + STORE_HEADROOM if store is not None else 0):
            return  # retire: what stays mapped would count against the next statement's limit
        out.write(b"S")
        job = _read_job(stdin)
        if job is None:  # the caller went away or stopped this worker
            return
        if store is not None and job.budget == 0:
            store.close()  # the cache was turned off
            store = None
            _trim()
        if store is not None and job.cache is not None and store.settings != _limits(job):
            if job.budget != store.limit or not store.tables:
                store.close()  # the budget was changed, or it holds nothing yet: one for these limits
                store = None
                _trim()
            else:
                # Other time or memory limits than those the cache's database was locked with (the
                # eval's scorer at 30 s beside the MCP tools' 10 s): this job leaves the cache as it
                # is (closing it dropped every table the statements of its own limits had copied in,
                # and the memory it freed still counted towards `RETIRE_GROWTH`) and runs on its
                # files; a job for the cache alone misses. Its answer carries no `snap`, so the
                # caller routes no statement of these limits here for the cache (`_Worker.may_hold`).
                job.cache = None
        if job.budget == 0:
            pending.clear()
        elif pending and job.text and job.cache is not None and job.key is not None:
            need = [job.cache[p] for p in job.cache if job.names is None or p[2].lower() in job.names]
            if any(d in pending for d in need):  # the second use: copy them in, then answer from memory
                if store is None:
                    from catalog_core.sql.snapcache import Store

                    store = Store(job.timeout_s, job.memory_limit, job.budget)
                _flush(db, job, store, pending, specs, need, deferred)
        if store is not None and job.text and job.cache is not None and job.key is not None \
                and store.serves(job.cache, job.names):
            done = _snap_statement(out, store, job)
            if done is None:
                store.close()
                store = None
            if done is not False:
                _trim_if_grown()
                continue
        if job.views is None:  # nothing but the snapshot cache, which does not hold the tables
            _answer(out, b"E", {"miss": True})
            continue
        snap = None
        if job.cache is not None and job.budget:
            snap = {"hit": False, **(store.stats() if store is not None else {"held": 0, "limit": job.budget,
                                                                                "tables": []})}
        installed = fp if key is not None and job.key == key else None
        if key is not None and installed is None:  # another view set: a new database
            if pending and job.budget:  # its tables read so far go into the cache first
                if store is None:
                    from catalog_core.sql.snapcache import Store

                    store = Store(job.timeout_s, job.memory_limit, job.budget)
                _flush(db, job, store, pending, specs, list(pending), deferred)
            db.close()
            db, key = duck.connect(True), None
            pending.clear()
            specs.clear()
            deferred.clear()
        fp = None
        later: dict[str, Any] = {}  # what this statement reads from its files, with their lstat before it does
        setup = None
        if (job.text or job.preload) and job.cache is not None and job.budget and job.key is not None:
            from catalog_core.sql.cache import file_sig

            if installed is None:  # the views this job installs: their specs, for `_flush`
                job.views = pickle.loads(job.views) if isinstance(job.views, bytes) else job.views
                specs.update((spec.parts, spec) for spec, _body in job.views[1])
            if job.preload:
                if store is None:
                    from catalog_core.sql.snapcache import Store

                    store = Store(job.timeout_s, job.memory_limit, job.budget)
                if installed is None:
                    setup = functools.partial(_preload, db, job, store)
        if job.text and job.cache is not None and job.budget and job.key is not None:
            from catalog_core.sql.cache import file_sig

            held = store.tables if store is not None else {}
            refused = store.refused if store is not None else set()
            for parts, digest in job.cache.items():
                if (job.names is None or parts[2].lower() in job.names) and parts in specs \
                        and digest not in held and digest not in refused:
                    later[digest] = (parts, file_sig(specs[parts]))
        try:
            fp = _statement(out, db, job, installed, store.held if store is not None else 0, snap, deferred, setup)
            if fp is not None and job.cache is not None and job.budget and job.key is not None:
                if not job.text and not job.preload:  # a `warm` job: copy now (the caller asked, in the background)
                    if store is None:
                        from catalog_core.sql.snapcache import Store

                        store = Store(job.timeout_s, job.memory_limit, job.budget)
                    _warm(db, job, store, deferred)
                pending.update(later)
        finally:
            if fp is not None and job.key is not None:
                key = job.key
            else:
                db.close()
                db, key = None, None
            _trim()


def main() -> None:
    """The worker's entry point (`python -c "from catalog_core.sql.worker import main; main()"`)."""
    try:
        _serve()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the process that started this worker is gone: nothing to answer, nothing to report
    except BaseException:
        import traceback

        traceback.print_exc()  # to stderr: the caller's log
        raise
    finally:
        os._exit(0)  # skip interpreter teardown (and DuckDB's binding leak reports)
