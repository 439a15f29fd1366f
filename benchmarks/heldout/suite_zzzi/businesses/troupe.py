"""Unicycle and stilt-walking troupe bookings (otlp route): a model that calls a venue tool, a router, a per-act loop with a ledger, a retried insurance call."""
import json

from openai import OpenAI

from businesses._otel import span, step

NAME = "troupe-bookings"
SHORT = "troupe"
ROUTE = "otlp"
DOMAIN = "unicycle and stilt-walking troupe's bookings"
SHAPE = "OTLP: model extraction with a venue tool call -> parse -> venue tool -> event router -> per act: roster retrieval, requirements tool, clearance, ledger write -> kit list -> insurance (retried) -> model letter -> contract issue"
ACTIVE = None

VENUES = {
    "Corn Exchange Square": {"indoor": False, "clearance_m": None, "ground": "cobbles", "private": False},
    "Old Corn Exchange": {"indoor": True, "clearance_m": 3.2, "ground": "sprung floor", "private": False},
    "Hartwell House gardens": {"indoor": False, "clearance_m": None, "ground": "lawn", "private": True},
    "Leeds Town Hall": {"indoor": True, "clearance_m": 7.5, "ground": "parquet", "private": False},
    "Brighton seafront": {"indoor": False, "clearance_m": None, "ground": "tarmac", "private": False},
    "Kelvingrove bandstand": {"indoor": False, "clearance_m": None, "ground": "stage", "private": False},
}
ACTS = {
    "stilt parade": {"height_m": 3.4, "kit": ["stilts 90 cm", "spotter vests", "first-aid kit"]},
    "giraffe unicycle": {"height_m": 3.1, "kit": ["giraffe unicycle", "spotter vests", "crash mat", "first-aid kit"]},
    "fire juggling on unicycle": {"height_m": 2.6, "kit": ["unicycle", "fire wicks", "fire blanket", "extinguisher", "first-aid kit"]},
    "walkabout giants": {"height_m": 3.8, "kit": ["stilts 120 cm", "costume frames", "spotter vests"]},
    "unicycle hockey demo": {"height_m": 2.2, "kit": ["unicycles x6", "hockey sticks", "cones"]},
}
ROSTER = {"stilt parade": ["Maud", "Tiago"], "giraffe unicycle": ["Ines", "Kofi"], "fire juggling on unicycle": ["Rhiannon"],
          "walkabout giants": ["Tiago", "Bea"], "unicycle hockey demo": ["Kofi", "Sven", "Ola"]}
LAST_SEASON = dict(ROSTER, **{"giraffe unicycle": ["Jules", "Kofi"]})
MEMBERS = {"Maud", "Tiago", "Ines", "Kofi", "Rhiannon", "Bea", "Sven", "Ola"}

INPUTS = [
    {"client": "Corn Exchange Square festival", "venue": "Corn Exchange Square", "date": "2027-07-10", "acts": ["stilt parade", "giraffe unicycle", "fire juggling on unicycle"]},
    {"client": "Hartwell House wedding", "venue": "Hartwell House gardens", "date": "2027-06-12", "acts": ["stilt parade", "unicycle hockey demo"]},
    {"client": "Leeds winter gala", "venue": "Leeds Town Hall", "date": "2027-12-04", "acts": ["walkabout giants", "giraffe unicycle", "stilt parade", "unicycle hockey demo"]},
    {"client": "Brighton Fringe opening", "venue": "Brighton seafront", "date": "2027-05-01", "acts": ["walkabout giants", "fire juggling on unicycle", "giraffe unicycle", "unicycle hockey demo", "stilt parade"]},
    {"client": "Glasgow park day", "venue": "Kelvingrove bandstand", "date": "2027-08-21", "acts": ["giraffe unicycle", "unicycle hockey demo"]},
]

CASES = [
    {"input": 0, "switch": "hall_args", "kind": "wrong_tool_args", "root": ("ChatCompletion", 1), "failure": ("clearance_check", 1),
     "description": "The model calls the venue lookup for the Old Corn Exchange hall instead of the open-air Corn Exchange Square the client booked."},
    {"input": 2, "switch": "last_season", "kind": "stale_data", "root": ("performer_roster", 2), "failure": ("issue_contract", 1),
     "description": "The roster for the giraffe unicycle act comes from last season and names Jules, who has left the troupe."},
    {"input": 3, "switch": "ledger_key", "kind": "bad_memory_write", "root": ("roster_ledger", 4), "failure": ("issue_contract", 1),
     "description": "The ledger entry for the unicycle hockey demo is saved under the key of the giraffe unicycle act, so one act has no performers booked."},
    {"input": 1, "switch": "street_route", "kind": "wrong_routing", "root": ("classify_event", 1), "failure": ("insurance_quote", 2),
     "description": "The event router files the Hartwell House garden wedding as a public street event."},
    {"input": 4, "switch": "short_kit", "kind": "truncated_result", "root": ("act_requirements", 1), "failure": ("contract_check", 1),
     "description": "The requirements tool returns only the first two kit items of the giraffe unicycle act, without the crash mat."},
]


def policy(request):
    msgs = request.body["messages"]
    last = msgs[-1]
    if last["role"] == "user" and last["content"].startswith("Booking email"):
        ask = json.loads(last["content"].split("EMAIL:", 1)[1])
        venue = "Old Corn Exchange" if ACTIVE == "hall_args" else ask["venue"]
        from trajdebug.testing import Reply, tool_call
        return Reply(text=json.dumps({"client": ask["client"], "date": ask["date"], "acts": ask["acts"]}),
                     tool_calls=(tool_call("venue_lookup", {"venue": venue}),))
    if last["content"].startswith("Write the booking letter"):
        data = json.loads(last["content"].split("DATA:", 1)[1])
        return f"Dear {data['client']}, we confirm {len(data['acts'])} acts on {data['date']} for a fee of {data['fee_gbp']:.2f} GBP."
    return "I can only help with bookings."


def classify_event(venue):
    if ACTIVE == "street_route":
        return "street" if not venue["indoor"] else "indoor"
    if venue["indoor"]:
        return "indoor"
    return "private grounds" if venue["private"] else "street"


def act_requirements(act):
    kit = ACTS[act]["kit"]
    return {"act": act, "height_m": ACTS[act]["height_m"], "kit": kit[:2] if ACTIVE == "short_kit" and act == "giraffe unicycle" else kit}


def performer_roster(act):
    table = LAST_SEASON if ACTIVE == "last_season" and act == "giraffe unicycle" else ROSTER
    return {"act": act, "performers": table[act]}


def clearance_check(req, venue):
    if venue["indoor"] and req["height_m"] + 0.5 > venue["clearance_m"]:
        raise ValueError(f"{req['act']} needs {req['height_m'] + 0.5:.1f} m of headroom; the hall has {venue['clearance_m']} m")
    return {"act": req["act"], "clear": True}


def roster_ledger(ledger, acts, i, crew):
    key = acts[i - 1] if ACTIVE == "ledger_key" and acts[i] == "unicycle hockey demo" else acts[i]
    ledger[key] = crew["performers"]
    return {"entry": key, "performers": crew["performers"]}


def insurance_quote(kind, venue_name, attempts):
    attempts["n"] += 1
    if attempts["n"] == 1:
        raise ConnectionError("underwriter gateway reset the connection")
    if kind == "street" and VENUES[venue_name]["private"]:
        raise ValueError(f"street performance cover is not written for private grounds ({venue_name})")
    return {"class": kind, "premium_gbp": {"street": 240.0, "indoor": 180.0, "private grounds": 210.0}[kind]}


def kit_list(reqs):
    items = []
    for r in reqs:
        items += [k for k in r["kit"] if k not in items]
    return {"items": items}


def contract_check(acts, kit):
    for act in acts:
        for item in ACTS[act]["kit"]:
            assert item in kit["items"], f"kit list lacks {item!r}, which the safety sheet requires for the {act}"
    return {"ok": True}


def issue_contract(booking, ledger, insurance):
    for act in booking["acts"]:
        crew = ledger.get(act)
        if not crew:
            raise ValueError(f"no performers booked for the {act} on {booking['date']}")
        for p in crew:
            if p not in MEMBERS:
                raise ValueError(f"{p} is not a current troupe member and cannot be contracted for the {act}")
    return {"contract": f"TRP-{booking['date'].replace('-', '')}", "premium_gbp": insurance["premium_gbp"]}


def record(inp, ctx, tracer):
    client = OpenAI(base_url=ctx.server.base_url, api_key="not-needed", max_retries=0)
    tools = [{"type": "function", "function": {"name": "venue_lookup", "parameters": {"type": "object", "properties": {"venue": {"type": "string"}}}}}]
    try:
        with span(tracer, NAME, "AGENT", f"Book {', '.join(inp['acts'])} for {inp['client']} on {inp['date']}") as top:
            reply = client.chat.completions.create(model="fake-model", tools=tools, messages=[
                {"role": "system", "content": "You read booking emails for the troupe and look up the venue."},
                {"role": "user", "content": "Booking email. EMAIL:" + json.dumps(inp)}]).choices[0].message
            booking = step(tracer, "parse_booking", "CHAIN", reply.content, json.loads, reply.content)
            args = json.loads(reply.tool_calls[0].function.arguments)
            with span(tracer, "venue_lookup", "TOOL", args) as box:
                box["out"] = venue = dict(VENUES[args["venue"]], name=args["venue"])
            kind = step(tracer, "classify_event", "CHAIN", venue, classify_event, venue)
            ledger, reqs = {}, []
            for i, act in enumerate(booking["acts"]):
                crew = step(tracer, "performer_roster", "RETRIEVER", {"act": act, "date": booking["date"]}, performer_roster, act)
                req = step(tracer, "act_requirements", "TOOL", {"act": act}, act_requirements, act)
                reqs.append(req)
                step(tracer, "clearance_check", "CHAIN", {"requirements": req, "venue": venue}, clearance_check, req, venue)
                step(tracer, "roster_ledger", "CHAIN", {"act": act, "crew": crew}, roster_ledger, ledger, booking["acts"], i, crew)
            kit = step(tracer, "kit_list", "CHAIN", reqs, kit_list, reqs)
            attempts = {"n": 0}
            insurance = None
            for _ in range(2):
                try:
                    insurance = step(tracer, "insurance_quote", "TOOL", {"class": kind, "venue": venue["name"]}, insurance_quote, kind, venue["name"], attempts)
                    break
                except ConnectionError:
                    continue
            fee = 350.0 * len(booking["acts"]) + insurance["premium_gbp"]
            letter = client.chat.completions.create(model="fake-model", messages=[
                {"role": "user", "content": "Write the booking letter. DATA:" + json.dumps(dict(booking, fee_gbp=fee))}]).choices[0].message.content
            step(tracer, "contract_check", "CHAIN", {"acts": booking["acts"], "kit": kit}, contract_check, booking["acts"], kit)
            top["out"] = step(tracer, "issue_contract", "TOOL", {"booking": booking, "ledger": ledger, "letter": letter}, issue_contract, booking, ledger, insurance)
    except Exception:
        pass
    finally:
        client.close()
