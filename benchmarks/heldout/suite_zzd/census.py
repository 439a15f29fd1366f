"""Census field enumeration (recording SDK).

An enumerator's assistant works one enumeration area (EA): it loads the assignment, pulls the dwelling list
from the address register, visits each dwelling (parsing the tablet questionnaire, letting the model code
the household head's occupation to ISCO, keeping coding notes in run state and uploading the household),
asks the model for a callback plan for dwellings with no contact, revisits them, tallies the EA and submits
the EA return to field headquarters, which validates it.
"""

from __future__ import annotations

import json
from pathlib import Path

import trajdebug
from openai import OpenAI

from .common import Case
from .kit import active

AGENT = "census-enumerator"
ROUTE = "sdk"
DOMAIN = "census field enumeration"
SHAPE = "register retrieval, per-dwelling visit → parse → state → llm coding → upload loop, llm callback plan, revisits, tally, submit"

ISCO = {"electrician": "7411", "nurse": "2221", "farm worker": "9211", "teacher": "2341", "bus driver": "8331",
        "shop assistant": "5223", "accountant": "2411", "cook": "5120", "software developer": "2512",
        "retired": "0000", "student": "0000"}

# dwelling -> (first visit, callback visit) answers from the tablet; "NC" = no contact
AREAS = {
    "EA-0417-03": {
        "D01": ("HH=2;HEAD=electrician;AGES=44,41", None),
        "D02": ("HH=3;HEAD=nurse;AGES=37,9,6", None),
        "D03": ("NC", "HH=1;HEAD=retired;AGES=78"),
        "D04": ("HH=4;HEAD=farm worker;AGES=51,49,14,12", None),
        "D05": ("HH=2;HEAD=teacher;AGES=33,2", None),
        "D06": ("NC", "HH=3;HEAD=bus driver;AGES=45,43,16"),
        "D07": ("HH=1;HEAD=accountant;AGES=29", None),
        "D08": ("HH=2;HEAD=cook;AGES=61,58", None),
        "D09": ("HH=5;HEAD=shop assistant;AGES=39,36,13,10,4", None),
        "D10": ("HH=1;HEAD=student;AGES=21", None),
    },
    "EA-0417-07": {
        "D01": ("HH=3;HEAD=teacher;AGES=40,38,11", None),
        "D02": ("NC", "HH=2;HEAD=cook;AGES=55,54"),
        "D03": ("HH=2;HEAD=software developer;AGES=31,30", None),
        "D04": ("HH=4;HEAD=bus driver;AGES=47,44,15,14", None),
        "D05": ("NC", "HH=1;HEAD=retired;AGES=82"),
        "D06": ("HH=2;HEAD=nurse;AGES=26,1", None),
        "D07": ("HH=3;HEAD=electrician;AGES=52,50,19", None),
    },
    "EA-0522-01": {
        "D01": ("HH=2;HEAD=accountant;AGES=36,35", None),
        "D02": ("HH=1;HEAD=retired;AGES=70", None),
        "D03": ("NC", "HH=3;HEAD=farm worker;AGES=42,40,8"),
        "D04": ("HH=2;HEAD=shop assistant;AGES=24,3", None),
    },
    "EA-0522-04": {
        "D01": ("HH=4;HEAD=nurse;AGES=45,46,17,15", None),
        "D02": ("HH=1;HEAD=student;AGES=20", None),
        "D03": ("HH=2;HEAD=cook;AGES=63,60", None),
        "D04": ("NC", "HH=2;HEAD=teacher;AGES=29,28"),
        "D05": ("HH=3;HEAD=electrician;AGES=38,35,5", None),
    },
    "EA-0610-02": {
        "D01": ("NC", "HH=2;HEAD=bus driver;AGES=50,48"),
        "D02": ("HH=3;HEAD=software developer;AGES=34,33,1", None),
        "D03": ("HH=1;HEAD=retired;AGES=90", None),
        "D04": ("HH=2;HEAD=farm worker;AGES=58,57", None),
        "D05": ("HH=4;HEAD=shop assistant;AGES=41,40,12,9", None),
        "D06": ("HH=1;HEAD=accountant;AGES=27", None),
    },
    "EA-0610-05": {
        "D01": ("HH=2;HEAD=teacher;AGES=35,7", None),
        "D02": ("HH=2;HEAD=electrician;AGES=60,59", None),
        "D03": ("HH=3;HEAD=nurse;AGES=31,30,14", None),
        "D04": ("NC", "HH=1;HEAD=cook;AGES=44"),
    },
}
INPUTS = {k: k for k in AREAS}
REFS = ["EA-0522-01", "EA-0522-04", "EA-0610-02", "EA-0610-05"]

CASES = [
    Case("zzd-census-01", "truncated_result", "census.register_page", "EA-0417-03", "fetch_address_register", 1,
         "submit_ea_return", 1, "The address register answers only its first page of eight dwellings, so the EA "
         "return covers 8 of the 10 registered dwellings."),
    Case("zzd-census-02", "swallowed_error", "census.upload_409", "EA-0417-03", "upload_household", 4,
         "submit_ea_return", 1, "The upload of household D05 drops its connection and the upload step swallows the "
         "exception and reports it synced, so headquarters has no D05 household record."),
    Case("zzd-census-03", "context_pollution", "census.keep_notes", "EA-0417-07", "keep_coding_notes", 2,
         "submit_ea_return", 1, "The coding notes of the previous household are kept in the context of the next "
         "one, so the model codes D03's head with the previous household's occupation."),
    Case("zzd-census-04", "plan_error", "census.plan_drop", "EA-0417-03", "plan_callbacks", 1,
         "submit_ea_return", 1, "The model's callback plan leaves out non-contact dwelling D06, which stays "
         "without an outcome in the return."),
    Case("zzd-census-05", "off_by_one", "census.age_bound", "EA-0417-07", "tally_ea", 1,
         "submit_ea_return", 1, "The tally counts ages 0-14 with an exclusive bound of 14, so the age table "
         "disagrees with the person rows."),
]


def _policy(request):
    messages = request.body["messages"]
    system = messages[0]["content"]
    user = json.loads(messages[-1]["content"])
    if system.startswith("You code occupations"):
        notes = user["coding_notes"]
        text = notes[0]["occupation"]
        return json.dumps({"dwelling": user["dwelling"], "occupation": text, "isco": ISCO[text]})
    if system.startswith("You plan callbacks"):
        pending = user["non_contact"]
        if active("census.plan_drop"):
            pending = pending[:1]
        slots = ["Sat 10:00", "Sat 14:00", "Sun 11:00"]
        return json.dumps({"callbacks": [{"dwelling": d, "slot": slots[i % 3]} for i, d in enumerate(pending)]})
    raise ValueError("unexpected prompt")


class FieldHQError(RuntimeError):
    pass


def record(server, key: str, path: Path) -> None:
    server.use(_policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    area = AREAS[key]
    received: dict[str, dict] = {}

    def chat(messages):
        reply = client.chat.completions.create(model="field-assist-model", messages=messages)
        return json.loads(reply.choices[0].message.content)

    @trajdebug.step(kind="tool")
    def load_ea_assignment(ea: str) -> dict:
        return {"ea": ea, "enumerator": "ENU-218", "close_date": "2027-03-28", "mode": "face-to-face"}

    @trajdebug.step(kind="retrieval")
    def fetch_address_register(ea: str, limit: int = 50) -> dict:
        rows = [{"dwelling": d, "address": f"{10 + 2 * i} Quarry Lane, {ea}"} for i, d in enumerate(area)]
        if active("census.register_page"):
            rows = rows[:8]
        return {"ea": ea, "dwellings": rows}

    @trajdebug.step(kind="tool")
    def visit_dwelling(dwelling: str, attempt: str) -> dict:
        first, second = area[dwelling]
        return {"dwelling": dwelling, "visit": attempt, "tablet": first if attempt == "first" else second}

    @trajdebug.step(kind="parse")
    def parse_questionnaire(visit: dict) -> dict:
        fields = dict(part.split("=", 1) for part in visit["tablet"].split(";"))
        ages = [int(a) for a in fields["AGES"].split(",")]
        return {"dwelling": visit["dwelling"], "size": int(fields["HH"]), "head_occupation": fields["HEAD"],
                "ages": ages}

    @trajdebug.step(kind="state")
    def keep_coding_notes(household: dict) -> list:
        state = trajdebug.current_run().state
        note = {"dwelling": household["dwelling"], "occupation": household["head_occupation"]}
        if active("census.keep_notes"):
            state["coding_notes"] = [*state.get("coding_notes", []), note]
        else:
            state["coding_notes"] = [note]
        return state["coding_notes"]

    @trajdebug.step(kind="llm")
    def code_occupation(messages: list[dict]) -> dict:
        return chat(messages)

    @trajdebug.step(kind="tool")
    def upload_household(household: dict, coding: dict) -> dict:
        try:
            if active("census.upload_409") and household["dwelling"] == "D05":
                raise ConnectionResetError("field server closed the connection during upload")
            received[household["dwelling"]] = {**household, "isco": coding["isco"]}
            return {"synced": True, "record": f"{key}-{household['dwelling']}"}
        except ConnectionResetError:
            return {"synced": True, "record": None}

    @trajdebug.step(kind="llm")
    def plan_callbacks(messages: list[dict]) -> dict:
        return chat(messages)

    @trajdebug.step(kind="other")
    def tally_ea(households: list[dict]) -> dict:
        ages = [a for h in households for a in h["ages"]]
        upper = 14 if active("census.age_bound") else 15
        return {"households": len(households), "persons": len(ages),
                "age_0_14": sum(a < upper for a in ages), "age_15_64": sum(15 <= a < 65 for a in ages),
                "age_65_plus": sum(a >= 65 for a in ages)}

    @trajdebug.step(kind="tool")
    def submit_ea_return(ea: str, households: list[dict], outcomes: dict, tally: dict) -> dict:
        if len(outcomes) != len(area):
            raise FieldHQError(f"HTTP 422: EA {ea} return covers {len(outcomes)} dwellings, the address "
                               f"register lists {len(area)}")
        for d, outcome in outcomes.items():
            if outcome == "non-contact":
                raise FieldHQError(f"HTTP 422: EA {ea} dwelling {d} has status 'non-contact' with no callback "
                                   f"outcome before close date 2027-03-28")
            if outcome == "enumerated" and d not in received:
                raise FieldHQError(f"HTTP 422: EA {ea} dwelling {d} marked enumerated but no household record "
                                   f"was received by the field server")
        for h in households:
            occupation = area[h["dwelling"]][0 if area[h["dwelling"]][1] is None else 1].split(";")[1][5:]
            if received[h["dwelling"]]["isco"] != ISCO[occupation]:
                raise FieldHQError(f"HTTP 422: EA {ea} dwelling {h['dwelling']} head: ISCO "
                                   f"{received[h['dwelling']]['isco']} does not match occupation text "
                                   f"'{occupation}'")
        ages = [a for h in households for a in h["ages"]]
        if tally["age_0_14"] + tally["age_15_64"] + tally["age_65_plus"] != len(ages):
            raise FieldHQError(f"HTTP 422: EA {ea} age table sums to "
                               f"{tally['age_0_14'] + tally['age_15_64'] + tally['age_65_plus']} persons, "
                               f"person rows give {len(ages)}")
        return {"status": 201, "ea": ea, "accepted_households": len(households)}

    def enumerate_one(dwelling: str, attempt: str, households: list, outcomes: dict) -> None:
        visit = visit_dwelling(dwelling, attempt)
        if visit["tablet"] == "NC":
            outcomes[dwelling] = "non-contact"
            return
        household = parse_questionnaire(visit)
        notes = keep_coding_notes(household)
        coding = code_occupation([
            {"role": "system", "content": "You code occupations to ISCO-08 unit groups from the coding notes. "
                                          "Answer JSON."},
            {"role": "user", "content": json.dumps({"dwelling": dwelling, "coding_notes": notes})},
        ])
        upload_household(household, coding)
        households.append(household)
        outcomes[dwelling] = "enumerated"

    try:
        with trajdebug.run(AGENT, task=f"enumerate {key}", path=str(path)):
            assignment = load_ea_assignment(key)
            register = fetch_address_register(assignment["ea"])
            households: list[dict] = []
            outcomes: dict[str, str] = {}
            for row in register["dwellings"]:
                enumerate_one(row["dwelling"], "first", households, outcomes)
            pending = [d for d, o in outcomes.items() if o == "non-contact"]
            plan = plan_callbacks([
                {"role": "system", "content": "You plan callbacks for dwellings with no contact before the EA "
                                              "close date. Answer JSON."},
                {"role": "user", "content": json.dumps({"ea": key, "close_date": assignment["close_date"],
                                                        "non_contact": pending})},
            ])
            for cb in plan["callbacks"]:
                enumerate_one(cb["dwelling"], "callback", households, outcomes)
            tally = tally_ea(households)
            submit_ea_return(key, households, outcomes, tally)
    except FieldHQError:
        pass
