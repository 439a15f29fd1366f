"""Saddlery custom orders, traced with OpenTelemetry + OpenInference and exported as OTLP/JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openai import OpenAI

from .common import Case, Otel, otel_chat
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "saddlery-workshop", "otlp", "saddlery custom orders", "json"
SHAPE = "receive -> extract (LLM) -> parse -> tree pattern (retriever) -> seat size -> hides (loop) -> lead time -> fitting sub-agent (LLM plan, panel checks, record) -> place order"

ORDERS = {
    "h_brio": "Custom dressage saddle for horse Brio (H-4410), rider seat 17.5 in, wither width 31.5 cm, dark havana calf, panels front-left front-right rear-left rear-right.",
    "h_tansy": "Custom jumping saddle for horse Tansy (H-2087), rider seat 16.5 in, wither width 28.5 cm, black buffalo, panels front-left front-right rear-left rear-right.",
    "h_odin": "Custom endurance saddle for horse Odin (H-3301), rider seat 18 in, wither width 30 cm, tan bridle, panels front-left front-right rear-left rear-right.",
    "h_mabel": "Custom dressage saddle for horse Mabel (H-1190), rider seat 17 in, wither width 29 cm, black calf, panels front-left front-right rear-left rear-right.",
    "h_rook": "Custom jumping saddle for horse Rook (H-5012), rider seat 17 in, wither width 32 cm, dark havana calf, panels front-left front-right rear-left rear-right.",
    "h_pip": "Custom endurance saddle for horse Pip (H-0772), rider seat 16 in, wither width 27.5 cm, tan bridle, panels front-left front-right rear-left rear-right.",
}
REFS = ["h_odin", "h_mabel", "h_rook", "h_pip"]
TREES = [{"id": "TR-N27", "gullet_cm": 27.0}, {"id": "TR-M29", "gullet_cm": 29.0}, {"id": "TR-MW30", "gullet_cm": 30.0},
         {"id": "TR-W31", "gullet_cm": 31.0}, {"id": "TR-XW32", "gullet_cm": 32.0}]
PANEL_MM = {
    "H-4410": {"front-left": 14, "front-right": 9, "rear-left": 11, "rear-right": 11},
    "H-2087": {"front-left": 10, "front-right": 10, "rear-left": 12, "rear-right": 8},
    "H-3301": {"front-left": 12, "front-right": 12, "rear-left": 10, "rear-right": 10},
    "H-1190": {"front-left": 9, "front-right": 11, "rear-left": 10, "rear-right": 10},
    "H-5012": {"front-left": 13, "front-right": 13, "rear-left": 12, "rear-right": 12},
    "H-0772": {"front-left": 8, "front-right": 8, "rear-left": 9, "rear-right": 9},
}
HIDES = {"dark havana calf": [("HD-301", 1.4), ("HD-302", 1.2), ("HD-303", 1.3)], "black buffalo": [("HD-410", 2.1)],
         "tan bridle": [("HD-520", 1.6), ("HD-521", 1.5)], "black calf": [("HD-610", 1.3), ("HD-611", 1.4)]}
BENCH_QUEUE_WEEKS = 6
ORDER_DATE = "2026-04-24"

CASES = [
    Case("zf_sd_1", "bad_memory_write", "h_brio", "record_fitting", 1, "place_workshop_order", 1,
         "record_fitting writes the front-left flocking into the front-right slot of the fitting record."),
    Case("zf_sd_2", "wrong_retrieval", "h_brio", "find_tree_pattern", 1, "place_workshop_order", 1,
         "find_tree_pattern returns the nearest tree below the wither width (TR-MW30) instead of the one that clears it."),
    Case("zf_sd_3", "unit_error", "h_tansy", "convert_seat_size", 1, "place_workshop_order", 1,
         "convert_seat_size converts inches with 2.0 cm per inch, so the seat is cut about 9 cm short."),
    Case("zf_sd_4", "off_by_one", "h_tansy", "compute_lead_time", 1, "place_workshop_order", 1,
         "compute_lead_time counts the bench queue from week zero and promises delivery one week early."),
    Case("zf_sd_5", "plan_error", "h_brio", "plan_fitting", 1, "place_workshop_order", 1,
         "the fitting model's plan checks only the front panels, so the rear panels are never measured."),
]


class WorkshopRejected(RuntimeError):
    pass


def policy(request: Any) -> str:
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    if system.startswith("Extract"):
        words = user.replace(",", "").split()
        horse_id = words[words.index("horse") + 2].strip("()")
        seat = float(words[words.index("seat") + 1])
        wither = float(words[words.index("width") + 1])
        leather = user.split(" cm, ")[1].split(", panels")[0]
        panels = user.split("panels ")[1].rstrip(".").split()
        return f"horse={horse_id}\nseat={seat} in\nwither={wither} cm\nleather={leather}\npanels={','.join(panels)}"
    if system.startswith("Plan"):
        ask = json.loads(user)
        panels = [p for p in ask["panels"] if p.startswith("front")] if active("zf_sd_5") else ask["panels"]
        return json.dumps({"checks": panels, "order": "front to rear"})
    return "ok"


def record(server: Any, key: str, path: Path) -> None:
    server.use(policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    otel = Otel(AGENT)
    text = ORDERS[key]
    try:
        with otel.span("saddle_order", "AGENT", text, **{"agent.name": AGENT}) as root:
            with otel.span("receive_order", "CHAIN", text) as s:
                order = otel.output(s, {"text": text, "received": ORDER_DATE, "channel": "fitter portal"})
            raw = otel_chat(otel, client, server.model, "extract_measurements", "Extract horse, seat, wither, leather and panels.",
                            order["text"])
            with otel.span("parse_measurements", "CHAIN", raw) as s:
                kv = dict(line.split("=", 1) for line in raw.splitlines())
                m = otel.output(s, {"horse": kv["horse"], "seat_in": float(kv["seat"].split()[0]),
                                    "wither_cm": float(kv["wither"].split()[0]), "leather": kv["leather"],
                                    "panels": kv["panels"].split(",")})
            with otel.span("find_tree_pattern", "RETRIEVER", {"wither_cm": m["wither_cm"]}) as s:
                if active("zf_sd_2"):
                    tree = max((t for t in TREES if t["gullet_cm"] < m["wither_cm"] - 0.5), key=lambda t: t["gullet_cm"])
                else:
                    tree = min((t for t in TREES if t["gullet_cm"] >= m["wither_cm"] - 0.5), key=lambda t: t["gullet_cm"])
                s.set_attribute("retrieval.documents.0.document.id", tree["id"])
                s.set_attribute("retrieval.documents.0.document.content", json.dumps(tree))
                otel.output(s, [tree])
            with otel.span("convert_seat_size", "TOOL", {"seat_in": m["seat_in"]}, **{"tool.name": "convert_seat_size"}) as s:
                per_inch = 2.0 if active("zf_sd_3") else 2.54
                seat = otel.output(s, {"seat_cm": round(m["seat_in"] * per_inch, 1)})
            hides = []
            need_m2 = 1.2 if m["seat_in"] < 17.5 else 1.4
            with otel.span("leather_stock", "TOOL", {"leather": m["leather"]}, **{"tool.name": "leather_stock"}) as s:
                stock = otel.output(s, [{"hide": h, "m2": a} for h, a in HIDES[m["leather"]]])
            for h in stock:
                with otel.span("reserve_hide", "TOOL", h, **{"tool.name": "reserve_hide"}) as s:
                    ok = h["m2"] >= need_m2
                    otel.output(s, {"hide": h["hide"], "reserved": ok})
                if ok:
                    hides.append(h["hide"])
                    break
            with otel.span("compute_lead_time", "CHAIN", {"queue_weeks": BENCH_QUEUE_WEEKS, "ordered": ORDER_DATE}) as s:
                import datetime

                weeks = BENCH_QUEUE_WEEKS - 1 if active("zf_sd_4") else BENCH_QUEUE_WEEKS
                promised = datetime.date.fromisoformat(ORDER_DATE) + datetime.timedelta(weeks=weeks)
                lead = otel.output(s, {"weeks": weeks, "promised": promised.isoformat()})
            with otel.span("fitting_subagent", "AGENT", {"horse": m["horse"]}, **{"agent.name": "fitter"}) as fit_span:
                plan = json.loads(otel_chat(otel, client, server.model, "plan_fitting", "Plan the panel checks; answer JSON.",
                                            json.dumps({"horse": m["horse"], "panels": m["panels"]}), **{"agent.name": "fitter"}))
                measured = {}
                for panel in plan["checks"]:
                    with otel.span("check_panel_flocking", "TOOL", {"horse": m["horse"], "panel": panel},
                                   **{"tool.name": "check_panel_flocking", "agent.name": "fitter"}) as s:
                        measured[panel] = otel.output(s, {"panel": panel, "flocking_mm": PANEL_MM[m["horse"]][panel]})
                with otel.span("record_fitting", "CHAIN", measured, **{"agent.name": "fitter"}) as s:
                    fitting = {p: v["flocking_mm"] for p, v in measured.items()}
                    if active("zf_sd_1"):
                        fitting["front-right"] = fitting["front-left"]
                    otel.output(s, {"horse": m["horse"], "panels_mm": fitting})
                otel.output(fit_span, {"panels_mm": fitting})
            order_body = {"horse": m["horse"], "tree": tree["id"], "seat_cm": seat["seat_cm"], "hides": hides,
                          "panels_mm": fitting, "promised": lead["promised"]}
            with otel.span("place_workshop_order", "TOOL", order_body, **{"tool.name": "place_workshop_order"}) as s:
                import datetime

                if tree["gullet_cm"] < m["wither_cm"] - 0.5:
                    raise WorkshopRejected(f"HTTP 409 {{\"error\": \"tree {tree['id']} gullet {tree['gullet_cm']} cm too narrow "
                                           f"for wither width {m['wither_cm']} cm\"}}")
                expected_seat = round(m["seat_in"] * 2.54, 1)
                if abs(seat["seat_cm"] - expected_seat) > 0.5:
                    raise WorkshopRejected(f"HTTP 422 {{\"error\": \"seat {seat['seat_cm']} cm does not match the fitter's "
                                           f"{m['seat_in']} in ({expected_seat} cm)\"}}")
                missing = [p for p in m["panels"] if p not in fitting]
                if missing:
                    raise WorkshopRejected(f"HTTP 422 {{\"error\": \"fitting record lacks {', '.join(missing)}\"}}")
                for p, mm in fitting.items():
                    if mm != PANEL_MM[m["horse"]][p]:
                        raise WorkshopRejected(f"HTTP 409 {{\"error\": \"{p} flocking {mm} mm differs from the fitter's "
                                               f"sheet ({PANEL_MM[m['horse']][p]} mm) for {m['horse']}\"}}")
                earliest = datetime.date.fromisoformat(ORDER_DATE) + datetime.timedelta(weeks=BENCH_QUEUE_WEEKS)
                if datetime.date.fromisoformat(lead["promised"]) < earliest:
                    raise WorkshopRejected(f"HTTP 409 {{\"error\": \"promised {lead['promised']} is before the earliest "
                                           f"bench slot {earliest.isoformat()}\"}}")
                otel.output(root, otel.output(s, {"order": f"SO-{m['horse']}-{tree['id']}", "status": "queued"}))
    except WorkshopRejected:
        pass
    otel.write(path)
