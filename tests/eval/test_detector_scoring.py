"""How eval.harness.detector counts flags against the stale manifest (no lake: the detector's
findings are given)."""

from __future__ import annotations

import semantic as sm
from eval.harness.detector import detector_scores
from semantic.models import Evidence, Finding, Fix

T = "acme.ps.orders"


def _finding(key: str, fixes: list[Fix] | None = None) -> Finding:
    return Finding(target=f"{T}.st", annotation=key, annotations=[key], status="stale", reason="enum_violated",
                   message="m", evidence=Evidence(vids=[1]), fixes=fixes or [])


def _manifest(*keys: str) -> dict:
    return {"stale": [{"table": T, "key": k, "annotation": f"{T}:{k}", "kind": "outdated_enum_or_samples",
                       "detectable": True, "change": "d-45"} for k in keys]}


def test_a_coded_columns_labels_count_with_its_enum(monkeypatch):
    """The build writes a coded column's labels with its enum and skips them together in the stale
    history without counting them (eval.lake.build.UNCOUNTED): labels flagged beside their enum
    entry count for it, not as a flag outside the manifest (failed before: precision 1/2)."""
    found = [_finding("column.7.enum", [Fix(action="add_enum_values", params={"column": "st", "values": ["M2"]})]),
             _finding("column.7.labels", [Fix(action="investigate", params={"columns": ["st"]})])]
    monkeypatch.setattr(sm, "staleness", lambda *_a, **_k: found)
    s = detector_scores(None, None, _manifest("column.7.enum"), now=0, depths=("data",))["data"]  # type: ignore[arg-type]
    assert (s.precision, s.recall, s.extra) == (1.0, 1.0, [])


def test_labels_whose_enum_is_not_stale_stay_outside_the_manifest(monkeypatch):
    """Control: labels flagged while the manifest names no enum entry of that column (nor the
    labels) stay a flag outside it, under their own key."""
    monkeypatch.setattr(sm, "staleness", lambda *_a, **_k: [_finding("column.7.labels"), _finding("column.3.enum")])
    s = detector_scores(None, None, _manifest("column.3.enum"), now=0, depths=("data",))["data"]  # type: ignore[arg-type]
    assert s.extra == [f"{T}:column.7.labels"] and s.precision == 0.5
