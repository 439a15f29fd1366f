"""The two OpenTelemetry agents: the openai client instrumented by openinference-instrumentation-openai,
the agent's own OpenInference spans around its steps, exported as OTLP JSON: reservoir release planning
and bridge inspection."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from trajdebug.testing import Reply, Request, tool_call

from ._harness import active


_EXPORTER = InMemorySpanExporter()
_PROVIDER = TracerProvider(resource=Resource.create({"service.name": "ops-agents"}))
_PROVIDER.add_span_processor(SimpleSpanProcessor(_EXPORTER))
_INSTRUMENTED: list[bool] = []
_TRACER = _PROVIDER.get_tracer("ops-agents")


def _instrument() -> None:
    if not _INSTRUMENTED:
        OpenAIInstrumentor().instrument(tracer_provider=_PROVIDER)
        _INSTRUMENTED.append(True)


class _Span:
    def __init__(self, span: Any) -> None:
        self.span = span

    def output(self, value: Any) -> Any:
        self.span.set_attribute("output.value", value if isinstance(value, str) else json.dumps(value, sort_keys=True))
        self.span.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")
        return value


@contextmanager
def span(name: str, kind: str, given: Any = None, **attrs: Any) -> Iterator[_Span]:
    with _TRACER.start_as_current_span(name) as s:
        s.set_attribute("openinference.span.kind", kind)
        if given is not None:
            s.set_attribute("input.value", json.dumps(given, sort_keys=True))
            s.set_attribute("input.mime_type", "application/json")
        for k, v in attrs.items():
            s.set_attribute(k.replace("_", "."), v)
        yield _Span(s)


def traced(kind: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        names = fn.__code__.co_varnames[: fn.__code__.co_argcount]

        def inner(*args: Any, **kwargs: Any) -> Any:
            extra = {"tool_name": fn.__name__} if kind == "TOOL" else {}
            given = {**dict(zip(names, args)), **kwargs}
            with span(fn.__name__, kind, given, **extra) as s:
                return s.output(fn(*args, **kwargs))

        return inner

    return wrap


def _export(path: Path) -> None:
    req = encode_spans(_EXPORTER.get_finished_spans())
    path.write_text(json.dumps(MessageToDict(req)))
    _EXPORTER.clear()


def _run(name: str, path: Path, given: Any, body: Callable[[], Any]) -> None:
    _instrument()
    _EXPORTER.clear()
    try:
        with span(name, "AGENT", given, agent_name=name) as s:
            s.output(body())
    finally:
        _PROVIDER.force_flush()
        _export(path)


def _chat(client: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Any:
    kwargs = {"tools": tools} if tools else {}
    return client.chat.completions.create(model="fake-model", messages=messages, **kwargs).choices[0].message


def _fn(name: str, props: dict[str, str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": {k: {"type": v} for k, v in props.items()}, "required": list(props)}}}


# -- reservoir release planning -------------------------------------------------------------------

_ORDERS = {"Lower Canal": [22, 24, 26, 25, 28, 30, 27, 24, 23, 21], "Upper Canal": [6, 5, 7, 6, 5, 6, 7, 5, 6, 6],
           "East Ditch": [12, 13, 12, 14, 15, 13, 12, 12, 11, 10], "Mill Race": [8, 9, 9, 10, 9, 8, 8, 7, 7, 6]}


@traced("TOOL")
def read_inflow_forecast(reservoir: str, days: int) -> dict[str, Any]:
    flows = [40.0 + d for d in range(days)]
    if active("k_res_unit"):
        flows = [round(f * 35.31, 1) for f in flows]
    return {"reservoir": reservoir, "unit": "m3/s", "inflow": flows}


_GAUGE = {"calls": 0}


@traced("TOOL")
def storage_gauge(reservoir: str) -> dict[str, Any]:
    _GAUGE["calls"] += 1
    if _GAUGE["calls"] == 1:
        raise ConnectionError("telemetry link to dam gauge dropped")
    return {"reservoir": reservoir, "storage_hm3": 300.0, "read_at": "2026-12-02T05:00Z"}


@traced("CHAIN")
def read_storage(reservoir: str) -> dict[str, Any]:
    try:
        return storage_gauge(reservoir)
    except ConnectionError:
        if active("k_res_swallow"):
            return {"reservoir": reservoir, "storage_hm3": 0.0, "gauge": "offline"}
        return storage_gauge(reservoir)


@traced("TOOL")
def get_demands(district: str, days: int) -> dict[str, Any]:
    orders = _ORDERS[district][:days]
    if active("k_res_trunc"):
        orders = orders[:5]
    return {"district": district, "orders_m3s": orders, "days": len(orders)}


@traced("CHAIN")
def build_prompt(reservoir: str, inflow: dict[str, Any], storage: dict[str, Any]) -> str:
    notes = ["full supply level 400 hm3", "minimum operating level 150 hm3"]
    if active("k_res_pollute"):
        notes.append("ops log 2025-02: hold 320 m3/s release during flood watch")
    return json.dumps({"reservoir": reservoir, "inflow": inflow["inflow"], "storage_hm3": storage["storage_hm3"], "notes": notes})


def reservoir_policy(request: Request) -> Reply | str:
    msgs = request.body["messages"]
    data = json.loads(msgs[1]["content"])
    if msgs[-1]["role"] != "tool":
        district = "Upper Canal" if active("k_res_args") else data["district"]
        return Reply(tool_calls=(tool_call("get_demands", {"district": district, "days": len(data["inflow"])}),))
    orders = json.loads(msgs[-1]["content"])["orders_m3s"]
    plan = []
    for d, need in enumerate(orders):
        release = need + max(0.0, data["inflow"][d] - 60)
        if data["storage_hm3"] < 150:
            release = 0.0
        if d == 0 and any("flood watch" in n for n in data["notes"]):
            release = 320.0
        plan.append(round(release, 1))
    return "Release plan (m3/s): " + ", ".join(str(p) for p in plan)


@traced("CHAIN")
def parse_release_plan(text: str) -> list[float]:
    return [float(x) for x in text.split(":", 1)[1].split(",")]


@traced("TOOL")
def check_downstream(day: int, release: float) -> dict[str, Any]:
    if release > 300:
        raise ValueError(f"river authority: day {day} release {release} m3/s exceeds the 300 m3/s channel limit")
    return {"day": day, "release": release, "stage_m": round(1.2 + release / 200, 2)}


@traced("CHAIN")
def final_check(district: str, plan: list[float], days: int) -> dict[str, Any]:
    if len(plan) != days:
        raise AssertionError(f"release schedule covers {len(plan)} of {days} days")
    for d, (r, need) in enumerate(zip(plan, _ORDERS[district])):
        if r < need:
            raise AssertionError(f"day {d + 1}: release {r} m3/s is below the {district} order of {need} m3/s")
    return {"days": days, "total_release_m3s": sum(plan)}


@traced("TOOL")
def submit_schedule(reservoir: str, plan: list[float]) -> dict[str, Any]:
    return {"reservoir": reservoir, "schedule": "RS-2612", "days": len(plan)}


_TOOLS = [_fn("get_demands", {"district": "string", "days": "integer"})]


def reservoir_agent(clients: dict[str, Any], given: dict[str, Any], path: Path) -> None:
    client = clients["sync"]
    _GAUGE["calls"] = 0

    def body() -> Any:
        inflow = read_inflow_forecast(given["reservoir"], 10)
        storage = read_storage(given["reservoir"])
        prompt = json.loads(build_prompt(given["reservoir"], inflow, storage))
        msgs: list[dict[str, Any]] = [{"role": "system", "content": "You plan reservoir releases."},
                                      {"role": "user", "content": json.dumps({**prompt, "district": given["district"]})}]
        first = _chat(client, msgs, _TOOLS)
        call = first.tool_calls[0]
        result = get_demands(**json.loads(call.function.arguments))
        msgs += [first.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}]
        plan = parse_release_plan(_chat(client, msgs, _TOOLS).content)
        for d, r in enumerate(plan):
            check_downstream(d + 1, r)
        final_check(given["district"], plan, 10)
        return submit_schedule(given["reservoir"], plan)

    _run("release-planner", path, given, body)


RESERVOIR_INPUTS = [{"reservoir": "Cold Creek Dam", "district": "Lower Canal"}, {"reservoir": "Cold Creek Dam", "district": "East Ditch"},
                    {"reservoir": "Pine Fork Dam", "district": "Mill Race"}, {"reservoir": "Pine Fork Dam", "district": "Upper Canal"},
                    {"reservoir": "Cold Creek Dam", "district": "Mill Race"}]


# -- bridge inspection ------------------------------------------------------------------------------

_BRIDGES = {f"B-06{n:02d}": r for n, r in zip(range(10, 24), [
    "deck 7, superstructure 7, substructure 6", "deck 6, superstructure 7, substructure 7", "deck 5, superstructure 6, substructure 6",
    "deck 7, superstructure 6, substructure 7", "deck 6, superstructure 6, substructure 5", "deck 7, superstructure 7, substructure 7",
    "deck 6, superstructure 5, substructure 6", "deck 4, superstructure 5, substructure 3", "deck 7, superstructure 6, substructure 6",
    "deck 6, superstructure 6, substructure 6", "deck 5, superstructure 5, substructure 5", "deck 7, superstructure 7, substructure 6",
    "deck 6, superstructure 7, substructure 6", "deck 4, superstructure 4, substructure 4"])}
_CORRIDORS = {"I-90 east": list(_BRIDGES), "Route 9": ["B-0610", "B-0612", "B-0614"], "River Road": ["B-0615", "B-0616", "B-0618"],
              "Harbor spur": ["B-0619", "B-0620", "B-0621"], "Canal Street": ["B-0611", "B-0613", "B-0622"]}
_RATED_T = {b: 15 if "4" in r else 36 for b, r in _BRIDGES.items()}


@traced("RETRIEVER")
def list_bridges(corridor: str) -> dict[str, Any]:
    return {"corridor": corridor, "bridges": _CORRIDORS[corridor]}


@traced("TOOL")
def fetch_inspection(bridge: str) -> dict[str, Any]:
    return {"bridge": bridge, "ratings": _BRIDGES[bridge], "inspected": "2026-10-14", "rated_t": _RATED_T[bridge]}


@traced("CHAIN")
def parse_ratings(text: str) -> dict[str, Any]:
    parts = [p.strip().split(" ") for p in text.split(",")]
    if active("k_br_lossy"):
        parts = parts[:2]
    out: dict[str, Any] = {name: int(v) for name, v in parts}
    out["min_rating"] = min(out.values())
    return out


def bridge_policy(request: Request) -> str:
    msgs = request.body["messages"]
    data = json.loads(msgs[-1]["content"])
    if "bridges" in data:
        skip = [b for b in data["bridges"] if b == "B-0619"] if active("k_br_plan") else []
        order = [b for b in data["bridges"] if b not in skip]
        extra = f"; defer {skip[0]} to 2027" if skip else ""
        return f"Inspection order: {', '.join(order)}{extra}"
    bridge, low = data["bridge"], data["ratings"]["min_rating"]
    track = "structural" if low <= 3 else "routine"
    if active("k_br_route") and bridge == "B-0617":
        track = "routine"
    posting = data["rated_t"]
    if active("k_br_halluc") and bridge == "B-0623":
        posting = 40
    return f"{bridge}: {track}, post {posting} t"


@traced("CHAIN")
def remember_priority(memory: dict[str, Any], bridge: str, track: str) -> dict[str, Any]:
    priority = 1 if track == "structural" else 3
    if active("k_br_memory") and bridge == "B-0617":
        priority = 3
    memory[bridge] = priority
    return {"bridge": bridge, "priority": priority}


@traced("CHAIN")
def review_program(plan: list[str], memory: dict[str, Any], corridor: str) -> dict[str, Any]:
    for b in _CORRIDORS[corridor]:
        if b not in plan:
            raise AssertionError(f"inspection program: {b} is due before 2026-12-31 and not scheduled")
        low = min(int(x.split(" ")[1]) for x in _BRIDGES[b].split(", "))
        if low <= 3 and memory.get(b) != 1:
            raise AssertionError(f"inspection program: {b} has a component rated {low} and no priority-1 work order")
    return {"bridges": len(plan), "priority_1": sorted(b for b, p in memory.items() if p == 1)}


@traced("TOOL")
def submit_work_orders(orders: list[dict[str, Any]]) -> dict[str, Any]:
    for o in orders:
        if o["post_t"] > _RATED_T[o["bridge"]]:
            raise ValueError(f"asset system: posting {o['post_t']} t for {o['bridge']} exceeds its rated load of {_RATED_T[o['bridge']]} t")
    return {"accepted": len(orders)}


def bridge_agent(clients: dict[str, Any], given: dict[str, Any], path: Path) -> None:
    client = clients["sync"]

    def body() -> Any:
        found = list_bridges(given["corridor"])
        sys_msg = {"role": "system", "content": "You plan bridge inspection programs."}
        plan_text = _chat(client, [sys_msg, {"role": "user", "content": json.dumps(found)}]).content
        plan = plan_text.split(": ", 1)[1].split(";")[0].split(", ")
        memory: dict[str, Any] = {}
        orders = []
        for bridge in plan:
            with span("inspect_bridge", "CHAIN", {"bridge": bridge}) as s:
                rec = fetch_inspection(bridge)
                ratings = parse_ratings(rec["ratings"])
                answer = _chat(client, [sys_msg, {"role": "user", "content": json.dumps(
                    {"bridge": bridge, "ratings": ratings, "rated_t": rec["rated_t"]})}]).content
                track = answer.split(": ", 1)[1].split(",")[0]
                post = int(answer.rsplit("post ", 1)[1].split(" ")[0])
                remember_priority(memory, bridge, track)
                orders.append(s.output({"bridge": bridge, "track": track, "post_t": post}))
        review_program(plan, memory, given["corridor"])
        return submit_work_orders(orders)

    _run("inspection-planner", path, given, body)


BRIDGE_INPUTS = [{"corridor": c} for c in _CORRIDORS]
