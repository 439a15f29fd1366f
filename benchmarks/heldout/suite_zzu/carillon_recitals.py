"""Carillon: build a recital programme from the repertoire, check bell range and recent history, fit the guest's piece,
mark the occasion, and publish the leaflet (otlp route: OpenTelemetry spans with OpenInference attributes)."""
from __future__ import annotations

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kit
from harness import Brain, OtlpRun, chat_prompt, payload

NAME, ROUTE, DOMAIN = "carillon-recital", "otlp", "a carillon's recital programme"
SHAPE = "OTel spans: recital and bell-inventory tools, repertoire retrieval, LLM selection + parse, per-piece range/history tool loop, guest-liaison sub-agent (tool, LLM, parse), occasion routing, LLM notes, leaflet, listing tool, validator"

BELLS = {"low": 48, "high": 86}
CATALOGUE = {  # title: (composer, minutes, lowest, highest, occasion)
    "Prelude in G": ("Van den Gheyn", 6, 50, 84, "any"), "Suite Archaïque": ("Barnes", 9, 48, 86, "any"), "Sarabande": ("Price", 5, 52, 80, "any"),
    "Bells of Aberdovey": ("trad.", 4, 53, 81, "summer"), "Summer Fantasy": ("Leen", 8, 48, 87, "summer"), "Air on a Ground": ("Barnes", 6, 50, 82, "summer"),
    "Nimrod": ("Elgar", 5, 48, 79, "remembrance"), "Lament": ("Johnson", 7, 48, 84, "remembrance"), "In Flanders Fields": ("Hoffman", 6, 51, 85, "remembrance"),
    "Easter Hymn": ("trad.", 4, 55, 83, "easter"), "Toccata": ("Myhre", 7, 48, 87, "easter"), "Harvest Carol": ("trad.", 4, 52, 80, "harvest"),
    "Ploughman's Song": ("Gower", 6, 50, 83, "harvest"), "Rondo": ("Lannoy", 5, 50, 86, "any"),
}
GUESTS = {"Anna Kessler": ["Fantasia on Greensleeves", "Little Suite"], "Tom Reyes": ["Chaconne", "Blue Bells Rag"], "Liesbeth Maes": ["Pavane", "Carillon Waltz"]}
GUEST_MIN = {"Fantasia on Greensleeves": 6, "Little Suite": 7, "Chaconne": 8, "Blue Bells Rag": 4, "Pavane": 5, "Carillon Waltz": 6}
OCCASIONS = ["summer", "remembrance", "easter", "harvest"]


def make_recital(i: int) -> dict:
    occ = OCCASIONS[i % 4]
    guests = list(GUESTS)
    hist = [["Prelude in G", "Rondo"], ["Nimrod" if i % 2 else "Bells of Aberdovey"], ["Air on a Ground", "Toccata"]]
    return {"recital": f"CR-{720 + i}", "date": f"2026-{6 + i % 6:02d}-{10 + i:02d}", "occasion": occ, "title": f"{occ.title()} Recital",
            "slot_min": 40, "guest": guests[i % 3], "previous_guest": guests[(i + 1) % 3], "history": hist}


brain = Brain()


@brain.on("select")
def _select(request, text):
    d = payload(text)
    return json.dumps([c["title"] for c in d["candidates"]][:5])


@brain.on("guest")
def _guest(request, text):
    d = payload(text)
    return f"Confirmed: {d['pieces'][0]} ({d['minutes'][0]} min)"


@brain.on("notes")
def _notes(request, text):
    d = payload(text)
    total = d["total_min"] + (8 if kit.on("zzu_carillon_05") else 0)
    return f"{d['title']} on {d['date']}: {', '.join(d['titles'])}. Duration {total} minutes."


def record(server, i: int) -> dict:
    rec = make_recital(i)
    server.use(brain)
    t = OtlpRun(NAME, server.base_url)
    sysmsg = "You are the carillonneur's programme assistant."
    try:
        with t.span(NAME, "AGENT", {"recital": rec["recital"]}):
            r = t.call("get_recital", "TOOL", {"recital": rec["recital"]}, lambda: {k: rec[k] for k in ("recital", "date", "occasion", "title", "slot_min", "guest")})
            inv = t.call("bell_inventory", "TOOL", {"tower": "St Bavo"}, lambda: dict(BELLS))
            cands = t.call("repertoire_search", "RETRIEVER", {"occasion": r["occasion"]}, lambda: [
                {"title": k, "composer": v[0], "minutes": v[1], "lowest": v[2], "highest": v[3]} for k, v in CATALOGUE.items() if v[4] in (r["occasion"], "any")])
            raw = t.ask(sysmsg, chat_prompt("select", "Pick five pieces for the occasion, in playing order.", {"occasion": r["occasion"], "candidates": cands}))
            titles = t.call("parse_selection", "CHAIN", {"text": raw}, lambda: json.loads(raw))
            kept = []
            for title in titles:
                c = CATALOGUE[title]

                def in_range(title=title, c=c):
                    top = inv["high"] + 1 if kit.on("zzu_carillon_02") else inv["high"]
                    return {"title": title, "fits": c[2] >= inv["low"] and c[3] <= top}
                rng = t.call("check_range", "TOOL", {"title": title, "lowest": c[2], "highest": c[3]}, in_range)

                def history(title=title):
                    recent = rec["history"][:1] if kit.on("zzu_carillon_01") else rec["history"]
                    return {"title": title, "played_recently": any(title in h for h in recent)}
                hist = t.call("check_history", "TOOL", {"title": title, "recitals": 3}, history)
                if rng["fits"] and not hist["played_recently"]:
                    kept.append(title)
            kept = kept[:3]
            guest_name = rec["previous_guest"] if kit.on("zzu_carillon_03") else r["guest"]
            with t.span("guest_liaison", "AGENT", {"guest": guest_name, "recital": rec["recital"]}):
                rep = t.call("guest_repertoire", "TOOL", {"guest": guest_name}, lambda: {"pieces": GUESTS[guest_name], "minutes": [GUEST_MIN[p] for p in GUESTS[guest_name]]})
                ans = t.ask(sysmsg, chat_prompt("guest", "Confirm the guest's piece for the recital.", rep))
                guest_piece = t.call("parse_guest", "CHAIN", {"text": ans}, lambda: {"title": ans.split("Confirmed: ")[1].split(" (")[0], "minutes": int(re.search(r"\((\d+) min", ans).group(1))})

            def route():
                memorial = r["occasion"] == "remembrance"
                if kit.on("zzu_carillon_04"):
                    memorial = "memorial" in r["title"].lower()
                return "memorial" if memorial else "standard"
            branch = t.call("route_occasion", "CHAIN", {"occasion": r["occasion"], "title": r["title"]}, route)
            extras = []
            if branch == "memorial":
                extras = t.call("add_memorial_items", "TOOL", {"recital": rec["recital"]}, lambda: [{"title": "Last Post", "minutes": 2}, {"title": "Two minutes' silence", "minutes": 2}])
            programme = t.call("order_programme", "CHAIN", {"pieces": kept, "guest": guest_piece, "extras": extras}, lambda: (
                [{"title": k, "minutes": CATALOGUE[k][1]} for k in kept[:2]] + [guest_piece] + extras + [{"title": k, "minutes": CATALOGUE[k][1]} for k in kept[2:]]))
            total = sum(p["minutes"] for p in programme)
            notes = t.ask(sysmsg, chat_prompt("notes", "Write the leaflet blurb.", {"title": r["title"], "date": r["date"], "titles": [p["title"] for p in programme], "total_min": total}))
            leaflet = t.call("typeset_leaflet", "CHAIN", {"notes": notes}, lambda: {"blurb": notes, "duration_min": int(re.search(r"Duration (\d+) minutes", notes).group(1)), "pages": 2})
            t.call("publish_listing", "TOOL", {"recital": rec["recital"], "duration_min": leaflet["duration_min"]}, lambda: {"listed": True, "url": f"/recitals/{rec['recital']}"})

            def validate():
                titles_ = [p["title"] for p in programme]
                for p in titles_:
                    if p in CATALOGUE:
                        lo, hi = CATALOGUE[p][2], CATALOGUE[p][3]
                        if lo < BELLS["low"] or hi > BELLS["high"]:
                            raise ValueError(f"{rec['recital']}: {p} needs bells {lo}-{hi}, the carillon has {BELLS['low']}-{BELLS['high']}")
                        if any(p in h for h in rec["history"]):
                            raise ValueError(f"{rec['recital']}: {p} was played in one of the last 3 recitals")
                if guest_piece["title"] not in GUESTS[rec["guest"]]:
                    raise ValueError(f"{rec['recital']}: guest piece {guest_piece['title']} is not in {rec['guest']}'s repertoire")
                if rec["occasion"] == "remembrance" and "Last Post" not in titles_:
                    raise ValueError(f"{rec['recital']}: remembrance recital on {rec['date']} without the Last Post and silence")
                real = sum(p["minutes"] for p in programme)
                if real > rec["slot_min"]:
                    raise ValueError(f"{rec['recital']}: {real} minutes for a {rec['slot_min']}-minute slot")
                if leaflet["duration_min"] != real:
                    raise ValueError(f"{rec['recital']}: leaflet gives {leaflet['duration_min']} minutes, the programme runs {real}")
                return "ok"
            t.call("validate_programme", "CHAIN", {"recital": rec["recital"]}, validate)
    except ValueError:
        pass
    return t.doc()


CASES = [
    dict(id="zzu_carillon_01", kind="truncated_result", root=("check_history", 4), failure=("validate_programme", 1), input=1,
         description="The history tool looks only at the latest recital, so a piece played two recitals ago is cleared again."),
    dict(id="zzu_carillon_02", kind="off_by_one", root=("check_range", 5), failure=("validate_programme", 1), input=0,
         description="The range check allows one semitone above the top bell, so a piece needing bell 87 passes on an 86-bell range."),
    dict(id="zzu_carillon_03", kind="subagent_wrong_entity", root=("guest_liaison", 1), failure=("validate_programme", 1), input=2,
         description="The guest-liaison sub-agent is run for the previous recital's guest and confirms that guest's piece."),
    dict(id="zzu_carillon_04", kind="wrong_routing", root=("route_occasion", 1), failure=("validate_programme", 1), input=1,
         description="The occasion router looks for 'memorial' in the title, so the Remembrance Recital takes the standard branch without the Last Post."),
    dict(id="zzu_carillon_05", kind="hallucinated_value", root=("ChatCompletion", 3), failure=("validate_programme", 1), input=3,
         description="The leaflet-notes model states a duration eight minutes longer than the programme total it was given."),
]
REFS = [5, 6, 7, 8]
