"""Luge club race entries (sdk route): a batch loop over athletes with a retried licence lookup,
per-athlete registrations kept in run.state, a model that draws the start order, and the
federation's entry API as the last word."""

from __future__ import annotations

import json

import trajdebug
from openai import OpenAI

NAME = "luge-race-entries"
ROUTE = "sdk"
DOMAIN = "a luge club's race entries"
SHAPE = "batch loop over 6 athletes (licence tool with one retry, weight parser, run.state registration), model-drawn start order, heat split, federation submit"
SWITCH = None

CLUB = "Rennrodel Club Altenberg"
TRACK_RULES = {"Oberhof": {"max_sled_kg": 25.0, "min_age": 14, "heats": 2, "season": 2026},
               "Altenberg": {"max_sled_kg": 25.0, "min_age": 13, "heats": 2, "season": 2026},
               "Winterberg": {"max_sled_kg": 24.0, "min_age": 14, "heats": 3, "season": 2026}}
LICENCES = {}
for n, (who, born, pts) in enumerate([
    ("Ida Brenner", 2008, 412), ("Jonas Vogt", 2006, 388), ("Mara Keil", 2009, 301), ("Lukas Ott", 2007, 455),
    ("Nele Franke", 2010, 120), ("Paul Reuter", 2005, 502), ("Tilda Sommer", 2011, 95), ("Emil Hahn", 2008, 260),
    ("Greta Lang", 2009, 333), ("Finn Maurer", 2007, 410), ("Lea Kunz", 2010, 178), ("Ben Seidel", 2006, 390),
]):
    LICENCES[f"DE-{4101 + n}"] = {"name": who, "birth_year": born, "points": pts}


def _entries(ids, weights):
    return [{"licence": i, "sled_weight": w} for i, w in zip(ids, weights)]


INPUTS = [
    {"race": "Oberhof junior cup", "track": "Oberhof", "date": "2027-01-09",
     "entries": _entries(["DE-4101", "DE-4102", "DE-4103", "DE-4104", "DE-4105", "DE-4106"],
                         ["23.4 kg", "24.1 kg", "51.6 lb", "22.9 kg", "50.2 lb", "24.8 kg"])},
    {"race": "Altenberg club trophy", "track": "Altenberg", "date": "2027-01-16",
     "entries": _entries(["DE-4107", "DE-4108", "DE-4109", "DE-4110", "DE-4111", "DE-4112"],
                         ["21.7 kg", "49.8 lb", "23.3 kg", "24.6 kg", "22.2 kg", "52.9 lb"])},
    {"race": "Winterberg youth series", "track": "Winterberg", "date": "2027-01-23",
     "entries": _entries(["DE-4102", "DE-4104", "DE-4106", "DE-4108", "DE-4110", "DE-4112"],
                         ["23.9 kg", "51.0 lb", "23.1 kg", "22.6 kg", "50.7 lb", "23.8 kg"])},
    {"race": "Oberhof night sprint", "track": "Oberhof", "date": "2027-02-06",
     "entries": _entries(["DE-4101", "DE-4103", "DE-4105", "DE-4107", "DE-4109", "DE-4111"],
                         ["24.0 kg", "22.4 kg", "23.7 kg", "50.9 lb", "24.3 kg", "52.2 lb"])},
    {"race": "Altenberg regional final", "track": "Altenberg", "date": "2027-02-20",
     "entries": _entries(["DE-4112", "DE-4110", "DE-4108", "DE-4106", "DE-4104", "DE-4102"],
                         ["52.0 lb", "23.5 kg", "22.8 kg", "24.4 kg", "51.3 lb", "23.0 kg"])},
]

CASES = [
    {"id": "zzzk-luge-1", "input": 0, "switch": "pounds_as_kilos", "kind": "unit_error",
     "root": ("read_sled_weight", 3), "failure": ("federation_submit", 1),
     "description": "The sled weight parser reads Mara Keil's 51.6 lb as 51.6 kg, so the entry goes out with a sled twice the limit."},
    {"id": "zzzk-luge-2", "input": 1, "switch": "last_season_licence", "kind": "stale_data",
     "root": ("fetch_licence", 5), "failure": ("federation_submit", 1),
     "description": "The licence lookup for DE-4110 answers from last season's cached register, whose licence lapsed at the 2026 season end."},
    {"id": "zzzk-luge-3", "input": 2, "switch": "invented_licence", "kind": "hallucinated_value",
     "root": ("draw_start_order", 1), "failure": ("compose_start_sheet", 1),
     "description": "The start-order draw lists a licence number (DE-4113) that none of the six entries carry, in place of DE-4108."},
    {"id": "zzzk-luge-4", "input": 3, "switch": "heat_slice_short", "kind": "off_by_one",
     "root": ("split_heats", 1), "failure": ("federation_submit", 1),
     "description": "Splitting the start order into heats stops one athlete short, leaving the last starter out of every heat."},
    {"id": "zzzk-luge-5", "input": 4, "switch": "licence_year_as_birth", "kind": "bad_memory_write",
     "root": ("register_athlete", 1), "failure": ("federation_submit", 1),
     "description": "Registering Ben Seidel's club record stores the licence issue year 2021 as his birth year, making him six on race day."},
]

_attempts: dict[str, int] = {}


def policy(request):
    body = request.body
    prompt = body["messages"][-1]["content"]
    data = json.loads(prompt.split("\n", 1)[1])
    order = sorted(data["athletes"], key=lambda a: (-a["points"], a["licence"]))
    ids = [a["licence"] for a in order]
    if SWITCH == "invented_licence" and "DE-4108" in ids:
        ids[ids.index("DE-4108")] = "DE-4113"
    return json.dumps({"start_order": ids})


def _client(server):
    return OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


@trajdebug.step(kind="input")
def receive_entries(request: dict) -> dict:
    return request


@trajdebug.step(kind="tool")
def load_track_rules(track: str) -> dict:
    return {"track": track, **TRACK_RULES[track]}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def fetch_licence(licence: str, season: int) -> dict:
    key = f"{licence}:{season}"
    _attempts[key] = _attempts.get(key, 0) + 1
    if licence in ("DE-4103", "DE-4109") and _attempts[key] == 1:
        raise ConnectionError("licence register did not answer within 3 s")
    rec = LICENCES[licence]
    valid_until = f"{season + 1}-03-31"
    if SWITCH == "last_season_licence" and licence == "DE-4110":
        valid_until = f"{season}-03-31"
    return {"licence": licence, "name": rec["name"], "birth_year": rec["birth_year"], "club": CLUB,
            "issued": 2021, "valid_until": valid_until}


@trajdebug.step(kind="parse")
def read_sled_weight(text: str) -> float:
    value, unit = text.split()
    value = float(value)
    if unit == "lb" and SWITCH != "pounds_as_kilos":
        value = value * 0.45359237
    return round(value, 1)


@trajdebug.step(kind="state")
def register_athlete(record: dict, sled_kg: float) -> dict:
    born = record["birth_year"]
    if SWITCH == "licence_year_as_birth" and record["licence"] == "DE-4112":
        born = record["issued"]
    entry = {"licence": record["licence"], "name": record["name"], "born": born, "sled_kg": sled_kg,
             "valid_until": record["valid_until"]}
    trajdebug.current_run().state[f"athlete:{record['licence']}"] = entry
    return entry


@trajdebug.step(kind="tool")
def season_points(licences: list) -> dict:
    return {lic: LICENCES[lic]["points"] for lic in licences}


@trajdebug.step(kind="llm")
def draw_start_order(messages: list, client_model: str) -> dict:
    reply = _CLIENT.chat.completions.create(model=client_model, messages=messages)
    return {"content": reply.choices[0].message.content}


@trajdebug.step(kind="parse")
def parse_start_order(answer: dict) -> list:
    return list(json.loads(answer["content"])["start_order"])


@trajdebug.step(kind="condition")
def split_heats(order: list, heats: int) -> list:
    size = -(-len(order) // heats)
    stop = len(order) - 1 if SWITCH == "heat_slice_short" else len(order)
    return [order[i:min(i + size, stop)] for i in range(0, len(order), size)]


@trajdebug.step(kind="other")
def compose_start_sheet(race: dict, heats: list) -> dict:
    state = trajdebug.current_run().state
    sheet, bib = [], 1
    for h, heat in enumerate(heats, 1):
        for lic in heat:
            key = f"athlete:{lic}"
            if key not in state:
                raise LookupError(f"start order names {lic}, which has no registration for {race['race']}")
            a = state[key]
            sheet.append({"bib": bib, "heat": h, **a})
            bib += 1
    return {"race": race["race"], "date": race["date"], "track": race["track"], "starters": sheet}


@trajdebug.step(kind="tool")
def federation_submit(sheet: dict, rules: dict, entered: int) -> dict:
    year = int(sheet["date"][:4])
    if len(sheet["starters"]) != entered:
        raise ValueError(f"entry list holds {len(sheet['starters'])} starters, club entered {entered}")
    for s in sheet["starters"]:
        if s["sled_kg"] > rules["max_sled_kg"]:
            raise ValueError(f"{s['name']} ({s['licence']}): sled {s['sled_kg']} kg above the {rules['max_sled_kg']} kg limit")
        if year - s["born"] < rules["min_age"]:
            raise ValueError(f"{s['name']} ({s['licence']}): age {year - s['born']} below minimum {rules['min_age']}")
        if s["valid_until"] < sheet["date"]:
            raise ValueError(f"{s['name']} ({s['licence']}): licence valid until {s['valid_until']}, race on {sheet['date']}")
    return {"accepted": True, "race": sheet["race"], "starters": len(sheet["starters"])}


_CLIENT = None


def record(inp, path, server):
    global _CLIENT
    _CLIENT = _client(server)
    _attempts.clear()
    try:
        with trajdebug.run(NAME, task=f"{inp['race']} entries", path=path):
            req = receive_entries(inp)
            rules = load_track_rules(req["track"])
            regs = []
            for e in req["entries"]:
                rec = fetch_licence(e["licence"], rules["season"])
                kg = read_sled_weight(e["sled_weight"])
                regs.append(register_athlete(rec, kg))
            points = season_points([r["licence"] for r in regs])
            athletes = [{"licence": r["licence"], "name": r["name"], "points": points[r["licence"]]} for r in regs]
            system = "Draw the start order: highest season points first. Answer JSON {\"start_order\": [licence,...]}."
            messages = [{"role": "system", "content": system},
                        {"role": "user", "content": f"Start order for {req['race']}\n" + json.dumps({"athletes": athletes})}]
            answer = draw_start_order(messages, server.model)
            order = parse_start_order(answer)
            heats = split_heats(order, rules["heats"])
            sheet = compose_start_sheet(req, heats)
            federation_submit(sheet, rules, len(req["entries"]))
    except (ValueError, LookupError):
        pass
