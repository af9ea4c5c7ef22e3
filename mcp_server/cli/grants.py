"""`semcat grant`, `semcat revoke`, `semcat grants` (issue 48): who may see and do what, kept in the
catalog (semantic.grants), on a catalog directory (`--data`) or a running `semcat serve` (`--url`
with an admin token: the server refuses grant changes from any other). Errors print their message
and what to do, never a traceback.

    semcat grant select on acme.hr to group:finance --data data
    semcat revoke select on acme.hr from group:finance --data data
    semcat grants [--principal group:finance] [--vid N] [--json] --data data
    semcat audit [--principal bob] [--table acme.hr.salaries] [--since 2026-12-01T00:00Z] [--json] --data data
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from mcp_server.cli.options import run_on as _run
from mcp_server.cli.options import who as _who

__all__ = ["register", "audit_entries"]


def _where(fn: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed((
        click.option("--data", "data_dir", default="data", show_default=True, help="catalog data directory"),
        click.option("--url", default=None, help="a semcat serve URL instead of --data, e.g. http://127.0.0.1:8765"),
        click.option("--token", default=None, envvar="SEMCAT_TOKEN", help="bearer token for --url (admin to change)"),
    )):
        fn = opt(fn)
    return fn








def _keyword(word: str, expected: str, usage: str) -> None:
    if word.lower() != expected:
        raise click.UsageError(f"expected {expected!r} where {word!r} is: {usage}")


def register(main: click.Group) -> None:
    """Add `semcat grant`, `semcat revoke` and `semcat grants` to `main`."""
    @main.command("grant")
    @click.argument("privilege")
    @click.argument("on_")
    @click.argument("securable")
    @click.argument("to")
    @click.argument("principal")
    @_where
    @click.option("--author", default=None, envvar="SEMCAT_AUTHOR", help="who grants (default: your login name)")
    def grant(privilege, on_, securable, to, principal, data_dir, url, token, author) -> None:
        """Grant PRIVILEGE (describe, select, annotate, review, commit or admin) on SECURABLE (a catalog, namespace or table: acme, acme.hr,
        acme.hr.salaries) to PRINCIPAL (user:NAME or group:NAME): semcat grant select on acme.hr to
        group:finance. Inherited by everything below SECURABLE."""
        from semantic import grants as G

        usage = "semcat grant PRIVILEGE on SECURABLE to PRINCIPAL"
        _keyword(on_, "on", usage)
        _keyword(to, "to", usage)
        vid = _run(data_dir, url, token, lambda cat: G.grant(cat, privilege, securable, principal, _who(author)))
        click.echo(f"granted {privilege.lower()} on {securable} to {principal} (vid {vid})")

    @main.command("revoke")
    @click.argument("privilege")
    @click.argument("on_")
    @click.argument("securable")
    @click.argument("from_")
    @click.argument("principal")
    @_where
    @click.option("--author", default=None, envvar="SEMCAT_AUTHOR", help="who revokes (default: your login name)")
    def revoke(privilege, on_, securable, from_, principal, data_dir, url, token, author) -> None:
        """Revoke PRIVILEGE on SECURABLE from PRINCIPAL: semcat revoke select on acme.hr from group:finance."""
        from semantic import grants as G

        usage = "semcat revoke PRIVILEGE on SECURABLE from PRINCIPAL"
        _keyword(on_, "on", usage)
        if from_.lower() not in ("from", "to"):
            raise click.UsageError(f"expected 'from' where {from_!r} is: {usage}")
        vid = _run(data_dir, url, token, lambda cat: G.revoke(cat, privilege, securable, principal, _who(author)))
        click.echo(f"revoked {privilege.lower()} on {securable} from {principal} (vid {vid})")

    @main.command("grants")
    @click.option("--principal", default=None, help="only this principal's grants (user:NAME or group:NAME)")
    @click.option("--vid", "snapshot", default=None, help="the grants at this vid, snapshot name or ISO time "
                                                          "(default: latest): who could read what then")
    @click.option("--json", "as_json", is_flag=True, help="print JSON for programs")
    @_where
    def grants(principal, snapshot, as_json, data_dir, url, token) -> None:
        """List the grants: securable, principal, privileges, and the vid that set them. A catalog
        without grants is open to every token (docs/grants.md)."""
        from semantic import grants as G

        ref = int(snapshot) if isinstance(snapshot, str) and snapshot.isascii() and snapshot.isdigit() else snapshot

        def listed(cat: Any) -> tuple[int, list[G.GrantRow]]:
            vid = cat.resolve(ref)
            return vid, G.list_grants(cat, vid, principal)

        vid, rows = _run(data_dir, url, token, listed)
        if as_json:
            click.echo(json.dumps({"vid": vid, "grants": [r.to_dict() for r in rows]}, indent=2))
            return
        if not rows:
            click.echo(f"no grants at vid {vid}" + (f" for {principal}" if principal else "")
                       + ("" if principal else ": every token sees the whole catalog"))
            return
        width = max(len(r.securable) for r in rows)
        pw = max(len(r.principal) for r in rows)
        for r in rows:
            click.echo(f"{r.securable:<{width}}  {r.principal:<{pw}}  {','.join(r.privileges):<24}  vid {r.vid}"
                       + (f"  by {r.by}" if r.by else ""))
        click.echo(f"({len(rows)} grant objects at vid {vid})")

    @main.command("audit")
    @click.option("--principal", default=None, help="only this principal's entries (a token's name, e.g. bob)")
    @click.option("--table", default=None, help="only entries that read or wrote this table (acme.hr.salaries)")
    @click.option("--since", default=None, help="only entries at or after this ISO-8601 time (or epoch seconds)")
    @click.option("--limit", default=100, show_default=True, type=click.IntRange(1, 10_000),
                  help="the newest this many entries")
    @click.option("--json", "as_json", is_flag=True, help="print JSON for programs")
    @_where
    def audit(principal, table, since, limit, as_json, data_dir, url, token) -> None:
        """The audit log: every data read (run_sql, column values, metrics, file plans) and write
        by a principal, with its statement, tables, vid and rows. --url needs an admin token."""
        entries, more = audit_entries(data_dir, url, token, principal, table, since, limit)
        if as_json:
            click.echo(json.dumps({"entries": entries, "truncated": more}, indent=2))
            return
        if not entries:
            click.echo("no audit entries" + (" match" if principal or table or since else ""))
            return
        import datetime as dt

        for e in entries:
            when = dt.datetime.fromtimestamp(float(e.get("time") or 0), dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            what = e.get("statement") or ""
            click.echo(f"{when}  {e.get('principal')}  {e.get('surface')}:{e.get('action')}  "
                       f"{','.join(e.get('tables') or []) or '-'}  vid {e.get('vid', '-')}  rows {e.get('rows', '-')}"
                       f"{'' if e.get('ok', True) else '  REFUSED ' + str(e.get('error'))}"
                       + (f"  {what[:120]}" if what else ""))
        if more:
            click.echo(f"(the newest {len(entries)}; more match: narrow with --since, --principal or --table)")


def audit_entries(data_dir: str, url: str | None, token: str | None, principal: str | None, table: str | None,
                  since: str | None, limit: int) -> tuple[list[dict[str, Any]], bool]:
    """The entries of the audit log of a catalog directory (read directly: the server may hold the
    catalog) or of a server (GET /v1/audit, an admin token)."""
    if url:
        import httpx

        params = {k: v for k, v in {"principal": principal, "table": table, "since": since, "limit": str(limit)}.items()
                  if v is not None}
        try:
            resp = httpx.get(url.rstrip("/") + "/v1/audit", params=params, timeout=60,
                             headers={"Authorization": f"Bearer {token}"} if token else {})
        except httpx.HTTPError as exc:
            raise click.ClickException(f"cannot reach {url}: {exc}") from None
        body = resp.json() if resp.headers.get("content-type", "").startswith("application/json") else {}
        if resp.status_code != 200:
            raise click.ClickException(body.get("message") or f"{url} answered {resp.status_code}")
        return list(body.get("entries") or []), bool(body.get("truncated"))
    import os

    from catalog_core.model import parse_time
    from mcp_server.audit import AuditLog

    when = None
    if since is not None:
        when = parse_time(float(since) if since.replace(".", "", 1).isdigit() else since)
        if when is None:
            raise click.BadParameter(f"{since!r} is not an ISO-8601 time or epoch seconds, e.g. 2026-12-01T00:00:00Z",
                                     param_hint="--since")
    if not os.path.isdir(data_dir):
        raise click.ClickException(f"no catalog directory {data_dir!r}; give --data DIR or --url URL")
    return AuditLog(os.path.join(data_dir, "audit")).read(principal, table, when, limit)
