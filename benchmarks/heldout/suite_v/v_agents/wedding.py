"""Wedding catering planner (route: sdk).

Pages through the RSVP export, parses it, tallies meals and dietary needs, plans the
round tables, seats each table (state), reserves the tables on the venue floor plan,
prints the seating chart, builds the kitchen order, has the model draft the caterer's
brief, and submits the kitchen order to the venue portal, which cross-checks the
RSVP forms.
"""

from __future__ import annotations

import csv
import io
import json
import re

from openai import OpenAI

import trajdebug
from benchmarks.heldout.suite_v import kit
from trajdebug.testing import FakeModelServer

NAME = "wedding-catering-planner"
ROUTE = "sdk"
DOMAIN = "wedding catering"
SHAPE = "paged RSVP fetch (a retried 503) + parse loop; tally; table plan; per-table seating written to run.state and read back; venue floor plan, seating chart; model drafts the caterer brief; kitchen order cross-checked by the venue portal"

FIRST = ["Amal", "Bea", "Cato", "Dinah", "Eben", "Fern", "Gus", "Hana", "Ivo", "Jun", "Kit", "Lior", "Mae", "Nils",
         "Odile", "Pim", "Quill", "Rosa", "Sol", "Tam", "Uma", "Vik", "Wren", "Xavi", "Yara", "Zed"]
LAST = ["Osei", "Brandt", "Lund", "Moreau", "Achebe", "Quist", "Halloran", "Vance", "Ibarra", "Tolle", "Sato"]
MEALS = ("beef", "fish", "veg", "vegan")
NOTES = ["", "", "", "nut allergy", "", "coeliac", "", "", "nut allergy, coeliac", "", "lactose", ""]
PAGE = 20


def event(no: int, guests: int) -> dict:
    rows = []
    for i in range(guests):
        name = f"{FIRST[(i * 7 + no) % len(FIRST)]} {LAST[(i * 3 + no * 5) % len(LAST)]}-{i + 1}"
        rows.append({"name": name, "meal": MEALS[(i * 5 + no) % 4], "notes": NOTES[(i + no) % len(NOTES)]})
    return {"event": f"WED-{no}", "venue": "Rookery Barn", "guests": rows}


REFS = [event(301, 44), event(302, 31), event(303, 57), event(304, 38)]

CASES = [
    {"fault": "wedding.rsvp_page", "kind": "truncated_result", "root": "fetch_rsvp_page",
     "marker": '"page": 2, "row_count": 12', "input": event(311, 52)},
    {"fault": "wedding.rsvp_split", "kind": "lossy_parsing", "root": "parse_rsvps",
     "marker": None, "input": event(312, 46)},
    {"fault": "wedding.seat_buffer", "kind": "bad_memory_write", "root": "seat_table",
     "marker": None, "input": event(313, 48)},
    {"fault": "wedding.vegan_count", "kind": "hallucinated_value", "root": "draft_caterer_brief",
     "marker": None, "input": event(314, 41)},
    {"fault": "wedding.table_count", "kind": "off_by_one", "root": "plan_tables",
     "marker": '"tables": 5,', "input": event(315, 57)},
]


def _setup() -> None:
    x = next(g for g in CASES[1]["input"]["guests"] if g["notes"] == "nut allergy, coeliac")
    CASES[1]["marker"] = f'"name": "{x["name"]}", "meal": "{x["meal"]}", "notes": "nut allergy"}}'
    g = CASES[2]["input"]["guests"]
    CASES[2]["marker"] = f'"table": 3, "guests": ["{g[19]["name"]}"'
    vegan = sum(1 for x in CASES[3]["input"]["guests"] if x["meal"] == "vegan")
    CASES[3]["marker"] = f"vegan {vegan + 3}"


_setup()


def policy(request) -> str:
    messages = request.body["messages"]
    if messages[0]["content"].startswith("You write the caterer's brief"):
        facts = json.loads(messages[-1]["content"].split("\n", 1)[1])
        meals = dict(facts["meals"])
        if kit.active("wedding.vegan_count"):
            meals["vegan"] += 3
        return (f"Caterer brief for {facts['event']} at {facts['venue']}: {facts['covers']} covers on "
                f"{facts['tables']} round tables. Mains: " + ", ".join(f"{k} {v}" for k, v in meals.items())
                + f". Dietary: gluten-free {facts['gluten_free']}, nut-free {facts['nut_free']}. Service 18:00.")
    return "I cannot help with that."


class Harness:
    def __enter__(self):
        self.server = FakeModelServer(policy, model="banquet-writer-3").__enter__()
        self.client = OpenAI(base_url=self.server.base_url, api_key="not-needed", max_retries=0)
        return self

    def __exit__(self, *exc):
        self.server.__exit__(*exc)

    def record(self, inp: dict, path) -> None:
        try:
            run_agent(self.client, inp, str(path))
        except Exception:
            pass


def run_agent(client, inp: dict, path: str) -> None:
    guests = inp["guests"]

    @trajdebug.step(kind="input")
    def intake(request: dict) -> dict:
        return {"event": request["event"], "venue": request["venue"]}

    @trajdebug.step(kind="tool")
    def fetch_rsvp_page(event_id: str, page: int, attempt: int = 1) -> dict:
        if page == 1 and attempt == 1:
            raise ConnectionError("RSVP service: 503 Service Unavailable (retry after 1 s)")
        rows = guests[(page - 1) * PAGE : page * PAGE]
        more = page * PAGE < len(guests)
        if kit.active("wedding.rsvp_page") and page == 2:
            rows, more = rows[:12], False
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        for r in rows:
            w.writerow([r["name"], r["meal"], r["notes"]])
        return {"page": page, "row_count": len(rows), "csv": buf.getvalue(), "next_page": page + 1 if more else None}

    @trajdebug.step(kind="parse")
    def parse_rsvps(page: dict) -> list[dict]:
        out = []
        for line in page["csv"].splitlines():
            if kit.active("wedding.rsvp_split"):
                parts = line.split(",")
                out.append({"name": parts[0], "meal": parts[1], "notes": parts[2].strip('"')})
            else:
                name, meal, notes = next(csv.reader([line]))
                out.append({"name": name, "meal": meal, "notes": notes})
        return out

    @trajdebug.step(kind="other")
    def tally(rows: list[dict]) -> dict:
        meals = {m: sum(1 for r in rows if r["meal"] == m) for m in MEALS}
        return {"covers": len(rows), "meals": meals,
                "gluten_free": sum(1 for r in rows if "coeliac" in r["notes"]),
                "nut_free": sum(1 for r in rows if "nut" in r["notes"])}

    @trajdebug.step(kind="other")
    def plan_tables(rows: list[dict]) -> dict:
        n = len(rows)
        tables = n // 10 if kit.active("wedding.table_count") else (n + 9) // 10
        plan = {t + 1: [] for t in range(tables)}
        per = -(-n // tables)
        for i, r in enumerate(rows):
            plan[i // per + 1].append(r["name"])
        return {"tables": tables, "seats_per_table": 10, "plan": plan}

    @trajdebug.step(kind="state")
    def seat_table(table: int, names: list[str], rows: list[dict]) -> dict:
        state = trajdebug.current_run().state
        names = list(names)
        if table == 3 and kit.active("wedding.seat_buffer"):
            prev = state["table:2"]["guests"]
            names = [prev[-1]] + names[1:]
        by = {r["name"]: r for r in rows}
        rec = {"table": table, "guests": names, "meals": {m: sum(1 for x in names if by[x]["meal"] == m) for m in MEALS}}
        state[f"table:{table}"] = rec
        return rec

    @trajdebug.step(kind="tool")
    def reserve_tables(venue: str, plan: dict) -> dict:
        for t, names in plan["plan"].items():
            if len(names) > 10:
                raise RuntimeError(f"{venue} floor plan: round table T{t} seats 10, {len(names)} guests assigned")
        return {"venue": venue, "reserved": [f"T{t}" for t in plan["plan"]]}

    @trajdebug.step(kind="tool")
    def print_seating_chart(event_id: str, tables: int) -> dict:
        state = trajdebug.current_run().state
        seen: dict[str, int] = {}
        for t in range(1, tables + 1):
            for g in state[f"table:{t}"]["guests"]:
                if g in seen:
                    raise RuntimeError(f"seating chart service: {g} appears at tables {seen[g]} and {t}")
                seen[g] = t
        return {"event": event_id, "chart": f"chart-{event_id}.pdf", "names": len(seen)}

    @trajdebug.step(kind="other")
    def kitchen_order(tables: int, totals: dict) -> dict:
        state = trajdebug.current_run().state
        meals = {m: sum(state[f"table:{t}"]["meals"][m] for t in range(1, tables + 1)) for m in MEALS}
        return {"covers": sum(meals.values()), "meals": meals, "gluten_free": totals["gluten_free"],
                "nut_free": totals["nut_free"], "tables": tables}

    @trajdebug.step(kind="parse")
    def parse_brief(text: str) -> dict:
        meals = {m: int(re.search(rf"{m} (\d+)", text).group(1)) for m in MEALS}
        return {"covers": int(re.search(r"(\d+) covers", text).group(1)), "meals": meals,
                "gluten_free": int(re.search(r"gluten-free (\d+)", text).group(1))}

    @trajdebug.step(kind="tool")
    def submit_kitchen_order(event_id: str, brief: dict) -> dict:
        forms = {"covers": len(guests), "meals": {m: sum(1 for g in guests if g["meal"] == m) for m in MEALS},
                 "gluten_free": sum(1 for g in guests if "coeliac" in g["notes"])}
        if brief["covers"] != forms["covers"]:
            raise RuntimeError(f"venue portal: kitchen order covers {brief['covers']} guests, "
                               f"{forms['covers']} RSVPs confirmed")
        for m in MEALS:
            if brief["meals"][m] != forms["meals"][m]:
                raise RuntimeError(f"venue portal: kitchen order lists {brief['meals'][m]} {m} mains, "
                                   f"the RSVP forms {forms['meals'][m]}")
        if brief["gluten_free"] != forms["gluten_free"]:
            raise RuntimeError(f"venue portal: {brief['gluten_free']} gluten-free covers ordered, "
                               f"{forms['gluten_free']} guests declared coeliac on their RSVP forms")
        return {"event": event_id, "order": f"KO-{event_id[4:]}", "status": "accepted"}

    @trajdebug.step(kind="output")
    def final_summary(order: dict, chart: dict) -> str:
        return f"{order['event']}: kitchen order {order['order']} accepted, seating chart {chart['chart']}"

    with trajdebug.run(NAME, path=path, task=f"catering numbers for {inp['event']} at {inp['venue']}"):
        req = intake(inp)
        rows: list[dict] = []
        page = 1
        while page:
            try:
                p = fetch_rsvp_page(req["event"], page)
            except ConnectionError:
                p = fetch_rsvp_page(req["event"], page, attempt=2)
            rows += parse_rsvps(p)
            page = p["next_page"]
        totals = tally(rows)
        plan = plan_tables(rows)
        for t, names in plan["plan"].items():
            seat_table(t, names, rows)
        reserve_tables(req["venue"], plan)
        chart = print_seating_chart(req["event"], plan["tables"])
        order = kitchen_order(plan["tables"], totals)
        messages = [{"role": "system", "content": "You write the caterer's brief from the kitchen order."},
                    {"role": "user", "content": "Facts:\n" + json.dumps({"event": req["event"], "venue": req["venue"], **order})}]
        with trajdebug.step("draft_caterer_brief", kind="llm", input={"messages": messages}) as s:
            r = client.chat.completions.create(model="banquet-writer-3", messages=messages)
            text = r.choices[0].message.content
            s.output = {"role": "assistant", "content": text}
            s.usage(model=r.model, prompt_tokens=r.usage.prompt_tokens, completion_tokens=r.usage.completion_tokens)
        brief = parse_brief(text)
        accepted = submit_kitchen_order(req["event"], brief)
        final_summary(accepted, chart)
