"""A bird-ringing station's morning: read the field sheet of a net round, resolve species codes, issue
rings from the station's ring string, look up the history of every retrapped bird, check biometrics
against the handbook and submit the day's records to the national ringing scheme.

Route: trajdebug's own recorder (decorated steps, `with` steps, `run.state`), JSONL.
"""

from __future__ import annotations

import json
import re

import trajdebug

from .common import complete, json_block, last_user

NAME = "ringing-station"
ROUTE = "sdk"
DOMAIN = "bird-ringing station (field ornithology)"
SHAPE = (
    "input -> parse -> llm species codes -> parse -> state ring block -> loop per bird "
    "(sub-agent for retraps: registry tool + llm summary; foreign-scheme tool for controls; "
    "handbook retrieval; biometrics check; state log) -> llm day summary -> build -> submit tool -> final check"
)
SWITCH: str | None = None

HOME_SCHEME = "GBT"

# EURING species codes the scheme accepts
EURING = {
    "Reed Warbler": 12510, "Sedge Warbler": 12430, "Blue Tit": 14620, "Great Tit": 14640,
    "Chiffchaff": 13110, "Blackcap": 12770, "Wren": 10660, "Robin": 10990, "Cetti's Warbler": 12200,
    "Reed Bunting": 18770, "Willow Warbler": 13120, "Bearded Reedling": 13640,
}
HANDBOOK = {  # wing (mm) and mass (g) ranges of full-grown birds
    12510: {"wing_mm": [62, 70], "mass_g": [9.5, 16.0]}, 12430: {"wing_mm": [62, 71], "mass_g": [9.5, 20.0]},
    14620: {"wing_mm": [60, 70], "mass_g": [9.0, 13.0]}, 14640: {"wing_mm": [70, 80], "mass_g": [15.0, 21.0]},
    13110: {"wing_mm": [54, 64], "mass_g": [6.5, 9.5]}, 12770: {"wing_mm": [70, 79], "mass_g": [15.0, 24.0]},
    10660: {"wing_mm": [45, 52], "mass_g": [8.0, 12.0]}, 10990: {"wing_mm": [69, 77], "mass_g": [15.0, 21.0]},
    12200: {"wing_mm": [52, 64], "mass_g": [11.0, 17.0]}, 18770: {"wing_mm": [73, 85], "mass_g": [16.0, 23.0]},
    13120: {"wing_mm": [62, 72], "mass_g": [7.0, 11.0]}, 13640: {"wing_mm": [58, 65], "mass_g": [12.0, 17.0]},
}
# the scheme's ring registry: ring -> the bird it was put on
REGISTRY = {
    "AB46102": {"species": 12430, "ringed": "2024-07-30", "site": "R2", "age": "3"},
    "AB45877": {"species": 12510, "ringed": "2024-06-18", "site": "R2", "age": "4"},
    "AB46311": {"species": 12510, "ringed": "2024-08-09", "site": "R2", "age": "3"},
    "AB45960": {"species": 12510, "ringed": "2023-07-12", "site": "R2", "age": "3"},
    "AB44021": {"species": 10990, "ringed": "2023-10-02", "site": "W1", "age": "3"},
    "AB43512": {"species": 14640, "ringed": "2022-09-14", "site": "W1", "age": "3"},
    "AB46990": {"species": 10660, "ringed": "2025-07-21", "site": "W1", "age": "3"},
    "AB47020": {"species": 12510, "ringed": "2025-07-29", "site": "R2", "age": "3"},
    # the last rings issued before each sheet's round
    "AB47310": {"species": 18770, "ringed": "2025-08-12", "site": "R2", "age": "3"},
    "AB47331": {"species": 12510, "ringed": "2025-08-19", "site": "R2", "age": "3"},
    "AB47352": {"species": 14620, "ringed": "2025-08-30", "site": "W1", "age": "3"},
    "AB47366": {"species": 12770, "ringed": "2025-09-06", "site": "W1", "age": "3"},
    "AB47388": {"species": 10990, "ringed": "2025-09-13", "site": "W1", "age": "3"},
}
FOREIGN_SCHEMES = {
    "DEH": {"scheme": "Hiddensee (Germany)", "recoveries_to": "recoveries@hiddensee.example"},
    "NLA": {"scheme": "Arnhem (Netherlands)", "recoveries_to": "vogeltrek@arnhem.example"},
}

SHEETS = {
    "r2-0814": """Site: Wallace Marsh R2 | Date: 2025-08-14 | Ringer: M. Okafor | Ring string: AB, last issued AB47310
06:40 | net 4 | Reed Warbler | new | age 3 | sex U | wing 66 | mass 11.8
07:05 | net 2 | Sedge Warbler | retrap AB46102 | age 4 | sex U | wing 67 | mass 12.4
07:20 | net 6 | Cetti's Warbler | new | age 3 | sex M | wing 60 | mass 14.1
07:45 | net 1 | Reed Bunting | new | age 3 | sex F | wing 76 | mass 18.9
08:10 | net 4 | Reed Warbler | retrap AB45877 | age 4 | sex U | wing 67 | mass 12.0
08:30 | net 5 | Blue Tit | new | age 3 | sex U | wing 63 | mass 10.9""",
    "r2-0821": """Site: Wallace Marsh R2 | Date: 2025-08-21 | Ringer: M. Okafor | Ring string: AB, last issued AB47331
06:35 | net 3 | Reed Warbler | retrap AB46311 | age 4 | sex U | wing 66 | mass 11.4
06:35 | net 3 | Reed Warbler | retrap AB45960 | age 4 | sex U | wing 68 | mass 12.7
07:10 | net 2 | Sedge Warbler | new | age 3 | sex U | wing 65 | mass 13.3
07:40 | net 5 | Chiffchaff | new | age 3 | sex U | wing 58 | mass 7.4
08:05 | net 1 | Wren | new | age 3 | sex U | wing 48 | mass 9.6""",
    "w1-0902": """Site: Hollin Wood W1 | Date: 2025-09-02 | Ringer: S. Varga | Ring string: AB, last issued AB47352
06:50 | net 11 | Blackcap | new | age 3 | sex M | wing 74 | mass 19.2
07:15 | net 12 | Robin | retrap AB44021 | age 4 | sex U | wing 73 | mass 17.6
07:30 | net 14 | Blue Tit | control DEH 90K21034 | age 4 | sex F | wing 64 | mass 11.2
07:55 | net 11 | Great Tit | new | age 3 | sex M | wing 75 | mass 18.1
08:20 | net 13 | Chiffchaff | new | age 3 | sex U | wing 57 | mass 7.9""",
    "w1-0909": """Site: Hollin Wood W1 | Date: 2025-09-09 | Ringer: S. Varga | Ring string: AB, last issued AB47366
06:45 | net 12 | Great Tit | retrap AB43512 | age 6 | sex F | wing 74 | mass 18.4
07:00 | net 11 | Robin | new | age 3 | sex U | wing 71 | mass 16.8
07:25 | net 14 | Blackcap | new | age 3 | sex F | wing 73 | mass 20.3
07:50 | net 13 | Wren | retrap AB46990 | age 3 | sex U | wing 47 | mass 9.1
08:15 | net 12 | Willow Warbler | new | age 3 | sex U | wing 66 | mass 8.6""",
    "r2-0916": """Site: Wallace Marsh R2 | Date: 2025-09-16 | Ringer: M. Okafor | Ring string: AB, last issued AB47388
06:55 | net 3 | Bearded Reedling | new | age 3 | sex M | wing 61 | mass 14.2
07:20 | net 1 | Reed Bunting | new | age 3 | sex M | wing 80 | mass 20.1
07:35 | net 2 | Sedge Warbler | new | age 3 | sex U | wing 66 | mass 15.8
07:50 | net 4 | Reed Warbler | retrap AB47020 | age 3 | sex U | wing 65 | mass 12.2
08:25 | net 5 | Chiffchaff | new | age 3 | sex U | wing 56 | mass 7.2""",
}
INPUTS = {k: {"task": f"ringing sheet {k}: submit the round to the scheme", "sheet": v} for k, v in SHEETS.items()}

CASES = [
    {"n": 1, "input": "r2-0916", "kind": "off_by_one", "root": ("reserve_rings", 1),
     "failure": ("submit_to_scheme", 1),
     "description": "The ring block for the round starts at the last ring already issued (AB47388) instead of "
                    "the next one, so the first new bird is given a ring the registry already holds.",
     "what": "ring block starts at the last issued ring, not the next"},
    {"n": 2, "input": "w1-0902", "kind": "lossy_parsing", "root": ("parse_field_sheet", 1),
     "failure": ("submit_to_scheme", 1),
     "description": "The sheet parser keeps only the last token of a control's ring field, losing the DEH "
                    "scheme code, so the foreign Blue Tit is handled as a home-scheme retrap.",
     "what": "parser drops the foreign scheme code of a control"},
    {"n": 3, "input": "r2-0821", "kind": "subagent_wrong_entity", "root": ("retrap_history", 2),
     "failure": ("submit_to_scheme", 1),
     "description": "The retrap-history sub-agent treats the second Reed Warbler from net 3 as the bird it "
                    "just looked up and returns AB46311's ringing history for AB45960.",
     "what": "retrap sub-agent answers with the other Reed Warbler's history"},
    {"n": 4, "input": "r2-0814", "kind": "hallucinated_value", "root": ("normalise_species", 1),
     "failure": ("submit_to_scheme", 1),
     "description": "The model gives Cetti's Warbler the EURING code 12210, a code that exists in no list "
                    "it was shown (the species is 12200).",
     "what": "model invents a species code for Cetti's Warbler"},
    {"n": 5, "input": "w1-0909", "kind": "bad_memory_write", "root": ("log_capture", 1),
     "failure": ("submit_to_scheme", 1),
     "description": "Logging the retrapped Great Tit merges its ringing history over the day's record, so "
                    "the log keeps its age at ringing (3) instead of today's age (6).",
     "what": "capture log keeps the age at ringing instead of today's age"},
]


# ---------------------------------------------------------------- the model


def brain(request):
    prompt = last_user(request)
    if prompt.startswith("Give the EURING species code"):
        names = json_block(prompt)
        codes = {}
        for name in names:
            code = EURING.get(name)
            if name == "Cetti's Warbler" and SWITCH == "zze_ringing_4":
                code = 12210
            codes[name] = code
        return json.dumps(codes)
    if prompt.startswith("Summarise the ringing history"):
        hist = json_block(prompt)
        if not hist.get("found", True):
            return f"No record of ring {hist['ring']} in the registry."
        return (f"Ring {hist['ring']} was put on a {hist['species_name']} (age code {hist['age']}) at site "
                f"{hist['site']} on {hist['ringed']}; recaptured {hist['days_since']} days later.")
    if prompt.startswith("Write the day summary"):
        day = json_block(prompt)
        n_new = sum(1 for b in day["birds"] if b["status"] == "new")
        return (f"{day['site']} on {day['date']}: {len(day['birds'])} birds handled, {n_new} newly ringed, "
                f"{len(day['birds']) - n_new} retraps or controls. Biometrics notes: "
                f"{'; '.join(day['notes']) or 'none'}.")
    return "I can only help with ringing records."


# ---------------------------------------------------------------- steps


@trajdebug.step(kind="input")
def read_field_sheet(sheet: str) -> str:
    return sheet


@trajdebug.step(kind="parse")
def parse_field_sheet(text: str) -> dict:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    head = dict(part.split(": ", 1) for part in lines[0].split(" | "))
    series, last = re.match(r"(\w+), last issued ([A-Z]+)(\d+)", head["Ring string"]).group(1, 3)
    captures = []
    for ln in lines[1:]:
        time, net, species, status, age, sex, wing, mass = [p.strip() for p in ln.split("|")]
        tokens = status.split()
        word = tokens[0]
        if SWITCH == "zze_ringing_2":
            scheme, ring = HOME_SCHEME, (tokens[-1] if len(tokens) > 1 else None)
        else:
            scheme = tokens[1] if len(tokens) == 3 else HOME_SCHEME
            ring = tokens[-1] if len(tokens) > 1 else None
        captures.append({
            "time": time, "net": int(net.split()[1]), "species_name": species,
            "status": "new" if word == "new" else ("retrap" if scheme == HOME_SCHEME else "control"),
            "scheme": scheme, "ring": ring,
            "age": age.split()[1], "sex": sex.split()[1],
            "wing_mm": float(wing.split()[1]), "mass_g": float(mass.split()[1]),
        })
    site = head["Site"]
    return {"site": site, "site_code": site.split()[-1], "date": head["Date"], "ringer": head["Ringer"],
            "ring_series": series, "last_issued": int(last), "captures": captures}


@trajdebug.step(kind="llm")
def normalise_species(messages: list[dict]) -> dict:
    return complete(messages)


@trajdebug.step(kind="parse")
def read_species_codes(answer: dict) -> dict:
    return json_block(answer["content"])


@trajdebug.step(kind="state")
def reserve_rings(series: str, last_issued: int, count: int) -> list[str]:
    first = last_issued + (0 if SWITCH == "zze_ringing_1" else 1)
    rings = [f"{series}{first + i}" for i in range(count)]
    trajdebug.current_run().state["ring_string"] = {"series": series, "last_issued": first + count - 1}
    return rings


@trajdebug.step(kind="tool")
def query_ring_registry(ring: str) -> dict:
    rec = REGISTRY.get(ring)
    if rec is None:
        return {"ring": ring, "found": False}
    return {"ring": ring, "found": True, **rec}


@trajdebug.step(kind="llm")
def summarise_history(messages: list[dict]) -> dict:
    return complete(messages)


def _days(a: str, b: str) -> int:
    from datetime import date

    return (date.fromisoformat(b) - date.fromisoformat(a)).days


@trajdebug.step(kind="agent")
def retrap_history(bird: dict, day: str) -> dict:
    """A sub-agent: the ringing history of a retrapped bird, with a one-line summary for the day log."""
    memo = trajdebug.current_run().state.setdefault("history_memo", {})
    if SWITCH == "zze_ringing_3":
        key = f"{bird['species_name']}|net {bird['net']}|{bird['time']}"  # same bird caught twice in a round
    else:
        key = f"{bird['species_name']}|net {bird['net']}|{bird['ring']}"
    rec = memo.get(key)
    if rec is None:
        rec = query_ring_registry(bird["ring"])
        memo[key] = rec
    code_names = {v: k for k, v in EURING.items()}
    hist = {"ring": bird["ring"], "found": rec.get("found", False)}
    if hist["found"]:
        hist.update({"ringed": rec["ringed"], "site": rec["site"], "age": rec["age"],
                     "species": rec["species"], "species_name": code_names.get(rec["species"]),
                     "days_since": _days(rec["ringed"], day)})
    summary = summarise_history([
        {"role": "system", "content": "You write one-line ringing histories for the station's day log."},
        {"role": "user", "content": "Summarise the ringing history of this bird: " + json.dumps(hist)},
    ])
    return {**hist, "summary": summary["content"]}


@trajdebug.step(kind="tool")
def lookup_foreign_scheme(scheme: str) -> dict:
    return {"code": scheme, **FOREIGN_SCHEMES.get(scheme, {"scheme": "unknown", "recoveries_to": None})}


@trajdebug.step(kind="retrieval")
def fetch_biometric_norms(species_code: int) -> list[dict]:
    norms = HANDBOOK.get(species_code)
    if norms is None:
        return []
    return [{"source": "handbook, full-grown birds", "species": species_code, **norms}]


@trajdebug.step(kind="condition")
def check_biometrics(bird: dict, norms: list[dict]) -> str:
    if not norms:
        return "no reference"
    n = norms[0]
    notes = []
    if not n["wing_mm"][0] <= bird["wing_mm"] <= n["wing_mm"][1]:
        notes.append(f"wing {bird['wing_mm']} outside {n['wing_mm']}")
    if not n["mass_g"][0] <= bird["mass_g"] <= n["mass_g"][1]:
        notes.append(f"mass {bird['mass_g']} outside {n['mass_g']}")
    return "; ".join(notes) or "within range"


@trajdebug.step(kind="state")
def log_capture(bird: dict, history: dict | None, check: str) -> dict:
    if history is None:
        entry = {**bird, "biometrics": check}
    elif SWITCH == "zze_ringing_5":
        entry = {**bird, **history, "biometrics": check}
    else:
        entry = {**history, **bird, "biometrics": check}
    trajdebug.current_run().state[f"capture:{bird['ring']}"] = entry
    return entry


@trajdebug.step(kind="llm")
def compose_day_summary(messages: list[dict]) -> dict:
    return complete(messages)


@trajdebug.step(kind="other")
def build_submission(sheet: dict, rings: list[str]) -> list[dict]:
    state = trajdebug.current_run().state
    records = []
    for bird in sheet["captures"]:
        e = state[f"capture:{bird['ring']}"]
        rec = {"ring": e["ring"], "scheme": e["scheme"], "species": e["species_code"],
               "date": sheet["date"], "site": sheet["site_code"], "age": e["age"], "sex": e["sex"],
               "wing_mm": e["wing_mm"], "mass_g": e["mass_g"],
               "condition": "new" if e["status"] == "new" else "recapture"}
        if e["status"] != "new" and e["scheme"] == HOME_SCHEME:
            rec["ringing_date"] = e.get("ringed")
        records.append(rec)
    return records


@trajdebug.step(kind="tool")
def submit_to_scheme(records: list[dict]) -> dict:
    valid_codes = set(EURING.values())
    for r in records:
        if r["species"] not in valid_codes:
            raise ValueError(f"record {r['ring']}: unknown EURING species code {r['species']}")
        if r["scheme"] == HOME_SCHEME and r["condition"] == "recapture" and r["ring"] not in REGISTRY:
            raise ValueError(f"ring {r['ring']} was never issued by scheme {HOME_SCHEME}; "
                             f"a foreign ring must be reported as a control with its scheme code")
        if r["condition"] == "new" and r["ring"] in REGISTRY:
            prev = REGISTRY[r["ring"]]
            raise ValueError(f"ring {r['ring']} was already issued on {prev['ringed']} "
                             f"(species {prev['species']}, site {prev['site']})")
        if r["condition"] == "recapture" and r["scheme"] == HOME_SCHEME:
            reg = REGISTRY[r["ring"]]
            if r["ringing_date"] != reg["ringed"]:
                raise ValueError(f"recapture {r['ring']}: ringing date {r['ringing_date']} given, "
                                 f"the registry holds {reg['ringed']}")
            if r["age"] == "3" and reg["ringed"][:4] != r["date"][:4]:
                raise ValueError(f"recapture {r['ring']} is given age code 3 (hatched this year) on "
                                 f"{r['date']} but was ringed on {reg['ringed']}")
    return {"accepted": len(records), "batch": f"GBT-{records[0]['date']}-{records[0]['site']}"}


@trajdebug.step(kind="condition")
def verify_day_totals(sheet: dict, receipt: dict) -> str:
    if receipt["accepted"] != len(sheet["captures"]):
        raise ValueError(f"{receipt['accepted']} records accepted for {len(sheet['captures'])} birds")
    return "day closed"


# ---------------------------------------------------------------- the agent


def process_round(sheet_text: str) -> dict:
    text = read_field_sheet(sheet_text)
    sheet = parse_field_sheet(text)
    names = sorted({b["species_name"] for b in sheet["captures"]})
    answer = normalise_species([
        {"role": "system", "content": "You are the station's records assistant. Answer with JSON only."},
        {"role": "user", "content": "Give the EURING species code for each of these species, as a JSON "
                                    "object name -> code: " + json.dumps(names)},
    ])
    codes = read_species_codes(answer)
    new_birds = [b for b in sheet["captures"] if b["status"] == "new"]
    rings = reserve_rings(sheet["ring_series"], sheet["last_issued"], len(new_birds))
    for bird, ring in zip(new_birds, rings):
        bird["ring"] = ring
    notes = []
    for bird in sheet["captures"]:
        bird["species_code"] = codes.get(bird["species_name"])
        history = None
        if bird["status"] == "retrap":
            history = retrap_history(bird, sheet["date"])
        elif bird["status"] == "control":
            lookup_foreign_scheme(bird["scheme"])
        norms = fetch_biometric_norms(bird["species_code"])
        check = check_biometrics(bird, norms)
        if check not in ("within range", "no reference"):
            notes.append(f"{bird['ring']}: {check}")
        log_capture(bird, history, check)
    compose_day_summary([
        {"role": "system", "content": "You write the station's day summary in two sentences."},
        {"role": "user", "content": "Write the day summary for this round: " + json.dumps(
            {"site": sheet["site"], "date": sheet["date"], "notes": notes,
             "birds": [{"ring": b["ring"], "species": b["species_name"], "status": b["status"]}
                       for b in sheet["captures"]]})},
    ])
    records = build_submission(sheet, rings)
    receipt = submit_to_scheme(records)
    return {"receipt": receipt, "closed": verify_day_totals(sheet, receipt)}


def execute(key: str, path: str) -> None:
    inp = INPUTS[key]
    try:
        with trajdebug.run(NAME, path=path, task=inp["task"]):
            process_round(inp["sheet"])
    except ValueError:
        pass
