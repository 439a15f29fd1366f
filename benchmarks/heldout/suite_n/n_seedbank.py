"""Seed bank germination round (otlp route): OpenInference spans around an instrumented openai client."""

from __future__ import annotations

import json
import re
from typing import Any

import nkit
from nkit import otlp_span, set_out
from opentelemetry.trace import Status, StatusCode


NAME = "germination-round"
ROUTE = "otlp"
DOMAIN = "seed bank germination testing"
SHAPE = "worklist tool; per-accession loop: protocol retriever, tray-log tool, parse, viability score, prompt, model decision, record; LIMS submission"

PROTOCOLS = {
    "Allium schoenoprasum": {"protocol": "SB-ASC-1", "final_day": 21, "threshold_pct": 85},
    "Allium sativum": {"protocol": "SB-ASA-2", "final_day": 14, "threshold_pct": 80},
    "Primula veris": {"protocol": "SB-PVE-1", "final_day": 28, "threshold_pct": 75},
    "Silene dioica": {"protocol": "SB-SDI-3", "final_day": 21, "threshold_pct": 85},
    "Centaurea nigra": {"protocol": "SB-CNI-1", "final_day": 14, "threshold_pct": 85},
    "Geranium pratense": {"protocol": "SB-GPR-2", "final_day": 28, "threshold_pct": 70},
}
# accession: (species, sown, counts by week)
ACCESSIONS = {
    "ACC-0412": ("Silene dioica", 50, [12, 38, 46]),
    "ACC-0413": ("Allium schoenoprasum", 50, [9, 28, 31]),
    "ACC-0414": ("Primula veris", 40, [3, 17, 30, 33]),
    "ACC-0415": ("Centaurea nigra", 50, [30, 45]),
    "ACC-0421": ("Allium schoenoprasum", 60, [20, 44, 54]),
    "ACC-0422": ("Geranium pratense", 40, [2, 11, 24, 31]),
    "ACC-0423": ("Silene dioica", 50, [15, 40, 47]),
    "ACC-0431": ("Centaurea nigra", 60, [41, 55]),
    "ACC-0432": ("Primula veris", 50, [6, 25, 39, 44]),
    "ACC-0441": ("Geranium pratense", 50, [1, 19, 33, 41]),
    "ACC-0442": ("Allium schoenoprasum", 40, [11, 30, 38]),
    "ACC-0451": ("Silene dioica", 40, [10, 31, 37]),
    "ACC-0452": ("Centaurea nigra", 40, [22, 38]),
    "ACC-0453": ("Primula veris", 60, [5, 30, 47, 52]),
}
ROUNDS = {
    "rack-1": ["ACC-0412", "ACC-0413", "ACC-0414", "ACC-0415"],
    "rack-2": ["ACC-0421", "ACC-0422", "ACC-0423"],
    "rack-3": ["ACC-0431", "ACC-0432"],
    "rack-4": ["ACC-0441", "ACC-0442"],
    "rack-5": ["ACC-0451", "ACC-0452", "ACC-0453"],
    "rack-6": ["ACC-0412", "ACC-0415", "ACC-0423"],
    "rack-7": ["ACC-0442", "ACC-0453", "ACC-0422"],
}
INPUTS = {r: {"rack": r, "round": f"GR-2026-{r}"} for r in ROUNDS}
REFS = ["rack-4", "rack-5", "rack-6", "rack-7"]
FAULTS = [
    {"id": "sb-ctx", "kind": "context_pollution", "input": "rack-1", "root": "build_prompt", "marker": "Previous tray"},
    {"id": "sb-proto", "kind": "wrong_retrieval", "input": "rack-2", "root": "protocol_lookup", "marker": "SB-ASA-2"},
    {"id": "sb-trunc", "kind": "truncated_result", "input": "rack-1", "root": "read_tray_log", "marker": "d14:28 sown:50"},
    {"id": "sb-parse", "kind": "lossy_parsing", "input": "rack-2", "root": "parse_tray_log", "marker": "[21, 5]"},
    {"id": "sb-day", "kind": "off_by_one", "input": "rack-3", "root": "score_viability", "marker": "\"count_day\": 7,"},
]


def _log_text(acc: str) -> str:
    _, sown, counts = ACCESSIONS[acc]
    return " ".join(f"d{7 * (i + 1)}:{c}" for i, c in enumerate(counts)) + f" sown:{sown}"


def agent(tracer: Any, client: Any, model: str, inp: dict) -> None:
    with otlp_span(tracer, "germination-round", "AGENT", inp, **{"agent.name": "germination-round"}) as root:
        with otlp_span(tracer, "fetch_worklist", "TOOL", {"rack": inp["rack"]}, **{"tool.name": "fetch_worklist"}) as s:
            work = [{"accession": a, "species": ACCESSIONS[a][0]} for a in ROUNDS[inp["rack"]]]
            set_out(s, work)
        results = []
        prev_summary = None
        for item in work:
            acc = item["accession"]
            with otlp_span(tracer, "assess_accession", "CHAIN", item):
                with otlp_span(tracer, "protocol_lookup", "RETRIEVER", f"germination protocol for {item['species']}") as s:
                    species = item["species"]
                    if nkit.active("sb-proto") and acc == "ACC-0421":
                        species = "Allium sativum"
                    proto = {"species": species, **PROTOCOLS[species]}
                    s.set_attribute("retrieval.documents.0.document.content", json.dumps(proto))
                    s.set_attribute("retrieval.documents.0.document.id", proto["protocol"])
                    set_out(s, [proto])
                with otlp_span(tracer, "read_tray_log", "TOOL", {"accession": acc}, **{"tool.name": "read_tray_log"}) as s:
                    text = _log_text(acc)
                    if nkit.active("sb-trunc") and acc == "ACC-0413":
                        text = text.split(" d21:")[0] + " sown:50"
                    set_out(s, text)
                with otlp_span(tracer, "parse_tray_log", "CHAIN", text) as s:
                    pairs = re.findall(r"d(\d+):(\d+)", text)
                    if nkit.active("sb-parse") and acc == "ACC-0421":
                        pairs = re.findall(r"d(\d+):(\d)", text)
                    parsed = {"counts": [[int(d), int(c)] for d, c in pairs], "sown": int(text.split("sown:")[1])}
                    set_out(s, parsed)
                with otlp_span(tracer, "score_viability", "CHAIN", {"parsed": parsed, "protocol": proto}) as s:
                    idx = proto["final_day"] // 7 - 1
                    if nkit.active("sb-day"):
                        idx -= 1
                    day, count = parsed["counts"][min(idx, len(parsed["counts"]) - 1)]
                    score = {"accession": acc, "count_day": day, "germinated": count, "viability_pct": round(100 * count / parsed["sown"], 1),
                             "threshold_pct": proto["threshold_pct"]}
                    set_out(s, score)
                with otlp_span(tracer, "build_prompt", "CHAIN", score) as s:
                    lines = [f"Accession {acc}: viability {score['viability_pct']}% against standard {score['threshold_pct']}%."]
                    if nkit.active("sb-ctx") and prev_summary is not None and acc == "ACC-0413":
                        lines.append(f"Previous tray {prev_summary['accession']}: viability {prev_summary['viability_pct']}% against standard {prev_summary['threshold_pct']}%.")
                    prompt = "\n".join(lines)
                    set_out(s, prompt)
                reply = client.chat.completions.create(model=model, messages=[
                    {"role": "system", "content": "You are the seed bank curator. Answer ACTION: bank or ACTION: regenerate."},
                    {"role": "user", "content": prompt},
                ])
                action = reply.choices[0].message.content.split("ACTION: ")[1].split()[0]
                with otlp_span(tracer, "record_result", "CHAIN", {"score": score, "action": action}) as s:
                    row = {**score, "action": action}
                    results.append(row)
                    set_out(s, row)
                prev_summary = score
        with otlp_span(tracer, "submit_round", "TOOL", {"round": inp["round"], "results": results}, **{"tool.name": "submit_round"}) as s:
            for row in results:
                species, sown, counts = ACCESSIONS[row["accession"]]
                true = PROTOCOLS[species]
                if row["count_day"] != true["final_day"]:
                    raise RuntimeError(f"LIMS 422: {row['accession']} final count is dated day {row['count_day']}, protocol {true['protocol']} requires day {true['final_day']}")
                recompute = round(100 * counts[true['final_day'] // 7 - 1] / sown, 1)
                if abs(recompute - row["viability_pct"]) > 1:
                    raise RuntimeError(f"LIMS 422: {row['accession']} viability {row['viability_pct']}% disagrees with the tray-log recompute {recompute}%")
                if row["action"] == "bank" and recompute < true["threshold_pct"]:
                    raise RuntimeError(f"LIMS 422: {row['accession']} cannot be banked at {recompute}% viability (standard {true['threshold_pct']}%)")
            set_out(s, {"round": inp["round"], "accepted": len(results)})
        set_out(root, f"{len(results)} accessions submitted")
        root.set_status(Status(StatusCode.OK))


def policy(request) -> str:
    prompt = request.body["messages"][-1]["content"]
    last = prompt.strip().split("\n")[-1]
    m = re.search(r"viability ([\d.]+)% against standard (\d+)%", last)
    return "ACTION: bank" if float(m.group(1)) >= float(m.group(2)) else "ACTION: regenerate"


def record(inp: dict, path) -> None:
    from openai import OpenAI

    tracer, exporter = nkit.otel()
    exporter.clear()
    nkit.SERVER.use(policy)
    client = OpenAI(base_url=nkit.SERVER.base_url, api_key="not-needed", max_retries=0)
    try:
        agent(tracer, client, nkit.SERVER.model, inp)
    except RuntimeError:
        pass
    nkit.write_otlp(list(exporter.get_finished_spans()), path)
