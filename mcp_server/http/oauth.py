"""`semcat serve` as an OAuth 2.1 resource server, per the MCP authorization specification.

- Protected resource metadata (RFC 9728), public: `GET /.well-known/oauth-protected-resource` and the
  path-suffixed form for the MCP endpoint, `/.well-known/oauth-protected-resource/mcp`. It names this
  server's resource URI, the authorization server (the configured issuer) and the scopes.
- Access tokens are JWTs from one configured issuer (RFC 9068 style): the issuer's metadata is
  discovered (`/.well-known/openid-configuration`, else RFC 8414's `oauth-authorization-server`), its
  JWKS fetched and cached. A token is accepted only if its signature verifies with an asymmetric
  algorithm (never `none`, never HMAC: a public key is not a shared secret), `iss` is the issuer,
  `aud` names this server's resource URI (RFC 8707: a token minted for another resource is refused),
  and `exp` / `nbf` hold within a small leeway. Scopes map to roles: the write scope gives `write`
  (which implies read), the read scope `read`; a valid token with neither gets 403 `insufficient_scope`.
- Bounded network use: the JWKS is refetched when it is older than `jwks_max_age_s`, or on a token
  with an unknown `kid` at most once per `unknown_kid_interval_s` (a flood of forged `kid`s cannot
  make the server hammer the issuer); a token that does not claim the configured issuer is refused
  before any fetch. Fetches time out, follow few redirects and read at most 1 MiB.

Invariant: a principal derived from a JWT is "oauth:" + its `sub` (or its client id when it has no
`sub`), never the token; its source is the configured claim's value when that is human / agent /
service, else "agent" (a token an MCP client obtained is an agent's).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import jwt
import orjson
from fastapi import FastAPI, Request
from fastapi.responses import Response

from catalog_core.errors import AuthError, CatalogError, PermissionDeniedError
from mcp_server.http.auth import SOURCES, Principal

__all__ = ["OAuthConfig", "JwtVerifier", "IssuerUnavailableError", "ALGORITHMS", "METADATA_PATH",
           "metadata_url", "protected_resource_metadata", "check_url"]

# Asymmetric JWS algorithms only: `none` and HS* (which would let anyone holding the public key forge
# tokens) are refused before any key is looked at.
ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"})
METADATA_PATH = "/.well-known/oauth-protected-resource"
log = logging.getLogger("uvicorn.error")
MAX_DOCUMENT_BYTES = 1 << 20
_NAME_MAX = 200


class IssuerUnavailableError(CatalogError):
    """The authorization server's metadata or keys cannot be fetched: the token could not be checked
    (it is not known to be bad, so this is not a 401 that would send clients through a new login)."""

    http_status = 503


def _is_loopback_host(host: str) -> bool:
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str, what: str) -> str:
    """`url` if it is an absolute https URL (http only for a loopback host) without query or
    fragment; raises ValueError naming `what` otherwise. A trailing '/' on a bare origin is kept."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError(f"{what} must be an absolute http(s) URL such as https://idp.example.com/realms/data, "
                         f"got {url!r}")
    if parts.scheme == "http" and not _is_loopback_host(parts.hostname):
        raise ValueError(f"{what} must use https (plain http is allowed only for a loopback host such as "
                         f"127.0.0.1), got {url!r}")
    if parts.query or parts.fragment:
        raise ValueError(f"{what} must not have a query or a fragment, got {url!r}")
    return url.strip()


def metadata_url(resource: str) -> str:
    """The RFC 9728 metadata URL of `resource`: the well-known path inserted before the resource's path,
    e.g. https://h/mcp -> https://h/.well-known/oauth-protected-resource/mcp."""
    parts = urlsplit(resource)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, METADATA_PATH + path, "", ""))


def _valid_scope_name(name: str, what: str) -> str:
    if not name or any(c.isspace() or not c.isprintable() or c in '"\\' for c in name):
        raise ValueError(f"{what} must be one scope name without spaces or quotes, got {name!r}")
    return name


@dataclass(frozen=True)
class OAuthConfig:
    """What a resource server needs to know about its authorization server. `resource` is this
    server's resource URI (what clients send as RFC 8707 `resource`, and the required `aud`);
    `audiences` adds other accepted `aud` values (an IdP that cannot put a URL in `aud`)."""

    issuer: str
    resource: str
    audiences: tuple[str, ...] = ()
    read_scope: str = "semcat:read"
    write_scope: str = "semcat:write"
    source_claim: str | None = None
    groups_claim: str = "groups"  # a list of names (or one space-separated string): the caller's groups for grants
    leeway_s: float = 30.0
    jwks_max_age_s: float = 3600.0
    unknown_kid_interval_s: float = 10.0
    retry_s: float = 5.0  # after a failed fetch of the issuer's metadata or keys
    timeout_s: float = 5.0

    def __post_init__(self) -> None:
        check_url(self.issuer, "the OAuth issuer (--oauth-issuer)")
        check_url(self.resource, "the resource URI (--resource-uri)")
        _valid_scope_name(self.read_scope, "the read scope (--oauth-read-scope)")
        _valid_scope_name(self.write_scope, "the write scope (--oauth-write-scope)")
        if self.read_scope == self.write_scope:
            raise ValueError(f"the read and write scopes must differ (both are {self.read_scope!r})")
        if not 0 <= self.leeway_s <= 300:
            raise ValueError(f"the clock leeway must be 0..300 seconds, got {self.leeway_s}")
        if self.source_claim is not None and not self.source_claim.strip():
            raise ValueError("the source claim (--oauth-source-claim) must be a claim name")

    @property
    def accepted_audiences(self) -> list[str]:
        return [self.resource, *(a for a in self.audiences if a != self.resource)]

    @property
    def scopes(self) -> list[str]:
        return [self.read_scope, self.write_scope]


def protected_resource_metadata(resource: str, config: OAuthConfig | None) -> dict[str, Any]:
    """The RFC 9728 document for `resource` (without OAuth: no authorization server, static tokens only)."""
    doc: dict[str, Any] = {"resource": resource, "bearer_methods_supported": ["header"], "resource_name": "semcat"}
    if config is not None:
        doc["authorization_servers"] = [config.issuer]
        doc["scopes_supported"] = config.scopes
    return doc


# ------------------------------------------------------------------ the verifier
@dataclass
class _Keys:
    raw: list[dict[str, Any]] = field(default_factory=list)
    parsed: dict[tuple[int, str], jwt.PyJWK | None] = field(default_factory=dict)
    fetched_at: float = float("-inf")


class JwtVerifier:
    """Validates JWT access tokens of `config.issuer` (see the module docstring). `clock` is the
    monotonic clock that paces JWKS refetches (a parameter so tests can move it)."""

    def __init__(self, config: OAuthConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config, self.clock = config, clock
        self._metadata: dict[str, Any] | None = None
        self._keys = _Keys()
        self._lock: asyncio.Lock | None = None
        self._failed_at, self._failure = float("-inf"), ""
        self.fetches = 0  # JWKS fetches so far (bounded; see the module docstring)

    # ---------------------------------------------------------- fetching
    async def _get_json(self, client: httpx.AsyncClient, url: str) -> Any:
        async with client.stream("GET", url, headers={"Accept": "application/json"}) as resp:
            if resp.status_code != 200:
                raise IssuerUnavailableError(f"{url} answered HTTP {resp.status_code}")
            body = b""
            async for chunk in resp.aiter_bytes():
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise IssuerUnavailableError(f"{url} sent more than {MAX_DOCUMENT_BYTES} bytes")
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            raise IssuerUnavailableError(f"{url} did not answer JSON") from None

    def _discovery_urls(self) -> list[str]:
        issuer = self.config.issuer.rstrip("/")
        parts = urlsplit(issuer)
        origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
        urls = [issuer + "/.well-known/openid-configuration",
                origin + "/.well-known/oauth-authorization-server" + path,
                origin + "/.well-known/openid-configuration" + path]
        return list(dict.fromkeys(urls))

    async def _discover(self, client: httpx.AsyncClient) -> dict[str, Any]:
        problems = []
        for url in self._discovery_urls():
            try:
                doc = await self._get_json(client, url)
            except (IssuerUnavailableError, httpx.HTTPError) as exc:
                problems.append(f"{url}: {exc}")
                continue
            if not isinstance(doc, dict) or not isinstance(doc.get("jwks_uri"), str):
                problems.append(f"{url}: no jwks_uri")
                continue
            if str(doc.get("issuer", "")).rstrip("/") != self.config.issuer.rstrip("/"):
                raise IssuerUnavailableError(
                    f"the metadata at {url} names issuer {doc.get('issuer')!r}, not the configured "
                    f"{self.config.issuer!r}; set --oauth-issuer to the issuer your IdP's metadata names")
            return doc
        raise IssuerUnavailableError("cannot discover the OAuth issuer's metadata: " + "; ".join(problems))

    async def refresh(self) -> None:
        """Fetch the issuer's metadata (once) and its JWKS now."""
        async with httpx.AsyncClient(timeout=self.config.timeout_s, follow_redirects=True, max_redirects=3) as client:
            try:
                if self._metadata is None:
                    self._metadata = await self._discover(client)
                self.fetches += 1
                jwks = await self._get_json(client, str(self._metadata["jwks_uri"]))
            except httpx.HTTPError as exc:
                raise IssuerUnavailableError(f"cannot reach the OAuth issuer {self.config.issuer}: {exc}") from None
        keys = jwks.get("keys") if isinstance(jwks, dict) else None
        if not isinstance(keys, list):
            raise IssuerUnavailableError(f"the issuer's JWKS at {self._metadata['jwks_uri']} has no 'keys' list")
        # Signing keys only, and never a symmetric one: an `oct` key in a public JWKS is no secret.
        usable = [k for k in keys if isinstance(k, dict) and k.get("kty") in ("RSA", "EC", "OKP")
                  and k.get("use", "sig") == "sig"]
        self._keys = _Keys(raw=usable, fetched_at=self.clock())

    async def _refresh_if(self, stale: Callable[[], bool]) -> None:
        """Refresh if `stale()` (checked again under the lock: another request may have refreshed while
        this one waited). After a failed fetch, no new attempt for `retry_s`: meanwhile the keys at
        hand are used, or without any, IssuerUnavailableError (503) at once."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if not stale():
                return
            now = self.clock()
            if now - self._failed_at < self.config.retry_s:
                if self._keys.raw:
                    return
                raise IssuerUnavailableError(f"{self._failure}; retrying in at most {self.config.retry_s:g} s")
            try:
                await self.refresh()
            except IssuerUnavailableError as exc:
                self._failed_at, self._failure = now, exc.message
                if not self._keys.raw:
                    raise
                log.warning("semcat: keeping the cached JWKS of %s: %s", self.config.issuer, exc.message)

    def _match(self, kid: str | None, alg: str) -> list[jwt.PyJWK]:
        out = []
        for i, raw in enumerate(self._keys.raw):
            if kid is not None and raw.get("kid") != kid:
                continue
            if raw.get("alg") not in (None, alg):
                continue
            if (i, alg) not in self._keys.parsed:
                try:
                    self._keys.parsed[(i, alg)] = jwt.PyJWK(raw, algorithm=alg)
                except jwt.PyJWTError:
                    self._keys.parsed[(i, alg)] = None  # a key of another type than alg needs
            key = self._keys.parsed[(i, alg)]
            if key is not None:
                out.append(key)
        return out

    async def _keys_for(self, kid: str | None, alg: str) -> list[jwt.PyJWK]:
        cfg = self.config
        await self._refresh_if(lambda: self.clock() - self._keys.fetched_at >= cfg.jwks_max_age_s)
        keys = self._match(kid, alg)
        if not keys:  # the issuer may have rotated its keys: refetch, at most once per interval
            await self._refresh_if(lambda: self.clock() - self._keys.fetched_at >= cfg.unknown_kid_interval_s)
            keys = self._match(kid, alg)
        if not keys:
            raise _invalid(f"the access token is signed with key {kid!r} ({alg}), which the issuer's JWKS does not "
                           "list; get a new token from the authorization server")
        return keys

    # ---------------------------------------------------------- verifying
    async def verify(self, token: str) -> Principal:
        """The principal of a valid access token; AuthError (401) for a bad one, PermissionDeniedError
        (403, insufficient_scope) for a valid one without a semcat scope, IssuerUnavailableError (503)
        when the issuer's keys cannot be fetched."""
        cfg = self.config
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError as exc:
            raise _invalid(f"the bearer token is neither a configured static token nor a JWT ({exc})") from None
        alg = header.get("alg")
        if alg not in ALGORITHMS:
            raise _invalid(f"the access token's algorithm {alg!r} is not accepted; the issuer must sign with one of "
                           f"{', '.join(sorted(ALGORITHMS))}")
        iss = unverified.get("iss")
        if not isinstance(iss, str) or iss.rstrip("/") != cfg.issuer.rstrip("/"):
            raise _invalid(f"the access token was issued by {iss!r}; this server accepts tokens from {cfg.issuer}")
        kid = header.get("kid")
        claims: dict[str, Any] | None = None
        last: Exception | None = None
        for key in await self._keys_for(kid if isinstance(kid, str) else None, alg):
            try:
                claims = jwt.decode(token, key.key, algorithms=[alg], audience=cfg.accepted_audiences, issuer=iss,
                                    leeway=cfg.leeway_s, options={"require": ["exp", "iss", "aud"]})
                break
            except jwt.InvalidSignatureError as exc:
                last = exc  # without a kid, several keys may be candidates
            except jwt.PyJWTError as exc:
                raise _invalid(_explain(exc, cfg)) from None
        if claims is None:
            raise _invalid(f"the access token's signature does not verify ({last}); get a new token from "
                           f"{cfg.issuer}")
        return self._principal(claims)

    def _principal(self, claims: Mapping[str, Any]) -> Principal:
        cfg = self.config
        scopes = _scopes(claims)
        if cfg.write_scope in scopes:
            role = "write"
        elif cfg.read_scope in scopes:
            role = "read"
        else:
            raise PermissionDeniedError(
                f"the access token has none of the scopes {cfg.read_scope!r} (read) or {cfg.write_scope!r} "
                "(write); request one of them from the authorization server",
                oauth_error="insufficient_scope", scope=" ".join(cfg.scopes))
        sub = claims.get("sub")
        who = sub if isinstance(sub, str) and sub else next(
            (v for c in ("client_id", "azp", "appid") if isinstance(v := claims.get(c), str) and v), None)
        if who is None:
            raise _invalid("the access token names no subject ('sub') or client ('client_id')")
        if len(who) > _NAME_MAX or not who.isprintable():
            raise _invalid(f"the access token's subject is longer than {_NAME_MAX} characters or not printable")
        source = "agent"
        if cfg.source_claim:
            value = claims.get(cfg.source_claim)
            if isinstance(value, str) and value in SOURCES:
                source = value
        return Principal("oauth:" + who, role, source, _groups(claims.get(cfg.groups_claim)))


def _invalid(message: str) -> AuthError:
    return AuthError(message, oauth_error="invalid_token")


def _explain(exc: jwt.PyJWTError, cfg: OAuthConfig) -> str:
    if isinstance(exc, jwt.ExpiredSignatureError):
        return f"the access token has expired; get a new one from {cfg.issuer}"
    if isinstance(exc, jwt.ImmatureSignatureError):
        return "the access token is not valid yet (nbf / iat in the future); check the clocks"
    if isinstance(exc, jwt.InvalidAudienceError):
        return (f"the access token is not for this server: its audience must be {cfg.resource} (ask the "
                "authorization server for a token with resource=" + cfg.resource + ")")
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return f"the access token has no {exc.claim!r} claim, which this server requires"
    return f"the access token is not valid: {exc}"


def _scopes(claims: Mapping[str, Any]) -> set[str]:
    """Granted scopes: `scope` (RFC 9068, space-separated) and `scp` (Okta, Entra: string or list)."""
    out: set[str] = set()
    for name in ("scope", "scp"):
        value = claims.get(name)
        items: Iterable[Any] = value.split() if isinstance(value, str) else value if isinstance(value, list) else ()
        out.update(v for v in items if isinstance(v, str))
    return out


# ------------------------------------------------------------------ 401 / 403 challenges
def _quoted(text: str) -> str:
    """`text` as the inside of an RFC 6750 quoted-string (%x20-21 / %x23-5B / %x5D-7E), bounded."""
    return "".join(c if " " <= c <= "~" and c not in '"\\' else "?" for c in text)[:300]


def resource_of(tokens: Any, scope: Mapping[str, Any]) -> str:
    """This server's resource URI: the configured one with OAuth on, else the MCP endpoint's URL as the
    request reached it (the Host header, which the server's Host allow-list vets)."""
    oauth = getattr(tokens, "oauth", None)
    if oauth is not None:
        return str(oauth.config.resource)
    host = next((bytes(v).decode("latin-1") for k, v in scope.get("headers", ()) if k == b"host"), "")
    if not host:
        server = scope.get("server") or ("127.0.0.1", 80)
        host = f"[{server[0]}]:{server[1]}" if ":" in str(server[0]) else f"{server[0]}:{server[1]}"
    return f"{scope.get('scheme', 'http')}://{_quoted(host)}/mcp"


def challenge_headers(tokens: Any, scope: Mapping[str, Any], exc: CatalogError) -> dict[str, str]:
    """Headers of an authentication failure: `WWW-Authenticate: Bearer ...` with `resource_metadata`
    (RFC 9728 §5.1) on a 401 and a 403 `insufficient_scope`, `error` / `error_description` (RFC 6750)
    when a token was sent; `Retry-After` when the issuer could not be reached."""
    if isinstance(exc, IssuerUnavailableError):
        return {"Retry-After": "5"}
    params = []
    code = exc.details.get("oauth_error")
    if isinstance(code, str):
        params += [f'error="{code}"', f'error_description="{_quoted(exc.message)}"']
        if code == "insufficient_scope" and isinstance(exc.details.get("scope"), str):
            params.append(f'scope="{_quoted(exc.details["scope"])}"')
    params.append(f'resource_metadata="{metadata_url(resource_of(tokens, scope))}"')
    return {"WWW-Authenticate": "Bearer " + ", ".join(params)}


# ------------------------------------------------------------------ the metadata routes
def install_metadata(app: FastAPI) -> None:
    """Serve the protected resource metadata on `app` (a FastAPI app whose `state.tokens` is the
    server's `Tokens`): at the well-known root and at the path-suffixed URL of the resource (/mcp,
    or the configured resource URI's path). Public (the Guard lets these paths through), cacheable,
    and readable cross-origin (browser-based MCP clients fetch it)."""
    def serve(request: Request, suffix: str) -> Response:
        tokens = request.app.state.tokens
        resource = resource_of(tokens, request.scope)
        allowed = {"", "/mcp", urlsplit(resource).path.rstrip("/")}
        if suffix not in allowed:
            body = {"error": "NotFoundError", "message": f"no protected resource at {suffix!r}; the metadata of "
                    f"this server is at {metadata_url(resource)}", "details": {}}
            return Response(orjson.dumps(body), status_code=404, media_type="application/json")
        doc = protected_resource_metadata(resource, getattr(tokens, "oauth", None) and tokens.oauth.config)
        return Response(orjson.dumps(doc), media_type="application/json",
                        headers={"Cache-Control": "public, max-age=300", "Access-Control-Allow-Origin": "*"})

    @app.get(METADATA_PATH, include_in_schema=False)
    def metadata_root(request: Request) -> Response:
        return serve(request, "")

    @app.get(METADATA_PATH + "/{suffix:path}", include_in_schema=False)
    def metadata_suffixed(request: Request, suffix: str) -> Response:
        return serve(request, "/" + suffix.rstrip("/"))


def _groups(value: object) -> tuple[str, ...]:
    """The groups a token's groups claim names (a list of names or one space-separated string);
    names grants cannot name (not 1-128 letters, digits or . _ @ + -) are left out; at most 256."""
    names = value.split() if isinstance(value, str) else value if isinstance(value, list) else []
    ok = [n.lstrip("/") for n in names if isinstance(n, str)]
    return tuple(dict.fromkeys(n for n in ok if _GROUP.fullmatch(n)))[:256]


_GROUP = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")


def config_from_options(issuer: str | None, resource: str | None, host: str, port: int, *,
                        audiences: Iterable[str] = (), read_scope: str = "semcat:read",
                        write_scope: str = "semcat:write", source_claim: str | None = None,
                        leeway_s: float = 30.0, groups_claim: str = "groups") -> OAuthConfig | None:
    """The OAuth configuration of `semcat serve` (None without an issuer). The resource URI defaults
    to the MCP endpoint at the bound address, http://HOST:PORT/mcp; a wildcard bind, an ephemeral
    port or a server behind a proxy must name it (--resource-uri). ValueError says what to fix."""
    if not issuer:
        if resource or source_claim or tuple(audiences):
            raise ValueError("--resource-uri, --oauth-audience and --oauth-source-claim need --oauth-issuer "
                             "(SEMCAT_OAUTH_ISSUER): the authorization server whose tokens to accept")
        return None
    if not resource:
        if host in ("0.0.0.0", "::", "") or port == 0:
            raise ValueError("with --oauth-issuer on a wildcard address or port 0, give --resource-uri "
                             "(SEMCAT_RESOURCE_URI): the URL clients reach /mcp at, e.g. https://semcat.example.com/mcp")
        resource = f"http://{f'[{host}]' if ':' in host else host}:{port}/mcp"
    return OAuthConfig(issuer=issuer, resource=resource, audiences=tuple(a for a in audiences if a),
                       read_scope=read_scope, write_scope=write_scope, source_claim=source_claim or None,
                       leeway_s=leeway_s, groups_claim=groups_claim or "groups")
