"""Iceberg manifests and manifest lists (format v2) written as bytes, fast (DESIGN.md, Iceberg REST).

The materializer writes one manifest list per snapshot and shares manifests across snapshots,
so one data file's manifest entry appears in many files. pyiceberg's writer encodes every record
again for every file and builds its Avro writer per file (milliseconds each); here a data file's
entry is encoded once (`Entry.data`, the `data_file` struct) and a manifest's list record once
(`manifest_record`), and a file is a header plus the concatenation of cached bytes:

    kind = ManifestKind(schema, spec)                 # per (table schema, partition spec)
    data = encode_data_file(kind, path, fmt, partition, rows, size, counts, nulls, lower, upper)
    blob = kind.manifest(entries=[(status, snapshot_id, seq, file_seq, data), ...], sync=...)
    lst = manifest_list(snapshot_id, parent_id, seq, [record, ...], sync=...)

The byte layout is the Avro binary encoding of pyiceberg's own v2 schemas (`manifest_entry`,
`manifest_file`), checked against pyiceberg's writer and read back by pyiceberg's reader in the
tests; the container is Avro's object container file with the null codec and one data block.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from typing import Any

from pydantic_core import to_json
from pyiceberg.avro.encoder import BinaryEncoder
from pyiceberg.avro.resolver import construct_writer
from pyiceberg.conversions import to_bytes
from pyiceberg.manifest import (
    MANIFEST_LIST_FILE_SCHEMAS,
    data_file_with_partition,
    manifest_entry_schema_with_data_file,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.typedef import Record
from pyiceberg.types import PrimitiveType, StructType
from pyiceberg.utils.schema_conversion import AvroSchemaConversion

__all__ = ["ManifestKind", "encode_data_file", "manifest_list", "manifest_record", "zz", "Summary"]

MAGIC = b"Obj\x01"
_STATUS = {"existing": b"\x00", "added": b"\x02", "deleted": b"\x04"}


_SMALL = [bytes((i,)) for i in range(128)]


def zz(n: int) -> bytes:
    """An Avro long / int: zigzag, then base-128 varint."""
    if 0 <= n < 64:
        return _SMALL[n << 1]
    n = (n << 1) ^ (n >> 63)
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _bytes(b: bytes) -> bytes:
    return zz(len(b)) + b


def _string(s: str) -> bytes:
    return _bytes(s.encode())


def _opt_long(n: int | None) -> bytes:
    return b"\x00" if n is None else b"\x02" + zz(n)


def _int_map(m: dict[int, int]) -> bytes:
    """An optional map<int, long> (Iceberg writes it as an array of key/value records)."""
    if not m:
        return b"\x02\x00"
    return b"\x02" + zz(len(m)) + b"".join(zz(k) + zz(v) for k, v in sorted(m.items())) + b"\x00"


def _bytes_map(m: dict[int, bytes]) -> bytes:
    if not m:
        return b"\x02\x00"
    return b"\x02" + zz(len(m)) + b"".join(zz(k) + _bytes(v) for k, v in sorted(m.items())) + b"\x00"


def _header(meta: dict[str, str], sync: bytes) -> bytes:
    body = b"".join(_string(k) + _bytes(v.encode()) for k, v in meta.items())
    return MAGIC + zz(len(meta)) + body + b"\x00" + sync


def container(meta: dict[str, str], records: list[bytes], sync: bytes) -> bytes:
    """An Avro object container file: header, one block of `records` (null codec)."""
    return block(_header(meta, sync), records, sync)


def block(header: bytes, records: list[bytes], sync: bytes) -> bytes:
    data = b"".join(records)
    return b"".join((header, zz(len(records)), zz(len(data)), data, sync))


class ManifestKind:
    """What every manifest of one (table schema, partition spec) shares: its header metadata and
    the encoder of partition tuples (pyiceberg's, cached per distinct tuple)."""

    def __init__(self, schema: Schema, spec: PartitionSpec) -> None:
        self.schema, self.spec = schema, spec
        self.partition_type: StructType = spec.partition_type(schema)
        self.types: list[Any] = [f.field_type for f in self.partition_type.fields]
        file_schema = manifest_entry_schema_with_data_file(2, data_file_with_partition(self.partition_type, 2))
        avro = json.dumps(AvroSchemaConversion().iceberg_to_avro(file_schema, schema_name="manifest_entry"))
        self.meta = {"schema": schema.model_dump_json(), "partition-spec": to_json(spec.fields).decode(),
                     "partition-spec-id": str(spec.spec_id), "format-version": "2", "avro.codec": "null",
                     "content": "data", "avro.schema": avro}
        self._headers: dict[bytes, bytes] = {}
        self._part_writer = construct_writer(Schema(*self.partition_type.fields))
        self._parts: dict[tuple[Any, ...], bytes] = {}

    def partition(self, values: tuple[Any, ...]) -> bytes:
        out = self._parts.get(values)
        if out is None:
            buf = io.BytesIO()
            self._part_writer.write(BinaryEncoder(buf), Record(*values))
            out = buf.getvalue()
            if len(self._parts) < 100_000:
                self._parts[values] = out
        return out

    def manifest(self, entries: Iterable[tuple[str, int, int, int, bytes]], sync: bytes) -> bytes:
        """A manifest of (status 'added' | 'existing', snapshot id, sequence number, file sequence
        number, data_file bytes) entries."""
        recs = [b"".join((_STATUS[st], b"\x02", zz(sid), b"\x02", zz(seq), b"\x02", zz(fseq), data))
                for st, sid, seq, fseq, data in entries]
        header = self._headers.get(sync)
        if header is None:
            header = self._headers[sync] = _header(self.meta, sync)
        return block(header, recs, sync)


def encode_data_file(kind: ManifestKind, path: str, fmt: str, partition: tuple[Any, ...], rows: int, size: int,
                     counts: dict[int, int], nulls: dict[int, int], lower: dict[int, bytes],
                     upper: dict[int, bytes]) -> bytes:
    """The `data_file` struct of a manifest entry (a data file: content 0, no key metadata, split
    offsets, equality ids or sort order)."""
    return (b"\x00" + _string(path) + _string(fmt) + kind.partition(partition) + zz(rows) + zz(size)
            + b"\x02\x00" + _int_map(counts) + _int_map(nulls) + b"\x02\x00" + _bytes_map(lower) + _bytes_map(upper)
            + b"\x00\x00\x00\x00")


class Summary:
    """The partition field summaries of a manifest (min / max by each field's type, nulls)."""

    __slots__ = ("nulls", "lo", "hi")

    def __init__(self, n: int) -> None:
        self.nulls = [False] * n
        self.lo: list[Any] = [None] * n
        self.hi: list[Any] = [None] * n

    def add(self, values: tuple[Any, ...]) -> None:
        for i, v in enumerate(values):
            if v is None:
                self.nulls[i] = True
            elif self.lo[i] is None:
                self.lo[i] = self.hi[i] = v
            else:
                if v < self.lo[i]:
                    self.lo[i] = v
                if v > self.hi[i]:
                    self.hi[i] = v

    def update(self, other: Summary) -> None:
        for i in range(len(self.nulls)):
            self.nulls[i] = self.nulls[i] or other.nulls[i]
            for v in (other.lo[i], other.hi[i]):
                if v is None:
                    continue
                if self.lo[i] is None or v < self.lo[i]:
                    self.lo[i] = v
                if self.hi[i] is None or v > self.hi[i]:
                    self.hi[i] = v

    def encode(self, types: list[Any]) -> bytes:
        parts = []
        for i, t in enumerate(types):
            if not isinstance(t, PrimitiveType):
                raise ValueError(f"partition field of type {t} is not primitive")
            lo, hi = self.lo[i], self.hi[i]
            parts.append((b"\x01" if self.nulls[i] else b"\x00") + b"\x02\x00"
                         + (b"\x00" if lo is None else b"\x02" + _bytes(to_bytes(t, lo)))
                         + (b"\x00" if hi is None else b"\x02" + _bytes(to_bytes(t, hi))))
        if not parts:
            return b"\x02\x00"
        return b"\x02" + zz(len(parts)) + b"".join(parts) + b"\x00"


def manifest_record(path: str, length: int, spec_id: int, seq: int, min_seq: int, adder: int,
                    added: tuple[int, int], existing: tuple[int, int], summary: bytes) -> bytes:
    """A manifest's `manifest_file` record in a manifest list ((files, rows) added and existing)."""
    return (_string(path) + zz(length) + zz(spec_id) + b"\x00" + zz(seq) + zz(min_seq) + zz(adder)
            + zz(added[0]) + zz(existing[0]) + b"\x00" + zz(added[1]) + zz(existing[1]) + b"\x00"
            + summary + b"\x00")


_LIST_AVRO = json.dumps(AvroSchemaConversion().iceberg_to_avro(MANIFEST_LIST_FILE_SCHEMAS[2], schema_name="manifest_file"))


_LIST_FIXED = b"".join(_string(k) + _bytes(v.encode()) for k, v in
                       {"format-version": "2", "avro.codec": "null", "avro.schema": _LIST_AVRO}.items())


def manifest_list(snapshot_id: int, parent_id: int | None, seq: int, records: list[bytes], sync: bytes) -> bytes:
    """A manifest list (its header's constant part encoded once)."""
    varying = (b"\x16snapshot-id" + _bytes(str(snapshot_id).encode())
               + b"$parent-snapshot-id" + _bytes(str(parent_id).encode() if parent_id is not None else b"null")
               + b"\x1esequence-number" + _bytes(str(seq).encode()))
    header = b"".join((MAGIC, b"\x0c", varying, _LIST_FIXED, b"\x00", sync))
    return block(header, records, sync)

