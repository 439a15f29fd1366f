"""Gunsmith's antique restoration: otlp route. A long loop: the maker's proof register (retriever)
and the bench notes, then for every part of the piece an inspection tool, a model grading the
part (keep, repair or replace, and its finish) and a parser; then the replacement parts sourced,
the estimate, a function test of the lock work, and the sign-off, which asserts the certificate."""
from __future__ import annotations

import json

from otlp_rig import attrs, set_output, traced

NAME = "antique-restoration"
ROUTE = "otlp"
DOMAIN = "gunsmith's antique restoration"
SHAPE = "intake -> proof register (retriever) -> bench notes -> per part (9-16): inspect (tool), grade (llm), read (parse) -> source parts -> estimate -> function test -> sign-off assertions; 35-56 spans"
SWITCHES = {"lock_reading_last_year": False, "register_similar_maker": False, "notes_whole_bench": False,
            "catalog_first_page": False, "proof_from_memory": False}

REGISTER = {
    "Joseph Manton": {"years": (1795, 1835), "finish": "browned", "proof": "London"},
    "John Manton": {"years": (1815, 1834), "finish": "blued", "proof": "London"},
    "Henry Nock": {"years": (1775, 1804), "finish": "browned", "proof": "London"},
    "Westley Richards": {"years": (1840, 1870), "finish": "browned", "proof": "Birmingham"},
    "Durs Egg": {"years": (1780, 1830), "finish": "browned", "proof": "London"},
    "W. W. Greener": {"years": (1850, 1880), "finish": "blued", "proof": "Birmingham"},
}
LOCK_WORK = {"mainspring", "sear", "tumbler", "frizzen spring", "hammer", "nipple"}


def _parts(names, worn=(), cracked=()):
    return [{"part": n, "pitting_pct": 35 if n in worn else 5, "crack": n in cracked} for n in names]


PIECES = {
    "Manton fowler 1798": {"maker": "Joseph Manton", "year": 1798, "parts": _parts(
        ["barrel", "breech plug", "lock plate", "cock", "frizzen", "frizzen spring", "mainspring", "tumbler", "sear",
         "trigger", "trigger guard", "butt plate", "ramrod", "ramrod pipe", "side plate", "stock"], worn=("ramrod pipe", "frizzen"), cracked=())},
    "Nock duelling pistol 1790": {"maker": "Henry Nock", "year": 1790, "parts": _parts(
        ["barrel", "lock plate", "cock", "frizzen", "frizzen spring", "mainspring", "tumbler", "sear", "trigger", "trigger guard", "stock"],
        worn=("frizzen spring",), cracked=())},
    "Westley Richards percussion rifle 1852": {"maker": "Westley Richards", "year": 1852, "parts": _parts(
        ["barrel", "nipple", "hammer", "lock plate", "mainspring", "tumbler", "sear", "trigger", "trigger guard", "rear sight", "butt plate", "stock"],
        worn=("nipple",), cracked=())},
    "Egg officer's fusil 1805": {"maker": "Durs Egg", "year": 1805, "parts": _parts(
        ["barrel", "lock plate", "cock", "frizzen", "mainspring", "sear", "trigger", "stock", "ramrod"], worn=("ramrod",), cracked=())},
    "Greener hammer gun 1862": {"maker": "W. W. Greener", "year": 1862, "parts": _parts(
        ["barrels", "hammer", "nipple", "lock plate", "mainspring", "tumbler", "sear", "trigger", "top lever", "fore-end", "stock", "butt plate", "trigger guard"],
        worn=("nipple", "fore-end"), cracked=())},
}
TRUE_CRACKS = {"Nock duelling pistol 1790": {"mainspring"}}
OTHER_JOBS = [{"job": "Greener hammer gun 1862", "part": "barrel", "note": "barrel to be re-blued, finish blued"},
              {"job": "Manton fowler 1798", "part": "barrel", "note": "barrel to be re-browned, finish browned"}]
CATALOG = {"frizzen": "hand-forged frizzen", "ramrod pipe": "brass ramrod pipe", "frizzen spring": "frizzen spring",
           "nipple": "platinum-lined nipple", "ramrod": "whalebone-tipped ramrod", "fore-end": "walnut fore-end", "mainspring": "hand-filed mainspring"}
LIMIT = 2400.0

INPUTS = [
    {"task": "restoration, Manton fowler 1798, Sir R. Oakes", "piece": "Manton fowler 1798", "owner": "Sir R. Oakes"},
    {"task": "restoration, Nock duelling pistol 1790, Mrs Hale", "piece": "Nock duelling pistol 1790", "owner": "Mrs Hale"},
    {"task": "restoration, Westley Richards rifle 1852, Col. Byng", "piece": "Westley Richards percussion rifle 1852", "owner": "Col. Byng"},
    {"task": "restoration, Egg fusil 1805, Mr Lacey", "piece": "Egg officer's fusil 1805", "owner": "Mr Lacey"},
    {"task": "restoration, Greener hammer gun 1862, Lord Aske", "piece": "Greener hammer gun 1862", "owner": "Lord Aske"},
]
CASES = [
    {"id": "zv36", "input": 1, "switch": "lock_reading_last_year", "kind": "stale_data",
     "root": ("inspect_part", 6, "tool"), "failure": ("function_test", 1),
     "description": "The inspection of the pistol's mainspring returned last year's reading, before the spring cracked, so it was graded to keep and the lock failed its half-cock test."},
    {"id": "zv37", "input": 0, "switch": "register_similar_maker", "kind": "wrong_retrieval",
     "root": ("proof_register", 1, "retrieval"), "failure": ("sign_off", 1),
     "description": "The proof register returned John Manton's record for a Joseph Manton fowler, so every part was graded to a blued finish on a gun made browned."},
    {"id": "zv38", "input": 0, "switch": "notes_whole_bench", "kind": "context_pollution",
     "root": ("bench_notes", 1, "tool"), "failure": ("sign_off", 1),
     "description": "The bench notes handed to the grading held every job on the bench, and the barrel was graded with the Greener gun's re-blue note."},
    {"id": "zv39", "input": 4, "switch": "catalog_first_page", "kind": "truncated_result",
     "root": ("source_parts", 1, "tool"), "failure": ("sign_off", 1),
     "description": "The parts catalog answered with its first page only, so the walnut fore-end graded for replacement was never sourced."},
    {"id": "zv40", "input": 2, "switch": "proof_from_memory", "kind": "hallucinated_value",
     "root": ("ChatCompletion", 1, "llm"), "failure": ("sign_off", 1),
     "description": "Grading the barrel, the model wrote London proof marks although the reading showed Birmingham marks."},
]


def policy(request):
    msgs = request.body["messages"]
    data = json.loads(msgs[-1]["content"])
    reading, period = data["reading"], data["register"]
    if reading["crack"]:
        action = "replace"
    elif reading["pitting_pct"] > 30:
        action = "replace" if reading["part"] in CATALOG else "repair"
    else:
        action = "keep"
    finish = period["finish"]
    for n in data["notes"]:
        if n["part"] == reading["part"] and "finish" in n["note"]:
            finish = n["note"].rsplit("finish ", 1)[1]
            break
    out = {"part": reading["part"], "action": action, "finish": finish}
    if "proof" in reading:
        out["proof"] = reading["proof"]
        if SWITCHES["proof_from_memory"]:
            out["proof"] = "London"
    return json.dumps(out)


def record(inp, path, server):
    piece = PIECES[inp["piece"]]
    with traced(NAME, path, server.base_url) as (tracer, client):
        with tracer.start_as_current_span(NAME, attributes=attrs("AGENT", {"task": inp["task"]})) as top:
            with tracer.start_as_current_span("restoration_intake", attributes=attrs("CHAIN", inp, inp)):
                pass
            with tracer.start_as_current_span("proof_register", attributes=attrs("RETRIEVER", {"maker": piece["maker"]})) as s:
                maker = "John Manton" if SWITCHES["register_similar_maker"] and piece["maker"] == "Joseph Manton" else piece["maker"]
                rec = {"maker": maker, **REGISTER[maker]}
                s.set_attribute("retrieval.documents.0.document.id", maker)
                s.set_attribute("retrieval.documents.0.document.content", json.dumps(rec))
            with tracer.start_as_current_span("bench_notes", attributes=attrs("TOOL", {"job": inp["piece"]})) as s:
                notes = [n for n in OTHER_JOBS if n["job"] == inp["piece"]]
                if SWITCHES["notes_whole_bench"]:
                    notes = list(OTHER_JOBS)
                set_output(s, notes)
            grades = []
            for p in piece["parts"]:
                with tracer.start_as_current_span("inspect_part", attributes=attrs("TOOL", {"part": p["part"]})) as s:
                    reading = dict(p)
                    if p["part"] in TRUE_CRACKS.get(inp["piece"], ()) and not SWITCHES["lock_reading_last_year"]:
                        reading["crack"] = True
                    if p["part"] in ("barrel", "barrels"):
                        reading["proof"] = REGISTER[piece["maker"]]["proof"]
                    set_output(s, reading)
                reply = client.chat.completions.create(model="fake-model", messages=[
                    {"role": "system", "content": "Grade the part for restoration: keep, repair or replace, and its finish. JSON."},
                    {"role": "user", "content": json.dumps({"reading": reading, "register": rec, "notes": notes})}])
                text = reply.choices[0].message.content
                with tracer.start_as_current_span("read_grade", attributes=attrs("CHAIN", {"text": text})) as s:
                    grades.append(set_output(s, json.loads(text)))
            wanted = [g["part"] for g in grades if g["action"] == "replace"]
            with tracer.start_as_current_span("source_parts", attributes=attrs("TOOL", {"parts": wanted, "years": rec["years"]})) as s:
                found = [{"part": w, "item": CATALOG[w], "years": list(rec["years"]), "price": 180.0} for w in wanted if w in CATALOG]
                if SWITCHES["catalog_first_page"]:
                    found = found[:1]
                set_output(s, found)
            with tracer.start_as_current_span("estimate", attributes=attrs("CHAIN", {"grades": len(grades), "sourced": len(found)})) as s:
                cost = sum(f["price"] for f in found) + 95.0 * sum(g["action"] == "repair" for g in grades) + 40.0 * len(grades)
                est = set_output(s, {"cost": round(cost, 2)})
            with tracer.start_as_current_span("function_test", attributes=attrs("TOOL", {"lock_work": [g for g in grades if g["part"] in LOCK_WORK]})) as s:
                for g in grades:
                    if g["part"] in TRUE_CRACKS.get(inp["piece"], ()) and g["action"] == "keep":
                        raise RuntimeError(f"lock fails the half-cock test: the {g['part']} does not hold the {'cock' if 'cock' in [x['part'] for x in piece['parts']] else 'hammer'}")
                set_output(s, {"half_cock": "holds", "full_cock": "holds"})
            with tracer.start_as_current_span("sign_off", attributes=attrs("CHAIN", {"grades": grades, "sourced": found, "estimate": est})) as s:
                original = REGISTER[piece["maker"]]
                for g in grades:
                    assert g["finish"] == original["finish"], f"{g['part']} to be finished {g['finish']}, the {piece['maker']} original is {original['finish']}"
                    if "proof" in g:
                        assert g["proof"] == original["proof"], f"certificate states {g['proof']} proof, the barrel carries {original['proof']} marks"
                sourced = {f["part"] for f in found}
                for g in grades:
                    assert g["action"] != "replace" or g["part"] in sourced, f"{g['part']} graded for replacement, none sourced"
                for f in found:
                    assert f["years"][0] <= piece["year"] <= f["years"][1], f"{f['item']} of {f['years']} for a piece of {piece['year']}"
                assert est["cost"] <= LIMIT, f"estimate {est['cost']} over the owner's limit {LIMIT}"
                set_output(s, {"certificate": f"{inp['piece']} restored for {inp['owner']}", "estimate": est["cost"]})
            set_output(top, {"signed_off": True})
