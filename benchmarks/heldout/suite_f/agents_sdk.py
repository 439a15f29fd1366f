"""Agents recorded with the trajdebug recording SDK (`trajdebug.run`, `@trajdebug.step`, `run.state`)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trajdebug

from .common import BRAINS, Agent, Case, active, complete


# ======================================================================================
# invoice-reconciler: accounts payable, an invoice matched to its purchase order
# ======================================================================================

FX_TO_EUR = {"EUR": 1.0, "GBP": 1.17, "CHF": 1.06, "USD": 0.92, "SEK": 0.087}
SYMBOL = {"EUR": "€", "GBP": "£", "CHF": "CHF ", "USD": "$", "SEK": "SEK "}

INVOICES: dict[str, dict[str, Any]] = {
    "INV-2291": {"vendor": "Hartley Print Ltd", "ccy": "GBP", "po": "PO-7713",
                 "lines": [("Brochure A4, 2,000 pcs", 1, 2860.00), ("Delivery", 1, 560.00)]},
    "INV-3307": {"vendor": "Bergmann Logistik GmbH", "ccy": "EUR", "po": "PO-7720",
                 "lines": [("Pallet storage, March", 14, 38.50), ("Handling", 1, 211.00)]},
    "INV-4410": {"vendor": "Alpenkaffee AG", "ccy": "CHF", "po": "PO-7731",
                 "lines": [("Espresso beans 6 kg", 9, 121.00), ("Grinder service", 1, 340.00)]},
    "INV-5120": {"vendor": "Lakeside Catering Inc.", "ccy": "USD", "po": "PO-7744",
                 "lines": [("Conference lunch, 240 guests", 240, 48.00), ("Staff", 1, 960.00)]},
    "INV-6081": {"vendor": "Nordljus Design AB", "ccy": "SEK", "po": "PO-7750",
                 "lines": [("Brand workshop", 2, 18500.00), ("Travel", 1, 4200.00)]},
    "INV-7002": {"vendor": "Cobalt Office Supplies", "ccy": "GBP", "po": "PO-7761",
                 "lines": [("Desk chairs", 12, 189.00)]},
    "INV-7315": {"vendor": "Rhein Cleaning Services", "ccy": "EUR", "po": "PO-7765",
                 "lines": [("Office cleaning, April", 1, 1840.00), ("Window cleaning", 2, 155.00)]},
    "INV-8120": {"vendor": "Pinecrest Software LLC", "ccy": "USD", "po": "PO-7770",
                 "lines": [("Annual licence, 35 seats", 35, 96.00)]},
}


def _inv_total(inv: dict[str, Any]) -> float:
    return round(sum(q * p for _, q, p in inv["lines"]), 2)


def _money(x: float) -> str:
    return f"{x:,.2f}"


def _po(inv_id: str) -> dict[str, Any]:
    inv = INVOICES[inv_id]
    eur = round(_inv_total(inv) * FX_TO_EUR[inv["ccy"]], 2)
    prior = round(eur * 0.4, 2)
    return {"po": inv["po"], "vendor": inv["vendor"], "line_amount_eur": eur,
            "budget_eur": round(eur + prior, 2), "invoiced_eur": prior}


def _invoice_text(inv_id: str) -> str:
    inv = INVOICES[inv_id]
    sym = SYMBOL[inv["ccy"]]
    rows = "\n".join(f"  {d:<32} {q:>4} x {sym}{_money(p)}" for d, q, p in inv["lines"])
    return (f"INVOICE {inv_id}\nFrom: {inv['vendor']}\nYour order: {inv['po']}\n{rows}\n"
            f"  TOTAL DUE {sym}{_money(_inv_total(inv))} ({inv['ccy']})\nPayment terms: 30 days net")


def _extract_brain(request: Any, msgs: list[dict[str, Any]]) -> str:
    user = msgs[-1]["content"]
    inv_id = re.search(r"INVOICE (INV-\d+)", user).group(1)
    inv = INVOICES[inv_id]
    ccy = inv["ccy"]
    if active("inv.currency"):
        ccy = "EUR"  # the model reads the amount and assumes the company's home currency
    return json.dumps({"invoice": inv_id, "vendor": inv["vendor"], "po": inv["po"], "currency": ccy,
                       "total": _money(_inv_total(inv))})


BRAINS["extract_invoice"] = _extract_brain


class RateServiceTimeout(Exception):
    pass


def _rate_service(ccy: str) -> float:
    if active("inv.fx") and ccy == "CHF":
        raise RateServiceTimeout("rates.internal: read timed out after 2.0 s")
    return FX_TO_EUR[ccy]


@trajdebug.step(kind="tool")
def fetch_invoice(invoice_id: str) -> str:
    return _invoice_text(invoice_id)


@trajdebug.step(kind="llm")
def extract_invoice(messages: list[dict[str, str]]) -> dict[str, Any]:
    return complete("extract_invoice", messages[-1]["content"], messages[0]["content"])


@trajdebug.step(kind="parse")
def parse_invoice(reply: dict[str, Any]) -> dict[str, Any]:
    data = json.loads(reply["content"])
    raw = data["total"]
    if active("inv.parse"):
        total = float(raw.replace(".", "").replace(",", "."))  # read as a European-format number
    else:
        total = float(raw.replace(",", ""))
    return {"invoice": data["invoice"], "vendor": data["vendor"], "po": data["po"],
            "currency": data["currency"], "total": total}


@trajdebug.step(kind="tool")
def fetch_po(po_id: str, invoice_id: str) -> dict[str, Any]:
    po = _po(invoice_id)
    trajdebug.current_run().state["po_ledger"] = {po_id: {"budget_eur": po["budget_eur"],
                                                          "invoiced_eur": po["invoiced_eur"]}}
    return po


@trajdebug.step(kind="tool")
def fx_rate(currency: str) -> dict[str, Any]:
    try:
        rate = _rate_service(currency)
    except RateServiceTimeout:
        rate = 1.0
    return {"pair": f"{currency}/EUR", "rate": rate}


@trajdebug.step(kind="other")
def convert_total(invoice: dict[str, Any], fx: dict[str, Any]) -> dict[str, Any]:
    return {"invoice": invoice["invoice"], "total_eur": round(invoice["total"] * fx["rate"], 2)}


@trajdebug.step(kind="state")
def update_po_ledger(po_id: str, converted: dict[str, Any]) -> dict[str, Any]:
    ledger = trajdebug.current_run().state["po_ledger"]
    entry = dict(ledger[po_id])
    entry["reserved_eur"] = converted["total_eur"]
    if active("inv.ledger"):
        entry["invoiced_eur"] = round(entry["invoiced_eur"] + converted["total_eur"], 2)  # reserved counted twice
    entry["remaining_eur"] = round(entry["budget_eur"] - entry["invoiced_eur"], 2)
    trajdebug.current_run().state["po_ledger"] = {**ledger, po_id: entry}
    return entry


@trajdebug.step(kind="condition")
def approve_payment(po: dict[str, Any], converted: dict[str, Any]) -> str:
    entry = trajdebug.current_run().state["po_ledger"][po["po"]]
    amount, expected = converted["total_eur"], po["line_amount_eur"]
    if abs(amount - expected) > 0.01 * expected:
        raise ValueError(f"{converted['invoice']}: {amount:.2f} EUR does not match {po['po']} "
                         f"({expected:.2f} EUR)")
    if amount > entry["remaining_eur"] + 0.01:
        raise ValueError(f"{converted['invoice']}: {amount:.2f} EUR exceeds the remaining balance of "
                         f"{po['po']} ({entry['remaining_eur']:.2f} EUR)")
    return "approved"


@trajdebug.step(kind="tool")
def schedule_payment(invoice_id: str, amount_eur: float) -> dict[str, Any]:
    return {"invoice": invoice_id, "amount_eur": amount_eur, "status": "scheduled", "run": "2026-12-04"}


def record_invoice(inp: dict[str, Any], path: Path) -> None:
    inv_id = inp["invoice_id"]
    try:
        with trajdebug.run("invoice-reconciler", path=str(path), task=f"reconcile and pay {inv_id}"):
            with trajdebug.step("receive_request", kind="input", input=inp) as s:
                s.output = {"invoice_id": inv_id}
            text = fetch_invoice(inv_id)
            system = ("Extract the invoice as JSON with keys invoice, vendor, po, currency (ISO code) "
                      "and total (as printed).")
            reply = extract_invoice([{"role": "system", "content": system},
                                     {"role": "user", "content": text}])
            invoice = parse_invoice(reply)
            po = fetch_po(invoice["po"], inv_id)
            fx = fx_rate(invoice["currency"])
            converted = convert_total(invoice, fx)
            update_po_ledger(invoice["po"], converted)
            approve_payment(po, converted)
            schedule_payment(inv_id, converted["total_eur"])
    except ValueError:
        pass


def _inv_marker_parse(inv_id: str) -> str:
    raw = _money(_inv_total(INVOICES[inv_id]))
    return f'"total": {float(raw.replace(".", "").replace(",", "."))}'


def _inv_marker_ledger(inv_id: str) -> str:
    po = _po(inv_id)
    return f'"invoiced_eur": {round(po["invoiced_eur"] + po["line_amount_eur"], 2)}'


INVOICE_AGENT = Agent(
    name="invoice-reconciler", route="sdk", domain="accounts payable", ext="jsonl",
    description="extracts an invoice with a model, converts it to EUR, matches it to its PO and approves payment",
    ref_inputs=[{"invoice_id": i} for i in ("INV-6081", "INV-7002", "INV-7315", "INV-8120")],
    record=record_invoice,
    cases=[
        Case("invoice_currency_mixup", "invoice-reconciler", {"invoice_id": "INV-2291"}, "currency_mixup",
             "inv.currency", "extract_invoice", "llm", '"currency": "EUR", "total": "3,420.00"',
             "the model extracts a GBP invoice's currency as EUR, so no conversion is applied and the "
             "amount no longer matches the purchase order"),
        Case("invoice_lossy_parse", "invoice-reconciler", {"invoice_id": "INV-5120"}, "lossy_parse",
             "inv.parse", "parse_invoice", "parse", _inv_marker_parse("INV-5120"),
             "the total '12,480.00' is parsed as a European-format number (12.48)"),
        Case("invoice_ledger_double_count", "invoice-reconciler", {"invoice_id": "INV-3307"},
             "bad_state_write", "inv.ledger", "update_po_ledger", "state", _inv_marker_ledger("INV-3307"),
             "the PO ledger write adds the reserved amount to invoiced_eur as well, so the remaining "
             "balance is understated"),
        Case("invoice_fx_default", "invoice-reconciler", {"invoice_id": "INV-4410"}, "swallowed_error",
             "inv.fx", "fx_rate", "tool", '"pair": "CHF/EUR", "rate": 1.0}',
             "the FX service times out and fx_rate silently returns a rate of 1.0"),
    ],
)


# ======================================================================================
# lineup-builder: a fantasy-football manager setting a weekly lineup
# ======================================================================================

import datetime as _dt  # noqa: E402


SEASON_START = _dt.date(2026, 9, 8)  # Tuesday of week 1
ROSTERS: dict[str, list[tuple[str, str, str, float]]] = {  # name, position, NFL team, projection
    "T-04": [("Jalen Hurts", "QB", "PHI", 22.1), ("Dak Prescott", "QB", "DAL", 18.4),
             ("Bijan Robinson", "RB", "ATL", 17.9), ("Kyren Williams", "RB", "LAR", 15.2),
             ("Tony Pollard", "RB", "TEN", 11.0), ("Keenan Allen", "WR", "CHI", 14.6),
             ("Amon-Ra St. Brown", "WR", "DET", 16.8), ("DJ Moore", "WR", "CHI", 12.9),
             ("Jerry Jeudy", "WR", "CLE", 10.1), ("Sam LaPorta", "TE", "DET", 10.8),
             ("Cole Kmet", "TE", "CHI", 6.9),
             ("Jaylen Warren", "RB", "PIT", 9.5), ("Rashid Shaheed", "WR", "NO", 8.2)],
    "T-09": [("Lamar Jackson", "QB", "BAL", 23.5), ("Jared Goff", "QB", "DET", 17.6),
             ("Saquon Barkley", "RB", "PHI", 18.8), ("James Cook", "RB", "BUF", 14.9),
             ("Chuba Hubbard", "RB", "CAR", 12.2), ("Puka Nacua", "WR", "LAR", 16.1),
             ("Garrett Wilson", "WR", "NYJ", 13.7), ("Tee Higgins", "WR", "CIN", 13.3),
             ("Rome Odunze", "WR", "CHI", 9.8), ("Trey McBride", "TE", "ARI", 11.9),
             ("Dalton Kincaid", "TE", "BUF", 8.0),
             ("Rhamondre Stevenson", "RB", "NE", 10.4), ("Jaylen Waddle", "WR", "MIA", 12.5)],
}
BYES = {7: {"DET", "LAR"}, 8: {"CHI", "BUF"}, 9: {"PHI", "ARI"}, 10: {"ATL", "CIN"}}
INJURIES = {  # week -> player -> status
    6: {"Tony Pollard": "OUT"},
    7: {"Bijan Robinson": "OUT", "Keenan Allen": "QUESTIONABLE", "Garrett Wilson": "QUESTIONABLE"},
    8: {"Saquon Barkley": "OUT", "Rome Odunze": "QUESTIONABLE"},
    9: {"Puka Nacua": "QUESTIONABLE", "Jared Goff": "OUT"},
    10: {"Keenan Allen": "QUESTIONABLE"},
}
FINAL_INACTIVE = {7: {"Bijan Robinson", "Keenan Allen"}, 8: {"Saquon Barkley"}, 9: {"Jared Goff"},
                  10: set()}
SCOUT_NEWS = {
    "Keenan Allen": {7: "did not practice all week (hamstring); expected to be inactive",
                     10: "full participant on Friday; expected to play"},
    "Garrett Wilson": {7: "limited Wednesday, full Friday; expected to play"},
    "Rome Odunze": {8: "full participant on Friday; expected to play"},
    "Puka Nacua": {9: "full participant on Friday; expected to play"},
    "Josh Allen": dict.fromkeys(range(6, 11), "full participant all week; no injury designation"),
}
LEAGUE_RULES = {
    "L-ROOKIE": "League L-ROOKIE scoring: half-PPR. Lineup: 1 QB, 2 RB, 2 WR, 1 TE, 1 FLEX (RB/WR/TE). qb_slots=1",
    "L-SUPER": "League L-SUPER scoring: full PPR. Superflex lineup: 1 QB, 2 RB, 2 WR, 1 TE, 1 SUPERFLEX "
               "(QB/RB/WR/TE). qb_slots=2",
}
TEAM_LEAGUE = {"T-04": "L-ROOKIE", "T-09": "L-ROOKIE"}


def _week_of(day: _dt.date) -> int:
    return (day - SEASON_START).days // 7 + 1


@trajdebug.step(kind="other")
def current_week(date: str) -> dict[str, Any]:
    day = _dt.date.fromisoformat(date)
    days = (day - SEASON_START).days
    if active("lineup.week"):
        days += 1  # counts the lock day inclusively
    return {"date": date, "week": days // 7 + 1}


@trajdebug.step(kind="tool")
def fetch_roster(team_id: str) -> list[dict[str, Any]]:
    return [{"name": n, "pos": p, "team": t, "proj": pr} for n, p, t, pr in ROSTERS[team_id]]


@trajdebug.step(kind="tool")
def injury_report(week: int) -> dict[str, Any]:
    as_of = week - 1 if active("lineup.stale") else week  # the cached report from last week
    return {"as_of_week": as_of, "statuses": dict(INJURIES.get(as_of, {}))}


@trajdebug.step(kind="tool")
def bye_teams(week: int) -> dict[str, Any]:
    return {"week": week, "bye": sorted(BYES.get(week, set()))}


@trajdebug.step(kind="retrieval")
def league_rules(league_id: str) -> dict[str, Any]:
    doc = "L-SUPER" if active("lineup.rules") else league_id  # last opened league's rules from the cache
    return {"doc": doc, "text": LEAGUE_RULES[doc]}


def _plan_brain(request: Any, msgs: list[dict[str, Any]]) -> str:
    data = json.loads(msgs[-1]["content"])
    names = [p for p, st in data["statuses"].items() if st == "QUESTIONABLE"
             and any(r["name"] == p for r in data["roster"])]
    if active("lineup.scout"):
        names = ["Josh Allen" if n == "Keenan Allen" else n for n in names]
    return json.dumps({"scout": names})


def _scout_brain(request: Any, msgs: list[dict[str, Any]]) -> str:
    data = json.loads(msgs[-1]["content"])
    return f"{data['player']}: {data['news']}"


def _lineup_brain(request: Any, msgs: list[dict[str, Any]]) -> str:
    data = json.loads(msgs[-1]["content"])
    qb_slots = int(re.search(r"qb_slots=(\d)", data["rules"]).group(1))
    def cleared(name: str) -> bool:  # a scouting note on this player (matched by surname) says he plays
        for note in data["scouting"]:
            who, news = note.split(": ", 1)
            if who.split()[-1] == name.split()[-1]:
                return "expected to play" in news or "no injury designation" in news
        return False

    ok = []
    for p in data["roster"]:
        st = data["statuses"].get(p["name"], "ACTIVE")
        if st == "OUT" or p["team"] in data["bye"]:
            continue
        if st == "QUESTIONABLE" and not cleared(p["name"]):
            continue
        ok.append(p)
    ok.sort(key=lambda p: -p["proj"])
    need = {"QB": 1, "RB": 2, "WR": 2, "TE": 1}
    picked: list[dict[str, Any]] = []
    for p in ok:
        if need.get(p["pos"], 0) > 0:
            need[p["pos"]] -= 1
            picked.append(p)
    flex_pos = ("QB", "RB", "WR", "TE") if qb_slots == 2 else ("RB", "WR", "TE")
    flex = next(p for p in ok if p not in picked and p["pos"] in flex_pos)
    lineup = [{"slot": p["pos"], "name": p["name"]} for p in picked]
    lineup.append({"slot": "FLEX", "name": flex["name"]})
    return "Lineup:\n" + "\n".join(f"{x['slot']}: {x['name']}" for x in lineup)


BRAINS["plan_scouting"] = _plan_brain
BRAINS["scout_report"] = _scout_brain
BRAINS["pick_lineup"] = _lineup_brain


@trajdebug.step(kind="llm")
def plan_scouting(messages: list[dict[str, str]]) -> dict[str, Any]:
    return complete("plan_scouting", messages[-1]["content"], messages[0]["content"])


@trajdebug.step(kind="tool")
def player_news(player: str, week: int) -> dict[str, Any]:
    news = SCOUT_NEWS.get(player, {}).get(week, "no news this week")
    return {"player": player, "week": week, "news": news}


@trajdebug.step(kind="llm")
def scout_report(messages: list[dict[str, str]]) -> dict[str, Any]:
    return complete("scout_report", messages[-1]["content"], messages[0]["content"])


@trajdebug.step(kind="agent")
def scout(player: str, week: int) -> str:
    news = player_news(player, week)
    reply = scout_report([{"role": "system", "content": "Summarize the player's availability in one line."},
                          {"role": "user", "content": json.dumps(news)}])
    return reply["content"]


@trajdebug.step(kind="llm")
def pick_lineup(messages: list[dict[str, str]]) -> dict[str, Any]:
    return complete("pick_lineup", messages[-1]["content"], messages[0]["content"])


@trajdebug.step(kind="parse")
def parse_lineup(reply: dict[str, Any]) -> list[dict[str, str]]:
    rows = [line.split(": ", 1) for line in reply["content"].splitlines()[1:]]
    return [{"slot": a, "name": b} for a, b in rows]


@trajdebug.step(kind="tool")
def submit_lineup(team_id: str, date: str, lineup: list[dict[str, str]]) -> dict[str, Any]:
    week = _week_of(_dt.date.fromisoformat(date))
    by_name = {n: (p, t) for n, p, t, _ in ROSTERS[team_id]}
    qbs = sum(1 for x in lineup if by_name[x["name"]][0] == "QB")
    if qbs > 1:
        raise ValueError(f"league {TEAM_LEAGUE[team_id]} allows 1 QB, lineup has {qbs}")
    for x in lineup:
        _pos, team = by_name[x["name"]]
        if team in BYES.get(week, set()):
            raise ValueError(f"{x['name']} ({team}) is on a bye in week {week}")
        if x["name"] in FINAL_INACTIVE.get(week, set()):
            raise ValueError(f"{x['name']} is inactive for week {week}")
    return {"team": team_id, "week": week, "status": "locked"}


def record_lineup(inp: dict[str, Any], path: Path) -> None:
    team, date = inp["team_id"], inp["date"]
    try:
        with trajdebug.run("lineup-builder", path=str(path), task=f"set the lineup of {team} for {date}"):
            with trajdebug.step("receive_request", kind="input", input=inp) as s:
                s.output = dict(inp)
            wk = current_week(date)
            roster = fetch_roster(team)
            inj = injury_report(wk["week"])
            byes = bye_teams(wk["week"])
            rules = league_rules(TEAM_LEAGUE[team])
            plan = plan_scouting([{"role": "system", "content": "Name the questionable players on this roster "
                                   "to scout, as JSON {\"scout\": [...]}."},
                                  {"role": "user", "content": json.dumps({"roster": roster,
                                                                          "statuses": inj["statuses"]})}])
            notes = [scout(p, wk["week"]) for p in json.loads(plan["content"])["scout"]]
            reply = pick_lineup([{"role": "system", "content": "Pick the highest-projected legal lineup."},
                                 {"role": "user", "content": json.dumps({
                                     "roster": roster, "statuses": inj["statuses"], "bye": byes["bye"],
                                     "rules": rules["text"], "scouting": notes})}])
            lineup = parse_lineup(reply)
            submit_lineup(team, date, lineup)
    except ValueError:
        pass


LINEUP_AGENT = Agent(
    name="lineup-builder", route="sdk", domain="fantasy sports", ext="jsonl",
    description="works out the week, reads injuries, byes and league rules, scouts questionable players "
                "through a sub-agent, and has a model pick the lineup",
    ref_inputs=[{"team_id": "T-09", "date": "2026-10-21"}, {"team_id": "T-04", "date": "2026-10-28"},
                {"team_id": "T-09", "date": "2026-11-04"}, {"team_id": "T-04", "date": "2026-11-11"}],
    record=record_lineup,
    cases=[
        Case("lineup_week_off_by_one", "lineup-builder", {"team_id": "T-04", "date": "2026-10-26"},
             "off_by_one", "lineup.week", "current_week", "other", '"week": 8}',
             "the week number counts the lock day inclusively, giving week 8 on the last day of week 7"),
        Case("lineup_stale_injuries", "lineup-builder", {"team_id": "T-04", "date": "2026-10-20"},
             "stale_data", "lineup.stale", "injury_report", "tool", '"as_of_week": 6',
             "the injury report comes from last week's cache and misses a player ruled out this week"),
        Case("lineup_scout_wrong_player", "lineup-builder", {"team_id": "T-04", "date": "2026-10-22"},
             "wrong_entity_subagent", "lineup.scout", "plan_scouting", "llm", "Josh Allen",
             "the planner sends the scouting sub-agent to Josh Allen instead of Keenan Allen"),
        Case("lineup_other_league_rules", "lineup-builder", {"team_id": "T-09", "date": "2026-10-27"},
             "context_pollution", "lineup.rules", "league_rules", "retrieval", "SUPERFLEX",
             "another league's superflex rules are put into the lineup prompt, so two QBs are started"),
    ],
)


# ======================================================================================
# energy-switch-advisor: household electricity tariff switching
# ======================================================================================

HOMES = {  # region, heat pump on record, heating note, electricity kWh/year, gas m3/year, survey answers
    "H-31": ("south", False, "electric storage heaters", 3800, None, {}),
    "H-32": ("north", False, "heat pump installed October 2026", 9500, None, {"heat_pump": True}),
    "H-33": ("south", False, "gas boiler", 4200, 900, {}),
    "H-34": ("north", False, "gas boiler", 5200, 1100, {}),
    "H-41": ("north", False, "gas boiler", 3100, 800, {}),
    "H-42": ("south", True, "air-source heat pump", 8800, None, {}),
    "H-43": ("north", True, "ground-source heat pump", 10400, None, {}),
    "H-44": ("south", False, "district heating", 2600, None, {}),
}
TARIFFS = {  # (region, track) -> name, EUR/kWh, standing EUR/year
    ("north", "standard"): [("Basic Saver", 0.36, 90), ("FlexFix", 0.31, 220)],
    ("south", "standard"): [("SunFix", 0.33, 150), ("Coast Basic", 0.38, 80)],
    ("north", "heat_pump"): [("HeatWise", 0.26, 260)],
    ("south", "heat_pump"): [("HeatWise South", 0.27, 250)],
}
STANDARD_CAP_KWH = 6000
DEFAULT_REGION = "north"


def _monthly(total: float) -> list[float]:
    shape = [1.3, 1.2, 1.1, 0.9, 0.8, 0.7, 0.7, 0.8, 0.9, 1.1, 1.2, 1.3]
    return [round(total * w / 12, 1) for w in shape]


@trajdebug.step(kind="tool")
def load_household(household_id: str) -> dict[str, Any]:
    region, hp, note, _, gas, _ = HOMES[household_id]
    rec = {"household": household_id, "region": region, "heat_pump": hp, "heating": note,
           "electricity_meter": f"MTR-E-{household_id[2:]}01"}
    if gas is not None:
        rec["gas_meter"] = f"MTR-G-{household_id[2:]}01"
    trajdebug.current_run().state["household"] = rec
    return rec


@trajdebug.step(kind="state")
def update_household(answers: dict[str, Any]) -> dict[str, Any]:
    state = trajdebug.current_run().state
    old = state["household"]
    merged = {**answers, **old} if active("energy.state") else {**old, **answers}  # stale record wins the merge
    state["household"] = merged
    return merged


def _plan_brain(request: Any, msgs: list[dict[str, Any]]) -> str:
    rec = json.loads(msgs[-1]["content"])
    meter = rec["electricity_meter"]
    if active("energy.meter") and "gas_meter" in rec:
        meter = rec["gas_meter"]
    return json.dumps({"tool": "meter_readings", "args": {"meter_id": meter, "months": 12}})


def _track_brain(request: Any, msgs: list[dict[str, Any]]) -> str:
    rec = json.loads(msgs[-1]["content"])["household"]
    track = "heat_pump" if rec["heat_pump"] else "standard"
    if active("energy.route") and "electric" in rec["heating"]:
        track = "heat_pump"  # electric storage heating taken for a heat pump
    return json.dumps({"track": track})


BRAINS["energy_plan"] = _plan_brain
BRAINS["energy_track"] = _track_brain


@trajdebug.step(kind="llm")
def plan_lookup(messages: list[dict[str, str]]) -> dict[str, Any]:
    return complete("energy_plan", messages[-1]["content"], messages[0]["content"])


@trajdebug.step(kind="tool")
def meter_readings(meter_id: str, months: int) -> dict[str, Any]:
    hid = "H-" + meter_id.split("-")[2][:2]
    _, _, _, kwh, gas, _ = HOMES[hid]
    total = gas if meter_id.startswith("MTR-G") else kwh
    return {"meter_id": meter_id, "months": months, "readings": _monthly(total)[-months:]}


@trajdebug.step(kind="parse")
def summarize_usage(readings: dict[str, Any]) -> dict[str, Any]:
    return {"meter_id": readings["meter_id"], "annual_kwh": round(sum(readings["readings"]))}


@trajdebug.step(kind="llm")
def choose_track(messages: list[dict[str, str]]) -> dict[str, Any]:
    return complete("energy_track", messages[-1]["content"], messages[0]["content"])


@trajdebug.step(kind="tool")
def list_tariffs(track: str, region: str) -> dict[str, Any]:
    used = DEFAULT_REGION if active("energy.region") else region  # the region filter is not passed on
    return {"region": used, "track": track,
            "tariffs": [{"name": n, "eur_per_kwh": u, "standing_eur": s} for n, u, s in TARIFFS[(used, track)]]}


@trajdebug.step(kind="other")
def compare_tariffs(catalogue: dict[str, Any], usage: dict[str, Any]) -> dict[str, Any]:
    costs = [{"name": t["name"], "annual_eur": round(usage["annual_kwh"] * t["eur_per_kwh"] + t["standing_eur"], 2)}
             for t in catalogue["tariffs"]]
    return min(costs, key=lambda c: c["annual_eur"])


@trajdebug.step(kind="tool")
def request_switch(household_id: str, tariff: str, quoted_eur: float) -> dict[str, Any]:
    region, hp, _, kwh, _, answers = HOMES[household_id]
    hp = answers.get("heat_pump", hp)
    offered = {n: (track, u, s) for (r, track), rows in TARIFFS.items() if r == region for n, u, s in rows}
    if tariff not in offered:
        raise ValueError(f"{household_id}: tariff {tariff} is not offered in region {region}")
    track, unit, standing = offered[tariff]
    if track == "heat_pump" and not hp:
        raise ValueError(f"{household_id}: no registered heat pump; {tariff} is not available")
    if track == "standard" and kwh > STANDARD_CAP_KWH:
        raise ValueError(f"{household_id}: {kwh} kWh/year exceeds the {STANDARD_CAP_KWH} kWh fair-use cap of "
                         f"{tariff}")
    estimate = round(kwh * unit + standing, 2)
    if abs(quoted_eur - estimate) > 0.15 * estimate:
        raise ValueError(f"{household_id}: quoted {quoted_eur:.2f} EUR/year, the supplier estimates "
                         f"{estimate:.2f} EUR/year")
    return {"household": household_id, "tariff": tariff, "status": "switch requested"}


def record_energy(inp: dict[str, Any], path: Path) -> None:
    hid = inp["household_id"]
    try:
        with trajdebug.run("energy-switch-advisor", path=str(path), task=f"find a cheaper tariff for {hid}") as run:
            with trajdebug.step("receive_request", kind="input", input=inp) as s:
                s.output = {"household_id": hid, "answers": dict(HOMES[hid][5])}
            load_household(hid)
            update_household(dict(HOMES[hid][5]))
            rec = run.state["household"]
            plan = plan_lookup([{"role": "system", "content": "Choose the meter readings to fetch, as JSON "
                                 "{tool, args}."}, {"role": "user", "content": json.dumps(rec)}])
            args = json.loads(plan["content"])["args"]
            usage = summarize_usage(meter_readings(args["meter_id"], args["months"]))
            reply = choose_track([{"role": "system", "content": "Pick the tariff track: standard or heat_pump."},
                                  {"role": "user", "content": json.dumps({"household": rec, "usage": usage})}])
            with trajdebug.step("route_track", kind="condition", input=reply) as decision:
                track = json.loads(reply["content"])["track"]
                decision.output = track
            with trajdebug.branch(decision):
                catalogue = list_tariffs(track, rec["region"])
                best = compare_tariffs(catalogue, usage)
                request_switch(hid, best["name"], best["annual_eur"])
    except ValueError:
        pass


ENERGY_AGENT = Agent(
    name="energy-switch-advisor", route="sdk", domain="household energy", ext="jsonl",
    description="loads the household into run.state, merges survey answers, a model picks the meter to read, "
                "a model picks the tariff track, tariffs are listed and compared, and a switch is requested",
    ref_inputs=[{"household_id": h} for h in ("H-41", "H-42", "H-43", "H-44")],
    record=record_energy,
    cases=[
        Case("energy_storage_heaters_routed_hp", "energy-switch-advisor", {"household_id": "H-31"},
             "wrong_routing", "energy.route", "choose_track", "llm", '"track": "heat_pump"',
             "the track model routes a home with electric storage heaters to heat-pump tariffs"),
        Case("energy_survey_merge", "energy-switch-advisor", {"household_id": "H-32"}, "bad_state_write",
             "energy.state", "update_household", "state", '"heat_pump": false',
             "update_household merges the stored record over the new survey answer, so heat_pump stays false"),
        Case("energy_region_dropped", "energy-switch-advisor", {"household_id": "H-33"}, "tool_ignores_arg",
             "energy.region", "list_tariffs", "tool", '"region": "north"',
             "list_tariffs ignores its region argument and lists the default region's tariffs"),
        Case("energy_gas_meter_read", "energy-switch-advisor", {"household_id": "H-34"}, "wrong_tool_args",
             "energy.meter", "plan_lookup", "llm", "MTR-G-",
             "the planning model asks for the gas meter's readings instead of the electricity meter's"),
    ],
)

AGENTS = [INVOICE_AGENT, LINEUP_AGENT, ENERGY_AGENT]
