"""Who is calling: bearer tokens mapped to a `Principal` (name, role, source), and the rule that an
unauthenticated server binds loopback only.

Static tokens come from `SEMCAT_TOKENS` (items separated by commas) and/or `--tokens FILE` (one item a
line; blank lines and `#` comments are skipped). An item is

    <token>:<role>[ source=<human|agent|service>][ name=<name>][ groups=<a,b>]

`<token>` is visible ASCII without spaces (it may contain ':'; the last ':' before the first space ends
it), `<role>` is `read`, `write` or `admin` (acts as write, and grants do not limit it: issue 48).
`groups=` names the groups grants may name (`group:NAME`). The optional `key=value` words after a space give the token's source
(default `agent`: a person's token must say `source=human`, so an agent's token never claims a human)
and its principal name (default "token:" + 12 hex digits of the token's SHA-256). Today's
`<token>:<role>` lines keep their meaning.

OAuth access tokens (JWTs of a configured issuer) are checked by `mcp_server.http.oauth.JwtVerifier`
when `Tokens` has one (`Tokens(..., oauth=verifier)`); `Tokens.authenticate` tries the static tokens
first, then the JWT.

The seam to the rest of the server: after authentication the ASGI `scope["state"]` holds `role`
("read"|"write"), `principal` (the name: "token:<12 hex>", a configured name, "oauth:<sub>", or "local"
when auth is off) and `source` ("human"|"agent"|"service"). Invariant: a principal is never the token.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from catalog_core.errors import AuthError, PermissionDeniedError

if TYPE_CHECKING:
    from mcp_server.http.oauth import JwtVerifier

__all__ = ["ROLES", "SOURCES", "Principal", "LOCAL", "Tokens", "parse_tokens", "load_tokens", "is_loopback",
           "check_bind", "UnsafeBindError", "principal_digest", "set_state", "RESERVED_NAMES"]

ROLES = ("read", "write")
TOKEN_ROLES = ("read", "write", "admin")  # what a static token may say; admin acts as write, not limited by grants
SOURCES = ("human", "agent", "service")
_RANK = {"read": 1, "write": 2}
# Names a token may not take: the server's own principals (a token named like them would share their
# counters, caps and grants), and words that read as everyone.
RESERVED_NAMES = {
    "local": "the operator when auth is off",
    "anonymous": "requests without a token share its caps",
    "public": "it reads as everyone", "everyone": "it reads as everyone", "all": "it reads as everyone",
    "system": "it reads as the server itself", "semcat": "it reads as the server itself",
}


@dataclass(frozen=True)
class Principal:
    """Who a request acts as: `name` (never the token itself), `role` ("read" | "write", write implies
    read), `source` ("human" | "agent" | "service": what wrote it, for provenance), `groups` (the
    groups grants may name, issue 48) and `admin` (not limited by grants: a static token with role
    `admin`, which acts as `write` everywhere else; the operator when auth is off)."""

    name: str
    role: str
    source: str
    groups: tuple[str, ...] = ()
    admin: bool = False


# Auth off (the server binds loopback only): the operator on their own machine.
LOCAL = Principal("local", "write", "human", admin=True)


def set_state(scope: dict[str, object], principal: Principal) -> None:
    """Record `principal` in an ASGI scope's state: keys `role`, `principal` (its name), `source`,
    `groups` and `admin`."""
    state = scope.setdefault("state", {})
    assert isinstance(state, dict)
    state["role"], state["principal"], state["source"] = principal.role, principal.name, principal.source
    state["groups"], state["admin"] = principal.groups, principal.admin


class UnsafeBindError(ValueError):
    """Refusing to serve an unauthenticated catalog on a non-loopback address."""


def _digest(token: str) -> bytes:
    # Look tokens up by hash so comparison time does not depend on how many leading chars match.
    return hashlib.sha256(token.encode()).digest()


def principal_digest(token: str) -> str:
    """The default principal of a static token: "token:" + the first 12 hex digits of its SHA-256."""
    return "token:" + hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()[:12]


class Tokens:
    """The configured static tokens and the optional OAuth verifier. Empty (neither) means auth is off
    and the server binds loopback only. `roles` maps a token to its role (then it is an agent's
    token named by its digest) or to its full `Principal`."""

    def __init__(self, roles: Mapping[str, str | Principal] | None = None, oauth: JwtVerifier | None = None) -> None:
        self._principals = {_digest(t): p if isinstance(p, Principal) else Principal(principal_digest(t), p, "agent")
                            for t, p in (roles or {}).items()}
        self.oauth = oauth

    def __bool__(self) -> bool:
        return bool(self._principals) or self.oauth is not None

    def __len__(self) -> int:
        """The number of static tokens."""
        return len(self._principals)

    @staticmethod
    def _bearer(authorization: str | None) -> str:
        if not authorization:
            raise AuthError("this server requires a bearer token: send 'Authorization: Bearer <token>' "
                            "(cc.connect(url, token=...))")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError("the Authorization header must be 'Bearer <token>'", oauth_error="invalid_request")
        return token.strip()

    def check(self, authorization: str | None) -> Principal:
        """The principal of an `Authorization` header value by the static tokens alone (no network):
        LOCAL when auth is off; AuthError (401) if missing or unknown."""
        if not self:
            return LOCAL
        token = self._bearer(authorization)
        principal = self._principals.get(_digest(token))
        if principal is None:
            raise AuthError("unknown bearer token; ask the server operator for a valid token",
                            oauth_error="invalid_token")
        return principal

    async def authenticate(self, authorization: str | None) -> Principal:
        """The principal of an `Authorization` header value: a static token, else (with OAuth on) a
        JWT access token of the configured issuer. Raises AuthError (401), PermissionDeniedError
        (403: a valid JWT without a semcat scope) or, when the issuer's keys cannot be fetched,
        `oauth.IssuerUnavailableError` (503)."""
        if not self:
            return LOCAL
        token = self._bearer(authorization)
        principal = self._principals.get(_digest(token))
        if principal is not None:
            return principal
        if self.oauth is not None and token.count(".") == 2:
            return await self.oauth.verify(token)
        raise AuthError("unknown bearer token; ask the server operator for a valid token"
                        + (f", or sign in with {self.oauth.config.issuer}" if self.oauth is not None else ""),
                        oauth_error="invalid_token")

    def role_of(self, authorization: str | None) -> str:
        """The role of an `Authorization` header value by the static tokens ("write" when auth is off);
        raises AuthError (401) if missing/unknown."""
        return self.check(authorization).role

    @staticmethod
    def require(role: str, needed: str, action: str) -> None:
        if _RANK[role] < _RANK[needed]:
            raise PermissionDeniedError(f"a {role!r} token cannot {action}; use a token with role {needed!r}",
                                        role=role, needed=needed)


_TOKEN = re.compile(r"[!-~]+")  # visible ASCII: what fits in 'Authorization: Bearer <token>'
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")
_OPTION = re.compile(r"[A-Za-z_]+=\S*")
_SYNTAX = "'<token>:<role>' (optionally followed by ' source=human|agent|service' and ' name=<name>')"


def _parse_item(item: str, where: str) -> tuple[str, Principal]:
    words = re.sub(r"\s*:\s*", ":", item).split()  # a token has no spaces: 'tok : write' is 'tok:write'
    options_at = len(words)
    while options_at > 1 and _OPTION.fullmatch(words[options_at - 1]):
        options_at -= 1
    head, words = " ".join(words[:options_at]), words[options_at:]
    token, sep, role = head.rpartition(":")
    if not sep or not token:
        raise ValueError(f"{where}: expected {_SYNTAX}, got {item!r}")
    if token.startswith("#"):
        raise ValueError(f"{where}: token {token!r} starts with '#', which marks a comment in a "
                         "tokens file; use a token that does not start with '#' (comments are allowed only "
                         "in --tokens FILE)")
    if not _TOKEN.fullmatch(token):
        raise ValueError(f"{where}: a token must be visible ASCII characters without spaces "
                         "(it is sent as 'Authorization: Bearer <token>')")
    if role not in TOKEN_ROLES:
        raise ValueError(f"{where}: role {role!r} is not one of {', '.join(TOKEN_ROLES)}")
    options: dict[str, str] = {}
    for word in words:
        key, eq, value = word.partition("=")
        if not eq or key not in ("source", "name", "groups"):
            raise ValueError(f"{where}: unexpected {word!r} after '<token>:<role>'; the optional words are "
                             "source=human|agent|service, name=<name> and groups=<a,b>")
        if key in options:
            raise ValueError(f"{where}: {key}= is given twice")
        options[key] = value
    source = options.get("source", "agent")
    if source not in SOURCES:
        raise ValueError(f"{where}: source {source!r} is not one of {', '.join(SOURCES)}")
    name = options.get("name")
    if name is not None and not _NAME.fullmatch(name):
        raise ValueError(f"{where}: name {name!r} must be 1-64 letters, digits or . _ @ + - (starting with a letter "
                         "or digit, no ':')")
    if name is not None and name.lower() in RESERVED_NAMES:
        raise ValueError(f"{where}: name {name!r} is reserved ({RESERVED_NAMES[name.lower()]}); choose another name")
    groups = tuple(dict.fromkeys(g for g in options.get("groups", "").split(",") if g))
    for g in groups:
        if not _NAME.fullmatch(g):
            raise ValueError(f"{where}: group {g!r} must be 1-64 letters, digits or . _ @ + - (groups=a,b)")
    # role admin: acts as write, and grants do not limit it (issue 48)
    return token, Principal(name or principal_digest(token), "write" if role == "admin" else role, source, groups,
                            role == "admin")


_GROUP_CONT = re.compile(r"\s*[A-Za-z0-9][A-Za-z0-9._@+-]*\s*")


def _items(text: str) -> list[str]:
    """Token items split on newlines and commas, except the commas of a `groups=a,b` list (a piece
    after one that is a bare name, with no ':', continues the list)."""
    out: list[str] = []
    for line in text.splitlines():
        start = len(out)  # a list never continues onto the next line
        for piece in line.split(","):
            if len(out) > start and _GROUP_CONT.fullmatch(piece) and re.search(r"(^|\s)groups=\S*$", out[-1]):
                out[-1] += "," + piece.strip()
            else:
                out.append(piece)
    return out


def parse_tokens(text: str, source: str, comments: bool = True) -> dict[str, Principal]:
    """Parse token items (see the module docstring) separated by commas or newlines. With `comments`
    (a tokens file) lines starting with '#' are skipped; in SEMCAT_TOKENS such an item is an error, as
    is a token that cannot be sent in a header or text that configures no token at all."""
    out: dict[str, Principal] = {}
    for n, raw in enumerate(_items(text), 1):
        item = raw.strip()
        if not item or (comments and item.startswith("#")):
            continue
        token, principal = _parse_item(item, f"{source}, item {n}")
        out[token] = principal
    if not out and text.strip():
        raise ValueError(f"{source} is set but configures no token; give {_SYNTAX} items "
                         f"(roles: {', '.join(ROLES)}), or leave it empty to serve loopback only without auth")
    return out


def load_tokens(tokens_file: str | None = None, env: Mapping[str, str] | None = None,
                oauth: JwtVerifier | None = None) -> Tokens:
    """Tokens from SEMCAT_TOKENS and the optional file (the file wins on a duplicate token), and the
    optional OAuth verifier."""
    env = os.environ if env is None else env
    principals = parse_tokens(env.get("SEMCAT_TOKENS", ""), "SEMCAT_TOKENS", comments=False)
    if tokens_file:
        try:
            with open(tokens_file, encoding="utf-8") as f:
                principals.update(parse_tokens(f.read(), tokens_file))
        except OSError as exc:
            raise ValueError(f"cannot read tokens file {tokens_file!r}: {exc.strerror}") from None
    return Tokens(principals, oauth=oauth)


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
        "--tokens FILE (lines '<token>:<role>'), or an OAuth issuer (--oauth-issuer), or bind a loopback "
        "address such as 127.0.0.1.")
