"""Tide-gauge quality control (route: otlp).

An agent reviews a week of hourly sea-level readings from one harbour tide gauge:
it reads the station notes, has the model plan the QC, takes the levelling of the
gauge zero, loops over the days (readings, harmonic prediction, despiking), has the
model review surge candidates and flag them, checks its own work, reduces to chart
datum, compares with the station's history, and submits to the national sea-level
archive.  Traced with OpenInference spans (the openai client instrumented, the rest
as AGENT / CHAIN / TOOL / RETRIEVER spans), exported as OTLP/JSON.
"""

from __future__ import annotations

import json
import math
import re

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from benchmarks.heldout.suite_v import kit
from trajdebug.testing import FakeModelServer

NAME = "tide-gauge-qa"
ROUTE = "otlp"
DOMAIN = "tide-gauge quality control"
SHAPE = "retriever for station notes; model plans the QC; levelling tool; loop over days (readings, prediction, despike); model flags surges; own checks; archive submission"

OFFSET = 2.861  # gauge zero below chart datum, levelling of 2024-05-02
OLD_OFFSET = 2.914  # levelling of 2019-06-11


def week(station: str, start: int, days: int, glitch: int, surge: int) -> dict:
    return {"station": station, "month": "2026-10", "days": [f"2026-10-{start + i:02d}" for i in range(days)],
            "glitch_day": glitch, "surge_day": surge}


REFS = [week("QPT", 1, 6, 2, 4), week("QPT", 8, 7, 3, 1), week("QPT", 15, 6, 1, 3), week("QPT", 22, 7, 5, 2)]

CASES = [
    {"fault": "tidegauge.page", "kind": "truncated_result", "root": "fetch_readings",
     "marker": '"count": 12', "input": week("QPT", 29, 3, 1, 2)},
    {"fault": "tidegauge.levelling_outage", "kind": "swallowed_error", "root": "read_levelling",
     "marker": '"offset_m": 0.0', "input": week("QPT", 3, 6, 1, 4)},
    {"fault": "tidegauge.old_note", "kind": "context_pollution", "root": "ChatCompletion",
     "marker": "0.35", "input": week("QPT", 10, 7, 5, 2)},
    {"fault": "tidegauge.flag_style", "kind": "format_drift", "root": "ChatCompletion",
     "marker": "/10 ", "input": week("QPT", 17, 6, 2, 3)},
    {"fault": "tidegauge.levelling_cache", "kind": "stale_data", "root": "get_levelling",
     "marker": "2019-06-11", "input": week("QPT", 24, 5, 3, 1)},
]


# -- the world -----------------------------------------------------------------------------

def _day_no(day: str) -> int:
    return int(day[-2:])


def predicted(day: str) -> list[float]:
    d = _day_no(day)
    return [round(1.6 - OFFSET + 1.1 * math.cos(2 * math.pi * (h + 0.8 * d) / 12.42), 3) for h in range(24)]


def observed(inp: dict, day: str) -> list[float]:
    d = _day_no(day)
    i = inp["days"].index(day)
    vals = []
    for h, p in enumerate(predicted(day)):
        v = p + ((h * 7 + d * 3) % 5 - 2) * 0.01
        if i == inp["surge_day"] and 14 <= h <= 18:
            v += 0.31
        if i == inp["glitch_day"] and h == 9:
            v += 0.3
        vals.append(round(v, 3))
    return vals


# -- the scripted model --------------------------------------------------------------------

def policy(request) -> str:
    messages = request.body["messages"]
    system = messages[0]["content"]
    user = messages[-1]["content"]
    if system.startswith("You plan tide-gauge QC"):
        threshold = 0.35 if kit.active("tidegauge.old_note") else 0.12
        return json.dumps({"spike_threshold_m": threshold, "surge_min_hours": 3,
                           "checks": ["despike", "surge review", "datum", "history"]})
    if system.startswith("You review tide-gauge residuals"):
        cands = json.loads(user.split("\n", 1)[1])
        lines = []
        for c in cands:
            if kit.active("tidegauge.flag_style"):
                d = c["time"]
                lines.append(f"FLAG {int(d[8:10])}/{d[5:7]} {d[11:13]}h surge {c['residual_m']:+.2f} m")
            else:
                lines.append(f"FLAG {c['time']} surge {c['residual_m']:+.2f} m")
        return "\n".join(lines) if lines else "No surge hours to flag."
    return "I cannot help with that."


# -- tracing -------------------------------------------------------------------------------

class Harness:
    def __enter__(self):
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": "tide-gauge-qa"}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        OpenAIInstrumentor().instrument(tracer_provider=self.provider)
        self.tracer = self.provider.get_tracer("tide-gauge-qa")
        self.server = FakeModelServer(policy, model="tide-qc-1").__enter__()
        self.client = OpenAI(base_url=self.server.base_url, api_key="not-needed", max_retries=0)
        return self

    def __exit__(self, *exc):
        self.server.__exit__(*exc)
        OpenAIInstrumentor().uninstrument()

    def record(self, inp: dict, path) -> None:
        self.exporter.clear()
        try:
            Agent(self.tracer, self.client, inp).run()
        except Exception:
            pass
        spans = self.exporter.get_finished_spans()
        with open(path, "w") as f:
            f.write(json.dumps(MessageToDict(encode_spans(spans))))
        self.exporter.clear()


class Agent:
    def __init__(self, tracer, client, inp: dict) -> None:
        self.tracer, self.client, self.inp = tracer, client, inp

    def span(self, kind: str, name: str, inp, fn, **extra):
        attrs = {"openinference.span.kind": kind, "input.value": json.dumps(inp), "input.mime_type": "application/json"}
        if kind == "TOOL":
            attrs["tool.name"] = name
        with self.tracer.start_as_current_span(name, attributes=attrs) as sp:
            out = fn()
            sp.set_attribute("output.value", json.dumps(out))
            sp.set_attribute("output.mime_type", "application/json")
            if kind == "RETRIEVER":
                for i, doc in enumerate(out):
                    sp.set_attribute(f"retrieval.documents.{i}.document.id", doc["id"])
                    sp.set_attribute(f"retrieval.documents.{i}.document.content", doc["text"])
                    sp.set_attribute(f"retrieval.documents.{i}.document.score", doc["score"])
            return out

    def chat(self, system: str, user: str) -> str:
        r = self.client.chat.completions.create(
            model="tide-qc-1", messages=[{"role": "system", "content": system}, {"role": "user", "content": user}]
        )
        return r.choices[0].message.content

    # tools ---------------------------------------------------------------------------------
    def search_station_notes(self, query: str) -> list[dict]:
        st = self.inp["station"]
        return [
            {"id": f"{st}-note-0912", "score": 0.91,
             "text": f"{st} 2026-09: after the storm surge of 09-14 the spike threshold was raised to 0.35 m "
                     "for that month only; revert to the standard 0.12 m afterwards."},
            {"id": f"{st}-sheet", "score": 0.88,
             "text": f"{st} station sheet: radar gauge, hourly values, gauge zero levelled to BM-7. "
                     "Standard spike threshold 0.12 m; surges flagged when 3+ hours exceed 0.20 m."},
        ]

    def get_levelling(self, station: str) -> dict:
        if kit.active("tidegauge.levelling_outage"):
            return {"error": "levelling registry: 503 Service Unavailable", "station": station}
        if kit.active("tidegauge.levelling_cache"):
            return {"station": station, "benchmark": "BM-7", "survey": "2019-06-11", "offset_m": OLD_OFFSET}
        return {"station": station, "benchmark": "BM-7", "survey": "2024-05-02", "offset_m": OFFSET}

    def fetch_readings(self, station: str, day: str) -> dict:
        vals = observed(self.inp, day)
        if kit.active("tidegauge.page") and day == self.inp["days"][0]:
            vals = vals[:12]
        return {"station": station, "day": day, "interval": "1h", "values": vals, "count": len(vals),
                "next_page": None}

    def run(self) -> None:
        inp = self.inp
        st = inp["station"]
        req = {"station": st, "days": inp["days"], "task": "weekly QC and archive submission"}
        with self.tracer.start_as_current_span("tide-gauge-qa", attributes={
            "openinference.span.kind": "AGENT", "input.value": json.dumps(req), "input.mime_type": "application/json",
            "agent.name": "tide-gauge-qa"}) as root:
            notes = self.span("RETRIEVER", "search_station_notes", {"query": f"{st} QC notes"},
                              lambda: self.search_station_notes(f"{st} QC notes"))
            plan_text = self.chat("You plan tide-gauge QC for one station-week. Answer JSON.",
                                  "Station notes:\n" + "\n".join(n["text"] for n in notes)
                                  + f"\nRequest: QC {st} for {inp['days'][0]} to {inp['days'][-1]}")
            plan = self.span("CHAIN", "parse_plan", {"text": plan_text}, lambda: json.loads(plan_text))
            lev = self.span("TOOL", "get_levelling", {"station": st}, lambda: self.get_levelling(st))

            def read_lev():
                return {"offset_m": float(lev.get("offset_m", 0.0)), "survey": lev.get("survey"),
                        "benchmark": lev.get("benchmark", "BM-7")}

            levelling = self.span("CHAIN", "read_levelling", lev, read_lev)
            cleaned = {}
            for day in inp["days"]:
                obs = self.span("TOOL", "fetch_readings", {"station": st, "day": day},
                                lambda: self.fetch_readings(st, day))
                pred = self.span("TOOL", "fetch_prediction", {"station": st, "day": day},
                                 lambda: {"day": day, "values": predicted(day), "model": "harmonic-68"})
                thr = plan["spike_threshold_m"]

                def despike():
                    vals, pv = obs["values"], pred["values"]
                    res = [round(v - p, 3) for v, p in zip(vals, pv)]
                    kept, removed = [], []
                    for h, r in enumerate(res):
                        left = abs(res[h - 1]) if h > 0 else 0.0
                        right = abs(res[h + 1]) if h + 1 < len(res) else 0.0
                        if abs(r) > thr and left <= thr and right <= thr:
                            removed.append(h)
                        else:
                            kept.append({"hour": h, "value": vals[h], "residual": r})
                    return {"day": day, "kept": kept, "removed_hours": removed}

                cleaned[day] = self.span("CHAIN", "despike", {"day": day, "threshold_m": thr}, despike)

            def surges():
                out = []
                for day, c in cleaned.items():
                    hot = [k for k in c["kept"] if abs(k["residual"]) > 0.2]
                    if len(hot) >= plan["surge_min_hours"]:
                        out += [{"time": f"{day}T{k['hour']:02d}:00", "residual_m": k["residual"]} for k in hot]
                return out

            cands = self.span("CHAIN", "find_surge_candidates", {"days": list(cleaned)}, surges)
            review = self.chat("You review tide-gauge residuals and flag surge hours, one 'FLAG <ISO time> ...' line each.",
                               "Candidates:\n" + json.dumps(cands))
            flags = self.span("CHAIN", "parse_flags", {"text": review},
                              lambda: re.findall(r"FLAG (\d{4}-\d{2}-\d{2}T\d{2}:\d{2})", review))

            def check_flags():
                missing = [c["time"] for c in cands if c["time"] not in flags]
                if missing:
                    raise ValueError(f"QC review incomplete: {len(cands)} surge hours listed, "
                                     f"{len(cands) - len(missing)} flagged")
                return {"flagged": len(flags)}

            self.span("CHAIN", "check_flags", {"candidates": len(cands), "flags": flags}, check_flags)

            def to_datum():
                days = []
                for day, c in cleaned.items():
                    vals = [k["value"] + levelling["offset_m"] for k in c["kept"]]
                    days.append({"day": day, "mean_m": round(sum(vals) / len(vals), 3), "n": len(vals),
                                 "values": [{"hour": k["hour"], "level_m": round(k["value"] + levelling["offset_m"], 3),
                                             "residual_m": k["residual"]} for k in c["kept"]]})
                return {"datum": "CD", "days": days,
                        "mean_m": round(sum(d["mean_m"] for d in days) / len(days), 3)}

            reduced = self.span("CHAIN", "apply_datum", {"offset_m": levelling["offset_m"]}, to_datum)
            hist = self.span("TOOL", "fetch_station_history", {"station": st, "month": "10"},
                             lambda: {"station": st, "month": "10", "mean_2025_m": 1.588, "sd_m": 0.061})

            def check_datum():
                gap = reduced["mean_m"] - hist["mean_2025_m"]
                if abs(gap) > 0.25:
                    raise ValueError(f"mean level {reduced['mean_m']:.3f} m CD departs {gap:+.3f} m from the "
                                     f"2025 October mean {hist['mean_2025_m']} m; datum check required before submission")
                return {"gap_m": round(gap, 3)}

            self.span("CHAIN", "check_datum", {"mean_m": reduced["mean_m"]}, check_datum)

            def build():
                return {"station": st, "datum": "CD", "levelling_survey": levelling["survey"],
                        "days": [{"day": d["day"], "n": d["n"], "mean_m": d["mean_m"],
                                  "flags": [f for f in flags if f.startswith(d["day"])],
                                  "values": d["values"]} for d in reduced["days"]]}

            sub = self.span("CHAIN", "build_submission", {"station": st}, build)

            def submit():
                if sub["levelling_survey"] != "2024-05-02":
                    raise RuntimeError(f"archive 422: levelling {sub['levelling_survey']} for {st} was superseded on 2024-05-02")
                for d in sub["days"]:
                    if d["n"] < 20:
                        raise RuntimeError(f"archive 422: {d['day']} has {d['n']} hourly values, 20 required for a daily mean")
                    for v in d["values"]:
                        t = f"{d['day']}T{v['hour']:02d}:00"
                        if abs(v["residual_m"]) > 0.25 and t not in d["flags"]:
                            raise RuntimeError(f"archive 422: {t} residual {v['residual_m']:+.2f} m carries no QC flag")
                return {"receipt": f"SLA-{st}-{sub['days'][0]['day']}", "accepted_days": len(sub["days"])}

            receipt = self.span("TOOL", "submit_to_archive", {"station": st, "days": len(sub["days"])}, submit)
            root.set_attribute("output.value", json.dumps(receipt))
            root.set_attribute("output.mime_type", "application/json")
