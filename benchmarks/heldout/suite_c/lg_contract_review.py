"""contract_review: clause-by-clause review of a services agreement (hand-built LangGraph StateGraph).

extract (model lists the clauses as JSON) -> ClauseListParser -> review loop, one iteration per
clause (build_review_prompt -> model picks a review desk tool -> the desk tool rates the clause)
-> submit (``submit_review``: the contract-lifecycle system files the findings and checks each
against its own clause register).
"""

from __future__ import annotations

import json
import operator
import re
from pathlib import Path
from typing import Annotated, Any, TypedDict

from fakellm import Reply, messages, system_prompt, text_of
from harness import FAULT, AgentSpec, Case
from routes import chat_model, install, invoke_graph


# -- contracts (the repository's register is the source of truth for submit_review) -------------

WORDS = {"thirty": 30, "forty-five": 45, "sixty": 60, "ninety": 90, "one hundred twenty": 120, "two": 2, "three": 3, "five": 5, "seven": 7}


def contract(cid: str, parties: str, value: int, clauses: list[tuple[str, str, str, Any]]) -> dict[str, Any]:
    """clauses: (section, heading, sentence, register figure)."""
    lines = [f"MASTER SERVICES AGREEMENT {cid} between {parties}.", f"Total contract value: ${value:,}.", ""]
    for sec, heading, sentence, _ in clauses:
        lines.append(f"§{sec} {heading}. {sentence}")
    return {"id": cid, "value": value, "text": "\n".join(lines),
            "register": {sec: {"heading": heading, "figure": fig} for sec, heading, _, fig in clauses}}


CONTRACTS = {c["id"]: c for c in [
    contract("MSA-2291", "Northwind Logistics LLC and Brightline Analytics Inc.", 2_400_000, [
        ("3", "Fees and Payment", "Invoices are payable net 45 days from receipt.", 45),
        ("7", "Limitation of Liability", "Each party's aggregate liability shall not exceed $1,500,000.", 1_500_000),
        ("9", "Termination for Convenience", "Either party may terminate on ninety (90) days' written notice.", 90),
        ("11", "Confidentiality", "Confidentiality obligations survive for five (5) years after termination.", 5),
    ]),
    contract("MSA-3304", "Harbor Point Medical Group and Quillon Software Ltd.", 880_000, [
        ("2", "Payment Terms", "Customer shall pay undisputed invoices net 30 days.", 30),
        ("5", "Limitation of Liability", "Vendor's total liability is capped at $900,000 in the aggregate.", 900_000),
        ("8", "Termination", "Customer may terminate for convenience upon sixty (60) days' notice.", 60),
        ("12", "Governing Law", "This Agreement is governed by the laws of the State of New York.", "New York"),
    ]),
    contract("MSA-4410", "Cobalt Freight Partners and Lumen Data Systems", 560_000, [
        ("4", "Confidentiality", "The receiving party's duties survive for three (3) years.", 3),
        ("6", "Fees", "All fees are due net 60 days after the invoice date.", 60),
        ("10", "Liability Cap", "Liability of either party shall not exceed $500,000.", 500_000),
    ]),
    contract("MSA-5127", "Pinecrest Credit Union and Arbor Cloud Services", 3_150_000, [
        ("3", "Termination for Convenience", "The Client may end this Agreement on one hundred twenty (120) days' written notice.", 120),
        ("7", "Limitation of Liability", "Aggregate liability is limited to $3,000,000.", 3_000_000),
        ("9", "Governing Law", "The laws of the State of Delaware govern this Agreement.", "Delaware"),
        ("13", "Confidentiality", "Confidentiality survives for seven (7) years.", 7),
    ]),
    contract("MSA-6035", "Meridian Foods Co. and Tallgrass Automation", 410_000, [
        ("2", "Payment", "Invoices are payable net 30 days.", 30),
        ("6", "Termination", "Either party may terminate on thirty (30) days' written notice.", 30),
        ("9", "Limitation of Liability", "Liability is capped at $410,000.", 410_000),
    ]),
    # inputs of the failing cases
    contract("MSA-7102", "Sable Ridge Energy and Corvid Analytics LLC", 1_900_000, [
        ("3", "Fees and Payment", "Invoices are payable net 45 days from receipt.", 45),
        ("6", "Limitation of Liability", "Each party's aggregate liability shall not exceed $2,000,000.", 2_000_000),
        ("9", "Termination for Convenience", "Either party may terminate on sixty (60) days' written notice.", 60),
    ]),
    contract("MSA-7215", "Alder & Finch Retail and Greybeam Consulting", 740_000, [
        ("2", "Payment Terms", "Payment is due net 30 days.", 30),
        ("5", "Termination", "Customer may terminate for convenience on ninety (90) days' notice.", 90),
        ("8", "Confidentiality", "Obligations of confidence survive for two (2) years.", 2),
        ("11", "Governing Law", "This Agreement is governed by the laws of the State of Texas.", "Texas"),
    ]),
    contract("MSA-7330", "Westgate Property Trust and Oriel Facilities Inc.", 1_250_000, [
        ("4", "Termination for Convenience", "Either party may terminate on forty-five (45) days' written notice.", 45),
        ("7", "Confidentiality", "Confidentiality obligations survive for five (5) years.", 5),
        ("10", "Fees", "Fees are payable net 60 days.", 60),
    ]),
    contract("MSA-7448", "Lakeshore Transit Authority and Vantive Systems", 2_600_000, [
        ("2", "Payment", "Invoices are payable net 30 days.", 30),
        ("5", "Limitation of Liability", "Vendor liability shall not exceed $2,500,000 in the aggregate.", 2_500_000),
        ("9", "Termination", "The Authority may terminate on sixty (60) days' written notice.", 60),
    ]),
]}

DESK_OF = {"payment": "check_payment_terms", "liability": "check_liability_cap", "termination": "check_termination_notice",
           "confidentiality": "check_confidentiality", "governing_law": "check_governing_law"}


def clause_type(heading: str) -> str:
    h = heading.lower()
    for word, typ in (("liab", "liability"), ("terminat", "termination"), ("confiden", "confidentiality"),
                      ("governing", "governing_law"), ("pay", "payment"), ("fee", "payment")):
        if word in h:
            return typ
    return "other"


class FilingRejected(Exception):
    """The contract-lifecycle system refused the review."""


# -- tools (the review desks and the CLM system) ---------------------------------------------------


def build_tools() -> dict[str, Any]:
    from langchain_core.tools import tool

    def finding(clause_id: str, desk: str, figure: Any, ok: bool, note: str, **extra: Any) -> str:
        return json.dumps({"clause_id": clause_id, "desk": desk, "figure": figure, "rating": "ok" if ok else "review",
                           "note": note, **extra})

    @tool
    def check_liability_cap(clause_id: str, cap_amount: float, contract_value: float) -> str:
        """Liability desk: rate a liability cap against the total contract value."""
        FAULT.tick("check_liability_cap")
        ratio = cap_amount / contract_value if contract_value else 0
        return finding(clause_id, "liability", cap_amount, 0.5 <= ratio <= 2.0, f"cap is {ratio:.2f}x contract value",
                       rated_against=contract_value)

    @tool
    def check_termination_notice(clause_id: str, notice_days: int) -> str:
        """Termination desk: rate a termination-for-convenience notice period (days)."""
        FAULT.tick("check_termination_notice")
        return finding(clause_id, "termination", notice_days, 30 <= notice_days <= 120, f"{notice_days} days notice")

    @tool
    def check_payment_terms(clause_id: str, net_days: int) -> str:
        """Payment desk: rate invoice payment terms (net days)."""
        FAULT.tick("check_payment_terms")
        return finding(clause_id, "payment", net_days, net_days <= 60, f"net {net_days}")

    @tool
    def check_confidentiality(clause_id: str, survival_years: int) -> str:
        """Confidentiality desk: rate how long confidentiality survives (years)."""
        FAULT.tick("check_confidentiality")
        return finding(clause_id, "confidentiality", survival_years, survival_years >= 2, f"survives {survival_years} years")

    @tool
    def check_governing_law(clause_id: str, state: str) -> str:
        """Governing-law desk: check the governing law is an approved jurisdiction."""
        FAULT.tick("check_governing_law")
        return finding(clause_id, "governing_law", state, state in ("Delaware", "New York", "Texas", "California"), f"law of {state}")

    @tool
    def submit_review(contract_id: str, findings: list[dict]) -> str:
        """File the clause review in the contract-lifecycle system."""
        FAULT.tick("submit_review")
        reg = CONTRACTS[contract_id]["register"]
        seen = {f["clause_id"].lstrip("§"): f for f in findings}
        for sec, entry in reg.items():
            f = seen.get(sec)
            if f is None:
                raise FilingRejected(f"{contract_id}: §{sec} ({entry['heading']}) has no finding; a partial review cannot be filed")
            want = clause_type(entry["heading"])
            if f["desk"] != want:
                raise FilingRejected(
                    f"{contract_id} §{sec} is a {want.replace('_', ' ')} clause but was signed off by the {f['desk'].replace('_', ' ')} desk"
                )
            fig = f["figure"]
            same = fig == entry["figure"] if isinstance(entry["figure"], str) else abs(float(fig) - entry["figure"]) < 0.5
            if not same:
                raise FilingRejected(
                    f"register mismatch on {contract_id} §{sec}: the review quotes {fig!r}, the executed contract says {entry['figure']!r}"
                )
            basis = f.get("rated_against")
            if basis is not None and abs(float(basis) - CONTRACTS[contract_id]["value"]) > 0.5:
                raise FilingRejected(
                    f"§{sec} cap was benchmarked against a contract value of ${float(basis):,.0f}; "
                    f"{contract_id} is booked at ${CONTRACTS[contract_id]['value']:,} - re-rate before filing"
                )
        return json.dumps({"filed": True, "review_id": f"RV-{contract_id}", "clauses": len(reg)})

    desks = [check_liability_cap, check_termination_notice, check_payment_terms, check_confidentiality, check_governing_law]
    return {"desks": desks, "submit": submit_review}


# -- parser and prompt builder ---------------------------------------------------------------------


def _figure(raw: str) -> Any:
    raw = raw.strip()
    if raw.startswith("$"):
        if FAULT.on("figure_stops_at_comma"):
            return int(re.match(r"\$(\d+)", raw).group(1))  # the amount pattern has no thousands separator
        return int(raw[1:].replace(",", ""))
    m = re.match(r"(\d+)", raw)
    return int(m.group(1)) if m else raw


def parse_clause_list(text: str) -> list[dict[str, Any]]:
    FAULT.tick("ClauseListParser")
    body = re.sub(r"^```(?:json)?|```$", "", text.strip(), flags=re.M).strip()
    items = json.loads(body)
    out = []
    for it in items:
        out.append({"clause_id": str(it["section"]), "heading": it["heading"], "text": it["text"],
                    "type": clause_type(it["heading"]), "figure": _figure(str(it["key_figure"]))})
    if FAULT.on("figure_stops_at_comma"):
        cut = [c for c, it in zip(out, items) if str(it["key_figure"]).startswith("$") and "," in str(it["key_figure"])]
        if cut:
            FAULT.fire_tool("ClauseListParser", f'"figure": {cut[0]["figure"]}', kind="parse")
    return out


def build_review_prompt(args: dict[str, Any]) -> str:
    FAULT.tick("build_review_prompt")
    clauses, i, value = args["clauses"], args["index"], args["contract_value"]
    c = clauses[i]
    figure = c["figure"]
    if FAULT.on("prompt_figure_off_by_one") and i > 0 and clause_type(clauses[i - 1]["heading"]) != "governing_law":
        figure = clauses[i - 1]["figure"]  # the template reads the previous row's figure column
        if figure != c["figure"] and not FAULT.fired:
            FAULT.fire_tool("build_review_prompt", f"Key figure (from extraction): {figure}", kind="other")
    return (f"Review clause §{c['clause_id']} — {c['heading']}\n"
            f"Text: {c['text']}\n"
            f"Key figure (from extraction): {figure}\n"
            f"Total contract value: {value}\n"
            "Call exactly one review desk tool for this clause.")


# -- the scripted model --------------------------------------------------------------------------


def policy(body: dict[str, Any]) -> Reply:
    sp = system_prompt(body)
    last = text_of(messages(body)[-1])
    if "extract" in sp.lower():
        rows = []
        for m in re.finditer(r"^§(\d+) ([^.]+)\. (.+)$", last, flags=re.M):
            sec, heading, sentence = m.groups()
            money = re.search(r"\$[\d,]+", sentence)
            days = re.search(r"\((\d+)\) days|net (\d+) days", sentence)
            years = re.search(r"\((\d+)\) years", sentence)
            law = re.search(r"State of ([A-Z][a-z]+(?: [A-Z][a-z]+)?)", sentence)
            if money:
                fig = money.group(0)
            elif days:
                fig = f"{days.group(1) or days.group(2)} days"
            elif years:
                fig = f"{years.group(1)} years"
            else:
                fig = law.group(1) if law else ""
            rows.append({"section": sec, "heading": heading, "text": sentence, "key_figure": fig})
        return Reply(content="```json\n" + json.dumps(rows, indent=1) + "\n```")
    # one review turn
    sec = re.search(r"clause §(\d+) — ([^\n]+)", last)
    clause_id, heading = sec.group(1), sec.group(2)
    fig_raw = re.search(r"Key figure \(from extraction\): (.+)", last).group(1).strip()
    value = float(re.search(r"Total contract value: ([\d.]+)", last).group(1))
    typ = clause_type(heading)
    fig: Any = fig_raw if typ == "governing_law" else float(fig_raw)
    if typ == "liability":
        if FAULT.on("contract_value_dropped_zero"):
            value = value / 10  # "$1,250,000" read as 125,000
            FAULT.fire_llm(json.dumps(value))
        return Reply(tool_calls=[("check_liability_cap", {"clause_id": clause_id, "cap_amount": fig, "contract_value": value})])
    if typ == "termination":
        if FAULT.on("termination_to_payment_desk"):
            FAULT.fire_llm("check_payment_terms")
            return Reply(tool_calls=[("check_payment_terms", {"clause_id": clause_id, "net_days": int(fig)})])
        return Reply(tool_calls=[("check_termination_notice", {"clause_id": clause_id, "notice_days": int(fig)})])
    if typ == "payment":
        return Reply(tool_calls=[("check_payment_terms", {"clause_id": clause_id, "net_days": int(fig)})])
    if typ == "confidentiality":
        return Reply(tool_calls=[("check_confidentiality", {"clause_id": clause_id, "survival_years": int(fig)})])
    return Reply(tool_calls=[("check_governing_law", {"clause_id": clause_id, "state": fig})])


# -- the graph --------------------------------------------------------------------------------------

EXTRACT_SYSTEM = ("You extract clauses from commercial contracts. Return a JSON array; one object per numbered "
                  "section with keys section, heading, text, key_figure (the amount, period or jurisdiction as written).")
REVIEW_SYSTEM = "You are a contracts paralegal. Route each clause to the matching review desk tool with the figure it states."


class ReviewState(TypedDict, total=False):
    contract_id: str
    text: str
    contract_value: int
    raw_extraction: str
    clauses: list[dict[str, Any]]
    cursor: int
    findings: Annotated[list[dict[str, Any]], operator.add]
    filing: dict[str, Any]


def build_graph() -> Any:
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.runnables import RunnableLambda
    from langgraph.graph import END, START, StateGraph

    tools = build_tools()
    by_name = {t.name: t for t in tools["desks"]}
    extractor = chat_model("gpt-4o-mini")
    reviewer = chat_model("gpt-4o-mini").bind_tools(tools["desks"], tool_choice="required")
    parser = RunnableLambda(parse_clause_list, name="ClauseListParser")
    prompt_builder = RunnableLambda(build_review_prompt, name="build_review_prompt")

    def extract(state: ReviewState) -> dict[str, Any]:
        msg = extractor.invoke([SystemMessage(EXTRACT_SYSTEM), HumanMessage(state["text"])])
        return {"raw_extraction": msg.content}

    def parse(state: ReviewState) -> dict[str, Any]:
        return {"clauses": parser.invoke(state["raw_extraction"]), "cursor": 0}

    def review_clause(state: ReviewState) -> dict[str, Any]:
        i = state["cursor"]
        prompt = prompt_builder.invoke({"clauses": state["clauses"], "index": i, "contract_value": state["contract_value"]})
        ai = reviewer.invoke([SystemMessage(REVIEW_SYSTEM), HumanMessage(prompt)])
        call = ai.tool_calls[0]
        result = by_name[call["name"]].invoke({**call, "type": "tool_call"})
        return {"findings": [json.loads(result.content)], "cursor": i + 1}

    def more(state: ReviewState) -> str:
        return "review_clause" if state["cursor"] < len(state["clauses"]) else "file_review"

    def file_review(state: ReviewState) -> dict[str, Any]:
        out = tools["submit"].invoke({"contract_id": state["contract_id"], "findings": state["findings"]})
        return {"filing": json.loads(out)}

    g = StateGraph(ReviewState)
    g.add_node("extract", extract)
    g.add_node("parse", parse)
    g.add_node("review_clause", review_clause)
    g.add_node("file_review", file_review)
    g.add_edge(START, "extract")
    g.add_edge("extract", "parse")
    g.add_conditional_edges("parse", more, ["review_clause", "file_review"])
    g.add_conditional_edges("review_clause", more, ["review_clause", "file_review"])
    g.add_edge("file_review", END)
    return g.compile(name="contract_review")


def execute(inp: dict[str, Any], path: Path, key: str) -> str:
    install(policy)
    c = CONTRACTS[inp["contract_id"]]
    state = {"contract_id": c["id"], "text": c["text"], "contract_value": c["value"], "findings": []}
    return invoke_graph(build_graph(), state, path, run_name="contract_review", key=key)


SPEC = AgentSpec(
    name="contract_review",
    route="langgraph",
    domain="legal contract review",
    summary="StateGraph: extract (LLM) -> ClauseListParser -> loop per clause (build_review_prompt -> LLM -> desk tool) -> submit_review",
    execute=execute,
    passing=[{"contract_id": c} for c in ("MSA-2291", "MSA-3304", "MSA-4410", "MSA-5127", "MSA-6035")],
    cases=[
        Case(
            slug="cap_amount_cut_at_comma",
            input={"contract_id": "MSA-7102"},
            fault="figure_stops_at_comma",
            fault_kind="lossy_parsing",
            description="ClauseListParser reads dollar figures with a pattern that stops at the first thousands separator: "
                        "the $2,000,000 liability cap becomes 2. The prompt, the model's desk call and the liability finding all "
                        "carry 2, and the CLM system refuses the filing against its clause register.",
            failure="submit_review",
            path=["build_review_prompt", "ChatOpenAI", "check_liability_cap", "submit_review"],
        ),
        Case(
            slug="termination_sent_to_payment_desk",
            input={"contract_id": "MSA-7215"},
            fault="termination_to_payment_desk",
            fault_kind="wrong_routing",
            description="For the termination clause (§5) the model routes the review to check_payment_terms instead of "
                        "check_termination_notice; the payment desk happily rates '90' as net days and the filing is "
                        "refused because the clause was signed off by the wrong desk.",
            failure="submit_review",
            path=["check_payment_terms", "submit_review"],
        ),
        Case(
            slug="prompt_carries_previous_figure",
            input={"contract_id": "MSA-7330"},
            fault="prompt_figure_off_by_one",
            fault_kind="context_pollution",
            description="build_review_prompt fills 'Key figure' from the previous clause's row: the confidentiality clause "
                        "(§7, 5 years) is presented with the termination clause's 45; the model passes 45 to the "
                        "confidentiality desk and the filing is refused as a register mismatch.",
            failure="submit_review",
            path=["ChatOpenAI", "check_confidentiality", "submit_review"],
        ),
        Case(
            slug="contract_value_misread",
            input={"contract_id": "MSA-7448"},
            fault="contract_value_dropped_zero",
            fault_kind="wrong_tool_args",
            description="Reviewing the liability clause, the model passes contract_value=260000 for a $2,600,000 contract "
                        "(a dropped zero). The liability desk rates the cap against that value and records it in its finding; "
                        "the CLM system refuses the filing because the cap was benchmarked against the wrong contract value.",
            failure="submit_review",
            path=["check_liability_cap", "submit_review"],
        ),
    ],
)
