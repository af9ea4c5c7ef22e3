"""semcat semantic layer."""

# --- joins, metrics, profiling (branch semjoin) -------------------------------------------------
from semantic.joins import CardinalityCheck, Hop, JoinPath, Relationship, join_path, relate, relationships
from semantic.metrics import Metric, define_metric, metric_sql, metrics
from semantic.profile import Inferred, profile

__all__ = [
    # --- joins, metrics, profiling (branch semjoin)
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
