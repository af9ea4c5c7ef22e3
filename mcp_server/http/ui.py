"""The data team's web page at `/ui` (issue 27 item 3), served by `semcat serve`: server-rendered
Jinja2 templates and htmx (vendored in mcp_server/http/static, version in htmx.VERSION; no
JavaScript build step, nothing loaded from elsewhere).

    GET  /ui                       catalog browser: namespaces and tables with status, snapshot picker
    GET  /ui/table/{name}          a table: schema, stats, annotations with provenance and age,
                                   freshness, relationships, metrics, findings
    GET  /ui/table/{name}/history  who wrote which annotation at which vid, on what basis
    GET  /ui/search?q=             the tables for a need, ranked as the MCP tool `search_tables` ranks
                                   them (the same semantic function), paged with a cursor
    GET  /ui/inbox                 open review items grouped by cause (one underlying change), each
                                   group with its evidence and bulk accept / dismiss; per-item
                                   accept / edit / dismiss (htmx posts)
    POST /ui/review/{id}/{action}  accept | edit | dismiss; answers the item's row, re-rendered
    POST /ui/group/{decision}      accept | dismiss every item of a group (`semantic.decide_group`,
                                   the CLI's `semcat review --group`); answers the group, re-rendered
                                   with what was decided and what was refused, with why
    POST /ui/scan                  run the data-depth check now and store its findings for the inbox
                                   (`semantic.review.scan`, the CLI's `semcat review scan`); the inbox
                                   marks each data-depth item with the vid that pass read
    GET  /ui/diff?from=&to=        objects changed between two snapshots (bounded)
    GET|POST /ui/login             the token form; POST it (with its CSRF token) to log in, or open
                                   /ui/login?token=T yourself (Sec-Fetch-Site none/same-origin): sets
                                   the cookie and redirects to a URL without the token

Every page takes `?snapshot=` (vid, snapshot name or ISO time: time travel) and shows values for
people (mcp_server.http.ui_format: numbers, sizes, times and durations in words, findings and their
fixes worded without agent tool names); `?raw=1` shows the stored JSON instead. A failed action
(any 4xx/5xx) is shown in the page with its message (static/ui.js), never dropped. Auth: the same
tokens as the API, from the `semcat_token` cookie or an `Authorization: Bearer` header, which the Guard (mcp_server.http.asgi) checks and puts in
scope["state"] (`role`); read tokens see, write tokens act (a read token's action answers 403). With
auth off (loopback only) everyone on this machine may act. Every list is bounded (`limit`, a cursor
or `more` link, and a shown `truncated` note).

CSRF (issue 35): every POST form carries `csrf`, an HMAC (a per-process secret) of the browser's
`semcat_session` cookie and its token cookie, so only a page this server rendered for this browser
session can post; both cookies are `HttpOnly; SameSite=Strict; Path=/ui` (and `Secure` over https),
and the Guard refuses a foreign Origin before. A request authenticated by an `Authorization`
header (a program; no browser sends one on its own, and another site's page cannot add one without a
preflight the Guard refuses) needs no CSRF token. Login needs the login form's CSRF token, so another
site cannot log a browser in with the attacker's token (login CSRF).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from catalog_core import lake
from catalog_core.errors import AuthError, CatalogError, InvalidValueError, NotFoundError, PermissionDeniedError
from mcp_server.http import ui_format as fmt
from mcp_server.http.api import parse_ref
from mcp_server.http.asgi import UI_COOKIE
from mcp_server.http.jsonsafe import loads_bounded
from mcp_server.http.policy import SMALL_BODY, requires
from mcp_server.http.writer import writer_of

__all__ = ["build_ui_router", "UI_PREFIX", "COOKIE", "SESSION_COOKIE"]

UI_PREFIX = "/ui"
COOKIE = UI_COOKIE
SESSION_COOKIE = "semcat_session"
HERE = os.path.dirname(os.path.abspath(__file__))
LIST_LIMIT = 200
MAX_INBOX_LIMIT = 500
MAX_GROUPS = 200                 # groups per inbox page
SEARCH_LIMIT = (20, 50)          # search hits per page: default, most (search_tables' bounds: 10, 50)
_PAGE = {"auth": "cookie", "body": "none"}
_FORM = {"auth": "cookie", "body": "form", "max_bytes": SMALL_BODY}
_SELF_OPENED = ("none", "same-origin")  # Sec-Fetch-Site of a URL the user opened, or this site's own link


def _env() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(HERE, "templates")),
                             autoescape=jinja2.select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)
    env.filters["when"] = fmt.when
    env.filters["age"] = fmt.age
    env.filters["short"] = _short
    env.filters["number"] = fmt.number
    env.filters["size"] = fmt.size
    env.filters["duration"] = fmt.duration
    env.filters["hours"] = fmt.hours
    env.filters["people"] = fmt.for_people
    env.filters["reason_words"] = fmt.reason_words
    env.filters["fixes_words"] = fmt.suggestion_words
    env.filters["cause_words"] = fmt.cause_words
    env.filters["evidence"] = fmt.evidence_rows
    env.filters["raw"] = fmt.raw
    env.globals["value_text"] = fmt.value_text
    env.globals["failure_hints"] = {str(k): v for k, v in FAILURE_HINTS.items()}
    env.filters["urlq"] = lambda s: quote(str(s), safe="")
    return env


def _short(v: Any, n: int = 160) -> str:
    text = v if isinstance(v, str) else json.dumps(v, default=str)
    return text if len(text) <= n else text[: n - 1] + "…"


def _role(request: Request) -> str | None:
    """The role the Guard found for this request's cookie (None: no valid token)."""
    role = request.scope.get("state", {}).get("role")
    return role if isinstance(role, str) else None


def _session(request: Request) -> tuple[str, bool]:
    """(this browser's session id, whether it is new and needs its cookie set)."""
    sid = request.cookies.get(SESSION_COOKIE) or ""
    if 16 <= len(sid) <= 64 and sid.isascii():
        return sid, False
    if "semcat_new_session" not in request.scope.setdefault("state", {}):
        request.scope["state"]["semcat_new_session"] = secrets.token_urlsafe(24)
    return str(request.scope["state"]["semcat_new_session"]), True


def csrf_token(request: Request) -> str:
    """The CSRF token of this browser session: an HMAC of its session id and its token cookie."""
    sid, _new = _session(request)
    token = request.cookies.get(COOKIE) or ""
    secret: bytes = request.app.state.ui_secret
    return hmac.new(secret, f"{sid}\n{token}".encode(), hashlib.sha256).hexdigest()


def _by_header(request: Request) -> bool:
    """Whether the Guard authenticated this request by its `Authorization` header (tokens on): a
    program's call, not a browser's ambient cookie, so no CSRF token is needed."""
    return (bool(getattr(request.app.state, "tokens", None)) and bool(request.headers.get("authorization"))
            and _role(request) is not None)


def _decider(request: Request, form: dict[str, list[str]]) -> str:
    """Who decides a review item: the authenticated principal, who must be a person (a decision is
    recorded as a person's certification, source `human`); an agent's or a service's token is refused
    (403) however it reached the page, cookie or Bearer. Without auth, the form's name (the local
    person), else "web"."""
    who = writer_of(request.scope.get("state"))
    if not who.authenticated:
        return (form.get("author") or [""])[0].strip() or "web"
    if who.source != "human":
        raise PermissionDeniedError(
            f"{who.principal} is {'an agent' if who.source == 'agent' else 'a service'}'s token: review decisions are "
            "recorded as a person's and need a person's token (a static token with source=human, or an OAuth "
            "token whose source claim is human); agents propose through annotate", role=who.source, needed="human")
    return who.principal


def _csrf_ok(request: Request, form: dict[str, list[str]]) -> bool:
    if _by_header(request):
        return True
    sent = (form.get("csrf") or [""])[0]
    return (SESSION_COOKIE in request.cookies and bool(sent)
            and hmac.compare_digest(sent.encode(), csrf_token(request).encode()))


_CSRF_REFUSED = ("this form's CSRF token is missing or stale (the page is from another session, or the "
                 "server restarted): reload the page and try again")


def _form(body: bytes) -> dict[str, list[str]]:
    try:
        return parse_qs(body.decode("utf-8"), max_num_fields=50)
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidValueError(f"the form is not UTF-8 form data ({exc}); submit it from the page") from None


def _set_cookie(request: Request, resp: Response, name: str, value: str) -> None:
    resp.set_cookie(name, value, httponly=True, samesite="strict", path=UI_PREFIX,
                    secure=request.url.scheme == "https")


def _next(value: str | None) -> str:
    """Where to go after logging in: a /ui path of this server, never another site."""
    nxt = value or UI_PREFIX
    ok = nxt.startswith(UI_PREFIX) and not nxt.startswith("//") and "\\" not in nxt and all(ord(c) > 31 for c in nxt)
    return nxt if ok else UI_PREFIX


def _limit(text: str | None, default: int, most: int = MAX_INBOX_LIMIT) -> int:
    if text is None or text == "":
        return default
    if not (text.isascii() and text.isdigit()) or len(text) > 6 or not 1 <= int(text) <= most:
        raise InvalidValueError(f"limit must be a whole number from 1 to {most}, got {text[:20]!r}")
    return int(text)


def _offset(cursor: str | None) -> int:
    """The offset of a `more` link's cursor (`o:N`), 0 for none."""
    if not cursor:
        return 0
    if not (cursor.startswith("o:") and cursor[2:].isascii() and cursor[2:].isdigit() and len(cursor) <= 12):
        raise InvalidValueError(f"cursor {cursor[:20]!r} is not one this page gave; follow the page's 'more' link, "
                                "or leave it out for the first page")
    return int(cursor[2:])


def _gid(key: str) -> str:
    """A group's HTML id: stable for its key, safe in a CSS selector."""
    return "g-" + hashlib.sha1(key.encode()).hexdigest()[:10]


# what a person can do after a failed action, by HTTP status (the message says what failed)
FAILURE_HINTS: dict[int, str] = {
    400: "Nothing was written. Correct the value, or dismiss the item.",
    401: "Log in again, then repeat the action.",
    403: "Nothing was written. Reload the page (or log in with a token that may decide) and try again.",
    404: "Someone decided it already, or it is no longer raised: reload the inbox.",
    409: "Someone else changed it at the same time; nothing was written: reload the inbox and decide again.",
    413: "The form is too large: shorten the note or the value.",
    429: "The server is busy: wait a moment and try again.",
}


def failure_hint(status: int) -> str:
    return FAILURE_HINTS.get(status, "Nothing was written; reload the page and try again." if status < 500 else
                             "The server did not finish; reload the page to see what was written.")


class _Ctx:
    """One request's view: the catalog, the role, the snapshot and the clock."""

    def __init__(self, request: Request) -> None:
        app = request.app
        self.request = request
        self.cat = app.state.catalog
        self.now = (getattr(app.state, "mcp_options", None) or {}).get("now")
        self.token = request.cookies.get(COOKIE)
        self.role = _role(request)
        snap = request.query_params.get("snapshot") or None
        self.snapshot = snap
        self.vid = self.cat.resolve(parse_ref(snap))
        self.latest = self.cat.resolve(None)
        self.csrf = csrf_token(request)

    @property
    def can_write(self) -> bool:
        return self.role == "write"


def _tables(ctx: _Ctx) -> dict[str, Any]:
    """The tables at the page's vid the principal may describe (grants, issue 48), by dotted name."""
    from mcp_server.http.access import Access

    objs = ctx.cat.query(lake.tables_query(), vid=ctx.vid)
    limit = Access.of(ctx.cat, ctx.request.scope.get("state"))
    return {lake.name_of(o.path): o for o in objs if limit is None or limit.may("describe", o.path)}


def _require(ctx: _Ctx, name: str) -> dict[str, Any] | None:
    """Under grants: refuse a table the principal may not describe exactly as a missing one (suggesting
    only tables it may see); the visible tables, or None when grants do not limit the principal."""
    from mcp_server.http.access import Access

    if Access.of(ctx.cat, ctx.request.scope.get("state")) is None:
        return None
    visible = _tables(ctx)
    if name not in visible:
        from semantic.errors import UnknownTableError, did_you_mean, suggest

        close = did_you_mean(name, list(visible))
        raise UnknownTableError(f"table {name!r} does not exist at vid {ctx.vid}" + suggest(close), did_you_mean=close)
    return visible


def _reviewable(ctx: _Ctx, item_id: str) -> Any:
    """The open review item `item_id`; under grants, deciding it needs `review` on its table, and an
    item of a table the principal may not see is refused as one that is not open (the same bytes)."""
    import semantic as sm
    from mcp_server.http import access

    state = ctx.request.scope.get("state")
    if access.Access.of(ctx.cat, state) is None:
        return sm.review_item(ctx.cat, item_id, now=ctx.now)
    try:
        item = sm.review_item(ctx.cat, item_id, now=ctx.now)
    except NotFoundError:
        raise access.no_item(item_id, ctx.latest) from None
    access.check_review(ctx.cat, state, [item.table], access.no_item(item_id, ctx.latest))
    return item


def _group_reviewable(ctx: _Ctx, group: str, table: str | None) -> None:
    """Under grants: a group is decided only when the principal may review every table of its items;
    a group with none it may see is refused as a missing group."""
    import semantic as sm
    from mcp_server.http import access
    from semantic.review import MAX_LIMIT

    state = ctx.request.scope.get("state")
    if access.Access.of(ctx.cat, state) is None:
        return
    if table:
        _require(ctx, table)
    items = [i for i in sm.review_items(ctx.cat, table, now=ctx.now, limit=MAX_LIMIT).items if i.group == group]
    shown = access.review_items_view(ctx.cat, state, items)
    missing = NotFoundError(f"no open review items in group {group!r} at vid {ctx.latest}; the groups are in "
                            "`semcat review list --json` (field group)", group=group)
    if not shown:
        raise missing
    if len(shown) < len(items):
        raise PermissionDeniedError(f"group {group!r} also has items on tables you may not see; decide the items "
                                    "you may review one by one", group=group, needed="review")
    access.check_review(ctx.cat, state, [i.table for i in shown], missing)


def _scannable(ctx: _Ctx, table: str | None) -> None:
    """Under grants: scanning a table needs `review` on it; scanning every table, `review` on all."""
    from mcp_server.http import access

    state = ctx.request.scope.get("state")
    limit = access.Access.of(ctx.cat, state)
    if limit is None:
        return
    if table:
        _require(ctx, table)
        access.check_review(ctx.cat, state, [table], NotFoundError(f"no table {table!r}"))
        return
    if not all(limit.may("review", p) for p in access.table_paths(ctx.cat)):
        raise PermissionDeniedError("scanning every table needs review on every table; scan the tables you may "
                                    "review one by one (the table field)", needed="review")


def build_ui_router(app: FastAPI) -> APIRouter:
    """The /ui routes (sync handlers: the semantic calls block, FastAPI runs them in threads)."""
    env = _env()
    router = APIRouter(prefix=UI_PREFIX, include_in_schema=False)

    app.state.ui_secret = secrets.token_bytes(32)  # CSRF tokens are valid for this process's lifetime

    def page(request: Request, ctx: _Ctx | None, template: str, status: int = 200, **data: Any) -> HTMLResponse:
        """Render `template`; every page gets this session's `csrf` and, the first time, its cookie."""
        html = env.get_template(template).render(ctx=ctx, prefix=UI_PREFIX, csrf=csrf_token(request), status=status,
                                                 hint=failure_hint(status) if status >= 400 else "", **data)
        resp = HTMLResponse(html, status_code=status)
        sid, new = _session(request)
        if new:
            _set_cookie(request, resp, SESSION_COOKIE, sid)
        return resp

    def login_page(request: Request, status: int, message: str | None, nxt: str) -> HTMLResponse:
        return page(request, None, "login.html", status, message=message, next=_next(nxt))

    def guarded(request: Request, fn: Callable[[_Ctx], Response]) -> Response:
        try:
            ctx = _Ctx(request)
        except CatalogError as exc:
            return page(request, None, "error.html", 400, message=exc.message)
        if ctx.role is None:
            return login_page(request, 401, "this server needs a token" if not ctx.token
                              else "unknown token; ask the server operator for a valid one", str(request.url.path))
        try:
            return fn(ctx)
        except CatalogError as exc:
            return page(request, ctx, "error.html", exc.http_status, message=exc.message)

    @router.get("/static/htmx.min.js")
    @requires("open", **_PAGE)
    def htmx() -> Response:
        return FileResponse(os.path.join(HERE, "static", "htmx.min.js"), media_type="text/javascript")

    @router.get("/static/ui.js")
    @requires("open", **_PAGE)
    def ui_js() -> Response:
        return FileResponse(os.path.join(HERE, "static", "ui.js"), media_type="text/javascript")

    @router.get("/login", response_class=HTMLResponse)
    @requires("open", **_PAGE)
    def login_form(request: Request) -> Response:
        """The login form; `?token=` logs in only when the user opened this URL (no other page did)."""
        q = request.query_params
        nxt = q.get("next") or UI_PREFIX
        token = q.get("token")
        if token is None:
            return login_page(request, 200, None, nxt)
        if request.headers.get("sec-fetch-site") not in _SELF_OPENED:
            return login_page(request, 403, "a login link opened from another page or program is not accepted: "
                              "paste the token here instead", nxt)
        try:
            request.app.state.tokens.role_of(f"Bearer {token.strip()}")
        except AuthError as exc:
            return login_page(request, 401, exc.message, nxt)
        resp = RedirectResponse(_next(nxt), status_code=303)  # the token leaves the address bar
        _set_cookie(request, resp, COOKIE, token.strip())
        sid, new = _session(request)
        if new:
            _set_cookie(request, resp, SESSION_COOKIE, sid)
        return resp

    @router.post("/login")
    @requires("open", **_FORM)
    async def login(request: Request) -> Response:
        try:
            form = _form(await request.body())
        except CatalogError as exc:
            return login_page(request, 400, exc.message, UI_PREFIX)
        nxt = (form.get("next") or [UI_PREFIX])[0]
        if not _csrf_ok(request, form):
            return login_page(request, 403, _CSRF_REFUSED, nxt)
        token = (form.get("token") or [""])[0].strip()
        try:
            request.app.state.tokens.role_of(f"Bearer {token}")
        except AuthError as exc:
            return login_page(request, 401, exc.message, nxt)
        resp = RedirectResponse(_next(nxt), status_code=303)
        _set_cookie(request, resp, COOKIE, token)
        return resp

    @router.get("", response_class=HTMLResponse)
    @requires("read", **_PAGE)
    def index(request: Request) -> Response:
        def go(ctx: _Ctx) -> Response:
            import semantic as sm

            names = sorted(_tables(ctx))
            findings = [f for f in sm.staleness(ctx.cat, snapshot=ctx.vid, now=ctx.now)
                        if ".".join(f.target.split(".")[:3]) in names]
            status: dict[str, str] = {}
            count: dict[str, int] = {}
            rank = {"fresh": 0, "suspect": 1, "stale": 2}
            for f in findings:
                t = ".".join(f.target.split(".")[:3])
                count[t] = count.get(t, 0) + 1
                if rank[f.status] > rank[status.get(t, "fresh")]:
                    status[t] = f.status
            by_ns: dict[str, list[dict[str, Any]]] = {}
            for n in names[:LIST_LIMIT]:
                by_ns.setdefault(n.rsplit(".", 1)[0], []).append(
                    {"name": n, "status": status.get(n, "fresh"), "findings": count.get(n, 0)})
            commits = ctx.cat.commits(limit=None)[-40:][::-1]
            snaps = ctx.cat.snapshots()[-40:]
            return page(request, ctx, "index.html", namespaces=by_ns, truncated=len(names) > LIST_LIMIT, total=len(names),
                        commits=commits, snaps=snaps, open_findings=len(findings))
        return guarded(request, go)

    @router.get("/table/{name}", response_class=HTMLResponse)
    @requires("read", **_PAGE)
    def table(request: Request, name: str) -> Response:
        def go(ctx: _Ctx) -> Response:
            import semantic as sm

            _require(ctx, name)
            card = sm.describe(ctx.cat, name, snapshot=ctx.vid, now=ctx.now)
            return page(request, ctx, "table.html", card=card, raw=request.query_params.get("raw") == "1")
        return guarded(request, go)

    @router.get("/table/{name}/history", response_class=HTMLResponse)
    @requires("read", **_PAGE)
    def history(request: Request, name: str) -> Response:
        def go(ctx: _Ctx) -> Response:
            _require(ctx, name)
            folder = lake.semantic_path(name)
            rows = []
            for o in ctx.cat.children(folder, vid=ctx.vid):
                for v in ctx.cat.history(o.path):
                    if v.vid > ctx.vid:
                        continue
                    val = v.value or {}
                    prov = val.get("provenance") or {}
                    rows.append({"key": o.obj_id, "vid": v.vid, "end_vid": v.end_vid, "removed": v.value is None,
                                 "value": val.get("value"), "author": prov.get("author"), "source": prov.get("source"),
                                 "confidence": prov.get("confidence"), "note": prov.get("note"),
                                 "basis": (prov.get("basis") or {}).get("vid"), "time": prov.get("time")})
            rows.sort(key=lambda r: (-r["vid"], r["key"]))
            return page(request, ctx, "history.html", name=name, rows=rows[:LIST_LIMIT], truncated=len(rows) > LIST_LIMIT,
                        total=len(rows))
        return guarded(request, go)

    @router.get("/table/{name}/lineage", response_class=HTMLResponse)
    @requires("read", **_PAGE)
    def lineage(request: Request, name: str) -> Response:
        """What `name`'s last build read (upstream) and what was built from it (downstream), each to
        3 hops and at most LIST_LIMIT tables, with the findings that flow in (`semantic.lineage`,
        what `get_lineage` serves); at the page's snapshot."""
        def go(ctx: _Ctx) -> Response:
            from semantic.lineage import lineage as graph

            visible = _require(ctx, name)
            graphs = {d: graph(ctx.cat, name, direction=d, depth=3, limit=LIST_LIMIT, snapshot=ctx.vid)
                      for d in ("upstream", "downstream")}
            for d, g in graphs.items():  # each row: which build read what at which vid (its edges)
                for n in g["nodes"]:
                    n["via"] = [(e["to"], e["vid"]) if d == "upstream" else (e["from"], e["vid"])
                                for e in g["edges"] if e["from" if d == "upstream" else "to"] == n["table"]]
            if visible is not None:  # under grants: only tables the principal may describe
                for g in graphs.values():
                    g["nodes"] = [n for n in g["nodes"] if n["table"] in visible]
            return page(request, ctx, "lineage.html", name=name, graphs=graphs)
        return guarded(request, go)

    @router.get("/search", response_class=HTMLResponse)
    @requires("read", **_PAGE)
    def search(request: Request) -> Response:
        def go(ctx: _Ctx) -> Response:
            q = request.query_params
            text = (q.get("q") or "").strip()
            limit = _limit(q.get("limit"), SEARCH_LIMIT[0], SEARCH_LIMIT[1])
            start = _offset(q.get("cursor"))
            if len(text) > 500:
                raise InvalidValueError(f"the search is {len(text)} characters; describe the data in at most 500")
            tables = _tables(ctx)
            # the ranking of the MCP tool search_tables (mcp_server.mcp.discovery, its read model's
            # `rank`): every table by name for no words, else `semantic.rank` over the same search, scores
            # rounded as the tool rounds them (tests/mcp_server/test_ui_page.py compares the two orders)
            import semantic as sm

            ranked = ([(name, round(score, 3)) for name, score in sm.rank(ctx.cat, text, snapshot=ctx.vid)
                       if name in tables] if text else [(n, 0.0) for n in sorted(tables)])
            hits = []
            for name, score in ranked[start:start + limit]:
                stats = (tables[name].value or {}).get("stats") or {}
                try:
                    card: Any = sm.describe(ctx.cat, name, snapshot=ctx.vid, now=ctx.now)
                except CatalogError:
                    card = None
                hits.append({"name": name, "score": score, "rows": stats.get("row_count"), "card": card})
            more = start + limit < len(ranked)
            return page(request, ctx, "search.html", q=text, hits=hits, total=len(ranked), start=start,
                        limit=limit, next_cursor=f"o:{start + limit}" if more else None)

        return guarded(request, go)

    @router.get("/inbox", response_class=HTMLResponse)
    @requires("read", **_PAGE)
    def inbox(request: Request) -> Response:
        def go(ctx: _Ctx) -> Response:
            import semantic as sm
            from semantic.review import MAX_LIMIT

            q = request.query_params
            limit = _limit(q.get("limit"), 20, MAX_GROUPS)
            start = _offset(q.get("cursor"))
            table = q.get("table") or None
            if table:
                _require(ctx, table)  # grants: an ungranted table's inbox is a missing table's
            res = sm.review_items(ctx.cat, table, snapshot=ctx.vid, now=ctx.now, limit=MAX_LIMIT,
                                  kind=q.get("kind") or None)
            from mcp_server.http import access
            from semantic.review import last_scan

            state = ctx.request.scope.get("state")
            grants = access.Access.of(ctx.cat, state)
            among = None
            if grants is not None:  # grants: only items (and data passes) of tables it may see
                res = res.model_copy(update={"items": access.review_items_view(ctx.cat, state, res.items)})
                res.total = len(res.items)
                among = access.visible_tables(ctx.cat, grants, ctx.vid)
            groups = _groups(ctx, res.items, table)
            shown = groups[start:start + limit]
            more = start + limit < len(groups)
            return page(request, ctx, "inbox.html", groups=shown, total_groups=len(groups), total=res.total,
                        items_truncated=res.truncated, start=start, next_cursor=f"o:{start + limit}" if more else None,
                        table=table or "", kind=q.get("kind") or "", scan=last_scan(ctx.cat, table, ctx.vid, among),
                        data_items=sum(1 for i in res.items if i.depth == "data"))
        return guarded(request, go)

    def _groups(ctx: _Ctx, items: list[Any], table: str | None) -> list[dict[str, Any]]:
        """The items by cause (`ReviewItem.group`; an item with none is a group of its own), each with
        the cause in words and the evidence of the underlying change (the merged finding's), in the
        order of their first item (by table)."""
        import semantic as sm

        merged: dict[str, tuple[Any, bool]] = {}
        from mcp_server.http import access

        for found in access.review_items_view(ctx.cat, ctx.request.scope.get("state"),
                                              sm.staleness(ctx.cat, table, snapshot=ctx.vid, now=ctx.now)):
            if not found.cause:
                continue
            # the finding on the table the change happened to tells it best; else the first
            changed = found.cause.split(":", 1)[-1].split("@", 1)[0]
            home = found.target == changed or found.target.startswith(changed + ".")
            if found.cause not in merged or home and not merged[found.cause][1]:
                merged[found.cause] = (found, home)
        by: dict[str, dict[str, Any]] = {}
        for it in items:
            key = it.group or it.id
            g = by.get(key)
            if g is None:
                cause = merged.get(it.group) if it.group else None
                g = by[key] = {"key": key, "id": _gid(key), "cause": it.group, "items": [],
                               "finding": cause[0] if cause else None,
                               "tables": []}
            g["items"].append(it)
            if it.table not in g["tables"]:
                g["tables"].append(it.table)
        out = list(by.values())
        for g in out:
            g["acceptable"] = sum(1 for i in g["items"] if i.acceptable)
            g["bulk"] = g["cause"] is not None and all(i.kind == "finding" for i in g["items"])
        return out

    def deciding(request: Request, go: Callable[[_Ctx], Response], failed: str, ids: dict[str, str],
                 verbs: str) -> Response:
        """Run a decision's `go` (in a worker thread) for the page's fragment swap: a bad snapshot is
        400, no valid token 401, a read token 403 (it may look, not `verbs`), a refused decision its
        CatalogError's status; each failure renders `failed` with `ids` (which item or group) and the
        one-line message."""
        try:
            ctx = _Ctx(request)
        except CatalogError as exc:
            return page(request, None, failed, 400, message=exc.message, **ids)
        if ctx.role is None:
            return page(request, None, failed, 401, message="log in again: no valid token", **ids)
        try:
            if not ctx.can_write:
                raise PermissionDeniedError(f"a {ctx.role!r} token can look but not decide; log in with a write "
                                            f"token to {verbs}")
            return go(ctx)
        except CatalogError as exc:
            return page(request, ctx, failed, exc.http_status, message=exc.message, **ids)

    @router.post("/review/{item_id}/{action}", response_class=HTMLResponse)
    @requires("write", **_FORM)
    async def act(request: Request, item_id: str, action: str) -> Response:
        import anyio

        try:
            form = _form(await request.body())
        except CatalogError as exc:
            return page(request, None, "_failed.html", 400, item_id=item_id, message=exc.message)
        if not _csrf_ok(request, form):
            return page(request, None, "_failed.html", 403, item_id=item_id, message=_CSRF_REFUSED)

        def go(ctx: _Ctx) -> Response:
            import semantic as sm

            author = _decider(request, form)
            note = (form.get("note") or [""])[0].strip() or None
            item = _reviewable(ctx, item_id)
            if action == "accept":
                vid = sm.accept(ctx.cat, item, author=author, note=note, now=ctx.now)
            elif action == "dismiss":
                vid = sm.dismiss(ctx.cat, item, author=author, reason=(form.get("reason") or [""])[0], now=ctx.now)
            elif action == "edit":
                raw = (form.get("value") or [""])[0]
                try:
                    value = loads_bounded(raw)  # too deep: InvalidValueError, a 400 page
                except ValueError:
                    value = raw
                vid = sm.edit_and_accept(ctx.cat, item, author=author, value=value, note=note, now=ctx.now)
            else:
                return page(request, ctx, "error.html", 404, message=f"no action {action!r}: accept, edit or dismiss")
            return page(request, ctx, "_done.html", item=item, action=action, vid=vid)

        return await anyio.to_thread.run_sync(deciding, request, go, "_failed.html", {"item_id": item_id},
                                            "accept, edit or dismiss")

    @router.post("/group/{decision}", response_class=HTMLResponse)
    @requires("write", **_FORM)
    async def decide_group(request: Request, decision: str) -> Response:
        """Accept or dismiss every open item of one group, through `semantic.decide_group` (what
        `semcat review accept|dismiss --group` runs): accept writes each item whose fix validates,
        each validated again at commit; the others stay open and are listed with why."""
        import anyio

        try:
            form = _form(await request.body())
        except CatalogError as exc:
            return page(request, None, "_group_failed.html", 400, gid="", message=exc.message)
        group = (form.get("group") or [""])[0]
        gid = _gid(group) if group else ""
        if not _csrf_ok(request, form):
            return page(request, None, "_group_failed.html", 403, gid=gid, message=_CSRF_REFUSED)

        def go(ctx: _Ctx) -> Response:
            import semantic as sm

            if decision not in ("accept", "dismiss"):
                return page(request, ctx, "_group_failed.html", 404, gid=gid,
                            message=f"no bulk action {decision[:40]!r}: accept or dismiss")
            if not group:
                raise InvalidValueError("the form names no group; reload the inbox and use a group's buttons")
            author = _decider(request, form)
            note = (form.get("note") or [""])[0].strip() or None
            reason = (form.get("reason") or [""])[0].strip() or None
            table = (form.get("table") or [""])[0].strip() or None
            _group_reviewable(ctx, group, table)
            res = sm.decide_group(ctx.cat, group, decision, author, note, reason=reason, table=table, now=ctx.now)
            return page(request, ctx, "_group_done.html", gid=gid, group=group, decision=decision, res=res)

        return await anyio.to_thread.run_sync(deciding, request, go, "_group_failed.html", {"gid": gid},
                                            "accept or dismiss")

    @router.post("/scan", response_class=HTMLResponse)
    @requires("write", **_FORM)
    async def scan(request: Request) -> Response:
        """Run the data-depth check now (`semantic.review.scan`, what `semcat review scan --depth data`
        runs) and store its findings for the inbox; answers a line saying what it found, with a link
        that reloads the inbox."""
        import anyio

        try:
            form = _form(await request.body())
        except CatalogError as exc:
            return page(request, None, "_group_failed.html", 400, gid="scan-result", message=exc.message)
        if not _csrf_ok(request, form):
            return page(request, None, "_group_failed.html", 403, gid="scan-result", message=_CSRF_REFUSED)

        def go(ctx: _Ctx) -> Response:
            import semantic as sm

            who = writer_of(request.scope.get("state"))
            author = who.principal if who.authenticated else (form.get("author") or [""])[0].strip() or "web"
            table = (form.get("table") or [""])[0].strip() or None
            _scannable(ctx, table)
            res = sm.scan(ctx.cat, table, author=author, now=ctx.now)
            return page(request, ctx, "_scan_done.html", res=res, table=table or "")

        return await anyio.to_thread.run_sync(deciding, request, go, "_group_failed.html", {"gid": "scan-result"},
                                            "run the data check")

    @router.get("/diff", response_class=HTMLResponse)
    @requires("read", **_PAGE)
    def diff(request: Request) -> Response:
        def go(ctx: _Ctx) -> Response:
            q = request.query_params
            latest = ctx.latest
            frm = q.get("from") or str(max(0, latest - 1))
            to = q.get("to") or str(latest)
            a = ctx.cat.resolve(parse_ref(frm))
            b = ctx.cat.resolve(parse_ref(to))
            rows: list[dict[str, Any]] = []
            more = False
            from mcp_server.http import access

            for ch in access.changes_view(ctx.cat, ctx.request.scope.get("state"),
                                          ctx.cat.diff(a, b, prefix=q.get("prefix") or None)):
                if ch.leaf:
                    continue
                if len(rows) >= LIST_LIMIT:
                    more = True
                    break
                rows.append({"path": ch.path, "name": lake.name_of(ch.path), "kind": ch.kind, "vid": ch.vid,
                             "before": _short((ch.before or {}).get("value", ch.before), 200) if ch.before else "",
                             "after": _short((ch.after or {}).get("value", ch.after), 200) if ch.after else ""})
            return page(request, ctx, "diff.html", rows=rows, truncated=more, frm=a, to=b, under=q.get("prefix") or "")
        return guarded(request, go)

    return router
