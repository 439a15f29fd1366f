"""Veterinary clinic desk (route openai_agents): front desk (owner lookup, history) hands off to the
treatment planner (scale, a dose-advisor sub-agent per drug via as_tool, parallel interaction checks,
dispensing cabinet)."""

from __future__ import annotations

import json
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool, handoff

from suite_m import kit
from trajdebug.testing import Reply, tool_call


AGENT = "vet-clinic-desk"
ROUTE = "openai_agents"
DOMAIN = "veterinary clinic (treatment and dispensing)"
SHAPE = "front desk (owner lookup, visit history) hands off to planner: scale, dose-advisor sub-agent per drug (chart, formulary, answer), parallel interaction checks, dispense per drug"

# patient -> (name, owner, species, weight_kg, intolerances)
PATIENTS = {
    "P-2231": ("Biscuit", "O-118", "dog", 28.4, ["meloxicam"]),
    "P-2232": ("Pepper", "O-118", "cat", 4.1, []),
    "P-3010": ("Miso", "O-204", "cat", 4.2, []),
    "P-3011": ("Tofu", "O-204", "dog", 12.5, []),
    "P-4107": ("Juniper", "O-377", "dog", 35.0, []),
    "P-4520": ("Clementine", "O-412", "cat", 5.3, []),
    "P-5002": ("Rocket", "O-530", "dog", 19.8, []),
    "P-5003": ("Noodle", "O-530", "cat", 3.6, []),
    "P-6115": ("Hazel", "O-611", "dog", 8.9, []),
}
OWNERS = {"O-118": "+1 555 0118", "O-204": "+1 555 0204", "O-377": "+1 555 0377", "O-412": "+1 555 0412", "O-530": "+1 555 0530", "O-611": "+1 555 0611"}
# (drug, species) -> (mg_per_kg, label range mg/kg)
FORMULARY = {
    ("carprofen", "dog"): (4.4, (2.2, 4.4)),
    ("carprofen", "cat"): (1.0, (1.0, 1.0)),
    ("gabapentin", "dog"): (10.0, (5.0, 10.0)),
    ("gabapentin", "cat"): (5.0, (2.5, 5.0)),
    ("maropitant", "dog"): (1.0, (1.0, 2.0)),
    ("maropitant", "cat"): (1.0, (1.0, 1.0)),
    ("meloxicam", "dog"): (0.1, (0.1, 0.2)),
    ("amoxicillin", "dog"): (12.5, (10.0, 20.0)),
    ("amoxicillin", "cat"): (12.5, (10.0, 20.0)),
}
HISTORY = {
    "P-2231": [{"date": "2026-06-11", "note": "meloxicam 0.1 mg/kg for stifle pain; stopped after 3 days, vomiting"},
               {"date": "2026-09-30", "note": "TPLO surgery scheduled, left stifle"}],
}


def _visit(n: int, patient: str, reason: str, drugs: list[str]) -> dict:
    name, owner = PATIENTS[patient][0], PATIENTS[patient][1]
    return {"task": f"Visit V-{n}: {name} ({reason}); dispense {', '.join(drugs)}", "visit": f"V-{n}",
            "phone": OWNERS[owner], "pet": name, "patient": patient, "reason": reason, "drugs": drugs}


INPUTS = [
    _visit(801, "P-2231", "post-op pain after TPLO", ["carprofen", "gabapentin"]),
    _visit(802, "P-2231", "post-op pain after TPLO", ["carprofen", "maropitant"]),
    _visit(803, "P-4107", "hip pain, car sickness", ["carprofen", "maropitant"]),
    _visit(804, "P-3010", "dental extraction recovery", ["gabapentin", "amoxicillin"]),
    _visit(805, "P-5002", "cruciate strain", ["gabapentin", "carprofen"]),
]
REFERENCES = [
    _visit(901, "P-4520", "abscess", ["amoxicillin", "gabapentin"]),
    _visit(902, "P-6115", "travel nausea, ear infection", ["maropitant", "amoxicillin"]),
    _visit(903, "P-3011", "limping", ["carprofen", "gabapentin"]),
    _visit(904, "P-5003", "vomiting", ["maropitant", "amoxicillin"]),
]

CASES = [
    {"case": "m_vetclinic_1", "fid": "vet1", "kind": "subagent_wrong_entity", "input": 0, "root": "generation fake-model", "marker": "Pepper", "failure": "dispense"},
    {"case": "m_vetclinic_2", "fid": "vet2", "kind": "context_pollution", "input": 1, "root": "generation fake-model", "marker": "meloxicam", "failure": "dispense"},
    {"case": "m_vetclinic_3", "fid": "vet3", "kind": "format_drift", "input": 2, "root": "generation fake-model", "marker": "1.0 mg/kg", "failure": "dispense"},
    {"case": "m_vetclinic_4", "fid": "vet4", "kind": "tool_ignores_argument", "input": 3, "root": "formulary_lookup", "marker": "dog", "failure": "dispense"},
    {"case": "m_vetclinic_5", "fid": "vet5", "kind": "unit_error", "input": 4, "root": "weigh_in", "marker": "43.7", "failure": "dispense"},
]


def _results(msgs: list[dict]) -> list[tuple[str, str]]:
    names = {}
    for m in msgs:
        for c in m.get("tool_calls") or ():
            names[c["id"]] = c["function"]["name"]
    return [(names.get(m.get("tool_call_id"), ""), m.get("content") or "") for m in msgs if m.get("role") == "tool"]


def policy(inp: dict):
    def answer(request) -> Any:
        msgs = request.body["messages"]
        system = msgs[0]["content"]
        res = _results(msgs)
        if system.startswith("You are the front desk"):
            if not res:
                return Reply(tool_calls=(tool_call("lookup_owner", {"phone": inp["phone"]}),))
            if len(res) == 1:
                pets = json.loads(res[0][1])["pets"]
                pid = next(p["patient"] for p in pets if p["name"] == inp["pet"])
                return Reply(tool_calls=(tool_call("visit_history", {"patient_id": pid}),))
            return Reply(tool_calls=(tool_call("transfer_to_treatment_planner", {}),))
        if system.startswith("You advise doses"):
            ask = json.loads(next(m["content"] for m in msgs if m["role"] == "user"))
            if not res:
                pet = ask["pet"]
                if pet == "Biscuit" and kit.active("vet1"):
                    pet = "Pepper"
                return Reply(tool_calls=(tool_call("patient_chart", {"owner_id": ask["owner_id"], "pet_name": pet}),))
            chart = json.loads(res[0][1])
            if len(res) == 1:
                return Reply(tool_calls=(tool_call("formulary_lookup", {"drug": ask["drug"], "species": chart["species"]}),))
            form = json.loads(res[1][1])
            dose = round(ask["weight_kg"] * form["mg_per_kg"], 1)
            if ask["drug"] == "maropitant" and kit.active("vet3"):
                return json.dumps({"pet": chart["name"], "drug": ask["drug"], "dose": f"{form['mg_per_kg']} mg/kg"})
            return json.dumps({"pet": chart["name"], "drug": ask["drug"], "mg_per_kg": form["mg_per_kg"], "dose_mg": dose})
        # the treatment planner
        pid = inp["patient"]
        if not any(n == "weigh_in" for n, _ in res):
            return Reply(tool_calls=(tool_call("weigh_in", {"patient_id": pid}),))
        weight = json.loads(next(c for n, c in res if n == "weigh_in"))["weight"]
        advised = [json.loads(c) for n, c in res if n == "dose_advisor"]
        drugs = list(inp["drugs"])
        if "meloxicam" not in drugs and kit.active("vet2"):
            drugs[0] = "meloxicam"
        if len(advised) < len(drugs):
            drug = drugs[len(advised)]
            ask = {"pet": inp["pet"], "owner_id": PATIENTS[pid][1], "weight_kg": weight, "drug": drug}
            return Reply(tool_calls=(tool_call("dose_advisor", {"input": json.dumps(ask)}),))
        if not any(n == "check_interactions" for n, _ in res):
            return Reply(tool_calls=tuple(tool_call("check_interactions", {"patient_id": pid, "drug": a["drug"]}) for a in advised))
        dispensed = [c for n, c in res if n == "dispense"]
        if len(dispensed) < len(advised):
            a = advised[len(dispensed)]
            dose = a.get("dose_mg")
            if dose is None:
                dose = float(str(a["dose"]).split()[0])
            return Reply(tool_calls=(tool_call("dispense", {"patient_id": pid, "drug": a["drug"], "dose_mg": dose}),))
        return f"Dispensed {', '.join(a['drug'] for a in advised)} for {inp['pet']}; owner notified."

    return answer


@function_tool
def lookup_owner(phone: str) -> str:
    """Find an owner and their pets by phone number."""
    owner = next(o for o, p in OWNERS.items() if p == phone)
    pets = [{"patient": pid, "name": v[0], "species": v[2]} for pid, v in PATIENTS.items() if v[1] == owner]
    return json.dumps({"owner_id": owner, "pets": pets})


@function_tool
def visit_history(patient_id: str) -> str:
    """Past visits and notes of a patient."""
    return json.dumps({"patient_id": patient_id, "visits": HISTORY.get(patient_id, [])})


@function_tool
def weigh_in(patient_id: str) -> str:
    """Read the exam-room scale for the patient on it."""
    weight = PATIENTS[patient_id][3]
    if kit.active("vet5"):
        weight = round(weight * 2.20462, 1)
    return json.dumps({"patient_id": patient_id, "weight": weight, "unit": "kg", "scale": "exam room 2"})


@function_tool
def patient_chart(owner_id: str, pet_name: str) -> str:
    """Open a patient's chart by owner and pet name."""
    pid = next(p for p, v in PATIENTS.items() if v[1] == owner_id and v[0] == pet_name)
    name, _, species, weight, intol = PATIENTS[pid]
    return json.dumps({"patient_id": pid, "name": name, "species": species, "chart_weight_kg": weight, "intolerances": intol})


@function_tool
def formulary_lookup(drug: str, species: str) -> str:
    """Label dose of a drug for a species."""
    used = species
    if kit.active("vet4"):
        used = "dog"
    mg, (lo, hi) = FORMULARY[(drug, used)]
    return json.dumps({"drug": drug, "species": used, "mg_per_kg": mg, "label_range_mg_per_kg": [lo, hi]})


@function_tool
def check_interactions(patient_id: str, drug: str) -> str:
    """Check a drug against the patient's current medications."""
    return json.dumps({"patient_id": patient_id, "drug": drug, "interactions": []})


def _dispense(patient_id: str, drug: str, dose_mg: float) -> str:
    name, _, species, weight, intol = PATIENTS[patient_id]
    if drug in intol:
        raise ValueError(f"dispensing cabinet: {drug} blocked for {name} ({patient_id}), intolerance on file")
    lo, hi = FORMULARY[(drug, species)][1]
    if not (lo * weight * 0.95 <= dose_mg <= hi * weight * 1.05):
        raise ValueError(f"dispensing cabinet: {dose_mg} mg {drug} for {name} ({weight} kg {species}) outside {lo}-{hi} mg/kg")
    return json.dumps({"patient_id": patient_id, "drug": drug, "dose_mg": dose_mg, "drawer": f"D-{len(drug)}"})


dispense = function_tool(_dispense, name_override="dispense", description_override="Dispense a dose from the cabinet.",
                         failure_error_function=None)


def build(model):
    advisor = Agent(name="dose_advisor", model=model, tools=[patient_chart, formulary_lookup],
                    instructions="You advise doses: open the chart, look up the label dose for the species, answer JSON.")
    planner = Agent(name="treatment_planner", model=model,
                    tools=[weigh_in, advisor.as_tool(tool_name="dose_advisor", tool_description="Advise the dose of one drug."),
                           check_interactions, dispense],
                    instructions="You are the treatment planner: weigh the patient, get each dose, check interactions, dispense.")
    desk = Agent(name="front_desk", model=model, tools=[lookup_owner, visit_history],
                 handoffs=[handoff(planner, tool_name_override="transfer_to_treatment_planner")],
                 instructions="You are the front desk: find the owner and the pet, read its history, hand over to the planner.")
    return desk


def execute(inp: dict, env) -> None:
    desk = build(env.agents_model())
    env.run_async(Runner.run(desk, inp["task"], max_turns=30,
                    run_config=RunConfig(workflow_name=AGENT, trace_metadata={"task": inp["task"]})))
