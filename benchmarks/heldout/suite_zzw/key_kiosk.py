"""A key cutting kiosk's day of jobs: read the ticket book, spec each cut, check stock, bill, close the day."""

import json

import kit

NAME = "key-kiosk"
ROUTE = "sdk"
DOMAIN = "a key cutting kiosk's jobs"
SHAPE = "read tickets -> per job (blank lookup, cut spec, parse, stock check with retry, state) -> billing sub-agent -> receipt -> validator"
SYSTEM = "You run a key cutting kiosk. Answer with the requested text only."

BLANKS = {
    "KW1": {"pins": 5, "metal": "brass"}, "UL050": {"pins": 5, "metal": "nickel"},
    "YA1": {"pins": 6, "metal": "brass"}, "SC1": {"pins": 5, "metal": "nickel"},
    "ABUS-65": {"pins": 6, "metal": "steel"}, "FIAT-GT15": {"pins": 8, "metal": "steel"},
}
PRICES = {"KW1": 450, "UL050": 550, "YA1": 500, "SC1": 450, "ABUS-65": 700, "FIAT-GT15": 1500}

INPUTS = {
    "a": {"tickets": [["J-301", "KW1", 2, "Ali"], ["J-302", "UL050", 1, "Brown"], ["J-303", "YA1", 3, "Chen"]]},
    "b": {"tickets": [["J-311", "SC1", 12, "Dunn"], ["J-312", "KW1", 1, "Evans"], ["J-313", "ABUS-65", 2, "Ford"]]},
    "c": {"tickets": [["J-321", "YA1", 2, "Gray"], ["J-322", "KW1", 3, "Iqbal"], ["J-323", "SC1", 1, "Jones"],
                      ["J-324", "ABUS-65", 1, "Hale"]]},
    "d": {"tickets": [["J-331", "FIAT-GT15", 1, "Khan"], ["J-332", "UL050", 2, "Lowe"]]},
    "e": {"tickets": [["J-341", "KW1", 1, "Moss"], ["J-342", "SC1", 2, "Nash"], ["J-343", "FIAT-GT15", 1, "Owen"],
                      ["J-344", "YA1", 4, "Park"]]},
    "f": {"tickets": [["J-351", "UL050", 3, "Quinn"], ["J-352", "YA1", 1, "Reid"]]},
    "g": {"tickets": [["J-361", "ABUS-65", 1, "Shaw"], ["J-362", "KW1", 2, "Todd"], ["J-363", "SC1", 1, "Usher"]]},
    "h": {"tickets": [["J-371", "YA1", 2, "Vale"], ["J-372", "FIAT-GT15", 1, "Webb"], ["J-373", "KW1", 2, "Young"]]},
    "i": {"tickets": [["J-381", "SC1", 2, "Zane"], ["J-382", "ABUS-65", 1, "Amos"], ["J-383", "UL050", 1, "Bell"]]},
}
for _k, _v in INPUTS.items():
    _v["task"] = "Cut today's keys: " + "; ".join(f"{t[0]} {t[2]} x {t[1]}" for t in _v["tickets"])

CASES = [
    dict(id="zzw-key-01", kind="lossy_parsing", input="b",
         desc="The ticket parser keeps only the first digit of the quantity, so Dunn's 12 SC1 keys become 1."),
    dict(id="zzw-key-02", kind="swallowed_error", input="c",
         desc="The blank lookup swallows the stock system's error for ABUS-65 and returns an empty record with price 0."),
    dict(id="zzw-key-03", kind="hallucinated_value", input="e",
         desc="The cut-spec model answer for the FIAT-GT15 job invents a six-cut code for an eight-pin blank."),
    dict(id="zzw-key-04", kind="bad_memory_write", input="g",
         desc="Recording the third job stores the second job's quantity under J-363."),
    dict(id="zzw-key-05", kind="truncated_result", input="h",
         desc="The price list tool returns only its first page of four blanks, so FIAT-GT15 bills at no price."),
]
REFS = ["a", "d", "f", "i"]


def brain(tag, p):
    if tag == "READ_TICKETS":
        return "\n".join(f"{t[0]}|{t[1]}|{t[2]}|{t[3]}" for t in p["tickets"])
    if tag == "CUT_SPEC":
        pins = p["blank"]["pins"]
        seed = sum(ord(c) for c in p["job"])
        cuts = [str(1 + (seed * (k + 3)) % 7) for k in range(pins)]
        if p["blank"]["code"] == "FIAT-GT15" and kit.on("zzw-key-03"):
            cuts = cuts[:6]
        return "-".join(cuts)
    if tag == "RECEIPT":
        return f"Thank you. {len(p['lines'])} jobs, total {p['total'] / 100:.2f} GBP."
    raise ValueError(tag)


_gate = {"n": 0}


def lookup_blank(code: str) -> dict:
    try:
        if code == "ABUS-65" and kit.on("zzw-key-02"):
            raise TimeoutError("stock service did not answer")
        return {"code": code, **BLANKS[code], "in_stock": 40}
    except TimeoutError:
        return {"code": code, "pins": BLANKS[code]["pins"], "in_stock": 0, "price_override": 0}


def check_stock(code: str, needed: int) -> dict:
    _gate["n"] += 1
    if _gate["n"] == 2:
        raise ConnectionError("till network dropped")
    return {"code": code, "needed": needed, "ok": True}


def get_price_list(page_size: int) -> dict:
    items = sorted(PRICES.items())
    if kit.on("zzw-key-05"):
        items = items[:4]
    return {"prices": dict(items), "currency": "GBP pence"}


def intake(ctx, d):
    _gate["n"] = 0
    text = ctx.llm("read_ticket_book", "READ_TICKETS", {"tickets": d["request"]["tickets"]})

    def parse_tickets(t):
        jobs = []
        for line in t.splitlines():
            job, code, qty, who = line.split("|")
            if len(qty) > 1 and kit.on("zzw-key-01"):
                qty = qty[0]
            jobs.append({"job": job, "code": code, "qty": int(qty), "customer": who})
        ctx.state["jobs"] = [j["job"] for j in jobs]
        return jobs

    d["items"] = ctx.code("parse_tickets", "parse", parse_tickets, text)


def per_job(ctx, d):
    job = d["items"][d["_i"]]
    blank = ctx.tool("lookup_blank", lookup_blank, {"code": job["code"]})
    spec = ctx.llm("cut_spec", "CUT_SPEC", {"job": job["job"], "blank": blank})
    parsed = ctx.code("parse_cut_spec", "parse", lambda t: [int(x) for x in t.split("-")], spec)
    ctx.tool_retry("check_stock", check_stock, {"code": job["code"], "needed": job["qty"]})
    pos = d["_i"]

    def record_job(j):
        qty = j["qty"]
        if pos == 2 and kit.on("zzw-key-04"):
            qty = d["items"][1]["qty"]
        entry = {"job": j["job"], "code": j["code"], "qty": qty, "cuts": parsed,
                 "override": blank.get("price_override")}
        ctx.state[f"job:{j['job']}"] = entry
        return entry

    ctx.code("record_job", "state", record_job, job)


def billing(ctx, d):
    plist = ctx.tool("get_price_list", get_price_list, {"page_size": 10})

    def bill_jobs(pl):
        lines = []
        for jid in ctx.state["jobs"]:
            e = ctx.state[f"job:{jid}"]
            unit = e["override"] if e["override"] is not None else pl["prices"].get(e["code"], 0)
            lines.append({**e, "pence": unit * e["qty"]})
        return lines

    d["lines"] = ctx.code("bill_jobs", "other", bill_jobs, plist)
    d["total"] = sum(x["pence"] for x in d["lines"])


def compose(ctx, d):
    text = ctx.llm("write_receipt", "RECEIPT", {"lines": d["lines"], "total": d["total"]})
    d["product"] = ctx.code("close_day_sheet", "other",
                            lambda t: {"lines": d["lines"], "total": d["total"], "receipt": t}, text)


def validate(ctx, d):
    tickets = {t[0]: t for t in d["request"]["tickets"]}

    def validate_day_sheet(sheet):
        if sorted(x["job"] for x in sheet["lines"]) != sorted(tickets):
            raise ValueError("day sheet jobs do not match the ticket book")
        for x in sheet["lines"]:
            t = tickets[x["job"]]
            if x["qty"] != t[2]:
                raise ValueError(f"{x['job']}: {x['qty']} keys cut, ticket asks for {t[2]}")
            if len(x["cuts"]) != BLANKS[x["code"]]["pins"]:
                raise ValueError(f"{x['job']}: cut code has {len(x['cuts'])} cuts, {x['code']} has "
                                 f"{BLANKS[x['code']]['pins']} pins")
            if x["pence"] != PRICES[x["code"]] * t[2]:
                raise ValueError(f"{x['job']}: billed {x['pence']}p, list price gives {PRICES[x['code']] * t[2]}p")
        if sheet["total"] != sum(x["pence"] for x in sheet["lines"]):
            raise ValueError("till total does not add up")
        return {"ok": True}

    ctx.code("validate_day_sheet", "other", validate_day_sheet, d["product"])


def phases():
    return [("intake", intake), ("job", per_job, "loop"), ("billing", [("bill", billing)], "sub"),
            ("compose", compose), ("validate", validate)]
