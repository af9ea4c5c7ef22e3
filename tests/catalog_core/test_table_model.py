"""`catalog_core.lake.TableValue`: the typed table model round-trips the raw table value (the
property the readers rely on: parsing once loses nothing a writer stored), and reads the lenient
shapes readers met before it (no schema, non-dict columns, partition levels as dicts)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from catalog_core import lake

names = st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=8)
scalars = st.one_of(st.none(), st.integers(-10**6, 10**6), st.text(max_size=5), st.booleans())
extras = st.dictionaries(st.sampled_from(["doc", "x_note", "tag"]), scalars, max_size=2)


@st.composite
def columns(draw):
    raw = {"name": draw(names)}
    for key, strat in (("id", st.integers(1, 99)), ("type", st.sampled_from(["int", "bigint", "string", "date"])),
                       ("nullable", st.booleans())):
        if draw(st.booleans()):
            raw[key] = draw(strat)
    return {**raw, **draw(extras)}


@st.composite
def col_stats(draw):
    keys = draw(st.lists(st.sampled_from(["min", "max", "null_count"]), unique=True))
    return {k: draw(st.integers(0, 99) if k == "null_count" else scalars) for k in keys}


@st.composite
def stats(draw):
    raw = {k: draw(st.integers(0, 10**9)) for k in ("row_count", "file_count", "size_bytes") if draw(st.booleans())}
    raw["columns"] = draw(st.dictionaries(names, col_stats(), max_size=3))
    if draw(st.booleans()):
        raw["last_data_commit"] = {"vid": draw(st.integers(0, 999)), "time": draw(st.floats(0, 2e9))}
    return raw


@st.composite
def tables(draw):
    raw = {"obj_type": "table"}
    if draw(st.booleans()):
        schema = {"columns": draw(st.lists(columns(), max_size=4))}
        if draw(st.booleans()):
            schema["schema_id"] = draw(st.integers(0, 9))
        if draw(st.booleans()):
            schema["dropped"] = [{"id": 7, "name": "old", "type": "int", "until": 1}]
        raw["schema"] = schema
    if draw(st.booleans()):
        raw["partition_by"] = draw(st.lists(st.one_of(names, names.map(lambda n: {"name": n, "transform": "day"})),
                                            max_size=2))
    if draw(st.booleans()):
        raw["stats"] = draw(stats())
    for key, strat in (("location", names), ("format", st.just("parquet")), ("properties", extras)):
        if draw(st.booleans()):
            raw[key] = draw(strat)
    return {**raw, **draw(extras)}


@settings(max_examples=300, deadline=None)
@given(tables())
def test_from_raw_and_to_raw_round_trip(raw):
    value = lake.TableValue.from_raw(raw)
    assert value.to_raw() == raw
    assert lake.TableValue.from_raw(value.to_raw()) == value


def test_the_parsed_fields_are_what_readers_read():
    raw = {"obj_type": "table", "location": "/w/t", "partition_by": ["d", {"name": "h"}],
           "schema": {"schema_id": 3, "columns": [{"id": 1, "name": "a", "type": "int", "nullable": False},
                                                  "junk", {"id": 2, "name": "b", "type": "string"}]},
           "stats": {"row_count": 5, "columns": {"a": {"min": 1, "max": 9, "null_count": 0}}}}
    t = lake.TableValue.from_raw(raw)
    assert t.schema.id == 3 and t.schema.names == ["a", "b"]
    assert [c.is_nullable for c in t.columns] == [False, True]
    assert t.partition_columns == ["d", "h"] == lake.partition_columns(raw)
    assert t.stats is not None and t.stats.row_count == 5 and t.stats.columns["a"].max == 9
    empty = lake.TableValue.from_raw({"obj_type": "table", "schema": None})
    assert empty.columns == () and empty.schema.id == 0 and empty.stats is None
    assert lake.TableValue.from_raw(None).partition_columns == []
