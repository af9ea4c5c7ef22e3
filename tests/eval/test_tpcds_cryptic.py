"""The cryptic variant of the TPC-DS world (issue 49, Deliver 3: both variants; eval/tpcds/naming.py,
eval/tpcds/clutter.py, eval/LAKE-cryptic.md): names, codes, clutter, names.json, and the public questions'
gold SQL translated so that every gold gives the same answer on both variants.

Default tier (no world): the naming's invariants, the schema it renames covers every name the world's
annotations and changes use, and every gold of eval/questions/tpcds.yaml translates. Slow tier: both worlds
(tests/eval/conftest.py's `tpcds_world` and `tpcds_cryptic`: SEMCAT_EVAL_TPCDS / SEMCAT_EVAL_TPCDS_CRYPTIC
reuse built ones). The leak scans (every text of the catalogs, every tool output) are tests/eval/test_cryptic.py's,
parametrized over both worlds."""

from __future__ import annotations

import json
import os

import pytest

import catalog_core as cc
from catalog_core import lake as L
from eval.harness.compare import compare
from eval.harness.questions import load_questions
from eval.harness.translate import translate, translate_questions
from eval.lake.naming import NAMES_FILE, Naming, load_names
from eval.tpcds import docs as D
from eval.tpcds import world as W
from eval.tpcds.naming import CODED, DOMAINS, naming, schema
from eval.tpcds.schema import COLUMNS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILE = os.path.join(ROOT, "eval", "questions", "tpcds.yaml")
NM = naming("cryptic")


# ------------------------------------------------------------------ no world needed
def test_naming_is_deterministic_injective_and_speaks_no_plain_name():
    assert naming("cryptic") == NM and naming("cryptic", 50) != NM and naming("plain").identity
    sch = schema()
    assert set(NM.tables) == set(sch) and set(NM.columns) == {c for cols in sch.values() for c in cols}
    assert len(set(NM.tables.values())) == len(NM.tables) and len(set(NM.columns.values())) == len(NM.columns)
    plain = set(NM.columns) | {t.split(".")[1] for t in sch} | {t.split(".")[0] for t in sch}
    written = set(NM.columns.values()) | {t.split(".")[1] for t in NM.tables.values()} | set(NM.namespaces.values())
    assert not plain & written
    codes = [c for dom in NM.values.values() for c in dom.values()]
    assert len(codes) == len(set(codes)) and not set(codes) & {lab for labs in DOMAINS.values() for lab in labs}
    assert NM.decode(NM.code("sm_type", "EXPEDITED")) == "EXPEDITED"
    with pytest.raises(ValueError, match="has no code"):
        NM.code("sm_type", "TELEPORT")
    # names.json round trip: the harness reads the same names (catalog, coded columns, schema)
    back = Naming.from_json(json.loads(json.dumps(NM.to_json())))
    assert back == NM and back.coded_columns() == CODED and back.catalog == "tpcds"


def test_the_schema_holds_every_name_the_world_writes():
    """Every table and column the data team's annotations, relationships, metrics and the world's changes name
    is in eval/tpcds/schema.py (a name outside it would reach the cryptic catalogs in plain)."""
    sch = schema()
    assert set(COLUMNS) == set(D.TABLES) and set(sch) == set(D.TABLES) | {"sales.store_returns_v2"}
    for name, (_, dcol) in D.TABLES.items():
        assert dcol is None or dcol[0] in sch[name], name
    for (t, c) in D.COLUMN_DOCS:
        assert c in sch[t], (t, c)
    for t, doc in D.TABLE_DOCS.items():
        assert set(doc["grain"]["keys"]) <= set(sch[t]), t
    for src, _, to, on in D.RELATIONSHIPS:
        assert all(a in sch[src] and b in sch[to] for a, b in on), (src, to)
    assert "ss_net_paid_excl_tax" in sch["sales.store_sales"]
    for t, _fields, col in W.WRONG_FROM_START:
        assert col is None or col in sch[t]
    assert set(CODED) <= {c for t, c in D.COLUMN_DOCS if D.COLUMN_DOCS[t, c].get("enum") == "{enum}"}


def test_every_public_gold_translates_under_the_cryptic_names():
    qs = [q for q in load_questions(FILE) if q.gold_sql]
    cqs = translate_questions(qs, NM)
    assert len(cqs) >= 30
    dotted = [f"tpcds.{t}" for t in schema()]
    for q, cq in zip(qs, cqs, strict=True):
        assert not any(t in cq.gold_sql for t in dotted), (q.id, cq.gold_sql)
        assert set(cq.tables) == {NM.full_table(t) for t in q.tables}
    by_id = {q.id: q for q in cqs}
    expedited = [q for q in qs if "'EXPEDITED'" in q.gold_sql]
    assert expedited and all(f"'{NM.code('sm_type', 'EXPEDITED')}'" in by_id[q.id].gold_sql for q in expedited)
    plain = naming("plain")
    assert all(translate(q.gold_sql, plain) == q.gold_sql for q in qs)  # the identity, byte for byte


# ------------------------------------------------------------------ both worlds (slow)
def _decoder(nm: Naming):
    back = {w: p for p, w in nm.tables.items()}

    def decode(v: object) -> object:
        v = nm.decode(v)
        return back.get(v, v) if isinstance(v, str) else v
    return decode


@pytest.mark.slow  # both TPC-DS worlds (tpcgen-cli and Spark)
@pytest.mark.timeout(1800)
def test_every_public_gold_gives_the_same_answer_on_both_variants(tpcds_cats, tpcds_ccats, tpcds_cryptic):
    """Each history's latest vid: the plain gold on the plain world and the translated gold on the cryptic
    one give the same rows (codes read back as labels, as the scorer does)."""
    nm = load_names(tpcds_cryptic)
    assert nm.variant == "cryptic" and nm.catalog == "tpcds"
    qs = [q for q in load_questions(FILE) if q.gold_sql]
    cqs = translate_questions(qs, nm)
    bad = []
    for h in ("enriched", "stale", "reviewed"):
        plain = [cc.run_sql(tpcds_cats[h], q.gold_sql, limit=10_000) for q in qs]
        coded = [cc.run_sql(tpcds_ccats[h], cq.gold_sql, limit=10_000) for cq in cqs]
        for q, a, b in zip(qs, plain, coded, strict=True):
            c = compare(a, b, order_matters=q.order_matters, decimals=q.decimals, decode=_decoder(nm))
            if not a.rows or not c.correct or len(a.rows) != len(b.rows):
                bad.append(f"{h} {q.id}: {c.reason} (plain {a.rows[:2]}, cryptic {b.rows[:2]})")
    assert not bad, "\n".join(bad)


def _tables(cat) -> dict[str, list[str]]:
    return {L.name_of(o.path): [c["name"] for c in o.value["schema"]["columns"]] for o in cat.query(L.tables_query("tpcds"))}


@pytest.mark.slow  # the cryptic TPC-DS world
def test_names_json_tables_codes_and_clutter(tpcds_ccats, tpcds_cryptic):
    from semantic.annotations import read_catalog_annotations

    with open(os.path.join(tpcds_cryptic, NAMES_FILE), encoding="utf-8") as fh:
        names = json.load(fh)
    nm = Naming.from_json(names)
    clutter = names["clutter"]
    assert len(clutter) >= 40 and {v["family"] for v in clutter.values()} == \
        {"backup", "staging", "extract", "test", "v2_mart"}
    written = {f"tpcds.{t}" for t in names["tables"].values()}
    for h, cat in tpcds_ccats.items():
        tables = _tables(cat)
        assert set(tables) == written | set(clutter), h
        for t, cols in tables.items():
            assert set(cols) <= set(names["columns"].values()), (h, t)
        anns = read_catalog_annotations(cat, "tpcds")
        for t, info in clutter.items():
            by_field = {a.field: a.value for a in anns.get(t, [])}
            target = (by_field.get("deprecated") or {}).get("replaced_by") or \
                (by_field.get("not_for_reporting") or {}).get("use_instead", [None])[0]
            assert target == info["shadows"] and target in written, (h, t, target)
    cat = tpcds_ccats["enriched"]
    for (t, c), dom in ((("dim.ship_mode", "sm_type"), "sm_type"), (("dim.item", "i_category"), "i_category")):
        res = cc.run_sql(cat, f"SELECT DISTINCT {nm.column(c)} FROM {nm.full_table(t)}", limit=100)
        got = {r[0] for r in res.rows if r[0] is not None}
        assert got and got <= set(nm.values[dom].values()), (t, c, got)
        by_key = {a.key: a for a in read_catalog_annotations(cat, "tpcds")[nm.full_table(t)]}
        enum = next(a.value for a in by_key.values() if a.field == "enum" and a.column == nm.column(c))
        labels = next(a.value for a in by_key.values() if a.field == "labels" and a.column == nm.column(c))
        assert set(enum) == set(labels) and set(labels.values()) <= set(DOMAINS[dom])


@pytest.mark.slow  # both TPC-DS worlds
def test_the_stale_set_is_the_plain_worlds_under_the_names(tpcds_world, tpcds_cryptic):
    nm = load_names(tpcds_cryptic)
    pm = json.load(open(os.path.join(tpcds_world, "stale_manifest.json")))["stale"]
    cm = json.load(open(os.path.join(tpcds_cryptic, "stale_manifest.json")))["stale"]
    assert sorted((nm.full_table(m["table"]), m["kind"], m["change"]) for m in pm) == \
        sorted((m["table"], m["kind"], m["change"]) for m in cm)


@pytest.mark.slow  # the cryptic TPC-DS world; a real `semcat eval serve` subprocess over stdio, then `eval score`
def test_eval_serve_and_score_accept_the_cryptic_world(tpcds_cryptic, tmp_path):
    """`semcat eval serve` runs the TPC-DS questions on the cryptic world (a scripted agent answers two with
    the gold under the variant's names, one wrongly) and `semcat eval score` scores them: 2 of 3."""
    import shutil
    import subprocess
    import sys

    import anyio
    import yaml
    from mcp import Client, StdioServerParameters

    lake = str(tmp_path / "world")
    shutil.copytree(tpcds_cryptic, lake, symlinks=True)  # one process owns a catalog directory
    ids = ("t001", "t023", "t013")
    with open(FILE, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    qfile = str(tmp_path / "questions.yaml")
    with open(qfile, "w", encoding="utf-8") as fh:
        yaml.safe_dump([q for q in data if q["id"] in ids], fh, sort_keys=False)
    nm = load_names(lake)
    gold = {q.id: q.gold_sql for q in translate_questions(load_questions(qfile), nm)}
    answers = {"t001": gold["t001"], "t023": gold["t023"], "t013": "SELECT 1 AS x"}
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = str(tmp_path / "run")
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "eval", "serve", "--data", lake,
                                                                 "--condition", "enriched", "--questions", qfile,
                                                                 "--out", out], env=env)
    seen: list[str] = []

    async def agent() -> None:
        async with Client(params) as c:
            while True:
                q = (await c.call_tool("next_question", {})).structured_content
                if q.get("done"):
                    return
                seen.append(q["question"])
                r = await c.call_tool("search_tables", {"query": "ship mode"})
                assert not r.is_error
                await c.call_tool("submit_answer", {"id": q["id"], "sql": answers[q["id"]]})
    anyio.run(agent)
    assert len(seen) == 3
    scored = str(tmp_path / "scored")
    p = subprocess.run([sys.executable, "-m", "mcp_server.cli", "eval", "score", "--data", lake, "--runs", out, "--out",
                        scored, "--no-detector"], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    recs = {r["id"]: r for r in (json.loads(x) for x in open(os.path.join(scored, "results.jsonl")))}
    assert recs["t001"]["correct"] and recs["t023"]["correct"] and not recs["t013"]["correct"], recs
