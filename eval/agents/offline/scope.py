"""What the catalog cannot answer: the offline agent abstains instead of answering anyway.

Generic rules a careful literal reader applies to any lake (no lake names here):

- the future: a question in the future tense ("will") or about a "next" period or "tomorrow", or a
  time window that starts after the pinned snapshot's day, asks for data no snapshot holds (unless
  the catalog describes forecasts, plans or targets);
- before the data: a time window that ends on or before the earliest value of the chosen time
  column (its column stats, from describe_table detail='full'; read only for windows ending more
  than EARLY days before the snapshot, to spare the call), or a fiscal window the fiscal calendar
  has no dates for;
- a measure nothing records: the head of the question's measure phrase (its last noun: net promoter
  *score*; a generic head such as "rate" or "value" passes to the word before it) matches no table,
  column, metric, synonym, description or known value the catalog showed, and neither do at least
  two and at least half of the question's measure words (proper names, verb forms and fillers left
  out): one unknown word is a paraphrase, most of them unknown is a question about something else.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Generator
from typing import Any

from eval.agents.loop import Step, Turn
from eval.agents.offline.know import Knowledge, tokens
from eval.agents.offline.slots import Slots, Window, expand, stem, words_of

__all__ = ["future_reason", "window_reason", "fiscal_gap_reason", "measure_head", "unknown_measure_reason",
           "check_window"]

FUTURE = re.compile(r"\b(?:next|upcoming|coming)\s+(?:fiscal\s+|calendar\s+)?(?:week|month|quarter|year|period|"
                    r"season)s?\b|\btomorrow\b|\bwill\b|\bgoing to be\b", re.I)
# words by which a catalog says it holds expected (future) values
PLANNED = frozenset("forecast forecasts forecasted forecasting projection projections projected prediction predictions "
                    "predicted plan plans planned budget budgets budgeted target targets expected outlook".split())
EARLY = 365  # windows ending more than this many days before the snapshot are checked against column stats


def vocabulary(k: Knowledge) -> set[str]:
    """Every word the catalog has shown: table names, descriptions, grains and synonyms; column names,
    synonyms, descriptions and known values; metric names, synonyms and descriptions."""
    out: set[str] = set()
    for name, t in k.tables.items():
        out |= tokens(name) | t.text_words()
        for c in t.columns.values():
            out |= c.words | set(words_of(c.description))
            for v in list(c.enum) + list(c.samples):
                if isinstance(v, str):
                    out |= set(words_of(v))
    for h in k.hits:
        out |= set(words_of(str(h.get("description") or "")))
    for m in k.metrics:
        out |= set(words_of(str(m.get("name") or "")))
        out |= {w for s in m.get("synonyms") or [] for w in words_of(str(s))}
        out |= set(words_of(str(m.get("description") or "")))
    return out | {stem(w) for w in out}


def future_reason(question: str, k: Knowledge) -> str | None:
    """The question asks about the future (and the catalog describes no forecasts): no snapshot holds it."""
    m = FUTURE.search(question)
    if not m or vocabulary(k) & PLANNED:
        return None
    return (f"the question asks about the future ('{m.group(0)}') and the catalog holds recorded data only "
            f"(no table or metric describes forecasts or plans)")


def window_reason(start: dt.date | None, end: dt.date | None, today: dt.date, k: Knowledge) -> str | None:
    """A window that starts after the snapshot's day asks for data the snapshot cannot hold."""
    if start is not None and start > today and not vocabulary(k) & PLANNED:
        return (f"the time window starts on {start.isoformat()}, after the pinned snapshot's day "
                f"({today.isoformat()}): no data exists for it yet")
    return None


def fiscal_gap_reason(w: Window, calendar: str) -> str:
    """The fiscal calendar has no dates for the window asked."""
    what = ", ".join(f"{unit} {n}" for unit, n in w.fiscal.items()) or f"the {w.fiscal_rel} of the snapshot's day"
    return f"the fiscal calendar {calendar} has no dates for fiscal {what}: the window is outside the data"


def before_data_reason(end: dt.date, column: str, table: str, earliest: Any) -> str | None:
    try:
        first = dt.date.fromisoformat(str(earliest)[:10])
    except ValueError:
        return None
    if end <= first:
        return (f"the time window ends on {end.isoformat()}, before the earliest {table}.{column} "
                f"({first.isoformat()}): the data does not reach back that far")
    return None


def check_window(planner: Any, table: str, tcol: Any, start: dt.date | None,
                 end: dt.date | None) -> Generator[Step, Turn, str | None]:
    """The reason the window cannot be answered, or None. Reads the time column's stats (one
    describe_table call) only for a window that ends long before the snapshot."""
    why = window_reason(start, end, planner.today, planner.k)
    if why or tcol is None or end is None or (planner.today - end).days <= EARLY:
        return why
    t = yield from planner.call("describe_table", {"table": table, "detail": "full", "columns": [tcol.name]})
    if t is None or t.is_error or not t.result:
        return None
    for c in t.result.get("columns") or []:
        stats = c.get("stats") if isinstance(c, dict) else None
        if c.get("name") == tcol.name and isinstance(stats, dict) and stats.get("min") is not None:
            return before_data_reason(end, tcol.name, table, stats["min"])
    return None


# heads that name a kind of quantity, not what is measured: the phrase's other words carry the concept
GENERIC = frozenset("rate rates ratio ratios share shares percentage percentages percent proportion fraction "
                    "money value values amount amounts total totals number numbers figure figures level levels "
                    "average mean sum count".split())
FILLER = frozenset("but because such still now first through together really actually overall".split())
_LEAD = re.compile(r"^\s*(?:how\s+many\s+(?:distinct\s+|unique\s+|different\s+)?|how\s+much\s+(?:in\s+)?|"
                   r"(?:what|which)\s+(?:(?:was|were|is|are|will)\s+)?(?:(?:the|our|total|overall|average|avg|mean)\s+)*)",
                   re.I)


def _words(s: Slots) -> list[tuple[str, bool]]:
    """The question's words in order (quoted literals left out), each with whether it was written
    capitalised inside the sentence (a proper name: a value, not a measure word)."""
    text = re.sub(r"'[^']+'|\"[^\"]+\"|\([^)]*\)", " ", s.text)
    out = []
    for i, m in enumerate(re.finditer(r"[A-Za-z0-9$%]+", text)):
        w = m.group(0)
        out.append((w.lower(), i > 0 and w[:1].isupper()))
    return out


def _noun(w: str, s: Slots) -> bool:
    return not w.endswith(("ed", "ing")) and w not in FILLER and len(w) > 2


def measure_head(s: Slots) -> list[str]:
    """The question's measure phrase: the words after its lead ("how many", "what was our", "how much"),
    else the first run of measure words, up to the first word that is not a measure word."""
    ms = set(s.measure)
    ws = _words(s)
    lead = _LEAD.match(re.sub(r"'[^']+'|\"[^\"]+\"|\([^)]*\)", " ", s.text))
    skip = len(re.findall(r"[A-Za-z0-9$%]+", lead.group(0))) if lead and lead.group(0).strip() else 0
    run: list[str] = []
    for w, _cap in ws[skip:] if skip else ws:
        if w in ms:
            run.append(w)
        elif run or skip:
            break
    return run


def _known(w: str, known: set[str]) -> bool:
    if expand({w}) & known:
        return True
    return len(w) >= 6 and any(len(k) >= 6 and k[:6] == w[:6] for k in known)  # conversion ~ converted


def unknown_measure_reason(s: Slots, k: Knowledge) -> str | None:
    """The measure's head concept is nowhere in what the catalog showed, nor are most of the
    question's measure words (proper names, verb forms and fillers left out)."""
    phrase = measure_head(s)
    concept = [w for w in phrase if _noun(w, s) and w not in GENERIC]
    if not concept:
        return None
    head = concept[-1]
    known = vocabulary(k)
    if _known(head, known):
        return None
    caps = {w for w, cap in _words(s) if cap}
    words = [w for w in dict.fromkeys(s.measure) if _noun(w, s) and w not in caps and w not in GENERIC]
    unknown = [w for w in words if not _known(w, known)]
    if len(unknown) < 2 or 2 * len(unknown) < len(words):
        return None
    return (f"no table, column, metric or description of the catalog records '{' '.join(phrase)}' "
            f"(nothing it showed names {', '.join(repr(w) for w in unknown)})")
