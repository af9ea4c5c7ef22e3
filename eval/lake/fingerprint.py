"""A fingerprint of a built eval world (`semcat eval build`), to tell whether two builds built the same
thing: `python -m eval.lake.fingerprint DIR [--against OTHER] [--out FILE]`.

What an agent can observe, per history (enriched, stale), with what is random or wall-clock in a build
taken out: every commit (vid, time, author, message, meta) and every object it added, updated or removed
(tables, partitions, files, annotations; their values whole); per table at each vid that changed it,
its schema, row count and a hash of its rows; the snapshots (names and vids); and the build's
stale_manifest.json and lake.json (without its timings).

Random or wall-clock in a build, and replaced: a write id (`20261202T115042-342ef537e35d`, the UTC time
of the write plus 48 random bits) names a write's files and appears in commit metadata: each file's name
becomes the hash of its rows (`f:<16 hex>`, in its path, its object id and in its value's `path`), each
write id `w<k>` (k: the order it first appears in the history); Spark's application id (`local-<ms>`)
`local-app`; the lake's directory is cut from paths;
a snapshot's time (the wall clock of `snapshot()`) is dropped. A file's rows are hashed in their order
in the file (its row groups read with pyarrow: values, not bytes), so two files with the same rows in the
same order hash alike; whether the bytes are identical too is counted separately (`bytes_identical`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from typing import Any

__all__ = ["fingerprint", "compare", "main"]

WRITE_ID = re.compile(r"\d{8}T\d{6}-[0-9a-f]{12}")
APP_ID = re.compile(r"\blocal-\d{10,}\b")  # Spark's application id (local mode): the wall clock at its start
FILE_NAME = re.compile(r"\d{8}T\d{6}-[0-9a-f]{12}-\d{5}(?:\.[a-z0-9]+)*\.parquet")
HISTORIES = ("enriched", "stale")
TIMINGS = ("build_seconds", "steps", "seconds")


def _rows_hash(path: str) -> tuple[str, int, str]:
    """(hash of the file's schema and rows in order, row count, hash of its bytes)."""
    import pyarrow.parquet as pq

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        raw = hashlib.sha256(fh.read()).hexdigest()
    pf = pq.ParquetFile(path)
    h.update(pf.schema_arrow.to_string(show_field_metadata=False, show_schema_metadata=False).encode())
    n = 0
    for i in range(pf.num_row_groups):
        t = pf.read_row_group(i)
        n += t.num_rows
        for col in t.column_names:
            h.update(col.encode())
            h.update(repr(t.column(col).to_pylist()).encode())
    return h.hexdigest()[:16], n, raw[:16]


class _Norm:
    """Replaces file names, write ids and the lake's directory in everything it is given."""

    def __init__(self, root: str, files: dict[str, str]):
        self.root = os.path.abspath(root).rstrip("/") + "/"
        self.files = files  # file name -> f:<rows hash>
        self.writes: dict[str, str] = {}

    def text(self, s: str) -> str:
        s = s.replace(self.root, "")
        s = FILE_NAME.sub(lambda m: self.files.get(m.group(0), "f:?" + m.group(0)), s)
        s = APP_ID.sub("local-app", s)
        return WRITE_ID.sub(lambda m: self.writes.setdefault(m.group(0), f"w{len(self.writes)}"), s)

    def value(self, v: Any) -> Any:
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, dict):
            return {self.text(k): self.value(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [self.value(x) for x in v]
        return v


def _files(root: str) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Every Parquet file under DIR/warehouse: name -> f:<rows hash>, and its directory and name (the
    rows hash) -> the hash of its bytes."""
    files: dict[str, str] = {}
    raw: dict[str, list[str]] = {}
    wh = os.path.join(root, "warehouse")
    for d, _dirs, names in os.walk(wh):
        for n in names:
            if n.endswith(".parquet") and "/_" not in d[len(wh):]:
                rows, _count, b = _rows_hash(os.path.join(d, n))
                files[n] = f"f:{rows}"
                raw.setdefault(f"{os.path.relpath(d, wh)}/f:{rows}", []).append(b)
    return files, {k: sorted(v) for k, v in raw.items()}


def _history(cat: Any, norm: _Norm) -> dict[str, Any]:
    commits = []
    tables: dict[str, list[Any]] = {}
    for c in cat.commits(since=None):
        changes = []
        for ch in (cat.diff(c.vid - 1, c.vid) if c.vid > 0 else []):
            changes.append([norm.text(ch.path), ch.kind, ch.leaf, norm.value(ch.after if ch.kind != "removed" else None)])
        changes.sort(key=lambda x: (x[0], x[1]))
        commits.append({"vid": c.vid, "time": c.time, "author": c.author, "message": norm.text(c.message),
                        "meta": norm.value(c.meta), "changes": changes})
        touched = set()
        for ch in changes:
            parts = ch[0].strip("/").split("/")
            if len(parts) >= 3 and not parts[2].startswith("_") and (len(parts) == 3 or not parts[3].startswith("_")):
                touched.add(".".join(parts[:3]))
        for name in sorted(touched):
            obj = cat.get("/" + name.replace(".", "/"), c.vid)
            if obj is None or obj.value.get("obj_type") != "table":
                state = None
            else:
                planned = cat.plan_files(name, vid=c.vid)
                fs = sorted(norm.text(f.value["path"]).rsplit("/", 1)[-1] for f in planned)
                state = {"schema": norm.value(obj.value.get("schema")),
                         "rows": sum(int(f.value.get("row_count") or 0) for f in planned),
                         "content": hashlib.sha256("\n".join(fs).encode()).hexdigest()[:16]}
            hist = tables.setdefault(name, [])
            if not hist or hist[-1][1] != state:
                hist.append([c.vid, state])
    snaps = sorted([s.name, s.vid] for s in cat.snapshots())
    return {"commits": commits, "tables": tables, "snapshots": snaps, "latest_vid": cat.latest_vid}


def fingerprint(root: str) -> dict[str, Any]:
    """The fingerprint of the world built in `root` (module docstring)."""
    import catalog_core as cc

    files, raw = _files(root)
    out: dict[str, Any] = {"files": len(files), "file_bytes": raw}
    for h in HISTORIES:
        norm = _Norm(root, files)
        cat = cc.Catalog.open(os.path.join(root, h))
        try:
            out[h] = _history(cat, norm)
        finally:
            cat.close()
    norm = _Norm(root, files)
    for key, name in (("manifest", "stale_manifest.json"), ("lake", "lake.json")):
        path = os.path.join(root, name)
        if os.path.exists(path):
            with open(path) as fh:
                out[key] = norm.value(_drop(json.load(fh)))
    return out


def _drop(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _drop(x) for k, x in v.items() if k not in TIMINGS}
    return v


def _flat(v: Any, prefix: str = "") -> dict[str, str]:
    """Leaf paths of a nested fingerprint -> their canonical JSON (for a readable difference)."""
    if isinstance(v, dict):
        out: dict[str, str] = {}
        for k, x in v.items():
            out.update(_flat(x, f"{prefix}/{k}"))
        return out
    if isinstance(v, list) and v and all(isinstance(x, dict) and "vid" in x for x in v):
        out = {}
        for x in v:
            out.update(_flat(x, f"{prefix}/vid={x['vid']}"))
        return out
    return {prefix: json.dumps(v, sort_keys=True, default=str)}


def compare(a: dict[str, Any], b: dict[str, Any], limit: int = 20) -> list[str]:
    """The differences between two fingerprints (at most `limit` of them shown), empty if none."""
    fa, fb = _flat(a), _flat(b)
    diffs = []
    for k in sorted(set(fa) | set(fb)):
        if fa.get(k) != fb.get(k):
            diffs.append(f"{k}: {str(fa.get(k))[:300]} != {str(fb.get(k))[:300]}")
    return diffs[:limit] + ([f"... {len(diffs) - limit} more"] if len(diffs) > limit else [])


def digest(fp: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(fp, sort_keys=True, default=str).encode()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.lake.fingerprint", description=__doc__.split("\n\n")[0])
    p.add_argument("dir", help="a world built by `semcat eval build`")
    p.add_argument("--against", help="a second world, or a fingerprint JSON written by --out")
    p.add_argument("--out", help="write the fingerprint here (JSON)")
    args = p.parse_args(argv)
    fp = fingerprint(args.dir)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(fp, fh, sort_keys=True, default=str)
    summary = {h: {"commits": len(fp[h]["commits"]), "tables": len(fp[h]["tables"]),
                   "table_versions": sum(len(v) for v in fp[h]["tables"].values())} for h in HISTORIES}
    print(json.dumps({"digest": digest(fp), "files": fp["files"], **summary}))
    if not args.against:
        return 0
    if os.path.isdir(args.against):
        other = fingerprint(args.against)
    else:
        with open(args.against) as fh:
            other = json.load(fh)
    diffs = compare(other, fp)
    print("identical" if not diffs else "\n".join(diffs))
    return 0 if not diffs else 1


if __name__ == "__main__":
    sys.exit(main())
