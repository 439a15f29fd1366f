"""Silversmith's repairs: repair-ticket desk (sdk route). A planning model call turns the ticket into jobs,
each job runs as a sub-agent (memory read of the piece's history, hallmark lookup, model assessment, a
quoting service retried once when it drops the connection, memory write), then the invoice and a letter;
the final step asserts the invoice against the ticket."""
import json

import trajdebug
from openai import OpenAI

NAME = "silver-repair-desk"
ROUTE = "sdk"
DOMAIN = "silversmith's repairs"
SHAPE = "planner model + parser, per-job sub-agents (memory tools, retrieval, model, retried quote tool), invoice tool, letter model, final-step assertion"
ACTIVE = None

HISTORY = {
    "TP-9": {"last_repair": "2025-11-02", "invoice": "INV-3310"},
    "CB-2": {"last_repair": "2023-04-19", "invoice": "INV-2011"},
}
HALLMARKS = {"TP": "Sheffield 1911", "FK": "London 1898", "CB": "Birmingham 1934", "SP": "Chester 1902", "SV": "Exeter 1870"}
RATES = {"dent": 55.0, "solder": 70.0, "polish": 30.0, "tine": 40.0, "replate": 90.0}
TODAY = "2026-03-02"
CACHED_AT_OPENING = {"TP-9": {"last_repair": "2025-11-02", "invoice": "pending RT-377"}}
FLAKY = {"SP-4"}  # the quoting service drops the first connection for these pieces

INPUTS = [
    {"ticket": "RT-401", "customer": "Mrs Penhale", "items": [["TP-9", "dent"], ["FK-3", "tine"], ["SP-4", "polish"]]},
    {"ticket": "RT-402", "customer": "Dr Okafor", "items": [["CB-2", "solder"], ["SV-1", "replate"], ["FK-7", "tine"], ["SP-4", "polish"], ["TP-5", "dent"]]},
    {"ticket": "RT-403", "customer": "St Anne's vestry", "items": [["CB-8", "solder"], ["CB-9", "solder"], ["SV-6", "polish"], ["SP-4", "polish"]]},
    {"ticket": "RT-404", "customer": "Mr Lusk", "items": [["TP-9", "polish"], ["SP-2", "dent"]]},
    {"ticket": "RT-405", "customer": "Hale & Sons", "items": [["FK-1", "tine"], ["FK-2", "tine"], ["FK-3", "tine"], ["SV-4", "replate"], ["TP-6", "dent"], ["SP-4", "polish"]]},
]


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    head, body = prompt.split("\n", 1)
    data = json.loads(body)
    if head.startswith("Plan the jobs"):
        jobs = [{"piece": p, "work": w} for p, w in data["items"]]
        if ACTIVE == "plan_error" and data["ticket"] == "RT-402":
            jobs = [j for j in jobs if j["piece"] != "SV-1"]
        return json.dumps({"jobs": jobs})
    if head.startswith("Assess"):
        hours = {"dent": 1.5, "solder": 2.0, "polish": 0.5, "tine": 1.0, "replate": 3.0}[data["work"]]
        return json.dumps({"piece": data["piece"], "hours": hours, "silver_g": 2.0 if data["work"] in ("solder", "tine") else 0.0})
    if head.startswith("Write"):
        return f"Dear {data['customer']}, your repairs ({len(data['lines'])} pieces) come to {data['total']:.2f}."
    return "?"


def run_one(server, inp, path):
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    memory = {k: dict(v) for k, v in HISTORY.items()}
    calls = {"quote": 0}

    def chat(messages):
        return client.chat.completions.create(model=server.model, messages=messages).choices[0].message.content

    @trajdebug.step(kind="input")
    def take_ticket(ticket: dict) -> dict:
        return ticket

    @trajdebug.step(kind="llm")
    def plan_repairs(messages: list) -> str:
        return chat(messages)

    @trajdebug.step(kind="parse")
    def read_plan(text: str) -> list:
        return json.loads(text)["jobs"]

    @trajdebug.step(kind="tool")
    def memory_read(key: str) -> dict:
        if ACTIVE == "stale_data" and key in CACHED_AT_OPENING:
            return dict(CACHED_AT_OPENING[key])
        return dict(memory.get(key, {}))

    @trajdebug.step(kind="tool")
    def memory_write(key: str, record: dict) -> str:
        if ACTIVE == "bad_memory_write" and key == "FK-1":
            key = "FK-2"
        memory[key] = dict(record)
        return key

    @trajdebug.step(kind="retrieval")
    def hallmark_lookup(piece: str) -> dict:
        return {"piece": piece, "hallmark": HALLMARKS[piece[:2]]}

    @trajdebug.step(kind="llm")
    def assess(messages: list) -> str:
        return chat(messages)

    @trajdebug.step(kind="tool")
    def quote_service(piece: str, work: str, hours: float, warranty: bool, attempt: int) -> dict:
        calls["quote"] += 1
        if piece in FLAKY and attempt == 1:
            raise ConnectionError("quote service closed the connection")
        try:
            if ACTIVE == "swallowed_error" and work == "replate":
                raise LookupError(f"no replating rate for {piece[:2]} pieces this quarter")
            charge = 0.0 if warranty else round(RATES[work] * hours, 2)
        except LookupError:
            charge = 0.0
        return {"piece": piece, "work": work, "charge": charge, "warranty": warranty}

    def months_since(date):
        y, m = int(date[:4]), int(date[5:7])
        return (2026 - y) * 12 + (3 - m)

    @trajdebug.step(kind="agent")
    def repair_job(job: dict, ticket: dict) -> dict:
        piece = job["piece"]
        if ACTIVE == "subagent_wrong_entity" and piece == "CB-9":
            piece = "CB-8"
        history = memory_read(piece)
        mark = hallmark_lookup(piece)
        a = json.loads(assess([{"role": "user", "content": "Assess the repair.\n" + json.dumps(
            {"piece": piece, "work": job["work"], "hallmark": mark["hallmark"]})}]))
        warranty = bool(history) and months_since(history["last_repair"]) <= 12
        for attempt in (1, 2):
            try:
                q = quote_service(piece, job["work"], a["hours"], warranty, attempt)
                break
            except ConnectionError:
                continue
        memory_write(piece, {"last_repair": TODAY, "invoice": "pending " + ticket["ticket"]})
        return dict(q, hours=a["hours"], earlier_invoice=history.get("invoice"))

    @trajdebug.step(kind="tool")
    def draw_invoice(ticket: dict, lines: list) -> dict:
        return {"ticket": ticket["ticket"], "lines": lines, "total": round(sum(x["charge"] for x in lines), 2)}

    @trajdebug.step(kind="llm")
    def customer_letter(messages: list) -> str:
        return chat(messages)

    @trajdebug.step(kind="output")
    def send_invoice(ticket: dict, invoice: dict, letter: str) -> dict:
        asked = sorted(p for p, _ in ticket["items"])
        billed = sorted(x["piece"] for x in invoice["lines"])
        assert billed == asked, f"invoice {invoice['ticket']} bills {billed}, ticket lists {asked}"
        for x in invoice["lines"]:
            if x["warranty"]:
                assert str(x["earlier_invoice"]).startswith("INV-"), f"{x['piece']} billed under warranty with no earlier invoice ({x['earlier_invoice']})"
            else:
                assert x["charge"] > 0, f"{x['piece']} {x['work']} billed at {x['charge']:.2f} outside warranty"
        return {"sent": invoice["ticket"], "total": invoice["total"]}

    with trajdebug.run(NAME, task=f"repair ticket {inp['ticket']}", path=path):
        ticket = take_ticket(inp)
        plan = plan_repairs([{"role": "system", "content": "You are the repair desk planner."},
                             {"role": "user", "content": "Plan the jobs for this ticket.\n" + json.dumps(ticket)}])
        jobs = read_plan(plan)
        lines = []
        for job in jobs:
            lines.append(repair_job(job, ticket))
        invoice = draw_invoice(ticket, lines)
        letter = customer_letter([{"role": "user", "content": "Write the customer letter.\n" + json.dumps(
            {"customer": ticket["customer"], "lines": invoice["lines"], "total": invoice["total"]})}])
        send_invoice(ticket, invoice, letter)


def _c(n, kind, inp, root, occ, rkind, failure, desc):
    return {"id": f"zzzq-silver-{n}", "kind": kind, "switch": kind, "input": inp,
            "root": {"name": root, "occurrence": occ, "kind": rkind}, "failure": failure, "description": desc}


CASES = [
    _c(1, "plan_error", 1, "plan_repairs", 1, "llm", "send_invoice",
       "The planning model leaves the SV-1 replating out of the job list."),
    _c(2, "bad_memory_write", 4, "memory_write", 1, "tool", "send_invoice",
       "The history written for fork FK-1 is saved under FK-2, so FK-2 looks freshly repaired and goes under warranty."),
    _c(3, "subagent_wrong_entity", 2, "repair_job", 2, "agent", "send_invoice",
       "The repair sub-agent for candlestick CB-9 works on CB-8 instead."),
    _c(4, "swallowed_error", 1, "quote_service", 2, "tool", "send_invoice",
       "The quoting service hides a missing replating rate and quotes the replating at zero."),
    _c(5, "stale_data", 0, "memory_read", 1, "tool", "send_invoice",
       "The memory read for teapot TP-9 answers a cached row from before its last repair was invoiced."),
]
