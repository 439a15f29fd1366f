"""telescope-night: an observatory's service-mode night planner (OpenTelemetry + OpenInference, OTLP JSON).

The night's queue of approved observing blocks is fetched and its target coordinates parsed; a model
asks for the night's ephemeris and weather forecast (parallel tool calls); a model orders the blocks
and sets their exposures; the schedule is laid out on the 15-minute grid from the end of evening
twilight; each block's visibility is checked (altitude, distance to the moon) and the visible ones
kept; the instrument configuration of each mode is retrieved; the telescope control system's queue
tool checks and takes the night; a model writes the night report.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from pathlib import Path
from typing import Any

from openai import OpenAI

from trajdebug.testing import Reply, tool_call

from .common import Case, first_json, last_user, system_of, tool_results
from .otlp_common import OtlpAgent

RUN_NAME = "telescope-night"
ROUTE = "otlp"
DOMAIN = "optical observatory: service-mode night schedule for a spectrograph"
SHAPE = "spans: queue tool -> parse chain -> llm with 2 parallel tool calls (ephemeris, weather) -> llm plan -> schedule chain -> per-block visibility tool -> select chain -> per-mode config retriever -> TCS queue tool -> llm report"

SWITCH: str | None = None


def _on(tag: str) -> bool:
    return SWITCH == tag  # the one place SWITCH is read


SITE = {"name": "Paranal", "lat": -24.627}
GRID_H = 0.25
OVERHEAD_S = 600

MODES = [
    {"mode": "FORS2 GRIS_300I+OG590", "title": "FORS2 long-slit red setup GRIS_300I with OG590 order filter",
     "grism": "GRIS_300I", "filter": "OG590"},
    {"mode": "FORS2 GRIS_300V+GG435", "title": "FORS2 long-slit visual setup GRIS_300V with GG435 order filter",
     "grism": "GRIS_300V", "filter": "GG435"},
    {"mode": "FORS2 GRIS_600B", "title": "FORS2 long-slit blue setup GRIS_600B, no order filter",
     "grism": "GRIS_600B", "filter": None},
    {"mode": "FORS2 GRIS_1200R+GG435", "title": "FORS2 long-slit red setup GRIS_1200R with GG435 order filter",
     "grism": "GRIS_1200R", "filter": "GG435"},
    {"mode": "FORS2 IMG v_HIGH", "title": "FORS2 imaging with the v_HIGH filter", "grism": None, "filter": "v_HIGH"},
    {"mode": "FORS2 IMG R_SPECIAL", "title": "FORS2 imaging with the R_SPECIAL filter", "grism": None, "filter": "R_SPECIAL"},
]
MOUNTED = {"GRIS_300V", "GRIS_600B", "GRIS_1200R", "GG435", "v_HIGH", "R_SPECIAL", None}


def _day(date: str) -> int:
    return int(date[8:10]) - 1 + (31 if date[5:7] == "11" else 0)


def _ephemeris(date: str) -> dict[str, Any]:
    n = _day(date)
    tw_end = 23.70 + 0.013 * n
    return {"date": date, "site": SITE["name"], "evening_twilight_end_h": round(tw_end, 3),
            "morning_twilight_start_h": round(33.10 - 0.012 * n, 3),
            "lst_at_twilight_end_h": round((21.0 + 0.0657 * n) % 24, 3),
            "moon_ra_deg": round((200 + 13.18 * n) % 360, 2), "moon_dec_deg": round(20 * math.sin(2 * math.pi * (n + 3) / 27.3), 2),
            "moon_illumination": round(0.5 * (1 - math.cos(2 * math.pi * (n - 2) / 29.5)), 2)}


def _previous(date: str) -> str:
    return f"{date[:8]}{int(date[8:10]) - 1:02d}"


def _hms(text: str) -> float:
    h, m, s = text.split(":")
    return (int(h) + int(m) / 60 + float(s) / 3600) * 15


def _dms(text: str) -> float:
    sign = -1.0 if text.strip().startswith("-") else 1.0
    d, m, s = text.strip().lstrip("+-").split(":")
    return sign * (int(d) + int(m) / 60 + float(s) / 3600)


def _dms_compact(text: str) -> float:
    d, m, s = text.split(":")
    deg = int(d)
    return deg + math.copysign(int(m) / 60 + float(s) / 3600, deg)


def _sep(ra1: float, dec1: float, ra2: float, dec2: float) -> float:
    r = math.radians
    c = math.sin(r(dec1)) * math.sin(r(dec2)) + math.cos(r(dec1)) * math.cos(r(dec2)) * math.cos(r(ra1 - ra2))
    return math.degrees(math.acos(max(-1.0, min(1.0, c))))


def _alt(ra_deg: float, dec_deg: float, lst_h: float) -> float:
    ha = math.radians((lst_h * 15 - ra_deg + 540) % 360 - 180)
    lat, dec = math.radians(SITE["lat"]), math.radians(dec_deg)
    return math.degrees(math.asin(math.sin(dec) * math.sin(lat) + math.cos(dec) * math.cos(lat) * math.cos(ha)))


def _lst(eph: dict, t_h: float) -> float:
    return (eph["lst_at_twilight_end_h"] + (t_h - eph["evening_twilight_end_h"]) * 1.0027379) % 24


def _moon_limit(illum: float) -> float:
    return 30.0 if illum >= 0.3 else 15.0


def _fmt(t_h: float) -> str:
    minutes = int(round(t_h * 60))
    return f"{(minutes // 60) % 24:02d}:{minutes % 60:02d}"


# The nights: the queue of approved blocks (target, catalogue coordinates, mode, exposure allocation).
QUEUES: dict[str, list[dict[str, Any]]] = {
    "2024-10-06": [
        {"block": "114.A-0311 OB1", "target": "NGC 7009", "ra": "21:04:10.8", "dec": "-11:21:48", "mode": "FORS2 GRIS_600B", "n_exp": 3, "exp_s": 900},
        {"block": "114.C-0520 OB1", "target": "NGC 7252", "ra": "22:20:44.7", "dec": "-24:40:42", "mode": "FORS2 IMG v_HIGH", "n_exp": 4, "exp_s": 300},
        {"block": "114.C-0520 OB2", "target": "NGC 253", "ra": "00:47:33.1", "dec": "-25:17:18", "mode": "FORS2 IMG R_SPECIAL", "n_exp": 5, "exp_s": 300},
    ],
    "2024-10-21": [
        {"block": "114.D-0077 OB1", "target": "M 2", "ra": "21:33:27.0", "dec": "-00:49:24", "mode": "FORS2 IMG v_HIGH", "n_exp": 6, "exp_s": 120},
        {"block": "114.A-0311 OB3", "target": "NGC 7293", "ra": "22:29:38.5", "dec": "-20:50:14", "mode": "FORS2 GRIS_600B", "n_exp": 2, "exp_s": 1200},
        {"block": "114.C-0520 OB5", "target": "NGC 7793", "ra": "23:57:49.8", "dec": "-32:35:28", "mode": "FORS2 IMG R_SPECIAL", "n_exp": 4, "exp_s": 300},
    ],
    "2024-10-12": [
        {"block": "114.F-0233 OB2", "target": "NGC 55", "ra": "00:14:53.6", "dec": "-39:11:48", "mode": "FORS2 IMG R_SPECIAL", "n_exp": 4, "exp_s": 450},
        {"block": "114.B-0145 OB5", "target": "HD 10700", "ra": "01:44:04.1", "dec": "-15:56:15", "mode": "FORS2 GRIS_300V+GG435", "n_exp": 2, "exp_s": 900},
        {"block": "114.G-0610 OB1", "target": "NGC 300", "ra": "00:54:53.5", "dec": "-37:41:04", "mode": "FORS2 GRIS_600B", "n_exp": 3, "exp_s": 1200},
    ],
    "2024-10-15": [
        {"block": "114.A-0311 OB5", "target": "NGC 7293", "ra": "22:29:38.5", "dec": "-20:50:14", "mode": "FORS2 GRIS_300V+GG435", "n_exp": 3, "exp_s": 1200},
        {"block": "114.C-0520 OB6", "target": "NGC 7252", "ra": "22:20:44.7", "dec": "-24:40:42", "mode": "FORS2 IMG R_SPECIAL", "n_exp": 4, "exp_s": 300},
        {"block": "114.A-0311 OB6", "target": "IC 418", "ra": "05:27:28.2", "dec": "-12:41:50", "mode": "FORS2 GRIS_600B", "n_exp": 2, "exp_s": 600},
    ],
    "2024-10-19": [
        {"block": "114.J-0061 OB1", "target": "NGC 7293", "ra": "22:29:38.5", "dec": "-20:50:14", "mode": "FORS2 GRIS_600B", "n_exp": 2, "exp_s": 900},
        {"block": "114.F-0233 OB4", "target": "NGC 253", "ra": "00:47:33.1", "dec": "-25:17:18", "mode": "FORS2 IMG R_SPECIAL", "n_exp": 4, "exp_s": 300},
        {"block": "114.K-0700 OB2", "target": "M 41", "ra": "06:46:01.0", "dec": "-20:45:24", "mode": "FORS2 GRIS_1200R+GG435", "n_exp": 3, "exp_s": 600},
    ],
}
CATALOGUE = {b["target"]: (_hms(b["ra"]), _dms(b["dec"])) for q in QUEUES.values() for b in q}

INPUTS: list[dict[str, Any]] = [{"task": f"service-mode night plan, FORS2, night of {d}", "date": d} for d in QUEUES]

CASES = [
    Case("tn1", 2, "key-prefix", "wrong_retrieval", ("instrument_configs", 1), ("tcs_submit", 1),
         "The configuration retriever ranked the GRIS_300I red setup first for the GRIS_300V+GG435 mode of HD 10700, "
         "and the control system refused a grism that is not mounted."),
    Case("tn2", 1, "dec-compact", "lossy_parsing", ("parse_targets", 1), ("tcs_submit", 1),
         "The coordinate parser lost the minus sign of M 2's declination -00:49:24 (zero degrees), so the block "
         "pointed 1.6 degrees north of the cluster and the control system's catalogue check refused it."),
    Case("tn3", 3, "grid-floor", "off_by_one", ("build_schedule", 1), ("tcs_submit", 1),
         "The schedule placed the first block on the grid slot before the end of evening twilight (floor instead "
         "of the next slot), and the control system refused a block starting in twilight."),
    Case("tn4", 0, "exp-allocation", "hallucinated_value", ("ChatCompletion", 3), ("tcs_submit", 1),
         "The planning model gave NGC 7009 exposures of 1200 s where the queue allocates 900 s, and the control "
         "system refused the block for exceeding its allocation."),
    Case("tn5", 4, "ephemeris-cache", "stale_data", ("ephemeris", 1), ("tcs_submit", 1),
         "The ephemeris tool served the previous night's cached record, whose moon lay 13 degrees further west, so "
         "a block 23 degrees from tonight's moon passed the visibility check and the control system refused it."),
]

# --------------------------------------------------------------------------------------------------
# The model's side.
# --------------------------------------------------------------------------------------------------


def brain(request: Any) -> Any:
    messages = request.body["messages"]
    system = system_of(messages)
    user = last_user(messages)
    if system.startswith("You are the night assistant"):
        results = tool_results(messages)
        if not results:
            date = re.search(r"(\d{4}-\d\d-\d\d)", user).group(1)
            return Reply(tool_calls=(tool_call("ephemeris", {"site": SITE["name"], "date": date}),
                                     tool_call("weather_forecast", {"site": SITE["name"], "date": date})))
        eph = dict(results)["ephemeris"]
        wx = dict(results)["weather_forecast"]
        return (f"Night of {eph['date']}: dark from {_fmt(eph['evening_twilight_end_h'])} to "
                f"{_fmt(eph['morning_twilight_start_h'])} UT, moon {eph['moon_illumination']:.0%} illuminated, "
                f"seeing {wx['seeing_arcsec']}\" and {wx['cloud']} forecast.")
    if system.startswith("You order the night's blocks"):
        data = first_json(user)
        lst0 = data["ephemeris"]["lst_at_twilight_end_h"]
        blocks = sorted(data["blocks"], key=lambda b: ((b["ra_deg"] / 15 - lst0) % 24 + 3) % 24)
        plan = []
        for b in blocks:
            exp = b["exp_s"]
            if _on("exp-allocation") and b["target"] == "NGC 7009":
                exp = 1200
            plan.append({"block": b["block"], "n_exp": b["n_exp"], "exp_s": exp})
        return json.dumps({"order": plan, "note": "ordered by hour angle at the start of the night"})
    if system.startswith("You write the night report"):
        data = first_json(user)
        return (f"Queue accepted ({data['receipt']['queue_id']}): " +
                "; ".join(f"{b['block']} {b['start']}-{b['end']}" for b in data["blocks"]) + ".")
    return "?"


# --------------------------------------------------------------------------------------------------
# The agent.
# --------------------------------------------------------------------------------------------------

_otel = OtlpAgent("telescope-night-planner", "paranal.nightplan")
_client: OpenAI | None = None
_model = "fake-model"
_night: dict[str, Any] = {}


def setup(server: Any) -> None:
    global _client, _model
    _otel.instrument()
    _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _model = server.model


def teardown() -> None:
    global _client
    _otel.uninstrument()
    if _client is not None:
        _client.close()
    _client = None


TOOLS = [
    {"type": "function", "function": {"name": "ephemeris", "description": "Twilight times, sidereal time and the moon for a night.",
                                      "parameters": {"type": "object", "properties": {"site": {"type": "string"}, "date": {"type": "string"}},
                                                     "required": ["site", "date"]}}},
    {"type": "function", "function": {"name": "weather_forecast", "description": "Seeing and cloud forecast for a night.",
                                      "parameters": {"type": "object", "properties": {"site": {"type": "string"}, "date": {"type": "string"}},
                                                     "required": ["site", "date"]}}},
]


def _tool_ephemeris(site: str, date: str) -> dict:
    return _ephemeris(_previous(date)) if _on("ephemeris-cache") else _ephemeris(date)


def _tool_weather(site: str, date: str) -> dict:
    n = _day(date)
    return {"site": site, "date": date, "seeing_arcsec": round(0.7 + 0.05 * (n % 5), 2), "cloud": "clear" if n % 4 else "thin cirrus",
            "wind_ms": 6 + n % 7}


def _parse_targets(blocks: list[dict]) -> list[dict]:
    out = []
    for b in blocks:
        dec = _dms_compact(b["dec"]) if _on("dec-compact") else _dms(b["dec"])
        out.append({**b, "ra_deg": round(_hms(b["ra"]), 5), "dec_deg": round(dec, 5)})
    return out


def _build_schedule(order: list[dict], blocks: dict[str, dict], eph: dict) -> list[dict]:
    first = eph["evening_twilight_end_h"] / GRID_H
    t = (math.floor(first) if _on("grid-floor") else math.ceil(first)) * GRID_H
    slots = []
    for o in order:
        b = blocks[o["block"]]
        # wait until the target is within two hours east of the meridian
        wait = ((b["ra_deg"] / 15 - 2.0 - _lst(eph, t)) % 24) / 1.0027379
        if wait < 12:
            t = math.ceil((t + wait) / GRID_H) * GRID_H
        dur = (o["n_exp"] * o["exp_s"] + OVERHEAD_S) / 3600
        end = t + dur
        if end > eph["morning_twilight_start_h"]:
            continue
        slots.append({"block": o["block"], "target": b["target"], "ra_deg": b["ra_deg"], "dec_deg": b["dec_deg"],
                      "mode": b["mode"], "n_exp": o["n_exp"], "exp_s": o["exp_s"], "start_h": round(t, 4),
                      "end_h": round(end, 4), "start": _fmt(t), "end": _fmt(end)})
        t = math.ceil(end / GRID_H) * GRID_H
    return slots


def _visibility(slot: dict, eph: dict) -> dict:
    alts = [_alt(slot["ra_deg"], slot["dec_deg"], _lst(eph, t)) for t in (slot["start_h"], slot["end_h"])]
    moon = _sep(slot["ra_deg"], slot["dec_deg"], eph["moon_ra_deg"], eph["moon_dec_deg"])
    limit = _moon_limit(eph["moon_illumination"])
    return {"block": slot["block"], "alt_min_deg": round(min(alts), 1), "moon_dist_deg": round(moon, 1),
            "moon_limit_deg": limit, "visible": min(alts) >= 30 and moon >= limit}


KEY_CHARS = 14  # the configuration index keys its entries by the mode's first characters


def _configs(mode: str, k: int = 2) -> list[dict]:
    key = mode[:KEY_CHARS] if _on("key-prefix") else mode
    scored = []
    for i, m in enumerate(MODES):
        entry = m["mode"][:KEY_CHARS] if _on("key-prefix") else m["mode"]
        score = difflib.SequenceMatcher(None, key, entry).ratio()
        scored.append((-score, i, m))
    scored.sort(key=lambda x: (x[0], x[1]))
    return [{"id": f"cfg-{i}", "score": round(-s, 3), **m} for s, i, m in scored[:k]]


def _tcs_submit(date: str, slots: list[dict], configs: dict[str, dict]) -> dict:
    eph = _ephemeris(date)
    queue = {b["block"]: b for b in QUEUES[date]}
    for s in slots:
        if s["start_h"] < eph["evening_twilight_end_h"]:
            raise ValueError(f"{s['block']} starts {s['start']} UT, before evening astronomical twilight ends "
                             f"({_fmt(eph['evening_twilight_end_h'])} UT)")
        q = queue[s["block"]]
        if s["exp_s"] > q["exp_s"] or s["n_exp"] > q["n_exp"]:
            raise ValueError(f"{s['block']} requests {s['n_exp']}x{s['exp_s']} s; the allocation is {q['n_exp']}x{q['exp_s']} s")
        ra, dec = CATALOGUE[s["target"]]
        off = _sep(ra, dec, s["ra_deg"], s["dec_deg"]) * 60
        if off > 1.0:
            raise ValueError(f"{s['block']}: coordinates for {s['target']} lie {off:.1f} arcmin from the catalogue position")
        cfg = configs[s["mode"]]
        for optic in (cfg["grism"], cfg["filter"]):
            if optic not in MOUNTED:
                raise ValueError(f"{s['block']}: {optic} is not mounted on FORS2 tonight")
        moon = _sep(ra, dec, eph["moon_ra_deg"], eph["moon_dec_deg"])
        if moon < _moon_limit(eph["moon_illumination"]):
            raise ValueError(f"{s['block']}: {s['target']} is {moon:.1f} deg from the moon ({eph['moon_illumination']:.0%} "
                             f"illuminated); the limit is {_moon_limit(eph['moon_illumination']):.0f} deg")
        for t in (s["start_h"], s["end_h"]):
            a = _alt(ra, dec, _lst(eph, t))
            if a < 30:
                raise ValueError(f"{s['block']}: {s['target']} at {a:.1f} deg altitude at {_fmt(t)} UT (minimum 30 deg)")
    return {"queue_id": f"FORS2-{date}-Q{len(slots)}", "accepted": [s["block"] for s in slots]}


def _chat(messages: list[dict], tools: list[dict] | None = None) -> Any:
    kwargs: dict[str, Any] = {"model": _model, "messages": messages, "temperature": 0}
    if tools:
        kwargs["tools"] = tools
    return _client.chat.completions.create(**kwargs).choices[0].message


def run_once(inp: dict, path: Path) -> None:
    date = inp["date"]
    o = _otel
    try:
        with o.span(RUN_NAME, "AGENT", input=f"Plan the FORS2 service-mode night of {date}", agent__name="night-planner",
                    metadata={"task": inp["task"], "site": SITE["name"]}) as root:
            with o.span("proposal_queue", "TOOL", input={"instrument": "FORS2", "date": date}, tool__name="proposal_queue") as s:
                queue = [dict(b) for b in QUEUES[date]]
                s.output = queue
            with o.span("parse_targets", "CHAIN", input=queue) as s:
                blocks = _parse_targets(queue)
                s.output = blocks
            messages = [{"role": "system", "content": "You are the night assistant: get the ephemeris and the forecast."},
                        {"role": "user", "content": f"Prepare the night of {date} at {SITE['name']}."}]
            msg = _chat(messages, TOOLS)
            messages.append(msg.model_dump(exclude_none=True))
            results: dict[str, Any] = {}
            for call in msg.tool_calls or []:
                args = json.loads(call.function.arguments)
                with o.span(call.function.name, "TOOL", input=args, tool__name=call.function.name,
                            tool__id=call.id, tool__parameters=args) as s:
                    s.output = (_tool_ephemeris if call.function.name == "ephemeris" else _tool_weather)(**args)
                results[call.function.name] = s.output
                messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(s.output)})
            _chat(messages)
            eph = results["ephemeris"]
            plan_msg = _chat([
                {"role": "system", "content": "You order the night's blocks and set their exposures; answer JSON."},
                {"role": "user", "content": json.dumps({"ephemeris": eph, "forecast": results["weather_forecast"],
                                                        "blocks": blocks})},
            ])
            with o.span("read_plan", "CHAIN", input=plan_msg.content) as s:
                order = json.loads(plan_msg.content)["order"]
                s.output = order
            with o.span("build_schedule", "CHAIN", input={"order": order, "ephemeris": eph}) as s:
                slots = _build_schedule(order, {b["block"]: b for b in blocks}, eph)
                s.output = slots
            checks = []
            for slot in slots:
                with o.span("visibility_check", "TOOL", input={"slot": slot, "ephemeris": eph}, tool__name="visibility_check") as s:
                    s.output = _visibility(slot, eph)
                checks.append(s.output)
            with o.span("select_blocks", "CHAIN", input={"slots": slots, "checks": checks}) as s:
                ok = {c["block"] for c in checks if c["visible"]}
                kept = [sl for sl in slots if sl["block"] in ok]
                s.output = kept
            configs = {}
            for mode in sorted({k["mode"] for k in kept}):
                with o.span("instrument_configs", "RETRIEVER", input=mode) as s:
                    docs = _configs(mode)
                    s.output = docs
                configs[mode] = docs[0]
            with o.span("tcs_submit", "TOOL", input={"date": date, "blocks": kept, "configs": configs}, tool__name="tcs_submit") as s:
                receipt = _tcs_submit(date, kept, configs)
                s.output = receipt
            report = _chat([
                {"role": "system", "content": "You write the night report for the observatory log."},
                {"role": "user", "content": json.dumps({"receipt": receipt, "blocks": kept})},
            ])
            root.output = report.content
    except Exception:  # noqa: BLE001 - the spans record it; the generator checks the outcome
        pass
    o.write(path)
