"""The change taxonomy (issue 45): what can happen to a lake after its annotations were written, by
class, each class with concrete change kinds the trap generator applies, plus the routine changes
(controls) that must not raise a finding.

A trap makes some annotations false: those whose text or claim the change contradicts. `fix` is the
repair that would be right when one follows from the change alone (None: a person has to look; a
detector that offers a concrete fix there is wrong).

The kinds are written from the classes of change a lake sees in practice, not from what any detector
checks; `evidence` says what a detector could observe at metadata depth (file and column statistics,
schema history, commit log, lineage) and at data depth (reading the rows).

Which public write path makes each kind (Iceberg REST through pyiceberg, the Spark bridge, a catalog
transaction) is `eval.traps.generator.WRITER_KINDS`: Iceberg REST or Spark for every append, restatement
and schema change, Iceberg REST or a catalog transaction for `nullability_only`, Spark alone for
`type_change`, `stuck_reruns` and `replacement_beside`, nothing for `stopped`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CLASSES", "CONTROLS", "class_names"]

CLASSES: dict[str, dict[str, Any]] = {
    "schema": {
        "kinds": {
            "drop": "a column is dropped (ALTER, no data rewrite)",
            "rename": "a column is renamed (ALTER, the same column id)",
            "type_change": "an integer column is restated as text (a source system sends codes as strings)",
            "restate_scaled": "a restatement replaces x_cents by x_usd = x_cents / 100 (new column, old one gone)",
        },
        "metadata": "schema history (schema_id, previous names, dropped columns), file statistics per column",
        "data": "the same; values of the new column against the old one's",
    },
    "values_units": {
        "kinds": {
            "unit_shift_restated": "a numeric column is restated in place in another unit (x 10^k), same name and type",
            "unit_shift_new_load": "new loads arrive in another unit (x 10^k) beside the old rows",
            "timezone_shift": "a timestamp column is restated shifted by some hours (UTC -> local or back)",
            "enum_added_inside": "a new value of an enumerated column that sorts between the old min and max",
            "enum_added_outside": "a new value of an enumerated column that sorts after every old one",
            "enum_removed": "an enumerated value disappears (a restatement without its rows)",
            "categories_merged": "two enumerated values merged into one by a restatement",
            "unit_factor_restated": "a time or money measure restated in place in another unit by a factor that is no "
                                    "power of ten (hours -> minutes x 60, USD -> EUR x 0.92), same name and type",
            "timezone_shift_new_load": "new loads arrive with a timestamp column shifted some hours (local time in a "
                                       "UTC column) beside the old rows",
            "value_partly_respelled": "a restatement moves part (30-70%) of one enumerated value's rows to a new "
                                      "spelling; the old value still occurs",
        },
        "metadata": "column min/max of the new files against the old ones (scale, out-of-range values)",
        "data": "distinct values, value distribution, the rows that changed between snapshots",
    },
    "keys_joins": {
        "kinds": {
            "key_format_changed": "a join key restated in a new format (offset): its range no longer overlaps the other side's",
            "key_renamed": "the referenced key column of a relationship is renamed",
            "key_reformatted": "a string key of a referenced table restated in a new text format (upper-case, "
                               "hyphens removed, a prefix): the referencing side's values no longer match",
            "key_retargeted": "a referencing table rebuilt with its key column holding another key of the table it "
                              "joins (a surrogate key for the natural one), same name and type",
        },
        "metadata": "key min/max ranges of both sides (no overlap), schema history",
        "data": "the share of rows that still match the declared join",
    },
    "grain": {
        "kinds": {
            "scd2_versions": "a table becomes SCD2 (valid_from, valid_to, is_current; several rows per key)",
            "periodic_snapshot": "a table becomes a periodic snapshot (snapshot_date added; every key once per date)",
            "duplicate_load": "a load is appended twice (the same keys again)",
        },
        "metadata": "row counts against key statistics, new columns, commit log",
        "data": "uniqueness of the grain keys",
    },
    "loads_freshness": {
        "kinds": {
            "stopped": "the table stops loading while everything else keeps loading",
            "stuck_reruns": "the job keeps committing, but only re-runs of an old day (no new data)",
        },
        "metadata": "commit log (last data commit), max of the date columns against the SLA",
        "data": "the same, plus the load log",
    },
    "replacement_deprecation": {
        "kinds": {
            "replacement_beside": "a replacement table is written beside the old one, which stops loading",
            "deprecated_written": "a table annotated deprecated is loaded again",
        },
        "metadata": "a new table whose schema and lineage match the old one's; the old one's last data commit",
        "data": "the rows of the new table against the old one's",
    },
    "definitions": {
        "kinds": {
            "metric_column_scaled": "a column a metric sums is restated in another unit (x 10^k)",
            "metric_filter_value_renamed": "the value a metric's filter tests is restated under a new spelling",
            "verified_answer_restated": "rows a verified query reads are restated (its answer changes)",
            "restated_same_keys": "a table rewritten in full with the same rows and keys, one money measure x 1.03-1.10 "
                                  "per row (a definition change: revenue recognized at another event)",
        },
        "metadata": "the tables and columns a metric or verified query reads changed (stats, schema)",
        "data": "re-running the verified query and comparing its answer",
    },
    "documented_ranges": {
        "kinds": {
            "date_range_exceeded": "rows arrive dated beyond a documented date range",
        },
        "metadata": "column min/max against the range a description states",
        "data": "the same on the rows",
    },
}

CONTROLS: dict[str, str] = {
    "append": "a routine load: the latest day replayed as a new day (new keys, the same shape)",
    "compaction": "the table's files rewritten as fewer files, the same rows",
    "identical_rerun": "a load re-run that rewrites the latest day with identical rows",
    "new_nullable_column": "a new unannotated nullable column appears (an append that carries it)",
    "nullability_only": "a schema change that only flips a column's nullability",
}


def class_names() -> list[str]:
    return list(CLASSES)
