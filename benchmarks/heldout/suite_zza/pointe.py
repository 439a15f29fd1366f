"""Ballet pointe shoe fitting (recording SDK): profile, memory, fitter sub-agent, try-ons, order note, order."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trajdebug

from .common import client, request_text
from .kit import active

AGENT = "pointe-fitting-assistant"
ROUTE = "sdk"
DOMAIN = "ballet pointe shoe fitting"
SHAPE = "intake -> profile tool -> memory write -> fitter sub-agent (catalog retrieval, filter, LLM rank, parse) -> try-on loop -> fitter notes -> context -> LLM order note -> parse -> order API"

PROFILES = {
    "D-114": {"foot_length_mm": 232, "width": "D", "width_last_season": "C", "toe_shape": "egyptian", "level": "pre-professional", "notes": "shank: 3/4 hard; vamp: medium"},
    "D-131": {"foot_length_mm": 241, "width": "C", "width_last_season": "B", "toe_shape": "greek", "level": "pre-professional", "notes": "shank: medium; vamp: high"},
    "D-090": {"foot_length_mm": 228, "width": "C", "width_last_season": "C", "toe_shape": "egyptian", "level": "student", "notes": "shank: soft; vamp: low"},
    "D-102": {"foot_length_mm": 236, "width": "D", "width_last_season": "D", "toe_shape": "greek", "level": "professional", "notes": "shank: hard; vamp: medium"},
    "D-118": {"foot_length_mm": 245, "width": "E", "width_last_season": "E", "toe_shape": "roman", "level": "pre-professional", "notes": "shank: medium; vamp: high"},
    "D-125": {"foot_length_mm": 224, "width": "B", "width_last_season": "B", "toe_shape": "roman", "level": "student", "notes": "shank: soft; vamp: medium"},
}
INPUTS = {"A": {"dancer": "D-114"}, "B": {"dancer": "D-131"}, "R1": {"dancer": "D-090"}, "R2": {"dancer": "D-102"},
          "R3": {"dancer": "D-118"}, "R4": {"dancer": "D-125"}}
REFS = ["R1", "R2", "R3", "R4"]

CATALOG = [
    {"model": "Aria Classic", "toe": "roman", "widths": ["B", "C", "D", "E"]},
    {"model": "Corella Low", "toe": "greek", "widths": ["B", "C"]},
    {"model": "Serenade Pro", "toe": "greek", "widths": ["C", "D", "E"]},
    {"model": "Sylph Taper", "toe": "egyptian", "widths": ["C"]},
    {"model": "Odette Wide", "toe": "egyptian", "widths": ["C", "D", "E"]},
    {"model": "Giselle Square", "toe": "roman", "widths": ["D", "E"]},
]
PREVIOUS_APPOINTMENT = "PREVIOUS APPOINTMENT D-077 model: Corella Low size: 36 width: B shank: soft"


def eu_size(mm: int) -> str:
    return f"{(mm + 15) / 6.67 + 0.0:.1f}"[:2] + (".5" if (mm // 4) % 2 else "")


def policy(request: Any) -> str:
    system, text = request_text(request)
    if "rank pointe" in system:
        cands = json.loads(re.search(r"CANDIDATES (\[.*\])", text).group(1))
        size = re.search(r"SIZE_RANGE (\S+)", text).group(1)
        if active("pointe_02"):
            size = str(float(size) + 1.5)
        return json.dumps({"model": cands[0]["model"], "size": size, "reason": "toe shape and width match"})
    if "order note" in system:
        last = {}
        for k in ("model", "size", "width", "shank"):
            vals = re.findall(rf"{k}: ([A-Za-z0-9./ ]+?)(?= [a-z]+:|;|$|\n)", text)
            last[k] = vals[-1].strip() if vals else ""
        return json.dumps(last)
    return "{}"


@trajdebug.step(kind="input")
def intake_dancer(inp: dict) -> dict:
    return {"dancer": inp["dancer"], "request": "first fitting of the season"}


@trajdebug.step(kind="tool")
def load_dancer_profile(dancer: str) -> dict:
    return {"dancer": dancer, **PROFILES[dancer]}


@trajdebug.step(kind="state")
def remember_measurements(profile: dict) -> dict:
    width = profile["width_last_season"] if active("pointe_01") else profile["width"]
    mem = {"dancer": profile["dancer"], "foot_length_mm": profile["foot_length_mm"], "width": width, "toe_shape": profile["toe_shape"]}
    trajdebug.current_run().state["fit_profile"] = mem
    return mem


@trajdebug.step(kind="retrieval")
def search_catalog(toe_shape: str) -> dict:
    items = [dict(c) for c in CATALOG]
    if active("pointe_05"):
        return {"items": items[:3], "page": 1}
    return {"items": items, "page": 1}


@trajdebug.step(kind="other")
def filter_by_foot(result: dict) -> list:
    mem = trajdebug.current_run().state["fit_profile"]
    keep = [c for c in result["items"] if c["toe"] == mem["toe_shape"] and mem["width"] in c["widths"]]
    return keep or [c for c in result["items"] if mem["width"] in c["widths"]][:1]


@trajdebug.step(kind="parse")
def read_choice(reply: dict) -> dict:
    return json.loads(reply["content"])


@trajdebug.step(kind="tool")
def try_on(dancer: str, model: str, size: str, width: str) -> dict:
    prof = PROFILES[dancer]
    want = eu_size(prof["foot_length_mm"])
    if size not in (want, f"{float(want) + 0.5}"):
        raise RuntimeError(f"fitting room stock API 404: no pair of {model} in size {size} width {width}")
    cat = next(c for c in CATALOG if c["model"] == model)
    score = 5 if (cat["toe"] == prof["toe_shape"] and width == prof["width"]) else 2
    if size != want:
        score -= 1
    return {"model": model, "size": size, "width": width, "fit_score": score}


@trajdebug.step(kind="other")
def apply_fitter_notes(notes: str) -> dict:
    pairs = [p.split(":", 1) for p in notes.split(";")]
    if active("pointe_03"):
        try:
            return {k.strip(): int(v.strip()) for k, v in pairs}
        except ValueError:
            return {}
    return {k.strip(): v.strip() for k, v in pairs}


@trajdebug.step(kind="other")
def assemble_prompt_context(dancer: str, best: dict, notes: dict) -> str:
    lines = [f"DANCER {dancer} model: {best['model']} size: {best['size']} width: {best['width']}"]
    if "shank" in notes:
        lines.append(f"FITTER shank: {notes['shank']}")
    if active("pointe_04"):
        lines.append(PREVIOUS_APPOINTMENT)
    return "\n".join(lines)


@trajdebug.step(kind="parse")
def parse_order_note(reply: dict) -> dict:
    return json.loads(reply["content"])


@trajdebug.step(kind="tool")
def place_order(dancer: str, order: dict, fit_score: int) -> dict:
    prof = PROFILES[dancer]
    if fit_score < 4:
        raise RuntimeError(f"order service 409: fitter sign-off refused for {dancer}: fit score {fit_score}/5 for {order['model']} is below 4")
    if not order.get("shank"):
        raise RuntimeError(f"order service 422: shank strength missing for {prof['level']} dancer {dancer}")
    if order["width"] != prof["width"] or order["size"] not in (eu_size(prof["foot_length_mm"]), f"{float(eu_size(prof['foot_length_mm'])) + 0.5}"):
        raise RuntimeError(f"order service 422: size {order['size']} width {order['width']} does not match measured foot {prof['foot_length_mm']} mm width {prof['width']}")
    return {"status": 201, "order": f"PO-{dancer}-{order['model'][:3].upper()}", "pairs": 2}


def _chat(llm: Any, name: str, messages: list) -> dict:
    with trajdebug.step(name, kind="llm", input={"messages": messages}) as s:
        reply = llm.chat.completions.create(model="fake-model", messages=messages)
        s.output = {"role": "assistant", "content": reply.choices[0].message.content}
        s.usage(model="fake-model", prompt_tokens=reply.usage.prompt_tokens if reply.usage else 0,
                completion_tokens=reply.usage.completion_tokens if reply.usage else 0)
    return s.output


def record(key: str, path: Path, base_url: str) -> None:
    inp = INPUTS[key]
    llm = client(base_url)
    try:
        with trajdebug.run(AGENT, task=f"fit pointe shoes for dancer {inp['dancer']}", path=str(path)):
            req = intake_dancer(inp)
            profile = load_dancer_profile(req["dancer"])
            mem = remember_measurements(profile)
            with trajdebug.step("fitter_subagent", kind="agent", input={"dancer": mem["dancer"]}) as sub:
                found = search_catalog(mem["toe_shape"])
                cands = filter_by_foot(found)
                reply = _chat(llm, "rank_models", [
                    {"role": "system", "content": "You rank pointe shoe models for a fitting. Answer JSON."},
                    {"role": "user", "content": f"FOOT {mem['foot_length_mm']} mm SIZE_RANGE {eu_size(mem['foot_length_mm'])} CANDIDATES {json.dumps(cands)}"},
                ])
                choice = read_choice(reply)
                sub.output = choice
            results = []
            for size in (choice["size"], f"{float(choice['size']) + 0.5}"):
                results.append(try_on(req["dancer"], choice["model"], size, mem["width"]))
            best = max(results, key=lambda r: r["fit_score"])
            notes = apply_fitter_notes(profile["notes"])
            context = assemble_prompt_context(req["dancer"], best, notes)
            reply = _chat(llm, "write_order_note", [
                {"role": "system", "content": "You write the order note for a pointe shoe order as JSON."},
                {"role": "user", "content": context},
            ])
            order = parse_order_note(reply)
            place_order(req["dancer"], order, best["fit_score"])
    except RuntimeError:
        pass


CASES = [
    dict(case="pointe_01", fault_kind="bad_memory_write", input="A", root=("remember_measurements", 1, "state"), failure=("place_order", 1),
         description="The measurement memory stores last season's width instead of today's, so the fitter shortlists a narrower shoe that fits badly and the order is refused at sign-off."),
    dict(case="pointe_02", fault_kind="hallucinated_value", input="B", root=("rank_models", 1, "llm"), failure=("try_on", 1),
         description="The ranking model answers a shoe size that is in none of its inputs, and the fitting room has no pair in that size."),
    dict(case="pointe_03", fault_kind="swallowed_error", input="A", root=("apply_fitter_notes", 1, "other"), failure=("place_order", 1),
         description="The fitter-notes reader catches its own conversion error and returns an empty dict, so the order goes out without a shank strength."),
    dict(case="pointe_04", fault_kind="context_pollution", input="B", root=("assemble_prompt_context", 1, "other"), failure=("place_order", 1),
         description="The prompt context carries the previous appointment's log, and the order note takes that dancer's size and width."),
    dict(case="pointe_05", fault_kind="truncated_result", input="A", root=("search_catalog", 1, "retrieval"), failure=("place_order", 1),
         description="The catalog search returns only its first three models, dropping the egyptian-toe shoes, so a poorly fitting model is chosen and the order is refused."),
]
