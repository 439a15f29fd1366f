"""Community radio overnight playout: an instrumented openai client plus OpenInference spans, exported as OTLP/JSON."""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from trajdebug.testing import FakeModelServer, Reply, tool_call

from .. import kit


AGENT = "night-playout"
ROUTE = "otlp"
EXT = "json"

LIBRARY = {
    "ambient": [
        {"id": "TRK-10231", "title": "Fog Over Estuary", "artist": "Wend", "local": True, "duration": "6:12"},
        {"id": "TRK-10877", "title": "Low Tide Choir", "artist": "Maren Coe", "local": False, "duration": "5:40"},
        {"id": "TRK-11302", "title": "Glasshouse", "artist": "Pellow", "local": True, "duration": "7:05"},
        {"id": "TRK-11950", "title": "Slow Signal", "artist": "Ruth Amos", "local": False, "duration": "4:58"},
    ],
    "folk": [
        {"id": "TRK-20418", "title": "The Drover's Road", "artist": "Alder & Ash", "local": True, "duration": "4:21"},
        {"id": "TRK-20590", "title": "Copper Kettle Reel", "artist": "Brannock", "local": False, "duration": "3:47"},
        {"id": "TRK-21133", "title": "Lantern Hill", "artist": "Ysolde Kerr", "local": True, "duration": "5:02"},
        {"id": "TRK-21706", "title": "Salt Winds", "artist": "The Harrow Men", "local": False, "duration": "4:36"},
    ],
    "jazz": [
        {"id": "TRK-30115", "title": "Blue Ferry", "artist": "Okon Trio", "local": False, "duration": "6:48"},
        {"id": "TRK-30442", "title": "Late Tram", "artist": "Della Marsh", "local": True, "duration": "5:15"},
        {"id": "TRK-30981", "title": "Quarter Past", "artist": "Hal Ives", "local": False, "duration": "4:50"},
        {"id": "TRK-31207", "title": "Night Market", "artist": "Sunda Five", "local": True, "duration": "6:05"},
    ],
    "classical": [
        {"id": "TRK-40026", "title": "Nocturne in E flat", "artist": "Ilse Moor", "local": True, "duration": "5:30"},
        {"id": "TRK-40513", "title": "Gymnopedie No. 1", "artist": "Aldous Quartet", "local": False, "duration": "3:25"},
        {"id": "TRK-40877", "title": "Clair de lune", "artist": "Nia Bell", "local": False, "duration": "5:11"},
        {"id": "TRK-41240", "title": "Air on the G String", "artist": "Tamsin Ford", "local": True, "duration": "5:44"},
    ],
}
TRACKS = {t["id"]: t for ts in LIBRARY.values() for t in ts}
PLAYED_24H = {"TRK-88412"}

BRIEFS = {
    "b1": "Show: Night Shore. Slot 01:00-02:30. Genres: ambient + folk. Local quota 30%. Station ID every 30 min.",
    "b2": "Show: Small Hours Jazz. Slot 02:00-03:00. Genres: jazz. Local quota 30%. Station ID every 30 min.",
    "b3": "Show: Quiet Keys. Slot 03:00-04:00. Genres: classical + ambient. Local quota 30%. Station ID every 30 min.",
    "b4": "Show: Estuary Folk. Slot 00:00-01:30. Genres: folk + jazz. Local quota 30%. Station ID every 30 min.",
    "b5": "Show: Dawn Drift. Slot 04:00-05:00. Genres: ambient. Local quota 30%. Station ID every 30 min.",
    "b6": "Show: Lamplight. Slot 22:00-23:30. Genres: classical + folk. Local quota 30%. Station ID every 30 min.",
    "b7": "Show: Tideline. Slot 23:00-00:00. Genres: folk. Local quota 30%. Station ID every 30 min.",
    "b8": "Show: Blue Hour. Slot 05:00-06:00. Genres: jazz + classical. Local quota 30%. Station ID every 30 min.",
    "b9": "Show: Undertow. Slot 00:30-01:30. Genres: ambient + jazz. Local quota 30%. Station ID every 30 min.",
}
GRID = {b: t.split("Slot ")[1].split(".")[0] for b, t in BRIEFS.items()}

FAULTS = [
    {"id": "po-a", "kind": "lossy_parsing", "order": "b1", "root": "parse_brief", "marker": "01:00-02:00"},
    {"id": "po-b", "kind": "context_pollution", "order": "b4", "root": "search_library", "marker": "TRK-88412"},
    {"id": "po-c", "kind": "swallowed_error", "order": "b6", "root": "rights_check", "marker": "assumed"},
    {"id": "po-d", "kind": "wrong_tool_args", "order": "b3", "root": "ChatCompletion", "marker": "60m"},
    {"id": "po-e", "kind": "unit_error", "order": "b9", "root": "track_metadata", "marker": "308000"},
]
REFS = ["b2", "b5", "b7", "b8"]


class PlayoutRefused(RuntimeError):
    pass


PlayoutRefused.__module__ = "playout_client"


def _minutes(hhmm: str) -> int:
    h, m = hhmm.split(":")
    return int(h) * 60 + int(m)


def _slot_seconds(slot: str) -> int:
    a, b = slot.split("-")
    return ((_minutes(b) - _minutes(a)) % 1440) * 60


# -- the scripted model -------------------------------------------------------------------

def policy(request: Any) -> Reply | str:
    msgs = (request.body or {}).get("messages") or []
    system = str(msgs[0].get("content") or "")
    user = str(msgs[-1].get("content") or "")
    if system.startswith("Pick tracks"):
        lists = json.loads(user.split("CANDIDATES: ")[1])
        picks = [h["id"] for hits in lists for h in hits[:3]]
        return json.dumps({"tracks": picks})
    if system.startswith("Plan the station IDs"):
        brief = json.loads(user.split("BRIEF: ")[1])
        interval = f"{brief['id_every_min']}m"
        if kit.active("po-d"):
            interval = "60m"
        return Reply(tool_calls=(tool_call("station_id_inserts", {"slot": brief["slot"], "interval": interval}),))
    if system.startswith("Write a presenter link"):
        return "That was " + user.split("AFTER: ")[1].split("\n")[0] + ". Stay with us through the night."
    raise ValueError("unexpected prompt")


# -- spans --------------------------------------------------------------------------------

_CTX: dict = {}


@contextmanager
def span(name: str, kind: str, inp: Any):
    tracer = _CTX["tracer"]
    with tracer.start_as_current_span(name) as s:
        s.set_attribute("openinference.span.kind", kind)
        s.set_attribute("input.value", json.dumps(inp))
        s.set_attribute("input.mime_type", "application/json")
        box: dict = {}
        yield box
        if "out" in box:
            s.set_attribute("output.value", json.dumps(box["out"]))
            s.set_attribute("output.mime_type", "application/json")


def parse_brief(text: str) -> dict:
    with span("parse_brief", "CHAIN", {"text": text}) as box:
        slot = text.split("Slot ")[1].split(".")[0]
        if kit.active("po-a"):
            start, end = slot.split("-")
            slot = f"{start}-{end.split(':')[0]}:00"
        box["out"] = {
            "show": text.split("Show: ")[1].split(".")[0],
            "slot": slot,
            "slot_seconds": _slot_seconds(slot),
            "genres": [g.strip() for g in text.split("Genres: ")[1].split(".")[0].split("+")],
            "local_quota": int(text.split("Local quota ")[1].split("%")[0]) / 100,
            "id_every_min": int(text.split("Station ID every ")[1].split(" min")[0]),
        }
        return box["out"]


def search_library(genre: str) -> list:
    with span("search_library", "RETRIEVER", {"query": genre}) as box:
        hits = [dict(t) for t in LIBRARY[genre]]
        if kit.active("po-b") and genre == "jazz":
            hits.insert(0, {"id": "TRK-88412", "title": "Harbour Lights", "artist": "Della Marsh", "local": True, "duration": "4:44"})
        box["out"] = hits
        return hits


def track_metadata(track_id: str) -> dict:
    with span("track_metadata", "TOOL", {"track_id": track_id}) as box:
        t = TRACKS.get(track_id) or {"id": track_id, "title": "Harbour Lights", "artist": "Della Marsh", "local": True, "duration": "4:44"}
        m, s = t["duration"].split(":")
        seconds = int(m) * 60 + int(s)
        if kit.active("po-e") and track_id == "TRK-30442":
            seconds = int(m) * 60000 + int(s) * 1000 - 7000
        box["out"] = {"id": track_id, "title": t["title"], "artist": t["artist"], "local": t["local"], "duration_s": seconds}
        return box["out"]


def rights_check(track_id: str) -> dict:
    with span("rights_check", "TOOL", {"track_id": track_id}) as box:
        try:
            if kit.active("po-c") and track_id == "TRK-21133":
                raise TimeoutError("licensing API did not answer in 5 s")
            out = {"id": track_id, "ppl": "cleared", "prs": "cleared", "basis": "blanket licence 2026"}
        except TimeoutError:
            out = {"id": track_id, "ppl": "assumed", "prs": "assumed", "basis": "blanket licence 2026"}
        box["out"] = out
        return out


def station_id_inserts(slot: str, interval: str) -> dict:
    with span("station_id_inserts", "TOOL", {"slot": slot, "interval": interval}) as box:
        every = int(interval.rstrip("m"))
        start = _minutes(slot.split("-")[0])
        n = _slot_seconds(slot) // (every * 60)
        box["out"] = {"inserts": [f"{((start + k * every) // 60) % 24:02d}:{(start + k * every) % 60:02d} SID-NIGHT-03" for k in range(n)], "every_min": every}
        return box["out"]


def compute_running_order(brief: dict, meta: list) -> dict:
    with span("compute_running_order", "CHAIN", {"slot": brief["slot"], "tracks": [m["id"] for m in meta]}) as box:
        t = 0
        rows = []
        for m in meta:
            rows.append({"at_s": t, "id": m["id"], "dur_s": m["duration_s"]})
            t += m["duration_s"] + 20
        bed = max(brief["slot_seconds"] - t, 0)
        rows.append({"at_s": t, "id": "BED-OVERNIGHT", "dur_s": bed})
        box["out"] = {"rows": rows, "music_s": t, "total_s": t + bed}
        return box["out"]


def validate_log(brief: dict, order: dict, meta: list, ids: dict) -> dict:
    with span("validate_log", "CHAIN", {"slot": brief["slot"]}) as box:
        if order["total_s"] > brief["slot_seconds"]:
            raise PlayoutRefused(f"log check: running order is {order['total_s']} s, slot {brief['slot']} holds {brief['slot_seconds']} s")
        local = sum(m["local"] for m in meta) / len(meta)
        if local < brief["local_quota"]:
            raise PlayoutRefused(f"log check: local share {local:.0%} under the {brief['local_quota']:.0%} quota")
        if ids["every_min"] > 30:
            raise PlayoutRefused(f"Ofcom log rule: station ID gap of {ids['every_min']} min exceeds 30 min")
        box["out"] = {"ok": True, "local_share": round(local, 2)}
        return box["out"]


def submit_to_playout(key: str, brief: dict, order: dict, rights: list) -> dict:
    with span("submit_to_playout", "TOOL", {"show": brief["show"], "slot": brief["slot"], "rows": len(order["rows"])}) as box:
        grid = GRID[key]
        if brief["slot"] != grid:
            raise PlayoutRefused(f"playout server: log for {brief['show']} ends {brief['slot'].split('-')[1]}, grid slot is {grid}; {_slot_seconds(grid) - order['total_s']} s unfilled")
        for r in rights:
            if r["ppl"] != "cleared":
                raise PlayoutRefused(f"playout server: {r['id']} has no PPL clearance on file")
        for row in order["rows"]:
            if row["id"] in PLAYED_24H:
                raise PlayoutRefused(f"playout server: {row['id']} aired in the last 24 h (repeat rule)")
        box["out"] = {"accepted": True, "log_id": "LOG-" + grid.replace(":", "").replace("-", "")}
        return box["out"]


def setup():
    server = FakeModelServer(policy).start()
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": AGENT}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    _CTX.update(server=server, exporter=exporter, provider=provider, instrumentor=instrumentor,
                tracer=provider.get_tracer("night-playout"),
                client=OpenAI(base_url=server.base_url, api_key="sk-local", max_retries=0))
    return server


def teardown(server) -> None:
    _CTX["instrumentor"].uninstrument()
    server.stop()
    _CTX.clear()


def chat(system: str, user: str, tools: list | None = None):
    kwargs: dict = {"tools": tools} if tools else {}
    return _CTX["client"].chat.completions.create(model="gpt-4o-mini", messages=[{"role": "system", "content": system}, {"role": "user", "content": user}], **kwargs)


ID_TOOL = [{"type": "function", "function": {"name": "station_id_inserts", "description": "Schedule station ID inserts.",
            "parameters": {"type": "object", "properties": {"slot": {"type": "string"}, "interval": {"type": "string"}}, "required": ["slot", "interval"]}}}]


def record(key: str, path) -> None:
    _CTX["exporter"].clear()
    text = BRIEFS[key]
    try:
        with span(AGENT, "AGENT", {"brief": text}) as top:
            brief = parse_brief(text)
            hits = [search_library(g) for g in brief["genres"]]
            reply = chat("Pick tracks for the overnight show, three per genre, in order.", "CANDIDATES: " + json.dumps(hits))
            picks = json.loads(reply.choices[0].message.content)["tracks"]
            meta = [track_metadata(t) for t in picks]
            rights = [rights_check(t) for t in picks]
            order = compute_running_order(brief, meta)
            plan = chat("Plan the station IDs for the slot.", "BRIEF: " + json.dumps(brief), tools=ID_TOOL)
            args = json.loads(plan.choices[0].message.tool_calls[0].function.arguments)
            ids = station_id_inserts(**args)
            for m in meta[2::3]:
                chat("Write a presenter link.", f"AFTER: {m['title']} by {m['artist']}\nSHOW: {brief['show']}")
            validate_log(brief, order, meta, ids)
            result = submit_to_playout(key, brief, order, rights)
            top["out"] = {"log_id": result["log_id"], "tracks": len(picks)}
    except PlayoutRefused:
        pass
    _CTX["provider"].force_flush()
    doc = MessageToDict(encode_spans(_CTX["exporter"].get_finished_spans()))
    with open(path, "w") as f:
        json.dump(doc, f)
