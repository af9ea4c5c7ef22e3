"""`python -m eval.tpcds build --data DIR [--scale 0.01] [--days 7] [--variant plain|cryptic]`."""

from __future__ import annotations

import click


@click.group()
def main() -> None:
    """The TPC-DS lake (issue 45's second lake)."""


@main.command()
@click.option("--data", required=True, type=click.Path(file_okay=False), help="the lake directory (replaced)")
@click.option("--scale", default=0.01, show_default=True, type=float, help="TPC-DS scale factor")
@click.option("--days", default=7, show_default=True, type=int, help="daily loads after the initial one")
@click.option("--variant", default="plain", show_default=True, type=click.Choice(["plain", "cryptic"]),
              help="cryptic: under enterprise-style names with coded values, plus clutter tables (eval/LAKE-cryptic.md)")
def build(data: str, scale: float, days: int, variant: str) -> None:
    """Generate TPC-DS with tpcgen-cli, load it through the Spark bridge with a history, annotate it."""
    from eval.tpcds.build import build as run
    from eval.tpcds.naming import naming

    run(data, scale=scale, days=days, log=click.echo, naming=naming(variant))


if __name__ == "__main__":
    main()
