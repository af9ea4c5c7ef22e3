"""DuckDB over exactly a snapshot's Parquet files: the reader (`open_duckdb`, `open_table`,
`run_sql`), the sandbox for agent SQL, and the catalog-to-DuckDB type mapping."""

from catalog_core.sql.reader import SqlResult, open_duckdb, open_table, run_sql

__all__ = ["SqlResult", "open_duckdb", "open_table", "run_sql"]
