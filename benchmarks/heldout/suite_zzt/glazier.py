"""Glazier repair jobs: plan a day's repair round (otlp route)."""
import json

import common
import kit
from common import OtlpRec

NAME, ROUTE, DOMAIN = "glazier-repair-round", "otlp", "a glazier's repair jobs"
SHAPE = "job sheet (tool) -> triage (llm) -> parse triage -> van loader sub-agent (stock, llm, parse) -> per job: parse size, route crew, price glass, cut list -> schedule -> messages (llm) -> validate"

RATES = {"float": 38.0, "toughened": 72.0, "laminated": 85.0, "obscured": 49.0}
SLOTS = ["08:30", "10:00", "11:30", "13:30", "15:00", "16:30"]


def _j(ref, cust, size, glass, where, after):
    return {"ref": ref, "customer": cust, "size": size, "glass": glass, "where": where, "after": after}


INPUTS = {
    "glaz-1": {"id": "glaz-1", "day": "2027-05-03", "jobs": [
        _j("G-301", "Mrs Abara", "860 x 560 mm", "float", "kitchen window", "08:00"),
        _j("G-302", "Fenwick Deli", "1800 x 1200 mm", "toughened", "shopfront", "08:00"),
        _j("G-303", "Mr Lund", "34 x 22 in", "obscured", "bathroom window", "08:00"),
        _j("G-304", "Ashby Lettings", "700 x 400 mm", "laminated", "back door", "08:00")]},
    "glaz-2": {"id": "glaz-2", "day": "2027-05-04", "jobs": [
        _j("G-311", "Mr Dube", "640 x 480 mm", "float", "bedroom window", "08:00"),
        _j("G-312", "Corner Launderette", "1500 x 1000 mm", "laminated", "shopfront", "08:00"),
        _j("G-313", "Ms Ortega", "900 x 300 mm", "toughened", "front door", "08:00")]},
    "glaz-3": {"id": "glaz-3", "day": "2027-05-05", "jobs": [
        _j("G-321", "Mr Hale", "500 x 500 mm", "float", "shed window", "08:00"),
        _j("G-322", "Pinewood Surgery", "1200 x 900 mm", "laminated", "reception screen", "08:00"),
        _j("G-323", "Mrs Chu", "760 x 610 mm", "obscured", "bathroom window", "13:00"),
        _j("G-324", "Mr Reyes", "24 x 36 in", "float", "sash window", "08:00")]},
    "glaz-4": {"id": "glaz-4", "day": "2027-05-06", "jobs": [
        _j("G-331", "Bell & Co", "2000 x 1100 mm", "toughened", "shopfront", "08:00"),
        _j("G-332", "Mrs Kaur", "600 x 450 mm", "float", "kitchen window", "08:00"),
        _j("G-333", "Mr Novak", "820 x 350 mm", "laminated", "porch door", "08:00"),
        _j("G-334", "Ms Wilde", "30 x 18 in", "obscured", "cloakroom window", "08:00")]},
    "glaz-5": {"id": "glaz-5", "day": "2027-05-07", "jobs": [
        _j("G-341", "Mr Osei", "900 x 600 mm", "float", "lounge window", "08:00"),
        _j("G-342", "The Old Forge", "1400 x 800 mm", "laminated", "shopfront", "08:00"),
        _j("G-343", "Mrs Pryce", "560 x 560 mm", "toughened", "garden door", "08:00")]},
}
REFS = [
    {"id": "glaz-r1", "day": "2027-05-10", "jobs": [
        _j("G-351", "Mr Tait", "36 x 24 in", "float", "sash window", "08:00"),
        _j("G-352", "Harbour Cafe", "1600 x 1100 mm", "toughened", "shopfront", "08:00"),
        _j("G-353", "Mrs Young", "700 x 500 mm", "obscured", "bathroom window", "12:00")]},
    {"id": "glaz-r2", "day": "2027-05-11", "jobs": [
        _j("G-361", "Mr Akande", "800 x 600 mm", "laminated", "patio door", "08:00"),
        _j("G-362", "Mrs Barros", "450 x 450 mm", "float", "landing window", "08:00"),
        _j("G-363", "Ivy Florist", "1900 x 1000 mm", "toughened", "shopfront", "08:00"),
        _j("G-364", "Mr Grant", "28 x 20 in", "obscured", "toilet window", "08:00")]},
    {"id": "glaz-r3", "day": "2027-05-12", "jobs": [
        _j("G-371", "Mr Iqbal", "1000 x 700 mm", "float", "office window", "08:00"),
        _j("G-372", "Mrs Jensen", "760 x 320 mm", "laminated", "front door", "08:00")]},
    {"id": "glaz-r4", "day": "2027-05-13", "jobs": [
        _j("G-381", "Mr Kowal", "620 x 540 mm", "toughened", "side door", "08:00"),
        _j("G-382", "Mrs Lomax", "880 x 600 mm", "float", "kitchen window", "08:00"),
        _j("G-383", "Moss Books", "1700 x 1200 mm", "laminated", "shopfront", "08:00")]},
]

CASES = [
    dict(id="glaz-1", switch="glaz_inches", kind="unit_error", root=("parse_size", 3),
         failure=("validate_round", 1),
         description="The size parser reads a pane measured in inches as millimetres."),
    dict(id="glaz-2", switch="glaz_price_args", kind="wrong_tool_args", root=("glass_price", 3),
         failure=("validate_round", 1),
         description="The glass price call for the last job passes the first job's glass type instead of its own."),
    dict(id="glaz-3", switch="glaz_after", kind="hallucinated_value", root=("ChatCompletion", 1),
         failure=("validate_round", 1),
         description="The triage answer gives a customer an earliest visit time the job sheet does not hold."),
    dict(id="glaz-4", switch="glaz_slots", kind="off_by_one", root=("schedule_round", 1),
         failure=("validate_round", 1),
         description="The scheduler loops one job short and leaves the day's last job without a slot."),
    dict(id="glaz-5", switch="glaz_crew", kind="wrong_routing", root=("route_crew", 2),
         failure=("validate_round", 1),
         description="The crew router sends laminated glass to the general crew; only toughened goes to the certified crew."),
]


def brain(inp):
    def answer(request):
        p = common.last_user(request)
        body = p.split("\n", 1)[1] if "\n" in p else "{}"
        if p.startswith("TRIAGE"):
            jobs = json.loads(body)
            out = []
            for j in jobs:
                after = j["after"]
                if kit.on("glaz_after") and j["ref"] == "G-323":
                    after = "08:00"
                out.append({"ref": j["ref"], "priority": "urgent" if "door" in j["where"] or "shop" in j["where"] else "normal",
                            "earliest": after})
            return json.dumps(out)
        if p.startswith("LOAD"):
            d = json.loads(body)
            return json.dumps({"racks": [{"rack": i + 1, "ref": c["ref"]} for i, c in enumerate(d["cuts"])]})
        if p.startswith("MESSAGES"):
            return "Texts sent: your glazier will arrive in the booked slot."
        return "OK"
    return answer


SYS = "You are the dispatcher at Clearview Glaziers. Answer with JSON when asked."


def record(inp, path, seed):
    common.SERVER.use(brain(inp))
    with OtlpRec(NAME, path, f"repair round {inp['id']}", seed) as rec:
        sheet = rec.call("job_sheet", "tool", lambda day: {"day": day, "jobs": inp["jobs"]}, inp["day"])
        triage = rec.call("parse_triage", "parse", json.loads,
                          rec.llm("triage", SYS, "TRIAGE these jobs\n" + json.dumps(sheet["jobs"])))
        with rec.group("van_loader", {"day": inp["day"], "jobs": len(sheet["jobs"])}) as box:
            stock = rec.call("stock_check", "tool", lambda kinds: {k: 6 for k in kinds},
                             sorted({j["glass"] for j in sheet["jobs"]}))
            load = rec.llm("load_plan", SYS, "LOAD the van\n" + json.dumps({"cuts": sheet["jobs"], "stock": stock}))
            box["out"] = rec.call("parse_load", "parse", json.loads, load)

        lines = []
        for j in sheet["jobs"]:
            def parse_size(text):
                a, _, rest = text.partition(" x ")
                b, unit = rest.split()
                f = 25.4 if unit == "in" and not kit.on("glaz_inches") else 1.0
                return {"w_mm": round(float(a) * f), "h_mm": round(float(b) * f)}
            size = rec.call("parse_size", "parse", parse_size, j["size"])

            def route_crew(glass, where):
                safety = ("toughened",) if kit.on("glaz_crew") else ("toughened", "laminated")
                return {"crew": "certified" if glass in safety else "general", "where": where}
            crew = rec.call("route_crew", "condition", route_crew, j["glass"], j["where"])
            glass_arg = sheet["jobs"][0]["glass"] if (kit.on("glaz_price_args") and j is sheet["jobs"][-1]) else j["glass"]
            rate = rec.call("glass_price", "tool", lambda g: {"glass": g, "per_m2": RATES[g]}, glass_arg)

            def cut_list(j, size, crew, rate):
                area = round(size["w_mm"] * size["h_mm"] / 1e6, 3)
                return {"ref": j["ref"], "glass": j["glass"], "priced_glass": rate["glass"], "area_m2": area,
                        "price": round(max(45.0, area * rate["per_m2"]), 2), "crew": crew["crew"]}
            lines.append(rec.call("cut_list", "other", cut_list, j, size, crew, rate))

        def schedule_round(lines, triage):
            earliest = {t["ref"]: t["earliest"] for t in triage}
            order = sorted(range(len(lines)), key=lambda i: (earliest[lines[i]["ref"]], i))
            n = len(order) - 1 if kit.on("glaz_slots") else len(order)
            out, k = [], 0
            for i in order[:n]:
                while SLOTS[k] < earliest[lines[i]["ref"]]:
                    k += 1
                out.append({"ref": lines[i]["ref"], "slot": SLOTS[k]})
                k += 1
            return out
        plan = rec.call("schedule_round", "other", schedule_round, lines, triage)
        rec.llm("messages", SYS, "MESSAGES to customers\n" + json.dumps(plan))

        def validate_round(lines, plan, sheet):
            slot = {p["ref"]: p["slot"] for p in plan}
            for j, ln in zip(sheet["jobs"], lines):
                if not 0.05 <= ln["area_m2"] <= 6.0:
                    raise ValueError(f"{ln['ref']} pane of {ln['area_m2']} m2 is outside 0.05-6.0 m2")
                if ln["priced_glass"] != ln["glass"]:
                    raise ValueError(f"{ln['ref']} is {ln['glass']} glass priced as {ln['priced_glass']}")
                if ln["glass"] in ("toughened", "laminated") and ln["crew"] != "certified":
                    raise ValueError(f"{ln['ref']} ({ln['glass']}) is given to the {ln['crew']} crew")
                if ln["ref"] not in slot:
                    raise ValueError(f"{ln['ref']} for {j['customer']} has no slot on {sheet['day']}")
                if slot[ln["ref"]] < j["after"]:
                    raise ValueError(f"{ln['ref']} booked at {slot[ln['ref']]}, customer is available from {j['after']}")
            return {"ok": True}
        rec.call("validate_round", "condition", validate_round, lines, plan, sheet)
