"""Demolition contractor's site plans (otlp route): scopes a site, checks permits and surveys, estimates waste, sequences works."""
from __future__ import annotations

import json

import _rt
import kit

NAME, ROUTE, DOMAIN = "demolition-site-planner", "otlp", "a demolition contractor's site plans"
SHAPE = "OpenInference spans: site tool, LLM scope, parse, per-structure permit/survey (retriever)/waste loop, waste-broker sub-agent (LLM + parse), LLM sequence, parse, crew booking tool, compile, validator"

KINDS = [("main hall", 420, ["brick", "steel", "timber", "roof sheet"]), ("annex", 150, ["brick", "timber", "plaster"]),
         ("boiler house", 90, ["brick", "steel", "pipework"]), ("canopy", 35, ["steel", "roof sheet"]),
         ("workshop", 210, ["block", "steel", "roof sheet", "concrete slab"])]


def _input(i: int) -> dict:
    structs = []
    for k in range(4):
        name, t, mats = KINDS[(i + k) % 5]
        structs.append({"id": f"S{k + 1}", "name": name, "tonnes": t + 10 * i, "materials": mats,
                        "asbestos": (i + k) % 3 == 0, "attached_to": "S1" if k == 1 else None})
    return {"site": f"DS-{510 + i}", "address": f"{12 + i} Mill Lane", "start": f"2025-09-{8 + i:02d}", "structures": structs}


INPUTS = [_input(i) for i in range(5)]
CASES = [
    {"id": "dm_c1", "input": 0, "fault_kind": "plan_error", "root": "ChatCompletion", "occ": 3, "failure": "validate_plan",
     "description": "The sequencing model plans the main structure before the annex attached to it."},
    {"id": "dm_c2", "input": 1, "fault_kind": "hallucinated_value", "root": "ChatCompletion", "occ": 3, "failure": "validate_plan",
     "description": "The sequencing model cites a permit reference for one structure that the council never issued."},
    {"id": "dm_c3", "input": 2, "fault_kind": "format_drift", "root": "book_crew", "occ": 1, "failure": "validate_plan",
     "description": "book_crew answers its start date as DD/MM/YYYY and compile_plan reads it as year-month-day, moving the start before the permits."},
    {"id": "dm_c4", "input": 3, "fault_kind": "truncated_result", "root": "estimate_waste", "occ": 4, "failure": "validate_plan",
     "description": "estimate_waste returns only the first two material lines of the last structure, so the haulage booked falls short."},
    {"id": "dm_c5", "input": 4, "fault_kind": "wrong_retrieval", "root": "survey_lookup", "occ": 3, "failure": "validate_plan",
     "description": "survey_lookup returns the survey of the same-named structure on a neighbouring site, which records no asbestos."},
]


def _per_material(s: dict) -> list[dict]:
    n = len(s["materials"])
    return [{"material": m, "tonnes": round(s["tonnes"] / n, 1)} for m in s["materials"]]


def _policy(inp: dict):
    def brain(request):
        text = _rt.last_user(request)
        if text.startswith("Scope the site"):
            return "\n".join(f"{s['id']}|{s['name']}|{s['attached_to'] or '-'}" for s in inp["structures"])
        if text.startswith("Quote haulage"):
            rows = json.loads(text.split("\n", 1)[1])
            return "\n".join(f"{r['material']}: {r['tonnes']} t via Greenway Haulage (CBDU-4471)" for r in rows)
        if text.startswith("Sequence the works"):
            info = json.loads(text.split("\n", 1)[1])
            order = sorted(info, key=lambda x: (x["attached_to"] is None, x["id"]))
            if kit.on("dm_c1"):
                order = sorted(info, key=lambda x: x["id"])
            lines = []
            for k, x in enumerate(order):
                method = "asbestos removal, soft strip, then machine" if x["asbestos"] else "soft strip, then machine"
                permit = x["permit"]
                if kit.on("dm_c2") and k == 2:
                    permit = permit[:-2] + "77"
                lines.append(f"{x['id']};{method};{permit}")
            return "\n".join(lines)
        return "OK"
    return brain


def record(inp: dict, path: str) -> None:
    _rt.SERVER.use(_policy(inp))
    S = _rt.span_call

    def body(tracer, client):
        with _rt.agent_span(tracer, NAME, {"site": inp["site"], "address": inp["address"]}):
            site = S(tracer, "get_site", "TOOL", {"site": inp["site"]}, lambda: json.loads(json.dumps(inp)))
            scope = _rt.complete(client, "You scope demolition sites. One line per structure: id|name|attached_to.",
                                 "Scope the site\n" + json.dumps(site["structures"]))

            def parse_scope():
                out = []
                for line in scope.splitlines():
                    sid, name, att = line.split("|")
                    out.append({"id": sid, "name": name, "attached_to": None if att == "-" else att})
                return out
            structs = S(tracer, "parse_scope", "CHAIN", {"text": scope}, parse_scope)
            by_id = {s["id"]: s for s in site["structures"]}
            facts, waste_rows = [], []
            for k, st in enumerate(structs):
                permit = S(tracer, "permit_check", "TOOL", {"site": inp["site"], "structure": st["id"]},
                           lambda st=st: {"structure": st["id"], "permit": f"DP/{inp['site'][-3:]}/{st['id'][-1]}0",
                                          "valid_from": inp["start"]})

                def survey(st=st, k=k):
                    asb = by_id[st["id"]]["asbestos"]
                    src = inp["site"]
                    if kit.on("dm_c5") and k == 2:
                        asb, src = False, f"DS-{int(inp['site'][3:]) + 1}"
                    return {"site": src, "structure": st["name"], "asbestos": asb, "report": f"R&D survey {src}/{st['id']}"}
                sv = S(tracer, "survey_lookup", "RETRIEVER", {"query": f"{inp['address']} {st['name']} asbestos survey"}, survey)

                def waste(st=st, k=k):
                    rows = _per_material(by_id[st["id"]])
                    if kit.on("dm_c4") and k == 3:
                        rows = rows[:2]
                    return rows
                rows = S(tracer, "estimate_waste", "TOOL", {"structure": st["id"]}, waste)
                waste_rows.extend(rows)
                facts.append({**st, "asbestos": sv["asbestos"], "permit": permit["permit"], "valid_from": permit["valid_from"]})

            merged: dict = {}
            for r in waste_rows:
                merged[r["material"]] = round(merged.get(r["material"], 0) + r["tonnes"], 1)
            with _rt.agent_span(tracer, "waste_broker", {"materials": sorted(merged)}):
                quote = _rt.complete(client, "You book waste haulage.", "Quote haulage per material\n" +
                                     json.dumps([{"material": m, "tonnes": t} for m, t in sorted(merged.items())]))
                quotes = S(tracer, "parse_quotes", "CHAIN", {"text": quote}, lambda: [
                    {"material": q.split(":")[0], "tonnes": float(q.split(": ")[1].split(" t")[0]),
                     "carrier": q.split(" via ")[1]} for q in quote.splitlines()])

            seq_text = _rt.complete(client, "You sequence demolition works: id;method;permit per line, dependents first.",
                                    "Sequence the works\n" + json.dumps(facts))
            seq = S(tracer, "parse_sequence", "CHAIN", {"text": seq_text}, lambda: [
                dict(zip(("id", "method", "permit"), line.split(";"))) for line in seq_text.splitlines()])

            def crew():
                y, m, d = inp["start"].split("-")
                return {"crew": "Crew B", "start": f"{d}/{m}/{y}" if kit.on("dm_c3") else inp["start"], "days": 2 * len(seq)}
            booking = S(tracer, "book_crew", "TOOL", {"site": inp["site"], "from": inp["start"], "days": 2 * len(seq)}, crew)

            def compile_plan():
                p = booking["start"].replace("/", "-").split("-")
                start = f"{p[0]}-{p[1]}-{p[2]}" if len(p[0]) == 4 else f"20{p[0][-2:]}-{p[1]}-{p[2][-2:]}"
                return {"site": inp["site"], "start": start, "sequence": seq, "haulage_t": round(sum(q["tonnes"] for q in quotes), 1)}
            plan = S(tracer, "compile_plan", "CHAIN", {"site": inp["site"]}, compile_plan)

            def validate():
                order = [x["id"] for x in plan["sequence"]]
                for s in inp["structures"]:
                    if s["attached_to"] and order.index(s["id"]) > order.index(s["attached_to"]):
                        raise ValueError(f"{s['id']} ({s['name']}) is attached to {s['attached_to']} but is demolished after it")
                for x in plan["sequence"]:
                    issued = f"DP/{inp['site'][-3:]}/{x['id'][-1]}0"
                    if x["permit"] != issued:
                        raise ValueError(f"{x['id']}: permit {x['permit']} not issued, council issued {issued}")
                    if by_id[x["id"]]["asbestos"] and "asbestos removal" not in x["method"]:
                        raise ValueError(f"{x['id']}: survey records asbestos, method '{x['method']}' has no removal")
                if plan["start"] < inp["start"]:
                    raise ValueError(f"works start {plan['start']}, permits valid from {inp['start']}")
                need = round(sum(s["tonnes"] for s in inp["structures"]), 1)
                if plan["haulage_t"] < need - 0.5:
                    raise ValueError(f"haulage booked for {plan['haulage_t']} t, the site holds {need} t")
                return {"ok": True}
            S(tracer, "validate_plan", "CHAIN", {"site": inp["site"]}, validate)

    _rt.otlp_run(NAME, body, path, seed=json.dumps(inp, sort_keys=True))
