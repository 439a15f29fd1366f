"""seismic-review: a seismological network's duty review of automatic detections (OpenAI Agents SDK).

The duty seismologist agent lists the pending automatic detections of a window, has a locator agent
(run as a tool; it fetches the P picks of two networks with parallel tool calls) and a magnitude agent
(run as a tool; station amplitudes) review the event, asks the triage tool which desk the event goes
to, and publishes it in the reviewed bulletin, or hands off to the alert officer, who issues the
public alert and publishes.  Recorded by TrajdebugProcessor.
"""

from __future__ import annotations

import ast
import asyncio
import math
import re
from pathlib import Path
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .common import Case

RUN_NAME = "seismic-review"
ROUTE = "openai_agents"
DOMAIN = "seismological network: duty review of automatic detections for the reviewed bulletin"
SHAPE = "lead agent: detections tool -> locator agent as tool (parallel picks tools per network) -> magnitude agent as tool (amplitudes tool) -> triage tool -> publish tool, or hand-off to the alert officer (alert tool, publish tool)"

SWITCH: str | None = None


def _on(tag: str) -> bool:
    return SWITCH == tag  # the one place SWITCH is read


STATIONS = {
    "FN": {"KEV": (69.76, 27.01), "SOD": (67.42, 26.39), "KIF": (67.61, 24.90), "OUL": (65.09, 25.90),
           "KU2": (65.95, 29.25), "RAF": (64.70, 29.60), "VRF": (62.95, 26.60), "JOF": (62.60, 29.80),
           "VAF": (63.10, 21.60), "PKF": (61.60, 22.50), "MEF": (60.22, 24.38)},
    "NO": {"ARE0": (69.53, 25.51), "TRO": (69.63, 18.94), "KTK1": (68.40, 17.40)},
}

EVENTS = {
    "fn2024wltq": {"origin": "2024-11-20T03:14:51.3Z", "lat": 65.92, "lon": 28.41, "depth": 9.0, "ml": 3.4, "region": "Kuusamo, Finland"},
    "fn2024wltp": {"origin": "2024-11-20T03:12:07.4Z", "lat": 67.71, "lon": 21.02, "depth": 1.0, "ml": 1.3, "region": "Kiruna, Sweden"},
    "fn2024wmab": {"origin": "2024-11-22T17:40:12.8Z", "lat": 65.10, "lon": 24.20, "depth": 14.0, "ml": 2.1, "region": "Bothnian Bay"},
    "fn2024wnke": {"origin": "2024-11-25T09:02:33.0Z", "lat": 67.90, "lon": 25.10, "depth": 2.0, "ml": 2.7, "region": "Kittila, Finland"},
    "fn2024wpqa": {"origin": "2024-11-27T22:51:04.6Z", "lat": 66.40, "lon": 27.10, "depth": 11.0, "ml": 4.2, "region": "Rovaniemi, Finland"},
    "fn2024wrtz": {"origin": "2024-11-29T05:26:48.1Z", "lat": 62.10, "lon": 25.90, "depth": 7.0, "ml": 2.9, "region": "Jyvaskyla, Finland"},
}

WINDOWS = {
    "2024-11-20T03:00/03:30": ["fn2024wltp", "fn2024wltq"],
    "2024-11-22T17:30/18:00": ["fn2024wmab"],
    "2024-11-25T09:00/09:30": ["fn2024wnke"],
    "2024-11-27T22:30/23:00": ["fn2024wpqa"],
    "2024-11-29T05:00/05:30": ["fn2024wrtz"],
}

INPUTS: list[dict[str, Any]] = [
    {"task": "review window 2024-11-20 03:00-03:30 (event fn2024wltq)", "window": "2024-11-20T03:00/03:30", "event": "fn2024wltq"},
    {"task": "review window 2024-11-22 17:30-18:00 (event fn2024wmab)", "window": "2024-11-22T17:30/18:00", "event": "fn2024wmab"},
    {"task": "review window 2024-11-25 09:00-09:30 (event fn2024wnke)", "window": "2024-11-25T09:00/09:30", "event": "fn2024wnke"},
    {"task": "review window 2024-11-27 22:30-23:00 (event fn2024wpqa)", "window": "2024-11-27T22:30/23:00", "event": "fn2024wpqa"},
    {"task": "review window 2024-11-29 05:00-05:30 (event fn2024wrtz)", "window": "2024-11-29T05:00/05:30", "event": "fn2024wrtz"},
]

CASES = [
    Case("ss1", 0, "locator-neighbour", "subagent_wrong_entity", ("response", 3), ("publish_bulletin", 1),
         "The locator agent fetched the picks of fn2024wltp, the other detection of the window, and located that "
         "event, so the bulletin entry for fn2024wltq carried another event's origin time."),
    Case("ss2", 1, "latlon-order", "wrong_tool_args", ("response", 9), ("publish_bulletin", 1),
         "The duty seismologist's model called the publish tool with latitude and longitude swapped, which put the "
         "epicentre outside the bulletin region."),
    Case("ss3", 3, "ml-round", "hallucinated_value", ("response", 7), ("publish_bulletin", 1),
         "The magnitude agent's answer stated ML 4.7 where its own station amplitudes give 4.2; the event went through "
         "the alert officer, whose publish call the station-mean check refused."),
    Case("ss4", 4, "picks-page", "truncated_result", ("station_picks", 1), ("publish_bulletin", 1),
         "The Finnish network's picks came back as the first page of six northern stations only, so the location had "
         "an azimuthal gap over 180 degrees that the bulletin refuses."),
    Case("ss5", 2, "felt-threshold", "wrong_routing", ("route_event", 1), ("issue_alert", 1),
         "The triage tool compared the ML 2.8 event with the felt-report threshold rather than the alert threshold "
         "and sent it to the alert officer, whose alert tool refused it."),
]

# --------------------------------------------------------------------------------------------------
# Geometry and the network's databases.
# --------------------------------------------------------------------------------------------------


def _dist_az(lat1: float, lon1: float, lat2: float, lon2: float) -> tuple[float, float]:
    dy = (lat2 - lat1) * 111.2
    dx = (lon2 - lon1) * 111.2 * math.cos(math.radians((lat1 + lat2) / 2))
    return math.hypot(dx, dy), (math.degrees(math.atan2(dx, dy)) + 360) % 360


def _gap(azimuths: list[float]) -> float:
    a = sorted(azimuths)
    gaps = [b - x for x, b in zip(a, a[1:])] + [a[0] + 360 - a[-1]]
    return max(gaps)


def _station_ml(event_id: str, station: str) -> float:
    return EVENTS[event_id]["ml"] + ((sum(map(ord, station + event_id)) % 9) - 4) * 0.03


def _amplitude(ml: float, r: float) -> float:
    return 10 ** (ml - 1.11 * math.log10(r) - 0.00189 * r + 2.09)


def _ml_from(amp: float, r: float) -> float:
    return math.log10(amp) + 1.11 * math.log10(r) + 0.00189 * r - 2.09


@function_tool
def pending_detections(window: str) -> list[dict]:
    """Automatic detections of the network in a time window (ISO start/end)."""
    return [{"event_id": e, "origin": EVENTS[e]["origin"], "auto_lat": round(EVENTS[e]["lat"] + 0.07, 2),
             "auto_lon": round(EVENTS[e]["lon"] - 0.11, 2), "auto_ml": round(EVENTS[e]["ml"] + 0.2, 1)}
            for e in WINDOWS[window]]


@function_tool
def station_picks(event_id: str, network: str) -> dict:
    """Reviewed P and S picks of one network's stations for an event."""
    ev = EVENTS[event_id]
    picks = []
    for sta, (la, lo) in STATIONS[network].items():
        d, az = _dist_az(ev["lat"], ev["lon"], la, lo)
        if d > 800:
            continue
        picks.append({"station": sta, "dist_km": round(d, 1), "azimuth": round(az, 1), "p_s": round(d / 6.6, 2),
                      "s_s": round(d / 3.8, 2)})
    if _on("picks-page") and network == "FN":
        return {"event_id": event_id, "network": network, "origin_hint": ev["origin"], "picks": picks[:6], "page": 1, "pages": 2}
    return {"event_id": event_id, "network": network, "origin_hint": ev["origin"], "picks": picks, "page": 1, "pages": 1}


@function_tool
def station_amplitudes(event_id: str) -> list[dict]:
    """Wood-Anderson peak amplitudes (nm) and hypocentral distances of the stations that recorded an event."""
    ev = EVENTS[event_id]
    out = []
    for sta, (la, lo) in sorted(STATIONS["FN"].items()):
        d, _ = _dist_az(ev["lat"], ev["lon"], la, lo)
        r = math.hypot(d, ev["depth"])
        if r > 600:
            continue
        out.append({"station": sta, "amp_nm": round(_amplitude(_station_ml(event_id, sta), r), 2), "r_km": round(r, 1)})
    return out


ALERT_ML = 4.0
FELT_ML = 2.5


@function_tool
def route_event(event_id: str, ml: float, region: str) -> dict:
    """Which desk a reviewed event goes to: the bulletin or the alert officer."""
    threshold = FELT_ML if _on("felt-threshold") else ALERT_ML
    desk = "alert_officer" if ml >= threshold else "bulletin"
    return {"event_id": event_id, "desk": desk, "threshold_ml": threshold}


def _check_and_store(event_id: str, origin: str, lat: float, lon: float, depth_km: float, ml: float, gap_deg: float) -> dict:
    ev = EVENTS[event_id]
    if not (59.0 <= lat <= 71.0 and 19.0 <= lon <= 32.0):
        raise ValueError(f"{event_id}: epicentre {lat:.2f}N {lon:.2f}E lies outside the bulletin region (59-71N, 19-32E)")
    t_given = origin[11:22]
    t_det = ev["origin"][11:22]
    if t_given != t_det:
        raise ValueError(f"{event_id}: origin time {t_given} does not match the detection's {t_det}")
    if gap_deg > 180:
        raise ValueError(f"{event_id}: azimuthal gap {gap_deg:.0f} deg exceeds 180 deg for a reviewed solution")
    mls = []
    for sta, (la, lo) in STATIONS["FN"].items():
        d, _ = _dist_az(ev["lat"], ev["lon"], la, lo)
        r = math.hypot(d, ev["depth"])
        if r <= 600:
            mls.append(_ml_from(_amplitude(_station_ml(event_id, sta), r), r))
    mean = sum(mls) / len(mls)
    if abs(ml - mean) > 0.3:
        raise ValueError(f"{event_id}: ML {ml} differs from the station mean {mean:.2f} by more than 0.3")
    return {"event_id": event_id, "status": "published", "bulletin": "FNB 2024/11", "ml": ml}


@function_tool(failure_error_function=None)
def publish_bulletin(event_id: str, origin: str, lat: float, lon: float, depth_km: float, ml: float, gap_deg: float,
                     region: str) -> dict:
    """Publish a reviewed event in the network bulletin."""
    return {**_check_and_store(event_id, origin, lat, lon, depth_km, ml, gap_deg), "region": region}


@function_tool(failure_error_function=None)
def issue_alert(event_id: str, ml: float, region: str) -> dict:
    """Issue the public earthquake alert for a felt event."""
    if ml < ALERT_ML:
        raise ValueError(f"{event_id}: public alerts start at ML {ALERT_ML}; this event is ML {ml}")
    return {"event_id": event_id, "alert": "issued", "channels": ["web", "civil protection"], "ml": ml, "region": region}


# --------------------------------------------------------------------------------------------------
# The model's side (Responses API requests from the Agents SDK).
# --------------------------------------------------------------------------------------------------


def _outputs(items: list[Any]) -> dict[str, list[Any]]:
    calls = {i["call_id"]: i["name"] for i in items if isinstance(i, dict) and i.get("type") == "function_call"}
    out: dict[str, list[Any]] = {}
    for i in items:
        if isinstance(i, dict) and i.get("type") == "function_call_output":
            text = i["output"]
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                value = text
            out.setdefault(calls.get(i["call_id"], "?"), []).append(value)
    return out


def _user_text(items: list[Any]) -> str:
    for i in items:
        if isinstance(i, dict) and i.get("role") == "user":
            c = i.get("content")
            return c if isinstance(c, str) else " ".join(p.get("text", "") for p in c)
    return ""


def _parse_location(text: str) -> dict:
    m = re.search(r"(\w+): ([\d.]+)N ([\d.]+)E, depth ([\d.]+) km, gap (\d+) deg, \d+ stations, origin (\S+)", text)
    return {"event_id": m.group(1), "lat": float(m.group(2)), "lon": float(m.group(3)), "depth_km": float(m.group(4)),
            "gap_deg": float(m.group(5)), "origin": m.group(6)}


def brain(request: Any) -> Any:
    body = request.body
    instructions = body.get("instructions") or ""
    items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
    out = _outputs(items)
    user = _user_text(items)
    if instructions.startswith("You are the locator"):
        if "station_picks" not in out:
            target = re.search(r"Locate (\w+)", user).group(1)
            others = re.findall(r"other detection (\w+)", user)
            if _on("locator-neighbour") and others:
                target = others[0]
            return Reply(tool_calls=(tool_call("station_picks", {"event_id": target, "network": "FN"}),
                                     tool_call("station_picks", {"event_id": target, "network": "NO"})))
        picks = [p for r in out["station_picks"] for p in r["picks"]]
        ev_id = out["station_picks"][0]["event_id"]
        hint = out["station_picks"][0]["origin_hint"]
        ev = EVENTS[ev_id]
        gap = _gap([p["azimuth"] for p in picks])
        return (f"{ev_id}: {ev['lat']:.2f}N {ev['lon']:.2f}E, depth {ev['depth']:.0f} km, gap {gap:.0f} deg, "
                f"{len(picks)} stations, origin {hint}")
    if instructions.startswith("You are the magnitude desk"):
        if "station_amplitudes" not in out:
            return Reply(tool_calls=(tool_call("station_amplitudes", {"event_id": re.search(r"(fn\w+)", user).group(1)}),))
        amps = out["station_amplitudes"][0]
        mls = [_ml_from(a["amp_nm"], a["r_km"]) for a in amps]
        ml = sum(mls) / len(mls)
        spread = (sum((m - ml) ** 2 for m in mls) / len(mls)) ** 0.5
        stated = round(ml, 1) + (0.5 if _on("ml-round") else 0.0)
        return f"ML {stated:.1f} ± {spread:.2f} from {len(mls)} stations (Hutton-Boore, Wood-Anderson amplitudes)."
    if instructions.startswith("You are the alert officer"):
        loc = _parse_location(out["locate_event"][0])
        ml = float(re.search(r"ML ([\d.]+)", out["magnitude_desk"][0]).group(1))
        region = _region(items)
        if "issue_alert" not in out:
            return Reply(tool_calls=(tool_call("issue_alert", {"event_id": loc["event_id"], "ml": ml, "region": region}),))
        if "publish_bulletin" not in out:
            return Reply(tool_calls=(tool_call("publish_bulletin", {**loc, "ml": ml, "region": region}),))
        return f"Alert issued and {loc['event_id']} published, ML {ml}."
    # the duty seismologist
    event = re.search(r"event (\w+)", user).group(1)
    if "pending_detections" not in out:
        window = re.search(r"window (\S+)", user).group(1)
        return Reply(tool_calls=(tool_call("pending_detections", {"window": window}),))
    dets = out["pending_detections"][0]
    det = next(d for d in dets if d["event_id"] == event)
    if "locate_event" not in out:
        others = "".join(f"; other detection {d['event_id']} at {d['origin'][11:19]}" for d in dets if d["event_id"] != event)
        return Reply(tool_calls=(tool_call("locate_event", {"input": f"Locate {event} (automatic {det['auto_lat']}N "
                                                                     f"{det['auto_lon']}E, origin {det['origin']}){others}."}),))
    if "magnitude_desk" not in out:
        return Reply(tool_calls=(tool_call("magnitude_desk", {"input": f"Magnitude for {event}, automatic ML {det['auto_ml']}."}),))
    loc = _parse_location(out["locate_event"][0])
    ml = float(re.search(r"ML ([\d.]+)", out["magnitude_desk"][0]).group(1))
    region = _region(items)
    if "route_event" not in out:
        return Reply(tool_calls=(tool_call("route_event", {"event_id": event, "ml": ml, "region": region}),))
    if out["route_event"][0]["desk"] == "alert_officer":
        return Reply(tool_calls=(tool_call("transfer_to_alert_officer", {}),))
    if "publish_bulletin" not in out:
        args = {**loc, "event_id": event, "ml": ml, "region": region}
        if _on("latlon-order"):
            args["lat"], args["lon"] = loc["lon"], loc["lat"]
        return Reply(tool_calls=(tool_call("publish_bulletin", args),))
    return f"{event} reviewed and published in the bulletin: ML {ml}, {region}."


def _region(items: list[Any]) -> str:
    text = _user_text(items)
    event = re.search(r"event (\w+)", text).group(1)
    return EVENTS[event]["region"]


# --------------------------------------------------------------------------------------------------
# The agents.
# --------------------------------------------------------------------------------------------------

_lead: Agent | None = None
_base_url = ""


def setup(server: Any) -> None:
    global _lead, _base_url
    _base_url = server.base_url
    set_default_openai_api("responses")
    m = server.model
    locator = Agent(name="locator", model=m, tools=[station_picks],
                    instructions="You are the locator: fetch the reviewed picks of both networks and give the hypocentre.")
    magnitude = Agent(name="magnitude", model=m, tools=[station_amplitudes],
                      instructions="You are the magnitude desk: compute ML from the station amplitudes.")
    alert_officer = Agent(name="alert_officer", model=m, tools=[issue_alert, publish_bulletin],
                          instructions="You are the alert officer: issue the public alert for felt events, then publish.")
    _lead = Agent(name="duty_seismologist", model=m, handoffs=[alert_officer],
                  instructions="You review automatic detections for the reviewed bulletin.",
                  tools=[pending_detections,
                         locator.as_tool(tool_name="locate_event", tool_description="Locate an event from reviewed picks."),
                         magnitude.as_tool(tool_name="magnitude_desk", tool_description="Local magnitude of an event."),
                         route_event, publish_bulletin])


def teardown() -> None:
    global _lead
    set_trace_processors([])
    _lead = None


async def _review(inp: dict) -> None:
    client = AsyncOpenAI(base_url=_base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client, use_for_tracing=False)
    try:
        await Runner.run(_lead, f"Review the detection window {inp['window']} for event {inp['event']}.",
                         run_config=RunConfig(workflow_name=RUN_NAME), max_turns=12)
    finally:
        await client.close()


def run_once(inp: dict, path: Path) -> None:
    processor = TrajdebugProcessor(path=str(path), name=RUN_NAME, task=inp["task"])
    set_trace_processors([processor])
    try:
        asyncio.run(_review(inp))
    except Exception:  # noqa: BLE001 - the trace records it; the generator checks the outcome
        pass
    finally:
        set_trace_processors([])
