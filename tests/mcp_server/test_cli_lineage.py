"""`semcat lineage` as a real subprocess on a catalog directory: upstream with the vids each build
read and the finding that flows downstream, --downstream, --json, and an unknown table's message."""

from __future__ import annotations

import json

import catalog_core as cc
import semantic as sm
from eval.fixtures.lakes import LakeBuilder
from semantic.lineage import record_lineage
from tests.mcp_server.test_cli_data_dir import semcat

SRC, MART = "acme.core.t", "acme.mart.m"


def test_lineage_cli(tmp_path):
    data = str(tmp_path / "data")
    cat = cc.Catalog.open(data)
    lk = LakeBuilder(cat, tmp_path / "files")
    lk.table(SRC, [("id", "bigint"), ("kind", "string")], at=0, rows={"id": [1, 2], "kind": ["a", "b"]})
    sm.annotate(cat, SRC, {"description": "the kind"}, column="kind", author="a", time=lk.day(1))
    lk.table(MART, [("kind", "string"), ("n", "bigint")], at=1.5, rows={"kind": ["a"], "n": [2]})
    read = cat.latest_vid
    record_lineage(cat, MART, {SRC: read}, job="build m", time=lk.at(1.6))
    drop = lk.evolve(SRC, drop=["kind"], rows={"id": [1, 2]}, at=2)  # rebuilt without it
    cat.close()

    r = semcat("lineage", MART, "--data", data)
    assert r.returncode == 0, r.stderr
    assert f"read: {SRC}@{read}" in r.stdout and "[upstream_changed]" in r.stdout and f"vid {drop}" in r.stdout
    r = semcat("lineage", SRC, "--downstream", "--depth", "1", "--data", data, "--json")
    g = json.loads(r.stdout)
    assert [n["table"] for n in g["nodes"]] == [SRC, MART] and g["edges"] == [{"from": SRC, "to": MART, "vid": read}]
    r = semcat("lineage", "acme.mart.nope", "--data", data)
    assert r.returncode != 0 and "does not exist" in r.stderr and "Traceback" not in r.stderr
