"""Iceberg names <-> semcat ids (DESIGN.md, Iceberg REST catalog).

semcat addresses objects by dotted names (`catalog.namespace.table`), so an id cannot hold a dot;
an Iceberg namespace or table name may (`new.db`, `ta.ble`). A dot in an Iceberg name is stored as
`%2E` in the semcat id, and shown back as a dot over Iceberg REST:

    to_id("ta.ble") == "ta%2Eble";  from_id("ta%2Eble") == "ta.ble"

so `acme.new%2Edb.ta%2Eble` is that table's semcat name (SQL, MCP, the CLI). An Iceberg name that
itself holds the text `%2E` would not round-trip and is refused (400).
"""

from __future__ import annotations

from catalog_core.errors import InvalidValueError

__all__ = ["DOT", "to_id", "from_id"]

DOT = "%2E"


def to_id(name: str) -> str:
    """The semcat id of an Iceberg namespace part or table name."""
    if not isinstance(name, str):
        raise InvalidValueError(f"an Iceberg name must be text, got {type(name).__name__}",
                                iceberg_type="BadRequestException")
    if DOT in name:
        raise InvalidValueError(f"name {name[:200]!r} holds the text {DOT!r}, which semcat uses to store a dot of an "
                                "Iceberg name; choose a name without it", iceberg_type="BadRequestException")
    return name.replace(".", DOT)


def from_id(obj_id: str) -> str:
    """The Iceberg name of a semcat id."""
    return obj_id.replace(DOT, ".")
