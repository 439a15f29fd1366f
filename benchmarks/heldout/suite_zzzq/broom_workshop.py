"""Broom maker: weekly batch planner (otlp route). Per broom: bristle spec retrieval, a scale reading that
is retried when it has not settled, handle cutting; one model call plans the bindings for the whole batch,
a parser reads the plan, per-broom stock checks, and a workshop check at the end."""
import json

from openai import OpenAI
from opentelemetry.trace import Status, StatusCode

from otel_support import attrs, dump, set_out, tracer

NAME = "broom-workshop"
ROUTE = "otlp"
DOMAIN = "broom maker"
SHAPE = "OTel spans: per-broom loop (retriever, retried scale tool, handle tool), one planning model call, parser, per-broom stock tool, final workshop check"
ACTIVE = None

BRISTLES = {
    "birch": {"doc": "BR-01", "grams_per_broom": 420, "binding": "wire 1.6"},
    "broomcorn": {"doc": "BR-02", "grams_per_broom": 380, "binding": "wire 1.2"},
    "bassine": {"doc": "BR-03", "grams_per_broom": 300, "binding": "staple"},
    "tampico": {"doc": "BR-04", "grams_per_broom": 220, "binding": "staple"},
    "horsehair": {"doc": "BR-05", "grams_per_broom": 160, "binding": "cord"},
}
HANDLES = {"besom": 120, "yard": 140, "hearth": 75, "whisk": 25, "cobweb": 180}
STOCK = {"wire 1.6": 40, "wire 1.2": 30, "staple": 200, "cord": 25}
NOTES = {
    "Hollins farm": "likes a tight wire 1.6 binding",
    "Greave cottage": "asked for cord bindings on every broom last spring",
}

INPUTS = [
    {"week": "W14", "customer": "Hollins farm", "brooms": [["besom", "birch"], ["yard", "bassine"], ["hearth", "tampico"]]},
    {"week": "W15", "customer": "Aske mill", "brooms": [["yard", "broomcorn"], ["besom", "birch"], ["whisk", "horsehair"], ["cobweb", "tampico"], ["hearth", "bassine"]]},
    {"week": "W16", "customer": "Greave cottage", "brooms": [["hearth", "horsehair"], ["besom", "birch"]]},
    {"week": "W17", "customer": "Pryor stables", "brooms": [["yard", "bassine"], ["yard", "broomcorn"], ["besom", "birch"], ["whisk", "tampico"]]},
    {"week": "W18", "customer": "Tull bakery", "brooms": [["hearth", "tampico"], ["whisk", "horsehair"], ["cobweb", "bassine"], ["yard", "broomcorn"], ["besom", "birch"], ["hearth", "horsehair"]]},
]


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    data = json.loads(prompt.split("\n", 1)[1])
    lines = []
    for i, b in enumerate(data["brooms"], 1):
        binding = b["spec"]["binding"]
        if "cord" in data.get("notes", "") and b["bristle"] == "horsehair":
            binding = "cord"
        if ACTIVE == "context_pollution" and "cord bindings on every" in data.get("notes", ""):
            binding = "cord"
        if ACTIVE == "hallucinated_value" and b["bristle"] == "broomcorn" and data["week"] == "W17":
            binding = "wire 1.4"
        lines.append(f"{i}. {b['style']}: {binding}")
    return "Binding plan:\n" + "\n".join(lines)


def run_one(server, inp, path):
    t = tracer("broom-workshop")
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        with t.start_as_current_span(NAME, attributes=dict(attrs("AGENT", inp), **{"session.id": inp["week"]})) as top:
            with t.start_as_current_span("read_order_sheet", attributes=attrs("CHAIN", inp)) as s:
                brooms = [{"style": st, "bristle": br} for st, br in inp["brooms"]]
                set_out(s, brooms)
            with t.start_as_current_span("customer_notes", attributes=attrs("RETRIEVER", {"customer": inp["customer"]})) as s:
                notes = NOTES.get(inp["customer"], "")
                if ACTIVE == "context_pollution" and inp["customer"] == "Hollins farm":
                    notes = notes + "; " + NOTES["Greave cottage"]
                set_out(s, {"notes": notes})
            for n, b in enumerate(brooms, 1):
                with t.start_as_current_span("bristle_spec", attributes=attrs("RETRIEVER", {"bristle": b["bristle"]})) as s:
                    key = b["bristle"]
                    if ACTIVE == "wrong_retrieval" and key == "tampico" and n == 4:
                        key = "bassine"
                    spec = dict(BRISTLES[key], name=key)
                    set_out(s, spec)
                b["spec"] = spec
                for attempt in (1, 2):
                    with t.start_as_current_span("weigh_bristle", attributes=attrs("TOOL", {"bristle": key, "attempt": attempt})) as s:
                        if attempt == 1 and n == 2:
                            s.set_status(Status(StatusCode.ERROR, "scale not settled"))
                            set_out(s, {"settled": False})
                            continue
                        b["grams"] = spec["grams_per_broom"]
                        set_out(s, {"grams": b["grams"], "settled": True})
                        break
                with t.start_as_current_span("cut_handle", attributes=attrs("TOOL", {"style": b["style"]})) as s:
                    cm = HANDLES[b["style"]]
                    if ACTIVE == "unit_error" and b["style"] == "cobweb":
                        cm = round(cm / 2.54)
                    b["handle_cm"] = cm
                    set_out(s, {"style": b["style"], "length": cm})
            with t.start_as_current_span("plan_bindings", attributes=attrs("CHAIN", {"brooms": len(brooms)})) as s:
                prompt = json.dumps({"week": inp["week"], "notes": notes, "brooms": [
                    {"style": b["style"], "bristle": b["bristle"], "spec": {"binding": b["spec"]["binding"]}} for b in brooms]})
                r = client.chat.completions.create(model=server.model, messages=[
                    {"role": "system", "content": "You plan broom bindings from the bristle specs."},
                    {"role": "user", "content": "Plan the bindings, one line per broom.\n" + prompt}])
                text = r.choices[0].message.content
                set_out(s, text)
            with t.start_as_current_span("read_binding_plan", attributes=attrs("CHAIN", text)) as s:
                plan = []
                for row in text.splitlines()[1:]:
                    num, rest = row.split(". ", 1)
                    style, binding = rest.split(": ")
                    plan.append({"n": int(num), "style": style, "binding": binding.strip()})
                if ACTIVE == "lossy_parsing" and len(plan) > 4:
                    plan = plan[:4]
                set_out(s, plan)
            used = {}
            for p in plan:
                with t.start_as_current_span("check_binding_stock", attributes=attrs("TOOL", p)) as s:
                    if p["binding"] not in STOCK:
                        raise KeyError(f"no binding stock called {p['binding']}")
                    used[p["binding"]] = used.get(p["binding"], 0) + 1
                    left = STOCK[p["binding"]] - used[p["binding"]] * (8 if p["binding"] == "cord" else 2)
                    set_out(s, {"binding": p["binding"], "left": left})
            with t.start_as_current_span("workshop_check", attributes=attrs("CHAIN", {"week": inp["week"]})) as s:
                if len(plan) != len(brooms):
                    raise ValueError(f"{inp['week']}: binding plan covers {len(plan)} of {len(brooms)} brooms")
                for b, p in zip(brooms, plan):
                    if b["spec"]["name"] != b["bristle"]:
                        raise ValueError(f"broom {p['n']}: spec sheet {b['spec']['doc']} is for {b['spec']['name']}, not {b['bristle']}")
                    if b["bristle"] in ("birch", "broomcorn", "bassine", "tampico") and p["binding"] == "cord":
                        raise ValueError(f"broom {p['n']}: cord will not hold {b['bristle']}")
                    if b["handle_cm"] < HANDLES[b["style"]] * 0.9:
                        raise ValueError(f"broom {p['n']}: {b['style']} handle cut to {b['handle_cm']} cm")
                set_out(s, {"week": inp["week"], "brooms": len(brooms), "ready": True})
            set_out(top, {"week": inp["week"], "brooms": len(brooms)})
    finally:
        dump(path)


def _c(n, kind, inp, root, occ, rkind, failure, desc):
    return {"id": f"zzzq-broom-{n}", "kind": kind, "switch": kind, "input": inp,
            "root": {"name": root, "occurrence": occ, "kind": rkind}, "failure": failure, "description": desc}


CASES = [
    _c(1, "context_pollution", 0, "customer_notes", 1, "retrieval", "workshop_check",
       "The customer-notes lookup adds another customer's note about cord bindings to this customer's notes."),
    _c(2, "hallucinated_value", 3, "ChatCompletion", 1, "llm", "check_binding_stock",
       "The model plans a 1.4 mm wire binding that no bristle spec names and the workshop does not stock."),
    _c(3, "wrong_retrieval", 3, "bristle_spec", 4, "retrieval", "workshop_check",
       "The spec lookup for the tampico whisk returns the bassine spec sheet."),
    _c(4, "unit_error", 4, "cut_handle", 3, "tool", "workshop_check",
       "The handle tool gives the cobweb broom's handle length in inches, recorded as centimetres."),
    _c(5, "lossy_parsing", 4, "read_binding_plan", 1, "other", "workshop_check",
       "The plan reader keeps only the first four lines of a six-broom binding plan."),
]
