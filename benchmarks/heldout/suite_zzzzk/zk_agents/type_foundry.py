"""Independent type foundry: quote and issue a font licence from a client's e-mail (sdk route)."""

from __future__ import annotations

import json
import re

import trajdebug

import common
from common import model_call

RUN_NAME = "type-foundry-licensing"
ROUTE = "sdk"
DOMAIN = "type foundry: font licence quotes (glyph coverage per language, seat pricing, EULA choice)"
SHAPE = "context assembly, extractor LLM, JSON parser, catalogue retrieval, per-style coverage/price/state loop, router, drafting LLM, checks, licence tool"
SWITCH = None

CATALOGUE = {
    "Halden Serif": {"styles": ["Regular", "Italic", "Bold"], "scripts": {"Latin Extended", "Vietnamese"}},
    "Moor Grotesk": {"styles": ["Light", "Regular", "Medium", "Bold"], "scripts": {"Latin Extended", "Cyrillic"}},
    "Tessel Mono": {"styles": ["Regular", "Bold"], "scripts": {"Latin Extended", "Greek"}},
}
LANG_SCRIPT = {"German": "Latin Extended", "Polish": "Latin Extended", "Vietnamese": "Vietnamese",
               "Ukrainian": "Cyrillic", "Greek": "Greek", "French": "Latin Extended"}
RATES = {"desktop": 45.0, "web": 60.0, "app": 180.0}
INBOX_DIGEST = "From: studio@parkline.example - Re: Moor Grotesk - please bump us to 250 seats from next month."

INPUTS = [
    {"ref": "QR-5501", "client": "Kestrel Books", "po_ceiling": 2000.0,
     "email": "Hello, we would like Halden Serif (Regular, Italic, Bold) for desktop use, 12 seats. Languages: German, Vietnamese."},
    {"ref": "QR-5502", "client": "Oda Museum", "po_ceiling": 6000.0,
     "email": "Dear foundry, please quote Moor Grotesk (Light, Regular, Medium, Bold) for web use, 20 seats. Languages: Polish, Ukrainian."},
    {"ref": "QR-5503", "client": "Lumen Transit App", "po_ceiling": 5000.0,
     "email": "Hi, we need Tessel Mono (Regular, Bold) for app embedding, 8 seats. Languages: Greek, French."},
    {"ref": "QR-5504", "client": "Parkline Studio", "po_ceiling": 1000.0,
     "email": "Could you quote Moor Grotesk (Regular, Bold) for desktop use, 25 seats? Languages: German, Ukrainian."},
    {"ref": "QR-5505", "client": "Fjord Weekly", "po_ceiling": 4000.0,
     "email": "We want Halden Serif (Regular, Bold) for web use, 15 seats. Languages: French, Vietnamese."},
]


def brain(request):
    system = common.system_of(request)
    user = common.last_user(request)
    if system.startswith("Extract the licence request"):
        ctx = json.loads(user)
        text = " ".join(ctx["messages"])
        fam = re.search(r"(Halden Serif|Moor Grotesk|Tessel Mono) \(([^)]*)\)", text)
        usage = "app" if "app" in text else "web" if "web use" in text else "desktop"
        seats = re.findall(r"(\d+) seats", text)[-1]
        langs = re.search(r"Languages: ([^.]*)\.", text).group(1).split(", ")
        return json.dumps({"family": fam.group(1), "styles": fam.group(2).split(", "), "usage": usage,
                           "seats": int(seats), "languages": langs})
    if system.startswith("Write the quote"):
        q = json.loads(user)
        return f"Dear {q['client']}, your {q['family']} licence ({q['usage']}, {q['seats']} seats) comes to {q['total']:.2f} EUR."
    return "ok"


@trajdebug.step(kind="input")
def receive_request(request: dict) -> dict:
    return {"ref": request["ref"], "client": request["client"], "email": request["email"]}


@trajdebug.step(kind="other")
def assemble_context(ticket: dict) -> dict:
    messages = [ticket["email"]]
    if SWITCH == "zk-type-5":
        messages.append(INBOX_DIGEST)
    return {"ref": ticket["ref"], "messages": messages}


@trajdebug.step(kind="parse")
def parse_request(message: dict) -> dict:
    return json.loads(message["content"])


@trajdebug.step(kind="retrieval")
def lookup_family(family: str) -> dict:
    entry = CATALOGUE[family]
    return {"family": family, "styles": entry["styles"], "scripts": sorted(entry["scripts"])}


@trajdebug.step(kind="tool")
def check_glyph_coverage(family: str, style: str, languages: list[str]) -> dict:
    entry = CATALOGUE["Halden Serif"] if SWITCH == "zk-type-2" else CATALOGUE[family]
    return {"style": style, "covered": {lang: LANG_SCRIPT[lang] in entry["scripts"] for lang in languages}}


@trajdebug.step(kind="tool")
def price_tier(usage: str, seats: int, style: str) -> dict:
    amount = round(RATES[usage] * (seats ** 0.8) / 4, 2)
    if SWITCH == "zk-type-1":
        amount = round(amount * 100)
    return {"style": style, "usage": usage, "seats": seats, "amount_eur": amount}


@trajdebug.step(kind="state")
def remember_line(style: str, coverage: dict, price: dict, previous: str | None) -> dict:
    key = style
    if SWITCH == "zk-type-3" and previous is not None:
        key = previous
    line = {"style": style, "coverage": coverage["covered"], "amount_eur": price["amount_eur"]}
    trajdebug.current_run().state[f"line:{key}"] = line
    return {"stored_as": f"line:{key}", **line}


@trajdebug.step(kind="condition")
def route_license(usage: str) -> str:
    eula = {"desktop": "DT-3", "web": "WB-2", "app": "AP-1"}[usage]
    if SWITCH == "zk-type-4":
        eula = "DT-3"
    return eula


@trajdebug.step(kind="other")
def assemble_quote(request: dict, eula: str) -> dict:
    state = trajdebug.current_run().state
    lines = []
    for style in request["styles"]:
        line = state.get(f"line:{style}")
        if line is None or line["style"] != style:
            raise KeyError(f"no quote line on file for {request['family']} {style}")
        lines.append(line)
    return {"family": request["family"], "usage": request["usage"], "seats": request["seats"], "eula": eula,
            "lines": lines, "total": round(sum(x["amount_eur"] for x in lines), 2)}


@trajdebug.step(kind="condition")
def validate_quote(quote: dict, po_ceiling: float) -> dict:
    if quote["total"] > po_ceiling:
        raise ValueError(f"quote total {quote['total']:,.2f} EUR is above the client's PO ceiling of {po_ceiling:,.2f} EUR")
    return {"total": quote["total"], "within": po_ceiling}


@trajdebug.step(kind="tool")
def build_trial_package(quote: dict, languages: list[str]) -> dict:
    for line in quote["lines"]:
        for lang in languages:
            if not line["coverage"].get(lang):
                raise ValueError(f"cannot subset {quote['family']} {line['style']} for {lang}: the coverage report "
                                 f"lists no {LANG_SCRIPT[lang]} glyphs")
    return {"zip": f"{quote['family'].replace(' ', '')}-trial.zip", "styles": len(quote["lines"])}


@trajdebug.step(kind="tool")
def issue_license(ref: str, quote: dict) -> dict:
    allowed = {"DT-3": "desktop", "WB-2": "web", "AP-1": "app"}[quote["eula"]]
    if allowed != quote["usage"]:
        raise PermissionError(f"EULA {quote['eula']} covers {allowed} use only; {ref} asks for {quote['usage']} use")
    return {"licence": f"LIC-{ref[3:]}", "eula": quote["eula"], "seats": quote["seats"]}


@trajdebug.step(kind="output")
def send_quote(letter: dict, licence: dict) -> str:
    return f"{letter['content']} Licence {licence['licence']} under EULA {licence['eula']}."


def record(req: dict, path: str) -> None:
    try:
        with trajdebug.run(RUN_NAME, task=f"licence quote {req['ref']} for {req['client']}", path=path):
            ticket = receive_request(req)
            ctx = assemble_context(ticket)
            msg = model_call("extract_request", [
                {"role": "system", "content": "Extract the licence request as JSON: family, styles, usage, seats, languages."},
                {"role": "user", "content": json.dumps(ctx)}])
            request = parse_request(msg)
            fam = lookup_family(request["family"])
            previous = None
            for style in request["styles"]:
                assert style in fam["styles"]
                cov = check_glyph_coverage(request["family"], style, request["languages"])
                price = price_tier(request["usage"], request["seats"], style)
                remember_line(style, cov, price, previous)
                previous = style
            eula = route_license(request["usage"])
            quote = assemble_quote(request, eula)
            letter = model_call("draft_quote", [
                {"role": "system", "content": "Write the quote letter for the client."},
                {"role": "user", "content": json.dumps({"client": req["client"], **quote})}])
            validate_quote(quote, req["po_ceiling"])
            build_trial_package(quote, request["languages"])
            licence = issue_license(req["ref"], quote)
            send_quote(letter, licence)
    except (ValueError, KeyError, PermissionError):
        pass


CASES = [
    {"case": "zk-type-1", "input": 1, "switch": "zk-type-1", "fault_kind": "unit_error",
     "root": ("price_tier", 2, "tool"), "failure": ("validate_quote", 1),
     "description": "The pricing service answers the Regular web line in euro cents under the amount_eur field, "
                    "so the quote total jumps a hundredfold past the museum's purchase-order ceiling."},
    {"case": "zk-type-2", "input": 2, "switch": "zk-type-2", "fault_kind": "tool_ignores_argument",
     "root": ("check_glyph_coverage", 1, "tool"), "failure": ("build_trial_package", 1),
     "description": "The glyph-coverage tool ignores the family it is given and reports the house family Halden "
                    "Serif, which has no Greek, so subsetting Tessel Mono for Greek stops."},
    {"case": "zk-type-3", "input": 2, "switch": "zk-type-3", "fault_kind": "bad_memory_write",
     "root": ("remember_line", 2, "state"), "failure": ("assemble_quote", 1),
     "description": "The Bold quote line is stored under the Regular line's key, overwriting it, so the quote "
                    "assembly finds no line for Regular."},
    {"case": "zk-type-4", "input": 2, "switch": "zk-type-4", "fault_kind": "wrong_routing",
     "root": ("route_license", 1, "condition"), "failure": ("issue_license", 1),
     "description": "The licence router sends an app-embedding request to the desktop EULA DT-3, which the "
                    "licensing system refuses to issue for app use."},
    {"case": "zk-type-5", "input": 3, "switch": "zk-type-5", "fault_kind": "context_pollution",
     "root": ("assemble_context", 1, "other"), "failure": ("validate_quote", 1),
     "description": "The context handed to the extractor carries an unrelated inbox message asking for 250 seats, "
                    "and the extractor quotes 250 seats instead of the client's 25."},
]
