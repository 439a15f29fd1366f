"""Funicular railway maintenance log: weekly compliance report from the log (otlp route)."""
import json
from datetime import date, timedelta

import common
import kit
from common import OtlpRec

NAME, ROUTE, DOMAIN = "funicular-maintenance", "otlp", "a funicular railway's maintenance log"
SHAPE = "fetch log (paged tool) -> per day: parse readings, check day -> component limits x3 -> rope inspector sub-agent (record, llm, parse) -> summary llm -> next-test llm -> parse plan -> assemble -> validate"

LIMITS = {"brake pads": {"min_mm": 6.0}, "track brake shoes": {"min_mm": 4.0}, "haul rope": {"min_mm": 38.5}}
NDT = {"north": "2027-02-20", "south": "2027-01-05"}


def _week(cid, start, low_day=None, line="north", ndt_cached="2026-11-30"):
    d0 = date.fromisoformat(start)
    days = []
    for k in range(7):
        a = round(8.4 - 0.1 * k, 1)
        b = round(7.9 - 0.1 * k, 1)
        if low_day == k:
            b = 5.4
        days.append({"date": (d0 + timedelta(days=k)).isoformat(), "a": a, "b": b,
                     "rope": round(39.6 - 0.02 * k, 2), "brake_test": k in (1, 5)})
    return {"id": cid, "line": line, "start": start, "days": days, "ndt_cached": ndt_cached}


INPUTS = {
    "funi-1": _week("funi-1", "2027-03-01"),
    "funi-2": _week("funi-2", "2027-03-08", low_day=3),
    "funi-3": _week("funi-3", "2027-03-15"),
    "funi-4": _week("funi-4", "2027-03-22", low_day=5),
    "funi-5": _week("funi-5", "2027-02-22"),
}
REFS = [_week("funi-r1", "2027-02-15", low_day=2), _week("funi-r2", "2027-03-29"),
        _week("funi-r3", "2027-04-05", low_day=6), _week("funi-r4", "2027-04-12")]
NDT_BY_WEEK = {"funi-r2": "2027-03-25", "funi-r3": "2027-03-25", "funi-r4": "2027-04-01", "funi-4": "2027-03-05",
               "funi-3": "2027-03-01", "funi-1": "2027-02-20", "funi-2": "2027-02-25", "funi-5": "2027-02-01",
               "funi-r1": "2027-02-01"}

CASES = [
    dict(id="funi-1", switch="funi_page", kind="truncated_result", root=("fetch_log", 1),
         failure=("validate_report", 1),
         description="The log fetch returns only the first page of entries and drops the rest of the week without saying so."),
    dict(id="funi-2", switch="funi_limits", kind="wrong_retrieval", root=("component_limits", 1),
         failure=("validate_report", 1),
         description="The limits lookup for brake pads returns the track brake shoe limit, so a worn pad is not flagged."),
    dict(id="funi-3", switch="funi_split", kind="lossy_parsing", root=("parse_readings", 4),
         failure=("validate_report", 1),
         description="The reading parser splits one day's line on semicolons only and loses the car B reading written after a comma."),
    dict(id="funi-4", switch="funi_dates", kind="format_drift", root=("ChatCompletion", 3),
         failure=("validate_report", 1),
         description="The model answers the next brake test date in day/month/year form instead of the ISO form the plan expects."),
    dict(id="funi-5", switch="funi_ndt", kind="stale_data", root=("rope_test_record", 1),
         failure=("validate_report", 1),
         description="The rope inspector reads the rope test record from an old cached copy instead of the current register."),
]


def log_lines(inp):
    out = []
    for k, d in enumerate(inp["days"]):
        sep = ", " if (inp["id"] == "funi-3" and k == 3) else "; "
        out.append(f"{d['date']} | car A pads {d['a']} mm{sep}car B pads {d['b']} mm; rope {d['rope']} mm | "
                   + ("brake test done" if d["brake_test"] else "no brake test"))
    return out


def brain(inp):
    def answer(request):
        p = common.last_user(request)
        body = p.split("\n", 1)[1] if "\n" in p else "{}"
        if p.startswith("ROPE"):
            d = json.loads(body)
            return json.dumps({"rope_ok": d["min_rope"] >= 38.5, "last_test": d["record"]["tested"],
                               "remark": "Rope within limits; splice condition normal."})
        if p.startswith("SUMMARY"):
            d = json.loads(body)
            return f"Week of {d['start']}: {d['flags']} pad flags, rope status {d['rope']}."
        if p.startswith("NEXT"):
            d = json.loads(body)
            nxt = date.fromisoformat(d["week_end"]) + timedelta(days=2)
            return json.dumps({"next_brake_test": nxt.strftime("%d/%m/%Y") if kit.on("funi_dates") else nxt.isoformat()})
        return "OK"
    return answer


SYS = "You are the maintenance clerk of the Castle Hill funicular. Answer with JSON when asked."


def record(inp, path, seed):
    common.SERVER.use(brain(inp))
    lines = log_lines(inp)
    with OtlpRec(NAME, path, f"weekly maintenance report {inp['id']}", seed) as rec:
        def fetch_log(week):
            if kit.on("funi_page"):
                return {"week": week, "entries": lines[:5]}
            return {"week": week, "entries": lines}
        log = rec.call("fetch_log", "tool", fetch_log, inp["start"])
        days = []
        for ln in log["entries"]:
            def parse_readings(line):
                day, body, test = [x.strip() for x in line.split("|")]
                parts = body.split(";") if kit.on("funi_split") else body.replace(",", ";").split(";")
                r = {"date": day, "brake_test": test == "brake test done"}
                for part in parts:
                    words = part.split()
                    if words[0] == "car":
                        r["car_" + words[1].lower()] = float(words[3])
                    elif words[0] == "rope":
                        r["rope"] = float(words[1])
                return r
            r = rec.call("parse_readings", "parse", parse_readings, ln)

            def check_day(r):
                return dict(r, complete=all(k in r for k in ("car_a", "car_b", "rope")))
            days.append(rec.call("check_day", "other", check_day, r))

        limits = {}
        for comp in ("brake pads", "haul rope", "track brake shoes"):
            def component_limits(component):
                key = "track brake shoes" if (kit.on("funi_limits") and component == "brake pads") else component
                return {"component": component, **LIMITS[key]}
            limits[comp] = rec.call("component_limits", "retrieval", component_limits, comp)

        def flag_pads(days, lim):
            return [{"date": d["date"], "car": c, "mm": d[f"car_{c}"]} for d in days for c in ("a", "b")
                    if f"car_{c}" in d and d[f"car_{c}"] < lim["min_mm"]]
        flags = rec.call("flag_pads", "other", flag_pads, days, limits["brake pads"])

        with rec.group("rope_inspector", {"line": inp["line"], "week": inp["start"]}) as box:
            def rope_test_record(line):
                tested = inp["ndt_cached"] if kit.on("funi_ndt") else NDT_BY_WEEK[inp["id"]]
                return {"line": line, "test": "magnetic rope test", "tested": tested}
            rec_ = rec.call("rope_test_record", "tool", rope_test_record, inp["line"])
            min_rope = min(d["rope"] for d in days if "rope" in d)
            verdict = rec.llm("rope_review", SYS, "ROPE review\n" + json.dumps({"record": rec_, "min_rope": min_rope}))
            box["out"] = rec.call("parse_rope", "parse", json.loads, verdict)
        rope = box["out"]
        summary = rec.llm("summary", SYS, "SUMMARY\n" + json.dumps(
            {"start": inp["start"], "flags": len(flags), "rope": "ok" if rope["rope_ok"] else "check"}))
        week_end = (date.fromisoformat(inp["start"]) + timedelta(days=6)).isoformat()
        plan = rec.call("parse_plan", "parse", json.loads,
                        rec.llm("next_test", SYS, "NEXT brake test\n" + json.dumps({"week_end": week_end})))

        def assemble_report(days, flags, rope, plan, summary):
            return {"week": inp["start"], "week_end": week_end, "days": days, "flags": flags, "rope": rope,
                    "next_brake_test": plan["next_brake_test"], "summary": summary}
        report = rec.call("assemble_report", "output", assemble_report, days, flags, rope, plan, summary)

        def validate_report(report):
            if len(report["days"]) != 7:
                raise ValueError(f"report covers {len(report['days'])} of 7 days from {report['week']}")
            for d in report["days"]:
                if not d["complete"]:
                    raise ValueError(f"{d['date']} is missing a reading: {sorted(k for k in d if k != 'complete')}")
                for c in ("a", "b"):
                    if d[f"car_{c}"] < 6.0 and not any(f["date"] == d["date"] and f["car"] == c for f in report["flags"]):
                        raise ValueError(f"car {c.upper()} pads at {d[f'car_{c}']} mm on {d['date']} not flagged (limit 6.0 mm)")
            end = date.fromisoformat(report["week_end"])
            if (end - date.fromisoformat(report["rope"]["last_test"])).days > 30:
                raise ValueError(f"rope test of {report['rope']['last_test']} is over 30 days before {report['week_end']}")
            nxt = date.fromisoformat(report["next_brake_test"])
            if not 0 < (nxt - end).days <= 7:
                raise ValueError(f"next brake test {nxt} is not within 7 days of {end}")
            return {"ok": True}
        rec.call("validate_report", "condition", validate_report, report)
