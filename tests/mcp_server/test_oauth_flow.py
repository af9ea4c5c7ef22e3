"""OAuth 2.1 end to end, per the MCP authorization specification: a real `semcat serve` as the
resource server and a real authorization server, the OpenID-certified npm package `oidc-provider`
(tests/mcp_server/node/oidc/as.mjs: dynamic client registration, PKCE required, RFC 8707 resource
indicators, JWT access tokens; a second instance on another port is the "wrong issuer").

The spec's client flow is done twice: by the MCP Python SDK's own OAuth client (`OAuthClientProvider`:
GET /mcp -> 401 -> resource_metadata -> AS discovery -> dynamic registration -> authorization code +
PKCE S256 -> token -> tools/list), and by hand with httpx for tokens of a chosen scope, lifetime,
resource or issuer. The browser step (the user signing in) is the AS's own interaction, which signs
the test user in and approves; the client follows its redirects headlessly.

npm installs oidc-provider into $SEMCAT_NPM_CACHE/oidc (default ~/.cache/semcat-npm/oidc) on first use.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import select
import shutil
import subprocess
import sys
import time
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

import catalog_core as cc
import semantic as sm
from eval.fixtures.mcplake import FCT
from mcp_server.mcp import READ_TOOLS, TOOL_NAMES
from tests.helpers import free_port, oidc_provider, stop_process, wait_healthy
from tests.mcp_server.conftest import code

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AS_SCRIPT = os.path.join(ROOT, "tests", "mcp_server", "node", "oidc", "as.mjs")
REDIRECT = "http://127.0.0.1:9/callback"  # never contacted: the client stops at the redirect to it
STATIC = "static-write-token"


# ------------------------------------------------------------------ the servers
@pytest.fixture(scope="module")
def issuers():
    """Two oidc-provider issuers on loopback: [the one semcat trusts, another one]."""
    npm_dir = oidc_provider()
    proc, issued = _start_issuers(npm_dir)
    try:
        yield issued
    finally:
        stop_process(proc)


def _start_issuers(npm_dir: str, tries: int = 2, wait: float = 120.0) -> tuple[subprocess.Popen, list[str]]:
    """The issuers' process and their URLs, from the line it prints once both listen; a start that prints
    nothing within `wait` seconds (seen once on a loaded machine: the fixture then hung until pytest's
    timeout) is stopped and tried again on other ports, and the last failure says what it printed."""
    why = ""
    for _ in range(tries):
        ports = [str(free_port()), str(free_port())]
        proc = subprocess.Popen(["node", AS_SCRIPT, npm_dir, *ports], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        assert proc.stdout is not None and proc.stderr is not None
        if select.select([proc.stdout], [], [], wait)[0]:
            line = proc.stdout.readline()
            if line:
                return proc, json.loads(line)["issuers"]
        stop_process(proc)
        why = proc.stderr.read()[-2000:] if proc.poll() is not None else "(no output)"
    raise RuntimeError(f"the authorization server did not start in {tries} tries of {wait:.0f} s: {why}")


@pytest.fixture(scope="module")
def semcat(issuers, lake_dir, tmp_path_factory):
    """`semcat serve` trusting the first issuer (resource URI: the default, http://127.0.0.1:PORT/mcp),
    with a static write token too, and no clock leeway so a 1-second token expires quickly."""
    data = tmp_path_factory.mktemp("oauth") / "data"
    shutil.copytree(lake_dir, data)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "SEMCAT_TOKENS": f"{STATIC}:write source=human name=operator"}
    proc = subprocess.Popen([sys.executable, "-m", "mcp_server.cli", "serve", "--data", str(data), "--port", str(port),
                             "--oauth-issuer", issuers[0], "--oauth-leeway", "0"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(proc, url)
        yield url
    finally:
        stop_process(proc)


# ------------------------------------------------------------------ the client side, by hand
def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def follow_to_redirect_uri(http: httpx.Client | httpx2.Client, url: str) -> dict[str, str]:
    """Be the user agent: follow the authorization server's redirects (its interaction signs the test
    user in and approves) until it sends us to REDIRECT; the query parameters of that redirect."""
    for _ in range(12):
        r = http.get(url)
        assert r.status_code in (302, 303), f"{r.status_code} at {url}: {r.text[:500]}"
        url = urljoin(str(r.url), r.headers["location"])
        if url.startswith(REDIRECT):
            return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    raise AssertionError("the authorization server never redirected to the client")


def get_token(issuer: str, resource: str, scope: str, client_name: str = "semcat-test") -> str:
    """The specification's flow by hand: AS metadata, dynamic client registration, authorization code
    with PKCE (S256) and RFC 8707 resource, token. Returns the access token."""
    with httpx.Client(timeout=30, follow_redirects=False) as http:
        meta = http.get(issuer + "/.well-known/openid-configuration").json()
        assert "S256" in meta["code_challenge_methods_supported"]
        client = http.post(meta["registration_endpoint"], json={
            "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", "client_name": client_name,
            "grant_types": ["authorization_code"], "response_types": ["code"]})
        assert client.status_code == 201, client.text
        client_id = client.json()["client_id"]
        verifier, state = secrets.token_urlsafe(48), secrets.token_urlsafe(16)
        query = httpx.QueryParams({
            "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "scope": scope,
            "state": state, "resource": resource, "code_challenge_method": "S256",
            "code_challenge": _b64(hashlib.sha256(verifier.encode()).digest())})
        got = follow_to_redirect_uri(http, f"{meta['authorization_endpoint']}?{query}")
        assert got.get("state") == state and "code" in got, got
        tok = http.post(meta["token_endpoint"], data={
            "grant_type": "authorization_code", "code": got["code"], "redirect_uri": REDIRECT,
            "client_id": client_id, "code_verifier": verifier, "resource": resource})
        assert tok.status_code == 200, tok.text
        return str(tok.json()["access_token"])


def mcp_client(url: str, token: str | None = None, auth: httpx2.Auth | None = None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client(streamable_http_client(url + "/mcp", http_client=httpx2.AsyncClient(
        headers=headers, auth=auth, timeout=60)))


def run(client: Client, fn: Any) -> Any:
    async def go() -> Any:
        async with client as c:
            return await fn(c)
    return anyio.run(go)


def post_mcp(url: str, token: str | None) -> httpx.Response:
    headers = {"Accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.post(url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)


def challenge(r: httpx.Response) -> str:
    return r.headers.get("www-authenticate", "")


# ------------------------------------------------------------------ the one end-to-end test
class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def test_mcp_sdk_client_does_the_whole_authorization_flow(semcat, issuers):
    """GET /mcp -> 401 -> protected resource metadata -> AS discovery -> dynamic client registration ->
    authorization code + PKCE -> token -> tools/list and a write, all by the SDK's OAuth client."""
    resource = semcat + "/mcp"
    unauthenticated = httpx.get(resource, headers={"Accept": "text/event-stream"})
    assert unauthenticated.status_code == 401
    metadata_url = semcat + "/.well-known/oauth-protected-resource/mcp"
    assert challenge(unauthenticated) == f'Bearer resource_metadata="{metadata_url}"'
    prm = httpx.get(metadata_url)  # public: no token
    assert prm.status_code == 200
    assert prm.json()["resource"] == resource and prm.json()["authorization_servers"] == [issuers[0]]

    seen: list[str] = []
    redirect: dict[str, str] = {}

    async def redirect_handler(url: str) -> None:
        seen.append(url)
        async with httpx2.AsyncClient(timeout=30, follow_redirects=False) as browser:
            for _ in range(12):
                r = await browser.get(url)
                assert r.status_code in (302, 303), f"{r.status_code} at {url}: {r.text[:500]}"
                url = urljoin(str(r.url), r.headers["location"])
                if url.startswith(REDIRECT):
                    redirect.update({k: v[0] for k, v in parse_qs(urlsplit(url).query).items()})
                    return
        raise AssertionError("the authorization server never redirected to the client")

    async def callback_handler() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=redirect["code"], state=redirect.get("state"), iss=redirect.get("iss"))

    storage = MemoryStorage()
    provider = OAuthClientProvider(
        server_url=resource,
        client_metadata=OAuthClientMetadata(redirect_uris=[REDIRECT], client_name="semcat-sdk-test",
                                            grant_types=["authorization_code"], token_endpoint_auth_method="none"),
        storage=storage, redirect_handler=redirect_handler, callback_handler=callback_handler)

    async def session(c: Any) -> dict[str, Any]:
        names = [t.name for t in (await c.list_tools()).tools]
        written = await c.call_tool("annotate", {"table": FCT, "fields": {"synonyms": ["orders via oauth"]}})
        return {"names": names, "annotate": written}

    r = run(mcp_client(semcat, auth=provider), session)
    assert sorted(r["names"]) == sorted(TOOL_NAMES)
    assert not r["annotate"].is_error, r["annotate"].content[0].text
    # what the SDK did: registered dynamically, sent PKCE S256 and the RFC 8707 resource to this server
    [auth_url] = seen
    params = parse_qs(urlsplit(auth_url).query)
    assert params["code_challenge_method"] == ["S256"] and params["resource"] == [resource]
    assert storage.client is not None and storage.client.client_id
    assert storage.tokens is not None and set(str(storage.tokens.scope).split()) >= {"semcat:read", "semcat:write"}
    # the token is a JWT for this resource, and the annotation's author is its principal, not the token
    claims = json.loads(base64.urlsafe_b64decode(storage.tokens.access_token.split(".")[1] + "=="))
    assert claims["aud"] == resource and claims["iss"] == issuers[0]
    author = r["annotate"].structured_content["author"]
    assert author == "oauth:test-user"
    cat = cc.connect(semcat, token=STATIC)
    [ann] = [a for a in sm.read_annotations(cat, FCT) if a.key == "table.synonyms"]
    assert ann.provenance.author == "oauth:test-user" and ann.provenance.source == "agent"


# ------------------------------------------------------------------ the rest (slow: each runs the flow)
@pytest.mark.slow
def test_a_read_scope_token_lists_reads_and_cannot_annotate(semcat, issuers):
    token = get_token(issuers[0], semcat + "/mcp", "semcat:read")

    async def session(c: Any) -> dict[str, Any]:
        names = [t.name for t in (await c.list_tools()).tools]
        return {"names": names, "annotate": await c.call_tool("annotate", {"table": FCT, "fields": {"tags": ["x"]}})}

    r = run(mcp_client(semcat, token), session)
    assert sorted(r["names"]) == sorted(READ_TOOLS)
    assert r["annotate"].is_error and "cannot call annotate" in r["annotate"].content[0].text
    assert code(r["annotate"]) == "PermissionDeniedError"  # an error result: the code in the text and in _meta
    # the engine API agrees: a read token cannot commit
    commit = httpx.post(semcat + "/v1/commit", headers={"Authorization": f"Bearer {token}"},
                        json={"author": "x", "ops": [{"kind": "add", "path": "/oauth-read", "value": {}}]})
    assert commit.status_code == 403 and commit.json()["error"] == "PermissionDeniedError"


@pytest.mark.slow
def test_expired_wrong_audience_wrong_issuer_and_missing_tokens_get_401(semcat, issuers):
    metadata = f'resource_metadata="{semcat}/.well-known/oauth-protected-resource/mcp"'
    good = get_token(issuers[0], semcat + "/mcp", "semcat:read semcat:write")
    assert post_mcp(semcat, good).status_code == 200
    short = get_token(issuers[0], semcat + "/mcp", "semcat:read", client_name="short-lived")  # lives 1 s
    other_audience = get_token(issuers[0], "http://127.0.0.1:9/other/mcp", "semcat:read semcat:write")
    other_issuer = get_token(issuers[1], semcat + "/mcp", "semcat:read semcat:write")
    time.sleep(2.5)  # `short` has expired (the server allows no clock leeway)
    cases = {"expired": (short, "expired"), "wrong audience": (other_audience, "not for this server"),
             "wrong issuer": (other_issuer, "issued by")}
    for what, (token, message) in cases.items():
        r = post_mcp(semcat, token)
        assert r.status_code == 401, what
        assert r.json()["error"] == "AuthError" and message in r.json()["message"], (what, r.json())
        assert challenge(r).startswith('Bearer error="invalid_token", error_description="'), what
        assert challenge(r).endswith(metadata), what
    missing = post_mcp(semcat, None)
    assert missing.status_code == 401 and challenge(missing) == f"Bearer {metadata}"
    # the static token still works beside OAuth
    assert post_mcp(semcat, STATIC).status_code == 200


@pytest.mark.slow
def test_protected_resource_metadata_is_public(semcat, issuers):
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        r = httpx.get(semcat + path)
        assert r.status_code == 200, path
        assert r.json() == {"resource": semcat + "/mcp", "authorization_servers": [issuers[0]],
                            "scopes_supported": ["semcat:read", "semcat:write"],
                            "bearer_methods_supported": ["header"], "resource_name": "semcat"}
    # the authorization server it names is discoverable and offers what the MCP spec needs
    meta = httpx.get(issuers[0] + "/.well-known/openid-configuration").json()
    assert meta["registration_endpoint"] and "S256" in meta["code_challenge_methods_supported"]
