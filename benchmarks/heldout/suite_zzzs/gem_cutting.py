"""A gem-cutting workshop's work orders: a loop over rough stones, a ledger memory tool, parallel wheel checks,
stage-by-stage wheel work and a grading sub-agent per stone. Recorded with trajdebug's own API (no run.state)."""
from __future__ import annotations

import json
import re

import trajdebug

from suite_common import chat, client, last_user

RUN_NAME = "gem-cutting-bench"
ROUTE = "sdk"
DOMAIN = "gem-cutting workshop"
SHAPE = ("~40-55 steps: work order, paged rough inventory, model plans every stone's stages, plan parse, per-stone "
         "weighing and ledger writes (memory tool), 3 parallel wheel checks, stage-major wheel work, a grading "
         "sub-agent per stone (ledger read, model grade, parse), certificate export schema check, close-out")

SWITCHES = ["SHORT_PAGE", "SKIP_PREFORM", "CLARITY_DASH", "GRADE_NEIGHBOUR", "WHOLE_CARATS"]
SHORT_PAGE = SKIP_PREFORM = CLARITY_DASH = GRADE_NEIGHBOUR = WHOLE_CARATS = False

ROUGH = {
    "GC-11": ("sapphire", 3.10), "GC-12": ("sapphire", 2.65), "GC-13": ("spinel", 3.40), "GC-14": ("tourmaline", 4.05),
    "GC-21": ("garnet", 2.90), "GC-22": ("garnet", 3.55), "GC-23": ("peridot", 3.85),
    "GC-31": ("aquamarine", 4.40), "GC-32": ("aquamarine", 3.95), "GC-33": ("topaz", 5.10), "GC-34": ("topaz", 4.70),
    "GC-41": ("spinel", 2.95), "GC-42": ("sapphire", 3.30), "GC-43": ("tourmaline", 3.60),
    "GC-51": ("garnet", 3.20), "GC-52": ("peridot", 4.15), "GC-53": ("topaz", 4.85), "GC-54": ("spinel", 3.05),
}
GRADES = {"GC-11": ("VS1", "cornflower"), "GC-12": ("VVS2", "royal"), "GC-13": ("VS2", "red"), "GC-14": ("SI1", "green"),
          "GC-21": ("VS1", "pyrope"), "GC-22": ("VS2", "almandine"), "GC-23": ("VVS1", "olive"),
          "GC-31": ("VVS2", "sky"), "GC-32": ("VS1", "sea"), "GC-33": ("IF", "imperial"), "GC-34": ("VVS1", "blue"),
          "GC-41": ("VS2", "pink"), "GC-42": ("VS1", "teal"), "GC-43": ("SI2", "bicolour"),
          "GC-51": ("VS1", "rhodolite"), "GC-52": ("VS2", "lime"), "GC-53": ("VVS2", "sherry"), "GC-54": ("VS1", "cobalt")}
CLARITY = {"FL", "IF", "VVS1", "VVS2", "VS1", "VS2", "SI1", "SI2", "I1"}

INPUTS = [
    {"order": "WO-611", "client": "Atelier Nord", "lots": ["GC-11", "GC-12", "GC-13", "GC-14"], "cut": "oval", "min_ct": 1.0},
    {"order": "WO-612", "client": "Brandt & Sohn", "lots": ["GC-21", "GC-22", "GC-23"], "cut": "cushion", "min_ct": 1.0},
    {"order": "WO-613", "client": "Maison Ferre", "lots": ["GC-31", "GC-32", "GC-33", "GC-34"], "cut": "emerald", "min_ct": 1.5},
    {"order": "WO-614", "client": "Kato Jewels", "lots": ["GC-41", "GC-42", "GC-43"], "cut": "round", "min_ct": 1.0},
    {"order": "WO-615", "client": "Ostrava Gems", "lots": ["GC-51", "GC-52", "GC-53", "GC-54"], "cut": "pear", "min_ct": 1.2},
]
PAGE = 3
LEDGER: dict = {}


def policy(request):
    prompt = last_user(request)
    if prompt.startswith("Plan the cutting"):
        stones = json.loads(prompt.split("\n", 1)[1])
        plan = []
        for i, s in enumerate(stones):
            stages = ["preform", "facet", "polish"]
            if SKIP_PREFORM and i == 1:
                stages = ["facet", "polish"]
            plan.append({"lot": s["lot"], "stages": ", ".join(stages), "target": f"{round(s['rough_ct'] * 0.42, 2):.2f} ct"})
        return json.dumps({"plan": plan})
    if prompt.startswith("Grade the finished stone"):
        rec = json.loads(prompt.split("\n", 1)[1])
        clarity, colour = GRADES[rec["lot"]]
        if CLARITY_DASH and rec["lot"] in ("GC-32",):
            clarity = clarity[:-1] + "-" + clarity[-1]
        return json.dumps({"lot": rec["lot"], "clarity": clarity, "colour": colour})
    return "ok"


def build(server):
    cl = client(server)

    @trajdebug.step(kind="input")
    def work_order(order: dict) -> dict:
        return dict(order)

    @trajdebug.step(kind="tool")
    def rough_inventory(lots: list) -> dict:
        size = PAGE if SHORT_PAGE else 50
        page = lots[:size]
        return {"stones": [{"lot": l, "species": ROUGH[l][0], "rough_ct": ROUGH[l][1]} for l in page], "page": 1}

    @trajdebug.step(kind="llm")
    def plan_cuts(cut: str, stones: list) -> str:
        return chat(cl, server, [
            {"role": "system", "content": f"You plan the {cut} cut for each rough stone: stages and target weight."},
            {"role": "user", "content": "Plan the cutting for these stones:\n" + json.dumps(stones)},
        ]).content

    @trajdebug.step(kind="parse")
    def parse_plan(text: str) -> dict:
        plan = {}
        for item in json.loads(text)["plan"]:
            raw = item["target"].replace(" ct", "")
            target = float(re.match(r"\d+", raw).group(0)) if WHOLE_CARATS else float(raw)
            plan[item["lot"]] = {"stages": [s.strip() for s in item["stages"].split(",")], "target_ct": target}
        return plan

    @trajdebug.step(kind="tool")
    def weigh_rough(lot: str) -> dict:
        return {"lot": lot, "scale_ct": ROUGH[lot][1]}

    @trajdebug.step(kind="tool")
    def ledger_write(lot: str, entry: dict) -> dict:
        LEDGER.setdefault(lot, {}).update(entry)
        return {"lot": lot, "saved": sorted(entry)}

    @trajdebug.step(kind="tool")
    def ledger_read(lot: str) -> dict:
        return {"lot": lot, **LEDGER.get(lot, {})}

    @trajdebug.step(kind="tool")
    def wheel_status(wheel: str) -> dict:
        return {"wheel": wheel, "free": True}

    @trajdebug.step(kind="tool")
    def run_wheel(lot: str, stage: str, target_ct: float) -> dict:
        done = LEDGER.get(lot, {}).get("stages_done", [])
        if stage == "facet" and "preform" not in done:
            raise RuntimeError(f"facet lap refuses {lot}: no preform on record")
        if stage == "polish" and "facet" not in done:
            raise RuntimeError(f"polish lap refuses {lot}: not faceted")
        LEDGER[lot]["stages_done"] = done + [stage]
        if stage == "polish":
            LEDGER[lot]["finished_ct"] = target_ct
        return {"lot": lot, "stage": stage, "ok": True}

    @trajdebug.step(kind="llm")
    def grade_call(record: dict) -> str:
        return chat(cl, server, [{"role": "user", "content": "Grade the finished stone:\n" + json.dumps(record)}]).content

    @trajdebug.step(kind="parse")
    def parse_grade(text: str) -> dict:
        return json.loads(text)

    @trajdebug.step(kind="agent")
    def grade_stone(lots: list, i: int) -> dict:
        lot = lots[i - 1] if (GRADE_NEIGHBOUR and i == 2) else lots[i]
        record = ledger_read(lot)
        grade = parse_grade(grade_call(record))
        return {"lot": grade["lot"], "clarity": grade["clarity"], "colour": grade["colour"], "carat": record.get("finished_ct")}

    @trajdebug.step(kind="tool")
    def certificate_export(order: str, certificates: list) -> dict:
        seen = set()
        for c in certificates:
            if c["clarity"] not in CLARITY:
                raise ValueError(f"certificate schema: clarity {c['clarity']!r} for {c['lot']} is not a clarity grade")
            if c["lot"] in seen:
                raise ValueError(f"certificate schema: lot {c['lot']} appears twice in {order}")
            seen.add(c["lot"])
        return {"order": order, "issued": len(certificates)}

    @trajdebug.step(kind="condition", attributes={"final": True})
    def close_work_order(order: dict, certificates: list, export: dict) -> dict:
        if export["issued"] != len(order["lots"]):
            raise AssertionError(f"{order['order']} lists {len(order['lots'])} lots, {export['issued']} certificates issued")
        for c in certificates:
            if c["carat"] < order["min_ct"]:
                raise AssertionError(f"{c['lot']} finished at {c['carat']:.2f} ct, under the order minimum of {order['min_ct']:.2f} ct")
        return {"closed": order["order"], "certificates": export["issued"]}

    return locals()


def record(inp, path, server):
    server.use(policy)
    LEDGER.clear()
    f = build(server)
    try:
        with trajdebug.run(RUN_NAME, path=path, task=f"work order {inp['order']}"):
            order = f["work_order"](inp)
            stones = f["rough_inventory"](order["lots"])["stones"]
            plan = f["parse_plan"](f["plan_cuts"](order["cut"], stones))
            lots = [s["lot"] for s in stones]
            for s in stones:
                w = f["weigh_rough"](s["lot"])
                f["ledger_write"](s["lot"], {"species": s["species"], "rough_ct": w["scale_ct"], "stages_done": []})
            with trajdebug.step("check_wheels", kind="agent"):
                with trajdebug.ContextThreadPoolExecutor(max_workers=3) as pool:
                    list(pool.map(f["wheel_status"], ["W1 diamond lap", "W2 copper lap", "W3 tin lap"]))
            for stage in ("preform", "facet", "polish"):
                for lot in lots:
                    if stage in plan[lot]["stages"]:
                        f["run_wheel"](lot, stage, plan[lot]["target_ct"])
            certificates = [f["grade_stone"](lots, i) for i in range(len(lots))]
            export = f["certificate_export"](order["order"], certificates)
            f["close_work_order"](order, certificates, export)
    except (ValueError, RuntimeError, AssertionError):
        pass


CASES = [
    {"id": "zzzs-gem-01", "input": 0, "switch": "SHORT_PAGE", "fault_kind": "truncated_result",
     "root": {"name": "rough_inventory", "occurrence": 1, "kind": "tool"}, "failure": {"name": "close_work_order", "occurrence": 1},
     "description": "The rough inventory answers only its first page of 3 stones for a work order of 4 lots, and nothing asks for page 2."},
    {"id": "zzzs-gem-02", "input": 1, "switch": "SKIP_PREFORM", "fault_kind": "plan_error",
     "root": {"name": "plan_cuts", "occurrence": 1, "kind": "llm"}, "failure": {"name": "run_wheel", "occurrence": 4},
     "description": "The cutting plan leaves the preform stage out for the second stone, GC-22, so it reaches the facet lap unshaped."},
    {"id": "zzzs-gem-03", "input": 2, "switch": "CLARITY_DASH", "fault_kind": "format_drift",
     "root": {"name": "grade_call", "occurrence": 2, "kind": "llm"}, "failure": {"name": "certificate_export", "occurrence": 1},
     "description": "The grading model writes the clarity of GC-32 as 'VS-1' where the grade scale spells it 'VS1'."},
    {"id": "zzzs-gem-04", "input": 4, "switch": "GRADE_NEIGHBOUR", "fault_kind": "subagent_wrong_entity",
     "root": {"name": "grade_stone", "occurrence": 3, "kind": "agent"}, "failure": {"name": "certificate_export", "occurrence": 1},
     "description": "The grading sub-agent for the third stone, GC-53, grades the stone before it, GC-52, so GC-52 is certified twice."},
    {"id": "zzzs-gem-05", "input": 4, "switch": "WHOLE_CARATS", "fault_kind": "lossy_parsing",
     "root": {"name": "parse_plan", "occurrence": 1, "kind": "parse"}, "failure": {"name": "close_work_order", "occurrence": 1},
     "description": "The plan parser keeps only the whole carats of each target weight, so GC-51's 1.34 ct target becomes 1 ct."},
]
