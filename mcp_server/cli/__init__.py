"""The `semcat` console script. Subcommands import their layer lazily, so `semcat --help`
stays fast and a missing optional piece only affects its own subcommand: PySpark (extra `spark`) and
matplotlib (extra `eval`) are not installed by a plain `pip install semcat`, and a command that needs
one says in one line which extra to install (`_needs` up front, `_Main` for any other import of them)."""

from __future__ import annotations

import sys
from typing import Any

import click

from mcp_server.cli.options import EXTRAS as _EXTRAS
from mcp_server.cli.options import missing as _missing
from mcp_server.cli.options import needs as _needs
from mcp_server.cli.options import sql_cache as _sql_cache

__all__ = ["main"]

# top-level commands another package registers: name -> "module:attribute" of its click command, imported
# only when the command runs or help lists it (the eval package's commands: eval/cli.py)
_LAZY = {"eval": "eval.cli:eval_group"}


class _Main(click.Group):
    """The `semcat` group: an import of a missing optional dependency anywhere below becomes `_missing`'s line;
    the commands of `_LAZY` are imported when used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in _LAZY and cmd_name not in self.commands:
            import importlib

            module, _, attr = _LAZY[cmd_name].partition(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ModuleNotFoundError as exc:
            root = (exc.name or "").partition(".")[0]
            if root not in _EXTRAS:
                raise
            raise _missing(root) from None
        except Exception as exc:
            # any command: a CatalogError is one `Error: ...` line (the catalog is locked, ...), never a traceback
            # (looked up only now: `semcat CMD --help` does not import the engine)
            errors = sys.modules.get("catalog_core.errors")
            if errors is not None and isinstance(exc, errors.CatalogError):
                raise click.ClickException(exc.message) from None
            raise


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("semcat")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """`--version`: looked up only when asked (importlib.metadata costs every command's start ~30 ms)."""
    if value and not ctx.resilient_parsing:
        click.echo(f"semcat {_version()}")
        ctx.exit()


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", "-V", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
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
@click.option("--iceberg-root", "iceberg_roots", multiple=True, metavar="DIR",
              type=click.Path(file_okay=False, resolve_path=True),
              help="a directory where Iceberg REST clients may place tables, besides DATA/warehouse (repeatable; "
                   "also SEMCAT_ICEBERG_ROOTS; docs/iceberg-rest.md)")
@click.option("--iceberg-commit-time", "iceberg_commit_time", is_flag=True,
              help="let Iceberg REST writers backdate a commit with the X-Semcat-Commit-Time header (never before the "
                   "latest commit): for simulated histories, e.g. the trap generator (docs/iceberg-rest.md)")
@_now
@_token_budget
@_read_only
@_create
@_sql_cache
def serve(data_dir, host, port, tokens_file, oauth_issuer, resource_uri, oauth_audience, oauth_read_scope,
          oauth_write_scope, oauth_source_claim, oauth_groups_claim, oauth_leeway, protocol, max_request_mb,
          txn_timeout, author, allowed_hosts, allowed_origins, limits, iceberg_roots, iceberg_commit_time, now,
          token_budget, read_only, create) -> None:
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
    if iceberg_roots:  # the storage roots of /iceberg (mcp_server.http.iceberg.storage_roots reads them)
        import os

        os.environ["SEMCAT_ICEBERG_ROOTS"] = os.pathsep.join([*iceberg_roots, os.environ.get("SEMCAT_ICEBERG_ROOTS", "")])
    if iceberg_commit_time:  # read by mcp_server.http.iceberg.build_iceberg_router
        import os

        os.environ["SEMCAT_ICEBERG_COMMIT_TIME"] = "1"
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
    from mcp_server.mcp.stdio import run_stdio  # imports no engine, SDK or model: it answers initialize first

    if bool(data_dir) == bool(url):
        raise click.UsageError("give exactly one of --data DIR or --url URL")
    if create and url:
        raise click.UsageError("--create makes a catalog in --data DIR; it does not go with --url")
    try:
        reads = None
        if hide_annotations or hide_findings:  # the eval's conditions live in the eval, not in the server
            from eval.cli import reads_for

            reads = reads_for(hide_annotations, hide_findings)
        run_stdio(data_dir, url, token, reads=reads, author=author, now=now, create=create, token_budget=token_budget, read_only=read_only)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    # a CatalogError (no catalog in --data, ...) is one `Error:` line by _Main.invoke


@main.command()
@click.option("--data", "data_dir", default="demo-data", show_default=True, help="where the demo lake goes")
@click.option("--fresh/--keep", default=False, show_default=True,
              help="rebuild the lake even if DATA already holds a matching one")
@click.option("--lake", "lake_dir", default=None,
              help="use this already-built lake (semcat eval build --scale small) instead of building one")
def demo(data_dir, fresh, lake_dir) -> None:
    """The agent tour: build the Acme lake, an MCP session over stdio, a staleness report, a quick eval."""
    _needs("matplotlib", *(() if lake_dir else ("pyspark",)))
    from eval.cli import run_tour

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
__import__("importlib").import_module("mcp_server.cli.relocate").register(main)  # relocate (issue 47)


if __name__ == "__main__":
    main()
