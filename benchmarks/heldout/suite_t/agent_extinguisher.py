"""langgraph route: fire-extinguisher servicing planner (planner LLM, per-building loop with procedure retrieval,
note-writing LLM, parts orders, compliance-portal submission)."""
import json
import re
from typing import TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import FakeModelServer

from . import kit


NAME = "extinguisher-service-planner"

SITES = {  # building -> (extinguisher type, units, extended service due)
    "Alder Court": {"B1": ("water", 6, False), "B2": ("CO2", 4, True), "B3": ("foam", 5, False)},
    "Birchwood Works": {"B1": ("CO2", 8, False), "B2": ("foam", 6, False)},
    "Cedar Yard": {"B1": ("foam", 7, False), "B2": ("CO2", 3, False), "B3": ("water", 9, False), "B4": ("powder", 2, False)},
    "Dunmore Depot": {"B1": ("water", 5, False), "B2": ("powder", 4, True), "B3": ("CO2", 6, False)},
    "Elm Street Offices": {"B1": ("CO2", 5, False), "B2": ("water", 7, False), "B3": ("foam", 3, False)},
    "Fernhill School": {"B1": ("water", 10, False), "B2": ("CO2", 2, True)},
    "Glenside Care Home": {"B1": ("foam", 6, False), "B2": ("water", 8, False), "B3": ("CO2", 4, False)},
    "Hawthorn Mill": {"B1": ("powder", 3, False), "B2": ("foam", 5, True), "B3": ("water", 6, False)},
    "Ivy Lane Surgery": {"B1": ("water", 4, False), "B2": ("CO2", 3, False), "B3": ("foam", 4, False)},
}
ADDRESS = {s: f"{s}, Unit {i + 3}" for i, s in enumerate(SITES)}
PROCS = {t: {"id": f"PROC-{t.upper()}-0{i + 6}", "type": t, "parts": [f"{t[:2].upper()}-SEAL-{i + 6}", f"{t[:2].upper()}-PIN-{i + 2}"]}
         for i, t in enumerate(["water", "CO2", "foam", "powder"])}


@tool
def fetch_site(site: str) -> str:
    """Extinguisher register of a customer site."""
    return json.dumps([{"building": b, "type": t, "units": n, "extended_due": e} for b, (t, n, e) in SITES[site].items()])


@tool
def search_procedures(extinguisher_type: str) -> str:
    """Search the service-procedure library for an extinguisher type."""
    t = extinguisher_type
    if kit.active("ext.retrieve") and t == "CO2":
        t = "foam"
    docs = [PROCS[t], *[p for k, p in PROCS.items() if k != t][:1]]
    return json.dumps({"query": extinguisher_type, "docs": docs})


@tool
def order_parts(site: str, building: str, parts: list, qty: int) -> str:
    """Order service parts from the wholesaler, delivered to the job site."""
    deliver = "Central Depot, Dock Road" if kit.active("ext.ignore") else ADDRESS[site]
    return json.dumps({"order": f"PO-{building}-{qty}", "parts": parts, "qty": qty, "deliver_to": deliver})


@tool
def submit_certificate(site: str, visits: str) -> str:
    """Submit the service visits to the compliance portal for the site certificate."""
    vs = json.loads(visits)
    for b, (t, n, ext) in SITES[site].items():
        v = next((x for x in vs if x["building"] == b), None)
        if v is None:
            raise RuntimeError(f"compliance portal 422: no visit record for {b}")
        if v["units"] != n:
            raise RuntimeError(f"compliance portal 422: {b} serviced units do not match the site register")
        if not re.fullmatch(r"\d{4}-\d\d-\d\d", v["next_due"]):
            raise RuntimeError(f"compliance portal 422: visits[{b}].next_due: invalid date")
        if ext and v["service"] != "extended":
            raise RuntimeError(f"compliance portal 422: {b} record does not meet the BS 5306-3 schedule")
        if not all(p.startswith(t[:2].upper()) for p in v["parts"]):
            raise RuntimeError(f"compliance portal 422: {b} parts list does not fit {t} units")
        if v["deliver_to"] != ADDRESS[site]:
            raise RuntimeError(f"compliance portal 422: {b} parts consignment not traceable to the site")
    return json.dumps({"certificate": f"FX-{len(vs)}-{site.split()[0].upper()}"})


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    if prompt.startswith("PLAN"):
        reg = json.loads(prompt.split("\n", 1)[1])
        plan = {r["building"]: ("extended" if r["extended_due"] else "basic") for r in reg}
        if kit.active("ext.plan"):
            plan = dict.fromkeys(plan, "basic")
        return json.dumps({"services": plan, "order": list(plan)})
    if prompt.startswith("NOTE"):
        building = re.search(r"building (B\d)", prompt).group(1)
        units = int(re.search(r"units (\d+)", prompt).group(1))
        parts = json.loads(re.search(r"parts (\[.*?\])", prompt).group(1))
        due = "2027-03-14"
        if kit.active("ext.drift") and building == "B3":
            due = "14/03/2027"
        return json.dumps({"building": building, "units": units, "parts": parts, "next_due": due})
    return "OK"


class S(TypedDict, total=False):
    site: str
    register: list
    services: dict
    idx: int
    procedure: dict
    context: str
    note: dict
    visits: list
    result: dict


def build(llm):
    def load_site(st):
        return {"register": json.loads(fetch_site.invoke({"site": st["site"]})), "idx": 0, "visits": []}

    def plan(st):
        msg = llm.invoke([SystemMessage("You plan extinguisher service visits. Answer JSON."),
                          HumanMessage("PLAN\n" + json.dumps(st["register"]))])
        return {"services": json.loads(msg.content)["services"]}

    def find_procedure(st):
        b = st["register"][st["idx"]]
        found = json.loads(search_procedures.invoke({"extinguisher_type": b["type"]}))
        return {"procedure": found["docs"][0]}

    def compose_context(st):
        b = st["register"][st["idx"]]
        text = f"building {b['building']} units {b['units']} parts {json.dumps(st['procedure']['parts'])}"
        if kit.active("ext.context") and st["idx"] == 1:
            prev = st["register"][0]
            text = f"previous visit note: units {prev['units']} at {prev['building']}; " + text
        return {"context": text}

    def write_note(st):
        msg = llm.invoke([SystemMessage("Write the service note for one building. Answer JSON."),
                          HumanMessage("NOTE\n" + st["context"])])
        return {"note": json.loads(msg.content)}

    def order(st):
        n = st["note"]
        got = json.loads(order_parts.invoke({"site": st["site"], "building": n["building"], "parts": n["parts"], "qty": n["units"]}))
        visit = {"building": n["building"], "service": st["services"][n["building"]], "parts": n["parts"], "units": got["qty"],
                 "next_due": n["next_due"], "deliver_to": got["deliver_to"]}
        return {"visits": st["visits"] + [visit], "idx": st["idx"] + 1}

    def more(st):
        return "find_procedure" if st["idx"] < len(st["register"]) else "certify"

    def certify(st):
        return {"result": json.loads(submit_certificate.invoke({"site": st["site"], "visits": json.dumps(st["visits"])}))}

    g = StateGraph(S)
    for n, f in [("load_site", load_site), ("plan", plan), ("find_procedure", find_procedure), ("compose_context", compose_context),
                 ("write_note", write_note), ("order", order), ("certify", certify)]:
        g.add_node(n, f)
    g.add_edge(START, "load_site")
    g.add_edge("load_site", "plan")
    g.add_edge("plan", "find_procedure")
    g.add_edge("find_procedure", "compose_context")
    g.add_edge("compose_context", "write_note")
    g.add_edge("write_note", "order")
    g.add_conditional_edges("order", more, ["find_procedure", "certify"])
    g.add_edge("certify", END)
    return g.compile()


def run_agent(site: str, path: str) -> None:
    with FakeModelServer(policy) as server:
        llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
        tracer = TrajdebugTracer(path=path, name=NAME, task=f"annual extinguisher service at {site}")
        try:
            build(llm).invoke({"site": site}, config={"callbacks": [tracer], "recursion_limit": 100})
        except RuntimeError:
            pass


FAULTS = [
    ("plan_error", "ext.plan", "Alder Court", "ChatOpenAI", '\\"B2\\": \\"basic\\"'),
    ("wrong_retrieval", "ext.retrieve", "Elm Street Offices", "search_procedures", r'CO2\", \"docs\": [{\"id\": \"PROC-FOAM'),
    ("context_pollution", "ext.context", "Glenside Care Home", "compose_context", "previous visit note"),
    ("format_drift", "ext.drift", "Cedar Yard", "ChatOpenAI", "14/03/2027"),
    ("tool_ignores_argument", "ext.ignore", "Ivy Lane Surgery", "order_parts", "Central Depot"),
]
REFS = ["Birchwood Works", "Dunmore Depot", "Fernhill School", "Hawthorn Mill"]
