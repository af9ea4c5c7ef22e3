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

import re

from semantic.models import Annotation, Finding
from semantic.staleness.core import Table

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


def prose_names(text: str, column: str, table: str) -> bool:
    """Whether prose on `table` names its column `column`: as an identifier (not inside a longer one),
    qualified by the table's name (or a trailing part of it) or unqualified; a plain-word name (letters
    only) unqualified only when code-quoted. (eval/traps/truth.py reads prose by the same rule with code of
    its own, on purpose: the generator's truth must not share the detector's code, or one bug would hide
    in both.)"""
    forms = {".".join(table.lower().split(".")[i:]) for i in range(table.count(".") + 1)}
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
