"""A plain tree for the diff and publish benchmarks: /b/ns/t with partitions of file leaves."""

from __future__ import annotations

import time

import catalog_core as cc

PARTS = 1000


def load_tree(data_dir: str, n_objects: int, batch: int = 50_000) -> tuple[cc.Catalog, float]:
    """(catalog, load seconds) of a tree with about `n_objects` objects: 1,000 partitions of
    file leaves under one table."""
    cat = cc.Catalog.open(data_dir)
    per_part = max(1, n_objects // PARTS - 1)
    t0 = time.perf_counter()
    with cat.transaction(author="bench", message="create") as t:
        t.add("/b", {"obj_type": "catalog", "properties": {}})
        t.add("/b/ns", {"obj_type": "namespace", "properties": {}})
        t.add("/b/ns/t", {"obj_type": "table", "partition_by": ["p"], "stats": {"row_count": 0, "file_count": 0}})
    txn, n = cat.transaction(author="bench", message="load"), 0
    for p in range(PARTS):
        part = f"/b/ns/t/p={p:04d}"
        txn.add(part, {"obj_type": "partition", "p": p, "stats": {"row_count": 0, "file_count": 0}})
        for f in range(per_part):
            txn.add(f"{part}/f{f:05d}", {"obj_type": "file", "path": f"p={p:04d}/f{f:05d}.parquet",
                                         "row_count": 100, "size_bytes": 4096,
                                         "columns": {"x": {"min": 0, "max": 99, "null_count": 0}}}, leaf=True)
            n += 1
            if n % batch == 0:
                txn.commit()
                txn = cat.transaction(author="bench", message="load")
    txn.commit()
    return cat, time.perf_counter() - t0


def change(cat: cc.Catalog, root: str, n: int, tag: str) -> int:
    """One commit that changes `n` objects under `root`'s table: new file leaves spread over the
    partitions, plus the table's stats. Returns the vid."""
    with cat.transaction(author="bench", message=f"{n} changes") as t:
        for i in range(n - 1):
            t.add(f"{root}/t/p={i % PARTS:04d}/{tag}-{i:05d}",
                  {"obj_type": "file", "path": f"{tag}-{i}.parquet", "row_count": 1, "size_bytes": 10}, leaf=True)
        t.merge(f"{root}/t", {"stats": {"row_count": {"op": "+", "val": n - 1},
                                        "file_count": {"op": "+", "val": n - 1}}})
    return t.vid  # type: ignore[return-value]
