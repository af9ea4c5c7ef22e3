"""What the /ui page shows people (issue 38 item 5): catalog values as readable text, and the
detector's findings in words for a data team rather than for an agent.

    number(25928)            '25,928'
    size(3201930)            '3.1 MiB'
    when(1741611600.0)       '2025-03-10 13:00 UTC'   (also ISO strings: '2023-01-29T14:27:42+00:00')
    duration('PT185H')       '7 days 17 hours'
    value_text(field, v)     an annotation's value as one line of text (enum, grain, deprecation, SLA ...)
    reason_words(reason)     'A column it describes was renamed'
    fix_words(fix)           'net_revenue_cents is now net_revenue_usd, its values divided by 100'
    cause_words(cause)       'acme.mart.agg_daily_store_revenue renamed net_revenue_cents (vid 122)'
    evidence_rows(evidence)  [(label, text), ...]
    for_people(text)         a server message with agent tool names replaced by what a person does

Invariants: every wording is a row of a table here (REASON_WORDS, FIX_WORDS, CAUSE_WORDS,
EVIDENCE_LABELS, PHRASES), not a branch in a template; every reason of `semantic.models.REASONS` and
every action of `FIX_ACTIONS` has a row (tests/mcp_server/test_ui_page.py checks it); nothing here
names an MCP tool. Every function takes any value and never raises: an unexpected shape falls back
to compact text.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["number", "size", "when", "duration", "hours", "age", "value_text", "reason_words", "fix_words",
           "suggestion_words", "cause_words", "evidence_rows", "for_people", "raw", "REASON_WORDS", "FIX_WORDS",
           "CAUSE_WORDS", "EVIDENCE_LABELS", "PHRASES", "TOOL_NAMES"]


# ------------------------------------------------------------------ numbers, sizes, times
def number(v: Any) -> str:
    """Thousands separators for numbers ('25,928', '1,280.63'); anything else as text."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return "" if v is None else str(v)
    if isinstance(v, int) or v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:,.2f}" if abs(v) >= 1 else f"{v:.4g}"


_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def size(n: Any) -> str:
    """Bytes in binary units: '512 B', '1.5 KiB', '3.1 MiB', '2.0 GiB'."""
    if isinstance(n, bool) or not isinstance(n, (int, float)):
        return "" if n is None else str(n)
    x, unit = float(n), 0
    while abs(x) >= 1024 and unit < len(_UNITS) - 1:
        x, unit = x / 1024, unit + 1
    return f"{int(x)} B" if unit == 0 else f"{x:.1f} {_UNITS[unit]}"


def when(t: Any) -> str:
    """A moment as 'YYYY-MM-DD HH:MM UTC' (epoch seconds, or an ISO-8601 string with a time); a
    date stays a date; anything else as text."""
    if isinstance(t, bool) or t is None or t == "":
        return ""
    try:
        if isinstance(t, (int, float)):
            d = _dt.datetime.fromtimestamp(float(t), _dt.UTC)
        elif isinstance(t, str) and re.fullmatch(r"\d{4}-\d\d-\d\d", t):
            return t
        elif isinstance(t, str):
            d = _dt.datetime.fromisoformat(t.replace("Z", "+00:00"))
            if d.tzinfo is None:
                return d.strftime("%Y-%m-%d %H:%M:%S" if d.second else "%Y-%m-%d %H:%M")
            d = d.astimezone(_dt.UTC)
        else:
            return str(t)
    except (ValueError, OverflowError, OSError):
        return str(t)
    return d.strftime("%Y-%m-%d %H:%M:%S UTC" if d.second else "%Y-%m-%d %H:%M UTC")


_ISO_DURATION = re.compile(r"^P(?!$)(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?"
                           r"(?:T(?=\d)(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


def _plural(n: float, word: str) -> str:
    k = int(n) if float(n).is_integer() else round(n, 1)
    return f"{number(k)} {word}" + ("" if k == 1 else "s")


def hours(h: Any) -> str:
    """A number of hours in words: 185 -> '7 days 17 hours', 0.5 -> '30 minutes'."""
    if isinstance(h, bool) or not isinstance(h, (int, float)):
        return "" if h is None else str(h)
    return _seconds_words(float(h) * 3600)


def _seconds_words(s: float) -> str:
    s = abs(s)
    if s < 60:
        return _plural(round(s), "second")
    if s < 3600:
        return _plural(round(s / 60), "minute")
    days, rest = divmod(round(s / 60), 24 * 60)
    h, m = divmod(rest, 60)
    if days >= 7 and days % 7 == 0 and not rest:
        return _plural(days // 7, "week")
    parts = ([_plural(days, "day")] if days else []) + ([_plural(h, "hour")] if h else [])
    if not days and m:
        parts.append(_plural(m, "minute"))
    return " ".join(parts) or "0 minutes"


def duration(text: Any) -> str:
    """An ISO-8601 duration in words ('PT185H' -> '7 days 17 hours', 'P1D' -> '1 day'); seconds
    as numbers too; anything else as text."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return _seconds_words(float(text))
    m = _ISO_DURATION.match(text.strip().upper()) if isinstance(text, str) else None
    if m is None:
        return "" if text is None else str(text)
    w, d, h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    return _seconds_words((((w * 7 + d) * 24 + h) * 60 + mi) * 60 + s)


def age(seconds: Any) -> str:
    """How old: '3 days', '5 hours', 'just now'."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return ""
    if seconds < 60:
        return "just now"
    d = seconds / 86400
    return _plural(round(d), "day") if d >= 1 else _seconds_words(seconds)


# ------------------------------------------------------------------ annotation values
def _items(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return ", ".join(_scalar(x) for x in v) if v else "(none)"
    return _scalar(v)


def _scalar(v: Any) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        return number(v)
    if isinstance(v, Mapping):
        return "; ".join(f"{_label(str(k))}: {_items(x)}" for k, x in v.items() if x not in (None, [], {}, ""))
    if isinstance(v, (list, tuple)):
        return _items(v)
    return str(v)


def _label(key: str) -> str:
    return EVIDENCE_LABELS.get(key, key.replace("_", " "))


def _grain(v: Any) -> str:
    if not isinstance(v, Mapping):
        return _scalar(v)
    keys = v.get("keys") or []
    return (str(v.get("text") or "") + (f" (unique on {', '.join(map(str, keys))})" if keys else "")).strip()


def _deprecated(v: Any) -> str:
    if not isinstance(v, Mapping):
        return "deprecated" if v is True else _scalar(v)
    out = "deprecated" + (f" since {v['since']}" if v.get("since") else "")
    out += f": {v['reason']}" if v.get("reason") else ""
    return out + (f"; use {v['replaced_by']} instead" if v.get("replaced_by") else "")


def _not_for_reporting(v: Any) -> str:
    if not isinstance(v, Mapping):
        return _scalar(v)
    use = v.get("use_instead") or []
    return "not for reporting" + (f": {v['reason']}" if v.get("reason") else "") + \
        (f"; use {', '.join(map(str, use))}" if use else "")


def _labels(v: Any) -> str:
    if isinstance(v, Mapping):
        return ", ".join(f"{k} = {_scalar(x)}" for k, x in v.items())
    return _scalar(v)


def _sla(v: Any) -> str:
    words = duration(v)
    return f"every {words}" if words and words != str(v) else _scalar(v)


# field -> how its value reads; any other field: `_scalar` (text as it is, lists joined, dicts key: value)
VALUE_WORDS: dict[str, Callable[[Any], str]] = {
    "grain": _grain,
    "deprecated": _deprecated,
    "not_for_reporting": _not_for_reporting,
    "freshness_sla": _sla,
    "labels": _labels,
    "enum": _items,
    "sample_values": _items,
    "synonyms": _items,
    "tags": _items,
    "certified": _scalar,
}


_CARDINALITY = {"many_to_one": "many rows to one", "one_to_one": "one row to one", "one_to_many": "one row to many"}


def _relationship(v: Any) -> str:
    if not isinstance(v, Mapping):
        return _scalar(v)
    on = " and ".join(f"{p[0]} = {p[1]}" for p in (v.get("on") or []) if isinstance(p, (list, tuple)) and len(p) == 2)
    out = f"joins {v.get('to')}" + (f" on {on}" if on else "")
    card = v.get("cardinality")
    out += f" ({_CARDINALITY.get(str(card), str(card))})" if card else ""
    return out + (f", only where {v['condition']}" if v.get("condition") else "")


def _metric(v: Any) -> str:
    if not isinstance(v, Mapping):
        return _scalar(v)
    out = str(v.get("expression") or "")
    out += f" where {v['filter']}" if v.get("filter") else ""
    out += f", in {v['unit']}" if v.get("unit") else ""
    return out + (f" — {v['description']}" if v.get("description") else "")


def _verified(v: Any) -> str:
    if not isinstance(v, Mapping):
        return _scalar(v)
    return f"“{v.get('question')}”: {v.get('sql')}" if v.get("question") else _scalar(v)


# annotation key prefix -> how its value reads (the key names an object, not a field)
KEY_WORDS: dict[str, Callable[[Any], str]] = {
    "relationship.": _relationship,
    "metric.": _metric,
    "verified_query.": _verified,
}


def value_text(field: str, v: Any) -> str:
    """An annotation's value as one line for people. `field` is the annotation's field
    (`description`, `enum`, ...) or its key (`column.7.enum`, `relationship.customer`)."""
    try:
        for prefix, words in KEY_WORDS.items():
            if field.startswith(prefix):
                return words(v)
        return VALUE_WORDS.get(field.rsplit(".", 1)[-1], _scalar)(v)
    except Exception:  # an unexpected shape: compact text rather than a broken page
        return raw(v, indent=None)


def raw(v: Any, indent: int | None = 2) -> str:
    """The value as JSON (the page's raw view)."""
    return json.dumps(v, indent=indent, default=str, ensure_ascii=False)


# ------------------------------------------------------------------ findings in words
# reason -> what it means to a person (one sentence, no tool names)
REASON_WORDS: dict[str, str] = {
    "column_dropped": "A column it describes was removed from the table",
    "column_renamed": "A column it describes was renamed",
    "column_type_changed": "A column it describes changed its type",
    "schema_changed": "The table's columns changed after this was written",
    "unit_drift": "A column's values changed their unit (scale)",
    "grain_violated": "The table no longer has one row per key",
    "cardinality_violated": "The join now matches several rows where it promised one",
    "join_key_missing": "A join key of this relationship is gone",
    "join_match_low": "Few rows find a match over this relationship",
    "enum_violated": "The column holds values the list of allowed values does not",
    "sample_values_missing": "The example values no longer occur in the data",
    "freshness_sla_missed": "The table loads less often than its promised freshness",
    "not_loaded_since": "The table stopped loading",
    "deprecated_but_written": "The table is marked deprecated but is still being written",
    "replaced_by_missing": "The replacement named for this table does not exist",
    "verified_query_fails": "A verified query no longer runs",
    "verified_query_changed": "A verified query now gives a different answer",
    "unreviewed_while_changing": "Written by an agent, not reviewed, and the table changed since",
    "values_restated": "The column's values were restated (old values replaced by new ones)",
    "check_limit_exceeded": "A check ran past its time or memory limit and was stopped",
    "upstream_changed": "Built from a table that changed after the build read it",
    "upstream_incomplete": "Built from a day that was not fully loaded",
    "range_exceeded": "The data now reaches beyond the date range the text documents",
    "cadence_changed": "The table is loaded (or snapshotted) at another pace than its text says",
}


def reason_words(reason: Any) -> str:
    """The sentence for a finding reason (or an item kind); an unknown one, its words."""
    return REASON_WORDS.get(str(reason), str(reason or "").replace("_", " ").capitalize())


def _cols(v: Any) -> str:
    return ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)


def _scale(exp: Any) -> str:
    if not isinstance(exp, int) or isinstance(exp, bool) or exp == 0:
        return ""
    factor = number(10 ** abs(exp))
    return f", its values {'multiplied' if exp > 0 else 'divided'} by {factor}"


# fix action -> the repair in words, from its typed params (semantic.models.Fix)
FIX_WORDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "rename": lambda p: f"{p.get('old')} is now {p.get('new')}{_scale(p.get('scale'))}: "
                        "move the annotations to the new column",
    "successor": lambda p: f"Use {p.get('table')} instead; it carries on with alike columns and loads",
    "join_on": lambda p: f"Join on {p.get('from_column')} = {p.get('to_table')}.{p.get('to_column')} instead",
    "filter": lambda p: f"Keep only the current rows of {p.get('table')} ({p.get('column')} is true) in the join",
    "add_enum_values": lambda p: f"Add {_cols(p.get('values'))} to the allowed values of {p.get('column')}",
    "update_freshness_sla": lambda p: f"Promise a freshness of {duration(p.get('sla'))} to match the loads",
    "update_unit": lambda p: f"Update the unit of {p.get('column')}{_scale(p.get('scale'))}"
                             + (f", its values multiplied by {number(p['factor'])}"
                                if isinstance(p.get("factor"), int | float) else ""),
    "relate_to": lambda p: f"Point the relationship at {p.get('table')}",
    "reverify": lambda p: "Run the query again, check its answer, and verify it again",
    "investigate": lambda p: f"Look at the values of {_cols(p.get('columns') or 'the table')} and who writes them",
    "value_map": lambda p: "Rename the values " + ", ".join(f"{k} to {v}" for k, v in (p.get("map") or {}).items())
                           + (f" in {p.get('column')}" if p.get("column") else "")
                           + (f"; the values now are {_cols(p['values'])}" if p.get("values") else ""),
    "set_keys": lambda p: f"The rows are now unique on {_cols(p.get('keys'))}: update the grain",
    "remove": lambda p: f"{p.get('column')} is no longer in the table: remove the annotation",
    "repoint": lambda p: f"Name {p.get('new')} instead of {p.get('old')} in the text",
    "update_range": lambda p: f"State the range of {p.get('column')} as {p.get('start')} to {p.get('end')}",
    "reword_unit": lambda p: f"Say {p.get('new')} instead of {p.get('old')} in the description of {p.get('column')}",
}


def fix_words(fix: Any) -> str:
    """One typed fix (a Fix or its dict) in words."""
    action = getattr(fix, "action", None) or (fix.get("action") if isinstance(fix, Mapping) else None)
    params = getattr(fix, "params", None) if not isinstance(fix, Mapping) else fix.get("params")
    params = params if isinstance(params, Mapping) else {}
    word = FIX_WORDS.get(str(action))
    if word is None:
        return str(action or "").replace("_", " ").capitalize()
    try:
        return word(params)
    except Exception:
        return str(action).replace("_", " ").capitalize()


def suggestion_words(fixes: Any) -> str:
    """The suggested repairs of a finding, in words, one sentence each ('' when it has none)."""
    return ". ".join(fix_words(f) for f in (fixes or [])) + ("." if fixes else "")


# cause kind (semantic.staleness `_cause`: kind:table@vid[:detail]) -> the change in words
CAUSE_WORDS: dict[str, str] = {
    "rename": "{table} renamed column {detail}",
    "retype": "{table} changed the type of column {detail}",
    "drop": "{table} dropped column {detail}",
    "unit": "{table} changed the unit of column {detail}",
    "zone": "{table} restated the times of column {detail} in another time zone",
    "versions": "{table} started keeping versions of its rows",
    "grain": "{table} added a column that splits its rows",
    "schema": "{table} changed its columns",
    "rewrite": "{table} was rewritten and the values of {detail} restated",
    "late": "{table} took late data for an old period",
    "dead": "{table} stopped loading",
    "replaced": "{table} stopped loading while a replacement was written beside it",
    "cadence": "{table} loads less often than promised",
    "cadence_more": "{table} loads more often than its description says",
    "per_key": "{table} has more rows per {detail} than its description documents",
    "range": "{table}'s {detail} no longer lies as its documented range says (beyond it, or short of it)",
    "sign": "{table} wrote column {detail} with the other sign",
    "log_status": "the load log {table} writes a status in column {detail} that the load-log claims do not list",
    "enum_ended": "{table} no longer holds some listed values of column {detail}",
    "label_gone": "{table} no longer holds a code of column {detail} that a description names by its label",
    "merged": "{table} merged values of column {detail} into another",
    "rows_removed": "{table} removed rows holding values of column {detail}",
    "renumbered": "{table} was rebuilt with its keys in column {detail} drawn again",
    "twin_load": "{table} took the same load twice",
    "answer": "a change to {table} moved a verified query's answer",
    "meaning": "{table}'s new rows changed what column {detail} means against the row's other columns",
    "respelled_loads": "{table}'s new loads spell a value of column {detail} another way",
    "dated_ahead": "{table} took rows whose {detail} is dated after the load itself",
}
_CAUSE = re.compile(r"^(?P<kind>[a-z_]+):(?P<table>[^@]+)@(?P<vid>\d+|None)(?::(?P<detail>.*))?$")


def cause_words(cause: Any) -> str:
    """The underlying change a group of findings shares, in words, with the commit it came in."""
    m = _CAUSE.match(cause) if isinstance(cause, str) else None
    if m is None:
        return "" if cause is None else str(cause)
    kind, table, vid, detail = m["kind"], m["table"], m["vid"], m["detail"] or ""
    text = CAUSE_WORDS.get(kind, "{table}: " + kind.replace("_", " ") + (" {detail}" if detail else ""))
    text = text.format(table=table, detail=detail or "a column")
    return text + (f" (vid {vid})" if vid != "None" else "")


# evidence key -> its label; keys in _HIDDEN are bookkeeping the finding's words already say
EVIDENCE_LABELS: dict[str, str] = {
    "added": "columns added", "dropped": "columns dropped", "column": "column", "candidate": "now called",
    "scale_exp": "scale (power of ten)", "basis_stats": "statistics when annotated",
    "candidate_stats": "statistics now", "before_only": "values only before", "after_only": "values only after",
    "map": "values became", "map_rows": "rows per change", "values_now": "values now",
    "last_load": "last load", "days": "days since", "usual_interval_hours": "usual interval between loads",
    "successor": "successor", "similarity": "similarity", "sla": "freshness promised", "age_hours": "age",
    "now": "judged at", "to": "related table", "duplicate_keys": "repeated keys", "example": "example",
    "side": "side", "says": "words it says", "rewrite_vid": "rewritten at vid", "table": "table",
    "change": "change", "use_instead": "use instead", "replaced_by": "replaced by", "since": "since",
    "reason": "reason", "keys": "keys", "text": "text", "min": "min", "max": "max", "null_count": "nulls",
    "upstream": "built from", "upstream_reason": "what changed there", "upstream_finding": "its finding",
    "read_vid": "the build read vid", "change_vid": "changed at vid", "origin": "where the change began",
    "period": "period", "upstream_status": "its state there", "note": "note",
    "usual_interval_hours_before": "usual interval between loads then", "usual_interval_hours_now":
    "usual interval between loads now", "documented_max": "most rows documented", "max_now": "most rows now",
    "keys_over": "keys over it",
}
# a key whose meaning depends on its value: "now" is the judging time (a number) or a column's new name
_TEXT_LABELS = {"now": "now called"}
_HIDDEN = frozenset({"reasons", "by_annotation"})
_AS_HOURS = frozenset({"usual_interval_hours", "age_hours", "usual_interval_hours_before", "usual_interval_hours_now"})
_AS_TIME = frozenset({"now", "loaded_at"})


def _evidence_value(key: str, v: Any) -> str:
    if key in _AS_HOURS:
        return hours(v)
    if key in _AS_TIME:
        return when(v)
    if key == "sla":
        return duration(v)
    if key == "similarity" and isinstance(v, (int, float)):
        return f"{v:.0%}"
    if key == "map" and isinstance(v, Mapping):
        return ", ".join(f"{a} → {b}" for a, b in v.items()) or "(none)"
    if key.endswith("_stats") and isinstance(v, Mapping):
        return ", ".join(f"{_label(str(k))} {number(x) if not isinstance(x, str) else when(x)}" for k, x in v.items())
    return _scalar(v)


def evidence_rows(evidence: Any) -> list[tuple[str, str]]:
    """A finding's evidence (semantic.models.Evidence or its dict) as (label, text) rows: the
    commits and their times first, then each compared value."""
    ev = evidence.model_dump() if hasattr(evidence, "model_dump") else evidence
    if not isinstance(ev, Mapping):
        return []
    rows: list[tuple[str, str]] = []
    vids = ev.get("vids") or []
    if vids:
        rows.append(("commits", ", ".join(f"vid {v}" for v in sorted(set(vids)))))
    times = ev.get("times") or []
    if times:
        rows.append(("when", ", ".join(when(t) for t in times)))
    for k, v in (ev.get("values") or {}).items():
        if k in _HIDDEN or v in (None, [], {}, ""):
            continue
        label = _TEXT_LABELS.get(str(k), _label(str(k))) if isinstance(v, str) else _label(str(k))
        rows.append((label, _evidence_value(str(k), v) if not isinstance(v, str) else when(v) if
                     str(k) in _AS_TIME and v[:1].isdigit() else v))
    return rows


# ------------------------------------------------------------------ server text for people
# MCP tool names, which a message written for agents may name: none may reach the page
TOOL_NAMES: tuple[str, ...] = (
    "search_tables", "describe_table", "find_join_path", "query_catalog", "get_column_values", "run_sql",
    "query_metric", "list_metrics", "check_staleness", "annotate", "verify_query", "diff_snapshots",
    "edit_and_accept", "get_lineage", "relate", "define_metric",
)
# (pattern, replacement), applied in order: how a person does what a message tells an agent to do
PHRASES: tuple[tuple[str, str], ...] = (
    (r"\s*\(semcat review edit\)", ""),
    (r"\s*\(semcat review edit ITEM VALUE\)", ""),
    (r"\s*\(semcat review dismiss ITEM --reason \.\.\.\)", ""),
    (r"\s*\(semcat review scan --depth data\)", " (the inbox's “check the data now” button)"),
    (r'edit it with the corrected SQL \(semcat review edit ITEM "SELECT \.\.\."; (it is run and verified before '
     r'it is written)\)', r"correct the query with edit & accept (\1)"),
    (r"give the enum with edit_and_accept", "give the allowed values with edit & accept"),
    (r"\buse edit_and_accept", "correct it with edit & accept"),
    (r"edit_and_accept", "edit & accept"),
    (r"review at data depth", "check the data"),
    (r"\bcheck with get_column_values\b", "look at the column's values"),
    (r"\bget_column_values\b", "the column's values"),
    (r"\bcheck_staleness\b", "the findings"),
    (r"\bdescribe_table\b", "the table's page"),
    (r"\bsearch_tables\b", "search"),
    (r"\bfind_join_path\b", "the table's relationships"),
    (r"\bquery_catalog\b", "the catalog"),
    (r"\bverify_query\b", "verifying the query"),
    (r"\b(?:run_sql|query_metric)\b", "a query"),
    (r"\blist_metrics\b", "the table's metrics"),
    (r"\bdiff_snapshots\b", "the diff page"),
    (r"\bget_lineage\b", "lineage"),
    (r"`?semcat review list --json`? \(field group\)", "the inbox"),
    (r"`?\bsemcat review list\b`?", "reload the inbox"),
)
_PHRASES = tuple((re.compile(p), r) for p, r in PHRASES)


def for_people(text: Any) -> str:
    """A server message (written for agents and the CLI) with tool names replaced by what a person
    does on this page."""
    if text is None:
        return ""
    out = str(text)
    for pat, rep in _PHRASES:
        out = pat.sub(rep, out)
    return out
