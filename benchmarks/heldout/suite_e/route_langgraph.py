"""Route 1: LangGraph graphs on ChatOpenAI against the scripted model server, recorded by TrajdebugTracer."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from common import Agent, Case
from fakellm import ScriptedModel, Turn, call, last_result, messages, say, text_of
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from trajdebug.integrations.langchain import TrajdebugTracer


FAULT: str | None = None
_SERVER: ScriptedModel | None = None


def on(name: str) -> bool:
    return FAULT == name


def server() -> ScriptedModel:
    global _SERVER
    if _SERVER is None:
        _SERVER = ScriptedModel().__enter__()
    return _SERVER


def chat_model() -> ChatOpenAI:
    return ChatOpenAI(base_url=server().base_url, api_key="sk-suite-e-placeholder", model="gpt-4o-mini",
                      temperature=0, max_retries=0, timeout=20)


def find_json(body: dict, prefix: str) -> dict:
    for m in messages(body):
        t = text_of(m)
        if prefix in t:
            return json.loads(t.split(prefix, 1)[1].strip().splitlines()[0])
    raise KeyError(prefix)


def run_graph(graph: Any, name: str, task: str, inputs: dict, brain: Any, fault: str | None, path: Path) -> None:
    global FAULT
    FAULT = fault
    server().brain = brain
    tracer = TrajdebugTracer(path=str(path), name=name, task=task)
    try:
        graph.invoke(inputs, config={"callbacks": [tracer], "recursion_limit": 40})
    except (ValueError, RuntimeError, LookupError):
        pass
    finally:
        FAULT = None


# =====================================================================================
# A1  Homeowners underwriting: submission -> property record, base rate -> premium -> referral
# =====================================================================================

PARCELS = {
    "PCL-40781": {"owner": "Dana Whitfield", "construction": "masonry", "year_built": 1998},
    "PCL-40718": {"owner": "Rafael Okafor", "construction": "frame", "year_built": 1961},
    "PCL-22950": {"owner": "June Albright", "construction": "frame", "year_built": 2011},
    "PCL-31177": {"owner": "Ivo Petrov", "construction": "masonry", "year_built": 1987},
    "PCL-58803": {"owner": "Carmen Soto", "construction": "fire-resistive", "year_built": 2016},
    "PCL-60412": {"owner": "Owen Pratt", "construction": "frame", "year_built": 1979},
    "PCL-73320": {"owner": "Noor Haddad", "construction": "masonry", "year_built": 2004},
    "PCL-19046": {"owner": "Greta Lindqvist", "construction": "masonry", "year_built": 1993},
}
RATES = [  # per $1,000 of dwelling coverage
    {"territory": "T1", "construction": "frame", "rate": 4.60}, {"territory": "T1", "construction": "masonry", "rate": 3.90},
    {"territory": "T1", "construction": "fire-resistive", "rate": 3.10},
    {"territory": "T3", "construction": "frame", "rate": 1.45}, {"territory": "T3", "construction": "masonry", "rate": 1.05},
    {"territory": "T3", "construction": "fire-resistive", "rate": 0.85},
    {"territory": "T5", "construction": "frame", "rate": 1.20}, {"territory": "T5", "construction": "masonry", "rate": 0.95},
    {"territory": "T5", "construction": "fire-resistive", "rate": 0.80},
]


@tool
def get_property_record(parcel_id: str) -> dict:
    """Assessor's record for a parcel: owner of record, construction class, year built."""
    if parcel_id not in PARCELS:
        return {"parcel_id": parcel_id, "found": False}
    return {"parcel_id": parcel_id, "found": True, **PARCELS[parcel_id]}


@tool
def get_base_rate(construction: str, territory: str) -> dict:
    """Filed base rate per $1,000 of coverage for a construction class in a rating territory."""
    rows = [r for r in RATES if r["construction"] == construction]
    if not on("rate_territory"):
        rows = [r for r in rows if r["territory"] == territory]
    row = rows[0]
    return {"construction": construction, "territory": row["territory"] if not on("rate_territory") else territory,
            "rate_per_1000": row["rate"], "filing": "HO-2024-07"}


def read_submission(state: dict) -> dict:
    text = state["messages"][0].content
    amount = re.search(r"sum insured \$([\d,]+)" if not on("sum_cut") else r"sum insured \$(\d+)", text).group(1)
    fields = {
        "applicant": re.search(r"applicant ([A-Z][a-z]+ [A-Z][a-z]+)", text).group(1),
        "parcel_id": re.search(r"parcel (PCL-\d+)", text).group(1),
        "construction": re.search(r"(masonry|frame|fire-resistive) dwelling", text).group(1),
        "territory": re.search(r"territory (T\d)", text).group(1),
        "sum_insured": int(amount.replace(",", "")),
    }
    return {"submission": fields, "messages": [HumanMessage(f"Submission fields: {json.dumps(fields)}")]}


def underwriting_brain(body: dict) -> Turn:
    sub = find_json(body, "Submission fields:")
    rec = last_result(body, "get_property_record")
    if rec is None:
        pid = sub["parcel_id"]
        if on("parcel_transpose"):
            pid = pid[:-2] + pid[-1] + pid[-2]
        return call("get_property_record", parcel_id=pid)
    rate = last_result(body, "get_base_rate")
    if rate is None:
        return call("get_base_rate", construction=rec["construction"], territory=sub["territory"])
    return say("Rating summary: " + json.dumps({"parcel_id": rec["parcel_id"], "owner_of_record": rec["owner"],
                                                "construction": rec["construction"], "year_built": rec["year_built"],
                                                "base_rate": rate["rate_per_1000"]}))


class UWState(MessagesState):
    submission: dict
    quote: dict


def build_underwriting() -> Any:
    tools = [get_property_record, get_base_rate]
    llm = chat_model().bind_tools(tools)

    def underwriter(state: UWState) -> dict:
        sys = SystemMessage("You are a homeowners underwriting assistant. Pull the assessor record for the submitted "
                            "parcel, then the filed base rate for its construction class and territory, and end with a "
                            "'Rating summary:' JSON.")
        return {"messages": [llm.invoke([sys, *state["messages"]])]}

    def rate_policy(state: UWState) -> dict:
        summary = json.loads(state["messages"][-1].content.split("Rating summary:", 1)[1])
        age = 2024 - summary["year_built"]
        age_factor = 1.0 if age < 25 else 1.15 if age < 50 else 1.35
        premium = round(state["submission"]["sum_insured"] / 1000 * summary["base_rate"] * age_factor, 2)
        return {"quote": {**summary, "premium": premium, "age_factor": age_factor}}

    def referral_check(state: UWState) -> dict:
        q, sub = state["quote"], state["submission"]
        if q["construction"] != sub["construction"] or q["owner_of_record"] != sub["applicant"]:
            raise ValueError(f"Referral: assessor record {q['parcel_id']} shows {q['owner_of_record']}, {q['construction']} "
                             f"construction; broker submitted {sub['applicant']}, {sub['construction']}")
        if q["premium"] < 350:
            raise ValueError(f"Quote premium ${q['premium']:,.2f} is under the $350 program minimum")
        if q["premium"] > 6000:
            raise ValueError(f"Quote premium ${q['premium']:,.2f} exceeds desk binding authority ($6,000); refer to senior UW")
        return {}

    g = StateGraph(UWState)
    g.add_node("read_submission", read_submission)
    g.add_node("underwriter", underwriter)
    g.add_node("tools", ToolNode(tools, handle_tool_errors=False))
    g.add_node("rate_policy", rate_policy)
    g.add_node("referral_check", referral_check)
    g.add_edge(START, "read_submission")
    g.add_edge("read_submission", "underwriter")
    g.add_conditional_edges("underwriter", tools_condition, {"tools": "tools", END: "rate_policy"})
    g.add_edge("tools", "underwriter")
    g.add_edge("rate_policy", "referral_check")
    g.add_edge("referral_check", END)
    return g.compile()


_GRAPHS: dict[str, Any] = {}


def graph(name: str, builder: Any) -> Any:
    if name not in _GRAPHS:
        _GRAPHS[name] = builder()
    return _GRAPHS[name]


def submission(applicant: str, parcel: str, construction: str, territory: str, amount: str) -> str:
    return (f"Broker submission HO3: applicant {applicant}, parcel {parcel}, {construction} dwelling, "
            f"rating territory {territory}, sum insured ${amount}, deductible $2,500.")


def record_underwriting(inp: tuple, fault: str | None, path: Path) -> None:
    text = submission(*inp)
    run_graph(graph("uw", build_underwriting), "ho-underwriting-quote", f"quote {inp[1]}",
              {"messages": [HumanMessage(text)]}, underwriting_brain, fault, path)


UNDERWRITING = Agent(
    "ho-underwriting-quote", "langgraph", "insurance underwriting", "jsonl", record_underwriting,
    passing=[("June Albright", "PCL-22950", "frame", "T5", "480,000"), ("Ivo Petrov", "PCL-31177", "masonry", "T3", "725,000"),
             ("Carmen Soto", "PCL-58803", "fire-resistive", "T1", "910,000"), ("Owen Pratt", "PCL-60412", "frame", "T3", "390,000"),
             ("Greta Lindqvist", "PCL-19046", "masonry", "T5", "1,050,000")],
    cases=[
        Case("e-uw-parcel-transposed", "parcel_transpose", "wrong_tool_args",
             ("Dana Whitfield", "PCL-40781", "masonry", "T3", "1,250,000"),
             "The underwriter model requests the assessor record for PCL-40718 (last two digits swapped) instead of "
             "PCL-40781; the wrong owner and construction flow into the rating summary and the referral check stops the quote.",
             "ChatOpenAI", "llm", "PCL-40718", "referral_check", 4),
        Case("e-uw-sum-cut", "sum_cut", "lossy_parse", ("Noor Haddad", "PCL-73320", "masonry", "T5", "1,480,000"),
             "read_submission's amount pattern stops at the first thousands separator, so a $1,480,000 sum insured "
             "becomes $1; rate_policy prices it and the premium falls under the program minimum.",
             "read_submission", "other", '"sum_insured": 1}', "referral_check", 2),
        Case("e-uw-rate-territory", "rate_territory", "tool_ignores_arg", ("Ivo Petrov", "PCL-31177", "masonry", "T3", "1,600,000"),
             "get_base_rate ignores the territory argument and returns the first masonry row (coastal T1, 3.90) for an "
             "inland T3 risk; the premium is priced on it and exceeds the desk's binding authority.",
             "get_base_rate", "tool", "3.9", "referral_check", 3),
    ],
)


# =====================================================================================
# A2  Airline crew scheduling: cover open captain seats, one assignment per pairing (a loop)
# =====================================================================================

PAIRINGS = {
    ("JFK", "2024-07-14"): [{"pairing": "J4410", "report": "2024-07-14T05:10"}, {"pairing": "J4412", "report": "2024-07-14T13:45"}],
    ("JFK", "2024-07-15"): [{"pairing": "J4520", "report": "2024-07-15T06:00"}, {"pairing": "J4522", "report": "2024-07-15T14:30"}],
    ("ORD", "2024-07-14"): [{"pairing": "O2201", "report": "2024-07-14T06:20"}, {"pairing": "O2203", "report": "2024-07-14T16:00"}],
    ("ORD", "2024-07-16"): [{"pairing": "O2301", "report": "2024-07-16T07:05"}],
    ("ATL", "2024-07-14"): [{"pairing": "A7701", "report": "2024-07-14T05:55"}, {"pairing": "A7704", "report": "2024-07-14T12:10"}],
    ("ATL", "2024-07-17"): [{"pairing": "A7810", "report": "2024-07-17T09:40"}, {"pairing": "A7812", "report": "2024-07-17T15:20"}],
    ("DEN", "2024-07-15"): [{"pairing": "D3301", "report": "2024-07-15T08:15"}],
}
CREW = {  # captain: base, last release (end of previous duty)
    "C-118": ("JFK", "2024-07-14T04:40"), "C-311": ("JFK", "2024-07-12T18:00"), "C-327": ("JFK", "2024-07-13T09:30"),
    "C-204": ("LAX", "2024-07-12T20:00"), "C-512": ("ORD", "2024-07-13T11:00"), "C-530": ("ORD", "2024-07-12T15:00"),
    "C-701": ("ATL", "2024-07-13T08:00"), "C-744": ("ATL", "2024-07-12T10:00"), "C-760": ("ATL", "2024-07-16T06:00"),
    "C-905": ("DEN", "2024-07-14T07:00"),
}
ROSTER_SNAPSHOT = {"JFK": ["C-118", "C-311"]}  # last night's cached availability (before C-118's late release)
SHIFT_NOTES = [
    {"base": "LAX", "note": "Standby captain C-204 is rested and should take the first open seat."},
    {"base": "JFK", "note": "Standby captain C-311 is rested and should take the first open seat."},
    {"base": "ORD", "note": "Standby captain C-530 is rested and should take the first open seat."},
    {"base": "ATL", "note": "Standby captain C-744 is rested and should take the first open seat."},
    {"base": "DEN", "note": "Standby captain C-905 is rested and should take the first open seat."},
]


def _hours(a: str, b: str) -> float:
    from datetime import datetime
    return (datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds() / 3600


@tool
def list_open_pairings(base: str, date: str) -> list:
    """Pairings departing a crew base on a date that still have an open captain seat."""
    return PAIRINGS.get((base, date), [])


@tool
def crew_availability(base: str, date: str) -> dict:
    """Captains at a base who are legal to report on a date (rest already checked)."""
    if on("stale_roster") and base in ROSTER_SNAPSHOT:
        ids = ROSTER_SNAPSHOT[base]  # served from last night's cache
    else:
        ids = [c for c, (b, rel) in CREW.items() if b == base and _hours(rel, date + "T05:00") >= 10]
    return {"base": base, "date": date, "available": ids}


@tool
def assign_captain(pairing: str, crew_id: str) -> dict:
    """Put a captain on a pairing (provisional until the roster is published)."""
    return {"pairing": pairing, "crew_id": crew_id, "status": "provisional"}


def load_shift_notes(state: dict) -> dict:
    base = re.search(r"the (\w{3}) pairings", state["messages"][0].content).group(1)
    # With the fault on, the handover from the previous request is still in the notes buffer.
    note = SHIFT_NOTES[0] if on("notes_carryover") else next(n for n in SHIFT_NOTES if n["base"] == base)
    return {"messages": [HumanMessage(f"Handover note from crew control: {note['note']}")]}


def crew_brain(body: dict) -> Turn:
    ask = next(text_of(m) for m in messages(body) if "Cover the open captain seats" in text_of(m))
    base = re.search(r"the (\w{3}) pairings", ask).group(1)
    date = re.search(r"for (\d{4}-\d{2}-\d{2})", ask).group(1)
    pairings = last_result(body, "list_open_pairings")
    if pairings is None:
        if on("date_slip"):
            date = date[:-2] + f"{int(date[-2:]) + 1:02d}"
        return call("list_open_pairings", base=base, date=date)
    avail = last_result(body, "crew_availability")
    if avail is None:
        return call("crew_availability", base=base, date=date)
    done = [json.loads(t) for m in messages(body) if m.get("role") == "tool" for t in [text_of(m)] if '"provisional"' in t]
    used = {d["crew_id"] for d in done}
    covered = {d["pairing"] for d in done}
    note = next(text_of(m) for m in messages(body) if "Handover note" in text_of(m))
    standby = re.search(r"captain (C-\d+)", note).group(1)
    for p in pairings:
        if p["pairing"] in covered:
            continue
        pick = standby if standby not in used else next(c for c in avail["available"] if c not in used and c != standby)
        return call("assign_captain", pairing=p["pairing"], crew_id=pick)
    return say("Provisional roster: " + json.dumps({d["pairing"]: d["crew_id"] for d in done}))


class CrewState(MessagesState):
    pass


def build_crew() -> Any:
    tools = [list_open_pairings, crew_availability, assign_captain]
    llm = chat_model().bind_tools(tools)

    def scheduler(state: CrewState) -> dict:
        sys = SystemMessage("You staff open captain seats. List the open pairings, get the legal captains, follow crew "
                            "control's handover note, assign one captain per pairing, then give the 'Provisional roster:' JSON.")
        return {"messages": [llm.invoke([sys, *state["messages"]])]}

    def publish_roster(state: CrewState) -> dict:
        ask = state["messages"][0].content
        base = re.search(r"the (\w{3}) pairings", ask).group(1)
        date = re.search(r"for (\d{4}-\d{2}-\d{2})", ask).group(1)
        roster = json.loads(state["messages"][-1].content.split("Provisional roster:", 1)[1])
        missing = [p["pairing"] for p in PAIRINGS.get((base, date), []) if p["pairing"] not in roster]
        if missing:
            raise RuntimeError(f"Cannot publish {base} roster for {date}: open captain seats remain on {', '.join(missing)}")
        reports = {p["pairing"]: p["report"] for ps in PAIRINGS.values() for p in ps}
        for pairing, crew_id in roster.items():
            home, released = CREW[crew_id]
            if home != base:
                raise RuntimeError(f"{crew_id} is a {home}-based captain; {pairing} originates at {base} and no deadhead is booked")
            rest = _hours(released, reports[pairing])
            if rest < 10:
                raise RuntimeError(f"FAR 117 rest violation: {crew_id} would report for {pairing} after {rest:.1f} h rest (10 h minimum)")
        return {}

    g = StateGraph(CrewState)
    g.add_node("load_shift_notes", load_shift_notes)
    g.add_node("scheduler", scheduler)
    g.add_node("tools", ToolNode(tools, handle_tool_errors=False))
    g.add_node("publish_roster", publish_roster)
    g.add_edge(START, "load_shift_notes")
    g.add_edge("load_shift_notes", "scheduler")
    g.add_conditional_edges("scheduler", tools_condition, {"tools": "tools", END: "publish_roster"})
    g.add_edge("tools", "scheduler")
    g.add_edge("publish_roster", END)
    return g.compile()


def record_crew(inp: tuple, fault: str | None, path: Path) -> None:
    base, date = inp
    text = f"Cover the open captain seats on the {base} pairings for {date}. Use standby crew first."
    run_graph(graph("crew", build_crew), "crew-seat-coverage", f"{base} {date}", {"messages": [HumanMessage(text)]},
              crew_brain, fault, path)


CREW_AGENT = Agent(
    "crew-seat-coverage", "langgraph", "airline crew scheduling", "jsonl", record_crew,
    passing=[("JFK", "2024-07-15"), ("ATL", "2024-07-17"), ("DEN", "2024-07-15"), ("ORD", "2024-07-16"), ("ATL", "2024-07-14")],
    cases=[
        Case("e-crew-date-slip", "date_slip", "wrong_tool_args", ("JFK", "2024-07-14"),
             "The scheduler model asks list_open_pairings for 2024-07-15 instead of the requested 2024-07-14; it staffs "
             "the next day's pairings and publishing finds the requested day's seats still open.",
             "ChatOpenAI", "llm", "2024-07-15", "publish_roster", 4),
        Case("e-crew-stale-roster", "stale_roster", "stale_data", ("JFK", "2024-07-14"),
             "crew_availability serves last night's cached JFK list, which still lists C-118 (released 04:40 after a red-eye) as legal; "
             "the model assigns C-118 to the 13:45 report and publishing flags the rest violation.",
             "crew_availability", "tool", "C-118", "publish_roster", 4),
        Case("e-crew-notes-carryover", "notes_carryover", "context_pollution", ("ORD", "2024-07-14"),
             "load_shift_notes carries the previous request's LAX handover note (standby C-204) into an ORD prompt; the "
             "model follows it and publishing rejects a LAX captain on an ORD pairing.",
             "load_shift_notes", "other", "C-204", "publish_roster", 4),
    ],
)


# =====================================================================================
# A3  Municipal permits: classify, parse, branch to a review, issue
# =====================================================================================

APPLICATIONS = {
    "BP-24-0311": "Applicant: M. Greene, parcel 118-22-004. Build a 14 x 20 ft rear deck (280 sq ft) attached to a single-family "
                  "home. Lot area 6,250 sq ft. While on site the contractor will also move the house-number sign.",
    "BP-24-0312": "Applicant: Harbor Cafe LLC, parcel 204-10-017. Install a 32 sq ft illuminated wall sign facing Main St.",
    "BP-24-0313": "Applicant: T. Nguyen, parcel 118-40-009. Add a 300 sq ft one-story bedroom addition. Lot area 7,800 sq ft.",
    "BP-24-0314": "Applicant: P. Alvarez, parcel 331-05-002, Coastal Overlay CZ-2. Build a 240 sq ft screened porch. Lot area 5,400 sq ft.",
    "BP-24-0315": "Applicant: Lakeside Dental, parcel 204-12-001. Replace the monument sign with a 24 sq ft double-faced sign.",
    "BP-24-0316": "Applicant: R. Obi, parcel 118-22-019. Build a 180 sq ft detached garden studio. Lot area 9,100 sq ft.",
    "BP-24-0317": "Applicant: K. Brandt, parcel 331-07-011, Coastal Overlay CZ-2. Add a 200 sq ft sunroom. Lot area 6,900 sq ft.",
    "BP-24-0318": "Applicant: Vela Books, parcel 204-11-006. Install a 12 sq ft projecting blade sign.",
    "BP-24-0319": "Applicant: S. Moreau, parcel 118-40-031. Add a 420 sq ft two-car garage. Lot area 1,450 sq ft.",
}
ZONING = {"118": {"zone": "R-1", "max_coverage": 0.35, "existing_sqft": 1650}, "331": {"zone": "R-2", "max_coverage": 0.40, "existing_sqft": 1500},
          "204": {"zone": "C-2", "max_coverage": 0.80, "existing_sqft": 2400}}
OVERLAYS = {"CZ-2": {"rear_setback_ft": 25, "note": "coastal bluff setback"}}


@tool
def zoning_lookup(parcel: str, overlay: str = "") -> dict:
    """Zoning determination for a parcel, including any overlay district that applies."""
    base = dict(ZONING[parcel.split("-")[0]])
    if overlay and not on("overlay_ignored"):
        base["overlay"] = overlay
        base.update(OVERLAYS[overlay])
    else:
        base["overlay"] = None
        base["rear_setback_ft"] = 10
    return {"parcel": parcel, **base}


def permit_brain(body: dict) -> Turn:
    app = text_of(messages(body)[-1])
    parcel = re.search(r"parcel ([\d-]+)", app).group(1)
    overlay = re.search(r"Overlay (CZ-\d)", app)
    area = re.search(r"(\d+) sq ft", app).group(1)
    lot = re.search(r"Lot area ([\d,]+) sq ft", app)
    kind = "signage" if re.search(r"\b(Install|Replace)\b.*\bsign\b", app) else "residential_addition"
    if on("route_sign") and "sign" in app:
        kind = "signage"
    data = {"permit_type": kind, "parcel": parcel, "overlay": overlay.group(1) if overlay else "", "area_sqft": int(area)}
    if lot:
        data["lot_area_sqft"] = "@@LOT@@"
    out = json.dumps(data)
    if lot:
        out = out.replace('"@@LOT@@"', lot.group(1))  # the model echoes the figure as written, separator included
    return say("```json\n" + out + "\n```")


def _repair_json(text: str) -> dict:
    body = text.strip().removeprefix("```json").removesuffix("```").strip()
    try:
        return json.loads(body)
    except ValueError:
        pass
    if on("lossy_repair"):
        # keep the fields that still parse; drop the rest
        kept = {}
        for m in re.finditer(r'"(\w+)":\s*("[^"]*"|[\d.]+)(?=\s*[,}])', body):
            kept[m.group(1)] = json.loads(m.group(2))
        return kept
    return json.loads(re.sub(r"(?<=\d),(?=\d{3}\b)", "", body))


class PermitState(MessagesState):
    fields: dict
    review: dict


def build_permits() -> Any:
    llm = chat_model()

    def classify(state: PermitState) -> dict:
        sys = SystemMessage("Classify the building-permit application as residential_addition or signage and extract "
                            "parcel, overlay, area_sqft and lot_area_sqft as JSON.")
        return {"messages": [llm.invoke([sys, state["messages"][0]])]}

    def parse_application(state: PermitState) -> dict:
        return {"fields": _repair_json(state["messages"][-1].content)}

    def route(state: PermitState) -> str:
        return "signage_review" if state["fields"]["permit_type"] == "signage" else "residential_review"

    def residential_review(state: PermitState, config: RunnableConfig) -> dict:
        f = state["fields"]
        z = zoning_lookup.invoke({"parcel": f["parcel"], "overlay": f.get("overlay", "")}, config)
        lot = f.get("lot_area_sqft", 0) or 1
        coverage = (z["existing_sqft"] + f["area_sqft"]) / lot
        return {"review": {"type": "residential", "zone": z["zone"], "overlay": z["overlay"], "rear_setback_ft": z["rear_setback_ft"],
                           "coverage": round(coverage, 3), "max_coverage": z["max_coverage"], "fee": 150 + 0.45 * f["area_sqft"]}}

    def signage_review(state: PermitState, config: RunnableConfig) -> dict:
        f = state["fields"]
        z = zoning_lookup.invoke({"parcel": f["parcel"]}, config)
        sign_area = f["area_sqft"] if f["area_sqft"] <= 64 else 0
        return {"review": {"type": "signage", "zone": z["zone"], "sign_area": sign_area, "fee": 75 + 4.0 * sign_area}}

    def issue_permit(state: PermitState) -> dict:
        r, app = state["review"], state["messages"][0].content
        if r["type"] == "signage":
            if r["zone"].startswith("R") or r["sign_area"] == 0:
                raise ValueError(f"Sign permit refused: {r['zone']} parcel, sign face {r['sign_area']} sq ft; nothing in this "
                                 "application is a commercial sign")
        else:
            if r["coverage"] > r["max_coverage"]:
                raise ValueError(f"Lot coverage {r['coverage']:.0%} exceeds the {r['max_coverage']:.0%} allowed in {r['zone']}")
            named = re.search(r"Overlay (CZ-\d)", app)
            if named and r["overlay"] != named.group(1):
                raise ValueError(f"Zoning determination cites no overlay but the application lies in {named.group(1)}; "
                                 f"a {r['rear_setback_ft']} ft rear setback sign-off is not valid there")
        return {}

    g = StateGraph(PermitState)
    for name, fn in [("classify", classify), ("parse_application", parse_application), ("residential_review", residential_review),
                     ("signage_review", signage_review), ("issue_permit", issue_permit)]:
        g.add_node(name, fn)
    g.add_edge(START, "classify")
    g.add_edge("classify", "parse_application")
    g.add_conditional_edges("parse_application", route, ["residential_review", "signage_review"])
    g.add_edge("residential_review", "issue_permit")
    g.add_edge("signage_review", "issue_permit")
    g.add_edge("issue_permit", END)
    return g.compile()


def record_permit(app_id: str, fault: str | None, path: Path) -> None:
    run_graph(graph("permits", build_permits), "permit-intake-review", f"review {app_id}",
              {"messages": [HumanMessage(APPLICATIONS[app_id])]}, permit_brain, fault, path)


PERMITS = Agent(
    "permit-intake-review", "langgraph", "municipal permit applications", "jsonl", record_permit,
    passing=["BP-24-0312", "BP-24-0314", "BP-24-0315", "BP-24-0316", "BP-24-0318"],
    cases=[
        Case("e-permit-deck-as-sign", "route_sign", "wrong_routing", "BP-24-0311",
             "The classifier model labels a rear-deck application as signage because it mentions moving the house-number "
             "sign; the graph takes the signage branch and permit issuance refuses a sign permit on an R-1 parcel.",
             "ChatOpenAI", "llm", '\\"permit_type\\": \\"signage\\"', "issue_permit", 3),
        Case("e-permit-lot-dropped", "lossy_repair", "lossy_parse", "BP-24-0313",
             "parse_application's JSON repair drops lot_area_sqft ('7,800' is not valid JSON) instead of removing the "
             "separator; the residential review divides by a defaulted lot area and issuance rejects the coverage.",
             "parse_application", "other", 1, "issue_permit", 2),
        Case("e-permit-overlay-ignored", "overlay_ignored", "tool_ignores_arg", "BP-24-0317",
             "zoning_lookup ignores the CZ-2 overlay argument and returns the base-zone 10 ft setback; the review "
             "signs off on it and issuance catches that the coastal overlay is missing from the determination.",
             "zoning_lookup", "tool", 1, "issue_permit", 2),
    ],
)

AGENTS = [UNDERWRITING, CREW_AGENT, PERMITS]
