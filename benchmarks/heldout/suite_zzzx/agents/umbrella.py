"""Umbrella repairer's counter (otlp route): a short ticket pipeline as OpenInference spans exported to OTLP JSON:
contact redaction, counter history recall, a triage model that calls the parts bin in parallel, a frame specialist
sub-agent with its own model call, a ticket memory write, pricing, and a customer note from the model."""
from __future__ import annotations

import json
import re

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

NAME = "umbrella-counter"
ROUTE = "otlp"
DOMAIN = "an umbrella repairer's counter"
SHAPE = "OTLP spans: ticket, contact redaction, history recall, triage model with parallel parts-bin tool calls, frame specialist sub-agent, ticket memory write, pricing tool, customer-note model call"
SWITCH = None

INPUTS = [
    {"ticket": "U-801", "customer": "Ines Marr", "phone": "+44 7700 900141", "model": "Fox Whangee 16", "ribs": 16, "damage": ["rib", "runner"]},
    {"ticket": "U-802", "customer": "Tom Abara", "phone": "+44 7700 900388", "model": "Brigg Hickory 8", "ribs": 8, "damage": ["canopy panel"]},
    {"ticket": "U-803", "customer": "Sofie Kahl", "phone": "+44 7700 900512", "model": "Pasotti Duck 8", "ribs": 8, "damage": ["rib", "tip cup", "spring"]},
    {"ticket": "U-804", "customer": "Raj Oduya", "phone": "+44 7700 900733", "model": "Fox Whangee 16", "ribs": 16, "damage": ["stretcher", "top notch"]},
    {"ticket": "U-805", "customer": "Lena Voss", "phone": "+44 7700 900964", "model": "Swaine Chestnut 10", "ribs": 10, "damage": ["handle", "rib"]},
]
BIN = {"rib": 6.5, "runner": 9.0, "canopy panel": 14.0, "tip cup": 1.2, "spring": 2.5, "stretcher": 5.0, "top notch": 7.5, "handle": 38.0}
LABOUR = {"Fox Whangee 16": 1.5, "Brigg Hickory 8": 0.75, "Pasotti Duck 8": 1.0, "Swaine Chestnut 10": 1.25}
HISTORY: list = []
MEMORY: dict = {}
PHONE = re.compile(r"\+44 \d{4} \d{6}")


def brain(request):
    from trajdebug.testing import Reply, tool_call
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    if any(PHONE.search(m.get("content") or "") for m in msgs):
        return Reply(status=400, error="request refused: the message holds an unmasked personal phone number")
    if system.startswith("Triage the ticket"):
        t = json.loads(msgs[-1]["content"])
        parts = list(t["damage"])
        for h in t.get("history", []):
            if h.get("open"):
                parts += [p for p in h["damage"] if p not in parts]
        calls = []
        for p in parts:
            size = t["ribs"]
            if SWITCH == "rib-size" and t["ticket"] == "U-804" and p == "stretcher":
                size = 8
            calls.append(tool_call("parts_bin", {"part": p, "ribs": size}))
        return Reply(tool_calls=tuple(calls))
    if system.startswith("You are the frame specialist"):
        t = json.loads(msgs[-1]["content"])
        model = t["model"]
        others = [h for h in HISTORY if h["ticket"] != t["ticket"]]
        if SWITCH == "frame-model" and t["ticket"] == "U-805" and others:
            model = others[-1]["model"]
        return json.dumps({"model": model, "hours": LABOUR[model]})
    if system.startswith("Write the customer note"):
        t = json.loads(msgs[-1]["content"])
        return f"Your umbrella ({t['model']}) will be ready for collection; total {t['total']:.2f} GBP."
    return "?"


def _mask(note: str) -> str:
    if SWITCH == "mask-service":
        raise ConnectionError("masking service did not answer")
    return PHONE.sub(lambda m: m.group(0)[:4] + " **** " + m.group(0)[-3:], note)


def record(inp, path, server):
    MEMORY.clear()  # the bench's ticket file holds the day's open tickets only
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "umbrella-counter"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer("umbrella-counter")
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)

    def span(name, kind, inp_value, **kw):
        return tracer.start_as_current_span(name, attributes={"openinference.span.kind": kind, "input.value": json.dumps(inp_value)}, **kw)

    try:
        with tracer.start_as_current_span(NAME, attributes={"openinference.span.kind": "AGENT", "input.value": json.dumps(inp),
                                                            "metadata": json.dumps({"task": f"repair ticket {inp['ticket']}"})}):
            with span("take_ticket", "CHAIN", inp) as s:
                note = f"{inp['customer']} ({inp['phone']}) brought a {inp['model']}: {', '.join(inp['damage'])}."
                s.set_attribute("output.value", note)
            with span("mask_contact", "CHAIN", note) as s:
                try:
                    masked = _mask(note)
                except ConnectionError:
                    masked = note
                s.set_attribute("output.value", masked)
            with span("counter_history", "RETRIEVER", {"customer": inp["customer"]}) as s:
                past = [h for h in HISTORY if h["customer"] == inp["customer"]]
                others = [h for h in HISTORY if h["ticket"] != inp["ticket"]]
                if SWITCH == "last-ticket" and others:
                    past = [others[-1]]
                for i, h in enumerate(past):
                    s.set_attribute(f"retrieval.documents.{i}.document.id", h["ticket"])
                    s.set_attribute(f"retrieval.documents.{i}.document.content", json.dumps(h))
            ticket = {"ticket": inp["ticket"], "model": inp["model"], "ribs": inp["ribs"], "damage": inp["damage"],
                      "note": masked, "history": past}
            triage = client.chat.completions.create(model=server.model, messages=[
                {"role": "system", "content": "Triage the ticket: call the parts bin for every part the repair needs."},
                {"role": "user", "content": json.dumps(ticket)}],
                tools=[{"type": "function", "function": {"name": "parts_bin", "parameters": {"type": "object", "properties": {
                    "part": {"type": "string"}, "ribs": {"type": "integer"}}}}}]).choices[0].message
            parts = []
            for call in triage.tool_calls or []:
                args = json.loads(call.function.arguments)
                with tracer.start_as_current_span("parts_bin", attributes={"openinference.span.kind": "TOOL", "tool.name": "parts_bin",
                                                                           "input.value": call.function.arguments}) as s:
                    found = {"part": args["part"], "ribs": args["ribs"], "price": BIN[args["part"]], "bin": f"B-{args['ribs']}-{len(args['part'])}"}
                    s.set_attribute("output.value", json.dumps(found))
                parts.append(found)
            with span("frame_specialist", "AGENT", {"ticket": inp["ticket"], "model": inp["model"]}) as fs:
                est = json.loads(client.chat.completions.create(model=server.model, messages=[
                    {"role": "system", "content": "You are the frame specialist: estimate bench hours for the frame."},
                    {"role": "user", "content": json.dumps({"ticket": inp["ticket"], "model": inp["model"], "damage": inp["damage"]})}]).choices[0].message.content)
                fs.set_attribute("output.value", json.dumps(est))
            with span("file_ticket", "CHAIN", {"ticket": inp["ticket"], "parts": parts, "labour": est}) as s:
                key = inp["ticket"]
                if SWITCH == "ticket-key":
                    key = f"U-{int(inp['ticket'][2:]) - 1}"
                MEMORY[key] = {"model": inp["model"], "parts": parts, "labour": est}
                s.set_attribute("output.value", json.dumps({"filed_as": key}))
            with span("price_ticket", "TOOL", {"ticket": inp["ticket"], "model": inp["model"], "ribs": inp["ribs"]}) as s:
                rec = MEMORY[inp["ticket"]]
                if rec["model"] != inp["model"]:
                    raise ValueError(f"ticket {inp['ticket']} filed for a {rec['model']}, the umbrella is a {inp['model']}")
                for p in rec["parts"]:
                    if p["part"] not in inp["damage"]:
                        raise ValueError(f"ticket {inp['ticket']}: {p['part']} drawn from the bin, not on the customer's ticket")
                    if p["part"] in ("rib", "stretcher") and p["ribs"] != inp["ribs"]:
                        raise ValueError(f"ticket {inp['ticket']}: {p['ribs']}-rib {p['part']} for a {inp['ribs']}-rib frame")
                if rec["labour"]["model"] != inp["model"]:
                    raise ValueError(f"ticket {inp['ticket']}: bench hours quoted for a {rec['labour']['model']}")
                total = round(sum(p["price"] for p in rec["parts"]) + rec["labour"]["hours"] * 28, 2)
                s.set_attribute("output.value", json.dumps({"total": total}))
            client.chat.completions.create(model=server.model, messages=[
                {"role": "system", "content": "Write the customer note for the collection slip."},
                {"role": "user", "content": json.dumps({"note": masked, "model": inp["model"], "total": total})}])
            HISTORY.append({"ticket": inp["ticket"], "customer": inp["customer"], "model": inp["model"], "damage": inp["damage"], "open": True})
    except Exception:
        pass
    finally:
        OpenAIInstrumentor().uninstrument()
    with open(path, "w") as f:
        json.dump(MessageToDict(encode_spans(exporter.get_finished_spans())), f)


CASES = [
    {"id": "umbrella-unmasked-phone", "input": 0, "switch": "mask-service", "kind": "swallowed_error",
     "root": ("mask_contact", 1), "failure": ("ChatCompletion", 1),
     "description": "The contact masking step hides that the masking service did not answer and passes the note on with the customer's phone number in full."},
    {"id": "umbrella-other-customer", "input": 2, "switch": "last-ticket", "kind": "context_pollution",
     "root": ("counter_history", 1), "failure": ("price_ticket", 1),
     "description": "The counter history recall hands the triage model another customer's open ticket, and it draws that ticket's parts from the bin too."},
    {"id": "umbrella-stretcher-size", "input": 3, "switch": "rib-size", "kind": "wrong_tool_args",
     "root": ("ChatCompletion", 1), "failure": ("price_ticket", 1),
     "description": "The triage model asks the parts bin for an 8-rib stretcher for a 16-rib Fox Whangee."},
    {"id": "umbrella-frame-model", "input": 4, "switch": "frame-model", "kind": "subagent_wrong_entity",
     "root": ("frame_specialist", 1), "failure": ("price_ticket", 1),
     "description": "The frame specialist estimates bench hours for the previous ticket's Fox Whangee 16 instead of this Swaine Chestnut 10."},
    {"id": "umbrella-ticket-key", "input": 1, "switch": "ticket-key", "kind": "bad_memory_write",
     "root": ("file_ticket", 1), "failure": ("price_ticket", 1),
     "description": "Filing ticket U-802 writes its record under U-801, so pricing finds no filed record for U-802."},
]
