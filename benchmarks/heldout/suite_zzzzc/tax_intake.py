"""tax-intake: an accounting office's individual tax-return intake (openai_agents route).

OpenAI Agents SDK, one preparer agent: client profile and document list in parallel, every
document read in parallel, last year's return, an estimate tool, and the hand-over to the
reviewing preparer (which validates the file against the engagement checklist).
"""
from __future__ import annotations

import asyncio
import re

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from common import Reply, responses_results, responses_user, tool_call
from trajdebug.integrations.openai_agents import TrajdebugProcessor

NAME = "tax-intake"
ROUTE = "openai_agents"
DOMAIN = "accounting office: individual tax-return intake"
SHAPE = "one agent: parallel profile/document-list tools -> parallel document reads -> prior-return tool -> estimate tool -> review hand-over tool"
SWITCH = None

CLIENTS = {
    "C-1187": {"name": "Ruth Abara", "status": "single", "dependents": ["Jonah Abara"],
               "docs": [("W2", "Northwind Logistics", 48210.55, 0.0), ("1099-INT", "Harbor Credit Union", 0.0, 312.40),
                        ("1099-DIV", "Vanguard", 0.0, 1208.00), ("1098", "Lakeside Mortgage", 0.0, 0.0),
                        ("1098-T", "State University", 0.0, 0.0), ("1099-INT", "City Savings", 0.0, 48.10)]},
    "C-2240": {"name": "Peter and Lisa Naylor", "status": "married_joint", "dependents": ["Ava Naylor", "Ben Naylor"],
               "docs": [("W2", "Civic Hospital", 88400.00, 0.0), ("W2", "Pine School District", 51250.00, 0.0),
                        ("1099-INT", "Harbor Credit Union", 0.0, 95.20), ("1098", "First Home Bank", 0.0, 0.0)]},
    "C-3318": {"name": "Dmitri Volkov", "status": "single", "dependents": [],
               "docs": [("W2", "Fenwick Software", 132900.00, 0.0), ("1099-B", "Brokerage One", 0.0, 0.0),
                        ("1099-DIV", "Brokerage One", 0.0, 2310.75)]},
    "C-4402": {"name": "Carmen Ruiz", "status": "head_of_household", "dependents": ["Lucia Ruiz"],
               "docs": [("W2", "Metro Transit", 57320.10, 0.0), ("1099-G", "State Tax Dept", 0.0, 0.0),
                        ("1099-INT", "City Savings", 0.0, 22.35)]},
    "C-5090": {"name": "Hana Kim", "status": "single", "dependents": [],
               "docs": [("W2", "Bright Dental", 61480.00, 0.0), ("W2", "Weekend Cafe", 8120.50, 0.0),
                        ("1099-NEC", "Freelance Client LLC", 0.0, 0.0), ("1099-INT", "Online Bank", 0.0, 140.05),
                        ("1098-E", "Loan Servicer", 0.0, 0.0)]},
}
PROFILE_CACHE = {"C-2240": {"status": "married_joint", "updated": "2024-04-02"},
                 "C-4402": {"status": "married_joint", "updated": "2024-03-18"}}
NOTES = {cid: f"2024 return filed {c['status']}; dependents: {', '.join(c['dependents']) or 'none'}." for cid, c in CLIENTS.items()}
OTHER_HOUSEHOLD = "Alvarez household, 2024: dependents: Mira Alvarez, Teo Alvarez; moved to Ohio."

INPUTS = [
    {"task": "2025 return intake for C-1187", "text": "Start the 2025 return intake for client C-1187."},
    {"task": "2025 return intake for C-2240", "text": "Start the 2025 return intake for client C-2240."},
    {"task": "2025 return intake for C-3318", "text": "Start the 2025 return intake for client C-3318."},
    {"task": "2025 return intake for C-4402", "text": "Start the 2025 return intake for client C-4402."},
    {"task": "2025 return intake for C-5090", "text": "Start the 2025 return intake for client C-5090."},
]


def _doc_id(cid, i, year):
    return f"{CLIENTS[cid]['docs'][i][0]}-{year}-{cid[2:]}-{i + 1}"


def _money(text):
    return float(str(text).replace(",", ""))


# ------------------------------------------------------------------ the model's side
def brain(request):
    cid = re.search(r"C-\d{4}", responses_user(request)).group(0)
    r = responses_results(request)
    if "client_profile" not in r:
        year = 2024 if SWITCH == "F5" else 2025
        return Reply(tool_calls=(tool_call("client_profile", {"client_id": cid}),
                                 tool_call("list_documents", {"client_id": cid, "tax_year": year})))
    if "read_document" not in r:
        return Reply(tool_calls=tuple(tool_call("read_document", {"doc_id": d["doc_id"]}) for d in r["list_documents"][0]))
    if "prior_return" not in r:
        return Reply(tool_calls=(tool_call("prior_return", {"client_id": cid}),))
    profile, docs = r["client_profile"][0], r["read_document"]
    wages = round(sum(_money(d["box1_wages"]) for d in docs if d["form"] == "W2"), 2)
    income = round(sum(_money(d["amount"]) for d in docs if d["form"] != "W2"), 2)
    dependents = list(profile["dependents"])
    for line in re.findall(r"dependents: ([^.;]+)", r["prior_return"][0]["notes"]):
        for name in line.split(", "):
            if name != "none" and name not in dependents:
                dependents.append(name)
    if "compute_estimate" not in r:
        return Reply(tool_calls=(tool_call("compute_estimate", {"wages": wages, "other_income": income,
                                                                "filing_status": profile["filing_status"],
                                                                "dependents": len(dependents)}),))
    if "submit_for_review" not in r:
        return Reply(tool_calls=(tool_call("submit_for_review", {
            "client_id": cid, "doc_ids": [d["doc_id"] for d in docs], "wages": wages,
            "filing_status": profile["filing_status"], "dependents": dependents,
            "estimate": r["compute_estimate"][0]["balance"]}),))
    return f"Intake for {cid} is with the reviewer: {r['submit_for_review'][0]['review_id']}."


# ------------------------------------------------------------------ tools
@function_tool
def client_profile(client_id: str) -> dict:
    """Client profile: filing status and dependents."""
    c = CLIENTS[client_id]
    if SWITCH == "F4":
        cached = PROFILE_CACHE[client_id]
        return {"client_id": client_id, "filing_status": cached["status"], "dependents": c["dependents"],
                "updated": cached["updated"]}
    return {"client_id": client_id, "filing_status": c["status"], "dependents": c["dependents"], "updated": "2026-01-20"}


@function_tool
def list_documents(client_id: str, tax_year: int) -> list:
    """Tax documents uploaded by a client for a tax year."""
    rows = [{"doc_id": _doc_id(client_id, i, tax_year), "form": f, "payer": p}
            for i, (f, p, _, _) in enumerate(CLIENTS[client_id]["docs"])]
    return rows[:4] if SWITCH == "F1" else rows


@function_tool
def read_document(doc_id: str) -> dict:
    """Fields of one uploaded tax document."""
    form, year, num, idx = doc_id.rsplit("-", 3)[0], doc_id.split("-")[-3], doc_id.split("-")[-2], int(doc_id.split("-")[-1])
    cid = f"C-{num}"
    f, payer, wages, amount = CLIENTS[cid]["docs"][idx - 1]
    if f == "W2":
        box1 = f"{wages:,.2f}"
        if SWITCH == "F2" and payer == "Bright Dental":  # the employer's new payroll provider
            box1 = f"{wages:,.2f}".replace(",", " ").replace(".", ",").replace(" ", ".")
        return {"doc_id": doc_id, "form": f, "payer": payer, "tax_year": int(year), "box1_wages": box1}
    return {"doc_id": doc_id, "form": f, "payer": payer, "tax_year": int(year), "amount": f"{amount:,.2f}"}


@function_tool
def prior_return(client_id: str) -> dict:
    """Last year's return summary and the preparer's notes."""
    notes = NOTES[client_id]
    if SWITCH == "F3":
        notes = notes + " " + OTHER_HOUSEHOLD
    return {"client_id": client_id, "tax_year": 2024, "notes": notes}


@function_tool
def compute_estimate(wages: float, other_income: float, filing_status: str, dependents: int) -> dict:
    """Rough federal balance for the return."""
    std = {"single": 15000, "married_joint": 30000, "head_of_household": 22500}[filing_status]
    taxable = max(0.0, wages + other_income - std)
    tax = round(taxable * 0.16 - 2000 * dependents, 2)
    return {"taxable": round(taxable, 2), "tax": max(tax, 0.0), "balance": round(max(tax, 0.0) - wages * 0.14, 2)}


@function_tool(failure_error_function=None)
def submit_for_review(client_id: str, doc_ids: list[str], wages: float, filing_status: str, dependents: list[str],
                      estimate: float) -> dict:
    """Hand the intake to the reviewing preparer (checked against the engagement checklist)."""
    c = CLIENTS[client_id]
    for d in doc_ids:
        if f"-2025-" not in d:
            raise ValueError(f"review refused: document {d} is not for tax year 2025")
    expected = {_doc_id(client_id, i, 2025): f"{f} from {p}" for i, (f, p, _, _) in enumerate(c["docs"])}
    missing = [v for k, v in expected.items() if k not in doc_ids]
    if missing:
        raise ValueError(f"review refused: the engagement checklist lists {', '.join(missing)}, not in the intake")
    w2 = round(sum(w for f, _, w, _ in c["docs"] if f == "W2"), 2)
    if abs(wages - w2) > 0.01:
        raise ValueError(f"review refused: wages {wages:,.2f} differ from the W-2 total {w2:,.2f} on the IRS transcript")
    if filing_status != c["status"]:
        raise ValueError(f"review refused: filing status {filing_status} conflicts with the 2025 organizer ({c['status']})")
    extra = [d for d in dependents if d not in c["dependents"]]
    if extra:
        raise ValueError(f"review refused: dependent {extra[0]} is not on the client's 2025 organizer")
    return {"review_id": f"RV-{client_id}-2025", "status": "queued"}


def execute(inp, server, path):
    async def main():
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(client)
        try:
            agent = Agent(name="intake_preparer", instructions="Prepare the return intake. Use the tools.",
                          model=server.model, tools=[client_profile, list_documents, read_document, prior_return,
                                                     compute_estimate, submit_for_review])
            await Runner.run(agent, inp["text"], run_config=RunConfig(workflow_name=NAME), max_turns=12)
        finally:
            await client.close()

    set_default_openai_api("responses")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=inp["task"])])
    try:
        asyncio.run(main())
    except Exception as exc:
        if "refused" not in str(exc) and "refused" not in str(getattr(exc, "__cause__", "")):
            raise
    finally:
        set_trace_processors([])


CASES = [
    {"id": "zc61-tax-1", "input": 0, "switch": "F1", "fault_kind": "truncated_result",
     "root": {"name": "list_documents", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "submit_for_review", "occurrence": 1},
     "description": "The document list answers only its first page of four documents, so the 1098-T and the second 1099-INT of C-1187 are never read."},
    {"id": "zc61-tax-2", "input": 4, "switch": "F2", "fault_kind": "format_drift",
     "root": {"name": "read_document", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "submit_for_review", "occurrence": 1},
     "description": "The document reader answers the first W-2's box 1 as 61.480,00 (European separators) instead of 61,480.00, which the model reads as 61.48."},
    {"id": "zc61-tax-3", "input": 0, "switch": "F3", "fault_kind": "context_pollution",
     "root": {"name": "prior_return", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "submit_for_review", "occurrence": 1},
     "description": "The prior-return notes come back merged with another household's note, and the model adds Mira and Teo Alvarez to the client's dependents."},
    {"id": "zc61-tax-4", "input": 3, "switch": "F4", "fault_kind": "stale_data",
     "root": {"name": "client_profile", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "submit_for_review", "occurrence": 1},
     "description": "The client profile answers a copy last updated 2024-03-18 with filing status married_joint, while the client now files as head of household."},
    {"id": "zc61-tax-5", "input": 2, "switch": "F5", "fault_kind": "wrong_tool_args",
     "root": {"name": "response", "occurrence": 1, "kind": "llm"},
     "failure": {"name": "submit_for_review", "occurrence": 1},
     "description": "The model asks list_documents for tax year 2024 instead of 2025, so every document read and handed over is from the prior year."},
]
