"""Hospital blood bank: issuing blood components to a ward (route: langgraph).

A LangGraph `StateGraph`: the ward's free-text request is extracted by a prompt | ChatOpenAI |
JsonOutputParser chain; the patient's group-and-screen sample (a LIS tool, retried when the LIS drops
the connection) and the transfusion-record notes (a retriever) are read in parallel; a context node
assembles what the selecting model reads; the selecting model and a ToolNode loop search the component
inventory and reserve units; the electronic-issue tool checks the reservation against the laboratory's
own records; the dispatch node books the porter and the validated cool box.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnableParallel
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel, Field
from datetime import datetime

from .common import system_text
from trajdebug.testing import Reply, tool_call

NAME = "blood-bank-issue"
ROUTE = "langgraph"
DOMAIN = "hospital blood bank: issue red cells, platelets and plasma to a ward against a request"
SHAPE = (
    "StateGraph: extraction chain (prompt, ChatOpenAI, JsonOutputParser), parallel LIS tool (with retry) "
    "and notes retriever, context node, selecting ChatOpenAI + ToolNode loop (inventory search, "
    "reservation), electronic-issue tool, dispatch node (porter and cool-box tools); 34-35 steps per passing run"
)

SWITCH: str | None = None


def _case(key: str) -> bool:
    """The one place the case switch is read."""
    return SWITCH == key


# --- the laboratory's records ----------------------------------------------------------------------

PATIENTS = {
    "H-448120": {
        "name": "Margaret Hughes",
        "abo": "O",
        "rhd": "pos",
        "sex": "F",
        "age": 71,
        "sample": {
            "sample_id": "GS-88120",
            "taken": "2025-07-07T08:10",
            "valid_until": "2025-07-10T08:10",
            "antibodies": "none detected",
        },
    },
    "H-448711": {
        "name": "Marjorie Hughes",
        "abo": "A",
        "rhd": "pos",
        "sex": "F",
        "age": 64,
        "sample": {
            "sample_id": "GS-88092",
            "taken": "2025-07-06T09:30",
            "valid_until": "2025-07-09T09:30",
            "antibodies": "none detected",
        },
    },
    "H-502233": {
        "name": "Daniel Okafor",
        "abo": "A",
        "rhd": "pos",
        "sex": "M",
        "age": 52,
        "sample": {
            "sample_id": "GS-88131",
            "taken": "2025-07-08T07:40",
            "valid_until": "2025-07-11T07:40",
            "antibodies": "none detected",
        },
    },
    "H-377410": {
        "name": "Priya Raman",
        "abo": "B",
        "rhd": "neg",
        "sex": "F",
        "age": 31,
        "sample": {
            "sample_id": "GS-88140",
            "taken": "2025-07-08T09:05",
            "valid_until": "2025-07-11T09:05",
            "antibodies": "none detected",
        },
    },
    "H-610054": {
        "name": "Thomas Byrne",
        "abo": "O",
        "rhd": "pos",
        "sex": "M",
        "age": 78,
        "sample": {
            "sample_id": "GS-88152",
            "taken": "2025-07-09T06:55",
            "valid_until": "2025-07-12T06:55",
            "antibodies": "none detected",
        },
    },
    "H-221987": {
        "name": "Grace Mensah",
        "abo": "AB",
        "rhd": "pos",
        "sex": "F",
        "age": 45,
        "sample": {
            "sample_id": "GS-88160",
            "taken": "2025-07-09T10:20",
            "valid_until": "2025-07-12T10:20",
            "antibodies": "none detected",
        },
    },
}
NOTES = [
    Document(
        page_content="Irradiated cellular components required: fludarabine from 2025-05-02, lifelong. "
        "HLA-matched platelets not required.",
        metadata={"patient_id": "H-448120", "surname": "Hughes", "updated": "2025-05-02"},
    ),
    Document(
        page_content="No special requirements. Previous transfusion 2023 uneventful.",
        metadata={"patient_id": "H-448711", "surname": "Hughes", "updated": "2025-06-30"},
    ),
    Document(
        page_content="No special requirements.",
        metadata={"patient_id": "H-502233", "surname": "Okafor", "updated": "2024-11-12"},
    ),
    Document(
        page_content="CMV-negative cellular components required: pregnant, 24 weeks. RhD-negative platelets.",
        metadata={"patient_id": "H-377410", "surname": "Raman", "updated": "2025-06-18"},
    ),
    Document(
        page_content="No special requirements. Transfused 2 units 2025-03, no reaction.",
        metadata={"patient_id": "H-610054", "surname": "Byrne", "updated": "2025-03-21"},
    ),
    Document(
        page_content="No special requirements.",
        metadata={"patient_id": "H-221987", "surname": "Mensah", "updated": "2025-01-09"},
    ),
]
REQUIRES = {"H-448120": {"irradiated"}, "H-377410": {"cmv_negative"}}


def _unit(uid, comp, abo, rhd, expiry, irr=False, cmv=False, loc="fridge 1"):
    return {
        "unit": uid,
        "component": comp,
        "abo": abo,
        "rhd": rhd,
        "expiry": expiry,
        "irradiated": irr,
        "cmv_negative": cmv,
        "location": loc,
    }


INVENTORY = [
    _unit("G0512 25 100871", "red cells", "O", "pos", "2025-07-21", loc="fridge 1 shelf 2"),
    _unit("G0512 25 100902", "red cells", "O", "pos", "2025-07-24", irr=True, loc="fridge 2 irradiated"),
    _unit("G0512 25 100915", "red cells", "O", "pos", "2025-07-25", irr=True, loc="fridge 2 irradiated"),
    _unit("G0512 25 100944", "red cells", "O", "pos", "2025-07-26", loc="fridge 1 shelf 2"),
    _unit("G0512 25 100958", "red cells", "O", "pos", "2025-07-28", loc="fridge 1 shelf 3"),
    _unit("G0512 25 101003", "red cells", "A", "pos", "2025-07-19", loc="fridge 1 shelf 1"),
    _unit("G0512 25 101017", "red cells", "A", "pos", "2025-07-20", loc="fridge 1 shelf 1"),
    _unit("G0512 25 101026", "red cells", "A", "pos", "2025-07-22", loc="fridge 1 shelf 1"),
    _unit("G0512 25 101039", "red cells", "A", "pos", "2025-07-27", loc="fridge 1 shelf 1"),
    _unit("G0512 25 101044", "red cells", "A", "pos", "2025-07-29", loc="fridge 1 shelf 4"),
    _unit("G0512 25 300121", "platelets", "B", "pos", "2025-07-11", loc="agitator 1"),
    _unit("G0512 25 300135", "platelets", "B", "neg", "2025-07-12", loc="agitator 1"),
    _unit("G0512 25 300148", "platelets", "B", "neg", "2025-07-13", cmv=True, loc="agitator 2"),
    _unit("G0512 25 500211", "plasma", "AB", "pos", "2026-03-02", loc="freezer 2"),
    _unit("G0512 25 500226", "plasma", "AB", "neg", "2026-03-09", loc="freezer 2"),
    _unit("G0512 25 500240", "plasma", "A", "pos", "2026-02-14", loc="freezer 1"),
]
RED_OK = {"O": {"O"}, "A": {"A", "O"}, "B": {"B", "O"}, "AB": {"AB", "A", "B", "O"}}
PLASMA_OK = {"O": {"O", "A", "B", "AB"}, "A": {"A", "AB"}, "B": {"B", "AB"}, "AB": {"AB"}}


def _compatible(unit: dict, abo: str, rhd: str) -> bool:
    if unit["component"] == "plasma":
        return unit["abo"] in PLASMA_OK[abo]
    if unit["component"] == "platelets":
        return rhd == "pos" or unit["rhd"] == "neg"
    return unit["abo"] in RED_OK[abo] and (rhd == "pos" or unit["rhd"] == "neg")


INPUTS = [
    {
        "id": "hughes",
        "task": "ward request: 2 units red cells for Margaret Hughes H-448120, Haematology 7",
        "request": {
            "request_id": "BT-70812",
            "received_at": "2025-07-08T10:05",
            "ward": "Haematology 7",
            "text": "Please crossmatch and send 2 units of red cells for Margaret Hughes, H-448120, bed 9. "
            "Hb 68 g/L after chemo. Needed by 13:00 today.",
        },
    },
    {
        "id": "okafor",
        "task": "ward request: 4 units red cells for Daniel Okafor H-502233, Surgical 3 for theatre",
        "request": {
            "request_id": "BT-70819",
            "received_at": "2025-07-08T11:20",
            "ward": "Surgical 3",
            "text": "4 units red cells for Daniel Okafor H-502233 going to theatre 2 for a revision hip, "
            "expected blood loss high. Needed by 14:15 today.",
        },
    },
    {
        "id": "raman",
        "task": "ward request: 1 adult dose platelets for Priya Raman H-377410, Maternity 2",
        "request": {
            "request_id": "BT-70826",
            "received_at": "2025-07-08T12:40",
            "ward": "Maternity 2",
            "text": "Priya Raman H-377410, 24/40, platelets 18. Please send 1 adult dose of platelets. "
            "Needed by 15:00 today.",
        },
    },
    {
        "id": "byrne",
        "task": "ward request: 2 units red cells for Thomas Byrne H-610054, AMU",
        "request": {
            "request_id": "BT-70901",
            "received_at": "2025-07-09T09:15",
            "ward": "AMU",
            "text": "Thomas Byrne H-610054, bed 14, Hb 62, symptomatic. 2 units red cells please. "
            "Needed by 12:30 today.",
        },
    },
    {
        "id": "mensah",
        "task": "ward request: 2 units plasma for Grace Mensah H-221987, Critical Care",
        "request": {
            "request_id": "BT-70907",
            "received_at": "2025-07-09T11:35",
            "ward": "Critical Care",
            "text": "Grace Mensah H-221987, INR 2.4, line insertion planned. 2 units FFP please. "
            "Needed by 14:30 today.",
        },
    },
]
# What AMU's request thread held before the Byrne request (the previous patient on that thread).
AMU_THREAD = [
    {
        "request_id": "BT-70855",
        "ward": "AMU",
        "patient_id": "H-590317",
        "patient": "Eileen Walsh",
        "sample": {
            "patient_id": "H-590317",
            "abo": "A",
            "rhd": "pos",
            "sample_id": "GS-88101",
            "valid_until": "2025-07-10T16:00",
        },
        "component": "red cells",
        "units": 2,
    },
]

CASES = [
    {
        "case": "bank_notes_by_surname",
        "input": "hughes",
        "switch": "notes_by_surname",
        "fault_kind": "wrong_retrieval",
        "root": ("TransfusionNotesRetriever", 1),
        "failure": ("electronic_issue", 1),
        "description": "The notes retriever returned the most recently updated 'Hughes' note, Marjorie Hughes's "
        "(no special requirements), instead of Margaret Hughes's irradiated-components note, so "
        "non-irradiated red cells are reserved and the electronic issue refuses them.",
    },
    {
        "case": "bank_inventory_page",
        "input": "okafor",
        "switch": "gateway_row_cap",
        "fault_kind": "truncated_result",
        "root": ("search_inventory", 1),
        "failure": ("electronic_issue", 1),
        "description": "The inventory search came back capped at 3 rows by the gateway, with no sign of more, so "
        "only 3 of the 4 requested units are reserved and the electronic issue rejects the short set.",
    },
    {
        "case": "bank_cmv_filter",
        "input": "raman",
        "switch": "cmv_filter_dropped",
        "fault_kind": "tool_ignores_argument",
        "root": ("search_inventory", 1),
        "failure": ("electronic_issue", 1),
        "description": "The inventory search was asked for CMV-negative platelets but returned units regardless of "
        "CMV status, soonest expiry first; the model reserves an untested dose and the electronic issue "
        "refuses it for a pregnant patient.",
    },
    {
        "case": "bank_thread_carryover",
        "input": "byrne",
        "switch": "ward_thread_history",
        "fault_kind": "context_pollution",
        "root": ("build_context", 1),
        "failure": ("electronic_issue", 1),
        "description": "The context node replayed AMU's earlier request thread (Eileen Walsh, group A) ahead of "
        "Thomas Byrne's sample; the selecting model searches group A red cells and the electronic issue "
        "refuses them for a group O patient.",
    },
    {
        "case": "bank_required_by_text",
        "input": "mensah",
        "switch": "clock_time_only",
        "fault_kind": "format_drift",
        "root": ("ChatOpenAI", 1),
        "failure": ("book_porter", 1),
        "description": "The extraction model wrote required_by as the ward's words '14:30 today' instead of an ISO "
        "timestamp; everything up to the issue accepts it, and the porter booking's schema rejects it.",
    },
]


# --- tools and retriever ---------------------------------------------------------------------------


class _Lis:
    dropped: set[str] = set()


@tool
def sample_status(patient_id: str) -> dict:
    """The patient's current group-and-screen sample from the laboratory information system."""
    p = PATIENTS[patient_id]
    if patient_id == "H-502233" and patient_id not in _Lis.dropped:
        _Lis.dropped.add(patient_id)
        raise ConnectionError("LIS connection reset by peer")
    return {"patient_id": patient_id, "abo": p["abo"], "rhd": p["rhd"], **p["sample"]}


class TransfusionNotesRetriever(BaseRetriever):
    """The transfusion record's special-requirements notes."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        pid = re.search(r"H-\d{6}", query).group(0)
        if _case("notes_by_surname"):
            surname = query.split()[-1]
            hits = [d for d in NOTES if d.metadata["surname"] == surname]
            return sorted(hits, key=lambda d: d.metadata["updated"], reverse=True)[:1]
        return [d for d in NOTES if d.metadata["patient_id"] == pid][:1]


@tool
def search_inventory(
    component: str, patient_abo: str, patient_rhd: str, irradiated: bool = False, cmv_negative: bool = False
) -> dict:
    """Units in stock compatible with the patient, soonest expiry first."""
    rows = [u for u in INVENTORY if u["component"] == component and _compatible(u, patient_abo, patient_rhd)]
    if irradiated:
        rows = [u for u in rows if u["irradiated"]]
    if cmv_negative and not _case("cmv_filter_dropped"):
        rows = [u for u in rows if u["cmv_negative"]]
    rows = sorted(rows, key=lambda u: u["expiry"])
    if _case("gateway_row_cap"):
        rows = rows[:3]
    return {"units": rows, "count": len(rows)}


@tool
def reserve_units(unit_ids: list[str], patient_id: str) -> dict:
    """Reserve and electronically crossmatch units for a patient."""
    return {"patient_id": patient_id, "reserved": unit_ids, "crossmatch": "electronic", "reserved_for_h": 24}


@tool
def electronic_issue(request_id: str, patient_id: str, unit_ids: list[str], units_requested: int) -> dict:
    """Issue reserved units against the request; the laboratory's own checks run here."""
    p = PATIENTS[patient_id]
    need = REQUIRES.get(patient_id, set())
    by = {u["unit"]: u for u in INVENTORY}
    if len(unit_ids) != units_requested:
        raise ValueError(f"{request_id}: {units_requested} units requested, {len(unit_ids)} reserved")
    for uid in unit_ids:
        u = by[uid]
        if not _compatible(u, p["abo"], p["rhd"]):
            raise ValueError(
                f"{request_id}: unit {uid} ({u['component']}, {u['abo']} RhD {u['rhd']}) is not "
                f"compatible with {patient_id} (group {p['abo']} RhD {p['rhd']})"
            )
        if "irradiated" in need and not u["irradiated"]:
            raise ValueError(
                f"{request_id}: {patient_id} needs irradiated components; unit {uid} is not irradiated"
            )
        if "cmv_negative" in need and not u["cmv_negative"]:
            raise ValueError(
                f"{request_id}: {patient_id} needs CMV-negative components; unit {uid} is not CMV-negative"
            )
    return {"request_id": request_id, "issued": unit_ids, "patient_id": patient_id, "status": "issued"}


class PorterBooking(BaseModel):
    request_id: str
    destination: str
    required_by: datetime = Field(description="ISO 8601 date and time the ward needs the units")
    box: str


@tool(args_schema=PorterBooking)
def book_porter(request_id: str, destination: str, required_by: datetime, box: str) -> dict:
    """Book a porter to take a validated cool box to the ward."""
    return {
        "request_id": request_id,
        "porter_job": f"PJ-{request_id[-5:]}",
        "collect": "blood bank hatch",
        "destination": destination,
        "due": required_by.isoformat(timespec="minutes"),
        "box": box,
    }


@tool
def cool_box(component: str, units: int) -> dict:
    """Pick a validated transport box for the components."""
    if component == "plasma":
        return {"box": "CB-P2", "validated_h": 4, "units": units}
    if component == "platelets":
        return {"box": "CB-RT1 (room temperature)", "validated_h": 6, "units": units}
    return {"box": "CB-R4 (2-10 C)", "validated_h": 5, "units": units}


# --- the graph ------------------------------------------------------------------------------------


class BankState(TypedDict, total=False):
    request: dict
    order: dict
    record: dict
    messages: Annotated[list[AnyMessage], add_messages]
    issue: dict
    dispatch: dict


INTAKE_SYSTEM = (
    "You read blood bank requests from wards. Extract JSON with keys patient_id, patient, component "
    "(red cells, platelets or plasma), units (integer), required_by (ISO 8601 date and time)."
)
SELECT_SYSTEM = (
    "You are the blood bank scientist. Search the inventory for compatible units meeting every "
    "special requirement, reserve exactly the number requested (soonest expiry first), then reply "
    'with the reserved unit numbers as JSON {"reserved": [...]}.'
)


def build(llm: Any) -> Any:
    intake_chain = (
        ChatPromptTemplate.from_messages(
            [("system", INTAKE_SYSTEM), ("human", "Received {received_at} from {ward}:\n{text}")]
        )
        | llm
        | JsonOutputParser()
    )
    notes = TransfusionNotesRetriever()
    lookups = RunnableParallel(
        sample=RunnableLambda(lambda o: {"patient_id": o["patient_id"]}, name="sample_query")
        | sample_status.with_retry(
            stop_after_attempt=2, retry_if_exception_type=(ConnectionError,), wait_exponential_jitter=False
        ),
        notes=RunnableLambda(lambda o: f"{o['patient_id']} {o['patient']}", name="notes_query") | notes,
    )
    selector_llm = llm.bind_tools([search_inventory, reserve_units])

    def intake(state: BankState) -> dict:
        return {"order": intake_chain.invoke(state["request"])}

    def load_record(state: BankState) -> dict:
        got = lookups.invoke(state["order"])
        return {"record": {"sample": got["sample"], "notes": [d.page_content for d in got["notes"]]}}

    def build_context(state: BankState) -> dict:
        order, record = state["order"], state["record"]
        messages: list[AnyMessage] = [SystemMessage(SELECT_SYSTEM)]
        if _case("ward_thread_history"):
            messages += [HumanMessage(json.dumps({"ward_thread": t})) for t in AMU_THREAD]
        messages.append(
            HumanMessage(
                json.dumps(
                    {
                        "request_id": state["request"]["request_id"],
                        "patient_id": order["patient_id"],
                        "component": order["component"],
                        "units": order["units"],
                        "sample": record["sample"],
                        "special_requirements": record["notes"],
                    }
                )
            )
        )
        return {"messages": messages}

    def selector(state: BankState) -> dict:
        return {"messages": [selector_llm.invoke(state["messages"])]}

    def issue(state: BankState) -> dict:
        reserved = json.loads(state["messages"][-1].content)["reserved"]
        got = electronic_issue.invoke(
            {
                "request_id": state["request"]["request_id"],
                "patient_id": state["order"]["patient_id"],
                "unit_ids": reserved,
                "units_requested": state["order"]["units"],
            }
        )
        return {"issue": got}

    def dispatch(state: BankState) -> dict:
        box = cool_box.invoke(
            {"component": state["order"]["component"], "units": len(state["issue"]["issued"])}
        )
        job = book_porter.invoke(
            {
                "request_id": state["request"]["request_id"],
                "destination": state["request"]["ward"],
                "required_by": state["order"]["required_by"],
                "box": box["box"],
            }
        )
        return {"dispatch": job}

    g = StateGraph(BankState)
    g.add_node("intake", intake)
    g.add_node("load_record", load_record)
    g.add_node("build_context", build_context)
    g.add_node("selector", selector)
    g.add_node("tools", ToolNode([search_inventory, reserve_units]))
    g.add_node("issue", issue)
    g.add_node("dispatch", dispatch)
    g.add_edge(START, "intake")
    g.add_edge("intake", "load_record")
    g.add_edge("load_record", "build_context")
    g.add_edge("build_context", "selector")
    g.add_conditional_edges("selector", tools_condition, {"tools": "tools", END: "issue"})
    g.add_edge("tools", "selector")
    g.add_edge("issue", "dispatch")
    g.add_edge("dispatch", END)
    return g.compile()


def record(inp: dict, path: str, ctx: Any) -> None:
    from langchain_openai import ChatOpenAI
    from trajdebug.integrations.langchain import TrajdebugTracer

    _Lis.dropped = set()
    llm = ChatOpenAI(model=ctx.model, base_url=ctx.base_url, api_key="not-needed", max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME)
    try:
        build(llm).invoke(
            {"request": inp["request"]}, config={"callbacks": [tracer], "metadata": {"task": inp["task"]}}
        )
    except Exception as exc:  # the graph raised: the run is recorded as failed
        if type(exc).__name__ not in ("ValueError", "ValidationError", "ToolException"):
            raise


# --- the model --------------------------------------------------------------------------------


def _extract(text: str, received: str) -> dict:
    pid = re.search(r"H-\d{6}", text).group(0)
    name = re.search(r"for ([A-Z][a-z]+ [A-Z][a-z]+)", text) or re.match(r"([A-Z][a-z]+ [A-Z][a-z]+)", text)
    units = re.search(r"(\d+) (?:units?|adult dose)", text)
    comp = (
        "platelets"
        if "platelet" in text.lower() and "dose" in text
        else ("plasma" if "FFP" in text or "plasma" in text else "red cells")
    )
    hhmm = re.search(r"[Nn]eeded by (\d\d:\d\d)", text).group(1)
    required = f"{received[:10]}T{hhmm}"
    if _case("clock_time_only"):
        required = f"{hhmm} today"
    return {
        "patient_id": pid,
        "patient": name.group(1),
        "component": comp,
        "units": int(units.group(1)),
        "required_by": required,
    }


def brain(request: Any) -> Any:
    system = system_text(request)
    msgs = request.body["messages"]
    if system == INTAKE_SYSTEM:
        text = msgs[-1]["content"]
        received = re.search(r"Received (\S+)", text).group(1)
        return json.dumps(_extract(text.split(":\n", 1)[1], received))
    if system == SELECT_SYSTEM:
        facts = [json.loads(m["content"]) for m in msgs if m["role"] == "user"]
        current = facts[-1]
        sample = next(f.get("sample") or f["ward_thread"]["sample"] for f in facts)
        reqs = " ".join(current["special_requirements"]).lower()
        results = [m for m in msgs if m["role"] == "tool"]
        if not results:
            return Reply(
                tool_calls=(
                    tool_call(
                        "search_inventory",
                        {
                            "component": current["component"],
                            "patient_abo": sample["abo"],
                            "patient_rhd": sample["rhd"],
                            "irradiated": "irradiated" in reqs and "required" in reqs,
                            "cmv_negative": "cmv-negative" in reqs,
                        },
                    ),
                )
            )
        if len(results) == 1:
            units = json.loads(results[0]["content"])["units"]
            pick = [u["unit"] for u in units[: current["units"]]]
            return Reply(
                tool_calls=(
                    tool_call("reserve_units", {"unit_ids": pick, "patient_id": current["patient_id"]}),
                )
            )
        reserved = json.loads(results[-1]["content"])["reserved"]
        return json.dumps({"reserved": reserved})
    return "I cannot help with that."
