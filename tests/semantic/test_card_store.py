"""Table cards kept on disk (semantic/card_store.py, issue 47 cold start): a new process reads the card of a
table at a vid instead of recomputing it, and what it reads is exactly what it would have computed; an entry
is never served for another vid (a newer one has none until computed), another catalog, or other code."""

from __future__ import annotations

import json
import os
import shutil

import pytest

import catalog_core as cc
import semantic as sm
from eval.lake import data_dir
from semantic import card_store
from semantic.history import clear_cache

NOW = 1_741_611_600.0  # 2025-03-10T13:00Z: every card judged at one clock, so two runs can be compared


def _computed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tables whose card `describe._base` computes from here on (the store's misses: each computed card is
    offered to the store)."""
    seen: list[str] = []
    real = card_store.store

    def counting(cat, vid, commit_time, name, card):  # type: ignore[no-untyped-def]
        seen.append(name)
        return real(cat, vid, commit_time, name, card)

    monkeypatch.setattr(card_store, "store", counting)
    return seen


@pytest.fixture
def acme(lake_dir, tmp_path):
    """A copy of the Acme lake's enriched catalog, open (read only: only the card store writes, in the copy).
    Without the lake's own card store: a process that served the lake before (CI's `make demo` tour, or the same
    lake under older code) leaves cards the tests here would count as this code's."""
    copy = str(tmp_path / "lake")
    shutil.copytree(lake_dir, copy, symlinks=True, ignore=shutil.ignore_patterns("stale", "cards"))
    cat = cc.Catalog.open(data_dir(copy, "enriched"))
    yield cat
    clear_cache()
    cat.close()


def test_a_stored_card_is_the_computed_card_for_every_table(acme, monkeypatch):
    """Every table of the Acme lake: the cards a later process reads from the store (no card computed) equal
    the ones computed, clock-dependent parts included (summary and full describe_table read these)."""
    tables = sorted(o.path.strip("/").replace("/", ".") for o in acme.query('/*/*/[obj_type = "table"]'))
    assert len(tables) > 10
    computed = {t: sm.describe(acme, t, now=NOW) for t in tables}
    root = card_store.store_dir(acme)
    assert root is not None and len(os.listdir(os.path.join(root, str(acme.latest_vid)))) == len(tables)
    clear_cache()  # as a new process: nothing in memory
    misses = _computed(monkeypatch)
    stored = {t: sm.describe(acme, t, now=NOW) for t in tables}
    assert misses == []
    for t in tables:
        assert stored[t] == computed[t], t
        assert stored[t].model_dump_json() == computed[t].model_dump_json(), t


def test_the_mcp_answer_from_a_stored_card_is_byte_identical(acme, monkeypatch):
    import anyio

    from catalog_core.sql import snapcache
    from mcp_server.mcp.server import create_server

    monkeypatch.setattr(snapcache, "_budget", 0)  # no SQL worker warmed beside the calls: not what is compared

    def answers() -> list[str]:
        server = create_server(acme, now=NOW)

        async def go() -> list[str]:
            out = []
            for detail in ("summary", "full"):
                r = await server.call_tool("describe_table", {"table": "acme.core.fct_orders", "detail": detail})
                out.append(r.model_dump_json(by_alias=True, exclude_none=True))
            return out

        return anyio.run(go)

    first = answers()
    clear_cache()
    assert answers() == first


def test_a_newer_vid_never_gets_an_older_card(ecat, elk, monkeypatch):
    elk.table("acme.core.orders", [("id", "bigint"), ("amount", "double")], at=0, rows={"id": [1], "amount": [2.0]})
    sm.annotate(ecat, "acme.core.orders", {"description": "old words"}, author="ops")
    old_vid = ecat.latest_vid
    assert sm.describe(ecat, "acme.core.orders").annotations["description"].value == "old words"
    sm.annotate(ecat, "acme.core.orders", {"description": "new words"}, author="ops")
    clear_cache()
    misses = _computed(monkeypatch)
    assert sm.describe(ecat, "acme.core.orders").annotations["description"].value == "new words"
    assert misses == ["acme.core.orders"]  # the latest vid's card was computed, not read
    assert sm.describe(ecat, "acme.core.orders", snapshot=old_vid).annotations["description"].value == "old words"
    assert misses == ["acme.core.orders"]  # the old vid's card was read from the store


def test_an_entry_is_read_only_by_the_catalog_and_code_it_was_written_for(ecat, elk, monkeypatch):
    elk.table("acme.core.orders", [("id", "bigint")], at=0, rows={"id": [1]})
    sm.annotate(ecat, "acme.core.orders", {"description": "words"}, author="ops")
    sm.describe(ecat, "acme.core.orders")
    root = card_store.store_dir(ecat)
    assert root is not None
    [entry] = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]
    misses = _computed(monkeypatch)
    # the same digest holding another key (another catalog's identity): not served, the card is computed
    with open(entry) as f:
        doc = json.load(f)
    doc["key"]["identity"] = "another catalog"
    doc["card"]["annotations"]["description"]["value"] = "a lie"
    with open(entry, "w") as f:
        json.dump(doc, f)
    clear_cache()
    assert sm.describe(ecat, "acme.core.orders").annotations["description"].value == "words"
    assert misses == ["acme.core.orders"]
    # other code (a changed source file): not read either
    clear_cache()
    monkeypatch.setattr(card_store, "code_fingerprint", lambda: "other code")
    sm.describe(ecat, "acme.core.orders")
    assert misses == ["acme.core.orders"] * 2
    # a torn or garbage file: computed as before
    with open(entry, "w") as f:
        f.write("{not json")
    monkeypatch.undo()
    misses = _computed(monkeypatch)
    clear_cache()
    assert sm.describe(ecat, "acme.core.orders").annotations["description"].value == "words"
    assert misses == ["acme.core.orders"]


def test_only_the_newest_vids_are_kept_and_the_store_can_be_off(ecat, elk, monkeypatch):
    elk.table("acme.core.orders", [("id", "bigint")], at=0, rows={"id": [1]})
    for i in range(card_store.KEEP_VIDS + 2):
        sm.annotate(ecat, "acme.core.orders", {"description": f"v{i}"}, author="ops")
        sm.describe(ecat, "acme.core.orders")
    root = card_store.store_dir(ecat)
    assert root is not None
    latest = ecat.latest_vid
    assert sorted(int(v) for v in os.listdir(root)) == list(range(latest - card_store.KEEP_VIDS + 1, latest + 1))
    monkeypatch.setenv(card_store.ENV_OFF, "0")
    assert card_store.store_dir(ecat) is None
