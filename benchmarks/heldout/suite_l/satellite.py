"""Satellite pass scheduler (OTLP): books ground-station passes to downlink a satellite's stored data.

Fetches the orbit elements, predicts the day's passes over the station, picks the best ones, works out each
pass's downlink capacity, has the model split the data over the passes, reserves an antenna per pass
(falling back to the backup antenna on a conflict) and keeps each reservation in the mission log, then the
model drafts and reviews the contact plan, the agent checks the volume itself and submits the plan to the
ground-station network.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.heldout.suite_l import otlp_route
from benchmarks.heldout.suite_l.kit import Case, active, openai_client
from benchmarks.heldout.suite_l.otlp_route import span, traced


AGENT = "pass-scheduler"
ROUTE = "otlp"
DOMAIN = "satellite pass scheduling"

SATELLITES = {
    "SENTINEL-2C": {"norad": 60989, "rate_mbps": 520.0, "freq_mhz": 8090.0},
    "LANDSAT-9": {"norad": 49260, "rate_mbps": 384.0, "freq_mhz": 8200.0},
    "AQUA": {"norad": 27424, "rate_mbps": 150.0, "freq_mhz": 8160.0},
    "SMOS": {"norad": 36036, "rate_mbps": 18.4, "freq_mhz": 8145.0},
}
STATIONS = {
    "Svalbard": {"antennas": ["SG-1", "SG-2"], "backup": "SG-3", "band_mhz": [8025, 8400]},
    "Troll": {"antennas": ["TR-1"], "backup": "TR-2", "band_mhz": [8025, 8400]},
    "Inuvik": {"antennas": ["IN-1", "IN-2"], "backup": "IN-3", "band_mhz": [8025, 8400]},
}
NO_XBAND = {"SG-3", "IN-3"}
BUSY = {("Svalbard", "P-04"), ("Inuvik", "P-02")}
_RESERVATIONS: dict[str, dict[str, Any]] = {}
_DURATIONS: dict[tuple[str, str], int] = {}


@traced("TOOL")
def fetch_tle(satellite: str) -> dict[str, Any]:
    norad = SATELLITES[satellite]["norad"]
    return {
        "satellite": satellite,
        "norad": norad,
        "epoch": "26091.50000000",
        "mean_motion": 14.308 + norad % 7 * 0.01,
    }


@traced("TOOL")
def predict_passes(tle: dict[str, Any], station: str, date: str) -> list[dict[str, Any]]:
    seed = tle["norad"] % 11 + len(station)
    passes = []
    for n in range(1, 11):
        aos = 40 + n * 101 + seed % 9
        duration = 360 + (seed * n * 37) % 420
        elev = 8 + (seed * n * 13) % 75
        _DURATIONS[(station, f"P-{n:02d}")] = duration
        passes.append(
            {
                "pass_id": f"P-{n:02d}",
                "aos": f"{date}T{aos // 60:02d}:{aos % 60:02d}Z",
                "duration_s": duration,
                "max_elev_deg": elev,
            }
        )
    return passes


@traced("CHAIN")
def select_passes(passes: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    usable = sorted((p for p in passes if p["max_elev_deg"] >= 10), key=lambda p: -p["duration_s"])
    keep = count - 1 if active("satellite.keep_count") else count
    return sorted(usable[:keep], key=lambda p: p["pass_id"])


@traced("CHAIN")
def compute_capacity(passes: list[dict[str, Any]], rate_mbps: float) -> list[dict[str, Any]]:
    bytes_per_s = rate_mbps * 1e6 if active("satellite.rate_bytes") else rate_mbps * 1e6 / 8
    return [{**p, "capacity_gb": round(p["duration_s"] * bytes_per_s * 0.9 / 1e9, 2)} for p in passes]


@traced("TOOL")
def reserve_antenna(station: str, antenna: str, pass_id: str) -> dict[str, Any]:
    if (station, pass_id) in BUSY and antenna == STATIONS[station]["antennas"][0]:
        raise RuntimeError(
            f"409 Conflict: {antenna} at {station} is reserved by another mission during {pass_id}"
        )
    rid = f"R-{station[:3].upper()}-{pass_id[2:]}-{len(_RESERVATIONS) + 700}"
    status = {"status": "confirmed"}
    if antenna in NO_XBAND:
        status = {"status": "confirmed", "warnings": [f"{antenna}: X-band feed out of service, S-band only"]}
    _RESERVATIONS[rid] = {
        "station": station,
        "antenna": antenna,
        "pass_id": pass_id,
        "xband": antenna not in NO_XBAND,
    }
    return {"reservation": rid, "antenna": antenna, "pass_id": pass_id, **status}


@traced("TOOL")
def reserve_backup(station: str, pass_id: str) -> dict[str, Any]:
    backup = STATIONS[station]["backup"]
    res = reserve_antenna(station, backup, pass_id)
    if res.get("warnings") and not active("satellite.backup_warning"):
        for antenna in STATIONS[station]["antennas"][::-1]:
            try:
                return reserve_antenna(station, antenna, pass_id)
            except RuntimeError:
                continue
    return {k: v for k, v in res.items() if k != "warnings"}


@traced("CHAIN")
def log_reservation(
    log: list[dict[str, Any]], pass_id: str, reservation: dict[str, Any], previous: dict[str, Any] | None
) -> list[dict[str, Any]]:
    rid = reservation["reservation"]
    if active("satellite.log_entry") and previous is not None and pass_id == "P-05":
        rid = previous["reservation"]
    return [*log, {"pass_id": pass_id, "reservation": rid}]


@traced("CHAIN")
def check_volume(plan: dict[str, Any], volume_gb: float) -> dict[str, Any]:
    booked = sum(a["gb"] for a in plan["allocations"])
    if booked + 1e-6 < volume_gb:
        raise ValueError(
            f"contact plan downlinks {booked:.1f} GB of the {volume_gb:.1f} GB on board; the recorder would overflow before the next window"
        )
    return {"booked_gb": round(booked, 2), "volume_gb": volume_gb}


@traced("TOOL")
def submit_contact_plan(
    station: str, satellite: str, plan: dict[str, Any], log: list[dict[str, Any]]
) -> dict[str, Any]:
    low, high = STATIONS[station]["band_mhz"]
    if not low <= plan["freq_mhz"] <= high:
        raise ValueError(
            f"ground network 422: {plan['freq_mhz']:g} MHz is outside {station}'s X-band licence ({low}-{high} MHz)"
        )
    rate = SATELLITES[satellite]["rate_mbps"]
    for alloc in plan["allocations"]:
        most = _DURATIONS[(station, alloc["pass_id"])] * rate * 1e6 / 8 * 0.9 / 1e9
        if alloc["gb"] > most + 0.01:
            raise ValueError(
                f"ground network 422: {alloc['pass_id']} carries at most {most:.1f} GB at {rate:g} Mbit/s; {alloc['gb']:.1f} GB requested"
            )
    for entry in log:
        res = _RESERVATIONS[entry["reservation"]]
        if res["pass_id"] != entry["pass_id"]:
            raise ValueError(
                f"ground network 409: reservation {entry['reservation']} is for {res['pass_id']}, not {entry['pass_id']}"
            )
        if not res["xband"]:
            raise ValueError(
                f"ground network 422: {res['antenna']} cannot receive X-band for {entry['pass_id']} ({entry['reservation']})"
            )
    return {"plan_id": f"CP-{station[:3].upper()}-{len(log)}", "status": "accepted"}


PLAN_SYS = "You split a satellite's stored data over ground-station passes. Answer JSON {freq_mhz, allocations:[{pass_id, gb}]}."
DRAFT_SYS = "You draft the contact plan message for the ground-station network."
REVIEW_SYS = "You review a contact plan draft. Answer JSON {approved, freq_mhz, allocations}."


def policy(request: Any) -> str:
    messages = request.body["messages"]
    system, user = messages[0]["content"], messages[-1]["content"]
    if system == PLAN_SYS:
        brief = json.loads(user)
        left, allocations = brief["volume_gb"], []
        for p in brief["passes"]:
            gb = round(min(left, p["capacity_gb"]), 2)
            if gb > 0:
                allocations.append({"pass_id": p["pass_id"], "gb": gb})
            left -= gb
        freq = 7950.0 if active("satellite.freq_value") else brief["freq_mhz"]
        return json.dumps({"freq_mhz": freq, "allocations": allocations})
    if system == DRAFT_SYS:
        plan = json.loads(user)
        lines = [f"{a['pass_id']}: {a['gb']:.2f} GB" for a in plan["allocations"]]
        return f"Downlink on {plan['freq_mhz']:g} MHz. " + "; ".join(lines)
    if system == REVIEW_SYS:
        head, body = user.split(". ", 1)
        allocations = [
            {"pass_id": part.split(": ")[0], "gb": float(part.split(": ")[1].split()[0])}
            for part in body.split("; ")
        ]
        return json.dumps({"approved": True, "freq_mhz": float(head.split()[2]), "allocations": allocations})
    return "Unsupported request."


def _agent(client: Any, req: dict[str, Any]) -> None:
    sat = SATELLITES[req["satellite"]]
    with span("pass-scheduler", "AGENT", req):
        tle = fetch_tle(req["satellite"])
        passes = select_passes(predict_passes(tle, req["station"], req["date"]), req["passes"])
        passes = compute_capacity(passes, sat["rate_mbps"])
        brief = {"volume_gb": req["volume_gb"], "freq_mhz": sat["freq_mhz"], "passes": passes}
        plan = json.loads(otlp_route.chat(client, "plan_downlinks", PLAN_SYS, json.dumps(brief)))
        log: list[dict[str, Any]] = []
        previous = None
        with span("reserve_passes", "CHAIN", {"passes": [a["pass_id"] for a in plan["allocations"]]}):
            for alloc in plan["allocations"]:
                try:
                    res = reserve_antenna(
                        req["station"], STATIONS[req["station"]]["antennas"][0], alloc["pass_id"]
                    )
                except RuntimeError:
                    res = reserve_backup(req["station"], alloc["pass_id"])
                log = log_reservation(log, alloc["pass_id"], res, previous)
                previous = res
        draft = otlp_route.chat(client, "draft_contact_plan", DRAFT_SYS, json.dumps(plan))
        reviewed = json.loads(otlp_route.chat(client, "review_contact_plan", REVIEW_SYS, draft))
        check_volume(reviewed, req["volume_gb"])
        submit_contact_plan(req["station"], req["satellite"], reviewed, log)


def record(server: Any, path: Path, inp: dict[str, Any]) -> None:
    """Record one run of the agent on ``inp`` into ``path`` (a failure is recorded, not raised)."""
    client = openai_client(server)
    server.use(policy)
    otlp_route.begin()
    try:
        _agent(client, inp)
    except ValueError:
        pass
    otlp_route.write(path)


def _req(satellite: str, station: str, date: str, passes: int, volume_gb: float) -> dict[str, Any]:
    return {
        "satellite": satellite,
        "station": station,
        "date": date,
        "passes": passes,
        "volume_gb": volume_gb,
    }


CASES = [
    Case(
        "satellite_01",
        "satellite.rate_bytes",
        "unit_error",
        "compute_capacity",
        '"capacity_gb": 341.64',
        _req("SENTINEL-2C", "Troll", "2026-04-02", 4, 120.0),
    ),
    Case(
        "satellite_02",
        "satellite.keep_count",
        "off_by_one",
        "select_passes",
        '"max_elev_deg": 43}, {"pass_id": "P-09"',
        _req("LANDSAT-9", "Svalbard", "2026-04-03", 5, 140.0),
    ),
    Case(
        "satellite_03",
        "satellite.freq_value",
        "hallucinated_value",
        "ChatCompletion",
        "7950",
        _req("AQUA", "Inuvik", "2026-04-04", 3, 20.0),
    ),
    Case(
        "satellite_04",
        "satellite.backup_warning",
        "swallowed_error",
        "reserve_backup",
        '"antenna": "SG-3"',
        _req("LANDSAT-9", "Svalbard", "2026-04-05", 6, 90.0),
    ),
    Case(
        "satellite_05",
        "satellite.log_entry",
        "bad_memory_write",
        "log_reservation",
        '"pass_id": "P-05", "reservation": "R-SVA-03-',
        _req("SENTINEL-2C", "Svalbard", "2026-04-06", 6, 200.0),
    ),
]
REFS = [
    _req("SMOS", "Troll", "2026-05-01", 3, 1.5),
    _req("AQUA", "Svalbard", "2026-05-02", 4, 25.0),
    _req("LANDSAT-9", "Inuvik", "2026-05-03", 5, 40.0),
    _req("SENTINEL-2C", "Inuvik", "2026-05-04", 4, 60.0),
]
