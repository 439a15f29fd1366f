"""Calligrapher's certificate service: OpenInference + OpenTelemetry spans as OTLP JSON. A roster retriever,
a model tool loop with parallel tool calls (name checks, a Latin honour phrase), a wording parser, a layout
per certificate, an ink order retried after a dropped connection, and a proof check against the print schema."""
from __future__ import annotations

import json
import re
import unicodedata

from common import Otlp, client
from trajdebug.testing import Reply, tool_call

NAME = "certificate-desk"
ROUTE = "otlp"
DOMAIN = "calligrapher's certificate service"
SHAPE = ("OTLP: roster retriever -> model tool loop (parallel name checks + honour phrase) -> wording parser -> "
         "layout per certificate -> ink order (retried) -> proof/schema check; 11-17 spans")
SWITCH = None

ROSTERS = {
    "ORD-71": {"school": "St Aldhelm's College", "date": "2026-06-19", "award": "distinction",
               "names": ["Ana Ribeiro", "Tomás Leary", "Hugh Penrose"]},
    "ORD-72": {"school": "Fenwick Music School", "date": "2026-07-03", "award": "merit",
               "names": ["Zoë Adler", "Kwame Mensah"]},
    "ORD-73": {"school": "Harrow Road Academy", "date": "2026-06-26", "award": "highest distinction",
               "names": ["Iris Calder", "Noor Haddad", "Ben Ashworth", "Oskar Lund"]},
    "ORD-74": {"school": "Linfield Guild of Bellringers", "date": "2026-09-12", "award": "merit",
               "names": ["Peter Quince"]},
    "ORD-75": {"school": "Carrow Nursing School", "date": "2026-07-10", "award": "distinction",
               "names": ["Maeve Doyle", "Siân Pryce"]},
}
LAST_YEAR = {"ORD-73": ["Iris Calder", "Noor Haddad", "Ben Ashworth", "Freya Holt"]}
HONOURS = {"merit": "cum laude", "distinction": "magna cum laude", "highest distinction": "summa cum laude"}
NIB_MM_PER_CHAR = 4.2
SCHEMA = {"school": str, "date": str, "paper": {"vellum", "hot-press"}, "certificates": list}
_INK = {"n": 0}

INPUTS = [{"order": o, "request": f"Certificates for order {o}, {r['school']}, ceremony {r['date']}."} for o, r in ROSTERS.items()]

CASES = [
    {"id": "zzzy-certificates-1", "input": 0, "switch": "honour", "fault_kind": "wrong_tool_args",
     "root": ("ChatCompletion", 1), "failure": ("proof_check", 1),
     "description": "The model asks the honour phrase tool for merit where the roster says distinction."},
    {"id": "zzzy-certificates-2", "input": 3, "switch": "year", "fault_kind": "hallucinated_value",
     "root": ("ChatCompletion", 2), "failure": ("proof_check", 1),
     "description": "The model's wording dates the certificate 12 September 2025 although the ceremony is in 2026."},
    {"id": "zzzy-certificates-3", "input": 2, "switch": "roster", "fault_kind": "stale_data",
     "root": ("school_roster", 1), "failure": ("proof_check", 1),
     "description": "The roster search answers from last year's copy, which still lists Freya Holt instead of Oskar Lund."},
    {"id": "zzzy-certificates-4", "input": 4, "switch": "points", "fault_kind": "unit_error",
     "root": ("layout", 2), "failure": ("proof_check", 1),
     "description": "The layout of the second certificate measures its name line in points instead of millimetres."},
    {"id": "zzzy-certificates-5", "input": 1, "switch": "accents", "fault_kind": "swallowed_error",
     "root": ("name_check", 1), "failure": ("proof_check", 1),
     "description": "The name check fails on the diaeresis in Zoë, catches the error and returns the name without it."},
]


def policy(request):
    msgs = request.body["messages"]
    user = next(m["content"] for m in msgs if m["role"] == "user")
    roster = json.loads(re.search(r"Roster: (\{.*\})", user, re.S).group(1))
    results = {}
    for m in msgs:
        if m["role"] == "tool":
            results[m["tool_call_id"]] = json.loads(m["content"])
    if not results:
        award = "merit" if SWITCH == "honour" else roster["award"]
        calls = [tool_call("honour_phrase", {"award": award})]
        calls += [tool_call("name_check", {"name": n}) for n in roster["names"]]
        return Reply(tool_calls=tuple(calls))
    phrase = next(r["phrase"] for r in results.values() if "phrase" in r)
    names = [r["name"] for r in results.values() if "name" in r]
    y, mth, d = roster["date"].split("-")
    if SWITCH == "year":
        y = str(int(y) - 1)
    months = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]
    date = f"{int(d)} {months[int(mth) - 1]} {y}"
    return json.dumps({"certificates": [{"name": n, "honour": phrase, "dated": date,
                                         "text": f"{roster['school']} confers upon {n} this award {phrase}, {date}"} for n in names]})


TOOLS = [
    {"type": "function", "function": {"name": "honour_phrase", "description": "Latin phrase for an award level",
                                      "parameters": {"type": "object", "properties": {"award": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "name_check", "description": "Check a recipient's name for the engrossing hand",
                                      "parameters": {"type": "object", "properties": {"name": {"type": "string"}}}}},
]


def honour_phrase(award):
    return {"award": award, "phrase": HONOURS[award]}


def name_check(name):
    try:
        if SWITCH == "accents":
            name.encode("ascii")
        return {"name": name, "letters": len(name.replace(" ", ""))}
    except UnicodeEncodeError:
        plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
        return {"name": plain, "letters": len(plain.replace(" ", ""))}


def run_one(inp, server, path):
    _INK["n"] = 0
    o = Otlp(NAME)
    oa = client(server)
    order = inp["order"]
    try:
        with o.span(NAME, "AGENT", inp, metadata=json.dumps({"task": f"certificates {order}"})) as top:
            with o.span("school_roster", "RETRIEVER", {"order": order}) as s:
                roster = dict(ROSTERS[order])
                if SWITCH == "roster" and order in LAST_YEAR:
                    roster["names"] = LAST_YEAR[order]
                roster.pop("school_id", None)
                s["out"] = roster
            messages = [{"role": "system", "content": "You draft certificate wording. Check each name and the honour first."},
                        {"role": "user", "content": inp["request"] + "\nRoster: " + json.dumps(roster)}]
            while True:
                msg = oa.chat.completions.create(model=server.model, messages=messages, tools=TOOLS).choices[0].message
                messages.append(msg.model_dump(exclude_none=True))
                if not msg.tool_calls:
                    break
                for call in msg.tool_calls:
                    args = json.loads(call.function.arguments)
                    with o.span(call.function.name, "TOOL", args) as s:
                        out = (honour_phrase if call.function.name == "honour_phrase" else name_check)(**args)
                        s["out"] = out
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(out)})
            with o.span("parse_wording", "CHAIN", {"text": msg.content}) as s:
                certs = json.loads(msg.content)["certificates"]
                s["out"] = certs
            laid = []
            for i, c in enumerate(certs):
                with o.span("layout", "CHAIN", c) as s:
                    width = len(c["name"]) * NIB_MM_PER_CHAR
                    if SWITCH == "points" and i == 1:
                        width = width / 0.3528
                    item = {"name": c["name"], "name_line_mm": round(width, 1), "lines": 4}
                    laid.append(item)
                    s["out"] = item
            for attempt in (1, 2):
                try:
                    with o.span("ink_order", "TOOL", {"sheets": len(laid), "ink": "iron gall", "attempt": attempt}) as s:
                        _INK["n"] += 1
                        if _INK["n"] == 1:
                            raise ConnectionError("ink supplier connection reset")
                        s["out"] = {"ink": "iron gall", "ml": 10 * len(laid)}
                    break
                except ConnectionError:
                    continue
            with o.span("proof_check", "CHAIN", {"order": order}) as s:
                job = {"school": roster["school"], "date": roster["date"], "paper": "vellum",
                       "certificates": [dict(c, **l) for c, l in zip(certs, laid)]}
                for key, rule in SCHEMA.items():
                    ok = job.get(key) in rule if isinstance(rule, set) else isinstance(job.get(key), rule)
                    if not ok:
                        raise AssertionError(f"print job field {key!r} does not fit the schema")
                truth = ROSTERS[order]
                for c in job["certificates"]:
                    if not c["name_line_mm"] <= 100:
                        raise AssertionError(f"print job: name line of {c['name']} is {c['name_line_mm']} mm, the sheet allows 100 mm")
                    if c["name"] not in truth["names"]:
                        raise AssertionError(f"{order}: {c['name']} is not on the school's list of recipients")
                    if c["honour"] != HONOURS[truth["award"]]:
                        raise AssertionError(f"{order}: honour '{c['honour']}' on {c['name']}'s certificate, the award is {truth['award']}")
                    if truth["date"][:4] not in c["dated"]:
                        raise AssertionError(f"{order}: certificate dated {c['dated']}, the ceremony is on {truth['date']}")
                if len(job["certificates"]) != len(truth["names"]):
                    raise AssertionError(f"{order}: {len(job['certificates'])} certificates for {len(truth['names'])} recipients")
                s["out"] = {"ok": True, "sheets": len(laid)}
            top["out"] = {"order": order, "sheets": len(laid)}
    finally:
        o.write(path)
