"""imdg-stowage-check: a liner's stowage desk checking dangerous-goods segregation (IMDG Code 7.2.4, containers on
deck) in a departure bay plan before it goes to the port's DG office.

Route: a LangGraph `StateGraph` with `ChatOpenAI`, LangChain tools, a retriever and output parsers, recorded by
trajdebug's LangChain callback handler, JSONL.
Shape: a paged bay-plan tool loop, a DG-declaration parser, one retriever call per UN number, a plain
exemption-memory node and a pair-building node, a model that checks each pair with two parallel tool calls per
turn (segregation rule, bay distance) through a ToolNode, a verdict parser, restow requests for the conflicts
found, and the DG office's submission tool that checks the plan itself.
"""

import json
import re
from typing import Annotated, Any, TypedDict

from trajdebug.testing import FakeModelServer, Reply, tool_call

from ._kit import dumps, system_text, text_of, tool_results

NAME = "imdg-stowage-check"
ROUTE = "langgraph"
DOMAIN = "liner stowage planning: dangerous-goods segregation in a departure bay plan"
SHAPE = "paged tool loop, output parser, retriever loop, memory node, pair node, model with parallel tool calls per pair (ToolNode), verdict parser, restow tool, submission tool"

SWITCH: str | None = None


def _on(case: str) -> bool:
    return SWITCH == case


DGL = {  # the IMDG Dangerous Goods List entries the retriever serves
    "UN1263": {"psn": "PAINT", "class": "3", "stowage": "A"},
    "UN1942": {"psn": "AMMONIUM NITRATE", "class": "5.1", "stowage": "C"},
    "UN1823": {"psn": "SODIUM HYDROXIDE, SOLID", "class": "8", "stowage": "A"},
    "UN1266": {"psn": "PERFUMERY PRODUCTS", "class": "3", "stowage": "A"},
    "UN1203": {"psn": "GASOLINE", "class": "3", "stowage": "E"},
    "UN2067": {"psn": "AMMONIUM NITRATE BASED FERTILIZER", "class": "5.1", "stowage": "A"},
    "UN2071": {"psn": "AMMONIUM NITRATE BASED FERTILIZER", "class": "9", "stowage": "A"},
    "UN3082": {"psn": "ENVIRONMENTALLY HAZARDOUS SUBSTANCE, LIQUID, N.O.S.", "class": "9", "stowage": "A"},
    "UN1950": {"psn": "AEROSOLS", "class": "2.1", "stowage": "A"},
    "UN1748": {"psn": "CALCIUM HYPOCHLORITE MIXTURE, DRY", "class": "5.1", "stowage": "D"},
    "UN1830": {"psn": "SULPHURIC ACID", "class": "8", "stowage": "C"},
    "UN1993": {"psn": "FLAMMABLE LIQUID, N.O.S.", "class": "3", "stowage": "B"},
    "UN1479": {"psn": "OXIDIZING SOLID, N.O.S.", "class": "5.1", "stowage": "B"},
    "UN2794": {"psn": "BATTERIES, WET, FILLED WITH ACID", "class": "8", "stowage": "A"},
    "UN3480": {"psn": "LITHIUM ION BATTERIES", "class": "9", "stowage": "A"},
}

SEGREGATION = {  # 7.2.4 table, classes present here: 1 away from, 2 separated from, 0 no general requirement
    frozenset({"3", "5.1"}): 2, frozenset({"2.1", "5.1"}): 2, frozenset({"5.1", "8"}): 2,
    frozenset({"2.1", "3"}): 2, frozenset({"2.1", "8"}): 1,
}
TERMS = {0: "none", 1: "away from", 2: "separated from", 3: "separated by a complete compartment or hold from"}
SPACES_NEEDED = {0: 0, 1: 0, 2: 1, 3: 2}


def _code(a: str, b: str) -> int:
    return 0 if a == b else SEGREGATION.get(frozenset({a, b}), 0)


def _spaces(pos_a: str, pos_b: str) -> int:
    """Container spaces between two 40-foot bays (bay numbers are even, adjacent bays differ by 4)."""
    return max(abs(int(pos_a[:2]) - int(pos_b[:2])) // 4 - 1, 0)


VOYAGES = [
    {"vessel": "MSC LORENA", "voyage": "231W", "filler": 11, "dg": [
        ("TGHU8123340", "UN1263", "PG II", "3,400 kg", "Akzo Coatings NV", False, "340682"),
        ("MSCU5520914", "UN1942", "PG III", "21,000 kg", "Yara Sluiskil BV", False, "380684"),
        ("CAIU7781205", "UN1823", "PG II", "18,500 kg", "Tessenderlo Chemie", False, "500282"),
        ("FSCU3360457", "UN1266", "PG II", "1,200 kg", "Coty Logistics", True, "420686")]},
    {"vessel": "CMA CGM RHONE", "voyage": "0MX3RE", "filler": 9, "dg": [
        ("BMOU4410236", "UN1203", "PG II", "19,800 kg", "TotalEnergies Marketing", False, "140482"),
        ("CMAU6618093", "UN2067", "PG III", "24,000 kg", "Fertiberia SA", False, "180486"),
        ("TCNU2205518", "UN3082", "PG III", "16,200 kg", "BASF Antwerpen", False, "220288")]},
    {"vessel": "BERLIN EXPRESS", "voyage": "042E", "filler": 10, "dg": [
        ("HLXU3345120", "UN1950", "-", "6,300 kg", "Henkel AG", False, "060282"),
        ("HLBU1928844", "UN1748", "PG II", "17,000 kg", "Arch Chemicals", False, "100484"),
        ("HLXU7002231", "UN1830", "PG II", "22,100 kg", "Aurubis AG", False, "300682")]},
    {"vessel": "ONE COMMITMENT", "voyage": "071W", "filler": 10, "dg": [
        ("ONEU1120348", "UN1993", "PG II", "900 kg", "Brenntag GmbH", True, "260682"),
        ("ONEU1120353", "UN1993", "PG II", "15,600 kg", "Brenntag GmbH", False, "300684"),
        ("TRHU6670215", "UN1479", "PG II", "12,400 kg", "Solvay Chimica", False, "340682"),
        ("SEGU4471008", "UN2794", "-", "20,300 kg", "Exide Technologies", False, "540282")]},
    {"vessel": "COSCO PRIDE", "voyage": "088W", "filler": 13, "dg": [
        ("CCLU3380227", "UN1830", "PG II", "21,700 kg", "Umicore NV", False, "100282"),
        ("OOLU8845210", "UN1263", "PG III", "8,800 kg", "PPG Industries", False, "220684"),
        ("CSNU6623014", "UN3480", "-", "9,400 kg", "Northvolt AB", False, "620482")]},
]

PAGE = 6


def _slots(v: dict[str, Any]) -> list[dict[str, Any]]:
    slots = [{"container": d[0], "pos": d[6]} for d in v["dg"]]
    prefix = v["vessel"][:3].replace(" ", "X")
    for i in range(v["filler"]):
        bay = 2 + 4 * (i % 15)
        slots.append({"container": f"{prefix}U{4400117 + 7919 * i:07d}"[:11], "pos": f"{bay:02d}{(i * 2) % 12:02d}{82 + 2 * (i % 3)}"})
    return sorted(slots, key=lambda s: s["pos"])


def _manifest(v: dict[str, Any]) -> str:
    lines = [f"DG MANIFEST {v['vessel']} {v['voyage']} (IMDG amdt 42-24)"]
    for c, un, pg, mass, shipper, lq, _pos in v["dg"]:
        e = DGL[un]
        lines.append(f"{c} | {un} | {e['psn']} | {e['class']} | {pg} | {mass} | {'LQ' if lq else 'FULL'} | {shipper}")
    return "\n".join(lines)


INPUTS = [{"task": f"DG segregation check {v['vessel']} {v['voyage']}",
           "request": {"vessel": v["vessel"], "voyage": v["voyage"], "manifest": _manifest(v)}} for v in VOYAGES]


def _build(server: FakeModelServer) -> Any:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from langchain_core.output_parsers import BaseOutputParser
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode, tools_condition

    class DGDeclarationParser(BaseOutputParser[list]):
        """One record per manifest line: container | UN | name | class | PG | mass | LQ/FULL | shipper."""

        def parse(self, text: str) -> list:
            out = []
            for line in text.splitlines()[1:]:
                c, un, psn, klass, pg, mass, lq, shipper = [p.strip() for p in line.split("|")]
                out.append({"container": c, "un": un, "psn": psn, "class": klass, "pg": pg,
                            "mass_kg": int(mass.replace(",", "").split()[0]), "lq": lq == "LQ", "shipper": shipper})
            return out

    class SegregationVerdictParser(BaseOutputParser[list]):
        """The model's verdicts, each re-derived from its code and the container spaces measured."""

        def parse(self, text: str) -> list:
            data = json.loads(text[text.index("{"): text.rindex("}") + 1])
            out = []
            for v in data["verdicts"]:
                code = int(v.get("code", 0))
                spaces = int(v["spaces"])
                out.append({"a": v["a"], "b": v["b"], "code": code, "spaces": spaces,
                            "ok": spaces >= SPACES_NEEDED.get(code, 0)})
            return out

    class DGListRetriever(BaseRetriever):
        """IMDG Dangerous Goods List entries by UN number and proper shipping name."""

        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list:
            un = re.search(r"UN\d{4}", query).group()
            hits = [un]
            if _on("dgl_neighbour") and un == "UN2067":
                hits = ["UN2071"]  # same proper shipping name, the nearer neighbour in the index
            return [Document(page_content=f"{u} {DGL[u]['psn']} class {DGL[u]['class']} stowage {DGL[u]['stowage']}",
                             metadata={"un": u, "class": DGL[u]["class"], "stowage": DGL[u]["stowage"]})
                    for u in hits]

    @tool
    def fetch_bay_plan(vessel: str, voyage: str, page: int) -> dict:
        """One page of the departure bay plan (BAPLIE), six slots a page."""
        v = next(x for x in VOYAGES if x["vessel"] == vessel and x["voyage"] == voyage)
        slots = _slots(v)
        chunk = slots[(page - 1) * PAGE: page * PAGE]
        more = page * PAGE < len(slots)
        if _on("plan_pages") and page == 2:
            more = False  # the cursor of the second page came back empty
        return {"vessel": vessel, "voyage": voyage, "page": page, "slots": chunk,
                "next_page": page + 1 if more else None}

    @tool
    def segregation_rule(class_a: str, class_b: str) -> dict:
        """IMDG 7.2.4 segregation requirement between two classes."""
        code = _code(class_a, class_b)
        return {"class_a": class_a, "class_b": class_b, "code": code, "term": TERMS[code],
                "spaces_needed": SPACES_NEEDED[code]}

    @tool
    def bay_distance(pos_a: str, pos_b: str) -> dict:
        """Container spaces fore and aft between two deck positions (bay-row-tier)."""
        spaces = _spaces(pos_a, pos_b)
        if _on("bay_count") and {pos_a[:2], pos_b[:2]} == {"34", "38"}:
            spaces = abs(int(pos_a[:2]) - int(pos_b[:2])) // 4  # bays apart, not spaces between
        return {"pos_a": pos_a, "pos_b": pos_b, "spaces": spaces}

    @tool
    def request_restow(container: str, pos: str, reason: str) -> dict:
        """Ask the stowage planner to move a unit; answers its new position."""
        new = f"74{pos[2:]}"
        return {"container": container, "from": pos, "to": new, "status": "restow planned"}

    @tool
    def submit_dg_stowage(vessel: str, voyage: str, units: list) -> dict:
        """Submit the DG stowage to the port's DG office, which checks segregation itself."""
        v = next(x for x in VOYAGES if x["vessel"] == vessel)
        classes = {d[0]: DGL[d[1]]["class"] for d in v["dg"]}
        unos = {d[0]: d[1] for d in v["dg"]}
        lq = {d[0] for d in v["dg"] if d[5]}
        placed = {u["container"]: u["pos"] for u in units}
        full = [c for c in placed if c not in lq]
        for i, a in enumerate(full):
            for b in full[i + 1:]:
                code = _code(classes[a], classes[b])
                between = _spaces(placed[a], placed[b])
                if abs(int(placed[a][:2]) - int(placed[b][:2])) <= 12 and between < SPACES_NEEDED[code]:
                    raise ValueError(f"DG office: {unos[a]} (class {classes[a]}) in {a} at {placed[a]} and {unos[b]} "
                                     f"(class {classes[b]}) in {b} at {placed[b]} must be '{TERMS[code]}' each other: "
                                     f"{SPACES_NEEDED[code]} container space needed, {between} between them")
        return {"vessel": vessel, "voyage": voyage, "status": "accepted", "dg_units": len(units),
                "reference": f"DGO-{voyage}-{len(units):02d}"}

    class State(TypedDict, total=False):
        request: dict
        slots: list
        units: list
        entries: dict
        exempt: list
        pairs: list
        messages: Annotated[list, add_messages]
        verdicts: list
        moves: list
        submission: dict

    llm = ChatOpenAI(model=server.model, base_url=server.base_url, api_key="not-needed", max_retries=0,
                     temperature=0)
    check_tools = [segregation_rule, bay_distance]
    model = llm.bind_tools(check_tools).with_config(run_name="segregation_model")
    decl_parser = DGDeclarationParser()
    verdict_parser = SegregationVerdictParser()
    dgl = DGListRetriever()

    def load_plan(state: State) -> dict:
        req, slots, page = state["request"], [], 1
        while page:
            answer = fetch_bay_plan.invoke({"vessel": req["vessel"], "voyage": req["voyage"], "page": page})
            slots += answer["slots"]
            page = answer["next_page"]
        return {"slots": slots}

    def parse_dg(state: State) -> dict:
        return {"units": decl_parser.invoke(state["request"]["manifest"])}

    def lookup(state: State) -> dict:
        entries = {}
        for u in state["units"]:
            [doc] = dgl.invoke(f"{u['un']} {u['psn']}")
            entries[u["container"]] = {"un": doc.metadata["un"], "class": doc.metadata["class"],
                                       "stowage": doc.metadata["stowage"]}
        return {"entries": entries}

    def record_exemptions(state: State) -> dict:
        exempt = [u["container"] for u in state["units"] if u["lq"]]
        if _on("lq_shipper"):
            shippers = {u["shipper"] for u in state["units"] if u["lq"]}
            exempt = [u["container"] for u in state["units"] if u["shipper"] in shippers]
        return {"exempt": exempt}

    def pairs(state: State) -> dict:
        where = {s["container"]: s["pos"] for s in state["slots"]}
        active = []
        for u in state["units"]:
            if u["container"] in state["exempt"]:
                continue
            if u["container"] not in where:
                raise LookupError(f"DG unit {u['container']} ({u['un']}) has no position in the bay plan of "
                                  f"{state['request']['vessel']} {state['request']['voyage']}")
            active.append({"container": u["container"], "pos": where[u["container"]],
                           "class": state["entries"][u["container"]]["class"]})
        out = []
        for i, a in enumerate(active):
            for b in active[i + 1:]:
                if abs(int(a["pos"][:2]) - int(b["pos"][:2])) <= 12:
                    out.append({"a": a, "b": b})
        return {"pairs": out}

    def segregate(state: State) -> dict:
        prompt = [SystemMessage("ROLE segregation-checker. For each pair call segregation_rule and bay_distance, "
                                "then answer JSON {verdicts: [{a, b, code, spaces, ok}]}."),
                  HumanMessage(dumps({"vessel": state["request"]["vessel"], "pairs": state["pairs"]}))]
        return {"messages": [model.invoke(prompt + list(state.get("messages", [])))]}

    def verdicts(state: State) -> dict:
        last = next(m for m in reversed(state["messages"]) if isinstance(m, AIMessage))
        return {"verdicts": verdict_parser.invoke(last)}

    def resolve(state: State) -> dict:
        where = {s["container"]: s["pos"] for s in state["slots"]}
        moves = []
        for v in state["verdicts"]:
            if not v["ok"]:
                moves.append(request_restow.invoke({"container": v["b"], "pos": where[v["b"]],
                                                    "reason": f"{TERMS[v['code']]} {v['a']}"}))
        return {"moves": moves}

    def submit(state: State) -> dict:
        where = {s["container"]: s["pos"] for s in state["slots"]}
        for m in state["moves"]:
            where[m["container"]] = m["to"]
        units = [{"container": u["container"], "un": u["un"], "pos": where.get(u["container"], "")}
                 for u in state["units"]]
        req = state["request"]
        return {"submission": submit_dg_stowage.invoke({"vessel": req["vessel"], "voyage": req["voyage"],
                                                        "units": units})}

    g = StateGraph(State)
    for name, fn in [("load_plan", load_plan), ("parse_dg", parse_dg), ("lookup", lookup),
                     ("record_exemptions", record_exemptions), ("pairs", pairs), ("segregate", segregate),
                     ("verdicts", verdicts), ("resolve", resolve), ("submit", submit)]:
        g.add_node(name, fn)
    g.add_node("tools", ToolNode(check_tools, handle_tool_errors=False))
    g.add_edge(START, "load_plan")
    g.add_edge("load_plan", "parse_dg")
    g.add_edge("parse_dg", "lookup")
    g.add_edge("lookup", "record_exemptions")
    g.add_edge("record_exemptions", "pairs")
    g.add_edge("pairs", "segregate")
    g.add_conditional_edges("segregate", tools_condition, {"tools": "tools", "__end__": "verdicts"})
    g.add_edge("tools", "segregate")
    g.add_edge("verdicts", "resolve")
    g.add_edge("resolve", "submit")
    g.add_edge("submit", END)
    return g.compile()


CASES = [
    {"id": "imdg_dgl_neighbour_entry", "input": 1, "switch": "dgl_neighbour", "fault_kind": "wrong_retrieval",
     "root": {"name": "DGListRetriever", "match": "UN2067"}, "root_kind": "retrieval",
     "failure": "submit_dg_stowage",
     "description": "DGListRetriever answered the query for UN2067 with the entry of UN2071, the class 9 fertilizer "
                    "of the same name, so CMAU6618093 was checked as class 9 next to the gasoline."},
    {"id": "imdg_bays_counted", "input": 0, "switch": "bay_count", "fault_kind": "off_by_one",
     "root": {"name": "bay_distance", "match": "380684"}, "root_kind": "tool", "failure": "submit_dg_stowage",
     "description": "bay_distance counted the 40-foot bays from 34 to 38 (1) instead of the container spaces "
                    "between them (0), so the ammonium nitrate next to the paint looked separated."},
    {"id": "imdg_verdict_terms", "input": 2, "switch": "verdict_terms", "fault_kind": "format_drift",
     "root": {"name": "segregation_model", "occurrence": 2}, "root_kind": "llm", "failure": "submit_dg_stowage",
     "description": "segregation_model wrote its verdicts with a textual 'requirement' instead of the numeric "
                    "'code', which the verdict parser read as no requirement for HLBU1928844 and HLXU3345120."},
    {"id": "imdg_plan_second_page", "input": 4, "switch": "plan_pages", "fault_kind": "truncated_result",
     "root": {"name": "fetch_bay_plan", "occurrence": 2}, "root_kind": "tool", "failure": "pairs",
     "description": "fetch_bay_plan returned page 2 of COSCO PRIDE's bay plan without its next-page cursor, so "
                    "the plan stopped at 12 of 16 slots and CSNU6623014 had no position."},
    {"id": "imdg_exempt_by_shipper", "input": 3, "switch": "lq_shipper", "fault_kind": "bad_memory_write",
     "root": {"name": "record_exemptions", "occurrence": 1}, "root_kind": "other", "failure": "submit_dg_stowage",
     "description": "record_exemptions wrote both Brenntag containers into the limited-quantity exemptions, "
                    "including the full-load ONEU1120353 next to the oxidizer in bay 34."},
]

_graph: Any = None
_graph_url: str | None = None


def record(inp: dict[str, Any], path: str, server: FakeModelServer) -> None:
    global _graph, _graph_url
    from trajdebug.integrations.langchain import TrajdebugTracer

    if _graph is None or _graph_url != server.base_url:
        _graph, _graph_url = _build(server), server.base_url
    tracer = TrajdebugTracer(path=path, name=NAME)
    try:
        _graph.invoke({"request": inp["request"], "messages": []},
                      config={"callbacks": [tracer], "metadata": {"task": inp["task"]}, "recursion_limit": 30})
    except Exception:
        pass


def brain(request: Any) -> Any:
    messages = request.body["messages"]
    if not system_text(messages).startswith("ROLE segregation-checker"):
        return "No answer."
    data = json.loads(text_of(next(m for m in messages if m["role"] == "user")))
    results = tool_results(messages)
    rules = [json.loads(r["content"]) for r in results if r["name"] == "segregation_rule"]
    dists = [json.loads(r["content"]) for r in results if r["name"] == "bay_distance"]
    todo = data["pairs"]
    if len(dists) < len(todo):
        p = todo[len(dists)]
        return Reply(tool_calls=(tool_call("segregation_rule", {"class_a": p["a"]["class"], "class_b": p["b"]["class"]}),
                                 tool_call("bay_distance", {"pos_a": p["a"]["pos"], "pos_b": p["b"]["pos"]})))
    out = []
    for p, rule, dist in zip(todo, rules, dists):
        ok = dist["spaces"] >= rule["spaces_needed"]
        if _on("verdict_terms"):
            out.append({"a": p["a"]["container"], "b": p["b"]["container"], "requirement": rule["term"],
                        "spaces": dist["spaces"], "ok": ok})
        else:
            out.append({"a": p["a"]["container"], "b": p["b"]["container"], "code": rule["code"],
                        "spaces": dist["spaces"], "ok": ok})
    return json.dumps({"verdicts": out})
