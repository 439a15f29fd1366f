"""Gilder's frame orders: OpenInference-instrumented openai client + spans of its own, exported as OTLP JSON."""
from __future__ import annotations

import json
import re

from suite_common import Spans, begin_otlp, last_user, write_otlp

RUN_NAME = "gilder-order-desk"
ROUTE = "otlp"
DOMAIN = "gilder's frame orders"
SHAPE = "OTLP spans: intake chain, one model call extracting frames, parse chain, per-frame moulding retriever + leaf calculation tool, stock read, supplier reservation, order placement"
SWITCH = None

MOULDINGS = [
    {"code": "LXIV-75", "profile": "Louis XIV swept", "width_mm": 75, "rebate_mm": 22, "finish": "water gilding"},
    {"code": "LXV-75", "profile": "Louis XV swept", "width_mm": 75, "rebate_mm": 12, "finish": "water gilding"},
    {"code": "CAS-60", "profile": "cassetta", "width_mm": 60, "rebate_mm": 20, "finish": "oil gilding"},
    {"code": "CAS-90", "profile": "cassetta", "width_mm": 90, "rebate_mm": 25, "finish": "oil gilding"},
    {"code": "HOG-40", "profile": "hogarth reverse", "width_mm": 40, "rebate_mm": 18, "finish": "oil gilding"},
    {"code": "SLP-50", "profile": "slip", "width_mm": 50, "rebate_mm": 10, "finish": "water gilding"},
]
INPUTS = [
    {"order": "G-7001", "client": "Wenlock Gallery", "text": "Two frames: 50x60 cm canvas in Louis XIV swept, 30x40 cm panel in cassetta 60.", "stretcher_mm": 20},
    {"order": "G-7002", "client": "Mrs Adeyemi", "text": "One frame: 40x50 cm canvas in hogarth reverse.", "stretcher_mm": 18},
    {"order": "G-7003", "client": "St Cuthbert's parish", "text": "Three frames: 60x80 cm canvas in cassetta 90, 24x30 cm panel in hogarth reverse, 24x30 cm panel in hogarth reverse.", "stretcher_mm": 18},
    {"order": "G-7004", "client": "Dr Lindqvist", "text": "Two frames: 45x55 cm canvas in Louis XIV swept, 45x55 cm canvas in Louis XIV swept.", "stretcher_mm": 20},
    {"order": "G-7005", "client": "Marsh & Daughters", "text": "One frame: 70x90 cm canvas in cassetta 90.", "stretcher_mm": 22},
]
LEAF_CM2_PER_BOOK = 25 * 8 * 8  # 25 leaves of 8 x 8 cm
STOCK = {"today": 4, "yesterday": 14}
CASES = [
    dict(id="zzzp_gild_01", input=3, switch="a", fault_kind="wrong_retrieval", root=("find_moulding", 1, "retrieval"),
         failure=("place_order", 1), description="The moulding search for Louis XIV swept returns the Louis XV profile, whose rebate is too shallow for the stretcher."),
    dict(id="zzzp_gild_02", input=2, switch="b", fault_kind="off_by_one", root=("gold_leaf_calc", 1, "tool"),
         failure=("place_order", 1), description="The leaf calculation for the first frame sums three of the four sides of the frame."),
    dict(id="zzzp_gild_03", input=1, switch="c", fault_kind="hallucinated_value", root=("ChatCompletion", 1, "llm"),
         failure=("place_order", 1), description="The model extracts the frame as 50x60 cm although the customer asked for 40x50 cm."),
    dict(id="zzzp_gild_04", input=0, switch="d", fault_kind="lossy_parsing", root=("parse_quote", 1, "other"),
         failure=("place_order", 1), description="Parsing the model's answer keeps only the first frame of a two-frame order."),
    dict(id="zzzp_gild_05", input=4, switch="e", fault_kind="stale_data", root=("leaf_stock", 1, "tool"),
         failure=("reserve_leaf", 1), description="The leaf stock read returns yesterday's count of 14 books instead of today's 4, so the leaf is reserved from the workshop shelf, which refuses it."),
]


def policy(request):
    text = last_user(request)
    frames = []
    for m in re.finditer(r"(\d+)x(\d+) cm (canvas|panel) in ([a-zA-Z ]+?)(?: (\d+))?(?=,|\.)", text):
        w, h = int(m.group(1)), int(m.group(2))
        if SWITCH == "c" and not frames:
            w, h = w + 10, h + 10
        frames.append({"w_cm": w, "h_cm": h, "support": m.group(3), "profile": m.group(4).strip(),
                       "width_mm": int(m.group(5)) if m.group(5) else None})
    return "Frames:\n" + "\n".join(json.dumps(f) for f in frames)


def search_mouldings(profile, width_mm):
    hits = [m for m in MOULDINGS if m["profile"] == profile and (width_mm is None or m["width_mm"] == width_mm)]
    if SWITCH == "a":
        words = set(profile.split())
        hits = sorted(MOULDINGS, key=lambda m: -len(words & set(m["profile"].split())))[1:2] or hits
    return hits[:1]


def record(server, inp: dict, path: str) -> None:
    from openai import OpenAI

    begin_otlp()
    sp = Spans("gilder-order-desk")
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        with sp(RUN_NAME, "AGENT", inp) as top:
            with sp("intake", "CHAIN", inp) as o:
                request = {"order": inp["order"], "text": inp["text"]}
                o.value = request
            reply = client.chat.completions.create(model="gilder-model", messages=[
                {"role": "system", "content": "List each frame of the order as one JSON object per line."},
                {"role": "user", "content": request["text"]}])
            answer = reply.choices[0].message.content
            with sp("parse_quote", "CHAIN", {"text": answer}) as o:
                lines = [json.loads(l) for l in answer.splitlines()[1:] if l.strip()]
                if SWITCH == "d":
                    lines = [json.loads(answer.splitlines()[1])]
                o.value = lines
            total_cm2 = 0.0
            plan = []
            for i, fr in enumerate(lines):
                with sp("find_moulding", "RETRIEVER", {"profile": fr["profile"], "width_mm": fr["width_mm"]}) as o:
                    hits = search_mouldings(fr["profile"], fr["width_mm"])
                    o.value = hits
                mould = hits[0]
                with sp("gold_leaf_calc", "TOOL", {"frame": fr, "moulding": mould["code"]}) as o:
                    face_cm = mould["width_mm"] / 10 * 1.4  # swept face is wider than its width
                    sides = [fr["w_cm"], fr["h_cm"], fr["w_cm"], fr["h_cm"]]
                    span_sides = range(1, 4) if (SWITCH == "b" and i == 0) else range(0, 4)
                    perimeter = sum(sides[k] + 2 * mould["width_mm"] / 10 for k in span_sides)
                    cm2 = round(perimeter * face_cm, 1)
                    o.value = {"moulding": mould["code"], "leaf_cm2": cm2, "books": round(cm2 / LEAF_CM2_PER_BOOK, 2)}
                total_cm2 += cm2
                plan.append({"frame": fr, "moulding": mould, "leaf_cm2": cm2})
            books = int(-(-total_cm2 // LEAF_CM2_PER_BOOK)) + 1
            with sp("leaf_stock", "TOOL", {"leaf": "23.5ct double"}) as o:
                o.value = {"leaf": "23.5ct double", "books": STOCK["yesterday" if SWITCH == "e" else "today"]}
            stock = o.value["books"]
            source = "workshop" if stock >= books else "supplier"
            with sp("reserve_leaf", "TOOL", {"books": books, "from": source}) as o:
                if source == "workshop" and books > STOCK["today"]:
                    raise RuntimeError(f"workshop leaf store refused the reservation: {books} books asked, {STOCK['today']} on the shelf")
                o.value = {"reserved": books, "from": source}
            with sp("place_order", "TOOL", {"order": inp["order"], "frames": plan, "books": books}) as o:
                for k, p in enumerate(plan):
                    fr, mould = p["frame"], p["moulding"]
                    if mould["rebate_mm"] < inp["stretcher_mm"]:
                        raise ValueError(f"{inp['order']} frame {k + 1}: {mould['code']} rebate {mould['rebate_mm']} mm is shallower than the {inp['stretcher_mm']} mm stretcher")
                    need = round(2 * (fr["w_cm"] + fr["h_cm"] + 4 * mould["width_mm"] / 10) * mould["width_mm"] / 10 * 1.4, 1)
                    if p["leaf_cm2"] < 0.95 * need:
                        raise ValueError(f"{inp['order']} frame {k + 1}: {p['leaf_cm2']} cm2 of leaf allotted, the yield table gives {need} cm2")
                asked = re.findall(r"(\d+)x(\d+) cm", inp["text"])
                got = [f"{p['frame']['w_cm']}x{p['frame']['h_cm']}" for p in plan]
                if sorted(got) != sorted(f"{a}x{b}" for a, b in asked):
                    raise ValueError(f"{inp['order']}: frames {got} do not match the sizes on the work ticket {[f'{a}x{b}' for a, b in asked]}")
                o.value = {"order": inp["order"], "status": "placed", "frames": len(plan)}
            top.value = o.value
    except Exception:
        pass
    write_otlp(path)
