"""The embedded engine (private): storage, keys, codec, caches, MVOCC, locks, write log, executor,
planning, transactions. Nothing outside catalog_core imports this package; use `catalog_core`'s
public names and the `catalog_core.api` protocols."""
