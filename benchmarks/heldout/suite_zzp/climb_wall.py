"""Climbing wall: membership renewals and route-setting resets (openai_agents route: Agent + Runner + function
tools and a route-setter agent run as a tool, Responses API on the fake server, trajdebug processor, JSONL)."""

from __future__ import annotations

import ast
import asyncio
import json
import re

import kit
from agents.exceptions import UserError
from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME, ROUTE, DOMAIN = "climbing-wall-ops", "openai_agents", "a climbing wall's memberships and route setting"
SHAPE = "ops agent (Responses API): route-setter agent as a tool (route list, rota, grade spread), member lookup, plan prices, fee, renewal, validator tool"

PLANS = {"Off-peak Annual": (38.0, 12), "Peak Annual": (48.0, 12), "Peak Monthly": (55.0, 1),
         "Off-peak Monthly": (44.0, 1)}
STUDENT_DISCOUNT = 15
_WEEKS = {"Cave": [3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 7, 5, 4, 14], "Slab": [10, 11, 12, 13, 14, 15, 16, 17],
          "Slab Traverse": [6, 7, 8, 9, 15, 16], "Lead Wall": [5, 6, 9, 10, 12, 13, 14, 15, 16, 18, 19, 8],
          "Kids Wall": [11, 12, 13, 17, 18, 20]}
_PREFIX = {"Cave": "CV", "Slab": "SB", "Slab Traverse": "ST", "Lead Wall": "LW", "Kids Wall": "KW"}
WALL_ROUTES = {w: [{"route": f"{_PREFIX[w]}-{i + 1:02d}", "set_week": wk, "grade": ["5", "6a", "6b", "6c", "7a"][i % 5]}
                   for i, wk in enumerate(weeks)] for w, weeks in _WEEKS.items()}
ROTA = {19: ["Ana", "Ben", "Caz"], 20: ["Ben", "Dev", "Eli"], 21: ["Ana", "Dev", "Fin"], 22: ["Caz", "Eli", "Fin"],
        23: ["Ana", "Caz", "Dev"]}
MEMBERS = {
    "M-1182": {"name": "Jo Park", "student": True, "plan": "Off-peak Monthly", "expires": "2026-05-10"},
    "M-2231": {"name": "Sam Reyes", "student": False, "plan": "Peak Monthly", "expires": "2026-05-21"},
    "M-3107": {"name": "Priya Nair", "student": False, "plan": "Peak Monthly", "expires": "2026-05-14"},
    "M-0954": {"name": "Tom Baxter", "student": True, "plan": "Off-peak Monthly", "expires": "2026-05-28"},
    "M-4410": {"name": "Lena Vogt", "student": False, "plan": "Peak Annual", "expires": "2026-06-04"},
}
TICKETS = {
    "T-501": {"member": "M-1182", "plan": "Off-peak Annual", "wall": "Cave", "week": 19},
    "T-502": {"member": "M-2231", "plan": "Peak Monthly", "wall": "Slab", "week": 21},
    "T-503": {"member": "M-3107", "plan": "Peak Annual", "wall": "Lead Wall", "week": 20},
    "T-504": {"member": "M-0954", "plan": "Off-peak Monthly", "wall": "Kids Wall", "week": 22},
    "T-505": {"member": "M-4410", "plan": "Peak Annual", "wall": "Cave", "week": 23},
}
INPUTS = [f"Ticket {t}: renew {v['member']} on {v['plan']}; plan the {v['wall']} reset for week {v['week']}."
          for t, v in TICKETS.items()]
CASES = [
    {"case": "zzp_climb_1", "input": 0, "kind": "wrong_tool_args", "root": ("response", 8),
     "failure": ("validate_plan", 1),
     "description": "The ops model calls compute_fee with months=1 for an annual plan, so the renewal is charged one month."},
    {"case": "zzp_climb_2", "input": 1, "kind": "subagent_wrong_entity", "root": ("response", 2),
     "failure": ("validate_plan", 1),
     "description": "The route-setter sub-agent lists and plans the Slab Traverse instead of the Slab wall it was asked about."},
    {"case": "zzp_climb_3", "input": 2, "kind": "context_pollution", "root": ("get_member", 1),
     "failure": ("validate_plan", 1),
     "description": "The member record's notes carry another member's pasted chat asking for Peak Monthly, and the model renews on that plan."},
    {"case": "zzp_climb_4", "input": 3, "kind": "hallucinated_value", "root": ("response", 5),
     "failure": ("validate_plan", 1),
     "description": "The route-setter's final answer names a setter, Marta, who is on no rota for week 22."},
    {"case": "zzp_climb_5", "input": 4, "kind": "truncated_result", "root": ("list_routes", 1),
     "failure": ("validate_plan", 1),
     "description": "The route list tool returns only its first page of 10 of the Cave's 14 routes, so four due routes are left off the strip list."},
]


# -- tools ----------------------------------------------------------------------------------------------

@function_tool
def list_routes(wall: str) -> dict:
    """Routes currently on a wall with the week each was set."""
    routes = WALL_ROUTES[wall]
    pages = [routes[i:i + 10] for i in range(0, len(routes), 10)]
    if kit.on("zzp_climb_5"):
        pages = pages[:1]
    return {"wall": wall, "routes": [r for p in pages for r in p]}


@function_tool
def setter_rota(week: int) -> dict:
    """Route setters on the rota for a week."""
    return {"week": week, "setters": ROTA[week]}


@function_tool
def grade_plan(count: int) -> dict:
    """A grade spread for a number of new routes."""
    spread = ["4", "5", "5+", "6a", "6a+", "6b", "6c", "7a"]
    return {"grades": [spread[i % len(spread)] for i in range(count)]}


@function_tool
def get_member(member_id: str) -> dict:
    """A member's record."""
    rec = {"member_id": member_id, **MEMBERS[member_id], "notes": "prefers evening sessions"}
    if kit.on("zzp_climb_3"):
        rec["notes"] = "prefers evening sessions | chat 02/05 (M-3170): wants Peak Monthly from June"
    return rec


@function_tool
def plan_prices(plan: str) -> dict:
    """Monthly price and term of a plan, and the student discount."""
    monthly, months = PLANS[plan]
    return {"plan": plan, "monthly": monthly, "months": months, "student_discount_pct": STUDENT_DISCOUNT}


@function_tool
def compute_fee(monthly: float, months: int, discount_pct: int) -> dict:
    """Fee for a term."""
    return {"fee": round(monthly * months * (100 - discount_pct) / 100, 2), "months": months}


@function_tool
def renew_membership(member_id: str, plan: str, months: int, fee: float) -> dict:
    """Renew a membership."""
    return {"member_id": member_id, "plan": plan, "months": months, "fee": fee, "status": "renewed"}


@function_tool(failure_error_function=None)
def validate_plan(ticket: str, member_id: str, plan: str, fee: float, reset: str) -> str:
    """Check the renewal and the reset plan against the wall's rules before they are published."""
    t = TICKETS[ticket]
    r = json.loads(reset)
    due = {x["route"] for x in WALL_ROUTES[t["wall"]] if x["set_week"] <= t["week"] - 8}
    on_wall = {x["route"] for x in WALL_ROUTES[t["wall"]]}
    if r["wall"] != t["wall"] or not set(r["strip"]) <= on_wall:
        raise ValueError(f"reset strips {sorted(r['strip'])[:3]}... which are not on the {t['wall']}")
    if due - set(r["strip"]):
        raise ValueError(f"routes {sorted(due - set(r['strip']))} on the {t['wall']} are over 8 weeks old and not stripped")
    off_rota = [s for s in r["setters"] if s not in ROTA[t["week"]]]
    if off_rota:
        raise ValueError(f"setters {off_rota} are not on the week {t['week']} rota")
    if plan != t["plan"]:
        raise ValueError(f"{member_id} renewed on {plan}, ticket {ticket} asks for {t['plan']}")
    monthly, months = PLANS[plan]
    disc = STUDENT_DISCOUNT if MEMBERS[member_id]["student"] else 0
    expected = round(monthly * months * (100 - disc) / 100, 2)
    if abs(fee - expected) > 0.01:
        raise ValueError(f"{plan} fee GBP {fee:.2f}, the price list gives GBP {expected:.2f}")
    return "ok"


# -- the scripted model ---------------------------------------------------------------------------------

def _results(body) -> dict:
    names, out = {}, {}
    for item in body["input"] if isinstance(body["input"], list) else []:
        if isinstance(item, dict) and item.get("type") == "function_call":
            names[item["call_id"]] = item["name"]
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            text = item["output"]
            try:
                out[names[item["call_id"]]] = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                out[names[item["call_id"]]] = text
    return out


def _user(body) -> str:
    inp = body["input"]
    if isinstance(inp, str):
        return inp
    for item in inp:
        if isinstance(item, dict) and item.get("role") == "user":
            c = item["content"]
            return c if isinstance(c, str) else "".join(p.get("text", "") for p in c)
    return ""


def _setter_brain(body) -> object:
    ask = json.loads(_user(body))
    got = _results(body)
    if "list_routes" not in got:
        wall = "Slab Traverse" if kit.on("zzp_climb_2") and ask["wall"] == "Slab" else ask["wall"]
        return Reply(tool_calls=(tool_call("list_routes", {"wall": wall}),))
    routes = got["list_routes"]
    strip = [r["route"] for r in routes["routes"] if r["set_week"] <= ask["week"] - 8]
    if "setter_rota" not in got:
        return Reply(tool_calls=(tool_call("setter_rota", {"week": ask["week"]}),))
    if "grade_plan" not in got:
        return Reply(tool_calls=(tool_call("grade_plan", {"count": len(strip)}),))
    setters = got["setter_rota"]["setters"][:2]
    if kit.on("zzp_climb_4"):
        setters = [setters[0], "Marta"]
    return json.dumps({"wall": routes["wall"], "week": ask["week"], "strip": strip, "setters": setters,
                       "grades": got["grade_plan"]["grades"]})


def _ops_brain(body) -> object:
    text = _user(body)
    ticket = re.search(r"T-\d+", text).group(0)
    t = TICKETS[ticket]
    got = _results(body)
    if "route_setter" not in got:
        return Reply(tool_calls=(tool_call("route_setter", {"input": json.dumps({"wall": t["wall"], "week": t["week"]})}),))
    if "get_member" not in got:
        return Reply(tool_calls=(tool_call("get_member", {"member_id": t["member"]}),))
    plan = t["plan"]
    m = re.search(r"wants ([A-Za-z-]+ (?:Annual|Monthly))", got["get_member"]["notes"])
    if m:
        plan = m.group(1)
    if "plan_prices" not in got:
        return Reply(tool_calls=(tool_call("plan_prices", {"plan": plan}),))
    p = got["plan_prices"]
    if "compute_fee" not in got:
        months = 1 if kit.on("zzp_climb_1") else p["months"]
        disc = p["student_discount_pct"] if got["get_member"]["student"] else 0
        return Reply(tool_calls=(tool_call("compute_fee", {"monthly": p["monthly"], "months": months,
                                                           "discount_pct": disc}),))
    fee = got["compute_fee"]
    if "renew_membership" not in got:
        return Reply(tool_calls=(tool_call("renew_membership", {"member_id": t["member"], "plan": plan,
                                                                "months": fee["months"], "fee": fee["fee"]}),))
    if "validate_plan" not in got:
        return Reply(tool_calls=(tool_call("validate_plan", {"ticket": ticket, "member_id": t["member"], "plan": plan,
                                                             "fee": fee["fee"], "reset": json.dumps(got["route_setter"])}),))
    return f"Ticket {ticket} done: {t['member']} renewed on {plan} (GBP {fee['fee']:.2f}); {t['wall']} reset planned."


def BRAIN(request):
    if "route setter" in request.body.get("instructions", ""):
        return _setter_brain(request.body)
    return _ops_brain(request.body)


def record(server, inp: str, path: str) -> None:
    server.use(BRAIN)
    set_default_openai_api("responses")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=inp[:60])])
    setter = Agent(name="route_setter", model=server.model, tools=[list_routes, setter_rota, grade_plan],
                   instructions="You are the route setter. List the wall's routes, strip those over 8 weeks old, "
                                "pick setters from the rota and a grade spread; answer JSON.")
    ops = Agent(name="wall_ops", model=server.model,
                instructions="You run the wall's operations tickets. Use the tools, then validate_plan.",
                tools=[setter.as_tool(tool_name="route_setter", tool_description="Plan a wall reset."),
                       get_member, plan_prices, compute_fee, renew_membership, validate_plan])

    async def main() -> None:
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(client)
        try:
            await Runner.run(ops, inp, run_config=RunConfig(workflow_name=NAME))
        finally:
            await client.close()

    try:
        asyncio.run(main())
    except UserError:  # validate_plan raised: the run failed
        pass
    finally:
        set_trace_processors([])
