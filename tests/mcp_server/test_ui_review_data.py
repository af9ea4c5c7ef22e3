"""The /ui inbox and the data-depth pass (issue 45 items 3 and 4), over a real uvicorn server on a
catalog built in the test: "check the data now" (POST /ui/scan) stores the pass, the inbox then
shows its findings marked with the vid it read, accept of a finding without a fix is refused with
what to do, and a group's bulk accept never includes such an item and says how many it skipped
and why. The browser flows of the page are in tests/test_ui_browser.py (slow tier)."""

from __future__ import annotations

import re

import httpx
import pytest

import catalog_core as cc
import semantic as sm
from eval.fixtures.lakes import LakeBuilder
from mcp_server.http.auth import Tokens, parse_tokens
from mcp_server.http.server import default_plugins, serve_in_thread
from semantic.history import clear_cache

T = "acme.core.orders"
WRITE = "ui-data-write"


@pytest.fixture
def served(tmp_path):
    cat = cc.Catalog.open(str(tmp_path / "data"))
    lk = LakeBuilder(cat, tmp_path / "files")
    lk.table(T, [("id", "bigint"), ("status", "string"), ("x", "bigint")], at=0,
             rows={"id": [1, 2, 3], "status": ["a", "c", "a"], "x": [1, 1, 1]})
    sm.annotate(cat, T, {"description": "orders", "grain": {"text": "one row per id", "keys": ["id"]}},
                author="ann", time=lk.day(1))
    sm.annotate(cat, T, {"enum": ["a", "c"]}, column="status", author="ann", time=lk.day(1))
    lk.append(T, {"id": [4], "status": ["b"], "x": [1]}, at=2)  # inside the old min/max: only the data shows it
    lk.evolve(T, drop=["x"], at=3)  # the description and grain: no fix the evidence supports (a drop: an added
    #                                 nullable column alone is routine)
    tokens = Tokens(parse_tokens(f"{WRITE}:write source=human name=steward\n", "test"))
    with serve_in_thread(cat, tokens=tokens, plugins=default_plugins()) as handle:
        handle.app.state.mcp_options = {"now": lk.day(4)}
        yield handle.url, cat, lk.day(4)
    clear_cache()
    cat.close()


def rows(page: str) -> dict[str, str]:
    return {m.group(1): m.group(0) for m in re.finditer(r'<tr id="item-(f-[0-9a-f]{10})".*?</tr>', page, re.S)}


def test_the_inbox_checks_the_data_and_never_accepts_what_has_no_fix(served):
    url, cat, now = served
    with httpx.Client(base_url=url, timeout=120, headers={"Authorization": f"Bearer {WRITE}"}) as c:
        page = c.get("/ui/inbox").text
        assert "The data has not been checked yet" in page and 'class="scan-now"' in page
        assert 'data-depth="data"' not in page
        done = c.post("/ui/scan", data={})
        assert done.status_code == 200 and 'id="scan-result"' in done.text, done.text[:500]
        assert "1 finding only the data shows" in done.text
        clear_cache()
        page = c.get("/ui/inbox").text
        items = {i.id: i for i in sm.review_items(cat, now=now).items}
        [enum] = [i for i in items.values() if i.reason == "enum_violated"]
        row = rows(page)[enum.id]
        assert 'data-depth="data"' in row and f"data · vid {enum.scan_vid}" in row and 'class="accept"' in row
        assert f"Data checked at vid {enum.scan_vid}" in page
        [desc] = [i for i in items.values() if i.annotation == "table.description"]
        assert 'class="accept"' not in rows(page)[desc.id] and "no fix the evidence supports" in rows(page)[desc.id]
        assert "semcat review" not in rows(page)[desc.id]  # worded for people
        refused = c.post(f"/ui/review/{desc.id}/accept", data={})
        assert refused.status_code == 400 and "no fix the evidence supports" in refused.text
        before = cat.resolve(None)
        res = c.post("/ui/group/accept", data={"group": desc.group})
        assert res.status_code == 200 and 'data-decided="0"' in res.text, res.text[:800]
        assert re.search(r'data-code="no_fix">[12] without a fix the evidence supports', res.text), res.text
        assert cat.resolve(None) == before
        ok = c.post(f"/ui/review/{enum.id}/accept", data={})
        assert ok.status_code == 200 and 'data-done="accept"' in ok.text, ok.text[:500]
    clear_cache()
    left = {i.id for i in sm.review_items(cat, now=now).items}
    assert enum.id not in left and desc.id in left
