"""Museum registrar: prepare an outgoing loan of artworks to a borrowing venue (OpenTelemetry/OpenInference route)."""

from __future__ import annotations

import json

import common
from common import span

RUN_NAME = "museum-loan-registrar"
ROUTE = "otlp"
DOMAIN = "museum registrar: outgoing artwork loans (object records, condition, crates, display class, courier, freight, agreement)"
SHAPE = "OTel spans: request chain, per-object retriever + condition tool + crate weighing + display-class guardrail + terms memory, crate-plan LLM (instrumented OpenAI client), courier and freight tools, agreement tool"
SWITCH = None

OBJECTS = {
    "1987.112": {"title": "Harbour at Dusk", "medium": "oil on canvas", "h_cm": 92, "w_cm": 120, "value_eur": 850000},
    "1987.121": {"title": "Study of Nets", "medium": "graphite on paper", "h_cm": 31, "w_cm": 44, "value_eur": 42000},
    "1962.40": {"title": "The Weavers", "medium": "tempera on panel", "h_cm": 70, "w_cm": 54, "value_eur": 1200000},
    "2003.7": {"title": "Blue Ledger", "medium": "watercolour on paper", "h_cm": 48, "w_cm": 63, "value_eur": 96000},
    "1971.88": {"title": "Quarry Light", "medium": "oil on canvas", "h_cm": 150, "w_cm": 200, "value_eur": 2300000},
    "2011.3": {"title": "Tideline Prints", "medium": "etching on paper", "h_cm": 40, "w_cm": 50, "value_eur": 18000},
}
COURIERS = ["A. Lindqvist", "M. Haddad", "S. Okafor"]
INPUTS = [
    {"loan": "LN-2026-014", "borrower": "Kunsthal Aalborg", "objects": ["1987.112", "2003.7"], "lift_kg": 1000},
    {"loan": "LN-2026-015", "borrower": "Galway Arts Centre", "objects": ["1962.40", "2011.3"], "lift_kg": 800},
    {"loan": "LN-2026-016", "borrower": "Museo Ría", "objects": ["1971.88"], "lift_kg": 3000},
    {"loan": "LN-2026-017", "borrower": "Bergen Kunsthall", "objects": ["2003.7", "2011.3", "1987.112"], "lift_kg": 1000},
    {"loan": "LN-2026-018", "borrower": "Tate St Ives", "objects": ["1987.121", "1962.40"], "lift_kg": 600},
]
FACILITIES = {b["borrower"]: {"rh_pct": 50, "temp_c": 20, "paper_lux": 50, "gallery_lux": 150} for b in INPUTS}


def brain(request):
    user = common.last_user(request)
    ask = json.loads(user)
    if "crates" in common.system_of(request):
        crates = []
        for o in ask["objects"]:
            crates.append({"object": o["accession"], "inner_cm": [o["h_cm"] + 12, o["w_cm"] + 12, 30],
                           "travel_frame": o["medium"].endswith("paper")})
        courier = ask["couriers"][len(ask["objects"]) % len(ask["couriers"])]
        if SWITCH == "zk-loan-4":
            courier = "J. Petrov"
        return json.dumps({"crates": crates, "courier": courier, "route": "road, climate-controlled"})
    return "ok"


def _object(acc: str) -> dict:
    with span("lookup_object", "RETRIEVER", {"accession": acc}) as s:
        key = acc
        if SWITCH == "zk-loan-2" and acc == "1987.112":
            key = "1987.121"
        s["out"] = [{"id": key, "accession": key, **OBJECTS[key]}]
    return s["out"][0]


def _weigh(obj: dict) -> dict:
    with span("weigh_crate", "TOOL", {"accession": obj["accession"]}) as s:
        kg = round(40 + obj["h_cm"] * obj["w_cm"] / 12, 1)
        if SWITCH == "zk-loan-1":
            kg = round(kg * 2.20462, 1)
        s["out"] = {"accession": obj["accession"], "crate_kg": kg}
    return s["out"]


def _display_class(obj: dict) -> dict:
    with span("display_class", "GUARDRAIL", {"accession": obj["accession"], "medium": obj["medium"]}) as s:
        cls = "works on paper" if obj["medium"].endswith("paper") else "paintings"
        if SWITCH == "zk-loan-3" and obj["medium"].startswith("watercolour"):
            cls = "paintings"
        s["out"] = {"accession": obj["accession"], "class": cls, "max_lux": 50 if cls == "works on paper" else 150}
    return s["out"]


def _remember(obj: dict, previous: str | None, terms: dict) -> dict:
    with span("remember_terms", "CHAIN", {"accession": obj["accession"], "value_eur": obj["value_eur"]}) as s:
        key = obj["accession"]
        if SWITCH == "zk-loan-5" and previous is not None:
            key = previous
        terms[key] = {"value_eur": obj["value_eur"], "title": obj["title"]}
        s["out"] = {"stored_under": key, "value_eur": obj["value_eur"]}
    return s["out"]


def run_loan(inp: dict) -> None:
    with span(RUN_NAME, "AGENT", inp, metadata=json.dumps({"task": f"outgoing loan {inp['loan']} to {inp['borrower']}"})):
        with span("read_loan_request", "CHAIN", inp) as s:
            s["out"] = {"loan": inp["loan"], "borrower": inp["borrower"], "objects": list(inp["objects"])}
        objects, terms, weights, classes, previous = [], {}, {}, {}, None
        for acc in s["out"]["objects"]:
            obj = _object(acc)
            with span("condition_report", "TOOL", {"accession": obj["accession"]}) as c:
                c["out"] = {"accession": obj["accession"], "condition": "stable", "fit_to_travel": True}
            weights[acc] = _weigh(obj)
            classes[acc] = _display_class(obj)
            _remember(obj, previous, terms)
            previous = obj["accession"]
            objects.append(obj)
        reply = common.CLIENT.chat.completions.create(model=common.MODEL, messages=[
            {"role": "system", "content": "You plan art transport crates and pick the courier."},
            {"role": "user", "content": json.dumps({"objects": objects, "couriers": COURIERS})}])
        with span("parse_crate_plan", "CHAIN", reply.choices[0].message.content) as p:
            p["out"] = json.loads(reply.choices[0].message.content)
        with span("facility_report", "TOOL", {"borrower": inp["borrower"]}) as f:
            f["out"] = FACILITIES[inp["borrower"]]
        with span("book_courier", "TOOL", {"loan": inp["loan"], "courier": p["out"]["courier"]}) as b:
            if p["out"]["courier"] not in COURIERS:
                raise ValueError(f"{p['out']['courier']} is not an accredited courier of the lending museum")
            b["out"] = {"courier": p["out"]["courier"], "travel": "2026-04-02"}
        with span("book_freight", "TOOL", {"loan": inp["loan"], "crates": [weights[a] for a in inp["objects"]]}) as b:
            for a in inp["objects"]:
                if weights[a]["crate_kg"] > inp["lift_kg"]:
                    raise ValueError(f"crate for {a} weighs {weights[a]['crate_kg']} kg; the venue's tail lift takes "
                                     f"{inp['lift_kg']} kg")
            b["out"] = {"truck": "air-ride 7.5 t", "crates": len(inp["objects"])}
        agreement = {"loan": inp["loan"], "objects": [
            {"accession": o["accession"], "title": o["title"], "lux": classes[a]["max_lux"],
             "value_eur": terms.get(a, {}).get("value_eur")} for a, o in zip(inp["objects"], objects)]}
        with span("loan_agreement", "TOOL", agreement) as g:
            for a, o in zip(inp["objects"], objects):
                if o["accession"] != a:
                    raise ValueError(f"agreement lists {o['accession']} ({o['title']}) where the request names {a}")
                if o["medium"].endswith("paper") and classes[a]["max_lux"] > 50:
                    raise ValueError(f"{a} ({o['medium']}) must be shown at 50 lux or less; agreement says "
                                     f"{classes[a]['max_lux']} lux")
                if terms.get(a, {}).get("value_eur") != o["value_eur"]:
                    raise ValueError(f"indemnity value for {a} is {terms.get(a, {}).get('value_eur')}, the valuation "
                                     f"says {o['value_eur']}")
            g["out"] = {"agreement": f"AGR-{inp['loan']}", "status": "sent for signature"}


def record(inp: dict, path: str) -> None:
    common.SPANS.clear()
    try:
        run_loan(inp)
    except ValueError:
        pass
    common.otlp_write(path)


CASES = [
    {"case": "zk-loan-1", "input": 4, "switch": "zk-loan-1", "fault_kind": "unit_error",
     "root": ("weigh_crate", 2, "tool"), "failure": ("book_freight", 1),
     "description": "The crate scale reports pounds in the crate_kg field, so The Weavers' crate reads 2.2 times "
                    "heavier and the freight booking exceeds the venue's 600 kg tail lift."},
    {"case": "zk-loan-2", "input": 0, "switch": "zk-loan-2", "fault_kind": "wrong_retrieval",
     "root": ("lookup_object", 1, "retrieval"), "failure": ("loan_agreement", 1),
     "description": "The collection lookup for 1987.112 returns the neighbouring record 1987.121 (a graphite "
                    "study), and the loan agreement no longer matches the requested object."},
    {"case": "zk-loan-3", "input": 3, "switch": "zk-loan-3", "fault_kind": "wrong_routing",
     "root": ("display_class", 1, "condition"), "failure": ("loan_agreement", 1),
     "description": "The display-class guardrail files the watercolour Blue Ledger with the paintings at 150 lux "
                    "instead of works on paper, and the agreement check refuses the light level."},
    {"case": "zk-loan-4", "input": 1, "switch": "zk-loan-4", "fault_kind": "hallucinated_value",
     "root": ("ChatCompletion", 1, "llm"), "failure": ("book_courier", 1),
     "description": "The crate-planning model names J. Petrov as courier, a name that is not in the list of "
                    "accredited couriers it was given, and the courier booking refuses it."},
    {"case": "zk-loan-5", "input": 3, "switch": "zk-loan-5", "fault_kind": "bad_memory_write",
     "root": ("remember_terms", 2, "other"), "failure": ("loan_agreement", 1),
     "description": "The terms memory stores Tideline Prints' indemnity value under Blue Ledger's accession, so "
                    "the agreement carries no value for one object and a mismatched one for the other."},
]
