"""The write tool: annotate, which records what an agent learned about a table or column as an
annotation (source "agent", the caller's principal as author) through the semantic read model.
Over HTTP only a write token may call it (`auth.caller`); `register` publishes it."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from catalog_core import lake
from catalog_core.errors import CatalogError
from mcp_server.mcp import models as M
from mcp_server.mcp.args import WRITE
from mcp_server.mcp.auth import caller
from mcp_server.mcp.context import ToolContext
from mcp_server.mcp.errors import CodedToolError, catalog_error, guard
from mcp_server.mcp.results import ToolResult, ToolServer

__all__ = ["register", "write_annotation"]


def register(server: ToolServer, s: ToolContext) -> None:
    """Publish the write tool of `s` on `server`."""

    @server.tool(annotations=WRITE)
    def annotate(
        table: Annotated[str, Field(description="dotted table name (or catalog/namespace for instructions)")],
        fields: Annotated[dict[str, Any], Field(
            description="table: description, grain {text, keys}, owner, tags, synonyms, deprecated {reason, "
                        "replaced_by}, freshness_sla, certified, instructions; column: description, synonyms, unit, "
                        "sample_values, enum, role")],
        column: Annotated[str | None, Field(description="annotate this column instead of the table")] = None,
        confidence: Annotated[float, Field(ge=0.0, le=1.0, description="how sure you are, 0..1")] = 0.7,
        note: Annotated[str | None, Field(max_length=2000, description="why (evidence, query used)")] = None,
        ctx: Context | None = None,
    ) -> Annotated[ToolResult, M.AnnotateOut]:
        """Record what you learned about a table or column (source 'agent', your token as author)
        so later agents can use it. Needs a write token over HTTP."""
        role, principal = caller(ctx, s.options.author)
        if role != "write":
            raise CodedToolError(f"a {role!r} token cannot annotate; use a token with role 'write'",
                                 "PermissionDeniedError")
        return guard(lambda: write_annotation(s, table, column, fields, confidence, note, principal))


def write_annotation(s: ToolContext, table: str, column: str | None, fields: dict[str, Any], confidence: float,
             note: str | None, author: str) -> tuple[M.AnnotateOut, str]:
    if not isinstance(fields, dict) or not fields:
        raise CodedToolError('fields must be an object of annotation fields, e.g. {"description": "..."}', "InvalidValueError")
    vid = s.resolve(None)
    name = lake.name_of(s.table(table, vid, "annotate").path) if table.count(".") == 2 else table
    if table.count(".") != 2 and not s.may("annotate", lake.object_path(table), vid):
        raise CodedToolError(f"{table!r} is not a catalog or namespace you may annotate; search_tables lists tables",
                             "NotFoundError")
    try:
        new_vid = s.reads.annotate(s.cat, name, fields, column=column, author=author, confidence=confidence,
                                   note=note)
    except CatalogError as exc:
        raise catalog_error(exc, lambda: list(s.tables(vid))) from None
    if column is None:
        keys = [f"table.{f}" for f in fields]
    else:
        cols = lake.TableValue.from_raw(s.table(name, vid).value).columns
        cid = next((c.id for c in cols if c.name == column), column)
        keys = [f"column.{cid}.{f}" for f in fields]
    proposed = s.reads.proposed(s.cat, name, new_vid)
    out = M.AnnotateOut(vid=new_vid, table=name, column=column, keys=keys, author=author, proposed=proposed)
    text = f"annotated {name}{'.' + column if column else ''} ({', '.join(fields)}) at vid {new_vid}"
    if proposed:
        text += (f"; {', '.join(proposed)} stored as a proposal for review (a person wrote it before, or only a "
                 "person may set it: instructions, certification, and deprecation or reporting flags of a certified "
                 "table)")
    return out, text
