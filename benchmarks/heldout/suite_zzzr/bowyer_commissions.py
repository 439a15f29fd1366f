"""A bowyer's commission workshop, recorded with trajdebug's own API (route sdk).

Shape: a model writes the work plan, the code walks the plan; a memory tool
(memory_write / memory_read, a notebook outside run.state) carries the commission between
actions; each limb is designed by a sub-agent (kind agent: memory read, model brief,
limb calculator); a tiller bench tool at the end raises when the bow does not come up to
the commission.  16-19 steps.
"""

from __future__ import annotations

import json
import re

from openai import OpenAI

import trajdebug

NAME = "bowyer-commission-shop"
ROUTE = "sdk"
DOMAIN = "a bowyer's bow commissions"
SHAPE = "model-written plan walked by code, memory tool, two limb sub-agents (memory, model, calculator), tiller bench; 16-19 steps"
SWITCH = None

MODULUS = {"yew": 1.30, "osage": 1.55, "hickory": 1.45, "ash": 1.35, "elm": 1.20}
STAVES = {"yew": ("Y-112", 9.0), "osage": ("O-31", 13.5), "hickory": ("H-08", 12.0), "ash": ("A-57", 9.5),
          "elm": ("E-19", 14.0)}

INPUTS = [
    {"commission": "BC-061", "customer": "Tom Ellery", "style": "english longbow", "wood": "yew", "draw_lb": 50, "draw_in": 30},
    {"commission": "BC-062", "customer": "Nina Sallow", "style": "flatbow", "wood": "osage", "draw_lb": 40, "draw_in": 27},
    {"commission": "BC-063", "customer": "Harold Pike", "style": "american longbow", "wood": "hickory", "draw_lb": 55, "draw_in": 29},
    {"commission": "BC-064", "customer": "Ivy Colclough", "style": "flatbow", "wood": "ash", "draw_lb": 35, "draw_in": 26},
    {"commission": "BC-065", "customer": "Dai Morgan", "style": "english longbow", "wood": "elm", "draw_lb": 45, "draw_in": 31},
]

CASES = [
    {"id": "zzzr-bow-drying", "input": 2, "switch": "skip_drying", "kind": "plan_error",
     "root": ("plan_commission", 1), "failure": ("tiller_bench", 1),
     "desc": "The work plan for the hickory stave (12% moisture) left out drying it down before tillering."},
    {"id": "zzzr-bow-lower", "input": 1, "switch": "lower_as_upper", "kind": "subagent_wrong_entity",
     "root": ("design_limb", 2), "failure": ("tiller_bench", 1),
     "desc": "The sub-agent designing the lower limb briefed and calculated the upper limb instead, so the bow has two upper limbs."},
    {"id": "zzzr-bow-draw", "input": 4, "switch": "reference_draw", "kind": "bad_memory_write",
     "root": ("memory_write", 1), "failure": ("tiller_bench", 1),
     "desc": "The commission was noted in the workshop memory at the shop's 28 in reference draw instead of the customer's 31 in."},
    {"id": "zzzr-bow-shelf", "input": 3, "switch": "whole_shelf", "kind": "context_pollution",
     "root": ("memory_read", 1), "failure": ("tiller_bench", 1),
     "desc": "The workshop memory read returned the whole shelf, with commission BC-063's hickory note last, and the limbs were laid out for hickory."},
    {"id": "zzzr-bow-modulus", "input": 0, "switch": "modulus_default", "kind": "swallowed_error",
     "root": ("limb_calculator", 2), "failure": ("tiller_bench", 1),
     "desc": "The limb calculator failed to read the yew stiffness for the lower limb and carried on with a stiffness of 1.0."},
]

_client: OpenAI | None = None
NOTEBOOK: dict[str, list[dict]] = {}


def policy(request):
    messages = request.body["messages"]
    text = messages[-1]["content"]
    if messages[0]["content"].startswith("Plan"):
        c = json.loads(text)
        plan = ["select_stave"]
        if c["moisture_pct"] > 10 and SWITCH != "skip_drying":
            plan.append("dry_stave")
        plan += ["design_limb:upper", "design_limb:lower", "tiller_bench", "finish_bow"]
        return json.dumps({"plan": plan})
    notes = json.loads(text.split("Notes:", 1)[1])
    limb = re.search(r"the (upper|lower) limb", text).group(1)
    last = notes[-1]
    return json.dumps({"limb": limb, "wood": last["wood"], "draw_lb": last["draw_lb"], "draw_in": last["draw_in"],
                       "taper": "pyramid" if limb == "upper" else "pyramid, 1/8 in stiffer"})


@trajdebug.step(kind="input")
def take_commission(commission: dict) -> dict:
    return commission


@trajdebug.step(kind="llm")
def plan_commission(messages: list[dict]) -> str:
    return _client.chat.completions.create(model="bowyer-planner", messages=messages).choices[0].message.content


@trajdebug.step(kind="llm")
def limb_brief(messages: list[dict]) -> str:
    return _client.chat.completions.create(model="bowyer-planner", messages=messages).choices[0].message.content


@trajdebug.step(kind="tool")
def select_stave(wood: str) -> dict:
    stave, moisture = STAVES[wood]
    return {"stave": stave, "wood": wood, "moisture_pct": moisture}


@trajdebug.step(kind="tool")
def dry_stave(stave: dict) -> dict:
    return {**stave, "moisture_pct": 9.0, "dried_days": int((stave["moisture_pct"] - 9.0) * 10)}


@trajdebug.step(kind="tool")
def memory_write(commission: str, note: dict) -> str:
    NOTEBOOK.setdefault(commission, []).append(note)
    return f"noted under {commission}"


@trajdebug.step(kind="tool")
def memory_read(commission: str) -> list[dict]:
    if SWITCH == "whole_shelf":
        return NOTEBOOK[commission] + [n for c in sorted(NOTEBOOK) if c != commission for n in NOTEBOOK[c]]
    return list(NOTEBOOK[commission])


@trajdebug.step(kind="tool")
def limb_calculator(brief: dict) -> dict:
    try:
        if SWITCH == "modulus_default" and brief["limb"] == "lower":
            raise KeyError(brief["wood"])
        modulus = MODULUS[brief["wood"]]
    except KeyError:
        modulus = 1.0
    width_mm = round(brief["draw_lb"] / (modulus * 1.6), 1)
    return {"limb": brief["limb"], "wood": brief["wood"], "width_mm": width_mm,
            "draw_lb_at": {"lb": brief["draw_lb"], "in": brief["draw_in"]},
            "yield_lb": round(width_mm * modulus * 1.6, 1)}


@trajdebug.step(kind="agent")
def design_limb(commission: str, limb: str) -> dict:
    asked = limb
    if SWITCH == "lower_as_upper" and limb == "lower":
        asked = "upper"
    notes = memory_read(commission)
    brief = json.loads(limb_brief([
        {"role": "system", "content": "Brief the limb for the bowyer from the commission notes."},
        {"role": "user", "content": f"Design the {asked} limb. Notes:{json.dumps(notes)}"},
    ]))
    return limb_calculator(brief)


@trajdebug.step(kind="tool")
def tiller_bench(commission: dict, stave: dict, limbs: list[dict]) -> dict:
    if stave["moisture_pct"] > 10:
        raise ValueError(f"stave {stave['stave']} at {stave['moisture_pct']}% moisture cannot be tillered (10% at most)")
    if sorted(l["limb"] for l in limbs) != ["lower", "upper"]:
        raise ValueError(f"limbs on the bench are {[l['limb'] for l in limbs]}, need one upper and one lower")
    for l in limbs:
        if l["wood"] != stave["wood"]:
            raise ValueError(f"{l['limb']} limb was laid out for {l['wood']}, the stave is {stave['wood']}")
        if l["draw_lb_at"]["in"] != commission["draw_in"]:
            raise ValueError(f"bow comes to full draw at {l['draw_lb_at']['in']} in, {commission['customer']} draws {commission['draw_in']} in")
        if abs(l["yield_lb"] * MODULUS[stave["wood"]] / MODULUS[l["wood"]] - commission["draw_lb"]) > 2 or \
                abs(l["width_mm"] * MODULUS[stave["wood"]] * 1.6 - commission["draw_lb"]) > 2:
            raise ValueError(f"{l['limb']} limb {l['width_mm']} mm wide pulls "
                             f"{round(l['width_mm'] * MODULUS[stave['wood']] * 1.6, 1)} lb, commission is {commission['draw_lb']} lb")
    return {"tiller": "even", "draw_lb": commission["draw_lb"], "at_in": commission["draw_in"]}


@trajdebug.step(kind="output")
def finish_bow(commission: dict, stave: dict, tiller: dict) -> str:
    return f"{commission['commission']}: {commission['style']} in {stave['wood']} ({stave['stave']}), {tiller['draw_lb']} lb at {tiller['at_in']} in"


def record(server, given: dict, path) -> None:
    global _client
    _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    NOTEBOOK.clear()
    # the shelf holds the workshop's earlier commission notes
    for other in INPUTS:
        if other["commission"] < given["commission"]:
            NOTEBOOK[other["commission"]] = [{"wood": other["wood"], "draw_lb": other["draw_lb"], "draw_in": other["draw_in"]}]
    try:
        with trajdebug.run(NAME, path=str(path), task=f"bow commission {given['commission']} for {given['customer']}"):
            c = take_commission(given)
            stave_guess = STAVES[c["wood"]]
            plan = json.loads(plan_commission([
                {"role": "system", "content": "Plan the workshop actions for this bow commission as JSON."},
                {"role": "user", "content": json.dumps({**c, "stave": stave_guess[0], "moisture_pct": stave_guess[1]})},
            ]))["plan"]
            stave, limbs, tiller = None, [], None
            for action in plan:
                if action == "select_stave":
                    stave = select_stave(c["wood"])
                    draw_in = 28 if SWITCH == "reference_draw" else c["draw_in"]
                    memory_write(c["commission"], {"wood": c["wood"], "draw_lb": c["draw_lb"], "draw_in": draw_in})
                elif action == "dry_stave":
                    stave = dry_stave(stave)
                    memory_write(c["commission"], {"wood": c["wood"], "draw_lb": c["draw_lb"],
                                                   "draw_in": NOTEBOOK[c["commission"]][-1]["draw_in"], "stave_dried": True})
                elif action.startswith("design_limb:"):
                    limbs.append(design_limb(c["commission"], action.split(":")[1]))
                elif action == "tiller_bench":
                    tiller = tiller_bench(c, stave, limbs)
                elif action == "finish_bow":
                    finish_bow(c, stave, tiller)
    except Exception:
        pass
