"""The offline agent: a deterministic catalog reader (HARNESS.md, Agents). No LLM, no lake names.

One episode is a plan run as a generator: it yields tool calls (the loop answers each with a Turn)
and ends with FinalSQL or Abstain. Steps, within the 12-call budget:

  search_tables(question)  -> candidate tables, the snapshot time (relative dates), deprecations
  list_metrics(measure)    -> a defined metric whose name / synonyms cover the measure wins
  describe_table(...)      -> the chosen table and, as needed, related tables for dimensions
  get_column_values(...)   -> ground literal words in stored values
  run_sql(date table)      -> resolve a fiscal window on the calendar table
  query_metric / find_join_path + run_sql -> the answer; one repair on an error, else abstain
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Generator
from typing import Any

from rapidfuzz import fuzz
from sqlglot import exp, parse_one

from eval.agents.loop import Abstain, FinalSQL, Step, ToolCall, Transcript, Turn
from eval.agents.offline import anchor, derived, restate, subset
from eval.agents.offline.know import Col, Knowledge, tokens
from eval.agents.offline.scope import check_window, fiscal_gap_reason, future_reason, unknown_measure_reason
from eval.agents.offline.slots import STOP, Lit, Slots, expand, parse, stem, words_of

__all__ = ["OfflineAgent"]

RESERVE = 2            # calls kept for the final run and one repair
FISCAL_UNITS = {"year": ("year",), "quarter": ("quarter",), "period": ("period", "month"), "week": ("week",)}
WINDOW_AGG = {"last": "max", "first": "min"}   # a semi-additive measure's window: which row of its dimension

Plan = Generator[Step, Turn, None]
Node = Any  # a sqlglot node (its builders are typed loosely across versions)


class Failed(Exception):
    """The plan cannot go on: abstain with this reason."""


class OfflineAgent:
    """Deterministic: the same transcript gives the same step."""

    name = "offline"

    def __init__(self) -> None:
        self._plan: Plan | None = None
        self._seen = -1
        self._question: str | None = None

    def usage(self) -> tuple[int, int]:
        return (0, 0)

    async def next(self, transcript: Transcript) -> Step:
        fresh = (self._plan is None or not transcript.turns or transcript.question != self._question
                 or len(transcript.turns) != self._seen + 1)
        if fresh:
            if transcript.turns:  # a transcript we did not drive: replay it through a new plan
                self._plan = Planner(transcript.question, transcript.budget).run()
                step = next(self._plan)
                for turn in transcript.turns:
                    step = self._plan.send(turn)
            else:
                self._plan = Planner(transcript.question, transcript.budget).run()
                step = next(self._plan)
        else:
            assert self._plan is not None
            step = self._plan.send(transcript.turns[-1])
        self._question = transcript.question
        self._seen = len(transcript.turns)
        return step


def q(name: str) -> exp.Table:
    parts = name.split(".")
    return exp.table_(parts[-1], db=parts[-2] if len(parts) > 1 else None, catalog=parts[-3] if len(parts) > 2 else None,
                      quoted=True)


def col(name: str, alias: str | None = None) -> exp.Column:
    return exp.column(name, table=alias, quoted=True)


def lit(v: Any) -> exp.Expression:
    if isinstance(v, bool):
        return exp.Boolean(this=v)
    if isinstance(v, (int, float)):
        return exp.Literal.number(v)
    return exp.Literal.string(str(v))


def day(d: dt.date) -> exp.Expression:
    return exp.Cast(this=exp.Literal.string(d.isoformat()), to=exp.DataType.build("DATE"))


class Planner:
    def __init__(self, question: str, budget: int) -> None:
        self.question = question
        self.budget = budget
        self.used = 0
        self.k = Knowledge()
        self.s: Slots | None = None
        self.today = dt.date.today()
        self.metric_where: list[str] = []
        self.rewritten: tuple[Node, Node | None] | None = None
        self.daily_avg = False                                       # derived.py: "average daily <metric>"
        self.ratio_metrics: tuple[dict[str, Any], dict[str, Any]] | None = None   # derived.py: metric / metric

    # ------------------------------------------------------------ plumbing
    def call(self, name: str, args: dict[str, Any], essential: bool = False) -> Generator[Step, Turn, Turn | None]:
        left = self.budget - self.used
        if left <= (0 if essential else RESERVE):
            return None
        self.used += 1
        turn = yield ToolCall(name, args)
        if not turn.is_error:
            self.k.absorb(name, turn.result)
        return turn

    def run(self) -> Plan:
        try:
            sql = yield from self.answer()
        except Failed as e:
            yield Abstain(str(e))
            return
        yield FinalSQL(sql) if sql else Abstain("no SQL")

    # ------------------------------------------------------------ the plan
    def answer(self) -> Generator[Step, Turn, str]:
        t = yield from self.call("search_tables", {"query": self.question, "limit": 15})
        if t is None or t.is_error:
            raise Failed("search_tables gave an error")
        if self.k.snapshot_time:
            self.today = dt.datetime.fromisoformat(self.k.snapshot_time.replace("Z", "+00:00")).date()
        s = self.s = parse(self.question, self.today)
        measure = set(s.measure)
        if s.measure:
            yield from self.call("list_metrics", {"query": " ".join(s.measure[:6]), "limit": 10})
        metric = self.pick_metric(measure)
        metric = yield from restate.trusted(self, metric)
        sql = yield from derived.early(self, metric)
        if sql:
            return sql
        if metric is None and s.measure:
            metric = yield from anchor.metric_beside_filters(self, measure)
        main = metric["table"] if metric else self.pick_table(measure)
        if metric is None:
            main = subset.counted_table(s, self.k, main) or main
        if main is None:
            raise Failed("no table holds the measure: " + " ".join(s.measure))
        yield from self.described(main)
        main = yield from self.follow_successor(main)
        if metric is not None and metric["table"] != main:
            metric = None
        if metric is not None and self.metric_stale(metric):
            self.rewritten = self.rewrite_metric(metric)
            metric = None
        why = future_reason(self.question, self.k)
        if why:
            raise Failed(why)
        sql = yield from derived.late(self, main, metric)
        if sql:
            return sql
        why = unknown_measure_reason(s, self.k)
        if why:
            raise Failed(why)
        if metric is None and not self.rewritten and not self.measure_column(main, measure) and \
                s.agg not in ("count", "count_distinct"):
            raise Failed("no column of " + main + " matches the measure: " + " ".join(s.measure))
        sql = yield from self.compose(main, metric)
        return sql

    def describe(self, name: str) -> Generator[Step, Turn, bool]:
        t = yield from self.call("describe_table", {"table": name, "limit": 200})
        return t is not None and not t.is_error

    def described(self, name: str) -> Generator[Step, Turn, bool]:
        """Describe `name` unless this episode already has: True when its description is known."""
        if self.k.table(name).described:
            return True
        return (yield from self.describe(name))

    def follow_successor(self, main: str) -> Generator[Step, Turn, str]:
        seen = {main}
        while True:
            succ = self.k.successor_of(main)
            if not succ or succ in seen:
                return main
            seen.add(succ)
            ok = yield from self.describe(succ)
            if not ok:
                return main
            main = succ

    # ------------------------------------------------------------ choosing
    def pick_metric(self, measure: set[str]) -> dict[str, Any] | None:
        if not measure or not self.k.metrics:
            return None
        ex = expand(measure)
        dims = {w for d in self.s.dims for w in d} if self.s else set()
        best, best_key = None, None
        for m in self.k.metrics:
            short = m["name"].rsplit(".", 1)[-1]
            phrases = [words_of(short)] + [words_of(x) for x in m.get("synonyms") or []]
            cover = 0.0
            for ph in phrases:
                ws = [w for w in ph if w not in STOP]
                if not ws:
                    continue
                hit = sum(1 for w in ws if w in ex or stem(w) in ex)
                extra = sum(1 for w in ws if w in dims and w not in ex)
                cover = max(cover, (hit - extra) / len(ws) + 0.01 * hit)
            if cover < 1.0:
                continue
            desc = set(words_of(str(m.get("description") or "")))
            said = set(words_of(short)) | {w for x in m.get("synonyms") or [] for w in words_of(x)} | desc
            said |= {stem(w) for w in said}
            if sum(1 for w in measure if w in said or stem(w) in said) < 0.5 * len(measure):
                continue
            tinfo = self.k.table(m["table"])
            key = (cover, -int(tinfo.deprecated), len(desc & ex), -len(words_of(short)), m["name"])
            if best_key is None or key > best_key:
                best, best_key = m, key
        if best is not None and self.k.table(best["table"]).deprecated:
            return None
        return best

    def metric_stale(self, m: dict[str, Any]) -> bool:
        if m.get("status") == "stale":
            return True
        t = self.k.table(m["table"])
        refs = set(words_of(m.get("expression") or "")) | set(words_of(m.get("filter") or ""))
        if t.described and t.columns:
            names = {c.lower() for c in t.columns}
            cols_in = {w for w in re.findall(r"[A-Za-z_]\w*", m.get("expression") or "") if "_" in w}
            if cols_in and not cols_in & names and not any(c in names for c in cols_in):
                return True
        return any((m["table"], r) in self.k.renamed for r in refs)

    def rewrite_metric(self, m: dict[str, Any]) -> tuple[Node, Node | None] | None:
        """A stale metric's expression and filter with the renames staleness findings suggest
        (only when every column it uses is then a column of its own table and no unit changed)."""
        table = m["table"]
        t = self.k.table(table)
        ren = {old: new for (tb, old), new in self.k.renamed.items() if tb == table}
        if not ren or any((table, new) in self.k.rescaled for new in ren.values()):
            return None
        out: list[Node] = []
        for text in (m.get("expression"), m.get("filter")):
            if not text:
                out.append(None)
                continue
            try:
                tree = parse_one(str(text), read="duckdb")
            except Exception:
                return None
            for c in list(tree.find_all(exp.Column)):
                name = ren.get(c.name, c.name)
                if name not in t.columns or (c.table and c.table != t.short):
                    return None
                c.replace(col(name, "t0"))
            out.append(tree)
        assert out[0] is not None
        return out[0], out[1]

    def pick_table(self, measure: set[str]) -> str | None:
        scored = []
        n = len(self.k.hits)
        for i, h in enumerate(self.k.hits):
            name = h["name"]
            a, b = self.k.measure_overlap(name, measure)
            if a + b == 0:
                continue
            t = self.k.table(name)
            head = self.k.measure_overlap(name, set(self.s.measure[:1])) if self.s and self.s.measure else (0, 0)
            score = 3 * a + b + 2 * head[0] + (n - i) / max(n, 1)
            if t.deprecated or t.not_for_reporting:
                score *= 0.3
            scored.append((score, -i, name))
        if not scored:
            return None
        scored.sort(reverse=True)
        return scored[0][2]

    def measure_column(self, table: str, measure: set[str]) -> Col | None:
        t = self.k.table(table)
        ex = expand(measure)
        best, best_key = None, None
        for c in t.columns.values():
            if c.family != "num" or (c.idlike and c.role != "measure"):
                continue
            name_hit = len(c.words & ex)
            desc_hit = len(set(words_of(c.description)) & ex)
            if name_hit + desc_hit == 0:
                continue
            stale = (table, c.name) in self.k.renamed or c.status == "stale"
            head = expand(set(self.s.measure[:1])) if self.s and self.s.measure else set()
            key = (name_hit * 3 + desc_hit + 3 * len(c.words & head) + (2 if c.role == "measure" else 0)
                   - (5 if stale else 0),
                   -len(tokens(c.name) - ex), c.name)
            if best_key is None or key > best_key:
                best, best_key = c, key
        return best

    # ------------------------------------------------------------ columns for dims and literals
    def find_dim(self, words: list[str], tables: list[str]) -> list[tuple[str, str]]:
        """(table, column) pairs for a group-by phrase: an exact column, else an entity's key and name."""
        known = set()
        for name in tables:
            for c in self.k.table(name).columns.values():
                known |= tokens(c.name) | c.words
        kept = [w for w in words if w in known or stem(w) in known]
        words = kept or words
        ws = {stem(w) for w in words} | set(words)
        exact: list[tuple[int, int, str, str]] = []
        partial: list[tuple[int, int, str, str]] = []
        for ti, name in enumerate(tables):
            t = self.k.table(name)
            for c in t.columns.values():
                cw = tokens(c.name) | c.words
                if set(words) <= cw or {stem(w) for w in words} <= cw:
                    extra = len(tokens(c.name) - ws)
                    (exact if extra == 0 else partial).append((extra, ti, c.name, name))
        if exact:
            exact.sort()
            return [(exact[0][3], exact[0][2])]
        if not partial and len(words) > 1:  # "booking channel", "dock zone": the words a column carries
            best = []
            for ti, name in enumerate(tables):
                for c in self.k.table(name).columns.values():
                    ct = tokens(c.name)
                    hit = [w for w in words if w in ct or stem(w) in ct]
                    if hit and not c.idlike:
                        carried = len(tokens(name) & ws)
                        best.append((-len(hit), -carried, len(ct - ws), ti, c.name, name))
            if best:
                best.sort()
                return [(best[0][5], best[0][4])]
        if partial:
            # an entity: prefer the table whose own name carries the word, its key plus a name column
            partial.sort(key=lambda x: (-int(bool(tokens(x[3]) & ws)),
                                        -int(self.k.table(x[3]).grain_keys == [x[2]]), x[1], x[0], x[2]))
            table = partial[0][3]
            cands = [p for p in partial if p[3] == table]
            tk = self.k.table(table)
            key = next((p for p in cands if p[2] in tk.grain_keys[:1]), None) or \
                next((p for p in cands if words_of(p[2])[-1:] == ["id"]), None) or \
                next((p for p in cands if tk.columns[p[2]].idlike), cands[0])
            out = [(table, key[2])]
            nm = next((p for p in cands if "name" in tokens(p[2])), None)
            if nm and nm is not key:
                out.append((table, nm[2]))
            return out
        return []

    def ground_literals(self, tables: list[str], used: set[str]) -> Generator[Step, Turn, list[Lit]]:  # noqa: C901 - one generator of the agent's scripted tool calls: the steps, and the eval's call counts, stay in order
        """(table, column, value, negated) filters for leftover question words."""
        s = self.s
        assert s is not None
        skip = set(used) | tokens(tables[0]) | s.verbs
        leftover = [w for w in dict.fromkeys(s.content + sorted(s.negated)) if w not in skip and len(w) > 1]
        out: list[Lit] = []
        texts = [(name, c) for name in tables for c in self.k.table(name).columns.values() if c.family in ("text", "bool")]
        words = list(leftover)
        for v in s.quoted:
            words.insert(0, v)
        pairs = [f"{a} {b}" for a, b in zip(s.content, s.content[1:], strict=False) if a in leftover and b in leftover]
        done: set[str] = set()
        for w in pairs + words:
            if w in done:
                continue
            best: tuple[float, str, str, Any] | None = None
            for name, c in texts:
                if c.family == "bool" and " " not in w:
                    flag = tokens(c.name) - {"is", "has"}
                    if stem(w) in flag or w in flag:
                        sc = 90.0 + (5 if name == tables[0] else 0)
                        if best is None or sc > best[0]:
                            best = (sc, name, c.name, True)
                    continue
                for v in list(c.enum) + list(c.samples):
                    if not isinstance(v, str) or (w in s.quoted and w.lower() != v.lower()):
                        continue  # a code or quoted literal must match exactly
                    if anchor.verb_not_value(s, w, v):
                        continue
                    sc = max(fuzz.ratio(w.lower(), v.lower()), fuzz.ratio(stem(w), stem(v.lower())))
                    cw = set(words_of(c.name))
                    sc += (5 if cw & set(s.content) else 0) + (3 if cw <= set(s.content) else 0)
                    if sc >= 85 and (best is None or sc > best[0]):
                        best = (sc, name, c.name, v)
            if best:
                out.append((best[1], best[2], best[3], any(x in s.negated for x in w.split())))
                done |= set(w.split()) | {w}
                continue
        words = [w for w in words if w not in done]
        grounded = {o[2].lower() for o in out if isinstance(o[2], str)}
        rest = [w for w in words if w.lower() not in grounded and not any(fuzz.ratio(w, g) >= 85 for g in grounded)]
        # ask the data: string columns named in the question first, then columns of tables the
        # question names; a column whose annotated enum lacks the word is not asked
        tries = 0
        content = set(s.content)
        named_tables = {x for name in tables for x in tokens(name)}
        for w in rest:
            if len(w) < 3 or (w.endswith(("ed", "ing")) and w not in s.quoted) or \
                    (w not in s.quoted and (w in named_tables or stem(w) in named_tables)):
                continue
            cands = []
            for ti, (name, c) in enumerate(texts):
                if c.family != "text" or (c.idlike and not s.quoted) or c.enum:
                    continue
                named = len(set(words_of(c.name)) & content)
                table_named = len(tokens(name) & (content | {stem(x) for x in content}))
                cands.append((-named, -table_named, -int(bool(c.samples or c.role == "dimension")), ti, name, c.name))
            cands.sort()
            probe = w if len(w) <= 5 else stem(w)[: max(4, len(stem(w)) - 2)]
            for *_, name, cname in cands[:2]:
                if tries >= 3:
                    break
                t = yield from self.call("get_column_values", {"table": name, "column": cname, "query": probe,
                                                               "limit": 20})
                tries += 1
                if t is None or t.is_error or not t.result:
                    continue
                match = None
                for x in t.result.get("values") or []:
                    v = x.get("value")
                    if isinstance(v, str) and not anchor.verb_not_value(s, w, v):
                        score = max(fuzz.ratio(w.lower(), v.lower()), fuzz.partial_ratio(stem(w), v.lower()))
                        if score >= 80 and (match is None or score > match[0]):
                            match = (score, v)
                if match:
                    out.append((name, cname, match[1], w in s.negated))
                    break
        return out

    # ------------------------------------------------------------ time
    def time_column(self, table: str, metric: dict[str, Any] | None) -> Col | None:
        t = self.k.table(table)
        if metric and metric.get("time_column") and metric["time_column"] in t.columns:
            return t.columns[metric["time_column"]]
        qwords = set(self.s.content) if self.s else set()
        best, best_key = None, None
        for c in t.columns.values():
            if c.family not in ("day", "ts"):
                continue
            near = sum(1 for w in tokens(c.name) for x in qwords if len(w) >= 4 and len(x) >= 4 and w[:4] == x[:4])
            key = (3 * near + 2 * int(c.name in t.partition_by) + 2 * int(c.role == "time")
                   + int(c.family == "day") - 2 * int("valid" in tokens(c.name)), c.name)
            if best_key is None or key > best_key:
                best, best_key = c, key
        return best

    def fiscal_table(self) -> str | None:
        for name, t in self.k.tables.items():
            fis = [c for c in t.columns.values() if "fiscal" in tokens(c.name)]
            days = [c for c in t.columns.values() if c.family == "day"]
            if len(fis) >= 2 and days and (not t.grain_keys or t.grain_keys[0] in t.columns):
                return name
        return None

    def fiscal_cols(self, table: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for unit, alts in FISCAL_UNITS.items():
            for c in self.k.table(table).columns.values():
                tk = tokens(c.name)
                if "fiscal" in tk and any(a in tk for a in alts) and c.family == "num" and len(tk - {"fiscal", "s"}) <= 2:
                    if unit == "year" and len(words_of(c.name)) > 2:
                        continue
                    out.setdefault(unit, c.name)
        return out

    def resolve_fiscal(self) -> Generator[Step, Turn, dict[str, Any] | None]:  # noqa: C901 - one generator of the agent's scripted tool calls: the steps, and the eval's call counts, stay in order
        """Dates and fiscal numbers of a fiscal window, read from the calendar table."""
        s = self.s
        assert s is not None
        dd = self.fiscal_table()
        if dd is None:
            t = yield from self.call("search_tables", {"query": "fiscal calendar date", "limit": 5})
            if t is None or t.is_error or not t.result:
                return None
            for h in t.result.get("tables") or []:
                if "fiscal" in (h.get("description") or "").lower() or "date" in tokens(h["name"]) or \
                        "calendar" in (h.get("description") or "").lower():
                    yield from self.describe(h["name"])
                    if self.fiscal_table():
                        break
            dd = self.fiscal_table()
            if dd is None:
                return None
        ti = self.k.table(dd)
        key = next((k for k in ti.grain_keys if k in ti.columns and ti.columns[k].family == "day"), None) or \
            next(c.name for c in ti.columns.values() if c.family == "day")
        fc = self.fiscal_cols(dd)
        conds: list[Node] = []
        for unit, v in s.window.fiscal.items():
            if unit in fc:
                conds.append(exp.EQ(this=col(fc[unit]), expression=lit(v)))
        if s.window.fiscal_rel is not None:
            unit = s.window.fiscal_rel
            group = [fc[u] for u in ("year", unit) if u in fc]
            group = list(dict.fromkeys(group))
            if not group:
                return None
            tup = exp.Tuple(expressions=[col(g) for g in group])
            anchor: Node = day(self.today)
            if s.window.fiscal_rel_offset < 0:
                start_cur = exp.select(exp.func("min", col(key))).from_(q(dd)).where(
                    exp.In(this=tup.copy(), query=exp.select(*[col(g) for g in group]).from_(q(dd)).where(
                        exp.EQ(this=col(key), expression=anchor)).subquery()))
                anchor = exp.Sub(this=start_cur.subquery(), expression=exp.Interval(this=lit("1"), unit=exp.var("DAY")))
            if s.window.fiscal:  # "period 3" of the current year: only the year comes from today
                group = [fc["year"]] if "year" in fc and "year" not in s.window.fiscal else []
                tup = exp.Tuple(expressions=[col(g) for g in group])
            if group:
                conds.append(exp.In(this=tup, query=exp.select(*[col(g) for g in group]).from_(q(dd)).where(
                    exp.EQ(this=col(key), expression=anchor)).subquery()))
        if not conds:
            return None
        sel = [exp.func("min", col(key)).as_("lo"), exp.func("max", col(key)).as_("hi")]
        for unit, c in fc.items():
            sel += [exp.func("min", col(c)).as_(f"min_{unit}"), exp.func("max", col(c)).as_(f"max_{unit}")]
        query = exp.select(*sel).from_(q(dd)).where(exp.and_(*conds))
        r = yield from self.call("run_sql", {"sql": query.sql("duckdb")})
        if r is None or r.is_error or not r.result or not r.result.get("rows"):
            return None
        row = dict(zip([c["name"] for c in r.result["columns"]], r.result["rows"][0], strict=False))
        if row.get("lo") is None:
            raise Failed(fiscal_gap_reason(s.window, dd))
        lo = dt.date.fromisoformat(str(row["lo"])[:10])
        hi = dt.date.fromisoformat(str(row["hi"])[:10]) + dt.timedelta(days=1)
        if s.window.fiscal_rel is not None and s.window.fiscal_rel_offset == 0 and not s.window.fiscal:
            hi = min(hi, self.today + dt.timedelta(days=1))
        return {"start": lo, "end": hi, "units": {u: (row.get(f"min_{u}"), row.get(f"max_{u}")) for u in fc}}

    # ------------------------------------------------------------ composing
    def related(self, main: str) -> list[str]:
        t = self.k.table(main)
        return [r["to"] for r in t.relationships if r.get("to")]

    def placed(self, tables: list[str], words: set[str]) -> set[str]:
        """Question words that name a column exactly, or a known value of a column the question
        names (or of the only column that has it)."""
        out = set()
        content = set(self.s.content) if self.s else set()
        holders: dict[str, list[set[str]]] = {}
        for name in tables:
            for c in self.k.table(name).columns.values():
                ct = set(words_of(c.name))
                out |= {w for w in words if ct == {w} or ct == {stem(w)}}
                for v in c.enum + c.samples:
                    if isinstance(v, str):
                        for w in words:
                            if w == v.lower() or stem(w) == stem(v.lower()):
                                holders.setdefault(w, []).append(ct)
        for w, cts in holders.items():
            if any(ct <= content for ct in cts):
                out.add(w)
        return out

    def reach(self, main: str, words: set[str]) -> Generator[Step, Turn, list[str]]:
        """Tables to look in for dimensions and literals: main, then related tables (breadth first,
        those the question's words point at first), described while some word is not placed."""
        tables = [main]
        queue = list(self.related(main))
        seen = set(tables)
        while queue:
            unplaced = words - self.placed(tables, words) - anchor.held(self.k, tables, words)
            if not unplaced or self.used >= self.budget - RESERVE - 3:
                break
            queue.sort(key=lambda r: -len(expand(unplaced) & (tokens(r) | self.k.table(r).text_words())))
            r = queue.pop(0)
            if r in seen:
                continue
            seen.add(r)
            if not (yield from self.described(r)):
                continue
            tables.append(r)
            queue += [x for x in self.related(r) if x not in seen]
        # bare catalogs have no relationships: use search hits whose names the question mentions
        if len(tables) == 1:
            for h in self.k.hits[:8]:
                name = h["name"]
                if name in tables or self.k.table(name).deprecated:
                    continue
                if expand(words) & tokens(name) and self.used < self.budget - RESERVE - 3:
                    ok = yield from self.describe(name)
                    if ok and self.shares_key(main, name):
                        tables.append(name)
        return tables

    def shares_key(self, a: str, b: str) -> list[tuple[str, str]]:
        ta, tb = self.k.table(a), self.k.table(b)
        out = []
        for c in ta.columns.values():
            if c.idlike and c.name in tb.columns and tb.columns[c.name].family == c.family:
                out.append((c.name, c.name))
        return out[:1]

    def compose(self, main: str, metric: dict[str, Any] | None) -> Generator[Step, Turn, str]:  # noqa: C901 - one generator of the agent's scripted tool calls: the steps, and the eval's call counts, stay in order
        s = self.s
        assert s is not None
        mcol = None if metric or self.rewritten else self.measure_column(main, set(s.measure))
        if mcol is not None and s.agg in ("count", "count_distinct") and not (mcol.words & expand(set(s.measure))):
            mcol = None  # "how many rides": count the rows, not a column the description mentions
        used: set[str] = set()
        if mcol is not None:
            used |= mcol.words | set(words_of(mcol.description))
        if metric:
            used |= set(words_of(metric["name"].rsplit(".", 1)[-1]))
            used |= {w for x in metric.get("synonyms") or [] for w in words_of(x)}
            used |= set(words_of(str(metric.get("description") or "")))
        used |= tokens(main) | (self.k.table(main).text_words() & set(s.measure))
        used = used | {stem(w) for w in used}
        used -= {x for w in anchor.enum_words(self.k, s, main, self.naming(main, mcol, metric)) for x in (w, stem(w))}
        words = {w for w in s.content if w not in used and stem(w) not in used}
        words |= {v for v in s.quoted if anchor.is_code(v)}
        tables = yield from self.reach(main, words)
        dims: list[tuple[str, str]] = []
        for d in s.dims:
            found = self.find_dim(d, tables)
            dims += [x for x in found if x not in dims]
            if found:
                used |= set(d)
        codes = yield from anchor.ground_codes(self, tables)
        lits = codes + (yield from self.ground_literals(tables, used | {w for d in s.dims for w in d}))
        lits, valued = yield from subset.ground(self, tables, lits)
        if metric is None and not self.rewritten and (again := subset.repick(self, main, valued)):
            metric, mcol = again, None
        if mcol is not None and subset.counts_rows(s, valued, mcol, self.k.table(main)):
            mcol = None  # "how many <...> redemptions": count the rows of that value
        fis = None
        if s.window.fiscal or s.window.fiscal_rel:
            fis = yield from self.resolve_fiscal()
        start, end = (fis["start"], fis["end"]) if fis else (s.window.start, s.window.end)
        tcol = self.time_column(main, metric)
        why = yield from check_window(self, main, tcol, start, end)
        if why:
            raise Failed(why)
        fiscal_conds: list[Node] = []
        if fis and tcol is None:  # a table at a fiscal grain: filter its own fiscal columns
            for unit, c in self.fiscal_cols(main).items():
                lo, hi = fis["units"].get(unit, (None, None))
                if lo is not None:
                    fiscal_conds.append(exp.Between(this=col(c, "t0"), low=lit(lo), high=lit(hi)))
            start = end = None
        if metric is not None:  # the question's value replaces the metric's filter on the same column
            metric, lits, rew = subset.reconcile(metric, lits, self.k.table(main))
            self.rewritten = rew or self.rewritten
        if metric is not None and any(isinstance(v, str) and f"'{v}'" in str(metric.get("filter") or "")
                                      for _t, _c, v, _n in lits):
            metric = None  # the question asks for rows the metric's filter leaves out: count them directly
            mcol = self.measure_column(main, set(s.measure))
            if mcol is not None and not (mcol.words & expand(set(s.measure))):
                mcol = None
        if metric is not None and fis and not metric.get("time_column"):
            extra = []
            for unit, c in self.fiscal_cols(main).items():
                lo, hi = fis["units"].get(unit, (None, None))
                if lo is not None:
                    extra.append(f"{_ident(c)} BETWEEN {lit(lo).sql('duckdb')} AND {lit(hi).sql('duckdb')}")
            self.metric_where = extra
        if metric is not None:
            sql = yield from self.via_metric(metric, dims, lits, start, end)
            if sql:
                return sql
            mcol = self.measure_column(main, set(s.measure))
            if mcol is None and s.agg not in ("count", "count_distinct"):
                raise Failed(f"the metric {metric['name']} gave an error and no column holds the measure")
        sql = yield from self.via_sql(main, mcol, dims, lits, start, end, tcol, fiscal_conds)
        return sql

    def naming(self, main: str, mcol: Col | None, metric: dict[str, Any] | None) -> set[str]:
        """Words that name the measure itself: the table, the measure column, the metric and its synonyms."""
        out = tokens(main) | (mcol.words if mcol is not None else set())
        if metric:
            out |= set(words_of(metric["name"].rsplit(".", 1)[-1]))
            out |= {w for x in metric.get("synonyms") or [] for w in words_of(x)}
        return out

    def via_metric(self, metric: dict[str, Any], dims: list[tuple[str, str]], lits: list[Lit],
                   start: dt.date | None, end: dt.date | None) -> Generator[Step, Turn, str | None]:
        s = self.s
        assert s is not None
        main = metric["table"]
        group = [c if t == main else f"{t.rsplit('.', 1)[-1]}.{c}" for t, c in dims]
        conds = []
        for t, c, v, neg in lits:
            ref = c if t == main else f"{t.rsplit('.', 1)[-1]}.{c}"
            conds.append(f"{_ident(ref)} IS {'NOT ' if neg else ''}NULL" if v == subset.NULL else
                         f"{_ident(ref)} {'<>' if neg else '='} {lit(v).sql('duckdb')}")
        for t in sorted({main} | {t for t, _ in dims} | {t for t, *_ in lits}):
            for b in self.row_filters(t):
                ref = b if t == main else f"{t.rsplit('.', 1)[-1]}.{b}"
                conds.append(_ident(ref))
        conds += self.metric_where
        args: dict[str, Any] = {"metric": metric["name"], "group_by": group, "limit": 1000}
        if conds:
            args["where"] = " AND ".join(conds)
        if (start or end) and metric.get("time_column"):
            args["time_range"] = [start.isoformat() if start else None, end.isoformat() if end else None]
        if self.daily_avg or self.ratio_metrics:
            return (yield from derived.via_metrics(self, args, len(group), metric))
        r = yield from self.call("query_metric", args, essential=True)
        if r is None or r.is_error or not r.result:
            return None
        sql = str(r.result["sql"])
        if s.limit:
            tree: Node = parse_one(sql, read="duckdb")
            tree.set("order", None)
            tree = tree.order_by(exp.Ordered(this=exp.Literal.number(len(group) + 1), desc=s.desc), copy=False)
            tree = tree.limit(s.limit, copy=False)
            sql = tree.sql("duckdb")
        return sql

    def row_filters(self, table: str) -> list[str]:
        """Boolean columns to filter `table` on (suggested by findings, or its current-row flag), only
        those the table has: a suggestion parsed from another table's finding never names a column
        the statement cannot bind."""
        cols = self.k.table(table).columns
        return sorted(b for b in self.k.bool_filters(table) | self.current_flag(table) if b in cols)

    def current_flag(self, table: str) -> set[str]:
        """A versioned (SCD2) table's current-row flag, unless the question asks about the past. Versioned
        is read from the schema: a boolean column named current beside a validity range (a date or time
        column named valid)."""
        s = self.s
        if s is None or s.as_of_event:
            return set()
        t = self.k.table(table)
        versioned = any(c.family in ("day", "ts") and "valid" in tokens(c.name) for c in t.columns.values())
        out = set()
        for c in t.columns.values():
            if c.family == "bool" and "current" in tokens(c.name) and versioned:
                out.add(c.name)
        return out

    def via_sql(self, main: str, mcol: Col | None, dims: list[tuple[str, str]], lits: list[Lit],  # noqa: C901 - one generator of the agent's scripted tool calls: the steps, and the eval's call counts, stay in order
                start: dt.date | None, end: dt.date | None, tcol: Col | None,
                fiscal_conds: list[Node]) -> Generator[Step, Turn, str]:
        s = self.s
        assert s is not None
        t0 = self.k.table(main)
        aliases = {main: "t0"}
        joins: list[Node] = []
        need = [t for t, _ in dims] + [t for t, *_ in lits]
        for other in dict.fromkeys(need):
            if other in aliases:
                continue
            j = yield from self.join(main, other, aliases)
            if j is None:
                raise Failed(f"no way to join {main} to {other}")
            joins += j
        sel: list[Node] = [col(c, aliases[t]).as_(c if i == 0 or c not in [x for _, x in dims[:i]] else f"{c}_{i}")
                                     for i, (t, c) in enumerate(dims)]
        conds: list[Node] = list(fiscal_conds)
        for t, c, v, neg in lits:
            e = col(c, aliases[t])
            cond: Node = e if isinstance(v, bool) and v else exp.EQ(this=e, expression=lit(v))
            if v == subset.NULL:
                cond = exp.Is(this=e, expression=exp.Null())
            conds.append(exp.Not(this=cond) if neg else cond)
        for t in aliases:
            conds += [col(b, aliases[t]) for b in self.row_filters(t)]
        if tcol is not None and (start or end):
            tc: Node = col(tcol.name, "t0")
            if tcol.family == "ts":
                tc = exp.Cast(this=tc, to=exp.DataType.build("DATE"))
            if start:
                conds.append(exp.GTE(this=tc.copy(), expression=day(start)))
            if end:
                conds.append(exp.LT(this=tc.copy(), expression=day(end)))
        dim = t0.columns.get(str(mcol.additivity.get("non_additive_dimension"))) \
            if mcol is not None and mcol.semi_additive else None
        if dim is not None and mcol is not None:  # annotated semi-additive: one row of its dimension, not a sum
            agg = WINDOW_AGG.get(str(mcol.additivity.get("window") or "last"), "max")
            inner = exp.select(exp.func(agg, col(dim.name))).from_(q(main))
            if dim is tcol and start:
                inner = inner.where(exp.GTE(this=col(dim.name), expression=day(start)))
            if dim is tcol and end:
                inner = inner.where(exp.LT(this=col(dim.name), expression=day(end)))
            conds.append(exp.EQ(this=col(dim.name, "t0"), expression=inner.subquery()))
        measure = self.measure_expr(main, mcol)
        if self.rewritten is not None and mcol is None:
            measure = self.rewritten[0]
            if self.rewritten[1] is not None:
                conds.append(self.rewritten[1])
        sel.append(measure.as_("value"))
        tree = exp.select(*sel).from_(exp.alias_(q(main), "t0", table=True))
        for j in joins:
            tree = tree.join(j, copy=False)
        if conds:
            tree = tree.where(exp.and_(*conds), copy=False)
        if dims:
            tree = tree.group_by(*[exp.Literal.number(i + 1) for i in range(len(dims))], copy=False)
            if s.limit:
                tree = tree.order_by(exp.Ordered(this=exp.Literal.number(len(dims) + 1), desc=s.desc), copy=False)
                tree = tree.limit(s.limit, copy=False)
            else:
                tree = tree.order_by(*[exp.Literal.number(i + 1) for i in range(len(dims))], copy=False)
        sql = tree.sql("duckdb")
        r = yield from self.call("run_sql", {"sql": sql, "limit": 5}, essential=True)
        if r is not None and not r.is_error:
            return sql
        if r is None:
            raise Failed("tool-call budget exhausted before the SQL could be checked")
        fixed = self.repair(sql, r.text)
        if fixed is None:
            raise Failed("the SQL gave an error and no repair applies: " + r.text[:200])
        r2 = yield from self.call("run_sql", {"sql": fixed, "limit": 5}, essential=True)
        if r2 is None or r2.is_error:
            raise Failed("the repaired SQL gave an error too")
        return fixed

    def measure_expr(self, main: str, mcol: Col | None) -> exp.Expression:
        s = self.s
        assert s is not None
        t = self.k.table(main)
        if mcol is None:
            keys = [k for k in t.grain_keys if k in t.columns]
            if s.agg == "count_distinct" or (len(keys) == 1 and s.agg == "count"):
                target = keys[0] if keys else next((c.name for c in t.columns.values() if c.idlike), None)
                if target:
                    return exp.Count(this=exp.Distinct(expressions=[col(target, "t0")]))
            return exp.Count(this=exp.Star())
        e: Node = col(mcol.name, "t0")
        agg = {"avg": "avg", "count": "sum", "count_distinct": "sum", "max": "max", "min": "min"}.get(s.agg, "sum")
        if s.agg == "count_distinct" or (s.agg == "count" and mcol.idlike):
            return exp.Count(this=exp.Distinct(expressions=[e]))
        out: Node = exp.func(agg, e)
        unit = (mcol.unit or "").lower()
        cents = "cent" in unit or (not unit and "cents" in tokens(mcol.name))
        if cents and not s.in_cents:
            out = exp.Div(this=out, expression=exp.Literal.number("100.0"))
        return out

    def join(self, main: str, other: str, aliases: dict[str, str]) -> Generator[Step, Turn, list[Node] | None]:
        r = yield from self.call("find_join_path", {"from_table": main, "to_table": other})
        joins: list[Node] = []
        if r is not None and not r.is_error and r.result and r.result.get("hops"):
            for h in r.result["hops"]:
                src, dst = h["from_table"], h["to_table"]
                if dst in aliases and src in aliases:
                    continue
                new, old = (dst, src) if src in aliases else (src, dst)
                aliases[new] = f"t{len(aliases)}"
                on: list[Node] = []
                pairs = h["on"]
                if (src, dst) in self.k.join_keys:      # a finding says the declared key is gone: its suggestion
                    pairs = [self.k.join_keys[src, dst]]
                elif (dst, src) in self.k.join_keys:
                    pairs = [self.k.join_keys[dst, src][::-1]]
                for a, b in pairs:
                    on.append(exp.EQ(this=col(a, aliases[src]), expression=col(b, aliases[dst])))
                cond = h.get("condition")
                if cond and not (self.s and self.s.as_of_event):
                    ctree = parse_one(cond, read="duckdb")
                    for c in ctree.find_all(exp.Column):
                        c.set("table", exp.to_identifier(aliases[dst if c.name in self.k.table(dst).columns or
                                                                     not self.k.table(dst).columns else src]))
                        c.set("db", None)
                        c.set("catalog", None)
                    on.append(ctree)
                for b in sorted(self.k.bool_filters(new)):
                    if b in self.k.table(new).columns and not cond:
                        on.append(col(b, aliases[new]))
                joins.append(exp.Join(this=exp.alias_(q(new), aliases[new], table=True), on=exp.and_(*on)))
            return joins
        pairs = self.shares_key(main, other) or self.shares_key(other, main)
        if not pairs:
            return None
        aliases[other] = f"t{len(aliases)}"
        conds: list[Node] = [exp.EQ(this=col(a, "t0"), expression=col(b, aliases[other])) for a, b in pairs]
        conds += [col(b, aliases[other]) for b in self.row_filters(other)]
        return [exp.Join(this=exp.alias_(q(other), aliases[other], table=True), on=exp.and_(*conds))]

    def repair(self, sql: str, error: str) -> str | None:
        m = re.search(r"did you mean '([^']+)'", error)
        bad = re.search(r'(?:column|Column)\s+"?(\w+)"?\s+not found|Referenced column "?(\w+)"?', error)
        if m and bad:
            old = bad.group(1) or bad.group(2)
            return re.sub(r'"%s"' % re.escape(old), '"%s"' % m.group(1), sql)
        for (_t, old), new in self.k.renamed.items():
            if old in sql:
                return sql.replace(f'"{old}"', f'"{new}"')
        return None


def _ident(ref: str) -> str:
    return ".".join(f'"{p}"' for p in ref.split("."))
