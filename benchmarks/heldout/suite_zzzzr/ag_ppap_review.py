"""Automotive supplier quality: review of a PPAP submission (part submission warrant, dimensional layout,
capability study) and its approval decision in the supplier portal.

Route: a LangGraph StateGraph recorded by trajdebug's LangChain callback handler. Nodes: intake (PSW text
parser), drawing retriever, a CMM lookup loop over the drawing's balloons, a capability node, a review node in
which ChatOpenAI asks for two tools at once (supplier scorecard, prior submissions) then answers JSON, a
conditional edge choosing full or interim approval, and the portal submission tool that validates.
"""

from __future__ import annotations

import json
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.testing import Reply, tool_call

RUN_NAME = "ppap-review"
ROUTE = "langgraph"
DOMAIN = "automotive supplier quality: PPAP level 3 submission review"
SHAPE = "graph: PSW parser, drawing retriever, CMM tool loop, capability node, model with 2 parallel tool calls then JSON answer, conditional edge, portal tool"
SWITCH = None

PARTS = {
    "84120-TR4": {"released_rev": "C.1", "cached_rev": "B", "supplier": "SUP-2231-MX", "parent": "DUNS-080114422",
                  "chars": [("1", "bore diameter", 22.000, 0.013, True, 1.71), ("4", "flange thickness", 6.50, 0.10, False, 2.10),
                            ("7", "true position", 0.0, 0.05, True, 1.52)]},
    "55302-KL1": {"released_rev": "F", "cached_rev": "E", "supplier": "SUP-0918-PL", "parent": "DUNS-340987001",
                  "chars": [("2", "overall length", 118.0, 0.20, True, 1.48), ("3", "hole pattern", 0.0, 0.08, True, 1.61),
                            ("9", "surface flatness", 0.0, 0.03, False, 1.39)]},
    "60771-AB2": {"released_rev": "D", "cached_rev": "C", "supplier": "SUP-4410-DE", "parent": "DUNS-312200871",
                  "chars": [("5", "shaft OD", 15.987, 0.008, True, 1.58), ("6", "runout", 0.0, 0.02, True, 1.44),
                            ("11", "chamfer", 0.5, 0.2, False, 2.6)]},
    "72218-GX9": {"released_rev": "A.2", "cached_rev": "A.1", "supplier": "SUP-1187-US", "parent": "DUNS-118700432",
                  "chars": [("1", "slot width", 8.0, 0.05, True, 1.66), ("8", "wall thickness", 2.2, 0.15, False, 1.81)]},
    "30094-RF3": {"released_rev": "G", "cached_rev": "F", "supplier": "SUP-5520-CN", "parent": "DUNS-552011730",
                  "chars": [("3", "seal groove depth", 3.2, 0.05, True, 1.58), ("9", "pin height", 12.0, 0.04, True, 1.12),
                            ("12", "thread pitch dia", 9.026, 0.03, False, 1.40)]},
}
SCORECARDS = {
    "SUP-2231-MX": {"rating": "green", "controlled_shipping": None, "ppm_12m": 14},
    "SUP-0918-PL": {"rating": "red", "controlled_shipping": "CS1", "ppm_12m": 410},
    "SUP-4410-DE": {"rating": "green", "controlled_shipping": None, "ppm_12m": 6},
    "SUP-1187-US": {"rating": "yellow", "controlled_shipping": None, "ppm_12m": 77},
    "SUP-5520-CN": {"rating": "green", "controlled_shipping": None, "ppm_12m": 21},
}
PARENTS = {v["parent"]: {"rating": "green", "controlled_shipping": None, "ppm_12m": 35} for v in PARTS.values()}

INPUTS = []
for _pn, _p in PARTS.items():
    INPUTS.append({"task": f"PPAP level 3 review, part {_pn} from {_p['supplier']}", "part": _pn,
                   "psw": f"PART NO: {_pn}\nDRAWING REV: {_p['released_rev']}\nSUPPLIER CODE: {_p['supplier']}\nPARENT: {_p['parent']}\n"
                          f"SUBMISSION LEVEL: 3\nREASON: new part\nWEIGHT KG: 0.412"})

CASES = [
    {"id": "ppap_psw_revision", "input": 0, "kind": "lossy_parsing",
     "root": ("PswParser", 1, "parse"), "failure": ("portal_submit", 1),
     "what": "the PSW parser keeps drawing revision 'C' of 'C.1'",
     "description": "The PSW parser cut the drawing revision C.1 at its dot, so the warrant is submitted against revision C and the portal refuses it."},
    {"id": "ppap_parent_scorecard", "input": 1, "kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 1, "llm"), "failure": ("portal_submit", 1),
     "what": "the model asks for the scorecard of the parent DUNS instead of the shipping site",
     "description": "The review model asked for the supplier scorecard under the parent company's DUNS rather than the shipping site's code, missing the site's controlled-shipping status, and the full approval is refused."},
    {"id": "ppap_cached_drawing", "input": 2, "kind": "stale_data",
     "root": ("DrawingRetriever", 1, "retrieval"), "failure": ("portal_submit", 1),
     "what": "the drawing retriever answers the cached revision C instead of released D",
     "description": "The drawing retriever served its cached copy of revision C of the drawing, superseded by revision D, and the layout checked against it is refused by the portal."},
    {"id": "ppap_cpk_statement", "input": 3, "kind": "hallucinated_value",
     "root": ("ChatOpenAI", 2, "llm"), "failure": ("portal_submit", 1),
     "what": "the model's summary states Cpk 1.87 for balloon 1; the study says 1.66",
     "description": "The review model's summary reported a slot width Cpk of 1.87 that no study holds (the study gives 1.66), and the portal rejects the mismatch."},
    {"id": "ppap_any_capable", "input": 4, "kind": "wrong_routing",
     "root": ("route_decision", 1, "other"), "failure": ("portal_submit", 1),
     "what": "the router approves when any special characteristic is capable instead of all",
     "description": "The approval router sent the part to full approval because one special characteristic was capable, although pin height (balloon 9) has Cpk 1.12."},
]


def _switch(case_id: str) -> bool:
    return SWITCH == case_id


# ----------------------------------------------------------------------------------------------- the model
def brain(request):
    msgs = request.body["messages"]
    last = msgs[-1]
    if last["role"] == "tool":
        results = [json.loads(m["content"]) for m in msgs if m["role"] == "tool"]
        card = next(r for r in results if "rating" in r)
        ctx = json.loads(msgs[1]["content"])
        cpk = {c["balloon"]: c["cpk"] for c in ctx["capability"]}
        if SWITCH == "ppap_cpk_statement":
            cpk["1"] = 1.87
        return json.dumps({"part": ctx["part"], "scorecard": card, "key_cpk": cpk,
                           "summary": f"{len(cpk)} characteristics studied; supplier rating {card['rating']}"})
    ctx = json.loads(last["content"])
    who = ctx["parent"] if SWITCH == "ppap_parent_scorecard" else ctx["supplier"]
    return Reply(tool_calls=(tool_call("get_supplier_scorecard", {"supplier": who}),
                             tool_call("get_prior_submissions", {"part": ctx["part"]})))


# ----------------------------------------------------------------------------------------------- tools
@tool
def get_supplier_scorecard(supplier: str) -> dict:
    """Quality scorecard of a supplier: rating, controlled shipping level, PPM over 12 months."""
    card = SCORECARDS.get(supplier) or PARENTS[supplier]
    return {"supplier": supplier, **card}


@tool
def get_prior_submissions(part: str) -> list:
    """Earlier PPAP submissions of a part."""
    return [{"part": part, "submission": f"PSW-{part[:5]}-01", "status": "rejected", "reason": "missing MSA"}]


@tool
def cmm_lookup(part: str, balloon: str) -> dict:
    """Summary of the 30-piece CMM study of one balloon."""
    ch = next(c for c in PARTS[part]["chars"] if c[0] == balloon)
    _, name, nominal, tol, special, cpk = ch
    return {"balloon": balloon, "n": 30, "mean": nominal, "std": round(tol / (3 * cpk), 6)}


@tool
def portal_submit(part: str, psw_rev: str, drawing_rev: str, decision: str, key_cpk: dict, supplier: str) -> dict:
    """Submit the PPAP decision to the supplier portal."""
    p = PARTS[part]
    if psw_rev != p["released_rev"]:
        raise ValueError(f"portal 422: PSW drawing revision {psw_rev} does not match released revision {p['released_rev']} of {part}")
    if drawing_rev != p["released_rev"]:
        raise ValueError(f"portal 422: dimensional results reference drawing rev {drawing_rev}; released revision is {p['released_rev']}")
    for b, name, nominal, tol, special, cpk in p["chars"]:
        if abs(float(key_cpk.get(b, 0)) - cpk) > 0.011:
            raise ValueError(f"portal 422: reported Cpk {key_cpk.get(b)} for balloon {b} ({name}) does not match the submitted study ({cpk})")
    if decision == "approved":
        card = SCORECARDS[p["supplier"]]
        if card["controlled_shipping"]:
            raise ValueError(f"portal 409: {p['supplier']} is on controlled shipping {card['controlled_shipping']}; full approval not allowed")
        low = [(b, cpk) for b, _, _, _, special, cpk in p["chars"] if special and cpk < 1.33]
        if low:
            raise ValueError(f"portal 409: full approval requires Cpk >= 1.33 on every special characteristic; balloon {low[0][0]} Cpk {low[0][1]}")
    return {"part": part, "decision": decision, "portal_id": f"PPAP-{part}-{decision[:3].upper()}"}


# ----------------------------------------------------------------------------------------------- graph pieces
class DrawingRetriever(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        part = query.split()[0]
        p = PARTS[part]
        rev = p["cached_rev"] if SWITCH == "ppap_cached_drawing" else p["released_rev"]
        chars = [{"balloon": b, "name": n, "nominal": nom, "tol": tol, "special": sp} for b, n, nom, tol, sp, _ in p["chars"]]
        return [Document(page_content=f"Drawing {part} rev {rev}", metadata={"part": part, "rev": rev, "characteristics": chars})]


def _parse_psw(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        k, v = line.split(":", 1)
        out[k.strip().lower().replace(" ", "_")] = v.strip()
    if _switch("ppap_psw_revision"):
        out["drawing_rev"] = out["drawing_rev"].split(".")[0]
    out["weight_kg"] = float(out["weight_kg"])
    return out


PSW_PARSER = RunnableLambda(_parse_psw).with_config(run_name="PswParser")
RETRIEVER = DrawingRetriever()


class S(TypedDict, total=False):
    part: str
    psw_text: str
    psw: dict
    drawing: dict
    studies: list
    capability: list
    review: dict
    decision: str
    portal: dict


def build(llm):
    model = llm.bind_tools([get_supplier_scorecard, get_prior_submissions])

    def intake(state: S) -> dict:
        return {"psw": PSW_PARSER.invoke(state["psw_text"])}

    def fetch_drawing(state: S) -> dict:
        [doc] = RETRIEVER.invoke(f"{state['part']} released drawing")
        return {"drawing": dict(doc.metadata)}

    def check_dimensions(state: S) -> dict:
        studies = [cmm_lookup.invoke({"part": state["part"], "balloon": c["balloon"]}) for c in state["drawing"]["characteristics"]]
        return {"studies": studies}

    def capability(state: S) -> dict:
        out = []
        for c, st in zip(state["drawing"]["characteristics"], state["studies"]):
            usl, lsl = c["nominal"] + c["tol"], c["nominal"] - c["tol"]
            cpk = min(usl - st["mean"], st["mean"] - lsl) / (3 * st["std"])
            out.append({"balloon": c["balloon"], "special": c["special"], "cpk": round(cpk, 2)})
        return {"capability": out}

    def review(state: S) -> dict:
        psw = state["psw"]
        msgs = [SystemMessage(content="You review PPAP submissions. Check the supplier scorecard and prior submissions, then answer JSON."),
                HumanMessage(content=json.dumps({"part": state["part"], "supplier": psw["supplier_code"], "parent": psw["parent"],
                                                 "capability": state["capability"]}))]
        ai = model.invoke(msgs)
        tool_msgs = [{"get_supplier_scorecard": get_supplier_scorecard, "get_prior_submissions": get_prior_submissions}[c["name"]].invoke(c)
                     for c in ai.tool_calls]
        final = model.invoke(msgs + [ai] + tool_msgs)
        return {"review": json.loads(final.content)}

    def route_decision(state: S) -> str:
        special = [c for c in state["capability"] if c["special"]]
        check = any if _switch("ppap_any_capable") else all
        capable = check(c["cpk"] >= 1.33 for c in special)
        clean = not state["review"]["scorecard"]["controlled_shipping"]
        return "approve" if capable and clean else "interim"

    def approve(state: S) -> dict:
        return {"decision": "approved"}

    def interim(state: S) -> dict:
        return {"decision": "interim"}

    def submit(state: S) -> dict:
        res = portal_submit.invoke({"part": state["part"], "psw_rev": state["psw"]["drawing_rev"], "drawing_rev": state["drawing"]["rev"],
                                    "decision": state["decision"], "key_cpk": state["review"]["key_cpk"], "supplier": state["psw"]["supplier_code"]})
        return {"portal": res}

    g = StateGraph(S)
    for name, fn in [("intake", intake), ("fetch_drawing", fetch_drawing), ("check_dimensions", check_dimensions),
                     ("capability", capability), ("review", review), ("approve", approve), ("interim", interim), ("submit", submit)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "fetch_drawing")
    g.add_edge("fetch_drawing", "check_dimensions")
    g.add_edge("check_dimensions", "capability")
    g.add_edge("capability", "review")
    g.add_conditional_edges("review", route_decision, {"approve": "approve", "interim": "interim"})
    g.add_edge("approve", "submit")
    g.add_edge("interim", "submit")
    g.add_edge("submit", END)
    return g.compile()


_GRAPH: dict[str, Any] = {}


def execute(inp: dict, env, run) -> None:
    if env.base_url not in _GRAPH:
        llm = ChatOpenAI(model=env.model, base_url=env.base_url, api_key="not-needed", max_retries=0)
        _GRAPH[env.base_url] = build(llm)
    _GRAPH[env.base_url].invoke({"part": inp["part"], "psw_text": inp["psw"]}, config=env.config)
