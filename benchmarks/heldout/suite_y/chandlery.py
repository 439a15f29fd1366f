"""Agent 8 (otlp route): ship chandlery provisioning for a vessel's port call, OpenInference spans.

Shape: AGENT span over intake -> vessel profile -> model plans the provisioning -> per category: supplier
quote, quote parse, order-line memory write -> own voyage check -> port notices -> model plans the delivery
(a tool call) -> delivery slot booking -> order lines read back -> supplier purchase order.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Iterator

from . import kit
from .common import Fault

AGENT = "chandlery_provisioning"
ROUTE = "otlp"
EXT = "json"
RUN_NAME = "chandlery-provisioning"
DOMAIN = "Ship chandlery provisioning"
SHAPE = "AGENT span; 2 instrumented model calls (one a tool call), 5-category quote/parse/memory loop, own check, port booking, PO"

CATEGORIES = [("dry stores", 1.1, "kg"), ("fresh produce", 0.9, "kg"), ("dairy", 0.5, "l"),
              ("meat and fish", 0.45, "kg"), ("bottled water", 3.0, "l")]
EURO_SUPPLIERS = {"dairy"}
RESERVE_DAYS = 3

_state: dict = {}


class PortRefused(RuntimeError):
    pass


PortRefused.__module__ = "portcall.api"


def _policy(request):
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    system = msgs[0]["content"]
    ask = json.loads(msgs[-1]["content"])
    if system.startswith("Plan the provisioning"):
        days = ask["voyage_days"] + RESERVE_DAYS
        basis = f"voyage + {RESERVE_DAYS} reserve"
        if kit.active("ch_plan_error"):
            days, basis = ask["voyage_days"], "voyage only"
        return json.dumps({"days": days, "basis": basis, "categories": [c for c, _, _ in CATEGORIES]})
    if system.startswith("Plan the delivery"):
        berth = ask["berth"]
        for note in ask["notices"]:
            if "moved to berth" in note:
                berth = note.split("moved to berth ")[1].split()[0].rstrip(".")
        date = ask["eta"]
        if kit.active("ch_wrong_tool_args"):
            date = f"{date[:8]}{int(date[8:]) - 1:02d}"
        return Reply(tool_calls=(tool_call("book_delivery_slot", {"berth": berth, "date": date, "pallets": ask["pallets"]}),))
    return "{}"


@contextmanager
def session() -> Iterator[None]:
    from openai import OpenAI
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from trajdebug.testing import FakeModelServer

    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": RUN_NAME}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    try:
        with FakeModelServer(_policy, model="gpt-4o-mini") as server:
            _state.update(spans=spans, tracer=provider.get_tracer(RUN_NAME), model=server.model,
                          client=OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0))
            yield
    finally:
        OpenAIInstrumentor().uninstrument()
        _state.clear()


class _Out:
    def __init__(self, span):
        self.span = span

    def out(self, value):
        self.span.set_attribute("output.value", json.dumps(value))
        self.span.set_attribute("output.mime_type", "application/json")
        return value


@contextmanager
def span(name: str, kind: str, inp) -> Iterator[_Out]:
    attrs = {"openinference.span.kind": kind, "input.value": json.dumps(inp), "input.mime_type": "application/json"}
    with _state["tracer"].start_as_current_span(name, attributes=attrs) as s:
        yield _Out(s)


def _chat(system: str, payload: dict):
    return _state["client"].chat.completions.create(
        model=_state["model"], temperature=0,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}],
    ).choices[0].message


def price_for(category: str, qty: float) -> float:
    return round(qty * (2.15 + kit.seed(category) % 300 / 100), 2)


def _fmt(amount: float, euro: bool) -> str:
    text = f"{amount:,.2f}"
    return text.replace(",", "X").replace(".", ",").replace("X", ".") if euro else text


def run_once(inp: dict, path: str) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    _state["spans"].clear()
    try:
        _agent(inp)
    except (PortRefused, ValueError):
        pass
    with open(path, "w", encoding="utf-8") as f:
        json.dump(MessageToDict(encode_spans(_state["spans"].get_finished_spans())), f)


def _agent(inp: dict) -> None:
    memory: dict[str, dict] = {}
    with span(RUN_NAME, "AGENT", inp) as root:
        with span("intake", "CHAIN", inp) as s:
            call = s.out({"vessel": inp["vessel"], "port": inp["port"], "eta": inp["eta"], "voyage_days": inp["days"]})
        with span("fetch_vessel_profile", "TOOL", {"vessel": call["vessel"]}) as s:
            prof = s.out({"vessel": call["vessel"], "crew": inp["crew"], "berth": inp["berth"], "flag": "MT"})
        plan = json.loads(_chat("Plan the provisioning days and categories as JSON.",
                                {"voyage_days": call["voyage_days"], "crew": prof["crew"]}).content)
        for cat, per_day, unit in CATEGORIES:
            qty = round(prof["crew"] * plan["days"] * per_day, 1)
            euro = cat in EURO_SUPPLIERS
            with span("query_supplier_stock", "TOOL", {"category": cat, "qty": qty, "unit": unit}) as s:
                quote = s.out({"supplier": "Iberia Marine" if euro else "Harbour Provisions",
                               "text": f"{cat};{qty};{unit};{_fmt(price_for(cat, qty), euro)}",
                               "quote": f"Q-{kit.seed(cat, qty) % 9000 + 1000}"})
            with span("parse_quote", "CHAIN", quote) as s:
                c, q, u, price = quote["text"].split(";")
                if kit.active("ch_lossy_parsing"):
                    total = float(price.replace(",", ""))
                elif euro:
                    total = float(price.replace(".", "").replace(",", "."))
                else:
                    total = float(price.replace(",", ""))
                line = s.out({"category": c, "qty": float(q), "unit": u, "total": total, "quote": quote["quote"]})
            with span("remember_order_line", "CHAIN", line) as s:
                entry = {**line, "deliver_to": f"berth {prof['berth']}"}
                if cat == "dairy" and kit.active("ch_bad_memory_write"):
                    entry["deliver_to"] = "anchorage"
                memory[cat] = entry
                s.out({"key": f"order:{cat}", "value": entry})
        with span("verify_against_voyage", "CHAIN", {"plan_days": plan["days"], "voyage_days": call["voyage_days"]}) as s:
            need = call["voyage_days"] + RESERVE_DAYS
            for cat, per_day, _ in CATEGORIES:
                if memory[cat]["qty"] < round(prof["crew"] * need * per_day, 1):
                    raise ValueError(f"master's check: {cat} covers {memory[cat]['qty'] / prof['crew'] / per_day:.0f} days, "
                                     f"the passage needs {need}")
            s.out({"ok": True, "days_covered": need})
        with span("fetch_port_notices", "TOOL", {"port": call["port"], "date": call["eta"]}) as s:
            notes = [f"{call['port']}: pilot boarding 2 nm off the breakwater", "Bunker barge on 2 h notice"]
            if kit.active("ch_context_pollution"):
                notes.append("MV Kestrel Bay moved to berth 9.")
            s.out({"notices": notes})
        msg = _chat("Plan the delivery to the vessel and book the slot with the tool.",
                    {"berth": prof["berth"], "eta": call["eta"], "notices": notes, "pallets": 6})
        args = json.loads(msg.tool_calls[0].function.arguments)
        with span("book_delivery_slot", "TOOL", args) as s:
            if args["berth"] != prof["berth"]:
                raise PortRefused(f"port call API 409: {call['vessel']} is not allocated berth {args['berth']}")
            if args["date"] < call["eta"]:
                raise PortRefused(f"port call API 422: delivery on {args['date']} is before the vessel's arrival")
            slot = s.out({"slot": f"{args['date']}T07:00", "berth": args["berth"]})
        with span("recall_order_lines", "CHAIN", {"keys": [f"order:{c}" for c, _, _ in CATEGORIES]}) as s:
            lines = s.out([memory[c] for c, _, _ in CATEGORIES])
        with span("submit_purchase_order", "TOOL", {"vessel": call["vessel"], "slot": slot, "lines": lines}) as s:
            for ln in lines:
                quoted = price_for(ln["category"], ln["qty"])
                if abs(ln["total"] - quoted) > 0.01:
                    raise PortRefused(f"supplier API 422: line {ln['category']} total {ln['total']} does not match quote {ln['quote']}")
                if not ln["deliver_to"].startswith("berth"):
                    raise PortRefused(f"supplier API 422: no launch booked for delivery of {ln['category']} to {ln['deliver_to']}")
            po = s.out({"po": f"PO-{kit.seed(call['vessel'], call['eta']) % 90000 + 10000}", "status": "accepted"})
        root.out(po)


def _req(vessel: str, port: str, eta: str, days: int, crew: int, berth: str) -> dict:
    return {"vessel": vessel, "port": port, "eta": eta, "days": days, "crew": crew, "berth": berth}


_IN = {
    "lossy": _req("MV Saltash Trader", "Valletta", "2027-08-04", 12, 18, "4"),
    "memory": _req("MV Torridge", "Piraeus", "2027-08-09", 9, 22, "2"),
    "args": _req("MT Ouse Venture", "Marsaxlokk", "2027-08-12", 14, 16, "7"),
    "plan": _req("MV Wensum", "Valletta", "2027-08-17", 10, 20, "3"),
    "pollution": _req("MV Ribble Star", "Piraeus", "2027-08-21", 8, 14, "5"),
}

def _lossy_total(inp: dict) -> float:
    qty = round(inp["crew"] * (inp["days"] + RESERVE_DAYS) * 0.5, 1)
    return float(_fmt(price_for("dairy", qty), True).replace(",", ""))


FAULTS = [
    Fault("chandlery_1", "ch_lossy_parsing", "lossy_parsing", "parse_quote", f'"total": {_lossy_total(_IN["lossy"])}', _IN["lossy"]),
    Fault("chandlery_2", "ch_bad_memory_write", "bad_memory_write", "remember_order_line", "anchorage", _IN["memory"]),
    Fault("chandlery_3", "ch_wrong_tool_args", "wrong_tool_args", "ChatCompletion", "2027-08-11", _IN["args"]),
    Fault("chandlery_4", "ch_plan_error", "plan_error", "ChatCompletion", "voyage only", _IN["plan"]),
    Fault("chandlery_5", "ch_context_pollution", "context_pollution", "fetch_port_notices", "Kestrel", _IN["pollution"]),
]

REFS = [_req("MV Yare", "Valletta", "2027-08-02", 11, 17, "6"), _req("MV Nene Pride", "Piraeus", "2027-08-06", 7, 12, "1"),
        _req("MT Medway Spirit", "Marsaxlokk", "2027-08-14", 15, 24, "8"), _req("MV Parrett", "Valletta", "2027-08-25", 6, 10, "2")]
