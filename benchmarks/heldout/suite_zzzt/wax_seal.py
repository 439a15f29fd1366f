"""Wax-seal engraver (otlp route): OpenInference spans of the shop's own code around an
instrumented OpenAI client.  The model writes the engraving plan; a parser, a glyph retriever, a
loop over letters and strokes (toolpath + depth probe, the probe needing a second try once), a
mirror check and the CNC job API, which refuses a bad job."""
import json

NAME = "wax-seal-engraving"
ROUTE = "otlp"
DOMAIN = "wax-seal engraver"
SHAPE = "otlp: intake -> prompt -> llm plan -> parse -> glyph retriever -> per letter x stroke (toolpath, depth_probe w/ retry) -> mirror check -> cnc_submit refuses"
MODE = None

INPUTS = [
    {"order": "WS-501", "monogram": "EVH", "diameter_mm": 25, "style": "copperplate", "border": "laurel"},
    {"order": "WS-502", "monogram": "AB", "diameter_mm": 20, "style": "roman", "border": "plain"},
    {"order": "WS-503", "monogram": "MJKR", "diameter_mm": 30, "style": "blackletter", "border": "rope"},
    {"order": "WS-504", "monogram": "TO", "diameter_mm": 18, "style": "roman", "border": "beaded"},
    {"order": "WS-505", "monogram": "LDS", "diameter_mm": 28, "style": "copperplate", "border": "laurel"},
]
PREVIOUS = {"WS-501": "WS-505 LDS copperplate laurel"}
STROKES = {"copperplate": 3, "roman": 2, "blackletter": 4}

CASES = [
    {"input": 2, "mode": "e1", "kind": "plan_error", "root": ("ChatCompletion", 1),
     "description": "the model's engraving plan cuts the border before the letters, so the border pass runs before the letter depth is set"},
    {"input": 1, "mode": "e2", "kind": "wrong_tool_args", "root": ("toolpath", 3),
     "description": "the toolpath for the second letter is asked with the seal's diameter where the letter height belongs"},
    {"input": 0, "mode": "e3", "kind": "context_pollution", "root": ("compose_prompt", 1),
     "description": "the prompt for the plan carries the previous order's monogram notes, and the plan comes back for LDS instead of EVH"},
    {"input": 3, "mode": "e4", "kind": "tool_ignores_argument", "root": ("depth_probe", {"letter": "O"}),
     "description": "the depth probe ignores the letter it is asked about and reports the depth of the first letter"},
    {"input": 4, "mode": "e5", "kind": "lossy_parsing", "root": ("parse_plan", 1),
     "description": "the plan parser splits the monogram on single characters and loses the ligature D-S, keeping LD"},
]


def task(inp):
    return f"seal {inp['order']} {inp['monogram']}"


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    inp = next(i for i in INPUTS if i["order"] in prompt.split("Order:")[1])
    mono = inp["monogram"]
    if "Earlier order" in prompt:
        mono = prompt.split("Earlier order ")[1].split()[1]
    passes = ["letters", "border", "polish"]
    if MODE == "e1":
        passes = ["border", "letters", "polish"]
    letters = mono if inp["order"] != "WS-505" else "L+DS"
    return f"PLAN order={inp['order']} letters={letters} passes={','.join(passes)} depth_mm={0.8 if inp['diameter_mm'] < 25 else 1.2}"


def run(inp, server, tracer):
    from openai import OpenAI

    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    probe_tries = {"n": 0}

    def span(name, kind, args, fn):
        with tracer.start_as_current_span(name, attributes={"openinference.span.kind": kind, "input.value": json.dumps(args),
                                                            "input.mime_type": "application/json"}) as sp:
            out = fn()
            sp.set_attribute("output.value", json.dumps(out))
            sp.set_attribute("output.mime_type", "application/json")
            return out

    def compose_prompt():
        text = f"Write the engraving plan. Order: {inp['order']} monogram {inp['monogram']} style {inp['style']} border {inp['border']} diameter {inp['diameter_mm']} mm."
        if MODE == "e3" and inp["order"] in PREVIOUS:
            text = f"Earlier order {PREVIOUS[inp['order']]}. " + text.replace(f"monogram {inp['monogram']} ", "")
        return {"prompt": text}

    def parse_plan(text):
        fields = dict(kv.split("=") for kv in text.split()[1:])
        raw = fields["letters"]
        if "+" in raw:
            head, tail = raw.split("+")
            letters = [head] + ([tail[0]] if MODE == "e5" else [tail])
            letters = [c for part in letters for c in part] if MODE != "e5" else [head, tail[0]]
        else:
            letters = list(raw)
        return {"order": fields["order"], "letters": letters, "passes": fields["passes"].split(","), "depth_mm": float(fields["depth_mm"])}

    def glyphs(style, letters):
        return {"style": style, "glyphs": [{"letter": l, "height_mm": None} for l in letters]}

    def toolpath(letter, height_mm, stroke):
        return {"letter": letter, "stroke": stroke, "height_mm": height_mm, "feed": 120 if height_mm < 12 else 60}

    def depth_probe(letter, expected_mm, index, first_letter):
        probe_tries["n"] += 1
        if probe_tries["n"] == 2:
            raise ConnectionError("probe head did not report")
        measured = expected_mm
        return {"letter": first_letter if MODE == "e4" and index > 0 else letter, "depth_mm": measured}

    with tracer.start_as_current_span(NAME, attributes={"openinference.span.kind": "AGENT", "input.value": json.dumps(inp),
                                                        "input.mime_type": "application/json"}) as top:
        order = span("order_intake", "CHAIN", inp, lambda: dict(inp))
        prompt = span("compose_prompt", "CHAIN", order, compose_prompt)
        reply = client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": "You plan wax-seal engravings."}, {"role": "user", "content": prompt["prompt"]}])
        text = reply.choices[0].message.content
        plan = span("parse_plan", "CHAIN", {"text": text}, lambda: parse_plan(text))
        lib = span("glyph_library", "RETRIEVER", {"style": order["style"], "letters": plan["letters"]}, lambda: glyphs(order["style"], plan["letters"]))
        height = round(order["diameter_mm"] * 0.6 / max(1, len(plan["letters"])) * 1.5, 1)
        cut = []
        for i, g in enumerate(lib["glyphs"]):
            for stroke in range(1, STROKES[order["style"]] + 1):
                h = order["diameter_mm"] if (MODE == "e2" and i == 1 and stroke == 1) else height
                cut.append(span("toolpath", "TOOL", {"letter": g["letter"], "height_mm": h, "stroke": stroke},
                                lambda: toolpath(g["letter"], h, stroke)))
            for attempt in (1, 2):
                try:
                    probe = span("depth_probe", "TOOL", {"letter": g["letter"], "expected_mm": plan["depth_mm"]},
                                 lambda: depth_probe(g["letter"], plan["depth_mm"], i, lib["glyphs"][0]["letter"]))
                    break
                except ConnectionError:
                    if attempt == 2:
                        raise
            cut.append({"probe": probe})
        mirror = span("mirror_check", "GUARDRAIL", {"letters": plan["letters"]}, lambda: {"mirrored": list(reversed(plan["letters"])), "ok": True})

        def cnc_submit():
            if "".join(plan["letters"]) != order["monogram"]:
                raise ValueError(f"CNC job API 422: job {order['order']} engraves {''.join(plan['letters'])}, order reads {order['monogram']}")
            if plan["passes"][0] != "letters":
                raise ValueError(f"CNC job API 422: pass {plan['passes'][0]} before letters, letter depth {plan['depth_mm']} mm not set")
            probed = [c["probe"]["letter"] for c in cut if "probe" in c]
            for c in cut:
                if "height_mm" in c and c["height_mm"] > order["diameter_mm"] * 0.8:
                    raise ValueError(f"CNC job API 422: toolpath {c['letter']} stroke {c['stroke']} is {c['height_mm']} mm tall on a {order['diameter_mm']} mm seal")
            for want, got in zip(plan["letters"], probed):
                if want != got:
                    raise ValueError(f"CNC job API 422: no depth reading for letter {want} (reading is for {got})")
            return {"job": f"CNC-{order['order']}", "passes": plan["passes"], "mirrored": mirror["mirrored"]}

        job = span("cnc_submit", "TOOL", {"order": order["order"], "letters": plan["letters"], "passes": plan["passes"]}, cnc_submit)
        top.set_attribute("output.value", json.dumps(job))
