"""The data checks' statement router (issue 45, item 6: cost that follows the change). A check asks
the same question of many vids (the basis of each claim); a statement reading tables that did not
change between two vids is answered once and run at a vid statements already ran at. The answers
must be exactly those of each vid: checked against an unrouted runner at every vid of a small lake
whose tables change at different times (an annotation written under a table is no change of it)."""

from __future__ import annotations

import semantic as sm
from semantic.history import context
from semantic.staleness.core import Duck, Router, _reads, duck_at, router_of

A, B = "acme.core.a", "acme.core.b"
QA = 'SELECT count(*), sum("x") FROM "acme"."core"."a"'
QB = 'SELECT count(*), sum("x") FROM "acme"."core"."b"'
QAB = ('SELECT count(*) FROM "acme"."core"."a" f LEFT JOIN (SELECT DISTINCT "x" FROM "acme"."core"."b") g '
       'ON f."x" = g."x"')


def _lake(elk) -> dict[str, int]:
    cat = elk.cat
    elk.table(A, [("x", "bigint")], at=0)
    elk.table(B, [("x", "bigint")], at=0.1)
    vids = {"a1": elk.overwrite(A, {"x": [1, 2, 3]}, at=1), "b1": elk.overwrite(B, {"x": [1, 2]}, at=1.1)}
    sm.annotate(cat, A, {"description": "xs"}, author="a", time=elk.day(1.2))  # under a's path, no change of it
    vids["ann"] = cat.latest_vid
    vids["b2"] = elk.append(B, {"x": [3]}, at=2)
    vids["b3"] = elk.append(B, {"x": [4]}, at=3)
    vids["a2"] = elk.append(A, {"x": [4]}, at=4)
    return vids


def test_routed_answers_are_each_vids_own_and_unchanged_tables_are_read_once(elk):
    cat = elk.cat
    vids = _lake(elk)
    ctx = context(cat, cat.latest_vid)
    every = range(vids["a1"], cat.latest_vid + 1)
    for q in (QA, QB, QAB):
        for v in every:
            assert duck_at(ctx, v).sql(q) == Duck(cat, v).sql(q), (q, v)
    router = router_of(ctx)
    # a's rows are the same from a1 to just before a2 (b's loads and the annotation do not change a)
    span_a = [v for v in every if vids["a1"] <= v < vids["a2"]]
    assert len(span_a) >= 4
    fresh = Router()
    ducks = [Duck(cat, v, fresh) for v in span_a]
    assert len({str(d.sql(QA)) for d in ducks}) == 1
    assert sum(d.ran for d in ducks) == 1  # asked at every vid of the span, run once
    keys = {router.place(cat, QA, v)[1] for v in span_a}
    assert len(keys) == 1, keys  # one answer for the whole span
    assert router.place(cat, QA, vids["a2"])[1] not in keys  # a2 changed a: another answer
    # the join reads both tables: a new answer at each load of either
    assert len({router.place(cat, QAB, v)[1] for v in every}) == 5


def test_an_annotation_under_a_table_does_not_split_its_rows_but_a_load_does(elk):
    cat = elk.cat
    vids = _lake(elk)
    r = Router()
    key_before = r.place(cat, QA, vids["ann"] - 1)[1]
    assert key_before is not None and key_before == r.place(cat, QA, vids["ann"])[1]
    assert r.place(cat, QB, vids["b2"] - 1)[1] != r.place(cat, QB, vids["b2"])[1]


def test_statements_whose_tables_cannot_be_read_from_the_text_are_not_shared(elk):
    cat = elk.cat
    vids = _lake(elk)
    r = Router()
    v = vids["b2"]
    for text in ('SELECT count(*) FROM acme.core.a',                                   # not quoted as the checks do
                 'WITH q AS (SELECT * FROM "acme"."core"."a") SELECT count(*) FROM q',  # a name the log lacks
                 'SELECT count(*) FROM "acme"."core"."a" f, "core"."b" g',             # a comma join
                 'SELECT count(*) FROM "ACME"."Core"."A"',  # DuckDB reads table a; no commit wrote this path
                 'SELECT extract(year FROM now()) FROM "acme"."core"."a"'):            # FROM not before a table
        assert r.place(cat, text, v) == (v, None), text
    assert _reads(QAB) == {"/acme/core/a", "/acme/core/b"}
    assert _reads("SELECT 'FROM x' FROM \"acme\".\"core\".\"a\"") == {"/acme/core/a"}  # a literal is no keyword


def test_a_table_dropped_and_made_again_is_another_table(elk):
    cat = elk.cat
    vids = _lake(elk)
    with cat.transaction(author="etl", message="drop b", time=elk.day(4.5)) as txn:
        txn.remove(elk.path(B))
    gone = cat.latest_vid
    elk.table(B, [("x", "bigint")], at=5)
    elk.overwrite(B, {"x": [9]}, at=5.1)
    ctx = context(cat, cat.latest_vid)
    for v in (vids["b3"], gone, cat.latest_vid):
        try:
            want = Duck(cat, v).sql(QB)
        except Exception as e:  # noqa: BLE001 - the table is absent at `gone`: the routed runner fails alike
            want = type(e).__name__
        try:
            got = duck_at(ctx, v).sql(QB)
        except Exception as e:  # noqa: BLE001
            got = type(e).__name__
        assert got == want, v
