"""The provenance policy as agents meet it over MCP (issue 27 item 1): an agent's annotate over a
person's annotation is stored as a proposal (said in the result and its text), and describe_table
flags what agents wrote that no person has accepted yet, until a person accepts it."""

from __future__ import annotations

import semantic as sm
from eval.fixtures.mcplake import DIM
from mcp_server.mcp import create_server
from tests.mcp_server.conftest import call, ok


def test_agent_over_human_is_proposed_and_unreviewed_is_flagged_until_accepted(fresh_cat):
    sm.annotate(fresh_cat, DIM, {"description": "stores, as finance counts them"}, author="ann")
    server = create_server(fresh_cat, author="agent:test")
    r = call(server, "annotate", {"table": DIM, "fields": {"description": "the stores"}})
    out = ok(r)
    assert out["proposed"] == ["table.description"] and "stored as a proposal" in r.content[0].text
    card = ok(call(server, "describe_table", {"table": DIM}))
    assert card["description"] == "stores, as finance counts them" and card["unreviewed"] == []
    ok(call(server, "annotate", {"table": DIM, "column": "region", "fields": {"description": "sales region"}}))
    card = ok(call(server, "describe_table", {"table": DIM, "detail": "full"}))
    assert card["unreviewed"] == ["column.2.description"]
    [item] = sm.review_items(fresh_cat, DIM, kind="agent_annotation").items
    sm.accept(fresh_cat, item, author="ann")
    assert ok(call(server, "describe_table", {"table": DIM}))["unreviewed"] == []
    [prop] = sm.review_items(fresh_cat, DIM, kind="proposal").items
    sm.accept(fresh_cat, prop, author="ann", note="better")
    card = ok(call(server, "describe_table", {"table": DIM, "detail": "full"}))
    assert card["description"] == "the stores"
    [d] = [a for a in card["annotations"] if a["key"] == "table.description"]
    assert d["source"] == "human" and d["author"] == "ann" and not d["unreviewed"]
