"""Did-you-mean for every name the CLI takes (catalog, namespace, table, branch, column, condition):
one message shape, one matcher (rapidfuzz, through `semantic.errors.did_you_mean`).

    no catalog 'acm'; did you mean 'acme'?
    no branch 'acme.core__restat'; did you mean 'acme.core__restate'? (list them with `semcat branch list`)

Invariant: the message names the kind and the name given, then the closest existing name when one is
close enough, else up to 20 of the existing names, then the hint."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["unknown", "catalog_names", "check_catalog"]


def unknown(kind: str, name: str, choices: Iterable[str], hint: str = "") -> str:
    """The message for a `kind` named `name` that is not among `choices`."""
    from semantic.errors import did_you_mean, listing

    pool = [c for c in dict.fromkeys(choices) if c]
    close = did_you_mean(name, pool, limit=1)
    msg = f"no {kind} {name!r}"
    if close:
        msg += f"; did you mean {close[0]!r}?"
    elif pool:
        msg += f"; the {kind} names are {listing(pool, 20)}"
    else:
        msg += f"; there is no {kind} at all"
    return msg + (f" ({hint})" if hint else "")


def catalog_names(cat: Any, vid: Any = None) -> list[str]:
    """The catalogs (first-level objects) at `vid`."""
    from catalog_core import lake

    return sorted(lake.name_of(o.path) for o in cat.query('/[obj_type = "catalog"]', vid=vid))


def check_catalog(cat: Any, name: str, vid: Any = None) -> None:
    """Raise click's usage error (exit 2) when `name` is no catalog at `vid`."""
    import click

    names = catalog_names(cat, vid)
    if name not in names:
        raise click.UsageError(unknown("catalog", name, names), ctx=click.get_current_context(silent=True))
