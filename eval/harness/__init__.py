"""The evaluation harness (HARNESS.md): question files, the comparator, the runner, metrics and report."""

from eval.harness.questions import TAGS, Question, QuestionFileError, load_questions

__all__ = ["TAGS", "Question", "QuestionFileError", "load_questions"]
