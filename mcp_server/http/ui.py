"""The data team's web page at `/ui` (issue 27 item 3), served by `semcat serve`: server-rendered
Jinja2 templates and htmx (vendored in mcp_server/http/static, version in htmx.VERSION; no
JavaScript build step, nothing loaded from elsewhere).

    GET  /ui                       catalog browser: namespaces and tables with status, snapshot picker
    GET  /ui/table/{name}          a table: schema, stats, annotations with provenance and age,
                                   freshness, relationships, metrics, findings
    GET  /ui/table/{name}/history  who wrote which annotation at which vid, on what basis
    GET  /ui/inbox                 open review items with accept / edit / dismiss (htmx posts)
    POST /ui/review/{id}/{action}  accept | edit | dismiss; answers the item's row, re-rendered
    GET  /ui/diff?from=&to=        objects changed between two snapshots (bounded)
    GET|POST /ui/login             a token form (or ?token= on any page): sets the cookie

Every page takes `?snapshot=` (vid, snapshot name or ISO time: time travel). Auth: the same tokens as
the API, from the `semcat_token` cookie; read tokens see, write tokens act (a read token's action
answers 403 with what to do). With auth off (loopback only) everyone may act. Every list is bounded
(`limit`, a cursor or `more` link, and a shown `truncated` note).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from catalog_core import lake
from catalog_core.errors import AuthError, CatalogError, PermissionDeniedError

__all__ = ["build_ui_router", "UI_PREFIX", "COOKIE"]

UI_PREFIX = "/ui"
COOKIE = "semcat_token"
HERE = os.path.dirname(os.path.abspath(__file__))
LIST_LIMIT = 200


def _env() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(HERE, "templates")),
                             autoescape=jinja2.select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)
    env.filters["when"] = _when
    env.filters["age"] = _age
    env.filters["short"] = _short
    env.filters["urlq"] = lambda s: quote(str(s), safe="")
    return env


def _when(t: Any) -> str:
    if not isinstance(t, (int, float)):
        return ""
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(t))


def _age(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)):
        return ""
    d = seconds / 86400
    return f"{d:.0f} d" if d >= 1 else f"{seconds / 3600:.0f} h"


def _short(v: Any, n: int = 160) -> str:
    text = v if isinstance(v, str) else json.dumps(v, default=str)
    return text if len(text) <= n else text[: n - 1] + "…"


class _Ctx:
    """One request's view: the catalog, the role, the snapshot and the clock."""

    def __init__(self, request: Request) -> None:
        app = request.app
        self.request = request
        self.cat = app.state.catalog
        self.tokens = app.state.tokens
        self.now = (getattr(app.state, "mcp_options", None) or {}).get("now")
        token = request.query_params.get("token") or request.cookies.get(COOKIE)
        self.token = token
        self.role: str | None
        try:
            self.role = self.tokens.role_of(f"Bearer {token}" if token else None)
        except AuthError:
            self.role = None
        snap = request.query_params.get("snapshot") or None
        self.snapshot = snap
        self.vid = self.cat.resolve(int(snap) if snap and snap.isdigit() else snap)
        self.latest = self.cat.resolve(None)

    @property
    def can_write(self) -> bool:
        return self.role == "write"


def build_ui_router(app: FastAPI) -> APIRouter:
    """The /ui routes (sync handlers: the semantic calls block, FastAPI runs them in threads)."""
    env = _env()
    router = APIRouter(prefix=UI_PREFIX, include_in_schema=False)

    def page(ctx: _Ctx | None, template: str, status: int = 200, **data: Any) -> HTMLResponse:
        html = env.get_template(template).render(ctx=ctx, prefix=UI_PREFIX, **data)
        resp = HTMLResponse(html, status_code=status)
        if ctx is not None and ctx.request.query_params.get("token") and ctx.role is not None:
            resp.set_cookie(COOKIE, ctx.token or "", httponly=True, samesite="strict")
        return resp

    def guarded(request: Request, fn: Callable[[_Ctx], Response]) -> Response:
        try:
            ctx = _Ctx(request)
        except CatalogError as exc:
            return page(None, "error.html", 400, message=exc.message)
        if ctx.role is None:
            return page(None, "login.html", 401, message="this server needs a token" if not ctx.token
                        else "unknown token; ask the server operator for a valid one", next=str(request.url.path))
        try:
            return fn(ctx)
        except CatalogError as exc:
            return page(ctx, "error.html", exc.http_status, message=exc.message)

    @router.get("/static/htmx.min.js")
    def htmx() -> Response:
        return FileResponse(os.path.join(HERE, "static", "htmx.min.js"), media_type="text/javascript")

    @router.get("/login", response_class=HTMLResponse)
    def login_form(request: Request) -> Response:
        return page(None, "login.html", message=None, next=request.query_params.get("next") or UI_PREFIX)

    @router.post("/login")
    async def login(request: Request) -> Response:
        form = parse_qs((await request.body()).decode())
        token = (form.get("token") or [""])[0].strip()
        nxt = (form.get("next") or [UI_PREFIX])[0]
        try:
            request.app.state.tokens.role_of(f"Bearer {token}")
        except AuthError as exc:
            return page(None, "login.html", 401, message=exc.message, next=nxt)
        resp = RedirectResponse(nxt if nxt.startswith(UI_PREFIX) else UI_PREFIX, status_code=303)
        resp.set_cookie(COOKIE, token, httponly=True, samesite="strict")
        return resp

    @router.get("", response_class=HTMLResponse)
    def index(request: Request) -> Response:
        def go(ctx: _Ctx) -> Response:
            import semantic as sm

            names = sorted(lake.name_of(o.path) for o in ctx.cat.query(lake.tables_query(), vid=ctx.vid))
            findings = sm.staleness(ctx.cat, snapshot=ctx.vid, now=ctx.now)
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
            return page(ctx, "index.html", namespaces=by_ns, truncated=len(names) > LIST_LIMIT, total=len(names),
                        commits=commits, snaps=snaps, open_findings=len(findings))
        return guarded(request, go)

    @router.get("/table/{name}", response_class=HTMLResponse)
    def table(request: Request, name: str) -> Response:
        def go(ctx: _Ctx) -> Response:
            import semantic as sm

            card = sm.describe(ctx.cat, name, snapshot=ctx.vid, now=ctx.now)
            return page(ctx, "table.html", card=card)
        return guarded(request, go)

    @router.get("/table/{name}/history", response_class=HTMLResponse)
    def history(request: Request, name: str) -> Response:
        def go(ctx: _Ctx) -> Response:
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
            return page(ctx, "history.html", name=name, rows=rows[:LIST_LIMIT], truncated=len(rows) > LIST_LIMIT,
                        total=len(rows))
        return guarded(request, go)

    @router.get("/inbox", response_class=HTMLResponse)
    def inbox(request: Request) -> Response:
        def go(ctx: _Ctx) -> Response:
            import semantic as sm

            q = request.query_params
            limit = int(q.get("limit") or 50)
            res = sm.review_items(ctx.cat, q.get("table") or None, snapshot=ctx.vid, now=ctx.now, limit=limit,
                                  cursor=q.get("cursor") or None, kind=q.get("kind") or None)
            return page(ctx, "inbox.html", page_=res, table=q.get("table") or "", kind=q.get("kind") or "")
        return guarded(request, go)

    @router.post("/review/{item_id}/{action}", response_class=HTMLResponse)
    async def act(request: Request, item_id: str, action: str) -> Response:
        form = parse_qs((await request.body()).decode())
        import anyio

        def go(ctx: _Ctx) -> Response:
            import semantic as sm

            if not ctx.can_write:
                raise PermissionDeniedError(f"a {ctx.role!r} token can look but not decide; log in with a write "
                                            "token to accept, edit or dismiss")
            author = (form.get("author") or [""])[0].strip() or "web"
            note = (form.get("note") or [""])[0].strip() or None
            item = sm.review_item(ctx.cat, item_id, now=ctx.now)
            if action == "accept":
                vid = sm.accept(ctx.cat, item, author=author, note=note, now=ctx.now)
            elif action == "dismiss":
                vid = sm.dismiss(ctx.cat, item, author=author, reason=(form.get("reason") or [""])[0], now=ctx.now)
            elif action == "edit":
                raw = (form.get("value") or [""])[0]
                try:
                    value = json.loads(raw)
                except ValueError:
                    value = raw
                vid = sm.edit_and_accept(ctx.cat, item, author=author, value=value, note=note, now=ctx.now)
            else:
                return page(ctx, "error.html", 404, message=f"no action {action!r}: accept, edit or dismiss")
            return page(ctx, "_done.html", item=item, action=action, vid=vid)

        def run() -> Response:
            try:
                ctx = _Ctx(request)
            except CatalogError as exc:
                return page(None, "_failed.html", 400, item_id=item_id, message=exc.message)
            if ctx.role is None:
                return page(None, "_failed.html", 401, item_id=item_id, message="log in again: no valid token")
            try:
                return go(ctx)
            except CatalogError as exc:
                return page(ctx, "_failed.html", exc.http_status, item_id=item_id, message=exc.message)
        return await anyio.to_thread.run_sync(run)

    @router.get("/diff", response_class=HTMLResponse)
    def diff(request: Request) -> Response:
        def go(ctx: _Ctx) -> Response:
            q = request.query_params
            latest = ctx.latest
            frm = q.get("from") or str(max(0, latest - 1))
            to = q.get("to") or str(latest)
            a = ctx.cat.resolve(int(frm) if frm.isdigit() else frm)
            b = ctx.cat.resolve(int(to) if to.isdigit() else to)
            rows: list[dict[str, Any]] = []
            more = False
            for ch in ctx.cat.diff(a, b, prefix=q.get("prefix") or None):
                if ch.leaf:
                    continue
                if len(rows) >= LIST_LIMIT:
                    more = True
                    break
                rows.append({"path": ch.path, "name": lake.name_of(ch.path), "kind": ch.kind, "vid": ch.vid,
                             "before": _short((ch.before or {}).get("value", ch.before), 200) if ch.before else "",
                             "after": _short((ch.after or {}).get("value", ch.after), 200) if ch.after else ""})
            return page(ctx, "diff.html", rows=rows, truncated=more, frm=a, to=b, under=q.get("prefix") or "")
        return guarded(request, go)

    return router
