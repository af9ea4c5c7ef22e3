"""Bearer tokens with roles `read` and `write`, and the rule that an unauthenticated server
binds loopback only.

Tokens come from `SEMCAT_TOKENS="<token>:<role>,<token>:<role>"` and/or a file of
`<token>:<role>` lines (`--tokens FILE`; blank lines and `#` comments are skipped).
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
import socket
from collections.abc import Mapping

from catalog_core.errors import AuthError, PermissionDeniedError

__all__ = ["ROLES", "Tokens", "parse_tokens", "load_tokens", "is_loopback", "check_bind", "UnsafeBindError"]

ROLES = ("read", "write")
_RANK = {"read": 1, "write": 2}


class UnsafeBindError(ValueError):
    """Refusing to serve an unauthenticated catalog on a non-loopback address."""


def _digest(token: str) -> bytes:
    # Look tokens up by hash so comparison time does not depend on how many leading chars match.
    return hashlib.sha256(token.encode()).digest()


class Tokens:
    """The configured tokens. Empty means auth is off (and the server binds loopback only)."""

    def __init__(self, roles: Mapping[str, str] | None = None) -> None:
        self._roles = {_digest(t): r for t, r in (roles or {}).items()}

    def __bool__(self) -> bool:
        return bool(self._roles)

    def __len__(self) -> int:
        return len(self._roles)

    def role_of(self, authorization: str | None) -> str:
        """The role of an `Authorization` header value; raises AuthError (401) if missing/unknown."""
        if not self._roles:
            return "write"
        if not authorization:
            raise AuthError("this server requires a bearer token: send 'Authorization: Bearer <token>' "
                            "(cc.connect(url, token=...))")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError("the Authorization header must be 'Bearer <token>'")
        role = self._roles.get(_digest(token.strip()))
        if role is None:
            raise AuthError("unknown bearer token; ask the server operator for a valid token")
        return role

    @staticmethod
    def require(role: str, needed: str, action: str) -> None:
        if _RANK[role] < _RANK[needed]:
            raise PermissionDeniedError(f"a {role!r} token cannot {action}; use a token with role {needed!r}",
                                        role=role, needed=needed)


_TOKEN = re.compile(r"[!-~]+")  # visible ASCII: what fits in 'Authorization: Bearer <token>'


def parse_tokens(text: str, source: str, comments: bool = True) -> dict[str, str]:
    """Parse `<token>:<role>` items separated by commas or newlines. With `comments` (a tokens
    file) lines starting with '#' are skipped; in SEMCAT_TOKENS such an item is an error, as is
    a token that cannot be sent in a header or text that configures no token at all."""
    out: dict[str, str] = {}
    for n, raw in enumerate(text.replace(",", "\n").splitlines(), 1):
        item = raw.strip()
        if not item or (comments and item.startswith("#")):
            continue
        token, sep, role = item.rpartition(":")
        token, role = token.strip(), role.strip()
        if not sep or not token:
            raise ValueError(f"{source}, item {n}: expected '<token>:<role>', got {item!r}")
        if token.startswith("#"):
            raise ValueError(f"{source}, item {n}: token {token!r} starts with '#', which marks a comment in a "
                             "tokens file; use a token that does not start with '#' (comments are allowed only "
                             "in --tokens FILE)")
        if not _TOKEN.fullmatch(token):
            raise ValueError(f"{source}, item {n}: a token must be visible ASCII characters without spaces "
                             "(it is sent as 'Authorization: Bearer <token>')")
        if role not in ROLES:
            raise ValueError(f"{source}, item {n}: role {role!r} is not one of {', '.join(ROLES)}")
        out[token] = role
    if not out and text.strip():
        raise ValueError(f"{source} is set but configures no token; give '<token>:<role>' items "
                         f"(roles: {', '.join(ROLES)}), or leave it empty to serve loopback only without auth")
    return out


def load_tokens(tokens_file: str | None = None, env: Mapping[str, str] | None = None) -> Tokens:
    """Tokens from SEMCAT_TOKENS and the optional file (the file wins on a duplicate token)."""
    env = os.environ if env is None else env
    roles = parse_tokens(env.get("SEMCAT_TOKENS", ""), "SEMCAT_TOKENS", comments=False)
    if tokens_file:
        try:
            with open(tokens_file, encoding="utf-8") as f:
                roles.update(parse_tokens(f.read(), tokens_file))
        except OSError as exc:
            raise ValueError(f"cannot read tokens file {tokens_file!r}: {exc.strerror}") from None
    return Tokens(roles)


def is_loopback(host: str) -> bool:
    """True if every address `host` resolves to is a loopback address."""
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(str(i[4][0]).split("%")[0]).is_loopback for i in infos)


def check_bind(host: str, tokens: Tokens) -> None:
    if tokens or is_loopback(host):
        return
    raise UnsafeBindError(
        f"refusing to bind {host!r} without tokens: anyone who can reach that address could read and "
        "write the catalog. Configure tokens with SEMCAT_TOKENS='<token>:write,<token>:read' or "
        "--tokens FILE (lines '<token>:<role>'), or bind a loopback address such as 127.0.0.1.")
