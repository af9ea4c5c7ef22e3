"""Units a `unit` annotation names, and the unit its values are in once every value was multiplied
by a factor: what `update_unit` writes.

A unit belongs to one family (time, money in one currency, mass) and has a size in the family's
base (seconds, dollars, grams). Values that were in unit `u` and were all multiplied by `factor`
are in the unit of the same family whose size is size(u) / factor: hours x 60 are minutes, cents
÷ 100 are dollars, seconds x 1000 are milliseconds.

Invariant: `unit_after(u, f)` is None unless the family holds a unit of exactly that size (within
1e-9 relative); it never guesses across families (dollars x 0.92 is no unit here: another currency is
a person's call) and never returns `u` itself (a factor of 1 changes no unit). The name returned is
the family's canonical spelling (plural, lower case), and `usd` keeps its own family (`usd_cents`),
as the annotations of the Acme lake spell it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["NAME_UNITS", "UNIT_WORDS", "names_a_unit", "names_unit", "reworded", "sole_unit_column", "unit_after", "unit_columns",
           "unit_size"]

# family -> canonical name -> (size in the family's base, other spellings)
_FAMILIES: dict[str, dict[str, tuple[float, tuple[str, ...]]]] = {
    "time": {"milliseconds": (1e-3, ("ms", "msec", "millisecond", "millis")),
             "seconds": (1.0, ("s", "sec", "secs", "second")),
             "minutes": (60.0, ("min", "mins", "minute")),
             "hours": (3600.0, ("h", "hr", "hrs", "hour")),
             "days": (86400.0, ("d", "day")),
             "weeks": (604800.0, ("wk", "wks", "week"))},
    "dollars": {"cents": (0.01, ("cent",)), "dollars": (1.0, ("dollar",)),
                "thousands of dollars": (1e3, ("thousand dollars",)), "millions of dollars": (1e6, ("million dollars",))},
    "usd": {"usd_cents": (0.01, ()), "usd": (1.0, ()), "usd_thousands": (1000.0, ("kusd",))},
    "eur": {"eur_cents": (0.01, ()), "eur": (1.0, ()), "eur_thousands": (1000.0, ("keur",))},
    "mass": {"milligrams": (1e-3, ("mg", "milligram")), "grams": (1.0, ("g", "gram")),
             "kilograms": (1e3, ("kg", "kilogram", "kilo", "kilos")), "tonnes": (1e6, ("t", "tonne"))},
}
_BY_NAME: dict[str, tuple[str, str]] = {
    spelling: (family, name)
    for family, units in _FAMILIES.items()
    for name, (_size, others) in units.items()
    for spelling in (name, *others)
}


def unit_size(unit: object) -> tuple[str, str, float] | None:
    """(family, canonical name, size) of a unit as an annotation spells it, or None for a unit this
    table does not know (free text, a currency code other than usd/eur, a ratio)."""
    got = _BY_NAME.get(str(unit).strip().lower()) if isinstance(unit, str) else None
    if got is None:
        return None
    family, name = got
    return family, name, _FAMILIES[family][name][0]


def unit_after(unit: object, factor: float) -> str | None:
    """The unit the values of `unit` are in once every value was multiplied by `factor` (hours, 60
    -> minutes), or None when the family has no unit of that size, the unit is unknown, or the
    factor is 1, zero, negative or not finite."""
    got = unit_size(unit)
    if got is None or not math.isfinite(factor) or factor <= 0 or math.isclose(factor, 1.0, rel_tol=1e-9):
        return None
    family, _name, size = got
    want = size / factor
    return next((name for name, (s, _o) in _FAMILIES[family].items() if math.isclose(s, want, rel_tol=1e-9)), None)


# words prose states a unit or a scale with (beside the spellings above of two letters or more, and their
# plurals): a description that says none of them says nothing a change of unit makes false
_PROSE_UNIT_WORDS = {"usd", "eur", "gbp", "dollar", "dollars", "cent", "cents", "euro", "euros", "pence", "penny",
                     "pennies", "currency", "percent", "percentage", "pct", "basis", "bps", "thousand", "thousands",
                     "million", "millions", "unit", "units", "scale", "minor", "major", "decimal", "decimals"}


_PER_UNIT = re.compile(r"\bunit[\s_-]+(?:cost|price|amount|value|margin|weight|count)s?\b", re.IGNORECASE)


def _prose(s: str) -> str:
    """`s` with what is no unit word blanked out, its length kept: "unit cost", "unit price" (the cost of one
    item), and identifiers (`unit_price_cents`: a column's name, whose suffix says the column's unit, not the
    text's: "quantity x unit_price_cents - discount_cents" states none)."""
    s = _PER_UNIT.sub(lambda m: " " * len(m.group(0)), s)
    return re.sub(r"[A-Za-z0-9]*_[A-Za-z0-9_]*", lambda m: " " * len(m.group(0)), s)


def names_a_unit(text: object) -> bool:
    """Whether prose states a unit or a scale: a word of a unit this module knows (two letters or more: a
    lone `s` or `h` is prose), its plural, a currency or scale word (`_PROSE_UNIT_WORDS`), or a `%` sign.
    "Lifetime net revenue of the customer" states none; "discount given, in dollars" does; "Unit cost" (the
    cost of one item) does not, nor a column's name ("quantity x unit_price_cents": `_prose`)."""
    s = str(text or "")
    if "%" in s:
        return True
    s = _prose(s)
    words = {w.lower() for w in re.findall(r"[A-Za-z]+", s)}
    known = {k for k in _BY_NAME if len(k) >= 2} | {k + "s" for k in _BY_NAME if len(k) >= 3}
    return bool(words & (known | _PROSE_UNIT_WORDS))


# The words prose names a unit by, per unit (an annotation's value, lower case, or a name's suffix). A
# table entry, not a branch: a unit not listed is named by its own word (and its plural) alone.
UNIT_WORDS: dict[str, tuple[str, ...]] = {
    "usd": ("usd", "dollar", "dollars"), "dollars": ("usd", "dollar", "dollars"),
    "cents": ("cent", "cents"), "usd cents": ("cent", "cents"), "usd_cents": ("cent", "cents"),
    "eur": ("eur", "euro", "euros"), "hours": ("hour", "hours"), "minutes": ("minute", "minutes"),
    "seconds": ("second", "seconds"), "ms": ("millisecond", "milliseconds"), "days": ("day", "days"),
    "kg": ("kg", "kilogram", "kilograms"), "g": ("gram", "grams"),
}
# a column's name suffix -> the unit it says its values are in
NAME_UNITS = (("_usd", "usd"), ("_cents", "cents"), ("_eur", "eur"), ("_hours", "hours"), ("_minutes", "minutes"),
              ("_seconds", "seconds"), ("_ms", "ms"), ("_kg", "kg"))


def names_unit(text: str, unit: str) -> str | None:
    """The word by which prose names `unit` (`UNIT_WORDS`, else the unit's own word or its plural, as a
    whole word), as the text spells it, or None: "Points (negative for redeem)" names the unit `points`."""
    words = UNIT_WORDS.get(unit) or ((unit, unit + "s") if re.fullmatch(r"[a-z]+", unit) else ())
    for w in words:
        m = re.search(rf"(?<![\w$]){re.escape(w)}(?!\w)", text, re.IGNORECASE)
        if m is not None:
            return m.group(0)
    return None


def _full_words() -> dict[str, tuple[str, bool]]:
    """Every unit word written out in full (no abbreviation: `min`, `ms`, `kg`, `h` also say other
    things) -> (its canonical unit, plural), of the families whose canonical names are plain plurals."""
    out: dict[str, tuple[str, bool]] = {}
    for units in _FAMILIES.values():
        for name in units:
            if re.fullmatch(r"[a-z]+s", name):
                out[name], out[name[:-1]] = (name, True), (name, False)
            elif re.fullmatch(r"[a-z]+s( [a-z]+)+s", name):  # "thousands of dollars": said for a plural only
                out[name] = (name, True)
    return out


_FULL_WORDS = _full_words()


def reworded(text: object, factor: float) -> tuple[str, str, str] | None:
    """(old word, new word, new text) when prose names one unit, once, and says nothing else a change of
    unit could make false, and values multiplied by `factor` are in another unit of its family
    (`unit_after`): the text with that word replaced, in the same number and capitalisation ("UTC offset in
    hours", x 60 -> "UTC offset in minutes"). None when the text holds a digit (a number in the old unit),
    a `%`, another unit or scale word (`names_a_unit`'s: "cents; 100 cents = 1 dollar", "thousands"), the
    unit only abbreviated, or the unit twice: a person rewrites those."""
    s = str(text or "")
    if not isinstance(text, str) or re.search(r"[0-9%]", s):
        return None
    bare = _prose(s)  # "unit cost", identifiers: no unit (offsets kept)
    known = {k for k in _BY_NAME if len(k) >= 2} | {k + "s" for k in _BY_NAME if len(k) >= 3} | _PROSE_UNIT_WORDS
    hits = [m for m in re.finditer(r"[A-Za-z]+", bare) if m.group(0).lower() in known]
    if len(hits) != 1 or hits[0].group(0).lower() not in _FULL_WORDS:
        return None
    m = hits[0]
    old = m.group(0)
    unit, plural = _FULL_WORDS[old.lower()]
    new_unit = unit_after(unit, factor)
    if new_unit is None or new_unit not in _FULL_WORDS or (" " in new_unit and not plural):
        return None  # "dollar amounts" in thousands: a person rewrites it
    new = new_unit if plural else new_unit[:-1]
    new = new.capitalize() if old[0].isupper() else new
    return old, new, s[:m.start()] + new + s[m.end():]


def sole_unit_column(anns: Iterable[Any], col: str, word: str) -> bool:
    """Is `col` the one column whose `unit` annotation (among `anns`, a table's) is of the kind of the
    unit `word` names ("dollars": money, as USD and cents are)? Then a table description naming that
    unit once speaks of `col`'s values, and says it in another unit once every row of `col` moved (the
    round-14 Acme tester's "Marketing spend in dollars ..." beside `spend_usd`)."""
    return unit_columns(anns, word) == {col.lower()}


def unit_columns(anns: Iterable[Any], word: str) -> set[str]:
    """The columns (lower case) whose `unit` annotation (among `anns`, a table's) is of the kind of the
    unit `word` names ("dollars": money, as USD and cents are); empty when `word` names no known unit.
    A table description naming that unit once speaks of all of them."""
    def kind(unit: str) -> str | None:  # dollars, USD and EUR (and their cents) are all money
        got = unit_size(unit.lower())
        return None if got is None else "money" if got[0] in ("dollars", "usd", "eur") else got[0]

    fam = kind(word)
    if fam is None:
        return set()
    return {str(a.column).lower() for a in anns if a.kind == "column" and a.field == "unit"
            and kind(str(a.value or "")) == fam}
