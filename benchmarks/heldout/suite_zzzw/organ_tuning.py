"""Organ builder's tuning visits: the trajdebug recording SDK, a sub-agent per division, parallel pitch readings, run.state per rank."""
from __future__ import annotations

import json
import re

from openai import OpenAI

import trajdebug

NAME, ROUTE, EXT = "organ-tuning-visits", "sdk", "jsonl"
DOMAIN = "organ builder's tuning visits"
SHAPE = "register tool, model visit plan, parse, visit-log memory read, then one division sub-agent (kind agent) per division looping over ranks (two parallel pitch readings, note frequency, cents, tuning slide, state write per rank), visit-log memory write, model report, sign-off (34-68 steps)"
SWITCH = None

REGISTERS = {
    "St Wilfrid's, Calverley": {"Great": ["Open Diapason 8", "Principal 4", "Fifteenth 2"],
                                "Swell": ["Stopped Diapason 8", "Gemshorn 4", "Oboe 8"], "Pedal": ["Bourdon 16"]},
    "Holy Trinity, Idle": {"Great": ["Open Diapason 8", "Dulciana 8"], "Swell": ["Lieblich Gedackt 8", "Gemshorn 4"],
                           "Pedal": ["Bourdon 16"]},
    "St Oswald's, Guiseley": {"Great": ["Open Diapason 8", "Principal 4"], "Pedal": ["Bourdon 16", "Octave 8"]},
    "Rawdon Methodist": {"Great": ["Open Diapason 8", "Clarabella 8", "Principal 4"], "Swell": ["Viola 8", "Cornopean 8"]},
    "St Peter's, Horsforth": {"Great": ["Open Diapason 8", "Principal 4", "Twelfth 2 2/3"],
                              "Swell": ["Salicional 8", "Voix Celeste 8"], "Choir": ["Dulciana 8", "Flute 4"],
                              "Pedal": ["Bourdon 16"]},
}
LAST_VISITS = {c: {"date": "2025-10-02", "tuner": "J. Binns", "note": "reeds only"} for c in REGISTERS}
NOTES = {"c": 48, "g": 55}
FOOT = {"16": -12, "8": 0, "4": 12, "2 2/3": 19, "2": 24}

INPUTS = [
    {"key": "calverley", "church": "St Wilfrid's, Calverley", "a4": 440.0, "date": "2026-03-14"},
    {"key": "idle", "church": "Holy Trinity, Idle", "a4": 440.0, "date": "2026-03-15"},
    {"key": "guiseley", "church": "St Oswald's, Guiseley", "a4": 440.0, "date": "2026-03-16"},
    {"key": "rawdon", "church": "Rawdon Methodist", "a4": 440.0, "date": "2026-03-17"},
    {"key": "horsforth", "church": "St Peter's, Horsforth", "a4": 440.0, "date": "2026-03-18"},
]

CASES = [
    {"id": "zzzw_organ_01", "input": 0, "switch": "swell_sees_great", "fault_kind": "subagent_wrong_entity",
     "root": {"name": "division_tuner", "occurrence": 2}, "failure": {"name": "sign_off", "occurrence": 1},
     "description": "The Swell division tuner works through the Great's ranks instead of its own, so no Swell rank is tuned."},
    {"id": "zzzw_organ_02", "input": 4, "switch": "g_sharp", "fault_kind": "off_by_one",
     "root": {"name": "note_frequency", "occurrence": 8}, "failure": {"name": "tuning_slide", "occurrence": 4},
     "description": "The note frequency for the g of the Swell Salicional is taken one semitone high, from note 56 instead of 55."},
    {"id": "zzzw_organ_03", "input": 0, "switch": "slide_fixed", "fault_kind": "tool_ignores_argument",
     "root": {"name": "tuning_slide", "occurrence": 2}, "failure": {"name": "sign_off", "occurrence": 1},
     "description": "The tuning slide ignores the cents it is asked to move for the Great Principal and always moves 2 cents."},
    {"id": "zzzw_organ_04", "input": 3, "switch": "log_before", "fault_kind": "bad_memory_write",
     "root": {"name": "log_rank", "occurrence": 2}, "failure": {"name": "sign_off", "occurrence": 1},
     "description": "The rank log stores the Great Clarabella's reading from before tuning instead of after."},
    {"id": "zzzw_organ_05", "input": 1, "switch": "plan_skips_pedal", "fault_kind": "plan_error",
     "root": {"name": "plan_visit", "occurrence": 1}, "failure": {"name": "sign_off", "occurrence": 1},
     "description": "The model's visit plan leaves out the Pedal division though the visit is a full tuning."},
]

_ctx = {}


def drift(church, rank, note):
    return ((len(church) * 7 + len(rank) * 5 + NOTES[note] * 3) % 23) - 11.0


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    if prompt.startswith("Plan a full tuning visit"):
        reg = json.loads(prompt.split("\n", 1)[1])
        order = [d for d in ("Great", "Swell", "Choir", "Pedal") if d in reg]
        if SWITCH == "plan_skips_pedal":
            order = [d for d in order if d != "Pedal"]
        return "PLAN\n" + "\n".join(f"{d}: " + "; ".join(reg[d]) for d in order) + "\nEND"
    if prompt.startswith("Write the visit report"):
        d = json.loads(prompt.split("\n", 1)[1])
        return f"Visit to {d['church']} on {d['date']}: " + ", ".join(
            f"{k} {v['after_cents']:+.1f} c" for k, v in d["ranks"].items())
    return "No."


@trajdebug.step(kind="input")
def visit_request(church: str, a4: float, date: str) -> dict:
    return {"church": church, "a4": a4, "date": date}


@trajdebug.step(kind="tool")
def fetch_register(church: str) -> dict:
    return REGISTERS[church]


@trajdebug.step(kind="llm")
def plan_visit(messages: list[dict]) -> str:
    r = _ctx["client"].chat.completions.create(model=_ctx["server"].model, messages=messages)
    return r.choices[0].message.content


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> dict:
    body = text.split("PLAN\n", 1)[1].split("\nEND", 1)[0]
    return {line.split(": ", 1)[0]: line.split(": ", 1)[1].split("; ") for line in body.splitlines()}


@trajdebug.step(kind="tool")
def recall_visit_log(church: str) -> dict:
    return dict(LAST_VISITS[church])


@trajdebug.step(kind="tool")
def pitch_meter(church: str, rank: str, note: str) -> dict:
    foot = re.search(r"(\d+(?: \d/\d)?)$", rank).group(1)
    midi = NOTES[note] + FOOT[foot]
    true_hz = 440.0 * 2 ** ((midi - 69) / 12)
    return {"rank": rank, "note": note, "hz": round(true_hz * 2 ** (drift(church, rank, note) / 1200), 3)}


@trajdebug.step(kind="other")
def note_frequency(rank: str, note: str, a4: float) -> float:
    foot = re.search(r"(\d+(?: \d/\d)?)$", rank).group(1)
    n = NOTES[note]
    if SWITCH == "g_sharp" and rank == "Salicional 8" and note == "g":
        n += 1
    return round(a4 * 2 ** ((n + FOOT[foot] - 69) / 12), 3)


@trajdebug.step(kind="other")
def cents_offset(readings: list[dict], targets: list[float]) -> float:
    import math
    vals = [1200 * math.log2(r["hz"] / t) for r, t in zip(readings, targets)]
    return round(sum(vals) / len(vals), 1)


@trajdebug.step(kind="tool")
def tuning_slide(rank: str, cents: float) -> dict:
    if abs(cents) > 50:
        raise ValueError(f"the slide of {rank} cannot move {cents} cents: a pipe that far out is re-cut, not slid")
    move = -cents
    if SWITCH == "slide_fixed" and rank == "Principal 4":
        move = 2.0
    return {"rank": rank, "before_cents": cents, "moved_cents": move, "after_cents": round(cents + move, 1)}


@trajdebug.step(kind="state")
def log_rank(division: str, result: dict) -> None:
    rec = dict(result)
    if SWITCH == "log_before" and division == "Great" and result["rank"] == "Clarabella 8":
        rec["after_cents"] = result["before_cents"]
    trajdebug.current_run().state[f"rank:{division}/{result['rank']}"] = rec


@trajdebug.step(kind="agent")
def division_tuner(division: str, plan: dict, visit: dict) -> dict:
    ranks = plan["Great"] if SWITCH == "swell_sees_great" and division == "Swell" else plan[division]
    done = {}
    for rank in ranks:
        with trajdebug.ContextThreadPoolExecutor(max_workers=2) as pool:
            readings = list(pool.map(lambda n: pitch_meter(visit["church"], rank, n), ["c", "g"]))
        targets = [note_frequency(rank, n, visit["a4"]) for n in ("c", "g")]
        off = cents_offset(readings, targets)
        res = tuning_slide(rank, off)
        log_rank(division, res)
        done[rank] = res["after_cents"]
    return done


@trajdebug.step(kind="tool")
def write_visit_log(church: str, date: str, divisions: list[str]) -> dict:
    return {"church": church, "date": date, "divisions": divisions}


@trajdebug.step(kind="llm")
def visit_report(messages: list[dict]) -> str:
    r = _ctx["client"].chat.completions.create(model=_ctx["server"].model, messages=messages)
    return r.choices[0].message.content


@trajdebug.step(kind="condition")
def sign_off(church: str, report: str) -> str:
    state = trajdebug.current_run().state
    for division, ranks in REGISTERS[church].items():
        for rank in ranks:
            rec = state.get(f"rank:{division}/{rank}")
            if rec is None:
                raise AssertionError(f"{division} {rank} at {church} has no tuning record")
            if abs(rec["after_cents"]) > 3:
                raise AssertionError(f"{division} {rank} at {church} is {rec['after_cents']:+.1f} cents after tuning")
    return "signed"


def record(server, inp, path):
    _ctx.update(server=server, client=OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0))
    server.use(policy)
    try:
        with trajdebug.run(NAME, task=f"tuning visit {inp['church']} {inp['date']}", path=str(path)):
            visit = visit_request(inp["church"], inp["a4"], inp["date"])
            reg = fetch_register(visit["church"])
            text = plan_visit([{"role": "system", "content": "You plan organ tuning visits."},
                               {"role": "user", "content": "Plan a full tuning visit of every division.\n" + json.dumps(reg)}])
            plan = parse_plan(text)
            recall_visit_log(visit["church"])
            tuned = {}
            for division in plan:
                tuned[division] = division_tuner(division, plan, visit)
            write_visit_log(visit["church"], visit["date"], list(plan))
            ranks = {}
            for division in plan:
                for rank in plan[division]:
                    rec = trajdebug.current_run().state.get(f"rank:{division}/{rank}")
                    if rec:
                        ranks[f"{division} {rank}"] = rec
            report = visit_report([{"role": "user", "content": "Write the visit report.\n" + json.dumps(
                {"church": visit["church"], "date": visit["date"], "ranks": ranks})}])
            sign_off(visit["church"], report)
    except Exception:
        pass
