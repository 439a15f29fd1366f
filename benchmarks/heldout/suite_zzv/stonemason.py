"""Stonemason's memorial commission agent (sdk route): rules, family records, inscription design, quote, permit."""
from __future__ import annotations

import json
import unicodedata

import trajdebug

import common
import kit

NAME = "stonemason-commissions"
ROUTE = "sdk"
DOMAIN = "a stonemason's memorial commissions"
SHAPE = "intake, cemetery rules tool, records-clerk sub-agent (LLM + burial register), inscription-designer sub-agent (LLM + parse + per-line measuring), family history + preference state write, per-line lettering quotes, price sheet, permit check, quote, proposal LLM, validator"
EXT = "jsonl"

CEMETERIES = {
    "St Brigid's": {"max_height_mm": 900, "materials": ["granite", "slate"], "permit": True},
    "Hillcrest Municipal": {"max_height_mm": 1200, "materials": ["granite", "limestone", "slate"], "permit": False},
    "Old Quarry Green": {"max_height_mm": 750, "materials": ["slate", "limestone"], "permit": True},
}
REGISTER = {
    "P-12": {"name": "Siobhán Keane", "born": "1941-03-02", "died": "2026-08-14", "plot": "P-12"},
    "P-21": {"name": "Seán Keane", "born": "1938-11-19", "died": "2019-02-03", "plot": "P-21"},
    "A-07": {"name": "Harold Pike", "born": "1950-06-30", "died": "2026-09-01", "plot": "A-07"},
    "A-70": {"name": "Edna Pike", "born": "1952-01-12", "died": "2011-05-22", "plot": "A-70"},
    "Q-03": {"name": "Zoë Marchetti", "born": "1988-04-17", "died": "2026-07-09", "plot": "Q-03"},
    "Q-30": {"name": "Ugo Marchetti", "born": "1949-12-01", "died": "2002-10-10", "plot": "Q-30"},
    "H-44": {"name": "Agnieszka Nowak", "born": "1933-09-09", "died": "2026-10-02", "plot": "H-44"},
    "H-45": {"name": "Jerzy Nowak", "born": "1930-02-14", "died": "2015-03-03", "plot": "H-45"},
    "B-02": {"name": "Ruth Abernethy", "born": "1947-07-07", "died": "2026-06-21", "plot": "B-02"},
    "B-20": {"name": "Colin Abernethy", "born": "1945-05-05", "died": "2020-12-12", "plot": "B-20"},
}
FAMILY_STONES = {"Keane": "limestone", "Pike": "sandstone", "Marchetti": "marble", "Nowak": "sandstone", "Abernethy": "marble"}
PRICES_2026 = {"granite": 1850.0, "slate": 1420.0, "limestone": 1260.0, "letter": 4.2, "year": 2026}
PRICES_2025 = {"granite": 1690.0, "slate": 1310.0, "limestone": 1180.0, "letter": 3.8, "year": 2025}


def _c(cid, plot, surname, cemetery, material, height, epitaph, order_date):
    return {"commission": cid, "plot": plot, "family": surname, "cemetery": cemetery, "material": material,
            "height_mm": height, "epitaph": epitaph, "order_date": order_date, "area_m2": round(height / 1000 * 0.6, 2)}


INPUTS = {
    "M-501": _c("M-501", "P-12", "Keane", "St Brigid's", "granite", 850, "Ar dheis Dé go raibh a hanam", "2026-11-02"),
    "M-502": _c("M-502", "A-07", "Pike", "Hillcrest Municipal", "limestone", 1100, "Forever in our hearts", "2026-11-03"),
    "M-503": _c("M-503", "Q-03", "Marchetti", "Old Quarry Green", "slate", 700, "Sempre con noi", "2026-11-04"),
    "M-504": _c("M-504", "H-44", "Nowak", "St Brigid's", "slate", 880, "Odpoczywaj w pokoju", "2026-11-05"),
    "M-505": _c("M-505", "B-02", "Abernethy", "Old Quarry Green", "limestone", 720, "She walked the hills in every weather", "2026-11-06"),
    "M-506": _c("M-506", "P-21", "Keane", "Hillcrest Municipal", "granite", 1000, "Rest easy, Da", "2026-11-09"),
    "M-507": _c("M-507", "A-70", "Pike", "Old Quarry Green", "slate", 740, "Loved and remembered", "2026-11-10"),
    "M-508": _c("M-508", "Q-30", "Marchetti", "St Brigid's", "granite", 900, "In pace", "2026-11-11"),
    "M-509": _c("M-509", "H-45", "Nowak", "Hillcrest Municipal", "limestone", 1150, "Kochamy Cię", "2026-11-12"),
}
REFS = ["M-506", "M-507", "M-508", "M-509"]

CASES = [
    dict(case="zzv_stone_01", fault_kind="lossy_parsing", input="M-501", root=("parse_layout", 1), failure=("validate_commission", 1),
         description="The layout parser folds the lines to plain ASCII, dropping the accents of the Irish name and epitaph, so the cut text no longer matches the family's wording."),
    dict(case="zzv_stone_02", fault_kind="stale_data", input="M-502", root=("fetch_price_sheet", 1), failure=("validate_commission", 1),
         description="The price sheet tool serves its cached 2025 sheet for a 2026 order, so the quote is priced from last year's rates."),
    dict(case="zzv_stone_03", fault_kind="subagent_wrong_entity", input="M-503", root=("records_clerk", 1), failure=("validate_commission", 1),
         description="The records clerk sub-agent answers with the register entry of plot Q-30 (Ugo Marchetti) instead of plot Q-03, and his dates go onto the stone."),
    dict(case="zzv_stone_04", fault_kind="swallowed_error", input="M-504", root=("check_permit", 1), failure=("validate_commission", 1),
         description="The permit check catches the registry's timeout and reports the permit as not required, so a St Brigid's stone goes ahead with no permit."),
    dict(case="zzv_stone_05", fault_kind="bad_memory_write", input="M-505", root=("remember_preferences", 1), failure=("validate_commission", 1),
         description="The preference step stores the material of the family's earlier stone (marble) in run state instead of the limestone the family asked for, and the quote follows it."),
]

CLI = None


def brain(request):
    prompt = common.last_user(request)
    data = common.payload(prompt)
    if prompt.startswith("Find the register entry"):
        plot = data["plot"]
        if kit.on("zzv_stone_03"):
            plot = plot[0] + "-" + plot[3] + plot[2]
        return json.dumps({"plot": plot})
    if prompt.startswith("Lay out the inscription"):
        rec = data["record"]
        lines = [{"text": f"In loving memory of {rec['name']}", "size": "large"},
                 {"text": f"{rec['born'][:4]} - {rec['died'][:4]}", "size": "medium"},
                 {"text": data["epitaph"], "size": "small"}]
        return json.dumps({"lines": lines, "font": "Roman serif"})
    if prompt.startswith("Write the proposal"):
        return (f"Dear {data['family']} family, we propose a {data['material']} memorial, {data['height_mm']} mm, "
                f"with {data['letters']} letters. Quote EUR {data['total']:.2f}.")
    return "I cannot help with that."


def _ask(task, data):
    return common.ask(CLI, "You are the studio assistant of Cairn & Chisel memorial masons.", task, data)


@trajdebug.step(kind="input")
def receive_commission(form: dict) -> dict:
    return dict(form)


@trajdebug.step(kind="tool")
def fetch_cemetery_rules(cemetery: str) -> dict:
    return {"cemetery": cemetery, **CEMETERIES[cemetery]}


@trajdebug.step(kind="tool")
def family_history(surname: str) -> dict:
    return {"family": surname, "earlier_stones": [{"material": FAMILY_STONES[surname], "year": 2011}]}


@trajdebug.step(kind="state")
def remember_preferences(form: dict, history: dict) -> None:
    material = history["earlier_stones"][0]["material"] if kit.on("zzv_stone_05") else form["material"]
    trajdebug.current_run().state["preferences"] = {"material": material, "height_mm": form["height_mm"], "matching_family": True}


@trajdebug.step(kind="llm")
def ask_register(plot: str, family: str) -> str:
    return _ask("Find the register entry for this plot.", {"plot": plot, "family": family})


@trajdebug.step(kind="tool")
def burial_register(plot: str) -> dict:
    return dict(REGISTER[plot])


def records_clerk(plot: str, family: str) -> dict:
    with trajdebug.step("records_clerk", kind="agent", input={"plot": plot, "family": family}) as s:
        choice = json.loads(ask_register(plot, family))
        s.output = burial_register(choice["plot"])
    return s.output


@trajdebug.step(kind="llm")
def draft_layout(record: dict, epitaph: str) -> str:
    return _ask("Lay out the inscription for the headstone.", {"record": record, "epitaph": epitaph})


@trajdebug.step(kind="parse")
def parse_layout(raw: str) -> dict:
    doc = json.loads(raw)
    lines = []
    for ln in doc["lines"]:
        text = ln["text"].strip()
        if kit.on("zzv_stone_01"):
            text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
        lines.append({"text": text, "size": ln["size"]})
    return {"lines": lines, "font": doc["font"]}


@trajdebug.step(kind="tool")
def measure_line(text: str, size: str) -> dict:
    per = {"large": 38, "medium": 30, "small": 22}[size]
    return {"text": text, "width_mm": len(text) * per * 0.62, "letters": sum(c.isalnum() for c in text)}


def inscription_designer(record: dict, epitaph: str) -> dict:
    with trajdebug.step("inscription_designer", kind="agent", input={"record": record, "epitaph": epitaph}) as s:
        layout = parse_layout(draft_layout(record, epitaph))
        layout["measures"] = [measure_line(ln["text"], ln["size"]) for ln in layout["lines"]]
        s.output = layout
    return layout


@trajdebug.step(kind="tool")
def quote_lettering(text: str, letters: int, rate: float) -> dict:
    return {"text": text, "letters": letters, "amount": round(letters * rate, 2)}


@trajdebug.step(kind="tool")
def fetch_price_sheet(order_date: str) -> dict:
    sheet = PRICES_2025 if kit.on("zzv_stone_02") else PRICES_2026
    return {"effective": f"{sheet['year']}-01-01", **{k: v for k, v in sheet.items() if k != "year"}}


def _registry(commission: str) -> dict:
    if commission == "M-504" and kit.on("zzv_stone_04"):
        raise TimeoutError("parish registry did not answer in 10 s")
    return {"permit": f"PR-{commission[2:]}", "status": "granted"}


@trajdebug.step(kind="tool")
def check_permit(commission: str, needed: bool) -> dict:
    if not needed:
        return {"status": "not_required"}
    try:
        return _registry(commission)
    except TimeoutError:
        return {"status": "not_required"}


@trajdebug.step(kind="other")
def compute_quote(area_m2: float, sheet: dict, lettering: list) -> dict:
    pref = trajdebug.current_run().state["preferences"]
    stone = round(sheet.get(pref["material"], 2400.0) * area_m2, 2)
    letters = round(sum(q["amount"] for q in lettering), 2)
    return {"material": pref["material"], "stone": stone, "lettering": letters, "total": round(stone + letters + 350.0, 2),
            "sheet": sheet["effective"]}


@trajdebug.step(kind="llm")
def write_proposal(family: str, quote: dict, height_mm: int, letters: int) -> str:
    return _ask("Write the proposal letter.", {"family": family, "material": quote["material"], "height_mm": height_mm,
                                                "letters": letters, "total": quote["total"]})


@trajdebug.step(kind="condition")
def validate_commission(form: dict, rules: dict, record: dict, layout: dict, quote: dict, permit: dict) -> dict:
    cid = form["commission"]
    if record["plot"] != form["plot"]:
        raise ValueError(f"{cid}: inscription dates taken from plot {record['plot']} ({record['name']}), commission is for plot {form['plot']}")
    cut = [ln["text"] for ln in layout["lines"]]
    if form["epitaph"] not in cut or not any(record["name"] in t for t in cut):
        raise ValueError(f"{cid}: cut text {cut!r} differs from the family's wording {form['epitaph']!r}")
    if quote["material"] != form["material"] or quote["material"] not in rules["materials"]:
        raise ValueError(f"{cid}: quote in {quote['material']}, family chose {form['material']} ({', '.join(rules['materials'])} allowed)")
    if quote["sheet"][:4] != form["order_date"][:4]:
        raise ValueError(f"{cid}: quote priced from sheet effective {quote['sheet']}, order dated {form['order_date']}")
    if rules["permit"] and permit.get("status") != "granted":
        raise ValueError(f"{cid}: {rules['cemetery']} requires a permit, status {permit.get('status')}")
    if form["height_mm"] > rules["max_height_mm"]:
        raise ValueError(f"{cid}: {form['height_mm']} mm above {rules['max_height_mm']} mm")
    return {"ok": True}


def record(server, key: str, out: str) -> None:
    global CLI
    CLI = common.client(server)
    server.use(brain)
    try:
        with trajdebug.run(NAME, task=f"prepare memorial commission {key}", path=out) as run:
            form = receive_commission(INPUTS[key])
            rules = fetch_cemetery_rules(form["cemetery"])
            rec = records_clerk(form["plot"], form["family"])
            layout = inscription_designer(rec, form["epitaph"])
            remember_preferences(form, family_history(form["family"]))
            sheet_rate = 4.2
            lettering = [quote_lettering(m["text"], m["letters"], sheet_rate) for m in layout["measures"]]
            sheet = fetch_price_sheet(form["order_date"])
            permit = check_permit(form["commission"], rules["permit"])
            quote = compute_quote(form["area_m2"], sheet, lettering)
            run.state["quote"] = quote
            write_proposal(form["family"], quote, form["height_mm"], sum(m["letters"] for m in layout["measures"]))
            validate_commission(form, rules, rec, layout, quote, permit)
    except ValueError:
        pass
