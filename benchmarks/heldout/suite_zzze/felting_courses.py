"""Felting workshop booking assistant: finds the course a customer asks about and books it
(OpenInference + OpenTelemetry, exported as OTLP JSON).

Shape: a short straight run: retriever span (documents) -> model picks the course (JSON) -> parser ->
wool stock tool -> model plans the reservation as a function call -> reservation tool -> materials
packing tool -> model writes the confirmation -> invoice tool (checks the voucher and the totals).
"""

from __future__ import annotations

import json

from common import client, otel, write_otlp
from opentelemetry import trace as otel_trace

from trajdebug.testing import Reply, tool_call


NAME = "felting-course-assistant"
ROUTE = "otlp"
DOMAIN = "felting workshop's courses"
SHAPE = "OTLP spans: retriever -> LLM choice -> parser -> stock tool -> LLM function call -> reserve, pack, LLM letter, invoice (~11 spans)"

SW = dict.fromkeys(("needle_for_wet", "whole_pounds", "quiet_stock", "invented_date", "one_seat"), False)

COURSES = [
    {
        "id": "WF-03",
        "title": "Wet felting: seamless vessels",
        "kind": "wet",
        "date": "2027-05-22",
        "price": "64.50",
        "wool_g": 150,
        "colour": "merino teal",
    },
    {
        "id": "NF-12",
        "title": "Needle felting: woodland animals",
        "kind": "needle",
        "date": "2027-04-10",
        "price": "48.00",
        "wool_g": 60,
        "colour": "corriedale moss",
    },
    {
        "id": "WF-07",
        "title": "Wet felting: nuno scarves",
        "kind": "wet",
        "date": "2027-06-05",
        "price": "72.50",
        "wool_g": 120,
        "colour": "merino rose",
    },
    {
        "id": "NF-15",
        "title": "Needle felting: portraits of pets",
        "kind": "needle",
        "date": "2027-06-19",
        "price": "55.00",
        "wool_g": 80,
        "colour": "bluefaced leicester cream",
    },
    {
        "id": "WF-09",
        "title": "Wet felting: slippers",
        "kind": "wet",
        "date": "2027-07-03",
        "price": "85.00",
        "wool_g": 400,
        "colour": "shetland charcoal",
    },
]
SHELF = {
    "merino teal": 170,
    "corriedale moss": 500,
    "merino rose": 260,
    "bluefaced leicester cream": 400,
    "shetland charcoal": 900,
}
STOCK_DB = SHELF
INCOMING: dict = {}
VOUCHERS = {
    "GIFT-221": "wet",
    "GIFT-318": "needle",
    "GIFT-407": "wet",
    "GIFT-512": "needle",
    "GIFT-630": "wet",
}

INPUTS = [
    {"customer": "hazel@example.org", "ask": "wet felting vessels course", "seats": 2, "voucher": "GIFT-221"},
    {"customer": "idris@example.org", "ask": "needle felting animals", "seats": 1, "voucher": "GIFT-318"},
    {"customer": "mae@example.org", "ask": "nuno scarves wet felting", "seats": 2, "voucher": "GIFT-407"},
    {
        "customer": "ravi@example.org",
        "ask": "needle felting pet portraits",
        "seats": 3,
        "voucher": "GIFT-512",
    },
    {"customer": "tove@example.org", "ask": "wet felting slippers", "seats": 2, "voucher": "GIFT-630"},
]


def search(ask: str) -> list:
    words = set(ask.lower().split())
    scored = sorted(COURSES, key=lambda c: -len(words & set(c["title"].lower().replace(":", "").split())))
    if SW["needle_for_wet"]:
        scored = [c for c in scored if c["kind"] != "wet"] + [c for c in scored if c["kind"] == "wet"]
    return scored[:2]


def policy(request):
    msgs = request.body["messages"]
    prompt = msgs[-1]["content"] if msgs[-1]["role"] == "user" else ""
    if prompt.startswith("CHOOSE"):
        job = json.loads(prompt.split("\n", 1)[1])
        c = job["courses"][0]
        date = "2027-05-15" if SW["invented_date"] else c["date"]
        return json.dumps(
            {
                "course_id": c["id"],
                "title": c["title"],
                "date": date,
                "price_gbp": c["price"],
                "seats": job["seats"],
                "wool_g_per_seat": c["wool_g"],
                "colour": c["colour"],
            }
        )
    if prompt.startswith("RESERVE"):
        job = json.loads(prompt.split("\n", 1)[1])
        seats = 1 if SW["one_seat"] else job["seats"]
        return Reply(
            tool_calls=(
                tool_call(
                    "reserve_seats",
                    {
                        "course_id": job["course_id"],
                        "date": job["date"],
                        "seats": seats,
                        "customer": job["customer"],
                    },
                ),
            )
        )
    if prompt.startswith("LETTER"):
        job = json.loads(prompt.split("\n", 1)[1])
        return (
            f"Dear {job['customer']}, {job['seats']} place(s) on {job['title']} on {job['date']} are yours."
        )
    return "How can I help with a felting course?"


def _span(tracer, name, kind, inp):
    return tracer.start_as_current_span(
        name,
        attributes={
            "openinference.span.kind": kind,
            "input.value": json.dumps(inp),
            "input.mime_type": "application/json",
        },
    )


def _out(value):
    span = otel_trace.get_current_span()
    span.set_attribute("output.value", json.dumps(value))
    span.set_attribute("output.mime_type", "application/json")
    return value


def _chat(server, content, tools=None):
    kw = {"tools": tools} if tools else {}
    return client(server).chat.completions.create(
        model=server.model,
        temperature=0,
        messages=[
            {"role": "system", "content": "You are the booking assistant of a felting workshop."},
            {"role": "user", "content": content},
        ],
        **kw,
    )


RESERVE_TOOL = [
    {
        "type": "function",
        "function": {
            "name": "reserve_seats",
            "description": "Reserve seats on a course session.",
            "parameters": {
                "type": "object",
                "properties": {
                    "course_id": {"type": "string"},
                    "date": {"type": "string"},
                    "seats": {"type": "integer"},
                    "customer": {"type": "string"},
                },
            },
        },
    }
]
RESERVED: dict = {}


def run_booking(req, server, tracer):
    with _span(tracer, NAME, "AGENT", req):
        with _span(tracer, "course_search", "RETRIEVER", {"query": req["ask"]}):
            docs = search(req["ask"])
            span = otel_trace.get_current_span()
            for i, c in enumerate(docs):
                span.set_attribute(f"retrieval.documents.{i}.document.id", c["id"])
                span.set_attribute(f"retrieval.documents.{i}.document.content", c["title"])
                span.set_attribute(
                    f"retrieval.documents.{i}.document.metadata",
                    json.dumps({k: c[k] for k in ("date", "price", "wool_g", "colour", "kind")}),
                )
        text = (
            _chat(
                server, "CHOOSE\n" + json.dumps({"ask": req["ask"], "seats": req["seats"], "courses": docs})
            )
            .choices[0]
            .message.content
        )
        with _span(tracer, "parse_booking", "CHAIN", {"text": text}):
            d = json.loads(text)
            price = float(int(d["price_gbp"].split(".")[0])) if SW["whole_pounds"] else float(d["price_gbp"])
            booking = _out(
                {
                    "course_id": d["course_id"],
                    "title": d["title"],
                    "date": d["date"],
                    "seats": int(d["seats"]),
                    "price_gbp": price,
                    "wool_g": d["wool_g_per_seat"] * int(d["seats"]),
                    "colour": d["colour"],
                }
            )
        with _span(tracer, "wool_stock", "TOOL", {"colour": booking["colour"], "grams": booking["wool_g"]}):
            try:
                if SW["quiet_stock"]:
                    raise ConnectionError("stock database did not answer")
                on_hand = STOCK_DB[booking["colour"]]
            except ConnectionError:
                on_hand = booking["wool_g"]
            stock = _out(
                {"colour": booking["colour"], "on_hand_g": on_hand, "enough": on_hand >= booking["wool_g"]}
            )
        if not stock["enough"]:
            with _span(
                tracer,
                "order_wool",
                "TOOL",
                {"colour": booking["colour"], "grams": booking["wool_g"] - on_hand},
            ):
                INCOMING[booking["colour"]] = booking["wool_g"] - on_hand
                _out(
                    {
                        "order": f"W-{booking['colour'].split()[-1]}-{booking['wool_g'] - on_hand}",
                        "arrives": "before the course",
                    }
                )
        msg = (
            _chat(
                server, "RESERVE\n" + json.dumps({**booking, "customer": req["customer"]}), tools=RESERVE_TOOL
            )
            .choices[0]
            .message
        )
        args = json.loads(msg.tool_calls[0].function.arguments)
        with _span(tracer, "reserve_seats", "TOOL", args):
            session = next(
                (c for c in COURSES if c["id"] == args["course_id"] and c["date"] == args["date"]), None
            )
            if session is None:
                raise LookupError(f"no session of {args['course_id']} on {args['date']}")
            RESERVED[(args["course_id"], args["customer"])] = args["seats"]
            _out({"reservation": f"R-{args['course_id']}-{args['seats']}", "seats": args["seats"]})
        with _span(
            tracer, "pack_materials", "TOOL", {"colour": booking["colour"], "grams": booking["wool_g"]}
        ):
            have = SHELF[booking["colour"]] + INCOMING.get(booking["colour"], 0)
            if have < booking["wool_g"]:
                raise RuntimeError(
                    f"only {have} g of {booking['colour']} on the shelf or ordered, {booking['wool_g']} g needed"
                )
            _out({"packed_g": booking["wool_g"], "colour": booking["colour"]})
        letter = (
            _chat(server, "LETTER\n" + json.dumps({"customer": req["customer"], **booking}))
            .choices[0]
            .message.content
        )
        with _span(
            tracer,
            "create_invoice",
            "TOOL",
            {"customer": req["customer"], "voucher": req["voucher"], "booking": booking, "letter": letter},
        ):
            course = next(c for c in COURSES if c["id"] == booking["course_id"])
            if VOUCHERS[req["voucher"]] != course["kind"]:
                raise ValueError(
                    f"voucher {req['voucher']} covers {VOUCHERS[req['voucher']]} felting, not {course['id']} ({course['title']})"
                )
            reserved = RESERVED.get((course["id"], req["customer"]), 0)
            if reserved != req["seats"]:
                raise ValueError(
                    f"invoice for {req['seats']} seats on {course['id']} but {reserved} reserved"
                )
            total = round(booking["price_gbp"] * booking["seats"], 2)
            due = round(float(course["price"]) * req["seats"], 2)
            if total != due:
                raise ValueError(
                    f"invoice total {total:.2f} GBP differs from the catalogue {due:.2f} GBP for {req['seats']} seats"
                )
            _out({"invoice": f"INV-{course['id']}-{req['seats']}", "total_gbp": total})


def record(inp, server, dest: str) -> None:
    provider, spans = otel()
    spans.clear()
    RESERVED.clear()
    INCOMING.clear()
    try:
        run_booking(inp, server, provider.get_tracer("felting-workshop"))
    except Exception:  # noqa: BLE001  (the recorded run keeps the failure; the generator checks it)
        pass
    write_otlp(spans, dest)


CASES = [
    {
        "id": "felt_needle_docs",
        "input": 0,
        "switch": "needle_for_wet",
        "fault_kind": "wrong_retrieval",
        "root": ("course_search", 1, "retrieval"),
        "failure": ("create_invoice", 1),
        "description": "The course search ranks needle felting courses first for a wet felting enquiry, and the customer's wet felting voucher cannot pay for them.",
    },
    {
        "id": "felt_whole_pounds",
        "input": 2,
        "switch": "whole_pounds",
        "fault_kind": "lossy_parsing",
        "root": ("parse_booking", 1, "other"),
        "failure": ("create_invoice", 1),
        "description": "Parsing the model's booking keeps only the whole pounds of the seat price.",
    },
    {
        "id": "felt_quiet_stock",
        "input": 0,
        "switch": "quiet_stock",
        "fault_kind": "swallowed_error",
        "root": ("wool_stock", 1, "tool"),
        "failure": ("pack_materials", 1),
        "description": "The wool stock check treats a database timeout as enough wool in stock, so the shortage shows only when packing.",
    },
    {
        "id": "felt_invented_date",
        "input": 4,
        "switch": "invented_date",
        "fault_kind": "hallucinated_value",
        "root": ("ChatCompletion", 1, "llm"),
        "failure": ("reserve_seats", 1),
        "description": "The model books the slippers course for 2027-05-15, a date none of the search results gives.",
    },
    {
        "id": "felt_one_seat",
        "input": 3,
        "switch": "one_seat",
        "fault_kind": "wrong_tool_args",
        "root": ("ChatCompletion", 2, "llm"),
        "failure": ("create_invoice", 1),
        "description": "The model reserves one seat instead of the three the customer asked for.",
    },
]
