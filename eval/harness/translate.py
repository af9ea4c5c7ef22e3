"""The questions' gold SQL rewritten for a lake variant: `translate_questions` over the SQL translation of
eval.lake.translate (which the lake's build shares; it lives in eval.lake so the build never imports the
harness). `translate`, `TranslateError` and `naming_for_lake` are re-exported from there."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from eval.harness.questions import Question
from eval.lake.translate import TranslateError, naming_for_lake, translate

if TYPE_CHECKING:
    from eval.lake.naming import Naming

__all__ = ["translate", "translate_questions", "TranslateError", "naming_for_lake"]


def translate_questions(qs: Sequence[Question], naming: "Naming") -> list[Question]:
    """The questions with their gold SQL and gold tables under `naming`'s names (the same objects for plain)."""
    if naming.identity:
        return list(qs)
    return [q.model_copy(update={"gold_sql": translate(q.gold_sql, naming) if q.gold_sql else q.gold_sql,
                                 "tables": tuple(naming.full_table(t) for t in q.tables)}) for q in qs]
