"""Sign-language interpreter booking (OpenAI Agents SDK: coordinator, availability agent as a tool, hand-off to confirmation)."""
from __future__ import annotations

import json

from .kit import active
from .routes import agent_history, agents_model

NAME = "interpreter-booking"
ROUTE = "openai_agents"
DOMAIN = "sign-language interpreter booking"
SHAPE = "coordinator agent (request, search, availability agent-as-tool per candidate, fee) -> hand-off -> confirmation agent (send) | video relay agent"


class ConfirmationRejected(Exception):
    pass


Rejected = ConfirmationRejected

INTERPRETERS = {
    "INT-14": {"name": "Sam Hurst", "language": "BSL", "region": "Leeds", "specialisms": ["legal", "education"], "rate": 38.0, "leave": []},
    "INT-21": {"name": "Dana Price", "language": "BSL", "region": "Leeds", "specialisms": ["medical", "mental health"], "rate": 42.0,
               "leave": ["2026-03-12"]},
    "INT-22": {"name": "Ola Ade", "language": "BSL", "region": "Leeds", "specialisms": ["medical"], "rate": 45.0, "leave": []},
    "INT-30": {"name": "Kim Lee", "language": "BSL", "region": "York", "specialisms": ["medical", "legal"], "rate": 40.0, "leave": []},
    "INT-31": {"name": "Raj Gill", "language": "BSL", "region": "Sheffield", "specialisms": ["medical", "legal"], "rate": 36.0, "leave": []},
    "INT-40": {"name": "Fern Hall", "language": "BSL", "region": "Leeds", "specialisms": ["education"], "rate": 35.0, "leave": []},
    "INT-50": {"name": "Cara Nolan", "language": "ISL", "region": "Leeds", "specialisms": ["legal"], "rate": 44.0, "leave": []},
}
TRAVEL = {("Leeds", "Leeds"): 20, ("York", "York"): 15, ("Leeds", "York"): 45, ("York", "Leeds"): 45,
          ("Sheffield", "York"): 95, ("Sheffield", "Sheffield"): 20, ("Sheffield", "Leeds"): 60, ("Leeds", "Sheffield"): 60}


def _r(ref, client, lang, date, start, mins, venue, region, home, setting, budget):
    return {"ref": ref, "client": client, "language": lang, "date": date, "start": start, "duration_min": mins,
            "venue": venue, "venue_region": region, "client_home": home, "setting": setting, "mode": "in-person",
            "budget_gbp": budget}


INPUTS = {
    "leeds": _r("LR-88", "Ms A. Byrne", "BSL", "2026-03-12", "09:00", 90, "St James's Hospital, Leeds", "Leeds", "Leeds",
                "medical", 150.0),
    "york": _r("LR-93", "Mr D. Shah", "BSL", "2026-03-18", "14:00", 60, "York Hospital", "York", "Sheffield", "medical", 120.0),
    "r1": _r("LR-70", "Mrs P. Owusu", "BSL", "2026-03-02", "10:00", 120, "Leeds Crown Court", "Leeds", "Leeds", "legal", 200.0),
    "r2": _r("LR-74", "Mr T. Walsh", "BSL", "2026-03-05", "11:00", 60, "York Hospital", "York", "York", "medical", 120.0),
    "r3": _r("LR-79", "Ms R. Khan", "BSL", "2026-03-09", "13:30", 90, "Park View School, Leeds", "Leeds", "Leeds", "education", 150.0),
    "r4": _r("LR-81", "Mr G. Ross", "BSL", "2026-03-12", "15:00", 60, "Leeds General Infirmary", "Leeds", "Leeds", "medical", 150.0),
}
REFS = ["r1", "r2", "r3", "r4"]

_GEN = "generation scripted-planner"
CASES = [
    dict(id="zb_interp_1", fault="in1", kind="truncated_result", input="leeds", root=("search_interpreters", 1),
         failure=("send_confirmation", 1),
         description="The interpreter search returns only its first two rows, none with medical registration, and the coordinator books from them."),
    dict(id="zb_interp_2", fault="in2", kind="tool_ignores_argument", input="leeds", root=("check_availability", 1),
         failure=("send_confirmation", 1),
         description="The availability service ignores the date and answers for today, so an interpreter on leave looks free."),
    dict(id="zb_interp_3", fault="in3", kind="unit_error", input="york", root=(_GEN, 9),
         failure=("send_confirmation", 1),
         description="The confirmation model passes the appointment length in hours where the agency's API takes minutes."),
    dict(id="zb_interp_4", fault="in4", kind="wrong_tool_args", input="york", root=(_GEN, 2),
         failure=("send_confirmation", 1),
         description="The coordinator searches the client's home region instead of the venue's, and books an interpreter too far away."),
    dict(id="zb_interp_5", fault="in5", kind="wrong_routing", input="york", root=(_GEN, 8),
         failure=("book_video_relay", 1),
         description="The coordinator hands an in-person booking to the video relay agent instead of confirmation."),
]


def task(inp: dict) -> str:
    return f"book a {inp['language']} interpreter for request {inp['ref']}"


def _req(text: str) -> dict:
    return next(v for v in INPUTS.values() if v["ref"] in text)


def _call(name, arguments):
    from trajdebug.testing import Reply, tool_call

    return Reply(tool_calls=(tool_call(name, arguments),))


def policy(request):
    system, done = agent_history(request)
    names = [d[0] for d in done]
    res = {d[0]: d[2] for d in done}
    msgs = request.body["messages"]
    first_user = next(m["content"] for m in msgs if m["role"] == "user")
    if "ROLE: availability" in system:
        iid, date, venue = first_user.split("|")[1:4]
        if "check_availability" not in names:
            return _call("check_availability", {"interpreter_id": iid, "date": date})
        if "get_travel_time" not in names:
            return _call("get_travel_time", {"interpreter_id": iid, "venue_region": venue})
        return json.dumps({"interpreter": iid, "available": res["check_availability"]["available"],
                           "travel_min": res["get_travel_time"]["minutes"]})
    req = _req(first_user)
    if "ROLE: coordinator" in system:
        if "get_request" not in names:
            return _call("get_request", {"ref": req["ref"]})
        if "search_interpreters" not in names:
            region = req["client_home"] if active("in4") else req["venue_region"]
            return _call("search_interpreters", {"language": req["language"], "region": region})
        found = res["search_interpreters"]["results"]
        fit = [x for x in found if req["setting"] in x["specialisms"]] or found
        checked = [d[2] for d in done if d[0] == "availability_agent"]
        ok = next((c for c in checked if isinstance(c, dict) and c.get("available")), None)
        if ok is None:
            tried = {c["interpreter"] for c in checked if isinstance(c, dict)}
            nxt = next(x for x in fit if x["id"] not in tried)
            return _call("availability_agent", {"input": f"CHECK|{nxt['id']}|{req['date']}|{req['venue_region']}"})
        if "quote_fee" not in names:
            return _call("quote_fee", {"interpreter_id": ok["interpreter"], "duration_min": req["duration_min"],
                                       "travel_min": ok["travel_min"]})
        return _call("transfer_to_video_relay_agent" if active("in5") else "transfer_to_confirmation_agent", {})
    if "ROLE: confirmation" in system or "ROLE: video" in system:
        checked = [d[2] for d in done if d[0] == "availability_agent"]
        ok = next(c for c in checked if isinstance(c, dict) and c.get("available"))
        tool = "book_video_relay" if "ROLE: video" in system else "send_confirmation"
        if tool not in names:
            hours = req["duration_min"] // 60 if active("in3") else req["duration_min"]
            return _call(tool, {"ref": req["ref"], "interpreter_id": ok["interpreter"], "travel_min": ok["travel_min"],
                                "duration_min": hours, "fee_gbp": res["quote_fee"]["fee_gbp"]})
        return f"Request {req['ref']} confirmed with {ok['interpreter']}."
    raise ValueError("unknown role")


def build_agents(client, inp: dict):
    from agents import Agent, function_tool

    model = agents_model(client)

    @function_tool
    def get_request(ref: str) -> dict:
        """The booking request."""
        r = _req(ref)
        return {k: v for k, v in r.items() if k != "budget_gbp"}

    @function_tool
    def search_interpreters(language: str, region: str) -> dict:
        """Registered interpreters for a language in a region, cheapest first."""
        rows = sorted(({"id": k, **{f: v[f] for f in ("name", "language", "region", "specialisms", "rate")}}
                       for k, v in INTERPRETERS.items() if v["language"] == language and v["region"] == region),
                      key=lambda x: x["rate"])
        if active("in1"):
            rows = rows[:2]
        return {"language": language, "region": region, "results": rows}

    @function_tool
    def check_availability(interpreter_id: str, date: str) -> dict:
        """Whether an interpreter is free on a date."""
        day = "2026-03-01" if active("in2") else date
        return {"interpreter_id": interpreter_id, "date": date, "available": day not in INTERPRETERS[interpreter_id]["leave"]}

    @function_tool
    def get_travel_time(interpreter_id: str, venue_region: str) -> dict:
        """Travel time from the interpreter's base to the venue."""
        return {"interpreter_id": interpreter_id, "minutes": TRAVEL[(INTERPRETERS[interpreter_id]["region"], venue_region)]}

    @function_tool
    def quote_fee(interpreter_id: str, duration_min: int, travel_min: int) -> dict:
        """Fee for a booking: hourly rate for the session plus half rate for travel."""
        rate = INTERPRETERS[interpreter_id]["rate"]
        hours = duration_min / 60
        return {"interpreter_id": interpreter_id, "fee_gbp": round(rate * hours + rate * 0.5 * travel_min / 60, 2)}

    @function_tool(failure_error_function=None)
    def send_confirmation(ref: str, interpreter_id: str, travel_min: int, duration_min: int, fee_gbp: float) -> dict:
        """Confirm the booking with the client and the interpreter (the agency's system validates it)."""
        r = _req(ref)
        it = INTERPRETERS[interpreter_id]
        if it["language"] != r["language"]:
            raise ConfirmationRejected(f"422 Unprocessable Entity: {interpreter_id} is registered for {it['language']}, "
                                       f"request {ref} is for {r['language']}")
        if r["setting"] not in it["specialisms"]:
            raise ConfirmationRejected(f"422 Unprocessable Entity: request {ref} is a {r['setting']} appointment; "
                                       f"{interpreter_id} holds {', '.join(it['specialisms'])} registration only")
        if r["date"] in it["leave"]:
            raise ConfirmationRejected(f"409 Conflict: {interpreter_id} ({it['name']}) is on leave on {r['date']}")
        actual = TRAVEL[(it["region"], r["venue_region"])]
        if actual > 90:
            raise ConfirmationRejected(f"422 Unprocessable Entity: travel time {actual} min from {it['region']} exceeds "
                                       "the 90 min limit for in-person bookings")
        if duration_min < r["duration_min"]:
            raise ConfirmationRejected(f"422 Unprocessable Entity: booked duration {duration_min} min does not cover the "
                                       f"{r['duration_min']} min appointment {ref}")
        if fee_gbp > r["budget_gbp"]:
            raise ConfirmationRejected(f"402 Payment Required: fee GBP {fee_gbp:,.2f} exceeds the authorised budget "
                                       f"GBP {r['budget_gbp']:,.2f} for {ref}")
        return {"status": 201, "confirmation": f"{ref}-{interpreter_id}"}

    @function_tool(failure_error_function=None)
    def book_video_relay(ref: str, interpreter_id: str, travel_min: int, duration_min: int, fee_gbp: float) -> dict:
        """Book a remote video relay session."""
        r = _req(ref)
        if r["mode"] == "in-person":
            raise ConfirmationRejected(f"400 Bad Request: request {ref} is for in-person interpreting at {r['venue']}; "
                                       "a video relay session cannot be booked for it")
        return {"status": 201, "session": f"VRS-{ref}"}

    availability = Agent(name="availability_checker", instructions="ROLE: availability. Check one interpreter.",
                         tools=[check_availability, get_travel_time], model=model)
    confirmation = Agent(name="confirmation_agent", instructions="ROLE: confirmation. Confirm in-person bookings.",
                         tools=[send_confirmation], model=model)
    video = Agent(name="video_relay_agent", instructions="ROLE: video. Book remote video relay sessions.",
                  tools=[book_video_relay], model=model)
    return Agent(name="booking_coordinator", instructions="ROLE: coordinator. Book sign-language interpreters.",
                 tools=[get_request, search_interpreters, quote_fee,
                        availability.as_tool(tool_name="availability_agent", tool_description="Check one interpreter")],
                 handoffs=[confirmation, video], model=model)
