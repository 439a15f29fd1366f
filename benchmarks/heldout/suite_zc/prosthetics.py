"""Prosthetics lab (sdk route): a clinician's referral becomes a fabrication work order for a limb."""

from __future__ import annotations

import json
import re

import trajdebug
from openai import OpenAI

from .common import Case
from .kit import active

AGENT = "prosthetics-lab"
ROUTE = "sdk"
EXT = "jsonl"

INPUTS = {
    "p3391": {"patient": "P-3391", "note": "Right transtibial. Residual limb circumference 31.5 cm, length 14 cm. "
              "Activity level K3. Weight 82 kg."},
    "p4410": {"patient": "P-4410", "note": "Left transtibial. Residual limb circumference 27.0 cm, length 16 cm. "
              "Activity level K2. Weight 64 kg."},
}
REFS = [
    {"patient": "P-1002", "note": "Left transtibial. Residual limb circumference 29.0 cm, length 12 cm. Activity level K3. Weight 77 kg."},
    {"patient": "P-2210", "note": "Right transtibial. Residual limb circumference 33.5 cm, length 15 cm. Activity level K4. Weight 84 kg."},
    {"patient": "P-2875", "note": "Right transtibial. Residual limb circumference 26.0 cm, length 13 cm. Activity level K2. Weight 58 kg."},
    {"patient": "P-3050", "note": "Left transtibial. Residual limb circumference 30.5 cm, length 17 cm. Activity level K3. Weight 85 kg."},
]

CASES = [
    Case("zc06", "zc-pr-1", "hallucinated_value", "p3391", ("extract_measurements", 1), ("submit_to_fabrication", 1),
         "The model reports a body weight of 128 kg that the referral does not contain, so a heavy-duty pylon is selected for an 82 kg patient."),
    Case("zc07", "zc-pr-2", "context_pollution", "p3391", ("build_context", 1), ("submit_to_fabrication", 1),
         "build_context pastes the previous patient's scan notes into the prompt, and the model takes that patient's 27.0 cm circumference."),
    Case("zc08", "zc-pr-3", "plan_error", "p3391", ("plan_fabrication", 1), ("submit_to_fabrication", 1),
         "The fabrication plan puts definitive lamination before the test-socket fitting."),
    Case("zc09", "zc-pr-4", "wrong_retrieval", "p4410", ("retrieve_component_specs", 1), ("select_foot", 1),
         "The spec search returns the K3-K4 dynamic feet for a K2 patient, and the foot selector finds no foot rated for K2."),
    Case("zc10", "zc-pr-5", "bad_memory_write", "p4410", ("save_work_order", 1), ("submit_to_fabrication", 1),
         "save_work_order writes the side from the lab's default template (right) instead of the referral's left."),
]

RECORDS = {
    "P-3391": {"clinic": "Northgate", "prior_scan": "P-3390 scan: residual limb circumference 27.0 cm, length 11 cm"},
    "P-4410": {"clinic": "Riverside", "prior_scan": "none"},
    "P-1002": {"clinic": "Northgate", "prior_scan": "none"},
    "P-2210": {"clinic": "Harbour", "prior_scan": "none"},
    "P-2875": {"clinic": "Riverside", "prior_scan": "none"},
    "P-3050": {"clinic": "Harbour", "prior_scan": "none"},
}
FEET = [
    {"model": "F-110", "levels": ["K1", "K2"], "type": "SACH"},
    {"model": "F-220", "levels": ["K2", "K3"], "type": "multiaxial"},
    {"model": "F-330", "levels": ["K3", "K4"], "type": "dynamic carbon"},
    {"model": "F-440", "levels": ["K4"], "type": "running blade"},
]
PYLONS = [{"model": "PY-100", "max_kg": 100}, {"model": "PY-150HD", "max_kg": 150}]
STAGES = ["cast", "test_socket", "fitting", "lamination", "alignment", "delivery"]


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    if prompt.startswith("Read the measurements"):
        text = prompt.split("\n", 1)[1]
        circ = re.findall(r"circumference ([\d.]+) cm", text)
        values = {
            "side": re.search(r"(Right|Left)", text).group(1).lower(),
            "circumference_cm": float(circ[0]),
            "length_cm": float(re.search(r"length (\d+) cm", text).group(1)),
            "activity": re.search(r"Activity level (K\d)", text).group(1),
            "weight_kg": float(re.search(r"Weight (\d+) kg", text).group(1)),
        }
        if active("zc-pr-1"):
            values["weight_kg"] = 128.0
        return json.dumps(values)
    if prompt.startswith("Plan the fabrication stages"):
        stages = list(STAGES)
        if active("zc-pr-3"):
            stages = ["cast", "lamination", "test_socket", "fitting", "alignment", "delivery"]
        return json.dumps({"stages": stages})
    return "Unclear request."


class LabSystemError(Exception):
    pass


def record(inp: dict, path: str, server) -> None:
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)

    def ask(prompt: str) -> str:
        reply = client.chat.completions.create(model=server.model, messages=[{"role": "user", "content": prompt}])
        return reply.choices[0].message.content

    @trajdebug.step(kind="tool")
    def fetch_patient_record(patient: str) -> dict:
        return {"patient": patient, **RECORDS[patient]}

    @trajdebug.step(kind="other")
    def build_context(note: str, record_: dict) -> str:
        parts = [note]
        if active("zc-pr-2"):
            parts.insert(0, record_["prior_scan"])
        return "\n".join(parts)

    @trajdebug.step(kind="llm")
    def extract_measurements(context: str) -> dict:
        return json.loads(ask("Read the measurements from this referral:\n" + context))

    @trajdebug.step(kind="llm")
    def plan_fabrication(measurements: dict) -> dict:
        return json.loads(ask("Plan the fabrication stages for:\n" + json.dumps(measurements)))

    @trajdebug.step(kind="retrieval")
    def retrieve_component_specs(activity: str) -> list[dict]:
        query = "K4" if active("zc-pr-4") else activity
        return [f for f in FEET if query in f["levels"]]

    @trajdebug.step(kind="other")
    def select_foot(specs: list[dict], activity: str) -> dict:
        rated = [f for f in specs if activity in f["levels"]]
        if not rated:
            raise LabSystemError(f"no foot in catalogue results rated for activity level {activity} "
                                 f"(results: {', '.join(f['model'] for f in specs)})")
        return rated[-1]

    @trajdebug.step(kind="other")
    def select_pylon(weight_kg: float) -> dict:
        return next(p for p in PYLONS if p["max_kg"] >= weight_kg * 1.15)

    @trajdebug.step(kind="agent")
    def component_selector(measurements: dict) -> dict:
        specs = retrieve_component_specs(measurements["activity"])
        foot = select_foot(specs, measurements["activity"])
        pylon = select_pylon(measurements["weight_kg"])
        return {"foot": foot, "pylon": pylon}

    @trajdebug.step(kind="tool")
    def book_bench_time(stage: str, order: int) -> dict:
        return {"stage": stage, "bench": f"B{order % 3 + 1}", "slot": order}

    @trajdebug.step(kind="state")
    def save_work_order(patient: str, measurements: dict, components: dict, bookings: list[dict]) -> dict:
        side = "right" if active("zc-pr-5") else measurements["side"]
        order = {"patient": patient, "side": side, "circumference_cm": measurements["circumference_cm"],
                 "foot": components["foot"]["model"], "pylon": components["pylon"]["model"],
                 "stages": [b["stage"] for b in bookings]}
        trajdebug.current_run().state["work_order"] = order
        return order

    @trajdebug.step(kind="tool")
    def submit_to_fabrication(order: dict, referral: str, scan: dict) -> dict:
        errors = []
        side = re.search(r"(Right|Left)", referral).group(1).lower()
        if order["side"] != side:
            errors.append(f"side mismatch: work order {order['side']}, referral {side}")
        if abs(order["circumference_cm"] - scan["circumference_cm"]) > 1.0:
            errors.append(f"socket circumference {order['circumference_cm']} cm differs from 3D scan "
                          f"{scan['circumference_cm']} cm by more than 1.0 cm")
        weight = float(re.search(r"Weight (\d+) kg", referral).group(1))
        if order["pylon"] == "PY-150HD" and weight < 110:
            errors.append(f"pylon PY-150HD requires documented weight >= 110 kg (referral: {weight:.0f} kg)")
        st = order["stages"]
        if st.index("lamination") < st.index("fitting"):
            errors.append("QA gate: definitive lamination scheduled before test-socket fitting")
        if errors:
            raise LabSystemError("fabrication queue rejected order: " + "; ".join(errors))
        return {"queued": True, "job": f"FAB-{order['patient']}"}

    note = inp["note"]
    try:
        with trajdebug.run(AGENT, path=path, task=f"work order for {inp['patient']}"):
            with trajdebug.step("intake_referral", kind="input") as s:
                s.output = {"patient": inp["patient"], "note": note}
            rec = fetch_patient_record(inp["patient"])
            context = build_context(note, rec)
            measurements = extract_measurements(context)
            with trajdebug.step("load_scan", kind="tool", input={"patient": inp["patient"]}) as s:
                scan = {"circumference_cm": float(re.search(r"circumference ([\d.]+) cm", note).group(1)) + 0.3}
                s.output = scan
            plan = plan_fabrication(measurements)
            components = component_selector(measurements)
            bookings = [book_bench_time(stage, i) for i, stage in enumerate(plan["stages"])]
            order = save_work_order(inp["patient"], measurements, components, bookings)
            submit_to_fabrication(order, note, scan)
    except LabSystemError:
        pass
