"""Hospital mortuary: releasing a deceased patient to a funeral director (route: langgraph).

A LangGraph `StateGraph`: the funeral director's collection e-mail is extracted by a prompt | ChatOpenAI |
JsonOutputParser chain; a register-search sub-graph (its own model + ToolNode loop and a match node) finds
the deceased in the body-store register; the documents tool reads the certificates (a coroner's hold sends
the run to a node that tells the funeral director the collection cannot go ahead); the property record is
parsed by an output parser; a conditional edge sends cremations through the implanted-device check (which
books a removal when needed); the body's fridge tray is located, its ID band scanned and verified; the
release tool, the mortuary system's own gate, releases the deceased to the funeral director.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.output_parsers import BaseOutputParser, JsonOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from .common import system_text
from trajdebug.testing import Reply, tool_call

NAME = "mortuary-release-desk"
ROUTE = "langgraph"
DOMAIN = "hospital mortuary: release a deceased patient to the funeral director collecting"
SHAPE = (
    "StateGraph: extraction chain (prompt, ChatOpenAI, JsonOutputParser), register-search sub-graph "
    "(ChatOpenAI + ToolNode loop, match node), documents tool and gate (hold branch notifies the funeral "
    "director), property tool + output parser, conditional edge to the implant check (register and removal "
    "tools), tray locator, ID-band scan and verification, release tool; 22-32 steps per passing run"
)

SWITCH: str | None = None


def _case(key: str) -> bool:
    """The one place the case switch is read."""
    return SWITCH == key


# --- the mortuary's records -------------------------------------------------------------------------

REGISTER = [
    {
        "mortuary_no": "M-2271",
        "name": "Arthur Pennington",
        "dob": "1938-07-22",
        "died": "2025-08-29",
        "ward": "Ward 5",
        "fridge": 1,
        "tray_index": 2,
    },
    {
        "mortuary_no": "M-2288",
        "name": "Doris Kemp",
        "dob": "1936-11-02",
        "died": "2025-09-01",
        "ward": "Ward 9",
        "fridge": 2,
        "tray_index": 5,
    },
    {
        "mortuary_no": "M-2290",
        "name": "Arthur Pennington",
        "dob": "1941-03-14",
        "died": "2025-09-02",
        "ward": "Ward 12",
        "fridge": 2,
        "tray_index": 6,
    },
    {
        "mortuary_no": "M-2301",
        "name": "Leonard Shaw",
        "dob": "1950-05-30",
        "died": "2025-09-03",
        "ward": "CCU",
        "fridge": 1,
        "tray_index": 4,
    },
    {
        "mortuary_no": "M-2310",
        "name": "Sylvia Hartley",
        "dob": "1944-01-19",
        "died": "2025-09-04",
        "ward": "Ward 3",
        "fridge": 3,
        "tray_index": 1,
    },
    {
        "mortuary_no": "M-2314",
        "name": "Norman Pike",
        "dob": "1939-12-08",
        "died": "2025-09-04",
        "ward": "Ward 7",
        "fridge": 3,
        "tray_index": 2,
    },
    {
        "mortuary_no": "M-2315",
        "name": "Frank O'Neill",
        "dob": "1947-08-25",
        "died": "2025-09-05",
        "ward": "AMU",
        "fridge": 3,
        "tray_index": 3,
    },
]
DOCUMENTS = {
    "M-2290": {
        "mccd": "issued 2025-09-03",
        "medical_examiner": "scrutiny complete",
        "coroner": "not referred",
        "cremation_forms": "complete",
        "registered_disposal": "cremation",
    },
    "M-2271": {
        "mccd": "issued 2025-08-30",
        "medical_examiner": "scrutiny complete",
        "coroner": "not referred",
        "cremation_forms": "not required",
        "registered_disposal": "burial",
    },
    "M-2288": {
        "mccd": "issued 2025-09-02",
        "medical_examiner": "scrutiny complete",
        "coroner": "not referred",
        "cremation_forms": "not required",
        "registered_disposal": "burial",
    },
    "M-2301": {
        "mccd": "issued 2025-09-04",
        "medical_examiner": "scrutiny complete",
        "coroner": "not referred",
        "cremation_forms": "complete",
        "registered_disposal": "cremation",
    },
    "M-2310": {
        "mccd": "issued 2025-09-05",
        "medical_examiner": "scrutiny complete",
        "coroner": "not referred",
        "cremation_forms": "complete",
        "registered_disposal": "burial",
    },
    "M-2315": {
        "mccd": "issued 2025-09-06",
        "medical_examiner": "scrutiny complete",
        "coroner": "not referred",
        "cremation_forms": "not required",
        "registered_disposal": "burial",
    },
}
# The live register's coroner holds (the documents index is exported from it at 07:00 each day).
CORONER_HOLDS = {"M-2288": "coroner's hold placed 2025-09-08 11:20 (HM Coroner ref 25/1187)"}
DOCUMENTS_LIVE = {k: dict(v) for k, v in DOCUMENTS.items()}
DOCUMENTS_LIVE["M-2288"]["coroner"] = "referred 2025-09-08 11:20, hold in place"
IMPLANTS = {
    "M-2290": [],
    "M-2301": [{"device": "implantable loop recorder", "removal_needed": False}],
    "M-2310": [{"device": "pacemaker (dual chamber)", "removal_needed": True}],
}
PROPERTY = {
    "M-2290": "1 x wedding ring, yellow metal\n1 x wristwatch (Seiko, steel)\n1 x spectacles in case",
    "M-2271": "1 x wristwatch",
    "M-2288": "1 x pair of earrings, white metal\n1 x cardigan",
    "M-2301": "1 x wedding ring, yellow metal\n1 x mobile phone (black)\n£23.40 cash in sealed bag B-11872\n"
    "1 x reading glasses",
    "M-2310": "1 x necklace, yellow metal\n1 x hearing aid (left)",
    "M-2315": "1 x wallet (brown leather) in sealed bag B-11890\n1 x rosary",
}

INPUTS = [
    {
        "id": "pennington",
        "task": "funeral director collection: Arthur Pennington (DOB 14/03/1941), Ryder & Sons",
        "request": {
            "received_at": "2025-09-08T09:40",
            "from": "Ryder & Sons Funeral Directors",
            "text": "Good morning, we would like to collect the late Mr Arthur Pennington, date of birth "
            "14/03/1941, who died on Ward 12 on 02/09/2025. Cremation is booked at Lawnswood on "
            "12/09. Our team will attend at 14:00 today. Kind regards, Ryder & Sons.",
        },
    },
    {
        "id": "kemp",
        "task": "funeral director collection: Doris Kemp (DOB 02/11/1936), Co-op Funeralcare",
        "request": {
            "received_at": "2025-09-08T11:45",
            "from": "Co-op Funeralcare Headingley",
            "text": "Collection request for the late Mrs Doris Kemp, date of birth 02/11/1936, died 01/09/2025 "
            "on Ward 9. Burial at Lawnswood cemetery on 15/09. We will collect at 15:30 today.",
        },
    },
    {
        "id": "shaw",
        "task": "funeral director collection: Leonard Shaw (DOB 30/05/1950), J. Rowe & Daughters",
        "request": {
            "received_at": "2025-09-08T10:05",
            "from": "J. Rowe & Daughters",
            "text": "Please prepare the late Mr Leonard Shaw, date of birth 30/05/1950, died 03/09/2025 in CCU, "
            "for collection at 13:00 today. Cremation at Cottingley on 11/09.",
        },
    },
    {
        "id": "hartley",
        "task": "funeral director collection: Sylvia Hartley (DOB 19/01/1944), Ryder & Sons",
        "request": {
            "received_at": "2025-09-09T08:50",
            "from": "Ryder & Sons Funeral Directors",
            "text": "We are collecting the late Mrs Sylvia Hartley, date of birth 19/01/1944, died 04/09/2025 on "
            "Ward 3. The family have chosen cremation at Rawdon on 16/09. Collection 11:30 today.",
        },
    },
    {
        "id": "oneill",
        "task": "funeral director collection: Frank O'Neill (DOB 25/08/1947), Co-op Funeralcare",
        "request": {
            "received_at": "2025-09-09T09:30",
            "from": "Co-op Funeralcare Headingley",
            "text": "Collection for the late Mr Frank O'Neill, date of birth 25/08/1947, died 05/09/2025 on AMU. "
            "Burial at Holy Cross on 17/09. We will attend at 12:00 today.",
        },
    },
]

CASES = [
    {
        "case": "morgue_namesake",
        "input": "pennington",
        "switch": "first_name_match",
        "fault_kind": "subagent_wrong_entity",
        "root": ("confirm_match", 1),
        "failure": ("verify_identity", 1),
        "description": "The register-search sub-agent's match node took the first 'Arthur Pennington' in the register "
        "(M-2271, born 1938) without checking the date of birth; the release goes ahead for him until "
        "the ID band on his tray does not match the collection request.",
    },
    {
        "case": "morgue_morning_export",
        "input": "kemp",
        "switch": "documents_from_export",
        "fault_kind": "stale_data",
        "root": ("get_documents", 1),
        "failure": ("release_body", 1),
        "description": "The documents tool answered from the 07:00 export of the register, before the coroner's "
        "referral at 11:20, so the paperwork reads clear; the release gate finds the coroner's hold.",
    },
    {
        "case": "morgue_property_lines",
        "input": "shaw",
        "switch": "itemised_lines_only",
        "fault_kind": "lossy_parsing",
        "root": ("PropertyListParser", 1),
        "failure": ("release_body", 1),
        "description": "The property parser kept only lines of the form 'N x item', dropping the cash in sealed bag "
        "B-11872; the release gate's property reconciliation finds an item missing from the handover.",
    },
    {
        "case": "morgue_disposal_route",
        "input": "hartley",
        "switch": "route_by_registration",
        "fault_kind": "wrong_routing",
        "root": ("route_disposal", 1),
        "failure": ("release_body", 1),
        "description": "The disposal router followed the registrar's first entry (burial) instead of the funeral "
        "director's cremation booking, skipping the implanted-device check; the release gate refuses a "
        "cremation with a pacemaker still in place.",
    },
    {
        "case": "morgue_tray_label",
        "input": "oneill",
        "switch": "index_as_label",
        "fault_kind": "off_by_one",
        "root": ("locate_body", 1),
        "failure": ("verify_identity", 1),
        "description": "The tray locator printed the register's 0-based tray index as the 1-based tray label (F3-T03 "
        "instead of F3-T04); the scan at that tray reads Norman Pike's ID band and the identity check stops.",
    },
]


class _Store:
    removed: set[str] = set()


# --- tools -----------------------------------------------------------------------------------------


@tool
def search_register(surname: str, first_name: str) -> dict:
    """Search the body-store register by name."""
    rows = [r for r in REGISTER if r["name"].lower() == f"{first_name} {surname}".lower()]
    return {"matches": [{k: r[k] for k in ("mortuary_no", "name", "dob", "died", "ward")} for r in rows]}


@tool
def get_documents(mortuary_no: str) -> dict:
    """The certificates and forms held for a deceased."""
    source = DOCUMENTS if _case("documents_from_export") else DOCUMENTS_LIVE
    return {"mortuary_no": mortuary_no, **source[mortuary_no]}


@tool
def notify_funeral_director(funeral_director: str, mortuary_no: str, message: str) -> dict:
    """Tell the funeral director a collection cannot go ahead."""
    return {"to": funeral_director, "mortuary_no": mortuary_no, "sent": True, "message": message}


@tool
def property_record(mortuary_no: str) -> str:
    """The property and valuables logged when the deceased was admitted."""
    return PROPERTY[mortuary_no]


@tool
def implant_register(mortuary_no: str) -> dict:
    """Implanted devices recorded for the deceased."""
    return {"mortuary_no": mortuary_no, "devices": IMPLANTS.get(mortuary_no, [])}


@tool
def book_device_removal(mortuary_no: str, device: str) -> dict:
    """Book the anatomical pathology technologist to remove a device before cremation."""
    _Store.removed.add(mortuary_no)
    return {"mortuary_no": mortuary_no, "device": device, "removed": True, "by": "APT on duty"}


@tool
def scan_id_band(location: str) -> dict:
    """Scan the ID band of the deceased on a fridge tray."""
    m = re.match(r"F(\d)-T(\d\d)", location)
    fridge, tray = int(m.group(1)), int(m.group(2))
    for r in REGISTER:
        if r["fridge"] == fridge and r["tray_index"] + 1 == tray:
            return {
                "location": location,
                "band": {"mortuary_no": r["mortuary_no"], "name": r["name"], "dob": r["dob"]},
            }
    return {"location": location, "band": None}


@tool
def release_body(mortuary_no: str, funeral_director: str, disposal: str, property_items: list[str]) -> dict:
    """Release the deceased in the mortuary system (its own gate checks run here)."""
    if mortuary_no in CORONER_HOLDS:
        raise PermissionError(f"release refused for {mortuary_no}: {CORONER_HOLDS[mortuary_no]}")
    if disposal == "cremation":
        for d in IMPLANTS.get(mortuary_no, []):
            if d["removal_needed"] and mortuary_no not in _Store.removed:
                raise PermissionError(
                    f"release refused for {mortuary_no}: cremation with {d['device']} "
                    f"in place and no removal recorded"
                )
    logged = [line for line in PROPERTY[mortuary_no].splitlines() if line.strip()]
    if len(property_items) != len(logged):
        raise PermissionError(
            f"release refused for {mortuary_no}: {len(logged)} property items logged at "
            f"admission, {len(property_items)} on the handover list"
        )
    return {
        "mortuary_no": mortuary_no,
        "released_to": funeral_director,
        "disposal": disposal,
        "status": "released",
    }


class PropertyListParser(BaseOutputParser[list]):
    """Property text (one item per line) to a list of items."""

    def parse(self, text: str) -> list:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if _case("itemised_lines_only"):
            return [line for line in lines if re.match(r"^\d+ x ", line)]
        return lines


# --- the graphs -------------------------------------------------------------------------------------


class SearchState(TypedDict, total=False):
    query: dict
    messages: Annotated[list[AnyMessage], add_messages]
    match: dict


class ReleaseState(TypedDict, total=False):
    request: dict
    order: dict
    deceased: dict
    documents: dict
    property_items: list
    implants: dict
    location: str
    identity: dict
    release: dict


INTAKE_SYSTEM = (
    "You read funeral directors' collection requests for the mortuary. Extract JSON: deceased "
    "(full name), dob (YYYY-MM-DD), died (YYYY-MM-DD), funeral_director, disposal (burial or "
    "cremation), collection (ISO time)."
)
SEARCH_SYSTEM = (
    "You search the body-store register for the deceased named by the user with search_register, "
    "then say how many candidates you found."
)


def build(llm: Any) -> Any:
    intake_chain = (
        ChatPromptTemplate.from_messages(
            [("system", INTAKE_SYSTEM), ("human", "From {from} at {received_at}:\n{text}")]
        )
        | llm
        | JsonOutputParser()
    )
    search_llm = llm.bind_tools([search_register])

    def search(state: SearchState) -> dict:
        return {"messages": [search_llm.invoke(state["messages"])]}

    def confirm_match(state: SearchState) -> dict:
        found = [json.loads(m.content)["matches"] for m in state["messages"] if m.type == "tool"][-1]
        q = state["query"]
        if _case("first_name_match"):
            hits = [r for r in found if r["name"] == q["deceased"]]
        else:
            hits = [r for r in found if r["name"] == q["deceased"] and r["dob"] == q["dob"]]
        if not hits:
            raise LookupError(f"no register entry for {q['deceased']} born {q['dob']}")
        return {"match": hits[0]}

    sg = StateGraph(SearchState)
    sg.add_node("search", search)
    sg.add_node("register_tools", ToolNode([search_register]))
    sg.add_node("confirm_match", confirm_match)
    sg.add_edge(START, "search")
    sg.add_conditional_edges("search", tools_condition, {"tools": "register_tools", END: "confirm_match"})
    sg.add_edge("register_tools", "search")
    sg.add_edge("confirm_match", END)
    register_search = sg.compile(name="register_search")

    def parse_request(state: ReleaseState) -> dict:
        return {"order": intake_chain.invoke(state["request"])}

    def find_deceased(state: ReleaseState) -> dict:
        order = state["order"]
        out = register_search.invoke(
            {
                "query": order,
                "messages": [
                    SystemMessage(SEARCH_SYSTEM),
                    HumanMessage(
                        json.dumps(
                            {"deceased": order["deceased"], "dob": order["dob"], "died": order["died"]}
                        )
                    ),
                ],
            }
        )
        return {"deceased": out["match"]}

    def paperwork(state: ReleaseState) -> dict:
        return {"documents": get_documents.invoke({"mortuary_no": state["deceased"]["mortuary_no"]})}

    def documents_gate(state: ReleaseState) -> str:
        docs = state["documents"]
        clear = docs["coroner"] == "not referred" and docs["mccd"].startswith("issued")
        return "property_list" if clear else "hold_collection"

    def hold_collection(state: ReleaseState) -> dict:
        note = notify_funeral_director.invoke(
            {
                "funeral_director": state["order"]["funeral_director"],
                "mortuary_no": state["deceased"]["mortuary_no"],
                "message": f"Collection of {state['order']['deceased']} cannot go ahead: coroner "
                f"{state['documents']['coroner']}. We will call when released.",
            }
        )
        return {"release": {"status": "held", "notified": note}}

    def property_list(state: ReleaseState) -> dict:
        text = property_record.invoke({"mortuary_no": state["deceased"]["mortuary_no"]})
        return {"property_items": PropertyListParser().invoke(text)}

    def route_disposal(state: ReleaseState) -> str:
        if _case("route_by_registration"):
            disposal = state["documents"]["registered_disposal"]
        else:
            disposal = state["order"]["disposal"]
        return "implant_check" if disposal == "cremation" else "locate_body"

    def implant_check(state: ReleaseState) -> dict:
        mno = state["deceased"]["mortuary_no"]
        reg = implant_register.invoke({"mortuary_no": mno})
        removals = [
            book_device_removal.invoke({"mortuary_no": mno, "device": d["device"]})
            for d in reg["devices"]
            if d["removal_needed"]
        ]
        return {"implants": {"devices": reg["devices"], "removals": removals}}

    def locate_body(state: ReleaseState) -> dict:
        entry = next(r for r in REGISTER if r["mortuary_no"] == state["deceased"]["mortuary_no"])
        tray = entry["tray_index"] if _case("index_as_label") else entry["tray_index"] + 1
        return {"location": f"F{entry['fridge']}-T{tray:02d}"}

    def verify_identity(state: ReleaseState) -> dict:
        scan = scan_id_band.invoke({"location": state["location"]})
        band, order = scan["band"], state["order"]
        if band is None or band["name"] != order["deceased"] or band["dob"] != order["dob"]:
            read = "no band" if band is None else f"{band['name']} born {band['dob']} ({band['mortuary_no']})"
            raise PermissionError(
                f"ID band at {state['location']} reads {read}; the collection is for "
                f"{order['deceased']} born {order['dob']}"
            )
        return {"identity": {"confirmed": band["mortuary_no"], "location": state["location"]}}

    def release(state: ReleaseState) -> dict:
        out = release_body.invoke(
            {
                "mortuary_no": state["identity"]["confirmed"],
                "funeral_director": state["order"]["funeral_director"],
                "disposal": state["order"]["disposal"],
                "property_items": state["property_items"],
            }
        )
        return {"release": out}

    g = StateGraph(ReleaseState)
    for name, fn in (
        ("parse_request", parse_request),
        ("find_deceased", find_deceased),
        ("paperwork", paperwork),
        ("hold_collection", hold_collection),
        ("property_list", property_list),
        ("implant_check", implant_check),
        ("locate_body", locate_body),
        ("verify_identity", verify_identity),
        ("release", release),
    ):
        g.add_node(name, fn)
    g.add_edge(START, "parse_request")
    g.add_edge("parse_request", "find_deceased")
    g.add_edge("find_deceased", "paperwork")
    g.add_conditional_edges("paperwork", documents_gate, ["property_list", "hold_collection"])
    g.add_edge("hold_collection", END)
    g.add_conditional_edges("property_list", route_disposal, ["implant_check", "locate_body"])
    g.add_edge("implant_check", "locate_body")
    g.add_edge("locate_body", "verify_identity")
    g.add_edge("verify_identity", "release")
    g.add_edge("release", END)
    return g.compile()


def record(inp: dict, path: str, ctx: Any) -> None:
    from langchain_openai import ChatOpenAI
    from trajdebug.integrations.langchain import TrajdebugTracer

    _Store.removed = set()
    llm = ChatOpenAI(model=ctx.model, base_url=ctx.base_url, api_key="not-needed", max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME)
    try:
        build(llm).invoke(
            {"request": inp["request"]}, config={"callbacks": [tracer], "metadata": {"task": inp["task"]}}
        )
    except PermissionError:
        pass


# --- the model --------------------------------------------------------------------------------


def _iso(dmy: str) -> str:
    d, m, y = dmy.split("/")
    return f"{y}-{m}-{d}"


def brain(request: Any) -> Any:
    system = system_text(request)
    msgs = request.body["messages"]
    if system == INTAKE_SYSTEM:
        text = msgs[-1]["content"]
        head, body = text.split(":\n", 1)
        name = re.search(r"the late (?:Mr|Mrs|Ms) ([A-Z][a-z]+ [A-Z][A-Za-z']+)", body).group(1)
        dob = _iso(re.search(r"date of birth (\d\d/\d\d/\d{4})", body).group(1))
        died = _iso(re.search(r"died (?:on )?(?:Ward \d+ on )?(\d\d/\d\d/\d{4})", body).group(1))
        hhmm = re.search(r"(\d\d:\d\d) today", body).group(1)
        day = re.search(r"at (\d{4}-\d\d-\d\d)T", head).group(1)
        fd = re.match(r"From (.+?) at ", head).group(1)
        disposal = "cremation" if "remation" in body else "burial"
        return json.dumps(
            {
                "deceased": name,
                "dob": dob,
                "died": died,
                "funeral_director": fd,
                "disposal": disposal,
                "collection": f"{day}T{hhmm}",
            }
        )
    if system == SEARCH_SYSTEM:
        if msgs[-1]["role"] == "tool":
            n = len(json.loads(msgs[-1]["content"])["matches"])
            return f"{n} candidate{'s' if n != 1 else ''} in the register."
        who = json.loads(msgs[-1]["content"])
        first, surname = who["deceased"].split(" ", 1)
        return Reply(tool_calls=(tool_call("search_register", {"surname": surname, "first_name": first}),))
    return "I cannot help with that."
