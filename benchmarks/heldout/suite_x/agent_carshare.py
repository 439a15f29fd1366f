"""Car-share damage claims (route: openai_agents): triage hands off to a desk; an assessor sub-agent as a tool."""
from __future__ import annotations

import json
from contextlib import contextmanager

from agents import RunContextWrapper

from benchmarks.heldout.suite_x import kit

ROUTE = "openai_agents"
NAME = "carshare-damage-desk"

PRICES = {"bumper_scuff": 180.0, "mirror_cap": 95.0, "wheel_rim": 240.0, "door_dent": 320.0,
          "windscreen_chip": 120.0, "sill_crush": 1410.0, "pillar_dent": 2130.0, "tail_lamp": 165.0}
STRUCTURAL = {"sill_crush", "pillar_dent"}
FLEET_POLICY = "FLT-2026-114"
EXCESS_CAP = 500.0
BOOKINGS = {  # booking: (member, vehicle, previous member, damage items)
    "B-5001": ("M-2041", "EV-17", "M-1180", ["bumper_scuff", "mirror_cap"]),
    "B-5002": ("M-2233", "EV-04", "M-2041", ["sill_crush", "windscreen_chip"]),
    "B-5003": ("M-1180", "HB-22", "M-3310", ["sill_crush", "door_dent"]),
    "B-5004": ("M-3310", "EV-09", "M-2233", ["wheel_rim", "tail_lamp"]),
    "B-5005": ("M-4102", "HB-31", "M-1180", ["bumper_scuff", "mirror_cap", "tail_lamp"]),
    "B-5006": ("M-2587", "EV-17", "M-4102", ["pillar_dent"]),
    "B-5007": ("M-1775", "HB-22", "M-2587", ["door_dent", "windscreen_chip"]),
    "B-5008": ("M-3091", "EV-12", "M-1775", ["sill_crush", "bumper_scuff", "wheel_rim"]),
    "B-5009": ("M-4420", "EV-04", "M-3091", ["tail_lamp", "mirror_cap"]),
    "B-5010": ("M-2950", "HB-31", "M-4420", ["pillar_dent", "tail_lamp"]),
    "B-5011": ("M-1634", "EV-09", "M-2950", ["windscreen_chip", "bumper_scuff", "mirror_cap"]),
}
PAGE = 2


def _req(b):
    return {"booking": b, "reported_by": "return-bay camera", "ask": "settle the damage found at return"}


REFS = [_req("B-5001"), _req("B-5003"), _req("B-5004"), _req("B-5006")]
CASES = [
    dict(case="carshare_wrong_routing", fault_kind="wrong_routing", fault_id="carshare.route",
         input=_req("B-5008"), root="generation gpt-4o-mini", marker="transfer_to_minor_damage_desk"),
    dict(case="carshare_hallucinated_value", fault_kind="hallucinated_value", fault_id="carshare.policy_no",
         input=_req("B-5010"), root="generation gpt-4o-mini", marker="POL-88213"),
    dict(case="carshare_truncated_result", fault_kind="truncated_result", fault_id="carshare.report_page",
         input=_req("B-5011"), root="inspection_report", marker='"count": 2'),
    dict(case="carshare_format_drift", fault_kind="format_drift", fault_id="carshare.assessor_format",
         input=_req("B-5002"), root="generation gpt-4o-mini", marker="1.530,00"),
    dict(case="carshare_bad_memory_write", fault_kind="bad_memory_write", fault_id="carshare.note_member",
         input=_req("B-5005"), root="save_case_note", marker="M-1180"),
]


def _calls(messages):
    named, out = {}, []
    for m in messages:
        for c in m.get("tool_calls") or []:
            named[c["id"]] = (c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
        if m.get("role") == "tool" and m.get("tool_call_id") in named:
            content = m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
            out.append((*named[m["tool_call_id"]], content))
    return out


def _amount(text: str) -> float:
    t = text.replace("EUR", "").strip()
    return float(t.replace(",", ""))


def policy(request):
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    users = [m["content"] for m in msgs if m["role"] == "user"]
    done = _calls(msgs)
    names = [n for n, _, _ in done]
    res = {n: r for n, _, r in done}
    if system.startswith("You price"):
        parts = json.loads(users[-1])["parts"]
        if "parts_catalogue" not in names:
            return Reply(tool_calls=(tool_call("parts_catalogue", {"parts": parts}),))
        total = sum(json.loads(res["parts_catalogue"])["prices"].values())
        shown = f"{total:.2f}"
        if kit.active("carshare.assessor_format"):
            shown = f"{total:,.2f} EUR".replace(",", " ").replace(".", ",").replace(" ", ".", 1)
        return json.dumps({"parts": parts, "total_eur": shown})
    req = json.loads(users[0])
    if "fetch_booking" not in names:
        return Reply(tool_calls=(tool_call("fetch_booking", {"booking": req["booking"]}),))
    bk = json.loads(res["fetch_booking"])
    if system.startswith("You triage"):
        if "save_case_note" not in names:
            return Reply(tool_calls=(tool_call("save_case_note", {"booking": bk["booking"], "member": bk["member"]}),))
        if "inspection_report" not in names:
            return Reply(tool_calls=(tool_call("inspection_report", {"vehicle": bk["vehicle"], "booking": bk["booking"]}),))
        items = json.loads(res["inspection_report"])["items"]
        serious = any(i["severity"] == "structural" for i in items) and not kit.active("carshare.route")
        return Reply(tool_calls=(tool_call("transfer_to_insurance_desk" if serious else "transfer_to_minor_damage_desk", {}),))
    parts = [i["part"] for i in json.loads(res["inspection_report"])["items"]]
    if system.startswith("You settle minor"):
        if "read_case_note" not in names:
            return Reply(tool_calls=(tool_call("read_case_note", {}),))
        if "estimate_repair" not in names:
            return Reply(tool_calls=(tool_call("estimate_repair", {"parts": parts}),))
        if "charge_member" not in names:
            note = json.loads(res["read_case_note"])
            total = json.loads(res["estimate_repair"])["total_eur"]
            return Reply(tool_calls=(tool_call("charge_member", {"member": note["member"], "booking": bk["booking"],
                                                                  "amount_eur": total}),))
        return f"Charged: {res['charge_member']}"
    if system.startswith("You file"):
        if "damage_assessor" not in names:
            return Reply(tool_calls=(tool_call("damage_assessor", {"input": json.dumps({"parts": parts})}),))
        if "open_claim" not in names:
            total = _amount(json.loads(res["damage_assessor"])["total_eur"])
            pol = "POL-88213" if kit.active("carshare.policy_no") else bk["policy"]
            return Reply(tool_calls=(tool_call("open_claim", {"policy": pol, "booking": bk["booking"],
                                                               "amount_eur": total, "parts": parts}),))
        return f"Claim filed: {res['open_claim']}"
    return "Done."


class Session:
    def __init__(self):
        from agents import Agent, OpenAIChatCompletionsModel, function_tool
        from openai import AsyncOpenAI
        from trajdebug.testing import FakeModelServer

        self.server = FakeModelServer(policy, model="gpt-4o-mini").start()
        client = AsyncOpenAI(base_url=self.server.base_url, api_key="not-needed", max_retries=0)
        model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)

        @function_tool
        def fetch_booking(booking: str) -> str:
            """The booking record for a returned car."""
            member, vehicle, prev, _ = BOOKINGS[booking]
            return json.dumps({"booking": booking, "member": member, "vehicle": vehicle,
                               "previous_member": prev, "policy": FLEET_POLICY})

        @function_tool
        def save_case_note(ctx: RunContextWrapper[dict], booking: str, member: str) -> str:
            """Save the case note (who is liable) for the desks."""
            if kit.active("carshare.note_member"):
                member = BOOKINGS[booking][2]
            ctx.context["note"] = {"booking": booking, "member": member}
            return json.dumps({"saved": True, **ctx.context["note"]})

        @function_tool
        def read_case_note(ctx: RunContextWrapper[dict]) -> str:
            """Read the case note."""
            return json.dumps(ctx.context["note"])

        @function_tool
        def inspection_report(vehicle: str, booking: str) -> str:
            """Damage found by the return-bay inspection."""
            items = [{"part": p, "severity": "structural" if p in STRUCTURAL else "cosmetic"} for p in BOOKINGS[booking][3]]
            if kit.active("carshare.report_page"):
                items = items[:PAGE]
            return json.dumps({"inspection": f"INS-{booking[2:]}", "vehicle": vehicle, "items": items, "count": len(items)})

        @function_tool
        def estimate_repair(parts: list[str]) -> str:
            """Workshop estimate for a list of damaged parts."""
            return json.dumps({"parts": parts, "total_eur": round(sum(PRICES[p] for p in parts), 2)})

        @function_tool
        def parts_catalogue(parts: list[str]) -> str:
            """Catalogue prices for parts."""
            return json.dumps({"prices": {p: PRICES[p] for p in parts}})

        @function_tool(failure_error_function=None)
        def charge_member(member: str, booking: str, amount_eur: float) -> str:
            """Charge a member's card for damage."""
            owner, _, _, items = BOOKINGS[booking]
            if member != owner:
                raise RuntimeError(f"payments API 409: member {member} has no active booking {booking}")
            due = round(sum(PRICES[p] for p in items), 2)
            if due > EXCESS_CAP:
                raise RuntimeError(f"payments API 422: charge of {amount_eur:.2f} EUR on {booking} exceeds the "
                                   f"{EXCESS_CAP:.0f} EUR damage excess")
            if abs(amount_eur - due) > 0.01:
                raise RuntimeError(f"payments API 422: charge {amount_eur:.2f} EUR does not match inspection "
                                   f"INS-{booking[2:]} ({due:.2f} EUR)")
            return json.dumps({"charged": amount_eur, "member": member, "receipt": f"PAY-{booking[2:]}"})

        @function_tool(failure_error_function=None)
        def open_claim(policy: str, booking: str, amount_eur: float, parts: list[str]) -> str:
            """Open a claim with the fleet insurer."""
            if policy != FLEET_POLICY:
                raise RuntimeError(f"insurer API 404: no policy {policy} for this fleet account")
            due = round(sum(PRICES[p] for p in BOOKINGS[booking][3]), 2)
            if abs(amount_eur - due) > 0.01:
                raise RuntimeError(f"insurer API 422: claimed {amount_eur:.2f} EUR differs from the assessed "
                                   f"{due:.2f} EUR for {booking}")
            return json.dumps({"claim": f"CLM-{booking[2:]}", "status": "open"})

        assessor = Agent(name="damage_assessor_agent", model=model, tools=[parts_catalogue],
                         instructions="You price damaged parts from the catalogue and answer JSON with total_eur.")
        minor = Agent(name="minor_damage_desk", model=model, tools=[read_case_note, fetch_booking, estimate_repair, charge_member],
                      instructions="You settle minor damage: read the case note, estimate, charge the liable member.")
        insurer = Agent(name="insurance_desk", model=model, tools=[fetch_booking, assessor.as_tool(
            tool_name="damage_assessor", tool_description="Price the damaged parts."), open_claim],
                        instructions="You file structural damage with the fleet insurer.")
        self.triage = Agent(name="damage_triage", model=model, tools=[fetch_booking, save_case_note, inspection_report],
                            handoffs=[minor, insurer],
                            instructions="You triage damage found at return and hand over to the right desk.")

    def close(self):
        self.server.stop()


@contextmanager
def session():
    s = Session()
    try:
        yield s
    finally:
        s.close()


def record(sess: Session, path, request) -> None:
    from agents import RunConfig, Runner, set_trace_processors
    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    proc = TrajdebugProcessor(path=str(path), name=NAME)
    set_trace_processors([proc])
    try:
        Runner.run_sync(sess.triage, json.dumps(request), context={}, max_turns=30,
                        run_config=RunConfig(workflow_name=NAME, trace_metadata={"task": f"settle damage on {request['booking']}"}))
    except Exception:  # noqa: BLE001 - the run failed; the trace records why
        pass
    set_trace_processors([])
