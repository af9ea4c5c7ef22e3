"""The /ui page a data team uses (issue 38 item 5), server side, against a real uvicorn server on a
small catalog with findings (tests/ui_catalog.py): values formatted for people, findings and fixes
worded without agent tool names (a table of wordings covering every reason and fix the detector
emits), search with search_tables' ranking (compared with the MCP tool over its real client), the
inbox grouped by cause with bulk accept / dismiss through `decide_group`, failures answered with
their message and a hint, and `Authorization: Bearer` accepted like the login cookie. The same in
headless Chromium: tests/test_ui_browser.py."""

from __future__ import annotations

import html as htmllib
import re

import httpx
import pytest

import catalog_core as cc
import semantic as sm
from mcp_server.http import ui_format as fmt
from mcp_server.http.auth import Tokens, parse_tokens
from mcp_server.http.server import default_plugins, serve_in_thread
from semantic.history import clear_cache
from semantic.models import FIX_ACTIONS, REASONS
from tests.mcp_server.test_mcp_transports import http_client, run
from tests.ui_catalog import CUSTOMERS, DROP_GROUP, LEGACY, ORDERS, RENAME_GROUP, build

READ, WRITE = "page-read-token", "page-write-token"


# ------------------------------------------------------------------ formatting and wordings (no server)
@pytest.mark.parametrize(("fn", "value", "text"), [
    (fmt.number, 25928, "25,928"), (fmt.number, 1280.63, "1,280.63"), (fmt.number, 0, "0"),
    (fmt.number, 5_000_001.0, "5,000,001"), (fmt.number, None, ""), (fmt.number, "abc", "abc"),
    (fmt.size, 512, "512 B"), (fmt.size, 1536, "1.5 KiB"), (fmt.size, 3_201_930, "3.1 MiB"),
    (fmt.size, 2 * 1024 ** 3, "2.0 GiB"),
    (fmt.when, 1741611600.0, "2025-03-10 13:00 UTC"), (fmt.when, "2023-01-29T14:27:42.000000+00:00",
                                                        "2023-01-29 14:27:42 UTC"),
    (fmt.when, "2025-03-10", "2025-03-10"), (fmt.when, None, ""),
    (fmt.duration, "PT185H", "7 days 17 hours"), (fmt.duration, "P1D", "1 day"), (fmt.duration, "P7D", "1 week"),
    (fmt.duration, "PT1H30M", "1 hour 30 minutes"), (fmt.duration, "PT26H", "1 day 2 hours"),
    (fmt.duration, "soon", "soon"), (fmt.hours, 288.0, "12 days"), (fmt.hours, 0.5, "30 minutes"),
    (fmt.age, 5 * 3600, "5 hours"), (fmt.age, 60.3 * 86400, "60 days"), (fmt.age, 10, "just now"),
])
def test_values_are_formatted_for_people(fn, value, text):
    assert fn(value) == text


@pytest.mark.parametrize(("key", "value", "text"), [
    ("column.7.enum", ["placed", "shipped"], "placed, shipped"),
    ("grain", {"text": "one row per order", "keys": ["order_id"]}, "one row per order (unique on order_id)"),
    ("table.freshness_sla", "PT185H", "every 7 days 17 hours"),
    ("certified", True, "yes"),
    ("deprecated", {"reason": "replaced", "replaced_by": "a.b.c", "since": None}, "deprecated: replaced; use a.b.c instead"),
    ("relationship.customer", {"to": "a.b.c", "on": [["customer_id", "id"]], "cardinality": "many_to_one",
                               "condition": "a.b.c.is_current"},
     "joins a.b.c on customer_id = id (many rows to one), only where a.b.c.is_current"),
    ("metric.revenue", {"expression": "sum(x)", "filter": "y > 0", "unit": "usd"}, "sum(x) where y > 0, in usd"),
    ("column.2.labels", {"A": "active", "C": "closed"}, "A = active, C = closed"),
])
def test_annotation_values_read_as_text(key, value, text):
    assert fmt.value_text(key, value) == text


def test_every_reason_and_fix_the_detector_emits_has_a_wording():
    assert set(REASONS) <= set(fmt.REASON_WORDS), set(REASONS) - set(fmt.REASON_WORDS)
    assert set(FIX_ACTIONS) <= set(fmt.FIX_WORDS), set(FIX_ACTIONS) - set(fmt.FIX_WORDS)
    import importlib
    import inspect
    from pathlib import Path

    # every module of the detector's package (semantic.staleness the attribute is also a function)
    home = Path(inspect.getfile(importlib.import_module("semantic.staleness.core"))).parent
    src = "".join(p.read_text() for p in sorted(home.glob("*.py")))
    kinds = set(re.findall(r'cause_of\("(\w+)"', src)) | set(re.findall(r'"(\w+)" if versioning', src))
    assert len(kinds) >= 5, kinds  # the package's sources were read
    kinds |= {"schema", "late", "rewrite"}  # the kinds passed through a variable (a verified query's change)
    assert kinds and kinds <= set(fmt.CAUSE_WORDS), kinds - set(fmt.CAUSE_WORDS)
    for action in FIX_ACTIONS:  # each wording renders with no params at all, and names no tool
        text = fmt.fix_words({"action": action, "params": {}})
        assert text and not any(t in text for t in fmt.TOOL_NAMES if "_" in t), (action, text)
    for words in fmt.REASON_WORDS.values():
        assert not any(t in words for t in fmt.TOOL_NAMES if "_" in t)


def test_agent_phrasing_is_reworded_for_people():
    said = {
        'verified_query.5b needs its query re-verified: edit it with the corrected SQL (semcat review edit ITEM '
        '"SELECT ..."; it is run and verified before it is written), or dismiss the finding':
        "correct the query with edit & accept (it is run and verified before it is written), or dismiss",
        "the values status holds now were not read (metadata depth); review at data depth, or give the enum with "
        "edit_and_accept": "give the allowed values with edit & accept",
        "column.2.description: 'x' is not a column of t at vid 9; accept is not offered for it: edit the value "
        "(semcat review edit) or dismiss the item": "edit the value or dismiss the item",
        "verified_query.9 cannot be renamed automatically; use edit_and_accept": "correct it with edit & accept",
        "no open review item f-1 at vid 3 (decided already, or never raised); list the open ones with "
        "`semcat review list`": "reload the inbox",
        "check with get_column_values": "look at the column's values",
    }
    for text, words in said.items():
        out = fmt.for_people(text)
        assert words in out, out
        assert not any(t in out for t in fmt.TOOL_NAMES if "_" in t) and "semcat review" not in out, out


def test_cause_and_evidence_in_words():
    assert fmt.cause_words("rename:acme.mart.x@122:net_cents") == "acme.mart.x renamed column net_cents (vid 122)"
    assert fmt.cause_words("versions:acme.core.dim_customer@134") == \
        "acme.core.dim_customer started keeping versions of its rows (vid 134)"
    rows = dict(fmt.evidence_rows({"vids": [122, 74], "times": [1734674400.0], "values": {
        "column": "g_cents", "candidate": "g_usd", "basis_stats": {"min": 959, "max": 1900854, "null_count": 0},
        "usual_interval_hours": 300.0, "reasons": {"x": "y"}}}))
    assert rows["commits"] == "vid 74, vid 122" and rows["when"] == "2024-12-20 06:00 UTC"
    assert rows["now called"] == "g_usd" and rows["statistics when annotated"] == "min 959, max 1,900,854, nulls 0"
    assert rows["usual interval between loads"] == "12 days 12 hours" and "reasons" not in rows
    assert dict(fmt.evidence_rows({"vids": [1], "values": {"now": "amount"}}))["now called"] == "amount"
    assert dict(fmt.evidence_rows({"vids": [1], "values": {"now": 1741611600.0}}))["judged at"] == \
        "2025-03-10 13:00 UTC"


# ------------------------------------------------------------------ the page over a real server
class Served:
    def __init__(self, handle, cat, info) -> None:
        self.url, self.cat, self.info, self.handle = handle.url, cat, info, handle

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, timeout=120, headers=headers)


@pytest.fixture
def served(tmp_path):
    cat = cc.Catalog.open(str(tmp_path / "data"))
    info = build(cat, str(tmp_path / "files"))
    tokens = Tokens(parse_tokens(f"{READ}:read\n{WRITE}:write source=human name=steward\n", "test"))
    with serve_in_thread(cat, tokens=tokens, plugins=default_plugins()) as handle:
        handle.app.state.mcp_options = {"now": info["now"]}
        yield Served(handle, cat, info)
    clear_cache()
    cat.close()


def text_of(page: str) -> str:
    """The page's visible text: no tags, scripts, hidden inputs or attribute values."""
    page = re.sub(r"<script.*?</script>", " ", page, flags=re.S)
    return htmllib.unescape(re.sub(r"<[^>]+>", " ", page))


def group_of(page: str, group: str) -> str:
    m = re.search(r'<section class="group[^"]*"[^>]*data-group="' + re.escape(group) + r'".*?</section>', page, re.S)
    assert m, f"no group {group} in the inbox"
    return m.group(0)


def open_items(s: Served) -> list:
    clear_cache()
    return sm.review_items(s.cat, now=s.info["now"], limit=500).items


def test_bearer_header_reads_and_writes_like_the_cookie(served):
    item = next(i for i in open_items(served) if i.table == CUSTOMERS and i.reason == "schema_changed")
    with served.client() as anon, served.client(READ) as reader, served.client(WRITE) as writer:
        assert anon.get("/ui/inbox").status_code == 401  # the login page
        page = reader.get("/ui/inbox")
        assert page.status_code == 200 and f'id="item-{item.id}"' in page.text
        assert "button class=\"accept\"" not in page.text.replace("type=\"submit\" ", "")
        refused = reader.post(f"/ui/review/{item.id}/dismiss", data={"reason": "x"})
        assert refused.status_code == 403 and "read" in refused.json()["message"]
        # no cookie, no CSRF token: the header is the credential, as on /v1
        assert not writer.cookies
        done = writer.post(f"/ui/review/{item.id}/dismiss", data={"reason": "the description still holds"})
        assert done.status_code == 200 and 'data-done="dismiss"' in done.text, done.text[:400]
    assert item.id not in {i.id for i in open_items(served)}
    [rec] = [a for a in sm.read_annotations(served.cat, CUSTOMERS) if a.key == "review." + item.id]
    assert rec.provenance.author == "steward"  # the token's principal


def test_a_cookie_post_still_needs_the_csrf_token(served):
    item = open_items(served)[0]
    with served.client() as c:
        login = c.get("/ui/login")
        csrf = re.search(r'name="csrf" value="([^"]+)"', login.text).group(1)
        assert c.post("/ui/login", data={"token": WRITE, "csrf": csrf}).status_code == 303
        resp = c.post(f"/ui/review/{item.id}/dismiss", data={"reason": "no csrf"})
        assert resp.status_code == 403 and "CSRF" in resp.text
        # the failure is a fragment the page swaps in: the message and what to do
        assert 'class="failed"' in resp.text and 'data-failed="403"' in resp.text and "Reload the page" in resp.text
    assert item.id in {i.id for i in open_items(served)}


def test_search_ranks_like_search_tables(served):
    query = "orders amount customers"

    async def mcp(c):
        r = await c.call_tool("search_tables", {"query": query, "limit": 50})
        assert not r.is_error, r.content[0].text
        return [t["name"] for t in r.structured_content["tables"]]
    expected = run(http_client(served.url, READ), mcp)
    assert len(expected) >= 2
    with served.client(READ) as c:
        first = c.get("/ui/search", params={"q": query, "limit": 1})
        assert first.status_code == 200
        names = re.findall(r'<div class="hit" data-table="([^"]+)"', first.text)
        more = re.search(r'id="more" href="([^"]+)"', first.text)
        assert names == expected[:1] and more, first.text[:2000]
        rest = c.get(htmllib.unescape(more.group(1)).replace("limit=1", "limit=50"))
        names += re.findall(r'<div class="hit" data-table="([^"]+)"', rest.text)
        assert names == expected
        assert f'href="/ui/table/{expected[0]}"' in first.text  # a hit links to its table's page
        everything = c.get("/ui/search", params={"q": ""})
        assert set(re.findall(r'data-table="([^"]+)"', everything.text)) == {ORDERS, CUSTOMERS, LEGACY}
        assert c.get("/ui/search", params={"q": "x", "cursor": "zz"}).status_code == 400
        assert c.get("/ui/search", params={"q": "x", "limit": "51"}).status_code == 400
        nothing = c.get("/ui/search", params={"q": "zebra giraffe"})
        assert "No table matches" in nothing.text


def test_the_inbox_shows_one_group_per_cause_in_words(served):
    group = RENAME_GROUP.format(vid=served.info["rename_vid"])
    members = [i for i in open_items(served) if i.group == group]
    # the verified query's rewrite checks out too (the same answer across the rename: `_requery`)
    assert len(members) == 4 and sum(i.acceptable for i in members) == 4
    with served.client(READ) as reader, served.client(WRITE) as writer:
        read_page = reader.get("/ui/inbox").text
        page = writer.get("/ui/inbox").text
    sec = group_of(page, group)
    assert 'data-count="4"' in sec and 'data-acceptable="4"' in sec
    words = text_of(sec)
    assert "acme.core.orders renamed column amount_cents" in words  # the cause, in words
    evidence = text_of(re.search(r'<table class="evidence">.*?</table>', sec, re.S).group(0))
    assert re.search(r"now called\s+amount\b", evidence) and "column amount_cents" in " ".join(evidence.split())
    assert "accept the 4 whose fix checks out" in words and "dismiss all 4" in words
    assert "cannot be accepted as suggested" not in words
    mixed = text_of(group_of(page, DROP_GROUP.format(vid=served.info["drop_vid"])))
    assert "accept the 1 whose fix checks out" in mixed and "dismiss all 2" in mixed
    assert "1 cannot be accepted as suggested" in mixed
    assert "no fix the evidence supports" in mixed  # the refused item's reason, shown
    assert "bulk-accept" not in group_of(read_page, group)  # a read token sees no buttons
    # bounded: groups per page, a `more` link with its cursor, every group once over the pages
    with served.client(READ) as reader:
        seen, url = [], "/ui/inbox?limit=2"
        for _ in range(10):
            pg = reader.get(url).text
            seen += re.findall(r'<section class="group[^"]*" id="g-[0-9a-f]+" data-group="([^"]+)"', pg)
            more = re.search(r'id="more" href="([^"]+)"', pg)
            if not more:
                break
            url = htmllib.unescape(more.group(1))
        assert reader.get("/ui/inbox?cursor=x").status_code == 400
    groups = {i.group or i.id for i in members + open_items(served)}
    assert len(seen) == len(set(seen)) == len(groups) and len(seen) > 2
    for name in re.findall(r"[a-z]+_[a-z_]+", " ".join(fmt.TOOL_NAMES)):
        assert name not in text_of(page), name
    # every reason shown is worded, never the reason's code
    assert "column_renamed" not in text_of(page) and "A column it describes was renamed" in text_of(page)


def test_bulk_accept_decides_the_group_and_shows_what_was_refused(served):
    group = RENAME_GROUP.format(vid=served.info["rename_vid"])
    with served.client(WRITE) as c:
        resp = c.post("/ui/group/accept", data={"group": group, "note": "checked the values"})
        assert resp.status_code == 200, resp.text[:500]
        assert 'data-decided="4"' in resp.text and 'data-skipped="0"' in resp.text
        words = text_of(resp.text)
        assert "Accepted 4 items" in words
        # the section it replaces has the same id
        assert re.search(r'<section class="group done" id="g-[0-9a-f]{10}"', resp.text)
        assert not [i for i in open_items(served) if i.group == group]
        anns = {a.key: a for a in sm.read_annotations(served.cat, ORDERS)}
        m = anns["metric.average_order"]
        assert m.provenance.author == "steward" and m.value["expression"] == "avg(amount)"
        q = next(a for a in anns.values() if a.kind == "verified_query")
        assert q.value["sql"] == "SELECT SUM(amount) FROM acme.core.orders" and q.value["verified_by"] == "steward"
        # a group with an item that has no fix: bulk accept decides the other and leaves it open, with why
        schema = DROP_GROUP.format(vid=served.info["drop_vid"])
        resp = c.post("/ui/group/accept", data={"group": schema})
        assert 'data-decided="1"' in resp.text and 'data-skipped="1"' in resp.text, resp.text[:800]
        words = text_of(resp.text)
        assert "Accepted 1 item" in words and "1 left open" in words
        assert "no fix the evidence supports" in words and "edit_and_accept" not in words
        assert [i.annotation for i in open_items(served) if i.group == schema] == ["metric.regions"]
        # dismissing it needs a reason: refused with the message and a hint
        bad = c.post("/ui/group/dismiss", data={"group": schema})
        assert bad.status_code == 400 and 'data-failed="400"' in bad.text and "reason" in text_of(bad.text)
        ok = c.post("/ui/group/dismiss", data={"group": schema, "reason": "regions move to another table"})
        assert ok.status_code == 200 and 'data-decided="1"' in ok.text
        assert not [i for i in open_items(served) if i.group == schema]
        gone = c.post("/ui/group/dismiss", data={"group": schema, "reason": "again"})
        assert gone.status_code == 404 and "no open review items in group" in text_of(gone.text)
        assert "semcat review" not in text_of(gone.text)


def test_a_refused_edit_answers_its_reason(served):
    item = next(i for i in open_items(served) if i.annotation == "metric.revenue")
    with served.client(WRITE) as c:
        resp = c.post(f"/ui/review/{item.id}/edit", data={"value": '{"expression": "sum(no_such_column)"}'})
    assert resp.status_code == 400, resp.text[:400]
    assert f'id="item-{item.id}"' in resp.text and 'data-failed="400"' in resp.text
    words = text_of(resp.text)
    assert "no_such_column" in words and "Nothing was written" in words
    assert item.id in {i.id for i in open_items(served)}


def test_the_table_page_shows_values_for_people_and_json_on_request(served):
    with served.client(READ) as c:
        page = c.get(f"/ui/table/{ORDERS}").text
        raw = c.get(f"/ui/table/{ORDERS}", params={"raw": "1"}).text
        js = c.get("/ui/static/ui.js")
    words = text_of(page)
    assert "2,000" in words and re.search(r"\d+\.\d KiB", words)  # rows, bytes
    assert "every 7 days 17 hours" in words and "PT185H" not in words  # the SLA
    assert "placed, shipped, delivered" in words and '["placed"' not in page  # the enum
    assert "one row per order (unique on order_id)" in words
    assert 'id="raw-toggle" data-raw="0"' in page and "show the stored JSON" in words
    assert 'id="raw-toggle" data-raw="1"' in raw
    assert "&#34;placed&#34;" in raw or '"placed"' in htmllib.unescape(raw)  # JSON, on request
    assert "PT185H" in text_of(raw)
    # failures are shown: the page loads the handler and the server's hints
    assert js.status_code == 200 and "htmx:beforeSwap" in js.text
    assert '<script src="/ui/static/ui.js"></script>' in page and 'id="failure-hints"' in page
    with served.client(READ) as c:
        legacy = text_of(c.get(f"/ui/table/{LEGACY}").text)
    assert f"deprecated: replaced; use {ORDERS} instead" in legacy or f"use {ORDERS}" in legacy


def test_the_lineage_page_shows_what_a_build_read_and_what_was_built_from_it(served):
    from semantic.lineage import record_lineage

    read = served.cat.latest_vid
    record_lineage(served.cat, CUSTOMERS, {ORDERS: read}, job="build customers")
    clear_cache()
    with served.client(READ) as c:
        table = c.get(f"/ui/table/{CUSTOMERS}").text
        up = c.get(f"/ui/table/{CUSTOMERS}/lineage")
        down = c.get(f"/ui/table/{ORDERS}/lineage")
        none = c.get(f"/ui/table/{LEGACY}/lineage")
        missing = c.get("/ui/table/acme.core.nope/lineage")
    assert 'id="lineage-link"' in table
    assert up.status_code == 200 and 'id="lineage-upstream"' in up.text
    assert f"{CUSTOMERS}, which read it at vid {read}" in text_of(up.text) and "No table records" in text_of(up.text)
    assert f'href="/ui/table/{ORDERS}"' in up.text
    assert down.status_code == 200 and f'href="/ui/table/{CUSTOMERS}"' in down.text
    assert f"{ORDERS} as of vid {read}" in text_of(down.text)
    assert 'id="lineage-upstream-none"' in down.text  # the orders table's own build recorded nothing
    assert none.status_code == 200 and "No recorded inputs" in text_of(none.text)
    assert missing.status_code == 404, missing.status_code
