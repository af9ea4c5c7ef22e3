"""The enterprise world's generated domains (`semcat eval build --scale enterprise`), as pure data: which
tables exist in which domain, how they cluster into lookalikes, when each is created, loaded, stopped,
deprecated or replaced, their rows, and what the catalog's annotations say about them in each history.
Everything is a function of the seed (and of `Sizes`, scaled down by the tests); eval.lake.enterprise
writes it.

Per domain (finance, hr, marketing, supply_chain, web_analytics, support, crm, merch), `Sizes.facts` base
facts and `Sizes.dims` base dimensions, each the head of a lookalike cluster of variants:

    <fact>                  the table to use (unless it was replaced)
    <fact>_v2               its dual-written replacement: amounts in dollars (amount_usd), written beside
                            <fact> for DUAL_MONTHS loads, after which <fact> stops and is deprecated
    <fact>_legacy           a deprecated copy: the same rows until it stopped being loaded
    <fact>_backup_YYYYMM    a one-off copy of <fact> as of that month, never loaded again
    <fact>_test             a 10% sample, written by a few loads only
    <fact>_daily            the day-grain aggregate of <fact> (kept current: a correct alternative)
    stg_<fact>              the raw staging copy (every column a string)
    <dim>                   the dimension; <dim>_backup_YYYYMM, <dim>_old (a deprecated copy, fewer rows)

Annotations (both histories alike unless said): most tables described, few certified (a verified query
per domain, a metric per domain), units and enums on base facts, grain on bases and dims, canonical
relationships fact -> dim. The enriched history flags every deprecation (with replaced_by); the stale
history misses a seeded share of them (`deprecated_without_flag`, detectable: the table stopped loading
and its successor exists) and carries a few descriptions wrong from the start (undetectable).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import random
from typing import Any

import pyarrow as pa

__all__ = ["DOMAINS", "Sizes", "FULL", "EntTable", "World", "plan", "SLOT_DAYS", "TABLE_KINDS", "DUAL_MONTHS",
           "ANN_TRAPS", "TRAP_KINDS", "TAX_RATE", "TEST_ACCOUNTS", "LOCAL_TZ", "UTC_OFFSET_WINTER", "CANCELLED"]

CATALOG = "acme"
INT, BIG, STR, DATE, DBL = pa.int32(), pa.int64(), pa.string(), pa.date32(), pa.float64()
TS = pa.timestamp("us")  # a timestamp without time zone (Spark's timestamp_ntz; DuckDB's TIMESTAMP)
DUAL_MONTHS = 3

# domain -> (facts, dims, the enum column's name and values per domain)
DOMAINS: dict[str, dict[str, Any]] = {
    "finance": {
        "facts": ["gl_journal_entries", "ap_invoices", "ar_invoices", "payments_received", "vendor_payments",
                  "expense_reports", "budget_lines", "cost_allocations", "tax_filings", "bank_transactions",
                  "intercompany_transfers"],
        "dims": ["gl_accounts", "cost_centers", "vendors", "legal_entities", "currencies"],
        "enum": ("status", ["posted", "pending", "reversed", "void"]), "owner": "finance-data"},
    "hr": {
        "facts": ["payroll_runs", "timesheets", "leave_requests", "headcount_snapshots", "job_requisitions",
                  "job_applications", "performance_reviews", "training_completions", "terminations",
                  "benefits_enrollments", "overtime_hours"],
        "dims": ["employees", "departments", "job_titles", "work_locations", "pay_grades"],
        "enum": ("status", ["approved", "submitted", "rejected", "withdrawn"]), "owner": "people-analytics"},
    "marketing": {
        "facts": ["campaign_spend", "email_sends", "email_opens", "ad_impressions", "ad_clicks", "promo_redemptions",
                  "lead_captures", "social_posts", "affiliate_commissions", "survey_responses", "coupon_issuance"],
        "dims": ["campaigns", "channels", "audience_segments", "creatives", "promo_codes"],
        "enum": ("channel", ["email", "paid_search", "social", "display", "affiliate"]), "owner": "marketing-ops"},
    "supply_chain": {
        "facts": ["purchase_orders", "po_receipts", "inbound_shipments", "outbound_shipments", "warehouse_picks",
                  "stock_transfers", "supplier_invoices", "demand_forecasts", "stockouts", "returns_to_vendor",
                  "freight_costs"],
        "dims": ["suppliers", "warehouses", "carriers", "shipping_lanes", "sku_master"],
        "enum": ("status", ["open", "in_transit", "received", "cancelled"]), "owner": "supply-chain-analytics"},
    "web_analytics": {
        "facts": ["page_views", "web_visits", "click_events", "site_searches", "cart_events", "checkout_events",
                  "app_installs", "push_notifications", "ab_test_exposures", "frontend_errors", "referrals"],
        "dims": ["pages", "devices", "experiments", "utm_sources", "app_versions"],
        "enum": ("platform", ["web", "ios", "android"]), "owner": "digital-analytics"},
    "support": {
        "facts": ["tickets", "ticket_events", "chats", "calls", "csat_surveys", "escalations", "refund_requests",
                  "kb_article_views", "sla_breaches", "agent_shifts", "callbacks"],
        "dims": ["agents", "queues", "ticket_categories", "support_teams", "priorities"],
        "enum": ("status", ["open", "pending", "solved", "closed"]), "owner": "cx-insights"},
    "crm": {
        "facts": ["opportunities", "leads", "account_activities", "quotes", "contracts", "renewals", "churn_events",
                  "sales_meetings", "pipeline_snapshots", "commissions", "territory_assignments"],
        "dims": ["accounts", "contacts", "sales_reps", "territories", "b2b_products"],
        "enum": ("stage", ["prospect", "qualified", "proposal", "won", "lost"]), "owner": "sales-ops"},
    "merch": {
        "facts": ["price_changes", "assortment_changes", "product_reviews", "inventory_adjustments", "markdowns",
                  "planogram_resets", "vendor_scorecards", "item_launches", "allocation_orders", "range_reviews",
                  "shrink_events"],
        "dims": ["brands", "merch_categories", "buyers", "planogram_templates", "seasons"],
        "enum": ("status", ["proposed", "approved", "live", "retired"]), "owner": "merchandising"},
}

FACT_VARIANTS = ("v2", "legacy", "backup", "test", "daily", "stg")
DIM_VARIANTS = ("backup", "old")
TRAP_KINDS = ("definition", "test_accounts", "timezone", "unit_hidden", "code_meaning")
TABLE_KINDS = ("base_fact", "base_dim", *(f"fact_{v}" for v in FACT_VARIANTS), *(f"dim_{v}" for v in DIM_VARIANTS),
               *(f"trap_{k}" for k in TRAP_KINDS))

# The load slots: the 2nd of each month from 2023-09 to 2024-11 (each loads the previous month), then
# the days of the Acme history a domain load rides on (eval.lake.build's batches d-105, -77, -49, -21,
# -7: each loads the days since the previous load). The first commit (the catalog, the dimensions) is
# at 2023-08-28, 18.4 months before d0 (2025-03-10).
START = dt.date(2023, 8, 28)
PRE_LO = dt.date(2023, 8, 1)  # the first fact date
PRE_SLOTS = [dt.date(2023 + (8 + i) // 12, (8 + i) % 12 + 1, 2) for i in range(15)]  # 2023-09-02 .. 2024-11-02
LATE_DAYS = (105, 77, 49, 21, 7)
SLOT_DAYS = LATE_DAYS

# ---- the annotation-only traps (docs/eval-lake.md, "Traps only the annotations reveal"): one table per trap kind,
# created at the first late load (d-105: after the trap generator ran, so its choices stay those of the world
# without them), loaded by every late load (rows dated 2024-11-01 .. 2025-03-02). What the data cannot show is
# stated only in the enriched annotations; the stale history omits it or keeps the old truth.
TRAP_FIRST = len(PRE_SLOTS)            # the d-105 load
TRAP_SWITCH = len(PRE_SLOTS) + 3       # the d-21 load (rows dated 2025-01-20 .. 2025-02-16): the unit switch, the new code
TAX_RATE = 0.0825                      # merch.pos_sales.sale_amount includes 8.25% sales tax
TEST_ACCOUNTS = (3, 11, 42)            # crm.web_orders: internal QA accounts (ordinary-looking ids among the real ones)
LOCAL_TZ = "America/Los_Angeles"       # web_analytics.login_events.login_time is local Pacific time
UTC_OFFSET_WINTER = 8                  # hours to add to Pacific standard time for UTC (every row is dated before DST)
CANCELLED = "90"                       # support.service_orders.status_code: '10' placed, '20' fulfilled, '90' cancelled
ANN_TRAPS: dict[str, str] = {          # table -> trap kind
    "merch.pos_sales": "definition",
    "crm.web_orders": "test_accounts",
    "web_analytics.login_events": "timezone",
    "supply_chain.freight_invoices": "unit_hidden",
    "support.service_orders": "code_meaning",
}
_TRAP_COLS: dict[str, list[tuple[str, pa.DataType]]] = {
    "merch.pos_sales": [("sale_id", BIG), ("sale_date", DATE), ("store_id", INT), ("quantity", INT),
                        ("sale_amount", DBL)],
    "crm.web_orders": [("web_order_id", BIG), ("order_date", DATE), ("customer_id", INT), ("quantity", INT),
                       ("amount_cents", BIG)],
    "web_analytics.login_events": [("login_id", BIG), ("login_time", TS), ("user_id", INT), ("platform", STR)],
    "supply_chain.freight_invoices": [("freight_invoice_id", BIG), ("invoice_date", DATE), ("carrier_id", INT),
                                      ("amount", BIG)],
    "support.service_orders": [("service_order_id", BIG), ("order_date", DATE), ("status_code", STR),
                               ("amount_usd", DBL)],
}


@dataclasses.dataclass(frozen=True)
class Sizes:
    """How many base facts and dimensions per domain, how many domains (the tests scale these down)."""
    facts: int = 11
    dims: int = 5
    domains: int = len(DOMAINS)
    rows_per_month: tuple[int, int] = (6, 18)


FULL = Sizes()


@dataclasses.dataclass
class EntTable:
    domain: str
    name: str                      # namespace.table (the catalog is acme)
    kind: str                      # one of TABLE_KINDS
    base: str                      # the cluster's head (namespace.table)
    columns: list[tuple[str, pa.DataType]]
    first_slot: int                # index into World.slots of its first write
    last_slot: int | None = None   # the last slot that writes it (None: every slot to the end)
    once: bool = False             # written once (a backup), never again
    deprecated_at: int | None = None   # slot from which it is deprecated (enriched flags it then)
    replaced_by: str | None = None
    described: bool = True
    certified: bool = False
    stale_unflagged: bool = False  # the stale history never flags its deprecation
    wrong: str | None = None       # stale history only: a description wrong from the start
    sla: str | None = None         # freshness_sla (a few steady base facts per domain)

    @property
    def full(self) -> str:
        return f"{CATALOG}.{self.name}"


def singular(word: str) -> str:
    for a, b in (("ies", "y"), ("sses", "ss"), ("ches", "ch"), ("xes", "x")):
        if word.endswith(a):
            return word[: -len(a)] + b
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _title(name: str) -> str:
    return name.replace("_", " ")


class World:
    """The generated domains of one seed: tables, their load plan, rows and annotations."""

    def __init__(self, seed: int, sizes: Sizes = FULL):
        self.seed, self.sizes = seed, sizes
        self.rng = random.Random(seed * 7919 + 101)
        self.slots: list[dt.date] = list(PRE_SLOTS) + [_day(n) for n in LATE_DAYS]
        self.domains = list(DOMAINS)[: sizes.domains]
        self.tables: dict[str, EntTable] = {}
        self.dim_ids: dict[str, int] = {}
        self.fact_dims: dict[str, list[str]] = {}
        self._rows: dict[str, list[dict[str, Any]]] = {}  # base fact -> every row generated so far (by slot)
        self._trap_next: dict[str, int] = {}  # annotation-trap table -> its next row id
        self._plan()

    # ------------------------------------------------------------------ the tables
    def _plan(self) -> None:
        rng, s = self.rng, self.sizes
        last_pre = len(PRE_SLOTS) - 1
        for dom in self.domains:
            d = DOMAINS[dom]
            ecol, evals = d["enum"]
            dims = d["dims"][: s.dims]
            for dim in dims:
                name = f"{dom}.{dim}"
                self.dim_ids[name] = rng.randint(12, 40)
                cols = [(f"{singular(dim)}_id", INT), (f"{singular(dim)}_name", STR), ("region", STR),
                        ("is_active", pa.bool_()), ("created_date", DATE)]
                self._add(EntTable(dom, name, "base_dim", name, cols, 0, described=rng.random() < 0.9))
                for v in DIM_VARIANTS:
                    if rng.random() < 0.4:
                        continue
                    if v == "backup":
                        sl = rng.randint(3, last_pre - 2)
                        self._add(EntTable(dom, f"{name}_backup_{self.slots[sl]:%Y%m}", "dim_backup", name, cols, sl,
                                           once=True, described=rng.random() < 0.4))
                    else:
                        sl = rng.randint(4, last_pre)
                        self._add(EntTable(dom, f"{name}_old", "dim_old", name, cols, 0, last_slot=sl,
                                           deprecated_at=sl, replaced_by=name, described=rng.random() < 0.5,
                                           stale_unflagged=rng.random() < 0.5))
            for fact in d["facts"][: s.facts]:
                name = f"{dom}.{fact}"
                stem = singular(fact)
                fdims = rng.sample([f"{dom}.{x}" for x in dims], k=min(2, len(dims)))
                self.fact_dims[name] = fdims
                cols = [(f"{stem}_id", BIG), (f"{stem}_date", DATE),
                        *[(f"{singular(x.split('.')[1])}_id", INT) for x in fdims],
                        (ecol, STR), ("quantity", INT), ("amount_cents", BIG)]
                base = EntTable(dom, name, "base_fact", name, cols, 0, described=rng.random() < 0.92)
                self._add(base)
                variants = [v for v in FACT_VARIANTS if rng.random() < (0.7 if v in ("v2", "daily", "backup") else 0.55)]
                if not variants:
                    variants = [rng.choice(FACT_VARIANTS)]
                for v in variants:
                    self._fact_variant(dom, base, v, cols, evals)
            # a few certified tables per domain (never a deprecated or replaced one)
            heads = [t for t in self.tables.values() if t.domain == dom and t.kind in ("base_fact", "base_dim")
                     and t.described and t.deprecated_at is None]
            for t in rng.sample(heads, k=min(2, len(heads))):
                t.certified = True
            # a freshness SLA on a few steady base facts (no replacement, no derived copy): the trap
            # generator's routine loads and load-freshness changes need tables under an SLA
            derived = {x.base for x in self.tables.values() if x.kind == "fact_v2"}
            steady = [t for t in self.tables.values() if t.domain == dom and t.kind == "base_fact" and t.described
                      and t.deprecated_at is None and t.name not in derived]
            for t in self._rng("sla", dom).sample(steady, k=min(2, len(steady))):  # (its own stream: the plan stays)
                t.sla = "P35D"
            # a few descriptions wrong from the start (the stale history's undetectable share)
            cands = [t for t in self.tables.values() if t.domain == dom and t.kind == "base_fact" and t.described
                     and not t.certified]
            for t in rng.sample(cands, k=min(1, len(cands))):
                t.wrong = "money"
        for name, kind in ANN_TRAPS.items():  # (no draw from self.rng: the rest of the plan stays as it was)
            dom = name.split(".")[0]
            if dom in self.domains:
                self._add(EntTable(dom, name, f"trap_{kind}", name, list(_TRAP_COLS[name]), TRAP_FIRST))

    def _fact_variant(self, dom: str, base: EntTable, v: str, cols: list, evals: list[str]) -> None:
        rng = self.rng
        last_pre = len(PRE_SLOTS) - 1
        name = base.name
        if v == "v2":
            start = rng.randint(5, len(self.slots) - DUAL_MONTHS - 2)
            v2cols = [c for c in cols if c[0] != "amount_cents"] + [("amount_usd", DBL), ("source_system", STR)]
            self._add(EntTable(dom, f"{name}_v2", "fact_v2", name, v2cols, start, described=rng.random() < 0.85))
            base.last_slot = start + DUAL_MONTHS - 1
            base.deprecated_at = start + DUAL_MONTHS
            base.replaced_by = f"{name}_v2"
            base.stale_unflagged = rng.random() < 0.4
        elif v == "legacy":
            stop = rng.randint(4, last_pre)
            if base.replaced_by:  # deprecated once the v2 exists, pointing to it
                stop = max(stop, self.tables[base.replaced_by].first_slot)
            self._add(EntTable(dom, f"{name}_legacy", "fact_legacy", name, cols, 0, last_slot=stop,
                               deprecated_at=stop + 1, replaced_by=base.replaced_by or name, described=rng.random() < 0.6,
                               stale_unflagged=rng.random() < 0.5))
        elif v == "backup":
            sl = rng.randint(3, last_pre)
            self._add(EntTable(dom, f"{name}_backup_{self.slots[sl]:%Y%m}", "fact_backup", name, cols, sl, once=True,
                               described=rng.random() < 0.4))
        elif v == "test":
            sl = rng.randint(2, last_pre - 3)
            self._add(EntTable(dom, f"{name}_test", "fact_test", name, cols, sl, last_slot=sl + 2,
                               described=rng.random() < 0.2))
        elif v == "daily":
            dcol = cols[1][0]
            self._add(EntTable(dom, f"{name}_daily", "fact_daily", name,
                               [(dcol, DATE), ("row_count", BIG), ("quantity", BIG), ("amount_cents", BIG)], 0,
                               described=rng.random() < 0.6))
        elif v == "stg":
            self._add(EntTable(dom, f"{dom}.stg_{name.split('.')[1]}", "fact_stg", name, [(c, STR) for c, _ in cols], 0,
                               described=rng.random() < 0.3))

    def _add(self, t: EntTable) -> None:
        assert t.name not in self.tables, t.name
        self.tables[t.name] = t

    # ------------------------------------------------------------------ loads
    def writes_at(self, slot: int, lo: dt.date, hi: dt.date, skip: set[str] = frozenset()) -> list[tuple[str, str, list]]:  # type: ignore[assignment]
        """The writes of load slot `slot` (rows dated lo..hi for facts): (table, mode, rows). Base facts'
        rows are generated here (seeded by table and slot), then every variant derives its rows from them.
        Tables in `skip` (those the traps changed or stopped) are not written."""
        out: list[tuple[str, str, list]] = []
        new_rows: dict[str, list[dict[str, Any]]] = {}
        for t in self.tables.values():
            if t.kind == "base_fact":
                new_rows[t.name] = self._fact_rows(t, slot, lo, hi)
                self._rows.setdefault(t.name, []).extend(new_rows[t.name])
        for t in sorted(self.tables.values(), key=lambda x: x.name):
            if t.name in skip or slot < t.first_slot or (t.last_slot is not None and slot > t.last_slot):
                continue
            if t.once and slot != t.first_slot:
                continue
            rows = self.trap_rows(t, slot, lo, hi) if t.kind.startswith("trap_") else self._rows_of(t, slot, new_rows)
            if rows is None:
                continue
            mode = "overwrite" if t.kind in ("base_dim", "dim_old", "dim_backup", "fact_backup") else "append"
            if t.kind in ("base_dim", "dim_old") and slot not in (0, t.last_slot) and slot % 4 != 0:
                continue  # dimensions are refreshed every fourth load
            out.append((t.name, mode, rows))
        return out

    def _rng(self, *parts: Any) -> random.Random:
        h = hashlib.sha256(repr((self.seed, *parts)).encode()).digest()
        return random.Random(int.from_bytes(h[:8], "big"))

    def _fact_rows(self, t: EntTable, slot: int, lo: dt.date, hi: dt.date) -> list[dict[str, Any]]:
        r = self._rng(t.name, slot)
        ecol, evals = DOMAINS[t.domain]["enum"]
        n = r.randint(*self.sizes.rows_per_month)
        days = (hi - lo).days + 1
        if days < 20:
            n = max(2, n * days // 30)
        first = len(self._rows.get(t.name, [])) + 1
        cols = [c for c, _ in t.columns]
        rows = []
        for i in range(n):
            row: dict[str, Any] = {cols[0]: first + i, cols[1]: lo + dt.timedelta(days=r.randrange(days))}
            for d in self.fact_dims[t.name]:
                row[f"{singular(d.split('.')[1])}_id"] = r.randint(1, self.dim_ids[d])
            row[ecol] = evals[min(len(evals) - 1, int(r.random() ** 2 * len(evals)))]
            row["quantity"] = r.randint(1, 20)
            row["amount_cents"] = r.randint(100, 500_000)
            rows.append(row)
        rows.sort(key=lambda x: (x[cols[1]], x[cols[0]]))
        return rows

    def dim_rows(self, t: EntTable, slot: int) -> list[dict[str, Any]]:
        base = self.tables[t.base]
        n = self.dim_ids[base.name]
        r = self._rng(base.name)
        cols = [c for c, _ in base.columns]
        regions = ["northeast", "southeast", "midwest", "west", "international"]
        rows = [{cols[0]: i, cols[1]: f"{_title(singular(base.name.split('.')[1]))} {i:03d}", "region": r.choice(regions),
                 "is_active": r.random() < 0.85, "created_date": START - dt.timedelta(days=r.randint(30, 900))}
                for i in range(1, n + 1)]
        if t.kind == "dim_old":
            rows = rows[: max(3, n * 2 // 3)]
        return rows

    def trap_rows(self, t: EntTable, slot: int, lo: dt.date, hi: dt.date) -> list[dict[str, Any]]:
        """The rows of an annotation-trap table for the load at `slot` (dated lo..hi), seeded by table and slot."""
        r = self._rng("annotation-trap", t.name, slot)
        days = (hi - lo).days + 1
        first = self._trap_next.get(t.name, 1)
        cols = [c for c, _ in t.columns]
        kind = t.kind.removeprefix("trap_")
        n = max(4, (r.randint(420, 480) if kind == "timezone" else r.randint(90, 120)) * days // 28)
        rows: list[dict[str, Any]] = []
        for i in range(n):
            d = lo + dt.timedelta(days=r.randrange(days))
            row: dict[str, Any] = {cols[0]: first + i}
            if kind == "definition":  # the amount charged: the net price plus 8.25% tax, in dollars
                net = r.randint(500, 40_000) / 100
                row.update(sale_date=d, store_id=r.randint(1, 24), quantity=r.randint(1, 6),
                           sale_amount=round(net * (1 + TAX_RATE), 2))
            elif kind == "test_accounts":  # a third of the orders come from the QA accounts
                test = r.random() < 0.33
                real = [c for c in range(1, 61) if c not in TEST_ACCOUNTS]  # (customer 27 orders most often)
                cust = r.choice(TEST_ACCOUNTS) if test else r.choices(real, weights=[6 if c == 27 else 1 for c in real])[0]
                row.update(order_date=d, customer_id=cust, quantity=r.randint(1, 5),
                           amount_cents=r.randint(50, 200) * 100 if test else r.randint(1_500, 90_000))
            elif kind == "timezone":  # local Pacific time; most logins in the evening (20:00 local = 04:00 UTC)
                hour = r.choices(range(24), weights=[10 if h == 20 else 5 if h in (19, 21) else 1 for h in range(24)])[0]
                row.update(login_time=dt.datetime(d.year, d.month, d.day, hour, r.randrange(60), r.randrange(60)),
                           user_id=r.randint(1, 400), platform=r.choice(["web", "ios", "android"]))
            elif kind == "unit_hidden":  # whole dollars until the switch, cents from it
                dollars = r.randint(40, 3_000)
                row.update(invoice_date=d, carrier_id=r.randint(1, 15),
                           amount=dollars * 100 + r.randrange(100) if slot >= TRAP_SWITCH else dollars)
            elif kind == "code_meaning":  # '90' (cancelled) first written at the switch
                codes, weights = (["10", "20", CANCELLED], [15, 65, 20]) if slot >= TRAP_SWITCH else (["10", "20"], [15, 85])
                row.update(order_date=d, status_code=r.choices(codes, weights=weights)[0],
                           amount_usd=r.randint(2_000, 60_000) / 100)
            else:
                raise AssertionError(kind)
            rows.append(row)
        self._trap_next[t.name] = first + n
        return rows

    def trap_annotations(self, t: EntTable, history: str, slot: int) -> list[tuple[str | None, dict[str, Any]]]:
        """The annotations an annotation-trap table gets at load `slot` in `history`, as (column or None, fields):
        at its creation in both histories, and the enriched history's update at the switch. The enriched
        history states the truth; the stale one omits it (definition, test accounts, time zone) or keeps the
        old truth (the unit and the codes before the switch)."""
        kind = t.kind.removeprefix("trap_")
        owner = DOMAINS[t.domain]["owner"]
        enr = history == "enriched"
        out: list[tuple[str | None, dict[str, Any]]] = []
        if slot == t.first_slot:
            grain = {"text": f"one row per {_title(t.columns[0][0].removesuffix('_id'))}", "keys": [t.columns[0][0]]}
            desc = {
                "definition": ("Point-of-sale sales, one row per sale. sale_amount is the amount charged in US dollars "
                               + (f"and INCLUDES {TAX_RATE:.2%} sales tax: net sales = sale_amount / {1 + TAX_RATE}."
                                  if enr else "(the sale amount).")),
                "test_accounts": ("Web orders, one row per order; amount_cents is in US cents."
                                  + (f" customer_id {', '.join(map(str, TEST_ACCOUNTS[:-1]))} and {TEST_ACCOUNTS[-1]} are "
                                     "internal QA test accounts: exclude them from every count and total." if enr else "")),
                "timezone": "Logins to the web and mobile apps, one row per login.",
                "unit_hidden": "Freight invoices from carriers, one row per invoice.",
                "code_meaning": "Service orders, one row per order; amount_usd is in US dollars.",
            }[kind]
            out.append((None, {"description": desc, "owner": owner, "grain": grain}))
            if kind == "definition":
                out.append(("sale_amount", {"description": "Amount charged, including sales tax at 8.25%" if enr
                                            else "Sale amount", "unit": "USD"}))
            elif kind == "timezone":
                out.append(("login_time", {"description": f"Login time in local Pacific time ({LOCAL_TZ}), NOT UTC: "
                                           f"add {UTC_OFFSET_WINTER} hours (7 in daylight-saving time) for UTC"
                                           if enr else "Login time"}))
            elif kind in ("unit_hidden", "code_meaning") and (not enr or slot < TRAP_SWITCH):
                out += self._trap_old_truth(kind)
        if enr and slot == TRAP_SWITCH and kind in ("unit_hidden", "code_meaning"):
            out += self._trap_new_truth(kind)
        return out

    def _trap_old_truth(self, kind: str) -> list[tuple[str | None, dict[str, Any]]]:
        if kind == "unit_hidden":
            return [("amount", {"description": "Invoice amount in whole US dollars", "unit": "USD"})]
        return [("status_code", {"description": "Order status code", "enum": ["10", "20"],
                                 "labels": {"10": "placed", "20": "fulfilled"}})]

    def _trap_new_truth(self, kind: str) -> list[tuple[str | None, dict[str, Any]]]:
        since = self.slots[TRAP_SWITCH - 1].isoformat()  # the first row date of the switch load
        if kind == "unit_hidden":
            return [("amount", {"description": f"Invoice amount in US CENTS for rows dated {since} on (divide by 100 "
                                f"for dollars); rows dated before {since} are in whole US dollars", "unit": "USD cents"})]
        return [("status_code", {"description": f"Order status code; '{CANCELLED}' = cancelled by the customer: "
                                 "not revenue (exclude it from revenue and order totals)", "enum": ["10", "20", CANCELLED],
                                 "labels": {"10": "placed", "20": "fulfilled", CANCELLED: "cancelled (not revenue)"}})]

    def _rows_of(self, t: EntTable, slot: int, new_rows: dict[str, list[dict[str, Any]]]) -> list | None:
        if t.kind in ("base_dim", "dim_old", "dim_backup"):
            return self.dim_rows(t, slot)
        if t.kind in ("base_fact", "fact_legacy"):
            return [dict(x) for x in new_rows[t.base]]
        if t.kind == "fact_backup":
            return [dict(x) for x in self._rows[t.base]]
        if t.kind == "fact_test":
            return [dict(x) for i, x in enumerate(new_rows[t.base]) if i % 10 == 0]
        if t.kind == "fact_stg":
            return [{k: None if v is None else str(v) for k, v in x.items()} for x in new_rows[t.base]]
        if t.kind == "fact_v2":
            return [{**{k: v for k, v in x.items() if k != "amount_cents"}, "amount_usd": x["amount_cents"] / 100,
                     "source_system": "erp_v2"} for x in new_rows[t.base]]
        if t.kind == "fact_daily":
            base = self.tables[t.base]
            dcol = base.columns[1][0]
            agg: dict[dt.date, list[int]] = {}
            for x in new_rows[t.base]:
                a = agg.setdefault(x[dcol], [0, 0, 0])
                a[0] += 1
                a[1] += x["quantity"]
                a[2] += x["amount_cents"]
            return [{dcol: d, "row_count": a[0], "quantity": a[1], "amount_cents": a[2]} for d, a in sorted(agg.items())]
        raise AssertionError(t.kind)

    # ------------------------------------------------------------------ annotations
    def description(self, t: EntTable, history: str) -> str | None:
        if not t.described or t.kind.startswith("trap_"):  # (an annotation-trap table's: trap_annotations)
            return None
        base = self.tables[t.base]
        what = _title(base.name.split(".")[1])
        owner = DOMAINS[t.domain]["owner"]
        grain = f"one row per {_title(singular(base.name.split('.')[1]))}"
        if t.kind == "base_fact":
            if history == "stale" and t.wrong == "money":
                return f"{what.capitalize()} ({t.domain}), {grain}. Amounts are in US dollars."
            return f"{what.capitalize()} ({t.domain}), {grain}; amount_cents is in US cents. Owned by {owner}."
        if t.kind == "base_dim":
            return f"{what.capitalize()}: the {t.domain} dimension, one row per {_title(singular(base.name.split('.')[1]))}."
        if t.kind == "fact_v2":
            return f"{what.capitalize()} v2 from the new ERP feed, {grain}; amount_usd is in US dollars."
        if t.kind == "fact_legacy":
            return f"{what.capitalize()} as loaded by the old pipeline."
        if t.kind == "fact_backup":
            taken = self.slots[t.first_slot]
            return (f"Backup copy of {base.full} taken {taken.isoformat()}: rows dated {PRE_LO.isoformat()} to "
                    f"{(taken - dt.timedelta(days=taken.day)).isoformat()}.")
        if t.kind == "dim_backup":
            return f"Backup copy of {base.full} taken {self.slots[t.first_slot].isoformat()}."
        if t.kind == "fact_test":
            return f"Test sample of {base.full} (10% of rows), for pipeline testing."
        if t.kind == "fact_daily":
            return f"Daily totals of {what}: row count, quantity and amount_cents per day."
        if t.kind == "fact_stg":
            return f"Raw staging of {what}, every column as text."
        if t.kind == "dim_old":
            return f"Old copy of {base.full}."
        raise AssertionError(t.kind)

    def table_fields(self, t: EntTable, history: str) -> dict[str, Any]:
        """The table fields written when `t` is created."""
        f: dict[str, Any] = {}
        desc = self.description(t, history)
        if desc:
            f["description"] = desc
            f["owner"] = DOMAINS[t.domain]["owner"]
        if t.kind in ("base_fact", "fact_v2"):
            f["grain"] = {"text": f"one row per {_title(singular(t.base.split('.')[1]))}", "keys": [t.columns[0][0]]}
        if t.kind == "base_dim":
            f["grain"] = {"text": f"one row per {_title(singular(t.name.split('.')[1]))}", "keys": [t.columns[0][0]]}
        if t.certified:
            f["certified"] = True
        if t.sla:
            f["freshness_sla"] = t.sla
        return f

    def column_fields(self, t: EntTable) -> dict[str, dict[str, Any]]:
        if t.kind.startswith("trap_"):  # (trap_annotations)
            return {}
        if t.kind not in ("base_fact", "fact_v2") or not t.described:
            return {}
        ecol, evals = DOMAINS[t.domain]["enum"]
        out: dict[str, dict[str, Any]] = {ecol: {"description": f"{ecol.capitalize()} of the record", "enum": list(evals)}}
        if t.kind == "base_fact":
            out["amount_cents"] = {"description": "Amount in US cents (divide by 100 for dollars)", "unit": "USD cents"}
        else:
            out["amount_usd"] = {"description": "Amount in US dollars", "unit": "USD"}
        return out

    def deprecation(self, t: EntTable) -> dict[str, Any]:
        assert t.deprecated_at is not None
        since = self.slots[min(t.deprecated_at, len(self.slots) - 1)]
        reason = ("replaced by its v2 table (dual-written for three loads)" if t.kind == "base_fact"
                  else "no longer loaded; use the current table")
        return {"reason": reason, "replaced_by": f"{CATALOG}.{t.replaced_by}" if t.replaced_by else None,
                "since": since.isoformat()}

    def counts(self) -> dict[str, Any]:
        per_domain: dict[str, int] = {}
        per_kind: dict[str, int] = {}
        for t in self.tables.values():
            per_domain[t.domain] = per_domain.get(t.domain, 0) + 1
            per_kind[t.kind] = per_kind.get(t.kind, 0) + 1
        ts = list(self.tables.values())
        return {"tables": len(ts), "per_domain": per_domain, "per_kind": per_kind,
                "described": sum(1 for t in ts if t.described), "certified": sum(1 for t in ts if t.certified),
                "deprecated": sum(1 for t in ts if t.deprecated_at is not None),
                "stale_unflagged": sum(1 for t in ts if t.stale_unflagged and t.deprecated_at is not None),
                "wrong_from_start": sum(1 for t in ts if t.wrong)}


def _day(n: int) -> dt.date:
    from eval.lake.calendar import day

    return day(n)


def plan(seed: int, sizes: Sizes = FULL) -> World:
    return World(seed, sizes)
