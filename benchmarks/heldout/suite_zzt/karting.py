"""Karting track race nights: book a group's race night (sdk route)."""
import json

import common
import kit
from common import SdkRec

NAME, ROUTE, DOMAIN = "karting-race-nights", "sdk", "a karting track's race nights"
SHAPE = "extract booking (llm) -> parse -> per driver: kart allocation + roster memory -> calendar (retried) -> slot choice -> heat plan (llm) -> price -> marshal briefing sub-agent (3 steps) -> assemble -> validate"

CURFEW = "22:00"
KART_RATING_KG = 130
NOTEBOOK = []  # the marshal desk's running notes, shared across bookings
SLOTS = {"2027-02-05": ["18:30", "20:00"], "2027-02-12": ["19:00", "20:30"], "2027-02-19": ["18:00", "20:00"],
         "2027-02-26": ["19:30", "20:45"], "2027-03-05": ["18:30", "20:15"], "2027-03-12": ["19:00"],
         "2027-03-19": ["18:00", "19:30"], "2027-03-26": ["20:00"], "2027-04-02": ["18:30"]}


def _i(cid, group, date, fmt, drivers):
    return {"id": cid, "group": group, "date": date, "format": fmt, "drivers": drivers}


INPUTS = {
    "kart-1": _i("kart-1", "Northgate Plumbers", "2027-02-05", "sprint",
                 [["Dev", 82, "kg", 34], ["Colm", 190, "lb", 41], ["Rhea", 64, "kg", 29], ["Ayo", 91, "kg", 38],
                  ["Ines", 58, "kg", 26]]),
    "kart-2": _i("kart-2", "Bramley Rugby Club", "2027-02-12", "endurance",
                 [["Tom", 96, "kg", 24], ["Sione", 108, "kg", 27], ["Gaz", 88, "kg", 31], ["Lewis", 79, "kg", 22]]),
    "kart-3": _i("kart-3", "Okafor Birthday", "2027-02-19", "sprint",
                 [["Ada", 45, "kg", 15], ["Femi", 72, "kg", 44], ["Obi", 50, "kg", 16], ["Kemi", 66, "kg", 40],
                  ["Tolu", 41, "kg", 14]]),
    "kart-4": _i("kart-4", "Castlefield Dental", "2027-02-26", "sprint",
                 [["Priya", 61, "kg", 33], ["Marek", 84, "kg", 45], ["Jo", 70, "kg", 37], ["Sam", 77, "kg", 52],
                  ["Lin", 55, "kg", 29], ["Owen", 93, "kg", 48]]),
    "kart-5": _i("kart-5", "Hollis Family", "2027-03-05", "sprint",
                 [["Greg", 88, "kg", 47], ["Maya", 48, "kg", 15], ["Jack", 53, "kg", 17], ["Ruth", 63, "kg", 45]]),
}
REFS = [
    _i("kart-r1", "Tanner Street Bakers", "2027-03-12", "sprint",
       [["Bea", 59, "kg", 36], ["Raf", 176, "lb", 43], ["Ken", 81, "kg", 51], ["Zoe", 62, "kg", 27]]),
    _i("kart-r2", "Wexley Scouts", "2027-03-19", "sprint",
       [["Ali", 44, "kg", 14], ["Ben", 49, "kg", 15], ["Cara", 52, "kg", 16], ["Dai", 86, "kg", 39],
        ["Esme", 47, "kg", 15]]),
    _i("kart-r3", "Morrow Logistics", "2027-03-26", "endurance",
       [["Hal", 99, "kg", 35], ["Ivo", 73, "kg", 30], ["Jas", 68, "kg", 28], ["Kit", 85, "kg", 44]]),
    _i("kart-r4", "Pemberton Stag", "2027-04-02", "sprint",
       [["Lou", 92, "kg", 31], ["Max", 104, "kg", 30], ["Ned", 77, "kg", 32], ["Oli", 210, "lb", 33],
        ["Pip", 70, "kg", 29], ["Quin", 81, "kg", 31]]),
]

CASES = [
    dict(id="kart-1", switch="kart_pounds", kind="unit_error", root=("parse_booking", 1),
         failure=("validate_race_night", 1),
         description="The booking parser keeps a weight given in pounds as if it were kilograms."),
    dict(id="kart-2", switch="kart_calendar", kind="stale_data", root=("fetch_calendar", 2),
         failure=("validate_race_night", 1),
         description="After a retry the calendar answers from last season's cached opening hours, with a later closing time than the curfew allows."),
    dict(id="kart-3", switch="kart_fleet", kind="swallowed_error", root=("allocate_kart", 5),
         failure=("validate_race_night", 1),
         description="The kart allocation catches the fleet service's refusal for a junior and returns an adult kart as a default."),
    dict(id="kart-4", switch="kart_heats", kind="plan_error", root=("plan_heats", 1),
         failure=("validate_race_night", 1),
         description="The heat plan leaves one driver out of every heat."),
    dict(id="kart-5", switch="kart_notes", kind="context_pollution", root=("gather_notes", 1),
         failure=("validate_race_night", 1),
         description="The briefing notes carry the previous booking's notes into the prompt, and the briefing takes that group's headcount."),
]


def brain(inp):
    def answer(request):
        p = common.last_user(request)
        body = p.split("\n", 1)[1] if "\n" in p else ""
        if p.startswith("EXTRACT"):
            return json.dumps({"group": inp["group"], "date": inp["date"], "format": inp["format"],
                               "drivers": [{"name": n, "weight": w, "unit": u, "age": a}
                                           for n, w, u, a in inp["drivers"]]})
        if p.startswith("HEATS"):
            d = json.loads(body)
            names = [x["name"] for x in d["drivers"]]
            if kit.on("kart_heats"):
                names = names[:-1]
            heats = [{"heat": 1, "drivers": names}, {"heat": 2, "drivers": list(reversed(names))}]
            if d["format"] == "endurance":
                heats.append({"heat": 3, "drivers": names})
            return json.dumps({"heats": heats, "start": d["slot"]})
        if p.startswith("BRIEFING"):
            notes = json.loads(body)["notes"]
            return json.dumps({"group": notes[0]["group"], "headcount": notes[0]["headcount"],
                               "juniors": notes[0]["juniors"], "text": "Helmets on, flags explained, no bumping."})
        return "OK"
    return answer


SYS = "You are the race-night coordinator at Ridgeway Karting. Answer with JSON."


def record(inp, path, seed):
    common.SERVER.use(brain(inp))
    text = (f"Race night for {inp['group']} on {inp['date']}, {inp['format']} format. Drivers: "
            + ", ".join(f"{n} ({w} {u}, age {a})" for n, w, u, a in inp["drivers"]))
    calls = {"calendar": 0}
    with SdkRec(NAME, path, f"book race night {inp['id']}") as rec:
        rec.call("booking_request", "input", lambda t: t, text)
        raw = rec.llm("extract_booking", SYS, "EXTRACT the booking as JSON.\n" + text)

        def parse_booking(raw):
            d = json.loads(raw)
            for x in d["drivers"]:
                lb = x.pop("unit") == "lb" and not kit.on("kart_pounds")
                x["kg"] = round(x.pop("weight") * 0.4536, 1) if lb else x.pop("weight")
            return d
        booking = rec.call("parse_booking", "parse", parse_booking, raw)

        for drv in booking["drivers"]:
            def allocate_kart(name, kg, age):
                junior = age < 16
                if junior and kg < 42 and kit.on("kart_fleet"):
                    try:
                        raise RuntimeError("no cadet kart under 42 kg free: pool held for a school group")
                    except RuntimeError:
                        return {"driver": name, "kart_class": "adult 270cc", "ballast_kg": 0}
                ballast = max(0, 80 - kg) if not junior else 0
                return {"driver": name, "kart_class": "cadet 120cc" if junior else "adult 270cc",
                        "ballast_kg": ballast}
            kart = rec.call("allocate_kart", "tool", allocate_kart, drv["name"], drv["kg"], drv["age"])

            def note_driver(drv, kart):
                roster = rec.state.setdefault("roster", [])
                roster.append(dict(drv, **kart))
                return len(roster)
            rec.call("note_driver", "state", note_driver, drv, kart)

        def fetch_calendar(date):
            calls["calendar"] += 1
            if calls["calendar"] == 1:
                raise ConnectionError("booking calendar did not answer")
            close = "23:00" if kit.on("kart_calendar") else "22:00"
            return {"date": date, "slots": SLOTS[date], "track_closes": close}
        cal = rec.call_retry("fetch_calendar", "tool", fetch_calendar, booking["date"])

        def choose_slot(cal, fmt):
            need = 25 * (3 if fmt == "endurance" else 2) + 20
            h, m = map(int, cal["track_closes"].split(":"))
            fits = [x for x in cal["slots"] if int(x[:2]) * 60 + int(x[3:]) + need <= h * 60 + m]
            return fits[-1]
        slot = rec.call("choose_slot", "condition", choose_slot, cal, booking["format"])
        plan = json.loads(rec.llm("plan_heats", SYS, "HEATS for tonight\n" + json.dumps(
            {"drivers": booking["drivers"], "format": booking["format"], "slot": slot})))

        def schedule(plan, cal):
            h, m = map(int, plan["start"].split(":"))
            end = h * 60 + m + 25 * len(plan["heats"]) + 20
            return {"start": plan["start"], "finish": f"{end // 60:02d}:{end % 60:02d}",
                    "track_closes": cal["track_closes"]}
        times = rec.call("schedule_heats", "other", schedule, plan, cal)
        price = rec.call("price_night", "tool", lambda n, f: {"per_driver": 39.0 if f == "sprint" else 55.0,
                                                              "total": n * (39.0 if f == "sprint" else 55.0)},
                         len(booking["drivers"]), booking["format"])

        with rec.group("marshal_briefing", {"group": booking["group"]}) as box:
            def gather_notes(group):
                roster = rec.state["roster"]
                mine = {"group": group, "headcount": len(roster),
                        "juniors": sum(1 for r in roster if r["age"] < 16)}
                notes = ([NOTEBOOK[-1]] if kit.on("kart_notes") and NOTEBOOK else []) + [mine]
                return notes
            notes = rec.call("gather_notes", "other", gather_notes, booking["group"])
            rules = rec.call("safety_rules", "retrieval", lambda j: {
                "rules": ["full-face helmet", "neck brace for under 16s" if j else "no neck brace needed"]},
                notes[-1]["juniors"] > 0)
            brief = json.loads(rec.llm("write_briefing", SYS, "BRIEFING\n" + json.dumps(
                {"notes": notes, "rules": rules["rules"]})))
            box["out"] = brief
        NOTEBOOK.append(notes[-1])

        def assemble_night(booking, plan, times, price, brief):
            return {"group": booking["group"], "date": booking["date"], "roster": rec.state["roster"],
                    "heats": plan["heats"], "times": times, "price": price, "briefing": brief}
        night = rec.call("assemble_night", "output", assemble_night, booking, plan, times, price, brief)

        def validate_race_night(night):
            for r in night["roster"]:
                if r["kg"] > KART_RATING_KG:
                    raise ValueError(f"{r['name']} listed at {r['kg']} kg, above the {KART_RATING_KG} kg kart rating")
                if r["age"] < 16 and not r["kart_class"].startswith("cadet"):
                    raise ValueError(f"{r['name']} (age {r['age']}) is allocated a {r['kart_class']} kart")
            names = {r["name"] for r in night["roster"]}
            for h in night["heats"]:
                if set(h["drivers"]) != names:
                    raise ValueError(f"heat {h['heat']} has {len(h['drivers'])} of {len(names)} drivers")
            if night["times"]["finish"] > CURFEW:
                raise ValueError(f"last heat ends {night['times']['finish']}, after the {CURFEW} curfew")
            if night["briefing"]["headcount"] != len(names):
                raise ValueError(f"briefing for {night['briefing']['headcount']} drivers, roster has {len(names)}")
            return {"ok": True}
        rec.call("validate_race_night", "condition", validate_race_night, night)
