"""A street food market's pitch bookings (otlp route): OpenTelemetry spans with OpenInference attributes."""
import json

from openai import OpenAI

import kit
from common import brain_from, otlp, set_out, span_attrs

NAME, ROUTE, DOMAIN = "market-pitch-bookings", "otlp", "a street food market's pitch bookings"
SHAPE = "OpenInference spans: LLM application reader + parser, pitch map tool, per-trader hygiene tool, layout sub-agent (LLM + layout check), per-trader reservation tool, memory write, fee computation, invoicing tool, LLM notices + parser, validator tool"

PITCHES = [{"pitch": f"P{i}", "frontage_ft": ft, "power": pw} for i, (ft, pw) in enumerate(
    [(10, False), (12, False), (10, False), (16, False), (12, False), (20, False), (16, True), (20, True)], start=1)]
TRADERS = {"Bao Down": ("food", True, 14), "Crepe Expectations": ("food", False, 10), "Knit Wits": ("craft", False, 10),
           "Pho Real": ("food", True, 16), "Wrap Star": ("food", False, 12), "Candle Light": ("craft", False, 8),
           "Grill Seekers": ("food", False, 16), "Soap Opera": ("craft", False, 10), "Dumpling Darlings": ("food", True, 12),
           "Churro Club": ("food", False, 10)}
RATING = {"Bao Down": 5, "Crepe Expectations": 4, "Pho Real": 5, "Wrap Star": 3, "Grill Seekers": 4,
          "Dumpling Darlings": 5, "Churro Club": 4}
GBP_PER_METRE = 4.5
FT_TO_M = 0.3048


def _req(date, applied, traders):
    return {"market_date": date, "applied": applied, "traders": traders,
            "text": f"Applications for the {date} market (received {applied}): " + ", ".join(traders)}


INPUTS = {"a1": _req("2027-08-07", "2027-07-20", ["Crepe Expectations", "Knit Wits", "Bao Down", "Wrap Star"]),
          "a2": _req("2027-08-14", "2027-07-27", ["Pho Real", "Candle Light", "Grill Seekers"]),
          "a3": _req("2027-08-21", "2027-08-02", ["Churro Club", "Soap Opera", "Wrap Star", "Knit Wits"]),
          "a4": _req("2027-08-28", "2027-08-09", ["Crepe Expectations", "Grill Seekers", "Candle Light", "Churro Club"]),
          "a5": _req("2027-09-04", "2027-08-16", ["Wrap Star", "Soap Opera", "Crepe Expectations", "Dumpling Darlings"]),
          "r1": _req("2027-07-10", "2027-06-21", ["Bao Down", "Knit Wits", "Churro Club"]),
          "r2": _req("2027-07-17", "2027-06-28", ["Grill Seekers", "Soap Opera", "Pho Real", "Wrap Star"]),
          "r3": _req("2027-07-24", "2027-07-05", ["Candle Light", "Crepe Expectations"]),
          "r4": _req("2027-07-31", "2027-07-12", ["Dumpling Darlings", "Churro Club", "Knit Wits", "Wrap Star"])}
REFS = ["r1", "r2", "r3", "r4"]
CASES = [
    {"id": "zzs_market_frontage_units", "kind": "unit_error", "input": "a2", "root": ("compute_fees", 1),
     "failure": ("validate_bookings", 1),
     "description": "Fees are computed by dividing the frontage in feet by 0.3048 instead of multiplying, so each trader is charged about eleven times the rate."},
    {"id": "zzs_market_reservation_date", "kind": "wrong_tool_args", "input": "a4", "root": ("reserve_pitch", 4),
     "failure": ("validate_bookings", 1),
     "description": "Churro Club's pitch is reserved for the application date instead of the market date."},
    {"id": "zzs_market_memory_frontage", "kind": "bad_memory_write", "input": "a3", "root": ("remember_allocations", 1),
     "failure": ("validate_bookings", 1),
     "description": "The allocation memory records each trader's requested frontage instead of the allocated pitch's, and the fees are billed on it."},
    {"id": "zzs_market_invoice_timeout", "kind": "swallowed_error", "input": "a1", "root": ("issue_invoices", 1),
     "failure": ("validate_bookings", 1),
     "description": "The payments API times out on one invoice and the invoicing tool leaves that trader out without reporting it."},
    {"id": "zzs_market_pitch_page", "kind": "truncated_result", "input": "a5", "root": ("list_pitches", 1),
     "failure": ("validate_bookings", 1),
     "description": "The pitch map returns its first page of six pitches, so Dumpling Darlings, who need power, are laid out on an unpowered pitch."},
]


def brain():
    def read(p, _):
        return json.dumps([{"trader": t} for t in p["traders"]])

    def layout(p, _):
        free = list(p["pitches"])
        out = {}
        for a in sorted(p["applications"], key=lambda a: (not a["power"], -a["frontage_ft"])):
            fits = [x for x in free if x["frontage_ft"] >= a["frontage_ft"] and (x["power"] or not a["power"])]
            pick = fits[0] if fits else [x for x in free if x["frontage_ft"] >= a["frontage_ft"]][-1]
            free.remove(pick)
            out[a["trader"]] = pick["pitch"]
        return json.dumps(out)

    def notices(p, _):
        return json.dumps([{"trader": t, "pitch": v["pitch"], "fee_gbp": v["fee_gbp"]} for t, v in p["bookings"].items()])

    return brain_from({"read": read, "layout": layout, "notices": notices})


def record(server, inp, path):
    server.use(brain())
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    tr = otlp().tracer(NAME)

    def ask(task, payload):
        r = client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": f"#{task}"}, {"role": "user", "content": json.dumps(payload)}])
        return r.choices[0].message.content

    def span(name, kind, inp_):
        return tr.start_as_current_span(name, attributes=span_attrs(kind, inp_))

    memory = {}
    try:
        with tr.start_as_current_span(NAME, attributes=span_attrs("AGENT", {"request": inp["text"]})) as root:
            text = ask("read", {"traders": inp["traders"], "text": inp["text"]})
            with span("parse_applications", "CHAIN", {"text": text}) as s:
                apps = []
                for row in json.loads(text):
                    kind, power, ft = TRADERS[row["trader"]]
                    apps.append({"trader": row["trader"], "type": kind, "power": power, "frontage_ft": ft})
                set_out(s, apps)
            with span("list_pitches", "TOOL", {"market_date": inp["market_date"]}) as s:
                pitches = PITCHES[:6] if kit.on("zzs_market_pitch_page") else list(PITCHES)
                set_out(s, pitches)
            for a in apps:
                if a["type"] == "food":
                    with span("hygiene_rating", "TOOL", {"trader": a["trader"]}) as s:
                        set_out(s, {"trader": a["trader"], "rating": RATING[a["trader"]]})
            with tr.start_as_current_span("layout_agent", attributes=span_attrs("AGENT", {"applications": apps})) as lay:
                layout = json.loads(ask("layout", {"applications": apps, "pitches": pitches}))
                with span("check_layout", "CHAIN", {"layout": layout}) as s:
                    used = list(layout.values())
                    ok = len(used) == len(set(used))
                    set_out(s, {"distinct": ok, "pitches": len(used)})
                set_out(lay, layout)
            reserved = {}
            for a in apps:
                date = inp["market_date"]
                if kit.on("zzs_market_reservation_date") and a["trader"] == "Churro Club":
                    date = inp["applied"]
                args = {"pitch": layout[a["trader"]], "trader": a["trader"], "date": date}
                with span("reserve_pitch", "TOOL", args) as s:
                    res = {**args, "reservation": f"R-{args['pitch']}-{args['date'].replace('-', '')}"}
                    set_out(s, res)
                reserved[a["trader"]] = res
            by_id = {p["pitch"]: p for p in PITCHES}
            with span("remember_allocations", "CHAIN", {"reserved": reserved}) as s:
                for a in apps:
                    pitch = by_id[reserved[a["trader"]]["pitch"]]
                    ft = a["frontage_ft"] if kit.on("zzs_market_memory_frontage") else pitch["frontage_ft"]
                    memory[a["trader"]] = {"pitch": pitch["pitch"], "frontage_ft": ft}
                set_out(s, memory)
            with span("compute_fees", "CHAIN", {"allocations": memory, "gbp_per_metre": GBP_PER_METRE}) as s:
                fees = {}
                for t, m in memory.items():
                    metres = m["frontage_ft"] / FT_TO_M if kit.on("zzs_market_frontage_units") else m["frontage_ft"] * FT_TO_M
                    fees[t] = round(metres * GBP_PER_METRE, 2)
                set_out(s, fees)
            with span("issue_invoices", "TOOL", {"fees": fees, "market_date": inp["market_date"]}) as s:
                invoices = {}
                for i, (t, fee) in enumerate(fees.items()):
                    if kit.on("zzs_market_invoice_timeout") and i == 2:
                        try:
                            raise TimeoutError("payments API timed out")
                        except TimeoutError:
                            continue
                    invoices[t] = {"invoice": f"INV-{inp['market_date'][5:].replace('-', '')}-{i + 1}", "fee_gbp": fee}
                set_out(s, {"issued": invoices})
            bookings = {t: {"pitch": memory[t]["pitch"], "fee_gbp": v["fee_gbp"], "invoice": v["invoice"]}
                        for t, v in invoices.items()}
            text = ask("notices", {"market_date": inp["market_date"], "bookings": bookings})
            with span("parse_notices", "CHAIN", {"text": text}) as s:
                notices = json.loads(text)
                set_out(s, notices)
            with span("validate_bookings", "TOOL", {"reserved": reserved, "notices": notices}) as s:
                got = {n["trader"]: n for n in notices}
                for t in inp["traders"]:
                    kind, power, ft = TRADERS[t]
                    if t not in got:
                        raise ValueError(f"{t} has a pitch for {inp['market_date']} but no invoice or notice")
                    r = reserved[t]
                    if r["date"] != inp["market_date"]:
                        raise ValueError(f"{t}'s reservation {r['reservation']} is for {r['date']}, market is {inp['market_date']}")
                    pitch = by_id[got[t]["pitch"]]
                    if power and not pitch["power"]:
                        raise ValueError(f"{t} needs power, pitch {pitch['pitch']} has none")
                    fee = round(pitch["frontage_ft"] * FT_TO_M * GBP_PER_METRE, 2)
                    if abs(got[t]["fee_gbp"] - fee) > 0.01:
                        raise ValueError(f"{t} charged GBP {got[t]['fee_gbp']:.2f} for {pitch['pitch']}, the rate gives GBP {fee:.2f}")
                set_out(s, {"ok": True})
            set_out(root, {"bookings": len(notices)})
    finally:
        otlp().dump(path)
