"""Municipal tree works (route langgraph): a LangGraph ReAct loop (ChatOpenAI.bind_tools + ToolNode), a triage
route, and a species-expert subgraph invoked as a node, against the fake server."""

from __future__ import annotations

import json
import math
from pathlib import Path

from benchmarks.heldout.suite_q import kit
from benchmarks.heldout.suite_q.kit import Agent, Case


NAME = "tree-works"

TREES = {
    "T-181": {"species": "Quercus robur", "girth_cm": 214.0, "tpo": "TPO/2011/14", "site": "Elm Park"},
    "T-118": {"species": "Fraxinus excelsior", "girth_cm": 150.0, "tpo": "TPO/2016/03", "site": "Elm Park"},
    "T-240": {"species": "Acer pseudoplatanus", "girth_cm": 176.0, "tpo": "TPO/2013/22", "site": "Mill Green"},
    "T-204": {"species": "Tilia cordata", "girth_cm": 132.0, "tpo": "TPO/2018/09", "site": "Mill Green"},
    "T-315": {"species": "Fagus sylvatica", "girth_cm": 251.0, "tpo": "TPO/2009/31", "site": "Rookery Lane"},
    "T-351": {"species": "Betula pendula", "girth_cm": 98.0, "tpo": "TPO/2020/05", "site": "Rookery Lane"},
    "T-427": {"species": "Castanea sativa", "girth_cm": 305.0, "tpo": "TPO/2007/40", "site": "Chapel Walk"},
    "T-472": {"species": "Pinus sylvestris", "girth_cm": 160.0, "tpo": "TPO/2015/18", "site": "Chapel Walk"},
    "T-563": {"species": "Carpinus betulus", "girth_cm": 141.0, "tpo": "TPO/2012/27", "site": "Orchard Row"},
    "T-536": {"species": "Sorbus aucuparia", "girth_cm": 77.0, "tpo": "TPO/2021/02", "site": "Orchard Row"},
    "T-692": {"species": "Prunus avium", "girth_cm": 118.0, "tpo": "TPO/2017/11", "site": "Weir Meadow"},
    "T-629": {"species": "Alnus glutinosa", "girth_cm": 126.0, "tpo": "TPO/2019/08", "site": "Weir Meadow"},
}

SYS_TRIAGE = "Classify the tree works request. Answer with one word: scheduled or urgent."
SYS_SURVEY = "You prepare felling licence applications. Use the tools, then apply."
SYS_EXPERT = "You confirm the species of a registered tree. Look it up in the register, answer with the species."


def _calls(msgs):
    names, out = {}, []
    for m in msgs:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = (c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
        if m.get("role") == "tool":
            n, a = names.get(m["tool_call_id"], ("?", {}))
            out.append((n, a, m["content"]))
    return out


def policy(request):
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    system = msgs[0]["content"]
    if system == SYS_TRIAGE:
        return "urgent" if kit.active("ag_route") else "scheduled"
    if system == SYS_EXPERT:
        done = _calls(msgs)
        if not done:
            tree = msgs[-1]["content"].split("tree ")[1].split()[0]
            if kit.active("ag_entity"):
                tree = tree[:-2] + tree[-1] + tree[-2]  # digits transposed
            return Reply(tool_calls=(tool_call("lookup_register", {"tree_id": tree}),))
        return json.loads(done[-1][2])["species"]
    if system == SYS_SURVEY:
        done = _calls(msgs)
        names = [d[0] for d in done]
        tree = msgs[1]["content"].split("tree ")[1].split()[0]
        if "get_tree_record" not in names:
            return Reply(tool_calls=(tool_call("get_tree_record", {"tree_id": tree}),))
        rec = json.loads(next(r for n, a, r in done if n == "get_tree_record"))
        if "measure_tree" not in names:
            return Reply(tool_calls=(tool_call("measure_tree", {"tree_id": tree}),))
        if "check_nesting_survey" not in names:
            return Reply(tool_calls=(tool_call("check_nesting_survey", {"site": rec["site"]}),))
        species_msg = [m for m in msgs if m.get("role") == "user" and str(m.get("content", "")).startswith("Species")]
        if not species_msg:
            return "Records gathered; the species needs confirming."
        if "apply_felling_licence" not in names:
            meas = json.loads(next(r for n, a, r in done if n == "measure_tree"))
            nest = json.loads(next(r for n, a, r in done if n == "check_nesting_survey"))
            tpo = "TPO/2019/77" if kit.active("ag_halluc") else rec["tpo"]
            return Reply(tool_calls=(tool_call("apply_felling_licence", {
                "tree_id": tree, "species": species_msg[-1]["content"].split(": ", 1)[1], "tpo_ref": tpo,
                "dbh_cm": round(meas["girth_cm"] / math.pi, 1), "nesting_survey": nest["surveyed"]}),))
        return "Licence application submitted: " + done[-1][2]
    return "ok"


from langgraph.graph import MessagesState  # noqa: E402


class State(MessagesState):
    request: str
    tree_id: str
    category: str


class Refusal(RuntimeError):
    pass


Refusal.__module__ = "council.portal"


def _build(llm):
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    @tool
    def get_tree_record(tree_id: str) -> str:
        """The council tree register entry of a tree."""
        t = TREES[tree_id]
        return json.dumps({"tree_id": tree_id, "site": t["site"], "tpo": t["tpo"]})

    @tool
    def measure_tree(tree_id: str) -> str:
        """The latest girth measurement from the field tablet."""
        girth = TREES[tree_id]["girth_cm"]
        if kit.active("ag_unit"):
            girth = round(girth / 2.54, 1)  # tablet profile left on inches
        return json.dumps({"tree_id": tree_id, "girth_cm": girth, "height_m": 14})

    @tool
    def check_nesting_survey(site: str) -> str:
        """The bird nesting survey on file for a site."""
        if kit.active("ag_stale"):
            return json.dumps({"site": site, "surveyed": "2025-03-18", "active_nests": 0})
        return json.dumps({"site": site, "surveyed": "2026-11-26", "active_nests": 0})

    @tool
    def lookup_register(tree_id: str) -> str:
        """Species of a registered tree."""
        return json.dumps({"tree_id": tree_id, "species": TREES[tree_id]["species"]})

    @tool
    def apply_felling_licence(tree_id: str, species: str, tpo_ref: str, dbh_cm: float, nesting_survey: str) -> str:
        """Submit a felling licence application to the council portal."""
        t = TREES[tree_id]
        if tpo_ref != t["tpo"]:
            raise Refusal("Council portal: 404 preservation order reference not found")
        if species != t["species"]:
            raise Refusal("Council portal: 422 application does not match the tree register")
        if abs(dbh_cm - t["girth_cm"] / math.pi) > 5:
            raise Refusal("Council portal: 422 stem diameter inconsistent with the register survey")
        if not nesting_survey.startswith("2026"):
            raise Refusal("Council portal: 409 nesting survey not valid for the current season")
        return json.dumps({"licence": f"FL-{tree_id}-26", "status": "received"})

    @tool
    def dispatch_crew(tree_id: str) -> str:
        """Send the standby crew."""
        return json.dumps({"crew": "Crew 3", "eta_min": 40, "tree_id": tree_id})

    @tool
    def place_barrier(tree_id: str, zone: str) -> str:
        """Log a barrier placed around the tree's fall zone."""
        return json.dumps({"tree_id": tree_id, "zone": zone, "barrier": "placed"})

    @tool
    def notify_council(tree_id: str, works: str) -> str:
        """Notify the council of works on a protected tree."""
        raise Refusal(f"Council portal: 403 {works} notice for {tree_id} refused, no hazard report on record")

    expert_llm = llm.bind_tools([lookup_register])

    def identify(state: MessagesState, config) -> dict:
        return {"messages": [expert_llm.invoke(state["messages"], config=config)]}

    eg = StateGraph(MessagesState)
    eg.add_node("identify", identify)
    eg.add_node("register", ToolNode([lookup_register], handle_tool_errors=False))
    eg.add_edge(START, "identify")
    eg.add_conditional_edges("identify", lambda s: "register" if s["messages"][-1].tool_calls else END,
                             ["register", END])
    eg.add_edge("register", "identify")
    expert = eg.compile()

    tools = [get_tree_record, measure_tree, check_nesting_survey, apply_felling_licence]
    survey_llm = llm.bind_tools(tools)

    def triage(state: State, config) -> dict:
        r = llm.invoke([SystemMessage(SYS_TRIAGE), HumanMessage(state["request"])], config=config)
        return {"category": r.content.strip()}

    def survey_agent(state: State, config) -> dict:
        msgs = [SystemMessage(SYS_SURVEY), HumanMessage(state["request"])] + state["messages"]
        return {"messages": [survey_llm.invoke(msgs, config=config)]}

    def species_expert(state: State, config) -> dict:
        out = expert.invoke({"messages": [SystemMessage(SYS_EXPERT),
                                          HumanMessage(f"Confirm the species of tree {state['tree_id']} please.")]},
                            config=config)
        return {"messages": [HumanMessage(f"Species confirmed: {out['messages'][-1].content}")]}

    def after_survey(state: State) -> str:
        last = state["messages"][-1]
        if last.tool_calls:
            return "tools"
        if not any(getattr(m, "content", "").startswith("Species") for m in state["messages"]
                   if m.type == "human"):
            return "species_expert"
        return END

    def urgent_works(state: State, config) -> dict:
        get_tree_record.invoke({"tree_id": state["tree_id"]}, config=config)
        crew = dispatch_crew.invoke({"tree_id": state["tree_id"]}, config=config)
        for zone in ("north", "east", "south", "west", "road", "footpath", "verge", "bus stop"):
            place_barrier.invoke({"tree_id": state["tree_id"], "zone": zone}, config=config)
        notify_council.invoke({"tree_id": state["tree_id"], "works": "urgent works"}, config=config)
        return {"messages": [HumanMessage(crew)]}

    g = StateGraph(State)
    g.add_node("triage", triage)
    g.add_node("survey_agent", survey_agent)
    g.add_node("tools", ToolNode(tools, handle_tool_errors=False))
    g.add_node("species_expert", species_expert)
    g.add_node("urgent_works", urgent_works)
    g.add_edge(START, "triage")
    g.add_conditional_edges("triage", lambda s: "urgent_works" if s["category"] == "urgent" else "survey_agent",
                            ["urgent_works", "survey_agent"])
    g.add_conditional_edges("survey_agent", after_survey, ["tools", "species_expert", END])
    g.add_edge("tools", "survey_agent")
    g.add_edge("species_expert", "survey_agent")
    g.add_edge("urgent_works", END)
    return g.compile()


_SERVER = None


def agent(inp: dict, path: Path) -> None:
    global _SERVER
    from langchain_openai import ChatOpenAI

    from trajdebug.integrations.langchain import TrajdebugTracer
    from trajdebug.testing import FakeModelServer

    if _SERVER is None:
        _SERVER = FakeModelServer(policy, model="gpt-4o-mini").start()
    llm = ChatOpenAI(base_url=_SERVER.base_url, api_key="not-needed", model=_SERVER.model, max_retries=0,
                     temperature=0)
    request = f"Apply for a licence to fell tree {inp['tree']} ({inp['reason']}), works planned for {inp['when']}."
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=request)
    try:
        _build(llm).invoke({"request": request, "tree_id": inp["tree"], "messages": []},
                           config={"callbacks": [tracer], "recursion_limit": 50})
    except Refusal:
        pass


def _i(tree, reason, when):
    return {"tree": tree, "reason": reason, "when": when}


CASES = [
    Case("trees_routing", NAME, "langgraph", "wrong_routing", "ag_route",
         _i("T-240", "crown dieback", "February"), None, "urgent"),
    Case("trees_entity", NAME, "langgraph", "subagent_wrong_entity", "ag_entity",
         _i("T-181", "root heave under the footpath", "January"), None, "T-118"),
    Case("trees_halluc", NAME, "langgraph", "hallucinated_value", "ag_halluc",
         _i("T-315", "decay at the base", "March"), None, "TPO/2019/77"),
    Case("trees_unit", NAME, "langgraph", "unit_error", "ag_unit",
         _i("T-427", "honey fungus", "January"), "measure_tree", "120.1"),
    Case("trees_stale", NAME, "langgraph", "stale_data", "ag_stale",
         _i("T-563", "storm damage", "February"), "check_nesting_survey", "2025-03-18"),
]
REFS = [_i("T-204", "subsidence claim", "January"), _i("T-351", "leaning over the road", "March"),
        _i("T-472", "needle blight", "February"), _i("T-692", "bacterial canker", "April")]

AGENT = Agent(NAME, "langgraph", "jsonl", agent, CASES, REFS)
