"""Curtain-wall submittal reviewer: a facade contractor's product data checked against the spec (trajdebug's own recorder).

The reviewer plans which checks each product needs, retrieves the spec section, splits the package into
products, has the model extract each product's properties, then runs a tool loop per product (the model
asks for the zone's design wind pressure, the thermal limits and the test report, in parallel) and
gives a verdict.  The review is summarised and stamped, countersigned by the engineer of record's
service, and issued to document control as a transmittal.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import trajdebug
from openai import OpenAI

from suite_agents._common import dumps, last_user, system_of


NAME = "cw-submittal-review"
ROUTE = "sdk"
DOMAIN = "curtain-wall shop submittal review for a general contractor"
SHAPE = "model plan -> spec retrieval -> split package -> per product: model extraction, parse, model tool loop with parallel calls (one tool wraps an engineering API with a retry), verdict parse -> summary -> stamp -> EOR countersign -> transmittal"

SWITCH: str | None = None


def switched(name: str) -> bool:
    """Whether the case ``name`` is on (the only place SWITCH is read)."""
    return SWITCH == name


SPEC_BOOK = {
    "08 44 13": {"title": "Glazed aluminium curtain walls, unitized", "requirements": {
        "frame_u_max": 1.60, "igu_u_max": 1.10, "shgc_max": 0.30, "water_min_pa": 600, "spandrel_u_max": 0.45}},
    "08 41 13": {"title": "Aluminium-framed entrances and storefronts", "requirements": {
        "frame_u_max": 2.60, "igu_u_max": 1.40, "shgc_max": 0.40, "water_min_pa": 450, "spandrel_u_max": 0.70}},
    "08 42 29": {"title": "Automatic entrances", "requirements": {
        "frame_u_max": 3.00, "igu_u_max": 1.60, "shgc_max": 0.45, "water_min_pa": 300, "spandrel_u_max": 0.80}},
}
EOR_ZONES = {"Z4-typical": 1.60, "Z5-corner": 2.60, "Z3-podium": 1.20}
THERMAL = {"unitized frame": "frame_u_max", "vision IGU": "igu_u_max", "spandrel panel": "spandrel_u_max",
           "operable vent": "frame_u_max"}
_api_timeouts = {"left": 0}
_pressure_cache: dict[str, float] = {}

INPUTS = [
    {
        "key": "harbour-e", "task": "review submittal 08 44 13-004, Harbour Tower east elevation",
        "submittal": "08 44 13-004", "section": "08 44 13", "title": "Unitized curtain wall and aluminium-framed entrances, east lobby",
        "zone": "Z4-typical", "api_timeouts": 0,
        "package": (
            "[CW-1] Unitized frame UF-150. Design wind pressure +/-2.00 kPa. Frame U-value 1.45 W/m2K. Water penetration tested to 720 Pa.\n"
            "[VG-1] Vision IGU 6/16/6 low-e argon. Centre-of-glass U-value 1.02 W/m2K. SHGC 0.27.\n"
            "[SP-1] Insulated spandrel panel SP-90. Design wind pressure +/-2.20 kPa. U-value 0.38 W/m2K."
        ),
    },
    {
        "key": "harbour-n", "task": "review submittal 08 44 13-005, Harbour Tower north corner",
        "submittal": "08 44 13-005", "section": "08 44 13", "title": "Aluminium-framed unitized curtain wall, north corner",
        "zone": "Z5-corner", "api_timeouts": 0,
        "package": (
            "[CW-2] Unitized frame UF-180 corner mullion. Design wind pressure ±2.90 kPa. Frame U-value 1.52 W/m2K. Water penetration tested to 750 Pa.\n"
            "[VG-2] Vision IGU 8/16/8 low-e argon. Centre-of-glass U-value 1.05 W/m2K. SHGC 0.28.\n"
            "[SP-2] Insulated spandrel panel SP-120. Design wind pressure ±3.10 kPa. U-value 0.34 W/m2K."
        ),
    },
    {
        "key": "quay-w", "task": "review submittal 08 44 13-011, Quayside Offices west corner",
        "submittal": "08 44 13-011", "section": "08 44 13", "title": "Aluminium-framed unitized curtain wall, west corner",
        "zone": "Z5-corner", "api_timeouts": 1,
        "package": (
            "[CW-7] Unitized frame UF-150 corner. Design wind pressure +/-2.40 kPa. Frame U-value 1.50 W/m2K. Water penetration tested to 700 Pa.\n"
            "[VG-7] Vision IGU 6/16/6 low-e argon. Centre-of-glass U-value 1.04 W/m2K. SHGC 0.29.\n"
            "[SP-7] Insulated spandrel panel SP-120. Design wind pressure +/-2.80 kPa. U-value 0.36 W/m2K."
        ),
    },
    {
        "key": "quay-s", "task": "review submittal 08 44 13-012, Quayside Offices south podium",
        "submittal": "08 44 13-012", "section": "08 44 13", "title": "Aluminium-framed unitized curtain wall, south podium",
        "zone": "Z3-podium", "api_timeouts": 0,
        "package": (
            "[CW-8] Unitized frame UF-120. Design wind pressure +/-1.50 kPa. Frame U-value 1.58 W/m2K. Water penetration tested to 650 Pa.\n"
            "[OV-8] Operable vent OV-60 top hung. Design wind pressure +/-1.40 kPa. Frame U-value 1.55 W/m2K. Water penetration tested to 600 Pa.\n"
            "[SP-8] Insulated spandrel panel SP-90. Design wind pressure +/-1.80 kPa. U-value 0.41 W/m2K."
        ),
    },
    {
        "key": "mill-e", "task": "review submittal 08 44 13-002, Mill Lane residential east",
        "submittal": "08 44 13-002", "section": "08 44 13", "title": "Aluminium-framed unitized curtain wall, east stack",
        "zone": "Z4-typical", "api_timeouts": 0,
        "package": (
            "[CW-3] Unitized frame UF-120. Design wind pressure +/-1.90 kPa. Frame U-value 1.56 W/m2K. Water penetration tested to 680 Pa.\n"
            "[VG-3] Vision IGU 6/14/6 low-e argon. Centre-of-glass U-value 1.08 W/m2K. SHGC 0.30.\n"
            "[SP-3] Insulated spandrel panel SP-90. Design wind pressure +/-2.10 kPa. U-value 0.40 W/m2K."
        ),
    },
]

CASES = [
    {
        "case": "zzzzm_facade_storefront_spec", "input": "harbour-e", "switch": "title_search", "fault_kind": "wrong_retrieval",
        "root": {"name": "retrieve_spec", "occurrence": 1, "kind": "retrieval"},
        "failure": {"name": "issue_transmittal", "occurrence": 1},
        "description": "The spec lookup searches by the package title and returns section 08 41 13 (storefronts) instead of 08 44 13, so the review is made against storefront limits and document control rejects the transmittal's section reference.",
    },
    {
        "case": "zzzzm_facade_plusminus", "input": "harbour-n", "switch": "ascii_sign", "fault_kind": "lossy_parsing",
        "root": {"name": "read_properties", "occurrence": 1, "kind": "parse"},
        "failure": {"name": "issue_transmittal", "occurrence": 1},
        "description": "The property parser only reads pressures written '+/-' and drops CW-2's '±2.90 kPa' to null, which the review passes over and document control rejects as a missing design pressure.",
    },
    {
        "case": "zzzzm_facade_default_pressure", "input": "quay-w", "switch": "swallow_timeout", "fault_kind": "swallowed_error",
        "root": {"name": "wind_zone_pressure", "occurrence": 1, "kind": "tool"},
        "failure": {"name": "eor_countersign", "occurrence": 1},
        "description": "When the engineer's zone table times out, the pressure tool returns the typical-zone 1.60 kPa instead of retrying, so CW-7 rated 2.40 kPa is approved for the 2.60 kPa corner zone and the engineer of record refuses to countersign.",
    },
    {
        "case": "zzzzm_facade_carried_thread", "input": "quay-s", "switch": "keep_thread", "fault_kind": "context_pollution",
        "root": {"name": "extract_properties", "occurrence": 2, "kind": "llm"},
        "failure": {"name": "issue_transmittal", "occurrence": 1},
        "description": "The extraction thread is not reset between products, and with CW-8's data sheet still in the conversation the model labels the operable vent (and then the spandrel) as CW-8, so document control finds CW-8 listed more than once and OV-8 and SP-8 missing.",
    },
    {
        "case": "zzzzm_facade_no_structural", "input": "mill-e", "switch": "plan_thermal_only", "fault_kind": "plan_error",
        "root": {"name": "plan_review", "occurrence": 1, "kind": "llm"},
        "failure": {"name": "issue_transmittal", "occurrence": 1},
        "description": "The model's review plan lists only thermal and water checks for the unitized frame, so CW-3 is never checked for wind pressure and document control rejects a delegated-design frame without a structural review.",
    },
]


class TransmittalRejected(Exception):
    pass


class CountersignRefused(Exception):
    pass


_client: OpenAI | None = None
_model = "fake-model"


def setup(env: dict) -> None:
    global _client, _model
    _client = OpenAI(base_url=env["server"].base_url, api_key="not-needed", max_retries=0)
    _model = env["server"].model


def _chat(messages: list[dict], tools: list[dict] | None = None) -> dict:
    kwargs = {"tools": tools} if tools else {}
    reply = _client.chat.completions.create(model=_model, messages=messages, **kwargs)
    return reply.choices[0].message.model_dump(exclude_none=True)


# -- steps ----------------------------------------------------------------------------------------

@trajdebug.step(kind="input")
def submittal_in(package: dict) -> dict:
    return package


@trajdebug.step(kind="llm")
def plan_review(messages: list[dict]) -> dict:
    return _chat(messages)


@trajdebug.step(kind="parse")
def read_review_plan(message: dict) -> dict:
    return json.loads(message["content"])["checks"]


@trajdebug.step(kind="retrieval")
def retrieve_spec(section: str, title: str) -> dict:
    if switched("title_search"):
        words = set(re.findall(r"[a-z]+", title.lower()))
        best = max(SPEC_BOOK, key=lambda s: len(words & set(re.findall(r"[a-z]+", SPEC_BOOK[s]["title"].lower()))))
    else:
        best = section
    return {"section": best, **SPEC_BOOK[best]}


@trajdebug.step(kind="parse")
def split_product_data(text: str) -> list[dict]:
    return [{"tag": m.group(1), "text": m.group(2).strip()} for m in re.finditer(r"^\[([A-Z]{2}-\d+)\]\s*(.+)$", text, re.M)]


@trajdebug.step(kind="llm")
def extract_properties(messages: list[dict]) -> dict:
    return _chat(messages)


_NUM = r"(\d+(?:\.\d+)?)"


@trajdebug.step(kind="parse")
def read_properties(message: dict) -> dict:
    raw = json.loads(message["content"])
    out = {"model": raw["model"], "type": raw["type"]}
    dp = raw.get("design_pressure")
    if dp is None:
        out["design_pressure_kpa"] = None
    else:
        sign = r"\+/-" if switched("ascii_sign") else r"(?:\+/-|±)"
        m = re.match(sign + r"\s*" + _NUM + r"\s*kPa", dp)
        out["design_pressure_kpa"] = float(m.group(1)) if m else None
    for key, field in (("u_value", "u_value"), ("shgc", "shgc"), ("water_test", "water_pa")):
        v = raw.get(key)
        out[field] = None if v is None else float(re.search(_NUM, v).group(1))
    return out


@trajdebug.step(kind="tool")
def engineer_table_api(zone: str) -> dict:
    if _api_timeouts["left"] > 0:
        _api_timeouts["left"] -= 1
        raise TimeoutError(f"EOR zone table did not answer for {zone} within 4 s")
    return {"zone": zone, "design_pressure_kpa": EOR_ZONES[zone], "table": "EOR wind zones rev 3"}


def wind_zone_pressure(zone: str) -> dict:
    if zone in _pressure_cache:
        return {"zone": zone, "design_pressure_kpa": _pressure_cache[zone], "source": "cache"}
    try:
        table = engineer_table_api(zone)
    except TimeoutError:
        if switched("swallow_timeout"):
            _pressure_cache[zone] = EOR_ZONES["Z4-typical"]
            return {"zone": zone, "design_pressure_kpa": EOR_ZONES["Z4-typical"], "source": "EOR wind zones rev 3"}
        table = engineer_table_api(zone)
    _pressure_cache[zone] = table["design_pressure_kpa"]
    return {"zone": zone, "design_pressure_kpa": table["design_pressure_kpa"], "source": table["table"]}


def thermal_limits(product_type: str, spec: dict) -> dict:
    key = THERMAL[product_type]
    req = spec["requirements"]
    out = {"product_type": product_type, "u_max": req[key], "section": spec["section"]}
    if product_type == "vision IGU":
        out["shgc_max"] = req["shgc_max"]
    return out


def test_report(model: str, spec: dict) -> dict:
    return {"model": model, "water_min_pa": spec["requirements"]["water_min_pa"], "lab": "Facade Test Centre",
            "report": f"FTC-{model}-2025"}


@trajdebug.step(kind="llm")
def review_product(messages: list[dict], tools: list[dict]) -> dict:
    return _chat(messages, tools)


@trajdebug.step(kind="parse")
def read_verdict(message: dict) -> dict:
    return json.loads(message["content"])


@trajdebug.step(kind="llm")
def summarise_review(messages: list[dict]) -> str:
    return _chat(messages)["content"]


@trajdebug.step(kind="condition")
def stamp_decision(verdicts: list[dict]) -> str:
    open_items = sum(len(v["comments"]) for v in verdicts if v["status"] == "nonconforming")
    notes = sum(len(v["comments"]) for v in verdicts if v["status"] == "conforms")
    if open_items:
        return "C - revise and resubmit"
    return "B - approved as noted" if notes else "A - approved"


@trajdebug.step(kind="tool")
def eor_countersign(submittal: str, zone: str, products: list[dict], verdicts: list[dict]) -> dict:
    required = EOR_ZONES[zone]
    status = {v["model"]: v["status"] for v in verdicts}
    for p in products:
        if p["design_pressure_kpa"] is not None and status.get(p["model"]) == "conforms" and p["design_pressure_kpa"] < required:
            raise CountersignRefused(
                f"EOR countersign refused for {submittal}: {zone} requires {required:.2f} kPa, {p['model']} rated {p['design_pressure_kpa']:.2f} kPa was approved")
    return {"submittal": submittal, "countersigned": True, "zone": zone}


STRUCTURAL_TYPES = ("unitized frame", "spandrel panel", "operable vent")


@trajdebug.step(kind="tool")
def issue_transmittal(submittal: str, section: str, package_tags: list[str], products: list[dict],
                      verdicts: list[dict], stamp: str, summary: str) -> dict:
    cited = {v["section"] for v in verdicts}
    if cited != {section}:
        raise TransmittalRejected(
            f"document control: review of {submittal} cites spec section {', '.join(sorted(cited))}; the submittal is section {section}")
    models = [p["model"] for p in products]
    if sorted(models) != sorted(package_tags):
        dup = sorted({m for m in models if models.count(m) > 1})
        gone = sorted(set(package_tags) - set(models))
        raise TransmittalRejected(f"document control: products {', '.join(dup)} listed more than once, {', '.join(gone)} missing from the review of {submittal}")
    for i, p in enumerate(products):
        if p["type"] in STRUCTURAL_TYPES and p["design_pressure_kpa"] is None:
            raise TransmittalRejected(f"document control: products[{i}].design_pressure_kpa is null for {p['model']}; a number is required")
        v = next(v for v in verdicts if v["model"] == p["model"])
        if p["type"] == "unitized frame" and "structural" not in v["checked"]:
            raise TransmittalRejected(f"document control: {p['model']} is delegated design and has no structural review")
    return {"transmittal": f"TR-{submittal}", "stamp": stamp, "products": len(products)}


# -- the agent ------------------------------------------------------------------------------------

PLAN_SYSTEM = ("You plan a curtain-wall submittal review. For each product tag in the package, list the checks it "
               "needs from: structural, thermal, solar, water. Answer JSON {\"checks\": {tag: [checks]}}.")
EXTRACT_SYSTEM = ("Extract the product's properties from its data sheet as JSON with keys model, type (unitized frame, "
                  "vision IGU, spandrel panel, operable vent), design_pressure, u_value, shgc, water_test: the values as "
                  "written with their units, null when the sheet does not state one.")
REVIEW_SYSTEM = ("You review one curtain-wall product against the project's requirements. First call the tools the "
                 "planned checks need (structural: wind_zone_pressure; thermal or solar: thermal_limits; water: "
                 "test_report), all at once. Then answer JSON {\"model\", \"status\": conforms|nonconforming, "
                 "\"checked\": [checks], \"comments\": [str], \"section\": spec section}.")
SUMMARY_SYSTEM = "Summarise the submittal review for the transmittal cover sheet in three sentences."

TOOLS = [
    {"type": "function", "function": {"name": "wind_zone_pressure", "description": "Design wind pressure of a facade zone (EOR table).",
                                      "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}},
    {"type": "function", "function": {"name": "thermal_limits", "description": "U-value (and SHGC) limits for a product type in the spec.",
                                      "parameters": {"type": "object", "properties": {"product_type": {"type": "string"}}, "required": ["product_type"]}}},
    {"type": "function", "function": {"name": "test_report", "description": "The water penetration test requirement and report for a product.",
                                      "parameters": {"type": "object", "properties": {"model": {"type": "string"}}, "required": ["model"]}}},
]


def _run_tool(call: dict, spec: dict) -> dict:
    fn = call["function"]
    args = json.loads(fn["arguments"])
    with trajdebug.step(fn["name"], kind="tool", input=call) as s:
        if fn["name"] == "wind_zone_pressure":
            s.output = wind_zone_pressure(args["zone"])
        elif fn["name"] == "thermal_limits":
            s.output = thermal_limits(args["product_type"], spec)
        else:
            s.output = test_report(args["model"], spec)
    return s.output


def record(inp: dict, dest: Path, env: dict) -> None:
    _api_timeouts["left"] = inp["api_timeouts"]
    _pressure_cache.clear()
    try:
        with trajdebug.run(NAME, task=inp["task"], path=str(dest), metadata={"submittal": inp["submittal"]}):
            pkg = submittal_in({k: inp[k] for k in ("submittal", "section", "title", "zone", "package")})
            tags = re.findall(r"^\[([A-Z]{2}-\d+)\]", pkg["package"], re.M)
            plan = read_review_plan(plan_review([
                {"role": "system", "content": PLAN_SYSTEM},
                {"role": "user", "content": dumps({"submittal": pkg["submittal"], "package": pkg["package"]})},
            ]))
            spec = retrieve_spec(pkg["section"], pkg["title"])
            entries = split_product_data(pkg["package"])
            products, verdicts = [], []
            thread = [{"role": "system", "content": EXTRACT_SYSTEM}]
            for entry in entries:
                if not switched("keep_thread"):
                    thread = [{"role": "system", "content": EXTRACT_SYSTEM}]  # each data sheet read on its own
                thread.append({"role": "user", "content": f"[{entry['tag']}] {entry['text']}"})
                extracted = extract_properties(list(thread))
                thread.append({"role": "assistant", "content": extracted["content"]})
                props = read_properties(extracted)
                products.append(props)
                messages = [
                    {"role": "system", "content": REVIEW_SYSTEM},
                    {"role": "user", "content": dumps({"product": props, "checks": plan.get(entry["tag"], []),
                                                       "zone": pkg["zone"], "section": spec["section"]})},
                ]
                answer = review_product(messages, TOOLS)
                messages.append(answer)
                for call in answer.get("tool_calls", []):
                    result = _run_tool(call, spec)
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": dumps(result)})
                verdicts.append(read_verdict(review_product(messages, TOOLS)))
            summary = summarise_review([
                {"role": "system", "content": SUMMARY_SYSTEM},
                {"role": "user", "content": dumps({"submittal": pkg["submittal"], "verdicts": verdicts})},
            ])
            stamp = stamp_decision(verdicts)
            eor_countersign(pkg["submittal"], pkg["zone"], products, verdicts)
            issue_transmittal(pkg["submittal"], pkg["section"], tags, products, verdicts, stamp, summary)
    except (TransmittalRejected, CountersignRefused):
        pass


# -- the model ------------------------------------------------------------------------------------

_TYPES = (("Unitized frame", "unitized frame"), ("Vision IGU", "vision IGU"), ("spandrel panel", "spandrel panel"),
          ("Operable vent", "operable vent"))


def _extract(sheets: list[str]) -> dict:
    """What the model reads off the data sheet it was asked about (the last one in the thread)."""
    text = sheets[-1]
    kind = next(t for key, t in _TYPES if key.lower() in text.lower())

    def grab(pattern):
        m = re.search(pattern, text)
        return m.group(1) if m else None

    # the sheet's tag: with several sheets in one thread the model takes the one the thread opened with
    tag = re.match(r"\[([A-Z]{2}-\d+)\]", sheets[0]).group(1)
    return {
        "model": tag,
        "type": kind,
        "design_pressure": grab(r"[Dd]esign wind pressure ((?:\+/-|±)\d+(?:\.\d+)? kPa)"),
        "u_value": grab(r"U-value (\d+(?:\.\d+)? W/m2K)"),
        "shgc": grab(r"SHGC (\d+(?:\.\d+)?)"),
        "water_test": grab(r"tested to (\d+ Pa)"),
    }


def brain(request) -> str | object:
    from trajdebug.testing import Reply, tool_call

    messages = request.body["messages"]
    system = system_of(messages)
    if system == PLAN_SYSTEM:
        pkg = json.loads(last_user(messages))["package"]
        checks = {}
        for tag, text in re.findall(r"^\[([A-Z]{2}-\d+)\]\s*(.+)$", pkg, re.M):
            if "Unitized frame" in text:
                checks[tag] = ["thermal", "water"] if switched("plan_thermal_only") else ["structural", "thermal", "water"]
            elif "Operable vent" in text:
                checks[tag] = ["structural", "thermal", "water"]
            elif "IGU" in text:
                checks[tag] = ["thermal", "solar"]
            else:
                checks[tag] = ["structural", "thermal"]
        return json.dumps({"checks": checks})
    if system == EXTRACT_SYSTEM:
        return json.dumps(_extract([m["content"] for m in messages if m["role"] == "user"]))
    if system == REVIEW_SYSTEM:
        data = json.loads(messages[1]["content"])
        p, checks = data["product"], data["checks"]
        results = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
        if not results:
            calls = []
            if "structural" in checks:
                calls.append(tool_call("wind_zone_pressure", {"zone": data["zone"]}))
            if "thermal" in checks or "solar" in checks:
                calls.append(tool_call("thermal_limits", {"product_type": p["type"]}))
            if "water" in checks:
                calls.append(tool_call("test_report", {"model": p["model"]}))
            return Reply(tool_calls=tuple(calls))
        comments, bad = [], False
        for r in results:
            if "design_pressure_kpa" in r and p["design_pressure_kpa"] is not None:
                if p["design_pressure_kpa"] < r["design_pressure_kpa"]:
                    bad = True
                    comments.append(f"Rated {p['design_pressure_kpa']:.2f} kPa is below the {r['zone']} design pressure {r['design_pressure_kpa']:.2f} kPa.")
            if "u_max" in r and p["u_value"] is not None and p["u_value"] > r["u_max"]:
                bad = True
                comments.append(f"U-value {p['u_value']} exceeds {r['u_max']}.")
            if "shgc_max" in r and p["shgc"] is not None and p["shgc"] > r["shgc_max"]:
                bad = True
                comments.append(f"SHGC {p['shgc']} exceeds {r['shgc_max']}.")
            if "water_min_pa" in r and p["water_pa"] is not None and p["water_pa"] < r["water_min_pa"]:
                bad = True
                comments.append(f"Water test {p['water_pa']:.0f} Pa below {r['water_min_pa']} Pa.")
        if p["type"] == "vision IGU" and p["shgc"] is not None and p["shgc"] >= 0.30 and not bad:
            comments.append("SHGC at the limit: confirm coating on the glass order.")
        return json.dumps({"model": p["model"], "status": "nonconforming" if bad else "conforms", "checked": checks,
                           "comments": comments, "section": data["section"]})
    if system == SUMMARY_SYSTEM:
        data = json.loads(last_user(messages))
        bad = [v["model"] for v in data["verdicts"] if v["status"] == "nonconforming"]
        return (f"Submittal {data['submittal']} was reviewed product by product against the project specification. "
                + (f"{', '.join(bad)} do not conform and must be resubmitted. " if bad else "All products conform. ")
                + "Comments are listed per product.")
    return "I can only help with curtain-wall submittals."
