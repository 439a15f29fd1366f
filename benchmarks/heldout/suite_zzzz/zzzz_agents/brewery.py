"""Craft brewery batch planner (otlp route): a brew request -> recipe search (retriever) -> the model's
brew plan -> plan parser -> malt stock per malt and hop inventory (tools) -> gravity -> batch memory ->
fermenter choice -> the model's brew sheet -> QA check -> brewhouse booking."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

from ._common import chat, system_text, user_text
from ._otlp import Tracing


NAME = "brewhouse-batch-planner"
ROUTE = "otlp"
DOMAIN = "craft brewery, brew-day planning"
SHAPE = "OTel spans: retriever, llm plan, parser, per-malt stock tools, hop inventory, gravity calc, memory write, fermenter pick, llm brew sheet, QA check, booking tool"
SWITCH = None


def _switched(name: str) -> bool:
    return SWITCH == name


INPUTS = [
    {"task": "brew 20 hL Harbour Pale Ale on 2026-04-02", "request": "Brew 20 hL of Harbour Pale Ale on 2026-04-02."},
    {"task": "brew 10 hL Old Mill Stout on 2026-04-03", "request": "Brew 10 hL of Old Mill Stout on 2026-04-03."},
    {"task": "brew 20 hL Meadow Wheat on 2026-04-06", "request": "Brew 20 hL of Meadow Wheat on 2026-04-06."},
    {"task": "brew 20 hL Ridge IPA on 2026-04-07", "request": "Brew 20 hL of Ridge IPA on 2026-04-07."},
    {"task": "brew 12 hL Harbour Porter on 2026-04-08", "request": "Brew 12 hL of Harbour Porter on 2026-04-08."},
]

RECIPES = [  # per hL of wort
    {"id": "R-07", "name": "Harbour Pale Ale", "style": "pale ale", "malts_kg": {"pale malt": 19.0, "crystal 60": 1.2},
     "hops_g": {"Cascade": 180, "Centennial": 120}, "yeast": "US-05", "ebc": 14},
    {"id": "R-12", "name": "Harbour Porter", "style": "porter", "malts_kg": {"pale malt": 17.0, "brown malt": 2.5, "chocolate malt": 1.4},
     "hops_g": {"Fuggle": 150}, "yeast": "S-04", "ebc": 62},
    {"id": "R-03", "name": "Old Mill Stout", "style": "stout", "malts_kg": {"pale malt": 18.0, "roast barley": 2.2, "flaked oats": 1.8},
     "hops_g": {"East Kent Goldings": 160}, "yeast": "S-04", "ebc": 80},
    {"id": "R-21", "name": "Meadow Wheat", "style": "wheat", "malts_kg": {"pale malt": 8.0, "wheat malt": 9.5},
     "hops_g": {"Hallertau": 90}, "yeast": "WB-06", "ebc": 7},
    {"id": "R-30", "name": "Ridge IPA", "style": "ipa", "malts_kg": {"pale malt": 21.0, "carapils": 1.0},
     "hops_g": {"Citra": 320, "Mosaic": 260}, "yeast": "US-05", "ebc": 12},
]
STYLE_EBC = {"pale ale": (8, 24), "porter": (40, 80), "stout": (60, 120), "wheat": (4, 12), "ipa": (8, 20)}
STYLE_OG = {"pale ale": (1.044, 1.056), "porter": (1.048, 1.062), "stout": (1.048, 1.066), "wheat": (1.044, 1.054), "ipa": (1.056, 1.070)}
EXTRACT_PPG = {"pale malt": 300, "crystal 60": 270, "brown malt": 260, "chocolate malt": 250, "roast barley": 250,
               "flaked oats": 270, "wheat malt": 310, "carapils": 260}  # gravity points per kg per hL at full efficiency
EFFICIENCY = 0.9
MALT_STOCK = {"pale malt": 1200.0, "crystal 60": 80.0, "brown malt": 60.0, "chocolate malt": 40.0, "roast barley": 50.0,
              "flaked oats": 40.0, "wheat malt": 300.0, "carapils": 40.0}
HOP_STOCK = {"Cascade": 6.0, "Centennial": 4.0, "Fuggle": 3.0, "East Kent Goldings": 3.0, "Hallertau": 2.0, "Citra": 8.0,
             "Mosaic": 6.0, "Galaxy": 0.0}
FERMENTERS = [("FV-1", 12), ("FV-2", 16), ("FV-3", 22), ("FV-4", 30)]  # (name, hL), smallest first


def brain(request):
    system = system_text(request)
    if system.startswith("Plan the brew"):
        data = json.loads(user_text(request))
        r, hl = data["recipe"], data["volume_hl"]
        hops = {h: round(g * hl / 1000, 2) for h, g in r["hops_g"].items()}
        if _switched("hop-sub") and "Citra" in hops:
            hops["Galaxy"] = hops.pop("Mosaic")
        return json.dumps({"beer": r["name"], "style": r["style"], "volume_hl": hl, "yeast": r["yeast"], "ebc": r["ebc"],
                           "malts_kg": {m: round(kg * hl, 1) for m, kg in r["malts_kg"].items()}, "hops_kg": hops})
    if system.startswith("Write the brew sheet"):
        mem = json.loads(user_text(request))
        og = f"{round((mem['og'] - 1) * 1000)} points" if _switched("sheet-points") else f"{mem['og']:.3f}"
        return (f"BREW SHEET {mem['beer']}: {mem['volume_hl']} hL into {mem['fermenter']}, OG {og}, "
                f"yeast {mem['yeast']}, hops " + ", ".join(f"{h} {kg} kg" for h, kg in mem["hops_kg"].items()))
    return "Only brewing questions, please."


def recipe_search(query: str) -> list[dict]:
    words = set(query.lower().split())
    scored = []
    for r in RECIPES:
        name_words = set(r["name"].lower().split())
        score = len(words & name_words) / len(name_words)
        scored.append({"id": r["id"], "content": r, "score": round(score, 2)})
    if _switched("first-word"):  # house names first, the newest recipe of a house on top
        for d in scored:
            d["score"] = 1.0 if d["content"]["name"].split()[0].lower() in words else 0.0
        return sorted(scored, key=lambda d: (-d["score"], -int(d["id"][2:])))[:2]
    return sorted(scored, key=lambda d: -d["score"])[:2]


def parse_plan(content: str) -> dict:
    plan = json.loads(content)
    return {"beer": plan["beer"], "style": plan["style"], "volume_hl": float(plan["volume_hl"]), "yeast": plan["yeast"],
            "ebc": plan["ebc"], "malts_kg": dict(plan["malts_kg"]), "hops_kg": dict(plan["hops_kg"])}


def malt_stock(malt: str) -> dict:
    return {"malt": malt, "kg": MALT_STOCK[malt], "lot": f"L{zlib.crc32(malt.encode()) % 900 + 100}"}


def hop_inventory(hops: list[str]) -> dict:
    return {h: HOP_STOCK.get(h, 0.0) for h in hops}


def gravity(plan: dict) -> dict:
    points = sum(EXTRACT_PPG[m] * kg for m, kg in plan["malts_kg"].items()) * EFFICIENCY / (plan["volume_hl"] * 100)
    return {"og": round(1 + points / 1000, 3), "points": round(points, 1)}


MEMORY: dict[str, dict] = {}


def remember_batch(plan: dict, grav: dict, recipe: dict) -> dict:
    og = grav["og"]
    if _switched("memo-og"):
        og = round(1 + sum(EXTRACT_PPG[m] * kg for m, kg in recipe["malts_kg"].items()) / 100 / 1000, 3)
    entry = {"beer": plan["beer"], "volume_hl": plan["volume_hl"], "og": og, "yeast": plan["yeast"], "hops_kg": plan["hops_kg"]}
    MEMORY[plan["beer"]] = entry
    return entry


def pick_fermenter(volume_hl: float) -> dict:
    sizes = [hl for _, hl in FERMENTERS]
    i = next(k for k, hl in enumerate(sizes) if hl >= volume_hl * 1.1)  # 10 % headspace
    if _switched("tank-index"):
        i -= 1
    name, hl = FERMENTERS[i]
    return {"fermenter": name, "capacity_hl": hl}


def qa_check(plan: dict, grav: dict, sheet: str, stock: dict, hops: dict, requested: str) -> dict:
    if plan["beer"] != requested:
        raise ValueError(f"plan is for {plan['beer']}, the request is {requested}")
    lo, hi = STYLE_OG[plan["style"]]
    if not lo <= grav["og"] <= hi:
        raise ValueError(f"OG {grav['og']:.3f} outside the {plan['style']} range {lo:.3f}-{hi:.3f}")
    m = re.search(r"OG (\d\.\d{3})", sheet)
    if m is None:
        raise ValueError(f"brew sheet gives no original gravity as 1.xxx: {sheet[:60]}")
    if float(m.group(1)) != grav["og"]:
        raise ValueError(f"brew sheet says OG {m.group(1)}, the grain bill gives {grav['og']:.3f}")
    for malt, kg in plan["malts_kg"].items():
        if kg > stock[malt]["kg"]:
            raise ValueError(f"{malt}: {kg} kg needed, {stock[malt]['kg']} kg in stock")
    for hop, kg in plan["hops_kg"].items():
        if kg > hops[hop]:
            raise ValueError(f"hop {hop}: {kg} kg needed, {hops[hop]} kg in store")
    return {"passed": True}


def book_brewhouse(day: str, plan: dict, tank: dict) -> dict:
    if tank["capacity_hl"] < plan["volume_hl"]:
        raise ValueError(f"{tank['fermenter']} holds {tank['capacity_hl']} hL, the batch is {plan['volume_hl']} hL")
    return {"brew_day": day, "fermenter": tank["fermenter"], "slot": "05:00"}


def record(inp: dict, out: Path, ctx) -> None:
    t = _tracing()
    with t.recording(out):
        try:
            with t.agent(NAME, inp["task"], inp["request"]):
                req = inp["request"]
                beer = re.search(r"hL of (.+?) on", req).group(1)
                hl = float(re.search(r"(\d+) hL", req).group(1))
                day = re.search(r"\d{4}-\d{2}-\d{2}", req).group(0)
                docs = t.step("recipe_search", "RETRIEVER", recipe_search, beer)
                recipe = docs[0]["content"]
                answer = chat([{"role": "system", "content": "Plan the brew: scale the recipe, answer JSON."},
                               {"role": "user", "content": json.dumps({"recipe": recipe, "volume_hl": hl})}])
                plan = t.step("parse_plan", "CHAIN", parse_plan, answer["content"])
                stock = {m: t.step("malt_stock", "TOOL", malt_stock, m) for m in plan["malts_kg"]}
                hops = t.step("hop_inventory", "TOOL", hop_inventory, sorted(plan["hops_kg"]))
                grav = t.step("gravity", "CHAIN", gravity, plan)
                t.step("remember_batch", "CHAIN", remember_batch, plan, grav, recipe)
                tank = t.step("pick_fermenter", "CHAIN", pick_fermenter, plan["volume_hl"])
                sheet = chat([{"role": "system", "content": "Write the brew sheet from the batch memory."},
                              {"role": "user", "content": json.dumps({**MEMORY[plan["beer"]], "fermenter": tank["fermenter"]})}])
                t.step("qa_check", "GUARDRAIL", qa_check, plan, grav, sheet["content"], stock, hops, beer)
                t.step("book_brewhouse", "TOOL", book_brewhouse, day, plan, tank)
        except ValueError:
            pass


_t: list[Tracing] = []


def _tracing() -> Tracing:
    if not _t:
        _t.append(Tracing(NAME))
    return _t[0]


CASES = [
    {"id": "brewery_1", "input": 0, "switch": "first-word", "kind": "wrong_retrieval",
     "root": ("recipe_search", 1), "failure": ("qa_check", 1),
     "description": "The recipe search ranks on the first word of the name only, answers Harbour Porter for Harbour Pale Ale, and the QA check finds a porter plan."},
    {"id": "brewery_2", "input": 3, "switch": "hop-sub", "kind": "hallucinated_value",
     "root": ("ChatCompletion", 1), "failure": ("qa_check", 1),
     "description": "The planning model swaps Mosaic for Galaxy, a hop the recipe does not name and the store does not hold, and the QA check finds no Galaxy in store."},
    {"id": "brewery_3", "input": 1, "switch": "memo-og", "kind": "bad_memory_write",
     "root": ("remember_batch", 1), "failure": ("qa_check", 1),
     "description": "The batch memory is written with a gravity worked out from the per-hL recipe at full efficiency, the brew sheet copies it, and QA finds the sheet's OG off the grain bill's."},
    {"id": "brewery_4", "input": 2, "switch": "tank-index", "kind": "off_by_one",
     "root": ("pick_fermenter", 1), "failure": ("book_brewhouse", 1),
     "description": "The fermenter pick takes the tank one index below the first one large enough, a 16 hL tank for 20 hL, and the brewhouse booking refuses it."},
    {"id": "brewery_5", "input": 4, "switch": "sheet-points", "kind": "format_drift",
     "root": ("ChatCompletion", 2), "failure": ("qa_check", 1),
     "description": "The brew-sheet model writes the original gravity as '55 points' instead of 1.055, and the QA check cannot read the sheet's gravity."},
]
