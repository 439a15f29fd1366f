"""Maple sugarhouse boil planner (route: sdk).

Collects sap along the sugarbush lines, reads tank gauges and sugar content,
reconciles the receipt with the release flowmeter, plans evaporator batches,
boils, checks the draw-off against what the sap sugar predicts, and books the
bottling line for the day's lot.
"""

from __future__ import annotations

import json
import re

from openai import OpenAI

import trajdebug
from benchmarks.heldout.suite_v import kit
from trajdebug.testing import FakeModelServer

NAME = "sugarhouse-boil-planner"
ROUTE = "sdk"
DOMAIN = "maple sugarhouse"
SHAPE = "model plans the collection route; loop over lines (gauge, lab report, parse, state write); reconcile; batch loop (fire, draw-off); model summary; own checks; bottling booking"

GALLON = 3.78541
EVAP_CAPACITY = 1800.0  # litres of sap per evaporator batch


def day(d: int, n: int) -> dict:
    lines = []
    for i in range(n):
        lid = f"L{i + 1}"
        litres = float(520 + (i * 173 + d * 61) % 640)
        brix = round(2.04 + ((i * 37 + d * 19) % 150) / 100, 2)
        if brix * 100 % 10 == 0:
            brix = round(brix + 0.03, 2)
        model = "Lapierre-G" if i == 1 else "CDL-M"
        if model == "Lapierre-G":  # gauge counts US gallons: keep volumes whole gallons
            litres = round(round(litres / GALLON) * GALLON, 1)
        lab = "field" if i == n - 3 else "lab"
        lines.append({"line": lid, "tank": f"T{i + 1}", "model": model, "litres": litres, "brix": brix, "lab": lab})
    return {"day": f"2026-03-{d:02d}", "lot": f"SH-03{d:02d}-A", "lines": lines}


REFS = [day(9, 6), day(10, 7), day(11, 6), day(12, 8)]

CASES = [
    {"fault": "sugarhouse.gauge_units", "kind": "unit_error", "root": "read_tank_gauge",
     "marker": None, "input": day(14, 7)},
    {"fault": "sugarhouse.lab_parse", "kind": "lossy_parsing", "root": "parse_lab_report",
     "marker": None, "input": day(15, 7)},
    {"fault": "sugarhouse.tank_record", "kind": "bad_memory_write", "root": "record_line",
     "marker": None, "input": day(16, 6)},
    {"fault": "sugarhouse.batches", "kind": "off_by_one", "root": "plan_batches",
     "marker": None, "input": day(17, 8)},
    {"fault": "sugarhouse.lot_code", "kind": "hallucinated_value", "root": "summarize_day",
     "marker": None, "input": day(18, 6)},
]


def _distance(line: str) -> float:
    return round(1.2 + (int(line[1:]) * 7 % 5) * 0.8, 1)


def _markers() -> None:
    c = CASES
    c[1]["input"]["lines"][-3].update(brix=2.96, litres=1150.0)
    g = c[0]["input"]["lines"][1]
    c[0]["marker"] = f'"litres": {round(g["litres"] / GALLON, 1)}'
    c[1]["marker"] = '"brix": 2.0,' if c[1]["input"]["lines"][-3]["brix"] < 3 else '"brix": 3.0,'
    ls = c[2]["input"]["lines"]
    order = sorted(ls, key=lambda x: (-_distance(x["line"]), x["line"]))
    c[2]["marker"] = f'"line": "{order[-1]["line"]}", "tank": "{order[-2]["tank"]}"'
    ls = sorted(c[3]["input"]["lines"], key=lambda x: (-_distance(x["line"]), x["line"]))
    c[3]["marker"] = f'"planned_litres": {round(sum(x["litres"] for x in ls[:-1]), 1)}'
    c[4]["marker"] = "SH-0381-A"


_markers()


# -- the scripted model --------------------------------------------------------------------

def policy(request) -> str:
    messages = request.body["messages"]
    system = messages[0]["content"]
    user = messages[-1]["content"]
    if system.startswith("You plan sap collection"):
        roster = json.loads(user.split("\n", 1)[1])
        order = sorted(roster, key=lambda r: (-r["distance_km"], r["line"]))
        return "route: " + ">".join(r["line"] for r in order) + "\nreason: farthest lines first while the road is frozen"
    if system.startswith("You write the sugarhouse day summary"):
        facts = json.loads(user.split("\n", 1)[1])
        lot = facts["lot"]
        if kit.active("sugarhouse.lot_code"):
            lot = lot[:5] + lot[6] + lot[5] + lot[7:]
        return (
            f"Lot {lot} boiled on {facts['day']}: {facts['expected_syrup_l']} L of syrup expected from "
            f"{facts['sap_l']} L of sap at {facts['mean_brix']} Brix. Grade target: Amber Rich."
        )
    return "I cannot help with that."


# -- the agent -----------------------------------------------------------------------------

class World:
    def __init__(self, inp: dict) -> None:
        self.inp = inp
        self.lines = {x["line"]: x for x in inp["lines"]}
        self.drained: dict[str, str] = {}


class Harness:
    def __enter__(self):
        self.server = FakeModelServer(policy, model="sugar-planner-1").__enter__()
        self.client = OpenAI(base_url=self.server.base_url, api_key="not-needed", max_retries=0)
        return self

    def __exit__(self, *exc):
        self.server.__exit__(*exc)

    def record(self, inp: dict, path) -> None:
        try:
            run_agent(self.client, World(inp), str(path))
        except Exception:
            pass


def chat(client, name: str, system: str, user: str) -> str:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    with trajdebug.step(name, kind="llm", input={"messages": messages}) as s:
        r = client.chat.completions.create(model="sugar-planner-1", messages=messages)
        text = r.choices[0].message.content
        s.output = {"role": "assistant", "content": text}
        s.usage(model=r.model, prompt_tokens=r.usage.prompt_tokens if r.usage else 0,
                completion_tokens=r.usage.completion_tokens if r.usage else 0)
    return text


def run_agent(client, world: World, path: str) -> None:
    inp = world.inp
    with trajdebug.run(NAME, path=path, task=f"plan the boil of {inp['day']}, lot {inp['lot']}") as run:

        @trajdebug.step(kind="input")
        def intake(request: dict) -> dict:
            return dict(request)

        @trajdebug.step(kind="tool")
        def fetch_line_roster(day: str) -> list[dict]:
            return [{"line": x["line"], "tank": x["tank"], "gauge_model": x["model"],
                     "distance_km": _distance(x["line"])}
                    for x in world.inp["lines"]]

        @trajdebug.step(kind="parse")
        def parse_route(text: str) -> list[str]:
            m = re.search(r"route:\s*([A-Z0-9>]+)", text)
            if not m:
                raise ValueError("no route in the plan")
            return m.group(1).split(">")

        @trajdebug.step(kind="tool")
        def read_tank_gauge(tank: str, gauge_model: str) -> dict:
            line = next(x for x in world.lines.values() if x["tank"] == tank)
            if gauge_model == "Lapierre-G":
                raw = round(line["litres"] / GALLON, 1)  # the gauge's head unit counts US gallons
                litres = raw if kit.active("sugarhouse.gauge_units") else round(raw * GALLON, 1)
            else:
                litres = line["litres"]
            return {"tank": tank, "litres": litres, "unit": "L", "read_at": "06:5" + tank[-1]}

        @trajdebug.step(kind="tool")
        def fetch_lab_report(line_id: str) -> str:
            x = world.lines[line_id]
            if x["lab"] == "field":
                return f"refractometre {line_id} sucre {str(x['brix']).replace('.', ',')} Bx (relevé 06:40)"
            return f"LAB-REPORT line={line_id} brix={x['brix']:.2f} temp_c=3.1"

        @trajdebug.step(kind="parse")
        def parse_lab_report(line_id: str, text: str) -> dict:
            if kit.active("sugarhouse.lab_parse"):
                m = re.search(r"(?:brix=|sucre )([\d.]+)", text)
                value = float(m.group(1))
            else:
                m = re.search(r"(?:brix=|sucre )([\d.,]+)", text)
                value = float(m.group(1).replace(",", "."))
            return {"line": line_id, "brix": value, "source": "field" if "sucre" in text else "lab"}

        @trajdebug.step(kind="state")
        def record_line(line_id: str, tank: str, gauge: dict, lab: dict, last: bool) -> dict:
            state = trajdebug.current_run().state
            if last and kit.active("sugarhouse.tank_record"):
                tank = state[f"line:{state['collected'][-1]}"]["tank"]
            rec = {"line": line_id, "tank": tank, "litres": gauge["litres"], "brix": lab["brix"]}
            state[f"line:{line_id}"] = rec
            state["collected"] = list(state.get("collected", [])) + [line_id]
            return rec

        @trajdebug.step(kind="tool")
        def flowmeter_total(day: str) -> dict:
            total = sum(x["litres"] for x in world.lines.values())
            return {"day": day, "litres": round(total * 1.003, 1), "meter": "FM-2"}

        @trajdebug.step(kind="condition")
        def reconcile_sap(flow: dict) -> dict:
            state = trajdebug.current_run().state
            gauges = sum(state[f"line:{lid}"]["litres"] for lid in state["collected"])
            gap = abs(gauges - flow["litres"]) / flow["litres"]
            if gap > 0.015:
                raise ValueError(
                    f"sap receipt does not balance: tank gauges sum to {gauges:,.0f} L, "
                    f"release flowmeter {flow['meter']} logged {flow['litres']:,.0f} L"
                )
            return {"gauges_l": round(gauges, 1), "flowmeter_l": flow["litres"], "gap": round(gap, 4)}

        @trajdebug.step(kind="other")
        def plan_batches() -> dict:
            state = trajdebug.current_run().state
            recs = [state[f"line:{lid}"] for lid in state["collected"]]
            n = len(recs) - 1 if kit.active("sugarhouse.batches") else len(recs)
            batches, cur = [], {"tanks": [], "litres": 0.0}
            for i in range(n):
                r = recs[i]
                if cur["tanks"] and cur["litres"] + r["litres"] > EVAP_CAPACITY:
                    batches.append(cur)
                    cur = {"tanks": [], "litres": 0.0}
                cur["tanks"].append(r["tank"])
                cur["litres"] = round(cur["litres"] + r["litres"], 1)
            batches.append(cur)
            for i, b in enumerate(batches):
                b["batch"] = f"B{i + 1}"
            planned = round(sum(recs[i]["litres"] for i in range(n)), 1)
            state["batches"] = batches
            return {"batches": batches, "planned_litres": planned}

        @trajdebug.step(kind="tool")
        def fire_evaporator(batch: dict) -> dict:
            for t in batch["tanks"]:
                if t in world.drained:
                    raise RuntimeError(
                        f"valve controller refused release: tank {t} was already drained by batch {world.drained[t]}"
                    )
                world.drained[t] = batch["batch"]
            return {"batch": batch["batch"], "pan": "EV-1", "fired": True, "tanks": list(batch["tanks"])}

        @trajdebug.step(kind="tool")
        def draw_off(batch_id: str) -> dict:
            tanks = [t for t, b in world.drained.items() if b == batch_id]
            syrup = 0.0
            for x in world.lines.values():
                if x["tank"] in tanks:
                    syrup += x["litres"] * x["brix"] / 86.0
            return {"batch": batch_id, "syrup_l": round(syrup * 1.01, 1), "density_bx": 66.4}

        @trajdebug.step(kind="tool")
        def verify_tanks_empty(day: str) -> dict:
            for x in world.lines.values():
                if x["tank"] not in world.drained:
                    raise RuntimeError(
                        f"release valve interlock: tank {x['tank']} still holds {x['litres']:.0f} L "
                        f"after the boil of {day} was closed"
                    )
            return {"day": day, "tanks_empty": len(world.lines)}

        @trajdebug.step(kind="other")
        def compute_yield() -> dict:
            state = trajdebug.current_run().state
            recs = [state[f"line:{lid}"] for lid in state["collected"]]
            sap = sum(r["litres"] for r in recs)
            syrup = sum(r["litres"] * r["brix"] / 86.0 for r in recs)
            return {"sap_l": round(sap, 1), "expected_syrup_l": round(syrup, 1),
                    "mean_brix": round(sum(r["litres"] * r["brix"] for r in recs) / sap, 2)}

        @trajdebug.step(kind="parse")
        def parse_summary(text: str) -> dict:
            lot = re.search(r"Lot (SH-\d{4}-[A-Z])", text).group(1)
            litres = float(re.search(r"([\d.]+) L of syrup", text).group(1))
            return {"lot": lot, "syrup_l": litres}

        @trajdebug.step(kind="condition")
        def check_draw_off(expected: dict, drawn: list[dict]) -> dict:
            total = round(sum(d["syrup_l"] for d in drawn), 1)
            dev = (total - expected["syrup_l"]) / expected["syrup_l"]
            if abs(dev) > 0.03:
                raise ValueError(
                    f"draw-off {total} L is {dev:+.1%} off the {expected['syrup_l']} L the sap sugar predicts; "
                    "hydrometer check required before bottling"
                )
            return {"drawn_l": total, "deviation": round(dev, 4)}

        @trajdebug.step(kind="tool")
        def book_bottling(lot: str, syrup_l: float, day: str) -> dict:
            if lot != world.inp["lot"]:
                raise RuntimeError(f"bottling line API 409: lot {lot} is not open for {day}")
            return {"lot": lot, "drums": int(syrup_l // 200) + 1, "slot": f"{day}T13:00"}

        @trajdebug.step(kind="output")
        def final_report(booking: dict, check: dict) -> str:
            return f"Lot {booking['lot']}: {check['drawn_l']} L drawn, {booking['drums']} drums booked for {booking['slot']}"

        req = intake({"day": inp["day"], "lot": inp["lot"], "lines": [x["line"] for x in inp["lines"]]})
        roster = fetch_line_roster(req["day"])
        plan = chat(client, "plan_collection",
                    "You plan sap collection routes for the sugarhouse truck. Answer 'route: A>B>...' and a reason.",
                    "Roster:\n" + json.dumps([{"line": r["line"], "distance_km": r["distance_km"]} for r in roster]))
        route = parse_route(plan)
        by_line = {r["line"]: r for r in roster}
        for i, lid in enumerate(route):
            r = by_line[lid]
            gauge = read_tank_gauge(r["tank"], r["gauge_model"])
            text = fetch_lab_report(lid)
            lab = parse_lab_report(lid, text)
            record_line(lid, r["tank"], gauge, lab, i == len(route) - 1)
        flow = flowmeter_total(req["day"])
        reconcile_sap(flow)
        batches = plan_batches()["batches"]
        drawn = []
        for b in batches:
            fire_evaporator(b)
            drawn.append(draw_off(b["batch"]))
        verify_tanks_empty(req["day"])
        y = compute_yield()
        facts = {"day": req["day"], "lot": req["lot"], **y}
        summary = chat(client, "summarize_day",
                       "You write the sugarhouse day summary for the bottling desk.",
                       "Facts:\n" + json.dumps(facts))
        parsed = parse_summary(summary)
        check = check_draw_off(parsed, drawn)
        booking = book_bottling(parsed["lot"], parsed["syrup_l"], req["day"])
        final_report(booking, check)
