"""A card's `referenced_by` (the relationships other tables declare to it) reads only those relationships'
findings (`staleness.annotation_findings`), not every finding of each referencing table (issue 47, cold start:
their verified queries' and metrics' checks were a tenth of a first `describe_table`), and they are exactly
the referencing table's own findings for those annotations, on every table of the Acme lake."""

from __future__ import annotations

import shutil

import pytest

import catalog_core as cc
import semantic as sm
from eval.lake import data_dir
from semantic.history import Context, clear_cache
from semantic.models import RelationshipView
from semantic.staleness import annotation_findings, table_findings

NOW = 1_741_611_600.0


def _open(lake_dir: str, tmp_path, which: str):
    copy = str(tmp_path / "lake")
    shutil.copytree(lake_dir, copy, symlinks=True)
    return cc.Catalog.open(data_dir(copy, which))


@pytest.fixture
def acme(lake_dir, tmp_path):
    """A copy of the Acme lake's enriched catalog."""
    cat = _open(lake_dir, tmp_path, "enriched")
    yield cat
    clear_cache()
    cat.close()


@pytest.fixture
def acme_stale(lake_dir, tmp_path):
    """Its stale catalog (the traps applied), where relationships have findings."""
    cat = _open(lake_dir, tmp_path, "stale")
    yield cat
    clear_cache()
    cat.close()


def _relationships(ctx: Context) -> dict[str, set[str]]:
    ctx.load_all_annotations()
    out: dict[str, set[str]] = {}
    for t in ctx.tables():
        keys = {a.key for a in ctx.annotations(t) if a.kind == "relationship"}
        if keys:
            out[t] = keys
    return out


def test_a_relationship_s_findings_are_the_table_s_own_for_it(acme_stale, monkeypatch):
    monkeypatch.setenv("SEMCAT_CARD_STORE", "0")
    acme = acme_stale
    ctx = Context(acme, acme.latest_vid)
    rels = _relationships(ctx)
    assert len(rels) >= 3
    some = 0
    for t, keys in rels.items():
        clear_cache(acme)  # nothing cached: computed for these annotations only
        got = annotation_findings(Context(acme, acme.latest_vid), t, keys)
        full = [f for f in table_findings(ctx, t, "metadata") if f.annotation in keys]
        assert [f.model_dump() for f in got] == [f.model_dump() for f in full], t
        some += len(full)
        # with the table's findings cached, they are taken from there
        assert [f.model_dump() for f in annotation_findings(ctx, t, keys)] == [f.model_dump() for f in full]
    assert some >= 3  # the stale lake's relationships carry findings: not a comparison of empty lists


def test_a_first_describe_computes_no_referencing_table_s_findings(acme, monkeypatch):
    monkeypatch.setenv("SEMCAT_CARD_STORE", "0")
    card = sm.describe(acme, "acme.core.fct_orders", now=NOW)
    assert card.referenced_by, "fct_orders is referenced by other tables in the Acme lake"
    ctx = Context(acme, acme.latest_vid)
    referencing = {t for t in _relationships(ctx) if t != "acme.core.fct_orders"
                   for a in ctx.annotations(t) if a.kind == "relationship"
                   and (rel := RelationshipView.of(a)) is not None and rel.to == "acme.core.fct_orders"}
    assert referencing
    computed = {k[0] for k in _cached_keys(acme) if len(k) == 3 and k[2] == "metadata"}
    assert "acme.core.fct_orders" in computed
    assert not computed & referencing, computed & referencing
    # and the card says the same as one whose referencing tables' findings were all computed first
    clear_cache()
    for t in referencing:
        table_findings(Context(acme, acme.latest_vid), t, "metadata")
    again = sm.describe(acme, "acme.core.fct_orders", now=NOW)
    assert again.model_dump() == card.model_dump()


def _cached_keys(cat) -> list[tuple]:
    ctx = Context(cat, cat.latest_vid)
    return list(ctx.cache.findings.keys())
