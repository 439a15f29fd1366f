"""Treehouse builder (openai_agents): one SDK agent calling function tools, two of them in parallel, over Chat Completions."""
import ast
import asyncio
import json

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client, set_tracing_disabled
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME, ROUTE, DOMAIN = "treehouse-design-desk", "openai_agents", "treehouse builder"
SHAPE = "one agent: parallel survey + zoning calls, load calc, attachment pick, lumber order, structural sign-off tool, permit submission tool"
ON: set = set()

INPUTS = [
    {"request": "Treehouse in the big oak, tree T-14 on parcel 88-210, platform 3.0 x 3.5 m at 3.2 m, for 6 kids."},
    {"request": "Reading nook for 2 adults in beech T-3, parcel 88-117, platform 2.4 x 2.4 m at 2.8 m."},
    {"request": "Play deck for 8 children, sycamore T-9, parcel 91-004, platform 4.0 x 3.0 m at 2.5 m."},
    {"request": "Studio treehouse for 3 adults in chestnut T-21, parcel 91-032, platform 3.6 x 3.0 m, as high as zoning allows."},
    {"request": "Lookout for 4 scouts, douglas fir T-7, parcel 88-305, platform 2.8 x 2.8 m at 4.0 m."},
]
CASES = [
    {"id": "zzzm-21", "input": 0, "switch": "occupants", "kind": "hallucinated_value",
     "root": ("generation treehouse-model", 2, "llm"), "failure": ("structural_signoff", 1),
     "description": "The designer model asks the load calculation for 2 occupants on a request for 6 kids."},
    {"id": "zzzm-22", "input": 3, "switch": "zoning_cache", "kind": "stale_data",
     "root": ("zoning_lookup", 1, "tool"), "failure": ("submit_permit_application", 1),
     "description": "The zoning lookup answers from a cached copy of the 2025 ordinance, with a 4.5 m height limit that has since become 3.0 m."},
    {"id": "zzzm-23", "input": 2, "switch": "tab_load", "kind": "tool_ignores_argument",
     "root": ("pick_attachment", 1, "tool"), "failure": ("structural_signoff", 1),
     "description": "The attachment picker ignores the design load and always returns the 1 inch tree attachment bolt."},
    {"id": "zzzm-24", "input": 1, "switch": "joist_supplier", "kind": "swallowed_error",
     "root": ("order_lumber", 1, "tool"), "failure": ("structural_signoff", 1),
     "description": "The lumber order catches the joist supplier's out-of-stock error and returns the order without joists."},
    {"id": "zzzm-25", "input": 4, "switch": "skip_survey", "kind": "plan_error",
     "root": ("generation treehouse-model", 1, "llm"), "failure": ("structural_signoff", 1),
     "description": "The designer's first turn plans the build without surveying the tree and goes on with a catalogue trunk size."},
]
TREES = {"T-14": ("oak", 74), "T-3": ("beech", 48), "T-9": ("sycamore", 66), "T-21": ("chestnut", 58), "T-7": ("douglas fir", 52)}


def _parse(req):
    import re
    tree = re.search(r"T-\d+", req).group(0)
    parcel = re.search(r"\d\d-\d{3}", req).group(0)
    w, l = map(float, re.search(r"([\d.]+) x ([\d.]+) m", req).groups())
    at = re.search(r"m at ([\d.]+) m", req)
    h = float(at.group(1)) if at else None
    occ = int(re.search(r"for (\d+)|(\d+) (?:adults|children|scouts)", req).group(1) or re.search(r"(\d+) (?:adults|children|scouts)", req).group(1))
    return tree, parcel, w * l, h, occ


def policy(request):
    msgs = request.body["messages"]
    req = next(m["content"] for m in msgs if m["role"] == "user")
    tree, parcel, area, height, occ = _parse(req)
    names, res = {}, {}
    for m in msgs:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
        if m["role"] == "tool":
            res[names[m["tool_call_id"]]] = ast.literal_eval(m["content"])
    if not res:
        if "skip_survey" in ON:
            return Reply(tool_calls=(tool_call("zoning_lookup", {"parcel": parcel}),))
        return Reply(tool_calls=(tool_call("survey_tree", {"tree": tree}), tool_call("zoning_lookup", {"parcel": parcel})))
    if "load_calc" not in res:
        n = 2 if "occupants" in ON else occ
        return Reply(tool_calls=(tool_call("load_calc", {"platform_m2": round(area, 2), "occupants": n}),))
    if "pick_attachment" not in res:
        trunk = res["survey_tree"]["trunk_cm"] if "survey_tree" in res else 40
        return Reply(tool_calls=(tool_call("pick_attachment", {"trunk_cm": trunk, "load_kg": res["load_calc"]["design_load_kg"]}),))
    if "order_lumber" not in res:
        return Reply(tool_calls=(tool_call("order_lumber", {"platform_m2": round(area, 2)}),))
    if height is None:
        height = round(res["zoning_lookup"]["height_limit_m"] - 0.3, 1)
    if "structural_signoff" not in res:
        plan = {"tree": tree, "platform_m2": round(area, 2), "height_m": height, "occupants": occ, "design_load_kg": res["load_calc"]["design_load_kg"],
                "attachment": res["pick_attachment"], "lumber": res["order_lumber"]["lines"]}
        return Reply(tool_calls=(tool_call("structural_signoff", {"plan_json": json.dumps(plan)}),))
    if "submit_permit_application" not in res:
        return Reply(tool_calls=(tool_call("submit_permit_application", {"parcel": parcel, "height_m": height,
                                                                           "limit_m": res["zoning_lookup"]["height_limit_m"]}),))
    return f"Design signed off and permit filed for {tree} on parcel {parcel}."


@function_tool(failure_error_function=None)
def survey_tree(tree: str) -> dict:
    """Arborist survey of a tree: species, trunk diameter at attachment height, health."""
    sp, cm = TREES[tree]
    return {"tree": tree, "species": sp, "trunk_cm": cm, "health": "sound"}


@function_tool(failure_error_function=None)
def zoning_lookup(parcel: str) -> dict:
    """Height limit for accessory structures on a parcel."""
    if "zoning_cache" in ON:
        return {"parcel": parcel, "ordinance": "2025", "height_limit_m": 4.5}
    return {"parcel": parcel, "ordinance": "2027", "height_limit_m": 3.0 if parcel.startswith("91") else 4.5}


@function_tool(failure_error_function=None)
def load_calc(platform_m2: float, occupants: int) -> dict:
    """Design load of a platform: dead load plus live load per occupant, with a 1.6 factor."""
    return {"platform_m2": platform_m2, "occupants": occupants, "design_load_kg": round((platform_m2 * 45 + occupants * 90) * 1.6)}


@function_tool(failure_error_function=None)
def pick_attachment(trunk_cm: int, load_kg: int) -> dict:
    """Pick the tree attachment bolt (TAB) for a trunk and design load."""
    size = 1.0 if ("tab_load" in ON or load_kg <= 1800) else (1.25 if load_kg <= 2600 else 1.5)
    return {"tab_in": size, "count": 2 if trunk_cm >= 50 else 1, "rated_kg_each": {1.0: 1800, 1.25: 2600, 1.5: 3600}[size]}


@function_tool(failure_error_function=None)
def order_lumber(platform_m2: float) -> dict:
    """Order beams, joists and decking from the yard's suppliers."""
    lines = [{"item": "glulam beam 140x360", "qty": 2}]
    try:
        if "joist_supplier" in ON:
            raise RuntimeError("joist supplier: C24 47x200 out of stock")
        lines.append({"item": "C24 joist 47x200", "qty": int(platform_m2 * 2.5) + 1})
    except RuntimeError:
        pass
    lines.append({"item": "larch decking 28x145", "qty": int(platform_m2 * 7) + 2})
    return {"lines": lines, "supplier_ref": f"LY-{int(platform_m2 * 100)}"}


@function_tool(failure_error_function=None)
def structural_signoff(plan_json: str) -> dict:
    """Engineer's structural sign-off of a treehouse plan."""
    plan = json.loads(plan_json)
    att = plan["attachment"]
    need = round((plan["platform_m2"] * 45 + plan["occupants"] * 90) * 1.6)
    if plan["design_load_kg"] < need:
        raise ValueError(f"design load {plan['design_load_kg']} kg is below the live load of {plan['occupants']} occupants ({need} kg)")
    if att["rated_kg_each"] < plan["design_load_kg"]:
        raise ValueError(f"each bolt must carry the whole load: {att['tab_in']} in TAB rated {att['rated_kg_each']} kg, design load {plan['design_load_kg']} kg")
    if not any("joist" in line["item"] for line in plan["lumber"]):
        raise ValueError("lumber order has no joists: the platform cannot be framed")
    trunk = TREES[plan["tree"]][1]
    if att["count"] == 1 and trunk >= 50:
        raise ValueError(f"trunk of {trunk} cm measured on site takes two bolts, plan has one")
    return {"signed": "R. Okonkwo CEng", "tree": plan["tree"]}


@function_tool(failure_error_function=None)
def submit_permit_application(parcel: str, height_m: float, limit_m: float) -> dict:
    """File the accessory structure permit with the county."""
    current = 3.0 if parcel.startswith("91") else 4.5
    if height_m > current:
        raise ValueError(f"county portal rejects parcel {parcel}: platform at {height_m} m over the {current} m limit")
    return {"parcel": parcel, "permit": f"ASP-{parcel}", "status": "lodged"}


def run_one(inp, path, server):
    set_tracing_disabled(False)
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=inp["request"])])
    agent = Agent(name="treehouse_designer", instructions="Design the treehouse with the tools, then sign off and file the permit.",
                  model="treehouse-model", tools=[survey_tree, zoning_lookup, load_calc, pick_attachment, order_lumber,
                                                  structural_signoff, submit_permit_application])

    async def go():
        client = AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        set_default_openai_client(client)
        try:
            await Runner.run(agent, inp["request"], run_config=RunConfig(workflow_name=NAME))
        finally:
            await client.close()

    try:
        asyncio.run(go())
    except Exception:
        pass
    finally:
        set_trace_processors([])
