"""Herbarium specimen loans (OpenAI Agents SDK route, Responses API).

The loans-desk agent reads a loan request, checks the borrowing institution, looks up each specimen in the
register, stores the loan terms in the desk's memory, gets a shipping quote that reads those terms, consults a
permits-officer sub-agent (an agent used as a tool, with a CITES lookup tool) and submits the loan to the validator tool.
"""
import json

from agents import Agent, ModelSettings, function_tool

import kit
from oa_common import responses_brain, run_agent

NAME = "herbarium-loans"
ROUTE = "openai_agents"
DOMAIN = "herbarium specimen loans"
SHAPE = "agent loop: request tool, institution tool, specimen lookup per item, permits memory write, shipping tool (reads memory), permits sub-agent (CITES tool), validator tool"
EXT = "jsonl"

REGISTER = {
    "E00412": {"taxon": "Nepenthes rajah", "fragile": True, "value_eur": 1800,
               "condition": "pressed 1921, brittle leaves; surface shipping only"},
    "E00421": {"taxon": "Drosera regia", "fragile": False, "value_eur": 400,
               "condition": "pressed 1987, good"},
    "E01130": {"taxon": "Paphiopedilum rothschildianum", "fragile": True, "value_eur": 2500,
               "condition": "pressed 1902, flower detached in capsule; surface shipping only"},
    "E02215": {"taxon": "Quercus robur", "fragile": False, "value_eur": 150, "condition": "pressed 1974, good"},
    "E02251": {"taxon": "Quercus petraea", "fragile": False, "value_eur": 150, "condition": "pressed 1976, good"},
    "E03307": {"taxon": "Sarracenia purpurea", "fragile": False, "value_eur": 300, "condition": "pressed 1990, good"},
    "E04418": {"taxon": "Aloe polyphylla", "fragile": True, "value_eur": 900,
               "condition": "pressed 1958, cracked mount; surface shipping only"},
    "E05520": {"taxon": "Nepenthes ampullaria", "fragile": False, "value_eur": 350, "condition": "pressed 1995, good"},
}
CITES = {"Nepenthes rajah": "I", "Paphiopedilum rothschildianum": "I", "Aloe polyphylla": "II",
         "Nepenthes": "II", "Paphiopedilum": "II", "Aloe": "II"}
INSTITUTIONS = {"Leiden NB": {"city": "Leiden", "registered": True},
                "Kew K": {"city": "Richmond", "registered": True},
                "Geneva G": {"city": "Geneva", "registered": True},
                "Missouri MO": {"city": "St. Louis", "registered": True}}
REQUESTS = {
    "LN-901": {"institution": "Leiden NB", "specimens": ["E00412", "E02215", "E03307", "E05520"]},
    "LN-902": {"institution": "Kew K", "specimens": ["E01130", "E00421", "E02251", "E03307"]},
    "LN-903": {"institution": "Geneva G", "specimens": ["E04418", "E02215", "E05520", "E00412"]},
    "LN-904": {"institution": "Missouri MO", "specimens": ["E02251", "E03307", "E00421", "E01130"]},
    "LN-905": {"institution": "Leiden NB", "specimens": ["E05520", "E04418", "E02251", "E00421"]},
    "LN-906": {"institution": "Kew K", "specimens": ["E03307", "E00412", "E04418", "E02215"]},
}
INPUTS = {k: k for k in REQUESTS}
MEMORY = {}

CASES = [
    dict(id="zzx-herb-01", input="LN-901", kind="wrong_retrieval", root=("lookup_specimen", 1),
         failure=("validate_loan", 1),
         line="the register lookup matches E00412 to the near accession E00421, another specimen"),
    dict(id="zzx-herb-02", input="LN-904", kind="hallucinated_value", root=("response", 8),
         failure=("validate_loan", 1), line="the model states an insured value for the shipping quote that no tool gave"),
    dict(id="zzx-herb-03", input="LN-903", kind="wrong_tool_args", root=("response", 9),
         failure=("validate_loan", 1),
         line="the model asks the permits officer about genera only, not the full taxa"),
    dict(id="zzx-herb-04", input="LN-903", kind="truncated_result", root=("cites_lookup", 1),
         failure=("validate_loan", 1),
         line="the CITES lookup answers only the first page of three taxa and the officer reads the fourth as unlisted"),
    dict(id="zzx-herb-05", input="LN-905", kind="bad_memory_write", root=("save_loan_terms", 1),
         failure=("validate_loan", 1),
         line="the terms are saved under the institution instead of the loan, so the shipping quote reads default terms"),
]


@function_tool
def get_loan_request(request_id: str) -> dict:
    """The loan request as filed by the borrowing institution."""
    return {"request": request_id, **REQUESTS[request_id]}


@function_tool
def check_institution(institution: str) -> dict:
    """Registration of a borrowing institution."""
    return {"institution": institution, **INSTITUTIONS[institution]}


@function_tool
def lookup_specimen(accession: str) -> dict:
    """A specimen's register entry."""
    key = accession
    if kit.on("zzx-herb-01") and accession == "E00412":
        key = "E00421"
    rec = dict(REGISTER[key])
    return {"accession": key, **rec}


@function_tool
def cites_lookup(taxa: list[str]) -> list:
    """CITES appendix of each taxon (or genus)."""
    page = taxa[:3] if kit.on("zzx-herb-04") else taxa
    return [{"taxon": t, "appendix": CITES.get(t, "none")} for t in page]


@function_tool
def save_loan_terms(request_id: str, institution: str, months: int) -> str:
    """Keep the loan terms in the desk's memory."""
    key = institution if kit.on("zzx-herb-05") else request_id
    MEMORY[key] = {"months": months}
    return f"saved terms for {request_id}"


@function_tool
def shipping_quote(request_id: str, city: str, mode: str, insured_eur: int) -> dict:
    """Courier quote; reads the loan's terms from memory for the return leg."""
    months = MEMORY.get(request_id, {"months": 12})["months"]
    return {"request": request_id, "city": city, "mode": mode, "insured_eur": insured_eur, "months": months,
            "eur": 95 + (40 if mode == "air" else 0) + insured_eur // 500 * 5}


def _validate(loan: str) -> str:
    """Check the loan against the herbarium's loan policy before it is sent."""
    d = json.loads(loan)
    req = REQUESTS[d["request"]]
    if sorted(s["accession"] for s in d["specimens"]) != sorted(req["specimens"]):
        raise ValueError(f"loan {d['request']} lists {[s['accession'] for s in d['specimens']]}; "
                         f"the request is for {req['specimens']}")
    fragile = [s["accession"] for s in d["specimens"] if REGISTER[s["accession"]]["fragile"]]
    if fragile and d["shipping"]["mode"] != "surface":
        raise ValueError(f"{fragile} must travel by surface, the loan ships by {d['shipping']['mode']}")
    if fragile and d["shipping"]["months"] > 6:
        raise ValueError(f"loan of fragile {fragile} runs {d['shipping']['months']} months; at most 6")
    total = sum(REGISTER[a]["value_eur"] for a in req["specimens"])
    if d["shipping"]["insured_eur"] != total:
        raise ValueError(f"shipment insured for {d['shipping']['insured_eur']} EUR; the specimens are valued at "
                         f"{total} EUR")
    need = [s["accession"] for s in d["specimens"] if CITES.get(REGISTER[s["accession"]]["taxon"]) == "I"]
    if need and not d["permits"].get("export_permit"):
        raise ValueError(f"{need} are CITES Appendix I; the loan has no export permit")
    return "loan approved"


validate_loan = function_tool(_validate, name_override="validate_loan", failure_error_function=None)


def _officer(user, history):
    taxa = json.loads(user)["taxa"]
    if not history:
        return ("call", "cites_lookup", {"taxa": taxa})
    apps = {h["taxon"]: h["appendix"] for h in history[0][2]}
    return json.dumps({"appendices": apps, "export_permit": any(a == "I" for a in apps.values())})


def _desk(user, history):
    rid = user.split()[-1]
    n = len(history)
    if n == 0:
        return ("call", "get_loan_request", {"request_id": rid})
    req = history[0][2]
    if n == 1:
        return ("call", "check_institution", {"institution": req["institution"]})
    specs = req["specimens"]
    if n < 2 + len(specs):
        return ("call", "lookup_specimen", {"accession": specs[n - 2]})
    recs = [h[2] for h in history[2:2 + len(specs)]]
    inst = history[1][2]
    fragile = any(r["fragile"] for r in recs)
    k = 2 + len(specs)
    if n == k:
        return ("call", "save_loan_terms", {"request_id": rid, "institution": req["institution"],
                                            "months": 6 if fragile else 12})
    if n == k + 1:
        surface = any("surface" in r["condition"] for r in recs)
        insured = sum(r["value_eur"] for r in recs)
        if kit.on("zzx-herb-02"):
            insured = 5000
        return ("call", "shipping_quote", {"request_id": rid, "city": inst["city"],
                                           "mode": "surface" if surface else "air", "insured_eur": insured})
    ship = history[k + 1][2]
    if n == k + 2:
        taxa = [r["taxon"] for r in recs]
        if kit.on("zzx-herb-03"):
            taxa = [t.split()[0] for t in taxa]
        return ("call", "permits_officer", {"input": json.dumps({"taxa": taxa})})
    permits = history[k + 2][2]
    permits = json.loads(permits) if isinstance(permits, str) else permits
    if n == k + 3:
        loan = {"request": rid, "specimens": [{"accession": r["accession"], "taxon": r["taxon"]} for r in recs],
                "permits": permits, "shipping": ship}
        return ("call", "validate_loan", {"loan": json.dumps(loan)})
    return f"Loan {rid} approved and booked."


def brain():
    return responses_brain({"Loans": _desk, "Permits": _officer})


def build(server):
    officer = Agent(name="permits_officer", instructions="Permits officer: check CITES for each taxon; answer JSON.",
                    model=server.model, tools=[cites_lookup], model_settings=ModelSettings(parallel_tool_calls=False))
    return Agent(name="loans_desk", model=server.model,
                 instructions="Loans desk of a herbarium: prepare the loan with the tools, then validate it.",
                 tools=[get_loan_request, check_institution, lookup_specimen,
                        officer.as_tool("permits_officer", "Ask the permits officer about CITES for taxa."),
                        save_loan_terms, shipping_quote, validate_loan],
                 model_settings=ModelSettings(parallel_tool_calls=False))


def record(rid, path, server):
    MEMORY.clear()
    MEMORY["Leiden NB"] = {"months": 12}
    MEMORY["Kew K"] = {"months": 12}
    run_agent(server, build(server), f"Prepare loan {rid}", NAME, path, f"prepare herbarium loan {rid}")
