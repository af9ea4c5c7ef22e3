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


def _record_durability(monkeypatch) -> list[tuple[str, str]]:
    """Record, in order, the real fsyncs, syncfs calls and metadata-file publications of the materializer."""
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
    return events


def _commit_nowhere(cat, i: int) -> None:
    """One commit adding file f<i> (one row, id = i) to TABLE; its path names no real file."""
    with cat.transaction(author="t") as t:
        t.add(f"{TABLE}/f{i}", {"obj_type": "file", "path": f"/nowhere/f{i}.parquet", "format": "parquet",
                                "row_count": 1, "size_bytes": 10, "columns": {"id": {"min": i, "max": i}}},
              leaf=True)


def test_files_are_durable_before_a_metadata_file_names_them(tmp_path, monkeypatch):
    """Crash safety: every manifest and manifest list a metadata file names is made durable before
    that metadata file is published, and the metadata file itself before an answer names it: many
    files (a first load of 100 snapshots) by one syncfs of their filesystem, a few (the next
    commit) by an fsync each; then their directory. The real calls, recorded in order. On the old
    code nothing was fsynced at all (the files stayed in the page cache: a crash of the machine
    could lose a manifest list a served metadata file names)."""
    events = _record_durability(monkeypatch)
    cat = cc.Catalog.open(str(tmp_path / "d"))
    try:
        _table(cat, False)

        for i in range(100):
            _commit_nowhere(cat, i)
        m = Materializer(cat, str(tmp_path / "ice"))
        seen: set[str] = set()
        for step in ("first load", "one more commit"):
            if step == "one more commit":
                _commit_nowhere(cat, 100)
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


# ---------------------------------------------------------------- materialized at commit time

def _ice_files(root) -> dict[str, bytes]:
    out = {}
    for d, _dirs, files in os.walk(root):
        for f in files:
            if f.endswith(".avro"):
                with open(os.path.join(d, f), "rb") as fh:
                    out[os.path.join(d, f)] = fh.read()
    return out


def _forget_process_states():
    """What a restarted process knows: nothing in memory (the journal and the files stay)."""
    from catalog_core.iceberg import materialize as mat

    mat._COMMIT_MATERIALIZERS.clear()
    mat._SHARED.clear()


def _count_walk(monkeypatch) -> list[int]:
    """Count the commits a materializer processes (a walk of the history processes every one)."""
    from catalog_core.iceberg import materialize as mat

    seen: list[int] = []
    real = mat.Materializer._commit

    def counting(self, st, value, kind, c, live):
        seen.append(c.vid)
        return real(self, st, value, kind, c, live)

    monkeypatch.setattr(mat.Materializer, "_commit", counting)
    return seen


@pytest.mark.parametrize("partitioned", [False, True])
def test_commit_time_files_are_the_bulk_walks_bytes_and_a_first_load_walks_nothing(tmp_path, monkeypatch, partitioned):
    """Each commit writes its snapshot's manifest and manifest list (under the server's default
    root, `<warehouse>/_iceberg`) and journals the table's state: the files are byte for byte what
    the walk of the whole history writes for the same history (appends, deletes, overwrites, merges
    at min-count 3), and a restarted process's first load processes no commit and writes nothing.
    On the old code a commit wrote no Iceberg file."""
    from catalog_core.iceberg import oncommit

    cat = cc.Catalog.open(str(tmp_path / "data"))
    try:
        _table(cat, partitioned, {"commit.manifest.min-count-to-merge": "3"})
        expect = _history(cat, str(tmp_path), partitioned, 40)
        root = os.path.join(cat.warehouse, "_iceberg")
        at_commit = _ice_files(root)
        assert len(at_commit) >= 80, len(at_commit)   # a list and a manifest (or a merge) per snapshot
        _forget_process_states()
        walked = _count_walk(monkeypatch)
        m = Materializer(cat, root)
        view = m.load("acme.core.t")
        assert walked == [] and m._states[TABLE].written["files"] == 0
        assert {int(s.summary["semcat.vid"]) for s in view.metadata.snapshots} == set(expect)
        table = StaticTable.from_metadata(view.metadata_location)
        assert {t.file.file_path for t in table.scan().plan_files()} == expect[max(expect)]
        text = open(view.metadata_location).read()
        # the bulk walk of the same history, into the same root, with nothing from commit time
        import shutil

        shutil.rmtree(root)
        _forget_process_states()
        monkeypatch.setattr(oncommit, "ENABLED", False)
        bulk = Materializer(cat, root)
        bview = bulk.load("acme.core.t")
        assert len(walked) == len(expect) + 1   # the walk: every commit since the table was created
        assert _ice_files(root) == at_commit
        assert bview.metadata_location == view.metadata_location and open(bview.metadata_location).read() == text
    finally:
        cat.close()


def test_commit_time_steps_continue_a_walked_history_and_a_lost_file_is_recreated(tmp_path, monkeypatch):
    """A history committed before commit-time materialization (the hook off) is walked by the first
    load, which journals the state; later commits continue from it (one commit processed each) and
    a restarted process's load processes none. A manifest list lost and a manifest torn by a crash
    (files written at commit time are not fsynced) are re-created from the history by the next load."""
    from catalog_core.iceberg import oncommit

    cat = cc.Catalog.open(str(tmp_path / "data"))
    root = os.path.join(cat.warehouse, "_iceberg")
    try:
        monkeypatch.setattr(oncommit, "ENABLED", False)
        _table(cat, False, {"commit.manifest.min-count-to-merge": "3"})
        _history(cat, str(tmp_path), False, 12)
        assert not os.path.exists(root)
        monkeypatch.setattr(oncommit, "ENABLED", True)
        walked = _count_walk(monkeypatch)
        with cat.transaction(author="t") as t:   # the hook finds no state: left to the first load
            t.add(f"{TABLE}/late0", _file(str(tmp_path), 900, 1)[1], leaf=True)
        assert walked == []
        first = Materializer(cat, root, shared=True).load("acme.core.t")
        assert len(walked) == 14   # the table's creation and 13 commits
        del walked[:]
        for i in (1, 2):
            with cat.transaction(author="t") as t:
                t.add(f"{TABLE}/late{i}", _file(str(tmp_path), 900 + i, 1)[1], leaf=True)
        assert walked == [cat.latest_vid - 1, cat.latest_vid]
        del walked[:]
        _forget_process_states()
        view = Materializer(cat, root).load("acme.core.t")
        assert walked == [] and len(view.metadata.snapshots) == len(first.metadata.snapshots) + 2
        text = open(view.metadata_location).read()
        # a crash lost a manifest list and tore a manifest
        lists = [s.manifest_list for s in view.metadata.snapshots]
        mfs = [mf.manifest_path for mf in read_manifest_list(PyArrowFileIO().new_input(lists[-1]))]
        os.remove(lists[3])
        with open(mfs[0], "r+b") as f:
            f.truncate(10)
        _forget_process_states()
        os.remove(view.metadata_location)
        again = Materializer(cat, root).load("acme.core.t")
        assert walked, "the history re-creates what the journal names but the disk lost"
        assert os.path.getsize(lists[3]) > 0 and os.path.getsize(mfs[0]) > 10
        assert open(again.metadata_location).read() == text
        planned = {t.file.file_path for t in StaticTable.from_metadata(again.metadata_location).scan().plan_files()}
        assert planned == {o.value["path"] for o in cat.plan_files("acme.core.t")}
    finally:
        cat.close()


def test_a_failing_commit_time_step_never_fails_the_commit(tmp_path, monkeypatch, caplog):
    """Materializing at commit time fails (here: every step raises): the commit stands, the error is
    logged once, and the load walks the history as before."""
    from catalog_core.iceberg import materialize as mat

    def broken(self, tpath, vid):
        raise OSError("disk full")

    monkeypatch.setattr(mat.Materializer, "commit_step", broken)
    cat = cc.Catalog.open(str(tmp_path / "data"))
    try:
        _table(cat, False)
        with caplog.at_level("WARNING", logger="semcat.engine"):
            for i in range(3):
                with cat.transaction(author="t") as t:
                    t.add(f"{TABLE}/f{i}", _file(str(tmp_path), i, 1)[1], leaf=True)
        assert cat.get(f"{TABLE}/f2") is not None
        assert sum("disk full" in r.getMessage() for r in caplog.records) == 1
        monkeypatch.undo()
        _forget_process_states()
        view = Materializer(cat, os.path.join(cat.warehouse, "_iceberg")).load("acme.core.t")
        assert len(view.metadata.snapshots) == 3
    finally:
        cat.close()


def test_commit_time_files_are_durable_before_a_metadata_file_names_them(tmp_path, monkeypatch):
    """A commit writes its manifest and manifest list without fsync (its acknowledgement does not
    wait for them); the load that first names them in a metadata file makes them durable first:
    few files an fsync each, many one syncfs. The real calls, recorded in order."""
    events = _record_durability(monkeypatch)
    cat = cc.Catalog.open(str(tmp_path / "d"))
    root = os.path.join(cat.warehouse, "_iceberg")
    try:
        _table(cat, False)

        for i in range(100):
            _commit_nowhere(cat, i)
        assert events == [] and len(_ice_files(root)) >= 200   # written at commit time, nothing synced
        m = Materializer(cat, root, shared=True)   # the server's (shares the commit hook's state)
        for step in ("first load", "one more commit"):
            if step == "one more commit":
                _commit_nowhere(cat, 100)
                assert events == [], events
            view = m.load("acme.core.t")
            mine, events[:] = list(events), []
            at = mine.index(("publish", view.metadata_location))
            before = mine[:at]
            mdir = os.path.dirname(view.metadata_location)
            named = {s.manifest_list for s in view.metadata.snapshots}
            for lst in list(named):
                named |= {mf.manifest_path for mf in read_manifest_list(PyArrowFileIO().new_input(lst))}
            if step == "first load":
                assert ("syncfs", mdir) in before, before[:5]
            else:
                synced = {p for kind, p in before if kind == "fsync"}
                new = {view.metadata.snapshots[-1].manifest_list}
                new |= {mf.manifest_path for mf in read_manifest_list(PyArrowFileIO().new_input(min(new)))
                        if mf.added_snapshot_id == view.metadata.snapshots[-1].snapshot_id}
                assert new <= synced, (new, before)
            assert ("fsync", mdir) in before, (step, mine)
    finally:
        cat.close()


def test_a_cloned_or_recreated_table_is_materialized_at_commit_time_as_the_walk_does(tmp_path, monkeypatch):
    """A clone (its files shared as leaf references, in the commit that creates the table) and a
    table dropped and created again at the same path: what a restarted process's first load
    serves (from the journal, no walk) is what a walk of the history serves."""
    from catalog_core.iceberg import oncommit

    cat = cc.Catalog.open(str(tmp_path / "data"))
    root = os.path.join(cat.warehouse, "_iceberg")
    try:
        _table(cat, True)
        _history(cat, str(tmp_path), True, 6)
        cat.clone(TABLE, "/acme/core/t2")
        with cat.transaction(author="t") as t:
            t.add("/acme/core/t2/d=2024-01-01/g1", _file(str(tmp_path), 501, 1)[1], leaf=True)
        with cat.transaction(author="t") as t:
            t.remove(TABLE)
        with cat.transaction(author="t") as t:
            t.add(TABLE, {"obj_type": "table", "format": "parquet", "schema": SCHEMA, "stats": {}, "partition_by": [],
                          "properties": {}})
        with cat.transaction(author="t") as t:
            t.add(f"{TABLE}/g2", _file(str(tmp_path), 502, 2)[1], leaf=True)
        texts = {}
        for name in ("acme.core.t", "acme.core.t2"):
            _forget_process_states()
            walked = _count_walk(monkeypatch)
            texts[name] = open(Materializer(cat, root).load(name).metadata_location).read()
            assert walked == [], name
            monkeypatch.undo()
        import shutil

        shutil.rmtree(root)
        _forget_process_states()
        monkeypatch.setattr(oncommit, "ENABLED", False)
        walker = Materializer(cat, root)
        for name in ("acme.core.t", "acme.core.t2"):
            assert open(walker.load(name).metadata_location).read() == texts[name], name
    finally:
        cat.close()


def test_which_commits_materialize_a_table():
    """The hook's filter (no pyiceberg): a file leaf added, shared by a clone or removed under a
    table makes a step; a table created without files starts its journal only; annotations and
    stats merges do nothing. (A clone's leaf references once counted as no files: its journal
    started empty while the commit added files.)"""
    from catalog_core.iceberg.oncommit import tables_to_materialize
    from catalog_core.writeset import make_op

    table = {"obj_type": "table", "schema": SCHEMA, "partition_by": []}
    assert tables_to_materialize([make_op("add", "/a/b/t", table)], {}) == {"/a/b/t": False}
    assert tables_to_materialize([make_op("add", "/a/b/t", table), make_op("leafref", "/a/b/t/f", ref=("/a/b/u/f", 3))],
                                 {}) == {"/a/b/t": True}
    assert tables_to_materialize([make_op("add", "/a/b/t/f", {"obj_type": "file", "path": "/x"}, leaf=True)], {}) == {
        "/a/b/t": True}
    assert tables_to_materialize([make_op("remove", "/a/b/t/p=1")], {}) == {"/a/b/t": True}
    assert tables_to_materialize([make_op("add", "/a/b/t/_semantic/x", {"obj_type": "annotation"}, leaf=True),
                                  make_op("merge", "/a/b/t", {"stats": {"row_count": {"op": "+", "val": 1}}}),
                                  make_op("add", "/a/b", {"obj_type": "namespace"})], {}) == {}
    assert tables_to_materialize([], {"iceberg_rest": {"/a/b/t": {"snapshot_id": 7}}}) == {"/a/b/t": True}


@pytest.mark.parametrize("how", ["copied", "symlinked"])
def test_a_copied_or_relinked_lake_serves_what_a_walk_there_serves(tmp_path, monkeypatch, how):
    """A lake (a marked lake root: its catalog stores file paths relative) whose history was
    materialized at commit time, then copied whole (`cp -a`: its journal and manifests come along)
    or opened through a symlink: its first load there serves what a walk of the history there
    serves, and the manifests name the files as that catalog hands them out (the copy's, never the
    original's); later commits there continue at commit time. On the old code the load replayed
    the original's journal and named the original's files: pyiceberg's delete of one of them was
    refused ("removes <file>, which the catalog does not hold")."""
    import shutil

    from catalog_core.iceberg import oncommit

    lake_dir = tmp_path / "lake"
    cc.mark_lake_root(str(lake_dir))
    files = lake_dir / "warehouse" / "acme"
    files.mkdir(parents=True)
    cat = cc.Catalog.open(str(lake_dir / "enriched"))
    try:
        _table(cat, True, {"commit.manifest.min-count-to-merge": "3"})
        _history(cat, str(files), True, 12)
        assert os.listdir(os.path.join(cat.warehouse, "_iceberg", "_journal"))   # materialized at commit time
    finally:
        cat.close()
    _forget_process_states()
    if how == "copied":
        there = tmp_path / "copy"
        shutil.copytree(lake_dir, there, symlinks=True)
    else:
        there = tmp_path / "link"
        os.symlink(lake_dir, there)
    cat = cc.Catalog.open(str(there / "enriched"))
    try:
        root = os.path.join(cat.warehouse, "_iceberg")
        held = {o.value["path"] for o in cat.plan_files("acme.core.t")}
        assert held and all(p.startswith(str(there) + "/") for p in held)
        view = Materializer(cat, root).load("acme.core.t")
        text = open(view.metadata_location).read()
        table = StaticTable.from_metadata(view.metadata_location)
        assert {t.file.file_path for t in table.scan().plan_files()} == held
        for snap in table.snapshots():   # every snapshot's manifests name files as this catalog spells them
            for t in table.scan(snapshot_id=snap.snapshot_id).plan_files():
                assert t.file.file_path.startswith(str(there) + "/"), t.file.file_path
        # a commit there continues from the state that load journaled: a restarted load walks nothing
        with cat.transaction(author="t") as t:
            t.add(f"{TABLE}/d=2024-01-01/late", _file(str(files), 900, 1)[1], leaf=True)
        _forget_process_states()
        walked = _count_walk(monkeypatch)
        after = Materializer(cat, root).load("acme.core.t")
        assert walked == [] and len(after.metadata.snapshots) == len(view.metadata.snapshots) + 1
        after_text = open(after.metadata_location).read()
        monkeypatch.undo()
        # the walk of the whole history there, nothing from commit time
        shutil.rmtree(root)
        _forget_process_states()
        monkeypatch.setattr(oncommit, "ENABLED", False)
        walker = Materializer(cat, root)
        assert open(walker.load("acme.core.t", vid=view.table_vid).metadata_location).read() == text
        assert open(walker.load("acme.core.t").metadata_location).read() == after_text
    finally:
        cat.close()


def test_a_relocated_catalog_serves_the_files_where_they_are_now(tmp_path, monkeypatch):
    """Files outside the warehouse (stored absolute) moved, and the catalog re-pointed
    (`Catalog.relocate(old, new)`: no commit, every stored version): the first load after it names
    the files where they are now, as a walk of the history does. On the old code it replayed the
    journal written at commit time, whose manifests named the old paths."""
    import shutil

    from catalog_core.iceberg import oncommit

    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    cat = cc.Catalog.open(str(tmp_path / "data"))
    root = os.path.join(cat.warehouse, "_iceberg")
    try:
        _table(cat, False, {"commit.manifest.min-count-to-merge": "3"})
        _history(cat, str(old), False, 8)
        Materializer(cat, root, shared=True).load("acme.core.t")   # a state in this process too
        os.rename(old, new)
        assert cat.relocate(str(old), str(new)) > 0
        held = {o.value["path"] for o in cat.plan_files("acme.core.t")}
        assert held and all(p.startswith(str(new) + "/") for p in held)
        view = Materializer(cat, root, shared=True).load("acme.core.t")
        assert {t.file.file_path for t in StaticTable.from_metadata(view.metadata_location).scan().plan_files()} == held
        text = open(view.metadata_location).read()
        shutil.rmtree(root)
        _forget_process_states()
        monkeypatch.setattr(oncommit, "ENABLED", False)
        assert open(Materializer(cat, root).load("acme.core.t").metadata_location).read() == text
    finally:
        cat.close()


def test_a_copied_data_directory_serves_iceberg_metadata_of_its_own_files_only(tmp_path, monkeypatch):
    """`cp -a` of a data directory whose table was materialized at commit time: its journal and Iceberg
    files came along, naming the original's paths (Iceberg's manifests and lists hold absolute paths).
    The copy's commit-time step and first load do not continue that state: the history re-creates it
    under the copy's root, so everything the copy serves (metadata file, manifest lists, manifests,
    data files) is the copy's, and its own journal then serves a restarted process without a walk.
    Before the journal's view, the copy served the original's manifests and data files (the trap generator's
    `--isolation copy`: a pyiceberg overwrite in the copy removed the original's file paths, which the
    copy's catalog does not hold, "out of sync", and its truth differed from the mounted run's)."""
    import shutil

    def add(cat, i):
        with cat.transaction(author="t") as t:
            t.add(_leaf(True, i, 1), _file(os.path.join(cat.warehouse, "files"), i, 1)[1], leaf=True)

    cat = cc.Catalog.open(str(tmp_path / "a" / "data"))
    try:
        os.makedirs(os.path.join(cat.warehouse, "files"))
        _table(cat, True, {"commit.manifest.min-count-to-merge": "3"})
        _history(cat, os.path.join(cat.warehouse, "files"), True, 12)   # inside the warehouse: stored relative
        Materializer(cat, os.path.join(cat.warehouse, "_iceberg"), shared=True).load("acme.core.t")
    finally:
        cat.close()
    _forget_process_states()
    shutil.copytree(tmp_path / "a", tmp_path / "b", symlinks=True)
    here = str(tmp_path / "b") + os.sep
    cat = cc.Catalog.open(str(tmp_path / "b" / "data"))
    try:
        root = os.path.join(cat.warehouse, "_iceberg")
        add(cat, 700)   # a commit in the copy before any load (the commit hook meets the original's journal)
        view = Materializer(cat, root, shared=True).load("acme.core.t")   # as the REST server loads
        lists = [s.manifest_list for s in view.metadata.snapshots]
        manifests = {mf.manifest_path for x in lists for mf in read_manifest_list(PyArrowFileIO().new_input(x))}
        planned = {t.file.file_path for t in StaticTable.from_metadata(view.metadata_location).scan().plan_files()}
        assert planned == {o.value["path"] for o in cat.plan_files("acme.core.t")}
        named = [view.metadata_location, *lists, *manifests, *planned]
        assert [p for p in named if not p.startswith(here)] == []
        # the copy's own journal: later commits continue it, a restarted process walks nothing
        add(cat, 701)
        _forget_process_states()
        walked = _count_walk(monkeypatch)
        again = Materializer(cat, root).load("acme.core.t")
        assert walked == [] and len(again.metadata.snapshots) == len(view.metadata.snapshots) + 1
        planned = {t.file.file_path for t in StaticTable.from_metadata(again.metadata_location).scan().plan_files()}
        assert planned == {o.value["path"] for o in cat.plan_files("acme.core.t")} and all(
            p.startswith(here) for p in planned)
    finally:
        cat.close()
