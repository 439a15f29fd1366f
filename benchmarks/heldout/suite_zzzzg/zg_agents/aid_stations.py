"""aid-station-planner: a road-race organiser's aid-station supply agent (a LangGraph StateGraph).

The race brief comes in; the course node reads the station registry page by page and retrieves the
course notes; the forecast and the sweat-rate table give the water per station (the estimate node's own
arithmetic); the planner model calls station_supplies for every station at once (parallel tool calls
through a ToolNode); a second model call writes the plan as JSON, which a parser reads; supplies are
ordered, volunteers assigned, and a final check compares the plan with the race brief.
"""

from __future__ import annotations

import json
import math
import operator
import re
from typing import Annotated, Any, TypedDict

from .common import messages, system_text, tagged_json, tool_results


NAME = "aid-station-planner"
ROUTE = "langgraph"
DOMAIN = "road races: aid-station water, cups and volunteers"
SHAPE = "LangGraph: paginated registry tool, retriever, forecast tool, node arithmetic, model with parallel tool calls (ToolNode), JSON parser, order and volunteer tools, final check node"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


RACES = {
    "HM-25": {"name": "Lakeside Half Marathon", "city": "Lakeside", "stations": [3.0, 5.5, 8.0, 10.5, 13.0, 15.5, 18.0, 20.2]},
    "OT-10": {"name": "Old Town 10K", "city": "Lakeside", "stations": [3.3, 6.6, 9.0]},
    "RM-42": {"name": "Riverside Marathon", "city": "Riverton",
              "stations": [5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 37.5, 40.0]},
    "HT-25": {"name": "Hill Trail 25K", "city": "Brackenfell", "stations": [6.0, 12.5, 19.0]},
    "NR-15": {"name": "Lakeside Night Run 15K", "city": "Lakeside", "stations": [4.0, 8.0, 12.0]},
}

NOTES = [
    {"id": "notes-HM-25", "race": "HM-25", "text": "Lakeside Half Marathon course notes: loop of the lake, "
     "aid station at km 3.0, 5.5, 8.0, 10.5, 13.0, 15.5, 18.0 and 20.2; hydrants at 5.5 and 13.0."},
    {"id": "debrief-HM-25", "race": "HM-25", "text": "Lakeside Half Marathon debrief 2024: km 15.5 ran short of "
     "cups at 10:40; bring spare sleeves."},
    {"id": "notes-OT-10", "race": "OT-10", "text": "Old Town 10K course notes: cobbles in the old town, water "
     "from the fountain at km 3.3; aid station at km 6.6 shares the park gate with the Night Run."},
    {"id": "notes-RM-42", "race": "RM-42", "text": "Riverside Marathon course notes: out and back on the river "
     "path, aid station every 5 km plus km 37.5 at the bridge."},
    {"id": "notes-HT-25", "race": "HT-25", "text": "Hill Trail 25K course notes: three climbs, aid station at km "
     "6.0, 12.5 and 19.0, vehicle access only at 12.5."},
    {"id": "notes-NR-15", "race": "NR-15", "text": "Lakeside Night Run 15K course notes: head torches required, "
     "aid station at km 4.0, 8.0 and 12.0 by the park gate."},
]

FORECAST = {"2025-05-04": 17, "2025-05-11": 14, "2025-06-01": 22, "2025-06-08": 19, "2025-06-14": 12}
SWEAT_ML = {"cool": 150, "mild": 200, "warm": 300}
SUPPLIER_CAP_L = 40000
CUPS_PER_SLEEVE = 50
PAGE_SIZE = 6

INPUTS = [
    {"race_id": "HM-25", "date": "2025-05-04", "runners": 8500, "start": "08:30", "stations_expected": 8},
    {"race_id": "OT-10", "date": "2025-05-11", "runners": 4200, "start": "09:00", "stations_expected": 3},
    {"race_id": "RM-42", "date": "2025-06-01", "runners": 12000, "start": "07:30", "stations_expected": 9},
    {"race_id": "HT-25", "date": "2025-06-08", "runners": 1100, "start": "08:00", "stations_expected": 3},
    {"race_id": "NR-15", "date": "2025-06-14", "runners": 3000, "start": "21:00", "stations_expected": 3},
]

CASES = [
    {"id": "aid_stations_1", "switch": "litres", "input": 0, "kind": "unit_error",
     "root": ("estimate_fluids", 1), "failure": ("order_supplies", 1),
     "description": "estimate_fluids divides the millilitres per runner by 100 instead of 1000, so each "
                    "station gets 17,000 L and the water order of 136,000 L exceeds the supplier's 40,000 L cap."},
    {"id": "aid_stations_2", "switch": "registry_page", "input": 2, "kind": "truncated_result",
     "root": ("list_stations", 1), "failure": ("check_plan", 1),
     "description": "the station registry answers the first page of 6 stations with no next page, so the "
                    "plan covers 6 of the marathon's 9 stations and the final check refuses it."},
    {"id": "aid_stations_3", "switch": "runner_count", "input": 1, "kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 1), "failure": ("check_plan", 1),
     "description": "the planner model calls station_supplies for km 6.6 with 420 runners instead of 4,200, "
                    "so that station gets 550 cups and the final check finds fewer cups than runners."},
    {"id": "aid_stations_4", "switch": "decimal_comma", "input": 3, "kind": "lossy_parsing",
     "root": ("SupplyPlanParser", 1), "failure": ("check_plan", 1),
     "description": "SupplyPlanParser reads the thousands separator in \"1,350\" cups as a decimal comma and "
                    "keeps 1 cup per station, which the final check finds below the 1,100 runners."},
    {"id": "aid_stations_5", "switch": "notes_k", "input": 4, "kind": "context_pollution",
     "root": ("CourseNotes", 1), "failure": ("assign_volunteers", 2),
     "description": "the course-notes retriever also returns the Old Town 10K's notes, the planner adds that "
                    "race's km 6.6 station to the Night Run, and the volunteer pool has no such station on NR-15."},
]


# --------------------------------------------------------------------------- the model's behaviour

def brain(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    system = system_text(request)
    msgs = messages(request)
    user = next(m["content"] for m in msgs if m["role"] == "user")
    if system.startswith("You plan aid-station supplies"):
        done = tool_results(request)
        if done:
            return "Supplies worked out for every station; ready to write the plan."
        race = tagged_json(user, "RACE")
        registry = tagged_json(user, "STATIONS")
        notes = tagged_json(user, "NOTES")
        water = tagged_json(user, "WATER_L_PER_STATION")
        kms = {float(s["km"]) for s in registry}
        for text in notes:  # the model also takes stations the notes mention
            m = re.search(r"aid station at km ([\d., and]+)", text)
            if m:
                kms |= {float(x) for x in re.findall(r"\d+\.\d", m.group(1))}
        calls = []
        for km in sorted(kms):
            runners = race["runners"]
            if _on("runner_count") and km == 6.6:
                runners = runners // 10
            calls.append(tool_call("station_supplies", {"station_km": km, "runners": runners, "water_l": water}))
        return Reply(tool_calls=tuple(calls))
    if system.startswith("You write the supply plan"):
        rows = [r for n, r in tool_results(request) if n == "station_supplies"]
        plan = {"stations": [{"km": f"{r['km']:.1f}", "cups": f"{r['cups']:,}", "water_l": f"{r['water_l']:,}",
                              "sleeves": r["sleeves"]} for r in rows]}
        return json.dumps(plan)
    return "I only plan aid stations."


# --------------------------------------------------------------------------- the graph

class PlanState(TypedDict, total=False):
    race: dict
    stations: list
    notes: list
    forecast: dict
    water_l_per_station: float
    messages: Annotated[list, operator.add]
    plan: dict
    order: dict
    crews: dict


_GRAPH: Any = None
_SERVER_URL: str | None = None


def _build(server: Any) -> Any:
    from langchain_core.documents import Document
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph
    from langgraph.prebuilt import ToolNode

    @tool
    def list_stations(race_id: str, page: int) -> dict:
        """The official aid-station registry of a race, one page at a time."""
        kms = RACES[race_id]["stations"]
        chunk = kms[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]
        more = page * PAGE_SIZE < len(kms)
        if _on("registry_page"):
            more = False  # the registry's cursor expired after the first page
        rows = [{"km": km, "code": f"{race_id}-S{(page - 1) * PAGE_SIZE + i + 1}"} for i, km in enumerate(chunk)]
        return {"race_id": race_id, "page": page, "stations": rows, "next_page": page + 1 if more else None}

    @tool
    def weather_forecast(city: str, date: str) -> dict:
        """The race-morning forecast."""
        t = FORECAST[date]
        return {"city": city, "date": date, "temp_c": t, "band": "cool" if t < 15 else ("mild" if t < 20 else "warm")}

    @tool
    def sweat_rate_table(band: str) -> dict:
        """Water drunk per runner at one station, by temperature band."""
        return {"band": band, "ml_per_runner": SWEAT_ML[band]}

    @tool
    def station_supplies(station_km: float, runners: int, water_l: float) -> dict:
        """Cups, sleeves and water for one aid station."""
        sleeves = math.ceil(runners * 1.2 / CUPS_PER_SLEEVE)
        return {"km": station_km, "runners": runners, "cups": sleeves * CUPS_PER_SLEEVE, "sleeves": sleeves,
                "water_l": water_l}

    @tool
    def order_supplies(race_id: str, water_l: float, cups: int) -> dict:
        """Order water and cups from the event supplier."""
        if water_l > SUPPLIER_CAP_L:
            raise ValueError(f"water order of {water_l:,.0f} L for {race_id} exceeds the supplier's "
                             f"{SUPPLIER_CAP_L:,} L per event")
        return {"race_id": race_id, "po": f"PO-{race_id}-{int(water_l)}", "water_l": water_l, "cups": cups}

    @tool
    def assign_volunteers(race_id: str, station_km: float, runners: int) -> dict:
        """A volunteer crew for one station from the volunteer pool."""
        if station_km not in RACES[race_id]["stations"]:
            raise LookupError(f"volunteer pool has no aid station at km {station_km} on course {race_id}")
        per = max(4, math.ceil(runners / 400))
        return {"race_id": race_id, "station_km": station_km, "crew": per,
                "lead": f"{race_id}-L{RACES[race_id]['stations'].index(station_km) + 1}"}

    class CourseNotes(BaseRetriever):
        race_id: str
        k: int = 2

        def _get_relevant_documents(self, query: str, *, run_manager: Any = None) -> list:
            words = set(re.sub(r"[^a-z0-9 ]", " ", query.lower()).split())
            scored = []
            for n in NOTES:
                overlap = len(words & set(re.sub(r"[^a-z0-9 ]", " ", n["text"].lower()).split()))
                scored.append((overlap, n))
            scored.sort(key=lambda x: -x[0])
            hits = [n for _, n in scored if n["race"] == self.race_id][: self.k]
            if _on("notes_k"):
                hits = [n for _, n in scored[: self.k]]  # the index rebuilt without its race field
            return [Document(page_content=n["text"], metadata={"id": n["id"], "race": n["race"]}) for n in hits]

    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    planner_llm = llm.bind_tools([station_supplies])

    def load_course(state: PlanState) -> dict:
        race = state["race"]
        stations, page = [], 1
        while page:
            got = list_stations.invoke({"race_id": race["race_id"], "page": page})
            stations += got["stations"]
            page = got["next_page"]
        docs = CourseNotes(race_id=race["race_id"]).invoke(f"{RACES[race['race_id']]['name']} course notes aid station")
        return {"stations": stations, "notes": [d.page_content for d in docs]}

    def forecast(state: PlanState) -> dict:
        race = state["race"]
        return {"forecast": weather_forecast.invoke({"city": RACES[race["race_id"]]["city"], "date": race["date"]})}

    def estimate_fluids(state: PlanState) -> dict:
        rate = sweat_rate_table.invoke({"band": state["forecast"]["band"]})
        per_ml = state["race"]["runners"] * rate["ml_per_runner"]
        litres = per_ml / (100 if _on("litres") else 1000)
        return {"water_l_per_station": round(litres, 1)}

    def planner(state: PlanState) -> dict:
        if not state.get("messages"):
            race = state["race"]
            prompt = [
                SystemMessage("You plan aid-station supplies. Call station_supplies once for every aid station."),
                HumanMessage(f"RACE: {json.dumps(race)}\nSTATIONS: {json.dumps(state['stations'])}\n"
                             f"NOTES: {json.dumps(state['notes'])}\n"
                             f"WATER_L_PER_STATION: {json.dumps(state['water_l_per_station'])}"),
            ]
            return {"messages": prompt + [planner_llm.invoke(prompt)]}
        return {"messages": [planner_llm.invoke(state["messages"])]}

    def route_planner(state: PlanState) -> str:
        return "tools" if state["messages"][-1].tool_calls else "write_plan"

    def parse_plan(message: Any) -> dict:
        data = json.loads(message.content)
        rows = []
        for s in data["stations"]:
            if _on("decimal_comma"):
                cups = int(float(s["cups"].replace(",", ".")))
                water = float(s["water_l"].replace(",", "."))
            else:
                cups = int(s["cups"].replace(",", ""))
                water = float(s["water_l"].replace(",", ""))
            rows.append({"km": float(s["km"]), "cups": cups, "water_l": water, "sleeves": int(s["sleeves"])})
        return {"stations": rows}

    writer = llm | RunnableLambda(parse_plan, name="SupplyPlanParser")

    def write_plan(state: PlanState) -> dict:
        prompt = [SystemMessage("You write the supply plan as JSON, one row per station.")] + state["messages"][1:]
        return {"plan": writer.invoke(prompt)}

    def order(state: PlanState) -> dict:
        rows = state["plan"]["stations"]
        total_water = round(sum(r["water_l"] for r in rows), 1)
        total_cups = sum(r["cups"] for r in rows)
        return {"order": order_supplies.invoke({"race_id": state["race"]["race_id"], "water_l": total_water,
                                                "cups": total_cups})}

    def volunteers(state: PlanState) -> dict:
        crews = {}
        for r in state["plan"]["stations"]:
            got = assign_volunteers.invoke({"race_id": state["race"]["race_id"], "station_km": r["km"],
                                            "runners": state["race"]["runners"]})
            crews[f"{r['km']:.1f}"] = got["crew"]
        return {"crews": crews}

    def check_plan(state: PlanState) -> dict:
        race, rows = state["race"], state["plan"]["stations"]
        if len(rows) != race["stations_expected"]:
            raise ValueError(f"plan covers {len(rows)} aid stations, the race brief for {race['race_id']} "
                             f"lists {race['stations_expected']}")
        for r in rows:
            if r["cups"] < race["runners"]:
                raise ValueError(f"km {r['km']}: {r['cups']:,} cups for {race['runners']:,} runners")
        return {}

    g = StateGraph(PlanState)
    for name, fn in (("load_course", load_course), ("forecast", forecast), ("estimate_fluids", estimate_fluids),
                     ("planner", planner), ("write_plan", write_plan), ("order", order),
                     ("volunteers", volunteers), ("check_plan", check_plan)):
        g.add_node(name, fn)
    g.add_node("tools", ToolNode([station_supplies]))
    g.add_edge(START, "load_course")
    g.add_edge("load_course", "forecast")
    g.add_edge("forecast", "estimate_fluids")
    g.add_edge("estimate_fluids", "planner")
    g.add_conditional_edges("planner", route_planner, {"tools": "tools", "write_plan": "write_plan"})
    g.add_edge("tools", "planner")
    g.add_edge("write_plan", "order")
    g.add_edge("order", "volunteers")
    g.add_edge("volunteers", "check_plan")
    g.add_edge("check_plan", END)
    return g.compile()


def record(inp: dict, path: str, server: Any) -> None:
    global _GRAPH, _SERVER_URL
    from trajdebug.integrations.langchain import TrajdebugTracer

    if _GRAPH is None or _SERVER_URL != server.base_url:
        _GRAPH, _SERVER_URL = _build(server), server.base_url
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"aid stations {inp['race_id']} {inp['date']}")
    try:
        _GRAPH.invoke({"race": dict(inp)}, config={"callbacks": [tracer], "recursion_limit": 20})
    except Exception:  # noqa: BLE001 - the tracer records the failure
        pass
