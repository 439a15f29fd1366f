"""Swordsmith's commissions (sdk route): two sub-agents (blade sketch, forge schedule), parallel
supplier quotes in threads, a supplier router, a stage loop; failures surface as a refusal from the
steel supplier's order API, the forge calendar's booking, or the letter's assertion."""
import json

import trajdebug

NAME = "swordsmith-commissions"
ROUTE = "sdk"
DOMAIN = "swordsmith's commissions"
SHAPE = "form -> sub-agent sketch (customer file, llm, parse) -> steel calc -> 3 parallel quotes -> router -> order API -> sub-agent schedule (llm plan, parse, loop of stage tools, calendar, pick week, booking) -> letter assertion"
MODE = None

INPUTS = [
    {"commission": "C-71", "patron": "Baron Ashby", "style": "longsword", "blade_cm": 95, "steel": "1075", "weeks": 6},
    {"commission": "C-72", "patron": "Lady Morrow", "style": "rapier", "blade_cm": 105, "steel": "5160", "weeks": 8},
    {"commission": "C-73", "patron": "Sir Calder", "style": "arming sword", "blade_cm": 78, "steel": "1075", "weeks": 5},
    {"commission": "C-74", "patron": "Master Ellery", "style": "falchion", "blade_cm": 70, "steel": "1095", "weeks": 4},
    {"commission": "C-75", "patron": "Dame Quill", "style": "sabre", "blade_cm": 88, "steel": "5160", "weeks": 7},
]
CUSTOMER_FILES = {i["commission"]: i for i in INPUTS}
ORDER = ["C-71", "C-72", "C-73", "C-74", "C-75"]

CASES = [
    {"input": 0, "mode": "s1", "kind": "unit_error", "root": ("steel_needed", 1),
     "description": "the steel requirement is computed in grams and sent to the supplier as kilograms"},
    {"input": 1, "mode": "s2", "kind": "truncated_result", "root": ("supplier_quote", {"supplier": "Sheffield Crucible"}),
     "description": "the Sheffield supplier's quote comes back with only its first page of grades, without 5160, so the order goes to a supplier with too little stock"},
    {"input": 2, "mode": "s3", "kind": "plan_error", "root": ("plan_stages", 1),
     "description": "the model's forging plan puts quenching before the blade is forged"},
    {"input": 3, "mode": "s4", "kind": "off_by_one", "root": ("pick_start_week", 1),
     "description": "the start week is taken one position past the first free week in the forge calendar, landing on a booked week"},
    {"input": 4, "mode": "s5", "kind": "subagent_wrong_entity", "root": ("sketch_blade", 1),
     "description": "the sketch sub-agent opens the customer file of the previous commission and specifies that patron's blade"},
]

STAGES = ["forge", "normalise", "grind", "quench", "temper", "polish", "hilt"]
HOURS = {"forge": 14, "normalise": 3, "grind": 10, "quench": 2, "temper": 4, "polish": 8, "hilt": 9}
SUPPLIERS = {
    "Ironbridge": {"1075": (9.0, 50), "5160": (13.5, 2), "1095": (10.0, 40)},
    "Sheffield Crucible": {"1075": (10.5, 80), "1095": (12.0, 30), "5160": (12.5, 60)},
    "Nordmark": {"1075": (11.0, 60), "5160": (13.0, 3), "1095": (9.5, 25)},
}


def policy(request):
    msgs = request.body["messages"]
    prompt = msgs[-1]["content"]
    if prompt.startswith("Specify the blade"):
        cid = prompt.split("commission ")[1].split(":")[0]
        f = CUSTOMER_FILES[cid]
        return json.dumps({"commission": cid, "style": f["style"], "blade_cm": f["blade_cm"], "steel": f["steel"]})
    if prompt.startswith("Plan the forging stages"):
        stages = list(STAGES)
        if MODE == "s3":
            stages = ["quench", "forge", "normalise", "grind", "temper", "polish", "hilt"]
        return "Stages:\n" + "\n".join(f"{n + 1}. {s}" for n, s in enumerate(stages))
    return "Letter drafted."


def build(client, model):
    @trajdebug.step(kind="input")
    def commission_form(form: dict) -> dict:
        return form

    @trajdebug.step(kind="tool")
    def customer_file(commission: str) -> dict:
        return dict(CUSTOMER_FILES[commission])

    @trajdebug.step(kind="llm")
    def blade_spec_model(messages: list) -> str:
        return client.chat.completions.create(model=model, messages=messages).choices[0].message.content

    @trajdebug.step(kind="parse")
    def read_spec(text: str) -> dict:
        return json.loads(text)

    @trajdebug.step(kind="agent")
    def sketch_blade(commission: str) -> dict:
        open_id = commission
        if MODE == "s5":
            open_id = ORDER[ORDER.index(commission) - 1]
        f = customer_file(open_id)
        text = blade_spec_model([{"role": "system", "content": "You are the blade designer."},
                                 {"role": "user", "content": f"Specify the blade for commission {f['commission']}: {f['style']}, {f['blade_cm']} cm, steel {f['steel']}"}])
        return read_spec(text)

    @trajdebug.step(kind="other")
    def steel_needed(spec: dict) -> dict:
        kg = round(spec["blade_cm"] * 0.045 + 1.2, 2)
        if MODE == "s1":
            kg = round(kg * 1000, 1)
        return {"steel": spec["steel"], "kg": kg}

    @trajdebug.step(kind="tool")
    def supplier_quote(supplier: str, steel: str) -> dict:
        grades = SUPPLIERS[supplier]
        rows = [{"grade": g, "eur_per_kg": p, "stock_kg": s} for g, (p, s) in grades.items()]
        if MODE == "s2" and supplier == "Sheffield Crucible":
            rows = rows[:2]
        return {"supplier": supplier, "grades": rows}

    @trajdebug.step(kind="condition")
    def choose_supplier(quotes: list, steel: str) -> dict:
        offers = [(g["eur_per_kg"], q["supplier"]) for q in quotes for g in q["grades"] if g["grade"] == steel]
        offers.sort()
        return {"supplier": offers[0][1], "eur_per_kg": offers[0][0]}

    @trajdebug.step(kind="tool")
    def order_steel(supplier: str, steel: str, kg: float) -> dict:
        price, stock = SUPPLIERS[supplier][steel]
        if kg > stock:
            raise RuntimeError(f"{supplier} order API: 409 insufficient stock, {kg} kg of {steel} requested, {stock} kg available")
        return {"order": f"PO-{supplier[:3].upper()}-{steel}", "kg": kg, "eur": round(kg * price, 2)}

    @trajdebug.step(kind="llm")
    def plan_stages(messages: list) -> str:
        return client.chat.completions.create(model=model, messages=messages).choices[0].message.content

    @trajdebug.step(kind="parse")
    def read_stages(text: str) -> list:
        return [line.split(". ", 1)[1] for line in text.splitlines() if ". " in line]

    @trajdebug.step(kind="tool")
    def stage_hours(stage: str, blade_cm: int) -> dict:
        return {"stage": stage, "hours": HOURS[stage] + (2 if blade_cm > 90 and stage in ("grind", "polish") else 0)}

    @trajdebug.step(kind="tool")
    def forge_calendar(weeks: int) -> list:
        return [{"week": w, "free": w not in (15, 16)} for w in range(12, 20)]

    @trajdebug.step(kind="other")
    def pick_start_week(calendar: list) -> int:
        free = [i for i, w in enumerate(calendar) if w["free"]]
        first = free[0]
        if MODE == "s4":
            first = 3
        return calendar[first]["week"]

    @trajdebug.step(kind="tool")
    def book_forge_time(week: int, stages: list, total_hours: int) -> dict:
        if week in (15, 16):
            raise RuntimeError(f"forge calendar: week {week} is already booked")
        order = [s["stage"] for s in stages]
        if order.index("quench") < order.index("forge"):
            raise ValueError("forge calendar rejects plan: quench scheduled before forge")
        return {"booking": f"F-{week}", "hours": total_hours}

    @trajdebug.step(kind="agent")
    def schedule_forge(spec: dict) -> dict:
        text = plan_stages([{"role": "user", "content": f"Plan the forging stages for a {spec['style']} of {spec['blade_cm']} cm"}])
        stages = [stage_hours(s, spec["blade_cm"]) for s in read_stages(text)]
        cal = forge_calendar(4)
        week = pick_start_week(cal)
        return book_forge_time(week, stages, sum(s["hours"] for s in stages))

    @trajdebug.step(kind="output")
    def commission_letter(form: dict, spec: dict, order: dict, booking: dict) -> str:
        assert spec["style"] == form["style"] and spec["blade_cm"] == form["blade_cm"], (
            f"letter for {form['commission']}: blade is {spec['style']} {spec['blade_cm']} cm, patron ordered {form['style']} {form['blade_cm']} cm")
        return f"{form['patron']}: your {form['style']} is booked ({booking['booking']}), steel {order['order']}."

    def agent(inp):
        form = commission_form(dict(inp))
        spec = sketch_blade(form["commission"])
        need = steel_needed(spec)
        with trajdebug.ContextThreadPoolExecutor(max_workers=3) as pool:
            quotes = list(pool.map(lambda s: supplier_quote(s, need["steel"]), list(SUPPLIERS)))
        choice = choose_supplier(quotes, need["steel"])
        order = order_steel(choice["supplier"], need["steel"], need["kg"])
        booking = schedule_forge(spec)
        commission_letter(form, spec, order, booking)

    return agent


def run(inp, server, path):
    from openai import OpenAI
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    agent = build(client, server.model)
    with trajdebug.run(NAME, task=f"commission {inp['commission']}", path=path):
        agent(inp)
