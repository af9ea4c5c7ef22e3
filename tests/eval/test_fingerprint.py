"""eval.lake.fingerprint: two builds of the same world fingerprint alike although their write ids, file
names and Spark application ids differ; a changed row, commit message or annotation shows."""

from __future__ import annotations

import json
import os
import types

import pytest

from eval.lake.enterprise_spec import Sizes


def _world(root, app_id: str, seed: int = 7) -> None:
    """The scaled-down enterprise prehistory (eval.lake.enterprise) written into `root`: pyarrow files and
    bridge commits, no Spark job (the bridge only asks the session for its application id)."""
    import catalog_core as cc
    from eval.lake.enterprise import Enterprise

    os.makedirs(root)
    cc.mark_lake_root(str(root))
    spark = types.SimpleNamespace(sparkContext=types.SimpleNamespace(applicationId=app_id))
    cats = {h: cc.Catalog.open(os.path.join(root, h)) for h in ("enriched", "stale")}
    try:
        e = Enterprise(cats, spark, os.path.abspath(os.path.join(root, "warehouse")), seed,
                       sizes=Sizes(facts=1, dims=1, domains=1), log=lambda m: None, traps=False)
        e.prehistory()
    finally:
        for c in cats.values():
            c.close()
    with open(os.path.join(root, "stale_manifest.json"), "w") as fh:
        json.dump({"seed": seed, "stale": []}, fh)
    with open(os.path.join(root, "lake.json"), "w") as fh:
        json.dump({"seed": seed, "build_seconds": 12.5 if app_id.endswith("1") else 99.0}, fh)


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    base = tmp_path_factory.mktemp("fp")
    _world(base / "a", "local-1700000000001")
    _world(base / "b", "local-1700000000002")
    return base / "a", base / "b"


def test_two_builds_of_one_world_fingerprint_alike(worlds):
    from eval.lake.fingerprint import compare, digest, fingerprint

    a, b = worlds
    names = {p for r in (a, b) for _, _, fs in os.walk(r / "warehouse") for p in fs}
    assert len(names) == 2 * len({n for _, _, fs in os.walk(a / "warehouse") for n in fs})  # other file names
    fa, fb = fingerprint(str(a)), fingerprint(str(b))
    assert compare(fa, fb) == [] and digest(fa) == digest(fb)
    assert fa["files"] > 0 and fa["enriched"]["tables"] and fa["stale"]["commits"]
    versions = [v for t in fa["enriched"]["tables"].values() for v in t]
    assert all(s is None or (s["rows"] >= 0 and s["schema"]["columns"]) for _, s in versions)


def test_a_changed_row_message_or_annotation_shows(worlds, tmp_path):
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    import catalog_core as cc
    from eval.lake.fingerprint import compare, fingerprint

    a, b = worlds
    fa = fingerprint(str(a))
    c = tmp_path / "c"
    shutil.copytree(b, c)
    path = next(os.path.join(d, f) for d, _, fs in os.walk(c / "warehouse") for f in sorted(fs) if f.endswith(".parquet"))
    t = pq.read_table(path)
    pq.write_table(t.set_column(0, t.field(0), pa.nulls(t.num_rows, t.field(0).type)), path)  # one column's values changed
    diffs = compare(fa, fingerprint(str(c)))
    assert diffs and any("/enriched/tables/" in d for d in diffs)
    cat = cc.Catalog.open(str(c / "stale"))
    try:
        table = next(o for o in cat.query(cc.lake.tables_query(None)))
        import semantic as sm

        sm.annotate(cat, cc.lake.name_of(table.path), {"description": "changed"}, author="x")
    finally:
        cat.close()
    diffs = compare(fa, fingerprint(str(c)), limit=1000)
    assert any(d.startswith("/stale/commits/") for d in diffs)
