"""Cemetery interment bookings (route: otlp): a tool-calling loop on the openai client, OpenInference spans."""
from __future__ import annotations

import json
import re
from contextlib import contextmanager

from benchmarks.heldout.suite_x import kit

ROUTE = "otlp"
NAME = "interment-desk"

BYLAWS = {
    "BYLAW-K2": "BYLAW-K2: Section K takes full-body burials in single or double-depth graves; "
                "double-depth graves are dug to 2.1 m.",
    "BYLAW-M3": "BYLAW-M3: Section M is reserved for cremated remains; caskets are not permitted.",
    "BYLAW-L1": "BYLAW-L1: Section L (lawn) takes full-body burials in single-depth graves only (1.8 m).",
}
PLOTS = {  # section -> [(plot, type)]
    "K": [("K-07", "single"), ("K-12", "single"), ("K-31", "double"), ("K-33", "double"), ("K-40", "double")],
    "M": [("M-14", "urn"), ("M-15", "urn")],
    "L": [("L-02", "single"), ("L-05", "single")],
}
TYPE_OF = {p: t for ps in PLOTS.values() for p, t in ps}
DEPTH = {"single": 1.8, "double": 2.1}
BOOKED_SERVICES = {"2026-12-15": ["12:00"], "2026-12-17": ["12:00"], "2026-12-18": ["12:00"],
                   "2026-12-21": ["12:00"], "2026-12-22": ["12:00"], "2026-12-23": ["12:00"]}
TOOLS = [
    {"type": "function", "function": {"name": n, "description": d, "parameters": {"type": "object", "properties": {
        k: {"type": t} for k, t in props.items()}, "required": list(props)}}}
    for n, d, props in [
        ("search_bylaws", "Search the cemetery bylaws.", {"query": "string"}),
        ("find_plots", "Free plots in a section of a given type.", {"section": "string", "plot_type": "string"}),
        ("hold_plot", "Hold a plot for a family.", {"plot": "string", "holder": "string"}),
        ("book_gravedigger", "Book the digging crew.", {"plot": "string", "date": "string", "depth_m": "number"}),
        ("book_chapel", "Book the chapel.", {"date": "string", "start": "string", "minutes": "integer"}),
        ("register_interment", "Register the interment with the burial registrar.",
         {"deceased": "string", "plot": "string", "date": "string"}),
    ]
]


def _req(deceased, holder, plot_type, dates, request_day):
    return {"deceased": deceased, "holder": holder, "plot_type": plot_type, "dates": dates,
            "requested_on": request_day, "start": "11:00"}


REFS = [
    _req("Brendan Costigan", "Mary Costigan", "double", ["2026-12-16", "2026-12-17"], "2026-12-11"),
    _req("Edith Lyons", "Paul Lyons", "single", ["2026-12-18"], "2026-12-14"),
    _req("Thomas Geraghty", "Ann Geraghty", "double", ["2026-12-19", "2026-12-21"], "2026-12-15"),
    _req("Nora Halloran", "Sean Halloran", "single", ["2026-12-22", "2026-12-23"], "2026-12-17"),
]
CASES = [
    dict(case="cemetery_wrong_retrieval", fault_kind="wrong_retrieval", fault_id="cemetery.bylaw_search",
         input=_req("Martin Daly", "Rose Daly", "double", ["2026-12-16"], "2026-12-11"),
         root="search_bylaws", marker="BYLAW-M3"),
    dict(case="cemetery_tool_ignores_argument", fault_kind="tool_ignores_argument", fault_id="cemetery.plot_type",
         input=_req("Kathleen Moran", "John Moran", "double", ["2026-12-17", "2026-12-18"], "2026-12-12"),
         root="find_plots", marker="K-07"),
    dict(case="cemetery_format_drift", fault_kind="format_drift", fault_id="cemetery.model_minutes",
         input=_req("Gerard Quinlan", "Una Quinlan", "single", ["2026-12-21"], "2026-12-15"),
         root="ChatCompletion", marker="1h30"),
    dict(case="cemetery_plan_error", fault_kind="plan_error", fault_id="cemetery.model_date",
         input=_req("Peggy Furlong", "Declan Furlong", "double", ["2026-12-18", "2026-12-22"], "2026-12-16"),
         root="ChatCompletion", marker="2026-12-18"),
    dict(case="cemetery_wrong_tool_args", fault_kind="wrong_tool_args", fault_id="cemetery.model_depth",
         input=_req("Liam Brophy", "Carmel Brophy", "double", ["2026-12-23"], "2026-12-18"),
         root="ChatCompletion", marker="1.8"),
]


def _day(d: str) -> int:
    return int(d[-2:])


def _calls(messages):
    named, out = {}, []
    for m in messages:
        for c in m.get("tool_calls") or []:
            named[c["id"]] = (c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
        if m.get("role") == "tool" and m.get("tool_call_id") in named:
            out.append((*named[m["tool_call_id"]], json.loads(m["content"])))
    return out


def policy(request):
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    system, data = msgs[0]["content"], json.loads(msgs[1]["content"])
    if system.startswith("Plan"):
        ok = [d for d in data["dates"] if _day(d) - _day(data["requested_on"]) >= 3]
        date = data["dates"][0] if kit.active("cemetery.model_date") else ok[0]
        minutes = "1h30" if kit.active("cemetery.model_minutes") else 45
        return json.dumps({"service_date": date, "service_minutes": minutes,
                           "bylaw_query": f"{data['plot_type']}-depth full-body burial section"})
    done = _calls(msgs)
    names = [n for n, _, _ in done]
    res = {n: r for n, _, r in done}
    if "search_bylaws" not in names:
        return Reply(tool_calls=(tool_call("search_bylaws", {"query": data["plan"]["bylaw_query"]}),))
    if "find_plots" not in names:
        section = re.search(r"Section (\w)", res["search_bylaws"]["documents"][0]["text"]).group(1)
        return Reply(tool_calls=(tool_call("find_plots", {"section": section, "plot_type": data["plot_type"]}),))
    plot = res["find_plots"]["plots"][0]["plot"]
    date = data["plan"]["service_date"]
    if "hold_plot" not in names:
        return Reply(tool_calls=(tool_call("hold_plot", {"plot": plot, "holder": data["holder"]}),))
    if "book_gravedigger" not in names:
        depth = 1.8 if kit.active("cemetery.model_depth") else DEPTH[data["plot_type"]]
        return Reply(tool_calls=(tool_call("book_gravedigger", {"plot": plot, "date": date, "depth_m": depth}),))
    if "book_chapel" not in names:
        return Reply(tool_calls=(tool_call("book_chapel", {"date": date, "start": data["start"],
                                                            "minutes": data["plan"]["minutes"]}),))
    if "register_interment" not in names:
        return Reply(tool_calls=(tool_call("register_interment", {"deceased": data["deceased"], "plot": plot,
                                                                   "date": date}),))
    return f"Interment of {data['deceased']} arranged for {date} in plot {plot}."


class Session:
    def __init__(self):
        from openai import OpenAI
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from trajdebug.testing import FakeModelServer

        self.spans = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": NAME}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.instrumentor = OpenAIInstrumentor()
        self.instrumentor.instrument(tracer_provider=self.provider)
        self.tracer = self.provider.get_tracer(NAME)
        self.server = FakeModelServer(policy, model="gpt-4o-mini").start()
        self.client = OpenAI(base_url=self.server.base_url, api_key="not-needed", max_retries=0)

    def close(self):
        self.server.stop()
        self.instrumentor.uninstrument()


@contextmanager
def session():
    s = Session()
    try:
        yield s
    finally:
        s.close()


def record(sess: Session, path, request) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    sess.spans.clear()
    try:
        _agent(sess, request)
    except (ValueError, RuntimeError):
        pass
    doc = MessageToDict(encode_spans(sess.spans.get_finished_spans()))
    with open(path, "w") as f:
        f.write(json.dumps(doc) + "\n")


def _minutes(v) -> int:
    return int(v) if isinstance(v, int) else int(re.sub(r"\D", "", str(v)))


def _agent(sess: Session, request: dict) -> None:
    tracer = sess.tracer
    held: dict[str, str] = {}
    dug: dict[str, float] = {}

    @contextmanager
    def span(name, kind, inp):
        attrs = {"openinference.span.kind": kind, "input.value": json.dumps(inp), "input.mime_type": "application/json"}
        with tracer.start_as_current_span(name, attributes=attrs) as sp:
            box = {}
            yield box
            if "out" in box:
                sp.set_attribute("output.value", json.dumps(box["out"]))
                sp.set_attribute("output.mime_type", "application/json")

    def run_tool(name, args):
        if name == "search_bylaws":
            doc = "BYLAW-M3" if kit.active("cemetery.bylaw_search") else (
                "BYLAW-K2" if "double" in args["query"] else "BYLAW-L1")
            return {"documents": [{"id": doc, "text": BYLAWS[doc]}]}
        if name == "find_plots":
            want = "single" if kit.active("cemetery.plot_type") else args["plot_type"]
            rows = [p for p, t in PLOTS[args["section"]] if t == want or args["section"] == "M"]
            return {"section": args["section"], "plots": [{"plot": p} for p in rows]}
        if name == "hold_plot":
            held[args["plot"]] = args["holder"]
            return {"plot": args["plot"], "hold": f"HLD-{args['plot']}"}
        if name == "book_gravedigger":
            dug[args["plot"]] = args["depth_m"]
            if TYPE_OF[args["plot"]] == "urn":
                raise RuntimeError(f"grounds office 409: plot {args['plot']} is an urn plot; a {args['depth_m']} m "
                                   f"excavation is not permitted")
            if args["depth_m"] > DEPTH.get(TYPE_OF[args["plot"]], 0.9):
                raise RuntimeError(f"grounds office 409: plot {args['plot']} is registered "
                                   f"{TYPE_OF[args['plot']]}-depth; a {args['depth_m']} m excavation is not permitted")
            if _day(args["date"]) - _day(request["requested_on"]) < 3:
                raise RuntimeError(f"grounds office 409: digging crew needs 72 h notice; {args['date']} is too soon")
            return {"work_order": f"WO-{args['plot']}-{args['date']}", "depth_m": args["depth_m"]}
        if name == "book_chapel":
            start = int(args["start"][:2]) * 60 + int(args["start"][3:])
            end = start + args["minutes"]
            for other in BOOKED_SERVICES.get(args["date"], []):
                o = int(other[:2]) * 60
                if start < o + 60 and o < end:
                    raise RuntimeError(f"chapel diary 409: {args['start']} for {args['minutes']} min overlaps "
                                       f"the {other} service on {args['date']}")
            return {"chapel": f"CH-{args['date']}-{args['start']}", "minutes": args["minutes"]}
        if name == "register_interment":
            typ = TYPE_OF[args["plot"]]
            if typ == "urn":
                raise RuntimeError(f"burial registrar 422: plot {args['plot']} is in a cremated-remains "
                                   f"section; a casket interment cannot be registered")
            if dug.get(args["plot"]) != DEPTH[request["plot_type"]]:
                raise RuntimeError(f"burial registrar 422: {request['plot_type']}-depth interment needs "
                                   f"{DEPTH[request['plot_type']]} m; work order for {args['plot']} shows "
                                   f"{dug.get(args['plot'])} m")
            return {"registration": f"REG-{args['plot']}-{args['date']}", "status": "registered"}
        raise ValueError(f"unknown tool {name}")

    with span(NAME, "AGENT", request) as top:
        with span("plan_interment", "CHAIN", request) as s:
            reply = sess.client.chat.completions.create(
                model="gpt-4o-mini", temperature=0,
                messages=[{"role": "system", "content": "Plan the interment: answer JSON with service_date, "
                                                         "service_minutes and bylaw_query."},
                          {"role": "user", "content": json.dumps(request)}])
            s["out"] = {"text": reply.choices[0].message.content}
        with span("parse_plan", "CHAIN", {"text": s["out"]["text"]}) as s:
            raw = json.loads(reply.choices[0].message.content)
            plan = {"service_date": raw["service_date"], "minutes": _minutes(raw["service_minutes"]),
                    "bylaw_query": raw["bylaw_query"]}
            s["out"] = plan
        messages = [{"role": "system", "content": "You arrange interments with the tools given."},
                    {"role": "user", "content": json.dumps({**request, "plan": plan})}]
        for _turn in range(10):
            msg = sess.client.chat.completions.create(model="gpt-4o-mini", temperature=0, messages=messages,
                                                      tools=TOOLS).choices[0].message
            messages.append(msg.model_dump(exclude_none=True))
            if not msg.tool_calls:
                top["out"] = {"answer": msg.content}
                break
            for call in msg.tool_calls:
                args = json.loads(call.function.arguments)
                kind = "RETRIEVER" if call.function.name == "search_bylaws" else "TOOL"
                with tracer.start_as_current_span(call.function.name, attributes={
                        "openinference.span.kind": kind, "input.value": call.function.arguments,
                        "input.mime_type": "application/json", "tool.name": call.function.name}) as sp:
                    result = run_tool(call.function.name, args)
                    sp.set_attribute("output.value", json.dumps(result))
                    sp.set_attribute("output.mime_type", "application/json")
                messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
