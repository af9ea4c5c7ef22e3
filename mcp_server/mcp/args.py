"""Typed tool arguments shared by the tool families: what the published input schemas say about a
snapshot, a cursor, a table name and each paged tool's `limit` (defaults and maxima in
`context.LIMITS`), and the read/write tool annotations."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from mcp_server.mcp.context import LIMITS

__all__ = ["Snapshot", "Cursor", "TableName", "READ", "WRITE", "limit_of", "SearchLimit", "ColumnValuesLimit",
           "MetricsLimit", "MetricRowsLimit", "QueryLimit", "SnapshotsLimit", "DiffLimit", "StalenessLimit", "SqlLimit", "LineageLimit"]

Snapshot = Annotated[int | str | None, Field(
    description="what to read: a pin_snapshot handle ('pin:42'), a vid, a snapshot name or an ISO time; "
                "default: the latest commit")]
Cursor = Annotated[str | None, Field(description="next_cursor of the previous page; omit for the first page")]
TableName = Annotated[str, Field(description="dotted table name catalog.namespace.table")]

# the SDK's ToolAnnotations fields (SemcatServer.tool builds the model: results.sdk_annotations), kept plain so the
# stdio front's tools import no `mcp_types` (issue 47)
READ = {"read_only_hint": True, "destructive_hint": False, "idempotent_hint": True, "open_world_hint": False}
WRITE = {"read_only_hint": False, "destructive_hint": False, "idempotent_hint": False, "open_world_hint": False}


def limit_of(tool: str) -> Any:
    """The `limit` field of a paged tool: items per page, its default and maximum in the description."""
    default, most = LIMITS[tool]
    return Field(ge=1, le=most, description=f"items per page (default {default}, at most {most})")


SearchLimit = Annotated[int, limit_of("search_tables")]
ColumnValuesLimit = Annotated[int, limit_of("get_column_values")]
MetricsLimit = Annotated[int, limit_of("list_metrics")]
MetricRowsLimit = Annotated[int, limit_of("query_metric")]
QueryLimit = Annotated[int, limit_of("query_catalog")]
SnapshotsLimit = Annotated[int, limit_of("list_snapshots")]
DiffLimit = Annotated[int, limit_of("diff_snapshots")]
StalenessLimit = Annotated[int, limit_of("check_staleness")]
LineageLimit = Annotated[int, limit_of("get_lineage")]
SqlLimit = Annotated[int, limit_of("run_sql")]
