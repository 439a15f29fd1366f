"""Shared parts of suite_z: the desk each agent books against, truth records and the generator's checks.

Every agent follows one business shape (read the request, plan, pull a price list, screen each
line, choose, place holds, keep a draft, get the customer's paperwork from a sub-agent, quote,
pre-check, submit), in its own domain's words and through its own recording route.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass, field
from typing import Any

from . import kit

BASE = [9.40, 6.10, 12.75, 7.30, 5.20, 8.60, 10.90]
CAP = [40, 8, 35, 30, 45, 25, 50]
HANDLING = ["standard", "standard", "standard", "standard", "special", "standard", "standard"]
ROLES = (
    "intake", "plan", "parse_plan", "fetch", "parse_item", "check_item", "select", "hold",
    "remember", "sub", "resolve", "lookup", "summarise", "total", "preflight", "submit",
)
FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


@dataclass
class Case:
    case: str
    kind: str
    role: str
    description: str
    root_kind: str = ""
    item: int | None = None  # which loop pass (0-based) carries the condition
    hops: int = 1


@dataclass
class Agent:
    key: str
    agent: str
    route: str
    domain: str
    shape: str
    unit: str
    party_word: str
    site_word: str
    doc_word: str
    prefix: str
    sites: list[str]
    customers: list[tuple[str, str]]
    labels: list[str]
    scale: float
    names: dict[str, str]
    inputs: list[dict[str, Any]]
    cases: list[Case] = field(default_factory=list)

    def n(self, role: str) -> str:
        return self.names[role]

    def on(self, role: str, item: int | None = None) -> str | None:
        """The kind of the condition switched on at this role (and loop pass), if any."""
        for c in self.cases:
            if c.role == role and (c.item is None or c.item == item) and kit.active(c.case):
                return c.kind
        return None


class DeskError(Exception):
    """An error answer from the booking desk's HTTP API."""


# ---------------------------------------------------------------- the desk (truth side)

def _date(text: str) -> _dt.date:
    if "/" in text:  # the desk's own parser reads slashed dates US-style
        m, d, y = (int(x) for x in text.split("/"))
        return _dt.date(y, m, d)
    return _dt.date.fromisoformat(text)


def site_code(site: str) -> str:
    return site.split("-")[-1].upper()[:3]


def catalog(A: Agent, site: str, day: _dt.date) -> list[dict[str, Any]]:
    si = A.sites.index(site) if site in A.sites else 0
    out = []
    for k in range(7):
        price = (BASE[k] + 0.35 * si + 0.05 * (day.toordinal() % 7)) * A.scale
        out.append({
            "id": f"{A.prefix}-{site_code(site)}-{day.strftime('%m%d')}-{k + 1}",
            "label": A.labels[k],
            "site": site,
            "price": f"{price:.2f}",
            "capacity": CAP[k],
            "handling": HANDLING[k],
        })
    return out


def request_text(A: Agent, inp: dict[str, Any]) -> str:
    name = dict(A.customers)[inp["customer"]]
    return (f"Request {inp['ref']}: {name} ({inp['customer']}) needs {inp['count']} {A.unit}s for "
            f"{inp['party']} {A.party_word} at {A.site_word} {inp['site']} on {inp['date']}. "
            f"Budget {inp['budget']:.2f} EUR.")


def expected_total(A: Agent, inp: dict[str, Any]) -> float:
    items = [it for it in catalog(A, inp["site"], _date(inp["date"]))
             if it["capacity"] >= inp["party"] and it["handling"] == "standard"]
    items.sort(key=lambda it: float(it["price"]))
    return round(sum(round(float(it["price"]) * 100) for it in items[: inp["count"]]) * inp["party"] / 100, 2)


def desk_fetch(A: Agent, site: str, date: str, limit: int) -> dict[str, Any]:
    """The price list the desk serves for one site and day."""
    day = _date(date)
    kind = A.on("fetch")
    as_of = day
    if kind == "stale_data":  # a cached copy of last week's list
        as_of = day - _dt.timedelta(days=7)
    if kind == "tool_ignores_argument":  # the site filter is not applied
        items = [it for s in A.sites for it in catalog(A, s, day)]
        items.sort(key=lambda it: float(it["price"]))
    else:
        items = catalog(A, site, as_of)
        for it in items:
            it["id"] = it["id"][: -6] + day.strftime("%m%d") + it["id"][-2:]
    items = items[:limit]
    if kind == "truncated_result":
        items = items[:3]
    return {"site": site, "as_of": as_of.isoformat(), "count": len(items), "items": items}


def desk_hold(A: Agent, item_id: str, n: int) -> dict[str, Any]:
    try:
        if A.on("hold", n) == "swallowed_error":
            raise TimeoutError(f"hold service did not answer for {item_id}")
        return {"item": item_id, "hold_id": f"H-{item_id[-9:]}", "status": "held"}
    except TimeoutError:
        return {"item": item_id, "hold_id": None, "status": "queued"}


def desk_lookup(A: Agent, customer: str) -> dict[str, Any]:
    docs = [
        {"doc_id": f"{A.doc_word[:3].upper()}-{customer}-2027", "customer": customer, "valid_until": "2027-12-31"},
        {"doc_id": f"{A.doc_word[:3].upper()}-{customer}-2025", "customer": customer, "valid_until": "2025-12-31"},
    ]
    if A.on("lookup") == "wrong_retrieval":
        docs.reverse()
    return {"query": customer, "hits": docs}


def desk_submit(A: Agent, inp: dict[str, Any], order: dict[str, Any]) -> dict[str, Any]:
    """The desk's validator: raises DeskError with the HTTP body a real API would send."""
    def reject(status: int, code: str, detail: str) -> None:
        raise DeskError(f"HTTP {status}: " + json.dumps({"error": code, "detail": detail}))

    day = _date(inp["date"])
    if order["as_of"] != day.isoformat():
        reject(409, "tariff_version", f"quote built on the {order['as_of']} price list; current list is {day.isoformat()}")
    cat = {it["id"]: it for s in A.sites for it in catalog(A, s, day)}
    for iid in order["items"]:
        if iid not in cat:
            reject(404, "unknown_item", f"{iid} is not offered on {day.isoformat()}")
    if len(order["items"]) != inp["count"]:
        reject(422, "line_count", f"request {inp['ref']} asks for {inp['count']} {A.unit}s, order has {len(order['items'])}")
    for iid in order["items"]:
        if cat[iid]["site"] != inp["site"]:
            reject(409, "site_mismatch", f"{iid} is at {cat[iid]['site']}, request {inp['ref']} is for {inp['site']}")
    if order["party"] != inp["party"]:
        reject(422, "party_mismatch", f"party of {order['party']} does not match request {inp['ref']} ({inp['party']})")
    for iid in order["items"]:
        if cat[iid]["handling"] != "standard":
            reject(409, "handling", f"{iid} needs special handling and cannot be booked online")
        if cat[iid]["capacity"] < inp["party"]:
            reject(409, "capacity", f"{iid} takes {cat[iid]['capacity']}, party is {inp['party']}")
    held = {h["item"] for h in order["holds"] if h.get("hold_id")}
    for iid in order["items"]:
        if iid not in held:
            reject(409, "no_hold", f"no active hold for {iid}")
    if order["customer"] != inp["customer"]:
        reject(403, "customer_mismatch", f"order is for {order['customer']}, request {inp['ref']} is from {inp['customer']}")
    doc = order["document"]
    if not doc.startswith(f"{A.doc_word[:3].upper()}-{inp['customer']}-"):
        reject(403, "document", f"{A.doc_word} {doc} is not on file for {inp['customer']}")
    if doc.endswith("-2025"):
        reject(403, "document", f"{A.doc_word} {doc} expired on 2025-12-31")
    want = round(sum(round(float(cat[i]["price"]) * 100) for i in order["items"]) * inp["party"] / 100, 2)
    if abs(order["total"] - want) > 0.01:
        reject(422, "total_mismatch", f"quoted {order['total']:.2f} EUR, tariff gives {want:.2f} EUR")
    return {"status": 201, "confirmation": f"CF-{inp['ref']}", "total": want}


# ---------------------------------------------------------------- agent-side logic

def parse_plan(A: Agent, text: str) -> dict[str, Any]:
    raw = json.loads(text)
    plan = {"site": raw["site"], "date": raw["date"], "count": int(raw["count"]), "party": int(raw["party"]),
            "customer": raw["customer"], "steps": list(raw.get("steps", []))}
    if A.on("parse_plan") == "off_by_one":
        plan["count"] = int(raw["count"]) - 1  # zero-based slot count
    return plan


def fetch_args(A: Agent, plan: dict[str, Any]) -> dict[str, Any]:
    date = plan["date"]
    if A.on("fetch_args") == "wrong_tool_args":
        date = (_dt.date.fromisoformat(date) + _dt.timedelta(days=7)).isoformat()
    return {"site": plan["site"], "date": date, "limit": 10}


def parse_item(A: Agent, raw: dict[str, Any], i: int) -> dict[str, Any]:
    kind = A.on("parse_item", i)
    if kind == "lossy_parsing":
        cents = int(float(raw["price"])) * 100
    elif kind == "unit_error":
        cents = round(float(raw["price"]))
    else:
        cents = round(float(raw["price"]) * 100)
    return {"id": raw["id"], "site": raw["site"], "price_cents": cents, "capacity": int(raw["capacity"]),
            "handling": raw["handling"]}


def check_item(A: Agent, it: dict[str, Any], plan: dict[str, Any], i: int) -> dict[str, Any]:
    queue = "special" if it["handling"] != "standard" else "standard"
    if A.on("check_item", i) == "wrong_routing":
        queue = "standard"
    if "verify" not in plan["steps"]:
        return {"id": it["id"], "decision": "accept", "queue": queue}
    ok = it["capacity"] >= plan["party"] and queue == "standard"
    return {"id": it["id"], "decision": "accept" if ok else "reject", "queue": queue}


def remember(A: Agent, plan: dict[str, Any], ids: list[str], holds: list[dict[str, Any]]) -> dict[str, Any]:
    draft = {"customer": plan["customer"], "items": list(ids), "party": plan["party"], "count": plan["count"],
             "holds": holds}
    if A.on("remember") == "bad_memory_write":
        draft["party"], draft["count"] = plan["count"], plan["party"]
    return draft


def price_total(A: Agent, items: list[dict[str, Any]], party: int) -> float:
    kind = A.on("total")
    n = len(items) - 1 if kind == "off_by_one" else len(items)
    cents = sum(items[k]["price_cents"] for k in range(n)) * party
    return float(cents) if kind == "unit_error" else round(cents / 100, 2)


def preflight(A: Agent, inp_budget: float, plan: dict[str, Any], ids: list[str], total: float) -> dict[str, Any]:
    if len(ids) != plan["count"]:
        raise ValueError(f"order has {len(ids)} lines but the request asks for {plan['count']} {A.unit}s")
    if total > inp_budget:
        raise ValueError(f"quote {total:.2f} EUR is over the {inp_budget:.2f} EUR budget")
    return {"lines": len(ids), "total": total, "ok": True}


# ---------------------------------------------------------------- the scripted model

def _grab(pattern: str, text: str) -> str:
    m = re.search(pattern, text)
    return m.group(1) if m else ""


def model_plan(A: Agent, text: str) -> str:
    site = _grab(r"at \S+ (\S+) on", text)
    date = _grab(r"on (\d{4}-\d\d-\d\d)", text)
    count = int(_grab(r"needs (\d+) ", text))
    party = int(_grab(r"for (\d+) ", text))
    customer = _grab(r"\(([A-Z]-\d+)\)", text)
    steps = ["fetch", "verify", "hold", "documents", "quote", "submit"]
    kind = A.on("plan")
    if kind == "hallucinated_value":
        party = party + 10
    elif kind == "format_drift":
        y, m, d = date.split("-")
        date = f"{d}/{m}/{y}"
    elif kind == "plan_error":
        steps.remove("verify")
    return json.dumps({"site": site, "date": date, "count": count, "party": party, "customer": customer, "steps": steps})


def model_select(A: Agent, accepted: list[dict[str, Any]], count: int, recent: list[str]) -> list[str]:
    ranked = sorted(accepted, key=lambda it: (it["price_cents"], it["id"]))
    ids = [it["id"] for it in ranked[:count]]
    kind = A.on("select")
    if kind == "hallucinated_value" and ids:
        ids[0] = ids[0][:-1] + "9"
    elif kind == "context_pollution" and ids and recent:
        ids[-1] = recent[0]
    elif kind == "off_by_one":
        ids = [it["id"] for it in ranked[: count - 1]]
    return ids


def model_resolve(A: Agent, text: str) -> str:
    customer = _grab(r"\(([A-Z]-\d+)\)", text)
    if A.on("resolve") == "subagent_wrong_entity":
        ids = [c for c, _ in A.customers]
        customer = ids[(ids.index(customer) + 1) % len(ids)]
    return customer


def recent_orders(A: Agent, inp: dict[str, Any]) -> list[str]:
    """Ids from the customer's last order (a month earlier), kept in the desk's history."""
    day = _date(inp["date"]) - _dt.timedelta(days=28)
    return [catalog(A, inp["site"], day)[k]["id"] for k in (3, 5)]


def chat_policy(A: Agent):
    """The model behind the chat-completions routes (sdk, langgraph, otlp)."""
    def policy(req: Any) -> str:
        msgs = req.body["messages"]
        system, user = msgs[0]["content"], msgs[-1]["content"]
        if "Task: plan" in system:
            return model_plan(A, user)
        if "Task: select" in system:
            data = json.loads(user)
            return json.dumps({"ids": model_select(A, data["candidates"], data["count"], data["recent_orders"])})
        if "Task: resolve" in system:
            return json.dumps({"customer": model_resolve(A, user)})
        if "Task: summarise" in system:
            data = json.loads(user)
            top = data["hits"][0]
            return f"{A.doc_word.capitalize()} {top['doc_id']} on file for {top['customer']}, valid until {top['valid_until']}."
        return "I can only help with bookings."
    return policy


def system_prompt(A: Agent, task: str) -> str:
    what = {
        "plan": f"Read the {A.domain} request and reply with JSON: site, date, count, party, customer, steps.",
        "select": f"Pick the cheapest {A.unit}s among the candidates, as many as asked. Reply with JSON {{\"ids\": [...]}}.",
        "resolve": "Find the customer id the request is about. Reply with JSON {\"customer\": ...}.",
        "summarise": f"Summarise the top {A.doc_word} hit in one sentence.",
    }[task]
    return f"You work the {A.domain} desk. Task: {task}. {what}"


# ---------------------------------------------------------------- reading what was recorded

def load(path: str, route: str) -> list[Any]:
    if route == "otlp":
        from trajdebug.sources.formats import import_path

        res = import_path(path, "otlp")
        return list(res.runs)
    import trajdebug

    return list(trajdebug.load_runs(path))


def ordered(run: Any) -> list[Any]:
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index or 0))


def text_of(step: Any) -> str:
    return json.dumps([step.input, step.output], default=str)


def forbidden_hits(path: str) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        return sorted({m.group(0) for m in FORBIDDEN.finditer(fh.read())})


# ---------------------------------------------------------------- route: shared straight-line pipeline (sdk, otlp)

def pipeline(A: Agent, rec: Any, inp: dict[str, Any]) -> dict[str, Any]:
    """The agent as plain Python over a recorder `rec` (trajdebug SDK or OpenTelemetry spans)."""
    n = A.n
    text = request_text(A, inp)
    with rec.step(n("intake"), "input", {"ref": inp["ref"]}) as s:
        s.output = text
    plan_text = rec.llm(n("plan"), [{"role": "system", "content": system_prompt(A, "plan")},
                                    {"role": "user", "content": text}])
    with rec.step(n("parse_plan"), "parse", plan_text) as s:
        plan = parse_plan(A, plan_text)
        s.output = plan
    args = fetch_args(A, plan)
    with rec.step(n("fetch"), "tool", args) as s:
        sheet = desk_fetch(A, **args)
        s.output = sheet
    accepted = []
    for i, raw in enumerate(sheet["items"]):
        with rec.step(n("parse_item"), "parse", raw) as s:
            it = parse_item(A, raw, i)
            s.output = it
        with rec.step(n("check_item"), "condition", {"item": it, "party": plan["party"], "steps": plan["steps"]}) as s:
            verdict = check_item(A, it, plan, i)
            s.output = verdict
        if verdict["decision"] == "accept":
            accepted.append(it)
    ask = {"count": plan["count"], "candidates": [{k: it[k] for k in ("id", "price_cents", "capacity")} for it in accepted],
           "recent_orders": recent_orders(A, inp)}
    chosen = json.loads(rec.llm(n("select"), [{"role": "system", "content": system_prompt(A, "select")},
                                              {"role": "user", "content": json.dumps(ask)}]))["ids"]
    holds = []
    for j, iid in enumerate(chosen):
        with rec.step(n("hold"), "tool", {"item": iid, "customer": plan["customer"]}) as s:
            h = desk_hold(A, iid, j)
            s.output = h
        holds.append(h)
    with rec.step(n("remember"), "state", {"plan": plan, "items": chosen}) as s:
        draft = remember(A, plan, chosen, holds)
        rec.put("draft", draft)
        s.output = draft
    with rec.step(n("sub"), "agent", {"request": text}) as sub:
        got = json.loads(rec.llm(n("resolve"), [{"role": "system", "content": system_prompt(A, "resolve")},
                                                {"role": "user", "content": text}]))
        with rec.step(n("lookup"), "retrieval", {"query": got["customer"]}) as s:
            found = desk_lookup(A, got["customer"])
            s.output = found
        note = rec.llm(n("summarise"), [{"role": "system", "content": system_prompt(A, "summarise")},
                                        {"role": "user", "content": json.dumps(found)}])
        paper = {"customer": got["customer"], "document": found["hits"][0]["doc_id"], "note": note}
        sub.output = paper
    by_id = {it["id"]: it for it in accepted}
    with rec.step(n("total"), "other", {"items": [by_id.get(i, {"id": i, "price_cents": 0}) for i in chosen]}) as s:
        d = rec.get("draft")
        total = price_total(A, [by_id.get(i, {"id": i, "price_cents": 0}) for i in d["items"]], d["party"])
        s.output = {"total_eur": total, "party": d["party"]}
    with rec.step(n("preflight"), "condition", {"count": plan["count"], "items": chosen, "total": total}) as s:
        s.output = preflight(A, inp["budget"], plan, chosen, total)
    order = {"customer": plan["customer"], "items": d["items"], "party": d["party"], "holds": d["holds"],
             "document": paper["document"], "total": total, "as_of": sheet["as_of"]}
    with rec.step(n("submit"), "tool", order) as s:
        s.output = desk_submit(A, inp, order)
    return s.output


class _Out:
    output: Any = None


class SdkRec:
    """The recorder for the `sdk` route: `trajdebug.step` blocks, `run.state`, an OpenAI client."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def step(self, name: str, kind: str, input: Any) -> Any:
        import trajdebug

        return trajdebug.step(name, kind=kind, input=input)

    def llm(self, name: str, messages: list[dict[str, Any]]) -> str:
        import trajdebug

        with trajdebug.step(name, kind="llm", input={"messages": messages}) as s:
            r = self.client.chat.completions.create(model="fake-model", messages=messages, temperature=0)
            text = r.choices[0].message.content
            s.output = {"role": "assistant", "content": text}
            if r.usage is not None:
                s.usage(model=r.model, prompt_tokens=r.usage.prompt_tokens, completion_tokens=r.usage.completion_tokens)
        return text

    def put(self, key: str, value: Any) -> None:
        import trajdebug

        trajdebug.current_run().state[key] = value

    def get(self, key: str) -> Any:
        import trajdebug

        return trajdebug.current_run().state[key]


def run_sdk(A: Agent, inp: dict[str, Any], path: str, base_url: str) -> str:
    import trajdebug
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key="sk-test-local", max_retries=0)
    try:
        with trajdebug.run(A.agent, task=request_text(A, inp), path=path):
            pipeline(A, SdkRec(client), inp)
    except (DeskError, ValueError):
        return "failure"
    return "success"


OI_KIND = {"input": "CHAIN", "parse": "CHAIN", "condition": "CHAIN", "state": "CHAIN", "other": "CHAIN",
           "tool": "TOOL", "retrieval": "RETRIEVER", "agent": "AGENT", "llm": "LLM"}


class OtelRec:
    """The recorder for the `otlp` route: OpenTelemetry spans with OpenInference attributes."""

    def __init__(self, tracer: Any, client: Any, agent: str) -> None:
        self.tracer, self.client, self.agent = tracer, client, agent
        self.memory: dict[str, Any] = {}

    def step(self, name: str, kind: str, input: Any) -> Any:
        import contextlib

        @contextlib.contextmanager
        def cm():
            attrs = {"openinference.span.kind": OI_KIND[kind], "agent.name": self.agent,
                     "input.value": json.dumps(input) if not isinstance(input, str) else input,
                     "input.mime_type": "text/plain" if isinstance(input, str) else "application/json"}
            if kind in ("tool", "retrieval"):
                attrs["tool.name"] = name
            with self.tracer.start_as_current_span(name, attributes=attrs) as span:
                h = _Out()
                yield h
                out = h.output
                span.set_attribute("output.value", out if isinstance(out, str) else json.dumps(out))
                span.set_attribute("output.mime_type", "text/plain" if isinstance(out, str) else "application/json")
        return cm()

    def llm(self, name: str, messages: list[dict[str, Any]]) -> str:
        with self.tracer.start_as_current_span(name, attributes={
            "openinference.span.kind": "LLM", "agent.name": self.agent, "llm.model_name": "fake-model",
            "llm.provider": "openai", "input.value": json.dumps({"messages": messages}),
            "input.mime_type": "application/json",
        }) as span:
            for i, m in enumerate(messages):
                span.set_attribute(f"llm.input_messages.{i}.message.role", m["role"])
                span.set_attribute(f"llm.input_messages.{i}.message.content", m["content"])
            r = self.client.chat.completions.create(model="fake-model", messages=messages, temperature=0)
            text = r.choices[0].message.content
            span.set_attribute("llm.output_messages.0.message.role", "assistant")
            span.set_attribute("llm.output_messages.0.message.content", text)
            span.set_attribute("output.value", text)
            span.set_attribute("output.mime_type", "text/plain")
            if r.usage is not None:
                span.set_attribute("llm.token_count.prompt", r.usage.prompt_tokens)
                span.set_attribute("llm.token_count.completion", r.usage.completion_tokens)
                span.set_attribute("llm.token_count.total", r.usage.total_tokens)
        return text

    def put(self, key: str, value: Any) -> None:
        self.memory[key] = value

    def get(self, key: str) -> Any:
        return self.memory[key]


_OTEL: dict[str, Any] = {}


def _otel() -> tuple[Any, Any]:
    if not _OTEL:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "suite-z-agents"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        _OTEL.update(exporter=exporter, provider=provider)
    return _OTEL["provider"], _OTEL["exporter"]


def otlp_json(spans: list[Any]) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return MessageToDict(encode_spans(spans))


def run_otlp(A: Agent, inp: dict[str, Any], path: str, base_url: str) -> str:
    from openai import OpenAI

    provider, exporter = _otel()
    exporter.clear()
    tracer = provider.get_tracer("suite_z." + A.key)
    client = OpenAI(base_url=base_url, api_key="sk-test-local", max_retries=0)
    outcome = "success"
    try:
        with tracer.start_as_current_span(A.agent, attributes={
            "openinference.span.kind": "AGENT", "agent.name": A.agent,
            "input.value": request_text(A, inp), "session.id": inp["ref"],
        }) as root:
            out = pipeline(A, OtelRec(tracer, client, A.agent), inp)
            root.set_attribute("output.value", json.dumps(out))
    except (DeskError, ValueError):
        outcome = "failure"
    spans = list(exporter.get_finished_spans())
    exporter.clear()
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(otlp_json(spans), fh)
    return outcome


# ---------------------------------------------------------------- route: LangGraph StateGraph + ChatOpenAI

def build_graph(A: Agent, base_url: str, inp: dict[str, Any]) -> Any:
    from typing import TypedDict

    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph

    n = A.n
    llm = ChatOpenAI(model="fake-model", base_url=base_url, api_key="sk-test-local", temperature=0, max_retries=0)

    def ask(task: str, content: str) -> str:
        return llm.invoke([SystemMessage(system_prompt(A, task)), HumanMessage(content)]).content

    def _fetch(site: str, date: str, limit: int) -> dict:
        return desk_fetch(A, site, date, limit)

    def _hold(item: str, customer: str, attempt_no: int) -> dict:
        return desk_hold(A, item, attempt_no)

    def _submit(order: dict) -> dict:
        return desk_submit(A, inp, order)

    fetch_tool = StructuredTool.from_function(_fetch, name=n("fetch"), description="List the price sheet for a site and day.")
    hold_tool = StructuredTool.from_function(_hold, name=n("hold"), description="Place a hold on one item.")
    submit_tool = StructuredTool.from_function(_submit, name=n("submit"), description="Submit the order to the desk.")

    class PaperRetriever(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
            return [Document(page_content=json.dumps(h), metadata=h) for h in desk_lookup(A, query)["hits"]]

    retriever = PaperRetriever().with_config({"run_name": n("lookup")})

    class S(TypedDict, total=False):
        request: str
        plan_text: str
        plan: dict
        sheet: dict
        idx: int
        parsed: list
        accepted: list
        chosen: list
        holds: list
        draft: dict
        paper: dict
        total: float
        check: dict
        receipt: dict

    def intake(s: S) -> dict:
        return {"request": request_text(A, inp), "idx": 0, "parsed": [], "accepted": [], "holds": []}

    def plan(s: S) -> dict:
        return {"plan_text": ask("plan", s["request"])}

    def step(role: str, fn: Any, arg: Any) -> Any:
        return RunnableLambda(fn).with_config({"run_name": n(role)}).invoke(arg)

    def parse_plan_node(s: S) -> dict:
        return {"plan": step("parse_plan", lambda text: parse_plan(A, text), s["plan_text"])}

    def fetch(s: S) -> dict:
        return {"sheet": fetch_tool.invoke(fetch_args(A, s["plan"]))}

    def check_item_node(s: S) -> dict:
        i = s["idx"]
        it = step("parse_item", lambda raw: parse_item(A, raw, i), s["sheet"]["items"][i])
        verdict = step("check_item", lambda x: check_item(A, x["item"], x["plan"], i), {"item": it, "plan": s["plan"]})
        acc = s["accepted"] + [it] if verdict["decision"] == "accept" else s["accepted"]
        return {"idx": i + 1, "accepted": acc, "parsed": s["parsed"] + [it]}

    def select(s: S) -> dict:
        ask_for = {"count": s["plan"]["count"],
                   "candidates": [{k: it[k] for k in ("id", "price_cents", "capacity")} for it in s["accepted"]],
                   "recent_orders": recent_orders(A, inp)}
        return {"chosen": json.loads(ask("select", json.dumps(ask_for)))["ids"]}

    def hold(s: S) -> dict:
        holds = []
        for j, iid in enumerate(s["chosen"]):
            holds.append(hold_tool.invoke({"item": iid, "customer": s["plan"]["customer"], "attempt_no": j}))
        return {"holds": holds}

    def remember_node(s: S) -> dict:
        return {"draft": step("remember", lambda x: remember(A, x["plan"], x["chosen"], x["holds"]),
                              {"plan": s["plan"], "chosen": s["chosen"], "holds": s["holds"]})}

    # the paperwork sub-agent: its own compiled graph, run as one node of the parent
    class P(TypedDict, total=False):
        request: str
        customer: str
        hits: list
        paper: dict

    def resolve(p: P) -> dict:
        return {"customer": json.loads(ask("resolve", p["request"]))["customer"]}

    def lookup(p: P) -> dict:
        return {"hits": [d.metadata for d in retriever.invoke(p["customer"])]}

    def summarise(p: P) -> dict:
        note = ask("summarise", json.dumps({"query": p["customer"], "hits": p["hits"]}))
        return {"paper": {"customer": p["customer"], "document": p["hits"][0]["doc_id"], "note": note}}

    sub = StateGraph(P)
    sub.add_node(n("resolve"), resolve)
    sub.add_node(n("lookup") + "_node", lookup)
    sub.add_node(n("summarise"), summarise)
    sub.add_edge(START, n("resolve"))
    sub.add_edge(n("resolve"), n("lookup") + "_node")
    sub.add_edge(n("lookup") + "_node", n("summarise"))
    sub.add_edge(n("summarise"), END)
    sub_app = sub.compile()

    def paperwork(s: S) -> dict:
        return {"paper": sub_app.invoke({"request": s["request"]})["paper"]}

    def total_node(s: S) -> dict:
        by_id = {it["id"]: it for it in s["accepted"]}
        d = s["draft"]
        lines = [by_id.get(i, {"id": i, "price_cents": 0}) for i in d["items"]]
        return {"total": step("total", lambda x: price_total(A, x["lines"], x["party"]), {"lines": lines, "party": d["party"]})}

    def preflight_node(s: S) -> dict:
        return {"check": step("preflight", lambda x: preflight(A, inp["budget"], x["plan"], x["chosen"], x["total"]),
                              {"plan": s["plan"], "chosen": s["chosen"], "total": s["total"]})}

    def submit(s: S) -> dict:
        d = s["draft"]
        order = {"customer": s["plan"]["customer"], "items": d["items"], "party": d["party"], "holds": d["holds"],
                 "document": s["paper"]["document"], "total": s["total"], "as_of": s["sheet"]["as_of"]}
        return {"receipt": submit_tool.invoke({"order": order})}

    g = StateGraph(S)
    order = [("intake", intake), ("plan", plan), ("parse_plan", parse_plan_node), ("fetch", fetch),
             ("check_item", check_item_node), ("select", select), ("hold", hold),
             ("remember", remember_node), ("sub", paperwork), ("total", total_node), ("preflight", preflight_node),
             ("submit", submit)]
    node = {role: (n(role) if role in ("intake", "plan", "select", "sub") else n(role) + "_node") for role, _ in order}
    for role, fn in order:
        g.add_node(node[role], fn)
    g.add_edge(START, node["intake"])
    for a, b in [("intake", "plan"), ("plan", "parse_plan"), ("parse_plan", "fetch"), ("fetch", "check_item"),
                 ("select", "hold"), ("hold", "remember"), ("remember", "sub"), ("sub", "total"),
                 ("total", "preflight"), ("preflight", "submit")]:
        g.add_edge(node[a], node[b])
    g.add_conditional_edges(node["check_item"], lambda s: node["check_item"] if s["idx"] < len(s["sheet"]["items"]) else node["select"],
                            [node["check_item"], node["select"]])
    g.add_edge(node["submit"], END)
    return g.compile()


def run_langgraph(A: Agent, inp: dict[str, Any], path: str, base_url: str) -> str:
    import os

    from trajdebug.integrations.langchain import TrajdebugTracer

    if os.path.exists(path):
        os.remove(path)
    app = build_graph(A, base_url, inp)
    tracer = TrajdebugTracer(path=path, name=A.agent, task=request_text(A, inp))
    try:
        app.invoke({}, config={"callbacks": [tracer], "recursion_limit": 120,
                               "configurable": {"thread_id": inp["ref"]}})
    except (DeskError, ValueError):
        return "failure"
    return "success"


# ---------------------------------------------------------------- route: OpenAI Agents SDK

def agents_policy(A: Agent, inp: dict[str, Any]):
    """The model behind the Agents SDK route: a coordinator that calls tools in turn, and a paperwork agent."""
    from trajdebug.testing import Reply, tool_call

    n = A.n

    def policy(req: Any) -> Any:
        msgs = req.body["messages"]
        system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
        users = [m["content"] for m in msgs if m["role"] == "user"]
        results = [m["content"] for m in msgs if m["role"] == "tool"]
        calls = [(tc["function"]["name"], json.loads(tc["function"]["arguments"] or "{}"))
                 for m in msgs if m["role"] == "assistant" for tc in (m.get("tool_calls") or [])]
        if "Task: resolve" in system:
            if not results:
                return Reply(tool_calls=(tool_call(n("lookup"), {"customer": model_resolve(A, users[0])}),))
            top = json.loads(results[-1])["hits"][0]
            return json.dumps({"customer": top["customer"], "document": top["doc_id"], "valid_until": top["valid_until"]})
        request = users[0]
        done = {name: (args, results[k]) for k, (name, args) in enumerate(calls) if k < len(results)}
        plan = json.loads(model_plan(A, request))
        if n("fetch") not in done:
            return Reply(tool_calls=(tool_call(n("fetch"), fetch_args(A, plan)),))
        sheet = json.loads(done[n("fetch")][1])
        accepted = []
        for raw in sheet["items"]:
            it = {"id": raw["id"], "price_cents": round(float(raw["price"]) * 100), "capacity": raw["capacity"]}
            ok = raw["capacity"] >= plan["party"] and raw["handling"] == "standard"
            if ok or "verify" not in plan["steps"]:
                accepted.append(it)
        recent = json.loads(request.split("Recent orders: ")[1]) if "Recent orders: " in request else []
        chosen = model_select(A, accepted, plan["count"], recent)
        held = [json.loads(r) for (name, _), r in zip(calls, results) if name == n("hold")]
        if len(held) < len(chosen):
            return Reply(tool_calls=(tool_call(n("hold"), {"item": chosen[len(held)], "customer": plan["customer"]}),))
        if n("remember") not in done:
            return Reply(tool_calls=(tool_call(n("remember"), {"customer": plan["customer"], "items": chosen,
                                                                "party": plan["party"], "count": plan["count"]}),))
        draft = json.loads(done[n("remember")][1])
        if n("sub") not in done:
            return Reply(tool_calls=(tool_call(n("sub"), {"input": request.split(" Recent orders:")[0]}),))
        paper = json.loads(done[n("sub")][1])
        if n("total") not in done:
            return Reply(tool_calls=(tool_call(n("total"), {"items": draft["items"]}),))
        quote = json.loads(done[n("total")][1])
        if n("submit") not in done:
            return Reply(tool_calls=(tool_call(n("submit"), {
                "customer": plan["customer"], "items": draft["items"], "party": draft["party"],
                "hold_ids": [h.get("hold_id") or "" for h in held], "document": paper["document"],
                "total": quote["total_eur"], "as_of": sheet["as_of"]}),))
        return f"Done: {json.loads(done[n('submit')][1])['confirmation']}."

    return policy


def run_agents(A: Agent, inp: dict[str, Any], path: str, base_url: str) -> str:
    import asyncio
    import os

    from agents import Agent as SdkAgent
    from agents import OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    if os.path.exists(path):
        os.remove(path)
    n = A.n
    client = AsyncOpenAI(base_url=base_url, api_key="sk-test-local", max_retries=0)
    model = OpenAIChatCompletionsModel(model="fake-model", openai_client=client)
    mem: dict[str, Any] = {"holds": 0}

    @function_tool(name_override=n("fetch"))
    def fetch(site: str, date: str, limit: int) -> str:
        """List the price sheet for a site and day."""
        mem["sheet"] = desk_fetch(A, site, date, limit)
        return json.dumps(mem["sheet"])

    @function_tool(name_override=n("hold"))
    def hold(item: str, customer: str) -> str:
        """Place a hold on one item for a customer."""
        h = desk_hold(A, item, mem["holds"])
        mem["holds"] += 1
        return json.dumps(h)

    @function_tool(name_override=n("remember"))
    def remember_tool(customer: str, items: list[str], party: int, count: int) -> str:
        """Save the order draft to the job memory."""
        mem["draft"] = remember(A, {"customer": customer, "party": party, "count": count}, items, [])
        return json.dumps(mem["draft"])

    @function_tool(name_override=n("total"))
    def quote(items: list[str]) -> str:
        """Price the drafted items from the current sheet."""
        rows = {raw["id"]: (i, raw) for i, raw in enumerate(mem["sheet"]["items"])}
        lines = [parse_item(A, rows[i][1], rows[i][0]) if i in rows else {"id": i, "price_cents": 0} for i in items]
        total = price_total(A, lines, mem["draft"]["party"])
        return json.dumps({"items": items, "party": mem["draft"]["party"], "total_eur": total})

    @function_tool(name_override=n("submit"), failure_error_function=None)
    def submit(customer: str, items: list[str], party: int, hold_ids: list[str], document: str, total: float,
               as_of: str) -> str:
        """Submit the order to the desk."""
        order = {"customer": customer, "items": items, "party": party, "document": document, "total": total,
                 "as_of": as_of, "holds": [{"item": i, "hold_id": h or None} for i, h in zip(items, hold_ids)]}
        return json.dumps(desk_submit(A, inp, order))

    @function_tool(name_override=n("lookup"))
    def lookup(customer: str) -> str:
        """Search the customer's documents on file."""
        return json.dumps(desk_lookup(A, customer))

    paper_agent = SdkAgent(name=n("sub"), instructions=system_prompt(A, "resolve") + " Then look up the customer's "
                           f"{A.doc_word} and answer with its id.", tools=[lookup], model=model)
    coordinator = SdkAgent(
        name=A.agent, model=model,
        instructions=f"You work the {A.domain} desk. Fetch the sheet, screen and hold the cheapest fitting items, "
                     "save the draft, get the paperwork, quote and submit.",
        tools=[fetch, hold, remember_tool, paper_agent.as_tool(tool_name=n("sub"), tool_description=f"Find the {A.doc_word} on file."),
               quote, submit])
    set_trace_processors([TrajdebugProcessor(path=path, name=A.agent, task=request_text(A, inp))])
    prompt = request_text(A, inp) + " Recent orders: " + json.dumps(recent_orders(A, inp))
    async def main() -> None:
        try:
            await Runner.run(coordinator, prompt, max_turns=30,
                             run_config=RunConfig(workflow_name=A.agent, group_id=inp["ref"]))
        finally:
            await client.close()

    try:
        asyncio.run(main())
    except Exception as exc:  # the desk's rejection surfaces from Runner.run
        if "HTTP 4" not in str(exc):
            raise
        return "failure"
    return "success"


def agents_locate(A: Agent, case: Case, steps: list[Any]) -> Any:
    """The recorded step a case's condition sits in, for the Agents SDK route."""
    n = A.n
    first_call = {"plan": n("fetch"), "fetch_args": n("fetch"), "select": n("hold"), "resolve": n("lookup")}
    if case.role in first_call:
        want = first_call[case.role]
        if case.role == "plan" and case.kind == "hallucinated_value":
            want = n("remember")  # the first call that carries the party figure
        elif case.role == "plan" and case.kind == "plan_error":
            want = n("hold")  # the first call made without screening
        llms = [s for s in steps if s.kind == "llm" and f'"{want}"' in json.dumps(s.output, default=str)]
        return llms[0]
    if case.role == "parse_item":  # the quote tool parses the sheet rows it prices
        return [s for s in steps if s.name == n("total") and s.kind == "tool"][0]
    found = [s for s in steps if s.name == n(case.role) and s.kind == "tool"]
    return found[case.item or 0] if case.item is not None else found[0]
