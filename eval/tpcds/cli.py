"""`python -m eval.tpcds build --data DIR [--scale 0.01] [--days 7]`."""

from __future__ import annotations

import click


@click.group()
def main() -> None:
    """The TPC-DS lake (issue 45's second lake)."""


@main.command()
@click.option("--data", required=True, type=click.Path(file_okay=False), help="the lake directory (replaced)")
@click.option("--scale", default=0.01, show_default=True, type=float, help="TPC-DS scale factor")
@click.option("--days", default=7, show_default=True, type=int, help="daily loads after the initial one")
def build(data: str, scale: float, days: int) -> None:
    """Generate TPC-DS with tpcgen-cli, load it through the Spark bridge with a history, annotate it."""
    from eval.tpcds.build import build as run

    run(data, scale=scale, days=days, log=click.echo)


if __name__ == "__main__":
    main()
