"""Marquetry furniture studio: veneer sourcing for a marquetry commission (otlp route)."""
import json

from openai import OpenAI

from otlp_kit import span, traced_run

NAME, ROUTE, DOMAIN = "marquetry-veneers", "otlp", "marquetry furniture studio"
SHAPE = "OpenInference spans: model cut list, parser, per-panel router to stock or a veneer-buyer sub-agent (supplier search retried after a timeout, its own model pick), workshop-notes memory save/recall, layout, final assembly assertion"
SWITCH = None
_CLIENTS = {}

STOCK = {"sycamore": 9000, "walnut": 6000, "boxwood": 2500, "ebony": 1200, "holly": 3000}
OFFERS = {"amboyna burr": [{"supplier": "Lathams", "species": "amboyna burr", "sheet_cm2": 1800, "sheets": 4}],
          "satinwood": [{"supplier": "Capital Veneers", "species": "satinwood", "sheet_cm2": 2400, "sheets": 3}],
          "kingwood": [{"supplier": "Lathams", "species": "kingwood", "sheet_cm2": 1500, "sheets": 5}],
          "tulipwood": [{"supplier": "Oakleaf", "species": "tulipwood", "sheet_cm2": 2000, "sheets": 3}]}
INPUTS = [
    {"piece": "card table top", "client": "Hollis", "design": [("field", "walnut", 3200), ("border", "boxwood", 600), ("fan", "satinwood", 900)]},
    {"piece": "tea caddy", "client": "Ferrand", "design": [("lid", "amboyna burr", 700), ("sides", "sycamore", 1400), ("stringing", "ebony", 150)]},
    {"piece": "commode front", "client": "Ashdown", "design": [("panel", "kingwood", 2600), ("cartouche", "holly", 500), ("frame", "tulipwood", 1900), ("cuffs", "boxwood", 300)]},
    {"piece": "jewellery box", "client": "Price", "design": [("lid", "satinwood", 800), ("base", "walnut", 1100)]},
    {"piece": "side table", "client": "Mbeki", "design": [("top", "sycamore", 3600), ("oval", "tulipwood", 1200), ("shells", "holly", 400), ("band", "kingwood", 700)]},
]
CASES = [
    {"id": "zzzo_m01", "input": 1, "switch": "route", "fault_kind": "wrong_routing",
     "root": ("route_panel", 1, "other"), "failure": ("assembly_check", 1),
     "description": "The lid in amboyna burr was sent to house stock, which allocated plain sycamore for it."},
    {"id": "zzzo_m02", "input": 2, "switch": "notes", "fault_kind": "bad_memory_write",
     "root": ("workshop_notes.save", 2, "tool"), "failure": ("assembly_check", 1),
     "description": "Saving the cartouche allocation in the workshop notes filed it under the panel, overwriting the kingwood sheets."},
    {"id": "zzzo_m03", "input": 4, "switch": "buyer", "fault_kind": "subagent_wrong_entity",
     "root": ("veneer_buyer", 2, "agent"), "failure": ("assembly_check", 1),
     "description": "Buying for the band, the veneer buyer sub-agent bought the tulipwood offer it had bought for the oval, not kingwood."},
    {"id": "zzzo_m04", "input": 0, "switch": "sqft", "fault_kind": "unit_error",
     "root": ("supplier_search", 2, "tool"), "failure": ("assembly_check", 1),
     "description": "The supplier search gave satinwood sheet sizes in square feet (2.6), read as square centimetres."},
    {"id": "zzzo_m05", "input": 3, "switch": "m2", "fault_kind": "format_drift",
     "root": ("ChatCompletion", 1, "llm"), "failure": ("assembly_check", 1),
     "description": "The model wrote the cut list's areas in square metres under area_m2, and the parser found no area_cm2 for any panel."},
]


def policy(request):
    msgs = request.body["messages"]
    sysmsg = msgs[0]["content"]
    data = json.loads(msgs[-1]["content"])
    if sysmsg.startswith("Pick"):
        offers = data["offers"]
        pick = offers[0]
        return json.dumps({"supplier": pick["supplier"], "species": pick["species"], "sheets": min(data["sheets_needed"], pick["sheets"])})
    panels = [{"panel": p, "veneer": v, "area_cm2": a} for p, v, a in data["design"]]
    if SWITCH == "m2":
        panels = [{"panel": p, "veneer": v, "area_m2": a / 10000} for p, v, a in data["design"]]
    return json.dumps({"piece": data["piece"], "panels": panels, "waste_allowance": 0.15})


def record(inp, server, path):
    if server.base_url not in _CLIENTS:
        _CLIENTS[server.base_url] = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    client = _CLIENTS[server.base_url]
    notes = {}
    bought_last = {}
    with traced_run(NAME, path) as tracer:
        try:
            with span(tracer, NAME, "AGENT", {"piece": inp["piece"], "task": f"{inp['piece']} for {inp['client']}"}) as top:
                with span(tracer, "read_brief", "CHAIN", {"piece": inp["piece"], "client": inp["client"]}) as s:
                    s["out"] = {"piece": inp["piece"], "design": [list(d) for d in inp["design"]]}
                reply = client.chat.completions.create(model=server.model, messages=[
                    {"role": "system", "content": "Draw up the cut list for the marquetry. Answer JSON."},
                    {"role": "user", "content": json.dumps(s["out"])}])
                text = reply.choices[0].message.content
                with span(tracer, "parse_cut_list", "CHAIN", {"text": text}) as s:
                    cut = json.loads(text)
                    panels = [{"panel": p["panel"], "veneer": p["veneer"], "area_cm2": float(p.get("area_cm2", 0))}
                              for p in cut["panels"]]
                    s["out"] = panels
                for p in panels:
                    need = p["area_cm2"] * 1.15
                    with span(tracer, "route_panel", "CHAIN", p) as s:
                        src = "house stock" if p["veneer"] in STOCK else "buy in"
                        if SWITCH == "route" and p["veneer"] == "amboyna burr":
                            src = "house stock"
                        s["out"] = {"panel": p["panel"], "source": src}
                    if src == "house stock":
                        with span(tracer, "stock_lookup", "TOOL", {"veneer": p["veneer"], "area_cm2": need}) as s:
                            species = p["veneer"] if p["veneer"] in STOCK else "sycamore"
                            s["out"] = {"species": species, "allocated_cm2": round(need), "left_cm2": STOCK[species] - round(need)}
                        alloc = {"species": species, "area_cm2": round(need)}
                    else:
                        with span(tracer, "veneer_buyer", "AGENT", {"panel": p["panel"], "veneer": p["veneer"]}) as sub:
                            for attempt in (1, 2):
                                try:
                                    with span(tracer, "supplier_search", "TOOL", {"species": p["veneer"], "attempt": attempt}) as s:
                                        if attempt == 1 and p["veneer"] in ("kingwood", "satinwood"):
                                            raise TimeoutError(f"supplier catalogue timed out for {p['veneer']}")
                                        offers = [dict(o) for o in OFFERS[p["veneer"]]]
                                        if SWITCH == "sqft" and p["veneer"] == "satinwood":
                                            for o in offers:
                                                o["sheet_cm2"] = round(o["sheet_cm2"] / 929.03, 1)
                                        s["out"] = offers
                                    break
                                except TimeoutError:
                                    continue
                            if SWITCH == "buyer" and bought_last:
                                offers = bought_last["offers"]
                            sheets = -(-int(need) // int(max(offers[0]["sheet_cm2"], 1)))
                            r = client.chat.completions.create(model=server.model, messages=[
                                {"role": "system", "content": "Pick the supplier offer to buy. Answer JSON."},
                                {"role": "user", "content": json.dumps({"veneer": p["veneer"], "offers": offers, "sheets_needed": sheets})}])
                            order = json.loads(r.choices[0].message.content)
                            bought_last = {"offers": offers}
                            sub["out"] = {"species": order["species"], "sheets": order["sheets"], "sheet_cm2": offers[0]["sheet_cm2"]}
                        alloc = {"species": order["species"], "area_cm2": round(order["sheets"] * offers[0]["sheet_cm2"])}
                    with span(tracer, "workshop_notes.save", "TOOL", {"key": p["panel"], "value": alloc}) as s:
                        key = p["panel"]
                        if SWITCH == "notes" and p["panel"] == "cartouche":
                            key = "panel"
                        notes[key] = alloc
                        s["out"] = {"saved": key}
                with span(tracer, "workshop_notes.recall", "TOOL", {"keys": [p["panel"] for p in panels]}) as s:
                    s["out"] = {k: notes.get(k) for k in [p["panel"] for p in panels]}
                    recalled = s["out"]
                with span(tracer, "layout_sheets", "CHAIN", {"panels": panels, "allocations": recalled}) as s:
                    s["out"] = [{"panel": p["panel"], "design_cm2": p["area_cm2"], "species": (recalled[p["panel"]] or {}).get("species"),
                                 "allocated_cm2": (recalled[p["panel"]] or {}).get("area_cm2", 0)} for p in panels]
                    layout = s["out"]
                with span(tracer, "assembly_check", "CHAIN", {"layout": layout, "design": [list(d) for d in inp["design"]]}) as s:
                    design = {p: (v, a) for p, v, a in inp["design"]}
                    for row in layout:
                        v, a = design[row["panel"]]
                        assert row["species"] == v, f"{row['panel']}: design calls for {v}, bench has {row['species']}"
                        assert row["allocated_cm2"] >= a * 1.15 - 1, f"{row['panel']}: {row['allocated_cm2']} cm2 of {v} for {a} cm2 with 15% waste"
                    assert sum(r["design_cm2"] for r in layout) == sum(a for _, _, a in inp["design"]), \
                        f"cut list covers {sum(r['design_cm2'] for r in layout)} cm2 of the design's {sum(a for _, _, a in inp['design'])} cm2"
                    s["out"] = {"ready": True, "panels": len(layout)}
                top["out"] = s["out"]
        except AssertionError:
            pass
