"""radiocarbon-lab: a radiocarbon dating laboratory's batch agent (trajdebug's own recorder, JSONL).

A submission (an excavation's or a core's samples, listed top to bottom) is planned by a model
(material, pretreatment protocol, calibration curve), the AMS wheel map is rebuilt from the loading
log, and each sample goes through the registry, the protocol library, a carbon-yield estimate, the
IRMS (delta 13C), the AMS (with retries on the ion source) and the results table.  The curve segment
is fetched, every sample is calibrated, the dates are checked against the stratigraphy, a model
drafts the report and a last check compares it with the calibrations.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import trajdebug
from openai import OpenAI

from .common import Case, first_json, last_user, system_of

RUN_NAME = "radiocarbon-lab"
ROUTE = "sdk"
DOMAIN = "radiocarbon dating laboratory: AMS batch, calibration and date report"
SHAPE = "llm plan -> parse -> state (wheel map) -> per-sample loop of 6 steps (tool, retrieval, code, tool, tool+retry, state) -> retrieval -> per-sample calibration -> stratigraphy check -> llm report -> final check"

SWITCH: str | None = None


def _on(tag: str) -> bool:
    return SWITCH == tag  # the one place SWITCH is read


# --------------------------------------------------------------------------------------------------
# The laboratory's world: registry, protocols, curve, instruments.
# --------------------------------------------------------------------------------------------------


def _curve_age(cal_bp: float) -> float:
    """14C age of the (synthetic) calibration curve at a calendar age."""
    return 0.955 * cal_bp + 60.0 * math.sin(cal_bp / 260.0) + 25.0


CURVES = {
    "IntCal20": {"version": "IntCal20", "published": "2020-08", "offset": 0.0, "sigma": 16.0},
    "Marine20": {"version": "Marine20", "published": "2020-08", "offset": 410.0, "sigma": 22.0},
}
CACHED_CURVES = {"IntCal20": {"version": "IntCal13", "published": "2013-12", "offset": 9.0, "sigma": 18.0}}

# material -> (protocol id, title, collagen/char yield, carbon fraction, typical delta13C)
PROTOCOLS = [
    {"id": "P-ABA-2", "material": "charcoal", "title": "Acid-base-acid, charcoal and charred seeds", "yield": 0.35, "carbon_fraction": 0.60},
    {"id": "P-ABA-3", "material": "plant macrofossil", "title": "Acid-base-acid, delicate plant remains", "yield": 0.30, "carbon_fraction": 0.45},
    {"id": "P-COL-1", "material": "bone", "title": "Collagen extraction with ultrafiltration (>30 kDa)", "yield": 0.05, "carbon_fraction": 0.42},
    {"id": "P-CEL-1", "material": "wood", "title": "BABAB cellulose for wood", "yield": 0.30, "carbon_fraction": 0.44},
    {"id": "P-CAR-1", "material": "shell", "title": "Carbonate hydrolysis with surface etch (20 %)", "yield": 0.80, "carbon_fraction": 0.12},
    {"id": "P-PEA-1", "material": "peat", "title": "Acid-base-acid, humin fraction of peat", "yield": 0.25, "carbon_fraction": 0.50},
]

WHEEL_RESERVED = ({"position": 0, "target": "OX-II", "f14c": 1.3407}, {"position": 1, "target": "process blank", "f14c": 0.0021})

# The submissions.  cal: the sample's true calendar age; d13c: its true delta 13C.
INPUTS: list[dict[str, Any]] = [
    {
        "task": "date submission RC-2291 (Tell Qarqur, trench B, 4 samples)",
        "submission": "RC-2291",
        "submitter": "Dr. N. Haddad, Tell Qarqur excavation",
        "samples": [
            {"id": "RC-2291-1", "label": "charcoal, hearth F12, locus 3", "depth_cm": 85, "cal": 2950, "d13c": -24.6,
             "registry": {"mass_mg": 24.0}},
            {"id": "RC-2291-2", "label": "charred barley grains, storage pit F19", "depth_cm": 120, "cal": 3330, "d13c": -23.1,
             "registry": {"mass_mg": 18.5}},
            {"id": "RC-2291-3", "label": "sheep metatarsal, floor 4", "depth_cm": 150, "cal": 3720, "d13c": -19.8,
             "registry": {"mass": 0.62, "mass_unit": "g"}},
            {"id": "RC-2291-4", "label": "charcoal, destruction layer", "depth_cm": 190, "cal": 4180, "d13c": -25.2,
             "registry": {"mass_mg": 31.0}},
        ],
    },
    {
        "task": "date submission RC-2304 (Abisko mire core AB-3, 3 samples)",
        "submission": "RC-2304",
        "submitter": "Palaeoecology group, Lund",
        "samples": [
            {"id": "RC-2304-1", "label": "peat, 42-43 cm, Sphagnum dominated", "depth_cm": 42, "cal": 1480, "d13c": -27.9,
             "registry": {"mass_mg": 60.0}},
            {"id": "RC-2304-2", "label": "Betula nana leaves, 88-89 cm", "depth_cm": 88, "cal": 2610, "d13c": -28.4,
             "registry": {"mass_mg": 9.5}},
            {"id": "RC-2304-3", "label": "peat, 131-132 cm, basal fen peat", "depth_cm": 131, "cal": 4050, "d13c": -27.1,
             "registry": {"mass_mg": 75.0}},
        ],
    },
    {
        "task": "date submission RC-2317 (Skaill shell midden, Orkney, 3 samples)",
        "submission": "RC-2317",
        "submitter": "Orkney Research Centre for Archaeology",
        "samples": [
            {"id": "RC-2317-1", "label": "charcoal (Calluna), midden layer 2", "depth_cm": 30, "cal": 1850, "d13c": -25.9,
             "registry": {"mass_mg": 12.0}},
            {"id": "RC-2317-2", "label": "limpet shell (Patella vulgata), midden layer 3", "depth_cm": 55, "cal": 2320, "d13c": 1.4,
             "registry": {"mass": 0.21, "mass_unit": "g"}},
            {"id": "RC-2317-3", "label": "charcoal (Salix), hearth below midden", "depth_cm": 80, "cal": 2790, "d13c": -26.3,
             "registry": {"mass_mg": 15.0}},
        ],
    },
    {
        "task": "date submission RC-2322 (Loch Etteridge core LE-2, 5 samples)",
        "submission": "RC-2322",
        "submitter": "Quaternary lab, University of St Andrews",
        "samples": [
            {"id": "RC-2322-1", "label": "terrestrial plant macrofossils, 212 cm", "depth_cm": 212, "cal": 1210, "d13c": -27.4,
             "registry": {"mass_mg": 8.0}},
            {"id": "RC-2322-2", "label": "terrestrial plant macrofossils, 240 cm", "depth_cm": 240, "cal": 1450, "d13c": -28.0,
             "registry": {"mass_mg": 7.2}},
            {"id": "RC-2322-3", "label": "wood fragment (Pinus), 266 cm", "depth_cm": 266, "cal": 1790, "d13c": -24.9,
             "registry": {"mass_mg": 22.0}},
            {"id": "RC-2322-4", "label": "terrestrial plant macrofossils, 301 cm", "depth_cm": 301, "cal": 2300, "d13c": -27.7,
             "registry": {"mass_mg": 6.4}},
            {"id": "RC-2322-5", "label": "terrestrial plant macrofossils, 338 cm", "depth_cm": 338, "cal": 2910, "d13c": -28.2,
             "registry": {"mass_mg": 6.9}},
        ],
    },
    {
        "task": "date submission RC-2330 (Kents Cavern, 3 bone samples)",
        "submission": "RC-2330",
        "submitter": "Torquay Museum, cave archive project",
        "samples": [
            {"id": "RC-2330-1", "label": "red deer antler tine, context 7", "depth_cm": 40, "cal": 3050, "d13c": -21.4,
             "registry": {"mass_mg": 700.0}},
            {"id": "RC-2330-2", "label": "human phalanx, context 9", "depth_cm": 65, "cal": 3420, "d13c": -20.6,
             "registry": {"mass_mg": 540.0}},
            {"id": "RC-2330-3", "label": "aurochs rib, context 12", "depth_cm": 95, "cal": 3980, "d13c": -21.9,
             "registry": {"mass": 0.81, "mass_unit": "g"}},
        ],
    },
]

CASES = [
    Case("rc1", 0, "registry-grams", "unit_error", ("registry_lookup", 3), ("ams_run", 3),
         "The registry lookup passed the sheep metatarsal's mass of 0.62 g through as 0.62 mg, so the carbon estimate "
         "was a thousandth of the real one and the AMS refused the graphite target."),
    Case("rc2", 1, "wheel-map", "off_by_one", ("assign_positions", 1), ("calibrate", 1),
         "The wheel map started the samples at position 1 instead of after both reserved positions, so the first peat "
         "sample was read from the process blank and its F14C of 0.0021 could not be calibrated."),
    Case("rc3", 2, "curve-cache", "stale_data", ("curve_fetch", 1), ("report_check", 1),
         "The curve fetch served the cached IntCal13 segment in place of IntCal20, so the terrestrial dates were "
         "calibrated on a superseded curve and the report check refused them."),
    Case("rc4", 3, "irms-timeout", "swallowed_error", ("irms_d13c", 1), ("order_check", 1),
         "The IRMS request for the top sample timed out and the step went on with a delta 13C of 0.0 per mil, so its "
         "date came out about 400 years too old and broke the core's stratigraphic order."),
    Case("rc5", 4, "report-range", "hallucinated_value", ("write_report", 1), ("report_check", 1),
         "The report model gave the human phalanx a calibrated range that no calibration produced, and the report "
         "check found it."),
]

# --------------------------------------------------------------------------------------------------
# The model's side.
# --------------------------------------------------------------------------------------------------

_MATERIAL_WORDS = [
    ("shell", "shell"), ("limpet", "shell"), ("charcoal", "charcoal"), ("charred", "charcoal"), ("wood", "wood"),
    ("peat", "peat"), ("bone", "bone"), ("metatarsal", "bone"), ("phalanx", "bone"), ("rib", "bone"),
    ("antler", "bone"), ("leaves", "plant macrofossil"), ("macrofossil", "plant macrofossil"),
]


def _material(label: str) -> str:
    low = label.lower()
    for word, material in _MATERIAL_WORDS:
        if word in low:
            return material
    return "charcoal"


def brain(request: Any) -> Any:
    messages = request.body["messages"]
    system = system_of(messages)
    data = first_json(last_user(messages))
    if system.startswith("You plan pretreatment"):
        plan = []
        for s in data["samples"]:
            material = _material(s["label"])
            proto = next(p["id"] for p in PROTOCOLS if p["material"] == material)
            plan.append({"id": s["id"], "material": material, "protocol": proto,
                         "curve": "Marine20" if material == "shell" else "IntCal20"})
        return "```json\n" + json.dumps({"submission": data["submission"], "samples": plan}, indent=1) + "\n```"
    if system.startswith("You write the date report"):
        lines = [f"Radiocarbon date report, submission {data['submission']}", ""]
        for c in data["calibrations"]:
            old, young = c["cal_bp_from"], c["cal_bp_to"]
            if _on("report-range") and c["sample"].endswith("-2"):
                old, young = old + 15, young + 5
            lines.append(f"{c['sample']}: {c['cra']} ± {c['cra_sigma']} BP, {old}–{young} cal BP (95.4 %, {c['curve']})")
        lines += ["", "All dates are in stratigraphic order within their uncertainties."]
        return "\n".join(lines)
    return "I can plan pretreatment or write date reports."


# --------------------------------------------------------------------------------------------------
# The agent.
# --------------------------------------------------------------------------------------------------

_client: OpenAI | None = None
_model = "fake-model"
_world: dict[str, Any] = {}


def setup(server: Any) -> None:
    global _client, _model
    _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _model = server.model


def teardown() -> None:
    global _client
    if _client is not None:
        _client.close()
    _client = None


def _chat(messages: list[dict[str, Any]]) -> dict[str, Any]:
    reply = _client.chat.completions.create(model=_model, messages=messages, temperature=0)
    trajdebug.current_step().usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens,
                                   completion_tokens=reply.usage.completion_tokens)
    return reply.choices[0].message.model_dump(exclude_none=True)


@trajdebug.step(kind="input")
def intake(submission: dict) -> dict:
    return submission


@trajdebug.step(kind="llm")
def plan_pretreatment(messages: list[dict]) -> dict:
    return _chat(messages)


@trajdebug.step(kind="parse")
def read_plan(answer: dict) -> list[dict]:
    text = answer["content"]
    m = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    body = json.loads(m.group(1) if m else text)
    return [dict(s) for s in body["samples"]]


@trajdebug.step(kind="state")
def assign_positions(sample_ids: list[str]) -> dict:
    """Rebuild the wheel map from the loading log: reserved targets first, then the samples in order."""
    first = len(WHEEL_RESERVED) - (1 if _on("wheel-map") else 0)
    wheel = {sid: first + i for i, sid in enumerate(sample_ids)}
    trajdebug.current_run().state["wheel"] = wheel
    return wheel


@trajdebug.step(kind="tool")
def registry_lookup(sample_id: str) -> dict:
    rec = _world["registry"][sample_id]
    if "mass_mg" in rec:
        mass_mg = rec["mass_mg"]
    else:
        factor = {"g": 1000.0, "mg": 1.0}[rec["mass_unit"]]
        mass_mg = rec["mass"] * (1.0 if _on("registry-grams") else factor)
    return {"sample": sample_id, "mass_mg": round(mass_mg, 4), "received": "2024-11-04", "storage": "desiccator D2"}


@trajdebug.step(kind="retrieval")
def protocol_search(material: str, k: int = 2) -> list[dict]:
    scored = []
    for p in PROTOCOLS:
        score = 0.92 if p["material"] == material else (0.41 if p["material"].split()[0] in material else 0.18)
        scored.append({**p, "score": score})
    scored.sort(key=lambda p: -p["score"])
    return scored[:k]


@trajdebug.step(kind="other")
def carbon_estimate(record: dict, protocols: list[dict]) -> dict:
    best = protocols[0]
    carbon = record["mass_mg"] * best["yield"] * best["carbon_fraction"]
    return {"sample": record["sample"], "protocol": best["id"], "carbon_mg": round(carbon, 4)}


class IrmsQueueTimeout(TimeoutError):
    pass


def _irms_service(sample_id: str) -> float:
    if _on("irms-timeout") and sample_id == _world["first_sample"]:
        raise IrmsQueueTimeout(f"IRMS queue did not answer for {sample_id} within 20 s")
    return _world["d13c"][sample_id]


@trajdebug.step(kind="tool")
def irms_d13c(sample_id: str) -> dict:
    try:
        d13c = _irms_service(sample_id)
    except TimeoutError:
        d13c = 0.0
    return {"sample": sample_id, "d13c_permil": d13c, "instrument": "IRMS Delta V"}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def ams_run(sample_id: str, carbon: dict) -> dict:
    position = trajdebug.current_run().state["wheel"][sample_id]
    if carbon["carbon_mg"] < 0.3:
        raise ValueError(f"graphite target for {sample_id} holds {carbon['carbon_mg']} mg C; the AMS needs at least 0.3 mg")
    flaky = _world.get("flaky")
    if flaky == sample_id:
        _world["flaky"] = None
        raise ConnectionError("AMS ion source control did not answer (timeout 30 s)")
    f14c = _world["wheel"][position]
    return {"sample": sample_id, "position": position, "f14c": round(f14c, 5), "sigma": round(0.0022 * f14c + 0.0004, 5)}


@trajdebug.step(kind="state")
def record_result(sample_id: str, measurement: dict, isotope: dict) -> dict:
    d = isotope["d13c_permil"]
    f_norm = measurement["f14c"] * ((1 - 25 / 1000) / (1 + d / 1000)) ** 2
    row = {"sample": sample_id, "f14c": round(f_norm, 5), "sigma": measurement["sigma"], "d13c": d}
    trajdebug.current_run().state[f"result:{sample_id}"] = row
    return row


@trajdebug.step(kind="retrieval")
def curve_fetch(curve: str, cra_from: int, cra_to: int) -> dict:
    meta = CACHED_CURVES[curve] if (_on("curve-cache") and curve in CACHED_CURVES) else CURVES[curve]
    rows = []
    for cal in range(0, 15000, 20):
        age = _curve_age(cal) + meta["offset"]
        if cra_from - 600 <= age <= cra_to + 600:
            rows.append([cal, round(age, 1), meta["sigma"]])
    return {"curve": meta["version"], "published": meta["published"], "rows": rows}


@trajdebug.step(kind="tool")
def calibrate(sample_id: str, curve: dict) -> dict:
    res = trajdebug.current_run().state[f"result:{sample_id}"]
    f = res["f14c"]
    if f > 1.0:
        raise ValueError(f"{sample_id}: F14C {f} is post-bomb; {curve['curve']} does not calibrate modern carbon")
    cra = -8033 * math.log(f)
    cra_sigma = 8033 * res["sigma"] / f
    hits = [row[0] for row in curve["rows"] if abs(row[1] - cra) <= 2 * math.hypot(cra_sigma, row[2])]
    if not hits:
        raise ValueError(f"{sample_id}: CRA {round(cra)} ± {round(cra_sigma)} BP (F14C {f}) lies outside the "
                         f"{curve['curve']} segment fetched")
    return {"sample": sample_id, "cra": int(round(cra, -1)), "cra_sigma": max(15, int(round(cra_sigma, -1))),
            "cal_bp_from": max(hits), "cal_bp_to": min(hits), "curve": curve["curve"]}


@trajdebug.step(kind="condition")
def order_check(calibrations: list[dict], samples: list[dict]) -> str:
    depth = {s["id"]: s["depth_cm"] for s in samples}
    ordered = sorted(calibrations, key=lambda c: depth[c["sample"]])
    for upper, lower in zip(ordered, ordered[1:]):
        mid_u = (upper["cal_bp_from"] + upper["cal_bp_to"]) / 2
        mid_l = (lower["cal_bp_from"] + lower["cal_bp_to"]) / 2
        if mid_l < mid_u - 100:
            raise ValueError(f"stratigraphic reversal: {lower['sample']} ({depth[lower['sample']]} cm, median "
                             f"{mid_l:.0f} cal BP) is younger than {upper['sample']} ({depth[upper['sample']]} cm, "
                             f"median {mid_u:.0f} cal BP)")
    return "in order"


@trajdebug.step(kind="llm")
def write_report(messages: list[dict]) -> dict:
    return _chat(messages)


CURRENT_CURVES = ("IntCal20", "Marine20", "SHCal20")


@trajdebug.step(kind="condition", attributes={"final": True})
def report_check(report: dict, calibrations: list[dict]) -> str:
    text = report["content"]
    for c in calibrations:
        if c["curve"] not in CURRENT_CURVES:
            raise ValueError(f"{c['sample']} was calibrated on {c['curve']}; reports use {', '.join(CURRENT_CURVES)} (SOP C-7)")
        m = re.search(re.escape(c["sample"]) + r": .*?(\d+)–(\d+) cal BP", text)
        if not m:
            raise ValueError(f"report does not give a calibrated range for {c['sample']}")
        given = (int(m.group(1)), int(m.group(2)))
        if given != (c["cal_bp_from"], c["cal_bp_to"]):
            raise ValueError(f"report gives {given[0]}–{given[1]} cal BP for {c['sample']}; calibration gave "
                             f"{c['cal_bp_from']}–{c['cal_bp_to']} cal BP")
    return "report matches the calibrations"


def _load_world(inp: dict) -> None:
    """The lab as it is for this submission: registry records, IRMS values, the loaded wheel."""
    samples = inp["samples"]
    _world.clear()
    _world["registry"] = {s["id"]: s["registry"] for s in samples}
    _world["d13c"] = {s["id"]: s["d13c"] for s in samples}
    _world["first_sample"] = samples[0]["id"]
    wheel = {r["position"]: r["f14c"] for r in WHEEL_RESERVED}
    for i, s in enumerate(samples):
        material = _material(s["label"])
        cra = _curve_age(s["cal"]) + (CURVES["Marine20"]["offset"] if material == "shell" else 0.0)
        f_norm = math.exp(-cra / 8033)
        wheel[len(WHEEL_RESERVED) + i] = f_norm / ((1 - 25 / 1000) / (1 + s["d13c"] / 1000)) ** 2
    _world["wheel"] = wheel
    _world["flaky"] = samples[1]["id"] if inp["submission"] in ("RC-2304", "RC-2330") else None


def run_once(inp: dict, path: Path) -> None:
    _load_world(inp)
    submission = {k: inp[k] for k in ("submission", "submitter")}
    submission["samples"] = [{k: s[k] for k in ("id", "label", "depth_cm")} for s in inp["samples"]]
    try:
        with trajdebug.run(RUN_NAME, path=str(path), task=inp["task"]):
            sub = intake(submission)
            answer = plan_pretreatment([
                {"role": "system", "content": "You plan pretreatment for a radiocarbon laboratory. For each sample give "
                                              "its material, the protocol id and the calibration curve, as JSON."},
                {"role": "user", "content": "Submission:\n" + json.dumps(sub)},
            ])
            plan = read_plan(answer)
            assign_positions([p["id"] for p in plan])
            for p in plan:
                record = registry_lookup(p["id"])
                protocols = protocol_search(p["material"])
                carbon = carbon_estimate(record, protocols)
                isotope = irms_d13c(p["id"])
                measurement = ams_run(p["id"], carbon)
                record_result(p["id"], measurement, isotope)
            results = {p["id"]: trajdebug.current_run().state[f"result:{p['id']}"] for p in plan}
            curves: dict[str, dict] = {}
            for name in sorted({p["curve"] for p in plan}, key=lambda c: c != "IntCal20"):
                ages = [-8033 * math.log(max(results[p["id"]]["f14c"], 1e-6)) for p in plan if p["curve"] == name]
                curves[name] = curve_fetch(name, int(min(ages)), int(max(ages)))
            calibrations = [calibrate(p["id"], curves[p["curve"]]) for p in plan]
            order_check(calibrations, sub["samples"])
            report = write_report([
                {"role": "system", "content": "You write the date report of a radiocarbon laboratory: one line per sample "
                                              "with the conventional age and the 95.4 % calibrated range."},
                {"role": "user", "content": "Calibrations:\n" + json.dumps({"submission": sub["submission"],
                                                                           "calibrations": calibrations})},
            ])
            report_check(report, calibrations)
    except Exception:  # noqa: BLE001 - the run records it; the generator checks the outcome
        pass
