"""A pottery studio's kiln scheduler (OpenTelemetry SDK spans with OpenInference attributes, the openai
client instrumented by openinference, exported as OTLP JSON): the studio board's firing requests to
pieces, glaze cards, kiln status, a load plan chosen by the model with a tool call, the firing log and
student notices."""

from __future__ import annotations

import json
import re

from trajdebug.testing import Reply, tool_call

from . import common
from .common import Span

NAME = "claybird-kiln-scheduler"
ROUTE = "otlp"
DOMAIN = "pottery studio: firing requests to glaze cards, kiln load plan, booking and notices"
SHAPE = "OTLP: agent span -> read board -> llm extract -> parse -> loop(glaze retriever) -> kiln status tool -> llm plan with tool call -> parse plan -> book kiln tool -> firing log (memory) -> loop(notify tool) -> final check"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


INPUTS = {
    "friday": "Glaze firing 2025-05-16. Ana: 3 mugs, B-Mix, Celadon. Ben: 1 vase 34 cm, porcelain, Tenmoku. Cleo: 2 bowls, B-Mix, Shino.",
    "monday": "Glaze firing 2025-05-19. Fay: 1 jar 22 cm, porcelain, Clear. Dara: 4 cups, B-Mix, Celadon. Eli: 2 plates, B-Mix, Floating Blue.",
    "wednesday": "Glaze firing 2025-05-21. Gus: 6 tiles, B-Mix, Clear. Hana: 2 mugs, porcelain, Tenmoku. Ivo: 1 platter, B-Mix, Shino. Jo: 3 cups, B-Mix, Celadon.",
    "thursday": "Glaze firing 2025-05-22. Kim: 2 bowls, porcelain, Celadon. Lev: 1 vase 18 cm, B-Mix, Floating Blue.",
    "saturday": "Glaze firing 2025-05-24. Mo: 5 mugs, B-Mix, Tenmoku. Nia: 2 bowls, B-Mix, Clear. Oto: 2 cups, porcelain, Shino. Pia: 1 vase 18 cm, B-Mix, Celadon.",
}

CASES = [
    {"id": "kiln_glaze_card", "input": "friday", "switch": "glaze_top_hit", "fault_kind": "wrong_retrieval",
     "root": ("glaze_lookup", 2), "root_has": "Tenmoku", "failure": ("final_check", 1),
     "description": "The glaze search for Tenmoku returned the cone 10 reduction Tenmoku card, not the studio's cone 6 one, which raised the whole load to cone 10, past the studio chart's cone 6 for every glaze in it."},
    {"id": "kiln_shelf_list", "input": "wednesday", "switch": "shelves_cut", "fault_kind": "truncated_result",
     "root": ("kiln_status", 1), "failure": ("final_check", 1),
     "description": "The kiln controller's status listed only the first two of four shelves, the plan left two students' pieces for a later firing, and the final check found requested pieces unloaded."},
    {"id": "kiln_named_kiln", "input": "thursday", "switch": "kiln_name", "fault_kind": "hallucinated_value",
     "root": ("ChatCompletion", 2), "failure": ("book_kiln", 1),
     "description": "The planning model booked kiln E-3, which the studio does not have; the kiln status listed E-1 and E-2."},
    {"id": "kiln_height_key", "input": "monday", "switch": "drop_height", "fault_kind": "lossy_parsing",
     "root": ("parse_pieces", 1), "failure": ("final_check", 1),
     "description": "Parsing the extracted pieces kept only the known keys and dropped Fay's jar height, so the plan put a 22 cm jar on a shelf with 18 cm clearance."},
    {"id": "kiln_log_count", "input": "saturday", "switch": "log_students", "fault_kind": "bad_memory_write",
     "root": ("log_firing", 1), "failure": ("final_check", 1),
     "description": "The firing log entry recorded the number of students (4) as the piece count instead of the 10 pieces booked, and the final reconciliation of log and booking failed."},
]

GLAZES = [
    {"glaze": "Celadon", "card": "Celadon, cone 6 oxidation", "cone": 6},
    {"glaze": "Tenmoku", "card": "Tenmoku, cone 10 reduction (gas kiln)", "cone": 10},
    {"glaze": "Tenmoku", "card": "Tenmoku, cone 6 oxidation (studio mix)", "cone": 6},
    {"glaze": "Shino", "card": "Shino, cone 6 oxidation", "cone": 6},
    {"glaze": "Floating Blue", "card": "Floating Blue, cone 6 oxidation", "cone": 6},
    {"glaze": "Clear", "card": "Clear, cone 6 oxidation", "cone": 6},
]
STUDIO_CHART = {"Celadon": 6, "Tenmoku": 6, "Shino": 6, "Floating Blue": 6, "Clear": 6}
KILNS = {"E-1": {"max_cone": 10, "shelves": [{"shelf": 1, "clearance_cm": 18}, {"shelf": 2, "clearance_cm": 18},
                                             {"shelf": 3, "clearance_cm": 25}, {"shelf": 4, "clearance_cm": 36}]},
         "E-2": {"max_cone": 6, "shelves": [{"shelf": 1, "clearance_cm": 20}, {"shelf": 2, "clearance_cm": 20}]}}
LOG: list = []

EXTRACT_SYS = "You read a pottery studio's firing board. Answer JSON: {\"date\", \"pieces\": [{\"student\", \"qty\", \"form\", \"clay\", \"glaze\", \"height_cm\" (when given)}]}."
PLAN_SYS = "You plan a kiln load. Put each student's pieces on one shelf with enough clearance (default height 12 cm), one student per shelf, fire to the highest cone needed, then call book_kiln."


def brain(request):
    system = common.system_of(request)
    user = common.last_user(request)
    if system.startswith("You read a pottery"):
        date = re.search(r"\d{4}-\d{2}-\d{2}", user).group(0)
        pieces = []
        for student, qty, form, height, clay, glaze in re.findall(r"(\w+): (\d+) (\w+)(?: (\d+) cm)?, ([\w-]+), ([\w ]+)\.", user):
            p = {"student": student, "qty": int(qty), "form": form, "clay": clay, "glaze": glaze}
            if height:
                p["height_cm"] = int(height)
            pieces.append(p)
        return json.dumps({"date": date, "pieces": pieces})
    if system.startswith("You plan a kiln"):
        if common.tool_results(request):
            return "Booked."
        data = json.loads(user)
        kiln = data["kiln"]
        shelves = sorted(kiln["shelves"], key=lambda s: s["clearance_cm"])
        load, later = [], []
        for group in data["groups"]:
            fit = next((s for s in shelves if s["clearance_cm"] >= group["height_cm"]), None)
            if fit is None:
                later.append(group["student"])
                continue
            shelves.remove(fit)
            load.append({"shelf": fit["shelf"], "student": group["student"], "qty": group["qty"]})
        name = "E-3" if _on("kiln_name") else kiln["kiln"]
        cone = max(g["cone"] for g in data["groups"])
        return Reply(tool_calls=(tool_call("book_kiln", {"kiln": name, "date": data["date"], "cone": cone, "load": load, "later": later}),))
    return "?"


def record(key: str, path: str) -> None:
    provider, _ = common.otel()
    tracer = provider.get_tracer("claybird.kiln")
    text = INPUTS[key]
    LOG.clear()
    try:
        with Span(tracer, NAME, "AGENT", {"board": text}, **{"metadata": json.dumps({"task": text})}) as top:
            with Span(tracer, "read_board", "CHAIN", {"board": text}) as s:
                board = s.set({"text": text, "lines": text.count(":")})
            answer = common.chat([{"role": "system", "content": EXTRACT_SYS}, {"role": "user", "content": board["text"]}])
            with Span(tracer, "parse_pieces", "CHAIN", {"content": answer["content"]}) as s:
                data = json.loads(answer["content"])
                keys = ("student", "qty", "form", "clay", "glaze") if _on("drop_height") else ("student", "qty", "form", "clay", "glaze", "height_cm")
                pieces = s.set({"date": data["date"], "pieces": [{k: p[k] for k in keys if k in p} for p in data["pieces"]]})
            groups = []
            for p in pieces["pieces"]:
                with Span(tracer, "glaze_lookup", "RETRIEVER", {"query": p["glaze"]}) as s:
                    hits = [g for g in GLAZES if g["glaze"] == p["glaze"]]
                    if not _on("glaze_top_hit"):
                        hits.sort(key=lambda g: "studio" not in g["card"])
                    card = s.set(hits[0])
                groups.append({"student": p["student"], "qty": p["qty"], "height_cm": p.get("height_cm", 12), "cone": card["cone"], "glaze": card["card"]})
            with Span(tracer, "kiln_status", "TOOL", {"max_cone": max(g["cone"] for g in groups)}, **{"tool.name": "kiln_status"}) as s:
                kiln_name = "E-1" if max(g["cone"] for g in groups) > 6 or len(groups) > 2 else "E-2"
                shelves = KILNS[kiln_name]["shelves"]
                if _on("shelves_cut"):
                    shelves = shelves[:2]
                status = s.set({"kiln": kiln_name, "max_cone": KILNS[kiln_name]["max_cone"], "shelves": shelves, "available": ["E-1", "E-2"]})
            plan = common.chat([{"role": "system", "content": PLAN_SYS},
                                {"role": "user", "content": json.dumps({"date": pieces["date"], "kiln": status, "groups": groups})}],
                               tools=[common.fn_tool("book_kiln", "Book a kiln firing.", {"kiln": "string", "date": "string", "cone": "integer", "load": "array", "later": "array"})])
            call = plan["tool_calls"][0]
            with Span(tracer, "parse_plan", "CHAIN", {"tool_call": call}) as s:
                args = s.set(json.loads(call["function"]["arguments"]))
            with Span(tracer, "book_kiln", "TOOL", args, **{"tool.name": "book_kiln", "tool.id": call["id"]}) as s:
                if args["kiln"] not in KILNS:
                    raise LookupError(f"no kiln {args['kiln']} in the studio")
                booking = s.set({"booking": f"{args['kiln']}-{args['date']}", "cone": args["cone"], "pieces": sum(l["qty"] for l in args["load"])})
            common.chat([{"role": "system", "content": PLAN_SYS}, {"role": "user", "content": "book the load"},
                         {"role": "assistant", "content": None, "tool_calls": [call]},
                         {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(booking)}])
            with Span(tracer, "log_firing", "CHAIN", {"booking": booking, "load": args["load"]}) as s:
                count = len(args["load"]) if _on("log_students") else sum(l["qty"] for l in args["load"])
                LOG.append({"booking": booking["booking"], "cone": booking["cone"], "pieces": count})
                s.set(LOG[-1])
            for l in args["load"]:
                with Span(tracer, "notify_student", "TOOL", {"student": l["student"], "booking": booking["booking"]}, **{"tool.name": "notify_student"}) as s:
                    s.set({"sent": True, "student": l["student"], "text": f"{l['qty']} pieces on shelf {l['shelf']}, {booking['booking']}"})
            with Span(tracer, "final_check", "CHAIN", {"booking": booking, "log": LOG[-1]}) as s:
                requested = {g["student"] for g in groups}
                loaded = {l["student"] for l in args["load"]}
                if requested - loaded:
                    raise ValueError(f"requested pieces not loaded: {', '.join(sorted(requested - loaded))}")
                for p in data["pieces"]:
                    if STUDIO_CHART[p["glaze"]] < booking["cone"]:
                        raise ValueError(f"{p['student']}'s {p['form']} glaze {p['glaze']} fires at cone {STUDIO_CHART[p['glaze']]}, load fires to cone {booking['cone']}")
                    shelf = next(l["shelf"] for l in args["load"] if l["student"] == p["student"])
                    clear = next(x["clearance_cm"] for x in KILNS[args["kiln"]]["shelves"] if x["shelf"] == shelf)
                    if p.get("height_cm", 12) > clear:
                        raise ValueError(f"{p['student']}'s {p['form']} is {p['height_cm']} cm on shelf {shelf} with {clear} cm clearance")
                if LOG[-1]["pieces"] != booking["pieces"]:
                    raise ValueError(f"firing log lists {LOG[-1]['pieces']} pieces, booking {booking['booking']} holds {booking['pieces']}")
                top.set(s.set({"ok": True, "booking": booking["booking"]}))
    except Exception:
        pass
    common.otlp_write(path)
