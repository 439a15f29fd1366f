"""Parcel locker network dispatcher (route: langgraph).

A LangGraph graph takes a depot's evening manifest, retrieves the parcel lockers of
each postcode district, has the model triage parcels (locker or counter pickup),
prints counter slips when needed (conditional edge), checks and reserves a
compartment per parcel, has the model plan the van rounds, dispatches the vans and has
the model write the pickup notice sent through the SMS gateway.
"""

from __future__ import annotations

import json
import re
from typing import TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from benchmarks.heldout.suite_v import kit
from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import FakeModelServer

NAME = "parcel-locker-dispatch"
ROUTE = "langgraph"
DOMAIN = "parcel locker network"
SHAPE = "graph: manifest, locker retriever per district, model triage, conditional counter-slip node, per-parcel status + reservation tools, model plans van rounds, dispatch, model-written pickup notice to the SMS gateway"

LOCKERS = {
    "NR3": [("LK-NR3-01", {"S": 6, "M": 4, "L": 2}), ("LK-NR3-02", {"S": 3, "M": 2, "L": 1})],
    "NR13": [("LK-NR13-01", {"S": 5, "M": 3, "L": 2})],
    "NR5": [("LK-NR5-01", {"S": 4, "M": 3, "L": 1}), ("LK-NR5-03", {"S": 2, "M": 2, "L": 2})],
    "NR2": [("LK-NR2-01", {"S": 5, "M": 4, "L": 2})],
}
YESTERDAY = {"LK-NR5-01": {"S": 4, "M": 3, "L": 1}}
TODAY_TAKEN = {"LK-NR5-01": {"M": 2}}


def manifest(no: int, parcels: list[tuple]) -> dict:
    return {"manifest": f"MF-{no}", "date": "2026-12-18",
            "parcels": [{"parcel": p, "size": s, "postcode": pc, "signature": sig} for p, s, pc, sig in parcels]}


REFS = [
    manifest(7001, [("P-7101", "S", "NR3 1AB", False), ("P-7102", "M", "NR5 8QT", False), ("P-7103", "L", "NR2 4EE", False),
                    ("P-7104", "S", "NR3 2CD", True), ("P-7105", "M", "NR3 9ZZ", False)]),
    manifest(7002, [("P-7201", "M", "NR2 1AA", False), ("P-7202", "S", "NR2 3BB", False), ("P-7203", "S", "NR5 2FF", False)]),
    manifest(7003, [("P-7301", "L", "NR5 7HH", False), ("P-7302", "S", "NR3 5JJ", False), ("P-7303", "M", "NR13 6XY", False),
                    ("P-7304", "S", "NR3 4KK", False), ("P-7305", "M", "NR2 8LL", True), ("P-7306", "S", "NR5 1MM", False)]),
    manifest(7004, [("P-7401", "S", "NR13 2QQ", False), ("P-7402", "M", "NR3 6RR", False), ("P-7403", "S", "NR3 7SS", False),
                    ("P-7404", "L", "NR2 9TT", False)]),
]

CASES = [
    {"fault": "lockers.rounds", "kind": "plan_error", "root": "ChatOpenAI", "marker": "is served by the counter van",
     "input": manifest(7501, [("P-5001", "S", "NR3 1AB", False), ("P-5002", "M", "NR5 3CD", False), ("P-5003", "S", "NR5 9EF", False),
                              ("P-5004", "L", "NR2 2GH", False), ("P-5005", "M", "NR3 4JK", False), ("P-5006", "S", "NR2 6LM", True)])},
    {"fault": "lockers.triage", "kind": "wrong_routing", "root": "ChatOpenAI", "marker": "P-5104: locker",
     "input": manifest(7502, [("P-5101", "M", "NR2 1AA", False), ("P-5102", "S", "NR3 2BB", False), ("P-5103", "S", "NR5 3CC", False),
                              ("P-5104", "M", "NR3 4DD", True), ("P-5105", "L", "NR5 5EE", False)])},
    {"fault": "lockers.district_search", "kind": "wrong_retrieval", "root": "LockerDirectory", "marker": "LK-NR13-01",
     "input": manifest(7503, [("P-5201", "S", "NR5 1AA", False), ("P-5202", "M", "NR3 2BB", False), ("P-5203", "S", "NR3 3CC", False),
                              ("P-5204", "M", "NR2 4DD", False)])},
    {"fault": "lockers.expiry_style", "kind": "format_drift", "root": "ChatOpenAI", "marker": "by 21/12",
     "input": manifest(7504, [("P-5301", "S", "NR2 1AA", False), ("P-5302", "M", "NR3 2BB", False), ("P-5303", "L", "NR5 3CC", False),
                              ("P-5304", "S", "NR3 4DD", False), ("P-5305", "S", "NR2 5EE", False)])},
    {"fault": "lockers.status_cache", "kind": "stale_data", "root": "locker_status", "marker": '"M": 3',
     "input": manifest(7505, [("P-5401", "M", "NR5 1AA", False), ("P-5402", "S", "NR3 2BB", False), ("P-5403", "M", "NR5 3CC", False),
                              ("P-5404", "S", "NR2 4DD", False), ("P-5405", "M", "NR3 5EE", False)])},
]


def _district(postcode: str) -> str:
    return postcode.split()[0]


def _text(m: dict) -> str:
    c = m.get("content")
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return c or ""


def policy(request) -> str:
    messages = request.body["messages"]
    system, user = _text(messages[0]), _text(messages[-1])
    data = json.loads(user.split("\n", 1)[1]) if "\n" in user else {}
    if system.startswith("You triage parcels"):
        lines = []
        for p in data["parcels"]:
            where = "counter" if p["signature"] else "locker"
            if kit.active("lockers.triage") and p["parcel"] == "P-5104":
                where = "locker"
            lines.append(f"{p['parcel']}: {where}")
        return "\n".join(lines)
    if system.startswith("You plan van rounds"):
        lockers = sorted(data["lockers"])
        east = [l for l in lockers if "-NR3-" in l or "-NR13-" in l]
        west = [l for l in lockers if l not in east]
        note = "Note: each van returns to the depot by 21:00"
        if kit.active("lockers.rounds"):
            dropped = west.pop() if west else east.pop()
            note = f"Note: {dropped} is served by the counter van"
        rounds = [f"Round A: {' > '.join(east)}"] if east else []
        if west:
            rounds.append(f"Round B: {' > '.join(west)}")
        return "\n".join(rounds + [note])
    if system.startswith("You write the pickup notice"):
        expiry = data["expires"]
        if kit.active("lockers.expiry_style"):
            expiry = f"{int(expiry[8:10])}/{expiry[5:7]}"
        return f"Your parcel {{parcel}} is in locker {{locker}}. Code {{code}}. Collect by {expiry}."
    return "I cannot help with that."


class LockerDirectory(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        district = query.split()[-1]
        if kit.active("lockers.district_search") and district == "NR3":
            district = "NR13"
        return [Document(page_content=json.dumps({"locker": lk, "district": district, "sizes": sorted(free)}),
                         metadata={"id": lk}) for lk, free in LOCKERS[district]]


class S(TypedDict, total=False):
    manifest: dict
    parcels: list[dict]
    lockers: dict
    triage: dict
    rounds: list[list[str]]
    reserved: list[dict]


def build_graph(llm, world: dict):
    directory = LockerDirectory()

    @tool
    def print_counter_slip(parcel: str) -> str:
        """Print a counter-pickup slip for a parcel that needs a signature."""
        return f"slip CS-{parcel[2:]} printed for {parcel}"

    @tool
    def locker_status(locker: str) -> dict:
        """Free compartments of a locker, by size."""
        if kit.active("lockers.status_cache") and locker in YESTERDAY:
            return {"locker": locker, "free": dict(YESTERDAY[locker]), "as_of": "2026-12-17T19:00"}
        return {"locker": locker, "free": dict(world["free"][locker]), "as_of": "2026-12-18T18:55"}

    @tool
    def reserve_compartment(locker: str, parcel: str, size: str, signature: bool) -> dict:
        """Reserve a compartment of a size in a locker for a parcel."""
        if signature:
            raise RuntimeError(f"locker network API 409: parcel {parcel} is signature-on-delivery; lockers cannot release it")
        if world["free"][locker].get(size, 0) < 1:
            raise RuntimeError(f"locker network API 409: no free {size} compartment in {locker}")
        world["free"][locker][size] -= 1
        return {"parcel": parcel, "locker": locker, "size": size, "code": f"{(int(parcel[2:]) * 37) % 9000 + 1000}"}

    @tool
    def dispatch_vans(manifest: str, rounds: list[list[str]], reserved: list[dict]) -> dict:
        """Hand the rounds and the reservations to the van dispatch system."""
        on_round = {lk for r in rounds for lk in r}
        for r in reserved:
            if r["locker"] not in on_round:
                raise RuntimeError(f"dispatch {manifest}: {r['locker']} holds reserved parcels but is on no van round")
            lk_district = r["locker"].split("-")[1]
            if lk_district != r["district"]:
                raise RuntimeError(f"dispatch {manifest}: parcel {r['parcel']} for district {r['district']} "
                                   f"is reserved at {r['locker']} in {lk_district}")
        return {"manifest": manifest, "vans": len(rounds), "stops": len(on_round)}

    @tool
    def send_notifications(template: str, count: int) -> dict:
        """Send the pickup notices through the SMS gateway."""
        m = re.search(r"Collect by (\S+)\.", template)
        if not m or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", m.group(1)):
            raise RuntimeError(f"SMS gateway 400: template field 'collect by' must be an ISO date, got {m.group(1) if m else None!r}")
        return {"queued": count, "gateway": "sms-eu-2"}

    def load_manifest(state: S) -> dict:
        return {"parcels": [dict(p, district=_district(p["postcode"])) for p in state["manifest"]["parcels"]]}

    def find_lockers(state: S) -> dict:
        found = {}
        for d in sorted({p["district"] for p in state["parcels"]}):
            docs = directory.invoke(f"parcel lockers in {d}")
            found[d] = [json.loads(doc.page_content)["locker"] for doc in docs]
        return {"lockers": found}

    def triage(state: S) -> dict:
        msg = llm.invoke([SystemMessage("You triage parcels: locker, or counter pickup for signature-on-delivery."),
                          HumanMessage("Parcels:\n" + json.dumps({"parcels": state["parcels"]}))])
        return {"triage": dict(re.findall(r"(P-\d+): (\w+)", msg.content))}

    def counter_slips(state: S) -> dict:
        for p, where in sorted(state["triage"].items()):
            if where == "counter":
                print_counter_slip.invoke({"parcel": p})
        return {}

    def plan_rounds(state: S) -> dict:
        used = sorted({r["locker"] for r in state["reserved"]})
        msg = llm.invoke([SystemMessage("You plan van rounds over the lockers in use. One line per round."),
                          HumanMessage("Lockers:\n" + json.dumps({"lockers": used}))])
        rounds = [line.split(": ", 1)[1].split(" > ") for line in msg.content.splitlines() if line.startswith("Round")]
        return {"rounds": rounds}

    def assign(state: S) -> dict:
        reserved = []
        for p in state["parcels"]:
            if state["triage"][p["parcel"]] != "locker":
                continue
            chosen = None
            for lk in state["lockers"][p["district"]]:
                st = locker_status.invoke({"locker": lk})
                if st["free"].get(p["size"], 0) > 0:
                    chosen = lk
                    break
            if chosen is None:
                continue
            r = reserve_compartment.invoke({"locker": chosen, "parcel": p["parcel"], "size": p["size"],
                                            "signature": p["signature"]})
            reserved.append(dict(r, district=p["district"]))
        return {"reserved": reserved}

    def dispatch(state: S) -> dict:
        dispatch_vans.invoke({"manifest": state["manifest"]["manifest"], "rounds": state["rounds"],
                              "reserved": state["reserved"]})
        return {}

    def notify(state: S) -> dict:
        msg = llm.invoke([SystemMessage("You write the pickup notice template for locker parcels."),
                          HumanMessage("Notice:\n" + json.dumps({"expires": "2026-12-21", "parcels": len(state["reserved"])}))])
        send_notifications.invoke({"template": msg.content, "count": len(state["reserved"])})
        return {}

    g = StateGraph(S)
    for name, fn in [("load_manifest", load_manifest), ("find_lockers", find_lockers), ("triage", triage),
                     ("counter_slips", counter_slips), ("plan_rounds", plan_rounds), ("assign", assign),
                     ("dispatch", dispatch), ("notify", notify)]:
        g.add_node(name, fn)
    g.add_edge(START, "load_manifest")
    g.add_edge("load_manifest", "find_lockers")
    g.add_edge("find_lockers", "triage")
    g.add_conditional_edges("triage", lambda s: "counter_slips" if "counter" in s["triage"].values() else "assign",
                            ["counter_slips", "assign"])
    g.add_edge("counter_slips", "assign")
    g.add_edge("assign", "plan_rounds")
    g.add_edge("plan_rounds", "dispatch")
    g.add_edge("dispatch", "notify")
    g.add_edge("notify", END)
    return g.compile()


class Harness:
    def __enter__(self):
        self.server = FakeModelServer(policy, model="depot-planner-1").__enter__()
        self.llm = ChatOpenAI(base_url=self.server.base_url, api_key="not-needed", model="depot-planner-1",
                              max_retries=0, temperature=0)
        return self

    def __exit__(self, *exc):
        self.server.__exit__(*exc)

    def record(self, inp: dict, path) -> None:
        free = {lk: dict(f) for d in LOCKERS.values() for lk, f in d}
        for lk, taken in TODAY_TAKEN.items():
            for size, n in taken.items():
                free[lk][size] -= n
        graph = build_graph(self.llm, {"free": free})
        tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"dispatch manifest {inp['manifest']}")
        try:
            graph.invoke({"manifest": inp}, config={"callbacks": [tracer], "recursion_limit": 50})
        except Exception:
            pass
