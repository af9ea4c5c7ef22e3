"""The two halves of `semantic` as one package: relationships and metrics written by relate /
define_metric show in describe (on both ends) and in staleness; every semantic function raises the
classes of `semantic.errors`, embedded and over `cc.connect`; the /v1/semantic routes for join
paths, metrics and metric SQL, with errors that keep their class across HTTP."""

from __future__ import annotations

import httpx
import pytest

import catalog_core as cc
import semantic as sm
from catalog_core import lake
from catalog_core.errors import error_from_dict
from eval.fixtures.lakes import LakeBuilder
from mcp_server.http.auth import Tokens
from mcp_server.http.server import serve_in_thread
from semantic import errors as se
from semantic.history import clear_cache

ORD, S = "acme.core.orders", "acme.core.stores"


def small(lk: LakeBuilder) -> None:
    lk.table(S, [("store_id", "bigint"), ("region", "string")], at=0,
             rows={"store_id": [1, 2], "region": ["east", "west"]})
    lk.table(ORD, [("order_id", "bigint"), ("store_id", "bigint"), ("gross_cents", "bigint"), ("order_date", "date")],
             at=0.1, rows={"order_id": [1, 2, 3], "store_id": [1, 2, 2], "gross_cents": [100, 250, 50],
                           "order_date": ["2024-11-11", "2024-11-11", "2024-11-12"]})


def related(lk: LakeBuilder) -> tuple[int, int]:
    small(lk)
    v_rel = sm.relate(lk.cat, ORD, S, on=["store_id"], author="alice", time=lk.day(0.2))
    v_met = sm.define_metric(lk.cat, ORD, "revenue", expression="sum(gross_cents) / 100.0", time_column="order_date",
                             unit="USD", author="bob", time=lk.day(0.3))
    return v_rel, v_met


def test_describe_shows_relationships_and_metrics_and_who_references_the_table(cat, lk):
    v_rel, v_met = related(lk)
    card = sm.describe(cat, ORD, now=lk.day(0.5))
    (rel,) = card.relationships
    assert (rel.name, rel.from_table, rel.to, rel.on, rel.cardinality, rel.canonical) == (
        "stores", ORD, S, [("store_id", "store_id")], "many_to_one", True)
    assert (rel.author, rel.source, rel.vid, rel.status) == ("alice", "human", v_rel, "fresh")
    (met,) = card.metrics
    assert (met.name, met.qualified, met.expression, met.unit, met.author, met.vid) == (
        "revenue", f"{ORD}.revenue", "sum(gross_cents) / 100.0", "USD", "bob", v_met)
    assert sm.metrics(cat, ORD) == [met.model_copy(update={"status": "fresh"})]
    # the TO table's card lists the relationship declared on the FROM table
    stores = sm.describe(cat, S, now=lk.day(0.5))
    assert [(r.from_table, r.name, r.to) for r in stores.referenced_by] == [(ORD, "stores", S)]
    assert stores.relationships == [] and stores.metrics == [] and card.referenced_by == []


def test_relationship_basis_names_its_from_columns_and_staleness_reads_them(cat, lk):
    related(lk)
    b = cat.get(lake.semantic_path(ORD, "relationship.stores")).value["provenance"]["basis"]
    assert b["columns"] == [{"id": 2, "name": "store_id", "type": "bigint"}]
    m = cat.get(lake.semantic_path(ORD, "metric.revenue")).value["provenance"]["basis"]
    assert [c["name"] for c in m["columns"]] == ["gross_cents", "order_date"]
    assert sm.staleness(cat, ORD, now=lk.day(0.5)) == []  # control: nothing changed
    v = lk.evolve(ORD, drop=["store_id"], add=[("shop_id", "bigint")], at=1,
                  rows={"order_id": [1, 2, 3], "gross_cents": [100, 250, 50],
                        "order_date": ["2024-11-11", "2024-11-11", "2024-11-12"], "shop_id": [1, 2, 2]})
    found = [f for f in sm.staleness(cat, ORD, now=lk.day(1.5)) if f.annotation == "relationship.stores"]
    assert [(f.reason, f.status) for f in found] == [("join_key_missing", "stale")]
    assert v in found[0].evidence.vids and found[0].evidence.values["column"] == "store_id"
    card = sm.describe(cat, S, now=lk.day(1.5))
    assert [(r.name, r.status) for r in card.referenced_by] == [("stores", "stale")]


ERRORS = [
    (lambda c: sm.relate(c, ORD, S, on=[("store", "store_id")], author="a"), se.UnknownColumnError,
     "from column 'store' is not a column of acme.core.orders; did you mean 'store_id'"),
    (lambda c: sm.relate(c, ORD, "acme.core.store", on=["store_id"], author="a"), se.UnknownTableError,
     "did you mean 'acme.core.stores'"),
    (lambda c: sm.relate(c, ORD, S, on=["store_id"], cardinality="many", author="a"), se.InvalidAnnotationError,
     "cardinality must be one of"),
    (lambda c: sm.relate(c, ORD, S, on=["store_id"], author=""), se.InvalidAnnotationError,
     "author must name who wrote the annotation"),
    (lambda c: sm.define_metric(c, ORD, "m", expression="gross_cents", author="a"), se.InvalidExpressionError,
     "must be an aggregate"),
    (lambda c: sm.define_metric(c, ORD, "m", expression="sum(gross)", author="a"), se.UnknownColumnError,
     "did you mean 'gross_cents'"),
    (lambda c: sm.metric_sql(c, "revenu"), se.UnknownMetricError, "no metric 'revenu'"),
    (lambda c: sm.metric_sql(c, "revenue", group_by=["regin"]), se.UnknownColumnError, "stores.region"),
    (lambda c: sm.join_path(c, S, "acme.core.orderz"), se.UnknownTableError, "did you mean 'acme.core.orders'"),
    (lambda c: sm.describe(c, "acme.core.ordrs"), se.UnknownTableError, "did you mean 'acme.core.orders'"),
    (lambda c: sm.profile(c, "acme.core.stors"), se.UnknownTableError, "did you mean 'acme.core.stores'"),
]


@pytest.mark.parametrize("call, exc, message", ERRORS)
def test_semantic_functions_raise_semantic_error_classes(cat, lk, call, exc, message):
    related(lk)
    before = cat.latest_vid
    with pytest.raises(exc) as info:
        call(cat)
    assert type(info.value) is exc and message in info.value.message, info.value.message
    assert isinstance(info.value, cc.errors.CatalogError) and cat.latest_vid == before


def test_no_join_path_error(cat, lk):
    small(lk)
    with pytest.raises(se.NoJoinPathError) as info:
        sm.join_path(cat, ORD, S)
    assert info.value.details["reachable"] == [] and "relate(cat, 'acme.core.orders'" in info.value.message


@pytest.fixture
def server(data_dir, tmp_path):
    engine = cc.Catalog.open(data_dir)
    lk = LakeBuilder(engine, tmp_path / "files")
    related(lk)
    srv = serve_in_thread(engine, tokens=Tokens({"r": "read"}))
    yield srv
    srv.stop()
    clear_cache()
    engine.close()


def test_http_join_path_metrics_and_metric_sql_routes(server):
    auth = {"Authorization": "Bearer r"}
    with httpx.Client(base_url=server.url, headers=auth) as c:
        jp = c.get("/v1/semantic/join_path", params={"from_table": ORD, "to_table": S}).json()
        assert [(h["from_table"], h["to_table"]) for h in jp["hops"]] == [(ORD, S)]
        assert jp["cardinality"] == "many_to_one" and 'JOIN "acme"."core"."stores"' in jp["sql"]
        jd = c.get("/v1/semantic/join_path", params={"from_table": ORD, "to_table": S, "depth": "data"}).json()
        assert jd["checks"][0]["ok"] is True and jd["checks"][0]["match_rate"] == 1.0
        ms = c.get("/v1/semantic/metrics", params={"table": ORD}).json()["metrics"]
        assert [(m["qualified"], m["author"]) for m in ms] == [(f"{ORD}.revenue", "bob")]
        r = c.post("/v1/semantic/metric_sql", json={"metric": "revenue", "group_by": ["region"], "grain": "day",
                                                    "time_range": ["2024-11-11", None]}).json()
        with cc.connect(server.url, token="r") as remote:
            rows = cc.run_sql(remote, r["sql"], snapshot=r["vid"]).rows
        assert [(str(d), region, rev) for d, region, rev in rows] == [
            ("2024-11-11", "east", 1.0), ("2024-11-11", "west", 2.5), ("2024-11-12", "west", 0.5)]
        # errors keep their semantic class across HTTP
        for method, url, kw, cls in [
            ("GET", "/v1/semantic/join_path", {"params": {"from_table": S, "to_table": "acme.core.ordrs"}},
             se.UnknownTableError),
            ("POST", "/v1/semantic/metric_sql", {"json": {"metric": "revenu"}}, se.UnknownMetricError),
            ("POST", "/v1/semantic/metric_sql", {"json": {"metric": "revenue", "where": "sum(x) > 1"}},
             se.InvalidExpressionError),
            ("POST", "/v1/semantic/metric_sql", {"json": {"metric": "revenue", "group_by": ["regin"]}},
             se.UnknownColumnError),
            ("GET", "/v1/semantic/describe/acme.core.ordrs", {}, se.UnknownTableError),
        ]:
            resp = c.request(method, url, **kw)
            err = error_from_dict(resp.json())
            assert type(err) is cls and resp.status_code == cls.http_status, (url, resp.json())
            assert "did you mean" in err.message or cls is se.InvalidExpressionError
