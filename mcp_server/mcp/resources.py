"""MCP resources, so that IDE clients can attach what an agent would otherwise fetch with tools:

    semcat://instructions                         how to use the catalog: the server's instructions and the
                                                  `instructions` annotations of its catalogs and namespaces
    semcat://table/{name}{?snapshot,cursor}       the table card of `name` (what describe_table returns,
                                                  detail "summary"), at `snapshot` (a pin_snapshot handle,
                                                  a vid, a snapshot name or an ISO time; default: latest)

resources/list lists the instructions and one card per table at the latest vid, RESOURCE_PAGE
entries per page with a `nextCursor` for the rest; resources/templates/list lists the card template.

Invariants: a card resource reads exactly the vid its `snapshot` resolves to (its JSON carries that
`snapshot`), and, like every tool answer, fits the server's token budget (columns beyond it are
paged: the card's `next_cursor` goes into the `cursor` parameter). A read that fails says what was
wrong and what to do (an unknown table: did-you-mean).
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp_types import ListResourcesResult, Resource

from catalog_core import lake
from mcp_server.mcp import discovery
from mcp_server.mcp.bounds import cut
from mcp_server.mcp.context import ToolContext
from mcp_server.mcp.errors import CodedToolError

__all__ = ["register", "list_page", "card_uri", "INSTRUCTIONS_URI", "TABLE_TEMPLATE", "RESOURCE_PAGE"]

INSTRUCTIONS_URI = "semcat://instructions"
TABLE_TEMPLATE = "semcat://table/{name}{?snapshot,cursor}"
RESOURCE_PAGE = 100
JSON = "application/json"


def card_uri(name: str) -> str:
    """The resource URI of the card of table `name` (latest vid)."""
    return f"semcat://table/{name}"


def _snapshot(value: str | None) -> int | str | None:
    """A snapshot query parameter: digits are a vid, anything else a handle, a name or an ISO time."""
    if value is None or value == "":
        return None
    return int(value) if value.isascii() and value.isdigit() else value


def read_card(s: ToolContext, name: str, snapshot: str | None = None, cursor: str | None = None) -> str:
    """The card of table `name` at `snapshot` as JSON (describe_table's structured content, summary)."""
    try:
        out, _summary = discovery.describe(s, name, "summary", None, _snapshot(snapshot), None, cursor or None)
    except CodedToolError as exc:
        if exc.code == "NoSuchTableError":
            raise ResourceNotFoundError(f"{exc}; semcat://table/{{name}} takes a dotted table name") from None
        raise ResourceError(str(exc)) from None
    except ToolError as exc:
        raise ResourceError(str(exc)) from None
    return json.dumps(out.model_dump(mode="json", exclude_none=True), ensure_ascii=False, separators=(",", ":"))


def read_instructions(s: ToolContext, server_text: str) -> str:
    """The server's instructions, then the catalogs' and namespaces' `instructions` annotations (latest vid)."""
    vid = s.resolve(None)
    targets: list[str] = []
    for name in s.tables(vid):
        parts = name.split(".")
        targets += [parts[0], ".".join(parts[:2])]
    notes = s.reads.instructions(s.cat, list(dict.fromkeys(targets)), vid)
    lines = [server_text, "", f"Catalog instructions at vid {vid} (semcat://table/{{name}} reads a table card):"]
    lines += [f"- {target}: {cut(text, 2000)}" for target, text in sorted(notes.items())[:50]] or ["- none"]
    return "\n".join(lines)


def register(server: MCPServer, s: ToolContext, instructions: str) -> None:
    """Publish the instructions resource and the table card template of `s` on `server`."""

    @server.resource(INSTRUCTIONS_URI, name="instructions", title="How to use this catalog", mime_type="text/plain",
                     description="The server's instructions and the catalog's own instructions annotations")
    def catalog_instructions() -> str:
        return read_instructions(s, instructions)

    @server.resource(TABLE_TEMPLATE, name="table", title="Table card", mime_type=JSON,
                     description="A table card (describe_table, summary) at `snapshot` (handle, vid, name or "
                                 "ISO time; default latest); `cursor` pages its columns")
    def table_card(name: str, snapshot: str | None = None, cursor: str | None = None) -> str:
        return read_card(s, name, snapshot, cursor)


def list_page(s: ToolContext, static: list[Resource], cursor: str | None) -> ListResourcesResult:
    """resources/list: the static resources, then one card per table at the latest vid, by name;
    RESOURCE_PAGE per page, `nextCursor` the offset of the next page."""
    try:
        offset = int(cursor) if cursor else 0
    except ValueError:
        offset = -1
    if offset < 0:
        raise ValueError(f"cursor {cursor!r} is not one resources/list returned; omit it for the first page")
    vid = s.resolve(None)
    entries: list[Resource] = list(static)
    for name, obj in sorted(s.tables(vid).items()):
        entries.append(Resource(uri=card_uri(name), name=name, title=f"Table card of {name}", mime_type=JSON,
                                description=_describe(obj.value)))
    page = entries[offset:offset + RESOURCE_PAGE]
    nxt = str(offset + RESOURCE_PAGE) if offset + RESOURCE_PAGE < len(entries) else None
    return ListResourcesResult(resources=page, next_cursor=nxt)


def _describe(value: dict[str, Any]) -> str:
    """One line about a table from its catalog metadata (rows, columns)."""
    table = lake.TableValue.from_raw(value)
    cols = table.columns
    rows = table.stats.row_count if table.stats is not None else None
    return f"{len(cols)} columns" + (f", {rows:,} rows" if isinstance(rows, int) else "")
