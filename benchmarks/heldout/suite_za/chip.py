"""Pet microchip registry (langgraph route): transfers a chip's keeper after checking the registry."""
from __future__ import annotations

import json
from typing import TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer

from . import fakellm
from .kit import active

AGENT = "microchip-registry-clerk"
ROUTE = "langgraph"

REGISTRY = {
    "985112004417311": {"species": "dog", "name": "Juno", "keeper": "K-5521", "status": "active",
                        "history": ["K-1002", "K-2210", "K-3107", "K-4480", "K-5521"]},
    "985112004417113": {"species": "cat", "name": "Moss", "keeper": "K-7730", "status": "active",
                        "history": ["K-7730"]},
    "941000024551902": {"species": "cat", "name": "Pip", "keeper": "K-6104", "status": "active",
                        "history": ["K-6001", "K-6104"]},
    "900215003318844": {"species": "dog", "name": "Bramble", "keeper": "K-8812", "status": "active",
                        "history": ["K-8800", "K-8812"]},
    "956000011093377": {"species": "rabbit", "name": "Clover", "keeper": "K-9013", "status": "active",
                        "history": ["K-9001", "K-9013"]},
    "981020000772640": {"species": "dog", "name": "Otto", "keeper": "K-4040", "status": "active",
                        "history": ["K-4001", "K-4020", "K-4040"]},
}
CACHED_KEEPER = {"985112004417311": "K-4480"}
VET = {"985112004417311": {"species": "dog", "last_scan": "2026-11-20"},
       "985112004417113": {"species": "cat", "last_scan": "2026-06-02"},
       "941000024551902": {"species": "cat", "last_scan": "2026-10-11"},
       "900215003318844": {"species": "dog", "last_scan": "2026-09-30"},
       "956000011093377": {"species": "rabbit", "last_scan": "2026-08-14"},
       "981020000772640": {"species": "dog", "last_scan": "2026-07-21"}}
INPUTS = {
    "main": {"chip": "985112004417311", "from": "K-5521", "to": "K-6650", "request": "keeper transfer",
             "prior_chip": "985112004417113", "prior_request": "report Moss (cat) as lost, keeper K-7730"},
    "ref1": {"chip": "941000024551902", "from": "K-6104", "to": "K-6655", "request": "keeper transfer",
             "prior_chip": "900215003318844", "prior_request": "update address for K-8812"},
    "ref2": {"chip": "900215003318844", "from": "K-8812", "to": "K-6700", "request": "keeper transfer",
             "prior_chip": "941000024551902", "prior_request": "update phone for K-6104"},
    "ref3": {"chip": "956000011093377", "from": "K-9013", "to": "K-6702", "request": "keeper transfer",
             "prior_chip": "981020000772640", "prior_request": "update phone for K-4040"},
    "ref4": {"chip": "981020000772640", "from": "K-4040", "to": "K-6710", "request": "keeper transfer",
             "prior_chip": "956000011093377", "prior_request": "update email for K-9013"},
}

FAULTS = {
    "chip_stale": dict(kind="stale_data", root=("registry_lookup", 1), failure=("submit_transfer", 1), hops=3,
                       description="registry_lookup answers from a cached record that still names the keeper "
                                   "before the last transfer, and the registry refuses the transfer."),
    "chip_args": dict(kind="wrong_tool_args", root=("ChatOpenAI", 1), failure=("submit_transfer", 1), hops=4,
                      description="the first model call asks the vet record search for the chip number from "
                                  "the earlier request, so the species check at submission fails."),
    "chip_trunc": dict(kind="truncated_result", root=("fetch_history", 1), failure=("submit_transfer", 1), hops=2,
                       description="fetch_history returns only the first page of keepers, so the chain of "
                                   "custody sent with the transfer does not end at the current keeper."),
    "chip_ctx": dict(kind="context_pollution", root=("gather_context", 1), failure=("submit_transfer", 1), hops=4,
                     description="gather_context puts the previous caller's lost-pet request into the prompt, "
                                 "and the model records a lost report note on the transfer."),
    "chip_route": dict(kind="wrong_routing", root=("classify", 1), failure=("submit_transfer", 1), hops=3,
                       description="classify routes the transfer to the lost-pet path, so the action submitted "
                                   "is not allowed for an active chip."),
}


@tool
def registry_lookup(chip: str) -> str:
    """Look up a microchip in the national registry."""
    rec = dict(REGISTRY[chip])
    rec.pop("history")
    if active("chip_stale") and chip in CACHED_KEEPER:
        rec["keeper"] = CACHED_KEEPER[chip]
    return json.dumps({"chip": chip, **rec})


@tool
def fetch_history(chip: str) -> str:
    """Fetch the keeper history of a chip."""
    hist = REGISTRY[chip]["history"]
    if active("chip_trunc"):
        hist = hist[:3]
    return json.dumps({"chip": chip, "keepers": hist})


@tool
def vet_records(chip: str) -> str:
    """Search vet scan records for a chip."""
    return json.dumps({"chip": chip, **VET[chip]})


class S(TypedDict, total=False):
    req: dict
    record: dict
    history: list
    vet: dict
    context: list
    note: str
    route: str
    action: dict
    result: dict


def policy(messages, tools):
    system = messages[0]["content"]
    user = fakellm.last_user(messages)
    if "search" in system:
        req = json.loads(user)
        chip = req["prior_chip"] if active("chip_args") else req["chip"]
        return json.dumps({"chip": chip})
    if "note" in system:
        if "lost" in user:
            return "Note: keeper reports animal lost; hold transfer."
        return "Note: transfer requested by current keeper; documents seen."
    return "ok"


def build(base_url):
    llm = ChatOpenAI(model="gpt-4o-mini", base_url=base_url, api_key="sk-local-test", max_retries=0)

    def read_request(state: S, config):
        return {"req": dict(state["req"])}

    def lookup(state: S, config):
        rec = json.loads(registry_lookup.invoke({"chip": state["req"]["chip"]}, config))
        return {"record": rec}

    def history(state: S, config):
        return {"history": json.loads(fetch_history.invoke({"chip": state["req"]["chip"]}, config))["keepers"]}

    def vet_check(state: S, config):
        r = llm.invoke([SystemMessage("Choose the vet record search arguments as JSON."),
                        HumanMessage(json.dumps(state["req"]))], config)
        args = json.loads(r.content)
        return {"vet": json.loads(vet_records.invoke(args, config))}

    def gather_context(state: S, config):
        ctx = [f"request: {state['req']['request']} for chip {state['req']['chip']}"]
        if active("chip_ctx"):
            ctx.append(f"request: {state['req']['prior_request']}")
        return {"context": ctx}

    def write_note(state: S, config):
        r = llm.invoke([SystemMessage("Write a one-line case note for the registry."),
                        HumanMessage("\n".join(state["context"]))], config)
        return {"note": r.content}

    def classify(state: S, config):
        words = state["req"]["request"].split()
        route = "lost_report" if "lost" in words else "transfer"
        if active("chip_route"):
            route = "lost_report" if "transfer" in words else "transfer"
        return {"route": route}

    def review(state: S, config):
        return {"note": state["note"].strip()}

    def prepare_transfer(state: S, config):
        return {"action": {"type": "transfer", "chip": state["req"]["chip"], "from": state["record"]["keeper"],
                           "to": state["req"]["to"], "chain": state["history"], "species": state["vet"]["species"],
                           "note": state["note"]}}

    def prepare_lost_report(state: S, config):
        return {"action": {"type": "lost_report", "chip": state["req"]["chip"], "keeper": state["record"]["keeper"],
                           "note": state["note"]}}

    def submit_transfer(state: S, config):
        a = state["action"]
        rec = REGISTRY[a["chip"]]
        if a["type"] != "transfer":
            raise ValueError(f"registry 422: action '{a['type']}' not allowed for chip {a['chip']} with status "
                             f"{rec['status']} and a pending keeper change")
        if a["from"] != rec["keeper"]:
            raise ValueError(f"registry 409: current keeper of {a['chip']} is {rec['keeper']}, request names {a['from']}")
        if a["chain"][-1] != rec["keeper"]:
            raise ValueError(f"registry 422: chain of custody ends at {a['chain'][-1]}, expected current keeper "
                             f"{rec['keeper']}")
        if a["species"] != rec["species"]:
            raise ValueError(f"registry 422: species '{a['species']}' does not match registered species "
                             f"'{rec['species']}' for chip {a['chip']}")
        if "lost" in a["note"]:
            raise ValueError(f"registry 409: chip {a['chip']} has a lost-animal hold; transfer blocked")
        return {"result": {"status": "transferred", "chip": a["chip"], "to": a["to"]}}

    g = StateGraph(S)
    for fn in (read_request, lookup, history, vet_check, gather_context, write_note, classify, review,
               prepare_transfer,
               prepare_lost_report, submit_transfer):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "read_request")
    for a, b in [("read_request", "lookup"), ("lookup", "history"), ("history", "vet_check"),
                 ("vet_check", "gather_context"), ("gather_context", "write_note"), ("write_note", "classify"), ("classify", "review"),
                 ("prepare_transfer", "submit_transfer"), ("prepare_lost_report", "submit_transfer"),
                 ("submit_transfer", END)]:
        g.add_edge(a, b)
    g.add_conditional_edges("review", lambda s: "prepare_" + s["route"],
                            ["prepare_transfer", "prepare_lost_report"])
    return g.compile()


def record(base_url: str, inp: dict, path: str) -> None:
    graph = build(base_url)
    tracer = TrajdebugTracer(path=path, name=AGENT, task=f"{inp['request']} for chip {inp['chip']}")
    try:
        graph.invoke({"req": inp}, config={"callbacks": [tracer]})
    except ValueError:
        pass
