"""Crazy golf course parties: book a party round with food and a deposit (langgraph route)."""
import json
from typing import TypedDict

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

import common
import kit
from trajdebug.integrations.langchain import TrajdebugTracer

NAME, ROUTE, DOMAIN = "crazygolf-parties", "langgraph", "a crazy golf course's parties"
SHAPE = "intake (llm) -> parse -> course slots tool -> routed to kids or group package node -> loop per dietary group: menu lookup -> save party (memory tool) -> history -> confirmation (llm) -> deposit + receipt tools -> validate"

MENUS = {"standard": ["cheese pizza", "pepperoni pizza", "chips", "brownie"],
         "vegetarian": ["margherita pizza", "veggie wrap", "chips", "fruit cup"],
         "nut free": ["margherita pizza", "chips", "jelly pot"],
         "gluten free": ["gf pizza", "chips", "fruit cup"],
         "nut free (old)": ["margherita pizza", "chips", "praline brownie"]}
NUTS = {"praline brownie", "brownie"}
HISTORY = []  # the desk's shared chat history with customers


def _i(cid, host, date, kids, adults, age, diets, course):
    return {"id": cid, "host": host, "date": date, "kids": kids, "adults": adults, "age": age, "diets": diets,
            "course": course}


INPUTS = {
    "golf-1": _i("golf-1", "Ms Achebe", "2027-06-05", 10, 3, 8, {"standard": 7, "nut free": 3}, "Pirate Cove"),
    "golf-2": _i("golf-2", "Mr Lindqvist", "2027-06-06", 12, 4, 10, {"standard": 9, "vegetarian": 3}, "Jungle Temple"),
    "golf-3": _i("golf-3", "Mrs Haddad", "2027-06-12", 6, 8, 12, {"standard": 10, "gluten free": 4}, "Pirate Cove"),
    "golf-4": _i("golf-4", "Mr Brennan", "2027-06-13", 9, 2, 7, {"standard": 6, "vegetarian": 3, "nut free": 2}, "Jungle Temple"),
    "golf-5": _i("golf-5", "Ms Fairley", "2027-06-19", 14, 5, 9, {"standard": 12, "nut free": 2}, "Pirate Cove"),
}
REFS = [_i("golf-r1", "Mr Adeyemi", "2027-06-20", 8, 2, 6, {"standard": 6, "vegetarian": 2}, "Jungle Temple"),
        _i("golf-r2", "Mrs Sato", "2027-06-26", 11, 6, 11, {"standard": 8, "nut free": 3, "gluten free": 2}, "Pirate Cove"),
        _i("golf-r3", "Ms Okoro", "2027-06-27", 5, 9, 13, {"standard": 12, "vegetarian": 2}, "Jungle Temple"),
        _i("golf-r4", "Mr Vance", "2027-07-03", 13, 3, 8, {"standard": 10, "nut free": 3}, "Pirate Cove")]

CASES = [
    dict(id="golf-1", switch="golf_menu", kind="wrong_retrieval", root=("menu_lookup", 2),
         failure=("validate_party", 1),
         description="The menu lookup for the nut-free group retrieves last season's nut-free menu, which still lists a praline brownie."),
    dict(id="golf-2", switch="golf_memory", kind="bad_memory_write", root=("remember_party", 1),
         failure=("validate_party", 1),
         description="The party memory is saved with the children's count only, leaving the adults out of the headcount."),
    dict(id="golf-3", switch="golf_route", kind="wrong_routing", root=("pick_package", 1),
         failure=("validate_party", 1),
         description="The package router looks only at the birthday child's age and sends a mostly adult party to the kids package."),
    dict(id="golf-4", switch="golf_history", kind="context_pollution", root=("load_history", 1),
         failure=("validate_party", 1),
         description="The history loader hands the confirmation the previous customer's conversation, and the confirmation takes that party's tee time."),
    dict(id="golf-5", switch="golf_deposit", kind="swallowed_error", root=("take_deposit", 1),
         failure=("validate_party", 1),
         description="The deposit tool catches the card gateway's decline and reports the deposit as taken without a receipt."),
]


@tool
def course_slots(course: str, date: str) -> dict:
    """Free party tee times on a course."""
    return {"course": course, "date": date, "slots": ["11:00", "13:30", "16:00"]}


@tool
def package_price(package: str, guests: int) -> dict:
    """Price of a party package."""
    per = {"kids": 14.5, "group": 19.0}[package]
    return {"package": package, "per_head": per, "total": round(per * guests, 2)}


@tool
def menu_lookup(diet: str) -> dict:
    """Party menu for a dietary group."""
    key = "nut free (old)" if (kit.on("golf_menu") and diet == "nut free") else diet
    return {"diet": diet, "items": MENUS[key]}


@tool
def remember_party(party: dict) -> dict:
    """Save the party to the booking memory."""
    return {"saved": True, "party": party}


@tool
def take_deposit(host: str, amount: float) -> dict:
    """Take the party deposit on the card on file."""
    try:
        if kit.on("golf_deposit"):
            raise ConnectionError("card declined by issuer")
        return {"host": host, "amount": amount, "paid": True, "receipt": f"DEP-{sum(map(ord, host)) * 7 % 9000 + 1000}"}
    except ConnectionError:
        return {"host": host, "amount": amount, "paid": True, "receipt": None}


@tool
def email_receipt(host: str, receipt: str) -> dict:
    """Email the deposit receipt."""
    return {"to": host, "sent": True}


class S(TypedDict, total=False):
    request: str
    party: dict
    slots: dict
    package: dict
    diets: list
    i: int
    food: list
    memory: dict
    history: list
    confirmation: dict
    deposit: dict


def brain(inp):
    def answer(request):
        p = common.last_user(request)
        body = p.split("\n", 1)[1] if "\n" in p else "{}"
        if p.startswith("EXTRACT"):
            return json.dumps({k: inp[k] for k in ("host", "date", "kids", "adults", "age", "diets", "course")})
        if p.startswith("CONFIRM"):
            d = json.loads(body)
            src = d["history"][0] if d["history"] else d["party"]
            return json.dumps({"host": d["party"]["host"], "tee_time": src["tee_time"],
                               "text": f"See you at {d['party']['course']}!"})
        return "OK"
    return answer


def build(llm):
    def intake(s):
        return {"party": json.loads(llm.invoke("EXTRACT the party booking as JSON.\n" + s["request"]).content)}

    def parse_party(s):
        p = dict(s["party"])
        p["guests"] = p["kids"] + p["adults"]
        return {"party": p, "diets": sorted(p["diets"].items()), "i": 0, "food": []}

    def check_course(s):
        return {"slots": course_slots.invoke({"course": s["party"]["course"], "date": s["party"]["date"]})}

    def pick_package(s):
        p = s["party"]
        if kit.on("golf_route"):
            return "kids_package" if p["age"] <= 12 else "group_package"
        return "kids_package" if p["kids"] >= p["adults"] else "group_package"

    def kids_package(s):
        return {"package": package_price.invoke({"package": "kids", "guests": s["party"]["guests"]})}

    def group_package(s):
        return {"package": package_price.invoke({"package": "group", "guests": s["party"]["guests"]})}

    def order_food(s):
        diet, n = s["diets"][s["i"]]
        m = menu_lookup.invoke({"diet": diet})
        return {"food": s["food"] + [{"diet": diet, "portions": n, "items": m["items"]}], "i": s["i"] + 1}

    def more_food(s):
        return "order_food" if s["i"] < len(s["diets"]) else "save_party"

    def save_party(s):
        p = s["party"]
        heads = p["kids"] if kit.on("golf_memory") else p["guests"]
        rec = {"host": p["host"], "date": p["date"], "course": p["course"], "tee_time": s["slots"]["slots"][1],
               "headcount": heads, "package": s["package"]["package"]}
        return {"memory": remember_party.invoke({"party": rec})["party"]}

    def load_history(s):
        prior = [HISTORY[-1]] if (kit.on("golf_history") and HISTORY) else []
        return {"history": prior}

    def confirm(s):
        ans = llm.invoke("CONFIRM the booking to the host.\n" + json.dumps({"party": s["memory"], "history": s["history"]}))
        HISTORY.append(s["memory"])
        return {"confirmation": json.loads(ans.content)}

    def deposit(s):
        amt = round(s["package"]["total"] * 0.25, 2)
        d = take_deposit.invoke({"host": s["party"]["host"], "amount": amt})
        email_receipt.invoke({"host": s["party"]["host"], "receipt": str(d["receipt"])})
        return {"deposit": d}

    def validate_party(s):
        p, m = s["party"], s["memory"]
        for f in s["food"]:
            if f["diet"] == "nut free" and NUTS & set(f["items"]):
                raise ValueError(f"nut-free menu for {f['portions']} lists {sorted(NUTS & set(f['items']))}")
        if m["headcount"] != p["kids"] + p["adults"]:
            raise ValueError(f"booking saved for {m['headcount']} guests, party is {p['kids']} children and {p['adults']} adults")
        want = "kids" if p["kids"] >= p["adults"] else "group"
        if s["package"]["package"] != want:
            raise ValueError(f"{p['kids']} children and {p['adults']} adults booked on the {s['package']['package']} package")
        if s["confirmation"]["tee_time"] != m["tee_time"]:
            raise ValueError(f"confirmation says {s['confirmation']['tee_time']}, booking is at {m['tee_time']}")
        if s["deposit"]["paid"] and not s["deposit"]["receipt"]:
            raise ValueError(f"deposit of {s['deposit']['amount']} marked paid with no receipt")
        return {}

    g = StateGraph(S)
    for name, fn in [("intake", intake), ("parse_party", parse_party), ("check_course", check_course),
                     ("kids_package", kids_package), ("group_package", group_package), ("order_food", order_food),
                     ("save_party", save_party), ("load_history", load_history), ("confirm", confirm),
                     ("deposit", deposit), ("validate_party", validate_party)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "parse_party")
    g.add_edge("parse_party", "check_course")
    g.add_conditional_edges("check_course", pick_package, ["kids_package", "group_package"])
    g.add_edge("kids_package", "order_food")
    g.add_edge("group_package", "order_food")
    g.add_conditional_edges("order_food", more_food, ["order_food", "save_party"])
    g.add_edge("save_party", "load_history")
    g.add_edge("load_history", "confirm")
    g.add_edge("confirm", "deposit")
    g.add_edge("deposit", "validate_party")
    g.add_edge("validate_party", END)
    return g.compile()


def record(inp, path, seed):
    common.SERVER.use(brain(inp))
    HISTORY.clear()
    HISTORY.append({"host": "Mrs Whitcombe", "course": inp["course"], "tee_time": "10:15", "headcount": 12})
    llm = ChatOpenAI(base_url=common.SERVER.base_url, api_key="not-needed", model=common.SERVER.model,
                     max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"party booking {inp['id']}")
    request = (f"{inp['host']} wants a birthday party on {inp['date']} at {inp['course']}: {inp['kids']} children "
               f"(the birthday child turns {inp['age']}) and {inp['adults']} adults. Food: "
               + ", ".join(f"{n} {d}" for d, n in inp["diets"].items()) + ".")
    build(llm).invoke({"request": request}, config={"callbacks": [tracer], "recursion_limit": 60})
