"""Class `documented_ranges`: a date range a description documents ("one row per date from
2023-01-29 to 2026-01-31", "between 2024-01-01 and 2024-12-31") that the data now exceeds.

Evidence: the annotation's text, its basis statistics (which date column the range described: one
whose values then lay within it) and the column's statistics now. Only full ranges (a start and an
end) are read; a single bound ("until", "since") often speaks of something else (a code's validity,
a deprecation). No fix: the new range is for a person to write (the finding gives the data's)."""

from __future__ import annotations

import re

from catalog_core.model import parse_time
from semantic.history import type_family
from semantic.models import Annotation, Finding
from semantic.staleness.core import DAY, Table, cause_of, day_of, finding

_DATE = r"(\d{4}-\d{2}-\d{2})"
_RANGE = re.compile(rf"(?:from|between)\s+{_DATE}\s+(?:to|through|until|and)\s+{_DATE}|{_DATE}\s*(?:–|—|\.\.)\s*{_DATE}",
                    re.IGNORECASE)


def documented_ranges(text: object) -> list[tuple[float, float]]:
    """The full date ranges (start, end of the end day) a text states, as epoch seconds."""
    out = []
    for m in _RANGE.finditer(str(text or "")):
        a, b = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        lo, hi = parse_time(a), parse_time(b)
        if lo is not None and hi is not None and lo <= hi:
            out.append((lo, hi + DAY))
    return out


def range_exceeded(t: Table, ann: Annotation) -> list[Finding]:
    """range_exceeded: a date column whose values at the annotation's basis lay within a range the
    text documents now reaches beyond it (its minimum before the start, or its maximum past the end)."""
    ranges = documented_ranges(ann.value)
    if not ranges:
        return []
    b = ann.provenance.basis
    cols = [c for c in t.cols.values() if type_family(c.type) == "time" and
            (ann.column is None or c.name.lower() == str(ann.column).lower())]
    out: list[Finding] = []
    for lo, hi in ranges:
        for c in cols:
            then, now = b.stats.get(c.name), t.stat(c.name) or {}
            if then is None:
                continue
            tlo, thi = parse_time(then.min), parse_time(then.max)
            nlo, nhi = parse_time(now.get("min")), parse_time(now.get("max"))
            if None in (tlo, thi, nlo, nhi) or not (lo <= tlo and thi < hi):  # type: ignore[operator]
                continue  # the range did not describe this column when it was written
            assert nlo is not None and nhi is not None
            if nlo >= lo and nhi < hi:
                continue
            last = t.tl.data_commits[-1] if t.tl.data_commits else (t.obj.vid, 0.0)
            out.append(finding(ann, f"{t.name}.{c.name}" if ann.column else t.name, "range_exceeded", "stale",
                               f"the text documents {day_of(lo)} to {day_of(hi - DAY)}; {c.name} now spans "
                               f"{now.get('min')} to {now.get('max')}: check the range the text states",
                               [last[0]], values={"column": c.name, "documented": [day_of(lo), day_of(hi - DAY)],
                                                  "now": [now.get("min"), now.get("max")]},
                               cause=cause_of("range", t.name, last[0], c.name)))
            return out
    return out
