"""semcat semantic layer: annotations with provenance, staleness computed from the snapshot history.

    import semantic as sm
    sm.annotate(cat, "acme.core.fct_orders", {"description": "one row per order"}, author="alice")
    sm.describe(cat, "acme.core.fct_orders") -> TableCard
    sm.staleness(cat, depth="metadata") -> list[Finding]
"""

from semantic import models
from semantic.annotations import annotate, read_annotations, verify_query, write_annotations
from semantic.describe import describe
from semantic.staleness import staleness

__all__ = [
    "models",
    "annotate",
    "verify_query",
    "write_annotations",
    "read_annotations",
    "describe",
    "staleness",
]
