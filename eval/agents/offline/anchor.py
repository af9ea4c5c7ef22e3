"""Anchoring a question's literals in the columns whose values hold them (generic English, no lake names).

Three rules a careful literal reader applies to any lake:

- **codes**: a code-like literal (letters, a dash, digits: ``AB-012``) is a key of some entity. It is
  grounded only by an exact value of a text column that can hold codes (a column named as a code or key,
  or whose description shows a code of the same shape), looked up with ``get_column_values`` in the
  chosen table and the dimension tables reachable from it by relationships; never by a near code.
- **verbs are not states**: after an auxiliary ("how many bikes did riders *rent*"), the base form of
  a verb names the event the measure counts. A stored value that is only an inflection of it ("rented":
  a state a row is in now) is not what the question restricts to; a stored value equal to the word itself
  ("dock" as an event type) is.
- **exact values win over mentions**: a question word equal to an annotated enum value of a column of the
  chosen table is a literal even when the table's description happens to list that value.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from eval.agents.loop import Step, Turn
from eval.agents.offline.know import Knowledge, tokens
from eval.agents.offline.slots import Lit, Slots, words_of

if TYPE_CHECKING:
    from eval.agents.offline.know import Col

__all__ = ["CODE", "is_code", "code_shape", "held", "code_holders", "ground_codes", "aux_words", "verb_not_value",
           "enum_words"]

CODE = re.compile(r"^[A-Za-z]{1,4}-\d+$")
AUX = re.compile(r"\b(?:did|do|does|will|would|can|could)\b")


def is_code(v: Any) -> bool:
    return isinstance(v, str) and bool(CODE.match(v.strip()))


def code_shape(v: str) -> str:
    """'S-005' -> 'A-9': letters and digits collapsed, the dash kept."""
    return re.sub(r"\d+", "9", re.sub(r"[A-Za-z]+", "A", v))


def _holds_shape(c: Col, shape: str) -> bool:
    texts = [c.description] + [str(x) for x in list(c.enum) + list(c.samples)]
    return any(code_shape(m) == shape for t in texts for m in re.findall(r"\b[A-Za-z]{1,4}-\d+\b", t))


def _can_hold(c: Col, shape: str) -> int:
    """How strongly a column looks like it holds codes of this shape (0: not at all)."""
    if c.family != "text":
        return 0
    score = 0
    if _holds_shape(c, shape):
        score += 4
    ws = words_of(c.name)
    if ws and ws[-1] in ("code", "key", "id", "no", "ref", "number"):
        score += 2
    return score


def held(k: Knowledge, tables: list[str], words: set[str]) -> set[str]:
    """The code literals among `words` that some column of `tables` can hold (so no more tables need
    describing for them)."""
    out = set()
    for w in words:
        if not is_code(w):
            continue
        shape = code_shape(w)
        if any(_can_hold(c, shape) for t in tables for c in k.table(t).columns.values()):
            out.add(w)
    return out


def code_holders(k: Knowledge, s: Slots, tables: list[str], code: str) -> list[tuple[str, str]]:
    """(table, column) that can hold `code`, best first: the shape shown, a code/key name, a column or
    table the question names; the chosen table's own columns before a dimension's on a tie."""
    shape = code_shape(code)
    content = set(s.content)
    ranked = []
    for ti, name in enumerate(tables):
        t = k.table(name)
        if t.deprecated:
            continue
        for c in t.columns.values():
            base = _can_hold(c, shape)
            if not base:
                continue
            named = len(set(words_of(c.name)) & content) + len(tokens(name) & content)
            ranked.append((-base, -named, ti, name, c.name))
    ranked.sort()
    return [(r[3], r[4]) for r in ranked]


def ground_codes(planner: Any, tables: list[str]) -> Generator[Step, Turn, list[Lit]]:
    """Filters (table, column, code, negated) for the question's code literals, each confirmed by an exact
    stored value; the codes grounded here leave `planner.s.quoted` (the generic grounding skips them)."""
    s: Slots = planner.s
    out: list[Lit] = []
    for code in [v for v in s.quoted if is_code(v)]:
        for name, cname in code_holders(planner.k, s, tables, code)[:2]:
            t = yield from planner.call("get_column_values", {"table": name, "column": cname, "query": code,
                                                              "limit": 20})
            if t is None or t.is_error or not t.result:
                continue
            exact = [x.get("value") for x in t.result.get("values") or []
                     if isinstance(x.get("value"), str) and x["value"].strip().lower() == code.lower()]
            if exact:
                out.append((name, cname, exact[0], False))
                break
    done = {v for _t, _c, v, _n in out}
    s.quoted = [v for v in s.quoted if v not in done]
    return out


def aux_words(s: Slots) -> set[str]:
    """Words after an auxiliary verb of the question ("how many X did <subject> <verb> ..."): where the
    question's own verb stands."""
    text = s.text.lower()
    m = AUX.search(text)
    if not m:
        return set()
    return set(words_of(text[m.end():]))


def _inflects(word: str, value: str) -> bool:
    """`value` is an inflected form of the base verb `word` (rent -> rented, stop -> stopped)."""
    w, v = word.lower(), value.lower()
    if w == v or len(w) < 3:
        return False
    forms = {w + "d", w + "ed", w + w[-1] + "ed", w + "s", w + "es", w + "ing", w[:-1] + "ing"}
    if w.endswith("y"):
        forms |= {w[:-1] + "ied", w[:-1] + "ies"}
    return v in forms


def verb_not_value(s: Slots, word: str, value: Any) -> bool:
    """The question's verb matched a stored value only by its inflection: the event, not a state filter."""
    return isinstance(value, str) and " " not in word and word in aux_words(s) and _inflects(word, value)


def enum_words(k: Knowledge, s: Slots, main: str, naming: set[str]) -> set[str]:
    """Question words equal to an annotated enum value of a text column of `main` (not words naming the
    measure itself: `naming`, nor an entity `main` relates to ("the harbour dock" names a dock), nor
    participles the parser already took as verbs)."""
    t = k.table(main)
    values = {str(v).lower() for c in t.columns.values() if c.family == "text" for v in c.enum if isinstance(v, str)}
    entities = {w for r in t.relationships if r.get("to") for w in tokens(str(r["to"]))}
    return {w for w in s.content if w in values and w not in naming and w not in entities and w not in s.verbs}


PREP_PHRASE = re.compile(r"\b(?:from|at|among|of|with|for)\s+((?:[a-z-]+\s+){0,3}?[a-z]+)(?=\s+(?:in|on|during|for|from|"
                         r"over|last|past|since|between|this|with|by|at|who|that|which|did|do|does)\b|\s*[?.,;]|\s*$)")


def _entity_tables(k: Knowledge, word: str, exclude: str) -> list[str]:
    from eval.agents.offline.slots import stem
    return [h["name"] for h in k.hits if h["name"] != exclude and not k.table(h["name"]).deprecated
            and (word in tokens(h["name"]) or stem(word) in tokens(h["name"]))]


def filter_phrases(k: Knowledge, s: Slots, main: str | None = None) -> dict[str, set[str]]:
    """Phrases of the question that restrict an entity rather than name the measure: "from annual-pass
    riders", "at the north docks", the subject of an auxiliary ("did riders based downtown book"): head
    word (a word naming a table the search found) -> the phrase's content words."""
    content = set(s.content)
    text = s.text.lower()
    out: dict[str, set[str]] = {}
    for m in PREP_PHRASE.finditer(text):
        ws = [w for w in words_of(m.group(1)) if w in content]
        if ws and _entity_tables(k, ws[-1], main or ""):
            out.setdefault(ws[-1], set()).update(ws)
    a = AUX.search(text)
    if a:
        rest = re.split(r"[?,;]", text[a.end():])[0]
        ws = [w for w in words_of(rest) if w in content]
        head = next((w for w in ws[:2] if _entity_tables(k, w, main or "")), None)
        if head:
            out.setdefault(head, set()).update(ws)
    return out


def _says_all(m: dict[str, Any], words: set[str]) -> bool:
    """Every word left of the measure is said by the metric (its name, synonyms or description)."""
    from eval.agents.offline.slots import expand, stem
    said = set(words_of(str(m["name"]).rsplit(".", 1)[-1])) | set(words_of(str(m.get("description") or "")))
    said |= {w for x in m.get("synonyms") or [] for w in words_of(str(x))}
    said |= {stem(w) for w in said}
    return all(expand({w}) & said for w in words)


def metric_beside_filters(planner: Any, measure: set[str]) -> Generator[Step, Turn, dict[str, Any] | None]:
    """No metric covers the whole measure: drop the words of entity-restricting phrases and try again; the
    metric found counts only if its table joins (declared relationships) to a table each phrase names."""
    k: Knowledge = planner.k
    phrases = filter_phrases(k, planner.s)
    drop = {w for ws in phrases.values() for w in ws}
    rest = measure - drop
    if not drop or not rest or rest == measure:
        return None
    m = planner.pick_metric(rest)
    if m is None or not _says_all(m, rest):
        return None
    for head in phrases:
        targets = _entity_tables(k, head, m["table"])
        if not targets:
            return None
        r = yield from planner.call("find_join_path", {"from_table": m["table"], "to_table": targets[0]})
        if r is None or r.is_error or not r.result or not r.result.get("hops"):
            return None
    return m

