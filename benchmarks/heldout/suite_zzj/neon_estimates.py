"""Neon sign workshop: turns a customer's sign brief into a build sheet and quote (otlp route).

Shape: an AGENT span; the model reads the brief (instrumented openai client) and a parser; per word a
colour-catalogue retriever, a tube-spec tool and a letter splitter; per letter a glyph-length tool; per word a tube sum; the
transformer catalogue and sizing; the backboard sizing; a quote-writer sub-agent span (context building, the
model's quote, its parser); a job save with a retry; the validator span.
"""

from __future__ import annotations

import json
import re

import kit
from common import chat, dumps, json_in, otlp, system_text, user_text
from openai import OpenAI


NAME = "neon-sign-estimator"
ROUTE = "otlp"
DOMAIN = "neon sign workshop"
SHAPE = "AGENT span: model reads brief + parser -> per word: catalogue retriever, tube-spec tool, letter split -> per letter glyph tool -> tube sums -> transformer tool + sizing -> backboard sizing -> quote-writer sub-agent (context, model, parser) -> save (retry) -> validator"

CATALOGUE = [  # code, name, gas, stock (m of tube)
    ("NR-12", "ruby red", "neon", 40),
    ("NO-12", "orange", "neon", 22),
    ("NP-12", "hot pink", "neon", 18),
    ("AW-12", "warm white", "argon", 55),
    ("AT-12", "turquoise", "argon", 20),
    ("AS-12", "sky blue", "argon", 12),
    ("AC-12", "cobalt blue", "argon", 35),
    ("AG-12", "emerald green", "argon", 16),
    ("AY-12", "lemon yellow", "argon", 24),
    ("AV-12", "purple", "argon", 14),
    ("NG-12", "gold", "neon", 9),
]
KV_PER_M = {"neon": 1.1, "argon": 0.75}
ELECTRODE_KV = 0.6
TRANSFORMERS = [3, 6, 9, 12, 15]
HEADROOM = 1.1
MARGIN_MM = 60
WORD_GAP_FACTOR = 0.5
FONTS = {"script": (1.0, 0.62), "block": (0.85, 0.7), "retro": (0.95, 0.66)}

NOTES = [
    {"job": "NS-3314", "note": "Colours agreed on the call: 'Late' in warm white, 'Open' in hot pink."},
    {"job": "NS-3316", "note": "Colours agreed on the call: 'Bar' in gold, 'Coffee' in warm white."},
]


def _job(job, customer, words, font, height, site, note=None):
    return {
        "job": job,
        "customer": customer,
        "words": [{"text": w, "colour": c, "swatch": s} for w, c, s in words],
        "font": font,
        "letter_height_mm": height,
        "backboard": "clear acrylic",
        "site": site,
        "note": note,
    }


INPUTS = {
    "ns3317": _job(
        "NS-3317",
        "Lantern Noodle Bar",
        [("Noodles", "ruby red", "NR-12"), ("Bar", "turquoise", "AT-12")],
        "script",
        180,
        "indoor",
    ),
    "ns3318": _job(
        "NS-3318",
        "Pressed Juice Co",
        [("Fresh", "lemon yellow", "AY-12"), ("Juice", "emerald green", "AG-12")],
        "block",
        200,
        "indoor",
    ),
    "ns3319": _job(
        "NS-3319",
        "The Night Owl",
        [("Open", "hot pink", "NP-12"), ("Late", "turquoise", "AT-12")],
        "retro",
        220,
        "indoor",
        "Customer asked for a dimmer.",
    ),
    "ns3320": _job(
        "NS-3320",
        "Bluebird Records",
        [("Vinyl", "sky blue", "AS-12"), ("Shop", "warm white", "AW-12")],
        "script",
        200,
        "indoor",
    ),
    "ns3321": _job(
        "NS-3321",
        "Ember Pizza",
        [("Pizza", "orange", "NO-12"), ("Oven", "ruby red", "NR-12")],
        "block",
        260,
        "indoor",
    ),
    "ns3322": _job("NS-3322", "Moonlight Cinema", [("Cinema", "purple", "AV-12")], "retro", 300, "indoor"),
    "ns3323": _job(
        "NS-3323",
        "Saltwater Bar",
        [("Salt", "sky blue", "AS-12"), ("Water", "turquoise", "AT-12")],
        "script",
        160,
        "indoor",
        "Mount 2.4 m above the bar.",
    ),
    "ns3324": _job(
        "NS-3324",
        "Golden Hour Cafe",
        [("Coffee", "gold", "NG-12"), ("Cake", "warm white", "AW-12")],
        "retro",
        180,
        "indoor",
    ),
    "ns3325": _job(
        "NS-3325",
        "Rose Florist",
        [("Roses", "hot pink", "NP-12"), ("Here", "emerald green", "AG-12")],
        "block",
        150,
        "indoor",
    ),
}
REFS = ["ns3322", "ns3323", "ns3324", "ns3325"]
CASES = [
    {
        "id": "neon_c1",
        "kind": "unit_error",
        "input": "ns3317",
        "root": ("size_backboard", 1),
        "failure": "validate_build_sheet",
        "description": "The backboard sizing adds its 60 mm margins to a width it has already turned into centimetres, so the board is cut a tenth of the lettering's span wide.",
    },
    {
        "id": "neon_c2",
        "kind": "off_by_one",
        "input": "ns3318",
        "root": ("split_letters", 1),
        "failure": "validate_build_sheet",
        "description": "The letter splitter stops one index short of each word, so the build sheet's tube and letter count leave out the last letter of 'Fresh' and 'Juice'.",
    },
    {
        "id": "neon_c3",
        "kind": "context_pollution",
        "input": "ns3319",
        "root": ("build_quote_context", 1),
        "failure": "validate_build_sheet",
        "description": "The quote writer's context takes the workshop's recent notes without filtering by job, and NS-3314's 'Late in warm white' makes the quote list the wrong glass for 'Late'.",
    },
    {
        "id": "neon_c4",
        "kind": "wrong_retrieval",
        "input": "ns3320",
        "root": ("catalogue_search", 1),
        "failure": "validate_build_sheet",
        "description": "The catalogue search ranks colours by their family word and stock, so 'sky blue' returns cobalt blue (AC-12) instead of the approved sky blue (AS-12).",
    },
    {
        "id": "neon_c5",
        "kind": "format_drift",
        "input": "ns3321",
        "root": ("tube_spec", 1),
        "failure": "validate_build_sheet",
        "description": "The tube-spec service answers the fill gas as its symbol 'Ne', which the transformer sizing does not know and prices as argon, so the sign gets a 9 kV transformer where it needs 12 kV.",
    },
]

READ_SYSTEM = (
    "Read the neon sign brief. Return only JSON {job, words: [{text, colour}], font, letter_height_mm (number), "
    "backboard, site}."
)
QUOTE_SYSTEM = (
    "Write the customer quote for a neon sign from the job context. Return only JSON {job, lines: [{word, "
    "colour, tube_m}], transformer_kv, backboard_mm, total_gbp}. Use the colours agreed with the customer."
)


def brain(request):
    system = system_text(request)
    if system.startswith("Read the neon sign brief"):
        b = json_in(user_text(request))
        return json.dumps(
            {
                "job": b["job"],
                "words": [{"text": w["text"], "colour": w["colour"]} for w in b["words"]],
                "font": b["font"],
                "letter_height_mm": b["letter_height_mm"],
                "backboard": b["backboard"],
                "site": b["site"],
            }
        )
    if system.startswith("Write the customer quote"):
        ctx = json_in(user_text(request))
        colours = {w["word"]: w["colour"] for w in ctx["words"]}
        for n in ctx["notes"]:
            for word, colour in re.findall(r"'(\w+)' in ([a-z ]+?)(?:,|\.)", n):
                if word in colours:
                    colours[word] = colour
        lines = [
            {"word": w["word"], "colour": colours[w["word"]], "tube_m": w["tube_m"]} for w in ctx["words"]
        ]
        return json.dumps(
            {
                "job": ctx["job"],
                "lines": lines,
                "transformer_kv": ctx["transformer_kv"],
                "backboard_mm": ctx["backboard_mm"],
                "total_gbp": ctx["total_gbp"],
            }
        )
    return "{}"


def _glyph(ch: str, font: str, height: float) -> dict:
    stroke_f, adv_f = FONTS[font]
    base = (3.0 + (ord(ch) % 5) * 0.3) if ch.isupper() else (2.2 + (ord(ch) % 7) * 0.25)
    return {"char": ch, "stroke_mm": round(height * base * stroke_f), "advance_mm": round(height * adv_f)}


_SAVES = {"n": 0}


def agent(job: dict, client: OpenAI, model: str) -> dict:
    o = otlp()
    with o.span(NAME, "AGENT", job, agent__name=NAME) as top:
        reply = (
            chat(
                client,
                model,
                [
                    {"role": "system", "content": READ_SYSTEM},
                    {"role": "user", "content": dumps({k: v for k, v in job.items() if k != "note"})},
                ],
            )
            .choices[0]
            .message.content
        )
        with o.span("parse_brief", "CHAIN", reply) as sp:
            brief = json.loads(reply)
            brief["letter_height_mm"] = float(brief["letter_height_mm"])
            sp.output = brief
        words = []
        for w in brief["words"]:
            with o.span("catalogue_search", "RETRIEVER", {"query": w["colour"]}) as sp:
                q = set(w["colour"].split())
                if kit.on("neon_c4"):
                    ranked = sorted(CATALOGUE, key=lambda c: (-(c[1].split()[-1] in q), -c[3]))
                else:
                    ranked = sorted(
                        CATALOGUE, key=lambda c: (-(c[1] == w["colour"]), -len(q & set(c[1].split())), -c[3])
                    )
                sp.output = [{"code": c[0], "name": c[1], "stock_m": c[3]} for c in ranked[:3]]
                hit = sp.output[0]
            with o.span("tube_spec", "TOOL", {"code": hit["code"]}) as sp:
                gas = next(c[2] for c in CATALOGUE if c[0] == hit["code"])
                if kit.on("neon_c5") and gas == "neon":
                    gas = "Ne"
                sp.output = {"code": hit["code"], "gas": gas, "diameter_mm": 12}
                spec = sp.output
            with o.span("split_letters", "CHAIN", {"word": w["text"]}) as sp:
                top_i = len(w["text"]) - 1 if kit.on("neon_c2") else len(w["text"])
                sp.output = [w["text"][i] for i in range(top_i) if not w["text"][i].isspace()]
                letters = sp.output
            glyphs = []
            for ch in letters:
                with o.span(
                    "glyph_length",
                    "TOOL",
                    {"char": ch, "font": brief["font"], "height_mm": brief["letter_height_mm"]},
                ) as sp:
                    sp.output = _glyph(ch, brief["font"], brief["letter_height_mm"])
                    glyphs.append(sp.output)
            with o.span("sum_word", "CHAIN", {"word": w["text"], "glyphs": glyphs}) as sp:
                sp.output = {
                    "word": w["text"],
                    "colour": hit["name"],
                    "code": hit["code"],
                    "gas": spec["gas"],
                    "letters": len(glyphs),
                    "tube_m": round(sum(g["stroke_mm"] for g in glyphs) / 1000, 3),
                    "advance_mm": sum(g["advance_mm"] for g in glyphs),
                }
                words.append(sp.output)
        with o.span("transformer_catalogue", "TOOL", {"series": "30 mA"}) as sp:
            sp.output = {"series": "30 mA", "kv": TRANSFORMERS}
        with o.span("size_transformer", "CHAIN", {"words": words, "catalogue": TRANSFORMERS}) as sp:
            need = sum(x["tube_m"] * KV_PER_M.get(x["gas"], KV_PER_M["argon"]) + ELECTRODE_KV for x in words)
            kv = next(t for t in TRANSFORMERS if t >= need * HEADROOM)
            sp.output = {"required_kv": round(need, 2), "transformer_kv": kv}
            transformer = sp.output
        with o.span(
            "size_backboard", "CHAIN", {"words": words, "letter_height_mm": brief["letter_height_mm"]}
        ) as sp:
            span_mm = sum(x["advance_mm"] for x in words) + brief["letter_height_mm"] * WORD_GAP_FACTOR * (
                len(words) - 1
            )
            if kit.on("neon_c1"):
                span_mm = span_mm / 10
            sp.output = {
                "width_mm": round(span_mm + 2 * MARGIN_MM),
                "height_mm": round(brief["letter_height_mm"] + 2 * MARGIN_MM),
            }
            board = sp.output
        tube_total = sum(x["tube_m"] for x in words)
        total = round(
            95 * tube_total
            + 40 * transformer["transformer_kv"]
            + board["width_mm"] * board["height_mm"] / 1e6 * 120
            + 150,
            2,
        )
        with o.span("quote_writer", "AGENT", {"job": brief["job"]}, agent__name="quote_writer") as sub:
            with o.span("build_quote_context", "CHAIN", {"job": brief["job"]}) as sp:
                notes = [n["note"] for n in NOTES if n["job"] == job["job"]]
                if kit.on("neon_c3"):
                    notes = [n["note"] for n in NOTES]
                if job.get("note"):
                    notes.append(job["note"])
                sp.output = {
                    "job": brief["job"],
                    "customer": job["customer"],
                    "words": [
                        {"word": x["word"], "colour": x["colour"], "tube_m": x["tube_m"]} for x in words
                    ],
                    "transformer_kv": transformer["transformer_kv"],
                    "backboard_mm": [board["width_mm"], board["height_mm"]],
                    "total_gbp": total,
                    "notes": notes,
                }
                ctx = sp.output
            qreply = (
                chat(
                    client,
                    model,
                    [{"role": "system", "content": QUOTE_SYSTEM}, {"role": "user", "content": dumps(ctx)}],
                )
                .choices[0]
                .message.content
            )
            with o.span("parse_quote", "CHAIN", qreply) as sp:
                sp.output = json.loads(qreply)
                quote = sp.output
            sub.output = quote
        sheet = {
            "job": brief["job"],
            "words": words,
            "transformer": transformer,
            "backboard": board,
            "quote": quote,
        }
        for _attempt in range(3):
            try:
                with o.span("save_job", "TOOL", {"job": brief["job"]}) as sp:
                    _SAVES["n"] += 1
                    if _SAVES["n"] == 1:
                        raise TimeoutError("job board did not answer in 3 s")
                    sp.output = {"job": brief["job"], "saved": True, "revision": _SAVES["n"] - 1}
                break
            except TimeoutError:
                continue
        with o.span("validate_build_sheet", "CHAIN", sheet) as sp:
            sp.output = validate(job, sheet)
        top.output = {"job": brief["job"], "total_gbp": quote["total_gbp"]}
        return top.output


def validate(job: dict, sheet: dict) -> dict:
    h = job["letter_height_mm"]
    font = job["font"]
    for spec, built in zip(job["words"], sheet["words"]):
        if built["code"] != spec["swatch"]:
            raise ValueError(
                f"'{spec['text']}' is built in {built['code']} ({built['colour']}), the approved swatch is {spec['swatch']}"
            )
        if built["letters"] != len(spec["text"]):
            raise ValueError(
                f"'{spec['text']}' has {len(spec['text'])} letters, the build sheet bends {built['letters']}"
            )
    need = 0.0
    for spec in job["words"]:
        gas = next(c[2] for c in CATALOGUE if c[0] == spec["swatch"])
        tube = sum(_glyph(ch, font, h)["stroke_mm"] for ch in spec["text"]) / 1000
        need += tube * KV_PER_M[gas] + ELECTRODE_KV
    kv = sheet["transformer"]["transformer_kv"]
    if kv < need * HEADROOM:
        raise ValueError(
            f"{kv} kV transformer for a sign that needs {need:.2f} kV plus {round((HEADROOM - 1) * 100)}% headroom"
        )
    span_mm = sum(
        _glyph(ch, font, h)["advance_mm"] for w in job["words"] for ch in w["text"]
    ) + h * WORD_GAP_FACTOR * (len(job["words"]) - 1)
    if sheet["backboard"]["width_mm"] < span_mm + 2 * MARGIN_MM:
        raise ValueError(
            f"backboard {sheet['backboard']['width_mm']} mm wide, the lettering spans {span_mm:.0f} mm plus margins"
        )
    for spec, line in zip(job["words"], sheet["quote"]["lines"]):
        if line["colour"] != spec["colour"]:
            raise ValueError(
                f"the quote lists '{line['word']}' in {line['colour']}, the build sheet says {spec['colour']}"
            )
    return {"job": job["job"], "status": "ready for the bench"}


def record(server, inp: dict, path: str) -> None:
    _SAVES["n"] = 0
    server.use(brain)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    with otlp().recording(path):
        try:
            agent(inp, client, server.model)
        except ValueError:
            pass
