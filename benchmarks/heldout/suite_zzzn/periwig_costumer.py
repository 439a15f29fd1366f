"""Periwig theatrical costumer: fitting a production's cast (route: sdk)."""
import json

from openai import OpenAI

import trajdebug

NAME = "periwig-production-fittings"
ROUTE = "sdk"
DOMAIN = "periwig theatrical costumer"
SHAPE = "loop over cast members, each a fitting sub-agent (measure tool with a retry, model advice, parse, reserve into run.state); final sheet asserts"
SWITCH = None
SERVER = None

CASTS = {
    "School for Scandal": [("Lady Teazle", "22.5"), ("Sir Peter", "23.25"), ("Joseph Surface", "22.75"),
                           ("Charles Surface", "23.0"), ("Mrs Candour", "21.5")],
    "The Rivals": [("Mrs Malaprop", "21.75"), ("Captain Absolute", "23.5"), ("Lydia Languish", "21.25"),
                   ("Bob Acres", "22.5")],
    "She Stoops to Conquer": [("Kate Hardcastle", "21.5"), ("Marlow", "23.0"), ("Tony Lumpkin", "22.25")],
    "The Beggar's Opera": [("Macheath", "23.25"), ("Polly Peachum", "21.5"), ("Lucy Lockit", "21.75"),
                           ("Peachum", "22.5"), ("Mrs Peachum", "22.0"), ("Lockit", "23.5")],
    "The Way of the World": [("Millamant", "21.25"), ("Mirabell", "23.0"), ("Lady Wishfort", "22.0"),
                             ("Fainall", "22.75")],
}
STOCK = {"bag wig": 9, "full-bottomed": 6, "pompadour": 8, "tie wig": 7, "toupee": 5}
STOCK_LAST_SEASON = {"bag wig": 2, "full-bottomed": 1, "pompadour": 0, "tie wig": 1, "toupee": 0}
INPUTS = [{"task": f"fit the cast of {p}", "production": p, "opens": d} for p, d in [
    ("School for Scandal", "2027-02-03"), ("The Rivals", "2027-03-10"), ("She Stoops to Conquer", "2027-04-21"),
    ("The Beggar's Opera", "2027-05-26"), ("The Way of the World", "2027-06-30")]]
CASES = [
    dict(id="zn06", input=3, switch="stock", kind="swallowed_error", root=("wig_stock", 1), failure=None,
         desc="The first bag-wig stock lookup hit a ledger timeout that was caught and answered as zero in stock, so no wig was held for Macheath."),
    dict(id="zn07", input=0, switch="who", kind="subagent_wrong_entity", root=("fitting", 2), failure=None,
         desc="The second fitting measured and reserved for Joseph Surface instead of Sir Peter."),
    dict(id="zn08", input=3, switch="cast", kind="truncated_result", root=("cast_list", 1), failure=None,
         desc="The cast list came back cut at five names, leaving Lockit out of the fittings."),
    dict(id="zn09", input=1, switch="inches", kind="lossy_parsing", root=("parse_measure", 2), failure=None,
         desc="The parser kept only the whole inches of Captain Absolute's head, dropping the half inch."),
    dict(id="zn10", input=4, switch="season", kind="stale_data", root=("wig_stock", 1), failure=None,
         desc="The stock count was read from last season's inventory snapshot, which shows almost no wigs left."),
]
STYLE = {"Lady": "pompadour", "Sir": "full-bottomed", "Captain": "tie wig", "Mrs": "pompadour", "Mr": "bag wig"}


def policy(request):
    ask = json.loads(request.body["messages"][-1]["content"])
    first = ask["role"].split()[0]
    style = STYLE.get(first, "bag wig" if ask["head_in"] >= 22.5 else "toupee")
    return json.dumps({"style": style, "powder": "lavender" if style == "pompadour" else "white"})


@trajdebug.step(kind="input")
def production_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="tool")
def cast_list(production: str) -> list:
    cast = [{"role": r, "head": h} for r, h in CASTS[production]]
    return cast[:5] if SWITCH == "cast" else cast


_ATTEMPTS = {}


@trajdebug.step(kind="tool")
def measure_head(role: str, card: dict) -> str:
    _ATTEMPTS[role] = _ATTEMPTS.get(role, 0) + 1
    if role.startswith("M") and _ATTEMPTS[role] == 1:
        raise TimeoutError("measuring-card archive did not answer in 2 s")
    return f'{card["head"]} in'


@trajdebug.step(kind="parse")
def parse_measure(text: str) -> float:
    number = text.split()[0]
    return float(number.split(".")[0]) if SWITCH == "inches" and number == "23.5" else float(number)


@trajdebug.step(kind="llm")
def style_advice(messages: list) -> dict:
    client = OpenAI(base_url=SERVER.base_url, api_key="not-needed", max_retries=0)
    reply = client.chat.completions.create(model=SERVER.model, messages=messages)
    return json.loads(reply.choices[0].message.content)


@trajdebug.step(kind="tool")
def wig_stock(style: str) -> dict:
    if SWITCH == "season":
        return {"style": style, "in_stock": STOCK_LAST_SEASON[style]}
    if SWITCH == "stock" and style == "bag wig" and _ATTEMPTS.get("stock", 0) == 0:
        _ATTEMPTS["stock"] = 1
        try:
            raise TimeoutError("stockroom ledger timed out")
        except TimeoutError:
            return {"style": style, "in_stock": 0}
    return {"style": style, "in_stock": STOCK[style]}


@trajdebug.step(kind="state")
def reserve_wig(role: str, head_in: float, advice: dict, stock: dict) -> dict:
    state = trajdebug.current_run().state
    held = state.get(f"held:{advice['style']}", 0)
    if stock["in_stock"] - held <= 0:
        return {"role": role, "reserved": None}
    state[f"held:{advice['style']}"] = held + 1
    size = "small" if head_in < 22 else ("medium" if head_in < 23.5 else "large")
    state[f"wig:{role}"] = {"style": advice["style"], "size": size, "powder": advice["powder"]}
    return {"role": role, "reserved": advice["style"], "size": size}


def fitting(role: str, cards: list) -> dict:
    with trajdebug.step("fitting", kind="agent", input={"role": role}) as f:
        card = next(c for c in cards if c["role"] == role)
        if SWITCH == "who" and role == "Sir Peter":
            card = cards[2]
        for attempt in (1, 2):
            try:
                text = measure_head(card["role"], card)
                break
            except TimeoutError:
                if attempt == 2:
                    raise
        head = parse_measure(text)
        advice = style_advice([
            {"role": "system", "content": "Suggest a period wig style and powder for the role. Answer JSON."},
            {"role": "user", "content": json.dumps({"role": card["role"], "head_in": head})}])
        stock = wig_stock(advice["style"])
        f.output = reserve_wig(card["role"], head, advice, stock)
    return f.output


@trajdebug.step(kind="output", attributes={"final": True})
def production_sheet(production: str, cast: list) -> dict:
    state = trajdebug.current_run().state
    expected = len(CASTS[production])
    assert len(cast) == expected, f"sheet lists {len(cast)} roles; the production has {expected}"
    sheet = {}
    for member in cast:
        wig = state.get(f"wig:{member['role']}")
        assert wig is not None, f"no wig held for {member['role']}"
        head = float(member["head"])
        want = "small" if head < 22 else ("medium" if head < 23.5 else "large")
        assert wig["size"] == want, f"{member['role']} needs a {want} cap, the held wig is {wig['size']}"
        sheet[member["role"]] = wig
    return sheet


def run_one(inp, path):
    _ATTEMPTS.clear()
    try:
        with trajdebug.run(NAME, task=inp["task"], path=path):
            request = production_request(inp)
            cast = cast_list(request["production"])
            for member in cast:
                fitting(member["role"], cast)
            production_sheet(request["production"], cast)
    except AssertionError:
        pass
