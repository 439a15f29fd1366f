"""Hospital blood bank (OpenInference on the `openai` client, exported as OTLP JSON): for each ward
request the model triages the priority, the agent routes it to emergency release or to the crossmatch
path, reads the donor compatibility table, searches the inventory, has a crossmatch sub-agent test the
units against the patient and releases them through the laboratory system; a final check keeps the
O-negative emergency reserve."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from benchmarks.heldout.suite_i import _otlp
from benchmarks.heldout.suite_i._kit import Case, active, json_in, last_user, outputs_so_far, system_of
from openai import OpenAI

from trajdebug.testing import FakeModelServer, Reply, tool_call


NAME = "blood-bank-allocator"
ROUTE = "otlp"

COMPATIBLE = {  # recipient -> red-cell donor types, the recipient's own first, O- last
    "O-": ["O-"], "O+": ["O+", "O-"], "A-": ["A-", "O-"], "A+": ["A+", "A-", "O+", "O-"],
    "B-": ["B-", "O-"], "B+": ["B+", "B-", "O+", "O-"], "AB-": ["AB-", "A-", "B-", "O-"],
    "AB+": ["AB+", "AB-", "A+", "A-", "B+", "B-", "O+", "O-"],
}
PATIENTS = {  # MRN -> (type, needs irradiated units, mother's MRN for a newborn)
    "MRN-1042": ("A+", False, None), "MRN-1187": ("O+", False, None), "MRN-2210": ("B-", False, None),
    "MRN-2391": ("A-", False, None), "MRN-3055": ("AB+", True, None), "MRN-3302": ("O-", False, None),
    "MRN-4120": ("A+", True, None), "MRN-5501": ("B+", False, "MRN-5510"), "MRN-5510": ("O+", False, None),
    "MRN-6034": ("AB-", False, None), "MRN-6675": ("O+", False, None), "MRN-7218": ("A-", False, None),
}
# The fridge: unit -> (type, irradiated, expiry day of December)
UNITS = {f"U-{n}": spec for n, spec in enumerate([
    ("O-", False, 6), ("O-", False, 8), ("O-", True, 9), ("O-", False, 12), ("O-", False, 15),
    ("O+", False, 5), ("O+", False, 7), ("O+", True, 9), ("O+", False, 11), ("O+", False, 14), ("O+", False, 16),
    ("A+", False, 4), ("A+", False, 6), ("A+", True, 8), ("A+", True, 10), ("A+", False, 13), ("A+", False, 15),
    ("A-", False, 7), ("A-", False, 12), ("B+", False, 6), ("B+", False, 10), ("B-", False, 9), ("B-", False, 14),
    ("AB+", True, 7), ("AB+", False, 9), ("AB-", False, 11),
], start=3101)}
INPUTS = {  # shift -> requests (request, ward, MRN, units, clinical note)
    "night-1": [("R-11", "ICU", "MRN-1042", 2, "post-op anaemia, Hb 6.9"), ("R-12", "NICU", "MRN-5501", 1, "newborn, exchange top-up"),
                ("R-13", "ER", "MRN-6675", 1, "massive haemorrhage, trauma bay"), ("R-14", "ward 4", "MRN-2210", 1, "chronic anaemia")],
    "night-2": [("R-21", "oncology", "MRN-3055", 1, "chemotherapy, Hb 7.2"), ("R-22", "oncology", "MRN-4120", 2, "stem-cell transplant, Hb 6.8"),
                ("R-23", "ward 2", "MRN-1187", 1, "GI bleed, stable")],
    "night-3": [("R-31", "ward 6", "MRN-1187", 1, "chronic anaemia"), ("R-32", "theatre", "MRN-2391", 2, "hip surgery today"),
                ("R-33", "ICU", "MRN-6034", 1, "sepsis, Hb 7.0"), ("R-34", "ward 1", "MRN-1042", 1, "post-op anaemia")],
    "night-4": [("R-41", "theatre", "MRN-1042", 2, "cardiac surgery today"), ("R-42", "ward 3", "MRN-7218", 2, "hip surgery today"),
                ("R-43", "ward 5", "MRN-2210", 1, "chronic anaemia")],
    "night-5": [("R-91", "ward 6", "MRN-2210", 1, "chronic anaemia"), ("R-92", "ICU", "MRN-1187", 2, "sepsis, Hb 6.9"),
                ("R-93", "ward 2", "MRN-6034", 1, "GI bleed, stable")],
    "ref-a": [("R-51", "ICU", "MRN-6675", 2, "post-op anaemia, Hb 6.5"), ("R-52", "ER", "MRN-3302", 1, "massive haemorrhage, stabbing")],
    "ref-b": [("R-61", "ward 2", "MRN-2210", 1, "chronic anaemia"), ("R-62", "NICU", "MRN-5501", 1, "newborn, top-up"),
              ("R-63", "oncology", "MRN-4120", 1, "stem-cell transplant")],
    "ref-c": [("R-71", "theatre", "MRN-7218", 1, "knee surgery today"), ("R-72", "ward 4", "MRN-1187", 2, "GI bleed, stable"),
              ("R-73", "oncology", "MRN-3055", 1, "chemotherapy"), ("R-74", "ward 1", "MRN-6034", 1, "chronic anaemia")],
    "ref-d": [("R-81", "ICU", "MRN-2391", 1, "sepsis, Hb 7.1"), ("R-82", "ward 6", "MRN-1042", 1, "chronic anaemia")],
}
REFS = ("ref-a", "ref-b", "ref-c", "ref-d")
ALL_REQUESTS = [req for shift in INPUTS.values() for req in shift]
O_NEG_RESERVE = 4

CASES = (
    Case("bloodbank-newborn", "bb_mother", "subagent_wrong_entity", "night-1", "ChatCompletion", '"mrn": "MRN-5510"',
         "The crossmatch sub-agent tests the newborn's units against the mother's sample (MRN-5510) instead of the baby's."),
    Case("bloodbank-irradiated", "bb_irr", "tool_ignores_argument", "night-2", "find_units",
         '"request": "R-22", "units": [{"irradiated": false',
         "The inventory search ignores irradiated=true for the transplant patient's request and returns plain units."),
    Case("bloodbank-table", "bb_table", "wrong_retrieval", "night-3", "lookup_compatibility",
         '"query": "A-", "row": {"donor_types": ["A+"',
         "The compatibility lookup for an A- recipient retrieves the A+ row, so an Rh-positive unit is chosen."),
    Case("bloodbank-count", "bb_count", "off_by_one", "night-5", "find_units", '"unit": "U-3108"',
         "The inventory search for R-92 returns n + 1 units (three for an order of two)."),
    Case("bloodbank-route", "bb_route", "wrong_routing", "night-4", "route_request",
         '"path": "emergency_release", "request": "R-42"',
         "The router sends R-42, a planned hip operation, down the emergency-release path, drawing O-negative units."),
)


class LabRejected(RuntimeError):
    """The laboratory information system refused a release, or the reserve check failed."""

    __module__ = "hemolis.api"


# -- the scripted model ----------------------------------------------------------------------------


def policy(request: Any) -> Reply | str:
    data = json_in(last_user(request))
    if system_of(request).startswith("You triage"):
        note = data["clinical"]
        label = "EMERGENCY" if "massive" in note else "URGENT" if "today" in note else "ROUTINE"
        return f"Priority: {label}. Ward {data['ward']}, {data['units']} unit(s) requested."
    out = outputs_so_far(request)
    if "run_crossmatch" not in out:
        mrn = data["mother_mrn"] if active("bb_mother") and data.get("mother_mrn") else data["patient_mrn"]
        return Reply(tool_calls=(tool_call("run_crossmatch", {"mrn": mrn, "units": data["units"]}),))
    result = out["run_crossmatch"][0]
    return f"Crossmatch {result['crossmatch']}: {result['result']} for {', '.join(result['units'])}."


# -- the agent's steps -----------------------------------------------------------------------------


def _route(request: str, reply: str) -> str:
    with _otlp.span("route_request", "CHAIN", {"request": request, "triage": reply}) as s:
        label = re.search(r"Priority: (\w+)", reply).group(1)
        path = "emergency_release" if label == "EMERGENCY" else "crossmatch"
        if active("bb_route") and request == "R-42":
            path = "emergency_release" if label == "URGENT" else path
        s.output = {"request": request, "path": path}
    return path


def _compatibility(recipient: str) -> list[str]:
    with _otlp.span("lookup_compatibility", "RETRIEVER", {"recipient": recipient}) as s:
        row = "A+" if active("bb_table") and recipient == "A-" else recipient
        s.output = {"query": recipient, "row": {"recipient": row, "donor_types": COMPATIBLE[row]}}
    return s.output["row"]["donor_types"]


def _find(stock: dict[str, Any], request: str, types: list[str], irradiated: bool, n: int) -> list[str]:
    args = {"request": request, "types": types, "irradiated": irradiated, "n": n}
    with _otlp.span("find_units", "TOOL", args) as s:
        wanted = irradiated and not (active("bb_irr") and request == "R-22")
        fits = [u for u, (t, irr, _) in stock.items() if t in types and (irr or not wanted)]
        fits.sort(key=lambda u: (types.index(stock[u][0]), stock[u][2]))
        take = n + 1 if active("bb_count") and request == "R-92" else n
        s.output = {"request": request, "units": [{"unit": u, "type": stock[u][0], "irradiated": stock[u][1]}
                                                   for u in fits[:take]]}
    return [u["unit"] for u in s.output["units"]]


def _crossmatch(client: OpenAI, brief: dict[str, Any]) -> dict[str, Any]:
    with _otlp.span("crossmatch_agent", "AGENT", brief) as agent:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You run crossmatches for the blood bank with the analyser tool."},
            {"role": "user", "content": "Crossmatch these units: " + json.dumps(brief)}]
        reply = client.chat.completions.create(model="xm-assistant", messages=messages, tools=[XM_TOOL])
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        [call] = message.tool_calls or ()
        args = json.loads(call.function.arguments)
        with _otlp.span("run_crossmatch", "TOOL", args) as tool:
            tool.output = {"crossmatch": f"XM-{args['mrn'][4:]}-{len(args['units'])}", "mrn": args["mrn"],
                           "units": args["units"], "result": "compatible"}
        messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(tool.output)})
        summary = client.chat.completions.create(model="xm-assistant", messages=messages, tools=[XM_TOOL])
        agent.output = {"crossmatch": tool.output, "summary": summary.choices[0].message.content}
    return tool.output


def _release(stock: dict[str, Any], request: str, mrn: str, units: list[str], xm: dict[str, Any]) -> None:
    with _otlp.span("release_units", "TOOL", {"request": request, "mrn": mrn, "units": units, "crossmatch": xm["crossmatch"]}) as s:
        kind, irradiated, _ = PATIENTS[mrn]
        ordered = next(n for r, _, _, n, _ in ALL_REQUESTS if r == request)
        if len(units) != ordered:
            raise LabRejected(f"{request}: {len(units)} units presented for issue, the order is for {ordered}")
        if xm["mrn"] != mrn:
            raise LabRejected(f"{request}: crossmatch {xm['crossmatch']} was performed on {xm['mrn']}, the request is for {mrn}")
        for unit in units:
            if stock[unit][0] not in COMPATIBLE[kind]:
                raise LabRejected(f"{request}: unit {unit} ({stock[unit][0]}) is not compatible with recipient {kind}")
            if irradiated and not stock[unit][1]:
                raise LabRejected(f"{request}: {mrn} requires irradiated components, unit {unit} is not irradiated")
        for unit in units:
            del stock[unit]
        s.output = {"request": request, "released": units, "issue": f"ISS-{request[2:]}-{len(units)}"}


def _emergency(stock: dict[str, Any], request: str, n: int) -> None:
    units = _find(stock, request, ["O-"], False, n)
    with _otlp.span("release_emergency", "TOOL", {"request": request, "units": units}) as s:
        for unit in units:
            del stock[unit]
        s.output = {"request": request, "released": units, "issue": f"EMR-{request[2:]}"}


def _reserve_check(stock: dict[str, Any]) -> None:
    with _otlp.span("check_reserve", "CHAIN", {"units": len(stock)}) as s:
        o_neg = sum(1 for t, _, _ in stock.values() if t == "O-")
        if o_neg < O_NEG_RESERVE:
            raise LabRejected(f"O-negative stock is {o_neg} units after the shift, under the emergency reserve of {O_NEG_RESERVE}")
        s.output = {"o_negative": o_neg, "reserve_ok": True}


XM_TOOL = {"type": "function", "function": {
    "name": "run_crossmatch", "description": "Crossmatch donor units against a patient's sample.",
    "parameters": {"type": "object", "properties": {"mrn": {"type": "string"}, "units": {"type": "array", "items": {"type": "string"}}},
                   "required": ["mrn", "units"]}}}


def _request(client: OpenAI, stock: dict[str, Any], req: tuple[str, str, str, int, str]) -> None:
    request, ward, mrn, n, note = req
    triage = client.chat.completions.create(model="bb-triage", messages=[
        {"role": "system", "content": "You triage blood requests: EMERGENCY, URGENT or ROUTINE."},
        {"role": "user", "content": "Request: " + json.dumps({"request": request, "ward": ward, "units": n, "clinical": note})}])
    if _route(request, triage.choices[0].message.content or "") == "emergency_release":
        _emergency(stock, request, n)
        return
    kind, irradiated, mother = PATIENTS[mrn]
    units = _find(stock, request, _compatibility(kind), irradiated, n)
    xm = _crossmatch(client, {"request": request, "patient_mrn": mrn, "mother_mrn": mother, "units": units})
    _release(stock, request, mrn, units, xm)


def record(server: FakeModelServer, input_id: str, path: Path) -> None:
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    stock = dict(UNITS)
    with _otlp.trace_to(path):
        try:
            with _otlp.span(NAME, "AGENT", {"shift": input_id}) as root:
                with _otlp.span("load_requests", "TOOL", {"shift": input_id}) as s:
                    s.output = [{"request": r, "ward": w, "mrn": m, "units": n} for r, w, m, n, _ in INPUTS[input_id]]
                for req in INPUTS[input_id]:
                    _request(client, stock, req)
                _reserve_check(stock)
                root.output = {"requests": len(INPUTS[input_id]), "units_left": len(stock)}
        except LabRejected:
            pass
