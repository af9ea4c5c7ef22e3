"""`semcat grant`, `semcat revoke`, `semcat grants` (issue 48): who may see and do what, kept in the
catalog (semantic.grants), on a catalog directory (`--data`) or a running `semcat serve` (`--url`
with an admin token: the server refuses grant changes from any other). Errors print their message
and what to do, never a traceback.

    semcat grant select on acme.hr to group:finance --data data
    semcat revoke select on acme.hr from group:finance --data data
    semcat grants [--principal group:finance] [--vid N] [--json] --data data
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from mcp_server.cli.review import _open, _who

__all__ = ["register"]


def _where(fn: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed((
        click.option("--data", "data_dir", default="data", show_default=True, help="catalog data directory"),
        click.option("--url", default=None, help="a semcat serve URL instead of --data, e.g. http://127.0.0.1:8765"),
        click.option("--token", default=None, envvar="SEMCAT_TOKEN", help="bearer token for --url (admin to change)"),
    )):
        fn = opt(fn)
    return fn


def _run(data_dir: str, url: str | None, token: str | None, fn: Callable[[Any], Any]) -> Any:
    import catalog_core as cc

    cat = _open(data_dir, url, token)
    try:
        return fn(cat)
    except cc.CatalogError as exc:
        raise click.ClickException(exc.message) from None
    finally:
        cat.close()


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
