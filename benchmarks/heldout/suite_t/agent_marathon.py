"""langgraph route: city-marathon aid-station resupply (planner LLM, per-station loop, router, race-control sign-off)."""
import json
import re
from typing import TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import FakeModelServer

from . import kit


NAME = "aid-station-resupply"
TODAY = "2026-04-12"

RACES = {
    "Harbourline": {"S1": (5200, 5, "road"), "S2": (5050, 10, "road"), "S3": (4890, 15, "road"), "S4": (4700, 21, "road"), "S5": (4480, 27, "trail"), "S6": (4300, 33, "road")},
    "Ridgeway": {"S1": (3100, 5, "road"), "S2": (3020, 11, "trail"), "S3": (2950, 18, "road"), "S4": (2870, 25, "road")},
    "Oldport": {"S1": (6100, 4, "road"), "S2": (6000, 9, "road"), "S3": (5850, 15, "road"), "S4": (5700, 22, "trail"), "S5": (5500, 30, "road")},
    "Millbrook": {"S1": (2400, 6, "road"), "S2": (2330, 13, "road"), "S3": (2290, 20, "trail")},
    "Eastgate": {"S1": (4100, 5, "road"), "S2": (4030, 12, "road"), "S3": (3950, 19, "road"), "S4": (3820, 26, "trail"), "S5": (3700, 34, "road")},
    "Kingsmere": {"S1": (3500, 7, "road"), "S2": (3420, 14, "road"), "S3": (3330, 21, "road"), "S4": (3210, 29, "trail")},
    "Sandholm": {"S1": (2800, 5, "trail"), "S2": (2740, 12, "road"), "S3": (2660, 20, "road")},
    "Westerby": {"S1": (4700, 6, "road"), "S2": (4420, 13, "road"), "S3": (3900, 20, "trail"), "S4": (3790, 28, "road")},
    "Brackenfold": {"S1": (3900, 5, "road"), "S2": (3800, 11, "road"), "S3": (3720, 18, "road"), "S4": (3610, 26, "road"), "S5": (3500, 33, "trail")},
}
TEMPS = {"Harbourline": 25.0, "Ridgeway": 17.0, "Oldport": 21.0, "Millbrook": 19.0, "Eastgate": 24.5,
         "Kingsmere": 16.0, "Sandholm": 22.0, "Westerby": 18.5, "Brackenfold": 26.0}


def rate(temp):
    return 0.65 if temp >= 24 else 0.5 if temp >= 18 else 0.4


@tool
def fetch_course(race: str) -> str:
    """Aid stations of a race course: id, forecast runners, km, access."""
    return json.dumps([{"station": s, "runners": r, "km": km, "access": a} for s, (r, km, a) in RACES[race].items()])


@tool
def fetch_weather(race: str) -> str:
    """Race-day forecast for the course."""
    if kit.active("mara.cache"):
        return json.dumps({"race": race, "issued": "2026-04-09", "peak_c": TEMPS[race] - 9.0})
    return json.dumps({"race": race, "issued": TODAY, "peak_c": TEMPS[race]})


@tool
def book_delivery(station: str, litres: int, carrier: str, access: str) -> str:
    """Book a water delivery with the logistics contractor."""
    if access == "trail" and carrier != "quad":
        raise RuntimeError(f"contractor API 400: vehicle class '{carrier}' cannot reach {station} (trail access only)")
    return json.dumps({"booking": f"BK-{station}-{litres}", "carrier": carrier})


@tool
def race_control_signoff(race: str, orders: str) -> str:
    """Submit the resupply orders to race control for medical sign-off."""
    orders_l = json.loads(orders)
    got = {o["station"]: o for o in orders_l}
    temp = TEMPS[race]
    for s, (runners, _km, _a) in RACES[race].items():
        if s not in got:
            raise RuntimeError(f"race control: sign-off refused, no delivery booked for aid station {s}")
        need = runners * rate(temp)
        if abs(got[s]["litres"] - need) > 0.1 * need:
            raise RuntimeError(f"race control: sign-off refused, {s} order of {got[s]['litres']} L is outside the medical estimate")
    return json.dumps({"signed_off": True, "ref": f"RC-{race}-{len(orders_l)}"})


def policy(request):
    msgs = request.body["messages"]
    prompt = msgs[-1]["content"]
    if prompt.startswith("PLAN"):
        course = json.loads(prompt.split("\n", 1)[1])
        order = [c["station"] for c in course]
        if kit.active("mara.plan"):
            order = [s for s in order if s != "S4"]
        return json.dumps({"stations": order, "notes": "deliver in course order before the lead runners"})
    if prompt.startswith("ESTIMATE"):
        station = re.search(r'"station": "(S\d)"', prompt).group(1)
        runners = int(re.search(r"runners (\d+)", prompt).group(1))
        temp = float(re.search(r'"peak_c": ([\d.]+)', prompt).group(1))
        litres = int(runners * rate(temp))
        if kit.active("mara.halluc") and station == "S3":
            litres = 9400
        return json.dumps({"station": station, "litres": litres})
    return "OK"


class S(TypedDict, total=False):
    race: str
    course: list
    weather: dict
    plan: list
    idx: int
    brief: dict
    estimate: dict
    carrier: str
    orders: list
    result: dict


def build(llm):
    def load_course(st):
        return {"course": json.loads(fetch_course.invoke({"race": st["race"]})),
                "weather": json.loads(fetch_weather.invoke({"race": st["race"]})), "orders": [], "idx": 0}

    def plan(st):
        msg = llm.invoke([SystemMessage("You plan water resupply for marathon aid stations. Answer JSON."),
                          HumanMessage("PLAN\n" + json.dumps(st["course"]))])
        return {"plan": json.loads(msg.content)["stations"]}

    def brief_station(st):
        sid = st["plan"][st["idx"]]
        c = next(x for x in st["course"] if x["station"] == sid)
        text = f"runners {c['runners']} expected at km {c['km']}"
        if kit.active("mara.context") and st["idx"] == 2:
            prev = next(x for x in st["course"] if x["station"] == st["plan"][0])
            text = f"carried over from {prev['station']}: runners {prev['runners']} at km {prev['km']}; " + text
        return {"brief": {"station": sid, "summary": text, "weather": st["weather"]}}

    def estimate(st):
        b = st["brief"]
        msg = llm.invoke([SystemMessage("Estimate litres of water for one aid station. Answer JSON."),
                          HumanMessage("ESTIMATE\n" + json.dumps({"station": b["station"], "peak_c": b["weather"]["peak_c"]})
                                       + "\n" + b["summary"])])
        return {"estimate": json.loads(msg.content)}

    def choose_carrier(st):
        sid = st["estimate"]["station"]
        c = next(x for x in st["course"] if x["station"] == sid)
        carrier = "quad" if c["access"] == "trail" else "van"
        if kit.active("mara.route") and c["km"] > 25:
            carrier = "van"
        return {"carrier": carrier, "leg": sid}

    def dispatch(st):
        e = st["estimate"]
        c = next(x for x in st["course"] if x["station"] == e["station"])
        booking = json.loads(book_delivery.invoke({"station": e["station"], "litres": e["litres"],
                                                    "carrier": st["carrier"], "access": c["access"]}))
        return {"orders": st["orders"] + [{"station": e["station"], "litres": e["litres"], **booking}], "idx": st["idx"] + 1}

    def more(st):
        return "brief_station" if st["idx"] < len(st["plan"]) else "signoff"

    def signoff(st):
        return {"result": json.loads(race_control_signoff.invoke({"race": st["race"], "orders": json.dumps(st["orders"])}))}

    g = StateGraph(S)
    for n, f in [("load_course", load_course), ("plan", plan), ("brief_station", brief_station), ("estimate", estimate),
                 ("choose_carrier", choose_carrier), ("dispatch", dispatch), ("signoff", signoff)]:
        g.add_node(n, f)
    g.add_edge(START, "load_course")
    g.add_edge("load_course", "plan")
    g.add_edge("plan", "brief_station")
    g.add_edge("brief_station", "estimate")
    g.add_edge("estimate", "choose_carrier")
    g.add_edge("choose_carrier", "dispatch")
    g.add_conditional_edges("dispatch", more, ["brief_station", "signoff"])
    g.add_edge("signoff", END)
    return g.compile()


def run_agent(race: str, path: str) -> None:
    with FakeModelServer(policy) as server:
        llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
        tracer = TrajdebugTracer(path=path, name=NAME, task=f"water resupply for the {race} marathon")
        try:
            build(llm).invoke({"race": race}, config={"callbacks": [tracer], "recursion_limit": 100})
        except RuntimeError:
            pass


FAULTS = [
    ("plan_error", "mara.plan", "Oldport", "ChatOpenAI", '\\"stations\\": [\\"S1\\", \\"S2\\", \\"S3\\", \\"S5\\"]'),
    ("stale_data", "mara.cache", "Harbourline", "fetch_weather", '2026-04-09'),
    ("hallucinated_value", "mara.halluc", "Eastgate", "ChatOpenAI", '9400'),
    ("context_pollution", "mara.context", "Westerby", "brief_station", 'carried over from S1'),
    ("wrong_routing", "mara.route", "Brackenfold", "choose_carrier", '"carrier": "van", "leg": "S5"'),
]
REFS = ["Ridgeway", "Millbrook", "Kingsmere", "Sandholm"]
