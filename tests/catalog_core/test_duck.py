"""DuckDB over exactly the Parquet files of a snapshot: real Parquet written by pyarrow into the
warehouse, committed as file leaves through the engine."""

from __future__ import annotations

import copy
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import catalog_core as cc
from catalog_core.errors import InvalidValueError, NotFoundError
from catalog_core.sql.reader import open_table
from catalog_core.sql.types import duck_type
from tests.helpers import ORDERS, SCHEMA, Lake, build_lake, schema_columns


def ids(con, where="true"):
    return sorted(r[0] for r in con.execute(f"SELECT id FROM wh.sales.orders WHERE {where}").fetchall())


def allowed_paths(con):
    return sorted(con.execute("SELECT unnest(current_setting('allowed_paths'))").fetchall())


# ---------------------------------------------------------------- views and names

def test_three_part_name_resolves_to_a_view_in_database_and_schema(wh):
    con = cc.open_duckdb(wh.cat)
    assert con.execute("SELECT count(*) FROM wh.sales.orders").fetchone()[0] == 9
    views = con.execute("SELECT database_name, schema_name, view_name FROM duckdb_views() WHERE NOT internal "
                    "ORDER BY ALL").fetchall()
    assert views == [("wh", "crm", "customers"), ("wh", "sales", "empty"), ("wh", "sales", "orders")]
    # One catalog in the lake: it is the default database, so two-part names work too.
    assert con.execute("SELECT count(*) FROM sales.orders").fetchone()[0] == 9


def test_each_catalog_is_its_own_database(wh):
    cat = wh.cat
    with cat.transaction() as t:
        t.add("/lake2", {"obj_type": "catalog", "properties": {}})
        t.add("/lake2/sales", {"obj_type": "namespace", "properties": {}})
        t.add("/lake2/sales/orders", Lake._table("/nowhere", [("x", "int")], []))
    con = cc.open_duckdb(cat)
    assert con.execute("SELECT count(*) FROM wh.sales.orders").fetchone()[0] == 9
    assert con.execute("SELECT count(*) FROM lake2.sales.orders").fetchone()[0] == 0


def test_view_has_schema_columns_and_types(wh):
    con = cc.open_duckdb(wh.cat)
    cols = con.execute("DESCRIBE wh.sales.orders").fetchall()
    assert [(c[0], c[1]) for c in cols] == [("id", "BIGINT"), ("price", "DOUBLE"), ("d", "DATE"), ("note", "VARCHAR")]


def test_zero_file_table_is_an_empty_view_with_the_right_columns(wh):
    con = cc.open_duckdb(wh.cat)
    cols = [(c[0], c[1]) for c in con.execute("DESCRIBE wh.sales.empty").fetchall()]
    assert cols == [("k", "INTEGER"), ("amount", "DECIMAL(12,2)"), ("ts", "TIMESTAMP")]
    assert con.execute("SELECT count(*) FROM wh.sales.empty").fetchone()[0] == 0
    # and orders before any file was committed
    con0 = cc.open_duckdb(wh.cat, snapshot=wh.v0)
    assert con0.execute("SELECT count(*), count(d) FROM wh.sales.orders").fetchone() == (0, 0)


# ---------------------------------------------------------------- snapshots

def test_two_snapshots_differ_by_exactly_the_committed_files(wh):
    at1, at3 = cc.open_duckdb(wh.cat, snapshot=wh.v1), cc.open_duckdb(wh.cat, snapshot=wh.v3)
    assert ids(at1) == [1, 2, 3]
    assert sorted(set(ids(at3)) - set(ids(at1))) == [4, 5, 6, 7, 8, 9]
    assert set(ids(at1)) <= set(ids(at3))
    assert allowed_paths(at1) == [(wh.paths["a"],)]
    assert len(allowed_paths(at3)) == 3 + 0  # orders files; customers came later (v4)
    wh.cat.snapshot("eod-1", wh.v1)
    res = cc.run_sql(wh.cat, "SELECT count(*) AS n FROM wh.sales.orders", snapshot="eod-1")
    assert res.rows == [[3]] and res.snapshot == wh.v1


def test_removed_file_disappears_later_and_stays_readable_earlier(wh):
    v5 = wh.remove("2001-06-02", "b")
    assert ids(cc.open_duckdb(wh.cat, snapshot=v5)) == [1, 2, 3, 6, 7, 8, 9]
    assert ids(cc.open_duckdb(wh.cat, snapshot=wh.v4)) == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert cc.run_sql(wh.cat, "SELECT count(*) FROM wh.sales.orders", snapshot=wh.v3).rows == [[9]]
    assert cc.run_sql(wh.cat, "SELECT count(*) FROM wh.sales.orders").rows == [[7]]


# ---------------------------------------------------------------- partition columns and schema

def test_partition_column_comes_from_the_partition_objects(wh):
    assert "d" not in pq.read_schema(wh.paths["a"]).names  # Hive-style: the file has no d
    # a file at a path that says nothing about its partition, and one that holds d itself
    wh.write("2001-06-04", "loose", [20, 21], rel="loose/zz.parquet")
    wh.write("2001-06-05", "withd", [30], keep_d=True)
    wh.write("2001-06-06", "mislabeled", [40], rel="d=2001-06-09/m.parquet")  # the catalog wins
    con = cc.open_duckdb(wh.cat)
    got = dict(con.execute("SELECT id, strftime(d, '%Y-%m-%d') FROM wh.sales.orders").fetchall())
    assert got[1] == got[3] == "2001-06-01" and got[5] == "2001-06-02" and got[9] == "2001-06-03"
    assert got[20] == got[21] == "2001-06-04" and got[30] == "2001-06-05" and got[40] == "2001-06-06"
    assert con.execute("SELECT typeof(d) FROM wh.sales.orders LIMIT 1").fetchone()[0] == "DATE"


def test_column_added_to_the_schema_is_null_in_older_files(wh):
    cat = wh.cat
    table = copy.deepcopy(cat.get("/wh/sales/orders").value)  # get() values are read-only
    table["schema"] = {"schema_id": 1, "columns": schema_columns(SCHEMA + [("discount", "double")])}
    with cat.transaction() as t:
        t.update("/wh/sales/orders", table)
    con = cc.open_duckdb(cat)
    assert con.execute("SELECT count(*), count(discount) FROM wh.sales.orders").fetchone() == (9, 0)
    old = cc.open_duckdb(cat, snapshot=wh.v4)
    assert "discount" not in [c[0] for c in old.execute("DESCRIBE wh.sales.orders").fetchall()]


def test_a_table_with_a_missing_file_fails_alone_and_says_which(wh):
    os.remove(wh.paths["b"])
    con = cc.open_duckdb(wh.cat)
    assert con.execute("SELECT count(*) FROM wh.crm.customers").fetchone()[0] == 2
    with pytest.raises(cc.CatalogError) as err:
        cc.run_sql(wh.cat, "SELECT count(*) FROM wh.sales.orders")
    assert "wh.sales.orders" in err.value.message
    assert cc.run_sql(wh.cat, "SELECT count(*) FROM wh.crm.customers").rows == [[2]]


# ---------------------------------------------------------------- pruned reads

@pytest.mark.parametrize("where, sql_where", [
    ('d >= "2001-06-02"', "d >= DATE '2001-06-02'"),
    ('d = "2001-06-01" or d = "2001-06-03"', "d IN (DATE '2001-06-01', DATE '2001-06-03')"),
    ("id >= 6", "id >= 6"),
    ('d in ("2001-06-02") and id > 4', "d = DATE '2001-06-02' AND id > 4"),
])
def test_open_table_with_where_gives_the_same_rows_from_fewer_files(wh, where, sql_where):
    full = cc.open_duckdb(wh.cat)
    pruned = open_table(wh.cat, ORDERS, where=where)
    assert ids(pruned) == ids(full, sql_where) and ids(pruned)
    assert len(allowed_paths(pruned)) == len(wh.cat.plan_files(ORDERS, where=where)) < 3
    # only that one table is in the connection
    assert pruned.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchone()[0] == 1


def test_open_table_where_keeps_the_catalogs_two_valued_logic(wh):
    wh.write("2001-06-04", "nulls", [40, 41], notes=[None, "n1"])
    con = open_table(wh.cat, ORDERS, where='not (note = "n1")')
    assert 40 in ids(con)  # NULL note: `note = "n1"` is false, so `not` keeps the row
    assert 1 not in ids(con) and 41 not in ids(con)
    assert ids(open_table(wh.cat, ORDERS, where="exists(note) and price > 10")) == [7, 8, 9, 41]


def test_open_table_at_a_snapshot_and_unknown_table(wh):
    assert ids(open_table(wh.cat, ORDERS, snapshot=wh.v1)) == [1, 2, 3]
    with pytest.raises(NotFoundError):
        open_table(wh.cat, "wh.sales.nope")


# ---------------------------------------------------------------- run_sql

def test_run_sql_result_is_json_friendly_and_bounded(wh):
    res = cc.run_sql(wh.cat, "SELECT id, d, price::DECIMAL(10,2) AS p, note, now() AS t, INTERVAL 1 DAY AS i "
                              "FROM wh.sales.orders ORDER BY id", limit=4)
    assert [c.name for c in res.columns] == ["id", "d", "p", "note", "t", "i"]
    assert [c.type for c in res.columns][:4] == ["BIGINT", "DATE", "DECIMAL(10,2)", "VARCHAR"]
    assert res.rows[0][:4] == [1, "2001-06-01", 1.5, "n1"]
    assert res.truncated and res.row_count == 4 == len(res.rows) and res.snapshot == wh.cat.latest_vid
    json.dumps(res.model_dump())
    exact = cc.run_sql(wh.cat, "SELECT id FROM wh.sales.orders", limit=9)
    assert not exact.truncated and exact.row_count == 9


def test_run_sql_joins_tables_and_reads_introspection(wh):
    res = cc.run_sql(wh.cat, "SELECT c.name, count(*) FROM wh.sales.orders o JOIN wh.crm.customers c "
                              "ON o.id = c.cid GROUP BY ALL ORDER BY 1")
    assert res.rows == [["ann", 1], ["bob", 1]]
    tables = cc.run_sql(wh.cat, "SELECT table_catalog, table_schema, table_name FROM information_schema.tables "
                                "ORDER BY ALL")
    assert ["wh", "sales", "orders"] in tables.rows and len(tables.rows) == 3


@pytest.mark.parametrize("sql, err", [
    ("SELEC 1", InvalidValueError),
    ("SELECT * FROM wh.sales.nope", NotFoundError),
    ("SELECT no_such_column FROM wh.sales.orders", InvalidValueError),
    ("SELECT 1/'x'", InvalidValueError),
])
def test_run_sql_errors_are_catalog_errors_with_a_message(wh, sql, err):
    with pytest.raises(err) as e:
        cc.run_sql(wh.cat, sql)
    assert e.value.message


@pytest.mark.parametrize("kwargs", [{"limit": 0}, {"limit": "10"}, {"timeout_s": 0}, {"snapshot": 999}])
def test_run_sql_rejects_bad_arguments(wh, kwargs):
    with pytest.raises(cc.CatalogError):
        cc.run_sql(wh.cat, "SELECT 1", **kwargs)


class PublicOnly:
    """The remote client's surface and nothing more: no data_dir, no warehouse, no store."""

    def __init__(self, cat):
        self._cat = cat

    def resolve(self, ref):
        return self._cat.resolve(ref)

    def get(self, path, vid=None):
        return self._cat.get(path, vid=vid)

    def query(self, expr, vid=None):
        return self._cat.query(expr, vid=vid)

    def plan_files(self, table, where=None, vid=None):
        return self._cat.plan_files(table, where=where, vid=vid)


def test_works_through_the_public_interface_only(wh):
    remote = PublicOnly(wh.cat)
    assert ids(cc.open_duckdb(remote, snapshot=wh.v2)) == [1, 2, 3, 4, 5]
    assert cc.run_sql(remote, "SELECT sum(id) FROM wh.sales.orders").rows == [[45]]
    assert ids(open_table(remote, ORDERS, where="id < 3")) == [1, 2]


@pytest.mark.parametrize("spec, want", [
    ("long", "BIGINT"), ("string", "VARCHAR"), ("decimal(12, 2)", "DECIMAL(12, 2)"), ("timestamp", "TIMESTAMP"),
    ("timestamptz", "TIMESTAMPTZ"), ("array<int>", "INTEGER[]"), ("map<string,long>", "MAP(VARCHAR, BIGINT)"),
    ("struct<a:int,b:array<string>>", 'STRUCT("a" INTEGER, "b" VARCHAR[])'), ("varchar(20)", "VARCHAR"),
    ("INTEGER[]", "INTEGER[]"), ({"type": "list"}, None), ("a;drop", None),
])
def test_schema_types_map_to_duckdb(spec, want):
    assert duck_type(spec) == want


# ---------------------------------------------------------------- semcat sql

def test_semcat_sql_prints_a_table_and_exits_2_on_errors(data_dir):
    from mcp_server.cli import main

    cat = cc.Catalog.open(data_dir)
    lake = build_lake(cat)
    cat.close()
    runner = CliRunner()
    ok = runner.invoke(main, ["sql", "SELECT id, note FROM wh.sales.orders ORDER BY id", "--data", data_dir,
                              "--snapshot", str(lake.v1), "--limit", "2"])
    assert ok.exit_code == 0, ok.output
    assert "n1" in ok.output and "n2" in ok.output and "n3" not in ok.output
    assert f"snapshot {lake.v1}" in ok.output and "truncated" in ok.output
    bad = runner.invoke(main, ["sql", "SELECT * FROM read_text('/etc/passwd')", "--data", data_dir])
    assert bad.exit_code == 1 and "file_access" in bad.output and "Traceback" not in bad.output  # a failure: 1
    missing = runner.invoke(main, ["sql", "SELECT 1", "--data", os.path.join(data_dir, "nope")])
    assert missing.exit_code == 2 and "no catalog" in missing.output and "--data" in missing.output  # usage


def test_semcat_sql_formats_for_programs_and_does_not_fold_when_piped(data_dir):
    """`--format csv|json` for programs; the table, piped (CliRunner is not a terminal), keeps long
    values on one line instead of folding them into rich's default 80 columns."""
    import csv
    import io
    import json

    from mcp_server.cli import main

    cat = cc.Catalog.open(data_dir)
    build_lake(cat)
    cat.close()
    runner = CliRunner()
    sql = "SELECT id, note, NULL AS nothing, repeat('x', 150) AS wide FROM wh.sales.orders ORDER BY id"
    as_csv = runner.invoke(main, ["sql", sql, "--data", data_dir, "--format", "csv"])
    rows = list(csv.reader(io.StringIO(as_csv.output)))
    assert as_csv.exit_code == 0 and rows[0] == ["id", "note", "nothing", "wide"]
    assert rows[1][:3] == ["1", "n1", ""] and rows[1][3] == "x" * 150
    as_json = json.loads(runner.invoke(main, ["sql", sql, "--data", data_dir, "--format", "json"]).output)
    assert [c["name"] for c in as_json["columns"]] == ["id", "note", "nothing", "wide"]
    assert as_json["rows"][0][:3] == [1, "n1", None] and as_json["truncated"] is False
    table = runner.invoke(main, ["sql", sql, "--data", data_dir])
    assert table.exit_code == 0 and "x" * 150 in table.output  # one line, not folded
    bad = runner.invoke(main, ["sql", sql, "--data", data_dir, "--format", "xml"])
    assert bad.exit_code == 2 and "'table', 'csv', 'json'" in bad.output


def test_remote_client_over_http_reads_the_same_rows(wh):
    from mcp_server.http.server import serve_in_thread

    server = serve_in_thread(wh.cat)
    client = cc.connect(server.url)
    try:
        assert ids(cc.open_duckdb(client, snapshot=wh.v1)) == [1, 2, 3]
        local = cc.run_sql(wh.cat, "SELECT d, sum(price) FROM wh.sales.orders GROUP BY d ORDER BY d")
        remote = cc.run_sql(client, "SELECT d, sum(price) FROM wh.sales.orders GROUP BY d ORDER BY d")
        assert remote.rows == local.rows and remote.snapshot == local.snapshot
        with pytest.raises(cc.errors.SqlRefusedError):
            cc.run_sql(client, "SELECT * FROM read_text('/etc/passwd')")
        from mcp_server.cli import main

        result = CliRunner().invoke(main, ["sql", "SELECT count(*) AS n FROM wh.sales.orders", "--data", server.url])
        assert result.exit_code == 0 and "9" in result.output, result.output
    finally:
        client.close()
        server.stop()


def test_table_without_schema_shows_file_columns_and_partition_values(cat):
    loc = os.path.join(cat.warehouse, "raw", "ev", "clicks")
    with cat.transaction() as t:
        t.add("/raw", {"obj_type": "catalog", "properties": {}})
        t.add("/raw/ev", {"obj_type": "namespace", "properties": {}})
        t.add("/raw/ev/clicks", {"obj_type": "table", "location": loc, "partition_by": ["day"]})
        for day, n in (("d1", 2), ("d2", 3)):
            path = os.path.join(loc, f"day={day}", "f.parquet")
            os.makedirs(os.path.dirname(path))
            pq.write_table(pa.table({"n": list(range(n))}), path)
            t.add(f"/raw/ev/clicks/day={day}", {"obj_type": "partition", "day": day})
            t.add(f"/raw/ev/clicks/day={day}/f", {"obj_type": "file", "path": path, "row_count": n}, leaf=True)
    res = cc.run_sql(cat, "SELECT day, count(*) FROM raw.ev.clicks GROUP BY day ORDER BY day")
    assert res.rows == [["d1", 2], ["d2", 3]]
    assert [c.name for c in cc.run_sql(cat, "SELECT * FROM raw.ev.clicks").columns] == ["n", "day"]


def test_a_schema_type_duckdb_cannot_read_fails_only_that_table(wh):
    table = copy.deepcopy(wh.cat.get("/wh/crm/customers").value)  # get() values are read-only
    table["schema"]["columns"][1]["type"] = "geography_v9"
    with wh.cat.transaction() as t:
        t.update("/wh/crm/customers", table)
    with pytest.raises(cc.CatalogError, match="wh.crm.customers"):
        cc.run_sql(wh.cat, "SELECT * FROM wh.crm.customers")
    assert cc.run_sql(wh.cat, "SELECT count(*) FROM wh.sales.orders").rows == [[9]]


def test_timestamp_partition_with_offset_and_hadoop_file_uri(cat):
    loc = os.path.join(cat.warehouse, "wh", "ev", "events")
    path = os.path.join(loc, "batch-1", "e.parquet")
    os.makedirs(os.path.dirname(path))
    pq.write_table(pa.table({"n": [1, 2]}), path)
    with cat.transaction() as t:
        t.add("/wh", {"obj_type": "catalog", "properties": {}})
        t.add("/wh/ev", {"obj_type": "namespace", "properties": {}})
        t.add("/wh/ev/events", Lake._table(loc, [("n", "int"), ("ts", "timestamp")], ["ts"]))
        part = "/wh/ev/events/ts=2025-06-01T10:00:00+02:00"
        t.add(part, {"obj_type": "partition", "ts": "2025-06-01T10:00:00.000000+02:00"})
        t.add(f"{part}/e", {"obj_type": "file", "path": "file:" + path, "row_count": 2}, leaf=True)
    res = cc.run_sql(cat, "SELECT DISTINCT ts FROM wh.ev.events")
    assert res.columns[0].type == "TIMESTAMP" and res.rows == [["2025-06-01T08:00:00"]]
