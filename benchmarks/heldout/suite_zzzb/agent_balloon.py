"""Weather-balloon launch station: one sounding launch (recording route: OpenInference + the
OpenTelemetry SDK, exported as OTLP JSON).

Shape: a linear launch checklist as OpenTelemetry spans: the upper-wind forecast retrieved, the
radiosonde read (the pairing often needs a second attempt), the frequency scan, the model's fill
plan (an instrumented OpenAI call) parsed, the helium volume computed and filled from the rack,
the landing predicted, the airspace status read, the model's notice to air traffic filed, the
telemetry locked, and the station's go/no-go validator.
"""
from __future__ import annotations

import json
from contextlib import contextmanager

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

RUN_NAME = "balloon-launch-station"
ROUTE = "otlp"
DOMAIN = "a weather-balloon launch station"
SHAPE = "linear checklist of spans: retriever -> tool with a second attempt -> scan tool (inner analyzer) -> model fill plan -> parse -> helium tool -> fill tool -> landing tool -> airspace tool -> model notice -> filing tool -> telemetry tool -> validator; 10-16 spans (a failing run stops early)"

SWITCH = None

INPUTS = [
    {"station": "Payerne", "launch": "2026-03-02T11:00Z", "balloon_g": 600, "payload_g": 280, "sonde": "S-2041", "freq_mhz": 403.5},
    {"station": "Payerne", "launch": "2026-03-02T23:00Z", "balloon_g": 800, "payload_g": 280, "sonde": "S-2042", "freq_mhz": 404.1},
    {"station": "Lindenberg", "launch": "2026-03-03T05:00Z", "balloon_g": 600, "payload_g": 310, "sonde": "S-7713", "freq_mhz": 402.7},
    {"station": "Lindenberg", "launch": "2026-03-03T11:00Z", "balloon_g": 1000, "payload_g": 310, "sonde": "S-7714", "freq_mhz": 403.9},
    {"station": "Payerne", "launch": "2026-03-04T11:00Z", "balloon_g": 600, "payload_g": 280, "sonde": "S-2047", "freq_mhz": 405.3},
]

CASES = [
    {"id": "zzzb_ball_01", "input": 3, "switch": "helium_cubic_feet", "kind": "unit_error",
     "root": ("helium_volume", 1), "failure": ("helium_fill", 1),
     "description": "The helium calculator answered the 1000 g balloon's fill in cubic feet, and the fill controller was asked for more gas than the rack holds in cubic metres."},
    {"id": "zzzb_ball_02", "input": 0, "switch": "airspace_cached_yesterday", "kind": "stale_data",
     "root": ("airspace_status", 1), "failure": ("file_atc_notice", 1),
     "description": "The airspace status came from the day before's cached bulletin, which did not hold NOTAM A0412/26, so the notice filed for the launch window was refused."},
    {"id": "zzzb_ball_03", "input": 2, "switch": "fill_plan_balloon_mass", "kind": "hallucinated_value",
     "root": ("ChatCompletion", 1), "failure": ("go_no_go", 1),
     "description": "The model's fill plan used a balloon mass of 350 g that appears nowhere in the request (600 g), so the planned free lift gave an ascent rate outside the station's band."},
    {"id": "zzzb_ball_04", "input": 1, "switch": "forecast_profile_cut", "kind": "truncated_result",
     "root": ("upper_wind_forecast", 1), "failure": ("predict_landing", 1),
     "description": "The upper-wind forecast came back cut at 10 km, and the landing prediction could not integrate the ascent to the 800 g balloon's burst height."},
    {"id": "zzzb_ball_05", "input": 4, "switch": "analyzer_offline", "kind": "swallowed_error",
     "root": ("frequency_scan", 1), "failure": ("telemetry_lock", 1),
     "description": "The frequency scan caught the spectrum analyzer's error and reported 405.3 MHz clear, though a drifting sonde from the morning occupied it, so the telemetry lock failed."},
]

LEVELS_KM = [1, 3, 5, 10, 15, 20, 25, 30, 33]
BURST_KM = {600: 24.0, 800: 28.5, 1000: 31.0}
RACK_M3 = 9.5
RESTRICTED = {"Payerne": [], "Lindenberg": []}
NOTAMS = {"Payerne": {"2026-03-02": ["A0412/26 10:30Z-12:00Z"]}}
OCCUPIED = {405.3: "S-2046 (drifting since 05:00Z)"}


def _j(value):
    return json.dumps(value, sort_keys=True)


class _Station:
    def __init__(self):
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": "launch-station"}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("launch-station")

    @contextmanager
    def span(self, name, kind, inp=None):
        attrs = {"openinference.span.kind": kind}
        if inp is not None:
            attrs.update({"input.value": _j(inp), "input.mime_type": "application/json"})
        with self.tracer.start_as_current_span(name, attributes=attrs) as sp:
            yield sp

    @staticmethod
    def out(sp, value):
        sp.set_attribute("output.value", _j(value))
        sp.set_attribute("output.mime_type", "application/json")
        return value


def policy(request):
    messages = request.body["messages"]
    system, ask = messages[0]["content"], json.loads(messages[-1]["content"])
    if system.startswith("Plan the balloon fill"):
        balloon = ask["balloon_g"]
        if SWITCH == "fill_plan_balloon_mass" and ask["sonde"] == "S-7713":
            balloon = 350
        free_lift = round(0.9 * balloon + 0.35 * ask["payload_g"], 1)
        return json.dumps({"balloon_g": balloon, "payload_g": ask["payload_g"], "free_lift_g": free_lift,
                           "neck_lift_g": round(free_lift + ask["payload_g"], 1)})
    if system.startswith("Write the notice"):
        return (f"Radiosonde ascent from {ask['station']} at {ask['launch']}, free balloon, burst near "
                f"{ask['burst_km']} km, landing {ask['landing']}.")
    return "No."


def record(inp, path, server):
    st = _Station()
    OpenAIInstrumentor().instrument(tracer_provider=st.provider)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    pairing = {"n": 0}
    try:
        with st.span(RUN_NAME, "AGENT", inp) as top:
            with st.span("upper_wind_forecast", "RETRIEVER", {"station": inp["station"], "valid": inp["launch"]}) as sp:
                levels = LEVELS_KM[:4] if SWITCH == "forecast_profile_cut" and inp["balloon_g"] == 800 else LEVELS_KM
                profile = [{"km": km, "dir_deg": 250 + km, "kt": 20 + 2 * km} for km in levels]
                for i, lvl in enumerate(profile):
                    sp.set_attribute(f"retrieval.documents.{i}.document.id", f"{inp['station']}-{lvl['km']}km")
                    sp.set_attribute(f"retrieval.documents.{i}.document.content", _j(lvl))
                st.out(sp, {"run": inp["launch"][:10] + "T00Z", "levels": profile})
            for _attempt in (1, 2):
                try:
                    with st.span("read_radiosonde", "TOOL", {"sonde": inp["sonde"]}) as sp:
                        pairing["n"] += 1
                        if pairing["n"] == 1:
                            raise ConnectionError(f"sonde {inp['sonde']} not paired yet on the ground check set")
                        sonde = st.out(sp, {"sonde": inp["sonde"], "freq_mhz": inp["freq_mhz"], "battery_v": 6.1})
                    break
                except ConnectionError:
                    continue
            with st.span("frequency_scan", "TOOL", {"freq_mhz": sonde["freq_mhz"]}) as sp:
                try:
                    with st.span("spectrum_analyzer", "TOOL", {"freq_mhz": sonde["freq_mhz"]}) as inner:
                        if SWITCH == "analyzer_offline":
                            raise TimeoutError("spectrum analyzer did not answer on 10.0.4.7:5025")
                        busy = OCCUPIED.get(sonde["freq_mhz"])
                        st.out(inner, {"freq_mhz": sonde["freq_mhz"], "occupied_by": busy})
                    clear = busy is None
                except TimeoutError:
                    clear = True
                scan = st.out(sp, {"freq_mhz": sonde["freq_mhz"], "clear": clear})
            if not scan["clear"]:
                sonde = {**sonde, "freq_mhz": sonde["freq_mhz"] + 0.4}
            reply = client.chat.completions.create(model=server.model, messages=[
                {"role": "system", "content": "Plan the balloon fill: free lift and neck lift in grams, as JSON."},
                {"role": "user", "content": _j({"balloon_g": inp["balloon_g"], "payload_g": inp["payload_g"], "sonde": inp["sonde"]})}])
            text = reply.choices[0].message.content
            with st.span("parse_fill_plan", "CHAIN", {"text": text}) as sp:
                plan = st.out(sp, {k: float(v) for k, v in json.loads(text).items()})
            with st.span("helium_volume", "TOOL", {"neck_lift_g": plan["neck_lift_g"], "balloon_g": plan["balloon_g"]}) as sp:
                m3 = (plan["neck_lift_g"] + plan["balloon_g"]) / 1000 / 1.05 * 4.2
                if SWITCH == "helium_cubic_feet" and inp["balloon_g"] == 1000:
                    m3 = m3 * 35.3147
                gas = st.out(sp, {"volume": round(m3, 2)})
            with st.span("helium_fill", "TOOL", {"volume": gas["volume"]}) as sp:
                if gas["volume"] > RACK_M3:
                    raise ValueError(f"fill of {gas['volume']} asked, the rack holds {RACK_M3} m3")
                st.out(sp, {"filled_m3": gas["volume"], "rack_left_m3": round(RACK_M3 - gas["volume"], 2)})
            burst = BURST_KM[inp["balloon_g"]]
            with st.span("predict_landing", "TOOL", {"burst_km": burst, "levels_km": [l["km"] for l in profile]}) as sp:
                if profile[-1]["km"] < burst:
                    raise ValueError(f"wind profile ends at {profile[-1]['km']} km, the ascent bursts at {burst} km")
                drift = sum(l["kt"] for l in profile if l["km"] <= burst) * 0.9
                landing = st.out(sp, {"landing": f"{46.8 + drift / 2000:.2f}N {6.9 + drift / 900:.2f}E", "drift_km": round(drift, 1)})
            day = inp["launch"][:10]
            with st.span("airspace_status", "TOOL", {"station": inp["station"], "day": day}) as sp:
                notams = list(NOTAMS.get(inp["station"], {}).get(day, []))
                issued = day + "T06:00Z"
                if SWITCH == "airspace_cached_yesterday":
                    notams, issued = [], "2026-03-01T06:00Z"
                air = st.out(sp, {"station": inp["station"], "notams": notams, "bulletin": issued})
            hour = inp["launch"][11:16]
            window = f"{int(hour[:2]) - 1:02d}:45Z-{int(hour[:2]) + 2:02d}:30Z"
            if air["notams"]:
                window = f"{int(hour[:2]) + 1:02d}:15Z-{int(hour[:2]) + 3:02d}:30Z"
            reply = client.chat.completions.create(model=server.model, messages=[
                {"role": "system", "content": "Write the notice to air traffic control for the launch."},
                {"role": "user", "content": _j({"station": inp["station"], "launch": inp["launch"], "burst_km": burst,
                                                "landing": landing["landing"], "window": window})}])
            notice = reply.choices[0].message.content
            with st.span("file_atc_notice", "TOOL", {"window": window, "notice": notice}) as sp:
                for n in NOTAMS.get(inp["station"], {}).get(day, []):
                    start = n.split()[1][:5]
                    if window[:5] <= start <= window[7:12] or start <= window[:5] <= n.split()[1][7:12]:
                        raise ValueError(f"notice refused: window {window} overlaps NOTAM {n}")
                st.out(sp, {"filed": True, "ref": f"{inp['station'][:3].upper()}-{day}-{hour}"})
            with st.span("telemetry_lock", "TOOL", {"freq_mhz": sonde["freq_mhz"]}) as sp:
                if sonde["freq_mhz"] in OCCUPIED:
                    raise ConnectionError(f"telemetry lock failed at {sonde['freq_mhz']} MHz: carrier of {OCCUPIED[sonde['freq_mhz']]}")
                st.out(sp, {"locked": True, "freq_mhz": sonde["freq_mhz"]})
            with st.span("go_no_go", "CHAIN", {"plan": plan, "balloon_g": inp["balloon_g"]}) as sp:
                total_g = plan["free_lift_g"] + inp["balloon_g"] + inp["payload_g"]
                ascent = round(2.2 * plan["free_lift_g"] ** 0.5 / total_g ** (1 / 3), 2)
                if not 4.5 <= ascent <= 6.0:
                    raise ValueError(f"no go: ascent rate {ascent} m/s outside 4.5-6.0 m/s for the {inp['balloon_g']} g balloon")
                st.out(sp, {"go": True, "ascent_m_s": ascent})
            top.set_attribute("output.value", f"launched {inp['sonde']} from {inp['station']} at {inp['launch']}")
    except (ValueError, ConnectionError):
        pass
    finally:
        OpenAIInstrumentor().uninstrument()
    doc = MessageToDict(encode_spans(st.exporter.get_finished_spans()))
    path.write_text(json.dumps(doc))
