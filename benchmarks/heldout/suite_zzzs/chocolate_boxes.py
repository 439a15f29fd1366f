"""A chocolatier's gift boxes: the OpenAI Agents SDK (Chat Completions against the fake server), a concierge
agent that hands off to a box designer; the designer calls tools one turn at a time, two of them in parallel."""
from __future__ import annotations

import ast
import asyncio
import json

from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors

from trajdebug.integrations.openai_agents import TrajdebugProcessor

from suite_common import Reply, async_client, tool_call

RUN_NAME = "gift-box-atelier"
ROUTE = "openai_agents"
DOMAIN = "chocolatier's gift boxes"
SHAPE = ("~20 steps: concierge agent (client lookup, hand-off) -> box designer agent: ganache catalogue, allergen "
         "sheet + mould reservation in parallel, pricing, courier booking, sealing check, final answer")

SWITCHES = ["MOULDS_PER_BOX", "US_DATE", "CATALOGUE_NO_FILTER", "POSTCODE_GUESS", "ALLERGY_FIRST_ONLY"]
MOULDS_PER_BOX = US_DATE = CATALOGUE_NO_FILTER = POSTCODE_GUESS = ALLERGY_FIRST_ONLY = False

CLIENTS = {
    "CL-14": {"name": "Hotel Belcour", "city": "Lyon", "postcode": "69002", "allergies": ["sesame"]},
    "CL-27": {"name": "Maison Vey", "city": "Annecy", "postcode": "74000", "allergies": []},
    "CL-33": {"name": "Cabinet Rhodes", "city": "Grenoble", "postcode": "38000", "allergies": ["gluten", "hazelnut", "almond"]},
    "CL-41": {"name": "Studio Aubry", "city": "Lyon", "postcode": "69006", "allergies": ["peanut"]},
    "CL-58": {"name": "Librairie Orme", "city": "Chambery", "postcode": "73000", "allergies": ["milk", "hazelnut"]},
}
INPUTS = [
    {"client": "CL-14", "boxes": 40, "pieces": 12, "theme": "winter spice", "shape": "square", "ship": "2026-12-14"},
    {"client": "CL-27", "boxes": 25, "pieces": 16, "theme": "citrus", "shape": "dome", "ship": "2026-12-16"},
    {"client": "CL-33", "boxes": 60, "pieces": 9, "theme": "praline", "shape": "square", "ship": "2026-12-15"},
    {"client": "CL-41", "boxes": 15, "pieces": 24, "theme": "tea garden", "shape": "heart", "ship": "2026-12-18"},
    {"client": "CL-58", "boxes": 30, "pieces": 12, "theme": "praline", "shape": "dome", "ship": "2026-12-17"},
]
GANACHES = {
    "winter spice": [("cinnamon", []), ("speculoos", ["gluten"]), ("black sesame", ["sesame"]), ("clove caramel", ["milk"])],
    "citrus": [("yuzu", []), ("blood orange", ["milk"]), ("bergamot", [])],
    "praline": [("hazelnut praline", ["hazelnut"]), ("almond gianduja", ["almond"]), ("dark caramel", []), ("cocoa nib", [])],
    "tea garden": [("jasmine", ["milk"]), ("matcha", ["milk"]), ("earl grey", []), ("peanut hojicha", ["peanut"])],
}
POSTCODES = {"Lyon": ("69001", "69009"), "Annecy": ("74000", "74000"), "Grenoble": ("38000", "38100"), "Chambery": ("73000", "73000")}


def _called(msgs):
    names = []
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names.append(tc["function"]["name"])
    return names


def _results(msgs):
    out = {}
    ids = {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            ids[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            try:
                out[ids.get(m["tool_call_id"])] = ast.literal_eval(m["content"])
            except (ValueError, SyntaxError):
                out[ids.get(m["tool_call_id"])] = m["content"]
    return out


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""
    order = json.loads(next(m["content"] for m in msgs if m["role"] == "user").split("\n", 1)[1])
    called, res = _called(msgs), _results(msgs)
    if system.startswith("You greet"):
        if "lookup_client" not in called:
            return Reply(tool_calls=(tool_call("lookup_client", {"client_id": order["client"]}),))
        return Reply(tool_calls=(tool_call("transfer_to_box_designer", {}),))
    client = res["lookup_client"]
    if "ganache_catalog" not in called:
        return Reply(tool_calls=(tool_call("ganache_catalog", {"theme": order["theme"], "exclude": client["allergies"]}),))
    if "allergen_sheet" not in called:
        flavours = res["ganache_catalog"]["flavours"]
        count = order["pieces"] if MOULDS_PER_BOX else order["pieces"] * order["boxes"]
        return Reply(tool_calls=(tool_call("allergen_sheet", {"flavours": flavours}),
                                 tool_call("reserve_moulds", {"shape": order["shape"], "cavities": count})))
    if "price_box" not in called:
        return Reply(tool_calls=(tool_call("price_box", {"boxes": order["boxes"], "pieces": order["pieces"],
                                                         "reservation": res["reserve_moulds"]["reservation"]}),))
    if "book_courier" not in called:
        date = order["ship"]
        if US_DATE:
            y, m, d = date.split("-")
            date = f"{m}/{d}/{y}"
        postcode = client["postcode"]
        if POSTCODE_GUESS:
            postcode = "69000"
        return Reply(tool_calls=(tool_call("book_courier", {"city": client["city"], "postcode": postcode, "date": date,
                                                            "parcels": order["boxes"]}),))
    if "seal_box" not in called:
        return Reply(tool_calls=(tool_call("seal_box", {"client_id": order["client"], "sheet": res["allergen_sheet"]["contains"]}),))
    return f"{order['boxes']} {order['theme']} boxes ready for {client['name']}, courier {res['book_courier']['slot']}."


RESERVATIONS: dict = {}


@function_tool(failure_error_function=None)
def lookup_client(client_id: str) -> dict:
    """The client's record: name, delivery city and postcode, declared allergies."""
    c = dict(CLIENTS[client_id])
    if ALLERGY_FIRST_ONLY:
        c["allergies"] = c["allergies"][:1]
    return c


@function_tool(failure_error_function=None)
def ganache_catalog(theme: str, exclude: list[str]) -> dict:
    """Ganaches of a theme, leaving out those that hold any excluded allergen."""
    keep = [n for n, al in GANACHES[theme] if CATALOGUE_NO_FILTER or not set(al) & set(exclude)]
    return {"theme": theme, "flavours": keep}


@function_tool(failure_error_function=None)
def allergen_sheet(flavours: list[str]) -> dict:
    """The allergen sheet for a set of ganaches."""
    table = {n: al for v in GANACHES.values() for n, al in v}
    return {"contains": sorted({a for f in flavours for a in table[f]}), "flavours": flavours}


@function_tool(failure_error_function=None)
def reserve_moulds(shape: str, cavities: int) -> dict:
    """Reserve polycarbonate mould cavities for a shape."""
    ref = f"MO-{shape[:3].upper()}-{cavities}"
    RESERVATIONS[ref] = cavities
    return {"reservation": ref, "cavities": cavities}


@function_tool(failure_error_function=None)
def price_box(boxes: int, pieces: int, reservation: str) -> dict:
    """Price the boxes; the production planner checks the mould reservation covers the run."""
    need = boxes * pieces
    if RESERVATIONS.get(reservation, 0) < need:
        raise ValueError(f"production planner: reservation {reservation} holds {RESERVATIONS.get(reservation, 0)} cavities, the run needs {need}")
    return {"unit_eur": round(4.5 + pieces * 1.35, 2), "total_eur": round(boxes * (4.5 + pieces * 1.35), 2)}


@function_tool(failure_error_function=None)
def book_courier(city: str, postcode: str, date: str, parcels: int) -> dict:
    """Book the chilled courier."""
    lo, hi = POSTCODES[city]
    if not (len(date) == 10 and date[4] == "-" and date[7] == "-"):
        raise ValueError(f"courier API: date {date!r} is not YYYY-MM-DD")
    if not lo <= postcode <= hi or postcode.endswith("000") and city == "Lyon":
        raise ValueError(f"courier API: postcode {postcode} is not a delivery postcode of {city}")
    return {"slot": f"{date} 08:00-10:00", "parcels": parcels}


@function_tool(failure_error_function=None)
def seal_box(client_id: str, sheet: list[str]) -> dict:
    """Seal the boxes: the packing bench checks the allergen sheet against the client's declaration on file."""
    declared = CLIENTS[client_id]["allergies"]
    clash = sorted(set(sheet) & set(declared))
    if clash:
        raise ValueError(f"packing bench: box for {client_id} holds {', '.join(clash)}, declared allergy on file")
    return {"sealed": True, "label": "allergens: " + (", ".join(sheet) or "none")}


def build(server, oa):
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=oa)
    designer = Agent(name="box_designer", model=model, model_settings=ModelSettings(parallel_tool_calls=True),
                     instructions="You design chocolate gift boxes: pick ganaches, reserve moulds, price, book the courier, seal.",
                     tools=[ganache_catalog, allergen_sheet, reserve_moulds, price_box, book_courier, seal_box])
    concierge = Agent(name="concierge", model=model, instructions="You greet the order, look the client up, then hand off to the box designer.",
                      tools=[lookup_client], handoffs=[designer])
    return concierge


def record(inp, path, server):
    server.use(policy)
    RESERVATIONS.clear()
    set_trace_processors([TrajdebugProcessor(path=path, name=RUN_NAME, task=f"gift boxes for {inp['client']}")])

    async def go():
        oa = async_client(server)
        try:
            await Runner.run(build(server, oa), "Prepare this gift-box order:\n" + json.dumps(inp), max_turns=20,
                             run_config=RunConfig(workflow_name=RUN_NAME))
        finally:
            await oa.close()

    try:
        asyncio.run(go())
    except Exception:  # noqa: BLE001 - the SDK re-raises the tool's error (wrapped as UserError)
        pass
    finally:
        set_trace_processors([])


CASES = [
    {"id": "zzzs-choc-01", "input": 0, "switch": "MOULDS_PER_BOX", "fault_kind": "wrong_tool_args",
     "root": {"name": "generation fake-model", "occurrence": 4, "kind": "llm"}, "failure": {"name": "price_box", "occurrence": 1},
     "description": "The designer model asks for 12 mould cavities, the pieces of one box, for a run of 40 boxes of 12 (480 cavities)."},
    {"id": "zzzs-choc-02", "input": 1, "switch": "US_DATE", "fault_kind": "format_drift",
     "root": {"name": "generation fake-model", "occurrence": 6, "kind": "llm"}, "failure": {"name": "book_courier", "occurrence": 1},
     "description": "The designer model writes the ship date as 12/16/2026 where the order and the courier use 2026-12-16."},
    {"id": "zzzs-choc-03", "input": 2, "switch": "CATALOGUE_NO_FILTER", "fault_kind": "tool_ignores_argument",
     "root": {"name": "ganache_catalog", "occurrence": 1, "kind": "tool"}, "failure": {"name": "seal_box", "occurrence": 1},
     "description": "The ganache catalogue ignores its exclude list and returns hazelnut praline and almond gianduja to a client who declared both."},
    {"id": "zzzs-choc-04", "input": 3, "switch": "POSTCODE_GUESS", "fault_kind": "hallucinated_value",
     "root": {"name": "generation fake-model", "occurrence": 6, "kind": "llm"}, "failure": {"name": "book_courier", "occurrence": 1},
     "description": "The designer model gives the courier postcode 69000, which is in no tool result; the client record says 69006."},
    {"id": "zzzs-choc-05", "input": 4, "switch": "ALLERGY_FIRST_ONLY", "fault_kind": "truncated_result",
     "root": {"name": "lookup_client", "occurrence": 1, "kind": "tool"}, "failure": {"name": "seal_box", "occurrence": 1},
     "description": "The client lookup returns only the first of CL-58's declared allergies (milk), dropping hazelnut."},
]
