"""Subsets named by a value: "stolen bikes", "kiosk unlocks", "only partly repaired".

A question often names the rows it counts or sums by a value of a categorical column, written as an
English word (an inflection, a paraphrase, spaces for underscores) rather than as stored. A careful
literal reader, for ANY lake:

- grounds such words against the values of the categorical columns of the tables it chose (annotated
  enums and sample values, else the column's stored values through `get_column_values`), even when a
  description or a metric's text mentions the same word ("Rentals that were not voided" does not make
  "voided" part of the measure);
- lets the question's value replace a metric's filter on the same column (the metric "rentals" filters
  state <> 'voided'; "how many rentals were voided" asks for state = 'voided');
- counts rows when the thing counted ("how many <...> top-ups") is a value, not a numeric column;
- for counting questions, prefers the table whose grain the question names in full ("unlock attempts":
  one row per unlock attempt);
- reads a column's structured `null_when` {state} as the subset the state names ("bikes still out on
  loan": the column null while on loan IS NULL); never the prose of a description.

Nothing here knows a lake: only English words and what the tools returned.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from sqlglot import exp, parse_one

from eval.agents.loop import Step, Turn
from eval.agents.offline.anchor import verb_not_value
from eval.agents.offline.know import Col, Knowledge, TableInfo, tokens
from eval.agents.offline.slots import STOP, Hit, Lit, Slots, stem, words_of

if TYPE_CHECKING:
    from eval.agents.offline.agent import Planner

__all__ = ["root", "word_match", "value_hits", "ground", "reconcile", "counts_rows", "counted_table", "repick", "NULL"]

NULL = "\x00null"   # the value of a (table, column, NULL, negated) literal: the column IS NULL
_SUFFIXES = ("ations", "ation", "ions", "ion", "ments", "ment", "ially", "ally", "ly", "ings", "ing", "ed", "es", "s",
             "e")
_NEG = re.compile(r"\b(?:not|never|non|without|excluding|except|other than)\s+(?:yet\s+|been\s+|the\s+|a\s+|an\s+|any\s+)?"
                  r"([a-z][a-z_-]*)")
_HOW_MANY = re.compile(r"\bhow many\s+((?:[a-z]+\s+){0,5}?[a-z]+?)(?:\s+(?:were|was|are|is|did|do|does|have|has|had|"
                       r"got|in|on|at|by|per|for|from|with|that|which|who|whose|there|during|since|between|[a-z]+ed)\b"
                       r"|\s*[,;?.])")
_NEG_WORDS = frozenset("not no non never without un".split())
_GRAIN_NOISE = frozenset("one row per unique grain key keys".split())


def root(w: str) -> str:
    """A crude English root: voided -> void, rentals -> rent, partially -> parti, stopped -> stop."""
    w = w.lower()
    for suf in _SUFFIXES:
        if len(w) - len(suf) >= 3 and w.endswith(suf):
            w = w[: -len(suf)]
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiou":
        w = w[:-1]   # doubled final consonant: stopp -> stop, plann -> plan
    return w


def word_match(q: str, v: str) -> int:
    """How well question word `q` names value word `v`: 3 same word, 2 same root, 1 same stem prefix
    (redemption ~ redeem, partly ~ partially), 0 not at all."""
    q, v = q.lower(), v.lower()
    if q == v or stem(q) == stem(v):
        return 3
    if len(q) < 3 or len(v) < 3:
        return 0
    a, b = root(q), root(v)
    if a == b:
        return 2
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    if n >= 4 and n >= 0.6 * min(len(a), len(b)) and min(len(q), len(v)) >= 5:
        return 1
    return 0


def negated_words(text: str) -> set[str]:
    return {m.group(1) for m in _NEG.finditer(text.lower())}


def skip_words(s: Slots, k: Knowledge, tables: list[str]) -> set[str]:
    """Words that name a table or a column (or a group-by, or a participle): never a value by themselves."""
    out = set(s.verbs) | {w for d in s.dims for w in d}
    for name in tables:
        out |= tokens(name)
        for c in k.table(name).columns.values():
            out |= tokens(c.name)
    return out | {stem(w) for w in out} | {root(w) for w in out}


def _skipped(w: str, skip: set[str]) -> bool:
    return w in skip or stem(w) in skip or root(w) in skip


def coordinated(text: str) -> set[str]:
    """"kiosk and phone unlocks": coordinated words name several values (all of them), not one subset."""
    return {w for m in re.finditer(r"\b([a-z]+)\s+(?:and|or)\s+([a-z]+)\b", text.lower()) for w in m.groups()}


def _cover(s: Slots, v: str, vws: list[str], content: list[str], skip: set[str]) -> tuple[list[int], int] | None:
    """The question words (indexes into `content`) that value `v`'s words `vws` match, each its best
    unused match, and the summed match quality; None when a word of the value matches none, or the
    matched words do not stand together in the question."""
    covered: list[int] = []
    quality = 0
    for x in vws:
        best = (0, -1)
        for i, w in enumerate(content):
            if i in covered or len(w) < 3:
                continue
            if len(vws) == 1 and (_skipped(w, skip) or verb_not_value(s, w, v)):
                continue   # skipped, or the question's own verb ("did riders reserve")
            m = word_match(w, x)
            if m > best[0]:
                best = (m, i)
        if best[0] == 0:
            return None
        covered.append(best[1])
        quality += best[0]
    if len(covered) > 1 and max(covered) - min(covered) > len(covered):
        return None   # the words of a value stand together in the question
    return covered, quality


def value_hits(s: Slots, k: Knowledge, tables: list[str]) -> list[Hit]:
    """(table, column, value, negated, question words covered) for values of annotated categorical columns
    (enum, sample values) that question words name; one value per question word, the best covering."""
    content = [w for w in s.content if not w.isdigit()]
    skip = skip_words(s, k, tables)
    neg = negated_words(s.text) | set(s.negated)
    skip = skip | coordinated(s.text)
    mine = set(k.table(tables[0]).columns) if tables else set()
    cands: list[tuple[tuple[int, ...], str, str, Any, bool, frozenset[str]]] = []
    for ti, name in enumerate(tables):
        for c in k.table(name).columns.values():
            if c.family != "text" or c.idlike or (ti > 0 and c.name in mine):
                continue   # a column the chosen table has too is the chosen table's
            named = int(bool(set(words_of(c.name)) & set(content)))
            for v in dict.fromkeys(list(c.enum) + list(c.samples)):
                if not isinstance(v, str):
                    continue
                vws = [x for x in words_of(v) if x not in STOP]
                if not vws or not any(len(x) >= 3 for x in vws):
                    continue
                got = _cover(s, v, vws, content, skip)
                if got is None:
                    continue
                covered, quality = got
                ws = frozenset(content[i] for i in covered)
                key = (len(covered), quality, named, int(ti == 0), -ti)
                cands.append((key, name, c.name, v, any(w in neg for w in ws), ws))
    cands.sort(key=lambda x: x[0], reverse=True)
    out: list[Hit] = []
    taken: set[str] = set()
    for _key, name, cname, v, ng, ws in cands:
        if ws & taken:
            continue
        taken |= ws
        out.append((name, cname, v, ng, ws))
    return out


def null_hits(s: Slots, k: Knowledge, tables: list[str]) -> list[Hit]:
    """A column annotated `null_when` {state: "out_on_loan"} is null on the rows in that state: when the
    question names the state (every content word of it, by root), the subset is that column IS NULL."""
    content = set(s.content)
    negated = negated_words(s.text) | set(s.negated)
    out: list[Hit] = []
    for name in tables:
        for c in k.table(name).columns.values():
            state = words_of(str(c.null_when.get("state") or ""))
            ws = [w for w in state if w not in STOP and w not in _NEG_WORDS]
            if not ws:
                continue
            pool = negated if set(state) & _NEG_WORDS else content   # "not_paid": the question says "not paid"
            hit = frozenset(w for w in pool if any(word_match(w, x) >= 2 for x in ws))
            if all(any(word_match(w, x) >= 2 for w in pool) for x in ws):
                out.append((name, c.name, NULL, False, hit))
    return out


def ground(planner: Planner, tables: list[str], lits: list[Lit]
           ) -> Generator[Step, Turn, tuple[list[Lit], set[str]]]:
    """Add the value filters the question names to `lits` (those found by the plain grounding stay unless
    a value covering more of the question's words replaces them on the same column); returns the literals
    and the question words the new ones cover."""
    s = planner.s
    assert s is not None  # the question is parsed before its literals are grounded
    k: Knowledge = planner.k
    hits = value_hits(s, k, tables) + null_hits(s, k, tables)
    covered: set[str] = set()
    out = list(lits)
    for name, cname, v, ng, ws in hits:
        if any(t == name and c == cname and x == v for t, c, x, _n in out):
            covered |= ws
            continue
        # a longer value on the same column ("partly_voided") replaces one its words contain ("voided")
        vw = set(words_of(str(v)))
        out = [o for o in out if not (o[0] == name and o[1] == cname and isinstance(o[2], str) and not o[3]
                                      and not ng and set(words_of(o[2])) < vw)]
        out.append((name, cname, v, ng))
        covered |= ws
    # words a description mentions but no annotated value holds ("kiosk and phone unlocks"), and participles
    # used as adjectives ("were voided"): ask the data of the chosen table's plain text columns (the plain
    # grounding skips words the descriptions use and every -ed word)
    main = k.table(tables[0])
    said = main.text_words()
    skip = skip_words(s, k, tables) | covered | coordinated(s.text)
    grounded = {str(o[2]).lower() for o in out}
    grounded |= {w for w in s.content if any(word_match(w, x) >= 2 for o in out for x in words_of(str(o[2])))}
    asked = 0
    for w in dict.fromkeys(s.content):
        if asked >= 2 or _skipped(w, skip) or w in STOP or len(w) < 3 or w.isdigit() or w.lower() in grounded:
            continue
        if w not in said and stem(w) not in said and not (w.endswith("ed") and w not in s.verbs):
            continue   # neither a word the description uses nor a participle used as an adjective ("voided")
        cols = [c for c in main.columns.values() if c.family == "text" and not c.idlike and not c.enum and not c.samples
                and c.role not in ("id", "time", "measure")]
        for c in cols[:2]:
            if asked >= 2:
                break
            t = yield from planner.call("get_column_values", {"table": main.name, "column": c.name,
                                                              "query": w[:4], "limit": 20})
            asked += 1
            if t is None or t.is_error or not t.result:
                continue
            vals = [x.get("value") for x in t.result.get("values") or []]
            best = max(((word_match(w, str(v)), str(v)) for v in vals if isinstance(v, str) and " " not in v.strip()
                        and len(words_of(v)) == 1), default=(0, ""))
            if best[0] >= 2 and not verb_not_value(s, w, best[1]):
                out.append((main.name, c.name, best[1], w in negated_words(s.text) or w in s.negated))
                covered.add(w)
                break
    return out, covered


def _conjuncts(node: Any) -> list[Any]:
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    return [node]


def reconcile(metric: dict[str, Any], lits: list[Lit], table: TableInfo
              ) -> tuple[dict[str, Any] | None, list[Lit], tuple[Any, Any] | None]:
    """When the question names a value of a column the metric's filter constrains, the question's value
    replaces that part of the filter: returns (None, lits, (expression, remaining filter)) to compose
    directly. A literal the filter already states is dropped and the metric kept."""
    text = metric.get("filter")
    if not text or metric.get("table") != table.name:
        return metric, lits, None
    try:
        conj = _conjuncts(parse_one(str(text), read="duckdb"))
        expr = parse_one(str(metric.get("expression") or ""), read="duckdb")
    except Exception:
        return metric, lits, None
    mine = [o for o in lits if o[0] == table.name]
    conflict: set[str] = set()
    kept = list(lits)
    for part in conj:
        cols = {c.name for c in part.find_all(exp.Column)}
        for o in mine:
            if o[1] not in cols:
                continue
            same = (isinstance(part, exp.EQ) and not o[3]) or (isinstance(part, exp.NEQ) and o[3])
            if same and isinstance(part.expression, exp.Literal) and part.expression.this == o[2]:
                kept = [x for x in kept if x != o]
            else:
                conflict |= cols
    if not conflict:
        return metric, kept, None
    rest = [p for p in conj if not ({c.name for c in p.find_all(exp.Column)} & conflict)]
    for node in [expr] + rest:
        for c in list(node.find_all(exp.Column)):
            if c.name not in table.columns:
                return metric, lits, None
            c.replace(exp.column(c.name, table="t0", quoted=True))
    return None, kept, (expr, exp.and_(*rest) if rest else None)


def repick(planner: Any, main: str, covered: set[str]) -> dict[str, Any] | None:
    """With the words that name values (and columns) set aside, the measure may be a defined metric of the
    chosen table ("how many rentals did the kiosk channel bring": the metric of rentals)."""
    s = planner.s
    assert s is not None  # the question is parsed before its literals are grounded
    k: Knowledge = planner.k
    if not covered or not k.metrics:
        return None
    whole = {" ".join(words_of(c.name)) for c in k.table(main).columns.values()}   # "channel": a column itself
    rest = {w for w in s.measure if w not in covered and w not in whole and stem(w) not in whole}
    if not rest:
        return None
    m: dict[str, Any] | None = planner.pick_metric(rest)
    if m is None or m.get("table") != main or m.get("status") == "stale":
        return None
    return m


def counts_rows(s: Slots, covered: set[str], mcol: Col | None = None, table: TableInfo | None = None) -> bool:
    """"How many credit voucher top-ups": the counted thing (the last word before the verb) is a value,
    so the answer counts rows of that value, not a sum of a numeric column the other words name; likewise
    "how many dock events" when "event" is the table's grain and the numeric column does not name it."""
    if s.agg not in ("count", "count_distinct"):
        return False
    m = _HOW_MANY.search(s.text.lower())
    if not m:
        return False
    head = words_of(m.group(1))[-1:]
    if not head:
        return False
    if head[0] in covered:
        return True
    if mcol is None or table is None or any(word_match(head[0], w) >= 2 for w in mcol.words):
        return False
    g = re.sub(r"\(.*?\)", " ", table.grain.lower())
    return any(word_match(head[0], w) >= 2 for w in words_of(g) if w not in STOP and w not in _GRAIN_NOISE)


def counted_table(s: Slots, k: Knowledge, chosen: str | None) -> str | None:
    """"How many unlock attempts timed out": among the search hits, the table whose grain ("one row per unlock
    attempt") the question names in full, with more words than the chosen table's grain; else None."""
    if s.agg not in ("count", "count_distinct"):
        return None
    content = (set(s.content) | {w for d in s.dims for w in d}) - s.verbs   # "rides stopped": not stops

    def covered(name: str) -> int:
        t = k.table(name)
        g = re.sub(r"\(.*?\)", " ", t.grain.lower())
        ws = [w for w in words_of(g) if w not in STOP and w not in _GRAIN_NOISE]
        if not ws or len(ws) > 4:
            return 0
        return len(ws) if all(any(word_match(q, w) >= 2 for q in content) for w in ws) else 0

    m = _HOW_MANY.search(s.text.lower())
    head = words_of(m.group(1))[-1:] if m else []
    if not head:
        return None

    def covered_with_head(name: str) -> int:   # a compound grain ("unlock attempt") that names the head
        n = covered(name)
        g = words_of(re.sub(r"\(.*?\)", " ", k.table(name).grain.lower()))
        return n if n >= 2 and any(word_match(head[0], w) >= 2 for w in g) else 0

    mine = covered(chosen) if chosen else 0
    best, best_n = None, max(mine, 1)
    for h in k.hits:
        name = h["name"]
        t = k.table(name)
        if t.deprecated or name == chosen:
            continue
        n = covered_with_head(name)
        if n > best_n:
            best, best_n = name, n
    return best
