"""marina-berths: a marina dock office assigning visitor berths and billing them (OpenAI Agents SDK, JSONL).

Two agents on the Responses API: the dockmaster (states a plan, then arrivals, boat specs in parallel, the
tide table, slip searches in parallel, slip assignments) hands off to harbour billing (rate cards in
parallel, one invoice per booking). The harbour system and the invoicing system refuse what they cannot
honour, which ends `Runner.run` with the tool's error.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from ._common import Env, called, last_user, read_value, run_recorded_sdk, sdk_loop, system_text, tool_results

NAME = "marina-berths"
ROUTE = "openai_agents"
DOMAIN = "marina dock office: visitor berths and harbour dues"
SHAPE = "Agents SDK (Responses API): dockmaster agent with a stated plan, arrivals tool, parallel boat-spec calls, tide tool, parallel slip searches, slip assignments; hand-off to a billing agent with parallel rate-card calls and one invoice per booking"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


def _slips() -> list[dict]:
    out = []
    for i in range(1, 5):
        out.append({"slip": f"A-{i:02d}", "dock": "A", "length_m": 10.0, "max_beam_m": 3.6, "charted_m": 1.2})
    for i in range(1, 7):
        out.append({"slip": f"B-{i:02d}", "dock": "B", "length_m": 12.0, "max_beam_m": 4.2,
                    "charted_m": 0.9 if i >= 5 else 1.6})
    for i in range(1, 5):
        out.append({"slip": f"C-{i:02d}", "dock": "C", "length_m": 16.0, "max_beam_m": 5.0, "charted_m": 2.2})
    for i in range(1, 4):
        out.append({"slip": f"D-{i:02d}", "dock": "D", "length_m": 14.0, "max_beam_m": 8.0, "charted_m": 1.5})
    return out


SLIPS = _slips()
OCCUPIED = {"2025-07-11": {"B-01", "B-02", "B-03", "B-04", "C-01"}, "2025-07-12": {"A-01", "D-01"},
            "2025-07-13": {"C-01", "C-02"}, "2025-07-14": {"A-02", "B-03"}, "2025-07-15": {"D-02"}}

BOATS = {
    "HULL-GB-4471": {"name": "Aurora", "type": "sail", "loa_m": 13.4, "beam_m": 4.3, "draft_m": 1.9},
    "HULL-GB-5120": {"name": "Kestrel", "type": "motor", "loa_m": 12.8, "beam_m": 4.1, "draft_m": 1.1},
    "HULL-FR-0932": {"name": "Selkie", "type": "catamaran", "loa_m": 12.2, "beam_m": 6.9, "draft_m": 1.2},
    "HULL-GB-3307": {"name": "Bluebell", "type": "sail", "loa_m": 9.6, "beam_m": 3.3, "draft_m": 1.5},
    "HULL-NL-7781": {"name": "Tern", "type": "sail", "loa_m": 11.3, "beam_m": 3.8, "draft_m": 1.7},
    "HULL-GB-6650": {"name": "Halcyon", "type": "motor", "loa_m": 15.2, "beam_m": 4.8, "draft_m": 1.3},
    "HULL-DE-2214": {"name": "Wavedancer", "type": "catamaran", "loa_m": 13.1, "beam_m": 7.2, "draft_m": 1.1},
    "HULL-GB-9012": {"name": "Puffin", "type": "sail", "loa_m": 8.9, "beam_m": 3.1, "draft_m": 1.4},
}

ARRIVALS: dict[str, list[dict]] = {
    "2025-07-11": [
        {"booking_ref": "MB-2231", "hull_id": "HULL-GB-4471", "boat": "Aurora", "eta": "18:30", "nights": 2},
        {"booking_ref": "MB-2234", "hull_id": "HULL-GB-5120", "boat": "Kestrel", "eta": "19:10", "nights": 1},
        {"booking_ref": "MB-2238", "hull_id": "HULL-GB-3307", "boat": "Bluebell", "eta": "21:15", "nights": 1}],
    "2025-07-12": [
        {"booking_ref": "MB-2241", "hull_id": "HULL-FR-0932", "boat": "Selkie", "eta": "17:40", "nights": 3},
        {"booking_ref": "MB-2243", "hull_id": "HULL-NL-7781", "boat": "Tern", "eta": "18:20", "nights": 2}],
    "2025-07-13": [
        {"booking_ref": "MB-2246", "hull_id": "HULL-GB-6650", "boat": "Halcyon", "eta": "16:50", "nights": 2},
        {"booking_ref": "MB-2248", "hull_id": "HULL-GB-9012", "boat": "Puffin", "eta": "19:30", "nights": 1},
        {"booking_ref": "MB-2250", "hull_id": "HULL-DE-2214", "boat": "Wavedancer", "eta": "20:40", "nights": 2}],
    "2025-07-14": [
        {"booking_ref": "MB-2253", "hull_id": "HULL-GB-5120", "boat": "Kestrel", "eta": "18:00", "nights": 2},
        {"booking_ref": "MB-2255", "hull_id": "HULL-GB-3307", "boat": "Bluebell", "eta": "18:45", "nights": 1}],
    "2025-07-15": [
        {"booking_ref": "MB-2258", "hull_id": "HULL-NL-7781", "boat": "Tern", "eta": "17:15", "nights": 1},
        {"booking_ref": "MB-2260", "hull_id": "HULL-FR-0932", "boat": "Selkie", "eta": "19:05", "nights": 2}],
}

# low waters (height above chart datum, m): springs around the 11th-13th, neaps by the 17th
LOW_WATERS = {
    "2025-07-08": [("04:10", 1.2), ("16:35", 1.1)], "2025-07-09": [("04:55", 1.0), ("17:20", 1.0)],
    "2025-07-10": [("05:40", 0.8), ("18:05", 0.7)], "2025-07-11": [("06:20", 0.5), ("18:45", 0.4)],
    "2025-07-12": [("07:00", 0.3), ("19:25", 0.3)], "2025-07-13": [("07:40", 0.3), ("20:05", 0.4)],
    "2025-07-14": [("08:20", 0.5), ("20:45", 0.6)], "2025-07-15": [("09:05", 0.7), ("21:30", 0.8)],
    "2025-07-16": [("09:50", 0.9), ("22:20", 1.0)], "2025-07-17": [("10:40", 1.1), ("23:15", 1.2)],
}

RATES = {"sail": 3.20, "motor": 3.50, "multihull": 4.80}

INPUTS: list[dict[str, Any]] = [
    {"request_id": "DO-0711", "date": "2025-07-11", "office": "Port Hallow"},
    {"request_id": "DO-0712", "date": "2025-07-12", "office": "Port Hallow"},
    {"request_id": "DO-0713", "date": "2025-07-13", "office": "Port Hallow"},
    {"request_id": "DO-0714", "date": "2025-07-14", "office": "Port Hallow"},
    {"request_id": "DO-0715", "date": "2025-07-15", "office": "Port Hallow"},
]

_assigned: dict[str, dict] = {}
_today: dict[str, str] = {}


def _days(start: str, n: int) -> list[str]:
    d = dt.date.fromisoformat(start)
    return [(d + dt.timedelta(days=i)).isoformat() for i in range(n)]


def _lowest(dates: list[str]) -> float:
    return min(h for d in dates for _, h in LOW_WATERS[d])


# --- tools ---------------------------------------------------------------------------------------------------


def _tools() -> dict[str, Any]:
    from agents import function_tool

    @function_tool
    def arrivals(date: str) -> list:
        """Visiting boats booked to arrive on a date."""
        return [{**a, "type": BOATS[a["hull_id"]]["type"], "loa_m": BOATS[a["hull_id"]]["loa_m"]} for a in ARRIVALS[date]]

    @function_tool
    def boat_specs(hull_id: str) -> dict:
        """Registered dimensions of a hull: length overall, beam and draft in metres, and its type."""
        return {"hull_id": hull_id, **BOATS[hull_id]}

    @function_tool
    def tide_table(from_date: str, to_date: str) -> dict:
        """Predicted low waters (height above chart datum) for Port Hallow between two dates."""
        span = (dt.date.fromisoformat(to_date) - dt.date.fromisoformat(from_date)).days + 1
        dates = _days(from_date, span)
        issued = (dt.date.fromisoformat(from_date) - dt.timedelta(days=1)).isoformat()
        if _on("tide_cache"):
            dates = _days((dt.date.fromisoformat(from_date) - dt.timedelta(days=3)).isoformat(), span)
            issued = (dt.date.fromisoformat(from_date) - dt.timedelta(days=4)).isoformat()
        return {"port": "Port Hallow", "issued": issued, "days": [
            {"date": d, "low_waters": [{"t": t, "h_m": h} for t, h in LOW_WATERS[d]]} for d in dates]}

    @function_tool
    def slip_availability(min_length_m: float, min_beam_m: float, min_charted_depth_m: float, arrive: str, nights: int) -> list:
        """Free visitor slips for the whole stay that take at least the given length, beam and charted depth,
        smallest first."""
        free = [s for s in SLIPS if s["slip"] not in OCCUPIED.get(arrive, set())
                and s["slip"] not in {a["slip"] for a in _assigned.values()}
                and s["length_m"] >= min_length_m and s["max_beam_m"] >= min_beam_m
                and s["charted_m"] >= min_charted_depth_m]
        return sorted(free, key=lambda s: (s["length_m"], s["max_beam_m"], s["charted_m"]))[:3]

    @function_tool(failure_error_function=None)
    def assign_slip(booking_ref: str, hull_id: str, slip: str, eta: str, nights: int) -> dict:
        """Assign a visitor slip in the harbour system (it checks length, beam and depth at low water)."""
        b = BOATS[hull_id]
        s = next(x for x in SLIPS if x["slip"] == slip)
        if b["loa_m"] > s["length_m"]:
            raise ValueError(f"harbour system: {b['name']} (LOA {b['loa_m']} m) is longer than slip {slip} ({s['length_m']} m)")
        if b["beam_m"] > s["max_beam_m"]:
            raise ValueError(f"harbour system: {b['name']} (beam {b['beam_m']} m) is too wide for slip {slip}")
        stay = _days(_today["date"], nights + 1)
        low = _lowest(stay)
        if s["charted_m"] + low < b["draft_m"] + 0.2:
            raise ValueError(f"harbour system: slip {slip} has {s['charted_m'] + low:.1f} m at the {low} m low water "
                             f"during the stay; {b['name']} draws {b['draft_m']} m")
        _assigned[booking_ref] = {"slip": slip, "hull_id": hull_id}
        return {"booking_ref": booking_ref, "boat": b["name"], "slip": slip, "eta": eta, "nights": nights,
                "status": "assigned"}

    @function_tool
    def rate_card(boat_type: str, loa_m: float, date: str) -> dict:
        """Harbour dues per metre per night for a boat type in the season of a date."""
        table = dict(RATES)
        key = boat_type if _on("rate_key") else {"catamaran": "multihull"}.get(boat_type, boat_type)
        try:
            rate = table[key]
        except KeyError:
            rate = 0.0
        return {"boat_type": boat_type, "season": "high", "rate_per_m_night": rate, "currency": "GBP"}

    @function_tool(failure_error_function=None)
    def raise_invoice(booking_ref: str, slip: str, arrive: str, nights: int, amount_gbp: float) -> dict:
        """Raise the harbour dues invoice for a booking."""
        if booking_ref not in _assigned:
            raise LookupError(f"invoicing: no slip assignment for {booking_ref}; cannot invoice")
        try:
            when = dt.datetime.fromisoformat(arrive)
        except ValueError:
            raise ValueError(f"invoicing: arrive {arrive!r} for {booking_ref} is not an ISO date-time") from None
        if amount_gbp <= 0:
            raise ValueError(f"invoicing: {booking_ref} total {amount_gbp:.2f} GBP for {nights} nights refused")
        return {"invoice": f"INV-{booking_ref[3:]}-{when:%m%d}", "booking_ref": booking_ref, "amount_gbp": amount_gbp,
                "status": "issued"}

    return {k: v for k, v in locals().items() if k in {
        "arrivals", "boat_specs", "tide_table", "slip_availability", "assign_slip", "rate_card", "raise_invoice"}}


DOCKMASTER = ("You are the dockmaster of Port Hallow marina. First state your plan in one line, then work through "
              "it with the tools: arrivals, boat specs, tides, slip searches, assignments. Then hand off to harbour "
              "billing.")
BILLING = "You are harbour billing. Look up the rate card for every booking and raise one invoice per booking."

_agents: dict[str, Any] = {}


def _agent(env: Env) -> Any:
    if env.base_url in _agents:
        return _agents[env.base_url]
    from agents import Agent
    from agents.models.openai_responses import OpenAIResponsesModel

    model = OpenAIResponsesModel(model=env.model, openai_client=sdk_loop().client(env))
    t = _tools()
    billing = Agent(name="harbour_billing", instructions=BILLING, model=model, tools=[t["rate_card"], t["raise_invoice"]])
    dock = Agent(name="dockmaster", instructions=DOCKMASTER, model=model,
                 tools=[t["arrivals"], t["boat_specs"], t["tide_table"], t["slip_availability"], t["assign_slip"]],
                 handoffs=[billing])
    _agents[env.base_url] = dock
    return dock


def run(inp: dict, out: Path, env: Env) -> None:
    from agents import RunConfig, Runner

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    _assigned.clear()
    _today["date"] = inp["date"]
    processor = TrajdebugProcessor(path=str(out), name=NAME, task=f"visitor berths {inp['date']}")
    agent = _agent(env)
    run_recorded_sdk(lambda: Runner.run(
        agent, f"Berth today's visiting boats. Date: {inp['date']}. Request {inp['request_id']}.",
        run_config=RunConfig(workflow_name="dock office", group_id=inp["request_id"]), max_turns=12), processor)


# --- the model ---------------------------------------------------------------------------------------------


def _outputs(request: Any, name: str) -> list:
    return [read_value(text) for n, text in tool_results(request) if n == name]


def _plan_text(request: Any) -> str:
    for item in request.body.get("input") or ():
        if isinstance(item, dict) and item.get("role") == "assistant" and item.get("type", "message") == "message":
            content = item.get("content")
            text = content if isinstance(content, str) else "".join(
                p.get("text", "") for p in content or () if isinstance(p, dict))
            if text.startswith("Plan:"):
                return text
    return ""


def brain(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    system = system_text(request)
    user = last_user(request)
    date = user.split("Date: ", 1)[1][:10] if "Date: " in user else ""
    done = {n for n, _ in called(request)}
    if system.startswith("You are the dockmaster"):
        if "arrivals" not in done:
            plan = ("Plan: list arrivals, check each boat's specs and the tides for the stay, find and assign a slip "
                    "for every arriving boat, then hand off to billing.")
            if _on("late_plan"):
                plan = ("Plan: list arrivals, check specs and tides, assign slips for boats arriving before 20:00 "
                        "(later boats raft on the waiting pontoon tonight), then hand off to billing.")
            return Reply(text=plan, tool_calls=(tool_call("arrivals", {"date": date}),))
        arrivals = _outputs(request, "arrivals")[0]
        plan = _plan_text(request)
        if "before 20:00" in plan:
            arrivals = [a for a in arrivals if a["eta"] < "20:00"]
        if "boat_specs" not in done:
            return Reply(tool_calls=tuple(tool_call("boat_specs", {"hull_id": a["hull_id"]}) for a in arrivals))
        specs = {s["hull_id"]: s for s in _outputs(request, "boat_specs")}
        longest = max(a["nights"] for a in arrivals)
        if "tide_table" not in done:
            end = _days(date, longest + 1)[-1]
            return Reply(tool_calls=(tool_call("tide_table", {"from_date": date, "to_date": end}),))
        tides = _outputs(request, "tide_table")[0]
        low = min(lw["h_m"] for d in tides["days"] for lw in d["low_waters"])
        if "slip_availability" not in done:
            calls = []
            for a in arrivals:
                s = specs[a["hull_id"]]
                length = s["beam_m"] if _on("length_arg") and s["name"] == "Kestrel" else s["loa_m"]
                calls.append(tool_call("slip_availability", {
                    "min_length_m": length, "min_beam_m": s["beam_m"],
                    "min_charted_depth_m": round(max(0.0, s["draft_m"] + 0.2 - low), 1),
                    "arrive": date, "nights": a["nights"]}))
            return Reply(tool_calls=tuple(calls))
        if "assign_slip" not in done:
            found = _outputs(request, "slip_availability")
            calls, taken = [], set()
            for a, options in zip(arrivals, found):
                pick = next(o for o in options if o["slip"] not in taken)
                taken.add(pick["slip"])
                eta = f"{date}T{a['eta']}"
                if _on("eta_style"):
                    h, m = (int(x) for x in a["eta"].split(":"))
                    eta = f"{h - 12 if h > 12 else h}:{m:02d} pm"
                calls.append(tool_call("assign_slip", {"booking_ref": a["booking_ref"], "hull_id": a["hull_id"],
                                                       "slip": pick["slip"], "eta": eta, "nights": a["nights"]}))
            return Reply(tool_calls=tuple(calls))
        return Reply(tool_calls=(tool_call("transfer_to_harbour_billing", {}),))
    if system.startswith("You are harbour billing"):
        arrivals = _outputs(request, "arrivals")[0]
        assigned = {a["booking_ref"]: a for a in _outputs(request, "assign_slip")}
        if "rate_card" not in done:
            return Reply(tool_calls=tuple(
                tool_call("rate_card", {"boat_type": a["type"], "loa_m": a["loa_m"], "date": date}) for a in arrivals))
        if "raise_invoice" not in done:
            rates = _outputs(request, "rate_card")
            calls = []
            for a, r in zip(arrivals, rates):
                got = assigned.get(a["booking_ref"], {})
                calls.append(tool_call("raise_invoice", {
                    "booking_ref": a["booking_ref"], "slip": got.get("slip", ""),
                    "arrive": got.get("eta", f"{date}T{a['eta']}"), "nights": a["nights"],
                    "amount_gbp": round(r["rate_per_m_night"] * a["loa_m"] * a["nights"], 2)}))
            return Reply(tool_calls=tuple(calls))
        return "Invoices issued for every visiting boat."
    return "I work the dock office only."
