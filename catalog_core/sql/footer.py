"""The top-level columns of a Parquet file's schema, read from its footer in plain Python (no pyarrow).

`catalog_core.sql.tables.file_schema` groups a view's files by their exact schema, so that a group whose
files all hold the same schema is read without DuckDB's `union_by_name` (docs/performance.md). It used
`pyarrow.parquet.read_schema`, which costs a stdio session's first `describe_table` the import of pyarrow
and numpy (0.10-0.2 s of CPU, issue 47, cold start) for a few hundred bytes of footer. The footer is
Thrift's compact protocol: `FileMetaData` field 1 (version), then field 2 (the schema: a depth-first list
of `SchemaElement`s, the root first). Only those are read; the row groups that follow are not.

Each top-level column's "type" is a canonical string of its `SchemaElement` subtree (physical type, length,
repetition, converted and logical type, scale, precision, field id, and the same for nested children),
i.e. the Parquet schema DuckDB itself reads. Two files get equal tuples exactly when their Parquet schemas
are equal: what decides whether DuckDB needs `union_by_name` for them. (pyarrow's Arrow types were a
function of that schema and of an optional stored Arrow schema that DuckDB does not read.)"""

from __future__ import annotations

import os
import struct
from typing import Any

__all__ = ["read_schema", "FooterError"]

_MAGIC = b"PAR1"
_MAX_FOOTER = 64 << 20  # a footer larger than this is not a Parquet file we read (pyarrow's limit is larger; none is near)


class FooterError(ValueError):
    """Not a (readable, unencrypted) Parquet footer."""


class _Reader:
    """Thrift compact protocol, the subset Parquet's metadata uses (no sets of maps of ..., all generic)."""

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.buf):
            raise FooterError("footer ends early")
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        out = shift = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7
            if shift > 70:
                raise FooterError("varint too long")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def binary(self) -> bytes:
        n = self.varint()
        end = self.pos + n
        if end > len(self.buf):
            raise FooterError("footer ends early")
        out = self.buf[self.pos:end]
        self.pos = end
        return out

    def value(self, ctype: int) -> Any:
        if ctype in (1, 2):  # a bool inside a collection: one byte, 1 true
            return self.byte() == 1
        if ctype == 3:
            b = self.byte()
            return b - 256 if b > 127 else b
        if ctype in (4, 5, 6):
            return self.zigzag()
        if ctype == 7:
            if self.pos + 8 > len(self.buf):
                raise FooterError("footer ends early")
            (d,) = struct.unpack_from("<d", self.buf, self.pos)
            self.pos += 8
            return d
        if ctype == 8:
            return self.binary()
        if ctype in (9, 10):
            return self.collection()
        if ctype == 11:
            n = self.varint()
            if n == 0:
                return []
            kv = self.byte()
            return [(self.value(kv >> 4), self.value(kv & 0x0F)) for _ in range(n)]
        if ctype == 12:
            return self.struct()
        raise FooterError(f"unknown compact type {ctype}")

    def collection(self) -> list[Any]:
        head = self.byte()
        n = head >> 4
        if n == 15:
            n = self.varint()
        etype = head & 0x0F
        return [self.value(etype) for _ in range(n)]

    def struct(self, stop_after: int | None = None) -> dict[int, Any]:
        """{field id: value}; with `stop_after`, return as soon as that field has been read."""
        out: dict[int, Any] = {}
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return out
            ctype = head & 0x0F
            delta = head >> 4
            fid = last + delta if delta else self.zigzag()
            last = fid
            if ctype == 1:
                out[fid] = True
            elif ctype == 2:
                out[fid] = False
            else:
                out[fid] = self.value(ctype)
            if stop_after is not None and fid == stop_after:
                return out


def _canon(v: Any) -> str:
    """A canonical text of a parsed Thrift value (struct fields in id order)."""
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}:{_canon(v[k])}" for k in sorted(v)) + "}"
    if isinstance(v, list):
        return "[" + ",".join(_canon(x) for x in v) + "]"
    if isinstance(v, bytes):
        return repr(v)
    return repr(v)


# SchemaElement: 1 type, 2 type_length, 3 repetition_type, 4 name, 5 num_children, 6 converted_type,
# 7 scale, 8 precision, 9 field_id, 10 logicalType
def _subtree(elems: list[dict[int, Any]], i: int) -> tuple[str, int]:
    """The canonical text of element i and its descendants; the index after them."""
    e = elems[i]
    own = {k: v for k, v in e.items() if k not in (4, 5)}
    n = e.get(5) or 0
    if not isinstance(n, int) or n < 0:
        raise FooterError("bad num_children")
    j = i + 1
    kids = []
    for _ in range(n):
        if j >= len(elems):
            raise FooterError("schema ends early")
        name = elems[j].get(4)
        text, j = _subtree(elems, j)
        kids.append(f"{_name(name)!r}={text}")
    return _canon(own) + ("(" + ",".join(kids) + ")" if n else ""), j


def _name(raw: Any) -> str:
    if not isinstance(raw, bytes):
        raise FooterError("a schema element without a name")
    return raw.decode("utf-8", errors="replace")


def schema_of_footer(footer: bytes) -> tuple[tuple[str, str], ...]:
    """(column name, canonical Parquet type) of each top-level column of a serialized FileMetaData."""
    meta = _Reader(footer).struct(stop_after=2)
    elems = meta.get(2)
    if not isinstance(elems, list) or not elems or not all(isinstance(e, dict) for e in elems):
        raise FooterError("no schema in the footer")
    root = elems[0]
    n = root.get(5) or 0
    out = []
    j = 1
    for _ in range(n):
        if j >= len(elems):
            raise FooterError("schema ends early")
        name = _name(elems[j].get(4))
        text, j = _subtree(elems, j)
        out.append((name, text))
    if j != len(elems):
        raise FooterError("schema elements left over")
    return tuple(out)


def read_schema(path: str) -> tuple[tuple[str, str], ...]:
    """`schema_of_footer` of the Parquet file at `path`; FooterError (or OSError) when it is not one."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 12:
            raise FooterError("too small for Parquet")
        f.seek(size - 8)
        tail = f.read(8)
        if tail[4:] != _MAGIC:  # "PARE": an encrypted footer, which pyarrow did not read without keys either
            raise FooterError("no Parquet magic at the end")
        (n,) = struct.unpack("<I", tail[:4])
        if n <= 0 or n > size - 12 or n > _MAX_FOOTER:
            raise FooterError("bad footer length")
        f.seek(size - 8 - n)
        footer = f.read(n)
    if len(footer) != n:
        raise FooterError("footer ends early")
    return schema_of_footer(footer)
