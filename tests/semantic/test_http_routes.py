"""The /v1/semantic routes on a real uvicorn server with tokens: a read token may describe and
ask for staleness, only a write token may annotate."""

from __future__ import annotations

import httpx
import pytest

import catalog_core as cc
from eval.fixtures.lakes import LakeBuilder
from mcp_server.http.auth import Tokens
from mcp_server.http.server import serve_in_thread
from semantic.history import clear_cache

T = "acme.core.orders"


@pytest.fixture
def server(data_dir, tmp_path):
    engine = cc.Catalog.open(data_dir)
    lk = LakeBuilder(engine, tmp_path / "files")
    lk.table(T, [("order_id", "bigint"), ("status", "string")], at=0,
             rows={"order_id": [1, 2], "status": ["placed", "shipped"]})
    srv = serve_in_thread(engine, tokens=Tokens({"w": "write", "r": "read"}))
    yield srv
    srv.stop()
    clear_cache()
    engine.close()


def test_annotate_needs_a_write_token_then_describe_and_staleness(server):
    body = {"target": T, "fields": {"description": "orders", "freshness_sla": "PT1H"}, "author": "alice"}
    with httpx.Client(base_url=server.url, timeout=60) as c:
        r = c.post("/v1/semantic/annotate", json=body, headers={"Authorization": "Bearer r"})
        assert r.status_code == 403
        r = c.post("/v1/semantic/annotate", json=body, headers={"Authorization": "Bearer w"})
        assert r.status_code == 200 and r.json()["vid"] == 2
        bad = {**body, "fields": {"descripton": "x"}}
        r = c.post("/v1/semantic/annotate", json=bad, headers={"Authorization": "Bearer w"})
        assert r.status_code == 400 and r.json()["error"] == "InvalidAnnotationError"
        assert "did you mean 'description'" in r.json()["message"]
        r = c.post("/v1/semantic/annotate", json={**body, "column": "stat"}, headers={"Authorization": "Bearer w"})
        assert r.json()["details"]["did_you_mean"] == ["status"]
        auth = {"Authorization": "Bearer r"}
        card = c.get(f"/v1/semantic/describe/{T}", params={"now": "2024-11-12T00:00:00Z"}, headers=auth).json()
        # the author is the token's principal, never the body's "alice" (issue 35; tests/security/test_provenance.py)
        assert card["annotations"]["description"]["author"].startswith("token:")
        assert card["freshness"]["status"] == "missed"
        found = c.get("/v1/semantic/staleness", params={"now": "2024-11-12T00:00:00Z"}, headers=auth).json()
        assert [f["reason"] for f in found["findings"]] == ["freshness_sla_missed"]
        r = c.get("/v1/semantic/describe/acme.core.ordrs", headers=auth)
        assert r.status_code == 404 and "did you mean 'acme.core.orders'" in r.json()["message"]
        r = c.get("/v1/semantic/staleness", params={"depth": "deep"}, headers=auth)
        assert r.status_code == 400 and "depth must be" in r.json()["message"]
        r = c.post("/v1/semantic/verify_query", json={"question": "n", "sql": "SELECT count(*) FROM acme.core.orders",
                                                      "author": "a"}, headers={"Authorization": "Bearer w"})
        assert r.status_code == 200
