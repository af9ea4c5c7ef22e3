"""Question files (DESIGN.md, Evaluation harness; HARNESS.md, Questions).

A file is a YAML list of questions (or a mapping with a `questions:` list):

    - id: q01
      question: What was net revenue in the northeast region in fiscal Q4 of FY2024?
      gold_sql: SELECT ...          # run at the same pinned snapshot as the agent's SQL; null when unanswerable
      order_matters: false
      decimals: 2
      tables: [acme.core.fct_order_items, acme.core.fct_orders, acme.core.dim_store, acme.core.dim_date]
      tags: [metric, fiscal, join]
      paraphrase_of: q07            # optional: the question this one rephrases

Invariants checked on load, each error naming the file, the question and what to fix: ids are unique;
tags come from TAGS; a question tagged `unanswerable` has no gold SQL (its gold is an abstention) and
every other question has one; `paraphrase_of` names a question of the same file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["TAGS", "TRAP_TAGS", "Tag", "Question", "QuestionFileError", "load_questions"]

Tag = Literal["lookalike", "deprecated", "join", "metric", "fiscal", "enum", "freshness", "unit", "grain",
              "control", "unanswerable",
              # the enterprise world's traps only the annotations reveal (docs/eval-lake.md)
              "definition", "test_accounts", "timezone", "unit_hidden", "code_meaning"]
TAGS: tuple[str, ...] = Tag.__args__  # type: ignore[attr-defined]
# the tags of the enterprise world's annotation-only traps (no Acme question carries them)
TRAP_TAGS: tuple[str, ...] = ("definition", "test_accounts", "timezone", "unit_hidden", "code_meaning")


class Question(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    gold_sql: str | None = None
    order_matters: bool = False
    decimals: int = Field(default=2, ge=0, le=12)
    tables: tuple[str, ...] = ()
    tags: tuple[Tag, ...] = ()
    paraphrase_of: str | None = None

    @property
    def unanswerable(self) -> bool:
        return "unanswerable" in self.tags


class QuestionFileError(ValueError):
    """A question file that cannot be used; the message names the file, the question and the fix."""


def _parse(data: Any, where: str) -> list[Question]:
    if isinstance(data, dict) and "questions" in data:
        data = data["questions"]
    if not isinstance(data, list):
        raise QuestionFileError(f"{where}: expected a YAML list of questions (or `questions:` with a list)")
    out: list[Question] = []
    for i, item in enumerate(data):
        qid = item.get("id", f"#{i + 1}") if isinstance(item, dict) else f"#{i + 1}"
        try:
            out.append(Question.model_validate(item))
        except ValidationError as e:
            errs = "; ".join(f"{'.'.join(map(str, x['loc'])) or 'item'}: {x['msg']}" for x in e.errors())
            raise QuestionFileError(f"{where}: question {qid}: {errs}") from None
    _check(out, where)
    return out


def _check(qs: Sequence[Question], where: str) -> None:
    seen: set[str] = set()
    for q in qs:
        if q.id in seen:
            raise QuestionFileError(f"{where}: question id {q.id!r} appears twice; ids must be unique")
        seen.add(q.id)
    for q in qs:
        if q.unanswerable and q.gold_sql:
            raise QuestionFileError(f"{where}: question {q.id} is tagged unanswerable but has gold_sql; "
                                    "its gold is an abstention, remove gold_sql")
        if not q.unanswerable and not (q.gold_sql or "").strip():
            raise QuestionFileError(f"{where}: question {q.id} has no gold_sql; add one or tag it unanswerable")
        if q.paraphrase_of is not None and q.paraphrase_of not in seen:
            raise QuestionFileError(f"{where}: question {q.id} is a paraphrase of unknown question "
                                    f"{q.paraphrase_of!r}")


def load_questions(path: str | Path) -> list[Question]:
    """Read and check a question file (any file in this format, public or held out)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise QuestionFileError(f"{p}: cannot read the question file: {e.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise QuestionFileError(f"{p}: not valid YAML: {e}") from None
    return _parse(data, str(p))
