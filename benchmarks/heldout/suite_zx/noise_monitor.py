"""Noise complaint monitoring: builds sensor evidence for a complaint and issues an abatement notice (OTLP)."""

from __future__ import annotations

import json
import re
from datetime import date, timedelta

from . import kit
from .common import ApiError, Case, Otlp

AGENT, ROUTE, DOMAIN = "noise_monitor", "otlp", "noise complaint monitoring"
RUN_NAME, MODEL = "noise-complaint-monitor", "nuisance-officer-7"
SHAPE = "parse complaint -> monitoring plan (llm) -> sensor search (retriever) -> per night: readings (tool), night level -> case officer sub-agent (llm, premises tool, draft) -> issue notice"

SENSORS = [
    {"id": "NS-17", "street": "Ash Grove", "postcode": "LS6 2AB", "m": 40}, {"id": "NS-18", "street": "Ash Grove", "postcode": "LS6 2AB", "m": 75},
    {"id": "NS-41", "street": "Ash Road", "postcode": "LS6 3HE", "m": 1800}, {"id": "NS-42", "street": "Ash Road", "postcode": "LS6 3HE", "m": 1850},
    {"id": "NS-22", "street": "Brudenell Grove", "postcode": "LS6 1HS", "m": 60}, {"id": "NS-23", "street": "Brudenell Grove", "postcode": "LS6 1HS", "m": 90},
    {"id": "NS-30", "street": "Otley Road", "postcode": "LS6 3AA", "m": 30}, {"id": "NS-31", "street": "Otley Road", "postcode": "LS6 3AA", "m": 120},
    {"id": "NS-50", "street": "Cardigan Road", "postcode": "LS6 1LF", "m": 55}, {"id": "NS-51", "street": "Cardigan Road", "postcode": "LS6 1LF", "m": 80},
    {"id": "NS-60", "street": "Headingley Lane", "postcode": "LS6 1BN", "m": 45}, {"id": "NS-61", "street": "Headingley Lane", "postcode": "LS6 1BN", "m": 70},
]
PREMISES = {"The Cellar Bar": "Licence LN/0412 held by Cellar Leisure Ltd", "Brudenell Social": "Licence LN/0177 held by Brudenell Social Club",
            "Otley Road Kebab House": "Licence LN/0930 held by K. Demir", "Cardigan Arms": "Licence LN/0288 held by Northern Inns plc",
            "Skyrack": "Licence LN/0351 held by Skyrack Taverns Ltd"}
DWELLINGS = {"Flat 3, 22 Ash Grove, LS6 2AB", "Flat 1, 14 Brudenell Grove, LS6 1HS", "Flat 2, 101 Otley Road, LS6 3AA",
             "Flat 5, 9 Cardigan Road, LS6 1LF", "Flat 4, 3 Headingley Lane, LS6 1BN"}

INPUTS = {
    "ash_grove": {"ref": "NC-2027-0412", "premises": "The Cellar Bar", "start": "2027-03-10", "nights": 7,
                  "text": "Loud bass from the bar below my flat. Address: Flat 3, 22 Ash Grove, LS6 2AB. Most nights after 23:00 from 2027-03-10 for a week."},
    "brudenell": {"ref": "NC-2027-0431", "premises": "Brudenell Social", "start": "2027-03-18", "nights": 6,
                  "text": "Amplified music and crowds leaving late. Address: Flat 1, 14 Brudenell Grove, LS6 1HS. Every night from 2027-03-18, six nights."},
    "otley": {"ref": "NC-2027-0388", "premises": "Otley Road Kebab House", "start": "2027-03-02", "nights": 5,
              "text": "Extractor fan roaring all night. Address: Flat 2, 101 Otley Road, LS6 3AA. Five nights from 2027-03-02."},
    "cardigan": {"ref": "NC-2027-0450", "premises": "Cardigan Arms", "start": "2027-03-22", "nights": 6,
                 "text": "Karaoke through the wall past midnight. Address: Flat 5, 9 Cardigan Road, LS6 1LF. Six nights from 2027-03-22."},
    "headingley": {"ref": "NC-2027-0467", "premises": "Skyrack", "start": "2027-03-25", "nights": 5,
                   "text": "Beer garden speakers. Address: Flat 4, 3 Headingley Lane, LS6 1BN. Five nights from 2027-03-25."},
}
REFS = ["brudenell", "otley", "cardigan", "headingley"]

CASES = [
    Case("zx_noise_1", "noise.exceed_units", "unit_error", "ash_grove", ("night_level", 1, "other"),
         ("issue_abatement_notice", 1), "night_level counts five-minute intervals and reports them as hours of exceedance."),
    Case("zx_noise_2", "noise.sensor_search", "wrong_retrieval", "brudenell", ("find_nearby_sensors", 1, "retrieval"),
         ("issue_abatement_notice", 1), "The sensor search matches on the street's last word and returns the Ash Grove sensors for Brudenell Grove."),
    Case("zx_noise_3", "noise.reading_stamp", "format_drift", "ash_grove", ("fetch_sensor_readings", 4, "tool"),
         ("issue_abatement_notice", 1), "The readings service answers the fourth night with epoch timestamps instead of ISO dates."),
    Case("zx_noise_4", "noise.holder_parse", "lossy_parsing", "brudenell", ("draft_notice", 1, "other"),
         ("issue_abatement_notice", 1), "draft_notice reads the licence holder with a one-word pattern and keeps only its first word."),
    Case("zx_noise_5", "noise.plan_window", "plan_error", "ash_grove", ("plan_monitoring", 1, "llm"),
         ("issue_abatement_notice", 1), "The monitoring plan measures the evening window 19:00-23:00 instead of the night period."),
]


def policy(messages: list[dict]) -> str:
    system, user = messages[0]["content"], messages[-1]["content"]
    if system.startswith("Plan"):
        window = ["19:00", "23:00"] if kit.active("noise.plan_window") else ["23:00", "07:00"]
        return json.dumps({"window": window, "threshold_dba": 45, "min_nights": 3})
    if system.startswith("Assess"):
        nights = len(re.findall(r'"exceed_h": [1-9]', user))
        return f"Statutory nuisance likely: {nights} nights with exceedance above 45 dB(A) at the dwelling."
    return "ok"


def _readings(sensor: str, day: str, window: list[str]) -> list[dict]:
    night = window[0] == "23:00"
    base = 52 if night else 41
    seed = int(day[-2:]) + int(sensor[-2:])
    return [{"t": f"{day}T{window[0]}", "sensor": sensor, "i": i, "laeq": base + (seed + i) % 6 - (0 if i % 4 else 8)} for i in range(24)]


def record(key: str) -> dict:
    inp = INPUTS[key]
    o = Otlp("noise-monitor")
    try:
        with o.span(RUN_NAME, "AGENT", inp["text"], agent__name=RUN_NAME) as root:
            with o.span("parse_complaint", "CHAIN", inp["text"]) as s:
                address = re.search(r"Address: ([^.]+)\.", inp["text"]).group(1)
                complaint = {"ref": inp["ref"], "address": address, "street": re.search(r"\d+ ([A-Za-z ]+),", address).group(1),
                             "start": inp["start"], "nights": inp["nights"]}
                s["out"] = complaint
            plan = json.loads(o.llm("plan_monitoring", MODEL, [
                {"role": "system", "content": "Plan the noise monitoring: measurement window and threshold, as JSON."},
                {"role": "user", "content": f"Complaint {json.dumps(complaint)}; night period 23:00-07:00."}]))
            with o.span("find_nearby_sensors", "RETRIEVER", {"street": complaint["street"]}) as s:
                if kit.active("noise.sensor_search"):
                    hits = sorted((x for x in SENSORS if x["street"].endswith(complaint["street"].split()[-1])), key=lambda x: x["id"])[:2]
                else:
                    hits = [x for x in SENSORS if x["street"] == complaint["street"]][:2]
                s["out"] = {"documents": hits}
            evidence = []
            for n in range(complaint["nights"]):
                day = (date.fromisoformat(complaint["start"]) + timedelta(days=n)).isoformat()
                with o.span("fetch_sensor_readings", "TOOL", {"sensors": [h["id"] for h in hits], "night": day, "window": plan["window"]}, tool__name="fetch_sensor_readings") as s:
                    rows = [r for h in hits for r in _readings(h["id"], day, plan["window"])]
                    if kit.active("noise.reading_stamp") and n == 3:
                        epoch = int((date.fromisoformat(day) - date(1970, 1, 1)).total_seconds())
                        rows = [{**r, "t": str(epoch + 82800)} for r in rows]
                    s["out"] = {"rows": rows}
                with o.span("night_level", "CHAIN", {"rows": len(rows), "threshold_dba": plan["threshold_dba"]}) as s:
                    above = sum(1 for r in rows if r["laeq"] > plan["threshold_dba"]) / len(hits)
                    hours = above * 5 if kit.active("noise.exceed_units") else round(above * 5 / 60, 2)
                    level = {"night": rows[0]["t"][:10], "window": plan["window"], "exceed_h": hours,
                             "max_laeq": max(r["laeq"] for r in rows)}
                    s["out"] = level
                evidence.append(level)
            with o.span("case_officer", "AGENT", {"ref": complaint["ref"]}, agent__name="case_officer"):
                opinion = o.llm("assess_nuisance", MODEL, [
                    {"role": "system", "content": "Assess whether the evidence shows a statutory nuisance."},
                    {"role": "user", "content": json.dumps({"complaint": complaint, "evidence": evidence})}])
                with o.span("lookup_premises", "TOOL", {"premises": inp["premises"]}, tool__name="lookup_premises") as s:
                    licence = {"premises": inp["premises"], "licence": PREMISES[inp["premises"]]}
                    s["out"] = licence
                with o.span("draft_notice", "CHAIN", {"opinion": opinion, "licence": licence}) as s:
                    pat = r"held by (\S+)" if kit.active("noise.holder_parse") else r"held by (.+)$"
                    notice = {"served_on": re.search(pat, licence["licence"]).group(1), "ref": complaint["ref"], "dwelling": complaint["address"], "premises": inp["premises"],
                              "sensors": [h["id"] for h in hits], "evidence": evidence, "opinion": opinion}
                    s["out"] = notice
            with o.span("issue_abatement_notice", "TOOL", notice, tool__name="issue_abatement_notice") as s:
                period_end = (date.fromisoformat(complaint["start"]) + timedelta(days=complaint["nights"] - 1)).isoformat()
                holder = PREMISES[inp["premises"]].split(" held by ")[1]
                if notice["served_on"] != holder:
                    raise ApiError(f"HTTP 422: notice must be served on the licence holder of record for {inp['premises']} "
                                   f"({PREMISES[inp['premises']].split(' held by ')[0]}); notice names '{notice['served_on']}'")
                if notice["dwelling"] not in DWELLINGS:
                    raise ApiError(f"HTTP 422: notice must name the affected dwelling; '{notice['dwelling']}' matches "
                                   f"{sum(1 for d in DWELLINGS if notice['dwelling'] in d) or 'no'} dwelling on the register")
                far = [x["id"] for x in SENSORS if x["id"] in notice["sensors"] and (x["m"] > 200 or x["street"] not in notice["dwelling"])]
                if far:
                    raise ApiError(f"HTTP 422: sensors {', '.join(far)} are more than 200 m from {notice['dwelling']}")
                for ev in notice["evidence"]:
                    if not complaint["start"] <= ev["night"] <= period_end:
                        raise ApiError(f"HTTP 422: evidence night '{ev['night']}' is outside the complaint period "
                                       f"{complaint['start']}..{period_end}")
                    if ev["exceed_h"] > 8:
                        raise ApiError(f"HTTP 422: exceedance of {ev['exceed_h']} h on {ev['night']} is longer than the 8 h night period")
                nights = [ev for ev in notice["evidence"] if ev["window"][0] == "23:00" and ev["exceed_h"] >= 0.5]
                if len(nights) < 3:
                    raise ApiError(f"HTTP 422: an abatement notice needs 3 or more nights with exceedance in the night period "
                                   f"23:00-07:00; evidence has {len(nights)} (window {notice['evidence'][0]['window'][0]}-"
                                   f"{notice['evidence'][0]['window'][1]})")
                s["out"] = {"notice": f"AN-{complaint['ref'][3:]}", "served_on": notice["served_on"]}
            root["out"] = s["out"]
    except ApiError:
        pass
    return o.take()
