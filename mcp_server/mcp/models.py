"""The output models of the MCP tools (published as each tool's output schema).

Every read tool's output has `snapshot` ({vid, time, handle}) so an agent that passes the handle
back reads the same state. Lists carry `total`, `truncated` and `next_cursor`. Optional fields
left empty are omitted from the payload, so the schemas list them but the JSON stays small.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, WithJsonSchema

__all__ = [
    "SnapshotOut", "FixOut", "Warning", "CommitOut", "NamedSnapshotOut", "PinOut", "SnapshotsOut", "ChangeOut",
    "DiffOut", "ObjectOut", "QueryOut", "SqlColumnOut", "SqlOut", "ValueCount", "ColumnValuesOut",
    "DeprecationOut", "NotForReportingOut", "AdditivityOut", "NullWhenOut", "TableHit", "SearchOut", "ColumnStatsOut", "ColumnOut", "AnnotationOut",
    "FreshnessOut", "StatsOut", "RelationshipOut", "MetricOut", "FindingOut", "DescribeOut", "HopOut",
    "JoinOut", "MetricsOut", "MetricQueryOut", "StalenessOut", "AnnotateOut",
]

Status = Literal["fresh", "suspect", "stale"]

# One row of SQL cells, each any JSON value. Validated and serialized as list[Any]; published as
# {"type": "array"} without the per-cell subschema `items: {}` that list[Any] gets: that subschema
# accepts every value too, but a JSON Schema validator descends into it once per cell, and the MCP
# client checks every answer against the output schema (`ClientSession.validate_tool_result`): for
# a 50-row run_sql answer the per-cell descents were ~90% of that check.
Row = Annotated[list[Any], WithJsonSchema({"type": "array"})]


class SnapshotOut(BaseModel):
    """The snapshot a call read: pass `handle` (or `vid`) as `snapshot` to read the same state."""

    vid: int
    time: str = Field(description="commit time of vid, ISO-8601 UTC")
    handle: str


FixAction = Literal["rename", "successor", "join_on", "filter", "add_enum_values", "update_freshness_sla",
                    "update_unit", "relate_to", "reverify", "investigate", "value_map", "set_keys",
                    "remove", "reword_unit", "update_range", "repoint"]


class FixOut(BaseModel):
    """A repair in typed form (the `suggestion` says it in words): e.g. rename {old, new, scale},
    successor {table}, join_on {from_column, to_table, to_column}, filter {table, column}."""

    action: FixAction
    params: dict[str, Any] = Field(default_factory=dict)


class Warning(BaseModel):  # noqa: A001 - the name agents see in the schema
    """Something the agent should know before trusting an answer that uses `table`."""

    table: str
    kind: Literal["deprecated", "freshness", "finding"]
    message: str
    status: Status | None = None
    reason: str | None = None
    suggestion: str | None = None
    fixes: list[FixOut] = Field(default_factory=list, description="the suggestion, typed (at most 5)")


class _Paged(BaseModel):
    total: int = Field(description="items in the whole list")
    truncated: bool = Field(description="true when more items follow; call again with cursor=next_cursor")
    next_cursor: str | None = None


# ------------------------------------------------------------------ snapshots
class CommitOut(BaseModel):
    vid: int
    time: str
    author: str
    message: str
    paths: list[str] = Field(description="first paths the commit wrote")
    paths_total: int


class NamedSnapshotOut(BaseModel):
    name: str
    vid: int
    time: str


class PinOut(BaseModel):
    snapshot: SnapshotOut
    latest: CommitOut = Field(description="the latest commit of the catalog now")
    behind: int = Field(description="commits made after the pinned vid")


class SnapshotsOut(_Paged):
    snapshot: SnapshotOut
    commits: list[CommitOut] = Field(description="commits at or before the snapshot, newest first")
    named: list[NamedSnapshotOut] = Field(default_factory=list, description="named snapshots (first page only)")


class ChangeOut(BaseModel):
    target: str = Field(description="dotted name of the table, namespace or catalog")
    path: str
    kind: Literal["added", "removed", "updated"]
    category: Literal["table", "schema", "files", "annotation", "object"]
    detail: str = ""


class DiffOut(_Paged):
    snapshot: SnapshotOut = Field(description="the to_snapshot")
    from_snapshot: SnapshotOut
    commits: int = Field(description="commits between the two snapshots")
    changes: list[ChangeOut]


# ------------------------------------------------------------------ path queries and SQL
class ObjectOut(BaseModel):
    path: str
    obj_type: str | None = None
    vid: int = Field(description="the commit that wrote this version")
    leaf: bool = False
    value: Any = Field(description="the object's value; long entries are cut (see cut)")
    cut: bool = False


class QueryOut(_Paged):
    snapshot: SnapshotOut
    objects: list[ObjectOut]


class SqlColumnOut(BaseModel):
    name: str
    type: str


class SqlOut(BaseModel):
    snapshot: SnapshotOut
    columns: list[SqlColumnOut]
    rows: list[Row]
    row_count: int
    truncated: bool = Field(description="more rows exist than were returned: pass next_cursor for the next page "
                                        "(pages follow the statement's ORDER BY), or aggregate")
    next_cursor: str | None = None
    tables: list[str] = Field(description="the catalog tables the SQL reads")
    warnings: list[Warning] = Field(default_factory=list)


class ValueCount(BaseModel):
    value: Any
    count: int


class ColumnValuesOut(BaseModel):
    snapshot: SnapshotOut
    table: str
    column: str
    values: list[ValueCount] = Field(description="most frequent first")
    total: int = Field(description="distinct values matching query")
    truncated: bool
    next_cursor: str | None = None
    warnings: list[Warning] = Field(default_factory=list)


# ------------------------------------------------------------------ tables
class DeprecationOut(BaseModel):
    reason: str = ""
    since: str | None = None
    successor: str | None = None


class NotForReportingOut(BaseModel):
    """The table is kept (e.g. raw input) but answers come from `use_instead`."""

    reason: str = ""
    use_instead: list[str] = Field(default_factory=list)


class AdditivityOut(BaseModel):
    """How a measure adds up: semi_additive ones are not summed over `non_additive_dimension`;
    over a range of it take the `window` ("last": latest) row."""

    kind: Literal["additive", "semi_additive", "non_additive"]
    non_additive_dimension: str | None = None
    window: str | None = None


class NullWhenOut(BaseModel):
    """What a null in the column means: `state`, recorded (when `column` is set) by `column` in `values`."""

    state: str
    column: str | None = None
    values: list[Any] = Field(default_factory=list)


class TableHit(BaseModel):
    name: str
    score: float
    description: str | None = None
    grain: str | None = None
    row_count: int | None = None
    deprecated: DeprecationOut | None = None
    not_for_reporting: NotForReportingOut | None = None
    freshness: Literal["ok", "missed", "unknown"] | None = None
    complete_through: str | None = Field(default=None, description="latest period whose loads are complete")
    completeness: str | None = Field(default=None, description="complete, partial or failed: the latest period's loads")
    load_log: str | None = Field(default=None, description="the table that logs its loads (partial/failed ones)")
    warnings: list[Warning] = Field(default_factory=list)


class SearchOut(_Paged):
    snapshot: SnapshotOut
    tables: list[TableHit]


class ColumnStatsOut(BaseModel):
    min: Any = None
    max: Any = None
    null_count: int | None = None


class ColumnOut(BaseModel):
    id: int
    name: str
    type: str
    nullable: bool = True
    description: str | None = None
    role: str | None = None
    unit: str | None = None
    synonyms: list[str] | None = None
    enum: list[Any] | None = None
    labels: dict[str, str] | None = None
    sample_values: list[Any] | None = None
    additivity: AdditivityOut | None = None
    null_when: NullWhenOut | None = None
    stats: ColumnStatsOut | None = None
    status: Status | None = None


class AnnotationOut(BaseModel):
    key: str
    value: Any
    author: str
    source: str
    confidence: float
    vid: int | None = None
    age_commits: int | None = Field(None, description="commits that changed the table since it was written")
    age_days: float | None = None
    status: Status | None = None
    note: str | None = None
    unreviewed: bool = Field(False, description="written by an agent, not yet accepted by a person")


class FreshnessOut(BaseModel):
    last_data_commit_vid: int | None = None
    last_data_commit_time: str | None = None
    sla: str | None = None
    age_hours: float | None = None
    status: Literal["ok", "missed", "unknown"] = "unknown"
    completeness: Literal["complete", "partial", "failed", "unknown"] | None = Field(
        default=None, description="the latest period's loads: partial if loaded before it ended or the load log says so")
    latest_period: str | None = None
    complete_through: str | None = Field(default=None, description="latest period whose loads are complete")
    incomplete: list[str] = Field(default_factory=list, description="recent incomplete periods: 'period status (why)'")
    load_log: str | None = Field(default=None, description="the table that logs its loads")


class StatsOut(BaseModel):
    row_count: int | None = None
    file_count: int | None = None
    size_bytes: int | None = None


class RelationshipOut(BaseModel):
    name: str
    to: str
    on: list[list[str]]
    cardinality: str
    canonical: bool = False
    condition: str | None = None
    status: Status | None = None


class MetricOut(BaseModel):
    name: str
    table: str
    expression: str
    filter: str | None = None
    time_column: str | None = None
    unit: str | None = None
    description: str | None = None
    synonyms: list[str] = Field(default_factory=list)
    status: Status | None = None


class FindingOut(BaseModel):
    target: str
    annotation: str | None = None
    status: Status
    reason: str
    message: str
    suggestion: str | None = None
    fixes: list[FixOut] = Field(default_factory=list, description="the suggestion, typed (at most 5)")
    evidence_vids: list[int] = Field(default_factory=list)
    scan_vid: int | None = Field(default=None, description="the vid a stored data check read")
    outdated_by: int | None = Field(default=None, description="the table changed since, at this vid")


class DescribeOut(_Paged):
    """`total`, `truncated` and `next_cursor` page the columns."""

    snapshot: SnapshotOut
    table: str
    detail: Literal["summary", "full"]
    description: str | None = None
    grain: str | None = None
    grain_keys: list[str] | None = None
    owner: str | None = None
    tags: list[str] | None = None
    synonyms: list[str] | None = None
    certified: bool | None = None
    instructions: str | None = None
    deprecation: DeprecationOut | None = None
    not_for_reporting: NotForReportingOut | None = None
    status: Status | None = None
    schema_id: int | None = None
    partition_by: list[str] = Field(default_factory=list)
    stats: StatsOut
    freshness: FreshnessOut
    columns: list[ColumnOut]
    relationships: list[RelationshipOut] = Field(default_factory=list)
    metrics: list[str] = Field(default_factory=list, description="metric names; list_metrics has definitions")
    verified_questions: list[str] = Field(default_factory=list)
    annotations: list[AnnotationOut] = Field(default_factory=list, description="detail=full: with provenance")
    findings: list[FindingOut] = Field(default_factory=list, description="detail=full: staleness findings")
    unreviewed: list[str] = Field(default_factory=list, description="annotation keys an agent wrote that no person "
                                  "has accepted yet: treat them as unconfirmed")
    warnings: list[Warning] = Field(default_factory=list)


# ------------------------------------------------------------------ joins, metrics, staleness, annotate
class HopOut(BaseModel):
    from_table: str
    to_table: str
    on: list[list[str]]
    cardinality: str
    canonical: bool
    relationship: str
    condition: str | None = None


class JoinOut(BaseModel):
    snapshot: SnapshotOut
    from_table: str
    to_table: str
    hops: list[HopOut]
    sql: str = Field(description="FROM ... JOIN ... clauses with aliases")
    cardinality: str
    canonical: bool
    warnings: list[Warning] = Field(default_factory=list)


class MetricsOut(_Paged):
    snapshot: SnapshotOut
    metrics: list[MetricOut]
    warnings: list[Warning] = Field(default_factory=list)


class MetricQueryOut(BaseModel):
    snapshot: SnapshotOut
    metric: str
    sql: str
    columns: list[SqlColumnOut]
    rows: list[Row]
    truncated: bool
    next_cursor: str | None = None
    warnings: list[Warning] = Field(default_factory=list)


class StalenessOut(_Paged):
    snapshot: SnapshotOut
    depth: Literal["metadata", "data"]
    findings: list[FindingOut]


class LineageInputOut(BaseModel):
    table: str
    vid: int


class LineageFindingOut(BaseModel):
    reason: str
    message: str


class LineageNodeOut(BaseModel):
    table: str
    depth: int
    built_vid: int | None = None
    job: str | None = None
    inputs: list[LineageInputOut] = Field(default_factory=list, description="read by its build, at vid")
    findings: list[LineageFindingOut] = Field(default_factory=list)


class LineageOut(_Paged):
    snapshot: SnapshotOut
    table: str
    nodes: list[LineageNodeOut]


class AnnotateOut(BaseModel):
    vid: int = Field(description="the commit that wrote the annotations")
    table: str
    column: str | None = None
    keys: list[str]
    author: str
    source: Literal["agent"] = "agent"
    proposed: list[str] = Field(default_factory=list, description="keys a person wrote before: stored as proposals "
                                "for their review, not replacing their annotation")
