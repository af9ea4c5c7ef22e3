"""A small retail lake for the join / metric / profiling tests: real Parquet files written with
pyarrow under a warehouse directory and committed through any `CatalogAPI` (embedded or HTTP) with
per-file and table statistics, as the Spark bridge would.

Catalog `acme`, namespace `core` (keys in KEYS, inclusion dependencies in INCLUSIONS):

    dim_date          one row per date 2023-01-29..2026-01-31, NRF 4-5-4 fiscal calendar
    dim_store         stores 0..5 (0 = online)
    map_store_code    store_code -> store_id
    dim_product       20 products
    dim_customer      SCD2: customers 1..30, seven of them with two versions (is_current)
    fct_orders        400 orders 2024-01-02..2025-03-09, some anonymous, some cancelled
    fct_order_items   1-3 lines per order
    fct_payments      1-2 attempts per order (captured / failed)
    legacy_sales      daily sales by store_code (no store_id)
    etl_load_log      related to nothing
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import random
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

CATALOG, NS = "acme", "core"


def T(name: str) -> str:
    return f"{CATALOG}.{NS}.{name}"


KEYS = {  # every minimal unique column set that is a key by design (first: the grain)
    "dim_date": [("date",)],
    "dim_store": [("store_id",), ("store_code",)],
    "map_store_code": [("store_code",), ("store_id",)],  # one code per store, by construction
    "dim_product": [("product_id",), ("sku",)],
    "dim_customer": [("customer_sk",)],
    "fct_orders": [("order_id",)],
    "fct_order_items": [("order_id", "line_no")],
    "fct_payments": [("payment_id",)],
    "legacy_sales": [("sale_date", "store_code")],
    "etl_load_log": [("table_name",)],
}
INCLUSIONS = {  # (from table, from column, to table, to column): many-to-one by design
    ("fct_order_items", "order_id", "fct_orders", "order_id"),
    ("fct_order_items", "product_id", "dim_product", "product_id"),
    ("fct_order_items", "order_date_local", "dim_date", "date"),
    ("fct_orders", "store_id", "dim_store", "store_id"),
    ("fct_orders", "order_date_local", "dim_date", "date"),
    ("fct_payments", "order_id", "fct_orders", "order_id"),
    ("map_store_code", "store_id", "dim_store", "store_id"),
    ("map_store_code", "store_code", "dim_store", "store_code"),
    ("legacy_sales", "store_code", "map_store_code", "store_code"),
    ("legacy_sales", "sale_date", "dim_date", "date"),
    # map_store_code covers every store once, so these hold by design too
    ("dim_store", "store_id", "map_store_code", "store_id"),
    ("dim_store", "store_code", "map_store_code", "store_code"),
}


# ---------------------------------------------------------------- the fiscal calendar

def fiscal_year_start(year: int) -> dt.date:
    """NRF: the Sunday nearest February 1."""
    feb1 = dt.date(year, 2, 1)
    back = (feb1.weekday() + 1) % 7  # days since the last Sunday
    return feb1 - dt.timedelta(days=back) if back <= 3 else feb1 + dt.timedelta(days=7 - back)


_PERIOD_OF_WEEK = [p for p, n in zip(range(1, 13), [4, 5, 4] * 4, strict=True) for _ in range(n)]


def fiscal(day: dt.date) -> tuple[int, int, int, int]:
    """(fiscal_year, fiscal_quarter, fiscal_period, fiscal_week) of a date, NRF 4-5-4."""
    year = day.year if day >= fiscal_year_start(day.year) else day.year - 1
    week = (day - fiscal_year_start(year)).days // 7 + 1
    period = _PERIOD_OF_WEEK[week - 1] if week <= 52 else 12  # week 53 belongs to period 12
    return year, (period - 1) // 3 + 1, period, week


# ---------------------------------------------------------------- writing tables

_ARROW = {"int": pa.int32(), "long": pa.int64(), "string": pa.string(), "date": pa.date32(),
          "timestamp": pa.timestamp("us"), "boolean": pa.bool_(), "double": pa.float64()}


def _stat(v: Any) -> Any:
    return v.isoformat(sep=" ") if isinstance(v, dt.datetime) else v.isoformat() if isinstance(v, dt.date) else v


class LakeWriter:
    def __init__(self, cat: Any, warehouse: str) -> None:
        self.cat, self.warehouse = cat, warehouse
        self.schemas: dict[str, list[tuple[str, str]]] = {}

    def location(self, table: str) -> str:
        return os.path.join(self.warehouse, CATALOG, NS, table)

    def create(self, tables: dict[str, list[tuple[str, str]]], time: float | None = None) -> int:
        with self.cat.transaction(author="test", message="create tables", time=time) as t:
            if self.cat.get(f"/{CATALOG}") is None:
                t.add(f"/{CATALOG}", {"obj_type": "catalog", "properties": {}})
                t.add(f"/{CATALOG}/{NS}", {"obj_type": "namespace", "properties": {}})
            for name, schema in tables.items():
                self.schemas[name] = schema
                t.add(f"/{CATALOG}/{NS}/{name}", {
                    "obj_type": "table", "location": self.location(name), "format": "parquet",
                    "schema": {"schema_id": 0, "columns": [{"id": i + 1, "name": n, "type": ty, "nullable": True}
                                                           for i, (n, ty) in enumerate(schema)]},
                    "partition_by": [], "properties": {},
                    "stats": {"row_count": 0, "file_count": 0, "size_bytes": 0, "columns": {}}})
        return t.vid

    def append(self, name: str, rows: list[dict[str, Any]], chunks: int = 2, time: float | None = None) -> int:
        """Write `rows` as `chunks` Parquet files and commit them with file and table stats."""
        schema = self.schemas[name]
        arrow_schema = pa.schema([(n, _ARROW[ty]) for n, ty in schema])
        size = max(1, -(-len(rows) // chunks))
        files = []
        os.makedirs(self.location(name), exist_ok=True)
        for i in range(0, len(rows), size):
            part = rows[i:i + size]
            table = pa.Table.from_pylist(part, schema=arrow_schema)
            fid = f"f{len(os.listdir(self.location(name))):04d}"
            path = os.path.join(self.location(name), fid + ".parquet")
            pq.write_table(table, path)
            cols = {}
            for n, _ in schema:
                arr = table.column(n)
                mm = pc.min_max(arr).as_py()
                cols[n] = {"min": _stat(mm["min"]), "max": _stat(mm["max"]), "null_count": arr.null_count}
            files.append((fid, path, len(part), os.path.getsize(path), cols))
        with self.cat.transaction(author="etl", message=f"load {name}", time=time) as t:
            tpath = f"/{CATALOG}/{NS}/{name}"
            col_delta: dict[str, Any] = {}
            for fid, path, n, nbytes, cols in files:
                t.add(f"{tpath}/{fid}", {"obj_type": "file", "path": path, "format": "parquet", "row_count": n,
                                         "size_bytes": nbytes, "columns": cols}, leaf=True)
                for c, s in cols.items():
                    d = col_delta.setdefault(c, {"null_count": 0})
                    d["null_count"] += s["null_count"]
                    for op in ("min", "max"):
                        if s[op] is not None:
                            cur = d.get(op)
                            d[op] = s[op] if cur is None else (min if op == "min" else max)(cur, s[op])
            stats = {"row_count": {"op": "+", "val": sum(f[2] for f in files)},
                     "file_count": {"op": "+", "val": len(files)},
                     "size_bytes": {"op": "+", "val": sum(f[3] for f in files)},
                     "columns": {c: {"null_count": {"op": "+", "val": d["null_count"]},
                                     **{op: {"op": op, "val": d[op]} for op in ("min", "max") if d.get(op) is not None}}
                                 for c, d in col_delta.items()},
                     "last_data_commit": {"vid": {"op": "commit_vid", "val": 0}, "time": {"op": "commit_time", "val": 0}}}
            t.merge(tpath, {"stats": stats})
        return t.vid


# ---------------------------------------------------------------- the lake

SCHEMAS: dict[str, list[tuple[str, str]]] = {
    "dim_date": [("date", "date"), ("day_of_week", "string"), ("calendar_year", "int"), ("calendar_month", "int"),
                 ("fiscal_year", "int"), ("fiscal_quarter", "int"), ("fiscal_period", "int"),
                 ("fiscal_week", "int"), ("is_weekend", "boolean")],
    "dim_store": [("store_id", "int"), ("store_code", "string"), ("store_name", "string"), ("region", "string"),
                  ("format", "string")],
    "map_store_code": [("store_code", "string"), ("store_id", "int")],
    "dim_product": [("product_id", "int"), ("sku", "string"), ("category", "string"),
                    ("list_price_cents", "long")],
    "dim_customer": [("customer_sk", "long"), ("customer_id", "long"), ("loyalty_tier", "string"),
                     ("home_region", "string"), ("is_current", "boolean")],
    "fct_orders": [("order_id", "long"), ("customer_id", "long"), ("store_id", "int"), ("channel", "string"),
                   ("status", "string"), ("order_ts_utc", "timestamp"), ("order_date_local", "date"),
                   ("gross_cents", "long")],
    "fct_order_items": [("order_id", "long"), ("line_no", "int"), ("product_id", "int"), ("quantity", "int"),
                        ("unit_price_cents", "long"), ("net_line_cents", "long"), ("order_date_local", "date")],
    "fct_payments": [("payment_id", "long"), ("order_id", "long"), ("attempt_no", "int"), ("status", "string"),
                     ("amount_cents", "long")],
    "legacy_sales": [("sale_date", "date"), ("store_code", "string"), ("gross_sales_cents", "long"),
                     ("txn_count", "int")],
    "etl_load_log": [("table_name", "string"), ("status", "string"), ("row_count", "long")],
}

DIM_DATE_FIRST, DIM_DATE_LAST = dt.date(2023, 1, 29), dt.date(2026, 1, 31)
REGIONS = ["online", "northeast", "southeast", "midwest", "west", "west"]
CHANNELS = ["web", "app", "store", "marketplace"]
STATUSES = ["placed", "shipped", "delivered", "delivered", "delivered", "cancelled", "refunded"]
TIERS = ["none", "silver", "gold", "platinum"]


def rows(seed: int = 7) -> dict[str, list[dict[str, Any]]]:
    rnd = random.Random(seed)
    out: dict[str, list[dict[str, Any]]] = {}
    dates = []
    d = DIM_DATE_FIRST
    while d <= DIM_DATE_LAST:
        fy, fq, fp, fw = fiscal(d)
        dates.append({"date": d, "day_of_week": d.strftime("%a"), "calendar_year": d.year,
                      "calendar_month": d.month, "fiscal_year": fy, "fiscal_quarter": fq, "fiscal_period": fp,
                      "fiscal_week": fw, "is_weekend": d.weekday() >= 5})
        d += dt.timedelta(days=1)
    out["dim_date"] = dates
    out["dim_store"] = [{"store_id": i, "store_code": f"S-{i:03d}", "store_name": f"Store {i}" if i else "Online",
                         "region": REGIONS[i], "format": "online" if i == 0 else ("mall" if i % 2 else "street")}
                        for i in range(6)]
    out["map_store_code"] = [{"store_code": f"S-{i:03d}", "store_id": i} for i in range(6)]
    out["dim_product"] = [{"product_id": p, "sku": f"SKU-{p:05d}", "category": ["apparel", "footwear", "camping"][p % 3],
                           "list_price_cents": 1000 + 250 * p} for p in range(1, 21)]
    custs = []
    sk = 1000
    for c in range(1, 31):
        versions = 2 if c % 4 == 0 else 1
        for v in range(versions):
            sk += 1
            custs.append({"customer_sk": sk, "customer_id": c, "loyalty_tier": TIERS[(c + v) % 4],
                          "home_region": REGIONS[1 + c % 4], "is_current": v == versions - 1})
    out["dim_customer"] = custs
    orders, items, pays = [], [], []
    start = dt.date(2024, 1, 2)
    span = (dt.date(2025, 3, 9) - start).days
    pay_id = 90000
    for oid in range(1, 401):
        day = start + dt.timedelta(days=rnd.randrange(span + 1))
        store = rnd.randrange(6)
        orders.append({"order_id": oid, "customer_id": None if rnd.random() < 0.15 else rnd.randrange(1, 31),
                       "store_id": store, "channel": "store" if store else rnd.choice(["web", "app", "marketplace"]),
                       "status": rnd.choice(STATUSES),
                       "order_ts_utc": dt.datetime.combine(day, dt.time(rnd.randrange(24), rnd.randrange(60))),
                       "order_date_local": day, "gross_cents": 0})
        gross = 0
        for line in range(1, rnd.randrange(1, 4) + 1):
            pid = rnd.randrange(1, 21)
            qty = rnd.randrange(1, 5)
            price = 1000 + 250 * pid
            disc = rnd.choice([0, 0, 100, 500])
            items.append({"order_id": oid, "line_no": line, "product_id": pid, "quantity": qty,
                          "unit_price_cents": price, "net_line_cents": qty * price - disc, "order_date_local": day})
            gross += qty * price
        orders[-1]["gross_cents"] = gross
        for attempt in range(1, rnd.randrange(1, 3) + 1):
            pay_id += 1
            pays.append({"payment_id": pay_id, "order_id": oid, "attempt_no": attempt,
                         "status": "failed" if attempt == 1 and rnd.random() < 0.3 else "captured",
                         "amount_cents": gross})
    out["fct_orders"], out["fct_order_items"], out["fct_payments"] = orders, items, pays
    legacy = []
    d = dt.date(2024, 1, 2)
    for _ in range(40):
        for s in (1, 2, 3):
            legacy.append({"sale_date": d, "store_code": f"S-{s:03d}", "gross_sales_cents": rnd.randrange(10_000, 90_000),
                           "txn_count": rnd.randrange(5, 50)})
        d += dt.timedelta(days=1)
    out["legacy_sales"] = legacy
    out["etl_load_log"] = [{"table_name": f"core.{t}", "status": "success", "row_count": len(out[t])}
                           for t in sorted(out)]
    return out


def build(cat: Any, warehouse: str) -> LakeWriter:
    """Create and load every table (one commit to create, one per table to load)."""
    w = LakeWriter(cat, warehouse)
    w.create(SCHEMAS)
    for name, data in rows().items():
        w.append(name, data)
    return w


def declare(cat: Any) -> int:
    """The canonical relationships of the lake (and one non-canonical shortcut); returns the last vid."""
    from semantic import relate

    relate(cat, T("fct_order_items"), T("fct_orders"), on=[("order_id", "order_id")], author="alice")
    relate(cat, T("fct_order_items"), T("dim_product"), on=[("product_id", "product_id")], author="alice")
    relate(cat, T("fct_orders"), T("dim_store"), on=[("store_id", "store_id")], author="alice")
    relate(cat, T("fct_orders"), T("dim_customer"), on=[("customer_id", "customer_id")], condition="is_current",
           author="alice")
    relate(cat, T("fct_orders"), T("dim_date"), on=[("order_date_local", "date")], author="alice")
    relate(cat, T("fct_payments"), T("fct_orders"), on=[("order_id", "order_id")], author="alice")
    relate(cat, T("legacy_sales"), T("map_store_code"), on=[("store_code", "store_code")], author="alice")
    relate(cat, T("map_store_code"), T("dim_store"), on=[("store_id", "store_id")], author="alice")
    return relate(cat, T("legacy_sales"), T("dim_store"), on=[("store_code", "store_code")], canonical=False,
                  author="bob", source="agent", confidence=0.6)


# ---------------------------------------------------------------- backends

BACKENDS = ["embedded", "http"]


@contextlib.contextmanager
def backend(kind: str, data_dir: str) -> Iterator[Any]:
    """The embedded catalog, or an HTTP client of a real uvicorn server over the same engine."""
    import catalog_core as cc

    engine = cc.Catalog.open(data_dir)
    try:
        if kind == "embedded":
            yield engine
        else:
            from mcp_server.http.server import serve_in_thread

            server = serve_in_thread(engine)
            client = cc.connect(server.url)
            try:
                yield client
            finally:
                client.close()
                server.stop()
    finally:
        engine.close()


@dataclasses.dataclass
class Shop:
    cat: Any
    writer: LakeWriter
    vid_built: int
    vid_related: int


@contextlib.contextmanager
def shop(kind: str, base: str, related: bool = True) -> Iterator[Shop]:
    with backend(kind, os.path.join(base, "data")) as cat:
        w = build(cat, os.path.join(base, "wh"))
        built = cat.latest_vid
        yield Shop(cat, w, built, declare(cat) if related else built)
