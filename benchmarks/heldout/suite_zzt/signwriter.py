"""Sign-writer shopfront commissions: plan, price and proof a hand-lettered shopfront (langgraph route)."""
import json
import re
import unicodedata
from typing import TypedDict

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

import common
import kit
from trajdebug.integrations.langchain import TrajdebugTracer

NAME, ROUTE, DOMAIN = "signwriter-commissions", "langgraph", "a sign-writer's shopfront commissions"
SHAPE = "intake (llm) -> parse brief -> plan panels (llm) -> loop per panel: lettering check + paint quote tools -> proof studio sub-graph (find shop, draft proof llm, spell check) -> cover letter (llm) -> total -> validate"

SHOPS = [
    {"shop_id": "S-11", "name": "Café Olé", "street": "Mill Lane"},
    {"shop_id": "S-12", "name": "Mill Lane Barbers", "street": "Mill Lane"},
    {"shop_id": "S-21", "name": "Hartley & Sons Ironmongers", "street": "Queen Street"},
    {"shop_id": "S-22", "name": "Queen Street Pharmacy", "street": "Queen Street"},
    {"shop_id": "S-31", "name": "Björk Bakery", "street": "Tanner Row"},
    {"shop_id": "S-41", "name": "Greaves Fishmonger", "street": "Harbour Road"},
    {"shop_id": "S-42", "name": "Harbour Road Chandlery", "street": "Harbour Road"},
    {"shop_id": "S-51", "name": "The Olive Tree", "street": "Castle Gate"},
    {"shop_id": "S-61", "name": "Nolan's Tailoring", "street": "Bridge End"},
    {"shop_id": "S-71", "name": "Pennywhistle Toys", "street": "Market Row"},
    {"shop_id": "S-81", "name": "Ruiz Florería", "street": "Abbey Walk"},
    {"shop_id": "S-91", "name": "Dunmore Books", "street": "College Yard"},
]
MIN_HEIGHT = {"fascia": 150, "window": 60, "hanging sign": 100, "door glass": 40}


def _i(cid, shop_id, panels, finish):
    shop = next(s for s in SHOPS if s["shop_id"] == shop_id)
    return {"id": cid, "shop": shop, "panels": panels, "finish": finish}


INPUTS = {
    "sign-1": _i("sign-1", "S-21", [["fascia", 200], ["window", 80], ["door glass", 50]], "enamel"),
    "sign-2": _i("sign-2", "S-11", [["fascia", 180], ["window", 70]], "gold leaf"),
    "sign-3": _i("sign-3", "S-41", [["fascia", 220], ["hanging sign", 120], ["window", 75]], "enamel"),
    "sign-4": _i("sign-4", "S-12", [["fascia", 170], ["door glass", 45]], "enamel"),
    "sign-5": _i("sign-5", "S-51", [["fascia", 190], ["window", 65], ["hanging sign", 110]], "gold leaf"),
}
REFS = [_i("sign-r1", "S-31", [["fascia", 160], ["window", 60]], "gold leaf"),
        _i("sign-r2", "S-61", [["fascia", 210], ["door glass", 40], ["hanging sign", 100]], "enamel"),
        _i("sign-r3", "S-81", [["fascia", 175], ["window", 90]], "enamel"),
        _i("sign-r4", "S-91", [["fascia", 200], ["window", 70], ["door glass", 45]], "gold leaf")]

CASES = [
    dict(id="sign-1", switch="sign_height", kind="format_drift", root=("ChatOpenAI", 2),
         failure=("validate_commission", 1),
         description="The panel plan gives the fascia letter height as a text in inches instead of a number of millimetres."),
    dict(id="sign-2", switch="sign_ascii", kind="lossy_parsing", root=("parse_brief", 1),
         failure=("validate_commission", 1),
         description="The brief parser folds the shop name to plain ASCII and drops its accented letters."),
    dict(id="sign-3", switch="sign_plan", kind="plan_error", root=("ChatOpenAI", 2),
         failure=("validate_commission", 1),
         description="The panel plan leaves out the hanging sign the customer commissioned."),
    dict(id="sign-4", switch="sign_shop", kind="subagent_wrong_entity", root=("find_shop", 1),
         failure=("validate_commission", 1),
         description="The proof sub-graph looks the shop up by street and takes the neighbouring shop's record."),
    dict(id="sign-5", switch="sign_lines", kind="truncated_result", root=("paint_quote", 3),
         failure=("validate_commission", 1),
         description="The paint quote for one panel comes back cut after its first lines, without the topcoat."),
]


@tool
def lettering_check(panel: str, height_mm: float) -> dict:
    """Check letter height for a panel against the legibility table."""
    return {"panel": panel, "height_mm": height_mm, "viewing_m": round(height_mm / 25, 1)}


@tool
def paint_quote(panel: str, letters: int, finish: str) -> dict:
    """Quote paint and labour for one panel."""
    items = [{"item": "primer", "cost": 18.0}, {"item": finish, "cost": round(letters * (9.5 if finish == "gold leaf" else 4.0), 2)},
             {"item": "labour", "cost": round(letters * 6.0, 2)}, {"item": "topcoat varnish", "cost": 22.0}]
    if kit.on("sign_lines") and panel == "hanging sign":
        items = items[:3]
    return {"panel": panel, "items": items}


@tool
def find_shop(street: str, name_hint: str) -> dict:
    """Find the shop record for a commission."""
    on_street = [s for s in SHOPS if s["street"] == street]
    if kit.on("sign_shop"):
        return on_street[0]
    def plain(t):
        return unicodedata.normalize("NFKD", t).encode("ascii", "ignore").decode().lower()
    return next(s for s in on_street if plain(s["name"]) == plain(name_hint))


@tool
def spell_check(text: str) -> dict:
    """Spell check the lettering."""
    return {"text": text, "issues": []}


class S(TypedDict, total=False):
    request: str
    request_shop: str
    raw: str
    brief: dict
    panels: list
    i: int
    quotes: list
    proof: dict
    letter: str
    total: dict


def brain(inp):
    def answer(request):
        p = common.last_user(request)
        body = p.split("\n", 1)[1] if "\n" in p else "{}"
        if p.startswith("BRIEF"):
            return json.dumps({"shop": inp["shop"]["name"], "street": inp["shop"]["street"], "finish": inp["finish"],
                               "panels": [x for x, _ in inp["panels"]]})
        if p.startswith("PANELS"):
            d = json.loads(body)
            out = []
            for name, h in inp["panels"]:
                if kit.on("sign_plan") and name == "hanging sign":
                    continue
                height = f"{round(h / 25.4)}in" if (kit.on("sign_height") and name == "fascia") else h
                out.append({"panel": name, "text": d["shop"].upper() if name != "door glass" else "PUSH",
                            "height_mm": height})
            return json.dumps(out)
        if p.startswith("PROOF"):
            d = json.loads(body)
            return json.dumps({"shop_id": d["shop_id"], "fascia_text": d["name"].upper(), "layout": "centred, shaded"})
        if p.startswith("LETTER"):
            return "Dear customer, please find the proof and quote for your shopfront attached."
        return "OK"
    return answer


def build(llm):
    def intake(s):
        return {"raw": llm.invoke("BRIEF: extract the commission as JSON.\n" + s["request"]).content}

    def parse_brief(s):
        b = json.loads(s["raw"])
        if kit.on("sign_ascii"):
            b["shop"] = unicodedata.normalize("NFKD", b["shop"]).encode("ascii", "ignore").decode()
        return {"brief": b}

    def plan_panels(s):
        ans = llm.invoke("PANELS: plan the lettering per panel.\n" + json.dumps(s["brief"], ensure_ascii=False))
        return {"panels": json.loads(ans.content), "i": 0, "quotes": []}

    def measure_panel(s):
        p = s["panels"][s["i"]]
        h = p["height_mm"]
        h = float(re.sub(r"[^\d.]", "", h)) if isinstance(h, str) else float(h)
        chk = lettering_check.invoke({"panel": p["panel"], "height_mm": h})
        letters = len(p["text"].replace(" ", ""))
        q = paint_quote.invoke({"panel": p["panel"], "letters": letters, "finish": s["brief"]["finish"]})
        q = dict(q, height_mm=chk["height_mm"], total=round(sum(x["cost"] for x in q["items"]), 2))
        return {"quotes": s["quotes"] + [q], "i": s["i"] + 1}

    def more(s):
        return "measure_panel" if s["i"] < len(s["panels"]) else "proof_studio"

    class P(TypedDict, total=False):
        brief: dict
        shop: dict
        draft: dict
        checked: dict

    def locate(ps):
        return {"shop": find_shop.invoke({"street": ps["brief"]["street"], "name_hint": ps["brief"]["shop"]})}

    def draft(ps):
        return {"draft": json.loads(llm.invoke("PROOF: draft the fascia proof.\n" + json.dumps({"shop_id": ps["shop"]["shop_id"], "name": ps["brief"]["shop"]}, ensure_ascii=False)).content)}

    def check(ps):
        return {"checked": spell_check.invoke({"text": ps["draft"]["fascia_text"]})}

    sub = StateGraph(P)
    sub.add_node("locate_shop", locate)
    sub.add_node("draft_proof", draft)
    sub.add_node("check_lettering", check)
    sub.add_edge(START, "locate_shop")
    sub.add_edge("locate_shop", "draft_proof")
    sub.add_edge("draft_proof", "check_lettering")
    sub.add_edge("check_lettering", END)
    studio = sub.compile()

    def proof_studio(s):
        out = studio.invoke({"brief": s["brief"]})
        return {"proof": dict(out["draft"], shop=out["shop"]["name"], shop_id=out["shop"]["shop_id"])}

    def cover_letter(s):
        return {"letter": llm.invoke("LETTER: write the cover letter.\n" + json.dumps(s["proof"], ensure_ascii=False)).content}

    def total_quote(s):
        return {"total": {"panels": len(s["quotes"]), "amount": round(sum(q["total"] for q in s["quotes"]), 2)}}

    def validate_commission(s):
        b = s["brief"]
        for q in s["quotes"]:
            if q["height_mm"] < MIN_HEIGHT[q["panel"]]:
                raise ValueError(f"{q['panel']} letters at {q['height_mm']} mm, below the {MIN_HEIGHT[q['panel']]} mm minimum")
            if not any(x["item"] == "topcoat varnish" for x in q["items"]):
                raise ValueError(f"{q['panel']} quote of {q['total']} has no topcoat line")
        planned = {q["panel"] for q in s["quotes"]}
        missing = [p for p in b["panels"] if p not in planned]
        if missing:
            raise ValueError(f"commissioned panels {missing} are not in the plan")
        if s["proof"]["shop"] != s["request_shop"]:
            raise ValueError(f"proof drawn up for {s['proof']['shop']} ({s['proof']['shop_id']}), commission is for {s['request_shop']}")
        if s["proof"]["fascia_text"] != s["request_shop"].upper():
            raise ValueError(f"proof reads '{s['proof']['fascia_text']}', commission is for '{s['request_shop']}'")
        return {"total": dict(s["total"], approved=True)}

    g = StateGraph(S)
    for name, fn in [("intake", intake), ("parse_brief", parse_brief), ("plan_panels", plan_panels),
                     ("measure_panel", measure_panel), ("proof_studio", proof_studio), ("cover_letter", cover_letter),
                     ("total_quote", total_quote), ("validate_commission", validate_commission)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "parse_brief")
    g.add_edge("parse_brief", "plan_panels")
    g.add_edge("plan_panels", "measure_panel")
    g.add_conditional_edges("measure_panel", more, ["measure_panel", "proof_studio"])
    g.add_edge("proof_studio", "cover_letter")
    g.add_edge("cover_letter", "total_quote")
    g.add_edge("total_quote", "validate_commission")
    g.add_edge("validate_commission", END)
    return g.compile()


def record(inp, path, seed):
    common.SERVER.use(brain(inp))
    llm = ChatOpenAI(base_url=common.SERVER.base_url, api_key="not-needed", model=common.SERVER.model,
                     max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"shopfront commission {inp['id']}")
    request = (f"New commission from {inp['shop']['name']}, {inp['shop']['street']}: "
               + ", ".join(f"{p} lettering about {h} mm" for p, h in inp["panels"]) + f"; finish in {inp['finish']}.")
    build(llm).invoke({"request": request, "request_shop": inp["shop"]["name"]},
                      config={"callbacks": [tracer], "recursion_limit": 60})
