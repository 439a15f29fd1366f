"""Bootmaker's repair bench (otlp route): an assessor sub-agent (photos + model), a model-written repair plan, a loop over operations with parts, stock and a supplier API retried on a dropped connection, picking, deposit API, workshop ticket assertion."""
import json

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

NAME = "boot-repair-bench"
ROUTE = "otlp"
DOMAIN = "bootmaker's repairs"
SHAPE = "ticket -> assessor sub-agent (photos, model) -> model plan -> parse -> per operation: parts, stock, supplier (retried), price -> pick -> deposit API -> workshop assertion"
SWITCH = set()

JOBS = {
    "R-2291": {"boot": "Chelsea boot", "construction": "goodyear welt", "size_uk": 9, "damage": ["sole worn through", "welt split at toe"]},
    "R-2219": {"boot": "brogue", "construction": "blake stitched", "size_uk": 8, "damage": ["sole worn through"]},
    "R-2304": {"boot": "engineer boot", "construction": "goodyear welt", "size_uk": 10, "damage": ["heel worn", "toe scuffed"]},
    "R-2310": {"boot": "jodhpur boot", "construction": "cemented", "size_uk": 7, "damage": ["heel worn", "elastic slack"]},
    "R-2317": {"boot": "derby boot", "construction": "goodyear welt", "size_uk": 11, "damage": ["sole worn through", "heel worn"]},
    "R-2322": {"boot": "work boot", "construction": "goodyear welt", "size_uk": 9, "damage": ["heel worn", "welt split at toe", "sole worn through"]},
}
OPS = {
    "sole worn through": {"op": "full resole", "parts": ["leather sole"], "labour": 45.0},
    "welt split at toe": {"op": "rewelt toe", "parts": ["welt strip"], "labour": 30.0},
    "heel worn": {"op": "new heel block", "parts": ["heel block", "top piece"], "labour": 20.0},
    "toe scuffed": {"op": "toe restoration", "parts": ["cream"], "labour": 12.0},
    "elastic slack": {"op": "replace gussets", "parts": ["elastic gusset"], "labour": 25.0},
}
PART_PRICE = {"leather sole": 18.0, "welt strip": 6.0, "heel block": 7.5, "top piece": 3.0, "cream": 2.0, "elastic gusset": 9.0}
BINS_NOW = {"leather sole": 3, "welt strip": 10, "heel block": 0, "top piece": 8, "cream": 5, "elastic gusset": 1}
BINS_MORNING = {"leather sole": 5, "welt strip": 10, "heel block": 4, "top piece": 10, "cream": 5, "elastic gusset": 2}
LABOUR = {"full resole": 45.0, "rewelt toe": 30.0, "new heel block": 20.0, "toe restoration": 12.0, "replace gussets": 25.0}

INPUTS = [
    {"ticket": "R-2291", "customer": "Mr Fairbairn", "quoted": 123.0},
    {"ticket": "R-2304", "customer": "Ms Kowalczyk", "quoted": 57.0},
    {"ticket": "R-2310", "customer": "Mr Adeyemi", "quoted": 84.0},
    {"ticket": "R-2317", "customer": "Mrs Tremayne", "quoted": 122.0},
    {"ticket": "R-2322", "customer": "Mr Lund", "quoted": 164.0},
]
CASES = [
    {"id": "zzzu_bootmaker_photos", "input": 0, "switch": "photos_neighbour", "kind": "subagent_wrong_entity",
     "root": ("fetch_job_photos", 1), "failure": "take_deposit",
     "desc": "Inside the assessor sub-agent the photo fetch brought back ticket R-2219's Blake-stitched brogues, so the plan and price were for the other pair."},
    {"id": "zzzu_bootmaker_rewelt", "input": 4, "switch": "plan_drops", "kind": "plan_error",
     "root": ("ChatCompletion", 2), "failure": "take_deposit",
     "desc": "The repair plan the model wrote left out the toe rewelt that the assessment called for, so the deposit no longer matched the counter quote."},
    {"id": "zzzu_bootmaker_labour", "input": 2, "switch": "labour_missing", "kind": "swallowed_error",
     "root": ("price_operation", 2), "failure": "take_deposit",
     "desc": "Pricing the gusset replacement hit a missing labour-rate entry, caught it and priced the labour at nothing, and the payment service refused the deposit."},
    {"id": "zzzu_bootmaker_bins", "input": 1, "switch": "bins_morning", "kind": "stale_data",
     "root": ("stock_level", 1), "failure": "pick_parts",
     "desc": "The stock count for heel blocks was this morning's four, not the empty bin now, so no heel blocks were ordered and picking failed."},
    {"id": "zzzu_bootmaker_size", "input": 3, "switch": "size_arg", "kind": "wrong_tool_args",
     "root": ("ChatCompletion", 2), "failure": "workshop_ticket",
     "desc": "The model's plan asked the parts lookup for UK 10 soles for a UK 11 derby boot."},
]


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    body = json.loads(msgs[-1]["content"].split("\n", 1)[1])
    if system.startswith("You assess"):
        job = JOBS[body["photos_of"]]
        return json.dumps({"ticket": body["photos_of"], "boot": job["boot"], "construction": job["construction"],
                           "size_uk": job["size_uk"], "damage": job["damage"]})
    a = body["assessment"]
    ops = [{"op": OPS[d]["op"], "parts": OPS[d]["parts"], "size_uk": a["size_uk"]} for d in a["damage"]]
    if "plan_drops" in SWITCH:
        ops = [o for o in ops if o["op"] != "rewelt toe"]
    if "size_arg" in SWITCH:
        for o in ops:
            if o["op"] == "full resole":
                o["size_uk"] = a["size_uk"] - 1
    return "Plan:\n" + json.dumps({"operations": ops})


def _span(tracer, name, kind, inp, fn):
    with tracer.start_as_current_span(name, attributes={"openinference.span.kind": kind,
                                                        "input.value": json.dumps(inp), "input.mime_type": "application/json"}) as sp:
        out = fn()
        sp.set_attribute("output.value", json.dumps(out))
        sp.set_attribute("output.mime_type", "application/json")
        return out


def run_one(server, inp, path):
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer(NAME)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    bins = dict(BINS_NOW)
    supplier = {"calls": 0}
    try:
        with tracer.start_as_current_span(NAME, attributes={"openinference.span.kind": "AGENT", "agent.name": NAME,
                                                            "input.value": json.dumps(inp)}):
            ticket = _span(tracer, "receive_ticket", "TOOL", {"ticket": inp["ticket"]},
                           lambda: {"ticket": inp["ticket"], "customer": inp["customer"], **JOBS[inp["ticket"]]})
            with tracer.start_as_current_span("sole_assessor", attributes={
                    "openinference.span.kind": "AGENT", "agent.name": "sole_assessor", "input.value": inp["ticket"]}) as sub:
                def photos():
                    shown = inp["ticket"]
                    if "photos_neighbour" in SWITCH:
                        shown = "R-2219"
                    return {"photos_of": shown, "files": [f"{shown}-left.jpg", f"{shown}-right.jpg", f"{shown}-soles.jpg"]}
                pics = _span(tracer, "fetch_job_photos", "TOOL", {"ticket": inp["ticket"]}, photos)
                r = client.chat.completions.create(model=server.model, messages=[
                    {"role": "system", "content": "You assess boots for repair from their photos."},
                    {"role": "user", "content": "Photos:\n" + json.dumps(pics)}])
                assessment = json.loads(r.choices[0].message.content)
                sub.set_attribute("output.value", json.dumps(assessment))
            r = client.chat.completions.create(model=server.model, messages=[
                {"role": "system", "content": "Plan the bench operations for a repair."},
                {"role": "user", "content": "Job:\n" + json.dumps({"ticket": inp["ticket"], "assessment": assessment})}])
            plan = _span(tracer, "read_plan", "CHAIN", {"text": r.choices[0].message.content},
                         lambda: json.loads(r.choices[0].message.content.split("\n", 1)[1])["operations"])
            priced, picks = [], []
            for op in plan:
                parts = _span(tracer, "parts_for", "TOOL", {"op": op["op"], "size_uk": op["size_uk"]},
                              lambda: [{"part": p, "size_uk": op["size_uk"], "qty": 2} for p in op["parts"]])
                for part in parts:
                    def count(part=part):
                        have = BINS_MORNING[part["part"]] if "bins_morning" in SWITCH else bins[part["part"]]
                        return {"part": part["part"], "on_hand": have}
                    level = _span(tracer, "stock_level", "TOOL", {"part": part["part"]}, count)
                    if level["on_hand"] < part["qty"]:
                        for attempt in (1, 2):
                            def order(part=part, attempt=attempt):
                                supplier["calls"] += 1
                                if attempt == 1 and supplier["calls"] == 1:
                                    raise ConnectionError("supplier API closed the connection")
                                bins[part["part"]] += part["qty"]
                                return {"part": part["part"], "ordered": part["qty"], "arrives": "next day"}
                            try:
                                _span(tracer, "supplier_order", "TOOL", {"part": part["part"], "qty": part["qty"]}, order)
                                break
                            except ConnectionError:
                                continue
                    picks.append(part)

                def price(op=op, parts=parts):
                    rates = dict(LABOUR)
                    if "labour_missing" in SWITCH:
                        rates.pop("replace gussets")
                    try:
                        labour = rates[op["op"]]
                    except KeyError:
                        labour = 0.0
                    return {"op": op["op"], "labour": labour,
                            "parts": sum(PART_PRICE[p["part"]] * p["qty"] for p in parts)}
                priced.append(_span(tracer, "price_operation", "CHAIN", {"op": op["op"]}, price))

            def pick():
                for p in picks:
                    if bins[p["part"]] < p["qty"]:
                        raise RuntimeError(f"bin for {p['part']} holds {bins[p['part']]}; job needs {p['qty']}")
                    bins[p["part"]] -= p["qty"]
                return {"picked": [p["part"] for p in picks]}
            _span(tracer, "pick_parts", "TOOL", {"ticket": inp["ticket"]}, pick)
            total = round(sum(p["labour"] + p["parts"] for p in priced), 2)

            def deposit():
                if abs(total - inp["quoted"]) > 0.01:
                    raise PermissionError(f"payment service refused: deposit on {total:.2f} does not match the {inp['quoted']:.2f} quoted at the counter")
                return {"deposit": round(total / 2, 2), "card": "accepted"}
            _span(tracer, "take_deposit", "TOOL", {"customer": inp["customer"], "amount": round(total / 2, 2)}, deposit)

            def workshop():
                assert assessment["construction"] == ticket["construction"], (
                    f"{ticket['ticket']} is {ticket['construction']}; the bench plan is for {assessment['construction']}")
                for op, p in zip(plan, priced):
                    assert op["size_uk"] == ticket["size_uk"], f"{op['op']} cut for UK {op['size_uk']}; the boots are UK {ticket['size_uk']}"
                return {"ticket": ticket["ticket"], "operations": [p["op"] for p in priced], "total": total}
            _span(tracer, "workshop_ticket", "EVALUATOR", {"ticket": inp["ticket"]}, workshop)
    except Exception:
        pass
    finally:
        OpenAIInstrumentor().uninstrument()
    with open(path, "w") as f:
        json.dump(MessageToDict(encode_spans(spans.get_finished_spans())), f)
