"""eval/harness/questions.py: the question file format and the errors it gives for bad files (no lake needed).
Each error must name the file, the question and what to do."""

from __future__ import annotations

import textwrap

import pytest

from eval.harness.questions import TAGS, QuestionFileError, load_questions

GOOD = """
- id: a1
  question: What was net revenue yesterday?
  gold_sql: SELECT 1
  tables: [acme.core.fct_orders]
  tags: [metric, freshness]
- id: a2
  question: How much did we sell yesterday?
  gold_sql: SELECT 1
  tags: [metric]
  paraphrase_of: a1
- id: u1
  question: What is the profit margin by supplier?
  tags: [unanswerable]
"""


def write(tmp_path, text: str, name: str = "qs.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text), encoding="utf-8")
    return p


def error(tmp_path, text: str) -> str:
    p = write(tmp_path, text)
    with pytest.raises(QuestionFileError) as e:
        load_questions(p)
    msg = str(e.value)
    assert str(p) in msg  # every error names the file
    return msg


def test_a_good_file_loads(tmp_path):
    qs = load_questions(write(tmp_path, GOOD))
    assert [q.id for q in qs] == ["a1", "a2", "u1"]
    assert qs[0].tables == ("acme.core.fct_orders",) and qs[0].tags == ("metric", "freshness")
    assert qs[0].decimals == 2 and qs[0].order_matters is False and qs[0].paraphrase_of is None
    assert qs[1].paraphrase_of == "a1"
    assert qs[2].unanswerable and qs[2].gold_sql is None and not qs[0].unanswerable


def test_the_questions_mapping_form_loads(tmp_path):
    body = "questions:\n" + textwrap.indent(textwrap.dedent(GOOD), "  ")
    assert [q.id for q in load_questions(write(tmp_path, body))] == ["a1", "a2", "u1"]


def test_tags_are_the_harness_tags():
    assert set(TAGS) == {"lookalike", "deprecated", "join", "metric", "fiscal", "enum", "freshness", "unit",
                         "grain", "control", "unanswerable",
                         "definition", "test_accounts", "timezone", "unit_hidden", "code_meaning"}


def test_duplicate_id(tmp_path):
    msg = error(tmp_path, GOOD + """
- id: a1
  question: Again?
  gold_sql: SELECT 2
""")
    assert "question id 'a1' appears twice; ids must be unique" in msg


def test_unanswerable_with_gold(tmp_path):
    msg = error(tmp_path, """
- id: u9
  question: What is the profit margin by supplier?
  gold_sql: SELECT 1
  tags: [unanswerable]
""")
    assert "question u9 is tagged unanswerable but has gold_sql" in msg and "remove gold_sql" in msg


@pytest.mark.parametrize("gold", ["", "gold_sql: '   '", "gold_sql: null"])
def test_missing_gold(tmp_path, gold):
    msg = error(tmp_path, f"""
- id: m1
  question: What was net revenue yesterday?
  {gold}
  tags: [metric]
""")
    assert "question m1 has no gold_sql; add one or tag it unanswerable" in msg


def test_unknown_tag(tmp_path):
    msg = error(tmp_path, """
- id: t1
  question: What was net revenue yesterday?
  gold_sql: SELECT 1
  tags: [metric, revenue]
""")
    assert "question t1" in msg and "tags.1" in msg and "'lookalike'" in msg and "'unanswerable'" in msg


def test_unknown_paraphrase_of(tmp_path):
    msg = error(tmp_path, GOOD + """
- id: p9
  question: Sales yesterday?
  gold_sql: SELECT 1
  paraphrase_of: q404
""")
    assert "question p9 is a paraphrase of unknown question 'q404'" in msg


def test_invalid_yaml(tmp_path):
    msg = error(tmp_path, """
- id: y1
  question: [unclosed
  gold_sql: SELECT 1
""")
    assert "not valid YAML" in msg


def test_not_a_list(tmp_path):
    msg = error(tmp_path, "id: q1\nquestion: What?\n")
    assert "expected a YAML list of questions" in msg


def test_unknown_field(tmp_path):
    msg = error(tmp_path, """
- id: f1
  question: What was net revenue yesterday?
  gold_sql: SELECT 1
  gold_answer: 42
""")
    assert "question f1" in msg and "gold_answer" in msg


def test_unreadable_file(tmp_path):
    p = tmp_path / "missing.yaml"
    with pytest.raises(QuestionFileError) as e:
        load_questions(p)
    assert str(p) in str(e.value) and "cannot read the question file" in str(e.value)
