"""Issue 35 item 1, the web page: every /ui form carries a CSRF token bound to the browser's
session (an HMAC of it), and a POST without the right one changes nothing; the session cookie is
`HttpOnly; SameSite=Strict`; `?token=` works only on a GET of /ui/login that a user opened
themselves (`Sec-Fetch-Site: none` or same-origin), sets the cookie and redirects to a URL without
it; logging in by POST needs the login form's CSRF token (no login CSRF). The same flow in a real
Chromium is tests/security/test_ui_csrf_browser.py."""

from __future__ import annotations

import re

import httpx
import pytest

import semantic as sm
from tests.security.conftest import READ, STEWARD, WRITE, start

COOKIE = "semcat_token"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture
def item(engine) -> str:
    sm.annotate(engine, "acme.core.dim_store", {"description": "stores, by an agent"}, author="agent:x",
                source="agent")
    [it] = sm.review_items(engine).items
    return it.id


def csrf_of(html: str) -> str:
    m = re.search(r'name="csrf" value="([^"]+)"', html)
    assert m, "no csrf field in the page"
    return m.group(1)


def login(c: httpx.Client, token: str) -> None:
    page = c.get("/ui/login")
    assert page.status_code == 200
    resp = c.post("/ui/login", data={"token": token, "next": "/ui/inbox", "csrf": csrf_of(page.text)})
    assert resp.status_code == 303 and resp.headers["location"] == "/ui/inbox", resp.text[:300]


def still_open(engine, item_id: str) -> bool:
    return any(i.id == item_id for i in sm.review_items(engine).items)


def test_a_review_post_needs_the_pages_csrf_token(engine, mode, item):
    with start(engine, mode == "tokens") as server, httpx.Client(base_url=server.url, timeout=60) as c:
        if mode == "tokens":
            login(c, STEWARD)
        inbox = c.get("/ui/inbox")
        assert inbox.status_code == 200 and f'id="item-{item}"' in inbox.text
        token = csrf_of(inbox.text)
        for data in ({"reason": "no csrf"}, {"reason": "wrong", "csrf": token[:-2] + "xx"}, {"csrf": ""}):
            resp = c.post(f"/ui/review/{item}/dismiss", data=data)
            assert resp.status_code == 403 and "CSRF" in resp.text, resp.text[:300]
        assert still_open(engine, item)
        # another browser session's token is not this one's
        with httpx.Client(base_url=server.url, timeout=60) as other:
            if mode == "tokens":
                login(other, STEWARD)
            other_token = csrf_of(other.get("/ui/inbox").text)
        assert other_token != token
        assert c.post(f"/ui/review/{item}/dismiss", data={"csrf": other_token}).status_code == 403
        assert still_open(engine, item)
        resp = c.post(f"/ui/review/{item}/dismiss", data={"reason": "fine", "csrf": token})
        assert resp.status_code == 200 and 'data-done="dismiss"' in resp.text, resp.text[:300]
        assert not still_open(engine, item)


def test_the_session_cookie_is_httponly_and_samesite_strict(engine):
    with start(engine, True) as server, httpx.Client(base_url=server.url, timeout=60) as c:
        page = c.get("/ui/login")
        resp = c.post("/ui/login", data={"token": WRITE, "csrf": csrf_of(page.text)})
        cookies = [v for k, v in resp.headers.multi_items() if k == "set-cookie" and v.startswith(COOKIE + "=")]
        assert cookies, resp.headers
        attrs = cookies[0].lower()
        assert "httponly" in attrs and "samesite=strict" in attrs and "path=/ui" in attrs and "secure" not in attrs


def test_logging_in_by_post_needs_the_login_forms_csrf_token(engine):
    with start(engine, True) as server, httpx.Client(base_url=server.url, timeout=60) as c:
        for data in ({"token": WRITE}, {"token": WRITE, "csrf": "forged"}):
            resp = c.post("/ui/login", data=data)
            assert resp.status_code == 403 and COOKIE not in resp.headers.get("set-cookie", "")
        resp = c.post("/ui/login?token=" + WRITE, data={})  # ?token= never works on a POST
        assert resp.status_code in (401, 403) and COOKIE not in resp.headers.get("set-cookie", "")
        assert COOKIE not in c.cookies


@pytest.mark.parametrize("site", ["cross-site", "same-site", None])
def test_a_token_link_from_elsewhere_sets_no_cookie(engine, site):
    with start(engine, True) as server, httpx.Client(base_url=server.url, timeout=60) as c:
        headers = {"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "navigate"} if site else {}
        for path in ("/ui/login", "/ui", "/ui/inbox"):
            resp = c.get(path, params={"token": READ, "next": "/ui/inbox"}, headers=headers)
            assert COOKIE not in resp.headers.get("set-cookie", ""), (path, resp.headers)
            assert resp.status_code in (200, 401, 403) and READ not in resp.text  # the token is not echoed either


def test_a_token_link_opened_by_the_user_logs_in_and_drops_the_token_from_the_url(engine):
    with start(engine, True) as server, httpx.Client(base_url=server.url, timeout=60) as c:
        for site in ("none", "same-origin"):
            c.cookies.clear()
            resp = c.get("/ui/login", params={"token": READ, "next": "/ui/inbox"},
                         headers={"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "navigate"})
            assert resp.status_code == 303 and resp.headers["location"] == "/ui/inbox", resp.text[:200]
            assert READ not in resp.headers["location"] and c.cookies.get(COOKIE) == READ
        # on any other page ?token= is not a login
        c.cookies.clear()
        resp = c.get("/ui", params={"token": WRITE}, headers={"Sec-Fetch-Site": "none"})
        assert resp.status_code == 401 and COOKIE not in resp.headers.get("set-cookie", "")


def test_a_read_token_cannot_decide(engine, item):
    with start(engine, True) as server, httpx.Client(base_url=server.url, timeout=60) as c:
        login(c, READ)
        assert 'name="csrf"' not in c.get("/ui/inbox").text  # no forms to decide with
        token = csrf_of(c.get("/ui/login").text)  # a valid CSRF token of this session all the same
        resp = c.post(f"/ui/review/{item}/dismiss", data={"csrf": token})
        assert resp.status_code == 403 and "write" in resp.text
        assert still_open(engine, item)


def test_an_agents_token_cannot_decide_on_the_page(engine, item):
    """A review decision is recorded as a person's (source human): an agent's write token is refused
    with a 403 that says so, by cookie or by Bearer, and the item stays open; a person's token decides."""
    with start(engine, True) as server, httpx.Client(base_url=server.url, timeout=60) as c:
        login(c, WRITE)
        token = csrf_of(c.get("/ui/inbox").text)
        resp = c.post(f"/ui/review/{item}/dismiss", data={"reason": "fine", "csrf": token})
        assert resp.status_code == 403 and "person" in resp.text, resp.text[:300]
        bearer = httpx.post(f"{server.url}/ui/review/{item}/dismiss", data={"reason": "fine"},
                            headers={"Authorization": f"Bearer {WRITE}"}, timeout=60)
        assert bearer.status_code == 403 and "person" in bearer.text, bearer.text[:300]
        assert still_open(engine, item)
        resp = httpx.post(f"{server.url}/ui/review/{item}/dismiss", data={"reason": "fine"},
                          headers={"Authorization": f"Bearer {STEWARD}"}, timeout=60)
        assert resp.status_code == 200, resp.text[:300]
        assert not still_open(engine, item)
