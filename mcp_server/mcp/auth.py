"""Who is calling a tool. Over HTTP the server's Guard authenticated the request and put its principal
in the ASGI scope's state (`role`, `principal`, `source`; see mcp_server.http.auth); without HTTP
(stdio, in memory) the caller is the user who started the server: full rights, the server's
`author`, source "human". Invariant: a principal is a name ("token:<12 hex>", a configured name,
"oauth:<sub>"), never the bearer token itself."""

from __future__ import annotations

import sys
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from mcp_server.http.auth import LOCAL, ROLES, SOURCES, Principal, principal_digest

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context

__all__ = ["request_of", "role_of", "caller", "principal_of", "principal_digest", "Principal", "CALLER",
           "current_caller", "is_admin"]


def request_of(ctx: Any) -> Any:
    """The transport's request of a tool `Context` or a handler's request context (None in memory or on stdio)."""
    if ctx is None:
        return None
    try:
        # the SDK's tool Context (no SDK imported yet: no Context exists, front.py: issue 47)
        sdk = sys.modules.get("mcp.server.mcpserver.context")
        inner = ctx.request_context if sdk is not None and isinstance(ctx, sdk.Context) else ctx
        return getattr(inner, "request", None)
    except (ValueError, AttributeError):
        return None


def _state(request: Any) -> dict[str, Any] | None:
    scope = getattr(request, "scope", None)
    if not isinstance(scope, dict):
        return None
    state = scope.get("state")
    return state if isinstance(state, dict) else {}


def role_of(request: Any) -> str:
    """The role of an HTTP request ("read" or "write"); "write" without HTTP (stdio, in memory)."""
    state = _state(request)
    role = (state or {}).get("role")
    return role if role in ROLES else "write"


def principal_of(ctx: Context | Any | None, author: str) -> Principal:
    """The caller's `Principal`. Over HTTP: the one the Guard authenticated; when the server runs
    without auth (principal "local") its name is `author` (the server's --author). Without HTTP:
    `author`, write, human (the user who started the server). An HTTP app mounted without the Guard
    (no principal in the state, only in tests) is treated like a server without auth."""
    request = request_of(ctx)
    state = _state(request)
    if state is None:
        return Principal(author, "write", "human", admin=True)
    name = state.get("principal")
    role = role_of(request)
    if not isinstance(name, str) or not name or name == LOCAL.name:
        return Principal(author, role, "human", admin=True)
    source = state.get("source")
    groups = state.get("groups")
    return Principal(name, role, source if isinstance(source, str) and source in SOURCES else "agent",
                     tuple(g for g in groups if isinstance(g, str)) if isinstance(groups, (list, tuple)) else (),
                     state.get("admin") is True)


# The principal of the tool call running in this context (set by SemcatServer.call_tool and the
# resource / prompt handlers); None outside a call: full rights (the in-process API, stdio's user).
CALLER: ContextVar[Principal | None] = ContextVar("semcat_caller", default=None)


def current_caller() -> Principal | None:
    """The principal of the running tool call, or None (no caller: full rights)."""
    return CALLER.get()


def is_admin() -> bool:
    """Whether the running call sees everything (no caller, the local operator, an admin token)."""
    p = CALLER.get()
    return p is None or p.admin


def caller(ctx: Context | None, author: str) -> tuple[str, str]:
    """(role, principal name) of the request (see `principal_of`)."""
    p = principal_of(ctx, author)
    return p.role, p.name
