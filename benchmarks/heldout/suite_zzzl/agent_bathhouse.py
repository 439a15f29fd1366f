"""Hot-spring bathhouse bookings: the recording SDK, a straight pipeline with run.state, a slot loop and a retried quote."""

from __future__ import annotations

import datetime as dt
import json

from openai import OpenAI

import trajdebug

NAME = "yumoto-bath-bookings"
ROUTE = "sdk"
DOMAIN = "hot-spring bathhouse bookings"
SHAPE = "linear pipeline, ~17 steps: model reads the request, parse, guest lookup, state write, loop over 3 slots, router, quote retried once, total, reserve, deposit, model-written confirmation, send"
ON: set[str] = set()

INPUTS = [
    {"text": "Private cedar tub for 3 on 2026-12-14, 90 minutes, around 15:00.", "guest": "Haruka Mori", "email": "haruka@example.jp", "party": 3, "date": "2026-12-14", "bath": "cedar", "minutes": 90},
    {"text": "Open-air rock pool for 2 on 2026-12-12, 60 minutes, afternoon please.", "guest": "Kenji Sato", "email": "kenji.sato@example.jp", "party": 2, "date": "2026-12-12", "bath": "rock", "minutes": 60},
    {"text": "Family cedar tub, 4 of us, 2026-12-19, two hours.", "guest": "Aiko Tanaka", "email": "aiko@example.jp", "party": 4, "date": "2026-12-19", "bath": "cedar", "minutes": 120},
    {"text": "Rock pool for one, 2026-12-21, 45 minutes, late afternoon.", "guest": "Yuto Ishii", "email": "yuto.i@example.jp", "party": 1, "date": "2026-12-21", "bath": "rock", "minutes": 45},
    {"text": "Cedar tub for 2 on 2026-12-17, 60 minutes.", "guest": "Mei Fujita", "email": "mei.fujita@example.jp", "party": 2, "date": "2026-12-17", "bath": "cedar", "minutes": 60},
]

GUESTS = {
    "Haruka Mori": {"tier": "member", "member_code": "M-1187"},
    "Kenji Sato": {"tier": "visitor", "member_code": None},
    "Aiko Tanaka": {"tier": "member", "member_code": "M-2204"},
    "Yuto Ishii": {"tier": "visitor", "member_code": None},
    "Mei Fujita": {"tier": "member", "member_code": "M-3090"},
}
TUBS = {"cedar": {"13:00": 0, "15:00": 0, "17:00": 5}, "rock": {"13:00": 2, "15:00": 0, "17:00": 3}}
RATE_YEN_PER_HOUR = {"cedar": 2400, "rock": 1600}

CASES = [
    {"id": "bath-01", "input": 0, "switch": "a", "kind": "stale_data", "root": ("check_slot", 2, "tool"), "failure": ("reserve_tub", 1),
     "description": "The 15:00 cedar slot count comes from the morning's cached board (4 tubs free) although every tub was taken since, so the booking system refuses the reservation."},
    {"id": "bath-02", "input": 2, "switch": "b", "kind": "unit_error", "root": ("quote_price", 2, "tool"), "failure": ("charge_deposit", 1),
     "description": "The tariff service answers the hourly rate in sen rather than yen, so the deposit is a hundred times too large and the card processor declines it."},
    {"id": "bath-03", "input": 1, "switch": "c", "kind": "hallucinated_value", "root": ("read_request", 1, "llm"), "failure": ("charge_deposit", 1),
     "description": "The model reading the request adds a member code the guest never gave, and the deposit step finds no such member on file."},
    {"id": "bath-04", "input": 0, "switch": "d", "kind": "off_by_one", "root": ("parse_booking", 1, "parse"), "failure": ("reserve_tub", 1),
     "description": "The request parser moves the visit one day later (Monday 14th becomes Tuesday 15th), a day the bathhouse is closed, so the reservation is refused."},
    {"id": "bath-05", "input": 3, "switch": "e", "kind": "bad_memory_write", "root": ("remember_guest", 1, "state"), "failure": ("send_confirmation", 1),
     "description": "The guest record kept for the booking drops the e-mail address, so the confirmation at the end has nowhere to go."},
]

_client: OpenAI | None = None


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    data = json.loads(msgs[-1]["content"])
    if system.startswith("Extract"):
        out = {k: data[k] for k in ("guest", "email", "party", "date", "bath", "minutes")}
        out["member_code"] = None
        if "c" in ON:
            out["member_code"] = "M-5521"
        return json.dumps(out)
    return (f"Dear {data['guest']}, your {data['bath']} bath for {data['party']} is booked on {data['date']} "
            f"at {data['slot']} for {data['minutes']} minutes. Deposit paid: {data['deposit']} JPY.")


def _chat(system: str, payload: dict) -> str:
    reply = _client.chat.completions.create(model="fake-model", messages=[
        {"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}])
    return reply.choices[0].message.content


@trajdebug.step(kind="input")
def take_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="llm")
def read_request(request: dict) -> str:
    return _chat("Extract the booking fields as JSON.", request)


@trajdebug.step(kind="parse")
def parse_booking(text: str) -> dict:
    fields = json.loads(text)
    day = dt.date.fromisoformat(fields["date"])
    if "d" in ON:
        day = day + dt.timedelta(days=1)
    fields["date"] = day.isoformat()
    fields["party"] = int(fields["party"])
    fields["minutes"] = int(fields["minutes"])
    return fields


@trajdebug.step(kind="tool")
def lookup_guest(name: str) -> dict:
    return {"guest": name, **GUESTS[name]}


@trajdebug.step(kind="state")
def remember_guest(profile: dict, booking: dict) -> dict:
    record = {**profile, "email": booking["email"]}
    if "e" in ON:
        record = {k: v for k, v in record.items() if k != "email"}
    trajdebug.current_run().state["guest"] = record
    return record


@trajdebug.step(kind="tool")
def check_slot(bath: str, day: str, slot: str) -> dict:
    free = TUBS[bath][slot]
    if "a" in ON and slot == "15:00":
        free = 4 if bath == "cedar" else free
    return {"slot": slot, "free_tubs": free, "as_of": f"{day}T{slot}"}


@trajdebug.step(kind="condition")
def pick_slot(board: list[dict], party: int) -> str:
    for row in board:
        if row["free_tubs"] >= 1 and row["free_tubs"] * 2 >= party:
            return row["slot"]
    return board[-1]["slot"]


_attempts = {"n": 0}


@trajdebug.step(kind="tool")
def quote_price(bath: str) -> dict:
    _attempts["n"] += 1
    if _attempts["n"] == 1:
        raise ConnectionError("tariff service timed out")
    rate = RATE_YEN_PER_HOUR[bath]
    if "b" in ON:
        rate = rate * 100
    return {"bath": bath, "rate_per_hour": rate, "currency": "JPY"}


@trajdebug.step(kind="other")
def compute_total(quote: dict, booking: dict) -> dict:
    total = round(quote["rate_per_hour"] * booking["party"] * booking["minutes"] / 60)
    tier = trajdebug.current_run().state["guest"]["tier"]
    if tier == "member":
        total = round(total * 0.9)
    return {"total": total, "deposit": round(total * 0.3), "currency": quote["currency"]}


@trajdebug.step(kind="state")
def write_booking(booking: dict, slot: str, amounts: dict) -> dict:
    record = {**booking, "slot": slot, **amounts}
    trajdebug.current_run().state["booking"] = record
    return record


@trajdebug.step(kind="tool")
def reserve_tub(record: dict) -> dict:
    day = dt.date.fromisoformat(record["date"])
    if day.weekday() == 1:
        raise RuntimeError(f"reservation refused: the bathhouse is closed on Tuesdays ({record['date']})")
    free = TUBS[record["bath"]][record["slot"]]
    if free * 2 < record["party"] or free == 0:
        raise RuntimeError(f"reservation refused: {record['bath']} {record['slot']} on {record['date']} has {free} tubs free")
    return {"reservation": f"R-{record['date'].replace('-', '')}-{record['slot'].replace(':', '')}", "tubs": max(1, record["party"] // 2)}


@trajdebug.step(kind="tool")
def charge_deposit(record: dict) -> dict:
    code = record.get("member_code")
    if code and code not in {g["member_code"] for g in GUESTS.values()}:
        raise LookupError(f"card processor: member code {code} not on file")
    if record["deposit"] > 50000:
        raise ValueError(f"card processor declined: deposit {record['deposit']} JPY over the 50000 JPY online limit")
    return {"charged": record["deposit"], "currency": "JPY"}


@trajdebug.step(kind="llm")
def compose_confirmation(record: dict) -> str:
    return _chat("Write a short booking confirmation.", {k: record[k] for k in ("guest", "bath", "party", "date", "slot", "minutes", "deposit")})


@trajdebug.step(kind="tool")
def send_confirmation(text: str) -> dict:
    guest = trajdebug.current_run().state["guest"]
    if not guest.get("email"):
        raise KeyError(f"no e-mail address for {guest['guest']}: confirmation not sent")
    return {"sent_to": guest["email"], "chars": len(text)}


@trajdebug.step(kind="output")
def finish(reservation: dict, receipt: dict, sent: dict) -> dict:
    return {"reservation": reservation["reservation"], "deposit": receipt["charged"], "sent_to": sent["sent_to"]}


def record(inp: dict, path, ctx) -> None:
    global _client
    _client = OpenAI(base_url=ctx.server.base_url, api_key="not-needed", max_retries=0)
    _attempts["n"] = 0
    task = f"{inp['guest']}, {inp['bath']} bath, {inp['date']}"
    try:
        with trajdebug.run(NAME, task=task, path=str(path)) as run:
            req = take_request({k: inp[k] for k in ("text", "guest", "email", "party", "date", "bath", "minutes")})
            booking = parse_booking(read_request(req))
            profile = lookup_guest(booking["guest"])
            if booking.get("member_code") is None:
                booking["member_code"] = profile["member_code"]
            remember_guest(profile, booking)
            board = [check_slot(booking["bath"], booking["date"], s) for s in ("13:00", "15:00", "17:00")]
            slot = pick_slot(board, booking["party"])
            try:
                quote = quote_price(booking["bath"])
            except ConnectionError:
                quote = quote_price(booking["bath"])
            amounts = compute_total(quote, booking)
            rec = write_booking(booking, slot, amounts)
            reservation = reserve_tub(rec)
            receipt = charge_deposit(rec)
            text = compose_confirmation(rec)
            sent = send_confirmation(text)
            finish(reservation, receipt, sent)
    except Exception:
        pass
