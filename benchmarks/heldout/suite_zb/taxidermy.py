"""Taxidermy commission desk (OpenAI Agents SDK: desk agent, provenance agent as a tool, hand-off to the bench scheduler)."""
from __future__ import annotations

import datetime as dt
import json

from .kit import active
from .routes import agent_history, agents_model

NAME = "taxidermy-commissions"
ROUTE = "openai_agents"
DOMAIN = "taxidermy commissions"
SHAPE = "desk agent (client, specimen, species register, provenance agent-as-tool, quote, cure estimate) -> hand-off -> scheduler agent (bench slots, book)"


class CommissionBookingRejected(Exception):
    pass


Rejected = CommissionBookingRejected

SPECIES = {
    "Vulpes vulpes": {"common": "red fox", "protected": False, "rate": 38.0},
    "Tyto alba": {"common": "barn owl", "protected": True, "rate": 55.0},
    "Phasianus colchicus": {"common": "pheasant", "protected": False, "rate": 22.0},
    "Meles meles": {"common": "badger", "protected": True, "rate": 48.0},
    "Lepus europaeus": {"common": "brown hare", "protected": False, "rate": 30.0},
    "Accipiter nisus": {"common": "sparrowhawk", "protected": True, "rate": 52.0},
}
SPECIMENS = {
    "SP-1180": {"species": "Tyto alba", "length_cm": 34, "licence": "A10-2231", "cause": "road casualty"},
    "SP-1181": {"species": "Tyto alba", "length_cm": 36, "licence": "A10-2240", "cause": "window strike"},
    "SP-1190": {"species": "Vulpes vulpes", "length_cm": 68, "licence": None, "cause": "road casualty"},
    "SP-1201": {"species": "Phasianus colchicus", "length_cm": 58, "licence": None, "cause": "shoot"},
    "SP-1205": {"species": "Meles meles", "length_cm": 74, "licence": "GL-0917", "cause": "road casualty"},
    "SP-1210": {"species": "Lepus europaeus", "length_cm": 55, "licence": None, "cause": "natural"},
    "SP-1214": {"species": "Accipiter nisus", "length_cm": 31, "licence": "A10-2302", "cause": "window strike"},
}
LICENCES = {"A10-2231": "SP-1180", "A10-2240": "SP-1181", "GL-0917": "SP-1205", "A10-2302": "SP-1214"}
BOOKED = {("2026-04-14", "B2"): "C-0412"}

INPUTS = {
    "owl": {"commission": "C-0420", "client": "Hartley Hall Museum", "specimen": "SP-1181", "mount": "full", "received": "2026-03-30"},
    "fox": {"commission": "C-0421", "client": "J. Pemberton", "specimen": "SP-1190", "mount": "full", "received": "2026-03-31"},
    "r1": {"commission": "C-0401", "client": "Fenwick Inn", "specimen": "SP-1201", "mount": "flying", "received": "2026-03-02"},
    "r2": {"commission": "C-0405", "client": "Dales Visitor Centre", "specimen": "SP-1205", "mount": "full", "received": "2026-03-09"},
    "r3": {"commission": "C-0409", "client": "M. Okoro", "specimen": "SP-1210", "mount": "full", "received": "2026-03-16"},
    "r4": {"commission": "C-0414", "client": "Castle Museum", "specimen": "SP-1214", "mount": "perched", "received": "2026-03-23"},
}
REFS = ["r1", "r2", "r3", "r4"]

_GEN = "generation scripted-planner"
CASES = [
    dict(id="zb_taxi_1", fault="tx1", kind="wrong_routing", input="owl", root=(_GEN, 5), failure=("book_commission", 1),
         description="The desk model hands a protected owl to the scheduler before the provenance agent has checked its licence."),
    dict(id="zb_taxi_2", fault="tx2", kind="wrong_tool_args", input="fox", root=(_GEN, 3), failure=("book_commission", 1),
         description="The desk model asks for a quote on a shoulder mount when the commission is for a full mount."),
    dict(id="zb_taxi_3", fault="tx3", kind="subagent_wrong_entity", input="owl", root=(_GEN, 5), failure=("book_commission", 1),
         description="The desk model asks the provenance agent about the previous owl specimen, whose licence is valid, instead of this one."),
    dict(id="zb_taxi_4", fault="tx4", kind="hallucinated_value", input="fox", root=(_GEN, 7), failure=("book_commission", 1),
         description="The scheduler model states a two-week cure for a fox the cure estimate put at six weeks and books delivery too early."),
    dict(id="zb_taxi_5", fault="tx5", kind="stale_data", input="owl", root=("list_bench_slots", 1), failure=("book_commission", 1),
         description="The bench-slot list comes from a cache that still shows a slot another commission took."),
]


def task(inp: dict) -> str:
    return f"take commission {inp['commission']} for {inp['client']}: {inp['mount']} mount of specimen {inp['specimen']}"


def initial_state(inp: dict) -> dict:
    return {}


def _commission(text: str) -> dict:
    return next(v for v in INPUTS.values() if v["commission"] in text)


def policy(request):
    system, done = agent_history(request)
    names = [d[0] for d in done]
    res = {d[0]: d[2] for d in done}
    args = {d[0]: d[1] for d in done}
    msgs = request.body["messages"]
    first_user = next(m["content"] for m in msgs if m["role"] == "user")
    if "ROLE: provenance" in system:
        sp = first_user.split("specimen ")[1].split()[0].strip(".,")
        if "fetch_specimen_record" not in names:
            return _call("fetch_specimen_record", {"specimen": sp})
        if "verify_licence" not in names:
            return _call("verify_licence", {"licence": res["fetch_specimen_record"]["licence"] or "none"})
        v = res["verify_licence"]
        return json.dumps({"specimen": sp, "licence": v["licence"], "valid": v["valid"], "registered_to": v["specimen"]})
    inp = _commission(first_user)
    if "ROLE: desk" in system:
        if "fetch_specimen_record" not in names:
            return _call("fetch_specimen_record", {"specimen": inp["specimen"]})
        rec = res["fetch_specimen_record"]
        if "check_species_register" not in names:
            return _call("check_species_register", {"species": rec["species"]})
        if "quote_mount" not in names:
            mount = "shoulder" if active("tx2") else inp["mount"]
            return _call("quote_mount", {"species": rec["species"], "mount": mount, "length_cm": rec["length_cm"]})
        if "estimate_cure_days" not in names:
            return _call("estimate_cure_days", {"species": rec["species"], "length_cm": rec["length_cm"]})
        protected = res["check_species_register"]["protected"]
        if protected and "provenance_agent" not in names and not active("tx1"):
            sp = "SP-1180" if active("tx3") else inp["specimen"]
            return _call("provenance_agent", {"input": f"Check the licence for specimen {sp}."})
        return _call("transfer_to_bench_scheduler", {})
    if "ROLE: scheduler" in system:
        if "list_bench_slots" not in names:
            return _call("list_bench_slots", {"from_date": inp["received"]})
        cure = res["estimate_cure_days"]["cure_days"]
        if active("tx4"):
            cure = 14
        slot = res["list_bench_slots"]["slots"][0]
        ready = dt.date.fromisoformat(slot["date"]) + dt.timedelta(days=cure + 3)
        prov = res.get("provenance_agent")
        if "book_commission" not in names:
            return _call("book_commission", {
                "commission": inp["commission"], "specimen": inp["specimen"], "bench_date": slot["date"],
                "bench": slot["bench"], "quote": res["quote_mount"], "delivery": ready.isoformat(),
                "licence_checked": prov if isinstance(prov, dict) else None})
        return f"Commission {inp['commission']} booked for {slot['date']} on bench {slot['bench']}."
    raise ValueError("unknown role")


def _call(name, arguments):
    from trajdebug.testing import Reply, tool_call

    return Reply(tool_calls=(tool_call(name, arguments),))


def build_agents(client, inp: dict):
    from agents import Agent, function_tool

    model = agents_model(client)

    @function_tool
    def fetch_specimen_record(specimen: str) -> dict:
        """The specimen's intake record."""
        return {"specimen": specimen, **SPECIMENS[specimen]}

    @function_tool
    def check_species_register(species: str) -> dict:
        """Legal status of a species (protected species need an Article 10 or general licence)."""
        s = SPECIES[species]
        return {"species": species, "common": s["common"], "protected": s["protected"]}

    @function_tool
    def quote_mount(species: str, mount: str, length_cm: int) -> dict:
        """Price a mount."""
        base = SPECIES[species]["rate"] * length_cm / 10
        factor = {"full": 1.0, "shoulder": 0.6, "flying": 1.3, "perched": 1.1}[mount]
        return {"species": species, "mount": mount, "price_gbp": round(base * factor * 10, 2)}

    @function_tool
    def estimate_cure_days(species: str, length_cm: int) -> dict:
        """Drying and curing time before a mount can leave the studio."""
        return {"species": species, "cure_days": 21 + (length_cm // 3)}

    @function_tool
    def verify_licence(licence: str) -> dict:
        """Look a licence up in the licensing authority's register."""
        return {"licence": licence, "valid": licence in LICENCES, "specimen": LICENCES.get(licence)}

    @function_tool
    def list_bench_slots(from_date: str) -> dict:
        """Free bench slots from a date."""
        slots = [{"date": "2026-04-14", "bench": "B2"}, {"date": "2026-04-15", "bench": "B1"},
                 {"date": "2026-04-20", "bench": "B2"}]
        if not active("tx5"):
            slots = [s for s in slots if (s["date"], s["bench"]) not in BOOKED]
        return {"from": from_date, "slots": slots, "as_of": "2026-03-31"}

    @function_tool(failure_error_function=None, strict_mode=False)
    def book_commission(commission: str, specimen: str, bench_date: str, bench: str, quote: dict, delivery: str,
                        licence_checked: dict | None = None) -> dict:
        """Book the commission onto a bench (the studio's job system validates it)."""
        order = next(v for v in INPUTS.values() if v["commission"] == commission)
        rec = SPECIMENS[specimen]
        if (bench_date, bench) in BOOKED:
            raise CommissionBookingRejected(f"409 Conflict: bench slot {bench_date} {bench} is already booked "
                                            f"(commission {BOOKED[(bench_date, bench)]})")
        if quote["mount"] != order["mount"]:
            raise CommissionBookingRejected(f"422 Unprocessable Entity: quote is for a {quote['mount']} mount; commission "
                                            f"{commission} orders a {order['mount']} mount")
        if SPECIES[rec["species"]]["protected"]:
            if not licence_checked:
                raise CommissionBookingRejected(f"403 Forbidden: {rec['species']} is a protected species; a verified "
                                                "Article 10 certificate is required before bench work")
            if LICENCES.get(rec["licence"]) != specimen or licence_checked.get("licence") != rec["licence"]:
                raise CommissionBookingRejected(f"403 Forbidden: licence {licence_checked.get('licence')} is registered to "
                                                f"{licence_checked.get('registered_to')}, not specimen {specimen}")
        min_ready = dt.date.fromisoformat(bench_date) + dt.timedelta(days=21 + rec["length_cm"] // 3)
        if dt.date.fromisoformat(delivery) < min_ready:
            raise CommissionBookingRejected(f"422 Unprocessable Entity: delivery {delivery} is before the minimum cure date "
                                            f"{min_ready.isoformat()}")
        return {"status": 201, "job": f"{commission}/{bench_date}/{bench}"}

    provenance = Agent(name="provenance_checker", instructions="ROLE: provenance. Verify a specimen's licence.",
                       tools=[fetch_specimen_record, verify_licence], model=model)
    scheduler = Agent(name="bench_scheduler", instructions="ROLE: scheduler. Put the commission on a bench.",
                      tools=[list_bench_slots, book_commission], model=model)
    desk = Agent(name="commission_desk", instructions="ROLE: desk. Take taxidermy commissions.",
                 tools=[fetch_specimen_record, check_species_register, quote_mount, estimate_cure_days,
                        provenance.as_tool(tool_name="provenance_agent", tool_description="Check a specimen's licence")],
                 handoffs=[scheduler], model=model)
    return desk
