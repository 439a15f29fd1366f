"""Walking-stick maker: a planner model writes the fitting plan, which the desk executes step by step:
measurements into the fitting notebook, a path choice (standard or orthopaedic), a wood-buyer sub-agent that
reserves a blank at the timber yard, then per stick: cut, handle, ferrule; a final fit check asserts the result.

Route: OpenInference (openai client instrumented) + the agent's own OpenTelemetry spans, exported as OTLP JSON.
"""

from __future__ import annotations

import json

import suite_common as sc

RUN_NAME = "walkingstick-fitting-desk"
ROUTE = "otlp"
DOMAIN = "walking-stick maker's custom fittings"
SHAPE = "OTLP spans: model plan -> parser -> plan executed step by step: measurement tool, notebook memory write/read, path router, wood-buyer sub-agent (its own model call, search and reserve tools), per-stick cut/handle/ferrule tools, final fit-check assertion (13-19 steps)"
ACTIVE = None

INPUTS = [
    {"fitting": "F-61", "customer": "Ms Ibsen", "height": "168 cm", "wrist": "84 cm", "use": "daily", "wood": "ash", "handle": "crook", "sticks": 1, "referral": None},
    {"fitting": "F-62", "customer": "Mr Dale", "height": "71 in", "wrist": "36 in", "use": "hiking", "wood": "hazel", "handle": "knob", "sticks": 2, "referral": None},
    {"fitting": "F-63", "customer": "Mrs Kaur", "height": "160 cm", "wrist": "79 cm", "use": "orthopaedic", "wood": "chestnut", "handle": "crook", "sticks": 1, "referral": "R-7"},
    {"fitting": "F-64", "customer": "Mr Osei", "height": "181 cm", "wrist": "90 cm", "use": "daily", "wood": "blackthorn", "handle": "derby", "sticks": 1, "referral": None},
    {"fitting": "F-65", "customer": "Ms Varga", "height": "65 in", "wrist": "33 in", "use": "hiking", "wood": "ash", "handle": "knob", "sticks": 2, "referral": None},
]
YARD = [
    {"blank": "BL-A11", "wood": "ash", "length_cm": 110, "held_for": None},
    {"blank": "BL-A12", "wood": "ash", "length_cm": 105, "held_for": None},
    {"blank": "BL-A13", "wood": "ash", "length_cm": 108, "held_for": None},
    {"blank": "BL-H21", "wood": "hazel", "length_cm": 130, "held_for": None},
    {"blank": "BL-H22", "wood": "hazel", "length_cm": 125, "held_for": None},
    {"blank": "BL-C31", "wood": "chestnut", "length_cm": 100, "held_for": None},
    {"blank": "BL-B40", "wood": "blackthorn", "length_cm": 102, "held_for": "F-59"},
    {"blank": "BL-B41", "wood": "blackthorn", "length_cm": 104, "held_for": None},
]
HANDLE_CM = {"crook": 4.0, "knob": 3.0, "derby": 3.5, "offset": 5.0}
FERRULE_CM = 1.5
CASES = [
    {"id": "zzzf_walkingstick_01", "input": 1, "switch": "inch_card", "fault_kind": "unit_error",
     "root": ("take_measurements", 1), "failure": "cut_shaft",
     "description": "The measurement step reads the wrist height on an inch card as centimetres, so the pair of hiking sticks is cut to a 36 cm target and the shaft falls under the minimum length."},
    {"id": "zzzf_walkingstick_02", "input": 0, "switch": "height_in_wrist", "fault_kind": "bad_memory_write",
     "root": ("notebook.write", 1), "failure": "cut_shaft",
     "description": "The fitting notebook entry stores the customer's height in the wrist-height field, so the shaft is sized from 168 cm and no ash blank is long enough."},
    {"id": "zzzf_walkingstick_03", "input": 2, "switch": "referral_ignored", "fault_kind": "wrong_routing",
     "root": ("choose_fitting_path", 1), "failure": "fit_check",
     "description": "The path choice sends an orthopaedic referral down the standard path, so the stick gets the crook handle instead of the offset handle the referral requires."},
    {"id": "zzzf_walkingstick_04", "input": 3, "switch": "queue_blank", "fault_kind": "subagent_wrong_entity",
     "root": ("ChatCompletion", 2), "failure": "cut_shaft",
     "description": "The wood-buyer sub-agent's model picks the blackthorn blank held for fitting F-59, and the workshop refuses to cut a blank held for another order."},
    {"id": "zzzf_walkingstick_05", "input": 4, "switch": "no_ferrule_step", "fault_kind": "plan_error",
     "root": ("ChatCompletion", 1), "failure": "fit_check",
     "description": "The planner model's plan leaves out the ferrule step for a pair of hiking sticks, so both sticks leave the bench without ferrules."},
]


def policy(request):
    system = sc.system_of(request)
    user = json.loads(sc.last_user(request))
    if system.startswith("Plan the fitting"):
        steps = ["take_measurements", "record_measurements", "choose_fitting_path", "buy_wood"]
        per_stick = ["cut_shaft", "fit_handle"] if ACTIVE == "no_ferrule_step" else ["cut_shaft", "fit_handle", "fit_ferrule"]
        return json.dumps({"steps": steps, "per_stick": per_stick, "sticks": user["sticks"]})
    if system.startswith("You buy wood"):
        hits = user["candidates"]
        free = [h for h in hits if h["held_for"] in (None, user["fitting"])]
        pick = hits[0] if ACTIVE == "queue_blank" else free[0]
        ordered = [pick] + [f for f in free if f is not pick]
        return json.dumps({"blanks": [h["blank"] for h in ordered][: user["sticks"]]})
    return "{}"


def _cm(text: str, inch_as_cm: bool = False) -> float:
    value, unit = text.split()
    return round(float(value) * (2.54 if unit == "in" and not inch_as_cm else 1.0), 1)


def record(inp: dict, path: str) -> None:
    client = sc.openai_client()
    notebook: dict = {}
    with sc.otlp_capture(path, RUN_NAME) as tr:
        with sc.span(tr, RUN_NAME, "AGENT", inp, **{"agent.name": RUN_NAME}) as root:
            with sc.span(tr, "intake_fitting", "CHAIN", inp) as s:
                s.value = dict(inp)
            plan_text = client.chat.completions.create(model=sc.model(), messages=[
                {"role": "system", "content": "Plan the fitting: JSON steps, per_stick steps and sticks."},
                {"role": "user", "content": json.dumps({"fitting": inp["fitting"], "use": inp["use"], "sticks": inp["sticks"]})}]).choices[0].message.content
            with sc.span(tr, "parse_plan", "CHAIN", plan_text) as s:
                plan = json.loads(plan_text)
                s.value = plan
            ctx: dict = {}
            for step in plan["steps"]:
                if step == "take_measurements":
                    with sc.span(tr, "take_measurements", "TOOL", {"height": inp["height"], "wrist": inp["wrist"]}, **{"tool.name": "take_measurements"}) as s:
                        s.value = {"height_cm": _cm(inp["height"]), "wrist_cm": _cm(inp["wrist"], inch_as_cm=ACTIVE == "inch_card")}
                        ctx["measured"] = s.value
                elif step == "record_measurements":
                    m = ctx["measured"]
                    entry = {"fitting": inp["fitting"], "height_cm": m["height_cm"],
                             "wrist_cm": m["height_cm"] if ACTIVE == "height_in_wrist" else m["wrist_cm"]}
                    with sc.span(tr, "notebook.write", "TOOL", entry, **{"tool.name": "notebook.write"}) as s:
                        notebook[inp["fitting"]] = entry
                        s.value = {"stored": inp["fitting"]}
                elif step == "choose_fitting_path":
                    with sc.span(tr, "choose_fitting_path", "CHAIN", {"use": inp["use"], "referral": inp["referral"], "handle": inp["handle"]}) as s:
                        ortho = inp["use"] == "orthopaedic" and ACTIVE != "referral_ignored"
                        s.value = {"path": "orthopaedic" if ortho else "standard", "handle": "offset" if ortho else inp["handle"]}
                        ctx["path"] = s.value
                elif step == "buy_wood":
                    with sc.span(tr, "wood_buyer", "AGENT", {"fitting": inp["fitting"], "wood": inp["wood"], "sticks": inp["sticks"]},
                                 **{"agent.name": "wood_buyer"}) as agent:
                        with sc.span(tr, "timber_yard.search", "TOOL", {"wood": inp["wood"]}, **{"tool.name": "timber_yard.search"}) as s:
                            s.value = [dict(b) for b in YARD if b["wood"] == inp["wood"]]
                            hits = s.value
                        answer = client.chat.completions.create(model=sc.model(), messages=[
                            {"role": "system", "content": "You buy wood for the workshop: pick blanks for the fitting from the candidates, JSON blanks."},
                            {"role": "user", "content": json.dumps({"fitting": inp["fitting"], "sticks": inp["sticks"], "candidates": hits})}]).choices[0].message.content
                        picked = json.loads(answer)["blanks"]
                        with sc.span(tr, "timber_yard.reserve", "TOOL", {"blanks": picked, "for": inp["fitting"]}, **{"tool.name": "timber_yard.reserve"}) as s:
                            s.value = {"reserved": picked}
                        agent.value = {"blanks": picked}
                        ctx["blanks"] = picked
            with sc.span(tr, "notebook.read", "TOOL", {"fitting": inp["fitting"]}, **{"tool.name": "notebook.read"}) as s:
                s.value = dict(notebook[inp["fitting"]])
                noted = s.value
            sticks = []
            for i in range(plan["sticks"]):
                stick = {"stick": i + 1, "handle": None, "ferrule": False}
                for step in plan["per_stick"]:
                    if step == "cut_shaft":
                        blank_id = ctx["blanks"][i]
                        length = round(noted["wrist_cm"] - HANDLE_CM[ctx["path"]["handle"]] - FERRULE_CM, 1)
                        with sc.span(tr, "cut_shaft", "TOOL", {"blank": blank_id, "length_cm": length, "fitting": inp["fitting"]}, **{"tool.name": "cut_shaft"}) as s:
                            blank = next(b for b in YARD if b["blank"] == blank_id)
                            if blank["held_for"] not in (None, inp["fitting"]):
                                raise ValueError(f"blank {blank_id} is held for fitting {blank['held_for']}, not {inp['fitting']}")
                            if length < 60:
                                raise ValueError(f"shaft of {length} cm is under the 60 cm minimum for a {inp['use']} stick")
                            if blank["length_cm"] < length + 5:
                                raise ValueError(f"blank {blank_id} ({blank['length_cm']} cm) is too short for a {length} cm shaft")
                            s.value = {"blank": blank_id, "shaft_cm": length}
                            stick["shaft_cm"] = length
                    elif step == "fit_handle":
                        with sc.span(tr, "fit_handle", "TOOL", {"stick": i + 1, "handle": ctx["path"]["handle"]}, **{"tool.name": "fit_handle"}) as s:
                            stick["handle"] = ctx["path"]["handle"]
                            s.value = {"handle": stick["handle"], "height_cm": HANDLE_CM[stick["handle"]]}
                    elif step == "fit_ferrule":
                        with sc.span(tr, "fit_ferrule", "TOOL", {"stick": i + 1, "use": inp["use"]}, **{"tool.name": "fit_ferrule"}) as s:
                            stick["ferrule"] = True
                            s.value = {"ferrule": "rubber" if inp["use"] != "hiking" else "tungsten tip", "height_cm": FERRULE_CM}
                sticks.append(stick)
            with sc.span(tr, "fit_check", "CHAIN", {"fitting": inp["fitting"], "sticks": sticks}) as s:
                wrist = _cm(inp["wrist"])
                for st in sticks:
                    assert inp["use"] != "orthopaedic" or st["handle"] == "offset", \
                        f"referral {inp['referral']} requires an offset handle; stick {st['stick']} has a {st['handle']} handle"
                    assert st["ferrule"], f"stick {st['stick']} of {inp['fitting']} has no ferrule"
                    total = st["shaft_cm"] + HANDLE_CM[st["handle"]] + FERRULE_CM
                    assert abs(total - wrist) <= 1.0, f"stick {st['stick']} stands {total:.1f} cm against a {wrist} cm wrist height"
                s.value = {"passed": True, "sticks": len(sticks)}
            root.value = {"fitting": inp["fitting"], "sticks": sticks}
