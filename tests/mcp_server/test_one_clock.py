"""One clock (issue 47, item 5): a `semcat review` command against a server (`--url`) started with `--now`
judges at the server's time, and says so on stderr: its list is the one `--data DIR --now T` gives (DIR is
open in the server too: many processes), and the server's /healthz names its time."""

from __future__ import annotations

import json
import subprocess

import httpx

from catalog_core.model import parse_time
from tests.helpers import free_port, stop_process, wait_healthy
from tests.mcp_server.test_mcp_transports import data_copy, env, semcat  # noqa: F401 (a fixture)

LATER = "2031-01-01T00:00:00Z"  # years after the lake's commits: its time-based findings are open then


def _list(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(semcat("review", "list", "--json", "--limit", "200", *args), env=env(),
                          capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)


def test_review_against_a_server_uses_the_servers_now(data_copy):  # noqa: F811
    data = data_copy("one-clock")
    port = free_port()
    proc = subprocess.Popen(semcat("serve", "--data", data, "--port", str(port), "--now", LATER), env=env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(proc, url)
        assert httpx.get(url + "/healthz").json()["now"] == parse_time(LATER)
        remote = _list("--url", url)
        assert remote.returncode == 0, remote.stderr
        assert "judging at the server's time 2031-01-01" in remote.stderr, remote.stderr
        local_then = _list("--data", data, "--now", LATER)
        local_clock = _list("--data", data)
        assert local_then.returncode == 0 and local_clock.returncode == 0, local_then.stderr + local_clock.stderr

        def items(p: subprocess.CompletedProcess[str]) -> str:
            return json.dumps(json.loads(p.stdout)["items"], sort_keys=True)

        assert items(remote) == items(local_then)
        assert items(local_then) != items(local_clock)  # the clock would have judged otherwise
    finally:
        stop_process(proc)


def test_a_cards_ages_are_judged_at_its_now(tmp_path):
    """The page's ages and freshness agree: with `now`, annotation ages are now - written_at, as the
    freshness age is now - the last data commit (before: ages at the snapshot's time beside freshness at now)."""
    import catalog_core as cc
    import semantic as sm
    from eval.fixtures import mcplake
    from eval.fixtures.mcplake import FCT

    cat = cc.Catalog.open(str(tmp_path / "data"))
    try:
        mcplake.build(cat, tmp_path / "files", extra_tables=0)
        later = cat.commits(limit=1)[0].time + 30 * 86400
        card = sm.describe(cat, FCT, now=later)
        views = list(card.annotations.values()) + [v for c in card.columns for v in c.annotations.values()]
        assert views
        assert all(abs(v.age_seconds - (later - v.written_at)) < 1e-6 for v in views)
        fr = card.freshness
        assert fr.age_seconds is not None and abs(fr.age_seconds - (later - fr.last_data_commit.time)) < 1e-6
    finally:
        cat.close()


def test_lineage_and_sql_against_a_server_say_which_clock_they_use(data_copy):  # noqa: F811
    """`semcat lineage --url` and `semcat sql --data URL` against a server started with --now: lineage is judged
    at the snapshot (the same answer as --data gives), and SQL's now() reads the server machine's clock; both
    say so on stderr (before: nothing said, so a reader of the page at --now could not tell)."""
    data = data_copy("one-clock-lineage")
    port = free_port()
    proc = subprocess.Popen(semcat("serve", "--data", data, "--port", str(port), "--now", LATER), env=env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(semcat(*args), env=env(), capture_output=True, text=True, timeout=180,
                              stdin=subprocess.DEVNULL)

    try:
        wait_healthy(proc, url)
        from eval.fixtures.mcplake import FCT as name
        remote = run("lineage", name, "--url", url, "--json")
        assert remote.returncode == 0, remote.stderr
        assert "judged at the snapshot" in remote.stderr and "--now 2031-01-01" in remote.stderr, remote.stderr
        local = run("lineage", name, "--data", data, "--json")
        assert local.returncode == 0 and local.stderr == "", local.stderr
        assert json.loads(remote.stdout) == json.loads(local.stdout)
        q = run("sql", "SELECT 1 AS one", "--data", url, "--format", "json")
        assert q.returncode == 0, q.stderr
        assert "server machine's clock, not its --now" in q.stderr and "2031-01-01" in q.stderr, q.stderr
    finally:
        stop_process(proc)
