"""The trap generator's Iceberg REST write path (issue 45): a real `semcat serve` (uvicorn on loopback, a
subprocess) over the trapped copy, and pyiceberg's REST client committing to it as any Iceberg engine
would: appends, overwrites (copy-on-write restatements) and schema evolution through `update_schema`.

Each commit is backdated to the generator's clock with `X-Semcat-Commit-Time`, which the server honours
only because it is started with `--iceberg-commit-time` (an operator's switch, off by default; commit
times still never go back). The generator keeps its own `Catalog` open on the same directory (another
process's writes reach it through the engine's multi-process protocol); after each commit `commit`
waits until that catalog sees it and returns the commit's vid.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time as _time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["IcebergWriter", "PORT_ENV"]

PORT_ENV = "SEMCAT_TRAPS_ICEBERG_PORT"   # the loopback port of the server (default: a free one)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class IcebergWriter:
    """`semcat serve` on `catalog_dir` (started on first use) and a pyiceberg RestCatalog per warehouse
    (a semcat catalog: `acme` of `acme.core.orders`). Tables may live anywhere under `storage_root` (the
    trapped copy: its tables keep the locations their writers chose)."""

    def __init__(self, cat: Any, catalog_dir: str, storage_root: str, port: int | None = None,
                 log: Callable[[str], None] = print) -> None:
        self.cat, self.catalog_dir, self.storage_root = cat, os.path.abspath(catalog_dir), os.path.abspath(storage_root)
        self.port = port or int(os.environ.get(PORT_ENV) or 0) or _free_port()
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.token = "traps-" + os.urandom(12).hex()
        self.scratch: str | None = None
        self.commits = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ------------------------------------------------------------------ the server
    def start(self) -> None:
        if self.proc is not None:
            return
        import httpx

        self.scratch = tempfile.mkdtemp(prefix="traps-iceberg-")
        tokens = os.path.join(self.scratch, "tokens")
        with open(tokens, "w") as fh:
            fh.write(f"{self.token}:write source=service name=traps\n")
        os.chmod(tokens, 0o600)
        logf = open(os.path.join(self.scratch, "serve.log"), "ab")
        env = {k: v for k, v in os.environ.items() if k != "SEMCAT_TOKENS"}
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcp_server.cli", "serve", "--data", self.catalog_dir, "--host", "127.0.0.1",
             "--port", str(self.port), "--tokens", tokens, "--iceberg-root", self.storage_root,
             "--iceberg-commit-time"], stdout=logf, stderr=logf, env=env, cwd=ROOT)
        logf.close()
        deadline = _time.monotonic() + 120
        while _time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"semcat serve exited ({self.proc.returncode}): {self._log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/healthz", timeout=2).status_code == 200:
                    self.log(f"  iceberg: semcat serve on {self.url} (pid {self.proc.pid})")
                    return
            _time.sleep(0.1)
        self.close()
        raise RuntimeError(f"semcat serve did not answer on {self.url} within 120 s")

    def _log_tail(self) -> str:
        if not self.scratch:
            return ""
        with open(os.path.join(self.scratch, "serve.log"), "rb") as fh:
            return fh.read()[-2000:].decode(errors="replace")

    def close(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        if self.scratch:
            import shutil

            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None

    def __enter__(self) -> IcebergWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ commits
    def _catalog(self, warehouse: str, at: float | None) -> Any:
        from pyiceberg.catalog import load_catalog

        props: dict[str, str] = {"uri": self.url + "/iceberg", "warehouse": warehouse, "token": self.token,
                                 "snapshot-loading-mode": "refs", "header.X-Semcat-Commit-Snapshots": "refs"}
        if at is not None:
            props["header.X-Semcat-Commit-Time"] = repr(float(at))
        return load_catalog("semcat-traps", type="rest", **props)

    def table(self, name: str, at: float | None = None) -> Any:
        """pyiceberg's Table for semcat's `cat.ns.table`; its commits carry time `at`."""
        self.start()
        wh, ns, tb = name.split(".")
        return self._catalog(wh, at).load_table(f"{ns}.{tb}")

    @contextlib.contextmanager
    def commit(self, name: str, at: float) -> Iterator[Any]:
        """`with w.commit(table, at) as tx:` a pyiceberg transaction on `name` committed (one REST commit,
        timed `at`) when the block ends; `w.vid` is then the vid the generator's catalog sees it at."""
        before = self._latest()
        t = self.table(name, at)
        with t.transaction() as tx:
            yield tx
        self.vid = self._seen_after(before)
        self.commits += 1

    def _latest(self) -> int:
        refresh = getattr(self.cat, "refresh", None)   # an embedded catalog catches up now, else within 0.25 s
        return int(refresh()) if callable(refresh) else int(self.cat.latest_vid)

    def _seen_after(self, before: int) -> int:
        deadline = _time.monotonic() + 60
        while True:
            vid = self._latest()
            if vid > before:
                return vid
            if _time.monotonic() > deadline:
                raise RuntimeError(f"the Iceberg REST commit did not reach the catalog (latest vid {vid})")
            _time.sleep(0.05)

    # ------------------------------------------------------------------ the changes
    @staticmethod
    def _fit(tx: Any, arrow: Any) -> Any:
        """`arrow` cast to the table's current schema (the transaction's, after any staged schema change):
        the same column names, the table's types."""
        want = tx.table_metadata.schema().as_arrow()
        cols = [arrow.column(f.name).cast(f.type) if f.name in arrow.column_names else None for f in want]
        missing = [f.name for f, c in zip(want, cols) if c is None]
        if missing:
            import pyarrow as pa

            cols = [c if c is not None else pa.nulls(arrow.num_rows, f.type) for f, c in zip(want, cols)]
        import pyarrow as pa

        return pa.Table.from_arrays(cols, schema=want)

    def append(self, name: str, arrow: Any, at: float, new_columns: bool = False) -> int:
        """New rows (a load); `new_columns`: columns of `arrow` the table lacks are added first (one commit).
        A load of no rows that adds no column stages nothing, so pyiceberg commits nothing: the latest vid,
        no commit (waiting for one would never end)."""
        if arrow.num_rows == 0 and not (new_columns and self._adds_columns(name, arrow)):
            print(f"traps: {name} gets no rows in this load; nothing to commit through Iceberg REST", file=sys.stderr)
            return self._latest()
        with self.commit(name, at) as tx:
            if new_columns:
                self._union(tx, arrow)
            tx.append(self._fit(tx, arrow))
        return self.vid

    def overwrite(self, name: str, arrow: Any, at: float, drop: list[str] | None = None,
                  partition_only: bool = False) -> int:
        """A restatement: every row replaced by `arrow` (copy-on-write), after `drop` columns are dropped
        and the columns of `arrow` the table lacks are added (one commit). `partition_only`: only the
        partitions `arrow` holds are replaced (pyiceberg's dynamic partition overwrite)."""
        with self.commit(name, at) as tx:
            if drop:
                with tx.update_schema() as u:
                    for c in drop:
                        u.delete_column(c)
            self._union(tx, arrow)
            data = self._fit(tx, arrow)
            if partition_only:
                tx.dynamic_partition_overwrite(data)
            else:
                tx.overwrite(data)
        return self.vid

    def _adds_columns(self, name: str, arrow: Any) -> bool:
        have = {f.name for f in self.table(name).schema().fields}
        return any(f.name not in have for f in arrow.schema)

    @staticmethod
    def _union(tx: Any, arrow: Any) -> None:
        have = {f.name for f in tx.table_metadata.schema().fields}
        extra = [f for f in arrow.schema if f.name not in have]
        if extra:
            import pyarrow as pa

            with tx.update_schema() as u:   # optional, as the bridge adds columns (Iceberg adds no required one)
                u.union_by_name(pa.schema([f.with_nullable(True) for f in extra]))

    def alter(self, name: str, at: float, rename: dict[str, str] | None = None, drop: list[str] | None = None,
              required: dict[str, bool] | None = None) -> int:
        """Schema evolution without data: renames, drops, nullability (`required`: column -> required)."""
        with self.commit(name, at) as tx:
            with tx.update_schema(allow_incompatible_changes=bool(required)) as u:
                for old, new in (rename or {}).items():
                    u.rename_column(old, new)
                for c in drop or []:
                    u.delete_column(c)
                for c, req in (required or {}).items():
                    u.update_column(c, required=req)
        return self.vid
