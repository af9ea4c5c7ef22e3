"""The trap generator: randomized changes of every class of the taxonomy on random tables and
columns of a lake (chosen by what each table has: types, annotations), applied through the public
write paths after the lake's "now", plus routine controls; the ground truth goes to a JSON file.

Writers (`WRITERS`; `Trap.writer` records which one wrote each change, `--writers` restricts them):
- `iceberg`: pyiceberg's REST client against a `semcat serve` subprocess over the copy
  (eval/traps/iceberg.py), as an Iceberg engine would write: appends (a load in a new unit, new rows
  beyond a documented range, a duplicated or revived load, routine loads), copy-on-write overwrites
  (every restatement: units, time zones, enums, key formats, SCD2 / snapshot grains, metric columns,
  compaction, an identical re-run) and `update_schema` (drop, rename, a key renamed, nullability);
- `spark`: the Spark bridge (`Bridge.write`, `Bridge.alter`, one multi-table transaction per routine day);
- `engine`: a catalog transaction (the nullability flip).
Each kind lists the writers that can make it (`WRITER_KINDS`); a second random stream of the seed picks
one per trap among those allowed (so the traps themselves do not depend on the writers), and per table
for the routine loads (spark or iceberg). Kinds only Spark makes: an integer column restated as text
(Iceberg allows no long -> string change), a stuck job's re-runs, a replacement table (its lineage is
the bridge's), a stopped table (nothing is written).

Timeline (T0 = the lake's now): traps at T0+1h, T0+2h, ...; controls after them; a routine load
(every table loaded in the days before T0, the latest day replayed as a new day) at T0+1d and T0+2d,
except the tables a trap stops; the check runs at T0+2d+1h (`truth["check_time"]`).

Ground truth per trap: class, kind, table, columns, vid, time, `false`: the annotations (table, key)
the change makes false, `fixes`: {"table|key": the right fix or None (not determinable)}. Controls
carry `control: true` and no false annotations: any new finding on their tables is a false alarm.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import random
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from eval.traps import truth as tt
from eval.traps.lakeview import LakeView, TableInfo, as_date, is_date, is_int, is_num, is_ts, words
from eval.traps.taxonomy import CLASSES
from semantic.units import reworded, sole_unit_column, unit_after

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from spark_bridge import Bridge

__all__ = ["Trap", "Generator", "generate", "HOUR", "DAY", "WRITERS", "WRITER_KINDS", "writer_of", "flippable"]

HOUR = 3600.0
DAY = 86400.0
AUTHOR = "etl:traps"
WRITERS = ("spark", "engine", "iceberg")
_BOTH = ("spark", "iceberg")
# kind -> the writers that can make that change (the first: the writer before writers were chosen)
WRITER_KINDS: dict[str, tuple[str, ...]] = {
    "drop": _BOTH, "rename": _BOTH, "type_change": ("spark",), "restate_scaled": _BOTH,
    "unit_shift_restated": _BOTH, "unit_shift_new_load": _BOTH, "timezone_shift": _BOTH,
    "enum_added_inside": _BOTH, "enum_added_outside": _BOTH, "enum_removed": _BOTH, "categories_merged": _BOTH,
    "key_format_changed": _BOTH, "key_renamed": _BOTH,
    "scd2_versions": _BOTH, "periodic_snapshot": _BOTH, "duplicate_load": _BOTH,
    "stopped": (), "stuck_reruns": ("spark",), "replacement_beside": ("spark",), "deprecated_written": _BOTH,
    "metric_column_scaled": _BOTH, "metric_filter_value_renamed": _BOTH, "verified_answer_restated": _BOTH,
    "date_range_exceeded": _BOTH,
    "unit_factor_restated": _BOTH, "timezone_shift_new_load": _BOTH, "value_partly_respelled": _BOTH,
    "key_reformatted": _BOTH, "restated_same_keys": _BOTH, "key_retargeted": _BOTH,
    "compaction": _BOTH, "identical_rerun": _BOTH, "nullability_only": ("engine", "iceberg"),
    "new_nullable_column": _BOTH, "append": _BOTH,   # append: the routine loads (a writer per table and day)
}


def flippable(t: TableInfo) -> list[str]:
    """The columns a routine nullability-only change may flip without contradicting a row: outside the
    partition, and either required now (it may become optional) or optional with statistics saying it
    holds no null (it may become required). An optional column that holds nulls, or whose null count is
    unknown, is never made required: an engine refuses the next load of such a table (pyiceberg: "declared
    non-nullable but contains nulls"), and a catalog saying "never null" over nulls is a false claim, not
    a routine change."""
    out = []
    for c in t.columns:
        if c.name in t.partition:
            continue
        st = t.cstat(c.name)
        if getattr(c, "nullable", True) is False or (st is not None and st.null_count == 0):
            out.append(c.name)
    return out


def writer_of(trap: dict[str, Any]) -> str:
    """The writer of a recorded trap; truths written before writers were recorded: the kind's first
    writer (`none` for a change that writes nothing)."""
    w = trap.get("writer")
    if w:
        return str(w)
    kinds = WRITER_KINDS.get(str(trap.get("kind")), ("spark",))
    return kinds[0] if kinds else "none"


@dataclasses.dataclass
class Trap:
    id: str
    cls: str                       # a class of the taxonomy, or "control"
    kind: str
    table: str
    columns: list[str]
    description: str
    vid: int | None = None
    time: float | None = None
    false: list[list[str]] = dataclasses.field(default_factory=list)        # [table, key]
    fixes: dict[str, Any] = dataclasses.field(default_factory=dict)          # "table|key" -> fix or None
    # claims neither true nor false at the check time (a freshness SLA whose clock has not run out yet):
    # scored neither way
    pending: list[list[str]] = dataclasses.field(default_factory=list)       # [table, key]
    tables: list[str] = dataclasses.field(default_factory=list)              # every table the change wrote
    control: bool = False
    loads: int = 1
    writer: str = "spark"          # spark | engine | iceberg | none (the change writes nothing)

    def falsify(self, keys: list[tuple[str, str]],
                fix: dict[str, Any] | list[dict[str, Any] | None] | None = None) -> None:
        """The annotations `keys` made false, and the repair they take (`fix`; a list: equivalent repairs,
        any of which is right, `score.fix_matches`)."""
        for t, k in keys:
            if [t, k] in self.pending:
                continue
            if [t, k] not in self.false:
                self.false.append([t, k])
            # a verified query whose answer the change moved: re-verify it (unless the change names a repair)
            self.fixes.setdefault(f"{t}|{k}", fix if fix is not None or not k.startswith("verified_query.")
                                  else {"action": "reverify", "params": {}})


class Skip(Exception):
    """No table of the lake fits this kind (the reason says why)."""


def ties_to_other_column(t: TableInfo, c: str) -> bool:
    """Whether a claim of table `t` ties column `c` to another of its columns: `c`'s own description
    names one ("equal to cs_net_paid_inc_tax"), or a metric computes `c` with one (`SUM(c - tax)`). A
    new definition of `c` breaks such a relation, so `definitions_restated_same_keys`, whose truth is
    that `c`'s prose and metrics hold, does not pick it."""
    texts = [json.dumps(a.value) for a in t.column_anns(c) if a.field == "description"]
    texts += [str((a.value or {}).get("expression") or "") for a in t.anns if a.kind == "metric"
              and words(str((a.value or {}).get("expression") or ""), c)]
    return any(words(x, o.name) for x in texts for o in t.columns if o.name.lower() != c.lower())


class Generator:
    def __init__(self, cat: Any, bridge: Bridge, now: float, seed: int, catalog: str | None = None,
                 log: Callable[[str], None] = print, writers: tuple[str, ...] = WRITERS, iceberg: Any = None):
        self.cat, self.bridge, self.now, self.seed = cat, bridge, now, seed
        self.rng = random.Random(seed)
        bad = [w for w in writers if w not in WRITERS]
        if bad or not writers:
            raise ValueError(f"writers must be some of {', '.join(WRITERS)}, got {', '.join(writers) or 'none'}")
        self.writers = tuple(w for w in WRITERS if w in writers)
        if "iceberg" in self.writers and iceberg is None:
            raise ValueError("the iceberg writer needs an IcebergWriter (eval.traps.iceberg)")
        self.iceberg = iceberg
        # the writers' own random stream: the traps (tables, columns, values) are the same whichever writes them
        self.wrng = random.Random(f"writers-{seed}")
        self.writer = "spark"                 # the writer of the change being made
        self.view = LakeView(cat, catalog)
        self.catalog = catalog
        self.log = log
        self.used: set[str] = set()           # tables a trap or control already owns
        self.stopped: set[str] = set()        # tables no routine load writes
        self.halted: set[str] = set()         # ... of them, those a trap stopped (their rows stop, not their children's)
        self.clock = now + HOUR
        self.traps: list[Trap] = []
        self.skipped: list[dict[str, str]] = []
        self.routine_loads: list[dict[str, Any]] = []
        self.scratch: str | None = None
        self.reads = 0
        self.replacements: dict[str, str] = {}
        self.loose: set[tuple[str, str]] = set()   # the current trap's false texts on tables it does not own
        self.vid_before = 0                          # the vid before the current trap's first commit
        self.reserve: set[str] = set()               # and the tables it owns all the same
        self._unique: dict[str, bool] = {}           # whether a table's grain keys are unique (`_keys_unique`)
        self.today = dt.datetime.fromtimestamp(now, dt.timezone.utc).date()
        self.active = [t for t in sorted(self.view.tables) if self._routine_ok(self.view.tables[t])]

    # ------------------------------------------------------------------ helpers
    def _routine_ok(self, t: TableInfo) -> bool:
        """Loaded in the days before now (or under a freshness SLA): the routine loads keep loading it."""
        recent = t.last_load is not None and (t.last_load >= self.now - 4 * DAY or t.sla() is not None)
        return t.date_column(self.today) is not None and t.rows > 0 and recent and t.deprecated() is None

    def tick(self, step: float = HOUR) -> float:
        self.clock += step
        return self.clock

    def pick(self, cands: list[Any]) -> Any:
        if not cands:
            raise Skip("no candidate")
        return self.rng.choice(sorted(cands, key=str))

    def free(self, names: list[str] | None = None) -> list[TableInfo]:
        v = self.view.tables
        return [v[n] for n in sorted(names if names is not None else v) if n not in self.used and v[n].rows > 0]

    def read(self, table: str) -> DataFrame:
        """The table's rows at the latest vid as a Spark DataFrame with the catalog's column types. Read
        through the catalog's DuckDB view (`catalog_core.open_table`) into a scratch Parquet file: the
        Spark reader of a table whose files span schema changes unions one frame per file group, which
        on the Acme facts takes minutes."""
        import tempfile

        import pyarrow.parquet as pq
        from pyspark.sql import functions as F

        import catalog_core as cc

        con = cc.open_table(self.cat, table)
        try:
            arrow = con.sql(f"SELECT * FROM {table}").to_arrow_table()
        finally:
            con.close()
        if self.scratch is None:
            self.scratch = tempfile.mkdtemp(prefix="traps-read-")
        self.reads += 1
        path = f"{self.scratch}/{self.reads}.parquet"
        pq.write_table(arrow, path)
        df = self.bridge.spark.read.parquet(path)
        t = self.view.tables.get(table)
        types = {c.name: c.type for c in t.columns} if t else {}
        return df.select(*[F.col(c).cast(str(types[c])).alias(c) if types.get(c) else F.col(c) for c in df.columns])

    def choose_writer(self, kind: str) -> str:
        """The writer of this change: one of the kind's writers that are allowed, drawn from the writers'
        stream; Skip when none is allowed."""
        can = [w for w in WRITER_KINDS.get(kind, ("spark",)) if w in self.writers]
        if not WRITER_KINDS.get(kind, ("spark",)):
            return "none"
        if not can:
            raise Skip(f"{kind} is written by {', '.join(WRITER_KINDS[kind])} only (--writers {','.join(self.writers)})")
        return can[0] if len(can) == 1 else self.wrng.choice(can)

    def arrow(self, df: DataFrame) -> Any:
        """The DataFrame's rows as Arrow (what the Iceberg writer commits)."""
        return df.toArrow()

    def write(self, df: DataFrame, table: str, mode: str, msg: str, schema: str = "evolve") -> int:
        t = self.view.tables.get(table)
        pcols = t.partition if t else None
        if self.writer == "iceberg":
            return self.ice_write(df, table, mode, schema, bool(pcols))
        res = self.bridge.write(df, table, partition_by=pcols or None, mode=mode, author=AUTHOR, message=msg,
                                schema=schema, time=self.tick())
        return int(res.vid or 0)

    def ice_write(self, df: DataFrame, table: str, mode: str, schema: str, partitioned: bool,
                  at: float | None = None) -> int:
        """The bridge's write modes through Iceberg REST: append (new columns added first), overwrite of the
        partitions `df` holds (partitioned, schema evolve) or of every row, and schema="replace" (the
        table's columns that `df` lacks dropped, its new ones added: one commit)."""
        arrow = self.arrow(df)
        at = self.tick() if at is None else at
        if mode == "append":
            return int(self.iceberg.append(table, arrow, at, new_columns=True))
        drop = None
        if schema == "replace":
            t = self.view.tables.get(table)
            drop = [c.name for c in (t.columns if t else []) if c.name not in arrow.column_names]
        return int(self.iceberg.overwrite(table, arrow, at, drop=drop,
                                          partition_only=partitioned and schema != "replace"))

    def alter(self, table: str, msg: str, rename: dict[str, str] | None = None, drop: list[str] | None = None) -> int:
        """A schema change without data: `Bridge.alter` or Iceberg's update_schema."""
        if self.writer == "iceberg":
            return int(self.iceberg.alter(table, self.tick(), rename=rename, drop=drop))
        return int(self.bridge.alter(table, rename=rename, drop=drop, author=AUTHOR, message=msg, time=self.tick()))

    def restate(self, table: str, df: DataFrame, msg: str) -> int:
        """Replace every row of `table` with `df` (same columns): every file and partition replaced."""
        return self.write(df.localCheckpoint(), table, "overwrite", msg, schema="replace")

    def latest_day(self, t: TableInfo, ref: dt.date | None = None) -> tuple[DataFrame, str]:
        from pyspark.sql import functions as F

        df, dcol, mx = self._latest(t, ref)
        return df.where(F.col(dcol) == F.lit(mx)), dcol

    def _latest(self, t: TableInfo, ref: dt.date | None = None) -> tuple[DataFrame, str, Any]:
        """The table's rows, the date column a routine load advances, and that column's latest value."""
        from pyspark.sql import functions as F

        dcol = t.date_column(ref or self.today)
        if dcol is None:
            raise Skip(f"{t.name} has no recent date column")
        df = self.read(t.name)
        return df, dcol, df.agg(F.max(F.col(dcol)).alias("m")).collect()[0]["m"]

    def new_trap(self, cls: str, kind: str, table: str, columns: list[str], desc: str, **kw: Any) -> Trap:
        self.writer = self.choose_writer(kind)
        self.loose, self.reserve = set(), set()
        self.vid_before = int(self.cat.resolve(None))
        tr = Trap(id=f"{cls}.{kind}.{len(self.traps)}", cls=cls, kind=kind, table=table, columns=columns,
                  description=desc, tables=[table], writer=self.writer, **kw)
        return tr

    def answer(self, sql: str, vid: int) -> str | None:
        """The fingerprint of a verified query's answer at `vid` (`error` when it no longer runs), None
        when it could not be run for another reason (a timeout, no worker)."""
        import catalog_core as cc
        from semantic.annotations import VERIFY_ROW_LIMIT, fingerprint

        try:
            res = cc.run_sql(self.cat, sql, snapshot=vid, limit=VERIFY_ROW_LIMIT, timeout_s=120)
        except (cc.SqlError, cc.NotFoundError):  # a column or table it names is gone
            return "error"
        except cc.CatalogError:  # a timeout, a refusal: nothing is known of the answer
            return None
        return fingerprint(res.rows)

    def answers_moved(self, tr: Trap, vid: int) -> None:
        """A verified answer is false exactly when the trap moved it: every query reading a table the trap
        wrote is run before the trap's first commit and at its last; those whose answer changed (or that no
        longer run) are false, the others are not, whatever the text rules guessed. A query that could not
        be run keeps the text rules' verdict."""
        if vid == self.vid_before or tr.control:
            return  # the trap wrote nothing (a table that stops loading), or a control: nothing is false
        moved: dict[str, bool | None] = {}
        copies: list[tuple[str, str]] = []
        for name in tr.tables:
            if name not in self.view.tables:
                continue
            for u, a in self.view.verified_on(name):
                if a.key not in moved:
                    sql = str((a.value or {}).get("sql") or "")
                    before = self.answer(sql, self.vid_before)
                    after = self.answer(sql, vid) if before is not None else None
                    moved[a.key] = None if before is None or after is None else before != after
                copies.append((u, a.key))
        for u, k in sorted(set(copies)):
            if moved.get(k) is True:
                tr.falsify([(u, k)], None)
            elif moved.get(k) is False and [u, k] in tr.false:
                tr.false.remove([u, k])
                tr.fixes.pop(f"{u}|{k}", None)

    def unmatched(self, src: str, to: str, on: list[tuple[str, str]], vid: int) -> tuple[int, int, int] | None:
        """Of the rows of `src` with a key at `vid`: (how many, how many hold no match in `to` on the
        pairs `on`, how many distinct keys those unmatched rows hold); None when the join cannot run (a
        key gone, types that no longer compare, a timeout)."""
        cond = " AND ".join(f't."{b}" = s."{a}"' for a, b in on)
        keyed = " AND ".join(f's."{a}" IS NOT NULL' for a, _ in on)
        keys = ", ".join(f's."{a}"' for a, _ in on)
        row = self._row(f"SELECT count(*), count(*) FILTER (WHERE NOT m), count(DISTINCT ({keys})) FILTER (WHERE NOT m) "
                        f"FROM (SELECT {keys}, EXISTS (SELECT 1 FROM {to} t WHERE {cond}) AS m FROM {src} s WHERE {keyed}) s",
                        vid)
        return (int(row[0] or 0), int(row[1] or 0), int(row[2] or 0)) if row is not None else None

    def names_at(self, table: str, names: list[str], vid: int, at: int) -> list[str] | None:
        """The columns `names` of `table` at vid `at` (where a relationship names them), as named at
        `vid`: followed by field id (a column renamed between keeps its id; `LakeView.owns`); None
        when one is not a column at either vid (dropped, or not a column of the table)."""
        from catalog_core import lake

        def cols(v: int) -> list[lake.Column] | None:
            try:
                return list(lake.TableValue.from_raw(lake.require_table(self.cat, table, v).value).schema.columns)
            except Exception:  # noqa: BLE001 - the table is not there at v
                return None

        then, now = cols(at), cols(vid)
        if then is None or now is None:
            return None
        out = []
        for n in names:
            c = next((x for x in then if x.name.lower() == n.lower()), None)
            if c is None:
                return None
            same = next((x for x in now if c.id is not None and x.id == c.id), None) if c.id is not None else \
                next((x for x in now if x.name.lower() == n.lower()), None)
            if same is None:
                return None
            out.append(same.name)
        return out

    def _row(self, sql: str, vid: int) -> list[Any] | None:
        """The first row `sql` answers at `vid`; None when it answers none or cannot run (a column renamed
        away, a timeout)."""
        import catalog_core as cc

        try:
            res = cc.run_sql(self.cat, sql, snapshot=vid, limit=1, timeout_s=120)
        except cc.CatalogError:
            return None
        return list(res.rows[0]) if res.rows else None

    def _count(self, sql: str, vid: int) -> int | None:
        """The one number `sql` answers at `vid`; None when it cannot run (a column renamed away, a timeout)."""
        row = self._row(sql, vid)
        return int(row[0]) if row is not None else None

    def joins_orphaned(self, tr: Trap, vid: int) -> None:
        """A relationship is false when the change left a larger share of its source's keyed rows without
        a match, on keys that had none unmatched before: rows of the table it joins to removed or rekeyed
        (rows that matched lose their match), or rows of its source written with keys the joined table
        does not hold (a version whose key attribute changed): an inner join through it now drops rows it
        did not, and so does every metric on its table that reads the joined table through it. Shares, not
        counts (rows added beside are not rows lost), and new unmatched keys, not more rows of the same
        ones (a day loaded twice whose keys were unmatched already changes the share, not the claim).
        The change may write either side; the key columns are followed by field id from before the change
        to after it (`names_at`). Read from the data, like `answers_moved`; the texts stay loose (they
        reserve no table for the trap)."""
        if vid == self.vid_before or tr.control:
            return
        for src, a in self.view.relationships():
            v = a.value or {}
            to = v.get("to")
            on = [(str(p[0]), str(p[1])) for p in v.get("on") or [] if isinstance(p, (list, tuple)) and len(p) == 2]
            if (to not in tr.tables and src not in tr.tables) or src == to or not on or [src, a.key] in tr.false \
                    or src not in self.view.tables or not isinstance(to, str):
                continue
            before = self.unmatched(src, to, on, self.vid_before)
            ls = self.names_at(src, [p[0] for p in on], vid, self.vid_before) if before is not None else None
            rs = self.names_at(to, [p[1] for p in on], vid, self.vid_before) if ls is not None else None
            after = self.unmatched(src, to, list(zip(ls, rs)), vid) if ls is not None and rs is not None else None
            if before is None or after is None or not after[0]:
                continue
            share_then = before[1] / before[0] if before[0] else 0.0
            if after[1] / after[0] <= share_then or after[2] <= before[2]:
                continue
            keys = sorted({(src, a.key)} | set(tt.metrics_through(self.view, [(src, a.key)], to))
                          | set(tt.join_prose(self.view, src, a.key)))
            for k in keys:
                if k[0] not in tr.tables:
                    self.loose.add(k)
            tr.falsify(keys, None)

    def repeated(self, table: str, keys: list[str], vid: int) -> int | None:
        """How many values of `keys` (none of them null) occur on more than one row of `table` at `vid`;
        None when the query cannot run (a key renamed away, a timeout)."""
        cols = ", ".join(f'"{k}"' for k in keys)
        keyed = " AND ".join(f'"{k}" IS NOT NULL' for k in keys)
        return self._count(f"SELECT count(*) FROM (SELECT {cols} FROM {table} WHERE {keyed} GROUP BY {cols} "
                           "HAVING count(*) > 1)", vid)

    def grains_repeated(self, tr: Trap, vid: int) -> None:
        """A grain is false when the change made its keys repeat where they did not before (rows loaded
        again with their keys kept), and so is the prose stating it, whatever the trap meant to change:
        read from the data, like `answers_moved`."""
        if vid == self.vid_before or tr.control:
            return
        for name in tr.tables:
            t = self.view.tables.get(name)
            g = t.ann("table.grain") if t is not None else None
            keys = t.grain_keys() if t is not None else []
            if t is None or g is None or not keys or [name, g.key] in tr.false:
                continue
            before = self.repeated(name, keys, self.vid_before)
            after = self.repeated(name, keys, vid) if before == 0 else None
            if after:
                tr.falsify(tt.grain_texts(self.view, name), None)

    def done(self, tr: Trap, vid: int) -> Trap:
        tr.vid, tr.time = vid, self.clock
        self.answers_moved(tr, vid)
        self.joins_orphaned(tr, vid)
        self.grains_repeated(tr, vid)
        self.traps.append(tr)
        self.used.update(tr.tables)
        self.used.update(self.reserve)
        for t, k in tr.false:
            # a query's copy on every table it reads (dim_date: all of them); a text on another table that
            # only names the changed table's column: neither reserves its table for this trap
            if not k.startswith("verified_query.") and (t, k) not in self.loose:
                self.used.add(t)
        self.loose, self.reserve = set(), set()
        self.log(f"  {tr.cls}/{tr.kind} on {tr.table} {tr.columns} ({tr.writer}): vid {vid}, {len(tr.false)} "
                 "annotation(s) made false")
        return tr

    def texts(self, tr: Trap, before: list[tuple[str, str]], found: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """`found` (the texts `eval.traps.truth` finds false), reserving for the trap the tables that the
        generator's earlier rule (`before`: name matches) reserved and no other (`done`): the traps drawn
        after it stay the same as before the truth read the texts."""
        for k in found:
            if k not in before and k[0] not in tr.tables:
                self.loose.add(k)
        self.reserve.update(t for t, k in before if not k.startswith("verified_query."))
        return found

    def _instructions(self, tr: Trap, table: str, col: str, change: str, value: str | None = None,
                      fix: Any = None) -> None:
        """The catalogs' and namespaces' instructions the change makes false (`truth.instruction_texts`), with
        their fix (None: a person rewrites the sentence), recorded before the trap's other claims."""
        tr.falsify(tt.instruction_texts(self.view, table, col, change, value), fix)

    def _prose(self, table: str, key: str) -> bool:
        """Whether the annotation is prose (a description...): a new name in it is rewritten by the review's
        `rename` (the name in the text) or by hand."""
        a = self.view.tables[table].ann(key) if table in self.view.tables else None
        return a is not None and a.field in tt.PROSE_FIELDS and a.field != "grain"

    def check_time(self) -> float:
        return self.now + 2 * DAY + HOUR

    def _sla_holds(self, t: TableInfo) -> bool:
        """`t` has a freshness SLA that holds at the lake's now (one already missed then is no trap's doing)."""
        sla = t.sla()
        return sla is not None and tt.sla_state(sla.value, t.last_load, self.now) == "pending"

    def falsify_sla(self, tr: Trap, t: TableInfo, fix: dict[str, Any] | None) -> None:
        """The table stops getting new data: its freshness SLA is false once the check clock passes the SLA
        after its last data, pending before. An SLA already missed at the lake's now (TPC-DS web returns: no
        return on the latest day, 28 h past a 26 h SLA) was false before the trap: not the trap's to count
        (a flag standing since is no new flag, and was scored a miss)."""
        sla = t.sla()
        if sla is None or not self._sla_holds(t):
            return
        if tt.sla_state(sla.value, t.last_load, self.check_time()) == "pending":
            if [t.name, sla.key] not in tr.pending:
                tr.pending.append([t.name, sla.key])
            return
        tr.falsify([(t.name, sla.key)], fix)
        tr.fixes[f"{t.name}|{sla.key}"] = fix

    # ------------------------------------------------------------------ schema
    def schema_drop(self) -> Trap:
        t = self.pick([t for t in self.free() if [c for c in self._annotated_cols(t) if c not in t.partition]])
        col = self.pick([c for c in self._annotated_cols(t) if c not in t.partition])
        tr = self.new_trap("schema", "drop", t.name, [col], f"column {col} dropped")
        self._instructions(tr, t.name, col, "gone")
        # its own annotations and every text naming it
        tr.falsify(self.texts(tr, self.view.refs(t.name, col, own=True), tt.column_texts(self.view, t.name, col, own=True)), None)
        for a in t.column_anns(col):  # the column's own annotations describe nothing now: they go
            if [t.name, a.key] in tr.false:
                tr.fixes[f"{t.name}|{a.key}"] = {"action": "remove", "params": {"column": col}}
        for a in t.anns:  # so does a relationship joining from it (nothing else of the table holds its keys)
            on = (a.value or {}).get("on") if a.kind == "relationship" and isinstance(a.value, dict) else None
            if on and [t.name, a.key] in tr.false and col in {str(p[0]) for p in on if len(p) == 2}:
                tr.fixes[f"{t.name}|{a.key}"] = {"action": "remove", "params": {"column": col}}
        vid = self.alter(t.name, f"drop {col}", drop=[col])
        return self.done(tr, vid)

    def schema_rename(self) -> Trap:
        cands = [(t, c) for t in self.free() for c in t.grain_keys() + self._annotated_cols(t)
                 if c not in t.partition and self.view.refs(t.name, c)]
        t, col = self.pick(cands)
        new = self.rng.choice(["{}_key", "{}_code", "src_{}", "{}_v2"]).format(col)
        tr = self.new_trap("schema", "rename", t.name, [col, new], f"column {col} renamed {new}")
        ren = {"action": "rename", "params": {"old": col, "new": new, "scale": 0}}
        self._instructions(tr, t.name, col, "gone", fix=[ren, None])
        # the column's own annotations follow its field id: what is false is every text naming the old name
        named = self.texts(tr, self.view.refs(t.name, col), tt.column_texts(self.view, t.name, col, own=False))
        tr.falsify(named, ren)
        for tb, k in named:
            if k.startswith("relationship.") and tb != t.name:  # a join into the renamed key: either says it
                tr.fixes[f"{tb}|{k}"] = [ren, {"action": "join_on", "params": {"to_table": t.name, "to_column": new}}]
            elif self._prose(tb, k):  # prose: the review rewrites the old name in the text, or a person does
                tr.fixes[f"{tb}|{k}"] = [ren, None]
        vid = self.alter(t.name, f"rename {col} to {new}", rename={col: new})
        return self.done(tr, vid)

    def schema_type_change(self) -> Trap:
        from pyspark.sql import functions as F

        def typed_refs(t: TableInfo, col: str) -> list[tuple[str, str]]:  # claims a text column breaks: joins too
            return sorted(set(self._semantic_refs(t, col)) | {(u, k) for u, k in self.view.refs(t.name, col)
                                                               if k.startswith("relationship.")})

        cands = [(t, c.name) for t in self.free() for c in t.columns
                 if is_int(c.type) and c.name not in t.partition and c.name not in t.grain_keys()
                 and typed_refs(t, c.name)]
        t, col = self.pick(cands)
        tr = self.new_trap("schema", "type_change", t.name, [col], f"{col} restated as zero-padded text")
        tr.falsify(typed_refs(t, col), None)
        df = self.read(t.name).withColumn(col, F.lpad(F.col(col).cast("string"), 10, "0"))
        return self.done(tr, self.restate(t.name, df, f"{col} as text"))

    def schema_restate_scaled(self) -> Trap:
        from pyspark.sql import functions as F

        cands = [(t, c.name) for t in self.free() for c in t.columns
                 if is_int(c.type) and c.name.lower().endswith("_cents") and c.name not in t.partition]
        t, col = self.pick(cands)
        new = col[: -len("_cents")] + "_usd"
        if t.col(new):
            raise Skip(f"{t.name} already has {new}")
        tr = self.new_trap("schema", "restate_scaled", t.name, [col, new], f"{col} replaced by {new} = {col} / 100")
        self._instructions(tr, t.name, col, "gone")
        desc, ua = t.ann("table.description"), t.column_field(col, "unit")
        unit = tt.unit_of(col, ua.value if ua is not None else None)
        prose = [(t.name, desc.key)] if desc is not None and isinstance(desc.value, str) and unit is not None \
            and tt.names_unit(desc.value, unit) else []  # "prices in cents": the column is in dollars now
        tr.falsify(prose, None)  # prose a person rewrites (no rename re-points it)
        tr.falsify(self.texts(tr, self.view.refs(t.name, col, own=True), tt.column_texts(self.view, t.name, col, own=True)),
                   {"action": "rename", "params": {"old": col, "new": new, "scale": -2}})
        df = self.read(t.name)
        cols = [(F.col(c.name).cast("decimal(14,2)") / 100).cast("decimal(14,2)").alias(new) if c.name == col
                else F.col(c.name) for c in t.columns]
        return self.done(tr, self.restate(t.name, df.select(*cols), f"restate {col} as {new} in dollars"))

    # ------------------------------------------------------------------ values and units
    def _unit_cols(self, t: TableInfo) -> list[str]:
        return [c.name for c in t.columns if is_num(c.type) and c.name not in t.partition
                and c.name not in t.grain_keys() and (t.column_field(c.name, "unit") is not None
                                                      or c.name.lower().endswith(("_cents", "_usd")))]

    def _unit_false(self, t: TableInfo, col: str, tr: Trap | None = None, near_one: bool = False) -> list[tuple[str, str]]:
        """The column's unit, sample values and enum, its description when it states a unit (`truth.names_unit`
        of the column's unit or of any unit the truth knows: "Lifetime net revenue of the customer" holds in
        cents and in dollars; with `near_one`, a factor near 1, a tax or a currency, always: what the values
        mean changed), every metric or verified query (on any table) that computes with it, and the table's
        description when it names the column's unit ("money in dollars"). Not its additivity: how a measure
        may be summed (across which dimensions) is a property of what it measures, not of the unit its values
        are written in."""
        ua, desc = t.column_field(col, "unit"), t.ann("table.description")
        unit = tt.unit_of(col, ua.value if ua is not None else None)

        def states_unit(a: Any) -> bool:
            text = a.value if isinstance(a.value, str) else ""
            return near_one or any(tt.names_unit(text, u) for u in (*tt.UNIT_WORDS, *([unit] if unit else [])))

        keys = [(t.name, a.key) for a in t.column_anns(col) if a.field in ("unit", "sample_values")
                or (a.field == "description" and states_unit(a))]
        before = sorted(set(keys + self._semantic_refs(t, col)))
        own = [(t.name, a.key) for a in t.column_anns(col) if a.field in ("unit", "sample_values", "enum")]
        defs = [(u, k) for u, k in tt.column_texts(self.view, t.name, col, own=False)
                if k.startswith(("metric.", "verified_query."))]
        prose = [(t.name, desc.key)] if desc is not None and isinstance(desc.value, str) and unit is not None \
            and tt.names_unit(desc.value, unit) else []
        found = sorted(set(keys + own + defs + prose + tt.instruction_texts(self.view, t.name, col, "unit")))
        return self.texts(tr, before, found) if tr is not None else found

    def _reworded(self, tr: Trap, t: TableInfo, col: str, factor: float) -> None:
        """Every row of `col` restated by `factor`: its description, made false, naming the unit once and
        nothing else a change of unit makes false, says the new unit instead (`semantic.units.reworded`:
        "in hours" x60 -> "in minutes"), and so may its table's description, of the one column with a unit
        of that kind; any other text is a person's to rewrite (None)."""
        desc = t.column_field(col, "description")
        words = reworded(desc.value, factor) if desc is not None else None
        if desc is not None and words is not None and [t.name, desc.key] in tr.false:
            tr.fixes[f"{t.name}|{desc.key}"] = {"action": "reword_unit",
                                                "params": {"column": col, "old": words[0], "new": words[1]}}
        # the table's description naming that unit once, of the one column with a unit of its kind: a person's
        # rewrite, or the same rewording (`semantic.units.sole_unit_column`)
        td = t.ann("table.description")
        words = reworded(td.value, factor) if td is not None else None
        if td is not None and words is not None and [t.name, td.key] in tr.false and \
                sole_unit_column(t.anns, col, words[0]) and tr.fixes.get(f"{t.name}|{td.key}") is None:
            tr.fixes[f"{t.name}|{td.key}"] = [None, {"action": "reword_unit",
                                                     "params": {"column": col, "old": words[0], "new": words[1]}}]

    def _rescaled_metrics(self, tr: Trap, t: TableInfo, col: str, params: dict[str, Any]) -> None:
        """Every row of `col` restated by one factor: a metric of its table computing with it, made false,
        is rewritten on the values as they were (`update_unit`: the review divides the column by the
        factor in its expression and filter), so it keeps its unit."""
        for a in t.anns:
            if a.kind != "metric" or [t.name, a.key] not in tr.false or not isinstance(a.value, dict):
                continue
            if words(" ".join(str(a.value.get(k) or "") for k in ("expression", "filter")), col):
                tr.fixes[f"{t.name}|{a.key}"] = {"action": "update_unit", "params": dict(params)}

    def _scale(self, t: TableInfo, col: str) -> int:
        return self.rng.choice([2, 3]) if is_int(t.type_of(col)) else self.rng.choice([2, -2])

    def _scaled(self, df: DataFrame, col: str, typ: str, k: int) -> Any:
        from pyspark.sql import functions as F

        return (F.col(col) * F.lit(10 ** k) if k > 0 else F.col(col) / F.lit(10 ** -k)).cast(typ)

    def values_unit_shift_restated(self) -> Trap:
        t = self.pick([t for t in self.free() if self._unit_cols(t)])
        col = self.pick(self._unit_cols(t))
        k = self._scale(t, col)
        tr = self.new_trap("values_units", "unit_shift_restated", t.name, [col], f"{col} restated x 10^{k} in place")
        tr.falsify(self._unit_false(t, col, tr), None)
        ua = t.column_field(col, "unit")
        if ua is not None:
            tr.fixes[f"{t.name}|{ua.key}"] = {"action": "update_unit", "params": {"column": col, "scale": k}}
        self._reworded(tr, t, col, 10.0 ** k)
        self._rescaled_metrics(tr, t, col, {"column": col, "scale": k})
        df = self.read(t.name)
        df = df.withColumn(col, self._scaled(df, col, t.type_of(col), k))
        return self.done(tr, self.restate(t.name, df, f"restate {col}"))

    def values_unit_shift_new_load(self) -> Trap:
        t = self.pick([t for t in self.free(self.active) if self._unit_cols(t)])
        col = self.pick(self._unit_cols(t))
        k = self._scale(t, col)
        tr = self.new_trap("values_units", "unit_shift_new_load", t.name, [col], f"new load with {col} x 10^{k}")
        tr.falsify(self._unit_false(t, col, tr), None)
        ua = t.column_field(col, "unit")
        if ua is not None:  # the old rows keep the old unit: no single unit is right for the column
            tr.fixes[f"{t.name}|{ua.key}"] = None
        day = self.replay(t, 1)
        day = day.withColumn(col, self._scaled(day, col, t.type_of(col), k))
        tr.loads = 1
        return self.done(tr, self.write(day, t.name, "append", f"load with {col} in new unit"))

    # a unit -> the units it may be restated in and the factor (a value in the new unit = old x factor):
    # time and money, not powers of ten (kg -> g, a power of ten, is the one the fix vocabulary can say)
    UNIT_FACTORS: dict[str, tuple[tuple[str, float], ...]] = {
        "hours": (("minutes", 60), ("seconds", 3600)), "hour": (("minutes", 60), ("seconds", 3600)),
        "minutes": (("seconds", 60),), "minute": (("seconds", 60),), "days": (("hours", 24),), "day": (("hours", 24),),
        "usd": (("eur", 0.92), ("gbp", 0.79), ("cad", 1.36)), "dollars": (("eur", 0.92), ("gbp", 0.79), ("cad", 1.36)),
        "cents": (("eur cents", 0.92), ("pence", 0.79)), "usd cents": (("eur cents", 0.92), ("pence", 0.79)),
        "usd_cents": (("eur cents", 0.92), ("pence", 0.79)), "eur": (("usd", 1.09), ("gbp", 0.86)),
        "kg": (("g", 1000),), "kilograms": (("grams", 1000),),
    }

    def _fits(self, t: TableInfo, col: str, factor: float) -> bool:
        """Whether the column's values x `factor` still fit its type (a decimal's digits, an int's range)."""
        import re

        def num(v: Any) -> float | None:
            try:
                return abs(float(v)) if v is not None and not isinstance(v, bool) else None
            except (TypeError, ValueError):
                return None

        s = t.cstat(col)
        lim = max((x for x in (num(v) for v in ((s.min, s.max) if s else ())) if x is not None), default=None)
        if lim is None:
            return False
        typ = t.type_of(col).lower()
        m = re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", typ)
        bound = 10.0 ** (int(m.group(1)) - int(m.group(2))) if m else 2.0 ** 31 if typ in ("int", "integer") \
            else 2.0 ** 63 if is_int(typ) else float("inf")
        return lim * factor < bound

    def _factor_cols(self, t: TableInfo) -> list[tuple[str, str, float]]:
        """(column, new unit, factor) of the unit-annotated measures in a time or money unit whose values
        still fit their type once restated by a factor of `UNIT_FACTORS`."""
        out = []
        for col in self._unit_cols(t):
            ua = t.column_field(col, "unit")
            if ua is None or not isinstance(ua.value, str):
                continue
            for unit, f in self.UNIT_FACTORS.get(ua.value.strip().lower(), ()):
                if self._fits(t, col, f):
                    out.append((col, unit, float(f)))
        return out

    def values_unit_factor_restated(self) -> Trap:
        """A measure in a time or money unit restated in place in another unit by a factor that is no power
        of ten (hours -> minutes x 60, USD -> EUR x 0.92), the same name and type."""
        import math

        from pyspark.sql import functions as F

        t = self.pick([t for t in self.free() if self._factor_cols(t)])
        col, unit, f = self.pick(self._factor_cols(t))
        ua = t.column_field(col, "unit")
        tr = self.new_trap("values_units", "unit_factor_restated", t.name, [col],
                           f"{col} restated in {unit} (x {f:g}) in place, was {ua.value if ua is not None else '?'}")
        tr.falsify(self._unit_false(t, col, tr, near_one=abs(math.log10(f)) < math.log10(1.5)), None)
        k = math.log10(f)
        if ua is not None and abs(k - round(k)) < 1e-9:  # x 10^k
            tr.fixes[f"{t.name}|{ua.key}"] = {"action": "update_unit", "params": {"column": col, "scale": int(round(k))}}
        elif ua is not None and unit_after(ua.value, f) is not None:  # hours -> minutes: `update_unit` says x60 too
            tr.fixes[f"{t.name}|{ua.key}"] = {"action": "update_unit", "params": {"column": col, "factor": f}}
        self._reworded(tr, t, col, f)
        self._rescaled_metrics(tr, t, col, {"column": col, "scale": int(round(k))} if abs(k - round(k)) < 1e-9
                               else {"column": col, "factor": f})
        df = self.read(t.name)
        typ = t.type_of(col)
        val = F.col(col) * F.lit(f)
        df = df.withColumn(col, (F.round(val) if is_int(typ) else val).cast(typ))
        return self.done(tr, self.restate(t.name, df, f"restate {col} in {unit}"))

    def values_timezone_shift(self) -> Trap:
        from pyspark.sql import functions as F

        t, col = self.pick([(t, c) for t in self.free() for c in self._tz_cols(t)])
        h = self.rng.choice([-5, -8, 1, 9])
        tr = self.new_trap("values_units", "timezone_shift", t.name, [col], f"{col} restated shifted {h:+d} h")
        tr.falsify(self._tz_false(t, col), None)
        df = self.read(t.name).withColumn(col, F.col(col) + F.expr(f"INTERVAL {h} HOURS"))
        return self.done(tr, self.restate(t.name, df, f"restate {col} in another zone"))

    def _tz_cols(self, t: TableInfo) -> list[str]:
        return [c.name for c in t.columns if is_ts(c.type) and c.name not in t.partition
                and (t.column_anns(c.name) or "utc" in c.name.lower())]

    def _tz_false(self, t: TableInfo, col: str) -> list[tuple[str, str]]:
        """What a timestamp column's values in another zone make false: its description, unit and sample
        values; when it has none of those, its table's description if it says what zone times are in or
        names the column (`truth.says_zone`), and so the reason its not_for_reporting gives ("raw input:
        store-local timestamps"); and the verified queries reading it (`done` keeps those whose answer
        moved). A role ('time') or a description of what the rows are claims no zone."""
        keys = [(t.name, a.key) for a in t.column_anns(col) if a.field in ("description", "unit", "sample_values")]
        if not keys:  # the table's texts saying what zone the times are in, or naming the column
            for key in ("table.description", "table.not_for_reporting"):
                a = t.ann(key)
                v = a.value if a is not None else None
                text = " ".join(x for x in (v.values() if isinstance(v, dict) else [v]) if isinstance(x, str))
                if a is not None and tt.says_zone(text, col):
                    keys.append((t.name, key))
        return keys + self._vq_col(t, col) + tt.instruction_texts(self.view, t.name, col, "zone")

    def values_timezone_shift_new_load(self) -> Trap:
        """New loads (the latest day replayed as a new day) arrive with a timestamp column shifted some hours
        (local time written into a UTC column); the old rows keep UTC."""
        from pyspark.sql import functions as F

        t = self.pick([t for t in self.free(self.active) if self._tz_cols(t)])
        col = self.pick(self._tz_cols(t))
        h = self.rng.choice([-5, -8, 1, 9])
        tr = self.new_trap("values_units", "timezone_shift_new_load", t.name, [col],
                           f"new load with {col} shifted {h:+d} h (local time in a UTC column)")
        tr.falsify(self._tz_false(t, col), None)   # old rows UTC, new ones local: no single fix
        day = self.replay(t, 1)
        day = day.withColumn(col, F.col(col) + F.expr(f"INTERVAL {h} HOURS"))
        tr.loads = 1
        return self.done(tr, self.write(day.localCheckpoint(), t.name, "append", f"load with {col} in local time"))

    def _enum_cols(self, t: TableInfo, n: int = 2) -> list[str]:
        out = []
        for c in t.columns:
            a = t.column_field(c.name, "enum")
            if a is not None and isinstance(a.value, list) and len(a.value) >= n and (c.type or "").lower() == "string" \
                    and c.name not in t.partition:
                out.append(c.name)
        return out

    def _enum(self, t: TableInfo, col: str) -> tuple[Any, list[str]]:
        a = t.column_field(col, "enum")
        if a is None:
            raise Skip(f"{t.name}.{col} has no enum")
        return a, [str(v) for v in a.value if v is not None]

    def _enum_keys(self, t: TableInfo, col: str) -> list[tuple[str, str]]:
        own = [(t.name, a.key) for a in t.column_anns(col) if a.field in ("enum", "sample_values", "labels")]
        return own

    def _present(self, t: TableInfo, col: str) -> list[str]:
        import catalog_core as cc

        con = cc.open_table(self.cat, t.name)
        try:
            rows = con.execute(f'SELECT DISTINCT "{col}" FROM {t.name}').fetchall()
        finally:
            con.close()
        return sorted(str(r[0]) for r in rows if r[0] is not None)

    def values_enum_added(self, inside: bool) -> Trap:
        from pyspark.sql import functions as F

        t = self.pick([t for t in self.free() if self._enum_cols(t, 2 if inside else 1)])
        col = self.pick(self._enum_cols(t, 2 if inside else 1))
        a, vals = self._enum(t, col)
        present = self._present(t, col)
        if inside:
            if len(present) < 2:
                raise Skip(f"{t.name}.{col} holds fewer than 2 values")
            lo = self.rng.randrange(len(present) - 1)
            new = present[lo] + "_" + self.rng.choice(["pending", "review", "hold", "other"])
            if not present[lo] < new < present[lo + 1]:
                new = present[lo] + "0"
        else:
            new = "zz_" + self.rng.choice(["pending", "review", "hold", "other"])
        kind = "enum_added_inside" if inside else "enum_added_outside"
        tr = self.new_trap("values_units", kind, t.name, [col], f"{col} gains {new!r}")
        # the enum and every text listing the complete set of values (of the enum, or of those present)
        full = sorted(set(tt.complete_set_texts(self.view, t.name, col, vals))
                      | set(tt.complete_set_texts(self.view, t.name, col, present)))
        tr.falsify(self.texts(tr, self._enum_keys(t, col), full) + self._vq_col(t, col), None)
        tr.fixes[f"{t.name}|{a.key}"] = {"action": "add_enum_values", "params": {"column": col, "values": [new]}}
        df = self.read(t.name)
        pick = F.rand(self.seed) < F.lit(0.15)
        df = df.withColumn(col, F.when(pick & F.col(col).isNotNull(), F.lit(new)).otherwise(F.col(col)))
        return self.done(tr, self.restate(t.name, df, f"{col}: new value {new}"))

    def values_enum_added_inside(self) -> Trap:
        return self.values_enum_added(True)

    def values_enum_added_outside(self) -> Trap:
        return self.values_enum_added(False)

    def values_enum_removed(self) -> Trap:
        from pyspark.sql import functions as F

        t = self.pick([t for t in self.free() if self._enum_cols(t, 3)])
        col = self.pick(self._enum_cols(t, 3))
        a, vals = self._enum(t, col)
        present = [v for v in self._present(t, col) if v in vals]
        if len(present) < 3:
            raise Skip(f"{t.name}.{col} holds fewer than 3 enum values")
        gone = self.rng.choice(present)
        tr = self.new_trap("values_units", "enum_removed", t.name, [col], f"{col} no longer holds {gone!r} (rows removed)")
        self._instructions(tr, t.name, col, "value", gone)
        # the enum, and every text naming the gone value (sample values only when they list it)
        named = [(t.name, a.key)] + tt.value_texts(self.view, t.name, col, gone, "removed")
        tr.falsify(self.texts(tr, self._enum_keys(t, col) + self._value_refs(t, col, gone), sorted(set(named)))
                   + self._vq_table(t), None)
        df = self.read(t.name).where(F.col(col).isNull() | (F.col(col) != F.lit(gone)))
        self.went_with(tr, t, col, df)
        return self.done(tr, self.restate(t.name, df, f"{col}: {gone} rows removed"))

    def went_with(self, tr: Trap, t: TableInfo, col: str, df: DataFrame) -> None:
        """A value of another column that no row holds once the rows are removed went with them as surely
        as the removed value did: the enum or labels listing it, and the texts naming it, are false alike
        (read from the data, not from which column the trap meant: a one-row removal takes every value
        that row alone held)."""
        for c in t.columns:
            lists = [a for a in t.column_anns(c.name) if a.field in ("enum", "labels") and isinstance(a.value, (list, dict))]
            if c.name == col or c.name in t.partition or not lists:
                continue
            after = {str(r[0]) for r in df.select(c.name).distinct().collect() if r[0] is not None}
            for v in sorted(set(self._present(t, c.name)) - after):
                named = [(t.name, a.key) for a in lists if v in {str(x) for x in a.value}]
                if named:
                    self._instructions(tr, t.name, c.name, "value", v)
                    named += tt.value_texts(self.view, t.name, c.name, v, "removed")
                    tr.falsify(self.texts(tr, [], sorted(set(named))), None)

    def values_categories_merged(self) -> Trap:
        from pyspark.sql import functions as F

        t = self.pick([t for t in self.free() if self._enum_cols(t, 3)])
        col = self.pick(self._enum_cols(t, 3))
        a, vals = self._enum(t, col)
        present = [v for v in self._present(t, col) if v in vals]
        if len(present) < 3:
            raise Skip(f"{t.name}.{col} holds fewer than 3 enum values")
        old, new = self.rng.sample(present, 2)
        tr = self.new_trap("values_units", "categories_merged", t.name, [col], f"{col}: {old!r} merged into {new!r}")
        self._instructions(tr, t.name, col, "value", old)
        named = sorted({(t.name, a.key)} | set(tt.value_texts(self.view, t.name, col, old, "merged")))
        texts = self.texts(tr, self._enum_keys(t, col) + self._value_refs(t, col, old), named)
        # a filter or a query selecting by the old value: mapped, it selects other rows ("<> 'cancelled'" ->
        # "<> 'delivered'" drops the delivered rows), and no filter tells the merged rows apart now: no map
        # (a person decides; a query is re-verified)
        tr.falsify([x for x in texts if x[1].startswith(("metric.", "verified_query."))], None)
        tr.falsify([x for x in texts if not x[1].startswith(("metric.", "verified_query."))],
                   {"action": "value_map", "params": {"column": col, "map": {old: new}}})
        tr.falsify(tt.queries_showing(self.view, t.name, col, [old, new]), None)  # whose answer shows either
        tr.falsify(tt.metrics_selecting(self.view, t.name, col, new), None)  # it now counts the merged rows too
        # two values of a grain key become one: the grain is false when its keys then repeat, which the
        # data says at `done` (`grains_repeated`): other keys (a campaign id) may still tell the rows apart
        after = sorted(set(present) - {old} | set(v for v in self._present(t, col) if v != old))
        tr.fixes[f"{t.name}|{a.key}"] = {"action": "value_map", "params": {"column": col, "map": {old: new},
                                                                           "values": after}}
        df = self.read(t.name).withColumn(col, F.when(F.col(col) == F.lit(old), F.lit(new)).otherwise(F.col(col)))
        return self.done(tr, self.restate(t.name, df, f"{col}: {old} merged into {new}"))

    def _value_counts(self, t: TableInfo, col: str) -> dict[str, int]:
        import catalog_core as cc

        con = cc.open_table(self.cat, t.name)
        try:
            rows = con.execute(f'SELECT "{col}", count(*) FROM {t.name} WHERE "{col}" IS NOT NULL GROUP BY 1').fetchall()
        finally:
            con.close()
        return {str(r[0]): int(r[1]) for r in rows}

    def values_partly_respelled(self) -> Trap:
        """A restatement moves part (30-70%) of ONE enumerated value's rows to a new spelling (a new system
        writes it so for some periods) while the old value still occurs on the other rows."""
        from pyspark.sql import functions as F

        t = self.pick([t for t in self.free() if self._enum_cols(t, 2)])
        col = self.pick(self._enum_cols(t, 2))
        a, vals = self._enum(t, col)
        counts = self._value_counts(t, col)
        olds = [v for v in vals if counts.get(v, 0) >= 20]   # enough rows that part moves and part stays
        if not olds:
            raise Skip(f"{t.name}.{col}: no enum value on 20 rows or more")
        old = self.pick(olds)
        new = self.rng.choice([old.upper(), old.title(), old.replace("_", "-") if "_" in old else old + "_v2",
                               old[:4] + "_" + old[4:]])
        if new == old or new in counts or new in vals:
            new = old + "_v2"
        share = round(self.rng.uniform(0.3, 0.7), 2)
        df = self.read(t.name)
        pick = (F.col(col) == F.lit(old)) & (F.rand(self.seed) < F.lit(share))
        df = df.withColumn(col, F.when(pick, F.lit(new)).otherwise(F.col(col))).localCheckpoint()
        moved, kept = (df.where(F.col(col) == F.lit(v)).count() for v in (new, old))
        if moved < 5 or kept < 5:
            raise Skip(f"{t.name}.{col}: {moved} of the {old!r} rows drawn, {kept} left (5 of each needed)")
        tr = self.new_trap("values_units", "value_partly_respelled", t.name, [col],
                           f"{col}: {moved} of the {moved + kept} {old!r} rows respelled {new!r} ({old!r} still occurs)")
        present = sorted(counts)
        self._instructions(tr, t.name, col, "value", old)
        # the enum (the new value is outside it) and every text listing the complete set of values
        full = sorted(set(tt.complete_set_texts(self.view, t.name, col, vals))
                      | set(tt.complete_set_texts(self.view, t.name, col, present)))
        # SQL testing the old value (metric filters, conditions, verified queries: part of its rows are no
        # longer selected), and the column's own description naming it (what it says of the value now
        # covers part of its rows); not the value lists naming the old value (it still occurs)
        own = {(t.name, x.key) for x in t.column_anns(col) if x.field == "description"}
        named = [(u, k) for u, k in tt.value_texts(self.view, t.name, col, old, "respelled")
                 if k.startswith(("metric.", "verified_query.", "relationship.")) or (u, k) in own]
        tr.falsify(self.texts(tr, self._enum_keys(t, col) + self._value_refs(t, col, old), sorted(set(full) | set(named))),
                   None)
        tr.falsify(tt.queries_showing(self.view, t.name, col, [old]), None)   # whose answer shows the value
        tr.falsify(self.texts(tr, [], self._log_refs(t, col, old, df)), None)  # a person says which list takes it
        tr.fixes[f"{t.name}|{a.key}"] = {"action": "add_enum_values", "params": {"column": col, "values": [new]}}
        return self.done(tr, self.restate(t.name, df, f"{col}: part of {old} spelled {new}"))

    # ------------------------------------------------------------------ keys and joins
    def _rels(self) -> list[tuple[str, Any, str, str, str]]:
        """(from table, annotation, from column, to table, to column) of single-column relationships
        between tables that exist, both free."""
        out = []
        for src, a in self.view.relationships():
            v = a.value or {}
            on = v.get("on") or []
            to = v.get("to")
            if len(on) == 1 and to in self.view.tables and src not in self.used and to not in self.used and src != to:
                out.append((src, a, str(on[0][0]), to, str(on[0][1])))
        return out

    def keys_format_changed(self) -> Trap:
        from pyspark.sql import functions as F

        cands = [r for r in self._rels() if is_int(self.view.tables[r[3]].type_of(r[4]))
                 and is_int(self.view.tables[r[0]].type_of(r[2]))
                 and r[4] not in self.view.tables[r[3]].partition and self.view.tables[r[3]].rows > 0]
        fan = {to_: sum(1 for r in self.view.relationships() if (r[1].value or {}).get("to") == to_) for _, _, _, to_, _ in cands}
        few = [r for r in cands if fan[r[3]] <= 2]  # a key few tables join to: the change stays local
        src, a, fcol, to, tcol = self.pick(few or cands)
        t = self.view.tables[to]
        s = t.cstat(tcol)
        mx = abs(int(s.max)) if s is not None and isinstance(s.max, (int, float)) else 10 ** 6
        off = 10 ** (len(str(mx)) + 2)
        tr = self.new_trap("keys_joins", "key_format_changed", to, [tcol],
                           f"{to}.{tcol} restated + {off} (no longer matches {src}.{fcol})")
        tr.falsify(self._key_false(tr, t, tcol), None)
        tr.tables = [to]
        self.used.add(src)
        df = self.read(to).withColumn(tcol, (F.col(tcol) + F.lit(off)).cast(t.type_of(tcol)))
        return self.done(tr, self.restate(to, df, f"{tcol} in a new key format"))

    def _key_false(self, tr: Trap, t: TableInfo, tcol: str) -> list[tuple[str, str]]:
        """A referenced key's values restated: the relationships into it on the key, the metrics on the
        joining tables that read `t` through them (their answers change), the verified queries reading the
        key (`done` keeps those whose answer moved, and adds the joins whose rows lost their match)."""
        to = t.name
        keys = [(r, k.key) for r, k in self.view.relationships()
                if (k.value or {}).get("to") == to and any(str(p[1]).lower() == tcol.lower() for p in (k.value or {}).get("on") or [])]
        prose = {k for r, rk in keys for k in tt.join_prose(self.view, r, rk)}
        return self.texts(tr, keys, sorted(set(keys) | set(tt.metrics_through(self.view, keys, to)) | prose)) + \
            self._vq_col(t, tcol)

    KEY_FORMATS = ("upper", "no_hyphens", "prefix")

    def keys_reformatted(self) -> Trap:
        """A string key of a referenced (dimension) table restated in a new text format (upper-case, hyphens
        removed, a prefix added): the referencing side's values no longer match."""
        from pyspark.sql import functions as F

        def text(t: TableInfo, c: str) -> bool:
            return t.type_of(c).lower() in ("string", "varchar", "text")

        cands = [r for r in self._rels() if text(self.view.tables[r[3]], r[4]) and text(self.view.tables[r[0]], r[2])
                 and r[4] not in self.view.tables[r[3]].partition and self.view.tables[r[3]].rows > 0]
        if not cands:
            raise Skip("no relationship joins on a string key of a free table")
        fan = {to_: sum(1 for r in self.view.relationships() if (r[1].value or {}).get("to") == to_) for _, _, _, to_, _ in cands}
        src, a, fcol, to, tcol = self.pick([r for r in cands if fan[r[3]] <= 2] or cands)
        t = self.view.tables[to]
        how = self.rng.choice(self.KEY_FORMATS)
        prefix = self.rng.choice(["C-", "ID-", "SRC-"])
        c = F.col(tcol)
        exprs = {"upper": F.upper(c), "no_hyphens": F.regexp_replace(c, "-", ""), "prefix": F.concat(F.lit(prefix), c)}
        df = self.read(to)
        same = df.where(c.isNotNull() & (exprs[how] == c)).count()
        if same:  # the format drawn leaves some keys as they were (no letters, no hyphen): a prefix changes every one
            how = "prefix"
        what = {"upper": "upper-cased", "no_hyphens": "with its hyphens removed", "prefix": f"prefixed {prefix!r}"}[how]
        tr = self.new_trap("keys_joins", "key_reformatted", to, [tcol],
                           f"{to}.{tcol} restated {what} (no longer matches {src}.{fcol})")
        # the relationships into it, the metrics through them, the queries reading it; its own value lists
        # (sample values, enum) listing keys in the old format
        own = [(to, x.key) for x in t.column_anns(tcol) if x.field in ("sample_values", "enum")]
        tr.falsify(self._key_false(tr, t, tcol) + own, None)
        tr.tables = [to]
        self.used.add(src)
        df = df.withColumn(tcol, exprs[how])
        return self.done(tr, self.restate(to, df, f"{tcol} in a new text format"))

    def _target_rows(self, to: str, cond: str) -> str:
        """The rows of `to` a relationship joins (its condition applied, its table's name left out of
        it), as a DuckDB statement's FROM."""
        if not cond:
            return to
        short = to.rsplit(".", 1)[-1]
        text = re.sub(rf"\b{re.escape(to)}\.|\b{re.escape(short)}\.", "", cond)
        return f"(SELECT * FROM {to} WHERE {text})"

    def keys_retargeted(self) -> Trap:
        """A referencing table rebuilt with its key column holding another key of the table it joins (the
        customer's surrogate key where the customer id was; same name and type): the relationship's join
        (fix: `join_on` that column), the metrics through it and the prose stating the join are false, and
        so are the column's own value lists (keys of the old kind). The other key is an integer column of
        the joined rows (the relationship's condition applied) named as a key (`_id`, `_sk`, `_key`, `_nk`,
        or annotated with the role `id`), unique and never null there, that holds other values than the
        key; the referencing column is in no other relationship of its table."""
        from pyspark.sql import functions as F

        vid = int(self.cat.resolve(None))
        cands = []
        for src, a, fcol, to, tcol in self._rels():
            s, t = self.view.tables[src], self.view.tables[to]
            if fcol in s.partition or not is_int(s.type_of(fcol)) or not is_int(t.type_of(tcol)) or t.rows <= 0:
                continue
            if sum(1 for u, b in self.view.relationships() if u == src and
                   any(str(p[0]).lower() == fcol.lower() for p in (b.value or {}).get("on") or [])) != 1:
                continue
            rows = self._target_rows(to, str((a.value or {}).get("condition") or ""))
            if self._count(f'SELECT count(*) - count(DISTINCT "{tcol}") FROM {rows}', vid) != 0:
                continue
            for c in t.columns:
                role = t.column_field(c.name, "role")
                named = c.name.lower().endswith(("_id", "_sk", "_key", "_nk")) or (role is not None and role.value == "id")
                if c.name.lower() == tcol.lower() or not is_int(c.type) or c.name in t.partition or not named:
                    continue
                dup = self._count(f'SELECT count(*) - count(DISTINCT "{c.name}") + count(*) FILTER (WHERE "{c.name}" '
                                  f'= "{tcol}") FROM {rows}', vid)
                if dup == 0:
                    cands.append((src, a, fcol, to, tcol, c.name, rows))
        if not cands:
            raise Skip("no relationship joins a table with a second unique integer key")
        src, a, fcol, to, tcol, other, rows = self.pick(cands)
        s = self.view.tables[src]
        tr = self.new_trap("keys_joins", "key_retargeted", src, [fcol],
                           f"{src}.{fcol} rebuilt to hold {to}.{other} instead of {to}.{tcol}")
        rel = [(src, a.key)]
        tr.falsify(self.texts(tr, rel, rel), {"action": "join_on", "params": {"to_table": to, "to_column": other}})
        own = [(src, x.key) for x in s.column_anns(fcol) if x.field in ("sample_values", "enum")]
        tr.falsify(sorted(set(tt.metrics_through(self.view, rel, to)) | set(tt.join_prose(self.view, src, a.key))
                          | set(own)), None)
        tr.tables = [src]
        self.used.add(to)
        import catalog_core as cc

        con = cc.open_table(self.cat, to)
        try:
            pairs = con.sql(f'SELECT "{tcol}", "{other}" FROM {rows}').fetchall()
        finally:
            con.close()
        m = self.bridge.spark.createDataFrame([(int(k), int(v)) for k, v in pairs], "__k long, __v long")
        df = self.read(src)
        df = df.join(F.broadcast(m), df[fcol] == m["__k"], "left") \
            .withColumn(fcol, F.coalesce(F.col("__v"), F.col(fcol)).cast(s.type_of(fcol))) \
            .select(*[c.name for c in s.columns])
        return self.done(tr, self.restate(src, df, f"{fcol} keyed by {to}.{other}"))

    def keys_renamed(self) -> Trap:
        cands = [r for r in self._rels() if r[4] not in self.view.tables[r[3]].partition]
        fan = {to_: sum(1 for r in self.view.relationships() if (r[1].value or {}).get("to") == to_) for _, _, _, to_, _ in cands}
        src, a, fcol, to, tcol = self.pick([r for r in cands if fan[r[3]] <= 2] or cands)
        new = self.rng.choice(["{}_key", "{}_ref", "{}_nk"]).format(tcol)
        tr = self.new_trap("keys_joins", "key_renamed", to, [tcol, new], f"{to}.{tcol} renamed {new}")
        self._instructions(tr, to, tcol, "gone", fix=[{"action": "rename", "params": {"old": tcol, "new": new}}, None])
        keys = self.texts(tr, self.view.refs(to, tcol), tt.column_texts(self.view, to, tcol, own=False))
        tr.falsify(keys, None)
        for tb, k in keys:
            ann = self.view.tables[tb].ann(k)
            if ann is not None and ann.kind == "relationship" and tb != to:
                tr.fixes[f"{tb}|{k}"] = [{"action": "join_on", "params": {"to_table": to, "to_column": new}},
                                         {"action": "rename", "params": {"old": tcol, "new": new, "scale": 0}}]
            elif self._prose(tb, k):  # prose: the review rewrites the old name in the text, or a person does
                tr.fixes[f"{tb}|{k}"] = [{"action": "rename", "params": {"old": tcol, "new": new, "scale": 0}}, None]
            else:
                tr.fixes[f"{tb}|{k}"] = {"action": "rename", "params": {"old": tcol, "new": new, "scale": 0}}
        self.used.add(src)
        vid = self.alter(to, f"rename {tcol} to {new}", rename={tcol: new})
        return self.done(tr, vid)

    # ------------------------------------------------------------------ grain
    def _grained(self, active: bool | None = None) -> list[TableInfo]:
        """Tables with a grain a trap can make false: keys declared, none a partition column, and unique
        in the data now (a grain whose keys repeat already is false before any trap: its flag is no
        trap's)."""
        pool = self.free(self.active) if active else self.free()
        return [t for t in pool if t.grain_keys() and not any(k in t.partition for k in t.grain_keys())
                and self._keys_unique(t)]

    def _keys_unique(self, t: TableInfo) -> bool:
        """Do `t`'s grain keys hold no repeated value in the data now (one statement per table, cached; a
        statement that cannot run shows nothing unique)?"""
        got = self._unique.get(t.name)
        if got is None:
            keys = ", ".join(f'"{k}"' for k in t.grain_keys())
            got = self._count(f"SELECT count(*) FROM (SELECT {keys} FROM {t.name} GROUP BY ALL HAVING count(*) > 1)",
                              int(self.cat.resolve(None))) == 0
            self._unique[t.name] = got
        return got

    def _to_refs(self, t: TableInfo) -> list[tuple[str, str]]:
        """Relationships into `t` that claim its keys are unique there (many_to_one / one_to_one)."""
        return [(src, a.key) for src, a in self.view.relationships()
                if (a.value or {}).get("to") == t.name and (a.value or {}).get("cardinality", "many_to_one") != "one_to_many"]

    def grain_scd2(self) -> Trap:
        from pyspark.sql import functions as F

        t = self.pick([t for t in self._grained() if not t.col("valid_from") and not t.col("is_current")
                       and [c for c in t.columns if (c.type or "").lower() == "string" and c.name not in t.grain_keys()]])
        attr = self.pick([c.name for c in t.columns if (c.type or "").lower() == "string" and c.name not in t.grain_keys()
                          and t.column_field(c.name, "sample_values") is None and t.column_field(c.name, "labels") is None])
        tr = self.new_trap("grain", "scd2_versions", t.name, t.grain_keys() + ["valid_from", "valid_to", "is_current"],
                           f"{t.name} becomes SCD2 (a second version of ~20% of keys, {attr} changed)")
        g = t.ann("table.grain")
        tr.falsify([(t.name, g.key)], None)
        tr.falsify(tt.grain_texts(self.view, t.name), None)  # "one row per ..." prose beside the grain
        tr.falsify(tt.current_state_texts(self.view, t.name), None)  # "with their current address"
        # the grain is per key and version now; or, read through is_current, still per key
        tr.fixes[f"{t.name}|{g.key}"] = [{"action": "set_keys", "params": {"keys": t.grain_keys() + ["valid_from"]}},
                                         {"action": "filter", "params": {"table": t.name, "column": "is_current"}}]
        rel = self._to_refs(t)
        tr.falsify(rel, {"action": "filter", "params": {"table": t.name, "column": "is_current"}})
        tr.falsify(self._vq_table(t), None)
        # count(*) counts versions now: a person says whether it meant every version, or it keeps the current rows
        tr.falsify(tt.every_version_metrics(self.view, t.name),
                   [None, {"action": "filter", "params": {"table": t.name, "column": "is_current"}}])
        start = dt.date(2000, 1, 1)
        change = self.today - dt.timedelta(days=3)
        df = self.read(t.name)
        pick = F.rand(self.seed) < F.lit(0.2)
        base = df.withColumn("_v", pick)
        v1 = base.withColumn("valid_from", F.lit(start)) \
            .withColumn("valid_to", F.when(F.col("_v"), F.lit(change - dt.timedelta(days=1))).otherwise(F.lit(None).cast("date"))) \
            .withColumn("is_current", ~F.col("_v"))
        enum = t.column_field(attr, "enum")
        vals = [str(v) for v in (enum.value or [])] if enum is not None and isinstance(enum.value, list) else []
        if len(vals) >= 2:  # an enumerated attribute changes to another of its values (a tier change)
            nxt = F.lit(vals[0])
            for a_, b_ in zip(vals, vals[1:] + vals[:1]):
                nxt = F.when(F.col(attr) == F.lit(a_), F.lit(b_)).otherwise(nxt)
            changed = nxt
        else:
            changed = F.concat(F.col(attr), F.lit(" (new)"))
        v2 = base.where(F.col("_v")).withColumn(attr, changed) \
            .withColumn("valid_from", F.lit(change)).withColumn("valid_to", F.lit(None).cast("date")) \
            .withColumn("is_current", F.lit(True))
        out = v1.unionByName(v2).drop("_v")
        return self.done(tr, self.restate(t.name, out, f"{t.name} as SCD2"))

    def grain_periodic_snapshot(self) -> Trap:
        from pyspark.sql import functions as F

        t = self.pick([t for t in self._grained() if not t.col("snapshot_date") and t.rows <= 200_000])
        tr = self.new_trap("grain", "periodic_snapshot", t.name, t.grain_keys() + ["snapshot_date"],
                           f"{t.name} becomes a daily snapshot (every row once per date, 2 dates)")
        g = t.ann("table.grain")
        tr.falsify([(t.name, g.key)], {"action": "set_keys", "params": {"keys": t.grain_keys() + ["snapshot_date"]}})
        tr.falsify(tt.grain_texts(self.view, t.name) + self._to_refs(t) + self._vq_table(t), None)
        tr.falsify(tt.one_snapshot_texts(self.view, t.name), None)  # "as of the last full month": several now
        tr.falsify(tt.every_version_metrics(self.view, t.name), None)  # they count or sum every snapshot's rows
        df = self.read(t.name)
        d1, d2 = self.today, self.today + dt.timedelta(days=1)
        out = df.withColumn("snapshot_date", F.lit(d1)).unionByName(df.withColumn("snapshot_date", F.lit(d2)))
        return self.done(tr, self.restate(t.name, out, f"{t.name} as a periodic snapshot"))

    def grain_duplicate_load(self) -> Trap:
        t = self.pick([t for t in self._grained() if t.date_column(self.today) and t.name in self.active])
        day, _ = self.latest_day(t)
        tr = self.new_trap("grain", "duplicate_load", t.name, t.grain_keys(),
                           f"{t.name}'s latest day appended again (its keys twice)")
        g = t.ann("table.grain")
        tr.falsify([(t.name, g.key)], None)
        tr.falsify(tt.grain_texts(self.view, t.name) + self._to_refs(t) + self._vq_table(t), None)
        # its metrics aggregating every row count or sum the latest day twice
        tr.falsify(tt.every_version_metrics(self.view, t.name), None)
        return self.done(tr, self.write(day.localCheckpoint(), t.name, "append", "re-load of the latest day"))

    # ------------------------------------------------------------------ loads and freshness
    def loads_stopped(self) -> Trap:
        t = self.pick([t for t in self.free(self.active) if self._sla_holds(t)])
        tr = self.new_trap("loads_freshness", "stopped", t.name, [], f"{t.name} stops loading after T0")
        self.falsify_sla(tr, t, None)
        tr.loads = 0
        self.stopped.add(t.name)
        self.halted.add(t.name)
        return self.done(tr, self.view.vid)

    def loads_stuck_reruns(self) -> Trap:
        t = self.pick([t for t in self.free(self.active) if self._sla_holds(t)])
        day, dcol = self.latest_day(t)
        tr = self.new_trap("loads_freshness", "stuck_reruns", t.name, [dcol],
                           f"{t.name} re-runs its latest day (identical rows) instead of loading new days")
        self.falsify_sla(tr, t, None)  # re-runs bring no new data: the SLA's clock runs from the last new data
        self.stopped.add(t.name)
        self.halted.add(t.name)
        day = day.localCheckpoint()
        vid = self.write(day, t.name, "overwrite" if t.partition else "append", "re-run", schema="evolve") \
            if t.partition else self.write(day.limit(0), t.name, "append", "re-run (no new rows)")
        self.clock += 20 * HOUR
        vid = self.write(day, t.name, "overwrite", "re-run") if t.partition else vid
        tr.loads = 2
        return self.done(tr, vid)

    # ------------------------------------------------------------------ replacement and deprecation
    def replacement_beside(self) -> Trap:
        t = self.pick([t for t in self.free(self.active) if t.ann("table.description") is not None])
        ns_tbl = t.name.rsplit(".", 1)
        new = self.rng.choice(["{}_v2", "{}_new", "{}_next"]).format(ns_tbl[1])
        new_name = f"{ns_tbl[0]}.{new}"
        if new_name in self.view.tables:
            raise Skip(f"{new_name} exists")
        tr = self.new_trap("replacement_deprecation", "replacement_beside", t.name, [],
                           f"{new_name} written beside {t.name}, which stops loading")
        # the deprecation it lacks (an absent claim the change calls for); its description still says what its
        # rows are (testers of rounds 10-12 judged it true)
        tr.falsify([(t.name, "table.deprecated")], {"action": "successor", "params": {"table": new_name}})
        self.falsify_sla(tr, t, {"action": "successor", "params": {"table": new_name}})
        # a metric defined on it measures a table that no longer gets the data
        tr.falsify([(t.name, a.key) for a in t.anns if a.kind == "metric"],
                   {"action": "successor", "params": {"table": new_name}})
        # prose on other tables sending its readers to it ("use ... instead") now sends them to a table no longer
        # kept: the repair names the new table instead
        tr.falsify(tt.prose_pointing_to(self.view, t.name), {"action": "repoint", "params": {"table": new_name}})
        # deprecations sending their readers to it now send them to a table no longer kept
        tr.falsify(tt.deprecations_naming(self.view, t.name), {"action": "successor", "params": {"table": new_name}})
        # tables not for reporting that send their readers to it: the table to report from is the new one
        tr.falsify(tt.use_instead_naming(self.view, t.name), {"action": "successor", "params": {"table": new_name}})
        df = self.read(t.name).localCheckpoint()
        vid = self.bridge.write(df, new_name, partition_by=t.partition or None, mode="overwrite", author=AUTHOR,
                                message=f"new table {new_name} (replaces {t.name})", time=self.tick(),
                                inputs=[t.name]).vid
        tr.tables = [t.name, new_name]
        self.stopped.add(t.name)
        self.halted.add(t.name)
        self.replacements[t.name] = new_name
        self.active.append(new_name)  # it takes the routine loads the replaced table no longer gets
        self.done(tr, int(vid or 0))
        # a verified query asked of it alone answers for the rows it holds, not for the rows the successor gets
        # from now on: false although its answer did not move (after `done`, whose rule is the answer moved);
        # re-verified by a person, or asked of the successor, which began as a copy of its rows
        tr.falsify([(t.name, a.key) for a in t.anns if a.kind == "verified_query"
                    and list((a.value or {}).get("tables") or []) == [t.name]],
                   [{"action": "reverify", "params": {}}, {"action": "repoint", "params": {"table": new_name}}])
        return tr

    def replacement_deprecated_written(self) -> Trap:
        t = self.pick([t for t in self.free() if t.deprecated() is not None and t.date_column(self.today, 10_000)])
        dcol = t.date_column(self.today, 10_000)
        tr = self.new_trap("replacement_deprecation", "deprecated_written", t.name, [],
                           f"{t.name} (deprecated) loaded again")
        tr.falsify([(t.name, t.deprecated().key)], None)
        from pyspark.sql import functions as F

        df = self.read(t.name)
        mx = df.agg(F.max(dcol).alias("m")).collect()[0]["m"]
        day = df.where(F.col(dcol) == F.lit(mx))
        gap = (self.today - (mx.date() if isinstance(mx, dt.datetime) else mx)).days
        day = self._shift(day, t, gap, {})
        return self.done(tr, self.write(day.localCheckpoint(), t.name, "append", "load"))

    # ------------------------------------------------------------------ definitions
    def _metric_sum_cols(self) -> list[tuple[TableInfo, Any, str]]:
        out = []
        for t in self.free():
            for a in t.anns:
                if a.kind == "metric":
                    expr = str((a.value or {}).get("expression", ""))
                    for c in t.columns:
                        if is_num(c.type) and words(expr, c.name) and c.name not in t.grain_keys():
                            out.append((t, a, c.name))
        return out

    def definitions_metric_scaled(self) -> Trap:
        t, a, col = self.pick(self._metric_sum_cols())
        k = self._scale(t, col)
        tr = self.new_trap("definitions", "metric_column_scaled", t.name, [col], f"{col} (in {a.key}) restated x 10^{k}")
        tr.falsify(self._unit_false(t, col, tr), None)
        ua = t.column_field(col, "unit")
        if ua is not None:
            tr.fixes[f"{t.name}|{ua.key}"] = {"action": "update_unit", "params": {"column": col, "scale": k}}
        self._reworded(tr, t, col, 10.0 ** k)
        self._rescaled_metrics(tr, t, col, {"column": col, "scale": k})
        df = self.read(t.name)
        df = df.withColumn(col, self._scaled(df, col, t.type_of(col), k))
        return self.done(tr, self.restate(t.name, df, f"restate {col}"))

    def _filter_values(self) -> list[tuple[TableInfo, Any, str, str]]:
        out = []
        for t in self.free():
            for a in t.anns:
                if a.kind != "metric":
                    continue
                filt = str((a.value or {}).get("filter") or "")
                for c in t.columns:
                    if (c.type or "").lower() == "string" and words(filt, c.name):
                        for v in self._quoted(filt):
                            out.append((t, a, c.name, v))
        return out

    @staticmethod
    def _quoted(text: str) -> list[str]:
        import re

        return re.findall(r"'([^']+)'", text)

    def definitions_metric_filter_renamed(self) -> Trap:
        from pyspark.sql import functions as F

        t, a, col, val = self.pick(self._filter_values())
        new = self.rng.choice([val.upper(), val.replace("ll", "l") if "ll" in val else val + "_x", val[:4] + "_" + val[4:]])
        if new == val:
            new = val + "_x"
        tr = self.new_trap("definitions", "metric_filter_value_renamed", t.name, [col],
                           f"{col} value {val!r} restated as {new!r} (the filter of {a.key} no longer matches)")
        vmap = {"action": "value_map", "params": {"column": col, "map": {val: new}}}
        self._instructions(tr, t.name, col, "value", val)
        # the metric, the column's value lists and the queries testing the value: the same spelling change
        # the metric, and every text naming the old spelling: value lists, prose, and the metrics,
        # conditions and queries on any table that test the value
        named = sorted({(t.name, a.key)} | set(tt.value_texts(self.view, t.name, col, val, "respelled")))
        tr.falsify(self.texts(tr, [(t.name, a.key)] + self._enum_keys(t, col) + self._value_refs(t, col, val), named),
                   vmap)
        # the queries whose answer shows the value (a test of other values keeps its answer)
        tr.falsify(tt.queries_showing(self.view, t.name, col, [val]), None)
        ea = t.column_field(col, "enum")
        if ea is not None:
            after = sorted({new if v == val else v for v in self._present(t, col)})
            tr.fixes[f"{t.name}|{ea.key}"] = {"action": "value_map", "params": {"column": col, "map": {val: new},
                                                                                "values": after}}
        df = self.read(t.name).withColumn(col, F.when(F.col(col) == F.lit(val), F.lit(new)).otherwise(F.col(col)))
        tr.falsify(self.texts(tr, [], self._log_refs(t, col, val, df)), None)
        return self.done(tr, self.restate(t.name, df, f"{col}: {val} spelled {new}"))

    def definitions_verified_restated(self) -> Trap:
        from pyspark.sql import functions as F

        cands = [t for t in self.free() if any(a.kind == "verified_query" for a in t.anns)
                 and all(u not in self.used for u, _ in self.view.verified_on(t.name))]
        t = self.pick(cands)
        nums = [c.name for c in t.columns if is_num(c.type) and c.name not in t.grain_keys() and c.name not in t.partition]
        if not nums:
            raise Skip(f"{t.name} has no measure to restate")
        col = self.pick(nums)
        tr = self.new_trap("definitions", "verified_answer_restated", t.name, [col],
                           f"{t.name}: 10% of rows restated ({col} + 1): the verified answers over it change")
        copies = [(u, a.key) for u, a in self.view.verified_on(t.name)
                  if words(str((a.value or {}).get("sql", "")), col) or "count(" in str((a.value or {}).get("sql", "")).lower()]
        # a restatement of the measure changes answers that read it; deleting rows would change counts too:
        # only the queries that read `col` are made false (the others' answers are unchanged)
        copies = [(u, k) for u, k in copies if any(words(str((a.value or {}).get("sql", "")), col)
                                                  for uu, a in self.view.verified_on(t.name) if a.key == k)]
        if not copies:
            raise Skip(f"no verified query over {t.name} reads {col}")
        tr.falsify(copies, {"action": "reverify", "params": {}})
        df = self.read(t.name)
        df = df.withColumn(col, F.when(F.rand(self.seed) < F.lit(0.1), F.col(col) + F.lit(1)).otherwise(F.col(col))
                           .cast(t.type_of(col)))
        return self.done(tr, self.restate(t.name, df, f"restate {col} of some rows"))

    MONEY_UNITS = ("usd", "dollars", "cents", "usd cents", "usd_cents", "eur", "gbp")

    def definitions_restated_same_keys(self) -> Trap:
        """A table rewritten in full with the same rows and keys, one money measure x 1.03-1.10 per row (a
        definition change: revenue recognized at another event). Its unit, the metrics summing it (their
        definition is the same) and its prose hold; the verified answers it moved do not."""
        from pyspark.sql import functions as F

        def money(t: TableInfo, c: str) -> bool:
            ua = t.column_field(c, "unit")
            return tt.unit_of(c, ua.value if ua is not None else None) in self.MONEY_UNITS

        keyed = {str(p[i]).lower() for src, a in self.view.relationships() for p in (a.value or {}).get("on") or []
                 for i in (0, 1) if isinstance(p, (list, tuple)) and len(p) == 2}
        cands = [(t, c) for t in self.free() if all(u not in self.used for u, _ in self.view.verified_on(t.name))
                 for c in self._unit_cols(t) if money(t, c) and c.lower() not in keyed and self._vq_col(t, c)
                 and self._fits(t, c, 1.1) and not ties_to_other_column(t, c)]
        t, col = self.pick(cands)
        tr = self.new_trap("definitions", "restated_same_keys", t.name, [col],
                           f"{t.name} rewritten with the same rows and keys, {col} x 1.03-1.10 per row (a new definition)")
        tr.falsify(self._vq_col(t, col), {"action": "reverify", "params": {}})   # `done` keeps those that moved
        typ = t.type_of(col)
        val = F.col(col) * (F.lit(1.03) + F.rand(self.seed) * F.lit(0.07))
        df = self.read(t.name).withColumn(col, (F.round(val) if is_int(typ) else val).cast(typ))
        return self.done(tr, self.restate(t.name, df, f"restate {t.name} ({col} under a new definition)"))

    # ------------------------------------------------------------------ documented ranges
    def _ranges(self) -> list[tuple[TableInfo, str, str, dt.date]]:
        """(table, annotation key, date column, the documented max date) of descriptions stating a date range."""
        import re

        out = []
        for t in self.free():
            dcols = [c.name for c in t.columns if is_date(c.type) or is_ts(c.type)]
            for a in t.anns:
                if a.field not in ("description", "grain") or a.kind not in ("table", "column"):
                    continue
                text = json.dumps(a.value)
                m = re.findall(r"(\d{4}-\d{2}-\d{2})\s*(?:\.\.|to|through|until|-|–)\s*(\d{4}-\d{2}-\d{2})", text)
                for _, hi in m:
                    col = c if (c := t.column_of(a)) in dcols else None
                    if col is None:
                        col = next((c for c in sorted(dcols, key=lambda n: n not in t.partition)
                                    if _near(_max_date(t, c), dt.date.fromisoformat(hi))), None)
                    if col:
                        out.append((t, a.key, col, dt.date.fromisoformat(hi)))
        return out

    def ranges_exceeded(self) -> Trap:
        from pyspark.sql import functions as F

        t, key, col, hi = self.pick(self._ranges())
        mx = _max_date(t, col)
        gap = (hi - mx).days + self.rng.choice([30, 90, 400]) if mx else 30
        tr = self.new_trap("documented_ranges", "date_range_exceeded", t.name, [col],
                           f"{t.name} gets rows dated up to {hi + dt.timedelta(days=gap - (hi - mx).days if mx else 0)} (documented until {hi})")
        keys = sorted({key} | {a.key for a in t.anns if a.field in ('description', 'grain')
                               and hi.isoformat() in json.dumps(a.value)})
        tr.falsify([(t.name, k) for k in keys], None)
        df = self.read(t.name)
        last = df.agg(F.max(col).alias("m")).collect()[0]["m"]
        self._range_fixes(tr, t, keys, col, df, (last.date() if isinstance(last, dt.datetime) else last)
                          + dt.timedelta(days=gap))
        day = df.where(F.col(col) == F.lit(last))
        day = self._shift(day, t, gap, self._offsets(t, day, {}))
        return self.done(tr, self.write(day.localCheckpoint(), t.name, "append", f"rows up to {gap} days later"))

    def _range_fixes(self, tr: Trap, t: TableInfo, keys: list[str], col: str, df: DataFrame, end: dt.date) -> None:
        """The repair of each description the trap made false that states one date range of `col`: the range
        from its start (or the data's first date, when earlier) to `end` (the trap's last date), unless the
        column held a row on every day of the range before the trap (a calendar, "one row per date from ...
        to ...", or a text saying so: the new range would have a gap; a person says what holds then) or the
        text states other ranges too (None)."""
        import re

        from pyspark.sql import functions as F

        days = F.to_date(F.col(col))
        first = df.agg(F.min(days).alias("m")).collect()[0]["m"]
        for k in keys:
            a = next((x for x in t.anns if x.key == k), None)
            got = re.findall(r"(\d{4}-\d{2}-\d{2})\s*(?:\.\.|to|through|until|and|-|–)\s*(\d{4}-\d{2}-\d{2})",
                             str(a.value) if a is not None and isinstance(a.value, str) else "")
            if a is None or len(got) != 1 or first is None:
                continue
            lo, hi = (dt.date.fromisoformat(x) for x in got[0])
            filled = df.where(days.between(F.lit(lo), F.lit(hi))).select(days).distinct().count()
            if filled == (hi - lo).days + 1 or re.search(r"\b(?:per|each|every)\s+(?:calendar\s+)?(?:day|date)\b|"
                                                        r"\bdaily\b", str(a.value), re.IGNORECASE):
                continue
            start = lo if first >= lo else first
            tr.fixes[f"{t.name}|{k}"] = {"action": "update_range", "params": {
                "column": col, "start": start.isoformat(), "end": end.isoformat()}}

    # ------------------------------------------------------------------ shared pieces
    def _annotated_cols(self, t: TableInfo) -> list[str]:
        return sorted({c for c in (t.column_of(a) for a in t.anns) if c})

    def _semantic_refs(self, t: TableInfo, col: str) -> list[tuple[str, str]]:
        """Annotations whose claim depends on the column's values (not just its name)."""
        own = [(t.name, a.key) for a in t.column_anns(col) if a.field in ("unit", "additivity", "sample_values", "enum")]
        return sorted(set(own + [(u, k) for u, k in self.view.refs(t.name, col)
                                 if k.startswith(("metric.", "verified_query."))]))

    def _vq_col(self, t: TableInfo, col: str) -> list[tuple[str, str]]:
        """Every copy of the verified queries that read `col` of `t` (their answers change when its values
        are restated)."""
        return sorted({(u, a.key) for u, a in self.view.verified_on(t.name) if words(str((a.value or {}).get("sql", "")), col)})

    def _vq_table(self, t: TableInfo) -> list[tuple[str, str]]:
        """Every copy of the verified queries that read `t` (rows restated, removed or duplicated)."""
        return sorted({(u, a.key) for u, a in self.view.verified_on(t.name)})

    def _log_refs(self, t: TableInfo, col: str, value: str, after: DataFrame) -> list[tuple[str, str]]:
        """The load-log claims a change of `t.col` makes false when `t` is a load log and `col` its status
        column: each table's `table.load_log` naming `t`, `col` and `value` among its statuses, whose rows of
        the log after the change (`after`) hold a status none of its lists names (a load it classifies no
        more: counted failed). A status respelled in the log leaves every table logging it so with a list
        that no longer covers its loads (held-out 3001 of session 34: the detector said so of each; the
        truth named the log's own enum alone)."""
        from pyspark.sql import functions as F

        out = []
        for u, ti in sorted(self.view.tables.items()):
            a = ti.ann("table.load_log")
            spec = a.value if a is not None and isinstance(a.value, dict) else None
            if not spec or spec.get("table") != t.name or str(spec.get("status_column") or "").lower() != col.lower():
                continue
            listed = sorted({str(x) for k in ("complete", "partial", "failed") for x in spec.get(k) or []})
            tc = spec.get("table_column")
            if value not in listed or not tc or tc not in after.columns:
                continue
            names = [str(spec["name"])] if spec.get("name") else [u, ".".join(u.split(".")[1:]), u.split(".")[-1]]
            held = after.where(F.col(tc).cast("string").isin(names) & F.col(col).isNotNull()
                               & ~F.col(col).cast("string").isin(listed)).limit(1).count()
            if held:
                out.append((u, "table.load_log"))
        return out

    def _value_refs(self, t: TableInfo, col: str, value: str) -> list[tuple[str, str]]:
        """Metrics, relationship conditions and verified queries that test `col` against `value`."""
        out = []
        for u, k in self.view.refs(t.name, col):
            a = self.view.tables[u].ann(k)
            if a is not None and a.kind in ("metric", "verified_query", "relationship") and f"'{value}'" in json.dumps(a.value):
                out.append((u, k))
        return out

    def replay_orphans(self, t: TableInfo) -> list[str]:
        """The grain keys of `t` that reference another table's rows through a relationship on more than
        one column (a return's ticket and item, its sale's): a replayed day gives its keys new values
        (`_offsets`), which the referenced rows do not hold, so a routine load would write rows that
        match nothing (a broken join the truth would call routine). Such a table is not replayed."""
        keys = set(t.grain_keys())
        return sorted({str(p[0]) for src, a in self.view.relationships() if src == t.name
                       for p in ((a.value or {}).get("on") or []) if len((a.value or {}).get("on") or []) > 1
                       and str(p[0]) in keys})

    def _not_replayed(self, t: TableInfo, offs: dict[str, int]) -> str | None:
        """Why a routine load cannot replay `t`'s latest day with the key offsets `offs`, or None."""
        orphans = self.replay_orphans(t)
        if orphans:
            return (f"its keys {orphans} reference another table's rows by a composite key: a replayed day would "
                    "reference rows that do not exist")
        joined = {str(p[1]) for _, a in self.view.relationships() if (a.value or {}).get("to") == t.name
                  for p in (a.value or {}).get("on") or []}
        if joined - set(offs) - {c.name for c in t.columns if is_date(c.type) or is_ts(c.type)}:
            # a replayed day would repeat a key other tables join to (a dimension's natural key)
            return f"others join to {sorted(joined)}"
        return None

    def _offsets(self, t: TableInfo, day: DataFrame, offsets: dict[tuple[str, str], int]) -> dict[str, int]:
        """Per column of `t`, what a replayed day adds to keep its keys new: the table's first integer
        grain key gets max - min(day) + 1 (so do columns that reference a key an offset was already
        chosen for, e.g. an order line's order_id)."""
        from pyspark.sql import functions as F

        out: dict[str, int] = {}
        if any(is_date(t.type_of(k)) or is_ts(t.type_of(k)) for k in t.grain_keys()):
            return out  # the replayed day's dates are new: so are its keys
        rels = self._single_refs(t)
        for c, target in rels.items():
            if target in offsets:
                out[c] = offsets[target]
        keys = [k for k in t.grain_keys() if is_int(t.type_of(k)) and k not in t.partition]
        for k in keys:
            if k in out:
                break
            if k in rels:  # a reference to a table not loaded with it: keep it
                continue
            s = t.cstat(k)
            mn = day.agg(F.min(k).alias("m")).collect()[0]["m"]
            if s is None or not isinstance(s.max, (int, float)) or mn is None:
                continue
            out[k] = int(s.max) - int(mn) + 1
            offsets[(t.name, k)] = out[k]
            break
        keyed = any(k in out for k in t.grain_keys())
        for sc in t.columns:  # string keys: a suffix, on a key no enum or sample values describe
            if sc.name in t.grain_keys() and (sc.type or "").lower() == "string" and not keyed \
                    and not any(t.column_field(sc.name, f) is not None for f in ("enum", "sample_values", "labels")):
                out[sc.name] = -1
        return out

    def _shift(self, day: DataFrame, t: TableInfo, days: int, offsets: dict[str, int]) -> DataFrame:
        from pyspark.sql import functions as F

        for c in t.columns:
            if c.name not in day.columns:
                continue
            if is_date(c.type):
                day = day.withColumn(c.name, F.date_add(F.col(c.name), days))
            elif is_ts(c.type):
                day = day.withColumn(c.name, F.col(c.name) + F.expr(f"INTERVAL {days} DAYS"))
            elif c.name in offsets and offsets[c.name] == -1:
                day = day.withColumn(c.name, F.concat(F.col(c.name), F.lit(f"-r{days}")))
            elif c.name in offsets:
                day = day.withColumn(c.name, (F.col(c.name) + F.lit(offsets[c.name])).cast(c.type or "bigint"))
        return day

    def _single_refs(self, t: TableInfo) -> dict[str, tuple[str, str]]:
        """Per column of `t` that references another table's rows by one column: (that table, its column)."""
        out: dict[str, tuple[str, str]] = {}
        for src, a in self.view.relationships():
            on = (a.value or {}).get("on") or []
            if src == t.name and len(on) == 1 and t.col(str(on[0][0])):
                out[str(on[0][0])] = (str((a.value or {}).get("to")), str(on[0][1]))
        return out

    def _onto_unreferenced(self, t: TableInfo, day: DataFrame, refs: dict[str, tuple[str, str]]) -> DataFrame | None:
        """A replayed day of `t` whose references (`refs`: column -> (table, column)) point at rows of tables a
        trap stopped: kept as they are, the replayed rows would give those rows a second set of `t`'s rows (an
        order re-shipped with every routine load: the per-order counts the claims document made false by the
        routine load, which the truth says makes nothing false). Each referenced value of the day is moved
        to a distinct row of the referenced table that no row of `t` references yet, newest first (orders
        placed and not yet shipped), so each gets the rows one of the day's did; rows with no such row left
        are not replayed (None when none is left). Null references stay null."""
        from pyspark.sql import functions as F

        import catalog_core as cc

        for col, (target, key) in sorted(refs.items()):
            con = cc.open_table(self.cat, t.name)
            try:
                taken = {r[0] for r in con.sql(f'SELECT DISTINCT "{col}" FROM {t.name}').fetchall()}
            finally:
                con.close()
            con = cc.open_table(self.cat, target)
            try:
                ids = [r[0] for r in con.sql(f'SELECT DISTINCT "{key}" FROM {target} WHERE "{key}" IS NOT NULL '
                                             f'ORDER BY 1 DESC').fetchall()]
            finally:
                con.close()
            free = [x for x in ids if x not in taken]
            olds = sorted(r[0] for r in day.select(col).distinct().collect() if r[0] is not None)
            pairs = list(zip(olds, free, strict=False))
            if not pairs:
                return None
            typ = t.type_of(col) or "bigint"
            mapping = self.bridge.spark.createDataFrame([(str(a), str(b)) for a, b in pairs], ["_old", "_new"])
            day = (day.join(mapping, F.col(col).cast("string") == F.col("_old"), "left")
                   .filter(F.col(col).isNull() | F.col("_new").isNotNull())
                   .withColumn(col, F.col("_new").cast(typ)).drop("_old", "_new"))
        return day

    def replay(self, t: TableInfo, days: int, offsets: dict[tuple[str, str], int] | None = None,
               ref: dt.date | None = None) -> DataFrame:
        day, days = self._whole_day(t, *self._latest(t, ref), days, ref or self.today)
        offs = self._offsets(t, day, {} if offsets is None else offsets)
        return self._shift(day, t, days, offs)

    PARTIAL_SHARE = 0.5  # a last day holding under this share of the day before's rows is partial

    def _whole_day(self, t: TableInfo, df: DataFrame, dcol: str, mx: Any, days: int, today: dt.date
                   ) -> tuple[DataFrame, int]:
        """The day a replay copies of the table's rows `df` (`mx`: the latest value of their date column
        `dcol`), and its shift: the latest day as is, unless it is the lake's own
        today (its clock falls inside it, e.g. 13:00 UTC) holding under PARTIAL_SHARE of the rows of the
        day before: then the day before, shifted so the replay is still dated `days` after the latest.
        A partial day holds its early hours alone; replayed as a new day's load it is a load no day
        ever had (held-out Acme 3001 of session 34: orders of 00:36-08:25 local time, twice, whose
        offsets to their local dates no whole day held, read as a zone shift)."""
        from pyspark.sql import functions as F

        day = df.where(F.col(dcol) == F.lit(mx))
        col = t.col(dcol)
        latest = as_date(mx)
        if col is None or not is_date(col.type) or latest is None or latest != today:
            return day, days
        prev = as_date(df.where(F.col(dcol) < F.lit(latest)).agg(F.max(F.col(dcol)).alias("m")).collect()[0]["m"])
        if prev is None:
            return day, days
        before = df.where(F.col(dcol) == F.lit(prev))
        if day.count() >= self.PARTIAL_SHARE * before.count():
            return day, days
        return before, days + (latest - prev).days

    # ------------------------------------------------------------------ controls
    def control_compaction(self) -> Trap:
        t = self.pick([t for t in self.free() if t.stats and (t.stats.file_count or 0) >= 3 and t.rows <= 500_000])
        tr = self.new_trap("control", "compaction", t.name, [], f"{t.name}'s {t.stats.file_count if t.stats else 0} files rewritten as fewer",
                           control=True)
        df = self.read(t.name).localCheckpoint()
        df = df.repartition(*t.partition) if t.partition else df.coalesce(1)
        return self.done(tr, self.write(df, t.name, "overwrite", "compaction"))

    def control_identical_rerun(self) -> Trap:
        cands = [t for t in self.free(self.active) if t.partition] or \
            [t for t in self.free() if not t.partition and 0 < t.rows <= 200_000 and t.name not in self.active]
        t = self.pick(cands)
        if t.partition:
            day, _ = self.latest_day(t)
            what = f"{t.name}'s latest day rewritten with identical rows"
        else:
            day, what = self.read(t.name), f"{t.name} reloaded whole with identical rows"
        tr = self.new_trap("control", "identical_rerun", t.name, [], what, control=True)
        return self.done(tr, self.write(day.localCheckpoint(), t.name, "overwrite", "re-run of the latest load"))

    def control_nullability_only(self) -> Trap:
        from catalog_core import lake

        t = self.pick([t for t in self.free() if flippable(t)])
        col = self.pick(flippable(t))
        tr = self.new_trap("control", "nullability_only", t.name, [col], f"{t.name}.{col}: nullability flipped", control=True)
        if self.writer == "iceberg":  # Iceberg's update_schema: required <-> optional
            tr.loads = 1
            required = t.col(col) is not None and getattr(t.col(col), "nullable", True) is not False
            return self.done(tr, int(self.iceberg.alter(t.name, self.tick(), required={col: required})))
        tpath = lake.table_path(t.name)
        with self.cat.transaction(author=AUTHOR, message=f"{col} nullability", time=self.tick()) as txn:
            obj = txn.get(tpath)
            schema = dict(obj.value["schema"])
            cols = []
            for c in schema.get("columns", []):
                c = dict(c)
                if c.get("name") == col:
                    c["nullable"] = not (c.get("nullable") is not False)
                cols.append(c)
            schema["columns"] = cols
            txn.merge(tpath, {"schema": {"op": "set", "val": schema}})
        tr.loads = 1
        return self.done(tr, int(txn.vid))

    # ------------------------------------------------------------------ the run
    KINDS: dict[str, dict[str, str]] = {
        "schema": {"drop": "schema_drop", "rename": "schema_rename", "type_change": "schema_type_change",
                   "restate_scaled": "schema_restate_scaled"},
        "values_units": {"unit_shift_restated": "values_unit_shift_restated",
                         "unit_shift_new_load": "values_unit_shift_new_load",
                         "timezone_shift": "values_timezone_shift", "enum_added_inside": "values_enum_added_inside",
                         "enum_added_outside": "values_enum_added_outside", "enum_removed": "values_enum_removed",
                         "categories_merged": "values_categories_merged",
                         "unit_factor_restated": "values_unit_factor_restated",
                         "timezone_shift_new_load": "values_timezone_shift_new_load",
                         "value_partly_respelled": "values_partly_respelled"},
        "keys_joins": {"key_format_changed": "keys_format_changed", "key_renamed": "keys_renamed",
                       "key_reformatted": "keys_reformatted", "key_retargeted": "keys_retargeted"},
        "grain": {"scd2_versions": "grain_scd2", "periodic_snapshot": "grain_periodic_snapshot",
                  "duplicate_load": "grain_duplicate_load"},
        "loads_freshness": {"stopped": "loads_stopped", "stuck_reruns": "loads_stuck_reruns"},
        "replacement_deprecation": {"replacement_beside": "replacement_beside",
                                    "deprecated_written": "replacement_deprecated_written"},
        "definitions": {"metric_column_scaled": "definitions_metric_scaled",
                        "metric_filter_value_renamed": "definitions_metric_filter_renamed",
                        "verified_answer_restated": "definitions_verified_restated",
                        "restated_same_keys": "definitions_restated_same_keys"},
        "documented_ranges": {"date_range_exceeded": "ranges_exceeded"},
    }
    CONTROL_KINDS = {"compaction": "control_compaction", "identical_rerun": "control_identical_rerun",
                     "nullability_only": "control_nullability_only"}  # new_nullable_column: in `routine`

    # classes that need a table still loading go first (few such tables); a key change reaches every
    # table joining to the key, so it goes last
    ORDER = ("loads_freshness", "replacement_deprecation", "grain", "definitions", "values_units",
             "documented_ranges", "schema", "keys_joins")

    def run(self, per_class: int = 1, classes: list[str] | None = None, controls: bool = True) -> dict[str, Any]:
        assert set(self.ORDER) == set(CLASSES)
        for cls in [c for c in self.ORDER if c in (classes or list(CLASSES))]:
            assert set(self.KINDS[cls]) == set(CLASSES[cls]["kinds"]), cls
            for _ in range(per_class):
                self._one(cls, self.KINDS[cls])
        self.clock = max(self.clock, self.now + DAY - 2 * HOUR)
        if controls:
            for kind, fn in self.CONTROL_KINDS.items():
                self._one("control", {kind: fn})
        self.clock = max(self.clock, self.now + DAY - HOUR)
        self.routine(1, controls)
        self.clock = max(self.clock, self.now + 2 * DAY - HOUR)
        self.routine(2, False)
        self.replaced_queries()
        return self.truth()

    def replaced_queries(self) -> None:
        """A verified query asked of a table replaced beside is false when the rows its successor took
        since change its answer: asked of the successor at the end of the run (the replaced table's name
        replaced by the successor's in its SQL), it answers otherwise than of the replaced table. A query
        asked of days the replaced table holds ("on 2024-11-01") answers alike and stays true. Read from
        the data, like `answers_moved`; a query that cannot be run keeps its verdict, and so does one asking
        for the newest rows (`(SELECT max(d) ...)`: a routine load replays a day, so the successor's newest
        snapshot may hold the very values of the replaced table's, which no real load would)."""
        vid = int(self.cat.resolve(None))
        for tr in self.traps:
            if tr.kind != "replacement_beside" or len(tr.tables) != 2:
                continue
            old, new = tr.tables
            for tb, k in [tuple(x) for x in tr.false]:
                a = self.view.tables[tb].ann(k) if tb in self.view.tables else None
                if a is None or a.kind != "verified_query" or tb != old:
                    continue
                sql = str((a.value or {}).get("sql") or "")
                if _LATEST.search(sql):
                    continue  # asks for the newest rows: the successor's, whatever values a replayed day gave them
                there = re.sub(rf"(?<![\w.]){re.escape(old)}(?!\w)", new, sql)
                here, moved = self.answer(sql, vid), self.answer(there, vid)
                if here is not None and moved is not None and here != "error" and here == moved:
                    tr.false.remove([tb, k])
                    tr.fixes.pop(f"{tb}|{k}", None)

    def _one(self, cls: str, kinds: dict[str, str]) -> None:
        order = list(kinds)
        self.rng.shuffle(order)
        why = []
        for kind in order:
            state = self.rng.getstate()
            vid_before = self.cat.resolve(None)
            try:
                self._retried(kinds[kind], state, vid_before)
                return
            except Skip as e:
                self.rng.setstate(state)
                self.rng.random()
                why.append(f"{kind}: {e}")
            except Exception as e:  # noqa: BLE001 - a change that failed to apply is reported, never half-recorded
                if self.cat.resolve(None) != vid_before:
                    raise  # something was committed: the truth would be incomplete
                self.rng.setstate(state)
                self.rng.random()
                why.append(f"{kind}: failed before committing: {type(e).__name__}: {str(e)[:200]}")
                self.log(f"  {cls}/{kind} ({self.writer}): failed before committing, another kind is tried: "
                         f"{type(e).__name__}: {str(e)[:300]}")
        self.skipped.append({"class": cls, "why": "; ".join(why)})
        self.log(f"  {cls}: skipped ({'; '.join(why)})")

    def _retried(self, draw: str, state: Any, vid_before: int, tries: int = 3) -> None:
        """`draw` (a trap kind's method), drawn again from the same random state when its commit lost a race
        with another process's commit and nothing was committed (an Iceberg REST commit conflicting with the
        engine's own: transient, under load), so that a seed gives the same traps whatever the machine's load
        (a control skipped by one run and not by the next, seen on held-out seeds 2101)."""
        kept = (set(self.used), set(self.stopped), set(self.halted), list(self.active), dict(self.replacements),
                self.clock, self.reads)
        for i in range(tries):
            try:
                getattr(self, draw)()
                return
            except Skip:
                raise
            except Exception as e:  # noqa: BLE001 - a lost race is retried; anything else is the caller's
                lost = "conflict" in str(e).lower() or type(e).__name__ in ("CommitFailedException", "ConflictError")
                if not lost or i == tries - 1 or self.cat.resolve(None) != vid_before:
                    raise
                self.log(f"  {draw}: its commit lost a race ({type(e).__name__}), drawn again")
                self.rng.setstate(state)
                used, stopped, halted, active, replacements, self.clock, self.reads = kept
                self.used, self.stopped, self.halted, self.active = set(used), set(stopped), set(halted), list(active)
                self.replacements, self.loose, self.reserve = dict(replacements), set(), set()

    def routine(self, n: int, with_new_column: bool) -> None:
        """A routine load of every active table (but those a trap stopped): its latest day replayed as
        day T0+n, one catalog commit. On day 1, one of them also carries a new nullable column (control)."""
        offsets: dict[tuple[str, str], int] = {}
        names = [n_ for n_ in self.active if n_ not in self.stopped]
        # tables referenced by others first, so referencing keys follow their offsets
        refd = {(a.value or {}).get("to") for _, a in self.view.relationships()}
        names.sort(key=lambda x: (x not in refd, x))
        newcol = None
        if with_new_column:
            cands = [x for x in names if x not in self.used]
            if cands:
                newcol = self.rng.choice(cands)
        time = self.tick()
        self.view = LakeView(self.cat, self.catalog)  # the tables as the traps left them
        loaded: list[str] = []
        # each table's loader: Spark (one bridge transaction for all its tables) or an Iceberg engine
        # (one REST commit per table, just after it)
        routes = [w for w in ("spark", "iceberg") if w in self.writers] or ["spark"]
        by: dict[str, str] = {x: (routes[0] if len(routes) == 1 else self.wrng.choice(routes)) for x in names}
        ice: list[tuple[str, DataFrame, bool]] = []
        with self.bridge.transaction(author=AUTHOR, message=f"routine load day {n}", time=time) as tx:
            for name in names:
                t = self.view.tables.get(name)
                ref = self.today + dt.timedelta(days=n)
                if t is None or t.date_column(ref) is None:
                    self.log(f"  routine load day {n}: {name} has no recent date column, not loaded")
                    continue
                day, shift = self._whole_day(t, *self._latest(t, ref), 1, self.today)
                offs = self._offsets(t, day, offsets)
                why = self._not_replayed(t, offs)
                if why is not None:
                    self.log(f"  routine load day {n}: {name} not replayed ({why})")
                    continue
                halted = {c: ref for c, ref in self._single_refs(t).items() if ref[0] in self.halted and c not in offs}
                moved = self._onto_unreferenced(t, self._shift(day, t, shift, offs), halted)
                if moved is None:
                    self.log(f"  routine load day {n}: {name} not replayed (every row its {sorted(halted)} reference "
                             "in the tables a trap stopped has rows of it already)")
                    continue
                day = moved
                if name == newcol:
                    day = self._new_nullable_column(t, day, n, by[name], time)
                if by[name] == "iceberg":
                    ice.append((name, day.localCheckpoint(), bool(t.partition)))
                else:
                    tx.write(day.localCheckpoint(), name, partition_by=t.partition or None, mode="append")
                loaded.append(name)
        vid = int(tx.result.vid or 0) if tx.result else None
        vids = {x: vid for x in loaded}
        for i, (name, day, _part) in enumerate(ice):
            vids[name] = self.ice_write(day, name, "append", "evolve", False, at=time + i + 1)
        for name in names:
            if name in self.used and any(tr.table == name and tr.kind == "new_nullable_column" and tr.vid is None
                                         for tr in self.traps):
                for tr in self.traps:
                    if tr.table == name and tr.vid is None:
                        tr.vid = vids.get(name)
        for name in loaded:  # the routine appends: controls on the tables no trap touched
            self.routine_loads.append({"table": name, "day": n, "vid": vids[name], "writer": by[name]})
        self.stopped.update(x for x in names if x not in loaded and n == 1)
        self.log(f"  routine load day {n}: {len(loaded)} tables ({len(ice)} through Iceberg REST), vid {vid}")

    def _new_nullable_column(self, t: TableInfo, day: DataFrame, n: int, writer: str, time: float) -> DataFrame:
        """The routine day `n`'s rows of `t` with a new nullable text column (a control), half of them null."""
        from pyspark.sql import functions as F

        col = self.rng.choice(["ingest_batch_id", "source_system", "load_note"])
        if t.col(col):
            return day
        tr = self.new_trap("control", "new_nullable_column", t.name, [col],
                           f"{t.name} gains nullable {col} with the day-{n} load", control=True)
        tr.writer = writer
        tr.time = time
        self.traps.append(tr)
        self.used.add(t.name)
        return day.withColumn(col, F.when(F.rand(self.seed) < 0.5, F.lit("b1")).otherwise(F.lit(None).cast("string")))

    def truth(self) -> dict[str, Any]:
        return {"seed": self.seed, "now": self.now, "check_time": self.now + 2 * DAY + HOUR,
                "traps": [dataclasses.asdict(t) for t in self.traps],
                "routine_loads": self.routine_loads, "skipped": self.skipped,
                "active": self.active, "stopped": sorted(self.stopped)}


_LATEST = re.compile(r"\(\s*SELECT\s+(?:max|min)\s*\(", re.IGNORECASE)  # a query asking for the newest rows


def _near(a: dt.date | None, b: dt.date, days: int = 3) -> bool:
    return a is not None and abs((a - b).days) <= days


def _max_date(t: TableInfo, col: str) -> dt.date | None:
    from eval.traps.lakeview import as_date

    s = t.cstat(col)
    return as_date(s.max if s else None)


def generate(catalog_dir: str, seed: int, now: float, per_class: int = 1, catalog: str | None = None,
             classes: list[str] | None = None, controls: bool = True, spark: Any = None,
             log: Callable[[str], None] = print, writers: tuple[str, ...] = WRITERS,
             storage_root: str | None = None) -> dict[str, Any]:
    """Apply the traps of `seed` to the lake at `catalog_dir` (a copy: it is changed) and return the truth.
    `writers`: the write paths allowed (`WRITERS`); with `iceberg`, a `semcat serve` runs on the copy for
    the run, its tables' files under `storage_root` (default: the directory holding `catalog_dir`)."""
    import os

    import catalog_core as cc
    from spark_bridge import Bridge, local_session

    spark = spark or local_session(app_name="semcat-traps", cores=2)
    cat = cc.Catalog.open(catalog_dir)
    ice = None
    try:
        if "iceberg" in writers:
            from eval.traps.iceberg import IcebergWriter

            ice = IcebergWriter(cat, catalog_dir, storage_root or os.path.dirname(os.path.abspath(catalog_dir)), log=log)
        bridge = Bridge(spark, cat, footers_on="driver")
        g = Generator(cat, bridge, now, seed, catalog, log, writers=writers, iceberg=ice)
        try:
            out = g.run(per_class, classes, controls)
            out["writers"] = list(g.writers)
            return out
        finally:
            if g.scratch:  # the Parquet files the reads went through
                import shutil

                shutil.rmtree(g.scratch, ignore_errors=True)
    finally:
        if ice is not None:
            ice.close()
        cat.close()
