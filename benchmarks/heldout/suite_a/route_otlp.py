"""Route 3: hand-written tool loops on the ``openai`` client, instrumented with
``openinference-instrumentation-openai``, plus the agent's own OpenTelemetry spans (OpenInference span
kinds AGENT, CHAIN, TOOL, RETRIEVER); spans go to an in-memory exporter and are written as OTLP/JSON.

Three agents:

* ``table_booker`` - restaurant reservations from a web form, with a guest conversation history.
* ``returns_desk`` - retail returns and refunds, with a warehouse sub-agent.
* ``bill_pay``     - a personal-finance assistant that plans the month's bill and card payments.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fakellm import (
    FakeModelServer,
    Reply,
    call_args,
    called,
    find,
    last_result,
    system_text,
    text_of,
    user_text,
)
from google.protobuf.json_format import MessageToDict
from harness import AgentSpec, Case
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
from openinference.semconv.trace import SpanAttributes as SA
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator


FAULTS: set[str] = set()
MODEL = "gpt-4o-mini"


class SeededIds(IdGenerator):
    """Trace and span ids from a seeded generator, so a case's files are reproducible."""

    def __init__(self) -> None:
        self.rng = random.Random(0)

    def reseed(self, key: str) -> None:
        self.rng = random.Random(f"otlp/{key}")

    def generate_span_id(self) -> int:
        return self.rng.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self.rng.getrandbits(128) or 1


class Telemetry:
    """One tracer provider for the process (the instrumentor patches the openai client once)."""

    _inst: Telemetry | None = None

    def __init__(self) -> None:
        self.ids = SeededIds()
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(
            id_generator=self.ids,
            resource=Resource.create({"service.name": "suite-a-agents", "deployment.environment": "bench"}),
        )
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        OpenAIInstrumentor().instrument(tracer_provider=self.provider)
        self.tracer = self.provider.get_tracer("suite_a.agents", "1.0")

    @classmethod
    def get(cls) -> Telemetry:
        if cls._inst is None:
            cls._inst = Telemetry()
        return cls._inst

    def record(self, key: str, out: Path, fn: Callable[[], Any]) -> Any:
        self.exporter.clear()
        self.ids.reseed(key)
        try:
            return fn()
        finally:
            self.provider.force_flush()
            spans = self.exporter.get_finished_spans()
            out.write_text(json.dumps(MessageToDict(encode_spans(spans)), indent=1), encoding="utf-8")
            self.exporter.clear()


def _set_faults(fault: str | None) -> None:
    FAULTS.clear()
    if fault:
        FAULTS.add(fault)


def _j(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


@contextmanager
def span(name: str, kind: Kind, inp: Any = None, **attrs: Any) -> Iterator[Any]:
    tracer = Telemetry.get().tracer
    a: dict[str, Any] = {SA.OPENINFERENCE_SPAN_KIND: kind.value}
    if inp is not None:
        a[SA.INPUT_VALUE] = _j(inp)
        a[SA.INPUT_MIME_TYPE] = "application/json" if not isinstance(inp, str) else "text/plain"
    a.update({k.replace("__", "."): v for k, v in attrs.items()})
    with tracer.start_as_current_span(name, attributes=a) as sp:
        yield sp


def set_output(sp: Any, value: Any) -> None:
    sp.set_attribute(SA.OUTPUT_VALUE, _j(value))
    sp.set_attribute(SA.OUTPUT_MIME_TYPE, "text/plain" if isinstance(value, str) else "application/json")


def tool_schema(
    name: str, desc: str, props: dict[str, str], required: list[str] | None = None
) -> dict[str, Any]:
    types = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "list": "array"}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": desc,
            "parameters": {
                "type": "object",
                "properties": {
                    k: ({"type": "array", "items": {"type": "string"}} if t == "list" else {"type": types[t]})
                    for k, t in props.items()
                },
                "required": required if required is not None else list(props),
            },
        },
    }


def tool_loop(
    client: OpenAI,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    impl: dict[str, Callable[..., Any]],
    max_turns: int = 8,
) -> str:
    """The agent's loop: call the model, run the tools it asks for (each in a TOOL span), repeat."""
    for _ in range(max_turns):
        resp = client.chat.completions.create(model=MODEL, messages=messages, tools=tools, temperature=0)
        msg = resp.choices[0].message
        messages.append(msg.model_dump(exclude_none=True))
        if not msg.tool_calls:
            return msg.content or ""
        for call in msg.tool_calls:
            args = json.loads(call.function.arguments)
            with span(
                call.function.name, Kind.TOOL, args, tool__name=call.function.name, tool__id=call.id
            ) as sp:
                result = impl[call.function.name](**args)
                set_output(sp, result)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": _j(result)})
    raise RuntimeError("agent did not finish within its turn budget")


def _client(server: FakeModelServer) -> OpenAI:
    Telemetry.get()
    return OpenAI(base_url=server.base_url, api_key="sk-fake-local", max_retries=0, timeout=10)


# =====================================================================================
# table_booker
# =====================================================================================

RESTAURANTS = [
    {
        "id": "R-101",
        "name": "Dishoom Shoreditch",
        "area": "Shoreditch",
        "cuisine": "indian",
        "vegetarian": True,
        "rating": 4.6,
    },
    {
        "id": "R-102",
        "name": "Gunpowder Spitalfields",
        "area": "Shoreditch",
        "cuisine": "indian",
        "vegetarian": True,
        "rating": 4.5,
    },
    {
        "id": "R-110",
        "name": "Hawksmoor Guildhall",
        "area": "City",
        "cuisine": "steak",
        "vegetarian": False,
        "rating": 4.7,
    },
    {
        "id": "R-111",
        "name": "Smith & Wollensky",
        "area": "Soho",
        "cuisine": "steak",
        "vegetarian": False,
        "rating": 4.8,
    },
    {
        "id": "R-112",
        "name": "Mildreds Soho",
        "area": "Soho",
        "cuisine": "vegetarian",
        "vegetarian": True,
        "rating": 4.4,
    },
    {
        "id": "R-113",
        "name": "Bao Soho",
        "area": "Soho",
        "cuisine": "taiwanese",
        "vegetarian": True,
        "rating": 4.5,
    },
    {
        "id": "R-120",
        "name": "Padella Borough",
        "area": "Borough",
        "cuisine": "italian",
        "vegetarian": True,
        "rating": 4.6,
    },
    {
        "id": "R-121",
        "name": "Flat Iron Borough",
        "area": "Borough",
        "cuisine": "steak",
        "vegetarian": False,
        "rating": 4.3,
    },
    {
        "id": "R-130",
        "name": "Dishoom Covent Garden",
        "area": "Covent Garden",
        "cuisine": "indian",
        "vegetarian": True,
        "rating": 4.6,
    },
]
FULL_SLOTS = {("R-101", "2025-11-21", "19:30"), ("R-120", "2025-11-22", "20:00")}
TABLE_BOOKINGS: dict[str, dict[str, Any]] = {}
DESK_LOG = [  # the shared concierge log the desk keeps
    {"guest": "g-ana", "role": "user", "content": "Please book Bao Soho for 2 on Thursday 19:00."},
    {"guest": "g-ana", "role": "assistant", "content": "Booked Bao Soho (R-113) for 2, Thursday 19:00."},
    {"guest": "g-tom", "role": "user", "content": "Can you get us Padella Borough for 3 on Saturday?"},
    {
        "guest": "g-tom",
        "role": "assistant",
        "content": "Booked Padella Borough (R-120) for 3, Saturday 13:00.",
    },
    {"guest": "g-lee", "role": "user", "content": "Team dinner at Hawksmoor Guildhall for 6 please."},
    {
        "guest": "g-lee",
        "role": "assistant",
        "content": "Booked Hawksmoor Guildhall (R-110) for 6, Friday 20:00.",
    },
]


class BookingCheckFailed(RuntimeError):
    pass


def find_restaurants(
    area: str, cuisine: str | None = None, party_size: int = 2, dietary: str = "none"
) -> list[dict[str, Any]]:
    hits = [
        r
        for r in RESTAURANTS
        if r["area"].lower() == area.lower() and (not cuisine or cuisine == "any" or r["cuisine"] == cuisine)
    ]
    if dietary == "vegetarian" and "veg_filter_ignored" not in FAULTS:
        hits = [r for r in hits if r["vegetarian"]]
    hits.sort(key=lambda r: -r["rating"])
    return [{k: r[k] for k in ("id", "name", "area", "cuisine", "rating")} for r in hits]


def check_availability(restaurant_id: str, date: str, time: str, party_size: int) -> dict[str, Any]:
    free = (restaurant_id, date, time) not in FULL_SLOTS and party_size <= 10
    alt = "20:30" if not free else None
    return {
        "restaurant_id": restaurant_id,
        "date": date,
        "time": time if free else alt,
        "available": True,
        "party_size": party_size,
    }


def book_table(restaurant_id: str, date: str, time: str, party_size: int, name: str) -> dict[str, Any]:
    bid = f"TB-{len(TABLE_BOOKINGS) + 4101}"
    TABLE_BOOKINGS[bid] = {
        "restaurant_id": restaurant_id,
        "date": date,
        "time": time,
        "party_size": party_size,
        "name": name,
    }
    r = next(x for x in RESTAURANTS if x["id"] == restaurant_id)
    return {"booking_id": bid, "restaurant": r["name"], "date": date, "time": time, "party_size": party_size}


TABLE_TOOLS = [
    tool_schema(
        "find_restaurants",
        "Search restaurants by area, cuisine, party size and dietary need.",
        {"area": "str", "cuisine": "str", "party_size": "int", "dietary": "str"},
        ["area"],
    ),
    tool_schema(
        "check_availability",
        "Check a table at a restaurant.",
        {"restaurant_id": "str", "date": "str", "time": "str", "party_size": "int"},
    ),
    tool_schema(
        "book_table",
        "Book a table.",
        {"restaurant_id": "str", "date": "str", "time": "str", "party_size": "int", "name": "str"},
    ),
]
NUMBER_WORDS = {
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}


def table_policy(body: dict[str, Any]) -> Reply:
    req = user_text(body)
    done = called(body)
    name = find(r"Guest: ([A-Za-z .]+)", req)
    party = int(find(r"party of (\d+)", req))  # type: ignore[arg-type]
    date = find(r"on (\d{4}-\d{2}-\d{2})", req)
    time = find(r"at (\d{2}:\d{2})", req)
    if "find_restaurants" not in done and "check_availability" not in done:
        if re.search(r"like last time|same place", req, re.I):
            earlier = [text_of(m) for m in body["messages"][:-1] if m.get("role") == "assistant"]
            booked = [re.search(r"\((R-\d{3})\)", t) for t in earlier]
            rid = [b.group(1) for b in booked if b][-1]
            return Reply(
                calls=[
                    (
                        "check_availability",
                        {"restaurant_id": rid, "date": date, "time": time, "party_size": party},
                    )
                ]
            )
        area = find(r"in ([A-Z][a-z]+(?: [A-Z][a-z]+)?)", req, flags=0)
        cuisine = find(r"cuisine: (\w+)", req, "any")
        dietary = "vegetarian" if re.search(r"vegetarian", req, re.I) else "none"
        return Reply(
            calls=[
                (
                    "find_restaurants",
                    {"area": area, "cuisine": cuisine, "party_size": party, "dietary": dietary},
                )
            ]
        )
    if "check_availability" not in done:
        top = last_result(body, "find_restaurants")[0]
        return Reply(
            calls=[
                (
                    "check_availability",
                    {"restaurant_id": top["id"], "date": date, "time": time, "party_size": party},
                )
            ]
        )
    if "book_table" not in done:
        a = last_result(body, "check_availability")
        size = party
        if "party_misread" in FAULTS:
            size = {8: 6, 6: 8, 4: 2, 2: 4}.get(party, party)
        return Reply(
            calls=[
                (
                    "book_table",
                    {
                        "restaurant_id": a["restaurant_id"],
                        "date": a["date"],
                        "time": a["time"],
                        "party_size": size,
                        "name": name,
                    },
                )
            ]
        )
    b = last_result(body, "book_table")
    return Reply(
        text=f"You're booked at {b['restaurant']} on {b['date']} at {b['time']} for {b['party_size']} (ref {b['booking_id']})."
    )


def run_table(server: FakeModelServer, inp: dict[str, Any], key: str) -> None:
    client = _client(server)
    form = inp["form"]
    with span("table_booker", Kind.AGENT, form, agent__name="table_booker") as root:
        with span(
            "compact_history", Kind.CHAIN, {"guest": form["guest_id"], "log_size": len(DESK_LOG)}
        ) as sp:
            if "history_cross_guest" in FAULTS:
                kept = DESK_LOG[-4:]  # the last few turns of the desk log, whoever they were with
            else:
                kept = [m for m in DESK_LOG if m["guest"] == form["guest_id"]][-4:]
            history = [{"role": m["role"], "content": m["content"]} for m in kept]
            set_output(sp, history)
        text = (
            f"Guest: {form['name']}\nparty of {form['party_size']} on {form['date']} at {form['time']} in {form['area']}"
            f"{' cuisine: ' + form['cuisine'] if form.get('cuisine') else ''}{' (vegetarian)' if form.get('vegetarian') else ''}\nNote: {form.get('note', '')}"
        )
        messages = [
            {
                "role": "system",
                "content": "You are a restaurant booking assistant. Book exactly what the guest asked for.",
            },
            *history,
            {"role": "user", "content": text},
        ]
        answer = tool_loop(
            client,
            messages,
            TABLE_TOOLS,
            {
                "find_restaurants": find_restaurants,
                "check_availability": check_availability,
                "book_table": book_table,
            },
        )
        with span("verify_booking", Kind.CHAIN, {"form": form, "answer": answer}) as sp:
            bid = re.search(r"ref (TB-\d+)", answer).group(1)  # type: ignore[union-attr]
            b = TABLE_BOOKINGS[bid]
            r = next(x for x in RESTAURANTS if x["id"] == b["restaurant_id"])
            if b["party_size"] != form["party_size"]:
                raise BookingCheckFailed(
                    f"{bid} holds {b['party_size']} covers but the form asked for {form['party_size']}"
                )
            if r["area"] != form["area"]:
                raise BookingCheckFailed(
                    f"{bid} is at {r['name']} in {r['area']}; the guest asked for {form['area']}"
                )
            if form.get("vegetarian") and not r["vegetarian"]:
                raise BookingCheckFailed(f"{r['name']} has no vegetarian menu; guest requires one")
            if b["date"] != form["date"]:
                raise BookingCheckFailed(f"{bid} is for {b['date']}, form says {form['date']}")
            set_output(sp, {"ok": True, "booking": bid})
        set_output(root, answer)


def table_agent(server: FakeModelServer) -> AgentSpec:
    def run(inp: dict[str, Any], fault: str | None, out: Path, key: str) -> None:
        _set_faults(fault)
        TABLE_BOOKINGS.clear()
        server.use(table_policy)
        Telemetry.get().record(key, out, lambda: run_table(server, inp, key))

    def form(gid: str, name: str, size: int, date: str, time: str, area: str, **kw: Any) -> dict[str, Any]:
        return {
            "form": {
                "guest_id": gid,
                "name": name,
                "party_size": size,
                "date": date,
                "time": time,
                "area": area,
                **kw,
            }
        }

    passing = [
        form(
            "g-kai",
            "Kai Moreno",
            2,
            "2025-11-20",
            "19:00",
            "Shoreditch",
            cuisine="indian",
            note="anniversary",
        ),
        form("g-lee", "Lee Grant", 6, "2025-11-27", "20:00", "City", note="Same place as last time please!"),
        form("g-ben", "Ben Cole", 4, "2025-11-22", "13:00", "Borough", vegetarian=True),
        form("g-tom", "Tom Hale", 3, "2025-11-29", "13:00", "Borough", note="like last time"),
        form("g-ivy", "Ivy Chen", 5, "2025-11-23", "18:30", "Soho", cuisine="steak"),
        form("g-raj", "Raj Patel", 2, "2025-11-24", "20:00", "Covent Garden", cuisine="indian"),
    ]
    cases = [
        Case(
            "party_misread",
            form(
                "g-mia",
                "Mia Lopez",
                8,
                "2025-11-21",
                "20:00",
                "Shoreditch",
                cuisine="indian",
                note="birthday, eight of us",
            ),
            "party_misread",
            "wrong_tool_args",
            "After checking availability for 8, the model books the table for 6; the booking check against the web "
            "form fails.",
            [("ChatCompletion", 3), ("book_table", 1), ("verify_booking", 1)],
            "llm",
            '"party_size": 6',
        ),
        Case(
            "veg_filter_ignored",
            form(
                "g-noa",
                "Noa Levi",
                4,
                "2025-11-22",
                "19:00",
                "Soho",
                vegetarian=True,
                note="two vegetarians in the group",
            ),
            "veg_filter_ignored",
            "tool_ignores_arg",
            "find_restaurants drops the vegetarian filter and the top-rated steakhouse comes first; the model checks "
            "and books it and the booking check rejects a place without a vegetarian menu.",
            [
                ("find_restaurants", 1),
                ("ChatCompletion", 2),
                ("check_availability", 1),
                ("ChatCompletion", 3),
                ("book_table", 1),
                ("verify_booking", 1),
            ],
            "tool",
        ),
        Case(
            "history_cross_guest",
            form("g-ana", "Ana Ruiz", 2, "2025-11-28", "19:30", "Soho", note="like last time"),
            "history_cross_guest",
            "context_pollution",
            "compact_history keeps the last turns of the whole desk log instead of this guest's; another guest's "
            "Hawksmoor booking is the latest 'last time' in the prompt, the model books it and the check fails on the area.",
            [
                ("compact_history", 1),
                ("ChatCompletion", 1),
                ("check_availability", 1),
                ("ChatCompletion", 2),
                ("book_table", 1),
                ("verify_booking", 1),
            ],
        ),
    ]
    return AgentSpec("table_booker", "otlp", "restaurant reservations", "json", run, passing, cases)


# =====================================================================================
# returns_desk
# =====================================================================================

OMS_RECORDS = {
    # legacy OMS export: one field per line, money with sign
    "A-10482": "ORDER A-10482\nCUSTOMER kim.lee@example.com\nLINE SKU=JKT-BLU-M QTY=1 PRICE=89.00 DESC=Trail running jacket blue M\nLINE SKU=SOC-3PK QTY=2 PRICE=12.50 DESC=Running socks 3-pack\nDISCOUNT -15.00 ON JKT-BLU-M\nCAPTURED 104.00",
    "A-10428": "ORDER A-10428\nCUSTOMER rob.hall@example.com\nLINE SKU=TNT-2P QTY=1 PRICE=149.00 DESC=Two person tent\nCAPTURED 149.00",
    "A-10511": "ORDER A-10511\nCUSTOMER eva.m@example.com\nLINE SKU=BOOT-W39 QTY=1 PRICE=139.90 DESC=Hiking boots women 39\nDISCOUNT -20.00 ON BOOT-W39\nCAPTURED 119.90",
    "A-10530": "ORDER A-10530\nCUSTOMER sam.k@example.com\nLINE SKU=PCK-30L QTY=1 PRICE=74.50 DESC=Daypack 30L\nLINE SKU=BTL-1L QTY=1 PRICE=18.00 DESC=Water bottle 1L\nCAPTURED 92.50",
    "A-10544": "ORDER A-10544\nCUSTOMER kim.lee@example.com\nLINE SKU=GLV-L QTY=1 PRICE=29.00 DESC=Fleece gloves L\nCAPTURED 29.00",
    "A-10560": "ORDER A-10560\nCUSTOMER noor.a@example.com\nLINE SKU=JKT-RED-S QTY=1 PRICE=95.00 DESC=Rain jacket red S\nDISCOUNT -9.50 ON JKT-RED-S\nCAPTURED 85.50",
    "A-10577": "ORDER A-10577\nCUSTOMER li.w@example.com\nLINE SKU=STV-GAS QTY=1 PRICE=54.00 DESC=Camping stove\nLINE SKU=POT-SET QTY=1 PRICE=39.00 DESC=Cook pot set\nDISCOUNT -6.00 ON POT-SET\nCAPTURED 87.00",
    "A-10590": "ORDER A-10590\nCUSTOMER eva.m@example.com\nLINE SKU=HAT-SUN QTY=1 PRICE=24.00 DESC=Sun hat\nCAPTURED 24.00",
    "A-10602": "ORDER A-10602\nCUSTOMER noor.a@example.com\nLINE SKU=MAT-PAD QTY=1 PRICE=64.00 DESC=Sleeping pad\nCAPTURED 64.00",
}
RETURNS = [  # warehouse receipts: rma, customer, order, sku, condition
    {
        "rma": "RMA-7710",
        "customer": "kim.lee@example.com",
        "order": "A-10544",
        "sku": "GLV-L",
        "condition": "unopened",
    },
    {
        "rma": "RMA-7723",
        "customer": "kim.lee@example.com",
        "order": "A-10482",
        "sku": "JKT-BLU-M",
        "condition": "opened",
    },
    {
        "rma": "RMA-7731",
        "customer": "eva.m@example.com",
        "order": "A-10511",
        "sku": "BOOT-W39",
        "condition": "unopened",
    },
    {
        "rma": "RMA-7740",
        "customer": "sam.k@example.com",
        "order": "A-10530",
        "sku": "PCK-30L",
        "condition": "opened",
    },
    {
        "rma": "RMA-7745",
        "customer": "noor.a@example.com",
        "order": "A-10602",
        "sku": "MAT-PAD",
        "condition": "unopened",
    },
    {
        "rma": "RMA-7752",
        "customer": "noor.a@example.com",
        "order": "A-10560",
        "sku": "JKT-RED-S",
        "condition": "opened",
    },
    {
        "rma": "RMA-7760",
        "customer": "li.w@example.com",
        "order": "A-10577",
        "sku": "POT-SET",
        "condition": "unopened",
    },
    {
        "rma": "RMA-7766",
        "customer": "eva.m@example.com",
        "order": "A-10590",
        "sku": "HAT-SUN",
        "condition": "opened",
    },
]
PARSED_ORDERS: dict[str, dict[str, Any]] = {}
REFUNDS: list[dict[str, Any]] = []


class RefundRefused(RuntimeError):
    pass


class NotYourOrder(PermissionError):
    pass


def parse_order_record(raw: str) -> dict[str, Any]:
    order: dict[str, Any] = {"lines": [], "discounts": {}}
    for ln in raw.splitlines():
        head, _, rest = ln.partition(" ")
        if head == "ORDER":
            order["order_id"] = rest
        elif head == "CUSTOMER":
            order["customer"] = rest
        elif head == "LINE":
            kv = dict(p.split("=", 1) for p in re.findall(r"\w+=(?:[^=]+?)(?=\s\w+=|$)", rest))
            order["lines"].append(
                {"sku": kv["SKU"], "qty": int(kv["QTY"]), "price": float(kv["PRICE"]), "desc": kv["DESC"]}
            )
        elif head == "DISCOUNT":
            amt, _, sku = rest.partition(" ON ")
            num = re.search(r"[\d.]+", amt).group(0) if "discount_sign_dropped" in FAULTS else amt  # type: ignore[union-attr]
            order["discounts"][sku] = float(num)
        elif head == "CAPTURED":
            order["captured"] = float(rest)
    return order


def lookup_order(order_id: str) -> str:
    return OMS_RECORDS[order_id]


def list_returns(customer: str) -> list[dict[str, Any]]:
    return [{k: r[k] for k in ("rma", "order", "sku")} for r in RETURNS if r["customer"] == customer]


def inspect_return(rma: str) -> dict[str, Any]:
    r = next(x for x in RETURNS if x["rma"] == rma)
    return {"rma": rma, "received": True, "condition": r["condition"], "order": r["order"], "sku": r["sku"]}


def quote_refund(order_id: str, sku: str, condition: str) -> dict[str, Any]:
    o = PARSED_ORDERS[order_id]
    line = next(x for x in o["lines"] if x["sku"] == sku)
    base = line["price"] + o["discounts"].get(sku, 0.0)  # discounts are stored negative
    factor = 0.85 if condition == "opened" else 1.0
    return {
        "order_id": order_id,
        "sku": sku,
        "refund": round(base * factor, 2),
        "restocking_fee_applied": factor < 1,
    }


def issue_refund(order_id: str, sku: str, amount: float) -> dict[str, Any]:
    raw = OMS_RECORDS[order_id]
    price = float(re.search(rf"SKU={re.escape(sku)} QTY=\d+ PRICE=([\d.]+)", raw).group(1))  # type: ignore[union-attr]
    disc = re.search(rf"DISCOUNT -([\d.]+) ON {re.escape(sku)}", raw)
    paid = price - (float(disc.group(1)) if disc else 0.0)
    if amount > paid + 0.005:
        raise RefundRefused(
            f"refund {amount:.2f} on {order_id}/{sku} exceeds the {paid:.2f} actually paid for that line"
        )
    rec = next((r for r in RETURNS if r["order"] == order_id and r["sku"] == sku), None)
    if rec and rec["condition"] == "opened" and amount > round(paid * 0.85, 2) + 0.005:
        raise RefundRefused(
            f"{rec['rma']} was received opened: at most {paid * 0.85:.2f} may be refunded, not {amount:.2f}"
        )
    REFUNDS.append({"order_id": order_id, "sku": sku, "amount": amount})
    return {"order_id": order_id, "sku": sku, "refunded": amount, "status": "refunded"}


RETURN_TOOLS = [
    tool_schema("lookup_order", "Fetch an order from the OMS.", {"order_id": "str"}),
    tool_schema(
        "ask_warehouse",
        "Ask the warehouse agent whether a return arrived and in what condition.",
        {"question": "str"},
    ),
    tool_schema(
        "quote_refund",
        "Refund amount for a returned line.",
        {"order_id": "str", "sku": "str", "condition": "str"},
    ),
    tool_schema(
        "issue_refund",
        "Refund a line to the original payment method.",
        {"order_id": "str", "sku": "str", "amount": "float"},
    ),
]
WAREHOUSE_TOOLS = [
    tool_schema("list_returns", "Returns received from a customer.", {"customer": "str"}),
    tool_schema("inspect_return", "Inspection result of a received return.", {"rma": "str"}),
]


def returns_policy(body: dict[str, Any]) -> Reply:
    sys_txt = system_text(body)
    req = user_text(body)
    done = called(body)
    if "warehouse" in sys_txt:
        cust = find(r"customer ([\w.@]+?)[,?]", req)
        order = find(r"order (A-\d{5})", req)
        sku = find(r"item ([A-Z0-9-]+)", req)
        if "list_returns" not in done:
            return Reply(calls=[("list_returns", {"customer": cust})])
        if "inspect_return" not in done:
            rows = last_result(body, "list_returns")
            if "rma_wrong_order" in FAULTS:
                pick = rows[0]  # the first receipt of this customer
            else:
                pick = next(r for r in rows if r["order"] == order and r["sku"] == sku)
            return Reply(calls=[("inspect_return", {"rma": pick["rma"]})])
        r = last_result(body, "inspect_return")
        return Reply(text=f"Return {r['rma']} received; condition: {r['condition']}.")
    first = next(text_of(m) for m in body["messages"] if m.get("role") == "user")
    oid = find(r"order (A-\d{5})", first)
    if "order_digits_swapped" in FAULTS:
        oid = oid[:-2] + oid[-1] + oid[-2]  # type: ignore[index]
    if "lookup_order" not in done:
        return Reply(calls=[("lookup_order", {"order_id": oid})])
    order_id = call_args(body, "lookup_order")[-1]["order_id"]
    order = last_result(body, "lookup_order")
    words = set(re.findall(r"[a-z]+", first.lower()))
    line = max(order["lines"], key=lambda x: len(words & set(x["desc"].lower().split())))
    if "ask_warehouse" not in done:
        return Reply(
            calls=[
                (
                    "ask_warehouse",
                    {
                        "question": f"Has the return from customer {order['customer']}, order {order_id}, item {line['sku']} arrived?"
                    },
                )
            ]
        )
    if "quote_refund" not in done:
        cond = find(r"condition: (\w+)", str(last_result(body, "ask_warehouse")), "opened")
        return Reply(calls=[("quote_refund", {"order_id": order_id, "sku": line["sku"], "condition": cond})])
    if "issue_refund" not in done:
        q = last_result(body, "quote_refund")
        return Reply(
            calls=[("issue_refund", {"order_id": order_id, "sku": line["sku"], "amount": q["refund"]})]
        )
    r = last_result(body, "issue_refund")
    return Reply(text=f"Refunded {r['refunded']:.2f} for {line['desc']} on {order_id}.")


def run_returns(server: FakeModelServer, inp: dict[str, Any]) -> None:
    client = _client(server)

    def lookup(order_id: str) -> dict[str, Any]:
        raw = lookup_order_traced(order_id)
        with span("parse_order_record", Kind.CHAIN, raw) as sp:
            order = parse_order_record(raw)
            PARSED_ORDERS[order_id] = order
            set_output(sp, order)
        with span(
            "verify_customer",
            Kind.CHAIN,
            {"order": order_id, "customer": order["customer"], "session": inp["customer"]},
        ) as sp:
            if order["customer"] != inp["customer"]:
                raise NotYourOrder(
                    f"order {order_id} belongs to {order['customer']}; signed-in customer is {inp['customer']}"
                )
            set_output(sp, {"ok": True})
        return order

    def lookup_order_traced(order_id: str) -> str:
        with span("oms.fetch_order", Kind.RETRIEVER, {"order_id": order_id}) as sp:
            raw = lookup_order(order_id)
            set_output(sp, raw)
            return raw

    def ask_warehouse(question: str) -> str:
        with span("warehouse_agent", Kind.AGENT, question, agent__name="warehouse_agent") as sp:
            msgs = [
                {
                    "role": "system",
                    "content": "You are the warehouse agent. Find the customer's return and report its inspection.",
                },
                {"role": "user", "content": question},
            ]
            ans = tool_loop(
                client,
                msgs,
                WAREHOUSE_TOOLS,
                {"list_returns": list_returns, "inspect_return": inspect_return},
            )
            set_output(sp, ans)
            return ans

    with span("returns_desk", Kind.AGENT, inp, agent__name="returns_desk") as root:
        msgs = [
            {
                "role": "system",
                "content": "You are a returns assistant for an outdoor store. Refund returned items per policy (opened items: 15% restocking fee).",
            },
            {"role": "user", "content": f"Signed in as {inp['customer']}. {inp['message']}"},
        ]
        ans = tool_loop(
            client,
            msgs,
            RETURN_TOOLS,
            {
                "lookup_order": lookup,
                "ask_warehouse": ask_warehouse,
                "quote_refund": quote_refund,
                "issue_refund": issue_refund,
            },
        )
        set_output(root, ans)


def returns_agent(server: FakeModelServer) -> AgentSpec:
    def run(inp: dict[str, Any], fault: str | None, out: Path, key: str) -> None:
        _set_faults(fault)
        PARSED_ORDERS.clear()
        REFUNDS.clear()
        server.use(returns_policy)
        Telemetry.get().record(key, out, lambda: run_returns(server, inp))

    passing = [
        {
            "customer": "eva.m@example.com",
            "message": "I sent back the hiking boots from order A-10511, please refund.",
        },
        {
            "customer": "sam.k@example.com",
            "message": "Refund for the daypack in order A-10530? It's back with you.",
        },
        {
            "customer": "kim.lee@example.com",
            "message": "My fleece gloves (order A-10544) were returned unopened.",
        },
        {
            "customer": "li.w@example.com",
            "message": "Returned the cook pot set from order A-10577, please process.",
        },
        {
            "customer": "eva.m@example.com",
            "message": "Hi, the sun hat from order A-10590 went back last week.",
        },
        {
            "customer": "noor.a@example.com",
            "message": "The sleeping pad from order A-10602 is back with you; money back please.",
        },
    ]
    cases = [
        Case(
            "order_digits_swapped",
            {
                "customer": "kim.lee@example.com",
                "message": "Please refund the trail running jacket from order A-10482, I returned it.",
            },
            "order_digits_swapped",
            "wrong_tool_args",
            "The model calls lookup_order with A-10428 (last two digits swapped); the OMS returns another customer's "
            "order, which is parsed and then refused by the ownership check.",
            [
                ("ChatCompletion", 1),
                ("oms.fetch_order", 1),
                ("parse_order_record", 1),
                ("verify_customer", 1),
            ],
            "llm",
            "A-10428",
        ),
        Case(
            "discount_sign_dropped",
            {
                "customer": "noor.a@example.com",
                "message": "Refund please for the rain jacket in order A-10560, returned.",
            },
            "discount_sign_dropped",
            "lossy_parse",
            "parse_order_record drops the minus sign of the line discount (-9.50 -> 9.50); the refund quote adds it "
            "instead of subtracting and the payment ledger refuses a refund above what was paid.",
            [("parse_order_record", 1), ("quote_refund", 1), ("ChatCompletion", 7), ("issue_refund", 1)],
        ),
        Case(
            "rma_wrong_order",
            {
                "customer": "kim.lee@example.com",
                "message": "Please refund the trail running jacket from order A-10482, I returned it.",
            },
            "rma_wrong_order",
            "wrong_entity_subagent",
            "The warehouse sub-agent inspects the customer's first return (RMA-7710, gloves, unopened) instead of the "
            "jacket's (opened); the full refund it implies is refused because the jacket came back opened.",
            [
                ("ChatCompletion", 4),
                ("inspect_return", 1),
                ("ChatCompletion", 5),
                ("warehouse_agent", 1),
                ("ChatCompletion", 6),
                ("quote_refund", 1),
                ("ChatCompletion", 7),
                ("issue_refund", 1),
            ],
            "llm",
            "RMA-7710",
        ),
    ]
    return AgentSpec("returns_desk", "otlp", "retail orders (returns)", "json", run, passing, cases)


# =====================================================================================
# bill_pay
# =====================================================================================

HOUSEHOLDS: dict[str, dict[str, Any]] = {
    "hh-ortiz": {
        "balance": 5200.00,
        "cached_balance": 6450.00,
        "card_cents": 420000,
        "min_due_cents": 5500,
        "statement": [
            ("2025-10-01", "RENT OCT", "-1,245.00"),
            ("2025-10-03", "CITY UTIL", "-96.40"),
            ("2025-10-05", "GROCER", "-212.33"),
            ("2025-10-15", "PAYROLL", "3,900.00"),
            ("2025-10-18", "PHONE CO", "-45.00"),
        ],
        "bills": [("PHONE CO", 45.00)],
        "memory": ["Oct: paid card in full", "Prefers to keep 500 buffer"],
    },
    "hh-chen": {
        "balance": 3100.00,
        "cached_balance": 3100.00,
        "card_cents": 92050,
        "min_due_cents": 3500,
        "statement": [
            ("2025-10-01", "MORTGAGE", "-1,480.00"),
            ("2025-10-07", "GYM", "-39.00"),
            ("2025-10-15", "PAYROLL", "4,250.00"),
            ("2025-10-20", "CITY UTIL", "-121.10"),
        ],
        "bills": [("CITY UTIL", 121.10)],
        "memory": ["Keep 500 buffer", "Note from March: annual bonus of 6,000 expected on the 28th"],
    },
    "hh-bauer": {
        "balance": 2800.00,
        "cached_balance": 2800.00,
        "card_cents": 61500,
        "min_due_cents": 2500,
        "statement": [
            ("2025-10-01", "RENT OCT", "-950.00"),
            ("2025-10-04", "INSURANCE", "-88.20"),
            ("2025-10-15", "PAYROLL", "2,700.00"),
        ],
        "bills": [("INSURANCE", 88.20)],
        "memory": ["Keep 500 buffer"],
    },
    "hh-singh": {
        "balance": 7400.00,
        "cached_balance": 7400.00,
        "card_cents": 250000,
        "min_due_cents": 7500,
        "statement": [
            ("2025-10-01", "RENT OCT", "-1,690.00"),
            ("2025-10-02", "CAR LOAN", "-410.00"),
            ("2025-10-15", "PAYROLL", "5,100.00"),
            ("2025-10-21", "PHONE CO", "-60.00"),
        ],
        "bills": [("PHONE CO", 60.00), ("CAR LOAN", 410.00)],
        "memory": ["Keep 500 buffer", "Note from May: tax refund of 1,200 expected"],
    },
    "hh-novak": {
        "balance": 4150.00,
        "cached_balance": 5400.00,
        "card_cents": 380000,
        "min_due_cents": 6000,
        "statement": [
            ("2025-10-01", "RENT OCT", "-1,250.00"),
            ("2025-10-09", "GYM", "-29.00"),
            ("2025-10-15", "PAYROLL", "3,300.00"),
        ],
        "bills": [("GYM", 29.00)],
        "memory": ["Keep 500 buffer"],
    },
    "hh-park": {
        "balance": 1900.00,
        "cached_balance": 1900.00,
        "card_cents": 45000,
        "min_due_cents": 2500,
        "statement": [
            ("2025-10-01", "RENT OCT", "-780.00"),
            ("2025-10-10", "CITY UTIL", "-64.00"),
            ("2025-10-15", "PAYROLL", "2,100.00"),
        ],
        "bills": [("CITY UTIL", 64.00)],
        "memory": ["Keep 500 buffer"],
    },
    "hh-adeyemi": {
        "balance": 6100.00,
        "cached_balance": 6100.00,
        "card_cents": 330000,
        "min_due_cents": 9900,
        "statement": [
            ("2025-10-01", "MORTGAGE", "-2,150.00"),
            ("2025-10-06", "INSURANCE", "-132.00"),
            ("2025-10-15", "PAYROLL", "6,300.00"),
        ],
        "bills": [("INSURANCE", 132.00)],
        "memory": ["Keep 500 buffer"],
    },
    "hh-moreau": {
        "balance": 3600.00,
        "cached_balance": 3600.00,
        "card_cents": 75020,
        "min_due_cents": 3000,
        "statement": [
            ("2025-10-01", "RENT OCT", "-1,120.00"),
            ("2025-10-12", "PHONE CO", "-35.00"),
            ("2025-10-15", "PAYROLL", "3,050.00"),
        ],
        "bills": [("PHONE CO", 35.00)],
        "memory": ["Keep 500 buffer"],
    },
    "hh-ito": {
        "balance": 5000.00,
        "cached_balance": 5000.00,
        "card_cents": 450000,
        "min_due_cents": 4500,
        "statement": [
            ("2025-10-01", "RENT OCT", "-1,400.00"),
            ("2025-10-08", "GYM", "-45.00"),
            ("2025-10-15", "PAYROLL", "4,000.00"),
        ],
        "bills": [("GYM", 45.00)],
        "memory": ["Keep 500 buffer"],
    },
    "hh-walsh": {
        "balance": 3350.00,
        "cached_balance": 3350.00,
        "card_cents": 128840,
        "min_due_cents": 4000,
        "statement": [
            ("2025-10-01", "RENT OCT", "-1,050.00"),
            ("2025-10-11", "INSURANCE", "-71.30"),
            ("2025-10-15", "PAYROLL", "2,950.00"),
            ("2025-10-19", "PHONE CO", "-52.00"),
        ],
        "bills": [("PHONE CO", 52.00)],
        "memory": ["Keep 500 buffer", "Card autopay is off"],
    },
}
RECURRING = ("RENT", "MORTGAGE", "UTIL", "GYM", "PHONE", "INSURANCE", "CAR LOAN")
BUFFER = 500.0
SCHEDULED: list[dict[str, Any]] = []


class BudgetCheckFailed(RuntimeError):
    pass


def fetch_statement(household: str) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["date", "description", "amount"])
    for row in HOUSEHOLDS[household]["statement"]:
        w.writerow(row)
    return buf.getvalue()


def parse_statement(csv_text: str) -> list[dict[str, Any]]:
    out = []
    for row in csv.DictReader(io.StringIO(csv_text)):
        raw = row["amount"]
        if "amount_thousands_cut" in FAULTS:
            amount = float(re.match(r"-?[\d.]+", raw).group(0))  # type: ignore[union-attr]
        else:
            amount = float(raw.replace(",", ""))
        out.append({"date": row["date"], "description": row["description"], "amount": amount})
    return out


def get_balance(household: str) -> dict[str, Any]:
    h = HOUSEHOLDS[household]
    bal = h["cached_balance"] if "balance_cache_stale" in FAULTS else h["balance"]
    return {"household": household, "available": bal, "currency": "USD"}


def get_card_balance(household: str) -> dict[str, Any]:
    h = HOUSEHOLDS[household]
    scale = 10000 if "card_cents_double_scaled" in FAULTS else 100
    return {
        "household": household,
        "statement_balance": h["card_cents"] / scale,
        "minimum_due": h["min_due_cents"] / scale,
    }


def schedule_payment(household: str, payee: str, amount: float) -> dict[str, Any]:
    SCHEDULED.append({"household": household, "payee": payee, "amount": amount})
    return {"scheduled": True, "payee": payee, "amount": amount, "date": "2025-11-03"}


BILL_TOOLS = [
    tool_schema("get_balance", "Checking account balance.", {"household": "str"}),
    tool_schema("get_card_balance", "Credit card statement balance and minimum due.", {"household": "str"}),
    tool_schema(
        "schedule_payment",
        "Schedule a payment from checking.",
        {"household": "str", "payee": "str", "amount": "float"},
    ),
]


def bill_policy(body: dict[str, Any]) -> Reply:
    sys_txt = system_text(body)
    req = user_text(body)
    if "summarize" in sys_txt:
        txns = json.loads(re.search(r"TRANSACTIONS: (\[.*\])", req).group(1))  # type: ignore[union-attr]
        recurring = [t for t in txns if t["amount"] < 0 and any(k in t["description"] for k in RECURRING)]
        return Reply(
            text=json.dumps(
                {
                    "recurring_out": round(-sum(t["amount"] for t in recurring), 2),
                    "recurring": [t["description"] for t in recurring],
                }
            )
        )
    hh = find(r"household (hh-\w+)", req)
    done = called(body)
    if "get_balance" not in done:
        return Reply(calls=[("get_balance", {"household": hh}), ("get_card_balance", {"household": hh})])
    if "schedule_payment" not in done:
        summary = json.loads(re.search(r"SUMMARY: (\{.*\})", req).group(1))  # type: ignore[union-attr]
        bills = json.loads(re.search(r"BILLS DUE: (\[.*\])", req).group(1))  # type: ignore[union-attr]
        notes = re.search(r"NOTES: (.*)", sys_txt).group(1)  # type: ignore[union-attr]
        incoming = sum(float(m.replace(",", "")) for m in re.findall(r"of ([\d,]+) expected", notes))
        bal = last_result(body, "get_balance")["available"]
        card = last_result(body, "get_card_balance")
        available = bal + incoming - summary["recurring_out"] - sum(b["amount"] for b in bills) - BUFFER
        pay = round(min(card["statement_balance"], max(available, 0.0)), 2)
        pay = max(pay, card["minimum_due"])
        calls = [("schedule_payment", {"household": hh, "payee": "CREDIT CARD", "amount": pay})]
        calls += [
            ("schedule_payment", {"household": hh, "payee": b["payee"], "amount": b["amount"]}) for b in bills
        ]
        return Reply(calls=calls)
    return Reply(text=f"Scheduled {len(call_args(body, 'schedule_payment'))} payments for {hh}.")


def run_bills(server: FakeModelServer, inp: dict[str, Any]) -> None:
    client = _client(server)
    hh = inp["household"]
    h = HOUSEHOLDS[hh]
    with span("bill_pay", Kind.AGENT, inp, agent__name="bill_pay") as root:
        with span("fetch_statement", Kind.TOOL, {"household": hh}, tool__name="fetch_statement") as sp:
            raw = fetch_statement(hh)
            set_output(sp, raw)
        with span("parse_statement", Kind.CHAIN, raw) as sp:
            txns = parse_statement(raw)
            set_output(sp, txns)
        with span("load_memory", Kind.RETRIEVER, {"household": hh}) as sp:
            if "stale_note_recalled" in FAULTS:
                notes = [*h["memory"], "Note from March: annual bonus of 6,000 expected on the 28th"]
            else:  # notes about a past month's one-off income are dropped once that month is over
                notes = [n for n in h["memory"] if "expected" not in n]
            set_output(sp, notes)
        summary = (
            client.chat.completions.create(
                model=MODEL,
                messages=[
                    {
                        "role": "system",
                        "content": "You summarize bank statements. Answer JSON with recurring_out.",
                    },
                    {"role": "user", "content": f"TRANSACTIONS: {json.dumps(txns)}"},
                ],
                temperature=0,
            )
            .choices[0]
            .message.content
        )
        bills = [{"payee": p, "amount": a} for p, a in h["bills"]]
        msgs = [
            {
                "role": "system",
                "content": f"You plan this month's payments. Pay the card as far as the buffer allows. NOTES: {'; '.join(notes)}",
            },
            {
                "role": "user",
                "content": f"household {hh}\nSUMMARY: {summary}\nBILLS DUE: {json.dumps(bills)}",
            },
        ]
        ans = tool_loop(
            client,
            msgs,
            BILL_TOOLS,
            {
                "get_balance": get_balance,
                "get_card_balance": get_card_balance,
                "schedule_payment": schedule_payment,
            },
        )
        with span(
            "budget_check",
            Kind.CHAIN,
            {"household": hh, "scheduled": [s for s in SCHEDULED if s["household"] == hh]},
        ) as sp:
            mine = [s for s in SCHEDULED if s["household"] == hh]
            card = next(s for s in mine if s["payee"] == "CREDIT CARD")
            if card["amount"] + 0.005 < h["min_due_cents"] / 100:
                raise BudgetCheckFailed(
                    f"card payment {card['amount']:.2f} is below the issuer's minimum due {h['min_due_cents'] / 100:.2f}; a late fee would apply"
                )
            standing = -sum(
                float(a.replace(",", "")) for _, d, a in h["statement"] if any(k in d for k in RECURRING)
            )
            projected = h["balance"] - sum(s["amount"] for s in mine) - standing
            if projected < BUFFER - 0.01:
                raise BudgetCheckFailed(
                    f"{hh}: projected checking balance {projected:,.2f} after payments and standing orders is under the {BUFFER:.0f} buffer"
                )
            set_output(sp, {"projected": round(projected, 2)})
        set_output(root, ans)


def bills_agent(server: FakeModelServer) -> AgentSpec:
    def run(inp: dict[str, Any], fault: str | None, out: Path, key: str) -> None:
        _set_faults(fault)
        SCHEDULED.clear()
        server.use(bill_policy)
        Telemetry.get().record(key, out, lambda: run_bills(server, inp))

    passing = [
        {"household": h} for h in ("hh-bauer", "hh-park", "hh-adeyemi", "hh-moreau", "hh-walsh", "hh-singh")
    ]
    cases = [
        Case(
            "amount_thousands_cut",
            {"household": "hh-ortiz"},
            "amount_thousands_cut",
            "lossy_parse",
            "parse_statement stops at the thousands separator, so the 1,245.00 rent reads as 1.00; the summary "
            "understates recurring outgoings, the planner pays the card too much and the budget check fails.",
            [
                ("parse_statement", 1),
                ("ChatCompletion", 1),
                ("ChatCompletion", 3),
                ("schedule_payment", 1),
                ("budget_check", 1),
            ],
        ),
        Case(
            "card_cents_double_scaled",
            {"household": "hh-chen"},
            "card_cents_double_scaled",
            "unit_scale",
            "get_card_balance divides the issuer's cent amounts by 10,000 instead of 100; the planner pays 9.21 on a "
            "920.50 card and the budget check flags a payment under the minimum due.",
            [("get_card_balance", 1), ("ChatCompletion", 3), ("schedule_payment", 1), ("budget_check", 1)],
            "tool",
        ),
        Case(
            "balance_cache_stale",
            {"household": "hh-novak"},
            "balance_cache_stale",
            "stale_data",
            "get_balance serves a cached balance from before the rent cleared (5,400 instead of 4,150); the planner "
            "pays the card from money that is gone and the projected balance falls under the buffer.",
            [("get_balance", 1), ("ChatCompletion", 3), ("schedule_payment", 1), ("budget_check", 1)],
            "tool",
        ),
        Case(
            "stale_note_recalled",
            {"household": "hh-ito"},
            "stale_note_recalled",
            "context_pollution",
            "load_memory carries an old March note about a 6,000 bonus 'expected on the 28th' into the planning "
            "prompt; the planner counts it as incoming money, pays the whole card and the budget check fails.",
            [("load_memory", 1), ("ChatCompletion", 3), ("schedule_payment", 1), ("budget_check", 1)],
        ),
    ]
    return AgentSpec("bill_pay", "otlp", "personal finance", "json", run, passing, cases)


def agents(server: FakeModelServer) -> list[AgentSpec]:
    return [table_agent(server), returns_agent(server), bills_agent(server)]
