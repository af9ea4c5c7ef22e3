"""The cryptic variant of the Acme lake (eval/LAKE-cryptic.md): renames, codes, clutter, annotations
carried from the plain lake, names.json, and gold SQL translated so that every public question gives
the same result on both variants.

The cryptic lake is built once per session at --scale small (SEMCAT_EVAL_LAKE_CRYPTIC=DIR reuses one
built by `semcat eval build --variant cryptic --data DIR --scale small`); the plain lake is the session
fixture `lake_dir` (SEMCAT_EVAL_LAKE=DIR)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

import catalog_core as cc
from catalog_core import lake as L
from eval.harness.compare import compare
from eval.harness.questions import load_questions
from eval.harness.translate import TranslateError, translate, translate_questions
from eval.lake import tables as T
from eval.lake.naming import CODED, NAMES_FILE, Naming, load_names, plain_columns, plain_tables

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PUBLIC = os.path.join(ROOT, "eval", "questions", "public.yaml")


# ------------------------------------------------------------------ translate(): no lake needed
NM = Naming.cryptic(7)


def _t(p: str) -> str:
    return NM.tables[p]


def _c(p: str) -> str:
    return NM.columns[p]


def test_translate_tables_qualified_and_unqualified_columns_and_aliases_kept():
    sql = ("SELECT o.store_id, sum(i.net_line_cents) / 100.0 AS net_revenue FROM acme.core.fct_order_items i "
           "JOIN acme.core.fct_orders o ON o.order_id = i.order_id WHERE tax_cents > 0 "
           "GROUP BY o.store_id")
    out = translate(sql, NM)
    assert f"acme.{_t('core.fct_order_items')} AS i" in out and f"acme.{_t('core.fct_orders')} AS o" in out
    assert f"i.{_c('net_line_cents')}" in out and f"o.{_c('order_id')} = i.{_c('order_id')}" in out
    assert f"o.{_c('tax_cents')} > 0" in out  # the unqualified column, resolved to its table
    assert "AS net_revenue" in out and f"o.{_c('store_id')} AS store_id" in out  # output names kept
    for plain in ("fct_order_items", "net_line_cents", "tax_cents"):
        assert plain not in out


def test_translate_codes_in_comparisons_in_lists_case_and_like():
    code = NM.values["status"]
    sql = ("SELECT CASE WHEN status = 'refunded' THEN 'r' ELSE 'x' END AS k, "
           "CASE channel WHEN 'web' THEN 1 ELSE 0 END AS w FROM acme.core.fct_orders "
           "WHERE status <> 'cancelled' AND channel IN ('web', 'app') AND status LIKE '%refunded'")
    out = translate(sql, NM)
    ch = NM.values["channel"]
    assert f"= '{code['refunded']}' THEN 'r'" in out  # the literal compared; the output literal kept
    assert f"<> '{code['cancelled']}'" in out
    assert f"IN ('{ch['web']}', '{ch['app']}')" in out and f"WHEN '{ch['web']}' THEN 1" in out
    like = out.split(" AND ")[-1]
    assert "LIKE" not in like and {code["refunded"], code["partially_refunded"]} <= set(
        like.split("(")[1].rstrip(")").replace("'", "").replace(" ", "").split(","))
    # a literal that is not one of the domain's labels stays as written
    assert "'nope'" in translate("SELECT 1 FROM acme.core.fct_orders WHERE status = 'nope'", NM)


def test_translate_an_alias_named_like_a_column_is_left_alone():
    out = translate("SELECT campaign_id, SUM(clicks) AS clicks FROM acme.core.fct_marketing_spend_daily "
                    "GROUP BY campaign_id ORDER BY clicks DESC LIMIT 1", NM)
    assert out.endswith("ORDER BY clicks DESC LIMIT 1") and f"SUM(fct_marketing_spend_daily.{_c('clicks')})" in out


def test_translate_expressions_and_unknown_names():
    assert translate("fct_orders.status <> 'cancelled'", NM) == \
        f"{_t('core.fct_orders').split('.')[1]}.{_c('status')} <> '{NM.values['status']['cancelled']}'"
    with pytest.raises(TranslateError, match="acme.core.fct_nothing.*not a LAKE.md table"):
        translate("SELECT 1 FROM acme.core.fct_nothing", NM)
    with pytest.raises(TranslateError, match="no_such_column"):
        translate("SELECT no_such_column FROM acme.core.fct_orders", NM)
    plain = "SELECT  status FROM acme.core.fct_orders  WHERE status='x'"
    assert translate(plain, Naming.plain()) == plain  # the identity: byte for byte


def test_translate_literals_of_columns_that_name_tables_and_partitions():
    """The load log's table_name and partition values are written under the variant's names (Naming.row);
    a literal the gold compares with them follows, the same way the build writes them."""
    log, inv, mart = "acme.ops.etl_load_log", "core.fct_inventory_daily", "mart.agg_daily_store_revenue"
    out = translate(f"SELECT MAX(loaded_at_utc) AS last_ok FROM {log} WHERE table_name = '{inv}' "
                    "AND status = 'success'", NM)
    assert f"= '{_t(inv)}'" in out and f"'{inv}'" not in out
    out = translate(f"SELECT status FROM {log} WHERE partition = '2025-03-09/store_id=17' "
                    f"AND table_name IN ('{mart}', 'core.nope')", NM)
    assert f"= '2025-03-09/{_c('store_id')}=17'" in out and f"IN ('{_t(mart)}', 'core.nope')" in out
    out = translate(f"SELECT CASE table_name WHEN '{inv}' THEN 1 ELSE 0 END AS x FROM {log} "
                    "WHERE table_name LIKE 'mart.%' AND partition LIKE '%/store_id=%'", NM)
    assert f"WHEN '{_t(inv)}' THEN 1" in out and f"LIKE '%/{_c('store_id')}=%'" in out
    marts = {t for t in plain_tables() if t.startswith("mart.")}
    in_list = out.split(" IN (")[1].split(")")[0].replace("'", "").replace(" ", "").split(",")
    assert set(in_list) == {_t(t) for t in marts}
    # the literal equals what the build writes into the log for the same plain row
    row = NM.row("ops.etl_load_log", {"table_name": inv, "partition": "2025-03-09/store_id=17"})
    assert row[_c("table_name")] == _t(inv) and row[_c("partition")] == "2025-03-09/" + _c("store_id") + "=17"


def test_the_columns_that_name_tables_come_from_the_load_log_annotation():
    from eval.lake.annotations import LOAD_LOG
    from eval.lake.naming import name_columns

    log = LOAD_LOG["table"].removeprefix("acme.")
    assert name_columns() == {LOAD_LOG["table_column"]: ("table", log), LOAD_LOG["partition_column"]: ("partition", log)}
    # matched by name in gold SQL: no other LAKE.md table has a column of that name
    for col in name_columns():
        assert [t for t, tab in T.TABLES.items() if col in dict(tab.columns)] == [log]


def test_naming_is_deterministic_injective_and_speaks_no_plain_name():
    a, b = Naming.cryptic(7), Naming.cryptic(7)
    assert a == b and Naming.cryptic(8) != a
    assert set(a.tables) == set(plain_tables()) and set(a.columns) == set(plain_columns())
    assert len(set(a.tables.values())) == len(a.tables) and len(set(a.columns.values())) == len(a.columns)
    plain = set(plain_columns()) | {t.split(".")[1] for t in plain_tables()}
    assert not plain & (set(a.columns.values()) | {t.split(".")[1] for t in a.tables.values()})
    codes = [c for dom in a.values.values() for c in dom.values()]
    assert len(codes) == len(set(codes))
    assert a.decode(a.code("home_region", "west")) == "west" == a.decode(a.code("region", "west"))
    with pytest.raises(ValueError, match="has no code"):
        a.code("status", "teleported")


# ------------------------------------------------------------------ the built lake
@pytest.fixture(scope="session")
def cryptic_dir(tmp_path_factory):
    pre = os.environ.get("SEMCAT_EVAL_LAKE_CRYPTIC")
    if pre:
        return pre
    out = str(tmp_path_factory.mktemp("acme-cryptic") / "lake")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "mcp_server.cli", "eval", "build", "--variant", "cryptic", "--data",
                           out, "--scale", "small", "--seed", "7"], env=env, capture_output=True, text=True,
                          timeout=2400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture(scope="session")
def ccats(cryptic_dir):
    from eval.lake import data_dir

    out = {h: cc.Catalog.open(data_dir(cryptic_dir, h)) for h in ("enriched", "stale")}
    yield out
    for c in out.values():
        c.close()


@pytest.fixture(scope="session")
def names(cryptic_dir):
    with open(os.path.join(cryptic_dir, NAMES_FILE), encoding="utf-8") as fh:
        return json.load(fh)


def _tables(cat) -> dict[str, list[str]]:
    """written table name (acme.ns.t) -> its columns, at the latest vid."""
    out = {}
    for o in cat.query(L.tables_query("acme")):
        out[L.name_of(o.path)] = [c["name"] for c in o.value["schema"]["columns"]]
    return out


def test_names_json_is_complete(names, ccats):
    assert names["variant"] == "cryptic" and names["seed"] == 7
    assert set(names["tables"]) == set(plain_tables()) and set(names["columns"]) == set(plain_columns())
    assert set(names["values"]) == {CODED[c] for c in CODED}
    clutter = set(names["clutter"])
    written_tables = {f"acme.{t}" for t in names["tables"].values()}
    written_cols = set(names["columns"].values())
    for h, cat in ccats.items():
        tables = _tables(cat)
        assert set(tables) == written_tables | clutter, h  # every table is a value of the map or clutter
        for t, cols in tables.items():
            assert set(cols) <= written_cols, (h, t, set(cols) - written_cols)


def test_no_plain_name_in_the_catalogs(ccats):
    plain_t = {t.split(".")[1] for t in plain_tables()}
    plain_ns = {t.split(".")[0] for t in plain_tables()}
    plain_c = set(plain_columns())
    for h, cat in ccats.items():
        for t, cols in _tables(cat).items():
            _, ns, name = t.split(".")
            assert ns not in plain_ns and name not in plain_t, (h, t)
            assert not set(cols) & plain_c, (h, t, set(cols) & plain_c)
            assert not any(p in name for p in plain_t), (h, t)  # clutter too: no plain name inside


def test_coded_columns_hold_only_codes_and_the_enum_carries_labels(ccats, cryptic_dir):
    nm = load_names(cryptic_dir)
    cat = ccats["enriched"]
    checked = 0
    for p, t in T.TABLES.items():
        written = nm.full_table(p)
        cols = _tables(cat)[written]
        for c in {c for c, _ in t.columns} | {"region", "home_region"}:
            if c not in CODED or nm.column(c) not in cols:
                continue
            res = cc.run_sql(cat, f"SELECT DISTINCT {nm.column(c)} FROM {written}", limit=1000)
            got = {r[0] for r in res.rows if r[0] is not None}
            allowed = set(nm.values[CODED[c]].values())
            assert got and got <= allowed, (p, c, got - allowed)
            checked += 1
    assert checked >= 15
    from semantic.annotations import read_catalog_annotations

    anns = read_catalog_annotations(cat, "acme")[nm.full_table("core.fct_orders")]
    obj = cat.get(L.table_path(nm.full_table("core.fct_orders")))
    cid = next(c["id"] for c in obj.value["schema"]["columns"] if c["name"] == nm.column("status"))
    by_key = {a.key: a.value for a in anns}
    enum, labels = by_key[f"column.{cid}.enum"], by_key[f"column.{cid}.labels"]
    assert set(enum) == set(labels) and labels[nm.code("status", "refunded")] == "refunded"
    assert "partially_refunded" in labels.values()


def test_at_least_100_clutter_tables_each_deprecated_or_not_for_reporting_in_both_histories(names, ccats):
    from semantic.annotations import read_catalog_annotations

    clutter = names["clutter"]
    assert len(clutter) >= 100
    assert {v["family"] for v in clutter.values()} >= {"backup", "staging", "extract", "test", "v2_mart", "archive"}
    for h, cat in ccats.items():
        anns = read_catalog_annotations(cat, "acme")
        real = {f"acme.{t}" for t in names["tables"].values()}
        for t, info in clutter.items():
            by_field = {a.field: a.value for a in anns.get(t, [])}
            assert "deprecated" in by_field or "not_for_reporting" in by_field, (h, t)
            target = (by_field.get("deprecated") or {}).get("replaced_by") or \
                (by_field.get("not_for_reporting") or {}).get("use_instead", [None])[0]
            assert target == info["shadows"] and target in real, (h, t, target)


def test_annotations_carried_from_the_plain_lake(lake_dir, cats, ccats, cryptic_dir):
    """Same annotations (count and keys, under the names' translation; `labels` is the cryptic lake's
    addition) and the same stale manifest (count, kinds, keys) as the plain lake."""
    from semantic.annotations import read_catalog_annotations

    nm = load_names(cryptic_dir)
    clutter = set(json.load(open(os.path.join(cryptic_dir, NAMES_FILE)))["clutter"])
    for h in ("enriched", "stale"):
        plain = read_catalog_annotations(cats[h], "acme")
        cryp = read_catalog_annotations(ccats[h], "acme")
        p_keys = {(nm.full_table(t), a.key.split(".", 1)[0], a.field) for t, anns in plain.items() for a in anns
                  if a.kind != "verified_query"}
        c_keys = {(t, a.key.split(".", 1)[0], a.field) for t, anns in cryp.items() for a in anns
                  if t not in clutter and a.field != "labels" and a.kind != "verified_query"}
        assert p_keys == c_keys, h
        p_n = sum(len(v) for v in plain.values())
        c_n = sum(len([a for a in v if a.field != "labels"]) for t, v in cryp.items() if t not in clutter)
        assert p_n == c_n, h
    pm = json.load(open(os.path.join(lake_dir, "stale_manifest.json")))["stale"]
    cm = json.load(open(os.path.join(cryptic_dir, "stale_manifest.json")))["stale"]
    assert sorted(m["kind"] for m in pm) == sorted(m["kind"] for m in cm)
    pk = sorted((nm.full_table(m["table"]), m["kind"], m["key"].split(".")[0]) for m in pm)
    ck = sorted((m["table"], m["kind"], m["key"].split(".")[0]) for m in cm)
    assert pk == ck


@pytest.mark.timeout(1800)
def test_every_public_gold_gives_the_same_result_on_both_variants(lake_dir, cats, ccats, cryptic_dir):
    """On the enriched history's latest vid (the two histories hold the same data files)."""
    nm = load_names(cryptic_dir)
    qs = [q for q in load_questions(PUBLIC) if q.gold_sql]
    cqs = translate_questions(qs, nm)
    assert len(qs) >= 100
    bad = []
    for h in ("enriched",):
        pv, cv = cats[h].latest_vid, ccats[h].latest_vid
        # one variant after the other: the SQL workers keep each lake's database instead of switching
        plain = [cc.run_sql(cats[h], q.gold_sql, snapshot=pv, limit=10_000) for q in qs]
        coded = [cc.run_sql(ccats[h], cq.gold_sql, snapshot=cv, limit=10_000) for cq in cqs]
        for q, a, b in zip(qs, plain, coded, strict=True):
            c = compare(a, b, order_matters=q.order_matters, decimals=q.decimals, decode=_decoder(nm))
            if not c.correct or len(a.rows) != len(b.rows):
                bad.append(f"{h} {q.id}: {c.reason}")
    assert not bad, "\n".join(bad)


def _decoder(nm: Naming):
    """The scorer's decode (codes -> labels) plus written table names -> plain ones: the scorer compares
    two results of one variant; comparing across variants, a table name a gold returns differs too."""
    import re

    back = {w: p for p, w in nm.tables.items()}
    cols = {w: p for p, w in nm.columns.items()}

    def decode(v: object) -> object:
        v = nm.decode(v)
        if not isinstance(v, str):
            return v
        v = re.sub(r"/(\w+)=", lambda m: f"/{cols.get(m.group(1), m.group(1))}=", v)  # a partition's column
        return back.get(v, v)
    return decode


# questions a held-out set asks of the load log (issue 38: "when did the daily inventory table last load
# successfully?" had gold None on the variant): their gold must give the same non-empty rows on both
LOAD_LOG_GOLDS = {
    "inventory_last_success": "SELECT MAX(loaded_at_utc) AS last_ok FROM acme.ops.etl_load_log "
                              "WHERE table_name = 'core.fct_inventory_daily' AND status = 'success'",
    "failed_or_partial_tables": "SELECT table_name, partition, status FROM acme.ops.etl_load_log "
                                "WHERE status IN ('failed', 'partial') ORDER BY 1, 2, 3",
    "store_17_partial": "SELECT status, attempt FROM acme.ops.etl_load_log WHERE partition = '2025-03-09/store_id=17' "
                        "AND table_name IN ('mart.agg_daily_store_revenue') ORDER BY attempt",
    "mart_loads": "SELECT COUNT(*) AS n FROM acme.ops.etl_load_log WHERE table_name LIKE 'mart.%' "
                  "AND status = 'success'",
    "store_level_loads": "SELECT COUNT(*) AS n FROM acme.ops.etl_load_log WHERE partition LIKE '%/store_id=%'",
}


def test_load_log_golds_give_the_same_rows_on_both_variants(lake_dir, cats, ccats, cryptic_dir):
    nm = load_names(cryptic_dir)
    pv, cv = cats["enriched"].latest_vid, ccats["enriched"].latest_vid
    bad = []
    for name, sql in LOAD_LOG_GOLDS.items():
        a = cc.run_sql(cats["enriched"], sql, snapshot=pv, limit=10_000)
        b = cc.run_sql(ccats["enriched"], translate(sql, nm), snapshot=cv, limit=10_000)
        assert a.rows and a.rows[0][0] not in (None, 0), (name, a.rows[:3])  # the question has an answer
        c = compare(a, b, order_matters=False, decimals=2, decode=_decoder(nm))  # ORDER BY a name differs
        if not c.correct or len(a.rows) != len(b.rows):
            bad.append(f"{name}: {c.reason} (plain {a.rows[:2]}, cryptic {b.rows[:2]})")
    assert not bad, "\n".join(bad)


def test_eval_run_matches_stale_annotations_under_the_variants_names(lake_dir, cats, ccats, cryptic_dir):
    """`touches_stale` of a cryptic run is computed on the gold under the variant's names: the two lakes
    hold the same stale set, so the same public questions touch it (before: none did on the variant)."""
    from eval.harness.runner import combine_records, open_lake

    qs = [q for q in load_questions(PUBLIC) if q.gold_sql]
    touched = {}
    for name, root, cs in (("plain", lake_dir, cats), ("cryptic", cryptic_dir, ccats)):
        lake = open_lake(root, cs, {"enriched", "stale"})
        lqs = translate_questions(qs, lake.naming)
        recs = {"stale": [{"correct": True, "outcome": "correct", "reason": "", "lake": name, "vid": 0, "sql": ""}
                          for _ in lqs]}
        out = combine_records([lqs], ["stale"], [lake], [recs])
        touched[name] = {q.id for r, q in zip(out, qs, strict=True) if r["touches_stale"]}
    assert len(touched["plain"]) >= 50
    assert touched["cryptic"] == touched["plain"]


def test_the_stale_events_subset_is_the_same_on_both_variants(lake_dir, cats, ccats, cryptic_dir):
    """The demo's rule (eval run --subset stale-events:K) picks the same public questions on the variant:
    its manifest and annotations are the plain lake's under other names, and the gold is translated."""
    from eval.harness.runner import open_lake, subset_questions

    qs = load_questions(PUBLIC)
    got = {}
    for name, root, cs in (("plain", lake_dir, cats), ("cryptic", cryptic_dir, ccats)):
        lake = open_lake(root, cs, {"enriched", "stale"})
        got[name] = {k: [q.id for q in subset_questions(lake, qs, k)[0]] for k in (1, 2)}
    assert got["plain"][1] and got["cryptic"] == got["plain"]


# ------------------------------------------------------------------ no leaks (issue 49, item 1)
def _plain_name_re(world: str = "acme"):
    """Whole-word plain identifiers that no cryptic text may hold. Acme: every LAKE.md table (`ns.table` and
    its bare name) and every snake_case column name. (Single-word columns such as `status` or `region` are also
    prose words, and value labels are served on purpose by each coded column's `labels`.) TPC-DS
    (eval/tpcds/schema.py): every table as `ns.table`, its bare name when snake_case (`item` or `store` are
    prose words too) and every column name (all snake_case)."""
    import re

    if world == "tpcds":
        from eval.tpcds.naming import schema

        sch = schema()
        words = set(sch) | {t.split(".")[1] for t in sch if "_" in t.split(".")[1]} | \
            {c for cols in sch.values() for c in cols if "_" in c}
    else:
        words = {t.split(".")[1] for t in plain_tables()} | {c for c in plain_columns() if "_" in c}
    alt = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{alt})(?![A-Za-z0-9_])")


def test_the_tpcds_leak_pattern_finds_plain_names_and_only_them():
    """The scan's pattern for the TPC-DS world catches dotted and snake_case table names and every column, not
    prose words that are also bare table names, nor any written name of the cryptic variant."""
    from eval.tpcds.naming import naming

    pat = _plain_name_re("tpcds")
    text = "relate sales.store_sales -> dim.item (ship_mode) on ss_item_sk; reload web_returns.wr_return_amt"
    assert [m.group(0) for m in pat.finditer(text)] == ["sales.store_sales", "dim.item", "ship_mode", "ss_item_sk",
                                                        "web_returns", "wr_return_amt"]
    assert not pat.search("one row per item; the store's customer address; inventory by warehouse")
    nm = naming("cryptic")
    written = " ".join(list(nm.tables.values()) + list(nm.columns.values()) + [nm.text(text)])
    assert not pat.search(written), pat.search(written)


@pytest.fixture(params=["acme", "tpcds"])
def cryptic_world(request):
    """A cryptic world's histories: (world, its catalogs by history, its names.json). Acme: the lake of this
    module (enriched, stale); TPC-DS: tests/eval/conftest.py's `tpcds_cryptic` (enriched, stale, reviewed)."""
    if request.param == "acme":
        return "acme", request.getfixturevalue("ccats"), request.getfixturevalue("names")
    root = request.getfixturevalue("tpcds_cryptic")
    with open(os.path.join(root, NAMES_FILE), encoding="utf-8") as fh:
        names_ = json.load(fh)
    return "tpcds", request.getfixturevalue("tpcds_ccats"), names_ | {"_root": root}


# semcat's own vocabulary that is also a plain column name (the load log's `row_count`): a statistics key
# (`"row_count": 6599`) is the catalog's format, not the lake's name; as a key of an object (a column's
# statistics) or anywhere else it is still scanned
_OWN_KEYS = re.compile(r'\\?"row_count\\?":\s*(?![\s{\[])')  # also inside JSON text (`\"row_count\": 5`)


def _leaks(where: str, text: str, pattern, out: list[str]) -> None:
    text = _OWN_KEYS.sub("", text)
    for m in pattern.finditer(text):
        out.append(f"{where}: {m.group(0)!r} in ...{text[max(0, m.start() - 80):m.end() + 80]}...")


@pytest.mark.slow  # a cryptic world (Acme or TPC-DS, built with Spark unless SEMCAT_EVAL_*_CRYPTIC)
def test_no_plain_name_in_any_text_the_cryptic_catalogs_hold(cryptic_world):
    """Every commit (message, author, meta, paths), snapshot, branch and every version of every object the
    commits wrote (annotations, tables, lineage with its job names, files) of every cryptic catalog of both
    worlds (Acme, TPC-DS): no plain table or column name. Before the fix: 101 commit messages named plain
    tables (`relate core.fct_orders -> core.dim_store (store)`, `build agg_weekly_category_sales from the load
    of ...`)."""
    world, ccats, _ = cryptic_world
    pat = _plain_name_re(world)
    leaks: list[str] = []
    for h, cat in ccats.items():
        paths: set[str] = set()
        for c in cat.commits(since=None):
            _leaks(f"{h} commit {c.vid}", json.dumps(c.to_dict(), default=str), pat, leaks)
            paths.update(c.paths)
        for s in cat.snapshots():
            _leaks(f"{h} snapshot", json.dumps(s.to_dict()), pat, leaks)
        for b in cat.branches():
            _leaks(f"{h} branch", json.dumps(b.to_dict()), pat, leaks)
        for p in sorted(paths):
            for v in cat.history(p):
                _leaks(f"{h} {p}@{v.vid}", json.dumps(v.to_dict(), default=str), pat, leaks)
    assert not leaks, f"{len(leaks)} plain names in the cryptic catalogs, e.g.\n" + "\n".join(leaks[:25])


class _Scan:
    """Calls tools through a real MCP client, pages each to its end, and collects plain names in the texts."""

    def __init__(self, client, pat, leaks: list[str]):
        self.client, self.pat, self.leaks, self.calls = client, pat, leaks, 0

    async def call(self, name: str, args: dict) -> dict:
        cursor, first = None, None
        while True:
            res = await self.client.call_tool(name, {**args, **({"cursor": cursor} if cursor else {})})
            self.calls += 1
            _leaks(f"{name}({args})", "\n".join(getattr(c, "text", "") for c in res.content), self.pat, self.leaks)
            body = res.structured_content or {}
            first = first or body
            cursor = body.get("next_cursor") if body.get("truncated") else None
            if not cursor:
                return first

    async def resources_and_prompts(self) -> None:
        for r in (await self.client.list_resources()).resources:
            for part in (await self.client.read_resource(r.uri)).contents:
                _leaks(f"resource {r.uri}", getattr(part, "text", "") or "", self.pat, self.leaks)
        for p in (await self.client.list_prompts()).prompts:
            if any(a.required for a in p.arguments or []):
                continue
            for msg in (await self.client.get_prompt(p.name, {})).messages:
                _leaks(f"prompt {p.name}", getattr(msg.content, "text", "") or "", self.pat, self.leaks)


@pytest.mark.slow  # a cryptic world (Acme or TPC-DS, built with Spark unless SEMCAT_EVAL_*_CRYPTIC)
def test_no_plain_name_in_any_tool_output_of_the_cryptic_lake(cryptic_world):
    """Every read tool of the server every condition derives from (all shown: annotations and findings), over
    each history's cryptic catalog, paged to the end: search, every table described in full, joins, metrics
    (listed and computed), the commit log, the diff since the first commit, staleness findings, lineage both
    ways, the load log's values, an SQL error, a did-you-mean, resources and prompts. No plain table or
    column name in any of them."""
    import anyio
    from mcp import Client

    from eval.harness.conditions import condition_server
    from eval.lake import D0

    world, ccats, names = cryptic_world
    pat = _plain_name_re(world)
    nm = Naming.from_json(names)
    leaks: list[str] = []
    real = sorted(f"{nm.catalog}.{t}" for t in names["tables"].values())
    if world == "acme":
        now = D0.timestamp()
        log = nm.full_table("ops.etl_load_log")
        values = [(log, nm.column(c)) for c in ("table_name", "partition", "note", "status")]
        joins = [("core.fct_orders", "core.dim_store"), ("core.fct_refunds", "core.fct_orders"),
                 ("core.fct_web_sessions", "core.dim_customer")]
    else:
        import datetime as dt

        with open(os.path.join(names["_root"], "lake.json"), encoding="utf-8") as fh:
            now = dt.datetime.fromisoformat(json.load(fh)["d0"]).timestamp()
        log = nm.full_table("sales.store_sales")
        values = [(nm.full_table("dim.ship_mode"), nm.column("sm_type")), (nm.full_table("dim.item"), nm.column("i_category")),
                  (nm.full_table("dim.reason"), nm.column("r_reason_desc"))]
        joins = [("sales.store_sales", "dim.store"), ("sales.store_returns_v2", "sales.store_sales"),
                 ("sales.catalog_sales", "dim.ship_mode")]

    async def scan(server) -> int:
        async with Client(server) as client:
            sc = _Scan(client, pat, leaks)
            assert (await sc.call("search_tables", {"query": "", "limit": 50})).get("tables")
            for t in sorted(set(real) | set(names["clutter"])):
                await sc.call("describe_table", {"table": t, "detail": "full", "limit": 200})
            for t in real:
                for d in ("upstream", "downstream"):
                    await sc.call("get_lineage", {"table": t, "direction": d, "depth": 3, "limit": 200})
            for a, b in joins:
                await sc.call("find_join_path", {"from_table": nm.full_table(a), "to_table": nm.full_table(b)})
            for m in (await sc.call("list_metrics", {"limit": 100})).get("metrics", []):
                await sc.call("query_metric", {"metric": f"{m['table']}.{m['name']}", "limit": 5})
            await sc.call("list_snapshots", {"limit": 200})
            await sc.call("diff_snapshots", {"from_snapshot": 1, "limit": 500})
            await sc.call("check_staleness", {"depth": "metadata", "limit": 200})
            for t, c in values:
                await sc.call("get_column_values", {"table": t, "column": c, "limit": 200})
            await sc.call("query_catalog", {"query": f'/[obj_id = "{nm.catalog}"]/*/*', "limit": 200})
            await sc.call("run_sql", {"sql": f"SELECT * FROM {log} LIMIT 5"})
            await sc.call("run_sql", {"sql": f"SELECT no_such_column FROM {log}"})  # an error message
            await sc.call("describe_table", {"table": log + "x"})  # a did-you-mean
            await sc.resources_and_prompts()
            return sc.calls

    n = sum(anyio.run(scan, condition_server(cat, (False, False), now=now)) for cat in ccats.values())
    assert n > 2 * len(names["clutter"])  # every table was described, in both histories
    assert not leaks, f"{len(leaks)} plain names in tool outputs, e.g.\n" + "\n".join(leaks[:25])
