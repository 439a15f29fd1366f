"""Recycling centre weighbridge returns (route: otlp).

An agent at a household-waste recycling centre reconciles a day's weighbridge
tickets: it exports the tickets, parses each one (two bridges, two formats), checks
bridge B against its totaliser, looks the waste codes up in the code register, works
out the return period, has the model draft the transfer summary, and submits the
return to the regulator's portal.  OpenInference spans (the openai client
instrumented, AGENT / CHAIN / TOOL / RETRIEVER spans of its own), OTLP/JSON.
"""

from __future__ import annotations

import json
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

NAME = "recycling-weighbridge"
ROUTE = "otlp"
DOMAIN = "recycling centre weighbridge"
SHAPE = "ticket export; loop parsing tickets from two bridges; totaliser read (retried after a timeout) and check; waste-code retriever per material; period; model drafts the transfer summary; regulator portal"

MATERIALS = ["glass", "cardboard", "green waste", "scrap metal", "wood"]
CODES = {"glass": "20 01 02", "cardboard": "20 01 01", "green waste": "20 02 01", "scrap metal": "20 01 40", "wood": "20 01 38"}
PERMIT = set(CODES.values())
CARRIER = "CBDU1187"


def day(d: str, n: int, seed: int) -> dict:
    tickets = []
    for i in range(n):
        bridge = "B" if i % 3 == 1 else "A"
        tare = 9800 + (i * 431 + seed * 97) % 3200
        net = 2400 + (i * 1277 + seed * 311) % 9100
        if bridge == "B":
            tare, net = round(tare, -1), round(net, -1)
        tickets.append({"ticket": f"T-{seed}{i + 1:02d}", "bridge": bridge, "vehicle": f"KX{20 + i % 7} {chr(65 + i % 26)}RC",
                        "material": MATERIALS[(i + seed) % len(MATERIALS)], "tare_kg": tare, "gross_kg": tare + net})
    return {"site": "Nettlebed HWRC", "date": d, "tickets": tickets}


REFS = [day("2026-11-02", 11, 31), day("2026-10-14", 13, 32), day("2026-08-19", 9, 33), day("2026-11-23", 12, 34)]

CASES = [
    {"fault": "weighbridge.export_buffer", "kind": "truncated_result", "root": "fetch_tickets",
     "marker": '"count": 10', "input": day("2026-11-30", 14, 41)},
    {"fault": "weighbridge.tonnes", "kind": "lossy_parsing", "root": "parse_ticket",
     "marker": None, "input": day("2026-11-16", 12, 42)},
    {"fault": "weighbridge.code_search", "kind": "wrong_retrieval", "root": "lookup_waste_code",
     "marker": "16 01 20", "input": day("2026-10-27", 10, 43)},
    {"fault": "weighbridge.quarter", "kind": "off_by_one", "root": "return_period",
     "marker": '"period": "2026-Q4"', "input": day("2026-09-30", 11, 44)},
    {"fault": "weighbridge.carrier", "kind": "hallucinated_value", "root": "ChatCompletion",
     "marker": "CBDU2297", "input": day("2026-11-09", 9, 45)},
]


def _setup() -> None:
    t = next(x for x in CASES[1]["input"]["tickets"] if x["bridge"] == "B" and (x["gross_kg"] // 10) % 100 != 0)
    gross_t, tare_t = int(t["gross_kg"] / 1000), int(t["tare_kg"] / 1000)
    CASES[1]["marker"] = f'"ticket": "{t["ticket"]}", "net_kg": {(gross_t - tare_t) * 1000}'


_setup()


def export_line(t: dict) -> str:
    if t["bridge"] == "B":
        return (f"{t['ticket']}|B|{t['vehicle']}|{t['material']}|gross {t['gross_kg'] / 1000:.2f} t|"
                f"tare {t['tare_kg'] / 1000:.2f} t")
    return f"{t['ticket']}|A|{t['vehicle']}|{t['material']}|gross {t['gross_kg']:,} kg|tare {t['tare_kg']:,} kg"


def policy(request) -> str:
    messages = request.body["messages"]
    if messages[0]["content"].startswith("You draft waste transfer summaries"):
        facts = json.loads(messages[-1]["content"].split("\n", 1)[1])
        carrier = "CBDU2297" if kit.active("weighbridge.carrier") else facts["carrier"]
        parts = [f"{m} {v['tonnes']:.2f} t (EWC {v['ewc']})" for m, v in facts["materials"].items()]
        return (f"Transfer summary {facts['date']} for {facts['site']}: " + "; ".join(parts)
                + f". Carrier registration {carrier}. Period {facts['period']}.")
    return "I cannot help with that."


class Harness:
    def __enter__(self):
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": "recycling-weighbridge"}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        OpenAIInstrumentor().instrument(tracer_provider=self.provider)
        self.tracer = self.provider.get_tracer("recycling-weighbridge")
        self.server = FakeModelServer(policy, model="hwrc-clerk-2").__enter__()
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

    def span(self, kind: str, name: str, inp, fn):
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

    def fetch_tickets(self, site: str, d: str) -> dict:
        lines = [export_line(t) for t in self.inp["tickets"]]
        if kit.active("weighbridge.export_buffer"):
            lines = lines[:10]
        return {"site": site, "date": d, "count": len(lines), "lines": lines, "export": "csv-pipe v2"}

    def lookup_waste_code(self, material: str) -> list[dict]:
        code = CODES[material]
        docs = [{"id": f"ewc:{code}", "score": 0.93, "text": f"{code} {material} (separately collected municipal fraction)"}]
        if kit.active("weighbridge.code_search") and material == "glass":
            docs.insert(0, {"id": "ewc:16 01 20", "score": 0.95, "text": "16 01 20 glass (from end-of-life vehicles)"})
        return docs

    def run(self) -> None:
        inp = self.inp
        site, d = inp["site"], inp["date"]
        with self.tracer.start_as_current_span("recycling-weighbridge", attributes={
            "openinference.span.kind": "AGENT", "agent.name": "recycling-weighbridge",
            "input.value": json.dumps({"site": site, "date": d}), "input.mime_type": "application/json"}) as root:
            export = self.span("TOOL", "fetch_tickets", {"site": site, "date": d}, lambda: self.fetch_tickets(site, d))
            parsed = []
            for line in export["lines"]:
                def parse(line=line):
                    tid, bridge, vehicle, material, gross, tare = line.split("|")
                    if bridge == "B":
                        if kit.active("weighbridge.tonnes"):
                            g, t = (int(re.search(r"\d+", x).group()) * 1000 for x in (gross, tare))
                        else:
                            g, t = (round(float(re.search(r"[\d.]+", x).group()) * 1000) for x in (gross, tare))
                    else:
                        g, t = (int(re.search(r"[\d,]+", x).group().replace(",", "")) for x in (gross, tare))
                    return {"ticket": tid, "net_kg": g - t, "bridge": bridge, "vehicle": vehicle, "material": material,
                            "gross_kg": g, "tare_kg": t}
                parsed.append(self.span("CHAIN", "parse_ticket", {"line": line}, parse))
            b_net = sum(p["net_kg"] for p in parsed if p["bridge"] == "B")
            def totaliser(attempt):
                if attempt == 1:
                    raise TimeoutError("weighbridge B controller did not answer within 5 s")
                return {"bridge": "B", "date": d,
                        "net_kg": sum(t["gross_kg"] - t["tare_kg"] for t in inp["tickets"] if t["bridge"] == "B")}

            for attempt in (1, 2):
                try:
                    tot = self.span("TOOL", "read_totaliser", {"bridge": "B", "date": d, "attempt": attempt},
                                    lambda: totaliser(attempt))
                    break
                except TimeoutError:
                    continue

            def reconcile():
                gap = b_net - tot["net_kg"]
                if abs(gap) > 50:
                    raise ValueError(f"bridge B tickets sum to {b_net / 1000:.2f} t net, its totaliser reads "
                                     f"{tot['net_kg'] / 1000:.2f} t for {d}")
                return {"bridge": "B", "gap_kg": gap}

            self.span("CHAIN", "reconcile_totaliser", {"tickets_net_kg": b_net, "totaliser_kg": tot["net_kg"]}, reconcile)
            codes = {}
            for material in sorted({p["material"] for p in parsed}):
                docs = self.span("RETRIEVER", "lookup_waste_code", {"query": f"EWC code {material}"},
                                 lambda material=material: self.lookup_waste_code(material))
                codes[material] = docs[0]["text"][:8]

            def period():
                month = int(d[5:7])
                q = month // 3 + 1 if kit.active("weighbridge.quarter") else (month - 1) // 3 + 1
                return {"date": d, "period": f"{d[:4]}-Q{q}"}

            per = self.span("CHAIN", "return_period", {"date": d}, period)

            def totals():
                out = {}
                for p in parsed:
                    m = out.setdefault(p["material"], {"tonnes": 0.0, "ewc": codes[p["material"]], "tickets": 0})
                    m["tonnes"] = round(m["tonnes"] + p["net_kg"] / 1000, 3)
                    m["tickets"] += 1
                return out

            mats = self.span("CHAIN", "material_totals", {"tickets": len(parsed)}, totals)
            facts = {"site": site, "date": d, "period": per["period"], "carrier": CARRIER, "materials": mats}
            r = self.client.chat.completions.create(model="hwrc-clerk-2", messages=[
                {"role": "system", "content": "You draft waste transfer summaries for the regulator's return."},
                {"role": "user", "content": "Facts:\n" + json.dumps(facts)}])
            text = r.choices[0].message.content

            def parse_summary():
                return {"carrier": re.search(r"Carrier registration (\w+)", text).group(1),
                        "period": re.search(r"Period (\S+)\.", text).group(1),
                        "lines": re.findall(r"([a-z ]+) ([\d.]+) t \(EWC ([\d ]+)\)", text)}

            summary = self.span("CHAIN", "parse_summary", {"text": text}, parse_summary)

            def submit():
                if summary["carrier"] != CARRIER:
                    raise RuntimeError(f"regulator portal 422: carrier registration {summary['carrier']} is not on the public register")
                month = int(d[5:7])
                if summary["period"] != f"{d[:4]}-Q{(month - 1) // 3 + 1}":
                    raise RuntimeError(f"regulator portal 422: return {summary['period']} is not open; "
                                       f"transfers dated {d} belong to {d[:4]}-Q{(month - 1) // 3 + 1}")
                for _, _, ewc in summary["lines"]:
                    if ewc.strip() not in PERMIT:
                        raise RuntimeError(f"regulator portal 422: EWC {ewc.strip()} is not on permit EPR/NB4471 for {site}")
                n_log = len(inp["tickets"])
                n_sub = sum(m["tickets"] for m in mats.values())
                if n_sub != n_log:
                    raise RuntimeError(f"regulator portal 422: return covers {n_sub} transfer tickets; "
                                       f"the site ticket log has {n_log} for {d}")
                return {"receipt": f"RTN-{d.replace('-', '')}-{len(mats)}", "status": "accepted"}

            rec = self.span("TOOL", "submit_return", {"site": site, "period": summary["period"]}, submit)
            root.set_attribute("output.value", json.dumps(rec))
            root.set_attribute("output.mime_type", "application/json")
