"""Which questions touch a stale annotation (eval/harness/touches.py), on the session-built lake and its
manifest: column annotations reach only questions reading that column, dropped columns and table-wide
annotations reach every question reading the table, relationships need both ends, metrics the tag."""

from __future__ import annotations

import json
import os

from eval.harness.questions import Question
from eval.harness.touches import gold_columns, stale_touches, touches


def _q(sql: str, tables: tuple[str, ...], tags: tuple[str, ...] = ("control",)) -> Question:
    return Question(id="t", question="?", gold_sql=sql, tables=tables, tags=tags)  # type: ignore[arg-type]


def _rules(cats, lake_dir):
    man = json.load(open(os.path.join(lake_dir, "stale_manifest.json")))
    return man, stale_touches(man, cats["stale"])


def test_every_manifest_entry_becomes_a_rule(cats, lake_dir):
    man, rules = _rules(cats, lake_dir)
    assert sorted(r.annotation for r in rules) == sorted(m["annotation"] for m in man["stale"])
    assert {r.annotation: r.detectable for r in rules} == {m["annotation"]: m["detectable"] for m in man["stale"]}


def test_column_rules_reach_only_questions_reading_the_column(cats, lake_dir):
    _, rules = _rules(cats, lake_dir)
    col_rules = [r for r in rules if r.columns is not None and r.annotation.split(":")[1].startswith("column.")]
    assert col_rules, "the seeded manifest has column annotations on columns that still exist"
    for r in col_rules:
        (col,) = r.columns
        reads = _q(f"SELECT {col} FROM {r.table}", (r.table,))
        assert r.annotation in touches(reads, rules)
        counts = _q(f"SELECT count(*) FROM {r.table}", (r.table,))
        assert r.annotation not in touches(counts, rules)
        elsewhere = _q(f"SELECT {col} FROM acme.core.dim_date", ("acme.core.dim_date",))
        assert r.annotation not in touches(elsewhere, rules)


def test_dropped_columns_and_table_wide_annotations_reach_the_whole_table(cats, lake_dir):
    man, rules = _rules(cats, lake_dir)
    by = {r.annotation: r for r in rules}
    for m in man["stale"]:
        key = m["key"]
        if key.startswith(("table.grain", "table.deprecated", "table.freshness_sla", "verified_query.")):
            assert by[m["annotation"]].columns is None
            assert m["annotation"] in touches(_q(f"SELECT count(*) FROM {m['table']}", (m["table"],)), rules)
    # the daily store mart's cents columns were replaced at d-80: annotations on them reach every reader
    cents = [r for r in rules if r.table == "acme.mart.agg_daily_store_revenue" and ".unit" in r.annotation]
    assert all(r.columns is None for r in cents)


def test_relationships_need_both_tables_and_metrics_the_tag(cats, lake_dir):
    _, rules = _rules(cats, lake_dir)
    for r in rules:
        if r.with_table:
            one = _q(f"SELECT count(*) FROM {r.table}", (r.table,))
            both = _q(f"SELECT count(*) FROM {r.table}, {r.with_table}", (r.table, r.with_table))
            assert r.annotation not in touches(one, rules) and r.annotation in touches(both, rules)
        if r.tag == "metric":
            sql = f"SELECT count(*) FROM {r.table}"
            assert r.annotation not in touches(_q(sql, (r.table,)), rules)
            assert r.annotation in touches(_q(sql, (r.table,), ("metric",)), rules)


def test_unanswerable_questions_touch_nothing_and_columns_are_parsed(cats, lake_dir):
    _, rules = _rules(cats, lake_dir)
    q = Question(id="u", question="?", tags=("unanswerable",))
    assert touches(q, rules) == []
    assert gold_columns("SELECT o.a, sum(b) FROM t o WHERE c > 1 GROUP BY 1") == {"a", "b", "c"}
    assert gold_columns("not sql at all (") == set()


# ------------------------------------------------------------------ the stale-events subset (the demo's eval)
def test_the_stale_events_subset_follows_its_rule(cats, lake_dir):
    """For each detectable event (table, kind, change day) with column / metric / relationship annotations,
    the K first originals (id order) whose gold reads one of them; nothing else; K=2 extends K=1."""
    from eval.harness.questions import load_questions
    from eval.harness.touches import EVENT_KEYS, stale_event_picks, stale_event_subset, stale_events

    man, rules = _rules(cats, lake_dir)
    qs = load_questions(os.path.join(os.path.dirname(__file__), "..", "..", "eval", "questions", "public.yaml"))
    events = stale_events(man)
    assert events and list(events) == sorted(events)
    for (table, kind, change), anns in events.items():
        entries = [m for m in man["stale"] if m["annotation"] in anns]
        assert all(m["detectable"] and m["table"] == table and m["kind"] == kind and str(m["change"]) == change
                   and m["key"].split(".")[0] in EVENT_KEYS for m in entries)
    subsets = {}
    for k in (1, 2):
        picks = stale_event_picks(qs, man, rules, k)
        sub = stale_event_subset(qs, man, rules, k)
        subsets[k] = [q.id for q in sub]
        assert subsets[k] == sorted({i for ids in picks.values() for i in ids})
        for ev, ids in picks.items():
            readers = [q.id for q in sorted(qs, key=lambda q: q.id)
                       if q.paraphrase_of is None and set(touches(q, rules, detectable_only=True)) & events[ev]]
            assert ids == readers[:k], ev  # the first K readers, whatever the others picked
        assert all(q.paraphrase_of is None for q in sub)
    assert len(subsets[1]) >= 5 and set(subsets[1]) < set(subsets[2])
    # an event of table-level annotations only (a deprecation, an SLA, a verified query) picks nothing
    assert all(m["key"].split(".")[0] not in EVENT_KEYS for m in man["stale"]
               if m["detectable"] and (m["table"], m["kind"], str(m["change"])) not in events)


def test_the_subset_spec_is_checked():
    import pytest

    from eval.harness.touches import parse_subset

    assert parse_subset("stale-events") == 1 and parse_subset("stale-events:3") == 3
    for bad in ("stale", "stale-events:0", "stale-events:x", "first:12"):
        with pytest.raises(ValueError, match=r"use stale-events or stale-events:K"):
            parse_subset(bad)
