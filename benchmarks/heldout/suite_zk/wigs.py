"""Custom medical wig orders (recording SDK): intake -> measurements -> profile -> hair stock -> cap sub-agent -> fittings -> order."""

from __future__ import annotations

import json
import re
from pathlib import Path

import trajdebug
from openai import OpenAI

from .common import Case
from .kit import active

AGENT, ROUTE, DOMAIN = "wig-atelier-orders", "sdk", "wig making"
SHAPE = "LLM summary+parse, profile state, hair-stock retrieval, cap-builder sub-agent with retry, fitting loop, order"

INPUTS = {
    "rosa": "Client C-118 Rosa Lind: head circumference 56.5 cm, front-to-nape 35 cm, colour 4 dark brown, length 12 in, latex allergy, alopecia",
    "omar": "Client C-207 Omar Haddad: head circumference 58.0 cm, front-to-nape 36 cm, colour 1B off black, length 6 in, no allergies, chemotherapy",
    "jun": "Client C-311 Jun Park: head circumference 54.0 cm, front-to-nape 33 cm, colour 2 darkest brown, length 10 in, no allergies, alopecia",
    "edna": "Client C-095 Edna Moss: head circumference 55.5 cm, front-to-nape 34 cm, colour 51 grey, length 8 in, latex allergy, thinning",
    "lea": "Client C-402 Lea Brun: head circumference 57.0 cm, front-to-nape 35 cm, colour 8 light brown, length 14 in, no allergies, alopecia",
    "tom": "Client C-513 Tom Ekberg: head circumference 59.5 cm, front-to-nape 37 cm, colour 6 chestnut, length 4 in, no allergies, burns",
}
REFS = ["jun", "edna", "lea", "tom"]

CASES = [
    Case("zk_wig_1", "unit_error", ("cap_size_from_circumference", 1), ("place_order", 1), "rosa",
         "cap_size_from_circumference reads the centimetre circumference as inches, so the cap size is far too large."),
    Case("zk_wig_2", "wrong_retrieval", ("search_hair_stock", 1), ("place_order", 1), "omar",
         "search_hair_stock ranks lots by length alone and returns a lot of another colour, which the order check rejects."),
    Case("zk_wig_3", "bad_memory_write", ("save_profile", 1), ("place_order", 1), "rosa",
         "save_profile leaves the latex allergy out of the profile, so the cap builder picks a latex base."),
    Case("zk_wig_4", "swallowed_error", ("insurance_precheck", 1), ("place_order", 1), "omar",
         "insurance_precheck turns the insurer's 503 into an empty approval, and the order goes out without a reference."),
    Case("zk_wig_5", "context_pollution", ("gather_notes", 1), ("place_order", 1), "rosa",
         "gather_notes adds the previous client's notes to the stylist context and the model takes that client's length."),
]

STOCK = [
    {"lot": "HL-101", "colour": "4 dark brown", "length_in": 12, "kind": "human"},
    {"lot": "HL-102", "colour": "4 dark brown", "length_in": 14, "kind": "human"},
    {"lot": "HL-150", "colour": "1B off black", "length_in": 6, "kind": "human"},
    {"lot": "HL-220", "colour": "9 ash blonde", "length_in": 16, "kind": "human"},
    {"lot": "HL-231", "colour": "2 darkest brown", "length_in": 10, "kind": "human"},
    {"lot": "HL-240", "colour": "51 grey", "length_in": 8, "kind": "human"},
    {"lot": "HL-255", "colour": "8 light brown", "length_in": 14, "kind": "human"},
    {"lot": "HL-262", "colour": "6 chestnut", "length_in": 6, "kind": "human"},
    {"lot": "SF-300", "colour": "4 dark brown", "length_in": 18, "kind": "synthetic"},
]


def _fields(text: str) -> dict:
    m = re.search(r"(C-\d+) ([\w ]+): head circumference ([\d.]+) cm, front-to-nape ([\d.]+) cm, colour ([\w ]+), "
                  r"length (\d+) in, ([\w ]+), (\w+)", text)
    return {"client": m.group(1), "name": m.group(2), "circ_cm": float(m.group(3)), "nape_cm": float(m.group(4)),
            "colour": m.group(5), "length_in": int(m.group(6)), "allergy": m.group(7), "reason": m.group(8)}


def policy(req) -> str:
    prompt = req.body["messages"][-1]["content"]
    if prompt.startswith("Summarise the intake"):
        f = _fields(prompt)
        return (f"Measurements: circumference={f['circ_cm']} cm; nape={f['nape_cm']} cm\n"
                f"Colour: {f['colour']}\nLength: {f['length_in']} in\nAllergy: {f['allergy']}\nReason: {f['reason']}")
    if prompt.startswith("Choose a hair lot"):
        ctx = json.loads(prompt.split("\n", 1)[1])
        want = ctx["notes"][0]["length_in"]
        lots = [x for x in ctx["lots"] if x["kind"] == "human"]
        pick = min(lots, key=lambda x: abs(x["length_in"] - want))
        return json.dumps({"lot": pick["lot"], "length_in": want, "colour": pick["colour"]})
    if prompt.startswith("Plan the ventilation"):
        return "Hand-tied crown, single-knotted hairline, density 110%, part on the left."
    return "OK"


def record(server, inp: str, out: Path) -> None:
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    f0 = _fields(INPUTS[inp])
    calls = {"cap": 0}

    def chat(name: str, prompt: str) -> str:
        with trajdebug.step(name, kind="llm", input=[{"role": "user", "content": prompt}]) as s:
            r = client.chat.completions.create(model=server.model, messages=[{"role": "user", "content": prompt}])
            s.output = {"role": "assistant", "content": r.choices[0].message.content}
        return r.choices[0].message.content

    @trajdebug.step(kind="parse")
    def parse_measurements(summary: str) -> dict:
        lines = dict(line.split(": ", 1) for line in summary.splitlines())
        circ = float(re.search(r"circumference=([\d.]+)", lines["Measurements"]).group(1))
        nape = float(re.search(r"nape=([\d.]+)", lines["Measurements"]).group(1))
        return {"circ_cm": circ, "nape_cm": nape, "colour": lines["Colour"],
                "length_in": int(lines["Length"].split()[0]), "allergy": lines["Allergy"], "reason": lines["Reason"]}

    @trajdebug.step(kind="tool")
    def lookup_client(client_id: str) -> dict:
        return {"client": client_id, "name": f0["name"], "allergies": ["latex"] if "latex" in f0["allergy"] else [],
                "prescription": {"length_in": f0["length_in"], "reason": f0["reason"]}}

    @trajdebug.step(kind="state")
    def save_profile(m: dict, rec: dict) -> None:
        allergies = list(rec["allergies"])
        if active("zk_wig_3"):
            allergies = [a for a in allergies if a not in m["allergy"]]
        trajdebug.current_run().state["profile"] = {"client": rec["client"], "circ_cm": m["circ_cm"],
                                                    "colour": m["colour"], "allergies": allergies}

    @trajdebug.step(kind="retrieval")
    def search_hair_stock(colour: str, length_in: int) -> list:
        if active("zk_wig_2"):
            return sorted(STOCK, key=lambda x: -x["length_in"])[:3]
        hits = [x for x in STOCK if x["colour"] == colour]
        return sorted(hits, key=lambda x: abs(x["length_in"] - length_in))

    @trajdebug.step(kind="other")
    def gather_notes(m: dict) -> list:
        notes = [{"client": "C-044", "length_in": 18, "note": "wants long layers for a wedding"}] if active("zk_wig_5") else []
        notes.append({"client": f0["client"], "length_in": m["length_in"], "note": f"{m['reason']}, keep it natural"})
        return notes

    @trajdebug.step(kind="parse")
    def parse_choice(text: str) -> dict:
        return json.loads(text)

    @trajdebug.step(kind="other")
    def cap_size_from_circumference(circ_cm: float) -> dict:
        cm = circ_cm * 2.54 if active("zk_wig_1") else circ_cm
        size = "S" if cm < 54.5 else "M" if cm < 57.0 else "L" if cm < 59.0 else "XL" if cm < 62 else "XXL"
        return {"size": size, "circ_cm": round(cm, 1)}

    @trajdebug.step(kind="condition")
    def choose_base(profile: dict) -> dict:
        return {"base": "PU-silicone" if "latex" in profile["allergies"] else "LX-latex"}

    @trajdebug.retry(attempts=3, on=(ConnectionError,))
    @trajdebug.step(kind="tool")
    def order_cap_base(size: str, base: str) -> dict:
        calls["cap"] += 1
        if calls["cap"] == 1:
            raise ConnectionError("supplier portal reset the connection")
        return {"reservation": f"CB-{size}-{base[:2]}-77", "size": size, "base": base}

    @trajdebug.step(kind="tool")
    def schedule_fitting(n: int) -> dict:
        return {"fitting": n, "date": f"2026-07-{7 * n:02d}", "stylist": ["Ana", "Ben", "Ana"][n - 1]}

    @trajdebug.step(kind="other")
    def estimate_cost(lot: dict, cap: dict, fittings: list) -> dict:
        return {"total": 480 + 22 * lot["length_in"] + 60 * len(fittings), "currency": "EUR"}

    @trajdebug.step(kind="tool")
    def insurance_precheck(client_id: str, total: int) -> dict:
        try:
            if active("zk_wig_4"):
                raise RuntimeError("insurer gateway answered 503 Service Unavailable")
            return {"approved": True, "reference": f"PA-{client_id[2:]}-{total}"}
        except RuntimeError:
            return {"approved": True, "reference": None}

    @trajdebug.step(kind="tool")
    def place_order(order: dict) -> dict:
        allergies = ["latex"] if "latex" in f0["allergy"] else []
        if order["colour"] != f0["colour"]:
            raise RuntimeError(f"HTTP 422: hair lot {order['lot']} colour '{order['colour']}' does not match "
                               f"the swatch on file ({f0['colour']})")
        if order["length_in"] > f0["length_in"]:
            raise RuntimeError(f"HTTP 422: hair length {order['length_in']} in exceeds the prescribed length "
                               f"({f0['length_in']} in)")
        if "latex" in allergies and order["base"].startswith("LX"):
            raise RuntimeError(f"HTTP 409: cap base {order['base']} cannot be used, client {order['client']} "
                               "has a latex allergy on record")
        expected = "S" if f0["circ_cm"] < 54.5 else "M" if f0["circ_cm"] < 57.0 else "L" if f0["circ_cm"] < 59 else "XL"
        if order["cap_size"] != expected:
            raise RuntimeError(f"HTTP 422: cap size {order['cap_size']} does not fit head circumference "
                               f"{f0['circ_cm']} cm (size {expected})")
        if not order["preauth"]:
            raise RuntimeError("HTTP 400: field 'preauth_reference' is required for insured orders")
        return {"order": "WO-" + order["client"][2:], "status": "queued"}

    with trajdebug.run(AGENT, path=str(out), task="custom wig order for " + f0["client"]) as run:
        with trajdebug.step("intake_form", kind="input") as s:
            s.output = INPUTS[inp]
        m = parse_measurements(chat("summarize_needs", "Summarise the intake: " + INPUTS[inp]))
        rec = lookup_client(f0["client"])
        save_profile(m, rec)
        lots = search_hair_stock(m["colour"], m["length_in"])
        notes = gather_notes(m)
        choice = parse_choice(chat("choose_hair", "Choose a hair lot\n" + json.dumps({"lots": lots, "notes": notes})))
        with trajdebug.step("cap_builder", kind="agent"):
            with trajdebug.step("read_profile", kind="other") as s:
                s.output = profile = dict(run.state["profile"])
            size = cap_size_from_circumference(profile["circ_cm"])
            base = choose_base(profile)
            cap = order_cap_base(size["size"], base["base"])
            chat("ventilation_plan", "Plan the ventilation for cap " + cap["reservation"])
        fittings = [schedule_fitting(n) for n in (1, 2, 3)]
        cost = estimate_cost(choice, cap, fittings)
        pre = insurance_precheck(f0["client"], cost["total"])
        place_order({"client": f0["client"], "lot": choice["lot"], "colour": choice["colour"],
                     "length_in": choice["length_in"], "cap_size": cap["size"], "base": cap["base"],
                     "preauth": pre["reference"], "total": cost["total"]})
