"""Errors the bridge raises; all are `catalog_core` CatalogErrors (defined in catalog_core.errors,
so they keep their class across HTTP), re-exported here for the bridge's callers."""

from __future__ import annotations

from catalog_core.errors import BridgeError, CommitFailedError, CommitUnknownError, SchemaEvolutionError

__all__ = ["BridgeError", "SchemaEvolutionError", "CommitFailedError", "CommitUnknownError"]
