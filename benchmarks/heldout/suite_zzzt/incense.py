"""Incense blender (otlp route): a recipe retriever, the model composing the formula from the
retrieved recipes, a parser, a per-ingredient loop (stock lookup and weighing), a nose panel of
model evaluators per accord, a burn calculation, and the label registry API that refuses a blend."""
import json
import re

NAME = "incense-blending"
ROUTE = "otlp"
DOMAIN = "incense blender"
SHAPE = "otlp: request -> recipe retriever -> llm compose -> parse -> per ingredient (resin_stock, weigh) -> per accord nose_panel agent (llm + parse) -> burn calc -> label_registry refuses"
MODE = None

INPUTS = [
    {"batch": "B-81", "family": "temple", "grams": 200},
    {"batch": "B-82", "family": "kyphi", "grams": 150},
    {"batch": "B-83", "family": "forest", "grams": 100},
    {"batch": "B-84", "family": "temple", "grams": 300},
    {"batch": "B-85", "family": "citrus", "grams": 120},
]
RECIPES = {
    "temple": [["frankincense", 0.45], ["myrrh", 0.2], ["benzoin", 0.1], ["makko", 0.25]],
    "kyphi": [["raisin paste", 0.3], ["myrrh", 0.25], ["juniper", 0.2], ["honey", 0.05], ["makko", 0.2]],
    "forest": [["pine resin", 0.35], ["cedar", 0.25], ["labdanum", 0.15], ["makko", 0.25]],
    "citrus": [["copal", 0.4], ["dried orange peel", 0.2], ["lemongrass", 0.15], ["makko", 0.25]],
}
SIGNATURE = {"temple": "frankincense", "kyphi": "raisin paste", "forest": "pine resin", "citrus": "copal"}
LOTS = {"frankincense": "L-FR-11", "myrrh": "L-MY-07", "benzoin": "L-BZ-02", "makko": "L-MK-30", "raisin paste": "L-RP-01",
        "juniper": "L-JU-04", "honey": "L-HO-09", "pine resin": "L-PR-05", "cedar": "L-CE-12", "labdanum": "L-LA-03",
        "copal": "L-CO-08", "dried orange peel": "L-OP-06", "lemongrass": "L-LG-10"}

CASES = [
    {"input": 0, "mode": "i1", "kind": "hallucinated_value", "root": ("ChatCompletion", 1),
     "description": "the model's formula gives 10 g of makko for a 200 g temple batch where the recipe calls for a quarter of the weight"},
    {"input": 1, "mode": "i2", "kind": "truncated_result", "root": ("recipe_search", 1),
     "description": "the recipe search returns the kyphi recipe cut after its fourth line, without the makko binder"},
    {"input": 2, "mode": "i3", "kind": "swallowed_error", "root": ("resin_stock", {"ingredient": "labdanum"}),
     "description": "the stock lookup for labdanum fails on the lot ledger and answers without a lot number instead of raising"},
    {"input": 3, "mode": "i4", "kind": "wrong_retrieval", "root": ("recipe_search", 1),
     "description": "the recipe search for the temple family returns the kyphi recipe"},
    {"input": 4, "mode": "i5", "kind": "format_drift", "root": ("ChatCompletion", 1),
     "description": "the model writes the formula's weights in ounces, which the parser reads as grams"},
]


def task(inp):
    return f"incense batch {inp['batch']} ({inp['family']}, {inp['grams']} g)"


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    if prompt.startswith("Rate the accord"):
        return "Score: 8/10. Balanced, warm."
    batch = re.search(r"batch (B-\d+)", prompt).group(1)
    inp = next(i for i in INPUTS if i["batch"] == batch)
    recipe = json.loads(prompt.split("Recipe:\n", 1)[1])
    lines = []
    for name, frac in recipe["ingredients"]:
        g = round(frac * inp["grams"], 1)
        if MODE == "i1" and name == "makko":
            g = 10.0
        lines.append(f"- {name}: {round(g / 28.35, 2)} oz" if MODE == "i5" else f"- {name}: {g} g")
    return f"Formula for batch {batch}:\n" + "\n".join(lines)


def run(inp, server, tracer):
    from openai import OpenAI

    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)

    def span(name, kind, args, fn):
        with tracer.start_as_current_span(name, attributes={"openinference.span.kind": kind, "input.value": json.dumps(args),
                                                            "input.mime_type": "application/json"}) as sp:
            out = fn()
            sp.set_attribute("output.value", json.dumps(out))
            sp.set_attribute("output.mime_type", "application/json")
            return out

    def recipe_search(family):
        fam = "kyphi" if (MODE == "i4" and family == "temple") else family
        ingredients = RECIPES[fam]
        if MODE == "i2" and family == "kyphi":
            ingredients = ingredients[:4]
        return {"family": fam, "ingredients": ingredients, "source": f"blending book p.{len(fam) * 7}"}

    def read_formula(text):
        rows = re.findall(r"- (.+?): ([\d.]+) ?\w+", text)
        return {"lines": [{"ingredient": n, "grams": float(g)} for n, g in rows]}

    def resin_stock(ingredient):
        try:
            if MODE == "i3" and ingredient == "labdanum":
                raise LookupError("lot ledger row locked")
            return {"ingredient": ingredient, "lot": LOTS[ingredient], "on_hand_g": 2000}
        except LookupError:
            return {"ingredient": ingredient, "lot": None, "on_hand_g": 2000}

    def weigh(ingredient, grams):
        return {"ingredient": ingredient, "weighed_g": grams}

    def read_score(text):
        m = re.search(r"(\d+)/10", text)
        return {"score": int(m.group(1))}

    with tracer.start_as_current_span(NAME, attributes={"openinference.span.kind": "AGENT", "input.value": json.dumps(inp),
                                                        "input.mime_type": "application/json"}) as top:
        req = span("blend_request", "CHAIN", inp, lambda: dict(inp))
        recipe = span("recipe_search", "RETRIEVER", {"family": req["family"]}, lambda: recipe_search(req["family"]))
        reply = client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": "You compose incense formulas from recipes."},
            {"role": "user", "content": f"Compose the formula for batch {req['batch']} of {req['grams']} g, {req['family']} family. Recipe:\n{json.dumps(recipe)}"}])
        text = reply.choices[0].message.content
        formula = span("read_formula", "CHAIN", {"text": text}, lambda: read_formula(text))
        lots = []
        for line in formula["lines"]:
            stock = span("resin_stock", "TOOL", {"ingredient": line["ingredient"]}, lambda: resin_stock(line["ingredient"]))
            span("weigh", "TOOL", line, lambda: weigh(line["ingredient"], line["grams"]))
            lots.append(stock)
        scores = []
        accords = [formula["lines"][i:i + 2] for i in range(0, len(formula["lines"]), 2)]
        for n, accord in enumerate(accords, 1):
            with tracer.start_as_current_span("nose_panel", attributes={"openinference.span.kind": "AGENT",
                                                                        "input.value": json.dumps({"accord": n, "lines": accord})}) as panel:
                r = client.chat.completions.create(model=server.model, messages=[
                    {"role": "user", "content": f"Rate the accord {n} of batch {req['batch']}: {json.dumps(accord)}"}])
                score = span("read_score", "CHAIN", {"text": r.choices[0].message.content}, lambda: read_score(r.choices[0].message.content))
                panel.set_attribute("output.value", json.dumps(score))
                scores.append(score["score"])
        total = sum(line["grams"] for line in formula["lines"])
        makko = sum(line["grams"] for line in formula["lines"] if line["ingredient"] == "makko")
        burn = span("burn_calc", "CHAIN", {"total_g": total, "makko_g": makko},
                    lambda: {"makko_ratio": round(makko / total, 3) if total else 0.0, "cones": int(total // 2.5)})

        def label_registry():
            if abs(total - req["grams"]) > 1.0:
                raise ValueError(f"label registry 400: batch {req['batch']} declares {req['grams']} g, formula weighs {total} g")
            if burn["makko_ratio"] < 0.2:
                raise ValueError(f"label registry 400: makko ratio {burn['makko_ratio']} below 0.2, batch {req['batch']} will not hold an ember")
            names = [line["ingredient"] for line in formula["lines"]]
            if SIGNATURE[req["family"]] not in names:
                raise ValueError(f"label registry 400: a {req['family']} blend must contain {SIGNATURE[req['family']]}; formula has {names}")
            missing = [s["ingredient"] for s in lots if not s["lot"]]
            if missing:
                raise ValueError(f"label registry 400: no lot number for {missing[0]} in batch {req['batch']}")
            return {"label": f"LBL-{req['batch']}", "panel": scores}

        out = span("label_registry", "TOOL", {"batch": req["batch"], "family": req["family"], "grams": total}, label_registry)
        top.set_attribute("output.value", json.dumps(out))
