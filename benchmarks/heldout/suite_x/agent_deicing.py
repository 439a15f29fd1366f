"""Aircraft de-icing pad (route: langgraph): a LangGraph graph with ChatOpenAI, recorded by TrajdebugTracer."""
from __future__ import annotations

import json
import operator
import re
from contextlib import contextmanager
from typing import Annotated, TypedDict

from benchmarks.heldout.suite_x import kit

ROUTE = "langgraph"
NAME = "deicing-pad"

# reg: (type, wing_m2, tail_m2)
AIRCRAFT = {
    "EI-FMK": ("A320", 122.6, 21.5), "EI-DVL": ("B738", 124.6, 26.4), "G-EZUA": ("A319", 122.6, 20.0),
    "EI-FNJ": ("ATR72", 61.0, 12.5), "OE-LBT": ("A321", 122.6, 21.5), "EI-GXA": ("E195", 92.5, 18.0),
    "D-AIBL": ("A319", 122.6, 20.0), "EI-DEO": ("A320", 122.6, 21.5), "G-JZHK": ("B738", 124.6, 26.4),
}
METARS = {
    "w1": "EIDW 051650Z 27008KT 2000 -FZDZ BR OVC004 M07/M08 Q1012",
    "w2": "EIDW 060620Z 32005KT 9999 FEW020 M02/M04 Q1021",
    "w3": "EIDW 061810Z 09010KT 1500 -SN OVC006 M04/M05 Q1003",
    "w4": "EIDW 070540Z 00000KT 0800 FZFG VV002 M06/M06 Q1018",
    "w5": "EIDW 081300Z 22012KT 3000 -FZDZ OVC005 M02/M03 Q1009",
    "w6": "EIDW 090700Z 18006KT 4000 SN OVC008 M11/M12 Q0998",
    "w7": "EIDW 100615Z 35007KT 2500 -FZDZ OVC004 M12/M13 Q1015",
}
HOT = {  # fluid -> rows (band low OAT, band high OAT, minutes) for freezing drizzle / snow
    "typeIV": [(-3, 99, 40), (-10, -3, 20), (-14, -10, 15), (-25, -14, 10)],
    "typeI": [(-3, 99, 11), (-10, -3, 6), (-25, -10, 4)],
}
TRUCK_TANK_L = 1000


def _req(reg, obs):
    return {"reg": reg, "obs": obs, "slot": "taxi 12 min"}


REFS = [_req("EI-DVL", "w2"), _req("G-EZUA", "w3"), _req("EI-FNJ", "w1"), _req("OE-LBT", "w4")]
CASES = [
    dict(case="deicing_unit_error", fault_kind="unit_error", fault_id="deicing.specs",
         input=_req("EI-FMK", "w3"), root="aircraft_specs", marker="1320"),
    dict(case="deicing_truncated_result", fault_kind="truncated_result", fault_id="deicing.hot_page",
         input=_req("EI-GXA", "w7"), root="lookup_holdover", marker="(2 rows)"),
    dict(case="deicing_wrong_routing", fault_kind="wrong_routing", fault_id="deicing.route",
         input=_req("D-AIBL", "w5"), root="choose_treatment", marker="one_step"),
    dict(case="deicing_format_drift", fault_kind="format_drift", fault_id="deicing.model_keys",
         input=_req("EI-DEO", "w6"), root="ChatOpenAI", marker="Type IV"),
    dict(case="deicing_plan_error", fault_kind="plan_error", fault_id="deicing.model_order",
         input=_req("G-JZHK", "w4"), root="ChatOpenAI", marker="IV then I"),
]


def policy(request):
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    if system.startswith("Decode"):
        m = re.search(r" (M?\d\d)/M?\d\d ", user)
        oat = int(m.group(1).replace("M", "-"))
        wx = re.search(r"\d{4} (\S+)", user.split("KT", 1)[1]).group(1)
        return json.dumps({"oat_c": oat, "weather": wx})
    if system.startswith("Plan"):
        d = json.loads(user)
        area = d["wing_area_m2"] + d["tail_area_m2"]
        litres = {"typeI": round(area * 2.2), "typeIV": round(area * 1.4)}
        key1, key4 = ("Type I", "Type IV") if kit.active("deicing.model_keys") else ("typeI", "typeIV")
        seq = "IV then I" if kit.active("deicing.model_order") else "I then IV"
        return json.dumps({"sequence": seq, "litres": {key1: litres["typeI"], key4: litres["typeIV"]},
                           "mix_typeI": "55/45" if d["oat_c"] > -10 else "65/35"})
    d = json.loads(user)
    return f"{d['reg']}: de/anti-icing complete, {d['code']}. Advise when ready to taxi."


def _tools():
    from langchain_core.tools import tool

    @tool
    def fetch_metar(obs: str) -> str:
        """The latest METAR for the de-icing pad's airport."""
        return METARS[obs]

    @tool
    def aircraft_specs(reg: str) -> dict:
        """Type and surface areas of an aircraft from the fleet database."""
        typ, wing, tail = AIRCRAFT[reg]
        if kit.active("deicing.specs"):
            wing = round(wing * 10.764 / 10) * 10
        return {"reg": reg, "type": typ, "wing_area_m2": wing, "tail_area_m2": tail}

    @tool
    def lookup_holdover(fluid: str, weather: str) -> str:
        """Holdover-time table rows for a fluid in the given precipitation."""
        rows = HOT[fluid][:2] if kit.active("deicing.hot_page") else HOT[fluid]
        lines = [f"{lo} <= OAT < {hi}: {m} min" for lo, hi, m in rows]
        return f"HOT {fluid} {weather}\n" + "\n".join(lines) + f"\n({len(rows)} rows)"

    @tool
    def order_fluid(truck: str, fluid: str, litres: int) -> dict:
        """Dispatch a de-icing truck with an amount of fluid."""
        if litres > TRUCK_TANK_L:
            raise ValueError(f"truck dispatch 409: {litres} L of {fluid} exceeds the {TRUCK_TANK_L} L tank of {truck}")
        return {"truck": truck, "fluid": fluid, "litres": litres, "status": "dispatched"}

    @tool
    def spray_log(reg: str, fluid: str, litres: int) -> dict:
        """Record a fluid application in the treatment log."""
        return {"reg": reg, "fluid": fluid, "litres": litres, "logged": True}

    @tool
    def request_departure(reg: str, weather: str, oat_c: int, applied: list, holdover_min: int) -> dict:
        """Ask ground operations to release the aircraft for taxi."""
        freezing = "FZ" in weather or "SN" in weather
        fluids = [a["fluid"] for a in applied if a["litres"] > 0]
        if freezing and "typeIV" not in fluids:
            raise RuntimeError(f"ground ops refused release of {reg}: {weather} at {oat_c} C requires anti-icing; "
                               f"treatment record shows {', '.join(fluids) or 'no fluid'}")
        if freezing:
            published = next(m for lo, hi, m in HOT["typeIV"] if lo <= oat_c < hi)
            if holdover_min > published:
                raise RuntimeError(f"ground ops refused release of {reg}: holdover {holdover_min} min claimed, "
                                   f"published limit {published} min for typeIV in {weather} at {oat_c} C")
        return {"reg": reg, "released": True, "holdover_min": holdover_min}

    return fetch_metar, aircraft_specs, lookup_holdover, order_fluid, spray_log, request_departure


class S(TypedDict, total=False):
    reg: str
    obs: str
    slot: str
    weather: str
    oat_c: int
    treatment: str
    specs: dict
    plan: dict
    queue: list
    applied: Annotated[list, operator.add]
    holdover_min: int
    release: dict
    briefing: str


class Session:
    def __init__(self):
        from langchain_core.messages import HumanMessage, SystemMessage
        from langchain_openai import ChatOpenAI
        from langgraph.graph import END, START, StateGraph
        from trajdebug.testing import FakeModelServer

        self.server = FakeModelServer(policy, model="gpt-4o-mini").start()
        llm = ChatOpenAI(base_url=self.server.base_url, api_key="not-needed", model="gpt-4o-mini",
                         max_retries=0, temperature=0)
        fetch_metar, aircraft_specs, lookup_holdover, order_fluid, spray_log, request_departure = _tools()

        def ask(system, payload):
            return llm.invoke([SystemMessage(system), HumanMessage(payload)]).content

        def read_weather(s: S) -> dict:
            metar = fetch_metar.invoke({"obs": s["obs"]})
            d = json.loads(ask("Decode the METAR: answer JSON with oat_c and weather.", metar))
            return {"weather": d["weather"], "oat_c": d["oat_c"]}

        def choose_treatment(s: S) -> dict:
            wx = s["weather"]
            code = wx if kit.active("deicing.route") else wx.lstrip("+-")
            freezing = code.startswith("FZ") or code.startswith("SN")
            return {"treatment": "two_step" if freezing else "one_step"}

        def fetch_specs(s: S) -> dict:
            return {"specs": aircraft_specs.invoke({"reg": s["reg"]})}

        def plan_two_step(s: S) -> dict:
            payload = {**{k: s["specs"][k] for k in ("type", "wing_area_m2", "tail_area_m2")},
                       "oat_c": s["oat_c"], "weather": s["weather"]}
            text = ask("Plan a two-step de-icing/anti-icing treatment. Answer JSON: sequence, litres per fluid, mix.",
                       json.dumps(payload))
            plan = json.loads(text)
            order = ["typeIV", "typeI"] if plan["sequence"].startswith("IV") else ["typeI", "typeIV"]
            queue = [{"fluid": f, "litres": int(plan["litres"].get(f, 0))} for f in order]
            return {"plan": plan, "queue": queue}

        def plan_one_step(s: S) -> dict:
            area = s["specs"]["wing_area_m2"] + s["specs"]["tail_area_m2"]
            return {"plan": {"sequence": "I", "mix_typeI": "50/50"},
                    "queue": [{"fluid": "typeI", "litres": round(area * 2.2)}]}

        def apply_fluid(s: S) -> dict:
            item, rest = s["queue"][0], s["queue"][1:]
            if item["litres"] > 0:
                order_fluid.invoke({"truck": "DT-4", "fluid": item["fluid"], "litres": item["litres"]})
            logged = spray_log.invoke({"reg": s["reg"], "fluid": item["fluid"], "litres": item["litres"]})
            return {"queue": rest, "applied": [{"fluid": logged["fluid"], "litres": logged["litres"]}]}

        def more_fluid(s: S) -> str:
            return "apply_fluid" if s["queue"] else "verify_treatment"

        def verify_treatment(s: S) -> dict:
            fluids = [a["fluid"] for a in s["applied"] if a["litres"] > 0]
            if "typeIV" in fluids and fluids[-1] != "typeIV":
                raise ValueError(f"treatment log for {s['reg']}: typeI sprayed after typeIV; anti-icing layer "
                                 f"not intact, aircraft must be re-treated")
            return {}

        def holdover(s: S) -> dict:
            used = [a["fluid"] for a in s["applied"] if a["litres"] > 0]
            if not used:
                return {"holdover_min": 0}
            last = used[-1]
            table = lookup_holdover.invoke({"fluid": last, "weather": s["weather"]})
            rows = []
            for line in table.splitlines()[1:-1]:
                lo, hi, m = re.match(r"(-?\d+) <= OAT < (-?\d+): (\d+) min", line).groups()
                rows.append((int(lo), int(hi), int(m)))
            match = [m for lo, hi, m in rows if lo <= s["oat_c"] < hi]
            if not match:  # outside the listed bands: nearest band
                match = [min(rows, key=lambda r: min(abs(s["oat_c"] - r[0]), abs(s["oat_c"] - r[1])))[2]]
            return {"holdover_min": match[0]}

        def release(s: S) -> dict:
            return {"release": request_departure.invoke({
                "reg": s["reg"], "weather": s["weather"], "oat_c": s["oat_c"], "applied": s["applied"],
                "holdover_min": s["holdover_min"]})}

        def brief_crew(s: S) -> dict:
            code = "/".join(f"{a['fluid']}" for a in s["applied"] if a["litres"] > 0)
            return {"briefing": ask("Brief the flight crew on the treatment.",
                                    json.dumps({"reg": s["reg"], "code": f"{code}, HOT {s['holdover_min']} min"}))}

        g = StateGraph(S)
        for name, fn in [("read_weather", read_weather), ("choose_treatment", choose_treatment),
                         ("fetch_specs", fetch_specs), ("plan_two_step", plan_two_step),
                         ("plan_one_step", plan_one_step), ("apply_fluid", apply_fluid),
                         ("verify_treatment", verify_treatment), ("holdover", holdover), ("release", release),
                         ("brief_crew", brief_crew)]:
            g.add_node(name, fn)
        g.add_edge(START, "read_weather")
        g.add_edge("read_weather", "choose_treatment")
        g.add_edge("choose_treatment", "fetch_specs")
        g.add_conditional_edges("fetch_specs", lambda s: "plan_" + s["treatment"], ["plan_two_step", "plan_one_step"])
        g.add_edge("plan_two_step", "apply_fluid")
        g.add_edge("plan_one_step", "apply_fluid")
        g.add_conditional_edges("apply_fluid", more_fluid, ["apply_fluid", "verify_treatment"])
        g.add_edge("verify_treatment", "holdover")
        g.add_edge("holdover", "release")
        g.add_edge("release", "brief_crew")
        g.add_edge("brief_crew", END)
        self.graph = g.compile()

    def close(self):
        self.server.stop()


@contextmanager
def session():
    s = Session()
    try:
        yield s
    finally:
        s.close()


def record(sess: Session, path, request) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"de-ice {request['reg']} for departure")
    try:
        sess.graph.invoke(dict(request), config={"callbacks": [tracer], "recursion_limit": 40})
    except (ValueError, RuntimeError):
        pass
