"""One clock (issue 47): which time a CLI command against a server judges at. A module of its own, so
`options` and the commands that use it (`sql`, `lineage`, `review`) import it without a cycle."""

from __future__ import annotations

import click

__all__ = ["server_now", "say_clock"]


def server_now(url: str | None) -> float | None:
    """One clock (issue 47): the time a server at `url` judges at when it runs with --now (its /healthz names
    it), else None (it uses the clock, as this process does; also for no `url` or an unreachable server, which
    then fails in the command itself with its own message)."""
    if not url or not url.startswith(("http://", "https://")):
        return None
    import httpx

    try:
        theirs = httpx.get(url.rstrip("/") + "/healthz", timeout=10).json().get("now")
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return None if theirs is None else float(theirs)


def say_clock(url: str | None, what: str) -> float | None:
    """For a command that reads no clock itself against a server at `url` that runs with --now: say on stderr
    which time `what` is judged at (`what` names it, e.g. "lineage is judged at its snapshot, not at a clock");
    returns the server's --now (None when it runs on the clock: nothing to say)."""
    theirs = server_now(url)
    if theirs is not None:
        from catalog_core.model import iso_time

        click.echo(f"semcat: {what} (the server runs with --now {iso_time(theirs)})", err=True)
    return theirs
