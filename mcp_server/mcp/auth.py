"""Who is calling a tool: the token role ("read" or "write") and principal of an HTTP request, full
rights without HTTP (stdio, in memory: the user who started the server). Invariant: a principal
derived from a token is "token:" + 12 hex digits of its SHA-256, never the token itself."""

from __future__ import annotations

import hashlib
from typing import Any

from mcp.server.mcpserver import Context

__all__ = ["request_of", "role_of", "caller", "principal_digest"]


def request_of(ctx: Any) -> Any:
    """The transport's request of a tool `Context` or a handler's request context (None in memory or on stdio)."""
    if ctx is None:
        return None
    try:
        inner = ctx.request_context if isinstance(ctx, Context) else ctx
        return getattr(inner, "request", None)
    except (ValueError, AttributeError):
        return None


def role_of(request: Any) -> str:
    """The token role of an HTTP request ("read" or "write"); "write" without HTTP (stdio, in memory)."""
    scope = getattr(request, "scope", None)
    if not isinstance(scope, dict):
        return "write"
    return str((scope.get("state") or {}).get("role") or "write")


def principal_digest(token: str) -> str:
    """The principal of a bearer token: "token:" + the first 12 hex digits of its SHA-256."""
    return "token:" + hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()[:12]


def caller(ctx: Context | None, author: str) -> tuple[str, str]:
    """(role, principal) of the request: from the bearer token over HTTP, full rights and `author`
    otherwise (stdio: the user who started the server; a remote catalog behind it checks its own token)."""
    request = request_of(ctx)
    scope = getattr(request, "scope", None)
    if not isinstance(scope, dict):
        return "write", author
    state = scope.get("state") or {}
    role = role_of(request)
    principal = state.get("principal")
    if isinstance(principal, str) and principal:
        return role, principal if principal.startswith("token:") else "token:" + principal[:12]
    auth = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
    token = auth.partition(" ")[2].strip()
    return role, principal_digest(token) if token else author
