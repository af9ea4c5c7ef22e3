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
"""

from semantic import models
from semantic.annotations import annotate, read_annotations, verify_query, write_annotations
from semantic.describe import describe
from semantic.joins import CardinalityCheck, Hop, JoinPath, Relationship, join_path, relate, relationships
from semantic.metrics import Metric, define_metric, metric_sql, metrics
from semantic.profile import Inferred, profile
from semantic.staleness import staleness

__all__ = [
    "models",
    "annotate",
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
    "Relationship",
    "Hop",
    "JoinPath",
    "CardinalityCheck",
    "Metric",
    "Inferred",
]
