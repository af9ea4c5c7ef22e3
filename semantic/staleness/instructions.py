"""What a catalog's (or a namespace's) `instructions` say about its tables, checked against those tables.

The instructions are prose every agent reads before any table: one sentence made false misleads every
question that rests on it. A sentence is read for the claims below (`RULES`, one entry each: what the
sentence names, and the evidence that contradicts it); nothing else in it is judged.

| rule | the sentence names | contradicted by |
|---|---|---|
| `suffix` | a convention for columns by suffix ("dollars in columns ending _usd", "*_utc are UTC") | a `unit_drift` finding of a scale or a time zone on a column with that suffix that the table still has (not a relation between columns broken: a tax included is still in cents; not a column replaced by one named for its new unit) |
| `named_column` | a column with its table (`fct_order_items.net_line_cents`, `acme.core.dim_date (fiscal_year, ...)`) | the column gone since the instructions were written (renamed: the `rename` fix; dropped); where the sentence computes with it or says what it holds (`sum of`, `/ 100`, `excludes`, `in cents`: `_COMPUTES`), a `unit_drift`, `values_restated` or `column_type_changed` finding on it |
| `value` | a column and a value of it ("orders whose status is not cancelled"), the column's table by name or by its name without a prefix (`fct_orders`: "orders") | a `values_restated` finding: the value no longer written (respelled, merged) |
| `named_table` | a table (qualified, or a name with an underscore) | the table gone since, replaced beside it, or no longer loaded |

The contradicting findings are the tables' own (the detector's at either depth, and the stored data-depth
pass's in the review inbox): a sentence is judged by what the tables' checks already established, never
by reading the prose alone; a zone convention is checked on the columns no claim of their own describes
too (`convention_findings`, below: hidden findings, the instructions' evidence only). One finding per
instructions annotation (one text a person rewrites once):
its target is the catalog or namespace, its annotation `instructions`, its reason and cause those of the
earliest contradiction (so the review groups it with that change), every sentence contradicted and why in
`evidence.values["contradicted"]` (at most `_LISTED`). The fix is `rename` when the only contradiction is a
named column renamed (accept rewrites that name in the text); otherwise `investigate`: a person rewrites
the sentence (edit) or dismisses the finding with a reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from catalog_core import lake
from catalog_core.api import CatalogAPI
from catalog_core.errors import CatalogError
from semantic._tables import column_id, table_columns
from semantic._tables import type_family as fine_family
from semantic.annotations import read_annotations
from semantic.history import Context
from semantic.models import Annotation, Basis, Evidence, Finding, Fix, Provenance
from semantic.staleness.core import Table, cause_parts, load_at, rows_at
from semantic.staleness.values_units import ZONE_FIELDS, ZONE_WORDS, zone_cols, zone_meta, zone_rewritten
from semantic.staleness.values_zones import ZONE_LOADS, ZONE_PATTERN_ROWS, ZONE_RECENT, zone_loaded

_LISTED = 8                      # contradicted sentences listed in one finding's evidence
_SUFFIX = re.compile(r"(?:\bend(?:s|ing)?\s+(?:in\s+|with\s+)?|\bsuffix(?:ed)?\s+(?:with\s+|by\s+)?|\*)[`'\"]?"
                     r"(_[A-Za-z0-9]+)\b", re.IGNORECASE)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PREFIX = re.compile(r"^[a-z]{2,4}_(?=[a-z])")  # fct_, dim_, agg_, rpt_, map_, stg_: a table's name without it
# a sentence that computes with a column or says what it includes: its values' meaning is the claim
_COMPUTES = re.compile(r"\b(?:sum|total|average|avg|mean|count|divide|multipl|exclud|includ|net|gross|in\s+(?:cents|"
                       r"dollars|usd|eur|hours|minutes|seconds|utc))\w*|[/*]\s*\d", re.IGNORECASE)
_SCALE_LIKE = ("unit_drift",)
_COLUMN_CHANGES = ("unit_drift", "values_restated", "column_type_changed")
_TABLE_GONE_REASONS = ("not_loaded_since", "replaced_by_missing")


def is_instructions(f: Finding) -> bool:
    """A finding about a catalog's or namespace's instructions (this module's)."""
    return f.annotation == "instructions" and f.target.count(".") < 2


def sentences(text: str) -> list[str]:
    """The sentences (and `;` clauses) of a text, whitespace folded; a dot inside a dotted name or a
    number does not end one."""
    flat = " ".join(text.split())
    return [s.strip() for s in re.split(r"(?<=[.;:])\s+(?=[A-Za-z(`'\"*_])|;\s*", flat) if s.strip()]


def _forms(table: str) -> list[str]:
    """How prose names a table: qualified in full, by its last two parts, by its own name when that
    cannot be an ordinary word (it holds an underscore or a digit). Longest first."""
    parts = table.lower().split(".")
    out = [".".join(parts[i:]) for i in range(len(parts) - 1)]
    if re.search(r"[_0-9]", parts[-1]):
        out.append(parts[-1])
    return out


def _names_table(sentence: str, table: str) -> bool:
    low = sentence.lower()
    return any(re.search(rf"(?<![\w.]){re.escape(f)}(?![\w])", low) for f in _forms(table))


def _named_columns(sentence: str, table: str) -> set[str]:
    """Columns `sentence` names with `table`: `form.column`, or `form (a, b, ...)`."""
    low = sentence.lower()
    out: set[str] = set()
    for f in _forms(table):
        for m in re.finditer(rf"(?<![\w.]){re.escape(f)}\.([a-z_][a-z0-9_]*)", low):
            out.add(m.group(1))
        for m in re.finditer(rf"(?<![\w.]){re.escape(f)}\s*\(([^)]*)\)", low):
            out.update(_IDENT.findall(m.group(1)))
    return out


def renamed_text(text: str, table: str, old: str, new: str) -> str:
    """`text` with the column `old` of `table` named `new` where it names it as `_named_columns` reads
    (`form.old`, or inside `form (..., old, ...)`); every other word kept as written."""
    for f in _forms(table):
        text = re.sub(rf"(?<![\w.])({re.escape(f)}\.){re.escape(old)}(?!\w)", lambda m: m.group(1) + new, text,
                      flags=re.IGNORECASE)
        text = re.sub(rf"(?<![\w.])({re.escape(f)}\s*\()([^)]*)(\))",
                      lambda m: m.group(1) + re.sub(rf"(?<!\w){re.escape(old)}(?!\w)", new, m.group(2),
                                                    flags=re.IGNORECASE) + m.group(3), text, flags=re.IGNORECASE)
    return text


def _word(sentence: str, word: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(word.lower())}(?![\w])", sentence.lower()) is not None


def _stem_named(sentence: str, table: str) -> bool:
    """The table named in full forms, by its own name qualifying a column, or by its own name without a short
    prefix ("orders" for fct_orders)."""
    own = table.rsplit(".", 1)[-1].lower()
    if _names_table(sentence, table) or re.search(rf"(?<![\w.]){re.escape(own)}\.[a-z_]", sentence.lower()):
        return True  # by a name, or by its own name qualifying a column of it ("orders.net_cents")
    stem = _PREFIX.sub("", table.rsplit(".", 1)[-1].lower())
    return stem != table.rsplit(".", 1)[-1].lower() and len(stem) > 3 and _word(sentence, stem)


@dataclass(frozen=True)
class Contradiction:
    sentence: str
    rule: str
    table: str
    column: str | None
    why: str
    reason: str
    status: str
    cause: str | None
    vids: tuple[int, ...]
    rename: tuple[str, str] | None = None   # (old, new) of a named column renamed


@dataclass
class _World:
    """What the rules read: the findings by the column (or table) they are about, the tables now and at a vid."""

    cat: CatalogAPI
    vid: int
    tables: list[str]
    findings: list[Finding]

    def __post_init__(self) -> None:
        self._cols: dict[tuple[str, int], dict[int, str]] = {}
        self._tables: dict[int, set[str]] = {}

    def columns(self, table: str, vid: int | None = None) -> dict[int, str]:
        """The columns of `table` at `vid` (default: the snapshot) by field id; {} when it did not exist."""
        key = (table, self.vid if vid is None else vid)
        if key not in self._cols:
            try:
                obj = self.cat.get(lake.table_path(table), vid=key[1])
            except CatalogError:
                obj = None
            self._cols[key] = {} if obj is None else {column_id(c): c.name for c in table_columns(obj.value)}
        return self._cols[key]

    def tables_at(self, vid: int) -> set[str]:
        if vid not in self._tables:
            try:
                self._tables[vid] = {lake.name_of(o.path) for o in self.cat.query(lake.tables_query(), vid=vid)}
            except CatalogError:
                self._tables[vid] = set()
        return self._tables[vid]

    def about(self, table: str, column: str | None) -> list[Finding]:
        """Findings on `table.column` (its own claims, or a cause naming that column), or table-wide on `table`."""
        out = []
        for f in self.findings:
            kind, ctable, detail = cause_parts(f.cause)
            if column is None:
                if f.target == table or ctable == table:
                    out.append(f)
            elif f.target.lower() == f"{table}.{column}".lower() or (ctable == table and (detail or "").lower() == column):
                out.append(f)
        return out


def _c(s: str, rule: str, table: str, column: str | None, why: str, f: Finding | None, reason: str | None = None,
       status: str | None = None, vids: Iterable[int] = (), rename: tuple[str, str] | None = None) -> Contradiction:
    return Contradiction(s, rule, table, column, why, reason or (str(f.reason) if f else "schema_changed"),
                         status or (f.status if f else "stale"), f.cause if f else None,
                         tuple(f.evidence.vids) if f else tuple(vids), rename)


def _first(msg: str) -> str:
    return msg.split(";")[0][:160]


def _suffix(w: _World, s: str, ann: Annotation) -> list[Contradiction]:
    out = []
    sfx = [m.group(1).lower() for m in _SUFFIX.finditer(s)]
    for f in w.findings:
        if f.reason not in _SCALE_LIKE or f.target.count(".") != 3 or cause_parts(f.cause)[0] == "meaning":
            continue  # a relation between columns broken (a tax included) leaves the unit the suffix names
        table, col = f.target.rsplit(".", 1)
        if col.lower() not in {n.lower() for n in w.columns(table).values()}:
            continue  # a column replaced by another (cents restated as dollars in `x_usd`): the new name says it
        hit = next((x for x in sfx if col.lower().endswith(x)), None)
        if hit is not None:
            out.append(_c(s, "suffix", table, col, f"{f.target} ends {hit}: {_first(f.message)}", f))
    return out


def _named_column(w: _World, s: str, ann: Annotation) -> list[Contradiction]:
    out = []
    for table in w.tables:
        named = _named_columns(s, table)
        if not named:
            continue
        now = {n.lower(): n for n in w.columns(table).values()}
        then = w.columns(table, ann.vid) if ann.vid is not None else {}
        ids_now = w.columns(table)
        for col in sorted(named):
            if col not in now:
                cid = next((i for i, n in then.items() if n.lower() == col), None)
                if cid is None:
                    continue  # never a column of it: not a claim about one
                new = ids_now.get(cid)
                if new is not None:
                    out.append(_c(s, "named_column", table, col, f"{table}.{col} was renamed {new}", None,
                                  "column_renamed", "stale", [w.vid], rename=(col, new)))
                else:
                    out.append(_c(s, "named_column", table, col, f"{table}.{col} was dropped", None,
                                  "column_dropped", "stale", [w.vid]))
                continue
            if not _COMPUTES.search(s):
                continue  # names it to point at it ("use t (a, b) for ..."): what its values hold is not said
            for f in w.about(table, now[col]):
                if f.reason in _COLUMN_CHANGES:
                    out.append(_c(s, "named_column", table, now[col], f"{table}.{now[col]}: {_first(f.message)}", f))
                    break
    return out


def _old_values(f: Finding) -> list[str]:
    v = f.evidence.values
    got: list[Any] = []
    old = v.get("old")
    got += old if isinstance(old, list) else [old] if old is not None else []
    for fx in f.fixes:
        if fx.action == "value_map":
            got += list((fx.params.get("map") or {}).keys())
    return [str(x) for x in dict.fromkeys(got) if isinstance(x, str | int) and str(x).strip()]


def _value(w: _World, s: str, ann: Annotation) -> list[Contradiction]:
    out = []
    for f in w.findings:
        if f.reason != "values_restated":
            continue
        _k, table, col = cause_parts(f.cause)
        table = table or ".".join(f.target.split(".")[:3])
        col = col or str(f.evidence.values.get("column") or "")
        if not col or not _word(s, col) or not _stem_named(s, table):
            continue
        vals = [x for x in _old_values(f) if _word(s, x)]
        if vals:
            out.append(_c(s, "value", table, col, f"{table}.{col} no longer holds {vals[0]!r}: {_first(f.message)}", f))
    return out


def _named_table(w: _World, s: str, ann: Annotation) -> list[Contradiction]:
    out = []
    names = set(w.tables)
    for table in w.tables:
        if not _names_table(s, table):
            continue
        for f in w.about(table, None):
            if f.reason in _TABLE_GONE_REASONS and f.target == table:
                out.append(_c(s, "named_table", table, None, f"{table}: {_first(f.message)}", f))
                break
    if ann.vid is not None:  # tables named then, gone now
        for table in sorted(w.tables_at(ann.vid) - names):
            if "." in s and any(re.search(rf"(?<![\w.]){re.escape(f)}(?![\w])", s.lower()) for f in _forms(table)[:2]):
                out.append(_c(s, "named_table", table, None, f"{table} no longer exists", None, "schema_changed",
                              "stale", [w.vid]))
    return out


# the rules, in the order their contradictions are listed (a sentence is listed once per change)
RULES: tuple[tuple[str, Callable[[_World, str, Annotation], list[Contradiction]]], ...] = (
    ("named_column", _named_column),
    ("value", _value),
    ("suffix", _suffix),
    ("named_table", _named_table),
)


def prefixes(tables: Iterable[str]) -> list[str]:
    """The catalogs and namespaces above `tables` (`acme`, `acme.core`, ...)."""
    out: set[str] = set()
    for t in tables:
        parts = t.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return sorted(out)


def holders(cat: CatalogAPI, vid: int, tables: Iterable[str]) -> dict[str, list[Annotation]]:
    """The annotations of every catalog and namespace above `tables` that holds instructions."""
    out = {}
    for p in prefixes(tables):
        try:
            anns = read_annotations(cat, p, vid=vid)
        except CatalogError:
            continue
        if any(a.kind == "instructions" for a in anns):
            out[p] = anns
    return out


def contradictions(cat: CatalogAPI, vid: int, tables: list[str], findings: list[Finding], ann: Annotation
                   ) -> list[Contradiction]:
    """Every sentence of `ann` (an instructions text) that the tables' `findings` or schemas contradict."""
    if not isinstance(ann.value, str):
        return []
    w = _World(cat, vid, sorted(tables), [f for f in findings if not is_instructions(f)])
    out: list[Contradiction] = []
    seen: set[tuple[str, str, str | None]] = set()
    for s in sentences(ann.value):
        for _name, rule in RULES:
            for c in rule(w, s, ann):
                key = (s, c.table, c.column)  # one contradiction of a sentence per column (or table) it names
                if key not in seen:
                    seen.add(key)
                    out.append(c)
    return out


def instruction_findings(cat: CatalogAPI, vid: int, tables: list[str], findings: list[Finding],
                         held: dict[str, list[Annotation]] | None = None) -> list[Finding]:
    """One finding per catalog or namespace whose instructions the tables' `findings` (and schemas)
    contradict at `vid` (see the module docstring); dismissed ones left out by the caller."""
    held = holders(cat, vid, tables) if held is None else held
    out = []
    for target, anns in sorted(held.items()):
        ann = next((a for a in anns if a.kind == "instructions" and a.key == "instructions"), None)
        if ann is None:
            continue
        got = contradictions(cat, vid, tables, findings, ann)
        if not got:
            continue
        got.sort(key=lambda c: (min(c.vids, default=vid), c.sentence))
        first = got[0]
        listed = got[:_LISTED]
        said = "; ".join(f"{c.sentence[:140]!r}: {c.why}" for c in listed[:3])
        more = f"; and {len(got) - 3} more" if len(got) > 3 else ""
        renames = {c.rename for c in got if c.rename is not None}
        if len(renames) == 1 and all(c.rename is not None for c in got):
            old, new = next(iter(renames))
            fixes = [Fix(action="rename", params={"old": old, "new": new, "table": first.table})]
            suggestion = f"rename {old} to {new} in {target}'s instructions"
        else:
            fixes = [Fix(action="investigate", params={"table": first.table,
                                                        **({"column": first.column} if first.column else {})})]
            suggestion = (f"rewrite what {target}'s instructions say there (review edit with the new text), or "
                          "dismiss the finding with a reason")
        vids = list(dict.fromkeys([*([ann.vid] if ann.vid is not None else []), *(v for c in got for v in c.vids)]))
        out.append(Finding(
            target=target, annotation=ann.key, status="stale" if any(c.status == "stale" for c in got) else "suspect",
            reason=first.reason,  # type: ignore[arg-type]
            message=f"{len(got)} statement(s) of {target}'s instructions no longer hold: {said}{more}",
            evidence=Evidence(vids=vids, values={"contradicted": [
                {"sentence": c.sentence[:300], "rule": c.rule, "table": c.table, "column": c.column, "why": c.why,
                 "cause": c.cause} for c in listed], "count": len(got), "truncated": len(got) > len(listed)}),
            suggestion=suggestion, fixes=fixes, annotations=[ann.key], cause=first.cause))
    return out


# ------------------------------------------------------------------ conventions as claims on every column
# A convention ("columns ending _utc are UTC timestamps") claims something of columns no annotation of their
# own describes. For the time zone, the claim is checked as if each such column carried it (`ZONE_CLAIM`): the
# zone checks run on a claim made for it (its basis the instructions', or the rows before the latest loads),
# and what they find is kept hidden beside the table's findings (`is_hidden`: no item, no card, nothing
# downstream), as evidence the instructions' finding reads (`_suffix`).
ZONE_CLAIM = "UTC"


def is_hidden(f: Finding) -> bool:
    """A finding on a column no claim of its own describes, raised for a catalog's convention: evidence for
    the instructions' finding, never shown on its own."""
    return f.annotation is None and "convention" in f.evidence.values


def held_at(ctx: Context) -> dict[str, list[Annotation]]:
    """`holders` of every table at `ctx.vid`, read once per vid (the per-catalog cache: the engine, the
    review's listing and the conventions read the same)."""
    key = ("instructions_held", ctx.vid)
    got = ctx.cache.findings.take(key)
    if got is None:
        got = ctx.cache.findings.put(key, (holders(ctx.cat, ctx.vid, list(ctx.tables())),))
    return got[0]


def zone_conventions(ctx: Context, table: str) -> list[tuple[str, str, str, int]]:
    """(catalog or namespace, sentence, suffix, the instructions' vid) of each sentence of the instructions
    above `table` stating what zone the columns with a suffix hold (a zone word and a suffix convention)."""
    out = []
    for holder, anns in held_at(ctx).items():
        a = next((x for x in anns if x.key == "instructions" and isinstance(x.value, str)), None)
        if a is None or not (table + ".").startswith(holder + "."):
            continue
        for sent in sentences(str(a.value)):
            if ZONE_WORDS.search(sent):
                out += [(holder, sent, m.group(1).lower(), int(a.vid or 0)) for m in _SUFFIX.finditer(sent)]
    return out


def convention_claims(t: Table, anns: list[Annotation]) -> list[tuple[Annotation, str, str]]:
    """(the claim, catalog or namespace, sentence) for each timestamp column of `t` whose name ends with a
    zone convention's suffix and that no claim of the table describes (`zone_cols`: its own description,
    unit or sample values, or a table description saying a zone or naming it)."""
    conv = zone_conventions(t.ctx, t.name)
    if not conv:
        return []
    covered = {c for a in anns if (a.kind == "column" and a.field in ZONE_FIELDS) or a.key == "table.description"
               for c in zone_cols(t, a, anns)}
    out = []
    for holder, sent, sfx, vid in conv:
        for cid, c in sorted(t.cols.items()):
            if c.name in covered or fine_family(c.type) != "timestamp" or not c.name.lower().endswith(sfx):
                continue
            claim = Annotation(kind="column", key=f"column.{cid}.unit", target=t.name, value=ZONE_CLAIM, column=c.name,
                               column_id=cid, vid=vid, provenance=Provenance(
                                   author=f"instructions of {holder}", confidence=1.0, time=0.0, basis=Basis(vid=vid)))
            out.append((claim, holder, sent))
            covered.add(c.name)
    return out


def _pattern_basis(t: Table, claim: Annotation, anns: list[Annotation]) -> Annotation:
    """The claim with its basis moved later when the instructions predate most of the table's rows: to the
    last load at or before the newest basis of the table's own annotations (the rows its other claims were
    written over, which the other checks read already), else the load twice `ZONE_LOADS` loads back, else
    the first load holding rows enough for a pattern of the day (`ZONE_PATTERN_ROWS`); never one of the
    latest loads, which are judged against it."""
    since, dc = claim.provenance.basis.vid, t.tl.data_commits
    latest = dc[-ZONE_LOADS][0] if len(dc) >= ZONE_LOADS else None
    own = [load_at(t, a.provenance.basis.vid) for a in anns if a.provenance.basis.vid]
    own = [v for v in own if v > since and (latest is None or v < latest) and (rows_at(t, v) or 0) >= ZONE_PATTERN_ROWS]
    back = dc[-2 * ZONE_LOADS - 1][0] if len(dc) > 2 * ZONE_LOADS else None
    first = max(own) if own else back if back is not None and back > since else next(
        (v for v, _tt in dc if v > since and (rows_at(t, v) or 0) >= ZONE_PATTERN_ROWS), None)
    if first is None:
        return claim
    return claim.model_copy(update={"vid": first, "provenance": claim.provenance.model_copy(
        update={"basis": Basis(vid=first)})})


def convention_findings(t: Table, anns: list[Annotation], depth: str) -> list[Finding]:
    """The zone checks on each convention's claim (`convention_claims`) at `depth`, hidden (`is_hidden`)."""
    out = []
    for claim, holder, sent in convention_claims(t, anns):
        every = [*anns, claim]
        if depth == "metadata":
            got = zone_meta(t, claim, every)
        else:
            # the latest loads only (`ZONE_RECENT`): evidence for one text, read at the vids the screen reads
            got = zone_rewritten(t, claim, every) or zone_loaded(t, _pattern_basis(t, claim, anns), every, judged=ZONE_RECENT)
        for f in got:
            out.append(f.model_copy(update={
                "annotation": None, "annotations": [],
                "message": f"{f.message} (the instructions of {holder} say {sent[:120]!r})",
                "evidence": f.evidence.model_copy(update={"values": {**f.evidence.values, "convention": holder}})}))
    return out
