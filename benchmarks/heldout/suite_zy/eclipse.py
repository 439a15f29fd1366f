"""Solar eclipse viewing tours (OTLP, OpenInference spans): sites on the path of totality, cloud forecasts per site
with parsing, site choice model, contact times, transport sub-agent, quote, deposit, itinerary and tickets."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .common import Case, OtlpTrace, last_user
from .kit import active

AGENT, ROUTE, DOMAIN = "totality-tours", "otlp", "solar eclipse viewing tours"
SHAPE = "site retrieval -> per-site forecast tool + forecast parse -> site choice LLM -> contact times -> transport sub-agent (LLM + coach tool) -> quote -> deposit -> charge -> itinerary -> issue tickets"

SITES = {
    "2027-08-02": [
        {"site": "ES-BUR", "name": "Burgos ridge", "forecast": "cloud 30-35%", "c2": "08:47:12", "c3": "08:48:58"},
        {"site": "ES-SOR", "name": "Soria plateau", "forecast": "cloud 10-55%", "c2": "08:48:40", "c3": "08:50:21"},
        {"site": "ES-TER", "name": "Teruel hills", "forecast": "cloud 20-25%", "c2": "08:49:55", "c3": "08:51:30"},
    ],
    "2027-08-02b": [
        {"site": "MA-TAN", "name": "Tangier coast", "forecast": "cloud 15-20%", "c2": "08:41:03", "c3": "08:46:40"},
        {"site": "MA-CHE", "name": "Chefchaouen", "forecast": "cloud 5-60%", "c2": "08:42:11", "c3": "08:47:30"},
        {"site": "MA-FES", "name": "Fes outskirts", "forecast": "cloud 25-30%", "c2": "08:43:20", "c3": "08:48:02"},
    ],
    "2026-08-12": [
        {"site": "IS-REY", "name": "Reykjanes", "forecast": "cloud 35-40%", "c2": "17:46:02", "c3": "17:47:01"},
        {"site": "IS-SNA", "name": "Snaefellsnes", "forecast": "cloud 30-40%", "c2": "17:45:30", "c3": "17:47:40"},
    ],
    "2026-08-12b": [
        {"site": "ES-LEO", "name": "Leon", "forecast": "cloud 20-30%", "c2": "18:28:10", "c3": "18:29:50"},
        {"site": "ES-PAL", "name": "Palencia", "forecast": "cloud 15-25%", "c2": "18:28:44", "c3": "18:30:30"},
    ],
}
PRICE = {"2027-08-02": 640.0, "2027-08-02b": 720.0, "2026-08-12": 890.0, "2026-08-12b": 560.0}
DEPOSIT_RATE = 0.2
GUARANTEE = 40

INPUTS = {
    "spain6": {"booking": "TT-7701", "eclipse": "2027-08-02", "party": 6, "card": "tok_visa_7701"},
    "morocco4": {"booking": "TT-7716", "eclipse": "2027-08-02b", "party": 4, "card": "tok_mc_7716"},
    "r1": {"booking": "TT-7720", "eclipse": "2026-08-12", "party": 2, "card": "tok_visa_7720"},
    "r2": {"booking": "TT-7723", "eclipse": "2026-08-12b", "party": 5, "card": "tok_amex_7723"},
    "r3": {"booking": "TT-7730", "eclipse": "2027-08-02", "party": 3, "card": "tok_visa_7730"},
    "r4": {"booking": "TT-7734", "eclipse": "2027-08-02b", "party": 8, "card": "tok_mc_7734"},
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = [
    Case("eclipse-1", "unit_error", "compute_deposit", 1, "charge_deposit", 1, "spain6",
         "The deposit step sends the deposit in pounds to a payment API that takes minor units."),
    Case("eclipse-2", "off_by_one", "compute_deposit", 1, "charge_deposit", 1, "morocco4",
         "The deposit counts one traveller fewer than the party."),
    Case("eclipse-3", "format_drift", "format_itinerary", 1, "issue_tickets", 1, "spain6",
         "The itinerary formatter writes contact times as local clock text instead of the UTC ISO times the ticketing API takes."),
    Case("eclipse-4", "lossy_parsing", "parse_cloud_forecast", 2, "issue_tickets", 1, "spain6",
         "The forecast parser keeps the low end of a cloud range, so a site with up to 55% cloud looks clear."),
    Case("eclipse-5", "subagent_wrong_entity", "plan_coach", 1, "issue_tickets", 1, "morocco4",
         "The transport sub-agent's model books the coach to the last site in its candidate list rather than the chosen site."),
]


def policy(request):
    p = last_user(request)
    d = json.loads(p.split("\n", 1)[1])
    if p.startswith("CHOOSE"):
        best = min(d["sites"], key=lambda s: (s["cloud_pct"], s["site"]))
        return json.dumps({"site": best["site"], "why": f"lowest forecast cloud {best['cloud_pct']}%"})
    if p.startswith("COACH"):
        dest = d["candidates"][-1] if active("eclipse-5") else d["site"]
        return json.dumps({"destination": dest, "seats": d["party"] + 1, "depart": "05:30"})
    return "{}"


class TourAPIError(Exception):
    pass


def record(inp: dict, path: Path, base_url: str) -> None:
    ecl, party = inp["eclipse"], inp["party"]
    t = OtlpTrace(AGENT)
    try:
        with t.span(AGENT, "AGENT", inp, **{"agent.name": AGENT}) as root:
            with t.span("search_viewing_sites", "RETRIEVER", {"eclipse": ecl, "path": "totality"}) as sp:
                sites = [{"site": s["site"], "name": s["name"]} for s in SITES[ecl]]
                t.output(sp, sites)
            scored = []
            for s in sites:
                with t.span("cloud_forecast", "TOOL", {"site": s["site"], "date": ecl[:10]}, **{"tool.name": "cloud_forecast"}) as sp:
                    text = next(x["forecast"] for x in SITES[ecl] if x["site"] == s["site"])
                    t.output(sp, f"{s['site']} {ecl[:10]} 09:00Z {text}")
                with t.span("parse_cloud_forecast", "CHAIN", text) as sp:
                    lo, hi = map(int, re.findall(r"\d+", text))
                    cloud = lo if active("eclipse-4") else hi
                    t.output(sp, {"site": s["site"], "cloud_pct": cloud})
                scored.append({"site": s["site"], "cloud_pct": cloud})
            choice = json.loads(t.llm("choose_site", base_url, "You choose the viewing site with the best sky.", "CHOOSE\n" + json.dumps({"sites": scored})))
            with t.span("contact_times", "TOOL", {"site": choice["site"], "eclipse": ecl}, **{"tool.name": "contact_times"}) as sp:
                rec = next(x for x in SITES[ecl] if x["site"] == choice["site"])
                times = {"c2_utc": f"{ecl[:10]}T{rec['c2']}Z", "c3_utc": f"{ecl[:10]}T{rec['c3']}Z"}
                t.output(sp, times)
            with t.span("transport_agent", "AGENT", {"site": choice["site"], "party": party}, **{"agent.name": "transport_agent"}) as ta:
                plan = json.loads(t.llm("plan_coach", base_url, "You arrange coaches for eclipse tours.",
                                        "COACH\n" + json.dumps({"site": choice["site"], "party": party, "candidates": [s["site"] for s in sites]}),
                                        agent="transport_agent"))
                with t.span("book_coach", "TOOL", plan, **{"tool.name": "book_coach", "agent.name": "transport_agent"}) as sp:
                    coach = {"coach_ref": f"CO-{plan['destination']}-{plan['seats']}", **plan}
                    t.output(sp, coach)
                t.output(ta, coach)
            with t.span("compute_quote", "CHAIN", {"party": party, "price": PRICE[ecl]}) as sp:
                quote = {"total_gbp": round(party * PRICE[ecl], 2), "party": party}
                t.output(sp, quote)
            with t.span("compute_deposit", "CHAIN", quote) as sp:
                heads = quote["party"] - 1 if active("eclipse-2") else quote["party"]
                pounds = round(heads * PRICE[ecl] * DEPOSIT_RATE, 2)
                deposit = {"amount": pounds if active("eclipse-1") else int(round(pounds * 100)), "currency": "GBP"}
                t.output(sp, deposit)
            with t.span("charge_deposit", "TOOL", {**deposit, "card": inp["card"], "booking": inp["booking"]}, **{"tool.name": "charge_deposit"}) as sp:
                expected = int(round(quote["total_gbp"] * DEPOSIT_RATE * 100))
                if deposit["amount"] != expected:
                    raise TourAPIError(f"payments API 400: amount {deposit['amount']} (minor units, GBP) for {inp['booking']} "
                                       f"does not equal the 20% deposit {expected} on total {quote['total_gbp']:.2f}")
                t.output(sp, {"charge": "ch_" + inp["booking"], "status": "succeeded", "amount": deposit["amount"]})
            with t.span("format_itinerary", "CHAIN", {"site": choice["site"], "times": times, "coach": coach}) as sp:
                if active("eclipse-3"):
                    c2 = times["c2_utc"][11:19] + " local"
                    c3 = times["c3_utc"][11:19] + " local"
                else:
                    c2, c3 = times["c2_utc"], times["c3_utc"]
                itinerary = {"site": choice["site"], "coach": coach["coach_ref"], "coach_site": coach["destination"],
                             "totality_start": c2, "totality_end": c3, "travellers": party}
                t.output(sp, itinerary)
            with t.span("issue_tickets", "TOOL", {"booking": inp["booking"], "itinerary": itinerary}, **{"tool.name": "issue_tickets"}) as sp:
                for key in ("totality_start", "totality_end"):
                    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", itinerary[key]):
                        raise TourAPIError(f"ticketing API 422: {key} '{itinerary[key]}' is not an ISO 8601 UTC time")
                if itinerary["coach_site"] != itinerary["site"]:
                    raise TourAPIError(f"ticketing API 409: coach {itinerary['coach']} goes to {itinerary['coach_site']}, tickets are for {itinerary['site']}")
                rec = next(x for x in SITES[ecl] if x["site"] == itinerary["site"])
                worst = max(map(int, re.findall(r"\d+", rec["forecast"])))
                if worst > GUARANTEE:
                    raise TourAPIError(f"ticketing API 412: site {itinerary['site']} forecast up to {worst}% cloud, clear-sky guarantee is {GUARANTEE}%")
                t.output(sp, {"tickets": [f"{inp['booking']}-{i + 1}" for i in range(party)]})
            t.output(root, {"booking": inp["booking"], "site": choice["site"]})
    except TourAPIError:
        pass
    t.write(path)
