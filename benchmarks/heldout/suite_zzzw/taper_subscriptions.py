"""Rushlight and taper maker's subscriptions: a monthly dispatch run traced with OpenTelemetry (OpenInference spans), exported as OTLP JSON."""
from __future__ import annotations

import calendar
import json
import re

from openai import OpenAI

import otel_common
from otel_common import span

NAME, ROUTE, EXT = "chandlery-subscriptions", "otlp", "json"
DOMAIN = "rushlight and taper maker's subscriptions"
SHAPE = "monthly batch: ledger, dispatch memory, model bundle, parse, week plan, then a loop over the weeks (tallow stock with a retried first read, dipping per line), pricing, a courier sub-agent (model + route tool + booking), model letter, invoice check (23-40 spans)"
SWITCH = None

LEDGER = {
    "S-104": {"name": "Martha Ibbotson", "parish": "Haworth", "plan": [{"item": "rushlight", "per_week": 12, "length_in": 9},
                                                                    {"item": "taper", "per_week": 4, "length_in": 12}]},
    "S-117": {"name": "Ezra Feather", "parish": "Oxenhope", "plan": [{"item": "rushlight", "per_week": 20, "length_in": 9}]},
    "S-121": {"name": "Lydia Heaton", "parish": "Stanbury", "plan": [{"item": "taper", "per_week": 6, "length_in": 10},
                                                                  {"item": "dip candle", "per_week": 3, "length_in": 8}]},
    "S-130": {"name": "Abel Sunderland", "parish": "Cullingworth", "plan": [{"item": "rushlight", "per_week": 8, "length_in": 9},
                                                                         {"item": "taper", "per_week": 2, "length_in": 12},
                                                                         {"item": "dip candle", "per_week": 2, "length_in": 8}]},
    "S-142": {"name": "Hannah Shackleton", "parish": "Haworth", "plan": [{"item": "taper", "per_week": 10, "length_in": 12}]},
}
MEMORY = {"S-104": "last month: dispatched on the 2nd by packhorse", "S-117": "last month: left at the Fleece inn",
          "S-121": "last month: paid in coin", "S-130": "last month: asked for stouter rushes",
          "S-142": "last month: two tapers broke on the road"}
PRICE = {"rushlight": 0.02, "taper": 0.15, "dip candle": 0.09, "beeswax taper": 0.6}
GRAMS = {"rushlight": 6, "taper": 40, "dip candle": 55, "beeswax taper": 45}

INPUTS = [
    {"key": "s104", "account": "S-104", "month": "2026-01"},
    {"key": "s117", "account": "S-117", "month": "2026-02"},
    {"key": "s121", "account": "S-121", "month": "2026-03"},
    {"key": "s130", "account": "S-130", "month": "2026-01"},
    {"key": "s142", "account": "S-142", "month": "2026-04"},
]

CASES = [
    {"id": "zzzw_taper_01", "input": 2, "switch": "memory_mixed", "fault_kind": "context_pollution",
     "root": {"name": "dispatch_memory", "occurrence": 1}, "failure": {"name": "invoice_check", "occurrence": 1},
     "description": "The dispatch memory hands back another subscriber's note asking for beeswax tapers along with Lydia Heaton's own, and the model adds them to her bundle."},
    {"id": "zzzw_taper_02", "input": 0, "switch": "weeks_short", "fault_kind": "off_by_one",
     "root": {"name": "week_plan", "occurrence": 1}, "failure": {"name": "invoice_check", "occurrence": 1},
     "description": "The week plan counts the dispatch weeks with an exclusive end, one week short of January's four dispatch Mondays."},
    {"id": "zzzw_taper_03", "input": 3, "switch": "courier_count", "fault_kind": "wrong_tool_args",
     "root": {"name": "ChatCompletion", "occurrence": 2}, "failure": {"name": "courier_booking", "occurrence": 1},
     "description": "The courier's model passes the number of lights as the parcel weight in kilograms to the route lookup."},
    {"id": "zzzw_taper_04", "input": 1, "switch": "quantity_key", "fault_kind": "format_drift",
     "root": {"name": "ChatCompletion", "occurrence": 1}, "failure": {"name": "invoice_check", "occurrence": 1},
     "description": "The bundle model answers each line's count under \"quantity\" instead of \"qty\", and the parse counts nothing."},
    {"id": "zzzw_taper_05", "input": 4, "switch": "dip_length", "fault_kind": "tool_ignores_argument",
     "root": {"name": "dipping_vat", "occurrence": 3}, "failure": {"name": "invoice_check", "occurrence": 1},
     "description": "The dipping vat ignores the asked length in the third week and dips 10-inch tapers for a 12-inch plan."},
]


def policy(request):
    msgs = request.body["messages"]
    prompt = msgs[-1]["content"]
    if prompt.startswith("Make this month's bundle"):
        d = json.loads(prompt.split("\n", 1)[1])
        key = "quantity" if SWITCH == "quantity_key" else "qty"
        lines = [{"item": p["item"], key: p["per_week"], "length_in": p["length_in"]} for p in d["plan"]]
        if "beeswax" in d["notes"]:
            lines.append({"item": "beeswax taper", key: 4, "length_in": 12})
        return json.dumps({"weekly": lines})
    if prompt.startswith("Book the carrier"):
        d = json.loads(prompt.split("\n", 1)[1])
        w = d["count"] if SWITCH == "courier_count" else d["kg"]
        return json.dumps({"route_lookup": {"parish": d["parish"], "weight_kg": w}})
    if prompt.startswith("Write the month's letter"):
        d = json.loads(prompt.split("\n", 1)[1])
        return f"Dear {d['name']}, your lights for {d['month']} ({d['total']:.2f} shillings) go by {d['carrier']}."
    return "?"


def record(server, inp, path):
    server.use(policy)
    provider = otel_common.setup()
    tracer = provider.get_tracer("chandlery")
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    chat = lambda text: client.chat.completions.create(model=server.model, messages=[{"role": "user", "content": text}]).choices[0].message.content  # noqa: E731
    try:
        with span(tracer, NAME, "AGENT", json.dumps(inp), **{"agent.name": NAME}) as top:
            with span(tracer, "subscription_request", "CHAIN", {"account": inp["account"], "month": inp["month"]}) as s:
                s["out"] = {"account": inp["account"], "month": inp["month"]}
            with span(tracer, "subscriber_ledger", "TOOL", {"account": inp["account"]}, **{"tool.name": "subscriber_ledger"}) as s:
                acct = LEDGER[inp["account"]]
                s["out"] = acct
            with span(tracer, "dispatch_memory", "TOOL", {"account": inp["account"]}, **{"tool.name": "dispatch_memory"}) as s:
                notes = MEMORY[inp["account"]]
                if SWITCH == "memory_mixed":
                    notes += "; S-117 note: add 4 beeswax tapers each week"
                s["out"] = notes
            raw = chat("Make this month's bundle as JSON.\n" + json.dumps({"plan": acct["plan"], "notes": notes}))
            with span(tracer, "parse_bundle", "CHAIN", raw) as s:
                weekly = [{"item": x["item"], "qty": x.get("qty", 0), "length_in": x["length_in"]} for x in json.loads(raw)["weekly"]]
                s["out"] = weekly
            with span(tracer, "week_plan", "CHAIN", {"month": inp["month"]}) as s:
                y, m = map(int, inp["month"].split("-"))
                days = calendar.monthrange(y, m)[1]
                mondays = [d for d in range(1, days + 1) if calendar.weekday(y, m, d) == 0]
                end = len(mondays) if SWITCH == "weeks_short" else len(mondays) + 1
                weeks = [f"{inp['month']}-{mondays[i - 1]:02d}" for i in range(1, end)]
                s["out"] = weeks
            made = []
            for wi, week in enumerate(weeks):
                with span(tracer, "dispatch_week", "CHAIN", {"week": week}) as wk:
                    for attempt in (1, 2):
                        try:
                            with span(tracer, "tallow_stock", "TOOL", {"week": week}, **{"tool.name": "tallow_stock"}) as s:
                                if wi == 1 and attempt == 1:
                                    raise ConnectionError("tallow store did not answer")
                                s["out"] = {"week": week, "tallow_kg": 30, "beeswax_kg": 4}
                            break
                        except ConnectionError:
                            continue
                    batch = []
                    for line in weekly:
                        if line["qty"] == 0:
                            continue
                        with span(tracer, "dipping_vat", "TOOL", {"item": line["item"], "count": line["qty"], "length_in": line["length_in"]},
                                  **{"tool.name": "dipping_vat"}) as s:
                            length = line["length_in"]
                            if SWITCH == "dip_length" and wi == 2 and line["item"] == "taper":
                                length = 10
                            out = {"item": line["item"], "count": line["qty"], "length_in": length, "week": week}
                            s["out"] = out
                            batch.append(out)
                    wk["out"] = batch
                    made.extend(batch)
            with span(tracer, "pricing", "CHAIN", made) as s:
                total = round(sum(PRICE[b["item"]] * b["count"] for b in made), 2)
                kg = round(sum(GRAMS[b["item"]] * b["count"] for b in made) / 1000, 2)
                s["out"] = {"total": total, "kg": kg, "count": sum(b["count"] for b in made)}
            with span(tracer, "courier", "AGENT", {"parish": acct["parish"]}, **{"agent.name": "courier"}) as c:
                ask = chat("Book the carrier.\n" + json.dumps({"parish": acct["parish"], "kg": kg, "count": s["out"]["count"]}))
                args = json.loads(ask)["route_lookup"]
                with span(tracer, "route_lookup", "TOOL", args, **{"tool.name": "route_lookup"}) as r:
                    r["out"] = {"parish": args["parish"], "carrier": "packhorse" if args["weight_kg"] <= 20 else "carrier's cart",
                                "weight_kg": args["weight_kg"]}
                with span(tracer, "courier_booking", "TOOL", r["out"], **{"tool.name": "courier_booking"}) as b:
                    if r["out"]["carrier"] == "carrier's cart" and acct["parish"] in ("Haworth", "Stanbury", "Cullingworth"):
                        raise RuntimeError(f"no cart runs to {acct['parish']}: the {args['weight_kg']} kg parcel needs a cart")
                    b["out"] = {"booked": r["out"]["carrier"], "parish": acct["parish"]}
                c["out"] = b["out"]
            letter = chat("Write the month's letter.\n" + json.dumps({"name": acct["name"], "month": inp["month"], "total": total,
                                                                        "carrier": b["out"]["booked"]}))
            with span(tracer, "invoice_check", "CHAIN", {"letter": letter, "made": made}) as s:
                for p in acct["plan"]:
                    got = [b for b in made if b["item"] == p["item"]]
                    want = p["per_week"] * len(mondays)
                    n = sum(b["count"] for b in got)
                    assert n == want, f"{acct['name']}: {n} {p['item']}s dispatched in {inp['month']}, the plan is {want}"
                    lengths = sorted({b["length_in"] for b in got})
                    assert lengths == [p["length_in"]], f"{p['item']}s dipped at {lengths} in, the plan is {p['length_in']} in"
                extra = sorted({b["item"] for b in made} - {p["item"] for p in acct["plan"]})
                assert not extra, f"{acct['name']} is billed for {extra}, not on the subscription"
                s["out"] = "ok"
            with span(tracer, "send_parcel", "TOOL", {"letter": letter}, **{"tool.name": "send_parcel"}) as s:
                s["out"] = {"sent": True}
            top["out"] = letter
    except Exception:
        pass
    finally:
        client.close()
    otel_common.dump(path)
