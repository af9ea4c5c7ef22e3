"""Writing and reading annotations (DESIGN.md, Semantic layer; prompts/semantic-layout.md).

    sm.annotate(cat, "acme.core.fct_orders", {"description": "...", "grain": {"text": "...", "keys": ["order_id"]}},
                author="alice")                                            # table.<field>
    sm.annotate(cat, "acme.core.fct_orders", {"unit": "cents"}, column="gross_cents", author="alice")
    sm.annotate(cat, "acme", {"instructions": "fiscal calendar is NRF 4-5-4"}, author="alice")
    sm.verify_query(cat, "net revenue on 2025-03-01", "SELECT ...", author="alice")

Everything is validated before anything is written, and provenance (author, source, confidence,
time, and the basis: what the annotated object looked like at the read vid) is filled in here.

The shared building blocks, also used by `relate` and `define_metric`:

    ann = new_annotation(cat, "acme.core.fct_order_items", "relationship", "relationship.fct_orders",
                         value, columns=["order_id"], author="bob")       # basis read at the latest vid
    vid = write_annotations(cat, [ann])                                    # one blind-write commit
    read_annotations(cat, "acme.core.fct_order_items", vid=None) -> list[Annotation]

An annotation commit only writes (`update` of the annotation and of its `_semantic` folder) and
records no reads, so it never conflicts with a concurrent Spark commit to the same table.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time as _time
from collections.abc import Callable, Iterable, Sequence
from datetime import date
from typing import Any

from pydantic import ValidationError

import catalog_core as cc
from catalog_core import lake
from catalog_core.api import CatalogAPI, SnapshotRef
from catalog_core.errors import CatalogError, ConflictError
from catalog_core.model import JSONValue, Obj, parse_time
from semantic._tables import Column, columns_of, find, require_table, table_names, unknown_column
from semantic.errors import (
    InvalidAnnotationError,
    UnknownObjectError,
    UnknownTableError,
    VerifiedQueryError,
    did_you_mean,
    suggest,
)
from semantic.models import (
    COLUMN_FIELDS,
    TABLE_FIELDS,
    Annotation,
    Basis,
    ColumnFields,
    ColumnRef,
    ColumnStats,
    DataCommit,
    Deprecated,
    Grain,
    LoadLog,
    NotForReporting,
    Provenance,
    Source,
    TableFields,
)

__all__ = ["annotate", "verify_query", "new_annotation", "write_annotations", "read_annotations",
           "read_catalog_annotations", "basis_of", "check_provenance", "fingerprint", "verified_answer", "sql_tables", "table_refs",
           "parse_duration", "SOURCES", "PROPOSAL_PREFIX", "as_proposals"]

SOURCES: tuple[str, ...] = Source.__args__  # type: ignore[attr-defined]
PROPOSAL_PREFIX = "proposal."
VERIFY_ROW_LIMIT = 100_000


# ------------------------------------------------------------------ basis
def basis_of(table: Obj | None, columns: Iterable[Column] | None, vid: int,
             cat: CatalogAPI | None = None) -> Basis:
    """What an annotation on `table` referring to `columns` (None: all of them) describes at `vid`.
    Column statistics come from the table's stats, else (with `cat`) merged from its files."""
    if table is None:
        return Basis(vid=vid)
    value = table.value
    schema = lake.TableValue.from_raw(value).schema
    cols = columns_of(value) if columns is None else list(columns)
    stats = value.get("stats") or {}
    col_stats = stats.get("columns") or {}
    if not col_stats and cat is not None and stats.get("file_count", 1):
        col_stats = _file_stats(cat, table.path, vid)
    ldc = stats.get("last_data_commit")
    return Basis(
        vid=vid,
        schema_id=schema.schema_id,
        columns=[ColumnRef(id=-1 if c.id is None else c.id, name=c.name, type=str(c.type)) for c in cols],
        row_count=stats.get("row_count"),
        stats={c.name: ColumnStats(**_stat_view(col_stats.get(c.name))) for c in cols if c.name in col_stats},
        last_data_commit=DataCommit(vid=int(ldc["vid"]), time=float(ldc["time"]))
        if isinstance(ldc, dict) and "vid" in ldc and "time" in ldc else None,
    )


def _file_stats(cat: CatalogAPI, path: str, vid: int) -> dict[str, dict[str, Any]]:
    """Column min / max / null_count merged over the table's files (tables without stats)."""
    out: dict[str, dict[str, Any]] = {}
    for f in cat.plan_files(lake.name_of(path), vid=vid):
        for name, s in ((f.value or {}).get("columns") or {}).items():
            cur = out.setdefault(name, {"min": None, "max": None, "null_count": 0})
            try:
                if s.get("min") is not None and (cur["min"] is None or s["min"] < cur["min"]):
                    cur["min"] = s["min"]
                if s.get("max") is not None and (cur["max"] is None or s["max"] > cur["max"]):
                    cur["max"] = s["max"]
            except TypeError:
                pass
            if cur["null_count"] is not None and s.get("null_count") is not None:
                cur["null_count"] += int(s["null_count"])
            else:
                cur["null_count"] = None
    return out


def _stat_view(s: object) -> dict[str, Any]:
    s = s if isinstance(s, dict) else {}
    return {"min": s.get("min"), "max": s.get("max"), "null_count": s.get("null_count")}


def _level(name: object) -> int:
    if not isinstance(name, str) or not name:
        raise InvalidAnnotationError(f"target must be a catalog, namespace or table name, got {name!r}")
    lake.object_path(name)  # raises InvalidValueError with the naming rules
    return name.count(".") + 1


# ------------------------------------------------------------------ provenance
def check_provenance(author: object, source: object, confidence: object, note: object = None) -> None:
    """Who writes, from what source, how sure (before anything is read or written)."""
    if not isinstance(author, str) or not author.strip():
        raise InvalidAnnotationError("author must name who wrote the annotation (e.g. 'alice' or 'agent:claude')",
                                     field="author")
    if source not in SOURCES:
        raise InvalidAnnotationError(f"source must be one of {', '.join(SOURCES)}, got {source!r}", field="source")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1 \
            or math.isnan(confidence):
        raise InvalidAnnotationError(f"confidence must be a number from 0 to 1, got {confidence!r}",
                                     field="confidence")
    if note is not None and not isinstance(note, str):
        raise InvalidAnnotationError(f"note must be text, got {type(note).__name__}", field="note")


def new_annotation(cat: CatalogAPI, target: str, kind: str, key: str, value: Any, *,
                   columns: Sequence[str] | None = None, column: str | None = None, author: str,
                   source: str = "human", confidence: float = 1.0, note: str | None = None,
                   vid: int | None = None, time: float | str | None = None,
                   table: Obj | None = None) -> Annotation:
    """A validated `Annotation` with its provenance and basis (read at `vid`, default latest).

    `target` is a table (or a catalog / namespace for kind `instructions`); `columns` names the
    table columns the annotation refers to (None: all of them, for table-level annotations);
    `column` makes it a column annotation (its id goes into the stored value). Raises
    `UnknownTableError` / `UnknownColumnError` with did-you-mean names."""
    check_provenance(author, source, confidence, note)
    at = cat.resolve(None) if vid is None else vid
    column_id = None
    if _level(target) == 3:
        tobj = table if table is not None else require_table(cat, target, at)
        cols = columns_of(tobj.value)
        refs = None if columns is None else [_column(target, cols, c) for c in columns]
        if column is not None:
            col = _column(target, cols, column)
            if col.id is None:
                raise InvalidAnnotationError(f"column {col.name!r} of {target} has no id in the schema, so it "
                                             "cannot be annotated", column=col.name)
            column, column_id = col.name, col.id
            refs = [col] if refs is None else ([col] + [r for r in refs if r != col])
        basis = basis_of(tobj, refs, at, cat)
    else:
        if column is not None or columns:
            raise InvalidAnnotationError(f"{target!r} is not a table, so an annotation on it cannot name columns")
        path = lake.object_path(target)
        if cat.get(path, vid=at) is None:
            raise UnknownObjectError(f"{target!r} does not exist at vid {at}", name=target)
        basis = Basis(vid=at)
    t = _time.time() if time is None else parse_time(time)
    if t is None:
        raise InvalidAnnotationError(f"time must be seconds since the epoch or an ISO-8601 time, got {time!r}")
    prov = Provenance(author=author, source=source, confidence=float(confidence), time=t, note=note,  # type: ignore[arg-type]
                      basis=basis)
    return Annotation(kind=kind, key=key, target=target, value=value, provenance=prov,  # type: ignore[arg-type]
                      column=column, column_id=column_id)


POLICY_RETRIES = 8  # an agent's write that lost a race with a person's re-reads this often


def write_annotations(cat: CatalogAPI, annotations: Sequence[Annotation], *, author: str | None = None,
                      message: str | None = None, time: float | str | None = None) -> int:
    """Write annotations in one commit; returns its vid. Every annotation is checked first
    (`semantic.guard.check_annotation`: its value for its kind, the SQL it stores against the
    sandbox's rules, the size bounds).

    Creates (or replaces) each target's `_semantic` folder and each annotation object. A person's
    (or an import's, a profile's) annotations are blind writes: no reads are recorded, so they
    never conflict with concurrent data commits to the same tables. An agent's are subject to the
    provenance policy (`as_proposals`), whose reads (the annotations it would replace and the
    table's certification) are `txn.get` in the same transaction: a person's concurrent write to
    one of them aborts the commit (ConflictError), and the retry reads it and stores a proposal,
    never an overwrite."""
    from semantic.guard import check_annotation

    if not annotations:
        raise InvalidAnnotationError("nothing to write: no annotations given")
    for ann in annotations:
        check_annotation(ann)
    who = author if author is not None else annotations[0].provenance.author
    what = message if message is not None else "annotate " + ", ".join(
        sorted({f"{a.target}:{a.key}" for a in annotations})[:5])
    policy = any(a.provenance.source == "agent" for a in annotations)
    for attempt in range(POLICY_RETRIES if policy else 1):
        try:
            with cat.transaction(author=who, message=what[:500], meta={"semantic": True}, time=time) as txn:
                anns = _policy_in(txn, list(annotations)) if policy else list(annotations)
                folders: dict[str, None] = {}
                writes: list[tuple[str, dict[str, Any]]] = []
                for ann in anns:
                    path = lake.semantic_path(ann.target, ann.key)
                    folders[path.rsplit("/", 1)[0]] = None
                    writes.append((path, ann.stored()))
                for folder in folders:
                    txn.update(folder, {"obj_type": "semantic"})
                for path, value in writes:
                    txn.update(path, value)
        except ConflictError:
            if attempt + 1 >= (POLICY_RETRIES if policy else 1):
                raise
            continue
        assert txn.vid is not None
        return txn.vid
    raise AssertionError("unreachable")


def _policy_in(txn: Any, annotations: list[Annotation]) -> list[Annotation]:
    """`as_proposals` with its reads made in `txn` (recorded): for each agent annotation, the
    annotation it would replace and its table's certification."""
    existing: list[Annotation] = []
    seen: set[str] = set()
    for ann in annotations:
        if ann.provenance.source != "agent":
            continue
        keys = [ann.key] + (["table.certified"] if ann.target.count(".") == 2 else [])
        for key in keys:
            path = lake.semantic_path(ann.target, key)
            if path in seen:
                continue
            seen.add(path)
            obj = txn.get(path)
            got = _parse(obj) if obj is not None else None
            if got is not None:
                existing.append(got)
    by_target: dict[str, list[Annotation]] = {}
    for a in existing:
        by_target.setdefault(a.target, []).append(a)
    out: list[Annotation] = []
    for ann in annotations:
        out += as_proposals([ann], by_target.get(ann.target, [])) if ann.provenance.source == "agent" else [ann]
    return out


def _column(table: str, cols: list[Column], name: object) -> Column:
    col = find(cols, name)
    if col is None:
        raise unknown_column(table, name, [c.name for c in cols])
    return col


def _parse(obj: Obj) -> Annotation | None:
    value = obj.value
    if not isinstance(value, dict) or value.get("obj_type") != "annotation":
        return None
    try:
        return Annotation.model_validate({**value, "vid": obj.vid, "path": obj.path})
    except ValidationError:
        return None  # written by something else; never let one bad object hide the rest


def read_annotations(cat: CatalogAPI, target: str, vid: SnapshotRef = None) -> list[Annotation]:
    """Every annotation of a table (or catalog / namespace) at `vid`, ordered by key; each with
    `vid`, the commit that wrote it."""
    path = lake.object_path(target)
    objs = cat.query(lake.exact_query(path, f"[obj_id = {lake.quote(lake.SEMANTIC)}]", "*"), vid=vid)
    out = [a for a in (_parse(o) for o in objs) if a is not None]
    return sorted(out, key=lambda a: a.key)


def read_catalog_annotations(cat: CatalogAPI, catalog: str | None = None,
                             vid: SnapshotRef = None) -> dict[str, list[Annotation]]:
    """Every table annotation (of one catalog or all) at `vid` in one query, by table name."""
    head = "/*" if catalog is None else f"/[obj_id = {lake.quote(catalog)}]"
    q = f'{head}/*/*/[obj_id = {lake.quote(lake.SEMANTIC)}]/[obj_type = "annotation"]'
    out: dict[str, list[Annotation]] = {}
    for o in cat.query(q, vid=vid):
        a = _parse(o)
        if a is not None:
            out.setdefault(lake.name_of(o.path.rsplit("/", 2)[0]), []).append(a)
    for anns in out.values():
        anns.sort(key=lambda a: a.key)
    return out


# ------------------------------------------------------------------ field validation
_DURATION = re.compile(r"^P(?!$)(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?"
                       r"(?:T(?=\d)(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


def parse_duration(text: object) -> float:
    """Seconds of an ISO-8601 duration without years and months ("PT26H", "P1D", "P1W", "P2DT3H")."""
    m = _DURATION.match(text.strip().upper()) if isinstance(text, str) else None
    if m is None:
        raise InvalidAnnotationError(f"freshness_sla must be an ISO-8601 duration such as 'PT26H', 'P1D' or 'P7D', "
                                     f"got {text!r}", field="freshness_sla")
    w, d, h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    return (((w * 7 + d) * 24 + h) * 60 + mi) * 60 + s


def _pydantic_message(err: ValidationError) -> str:
    parts = []
    for e in err.errors()[:3]:
        loc = ".".join(str(p) for p in e.get("loc", ()))
        parts.append(f"{loc}: {e.get('msg')} (got {e.get('input')!r})")
    return "; ".join(parts)


def _check_fields(fields: object, allowed: tuple[str, ...], what: str) -> None:
    if not isinstance(fields, dict) or not fields:
        raise InvalidAnnotationError(f"fields must be a non-empty dict of {what} fields ({', '.join(allowed)}), "
                                     f"got {fields!r}")
    for name, val in fields.items():
        if name not in allowed:
            close = did_you_mean(str(name), allowed)
            raise InvalidAnnotationError(f"{name!r} is not a {what} annotation field{suggest(close)}; "
                                         f"{what} fields are {', '.join(allowed)}", field=name, did_you_mean=close)
        if val is None:
            raise InvalidAnnotationError(f"field {name!r} is None; give a value (annotations are replaced, "
                                         "not cleared)", field=name)


def _grain_shorthand(val: object) -> object:
    """`grain` as text (the description) or a list (the keys)."""
    if isinstance(val, str):
        return {"text": val, "keys": []}
    if isinstance(val, (list, tuple)):
        return {"text": "", "keys": list(val)}
    return val


def _deprecated_shorthand(val: object) -> object:
    """`deprecated` as True or a reason."""
    if val is True:
        return {"reason": ""}
    if isinstance(val, str):
        return {"reason": val}
    return val


def _check_grain(cat: CatalogAPI, table: str, tvalue: dict[str, Any], out: Grain, vid: int) -> None:
    cols = columns_of(tvalue)
    out.keys = [_column(table, cols, k).name for k in out.keys]


def _check_sla(cat: CatalogAPI, table: str, tvalue: dict[str, Any], out: str, vid: int) -> None:
    parse_duration(out)


def _check_not_for_reporting(cat: CatalogAPI, table: str, tvalue: dict[str, Any], out: NotForReporting,
                             vid: int) -> None:
    for other in out.use_instead:
        if other == table:
            raise InvalidAnnotationError(f"not_for_reporting.use_instead names {table} itself; name the tables "
                                         "to read instead", field="not_for_reporting")
        require_table(cat, other, vid)


def _check_load_log(cat: CatalogAPI, table: str, tvalue: dict[str, Any], out: LoadLog, vid: int) -> None:
    log = require_table(cat, out.table, vid)
    if out.table == table:
        raise InvalidAnnotationError(f"load_log.table names {table} itself; name the table that logs its loads "
                                     "(e.g. acme.ops.etl_load_log)", field="load_log")
    log_cols = columns_of(log.value)
    for what in ("table_column", "partition_column", "status_column", "attempt_column", "loaded_at_column"):
        name = getattr(out, what)
        if name is not None:
            setattr(out, what, _column(out.table, log_cols, name).name)
    if out.timezone is not None:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(out.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise InvalidAnnotationError(f"load_log.timezone {out.timezone!r} is not an IANA time zone; give one "
                                         "such as 'UTC' or 'America/New_York'", field="load_log") from None


def _check_deprecated(cat: CatalogAPI, table: str, tvalue: dict[str, Any], out: Deprecated, vid: int) -> None:
    if out.replaced_by is not None:
        require_table(cat, out.replaced_by, vid)
    if out.since is not None:
        try:
            date.fromisoformat(out.since[:10])
        except ValueError:
            raise InvalidAnnotationError(f"deprecated.since must be an ISO date such as '2025-01-09', "
                                         f"got {out.since!r}", field="deprecated") from None


# the table fields with a shorthand spelling, and those checked against the catalog once validated
_SHORTHANDS: dict[str, Callable[[object], object]] = {"grain": _grain_shorthand, "deprecated": _deprecated_shorthand}
_TABLE_CHECKS: dict[str, Callable[..., None]] = {   # (cat, table, table value, the validated field, vid)
    "grain": _check_grain, "freshness_sla": _check_sla, "not_for_reporting": _check_not_for_reporting,
    "load_log": _check_load_log, "deprecated": _check_deprecated,
}


def normalize_table_field(cat: CatalogAPI, table: str, tvalue: dict[str, Any], field: str, val: object,
                          vid: int) -> JSONValue:
    """The stored value of one table field: its shorthand expanded, validated by `TableFields`, then
    checked against the catalog at `vid` (columns it names resolve to their schema names; tables it
    names exist and are not `table` itself)."""
    val = _SHORTHANDS.get(field, lambda v: v)(val)
    try:
        model = TableFields.model_validate({field: val})
    except ValidationError as e:
        raise InvalidAnnotationError(f"table field {field!r} is invalid: {_pydantic_message(e)}", field=field) from None
    out = getattr(model, field)
    check = _TABLE_CHECKS.get(field)
    if check is not None:
        check(cat, table, tvalue, out, vid)
    return out.model_dump() if hasattr(out, "model_dump") else out


def normalize_column_field(table: str, cols: list[Column], column: str, field: str, val: object) -> JSONValue:
    """The stored value of one column field. Invariant: a column the value names
    (`additivity.non_additive_dimension`, `null_when.column`) is a column of the same table, other
    than the annotated one, stored under its schema name."""
    try:
        model = ColumnFields.model_validate({field: val})
    except ValidationError as e:
        raise InvalidAnnotationError(f"column field {field!r} is invalid: {_pydantic_message(e)}", field=field) from None
    out = getattr(model, field)
    named = {"additivity": "non_additive_dimension", "null_when": "column"}.get(field)
    if named is not None and getattr(out, named) is not None:
        other = _column(table, cols, getattr(out, named)).name
        if other == column:
            raise InvalidAnnotationError(f"{field}.{named} names {column!r} itself; name another column of {table}",
                                         field=field, column=column)
        setattr(out, named, other)
    return out.model_dump() if hasattr(out, "model_dump") else out


# ------------------------------------------------------------------ annotate
def annotate(cat: CatalogAPI, name: str, fields: dict[str, Any], column: str | None = None, *, author: str,
             source: str = "human", confidence: float = 1.0, note: str | None = None,
             time: float | str | None = None) -> int:
    """Annotate a table (`table.<field>`), one of its columns (`column.<id>.<field>`), or a catalog /
    namespace (`instructions` only); one annotation object per field, all in one commit. Returns
    the commit's vid. `time` backdates the commit (simulated histories, imports)."""
    check_provenance(author, source, confidence, note)
    level = _level(name)
    vid = cat.resolve(None)
    anns: list[Annotation] = []
    common: dict[str, Any] = {"author": author, "source": source, "confidence": confidence, "note": note,
                              "vid": vid, "time": time}
    if level < 3:
        if column is not None:
            raise InvalidAnnotationError(f"{name!r} is a {'catalog' if level == 1 else 'namespace'}, not a table; "
                                         "only tables have columns")
        _check_fields(fields, ("instructions",), "catalog/namespace")
        if not isinstance(fields["instructions"], str):
            raise InvalidAnnotationError("instructions must be text", field="instructions")
        anns.append(new_annotation(cat, name, "instructions", "instructions", fields["instructions"], **common))
        return write_annotations(cat, anns, time=time)  # (an agent's: a proposal, `as_proposals`)
    tobj = require_table(cat, name, vid)
    if column is None:
        _check_fields(fields, TABLE_FIELDS, "table")
        for field, val in fields.items():
            value = normalize_table_field(cat, name, tobj.value, field, val, vid)
            keys = value.get("keys") if field == "grain" and isinstance(value, dict) else None  # a Grain's dump
            cols = [str(k) for k in keys] or None if isinstance(keys, list) else None
            anns.append(new_annotation(cat, name, "table", f"table.{field}", value, columns=cols, table=tobj,
                                       **common))
    else:
        tcols = columns_of(tobj.value)
        col = _column(name, tcols, column)
        _check_fields(fields, COLUMN_FIELDS, "column")
        for field, val in fields.items():
            value = normalize_column_field(name, tcols, col.name, field, val)
            anns.append(new_annotation(cat, name, "column", f"column.{col.id}.{field}", value,
                                       column=col.name, table=tobj, **common))
    return write_annotations(cat, anns, time=time)  # an agent's: the policy, read in its transaction


def as_proposals(new: list[Annotation], existing: list[Annotation]) -> list[Annotation]:
    """The provenance policy for agent writes: an agent annotation over a human one, or over any
    non-agent one of a table a person certified, is stored aside as a proposal (kind `review`,
    key `proposal.<key>`, value {key, kind, value, column, column_id}) for review
    (semantic.review), never replacing it; so are the human-only keys (`semantic.guard.HUMAN_ONLY`:
    instructions and certification; on a certified table also `CERTIFIED_ONLY`: deprecation and
    the reporting flag). Other agent annotations are written as they are. `existing`: at least the
    annotations of the same keys and `table.certified` of the same targets."""
    from semantic.guard import human_only

    have = {(a.target, a.key): a for a in existing}
    out = []
    for a in new:
        cert = have.get((a.target, "table.certified"))
        certified = cert is not None and cert.value is True and cert.provenance.source == "human"
        cur = have.get((a.target, a.key))
        if (cur is not None and (cur.provenance.source == "human" or (certified and cur.provenance.source != "agent"))) \
                or (a.provenance.source == "agent" and human_only(a.key, certified)):
            out.append(Annotation(kind="review", key=PROPOSAL_PREFIX + a.key, target=a.target,
                                  value={"key": a.key, "kind": a.kind, "value": a.value, "column": a.column,
                                         "column_id": a.column_id},
                                  provenance=a.provenance))
        else:
            out.append(a)
    return out


# ------------------------------------------------------------------ verified queries
def _norm(v: object) -> object:
    if isinstance(v, float):
        return float(f"{v:.10g}") if math.isfinite(v) else str(v)
    if isinstance(v, list):
        return [_norm(x) for x in v]
    return v


def fingerprint(rows: Iterable[Sequence[object]]) -> str:
    """A hash of the result rows, independent of their order (floats to 10 significant digits,
    so parallel aggregation noise does not change it)."""
    lines = sorted(json.dumps(_norm(list(r)), sort_keys=True, default=str, separators=(",", ":")) for r in rows)
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode())
        h.update(b"\n")
    return h.hexdigest()[:32]


def table_refs(sql: str) -> list[tuple[str, ...]]:
    """The table names a SQL text reads, as written (`t`, `ns.t` or `cat.ns.t` parts), in order, each
    once, CTE names excluded; every statement of the text (sqlglot, DuckDB dialect). Raises sqlglot's
    ParseError when the text does not parse; callers decide what an unknown or partial name means."""
    import sqlglot
    from sqlglot import exp

    out: dict[tuple[str, ...], None] = {}
    for tree in sqlglot.parse(sql, read="duckdb"):
        if tree is None:
            continue
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        for t in tree.find_all(exp.Table):
            parts = tuple(p for p in (t.catalog, t.db, t.name) if p)
            if parts and not (len(parts) == 1 and parts[0].lower() in ctes):
                out[parts] = None
    return list(out)


def column_refs(sql: str) -> tuple[set[str], bool]:
    """The column names a SQL text mentions (lower case, any table, qualified or not) and whether it
    selects `*` or `t.*` anywhere (then every column of a table it reads is used). Raises sqlglot's
    ParseError when the text does not parse."""
    import sqlglot
    from sqlglot import exp

    names: set[str] = set()
    star = False
    for tree in sqlglot.parse(sql, read="duckdb"):
        if tree is None:
            continue
        for c in tree.find_all(exp.Column):
            if isinstance(c.this, exp.Star):
                star = True
            elif c.name:
                names.add(c.name.lower())
        for j in tree.find_all(exp.Join):  # JOIN ... USING (k): k is an identifier, not a Column
            names.update(u.name.lower() for u in j.args.get("using") or [] if u.name)
        star = star or any(isinstance(s.parent, exp.Select) for s in tree.find_all(exp.Star))
    return names, star


def sql_tables(cat: CatalogAPI, sql: str, vid: int) -> tuple[list[str], set[str]]:
    """The tables (dotted names) a SQL statement reads, and the column names it mentions (lower
    case). Names may be `t`, `ns.t` or `cat.ns.t` as DuckDB accepts them."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
        refs = table_refs(sql)
    except sqlglot.errors.ParseError as e:
        raise VerifiedQueryError(f"the SQL does not parse: {str(e).splitlines()[0]}") from None
    known = table_names(cat, vid)
    found: dict[str, None] = {}
    for parts in refs:
        text = ".".join(parts).lower()
        hits = [k for k in known if k.lower() == text or k.lower().endswith("." + text)]
        if len(hits) != 1:
            close = did_you_mean(".".join(parts), known)
            if not hits:
                raise UnknownTableError(f"the SQL reads {'.'.join(parts)!r}, which is no table at vid {vid}"
                                        f"{suggest(close)}", name=".".join(parts), did_you_mean=close)
            raise VerifiedQueryError(f"{'.'.join(parts)!r} is ambiguous ({', '.join(hits)}); qualify it")
        found[hits[0]] = None
    if not found:
        raise VerifiedQueryError("the SQL reads no table of the catalog; a verified query must read at least one")
    cols = {c.name.lower() for c in tree.find_all(exp.Column) if c.name}
    return list(found), cols


def verified_answer(cat: CatalogAPI, sql: str, vid: int) -> str | None:
    """The fingerprint of `sql`'s rows at `vid`, run as a verified query is (at most VERIFY_ROW_LIMIT
    rows); None when it returns more. A query that does not run raises its CatalogError."""
    res = cc.run_sql(cat, sql, snapshot=vid, limit=VERIFY_ROW_LIMIT)
    return None if res.truncated else fingerprint(res.rows)


def verify_query(cat: CatalogAPI, question: str, sql: str, *, author: str, source: str = "human",
                 confidence: float = 1.0, note: str | None = None, time: float | str | None = None) -> int:
    """Run `sql` at the current snapshot; if it runs, store it with its result fingerprint as a
    `verified_query.<id>` annotation on every table it reads (one commit). Returns the vid."""
    if not isinstance(question, str) or not question.strip():
        raise InvalidAnnotationError("question must be the natural-language question the SQL answers", field="question")
    if not isinstance(sql, str) or not sql.strip():
        raise InvalidAnnotationError("sql must be a SQL statement", field="sql")
    check_provenance(author, source, confidence, note)
    vid = cat.resolve(None)
    tables, colnames = sql_tables(cat, sql, vid)
    try:
        fp = verified_answer(cat, sql, vid)
    except CatalogError as e:
        raise VerifiedQueryError(f"the query does not run at vid {vid}: {e.message}; fix it before verifying it",
                                 vid=vid) from None
    if fp is None:
        raise VerifiedQueryError(f"the query returns more than {VERIFY_ROW_LIMIT} rows; verify an aggregate")
    qid = hashlib.sha1(f"{question.strip()}\n{sql.strip()}".encode()).hexdigest()[:12]
    value = {"question": question.strip(), "sql": sql.strip(), "verified_by": author, "verified_at_vid": vid,
             "result_fingerprint": fp, "tables": tables}
    anns = []
    for t in tables:
        tobj = require_table(cat, t, vid)
        refs = [c.name for c in columns_of(tobj.value) if c.name.lower() in colnames]
        anns.append(new_annotation(cat, t, "verified_query", f"verified_query.{qid}", value, columns=refs,
                                   author=author, source=source, confidence=confidence, note=note, vid=vid,
                                   time=time, table=tobj))
    return write_annotations(cat, anns, time=time, message=f"verified query: {question.strip()[:200]}")
