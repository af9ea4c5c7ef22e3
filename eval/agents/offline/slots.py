"""Question -> slots: measure words, group-by dimensions, literal words, time window, order/limit.

Generic English only: nothing here knows any lake. Relative dates are resolved against `today`
(the pinned snapshot's date, read from the tools by the agent)."""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Slots", "Window", "parse", "words_of", "STOP", "stem", "expand", "Lit", "Hit"]

MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
MONTHS.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m})
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
           "ten": 10, "fourteen": 14, "thirty": 30, "ninety": 90}

STOP = frozenset("""a an the of in on at for to from by per each every and or with what which who whom whose how many
much was were is are be been did do does we our us it its this that these those give me show list tell find
total overall sum number count amount please during over across between since as than all any there their they
get got have has had were rank ranked ranking sorted ordered versus vs into out up down
most least highest lowest top bottom best worst largest smallest biggest more less only exactly broken split
where when whether also just i you your my average avg mean median distinct unique different separately
compared compare including include includes excluding exclude not other than s latest current currently recent
so far date dates day days week weeks month months year years quarter quarters period periods fiscal fy
yesterday today last past previous prior next complete completed full calendar ytd mtd between""".split())

LEXICON: dict[str, tuple[str, ...]] = {      # generic business synonyms, both ways
    "revenue": ("sales", "income", "turnover"), "sales": ("revenue",), "customers": ("clients", "shoppers", "buyers"),
    "clients": ("customers",), "spend": ("spending", "cost", "costs"), "cost": ("spend",),
    "orders": ("purchases",), "purchases": ("orders",), "units": ("quantity",), "quantity": ("units",),
    "stock": ("inventory",), "inventory": ("stock",), "visits": ("sessions", "traffic"),
    "sessions": ("visits",), "returns": ("refunds",), "refunds": ("returns",), "payments": ("charges",),
    "stores": ("shops", "locations"), "products": ("items", "skus"), "rentals": ("bookings", "hires"),
    "bookings": ("rentals",), "income": ("revenue",),
}


def stem(w: str) -> str:
    """A crude, deterministic singular/stem: rentals -> rental, batteries -> battery."""
    w = w.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("ses"):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


def expand(words: set[str]) -> set[str]:
    out = set(words)
    for w in words:
        out.update(LEXICON.get(w, ()))
        out.update(LEXICON.get(w + "s", ()))
    return out | {stem(w) for w in out}

# a literal the question names, as the agent filters on it: (table, column, value, negated); a value is
# what the catalog's tools show (text, number, boolean or null)
Lit = tuple[str, str, str | int | float | bool | None, bool]
# a literal found by value, with the question words it covers: (table, column, value, negated, words)
Hit = tuple[str, str, str | int | float | bool | None, bool, frozenset[str]]


def words_of(text: str) -> list[str]:
    """Lower-case word tokens; underscores and dots split words."""
    return [w for w in re.split(r"[^a-z0-9$%]+", text.lower().replace("_", " ")) if w]


@dataclass
class Window:
    start: dt.date | None = None           # inclusive
    end: dt.date | None = None             # exclusive
    fiscal: dict[str, int] = field(default_factory=dict)   # unit -> number: year, quarter, period, week
    fiscal_rel: str | None = None          # "last fiscal <unit>" / "this fiscal <unit>": resolved on the date table
    fiscal_rel_offset: int = 0             # -1 last, 0 this
    label: str = ""

    @property
    def empty(self) -> bool:
        return self.start is None and self.end is None and not self.fiscal and self.fiscal_rel is None


@dataclass
class Slots:
    text: str
    content: list[str]                     # every content word, in order
    measure: list[str]                     # words naming the measure (content minus dims and time)
    dims: list[list[str]]                  # group-by phrases, as words
    agg: str = "sum"                       # sum | count | avg | count_distinct | max | min
    limit: int | None = None
    desc: bool = True
    window: Window = field(default_factory=Window)
    negated: set[str] = field(default_factory=set)
    quoted: list[str] = field(default_factory=list)   # literals written verbatim ('AB-001', "Gold")
    verbs: set[str] = field(default_factory=set)      # participles ("placed in"): not literals
    in_cents: bool = False
    as_of_event: bool = False              # "at the time of": keep historical versions
    latest_snapshot: bool = False          # "currently", "latest", "now": the last snapshot


_DIM_END = (r"(?=\s+(?:in|on|during|for|from|over|last|past|since|between|yesterday|today|this|with|where|top|"
            r"ordered|sorted|as|at|excluding|including|that|who|whose|which|when|before|after)\b|[?.,;]|$)")


def _month_range(y: int, m: int) -> tuple[dt.date, dt.date]:
    s = dt.date(y, m, 1)
    e = dt.date(y + (m == 12), m % 12 + 1, 1)
    return s, e


class _Cut:
    """The question text, with each phrasing found cut out of it (a space in its place)."""

    def __init__(self, text: str) -> None:
        self.t = text

    def __call__(self, pattern: str) -> re.Match[str] | None:
        m = re.search(pattern, self.t)
        if m:
            self.t = self.t[:m.start()] + " " + self.t[m.end():]
        return m


_NUM = r"(\d+|" + "|".join(NUMBERS) + r")"
_ISO = r"(\d{4}-\d{2}-\d{2})"
_MON = "|".join(sorted(MONTHS, key=len, reverse=True))
_DAY = dt.timedelta(days=1)


def _n(s: str) -> int:
    return int(s) if s.isdigit() else NUMBERS[s]


def _last_month(today: dt.date) -> tuple[dt.date, dt.date]:
    prev = today.replace(day=1) - _DAY
    return _month_range(prev.year, prev.month)


def _quarter(a: str, b: str) -> tuple[dt.date, dt.date]:
    """A calendar quarter written `q<a> <b>` or `<a> q<b>` (the one-digit group is the quarter)."""
    qq, y = (int(a), int(b)) if len(a) == 1 else (int(b), int(a))
    return dt.date(y, 3 * qq - 2, 1), _month_range(y, 3 * qq)[1]


_Span = Callable[[re.Match[str], dt.date], tuple[dt.date, dt.date]]

# The calendar phrasings, tried in order (the first found wins): the patterns of one phrasing
# (tried in order too) and the window [start, end) it means, from the match and today.
_PHRASES: tuple[tuple[tuple[str, ...], _Span], ...] = (
    # relative days
    ((r"\b(?:the\s+)?(?:latest|last|most recent)\s+(?:complete|completed|full)\s+day\b", r"\byesterday\b"),
     lambda m, today: (today - _DAY, today)),
    ((r"\btoday\b|\bso far today\b",), lambda m, today: (today, today + _DAY)),
    ((r"\b(?:in\s+|over\s+|during\s+)?(?:the\s+)?(?:last|past|previous|trailing)\s+" + _NUM +
      r"\s+(?:complete\s+|completed\s+|full\s+|whole\s+)?(day|week|month)s?\b",),
     lambda m, today: (today - dt.timedelta(days=_n(m.group(1)) * {"day": 1, "week": 7, "month": 30}[m.group(2)]),
                       today)),
    ((r"\b(?:the\s+)?(?:last|past|previous)\s+week\b",), lambda m, today: (today - dt.timedelta(days=7), today)),
    ((r"\b(?:last|previous)\s+month\b",), lambda m, today: _last_month(today)),
    ((r"\b(?:this|current)\s+month\b|\bmonth\s+to\s+date\b|\bmtd\b",), lambda m, today: (today.replace(day=1), today)),
    ((r"\b(?:this|current)\s+year\b|\byear\s+to\s+date\b|\bytd\b",),
     lambda m, today: (today.replace(month=1, day=1), today)),
    # explicit dates
    ((r"\bbetween\s+" + _ISO + r"\s+and\s+" + _ISO, r"\bfrom\s+" + _ISO + r"\s+(?:to|through|until)\s+" + _ISO),
     lambda m, today: (dt.date.fromisoformat(m.group(1)), dt.date.fromisoformat(m.group(2)) + _DAY)),
    ((r"\b(?:since|after)\s+" + _ISO,), lambda m, today: (dt.date.fromisoformat(m.group(1)), today)),
    ((r"\b" + _ISO + r"\b",),
     lambda m, today: (dt.date.fromisoformat(m.group(1)), dt.date.fromisoformat(m.group(1)) + _DAY)),
    ((r"\b(" + _MON + r")\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b",),
     lambda m, today: (dt.date(int(m.group(3)), MONTHS[m.group(1)], int(m.group(2))),
                       dt.date(int(m.group(3)), MONTHS[m.group(1)], int(m.group(2))) + _DAY)),
    ((r"\b(" + _MON + r")\.?,?\s+(?:of\s+)?(\d{4})\b",),
     lambda m, today: _month_range(int(m.group(2)), MONTHS[m.group(1)])),
    ((r"\b(?:calendar\s+)?q([1-4])\s+(?:of\s+)?(\d{4})\b", r"\b(\d{4})\s+q([1-4])\b"),
     lambda m, today: _quarter(m.group(1), m.group(2))),
    ((r"\b(?:in|during|for|of)\s+(?:calendar\s+(?:year\s+)?)?(\d{4})\b", r"\bcalendar\s+(?:year\s+)?(\d{4})\b"),
     lambda m, today: (dt.date(int(m.group(1)), 1, 1), dt.date(int(m.group(1)) + 1, 1, 1))),
)


def _fiscal(w: Window, cut: _Cut, text: str) -> None:
    """The fiscal terms of the question into `w`: a relative fiscal unit ("last fiscal quarter",
    "fiscal year to date"), or a fiscal year, quarter, period and week ("FY25 P3", "period 3": of
    the current fiscal year)."""
    m = cut(r"\b(?:(last|previous|prior|this|current)\s+)?fiscal\s+(week|period|month|quarter|year)"
            r"(?:\s+to\s+date)?(?!\s*\d)")
    if m and m.group(1):
        unit = "period" if m.group(2) == "month" else m.group(2)
        w.fiscal_rel, w.fiscal_rel_offset = unit, (-1 if m.group(1) in ("last", "previous", "prior") else 0)
    elif m and "to date" in m.group(0):
        w.fiscal_rel, w.fiscal_rel_offset = m.group(2), 0
    elif m:  # "fiscal quarter" without a number: put back the unit word for the patterns below
        cut.t = cut.t + " " + m.group(0)
    fy = cut(r"\b(?:fy\s?'?|fiscal\s+(?:year\s+)?)(\d{4}|\d{2})\b")
    if fy:
        y = int(fy.group(1))
        w.fiscal["year"] = y + 2000 if y < 100 else y
    fiscal_ctx = bool(fy) or "fiscal" in text
    q = cut(r"\b(?:fiscal\s+)?(?:q|quarter\s+)([1-4])\b") if fiscal_ctx else None
    if q:
        w.fiscal["quarter"] = int(q.group(1))
    p = cut(r"\b(?:fiscal\s+)?(?:p|period\s+)(\d{1,2})\b")
    if p:
        w.fiscal["period"] = int(p.group(1))
    wk = cut(r"\b(?:fiscal\s+)?week\s+(\d{1,2})\b") if fiscal_ctx or p else None
    if wk:
        w.fiscal["week"] = int(wk.group(1))
    if w.fiscal and "year" not in w.fiscal and w.fiscal_rel is None:
        w.fiscal_rel, w.fiscal_rel_offset = "year", 0    # "period 3": of the current fiscal year


def _time(text: str, today: dt.date) -> tuple[Window, str]:
    """The time window and the text with its words removed: fiscal terms first, else the first
    calendar phrasing of `_PHRASES` found."""
    w = Window()
    cut = _Cut(text)
    _fiscal(w, cut, text)
    if w.fiscal or w.fiscal_rel:
        cut(r"\bof\s+(?:the\s+)?(?:fiscal\s+)?(?:year)?\b")
        return w, cut.t
    for patterns, span in _PHRASES:
        for pattern in patterns:
            m = cut(pattern)
            if m:
                w.start, w.end = span(m, today)
                return w, cut.t
    return w, cut.t


def _aggregate(text: str) -> str:
    """sum, unless the question counts, counts distinct or averages (the last named wins)."""
    agg = "sum"
    if re.search(r"\b(?:how many|number of|count of|count)\b", text):
        agg = "count"
    if re.search(r"\b(?:distinct|unique|different)\b", text):
        agg = "count_distinct"
    if re.search(r"\b(?:average|avg|mean)\b", text):
        agg = "avg"
    return agg


def _order(text: str) -> tuple[int | None, bool, str]:
    """The limit and direction a question asks for ("top 5", "which 3", "which ... highest"), and
    the text with a "top/bottom N" cut out."""
    limit, desc = None, True
    m = re.search(r"\b(top|bottom)\s+(\d+|" + "|".join(NUMBERS) + r")\b", text)
    if m:
        limit = int(m.group(2)) if m.group(2).isdigit() else NUMBERS[m.group(2)]
        desc = m.group(1) == "top"
        text = text[:m.start()] + " " + text[m.end():]
    elif re.search(r"^\s*(?:which|what|name|list|show)\s+(?:the\s+)?(\d+|" + "|".join(NUMBERS) + r")\s", text):
        m = re.search(r"^\s*(?:which|what|name|list|show)\s+(?:the\s+)?(\d+|" + "|".join(NUMBERS) + r")\s", text)
        assert m is not None
        limit = int(m.group(1)) if m.group(1).isdigit() else NUMBERS[m.group(1)]
        desc = not re.search(r"\b(?:lowest|least|smallest|worst|fewest)\b", text)
    elif re.search(r"\b(?:highest|most|largest|biggest|best|top|maximum)\b", text) and re.search(r"^\s*(?:which|what)\b", text):
        limit, desc = 1, True
    elif re.search(r"\b(?:lowest|least|smallest|worst|fewest|minimum)\b", text) and re.search(r"^\s*(?:which|what)\b", text):
        limit, desc = 1, False
    return limit, desc, text


def parse(question: str, today: dt.date) -> Slots:
    text = " " + re.sub(r"[()\[\]]", " ", question.strip().lower()) + " "
    text = re.sub(r"\bin order\b|\bhighest first\b|\blowest first\b", " ", text)
    quoted = re.findall(r"'([^']+)'|\"([^\"]+)\"", question)
    quoted_vals = [a or b for a, b in quoted]
    quoted_vals += re.findall(r"\b[A-Za-z]{1,4}-\d+\b", question)   # codes such as AB-012
    text = re.sub(r"\b[a-z]{1,4}-\d+\b", " ", text)   # a code is one literal, not words ("s", "12")
    text = re.sub(r"'[^']+'|\"[^\"]+\"", " ", text)
    window, text = _time(text, today)
    in_cents = bool(re.search(r"\bin cents\b", text))
    text = re.sub(r"\bin (?:cents|dollars|usd)\b|\$", " ", text)
    agg = _aggregate(text)
    limit, desc, text = _order(text)
    dims: list[list[str]] = []
    for dm in re.finditer(r"\b(?:by|per|for each|for every|each|across(?!\s+all\b)|broken down by|split by|grouped by)\s+"
                         r"(.+?)" + _DIM_END,
                         text):
        for part in re.split(r"\s*(?:,|\band\b)\s*", dm.group(1)):
            ws = [x for x in words_of(part) if x not in STOP]
            if ws:
                dims.append(ws)
    m = re.match(r"^\s*rank\s+(?:the\s+)?([a-z_ ]+?)\s+by\b", text)
    if m:
        ws = [x for x in words_of(m.group(1)) if x not in STOP]
        if ws:
            dims.insert(0, ws)
            dims = [d for d in dims if d == ws or not set(d) <= set(words_of(text[m.end():]))]
            limit = limit or 1000
    if limit is not None:
        text_np = re.sub(r"[,;:]", " ", text)
        m = re.match(r"^\s*(?:which|what)\s+(?:(?:\d+|" + "|".join(NUMBERS) + r")\s+)?([a-z_ ]+?)\s+(?:had|has|have|did|was|were|is|are|with|by|generated|made|sold|brought|got|received)\b",
                     text_np)
        if m:
            ws = [x for x in words_of(m.group(1)) if x not in STOP]
            if ws and ws not in dims:
                dims.insert(0, ws)
    negated: set[str] = set()
    for m in re.finditer(r"\b(?:excluding|except|other than|not counting|leaving out|not|non|without)\s+(?:the\s+|a\s+|an\s+|any\s+|yet\s+)?([a-z_-]+)",
                         text):
        negated.add(m.group(1))
    dims = [[w for w in d if w not in negated] for d in dims]
    dims = [d for d in dims if d]
    content = [w for w in words_of(text) if w not in STOP and not w.isdigit() and w not in NUMBERS]
    dim_words = {w for d in dims for w in d}
    measure = [w for w in content if w not in dim_words and w not in negated]
    if not measure and agg == "count" and dims:  # "how many riders hold each pass type": the entity counted
        measure = [w for w in content if w not in negated][:1]
    verbs = set(re.findall(r"(?<! was )(?<! were )(?<! are )(?<! is )(?<! been )(?<! get )(?<! got )"
                           r"\b([a-z]+ed)\s+(?:in|on|during|by|at|for|from|since|last|yesterday|today|this|between|"
                           r"before|after|up|more|less|over)\b", text))
    as_of_event = bool(re.search(r"\bat the time (?:of|they)\b|\bwhen (?:they|the order)", text))
    latest = bool(re.search(r"\b(?:currently|right now|now|latest|current)\b", question.lower()))
    return Slots(text=question, content=content, verbs=verbs, measure=measure, dims=dims, agg=agg, limit=limit, desc=desc,
                 window=window, negated=negated, quoted=quoted_vals, in_cents=in_cents, as_of_event=as_of_event,
                 latest_snapshot=latest)
