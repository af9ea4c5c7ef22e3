"""Pydantic models of the semantic layer (DESIGN.md, Semantic layer; prompts/semantic-layout.md).

Stored shape of one annotation object at `<target path>/_semantic/<key>`:

    {"obj_type": "annotation", "kind": K, "key": key, "target": "acme.core.t", "value": V,
     "provenance": {"author", "source", "confidence", "time", "note", "basis": {...}},
     "column": name, "column_id": id}        # the last two only for column annotations

`Annotation` is that object as read (plus `vid`, the commit that wrote it, and `path`). The value
models (`Grain`, `Deprecated`, `Relationship`, `Metric`, `VerifiedQuery`) and the field tables
(`TableFields`, `ColumnFields`) validate what callers write. `Finding` and `TableCard` are the read
models of staleness and describe.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "Kind", "Source", "Role", "Cardinality", "Status", "Reason", "REASONS", "TABLE_FIELDS", "COLUMN_FIELDS",
    "ColumnRef", "ColumnStats", "DataCommit", "Basis", "Provenance",
    "Grain", "Deprecated", "NotForReporting", "LoadLog", "Additivity", "NullWhen", "Relationship", "Metric", "VerifiedQuery",
    "TableFields", "ColumnFields", "Annotation", "Evidence", "FixAction", "FIX_ACTIONS", "Fix", "Finding",
    "AnnotationView", "ColumnCard", "TableStats", "PeriodLoad", "Completeness", "Freshness", "Deprecation", "RelationshipView", "MetricView",
    "VerifiedQuestion", "TableCard",
]

Kind = Literal["table", "column", "relationship", "metric", "verified_query", "instructions", "review"]
Source = Literal["human", "agent", "inferred", "import"]
Role = Literal["id", "dimension", "measure", "time"]
Cardinality = Literal["many_to_one", "one_to_one", "one_to_many"]
Status = Literal["fresh", "suspect", "stale"]
Reason = Literal[
    "column_dropped", "column_renamed", "column_type_changed", "schema_changed", "unit_drift",
    "grain_violated", "cardinality_violated", "join_key_missing", "join_match_low", "enum_violated",
    "sample_values_missing", "freshness_sla_missed", "not_loaded_since", "deprecated_but_written",
    "replaced_by_missing", "verified_query_fails", "verified_query_changed", "unreviewed_while_changing",
    "values_restated", "check_limit_exceeded", "upstream_changed", "upstream_incomplete", "range_exceeded",
    "cadence_changed",
]
REASONS: tuple[str, ...] = Reason.__args__  # type: ignore[attr-defined]

TABLE_FIELDS = ("description", "grain", "owner", "tags", "synonyms", "deprecated", "freshness_sla",
                "certified", "instructions", "not_for_reporting", "load_log")
COLUMN_FIELDS = ("description", "synonyms", "unit", "sample_values", "enum", "role", "additivity", "null_when",
                 "labels")
AdditivityKind = Literal["additive", "semi_additive", "non_additive"]
Window = Literal["last", "first", "min", "max", "avg"]

_STRICT = ConfigDict(extra="forbid")
Scalar = str | int | float | bool | None


# ------------------------------------------------------------------ provenance
class ColumnRef(BaseModel):
    id: int
    name: str
    type: str


class ColumnStats(BaseModel):
    min: Any = None
    max: Any = None
    null_count: int | None = None


class DataCommit(BaseModel):
    vid: int
    time: float


class Basis(BaseModel):
    """What an annotation described when it was written: the catalog state at `vid`."""

    vid: int
    schema_id: int | None = None
    columns: list[ColumnRef] = Field(default_factory=list)
    row_count: int | None = None
    stats: dict[str, ColumnStats] = Field(default_factory=dict)
    last_data_commit: DataCommit | None = None


class Provenance(BaseModel):
    author: str
    source: Source = "human"
    confidence: float = Field(1.0, ge=0.0, le=1.0)
    time: float
    note: str | None = None
    basis: Basis


# ------------------------------------------------------------------ annotation values
class Grain(BaseModel):
    model_config = _STRICT
    text: str = ""
    keys: list[str] = Field(default_factory=list)


class Deprecated(BaseModel):
    model_config = _STRICT
    reason: str = ""
    replaced_by: str | None = None
    since: str | None = None


class NotForReporting(BaseModel):
    """Table field `not_for_reporting`: the table is kept (e.g. raw input) but answers come from the
    tables in `use_instead` (each a table that exists when the annotation is written; may be empty)."""

    model_config = _STRICT
    reason: str = ""
    use_instead: list[str] = Field(default_factory=list)


class LoadLog(BaseModel):
    """Table field `load_log`: the table `table` logs the loads of the annotated one, one row per load
    attempt. `table_column` names the loaded table (its value is `name`, default: the dotted name, or it
    without the catalog, or the bare table name); `partition_column` holds the period loaded (an ISO
    date `2025-03-09` or month `2025-03`, optionally followed by `/key=value` for a part of it, e.g.
    one store); `status_column` the outcome, one of `complete`, `partial` or `failed` values (others
    count as failed); `attempt_column` / `loaded_at_column`, when given, order the attempts (the latest
    one of each partition counts). `timezone` (IANA, default UTC) says where a period ends.
    Invariant (checked when written): `table` exists and has every named column."""

    model_config = _STRICT
    table: str
    table_column: str
    partition_column: str
    status_column: str
    attempt_column: str | None = None
    loaded_at_column: str | None = None
    name: str | None = None
    complete: list[str] = Field(default_factory=lambda: ["success"], min_length=1)
    partial: list[str] = Field(default_factory=lambda: ["partial"])
    failed: list[str] = Field(default_factory=lambda: ["failed"])
    timezone: str | None = None


class Additivity(BaseModel):
    """Column field `additivity` of a measure. `semi_additive`: summing over `non_additive_dimension`
    (a column of the same table, required then, checked when written) is wrong; over a range of it take
    the `window` row ("last": its latest value). `additive` / `non_additive` carry neither."""

    model_config = _STRICT
    kind: AdditivityKind
    non_additive_dimension: str | None = None
    window: Window | None = None

    @model_validator(mode="after")
    def _semi_needs_dimension(self) -> Additivity:
        if self.kind == "semi_additive":
            if not self.non_additive_dimension:
                raise ValueError("a semi_additive measure names its non_additive_dimension (e.g. the snapshot date column)")
            if self.window is None:
                self.window = "last"
        elif self.non_additive_dimension is not None or self.window is not None:
            raise ValueError(f"non_additive_dimension and window apply only to kind semi_additive, not {self.kind}")
        return self


class NullWhen(BaseModel):
    """Column field `null_when`: what a null in the column means. `state` names it as a value would
    be stored ("in_transit", "anonymous"); when another column of the same table records that state,
    `column` names it (checked when written) and the column is null exactly on the rows whose `column`
    holds one of `values` (then at least one)."""

    model_config = _STRICT
    state: str = Field(min_length=1)
    column: str | None = None
    values: list[Scalar] = Field(default_factory=list)

    @model_validator(mode="after")
    def _column_with_values(self) -> NullWhen:
        if (self.column is None) != (not self.values):
            raise ValueError("give column and values together (the state's values in that column), or neither")
        return self


class Relationship(BaseModel):
    model_config = _STRICT
    to: str
    on: list[tuple[str, str]]
    cardinality: Cardinality = "many_to_one"
    canonical: bool = False
    condition: str | None = None


class Metric(BaseModel):
    model_config = _STRICT
    expression: str
    filter: str | None = None
    time_column: str | None = None
    unit: str | None = None
    description: str | None = None
    synonyms: list[str] = Field(default_factory=list)


class VerifiedQuery(BaseModel):
    model_config = _STRICT
    question: str
    sql: str
    verified_by: str
    verified_at_vid: int
    result_fingerprint: str
    tables: list[str] = Field(default_factory=list)


class TableFields(BaseModel):
    """The fields `annotate` accepts for a table (each becomes one `table.<field>` annotation)."""

    model_config = _STRICT
    description: str | None = None
    grain: Grain | None = None
    owner: str | None = None
    tags: list[str] | None = None
    synonyms: list[str] | None = None
    deprecated: Deprecated | None = None
    freshness_sla: str | None = None
    certified: bool | None = Field(None, strict=True)
    instructions: str | None = None
    not_for_reporting: NotForReporting | None = None
    load_log: LoadLog | None = None


class ColumnFields(BaseModel):
    """The fields `annotate` accepts for a column (`column.<column id>.<field>`)."""

    model_config = _STRICT
    description: str | None = None
    synonyms: list[str] | None = None
    unit: str | None = None
    sample_values: list[Scalar] | None = None
    enum: list[Scalar] | None = None
    role: Role | None = None
    additivity: Additivity | None = None
    null_when: NullWhen | None = None
    # code -> label of a coded column (e.g. {"X4": "refunded"}): what each stored value means
    labels: dict[str, str] | None = None


class Annotation(BaseModel):
    """One annotation object. `vid` (the commit that wrote it) and `path` are filled on read."""

    kind: Kind
    key: str
    target: str
    value: Any
    provenance: Provenance
    column: str | None = None
    column_id: int | None = None
    vid: int | None = None
    path: str | None = None

    @property
    def field(self) -> str:
        """`description` for `table.description` / `column.3.description`, else the key's kind part."""
        return self.key.rsplit(".", 1)[-1] if self.kind in ("table", "column") else self.key

    def stored(self) -> dict[str, Any]:
        """The object value written to the catalog."""
        out = {"obj_type": "annotation", "kind": self.kind, "key": self.key, "target": self.target,
               "value": self.value, "provenance": self.provenance.model_dump()}
        if self.column_id is not None:
            out["column"], out["column_id"] = self.column, self.column_id
        return out


# ------------------------------------------------------------------ findings
class Evidence(BaseModel):
    """What a finding rests on: the vids of the commits involved (always at least one), their
    times, and the values compared."""

    vids: list[int]
    times: list[float] = Field(default_factory=list)
    values: dict[str, Any] = Field(default_factory=dict)


FixAction = Literal["rename", "successor", "join_on", "filter", "add_enum_values", "update_freshness_sla",
                    "update_unit", "relate_to", "reverify", "investigate", "value_map", "set_keys",
                    "remove", "reword_unit", "update_range", "repoint"]
FIX_ACTIONS: tuple[str, ...] = FixAction.__args__  # type: ignore[attr-defined]


class Fix(BaseModel):
    """One machine-readable repair a finding suggests (the `suggestion` text says the same in words).

    `params` by action (every value a name or a number, never prose):
      rename {old, new, scale}              column `old` is now `new`; values x 10^scale (0: same unit)
      successor {table}                     read `table` instead
      join_on {from_column, to_table, to_column[, unconditional]}   join on this pair instead of the
                                            declared key (`unconditional`: without the relationship's condition,
                                            the new key identifying every version of the related table)
      filter {table, column[, value]}       keep the current rows of `table`: its boolean `column` (is_current),
                                            or its text `column` equal to `value` ('Y')
      add_enum_values {column, values}      the column holds these values besides its enum
      update_freshness_sla {sla}            an ISO-8601 duration matching the loads now
      update_unit {column, scale}           values are the annotated ones x 10^scale
      update_unit {column, factor}          values are the annotated ones x factor, a factor between two
                                            units of one family that is no power of ten (hours -> minutes:
                                            60; `semantic.units`)
      relate_to {table}                     the related table is now `table`
      reverify {}                           re-check the verified query's answer
      investigate {columns}                 check these columns' values (or who writes the table)
      value_map {column, map, values}       the column's values were restated: map {old: new} (the most
                                            frequent new value of the rows that held `old`), values: the
                                            column's distinct values now (the enum to write); `keep`: the
                                            older rows still hold `old` (the new loads spell it `new`): a
                                            metric's filter tests both (`table`: the joined table whose
                                            column it is)
      set_keys {keys}                       the rows are unique on these columns now (the grain's new keys)
      remove {column}                       the column was dropped and none took its place: its annotation (or a
                                            relationship joining from it) describes nothing the table holds and
                                            goes (history keeps it)
      reword_unit {column, old, new}        a description naming the column's unit by the word `old` (its only
                                            unit word, no number): every value is in unit `new` now
      update_range {column, start, end}     the text's one date range of `column` is `start` to `end` now
                                            (ISO dates; filled day by day where it was)
      repoint {table, old, new, replaced}   prose sending readers to `replaced`, no longer kept, named `old`,
                                            names `new` instead (`table`, the one kept now, named alike); a
                                            verified query reading `replaced` reads `table` instead
    """

    model_config = _STRICT
    action: FixAction
    params: dict[str, Any] = Field(default_factory=dict)


class Finding(BaseModel):
    target: str                       # dotted table name (plus ".column" for column annotations)
    annotation: str | None            # the annotation key, None for table-wide findings
    status: Status
    reason: Reason
    message: str
    evidence: Evidence
    suggestion: str | None = None
    fixes: list[Fix] = Field(default_factory=list)  # invariant: non-empty whenever `suggestion` is set
    # every annotation key (of `target`'s table) the one underlying change affects; `annotation` is the
    # first of them (readers of one key keep working). Empty for table-wide findings about no annotation.
    annotations: list[str] = Field(default_factory=list)
    # the underlying change, e.g. "rename:acme.mart.t@122:net_cents"; the same on every table it
    # reaches, so a review can decide one cause once (None: a finding of its own)
    cause: str | None = None


# ------------------------------------------------------------------ the table card
class AnnotationView(BaseModel):
    key: str
    kind: Kind
    value: Any
    author: str
    source: Source
    confidence: float
    note: str | None = None
    vid: int | None
    written_at: float
    age_commits: int                  # commits that changed the table since this annotation
    age_seconds: float                # snapshot time - written_at (now - written_at when describe is given now)
    status: Status = "fresh"
    unreviewed: bool = False          # written by an agent and not yet accepted by a person (semantic.review)


class ColumnCard(BaseModel):
    id: int
    name: str
    type: str
    nullable: bool = True
    stats: ColumnStats | None = None
    annotations: dict[str, AnnotationView] = Field(default_factory=dict)


class TableStats(BaseModel):
    row_count: int | None = None
    file_count: int | None = None
    size_bytes: int | None = None


class PeriodLoad(BaseModel):
    """One period of a table that is not complete: `partial` (loaded before the period ended, or the
    load log says partial for it or a part of it) or `failed` (the load log's latest attempt failed)."""

    period: str
    status: Literal["partial", "failed"]
    source: Literal["partition", "load_log", "lineage"]  # lineage: partial in an input the build read
    loaded_at: float | None = None
    note: str | None = None


class Completeness(BaseModel):
    """Which periods of a table hold complete data (`describe(...).freshness.completeness`).

    Periods come from the table's date partitions (a partition whose period had not ended at its last
    load is partial) and, when the table declares a `load_log`, from that log (the latest attempt of
    every partition of a period must have a complete status). `status` is the latest period's;
    `latest_complete` the latest period that is complete by both; `incomplete` the most recent
    incomplete periods (at most MAX_INCOMPLETE, newest first; `truncated` when there are more)."""

    status: Literal["complete", "partial", "failed", "unknown"] = "unknown"
    latest_period: str | None = None
    latest_complete: str | None = None
    incomplete: list[PeriodLoad] = Field(default_factory=list)
    truncated: bool = False
    load_log: str | None = None
    note: str | None = None           # why the load log could not be read, when it could not


class Freshness(BaseModel):
    last_data_commit: DataCommit | None = None
    sla: str | None = None
    age_seconds: float | None = None  # now - last data commit
    now: float
    status: Literal["ok", "missed", "unknown"] = "unknown"
    completeness: Completeness = Field(default_factory=Completeness)


class Deprecation(BaseModel):
    reason: str = ""
    since: str | None = None
    successor: str | None = None


class _Read(BaseModel):
    """Name, who wrote a relationship or metric, the commit that did, and its staleness status."""

    name: str
    source: Source | None = None
    author: str | None = None
    confidence: float | None = None
    vid: int | None = Field(None, description="the vid that wrote it")
    status: Status = "fresh"

    @classmethod
    def _read(cls, a: Annotation, kind: str, stored: type[BaseModel], **extra: Any) -> Any:
        """`cls` from an annotation of `kind` whose value validates as `stored`; None otherwise."""
        if a.kind != kind or not isinstance(a.value, dict):
            return None
        try:
            value = stored.model_validate(a.value)
        except ValueError:
            return None
        p = a.provenance
        return cls(**value.model_dump(), name=a.key.partition(".")[2] or a.key, source=p.source, author=p.author,
                   confidence=p.confidence, vid=a.vid, **extra)


class RelationshipView(Relationship, _Read):
    """A declared relationship as read (`sm.relationships`, `TableCard.relationships`): the stored
    `Relationship` value plus its name, its FROM table (where it is stored) and its provenance."""

    model_config = ConfigDict(extra="ignore")
    from_table: str

    @property
    def to_table(self) -> str:
        return self.to

    @classmethod
    def of(cls, a: Annotation) -> RelationshipView | None:
        """The relationship an annotation object holds; None for any other or a malformed one."""
        rel = cls._read(a, "relationship", Relationship, from_table=a.target)
        return rel if rel is not None and rel.on else None


class MetricView(Metric, _Read):
    """A metric as read (`sm.metrics`, `TableCard.metrics`): the stored `Metric` value plus its name,
    its table, the qualified name `metric_sql` accepts, and its provenance."""

    model_config = ConfigDict(extra="ignore")
    table: str
    qualified: str = Field(description="table.metric, the unambiguous name metric_sql accepts")

    @classmethod
    def of(cls, a: Annotation) -> MetricView | None:
        """The metric an annotation object holds; None for any other or a malformed one."""
        return cls._read(a, "metric", Metric, table=a.target, qualified=f"{a.target}.{a.key.partition('.')[2]}")


class VerifiedQuestion(BaseModel):
    key: str
    question: str
    sql: str
    verified_by: str
    verified_at_vid: int
    status: Status = "fresh"


class TableCard(BaseModel):
    """Everything an agent should know about one table at one snapshot (`sm.describe`)."""

    name: str
    snapshot: int
    snapshot_time: float
    schema_id: int | None
    partition_by: list[str]
    columns: list[ColumnCard]
    annotations: dict[str, AnnotationView]        # table-level, by field
    orphaned: list[AnnotationView] = Field(default_factory=list)  # on columns no longer in the schema
    stats: TableStats
    freshness: Freshness
    deprecation: Deprecation | None = None
    relationships: list[RelationshipView] = Field(default_factory=list)  # declared on this table
    referenced_by: list[RelationshipView] = Field(default_factory=list)  # declared on others, to this one
    metrics: list[MetricView] = Field(default_factory=list)
    verified_questions: list[VerifiedQuestion] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    status: Status = "fresh"
