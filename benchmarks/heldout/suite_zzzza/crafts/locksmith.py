"""A locksmith's dispatch desk (OpenTelemetry SDK spans with OpenInference attributes, the openai client
instrumented by openinference, exported as OTLP JSON): a phoned-in job to a classification, a queue, the
lock's manual, van stock, the roster, an ETA, the model's dispatch choice (a tool call), the quote."""

from __future__ import annotations

import json
import re

from trajdebug.testing import Reply, tool_call

from . import common
from .common import Span

NAME = "keystone-locksmith-dispatch"
ROUTE = "otlp"
DOMAIN = "locksmith: phoned-in job to queue, lock manual, van parts, roster, ETA, dispatch, quote"
SHAPE = "OTLP: agent span -> read call -> llm classify -> parse -> route queue -> manual retriever -> loop(van stock tool) -> roster tool -> eta tool -> llm dispatch with tool call -> assign tool -> quote tool -> final check"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


INPUTS = {
    "flat9": {"at": "2025-05-20 18:20", "text": "Locked out of flat 9, 14 Quay St, keys inside and the oven is on. Lock is a Yale Superior night latch."},
    "office": {"at": "2025-05-20 10:05", "text": "Office at 3 Mill Lane wants the back door euro cylinder replaced, ABUS E60, this week."},
    "garage": {"at": "2025-05-20 14:40", "text": "Garage door at 77 Fenn Rd won't lock, Union 3G114 mortice lock, please come today."},
    "shop": {"at": "2025-05-20 09:15", "text": "Shop at 5 Bell Yard: key snapped in the Era Fortress cylinder, we can't open up, urgent."},
    "house": {"at": "2025-05-20 16:50", "text": "New tenants at 21 Ash Grove want all locks changed, front door Yale Superior night latch, this week."},
}

CASES = [
    {"id": "lock_queue_router", "input": "flat9", "switch": "queue_keyword", "fault_kind": "wrong_routing",
     "root": ("route_queue", 1), "failure": ("assign_technician", 1),
     "description": "The queue router looked only for the word 'urgent', sent a lockout with the oven on to the scheduled queue, and assigning from that queue could not meet the 60-minute lockout response."},
    {"id": "lock_van_stock", "input": "office", "switch": "stock_timeout", "fault_kind": "swallowed_error",
     "root": ("van_stock", 1), "failure": ("final_check", 1),
     "description": "The van stock lookup timed out and answered a default of one ABUS E60 cylinder on van V1, so the job went to a van that carries none."},
    {"id": "lock_shift_end", "input": "garage", "switch": "shift_end_hour", "fault_kind": "off_by_one",
     "root": ("roster", 1), "failure": ("assign_technician", 1),
     "description": "The roster's on-shift filter counted the shift's end hour as worked, listed Rui whose shift ended at 14:00, and the assignment refused a technician off shift at 14:40."},
    {"id": "lock_eta_text", "input": "shop", "switch": "eta_iso", "fault_kind": "format_drift",
     "root": ("eta_service", 1), "failure": ("send_quote", 1),
     "description": "The ETA service started answering ISO durations ('PT35M') instead of minutes, the dispatcher passed the text on, and the quote service rejected a non-numeric ETA."},
    {"id": "lock_manual_model", "input": "house", "switch": "manual_neighbour", "fault_kind": "wrong_retrieval",
     "root": ("lock_manual", 1), "failure": ("van_stock", 1),
     "description": "The manual search for the Yale Superior night latch returned the Yale Conexis L1 smart-lock manual, whose parts list asks for a smart module no van carries."},
]

MANUALS = [
    {"model": "Yale Superior night latch", "parts": ["YALE-NL-CYL"], "minutes": 30},
    {"model": "Yale Conexis L1", "parts": ["CONEXIS-MOD", "YALE-NL-CYL"], "minutes": 75},
    {"model": "ABUS E60", "parts": ["ABUS-E60"], "minutes": 40},
    {"model": "Union 3G114", "parts": ["UNION-3G114"], "minutes": 60},
    {"model": "Era Fortress", "parts": ["ERA-FORT-CYL"], "minutes": 35},
]
VANS = {"V1": {"YALE-NL-CYL": 3, "UNION-3G114": 1, "ERA-FORT-CYL": 2}, "V2": {"ABUS-E60": 2, "YALE-NL-CYL": 1, "ERA-FORT-CYL": 1}}
TECHS = [
    {"tech": "Rui", "van": "V1", "shift": [6, 14], "queues": ["on-call", "scheduled"]},
    {"tech": "Sam", "van": "V2", "shift": [8, 17], "queues": ["scheduled"]},
    {"tech": "Tess", "van": "V1", "shift": [14, 23], "queues": ["on-call", "scheduled"]},
]
CLASSIFY_SYS = "You classify locksmith calls. Answer JSON: {\"job\", \"lock\", \"address\", \"lockout\": bool, \"urgent\": bool}."
DISPATCH_SYS = "You dispatch locksmiths. Pick a listed technician whose van carries the parts and call assign_technician."


def brain(request):
    system = common.system_of(request)
    user = common.last_user(request)
    if system.startswith("You classify"):
        lock = next(m["model"] for m in MANUALS if m["model"] in user)
        address = re.search(r"\d+ [A-Z]\w+ (?:St|Lane|Rd|Yard|Grove)", user).group(0)
        lockout = "locked out" in user.lower() or "can't open" in user.lower()
        job = "lockout" if lockout else ("lock change" if "changed" in user or "replaced" in user else "repair")
        return json.dumps({"job": job, "lock": lock, "address": address, "lockout": lockout,
                           "urgent": lockout or "urgent" in user.lower() or "today" in user.lower()})
    if system.startswith("You dispatch"):
        if common.tool_results(request):
            return "Dispatched."
        data = json.loads(user)
        pick = next(t for t in data["technicians"] if t["van"] in data["vans_with_parts"])
        return Reply(tool_calls=(tool_call("assign_technician", {"tech": pick["tech"], "queue": data["queue"], "eta_min": data["eta"]}),))
    return "?"


def _hour(at: str) -> float:
    h, m = at[11:].split(":")
    return int(h) + int(m) / 60


def record(key: str, path: str) -> None:
    provider, _ = common.otel()
    tracer = provider.get_tracer("keystone.dispatch")
    call = INPUTS[key]
    try:
        with Span(tracer, NAME, "AGENT", call, **{"metadata": json.dumps({"task": call["text"]})}) as top:
            with Span(tracer, "read_call", "CHAIN", call) as s:
                got = s.set({"text": call["text"], "at": call["at"]})
            answer = common.chat([{"role": "system", "content": CLASSIFY_SYS}, {"role": "user", "content": got["text"]}])
            with Span(tracer, "parse_classification", "CHAIN", {"content": answer["content"]}) as s:
                job = s.set(json.loads(answer["content"]))
            with Span(tracer, "route_queue", "CHAIN", job) as s:
                urgent = ("urgent" in got["text"].lower()) if _on("queue_keyword") else job["urgent"]
                queue = s.set({"queue": "on-call" if urgent else "scheduled", "respond_within_min": 60 if job["lockout"] else None})
            with Span(tracer, "lock_manual", "RETRIEVER", {"query": job["lock"]}) as s:
                ranked = sorted(MANUALS, key=lambda m: (m["model"] != job["lock"], m["model"]))
                if _on("manual_neighbour") and job["lock"].startswith("Yale"):
                    ranked = sorted(MANUALS, key=lambda m: (not m["model"].startswith("Yale"), m["model"]))
                manual = s.set(ranked[0])
            carrying = set(VANS)
            for part in manual["parts"]:
                with Span(tracer, "van_stock", "TOOL", {"part": part}, **{"tool.name": "van_stock"}) as s:
                    try:
                        if _on("stock_timeout"):
                            raise TimeoutError("van stock service timed out")
                        vans = {v: stock[part] for v, stock in VANS.items() if stock.get(part)}
                    except TimeoutError:
                        vans = {"V1": 1}
                    if not vans:
                        raise LookupError(f"no van carries part {part}")
                    s.set({"part": part, "vans": vans})
                carrying &= set(vans)
            with Span(tracer, "roster", "TOOL", {"at": call["at"], "queue": queue["queue"]}, **{"tool.name": "roster"}) as s:
                hour = _hour(call["at"])
                end_pad = 1 if _on("shift_end_hour") else 0
                techs = s.set([t for t in TECHS if t["shift"][0] <= hour < t["shift"][1] + end_pad and queue["queue"] in t["queues"]])
            with Span(tracer, "eta_service", "TOOL", {"address": job["address"], "at": call["at"]}, **{"tool.name": "eta_service"}) as s:
                minutes = 20 + len(job["address"])
                eta = s.set({"eta": f"PT{minutes}M"} if _on("eta_iso") else {"eta_min": minutes})
            plan = common.chat([{"role": "system", "content": DISPATCH_SYS},
                                {"role": "user", "content": json.dumps({"technicians": techs, "vans_with_parts": sorted(carrying), "queue": queue["queue"],
                                                                        "eta": eta.get("eta_min", eta.get("eta"))})}],
                               tools=[common.fn_tool("assign_technician", "Assign the job.", {"tech": "string", "queue": "string", "eta_min": "integer"})])
            tc = plan["tool_calls"][0]
            args = json.loads(tc["function"]["arguments"])
            with Span(tracer, "assign_technician", "TOOL", args, **{"tool.name": "assign_technician", "tool.id": tc["id"]}) as s:
                tech = next(t for t in TECHS if t["tech"] == args["tech"])
                if not tech["shift"][0] <= _hour(call["at"]) < tech["shift"][1]:
                    raise RuntimeError(f"{tech['tech']} is off shift at {call['at'][11:]} (shift {tech['shift'][0]}:00-{tech['shift'][1]}:00)")
                if queue["respond_within_min"] and args["queue"] == "scheduled":
                    raise RuntimeError(f"scheduled queue books from the next morning; a lockout needs a response within {queue['respond_within_min']} min")
                assigned = s.set({"job": f"K-{call['at'][11:13]}{call['at'][14:]}", "tech": tech["tech"], "van": tech["van"]})
            common.chat([{"role": "system", "content": DISPATCH_SYS}, {"role": "user", "content": "dispatch"},
                         {"role": "assistant", "content": None, "tool_calls": [tc]},
                         {"role": "tool", "tool_call_id": tc["id"], "content": json.dumps(assigned)}])
            with Span(tracer, "send_quote", "TOOL", {"job": assigned["job"], "minutes": manual["minutes"], "eta_min": args["eta_min"]}, **{"tool.name": "send_quote"}) as s:
                if not isinstance(args["eta_min"], int):
                    raise TypeError(f"eta_min must be an integer number of minutes, got {args['eta_min']!r}")
                callout = 95.0 if queue["queue"] == "on-call" else 55.0
                quote = s.set({"job": assigned["job"], "callout": callout, "labour": round(manual["minutes"] * 1.1, 2)})
            with Span(tracer, "final_check", "CHAIN", {"assigned": assigned, "parts": manual["parts"]}) as s:
                for part in manual["parts"]:
                    if not VANS[assigned["van"]].get(part):
                        raise ValueError(f"van {assigned['van']} carries no {part} for job {assigned['job']}")
                top.set(s.set({"ok": True, "job": assigned["job"], "quote": quote}))
    except Exception:
        pass
    common.otlp_write(path)
