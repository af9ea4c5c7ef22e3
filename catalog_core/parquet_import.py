"""Register a directory tree of Parquet files (Hive-style `key=value` partition directories) as
catalog tables, with files, partitions and footer statistics (`semcat import parquet DIR`).

    import catalog_core as cc
    from catalog_core.parquet_import import import_parquet
    res = import_parquet(cat, "/lake/raw", into="acme.raw")             # one table per sub-directory
    res = import_parquet(cat, "/lake/raw/orders", into="acme.raw.orders")  # the directory is one table

Layout read: below a table's directory, every directory level is a partition `column=value` (the
same columns in the same order everywhere; `__HIVE_DEFAULT_PARTITION__` is NULL; values are
URL-unescaped as Hive writes them), and every `*.parquet` file is a data file. Names that start with
`_` or `.` (`_SUCCESS`, `.crc` files, `_temporary/`) are skipped; any other file, or a directory that
is not `column=value` where one is expected, is an error naming it.

Invariants:
- Re-running on an unchanged tree writes nothing; a run after files were added or removed (or
  rewritten in place: another size or mtime) adds and removes exactly those, in ONE transaction per
  table, and recomputes the stats of the partitions they touched and of the table.
- Every footer is read and the schema checked before anything is written: a file whose column has
  another type than the same column elsewhere, or a table directory that holds no Parquet file, is
  refused and nothing is written for that table.
- A table this importer did not create (no `properties.parquet.root`, or another root) is never
  touched: pick another name.
- Column ids are assigned once, in order of first appearance; a column that appears later gets the
  next id (files without it read it as NULL), and a column no file holds any longer stays in the schema.
"""

from __future__ import annotations

import hashlib
import os
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from catalog_core import lake
from catalog_core import stats as st
from catalog_core.api import CatalogAPI, TransactionAPI
from catalog_core.errors import InvalidValueError, PreconditionError
from catalog_core.paths import parent_of

__all__ = ["AUTHOR", "ParquetImportResult", "import_parquet", "arrow_type"]

AUTHOR = "import:parquet"
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
Progress = Callable[[str, int, int], None]   # (table, files read, files to read)


@dataclass
class ParquetImportResult:
    table: str
    vid: int | None = None                   # the commit, None when nothing changed
    files_added: int = 0
    files_removed: int = 0
    columns_added: list[str] = field(default_factory=list)

    @property
    def up_to_date(self) -> bool:
        return self.vid is None


@dataclass
class _Found:
    path: str                                # absolute path of the file
    chain: tuple[tuple[str, str | None], ...]   # partition (column, raw value) from the table down
    size: int
    mtime_ns: int

    @property
    def key(self) -> str:
        """The file's leaf id: its name behind a hash of its path, size and mtime, so a file rewritten
        in place is a new leaf (leaves are immutable)."""
        h = hashlib.sha1(f"{self.path}\x00{self.size}\x00{self.mtime_ns}".encode()).hexdigest()[:12]
        return f"{h}-{os.path.basename(self.path)[-100:].lstrip('_.')}"


def arrow_type(t: Any) -> str:
    """A pyarrow type as the catalog's column type text (Spark / Iceberg spellings)."""
    import pyarrow as pa

    simple = ((pa.types.is_boolean, "boolean"), (pa.types.is_int8, "tinyint"), (pa.types.is_int16, "smallint"),
              (pa.types.is_int32, "int"), (pa.types.is_int64, "bigint"), (pa.types.is_uint8, "smallint"),
              (pa.types.is_uint16, "int"), (pa.types.is_uint32, "bigint"), (pa.types.is_uint64, "decimal(20,0)"),
              (pa.types.is_float16, "float"), (pa.types.is_float32, "float"), (pa.types.is_float64, "double"),
              (pa.types.is_string, "string"), (pa.types.is_large_string, "string"),
              (pa.types.is_binary, "binary"), (pa.types.is_large_binary, "binary"),
              (pa.types.is_fixed_size_binary, "binary"), (pa.types.is_date, "date"), (pa.types.is_time, "time"))
    for test, name in simple:
        if test(t):
            return name
    if pa.types.is_timestamp(t):
        return "timestamptz" if t.tz else "timestamp_ntz"   # naive: wall time (Iceberg `timestamp`)
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_dictionary(t):
        return arrow_type(t.value_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return f"array<{arrow_type(t.value_type)}>"
    if pa.types.is_map(t):
        return f"map<{arrow_type(t.key_type)},{arrow_type(t.item_type)}>"
    if pa.types.is_struct(t):
        return "struct<" + ",".join(f"{t.field(i).name}:{arrow_type(t.field(i).type)}" for i in range(t.num_fields)) + ">"
    return str(t)  # anything else (e.g. a union): DuckDB reads it from the files as it is


def _legacy_type(t: Any) -> str:
    """How imports before nested and naive-timestamp types were spelled (`str(t)` for nested types,
    `timestamp` for a naive one): a table imported then upgrades to `arrow_type`'s spelling."""
    import pyarrow as pa

    if pa.types.is_timestamp(t) and not t.tz:
        return "timestamp"
    if pa.types.is_nested(t):
        return str(t)
    return arrow_type(t)


def _partition_type(values: list[str | None]) -> str:
    """The type of a partition column from its directory values: bigint, date or string."""
    present = [v for v in values if v is not None]
    if present and all(v.lstrip("-").isascii() and v.lstrip("-").isdigit() for v in present):
        return "bigint"
    if present and all(len(v) == 10 and v[4] == "-" and v[7] == "-" and v.replace("-", "").isdigit()
                       for v in present):
        return "date"
    return "string"


def _typed(raw: str | None, type_: str) -> Any:
    return int(raw) if raw is not None and type_ == "bigint" else raw


def _skipped(name: str) -> bool:
    return name.startswith(("_", "."))


def scan_table_dir(root: str) -> list[_Found]:
    """Every Parquet file below `root` with its partition chain; errors name the offending path."""
    out: list[_Found] = []
    columns: tuple[str, ...] | None = None
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not _skipped(d))
        rel = os.path.relpath(dirpath, root)
        parts = [] if rel == "." else rel.split(os.sep)
        chain: list[tuple[str, str | None]] = []
        for part in parts:
            col, sep, raw = part.partition("=")
            if not sep or not col:
                raise InvalidValueError(f"{os.path.join(root, *parts)}: directory {part!r} is not a partition "
                                        "'column=value'; a table directory holds Parquet files and column=value "
                                        "directories only (import each table directory on its own)", path=dirpath)
            value = urllib.parse.unquote(raw)
            chain.append((urllib.parse.unquote(col), None if value == DEFAULT_PARTITION else value))
        for name in sorted(filenames):
            if _skipped(name):
                continue
            path = os.path.join(dirpath, name)
            if not name.endswith(".parquet"):
                raise InvalidValueError(f"{path}: not a .parquet file; move it out of the table's directory or "
                                        "rename it with a leading '_' to have it skipped", path=path)
            cols = tuple(c for c, _v in chain)
            if columns is None:
                columns = cols
            elif cols != columns:
                raise InvalidValueError(f"{path}: partition columns {list(cols)} differ from {list(columns)} of "
                                        "the table's other files; every file sits at the same partition depth",
                                        path=path)
            info = os.stat(path)
            out.append(_Found(path, tuple(chain), info.st_size, info.st_mtime_ns))
    return out


class _TableImport:
    def __init__(self, cat: CatalogAPI, root: str, name: str, progress: Progress) -> None:
        self.cat, self.root, self.name, self.progress = cat, os.path.abspath(root), name, progress
        self.tpath = lake.table_path(name)
        self.result = ParquetImportResult(name)

    def run(self) -> ParquetImportResult:
        found = scan_table_dir(self.root)
        if not found:
            raise InvalidValueError(f"{self.root}: no Parquet file below it; nothing to import for {self.name}",
                                    path=self.root)
        current = self.cat.get(self.tpath)
        if current is not None:
            owner = ((current.value.get("properties") or {}).get("parquet") or {}).get("root")
            if owner != self.root:
                raise PreconditionError(
                    f"{self.name} exists and was not imported from {self.root} (its files were written by "
                    f"{'an import of ' + owner if owner else 'another writer'}); import into another table name",
                    table=self.name)
        have = {} if current is None else {o.path.rsplit("/", 1)[-1]: o for o in self.cat.plan_files(self.name)}
        want = {f.key: f for f in found}
        new = [f for k, f in want.items() if k not in have]
        gone = [o for k, o in have.items() if k not in want]
        if not new and not gone and current is not None:
            return self.result
        values = self._read(new)
        schema, pcols = self._schema(current, found, values)
        kept = [o.value for k, o in have.items() if k in want]
        self._commit(current, schema, pcols, found, new, values, gone, kept)
        return self.result

    def _read(self, new: list[_Found]) -> dict[str, dict[str, Any]]:
        import pyarrow.parquet as pq

        from catalog_core.footers import footer_stats

        out: dict[str, dict[str, Any]] = {}
        self.progress(self.name, 0, len(new))
        for i, f in enumerate(new, 1):
            try:
                meta = pq.ParquetFile(f.path).metadata
            except Exception as exc:  # not Parquet, truncated, unreadable: name the file
                raise InvalidValueError(f"{f.path}: cannot read its Parquet footer ({exc}); remove the file or "
                                        "rename it with a leading '_' to have it skipped", path=f.path) from None
            value = {"obj_type": "file", "path": f.path, "format": "parquet", "size_bytes": f.size,
                     "mtime_ns": f.mtime_ns, **footer_stats(meta)}
            arrow = meta.schema.to_arrow_schema()
            value["_types"] = {fld.name: arrow_type(fld.type) for fld in arrow}
            value["_legacy"] = {fld.name: _legacy_type(fld.type) for fld in arrow}
            out[f.key] = value
            self.progress(self.name, i, len(new))
        return out

    def _schema(self, current: Any, found: list[_Found], values: dict[str, dict[str, Any]]) -> tuple[
            dict[str, Any], list[tuple[str, str]]]:
        """The table's schema after this run, and its partition columns with their types."""
        old = lake.Schema.from_raw((current.value.get("schema") if current is not None else None) or {})
        cols: list[dict[str, Any]] = [{**c.extra, "id": c.id, "name": c.name, "type": c.type, "nullable": True}
                                      for c in old.columns]   # extras (doc, a REST writer's iceberg_type) kept
        by_name = {c["name"]: c for c in cols}
        next_id = max([int(c["id"] or 0) for c in cols] + [0]) + 1
        pnames = [c for c, _v in found[0].chain]
        ptypes = [(c, _partition_type([f.chain[i][1] for f in found])) for i, c in enumerate(pnames)]
        seen_in: dict[str, str] = {}
        for v in values.values():
            legacy = v.pop("_legacy")
            for cname, ctype in v.pop("_types").items():
                if cname in pnames:
                    continue
                have = by_name.get(cname)
                if have is None:
                    have = {"id": next_id, "name": cname, "type": ctype, "nullable": True}
                    next_id += 1
                    cols.append(have)
                    by_name[cname] = have
                    self.result.columns_added.append(cname)
                    seen_in[cname] = v["path"]
                elif have["type"] != ctype and have["type"] == legacy.get(cname) and cname not in seen_in:
                    have["type"] = ctype   # an earlier import's spelling of the same type: the table's schema is upgraded
                    seen_in[cname] = v["path"]
                elif have["type"] != ctype:
                    where = seen_in.get(cname, "the table's schema")
                    raise InvalidValueError(f"{v['path']}: column {cname!r} is {ctype} here but {have['type']} in "
                                            f"{where}; rewrite the file with the table's type or import it as "
                                            "another table", path=v["path"], column=cname)
        for pname, ptype in ptypes:
            if pname not in by_name:
                col: dict[str, Any] = {"id": next_id, "name": pname, "type": ptype, "nullable": True}
                next_id += 1
                cols.append(col)
                by_name[pname] = col
        schema = {"schema_id": old.schema_id if old.columns and len(cols) == len(old.columns) else
                  (old.schema_id or 0) + (1 if old.columns else 0), "columns": cols}
        return schema, ptypes

    def _commit(self, current: Any, schema: dict[str, Any], ptypes: list[tuple[str, str]], found: list[_Found],
                new: list[_Found], values: dict[str, dict[str, Any]], gone: list[Any],
                kept: list[dict[str, Any]]) -> None:
        tpath, types = self.tpath, dict(ptypes)
        msg = f"import parquet {self.root}: +{len(new)} -{len(gone)} files"
        meta = {"provenance": "import", "source": "parquet", "root": self.root}
        with self.cat.transaction(author=AUTHOR, message=msg, meta=meta) as txn:
            if current is None:
                self._ancestors(txn)
                txn.add(tpath, {"obj_type": "table", "location": self.root, "format": "parquet", "schema": schema,
                                "partition_by": [c for c, _t in ptypes], "stats": st.empty(),
                                "properties": {"parquet": {"root": self.root}}})
            elif schema != current.value.get("schema"):
                txn.merge(tpath, {"schema": {"op": "set", "val": schema}})
            known = set() if current is None else {o.path for o in self._partitions(txn)}
            per_part: dict[str, list[dict[str, Any]]] = {}
            for f in new:
                ppath, pvalues = self._partition(txn, f, types, known)
                txn.add(f"{ppath}/{f.key}", values[f.key], leaf=True)
                per_part.setdefault(ppath, []).append(st.of_file(values[f.key], pvalues))
            for o in gone:
                txn.remove(o.path)
            self._restat(txn, kept, per_part, types, found)
        self.result.vid = txn.vid
        self.result.files_added, self.result.files_removed = len(new), len(gone)

    def _ancestors(self, txn: TransactionAPI) -> None:
        for anc, kind in ((parent_of(parent_of(self.tpath)), "catalog"), (parent_of(self.tpath), "namespace")):
            if self.cat.get(anc) is None:
                txn.add(anc, {"obj_type": kind, "properties": {}})

    def _partitions(self, txn: TransactionAPI) -> list[Any]:
        out, steps = [], lake.exact_query(self.tpath)
        for _ in range(len(self._pcols())):
            steps += '/[obj_type = "partition"]'
            out += txn.query(steps)
        return out

    def _pcols(self) -> list[str]:
        cur = self.cat.get(self.tpath)
        return list((cur.value.get("partition_by") if cur is not None else None) or [])

    def _partition(self, txn: TransactionAPI, f: _Found, types: dict[str, str], known: set[str]) -> tuple[
            str, dict[str, Any]]:
        cur, values = self.tpath, {}
        for col, raw in f.chain:
            values[col] = _typed(raw, types[col])
            cur = f"{cur}/{lake.partition_id(col, values[col])}"
            if cur not in known:
                txn.add(cur, {"obj_type": "partition", **values, "stats": st.empty()})
                known.add(cur)
        return cur, values

    def _restat(self, txn: TransactionAPI, kept: list[dict[str, Any]], per_part: dict[str, list[dict[str, Any]]],
                types: dict[str, str], found: list[_Found]) -> None:
        """Set the stats of every partition level and of the table from the files they hold after this
        commit (the kept files' stored values plus the new ones): one pass, no incremental drift."""
        by_path: dict[str, list[dict[str, Any]]] = {}
        for v in kept:
            chain = next((f.chain for f in found if f.path == v["path"]), ())
            pvalues = {c: _typed(r, types[c]) for c, r in chain}
            cur = self.tpath
            for col in pvalues:
                cur = f"{cur}/{lake.partition_id(col, pvalues[col])}"
            by_path.setdefault(cur, []).append(st.of_file(v, pvalues))
        for p, parts in per_part.items():
            by_path.setdefault(p, []).extend(parts)
        totals: dict[str, dict[str, Any]] = {}
        for p, parts in by_path.items():
            agg = st.combine(parts)
            cur = p
            while True:
                st.add(totals.setdefault(cur, st.empty()), agg)
                if cur == self.tpath:
                    break
                cur = parent_of(cur)
        for p in self._partitions(txn):
            totals.setdefault(p.path, st.empty())  # a partition whose every file is gone
        for p, agg in sorted(totals.items()):
            txn.merge(p, st.set_delta(agg))


def _noop(table: str, done: int, total: int) -> None:
    return None


def import_parquet(cat: CatalogAPI, root: str, into: str, progress: Progress | None = None) -> list[ParquetImportResult]:
    """Import the Parquet tree at `root`: into a table (`catalog.namespace.table`: `root` is its
    directory) or a namespace (`catalog.namespace`: each sub-directory of `root` is a table named
    after it). Tables are committed one by one; results in name order."""
    if not isinstance(root, str) or not os.path.isdir(root):
        raise InvalidValueError(f"{root!r} is not a directory; give the directory of a Parquet tree", path=root)
    parts = into.split(".") if isinstance(into, str) else []
    if len(parts) not in (2, 3) or not all(parts):
        raise InvalidValueError(f"into must be 'catalog.namespace' (a table per sub-directory) or "
                                f"'catalog.namespace.table' (the directory is one table), got {into!r}", into=into)
    prog = progress or _noop
    if len(parts) == 3:
        return [_TableImport(cat, root, into, prog).run()]
    dirs = sorted(d for d in os.listdir(root) if not _skipped(d) and os.path.isdir(os.path.join(root, d)))
    if not dirs:
        raise InvalidValueError(f"{root}: no table directories below it; to import the directory itself as one "
                                f"table, give --into {into}.<table>", path=root)
    out = []
    for d in dirs:
        name = f"{into}.{d}"
        try:
            lake.table_path(name)
        except InvalidValueError as exc:
            raise InvalidValueError(f"{os.path.join(root, d)}: {d!r} cannot be a table name ({exc.message}); "
                                    "rename the directory", path=os.path.join(root, d)) from None
        out.append(_TableImport(cat, os.path.join(root, d), name, prog).run())
    return out
