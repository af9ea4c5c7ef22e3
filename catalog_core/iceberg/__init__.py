"""Import Iceberg tables from any pyiceberg catalog (DESIGN.md, Readers and writers).

    from pyiceberg.catalog import load_catalog
    import catalog_core as cc
    ice = load_catalog("prod", type="sql", uri="sqlite:///ice.db", warehouse="file:///lake")
    res = cc.iceberg.import_table(cat, ice, "db.orders", into="acme.core.orders")
    res = cc.iceberg.sync_table(cat, ice, "db.orders", into="acme.core.orders")   # new snapshots only
    for ident in cc.iceberg.catalog_tables(ice, namespace=None):   # every table (nested namespaces too)
        cc.iceberg.import_table(cat, ice, ident, into=cc.iceberg.target_name("acme", ident))

What lands in the catalog:

- the table `into` (catalog and namespace created if missing): `location` is the Iceberg table's,
  `schema` its schema with Iceberg field ids as column ids (types in `convert`'s docstring),
  `partition_by` one `{name, transform, source_id, field_id}` per partition field, and
  `properties.iceberg` = {table, uuid, snapshot_id (the snapshot the table is synced to),
  format_version, metadata_location};
- one partition level per partition field, named `<field name>=<value>` (`lake.partition_id`):
  identity and truncate keep the source column's value (as in file statistics: dates and
  timestamps as ISO text), bucket the bucket number, and year / month / day / hour Iceberg's human
  text: `ts_year=2024`, `ts_month=2024-03`, `ts_day=2024-03-01`, `ts_hour=2024-03-01-13`. Transform
  partition values are not columns of the rows; an identity partition's column is read from the files;
- one file leaf per data file: path, record count, size, per-column min / max / null_count decoded
  by type, and `field_ids` (column name in the file -> column id) so a renamed column is still read
  from files written before the rename;
- the history: each snapshot of the main branch becomes one commit at the snapshot's time (or at the
  latest commit's time, if the catalog already has later commits: commit times never go back),
  author `import:iceberg`, message naming the snapshot id and operation, meta with
  `iceberg_snapshot_id`, `iceberg_operation`, `iceberg_table`, `provenance: import`, `source_file`
  (the metadata file) and `source_sha256`. A schema change after the last snapshot (e.g. a rename)
  is one more commit at the metadata's time. Table and partition `stats` are kept by merges, as the
  Spark bridge keeps them.

Re-running an import or a sync on unchanged input writes nothing. Not supported, refused before
anything is written: delete files (merge-on-read, position or equality deletes), partition spec
evolution, void transforms, non-Parquet data files, format version 3 types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from catalog_core.iceberg.importer import (
        AUTHOR,
        ImportResult,
        Progress,
        catalog_tables,
        import_table,
        sync_table,
        target_name,
    )

__all__ = ["import_table", "sync_table", "catalog_tables", "target_name", "ImportResult", "Progress", "AUTHOR"]


def __getattr__(name: str) -> Any:
    """The importer's names, imported on first use: `catalog_core` imports this package's light
    commit hook (`oncommit`) at start, which must not import pyiceberg."""
    if name in __all__:
        from catalog_core.iceberg import importer

        return getattr(importer, name)
    raise AttributeError(f"module 'catalog_core.iceberg' has no attribute {name!r}")
