"""semcat semantic layer: annotations with provenance, staleness computed from the snapshot history,
join paths, metrics and profiling (DESIGN.md, Semantic layer). Every function takes a
`catalog_core.api.CatalogAPI`, embedded or remote, and an optional snapshot.

    import semantic as sm
    sm.annotate(cat, "acme.core.fct_orders", {"description": "one row per order"}, author="alice")
    sm.relate(cat, "acme.core.fct_order_items", "acme.core.fct_orders", on=[("order_id", "order_id")])
    sm.describe(cat, "acme.core.fct_orders") -> TableCard
    sm.staleness(cat, depth="metadata") -> list[Finding]
    sm.join_path(cat, "acme.core.fct_order_items", "acme.core.dim_store") -> JoinPath
    sm.metric_sql(cat, "net_revenue", group_by=["dim_store.region"], grain="fiscal_quarter") -> str
    sm.review_items(cat) -> ReviewPage; sm.accept / sm.dismiss / sm.edit_and_accept(cat, item, author=...)

`Relationship` and `Metric` are the stored values (semantic.models); `sm.relationships` and
`sm.metrics` return `RelationshipView` / `MetricView`: the value plus name, table and provenance.
Errors are the classes of `semantic.errors` (each a `catalog_core.errors` subclass).
"""

from typing import TYPE_CHECKING, Any

from semantic import errors, models
from semantic.annotations import annotate, new_annotation, read_annotations, verify_query, write_annotations
from semantic.describe import describe
from semantic.joins import CardinalityCheck, Hop, JoinPath, join_path, relate, relationships
from semantic.metrics import define_metric, metric_sql, metrics
from semantic.models import Finding, Metric, MetricView, Relationship, RelationshipView, TableCard
from semantic.profile import Inferred, profile
from semantic.search import Hit, rank, search
from semantic.staleness import staleness

if TYPE_CHECKING:
    from semantic.interop import ImportResult, InterchangeError, export_osi, import_cortex, import_dbt, import_osi
    from semantic.review import (
        NoFixError,
        ReviewConflictError,
        ReviewItem,
        ReviewPage,
        ReviewRefusedError,
        ScanResult,
        accept,
        accept_all,
        decide_group,
        dismiss,
        edit_and_accept,
        review_item,
        review_items,
        scan,
        scan_cleared,
        scanned_findings,
        validate_write,
    )

__all__ = [
    "models",
    "errors",
    "annotate",
    "new_annotation",
    "verify_query",
    "write_annotations",
    "read_annotations",
    "describe",
    "staleness",
    "relate",
    "relationships",
    "join_path",
    "define_metric",
    "metrics",
    "metric_sql",
    "profile",
    "TableCard",
    "Finding",
    "Relationship",
    "RelationshipView",
    "Hop",
    "JoinPath",
    "CardinalityCheck",
    "Metric",
    "MetricView",
    "Inferred",
    "rank",
    "search",
    "Hit",
    "import_dbt",
    "import_cortex",
    "import_osi",
    "export_osi",
    "ImportResult",
    "InterchangeError",
    "review_items",
    "review_item",
    "accept",
    "dismiss",
    "edit_and_accept",
    "ReviewItem",
    "ReviewPage",
    "ReviewConflictError",
    "ReviewRefusedError",
    "decide_group",
    "accept_all",
    "validate_write",
    "scan",
    "scanned_findings",
    "scan_cleared",
    "ScanResult",
    "NoFixError",
]

# Imported when first used (issue 47, cold start: a stdio session's first call needs neither; interop pulls in
# yaml and the importers, review its own models): name -> submodule. None of these names is a submodule's.
_LAZY = {**dict.fromkeys(("ImportResult", "InterchangeError", "export_osi", "import_cortex", "import_dbt",
                          "import_osi"), "semantic.interop"),
         **dict.fromkeys(("NoFixError", "ReviewConflictError", "ReviewItem", "ReviewPage", "ReviewRefusedError",
                          "ScanResult", "accept", "accept_all", "decide_group", "dismiss", "edit_and_accept",
                          "review_item", "review_items", "scan", "scan_cleared", "scanned_findings",
                          "validate_write"),
                         "semantic.review")}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value
