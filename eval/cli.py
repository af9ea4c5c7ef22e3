"""The `semcat eval` commands (build, run, serve, score) and what the rest of the CLI asks of the eval
package (`semcat demo`'s tour, `semcat mcp --hide-*`'s read models): the one module of `eval` the `semcat`
CLI imports, lazily (mcp_server/cli/__init__.py, `_LAZY`). Heavy imports stay inside the commands."""

from __future__ import annotations

from typing import Any

import click

from mcp_server.cli.options import needs as _needs
from mcp_server.cli.options import sql_cache as _sql_cache

__all__ = ["eval_group", "reads_for", "run_tour"]


def reads_for(hide_annotations: bool, hide_findings: bool) -> Any:
    """The read model of `semcat mcp --hide-annotations / --hide-findings` (eval.harness.conditions)."""
    from eval.harness.conditions import reads_for as conditions_reads

    return conditions_reads(hide_annotations, hide_findings)


def run_tour(data_dir: str, fresh: bool, lake: str | None) -> dict[str, str]:
    """`semcat demo`: the agent tour (eval.tour)."""
    from eval.tour import run_tour as tour

    return tour(data_dir, fresh=fresh, lake=lake)


@click.group("eval")
def eval_group() -> None:
    """The evaluation harness: build the Acme lake, run questions against it and report."""


@eval_group.command("build")
@click.option("--data", "--out", "data_dir", required=True,
              help="output directory (DIR/enriched, DIR/stale, manifest, names.json)")
@click.option("--seed", default=7, show_default=True, type=int)
@click.option("--scale", default="small", show_default=True, type=click.Choice(["small", "full", "enterprise"]),
              help="enterprise: the small Acme lake plus eight generated domains (500+ tables, 18 months; eval/lake/enterprise.py)")
@click.option("--variant", default="plain", show_default=True, type=click.Choice(["plain", "cryptic"]),
              help="cryptic: the same lake under enterprise-style abbreviations and coded values, plus clutter "
                   "tables (eval/LAKE-cryptic.md)")
@click.option("--world", default="acme", show_default=True, type=click.Choice(["acme", "tpcds"]),
              help="tpcds: the TPC-DS lake (tpcgen-cli) with scripted changes, both histories, the manifest and the "
                   "stale+reviewed history (eval/tpcds/world.py; --variant applies, --seed and --scale do not)")
def eval_build(data_dir, seed, scale, variant, world) -> None:
    """Build the Acme lake with Spark through the bridge, its history and both annotation histories."""
    if scale == "enterprise" and variant != "plain":
        raise click.BadParameter("the enterprise world's generated domains have plain names only; build it with "
                                 "--variant plain (the default)", param_hint="--variant")
    _needs("pyspark")
    if world == "tpcds":  # issue 49: the second lake as an eval world
        from eval.tpcds.world import build_world

        build_world(data_dir, variant=variant, log=lambda m: click.echo(m, err=True))
        return
    from eval.lake import build

    build(data_dir, seed=seed, scale=scale, log=lambda m: click.echo(m, err=True), variant=variant)


@eval_group.command("review")
@click.option("--data", "data_dir", required=True, help="a lake built by `semcat eval build`")
@click.option("--force", is_flag=True, help="review the stale history again (replaces DIR/reviewed)")
def eval_review(data_dir, force) -> None:
    """Build DIR/reviewed, the `stale+reviewed` condition's history: DIR/stale after a scripted steward ran the
    data-depth scan, accepted every fix the review loop validates and dismissed the rest; writes
    DIR/reviewed_report.json (accepted writes judged against the manifest: fixed, partial, false_fact)."""
    from catalog_core.errors import CatalogError
    from eval.harness.reviewed import build_reviewed

    try:
        report = build_reviewed(data_dir, force=force, log=lambda m: click.echo(m, err=True))
    except (FileNotFoundError, FileExistsError) as exc:
        raise click.ClickException(str(exc)) from None
    except CatalogError as exc:
        raise click.ClickException(exc.message) from None
    click.echo(" ".join(f"{k}={v}" for k, v in report["summary"].items()))


@eval_group.command("run")
@click.option("--data", "data_dirs", required=True, multiple=True,
              help="a lake built by `semcat eval build` (repeat for several seeds: correct only if correct at all; "
                   "lakes of different variants, or VARIANT=DIR, are run and reported side by side)")
@click.option("--questions", "questions_file", default=None,
              help="question file (eval/harness/questions.py format)  [default: eval/questions/public.yaml]")
@click.option("--conditions", default="bare,enriched,stale,stale+detect", show_default=True,
              help="comma-separated: bare, enriched, stale, stale+detect, enriched+detect, static, stale+reviewed")
@click.option("--agent", "agent_kind", default="offline", show_default=True,
              help="offline | openai, or module:factory (a callable returning a fresh agent)")
@click.option("--base-url", default=None, help="--agent openai: the endpoint (before /chat/completions)")
@click.option("--model", default=None, help="--agent openai: the model name")
@click.option("--out", "out_dir", required=True, help="output directory: results.jsonl, report.md, chart.png")
@click.option("--limit", default=None, type=click.IntRange(min=1), help="only the first N questions")
@click.option("--subset", "subset_spec", default=None, metavar="stale-events[:K]",
              help="only the questions a rule picks (never their outcomes): for each detectable stale event of the "
                   "manifest (table, kind, change day), the first K questions (id order, default 1) whose gold reads "
                   "one of its column, metric or relationship annotations; --limit then takes the first N")
@click.option("--detector/--no-detector", default=True, show_default=True,
              help="score the staleness detector against the manifest (metadata and data depth)")
@click.option("--progress/--no-progress", default=True, show_default=True)
def eval_run(data_dirs, questions_file, conditions, agent_kind, base_url, model, out_dir, limit, subset_spec,
             detector, progress) -> None:
    """Run every question x condition at one pinned snapshot, score it, and write the report."""
    _needs("matplotlib")
    import importlib
    import os
    import shlex
    import sys

    from eval.harness.questions import QuestionFileError, load_questions
    from eval.harness.report import headline, write_report
    from eval.harness.runner import run_eval, validate_conditions

    try:
        conds = validate_conditions(conditions.split(","))
    except ValueError as exc:
        raise click.BadParameter(_condition_hint(str(exc), conditions.split(",")), param_hint="--conditions") from None
    subset = _subset_k(subset_spec)
    if questions_file is None:
        import eval as _eval_pkg

        questions_file = os.path.join(os.path.dirname(_eval_pkg.__file__), "questions", "public.yaml")
    try:
        questions = load_questions(questions_file)
    except QuestionFileError as exc:
        raise click.BadParameter(str(exc), param_hint="--questions") from None
    if ":" in agent_kind:
        mod, _, attr = agent_kind.partition(":")
        try:
            factory = getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError) as exc:
            raise click.BadParameter(f"cannot load agent factory {agent_kind!r}: {exc}", param_hint="--agent") from None
    else:
        make_agent = getattr(importlib.import_module("eval.agents"), "make_agent", None)
        if make_agent is None:
            raise click.ClickException("this checkout has no eval.agents.make_agent yet: pass --agent module:factory")

        def factory():
            return make_agent(agent_kind, base_url=base_url, model=model)

        try:
            factory()
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--agent") from None
    command = "semcat " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    groups = _variant_groups(data_dirs)
    if len(groups) > 1:  # several variants: each run and reported in OUT/<variant>/, then side by side
        from eval.harness.report import variants_headline, write_variants_report

        for label, dirs in groups.items():
            try:
                run_eval(dirs, questions, conds, factory, os.path.join(out_dir, label), limit=limit,
                         progress=progress, command=command, detector_depths=("metadata", "data") if detector else (),
                         subset=subset)
            except (FileNotFoundError, ValueError) as exc:
                raise click.ClickException(f"{label}: {exc}") from None
            write_report(os.path.join(out_dir, label))
        paths = write_variants_report(out_dir, list(groups))
        click.echo(variants_headline(out_dir))
        click.echo(f"\nreport: {paths['report']}  (one directory per variant: {', '.join(groups)})")
        return
    try:
        run_eval(next(iter(groups.values())), questions, conds, factory, out_dir, limit=limit, progress=progress,
                 command=command, detector_depths=("metadata", "data") if detector else (), subset=subset)
    except (FileNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    paths = write_report(out_dir)
    import json

    _echo_subset(out_dir)
    with open(paths["summary"], encoding="utf-8") as fh:
        click.echo(headline(json.load(fh)))
    click.echo(f"\nreport: {paths['report']}  chart: {paths['chart']}  lines: {out_dir}/results.jsonl")


def _subset_k(spec: str | None) -> int | None:
    """--subset stale-events[:K] -> K (None without --subset)."""
    if spec is None:
        return None
    from eval.harness.touches import parse_subset

    try:
        return parse_subset(spec)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--subset") from None


def _echo_subset(out_dir: str) -> None:
    """The questions a --subset rule chose (run.json), one line before the table."""
    import json
    import os

    with open(os.path.join(out_dir, "run.json"), encoding="utf-8") as fh:
        chosen = json.load(fh).get("subset")
    if chosen:
        click.echo(f"subset {chosen['rule']}:{chosen['k']}: {len(chosen['questions'])} questions "
                   f"({', '.join(chosen['questions'])})\n")


def _variant_groups(data_dirs) -> dict[str, list[str]]:
    """--data values grouped by lake variant, in order: `VARIANT=DIR` names it, else the lake's names.json
    says (plain when it has none)."""
    import os

    from eval.lake.naming import load_names

    groups: dict[str, list[str]] = {}
    for d in data_dirs:
        label, sep, path = d.partition("=")
        if not sep:
            label, path = None, d
        if not os.path.isdir(path):
            raise click.BadParameter(f"{path}: no such lake directory; build one with `semcat eval build --data "
                                     f"{path}`", param_hint="--data")
        if label is None:
            try:
                label = load_names(path).variant
            except ValueError as exc:
                raise click.BadParameter(f"{path}: {exc}", param_hint="--data") from None
        groups.setdefault(label, []).append(path)
    return groups


def _default_questions() -> str:
    import os

    import eval as _eval_pkg

    return os.path.join(os.path.dirname(_eval_pkg.__file__), "questions", "public.yaml")


@eval_group.command("serve")
@click.option("--data", "data_dir", required=True, help="a lake built by `semcat eval build`")
@click.option("--condition", required=True,
              help="one of bare, enriched, stale, stale+detect, enriched+detect, static, stale+reviewed (the agent is "
                   "never told which)")
@click.option("--questions", "questions_file", default=None,
              help="question file (eval/harness/questions.py format)  [default: eval/questions/public.yaml]")
@click.option("--port", default=None, type=click.IntRange(1, 65535),
              help="serve streamable HTTP at http://127.0.0.1:PORT/mcp (default: stdio)")
@click.option("--out", "out_dir", required=True,
              help="where the run is recorded: run.json, sessions.jsonl, calls.jsonl, answers.jsonl (score with "
                   "`eval score`)")
@click.option("--per-agent", "per_agent", default=5, show_default=True, type=click.IntRange(min=0),
              help="questions one conversation answers before a fresh agent takes over (0: no limit)")
@_sql_cache
def eval_serve(data_dir, condition, questions_file, port, out_dir, per_agent) -> None:
    """Serve one condition's MCP tools and the questions to your own agent (next_question, submit_answer,
    abstain), recording every call and answer for `semcat eval score`."""
    import shlex
    import sys

    from catalog_core.errors import CatalogError
    from eval.harness.questions import QuestionFileError
    from eval.harness.runner import validate_conditions
    from eval.harness.serve import serve

    try:
        validate_conditions([condition])
    except ValueError as exc:
        raise click.BadParameter(_condition_hint(str(exc), [condition]), param_hint="--condition") from None
    command = "semcat " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    try:
        serve(data_dir, condition, questions_file or _default_questions(), out_dir, port=port, command=command,
              log=lambda m: click.echo(m, err=True), per_agent=per_agent)
    except QuestionFileError as exc:
        raise click.BadParameter(str(exc), param_hint="--questions") from None
    except (FileNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    except CatalogError as exc:  # the history is open in another process, ...
        raise click.ClickException(exc.message) from None


@eval_group.command("score")
@click.option("--data", "data_dirs", required=True, multiple=True,
              help="the lake the runs were served from (repeat, or VARIANT=DIR, for runs of several lakes: each "
                   "run is scored against the lake its run.json names, the variants side by side)")
@click.option("--runs", "run_dirs", required=True, multiple=True,
              help="a directory `semcat eval serve --out` recorded (repeat: one per condition; several runs of "
                   "one condition are its repeats)")
@click.option("--questions", "questions_file", default=None,
              help="question file  [default: the one the first run's run.json names]")
@click.option("--out", "out_dir", required=True, help="output directory: results.jsonl, report.md, chart.png")
@click.option("--detector/--no-detector", default=True, show_default=True,
              help="score the staleness detector against the manifest (metadata and data depth)")
def eval_score(data_dirs, run_dirs, questions_file, out_dir, detector) -> None:
    """Score runs recorded by `semcat eval serve` with the comparator, metrics and report of `eval run`."""
    _needs("matplotlib")
    import json
    import shlex
    import sys

    from catalog_core.errors import CatalogError
    from eval.harness.questions import QuestionFileError, load_questions
    from eval.harness.report import headline, write_report
    from eval.harness.score import score_runs

    try:
        questions = load_questions(questions_file) if questions_file else None
    except QuestionFileError as exc:
        raise click.BadParameter(str(exc), param_hint="--questions") from None
    command = "semcat " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    groups = _variant_groups(data_dirs)
    if len(data_dirs) > 1:
        _score_variants(groups, run_dirs, questions, out_dir, command, detector)
        return
    data_dir = data_dirs[0].partition("=")[2] or data_dirs[0]
    try:
        score_runs(data_dir, list(run_dirs), out_dir, questions=questions, command=command,
                   detector_depths=("metadata", "data") if detector else (), log=lambda m: click.echo(m, err=True))
    except QuestionFileError as exc:
        raise click.ClickException(str(exc)) from None
    except (FileNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    except CatalogError as exc:
        raise click.ClickException(exc.message) from None
    paths = write_report(out_dir)
    with open(paths["summary"], encoding="utf-8") as fh:
        click.echo(headline(json.load(fh)))
    click.echo(f"\nreport: {paths['report']}  chart: {paths['chart']}  lines: {out_dir}/results.jsonl")


def _score_variants(groups, run_dirs, questions, out_dir, command, detector) -> None:
    """`eval score` over runs of several lakes: each run goes to the lake its run.json names; each lake
    (variant) is scored into OUT/<variant>/, then reported side by side."""
    import json
    import os

    from catalog_core.errors import CatalogError
    from eval.harness.report import variants_headline, write_report, write_variants_report
    from eval.harness.score import score_runs

    lake_of = {os.path.abspath(d): label for label, dirs in groups.items() for d in dirs}
    per: dict[str, dict[str, list[str]]] = {}
    for r in run_dirs:
        try:
            with open(os.path.join(r, "run.json"), encoding="utf-8") as fh:
                lake = os.path.abspath(str(json.load(fh).get("lake")))
        except (OSError, ValueError) as exc:
            raise click.BadParameter(f"{r}: cannot read its run.json ({exc})", param_hint="--runs") from None
        if lake not in lake_of:
            raise click.BadParameter(f"{r} was served from {lake}, which is not one of the --data lakes",
                                     param_hint="--runs")
        per.setdefault(lake_of[lake], {}).setdefault(lake, []).append(r)
    for label, lakes in per.items():
        if len(lakes) > 1:
            raise click.BadParameter(f"variant {label}: runs of {len(lakes)} lakes ({', '.join(lakes)}); score one "
                                     "lake per variant", param_hint="--data")
        (lake, runs), = lakes.items()
        try:
            score_runs(lake, runs, os.path.join(out_dir, label), questions=questions, command=command,
                       detector_depths=("metadata", "data") if detector else (),
                       log=lambda m: click.echo(m, err=True))
        except (FileNotFoundError, ValueError) as exc:
            raise click.ClickException(f"{label}: {exc}") from None
        except CatalogError as exc:
            raise click.ClickException(exc.message) from None
        write_report(os.path.join(out_dir, label))
    paths = write_variants_report(out_dir, list(per))
    click.echo(variants_headline(out_dir))
    click.echo(f"\nreport: {paths['report']}  (one directory per variant: {', '.join(per)})")


def _condition_hint(message: str, given: list[str]) -> str:
    """The eval's message with did-you-mean for the first unknown condition (mcp_server.cli.names)."""
    from eval.harness.runner import HIDE_FLAGS
    from mcp_server.cli.names import unknown

    bad = [c.strip() for c in given if c.strip() and c.strip() not in HIDE_FLAGS]
    return unknown("condition", bad[0], HIDE_FLAGS, message) if bad else message


# issue 45's trap generator and second lake: `semcat eval traps ...` (= `python -m eval.traps`) and
# `semcat eval tpcds build` (= `python -m eval.tpcds build`); both modules import only click at load
from eval.tpcds.cli import main as _tpcds  # noqa: E402
from eval.traps.cli import main as _traps  # noqa: E402

eval_group.add_command(_traps, "traps")
eval_group.add_command(_tpcds, "tpcds")
