"""Equine transport bookings (route: openai_agents): the OpenAI Agents SDK recorded by TrajdebugProcessor."""
from __future__ import annotations

import json
from contextlib import contextmanager

from benchmarks.heldout.suite_x import kit

ROUTE = "openai_agents"
NAME = "equine-transport-desk"

# (name, owner): (ueln, weight_kg)
HORSES = {
    ("Bella Rosa", "Dunmore Farm"): ("372-004-2290", 540),
    ("Bella Rosa", "Kearney Stud"): ("372-004-1187", 515),
    ("Copper Glen", "Kearney Stud"): ("372-004-1351", 560),
    ("Midnight Ash", "Kearney Stud"): ("372-004-1402", 585),
    ("Salt Marsh", "Oranmore Yard"): ("372-009-0713", 498),
    ("Quiet Harbour", "Oranmore Yard"): ("372-009-0788", 530),
    ("Tiber Gold", "Dunmore Farm"): ("372-004-2304", 602),
    ("Lough Mist", "Dunmore Farm"): ("372-004-2311", 476),
}
CERTS = {u: {"ueln": u, "cert": f"HC-{u[-4:]}", "valid_from": "2026-12-13", "valid_to": "2026-12-23",
             "dest_country": "FR"} for (u, _) in HORSES.values()}
VEHICLES = {2: "HX-2", 3: "HX-3", 4: "HX-4"}
TOWNS = {"Deauville": "FR", "Chantilly": "FR", "Pau": "FR", "Newmarket": "GB"}


def _req(owner, names, to, date):
    return {"client": owner, "horses": names, "from": "Kildare", "to": to, "date": date, "vet_visit": "2026-12-12"}


REFS = [
    _req("Kearney Stud", ["Copper Glen", "Midnight Ash"], "Deauville", "2026-12-15"),
    _req("Dunmore Farm", ["Tiber Gold", "Lough Mist", "Bella Rosa"], "Chantilly", "2026-12-16"),
    _req("Oranmore Yard", ["Salt Marsh", "Quiet Harbour"], "Pau", "2026-12-17"),
    _req("Kearney Stud", ["Bella Rosa", "Copper Glen", "Midnight Ash"], "Chantilly", "2026-12-18"),
]
CASES = [
    dict(case="equine_subagent_wrong_entity", fault_kind="subagent_wrong_entity", fault_id="equine.pick_passport",
         input=_req("Kearney Stud", ["Midnight Ash", "Bella Rosa"], "Deauville", "2026-12-14"),
         root="generation gpt-4o-mini", marker="372-004-2290"),
    dict(case="equine_wrong_tool_args", fault_kind="wrong_tool_args", fault_id="equine.reserve_date",
         input=_req("Oranmore Yard", ["Quiet Harbour", "Salt Marsh"], "Chantilly", "2026-12-15"),
         root="generation gpt-4o-mini", marker="2026-12-12"),
    dict(case="equine_hallucinated_value", fault_kind="hallucinated_value", fault_id="equine.vehicle",
         input=_req("Dunmore Farm", ["Lough Mist", "Tiber Gold", "Bella Rosa"], "Pau", "2026-12-19"),
         root="generation gpt-4o-mini", marker="HB-7"),
    dict(case="equine_tool_ignores_argument", fault_kind="tool_ignores_argument", fault_id="equine.quote_stalls",
         input=_req("Kearney Stud", ["Copper Glen", "Bella Rosa", "Midnight Ash"], "Deauville", "2026-12-20"),
         root="quote_route", marker="HX-2"),
    dict(case="equine_context_pollution", fault_kind="context_pollution", fault_id="equine.horse_notes",
         input=_req("Dunmore Farm", ["Tiber Gold", "Lough Mist"], "Chantilly", "2026-12-21"),
         root="lookup_horse", marker="Newmarket"),
]


def _calls(messages):
    """(tool name, args, result text) for every answered tool call in a chat history."""
    named, out = {}, []
    for m in messages:
        for c in m.get("tool_calls") or []:
            named[c["id"]] = (c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
        if m.get("role") == "tool" and m.get("tool_call_id") in named:
            name, args = named[m["tool_call_id"]]
            content = m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
            out.append((name, args, content))
    return out


def policy(request):
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    users = [m["content"] for m in msgs if m["role"] == "user"]
    done = _calls(msgs)
    names = [n for n, _, _ in done]
    if system.startswith("You check"):
        horse, owner = json.loads(users[-1])["horse"], json.loads(users[-1])["owner"]
        if "search_passports" not in names:
            return Reply(tool_calls=(tool_call("search_passports", {"name": horse}),))
        if "fetch_health_cert" not in names:
            hits = json.loads(done[names.index("search_passports")][2])["results"]
            pick = hits[0] if kit.active("equine.pick_passport") else next(h for h in hits if h["owner"] == owner)
            return Reply(tool_calls=(tool_call("fetch_health_cert", {"ueln": pick["ueln"]}),))
        cert = json.loads(done[names.index("fetch_health_cert")][2])
        return json.dumps({"horse": horse, "ueln": cert["ueln"], "cert": cert["cert"],
                           "valid_from": cert["valid_from"], "fit_to_travel": True})
    req = json.loads(users[0])
    if system.startswith("You book"):
        checks = [json.loads(r) for n, _, r in done if n == "health_checker"]
        quote = json.loads(done[names.index("quote_route")][2])
        if "reserve_stalls" not in names:
            vehicle = "HB-7" if kit.active("equine.vehicle") else quote["vehicle"]
            date = req["vet_visit"] if kit.active("equine.reserve_date") else req["date"]
            return Reply(tool_calls=(tool_call("reserve_stalls", {"vehicle": vehicle, "date": date,
                                                                   "ueln": [json.loads(r)["ueln"] for n, _, r in done if n == "lookup_horse"]}),))
        if "file_movement" not in names:
            res = json.loads(done[names.index("reserve_stalls")][2])
            return Reply(tool_calls=(tool_call("file_movement", {
                "reservation": res["reservation"], "destination": quote["to"],
                "certs": [c["cert"] for c in checks]}),))
        return f"Booked: {done[names.index('file_movement')][2]}"
    # the transport desk
    if "lookup_horse" not in names:
        return Reply(tool_calls=tuple(tool_call("lookup_horse", {"name": h, "owner": req["client"]}) for h in req["horses"]))
    checked = [json.loads(a["input"])["horse"] for n, a, _ in done if n == "health_checker"]
    for h in req["horses"]:
        if h not in checked:
            return Reply(tool_calls=(tool_call("health_checker", {"input": json.dumps({"horse": h, "owner": req["client"]})}),))
    if "quote_route" not in names:
        dest = req["to"]
        for n, _, r in done:
            if n == "lookup_horse" and "->" in r:
                dest = r.rsplit("->", 1)[1].split(",")[0].strip()
        return Reply(tool_calls=(tool_call("quote_route", {"origin": req["from"], "to": dest,
                                                            "stalls": len(req["horses"])}),))
    if "transfer_to_booking_desk" not in names:
        return Reply(tool_calls=(tool_call("transfer_to_booking_desk", {}),))
    return "Handed over."


class Session:
    def __init__(self):
        from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
        from openai import AsyncOpenAI
        from trajdebug.testing import FakeModelServer

        set_tracing_disabled(False)
        self.server = FakeModelServer(policy, model="gpt-4o-mini").start()
        client = AsyncOpenAI(base_url=self.server.base_url, api_key="not-needed", max_retries=0)
        model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)

        @function_tool
        def lookup_horse(name: str, owner: str) -> str:
            """Find a horse in the client's stable register."""
            ueln, kg = HORSES[(name, owner)]
            row = {"name": name, "owner": owner, "ueln": ueln, "weight_kg": kg}
            if kit.active("equine.horse_notes") and name == "Lough Mist":
                row["last_movement"] = "Kildare -> Newmarket, 2026-11-02"
            return json.dumps(row)

        @function_tool
        def search_passports(name: str) -> str:
            """Search the equine passport database by horse name."""
            hits = [{"ueln": u, "name": n, "owner": o} for (n, o), (u, _) in sorted(HORSES.items()) if n == name]
            return json.dumps({"query": name, "results": hits})

        @function_tool
        def fetch_health_cert(ueln: str) -> str:
            """The export health certificate on file for a horse."""
            return json.dumps(CERTS[ueln])

        @function_tool
        def quote_route(origin: str, to: str, stalls: int) -> str:
            """Quote a horsebox route and vehicle for a number of stalls."""
            n = 2 if kit.active("equine.quote_stalls") else stalls
            return json.dumps({"from": origin, "to": to, "vehicle": VEHICLES[n], "stalls": n,
                               "price_eur": 900 + 350 * n,
                               "crossing": "Rosslare-Cherbourg" if TOWNS[to] == "FR" else "Dublin-Holyhead"})

        @function_tool(failure_error_function=None)
        def reserve_stalls(vehicle: str, date: str, ueln: list[str]) -> str:
            """Reserve stalls on a horsebox for a travel date."""
            if vehicle in VEHICLES.values():
                cap = int(vehicle[-1])
                if len(ueln) > cap:
                    raise RuntimeError(f"stall reservation rejected: {vehicle} has {cap} stalls, {len(ueln)} horses listed")
            self.reservations[f"RS-{vehicle}-{date}"] = json.dumps(ueln)
            return json.dumps({"reservation": f"RS-{vehicle}-{date}", "vehicle": vehicle, "date": date, "ueln": ueln})

        @function_tool(failure_error_function=None)
        def file_movement(reservation: str, destination: str, certs: list[str]) -> str:
            """File the movement notification with the animal-health authority."""
            _, v1, v2, *d = reservation.split("-")
            vehicle, date = f"{v1}-{v2}", "-".join(d)
            if vehicle not in VEHICLES.values():
                raise RuntimeError(f"movement notification refused: transporter vehicle {vehicle} has no "
                                   f"authorisation on file")
            by_cert = {c["cert"]: c for c in CERTS.values()}
            booked = json.loads(self.reservations[reservation])
            for cert in certs:
                c = by_cert[cert]
                if c["ueln"] not in booked:
                    raise RuntimeError(f"movement notification refused: certificate {cert} is issued to {c['ueln']}, "
                                       f"which is not in reservation {reservation}")
                if not c["valid_from"] <= date <= c["valid_to"]:
                    raise RuntimeError(f"movement notification refused: certificate {cert} not valid on {date} "
                                       f"(valid {c['valid_from']} to {c['valid_to']})")
                if TOWNS[destination] != c["dest_country"]:
                    raise RuntimeError(f"movement notification refused: destination {destination} "
                                       f"({TOWNS[destination]}) does not match certificate {cert} ({c['dest_country']})")
            return json.dumps({"notification": f"MN-{reservation[3:]}", "status": "accepted"})

        self.reservations: dict[str, str] = {}

        health = Agent(name="health_checker_agent", model=model, tools=[search_passports, fetch_health_cert],
                       instructions="You check a horse's export health certificate. Find the passport of the horse "
                                    "owned by the given owner, fetch its certificate, answer JSON.")
        booking = Agent(name="booking_desk", model=model, tools=[reserve_stalls, file_movement],
                        instructions="You book horsebox stalls for the quoted vehicle and file the movement notification.")
        self.desk = Agent(name="transport_desk", model=model, handoffs=[booking],
                          tools=[lookup_horse,
                                 health.as_tool(tool_name="health_checker",
                                                tool_description="Check one horse's export health certificate."),
                                 quote_route],
                          instructions="You are the transport desk: look up the horses, have each health "
                                       "certificate checked, get a route quote, then hand over to the booking desk.")

    def close(self):
        self.server.stop()


@contextmanager
def session():
    s = Session()
    try:
        yield s
    finally:
        s.close()


def record(sess: Session, path, request) -> None:
    from agents import RunConfig, Runner, set_trace_processors
    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    proc = TrajdebugProcessor(path=str(path), name=NAME)
    set_trace_processors([proc])
    sess.reservations.clear()
    try:
        Runner.run_sync(sess.desk, json.dumps(request), max_turns=30,
                        run_config=RunConfig(workflow_name=NAME, trace_metadata={"task": f"move {len(request['horses'])} horses to {request['to']}"}))
    except Exception:  # noqa: BLE001 - the run failed; the trace records why
        pass
    set_trace_processors([])
