"""Bathyscaphe research charter desk (sdk route): plan dives with a model, then walk each dive."""
import json

import trajdebug
from openai import OpenAI

NAME = "bathyscaphe-charter"
SHORT = "bathy"
ROUTE = "sdk"
DOMAIN = "bathyscaphe research charter"
SHAPE = "model plan -> parse -> survey retrieval -> state write -> per-dive loop (ballast, sonar with retry, descent, oxygen) -> price -> validator"
ACTIVE = None

VESSELS = {"Trieste II": 11000, "Archimede": 6000, "Nereus": 8500}
SITES = {
    "Tonga-7": {"seabed_m": 9200, "current_kn": 1.1},
    "Tonga-8": {"seabed_m": 5100, "current_kn": 0.7},
    "Kermadec-2": {"seabed_m": 8100, "current_kn": 1.4},
    "Mariana-C": {"seabed_m": 10900, "current_kn": 0.4},
    "Puerto-R": {"seabed_m": 8300, "current_kn": 0.9},
    "Java-S": {"seabed_m": 7200, "current_kn": 1.2},
}
NEIGHBOUR = {"Tonga-7": "Tonga-8"}

INPUTS = [
    {"client": "Ifremer deep biology group", "site": "Tonga-7", "vessel": "Trieste II", "depths": [3000, 6200, 8800], "date": "2027-03-02"},
    {"client": "Scripps trench survey", "site": "Mariana-C", "vessel": "Trieste II", "depths": [4000, 7500, 9800, 10500], "date": "2027-04-11"},
    {"client": "GEOMAR vent study", "site": "Kermadec-2", "vessel": "Nereus", "depths": [2500, 5200, 7900], "date": "2027-05-20"},
    {"client": "JAMSTEC sediment cores", "site": "Puerto-R", "vessel": "Nereus", "depths": [1800, 3600, 6100, 8000, 8200], "date": "2027-06-03"},
    {"client": "Woods Hole film crew", "site": "Java-S", "vessel": "Archimede", "depths": [1200, 2900, 4400, 5800], "date": "2027-07-15"},
]

CASES = [
    {"input": 1, "switch": "plan_depth", "kind": "hallucinated_value", "root": ("plan_dives", 1),
     "failure": ("charter_validator", 1),
     "description": "The planning model states a depth of 11200 m for the fourth dive, where the client asked for 10500 m."},
    {"input": 0, "switch": "neighbour_survey", "kind": "wrong_retrieval", "root": ("fetch_site_survey", 1),
     "failure": ("charter_validator", 1),
     "description": "The survey lookup returns the Tonga-8 survey for a Tonga-7 charter, so the seabed reads 5100 m."},
    {"input": 3, "switch": "feet_descent", "kind": "unit_error", "root": ("compute_descent", 3),
     "failure": ("reserve_oxygen", 3),
     "description": "The descent time for the third dive divides a depth in feet by a rate in metres per minute."},
    {"input": 4, "switch": "quiet_sonar", "kind": "swallowed_error", "root": ("plan_window", 2),
     "failure": ("book_support_vessel", 1),
     "description": "The sonar gateway refuses the second dive's window and the planner keeps an empty window without saying so."},
    {"input": 2, "switch": "vessel_memory", "kind": "bad_memory_write", "root": ("log_charter", 1),
     "failure": ("charter_validator", 1),
     "description": "The charter record keeps the vessel Archimede instead of the Nereus the client chartered."},
]

_client = None


def _llm(ctx):
    global _client
    if _client is None or _client.base_url != ctx.server.base_url + "/":
        _client = OpenAI(base_url=ctx.server.base_url, api_key="not-needed", max_retries=0)
    return _client


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    req = json.loads(prompt.split("REQUEST:", 1)[1])
    dives = [{"dive": i + 1, "depth_m": d, "bottom_minutes": 40 + 10 * (i % 3)} for i, d in enumerate(req["depths"])]
    if ACTIVE == "plan_depth":
        dives[3]["depth_m"] = 11200
    return json.dumps({"site": req["site"], "dives": dives})


@trajdebug.step(kind="input")
def intake(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="llm")
def plan_dives(messages: list) -> str:
    reply = _CTX.client.chat.completions.create(model="fake-model", messages=messages)
    return reply.choices[0].message.content


@trajdebug.step(kind="parse")
def read_plan(text: str) -> list:
    return json.loads(text)["dives"]


@trajdebug.step(kind="retrieval")
def fetch_site_survey(site: str) -> dict:
    key = NEIGHBOUR.get(site, site) if ACTIVE == "neighbour_survey" else site
    return {"site": site, **SITES[key]}


@trajdebug.step(kind="state")
def log_charter(request: dict) -> dict:
    vessel = "Archimede" if ACTIVE == "vessel_memory" else request["vessel"]
    rec = {"client": request["client"], "vessel": vessel, "date": request["date"]}
    trajdebug.current_run().state["charter"] = rec
    return rec


@trajdebug.step(kind="tool")
def check_ballast(dive: dict) -> dict:
    vessel = trajdebug.current_run().state["charter"]["vessel"]
    return {"dive": dive["dive"], "vessel": vessel, "shot_tonnes": round(dive["depth_m"] / 1000 * 1.6, 2)}


_sonar_calls = {"n": 0}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def sonar_window(site: str, dive_no: int) -> dict:
    _sonar_calls["n"] += 1
    if dive_no == 2 and _sonar_calls["n"] == 1:
        raise ConnectionError("sonar gateway did not answer")
    return {"dive": dive_no, "window": f"0{5 + dive_no}:00-1{dive_no}:00"}


@trajdebug.step(kind="tool")
def sonar_window_request(site: str, dive_no: int) -> dict:
    raise PermissionError(f"sonar gateway refused the window for dive {dive_no} at {site}")


@trajdebug.step(kind="other")
def plan_window(site: str, dive_no: int) -> dict:
    if ACTIVE == "quiet_sonar" and dive_no == 2:
        try:
            return sonar_window_request(site, dive_no)
        except PermissionError:
            return {"dive": dive_no, "window": ""}
    return sonar_window(site, dive_no)


@trajdebug.step(kind="other")
def compute_descent(dive: dict) -> dict:
    depth = dive["depth_m"]
    if ACTIVE == "feet_descent" and dive["dive"] == 3:
        depth = depth * 3.281
    return {"dive": dive["dive"], "descent_minutes": round(depth / 30.0, 1), "bottom_minutes": dive["bottom_minutes"]}


@trajdebug.step(kind="tool")
def reserve_oxygen(descent: dict) -> dict:
    minutes = 2 * descent["descent_minutes"] + descent["bottom_minutes"]
    if minutes > 900:
        raise RuntimeError(f"dive {descent['dive']}: {minutes} minutes of life support exceeds the 900-minute hull limit")
    return {"dive": descent["dive"], "oxygen_hours": round(minutes * 1.5 / 60, 2)}


@trajdebug.step(kind="tool")
def book_support_vessel(windows: list, date: str) -> dict:
    for w in windows:
        if not w["window"]:
            raise ValueError(f"support vessel booking needs a sonar window for dive {w['dive']} on {date}")
    return {"ship": "RV Thalassa", "date": date, "slots": [w["window"] for w in windows]}


@trajdebug.step(kind="tool")
def price_charter(dives: list, oxygen: list) -> dict:
    total = 18500 * len(dives) + sum(o["oxygen_hours"] for o in oxygen) * 320
    return {"total_eur": round(total, 2), "dives": len(dives)}


@trajdebug.step(kind="condition")
def charter_validator(request: dict, dives: list, survey: dict, price: dict) -> dict:
    charter = trajdebug.current_run().state["charter"]
    rating = VESSELS[charter["vessel"]]
    for d in dives:
        if d["depth_m"] > survey["seabed_m"]:
            raise ValueError(f"dive {d['dive']} planned at {d['depth_m']} m below the seabed at {survey['seabed_m']} m ({survey['site']})")
        if d["depth_m"] > rating:
            raise ValueError(f"dive {d['dive']} at {d['depth_m']} m is beyond the {charter['vessel']} hull rating of {rating} m")
    if [d["depth_m"] for d in dives] != request["depths"]:
        raise ValueError("planned depths differ from the requested depths")
    return {"approved": True, "total_eur": price["total_eur"]}


@trajdebug.step(kind="output")
def compose_offer(request: dict, verdict: dict, booking: dict) -> str:
    return f"Charter for {request['client']} at {request['site']}: {verdict['total_eur']} EUR, support ship {booking['ship']}."


class _C:
    client = None


_CTX = _C()


def record(inp, ctx, path):
    _CTX.client = _llm(ctx)
    _sonar_calls["n"] = 0
    try:
        with trajdebug.run(NAME, task=f"charter {len(inp['depths'])} dives at {inp['site']} for {inp['client']}", path=path):
            req = intake(inp)
            msgs = [{"role": "system", "content": "You plan bathyscaphe dives. Answer JSON."},
                    {"role": "user", "content": "Plan the dives. REQUEST:" + json.dumps(req)}]
            dives = read_plan(plan_dives(msgs))
            survey = fetch_site_survey(req["site"])
            log_charter(req)
            windows, oxygen = [], []
            for d in dives:
                check_ballast(d)
                windows.append(plan_window(req["site"], d["dive"]))
                oxygen.append(reserve_oxygen(compute_descent(d)))
            booking = book_support_vessel(windows, req["date"])
            price = price_charter(dives, oxygen)
            verdict = charter_validator(req, dives, survey, price)
            compose_offer(req, verdict, booking)
    except Exception:
        pass
