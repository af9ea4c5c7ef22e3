"""Issue 35 item 6 (HTTP parts): bad /ui input is a 400 page, not a 500; a snapshot written with
non-ASCII digits is never read as a vid; a JSON-RPC request whose `id` is not a string or an
integer gets a JSON-RPC error (-32600), not a 202 and no answer."""

from __future__ import annotations

import httpx
import pytest

from tests.security.conftest import READ, start

COOKIE = "semcat_token"


@pytest.fixture
def served(engine):
    with start(engine, True) as server:
        yield server


@pytest.mark.parametrize("url", [
    "/ui?snapshot=%C2%B2", "/ui/diff?from=%C2%B2", "/ui/diff?to=%C2%B2", "/ui/inbox?limit=abc",
    "/ui/inbox?limit=-5", "/ui?snapshot=" + "9" * 5000, "/ui/diff?from=" + "9" * 5000,
    "/ui/table/acme.core.dim_store?snapshot=%EF%BC%93", "/ui/inbox?snapshot=" + "7" * 30,
])
def test_bad_ui_input_is_a_400_page(served, url):
    resp = httpx.get(served.url + url, cookies={COOKIE: READ}, timeout=30)
    assert resp.status_code == 400, (resp.status_code, resp.text[:300])
    assert "text/html" in resp.headers["content-type"] and 'id="error"' in resp.text


@pytest.mark.parametrize("url", ["/v1/objects?path=/acme&vid=" + "9" * 5000, "/v1/resolve?ref=" + "9" * 5000,
                                 "/v1/commits?since=" + "9" * 40])
def test_huge_vids_are_4xx_on_the_api(served, url):
    resp = httpx.get(served.url + url, headers={"Authorization": f"Bearer {READ}"}, timeout=30)
    assert 400 <= resp.status_code < 500, (resp.status_code, resp.text[:300])


def test_a_non_ascii_digit_snapshot_is_not_vid_1(served):
    resp = httpx.get(served.url + "/ui?snapshot=%E0%A5%A7", cookies={COOKIE: READ}, timeout=30)  # '१'
    assert resp.status_code == 400 and "Catalog at vid 1" not in resp.text, resp.text[:300]
    assert "non-ASCII digits" in resp.text


@pytest.mark.parametrize("bad_id", [{"a": 1}, [1], True, 1.5, None])
def test_a_json_rpc_request_with_a_malformed_id_gets_a_json_rpc_error(served, bad_id):
    body = {"jsonrpc": "2.0", "id": bad_id, "method": "tools/list"}
    resp = httpx.post(served.url + "/mcp", json=body, timeout=30,
                      headers={"Authorization": f"Bearer {READ}", "Accept": "application/json, text/event-stream"})
    assert resp.status_code == 400, (resp.status_code, resp.text[:300])
    err = resp.json()
    assert err["jsonrpc"] == "2.0" and err["id"] is None and err["error"]["code"] == -32600, err
    assert "id" in err["error"]["message"]


def test_notifications_and_good_ids_still_work(served):
    h = {"Authorization": f"Bearer {READ}", "Accept": "application/json, text/event-stream"}
    note = httpx.post(served.url + "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h)
    assert note.status_code == 202
    for good in (7, "seven"):
        resp = httpx.post(served.url + "/mcp", json={"jsonrpc": "2.0", "id": good, "method": "tools/list"}, headers=h)
        assert resp.status_code == 200 and resp.json()["id"] == good
