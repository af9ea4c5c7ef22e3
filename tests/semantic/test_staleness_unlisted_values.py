"""definitions at data depth: a description listing the values of flag columns no enum or sample values
list ("Promotions and the channels they ran on (Y/N flags)") after a restatement recoded them ('1'/'0').
The round-24 TPC-DS tester's promotion flags (wave 5, session 33): missed at both depths, since only a
listed value was ever read in prose. A small lake of its own; its controls."""

from __future__ import annotations

import pytest

import semantic as sm
from semantic.models import Fix

P = "acme.core.promotion"
TEXT = "Promotions and the channels they ran on (Y/N flags)."


def _lake(elk, text: str = TEXT) -> dict[str, list]:
    rows = {"promo_sk": list(range(1, 9)), "by_email": ["Y", "N"] * 4, "by_tv": ["N"] * 8,
            "name": [f"promo {i}" for i in range(1, 9)]}
    elk.table(P, [("promo_sk", "bigint"), ("by_email", "string"), ("by_tv", "string"), ("name", "string")], at=0,
              rows=rows)
    sm.annotate(elk.cat, P, {"description": text, "grain": {"text": "one row per promotion", "keys": ["promo_sk"]}},
                author="a", time=elk.day(0.5))
    return rows


def _found(elk, depth="data"):
    return [f for f in sm.staleness(elk.cat, P, depth=depth, now=elk.day(3), merge=False)
            if f.annotation == "table.description"]


def _recode(rows: dict[str, list]) -> dict[str, list]:
    one = {"Y": "1", "N": "0"}
    return {**rows, "by_email": [one[v] for v in rows["by_email"]], "by_tv": [one[v] for v in rows["by_tv"]]}


def test_flags_no_enum_lists_recoded_make_the_text_listing_them_stale(elk):
    rows = _lake(elk)
    elk.overwrite(P, _recode(rows), at=1)
    [f] = _found(elk)
    assert f.reason == "values_restated" and f.evidence.values["column"] == "by_email"
    assert f.fixes == [Fix(action="investigate", params={"columns": ["by_email"]})]  # the text speaks of both
    assert _found(elk, "metadata") == []  # the values were never listed: only the rows tell


@pytest.mark.parametrize("case", ["rewrite_kept", "append_only", "one_word", "many_values"])
def test_controls_kept_values_appends_a_lone_word_and_a_free_text_column(elk, case):
    """The flags rewritten unchanged; '1' rows appended beside Y/N (appends remove no value); a text naming
    one word that is also a value ("Y" alone); a free-text column's values, more than ten."""
    if case == "one_word":
        rows = _lake(elk, "Promotions; column Y is reserved.")
        elk.overwrite(P, _recode(rows), at=1)
    elif case == "many_values":
        rows = _lake(elk, "Promotions named promo 1 to promo 8 (Y/N flags).")
        elk.overwrite(P, {**rows, "name": [f"offer {i}" for i in range(1, 9)]}, at=1)
    else:
        rows = _lake(elk)
        if case == "rewrite_kept":
            elk.overwrite(P, rows, at=1)
        else:
            elk.append(P, {"promo_sk": [9], "by_email": ["1"], "by_tv": ["0"], "name": ["promo 9"]}, at=1)
    assert _found(elk) == []
