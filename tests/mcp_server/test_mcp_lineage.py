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
