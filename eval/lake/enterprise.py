"""Writing the enterprise world's generated domains (eval.lake.enterprise_spec) into the two catalogs of
an eval build, around the Acme history (eval.lake.build, `--scale enterprise`):

1. `prehistory` (2023-08-28 .. 2024-11-02, before the Acme history starts at d-119): the catalog, then 15
   monthly loads of every domain, one commit per domain per load, each committed to both catalogs with
   the same files and time; the annotations of each table when it is created (both histories; the
   stale one misses a seeded share of the deprecations and carries a few wrong descriptions).
2. `traps` (2024-11-07 .. 2024-11-09): the trap generator (eval.traps.generator.Generator) applies its
   changes through the Spark bridge to the enriched catalog, where only the generated domains exist yet;
   each of its commits is replayed into the stale catalog (same objects, author, message and time), so
   both lakes hold the same data. The enriched history then retires the annotations the traps made
   false (a steward's cleanup within the day); the stale history keeps them (manifest: kind `trap:<class>`).
3. `late_load` (d-105, -77, -49, -21, -7, on the Acme build's committer thread): the days since the
   previous load, for every table the traps left alone.

The rows are tiny (tens per table per load) and written with pyarrow under the names the bridge gives
files (no staging directory per write) and committed through `Bridge.commit` (no Spark job per table);
the trap generator's writes are Spark's.
"""

from __future__ import annotations

import datetime as dt
import os
import time as _time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from eval.lake.enterprise_spec import CATALOG, DOMAINS, PRE_SLOTS, START, EntTable, Sizes, World

__all__ = ["Enterprise", "HISTORIES"]

HISTORIES = ("enriched", "stale")
AUTHOR = "etl:enterprise"
ANNOTATOR = "data-team"
UTC = dt.timezone.utc
TRAP_NOW = dt.datetime(2024, 11, 7, 0, 0, tzinfo=UTC).timestamp()
TRAP_SEED_SALT = 4099

_DDL = {pa.int32(): "int", pa.int64(): "bigint", pa.string(): "string", pa.date32(): "date", pa.float64(): "double",
        pa.bool_(): "boolean", pa.timestamp("us"): "timestamp_ntz"}


def _ts(d: dt.date, hour: float) -> float:
    return dt.datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp() + hour * 3600


class Enterprise:
    def __init__(self, cats: dict[str, Any], spark: Any, warehouse: str, seed: int, sizes: Sizes | None = None,
                 log: Callable[[str], None] = print, traps: bool = True):
        from spark_bridge import Bridge

        self.cats, self.spark, self.warehouse, self.seed, self.log = cats, spark, warehouse, seed, log
        self.world = World(seed, sizes or Sizes())
        self.bridges = {h: Bridge(spark, c, warehouse=warehouse, footers_on="driver") for h, c in cats.items()}
        self.hi: dict[str, dt.date] = {}     # table -> the last fact date loaded
        self.created: set[str] = set()
        self.deprecated: dict[str, set[str]] = {h: set() for h in cats}
        self.skip: set[str] = set()          # tables the traps changed or stopped: no domain load writes them
        self.manifest: list[dict[str, Any]] = []
        self.commits = 0
        self.writes = 0
        self.truth: dict[str, Any] | None = None
        self.do_traps = traps
        self.seconds: dict[str, float] = {"prehistory": 0.0, "traps": 0.0, "late": 0.0}
        self._clock = 0.0

    # ------------------------------------------------------------------ staging (pyarrow, the bridge's layout)
    def _stage(self, name: str, rows: list[dict[str, Any]], mode: str) -> Any:
        from catalog_core import footers
        from catalog_core.lake import TableValue
        from spark_bridge import files as fl
        from spark_bridge.plan import StagedWrite
        from spark_bridge.schema import evolve
        from spark_bridge.staging import staged_files

        t = self.world.tables.get(name)
        full = f"{CATALOG}.{name}"
        b = self.bridges["enriched"]
        obj = b.catalog.get("/" + full.replace(".", "/"))
        table = obj.value if obj is not None else None
        cols = t.columns if t is not None else []
        wcols = [{"name": c, "type": _DDL[ty], "nullable": True} for c, ty in cols]
        evo = evolve(TableValue.from_raw(table).schema, wcols, full)
        types = {c["name"]: c["type"] for c in evo.schema["columns"]}
        loc = b.location_of(full, table)
        write_id = fl.new_write_id()
        staging = fl.staging_dir(loc, write_id)
        os.makedirs(os.path.dirname(staging), exist_ok=True)  # the table's directory, and its (empty) _staging one
        schema = pa.schema([pa.field(c, ty) for c, ty in cols])
        # written straight to the name the bridge would move it to (bridge.staging.plan_moves: one file, no
        # partitions): the same file, without a staging directory to make, list, move out of and delete per write
        final = fl.join(loc, f"{write_id}-00000.parquet")
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), final)
        infos = list(footers.move_and_read([(final, final)]))
        files = staged_files(infos, [[]], [], types, "UTC")
        return StagedWrite(full, mode, [], wcols, loc, write_id, staging, files, schema_mode="evolve")

    def _commit(self, when: float, message: str, writes: list[tuple[str, str, list]]) -> float:
        writes = [w for w in writes if w[2]]
        if not writes:
            return when
        staged = [self._stage(n, rows, mode) for n, mode, rows in writes]
        when = max(when, self._clock + 1.0)
        for h in HISTORIES:
            self.bridges[h].commit(staged, AUTHOR, message, time=when)
        self._clock = when
        self.commits += 1
        self.writes += len(staged)
        return when

    # ------------------------------------------------------------------ annotations
    def _annotate(self, tables: list[EntTable], when: float, slot: int) -> float:
        """One commit per history: the fields of the tables created at this slot, and the deprecations
        that start at it (the stale history misses the seeded share)."""
        from catalog_core.lake import require_table
        from semantic.annotations import (
            columns_of,
            new_annotation,
            normalize_column_field,
            normalize_table_field,
            write_annotations,
        )

        w = self.world
        when = max(when, self._clock + 1.0)
        deps = [t for t in w.tables.values() if t.deprecated_at == slot]
        for h, cat in self.cats.items():
            anns: list[Any] = []
            vid = cat.resolve(None)
            common = {"author": ANNOTATOR, "vid": vid, "time": when}

            def table_anns(t: EntTable, fields: dict[str, Any], cat: Any = cat, vid: int = vid,
                           anns: list[Any] = anns, common: dict[str, Any] = common) -> None:
                tobj = require_table(cat, t.full, vid)
                for field, val in fields.items():
                    value = normalize_table_field(cat, t.full, tobj.value, field, val, vid)
                    keys = value.get("keys") if field == "grain" and isinstance(value, dict) else None
                    cols = [str(k) for k in keys] if isinstance(keys, list) else None
                    anns.append(new_annotation(cat, t.full, "table", f"table.{field}", value, columns=cols,
                                               table=tobj, **common))

            for t in tables:
                fields = w.table_fields(t, h)
                if fields:
                    table_anns(t, fields)
                cf = w.column_fields(t)
                if cf:
                    tobj = require_table(cat, t.full, vid)
                    tcols = columns_of(tobj.value)
                    for col, fs in cf.items():
                        for field, val in fs.items():
                            value = normalize_column_field(t.full, tcols, col, field, val)
                            cid = next(c.id for c in tcols if c.name == col)
                            anns.append(new_annotation(cat, t.full, "column", f"column.{cid}.{field}", value,
                                                       column=col, table=tobj, **common))
            for t in deps:
                if h == "stale" and t.stale_unflagged:
                    continue
                if t.full.replace(f"{CATALOG}.", "") in self.skip:
                    continue
                table_anns(t, {"deprecated": w.deprecation(t)})
                self.deprecated[h].add(t.name)
            if anns:
                write_annotations(cat, anns, time=when, message=f"annotate {len(tables)} new tables, "
                                  f"{len(deps)} deprecations")
        self._clock = when
        return when

    def _relationships_and_metrics(self, when: float) -> float:
        """At the first load: fact -> dim relationships, one metric and one verified query per domain
        (on a base fact that is never replaced), in both histories alike."""
        import semantic as sm
        from semantic.annotations import new_annotation, write_annotations

        w = self.world
        when = max(when, self._clock + 1.0)
        for cat in self.cats.values():
            anns = []
            for t in w.tables.values():
                if t.kind != "base_fact" or not t.described:
                    continue
                for d in w.fact_dims[t.name]:
                    col = f"{d.split('.')[1]}"
                    from eval.lake.enterprise_spec import singular

                    key = f"{singular(col)}_id"
                    value = {"to": f"{CATALOG}.{d}", "on": [[key, key]], "cardinality": "many_to_one",
                             "canonical": True, "condition": None}
                    anns.append(new_annotation(cat, t.full, "relationship", f"relationship.{singular(col)}", value,
                                               columns=[key], author=ANNOTATOR, time=when))
            for dom in w.domains:
                steady = self._steady_fact(dom)
                if steady is None:
                    continue
                dcol = steady.columns[1][0]
                stem = steady.name.split(".")[1]
                value = {"expression": "SUM(amount_cents) / 100.0", "filter": None, "time_column": dcol, "unit": "USD",
                         "description": f"Total {stem.replace('_', ' ')} amount in dollars",
                         "synonyms": [f"{stem.replace('_', ' ')} total"]}
                anns.append(new_annotation(cat, steady.full, "metric", f"metric.total_{stem}_usd", value,
                                           columns=["amount_cents", dcol], author=ANNOTATOR, time=when))
            write_annotations(cat, anns, time=when, message="relate facts to dimensions; define domain metrics")
            for i, dom in enumerate(w.domains):
                steady = self._steady_fact(dom)
                if steady is None:
                    continue
                dcol = steady.columns[1][0]
                q = f"How many {steady.name.split('.')[1].replace('_', ' ')} were recorded in August 2023?"
                sql = (f"SELECT COUNT(*) AS n FROM {steady.full} WHERE {dcol} BETWEEN DATE '2023-08-01' AND "
                       "DATE '2023-08-31'")
                sm.verify_query(cat, q, sql, author=ANNOTATOR, time=when + 1 + i)
        self._clock = when + 1 + len(w.domains)
        return self._clock

    def _steady_fact(self, dom: str) -> EntTable | None:
        for t in sorted(self.world.tables.values(), key=lambda x: x.name):
            if t.domain == dom and t.kind == "base_fact" and t.deprecated_at is None and t.described and not t.wrong:
                return t
        return None

    # ------------------------------------------------------------------ the timeline
    def prehistory(self) -> None:
        """The catalog at 2023-08-28, then the 15 monthly loads before the Acme history."""
        t0 = _time.time()
        for c in self.cats.values():
            with c.transaction(author="etl:acme", message="create catalog acme", time=_ts(START, 4.0)) as txn:
                txn.add("/acme", {"obj_type": "catalog", "properties": {"warehouse": self.warehouse}})
        self._clock = _ts(START, 4.0)
        lo = dt.date(2023, 8, 1)
        for slot, sday in enumerate(PRE_SLOTS):
            hi = sday - dt.timedelta(days=sday.day)  # the month before the slot
            self._slot(slot, lo, hi, _ts(sday, 5.0))
            if slot == 0:
                self._relationships_and_metrics(_ts(sday, 12.0))
            self.log(f"enterprise: load {sday} ({lo}..{hi}): {len(self.created)} tables, {self.writes} writes so far")
            lo = hi + dt.timedelta(days=1)
        self.seconds["prehistory"] = round(_time.time() - t0, 1)
        self.log(f"enterprise: prehistory: {len(self.created)} tables, {self.commits} load commits, "
                 f"{self.writes} writes ({self.seconds['prehistory']}s)")

    def _slot(self, slot: int, lo: dt.date, hi: dt.date, when: float) -> None:
        w = self.world
        writes = w.writes_at(slot, lo, hi, skip=self.skip)
        by_dom: dict[str, list[tuple[str, str, list]]] = {}
        for n, mode, rows in writes:
            by_dom.setdefault(w.tables[n].domain, []).append((n, mode, rows))
        for i, dom in enumerate(w.domains):
            ws = by_dom.get(dom, [])
            self._commit(when + i * 60, f"load {dom} {lo.isoformat()}..{hi.isoformat()} ({len(ws)} tables)", ws)
        new = [w.tables[n] for n, _, _ in writes if n not in self.created]
        self.created.update(t.name for t in new)
        deps = [t for t in w.tables.values() if t.deprecated_at == slot]
        if new or deps:
            self._annotate(new, when + 3600, slot)
        self._annotate_traps(slot, when + 3600)

    def _annotate_traps(self, slot: int, when: float) -> None:
        """The annotation-trap tables' annotations at this load (World.trap_annotations), one commit per
        table and column in each history that has any."""
        import semantic as sm

        for t in self.world.tables.values():
            if not t.kind.startswith("trap_") or slot < t.first_slot:
                continue
            for h, cat in self.cats.items():
                for col, fields in self.world.trap_annotations(t, h, slot):
                    when = max(when, self._clock + 1.0)
                    sm.annotate(cat, t.full, fields, column=col, author=ANNOTATOR, time=when)
                    self._clock = when

    def late_load(self, n: int, when: float) -> None:
        """The domain load riding on the Acme batch of d-n (its committer thread, after that batch's
        commits): every table the traps left alone, the days since its previous load."""
        from eval.lake.enterprise_spec import LATE_DAYS

        t0 = _time.time()
        slot = len(PRE_SLOTS) + LATE_DAYS.index(n)
        sday = self.world.slots[slot]
        lo = self._late_lo
        hi = sday - dt.timedelta(days=1)
        self._slot(slot, lo, hi, when)
        self._late_lo = hi + dt.timedelta(days=1)
        self.seconds["late"] += round(_time.time() - t0, 1)
        self.log(f"enterprise: d-{n} load ({lo}..{hi}) committed")

    _late_lo = dt.date(2024, 11, 1)

    # ------------------------------------------------------------------ traps
    def traps(self) -> None:
        """The trap generator on the enriched catalog (only the domains exist yet), replayed into the stale one."""
        if not self.do_traps:
            return
        from eval.traps.generator import Generator

        t0 = _time.time()
        enr = self.cats["enriched"]
        before = enr.latest_vid
        g = Generator(enr, self.bridges["enriched"], TRAP_NOW, self.seed * TRAP_SEED_SALT + 3, CATALOG,
                      log=lambda m: self.log(f"enterprise traps: {m.strip()}"))
        try:
            truth = g.run(1)
        finally:
            if g.scratch:
                import shutil

                shutil.rmtree(g.scratch, ignore_errors=True)
        self.truth = truth
        replayed = self._replay(before)
        self._clock = max(self._clock, max((c.time for c in enr.commits(since=before)), default=self._clock))
        # the enriched history retires what the traps made false (within the day after the check)
        false = sorted({(tb, k) for tr in truth["traps"] for tb, k in tr["false"]})
        when = max(self._clock + 1.0, truth["check_time"] + 3600)
        if false:
            from catalog_core import lake

            with enr.transaction(author=ANNOTATOR, message=f"retire {len(false)} annotations the week's changes made "
                                 "false", meta={"semantic": True}, time=when) as txn:
                for tb, k in false:
                    if enr.get(lake.semantic_path(tb, k)) is not None:
                        txn.remove(lake.semantic_path(tb, k))
            self._clock = when
        touched = {t for tr in truth["traps"] for t in tr["tables"]} | set(truth.get("stopped", []))
        # (the routine loads' tables keep loading: a replayed day is a load like any other)
        self.skip = {t.removeprefix(f"{CATALOG}.") for t in touched}
        for tr in truth["traps"]:
            for tb, k in tr["false"]:
                self.manifest.append({"table": tb, "key": k, "annotation": f"{tb}:{k}", "kind": f"trap:{tr['cls']}",
                                      "detectable": True, "change": tr["id"]})
        self.seconds["traps"] = round(_time.time() - t0, 1)
        self.log(f"enterprise: traps: {sum(1 for t in truth['traps'] if not t.get('control'))} traps, "
                 f"{sum(1 for t in truth['traps'] if t.get('control'))} controls, {len(truth['skipped'])} classes skipped, "
                 f"{replayed} commits replayed into the stale catalog, {len(false)} annotations made false "
                 f"({self.seconds['traps']}s)")

    def _replay(self, since: int) -> int:
        """Each enriched commit after `since` replayed into the stale catalog: the same objects added,
        updated and removed, by the same author, message and time."""
        enr, stale = self.cats["enriched"], self.cats["stale"]
        n = 0
        for c in enr.commits(since=since):
            if c.vid <= since:
                continue
            changes = list(enr.diff(c.vid - 1, c.vid))
            with stale.transaction(author=c.author, message=c.message, meta=dict(c.meta or {}), time=c.time) as txn:
                for ch in sorted((x for x in changes if x.kind == "removed"), key=lambda x: -x.path.count("/")):
                    txn.remove(ch.path)
                for ch in sorted((x for x in changes if x.kind == "added"), key=lambda x: x.path.count("/")):
                    txn.add(ch.path, ch.after or {}, leaf=ch.leaf)
                for ch in (x for x in changes if x.kind == "updated"):
                    txn.update(ch.path, ch.after or {})
            n += 1
        return n

    # ------------------------------------------------------------------ the stale manifest's generated share
    def stale_entries(self) -> list[dict[str, Any]]:
        out = list(self.manifest)
        for t in self.world.tables.values():
            if t.deprecated_at is not None and t.stale_unflagged and t.name not in self.skip \
                    and t.name in self.deprecated["enriched"]:
                out.append({"table": t.full, "key": "table.deprecated", "annotation": f"{t.full}:table.deprecated",
                            "kind": "deprecated_without_flag", "detectable": True,
                            "change": self.world.slots[min(t.deprecated_at, len(self.world.slots) - 1)].isoformat()})
            if t.wrong and t.name not in self.skip:
                out.append({"table": t.full, "key": "table.description", "annotation": f"{t.full}:table.description",
                            "kind": "wrong_from_start", "detectable": False, "change": None})
        return out + self._trap_stale_entries()

    def annotation_traps(self) -> list[dict[str, Any]]:
        """The ground truth of the annotation-only traps (the manifest's `annotation_traps`): what the data
        cannot show, what each history's annotations say, and whether a detector can tell from evidence."""
        from eval.lake.enterprise_spec import CANCELLED, LOCAL_TZ, TAX_RATE, TEST_ACCOUNTS, TRAP_SWITCH

        switch = self.world.slots[TRAP_SWITCH - 1].isoformat()
        truth = {
            "definition": {"column": "sale_amount", "truth": f"sale_amount includes {TAX_RATE:.2%} sales tax; "
                           f"net = sale_amount / {1 + TAX_RATE}", "tax_rate": TAX_RATE,
                           "stale": "omitted (the description calls sale_amount the sale amount)", "detectable": False},
            "test_accounts": {"column": "customer_id", "truth": f"customer_id in {list(TEST_ACCOUNTS)} are internal test "
                              "accounts, excluded from every count and total", "test_accounts": list(TEST_ACCOUNTS),
                              "stale": "omitted", "detectable": False},
            "timezone": {"column": "login_time", "truth": f"local time {LOCAL_TZ} (UTC-8 for every row: all dated "
                         "before daylight-saving time)", "time_zone": LOCAL_TZ, "stale": "omitted", "detectable": False},
            "unit_hidden": {"column": "amount", "truth": f"US cents for rows dated {switch} on (the d-21 load), whole "
                            "US dollars before", "unit": "USD cents", "since": switch,
                            "stale": "the old truth: whole US dollars", "detectable": True},
            "code_meaning": {"column": "status_code", "truth": f"'{CANCELLED}' = cancelled, not revenue (first written "
                             f"by the d-21 load); '10' placed, '20' fulfilled", "code": CANCELLED,
                             "stale": "the old truth: enum ['10', '20'], no label for the new code", "detectable": True},
        }
        out = []
        for t in self.world.tables.values():
            if t.kind.startswith("trap_"):
                k = t.kind.removeprefix("trap_")
                out.append({"table": t.full, "kind": k, **truth[k]})
        return out

    def _trap_stale_entries(self) -> list[dict[str, Any]]:
        """The stale history's annotations of the annotation-trap tables that omit or misstate the truth."""
        import semantic as sm
        from eval.lake.enterprise_spec import TRAP_SWITCH

        out = []
        stale = self.cats["stale"]
        for tr in self.annotation_traps():
            anns = sm.read_annotations(stale, tr["table"])
            # the annotations that omit or misstate the truth: the table's description (tax, test accounts), the
            # column's description (time zone), its unit and description (dollars), its enum and labels (no '90';
            # its description, "Order status code", stays true)
            keys = [a.key for a in anns if a.key == "table.description"] if tr["kind"] in ("definition", "test_accounts") \
                else [a.key for a in anns if a.column == tr["column"]
                      and (tr["kind"] != "code_meaning" or a.key.endswith((".enum", ".labels")))]
            change = self.world.slots[TRAP_SWITCH].isoformat() if tr["detectable"] else None
            for k in sorted(keys):
                out.append({"table": tr["table"], "key": k, "annotation": f"{tr['table']}:{k}",
                            "kind": f"annotation_trap:{tr['kind']}", "detectable": tr["detectable"], "change": change})
        return out

    def summary(self) -> dict[str, Any]:
        w = self.world
        c = w.counts()
        per_domain = dict(sorted(c["per_domain"].items()))
        tr = self.truth or {}
        return {"domains": per_domain, "tables": c["tables"], "per_kind": c["per_kind"],
                "described": c["described"], "certified": c["certified"], "deprecated": c["deprecated"],
                "deprecations_unflagged_in_stale": c["stale_unflagged"], "wrong_from_start": c["wrong_from_start"],
                "load_commits": self.commits, "writes": self.writes,
                "traps": {"applied": [f"{t['cls']}/{t['kind']} on {t['table']}" for t in tr.get("traps", [])
                                      if not t.get("control")],
                          "controls": [f"{t['kind']} on {t['table']}" for t in tr.get("traps", []) if t.get("control")],
                          "skipped": tr.get("skipped", []), "seed": tr.get("seed")},
                "tables_left_alone_after_traps": c["tables"] - len(self.skip), "seconds": self.seconds,
                "domains_listed": [d for d in DOMAINS if d in w.domains]}
