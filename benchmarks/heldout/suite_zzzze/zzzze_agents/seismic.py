"""A regional seismic network's event analyst: after a trigger, select the stations and the crustal velocity
model, plan the processing, run a worker per station (waveform from the archive, phase picks, displacement
amplitude), have the picks reviewed, locate the event, convert the origin time, compute the local
magnitude, draft the bulletin, check it against the catalogue rules and publish it.

Route: the OpenTelemetry SDK with OpenInference attributes (spans of the agent's own, model calls through
openinference-instrumentation-openai), exported as one OTLP JSON document per run.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone

import numpy as np

from .common import RT, OtelRecorder, json_block, last_user

NAME = "seismic-locator"
ROUTE = "otlp"
DOMAIN = "regional seismic network event location (seismology)"
SHAPE = (
    "agent span -> station retriever -> velocity-model retriever -> llm processing plan -> loop of station "
    "worker agents (archive tool with backup retry, picker chain, displacement chain) -> llm pick review -> "
    "locator tool -> origin-time chain -> magnitude chain -> llm bulletin -> catalogue guardrail -> publish tool"
)
SWITCH: str | None = None

KM_PER_DEG = 111.19
ENV_RATE = 2.0  # envelope samples per second
PRE_EVENT_S = 20.0
RMS_MAX, GAP_MAX, ML_SPREAD_MAX = 0.8, 180.0, 1.0

STATIONS = {  # code -> lat, lon, elevation m, gain, gain unit
    "DIAB": (46.300, 7.180, 1480, 2.4, "counts/nm"), "LEUK": (46.318, 7.636, 760, 2.5, "counts/nm"),
    "VISP": (46.292, 7.882, 650, 2.6, "counts/nm"), "SIMPL": (46.252, 8.031, 2005, 2500.0, "counts/um"),
    "ZERM": (46.021, 7.748, 1620, 2.5, "counts/nm"), "BRIG": (46.318, 7.988, 680, 2.4, "counts/nm"),
    "LAUT": (46.571, 7.912, 800, 2.5, "counts/nm"),
}
VELOCITY_MODELS = [  # the network's model index
    {"id": "jura-1d", "text": "Jura and northern foreland, 1D crustal model", "vp": 5.20, "vs": 2.62,
     "updated": 2025},
    {"id": "valais-1d", "text": "Valais and Rhone valley (Penninic Alps), 1D crustal model", "vp": 6.00,
     "vs": 3.47, "updated": 2019},
    {"id": "ticino-1d", "text": "Ticino and the southern Alps, 1D crustal model", "vp": 6.10, "vs": 3.52,
     "updated": 2021},
]
TRUE_VP, TRUE_VS = 6.00, 3.47

EVENTS = {  # trigger id -> true hypocentre and magnitude, and the trigger time
    "trg-0214": {"lat": 46.262, "lon": 7.770, "depth": 8.0, "ml": 2.4, "origin": "2026-02-14T03:12:04.0",
                 "trigger": "2026-02-14T03:12:10Z"},
    "trg-0302": {"lat": 46.335, "lon": 7.861, "depth": 5.5, "ml": 2.1, "origin": "2026-03-02T21:40:33.0",
                 "trigger": "2026-03-02T21:40:38Z"},
    "trg-0319": {"lat": 46.197, "lon": 7.702, "depth": 11.0, "ml": 2.8, "origin": "2026-03-19T11:05:51.0",
                 "trigger": "2026-03-19T11:05:57Z"},
    "trg-0407": {"lat": 46.352, "lon": 7.415, "depth": 6.0, "ml": 2.2, "origin": "2026-04-07T06:58:12.0",
                 "trigger": "2026-04-07T06:58:18Z"},
    "trg-0425": {"lat": 46.288, "lon": 7.655, "depth": 9.5, "ml": 2.6, "origin": "2026-04-25T17:21:44.0",
                 "trigger": "2026-04-25T17:21:50Z"},
}
ARCHIVE_OUTAGE = {("trg-0407", "DIAB")}  # the primary archive times out for these requests
INPUTS = {k: {"task": f"locate and publish the event behind trigger {k}", "trigger": k,
              "region": "Valais", "trigger_time": v["trigger"]} for k, v in EVENTS.items()}

def _arg(step, key):
    return step.input.get(key) if isinstance(step.input, dict) else None


CASES = [
    {"n": 1, "input": "trg-0214", "kind": "truncated_result", "root": ("fetch_waveform", lambda s: _arg(s, "station") == "DIAB"),
     "failure": ("catalog_check", 1),
     "description": "The archive returns only the first 30 s record of DIAB's 120 s window, which ends before "
                    "the S wave, so the picker takes the largest swing of the P coda as S.",
     "what": "DIAB waveform cut after 30 s"},
    {"n": 2, "input": "trg-0302", "kind": "unit_error", "root": ("to_displacement", lambda s: _arg(s, "gain_unit") == "counts/um"),
     "failure": ("catalog_check", 1),
     "description": "The displacement step divides SIMPL's counts by its gain of 2500 as if it were counts per nm; "
                    "the station metadata gives counts per micrometre.",
     "what": "gain in counts/um used as counts/nm"},
    {"n": 3, "input": "trg-0319", "kind": "wrong_retrieval", "root": ("velocity_model", 1),
     "failure": ("catalog_check", 1),
     "description": "The velocity-model search ranks the recently updated Jura foreland model above the Valais "
                    "model the query asks for, and the event is located with Jura velocities.",
     "what": "Jura velocity model retrieved for a Valais event"},
    {"n": 4, "input": "trg-0407", "kind": "swallowed_error", "root": ("station_worker", lambda s: _arg(s, "station") == "DIAB"),
     "failure": ("catalog_check", 1),
     "description": "When the primary archive times out for DIAB, the station worker returns no picks instead "
                    "of asking the backup archive, so the only station west of the event drops out.",
     "what": "archive timeout answered with no picks"},
    {"n": 5, "input": "trg-0425", "kind": "off_by_one", "root": ("format_origin", 1),
     "failure": ("catalog_check", 1),
     "description": "Converting the locator's day-of-year to a date adds the day number to 1 January instead of "
                    "the day number minus one, so the origin lands on 2026-04-26.",
     "what": "day-of-year 115 converted to 26 April"},
]

OTEL = OtelRecorder(NAME)


# ---------------------------------------------------------------- the simulated network


def _xy(lat: float, lon: float, lat0: float, lon0: float) -> tuple[float, float]:
    return (lon - lon0) * KM_PER_DEG * math.cos(math.radians(lat0)), (lat - lat0) * KM_PER_DEG


def _hypo_dist(st: str, lat: float, lon: float, depth: float) -> float:
    slat, slon, elev, *_ = STATIONS[st]
    x, y = _xy(slat, slon, lat, lon)
    return math.sqrt(x * x + y * y + (depth + elev / 1000.0) ** 2)


def _ml_terms(r: float) -> float:
    return 1.11 * math.log10(r) + 0.00189 * r - 2.09


def _trace(trigger: str, st: str) -> dict:
    ev = EVENTS[trigger]
    r = _hypo_dist(st, ev["lat"], ev["lon"], ev["depth"])
    tp, ts = PRE_EVENT_S + r / TRUE_VP, PRE_EVENT_S + r / TRUE_VS
    jitter = (sum(map(ord, trigger + st)) % 7 - 3) / 30.0
    amp_nm = 10 ** (ev["ml"] + jitter - _ml_terms(r))
    slat, slon, elev, gain, unit = STATIONS[st]
    gain_nm = gain / 1000.0 if unit == "counts/um" else gain
    peak = amp_nm * gain_nm
    env = []
    for i in range(int(120 * ENV_RATE)):
        t = i / ENV_RATE
        noise = 12 + (i * 37 + len(st)) % 7
        v = noise
        if t >= tp:
            v += 0.25 * peak * math.exp(-(t - tp) / 6.0) * (1.0 + 0.3 * math.sin(3.1 * t))
        if t >= ts:
            v += peak * math.exp(-(t - ts) / 9.0)
        env.append(int(v))
    return {"envelope": env, "peak_counts": int(max(env))}


# ---------------------------------------------------------------- the model


def brain(request):
    prompt = last_user(request)
    if prompt.startswith("Plan the processing"):
        req = json_block(prompt)
        order = sorted(req["stations"], key=lambda s: s["distance_km"])
        return json.dumps({"window_s": 120, "pre_event_s": PRE_EVENT_S, "stations": [s["code"] for s in order],
                           "min_stations": 5, "phases": ["P", "S"]})
    if prompt.startswith("Review these picks"):
        picks = json_block(prompt)
        rejected = [p["station"] for p in picks if p["s"] is not None and p["s"] - p["p"] < 0.5]
        return json.dumps({"rejected": rejected, "note": "picks consistent" if not rejected else "S too close to P"})
    if prompt.startswith("Write the bulletin"):
        ev = json_block(prompt)
        return (f"Earthquake ML {ev['ml']:.1f} on {ev['origin']} at {ev['lat']:.3f} N {ev['lon']:.3f} E, depth "
                f"{ev['depth_km']:.1f} km, {ev['region']}. Located with {ev['n_stations']} stations.")
    return "Send the trigger."


# ---------------------------------------------------------------- the agent


def _retrieve_stations(trigger: dict) -> list:
    with OTEL.span("select_stations", "RETRIEVER", {"region": trigger["region"], "radius_km": 80}) as sp:
        docs = [{"code": c, "lat": v[0], "lon": v[1], "elevation_m": v[2], "gain": v[3], "gain_unit": v[4]}
                for c, v in STATIONS.items()]
        return sp.output(docs)


def _retrieve_velocity_model(region: str) -> dict:
    query = f"{region} 1D crustal model"
    with OTEL.span("velocity_model", "RETRIEVER", query) as sp:
        words = set(query.lower().replace(",", " ").split())
        boost = 5.0 if SWITCH == "zze_seismic_3" else 0.05
        scored = []
        for m in VELOCITY_MODELS:
            overlap = len(words & set(m["text"].lower().replace(",", " ").replace("(", " ").replace(")", " ").split()))
            scored.append((overlap + boost * (m["updated"] - 2018) / 7.0, m))
        scored.sort(key=lambda t: -t[0])
        docs = [{"id": m["id"], "content": m["text"], "score": round(s, 3),
                 "metadata": {"vp_km_s": m["vp"], "vs_km_s": m["vs"], "updated": m["updated"]}} for s, m in scored]
        return sp.output(docs)[0]


def _chat(messages: list[dict]) -> str:
    reply = RT.client().chat.completions.create(model=RT.model, messages=messages, temperature=0)
    return reply.choices[0].message.content


def _fetch(trigger: str, st: str, start: str, seconds: float, archive: str) -> dict:
    with OTEL.span("fetch_waveform", "TOOL", {"station": st, "start": start, "seconds": seconds, "archive": archive},
                   **{"tool.name": "fetch_waveform"}) as sp:
        if archive == "primary" and (trigger, st) in ARCHIVE_OUTAGE:
            raise TimeoutError(f"archive {archive} did not answer for {st} within 10 s")
        tr = _trace(trigger, st)
        env = tr["envelope"][: int(seconds * ENV_RATE)]
        if st == "DIAB" and SWITCH == "zze_seismic_1":
            env = env[: int(30 * ENV_RATE)]  # only the first record of the file came back
        return sp.output({"station": st, "start": start, "sample_rate_hz": ENV_RATE, "n": len(env),
                          "envelope": env, "peak_counts": max(env)})


def _pick(wave: dict) -> dict:
    with OTEL.span("pick_phases", "CHAIN", {"station": wave["station"], "n": wave["n"]}) as sp:
        env = wave["envelope"]
        noise = sorted(env[:20])[10]
        ip = next(i for i, v in enumerate(env) if v > 5 * noise)
        s_cand = [i for i in range(ip + 3, len(env)) if env[i] > 2.0 * env[i - 1] and env[i] > 4 * noise]
        coda = env[ip:]
        is_ = s_cand[0] if s_cand else ip + coda.index(max(coda))
        return sp.output({"station": wave["station"], "p": ip / ENV_RATE, "s": is_ / ENV_RATE,
                          "s_amplitude_counts": max(env[is_:is_ + 10])})


def _displacement(pick: dict, meta: dict) -> dict:
    with OTEL.span("to_displacement", "CHAIN", {"pick": pick, "gain": meta["gain"], "gain_unit": meta["gain_unit"]}) as sp:
        gain = meta["gain"]
        if meta["gain_unit"] == "counts/um" and SWITCH != "zze_seismic_2":
            gain = gain / 1000.0
        return sp.output({"station": pick["station"], "amplitude_nm": round(pick["s_amplitude_counts"] / gain, 3)})


def _station_worker(trigger: str, meta: dict, window_start: str) -> dict:
    st = meta["code"]
    with OTEL.span("station_worker", "AGENT", {"station": st, "window_start": window_start},
                   **{"agent.name": "station_worker"}) as sp:
        try:
            wave = _fetch(trigger, st, window_start, 120, "primary")
        except TimeoutError:
            if SWITCH == "zze_seismic_4":
                return sp.output({"station": st, "picks": None})
            wave = _fetch(trigger, st, window_start, 120, "backup")
        pick = _pick(wave)
        disp = _displacement(pick, meta)
        return sp.output({"station": st, "picks": pick, "amplitude_nm": disp["amplitude_nm"]})


def _locate(picks: list[dict], stations: dict, model: dict, window_start: datetime) -> dict:
    with OTEL.span("locate_event", "TOOL", {"picks": picks, "model": model["id"]}, **{"tool.name": "locate_event"}) as sp:
        vp, vs = model["metadata"]["vp_km_s"], model["metadata"]["vs_km_s"]
        lat0 = float(np.mean([stations[p["station"]]["lat"] for p in picks]))
        lon0 = float(np.mean([stations[p["station"]]["lon"] for p in picks]))
        obs = np.array([t for p in picks for t in (p["p"], p["s"])])
        slow = np.array([1 / v for _ in picks for v in (vp, vs)])
        sx = np.array([_xy(stations[p["station"]]["lat"], stations[p["station"]]["lon"], lat0, lon0)[0]
                       for p in picks for _ in (0, 1)])
        sy = np.array([_xy(stations[p["station"]]["lat"], stations[p["station"]]["lon"], lat0, lon0)[1]
                       for p in picks for _ in (0, 1)])
        sz = np.array([-stations[p["station"]]["elevation_m"] / 1000 for p in picks for _ in (0, 1)])

        def search(xs, ys, zs):
            X, Y, Z = np.meshgrid(xs, ys, zs, indexing="ij")
            d = np.sqrt((X[..., None] - sx) ** 2 + (Y[..., None] - sy) ** 2 + (Z[..., None] - sz) ** 2)
            res = obs - d * slow
            t0 = res.mean(axis=-1)
            rms = np.sqrt(((res - t0[..., None]) ** 2).mean(axis=-1))
            k = np.unravel_index(np.argmin(rms), rms.shape)
            return X[k], Y[k], Z[k], t0[k], rms[k]

        x, y, z, t0, rms = search(np.arange(-50, 50.1, 2.5), np.arange(-50, 50.1, 2.5), np.arange(0, 30.1, 2.0))
        x, y, z, t0, rms = search(np.arange(x - 3, x + 3.01, 0.25), np.arange(y - 3, y + 3.01, 0.25),
                                  np.arange(max(0, z - 2), z + 2.01, 0.25))
        lat = lat0 + y / KM_PER_DEG
        lon = lon0 + x / (KM_PER_DEG * math.cos(math.radians(lat0)))
        az = sorted(math.degrees(math.atan2(*_xy(stations[p["station"]]["lat"], stations[p["station"]]["lon"],
                                                  lat, lon))) % 360 for p in picks)
        gap = max([b - a for a, b in zip(az, az[1:])] + [az[0] + 360 - az[-1]])
        origin = window_start + timedelta(seconds=float(t0))
        sod = origin.hour * 3600 + origin.minute * 60 + origin.second + origin.microsecond / 1e6
        return sp.output({"lat": round(lat, 4), "lon": round(lon, 4), "depth_km": round(float(z), 2),
                          "rms_s": round(float(rms), 3), "gap_deg": round(gap, 1), "n_stations": len(picks),
                          "year": origin.year, "jday": origin.timetuple().tm_yday, "seconds_of_day": round(sod, 2)})


def _format_origin(loc: dict) -> str:
    with OTEL.span("format_origin", "CHAIN", {"year": loc["year"], "jday": loc["jday"],
                                              "seconds_of_day": loc["seconds_of_day"]}) as sp:
        days = loc["jday"] if SWITCH == "zze_seismic_5" else loc["jday"] - 1
        t = datetime(loc["year"], 1, 1, tzinfo=timezone.utc) + timedelta(days=days, seconds=loc["seconds_of_day"])
        return sp.output(t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-4] + "Z")


def _magnitude(amps: dict, loc: dict, stations: dict) -> dict:
    with OTEL.span("local_magnitude", "CHAIN", {"amplitudes_nm": amps, "hypocentre": loc}) as sp:
        per = {}
        for st, a in amps.items():
            s = stations[st]
            x, y = _xy(s["lat"], s["lon"], loc["lat"], loc["lon"])
            r = math.sqrt(x * x + y * y + (loc["depth_km"] + s["elevation_m"] / 1000) ** 2)
            per[st] = round(math.log10(a) + _ml_terms(r), 2)
        vals = sorted(per.values())
        return sp.output({"ml": round(vals[len(vals) // 2], 1), "station_ml": per})


def _catalog_check(event: dict, trigger_time: str) -> str:
    with OTEL.span("catalog_check", "GUARDRAIL", event) as sp:
        if event["rms_s"] > RMS_MAX:
            raise ValueError(f"location rms {event['rms_s']:.2f} s exceeds {RMS_MAX} s")
        if event["gap_deg"] > GAP_MAX:
            raise ValueError(f"azimuthal gap {event['gap_deg']:.0f} deg exceeds {GAP_MAX:.0f} deg "
                             f"({event['n_stations']} stations)")
        mls = event["station_ml"].values()
        if max(mls) - min(mls) > ML_SPREAD_MAX:
            lo = min(event["station_ml"], key=event["station_ml"].get)
            hi = max(event["station_ml"], key=event["station_ml"].get)
            raise ValueError(f"station magnitudes range from ML {event['station_ml'][lo]} ({lo}) to "
                             f"ML {event['station_ml'][hi]} ({hi})")
        trig = datetime.fromisoformat(trigger_time.replace("Z", "+00:00"))
        origin = datetime.fromisoformat(event["origin"].replace("Z", "+00:00"))
        if not timedelta(0) <= trig - origin <= timedelta(minutes=2):
            raise ValueError(f"origin {event['origin']} is not within two minutes before the trigger {trigger_time}")
        return sp.output("passed")


def _publish(event: dict) -> dict:
    with OTEL.span("publish_event", "TOOL", event, **{"tool.name": "publish_event"}) as sp:
        return sp.output({"event_id": "chs" + event["origin"][:10].replace("-", "") + "a", "status": "published"})


def locate_trigger(key: str) -> dict:
    inp = INPUTS[key]
    trigger = {"id": key, "region": inp["region"], "time": inp["trigger_time"]}
    with OTEL.span(NAME, "AGENT", trigger, metadata=json.dumps({"task": inp["task"]}),
                   **{"agent.name": NAME}) as top:
        docs = _retrieve_stations(trigger)
        stations = {d["code"]: d for d in docs}
        model = _retrieve_velocity_model(inp["region"])
        trig_t = datetime.fromisoformat(inp["trigger_time"].replace("Z", "+00:00"))
        approx = (46.30, 7.70)
        plan = json_block(_chat([
            {"role": "system", "content": "You plan seismic event processing. Answer with JSON."},
            {"role": "user", "content": "Plan the processing for this trigger: " + json.dumps({
                "trigger": trigger, "stations": [{"code": c, "distance_km": round(math.hypot(
                    *_xy(d["lat"], d["lon"], *approx)), 1)} for c, d in stations.items()]})}]))
        window_start = trig_t - timedelta(seconds=plan["pre_event_s"] + 6)
        ws = window_start.strftime("%Y-%m-%dT%H:%M:%SZ")
        results = [_station_worker(key, stations[c], ws) for c in plan["stations"]]
        picks = [r["picks"] for r in results if r["picks"]]
        review = json_block(_chat([
            {"role": "system", "content": "You review seismic phase picks. Answer with JSON."},
            {"role": "user", "content": "Review these picks (seconds after the window start): " + json.dumps(picks)}]))
        picks = [p for p in picks if p["station"] not in review["rejected"]]
        loc = _locate(picks, stations, model, window_start)
        origin = _format_origin(loc)
        mag = _magnitude({r["station"]: r["amplitude_nm"] for r in results if r["picks"]}, loc, stations)
        event = {**{k: loc[k] for k in ("lat", "lon", "depth_km", "rms_s", "gap_deg", "n_stations")},
                 "origin": origin, "ml": mag["ml"], "station_ml": mag["station_ml"], "region": inp["region"]}
        _chat([{"role": "system", "content": "You write the network's event bulletins."},
               {"role": "user", "content": "Write the bulletin for this event: " + json.dumps(event)}])
        _catalog_check(event, inp["trigger_time"])
        return top.output(_publish(event))


def setup() -> None:
    OTEL.setup()


def teardown() -> None:
    OTEL.teardown()


def execute(key: str, path: str) -> None:
    OTEL.begin()
    try:
        locate_trigger(key)
    except ValueError:
        pass
    OTEL.export(path)
