"""Seeded generator of the Acme lake's rows (LAKE.md, Tables and Business rules).

Everything is drawn once, up front, from `random.Random(seed)`, as the truth at d0; the ETL
history (`eval.lake.build`) then slices it into loads by date. Same seed and scale, same rows.
Every trap of LAKE.md is planted here: failed and voided payment attempts, refunds inside common
date windows, evening orders whose UTC date is the next day, a relocated store code, customers
whose tier changed after d-30, several versions per customer, semi-additive inventory, a legacy
table that includes tax, raw tables whose totals include tax and shipping."""

from __future__ import annotations

import bisect
import datetime as dt
import hashlib
import itertools
import json
import random
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from eval.lake.calendar import D0, D0_DATE, FIRST_DATE, LAST_CAL_DATE, UTC, dates, day, fiscal, holidays

__all__ = ["SCALES", "Lake", "generate", "SESSIONS_FROM", "RETURNED_OLD", "STORE_RELOCATED"]

SCALES: dict[str, dict[str, int]] = {
    "small": {"orders_per_day": 26, "customers": 2500, "products": 120, "sessions_per_order": 4},
    "full": {"orders_per_day": 90, "customers": 12000, "products": 600, "sessions_per_order": 5},
}
SESSIONS_FROM = dt.date(2024, 2, 4)        # web analytics started with FY2024
STORE_RELOCATED = dt.date(2024, 7, 1)     # S-014 moves from store 14 to store 23
RETURNED_OLD = "returned"                 # the status `refunded` was called until d-45

REGIONS = ("northeast", "southeast", "midwest", "west")
TZ = {"northeast": "America/New_York", "southeast": "America/New_York", "midwest": "America/Chicago",
      "west": "America/Los_Angeles", "online": "America/New_York"}
CATEGORIES = {
    "apparel": (["t-shirts", "shirts", "pants", "shorts", "base layers"], (1500, 8900)),
    "footwear": (["hiking boots", "trail runners", "sandals"], (5900, 22900)),
    "outerwear": (["rain jackets", "down jackets", "fleece", "vests"], (6900, 34900)),
    "accessories": (["hats", "gloves", "socks", "bags"], (900, 4900)),
    "equipment": (["backpacks", "trekking poles", "headlamps", "water filters"], (2900, 19900)),
    "camping": (["tents", "sleeping bags", "stoves", "chairs"], (3900, 49900)),
}
BRANDS = ("Acme Trail", "Northbound", "Ridgeline", "Cascadia", "Summit & Co", "Pinebrook", "Alder", "Kestrel")
CITIES = {"northeast": ["Boston", "Providence", "Hartford", "Albany", "Portland ME", "Burlington"],
          "southeast": ["Atlanta", "Charlotte", "Nashville", "Raleigh", "Orlando"],
          "midwest": ["Chicago", "Minneapolis", "Madison", "Columbus", "Denver", "Kansas City"],
          "west": ["Seattle", "Portland", "Boise", "Salt Lake City", "Sacramento", "Bend", "Reno"]}


def _cents(x: float) -> int:
    return int(round(x))


def usd(cents: int) -> Decimal:
    return (Decimal(int(cents)) / 100).quantize(Decimal("0.01"))


@dataclass
class Lake:
    """Every row of every table, as at d0 (the history slices it)."""

    seed: int
    scale: str
    dim_date: list[dict] = field(default_factory=list)
    stores: list[dict] = field(default_factory=list)
    map_store_code: list[dict] = field(default_factory=list)
    products: list[dict] = field(default_factory=list)
    customers: list[dict] = field(default_factory=list)           # one per customer, with tier history
    orders: list[dict] = field(default_factory=list)
    items: list[dict] = field(default_factory=list)
    payments: list[dict] = field(default_factory=list)
    refunds: list[dict] = field(default_factory=list)
    shipments: list[dict] = field(default_factory=list)
    sessions: list[dict] = field(default_factory=list)
    loyalty: list[dict] = field(default_factory=list)
    marketing: list[dict] = field(default_factory=list)
    pos: list[dict] = field(default_factory=list)
    web_orders: list[dict] = field(default_factory=list)

    # ------------------------------------------------------------------ derived tables
    def customer_versions(self, as_of: dt.date) -> list[dict]:
        """SCD2 rows of dim_customer with changes up to `as_of` (is_current as of then)."""
        out = []
        sk = 0
        for c in self.customers:
            if c["signup_date"] > as_of:
                continue
            hist = [(d, t) for d, t in c["tiers"] if d <= as_of]
            for i, (start, tier) in enumerate(hist):
                sk += 1
                end = hist[i + 1][0] - dt.timedelta(days=1) if i + 1 < len(hist) else None
                out.append({"customer_sk": c["customer_id"] * 10 + i, "customer_id": c["customer_id"],
                            "customer_uuid": c["customer_uuid"], "signup_date": c["signup_date"],
                            "loyalty_tier": tier, "home_region": c["home_region"],
                            "email_domain": c["email_domain"], "valid_from": start, "valid_to": end,
                            "is_current": end is None})
        return out

    def customers_type1(self, as_of: dt.date) -> list[dict]:
        """One row per customer (the tier as of `as_of`): dim_customer before d-30."""
        out = []
        for c in self.customers:
            if c["signup_date"] > as_of:
                continue
            tier = [t for d, t in c["tiers"] if d <= as_of][-1]
            out.append({"customer_id": c["customer_id"], "customer_uuid": c["customer_uuid"],
                        "signup_date": c["signup_date"], "loyalty_tier": tier, "home_region": c["home_region"],
                        "email_domain": c["email_domain"]})
        return out

    def order_status(self, o: dict, restated: bool) -> str:
        s = o["status"]
        if restated:
            return s
        return {"refunded": RETURNED_OLD, "partially_refunded": "delivered"}.get(s, s)

    def daily_store_revenue(self, lo: dt.date, hi: dt.date, partial_store: tuple[int, dt.date] | None = None) -> list[dict]:
        """The mart in cents: per local date and store, over non-cancelled orders."""
        agg: dict[tuple, list[int]] = {}
        lines: dict[int, list[dict]] = {}
        for it in self.items:
            lines.setdefault(it["order_id"], []).append(it)
        for o in self.orders:
            d = o["order_date_local"]
            if not lo <= d <= hi or o["status"] == "cancelled":
                continue
            if partial_store and o["store_id"] == partial_store[0] and d == partial_store[1] and o["order_id"] % 2 == 0:
                continue  # the partial load of store 17 on d-1 misses these orders
            a = agg.setdefault((d, o["store_id"]), [0, 0, 0, 0, 0])
            a[0] += 1
            for it in lines.get(o["order_id"], []):
                a[1] += it["quantity"] * it["unit_price_cents"]
                a[2] += it["discount_cents"]
                a[3] += it["net_line_cents"]
        store_of = {o["order_id"]: o["store_id"] for o in self.orders}
        for r in self.refunds:
            d = r["refund_date"]
            if lo <= d <= hi:
                key = (d, store_of[r["order_id"]])
                if key in agg:
                    agg[key][4] += r["refund_cents"]
        return [{"date_local": d, "store_id": s, "order_count": a[0], "gross_revenue_cents": a[1],
                 "discount_cents": a[2], "net_revenue_cents": a[3], "refunds_cents": a[4]}
                for (d, s), a in sorted(agg.items())]

    def weekly_category_sales(self, upto: dt.date) -> list[dict]:
        cat_of = {p["product_id"]: p["category"] for p in self.products}
        status = {o["order_id"]: o["status"] for o in self.orders}
        agg: dict[tuple, list[int]] = {}
        for it in self.items:
            d = it["order_date_local"]
            if d > upto or status[it["order_id"]] == "cancelled":
                continue
            f = fiscal(d)
            a = agg.setdefault((f.fiscal_year, f.fiscal_week, cat_of[it["product_id"]]), [0, 0])
            a[0] += it["quantity"]
            a[1] += it["net_line_cents"]
        return [{"fiscal_year": y, "fiscal_week": w, "category": c, "units": a[0], "net_sales_cents": a[1]}
                for (y, w, c), a in sorted(agg.items())]

    def finance_monthly(self, closed_before: dt.date, by_region: bool) -> list[dict]:
        """Recognized revenue (net of items, at delivery) per closed fiscal period (and region)."""
        region = {s["store_id"]: s["region"] for s in self.stores}
        net: dict[int, int] = {}
        for it in self.items:
            net[it["order_id"]] = net.get(it["order_id"], 0) + it["net_line_cents"]
        delivered: dict[int, dt.date] = {}
        for s in self.shipments:
            if s["delivered_ts_utc"] is not None:
                d = s["delivered_ts_utc"].date()
                delivered[s["order_id"]] = max(delivered.get(s["order_id"], d), d)
        agg: dict[tuple, list[int]] = {}
        for o in self.orders:
            if o["status"] == "cancelled":
                continue
            d = o["order_date_local"] if o["channel"] == "store" else delivered.get(o["order_id"])
            if d is None:
                continue
            f = fiscal(d)
            end = _period_end(f)
            if end >= closed_before:
                continue
            key = (f.fiscal_year, f.fiscal_period, region[o["store_id"]] if by_region else None)
            a = agg.setdefault(key, [0, 0])
            a[0] += net.get(o["order_id"], 0)
            a[1] += 1
        out = []
        for (y, p, r), a in sorted(agg.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or "")):
            row: dict[str, Any] = {"fiscal_year": y, "fiscal_period": p}
            if by_region:
                row["region"] = r
            row.update({"recognized_revenue_usd": usd(a[0]), "order_count": a[1]})
            out.append(row)
        return out

    def customer_ltv(self, as_of_month: dt.date) -> list[dict]:
        """Per customer with orders before `as_of_month`'s next month start."""
        nxt = (as_of_month.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
        net: dict[int, int] = {}
        for it in self.items:
            net[it["order_id"]] = net.get(it["order_id"], 0) + it["net_line_cents"]
        agg: dict[int, list] = {}
        for o in self.orders:
            if o["customer_id"] is None or o["status"] == "cancelled" or o["order_date_local"] >= nxt:
                continue
            a = agg.setdefault(o["customer_id"], [o["order_date_local"], o["order_date_local"], 0, 0])
            a[0] = min(a[0], o["order_date_local"])
            a[1] = max(a[1], o["order_date_local"])
            a[2] += 1
            a[3] += net.get(o["order_id"], 0)
        return [{"customer_id": c, "first_order_date": a[0], "last_order_date": a[1], "order_count": a[2],
                 "lifetime_net_cents": a[3], "as_of_month": as_of_month} for c, a in sorted(agg.items())]

    def legacy_sales(self, lo: dt.date, hi: dt.date) -> list[dict]:
        """gross incl. tax per date and store code (store orders + online under S-000)."""
        code = {s["store_id"]: s["store_code"] for s in self.stores}
        agg: dict[tuple, list] = {}
        for o in self.orders:
            d = o["order_date_local"]
            if not lo <= d <= hi or o["status"] == "cancelled":
                continue
            a = agg.setdefault((d, code[o["store_id"]]), [0, 0])
            a[0] += o["gross_cents"] - o["discount_cents"] + o["tax_cents"]
            a[1] += 1
        return [{"sale_date": d, "store_code": c, "gross_sales_usd": usd(a[0]), "txn_count": a[1]}
                for (d, c), a in sorted(agg.items())]


def _period_end(f: Any) -> dt.date:
    weeks = (4, 5, 4, 4, 5, 4, 4, 5, 4, 4, 5, 4)
    end_week = sum(weeks[: f.fiscal_period])
    end = f.fiscal_year_start + dt.timedelta(weeks=end_week) - dt.timedelta(days=1)
    if f.fiscal_period == 12:  # a 53-week year: week 53 belongs to period 12
        nxt = fiscal(end + dt.timedelta(days=1))
        if nxt.fiscal_year == f.fiscal_year:
            end += dt.timedelta(days=7)
    return end


def _uuid(rng: random.Random) -> str:
    h = "%032x" % rng.getrandbits(128)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def generate(seed: int = 7, scale: str = "small") -> Lake:
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {', '.join(SCALES)}, got {scale!r}")
    cfg = SCALES[scale]
    rng = random.Random(seed)
    lake = Lake(seed, scale)
    _dates(lake)
    _stores(lake, rng)
    _products(lake, rng, cfg["products"])
    _customers(lake, rng, cfg["customers"])
    _orders(lake, rng, cfg["orders_per_day"])
    _sessions(lake, rng, cfg["sessions_per_order"])
    _loyalty(lake, rng)
    _marketing(lake, rng)
    _raw(lake, rng)
    return lake


def _dates(lake: Lake) -> None:
    hol = set().union(*(holidays(y) for y in range(2023, 2027)))
    for d in dates(FIRST_DATE, LAST_CAL_DATE):
        f = fiscal(d)
        lake.dim_date.append({"date": d, "day_of_week": d.strftime("%a"), "is_weekend": d.weekday() >= 5,
                              "calendar_year": d.year, "calendar_quarter": (d.month - 1) // 3 + 1,
                              "calendar_month": d.month, "fiscal_year": f.fiscal_year,
                              "fiscal_quarter": f.fiscal_quarter, "fiscal_period": f.fiscal_period,
                              "fiscal_week": f.fiscal_week, "fiscal_year_start": f.fiscal_year_start,
                              "is_holiday": d in hol})


def _stores(lake: Lake, rng: random.Random) -> None:
    lake.stores.append({"store_id": 0, "store_code": "S-000", "store_name": "acme.com (online)", "region": "online",
                        "format": "online", "timezone": TZ["online"], "opened_date": dt.date(2014, 3, 1),
                        "closed_date": None})
    for sid in range(1, 24):
        region = REGIONS[(sid - 1) % 4]
        if sid == 23:
            region = lake.stores[14]["region"]
        city = rng.choice(CITIES[region])
        fmt = rng.choices(("mall", "street", "outlet"), weights=(5, 4, 2))[0]
        opened = dt.date(2016, 1, 1) + dt.timedelta(days=rng.randrange(0, 2200))
        closed = None
        code = f"S-{sid:03d}"
        if sid == 14:
            closed = STORE_RELOCATED - dt.timedelta(days=1)
        if sid == 23:
            opened, code, fmt = STORE_RELOCATED, "S-014", "street"
            city = lake.stores[14]["store_name"].split(" ")[0]
        lake.stores.append({"store_id": sid, "store_code": code, "store_name": f"{city} {fmt.title()}" if sid != 23
                            else f"{city} Street (relocated)", "region": region, "format": fmt,
                            "timezone": TZ[region], "opened_date": opened, "closed_date": closed})
    for s in lake.stores:
        if s["store_id"] == 23:
            continue
        if s["store_id"] == 14:
            lake.map_store_code.append({"store_code": "S-014", "valid_from": s["opened_date"],
                                        "valid_to": STORE_RELOCATED - dt.timedelta(days=1), "store_id": 14})
            lake.map_store_code.append({"store_code": "S-014", "valid_from": STORE_RELOCATED, "valid_to": None,
                                        "store_id": 23})
        else:
            lake.map_store_code.append({"store_code": s["store_code"], "valid_from": s["opened_date"],
                                        "valid_to": None, "store_id": s["store_id"]})


def _products(lake: Lake, rng: random.Random, n: int) -> None:
    cats = list(CATEGORIES)
    for pid in range(1, n + 1):
        cat = cats[(pid - 1) % len(cats)]
        subs, (lo, hi) = CATEGORIES[cat]
        sub = rng.choice(subs)
        price = rng.randrange(lo, hi, 100) - 1
        status = rng.choices(("active", "discontinued", "preorder"), weights=(85, 11, 4))[0]
        brand = rng.choice(BRANDS)
        lake.products.append({"product_id": pid, "sku": f"{cat[:3].upper()}-{pid:05d}",
                              "product_name": f"{brand} {sub.title()} {rng.choice(['Lite', 'Pro', 'Classic', 'Alpine', 'Storm', 'Trek'])} {pid}",
                              "category": cat, "subcategory": sub, "brand": brand, "status": status,
                              "list_price_cents": price, "unit_cost_cents": int(price * rng.uniform(0.38, 0.55))})


TIERS = ("none", "silver", "gold", "platinum")


def _customers(lake: Lake, rng: random.Random, n: int) -> None:
    d30 = day(30)
    signups = sorted(min(FIRST_DATE - dt.timedelta(days=700) + dt.timedelta(days=int(rng.random() ** 0.7 * 1440)),
                         D0_DATE - dt.timedelta(days=3)) for _ in range(n))
    for cid, signup in enumerate(signups, start=1):
        tier = rng.choices(TIERS, weights=(50, 28, 16, 6))[0]
        tiers = [(signup, tier)]
        # about one in five changes tier at some point; a share of those after d-30 (the SCD2 trap)
        if rng.random() < 0.22:
            when = signup + dt.timedelta(days=rng.randrange(30, 900))
            if rng.random() < 0.4:
                when = d30 + dt.timedelta(days=rng.randrange(1, 28))
            if when < D0_DATE:
                up = TIERS[min(3, TIERS.index(tier) + 1)] if tier != "platinum" else "gold"
                tiers.append((when, up))
        region = rng.choices(REGIONS, weights=(32, 24, 22, 22))[0]
        lake.customers.append({"customer_id": 100000 + cid, "customer_uuid": _uuid(rng), "signup_date": signup,
                               "tiers": tiers, "home_region": region,
                               "email_domain": rng.choices(("gmail.com", "yahoo.com", "outlook.com", "icloud.com",
                                                            "acme-corp.com", "proton.me"),
                                                           weights=(45, 14, 16, 12, 5, 8))[0]})


def _order_count(rng: random.Random, d: dt.date, base: int) -> int:
    m = {11: 1.35, 12: 1.8, 1: 0.8, 2: 0.8, 6: 1.1, 7: 1.15}.get(d.month, 1.0)
    w = 1.3 if d.weekday() >= 5 else 1.0
    growth = 1.0 + 0.25 * ((d - FIRST_DATE).days / 770)
    return max(1, int(rng.gauss(base * m * w * growth, base * 0.12)))


def _orders(lake: Lake, rng: random.Random, base: int) -> None:  # noqa: C901 - the per-order generation rules, one after another on one random stream (a split would change the draws' order)
    custs = lake.customers
    prods = lake.products
    weights = [1.0 / (1 + (i % 40)) ** 0.6 for i in range(len(prods))]
    cum = list(itertools.accumulate(weights))
    hours, hour_cum = list(range(7, 24)), list(itertools.accumulate([1, 2, 3, 4, 5, 6, 6, 6, 6, 6, 7, 8, 9, 9, 8, 6, 3]))
    channels, ch_cum = ("web", "app", "store", "marketplace"), list(itertools.accumulate((42, 20, 32, 6)))
    signups = [c["signup_date"] for c in custs]
    physical = [s for s in lake.stores if s["store_id"] != 0]
    oid, pid_, rid, shid = 5_000_000, 9_000_000, 7_000_000, 3_000_000
    d0_local = D0.astimezone(ZoneInfo("America/New_York"))
    tax_rate = {"northeast": 0.0625, "southeast": 0.07, "midwest": 0.055, "west": 0.085, "online": 0.065}
    for d in dates(FIRST_DATE, D0_DATE):
        open_stores = [s for s in physical if s["opened_date"] <= d and (s["closed_date"] is None or d <= s["closed_date"])]
        eligible_hi = bisect.bisect_right(signups, d)
        n_orders = _order_count(rng, d, base)
        if d == D0_DATE:  # the partial day at d0: the night and early morning up to 09:00 ET
            n_orders = max(3, n_orders * 3 // 8)
        for k in range(n_orders):
            channel = rng.choices(channels, cum_weights=ch_cum)[0]
            store = rng.choice(open_stores) if channel == "store" else lake.stores[0]
            if d == day(1) and k < 4:  # store 17 trades on d-1 (its load that day is partial)
                channel, store = "store", lake.stores[17]
            tz = ZoneInfo(store["timezone"])
            hour = rng.choices(hours, cum_weights=hour_cum)[0] if d != D0_DATE else rng.randrange(0, 9)
            local = dt.datetime(d.year, d.month, d.day, hour, rng.randrange(60), rng.randrange(60), tzinfo=tz)
            if d == D0_DATE and local >= d0_local:
                continue  # d0 holds a partial day: up to 09:00 ET
            ts = local.astimezone(UTC)
            cust = None
            if (channel != "store" or rng.random() < 0.55) and eligible_hi:
                cust = custs[rng.randrange(eligible_hi)]["customer_id"] if rng.random() < 0.7 else \
                    custs[int(rng.random() ** 2 * eligible_hi)]["customer_id"]
            age = (D0_DATE - d).days
            r = rng.random()
            if r < 0.04:
                status = "cancelled"
            elif age <= 1:
                status = "placed"
            elif age <= 4 and channel != "store":
                status = "shipped"
            elif age > 14 and r < 0.075:
                status = "refunded"
            elif age > 14 and r < 0.115:
                status = "partially_refunded"
            else:
                status = "delivered"
            oid += 1
            n_lines = rng.choices((1, 2, 3, 4, 5), weights=(40, 28, 17, 10, 5))[0]
            chosen = rng.choices(prods, cum_weights=cum, k=n_lines)
            gross = disc = 0
            lines = []
            for ln, p in enumerate(chosen, start=1):
                q = rng.choices((1, 2, 3), weights=(78, 17, 5))[0]
                price = p["list_price_cents"]
                if rng.random() < 0.15:
                    price = int(price * 0.8)
                dc = int(q * price * rng.choice((0.1, 0.15, 0.2, 0.3))) if rng.random() < 0.22 else 0
                lines.append({"order_id": oid, "line_no": ln, "product_id": p["product_id"], "quantity": q,
                              "unit_price_cents": price, "discount_cents": dc, "net_line_cents": q * price - dc,
                              "order_date_local": d})
                gross += q * price
                disc += dc
            net = gross - disc
            tax = _cents(net * tax_rate[store["region"]])
            ship = 0 if channel == "store" or net >= 7500 else 795
            o = {"order_id": oid, "customer_id": cust, "store_id": store["store_id"], "channel": channel,
                 "order_ts_utc": ts, "order_date_local": d, "status": status, "gross_cents": gross,
                 "discount_cents": disc, "tax_cents": tax, "shipping_cents": ship, "_local": local,
                 "_tz": store["timezone"]}
            lake.orders.append(o)
            lake.items.extend(lines)
            total = net + tax + ship
            # payments: failed and voided attempts before the capture (the revenue-from-payments trap)
            attempts = []
            method = rng.choices(("card", "gift_card", "paypal", "store_credit"), weights=(70, 8, 17, 5))[0]
            if status == "cancelled":
                attempts = [("voided", method)]
            else:
                x = rng.random()
                if x < 0.12:
                    attempts = [("failed", method), ("captured", method)]
                elif x < 0.15:
                    attempts = [("failed", "card"), ("failed", "card"), ("captured", "paypal")]
                elif x < 0.18:
                    attempts = [("voided", method), ("captured", method)]
                else:
                    attempts = [("captured", method)]
            t = ts
            for i, (st, m) in enumerate(attempts, start=1):
                pid_ += 1
                t = t + dt.timedelta(seconds=rng.randrange(5, 240))
                lake.payments.append({"payment_id": pid_, "order_id": oid, "attempt_no": i, "method": m,
                                      "status": st, "amount_cents": total, "attempted_at_utc": t})
            delivered_at = None
            if channel != "store" and status not in ("cancelled", "placed"):
                n_ship = 2 if len(lines) > 2 and rng.random() < 0.25 else 1
                for k in range(n_ship):
                    shid += 1
                    shipped = ts + dt.timedelta(hours=rng.randrange(14, 60) + 24 * k)
                    delivered = shipped + dt.timedelta(hours=rng.randrange(30, 140))
                    if status == "shipped" or delivered > D0:
                        delivered_opt = None
                    else:
                        delivered_opt = delivered
                        delivered_at = max(delivered_at or delivered, delivered)
                    lake.shipments.append({"shipment_id": shid, "order_id": oid,
                                           "carrier": rng.choices(("ups", "fedex", "usps"), weights=(45, 30, 25))[0],
                                           "shipped_ts_utc": shipped, "delivered_ts_utc": delivered_opt,
                                           "shipping_cost_cents": rng.randrange(450, 1900)})
            if status in ("refunded", "partially_refunded"):
                base_day = (delivered_at.date() if delivered_at else d)
                refund_day = min(base_day + dt.timedelta(days=rng.randrange(3, 26)), D0_DATE - dt.timedelta(days=1))
                refunded = lines if status == "refunded" else [rng.choice(lines)]
                for rl in refunded:
                    rid += 1
                    lake.refunds.append({"refund_id": rid, "order_id": oid, "line_no": rl["line_no"],
                                         "refund_date": refund_day, "refund_cents": rl["net_line_cents"],
                                         "reason": rng.choices(("damaged", "wrong_size", "not_as_described",
                                                                "late_delivery", "other"),
                                                               weights=(15, 40, 20, 10, 15))[0]})


def _sessions(lake: Lake, rng: random.Random, per_order: int) -> None:
    uuid_of = {c["customer_id"]: c["customer_uuid"] for c in lake.customers}
    pages = ("/", "/c/outerwear", "/c/footwear", "/c/camping", "/sale", "/p/detail", "/search", "/blog/trail-guides")
    by_day: dict[dt.date, list[dict]] = {}
    for o in lake.orders:
        if o["channel"] in ("web", "app") and o["order_date_local"] >= SESSIONS_FROM:
            by_day.setdefault(o["order_date_local"], []).append(o)
    custs = [c["customer_id"] for c in lake.customers]
    n = 0
    for d in dates(SESSIONS_FROM, D0_DATE):
        conv = by_day.get(d, [])
        total = max(len(conv) * per_order + rng.randrange(0, 10), 5)
        for i in range(total):
            n += 1
            if i < len(conv):
                o = conv[i]
                cust, ch, ts, oid = o["customer_id"], o["channel"], o["order_ts_utc"] - dt.timedelta(minutes=rng.randrange(3, 50)), o["order_id"]
            else:
                cust = rng.choice(custs) if rng.random() < 0.45 else None
                ch = rng.choices(("web", "app"), weights=(70, 30))[0]
                local = dt.datetime(d.year, d.month, d.day, rng.randrange(0, 24), rng.randrange(60), tzinfo=ZoneInfo("America/New_York"))
                ts = local.astimezone(UTC)
                oid = None
                if d == D0_DATE and ts >= D0:
                    continue
            lake.sessions.append({"session_id": hashlib.sha1(f"{lake.seed}-{n}".encode()).hexdigest()[:20],
                                  "customer_id": cust, "customer_uuid": uuid_of.get(cust) if cust else None,
                                  "started_at_utc": ts, "session_date": d,
                                  "device": ("mobile" if ch == "app" else rng.choices(("desktop", "mobile", "tablet"), weights=(50, 40, 10))[0]),
                                  "channel": ch, "landing_page": rng.choice(pages), "converted_order_id": oid})


def _loyalty(lake: Lake, rng: random.Random) -> None:
    eid = 1
    net: dict[int, int] = {}
    for it in lake.items:
        net[it["order_id"]] = net.get(it["order_id"], 0) + it["net_line_cents"]
    for o in lake.orders:
        if o["customer_id"] is None or o["status"] == "cancelled":
            continue
        lake.loyalty.append({"event_id": eid, "customer_id": o["customer_id"], "event_type": "earn",
                             "points": net[o["order_id"]] // 100, "event_date": o["order_date_local"]})
        eid += 1
        r = rng.random()
        if r < 0.12:
            lake.loyalty.append({"event_id": eid, "customer_id": o["customer_id"], "event_type": "redeem",
                                 "points": -rng.choice((100, 200, 500)), "event_date": o["order_date_local"]})
            eid += 1
        elif r < 0.16:
            later = min(o["order_date_local"] + dt.timedelta(days=365), D0_DATE - dt.timedelta(days=1))
            lake.loyalty.append({"event_id": eid, "customer_id": o["customer_id"],
                                 "event_type": rng.choice(("expire", "adjust")),
                                 "points": -rng.randrange(10, 300), "event_date": later})
            eid += 1
    lake.loyalty.sort(key=lambda e: (e["event_date"], e["event_id"]))


def _marketing(lake: Lake, rng: random.Random) -> None:
    camps = {"search": ["brand-search", "nonbrand-search"], "social": ["social-prospecting", "social-retarget"],
             "email": ["newsletter"], "display": ["display-awareness"], "affiliate": ["affiliate-core"]}
    for d in dates(FIRST_DATE, D0_DATE - dt.timedelta(days=1)):
        for ch, cs in camps.items():
            for c in cs:
                spend = rng.uniform(40, 900) * (1.6 if d.month in (11, 12) else 1.0)
                cpc = {"search": 1.1, "social": 0.7, "email": 0.05, "display": 0.9, "affiliate": 1.4}[ch]
                clicks = max(1, int(spend / cpc * rng.uniform(0.7, 1.3)))
                lake.marketing.append({"spend_date": d, "channel": ch, "campaign_id": f"{ch[:3]}-{c}",
                                       "spend_usd": Decimal(f"{spend:.2f}"), "impressions": clicks * rng.randrange(20, 90),
                                       "clicks": clicks})


def _raw(lake: Lake, rng: random.Random) -> None:
    lines: dict[int, list[dict]] = {}
    for it in lake.items:
        lines.setdefault(it["order_id"], []).append(it)
    sku = {p["product_id"]: p["sku"] for p in lake.products}
    code = {s["store_id"]: s["store_code"] for s in lake.stores}
    for o in lake.orders:
        ls = lines[o["order_id"]]
        net = sum(x["net_line_cents"] for x in ls)
        if o["channel"] == "store":
            for x in ls:
                share = o["tax_cents"] * x["net_line_cents"] // max(net, 1)
                lake.pos.append({"txn_id": o["order_id"], "line_no": x["line_no"], "store_code": code[o["store_id"]],
                                 "txn_ts_local": o["_local"].replace(tzinfo=None), "sku": sku[x["product_id"]],
                                 "qty": x["quantity"], "amount_cents": x["net_line_cents"] + share,
                                 "tender": rng.choice(("visa", "mastercard", "amex", "cash", "gift"))})
        else:
            ts = o["order_ts_utc"]
            placed = ts.strftime("%Y-%m-%dT%H:%M:%SZ") if o["order_id"] % 3 else \
                o["_local"].isoformat(timespec="seconds")
            payload = {"channel": o["channel"], "lines": [{"sku": sku[x["product_id"]], "qty": x["quantity"],
                                                           "price": x["unit_price_cents"]} for x in ls]}
            lake.web_orders.append({"order_id": o["order_id"],
                                    "customer_email_hash": hashlib.sha256(str(o["customer_id"]).encode()).hexdigest()
                                    if o["customer_id"] else None,
                                    "placed_at": placed, "total_cents": net + o["tax_cents"] + o["shipping_cents"],
                                    "item_count": sum(x["quantity"] for x in ls), "payload": json.dumps(payload)})
