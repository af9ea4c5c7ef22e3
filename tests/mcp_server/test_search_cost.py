"""search_tables describes only the tables of the page it returns (bench/bench_scale.py found it
describing every matching table of the catalog to rank them, so its cost grew with the tree), and
`sm.rank` orders and scores tables exactly as `sm.search` does. Counted, not timed: a real profiler
(cProfile) counts the calls of `semantic.describe.describe`."""

from __future__ import annotations

import pytest

import catalog_core as cc
import semantic as sm
from eval.fixtures import mcplake
from mcp_server.mcp import create_server
from mcp_server.mcp.discovery import search
from semantic.describe import describe as describe_fn
from semantic.search import MAX_LIMIT
from tests.helpers import count_calls


def _describes(fn):
    return count_calls(fn, describe_fn)


def test_rank_is_search_without_the_cards(lake_cat):
    for text in ("orders", "store region", "daily revenue by store", "customer"):
        hits = sm.search(lake_cat, text, limit=MAX_LIMIT)
        ranked, n = _describes(lambda t=text: sm.rank(lake_cat, t))
        assert ranked == [(h.table, h.score) for h in hits]
        assert n == 0


@pytest.fixture
def fresh_cat(tmp_path):
    """The MCP lake with its 24 small tables, of its own (this test annotates)."""
    cat = cc.Catalog.open(str(tmp_path / "data"))
    mcplake.build(cat, tmp_path / "files")
    yield cat
    cat.close()


def test_search_tables_describes_only_its_page(fresh_cat):
    """The tool's own function, in this thread (the MCP server runs tools in a worker thread,
    which the profiler would not see)."""
    for i in range(8):
        sm.annotate(fresh_cat, f"acme.misc.t{i:02d}", {"description": f"widget shipments of plant {i}"}, author="t")
    total = len(sm.search(fresh_cat, "widget shipments", limit=MAX_LIMIT))
    assert total >= 8  # enough matches that describing all of them shows
    ctx = create_server(fresh_cat).tool_context
    (got, _summary), n = _describes(lambda: search(ctx, "widget shipments", None, 2, None))
    assert len(got.tables) == 2 and got.total == total and got.truncated
    assert n <= 2, f"{n} tables described for a page of 2 (of {total} matches)"
