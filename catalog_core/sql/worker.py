"""The worker process that runs one agent statement for `run_sql`, so that its limits hold.

Why a process. DuckDB cannot stop everything from inside (measured on DuckDB 2.0):
`con.interrupt()` and `max_execution_time` are checked between vectors, never inside one scalar
function call, and the list and string builders allocate outside the buffer manager, where
`memory_limit` does not look. `SELECT len(range(200000000))` ran 21 s past a 1 s interrupt and
`SELECT length(repeat('a', 2000000000))` 37 s, both growing to 3-4 GB under a 1 GB
`memory_limit`. So the statement runs in a child process that the caller can hold to both limits
whatever the statement calls:

- memory: the child sets `RLIMIT_AS` to the statement's `memory_limit` plus `HEADROOM` (the
  interpreter, DuckDB's code, thread stacks; glibc's per-thread malloc arenas are capped with
  `MALLOC_ARENA_MAX=2` so they do not reserve address space); DuckDB's own `memory_limit` is the
  statement's limit. An allocation past it fails inside DuckDB (`OutOfMemoryException`, refused
  with rule `memory_limit`); should the child die instead, the caller reports the same rule.
- time: a timer in the child calls `con.interrupt()` at `timeout_s` (the clean path); the caller
  kills the child (SIGKILL) at `timeout_s + GRACE_S` if it has not answered by then.

The caller does every catalog read itself (the child never sees the catalog) and sends the view
specs with the statement; the child answers with JSON only, so nothing it produces is unpickled.
Starting an interpreter costs ~0.4 s, so one spare worker is kept started (imports done, waiting
on stdin) once `run_sql` has been used; each worker serves exactly one statement and exits.

Protocol: the child writes `S` once its imports are done (`prestart` waits for it). The caller
writes one pickled job to stdin and closes it. The child writes `R` once the
views exist (the time limit starts), then one JSON document, then exits; or `E` and a JSON error
when the views cannot be built."""

from __future__ import annotations

import atexit
import json
import os
import pickle
import resource
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import IO, Any

__all__ = ["Job", "WorkerDied", "run", "prestart", "main", "HEADROOM", "GRACE_S", "SETUP_TIMEOUT_S"]

HEADROOM = 512 << 20      # bytes of address space above memory_limit for the interpreter and DuckDB itself
GRACE_S = 0.5            # how long past timeout_s the caller waits before it kills the worker
SETUP_TIMEOUT_S = 60.0   # starting the interpreter and creating the views


@dataclass
class Job:
    text: str                # the checked statement
    views: Any               # reader.Views: home catalog and (spec, view body) pairs
    limit: int
    timeout_s: float
    memory_limit: int


class WorkerDied(Exception):
    """The worker ended without an answer (killed, or crashed out of memory)."""

    def __init__(self, message: str, timed_out: bool) -> None:
        super().__init__(message)
        self.timed_out = timed_out


# ---------------------------------------------------------------- the caller's side

_spare: subprocess.Popen | None = None
_spare_lock = threading.Lock()


def _spawn() -> subprocess.Popen:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["MALLOC_ARENA_MAX"] = "2"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return subprocess.Popen([sys.executable, "-c", "from catalog_core.sql.worker import main; main()"],
                            stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=env, bufsize=0, close_fds=True)


def _take() -> subprocess.Popen:
    """The spare worker (or a new one), and a new spare started for the next call."""
    global _spare
    with _spare_lock:
        proc, _spare = _spare, None
        if proc is None or proc.poll() is not None:
            if proc is not None:
                proc.wait()
            proc = _spawn()
        _spare = _spawn()
    return proc


_started: set[int] = set()  # pids of workers whose `S` was read


def _await_start(proc: subprocess.Popen, timeout_s: float) -> bool:
    if proc.pid in _started:
        return True
    try:
        ok = _read_until(proc, time.monotonic() + timeout_s, 1) == b"S"
    except TimeoutError:
        return False
    if ok:
        _started.add(proc.pid)
    return ok


def prestart(timeout_s: float = SETUP_TIMEOUT_S) -> bool:
    """Make sure a spare worker is started and ready (a server may call this at startup, so the
    first statement does not wait for an interpreter); whether it is ready within `timeout_s`."""
    global _spare
    with _spare_lock:
        if _spare is None or _spare.poll() is not None:
            _spare = _spawn()
        proc = _spare
        return _await_start(proc, timeout_s)


@atexit.register
def _stop_spare() -> None:
    global _spare
    with _spare_lock:
        proc, _spare = _spare, None
    if proc is not None:
        proc.kill()
        proc.wait()


def _read_until(proc: subprocess.Popen, deadline: float, want: int | None) -> bytes:
    """Bytes from the worker's stdout: `want` of them, or all until EOF; TimeoutError at `deadline`."""
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


def run(job: Job) -> dict[str, Any]:
    """Run `job` in a worker; its JSON answer (`{"ok": ...}` or `{"error": ...}`). Raises
    WorkerDied when the worker was killed at the deadline or ended without an answer."""
    proc = _take()
    timed_out = False
    try:
        assert proc.stdin is not None
        try:
            proc.stdin.write(pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL))
            proc.stdin.close()
        except BrokenPipeError:
            pass  # the worker is gone: reported below
        try:
            if not _await_start(proc, SETUP_TIMEOUT_S):
                raise TimeoutError
            tag = _read_until(proc, time.monotonic() + SETUP_TIMEOUT_S, 1)
            deadline = time.monotonic() + (job.timeout_s + GRACE_S if tag == b"R" else SETUP_TIMEOUT_S)
            body = _read_until(proc, deadline, None) if tag else b""
        except TimeoutError:
            timed_out, tag, body = True, b"", b""
    finally:
        _started.discard(proc.pid)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    if tag in (b"R", b"E") and body:
        try:
            answer = json.loads(body)
        except ValueError:
            answer = None
        if isinstance(answer, dict):
            return answer
    if timed_out:
        raise WorkerDied("killed at the deadline", timed_out=True)
    code = proc.returncode
    how = f"was killed by signal {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
    raise WorkerDied(f"the SQL worker {how} without an answer", timed_out=False)


# ---------------------------------------------------------------- the worker's side

def _answer(out: IO[bytes], doc: dict[str, Any]) -> None:
    try:
        data = json.dumps(doc).encode()
    except (TypeError, ValueError, OverflowError) as e:
        data = json.dumps({"error": {"kind": "other", "type": type(e).__name__, "message": str(e)}}).encode()
    out.write(data)
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


def _serve() -> None:
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # nothing but the answer reaches the caller's pipe
    import duckdb  # noqa: F401  (imported while the spare waits)

    from catalog_core.sql import reader

    out.write(b"S")
    try:
        job = pickle.load(sys.stdin.buffer)
    except EOFError:  # the caller went away while this was the spare
        return
    limit = job.memory_limit + HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        con = reader._connect(True, job.timeout_s, job.memory_limit)
        reader.install_views(con, job.views, True)
    except BaseException as e:
        out.write(b"E")
        _answer(out, {"error": _error(e)})
        return
    out.write(b"R")
    timer = threading.Timer(job.timeout_s, reader._interrupter(con))
    timer.daemon = True
    timer.start()
    try:
        columns, rows = reader._fetch(con, job.text, job.limit)
        doc: dict[str, Any] = {"ok": {"columns": [[c.name, c.type] for c in columns],
                                      "rows": [[reader._jsonable(v) for v in row] for row in rows]}}
    except BaseException as e:
        doc = {"error": _error(e)}
    finally:
        timer.cancel()
    _answer(out, doc)


def main() -> None:
    """The worker's entry point (`python -c "from catalog_core.sql.worker import main; main()"`)."""
    try:
        _serve()
    finally:
        os._exit(0)  # skip interpreter teardown (and DuckDB's binding leak reports)
