"""Gargoyle restoration firm (sdk route): a coordinator plans, a survey sub-agent per gargoyle, a memory tool, a materials sub-agent."""
import json

import trajdebug
from openai import OpenAI

from trajdebug.testing import Reply

NAME = "gargoyle-restoration"
SHORT = "garg"
ROUTE = "sdk"
DOMAIN = "gargoyle restoration firm"
SHAPE = "coordinator model plan -> parse -> per gargoyle: survey sub-agent (condition record, briefing, model assessment, parse) + memory write -> materials sub-agent (memory recall + stone match per gargoyle, mortar quote) -> scaffold -> total -> consent check"
ACTIVE = None

REGISTER = {
    "Wells-N1": {"stone": "Doulting limestone", "height_m": 18}, "Wells-N2": {"stone": "Doulting limestone", "height_m": 18},
    "Wells-N3": {"stone": "Blue Lias", "height_m": 22}, "Wells-S1": {"stone": "Doulting limestone", "height_m": 16},
    "Wells-S2": {"stone": "Ham stone", "height_m": 16},
    "York-E1": {"stone": "Magnesian limestone", "height_m": 31}, "York-E2": {"stone": "Magnesian limestone", "height_m": 31},
    "York-E3": {"stone": "Millstone grit", "height_m": 27}, "York-W1": {"stone": "Magnesian limestone", "height_m": 24},
    "Lin-1": {"stone": "Lincolnshire limestone", "height_m": 20}, "Lin-2": {"stone": "Ancaster stone", "height_m": 20},
    "Lin-3": {"stone": "Lincolnshire limestone", "height_m": 26}, "Lin-4": {"stone": "Lincolnshire limestone", "height_m": 26},
    "Lin-5": {"stone": "Ancaster stone", "height_m": 14}, "Lin-6": {"stone": "Lincolnshire limestone", "height_m": 14},
    "NDP-a": {"stone": "Lutetian limestone", "height_m": 45}, "NDP-b": {"stone": "Lutetian limestone", "height_m": 45},
    "NDP-c": {"stone": "Lutetian limestone", "height_m": 38}, "NDP-d": {"stone": "Saint-Maximin stone", "height_m": 38},
    "Ox-Q1": {"stone": "Headington stone", "height_m": 12}, "Ox-Q2": {"stone": "Clipsham stone", "height_m": 12},
    "Ox-Q3": {"stone": "Clipsham stone", "height_m": 15}, "Ox-Q4": {"stone": "Headington stone", "height_m": 15},
    "Ox-Q5": {"stone": "Taynton stone", "height_m": 9}, "Ox-Q6": {"stone": "Clipsham stone", "height_m": 9},
    "Ox-Q7": {"stone": "Headington stone", "height_m": 11},
}
CONDITION = {gid: {"cracks_cm": 5 + (i * 7) % 23, "spalling_pct": (i * 11) % 40, "erosion": ["light", "moderate", "heavy"][i % 3]}
             for i, gid in enumerate(REGISTER)}

INPUTS = [
    {"job": "Wells west front", "gargoyles": ["Wells-N1", "Wells-N2", "Wells-N3", "Wells-S1", "Wells-S2"], "budget_gbp": 90000},
    {"job": "York Minster east end", "gargoyles": ["York-E1", "York-E2", "York-E3", "York-W1"], "budget_gbp": 80000},
    {"job": "Lincoln chapter house", "gargoyles": ["Lin-1", "Lin-2", "Lin-3", "Lin-4", "Lin-5", "Lin-6"], "budget_gbp": 110000},
    {"job": "Notre-Dame north tower", "gargoyles": ["NDP-a", "NDP-b", "NDP-c", "NDP-d"], "budget_gbp": 120000},
    {"job": "Oxford quad cloister", "gargoyles": ["Ox-Q1", "Ox-Q2", "Ox-Q3", "Ox-Q4", "Ox-Q5", "Ox-Q6", "Ox-Q7"], "budget_gbp": 95000},
]

CASES = [
    {"input": 2, "switch": "previous_id", "kind": "subagent_wrong_entity", "root": ("survey_agent", 5),
     "failure": ("scaffold_schedule", 1),
     "description": "The survey sub-agent for Lin-5 looks up the condition record of Lin-2, the carving surveyed before it, and reports its 20 m height for a carving at 14 m."},
    {"input": 4, "switch": "grade_memory", "kind": "bad_memory_write", "root": ("remember", 3),
     "failure": ("consent_check", 1),
     "description": "The memory note for Ox-Q3 is saved with the stone of the note template, Headington stone, instead of the surveyed Clipsham stone."},
    {"input": 0, "switch": "cut_answer", "kind": "swallowed_error", "root": ("parse_assessment", 4),
     "failure": ("consent_check", 1),
     "description": "The assessment parser meets a model answer for Wells-S1 cut off at the token limit, catches the decode error and files the gargoyle with no condition grade instead of asking again."},
    {"input": 4, "switch": "plan_skips", "kind": "plan_error", "root": ("coordinator_plan", 1),
     "failure": ("consent_check", 1),
     "description": "The coordinator's work plan lists six of the seven cloister gargoyles and leaves out Ox-Q6."},
    {"input": 1, "switch": "carry_briefing", "kind": "context_pollution", "root": ("brief_surveyor", 3),
     "failure": ("scaffold_schedule", 1),
     "description": "The surveyor's briefing for York-E3 still carries the York-E2 notes, and the model reads the height of 31 m from them instead of 27 m."},
]

_state = {"client": None}


def policy(request):
    msgs = request.body["messages"]
    last = msgs[-1]["content"]
    if last.startswith("Plan the works"):
        job = json.loads(last.split("JOB:", 1)[1])
        order = sorted(job["gargoyles"], key=lambda g: -REGISTER[g]["height_m"])
        if ACTIVE == "plan_skips":
            order = [g for g in order if g != "Ox-Q6"]
        return json.dumps({"sequence": order, "crew": 4})
    rec = json.loads(last.split("RECORD:", 1)[1])
    height = rec["height_m"]
    for m in msgs[:-1]:
        if m["role"] == "user" and "RECORD:" in m["content"]:
            height = json.loads(m["content"].split("RECORD:", 1)[1])["height_m"]
    grade = "D" if rec["cracks_cm"] > 20 else "C" if rec["cracks_cm"] > 12 else "B"
    answer = json.dumps({"gargoyle": rec["gargoyle"], "stone": rec["stone"], "height_m": height, "grade": grade,
                         "mortar_kg": round(rec["cracks_cm"] * 0.4 + rec["spalling_pct"] * 0.1, 1)})
    if rec["gargoyle"] == "Wells-S1" and request.body.get("max_tokens", 0) < 800:
        return Reply(text=answer[:57], finish_reason="length")
    return answer


@trajdebug.step(kind="input")
def intake(job: dict) -> dict:
    return dict(job)


@trajdebug.step(kind="llm")
def coordinator_plan(messages: list) -> str:
    return _state["client"].chat.completions.create(model="fake-model", messages=messages).choices[0].message.content


@trajdebug.step(kind="parse")
def read_plan(text: str) -> list:
    return json.loads(text)["sequence"]


@trajdebug.step(kind="retrieval")
def fetch_condition_record(gargoyle: str) -> dict:
    return {"gargoyle": gargoyle, **REGISTER[gargoyle], **CONDITION[gargoyle]}


@trajdebug.step(kind="other")
def brief_surveyor(record: dict, earlier: list) -> list:
    msgs = [{"role": "system", "content": "You are a stone conservator. Assess the carving and answer JSON."}]
    if ACTIVE == "carry_briefing" and record["gargoyle"] == "York-E3":
        msgs += earlier[-1:]
    msgs.append({"role": "user", "content": "Assess this carving. RECORD:" + json.dumps(record)})
    return msgs


@trajdebug.step(kind="llm")
def assess_damage(messages: list, max_tokens: int) -> str:
    return _state["client"].chat.completions.create(model="fake-model", messages=messages, max_tokens=max_tokens).choices[0].message.content


@trajdebug.step(kind="parse")
def parse_assessment(text: str, gargoyle: str) -> dict:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        if ACTIVE == "cut_answer":
            return {"gargoyle": gargoyle, "grade": None, "mortar_kg": 0.0, "stone": REGISTER[gargoyle]["stone"], "height_m": REGISTER[gargoyle]["height_m"]}
        raise


@trajdebug.step(kind="agent")
def survey_agent(gargoyle: str, previous: str, earlier: list) -> dict:
    target = previous if ACTIVE == "previous_id" and gargoyle == "Lin-5" else gargoyle
    record = fetch_condition_record(target)
    msgs = brief_surveyor(record, earlier)
    earlier.append(msgs[-1])
    try:
        report = parse_assessment(assess_damage(msgs, 400), target)
    except json.JSONDecodeError:
        report = parse_assessment(assess_damage(msgs, 1200), target)
    return dict(report, gargoyle=gargoyle)


@trajdebug.step(kind="tool")
def remember(gargoyle: str, report: dict) -> dict:
    memory = trajdebug.current_run().state.setdefault("conservation_notes", {})
    note = {"stone": report["stone"], "grade": report["grade"], "mortar_kg": report["mortar_kg"], "height_m": report["height_m"]}
    if ACTIVE == "grade_memory" and gargoyle == "Ox-Q3":
        note["stone"] = "Headington stone"
    memory[gargoyle] = note
    return {"saved": gargoyle}


@trajdebug.step(kind="tool")
def recall(gargoyle: str) -> dict:
    return dict(trajdebug.current_run().state["conservation_notes"][gargoyle], gargoyle=gargoyle)


@trajdebug.step(kind="tool")
def stone_match(stone: str, gargoyle: str) -> dict:
    price = {"limestone": 1800, "stone": 2100, "Lias": 1500, "grit": 1300}
    per = next((v for k, v in price.items() if stone.endswith(k)), 2000)
    return {"gargoyle": gargoyle, "stone": stone, "block_gbp": per}


@trajdebug.step(kind="tool")
def quote_mortar(total_kg: float) -> dict:
    return {"lime_mortar_kg": round(total_kg, 1), "gbp": round(total_kg * 6.5, 2)}


@trajdebug.step(kind="agent")
def materials_agent(sequence: list) -> dict:
    lines = []
    for g in sequence:
        note = recall(g)
        lines.append(dict(stone_match(note["stone"], g), grade=note["grade"], height_m=note["height_m"], mortar_kg=note["mortar_kg"]))
    mortar = quote_mortar(sum(l["mortar_kg"] for l in lines))
    return {"lines": lines, "mortar": mortar}


@trajdebug.step(kind="tool")
def scaffold_schedule(lines: list) -> dict:
    lifts = []
    for l in lines:
        surveyed = REGISTER[l["gargoyle"]]["height_m"]
        if abs(l["height_m"] - surveyed) > 1:
            raise ValueError(f"scaffold for {l['gargoyle']} requested to {l['height_m']} m; the elevation drawing puts the carving at {surveyed} m")
        lifts.append({"gargoyle": l["gargoyle"], "lift_m": surveyed + 2})
    return {"lifts": lifts, "weeks": 1 + len(lifts) // 2}


@trajdebug.step(kind="other")
def estimate_total(materials: dict, scaffold: dict) -> dict:
    stone = sum(l["block_gbp"] for l in materials["lines"])
    labour = sum(4200 if l["grade"] == "D" else 2600 for l in materials["lines"])
    return {"gbp": stone + labour + materials["mortar"]["gbp"] + 3500 * scaffold["weeks"]}


@trajdebug.step(kind="condition")
def consent_check(job: dict, materials: dict, total: dict) -> dict:
    listed = {l["gargoyle"] for l in materials["lines"]}
    for g in job["gargoyles"]:
        if g not in listed:
            raise ValueError(f"listed building consent: scheme omits {g} from the {job['job']} schedule")
    for l in materials["lines"]:
        if l["grade"] not in ("A", "B", "C", "D"):
            raise ValueError(f"listed building consent: {l['gargoyle']} has no condition grade")
        if l["stone"] != REGISTER[l["gargoyle"]]["stone"]:
            raise ValueError(f"listed building consent: {l['gargoyle']} is registered as {REGISTER[l['gargoyle']]['stone']}, scheme specifies {l['stone']}")
    if total["gbp"] > job["budget_gbp"]:
        raise ValueError(f"estimate {total['gbp']} GBP above the budget of {job['budget_gbp']} GBP")
    return {"consent": "ready to submit"}


@trajdebug.step(kind="output")
def issue_estimate(job: dict, total: dict) -> str:
    return f"{job['job']}: restoration estimate {total['gbp']:.2f} GBP"


def record(inp, ctx, path):
    _state["client"] = OpenAI(base_url=ctx.server.base_url, api_key="not-needed", max_retries=0)
    try:
        with trajdebug.run(NAME, task=f"restoration estimate for {inp['job']}", path=path):
            job = intake(inp)
            sequence = read_plan(coordinator_plan([
                {"role": "system", "content": "You coordinate gargoyle restoration crews."},
                {"role": "user", "content": "Plan the works, highest carvings first. JOB:" + json.dumps(job)}]))
            earlier, previous = [], None
            for g in sequence:
                report = survey_agent(g, previous, earlier)
                remember(g, report)
                previous = g
            materials = materials_agent(sequence)
            scaffold = scaffold_schedule(materials["lines"])
            total = estimate_total(materials, scaffold)
            consent_check(job, materials, total)
            issue_estimate(job, total)
    except Exception:
        pass
    finally:
        _state["client"].close()
