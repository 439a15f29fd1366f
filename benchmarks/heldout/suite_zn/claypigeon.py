"""Clay pigeon shooting ground bookings (OpenTelemetry spans, OpenInference conventions, OTLP/JSON)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from . import common
from .common import Case
from .kit import active

NAME = "clay-ground-bookings"
ROUTE = "otlp"
DOMAIN = "clay pigeon shooting ground"
SHAPE = "receive enquiry -> read_enquiry (llm) -> member_lookup (tool) -> safety_rules (retriever) -> stand_availability per stand (tool) -> plan_rotation -> instructor_matcher sub-agent (brief, llm, roster tool) -> cartridge_stock (tool) -> price_session -> draft_confirmation (llm) -> assign_stands -> confirm_booking"
MODEL = "clay-ground-1"

MEMBERS = {"M-4471": {"name": "D. Pryce", "tier": "member", "expires": "2025-03-31"},
           "M-5120": {"name": "S. Okafor", "tier": "member", "expires": "2026-01-31"},
           "M-3307": {"name": "H. Lund", "tier": "member", "expires": "2025-12-31"},
           "M-6002": {"name": "P. Greaves", "tier": "member", "expires": "2026-04-30"},
           "M-2290": {"name": "A. Musa", "tier": "member", "expires": "2025-11-30"},
           "M-7718": {"name": "R. Tate", "tier": "member", "expires": "2026-02-28"}}
ROSTER = {"I-03": {"name": "K. Bell", "disciplines": ["sporting", "skeet"]},
          "I-07": {"name": "J. Harlow", "disciplines": ["sporting"]},
          "I-11": {"name": "M. Osei", "disciplines": ["trap", "skeet"]},
          "I-14": {"name": "L. Varga", "disciplines": ["trap", "sporting"]}}
STANDS = {"sporting": ["S1", "S2", "S3", "S4"], "skeet": ["K1", "K2", "K3", "K4"], "trap": ["T1", "T2", "T3", "T4"]}
RATES = {"member": 32.0, "guest": 45.0}

INPUTS = [
    {"enquiry": "CP-6610", "member": "M-4471", "date": "2025-06-14",
     "squads": [{"name": "A", "discipline": "sporting", "guns": 4, "novices": 0},
                {"name": "B", "discipline": "skeet", "guns": 3, "novices": 3}], "v2_stand": "K3"},
    {"enquiry": "CP-6642", "member": "M-5120", "date": "2025-07-05",
     "squads": [{"name": "A", "discipline": "trap", "guns": 5, "novices": 0},
                {"name": "B", "discipline": "sporting", "guns": 4, "novices": 2}], "v2_stand": "S3"},
    {"enquiry": "CP-6588", "member": "M-3307", "date": "2025-05-24",
     "squads": [{"name": "A", "discipline": "skeet", "guns": 3, "novices": 2}], "v2_stand": None},
    {"enquiry": "CP-6597", "member": "M-6002", "date": "2025-06-01",
     "squads": [{"name": "A", "discipline": "sporting", "guns": 6, "novices": 0},
                {"name": "B", "discipline": "trap", "guns": 2, "novices": 1}], "v2_stand": None},
    {"enquiry": "CP-6603", "member": "M-2290", "date": "2025-06-08",
     "squads": [{"name": "A", "discipline": "trap", "guns": 4, "novices": 4}], "v2_stand": None},
    {"enquiry": "CP-6621", "member": "M-7718", "date": "2025-06-21",
     "squads": [{"name": "A", "discipline": "skeet", "guns": 2, "novices": 0},
                {"name": "B", "discipline": "sporting", "guns": 5, "novices": 2}], "v2_stand": None},
]

CASES = [
    Case("zn_claypigeon_1", "stale_data", 0, "member_lookup", 1, "confirm_booking",
         "member_lookup answers from a membership record cached in February, before the membership lapsed, so the member rate is applied."),
    Case("zn_claypigeon_2", "format_drift", 1, "stand_availability", 7, "confirm_booking",
         "stand_availability for stand S3 answers in the API's new 12-hour format ('2:30 PM') and plan_rotation reads it as 02:30."),
    Case("zn_claypigeon_3", "hallucinated_value", 0, "match_instructor", 1, "instructor_roster",
         "the instructor model names an instructor id that is not in the roster it was shown."),
    Case("zn_claypigeon_4", "bad_memory_write", 1, "assign_stands", 1, "confirm_booking",
         "assign_stands writes squad A's stand into squad B's entry of the booking sheet."),
    Case("zn_claypigeon_5", "subagent_wrong_entity", 1, "brief_instructor", 1, "confirm_booking",
         "the instructor sub-agent briefs on the first squad instead of the squad with novices, so the instructor lacks that discipline."),
]


def _inp(text: str) -> dict:
    return next(i for i in INPUTS if i["enquiry"] in text)


@common.policy(MODEL)
def _policy(body: dict) -> str:
    system = body["messages"][0]["content"]
    user = common.first_user(body)
    if "enquiries" in system:
        inp = _inp(user)
        return json.dumps({"enquiry": inp["enquiry"], "member": inp["member"], "date": inp["date"],
                           "squads": inp["squads"], "cartridges": "28g 12-bore"})
    data = common.data_block(body)
    if "instructors" in system:
        fits = [i for i in data["roster"] if data["squad"]["discipline"] in i["disciplines"]]
        pick = fits[0]["id"]
        if active("zn_claypigeon_3"):
            pick = "I-19"
        return json.dumps({"squad": data["squad"]["name"], "instructor": pick})
    return f"Booking {data['enquiry']} on {data['date']}: {data['guns']} guns, {data['total']:.2f} GBP. See you at the clubhouse."


def record(path: Path, inp: dict) -> None:
    ot = common.Otlp("clay-ground")
    try:
        _run(ot, inp)
    finally:
        ot.write(path)


def _run(ot: common.Otlp, inp: dict) -> None:
    with ot.span("clay_ground_booking", "AGENT", input=f"enquiry {inp['enquiry']}", agent__name=NAME) as top:
        with ot.span("receive_enquiry", "CHAIN", input={"enquiry": inp["enquiry"]}) as s:
            squads = "; ".join(f"squad {q['name']}: {q['guns']} guns {q['discipline']}, {q['novices']} novices"
                               for q in inp["squads"])
            s.output = text = f"Enquiry {inp['enquiry']} from member {inp['member']} for {inp['date']}: {squads}."
        enq = json.loads(ot.llm("read_enquiry", MODEL, "You read shooting ground enquiries and answer JSON.", text))
        with ot.span("member_lookup", "TOOL", input={"member": enq["member"]}) as s:
            rec = dict(MEMBERS[enq["member"]])
            if active("zn_claypigeon_1"):
                rec.update(status="active", as_of="2025-02-10")
            else:
                rec.update(status="active" if rec["expires"] >= enq["date"] else "lapsed", as_of=enq["date"])
            s.output = member = {"member": enq["member"], **rec}
        with ot.span("safety_rules", "RETRIEVER", input={"query": "novice supervision"}) as s:
            s.output = rules = [{"id": "SR-4", "content": "Novices shoot only with a CPSA instructor on the stand.",
                                 "instructor_per_novices": 4}]
        slots = []
        for q in enq["squads"]:
            for stand in STANDS[q["discipline"]]:
                with ot.span("stand_availability", "TOOL", input={"stand": stand, "date": enq["date"]}) as s:
                    free = "14:30" if stand.endswith("3") else "10:00"
                    out = {"stand": stand, "free_from": free}
                    if active("zn_claypigeon_2") and stand == inp["v2_stand"]:
                        out = {"stand": stand, "free_from": "2:30 PM", "api": "v2"}
                    s.output = out
                slots.append((q["name"], out))
        with ot.span("plan_rotation", "CHAIN", input={"slots": [o for _, o in slots]}) as s:
            rotation: dict[str, list] = {q["name"]: [] for q in enq["squads"]}
            for squad, out in slots:
                h, m = out["free_from"].split()[0].split(":")
                rotation[squad].append({"stand": out["stand"], "start": f"{int(h):02d}:{m}"})
            s.output = rotation
        novice_squads = [q for q in enq["squads"] if q["novices"]]
        instructor = None
        if novice_squads:
            with ot.span("instructor_matcher", "AGENT", input={"squads": enq["squads"]}, agent__name="instructor_matcher") as m:
                with ot.span("brief_instructor", "CHAIN", input={"squads": enq["squads"]}) as s:
                    squad = enq["squads"][0] if active("zn_claypigeon_5") else novice_squads[0]
                    s.output = brief = {"squad": squad, "roster": [{"id": k, **v} for k, v in ROSTER.items()]}
                pick = json.loads(ot.llm("match_instructor", MODEL, "You match instructors to squads. Answer JSON.",
                                         f"DATA:{json.dumps(brief)}"))
                with ot.span("instructor_roster", "TOOL", input={"instructor": pick["instructor"], "date": enq["date"]}) as s:
                    if pick["instructor"] not in ROSTER:
                        raise LookupError(f"HTTP 404: instructor {pick['instructor']} is not on the roster for {enq['date']}")
                    s.output = held = {"instructor": pick["instructor"], **ROSTER[pick["instructor"]], "held": True}
                m.output = instructor = {"squad": novice_squads[0]["name"], **held}
        with ot.span("cartridge_stock", "TOOL", input={"load": enq["cartridges"], "boxes": sum(q["guns"] for q in enq["squads"]) * 2}) as s:
            s.output = {"load": enq["cartridges"], "on_hand": 400, "held": sum(q["guns"] for q in enq["squads"]) * 2}
        with ot.span("price_session", "CHAIN", input={"member": member, "squads": enq["squads"]}) as s:
            rate = RATES["member"] if member["status"] == "active" else RATES["guest"]
            guns = sum(q["guns"] for q in enq["squads"])
            s.output = price = {"rate": rate, "guns": guns, "total": round(rate * guns + (60.0 if instructor else 0.0), 2)}
        ot.llm("draft_confirmation", MODEL, "You write booking confirmations.",
               f"DATA:{json.dumps({'enquiry': enq['enquiry'], 'date': enq['date'], 'guns': price['guns'], 'total': price['total']})}")
        with ot.span("assign_stands", "CHAIN", input=rotation) as s:
            sheet = {}
            for name, legs in rotation.items():
                sheet[name] = {"first_stand": legs[0]["stand"], "start": legs[0]["start"], "legs": legs}
            if active("zn_claypigeon_4") and "B" in sheet:
                sheet["B"] = dict(sheet["A"])
            s.output = sheet
        booking = {"enquiry": enq["enquiry"], "member": member["member"], "rate": price["rate"], "total": price["total"],
                   "sheet": sheet, "instructor": instructor, "date": enq["date"]}
        with ot.span("confirm_booking", "TOOL", input=booking) as s:
            s.output = _confirm(booking)
        top.output = s.output


def _confirm(b: dict) -> dict:
    """The ground's booking system: checks the session against the member register, the stands and the roster."""
    inp = next(i for i in INPUTS if i["enquiry"] == b["enquiry"])
    expires = MEMBERS[b["member"]]["expires"]
    if b["rate"] == RATES["member"] and expires < b["date"]:
        raise ValueError(f"HTTP 402: member rate applied but membership {b['member']} lapsed on {expires}")
    firsts = [(v["first_stand"], v["start"]) for v in b["sheet"].values()]
    for name, v in b["sheet"].items():
        if firsts.count((v["first_stand"], v["start"])) > 1:
            raise ValueError(f"HTTP 409: stand {v['first_stand']} at {v['start']} is assigned to more than one squad")
        for leg in v["legs"]:
            if not "09:00" <= leg["start"] <= "17:00":
                raise ValueError(f"HTTP 422: stand {leg['stand']} start {leg['start']} is outside opening hours 09:00-17:00")
    novices = [q for q in inp["squads"] if q["novices"]]
    if novices:
        ins = b["instructor"]
        if novices[0]["discipline"] not in ins["disciplines"]:
            raise ValueError(f"HTTP 422: instructor {ins['instructor']} is not qualified for {novices[0]['discipline']} "
                             f"(squad {novices[0]['name']})")
    return {"status": "confirmed", "booking": "BK-" + b["enquiry"][3:]}
