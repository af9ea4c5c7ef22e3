"""Iceberg metadata materialized at commit time (docs/iceberg-rest.md, "A long history"): a
post-commit hook of the engine (`catalog_core._engine.hooks`), registered when `catalog_core` is
imported, so every committing process (the server, a Spark bridge driver, the CLI) writes the
manifest and manifest list of each snapshot it commits, as Iceberg's own writers do, and journals
the table's materializer state; a first REST load then only assembles the metadata file.

Light by design: a commit that changes no table's files costs a pass over its write ops; pyiceberg
(seconds to import) is imported only by a commit that adds or removes files of a table. A table
created without files gets its journal started here without it. `SEMCAT_ICEBERG_AT_COMMIT=0` turns
the hook off (the first load then walks the history, as before). Whatever fails here is logged
once by the engine and never fails the commit: the load re-creates from the history.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from catalog_core._engine import hooks
from catalog_core.iceberg import journal as jn

__all__ = ["after_commit", "after_relocate", "tables_to_materialize", "ENABLED"]

ENABLED = os.environ.get("SEMCAT_ICEBERG_AT_COMMIT", "1") not in ("0", "false", "no", "off")
_MATERIALIZE = "catalog_core.iceberg.materialize"


def tables_to_materialize(ops: list[Any], meta: dict[str, Any]) -> dict[str, bool]:
    """The tables (paths `/<catalog>/<namespace>/<table>`) a commit's ops touch that matter here:
    True for one whose file leaves it adds or removes (or whose Iceberg snapshot its meta names),
    False for one it creates without files. Annotations (`_semantic`) and stats merges do not count."""
    out: dict[str, bool] = {}
    for op in ops:
        p = op.path
        if p.count("/") < 3:
            continue
        parts = p.split("/", 4)
        tpath = "/" + parts[1] + "/" + parts[2] + "/" + parts[3]
        if len(parts) == 4:
            if op.kind == "add" and isinstance(op.value, dict) and op.value.get("obj_type") == "table":
                out.setdefault(tpath, False)
            continue
        if parts[4].startswith("_semantic"):
            continue
        if op.leaf or op.kind in ("remove", "leafref"):   # a file leaf added, shared by a clone, or removed
            out[tpath] = True
    rest = meta.get("iceberg_rest") if isinstance(meta, dict) else None
    if isinstance(rest, dict):
        for tpath in rest:
            if isinstance(tpath, str) and tpath.count("/") == 3:
                out[tpath] = True
    return out


def after_commit(cat: Any, vid: int, ops: list[Any], meta: dict[str, Any]) -> None:
    if not ENABLED or not isinstance(getattr(cat, "warehouse", None), str):
        return
    tables = tables_to_materialize(ops, meta)
    if not tables:
        return
    for tpath, files in tables.items():
        if files or _MATERIALIZE in sys.modules:
            from catalog_core.iceberg.materialize import Materializer

            m = Materializer.for_commits(cat)
            if m is not None:
                m.commit_step(tpath, vid)
        else:
            _start(cat, tpath, vid)


def _start(cat: Any, tpath: str, vid: int) -> None:
    """The journal of a table created at `vid` without files (an empty base, as the materializer
    would write it), without importing pyiceberg."""
    obj = cat.get(tpath, vid=vid)
    if obj is None or obj.value.get("obj_type") != "table" or (vid > 1 and cat.get(tpath, vid=vid - 1) is not None):
        return
    made = cat.commits(since=vid, until=vid)
    if not made or (made[0].meta or {}).get("iceberg_renamed"):
        return
    ms = int(made[0].time * 1000)
    root = os.path.join(cat.warehouse, "_iceberg")   # Materializer.for_commits' root
    jn.append(jn.journal_path(root, tpath), {
        "view": jn.view_of(root, cat.warehouse),
        "k": "base", "from": -1, "to": vid, "table_vid": vid, "last_time_ms": 0, "made": 0,
        "totals": {"records": 0, "files": 0, "size": 0}, "times": [[vid, ms]], "snaps": [], "mans": [],
        "ents": [], "live": None, "files": [], "kinds": [], "tpath": tpath, "created": vid,
        "uuid": jn.table_uuid(obj.value, tpath, vid)})


def after_relocate(cat: Any) -> None:
    """`Catalog.relocate` re-pointed stored paths: the journals (their records name the files as they
    were spelled) are removed and this process's states forgotten, so the next load walks the history
    and names the files where they are now."""
    if not isinstance(getattr(cat, "warehouse", None), str):
        return
    import shutil

    shutil.rmtree(os.path.join(cat.warehouse, "_iceberg", jn.JOURNAL_DIR), ignore_errors=True)
    mat = sys.modules.get(_MATERIALIZE)
    if mat is not None:
        mat.forget_catalog(cat)


hooks.register(after_commit)
hooks.register_relocate(after_relocate)
