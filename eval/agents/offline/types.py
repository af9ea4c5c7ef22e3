"""Shapes the offline agent's steps pass between them."""

from __future__ import annotations

from catalog_core.model import JSONScalar

__all__ = ["Lit", "Hit"]

# a literal the question names: (table, column, value, negated)
Lit = tuple[str, str, JSONScalar, bool]
# a literal found by value, with the question words it covers: (table, column, value, negated, words)
Hit = tuple[str, str, JSONScalar, bool, frozenset[str]]
