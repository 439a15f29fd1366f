"""Mortgage underwriter (route langgraph): income extraction, plan, tool loop, DTI check, rate lock, investor."""

from __future__ import annotations

import json
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from suite_m import kit
from trajdebug.testing import Reply, tool_call


AGENT = "mortgage-underwriter"
ROUTE = "langgraph"
DOMAIN = "mortgage underwriting"
SHAPE = "extract (model) -> parse -> plan (model) -> underwriter model/ToolNode loop (3 turns, parallel calls) -> assemble -> DTI -> check -> rate lock -> investor"


def _app(n: int, name: str, income: float, loan: float, term: int, prop: str, addr: str, value: float, tax: float) -> dict:
    return {
        "task": f"Underwrite application A-{n} for {name}: {term}-year fixed, {loan:.0f} USD",
        "application": f"A-{n}",
        "applicant_id": f"AP-{n + 300}",
        "borrower": name,
        "monthly_income": income,
        "loan_amount": loan,
        "term_years": term,
        "program": "fixed",
        "property_id": prop,
        "address": addr,
        "appraised": value,
        "parcel": f"PCL-{n * 7}",
        "monthly_tax": tax,
        "debts": 540.0,
    }


INPUTS = [
    _app(7101, "Dana Whitfield", 8250.0, 352000, 30, "PR-5512", "88 Larch Way", 455000, 620.0),
    _app(7102, "Omar Haddad", 9100.0, 298000, 30, "PR-6034", "12 Quarry Rd", 390000, 515.0),
    _app(7103, "Lena Kowalski", 7600.0, 265000, 30, "PR-7120", "3 Birch Hollow", 341000, 480.0),
    _app(7104, "Felix Amari", 11200.0, 310000, 15, "PR-8841", "401 Tidewater Ln", 428000, 690.0),
    _app(7105, "Grace Okafor", 8250.0, 330000, 30, "PR-9316", "27 Sumac St", 420000, 575.0),
]
REFERENCES = [
    _app(7201, "Hiro Tanaka", 9800.0, 340000, 30, "PR-1187", "9 Canal View", 445000, 600.0),
    _app(7202, "Ines Duarte", 12400.0, 280000, 15, "PR-2290", "55 Orchard Pl", 400000, 640.0),
    _app(7203, "Jonah Meyer", 7900.0, 250000, 30, "PR-3318", "140 Harbor Blvd", 320000, 455.0),
    _app(7204, "Kira Novak", 10300.0, 365000, 30, "PR-4471", "6 Aspen Ridge", 470000, 700.0),
]

CASES = [
    {"case": "m_mortgage_1", "fid": "mtg1", "kind": "format_drift", "input": 0, "root": "ChatOpenAI", "marker": "99000", "failure": "investor_submit"},
    {"case": "m_mortgage_2", "fid": "mtg2", "kind": "wrong_tool_args", "input": 1, "root": "ChatOpenAI", "marker": "PR-6043", "failure": "investor_submit"},
    {"case": "m_mortgage_3", "fid": "mtg3", "kind": "plan_error", "input": 2, "root": "ChatOpenAI", "marker": "arm-5-1", "failure": "investor_submit"},
    {"case": "m_mortgage_4", "fid": "mtg4", "kind": "tool_ignores_argument", "input": 3, "root": "get_rate_sheet", "marker": "6.875", "failure": "lock_rate"},
    {"case": "m_mortgage_5", "fid": "mtg5", "kind": "unit_error", "input": 4, "root": "get_property_tax", "marker": "6900", "failure": "check_dti"},
]

RATES = {("30y-fixed", 30): 6.875, ("15y-fixed", 15): 5.99, ("arm-5-1", 30): 6.125}
APPRAISALS: dict[str, dict] = {}
TAXES: dict[str, float] = {}
for _a in INPUTS + REFERENCES:
    APPRAISALS[_a["property_id"]] = {"property_id": _a["property_id"], "address": _a["address"], "value": _a["appraised"]}
    TAXES[_a["parcel"]] = _a["monthly_tax"]
APPRAISALS["PR-6043"] = {"property_id": "PR-6043", "address": "710 Quarry Rd", "value": 402000}


def policy(inp: dict):
    def answer(request) -> Any:
        msgs = request.body["messages"]
        system = msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""
        if system.startswith("Extract"):
            income = inp["monthly_income"]
            if kit.active("mtg1"):
                return json.dumps({"employer": "Northgate Logistics", "income": income * 12, "period": "year"})
            return json.dumps({"employer": "Northgate Logistics", "monthly_income": income, "period": "month"})
        if system.startswith("Plan"):
            product = "15y-fixed" if inp["term_years"] == 15 else "30y-fixed"
            if kit.active("mtg3"):
                product = "arm-5-1"
            return json.dumps({"product": product, "term_years": inp["term_years"], "checks": ["credit", "appraisal", "tax", "rate"]})
        plan = json.loads(next(m["content"] for m in msgs if m["role"] == "user" and m["content"].startswith("PLAN:"))[5:])
        done = sum(1 for m in msgs if m["role"] == "tool")
        if done == 0:
            prop = "PR-6043" if kit.active("mtg2") else inp["property_id"]
            return Reply(tool_calls=(
                tool_call("credit_report", {"applicant_id": inp["applicant_id"]}),
                tool_call("get_appraisal", {"property_id": prop}),
            ))
        if done == 2:
            return Reply(tool_calls=(
                tool_call("get_property_tax", {"parcel": inp["parcel"]}),
                tool_call("get_rate_sheet", {"product": plan["product"], "term_years": plan["term_years"]}),
            ))
        return "File complete: credit, appraisal, tax and rate gathered."

    return answer


@tool
def credit_report(applicant_id: str) -> str:
    """Pull the tri-merge credit report for an applicant."""
    return json.dumps({"applicant_id": applicant_id, "score": 742, "open_tradelines": 6, "monthly_debts": 540.0})


@tool
def get_appraisal(property_id: str) -> str:
    """Fetch the completed appraisal of a property."""
    return json.dumps(APPRAISALS[property_id])


@tool
def get_property_tax(parcel: str) -> str:
    """Monthly property tax for a parcel, from the county roll."""
    monthly = TAXES[parcel]
    if kit.active("mtg5"):
        monthly = round(monthly * 12, 2)
    return json.dumps({"parcel": parcel, "monthly_tax": monthly, "source": "county roll 2026"})


@tool
def get_rate_sheet(product: str, term_years: int) -> str:
    """Today's note rate for a product and term."""
    term = 30 if kit.active("mtg4") else term_years
    if term != term_years:
        product = "30y-fixed"
    return json.dumps({"product": product, "term_years": term, "rate": RATES[(product, term)], "sheet": "2026-12-02"})


@tool
def lock_rate(application: str, product: str, term_years: int, rate: float) -> str:
    """Lock the note rate with secondary marketing."""
    offered = RATES.get((product, term_years))
    if offered is None or abs(offered - rate) > 1e-9:
        raise ValueError(f"lock desk: {rate}% is not on the {term_years}-year sheet of 2026-12-02 for {product}")
    return json.dumps({"application": application, "lock_id": f"LK-{application[2:]}", "rate": rate, "days": 45})


@tool
def investor_submit(loan_file: str) -> str:
    """Submit the loan file to the investor's automated underwriting."""
    f = json.loads(loan_file)
    app = next(a for a in INPUTS + REFERENCES if a["application"] == f["application"])
    if f["appraisal"]["address"] != app["address"]:
        raise ValueError(f"AUS finding 1042: appraisal {f['appraisal']['property_id']} is for {f['appraisal']['address']}, subject is {app['address']}")
    if f["product"] != ("15y-fixed" if app["term_years"] == 15 else "30y-fixed"):
        raise ValueError(f"AUS finding 2210: product {f['product']} not eligible under the borrower's elected program ({app['program']})")
    if f["monthly_income"] > 1.2 * app["monthly_income"]:
        raise ValueError(f"AUS finding 3307: stated income {f['monthly_income']:.2f}/month not supported by verified W-2 wages")
    return json.dumps({"case_id": f"AUS-{f['application'][2:]}", "finding": "approve/eligible"})


class LoanState(TypedDict, total=False):
    request: dict
    messages: Annotated[list, add_messages]
    income: dict
    plan: dict
    loan_file: dict
    dti: float
    lock: dict
    decision: dict


TOOLS = [credit_report, get_appraisal, get_property_tax, get_rate_sheet]
_GRAPH: dict[int, Any] = {}


def build(llm):
    llm_tools = llm.bind_tools(TOOLS)

    def intake(state: LoanState) -> dict:
        req = state["request"]
        stub = (f"PAY STUB - {req['borrower']} - Northgate Logistics - gross monthly pay {req['monthly_income']:.2f} USD "
                f"- YTD {req['monthly_income'] * 11:.2f} USD")
        return {"messages": [HumanMessage(stub)]}

    def extract_income(state: LoanState) -> dict:
        msg = llm.invoke([SystemMessage("Extract the borrower's income from the pay stub as JSON."), state["messages"][-1]])
        return {"income": {"raw": msg.content}}

    def parse_income(state: LoanState) -> dict:
        data = json.loads(state["income"]["raw"])
        amount = data.get("monthly_income", data.get("income"))
        return {"income": {"employer": data["employer"], "monthly_income": float(amount)}}

    def plan(state: LoanState) -> dict:
        req = state["request"]
        msg = llm.invoke([
            SystemMessage("Plan the underwriting: pick the product and the checks. Answer JSON."),
            HumanMessage(json.dumps({k: req[k] for k in ("application", "program", "term_years", "loan_amount")})),
        ])
        return {"plan": json.loads(msg.content), "messages": [HumanMessage("PLAN:" + msg.content)]}

    def underwriter(state: LoanState) -> dict:
        req = state["request"]
        context = HumanMessage(f"Application {req['application']}: applicant {req['applicant_id']}, property {req['property_id']}, parcel {req['parcel']}.")
        msgs = [SystemMessage("You are the underwriter. Gather credit, appraisal, tax and rate with the tools."), context, *state["messages"]]
        return {"messages": [llm_tools.invoke(msgs)]}

    def route(state: LoanState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else "assemble"

    def assemble(state: LoanState) -> dict:
        results = {m.name: json.loads(m.content) for m in state["messages"] if isinstance(m, ToolMessage)}
        req = state["request"]
        return {"loan_file": {
            "application": req["application"],
            "product": state["plan"]["product"],
            "term_years": state["plan"]["term_years"],
            "rate": results["get_rate_sheet"]["rate"],
            "loan_amount": req["loan_amount"],
            "monthly_income": state["income"]["monthly_income"],
            "monthly_debts": results["credit_report"]["monthly_debts"],
            "monthly_tax": results["get_property_tax"]["monthly_tax"],
            "appraisal": results["get_appraisal"],
        }}

    def compute_dti(state: LoanState) -> dict:
        f = state["loan_file"]
        r = f["rate"] / 100 / 12
        n = f["term_years"] * 12
        payment = f["loan_amount"] * r / (1 - (1 + r) ** -n)
        return {"dti": round((payment + f["monthly_tax"] + f["monthly_debts"]) / f["monthly_income"], 4)}

    def check_dti(state: LoanState) -> dict:
        ltv = state["loan_file"]["loan_amount"] / state["loan_file"]["appraisal"]["value"]
        if state["dti"] > 0.43:
            raise ValueError(f"underwriting guideline 5.3: debt-to-income {state['dti']:.2%} above the 43% maximum")
        if ltv > 0.95:
            raise ValueError(f"underwriting guideline 4.1: loan-to-value {ltv:.2%} above 95%")
        return {}

    def lock(state: LoanState) -> dict:
        f = state["loan_file"]
        out = lock_rate.invoke({"application": f["application"], "product": f["product"], "term_years": f["term_years"], "rate": f["rate"]})
        return {"lock": json.loads(out)}

    def submit(state: LoanState) -> dict:
        out = investor_submit.invoke({"loan_file": json.dumps(state["loan_file"])})
        return {"decision": json.loads(out)}

    g = StateGraph(LoanState)
    for name, fn in [("intake", intake), ("extract_income", extract_income), ("parse_income", parse_income),
                     ("plan", plan), ("underwriter", underwriter), ("tools", ToolNode(TOOLS)),
                     ("assemble", assemble), ("compute_dti", compute_dti), ("check_dti", check_dti),
                     ("lock", lock), ("submit", submit)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "extract_income")
    g.add_edge("extract_income", "parse_income")
    g.add_edge("parse_income", "plan")
    g.add_edge("plan", "underwriter")
    g.add_conditional_edges("underwriter", route, {"tools": "tools", "assemble": "assemble"})
    g.add_edge("tools", "underwriter")
    g.add_edge("assemble", "compute_dti")
    g.add_edge("compute_dti", "check_dti")
    g.add_edge("check_dti", "lock")
    g.add_edge("lock", "submit")
    g.add_edge("submit", END)
    return g.compile()


def execute(inp: dict, env, config: dict) -> None:
    if "g" not in _GRAPH:
        _GRAPH["g"] = build(env.chat_model())
    _GRAPH["g"].invoke({"request": dict(inp), "messages": []}, config=config)
