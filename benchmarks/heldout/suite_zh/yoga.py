"""Yoga studio class bookings: the trajdebug recording SDK (decorated steps, run.state, a retry)."""
from __future__ import annotations

import json
import re

import trajdebug
from openai import OpenAI

from .kit import active

AGENT, ROUTE, EXT = "yoga-class-booker", "sdk", "jsonl"
DOMAIN = "yoga studio class bookings"
SHAPE = "extract -> member + state -> timetable search -> capacity checks -> model picks -> holds (retry) -> credits -> confirm"

INPUTS = {
    "riverside": "Book member M-204 into 3 vinyasa classes at Riverside this week, mornings only.",
    "harbour": "Book member M-517 into 2 yin classes at Harbour this week, evenings only.",
    "r1": "Book member M-330 into 2 hatha classes at Riverside this week, mornings only.",
    "r2": "Book member M-118 into 1 vinyasa classes at Harbour this week, evenings only.",
    "r3": "Book member M-442 into 2 vinyasa classes at Riverside this week, evenings only.",
    "r4": "Book member M-905 into 3 yin classes at Harbour this week, mornings only.",
}
REFS = ["r1", "r2", "r3", "r4"]
MEMBERS = {
    "M-204": {"plan": "10-pack", "credits": 9}, "M-517": {"plan": "10-pack", "credits": 4},
    "M-330": {"plan": "unlimited", "credits": 0}, "M-118": {"plan": "10-pack", "credits": 2},
    "M-442": {"plan": "10-pack", "credits": 6}, "M-905": {"plan": "unlimited", "credits": 0},
}
DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
FULL = {"RIV-vinyasa-Mon-07:00", "HAR-yin-Tue-18:30"}
RACE = {"RIV-vinyasa-Wed-07:00"}


def timetable(studio: str, style: str) -> list[dict]:
    code = studio[:3].upper()
    rows = []
    for day in DAYS:
        for start, minutes in (("07:00", 60), ("18:30", 75)):
            cid = f"{code}-{style}-{day}-{start}"
            rows.append({"class_id": cid, "style": style, "day": day, "start": start,
                         "minutes": minutes, "credits": 1, "capacity": 16})
    return rows


CASES = [
    ("zh-yoga-01", "lossy_parsing", "riverside", ("parse_request", 1, "parse"), "confirm_bookings",
     "parse_request drops the 'mornings only' window, so evening classes are chosen and the confirmation check rejects them."),
    ("zh-yoga-02", "unit_error", "harbour", ("compute_credits", 1, "other"), "charge_credits",
     "compute_credits sums class minutes instead of credits, so the credit charge exceeds the member's balance."),
    ("zh-yoga-03", "bad_memory_write", "riverside", ("remember_member", 1, "state"), "confirm_bookings",
     "remember_member stores the studio's default plan instead of the member's 10-pack, so no credits are charged and confirmation refuses."),
    ("zh-yoga-04", "off_by_one", "harbour", ("parse_choice", 1, "parse"), "confirm_bookings",
     "parse_choice keeps one class fewer than the model chose, so fewer classes are held than requested."),
    ("zh-yoga-05", "swallowed_error", "riverside", ("hold_spot", 3, "tool"), "confirm_bookings",
     "hold_spot swallows a class-full reply for the second chosen class and reports a pending hold, which confirmation cannot find."),
]


def policy(request):
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    if system.startswith("Extract"):
        m = re.search(r"member (M-\d+) into (\d+) (\w+) classes at (\w+) this week, (\w+) only", user)
        return json.dumps({"member": m.group(1), "count": int(m.group(2)), "style": m.group(3),
                           "studio": m.group(4), "window": m.group(5)})
    if system.startswith("Choose"):
        data = json.loads(user)
        picked, days = [], set()
        for c in data["candidates"]:
            if c["free"] > 0 and c["day"] not in days:
                picked.append(c["class_id"])
                days.add(c["day"])
            if len(picked) == data["count"]:
                break
        return "Chosen classes: " + ", ".join(picked)
    return "I can only extract requests or choose classes."


class ClassFull(Exception):
    pass


def _client(server):
    return OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


def record(key: str, fault: str | None, out, server) -> None:
    client = _client(server)
    text = INPUTS[key]
    gateway = {"calls": 0}

    @trajdebug.step(kind="input")
    def read_request(message: str) -> dict:
        return {"channel": "front-desk app", "message": message}

    @trajdebug.step(kind="llm")
    def extract_request(req: dict) -> str:
        r = client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": "Extract the booking request as JSON."},
            {"role": "user", "content": req["message"]}])
        return r.choices[0].message.content

    @trajdebug.step(kind="parse")
    def parse_request(raw: str) -> dict:
        data = json.loads(raw)
        out = {k: data[k] for k in ("member", "count", "style", "studio", "window")}
        if active("zh-yoga-01"):
            out.pop("window")
        return out

    @trajdebug.step(kind="tool")
    def load_member(member_id: str) -> dict:
        return {"member": member_id, **MEMBERS[member_id]}

    @trajdebug.step(kind="state")
    def remember_member(profile: dict) -> None:
        plan = profile["plan"]
        if active("zh-yoga-03"):
            plan = "unlimited"
        trajdebug.current_run().state["member"] = {"member": profile["member"], "plan": plan,
                                                    "credits": profile["credits"]}

    @trajdebug.step(kind="retrieval")
    def fetch_timetable(request: dict) -> list[dict]:
        return timetable(request["studio"], request["style"])

    @trajdebug.step(kind="other")
    def filter_window(rows: list[dict], request: dict) -> list[dict]:
        window = request.get("window")
        if window == "mornings":
            return [r for r in rows if r["start"] < "12:00"]
        if window == "evenings":
            return [r for r in rows if r["start"] >= "17:00"]
        return rows

    @trajdebug.step(kind="tool")
    def check_capacity(row: dict) -> dict:
        booked = 16 if row["class_id"] in FULL else 9
        return {"class_id": row["class_id"], "day": row["day"], "start": row["start"],
                "free": row["capacity"] - booked}

    @trajdebug.step(kind="llm")
    def choose_classes(request: dict, candidates: list[dict]) -> str:
        r = client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": "Choose classes on distinct days with free spots."},
            {"role": "user", "content": json.dumps({"count": request["count"], "candidates": candidates})}])
        return r.choices[0].message.content

    @trajdebug.step(kind="parse")
    def parse_choice(answer: str, request: dict) -> list[str]:
        ids = [x.strip() for x in answer.split(":", 1)[1].split(",")]
        if active("zh-yoga-04"):
            return ids[: request["count"] - 1]
        return ids[: request["count"]]

    @trajdebug.retry(attempts=3, on=(ConnectionError,))
    @trajdebug.step(kind="tool")
    def hold_spot(class_id: str, member_id: str) -> dict:
        gateway["calls"] += 1
        if gateway["calls"] == 1:
            raise ConnectionError("studio booking gateway timed out")
        try:
            if class_id in RACE:
                raise ClassFull(f"409 class {class_id} is full")
            return {"class_id": class_id, "hold": f"H-{member_id[2:]}-{gateway['calls']:02d}"}
        except ClassFull as exc:
            if active("zh-yoga-05"):
                return {"class_id": class_id, "hold": "pending"}
            return {"class_id": class_id, "hold": None, "full": str(exc)}

    @trajdebug.step(kind="other")
    def compute_credits(holds: list[dict], rows: list[dict]) -> dict:
        state = trajdebug.current_run().state["member"]
        by_id = {r["class_id"]: r for r in rows}
        if state["plan"] == "unlimited":
            return {"member": state["member"], "credits": 0}
        unit = "minutes" if active("zh-yoga-02") else "credits"
        return {"member": state["member"], "credits": sum(by_id[h["class_id"]][unit] for h in holds)}

    @trajdebug.step(kind="tool")
    def charge_credits(charge: dict) -> dict:
        bal = MEMBERS[charge["member"]]["credits"]
        if MEMBERS[charge["member"]]["plan"] == "10-pack" and charge["credits"] > bal:
            raise RuntimeError(f"402 Payment Required: {{\"error\": \"insufficient_credits\", "
                               f"\"requested\": {charge['credits']}, \"balance\": {bal}}}")
        return {"member": charge["member"], "charged": charge["credits"], "balance": bal - charge["credits"]}

    @trajdebug.step(kind="tool")
    def confirm_bookings(request: dict, holds: list[dict], receipt: dict) -> dict:
        profile = MEMBERS[request["member"]]
        problems = []
        if len(holds) != request["count"]:
            problems.append(f"{len(holds)} holds for a request of {request['count']} classes")
        for h in holds:
            if not h["hold"].startswith("H-"):
                problems.append(f"hold for {h['class_id']} not found")
            start = h["class_id"].rsplit("-", 1)[1]
            want = INPUTS_WINDOWS[request["member"]]
            if (want == "mornings") != (start < "12:00"):
                problems.append(f"class {h['class_id']} starts {start}, outside the {want} window")
        need = 0 if profile["plan"] == "unlimited" else len(holds)
        if receipt["charged"] != need:
            problems.append(f"charged {receipt['charged']} credits, {profile['plan']} plan requires {need}")
        if problems:
            raise ValueError("booking confirmation rejected: " + "; ".join(problems))
        return {"confirmed": [h["hold"] for h in holds]}

    try:
        _flow(text, out, read_request, extract_request, parse_request, load_member, remember_member,
              fetch_timetable, filter_window, check_capacity, choose_classes, parse_choice, hold_spot,
              compute_credits, charge_credits, confirm_bookings)
    except (ValueError, RuntimeError):
        pass


def _flow(text, out, read_request, extract_request, parse_request, load_member, remember_member,
          fetch_timetable, filter_window, check_capacity, choose_classes, parse_choice, hold_spot,
          compute_credits, charge_credits, confirm_bookings):
    with trajdebug.run(AGENT, path=str(out), task=text):
        req = read_request(text)
        raw = extract_request(req)
        request = parse_request(raw)
        profile = load_member(request["member"])
        remember_member(profile)
        rows = fetch_timetable(request)
        window = filter_window(rows, request)
        candidates = [check_capacity(r) for r in window[:5]]
        answer = choose_classes(request, candidates)
        chosen = parse_choice(answer, request)
        spare = [c["class_id"] for c in candidates if c["free"] > 0 and c["class_id"] not in chosen]
        holds = []
        for cid in chosen:
            h = hold_spot(cid, request["member"])
            while h["hold"] is None and spare:
                h = hold_spot(spare.pop(0), request["member"])
            holds.append(h)
        charge = compute_credits(holds, rows)
        receipt = charge_credits(charge)
        confirm_bookings(request, holds, receipt)


INPUTS_WINDOWS = {re.search(r"(M-\d+)", v).group(1): re.search(r"(\w+) only", v).group(1) for v in INPUTS.values()}
