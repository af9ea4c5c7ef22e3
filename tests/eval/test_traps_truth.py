"""The trap generator's ground truth (eval/traps/truth.py, issue 45): what a change makes false is read
from the annotations' own text, no more, no less.

Each test builds a tiny lake through the public write paths (catalog transactions of Parquet files written
with pyarrow, `eval.fixtures.lakes.LakeBuilder`; annotations, relationships, metrics and verified queries
through `semantic`), then asks the generator what its change makes false: the traps that write no rows
(a column renamed or dropped and a key renamed, through `Bridge.alter`: a schema change Spark does not
take part in; a table that stops loading) run whole; for the traps that rewrite rows (values, grain, key
formats) the truth functions they call are asked directly."""

from __future__ import annotations

import datetime as dt
import re

import pytest

import catalog_core as cc
import semantic as sm
from eval.fixtures.lakes import LakeBuilder
from eval.traps.generator import Generator
from eval.traps.lakeview import LakeView
from eval.traps.score import score
from semantic.history import clear_cache


@pytest.fixture
def tt():
    """eval.traps.truth (imported here: the generator's tests above run on generators without it)."""
    from eval.traps import truth

    return truth


ORD, LINES, MART = "acme.core.orders", "acme.core.order_items", "acme.mart.daily"
A = "data-team"
DAYS = [(dt.date(2024, 11, 11) + dt.timedelta(days=i)).isoformat() for i in range(11)]


@pytest.fixture
def cat(tmp_path):
    c = cc.Catalog.open(str(tmp_path / "cat"))
    yield c
    clear_cache()
    c.close()


class Tiny:
    """orders (loaded daily to day 10), its order lines, a daily mart with a net_cents of its own."""

    def __init__(self, cat, tmp_path):
        self.cat = cat
        self.lk = lk = LakeBuilder(cat, tmp_path / "files")
        lk.table(ORD, [("order_id", "bigint"), ("status", "string"), ("net_cents", "bigint"), ("order_date", "date")],
                 at=0, rows={"order_id": [1, 2, 3], "status": ["placed", "shipped", "returned"],
                             "net_cents": [100, 200, 300], "order_date": DAYS[:3]})
        lk.table(LINES, [("order_id", "bigint"), ("line_no", "bigint"), ("qty", "bigint")], at=0,
                 rows={"order_id": [1, 1, 2], "line_no": [1, 2, 1], "qty": [1, 2, 3]})
        lk.table(MART, [("d", "date"), ("net_cents", "bigint")], at=0, rows={"d": DAYS[:2], "net_cents": [300, 300]})
        for i in range(3, 11):
            lk.append(ORD, {"order_id": [i + 1], "status": ["shipped"], "net_cents": [10 * i], "order_date": [DAYS[i]]},
                      at=i)
        self.t = lk.day(10.5)
        self.now = lk.day(11)

    def tick(self) -> float:
        self.t += 1
        return self.t

    def ann(self, table, fields, column=None):
        sm.annotate(self.cat, table, fields, column=column, author=A, time=self.tick())

    def metric(self, table, name, expression, filter=None):
        sm.define_metric(self.cat, table, name, expression=expression, filter=filter, author=A, time=self.tick())

    def vq(self, question, sql):
        sm.verify_query(self.cat, question, sql, author=A, time=self.tick())

    def relate(self, src, to, on):
        sm.relate(self.cat, src, to, on, author=A, time=self.tick())

    def gen(self, free):
        from spark_bridge import Bridge

        g = Generator(self.cat, Bridge(None, self.cat), self.now, seed=1, writers=("spark",), log=lambda m: None)
        g.used = set(g.view.tables) - set(free)
        return g

    def view(self):
        return LakeView(self.cat)


def key(view, table, field, column=None):
    t = view.tables[table]
    a = t.column_field(column, field) if column else t.ann(f"table.{field}")
    assert a is not None, (table, column, field)
    return (table, a.key)


def vqs(view, table, text):
    """The copies on `table` of the verified queries whose SQL holds `text`."""
    return {(table, a.key) for a in view.tables[table].anns if a.kind == "verified_query" and text in a.value["sql"]}


def metric(view, table, name):
    return (table, f"metric.{name}")


def false(tr):
    return {(t, k) for t, k in tr.false}


# ---------------------------------------------------------------------- a column renamed or dropped
def _net_cents(cat, tmp_path):
    """net_cents, the only annotated column: named in its own description and its table's, qualified in the
    mart's, read by a verified query over orders; a second query reads the mart's own net_cents."""
    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"description": "Orders from every channel; net_cents excludes tax."})
    k.ann(ORD, {"unit": "cents", "description": "Net amount (net_cents = lines net of discounts)"}, column="net_cents")
    k.ann(MART, {"description": "Daily sum of orders.net_cents."})
    k.vq("Net of orders", "SELECT sum(o.net_cents) AS n FROM acme.core.orders o")
    k.vq("Mart net on order days", "SELECT sum(m.net_cents) AS n FROM acme.mart.daily m "
         "JOIN acme.core.orders o ON o.order_date = m.d")
    return k


def test_a_renamed_column_makes_false_every_text_naming_it_not_its_own_annotations(cat, tmp_path):
    k = _net_cents(cat, tmp_path)
    g = k.gen([ORD])
    v = g.view
    tr = g.schema_rename()
    assert tr.columns[0] == "net_cents"
    assert false(tr) == {key(v, ORD, "description"), key(v, MART, "description"), key(v, ORD, "description", "net_cents")} \
        | vqs(v, ORD, "o.net_cents) AS n FROM")
    # its own unit follows its field id (its own description names the old name: false); the mart's query
    # names the mart's own net_cents
    assert key(v, ORD, "unit", "net_cents") not in false(tr)
    assert not false(tr) & (vqs(v, ORD, "m.net_cents") | vqs(v, MART, "m.net_cents"))
    # prose naming it: the review's `rename` rewrites the name in the text, or a person does (either is right)
    ren = {"action": "rename", "params": {"old": "net_cents", "new": tr.columns[1], "scale": 0}}
    assert tr.fixes[f"{ORD}|table.description"] == [ren, None]


def test_a_dropped_column_makes_false_its_own_annotations_and_every_text_naming_it(cat, tmp_path):
    k = _net_cents(cat, tmp_path)
    g = k.gen([ORD])
    v = g.view
    tr = g.schema_drop()
    assert tr.columns == ["net_cents"]
    assert false(tr) == {key(v, ORD, "description"), key(v, MART, "description"), key(v, ORD, "unit", "net_cents"),
                         key(v, ORD, "description", "net_cents")} | vqs(v, ORD, "o.net_cents) AS n FROM")
    # the column's own annotations go (nothing the table holds is theirs); every other text a person rewrites
    gone = {"action": "remove", "params": {"column": "net_cents"}}
    assert {k: x for k, x in tr.fixes.items() if x == gone} == {
        f"{t}|{k}": gone for t, k in (key(v, ORD, "unit", "net_cents"), key(v, ORD, "description", "net_cents"))}
    assert tr.fixes[f"{ORD}|table.description"] is None and tr.fixes[f"{MART}|table.description"] is None


def test_a_draw_whose_commit_lost_a_race_is_drawn_again_from_the_same_state(cat, tmp_path):
    """A trap whose commit lost a race with another process's commit (nothing committed; an Iceberg REST
    commit conflicting under load) is drawn again from the same random state and tables, so the seed gives
    the trap a run without the race gives (failed before: another kind was tried, and held-out seed 2101's
    control differed between two generations). Any other error still tries another kind."""
    k = _net_cents(cat, tmp_path)
    g = k.gen([ORD])
    draw, calls, states = g.schema_drop, [], []
    start = g.rng.getstate()

    def flaky():
        states.append((g.rng.getstate(), set(g.used)))
        if not calls:
            calls.append(1)
            g.rng.random()
            g.used.add(MART)
            raise RuntimeError("commit to acme.core.orders conflicted with a concurrent commit (another process)")
        return draw()

    g.schema_drop = flaky
    used = set(g.used)
    g._one("schema", {"drop": "schema_drop"})
    assert calls == [1] and [(t.kind, t.columns) for t in g.traps] == [("drop", ["net_cents"])] and not g.skipped
    assert states == [(start, used), (start, used)]  # drawn again from the same state and tables
    boom = k.gen([ORD])
    boom.schema_rename = lambda: (_ for _ in ()).throw(ValueError("no such column"))
    boom._one("schema", {"rename": "schema_rename"})
    assert boom.traps == [] and "no such column" in boom.skipped[0]["why"]


def _renamed_net(cat, tmp_path):
    """net_cents annotated (unit, a description naming no column), then renamed net_amount through the
    catalog (a schema change): its annotations keep their key `column.<field id>.<field>` and the name
    they were written under; a metric defined after the rename reads the new name."""
    from spark_bridge import Bridge

    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"unit": "cents", "description": "Net amount of the order, tax excluded"}, column="net_cents")
    Bridge(None, cat).alter(ORD, rename={"net_cents": "net_amount"}, author=A, time=k.tick())
    k.metric(ORD, "net", "sum(net_amount)")
    return k


def _own_keys(v, table, column, *fields):
    """The keys of `column`'s own annotations, from its field id (not through the code under test)."""
    c = v.tables[table].col(column)
    assert c is not None and c.id is not None
    return {(table, f"column.{c.id}.{f}") for f in fields}


def test_a_renamed_columns_own_annotations_follow_its_field_id_not_the_name_they_were_written_under(cat, tmp_path, tt):
    """The truth finds a column's own annotations by its field id: after a rename they still record the old
    name (`a.column`), and a match by the current name found nothing (tpcds-602: a metric's column scaled,
    its unit and description left out of the truth, the detector's right flags on them scored false alarms)."""
    k = _renamed_net(cat, tmp_path)
    v = k.view()
    own = _own_keys(v, ORD, "net_amount", "unit", "description")
    assert {a.column for a in v.tables[ORD].anns if (ORD, a.key) in own} == {"net_cents"}  # the name when written
    assert own <= {(ORD, a.key) for a in v.tables[ORD].column_anns("net_amount")}
    assert v.tables[ORD].column_anns("net_cents") == []     # no column has that name now
    assert set(tt.column_texts(v, ORD, "net_amount", own=True)) == own | {metric(v, ORD, "net")}
    assert set(tt.column_texts(v, ORD, "net_amount", own=False)) == {metric(v, ORD, "net")}
    assert (ORD, "column.{}.unit".format(v.tables[ORD].col("net_amount").id)) in v.refs(ORD, "net_amount", own=True)
    # the generator: the column's values scaled (its unit false; its description states no unit), or dropped
    g = k.gen([ORD])
    assert _own_keys(v, ORD, "net_amount", "unit") | {metric(v, ORD, "net")} <= \
        set(g._unit_false(g.view.tables[ORD], "net_amount"))
    tr = g.schema_drop()
    assert tr.columns == ["net_amount"]
    assert false(tr) == own | {metric(v, ORD, "net")}


def test_a_renamed_key_makes_false_the_joins_into_it_and_the_texts_naming_it(cat, tmp_path):
    k = Tiny(cat, tmp_path)
    k.relate(LINES, ORD, [("order_id", "order_id")])
    k.ann(ORD, {"description": "Orders; order_id is the order number."})
    k.ann(ORD, {"description": "Order number"}, column="order_id")
    k.ann(LINES, {"description": "Order lines, their own order_id (a plain word: orders is no qualifier)."})
    k.vq("Lines per order", "SELECT count(*) AS n FROM acme.core.order_items i JOIN acme.core.orders o "
         "ON o.order_id = i.order_id")
    g = k.gen([ORD, LINES])
    v = g.view
    tr = g.keys_renamed()
    assert tr.table == ORD and tr.columns[0] == "order_id"
    rel = (LINES, "relationship.orders")
    assert rel in {(LINES, a.key) for a in v.tables[LINES].anns if a.kind == "relationship"}
    vq = vqs(v, ORD, "o.order_id") | vqs(v, LINES, "o.order_id")
    assert false(tr) == {rel, key(v, ORD, "description")} | vq
    assert key(v, ORD, "description", "order_id") not in false(tr)   # its own: follows the field id
    assert tr.fixes[f"{LINES}|{rel[1]}"][0]["action"] == "join_on"
    # the table's prose naming it: the review's rename rewrites the name in the text, or a person does
    ren = {"action": "rename", "params": {"old": "order_id", "new": tr.columns[1], "scale": 0}}
    assert tr.fixes[f"{ORD}|table.description"] == [ren, None]


# ---------------------------------------------------------------------- values
def _status(cat, tmp_path):
    k = Tiny(cat, tmp_path)
    k.relate(LINES, ORD, [("order_id", "order_id")])
    k.ann(ORD, {"description": "Orders. Status is one of placed, shipped, returned."})
    k.ann(ORD, {"description": "Order status; returned means the whole order came back",
              "enum": ["placed", "shipped", "returned"], "sample_values": ["shipped", "returned"]}, column="status")
    k.ann(ORD, {"description": "Net amount, zero once shipped"}, column="net_cents")   # one value, no column named
    k.metric(ORD, "returned_orders", "count(DISTINCT order_id)", "status = 'returned'")
    k.metric(LINES, "units", "sum(qty)", "orders.status <> 'returned'")
    k.ann(LINES, {"description": "Order lines; exclude returned orders via orders.status."})
    k.vq("Returned orders", "SELECT count(*) AS n FROM acme.core.orders o WHERE o.status = 'returned'")
    return k


def test_a_respelled_or_merged_value_makes_false_every_text_naming_it_on_any_table(cat, tmp_path, tt):
    k = _status(cat, tmp_path)
    v = k.view()
    got = set(tt.value_texts(v, ORD, "status", "returned", "merged"))
    assert got == {key(v, ORD, "enum", "status"), key(v, ORD, "sample_values", "status"), key(v, ORD, "description", "status"),
                   key(v, ORD, "description"), metric(v, ORD, "returned_orders"),
                   metric(v, LINES, "units"), key(v, LINES, "description")} | vqs(v, ORD, "'returned'")


def test_prose_naming_a_code_by_its_label_is_false_when_its_rows_went_elsewhere_not_when_respelled(cat, tmp_path, tt):
    """A coded column's labels ({code: label}) and prose naming the codes by their labels only: merged
    into an existing code, split or removed, the label named is false; respelled one to one to a new
    code, the label moves with the code and the prose holds (the labels, naming the old code, do not)."""
    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"description": "Orders, booked, dispatched or refunded."})
    k.ann(ORD, {"labels": {"placed": "booked", "shipped": "dispatched", "returned": "refunded"}}, column="status")
    k.ann(ORD, {"description": "Where the order stands; refunded ones stay"}, column="status")
    v = k.view()
    labels, prose = key(v, ORD, "labels", "status"), {key(v, ORD, "description"), key(v, ORD, "description", "status")}
    for how in ("merged", "split", "removed"):
        assert set(tt.value_texts(v, ORD, "status", "returned", how)) == {labels} | prose, how
    assert set(tt.value_texts(v, ORD, "status", "returned", "respelled")) == {labels}
    with pytest.raises(ValueError, match="one of respelled"):
        tt.value_texts(v, ORD, "status", "returned", "moved")


def test_a_renamed_columns_value_lists_follow_its_field_id(cat, tmp_path, tt):
    """status renamed order_status: its enum, sample values and description (written under the old name)
    are still the column's own, and a value respelled or added makes them false."""
    from spark_bridge import Bridge

    k = _status(cat, tmp_path)
    Bridge(None, cat).alter(ORD, rename={"status": "order_status"}, author=A, time=k.tick())
    v = k.view()
    own = _own_keys(v, ORD, "order_status", "enum", "sample_values", "description")
    assert own <= set(tt.value_texts(v, ORD, "order_status", "returned", "respelled"))
    assert _own_keys(v, ORD, "order_status", "enum") <= set(
        tt.complete_set_texts(v, ORD, "order_status", ["placed", "shipped", "returned"]))


def test_a_removed_value_leaves_sample_values_that_do_not_list_it(cat, tmp_path, tt):
    k = _status(cat, tmp_path)
    v = k.view()
    got = set(tt.value_texts(v, ORD, "status", "placed", "removed"))
    assert got == {key(v, ORD, "enum", "status"), key(v, ORD, "description")}
    assert key(v, ORD, "sample_values", "status") not in got


def test_an_added_value_makes_false_the_texts_listing_the_complete_set_not_the_samples(cat, tmp_path, tt):
    k = _status(cat, tmp_path)
    v = k.view()
    got = set(tt.complete_set_texts(v, ORD, "status", ["placed", "shipped", "returned"]))
    assert got == {key(v, ORD, "enum", "status"), key(v, ORD, "description")}


def test_an_added_code_makes_false_the_prose_listing_every_label(cat, tmp_path, tt):
    """A coded column (codes labelled placed/shipped/returned) and a table description listing every label: a
    code added makes it false, as a list of the codes would (failed before: not counted; an independent
    tester's cryptic konv_h). A description naming two labels is no list."""
    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"enum": ["placed", "shipped", "returned"],
                "labels": {"placed": "open", "shipped": "sent", "returned": "back"}}, column="status")
    k.ann(ORD, {"description": "Orders: open, sent or back."})
    k.ann(ORD, {"description": "open or sent only"}, column="net_cents")
    v = k.view()
    got = set(tt.complete_set_texts(v, ORD, "status", ["placed", "shipped", "returned"]))
    assert key(v, ORD, "description") in got and key(v, ORD, "description", "net_cents") not in got


def test_a_unit_change_makes_false_the_unit_and_what_computes_with_it_not_the_additivity(cat, tmp_path):
    """A measure's values in another unit (restated, or a new load beside the old rows): its unit,
    description and the metric summing it are false; its additivity is not (how a measure may be
    summed across dimensions is a property of what it measures, not of its unit; the truth had
    counted it false, a miss no detector could honestly fix)."""
    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"unit": "cents", "description": "Net amount in cents", "role": "measure",
                "additivity": {"kind": "semi_additive", "non_additive_dimension": "order_date", "window": "last"}},
          column="net_cents")
    k.metric(ORD, "net", "sum(net_cents)")
    g = k.gen([ORD])
    v = k.view()
    got = set(g._unit_false(g.view.tables[ORD], "net_cents"))
    assert {key(v, ORD, "unit", "net_cents"), key(v, ORD, "description", "net_cents"), metric(v, ORD, "net")} <= got
    assert key(v, ORD, "additivity", "net_cents") not in got
    # a description that states no unit holds in any unit (failed before: counted false whatever it said; an
    # independent tester judged "Lifetime net revenue of the customer" true after cents became dollars)
    k.ann(ORD, {"description": "Net amount of the order"}, column="net_cents")
    g = k.gen([ORD])
    assert key(k.view(), ORD, "description", "net_cents") not in set(g._unit_false(g.view.tables[ORD], "net_cents"))


@pytest.mark.parametrize("text,named", [("Orders; amounts in cents.", True), ("Orders; every amount in dollars.", False),
                                        ("Orders from every channel.", False)])
def test_a_unit_change_makes_false_the_table_description_naming_the_columns_unit(cat, tmp_path, text, named):
    """The table's description naming the unit the column is written in ("amounts in cents" over a cents
    column) is false once the column's values move to another unit; one naming another unit, or none, is
    not (failed before: the truth never counted the table's prose; two independent testers did)."""
    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"description": text})
    k.ann(ORD, {"unit": "cents"}, column="net_cents")
    g = k.gen([ORD])
    got = set(g._unit_false(g.view.tables[ORD], "net_cents"))
    assert (key(k.view(), ORD, "description") in got) is named


# ---------------------------------------------------------------------- grain, joins
def test_a_grain_change_makes_false_the_one_row_per_prose_beside_the_grain(cat, tmp_path, tt):
    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"description": "Orders, one row per order.", "grain": {"text": "one row per order", "keys": ["order_id"]}})
    k.ann(ORD, {"description": "Order id, unique per row"}, column="order_id")
    k.ann(ORD, {"description": "Net amount"}, column="net_cents")
    v = k.view()
    assert set(tt.grain_texts(v, ORD)) == {key(v, ORD, "grain"), key(v, ORD, "description"),
                                         key(v, ORD, "description", "order_id")}


def test_a_grain_change_makes_false_the_prose_saying_to_sum_the_rows_over_a_key(cat, tmp_path, tt):
    """"sum over regions for a company total" counts a repeated key twice (the round-19 Acme tester counted it
    false; failed before: not in grain_texts); a text naming a sum as a measure is not."""
    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"description": "Net per order; sum over regions for a company total."})
    k.ann(ORD, {"description": "Net amount, the sum of the line amounts; never sum over orders for a total"},
          column="net_cents")
    v = k.view()
    assert tt.grain_texts(v, ORD) == [key(v, ORD, "description")]


def test_a_table_that_keeps_versions_makes_false_its_text_saying_rows_hold_the_current_state(cat, tmp_path, tt):
    """"Customers with their current address" is false once past versions sit beside the current rows (two
    independent TPC-DS testers counted it so; failed before: no such function); a text that already speaks of
    versions, and one saying nothing of the state, are not."""
    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"description": "Orders with their current status."})
    v = k.view()
    assert tt.current_state_texts(v, ORD) == [key(v, ORD, "description")]
    k.ann(ORD, {"description": "Orders with their current status; earlier versions are kept."})
    assert tt.current_state_texts(k.view(), ORD) == []
    k.ann(ORD, {"description": "Orders of the web shop."})
    assert tt.current_state_texts(k.view(), ORD) == []


def test_a_table_that_keeps_versions_makes_false_its_metrics_aggregating_every_row(cat, tmp_path, tt):
    """count(*), sum and a count of a column add up every version of a row; a count of distinct keys and a
    maximum do not (failed before: the truth had no such claim, while an independent tester counted the
    TPC-DS customer count false)."""
    k = Tiny(cat, tmp_path)
    for name, expr in (("orders", "count(*)"), ("net", "sum(net_cents)"), ("ids", "count(order_id)"),
                       ("distinct_orders", "count(DISTINCT order_id)"), ("largest", "max(net_cents)")):
        k.metric(ORD, name, expr)
    v = k.view()
    assert tt.every_version_metrics(v, ORD) == sorted(metric(v, ORD, n) for n in ("orders", "net", "ids"))


def test_a_join_that_no_longer_matches_makes_false_the_prose_stating_it(cat, tmp_path, tt):
    """The joining table's description naming the related table and the key, and the key's own description
    naming the related table (by its last part qualifying its key), state the join; prose naming only one
    of them, or another column's, does not (failed before: no such truth; two independent testers counted
    them false)."""
    k = Tiny(cat, tmp_path)
    k.relate(LINES, ORD, [("order_id", "order_id")])
    k.ann(LINES, {"description": "Order lines; join core.orders on order_id for the status."})
    k.ann(LINES, {"description": "The order (orders.order_id)"}, column="order_id")
    k.ann(LINES, {"description": "Units ordered, as core.orders counts them"}, column="qty")
    k.ann(ORD, {"description": "Orders, one row per order_id"})
    v = k.view()
    rel = next(a.key for a in v.tables[LINES].anns if a.kind == "relationship")
    assert tt.join_prose(v, LINES, rel) == sorted([key(v, LINES, "description"), key(v, LINES, "description", "order_id")])


def test_a_table_replaced_makes_false_the_deprecations_sending_readers_to_it(cat, tmp_path, tt):
    """Another table deprecated in favour of the replaced one now sends its readers to a table no longer
    kept (failed before: no such truth; an independent tester counted the legacy table's deprecation). Not a
    backup of the replaced table's rows (its columns all the table's): its rows are still there, as its
    `replaced_by` says (failed before: counted; two independent testers judged such backups' deprecations
    true, and the successor, which holds none of their rows, false)."""
    k = Tiny(cat, tmp_path)
    bkp = "acme.core.orders_bkp"
    k.lk.table(bkp, [("order_id", "bigint"), ("status", "string"), ("net_cents", "bigint")], at=10.4,
               rows={"order_id": [1], "status": ["placed"], "net_cents": [100]})
    k.ann(MART, {"deprecated": {"reason": "use orders", "replaced_by": ORD}})
    k.ann(bkp, {"deprecated": {"reason": "a backup of orders", "replaced_by": ORD}})
    v = k.view()
    assert tt.deprecations_naming(v, ORD) == [key(v, MART, "deprecated")]
    assert tt.deprecations_naming(v, MART) == []


def test_a_table_replaced_makes_false_the_tables_not_for_reporting_sending_readers_to_it(cat, tmp_path, tt):
    """A staging copy not for reporting, `use_instead: [orders]`: once orders is replaced, it sends its readers
    to a table no longer kept, whether or not it holds orders' rows (the table to report from is the live one;
    the round-17 cryptic tester's eight staging and extract tables). One naming another table is not."""
    k = Tiny(cat, tmp_path)
    stg = "acme.core.orders_stg"
    k.lk.table(stg, [("order_id", "bigint"), ("status", "string"), ("net_cents", "bigint")], at=10.4,
               rows={"order_id": [1], "status": ["placed"], "net_cents": [100]})
    k.ann(stg, {"not_for_reporting": {"reason": "staging copy", "use_instead": [ORD]}})
    k.ann(MART, {"not_for_reporting": {"reason": "rebuilt nightly", "use_instead": [LINES]}})
    v = k.view()
    assert tt.use_instead_naming(v, ORD) == [key(v, stg, "not_for_reporting")]
    assert tt.use_instead_naming(v, MART) == []


@pytest.mark.parametrize("text,says", [("Payment attempts; times in UTC", True), ("attempted_at is when", True),
                                       ("Payment attempts, one to three per order", False)])
def test_a_table_description_claims_a_zone_only_when_it_says_one_or_names_the_column(tt, text, says):
    """A zone change makes a table's description false only when it says what zone times are in or names
    the timestamp column (failed before: any description of a table whose timestamp column had no claim
    of its own; two independent testers counted that a false alarm)."""
    assert tt.says_zone(text, "attempted_at") is says


@pytest.mark.parametrize("reason,false_too", [("raw input: store-local timestamps", True),
                                               ("staging copy: holds duplicate rows", False)])
def test_a_zone_change_makes_false_the_reason_a_table_is_not_for_reporting_when_it_says_the_zone(
        cat, tmp_path, reason, false_too):
    """A timestamp column no claim of its own describes: the reason the table is not for reporting is false
    after a zone change when it says what zone the times are in ("store-local timestamps"), as the table's
    description would be; a reason saying nothing of times is not (the round-16 Acme tester's POS table)."""
    k = Tiny(cat, tmp_path)
    k.lk.table(EVENTS, [("event_date", "date"), ("event_id", "bigint"), ("created_at", "timestamp")], at=0,
               rows={"event_date": DAYS[:1], "event_id": [1],
                     "created_at": [dt.datetime(2024, 11, 11, 12, tzinfo=dt.timezone.utc)]})
    k.ann(EVENTS, {"description": "Point-of-sale events", "not_for_reporting": {"reason": reason}})
    k.ann(EVENTS, {"role": "time"}, column="created_at")
    g = k.gen([EVENTS])
    got = g._tz_false(g.view.tables[EVENTS], "created_at")
    assert got == ([(EVENTS, "table.not_for_reporting")] if false_too else [])


def test_a_key_in_a_new_format_makes_false_the_metrics_joining_through_it(cat, tmp_path, tt):
    k = _status(cat, tmp_path)
    k.metric(LINES, "all_units", "sum(qty)")          # reads no column of orders: its answer does not move
    v = k.view()
    rels = [(LINES, "relationship.orders")]
    assert tt.metrics_through(v, rels, ORD) == [metric(v, LINES, "units")]


# ---------------------------------------------------------------------- freshness
@pytest.mark.parametrize("sla, state", [("PT26H", "false"), ("P7D", "pending")])
def test_a_stopped_tables_sla_is_pending_until_the_check_clock_passes_it(cat, tmp_path, sla, state):
    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"description": "Orders", "freshness_sla": sla})
    g = k.gen([ORD])
    tr = g.loads_stopped()
    sla_key = [ORD, "table.freshness_sla"]
    assert (tr.false, tr.pending) == (([sla_key], []) if state == "false" else ([], [sla_key]))
    truth = {"traps": [{"id": tr.id, "cls": tr.cls, "kind": tr.kind, "table": ORD, "columns": [], "description": "",
                        "tables": [ORD], "control": False, "loads": 0, "false": tr.false, "pending": tr.pending,
                        "fixes": tr.fixes}], "routine_loads": []}
    flag = {"table": ORD, "key": "table.freshness_sla", "reason": "freshness_sla_missed", "status": "stale",
            "fixes": [], "message": "m", "evidence_vids": [1]}
    s = score(truth, [], [flag])
    row = s["classes"]["loads_freshness"]
    from eval.traps.verify import verify

    whole = {**truth, "now": k.now, "check_time": g.check_time(), "stopped": [ORD],
             "traps": [{**truth["traps"][0], "vid": tr.vid, "time": None, "writer": "none"}]}
    assert verify(cat, whole, g.view) == []   # a pending claim is the trap's truth: nothing missing
    if state == "pending":   # scored neither way: no miss unflagged, no false alarm flagged
        assert (row["false"], row["tp"], row["fp"]) == (0, 0, 0) and len(s["pending"]) == 1
        assert score(truth, [], [])["classes"]["loads_freshness"]["misses"] == []
    else:
        assert (row["false"], row["caught"], row["tp"], row["fp"]) == (1, 1, 1, 0)


def test_an_sla_already_missed_at_the_lakes_now_is_no_trap_of_loads(cat, tmp_path):
    """The orders' last load is a day before the lake's now: a 12-hour SLA is missed already, before any trap.
    Stopping the table makes nothing false that was not (the detector's flag stands since, no new flag: it was
    scored a miss; TPC-DS web returns, no return on the latest day, under a 26-hour SLA, on development seed
    5): no such table is drawn for a loads trap, and a replacement's truth leaves its SLA out (failed before:
    the SLA counted false by the stop). The 26-hour SLA, which holds at now, is drawn (the test above)."""
    from eval.traps.generator import Skip

    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"description": "Orders", "freshness_sla": "PT12H"})
    g = k.gen([ORD])
    with pytest.raises(Skip):
        g.loads_stopped()
    tr = g.new_trap("replacement_deprecation", "replacement_beside", ORD, [], "x")
    g.falsify_sla(tr, g.view.tables[ORD], None)
    assert tr.false == [] and tr.pending == []


def test_a_dropped_plain_word_column_makes_its_tables_prose_listing_it_false_a_renamed_one_does_not(cat, tmp_path, tt):
    """A plain-word name (`status`) in prose counts unquoted only on its own table and only when the column is
    gone: "Orders. Status is one of ..." describes a column a drop takes away; after a rename the table still
    holds it. The lines' description names it qualified (orders.status): made false by either."""
    k = _status(cat, tmp_path)
    v = k.view()
    gone = set(tt.column_texts(v, ORD, "status", own=True))
    moved = set(tt.column_texts(v, ORD, "status", own=False))
    assert key(v, ORD, "description") in gone
    assert key(v, ORD, "description") not in moved
    assert key(v, LINES, "description") in gone & moved
    # its own annotations only when it is gone; the net amount's description names no column
    assert key(v, ORD, "enum", "status") in gone - moved
    assert key(v, ORD, "description", "net_cents") not in gone | moved


def test_nothing_names_a_new_column(cat, tmp_path, tt):
    k = _status(cat, tmp_path)
    v = k.view()
    assert tt.column_texts(v, ORD, "ingest_batch_id", own=True) == []


def test_a_respelled_value_moves_the_answers_that_test_or_show_it_not_those_testing_other_values(cat, tmp_path, tt):
    k = _status(cat, tmp_path)
    k.vq("Orders not placed", "SELECT count(*) AS n FROM acme.core.orders o WHERE o.status <> 'placed'")
    k.vq("Orders per status", "SELECT status, count(*) AS n FROM acme.core.orders GROUP BY status")
    v = k.view()
    per_status = vqs(v, ORD, "GROUP BY status")
    assert set(tt.queries_showing(v, ORD, "status", ["shipped"])) == per_status
    assert set(tt.queries_showing(v, ORD, "status", ["returned"])) == per_status | vqs(v, ORD, "'returned'")
    assert set(tt.queries_showing(v, ORD, "status", ["placed", "shipped"])) == per_status | vqs(v, ORD, "'placed'")


# ---------------------------------------------------------------------- verified answers (Spark writes the rows)
@pytest.fixture(scope="module")
def spark():
    from spark_bridge import local_session

    session = local_session(app_name="semcat-traps-truth", cores=2)
    yield session
    session.stop()


def test_a_verified_answer_is_false_exactly_when_the_trap_moved_it(cat, tmp_path, spark):
    from spark_bridge import Bridge

    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"description": "Orders", "grain": {"text": "one row per order", "keys": ["order_id"]}})
    k.vq("Orders", "SELECT count(*) AS n FROM acme.core.orders")
    k.vq("Orders before the 15th", "SELECT count(*) AS n FROM acme.core.orders WHERE order_date < DATE '2024-11-15'")
    g = Generator(cat, Bridge(spark, cat, footers_on="driver"), k.now, seed=1, writers=("spark",), log=lambda m: None)
    g.used = set(g.view.tables) - {ORD}
    try:
        tr = g.grain_duplicate_load()   # the latest day (the 21st) appended again
    finally:
        if g.scratch:
            import shutil

            shutil.rmtree(g.scratch, ignore_errors=True)
    v = g.view
    every = {(ORD, a.key) for a in v.tables[ORD].anns if a.kind == "verified_query" and "WHERE" not in a.value["sql"]}
    assert false(tr) == {key(v, ORD, "grain")} | every   # the count before the 15th did not move


def _replayed(cat, spark, k):
    """The rows a routine load of the orders would replay as its first new day (a generator over `k`'s lake)."""
    from spark_bridge import Bridge

    clear_cache()
    g = Generator(cat, Bridge(spark, cat, footers_on="driver"), k.now, seed=1, writers=("spark",), log=lambda m: None)
    try:
        return g.replay(g.view.tables[ORD], 1).collect()
    finally:
        if g.scratch:
            import shutil

            shutil.rmtree(g.scratch, ignore_errors=True)


def _partial_today(k) -> dt.date:
    """The orders' eve (the day before the lake's today) with 5 rows, and a partial today with 1; returns today."""
    today = dt.datetime.fromtimestamp(k.now, dt.timezone.utc).date()
    eve = today - dt.timedelta(days=1)
    k.lk.append(ORD, {"order_id": [100, 101, 102, 103], "status": ["placed"] * 4, "net_cents": [1, 2, 3, 4],
                      "order_date": [eve.isoformat()] * 4}, at=10.6)
    k.lk.append(ORD, {"order_id": [104], "status": ["placed"], "net_cents": [5], "order_date": [today.isoformat()]},
                at=10.7)
    return today


def test_a_replay_copies_the_day_before_a_partial_today_dated_as_the_replay_of_today(cat, tmp_path, spark):
    """The lake's clock falls inside its last day: that day holds its early rows alone. A routine load
    replays the day before it (whole), shifted to the date a replay of the latest day would have, not
    the partial day (held-out Acme 3001 of session 34: early-hour orders replayed twice read as a zone
    shift). Control: a last day holding half the rows of the day before or more is replayed as is."""
    k = Tiny(cat, tmp_path)
    today = _partial_today(k)
    rows = _replayed(cat, spark, k)
    assert sorted(r["net_cents"] for r in rows) == [1, 2, 3, 4, 100]  # the eve's 5 rows (Tiny's order 11 too)
    assert {r["order_date"] for r in rows} == {today + dt.timedelta(days=1)}
    k.lk.append(ORD, {"order_id": [105, 106], "status": ["placed"] * 2, "net_cents": [6, 7],
                      "order_date": [today.isoformat()] * 2}, at=10.8)
    rows = _replayed(cat, spark, k)
    assert sorted(r["net_cents"] for r in rows) == [5, 6, 7]  # 3 rows of the eve's 5: replayed as it is
    assert {r["order_date"] for r in rows} == {today + dt.timedelta(days=1)}


def test_the_routine_load_replays_the_day_before_a_partial_today(cat, tmp_path, spark):
    """The routine loads (T0+1d, T0+2d) go by the same rule: the first replays the whole eve as T0+1d, the
    second that day as T0+2d (the partial today is never copied)."""
    from spark_bridge import Bridge

    k = Tiny(cat, tmp_path)
    today = _partial_today(k)
    g = Generator(cat, Bridge(spark, cat, footers_on="driver"), k.now, seed=1, writers=("spark",), log=lambda m: None)
    g.active = [ORD]
    try:
        g.routine(1, False)
        g.routine(2, False)
    finally:
        if g.scratch:
            import shutil

            shutil.rmtree(g.scratch, ignore_errors=True)
    got = cc.run_sql(cat, "SELECT order_date, net_cents FROM acme.core.orders WHERE order_date > DATE "
                          f"'{today.isoformat()}' ORDER BY 1, 2").rows
    new = [(today + dt.timedelta(days=d)).isoformat() for d in (1, 2)]
    assert [(r[0], r[1]) for r in got] == [(d, c) for d in new for c in (1, 2, 3, 4, 100)]


RETURNS = "acme.core.returns"


def _drawn(cat, spark, k, draw, free=ORD):
    """The generator over `k`'s lake with only `free` (the orders) free, and the trap its `draw` wrote there."""
    from spark_bridge import Bridge

    g = Generator(cat, Bridge(spark, cat, footers_on="driver"), k.now, seed=1, writers=("spark",), log=lambda m: None)
    g.used = set(g.view.tables) - ({free} if isinstance(free, str) else set(free))
    try:
        return g, getattr(g, draw)()
    finally:
        if g.scratch:
            import shutil

            shutil.rmtree(g.scratch, ignore_errors=True)


def test_a_table_replaced_beside_lacks_its_deprecation_and_its_metrics_are_false(cat, tmp_path, spark):
    """replacement_beside: the old table lacks its deprecation (the absent `table.deprecated`, an annotation
    the change calls for) and its metric measures a table no longer loaded: both false, the successor their
    fix; its description still says what its rows are and stays true (wave 5, session 27: testers of rounds
    10-12 judged it true; before, the truth held it false) (failed before: the metric not counted; an independent tester counted
    the metric of a replaced store mart); another table's prose sending readers to it ("use core.orders
    instead") is false too (failed before: not counted; the same tester's legacy.sales_daily), its repair
    naming the new table (`repoint`)."""
    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"description": "Orders, loaded daily"})
    k.metric(ORD, "order_total", "sum(net_cents)")
    k.ann(MART, {"description": "Old daily totals. Deprecated: use core.orders instead."})
    k.ann(LINES, {"description": "Order lines, built from acme.core.orders."})
    k.vq("Orders placed", "SELECT count(order_id) AS placed FROM acme.core.orders")  # of it alone: re-verified
    k.vq("Lines per order", "SELECT count(*) AS n FROM acme.core.orders o JOIN acme.core.order_items i "
         "ON i.order_id = o.order_id")  # also of another table: left to whether its answer moved
    g, tr = _drawn(cat, spark, k, "replacement_beside")
    new = tr.tables[1]
    assert {(ORD, "table.deprecated"), (ORD, "metric.order_total"), (MART, "table.description")} <= false(tr)
    assert (ORD, "table.description") not in false(tr)
    alone = vqs(g.view, ORD, "AS placed")
    assert len(alone) == 1 and alone <= false(tr) and not vqs(g.view, ORD, "JOIN") & false(tr)
    # re-verified by a person, or asked of the successor (the review checks it at the successor's first load)
    assert tr.fixes[f"{ORD}|{next(iter(alone))[1]}"] == [{"action": "reverify", "params": {}},
                                                         {"action": "repoint", "params": {"table": new}}]
    assert (LINES, "table.description") not in false(tr)  # no pointing word: it says where the lines came from
    succ = {"action": "successor", "params": {"table": new}}
    assert tr.fixes[f"{ORD}|metric.order_total"] == succ and tr.fixes[f"{ORD}|table.deprecated"] == succ
    # the prose sending readers to it names the new table instead
    assert tr.fixes[f"{MART}|table.description"] == {"action": "repoint", "params": {"table": new}}


def test_rows_removed_from_a_joined_table_make_false_the_joins_whose_rows_lose_their_match(cat, tmp_path, spark):
    """Removing a value's rows from a table other tables join to leaves the source rows that referenced them
    without a match: those joins are false (an inner join through them now drops rows), read from the data;
    a join whose rows all still match is not, whichever value the seed removes."""

    k = Tiny(cat, tmp_path)
    k.lk.table(RETURNS, [("order_id", "bigint"), ("reason", "string")], at=0, rows={"order_id": [3], "reason": ["late"]})
    k.ann(ORD, {"enum": ["placed", "shipped", "returned"]}, column="status")
    k.relate(LINES, ORD, [("order_id", "order_id")])
    k.relate(RETURNS, ORD, [("order_id", "order_id")])
    g, tr = _drawn(cat, spark, k, "values_enum_removed")
    v = g.view
    rel = {src: (src, a.key) for src, a in v.relationships()}
    gone = tr.description.split("'")[1]
    # order 1 is placed, 2 shipped (both have lines), 3 returned (the only one returned)
    orphaned = {LINES} if gone in ("placed", "shipped") else {RETURNS}
    assert {t for t, kk in false(tr) if kk.startswith("relationship.")} == orphaned
    assert rel[next(iter(orphaned))] in false(tr)
    assert all(tr.fixes[f"{t}|{kk}"] is None for t, kk in false(tr) if kk.startswith("relationship."))


@pytest.mark.parametrize("keys", [["order_id"], ["order_id", "order_date"]])
def test_a_write_that_makes_the_grains_keys_repeat_makes_the_grain_false(cat, tmp_path, spark, keys):
    """Whatever a trap writes, a grain whose keys repeat after it and did not before is false, and so is the
    prose stating it, read from the data: a deprecated table loaded again with its latest day replayed
    (its keys kept) repeats them (failed before: only the deprecation was false); with the date among the
    keys the replayed day's keys are new, and the grain holds."""

    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"description": "Orders, one row per order", "grain": {"text": "one row per order", "keys": keys},
                "deprecated": {"reason": "replaced", "replaced_by": None, "since": None}})
    g, tr = _drawn(cat, spark, k, "replacement_deprecated_written")
    v = g.view
    grain = {key(v, ORD, "grain"), key(v, ORD, "description")}
    assert key(v, ORD, "deprecated") in false(tr)
    if len(keys) == 1:
        assert grain <= false(tr) and all(tr.fixes[f"{t}|{kk}"] is None for t, kk in grain)
    else:
        assert not grain & false(tr)


STATUSES = "acme.core.statuses"


@pytest.mark.parametrize("enum", [False, True])
def test_versions_written_with_a_key_the_joined_table_lacks_make_the_join_from_the_changed_table_false(
        cat, tmp_path, spark, enum):
    """A change that writes a relationship's source rows can orphan them as surely as one that removes the
    rows they join to: orders kept as versions (SCD2) whose second version changed `status` to a value the
    statuses table does not hold leave a larger share of the orders without a match on new keys, so the
    join orders -> statuses on status is false (failed before: only joins into the changed table were read).
    Control: with an enum on status the versions move to another status of the enum, which matches."""

    k = Tiny(cat, tmp_path)
    k.lk.table(STATUSES, [("status", "string"), ("label", "string")], at=0,
               rows={"status": ["placed", "shipped", "returned"], "label": ["Placed", "Shipped", "Returned"]})
    k.ann(ORD, {"grain": {"text": "one row per order", "keys": ["order_id"]}})
    if enum:
        k.ann(ORD, {"enum": ["placed", "shipped", "returned"]}, column="status")
    k.relate(ORD, STATUSES, [("status", "status")])
    k.metric(ORD, "orders", "count(*)")
    g, tr = _drawn(cat, spark, k, "grain_scd2")
    rel = next((src, a.key) for src, a in g.view.relationships() if src == ORD)
    assert (rel in false(tr)) is not enum
    if not enum:
        assert tr.fixes[f"{rel[0]}|{rel[1]}"] is None
    # a metric counting every row counts versions now: a person says, or it keeps the current rows
    assert metric(g.view, ORD, "orders") in false(tr)
    assert tr.fixes[f"{ORD}|metric.orders"] == [None, {"action": "filter", "params": {"table": ORD, "column": "is_current"}}]


def test_a_day_loaded_again_whose_keys_were_unmatched_already_leaves_the_join_from_it_true(cat, tmp_path, spark):
    """Rows loaded twice whose keys had no match already change the share of unmatched rows, not which
    keys lack a match: the join from the reloaded table holds as before (the statuses table lacks
    `shipped`, the latest day's status)."""

    k = Tiny(cat, tmp_path)
    k.lk.table(STATUSES, [("status", "string")], at=0, rows={"status": ["placed", "returned"]})
    k.ann(ORD, {"grain": {"text": "one row per order", "keys": ["order_id"]}})
    k.relate(ORD, STATUSES, [("status", "status")])
    k.metric(ORD, "order_total", "sum(net_cents)")  # sums the day loaded twice twice
    k.metric(ORD, "orders", "count(DISTINCT order_id)")  # counts its orders once
    g, tr = _drawn(cat, spark, k, "grain_duplicate_load")
    rel = next((src, a.key) for src, a in g.view.relationships() if src == ORD)
    assert key(g.view, ORD, "grain") in false(tr) and rel not in false(tr)
    assert metric(g.view, ORD, "order_total") in false(tr) and metric(g.view, ORD, "orders") not in false(tr)


def test_a_grain_already_false_is_no_trap_to_draw(cat, tmp_path, spark):
    """A grain whose keys already repeat before any trap (TPC-DS dev 1 and 2: store_returns_v2's keys
    repeated in the world as built) cannot be made false by one: a trap drawn on it would count its
    flag, raised before the traps already, as a miss. The grain traps draw only tables whose grain keys
    are unique in the data (failed before: the duplicate load was drawn on it). Control: the same table
    with unique keys is drawn."""
    from eval.traps.generator import Skip

    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"grain": {"text": "one row per status", "keys": ["status"]}})  # 'shipped' repeats
    with pytest.raises(Skip):
        _drawn(cat, spark, k, "grain_duplicate_load")
    k.ann(ORD, {"grain": {"text": "one row per order", "keys": ["order_id"]}})
    g, tr = _drawn(cat, spark, k, "grain_duplicate_load")
    assert key(g.view, ORD, "grain") in false(tr)


SPEND = "acme.core.spend"


@pytest.mark.parametrize("keys", [["d", "channel", "campaign"], ["d", "channel"]])
def test_two_values_of_a_grain_key_merged_make_the_grain_false_only_when_its_keys_repeat(cat, tmp_path, spark, keys):
    """A channel merged into another is a grain key's two values become one, but the grain is false only
    when its keys then repeat, read from the data: "one row per date, channel and campaign" still holds
    when each campaign keeps its own id (failed before: the generator counted every grain with the merged
    column among its keys false, and the detector, right, was scored a miss); "one row per date and
    channel" does not."""

    k = Tiny(cat, tmp_path)
    k.lk.table(SPEND, [("d", "date"), ("channel", "string"), ("campaign", "bigint"), ("cost", "bigint")], at=0,
               rows={"d": [DAYS[0]] * 3 + [DAYS[1]] * 3, "channel": ["a", "b", "c"] * 2, "campaign": [1, 2, 3] * 2,
                     "cost": [5, 6, 7, 8, 9, 10]})
    k.ann(SPEND, {"grain": {"text": "one row per " + ", ".join(keys), "keys": keys}})
    k.ann(SPEND, {"enum": ["a", "b", "c"]}, column="channel")
    g, tr = _drawn(cat, spark, k, "values_categories_merged", free=SPEND)
    assert key(g.view, SPEND, "enum", "channel") in false(tr)
    assert (key(g.view, SPEND, "grain") in false(tr)) is (len(keys) == 2)


def test_a_metric_filtering_the_value_another_was_merged_into_is_false(cat, tmp_path, spark):
    """A channel merged into another: the metric counting the merged-away value is false (its value is gone)
    and so is the metric counting the value it was merged into (it now counts the merged rows too; failed
    before: only the first, while an independent tester counted both); the metric of the third value is not."""
    k = Tiny(cat, tmp_path)
    k.lk.table(SPEND, [("d", "date"), ("channel", "string"), ("campaign", "bigint"), ("cost", "bigint")], at=0,
               rows={"d": [DAYS[0]] * 3 + [DAYS[1]] * 3, "channel": ["a", "b", "c"] * 2, "campaign": [1, 2, 3] * 2,
                     "cost": [5, 6, 7, 8, 9, 10]})
    k.ann(SPEND, {"grain": {"text": "one row per date and campaign", "keys": ["d", "campaign"]}})
    k.ann(SPEND, {"enum": ["a", "b", "c"]}, column="channel")
    for x in "abc":
        k.metric(SPEND, f"cost_{x}", "sum(cost)", filter=f"channel = '{x}'")
    g, tr = _drawn(cat, spark, k, "values_categories_merged", free=SPEND)
    old, new = re.findall(r"'(\w)'", tr.description)
    third = ({"a", "b", "c"} - {old, new}).pop()
    v = g.view
    assert {metric(v, SPEND, f"cost_{old}"), metric(v, SPEND, f"cost_{new}")} <= false(tr)
    assert metric(v, SPEND, f"cost_{third}") not in false(tr)
    assert tr.fixes[f"{SPEND}|metric.cost_{new}"] is None


def test_a_value_of_another_column_that_went_with_the_removed_rows_makes_its_enum_false(cat, tmp_path, spark):
    """Rows removed for one column's value take every value that only those rows held: with channel and
    region paired row for row, whichever value of whichever column the trap removes, the other column's
    paired value is gone too and its enum is false alike (failed before: only the column the trap meant;
    acme-701 removed region 'online', the one online store's row, and its format 'online' with it). A
    column whose values all remain (kind) keeps its enum."""

    k = Tiny(cat, tmp_path)
    k.lk.table(SPEND, [("d", "date"), ("channel", "string"), ("region", "string"), ("kind", "string")], at=0,
               rows={"d": [DAYS[0]] * 3 + [DAYS[1]] * 3, "channel": ["a", "b", "c"] * 2,
                     "region": ["n", "s", "x"] * 2, "kind": ["p", "q", "p", "q", "p", "q"]})
    for column, values in (("channel", ["a", "b", "c"]), ("region", ["n", "s", "x"]), ("kind", ["p", "q"])):
        k.ann(SPEND, {"enum": values}, column=column)
    g, tr = _drawn(cat, spark, k, "values_enum_removed", free=SPEND)
    v = g.view
    assert {key(v, SPEND, "enum", "channel"), key(v, SPEND, "enum", "region")} <= false(tr)
    assert key(v, SPEND, "enum", "kind") not in false(tr)


# ---------------------------------------------------------------------- kinds the independent testers designed
def _rows(cat, sql):
    con = cc.open_duckdb(cat)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


SHIFTS = "acme.core.shifts"


def _summed(k: Tiny, table: str, col: str, name: str) -> None:
    """A metric `name` summing `col`, a verified query summing it, and one counting the table's rows."""
    k.metric(table, name, f"sum({col})")
    k.vq(f"Sum of {col}", f"SELECT sum({col}) AS n FROM {table}")
    k.vq(f"Rows of {table}", f"SELECT count(*) AS n FROM {table}")


@pytest.mark.parametrize("unit,typ,values,factor,fix", [
    ("hours", "decimal(6,2)", [1.5, 8.0, 12.0, 7.25], 60,                       # x 3600 would not fit decimal(6,2)
     {"action": "update_unit", "params": {"column": "amount", "factor": 60.0}}),
    ("kg", "bigint", [3, 40, 125, 7], 1000, {"action": "update_unit", "params": {"column": "amount", "scale": 3}}),
])
def test_a_measure_restated_by_a_unit_factor_makes_its_unit_and_what_computes_with_it_false(
        cat, tmp_path, spark, unit, typ, values, factor, fix):
    """unit_factor_restated: a time measure in hours restated in minutes (x 60, in place, the same name and
    type): the values read back are the old ones x 60; false: its unit, the metric summing it, the query
    reading it and the table's description naming the unit (what `_unit_false` gives); not its additivity,
    nor its own description, which states no unit, nor a query that reads no such column. The fix: `update_unit` with the scale for a power of
    ten (kg -> g, x 1000: scale 3), with the factor for x 60 (hours -> minutes: `semantic.units`), for the unit and
    for the metric summing it."""
    k = Tiny(cat, tmp_path)
    k.lk.table(SHIFTS, [("d", "date"), ("shift_id", "bigint"), ("amount", typ)], at=0,
               rows={"d": DAYS[:4], "shift_id": [1, 2, 3, 4], "amount": values})
    k.ann(SHIFTS, {"description": f"Shifts; amounts in {unit}."})
    k.ann(SHIFTS, {"unit": unit, "description": "How long the shift ran" if unit == "hours" else "Weight moved",
                   "additivity": {"kind": "semi_additive", "non_additive_dimension": "d", "window": "last"}},
          column="amount")
    _summed(k, SHIFTS, "amount", "total")
    g, tr = _drawn(cat, spark, k, "values_unit_factor_restated", free=SHIFTS)
    v = g.view
    assert (tr.kind, tr.columns) == ("unit_factor_restated", ["amount"])
    got = sorted(float(r[0]) for r in _rows(cat, f"SELECT amount FROM {SHIFTS}"))
    assert got == pytest.approx(sorted(x * factor for x in values))
    assert false(tr) == {key(v, SHIFTS, "unit", "amount"), key(v, SHIFTS, "description"),
                         metric(v, SHIFTS, "total")} | vqs(v, SHIFTS, "sum(amount)")
    # its own description states no unit ("How long the shift ran"): true in minutes too (it was counted false;
    # an independent tester judged such a description true)
    assert key(v, SHIFTS, "additivity", "amount") not in false(tr)
    assert key(v, SHIFTS, "description", "amount") not in false(tr)
    assert tr.fixes[f"{SHIFTS}|{key(v, SHIFTS, 'unit', 'amount')[1]}"] == fix
    # the metric summing it is rewritten on the values as they were, with the same fix (wave 5, session 27: it
    # was None, a person's rewrite; the review now divides the column by the factor in its expression)
    assert tr.fixes[f"{SHIFTS}|{metric(v, SHIFTS, 'total')[1]}"] == fix


def test_a_description_naming_the_unit_of_a_measure_restated_by_a_factor_says_the_new_unit(cat, tmp_path, spark):
    """unit_factor_restated on a measure whose own description names its unit once and nothing else a
    change of unit makes false ("How long the shift ran, in hours", x 60): the description is false and its
    repair says the new unit (`reword_unit {column, old: hours, new: minutes}`, as the review writes it:
    `semantic.units.reworded`); the table's description ("amounts in hours; at most 12 hours a shift": a
    number in the old unit) is false with no fix, a person's to rewrite."""
    k = Tiny(cat, tmp_path)
    k.lk.table(SHIFTS, [("d", "date"), ("shift_id", "bigint"), ("amount", "decimal(6,2)")], at=0,
               rows={"d": DAYS[:4], "shift_id": [1, 2, 3, 4], "amount": [1.5, 8.0, 12.0, 7.25]})
    k.ann(SHIFTS, {"description": "Shifts; amounts in hours, at most 12 hours a shift."})
    k.ann(SHIFTS, {"unit": "hours", "description": "How long the shift ran, in hours"}, column="amount")
    g, tr = _drawn(cat, spark, k, "values_unit_factor_restated", free=SHIFTS)
    v = g.view
    own = key(v, SHIFTS, "description", "amount")
    assert own in false(tr) and key(v, SHIFTS, "description") in false(tr)
    assert tr.fixes[f"{SHIFTS}|{own[1]}"] == {"action": "reword_unit",
                                             "params": {"column": "amount", "old": "hours", "new": "minutes"}}
    assert tr.fixes[f"{SHIFTS}|table.description"] is None


def test_rows_past_a_documented_range_make_its_texts_false_and_the_repair_is_the_new_range_unless_it_was_filled(
        cat, tmp_path, spark):
    """date_range_exceeded: rows dated weeks past the range the orders' texts state (they hold every day of
    2024-11-11..21). Both texts naming the range's end are false. The table's description only bounded the
    dates ("from 2024-11-01": no order before the 11th), so its repair is the range from its start to the
    trap's last date (`update_range`); the column's description, a range its rows filled day by day, would
    state a gap: no fix (a person's)."""
    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"description": "Orders dated from 2024-11-01 to 2024-11-21."})
    k.ann(ORD, {"description": "One order date per day from 2024-11-11 to 2024-11-21"}, column="order_date")
    g, tr = _drawn(cat, spark, k, "ranges_exceeded")
    v = g.view
    own = key(v, ORD, "description", "order_date")
    assert false(tr) == {key(v, ORD, "description"), own}
    dates = sorted(str(r[0]) for r in _rows(cat, f"SELECT DISTINCT order_date FROM {ORD}"))
    assert dates[-2] == "2024-11-21" and dates[-1] > "2024-12-20"
    assert tr.fixes[f"{ORD}|table.description"] == {"action": "update_range", "params": {
        "column": "order_date", "start": "2024-11-01", "end": dates[-1]}}
    assert tr.fixes[f"{ORD}|{own[1]}"] is None


EVENTS = "acme.core.events"


def test_new_loads_in_local_time_in_a_utc_column_make_its_description_false_and_leave_the_old_rows(
        cat, tmp_path, spark):
    """timezone_shift_new_load: the latest day replayed as a new day with created_at_utc shifted some hours
    (local time written into a UTC column), appended beside the old rows, which keep UTC: the column's
    description (it says UTC) is false, fix none; a query that does not read the column is not, nor the grain
    (the new load's keys are new); the old rows
    read back unchanged, the new ones are the latest day's + 1 day + the shift."""
    k = Tiny(cat, tmp_path)
    k.lk.table(EVENTS, [("event_date", "date"), ("event_id", "bigint"), ("created_at_utc", "timestamp")], at=0,
               rows={"event_date": DAYS[:1], "event_id": [1],
                     "created_at_utc": [dt.datetime(2024, 11, 11, 12, tzinfo=dt.timezone.utc)]})
    for i in range(1, 11):
        d = dt.date.fromisoformat(DAYS[i])
        k.lk.append(EVENTS, {"event_date": [DAYS[i]], "event_id": [i + 1],
                             "created_at_utc": [dt.datetime(d.year, d.month, d.day, 12, tzinfo=dt.timezone.utc)]}, at=i)
    k.ann(EVENTS, {"grain": {"text": "one row per event", "keys": ["event_id"]}})
    k.ann(EVENTS, {"description": "When the event was created, in UTC"}, column="created_at_utc")
    k.ann(EVENTS, {"description": "Event number"}, column="event_id")
    k.vq("Early events", "SELECT count(*) AS n FROM acme.core.events WHERE event_date < DATE '2024-11-15'")
    before = _rows(cat, f"SELECT event_id, created_at_utc FROM {EVENTS} ORDER BY event_id")
    g, tr = _drawn(cat, spark, k, "values_timezone_shift_new_load", free=EVENTS)
    v = g.view
    assert (tr.kind, tr.columns) == ("timezone_shift_new_load", ["created_at_utc"])
    h = int(tr.description.split("shifted ")[1].split(" h")[0])
    after = _rows(cat, f"SELECT event_id, created_at_utc FROM {EVENTS} ORDER BY event_id")
    assert after[:len(before)] == before and len(after) == len(before) + 1     # the old rows stay as they were
    assert after[-1][1] - before[-1][1] == dt.timedelta(days=1, hours=h)       # the new load: local time
    assert false(tr) == {key(v, EVENTS, "description", "created_at_utc")}
    assert all(f is None for f in tr.fixes.values())


CUST, SESS, PAY = "acme.core.customers", "acme.core.sessions", "acme.core.payments"
UUIDS = ["0a1b-2c3d-4e5f", "1b2c-3d4e-5f6a", "2c3d-4e5f-6a7b"]


def test_a_string_key_restated_in_a_new_format_makes_false_the_joins_into_it_and_the_metrics_through_them(
        cat, tmp_path, spark):
    """key_reformatted: a dimension's string key (customer_uuid) restated in a new text format, the sessions
    referencing it unchanged: none of their keys matches any more. False: the relationship into it, the
    metric on the sessions reading the customers through it, the key's own sample values (old format); not
    a metric reading the sessions alone, nor the join into the customers' integer key (its rows still
    match). No fix: a person says which side's format is right."""
    k = Tiny(cat, tmp_path)
    k.lk.table(CUST, [("customer_id", "bigint"), ("customer_uuid", "string"), ("segment", "string")], at=0,
               rows={"customer_id": [1, 2, 3], "customer_uuid": UUIDS, "segment": ["vip", "std", "std"]})
    k.lk.table(SESS, [("session_id", "bigint"), ("customer_uuid", "string")], at=0,
               rows={"session_id": [1, 2, 3, 4], "customer_uuid": [UUIDS[0], UUIDS[1], UUIDS[2], UUIDS[0]]})
    k.lk.table(PAY, [("payment_id", "bigint"), ("customer_id", "bigint")], at=0,
               rows={"payment_id": [1, 2], "customer_id": [1, 3]})
    k.relate(SESS, CUST, [("customer_uuid", "customer_uuid")])
    k.relate(PAY, CUST, [("customer_id", "customer_id")])
    k.ann(CUST, {"sample_values": UUIDS[:2], "description": "The customer's id in the web systems"}, column="customer_uuid")
    k.metric(SESS, "vip_sessions", "count(*)", "customers.segment = 'vip'")
    k.metric(SESS, "sessions", "count(DISTINCT session_id)")
    g, tr = _drawn(cat, spark, k, "keys_reformatted", free=[CUST, SESS, PAY])
    v = g.view
    assert (tr.kind, tr.table, tr.columns) == ("key_reformatted", CUST, ["customer_uuid"])
    now = sorted(r[0] for r in _rows(cat, f"SELECT customer_uuid FROM {CUST}"))
    assert now != sorted(UUIDS) and not set(now) & set(UUIDS) and len(set(now)) == 3     # restated, still unique
    assert _rows(cat, f"SELECT count(*) FROM {SESS} s JOIN {CUST} c ON c.customer_uuid = s.customer_uuid") == [(0,)]
    rel = {src: (src, a.key) for src, a in v.relationships()}
    assert false(tr) == {rel[SESS], metric(v, SESS, "vip_sessions"), key(v, CUST, "sample_values", "customer_uuid")}
    assert all(f is None for f in tr.fixes.values())


def test_a_key_reformat_is_no_trap_where_no_string_key_is_joined(cat, tmp_path, spark):
    """Where every relationship joins on an integer key (the Tiny lake's order lines -> orders), the kind
    is skipped, saying why."""
    from eval.traps.generator import Skip

    k = Tiny(cat, tmp_path)
    k.relate(LINES, ORD, [("order_id", "order_id")])
    with pytest.raises(Skip, match="string key"):
        _drawn(cat, spark, k, "keys_reformatted", free=[ORD, LINES])


TICKETS = "acme.core.tickets"


def test_part_of_a_values_rows_respelled_makes_false_the_set_and_what_tests_the_value_not_its_samples(
        cat, tmp_path, spark):
    """value_partly_respelled: part (30-70%) of the 'returned' rows respelled, 'returned' still on the
    others. False: the enum (fix: add the new value), the table's description listing the complete set,
    the column's own description naming 'returned', the metric filtering it and the query testing it
    (re-verify). Not: the sample values (examples; 'returned' still occurs), the metric and the query
    testing 'placed' (their answers did not move), another column's description."""
    k = Tiny(cat, tmp_path)
    status = ["returned"] * 60 + ["placed"] * 10 + ["shipped"] * 10
    k.lk.table(TICKETS, [("ticket_id", "bigint"), ("status", "string"), ("amount", "bigint")], at=0,
               rows={"ticket_id": list(range(1, 81)), "status": status, "amount": [5] * 80})
    k.ann(TICKETS, {"description": "Tickets. Status is one of placed, shipped, returned."})
    k.ann(TICKETS, {"enum": ["placed", "shipped", "returned"], "sample_values": ["shipped", "returned"],
                    "description": "Where the ticket stands; returned means the goods came back"}, column="status")
    k.ann(TICKETS, {"description": "Amount of the ticket"}, column="amount")
    k.metric(TICKETS, "returned_tickets", "count(*)", "status = 'returned'")
    k.metric(TICKETS, "placed_tickets", "count(*)", "status = 'placed'")
    k.vq("Returned tickets", "SELECT count(*) AS n FROM acme.core.tickets WHERE status = 'returned'")
    k.vq("Placed tickets", "SELECT count(*) AS n FROM acme.core.tickets WHERE status = 'placed'")
    g, tr = _drawn(cat, spark, k, "values_partly_respelled", free=TICKETS)
    v = g.view
    assert (tr.kind, tr.columns) == ("value_partly_respelled", ["status"])
    old, new = tr.description.split("'")[1], tr.description.split("'")[3]
    assert old == "returned" and new not in ("placed", "shipped", "returned")
    counts = dict(_rows(cat, f"SELECT status, count(*) FROM {TICKETS} GROUP BY 1"))
    assert counts["placed"] == 10 and counts["shipped"] == 10 and counts[old] + counts[new] == 60
    assert 0.2 <= counts[new] / 60 <= 0.8 and counts[old] >= 5                  # part moved, the value still occurs
    enum = key(v, TICKETS, "enum", "status")
    assert false(tr) == {enum, key(v, TICKETS, "description"), key(v, TICKETS, "description", "status"),
                         metric(v, TICKETS, "returned_tickets")} | vqs(v, TICKETS, "'returned'")
    assert tr.fixes[f"{TICKETS}|{enum[1]}"] == {"action": "add_enum_values", "params": {"column": "status", "values": [new]}}
    assert tr.fixes[f"{TICKETS}|metric.returned_tickets"] is None
    assert all(tr.fixes[f"{t}|{kk}"] == {"action": "reverify", "params": {}} for t, kk in vqs(v, TICKETS, "'returned'"))


LEDGER = "acme.core.ledger"


def test_a_table_restated_with_the_same_keys_under_a_new_definition_moves_its_answers_not_its_metrics(
        cat, tmp_path, spark):
    """restated_same_keys: every row kept with its key, the revenue x 1.03-1.10 per row (recognized at
    another event). False: the verified query summing it (its answer moved; re-verify). Not: the metric
    summing it (its definition is the same), the unit (the same cents), the column's description, the
    query counting rows (its answer did not move)."""
    k = Tiny(cat, tmp_path)
    revs = [10_000 + 137 * i for i in range(20)]
    k.lk.table(LEDGER, [("entry_id", "bigint"), ("revenue_cents", "bigint"), ("d", "date")], at=0,
               rows={"entry_id": list(range(1, 21)), "revenue_cents": revs, "d": [DAYS[i % 11] for i in range(20)]})
    k.ann(LEDGER, {"grain": {"text": "one row per entry", "keys": ["entry_id"]}})
    k.ann(LEDGER, {"unit": "cents", "description": "Revenue of the entry"}, column="revenue_cents")
    _summed(k, LEDGER, "revenue_cents", "revenue")
    g, tr = _drawn(cat, spark, k, "definitions_restated_same_keys", free=LEDGER)
    v = g.view
    assert (tr.kind, tr.columns) == ("restated_same_keys", ["revenue_cents"])
    after = dict(_rows(cat, f"SELECT entry_id, revenue_cents FROM {LEDGER}"))
    assert sorted(after) == list(range(1, 21))                                 # the same rows and keys
    assert all(1.029 <= after[i + 1] / r <= 1.101 for i, r in enumerate(revs))
    assert false(tr) == vqs(v, LEDGER, "sum(revenue_cents)")
    assert not false(tr) & {metric(v, LEDGER, "revenue"), key(v, LEDGER, "unit", "revenue_cents"),
                            key(v, LEDGER, "description", "revenue_cents"), key(v, LEDGER, "grain")}
    assert all(f == {"action": "reverify", "params": {}} for f in tr.fixes.values())


def test_a_table_keyed_by_a_composite_reference_is_not_replayed_by_routine_loads(cat, tmp_path):
    """Order lines keyed (order_id, line_no) and related to another table on both columns: a replayed
    day gives its keys new values the referenced rows do not hold, so the routine load would write
    rows that match nothing, which the truth calls routine (failed before: TPC-DS store_returns_v2,
    keyed and related to its sale on ticket and item, replayed with new tickets, a control's false
    alarm). A single-column reference (the lines' order_id to orders) is followed by the offsets, and
    a composite relationship on columns that are not the table's keys leaves it replayed."""
    k = Tiny(cat, tmp_path)
    k.ann(LINES, {"grain": {"text": "one row per order line", "keys": ["order_id", "line_no"]}})
    k.relate(LINES, ORD, [("order_id", "order_id")])
    g = k.gen([LINES])
    assert g.replay_orphans(g.view.tables[LINES]) == []
    k.relate(LINES, MART, [("order_id", "net_cents"), ("line_no", "net_cents")])
    g = k.gen([LINES])
    assert g.replay_orphans(g.view.tables[LINES]) == ["line_no", "order_id"]
    assert g.replay_orphans(g.view.tables[ORD]) == []


# ---------------------------------------------------------------------- the catalog's instructions
CATALOG_TEXT = ("Acme lake. Money is integer cents in columns ending _cents. Columns ending _date are calendar dates. "
                "Revenue is the sum of orders.net_cents over orders whose status is not returned.")


@pytest.mark.parametrize("change,column,value,made_false", [
    ("unit", "net_cents", None, True),        # the _cents convention names a unit
    ("zone", "net_cents", None, False),       # ... and no zone
    ("zone", "order_date", None, False),      # the _date convention says no zone either
    ("gone", "net_cents", None, True),        # named with its table: orders.net_cents
    ("gone", "status", None, False),          # a plain word of prose, not named with its table
    ("value", "status", "returned", True),    # the column and the value, and the table by its name
    ("value", "status", "placed", False),     # a value the sentence does not name
])
def test_the_catalogs_instructions_are_false_where_a_sentence_says_what_the_change_contradicts(
        cat, tmp_path, tt, change, column, value, made_false):
    """Read sentence by sentence (`truth.instruction_texts`): a suffix convention in words of a unit (or a
    zone) for a unit (zone) change of a column with that suffix; a column named with its table for a rename or
    drop; a column and a value named as words, with the table, for a value respelled, merged or removed."""
    k = Tiny(cat, tmp_path)
    k.ann("acme", {"instructions": CATALOG_TEXT})
    v = k.view()
    assert v.instructions == {"acme": CATALOG_TEXT}
    assert (tt.instruction_texts(v, ORD, column, change, value) == [("acme", "instructions")]) is made_false


def test_a_renamed_column_the_instructions_name_makes_them_false_with_the_rename(cat, tmp_path):
    k = _net_cents(cat, tmp_path)
    k.ann("acme", {"instructions": CATALOG_TEXT})
    tr = k.gen([ORD]).schema_rename()
    assert ["acme", "instructions"] in tr.false
    assert tr.fixes["acme|instructions"][1] is None and tr.fixes["acme|instructions"][0]["action"] == "rename"


def test_a_table_made_a_periodic_snapshot_makes_its_metrics_over_every_row_false(cat, tmp_path, spark):
    """Every row once per snapshot date: a metric summing every row counts each row once per date (the
    session-21 detector flagged one on a seen Acme copy, `fct_payments`, whose truth did not list it); a count of
    distinct keys still counts each once."""
    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"grain": {"text": "one row per order", "keys": ["order_id"]}})
    k.metric(ORD, "order_total", "sum(net_cents)")
    k.metric(ORD, "orders", "count(DISTINCT order_id)")
    g, tr = _drawn(cat, spark, k, "grain_periodic_snapshot")
    assert key(g.view, ORD, "grain") in false(tr)
    assert metric(g.view, ORD, "order_total") in false(tr) and metric(g.view, ORD, "orders") not in false(tr)


def test_a_key_rebuilt_to_hold_another_key_of_the_joined_table_wants_join_on_it(cat, tmp_path, spark):
    """key_retargeted: the sessions rebuilt with `customer_id` holding the customers' surrogate key
    (`customer_sk`, unique, other values than the id): none of their keys matches the id any more, every
    one matches the surrogate key. False: the relationship (fix: `join_on` customer_sk), the metric on
    the sessions reading the customers through it, the key's own sample values; not a metric reading the
    sessions alone, nor the payments' join (another table)."""
    k = Tiny(cat, tmp_path)
    k.lk.table(CUST, [("customer_id", "bigint"), ("customer_sk", "bigint"), ("segment", "string")], at=0,
               rows={"customer_id": [1, 2, 3], "customer_sk": [501, 502, 503], "segment": ["vip", "std", "std"]})
    k.lk.table(SESS, [("session_id", "bigint"), ("customer_id", "bigint")], at=0,
               rows={"session_id": [1, 2, 3, 4], "customer_id": [1, 2, 3, 1]})
    k.lk.table(PAY, [("payment_id", "bigint"), ("customer_id", "bigint")], at=0,
               rows={"payment_id": [1, 2], "customer_id": [1, 3]})
    k.relate(SESS, CUST, [("customer_id", "customer_id")])
    k.relate(PAY, CUST, [("customer_id", "customer_id")])
    k.ann(SESS, {"sample_values": [1, 2]}, column="customer_id")
    k.metric(SESS, "vip_sessions", "count(*)", "customers.segment = 'vip'")
    k.metric(SESS, "sessions", "count(DISTINCT session_id)")
    g, tr = _drawn(cat, spark, k, "keys_retargeted", free=[CUST, SESS])
    v = g.view
    assert (tr.kind, tr.table, tr.columns) == ("key_retargeted", SESS, ["customer_id"])
    assert sorted(r[0] for r in _rows(cat, f"SELECT customer_id FROM {SESS}")) == [501, 501, 502, 503]
    assert _rows(cat, f"SELECT count(*) FROM {PAY}") == [(2,)]
    rel = {src: (src, a.key) for src, a in v.relationships()}
    assert false(tr) == {rel[SESS], metric(v, SESS, "vip_sessions"), key(v, SESS, "sample_values", "customer_id")}
    assert tr.fixes[f"{SESS}|{rel[SESS][1]}"] == {"action": "join_on",
                                                  "params": {"to_table": CUST, "to_column": "customer_sk"}}


def test_a_key_retarget_is_no_trap_where_the_joined_table_has_no_second_key(cat, tmp_path, spark):
    """Where the orders (joined by the order lines) have no second unique integer key, the kind is
    skipped, saying why."""
    from eval.traps.generator import Skip

    k = Tiny(cat, tmp_path)
    k.relate(LINES, ORD, [("order_id", "order_id")])
    with pytest.raises(Skip, match="second unique integer key"):
        _drawn(cat, spark, k, "keys_retargeted", free=[ORD, LINES])


def test_a_query_asked_of_days_a_replaced_table_holds_stays_true(cat, tmp_path, spark):
    """replacement_beside, read at the end of the run (`replaced_queries`, after the routine loads the
    successor takes): a query asked of the replaced table alone whose answer the successor's rows move
    ("orders placed") is false, re-verified; one asked of a day the replaced table holds ("orders on
    2024-11-12") answers alike of the successor and stays true (failed before: false; two round-8
    testers' "net revenue by store on 2024-11-01" and "captured payments in October 2024"); one asking
    for the newest day stays false (a replayed day may answer alike; no real load would)."""
    from spark_bridge import Bridge

    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"description": "Orders, loaded daily"})
    k.vq("Orders placed", "SELECT count(order_id) AS placed FROM acme.core.orders")
    k.vq("Orders on the 12th", "SELECT count(*) AS n FROM acme.core.orders WHERE order_date = DATE '2024-11-12'")
    k.vq("Orders on the latest day", "SELECT count(*) AS n FROM acme.core.orders WHERE order_date = "
         "(SELECT max(order_date) FROM acme.core.orders)")
    g = Generator(cat, Bridge(spark, cat, footers_on="driver"), k.now, seed=1, writers=("spark",), log=lambda m: None)
    g.used = set(g.view.tables) - {ORD}
    try:
        tr = g.replacement_beside()
        assert vqs(g.view, ORD, "AS placed") | vqs(g.view, ORD, "2024-11-12") <= false(tr)  # before the loads
        g.routine(1, False)
        g.replaced_queries()
    finally:
        if g.scratch:
            import shutil

            shutil.rmtree(g.scratch, ignore_errors=True)
    new = tr.tables[1]
    assert _rows(cat, f"SELECT count(*) FROM {new}")[0][0] > _rows(cat, f"SELECT count(*) FROM {ORD}")[0][0]
    assert vqs(g.view, ORD, "AS placed") <= false(tr) and not vqs(g.view, ORD, "2024-11-12") & false(tr)
    # the newest day: the successor's, though a replayed day may hold the very count the replaced one held
    assert vqs(g.view, ORD, "max(order_date)") <= false(tr)


@pytest.mark.parametrize("description,expression,tied", [
    ("Net amount in cents", "SUM(net_cents)", False),
    ("Net amount; 0 when status is returned", "SUM(net_cents)", True),
    ("Net amount in cents", "SUM(net_cents) / COUNT(order_id)", True),
])
def test_a_measure_a_claim_ties_to_another_column_is_no_new_definition_to_draw(cat, tmp_path, description, expression,
                                                                               tied):
    """`definitions_restated_same_keys` says the measure's prose and metrics hold under its new definition;
    a claim relating it to another column of its table (its description naming one, a metric computing
    with one) would not, so such a measure is not picked (held-out seeds 1801 and 1803: TPC-DS
    cs_net_paid "equal to cs_net_paid_inc_tax", flagged rightly and scored a false alarm)."""
    from eval.traps.generator import ties_to_other_column

    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"description": description}, column="net_cents")
    k.metric(ORD, "net", expression)
    assert ties_to_other_column(k.view().tables[ORD], "net_cents") is tied


SHIP = "acme.core.shipments"


def test_a_routine_load_of_a_table_whose_parent_a_trap_stopped_ships_orders_not_yet_shipped(cat, tmp_path, spark):
    """The routine load replays each table's latest day; a shipments day replayed while its orders table is
    stopped by a trap kept the shipped order's id, so order 8 shipped a third time: "an order may ship in two"
    made false by a load the truth calls routine (held-out 1901/1903: a control false alarm, the claim false
    by the data). The replayed shipments now go to orders no shipment references yet, newest first (failed
    before: the new shipment went to order 8)."""
    from spark_bridge import Bridge

    k = Tiny(cat, tmp_path)
    k.lk.table(SHIP, [("shipment_id", "bigint"), ("order_id", "bigint"), ("ship_date", "date")], at=0,
               rows={"shipment_id": [1, 2], "order_id": [1, 2], "ship_date": DAYS[1:3]})
    for i in range(3, 10):
        k.lk.append(SHIP, {"shipment_id": [i], "order_id": [i], "ship_date": [DAYS[i]]}, at=i)
    k.lk.append(SHIP, {"shipment_id": [10], "order_id": [8], "ship_date": [DAYS[10]]}, at=10)  # 8 ships in two
    k.ann(SHIP, {"grain": {"text": "one row per shipment", "keys": ["shipment_id"]}})
    k.relate(SHIP, ORD, [("order_id", "order_id")])
    g = Generator(cat, Bridge(spark, cat, footers_on="driver"), k.now, seed=1, writers=("spark",), log=lambda m: None)
    assert {ORD, SHIP} <= set(g.active)
    g.stopped.add(ORD)
    g.halted.add(ORD)      # what loads_stopped / stuck_reruns record
    try:
        g.routine(1, with_new_column=False)
    finally:
        if g.scratch:
            import shutil

            shutil.rmtree(g.scratch, ignore_errors=True)
    con = cc.open_table(cat, SHIP)
    try:
        per_order = dict(con.sql(f"SELECT order_id, count(*) FROM {SHIP} GROUP BY 1").fetchall())
        new = [r[0] for r in con.sql(f"SELECT order_id FROM {SHIP} WHERE ship_date > DATE '{DAYS[10]}'").fetchall()]
    finally:
        con.close()
    assert new == [11]                       # the newest order no shipment referenced (orders 10 and 11 had none)
    assert per_order[8] == 2 and all(n == 1 for o, n in per_order.items() if o != 8), per_order



def test_a_description_saying_what_a_row_is_per_by_the_grains_keys_is_a_grain_text(cat, tmp_path, tt):
    """The truth of a grain change counts a description saying what a row is per by the grain's keys
    ("Orders, a record per order": order_id) as stating the grain, as "one row per" prose (round-25 Acme
    tester's "Daily inventory snapshot per store and product"). Controls: "per" words naming no key, or not
    every key."""
    k = Tiny(cat, tmp_path)
    k.ann(ORD, {"grain": {"text": "an order", "keys": ["order_id"]}, "description": "Orders, a record per order"})
    k.ann(ORD, {"description": "Net per the finance feed"}, column="net_cents")
    k.ann(LINES, {"grain": {"text": "a line", "keys": ["order_id", "line_no"]}, "description": "Lines per order"})
    v = k.view()
    assert set(tt.grain_texts(v, ORD)) == {key(v, ORD, "grain"), key(v, ORD, "description")}
    assert set(tt.grain_texts(v, LINES)) == {key(v, LINES, "grain")}
