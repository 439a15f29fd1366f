"""winter-gritting: a highway authority's night-time precautionary salting decision (OpenAI Agents SDK).

The duty officer agent reads the shift handover and the road weather forecast of every forecast domain
(parallel calls), looks each domain's conditions up in the treatment matrix, reads the depots' route
cards and salt stock, moves salt between depots when one runs short, and dispatches the gritters with a
spread rate and start time per route; the dispatch system validates the plan against the forecast, the
matrix and the stock.
"""

import json
from typing import Any

from ._common import Env, agents_run, chat_state

NAME = "winter-gritting"
ROUTE = "openai_agents"
DOMAIN = "highway winter service: road surface temperature forecasts, treatment matrix, salt stock, gritter routes"
SHAPE = ("OpenAI Agents SDK (Chat Completions model): one duty-officer agent, five turns of parallel tool "
         "calls (handover, forecasts, matrix look-ups, route cards and stock per depot), a conditional "
         "salt-transfer tool, dispatch tool")

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


def _r(route, domain, km, width, drive, priority=1):
    return {"route": route, "domain": domain, "length_km": km, "width_m": width, "drive_h": drive,
            "priority": priority}


ROUTES = {
    "Kelby": [_r("K1", "Kelby Vale", 38, 7.3, 2.0), _r("K2", "Kelby Vale", 42, 7.0, 2.25),
              _r("K3", "Kelby Vale", 35, 6.5, 2.0), _r("K4", "Kelby Vale", 29, 6.5, 1.75),
              _r("K5", "Moss Fell", 31, 6.0, 2.0), _r("K6", "Moss Fell", 27, 6.0, 1.75),
              _r("K7", "Moss Fell", 33, 5.5, 2.25), _r("K8", "Moss Fell", 24, 5.5, 1.5, 2)],
    "Ashcroft": [_r("A1", "Ashcroft Plain", 45, 7.3, 2.5), _r("A2", "Ashcroft Plain", 41, 7.3, 2.25),
                 _r("A3", "Ashcroft Plain", 39, 7.0, 2.25), _r("A4", "Ashcroft Plain", 36, 7.0, 2.0),
                 _r("A5", "Ashcroft Plain", 33, 6.5, 2.0), _r("A6", "Ashcroft Plain", 30, 6.5, 1.75)],
    "Brindle": [_r("B1", "Brindle Moor", 40, 7.0, 2.25), _r("B2", "Brindle Moor", 37, 6.5, 2.0)],
    "Caldbeck": [_r("C1", "High Caldbeck", 34, 6.5, 2.0), _r("C2", "High Caldbeck", 41, 6.0, 2.5),
                 _r("C3", "Caldbeck Low", 28, 7.0, 1.5)],
    "Thornby": [_r("T1", "Thornby Wolds", 44, 7.0, 2.5), _r("T2", "Thornby Wolds", 39, 7.0, 2.25),
                _r("T3", "Thornby Wolds", 36, 6.5, 2.0), _r("T4", "Thornby Wolds", 33, 6.5, 2.0)],
    "Dunmere": [_r("D1", "Dunmere Coast", 32, 7.0, 2.0), _r("D2", "Dunmere Coast", 28, 6.5, 1.75),
                _r("D3", "Dunmere Coast", 35, 6.5, 2.0), _r("D4", "Dunmere Hills", 30, 6.0, 2.0)],
}
STOCK = {"Kelby": 120.0, "Ashcroft": 12.0, "Brindle": 310.0, "Caldbeck": 95.0, "Thornby": 18.0, "Dunmere": 150.0}
AUTHORITY_STOCK = 1240.0
WEATHER = {
    "Kelby Vale": {"rst_min_c": -0.6, "below_1c_at": "21:30", "road_state": "dry", "precipitation": "none"},
    "Moss Fell": {"rst_min_c": -2.1, "below_1c_at": "20:45", "road_state": "dry", "precipitation": "none"},
    "Ashcroft Plain": {"rst_min_c": -1.2, "below_1c_at": "22:00", "road_state": "dry", "precipitation": "none"},
    "Brindle Moor": {"rst_min_c": 1.8, "below_1c_at": None, "road_state": "dry", "precipitation": "none"},
    "High Caldbeck": {"rst_min_c": -1.8, "below_1c_at": "19:30", "road_state": "dry", "precipitation": "none"},
    "Caldbeck Low": {"rst_min_c": 0.4, "below_1c_at": "23:15", "road_state": "dry", "precipitation": "none"},
    "Thornby Wolds": {"rst_min_c": -0.9, "below_1c_at": "22:30", "road_state": "dry", "precipitation": "none"},
    "Dunmere Coast": {"rst_min_c": -1.5, "below_1c_at": "21:00", "road_state": "wet",
                      "precipitation": "rain clearing"},
    "Dunmere Hills": {"rst_min_c": -2.4, "below_1c_at": "20:30", "road_state": "dry", "precipitation": "none"},
}
MATRIX = [
    {"row": "M1", "text": "dry road, RST 0 to +1 °C, frost risk", "road_state": "dry", "band": "0to1", "rate_g_m2": 8},
    {"row": "M2", "text": "dry road, RST below 0 °C, frost", "road_state": "dry", "band": "below0", "rate_g_m2": 10},
    {"row": "M3", "text": "wet carriageway, sub-zero surface, showers clearing, refreeze risk", "road_state": "wet",
     "band": "below0", "rate_g_m2": 20},
    {"row": "M4", "text": "wet carriageway, surface 0 to +1 °C, showers clearing", "road_state": "wet",
     "band": "0to1", "rate_g_m2": 15},
]
HANDOVER = {
    "Kelby": "K7 drainage works finished, route open again. Gritter G12 back from the workshop.",
    "Ashcroft": "Brindle barn has room; transfers need a day-shift loader booked by 16:00.",
    "Caldbeck": "Spreader on G21 calibrated 2025-11-28.",
    "Thornby": "Thornby stock delivery due Friday. Nothing else to hand over.",
    "Dunmere": "Coast road spray from the sea makes the D-routes wet after high tide.",
}
LAST_NIGHT_LOG = {"Thornby": "Decision 2025-12-01 21:10 (snow showers forecast): all routes 20 g/m2, "
                             "second run 03:00."}

INPUTS = [
    {"area": "Kelby and Moss", "night": "2025-12-02", "depots": ["Kelby"], "domains": ["Kelby Vale", "Moss Fell"]},
    {"area": "Ashcroft", "night": "2025-12-03", "depots": ["Ashcroft", "Brindle"],
     "domains": ["Ashcroft Plain", "Brindle Moor"]},
    {"area": "Caldbeck", "night": "2025-12-04", "depots": ["Caldbeck"], "domains": ["High Caldbeck", "Caldbeck Low"]},
    {"area": "Thornby", "night": "2025-12-05", "depots": ["Thornby"], "domains": ["Thornby Wolds"]},
    {"area": "Dunmere", "night": "2025-12-06", "depots": ["Dunmere"], "domains": ["Dunmere Coast", "Dunmere Hills"]},
]

CASES = [
    {"id": "gritting_route_cards_page", "input": 0, "switch": "route_page", "fault_kind": "truncated_result",
     "root": ("get_route_cards", 1), "failure": ("dispatch_gritters", 1),
     "description": "get_route_cards returns only the first page of Kelby's cards (K1-K6), so Moss Fell routes K7 "
                    "and K8 get no treatment and the dispatch system refuses the plan at RST -2.1 °C."},
    {"id": "gritting_stock_scope", "input": 1, "switch": "stock_scope", "fault_kind": "tool_ignores_argument",
     "root": ("get_salt_stock", 1), "failure": ("dispatch_gritters", 1),
     "description": "get_salt_stock ignores the depot and answers the authority's 1240 t for Ashcroft, so no salt "
                    "is moved from Brindle and the dispatch finds Ashcroft's 12 t short of the 15.6 t its routes need plus "
                    "the 10% reserve."},
    {"id": "gritting_start_at_threshold", "input": 2, "switch": "start_at_threshold", "fault_kind": "plan_error",
     "root": ("generation fake-model", 4), "failure": ("dispatch_gritters", 1),
     "description": "the duty officer model starts every route when the road falls below +1 °C instead of "
                    "finishing by then, so C1 on High Caldbeck would finish at 21:30, after 19:30."},
    {"id": "gritting_last_night_log", "input": 3, "switch": "full_log", "fault_kind": "context_pollution",
     "root": ("get_shift_handover", 1), "failure": ("dispatch_gritters", 1),
     "description": "get_shift_handover returns last night's decision log with its snow-night rate of 20 g/m2, "
                    "the model treats tonight's frost at that rate and Thornby's 18 t cannot cover the 20.6 t "
                    "its routes then need plus the 10% reserve."},
    {"id": "gritting_matrix_row", "input": 4, "switch": "keyword_match", "fault_kind": "wrong_retrieval",
     "root": ("lookup_treatment_matrix", 1), "failure": ("dispatch_gritters", 1),
     "description": "lookup_treatment_matrix ranks its rows by shared words and returns M2 (dry road, frost, "
                    "10 g/m2) for Dunmere Coast's wet road with rain clearing, where M3 sets 20 g/m2."},
]


def matrix_row(road_state: str, rst: float) -> dict:
    band = "below0" if rst < 0 else "0to1"
    return next(m for m in MATRIX if m["road_state"] == road_state and m["band"] == band)


def hhmm(hours: float) -> str:
    h = int(hours) % 24
    return f"{h:02d}:{round((hours - int(hours)) * 60):02d}"


def hours(text: str) -> float:
    h, m = map(int, text.split(":"))
    return h + m / 60


# -- the model ----------------------------------------------------------------------------------------

def _reply(calls):
    from trajdebug.testing import Reply, tool_call

    return Reply(tool_calls=tuple(tool_call(n, a) for n, a in calls))


def brain(request: Any) -> Any:
    system, users, tools = chat_state(request)
    if not system.startswith("You are the winter duty officer"):
        raise ValueError("unexpected prompt")
    job = json.loads(users[0])
    done: dict[str, list] = {}
    for t in tools:
        done.setdefault(t["name"], []).append(t)
    if "get_road_weather" not in done:
        return _reply([("get_shift_handover", {"depot": job["depots"][0]})]
                      + [("get_road_weather", {"domain": d}) for d in job["domains"]])
    weather = {t["output"]["domain"]: t["output"] for t in done["get_road_weather"]}
    treat = [d for d in job["domains"] if weather[d]["rst_min_c"] < 1]
    if "lookup_treatment_matrix" not in done:
        return _reply([("lookup_treatment_matrix", {"road_state": weather[d]["road_state"],
                                                    "rst_min_c": weather[d]["rst_min_c"],
                                                    "precipitation": weather[d]["precipitation"]}) for d in treat])
    if "get_route_cards" not in done:
        return _reply([("get_route_cards", {"depot": dp}) for dp in job["depots"]]
                      + [("get_salt_stock", {"depot": dp}) for dp in job["depots"]])
    rates = {d: t["output"]["rate_g_m2"] for d, t in zip(treat, done["lookup_treatment_matrix"])}
    handover = done["get_shift_handover"][0]["output"]["notes"]
    if "all routes 20 g/m2" in handover:
        rates = {d: 20 for d in rates}
    plan = []
    for t in done["get_route_cards"]:
        for r in t["output"]["routes"]:
            if r["domain"] not in rates:
                continue
            below = hours(weather[r["domain"]]["below_1c_at"])
            start = below if _on("start_at_threshold") else below - r["drive_h"] - 0.25
            start = int(start * 4) / 4
            salt = round(rates[r["domain"]] * r["length_km"] * r["width_m"] / 1000, 2)
            plan.append({"route": r["route"], "depot": t["output"]["depot"], "rate_g_m2": rates[r["domain"]],
                         "start": hhmm(start), "salt_t": salt})
    need: dict[str, float] = {}
    for p in plan:
        need[p["depot"]] = need.get(p["depot"], 0) + p["salt_t"]
    stock = {t["output"]["depot"]: t["output"]["stock_t"] for t in done["get_salt_stock"]}
    transfers = [t["arguments"] for t in done.get("request_salt_transfer", [])]
    if not transfers:
        short = [dp for dp in job["depots"] if need.get(dp, 0) * 1.1 > stock[dp]]
        spare = [dp for dp in job["depots"] if dp not in short]
        if short and spare:
            dp = short[0]
            tonnes = round(need[dp] * 1.1 - stock[dp] + 5)
            return _reply([("request_salt_transfer", {"from_depot": spare[0], "to_depot": dp, "tonnes": tonnes})])
    if "dispatch_gritters" not in done:
        return _reply([("dispatch_gritters", {"area": job["area"], "night": job["night"], "routes": plan,
                                              "transfers": transfers})])
    out = done["dispatch_gritters"][0]["output"]
    return f"Dispatched {out['routes']} routes for {job['area']} ({out['dispatch']})."


# -- the agent ----------------------------------------------------------------------------------------

def _build(env: Env):
    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, function_tool
    from openai import AsyncOpenAI
    from pydantic import BaseModel

    client = AsyncOpenAI(base_url=env.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=env.model, openai_client=client)

    class RouteTreatment(BaseModel):
        route: str
        depot: str
        rate_g_m2: float
        start: str
        salt_t: float

    class Transfer(BaseModel):
        from_depot: str
        to_depot: str
        tonnes: float

    @function_tool
    def get_shift_handover(depot: str) -> dict:
        """The previous duty officer's handover notes for a depot."""
        notes = HANDOVER[depot]
        if _on("full_log") and depot in LAST_NIGHT_LOG:
            notes = LAST_NIGHT_LOG[depot] + " " + notes
        return {"depot": depot, "notes": notes}

    @function_tool
    def get_road_weather(domain: str) -> dict:
        """Tonight's road weather forecast for a forecast domain: minimum road surface temperature (RST),
        when it falls below +1 °C, road state and precipitation."""
        return {"domain": domain, **WEATHER[domain]}

    @function_tool
    def lookup_treatment_matrix(road_state: str, rst_min_c: float, precipitation: str) -> dict:
        """The treatment matrix row for the forecast conditions: spread rate in g/m2."""
        if _on("keyword_match"):
            query = f"{road_state} road RST {'below 0' if rst_min_c < 0 else '0 to +1'} {precipitation}".lower()
            words = set(query.split())
            row = max(MATRIX, key=lambda m: (len(words & set(m["text"].lower().replace(",", "").split())),
                                             -int(m["row"][1:])))
        else:
            row = matrix_row(road_state, rst_min_c)
        return {"row": row["row"], "conditions": row["text"], "rate_g_m2": row["rate_g_m2"]}

    @function_tool
    def get_route_cards(depot: str) -> dict:
        """The depot's gritting route cards: length, carriageway width, drive time."""
        cards = [dict(r) for r in ROUTES[depot]]
        if _on("route_page"):
            cards = cards[:6]
        return {"depot": depot, "routes": cards}

    @function_tool
    def get_salt_stock(depot: str) -> dict:
        """Salt in store at a depot, in tonnes."""
        stock = AUTHORITY_STOCK if _on("stock_scope") else STOCK[depot]
        return {"depot": depot, "stock_t": stock, "as_of": "16:00"}

    @function_tool(failure_error_function=None)
    def request_salt_transfer(from_depot: str, to_depot: str, tonnes: float) -> dict:
        """Book a loader and lorry to move salt between depots before the evening run."""
        return {"transfer": f"ST-{from_depot[:3].upper()}{to_depot[:3].upper()}", "tonnes": tonnes}

    @function_tool(failure_error_function=None)
    def dispatch_gritters(area: str, night: str, routes: list[RouteTreatment], transfers: list[Transfer]) -> dict:
        """Dispatch the gritters (the dispatch system checks the plan against forecast, matrix and stock)."""
        plan = {r.route: r for r in routes}
        job = next(i for i in INPUTS if i["area"] == area)
        for d in job["domains"]:
            w = WEATHER[d]
            if w["rst_min_c"] >= 1:
                continue
            need = matrix_row(w["road_state"], w["rst_min_c"])
            for dp in job["depots"]:
                for card in ROUTES[dp]:
                    if card["domain"] != d:
                        continue
                    r = plan.get(card["route"])
                    if r is None:
                        raise ValueError(f"route {card['route']} ({d}, RST {w['rst_min_c']} °C) has no treatment")
                    if r.rate_g_m2 < need["rate_g_m2"]:
                        raise ValueError(f"route {r.route}: {r.rate_g_m2:g} g/m2 is below the {need['rate_g_m2']} "
                                         f"g/m2 of matrix row {need['row']} ({need['text']}) at "
                                         f"{w['rst_min_c']} °C")
                    finish = hours(r.start) + card["drive_h"]
                    if finish > hours(w["below_1c_at"]):
                        raise ValueError(f"route {r.route} finishes {hhmm(finish)}, after RST falls below +1 °C at "
                                         f"{w['below_1c_at']} on {d}")
        for dp in job["depots"]:
            need_t = sum(r.salt_t for r in routes if r.depot == dp)
            have = STOCK[dp] + sum(t.tonnes for t in transfers if t.to_depot == dp) \
                - sum(t.tonnes for t in transfers if t.from_depot == dp)
            if need_t * 1.1 > have:
                raise ValueError(f"{dp} depot holds {have:g} t; its routes need {need_t:.1f} t plus the 10% "
                                 f"reserve")
        return {"dispatch": f"GR-{night[5:].replace('-', '')}-{len(routes)}", "routes": len(routes)}

    officer = Agent(name="duty_officer", model=model, model_settings=ModelSettings(parallel_tool_calls=True),
                    instructions="You are the winter duty officer. Read the handover and every domain's road "
                                 "weather, look up the treatment, read route cards and salt stock, move salt "
                                 "if a depot is short, then dispatch the gritters.",
                    tools=[get_shift_handover, get_road_weather, lookup_treatment_matrix, get_route_cards,
                           get_salt_stock, request_salt_transfer, dispatch_gritters])
    return officer, client


def run(inp: dict, path: str, env: Env) -> None:
    officer, client = _build(env)
    agents_run(officer, json.dumps(inp), path=path, name=NAME, client=client,
               task=f"gritting decision {inp['area']} {inp['night']}")
