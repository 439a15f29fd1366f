"""pilot-tug-booking: a ship agent's desk booking pilotage, towage and a mooring gang for a vessel's arrival on a
tidal river port (Humber, Immingham approach).

Route: trajdebug's own recorder, JSONL.
Shape: an input step, a particulars tool, a planning model call and its parser, a tide retriever, a UKC
computation, a model call choosing the tidal window and its parser, pilot roster and booking tools, the VTS
passage-plan tool, a tug-count router, a tug-offer fan-out (parallel operator queries in threads, one with a
timeout and a retry), one booking call per tug, a mooring-gang sub-agent (its own lookup, model call and
booking), the berth office's confirmation, a memory write, a confirmation model call, the harbour master's
check and the send.
"""

from __future__ import annotations

import json
from typing import Any

import trajdebug
from trajdebug.testing import FakeModelServer

from ._kit import dumps, system_text, text_of

NAME = "pilot-tug-booking"
ROUTE = "sdk"
DOMAIN = "ship agency on a tidal river port: pilot, tugs and mooring gang for an arrival"
SHAPE = "input, tool, llm + parse, retrieval, computation, llm + parse, 3 tools, router, parallel fan-out with retry, tool loop, sub-agent (tool, llm, tool), tool, state write, llm, final check, tool"

SWITCH: str | None = None


def _on(case: str) -> bool:
    return SWITCH == case


CHANNEL_DEPTH_CD = 8.2
MIN_UKC = 1.0
SQUAT = 0.5

VESSELS = {
    "9227259": {"name": "STENA FORERUNNER", "type": "ro-ro", "loa_m": 195.3, "beam_m": 26.7, "draft_m": 7.4,
                "gt": 21171, "bow_thruster": True},
    "9455806": {"name": "CAPE ORCHID", "type": "bulk carrier", "loa_m": 229.0, "beam_m": 32.3, "draft_m": 12.8,
                "gt": 43012, "bow_thruster": False},
    "9718442": {"name": "NORDIC PIA", "type": "product tanker", "loa_m": 200.0, "beam_m": 32.2, "draft_m": 10.9,
                "gt": 29990, "bow_thruster": False},
    "9302176": {"name": "BOW ARCHITECT", "type": "chemical tanker", "loa_m": 183.1, "beam_m": 32.2,
                "draft_m": 10.2, "gt": 30058, "bow_thruster": False},
    "9584011": {"name": "SEAWAYS HUMBER", "type": "bulk carrier", "loa_m": 243.5, "beam_m": 38.0, "draft_m": 9.8,
                "gt": 51255, "bow_thruster": False},
}

NOTICES = [
    {"imo": "9227259", "vessel": "STENA FORERUNNER", "eta": "2025-03-26T07:00", "berth": "IOH-2",
     "agent": "Humber Ship Agency", "from": "Rotterdam"},
    {"imo": "9455806", "vessel": "CAPE ORCHID", "eta": "2025-04-02T03:00", "berth": "Bulk Terminal B3",
     "agent": "Humber Ship Agency", "from": "Narvik"},
    {"imo": "9718442", "vessel": "NORDIC PIA", "eta": "2025-04-05T11:30", "berth": "Western Jetty",
     "agent": "Humber Ship Agency", "from": "Brofjorden"},
    {"imo": "9302176", "vessel": "BOW ARCHITECT", "eta": "2025-04-09T14:00", "berth": "Western Jetty",
     "agent": "Humber Ship Agency", "from": "Antwerp"},
    {"imo": "9584011", "vessel": "SEAWAYS HUMBER", "eta": "2025-04-12T09:15", "berth": "HIT-1",
     "agent": "Humber Ship Agency", "from": "Puerto Bolivar"},
]

# high waters per station and date: (time, height m above chart datum)
TIDES = {
    "Immingham": {
        "2025-03-26": [("09:12", 6.9), ("21:31", 7.2)],
        "2025-04-02": [("05:40", 6.6), ("18:03", 7.1)],
        "2025-04-05": [("13:02", 6.4), ("01:20", 6.5)],
        "2025-04-09": [("16:47", 6.8), ("04:25", 6.7)],
        "2025-04-12": [("10:58", 7.3), ("23:14", 7.0)],
    },
    "Hull King George Dock": {
        "2025-04-02": [("06:05", 7.1), ("18:28", 7.6)],
    },
}

PORT_CALLS = {  # the berth planning system's calls per vessel (the previous call first)
    "BOW ARCHITECT": [{"call": "PC-25-0318", "berth": "Eastern Jetty", "eta": "2025-02-27T06:00"},
                      {"call": "PC-25-0412", "berth": "Western Jetty", "eta": "2025-04-09T14:00"}],
}

INPUTS = [{"task": f"arrival {n['vessel']} ETA {n['eta']} {n['berth']}", "notice": n} for n in NOTICES]

CASES = [
    {"id": "pilot_tugs_at_loa_boundary", "input": 2, "switch": "loa_band", "fault_kind": "off_by_one",
     "root": {"name": "tug_requirement", "occurrence": 1}, "root_kind": "condition",
     "failure": "harbour_master_check",
     "description": "tug_requirement put NORDIC PIA, exactly 200.0 m long, in the band below 200 m and asked for "
                    "2 tugs where the port's table asks for 3."},
    {"id": "pilot_mooring_previous_call", "input": 3, "switch": "mooring_call", "fault_kind": "subagent_wrong_entity",
     "root": {"name": "mooring_gang_agent", "occurrence": 1}, "root_kind": "agent",
     "failure": "berth_allocation_confirm",
     "description": "mooring_gang_agent took BOW ARCHITECT's previous port call PC-25-0318 at Eastern Jetty and "
                    "booked the mooring gang there instead of for call PC-25-0412 at Western Jetty."},
    {"id": "pilot_tug_operator_timeout", "input": 4, "switch": "offers_partial", "fault_kind": "swallowed_error",
     "root": {"name": "collect_tug_offers", "occurrence": 1}, "root_kind": "agent",
     "failure": "harbour_master_check",
     "description": "collect_tug_offers went on without Svitzer Humber's offer after its query timed out, so only "
                    "the 2 tugs SMS Towage offered were booked for SEAWAYS HUMBER."},
    {"id": "pilot_plan_without_mooring", "input": 0, "switch": "plan_mooring", "fault_kind": "plan_error",
     "root": {"name": "plan_arrival", "occurrence": 1}, "root_kind": "llm",
     "failure": "berth_allocation_confirm",
     "description": "plan_arrival left the mooring gang out of STENA FORERUNNER's services, assuming the ro-ro's "
                    "crew would handle its lines, and the berth office refused the arrival without one."},
    {"id": "pilot_tides_other_station", "input": 1, "switch": "tide_station", "fault_kind": "wrong_retrieval",
     "root": {"name": "fetch_tide_predictions", "occurrence": 1}, "root_kind": "retrieval",
     "failure": "vts_passage_plan",
     "description": "fetch_tide_predictions returned Hull King George Dock's predictions instead of Immingham's, "
                    "so the 05:40 window looked deep enough for CAPE ORCHID's 12.8 m draft."},
]

_client: Any = None
_model = "fake-model"
_operator_calls: dict[str, int] = {}


def _minutes(hhmm: str) -> int:
    return int(hhmm[:2]) * 60 + int(hhmm[3:5])


def _hhmm(minutes: int) -> str:
    minutes %= 24 * 60
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _chat(messages: list[dict[str, Any]]) -> dict[str, Any]:
    reply = _client.chat.completions.create(model=_model, messages=messages, temperature=0)
    trajdebug.current_step().usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens,
                                   completion_tokens=reply.usage.completion_tokens)
    return reply.choices[0].message.model_dump(exclude_none=True)


def _tugs_for(loa: float) -> int:
    """The port's towage table: <150 m one tug, 150-199.9 m two, 200-249.9 m three, 250 m and over four."""
    return 1 if loa < 150 else 2 if loa < 200 else 3 if loa < 250 else 4


# ----------------------------------------------------------------------------------------------- steps


@trajdebug.step(kind="input")
def read_arrival_notice(notice: dict[str, Any]) -> dict[str, Any]:
    return {k: notice[k] for k in ("imo", "vessel", "eta", "berth", "from")}


@trajdebug.step(kind="tool")
def lookup_vessel_particulars(imo: str) -> dict[str, Any]:
    return {"imo": imo, **VESSELS[imo]}


@trajdebug.step(kind="llm")
def plan_arrival(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return _chat(messages)


@trajdebug.step(kind="parse")
def parse_service_plan(text: str) -> dict[str, Any]:
    plan = json.loads(text[text.index("{"): text.rindex("}") + 1])
    return {"services": [s.lower() for s in plan["services"]], "notes": plan.get("notes", "")}


@trajdebug.step(kind="retrieval")
def fetch_tide_predictions(query: str, date: str) -> list[dict[str, Any]]:
    station = "Immingham"
    if _on("tide_station") and date == "2025-04-02":
        station = "Hull King George Dock"  # the search ranks the upriver station first for this query
    events = TIDES[station][date]
    return [{"station": station, "date": date, "datum": "chart datum",
             "high_waters": [{"time": t, "height_m": h} for t, h in events], "score": 0.87}]


@trajdebug.step(kind="other")
def compute_ukc(vessel: dict[str, Any], predictions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for hw in predictions[0]["high_waters"]:
        lowest = round(hw["height_m"] - 0.8, 1)
        ukc = round(CHANNEL_DEPTH_CD + lowest - vessel["draft_m"] - SQUAT, 1)
        out.append({"high_water": hw["time"], "window": [_hhmm(_minutes(hw["time"]) - 90),
                                                         _hhmm(_minutes(hw["time"]) + 60)],
                    "ukc_m": ukc, "ok": ukc >= MIN_UKC})
    return out


@trajdebug.step(kind="llm")
def choose_window(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return _chat(messages)


@trajdebug.step(kind="parse")
def parse_window_choice(text: str) -> dict[str, Any]:
    choice = json.loads(text[text.index("{"): text.rindex("}") + 1])
    return {"high_water": choice["high_water"], "boarding": choice["boarding"], "ukc_m": float(choice["ukc_m"])}


@trajdebug.step(kind="tool")
def pilot_roster(date: str, boarding: str, loa_m: float) -> list[dict[str, Any]]:
    klass = 1 if loa_m >= 200 else 2
    pilots = [{"pilot": "Capt. R. Haines", "class": 1}, {"pilot": "Capt. S. Okafor", "class": 1},
              {"pilot": "Capt. L. Brandt", "class": 2}]
    return [p | {"free_from": _hhmm(_minutes(boarding) - 120)} for p in pilots if p["class"] <= klass][:2]


@trajdebug.step(kind="tool")
def book_pilot(pilot: str, vessel: str, date: str, boarding: str) -> dict[str, Any]:
    return {"pilot_job": f"PJ-{date[5:7]}{date[8:10]}-{vessel[:3]}", "pilot": pilot, "boarding": boarding,
            "boarding_point": "Spurn pilot station"}


@trajdebug.step(kind="tool")
def vts_passage_plan(vessel: dict[str, Any], date: str, high_water: str, planned_ukc_m: float) -> dict[str, Any]:
    official = TIDES["Immingham"][date]
    t, h = min(official, key=lambda e: abs(_minutes(e[0]) - _minutes(high_water)))
    ukc = round(CHANNEL_DEPTH_CD + h - 0.8 - vessel["draft_m"] - SQUAT, 1)
    if ukc < MIN_UKC:
        raise RuntimeError(f"VTS Humber: passage plan refused, UKC {ukc:.1f} m at HW {t} (Immingham) is below the "
                           f"{MIN_UKC:.1f} m minimum for {vessel['name']} at draft {vessel['draft_m']:.1f} m")
    return {"passage_plan": f"VTS-{date[5:7]}{date[8:10]}-{vessel['imo'][-4:]}", "status": "accepted",
            "ukc_m": ukc}


@trajdebug.step(kind="condition")
def tug_requirement(vessel: dict[str, Any]) -> dict[str, Any]:
    loa = vessel["loa_m"]
    bands = [(150.0, 1), (200.0, 2), (250.0, 3)]
    tugs = 4
    for limit, n in bands:
        below = loa <= limit if _on("loa_band") else loa < limit
        if below:
            tugs = n
            break
    return {"vessel": vessel["name"], "loa_m": loa, "tugs": tugs, "bollard_pull_t": 50 if tugs >= 3 else 40}


OPERATORS = {"SMS Towage": ["Tidal Kestrel", "Yorkshire Star"],
             "Svitzer Humber": ["Svitzer Ingram", "Svitzer Josephine", "Svitzer Trident"]}


@trajdebug.step(kind="tool")
def query_tug_operator(operator: str, date: str, time: str, bollard_pull_t: int) -> dict[str, Any]:
    _operator_calls[operator] = _operator_calls.get(operator, 0) + 1
    if operator == "Svitzer Humber" and date == "2025-04-12" and _operator_calls[operator] == 1:
        raise TimeoutError("Svitzer Humber booking API did not answer within 8 s")
    return {"operator": operator, "tugs": [{"tug": t, "bollard_pull_t": 55 if "Svitzer" in t else 52}
                                           for t in OPERATORS[operator]]}


@trajdebug.step(kind="agent")
def collect_tug_offers(date: str, time: str, bollard_pull_t: int) -> list[dict[str, Any]]:
    def ask(operator: str) -> dict[str, Any] | None:
        try:
            return query_tug_operator(operator, date, time, bollard_pull_t)
        except TimeoutError:
            return None

    with trajdebug.ContextThreadPoolExecutor(max_workers=2) as pool:
        answers = dict(zip(OPERATORS, pool.map(ask, list(OPERATORS))))
    offers = []
    for operator, answer in answers.items():
        if answer is None and not _on("offers_partial"):
            answer = ask(operator)  # one more try before giving up on an operator
        if answer is not None:
            offers.extend({"operator": operator, **t} for t in answer["tugs"])
    return offers


@trajdebug.step(kind="tool")
def book_tug(tug: str, operator: str, vessel: str, date: str, time: str) -> dict[str, Any]:
    return {"tug_job": f"TJ-{date[8:10]}{time[:2]}-{tug.split()[-1][:4].upper()}", "tug": tug, "operator": operator}


@trajdebug.step(kind="tool")
def find_port_call(vessel: str) -> list[dict[str, Any]]:
    notice = next(n for n in NOTICES if n["vessel"] == vessel)
    return PORT_CALLS.get(vessel, [{"call": f"PC-25-{notice['eta'][5:7]}{notice['eta'][8:10]}",
                                    "berth": notice["berth"], "eta": notice["eta"]}])


@trajdebug.step(kind="llm")
def draft_mooring_request(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return _chat(messages)


@trajdebug.step(kind="tool")
def book_mooring_gang(call: str, berth: str, date: str, time: str, gang_size: int) -> dict[str, Any]:
    return {"mooring_job": f"MG-{call[-4:]}", "call": call, "berth": berth, "date": date, "time": time,
            "gang_size": gang_size}


@trajdebug.step(kind="agent")
def mooring_gang_agent(vessel: dict[str, Any], berth: str, date: str, alongside: str) -> dict[str, Any]:
    calls = find_port_call(vessel["name"])
    if _on("mooring_call"):
        call = calls[0]
    else:
        call = next(c for c in calls if c["eta"][:10] == date)
    messages = [
        {"role": "system", "content": "ROLE mooring-request. Write the mooring gang request as JSON "
                                      "{call, berth, date, time, gang_size}. Gang of 4 under 200 m LOA, else 6."},
        {"role": "user", "content": dumps({"vessel": vessel["name"], "loa_m": vessel["loa_m"], "call": call,
                                           "date": date, "alongside": alongside})},
    ]
    answer = draft_mooring_request(messages)
    req = json.loads(answer["content"])
    return book_mooring_gang(req["call"], req["berth"], req["date"], req["time"], int(req["gang_size"]))


@trajdebug.step(kind="tool")
def berth_allocation_confirm(vessel: str, berth: str, date: str, mooring: dict[str, Any] | None) -> dict[str, Any]:
    if mooring is None:
        raise RuntimeError(f"berth office: {berth} arrival of {vessel} on {date} refused, no mooring gang booked")
    if mooring["berth"] != berth or mooring["date"] != date:
        raise RuntimeError(f"berth office: mooring gang {mooring['mooring_job']} is booked for {mooring['berth']} on "
                           f"{mooring['date']}; {vessel} is allocated {berth} on {date}")
    return {"allocation": f"BA-{date[5:7]}{date[8:10]}-{berth.split()[-1]}", "status": "confirmed"}


@trajdebug.step(kind="state")
def remember_booking(vessel: str, pilot: dict[str, Any], tugs: list[dict[str, Any]],
                     mooring: dict[str, Any] | None) -> dict[str, Any]:
    booking = {"vessel": vessel, "pilot_job": pilot["pilot_job"], "tugs": [t["tug_job"] for t in tugs],
               "mooring_job": mooring["mooring_job"] if mooring else None}
    trajdebug.current_run().state["booking"] = booking
    return booking


@trajdebug.step(kind="llm")
def compose_confirmation(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return _chat(messages)


@trajdebug.step(kind="condition")
def harbour_master_check(vessel: dict[str, Any], window: dict[str, Any]) -> dict[str, Any]:
    booking = trajdebug.current_run().state["booking"]
    need = _tugs_for(vessel["loa_m"])
    if len(booking["tugs"]) < need:
        raise ValueError(f"harbour master: {vessel['name']} (LOA {vessel['loa_m']:.1f} m) needs {need} tugs, "
                         f"{len(booking['tugs'])} booked")
    if not booking["pilot_job"]:
        raise ValueError(f"harbour master: no pilot for {vessel['name']}")
    return {"vessel": vessel["name"], "cleared": True, "high_water": window["high_water"]}


@trajdebug.step(kind="tool")
def send_confirmation(to: str, text: str) -> dict[str, Any]:
    return {"sent_to": to, "chars": len(text), "status": "queued"}


# ----------------------------------------------------------------------------------------------- the agent


def run_agent(inp: dict[str, Any]) -> None:
    notice = read_arrival_notice(inp["notice"])
    vessel = lookup_vessel_particulars(notice["imo"])
    date = notice["eta"][:10]
    plan_msg = plan_arrival([
        {"role": "system", "content": "ROLE arrival-planner. List the services this arrival needs as JSON "
                                      "{services: [...], notes}. Services: pilot, tugs, mooring, vts."},
        {"role": "user", "content": dumps({"notice": notice, "vessel": vessel})},
    ])
    plan = parse_service_plan(plan_msg["content"])
    predictions = fetch_tide_predictions(f"tidal predictions Immingham approach {date}", date)
    windows = compute_ukc(vessel, predictions)
    choice_msg = choose_window([
        {"role": "system", "content": f"ROLE window-chooser. Pick the first tidal window after the ETA with UKC of "
                                      f"at least {MIN_UKC} m. Answer JSON {{high_water, boarding, ukc_m}}; the "
                                      f"pilot boards 60 min before the window opens."},
        {"role": "user", "content": dumps({"eta": notice["eta"], "windows": windows})},
    ])
    window = parse_window_choice(choice_msg["content"])
    pilots = pilot_roster(date, window["boarding"], vessel["loa_m"])
    pilot = book_pilot(pilots[0]["pilot"], vessel["name"], date, window["boarding"])
    vts_passage_plan(vessel, date, window["high_water"], window["ukc_m"])
    tugs: list[dict[str, Any]] = []
    if "tugs" in plan["services"]:
        need = tug_requirement(vessel)
        offers = collect_tug_offers(date, window["high_water"], need["bollard_pull_t"])
        for offer in offers[: need["tugs"]]:
            tugs.append(book_tug(offer["tug"], offer["operator"], vessel["name"], date, window["high_water"]))
    mooring = None
    if "mooring" in plan["services"]:
        alongside = _hhmm(_minutes(window["high_water"]) + 50)
        mooring = mooring_gang_agent(vessel, notice["berth"], date, alongside)
    berth_allocation_confirm(vessel["name"], notice["berth"], date, mooring)
    remember_booking(vessel["name"], pilot, tugs, mooring)
    letter = compose_confirmation([
        {"role": "system", "content": "ROLE confirmation-writer. Write a short confirmation to the master."},
        {"role": "user", "content": dumps({"vessel": vessel["name"], "pilot": pilot, "tugs": tugs,
                                           "mooring": mooring, "window": window})},
    ])
    harbour_master_check(vessel, window)
    send_confirmation(f"master@{vessel['name'].lower().replace(' ', '-')}.example", letter["content"])


def record(inp: dict[str, Any], path: str, server: FakeModelServer) -> None:
    global _client, _model
    from openai import OpenAI

    if _client is None or str(_client.base_url).rstrip("/") != server.base_url.rstrip("/"):
        _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _model = server.model
    _operator_calls.clear()
    try:
        with trajdebug.run(NAME, task=inp["task"], path=path):
            run_agent(inp)
    except Exception:
        pass


# ----------------------------------------------------------------------------------------------- the model


def brain(request: Any) -> str:
    messages = request.body["messages"]
    role = system_text(messages)
    data = json.loads(text_of(messages[-1]))
    if role.startswith("ROLE arrival-planner"):
        vessel = data["vessel"]
        services = ["pilot", "vts", "tugs", "mooring"]
        notes = f"{vessel['type']}, LOA {vessel['loa_m']} m, draft {vessel['draft_m']} m"
        if _on("plan_mooring") and vessel["type"] == "ro-ro":
            services = ["pilot", "vts", "tugs"]
            notes += "; ro-ro with bow thruster, ship's crew runs the lines at the linkspan"
        return f"Services for {vessel['name']}:\n" + json.dumps({"services": services, "notes": notes})
    if role.startswith("ROLE window-chooser"):
        eta = _minutes(data["eta"][11:16])
        ok = [w for w in data["windows"] if w["ok"]]
        ok.sort(key=lambda w: (_minutes(w["window"][0]) - eta) % (24 * 60))
        w = ok[0]
        boarding = _hhmm(_minutes(w["window"][0]) - 60)
        return json.dumps({"high_water": w["high_water"], "boarding": boarding, "ukc_m": w["ukc_m"]})
    if role.startswith("ROLE mooring-request"):
        call = data["call"]
        return json.dumps({"call": call["call"], "berth": call["berth"], "date": data["date"],
                           "time": data["alongside"], "gang_size": 4 if data["loa_m"] < 200 else 6})
    if role.startswith("ROLE confirmation-writer"):
        tugs = ", ".join(t["tug"] for t in data["tugs"]) or "none"
        return (f"Master, {data['vessel']}: pilot {data['pilot']['pilot']} boards at {data['pilot']['boarding']} "
                f"at the Spurn station for HW {data['window']['high_water']}. Tugs: {tugs}. "
                f"Mooring: {data['mooring']['mooring_job'] if data['mooring'] else 'not booked'}.")
    return "No answer."
