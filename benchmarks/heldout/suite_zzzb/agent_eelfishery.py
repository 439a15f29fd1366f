"""Eel fishery: a landing's catch sales (recording route: OpenInference + the OpenTelemetry SDK,
exported as OTLP JSON).

Shape: a loop over the landing's crates, each one weighed, its context built from the day's
landing notes, classified by the model (an instrumented OpenAI call), the answer parsed and
written to the catch ledger; then the ledger is tallied into lots by stage, and for each lot
the buyers are searched (a retriever span), the sale routed (restocking, auction or contract),
priced and invoiced; the day's close reconciles the invoices with the landing declaration.
"""
from __future__ import annotations

import json
from contextlib import contextmanager

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

RUN_NAME = "eel-catch-sales"
ROUTE = "otlp"
DOMAIN = "an eel fishery's catch sales"
SHAPE = "loop over crates (weigh tool -> context chain -> model classify -> parse -> ledger write) -> tally -> per lot (retriever -> router -> price tool -> invoice tool) -> reconciling close; 26-51 spans"

SWITCH = None


def _crates(rows):
    return [{"crate": f"K{i + 1}", "kg": kg, "sample_cm": cm, "look": look} for i, (kg, cm, look) in enumerate(rows)]


INPUTS = [
    {"boat": "ZK-17 Aalscholver", "date": "2026-09-14", "water": "IJsselmeer", "crates": _crates([
        (22.4, [40, 42, 41], "yellow belly"), (18.9, [37, 39, 38], "yellow belly"), (25.1, [66, 70, 68], "silver belly, large eyes"),
        (20.3, [43, 45, 44], "yellow belly"), (19.8, [70, 72, 71], "silver belly, large eyes"), (16.0, [35, 37, 36], "yellow belly")])},
    {"boat": "UK-3 Grietje", "date": "2026-04-02", "water": "Afsluitdijk sluice", "crates": _crates([
        (4.2, [7, 8, 7.5], "transparent"), (3.9, [8, 8, 8], "transparent"), (21.0, [39, 41, 40], "yellow belly"),
        (17.5, [36, 38, 37], "yellow belly"), (3.1, [7, 7, 7], "transparent")])},
    {"boat": "WR-60 Noorderlicht", "date": "2026-10-03", "water": "Markermeer", "crates": _crates([
        (24.0, [67, 69, 68], "silver belly, large eyes"), (21.7, [42, 40, 41], "yellow belly"), (19.2, [38, 40, 39], "yellow belly"),
        (23.3, [71, 73, 72], "silver belly, large eyes"), (18.4, [36, 36, 36], "yellow belly"), (22.6, [65, 67, 66], "silver belly, large eyes"),
        (20.9, [44, 42, 43], "yellow belly"), (22.6, [40, 38, 39], "yellow belly")])},
    {"boat": "ST-24 Zeehond", "date": "2026-08-21", "water": "Waddenzee", "crates": _crates([
        (19.5, [38, 40, 39], "yellow belly"), (20.8, [41, 39, 40], "yellow belly"), (24.4, [69, 67, 68], "silver belly, large eyes"),
        (17.2, [37, 35, 36], "yellow belly")])},
    {"boat": "EB-9 Marijke", "date": "2026-09-28", "water": "Ketelmeer", "crates": _crates([
        (21.1, [40, 41, 42], "yellow belly"), (23.8, [68, 70, 69], "silver belly, large eyes"), (18.3, [37, 38, 39], "yellow belly"),
        (22.0, [72, 70, 71], "silver belly, large eyes"), (19.9, [39, 41, 40], "yellow belly"), (20.5, [66, 64, 65], "silver belly, large eyes"),
        (17.7, [35, 37, 36], "yellow belly")])},
]

CASES = [
    {"id": "zzzb_eel_01", "input": 0, "switch": "buyers_ranked_by_price", "kind": "wrong_retrieval",
     "root": ("buyer_search", 2), "failure": ("issue_invoice", 2),
     "description": "The buyer search for the silver eel lot ranked the Hong Kong importer first, and invoicing a sale of European eel outside the EU was refused."},
    {"id": "zzzb_eel_02", "input": 2, "switch": "tally_from_second_crate", "kind": "off_by_one",
     "root": ("tally_catch", 1), "failure": ("close_day", 1),
     "description": "The tally started at the second ledger entry and left crate K1 (24.0 kg) out of the lots, so the day's invoices fell short of the landing declaration."},
    {"id": "zzzb_eel_03", "input": 0, "switch": "ledger_stage_carried", "kind": "bad_memory_write",
     "root": ("ledger_write", 4), "failure": ("issue_invoice", 2),
     "description": "The ledger entry for crate K4 carried the stage of K3 (silver) instead of its own (yellow), so a 44 cm crate went into the smokehouse contract lot and the invoice was refused."},
    {"id": "zzzb_eel_04", "input": 3, "switch": "notes_all_boats", "kind": "context_pollution",
     "root": ("crate_context", 2), "failure": ("issue_invoice", 1),
     "description": "The context for crate K2 held the landing notes of every boat, including another boat's transparent glass eels, so the model called K2 glass eel and the restocking programme's invoice was refused for 40 cm eels."},
    {"id": "zzzb_eel_05", "input": 1, "switch": "route_by_price", "kind": "wrong_routing",
     "root": ("route_sale", 1), "failure": ("issue_invoice", 1),
     "description": "The sale router sent the glass eel lot to the Urk auction for its price, and the invoice was refused because glass eel may only go to the restocking programme."},
]

NOTES = [
    {"boat": "UK-3 Grietje", "note": "sluice catch: transparent glass eels, 7-8 cm"},
    {"boat": "ZK-17 Aalscholver", "note": "fyke nets north of Lemmer"},
    {"boat": "WR-60 Noorderlicht", "note": "silver run started in the night"},
    {"boat": "ST-24 Zeehond", "note": "long lines, mixed sizes"},
    {"boat": "EB-9 Marijke", "note": "fyke nets, clear water"},
]
BUYERS = [
    {"id": "B-RST", "name": "Stichting Glasaal Restocking", "channel": "restocking", "stage": "glass", "region": "NL", "eur_kg": 310.0},
    {"id": "B-URK", "name": "Visafslag Urk", "channel": "auction", "stage": "any", "region": "NL", "eur_kg": 14.5},
    {"id": "B-SMK", "name": "Rookhuis Volendam", "channel": "contract", "stage": "silver", "region": "NL", "eur_kg": 21.0},
    {"id": "B-HKG", "name": "Kowloon Live Seafood", "channel": "contract", "stage": "silver", "region": "HK", "eur_kg": 39.0},
]
PRICES = {"glass": 300.0, "yellow": 14.5, "silver": 21.0}


def _j(value):
    return json.dumps(value, sort_keys=True)


class _Quay:
    def __init__(self):
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": "eel-quay"}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("eel-quay")

    @contextmanager
    def span(self, name, kind, inp=None):
        attrs = {"openinference.span.kind": kind}
        if inp is not None:
            attrs.update({"input.value": _j(inp), "input.mime_type": "application/json"})
        with self.tracer.start_as_current_span(name, attributes=attrs) as sp:
            yield sp

    @staticmethod
    def out(sp, value):
        sp.set_attribute("output.value", _j(value))
        sp.set_attribute("output.mime_type", "application/json")
        return value


def policy(request):
    messages = request.body["messages"]
    ask = json.loads(messages[-1]["content"])
    mean = round(sum(ask["crate"]["sample_cm"]) / len(ask["crate"]["sample_cm"]), 1)
    context = " ".join(ask["notes"]) + " " + ask["crate"]["look"]
    if "transparent" in context:
        stage = "glass"
    elif "silver" in ask["crate"]["look"]:
        stage = "silver"
    else:
        stage = "yellow"
    return f"Stage: {stage}\nMean length: {mean} cm\nCrate: {ask['crate']['crate']}"


def record(inp, path, server):
    q = _Quay()
    OpenAIInstrumentor().instrument(tracer_provider=q.provider)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    ledger = {}
    try:
        with q.span(RUN_NAME, "AGENT", {"boat": inp["boat"], "date": inp["date"], "crates": len(inp["crates"])}) as top:
            tickets = {}
            last_stage = None
            for crate in inp["crates"]:
                with q.span("weigh_crate", "TOOL", {"crate": crate["crate"]}) as sp:
                    tickets[crate["crate"]] = q.out(sp, {"crate": crate["crate"], "kg": crate["kg"], "ticket": f"{inp['date']}-{crate['crate']}"})
                with q.span("crate_context", "CHAIN", {"boat": inp["boat"], "crate": crate["crate"]}) as sp:
                    notes = [n["note"] for n in NOTES if n["boat"] == inp["boat"]]
                    if SWITCH == "notes_all_boats" and crate["crate"] == "K2":
                        notes = [n["note"] for n in NOTES]
                    ctx = q.out(sp, {"notes": notes, "crate": {k: crate[k] for k in ("crate", "sample_cm", "look")}})
                reply = client.chat.completions.create(model=server.model, messages=[
                    {"role": "system", "content": "Classify the eel crate's life stage (glass, yellow, silver) and its mean length."},
                    {"role": "user", "content": _j(ctx)}])
                text = reply.choices[0].message.content
                with q.span("parse_stage", "CHAIN", {"text": text}) as sp:
                    fields = dict(line.split(": ", 1) for line in text.splitlines())
                    parsed = q.out(sp, {"crate": fields["Crate"], "stage": fields["Stage"],
                                        "mean_cm": float(fields["Mean length"].split()[0])})
                with q.span("ledger_write", "TOOL", {"entry": parsed, "kg": crate["kg"]}) as sp:
                    stage = parsed["stage"]
                    if SWITCH == "ledger_stage_carried" and parsed["crate"] == "K4":
                        stage = last_stage
                    ledger[parsed["crate"]] = {"stage": stage, "kg": crate["kg"], "mean_cm": parsed["mean_cm"]}
                    last_stage = stage
                    q.out(sp, {"crate": parsed["crate"], "written": ledger[parsed["crate"]]})
            with q.span("tally_catch", "CHAIN", {"ledger": ledger}) as sp:
                keys = list(ledger)
                start = 1 if SWITCH == "tally_from_second_crate" else 0
                lots = {}
                for key in keys[start:]:
                    e = ledger[key]
                    lot = lots.setdefault(e["stage"], {"stage": e["stage"], "crates": [], "kg": 0.0, "min_cm": 999.0})
                    lot["crates"].append(key)
                    lot["kg"] = round(lot["kg"] + e["kg"], 1)
                    lot["min_cm"] = min(lot["min_cm"], e["mean_cm"])
                ordered = [lots[s] for s in ("glass", "yellow", "silver") if s in lots]
                q.out(sp, {"lots": ordered})
            invoiced = 0.0
            for lot in ordered:
                with q.span("buyer_search", "RETRIEVER", {"stage": lot["stage"], "water": inp["water"]}) as sp:
                    found = [b for b in BUYERS if b["stage"] in (lot["stage"], "any")]
                    if SWITCH == "buyers_ranked_by_price":
                        found.sort(key=lambda b: -b["eur_kg"])
                    else:
                        found.sort(key=lambda b: (b["region"] != "NL", -b["eur_kg"]))
                    for i, b in enumerate(found):
                        sp.set_attribute(f"retrieval.documents.{i}.document.id", b["id"])
                        sp.set_attribute(f"retrieval.documents.{i}.document.content", _j(b))
                    q.out(sp, {"buyers": found})
                with q.span("route_sale", "CHAIN", {"stage": lot["stage"], "kg": lot["kg"], "buyers": [b["id"] for b in found]}) as sp:
                    channel = {"glass": "restocking", "yellow": "auction", "silver": "contract"}[lot["stage"]]
                    if SWITCH == "route_by_price" and lot["stage"] == "glass":
                        channel = "auction"
                    buyer = next(b for b in found if b["channel"] == channel)
                    q.out(sp, {"channel": channel, "buyer": buyer["id"]})
                with q.span("price_quote", "TOOL", {"buyer": buyer["id"], "stage": lot["stage"], "kg": lot["kg"]}) as sp:
                    price = q.out(sp, {"eur_kg": buyer["eur_kg"] if buyer["channel"] != "auction" else PRICES[lot["stage"]],
                                       "eur": round(lot["kg"] * (buyer["eur_kg"] if buyer["channel"] != "auction" else PRICES[lot["stage"]]), 2)})
                with q.span("issue_invoice", "TOOL", {"buyer": buyer, "lot": lot, "price": price}) as sp:
                    if buyer["region"] not in ("NL", "BE", "DE", "DK"):
                        raise ValueError(f"invoice refused: European eel may not be sold outside the EU ({buyer['name']}, {buyer['region']})")
                    if lot["stage"] == "glass" and buyer["channel"] != "restocking":
                        raise ValueError(f"invoice refused: glass eel may only go to the restocking programme, not {buyer['name']}")
                    if buyer["channel"] == "restocking" and lot["min_cm"] > 12:
                        raise ValueError(f"invoice refused: the restocking programme takes glass eel under 12 cm, lot has {lot['min_cm']} cm")
                    if buyer["channel"] == "contract" and lot["min_cm"] < 60:
                        raise ValueError(f"invoice refused: {buyer['name']} contract takes silver eel of 60 cm and up, lot has {lot['min_cm']} cm")
                    invoiced = round(invoiced + lot["kg"], 1)
                    q.out(sp, {"invoice": f"INV-{inp['date']}-{lot['stage']}", "kg": lot["kg"], "eur": price["eur"]})
            with q.span("close_day", "CHAIN", {"boat": inp["boat"], "invoiced_kg": invoiced}) as sp:
                declared = round(sum(c["kg"] for c in inp["crates"]), 1)
                if len(ledger) != len(inp["crates"]):
                    raise ValueError(f"close refused: ledger holds {len(ledger)} crates, the landing declares {len(inp['crates'])}")
                if abs(invoiced - declared) > 0.05:
                    raise ValueError(f"close refused: invoiced {invoiced} kg, the landing declares {declared} kg")
                q.out(sp, {"closed": True, "kg": declared})
            top.set_attribute("output.value", f"{inp['boat']} {inp['date']}: {invoiced} kg invoiced")
    except ValueError:
        pass
    finally:
        OpenAIInstrumentor().uninstrument()
    doc = MessageToDict(encode_spans(q.exporter.get_finished_spans()))
    path.write_text(json.dumps(doc))
