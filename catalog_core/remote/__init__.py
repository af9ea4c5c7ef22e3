"""The HTTP client of `semcat serve` (`client`) and the wire format it shares with the server (`wire`)."""

from catalog_core.remote.client import QueryStream, RemoteCatalog, RemoteTransaction

__all__ = ["RemoteCatalog", "RemoteTransaction", "QueryStream"]
