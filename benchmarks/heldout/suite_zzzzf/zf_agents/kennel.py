"""kennel-checkin: a dog boarding kennel's morning check-in planner (LangGraph, JSONL).

A LangGraph StateGraph: the day's arrivals (tool), a weigh-in per dog (scale tool + ticket parser), care
notes per dog (a retriever), a vaccination clerk sub-graph per playgroup dog (household lookup, record
check), a feeding and medication plan (model + JSON output parser), the stay log kept in graph state, the
pharmacy check per medicated dog, playgroup bookings chosen by the model (tool calls run one by one),
kennel assignment from the stay log and the kitchen's feeding schedule.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

from ._common import Env, between, last_user, system_text

NAME = "kennel-checkin"
ROUTE = "langgraph"
DOMAIN = "dog boarding kennel: morning check-in, feeding, meds, playgroups"
SHAPE = "StateGraph: arrivals tool, per-dog scale tool + ticket parser, per-dog care-notes retriever, vaccination sub-graph per playgroup dog (two tool nodes), LLM feeding plan + JSON parser, stay log in graph state, per-dog pharmacy tool, LLM playgroup tool calls, per-dog kennel tool, kitchen schedule tool"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


DOGS: dict[str, dict[str, Any]] = {
    "DOG-3310": {"name": "Biscuit", "breed": "Beagle", "owner": "OWN-120", "kg": 11.2, "allergies": ["fish"]},
    "DOG-2871": {"name": "Biscuit", "breed": "Labrador", "owner": "OWN-388", "kg": 31.5, "allergies": []},
    "DOG-5520": {"name": "Peppercorn", "breed": "Border Collie", "owner": "OWN-551", "kg": 18.9, "allergies": []},
    "DOG-5521": {"name": "Pepper", "breed": "Border Collie", "owner": "OWN-551", "kg": 17.8, "allergies": []},
    "DOG-4410": {"name": "Luna", "breed": "Greyhound", "owner": "OWN-302", "kg": 28.4, "allergies": []},
    "DOG-4415": {"name": "Bruno", "breed": "Bernese Mountain Dog", "owner": "OWN-415", "kg": 38.0, "allergies": []},
    "DOG-6120": {"name": "Mochi", "breed": "Shih Tzu", "owner": "OWN-610", "kg": 6.3, "allergies": ["chicken"]},
    "DOG-6204": {"name": "Rolo", "breed": "Cockapoo", "owner": "OWN-620", "kg": 9.1, "allergies": []},
    "DOG-7031": {"name": "Juno", "breed": "Siberian Husky", "owner": "OWN-703", "kg": 22.5, "allergies": []},
    "DOG-7102": {"name": "Ziggy", "breed": "Jack Russell", "owner": "OWN-710", "kg": 7.4, "allergies": []},
    "DOG-7150": {"name": "Maple", "breed": "Golden Retriever", "owner": "OWN-715", "kg": 29.9, "allergies": []},
}

NOTES = [  # the care-notes store, in the order it was filled
    ("DOG-2871", "Biscuit (Labrador, owner Quinn): salmon & potato kibble, 2 meals. Loves fetch; pulls on the lead."),
    ("DOG-3310", "Biscuit (Beagle, owner Harper): lamb & rice kibble, 2 meals. Fish allergy. Carprofen 2 mg/kg twice daily for arthritis."),
    ("DOG-5521", "Pepper (Border Collie): chicken kibble, 2 meals. High energy; long walks."),
    ("DOG-5520", "Peppercorn (Border Collie): chicken kibble, 2 meals."),
    ("DOG-4410", "Luna (Greyhound): turkey kibble, 3 meals. Gabapentin 100 mg once daily at 20:00 for anxiety."),
    ("DOG-4415", "Bruno (Bernese Mountain Dog): beef kibble, 2 meals. Drools; towel by the water bowl."),
    ("DOG-6120", "Mochi (Shih Tzu): duck small-bite kibble, 3 meals. Chicken allergy."),
    ("DOG-6204", "Rolo (Cockapoo): lamb kibble, 2 meals. Grain-free."),
    ("DOG-7031", "Juno (Siberian Husky): venison kibble, 2 meals. Escape artist: double-latch kennel."),
    ("DOG-7102", "Ziggy (Jack Russell): turkey kibble, 2 meals. Barks at the post van."),
    ("DOG-7150", "Maple (Golden Retriever): salmon kibble, 2 meals. Gentle with puppies."),
]

HOUSEHOLDS = {"OWN-551": ["DOG-5520", "DOG-5521"]}

VACCINES: dict[str, dict[str, str]] = {d: {"rabies": "2026-04-01", "dhpp": "2026-01-15", "kennel_cough": "2025-12-20"} for d in DOGS}
VACCINES["DOG-5521"] = {"rabies": "2026-02-10", "dhpp": "2025-11-30", "kennel_cough": "2025-03-02"}

PRESCRIPTIONS = {"DOG-3310": {"Carprofen": 25}, "DOG-4410": {"Gabapentin": 100}}

ARRIVALS: dict[str, list[tuple[str, bool, int]]] = {  # date -> (dog, playgroup requested, nights)
    "2025-06-11": [("DOG-3310", True, 4), ("DOG-4415", False, 2), ("DOG-6120", True, 3)],
    "2025-06-12": [("DOG-5521", True, 5), ("DOG-7031", False, 2), ("DOG-7102", True, 3)],
    "2025-06-13": [("DOG-4410", False, 7), ("DOG-6204", True, 2), ("DOG-7150", True, 4)],
    "2025-06-14": [("DOG-3310", True, 3), ("DOG-7102", True, 2), ("DOG-7150", False, 5)],
    "2025-06-15": [("DOG-4415", False, 3), ("DOG-6120", True, 2), ("DOG-7031", False, 4), ("DOG-6204", True, 3)],
}

SCALE_LB = {("2025-06-11", "DOG-3310"), ("2025-06-11", "DOG-6120"), ("2025-06-14", "DOG-7102")}

INPUTS: list[dict[str, Any]] = [
    {"request_id": "CI-0611", "date": "2025-06-11", "desk": "front"},
    {"request_id": "CI-0612", "date": "2025-06-12", "desk": "front"},
    {"request_id": "CI-0613", "date": "2025-06-13", "desk": "front"},
    {"request_id": "CI-0614", "date": "2025-06-14", "desk": "front"},
    {"request_id": "CI-0615", "date": "2025-06-15", "desk": "front"},
]

KENNEL_MAX = {"S": 12.0, "M": 25.0, "L": 60.0}


# --- tools, retriever, parsers ----------------------------------------------------------------------------


@tool
def arrivals_today(date: str) -> list:
    """The dogs checking in today."""
    return [{"dog_id": d, "name": DOGS[d]["name"], "breed": DOGS[d]["breed"], "owner": DOGS[d]["owner"],
             "playgroup": pg, "nights": n} for d, pg, n in ARRIVALS[date]]


@tool
def scale_ticket(dog_id: str, date: str) -> str:
    """Weigh a dog on the intake scale; returns the printed ticket."""
    kg = DOGS[dog_id]["kg"]
    if (date, dog_id) in SCALE_LB:
        return f"BARKLEY LODGE SCALE 1 | {date} 08:02 | {dog_id} | {kg / 0.4536:.1f} lb"
    return f"BARKLEY LODGE SCALE 2 | {date} 08:05 | {dog_id} | {kg:.1f} kg"


def _read_ticket(ticket: str) -> dict:
    _, stamp, dog_id, weight = [p.strip() for p in ticket.split("|")]
    value, unit = weight.split()
    kg = float(value)
    if unit == "lb" and not _on("ticket_units"):
        kg = kg * 0.4536
    return {"dog_id": dog_id, "kg": round(kg, 1), "weighed": stamp}


weigh_ticket_parser = RunnableLambda(_read_ticket).with_config(run_name="WeighTicketParser")


class CareNotesRetriever(BaseRetriever):
    """Care notes by dog: the note whose dog matches the query's dog id (else its name)."""

    k: int = 1

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        name = query.split()[0]
        m = re.search(r"DOG-\d+", query)
        docs = []
        for dog_id, text in NOTES:
            if _on("notes_match"):
                hit = text.startswith(name + " ")
            else:
                hit = m is not None and dog_id == m.group(0)
            if hit:
                docs.append(Document(page_content=text, metadata={"dog_id": dog_id, "source": "care-notes"}))
        return docs[: self.k]


care_notes = CareNotesRetriever()


@tool
def household_dogs(owner: str) -> list:
    """The dogs registered to an owner's household."""
    ids = HOUSEHOLDS.get(owner) or [d for d, v in DOGS.items() if v["owner"] == owner]
    return [{"dog_id": d, "name": DOGS[d]["name"], "breed": DOGS[d]["breed"]} for d in ids]


@tool
def vaccine_record(dog_id: str) -> dict:
    """Vaccination expiry dates on a dog's record."""
    return {"dog_id": dog_id, "expires": dict(VACCINES[dog_id])}


@tool
def pharmacy_check(dog_id: str, drug: str, mg: float) -> dict:
    """Check a planned dose against the vet's prescription."""
    rx = PRESCRIPTIONS.get(dog_id, {})
    if drug not in rx:
        raise LookupError(f"no prescription for {drug} on {dog_id}")
    if mg > rx[drug]:
        raise ValueError(f"{drug} {mg:g} mg per dose for {DOGS[dog_id]['name']} ({dog_id}) is over the prescribed {rx[drug]} mg")
    return {"dog_id": dog_id, "drug": drug, "mg": mg, "status": "dispensed"}


@tool
def book_playgroup(dog_id: str, group: str, date: str) -> dict:
    """Book a dog into a playgroup session (the register checks vaccinations)."""
    for vaccine, until in VACCINES[dog_id].items():
        if until < date:
            raise PermissionError(f"playgroup register: {DOGS[dog_id]['name']} ({dog_id}) {vaccine} vaccination "
                                  f"expired {until}")
    return {"dog_id": dog_id, "group": group, "date": date, "session": "10:00-11:30", "status": "booked"}


@tool
def assign_kennel(dog_id: str, kennel: str) -> dict:
    """Put a dog in a kennel."""
    size = kennel.split("-")[0]
    if DOGS[dog_id]["kg"] > KENNEL_MAX[size]:
        raise ValueError(f"kennel {kennel} takes dogs up to {KENNEL_MAX[size]:g} kg; {DOGS[dog_id]['name']} ({dog_id}) "
                         f"is registered at {DOGS[dog_id]['kg']} kg")
    return {"dog_id": dog_id, "kennel": kennel, "status": "assigned"}


@tool
def schedule_feeds(date: str, plan: list) -> dict:
    """Send the day's feeding plan to the kitchen."""
    for row in plan:
        for allergen in DOGS[row["dog_id"]]["allergies"]:
            if allergen in row["food"].lower() or (allergen == "fish" and "salmon" in row["food"].lower()):
                raise ValueError(f"kitchen: {DOGS[row['dog_id']]['name']} ({row['dog_id']}) has a {allergen} allergy "
                                 f"on file; {row['food']} refused")
    return {"date": date, "dogs": len(plan), "meals": sum(r["meals"] for r in plan), "status": "scheduled"}


# --- the vaccination clerk (a sub-graph) ------------------------------------------------------------------


class ClerkState(TypedDict, total=False):
    dog_id: str
    name: str
    owner: str
    date: str
    checked_id: str
    cleared: bool
    expired: list


def find_dog(state: ClerkState) -> dict:
    household = household_dogs.invoke({"owner": state["owner"]})
    if _on("household_pick"):
        pick = next(d for d in household if d["name"].startswith(state["name"]))
    else:
        pick = next(d for d in household if d["dog_id"] == state["dog_id"])
    return {"checked_id": pick["dog_id"]}


def check_record(state: ClerkState) -> dict:
    rec = vaccine_record.invoke({"dog_id": state["checked_id"]})
    expired = [v for v, until in rec["expires"].items() if until < state["date"]]
    return {"cleared": not expired, "expired": expired}


def _clerk() -> Any:
    g = StateGraph(ClerkState)
    g.add_node("find_dog", find_dog)
    g.add_node("check_record", check_record)
    g.add_edge(START, "find_dog")
    g.add_edge("find_dog", "check_record")
    g.add_edge("check_record", END)
    return g.compile().with_config(run_name="vaccination_clerk")


# --- the main graph ----------------------------------------------------------------------------------------


class State(TypedDict, total=False):
    request: dict
    arrivals: list
    weights: dict
    notes: dict
    vaccines: dict
    plan: list
    stay_log: dict
    doses: list
    playgroups: list
    kennels: list
    result: dict


FEEDING_PROMPT = ("You are the kennel's feeding planner. For each dog write food, meals per day, grams per meal "
                  "(20 g per kg of body weight per day) and medication doses from the care notes (per-kg doses "
                  "times today's weight, rounded to the nearest whole mg). Answer JSON: {\"dogs\": [{\"dog_id\", "
                  "\"food\", \"meals\", \"grams_per_meal\", \"meds\": [{\"drug\", \"mg\", \"when\"}]}]}.")
PLAYGROUP_PROMPT = ("You book playgroups: call book_playgroup once per cleared dog, group 'small' under 15 kg, "
                    "else 'large'.")


def _nodes(llm: Any, llm_tools: Any) -> dict:
    clerk = _clerk()
    parser = JsonOutputParser()

    def intake(state: State) -> dict:
        return {"request": dict(state["request"])}

    def fetch_arrivals(state: State) -> dict:
        return {"arrivals": arrivals_today.invoke({"date": state["request"]["date"]})}

    def weigh_in(state: State) -> dict:
        date = state["request"]["date"]
        weights = {}
        for a in state["arrivals"]:
            ticket = scale_ticket.invoke({"dog_id": a["dog_id"], "date": date})
            weights[a["dog_id"]] = weigh_ticket_parser.invoke(ticket)["kg"]
        return {"weights": weights}

    def read_notes(state: State) -> dict:
        notes = {}
        for a in state["arrivals"]:
            docs = care_notes.invoke(f"{a['name']} {a['breed']} {a['dog_id']} owner {a['owner']}")
            notes[a["dog_id"]] = docs[0].page_content if docs else ""
        return {"notes": notes}

    def vaccinations(state: State) -> dict:
        out = {}
        for a in state["arrivals"]:
            if a["playgroup"]:
                res = clerk.invoke({"dog_id": a["dog_id"], "name": a["name"], "owner": a["owner"],
                                    "date": state["request"]["date"]})
                out[a["dog_id"]] = {"cleared": res["cleared"], "expired": res["expired"]}
        return {"vaccines": out}

    def feeding_plan(state: State) -> dict:
        dogs = [{"dog_id": a["dog_id"], "name": a["name"], "kg": state["weights"][a["dog_id"]],
                 "care_note": state["notes"][a["dog_id"]]} for a in state["arrivals"]]
        msg = llm.invoke([SystemMessage(FEEDING_PROMPT), HumanMessage("Dogs: " + json.dumps(dogs))])
        return {"plan": parser.invoke(msg)["dogs"]}

    def log_stay(state: State) -> dict:
        ids = [a["dog_id"] for a in state["arrivals"]]
        counters = {"S": 0, "M": 0, "L": 0}
        kennels = []
        for d in ids:
            kg = state["weights"][d]
            size = "S" if kg <= KENNEL_MAX["S"] else "M" if kg <= KENNEL_MAX["M"] else "L"
            counters[size] += 1
            kennels.append(f"{size}-{counters[size]:02d}")
        keys = sorted(ids) if _on("log_keys") else ids
        meals = {p["dog_id"]: p["meals"] for p in state["plan"]}
        log = {d: {"kennel": k, "meals": meals[d]} for d, k in zip(keys, kennels)}
        return {"stay_log": log}

    def pharmacy(state: State) -> dict:
        doses = []
        for p in state["plan"]:
            for med in p.get("meds") or []:
                doses.append(pharmacy_check.invoke({"dog_id": p["dog_id"], "drug": med["drug"], "mg": med["mg"]}))
        return {"doses": doses}

    def playgroups(state: State) -> dict:
        cleared = [{"dog_id": d, "kg": state["weights"][d]} for d, v in state["vaccines"].items() if v["cleared"]]
        if not cleared:
            return {"playgroups": []}
        ai = llm_tools.invoke([SystemMessage(PLAYGROUP_PROMPT),
                               HumanMessage(f"Date: {state['request']['date']}\nCleared dogs: {json.dumps(cleared)}")])
        booked = []
        for call in ai.tool_calls:
            booked.append(book_playgroup.invoke(call).content)
        return {"playgroups": booked}

    def kennels(state: State) -> dict:
        out = []
        for a in state["arrivals"]:
            out.append(assign_kennel.invoke({"dog_id": a["dog_id"], "kennel": state["stay_log"][a["dog_id"]]["kennel"]}))
        return {"kennels": out}

    def kitchen(state: State) -> dict:
        plan = [{"dog_id": p["dog_id"], "food": p["food"], "meals": state["stay_log"][p["dog_id"]]["meals"],
                 "grams_per_meal": p["grams_per_meal"]} for p in state["plan"]]
        return {"result": schedule_feeds.invoke({"date": state["request"]["date"], "plan": plan})}

    return {"intake": intake, "fetch_arrivals": fetch_arrivals, "weigh_in": weigh_in, "read_notes": read_notes,
            "vaccinations": vaccinations, "feeding_plan": feeding_plan, "log_stay": log_stay, "pharmacy": pharmacy,
            "playgroups": playgroups, "kennels": kennels, "kitchen": kitchen}


_graphs: dict[str, Any] = {}


def _graph(env: Env) -> Any:
    if env.base_url in _graphs:
        return _graphs[env.base_url]
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(base_url=env.base_url, api_key="not-needed", model=env.model, max_retries=0, temperature=0)
    nodes = _nodes(llm, llm.bind_tools([book_playgroup]))
    g = StateGraph(State)
    order = list(nodes)
    for n in order:
        g.add_node(n, nodes[n])
    g.add_edge(START, order[0])
    for a, b in zip(order, order[1:]):
        g.add_edge(a, b)
    g.add_edge(order[-1], END)
    _graphs[env.base_url] = g.compile()
    return _graphs[env.base_url]


def run(inp: dict, out: Path, env: Env) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=str(out), name=NAME, task=f"check-in {inp['date']}")
    _graph(env).invoke({"request": inp}, config={"callbacks": [tracer], "configurable": {"thread_id": inp["request_id"]}})


# --- the model ---------------------------------------------------------------------------------------------


def brain(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    system = system_text(request)
    user = last_user(request)
    if system.startswith("You are the kennel's feeding planner"):
        dogs = json.loads(between(user, "Dogs: "))
        rows = []
        for d in dogs:
            note = d["care_note"]
            food = note.split(": ", 1)[1].split(",")[0].strip()
            meals = int(re.search(r"(\d) meals", note).group(1))
            meds = []
            for m in re.finditer(r"([A-Z][a-z]+) (\d+) mg(/kg)? ([^.;]+)", note):
                mg = float(m.group(2)) * (d["kg"] if m.group(3) else 1)
                if _on("gabapentin_dose") and m.group(1) == "Gabapentin":
                    mg = 300.0
                meds.append({"drug": m.group(1), "mg": round(mg), "when": m.group(4).strip()})
            rows.append({"dog_id": d["dog_id"], "food": food, "meals": meals,
                         "grams_per_meal": round(d["kg"] * 20 / meals), "meds": meds})
        return "```json\n" + json.dumps({"dogs": rows}) + "\n```"
    if system.startswith("You book playgroups"):
        date = between(user, "Date: ")
        dogs = json.loads(between(user, "Cleared dogs: "))
        return Reply(tool_calls=tuple(
            tool_call("book_playgroup", {"dog_id": d["dog_id"], "group": "small" if d["kg"] < 15 else "large", "date": date})
            for d in dogs))
    return "I only plan kennel check-ins."
