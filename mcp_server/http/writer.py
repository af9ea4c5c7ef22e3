"""Who is writing, as the server authenticated them (`semantic.guard.Writer`): the one place that
reads the identity the authentication layer leaves in the ASGI scope's `state`.

The seam (the OAuth / token layer fills it): `state["principal"]` (str) and `state["source"]`
("human", "agent" or "service") after authentication; without auth (a loopback server) the
principal is "local" and the source "human". Until every authentication path sets `source`, a
request that carries a principal and no source counts as an `agent` (the safe default: its writes
cannot pass for a person's), and one without a principal as the local person."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from semantic.guard import Writer

__all__ = ["writer_of", "LOCAL"]

LOCAL = "local"
_DIGEST = re.compile(r"[0-9a-f]{64}")


def writer_of(state: Mapping[str, Any] | None) -> Writer:
    """The writer of a request from its scope's `state` (see the module docstring)."""
    from semantic.guard import Writer

    state = state or {}
    principal = state.get("principal")
    authenticated = isinstance(principal, str) and principal not in ("", LOCAL)
    raw = state.get("source")
    source: Literal["human", "agent", "service"] = (
        raw if raw in ("human", "agent", "service") else "agent" if authenticated else "human")
    if not authenticated:
        return Writer(LOCAL, source, authenticated=False)
    assert isinstance(principal, str)
    if _DIGEST.fullmatch(principal):  # a static token's digest (the Guard's): as mcp.auth.caller names it
        principal = "token:" + principal[:12]
    return Writer(principal, source, authenticated=True)
