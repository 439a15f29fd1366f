"""Fountain-pen restorer: OpenInference-instrumented OpenAI calls plus the bench's own OpenTelemetry spans, exported as OTLP JSON."""

from __future__ import annotations

import json
import re

from openai import OpenAI
from opentelemetry.trace import Status, StatusCode

NAME = "inkwell-pen-restoration"
ROUTE = "otlp"
DOMAIN = "fountain-pen restorer"
SHAPE = "OTLP: model diagnosis, parse span, per-job part search (retriever) and stock check with one supplier retry, quote, parts order, model-written letter, approval tool; 10-15 spans"
ON: set[str] = set()

INPUTS = [
    {"ticket": "P-881", "pen": "Parker 51 Vacumatic", "complaints": ["will not fill", "scratchy nib"], "budget_usd": 160},
    {"ticket": "P-882", "pen": "Sheaffer Snorkel", "complaints": ["will not fill"], "budget_usd": 120},
    {"ticket": "P-883", "pen": "Pelikan 400", "complaints": ["piston stiff", "cap crack"], "budget_usd": 140},
    {"ticket": "P-884", "pen": "Esterbrook J", "complaints": ["will not fill", "scratchy nib", "lever loose"], "budget_usd": 150},
    {"ticket": "P-885", "pen": "Parker Duofold", "complaints": ["will not fill", "cap crack"], "budget_usd": 170},
]
JOBS = {
    "will not fill": {"job": "replace sac", "part": "sac"}, "scratchy nib": {"job": "smooth nib", "part": "micromesh"},
    "piston stiff": {"job": "regrease piston", "part": "silicone grease"}, "cap crack": {"job": "repair cap", "part": "cap band"},
    "lever loose": {"job": "reset lever", "part": "j-bar"},
}
SAC = {"Parker 51 Vacumatic": "#16", "Sheaffer Snorkel": "#14", "Esterbrook J": "#18", "Parker Duofold": "#20", "Pelikan 400": None}
CATALOGUE = [
    {"sku": "SAC-14", "part": "sac", "size": "#14", "usd": 6}, {"sku": "SAC-16", "part": "sac", "size": "#16", "usd": 6},
    {"sku": "SAC-18", "part": "sac", "size": "#18", "usd": 7}, {"sku": "SAC-20", "part": "sac", "size": "#20", "usd": 7},
    {"sku": "MM-12K", "part": "micromesh", "size": None, "usd": 4}, {"sku": "SG-10", "part": "silicone grease", "size": None, "usd": 3},
    {"sku": "CB-01", "part": "cap band", "size": None, "usd": 18}, {"sku": "JB-02", "part": "j-bar", "size": None, "usd": 5},
]
LABOUR = {"replace sac": 35, "smooth nib": 30, "regrease piston": 25, "repair cap": 45, "reset lever": 20}

CASES = [
    {"id": "pen-01", "input": 3, "switch": "a", "kind": "lossy_parsing", "root": ("read_diagnosis", 1, "other"), "failure": ("approve_work", 1),
     "description": "The diagnosis parser keeps the sac size as a bare number and drops the '#', so the part search falls back to the first sac in the catalogue, a #14 that does not fit the Esterbrook J."},
    {"id": "pen-02", "input": 0, "switch": "b", "kind": "plan_error", "root": ("ChatCompletion", 1, "llm"), "failure": ("approve_work", 1),
     "description": "The diagnosing model plans only the nib work and leaves out the new sac for a pen that will not fill, so the approval finds a complaint with no job."},
    {"id": "pen-03", "input": 4, "switch": "c", "kind": "swallowed_error", "root": ("find_part", 2, "retrieval"), "failure": ("approve_work", 1),
     "description": "The part search for the cap repair hits an index error and answers an empty list instead of raising, so the cap job reaches the approval without a part."},
    {"id": "pen-04", "input": 2, "switch": "d", "kind": "format_drift", "root": ("ChatCompletion", 2, "llm"), "failure": ("approve_work", 1),
     "description": "The model writing the customer letter states the total in a European format ('USD 1.234,00' style), which the approval cannot match with the quote."},
    {"id": "pen-05", "input": 1, "switch": "e", "kind": "stale_data", "root": ("stock_check", 2, "tool"), "failure": ("order_parts", 1),
     "description": "After the supplier retry, the stock check answers from the previous day's stock list showing #14 sacs in stock at the usual supplier, so the order goes there and is refused as sold out."},
]


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    data = json.loads(msgs[-1]["content"])
    if system.startswith("Diagnose"):
        jobs = []
        for c in data["complaints"]:
            job = dict(JOBS[c], complaint=c)
            if job["part"] == "sac":
                job["size"] = SAC[data["pen"]]
            jobs.append(job)
        if "b" in ON:
            jobs = [j for j in jobs if j["part"] != "sac"]
        return json.dumps({"pen": data["pen"], "jobs": jobs})
    total = f"{data['total_usd']:.2f}"
    if "d" in ON:
        total = f"{data['total_usd']:,.2f}".replace(".", ";").replace(",", ".").replace(";", ",")
    return f"Dear customer, your {data['pen']} needs: {', '.join(data['jobs'])}. Total: USD {total}."


def record(inp: dict, path, ctx) -> None:
    provider, spans = ctx.otel()
    spans.clear()
    tracer = provider.get_tracer("inkwell-bench")
    client = OpenAI(base_url=ctx.server.base_url, api_key="not-needed", max_retries=0)

    def span(name, kind, value):
        return tracer.start_as_current_span(name, attributes={"openinference.span.kind": kind, "input.value": json.dumps(value), "input.mime_type": "application/json"})

    def done(sp, out):
        sp.set_attribute("output.value", json.dumps(out))
        sp.set_attribute("output.mime_type", "application/json")
        return out

    def chat(system, payload):
        r = client.chat.completions.create(model="fake-model", messages=[{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}])
        return r.choices[0].message.content

    sold_out = {"SAC-14"}
    try:
        with span(NAME, "AGENT", inp) as top:
            with span("intake_ticket", "CHAIN", inp) as sp:
                ticket = done(sp, {"ticket": inp["ticket"], "pen": inp["pen"], "complaints": inp["complaints"]})
            text = chat("Diagnose the pen: list the jobs as JSON.", ticket)
            with span("read_diagnosis", "CHAIN", {"text": text}) as sp:
                diag = json.loads(text)
                for j in diag["jobs"]:
                    if "a" in ON and j.get("size"):
                        j["size"] = int(j["size"].lstrip("#"))
                done(sp, diag)
            priced = []
            for j in diag["jobs"]:
                with span("find_part", "RETRIEVER", {"part": j["part"], "size": j.get("size")}) as sp:
                    hits = [c for c in CATALOGUE if c["part"] == j["part"] and (c["size"] is None or c["size"] == j.get("size"))]
                    if not hits:
                        hits = [c for c in CATALOGUE if c["part"] == j["part"]][:1]
                    if "c" in ON and j["part"] == "cap band":
                        try:
                            raise IndexError("parts index shard 3 unavailable")
                        except IndexError:
                            hits = []
                    for k, h in enumerate(hits):
                        sp.set_attribute(f"retrieval.documents.{k}.document.id", h["sku"])
                        sp.set_attribute(f"retrieval.documents.{k}.document.content", json.dumps(h))
                part = hits[0] if hits else None
                supplier = "Bexley"
                if part is not None:
                    for attempt in (1, 2):
                        try:
                            with span("stock_check", "TOOL", {"sku": part["sku"], "attempt": attempt}) as sp:
                                if attempt == 1 and part["part"] == "sac":
                                    raise ConnectionError("supplier API 503, retrying")
                                in_stock = part["sku"] not in sold_out
                                if "e" in ON and part["sku"] == "SAC-14":
                                    in_stock = True
                                done(sp, {"sku": part["sku"], "in_stock": in_stock, "supplier": "Bexley"})
                            if not in_stock:
                                supplier = "Harrow Pen Spares"
                            break
                        except ConnectionError:
                            continue
                priced.append({**j, "sku": part["sku"] if part else None, "part_usd": part["usd"] if part else 0, "labour_usd": LABOUR[j["job"]], "supplier": supplier})
            with span("quote", "CHAIN", {"jobs": priced}) as sp:
                q = done(sp, {"pen": inp["pen"], "jobs": [p["job"] for p in priced], "total_usd": float(sum(p["part_usd"] + p["labour_usd"] for p in priced))})
            letter = chat("Write the customer letter with the quote.", q)
            with span("order_parts", "TOOL", {"skus": [[p["sku"], p["supplier"]] for p in priced if p["sku"]]}) as sp:
                for p in priced:
                    if p["sku"] in sold_out and p["supplier"] == "Bexley":
                        raise RuntimeError(f"supplier: {p['sku']} is sold out at Bexley, order for {inp['ticket']} refused")
                done(sp, {"ordered": [p["sku"] for p in priced if p["sku"]]})
            with span("approve_work", "TOOL", {"ticket": inp["ticket"], "jobs": priced, "letter": letter}) as sp:
                for c in inp["complaints"]:
                    if not any(p["complaint"] == c for p in priced):
                        raise ValueError(f"{inp['ticket']}: complaint '{c}' has no job")
                for p in priced:
                    if p["sku"] is None:
                        raise ValueError(f"{inp['ticket']}: job '{p['job']}' has no part")
                    if p["part"] == "sac" and p["sku"] != "SAC-" + SAC[inp["pen"]].lstrip("#"):
                        raise ValueError(f"{inp['ticket']}: {p['sku']} does not fit a {inp['pen']} (needs {SAC[inp['pen']]})")
                m = re.search(r"Total: USD ([0-9]+\.[0-9]{2})\.$", letter)
                if not m or float(m.group(1)) != q["total_usd"]:
                    raise ValueError(f"{inp['ticket']}: letter total does not match the quote of {q['total_usd']:.2f}")
                if q["total_usd"] > inp["budget_usd"]:
                    raise ValueError(f"{inp['ticket']}: quote over the customer's budget")
                done(sp, {"approved": True})
            top.set_attribute("output.value", json.dumps({"approved": inp["ticket"]}))
    except Exception:
        pass
    ctx_write(spans, path)


def ctx_write(spans, path):
    write_otlp(spans.get_finished_spans(), path)  # noqa: F821 - set by generate.py
