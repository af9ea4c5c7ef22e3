"""`python -m eval.traps ...` or `semcat eval traps ...` (docs/findings.md, "Staleness on changes no one planned").

    python -m eval.traps generate --lake LAKE --seed 1 --out /tmp/t1      # a trapped copy + traps.json
    python -m eval.traps score --lake LAKE --name acme --seeds development --out RESULTS
    python -m eval.traps score-dir /tmp/t1 [/tmp/t2,...] --out RESULTS     # score existing trapped copies
    python -m eval.traps accept-dir /tmp/t1 [/tmp/t2,...] --out RESULTS    # accept everything, judged by the truth
    python -m eval.traps report RESULTS [RESULTS...]                        # the per-class table
    python -m eval.traps compare --before R1 --after R2                     # before/after per class

LAKE is a built lake directory (`semcat eval build` or `python -m eval.tpcds build`): its catalog
under LAKE/<history> (default enriched), its files under LAKE/warehouse. It is copied, never changed.
`--writers` (generate, score): the write paths the traps take, a comma list of spark, engine, iceberg
(default all three, a writer per trap drawn by the seed; eval/traps/generator.py says which kinds each
makes); iceberg starts a `semcat serve` on the copy, on loopback port SEMCAT_TRAPS_ICEBERG_PORT (default
a free one), for the run.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import click

from eval.traps.run import ISOLATIONS, SEEDS_FILE, parse_writers, run_seed, seeds_of, write_table

_writers = click.option("--writers", default="spark,engine,iceberg", show_default=True, callback=lambda c, p, v: parse_writers(v),
                        help="the write paths the traps may take (a comma list of spark, engine, iceberg): each trap's "
                             "writer is drawn by the seed among those its kind allows; iceberg runs a semcat serve on "
                             "the copy (port: SEMCAT_TRAPS_ICEBERG_PORT, default a free one)")


@click.group()
def main() -> None:
    """Trap generator and per-class scoring of staleness detection (issue 45)."""


@main.command()
@click.option("--lake", "lake_root", required=True, type=click.Path(exists=True, file_okay=False),
              help="a built lake directory (copied, never changed)")
@click.option("--history", default="enriched", show_default=True, help="the catalog under LAKE to copy")
@click.option("--seed", type=int, required=True)
@click.option("--out", required=True, type=click.Path(file_okay=False), help="where the trapped copy goes (replaced)")
@click.option("--per-class", default=1, show_default=True, type=int)
@click.option("--isolation", type=click.Choice(ISOLATIONS), default=None,
              help="how the copy is kept apart from LAKE: mount (a private mount namespace, root; the default "
                   "when available) or copy (the copy's catalog re-pointed to it)")
@_writers
def generate(lake_root: str, history: str, seed: int, out: str, per_class: int, isolation: str | None,
             writers: tuple[str, ...]) -> None:
    """Copy LAKE to OUT, apply the traps of SEED and write OUT/traps.json (the ground truth)."""
    res = run_seed(lake_root, history, seed, out, per_class=per_class, depths=(), log=click.echo, isolation=isolation,
                   writers=writers)
    click.echo(f"{len(res['truth']['traps'])} traps/controls; truth in {os.path.join(out, 'traps.json')}")


@main.command()
@click.option("--lake", "lake_root", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--name", required=True, help="the lake's label in the table (acme, cryptic, tpcds)")
@click.option("--history", default="enriched", show_default=True)
@click.option("--seeds", "which", default="development", show_default=True,
              help=f"development, held_out (from {SEEDS_FILE}) or a comma list")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="results directory (JSON per seed)")
@click.option("--work", default=None, type=click.Path(file_okay=False), help="scratch for the copies (default OUT/work)")
@click.option("--per-class", default=1, show_default=True, type=int)
@click.option("--keep", is_flag=True, help="keep the trapped copies")
@click.option("--isolation", type=click.Choice(ISOLATIONS), default=None, help="as for generate")
@_writers
def score(lake_root: str, name: str, history: str, which: str, out: str, work: str | None, per_class: int,
          keep: bool, isolation: str | None, writers: tuple[str, ...]) -> None:
    """Trap a copy of LAKE per seed, run staleness at both depths, score per class; write OUT/<name>-<seed>.json
    and print the per-class table."""
    import shutil

    seeds = seeds_of(which)
    os.makedirs(out, exist_ok=True)
    work = work or os.path.join(out, "work")
    results: list[dict[str, Any]] = []
    for s in seeds:
        t0 = time.time()
        dst = os.path.join(work, f"{name}-{s}")
        try:
            res = run_seed(lake_root, history, s, dst, per_class=per_class, log=click.echo, isolation=isolation,
                           writers=writers)
        except Exception:  # noqa: BLE001 - one seed's failure is reported; the others still run
            import traceback

            click.echo(f"{name} seed {s} FAILED:\n{traceback.format_exc()}", err=True)
            continue
        res["lake"], res["seconds"] = name, round(time.time() - t0, 1)
        with open(os.path.join(out, f"{name}-{s}.json"), "w") as fh:
            json.dump(res, fh, indent=1, default=str)
        results.append(res)
        click.echo(f"{name} seed {s}: {res['seconds']} s")
        if not keep:
            shutil.rmtree(dst, ignore_errors=True)
    write_table(results, sys.stdout)


def _label(copy: str, name: str | None) -> str:
    """The lake's label of a trapped copy: `name`, else its directory name up to its last '-'."""
    return name or os.path.basename(os.path.abspath(copy)).rstrip("/").rsplit("-", 1)[0]


def _copies(f: Any) -> Any:
    """The arguments and options `score-dir` and `accept-dir` share: trapped copies, --out, --name, --history."""
    for opt in reversed([
            click.argument("trapped", nargs=-1, required=True),
            click.option("--out", required=True, type=click.Path(file_okay=False), help="results directory (JSON per copy)"),
            click.option("--name", default=None,
                         help="the lake's label in the table (default: the copy's directory name up to its last '-')"),
            click.option("--history", default="enriched", show_default=True, help="the catalog under each copy")]):
        f = opt(f)
    return f


@main.command("score-dir")
@_copies
@click.option("--depths", default="metadata,data", show_default=True)
@click.option("--seeds", "which", default=None,
              help="only the copies whose truth has these seeds: development, held_out or a comma list")
@click.option("--work", default=None, type=click.Path(file_okay=False),
              help="scratch for the throwaway copies (default: the system temp directory)")
@click.option("--jobs", default=1, show_default=True, type=click.IntRange(min=1),
              help="copies scored at once (one process each)")
def score_dir(trapped: tuple[str, ...], out: str, name: str | None, history: str, depths: str, which: str | None,
              work: str | None, jobs: int) -> None:
    """Score existing trapped copies (TRAPPED: directories written by `generate`, or comma lists of them)
    with the detector on PYTHONPATH; each copy is scored on a throwaway copy of it and never changed.
    Writes OUT/<name>-<seed>.json (what `score` writes) and prints the per-class table."""
    from eval.traps.scoredir import read_copy

    dirs = [d for arg in trapped for d in arg.split(",") if d.strip()]
    deps = tuple(d for d in depths.split(",") if d)
    bad = [d for d in deps if d not in ("metadata", "data")]
    if bad:
        raise click.BadParameter(f"unknown depth {bad[0]!r}: use metadata, data or both (comma list)",
                                 param_hint="--depths")
    wanted = set(seeds_of(which)) if which else None
    for d in dirs:  # every copy checked before the first is scored: a typo costs nothing
        read_copy(d, history)
    os.makedirs(out, exist_ok=True)
    todo = [d for d in dirs if wanted is None or int(read_copy(d)[1]["seed"]) in wanted]
    results: list[dict[str, Any]] = []
    failed = []

    def done(d: str, res: dict[str, Any] | None, err: str | None) -> None:
        if res is None:
            click.echo(f"{d} FAILED:\n{err}", err=True)
            failed.append(d)
            return
        label = _label(d, name)
        res["lake"] = label
        path = os.path.join(out, f"{label}-{res['seed']}.json")
        with open(path, "w") as fh:
            json.dump(res, fh, indent=1, default=str)
        results.append(res)
        click.echo(f"{label} seed {res['seed']}: {res['seconds']} s -> {path}")

    if jobs == 1:
        for d in todo:
            done(d, *_score_one(d, history, deps, work))
    else:
        import concurrent.futures as cf
        import multiprocessing as mp

        with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as pool:
            futs = {pool.submit(_score_one, d, history, deps, work): d for d in todo}
            for f in cf.as_completed(futs):
                done(futs[f], *f.result())
    if results:
        from eval.traps.run import report

        report(results, sys.stdout)
    if failed:
        raise SystemExit(f"{len(failed)} cop{'y' if len(failed) == 1 else 'ies'} failed: {', '.join(failed)}")


def _score_one(d: str, history: str, deps: tuple[str, ...], work: str | None) -> tuple[dict[str, Any] | None,
                                                                                   str | None]:
    """One copy scored: (result, None), or (None, the traceback): one copy's failure never stops the others."""
    from eval.traps.scoredir import score_copy

    try:
        return score_copy(d, history=history, depths=deps, work=work, log=click.echo), None
    except (Exception, SystemExit):  # noqa: BLE001 - reported by the caller
        import traceback

        return None, traceback.format_exc()


@main.command("accept-dir")
@_copies
@click.option("--work", default=None, type=click.Path(file_okay=False),
              help="scratch for the throwaway copies (default: the system temp directory)")
def accept_dir(trapped: tuple[str, ...], out: str, name: str | None, history: str, work: str | None) -> None:
    """Accept everything the inbox offers on a throwaway copy of each trapped copy (TRAPPED: directories
    written by `generate`, or comma lists), at the truth's check time, and judge each accepted fix by the
    truth (eval/traps/acceptall.py). Writes OUT/<name>-<seed>.accept.json and prints one row per copy;
    exits non-zero when a copy fails."""
    from eval.traps.acceptall import accept_copy
    from eval.traps.scoredir import read_copy

    dirs = [d for arg in trapped for d in arg.split(",") if d.strip()]
    for d in dirs:  # every copy checked before the first is run
        read_copy(d, history)
    os.makedirs(out, exist_ok=True)
    rows, failed = [], []
    for d in dirs:
        label = _label(d, name)
        try:
            res = accept_copy(d, history=history, work=work, log=click.echo)
        except (Exception, SystemExit):  # noqa: BLE001 - one copy's failure never stops the others
            import traceback

            click.echo(f"{d} FAILED:\n{traceback.format_exc()}", err=True)
            failed.append(d)
            continue
        res["lake"] = label
        with open(os.path.join(out, f"{label}-{res['seed']}.accept.json"), "w") as fh:
            json.dump(res, fh, indent=1, default=str)
        rows.append(res)
    click.echo("\n| copy | findings | offered | accepted | right | wrong | on a true claim | flagged before |")
    click.echo("|---|---|---|---|---|---|---|---|")
    for r in rows:
        click.echo(f"| {r['lake']}-{r['seed']} | {r['findings']} | {r['offered']} | {r['accepted']} | {len(r['right'])} "
                   f"| {len(r['wrong'])} | {len(r['on_true'])} | {len(r['before'])} |")
    for r in rows:
        for v in ("wrong", "on_true"):
            for it in r[v]:
                click.echo(f"{r['lake']}-{r['seed']} {v.upper()}: {it['table']} {it['key']} {it['reason']} "
                           f"wrote {it['fix']}" + (f", truth {it.get('truth_fix')}" if v == "wrong" else ""))
    if failed:
        raise SystemExit(f"{len(failed)} cop{'y' if len(failed) == 1 else 'ies'} failed: {', '.join(failed)}")


@main.command("_seed", hidden=True)
@click.option("--lake", "lake_root", required=True)
@click.option("--history", default="enriched")
@click.option("--seed", type=int, required=True)
@click.option("--per-class", default=1, type=int)
@click.option("--depths", default="metadata,data")
@click.option("--result", required=True)
@_writers
def seed_cmd(lake_root: str, history: str, seed: int, per_class: int, depths: str, result: str,
             writers: tuple[str, ...]) -> None:
    """(internal) One seed on the copy mounted at LAKE; the result to RESULT."""
    from eval.traps.run import seed_in_place

    res = seed_in_place(lake_root, history, seed, per_class, tuple(d for d in depths.split(",") if d), log=click.echo,
                        writers=writers)
    with open(result, "w") as fh:
        json.dump(res, fh, indent=1, default=str)


@main.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--misses", "show_misses", is_flag=True, help="also list every miss, false alarm and wrong fix")
def report_cmd(results: tuple[str, ...], show_misses: bool) -> None:
    """The per-class table (markdown) of every OUT/<lake>-<seed>.json under RESULTS directories."""
    from eval.traps.run import report

    runs = _load(results)
    report(runs, sys.stdout)
    if show_misses:
        from eval.traps.run import misses

        sys.stdout.write("\n")
        misses(runs, sys.stdout)


@main.command("compare")
@click.option("--before", "before_dirs", multiple=True, required=True, type=click.Path(exists=True, file_okay=False),
              help="a results directory of the detector before (repeatable)")
@click.option("--after", "after_dirs", multiple=True, required=True, type=click.Path(exists=True, file_okay=False),
              help="a results directory of the detector after (repeatable)")
def compare_cmd(before_dirs: tuple[str, ...], after_dirs: tuple[str, ...]) -> None:
    """Before/after per-class tables (markdown) over the copies both sides scored; a note for any seed
    scored on one side only or on different trapped copies."""
    from eval.traps.run import compare

    compare(_load(before_dirs), _load(after_dirs), sys.stdout)


@main.command("rescore")
@click.argument("results", type=click.Path(exists=True, file_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="directory for the re-scored JSONs")
def rescore_cmd(results: str, out: str) -> None:
    """Score the flags a results directory stored (`score`/`score-dir` keep each depth's flags before and after
    the traps) again with this tree's scorer, without running the detector: so two detectors compare under one
    scoring rule. Writes OUT/<name>.json with the new scores."""
    from eval.traps.score import score

    runs = _load((results,))
    if not runs:
        raise click.UsageError(f"no results (<name>-<seed>.json) in {results}: give a directory `score-dir` wrote")
    os.makedirs(out, exist_ok=True)
    for r in runs:
        flags = r.get("flags") or {}
        if not flags:
            raise click.UsageError(f"{r.get('copy')}: no stored flags to re-score (scored before flags were kept)")
        r["scores"] = {d: score(r["truth"], f["before"], f["after"]) for d, f in flags.items()}
        r["rescored"] = True
        name = f"{r.get('lake', 'lake')}-{r['seed']}.json"
        with open(os.path.join(out, name), "w") as fh:
            json.dump(r, fh, indent=1, default=str)
    click.echo(f"re-scored {len(runs)} results into {out}")


def _load(dirs: tuple[str, ...]) -> list[dict[str, Any]]:
    import glob

    runs = []
    for d in dirs:
        for f in sorted(glob.glob(os.path.join(d, "*-*.json"))):
            with open(f) as fh:
                runs.append(json.load(fh))
    return runs


if __name__ == "__main__":
    main()
