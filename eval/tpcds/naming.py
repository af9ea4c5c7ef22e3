"""The names a build of the TPC-DS world writes: `plain` (tpcgen-cli's names, the identity) or `cryptic`
(the same data under enterprise-style abbreviations, categorical values stored as codes), chosen
deterministically from the seed, the way eval/lake/naming.py names the Acme lake (eval/LAKE-cryptic.md).

It is an `eval.lake.naming.Naming` with `catalog="tpcds"`, its own coded columns (`CODED`, the columns the
data team's annotations enumerate) and the world's `schema` (eval/tpcds/schema.py), so every consumer of
the Acme names (the SQL translation of gold SQL, the harness, names.json) reads it unchanged.

Invariants (those of eval/lake/naming.py): the plain Naming is the identity; the cryptic one is a pure
function of the seed, injective, and no written name equals a plain one; a column maps the same way in
every table; every value the world ever writes to a coded column has a code (EXPEDITED, the ship-mode
type the world's change introduces, included); identifiers are lowercase and never an SQL keyword.
"""

from __future__ import annotations

import random

from eval.lake.naming import COL_POOL, COL_SFX, NAMESPACE_POOL, SQL_WORDS, TABLE_POOL, TABLE_SFX, Naming, code_values
from eval.tpcds.schema import COLUMNS, LATER

__all__ = ["naming", "DOMAINS", "CODED", "schema", "CATALOG"]

CATALOG = "tpcds"

# value domains: every label TPC-DS (tpcgen-cli) writes to the enumerated columns, plus the world's changes
DOMAINS: dict[str, list[str]] = {
    "i_category": ["Books", "Children", "Electronics", "Home", "Jewelry", "Men", "Music", "Shoes", "Sports", "Women"],
    "c_preferred_cust_flag": ["N", "Y"],
    "ca_location_type": ["apartment", "condo", "single family"],
    "hd_buy_potential": ["0-500", "501-1000", "1001-5000", "5001-10000", ">10000", "Unknown"],
    "sm_type": ["EXPRESS", "EXPEDITED", "LIBRARY", "NEXT DAY", "OVERNIGHT", "REGULAR", "TWO DAY"],
    "sm_carrier": ["AIRBORNE", "ALLIANCE", "BARIAN", "BOXBUNDLES", "DHL", "DIAMOND", "FEDEX", "GERMA", "GREAT EASTERN",
                   "HARMSTORF", "LATVIAN", "MSC", "ORIENTAL", "PRIVATECARRIER", "RUPEKSA", "TBS", "UPS", "USPS", "ZHOU",
                   "ZOUROS"],
    "d_day_name": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
}
# coded column (plain name) -> its domain
CODED: dict[str, str] = {c: c for c in DOMAINS}
_CODE_PREFIX = "ABCDEFGHJKLMNPRTVWXZ"


def schema() -> dict[str, list[str]]:
    """plain `ns.table` -> every column it ever has in the world's history."""
    out = {t: list(c) for t, c in COLUMNS.items()}
    for t, cols in LATER.items():
        out[t] = out.get(t, []) + [c for c in cols if c not in out.get(t, [])]
    return out


def naming(variant: str = "plain", seed: int = 49) -> Naming:
    """The world's Naming: the identity (plain) or the cryptic names of `seed`."""
    if variant == "plain":
        return Naming("plain", seed, catalog=CATALOG)
    if variant != "cryptic":
        raise ValueError(f"unknown lake variant {variant!r}; use plain or cryptic")
    rng = random.Random(f"semcat-tpcds-cryptic-{seed}")
    sch = schema()
    tables = list(sch)
    nss = sorted({t.split(".")[0] for t in tables})
    ns_map = dict(zip(nss, rng.sample(NAMESPACE_POOL, len(nss)), strict=True))
    t_map: dict[str, str] = {}
    used: set[str] = set()
    for t, base in zip(tables, rng.sample(TABLE_POOL, len(tables)), strict=True):
        name = base + rng.choice(TABLE_SFX)
        while name in used:
            name = base + rng.choice(TABLE_SFX)
        used.add(name)
        t_map[t] = f"{ns_map[t.split('.')[0]]}.{name}"
    cols: list[str] = []
    for cs in sch.values():
        cols += [c for c in cs if c not in cols]
    taken = set(cols) | SQL_WORDS | set(NAMESPACE_POOL) | {t.split(".")[1] for t in tables}
    c_map: dict[str, str] = {}
    for c in cols:
        while True:
            name = rng.choice(COL_POOL) + rng.choice(COL_SFX)
            if name not in taken:
                break
            name = name + str(rng.randint(1, 9))  # the pool is small for ~450 columns: a digit more
            if name not in taken:
                break
        taken.add(name)
        c_map[c] = name
    v_map = code_values(rng, DOMAINS, _CODE_PREFIX)
    return Naming("cryptic", seed, ns_map, t_map, c_map, v_map, CATALOG, dict(CODED), sch)
