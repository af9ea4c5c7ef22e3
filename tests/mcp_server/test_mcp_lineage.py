"""get_lineage over the SDK's in-memory client: upstream and downstream graphs with the vids each
build read, paging with a snapshot-pinned cursor, the findings that flow downstream, bad arguments."""

from __future__ import annotations

import pytest

import catalog_core as cc
from eval.fixtures import mcplake
from mcp_server.mcp import create_server
from semantic.lineage import record_lineage
from tests.mcp_server.conftest import call, code, list_tools, ok

FCT, DIM = "acme.core.fct_orders", "acme.core.dim_store"


def _schema(server, name):
    return next(t for t in list_tools(server) if t.name == name).output_schema


@pytest.fixture
def lcat(tmp_path):
    cat = cc.Catalog.open(str(tmp_path / "data"))
    mcplake.build(cat, tmp_path / "files", extra_tables=10)
    yield cat
    cat.close()


def test_get_lineage_both_directions_paged_and_pinned(lcat):
    cat = lcat
    read = cat.latest_vid
    for i in range(3):  # three marts built from the fact and the dimension
        record_lineage(cat, f"acme.misc.t{i:02d}", {FCT: read, DIM: read}, job=f"build t{i:02d}")
    record_lineage(cat, "acme.misc.t03", {"acme.misc.t00": cat.latest_vid}, job="build t03")
    server = create_server(cat)
    schema = _schema(server, "get_lineage")

    up = ok(call(server, "get_lineage", {"table": "acme.misc.t03", "depth": 2}), schema)
    assert [(n["table"], n["depth"]) for n in up["nodes"]] == [("acme.misc.t03", 0), ("acme.misc.t00", 1),
                                                                (DIM, 2), (FCT, 2)]
    assert up["nodes"][0]["inputs"] == [{"table": "acme.misc.t00", "vid": read + 3}]
    t00 = up["nodes"][1]
    assert t00["built_vid"] == read + 1 and t00["inputs"] == [{"table": DIM, "vid": read}, {"table": FCT, "vid": read}]
    one = ok(call(server, "get_lineage", {"table": "acme.misc.t03", "depth": 1}), schema)
    assert [n["table"] for n in one["nodes"]] == ["acme.misc.t03", "acme.misc.t00"]

    # downstream, paged two at a time; the cursor keeps the first page's snapshot after a new commit
    p1 = ok(call(server, "get_lineage", {"table": FCT, "direction": "downstream", "limit": 2}), schema)
    assert p1["total"] == 5 and p1["truncated"] and [n["table"] for n in p1["nodes"]] == [FCT, "acme.misc.t00"]
    record_lineage(cat, "acme.misc.t04", {FCT: cat.latest_vid})
    p2 = ok(call(server, "get_lineage", {"table": FCT, "direction": "downstream", "limit": 2,
                                         "cursor": p1["next_cursor"]}), schema)
    p3 = ok(call(server, "get_lineage", {"table": FCT, "direction": "downstream", "limit": 2,
                                         "cursor": p2["next_cursor"]}), schema)
    seen = [n["table"] for p in (p1, p2, p3) for n in p["nodes"]]
    assert seen == [FCT, "acme.misc.t00", "acme.misc.t01", "acme.misc.t02", "acme.misc.t03"]
    assert p3["snapshot"]["vid"] == p1["snapshot"]["vid"] and not p3["truncated"]
    now = ok(call(server, "get_lineage", {"table": FCT, "direction": "downstream"}), schema)
    assert "acme.misc.t04" in [n["table"] for n in now["nodes"]]

    # a table nobody recorded lineage for is one node; bad arguments are coded errors
    alone = ok(call(server, "get_lineage", {"table": "acme.misc.t09"}), schema)
    assert [n["table"] for n in alone["nodes"]] == ["acme.misc.t09"] and alone["nodes"][0]["inputs"] == []
    assert code(call(server, "get_lineage", {"table": "acme.misc.nope"})) == "NoSuchTableError"
    assert call(server, "get_lineage", {"table": FCT, "direction": "sideways"}).is_error
    assert call(server, "get_lineage", {"table": FCT, "depth": 0}).is_error


# ------------------------------------------------------------------ a partial latest period warns run_sql / query_metric
@pytest.fixture
def partial_cat(tmp_path):
    import semantic as sm
    from eval.fixtures.lakes import LakeBuilder

    cat = cc.Catalog.open(str(tmp_path / "data"))
    lk = LakeBuilder(cat, tmp_path / "files")  # day 0 is 2024-11-11
    lk.table("acme.core.orders", [("order_id", "bigint"), ("cents", "bigint"), ("d", "date")], partition_by=["d"], at=0)
    lk.append("acme.core.orders", {"order_id": [1, 2], "cents": [5, 7], "d": ["2024-11-11", "2024-11-12"]}, at=2.2)
    lk.append("acme.core.orders", {"order_id": [3], "cents": [9], "d": ["2024-11-13"]}, at=2.5)  # mid-day: partial
    sm.define_metric(cat, "acme.core.orders", "revenue", expression="sum(cents)", time_column="d", author="a",
                     time=lk.day(2.6))
    yield cat, lk
    cat.close()


def _period_warnings(out):
    return [w for w in out["warnings"] if w.get("reason") == "period_incomplete"]


def test_run_sql_and_query_metric_warn_when_the_filter_reaches_a_partial_period(partial_cat):
    cat, lk = partial_cat
    server = create_server(cat, now=lk.day(3))
    t = "acme.core.orders"
    reach = ok(call(server, "run_sql", {"sql": f"SELECT sum(cents) FROM {t} WHERE d >= DATE '2024-11-12'"}))
    (w,) = _period_warnings(reach)
    assert w["table"] == t and "2024-11-13 is partial" in w["message"] and "complete through 2024-11-12" in w["message"]
    eq = ok(call(server, "run_sql", {"sql": f"SELECT count(*) FROM {t} o WHERE o.d = '2024-11-13'"}))
    assert len(_period_warnings(eq)) == 1
    # controls: a filter that stops before it, and a statement whose filter cannot be read (no warning)
    before = ok(call(server, "run_sql", {"sql": f"SELECT sum(cents) FROM {t} WHERE d BETWEEN '2024-11-11' AND '2024-11-12'"}))
    assert _period_warnings(before) == []
    assert _period_warnings(ok(call(server, "run_sql", {"sql": f"SELECT sum(cents) FROM {t}"}))) == []
    assert _period_warnings(ok(call(server, "run_sql", {"sql": f"SELECT 1 FROM {t} WHERE d = '2024-11-13' OR cents > 1"}))) == []
    # query_metric: its time_range becomes the statement's filter
    m = ok(call(server, "query_metric", {"metric": "revenue", "time_range": ["2024-11-12", "2024-11-14"]}))
    assert [w["table"] for w in _period_warnings(m)] == [t]
    m0 = ok(call(server, "query_metric", {"metric": "revenue", "time_range": ["2024-11-11", "2024-11-13"]}))
    assert _period_warnings(m0) == []  # its time_range ends before 2024-11-13 (end exclusive)


def test_get_lineage_shows_what_flows_downstream_unless_findings_are_hidden(tmp_path):
    import semantic as sm
    from eval.fixtures.lakes import LakeBuilder
    from eval.harness.conditions import reads_for

    cat = cc.Catalog.open(str(tmp_path / "data"))
    try:
        lk = LakeBuilder(cat, tmp_path / "files")
        lk.table("acme.core.t", [("id", "bigint"), ("kind", "string")], at=0, rows={"id": [1], "kind": ["a"]})
        sm.annotate(cat, "acme.core.t", {"description": "the kind"}, column="kind", author="a", time=lk.day(1))
        lk.table("acme.mart.m", [("n", "bigint")], at=1.2, rows={"n": [1]})
        record_lineage(cat, "acme.mart.m", {"acme.core.t": cat.latest_vid}, time=lk.at(1.3))
        drop = lk.evolve("acme.core.t", drop=["kind"], rows={"id": [1]}, at=2)  # rebuilt without it
        out = ok(call(create_server(cat, now=lk.day(3)), "get_lineage", {"table": "acme.mart.m"}))
        (f,) = out["nodes"][0]["findings"]
        assert f["reason"] == "upstream_changed" and f"vid {drop}" in f["message"]
        hidden = ok(call(create_server(cat, now=lk.day(3), reads=reads_for(False, True)), "get_lineage",
                         {"table": "acme.mart.m"}))
        assert hidden["nodes"][0]["findings"] == [] and hidden["nodes"][0]["inputs"] == out["nodes"][0]["inputs"]
    finally:
        cat.close()
