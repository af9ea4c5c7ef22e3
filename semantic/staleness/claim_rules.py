"""When a change contradicts what an annotation says: rules a registry entry names (`Check.claim_rule`)
that keep a finding only when the annotation's own content is made false by the change the finding
reports. A rule reads the finding, its annotation and the table; it never adds a finding or changes
its reason, status or evidence (a fix rule, `semantic.staleness.fix_rules`, may then change its fix).

A column's own annotations follow its field id (`column.<id>.<field>`), so what a rename or a
retype makes false is what their content says, not that they are attached to the column:

- renamed in place (the same field id, a new name): the annotation still describes the column; it is
  false only when its text names the old name (prose: as an identifier, qualified by the table's
  name or unqualified, a plain-word name such as `status` only when code-quoted, since a plain word is
  prose too; a structured field never names its own column: a `null_when` naming it is refused). A
  column dropped and another added in its place is not this: its annotations' field id is gone, they
  are all false;
- retyped (another type family): only the annotations whose content depends on the type: the unit, the
  additivity, and the values it lists or maps (`enum`, `sample_values`, `labels`: their spelling is the
  old type's). A description, a role, synonyms still hold (an id stored as text is still an id).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from semantic.models import Annotation, Finding
from semantic.staleness.core import Table
from semantic.units import names_a_unit, names_unit

PROSE = ("description", "grain", "deprecated", "not_for_reporting", "instructions")
TYPE_BOUND = ("unit", "additivity", "enum", "sample_values", "labels")


_CLAUSE_STOPS = re.compile(r"\.(?=\s|$)|[;!?\n]")


def clauses(text: str) -> list[str]:
    """`text` cut into clauses at its sentence stops (a full stop before a space or the end, `;`, `!`,
    `?`, a new line): a dotted name (`core.dim_customer`) stays whole. The unit the prose rules read a
    value or a column's name in, with what else it names."""
    return _CLAUSE_STOPS.split(text)


def strings_of(v: object) -> list[str]:
    """Every string inside an annotation's value (dicts and lists walked)."""
    if isinstance(v, str):
        return [v]
    if isinstance(v, dict):
        return [s for x in v.values() for s in strings_of(x)]
    if isinstance(v, list):
        return [s for x in v for s in strings_of(x)]
    return []


def name_forms(table: str) -> set[str]:
    """How a qualified name may name `table` (lower case): its full dotted name and each trailing part
    (`acme.core.orders`, `core.orders`, `orders`)."""
    return {".".join(table.lower().split(".")[i:]) for i in range(table.count(".") + 1)}


def prose_names(text: str, column: str, table: str) -> bool:
    """Whether prose on `table` names its column `column`: as an identifier (not inside a longer one),
    qualified by the table's name (or a trailing part of it) or unqualified; a plain-word name (letters
    only) unqualified only when code-quoted. (eval/traps/truth.py reads prose by the same rule with code of
    its own, on purpose: the generator's truth must not share the detector's code, or one bug would hide
    in both.)"""
    forms = name_forms(table)
    plain = re.fullmatch(r"[A-Za-z]+", column) is not None
    pat = re.compile(rf"(?<![A-Za-z0-9_.])((?:[A-Za-z0-9_]+\.)*)({re.escape(column)})(?![A-Za-z0-9_])(?!\.[A-Za-z_])",
                     re.IGNORECASE)
    for m in pat.finditer(text):
        if m.group(1):
            if m.group(1)[:-1].lower() in forms:
                return True
            continue
        before = text[m.start() - 1] if m.start() > 0 else ""
        after = text[m.end()] if m.end() < len(text) else ""
        if not plain or (before != "" and before in "`'\"" and after == before):
            return True
    return False


def column_words(column: str, columns: list[str]) -> list[str]:
    """The words of a column's name as prose says them: split at `_`, a table prefix left out (the
    first word when it is two or three letters and half the table's `columns` or more start with it:
    TPC-DS `ca_gmt_offset` is "gmt offset"). Empty unless two words or more remain, each of two
    letters or more (one word is too common to stand for the column in prose)."""
    words = [w for w in re.split(r"[_\W]+", column.lower()) if w]
    if len(words) >= 3 and 2 <= len(words[0]) <= 3 and \
            2 * sum(c.lower().startswith(words[0] + "_") for c in columns) >= len(columns):
        words = words[1:]
    return words if len(words) >= 2 and all(len(w) >= 2 and w.isalpha() for w in words) else []


def phrase_names(text: str, column: str, columns: list[str]) -> bool:
    """Whether prose says a column's name in words (`column_words`, in order, separated by spaces or
    hyphens, the last word maybe plural): "with the GMT offset of their time zone" says
    `ca_gmt_offset`. Read for a column that was dropped (a drop takes away what the words describe,
    whatever the prose calls it; a rename keeps it: the words still hold) and for a column whose values
    came to mean something else (`row_relations`: "Net paid excludes tax" of `ss_net_paid`)."""
    words = column_words(column, columns)
    if not words:
        return False
    pat = r"[\s-]+".join(re.escape(w) for w in words)
    return re.search(rf"(?<![A-Za-z0-9_]){pat}s?(?![A-Za-z0-9_])", text, re.IGNORECASE) is not None


def text_names(a: Annotation, column: str, table: str) -> bool:
    """Whether annotation `a`'s own content names the column `column` of `table` (see the module)."""
    return a.field in PROSE and any(prose_names(s, column, table) for s in strings_of(a.value))


def own_column_claim(t: Table, a: Annotation, f: Finding) -> bool:
    """Keep a column_renamed / column_type_changed finding on a column's own annotation only when the
    change contradicts what the annotation says (see the module); every other finding is kept."""
    if a.kind != "column":
        return True
    if f.reason == "column_renamed" and a.column_id in t.cols:  # renamed in place: it follows the field id
        old = str(f.evidence.values.get("column") or "")
        return bool(old) and text_names(a, old, t.name)
    if f.reason == "column_type_changed":
        return a.field in TYPE_BOUND
    return True


UNIT_CHANGE = 1.5  # a factor this far from 1 either way is a change of unit or scale (nearer: a tax, a currency)


def unit_claim(t: Table, a: Annotation, f: Finding, anns: Iterable[Annotation] = ()) -> bool:
    """A change of unit or scale (`unit_drift` with a power of ten, or a factor UNIT_CHANGE or more from
    1, cause `unit`) makes a column's description false only when the text states a unit or a scale
    (`semantic.units.names_a_unit`), or names the unit the column's own `unit` annotation (among `anns`,
    the table's) gives ("Points (negative for redeem)" of a column in `points`): "Lifetime net revenue of
    the customer" holds in cents and in dollars, "discount given, in dollars" does not. A factor near 1 (a
    tax included, another currency) changes what the values mean, whatever the words: kept, as is every
    other finding."""
    if f.reason != "unit_drift" or a.kind != "column" or a.field != "description" or \
            not (f.cause or "").startswith("unit:"):
        return True
    ev = f.evidence.values
    factor = ev.get("scale_factor")
    if "scale_exp" not in ev and not (isinstance(factor, int | float) and factor > 0
                                      and abs(math.log10(factor)) >= math.log10(UNIT_CHANGE)):
        return True
    return states_unit(a, anns, a.column_id)


def states_unit(a: Annotation, anns: Iterable[Annotation], column_id: int | None) -> bool:
    """Does the text of `a` state a unit or a scale (`semantic.units.names_a_unit`), or name the unit the
    `unit` annotation (among `anns`, the table's) of column `column_id` gives?"""
    units = [str(u.value).strip().lower() for u in anns if u.kind == "column" and u.field == "unit"
             and u.column_id == column_id and isinstance(u.value, str) and u.value.strip()]
    return any(names_a_unit(x) or any(names_unit(x, u) for u in units) for x in strings_of(a.value))
