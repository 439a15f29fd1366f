"""Body piercing studio desk: the day's appointments and the aftercare reorder (otlp route)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import kit
from harness import CheckFailed, Otlp, chat_policy
from openai import OpenAI


NAME = "piercing-studio-desk"
ROUTE = "otlp"
DOMAIN = "a body piercing studio's appointments and aftercare stock"
SHAPE = ("OTel spans: requests tool -> per client (age/consent guardrail, brief builder, LLM classification + parse, "
         "jewelry retrieval, piercer routing guardrail, slot booking tool) -> aftercare stock sub-agent (stock "
         "count tool, LLM reorder list, parse) -> day sheet -> validator")

PIERCERS = [{"name": "Jess", "certs": ["lobe", "nostril"]},
            {"name": "Rowan", "certs": ["lobe", "nostril", "cartilage", "surface", "oral"]},
            {"name": "Mina", "certs": ["lobe", "nostril", "cartilage", "oral"]}]
PLACEMENTS = {"lobe": "lobe", "helix": "cartilage", "tragus": "cartilage", "industrial": "cartilage",
              "conch": "cartilage", "nostril": "nostril", "septum": "nostril", "navel": "surface",
              "eyebrow": "surface", "tongue": "oral", "labret": "oral"}
JEWELRY = {("lobe", "titanium"): "J-LB-TI", ("lobe", "steel"): "J-LB-ST", ("cartilage", "titanium"): "J-CT-TI",
           ("cartilage", "steel"): "J-CT-ST", ("nostril", "titanium"): "J-NS-TI", ("nostril", "gold"): "J-NS-AU",
           ("surface", "titanium"): "J-SF-TI", ("oral", "titanium"): "J-OR-TI", ("oral", "bioplast"): "J-OR-BP"}
CATALOG = {"AC-SALINE-100", "AC-SOAP-50", "AC-PADS-25"}
PAR = {"AC-SALINE-100": 144, "AC-SOAP-50": 60, "AC-PADS-25": 40}
STOCK = {"Camden": {"AC-SALINE-100": 118, "AC-SOAP-50": 41, "AC-PADS-25": 30},
         "Shoreditch": {"AC-SALINE-100": 22, "AC-SOAP-50": 9, "AC-PADS-25": 12},
         "Brixton": {"AC-SALINE-100": 35, "AC-SOAP-50": 18, "AC-PADS-25": 7}}

INPUTS = [
    {"date": "2027-06-04", "studio": "Shoreditch", "clients": [
        {"client": "Ava Moss", "age": 19, "wants": "nostril", "material": "titanium"},
        {"client": "Ben Kaur", "age": 24, "wants": "industrial", "material": "titanium"},
        {"client": "Cleo Hart", "age": 31, "wants": "lobe", "material": "steel"}]},
    {"date": "2027-06-05", "studio": "Camden", "clients": [
        {"client": "Dev Patel", "age": 22, "wants": "septum", "material": "titanium"},
        {"client": "Esme Doyle", "age": 17, "wants": "lobe", "material": "titanium"},
        {"client": "Finn Ward", "age": 28, "wants": "tongue", "material": "bioplast"}]},
    {"date": "2027-06-06", "studio": "Brixton", "clients": [
        {"client": "Gia Rossi", "age": 26, "wants": "navel", "material": "titanium"},
        {"client": "Hugo Lane", "age": 33, "wants": "lobe", "material": "steel"},
        {"client": "Iris Chen", "age": 21, "wants": "tragus", "material": "titanium"}]},
    {"date": "2027-06-07", "studio": "Shoreditch", "clients": [
        {"client": "Jade Okoro", "age": 20, "wants": "conch", "material": "titanium"},
        {"client": "Kai Novak", "age": 27, "wants": "labret", "material": "titanium"},
        {"client": "Lena Berg", "age": 35, "wants": "nostril", "material": "gold"}]},
    {"date": "2027-06-08", "studio": "Brixton", "clients": [
        {"client": "Milo Grant", "age": 23, "wants": "eyebrow", "material": "titanium"},
        {"client": "Nora Quinn", "age": 18, "wants": "lobe", "material": "titanium"},
        {"client": "Omar Said", "age": 29, "wants": "helix", "material": "steel"}]},
    {"date": "2027-06-09", "studio": "Camden", "clients": [
        {"client": "Pia Lund", "age": 25, "wants": "helix", "material": "titanium"},
        {"client": "Quin Ames", "age": 30, "wants": "nostril", "material": "titanium"},
        {"client": "Rhea Voss", "age": 22, "wants": "lobe", "material": "steel"}]},
    {"date": "2027-06-10", "studio": "Shoreditch", "clients": [
        {"client": "Sam Ortiz", "age": 40, "wants": "lobe", "material": "titanium"},
        {"client": "Tara Bell", "age": 19, "wants": "septum", "material": "titanium"},
        {"client": "Uri Katz", "age": 26, "wants": "tongue", "material": "titanium"}]},
]

CASES = [
    {"id": "zzl_piercing_1", "input": 0, "kind": "context_pollution", "root": ("build_client_brief", 2),
     "failure": ("validate_day", 1),
     "description": "The client brief builder keeps the notes list from the previous client, and the classifier "
                    "reads Ava's nostril request as Ben's placement."},
    {"id": "zzl_piercing_2", "input": 4, "kind": "wrong_routing", "root": ("route_to_piercer", 3),
     "failure": ("validate_day", 1),
     "description": "The piercer router counts helix as a junior-level placement and sends Omar's cartilage "
                    "piercing to Jess, who is not certified for cartilage."},
    {"id": "zzl_piercing_3", "input": 3, "kind": "tool_ignores_argument", "root": ("count_aftercare", 1),
     "failure": ("validate_day", 1),
     "description": "The aftercare stock count ignores its studio argument and returns the Camden flagship's "
                    "shelves, so Shoreditch reorders far too little."},
    {"id": "zzl_piercing_4", "input": 6, "kind": "hallucinated_value", "root": ("ChatCompletion", 4),
     "failure": ("validate_day", 1),
     "description": "The reorder model lists a 250 ml saline SKU that is not in the catalog instead of the "
                    "AC-SALINE-100 it was given."},
    {"id": "zzl_piercing_5", "input": 2, "kind": "lossy_parsing", "root": ("parse_reorder", 1),
     "failure": ("validate_day", 1),
     "description": "The reorder parser reads at most two digits of a quantity, so 109 saline sprays become 10."},
]

_carry: dict[str, list] = {"notes": []}


def _brain(inp: dict):
    def answer(system: str, user: str, messages: list[dict]):
        if system.startswith("Classify"):
            brief = json.loads(user)
            first = next(n for n in brief["notes"] if n.startswith("wants "))
            placement = first.split()[1]
            return json.dumps({"placement": placement, "category": PLACEMENTS[placement], "gauge": "16g"})
        if system.startswith("List the aftercare"):
            data = json.loads(user)
            lines = []
            for sku, par in sorted(data["par"].items()):
                qty = par - data["on_hand"].get(sku, 0)
                if qty > 0:
                    name = sku
                    if kit.on("zzl_piercing_4") and sku == "AC-SALINE-100":
                        name = "AC-SALINE-250"
                    lines.append(f"- {name} x {qty}")
            return "Reorder for the week:\n" + "\n".join(lines)
        return "OK"

    return chat_policy(answer)


def record(server, inp: dict, path: Path, otlp: Otlp) -> None:
    server.use(_brain(inp))
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    sp = otlp.span
    _carry["notes"] = []

    def chat(system: str, user: str) -> str:
        r = client.chat.completions.create(model="fake-model", messages=[{"role": "system", "content": system},
                                                                         {"role": "user", "content": user}])
        return r.choices[0].message.content

    def body():
        task = f"Run the {inp['date']} appointment book and aftercare reorder for {inp['studio']}."
        with sp(NAME, "AGENT", task, **{"agent.name": NAME}) as root:
            with sp("load_requests", "TOOL", {"studio": inp["studio"], "date": inp["date"]}) as s:
                reqs = s.out({"requests": [dict(c) for c in inp["clients"]]})["requests"]
            bookings = []
            for i, c in enumerate(reqs):
                with sp("check_age_consent", "GUARDRAIL", {"client": c["client"], "age": c["age"]}) as s:
                    s.out({"client": c["client"], "consent_form": "guardian" if c["age"] < 18 else "self",
                           "ok": True})
                with sp("build_client_brief", "CHAIN", c) as s:
                    if not kit.on("zzl_piercing_1"):
                        _carry["notes"] = []
                    _carry["notes"] = _carry["notes"] + [f"wants {c['wants']}", f"material {c['material']}"]
                    brief = s.out({"client": c["client"], "notes": list(_carry["notes"])})
                text = chat("Classify the requested piercing: placement, category, gauge. JSON.", json.dumps(brief))
                with sp("parse_classification", "CHAIN", text) as s:
                    cls = s.out(json.loads(text))
                with sp("jewelry_lookup", "RETRIEVER", {"category": cls["category"], "material": c["material"]}) as s:
                    sku = JEWELRY.get((cls["category"], c["material"])) or JEWELRY[(cls["category"], "titanium")]
                    item = s.out({"sku": sku, "category": cls["category"]})
                with sp("route_to_piercer", "GUARDRAIL", {"category": cls["category"]}) as s:
                    junior = ("lobe", "nostril", "cartilage") if kit.on("zzl_piercing_2") else ("lobe", "nostril")
                    if cls["category"] in junior:
                        piercer = "Jess"
                    else:
                        piercer = "Mina" if cls["category"] in ("cartilage", "oral") else "Rowan"
                    s.out({"piercer": piercer})
                with sp("book_slot", "TOOL", {"piercer": piercer, "client": c["client"], "slot": i}) as s:
                    slot = s.out({"client": c["client"], "piercer": piercer, "time": f"{11 + 2 * i}:00",
                                  "placement": cls["placement"], "category": cls["category"], "jewelry": item["sku"]})
                bookings.append(slot)
            with sp("aftercare_stock", "AGENT", {"studio": inp["studio"]}, **{"agent.name": "aftercare_stock"}) as ag:
                with sp("count_aftercare", "TOOL", {"studio": inp["studio"]}) as s:
                    where = "Camden" if kit.on("zzl_piercing_3") else inp["studio"]
                    counted = s.out({"studio": inp["studio"], "on_hand": dict(STOCK[where])})
                text = chat("List the aftercare products to reorder up to par, one per line.",
                            json.dumps({"on_hand": counted["on_hand"], "par": PAR}))
                with sp("parse_reorder", "CHAIN", text) as s:
                    pattern = r"- (\S+) x (\d{1,2})" if kit.on("zzl_piercing_5") else r"- (\S+) x (\d+)"
                    order = s.out({sku: int(q) for sku, q in re.findall(pattern, text)})
                ag.out({"reorder": order})
            with sp("build_day_sheet", "CHAIN", {"bookings": bookings, "reorder": order}) as s:
                sheet = s.out({"date": inp["date"], "studio": inp["studio"], "bookings": bookings, "reorder": order})
            with sp("validate_day", "EVALUATOR", sheet) as s:
                for b, c in zip(sheet["bookings"], inp["clients"]):
                    if b["placement"] != c["wants"]:
                        raise CheckFailed(f"{b['client']} is booked for a {b['placement']} piercing, the request "
                                          f"says {c['wants']}")
                    certs = next(p["certs"] for p in PIERCERS if p["name"] == b["piercer"])
                    if b["category"] not in certs:
                        raise CheckFailed(f"{b['piercer']} is not certified for {b['category']} "
                                          f"({b['client']}, {b['placement']})")
                for sku in sheet["reorder"]:
                    if sku not in CATALOG:
                        raise CheckFailed(f"reorder lists {sku}, which is not in the aftercare catalog")
                live = STOCK[inp["studio"]]
                for sku, par in PAR.items():
                    have = live[sku] + sheet["reorder"].get(sku, 0)
                    if have < par:
                        raise CheckFailed(f"{sku}: {live[sku]} on the {inp['studio']} shelf + "
                                          f"{sheet['reorder'].get(sku, 0)} reordered < par {par}")
                s.out({"valid": True})
            root.out(sheet)

    otlp.record(body, path)
