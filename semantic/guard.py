"""What every write of an annotation must satisfy, whatever path it takes (issue 35, items 2 and 5):
`annotate` / `relate` / `define_metric` / `verify_query` / `profile` / review decisions (through
`write_annotations`), and a raw write set (`/v1/commit`, transaction sessions) that touches a key
under `_semantic` (the HTTP layer calls `guard_op` for each such op, inside the transaction).

- Shape: an annotation object as `Annotation.stored()` writes it, at `<target>/_semantic/<key>`, its
  value valid for its kind (`TableFields`, `ColumnFields`, `Relationship`, `Metric`,
  `VerifiedQuery`, text for `instructions`; a proposal's inner value for its own kind).
- SQL it stores (a relationship `condition`, a metric `expression` / `filter`, a verified query's
  `sql`) passes the SQL sandbox's rules (`catalog_core.sql.check_sql`) as well as being one
  expression without statements or subqueries, so what a check later runs is what run_sql runs.
- Bounds: every text at most `MAX_TEXT_BYTES` (a verified query's SQL `MAX_SQL_BYTES`), every list
  at most `MAX_ITEMS` items, the whole object at most `MAX_OBJECT_BYTES`; the error names the field
  and the limit.
- Provenance (`Writer`: who the server authenticated): the author is the writer's principal when
  the server authenticated one; an agent may claim only source `agent`, a service anything but
  `human`; a non-human writer may not replace or remove a person's annotation, nor write the
  human-only keys (`HUMAN_ONLY`; `CERTIFIED_ONLY` on a certified table): those are proposals
  (`proposal.<key>`, what the MCP `annotate` tool and `POST /v1/semantic/annotate` store). The
  policy's reads are `txn.get` in the writing transaction, so a person's concurrent write makes
  the commit conflict rather than be overwritten.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from catalog_core import lake
from catalog_core.errors import PermissionDeniedError, SqlError
from semantic.errors import InvalidAnnotationError, InvalidExpressionError
from semantic.models import (
    COLUMN_FIELDS,
    TABLE_FIELDS,
    Annotation,
    ColumnFields,
    Metric,
    Relationship,
    TableFields,
    VerifiedQuery,
)

__all__ = ["Writer", "check_annotation", "check_bounds", "guard_op", "is_semantic_path", "human_only",
           "MAX_TEXT_BYTES", "MAX_SQL_BYTES", "MAX_ITEMS", "MAX_OBJECT_BYTES", "HUMAN_ONLY", "CERTIFIED_ONLY",
           "WRITER_SOURCES", "is_certified", "marked", "AGENT_MARK"]

MAX_TEXT_BYTES = 16 * 1024        # one text value (a description, instructions, a tag)
MAX_SQL_BYTES = 64 * 1024         # a verified query's SQL
MAX_ITEMS = 200                   # one list (tags, synonyms, enum and sample values, ...) or mapping
MAX_OBJECT_BYTES = 512 * 1024     # the whole stored object, provenance and basis included
MAX_DEPTH = 12

# Keys only a person writes (an agent's becomes a proposal); on a table a person certified, also these.
HUMAN_ONLY = frozenset({"instructions", "table.instructions", "table.certified"})
CERTIFIED_ONLY = frozenset({"table.deprecated", "table.not_for_reporting"})
PROPOSAL_PREFIX = "proposal."
WRITER_SOURCES = ("human", "agent", "service")
# the provenance sources each kind of writer may claim
_MAY_CLAIM: dict[str, frozenset[str]] = {
    "human": frozenset({"human", "agent", "inferred", "import"}),
    "service": frozenset({"agent", "inferred", "import"}),
    "agent": frozenset({"agent"}),
}


@dataclass(frozen=True)
class Writer:
    """Who writes, as the server authenticated them: `principal` (the author recorded), `source`
    (human, agent or service) and whether a credential said so (`authenticated`; without auth, on
    loopback, the writer is the local user: a person, whose body `author` is kept)."""

    principal: str
    source: Literal["human", "agent", "service"]
    authenticated: bool = True


# ------------------------------------------------------------------ bounds
def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def check_bounds(value: Any, field: str, *, text_limit: int = MAX_TEXT_BYTES, depth: int = 0) -> None:
    """Every text in `value` at most `text_limit` bytes, every list and mapping at most
    `MAX_ITEMS` items, nesting at most `MAX_DEPTH`; `InvalidAnnotationError` naming `field` (the
    annotation key and the path inside its value) and the limit."""
    if depth > MAX_DEPTH:
        raise InvalidAnnotationError(f"{field} nests deeper than {MAX_DEPTH} levels; annotation values are flat "
                                     "records", field=field, limit=MAX_DEPTH)
    if isinstance(value, str):
        n = _size(value)
        if n > text_limit:
            raise InvalidAnnotationError(f"{field} is {n:,} bytes of text, more than the {text_limit:,} allowed per "
                                         "value; shorten it (link to a document for the long form)", field=field,
                                         limit=text_limit, size=n)
    elif isinstance(value, (list, tuple)):
        if len(value) > MAX_ITEMS:
            raise InvalidAnnotationError(f"{field} has {len(value):,} items, more than the {MAX_ITEMS} allowed per "
                                         "list; keep the most useful ones", field=field, limit=MAX_ITEMS,
                                         size=len(value))
        for i, v in enumerate(value):
            check_bounds(v, f"{field}[{i}]", text_limit=text_limit, depth=depth + 1)
    elif isinstance(value, Mapping):
        if len(value) > MAX_ITEMS:
            raise InvalidAnnotationError(f"{field} has {len(value):,} entries, more than the {MAX_ITEMS} allowed; "
                                         "keep the most useful ones", field=field, limit=MAX_ITEMS, size=len(value))
        for k, v in value.items():
            check_bounds(str(k), f"{field} (a key)", text_limit=text_limit, depth=depth + 1)
            check_bounds(v, f"{field}.{k}", text_limit=MAX_SQL_BYTES if k == "sql" else text_limit, depth=depth + 1)


# ------------------------------------------------------------------ values
def _pydantic(e: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in x.get('loc', ()))}: {x.get('msg')}" for x in e.errors()[:3])


def _expression(text: Any, what: str) -> None:
    from semantic._sql import parse_fragment

    if text is not None:
        parse_fragment(text, what)  # one expression, no statement or subquery, the sandbox's rules


def _check_value(kind: str, key: str, value: Any, depth: int = 0) -> None:
    """`value` is valid for an annotation of `kind` under `key` (no catalog reads)."""
    try:
        if kind == "table":
            field = key.split(".", 1)[1] if key.startswith("table.") else ""
            if field not in TABLE_FIELDS:
                raise InvalidAnnotationError(f"{key!r} is not a table annotation key (table.<field>, fields: "
                                             f"{', '.join(TABLE_FIELDS)})", field=key)
            TableFields.model_validate({field: value})
        elif kind == "column":
            parts = key.split(".")
            if len(parts) != 3 or parts[0] != "column" or not parts[1].isdigit() or parts[2] not in COLUMN_FIELDS:
                raise InvalidAnnotationError(f"{key!r} is not a column annotation key (column.<column id>.<field>, "
                                             f"fields: {', '.join(COLUMN_FIELDS)})", field=key)
            ColumnFields.model_validate({parts[2]: value})
        elif kind == "relationship":
            rel = Relationship.model_validate(value)
            _expression(rel.condition, f"the condition of {key}")
        elif kind == "metric":
            m = Metric.model_validate(value)
            _expression(m.expression, f"the expression of {key}")
            _expression(m.filter, f"the filter of {key}")
        elif kind == "verified_query":
            q = VerifiedQuery.model_validate(value)
            _verified_sql(q.sql, key)
        elif kind == "instructions":
            if not isinstance(value, str):
                raise InvalidAnnotationError(f"{key} must be text", field=key)
        elif kind == "review" and key.startswith(PROPOSAL_PREFIX):
            if not isinstance(value, dict) or not isinstance(value.get("key"), str) or depth:
                raise InvalidAnnotationError(f"{key} must hold the proposed annotation as {{key, kind, value, column, "
                                             "column_id}}", field=key)
            inner = value["key"]
            if key != PROPOSAL_PREFIX + inner:
                raise InvalidAnnotationError(f"{key} proposes {inner!r}; a proposal's key is 'proposal.' + the key it "
                                             "proposes", field=key)
            _check_value(str(value.get("kind")), inner, value.get("value"), depth + 1)
    except ValidationError as e:
        raise InvalidAnnotationError(f"{key} is invalid: {_pydantic(e)}", field=key) from None


def _verified_sql(sql: str, key: str) -> None:
    from catalog_core.errors import SqlRefusedError
    from catalog_core.sql import check_sql

    try:
        check_sql(sql)
    except SqlRefusedError as e:
        raise InvalidExpressionError(f"the SQL of {key} is refused by the SQL sandbox (rule "
                                     f"{e.details.get('rule')!r}): {e.message}", rule=e.details.get("rule"),
                                     text=sql) from None
    except SqlError as e:
        raise InvalidExpressionError(f"the SQL of {key} does not parse: {e.message}", text=sql) from None


def check_annotation(ann: Annotation) -> None:
    """The value rules and bounds above for one annotation about to be written."""
    check_bounds(ann.value, ann.key)
    check_bounds(ann.provenance.author, f"{ann.key}: provenance.author", text_limit=512)
    if ann.provenance.note is not None:
        check_bounds(ann.provenance.note, f"{ann.key}: provenance.note")
    _check_value(ann.kind, ann.key, ann.value)
    n = len(json.dumps(ann.stored(), default=str))
    if n > MAX_OBJECT_BYTES:
        raise InvalidAnnotationError(f"{ann.key} is {n:,} bytes stored, more than the {MAX_OBJECT_BYTES:,} allowed "
                                     "per annotation", field=ann.key, limit=MAX_OBJECT_BYTES, size=n)


# ------------------------------------------------------------------ the policy
def human_only(key: str, certified: bool) -> bool:
    """May only a person write `key` (on a table that is `certified` or not)?"""
    return key in HUMAN_ONLY or (certified and key in CERTIFIED_ONLY)


def _source_of(value: Any) -> str | None:
    prov = value.get("provenance") if isinstance(value, dict) else None
    src = prov.get("source") if isinstance(prov, dict) else None
    return src if isinstance(src, str) else None


def is_certified(txn: Any, target: str) -> bool:
    """Did a person certify table `target` (read in `txn`: part of its read set)?"""
    if target.count(".") != 2:
        return False
    got = txn.get(lake.semantic_path(target, "table.certified"))
    v = got.value if got is not None else None
    return isinstance(v, dict) and v.get("value") is True and _source_of(v) == "human"


def is_semantic_path(path: str) -> bool:
    """Is `path` a `_semantic` folder or anything below one?"""
    return f"/{lake.SEMANTIC}/" in path + "/"


def _where(path: str) -> tuple[str, str | None]:
    """(target name, annotation key or None for the folder) of a path under `_semantic`."""
    head, _, rest = (path + "/").partition(f"/{lake.SEMANTIC}/")
    rest = rest.rstrip("/")
    if "/" in rest:
        raise InvalidAnnotationError(f"{path}: nothing lives below an annotation; annotations are "
                                     f"<target>/{lake.SEMANTIC}/<key>", path=path)
    target = lake.name_of(head) if head else ""
    if not target or target.count(".") > 2:
        raise InvalidAnnotationError(f"{path}: a {lake.SEMANTIC} folder belongs to a catalog, namespace or table",
                                     path=path)
    return target, rest or None


def _who(writer: Writer) -> str:
    return f"{writer.principal} ({'an agent' if writer.source == 'agent' else 'a ' + writer.source})"


def _refuse(writer: Writer, what: str) -> PermissionDeniedError:
    return PermissionDeniedError(
        f"{_who(writer)} cannot {what}; an agent's write over a person's "
        "annotation, or of instructions / certification (and deprecation or reporting flags of a certified "
        "table), is a proposal for review: use the MCP annotate tool or POST /v1/semantic/annotate, which store "
        "it as one, or a person's token", role=writer.source, needed="human")


def guard_op(txn: Any, kind: str, path: str, value: dict[str, Any] | None, writer: Writer) -> dict[str, Any] | None:
    """The value to record for one write op under `_semantic` (`kind`: add, update, remove, merge),
    after the checks above; the author is the writer's principal when authenticated. Reads the
    policy's objects with `txn.get` (recorded: a concurrent write to them aborts the commit).
    Raises InvalidAnnotationError / InvalidExpressionError (400) or PermissionDeniedError (403)."""
    target, key = _where(path)
    if kind == "merge":
        raise InvalidAnnotationError(f"{path}: annotations are replaced (update), never merged", path=path)
    if key is None:  # the folder itself
        if kind == "remove":
            if writer.source != "human":
                raise _refuse(writer, f"remove every annotation of {target}")
            return None
        if value != {"obj_type": "semantic"}:
            raise InvalidAnnotationError(f"{path}: a {lake.SEMANTIC} folder's value is exactly "
                                         '{"obj_type": "semantic"}', path=path)
        return value
    out = None if kind == "remove" else _shape(path, target, key, value, writer)
    if writer.source != "human":
        cur = txn.get(path)
        certified = is_certified(txn, target)
        cur_src = _source_of(cur.value) if cur is not None else None
        if cur is not None and (cur_src == "human" or (certified and cur_src != "agent")):
            raise _refuse(writer, f"{'remove' if kind == 'remove' else 'replace'} {key} of {target}, which "
                          f"{'a person wrote' if cur_src == 'human' else 'is part of a certified table'}")
        if kind != "remove" and human_only(key, certified):
            raise _refuse(writer, f"write {key} of {target}")
    return out


def _shape(path: str, target: str, key: str, value: Any, writer: Writer) -> dict[str, Any]:
    """The checked value of an annotation write (its author the writer's principal when authenticated)."""
    if not isinstance(value, dict) or value.get("obj_type") != "annotation":
        raise InvalidAnnotationError(f"{path}: an object under {lake.SEMANTIC} is an annotation "
                                     '({"obj_type": "annotation", "kind", "key", "target", "value", "provenance"})',
                                     path=path)
    try:
        ann = Annotation.model_validate({k: v for k, v in value.items() if k != "obj_type"})
    except ValidationError as e:
        raise InvalidAnnotationError(f"{path}: not an annotation object: {_pydantic(e)}", path=path) from None
    if ann.key != key or ann.target != target:
        raise InvalidAnnotationError(f"{path}: the object says key {ann.key!r} of {ann.target!r}; it is stored at "
                                     f"key {key!r} of {target!r}", path=path)
    if ann.provenance.source not in _MAY_CLAIM[writer.source]:
        raise PermissionDeniedError(
            f"{path}: {_who(writer)} cannot write an annotation with source "
            f"{ann.provenance.source!r}; it may write {', '.join(sorted(_MAY_CLAIM[writer.source]))}, or use a "
            "person's token to write as a person", role=writer.source, needed="human")
    if writer.authenticated:
        ann.provenance.author = writer.principal
    check_annotation(ann)
    out = dict(value)
    out["provenance"] = {**value["provenance"], "author": ann.provenance.author}
    return out


# ------------------------------------------------------------------ agent-written text, as other agents read it
AGENT_MARK = "[agent-written, unreviewed] "


def marked(value: Any, source: str | None) -> Any:
    """Text an agent wrote (source `agent`: not yet accepted by a person), as it reaches other
    agents: prefixed with `AGENT_MARK`, so that it reads as a claim to check, never as an
    instruction from the catalog's owners. Anything else unchanged."""
    if source == "agent" and isinstance(value, str):
        return AGENT_MARK + value
    return value
