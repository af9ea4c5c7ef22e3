"""Issue 45, regression (c): a run_sql that never mentions `status` carried a warning about the
values of `status` (a restatement finding merged with the table description that names those
values was shown as a table-level warning, which every answer from the table rests on)."""

from __future__ import annotations

import pytest

import catalog_core as cc
import semantic as sm
from eval.fixtures.lakes import LakeBuilder
from mcp_server.mcp import create_server
from semantic.history import clear_cache

from .conftest import call, ok

ORD, STO = "acme.core.orders", "acme.core.stores"


@pytest.fixture
def elk_cat(tmp_path):
    cat = cc.Catalog.open(str(tmp_path / "data"))
    yield cat, LakeBuilder(cat, tmp_path / "files")
    clear_cache()
    cat.close()


def test_run_sql_warns_only_about_what_the_statement_uses(elk_cat):
    cat, lk = elk_cat
    lk.table(STO, [("store_id", "bigint"), ("region", "string")], at=0, rows={"store_id": [1, 2], "region": ["w", "e"]})
    lk.table(ORD, [("d", "date"), ("order_id", "bigint"), ("store_id", "bigint"), ("status", "string")],
             partition_by=["d"], at=0)
    for day in range(1, 5):
        lk.append(ORD, {"d": [f"2024-11-1{day}"] * 2, "order_id": [2 * day, 2 * day + 1], "store_id": [1, 2],
                        "status": ["placed", "shipped"]}, at=day)
    sm.annotate(cat, ORD, {"description": "orders; status is placed or shipped"}, author="a", time=lk.day(5))
    sm.annotate(cat, ORD, {"enum": ["placed", "shipped"]}, column="status", author="a", time=lk.day(5))
    lk.overwrite(ORD, {"d": [f"2024-11-1{day}" for day in range(1, 5)], "order_id": [2, 4, 6, 8],
                       "store_id": [1, 2, 1, 2], "status": ["placed", "sent", "placed", "sent"]}, at=6)
    server = create_server(cat, now=lk.day(6.5))
    # the restatement is there, and a statement reading `status` is warned about it
    used = ok(call(server, "run_sql", {"sql": f"SELECT status, count(*) FROM {ORD} GROUP BY 1"}))
    assert "values_restated" in {w["reason"] for w in used["warnings"]}
    joined = ok(call(server, "run_sql", {"sql": f"SELECT s.region, count(*) FROM {ORD} o JOIN {STO} s "
                                                f"ON o.store_id = s.store_id GROUP BY 1"}))
    assert not [w for w in joined["warnings"] if "status" in w["message"] or w["reason"] == "values_restated"], \
        joined["warnings"]



def test_one_rename_is_one_warning_whatever_annotations_it_reaches(elk_cat):
    """Issue 45, regression (b): a column renamed (cents to dollars) whose description and unit and
    a metric on it were annotated gave describe_table two rename warnings, one for the column's
    annotations and one for the metric's (failed before: two column_renamed warnings)."""
    cat, lk = elk_cat
    lk.table(STO, [("store_id", "bigint"), ("net_revenue_cents", "bigint")], at=0,
             rows={"store_id": [1, 2, 3], "net_revenue_cents": [1000, 25000, 4000]})
    sm.annotate(cat, STO, {"description": "net revenue", "unit": "cents", "role": "measure"},
                column="net_revenue_cents", author="a", time=lk.day(1))
    sm.define_metric(cat, STO, "net_revenue", expression="sum(net_revenue_cents) / 100.0", author="a", time=lk.day(1.1))
    lk.evolve(STO, add=[("net_revenue_usd", "double")], drop=["net_revenue_cents"], at=2,
              rows={"store_id": [1, 2, 3], "net_revenue_usd": [10.0, 250.0, 40.0]})
    server = create_server(cat, now=lk.day(2.5))
    warns = ok(call(server, "describe_table", {"table": STO}))["warnings"]
    renames = [w for w in warns if "net_revenue_cents" in w["message"] and w["reason"] in ("column_renamed", "unit_drift")]
    assert len(renames) == 1, warns
    assert [fx["params"] for fx in renames[0]["fixes"] if fx["action"] == "rename"] == [
        {"old": "net_revenue_cents", "new": "net_revenue_usd", "scale": -2}]
    # the one warning still reaches an answer that reads the metric's column
    used = ok(call(server, "run_sql", {"sql": f"SELECT sum(net_revenue_usd) FROM {STO}"}))["warnings"]
    assert not [w for w in used if w["reason"] == "column_renamed"]  # the new column is not the renamed one
    star = ok(call(server, "run_sql", {"sql": f"SELECT * FROM {STO}"}))["warnings"]
    assert len([w for w in star if "net_revenue_cents" in w["message"]]) == 1


def test_a_cadence_the_description_no_longer_keeps_is_a_warning(elk_cat):
    """A weekly mart rebuilt after every daily load: the description's "refreshed weekly" is stale. The
    finding carried the reason `freshness_sla_missed` (three testers of session 32: no SLA was missed),
    and the MCP warnings drop that reason from the findings (the SLA has its own warning), so agents never
    saw it (failed before: no warning on describe_table)."""
    cat, lk = elk_cat
    w = "acme.mart.weekly"
    lk.table(w, [("week", "bigint"), ("units", "bigint")], at=0)
    for week in range(1, 7):
        lk.overwrite(w, {"week": list(range(1, week + 1)), "units": [10 * x for x in range(1, week + 1)]}, at=7 * week)
    sm.annotate(cat, w, {"description": "Units per fiscal week, refreshed weekly on Mondays with complete weeks only."},
                author="a", time=lk.day(43))
    for day in (49, 50, 51, 52):
        lk.overwrite(w, {"week": [1, 7], "units": [1, day]}, at=day)
    server = create_server(cat, now=lk.day(52.5))
    warns = ok(call(server, "describe_table", {"table": w}))["warnings"]
    assert [x["reason"] for x in warns if x["kind"] == "finding"] == ["cadence_changed"], warns
    assert "weekly" in warns[0]["message"] and "freshness" not in {x["kind"] for x in warns}
