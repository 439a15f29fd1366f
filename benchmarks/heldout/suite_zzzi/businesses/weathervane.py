"""Weathervane forge (otlp route): OpenInference spans for a commission, a model-drafted cut list, and a balance certificate."""
import json

from openai import OpenAI

from businesses._otel import span, step

NAME = "weathervane-forge"
SHORT = "vane"
ROUTE = "otlp"
DOMAIN = "weathervane forge"
SHAPE = "OTLP: library retrieval -> model cut list (OpenInference LLM span) -> parse -> per-part density tool + mass -> counterweight -> site wind -> wind load -> spindle order -> weigh assembly -> final balance assertion"
ACTIVE = None

DENSITY = {"copper": 8.96, "brass": 8.5, "steel": 7.85}
LIBRARY = {
    "rooster": [{"part": "comb", "x_cm": 6, "area_cm2": 60, "qty": 1}, {"part": "body", "x_cm": 14, "area_cm2": 420, "qty": 1},
                {"part": "tail plume", "x_cm": 38, "area_cm2": 310, "qty": 1}, {"part": "leg", "x_cm": 10, "area_cm2": 30, "qty": 2}],
    "schooner": [{"part": "hull", "x_cm": 12, "area_cm2": 380, "qty": 1}, {"part": "mainsail", "x_cm": 22, "area_cm2": 520, "qty": 1},
                 {"part": "jib", "x_cm": 4, "area_cm2": 160, "qty": 1}, {"part": "pennant", "x_cm": 44, "area_cm2": 70, "qty": 1},
                 {"part": "mast", "x_cm": 20, "area_cm2": 45, "qty": 2}],
    "fox": [{"part": "head", "x_cm": 5, "area_cm2": 110, "qty": 1}, {"part": "body", "x_cm": 18, "area_cm2": 360, "qty": 1},
            {"part": "brush tail", "x_cm": 41, "area_cm2": 290, "qty": 1}],
    "dragon": [{"part": "head", "x_cm": 4, "area_cm2": 140, "qty": 1}, {"part": "wing", "x_cm": 16, "area_cm2": 260, "qty": 2},
               {"part": "body", "x_cm": 24, "area_cm2": 300, "qty": 1}, {"part": "tail barb", "x_cm": 46, "area_cm2": 90, "qty": 1},
               {"part": "claw", "x_cm": 12, "area_cm2": 25, "qty": 4}, {"part": "spine ridge", "x_cm": 28, "area_cm2": 60, "qty": 3}],
    "whale": [{"part": "body", "x_cm": 15, "area_cm2": 540, "qty": 1}, {"part": "fluke", "x_cm": 40, "area_cm2": 210, "qty": 1},
              {"part": "fin", "x_cm": 18, "area_cm2": 55, "qty": 2}],
}
THICKNESS = {"copper": 1.2, "brass": 1.5, "steel": 2.0}
WIND = {"Aberdeen harbour": 38.0, "Vermont barn": 27.0, "Lofoten pier": 44.0, "Dorset church": 31.0, "Cape Cod inn": 35.0}
SPINDLE_N_MAX = 1500.0

INPUTS = [
    {"commission": "V-118", "motif": "rooster", "metal": "copper", "site": "Dorset church"},
    {"commission": "V-119", "motif": "schooner", "metal": "brass", "site": "Cape Cod inn"},
    {"commission": "V-120", "motif": "fox", "metal": "copper", "site": "Vermont barn"},
    {"commission": "V-121", "motif": "dragon", "metal": "steel", "site": "Aberdeen harbour"},
    {"commission": "V-122", "motif": "whale", "metal": "copper", "site": "Lofoten pier"},
]

CASES = [
    {"input": 2, "switch": "drop_tail", "kind": "plan_error", "root": ("ChatCompletion", 1), "failure": ("certify_balance", 1),
     "description": "The model's cut list for the fox leaves out the brush tail, the part furthest from the spindle."},
    {"input": 1, "switch": "thick_sheet", "kind": "hallucinated_value", "root": ("ChatCompletion", 1), "failure": ("certify_balance", 1),
     "description": "The model's cut list states 3.0 mm brass sheet where the library and the shop use 1.5 mm."},
    {"input": 3, "switch": "single_qty", "kind": "lossy_parsing", "root": ("read_cut_list", 1), "failure": ("certify_balance", 1),
     "description": "The cut list reader drops the quantity column, so the two wings, four claws and three spine ridges count once each."},
    {"input": 0, "switch": "short_loop", "kind": "off_by_one", "root": ("counterweight", 1), "failure": ("certify_balance", 1),
     "description": "The counterweight sum stops one part early and leaves the legs out of the moment."},
    {"input": 4, "switch": "kmh_wind", "kind": "unit_error", "root": ("site_wind", 1), "failure": ("order_spindle", 1),
     "description": "The site wind lookup gives the Lofoten design gust in km/h in the field read as metres per second."},
]


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    ask = json.loads(prompt.split("TEMPLATE:", 1)[1])
    parts = [dict(p, thickness_mm=THICKNESS[ask["metal"]]) for p in ask["parts"]]
    if ACTIVE == "drop_tail":
        parts = [p for p in parts if p["part"] != "brush tail"]
    if ACTIVE == "thick_sheet":
        parts = [dict(p, thickness_mm=3.0) for p in parts]
    rows = ["part|x_cm|area_cm2|qty|thickness_mm"] + [f"{p['part']}|{p['x_cm']}|{p['area_cm2']}|{p['qty']}|{p['thickness_mm']}" for p in parts]
    return "\n".join(rows)


def read_cut_list(text):
    lines = text.strip().splitlines()
    head = lines[0].split("|")
    out = []
    for line in lines[1:]:
        row = dict(zip(head, line.split("|")))
        part = {"part": row["part"], "x_cm": float(row["x_cm"]), "area_cm2": float(row["area_cm2"]),
                "thickness_mm": float(row["thickness_mm"])}
        if ACTIVE != "single_qty":
            part["qty"] = int(row["qty"])
        out.append(part)
    return out


def part_mass(part, density):
    return {"part": part["part"], "x_cm": part["x_cm"],
            "grams": round(part["area_cm2"] * part["thickness_mm"] / 10 * density * part.get("qty", 1), 1)}


def counterweight(masses):
    upto = len(masses) - 1 if ACTIVE == "short_loop" else len(masses)
    moment = sum(m["grams"] * m["x_cm"] for m in masses[:upto])
    return {"arm_cm": 30.0, "grams": round(moment / 30.0, 1), "moment_gcm": round(moment, 1)}


def site_wind(site):
    v = WIND[site]
    return {"site": site, "gust_ms": round(v * 3.6, 1) if ACTIVE == "kmh_wind" else v}


def wind_load(gust_ms, parts):
    area_m2 = sum(p["area_cm2"] * p.get("qty", 1) for p in parts) / 10000
    return {"newtons": round(0.5 * 1.225 * gust_ms ** 2 * area_m2 * 1.3, 1), "area_m2": round(area_m2, 3)}


def order_spindle(load):
    if load["newtons"] > SPINDLE_N_MAX:
        raise ValueError(f"spindle supplier: side load {load['newtons']} N above the 1500 N bearing range")
    return {"spindle": "SS-25 sealed bearing", "rated_n": SPINDLE_N_MAX}


def weigh_assembly(motif, metal, cw):
    actual = sum(p["area_cm2"] * THICKNESS[metal] / 10 * DENSITY[metal] * p["qty"] * p["x_cm"] for p in LIBRARY[motif])
    return {"vane_moment_gcm": round(actual, 1), "counter_moment_gcm": round(cw["grams"] * cw["arm_cm"], 1)}


def certify_balance(scale):
    residual = abs(scale["vane_moment_gcm"] - scale["counter_moment_gcm"]) / scale["vane_moment_gcm"]
    assert residual < 0.02, f"assembly out of balance by {residual:.1%} (vane {scale['vane_moment_gcm']} g*cm, counterweight {scale['counter_moment_gcm']} g*cm)"
    return {"certified": True, "residual": round(residual, 4)}


def record(inp, ctx, tracer):
    client = OpenAI(base_url=ctx.server.base_url, api_key="not-needed", max_retries=0)
    try:
        with span(tracer, NAME, "AGENT", f"Forge commission {inp['commission']}: {inp['metal']} {inp['motif']} for {inp['site']}") as top:
            template = step(tracer, "motif_library", "RETRIEVER", {"motif": inp["motif"]}, lambda: LIBRARY[inp["motif"]])
            msgs = [{"role": "system", "content": "You are the forge's pattern cutter. Answer a table part|x_cm|area_cm2|qty|thickness_mm."},
                    {"role": "user", "content": "Draft the cut list. TEMPLATE:" + json.dumps({"metal": inp["metal"], "parts": template})}]
            text = client.chat.completions.create(model="fake-model", messages=msgs).choices[0].message.content
            parts = step(tracer, "read_cut_list", "CHAIN", text, read_cut_list, text)
            masses = []
            for p in parts:
                dens = step(tracer, "metal_density", "TOOL", {"metal": inp["metal"]}, lambda: {"metal": inp["metal"], "g_cm3": DENSITY[inp["metal"]]})
                masses.append(step(tracer, "part_mass", "CHAIN", {"part": p, "density": dens}, part_mass, p, dens["g_cm3"]))
            cw = step(tracer, "counterweight", "CHAIN", masses, counterweight, masses)
            wind = step(tracer, "site_wind", "TOOL", {"site": inp["site"]}, site_wind, inp["site"])
            load = step(tracer, "wind_load", "TOOL", {"gust_ms": wind["gust_ms"], "parts": parts}, wind_load, wind["gust_ms"], parts)
            step(tracer, "order_spindle", "TOOL", load, order_spindle, load)
            scale = step(tracer, "weigh_assembly", "TOOL", {"commission": inp["commission"], "counterweight": cw}, weigh_assembly, inp["motif"], inp["metal"], cw)
            top["out"] = step(tracer, "certify_balance", "CHAIN", scale, certify_balance, scale)
    except Exception:
        pass
    finally:
        client.close()
