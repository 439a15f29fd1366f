"""Monumental mason: turns a family's headstone order e-mail into a proof, a permit and a quote (sdk route)."""

from __future__ import annotations

import json
import re

import trajdebug

import kit
from _common import chat_client, dumps, fresh, last_user, system_of

NAME = "stonecraft-headstone-orders"
ROUTE = "sdk"
DOMAIN = "monumental mason: headstone orders"
SHAPE = ("input, model extracts the order, parse, order to run.state, cemetery rules, price each inscription "
         "line, stone-supplier sub-agent (stock search, model picks a blank, parse, reserve), permit, proof "
         "rendering (with retry), model writes the quote, parse, validator")
EXT = "jsonl"

ORDERS = [
    dict(order="HS-2231", client="Brendan O'Neill", deceased="MARGARET O'NEILL", cemetery="St Ives Road",
         section="B", plot="B-114", material="Blue Pearl granite", size_mm=[760, 560], style="V-cut gilt",
         lines=["IN LOVING MEMORY OF", "MARGARET O'NEILL", "1931 - 2025", "MUCH LOVED MUM AND NAN", "REUNITED"]),
    dict(order="HS-2232", client="Priya Shah", deceased="ARJUN SHAH", cemetery="Holloway Lane", section="L",
         plot="L-07", material="Rustenburg granite", size_mm=[610, 460], style="V-cut painted",
         lines=["ARJUN SHAH", "1948 - 2025", "FOREVER IN OUR HEARTS"]),
    dict(order="HS-2233", client="Gwen Pugh", deceased="DAVID PUGH", cemetery="St Ives Road", section="A",
         plot="A-031", material="Welsh slate", size_mm=[900, 600], style="V-cut plain",
         lines=["DAVID PUGH", "1939 - 2025", "HUSBAND, FATHER, GRANDAD", "AT REST"]),
    dict(order="HS-2234", client="Ellen Marsh", deceased="ROSE MARSH", cemetery="Holloway Lane", section="C",
         plot="C-212", material="Nero Impala granite", size_mm=[760, 610], style="V-cut gilt",
         lines=["IN LOVING MEMORY", "ROSE MARSH", "1927 - 2025", "SHE GAVE HER ALL"]),
    dict(order="HS-2235", client="Karl Dunne", deceased="PETER DUNNE", cemetery="Holloway Lane", section="L",
         plot="L-19", material="Blue Pearl granite", size_mm=[610, 510], style="V-cut painted",
         lines=["PETER DUNNE", "1950 - 2025", "GONE FISHING", "LOVED ALWAYS"]),
]
RULES = {
    "St Ives Road": {"sections": {"A": {"max_height_mm": 915}, "B": {"max_height_mm": 915},
                                  "L": {"max_height_mm": 760}}, "permit_fee": 120},
    "Holloway Lane": {"sections": {"L": {"max_height_mm": 760}, "C": {"max_height_mm": 915}},
                      "permit_fee": 95},
}
LETTER_PRICE = {"V-cut gilt": 4.5, "V-cut painted": 3.0, "V-cut plain": 2.0}
STOCK = [
    {"blank": "BP-760-560", "material": "Blue Pearl granite", "size_mm": [760, 560], "price": 1450},
    {"blank": "BP-610-510", "material": "Blue Pearl granite", "size_mm": [610, 510], "price": 1180},
    {"blank": "NI-760-610", "material": "Nero Impala granite", "size_mm": [760, 610], "price": 1390},
    {"blank": "NI-760-560", "material": "Nero Impala granite", "size_mm": [760, 560], "price": 1320},
    {"blank": "RB-610-460", "material": "Rustenburg granite", "size_mm": [610, 460], "price": 990},
    {"blank": "WS-900-600", "material": "Welsh slate", "size_mm": [900, 600], "price": 1210},
]
FIXING_FEE = 150


def email_of(o: dict) -> str:
    return ("Dear Stonecraft,\nFurther to our visit, please go ahead with the headstone for my late relative in "
            "plot %s, section %s, %s cemetery. We chose %s, %d x %d mm, with %s lettering.\n\nInscription:\n%s\n\n"
            "Kind regards,\n%s" % (o["plot"], o["section"], o["cemetery"], o["material"], o["size_mm"][0],
                                  o["size_mm"][1], o["style"], "\n".join(o["lines"]), o["client"]))


INPUTS = [{"order": o["order"], "email": email_of(o)} for o in ORDERS]
BY_ORDER = {o["order"]: o for o in ORDERS}

C_LOSSY, C_HALLU, C_MEM, C_SUB, C_TRUNC = "zzq-mas-1", "zzq-mas-2", "zzq-mas-3", "zzq-mas-4", "zzq-mas-5"
CASES = [
    dict(id=C_LOSSY, input=0, kind="lossy_parsing", root=("parse_order", 1, "parse"), failure=("validate_order", 1),
         description="parse_order cleans inscription lines down to letters, digits, spaces and hyphens, dropping "
                     "the apostrophe of O'NEILL, so the proof no longer matches the approved text"),
    dict(id=C_HALLU, input=1, kind="hallucinated_value", root=("write_quote", 1, "llm"),
         failure=("validate_order", 1),
         description="the quote-writing model states a fixing fee of GBP 185 that none of its inputs give "
                     "(the fee is 150), so the quote total does not add up"),
    dict(id=C_MEM, input=2, kind="bad_memory_write", root=("remember_order", 1, "state"),
         failure=("validate_order", 1),
         description="remember_order reads the section under a key the parsed order lacks and stores the "
                     "default lawn section L, so the permit is filed for section L instead of A"),
    dict(id=C_SUB, input=3, kind="subagent_wrong_entity", root=("choose_blank", 1, "llm"),
         failure=("validate_order", 1),
         description="inside the stone-supplier sub-agent the model picks blank NI-760-560 (560 mm wide) for a "
                     "760 x 610 mm Nero Impala stone, the neighbouring stock line"),
    dict(id=C_TRUNC, input=4, kind="truncated_result", root=("render_proof", 2, "tool"),
         failure=("validate_order", 1),
         description="the proof service's retried render comes back cut at 48 characters, shortening the last "
                     "inscription line, and is accepted as the proof"),
]


@trajdebug.step(kind="input")
def load_order(order: dict) -> dict:
    return dict(order)


@trajdebug.step(kind="llm")
def extract_order(messages: list) -> str:
    return CLIENT.chat.completions.create(model="fake-model", messages=messages).choices[0].message.content


@trajdebug.step(kind="parse")
def parse_order(text: str) -> dict:
    data = json.loads(text)
    lines = [ln.strip() for ln in data["inscription"].split("\n") if ln.strip()]
    if kit.on(C_LOSSY):
        lines = [re.sub(r"[^A-Z0-9 \-,]", "", ln) for ln in lines]
    data["inscription"] = lines
    data["size_mm"] = [int(x) for x in data["size"].lower().replace("mm", "").split("x")]
    return data


@trajdebug.step(kind="state")
def remember_order(order: dict) -> dict:
    key = "section_name" if kit.on(C_MEM) else "section"
    section = order.get(key, "L")
    note = {"order": order["order"], "plot": order["plot"], "section": section, "cemetery": order["cemetery"]}
    trajdebug.current_run().state["order"] = note
    return note


@trajdebug.step(kind="tool")
def fetch_cemetery_rules(cemetery: str) -> dict:
    return json.loads(json.dumps(RULES[cemetery]))


@trajdebug.step(kind="tool")
def price_line(line: str, style: str) -> dict:
    letters = sum(1 for c in line if c.isalnum())
    return {"line": line, "letters": letters, "price": round(letters * LETTER_PRICE[style], 2)}


@trajdebug.step(kind="tool")
def search_stock(material: str) -> list:
    return [b for b in STOCK if b["material"].split()[0] == material.split()[0]]


@trajdebug.step(kind="llm")
def choose_blank(messages: list) -> str:
    return CLIENT.chat.completions.create(model="fake-model", messages=messages).choices[0].message.content


@trajdebug.step(kind="parse")
def parse_choice(text: str, candidates: list) -> dict:
    blank_id = re.search(r"[A-Z]{2}-\d{3}-\d{3}", text).group(0)
    return next(b for b in candidates if b["blank"] == blank_id)


@trajdebug.step(kind="tool")
def reserve_blank(blank: str, order: str) -> dict:
    return {"blank": blank, "order": order, "reservation": "RSV-%s" % order[-4:]}


@trajdebug.step(kind="agent")
def stone_supplier(order: dict) -> dict:
    candidates = search_stock(order["material"])
    text = choose_blank([
        {"role": "system", "content": "You pick the stock blank a headstone is cut from. Answer with the blank id "
                                      "and one sentence why."},
        {"role": "user", "content": dumps({"material": order["material"], "size_mm": order["size_mm"],
                                           "candidates": candidates})},
    ])
    blank = parse_choice(text, candidates)
    reserve_blank(blank["blank"], order["order"])
    return blank


@trajdebug.step(kind="tool")
def apply_for_permit() -> dict:
    note = trajdebug.current_run().state["order"]
    return {"permit": "P-%s-%s" % (note["section"], note["order"][-4:]), "cemetery": note["cemetery"],
            "section": note["section"], "plot": note["plot"]}


class ProofTimeout(Exception):
    pass


_CALLS: dict = {}


@trajdebug.step(kind="tool")
def render_proof(order: str, lines: list, style: str) -> dict:
    n = _CALLS[order] = _CALLS.get(order, 0) + 1
    if order in ("HS-2235", "HS-2232") and n == 1:
        raise ProofTimeout("proof renderer busy, try again")
    text = "\n".join(lines)
    if kit.on(C_TRUNC):
        text = text[:48]
    return {"order": order, "proof_text": text, "style": style, "proof": "PRF-%s-%d" % (order[-4:], n)}


@trajdebug.step(kind="llm")
def write_quote(messages: list) -> str:
    return CLIENT.chat.completions.create(model="fake-model", messages=messages).choices[0].message.content


@trajdebug.step(kind="parse")
def parse_quote(text: str) -> dict:
    amounts = {k: float(v) for k, v in re.findall(r"(blank|lettering|fixing|permit|total) GBP (\d+(?:\.\d+)?)", text)}
    return amounts


@trajdebug.step(kind="condition")
def validate_order(request: dict, order: dict, rules: dict, blank: dict, permit: dict, proof: dict,
                   lines: list, quote: dict) -> dict:
    approved = request["email"].split("Inscription:\n")[1].split("\n\n")[0].splitlines()
    got = proof["proof_text"].splitlines()
    if got != approved:
        raise ValueError("proof %s has %d lines %r, the approved inscription %d lines %r"
                         % (proof["proof"], len(got), got, len(approved), approved))
    section = re.search(r"section (\w+)", request["email"]).group(1)
    if permit["section"] != section:
        raise ValueError("permit %s filed for section %s, plot %s is in section %s"
                         % (permit["permit"], permit["section"], permit["plot"], section))
    if blank["material"] != order["material"] or blank["size_mm"] != order["size_mm"]:
        raise ValueError("blank %s is %s %s mm, the order is %s %s mm" % (
            blank["blank"], blank["material"], blank["size_mm"], order["material"], order["size_mm"]))
    if order["size_mm"][0] > rules["sections"][section]["max_height_mm"]:
        raise ValueError("stone height %d mm above section %s limit" % (order["size_mm"][0], section))
    expected = blank["price"] + sum(l["price"] for l in lines) + FIXING_FEE + rules["permit_fee"]
    if abs(quote.get("total", -1) - expected) > 0.01:
        raise ValueError("quote total GBP %.2f, parts add up to GBP %.2f" % (quote.get("total", -1), expected))
    return {"ok": True, "order": order["order"], "total": expected}


def brain(request):
    system = system_of(request)
    user = last_user(request)
    if system.startswith("You read headstone orders"):
        o = BY_ORDER[re.search(r"HS-\d{4}", user).group(0)]
        return json.dumps({"order": o["order"], "deceased": o["deceased"], "cemetery": o["cemetery"],
                           "section": o["section"], "plot": o["plot"], "material": o["material"],
                           "size": "%d x %d mm" % tuple(o["size_mm"]), "style": o["style"],
                           "inscription": "\n".join(o["lines"])})
    if system.startswith("You pick the stock blank"):
        data = json.loads(user)
        fits = [c for c in data["candidates"] if c["size_mm"] == data["size_mm"]]
        pick = fits[0]
        if kit.on(C_SUB):
            pick = [c for c in data["candidates"] if c["size_mm"][0] == data["size_mm"][0] and c != pick][0]
        return "%s: %s in %d x %d mm, cut to size with the least waste." % (
            pick["blank"], pick["material"], pick["size_mm"][0], pick["size_mm"][1])
    if system.startswith("You write the customer's quote"):
        data = json.loads(user)
        fixing = data["fixing_fee"]
        if kit.on(C_HALLU):
            fixing = 185
        total = data["blank_price"] + data["lettering"] + fixing + data["permit_fee"]
        return ("Quote for %s: blank GBP %.2f, lettering GBP %.2f, fixing GBP %.2f, permit GBP %.2f, "
                "total GBP %.2f. Work starts once the permit is granted." % (
                    data["order"], data["blank_price"], data["lettering"], fixing, data["permit_fee"], total))
    return "I cannot help with that."


CLIENT = None


def record(server, inp: dict, path: str) -> None:
    global CLIENT
    CLIENT = chat_client(server)
    server.use(brain)
    _CALLS.clear()
    fresh(path)
    try:
        with trajdebug.run(NAME, path=path, task="prepare headstone order %s" % inp["order"]):
            req = load_order(inp)
            text = extract_order([
                {"role": "system", "content": "You read headstone orders from families. Answer JSON with order, "
                                              "deceased, cemetery, section, plot, material, size, style, "
                                              "inscription (lines joined by newlines)."},
                {"role": "user", "content": "Order %s\n\n%s" % (req["order"], req["email"])},
            ])
            order = parse_order(text)
            remember_order(order)
            rules = fetch_cemetery_rules(order["cemetery"])
            lines = [price_line(ln, order["style"]) for ln in order["inscription"]]
            blank = stone_supplier(order)
            permit = apply_for_permit()
            try:
                proof = render_proof(order["order"], order["inscription"], order["style"])
            except ProofTimeout:
                proof = render_proof(order["order"], order["inscription"], order["style"])
            qtext = write_quote([
                {"role": "system", "content": "You write the customer's quote for a headstone from the figures "
                                              "given. Name every amount in GBP."},
                {"role": "user", "content": dumps({"order": order["order"], "blank_price": blank["price"],
                                                   "lettering": round(sum(l["price"] for l in lines), 2),
                                                   "fixing_fee": FIXING_FEE, "permit_fee": rules["permit_fee"]})},
            ])
            quote = parse_quote(qtext)
            validate_order(req, order, rules, blank, permit, proof, lines, quote)
    except ValueError:
        pass
