"""Static proof that both catalogs implement the one interface: mypy checks these assignments
(a missing method or a different signature is a type error). Nothing here runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from catalog_core._engine.catalog import Catalog
    from catalog_core._engine.txn import Transaction
    from catalog_core.api import CatalogAPI, TransactionAPI
    from catalog_core.remote.client import RemoteCatalog, RemoteTransaction

    def _embedded(cat: Catalog, txn: Transaction) -> tuple[CatalogAPI, TransactionAPI]:
        return cat, txn

    def _remote(cat: RemoteCatalog, txn: RemoteTransaction) -> tuple[CatalogAPI, TransactionAPI]:
        return cat, txn
