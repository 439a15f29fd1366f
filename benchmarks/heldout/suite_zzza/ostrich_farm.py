"""Feed orders and vet call-outs at an ostrich farm (route: openai_agents, Chat Completions)."""
from __future__ import annotations

import ast
import asyncio
import json
import re

from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call
import suitekit

NAME = "ostrich-farm"
ROUTE = "openai_agents"
DOMAIN = "ostrich farm: feed orders and vet call-outs"
SHAPE = ("Agents SDK triage with hand-offs, ~10-16 steps: farm desk agent calls a breeding-clerk sub-agent "
         "(agent as tool, its own register tool), then hands off to a feed planner (parallel census and silo "
         "tools, then an order tool the feed mill checks) or to a flock vet (records tool, booking tool)")

ON = {"pen": False, "census": False, "silo": False, "vet_pen": False, "records": False}

PENS = {
    "14": {"group": "breeders", "ration": "breeder pellets", "birds": 64},
    "41": {"group": "growers", "ration": "grower pellets", "birds": 120},
    "22": {"group": "growers", "ration": "grower pellets", "birds": 180},
    "31": {"group": "finishers", "ration": "finisher pellets", "birds": 95},
    "7": {"group": "breeders", "ration": "breeder pellets", "birds": 40},
    "17": {"group": "growers", "ration": "grower pellets", "birds": 150},
    "9": {"group": "finishers", "ration": "finisher pellets", "birds": 60},
    "12": {"group": "breeders", "ration": "breeder pellets", "birds": 48},
}
KG_PER_DAY = {"breeder pellets": 2.4, "grower pellets": 1.8, "finisher pellets": 2.2}
SILO_FREE_T = {"A": 12.0, "B": 6.0, "C": 2.5}
LAME = {"7": ["OS-0703", "OS-0718"], "17": ["OS-1702", "OS-1731"], "9": ["OS-0905", "OS-0922"]}
MOVED = {"OS-0905": ("3", "2026-10-02")}  # moved since last season's register

INPUTS = [
    {"text": "Pen 14 breeders: order three weeks of feed into silo B."},
    {"text": "Pen 22 needs two weeks of feed delivered to silo A."},
    {"text": "Birds in pen 7 are limping; book the vet for the lame ones."},
    {"text": "Order 18 days of feed for pen 31 into silo C."},
    {"text": "Pen 9 has lame birds again; please get the vet out."},
]

CASES = [
    dict(id="zo01", input=0, switch="pen", fault_kind="subagent_wrong_entity",
         root=("generation fake-model", 2), kind="llm", failure=("order_feed", 1),
         description="The breeding clerk sub-agent looks up pen 41 in the breeder register instead of pen 14 and reports grower pellets, which the feed planner then orders for a breeder pen."),
    dict(id="zo02", input=1, switch="census", fault_kind="truncated_result",
         root=("pen_census", 1), kind="tool", failure=("order_feed", 1),
         description="pen_census returns only the first page of 50 birds of pen 22's 180, so the feed planner orders 1.26 t, under four days of feed."),
    dict(id="zo03", input=3, switch="silo", fault_kind="tool_ignores_argument",
         root=("feed_stock", 1), kind="tool", failure=("order_feed", 1),
         description="feed_stock ignores the silo it is asked about and reports silo A's 12 t of free space, so 3.76 t is ordered into silo C, which has 2.5 t free."),
    dict(id="zo04", input=2, switch="vet_pen", fault_kind="wrong_tool_args",
         root=("generation fake-model", 2), kind="llm", failure=("book_vet", 1),
         description="The flock vet model asks bird_records for pen 17 instead of pen 7, then books pen 17's lame birds under pen 7."),
    dict(id="zo05", input=4, switch="records", fault_kind="stale_data",
         root=("bird_records", 1), kind="tool", failure=("book_vet", 1),
         description="bird_records answers from last season's register, which still lists OS-0905 in pen 9 though the bird moved to pen 3 on 2026-10-02."),
]


def _lit(text):
    try:
        return ast.literal_eval(text)
    except Exception:
        try:
            return json.loads(text)
        except Exception:
            return text


def _results(msgs):
    names, out = {}, {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
    for m in msgs:
        if m.get("role") == "tool":
            out.setdefault(names.get(m.get("tool_call_id")), []).append(_lit(m.get("content")))
    return out


def policy(request):
    msgs = request.body.get("messages") or []
    system = suitekit.system_of(request)
    first_user = next((m["content"] for m in msgs if m.get("role") == "user"), "")
    res = _results(msgs)
    if system.startswith("You are the breeding clerk"):
        pen = re.search(r"pen (\d+)", first_user).group(1)
        if "breeder_register" not in res:
            return Reply(tool_calls=(tool_call("breeder_register", {"pen": "41" if ON["pen"] else pen}),))
        reg = res["breeder_register"][0]
        return json.dumps({"pen": reg["pen"], "ration": reg["ration"], "group": reg["group"]})
    pen = re.search(r"[Pp]en (\d+)", first_user).group(1)
    if system.startswith("You are the farm desk"):
        if "limp" in first_user or "lame" in first_user:
            return Reply(tool_calls=(tool_call("transfer_to_flock_vet", {}),))
        if "ask_breeding_clerk" not in res:
            return Reply(tool_calls=(tool_call("ask_breeding_clerk", {"input": f"Which ration does pen {pen} eat?"}),))
        return Reply(tool_calls=(tool_call("transfer_to_feed_planner", {}),))
    if system.startswith("You are the feed planner"):
        silo = re.search(r"silo ([A-C])", first_user).group(1)
        m = re.search(r"(\d+|two|three) (days|weeks)", first_user)
        n = {"two": 2, "three": 3}.get(m.group(1)) or int(m.group(1))
        days = n * 7 if m.group(2) == "weeks" else n
        if "pen_census" not in res:
            return Reply(tool_calls=(tool_call("pen_census", {"pen": pen}), tool_call("feed_stock", {"silo": silo})))
        clerk = _lit(res["ask_breeding_clerk"][0])
        if "order_feed" not in res:
            birds = len(res["pen_census"][0]["birds"])
            need = birds * KG_PER_DAY[clerk["ration"]] * days / 1000
            tonnes = round(min(need, res["feed_stock"][0]["free_t"]), 2)
            return Reply(tool_calls=(tool_call("order_feed", {"pen": pen, "ration": clerk["ration"],
                                                              "tonnes": tonnes, "silo": silo}),))
        o = res["order_feed"][0]
        return f"Ordered {o['tonnes']} t of {o['ration']} into silo {o['silo']} for pen {pen} ({o['order_no']})."
    if system.startswith("You are the flock vet"):
        if "bird_records" not in res:
            return Reply(tool_calls=(tool_call("bird_records", {"pen": "17" if ON["vet_pen"] else pen}),))
        if "book_vet" not in res:
            lame = [b["bird"] for b in res["bird_records"][0]["birds"] if b["status"] == "lame"]
            return Reply(tool_calls=(tool_call("book_vet", {"pen": pen, "birds": lame, "reason": "lameness"}),))
        return f"Vet booked for {res['book_vet'][0]['date']}: {', '.join(res['book_vet'][0]['birds'])}."
    return "Sorry?"


def _agents():
    from agents import Agent, function_tool

    @function_tool(failure_error_function=None)
    def breeder_register(pen: str) -> dict:
        """The breeding register's entry for a pen: its age group and ration."""
        p = PENS[pen]
        return {"pen": pen, "group": p["group"], "ration": p["ration"]}

    @function_tool(failure_error_function=None)
    def pen_census(pen: str) -> dict:
        """Ring numbers of the birds in a pen."""
        birds = [f"OS-{int(pen):02d}{i:02d}" for i in range(1, PENS[pen]["birds"] + 1)]
        if ON["census"]:
            return {"pen": pen, "birds": birds[:50], "next": "page-2"}
        return {"pen": pen, "birds": birds}

    @function_tool(failure_error_function=None)
    def feed_stock(silo: str) -> dict:
        """Free space left in a feed silo, in tonnes (from the silo's load cells)."""
        read = "A" if ON["silo"] else silo
        return {"silo": silo, "free_t": SILO_FREE_T[read]}

    @function_tool(failure_error_function=None)
    def order_feed(pen: str, ration: str, tonnes: float, silo: str) -> dict:
        """Place a feed order with the mill for delivery into a silo."""
        p = PENS[pen]
        if ration != p["ration"]:
            raise ValueError(f"pen {pen} holds {p['group']}; {ration} refused")
        if tonnes > SILO_FREE_T[silo]:
            raise ValueError(f"silo {silo} has {SILO_FREE_T[silo]} t free; {tonnes} t ordered")
        days = tonnes * 1000 / (p["birds"] * KG_PER_DAY[ration])
        if days < 10:
            raise ValueError(f"{tonnes} t covers {days:.1f} days for the {p['birds']} birds of pen {pen}; "
                             "the mill delivers at least 10 days")
        return {"order_no": f"KM-{pen}-{int(tonnes * 100)}", "pen": pen, "ration": ration, "tonnes": tonnes, "silo": silo}

    @function_tool(failure_error_function=None)
    def bird_records(pen: str) -> dict:
        """The flock register for a pen: each bird and its last health note."""
        ids = [f"OS-{int(pen):02d}{i:02d}" for i in range(1, 6)] + LAME.get(pen, [])
        birds = [{"bird": b, "status": "lame" if b in LAME.get(pen, []) else "ok"} for b in ids]
        if not ON["records"]:
            birds = [b for b in birds if b["bird"] not in MOVED] + (
                [{"bird": "OS-0931", "status": "lame"}] if pen == "9" else [])
        return {"pen": pen, "birds": birds}

    @function_tool(failure_error_function=None)
    def book_vet(pen: str, birds: list[str], reason: str) -> dict:
        """Book the vet for named birds in a pen."""
        for b in birds:
            if b in MOVED:
                raise ValueError(f"{b} moved to pen {MOVED[b][0]} on {MOVED[b][1]}; not in pen {pen}")
            if not b.startswith(f"OS-{int(pen):02d}"):
                raise ValueError(f"{b} is not in pen {pen}")
        return {"pen": pen, "birds": birds, "reason": reason, "date": "2026-12-08"}

    clerk = Agent(name="breeding_clerk", model="fake-model", tools=[breeder_register],
                  instructions="You are the breeding clerk. Answer a pen's ration and group from the register.")
    feed = Agent(name="feed_planner", model="fake-model", tools=[pen_census, feed_stock, order_feed],
                 instructions="You are the feed planner. Count the pen, check the silo, order feed.")
    vet = Agent(name="flock_vet", model="fake-model", tools=[bird_records, book_vet],
                instructions="You are the flock vet. Find the lame birds and book the vet.")
    desk = Agent(name="farm_desk", model="fake-model", handoffs=[feed, vet],
                 tools=[clerk.as_tool("ask_breeding_clerk", "Ask the breeding clerk about a pen.",
                                      failure_error_function=None)],
                 instructions="You are the farm desk. Route feed requests to the feed planner, sick birds to the vet.")
    return desk


def record(inp: dict, path: str, base_url: str) -> None:
    from agents import RunConfig, Runner, set_default_openai_api, set_default_openai_client
    from agents.tracing import set_trace_processors

    async def main() -> None:
        client = suitekit.async_client(base_url)
        set_default_openai_client(client)
        try:
            await Runner.run(_agents(), inp["text"], run_config=RunConfig(workflow_name=NAME))
        finally:
            await client.close()

    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=inp["text"])])
    try:
        asyncio.run(main())
    except Exception:
        pass
    finally:
        set_trace_processors([])
