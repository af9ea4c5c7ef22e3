"""The `semcat` console script. Subcommands import their layer lazily, so `semcat --help`
stays fast and a missing optional piece only affects its own subcommand: PySpark (extra `spark`) and
matplotlib (extra `eval`) are not installed by a plain `pip install semcat`, and a command that needs
one says in one line which extra to install (`_needs` up front, `_Main` for any other import of them)."""

from __future__ import annotations

from typing import Any

import click

__all__ = ["main"]

# optional dependency -> (the extra that installs it, its name)
_EXTRAS = {"pyspark": ("spark", "PySpark"), "matplotlib": ("eval", "matplotlib")}


def _missing(module: str) -> click.ClickException:
    extra, name = _EXTRAS[module]
    return click.ClickException(f"this command needs {name}, which is not installed: pip install 'semcat[{extra}]'")


def _needs(*modules: str) -> None:
    """Refuse, before any work, a command whose optional dependencies (keys of _EXTRAS) are not installed."""
    import importlib.util

    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise _missing(module)


class _Main(click.Group):
    """The `semcat` group: an import of a missing optional dependency anywhere below becomes `_missing`'s line."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ModuleNotFoundError as exc:
            root = (exc.name or "").partition(".")[0]
            if root not in _EXTRAS:
                raise
            raise _missing(root) from None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("semcat")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_version(), "--version", "-V", prog_name="semcat", message="%(prog)s %(version)s")
def main() -> None:
    """semcat: a versioned, transactional catalog for data lakes that LLM agents can trust.

    Errors print `Error: ...` on stderr: exit 2 when the command line is wrong (an unknown option, a bad
    value, a name that does not exist), exit 1 when the command ran and failed (docs/cli.md)."""


_create = click.option("--create", is_flag=True,
                       help="make a new empty catalog in --data if it holds none (otherwise that is refused)")
def _parse_now(_ctx: click.Context, _param: click.Parameter, value: str | None) -> float | None:
    from catalog_core.model import parse_time

    if value is None:
        return None
    t = parse_time(value)
    if t is None:
        raise click.BadParameter(f"{value!r} is not an ISO-8601 time or seconds since the epoch, e.g. "
                                 "2025-03-10T13:00:00Z")
    return t


_now = click.option("--now", default=None, callback=_parse_now,
                    help="judge freshness at this ISO time (default: the clock), e.g. a lake's evaluation time "
                         "2025-03-10T13:00:00Z")
_read_only = click.option("--read-only", is_flag=True,
                          help="no annotate tool: agents read the catalog but never write to it")
def _parse_sql_cache(_ctx: click.Context, _param: click.Parameter, value: str | None) -> int | None:
    """--sql-cache BYTES: the same setting as SEMCAT_SQL_CACHE_BYTES, set here and for the SQL workers."""
    import os

    import catalog_core as cc
    from catalog_core.errors import CatalogError
    from catalog_core.sql.snapcache import parse_bytes

    if value is None:
        return None
    try:
        n = parse_bytes(value, "a cache size")
        cc.set_sql_cache_budget(n)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    except CatalogError as exc:  # beyond 1 TiB
        raise click.BadParameter(exc.message) from None
    os.environ["SEMCAT_SQL_CACHE_BYTES"] = str(n)  # the SQL workers this process starts read it too
    return n


_sql_cache = click.option("--sql-cache", "sql_cache", default=None, metavar="BYTES", callback=_parse_sql_cache,
                          expose_value=False,
                          help="bytes of decoded tables each SQL worker keeps for run_sql (e.g. 512M, 2G; 0 turns "
                               "the snapshot cache off)  [default: SEMCAT_SQL_CACHE_BYTES, else 1/8 of RAM up to 4G]")
_token_budget = click.option("--token-budget", default=8000, show_default=True, type=click.IntRange(min=500),
                             help="largest MCP tool response, in o200k tokens: a longer list is cut and "
                                  "next_cursor resumes it")


@main.command()
@click.option("--data", "data_dir", default="data", show_default=True, help="catalog data directory")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8765, show_default=True, type=int)
@click.option("--tokens", "tokens_file", default=None,
              help="file of '<token>:<role>[ source=human|agent|service][ name=NAME]' lines (roles read|write; "
                   "docs/auth.md)")
@click.option("--oauth-issuer", envvar="SEMCAT_OAUTH_ISSUER", default=None, metavar="URL",
              help="accept JWT access tokens of this OAuth / OpenID issuer (e.g. https://idp.example.com/realms/data)"
                   "  [env SEMCAT_OAUTH_ISSUER]")
@click.option("--resource-uri", envvar="SEMCAT_RESOURCE_URI", default=None, metavar="URL",
              help="this server's resource URI, the tokens' required audience  [default: http://HOST:PORT/mcp; "
                   "env SEMCAT_RESOURCE_URI]")
@click.option("--oauth-audience", envvar="SEMCAT_OAUTH_AUDIENCE", multiple=True, metavar="AUD",
              help="another accepted 'aud' value, for an IdP that cannot put the resource URI there (repeatable)"
                   "  [env SEMCAT_OAUTH_AUDIENCE, space-separated]")
@click.option("--oauth-read-scope", envvar="SEMCAT_OAUTH_READ_SCOPE", default="semcat:read", show_default=True,
              help="scope that gives the read role")
@click.option("--oauth-write-scope", envvar="SEMCAT_OAUTH_WRITE_SCOPE", default="semcat:write", show_default=True,
              help="scope that gives the write role (write implies read)")
@click.option("--oauth-source-claim", envvar="SEMCAT_OAUTH_SOURCE_CLAIM", default=None, metavar="CLAIM",
              help="token claim whose value (human|agent|service) is the caller's source  [default: every OAuth "
                   "caller is an agent]")
@click.option("--oauth-groups-claim", envvar="SEMCAT_OAUTH_GROUPS_CLAIM", default="groups", show_default=True,
              help="token claim listing the caller's groups, for group:NAME grants (docs/grants.md)")
@click.option("--oauth-leeway", envvar="SEMCAT_OAUTH_LEEWAY", default=30.0, show_default=True,
              type=click.FloatRange(0, 300), help="clock skew allowed on exp / nbf, seconds")
@click.option("--protocol", default="ospl", show_default=True, type=click.Choice(["ospl", "osl", "mgl"]))
@click.option("--max-request-mb", default=64, show_default=True, type=float, help="request body size limit")
@click.option("--txn-timeout", default=60.0, show_default=True, type=float, help="idle transaction timeout, s")
@click.option("--author", default=None, help="author of annotations written through /mcp without a token")
@click.option("--allowed-host", "allowed_hosts", multiple=True, metavar="NAME[:PORT]",
              help="a Host name clients use besides the bound address (repeatable; docs/security.md)")
@click.option("--allowed-origin", "allowed_origins", multiple=True, metavar="URL",
              help="a browser origin (scheme://host[:port]) that may call this server (repeatable)")
@click.option("--limit", "limits", multiple=True, metavar="NAME=PER_TOKEN/TOTAL",
              help="a cap: requests, sessions, clones or streams (e.g. sessions=100/10000), or "
                   "stream_idle_s=SECONDS (repeatable; defaults in docs/security.md)")
@_now
@_token_budget
@_read_only
@_create
@_sql_cache
def serve(data_dir, host, port, tokens_file, oauth_issuer, resource_uri, oauth_audience, oauth_read_scope,
          oauth_write_scope, oauth_source_claim, oauth_groups_claim, oauth_leeway, protocol, max_request_mb, txn_timeout, author,
          allowed_hosts, allowed_origins, limits, now, token_budget, read_only, create) -> None:
    """Serve the catalog over HTTP: the engine API under /v1 (OpenAPI at /openapi.json) and the MCP
    tools over streamable HTTP at /mcp, both behind the bearer tokens of --tokens (or SEMCAT_TOKENS)
    and, with --oauth-issuer, OAuth access tokens of that issuer (docs/auth.md)."""
    from mcp_server.http.oauth import config_from_options
    from mcp_server.http.policy import parse_limit
    from mcp_server.http.server import run

    try:
        oauth = config_from_options(oauth_issuer, resource_uri, host, port,
                                    audiences=[a for v in oauth_audience for a in v.split()],
                                    read_scope=oauth_read_scope, write_scope=oauth_write_scope,
                                    source_claim=oauth_source_claim, leeway_s=oauth_leeway,
                                    groups_claim=oauth_groups_claim)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        caps = dict(parse_limit(x) for x in limits)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--limit") from None

    options: dict[str, Any] = {"token_budget": token_budget, "read_only": read_only}
    if author:
        options["author"] = author
    if now is not None:
        options["now"] = now  # seconds: parsed by the --now option
    run(data_dir=data_dir, host=host, port=port, tokens_file=tokens_file, protocol=protocol,
        max_request_bytes=int(max_request_mb * 1024 * 1024), txn_timeout_s=txn_timeout, create=create,
        mcp_options=options, oauth=oauth, limits=caps, allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins)


@main.command()
@click.argument("sql")
@click.option("--data", "data_dir", default="data", show_default=True, help="catalog data directory or http(s) URL")
@click.option("--snapshot", default=None, help="vid, snapshot name or ISO time (default: latest)")
@click.option("--limit", default=1000, show_default=True, type=int)
@click.option("--timeout", "timeout_s", default=10.0, show_default=True, type=float)
@click.option("--token", default=None, envvar="SEMCAT_TOKEN")
@click.option("--format", "fmt", default="table", show_default=True, type=click.Choice(["table", "csv", "json"]),
              help="table for people, csv or json for programs")
def sql(sql, data_dir, snapshot, limit, timeout_s, token, fmt) -> None:
    """Run one read-only SQL statement over the Parquet files of a snapshot."""
    from mcp_server.cli.sql import run_cli

    run_cli(sql, data_dir=data_dir, snapshot=snapshot, limit=limit, timeout_s=timeout_s, token=token, fmt=fmt)


_data = click.option("--data", "data_dir", default="data", show_default=True,
                     help="catalog data directory or http(s) URL")
_token = click.option("--token", default=None, envvar="SEMCAT_TOKEN")
_author = click.option("--author", default="", help="commit author")
_message = click.option("--message", "-m", default="", help="commit message")


@main.group("branch")
def branch_group() -> None:
    """Write-audit-publish: branch a subtree, write and check it, publish it back."""


@branch_group.command("create")
@click.argument("src")
@click.argument("dst")
@click.option("--vid", default=None, help="fork at this vid, snapshot name or ISO time (default: latest)")
@_data
@_token
@_author
@_message
def branch_create(src, dst, vid, data_dir, token, author, message) -> None:
    """Zero-copy clone SRC to DST, recorded as a branch of SRC (dotted names such as acme.core and
    acme.core__restate, or paths /acme/core)."""
    from mcp_server.cli import branches as b

    b.run_branch(b.create, data_dir, token, src, dst, int(vid) if vid and vid.isdigit() else vid, author, message)


@branch_group.command("list")
@click.option("--prefix", default=None, help="only branches under this path")
@_data
@_token
def branch_list(prefix, data_dir, token) -> None:
    """List branches: path, source, fork vid."""
    from mcp_server.cli import branches as b

    b.run_branch(b.list_, data_dir, token, prefix)


@branch_group.command("diff")
@click.argument("branch_path", metavar="BRANCH")
@click.option("--values/--no-values", default=False, help="print before and after values")
@_data
@_token
def branch_diff(branch_path, values, data_dir, token) -> None:
    """What changed on BRANCH since its base (what publish would apply)."""
    from mcp_server.cli import branches as b

    b.run_branch(b.diff, data_dir, token, branch_path, values)


@branch_group.command("publish")
@click.argument("branch_path", metavar="BRANCH")
@click.option("--onto", default=None, help="the branch's source (default: the recorded source)")
@click.option("--keep/--drop", default=True, show_default=True, help="keep the branch afterwards, or drop it")
@_data
@_token
@_author
@_message
def branch_publish(branch_path, onto, keep, data_dir, token, author, message) -> None:
    """Publish BRANCH onto its source in one commit; conflicts are listed and nothing is written."""
    from mcp_server.cli import branches as b

    b.run_branch(b.publish, data_dir, token, branch_path, onto, keep, author, message)


@branch_group.command("drop")
@click.argument("branch_path", metavar="BRANCH")
@_data
@_token
@_author
@_message
def branch_drop(branch_path, data_dir, token, author, message) -> None:
    """Remove BRANCH (its subtree and its record) in one commit."""
    from mcp_server.cli import branches as b

    b.run_branch(b.drop, data_dir, token, branch_path, author, message)


@main.command()
@click.option("--data", "data_dir", default=None, help="catalog data directory (embedded; this process owns it)")
@click.option("--url", default=None, help="front a remote catalog: the URL of a `semcat serve`")
@click.option("--token", default=None, envvar="SEMCAT_TOKEN", help="bearer token for --url")
@click.option("--hide-annotations", is_flag=True, help="no semantic layer in any answer (the eval's bare condition)")
@click.option("--hide-findings", is_flag=True, help="annotations without staleness findings")
@click.option("--author", default=None, help="author of annotations written through this server")
@_now
@_token_budget
@_read_only
@_create
@_sql_cache
def mcp(data_dir, url, token, hide_annotations, hide_findings, author, now, token_budget, read_only, create) -> None:
    """Serve the MCP tools over stdio (for an MCP client such as an agent or an IDE)."""
    from catalog_core.errors import CatalogError
    from mcp_server.mcp.stdio import run_stdio

    if bool(data_dir) == bool(url):
        raise click.UsageError("give exactly one of --data DIR or --url URL")
    if create and url:
        raise click.UsageError("--create makes a catalog in --data DIR; it does not go with --url")
    try:
        reads = None
        if hide_annotations or hide_findings:  # the eval's conditions live in the eval, not in the server
            from eval.harness.conditions import reads_for

            reads = reads_for(hide_annotations, hide_findings)
        run_stdio(data_dir, url, token, reads=reads, author=author, now=now, create=create, token_budget=token_budget, read_only=read_only)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    except CatalogError as exc:  # no catalog in --data, the catalog is open in another process, ...
        raise click.ClickException(exc.message) from None


@main.command()
@click.option("--data", "data_dir", default="demo-data", show_default=True, help="where the demo lake goes")
@click.option("--fresh/--keep", default=False, show_default=True,
              help="rebuild the lake even if DATA already holds a matching one")
@click.option("--lake", "lake_dir", default=None,
              help="use this already-built lake (semcat eval build --scale small) instead of building one")
def demo(data_dir, fresh, lake_dir) -> None:
    """The agent tour: build the Acme lake, an MCP session over stdio, a staleness report, a quick eval."""
    _needs("matplotlib", *(() if lake_dir else ("pyspark",)))
    from eval.tour import run_tour

    try:
        seen = run_tour(data_dir, fresh=fresh, lake=lake_dir)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if seen.get("eval") == "failed":  # every step was shown; the exit status says one did not finish
        raise click.ClickException("the tour's eval step did not finish (step 4 above says why)")


@main.group("import")
def import_() -> None:
    """Bring existing metadata into the catalog (Iceberg tables, ...)."""


__import__("importlib").import_module("mcp_server.cli.iceberg").register(import_, _create)  # import iceberg
__import__("importlib").import_module("mcp_server.cli.parquet").register(import_, _create)  # import parquet
__import__("importlib").import_module("mcp_server.cli.interop").register(main, import_)  # import dbt|osi|cortex, export osi
__import__("importlib").import_module("mcp_server.cli.review").register(main)  # review list|show|accept|edit|dismiss
__import__("importlib").import_module("mcp_server.cli.grants").register(main)  # grant, revoke, grants, audit (issue 48)
__import__("importlib").import_module("mcp_server.cli.lineage").register(main)  # lineage TABLE


@main.group("eval")
def eval_group() -> None:
    """The evaluation harness: build the Acme lake, run questions against it and report."""


@eval_group.command("build")
@click.option("--data", "--out", "data_dir", required=True,
              help="output directory (DIR/enriched, DIR/stale, manifest, names.json)")
@click.option("--seed", default=7, show_default=True, type=int)
@click.option("--scale", default="small", show_default=True, type=click.Choice(["small", "full"]))
@click.option("--variant", default="plain", show_default=True, type=click.Choice(["plain", "cryptic"]),
              help="cryptic: the same lake under enterprise-style abbreviations and coded values, plus clutter "
                   "tables (eval/LAKE-cryptic.md)")
def eval_build(data_dir, seed, scale, variant) -> None:
    """Build the Acme lake with Spark through the bridge, its history and both annotation histories."""
    _needs("pyspark")
    from eval.lake import build

    build(data_dir, seed=seed, scale=scale, log=lambda m: click.echo(m, err=True), variant=variant)


@eval_group.command("run")
@click.option("--data", "data_dirs", required=True, multiple=True,
              help="a lake built by `semcat eval build` (repeat for several seeds: correct only if correct at all; "
                   "lakes of different variants, or VARIANT=DIR, are run and reported side by side)")
@click.option("--questions", "questions_file", default=None,
              help="question file (eval/harness/questions.py format)  [default: eval/questions/public.yaml]")
@click.option("--conditions", default="bare,enriched,stale,stale+detect", show_default=True,
              help="comma-separated: bare, enriched, stale, stale+detect, enriched+detect")
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
              help="one of bare, enriched, stale, stale+detect, enriched+detect (the agent is never told which)")
@click.option("--questions", "questions_file", default=None,
              help="question file (eval/harness/questions.py format)  [default: eval/questions/public.yaml]")
@click.option("--port", default=None, type=click.IntRange(1, 65535),
              help="serve streamable HTTP at http://127.0.0.1:PORT/mcp (default: stdio)")
@click.option("--out", "out_dir", required=True,
              help="where the run is recorded: run.json, calls.jsonl, answers.jsonl (score with `eval score`)")
@_sql_cache
def eval_serve(data_dir, condition, questions_file, port, out_dir) -> None:
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
              log=lambda m: click.echo(m, err=True))
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
              help="a directory `semcat eval serve --out` recorded (repeat: one per condition)")
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


if __name__ == "__main__":
    main()


def _condition_hint(message: str, given: list[str]) -> str:
    """The eval's message with did-you-mean for the first unknown condition (mcp_server.cli.names)."""
    from eval.harness.runner import HIDE_FLAGS
    from mcp_server.cli.names import unknown

    bad = [c.strip() for c in given if c.strip() and c.strip() not in HIDE_FLAGS]
    return unknown("condition", bad[0], HIDE_FLAGS, message) if bad else message
