"""Issue 35, item 5 (deliver 4): provenance enforced inside the transaction.

- The race: an agent's annotate decided "proposal or write" from a read outside its transaction,
  then wrote blind; 4 of 900 concurrent trials overwrote a person's annotation. Now the policy's
  reads are part of the agent's MVOCC read set: 900 trials of a person and an agent annotating the
  same column at once end with 0 overwrites.
- Forged provenance: `/v1/semantic/annotate` and a raw `/v1/commit` of an annotation take the
  author from the token's principal and refuse a `source` the token may not claim (403).
- Human-only keys: an agent's catalog `instructions` (and certification, and the deprecation or
  reporting flags of a certified table) become proposals; agent-written text that reaches other
  agents is marked as such.
- Bounds: a 3 MB description and 100,000 tags are refused with an error naming the field and the
  limit.
"""

from __future__ import annotations

import os
import threading

import httpx
import pytest

import catalog_core as cc
import semantic as sm
from catalog_core import lake
from eval.fixtures.lakes import LakeBuilder
from semantic.annotations import new_annotation

T = "acme.core.orders"
TRIALS = 900
TABLES, COLUMNS = 30, 30


def _history_overwrites(cat, path: str) -> int:
    """Versions by an agent that replaced a version by a person (in commit order)."""
    last = None
    bad = 0
    for v in sorted(cat.history(path), key=lambda v: v.vid):
        src = ((v.value or {}).get("provenance") or {}).get("source") if v.value else None
        if src == "agent" and last == "human":
            bad += 1
        last = src
    return bad


@pytest.mark.slow  # ~30 s: 1,800 commits
def test_900_races_of_a_person_and_an_agent_end_in_0_overwrites(data_dir, tmp_path):
    cat = cc.Catalog.open(data_dir)
    try:
        lk = LakeBuilder(cat, tmp_path / "files", catalog="acme")
        names = [f"acme.race.t{i:02d}" for i in range(TABLES)]
        for n in names:
            lk.table(n, [(f"c{j:02d}", "bigint") for j in range(COLUMNS)], at=0)
        trials = [(n, f"c{j:02d}") for n in names for j in range(COLUMNS)][:TRIALS]
        barrier = threading.Barrier(2)
        outcome = {"proposal": 0, "direct": 0}

        def person(t: str, c: str) -> None:
            barrier.wait()
            sm.annotate(cat, t, {"description": f"{c}, as the owner describes it"}, column=c, author="alice",
                        source="human")

        def agent(t: str, c: str) -> None:
            barrier.wait()
            vid = sm.annotate(cat, t, {"description": f"{c}, as an agent guessed"}, column=c, author="agent:bot",
                              source="agent", confidence=0.6)
            if any(a.kind == "review" and a.vid == vid for a in sm.read_annotations(cat, t, vid)):
                outcome["proposal"] += 1
            else:
                outcome["direct"] += 1

        for t, c in trials:
            threads = [threading.Thread(target=f, args=(t, c)) for f in (person, agent)]
            for th in threads:
                th.start()
            for th in threads:
                th.join(60)
                assert not th.is_alive()
        overwrites = 0
        for t, c in trials:
            cid = next(col["id"] for col in cat.get(lake.object_path(t)).value["schema"]["columns"] if col["name"] == c)
            overwrites += _history_overwrites(cat, lake.semantic_path(t, f"column.{cid}.description"))
        print(f"\n[race] {TRIALS} trials: {overwrites} overwrites; the agent came second {outcome['proposal']} "
              f"times (a proposal), first {outcome['direct']} times")
        assert overwrites == 0
        assert outcome["proposal"] + outcome["direct"] == TRIALS
        assert outcome["proposal"] > 0  # the races were real: the person's write came first at least once
    finally:
        cat.close()
