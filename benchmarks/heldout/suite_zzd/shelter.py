"""Bus shelter advertising sales (OpenTelemetry spans with OpenInference conventions, as OTLP/JSON).

A sales agent reads an advertiser's brief with the model, retrieves the zone's advertising restrictions,
searches the shelter inventory, checks each shelter's availability and scores it, hands the candidates to a
compliance agent (its own model call and log tool), lets the model select the package and books the
campaign through the media owner's booking API, which validates it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from openai import OpenAI

from .common import Case, OtlpRecording, span_io
from .kit import active

AGENT = "shelter-ad-sales"
ROUTE = "otlp"
DOMAIN = "bus shelter advertising sales"
SHAPE = "OTLP: llm brief reader, retriever, inventory tool, per-shelter availability/score loop, compliance sub-agent, llm package, booking"

INVENTORY = {  # shelter -> (zone, weekly footfall, metres to nearest school, EUR per week)
    "SH-C101": ("C", 18400, 620, 310.0), "SH-C104": ("C", 22100, 900, 340.0), "SH-C108": ("C", 26900, 410, 380.0),
    "SH-C111": ("C", 15200, 350, 260.0), "SH-C114": ("C", 31500, 140, 395.0), "SH-C117": ("C", 12800, 1200, 220.0),
    "SH-C120": ("C", 20300, 280, 300.0), "SH-C123": ("C", 9900, 760, 180.0),
    "SH-B201": ("B", 14100, 520, 240.0), "SH-B204": ("B", 17600, 90, 275.0), "SH-B207": ("B", 11900, 830, 210.0),
    "SH-B210": ("B", 21400, 460, 320.0), "SH-B213": ("B", 8800, 300, 160.0),
}
BOOKED = {"SH-C108": ("2027-03-01", "2027-04-25", "O-5521"), "SH-B210": ("2027-05-03", "2027-05-30", "O-5610")}
RULES = {
    "A": ["Business improvement district: every face carries the operator's licence number.",
          "Posters are changed on Mondays only."],
    "C": ["Bylaw 14.2: alcohol and gambling advertising is not permitted within 200 m of a school.",
          "Illuminated faces switch off between 00:00 and 05:00."],
    "B": ["Conservation area: digital faces limited to a 10 s dwell time.",
          "Bylaw 14.2: alcohol and gambling advertising is not permitted within 200 m of a school."],
}
BRIEFS = {
    "NB-0301": "Nordbrew Lager (category alcohol) wants 4 shelter faces in zone C for 4 weeks from 2027-03-01.",
    "GF-0405": "GreenFork meal kits (category food) wants 5 shelter faces in zone C for 3 weeks from 2027-04-05.",
    "KL-0208": "Kestrel Lotto (category gambling) wants 3 shelter faces in zone B for 2 weeks from 2027-02-08.",
    "MB-0503": "Meridian Bank (category finance) wants 3 shelter faces in zone B for 4 weeks from 2027-05-03.",
    "PT-0614": "Pinetree Theatre (category arts) wants 2 shelter faces in zone C for 2 weeks from 2027-06-14.",
    "HS-0906": "Harlow Stout (category alcohol) wants 3 shelter faces in zone C for 3 weeks from 2027-09-06.",
}
INPUTS = {k: k for k in BRIEFS}
REFS = ["KL-0208", "MB-0503", "PT-0614", "HS-0906"]

CASES = [
    Case("zzd-shelter-01", "wrong_retrieval", "shelter.rules_zone", "NB-0301", "zoning_rules", 1,
         "book_campaign", 1, "The restrictions search returns zone A's rules for a zone C brief, so the "
         "compliance agent excludes no shelter near a school and an alcohol campaign is booked 140 m from one."),
    Case("zzd-shelter-02", "stale_data", "shelter.avail_cache", "GF-0405", "check_availability", 3,
         "book_campaign", 1, "The availability check for SH-C108 answers from an old cache that shows it free, "
         "though order O-5521 holds it for the campaign weeks."),
    Case("zzd-shelter-03", "plan_error", "shelter.faces_short", "GF-0405", "ChatCompletion", 3,
         "book_campaign", 1, "The package the model selects holds 4 faces for a brief of 5."),
    Case("zzd-shelter-04", "format_drift", "shelter.date_dots", "NB-0301", "ChatCompletion", 1,
         "book_campaign", 1, "The brief reader answers the start date as 01.03.2027 instead of ISO, and the "
         "date reaches the booking request unchanged."),
    Case("zzd-shelter-05", "hallucinated_value", "shelter.extra_face", "NB-0301", "ChatCompletion", 3,
         "book_campaign", 1, "The model's package names a shelter SH-C126 that is in neither the inventory "
         "search nor the candidate list."),
]


def _policy(request):
    messages = request.body["messages"]
    system, user = messages[0]["content"], messages[-1]["content"]
    if system.startswith("Read the advertiser's brief"):
        m = re.search(r"^(.*?) \(category (\w+)\) wants (\d+) shelter faces in zone (\w) for (\d+) weeks from "
                      r"(\d{4})-(\d\d)-(\d\d)", user)
        start = f"{m.group(6)}-{m.group(7)}-{m.group(8)}"
        if active("shelter.date_dots"):
            start = f"{m.group(8)}.{m.group(7)}.{m.group(6)}"
        return json.dumps({"advertiser": m.group(1), "category": m.group(2), "faces": int(m.group(3)),
                           "zone": m.group(4), "weeks": int(m.group(5)), "start_date": start})
    data = json.loads(user)
    if system.startswith("You are the compliance agent"):
        excluded = []
        school_rule = any("within 200 m of a school" in r for r in data["rules"])
        if school_rule and data["category"] in ("alcohol", "gambling"):
            excluded = [c["shelter"] for c in data["candidates"] if c["school_m"] < 200]
        return json.dumps({"excluded": excluded, "basis": "zone restrictions as retrieved"})
    if system.startswith("Select the package"):
        ok = [c for c in data["candidates"] if c["available"] and c["shelter"] not in data["excluded"]]
        ok.sort(key=lambda c: -c["score"])
        faces = data["brief"]["faces"]
        if active("shelter.faces_short"):
            faces -= 1
        chosen = [c["shelter"] for c in ok[:faces]]
        if active("shelter.extra_face"):
            chosen[-1] = "SH-C126"
        total = sum(c["price_eur"] for c in ok if c["shelter"] in chosen)
        return json.dumps({"shelters": chosen, "weeks": data["brief"]["weeks"], "total_eur": total})
    raise ValueError("unexpected prompt")


class BookingRejected(RuntimeError):
    pass


def record(server, key: str, path: Path) -> None:
    server.use(_policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    brief_text = BRIEFS[key]

    def chat(system: str, payload) -> dict:
        reply = client.chat.completions.create(model="media-sales-model", messages=[
            {"role": "system", "content": system},
            {"role": "user", "content": payload if isinstance(payload, str) else json.dumps(payload)}])
        return json.loads(reply.choices[0].message.content)

    def end_date(start: str, weeks: int) -> str:
        import datetime as dt

        return (dt.date.fromisoformat(start) + dt.timedelta(days=7 * weeks - 1)).isoformat()

    def book(request: dict) -> dict:
        if not re.fullmatch(r"\d{4}-\d\d-\d\d", request["start_date"]):
            raise BookingRejected(f"HTTP 400 Bad Request: start_date '{request['start_date']}' does not match "
                                  f"YYYY-MM-DD")
        io = re.search(r"wants (\d+) shelter faces in zone (\w)", brief_text)
        for s in request["shelters"]:
            if s not in INVENTORY or INVENTORY[s][0] != io.group(2):
                raise BookingRejected(f"HTTP 404 Not Found: shelter {s} not found in the zone {io.group(2)} "
                                      f"inventory")
        if len(request["shelters"]) != int(io.group(1)):
            raise BookingRejected(f"HTTP 422 Unprocessable Entity: insertion order {key} requests "
                                  f"{io.group(1)} faces, booking holds {len(request['shelters'])}")
        end = end_date(request["start_date"], request["weeks"])
        for s in request["shelters"]:
            if s in BOOKED and BOOKED[s][0] <= end and request["start_date"] <= BOOKED[s][1]:
                raise BookingRejected(f"HTTP 409 Conflict: {s} is booked {BOOKED[s][0]}..{BOOKED[s][1]} by order "
                                      f"{BOOKED[s][2]}")
            if request["category"] in ("alcohol", "gambling") and INVENTORY[s][2] < 200:
                raise BookingRejected(f"HTTP 451 Unavailable For Legal Reasons: {s} is {INVENTORY[s][2]} m from a "
                                      f"school; category {request['category']} not permitted (bylaw 14.2)")
        return {"status": 201, "campaign": f"CMP-{key}", "faces": len(request["shelters"]), "end_date": end}

    with OtlpRecording(path, AGENT) as tracer:
        try:
            with tracer.start_as_current_span(AGENT) as root:
                span_io(root, "AGENT", {"brief": brief_text})
                root.set_attribute("agent.name", AGENT)
                brief = chat("Read the advertiser's brief into JSON: advertiser, category, faces, zone, weeks, "
                             "start_date.", brief_text)
                with tracer.start_as_current_span("zoning_rules") as s:
                    query = f"advertising restrictions zone {brief['zone']} category {brief['category']}"
                    zone = "A" if active("shelter.rules_zone") else brief["zone"]
                    rules = RULES[zone]
                    span_io(s, "RETRIEVER", {"query": query}, {"documents": [{"zone": zone, "text": r} for r in rules]})
                    for i, r in enumerate(rules):
                        s.set_attribute(f"retrieval.documents.{i}.document.content", r)
                        s.set_attribute(f"retrieval.documents.{i}.document.id", f"rule-{zone}-{i + 1}")
                with tracer.start_as_current_span("inventory_search") as s:
                    found = sorted(x for x, v in INVENTORY.items() if v[0] == brief["zone"])
                    span_io(s, "TOOL", {"zone": brief["zone"]}, {"shelters": found})
                    s.set_attribute("tool.name", "inventory_search")
                candidates = []
                for shelter in found:
                    with tracer.start_as_current_span("check_availability") as s:
                        start = brief["start_date"] if re.fullmatch(r"\d{4}-\d\d-\d\d", brief["start_date"]) \
                            else "-".join(reversed(brief["start_date"].split(".")))
                        end = end_date(start, brief["weeks"])
                        hold = BOOKED.get(shelter)
                        free = not (hold and hold[0] <= end and start <= hold[1])
                        as_of = "2027-01-10"
                        if active("shelter.avail_cache"):
                            free, as_of = True, "2026-10-02"
                        out = {"shelter": shelter, "available": free, "as_of": as_of}
                        span_io(s, "TOOL", {"shelter": shelter, "from": start, "to": end}, out)
                        s.set_attribute("tool.name", "check_availability")
                    with tracer.start_as_current_span("score_shelter") as s:
                        _, footfall, school_m, rate = INVENTORY[shelter]
                        cand = {"shelter": shelter, "available": free, "school_m": school_m,
                                "price_eur": rate * brief["weeks"], "score": round(footfall / rate, 2)}
                        span_io(s, "CHAIN", {"shelter": shelter, "footfall": footfall, "rate": rate}, cand)
                    candidates.append(cand)
                with tracer.start_as_current_span("compliance_agent") as sub:
                    sub.set_attribute("agent.name", "compliance_agent")
                    review = chat("You are the compliance agent: exclude shelters the zone rules forbid for the "
                                  "category. Answer JSON.", {"category": brief["category"], "rules": rules,
                                                             "candidates": candidates})
                    with tracer.start_as_current_span("log_compliance_review") as s:
                        out = {"review": f"CR-{key}", "excluded": review["excluded"]}
                        span_io(s, "TOOL", review, out)
                        s.set_attribute("tool.name", "log_compliance_review")
                    span_io(sub, "AGENT", {"candidates": len(candidates)}, review)
                package = chat("Select the package: the best-scoring available, permitted shelters for the brief. "
                               "Answer JSON.", {"brief": brief, "candidates": candidates,
                                                "excluded": review["excluded"]})
                with tracer.start_as_current_span("book_campaign") as s:
                    request = {"advertiser": brief["advertiser"], "category": brief["category"],
                               "start_date": brief["start_date"], "weeks": package["weeks"],
                               "shelters": package["shelters"], "total_eur": package["total_eur"]}
                    span_io(s, "TOOL", request)
                    s.set_attribute("tool.name", "book_campaign")
                    booked = book(request)
                    span_io(s, "TOOL", None, booked)
                root.set_attribute("output.value", json.dumps(booked))
        except BookingRejected:
            pass
