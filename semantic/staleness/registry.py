"""The table of checks: every check the detector runs is one entry (`Check`), so a new class of
change is a module and entries here, not a branch in a dispatcher.

An entry names its reason codes, its depth (`metadata`: the catalog only; `data`: statements at
the snapshot; `clock`: judged at a time `now`), its class of change (`CLASSES`), the evidence it
reads and the fixes it may offer (a fix is offered only when that evidence holds; otherwise the
finding says what to look at). Annotation checks say which annotations they apply to; a
`fallback` check runs only when the checks before it found nothing for that annotation (a
dropped column is not also a unit drift). Table checks (`applies` None) run once per table.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from catalog_core.errors import CatalogError
from semantic._bounded import LimitExceededError
from semantic.history import Context
from semantic.models import Annotation, ColumnRef, Finding
from semantic.staleness.claim_rules import PROSE, own_column_claim, unit_claim
from semantic.staleness.core import Duck, Table, cause_parts, declared_keys, finding, make_fix
from semantic.staleness.decisions import split_by_annotation
from semantic.staleness.definitions import (
    latest_dated_ahead,
    metric_findings,
    verified_data,
    verified_meta,
    verified_scale_data,
)
from semantic.staleness.definitions_values import (
    enum_respelled,
    filter_values,
    grouped_codes,
    grouped_codes_data,
    grouped_meta,
    grouped_values,
    label_prose,
    prose_complete_set,
    prose_values,
)
from semantic.staleness.documented_ranges import per_key_exceeded, query_range, range_exceeded, range_now
from semantic.staleness.fix_rules import own_column_fix, relationship_drop_fix, unit_fix
from semantic.staleness.grain import (
    description_grain,
    description_grain_data,
    description_rows_data,
    grain_data,
    grain_findings,
    metric_over_versions,
    twin_loads,
)
from semantic.staleness.grain_totals import totals_check
from semantic.staleness.joined_through import joined_through, joined_through_data
from semantic.staleness.keys_joins import (
    join_key_data,
    keys_renumbered,
    relationship_data,
    relationship_findings,
    target_rows_removed,
)
from semantic.staleness.loads_freshness import cadence_prose, dead_check, log_statuses, sla_check, snapshot_cadence
from semantic.staleness.replacement_deprecation import (
    deprecated_findings,
    deprecated_measured,
    prose_pointing,
    replaced_beside,
    use_instead_pointing,
)
from semantic.staleness.row_relations import relation_broken
from semantic.staleness.schema import column_findings, column_prose, prose_elsewhere, table_level
from semantic.staleness.values_signs import signs_by_value
from semantic.staleness.values_units import (
    ZONE_FIELDS,
    enum_meta,
    enum_rows_removed,
    labels_data,
    restatements,
    scale_appended,
    scale_beyond,
    scale_new_loads,
    scale_restated,
    scale_rewritten,
    scale_shift,
    sign_flipped,
    unit_drift,
    values_data,
    zone_meta,
    zone_rewritten,
)
from semantic.staleness.values_zones import zone_loaded, zone_offsets

CLASSES = ("schema", "values_units", "keys_joins", "grain", "loads_freshness", "replacement_deprecation",
           "definitions", "documented_ranges")
Depth = Literal["metadata", "data", "clock"]


@dataclass
class Env:
    """What a check reads: the snapshot's context, the table, its annotations, the tables met so
    far; at data depth the bounded statement runner, the metadata findings already there
    (`already`) and the (annotation, reason) pairs the data checked (`checked`, filled by checks)."""

    ctx: Context
    t: Table
    anns: list[Annotation]
    tables: dict[str, Table | None]
    duck: Duck | None = None
    already: set[tuple[str | None, str]] = field(default_factory=set)
    checked: set[tuple[str | None, str]] = field(default_factory=set)

    @property
    def last(self) -> int:
        """The vid of the table's last data commit (its object's vid when it never loaded)."""
        return self.t.tl.data_commits[-1][0] if self.t.tl.data_commits else self.t.obj.vid

    @cached_property
    def grain_keys(self) -> set[str]:
        """The table's declared grain keys, lower case."""
        return {k.lower() for k in declared_keys(self.anns)}

    @cached_property
    def units(self) -> set[int | None]:
        """Column ids annotated with a unit or as measures (the columns whose scale matters)."""
        return {a.column_id for a in self.anns if a.kind == "column" and
                (a.field == "unit" or (a.field == "role" and a.value == "measure"))}


Applies = Callable[[Annotation, Env], bool]
FixRule = Callable[[Table, Annotation, Finding], Finding]
ClaimRule = Callable[[Table, Annotation, Finding], bool]


@dataclass(frozen=True)
class Check:
    name: str
    cls: str                                  # one of CLASSES
    depth: Depth
    reasons: tuple[str, ...]
    evidence: tuple[str, ...]                 # what it reads
    fixes: tuple[str, ...]                    # Fix actions it may offer
    run: Callable[[Any, Any], list[Finding]]  # (env, annotation or None for a table check)
    applies: Applies | None = None            # None: a table check, run once per table
    fallback: bool = False                    # only when the checks before found nothing for the annotation
    apart_on: tuple[str, ...] = ()            # a fallback that runs on these kinds of annotation after earlier
    #                                           findings too, kept only for another column and another cause
    #                                           (`_apart`: a metric's filter beside a change in its expression)
    replaces_at_data: bool = False            # a metadata check whose findings the data depth recomputes
    catalog_wide: bool = False                # reads every table's loads and the catalog's head (a table
    #                                           named whose successor is another: `_successor_of`): never
    #                                           carried over by the incremental check (always recomputed)
    fix_rule: FixRule | None = None           # keeps a finding's fix only where its evidence holds for the
    #                                           annotation (semantic.staleness.fix_rules), else `investigate`
    claim_rule: ClaimRule | None = None       # keeps a finding only where the change contradicts what the
    #                                           annotation says (semantic.staleness.claim_rules)


def _field(kind: str, *fields: str) -> Applies:
    return lambda a, _e: a.kind == kind and (not fields or a.field in fields)


def _scaled_claim(a: Annotation, _e: Env) -> bool:
    """Claims a column's scale makes false: its unit, description and sample values, a metric on it."""
    return a.kind == "metric" or (a.kind == "column" and a.field in ("unit", "description", "sample_values"))


def _zone_claim(a: Annotation, _e: Env) -> bool:
    """Claims a time-zone restatement makes false: a column's description, unit, sample values; the
    table's description and the reason its not_for_reporting gives (for the timestamp columns no such
    claim describes; the round-16 Acme tester's POS table, "raw input: store-local timestamps")."""
    return (a.kind == "column" and a.field in ZONE_FIELDS) or (a.kind == "table"
                                                                and a.field in ("description", "not_for_reporting"))


def _compares(a: Annotation, _e: Env) -> bool:
    """A metric with a filter, or a verified query: definitions that compare columns with literals."""
    return (a.kind == "metric" and bool((a.value or {}).get("filter"))) or a.kind == "verified_query"


def _own_refs(a: Annotation) -> list[ColumnRef]:
    return [r for r in a.provenance.basis.columns if r.id == a.column_id][:1]


def _split_all(found: list[Finding]) -> list[Finding]:
    return [f for r in found for f in split_by_annotation(r)]


CHECKS: list[Check] = [
    # ---- metadata, per annotation (in this order for each annotation)
    Check("grain_keys", "grain", "metadata", ("grain_violated", "schema_changed", "column_dropped", "column_renamed"),
          ("schema_history", "table_stats", "column_stats"), ("filter", "set_keys", "rename"),
          lambda e, a: grain_findings(e.t, a), _field("table", "grain")),
    Check("table_schema", "schema", "metadata", ("schema_changed", "unreviewed_while_changing"),
          ("schema_history", "table_stats", "load_log"), ("rename",),
          lambda e, a: table_level(e.t, a, e.anns), _field("table", "description", "instructions", "not_for_reporting")),
    Check("deprecation", "replacement_deprecation", "metadata", ("deprecated_but_written", "replaced_by_missing"),
          ("load_log", "catalog_tables"), ("investigate", "successor"),
          lambda e, a: deprecated_findings(e.t, a), _field("table", "deprecated"), catalog_wide=True),
    # a metric (a query asked of the table alone) written before its table was deprecated for a successor
    Check("deprecated_measured", "replacement_deprecation", "metadata", ("not_loaded_since",), ("annotation_text",),
          ("investigate", "reverify", "repoint"), lambda e, a: deprecated_measured(e.t, a, e.anns),
          lambda a, _e: a.kind in ("metric", "verified_query")),
    # prose sending readers to a table no longer kept (as the deprecation's chain rule above)
    Check("prose_pointing", "replacement_deprecation", "metadata", ("replaced_by_missing",),
          ("annotation_text", "catalog_tables", "load_log"), ("repoint", "investigate"),
          lambda e, a: prose_pointing(e.t, a), _field("table", "description", "instructions"), catalog_wide=True),
    # a table not for reporting sending its readers to one no longer kept (`use_instead`)
    Check("use_instead_pointing", "replacement_deprecation", "metadata", ("replaced_by_missing",),
          ("annotation_text", "catalog_tables", "load_log"), ("successor", "investigate"),
          lambda e, a: use_instead_pointing(e.t, a), _field("table", "not_for_reporting"), catalog_wide=True),
    Check("column_fate", "schema", "metadata",
          ("column_dropped", "column_renamed", "column_type_changed", "unit_drift"),
          ("schema_history", "column_stats"), ("rename", "remove", "investigate"),
          lambda e, a: column_findings(e.t, a, _own_refs(a)), _field("column"),
          claim_rule=own_column_claim, fix_rule=own_column_fix),
    Check("unit_drift", "values_units", "metadata", ("unit_drift",), ("column_stats", "partition_stats"),
          ("update_unit", "investigate"), lambda e, a: unit_drift(e.t, a, _own_refs(a)),
          lambda a, e: a.kind == "column" and a.column_id in e.units and a.field in ("unit", "description"),
          fallback=True, fix_rule=unit_fix),
    Check("scale_shift", "values_units", "metadata", ("unit_drift",), ("column_stats", "partition_stats"),
          ("update_unit", "investigate"), lambda e, a: scale_shift(e.t, a, e.grain_keys),
          lambda a, e: a.kind == "column" and a.column_id not in e.units and
          a.field in ("description", "sample_values"), fallback=True, fix_rule=unit_fix),
    # a column's values all of the other sign now (an offset from GMT written as one to GMT)
    Check("sign_flip", "values_units", "metadata", ("unit_drift",), ("column_stats", "file_stats"), ("investigate",),
          lambda e, a: sign_flipped(e.t, a, _own_refs(a), e.grain_keys),
          _field("column", "unit", "description", "sample_values"), fallback=True),
    Check("enum_respelled", "values_units", "metadata", ("values_restated",), ("column_stats", "file_stats"),
          ("value_map",), lambda e, a: enum_respelled(e.ctx, e.t, a, e.anns),
          _field("column", "enum", "sample_values", "labels"), fallback=True),
    Check("enum_range", "values_units", "metadata", ("enum_violated", "sample_values_missing"), ("column_stats",),
          ("add_enum_values",), lambda e, a: enum_meta(e.t, a), _field("column", "enum", "sample_values"),
          fallback=True),
    Check("enum_rows_removed", "values_units", "metadata", ("enum_violated",), ("table_stats", "column_stats"), (),
          lambda e, a: enum_rows_removed(e.t, a), _field("column", "enum", "labels"), fallback=True),
    Check("description_grain", "grain", "metadata", ("grain_violated", "schema_changed"), ("schema_history",), (),
          lambda e, a: description_grain(e.t, a, e.anns), _field("column", "description"), fallback=True),
    Check("twin_loads", "grain", "metadata", ("grain_violated",), ("file_stats", "load_log"), (),
          lambda e, a: twin_loads(e.t, a, e.anns), lambda a, _e: a.key in ("table.grain", "table.description"),
          fallback=True),
    Check("relationship", "keys_joins", "metadata", ("join_key_missing", "cardinality_violated"),
          ("schema_history", "column_stats", "catalog_tables"), ("join_on", "relate_to", "filter", "rename", "remove"),
          lambda e, a: relationship_findings(e.ctx, e.t, a, e.tables), _field("relationship"),
          fix_rule=relationship_drop_fix),
    Check("target_rows_removed", "keys_joins", "metadata", ("join_match_low",), ("table_stats", "column_stats"), (),
          lambda e, a: target_rows_removed(e.ctx, e.t, a, e.tables), _field("relationship"), fallback=True),
    Check("metric", "definitions", "metadata", ("column_dropped", "column_renamed", "column_type_changed", "unit_drift"),
          ("schema_history", "column_stats"), ("rename", "investigate"), lambda e, a: metric_findings(e.t, a),
          _field("metric"), fix_rule=unit_fix),
    Check("verified_query", "definitions", "metadata", ("verified_query_fails", "schema_changed", "verified_query_changed"),
          ("schema_history", "catalog_tables", "load_log", "file_stats"), ("reverify", "rename", "value_map"),
          lambda e, a: verified_meta(e.ctx, e.t, a), _field("verified_query")),
    Check("filter_values", "definitions", "metadata", ("values_restated", "verified_query_changed"),
          ("column_stats", "file_stats", "load_log"), ("value_map", "investigate", "reverify"),
          lambda e, a: filter_values(e.ctx, e.t, a, e.anns, e.tables), _compares, fallback=True, apart_on=("metric",)),
    Check("grouped_values", "definitions", "metadata", ("verified_query_changed",), ("column_stats", "file_stats", "load_log"),
          ("reverify",), lambda e, a: grouped_meta(e.ctx, e.t, a, e.tables), _field("verified_query"), fallback=True),
    Check("grouped_codes", "values_units", "metadata", ("verified_query_changed",), ("column_stats", "annotation_text", "sql"),
          ("reverify",), lambda e, a: grouped_codes(e.ctx, e.t, a, e.tables), _field("verified_query"), fallback=True),
    Check("scale_restated", "values_units", "metadata", ("unit_drift",), ("column_stats", "schema_history"),
          ("update_unit", "investigate"), lambda e, a: scale_restated(e.t, a, e.grain_keys), _scaled_claim,
          fallback=True, fix_rule=unit_fix),
    Check("scale_new_loads", "values_units", "metadata", ("unit_drift",), ("file_stats",), ("investigate",),
          lambda e, a: scale_new_loads(e.t, a, e.grain_keys), _scaled_claim, fallback=True, fix_rule=unit_fix),
    Check("scale_beyond", "values_units", "metadata", ("unit_drift",), ("file_stats",), ("investigate",),
          lambda e, a: scale_beyond(e.t, a, e.grain_keys), _scaled_claim, fallback=True, fix_rule=unit_fix),
    Check("zone_restated", "values_units", "metadata", ("unit_drift",), ("table_stats", "load_log"),
          ("investigate",), lambda e, a: zone_meta(e.t, a, e.anns), _zone_claim, fallback=True),
    Check("documented_range", "documented_ranges", "metadata", ("range_exceeded",), ("annotation_text", "column_stats"),
          (), lambda e, a: range_exceeded(e.t, a),
          lambda a, _e: a.field == "description" and a.kind in ("table", "column")),
    Check("prose_values", "definitions", "metadata", ("values_restated",), ("annotation_text", "column_stats", "file_stats"),
          ("value_map", "investigate"), lambda e, a: prose_values(e.ctx, e.t, a, e.anns, tables=e.tables),
          lambda a, _e: a.field == "description" and a.kind in ("table", "column"), fallback=True),
    Check("label_prose", "values_units", "metadata", ("values_restated",), ("annotation_text", "column_stats", "file_stats"),
          (), lambda e, a: label_prose(e.ctx, e.t, a, e.anns),
          lambda a, _e: a.field == "description" and a.kind in ("table", "column"), fallback=True),
    Check("prose_complete_set", "values_units", "metadata", ("enum_violated",), ("annotation_text", "column_stats"),
          ("investigate",), lambda e, a: prose_complete_set(e.ctx, e.t, a, e.anns, tables=e.tables),
          lambda a, _e: a.field == "description" and a.kind in ("table", "column"), fallback=True),
    Check("latest_dated_ahead", "definitions", "metadata", ("verified_query_changed",), ("column_stats", "sql"),
          (), lambda e, a: latest_dated_ahead(e.ctx, e.t, a, e.tables), _field("verified_query"), fallback=True),
    Check("query_range", "documented_ranges", "metadata", ("range_exceeded",), ("annotation_text", "column_stats", "sql"),
          ("reverify",), lambda e, a: query_range(e.ctx, e.t, a, e.tables), _field("verified_query"), fallback=True),
    # what rests on a join (always run: its finding suppresses none of the checks above)
    Check("joined_through", "keys_joins", "metadata", ("join_match_low",), ("column_stats", "file_stats", "sql"),
          ("reverify",), lambda e, a: joined_through(e.ctx, e.t, a, e.anns, e.tables),
          lambda a, _e: a.kind in ("metric", "verified_query")),
    Check("cadence_prose", "loads_freshness", "metadata", ("cadence_changed",), ("load_log", "annotation_text"),
          (), lambda e, a: cadence_prose(e.t, a), _field("table", "description", "instructions")),
    # a column's prose naming another column of its table (always run, last: it suppresses no check above)
    Check("column_prose", "schema", "metadata", ("column_renamed", "column_dropped"), ("schema_history", "annotation_text"),
          ("rename", "investigate"), lambda e, a: column_prose(e.t, a),
          lambda a, _e: a.kind == "column" and a.field in PROSE),
    # prose naming a column of another table, qualified by that table's name (always run, last)
    Check("prose_elsewhere", "schema", "metadata", ("column_renamed", "column_dropped"),
          ("schema_history", "annotation_text", "catalog_tables"), ("investigate",),
          lambda e, a: prose_elsewhere(e.ctx, e.t, a, e.tables), lambda a, _e: a.field in PROSE),
    # ---- metadata, per table
    Check("restatement", "values_units", "metadata", ("values_restated",), ("load_log", "file_stats"),
          ("value_map", "investigate"), lambda e, _a: _split_all(restatements(e.t, e.anns, None)),
          replaces_at_data=True),
    Check("replaced_beside", "replacement_deprecation", "metadata", ("not_loaded_since",),
          ("load_log", "catalog_tables", "column_stats"), ("successor", "repoint", "reverify"),
          lambda e, _a: replaced_beside(e.t, e.anns, e.tables), catalog_wide=True),
    # ---- data, per annotation
    Check("metric_versions", "grain", "data", ("grain_violated",), ("data", "schema_history"), ("investigate",),
          lambda e, a: metric_over_versions(e.ctx, e.t, a, e.anns, e.duck, e.last), _field("metric")),
    # rows of a new grain-key value holding the other rows' sums (a company total beside the regions)
    Check("total_rows", "grain", "data", ("grain_violated", "verified_query_changed"), ("data", "annotation_text", "sql"),
          ("investigate",), lambda e, a: totals_check(e.ctx, e.t, a, e.anns, e.duck, e.last),
          lambda a, _e: a.kind in ("metric", "verified_query") or a.key == "table.description"
          or (a.kind == "column" and a.field == "description")),
    Check("grain_unique", "grain", "data", ("grain_violated",), ("data",), ("set_keys", "filter"),
          lambda e, a: grain_data(e.ctx, e.t, a, e.duck, e.last, e.checked), _field("table", "grain")),
    Check("description_rows", "grain", "data", ("grain_violated",), ("data", "annotation_text"), (),
          lambda e, a: description_rows_data(e.ctx, e.t, a, e.anns, e.duck, e.last),
          lambda a, _e: a.field == "description" and a.kind in ("table", "column")),
    Check("description_grain_now", "grain", "data", ("schema_changed",), ("data", "schema_history"), (),
          lambda e, a: description_grain_data(e.t, a, e.anns, e.duck, e.checked),
          lambda a, e: _field("column", "description")(a, e) and (a.key, "schema_changed") in e.already),
    Check("enum_respelled_now", "values_units", "data", ("values_restated",), ("data",), ("value_map",),
          lambda e, a: enum_respelled(e.ctx, e.t, a, e.anns, e.duck, e.checked), _field("column", "enum", "sample_values")),
    Check("values_present", "values_units", "data", ("enum_violated", "sample_values_missing"), ("data",),
          ("add_enum_values", "value_map"), lambda e, a: values_data(e.ctx, e.t, a, e.duck, e.last, e.checked),
          lambda a, e: _field("column", "enum", "sample_values")(a, e) and (a.key, "enum_violated") not in e.checked),
    Check("labels_present", "values_units", "data", ("enum_violated",), ("data",), ("investigate",),
          lambda e, a: labels_data(e.ctx, e.t, a, e.duck, e.last, e.checked), _field("column", "labels")),
    Check("scale_rewrite", "values_units", "data", ("unit_drift",), ("data", "load_log", "table_stats"),
          ("update_unit", "investigate"), lambda e, a: scale_rewritten(e.t, a, e.grain_keys, e.already),
          _scaled_claim),
    Check("scale_append", "values_units", "data", ("unit_drift",), ("data", "file_stats", "table_stats"),
          ("investigate",), lambda e, a: scale_appended(e.t, a, e.grain_keys, e.already), _scaled_claim,
          fix_rule=unit_fix),
    Check("zone_rewrite", "values_units", "data", ("unit_drift",), ("data", "load_log", "table_stats"),
          ("investigate",), lambda e, a: zone_rewritten(e.t, a, e.anns, e.already), _zone_claim),
    Check("relation_now", "definitions", "data", ("unit_drift",), ("data", "table_stats"), ("investigate",),
          lambda e, a: relation_broken(e.t, a, e.anns, e.duck),
          lambda a, _e: (a.kind == "column" and a.field == "description") or a.kind in ("metric", "verified_query")
          or (a.kind == "table" and a.field == "description")),
    # "negative for redeem, expire": rows of those kinds written with the other sign since
    Check("sign_by_value", "values_units", "data", ("unit_drift",), ("data", "annotation_text"), ("investigate",),
          lambda e, a: signs_by_value(e.t, a, e.anns, e.duck), _field("column", "description")),
    Check("zone_loads", "values_units", "data", ("unit_drift",), ("data", "load_log"),
          ("investigate",), lambda e, a: zone_loaded(e.t, a, e.anns, e.already), _zone_claim),
    # a time moved against its row's other times, read where nothing else was found for the claim
    Check("zone_offsets", "values_units", "data", ("unit_drift",), ("data", "load_log", "file_stats"),
          ("investigate",), lambda e, a: zone_offsets(e.t, a, e.anns), _zone_claim, fallback=True),
    Check("snapshot_cadence", "loads_freshness", "data", ("cadence_changed",), ("data", "annotation_text"), (),
          lambda e, a: snapshot_cadence(e.t, a, e.anns, e.duck), _field("table", "description"), fallback=True),
    Check("join_match", "keys_joins", "data", ("join_match_low", "cardinality_violated"), ("data", "file_stats"),
          ("join_on", "filter"),
          lambda e, a: relationship_data(e.ctx, e.t, a, e.tables, e.duck, e.already, e.last, e.checked),
          _field("relationship")),
    Check("join_key_data", "keys_joins", "data", ("join_key_missing",), ("data", "schema_history", "column_stats"),
          ("join_on", "rename", "relate_to", "remove"),
          lambda e, a: join_key_data(e.ctx, e.t, a, e.tables, e.duck, e.checked),
          lambda a, e: a.kind == "relationship" and (a.key, "join_key_missing") in e.already,
          fix_rule=relationship_drop_fix),
    Check("keys_renumbered", "keys_joins", "data", ("values_restated",), ("data", "load_log"), (),
          lambda e, a: keys_renumbered(e.ctx, e.t, a, e.tables), _field("relationship")),
    Check("joined_through_now", "keys_joins", "data", ("join_match_low",), ("data",), (),
          lambda e, a: joined_through_data(e.ctx, e.t, a, e.anns, e.tables, e.duck, e.already, e.checked),
          lambda a, e: a.kind == "metric" or (a.kind == "verified_query" and (a.key, "join_match_low") in e.already)),
    Check("verified_answer", "definitions", "data", ("verified_query_fails", "verified_query_changed"),
          ("data", "schema_history", "load_log"), ("reverify",), lambda e, a: verified_data(e.ctx, e.t, a, e.checked, e.already),
          _field("verified_query")),
    Check("filter_values_now", "definitions", "data", ("values_restated", "verified_query_changed"), ("data", "load_log"),
          ("value_map", "investigate", "reverify"),
          lambda e, a: filter_values(e.ctx, e.t, a, e.anns, e.tables, e.duck, e.checked, e.already), _compares,
          fallback=True, apart_on=("metric",)),
    Check("grouped_values_now", "definitions", "data", ("verified_query_changed",), ("data", "load_log"), ("reverify",),
          lambda e, a: grouped_values(e.ctx, e.t, a, e.tables, e.duck, e.checked, e.already),
          _field("verified_query"), fallback=True),
    Check("grouped_codes_now", "values_units", "data", ("verified_query_changed",), ("data", "annotation_text", "sql"),
          ("reverify",), lambda e, a: grouped_codes_data(e.ctx, e.t, a, e.tables, e.duck, e.checked, e.already),
          _field("verified_query"), fallback=True),
    Check("verified_scale_now", "values_units", "data", ("verified_query_changed",), ("data", "sql"), ("reverify",),
          lambda e, a: verified_scale_data(e.ctx, e.t, a, e.tables, e.checked, e.already), _field("verified_query"),
          fallback=True),
    Check("prose_values_now", "definitions", "data", ("values_restated",), ("data", "annotation_text"),
          ("value_map", "investigate"), lambda e, a: prose_values(e.ctx, e.t, a, e.anns, e.duck, e.checked, e.tables),
          lambda a, _e: a.field == "description" and a.kind in ("table", "column"), fallback=True),
    Check("label_prose_now", "values_units", "data", ("values_restated",), ("data", "annotation_text"),
          ("investigate",), lambda e, a: label_prose(e.ctx, e.t, a, e.anns, e.duck, e.checked),
          lambda a, _e: a.field == "description" and a.kind in ("table", "column"), fallback=True),
    Check("prose_complete_set_now", "values_units", "data", ("enum_violated",), ("data", "annotation_text"),
          ("investigate",), lambda e, a: prose_complete_set(e.ctx, e.t, a, e.anns, e.duck, e.already, e.tables),
          lambda a, _e: a.field == "description" and a.kind in ("table", "column"), fallback=True),
    Check("documented_range_now", "documented_ranges", "data", ("range_exceeded",),
          ("data", "annotation_text", "column_stats"), ("update_range",),
          lambda e, a: range_now(e.ctx, e.t, a, e.duck, e.checked),
          lambda a, _e: a.field == "description" and a.kind in ("table", "column")),
    # a load log's status none of the declared lists names (a job writing 'succeeded' where it wrote 'success')
    Check("log_statuses", "loads_freshness", "data", ("enum_violated",), ("data", "load_log"), ("value_map", "investigate"),
          lambda e, a: log_statuses(e.ctx, e.t, a, e.duck), _field("table", "load_log")),
    Check("per_key_now", "documented_ranges", "data", ("range_exceeded",), ("data", "annotation_text"), (),
          lambda e, a: per_key_exceeded(e.ctx, e.t, a, e.anns, e.duck),
          lambda a, _e: a.field == "description" and a.kind in ("table", "column")),
    Check("query_range_now", "documented_ranges", "data", ("range_exceeded",), ("data", "annotation_text", "column_stats"),
          ("reverify",), lambda e, a: query_range(e.ctx, e.t, a, e.tables, e.duck, e.checked), _field("verified_query"),
          fallback=True),
    # ---- data, per table
    Check("restatement_rows", "values_units", "data", ("values_restated",), ("data", "load_log", "file_stats"),
          ("value_map", "investigate"), lambda e, _a: _split_all(restatements(e.t, e.anns, e.duck))),
    # ---- clock (semantic.staleness.engine.time_findings, judged at `now`)
    Check("not_loaded", "loads_freshness", "clock", ("not_loaded_since",), ("load_log", "column_stats"),
          ("successor",), dead_check),
    Check("freshness_sla", "loads_freshness", "clock", ("freshness_sla_missed", "cadence_changed"), ("load_log",),
          ("update_freshness_sla",), sla_check, fallback=True),
]

# reasons not of one class: carried from another table or check (their own class is the origin's)
DERIVED = ("upstream_changed", "upstream_incomplete", "check_limit_exceeded")
REASON_CLASS: dict[str, str] = {}
for _c in CHECKS:
    for _r in _c.reasons:
        REASON_CLASS.setdefault(_r, _c.cls)
REASON_CLASS["upstream_incomplete"] = "loads_freshness"


def checks(depth: str, table: bool = False) -> list[Check]:
    """The entries of `depth`, annotation checks (or table checks when `table`), in table order."""
    return [c for c in CHECKS if c.depth == depth and (c.applies is None) == table]


def clock_checks() -> list[Check]:
    return checks("clock", table=True)


def run_annotation_checks(env: Env, depth: str, only: Collection[str] | None = None) -> list[Finding]:
    """Every annotation check of `depth` on each annotation of the table (of those whose key is in `only`,
    when given: each annotation's checks see only it and the environment), in annotation order. At
    data depth a check stopped at its time or memory limit is a `check_limit_exceeded` finding (the
    annotation's data could not be checked), and one that cannot run (e.g. a view that fails to
    read) is `schema_changed` (itself evidence); a verified query's error is raised."""
    out: list[Finding] = []
    entries = checks(depth)
    for a in env.anns:
        if only is not None and a.key not in only:
            continue
        found: list[Finding] = []
        for c in entries:
            if c.applies is None or not c.applies(a, env) or (c.fallback and found and a.kind not in c.apart_on):
                continue
            if depth != "data":
                found += _ran(c, env, a, found)
                continue
            try:
                found += _ran(c, env, a, found)
            except LimitExceededError as e:
                found.append(finding(a, env.t.name, "check_limit_exceeded", "suspect",
                                      f"the data check of {a.key} could not finish: {e.message[:300]}; the annotation "
                                      "was not checked against the data (simplify it, e.g. its condition)", [env.ctx.vid],
                                      values={"limit": e.details.get("limit"), "timeout_s": e.details.get("timeout_s"),
                                              "memory_limit": e.details.get("memory_limit")}))
            except CatalogError as e:
                if a.kind == "verified_query":
                    raise
                found.append(finding(a, env.t.name, "schema_changed", "suspect",
                                      f"the data check of {a.key} could not run: {str(e).splitlines()[0][:200]}",
                                      [env.ctx.vid]))
        out += found
    return out


def _ran(c: Check, env: Env, a: Annotation, before: list[Finding]) -> list[Finding]:
    """The entry's findings on `a` (`_fixed`); a fallback's only apart from `before` (`_apart`)."""
    got = _fixed(c, env, a, c.run(env, a))
    return _apart(before, got) if c.fallback else got


def _apart(before: list[Finding], found: list[Finding]) -> list[Finding]:
    """A fallback's findings on an annotation that has `before` (`Check.apart_on`): only those about another
    column, of another cause (a second change the first findings do not tell: a metric flagged for a tax in
    its expression whose filter's value was respelled too); with nothing before, all of them."""
    if not before:
        return found
    cols = {_column_of(f) for f in before}
    causes = {f.cause for f in before if f.cause}
    return [f for f in found if f.cause not in causes and _column_of(f) and _column_of(f) not in cols and "" not in cols]


def _column_of(f: Finding) -> str:
    """The column a finding is about, lower case: its evidence's `column`, else the one its fixes name, else
    its cause's detail (`unit:table@vid:column`); "" when none says."""
    got = f.evidence.values.get("column")
    if not got:
        got = next((x.params.get("column") or (x.params.get("columns") or [None])[0] for x in f.fixes
                    if x.params.get("column") or x.params.get("columns")), None)
    return str(got or cause_parts(f.cause)[2] or "").lower()


def _fixed(c: Check, env: Env, a: Annotation, found: list[Finding]) -> list[Finding]:
    """The entry's findings with its claim rule (a finding kept only where the change contradicts the
    annotation; `claim_rules.unit_claim` for every entry) and its fix rule (a fix kept only where its
    evidence holds) applied."""
    if c.claim_rule is not None:
        found = [f for f in found if c.claim_rule(env.t, a, f)]
    found = [f for f in found if unit_claim(env.t, a, f, env.anns)]  # every entry: a unit change and a description
    found = found if c.fix_rule is None else [c.fix_rule(env.t, a, f) for f in found]
    return [_reverified(f) for f in found] if a.kind == "verified_query" else found


def _reverified(f: Finding) -> Finding:
    """A verified query's repair is always the same: a person re-runs it and re-verifies it (`reverify`),
    whatever the entry would have said to look at (`investigate`: the round-7 TPC-DS tester's query over
    amounts that began to include tax)."""
    if not f.fixes or any(x.action != "investigate" for x in f.fixes):
        return f
    return f.model_copy(update={"fixes": [make_fix("reverify")], "suggestion": "re-run the query and re-verify it"})


def run_table_checks(env: Env, depth: str) -> list[Finding]:
    return [f for c in checks(depth, table=True) for f in c.run(env, None)]


def run_catalog_wide(env: Env) -> list[Finding]:
    """The checks that read the whole catalog (`catalog_wide`), at metadata depth: the table checks, and the
    annotation checks on each annotation they apply to."""
    out = [f for c in CHECKS if c.catalog_wide and c.applies is None for f in c.run(env, None)]
    for c in CHECKS:
        if c.catalog_wide and c.applies is not None:
            out += [f for a in env.anns if c.applies(a, env) for f in _ran(c, env, a, [])]
    return out


def catalog_wide_reasons() -> set[str]:
    """The reasons of the catalog-wide table checks (a carried finding of such a reason is recomputed)."""
    return {r for c in CHECKS if c.catalog_wide and c.applies is None for r in c.reasons}


def catalog_wide_claims(env: Env) -> set[tuple[str, str]]:
    """(annotation key, reason) the catalog-wide annotation checks may find on the table's annotations (a
    carried finding of such a pair is recomputed)."""
    return {(a.key, r) for c in CHECKS if c.catalog_wide and c.applies is not None
            for a in env.anns if c.applies(a, env) for r in c.reasons}


def replaced_at_data() -> set[str]:
    """Reasons of metadata table checks that the data depth recomputes (their metadata findings are dropped)."""
    return {r for c in CHECKS if c.replaces_at_data for r in c.reasons}
