"""Late-delivery compensation agent (openai client + OpenInference, OTLP JSON; logistics and shipping).

A customer writes in about a late parcel.  The agent builds its prompt from the
message and the support session's memory, tracks the parcel (the carrier feed
is parsed in a CHAIN span), reads the service level and files a compensation
claim.  The claims service recomputes lateness from the carrier's proof of
delivery and rejects claims that do not match.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind

from sb import otkit
from sb.fakellm import Conversation, Reply, call, say
from sb.harness import Case, failing, faulty, tick


AGENT = "parcel-compensation"
ROUTE = "otlp"
DOMAIN = "logistics and shipping"
TR = otkit.tracer("parcel-compensation")

PARCELS = {
    "JD014477201": {
        "customer": "C-1184",
        "service": "STANDARD",
        "feed": [
            "2025-05-02|PICKED_UP|Leipzig",
            "2025-05-03|IN_TRANSIT|Hannover",
            "2025-05-05|DELIVERY_ATTEMPTED|Hamburg",
            "2025-05-07|DELIVERED|Hamburg",
        ],
    },
    "JD014477210": {
        "customer": "C-3390",
        "service": "EXPRESS",
        "feed": ["2025-05-02|PICKED_UP|Leipzig", "2025-05-05|DELIVERED|Bremen"],
    },
    "JD020031558": {
        "customer": "C-2201",
        "service": "STANDARD",
        "feed": [
            "2025-05-10|PICKED_UP|Dresden",
            "2025-05-12|IN_TRANSIT|Berlin",
            "2025-05-16|DELIVERED|Rostock",
        ],
    },
    "JD020031585": {
        "customer": "C-4410",
        "service": "STANDARD",
        "feed": ["2025-05-11|PICKED_UP|Köln", "2025-05-13|DELIVERED|Bonn"],
    },
    "JD033310092": {
        "customer": "C-5127",
        "service": "EXPRESS",
        "feed": ["2025-05-20|PICKED_UP|München", "2025-05-23|DELIVERED|Nürnberg"],
    },
    "JD033310029": {
        "customer": "C-6650",
        "service": "STANDARD",
        "feed": [
            "2025-05-20|PICKED_UP|Essen",
            "2025-05-21|IN_TRANSIT|Dortmund",
            "2025-05-24|DELIVERY_ATTEMPTED|Münster",
            "2025-05-26|DELIVERED|Münster",
        ],
    },
    "JD040000731": {
        "customer": "C-7002",
        "service": "STANDARD",
        "feed": ["2025-06-02|PICKED_UP|Kiel", "2025-06-09|DELIVERED|Lübeck"],
    },
    "JD040000713": {
        "customer": "C-8123",
        "service": "EXPRESS",
        "feed": ["2025-06-02|PICKED_UP|Kiel", "2025-06-04|DELIVERED|Flensburg"],
    },
    "JD051122004": {
        "customer": "C-9901",
        "service": "STANDARD",
        "feed": [
            "2025-06-03|PICKED_UP|Mainz",
            "2025-06-04|IN_TRANSIT|Frankfurt",
            "2025-06-08|DELIVERY_ATTEMPTED|Kassel",
            "2025-06-09|DELIVERED|Kassel",
        ],
    },
    "JD051122040": {
        "customer": "C-1010",
        "service": "STANDARD",
        "feed": ["2025-06-03|PICKED_UP|Mainz", "2025-06-10|DELIVERED|Gießen"],
    },
}
SLA = {
    "STANDARD": {"promised_days": 2, "eur_per_day": 5.0, "cap_eur": 25.0},
    "EXPRESS": {"promised_days": 1, "eur_per_day": 12.0, "cap_eur": 36.0},
}
FIRST_STOP = {"DELIVERED", "DELIVERY_ATTEMPTED"}
SESSION_MEMORY: list[dict[str, str]] = []


def _days_late(pickup: str, first_stop: str, service: str) -> int:
    return max(
        0, (date.fromisoformat(first_stop) - date.fromisoformat(pickup)).days - SLA[service]["promised_days"]
    )


def parse_carrier_feed(raw: str) -> list[dict[str, str]]:
    with otkit.span(TR, "parse_carrier_feed", Kind.CHAIN, raw) as out:
        tick("parse_carrier_feed")
        known = {"PICKED_UP", "IN_TRANSIT", "DELIVERED", "DELIVERY_ATTEMPTED"}
        if faulty("feed_drops_attempts", "parse_carrier_feed"):
            known = {"PICKED_UP", "IN_TRANSIT", "DELIVERED"}  # mapping table predates the attempt scan code
        events = []
        for line in raw.splitlines():
            day, code, place = line.split("|")
            if code in known:
                events.append({"date": day, "status": code, "location": place})
        out.value = events
        return events


def track_parcel(tracking_no: str) -> dict[str, Any]:
    tick("track_parcel")
    p = PARCELS[tracking_no]
    events = parse_carrier_feed("\n".join(p["feed"]))
    return {"tracking_no": tracking_no, "service": p["service"], "events": events}


def get_service_level(service: str) -> dict[str, Any]:
    tick("get_service_level")
    return {"service": service, **SLA[service]}


def file_compensation(
    tracking_no: str, customer_id: str, days_late: int, amount_eur: float
) -> dict[str, Any]:
    tick("file_compensation")
    p = PARCELS[tracking_no]
    if p["customer"] != customer_id:
        failing("file_compensation")
        raise PermissionError(f"parcel {tracking_no} was not shipped to customer {customer_id}")
    stops = [ln.split("|")[0] for ln in p["feed"] if ln.split("|")[1] in FIRST_STOP]
    truth = _days_late(p["feed"][0].split("|")[0], stops[0], p["service"])
    if days_late != truth:
        failing("file_compensation")
        raise ValueError(
            f"claim for {tracking_no} says {days_late} day(s) late; proof of delivery shows {truth} (first attempt {stops[0]})"
        )
    sla = SLA[p["service"]]
    if abs(amount_eur - min(sla["cap_eur"], truth * sla["eur_per_day"])) > 0.005:
        failing("file_compensation")
        raise ValueError(f"compensation EUR {amount_eur:.2f} is not what the {p['service']} terms pay")
    return {"claim": f"CMP-{tracking_no[-6:]}", "amount_eur": amount_eur}


TOOLS = {
    "track_parcel": (
        track_parcel,
        otkit.tool_schema("track_parcel", "Tracking events of a parcel.", {"tracking_no": "str"}),
    ),
    "get_service_level": (
        get_service_level,
        otkit.tool_schema(
            "get_service_level",
            "Delivery promise and late-delivery compensation of a service.",
            {"service": "str"},
        ),
    ),
    "file_compensation": (
        file_compensation,
        otkit.tool_schema(
            "file_compensation",
            "File a late-delivery compensation.",
            {"tracking_no": "str", "customer_id": "str", "days_late": "int", "amount_eur": "float"},
        ),
    ),
}
SYSTEM = (
    "You handle late-delivery complaints. Track the parcel; the first delivery stop (a delivery or a delivery "
    "attempt) ends the transit time. Days late = days from pickup to first stop minus the promised days. "
    "Pay eur_per_day per day late, up to the cap, and file it for the customer."
)


def build_prompt(task: dict[str, Any]) -> list[dict[str, Any]]:
    with otkit.span(TR, "build_prompt", Kind.CHAIN, task["message"]) as out:
        tick("build_prompt")
        customer = task["customer_id"]
        if faulty("memory_previous_customer", "build_prompt") and SESSION_MEMORY:
            customer = SESSION_MEMORY[-1]["customer_id"]  # session memory not reset between chats
        messages = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"[customer {customer}] {task['message']}"},
        ]
        out.value = messages
        return messages


def policy(conv: Conversation) -> Reply:
    t = conv.task
    customer = conv.user.split("[customer ", 1)[1].split("]", 1)[0]
    if conv.called("track_parcel") == 0:
        no = t["tracking_no"]
        if conv.fault == "misread_tracking":
            return call("track_parcel", faulty=True, tracking_no=no[:-2] + no[-1] + no[-2])
        return call("track_parcel", tracking_no=no)
    tr = conv.result("track_parcel")
    if conv.called("get_service_level") == 0:
        return call("get_service_level", service=tr["service"])
    if conv.called("file_compensation") == 0:
        sla = conv.result("get_service_level")
        ev = tr["events"]
        stop = next(e["date"] for e in ev if e["status"] in FIRST_STOP)
        late = _days_late(ev[0]["date"], stop, tr["service"])
        return call(
            "file_compensation",
            tracking_no=tr["tracking_no"],
            customer_id=customer,
            days_late=late,
            amount_eur=min(sla["cap_eur"], late * sla["eur_per_day"]),
        )
    c = conv.result("file_compensation")
    return say(f"Sorry for the delay. We filed claim {c['claim']} for EUR {c['amount_eur']:.2f}.")


def run(task: dict[str, Any], path: Path) -> Any:
    SESSION_MEMORY[:] = [{"customer_id": task["previous_customer"]}] if task.get("previous_customer") else []
    with otkit.span(
        TR, "parcel-compensation", Kind.AGENT, task["message"], **{"agent.name": "parcel-compensation"}
    ) as out:
        answer = otkit.react(TR, otkit.client(), build_prompt(task), TOOLS)
        out.value = answer
    SESSION_MEMORY.append({"customer_id": task["customer_id"]})
    return answer


def _t(no: str, text: str, prev: str | None = None) -> dict[str, Any]:
    t = {"tracking_no": no, "customer_id": PARCELS[no]["customer"], "message": text.format(no=no)}
    if prev:
        t["previous_customer"] = prev
    return t


PASSING = [
    _t("JD014477210", "My express parcel {no} took three days. What do I get?"),
    _t("JD020031585", "Parcel {no} arrived, but was it on time? I want compensation if not."),
    _t(
        "JD033310029",
        "Tracking {no}: they tried once, then came two days later. Claiming compensation.",
        prev="C-2201",
    ),
    _t("JD040000713", "Express {no} came on day two, please compensate."),
    _t("JD051122040", "My parcel {no} took a whole week!"),
]

CASES = [
    Case(
        id="parcels-feed-drops-attempt",
        task=_t(
            "JD014477201", "Parcel {no} only arrived on the 7th, five days after pickup. I want the late fee."
        ),
        fault="feed_drops_attempts",
        fault_kind="lossy_parsing",
        description="parse_carrier_feed maps only the status codes it knows and silently drops the "
        "DELIVERY_ATTEMPTED scan of 5 May; the model counts lateness to the 7 May delivery and the claims "
        "service, which counts the first attempt, rejects the number of days.",
        root="parse_carrier_feed",
        evidence="2025-05-07",
        path=["parse_carrier_feed", "track_parcel", "ChatCompletion", "file_compensation"],
        failure="file_compensation",
    ),
    Case(
        id="parcels-misread-tracking",
        task=_t("JD020031558", "Where was {no}? Shipped on the 10th, came on the 16th."),
        fault="misread_tracking",
        fault_kind="wrong_tool_arguments",
        description="The model swaps the last two digits and tracks JD020031585, a parcel of another customer that "
        "was on time; it files a claim for that parcel under this customer, which the claims service refuses.",
        root="llm",
        evidence="JD020031585",
        path=["ChatCompletion", "track_parcel", "ChatCompletion", "file_compensation"],
        failure="file_compensation",
    ),
    Case(
        id="parcels-session-memory-customer",
        task=_t("JD040000731", "Parcel {no} took seven days, that's not standard delivery.", prev="C-8123"),
        fault="memory_previous_customer",
        fault_kind="context_pollution",
        description="build_prompt takes the customer id from session memory, which still holds the previous chat's "
        "customer (C-8123). The model files the claim for that customer and the claims service rejects it: the "
        "parcel was not shipped to them.",
        root="build_prompt",
        evidence="C-8123",
        path=["build_prompt", "ChatCompletion", "file_compensation"],
        failure="file_compensation",
    ),
    Case(
        id="parcels-feed-drops-attempt-b",
        task=_t("JD051122004", "Kassel parcel {no}: nobody delivered it before the 9th."),
        fault="feed_drops_attempts",
        fault_kind="lossy_parsing",
        description="The attempt scan of 8 June is dropped by the feed parser; the claim counts one extra day and is "
        "rejected against the proof of delivery.",
        root="parse_carrier_feed",
        evidence="2025-06-09",
        path=["parse_carrier_feed", "track_parcel", "ChatCompletion", "file_compensation"],
        failure="file_compensation",
    ),
]
