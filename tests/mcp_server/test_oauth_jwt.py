"""JWT access-token validation (mcp_server.http.oauth) against a real issuer stand-in: keys generated
here, the discovery document and JWKS served by a real loopback HTTP server (http.server in a thread)
that counts its fetches. Also the static token syntax, the Principal seam in the ASGI state, the
401/403 challenges and the public protected resource metadata of a real app. Fast, pure Python."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from fastapi import Request
from starlette.testclient import TestClient

import catalog_core as cc
from catalog_core.errors import AuthError, PermissionDeniedError
from mcp_server.http.auth import LOCAL, Principal, Tokens, load_tokens, parse_tokens
from mcp_server.http.oauth import (
    IssuerUnavailableError,
    JwtVerifier,
    OAuthConfig,
    challenge_headers,
    config_from_options,
    metadata_url,
)
from mcp_server.http.server import create_app

RESOURCE = "http://127.0.0.1:8765/mcp"


# ------------------------------------------------------------------ a real issuer on loopback
class Issuer:
    """Serves /.well-known/openid-configuration and /jwks for `keys` (mutable); counts JWKS fetches."""

    def __init__(self) -> None:
        self.keys: list[dict[str, Any]] = []
        self.jwks_fetches = 0  # attempts, failed ones included
        self.failing = False  # answer /jwks with a 500
        self.named: str | None = None  # the issuer its metadata names (default: its URL)
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                if self.path == "/.well-known/openid-configuration":
                    body: Any = {"issuer": issuer.named or issuer.url, "jwks_uri": issuer.url + "/jwks"}
                elif self.path == "/jwks":
                    issuer.jwks_fetches += 1
                    if issuer.failing:
                        self.send_error(500)
                        return
                    body = {"keys": issuer.keys}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def rsa_key(kid: str) -> tuple[rsa.RSAPrivateKey, dict[str, Any]]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    return key, {**jwk, "kid": kid, "use": "sig", "alg": "RS256"}


@pytest.fixture(scope="module")
def keys():
    return {"a": rsa_key("key-a"), "b": rsa_key("key-b"), "other": rsa_key("key-a")}  # "other": same kid, other key


@pytest.fixture
def issuer(keys):
    iss = Issuer()
    iss.keys = [keys["a"][1]]
    yield iss
    iss.close()


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def verifier(issuer: Issuer, clock: Clock | None = None, **kw: Any) -> JwtVerifier:
    return JwtVerifier(OAuthConfig(issuer=issuer.url, resource=RESOURCE, **kw), clock=clock or Clock())


def token(issuer: Issuer, key: Any, kid: str | None = "key-a", alg: str = "RS256", **claims: Any) -> str:
    now = int(time.time())
    payload = {"iss": issuer.url, "aud": RESOURCE, "sub": "alice", "exp": now + 300, "iat": now,
               "scope": "openid semcat:write", **claims}
    payload = {k: v for k, v in payload.items() if v is not None}
    return jwt.encode(payload, key, algorithm=alg, headers={"kid": kid} if kid else None)


def verify(v: JwtVerifier, tok: str) -> Principal:
    return anyio.run(v.verify, tok)


def refused(v: JwtVerifier, tok: str, match: str) -> AuthError:
    with pytest.raises(AuthError, match=match) as info:
        verify(v, tok)
    assert info.value.details["oauth_error"] == "invalid_token"
    return info.value


# ------------------------------------------------------------------ validation
def test_a_good_token_gives_its_principal_and_role(issuer, keys):
    v = verifier(issuer)
    assert verify(v, token(issuer, keys["a"][0])) == Principal("oauth:alice", "write", "agent")
    assert verify(v, token(issuer, keys["a"][0], scope="semcat:read", sub="bob")) == Principal("oauth:bob", "read", "agent")
    # Okta / Entra put scopes in `scp` (a list or a string); a client-credentials token may have no sub
    assert verify(v, token(issuer, keys["a"][0], scope=None, scp=["semcat:read"])).role == "read"
    assert verify(v, token(issuer, keys["a"][0], sub=None, client_id="etl-job")).name == "oauth:etl-job"
    assert issuer.jwks_fetches == 1  # cached


def test_scopes_and_source_are_configurable(issuer, keys):
    v = verifier(issuer, read_scope="catalog.read", write_scope="catalog.write", source_claim="semcat_source")
    assert verify(v, token(issuer, keys["a"][0], scope="catalog.write", semcat_source="human")) == \
        Principal("oauth:alice", "write", "human")
    assert verify(v, token(issuer, keys["a"][0], scope="catalog.read", semcat_source="service")).source == "service"
    assert verify(v, token(issuer, keys["a"][0], scope="catalog.read", semcat_source="admin")).source == "agent"
    with pytest.raises(PermissionDeniedError, match="catalog.read") as info:
        verify(v, token(issuer, keys["a"][0], scope="semcat:write"))  # the default names mean nothing here
    assert info.value.details["oauth_error"] == "insufficient_scope"


def test_groups_come_from_a_configurable_claim(issuer, keys):
    """Issue 48: an OAuth caller's groups (what `group:NAME` grants match) are its groups claim."""
    v = verifier(issuer)
    assert verify(v, token(issuer, keys["a"][0], groups=["finance", "/hr", "bad name", 7])).groups == ("finance", "hr")
    assert verify(v, token(issuer, keys["a"][0], groups="finance hr")).groups == ("finance", "hr")
    assert verify(v, token(issuer, keys["a"][0])).groups == ()
    roles = verifier(issuer, groups_claim="roles")
    assert verify(roles, token(issuer, keys["a"][0], roles=["analysts"], groups=["x"])).groups == ("analysts",)
    assert not verify(roles, token(issuer, keys["a"][0], roles=["analysts"])).admin  # OAuth callers are never admin


def test_expired_and_not_yet_valid_tokens_are_refused_with_a_small_leeway(issuer, keys):
    v = verifier(issuer, leeway_s=30)
    now = int(time.time())
    refused(v, token(issuer, keys["a"][0], exp=now - 60), "expired")
    assert verify(v, token(issuer, keys["a"][0], exp=now - 10)).role == "write"  # within the leeway
    refused(v, token(issuer, keys["a"][0], nbf=now + 120), "not valid yet")
    assert verify(v, token(issuer, keys["a"][0], nbf=now + 10)).role == "write"
    refused(v, token(issuer, keys["a"][0], exp=None), "'exp'")


def test_a_token_for_another_audience_is_refused(issuer, keys):
    v = verifier(issuer)
    refused(v, token(issuer, keys["a"][0], aud="http://other.example/mcp"), "not for this server")
    refused(v, token(issuer, keys["a"][0], aud=None), "'aud'")
    assert verify(v, token(issuer, keys["a"][0], aud=["http://other.example", RESOURCE])).role == "write"
    extra = verifier(issuer, audiences=("api://semcat",))
    assert verify(extra, token(issuer, keys["a"][0], aud="api://semcat")).role == "write"


def test_a_token_of_another_issuer_is_refused_without_any_fetch(issuer, keys):
    v = verifier(issuer)
    refused(v, token(issuer, keys["a"][0], iss="http://127.0.0.1:1/evil"), "issued by")
    assert issuer.jwks_fetches == 0
    # signed by another key under the same kid: the signature does not verify
    refused(v, token(issuer, keys["other"][0]), "signature")


def test_an_unknown_kid_refetches_the_jwks_once_per_interval(issuer, keys):
    clock = Clock()
    v = verifier(issuer, clock, unknown_kid_interval_s=10)
    assert verify(v, token(issuer, keys["a"][0])).role == "write" and issuer.jwks_fetches == 1
    issuer.keys.append(keys["b"][1])  # the issuer rotates in a new key
    refused(v, token(issuer, keys["b"][0], kid="key-b"), "does not list")  # fetched just now: no refetch yet
    assert issuer.jwks_fetches == 1
    clock.t += 10
    assert verify(v, token(issuer, keys["b"][0], kid="key-b")).role == "write"
    assert issuer.jwks_fetches == 2
    for _ in range(5):  # a flood of forged kids costs at most one fetch per interval
        refused(v, token(issuer, keys["b"][0], kid="forged"), "does not list")
    assert issuer.jwks_fetches == 2
    clock.t += 10
    refused(v, token(issuer, keys["b"][0], kid="forged"), "does not list")
    refused(v, token(issuer, keys["b"][0], kid="forged"), "does not list")
    assert issuer.jwks_fetches == 3
    clock.t += 3600  # an old JWKS is refetched even for known kids
    assert verify(v, token(issuer, keys["a"][0])).role == "write" and issuer.jwks_fetches == 4


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _hand_made(header: dict[str, Any], payload: dict[str, Any], sign: Any) -> str:
    head = _b64(json.dumps(header).encode()) + "." + _b64(json.dumps(payload).encode())
    return head + "." + _b64(sign(head.encode()))


def test_alg_none_and_hmac_with_the_public_key_are_refused(issuer, keys):
    v = verifier(issuer)
    now = int(time.time())
    claims = {"iss": issuer.url, "aud": RESOURCE, "sub": "mallory", "exp": now + 300, "scope": "semcat:write"}
    refused(v, _hand_made({"alg": "none", "kid": "key-a"}, claims, lambda _: b""), "'none' is not accepted")
    # the classic confusion: HMAC keyed with the issuer's public key, which anyone can fetch
    pem = keys["a"][0].public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    forged = _hand_made({"alg": "HS256", "kid": "key-a", "typ": "JWT"}, claims,
                        lambda m: hmac.new(pem, m, hashlib.sha256).digest())
    refused(v, forged, "'HS256' is not accepted")
    # an ES256 token whose kid names the RSA key does not verify with it
    ec_key = ec.generate_private_key(ec.SECP256R1())
    refused(v, token(issuer, ec_key, alg="ES256"), "does not list")


def test_an_unreachable_issuer_is_a_503_not_a_401(keys):
    dead = Issuer()
    dead.close()  # nothing listens there now
    v = verifier(dead)
    with pytest.raises(IssuerUnavailableError, match="cannot") as info:
        verify(v, token(dead, keys["a"][0]))
    assert info.value.http_status == 503
    assert challenge_headers(Tokens(oauth=v), {}, info.value) == {"Retry-After": "5"}


def test_a_failing_issuer_is_retried_at_most_every_few_seconds_and_cached_keys_stay_in_use(issuer, keys):
    clock = Clock()
    cold = verifier(issuer, clock)
    issuer.failing = True
    with pytest.raises(IssuerUnavailableError, match="HTTP 500"):
        verify(cold, token(issuer, keys["a"][0]))
    with pytest.raises(IssuerUnavailableError, match="retrying in at most 5 s"):
        verify(cold, token(issuer, keys["a"][0]))
    assert issuer.jwks_fetches == 1  # the second request did not hit the issuer
    issuer.failing = False
    clock.t += 5
    assert verify(cold, token(issuer, keys["a"][0])).role == "write" and issuer.jwks_fetches == 2
    issuer.failing = True
    clock.t += 3600  # the JWKS is old, the refresh fails: the cached keys keep serving
    assert verify(cold, token(issuer, keys["a"][0])).role == "write" and issuer.jwks_fetches == 3
    clock.t += 1
    assert verify(cold, token(issuer, keys["a"][0])).role == "write" and issuer.jwks_fetches == 3


def test_the_issuer_metadata_must_name_the_configured_issuer(issuer, keys):
    v = JwtVerifier(OAuthConfig(issuer=issuer.url + "/", resource=RESOURCE))  # a trailing '/' is the same issuer
    assert verify(v, token(issuer, keys["a"][0])).role == "write"
    issuer.named = "https://impostor.example"
    with pytest.raises(IssuerUnavailableError, match="names issuer 'https://impostor.example'"):
        verify(verifier(issuer), token(issuer, keys["a"][0]))


# ------------------------------------------------------------------ configuration
def test_oauth_configuration_errors_say_what_to_fix():
    with pytest.raises(ValueError, match="https"):
        OAuthConfig(issuer="http://idp.example.com", resource=RESOURCE)
    with pytest.raises(ValueError, match="absolute"):
        OAuthConfig(issuer="idp.example.com", resource=RESOURCE)
    with pytest.raises(ValueError, match="must differ"):
        OAuthConfig(issuer="https://idp.example.com", resource=RESOURCE, read_scope="x", write_scope="x")
    with pytest.raises(ValueError, match="--resource-uri"):
        config_from_options("https://idp.example.com", None, "0.0.0.0", 8765)
    with pytest.raises(ValueError, match="need --oauth-issuer"):
        config_from_options(None, "https://semcat.example.com/mcp", "127.0.0.1", 8765)
    assert config_from_options(None, None, "127.0.0.1", 8765) is None
    cfg = config_from_options("https://idp.example.com/realms/data", None, "::1", 9000)
    assert cfg is not None and cfg.resource == "http://[::1]:9000/mcp"
    assert metadata_url("https://semcat.example.com/mcp") == \
        "https://semcat.example.com/.well-known/oauth-protected-resource/mcp"


# ------------------------------------------------------------------ static tokens
def test_static_token_syntax_old_and_extended():
    got = parse_tokens("plain:write\n"
                       "a:b:c:read\n"  # a token may contain ':'; the last one before the options ends it
                       "ops-7f3a:write source=human name=alice\n"
                       "job-1 : read name=etl source=service\n"
                       "# a comment\n", "tokens.txt")
    assert got["plain"] == Principal("token:" + hashlib.sha256(b"plain").hexdigest()[:12], "write", "agent")
    assert got["a:b:c"].role == "read" and got["a:b:c"].source == "agent"
    assert got["ops-7f3a"] == Principal("alice", "write", "human")
    assert got["job-1"] == Principal("etl", "read", "service")
    env = load_tokens(None, env={"SEMCAT_TOKENS": "t1:read source=human name=bob, t2:write"})
    assert env.check("Bearer t1") == Principal("bob", "read", "human")
    assert env.check("Bearer t2").source == "agent" and env.role_of("Bearer t2") == "write"
    assert Tokens().check(None) == LOCAL == Principal("local", "write", "human", admin=True)  # not limited by grants


@pytest.mark.parametrize("spec, match", [
    ("t:write source=root", "source 'root' is not one of human, agent, service"),
    ("t:write sorce=human", "unexpected 'sorce=human'"),
    ("t:write name=a:b", "name 'a:b' must be"),
    ("t:write name=local", "name 'local' is reserved"),
    ("t:write name=x name=y", "name= is given twice"),
    ("t:root source=human", "role 'root'"),
    ("source=human", "expected '<token>:<role>'"),
])
def test_static_token_parse_errors_are_clear(spec, match):
    with pytest.raises(ValueError, match=match):
        load_tokens(None, env={"SEMCAT_TOKENS": spec})


# ------------------------------------------------------------------ the seam in a real app
def test_guard_puts_the_principal_in_the_state_and_challenges_per_rfc_9728(issuer, keys, tmp_path):
    tokens = load_tokens(None, env={"SEMCAT_TOKENS": "human-tok:write source=human name=alice,agent-tok:read"},
                         oauth=verifier(issuer))
    cat = cc.Catalog.open(str(tmp_path / "data"))
    try:
        app = create_app(cat, tokens=tokens)

        @app.get("/v1/_whoami")
        def whoami(request: Request) -> dict[str, Any]:
            state = request.scope["state"]
            return {k: state[k] for k in ("role", "principal", "source")}

        with TestClient(app, base_url="http://127.0.0.1:8765") as http:
            meta = http.get("/.well-known/oauth-protected-resource/mcp")
            assert meta.status_code == 200 and meta.json() == {
                "resource": RESOURCE, "authorization_servers": [issuer.url], "bearer_methods_supported": ["header"],
                "scopes_supported": ["semcat:read", "semcat:write"], "resource_name": "semcat"}
            assert http.get("/.well-known/oauth-protected-resource").json()["resource"] == RESOURCE
            assert http.get("/.well-known/oauth-protected-resource/elsewhere").status_code == 404

            def who(tok: str | None) -> Any:
                return http.get("/v1/_whoami", headers={"Authorization": f"Bearer {tok}"} if tok else {})

            assert who("human-tok").json() == {"role": "write", "principal": "alice", "source": "human"}
            assert who("agent-tok").json() == {"role": "read", "source": "agent",
                                               "principal": "token:" + hashlib.sha256(b"agent-tok").hexdigest()[:12]}
            assert who(token(issuer, keys["a"][0])).json() == {"role": "write", "principal": "oauth:alice",
                                                              "source": "agent"}
            challenge = 'resource_metadata="http://127.0.0.1:8765/.well-known/oauth-protected-resource/mcp"'
            missing = who(None)
            assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer " + challenge
            expired = who(token(issuer, keys["a"][0], exp=int(time.time()) - 600))
            assert expired.status_code == 401 and expired.json()["error"] == "AuthError"
            assert expired.headers["www-authenticate"].startswith('Bearer error="invalid_token", error_description="')
            assert expired.headers["www-authenticate"].endswith(challenge)
            no_scope = who(token(issuer, keys["a"][0], scope="openid"))
            assert no_scope.status_code == 403
            assert 'error="insufficient_scope"' in no_scope.headers["www-authenticate"]
            assert 'scope="semcat:read semcat:write"' in no_scope.headers["www-authenticate"]
    finally:
        cat.close()


def test_serve_refuses_a_bad_oauth_configuration_before_opening_anything(tmp_path):
    from click.testing import CliRunner

    from mcp_server.cli import main

    runner = CliRunner()
    plain = runner.invoke(main, ["serve", "--data", str(tmp_path / "d"), "--oauth-issuer", "http://idp.example.com"])
    assert plain.exit_code == 2 and "must use https" in plain.output
    wild = runner.invoke(main, ["serve", "--data", str(tmp_path / "d"), "--host", "0.0.0.0",
                                "--oauth-issuer", "https://idp.example.com"])
    assert wild.exit_code == 2 and "--resource-uri" in wild.output
    orphan = runner.invoke(main, ["serve", "--data", str(tmp_path / "d"), "--oauth-source-claim", "kind"])
    assert orphan.exit_code == 2 and "need --oauth-issuer" in orphan.output
    assert not (tmp_path / "d").exists()
