"""The offline agent's rules (HARNESS.md, Agents), checked on its source: no table, column or value
name of the Acme lake anywhere under eval/agents/, no branch on the condition, no access to a
question's tags, tables or gold SQL (nothing imported from eval.harness or eval.lake, no files read).

Names come from eval/lake/tables.py (every table and column, including the schemas the history
moves to) and the enum values from the lake's column annotations (eval/lake/annotations.py, the
enums LAKE.md lists)."""

from __future__ import annotations

import ast
import os
import re

import pyarrow as pa

from eval.lake import annotations as A
from eval.lake import tables as T

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENTS = os.path.join(ROOT, "eval", "agents")
OFFLINE = os.path.join(AGENTS, "offline")

# Generic English (or SQL) words that happen to be a column or value name of the lake. Each is
# allowed only inside string literals, where the agent needs the plain word:
# (docstrings are prose: they are checked for compound names only)
ALLOW = {
    "date",      # the SQL type name (DATE columns are found by their type, never by name)
    "status",    # a field of the MCP tools' output schema (warnings, findings, metrics), not the lake's column
    "units",     # the lexicon's generic synonym of quantity (revenue~sales style)
    "quantity",  # the lexicon's generic synonym of units
    "failed",    # plain English in error messages (the loop's "pin_snapshot failed")
    "other",     # plain English ("other than" as a negation)
    "reason",    # the harness's own `abstain(reason)` tool and Abstain.reason (HARNESS.md, Agents)
    "search",    # the verb of the OpenAI agent's prompt ("search for candidate tables"), as in search_tables
    "partial",   # plain English in the OpenAI agent's prompt ("a partial latest period")
}
# HARNESS.md's own grep
HARNESS_GREP = re.compile(r"fct_|dim_(?:date|store|product|customer)|agg_daily|agg_weekly|rpt_finance|sales_daily|"
                          r"etl_load_log|map_store_code|net_line_cents|loyalty_tier")
CONDITION_WORDS = {"bare", "enriched", "stale+detect", "enriched+detect", "hide_annotations", "hide_findings",
                   "CONDITIONS"}  # (a join hop's `condition` field is the tool's schema, not the eval condition)
ALLOWED_IMPORTS = {"__future__", "calendar", "datetime", "re", "dataclasses", "typing", "collections.abc",
                   "rapidfuzz", "sqlglot", "eval.agents.loop", "eval.agents.offline", "eval.agents.offline.slots",
                   "eval.agents.offline.know", "eval.agents.offline.agent"}
ALLOWED_IMPORTS |= {"eval.agents.offline.scope",  # what the catalog cannot answer (abstentions)
                    "eval.agents.offline.anchor", "eval.agents.offline.derived", "eval.agents.offline.subset"}


def lake_names() -> tuple[set[str], set[str]]:
    """(table names incl. short and namespace-qualified, column names) of the lake."""
    tables, columns = set(), set()
    for t in T.TABLES.values():
        tables |= {t.name, t.name.split(".")[1], t.full}
        columns |= {c for c, _ in t.columns}
    for value in vars(T).values():  # the schemas the history moves to
        if isinstance(value, list) and value and all(isinstance(x, tuple) and len(x) == 2 and
                                                     isinstance(x[1], pa.DataType) for x in value):
            columns |= {c for c, _ in value}
    return tables, columns


def lake_values() -> set[str]:
    vals: set[str] = set()

    def add(fields: object) -> None:
        if isinstance(fields, dict):
            for key in ("enum", "sample_values"):
                for v in fields.get(key) or []:
                    if isinstance(v, str):
                        vals.add(v.lower())
    for fields in A.COLUMN_DOCS.values():
        add(fields)
    for adds in A.ADDITIONS.values():
        for _t, _c, fields in adds:
            add(fields)
    for u in A.UPDATES:
        if u.what[0] == "column" and u.what[-1] in ("enum", "sample_values") and isinstance(u.value, list):
            vals |= {str(v).lower() for v in u.value}
    vals |= {"web", "app"}  # sessions' channel enum (LAKE.md), not annotated
    return vals


def sources() -> dict[str, str]:
    out = {}
    for d, _, files in os.walk(AGENTS):
        for f in files:
            if f.endswith(".py"):
                p = os.path.join(d, f)
                out[os.path.relpath(p, ROOT)] = open(p, encoding="utf-8").read()
    return out


def offline_sources() -> dict[str, str]:
    return {p: s for p, s in sources().items() if p.startswith(os.path.join("eval", "agents", "offline"))}


def strings(tree: ast.AST, docstrings: bool = True) -> list[str]:
    docs = set()
    if not docstrings:
        for n in ast.walk(tree):
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body and \
                    isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant):
                docs.add(id(n.body[0].value))
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docs]


def identifiers(tree: ast.AST) -> set[str]:
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, ast.keyword) and n.arg:
            out.add(n.arg)
    return out


def test_the_name_lists_are_complete():
    tables, columns = lake_names()
    values = lake_values()
    assert len([t for t in tables if t.count(".") == 1]) == 22
    assert {"net_line_cents", "net_revenue_usd", "is_current", "customer_uuid", "region", "date"} <= columns
    assert {"cancelled", "refunded", "partially_refunded", "captured", "northeast", "gold", "web"} <= values
    assert sources(), "no agent source found"


def test_no_lake_name_in_the_agents_code():
    tables, columns = lake_names()
    values = lake_values()
    compound = {n for n in tables | columns | values if "_" in n or "." in n}  # values such as in_transit too
    single = {n.lower() for n in (tables | columns | values) if "_" not in n and "." not in n} - ALLOW
    problems = []
    for path, src in sources().items():
        for m in HARNESS_GREP.finditer(src):
            problems.append(f"{path}: {m.group(0)!r} (HARNESS.md grep)")
        for name in compound:  # anywhere: code, comments, strings
            if re.search(r"(?<![\w.])" + re.escape(name) + r"(?![\w])", src):
                problems.append(f"{path}: lake name {name!r}")
        tree = ast.parse(src)
        for s in strings(tree, docstrings=False):
            for w in re.findall(r"[a-z0-9]+(?:[-_][a-z0-9]+)*", s.lower()):
                if w in single or w in values - ALLOW:
                    problems.append(f"{path}: lake name or value {w!r} in the string {s[:60]!r}")
        for ident in identifiers(tree):
            if ident in compound:
                problems.append(f"{path}: identifier {ident!r} is a lake name")
    assert not problems, "\n".join(sorted(set(problems)))


def test_the_name_check_catches_a_lake_name(tmp_path):
    """The check above can fail: a string naming a column or a value is caught."""
    tables, columns = lake_names()
    values = lake_values()
    single = {n.lower() for n in (tables | columns | values) if "_" not in n and "." not in n} - ALLOW
    src = 'X = "filter region = northeast"\nY = "sum(net_line_cents)"\n'
    words = [w for s in strings(ast.parse(src)) for w in re.findall(r"[a-z0-9]+(?:[-_][a-z0-9]+)*", s.lower())]
    assert "region" in single and "northeast" in values and "net_line_cents" in columns
    assert {"region", "northeast", "net_line_cents"} <= set(words)


def test_the_agent_never_sees_the_condition_tags_tables_or_gold():
    problems = []
    for path, src in offline_sources().items():
        tree = ast.parse(src)
        for n in ast.walk(tree):
            if isinstance(n, ast.Import):
                mods = [a.name for a in n.names]
            elif isinstance(n, ast.ImportFrom):
                mods = [n.module or ""]
            else:
                mods = []
            for m in mods:
                if m not in ALLOWED_IMPORTS and not any(m.startswith(a + ".") for a in ("rapidfuzz", "sqlglot")):
                    problems.append(f"{path}: imports {m}")
                if m.startswith(("eval.harness", "eval.lake")):
                    problems.append(f"{path}: imports {m} (questions, tags, gold or the lake)")
            if isinstance(n, ast.Call):
                fn = n.func
                name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
                if name in ("open", "read_text", "read_bytes", "load_questions", "getenv", "__import__",
                            "import_module", "exec", "eval"):
                    problems.append(f"{path}: calls {name}()")
        for s in strings(tree):
            for w in CONDITION_WORDS:
                if re.search(r"(?<![\w+])" + re.escape(w) + r"(?![\w+])", s):
                    problems.append(f"{path}: names the condition word {w!r}")
        for ident in identifiers(tree):
            if ident in CONDITION_WORDS or ident in ("tags", "gold_sql", "gold", "environ"):
                problems.append(f"{path}: identifier {ident!r}")
    assert not problems, "\n".join(problems)


def test_offline_agent_implements_the_protocol():
    from eval.agents.loop import Agent
    from eval.agents.offline import OfflineAgent

    a = OfflineAgent()
    assert isinstance(a, Agent)
    assert a.name == "offline" and a.usage() == (0, 0)


# ---------------------------------------------------------------- no copied annotation text, no prose read
PHRASE = 4   # a run of this many words copied from the lake's annotation text (or a public question) is a copy
GENERIC_PHRASES = {("at", "the", "time", "of")}  # plain English that a public question happens to use too
PROSE_FIELDS = {"suggestion", "message"}         # a finding's / warning's text: for people, never parsed


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _phrases(texts: list[str], n: int = PHRASE) -> set[tuple[str, ...]]:
    out = set()
    for t in texts:
        w = _words(t)
        out |= {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}
    return out - GENERIC_PHRASES


def annotation_texts() -> list[str]:
    """Every text the Acme lake's annotations carry (descriptions, grains, instructions, metric and
    verified-query texts, the updates and the wrong-from-start controls)."""
    out: list[str] = []

    def walk(v: object) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
    walk([A.INSTRUCTIONS, A.TABLE_DOCS, A.COLUMN_DOCS, A.RELATIONSHIPS, A.METRICS, A.VERIFIED,
          [u.value for u in A.UPDATES], A.ADDITIONS, A.WRONG_FROM_START])
    return out


def public_questions() -> list[str]:
    from eval.harness.questions import load_questions
    return [q.question for q in load_questions(os.path.join(ROOT, "eval", "questions", "public.yaml"))]


def copied(src: str, phrases: set[tuple[str, ...]]) -> list[str]:
    """Phrases of `phrases` that a string literal (docstrings included) or a comment of `src` contains."""
    import io
    import tokenize
    texts = strings(ast.parse(src))
    texts += [t.string for t in tokenize.generate_tokens(io.StringIO(src).readline) if t.type == tokenize.COMMENT]
    out = []
    for t in texts:
        w = _words(t)
        out += [" ".join(w[i:i + PHRASE]) for i in range(len(w) - PHRASE + 1) if tuple(w[i:i + PHRASE]) in phrases]
    return out


def reads_prose(src: str) -> list[str]:
    """Places where code reads a finding's or warning's prose: a `.suggestion` / `.message` attribute, or
    the key "suggestion" / "message" (a subscript, `.get(...)`, or any other string constant)."""
    out = []
    for n in ast.walk(ast.parse(src)):
        if isinstance(n, ast.Attribute) and n.attr in PROSE_FIELDS:
            out.append(f"line {n.lineno}: .{n.attr}")
        elif isinstance(n, ast.Constant) and n.value in PROSE_FIELDS:
            out.append(f"line {n.lineno}: {n.value!r}")
    return out


def test_no_string_in_the_agent_copies_annotation_text_or_a_public_question():
    ann = _phrases(annotation_texts())
    qs = _phrases(public_questions())
    assert len(ann) > 1000 and len(qs) > 500
    problems = []
    for path, src in offline_sources().items():
        problems += [f"{path}: annotation text {p!r}" for p in copied(src, ann)]
        problems += [f"{path}: public question text {p!r}" for p in copied(src, qs)]
    assert not problems, "\n".join(sorted(set(problems)))


def test_the_copy_check_catches_a_copied_phrase():
    ann = _phrases(annotation_texts())
    qs = _phrases(public_questions())
    src = ('AVOID = re.compile(r"Not for reporting: use core")\n'
           'def f():\n    """As in "How many shipments are still in transit?"."""\n'
           '# semi-additive: for a period take the last snapshot\n')
    assert {"not for reporting use", "for reporting use core", "take the last snapshot"} <= set(copied(src, ann))
    assert {"how many shipments are", "shipments are still in", "are still in transit"} <= set(copied(src, qs))
    assert copied('X = "bikes parked at the north dock"\n', ann | qs) == []


def test_the_agent_never_reads_the_prose_of_a_finding_or_warning():
    problems = [f"{path}: {p}" for path, src in offline_sources().items() for p in reads_prose(src)]
    assert not problems, "\n".join(problems)


def test_the_prose_check_catches_a_read():
    src = 'def f(w, g):\n    a = w.get("suggestion")\n    b = g.message\n    return a, b, w["message"]\n'
    assert sorted(reads_prose(src)) == ["line 2: 'suggestion'", "line 3: .message", "line 4: 'message'"]
    assert reads_prose('def f(w):\n    return w.get("fixes")\n') == []


def cryptic_names() -> tuple[set[str], set[str]]:
    """(names, codes) of the cryptic variant: every written namespace, table and column of names.json
    (the built lake's when SEMCAT_EVAL_LAKE_CRYPTIC is set, else the seed-7 Naming the default build
    writes), and every code of a categorical value."""
    import json

    from eval.lake.naming import NAMES_FILE, Naming

    pre = os.environ.get("SEMCAT_EVAL_LAKE_CRYPTIC")
    if pre and os.path.exists(os.path.join(pre, NAMES_FILE)):
        with open(os.path.join(pre, NAMES_FILE), encoding="utf-8") as fh:
            nm = Naming.from_json(json.load(fh))
    else:
        nm = Naming.cryptic(7)
    names = set(nm.namespaces.values()) | set(nm.columns.values())
    for t in nm.tables.values():
        names |= {t, t.split(".")[1], f"acme.{t}"}
    codes = {c for dom in nm.values.values() for c in dom.values()}
    return names, codes


def _cryptic_problems(srcs: dict[str, str]) -> list[str]:
    names, codes = cryptic_names()
    problems = []
    for path, src in srcs.items():
        tree = ast.parse(src)
        words = set()
        for s in strings(tree):
            words |= set(re.findall(r"[A-Za-z0-9_.]+", s))
        words |= identifiers(tree)
        for w in words:
            for part in {w, *w.split(".")}:
                if part in names:
                    problems.append(f"{path}: cryptic lake name {part!r}")
                if part in codes:
                    problems.append(f"{path}: cryptic value code {part!r}")
    return problems


def test_no_cryptic_name_or_code_in_the_agents_code():
    """The cryptic variant (eval/LAKE-cryptic.md) is not special-cased either: no written name and no
    value code of its names.json anywhere in the agents' code."""
    names, codes = cryptic_names()
    assert len(names) > 100 and len(codes) >= 50
    problems = _cryptic_problems(sources())
    assert not problems, "\n".join(sorted(set(problems)))


def test_the_cryptic_check_catches_a_name_and_a_code():
    names, codes = cryptic_names()
    col = sorted(n for n in names if "." not in n and len(n) > 4)[0]
    code = sorted(codes)[0]
    src = f'X = "SELECT sum({col}) FROM t"\nY = {code!r}\n'
    problems = _cryptic_problems({"probe.py": src})
    assert any(repr(col) in p for p in problems) and any(repr(code) in p for p in problems)
