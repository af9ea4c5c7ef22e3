"""Iceberg metadata materialized from a long history (catalog_core/iceberg/materialize.py): manifests
shared across snapshots and merged by levels (`commit.manifest.min-count-to-merge`), written as bytes
by avro_out. pyiceberg reads every snapshot back and sees exactly the files and rows live at its vid;
the manifest-list entries and manifest entries of n snapshots grow linearly in n (counted, not timed)."""

from __future__ import annotations

import io
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.avro.encoder import BinaryEncoder
from pyiceberg.avro.resolver import resolve_writer
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import (
    DEFAULT_READ_VERSION,
    ManifestEntry,
    ManifestEntryStatus,
    data_file_with_partition,
    manifest_entry_schema_with_data_file,
    read_manifest_list,
)
from pyiceberg.table import StaticTable

import catalog_core as cc
from catalog_core.iceberg import avro_out, export
from catalog_core.iceberg.materialize import Materializer

TABLE = "/acme/core/t"
SCHEMA = {"columns": [{"name": "id", "type": "bigint", "id": 1}, {"name": "d", "type": "date", "id": 2},
                      {"name": "name", "type": "string", "id": 3}]}


def _table(cat, partitioned: bool, props: dict[str, str] | None = None) -> None:
    with cat.transaction(author="t") as t:
        t.add("/acme", {"obj_type": "catalog", "properties": {}})
        t.add("/acme/core", {"obj_type": "namespace", "properties": {}})
        t.add(TABLE, {"obj_type": "table", "format": "parquet", "schema": SCHEMA, "stats": {},
                      "partition_by": ["d"] if partitioned else [],
                      "properties": {"iceberg": {"properties": props or {}}}})


def _file(tmp, i: int, day: int) -> tuple[str, dict]:
    path = os.path.join(tmp, f"f{i}.parquet")
    if not os.path.exists(path):
        pq.write_table(pa.table({"id": pa.array([i, i + 1000], pa.int64()),
                                 "d": pa.array([f"2024-01-{day:02d}"] * 2).cast(pa.date32()),
                                 "name": pa.array([f"n{i}", None])}), path)
    return path, {"obj_type": "file", "path": path, "format": "parquet", "row_count": 2,
                  "size_bytes": os.path.getsize(path),
                  "columns": {"id": {"min": i, "max": i + 1000, "null_count": 0},
                              "d": {"min": f"2024-01-{day:02d}", "max": f"2024-01-{day:02d}", "null_count": 0},
                              "name": {"min": f"n{i}", "max": f"n{i}", "null_count": 1}}}


def _leaf(partitioned: bool, i: int, day: int) -> str:
    return f"{TABLE}/d=2024-01-{day:02d}/f{i}" if partitioned else f"{TABLE}/f{i}"


def _history(cat, tmp, partitioned: bool, n: int) -> dict[int, set[str]]:
    """n commits: appends of one or two files, every 5th a delete, every 7th an overwrite (a file
    out, two in); vid -> the data file paths live after it."""
    live: dict[str, str] = {}        # leaf -> data file path
    out: dict[int, set[str]] = {}
    made = 0
    for k in range(n):
        with cat.transaction(author="t") as t:
            if k % 5 == 4 and live:
                victim = sorted(live)[k % len(live)]
                t.remove(victim)
                del live[victim]
            else:
                if k % 7 == 6 and live:
                    victim = sorted(live)[(3 * k) % len(live)]
                    t.remove(victim)
                    del live[victim]
                for _ in range(1 + (k % 3 == 0)):
                    day = 1 + made % 4
                    if partitioned:
                        part = f"{TABLE}/d=2024-01-{day:02d}"
                        if t.get(part) is None:
                            t.add(part, {"obj_type": "partition", "d": f"2024-01-{day:02d}", "stats": {}})
                    path, val = _file(tmp, made, day)
                    leaf = _leaf(partitioned, made, day)
                    t.add(leaf, val, leaf=True)
                    live[leaf] = path
                    made += 1
        out[cat.latest_vid] = set(live.values())
    return out


@pytest.mark.parametrize("partitioned", [False, True])
def test_every_snapshot_scans_exactly_its_files_and_rows(tmp_path, partitioned):
    cat = cc.Catalog.open(str(tmp_path / "data"))
    try:
        _table(cat, partitioned, {"commit.manifest.min-count-to-merge": "3"})   # many merges in a short history
        expect = _history(cat, str(tmp_path), partitioned, 40)
        m = Materializer(cat, str(tmp_path / "ice"))
        view = m.load("acme.core.t")
        table = StaticTable.from_metadata(view.metadata_location)
        snaps = {int(s.summary["semcat.vid"]): s for s in table.snapshots()}
        assert set(snaps) == set(expect)
        levels = set()
        for vid, files in expect.items():
            sid = snaps[vid].snapshot_id
            planned = {t.file.file_path for t in table.scan(snapshot_id=sid).plan_files()}
            assert planned == files, vid
            ids = sorted(table.scan(snapshot_id=sid).to_arrow().column("id").to_pylist())
            assert ids == sorted(x for f in files for x in pq.read_table(f).column("id").to_pylist()), vid
            manifests = snaps[vid].manifests(table.io)
            # a file's entry keeps the snapshot and sequence number that added it, through merges
            for mf in manifests:
                for e in mf.fetch_manifest_entry(table.io):
                    assert e.sequence_number <= vid and e.snapshot_id in {s.snapshot_id for s in snaps.values()}
                    assert (e.status == ManifestEntryStatus.ADDED) == (e.snapshot_id == mf.added_snapshot_id)
            levels.add(len(manifests))
        assert max(levels) <= 2 * 4 + 1      # fewer than min-count manifests a level
        # a pruned scan: the partition summaries and bounds written by avro_out are read by pyiceberg
        last = table.scan(row_filter="id >= 30 and id < 32")
        assert {t.file.file_path for t in last.plan_files()} <= expect[max(expect)]
        assert set(last.to_arrow().column("id").to_pylist()) <= {30, 31}
        # the same history materialized again (a restarted server) writes nothing and names the same lists
        again = Materializer(cat, str(tmp_path / "ice"))
        v2 = again.load("acme.core.t")
        assert again._states[TABLE].written["files"] == 0
        assert [s.manifest_list for s in v2.metadata.snapshots] == [s.manifest_list for s in view.metadata.snapshots]
        # time travel as of an old vid: that snapshot is main, and scans as before
        mid = sorted(expect)[len(expect) // 2]
        old = StaticTable.from_metadata(m.load("acme.core.t", vid=mid).metadata_location)
        assert {t.file.file_path for t in old.scan().plan_files()} == expect[mid]
    finally:
        cat.close()


def _counts(view) -> tuple[int, int, int]:
    """(manifest-list entries over all snapshots, entries in all distinct manifests, bytes of both)."""
    io_ = PyArrowFileIO()
    list_entries, manifests = 0, {}
    size = 0
    for s in view.metadata.snapshots:
        mfs = list(read_manifest_list(io_.new_input(s.manifest_list)))
        list_entries += len(mfs)
        size += os.path.getsize(s.manifest_list)
        for mf in mfs:
            manifests[mf.manifest_path] = mf.added_files_count + mf.existing_files_count
    size += sum(os.path.getsize(p) for p in manifests)
    return list_entries, sum(manifests.values()), size


def test_manifest_entries_and_bytes_grow_linearly_with_the_history(tmp_path):
    """Each commit appends one file. Before manifests were merged, list k had k entries: 40 and
    160 snapshots held 820 and 12,880 list entries (x15.7); now 225 and 1,190, manifests 75 and 412
    entries, 0.28 and 1.18 MB."""
    got = {}
    for n in (40, 160):
        cat = cc.Catalog.open(str(tmp_path / f"d{n}"))
        try:
            _table(cat, False)
            for i in range(n):
                with cat.transaction(author="t") as t:
                    t.add(f"{TABLE}/f{i}", {"obj_type": "file", "path": f"/nowhere/f{i}.parquet", "format": "parquet",
                                            "row_count": 1, "size_bytes": 10, "columns": {"id": {"min": i, "max": i}}},
                          leaf=True)
            view = Materializer(cat, str(tmp_path / f"ice{n}")).load("acme.core.t")
            assert len(view.metadata.snapshots) == n
            got[n] = _counts(view)
        finally:
            cat.close()
    (l40, e40, b40), (l160, e160, b160) = got[40], got[160]
    # x4 the history: x4 the bytes, x4 times a level more (log8) the entries; never x16
    assert b160 / b40 < 5 and l160 / l40 < 6 and e160 / e40 < 6, got
    # per snapshot: fewer than min-count (8) manifests a level in a list, each file rewritten once a level
    assert l160 <= 160 * 7 * 3 and e160 <= 160 * 4, got


def test_avro_out_encodes_entries_as_pyiceberg_does(tmp_path):
    """A data file's entry bytes are pyiceberg's own encoding of the same entry."""
    schema = export.iceberg_schema(SCHEMA)
    spec = export.partition_spec(["d"], schema)
    _, val = _file(str(tmp_path), 7, 3)
    names = {"id": 1, "d": 2, "name": 3}
    df = export.data_file(val, schema, spec, ["2024-01-03"], names)
    fs = export.file_stats(val, schema, spec, ["2024-01-03"], names)
    kind = avro_out.ManifestKind(schema, spec)
    mine = avro_out.encode_data_file(kind, fs.path, fs.fmt, fs.partition, fs.rows, fs.size, fs.counts, fs.nulls,
                                     fs.lower, fs.upper)
    ptype = spec.partition_type(schema)
    writer = resolve_writer(
        record_schema=manifest_entry_schema_with_data_file(DEFAULT_READ_VERSION, data_file_with_partition(ptype, DEFAULT_READ_VERSION)),
        file_schema=manifest_entry_schema_with_data_file(2, data_file_with_partition(ptype, 2)))
    buf = io.BytesIO()
    writer.write(BinaryEncoder(buf), ManifestEntry.from_args(status=ManifestEntryStatus.EXISTING, snapshot_id=5,
                                                             sequence_number=6, file_sequence_number=6, data_file=df))
    assert b"\x00\x02\x0a\x02\x0c\x02\x0c" + mine == buf.getvalue()


def test_files_are_durable_before_a_metadata_file_names_them(tmp_path, monkeypatch):
    """Crash safety: every manifest and manifest list a metadata file names is made durable before
    that metadata file is published, and the metadata file itself before an answer names it: many
    files (a first load of 100 snapshots) by one syncfs of their filesystem, a few (the next
    commit) by an fsync each; then their directory. The real calls, recorded in order. On the old
    code nothing was fsynced at all (the files stayed in the page cache: a crash of the machine
    could lose a manifest list a served metadata file names)."""
    from catalog_core.iceberg import materialize as mat

    events: list[tuple[str, str]] = []
    real_fsync, real_syncfs, real_replace = mat._fsync_path, mat._syncfs, os.replace

    def fsync_path(path):
        real_fsync(path)
        events.append(("fsync", os.path.abspath(path)))

    def syncfs(path):
        done = real_syncfs(path)
        events.append(("syncfs" if done else "no-syncfs", os.path.abspath(path)))
        return done

    def replace(src, dst, *a, **k):
        real_replace(src, dst, *a, **k)
        if str(dst).endswith(".metadata.json"):
            events.append(("publish", os.path.abspath(dst)))

    monkeypatch.setattr(mat, "_fsync_path", fsync_path)
    monkeypatch.setattr(mat, "_syncfs", syncfs)
    monkeypatch.setattr(mat.os, "replace", replace)
    cat = cc.Catalog.open(str(tmp_path / "d"))
    try:
        _table(cat, False)

        def commit(i):
            with cat.transaction(author="t") as t:
                t.add(f"{TABLE}/f{i}", {"obj_type": "file", "path": f"/nowhere/f{i}.parquet", "format": "parquet",
                                        "row_count": 1, "size_bytes": 10, "columns": {"id": {"min": i, "max": i}}},
                      leaf=True)

        for i in range(100):
            commit(i)
        m = Materializer(cat, str(tmp_path / "ice"))
        seen: set[str] = set()
        for step in ("first load", "one more commit"):
            if step == "one more commit":
                commit(100)
            start = len(events)
            view = m.load("acme.core.t")
            mine = events[start:]
            assert ("publish", view.metadata_location) in mine, (step, mine)
            at = mine.index(("publish", view.metadata_location))
            before, after = mine[:at], mine[at + 1:]
            mdir = os.path.dirname(view.metadata_location)
            lists = {s.manifest_list for s in view.metadata.snapshots}
            named = set(lists)
            for lst in lists:
                named |= {mf.manifest_path for mf in read_manifest_list(PyArrowFileIO().new_input(lst))}
            new, seen = named - seen, named
            if step == "first load":
                assert len(new) > 100 and ("syncfs", mdir) in before, (step, before[:5])   # many files: one syncfs
            else:
                synced = {p for kind, p in before if kind == "fsync"}
                assert 0 < len(new) <= 3 and new <= synced, (step, new, before)
                assert not any(kind == "syncfs" for kind, _ in before), before
            assert ("fsync", mdir) in before and ("fsync", mdir) in after, (step, mine)
    finally:
        cat.close()
