"""Foraging course provider: prepares one course session (OTLP route: OpenTelemetry spans, OpenInference attributes)."""

from __future__ import annotations

import json
import re

import kit
from _common import chat_client, dumps, last_user, otlp_dump, otlp_tracer, set_output, span, system_of

NAME = "wildlarder-foraging-sessions"
ROUTE = "otlp"
DOMAIN = "foraging course provider: sessions"
SHAPE = ("agent span; load the session, bookings and landowner permit tools; screen each participant; species "
         "planner sub-agent (site lookup tool, model picks the site, season calendar tool, model picks species, "
         "parse); group notes to memory; lunch order, joining instructions (tools); split into groups; model "
         "writes the safety brief, parse; validator (OTLP/JSON)")
EXT = "json"

SITES = {
    "Leigh Woods": {"habitat": "woodland", "grid": "ST 5602 7385"},
    "Leigh Marsh": {"habitat": "saltmarsh", "grid": "ST 4021 9810"},
    "Ashton Hill": {"habitat": "grassland", "grid": "ST 5270 6940"},
    "Ashton Vale": {"habitat": "wetland", "grid": "ST 5640 7020"},
    "Brean Down": {"habitat": "coastal", "grid": "ST 2960 5890"},
    "Brean Dunes": {"habitat": "dunes", "grid": "ST 3010 5600"},
}
CALENDAR = {
    ("woodland", "autumn"): ["chanterelle", "hedgehog fungus", "sweet chestnut", "hazelnut"],
    ("woodland", "spring"): ["wild garlic", "wood sorrel", "hawthorn leaf"],
    ("saltmarsh", "autumn"): ["sea aster", "sea purslane", "samphire"],
    ("grassland", "autumn"): ["field mushroom", "parasol", "blackberry"],
    ("coastal", "spring"): ["sea beet", "alexanders", "rock samphire"],
    ("wetland", "spring"): ["watercress", "water mint"],
    ("dunes", "spring"): ["sea holly", "sea rocket"],
}
NAMES = ["Amir", "Bella", "Chen", "Dara", "Efe", "Finn", "Gwen", "Hari", "Isla", "Jude", "Kemi", "Lars", "Mina",
         "Noor", "Owen", "Pia", "Quinn", "Rosa", "Sol", "Tara"]
ALLERGY = {"Bella": ["nuts"], "Efe": ["gluten"], "Isla": ["nuts"], "Noor": ["dairy"], "Rosa": ["gluten"],
           "Kemi": ["sesame"], "Sol": ["nuts"]}
SESSIONS = [
    dict(session="FS-901", site="Leigh Woods", season="autumn", date="2026-10-03", people=NAMES[0:8]),
    dict(session="FS-902", site="Ashton Hill", season="autumn", date="2026-10-10", people=NAMES[4:11]),
    dict(session="FS-903", site="Brean Down", season="spring", date="2026-04-18", people=NAMES[8:17]),
    dict(session="FS-904", site="Leigh Woods", season="spring", date="2026-04-25", people=NAMES[12:20]),
    dict(session="FS-905", site="Ashton Hill", season="autumn", date="2026-10-17", people=NAMES[1:8] + ["Rosa"]),
]
BY_SESSION = {s["session"]: s for s in SESSIONS}
BOUNCING = {"Hari"}
MEMORY: dict = {}

INPUTS = [{"session": s["session"], "request": "Prepare session %s: %s foraging walk at %s on %s." % (
    s["session"], s["season"], s["site"], s["date"])} for s in SESSIONS]

C_OBO, C_HALLU, C_SWALLOW, C_SUB, C_MEM = "zzq-for-1", "zzq-for-2", "zzq-for-3", "zzq-for-4", "zzq-for-5"
CASES = [
    dict(id=C_OBO, input=2, kind="off_by_one", root=("split_groups", 1, "other"), failure=("validate_session", 1),
         description="split_groups slices each group one short (i to i+size-1), so the sixth participant of "
                     "every block is left out of all groups"),
    dict(id=C_HALLU, input=3, kind="hallucinated_value", root=("ChatCompletion", 3, "llm"),
         failure=("validate_session", 1),
         description="the safety-brief model gives the meeting point as grid reference ST 5620 7390, which "
                     "no input holds (the permit's is ST 5602 7385)"),
    dict(id=C_SWALLOW, input=1, kind="swallowed_error", root=("send_joining_instructions", 1, "tool"),
         failure=("validate_session", 1),
         description="send_joining_instructions catches Hari's bounced e-mail and reports the batch as sent "
                     "without the text-message fallback"),
    dict(id=C_SUB, input=0, kind="subagent_wrong_entity", root=("ChatCompletion", 1, "llm"),
         failure=("validate_session", 1),
         description="inside the species-planner sub-agent the model picks Leigh Marsh from the site lookup "
                     "instead of Leigh Woods, so saltmarsh species are planned for a woodland walk"),
    dict(id=C_MEM, input=4, kind="bad_memory_write", root=("remember_group", 1, "other"),
         failure=("validate_session", 1),
         description="remember_group writes the last participant's allergens to the session memory instead of "
                     "the whole group's, so the lunch order has no nut-free meals"),
]


def brain(request):
    system = system_of(request)
    user = json.loads(last_user(request))
    if system.startswith("You choose the site"):
        cands = user["candidates"]
        pick = next(c for c in cands if c["site"] == user["asked"])
        if kit.on(C_SUB):
            pick = next(c for c in cands if c["site"] != user["asked"])
        return "Site: %s (%s)" % (pick["site"], pick["habitat"])
    if system.startswith("You plan the species"):
        return json.dumps({"species": user["calendar"]["species"][:3]})
    if system.startswith("You write the safety brief"):
        grid = "ST 5620 7390" if kit.on(C_HALLU) else user["permit"]["grid"]
        return ("Meet at grid reference %s at 09:45. %d participants in %d groups. Never eat anything before the "
                "leader confirms it. Species today: %s." % (grid, user["participants"], user["groups"],
                                                           ", ".join(user["species"])))
    return "I cannot help with that."


def record(server, inp: dict, path: str) -> None:
    server.use(brain)
    client = chat_client(server)
    tracer = otlp_tracer().get_tracer("wildlarder")
    MEMORY.clear()

    def tool(name, args):
        return span(tracer, name, "TOOL", args, **{"tool.name": name})

    try:
        with span(tracer, NAME, "AGENT", inp) as root:
            with span(tracer, "load_session", "CHAIN", inp) as s:
                sess = BY_SESSION[re.search(r"FS-\d+", inp["request"]).group(0)]
                req = {"session": sess["session"], "site": sess["site"], "season": sess["season"], "date": sess["date"]}
                set_output(s, req)
            with tool("fetch_bookings", {"session": req["session"]}) as s:
                bookings = [{"name": n, "email": "%s@example.org" % n.lower(), "phone": "07700 900%03d" % i,
                             "allergies": ALLERGY.get(n, [])} for i, n in enumerate(sess["people"])]
                set_output(s, bookings)
            with tool("fetch_site_permit", {"site": req["site"], "date": req["date"]}) as s:
                permit = {"site": req["site"], "grid": SITES[req["site"]]["grid"], "max_group": 6,
                          "permit": "LP-%s" % req["session"][-3:]}
                set_output(s, permit)
            screened = []
            for b in bookings:
                with span(tracer, "screen_participant", "CHAIN", b) as s:
                    p = {"name": b["name"], "allergies": b["allergies"], "needs_note": bool(b["allergies"])}
                    screened.append(p)
                    set_output(s, p)
            with span(tracer, "species_planner", "AGENT", {"site": req["site"], "season": req["season"]}) as sub:
                with tool("resolve_site", {"name": req["site"]}) as s:
                    first = req["site"].split()[0]
                    cands = [{"site": k, "habitat": v["habitat"]} for k, v in sorted(SITES.items())
                             if k.split()[0] == first]
                    set_output(s, cands)
                reply = client.chat.completions.create(model="fake-model", messages=[
                    {"role": "system", "content": "You choose the site record a course session is at. Answer 'Site: "
                                                  "NAME (habitat)'."},
                    {"role": "user", "content": dumps({"asked": req["site"], "candidates": cands})}])
                site_name = re.match(r"Site: (.+) \(", reply.choices[0].message.content).group(1)
                with tool("fetch_season_calendar", {"site": site_name, "season": req["season"]}) as s:
                    cal = {"site": site_name, "season": req["season"],
                           "species": CALENDAR[(SITES[site_name]["habitat"], req["season"])]}
                    set_output(s, cal)
                reply = client.chat.completions.create(model="fake-model", messages=[
                    {"role": "system", "content": "You plan the species a foraging walk teaches. Answer JSON "
                                                  "{\"species\": [...]}, at most three."},
                    {"role": "user", "content": dumps({"calendar": cal})}])
                with span(tracer, "parse_species", "CHAIN", reply.choices[0].message.content) as s:
                    species = json.loads(reply.choices[0].message.content)["species"]
                    set_output(s, species)
                set_output(sub, species)
            with span(tracer, "remember_group", "CHAIN", {"session": req["session"], "screened": screened}) as s:
                allergens = []
                for p in screened:
                    if kit.on(C_MEM):
                        allergens = list(p["allergies"])
                    else:
                        allergens += [a for a in p["allergies"] if a not in allergens]
                MEMORY[req["session"]] = {"headcount": len(screened), "allergens": sorted(allergens)}
                set_output(s, MEMORY[req["session"]])
            note = MEMORY[req["session"]]
            with tool("order_lunch", {"session": req["session"], "headcount": note["headcount"],
                                      "free_from": note["allergens"]}) as s:
                lunch = {"order": "L-%s" % req["session"][-3:], "meals": note["headcount"] + 1,
                         "free_from": note["allergens"]}
                set_output(s, lunch)
            with tool("send_joining_instructions", {"session": req["session"],
                                                    "to": [b["email"] for b in bookings]}) as s:
                sent = []
                for b in bookings:
                    try:
                        if b["name"] in BOUNCING:
                            raise ConnectionError("550 mailbox unavailable: %s" % b["email"])
                        sent.append({"name": b["name"], "via": "email"})
                    except ConnectionError:
                        if kit.on(C_SWALLOW):
                            continue
                        sent.append({"name": b["name"], "via": "sms"})
                set_output(s, {"sent": len(sent), "to": sent})
            with span(tracer, "split_groups", "CHAIN", {"people": [p["name"] for p in screened],
                                                        "max_group": permit["max_group"]}) as s:
                names = [p["name"] for p in screened]
                size = permit["max_group"]
                cut = size - 1 if kit.on(C_OBO) else size
                groups = [names[i:i + cut] for i in range(0, len(names), size)]
                set_output(s, groups)
            reply = client.chat.completions.create(model="fake-model", messages=[
                {"role": "system", "content": "You write the safety brief for a foraging walk: meeting point grid "
                                              "reference, numbers, rules, species."},
                {"role": "user", "content": dumps({"permit": permit, "participants": sum(map(len, groups)),
                                                   "groups": len(groups), "species": species})}])
            with span(tracer, "parse_brief", "CHAIN", reply.choices[0].message.content) as s:
                brief = {"grid": re.search(r"grid reference (ST \d{4} \d{4})", reply.choices[0].message.content).group(1),
                         "text": reply.choices[0].message.content}
                set_output(s, brief)
            with span(tracer, "validate_session", "CHAIN", {"session": req["session"], "species": species,
                                                            "lunch": lunch, "groups": groups, "brief": brief}) as s:
                habitat = SITES[sess["site"]]["habitat"]
                allowed = CALENDAR[(habitat, sess["season"])]
                for sp in species:
                    if sp not in allowed:
                        raise ValueError("%s is not on the %s calendar for %s (%s)" % (sp, sess["season"], sess["site"], habitat))
                needed = sorted({a for n in sess["people"] for a in ALLERGY.get(n, [])})
                missing = [a for a in needed if a not in lunch["free_from"]]
                if missing:
                    raise ValueError("lunch order %s is not %s-free; the group needs %s" % (
                        lunch["order"], "/".join(missing), ", ".join(needed)))
                reached = {x["name"] for x in sent}
                if reached != set(sess["people"]):
                    raise ValueError("joining instructions reached %d of %d participants; not %s" % (
                        len(reached), len(sess["people"]), ", ".join(sorted(set(sess["people"]) - reached))))
                placed = [n for g in groups for n in g]
                if sorted(placed) != sorted(sess["people"]):
                    raise ValueError("groups hold %d of %d participants; %s in no group" % (
                        len(placed), len(sess["people"]), ", ".join(sorted(set(sess["people"]) - set(placed)))))
                if brief["grid"] != SITES[sess["site"]]["grid"]:
                    raise ValueError("brief gives the meeting point as %s; the permit's grid reference is %s" % (
                        brief["grid"], SITES[sess["site"]]["grid"]))
                set_output(s, {"ok": True})
            set_output(root, brief["text"])
    except ValueError:
        pass
    otlp_dump(path)
