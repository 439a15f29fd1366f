"""Goat dairy (OpenTelemetry/OpenInference spans exported as OTLP/JSON): tally the milking, check treated goats in a withdrawal sub-agent, draft the ship note, normalise lab results, ship the tank to the creamery."""

from __future__ import annotations

import json
from datetime import date, timedelta

from . import common, kit

NAME = "goat-dairy"
ROUTE = "otlp"
DOMAIN = "goat dairy"
EXT = "json"
DESK = "goatdairy"
SHAPE = "OTLP: paged parlour log loop -> tally -> treatments -> withdrawal_checker sub-agent per treated goat (retrieval, llm, register write) -> select milk -> notes -> ship note (llm + parse) -> lab -> normalise -> ship"

GOATS = [f"G-{i:02d}" for i in range(1, 31)]
RULES = [
    {"doc": "WD-PEN", "drug": "penicillin", "milk_withdrawal_days": 7},
    {"doc": "WD-OXY", "drug": "oxytetracycline", "milk_withdrawal_days": 3},
    {"doc": "WD-MEL", "drug": "meloxicam", "milk_withdrawal_days": 5},
]
YESTERDAY_NOTES = "2026-04-09 North barn: shipped tank T2, 188.0 L, creamery run B."

INPUTS = {
    "A": {"day": "2026-04-10", "barn": "North", "tank": "T1", "treated": [{"goat": "G-17", "drug": "penicillin", "last_dose": "2026-04-06"},
                                                                          {"goat": "G-04", "drug": "meloxicam", "last_dose": "2026-04-02"}], "fat_gl": 38.0},
    "B": {"day": "2026-04-12", "barn": "North", "tank": "T1", "treated": [{"goat": "G-09", "drug": "penicillin", "last_dose": "2026-04-08"}], "fat_gl": 41.0},
    "R1": {"day": "2026-04-03", "barn": "North", "tank": "T1", "treated": [{"goat": "G-26", "drug": "meloxicam", "last_dose": "2026-03-31"}], "fat_gl": 36.5},
    "R2": {"day": "2026-04-04", "barn": "North", "tank": "T1", "treated": [{"goat": "G-21", "drug": "oxytetracycline", "last_dose": "2026-04-03"}], "fat_gl": 39.0},
    "R3": {"day": "2026-04-06", "barn": "North", "tank": "T1", "treated": [{"goat": "G-02", "drug": "meloxicam", "last_dose": "2026-03-25"}], "fat_gl": 37.2},
    "R4": {"day": "2026-04-08", "barn": "North", "tank": "T1", "treated": [{"goat": "G-30", "drug": "penicillin", "last_dose": "2026-04-05"},
                                                                            {"goat": "G-11", "drug": "oxytetracycline", "last_dose": "2026-04-07"}], "fat_gl": 40.1},
}
REFS = ["R1", "R2", "R3", "R4"]

CASES = [
    common.Case("zj-goatdairy-01", "truncated_result", "A", "read_parlour_log", 2, "ship_to_creamery", 1,
                "The second page of the parlour log comes back cut at its first four records, so the tallied litres fall short of the tank."),
    common.Case("zj-goatdairy-02", "unit_error", "B", "normalise_lab_units", 1, "ship_to_creamery", 1,
                "The lab's fat result in grams per litre is stored as a percentage without dividing by ten."),
    common.Case("zj-goatdairy-03", "context_pollution", "A", "gather_shift_notes", 1, "ship_to_creamery", 1,
                "Yesterday's shipping note is mixed into today's notes, and the ship note model takes its tank and litres."),
    common.Case("zj-goatdairy-04", "wrong_retrieval", "B", "withdrawal_rules", 1, "ship_to_creamery", 1,
                "The withdrawal search returns the oxytetracycline rule for a penicillin treatment, so a goat still in withdrawal is milked into the tank."),
    common.Case("zj-goatdairy-05", "bad_memory_write", "A", "update_herd_register", 1, "ship_to_creamery", 1,
                "The herd register records the first treated goat as cleared on its last dose date, so its milk goes into the tank."),
]


def _yield(goat: str, day: str) -> float:
    n = int(goat[2:])
    return round(2.1 + (n * 7 % 11) * 0.15 + (int(day[-2:]) % 3) * 0.05, 2)


def _withdrawn(treated: list, day: str) -> set:
    out = set()
    for t in treated:
        rule = next(r for r in RULES if r["drug"] == t["drug"])
        if date.fromisoformat(day) <= date.fromisoformat(t["last_dose"]) + timedelta(days=rule["milk_withdrawal_days"]):
            out.add(t["goat"])
    return out


def _tank_litres(inp: dict) -> float:
    out = _withdrawn(inp["treated"], inp["day"])
    return round(sum(_yield(g, inp["day"]) for g in GOATS if g not in out), 1)


@common.policy(DESK)
def _policy(messages: list[dict]) -> str:
    system, user = messages[0]["content"].lower(), messages[-1]["content"]
    if "withdrawal" in system:
        u = json.loads(user)
        end = date.fromisoformat(u["treatment"]["last_dose"]) + timedelta(days=u["rule"]["milk_withdrawal_days"])
        return json.dumps({"goat": u["treatment"]["goat"], "withdrawal_until": end.isoformat()})
    notes = user.split("\n")
    ship = [n for n in notes if "shipped tank" in n]
    if ship:
        tank = ship[0].split("shipped tank ")[1].split(",")[0]
        litres = float(ship[0].split(", ")[1].split(" L")[0])
    else:
        today = json.loads(notes[0])
        tank, litres = today["tank"], today["litres"]
    return f"Ship note: tank {tank}, {litres:.1f} L, creamery run A."


def run_once(inp: dict, path) -> None:
    rec = common.OtlpRecorder(NAME, session=f"shift-{inp['day']}")
    rec.desk = DESK
    try:
        with rec.span(NAME, "AGENT", input=inp, **{"agent.name": NAME}) as top:
            _shift(rec, inp)
            top.output = "shipped"
    finally:
        rec.write(path)


def _shift(rec, inp: dict) -> None:
    records, page = [], 1
    while page:
        with rec.span("read_parlour_log", "TOOL", input={"day": inp["day"], "page": page}, **{"tool.name": "read_parlour_log"}) as s:
            chunk = GOATS[(page - 1) * 20: page * 20]
            rows = [{"goat": g, "litres": _yield(g, inp["day"])} for g in chunk]
            if page == 2 and kit.active("goatdairy.truncated_result"):
                rows = rows[:4]
            s.output = {"page": page, "rows": rows, "next_page": page + 1 if page * 20 < len(GOATS) else None}
        records.extend(rows)
        page = s.output["next_page"]
    with rec.span("tally_by_goat", "CHAIN", input={"rows": len(records)}) as s:
        by_goat = {r["goat"]: r["litres"] for r in records}
        s.output = by_goat
    with rec.span("read_treatments", "TOOL", input={"barn": inp["barn"], "day": inp["day"]}, **{"tool.name": "read_treatments"}) as s:
        s.output = treated = [dict(t) for t in inp["treated"]]
    register = {}
    for t in treated:
        with rec.span("withdrawal_checker", "AGENT", input=t, **{"agent.name": "withdrawal_checker"}) as sub:
            with rec.span("withdrawal_rules", "RETRIEVER", input={"query": f"milk withdrawal {t['drug']}"}) as s:
                hits = [r for r in RULES if r["drug"] == t["drug"]]
                if kit.active("goatdairy.wrong_retrieval"):
                    hits = sorted(RULES, key=lambda r: r["milk_withdrawal_days"])[:1]
                s.output = {"documents": hits}
            text = rec.llm("assess_withdrawal", "Work out the milk withdrawal end date. Answer JSON {goat, withdrawal_until}.",
                           {"treatment": t, "rule": hits[0]})
            verdict = json.loads(text)
            with rec.span("update_herd_register", "CHAIN", input=verdict) as s:
                until = verdict["withdrawal_until"]
                if kit.active("goatdairy.bad_memory_write") and not register:
                    until = t["last_dose"]
                register[t["goat"]] = {"withdrawal_until": until}
                s.output = dict(register)
            sub.output = register[t["goat"]]
    with rec.span("select_milk", "CHAIN", input={"register": register, "day": inp["day"]}) as s:
        held = sorted(g for g, r in register.items() if inp["day"] <= r["withdrawal_until"])
        litres = round(sum(v for g, v in by_goat.items() if g not in held), 1)
        s.output = {"held_back": held, "litres": litres}
    with rec.span("gather_shift_notes", "CHAIN", input={"day": inp["day"]}) as s:
        notes = [json.dumps({"tank": inp["tank"], "litres": litres, "held_back": held})]
        if kit.active("goatdairy.context_pollution"):
            notes.append(YESTERDAY_NOTES)
        s.output = "\n".join(notes)
    text = rec.llm("draft_ship_note", "Draft the ship note for today's tank.", s.output)
    with rec.span("parse_ship_note", "CHAIN", input=text) as s:
        tank = text.split("tank ")[1].split(",")[0]
        vol = float(text.split(", ")[1].split(" L")[0])
        s.output = note = {"tank": tank, "litres": vol}
    with rec.span("lab_results", "TOOL", input={"tank": inp["tank"], "day": inp["day"]}, **{"tool.name": "lab_results"}) as s:
        s.output = lab = {"tank": inp["tank"], "fat": {"value": inp["fat_gl"], "unit": "g/L"}, "scc_k_per_ml": 640}
    with rec.span("normalise_lab_units", "CHAIN", input=lab) as s:
        fat_pct = lab["fat"]["value"] if kit.active("goatdairy.unit_error") else lab["fat"]["value"] / 10
        s.output = quality = {"fat_pct": round(fat_pct, 2), "scc_k_per_ml": lab["scc_k_per_ml"]}
    with rec.span("ship_to_creamery", "TOOL", input={"note": note, "quality": quality, "day": inp["day"]}, **{"tool.name": "ship_to_creamery"}) as s:
        errs = []
        if note["tank"] != inp["tank"]:
            errs.append(f"tank {note['tank']} has no sample for {inp['day']}")
        dip = _tank_litres(inp)
        if abs(note["litres"] - dip) > 1.0:
            errs.append(f"manifest {note['litres']} L but the tank dipstick reads {dip} L")
        residue = _withdrawn(inp["treated"], inp["day"]) - set(held)
        if residue:
            errs.append(f"antibiotic screen positive: milk from {', '.join(sorted(residue))} is in the tank")
        if not 2.5 <= quality["fat_pct"] <= 6.0:
            errs.append(f"fat {quality['fat_pct']}% is outside 2.5-6.0% for goat milk")
        if errs:
            raise RuntimeError("creamery intake refused (HTTP 422): " + json.dumps({"errors": errs}))
        s.output = {"accepted": True, "litres": note["litres"]}
