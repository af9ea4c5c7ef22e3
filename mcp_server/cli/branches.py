"""`semcat branch create | list | diff | publish | drop`: write-audit-publish from the shell.
Output is plain text, one line per item; errors print their message and exit with status 2."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcp_server.cli.sql import CliError, open_catalog

__all__ = ["run_branch"]


def _path(name: str | None) -> Any:
    """A catalog path for a dotted name (`acme.core__restate` -> `/acme/core__restate`), as every other
    command takes; a path (leading '/') is kept."""
    from catalog_core import lake

    if name is None or name.startswith("/"):
        return name
    try:
        return lake.object_path(name)
    except Exception as e:  # noqa: BLE001 - the name rules' own message says what is wrong
        raise CliError(getattr(e, "message", str(e))) from None


def _usage(message: str) -> Exception:
    """A name on the command line that names nothing: a usage error (exit 2, docs/cli.md)."""
    import click

    return click.UsageError(message, ctx=click.get_current_context(silent=True))


def _find(cat: Any, branch: str) -> Any:
    from catalog_core import lake
    from mcp_server.cli.names import unknown

    found = cat.branches()
    for b in found:
        if b.path == branch:
            return b
    names = [lake.name_of(b.path) for b in found]
    raise _usage(unknown("branch", lake.name_of(branch), names, "list them with `semcat branch list`"))


def _short(value: Any, width: int = 100) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= width else text[: width - 3] + "..."


def create(cat: Any, src: str, dst: str, vid: Any, author: str, message: str) -> None:
    src, dst = _path(src), _path(dst)
    if cat.get(src, vid=vid) is None:
        from catalog_core import lake
        from mcp_server.cli.names import unknown

        parent = src.rsplit("/", 1)[0] or "/"
        kids = [lake.name_of(o.path) for o in cat.children(parent, vid=vid) if not o.obj_id.startswith("_")] \
            if parent == "/" or cat.get(parent, vid=vid) is not None else []
        raise _usage(unknown("catalog or namespace", lake.name_of(src), kids))
    v = cat.clone(src, dst, vid, author=author, message=message)
    b = _find(cat, dst)
    print(f"branch {dst} of {src} at vid {b.fork_vid} (commit {v})")


def list_(cat: Any, prefix: str | None) -> None:
    prefix = _path(prefix)
    found = cat.branches(prefix)
    for b in found:
        print(f"{b.path}\tsource {b.source}\tfork_vid {b.fork_vid}\tsince_vid {b.since_vid}")
    if not found:
        print("no branches" + (f" under {prefix}" if prefix else ""))


def diff(cat: Any, branch: str, values: bool) -> None:
    branch = _path(branch)
    b = _find(cat, branch)
    n = 0
    for ch in cat.diff(b.since_vid, None, prefix=branch):
        n += 1
        print(f"{ch.kind:8} {ch.path}  (vid {ch.vid})")
        if values:
            if ch.before is not None:
                print(f"         - {_short(ch.before)}")
            if ch.after is not None:
                print(f"         + {_short(ch.after)}")
    print(f"{n} change(s) on {branch} since vid {b.since_vid}")


def publish(cat: Any, branch: str, onto: str | None, keep: bool, author: str, message: str) -> None:
    branch, onto = _path(branch), _path(onto)
    target = onto or _find(cat, branch).source
    vid = cat.publish(branch, target, author=author, message=message, keep=keep)
    print(f"published {branch} onto {target} at vid {vid}" + ("" if keep else f"; {branch} dropped"))


def drop(cat: Any, branch: str, author: str, message: str) -> None:
    branch = _path(branch)
    _find(cat, branch)
    vid = cat.drop_branch(branch, author=author, message=message)
    print(f"dropped {branch} at vid {vid}")


def run_branch(action: Callable[..., None], data_dir: str, token: str | None, *args: Any) -> None:
    import click

    import catalog_core as cc

    cat = None
    try:
        cat = open_catalog(data_dir, token)
        action(cat, *args)
    except cc.ConflictError as e:  # a failure (exit 1, docs/cli.md), one line per conflicting path
        raise click.ClickException("\n".join([e.message, *(f"  conflict: {p}" for p in e.details.get("paths") or [])])) \
            from None
    except cc.NotFoundError as e:  # a branch, path or snapshot named on the command line: a usage error
        raise _usage(e.message) from None
    except (cc.CatalogError, CliError) as e:
        raise click.ClickException(getattr(e, "message", str(e))) from None
    finally:
        if cat is not None and hasattr(cat, "close"):
            cat.close()
