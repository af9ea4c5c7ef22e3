"""`semcat review list|show|accept|dismiss|edit|scan`: the data team's inbox on the command line (issue
27 item 2), on a catalog directory (`--data`) or a running `semcat serve` (`--url` with a write
token to decide). Lists are bounded (`--limit`, `--cursor` resumes; the footer says when more are
left). Errors print their message and what to do, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from mcp_server.cli.options import run_on as _run
from mcp_server.cli.options import who as _who

__all__ = ["register"]


def _where(fn: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed((
        click.option("--data", "data_dir", default="data", show_default=True, help="catalog data directory"),
        click.option("--url", default=None, help="a semcat serve URL instead of --data, e.g. http://127.0.0.1:8765"),
        click.option("--token", default=None, envvar="SEMCAT_TOKEN", help="bearer token for --url (write to decide)"),
        click.option("--now", default=None, help="judge freshness at this ISO time, and write a decision or a "
                     "scan at it (a backdated lake's check time; default: the clock)"),
    )):
        fn = opt(fn)
    return fn


_author = click.option("--author", default=None, envvar="SEMCAT_AUTHOR",
                       help="who decides (default: $SEMCAT_AUTHOR, else your login name)")
_json = click.option("--json", "as_json", is_flag=True, help="print JSON for programs")


def _clock(url: str | None, now: str | None) -> str | float | None:
    """One clock (issue 47): against a server (--url) without --now, judge at the server's time when it was
    started with --now (its /healthz says), and say so on stderr; otherwise `now` as given (None: the clock)."""
    if now is not None or not url:
        return now
    from mcp_server.cli.clock import server_now

    theirs = server_now(url)
    if theirs is None:
        return None
    from catalog_core.model import iso_time

    click.echo(f"semcat: judging at the server's time {iso_time(theirs)} (it runs with --now; pass --now "
               "to choose another)", err=True)
    return theirs


def _written_at(now: str | None, fn: Callable[[Any, float | None], Any]) -> Callable[[Any], Any]:
    """`fn(catalog, time)` as a `run_on` body: a decision (or a stored scan) given `--now` on the command line
    is committed at it (the steward's check time on a backdated lake: a commit at the clock would sit years
    past the lake's history, date the written annotations after the check, and refuse every later backdated
    load), or just after the catalog's latest commit when that is later (commit times never go backwards:
    decisions made one after another at one `--now`); without `--now`, at the clock."""
    def go(cat: Any) -> Any:
        if now is None:
            return fn(cat, None)
        from catalog_core.model import parse_time

        given = parse_time(now)
        if given is None:
            raise click.BadParameter(f"{now!r} is not an ISO-8601 time, e.g. 2025-03-12T09:00:00Z", param_hint="--now")
        last = cat.commits(limit=1)
        return fn(cat, max([given] + [c.time for c in last]))
    return go


def _short(v: Any, n: int = 60) -> str:
    text = v if isinstance(v, str) else json.dumps(v, default=str)
    return text if len(text) <= n else text[: n - 1] + "…"




def register(main: click.Group) -> None:
    """Add the `semcat review` group to `main`."""

    @main.group("review")
    def review() -> None:
        """The findings inbox: open staleness findings and agent-written annotations to accept,
        edit or dismiss."""

    @review.command("list")
    @_where
    @click.option("--table", default=None, help="only this table, e.g. acme.core.fct_orders")
    @click.option("--kind", default=None, type=click.Choice(["finding", "proposal", "agent_annotation"]))
    @click.option("--snapshot", default=None, help="vid, snapshot name or ISO time (default: latest)")
    @click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 500))
    @click.option("--cursor", default=None, help="the next cursor a previous page printed")
    @_json
    def list_(data_dir, url, token, now, table, kind, snapshot, limit, cursor, as_json) -> None:
        """List open review items, findings first, per table."""
        now = _clock(url, now)
        import semantic as sm

        page = _run(data_dir, url, token, lambda cat: sm.review_items(cat, table, snapshot=snapshot, now=now,
                                                                      limit=limit, cursor=cursor, kind=kind))
        if as_json:
            click.echo(page.model_dump_json(indent=2))
            return
        from rich.console import Console
        from rich.table import Table

        t = Table(title=f"{page.total} open review items", title_justify="left")
        for col in ("id", "table", "what", "status", "message", "accept writes"):
            t.add_column(col, overflow="fold")
        for i in page.items:
            what = i.reason or i.kind
            if i.depth == "data":
                what += f" (data, scan at vid {i.scan_vid}{', outdated' if i.outdated else ''})"
            writes = f"{i.proposed_key} = {_short(i.proposed, 40)}" if i.acceptable else \
                "(no fix: edit or dismiss)" if i.refused == "no_fix" else \
                "(scan again)" if i.outdated else "(edit or dismiss)"
            t.add_row(i.id, i.table, f"{what}\n{i.annotation or ''}", i.status or "unreviewed",
                      _short(i.message, 90), writes)
        Console(width=max(120, Console().width)).print(t)
        if page.truncated:
            click.echo(f"{len(page.items)} shown; more with --cursor {page.next_cursor}")

    @review.command("show")
    @click.argument("item_id")
    @_where
    @_json
    def show(item_id, data_dir, url, token, now, as_json) -> None:
        """Show one review item: the finding, its evidence and what accept would write."""
        now = _clock(url, now)
        import semantic as sm

        it = _run(data_dir, url, token, lambda cat: sm.review_item(cat, item_id, now=now))
        if as_json:
            click.echo(it.model_dump_json(indent=2))
            return
        from rich.console import Console
        from rich.table import Table

        t = Table(show_header=False, title=f"review item {it.id} at vid {it.vid}", title_justify="left")
        t.add_column("field", style="bold")
        t.add_column("value", overflow="fold")
        rows = [("kind", it.kind), ("table", it.table), ("target", it.target), ("annotation", it.annotation),
                ("reason", it.reason), ("status", it.status), ("message", it.message), ("suggestion", it.suggestion),
                ("fixes", ", ".join(f"{f.action} {json.dumps(f.params)}" for f in it.fixes) or None),
                ("evidence vids", ", ".join(map(str, it.evidence_vids))), ("author", it.author),
                ("depth", f"data: raised by the data-depth pass at vid {it.scan_vid}"
                 + (" (the table changed since: scan again)" if it.outdated else "") if it.depth == "data"
                 else None),
                ("current", None if it.current is None else _short(it.current, 400)),
                ("accept writes", f"{it.proposed_key} = {_short(it.proposed, 400)}" if it.acceptable else it.why_not)]
        for k, v in rows:
            if v is not None:
                t.add_row(k, str(v))
        Console(width=max(120, Console().width)).print(t)

    def _group_result(res: dict[str, Any], verb: str) -> str:
        where = f" of group {res['group']}" if res.get("group") else ""
        lines = [f"{verb} {len(res['decided'])} item(s){where}"]
        lines += [f"  {d['item']} at vid {d['vid']}" for d in res["decided"]]
        by = res.get("skipped_by") or {}
        if res["skipped"]:
            words = {"no_fix": "no fix the evidence supports (edit or dismiss them)",
                     "outdated": "raised by a data-depth pass the table changed after (scan again)",
                     "needs_value": "the fix needs a person's value (edit them)",
                     "needs_meaning": "a coded column's new code needs its meaning (edit them with {code: meaning})",
                     "same_cause": "decided with an item of the same cause, whose write answers them (nothing to do)"}
            lines.append(f"skipped {len(res['skipped'])} item(s), left open: "
                         + "; ".join(f"{n} {words.get(code, 'refused by validation: ' + code)}"
                                     for code, n in sorted(by.items())))
        lines += [f"  {'decided with its cause' if s.get('code') == 'same_cause' else 'left open'} {s['item']}: {s['why']}"
                  for s in res["skipped"]]
        if res.get("not_findings"):
            lines.append(f"not included: {res['not_findings']} agent annotation(s) / proposal(s): accept those one "
                         "by one")
        return "\n".join(lines)

    @review.command("accept")
    @click.argument("item_id", required=False)
    @click.option("--group", default=None, help="accept every item of this group (one underlying change) whose fix "
                  "validates; `review list --json` shows each item's group")
    @click.option("--all", "all_", is_flag=True, help="accept every open finding whose fix the evidence supports "
                  "and validates (never one without a fix; never agent annotations)")
    @click.option("--table", default=None, help="with --all: only this table")
    @_where
    @_author
    @click.option("--note", default=None, help="why (kept in the annotation's provenance)")
    def accept(item_id, group, all_, table, data_dir, url, token, now, author, note) -> None:
        """Write what the item suggests as your annotation, and close the item. Accept is offered only
        for a fix the evidence supports, validated against the snapshot, and validated again when it
        is written; a finding without one is edited or dismissed instead."""
        given, now = now, _clock(url, now)
        import semantic as sm

        if sum((item_id is not None, group is not None, all_)) != 1:
            raise click.UsageError("give an ITEM_ID, --group GROUP or --all (one of them)")
        if table is not None and not all_:
            raise click.UsageError("--table goes with --all")

        def go(cat: Any, at: float | None) -> str:
            if all_:
                return _group_result(sm.accept_all(cat, _who(author), note, table=table, now=now, time=at),
                                     "accepted")
            if group is not None:
                return _group_result(sm.decide_group(cat, group, "accept", _who(author), note, now=now, time=at),
                                     "accepted")
            it = sm.review_item(cat, item_id, now=now)
            vid = sm.accept(cat, it, author=_who(author), note=note, now=now, time=at)
            return f"accepted {it.id}: wrote {it.table}:{it.proposed_key} at vid {vid}"
        click.echo(_run(data_dir, url, token, _written_at(given, go)))

    @review.command("scan")
    @_where
    @_author
    @click.option("--depth", default="data", show_default=True, type=click.Choice(["data"]),
                  help="data: check the rows (metadata findings are computed on every read)")
    @click.option("--table", default=None, help="only this table (default: every annotated table)")
    @click.option("--changed-only", is_flag=True, help="only the tables a change reached since their last pass "
                  "(the table, its annotations, its lineage inputs or a table its annotations name; for a "
                  "scheduled run, e.g. from cron): the cost follows the change; nothing is written when nothing "
                  "changed")
    @_json
    def scan(data_dir, url, token, now, author, depth, table, changed_only, as_json) -> None:
        """Run the data-depth check now and store its findings for the inbox, as of the latest vid:
        `review list`, `review show`, the /ui inbox and the MCP check_staleness tool then show them
        (marked with the vid the pass read) without checking the data again."""
        given, now = now, _clock(url, now)
        import semantic as sm

        res = _run(data_dir, url, token, _written_at(given, lambda cat, at: sm.scan(
            cat, table, author=_who(author), depth=depth, now=now, time=at, changed_only=changed_only)))
        if as_json:
            click.echo(res.model_dump_json(indent=2))
            return
        if res.written_vid is None:
            click.echo(f"nothing changed since the last data-depth pass (latest vid {res.vid}): nothing to scan")
            return
        click.echo(f"scanned {res.tables} table(s) at vid {res.vid} (depth {res.depth}): {res.findings} finding(s) "
                   f"only the data shows, {res.cleared} metadata suspicion(s) the data cleared; stored at vid "
                   f"{res.written_vid}" + (f"; {res.truncated} more not stored (over the per-table bound)"
                                           if res.truncated else "")
                   + "\nsee them with `semcat review list`")

    @review.command("edit")
    @click.argument("item_id")
    @click.argument("value")
    @_where
    @_author
    @click.option("--note", default=None, help="why (kept in the annotation's provenance)")
    def edit(item_id, value, data_dir, url, token, now, author, note) -> None:
        """Write VALUE (JSON, or plain text) instead of the suggestion, and close the item."""
        given, now = now, _clock(url, now)
        import semantic as sm

        try:
            val = json.loads(value)
        except ValueError:
            val = value

        def go(cat: Any, at: float | None) -> str:
            it = sm.review_item(cat, item_id, now=now)
            vid = sm.edit_and_accept(cat, it, author=_who(author), value=val, note=note, now=now, time=at)
            return f"edited {it.id}: wrote {it.table}:{it.proposed_key or it.annotation} at vid {vid}"
        click.echo(_run(data_dir, url, token, _written_at(given, go)))

    @review.command("dismiss")
    @click.argument("item_id", required=False)
    @click.option("--group", default=None, help="dismiss every item of this group (one underlying change)")
    @_where
    @_author
    @click.option("--reason", required=True, help="why the item needs nothing (kept with the decision)")
    def dismiss(item_id, group, data_dir, url, token, now, author, reason) -> None:
        """Close the item without change: a finding stays quiet until the history changes again; an
        agent annotation or proposal is removed."""
        given, now = now, _clock(url, now)
        import semantic as sm

        if (item_id is None) == (group is None):
            raise click.UsageError("give an ITEM_ID or --group GROUP (one of them)")

        def go(cat: Any, at: float | None) -> str:
            if group is not None:
                return _group_result(sm.decide_group(cat, group, "dismiss", _who(author), reason=reason, now=now,
                                                     time=at), "dismissed")
            it = sm.review_item(cat, item_id, now=now)
            vid = sm.dismiss(cat, it, author=_who(author), reason=reason, now=now, time=at)
            return f"dismissed {it.id} at vid {vid}"
        click.echo(_run(data_dir, url, token, _written_at(given, go)))
