"""Archaeological finds registration (otlp route): context sheets, a model treatment plan, per-bag processing
(contents, weighing, small-find numbering), pottery typology, a reference RETRIEVER, a model description,
an own treatment audit and the finds register API."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.heldout.suite_s import kit
from benchmarks.heldout.suite_s._otel import Traced
from openai import OpenAI


AGENT = "finds-registrar"
ROUTE = "otlp"
EXT = "json"
DOMAIN = "archaeological excavation finds registration"
SHAPE = "AGENT root; context-sheet tool, model treatment plan, per-bag CHAIN (contents tool, scale tool per object, numbering CHAIN), typology tool, reference RETRIEVER, model description, audit CHAIN, register tool"

MATERIALS = ["ceramic", "iron", "bone", "ceramic", "flint", "copper alloy", "ceramic"]
TYPES = {"Northumbria": "NB", "Wessex": "WX"}


def _trench(site, trench, region, first_ctx, n_bags, last_sf):
    bags = []
    for i in range(n_bags):
        bags.append({"bag": f"B{trench}{i + 1:02d}", "context": first_ctx + 2 * i, "material": MATERIALS[(trench + i) % 7],
                     "objects": 2 if i % 2 == 0 else 1})
    return {"site": site, "trench": trench, "region": region, "bags": bags, "last_sf": last_sf}


CASES = [
    {"case": "finds_reference_context", "fault": "fd1", "kind": "context_pollution", "root": "reference_finds",
     "fail": "finds_register", "marker": "context 1187", "input": _trench("ELW24", 3, "Northumbria", 1040, 4, 213)},
    {"case": "finds_treatment_plan", "fault": "fd2", "kind": "plan_error", "root": "ChatCompletion",
     "fail": "treatment_audit", "marker": "B402=wash", "input": _trench("ELW24", 4, "Northumbria", 1060, 4, 229)},
    {"case": "finds_scale_reading", "fault": "fd3", "kind": "swallowed_error", "root": "weigh_find",
     "fail": "finds_register", "marker": '"grams": 0.0', "input": _trench("CRB25", 1, "Wessex", 2010, 3, 97)},
    {"case": "finds_small_numbers", "fault": "fd4", "kind": "off_by_one", "root": "assign_numbers",
     "fail": "finds_register", "marker": '["SF-309", "SF-310"]', "input": _trench("CRB25", 2, "Wessex", 2030, 4, 306)},
    {"case": "finds_typology_region", "fault": "fd5", "kind": "tool_ignores_argument", "root": "pottery_typology",
     "fail": "finds_register", "marker": "WX-", "input": _trench("ELW24", 5, "Northumbria", 1080, 3, 241)},
]
REFS = [_trench("ELW24", 1, "Northumbria", 1000, 3, 180), _trench("ELW24", 2, "Northumbria", 1020, 4, 195),
        _trench("CRB25", 3, "Wessex", 2050, 3, 320), _trench("CRB25", 4, "Wessex", 2070, 4, 331)]

T = Traced(AGENT)


class RegisterError(RuntimeError):
    pass


def policy(request):
    msgs = request.body["messages"]
    system, data = msgs[0]["content"], json.loads(msgs[-1]["content"])
    if system.startswith("You plan"):
        plan = []
        for b in data["bags"]:
            dry = b["material"] in ("iron", "copper alloy")
            if kit.active("fd2") and b["bag"] == "B402":
                dry = False
            plan.append(f"{b['bag']}={'dry-brush' if dry else 'wash'}")
        return json.dumps({"plan": ";".join(plan)})
    if system.startswith("You describe"):
        pottery = [r.split("context ")[1].split()[0] for r in data["references"] if "pottery" in r]
        out = []
        for f in data["finds"]:
            ctx = pottery[-1] if (pottery and f["material"] == "ceramic") else f["context"]
            out.append({"sf": f["sf"], "context": int(ctx), "text": f"{f['material']} find from context {ctx}"})
        return json.dumps({"descriptions": out})
    return "{}"


def record(trench: dict, path: Path, server) -> None:
    server.use(policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    site, tr = trench["site"], trench["trench"]

    def context_sheets(site: str, trench: int) -> dict:
        return {"site": site, "trench": trench,
                "bags": [{k: b[k] for k in ("bag", "context", "material")} for b in trench_bags]}

    trench_bags = trench["bags"]

    def bag_contents(bag: str) -> dict:
        b = next(x for x in trench_bags if x["bag"] == bag)
        return {"bag": bag, "objects": [f"{bag}-{k + 1}" for k in range(b["objects"])], "material": b["material"]}

    def weigh_find(object_id: str) -> dict:
        try:
            if kit.active("fd3") and object_id.endswith("02-1"):
                raise ConnectionError("scale bridge did not answer")
            grams = 12.5 + 7 * (sum(map(ord, object_id)) % 11)
        except ConnectionError:
            grams = 0.0
        return {"object": object_id, "grams": grams}

    def pottery_typology(bag: str, region: str) -> dict:
        series = "Wessex" if kit.active("fd5") else region
        return {"bag": bag, "series": series, "fabric": f"{TYPES[series]}-{10 + int(bag[-2:])}"}

    def reference_finds(query: str) -> dict:
        ctxs = [b["context"] for b in trench_bags]
        docs = [{"id": f"{site}-REF-{c}", "content": f"season notes: context {c} fill, finds as expected"} for c in ctxs]
        if kit.active("fd1"):
            docs.append({"id": f"{site}-REF-1187", "content": "season notes: context 1187 pit fill, coin and pottery"})
        return {"documents": docs}

    def finds_register(site: str, records: list) -> dict:
        known = {b["bag"]: b["context"] for b in trench_bags}
        seen = set()
        for r in records:
            if r["sf"] <= trench["last_sf"] or r["sf"] in seen:
                raise RegisterError(f"finds register 409: small find SF-{r['sf']} is already registered on {site}")
            seen.add(r["sf"])
            if r["context"] != known[r["bag"]]:
                raise RegisterError(f"finds register 422: SF-{r['sf']} recorded in context {r['context']}, bag {r['bag']} was lifted from context {known[r['bag']]}")
            if r["grams"] <= 0:
                raise RegisterError(f"finds register 422: SF-{r['sf']} has no weight")
            if r.get("fabric") and not r["fabric"].startswith(TYPES[trench["region"]]):
                raise RegisterError(f"finds register 422: fabric {r['fabric']} is not in the {trench['region']} type series")
        return {"site": site, "registered": len(records)}

    try:
        with T.session(path), T.span(AGENT, "AGENT", {"site": site, "trench": tr}) as top:
            sheets = T.tool("context_sheets", context_sheets, {"site": site, "trench": tr})
            reply = client.chat.completions.create(model="finds-model", messages=[
                {"role": "system", "content": "You plan finds treatment per bag. Answer JSON."},
                {"role": "user", "content": json.dumps(sheets)}])
            plan = dict(p.split("=") for p in json.loads(reply.choices[0].message.content)["plan"].split(";"))
            finds = []
            next_sf = trench["last_sf"]
            for b in sheets["bags"]:
                with T.span("process_bag", "CHAIN", {"bag": b["bag"]}) as proc:
                    contents = T.tool("bag_contents", bag_contents, {"bag": b["bag"]})
                    weights = [T.tool("weigh_find", weigh_find, {"object_id": o}) for o in contents["objects"]]
                    with T.span("assign_numbers", "CHAIN", {"bag": b["bag"], "after": next_sf, "objects": contents["objects"]}) as sp:
                        start = next_sf if (kit.active("fd4") and b["bag"].endswith("03")) else next_sf + 1
                        numbered = [{"sf": start + k, "bag": b["bag"], "object": w["object"], "grams": w["grams"],
                                     "material": b["material"], "context": b["context"]} for k, w in enumerate(weights)]
                        next_sf = numbered[-1]["sf"]
                        sp.set({"numbers": [f"SF-{n['sf']}" for n in numbered]})
                    if b["material"] == "ceramic":
                        typ = T.tool("pottery_typology", pottery_typology, {"bag": b["bag"], "region": trench["region"]})
                        for n in numbered:
                            n["fabric"] = typ["fabric"]
                    finds += numbered
                    proc.set({"bag": b["bag"], "finds": len(numbered)})
            refs = T.tool("reference_finds", reference_finds, {"query": f"{site} trench {tr} context notes"}, kind="RETRIEVER")
            reply = client.chat.completions.create(model="finds-model", messages=[
                {"role": "system", "content": "You describe each small find for the register. Answer JSON."},
                {"role": "user", "content": json.dumps({"finds": finds, "references": [d["content"] for d in refs["documents"]]})}])
            desc = {d["sf"]: d for d in json.loads(reply.choices[0].message.content)["descriptions"]}
            with T.span("treatment_audit", "CHAIN", {"plan": plan}) as sp:
                for b in sheets["bags"]:
                    if b["material"] in ("iron", "copper alloy") and plan[b["bag"]] == "wash":
                        raise RegisterError(f"conservation rule: {b['material']} finds in {b['bag']} must not be wet-cleaned")
                sp.set({"ok": True, "bags": len(plan)})
            records = [{**f, "context": desc[f["sf"]]["context"], "text": desc[f["sf"]]["text"]} for f in finds]
            top.set(T.tool("finds_register", finds_register, {"site": site, "records": records}))
    except RegisterError:
        pass
