"""The staleness detector against the stale manifest of the Acme lake, plain and cryptic, at both
depths (issue 38, item 1): precision >= 0.95, recall >= 0.90, suggestion accuracy >= 0.95 (the
repair a finding offers - rename target and scale, successor, value map, new keys, join key - is the
one the lake's history calls for), and at most 2 non-fresh findings on the enriched history.

The table it prints is the one in docs/findings.md; `python -m eval.harness.detector LAKE...`
prints the same. Lakes: the session fixture `lake_dir` (SEMCAT_EVAL_LAKE) and `cryptic_dir` of
test_cryptic.py (SEMCAT_EVAL_LAKE_CRYPTIC); each is copied before it is opened."""

from __future__ import annotations

import shutil

import pytest

import catalog_core as cc
from eval.harness.detector import detector_scores, read_manifest, table_text
from eval.lake import D0, data_dir
from eval.lake.naming import load_names
from tests.eval.test_cryptic import cryptic_dir  # noqa: F401  (the cryptic lake's session fixture)

PRECISION, RECALL, SUGGESTIONS, ALARMS = 0.95, 0.90, 0.95, 2


def _scores(src: str, tmp_path):
    copy = str(tmp_path / "lake")
    shutil.copytree(src, copy, symlinks=True)
    st, en = cc.Catalog.open(data_dir(copy, "stale")), cc.Catalog.open(data_dir(copy, "enriched"))
    try:
        return detector_scores(st, en, read_manifest(copy), now=D0, naming=load_names(copy))
    finally:
        st.close()
        en.close()


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["plain", "cryptic"])
def test_detector_quality_on_the_acme_lake(variant, request, tmp_path):
    src = request.getfixturevalue("lake_dir" if variant == "plain" else "cryptic_dir")
    scores = _scores(src, tmp_path)
    print("\n" + table_text({variant: scores}))
    for depth, s in scores.items():
        why = (f"{variant}/{depth}: missed {s.missed}; flagged outside the manifest {s.extra}; wrong repairs "
               f"{s.wrong_suggestions}; enriched alarms {s.alarms}")
        assert s.precision >= PRECISION, why
        assert s.recall >= RECALL, why
        assert s.suggestion_accuracy is not None and s.suggestion_accuracy >= SUGGESTIONS, why
        assert s.false_alarms is not None and s.false_alarms <= ALARMS, why
        assert s.suggestions_scored >= 15, why  # the repairs are really scored, not vacuously right
