"""What the agent has read so far: tables (columns with types, units, enums, descriptions and the
structured fields additivity / null_when, the table field not_for_reporting), relationships, metrics,
and the typed `fixes` of warnings and staleness findings, all read from MCP tool outputs.

Invariant: facts are read from structured fields only; the prose of a finding or warning (its
`message`, `suggestion`) is never read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eval.agents.offline import restate
from eval.agents.offline.slots import expand, stem, words_of

__all__ = ["Col", "TableInfo", "Knowledge", "tokens"]


def tokens(name: str) -> set[str]:
    short = name.rsplit(".", 1)[-1]
    ws = set(words_of(short))
    return ws | {stem(w) for w in ws}


@dataclass
class Col:
    name: str
    type: str
    description: str = ""
    unit: str = ""
    role: str = ""
    enum: list[Any] = field(default_factory=list)
    samples: list[Any] = field(default_factory=list)
    synonyms: list[str] = field(default_factory=list)
    status: str = ""
    additivity: dict[str, Any] = field(default_factory=dict)   # {kind, non_additive_dimension, window}
    null_when: dict[str, Any] = field(default_factory=dict)    # {state, column, values}

    @property
    def semi_additive(self) -> bool:
        return self.additivity.get("kind") == "semi_additive" and bool(self.additivity.get("non_additive_dimension"))

    @property
    def family(self) -> str:
        t = self.type.lower()
        if t.startswith("timestamp"):
            return "ts"
        if t.startswith("dat"):
            return "day"
        if t in ("string", "varchar", "text") or t.startswith("varchar"):
            return "text"
        if t.startswith("bool"):
            return "bool"
        return "num"

    @property
    def words(self) -> set[str]:
        out = tokens(self.name)
        for s in self.synonyms:
            out |= set(words_of(str(s)))
        return out

    @property
    def idlike(self) -> bool:
        ws = words_of(self.name)
        return bool(ws) and ws[-1] in ("id", "key", "sk", "uuid", "no", "code")


@dataclass
class TableInfo:
    name: str
    columns: dict[str, Col] = field(default_factory=dict)
    description: str = ""
    grain: str = ""
    grain_keys: list[str] = field(default_factory=list)
    synonyms: list[str] = field(default_factory=list)
    partition_by: list[str] = field(default_factory=list)
    relationships: list[dict[str, Any]] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    successor: str | None = None
    deprecated: bool = False
    not_for_reporting: bool = False            # the table field: read `use_instead` tables, not this one
    use_instead: list[str] = field(default_factory=list)
    described: bool = False

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    def text_words(self) -> set[str]:
        ws = set(words_of(self.description)) | set(words_of(self.grain))
        for s in self.synonyms:
            ws |= set(words_of(s))
        return ws | {stem(w) for w in ws}


class Knowledge:
    def __init__(self) -> None:
        self.tables: dict[str, TableInfo] = {}
        self.hits: list[dict[str, Any]] = []
        self.metrics: list[dict[str, Any]] = []
        self.snapshot_time: str | None = None
        self.renamed: dict[tuple[str, str], str] = {}      # (table, old column) -> new column
        self.successors: dict[str, str] = {}                # table -> successor table
        self.filters: dict[str, set[str]] = {}              # table -> boolean columns to filter on (suggested)
        self.join_keys: dict[tuple[str, str], tuple[str, str]] = {}  # (from, to) -> (from column, to column) suggested
        self.stale_targets: set[str] = set()                # "table" or "table.column" flagged stale
        self.rescaled: set[tuple[str, str]] = set()         # (table, column) whose unit changed with a rename
        self.restated: dict[tuple[str, str], list[Any]] = {}  # (table, column) -> values stored now, when the
        #   data contradicted its annotated values ([] when too many to list): they stand in for enum / samples

    def table(self, name: str) -> TableInfo:
        if name not in self.tables:
            self.tables[name] = TableInfo(name)
        return self.tables[name]

    # ------------------------------------------------------------ absorbing tool outputs
    def absorb(self, tool: str, result: dict[str, Any] | None) -> None:
        if not isinstance(result, dict):
            return
        snap = result.get("snapshot")
        if isinstance(snap, dict) and snap.get("time") and self.snapshot_time is None:
            self.snapshot_time = str(snap["time"])
        for w in result.get("warnings") or []:
            self.warning(w)
        for f in result.get("findings") or []:
            self.finding(f)
        if tool == "search_tables":
            for h in result.get("tables") or []:
                self.hits.append(h)
                t = self.table(h["name"])
                t.description = t.description or str(h.get("description") or "")
                t.grain = t.grain or str(h.get("grain") or "")
                dep = h.get("deprecated")
                if isinstance(dep, dict):
                    t.deprecated = True
                    t.successor = dep.get("successor") or t.successor
                self.not_for_reporting(t, h.get("not_for_reporting"))
                for w in h.get("warnings") or []:
                    self.warning(w)
        elif tool == "describe_table":
            self.describe(result)
            restate.distrust(self, result)
        elif tool == "list_metrics":
            self.metrics.extend(result.get("metrics") or [])

    def describe(self, r: dict[str, Any]) -> None:
        t = self.table(r["table"])
        t.described = True
        t.description = str(r.get("description") or "")
        t.grain = str(r.get("grain") or "")
        t.grain_keys = list(r.get("grain_keys") or [])
        t.synonyms = [str(s) for s in r.get("synonyms") or []]
        t.partition_by = list(r.get("partition_by") or [])
        t.relationships = list(r.get("relationships") or [])
        t.metrics = list(r.get("metrics") or [])
        dep = r.get("deprecation")
        if isinstance(dep, dict):
            t.deprecated = True
            t.successor = dep.get("successor") or t.successor
        self.not_for_reporting(t, r.get("not_for_reporting"))
        for c in r.get("columns") or []:
            t.columns[c["name"]] = Col(name=c["name"], type=str(c.get("type") or ""),
                                       description=str(c.get("description") or ""), unit=str(c.get("unit") or ""),
                                       role=str(c.get("role") or ""), enum=list(c.get("enum") or []),
                                       samples=list(c.get("sample_values") or []),
                                       synonyms=[str(s) for s in c.get("synonyms") or []],
                                       status=str(c.get("status") or ""),
                                       additivity=dict(c.get("additivity") or {}),
                                       null_when=dict(c.get("null_when") or {}))

    @staticmethod
    def not_for_reporting(t: TableInfo, v: object) -> None:
        if isinstance(v, dict):
            t.not_for_reporting = True
            t.use_instead = [str(x) for x in v.get("use_instead") or []]

    def warning(self, w: dict[str, Any]) -> None:
        table = str(w.get("table") or "")
        if w.get("kind") == "deprecated" and table:
            self.table(table).deprecated = True
        self.fixes(table, w.get("fixes") or [], w.get("status"))

    def finding(self, f: dict[str, Any]) -> None:
        self.fixes(str(f.get("target") or ""), f.get("fixes") or [], f.get("status"))

    def fixes(self, target: str, fixes: list[Any], status: object) -> None:
        """Read the typed fixes of a finding or warning on `target` (a table, or table.column): successors,
        renames (with their unit scale), join keys, boolean filters."""
        parts = target.split(".")
        table = ".".join(parts[:3]) if len(parts) >= 3 else target
        if status == "stale" and target:
            self.stale_targets.add(target)
        for fx in fixes:
            if not isinstance(fx, dict) or not isinstance(fx.get("params"), dict):
                continue
            act, p = fx.get("action"), fx["params"]
            if act == "successor" and table and isinstance(p.get("table"), str) and p["table"] != table:
                self.successors[table] = p["table"]
                self.table(table).successor = self.table(table).successor or p["table"]
                self.table(table).deprecated = True
            elif act == "rename" and table and isinstance(p.get("old"), str) and isinstance(p.get("new"), str) \
                    and p["old"] != p["new"]:
                self.renamed[(table, p["old"])] = p["new"]
                if p.get("scale"):
                    self.rescaled.add((table, p["new"]))
            elif act == "join_on" and table and all(isinstance(p.get(x), str) for x in ("from_column", "to_table",
                                                                                        "to_column")):
                self.join_keys[(table, p["to_table"])] = (p["from_column"], p["to_column"])
            elif act == "filter" and isinstance(p.get("column"), str):
                self.filters.setdefault(str(p.get("table") or table), set()).add(p["column"])

    # ------------------------------------------------------------ lookups
    def successor_of(self, name: str) -> str | None:
        return self.successors.get(name) or self.table(name).successor

    def bool_filters(self, name: str) -> set[str]:
        return set(self.filters.get(name, set()))

    def measure_overlap(self, name: str, words: set[str]) -> tuple[int, int]:
        """(matches in name/synonyms, matches in description/grain) of the measure words."""
        t = self.table(name)
        names = tokens(name) | {w for s in t.synonyms for w in words_of(s)} | {stem(w) for s in t.synonyms for w in words_of(s)}
        text = t.text_words()
        a = sum(1 for w in words if expand({w}) & names)
        b = sum(1 for w in words if expand({w}) & text)
        return a, b
