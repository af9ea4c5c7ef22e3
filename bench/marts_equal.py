"""Before/after check of the Acme lake's mart jobs (issue 38 item 4): a lake built with the marts as
Spark jobs over the core tables holds the same rows as one built with the generator's marts.

    PYTHONPATH=. .venv/bin/python -m bench.marts_equal BEFORE AFTER [--gold]

BEFORE and AFTER are lake directories of `semcat eval build` (same seed, scale, variant; BEFORE's marts
built by the generator or by Spark jobs, as a build before a change of the mart jobs); both are
opened read-only through copies the caller made (never a shared lake in place). For each history
(enriched, stale), every load of BEFORE is paired with the load commit of AFTER with the same message;
at each pair every table the load writes is compared (row multiset as count + the sum of 64-bit row
hashes, column names and types): at AFTER's load commit, or, for a built mart, at the commit that
builds it from that load. Then every table at the latest vid. `--gold`: every public question's gold SQL at the latest vid of both histories, rows
compared exactly. Prints one line per load and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from typing import Any

import catalog_core as cc
from eval.lake.build import BUILT, MART_DELAY
from eval.lake.naming import load_names


def fingerprint(con: Any, table: str) -> tuple[Any, ...]:
    """(columns and types, row count, sum of row hashes) of `table`, or None when it is not there."""
    try:
        cols = con.sql(f"SELECT column_name, column_type FROM (DESCRIBE {table})").fetchall()
    except Exception:  # noqa: BLE001 - not a table at this vid
        return ("absent",)
    n, h = con.sql(f"SELECT count(*), sum(hash(t)::HUGEINT) FROM {table} t").fetchall()[0]
    return (tuple(cols), n, h)


def tables_at(con: Any) -> list[str]:
    return sorted(f"{d}.{s}.{t}" for d, s, t in con.sql(
        "SELECT database_name, schema_name, view_name FROM duckdb_views() WHERE NOT internal").fetchall())


def loads(cat: Any) -> list[tuple[Any, Any | None]]:
    """(load commit, the commit building marts from it or None), in time order."""
    commits = [c for c in cat.commits(limit=None) if (c.meta or {}).get("writes")]
    out: list[tuple[Any, Any | None]] = []
    for c in commits:
        if c.message.startswith("build "):
            assert out and out[-1][1] is None, f"mart commit {c.vid} follows no load"
            out[-1] = (out[-1][0], c)
        else:
            out.append((c, None))
    return out


def written(c: Any) -> set[str]:
    return {w["table"] for w in (c.meta or {}).get("writes", [])}


def same(b: Any, bvid: int, a: Any, avid: int, table: str) -> bool:
    return fingerprint(cc.open_table(b, table, snapshot=bvid, sandbox=False), table) == \
        fingerprint(cc.open_table(a, table, snapshot=avid, sandbox=False), table)


def compare_history(before: str, after: str, h: str) -> int:
    """Per load: the tables it wrote (in BEFORE's load commit; in AFTER's load and mart commits, which
    must write the same tables between them), each compared where AFTER's history leaves it; a table no
    commit writes keeps its rows, so with the initial load compared in full every table is compared at
    every load. Then every table at the latest vid."""
    nm = load_names(after)  # the marts' written names (cryptic on the cryptic variant)
    built = {nm.full_table(m) for m in BUILT}
    b, a = cc.Catalog.open(os.path.join(before, h)), cc.Catalog.open(os.path.join(after, h))
    bad = 0
    try:
        bl, al = loads(b), loads(a)
        assert [c.message for c, _ in bl] == [c.message for c, _ in al], "the two lakes have other loads"
        for (bc, bm), (ac, am) in zip(bl, al):
            diff = []
            tables = written(bc) | (written(bm) if bm else set())
            if tables != written(ac) | (written(am) if am else set()):
                diff.append(f"written tables {sorted(tables ^ (written(ac) | (written(am) if am else set())))}")
            if am is not None and (written(am) - built or am.time - ac.time != MART_DELAY
                                   or am.vid != ac.vid + 1):
                diff.append(f"mart commit {am.vid}: {sorted(written(am))} at +{am.time - ac.time} s")
            for t in sorted(tables):
                if not same(b, bm.vid if bm is not None and t in written(bm) else bc.vid,
                            a, am.vid if am is not None and t in written(am) else ac.vid, t):
                    diff.append(t)
            gap = "" if am is None else f", marts {am.vid} (+{am.time - ac.time:.0f} s)"
            when = dt.datetime.fromtimestamp(bc.time, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
            print(f"{h:8} {when} {bc.message[:58]:58} vid {bc.vid:3} -> {ac.vid:3}{gap}: "
                  + (f"{len(tables)} written tables equal" if not diff else "DIFFERENT " + ", ".join(diff)), flush=True)
            bad += bool(diff)
        bcon, acon = cc.open_duckdb(b, sandbox=False), cc.open_duckdb(a, sandbox=False)
        names = tables_at(bcon)
        latest = [t for t in names if fingerprint(bcon, t) != fingerprint(acon, t)]
        if names != tables_at(acon):
            latest.append("the set of tables")
        print(f"{h:8} latest vid {b.latest_vid} -> {a.latest_vid}: "
              + (f"all {len(names)} tables equal" if not latest else "DIFFERENT " + ", ".join(latest)), flush=True)
        bad += bool(latest)
    finally:
        b.close()
        a.close()
    return bad


def _result(cat: Any, sql: str) -> tuple[Any, ...]:
    """Columns and rows of `sql` at the latest vid; rows as a sorted multiset (a gold without ORDER BY,
    e.g. q003 or q035, returns its groups in another order from one run to the next on the same lake)."""
    r = cc.run_sql(cat, sql, limit=10_000, timeout_s=60)
    return ([(c.name, c.type) for c in r.columns], sorted(r.rows, key=repr), r.truncated)


def compare_gold(before: str, after: str) -> int:
    from eval.harness.questions import load_questions

    qs = [q for q in load_questions(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                 "eval", "questions", "public.yaml")) if q.gold_sql]
    bad = 0
    for h in ("enriched", "stale"):
        b, a = cc.Catalog.open(os.path.join(before, h)), cc.Catalog.open(os.path.join(after, h))
        try:
            diff = [q.id for q in qs if _result(b, q.gold_sql) != _result(a, q.gold_sql)]
        finally:
            b.close()
            a.close()
        print(f"gold {h}: {len(qs) - len(diff)} of {len(qs)} public golds give the same rows"
              + (f"; DIFFERENT: {', '.join(diff)}" if diff else ""), flush=True)
        bad += len(diff)
    return bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--gold", action="store_true", help="also every public question's gold at the latest vid")
    ap.add_argument("--gold-only", action="store_true", help="only the golds")
    args = ap.parse_args()
    bad = 0 if args.gold_only else sum(compare_history(args.before, args.after, h) for h in ("enriched", "stale"))
    if args.gold or args.gold_only:
        bad += compare_gold(args.before, args.after)
    print("EQUAL" if not bad else f"{bad} difference(s)")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
