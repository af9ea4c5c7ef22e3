"""The names a build of the Acme lake writes: `plain` (LAKE.md's names, the identity) or `cryptic` (the
same business under enterprise-style abbreviations, `sd.vbak_h`, `kunnr`, with categorical values
stored as codes such as `X4`), chosen deterministically from the seed (LAKE-cryptic.md).

Invariants:
- `Naming.plain()` is the identity: every method returns its input unchanged, so the plain build is
  byte-for-byte what it was before this module existed.
- `Naming.cryptic(seed)` is a pure function of the seed. Its maps are injective: no two namespaces,
  tables (by dotted name) or columns share a cryptic name, and no cryptic name equals a plain one.
- A column name maps the same way in every table (join keys stay alike, as in SAP).
- Codes belong to a value domain named by a plain column (`home_region` shares `region`'s); a code is
  unique across all domains, so `decode` needs no column; every value the builder ever writes to a
  coded column (including `returned`, the order status before d-45) has a code.
- Identifiers are lowercase `[a-z][a-z0-9_]*`, never an SQL keyword, so SQL needs no quoting.
"""

from __future__ import annotations

import functools
import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Naming", "CODED", "DOMAINS", "NAMES_FILE", "load_names", "plain_columns", "plain_tables", "name_columns"]

NAMES_FILE = "names.json"

# value domains: plain column -> every label the builder writes (LAKE.md's enums, plus history values)
DOMAINS: dict[str, list[str]] = {
    "status": ["placed", "shipped", "delivered", "cancelled", "returned", "refunded", "partially_refunded",
               "active", "discontinued", "preorder", "captured", "failed", "voided", "success", "partial"],
    "region": ["northeast", "southeast", "midwest", "west", "online"],
    "format": ["mall", "street", "outlet", "online"],
    "category": ["apparel", "footwear", "outerwear", "accessories", "equipment", "camping"],
    "loyalty_tier": ["none", "silver", "gold", "platinum"],
    "channel": ["web", "app", "store", "marketplace", "search", "social", "email", "display", "affiliate"],
    "method": ["card", "gift_card", "paypal", "store_credit"],
    "reason": ["damaged", "wrong_size", "not_as_described", "late_delivery", "other"],
    "carrier": ["ups", "fedex", "usps"],
    "device": ["desktop", "mobile", "tablet"],
    "event_type": ["earn", "redeem", "expire", "adjust"],
}
# coded column (plain name) -> its domain
CODED: dict[str, str] = {**{c: c for c in DOMAINS}, "home_region": "region"}

NAMESPACE_POOL = ["sd", "mm", "fi", "co", "bw", "zr", "bc", "le", "pp", "qm", "ps", "hr"]
TABLE_POOL = ["vbak", "vbap", "kna1", "mara", "t001w", "bkpf", "bseg", "likp", "lips", "ekko", "ekpo", "mseg",
               "mkpf", "vbrk", "vbrp", "knvv", "marc", "mard", "tvko", "t005", "cdhd", "vbfa", "konv", "coep",
               "ce1ac", "s001", "s032", "tkvs", "stxh", "zsd01", "zmm02", "zfi03", "knkk", "bsid", "anla", "jest"]
TABLE_SFX = ["_h", "_i", "_t", "_d", "_x", "_k", "_a", ""]
COL_POOL = ["kunnr", "matnr", "werks", "vbeln", "posnr", "netwr", "erdat", "erzet", "waers", "kwmeng", "vkorg",
             "vtweg", "spart", "auart", "gbstk", "abgru", "lifnr", "bukrs", "gjahr", "monat", "belnr", "buzei",
             "dmbtr", "wrbtr", "mwsbk", "kzwi", "fkdat", "lfdat", "wadat", "vstel", "lgort", "labst", "insme",
             "menge", "meins", "brgew", "ntgew", "zterm", "zlsch", "augdt", "aedat", "ernam", "bstnk", "ihrez",
             "kdgrp", "konda", "pltyp", "land", "regio", "ort", "pstlz", "stras", "telf", "adrnr", "loevm", "sperr",
             "datab", "datbi", "kschl", "kbetr", "kpein", "prctr", "kostl", "aufnr", "vornr", "arbpl", "charg",
             "sernr", "ebeln", "ebelp", "bsart", "ekgrp", "matkl", "mtart", "mstae", "vrkme", "umrez", "lfimg",
             "fkimg", "kursk", "skfbt", "zuonr", "sgtxt", "hkont", "shkzg", "blart", "budat", "bldat", "xblnr"]
COL_SFX = ["", "", "_c", "_k", "_d", "_x", "_1", "_2", "_h", "_s"]
_CODE_PREFIX = "ABCDEFGHJKLMNPRTVWXZ"
SQL_WORDS = {"date", "time", "order", "select", "from", "where", "group", "by", "as", "on", "in", "is", "not",
              "and", "or", "case", "when", "then", "else", "end", "join", "left", "right", "full", "limit", "offset",
              "table", "values", "partition", "format", "status", "region", "channel", "over", "window", "filter"}


@functools.cache
def name_columns() -> dict[str, tuple[str, str]]:
    """Columns whose values name lake objects, as the annotations declare them: plain column ->
    (role, plain table). A `load_log` table field (eval.lake.annotations) names its log's `table_column`
    (values `ns.table`: role "table") and `partition_column` (values `YYYY-MM-DD` or
    `YYYY-MM-DD/column=value`: role "partition"). Computed once (do not modify the result). The build writes such values under the variant's names
    (`Naming.row`) and the gold translation rewrites literals compared with them (eval.lake.translate)."""
    from eval.lake.annotations import TABLE_DOCS

    out: dict[str, tuple[str, str]] = {}
    for doc in TABLE_DOCS.values():
        log = doc.get("load_log")
        if not isinstance(log, dict) or not log.get("table"):
            continue
        table = str(log["table"]).removeprefix("acme.")
        for field_, role in (("table_column", "table"), ("partition_column", "partition")):
            if isinstance(log.get(field_), str):
                out[log[field_]] = (role, table)
    return out


def plain_tables() -> list[str]:
    """Every table LAKE.md names (`ns.table`, without the catalog)."""
    from eval.lake import tables as T

    return list(T.TABLES)


def plain_columns() -> list[str]:
    """Every column name the builder ever writes, including those introduced later in the history."""
    from eval.lake import tables as T

    names: list[str] = []
    for cols in [t.columns for t in T.TABLES.values()] + [T.DAILY_REVENUE_USD, T.CUSTOMER_SCD2, T.SESSIONS_UUID,
                                                           T.FINANCE_REGION]:
        for c, _ in cols:
            if c not in names:
                names.append(c)
    return names


def code_values(rng: random.Random, domains: dict[str, list[str]], prefix_pool: str) -> dict[str, dict[str, str]]:
    """Coded values per value domain: each domain gets a prefix drawn from `prefix_pool` and each of
    its labels that prefix and a number (drawn in this order: a naming's codes depend on it)."""
    prefixes = rng.sample(prefix_pool, len(domains))
    v_map: dict[str, dict[str, str]] = {}
    for (dom, labels), p in zip(sorted(domains.items()), prefixes, strict=True):
        nums = rng.sample(range(1, 10 + len(labels)), len(labels))
        v_map[dom] = {lab: f"{p}{n}" for lab, n in zip(labels, nums, strict=True)}
    return v_map


@dataclass(frozen=True)
class Naming:
    """The plain -> written names of one build (see the module docstring for the invariants).
    `tables` maps `ns.table` -> `ns.table` (no catalog); `values` maps domain -> label -> code."""

    variant: str = "plain"
    seed: int = 7
    namespaces: dict[str, str] = field(default_factory=dict)
    tables: dict[str, str] = field(default_factory=dict)
    columns: dict[str, str] = field(default_factory=dict)
    values: dict[str, dict[str, str]] = field(default_factory=dict)
    # another world's names (eval/tpcds/naming.py): its catalog, its coded columns (plain column -> domain;
    # empty: the Acme lake's CODED) and every plain table's columns (empty: LAKE.md's tables)
    catalog: str = "acme"
    coded: dict[str, str] = field(default_factory=dict)
    schema: dict[str, list[str]] = field(default_factory=dict)

    # ------------------------------------------------------------------ construction
    @staticmethod
    def plain(seed: int = 7) -> "Naming":
        return Naming("plain", seed)

    @staticmethod
    def for_variant(variant: str, seed: int) -> "Naming":
        if variant == "plain":
            return Naming.plain(seed)
        if variant == "cryptic":
            return Naming.cryptic(seed)
        raise ValueError(f"unknown lake variant {variant!r}; use plain or cryptic")

    @staticmethod
    def cryptic(seed: int) -> "Naming":
        rng = random.Random(f"semcat-cryptic-{seed}")
        tables = plain_tables()
        nss = sorted({t.split(".")[0] for t in tables})
        ns_map = dict(zip(nss, rng.sample(NAMESPACE_POOL, len(nss)), strict=True))
        t_map: dict[str, str] = {}
        used: set[str] = set()
        bases = rng.sample(TABLE_POOL, len(tables))
        for t, base in zip(tables, bases, strict=True):
            name = base + rng.choice(TABLE_SFX)
            while name in used:
                name = base + rng.choice(TABLE_SFX)
            used.add(name)
            t_map[t] = f"{ns_map[t.split('.')[0]]}.{name}"
        cols = plain_columns()
        c_map: dict[str, str] = {}
        taken = set(cols) | SQL_WORDS | set(NAMESPACE_POOL)
        for c in cols:
            while True:
                name = rng.choice(COL_POOL) + rng.choice(COL_SFX)
                if name not in taken:
                    break
            taken.add(name)
            c_map[c] = name
        v_map = code_values(rng, DOMAINS, _CODE_PREFIX)
        return Naming("cryptic", seed, ns_map, t_map, c_map, v_map)

    # ------------------------------------------------------------------ names
    @property
    def identity(self) -> bool:
        return self.variant == "plain"

    def coded_columns(self) -> dict[str, str]:
        """plain coded column -> its value domain."""
        return self.coded or (CODED if self.catalog == "acme" else {})

    def name_cols(self) -> dict[str, tuple[str, str]]:
        """`name_columns` of this world (the Acme lake's load log; none elsewhere)."""
        return name_columns() if self.catalog == "acme" else {}

    def plain_schema(self) -> dict[str, list[str]]:
        """plain `ns.table` -> every column it ever has (LAKE.md's, or the world's `schema`)."""
        if self.schema:
            return self.schema
        from eval.lake import tables as T

        return {p: plain_columns() for p in T.TABLES}

    def table(self, name: str) -> str:
        """`ns.table` (or `acme.ns.table`) -> its written name in the same form. A name that is already
        a written name (or unknown, e.g. a clutter table) is returned unchanged."""
        if self.identity:
            return name
        pre = self.catalog + "."
        if name.startswith(pre):
            return pre + self.tables.get(name[len(pre):], name[len(pre):])
        return self.tables.get(name, name)

    def full_table(self, name: str) -> str:
        """The written `acme.ns.table` of a plain or written name with or without the catalog."""
        t = self.table(name)
        return t if t.startswith(self.catalog + ".") else f"{self.catalog}.{t}"

    def column(self, name: str) -> str:
        return name if self.identity else self.columns.get(name, name)

    def code(self, column: str, value: Any) -> Any:
        """A value written to plain column `column`: its code when the column is coded, else itself."""
        coded = self.coded_columns()
        if self.identity or value is None or column not in coded:
            return value
        dom = self.values[coded[column]]
        if value not in dom:
            raise ValueError(f"value {value!r} of coded column {column!r} has no code; add it to "
                             f"the domain {coded[column]!r} (eval.lake.naming.DOMAINS, eval.tpcds.naming.DOMAINS)")
        return dom[value]

    def labels(self, column: str) -> dict[str, str]:
        """code -> label of a coded plain column ({} when not coded or plain)."""
        coded = self.coded_columns()
        if self.identity or column not in coded:
            return {}
        return {c: lab for lab, c in self.values[coded[column]].items()}

    def decode(self, value: object) -> object:
        """A code (of any domain) -> its label; anything else unchanged."""
        if self.identity or not isinstance(value, str):
            return value
        return self._decoder().get(value, value)

    def _decoder(self) -> dict[str, str]:
        d = self.__dict__.get("_dec")
        if d is None:
            d = {c: lab for dom in self.values.values() for lab, c in dom.items()}
            object.__setattr__(self, "_dec", d)
        return d

    def row(self, table: str, row: dict[str, Any]) -> dict[str, Any]:
        """A plain row of plain `table` -> the written row (columns renamed, coded values encoded, and
        the load log's table names and partitions translated)."""
        if self.identity:
            return row
        out = {}
        roles = self.name_cols()
        for k, v in row.items():
            role = roles.get(k)
            if role is not None and role[1] == table and isinstance(v, str):
                v = self.name_value(role[0], v)
            out[self.column(k)] = self.code(k, v)
        return out

    def name_value(self, role: str, value: str) -> str:
        """A value of a column that names lake objects (`name_columns`) under the variant's names: role
        "table": a plain `ns.table` (or `acme.ns.table`) -> its written name (anything else unchanged);
        role "partition": each `/column=` inside it -> the column's written name (a LIKE pattern too)."""
        if self.identity:
            return value
        if role == "table":
            return self.table(value)
        if role == "partition":
            return re.sub(r"/([a-z_][a-z0-9_]*)=", lambda m: f"/{self.columns.get(m.group(1), m.group(1))}=", value)
        raise ValueError(f"unknown name-column role {role!r}; use table or partition")

    def text(self, s: str) -> str:
        """Prose that mentions plain identifiers: every dotted table name and every snake_case column or
        table name replaced, whole words only (single common words such as `status` stay prose)."""
        if self.identity or not s:
            return s
        words = self._word_map()

        def sub(m: re.Match[str]) -> str:
            return words.get(m.group(0), m.group(0))

        return self._word_re().sub(sub, s)

    def _word_map(self) -> dict[str, str]:
        w = self.__dict__.get("_words")
        if w is None:
            w = {}
            cat = self.catalog
            for p, c in self.tables.items():
                w[f"{cat}.{p}"] = f"{cat}.{c}"
                w[p] = c
                if "_" in p.split(".")[1]:
                    w[p.split(".")[1]] = c.split(".")[1]
            for p, c in self.columns.items():
                if "_" in p:
                    w.setdefault(p, c)
            for p, cols in self.plain_schema().items():  # table.column, e.g. fct_orders.status
                ct = self.tables[p]
                for col in cols:
                    for pre, cpre in ((p.split(".")[1], ct.split(".")[1]), (p, ct), (f"{cat}.{p}", f"{cat}.{ct}")):
                        w[f"{pre}.{col}"] = f"{cpre}.{self.column(col)}"
            object.__setattr__(self, "_words", w)
        return w

    def _word_re(self) -> re.Pattern[str]:
        r = self.__dict__.get("_re")
        if r is None:
            keys = sorted(self._word_map(), key=len, reverse=True)
            # whole words, not the column part of a qualified name (`t.col` is a key of its own); `a..b` ranges
            # name both ends
            r = re.compile(r"(?<![\w])(?<!\w\.)(?:" + "|".join(re.escape(k) for k in keys) + r")(?![\w])")
            object.__setattr__(self, "_re", r)
        return r

    def fields(self, fields: dict[str, Any], column: str | None, sql: Any = None) -> dict[str, Any]:
        """Annotation fields written against LAKE.md (of plain `column`, or of the table when None) under
        the variant's names: prose through `text`, table and column references renamed, an enum of a
        coded column becomes its codes plus `labels` (code -> label), sample values of a coded column
        become codes. `sql` translates SQL text (unused by the fields the builder writes today)."""
        if self.identity:
            return fields
        out: dict[str, Any] = {}
        coded = column is not None and column in self.coded_columns()
        for k, v in fields.items():
            if k in ("description", "instructions") and isinstance(v, str):
                v = self.text(v)
            elif k == "grain" and isinstance(v, dict):
                v = {**v, "text": self.text(v.get("text", "")), "keys": [self.column(c) for c in v.get("keys", [])]}
            elif k == "deprecated" and isinstance(v, dict):
                v = {**v, "reason": self.text(v.get("reason", ""))}
                if v.get("replaced_by"):
                    v["replaced_by"] = self.full_table(v["replaced_by"])
            elif k == "not_for_reporting" and isinstance(v, dict):
                v = {**v, "reason": self.text(v.get("reason", "")),
                     "use_instead": [self.full_table(t) for t in v.get("use_instead", [])]}
            elif k == "enum" and coded and isinstance(v, list):
                assert column is not None
                codes = [self.code(column, x) for x in v]
                out["labels"] = {c: lab for c, lab in zip(codes, v, strict=True)}
                v = codes
            elif k == "sample_values" and coded and isinstance(v, list):
                assert column is not None
                v = [self.code(column, x) for x in v]
            elif k == "additivity" and isinstance(v, dict) and v.get("non_additive_dimension"):
                v = {**v, "non_additive_dimension": self.column(v["non_additive_dimension"])}
            elif k == "null_when" and isinstance(v, dict) and v.get("column"):
                v = {**v, "column": self.column(v["column"])}
            elif k == "load_log" and isinstance(v, dict):
                v = self._load_log(v)
            out[k] = v
        return out

    def _load_log(self, v: dict[str, Any]) -> dict[str, Any]:
        """A `load_log` table field: the log table and its columns renamed; the statuses it lists are values
        of the log's status column, so they become that column's codes."""
        out = dict(v)
        if out.get("table"):
            out["table"] = self.full_table(out["table"])
        for k, c in v.items():
            if k.endswith("_column") and isinstance(c, str):
                out[k] = self.column(c)
        status = v.get("status_column")
        for k in ("complete", "partial", "failed"):
            if isinstance(v.get(k), list) and isinstance(status, str) and status in self.coded_columns():
                out[k] = [self.code(status, x) for x in v[k]]
        return out

    def instructions(self, text: str) -> str:
        """The catalog instructions: identifiers renamed, and the name conventions (which the cryptic names
        do not follow) replaced by where the facts live."""
        if self.identity:
            return text
        flat = " ".join(text.split("\n"))
        start = flat.find("Columns ending _utc")
        end = flat.find("Fiscal calendar:")
        if start >= 0 and end > start:
            flat = (flat[:start] + "Column names are abbreviations that do not say what a column holds: each "
                    "column's annotations give its meaning, unit (cents or dollars) and time zone (UTC "
                    "timestamps or the store's local date; the online store uses New York). Categorical "
                    "columns hold codes; a column's enum lists them and its labels say what each code means. "
                    + flat[end:])
        return self.text(flat)

    # ------------------------------------------------------------------ names.json
    def to_json(self) -> dict[str, Any]:
        out = {"variant": self.variant, "seed": self.seed, "catalog": self.catalog, "namespaces": self.namespaces,
               "tables": self.tables, "columns": self.columns, "values": self.values,
               "coded_columns": dict(self.coded_columns()) if not self.identity else {}}
        if self.schema:
            out["schema"] = self.schema
        return out

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Naming":
        if d.get("variant") not in ("plain", "cryptic"):
            raise ValueError(f"names.json: variant must be plain or cryptic, got {d.get('variant')!r}")
        catalog = str(d.get("catalog") or "acme")
        return Naming(d["variant"], int(d.get("seed", 7)), dict(d.get("namespaces", {})), dict(d.get("tables", {})),
                      dict(d.get("columns", {})), {k: dict(v) for k, v in d.get("values", {}).items()}, catalog,
                      dict(d.get("coded_columns") or {}) if catalog != "acme" else {},
                      {k: list(v) for k, v in (d.get("schema") or {}).items()})

    def write(self, path: str, extra: dict[str, Any] | None = None) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump({**self.to_json(), **(extra or {})}, fh, indent=1, sort_keys=False)


def load_names(lake_root: str) -> Naming:
    """The Naming of a built lake: DIR/names.json, or the identity when the lake has none (a plain build
    from before variants existed)."""
    import os

    p = os.path.join(lake_root, NAMES_FILE)
    if not os.path.exists(p):
        return Naming.plain()
    with open(p, encoding="utf-8") as fh:
        return Naming.from_json(json.load(fh))
