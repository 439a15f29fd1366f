"""Heritage windmill restoration: a works-planning graph for a mills trust (route: langgraph).

A StateGraph reads the enquiry with a model, loads the mill's register record (a tool with
retries), the desk's notes and the conservation guidance (a retriever), has a model choose
the components to assess, runs a component-assessor sub-graph once per component
(inspection tool, model estimate), routes to the right consent path, has a model write the
schedule of works, compiles the plan and checks it against the trust's rules.
"""

from __future__ import annotations

import copy
import json
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import common
import kit
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph


NAME = "windmill-works-planner"
ROUTE = "langgraph"
DOMAIN = "heritage windmill restoration"
SHAPE = (
    "StateGraph: model reads the enquiry, register tool (with retry), desk notes, guidance retriever, model "
    "picks components, component-assessor sub-graph per component (inspection tool, model estimate) in a "
    "loop, summary node with a conditional consent route (heritage or local consent tool), model writes the "
    "schedule, compile node, validator node"
)

COMPONENTS = {
    "tower": ["cap", "curb", "sails", "stocks", "windshaft", "brake wheel", "fantail", "tower brickwork"],
    "post": ["buck", "post", "crown tree", "tail pole", "sails", "stocks", "roundhouse", "windshaft"],
    "smock": ["cap", "sails", "stocks", "fantail", "smock frame", "weatherboarding", "brake wheel"],
}

MILLS: dict[str, dict[str, Any]] = {
    "WM-101": {"name": "Sutton Mill", "type": "tower", "grade": "II*", "sails": 4},
    "WM-102": {"name": "Stow Mill", "type": "tower", "grade": "II", "sails": 4},
    "WM-103": {"name": "Hunsett Mill", "type": "smock", "grade": "II", "sails": 4},
    "WM-104": {"name": "Berney Arms Mill", "type": "tower", "grade": "I", "sails": 4},
    "WM-105": {"name": "Billingford Mill", "type": "tower", "grade": "II", "sails": 4},
    "WM-106": {"name": "Thurne Mill", "type": "smock", "grade": "II", "sails": 4},
    "WM-107": {"name": "Cley Mill", "type": "tower", "grade": "II*", "sails": 4},
    "WM-108": {"name": "Saxtead Green Mill", "type": "post", "grade": "II*", "sails": 4},
    "WM-109": {"name": "Garboldisham Mill", "type": "post", "grade": "I", "sails": 4},
}

# (mill, component) -> defects from the last inspection: (id, description, structural, cost GBP)
DEFECTS: dict[tuple[str, str], list[tuple[str, str, bool, int]]] = {
    ("WM-101", "cap"): [
        ("D1", "cap circle rot, north quarter", True, 14200),
        ("D2", "cap boarding open joints", False, 2600),
    ],
    ("WM-101", "fantail"): [
        ("D3", "fantail staging split", True, 6100),
        ("D4", "fan blades weathered", False, 1800),
    ],
    ("WM-101", "sails"): [
        ("D5", "shutter bars loose", False, 3900),
        ("D6", "sail bars checked", False, 2400),
    ],
    ("WM-102", "sails"): [
        ("D1", "two sails missing shutters", False, 7400),
        ("D2", "whip splice failed", True, 5200),
    ],
    ("WM-102", "stocks"): [("D3", "inner stock cracked at canister", True, 9800)],
    ("WM-102", "brake wheel"): [("D4", "brake band worn", False, 1500), ("D5", "cog pins loose", False, 900)],
    ("WM-103", "sails"): [
        ("D1", "common sail cloths perished", False, 2100),
        ("D2", "sail bars split", False, 2700),
    ],
    ("WM-103", "stocks"): [
        ("D3", "stock wedges loose", False, 800),
        ("D4", "stock rot at mid-length", True, 7600),
    ],
    ("WM-103", "cap"): [("D5", "cap frame sill rot", True, 6900), ("D6", "felt roofing torn", False, 1200)],
    ("WM-104", "cap"): [
        ("D1", "cap ribs split", False, 3100),
        ("D2", "curb track pitted", False, 2200),
        ("D3", "cap boarding decayed", False, 2900),
        ("D4", "sheer beam rot at bearing", True, 12800),
        ("D5", "finial missing", False, 600),
    ],
    ("WM-104", "sails"): [
        ("D6", "shutters seized", False, 4400),
        ("D7", "hemlock stock paint failed", False, 1700),
    ],
    ("WM-104", "fantail"): [
        ("D8", "fantail gearing worn", False, 2300),
        ("D9", "fly post loose", True, 3600),
    ],
    ("WM-104", "windshaft"): [("D10", "windshaft neck bearing worn", True, 8800)],
    ("WM-105", "cap"): [
        ("D1", "cap weatherboards split", False, 2800),
        ("D2", "cap sheers rot", True, 11200),
    ],
    ("WM-105", "fantail"): [("D3", "fantail blades missing", False, 2100)],
    ("WM-105", "brake wheel"): [
        ("D4", "brake wheel cogs worn", False, 3300),
        ("D5", "brake lever cracked", True, 1900),
    ],
    ("WM-105", "tower brickwork"): [("D6", "tower brickwork cracked", True, 9400)],
    ("WM-106", "sails"): [("D1", "sail frames racked", True, 6600)],
    ("WM-106", "smock frame"): [("D2", "cant post rot", True, 8100), ("D3", "sill beam rot", True, 7700)],
    ("WM-106", "weatherboarding"): [("D4", "boarding split on south face", False, 3400)],
    ("WM-107", "cap"): [("D1", "cap roof leaking", False, 2500), ("D2", "curb cogs worn", False, 1900)],
    ("WM-107", "sails"): [("D3", "sail stocks checked", True, 7200)],
    ("WM-107", "fantail"): [("D4", "fantail spindle seized", False, 1400)],
    ("WM-108", "buck"): [
        ("D1", "buck corner posts rot", True, 13600),
        ("D2", "buck boarding loose", False, 2200),
    ],
    ("WM-108", "post"): [("D3", "main post shake", True, 9100)],
    ("WM-108", "sails"): [("D4", "shutters missing", False, 3800)],
    ("WM-109", "crown tree"): [("D1", "crown tree split", True, 15400)],
    ("WM-109", "tail pole"): [("D2", "tail pole rot at ladder", False, 2900)],
    ("WM-109", "roundhouse"): [
        ("D3", "roundhouse roof felt failed", False, 2600),
        ("D4", "roundhouse wall cracked", True, 4800),
    ],
}

# The desk's notes on each mill (what the last visits said).
NOTES: dict[str, list[dict[str, str]]] = {
    "WM-101": [{"date": "2025-11-03", "component": "fantail", "note": "fantail staging moving in wind"}],
    "WM-102": [{"date": "2025-10-21", "component": "stocks", "note": "inner stock crack noted at canister"}],
    "WM-103": [{"date": "2025-09-30", "component": "cap", "note": "water staining under cap sill"}],
    "WM-104": [{"date": "2025-12-02", "component": "windshaft", "note": "neck bearing running warm"}],
    "WM-105": [
        {"date": "2025-08-14", "component": "tower brickwork", "note": "crack above the meal floor door"}
    ],
    "WM-106": [
        {"date": "2025-07-19", "component": "weatherboarding", "note": "boards lifting on south face"}
    ],
    "WM-107": [{"date": "2025-10-02", "component": "fantail", "note": "fantail slow to turn the cap"}],
    "WM-108": [{"date": "2025-11-28", "component": "post", "note": "shake in main post widening"}],
    "WM-109": [{"date": "2025-09-09", "component": "roundhouse", "note": "roundhouse wall crack re-opened"}],
}
# The notes of the enquiry the desk handled just before (a post mill visit).
DESK_RECENT = [
    {"date": "2026-03-30", "component": "tail pole", "note": "tail pole cracked at the ladder"},
    {"date": "2026-03-30", "component": "crown tree", "note": "crown tree checks opened"},
]

GUIDANCE = [
    {"id": "SPAB-T01", "mill_type": "tower", "topics": ["cap", "curb"], "title": "Tower mill caps and curbs"},
    {"id": "SPAB-T02", "mill_type": "tower", "topics": ["fantail"], "title": "Fantails and fan staging"},
    {"id": "SPAB-A01", "mill_type": "any", "topics": ["sails", "stocks"], "title": "Sails and stocks"},
    {
        "id": "SPAB-A02",
        "mill_type": "any",
        "topics": ["brake wheel", "windshaft"],
        "title": "Windshafts and brake wheels",
    },
    {
        "id": "SPAB-P01",
        "mill_type": "post",
        "topics": ["post", "crown tree"],
        "title": "Main posts and crown trees",
    },
    {
        "id": "SPAB-P02",
        "mill_type": "post",
        "topics": ["buck", "tail pole"],
        "title": "Buck framing and tail poles",
    },
    {
        "id": "SPAB-P03",
        "mill_type": "post",
        "topics": ["sails", "stocks"],
        "title": "Balancing sails on a post mill buck",
    },
    {
        "id": "SPAB-S01",
        "mill_type": "smock",
        "topics": ["smock frame", "weatherboarding"],
        "title": "Smock frames",
    },
    {"id": "SPAB-S02", "mill_type": "smock", "topics": ["cap", "fantail"], "title": "Smock mill caps"},
    {"id": "SPAB-B01", "mill_type": "tower", "topics": ["tower brickwork"], "title": "Tarred brick towers"},
    {"id": "SPAB-R01", "mill_type": "post", "topics": ["roundhouse"], "title": "Roundhouses"},
]


def _enquiry(mill_id: str, scope: list[str], who: str) -> dict[str, Any]:
    name = MILLS[mill_id]["name"]
    return {
        "mill_id": mill_id,
        "scope": scope,
        "text": f"From {who}: the trustees of {name} ({mill_id}) ask for a schedule of repair works covering "
        f"the {', '.join(scope)} before the open day season.",
    }


INPUTS: dict[str, dict[str, Any]] = {
    "sutton": _enquiry("WM-101", ["cap", "fantail", "sails"], "Sutton Windmill Trust"),
    "stow": _enquiry("WM-102", ["sails", "stocks", "brake wheel"], "Stow Mill Preservation Society"),
    "hunsett": _enquiry("WM-103", ["sails", "stocks", "cap"], "Hunsett Mill owners"),
    "berney": _enquiry("WM-104", ["cap", "sails", "fantail", "windshaft"], "Berney Arms guardianship"),
    "billingford": _enquiry(
        "WM-105", ["cap", "fantail", "brake wheel", "tower brickwork"], "Billingford parish"
    ),
    "thurne": _enquiry("WM-106", ["sails", "smock frame", "weatherboarding"], "Thurne Dyke Mill Trust"),
    "cley": _enquiry("WM-107", ["cap", "sails", "fantail"], "Cley Mill owners"),
    "saxtead": _enquiry("WM-108", ["buck", "post", "sails"], "Saxtead Green guardians"),
    "garboldisham": _enquiry(
        "WM-109", ["crown tree", "tail pole", "roundhouse"], "Garboldisham Windmill Trust"
    ),
}
REFS = ["thurne", "cley", "saxtead", "garboldisham"]

CASES = [
    {
        "id": "windmill-notes",
        "input": "stow",
        "kind": "context_pollution",
        "root": ("load_history", 1),
        "failure": ("validate_plan", 1),
        "description": "load_history appends the desk's notes from the previous enquiry (a post mill) to Stow Mill's "
        "notes, and the model then plans work on a tail pole and crown tree the tower mill does not have.",
    },
    {
        "id": "windmill-guidance",
        "input": "hunsett",
        "kind": "wrong_retrieval",
        "root": ("guidance_search", 1),
        "failure": ("validate_plan", 1),
        "description": "The guidance search ranks notes across every mill type and returns SPAB-P03 (post mills) "
        "for Hunsett smock mill, and the plan cites it.",
    },
    {
        "id": "windmill-defects",
        "input": "berney",
        "kind": "truncated_result",
        "root": ("inspection_report", 1),
        "failure": ("validate_plan", 1),
        "description": "The inspection report for Berney Arms' cap comes back cut at its first 3 defects, dropping the "
        "structural sheer beam rot (D4), which the plan then never addresses.",
    },
    {
        "id": "windmill-consent",
        "input": "sutton",
        "kind": "wrong_routing",
        "root": ("funding_route", 1),
        "failure": ("validate_plan", 1),
        "description": "funding_route strips the star from grade II* and sends Sutton Mill down the local consent path, "
        "so the plan has no Historic England consultation.",
    },
    {
        "id": "windmill-costs",
        "input": "billingford",
        "kind": "hallucinated_value",
        "root": ("ChatOpenAI", 7),
        "failure": ("validate_plan", 1),
        "description": "The schedule-writing model gives the tower brickwork line GBP 6,500, a figure no estimate "
        "holds (the estimate is GBP 9,400).",
    },
]


# -- the scripted model ---------------------------------------------------------------------------------------


def brain(request: Any) -> str:
    system, prompt = common.system_text(request), common.last_user(request)
    if system.startswith("You read windmill enquiries"):
        inp = next(i for i in INPUTS.values() if i["text"] in prompt)
        return json.dumps({"mill_id": inp["mill_id"], "scope": inp["scope"]})
    if system.startswith("You choose the components"):
        scope, notes = common.payload(prompt, "SCOPE"), common.payload(prompt, "NOTES")
        components = list(scope)
        for n in notes:
            if n["component"] not in components:
                components.append(n["component"])
        return json.dumps({"components": components})
    if system.startswith("You estimate millwrighting"):
        report = common.payload(prompt, "REPORT")
        cost = sum(d["cost"] for d in report["defects"])
        weeks = max(1, round(cost / 4000))
        return json.dumps(
            {
                "component": report["component"],
                "cost_gbp": cost,
                "weeks": weeks,
                "addresses": [d["id"] for d in report["defects"]],
            }
        )
    if system.startswith("You write schedules of works"):
        findings = common.payload(prompt, "FINDINGS")
        lines, week = [], 1
        for f in findings:
            cost = f["cost_gbp"]
            if kit.on("windmill-costs") and f["component"] == "tower brickwork":
                cost = 6500
            lines.append(
                {"component": f["component"], "cost_gbp": cost, "start_week": week, "weeks": f["weeks"]}
            )
            week += f["weeks"]
        return json.dumps({"lines": lines, "millwright": "R. Seago & Sons", "total_weeks": week - 1})
    return "{}"


# -- tools and the retriever -----------------------------------------------------------------------------------

_register_calls: dict[str, int] = {}


@tool
def mill_register(mill_id: str) -> dict:
    """The mills register's record of one mill."""
    _register_calls[mill_id] = _register_calls.get(mill_id, 0) + 1
    if mill_id in ("WM-104", "WM-108") and _register_calls[mill_id] == 1:
        raise ConnectionError("mills register timed out")
    mill = MILLS[mill_id]
    structural = [d[1] for (m, _c), ds in DEFECTS.items() if m == mill_id for d in ds if d[2]]
    return {
        "mill_id": mill_id,
        **mill,
        "components": COMPONENTS[mill["type"]],
        "structural_defects": structural,
    }


@tool
def inspection_report(mill_id: str, component: str) -> dict:
    """The last inspection's defects for one component of a mill."""
    defects = [
        {"id": d[0], "description": d[1], "structural": d[2], "cost": d[3]}
        for d in DEFECTS.get((mill_id, component), [])
    ]
    if kit.on("windmill-defects"):
        defects = defects[:3]
    return {"mill_id": mill_id, "component": component, "inspected": "2025-10-15", "defects": defects}


@tool
def he_consultation(mill_id: str, components: list[str]) -> dict:
    """Open a Historic England pre-application consultation for listed-building works."""
    return {
        "reference": f"HE-PA-{mill_id[3:]}-26",
        "conditions": ["timber like-for-like", "photographic record"],
    }


@tool
def council_consent(mill_id: str) -> dict:
    """Log a local listed-building consent application with the district council."""
    return {"reference": f"LBC/26/{mill_id[3:]}", "determination_weeks": 8}


class GuidanceSearch(BaseRetriever):
    """Keyword search over the conservation guidance notes."""

    mill_type: str = "tower"
    k: int = 3

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        words = set(query.split(", "))
        notes = GUIDANCE
        if not kit.on("windmill-guidance"):
            notes = [g for g in GUIDANCE if g["mill_type"] in (self.mill_type, "any")]
        scored = sorted(
            ((len(words & set(g["topics"])), g["id"], g) for g in notes), key=lambda t: (-t[0], t[1])
        )
        return [
            Document(page_content=g["title"], metadata={"id": g["id"], "mill_type": g["mill_type"]})
            for score, _id, g in scored[: self.k]
            if score > 0
        ]


# -- the graph --------------------------------------------------------------------------------------------------


class Assessment(TypedDict, total=False):
    mill_id: str
    component: str
    report: dict
    finding: dict


class Works(TypedDict, total=False):
    enquiry: str
    mill_id: str
    scope: list
    mill: dict
    notes: list
    guidance: list
    components: list
    cursor: int
    findings: Annotated[list, operator.add]
    consent: dict
    schedule: dict
    plan: dict


def build(llm: ChatOpenAI) -> Any:
    def inspect(state: Assessment) -> dict:
        return {
            "report": inspection_report.invoke({"mill_id": state["mill_id"], "component": state["component"]})
        }

    def estimate(state: Assessment) -> dict:
        reply = llm.invoke(
            [
                ("system", "You estimate millwrighting costs from an inspection report, as JSON."),
                ("user", f"REPORT: {json.dumps(state['report'])}"),
            ]
        )
        return {"finding": json.loads(reply.content)}

    sub = StateGraph(Assessment)
    sub.add_node("inspect", inspect)
    sub.add_node("estimate", estimate)
    sub.add_edge(START, "inspect")
    sub.add_edge("inspect", "estimate")
    sub.add_edge("estimate", END)
    assessor = sub.compile(name="component_assessor")

    def read_enquiry(state: Works) -> dict:
        reply = llm.invoke(
            [
                ("system", "You read windmill enquiries and answer with the mill id and scope as JSON."),
                ("user", state["enquiry"]),
            ]
        )
        return json.loads(reply.content)

    def load_mill(state: Works) -> dict:
        register = mill_register.with_retry(
            stop_after_attempt=3, retry_if_exception_type=(ConnectionError,), wait_exponential_jitter=False
        )
        return {"mill": register.invoke({"mill_id": state["mill_id"]})}

    def load_history(state: Works) -> dict:
        notes = copy.deepcopy(NOTES[state["mill_id"]])
        if kit.on("windmill-notes"):
            notes += copy.deepcopy(DESK_RECENT)
        return {"notes": notes}

    def retrieve_guidance(state: Works) -> dict:
        search = GuidanceSearch(mill_type=state["mill"]["type"]).with_config(run_name="guidance_search")
        docs = search.invoke(", ".join(state["scope"]))
        return {
            "guidance": [
                {"id": d.metadata["id"], "mill_type": d.metadata["mill_type"], "title": d.page_content}
                for d in docs
            ]
        }

    def choose_components(state: Works) -> dict:
        reply = llm.invoke(
            [
                ("system", "You choose the components a windmill repair survey must assess, as JSON."),
                (
                    "user",
                    f"Mill: {state['mill']['name']} ({state['mill']['type']} mill)\n"
                    f"SCOPE: {json.dumps(state['scope'])}\nNOTES: {json.dumps(state['notes'])}\n"
                    f"GUIDANCE: {json.dumps([g['id'] for g in state['guidance']])}",
                ),
            ]
        )
        return {"components": json.loads(reply.content)["components"], "cursor": 0}

    def assess_component(state: Works) -> dict:
        component = state["components"][state["cursor"]]
        out = assessor.invoke({"mill_id": state["mill_id"], "component": component})
        return {"findings": [out["finding"]], "cursor": state["cursor"] + 1}

    def next_component(state: Works) -> str:
        return "assess_component" if state["cursor"] < len(state["components"]) else "summarise_findings"

    def summarise_findings(state: Works) -> dict:
        total = sum(f["cost_gbp"] for f in state["findings"])
        return {"plan": {"estimate_total": total, "components": [f["component"] for f in state["findings"]]}}

    def funding_route(state: Works) -> str:
        grade = state["mill"]["grade"]
        if kit.on("windmill-consent"):
            grade = grade.rstrip("*")
        return "heritage_consent" if grade in ("I", "II*") else "local_consent"

    def heritage_consent(state: Works) -> dict:
        got = he_consultation.invoke({"mill_id": state["mill_id"], "components": state["components"]})
        return {"consent": {"path": "heritage", **got}}

    def local_consent(state: Works) -> dict:
        return {"consent": {"path": "local", **council_consent.invoke({"mill_id": state["mill_id"]})}}

    def draft_schedule(state: Works) -> dict:
        reply = llm.invoke(
            [
                ("system", "You write schedules of works for mill repairs, as JSON."),
                ("user", f"Mill: {state['mill']['name']}\nFINDINGS: {json.dumps(state['findings'])}"),
            ]
        )
        return {"schedule": json.loads(reply.content)}

    def compile_plan(state: Works) -> dict:
        schedule = state["schedule"]
        return {
            "plan": {
                "mill_id": state["mill_id"],
                "mill": state["mill"]["name"],
                "lines": schedule["lines"],
                "total_gbp": sum(line["cost_gbp"] for line in schedule["lines"]),
                "weeks": schedule["total_weeks"],
                "guidance": [g["id"] for g in state["guidance"]],
                "consent": state["consent"],
                "millwright": schedule["millwright"],
            }
        }

    def validate_plan(state: Works) -> dict:
        plan, mill = state["plan"], state["mill"]
        for line in plan["lines"]:
            if line["component"] not in mill["components"]:
                raise ValueError(
                    f"plan for {mill['name']} ({plan['mill_id']}) schedules work on the "
                    f"{line['component']}, which a {mill['type']} mill does not have"
                )
        for g in state["guidance"]:
            if g["mill_type"] not in (mill["type"], "any"):
                raise ValueError(
                    f"plan for {mill['name']} cites guidance {g['id']} ({g['mill_type']} mills); "
                    f"{mill['name']} is a {mill['type']} mill"
                )
        addressed = {f["component"]: set(f["addresses"]) for f in state["findings"]}
        for (mill_id, component), defects in DEFECTS.items():
            if mill_id != plan["mill_id"] or component not in state["scope"]:
                continue
            for d_id, desc, structural, _cost in defects:
                if structural and d_id not in addressed.get(component, set()):
                    raise ValueError(
                        f"plan for {mill['name']} leaves structural defect {d_id} ({desc}) on the "
                        f"{component} unaddressed"
                    )
        if mill["grade"] in ("I", "II*") and plan["consent"]["path"] != "heritage":
            raise ValueError(
                f"{mill['name']} is listed grade {mill['grade']} but the plan has consent "
                f"{plan['consent']['reference']} ({plan['consent']['path']}) and no Historic England "
                f"consultation"
            )
        estimates = {f["component"]: f["cost_gbp"] for f in state["findings"]}
        for line in plan["lines"]:
            if line["cost_gbp"] != estimates[line["component"]]:
                raise ValueError(
                    f"schedule line for the {line['component']} costs GBP {line['cost_gbp']:,}; the "
                    f"assessed estimate is GBP {estimates[line['component']]:,}"
                )
        return {}

    g = StateGraph(Works)
    for fn in (
        read_enquiry,
        load_mill,
        load_history,
        retrieve_guidance,
        choose_components,
        assess_component,
        summarise_findings,
        heritage_consent,
        local_consent,
        draft_schedule,
        compile_plan,
        validate_plan,
    ):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "read_enquiry")
    g.add_edge("read_enquiry", "load_mill")
    g.add_edge("load_mill", "load_history")
    g.add_edge("load_history", "retrieve_guidance")
    g.add_edge("retrieve_guidance", "choose_components")
    g.add_edge("choose_components", "assess_component")
    g.add_conditional_edges("assess_component", next_component, ["assess_component", "summarise_findings"])
    g.add_conditional_edges("summarise_findings", funding_route, ["heritage_consent", "local_consent"])
    g.add_edge("heritage_consent", "draft_schedule")
    g.add_edge("local_consent", "draft_schedule")
    g.add_edge("draft_schedule", "compile_plan")
    g.add_edge("compile_plan", "validate_plan")
    g.add_edge("validate_plan", END)
    return g.compile(name=NAME)


def record(server: Any, key: str, path: Path) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    server.use(brain)
    _register_calls.clear()
    llm = ChatOpenAI(
        base_url=server.base_url, api_key="not-needed", model=common.MODEL, max_retries=0, temperature=0
    )
    enquiry = INPUTS[key]
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"schedule of works for {enquiry['mill_id']}")
    try:
        build(llm).invoke({"enquiry": enquiry["text"]}, config={"callbacks": [tracer], "recursion_limit": 60})
    except ValueError:
        pass
