"""DuckDB over exactly a snapshot's Parquet files: the reader (`open_duckdb`, `open_table`,
`run_sql`), the sandbox for agent SQL, and the catalog-to-DuckDB type mapping."""

from catalog_core.sql.reader import SqlResult, check_sql, open_duckdb, open_table, run_sql

__all__ = ["SqlResult", "check_sql", "open_duckdb", "open_table", "run_sql"]
