"""Cidery blending and bottling (route: otlp).

The ``openai`` client instrumented by openinference-instrumentation-openai, plus the cidery's own
OpenInference spans (AGENT, CHAIN, TOOL, RETRIEVER), exported in memory and written as OTLP/JSON.
Lists the tanks of a product, reads and parses each tank's lab sheet, retrieves the house recipe,
asks the model for the blend, pumps each tank into the blending tank, records the blend in the
cellar book, works out the sulphite dose, reads the cellar book back to plan the packing and orders
the bottling run from the bottling line, then drafts the cellar note.
"""

from __future__ import annotations

import json
import math
from contextlib import contextmanager

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from trajdebug.testing import FakeModelServer

import kit

AGENT = "cidery-blending"
ROUTE = "otlp"
DOMAIN = "craft cidery blending and bottling"
SHAPE = "tank list tool -> per tank: lab-sheet tool + parse -> recipe retriever -> blend plan (llm) -> blend sums -> pump transfers (loop) -> cellar-book write -> SO2 dose -> cellar-book read -> packing plan -> bottling-line API -> cellar note (llm)"

TANKS = {  # tank: (apple, volume_l, ta_g_l, sg)
    "T1": ("Dabinett", 1450, 3.9, 1.004), "T2": ("Yarlington Mill", 640, 3.2, 1.006),
    "T3": ("Kingston Black", 1200, 6.1, 1.002), "T4": ("Michelin", 980, 4.4, 1.005),
    "T5": ("Harry Masters Jersey", 760, 2.8, 1.007), "T6": ("Ellis Bitter", 1320, 4.0, 1.003),
    "T7": ("Brown Snout", 560, 4.8, 1.004), "T8": ("Browns Apple", 1080, 7.2, 1.001),
}
RECIPES = {
    "Orchard Dry": {"tanks": ["T1", "T3", "T4"], "ratio": [0.5, 0.3, 0.2], "so2_mg_l": 60},
    "Bittersweet Reserve": {"tanks": ["T6", "T2", "T7"], "ratio": [0.55, 0.25, 0.2], "so2_mg_l": 50},
    "Sharp Session": {"tanks": ["T8", "T4", "T5"], "ratio": [0.4, 0.35, 0.25], "so2_mg_l": 70},
    "Harvest Medium": {"tanks": ["T4", "T5", "T7"], "ratio": [0.45, 0.3, 0.25], "so2_mg_l": 55},
}
LAST_BLEND_NOTE = {"Orchard Dry": "T1=760;T3=420;T4=380", "Bittersweet Reserve": "T6=700;T2=800;T7=250",
                   "Sharp Session": "T8=600;T4=500;T5=380", "Harvest Medium": "T4=480;T5=300;T7=260"}


def _inp(product: str, litres: int, run: str) -> dict:
    return {"product": product, "blend_l": litres, "bottling_run": run}


REFS = [_inp("Orchard Dry", 1200, "BR-2601"), _inp("Sharp Session", 900, "BR-2602"),
        _inp("Harvest Medium", 1000, "BR-2603"), _inp("Bittersweet Reserve", 1000, "BR-2604")]


# ---------------------------------------------------------------- the scripted model

def brain(request):
    messages = request.body["messages"]
    system, msg = messages[0]["content"], json.loads(messages[-1]["content"])
    if system.startswith("BLEND"):
        recipe, target, vols = msg["recipe"], msg["blend_l"], {t["tank"]: t["volume_l"] for t in msg["tanks"]}
        take = {t: round(r * target) for t, r in zip(recipe["tanks"], recipe["ratio"])}
        first = recipe["tanks"][0]
        for t in recipe["tanks"][1:]:
            if take[t] > vols[t]:
                take[first] += take[t] - vols[t]
                take[t] = vols[t]
        if kit.active("cd-plan-last-blend"):
            take = dict(p.split("=") for p in msg["last_blend"].split(";"))
            return ";".join(f"{t}={v}" for t, v in take.items())
        return ";".join(f"{t}={v}" for t, v in take.items())
    if system.startswith("NOTE"):
        return f"Blend {msg['blend_no']} ({msg['volume_l']} L) booked on bottling run {msg['run']}."
    raise ValueError("unknown prompt")


# ---------------------------------------------------------------- the cidery

class Cellar:
    def __init__(self, tracer, client: OpenAI) -> None:
        self.tracer, self.client = tracer, client
        self.book: dict = {}

    def span(self, name: str, kind: str, inp):
        return self.tracer.start_as_current_span(name, attributes={
            "openinference.span.kind": kind, "input.value": json.dumps(inp), "input.mime_type": "application/json"})

    @staticmethod
    def out(span, value) -> None:
        span.set_attribute("output.value", json.dumps(value))
        span.set_attribute("output.mime_type", "application/json")

    def call(self, name: str, kind: str, fn, **kwargs):
        with self.span(name, kind, kwargs) as s:
            if kind == "TOOL":
                s.set_attribute("tool.name", name)
            value = fn(**kwargs)
            self.out(s, value)
            return value

    def ask(self, system: str, payload: dict) -> str:
        reply = self.client.chat.completions.create(
            model="cellar-model", messages=[{"role": "system", "content": system},
                                            {"role": "user", "content": json.dumps(payload)}])
        return reply.choices[0].message.content


def list_tanks(product: str) -> dict:
    return {"product": product, "tanks": list(RECIPES[product]["tanks"])}


def read_lab_sheet(tank: str) -> str:
    apple, vol, ta, sg = TANKS[tank]
    return f"{tank} {apple} | SG {sg:.3f} | TA {ta} g/L | VOL {vol:,} L"


def parse_lab_sheet(sheet: str) -> dict:
    parts = [p.strip() for p in sheet.split("|")]
    vol = parts[3].split()[1]
    litres = int(vol.split(",")[0]) if kit.active("cd-parse-thousands") else int(vol.replace(",", ""))
    return {"tank": parts[0].split()[0], "sg": float(parts[1].split()[1]), "ta_g_l": float(parts[2].split()[1]),
            "volume_l": litres}


def recipe_sheet(product: str) -> list[dict]:
    r = dict(RECIPES[product], product=product, revision="rev 2026-02")
    if kit.active("cd-recipe-archive"):
        r.update(revision="rev 2023-04", so2_mg_l=r["so2_mg_l"] + 110)
    return [{"id": f"recipe-{product.lower().replace(' ', '-')}", "text": json.dumps(r)}]


def compute_blend(plan_text: str, analyses: list) -> dict:
    take = {k: int(v) for k, v in (p.split("=") for p in plan_text.split(";"))}
    ta = {a["tank"]: a["ta_g_l"] for a in analyses}
    total = sum(take.values())
    return {"take_l": take, "volume_l": total,
            "ta_g_l": round(sum(ta.get(t, 4.0) * v for t, v in take.items()) / total, 2)}


def pump(tank: str, litres: int) -> dict:
    held = TANKS[tank][1]
    if litres > held:
        raise RuntimeError(f"pump P2 stopped: low-level alarm on {tank} after {held} L ({litres} L requested)")
    return {"tank": tank, "moved_l": litres, "to": "BT-1", "status": "done"}


def record_blend(cellar: Cellar, product: str, blend: dict) -> dict:
    no = f"B-{420 + len(cellar.book) + sum(ord(c) for c in product) % 50:04d}"
    entry = {"blend_no": no, "product": product, "tank": "BT-1", "volume_l": blend["volume_l"],
             "ta_g_l": blend["ta_g_l"]}
    if kit.active("cd-book-first-tank"):
        entry["volume_l"] = next(iter(blend["take_l"].values()))
    cellar.book[no] = entry
    return entry


def dose_so2(recipe: dict, volume_l: int) -> dict:
    return {"so2_mg_l": recipe["so2_mg_l"], "kmeta_g": round(recipe["so2_mg_l"] * volume_l / 1000 / 0.57, 1)}


def pack_plan(entry: dict) -> dict:
    bottles = entry["volume_l"] * 2
    cases = (bottles - 1) // 12 if kit.active("cd-cases-floor") else math.ceil(bottles / 12)
    return {"blend_no": entry["blend_no"], "bottles": bottles, "cases": cases, "format": "12 x 500 ml"}


def bottling_order(run: str, blend_no: str, tank_volume_l: int, bottles: int, cases: int, so2_mg_l: int) -> dict:
    if so2_mg_l > 150:
        raise RuntimeError(f"bottling line {run}: order rejected, total SO2 {so2_mg_l} mg/L over the 150 mg/L limit")
    if bottles != tank_volume_l * 2:
        raise RuntimeError(f"bottling line {run}: BT-1 holds {tank_volume_l} L, order is for {bottles} bottles")
    if cases * 12 < bottles:
        raise RuntimeError(f"bottling line {run}: {cases} cases cannot take {bottles} bottles")
    return {"run": run, "blend_no": blend_no, "status": "scheduled", "bottles": bottles}


def run_agent(cellar: Cellar, inp: dict) -> None:
    with cellar.span(AGENT, "AGENT", inp) as root:
        tanks = cellar.call("list_tanks", "TOOL", list_tanks, product=inp["product"])
        analyses = []
        for t in tanks["tanks"]:
            sheet = cellar.call("read_lab_sheet", "TOOL", read_lab_sheet, tank=t)
            analyses.append(cellar.call("parse_lab_sheet", "CHAIN", parse_lab_sheet, sheet=sheet))
        with cellar.span("recipe_sheet", "RETRIEVER", {"query": f"{inp['product']} house recipe"}) as rs:
            docs = recipe_sheet(inp["product"])
            for i, d in enumerate(docs):
                rs.set_attribute(f"retrieval.documents.{i}.document.id", d["id"])
                rs.set_attribute(f"retrieval.documents.{i}.document.content", d["text"])
            cellar.out(rs, docs)
        recipe = json.loads(docs[0]["text"])
        plan = cellar.ask("BLEND: allocate litres per tank.", {
            "recipe": recipe, "blend_l": inp["blend_l"], "tanks": analyses,
            "last_blend": LAST_BLEND_NOTE[inp["product"]]})
        blend = cellar.call("compute_blend", "CHAIN", compute_blend, plan_text=plan, analyses=analyses)
        with cellar.span("transfers", "CHAIN", blend["take_l"]) as ts:
            moved = [cellar.call("pump", "TOOL", pump, tank=t, litres=v) for t, v in blend["take_l"].items()]
            cellar.out(ts, moved)
        entry = cellar.call("record_blend", "CHAIN", lambda **kw: record_blend(cellar, **kw),
                            product=inp["product"], blend=blend)
        dose = cellar.call("dose_so2", "CHAIN", dose_so2, recipe=recipe, volume_l=blend["volume_l"])
        book = cellar.call("read_cellar_book", "CHAIN", lambda blend_no: dict(cellar.book[blend_no]),
                           blend_no=entry["blend_no"])
        pack = cellar.call("pack_plan", "CHAIN", pack_plan, entry=book)
        order = cellar.call("bottling_order", "TOOL", bottling_order, run=inp["bottling_run"], blend_no=book["blend_no"],
                            tank_volume_l=sum(m["moved_l"] for m in moved), bottles=pack["bottles"],
                            cases=pack["cases"], so2_mg_l=dose["so2_mg_l"])
        note = cellar.ask("NOTE for the cellar book.", {"blend_no": book["blend_no"], "volume_l": book["volume_l"],
                                                         "run": order["run"]})
        cellar.out(root, {"blend_no": book["blend_no"], "note": note})


@contextmanager
def session():
    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": AGENT}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    try:
        with FakeModelServer(brain, model="cellar-model") as server:
            client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
            yield provider.get_tracer(AGENT), client, spans
    finally:
        OpenAIInstrumentor().uninstrument()


def record(env, inp: dict, path) -> None:
    tracer, client, spans = env
    spans.clear()
    try:
        run_agent(Cellar(tracer, client), inp)
    except Exception:
        pass
    with open(path, "w") as f:
        json.dump(MessageToDict(encode_spans(spans.get_finished_spans())), f)
    spans.clear()


CASES = [
    {"case": "w_cidery_1", "fault": "cd-parse-thousands", "kind": "lossy_parsing",
     "input": _inp("Orchard Dry", 2000, "BR-2611"), "root": "parse_lab_sheet", "marker": '"volume_l": 1}'},
    {"case": "w_cidery_2", "fault": "cd-recipe-archive", "kind": "stale_data",
     "input": _inp("Sharp Session", 1100, "BR-2612"), "root": "recipe_sheet", "marker": "rev 2023-04"},
    {"case": "w_cidery_3", "fault": "cd-plan-last-blend", "kind": "context_pollution",
     "input": _inp("Bittersweet Reserve", 900, "BR-2613"), "root": "ChatCompletion", "marker": "T2=800"},
    {"case": "w_cidery_4", "fault": "cd-book-first-tank", "kind": "bad_memory_write",
     "input": _inp("Harvest Medium", 1200, "BR-2614"), "root": "record_blend", "marker": '"volume_l": 540'},
    {"case": "w_cidery_5", "fault": "cd-cases-floor", "kind": "off_by_one",
     "input": _inp("Orchard Dry", 900, "BR-2615"), "root": "pack_plan", "marker": '"cases": 149'},
]
