"""On-call remediator (LangGraph ReAct, devops / incident response).

Paged for a service, the agent reads the live deployment, lists the alerts
firing on the service, opens the runbook of the most severe one and applies its
remediation (scale out, or roll back to the previous release).  The
change-management tools refuse changes that do not fit the incident.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from langchain_core.tools import tool

from sb.fakellm import Conversation, Reply, call, say
from sb.harness import Case, failing, faulty, tick
from sb.lgkit import ask, invoke, react_graph


AGENT = "oncall-remediator"
ROUTE = "langgraph"
DOMAIN = "devops / incident response"

LIVE = {
    "checkout-api": {"replicas": 8, "version": "v5.2.1", "previous_version": "v5.2.0"},
    "cart-service": {"replicas": 4, "version": "v3.9.0", "previous_version": "v3.8.7"},
    "ledger-db-proxy": {"replicas": 6, "version": "v1.14.2", "previous_version": "v1.14.1"},
    "search-indexer": {"replicas": 5, "version": "v2.8.3", "previous_version": "v2.8.1"},
    "payments-gateway": {"replicas": 12, "version": "v7.0.4", "previous_version": "v7.0.2"},
    "notification-worker": {"replicas": 3, "version": "v0.9.12", "previous_version": "v0.9.11"},
    "inventory-sync": {"replicas": 2, "version": "v4.1.0", "previous_version": "v4.0.6"},
    "auth-edge": {"replicas": 10, "version": "v11.3.0", "previous_version": "v11.2.5"},
    "pricing-engine": {"replicas": 6, "version": "v2.2.0", "previous_version": "v2.1.9"},
}
# What the deploy-inventory cache held before the last autoscaler pass.
SNAPSHOT = {name: dict(d) for name, d in LIVE.items()}
SNAPSHOT["pricing-engine"].update(replicas=2)
SNAPSHOT["payments-gateway"].update(replicas=5)

FIRING = [
    {
        "code": "QUEUE-3302",
        "service": "ledger-db-proxy",
        "severity": 1,
        "fired_at": "02:11",
        "summary": "connection queue depth 410 (limit 64)",
    },
    {
        "code": "LAT-4471",
        "service": "checkout-api",
        "severity": 1,
        "fired_at": "02:14",
        "summary": "p99 latency 2.8s against a 1.2s SLO",
    },
    {
        "code": "ERR-2210",
        "service": "cart-service",
        "severity": 2,
        "fired_at": "02:20",
        "summary": "5xx ratio 4.1% since 02:05 deploy",
    },
    {
        "code": "CPU-7781",
        "service": "pricing-engine",
        "severity": 2,
        "fired_at": "02:22",
        "summary": "CPU saturation 94% across pods",
    },
    {
        "code": "ERR-5120",
        "service": "search-indexer",
        "severity": 2,
        "fired_at": "02:25",
        "summary": "indexing errors after schema change",
    },
    {
        "code": "LAT-6630",
        "service": "payments-gateway",
        "severity": 1,
        "fired_at": "02:31",
        "summary": "authorisation latency p95 1.9s",
    },
    {
        "code": "MEM-1044",
        "service": "notification-worker",
        "severity": 3,
        "fired_at": "02:33",
        "summary": "RSS growth 40MB/min",
    },
    {
        "code": "LAG-0815",
        "service": "inventory-sync",
        "severity": 2,
        "fired_at": "02:40",
        "summary": "consumer lag 92k messages",
    },
    {
        "code": "ERR-3371",
        "service": "auth-edge",
        "severity": 2,
        "fired_at": "02:41",
        "summary": "token validation failures 2.3%",
    },
    {
        "code": "INFO-0007",
        "service": "cart-service",
        "severity": 4,
        "fired_at": "01:58",
        "summary": "certificate renews in 20 days",
    },
]
RUNBOOKS = {
    "QUEUE-3302": {
        "owner": "ledger-db-proxy",
        "action": "scale",
        "factor": 1.5,
        "note": "add proxies before touching the pool",
    },
    "LAT-4471": {
        "owner": "checkout-api",
        "action": "scale",
        "factor": 2.0,
        "note": "double the pods; latency is load-bound",
    },
    "LAT-4417": {
        "owner": "checkout-api",
        "action": "rollback",
        "note": "latency regression that follows a release",
    },
    "ERR-2210": {
        "owner": "cart-service",
        "action": "rollback",
        "note": "roll back the release named in the alert",
    },
    "CPU-7781": {"owner": "pricing-engine", "action": "scale", "factor": 1.5, "note": "scale out by half"},
    "ERR-5120": {
        "owner": "search-indexer",
        "action": "rollback",
        "note": "schema change: go back one release",
    },
    "LAT-6630": {
        "owner": "payments-gateway",
        "action": "scale",
        "factor": 1.25,
        "note": "add a quarter more pods",
    },
    "MEM-1044": {
        "owner": "notification-worker",
        "action": "rollback",
        "note": "leak introduced by the last build",
    },
    "LAG-0815": {
        "owner": "inventory-sync",
        "action": "scale",
        "factor": 3.0,
        "note": "triple consumers until lag drains",
    },
    "ERR-3371": {
        "owner": "auth-edge",
        "action": "rollback",
        "note": "key rotation bug, previous release is safe",
    },
}
MAX_REPLICAS = 40


@tool
def get_deployment(service: str) -> str:
    """Current deployment of a service: replica count, running version and the previous version."""
    tick("get_deployment")
    # The stale variant serves the inventory cache without checking its age.
    dep = SNAPSHOT[service] if faulty("stale_inventory", "get_deployment") else LIVE[service]
    return json.dumps({"service": service, **dep})


@tool
def list_alerts(service: str) -> str:
    """Alerts currently firing for the given service, most severe first."""
    tick("list_alerts")
    rows = sorted(FIRING, key=lambda a: (a["severity"], a["fired_at"]))
    if not faulty("alerts_unscoped", "list_alerts"):
        rows = [a for a in rows if a["service"] == service]
    return json.dumps({"service": service, "alerts": rows})


@tool
def get_runbook(alert_code: str) -> str:
    """The runbook entry for an alert code."""
    tick("get_runbook")
    rb = RUNBOOKS.get(alert_code)
    if rb is None:
        return json.dumps({"alert_code": alert_code, "found": False})
    return json.dumps({"alert_code": alert_code, "found": True, **rb})


def _firing_for(service: str) -> list[str]:
    return [a["code"] for a in FIRING if a["service"] == service]


def _change_guard(name: str, service: str, runbook: str) -> None:
    owner = RUNBOOKS.get(runbook, {}).get("owner")
    if owner != service:
        failing(name)
        raise PermissionError(f"change blocked: runbook {runbook} belongs to {owner}, not to {service}")
    if runbook not in _firing_for(service):
        failing(name)
        raise PermissionError(
            f"change blocked: {runbook} is not firing on {service} (open: {', '.join(_firing_for(service))})"
        )


@tool
def scale_deployment(service: str, replicas: int, runbook: str) -> str:
    """Scale a service to a replica count, citing the runbook that calls for it."""
    tick("scale_deployment")
    _change_guard("scale_deployment", service, runbook)
    current = LIVE[service]["replicas"]
    if replicas < current:
        failing("scale_deployment")
        raise ValueError(
            f"{service} is serving with {current} replicas; shrinking to {replicas} in the middle of an incident is not allowed"
        )
    if replicas > MAX_REPLICAS:
        failing("scale_deployment")
        raise ValueError(f"{replicas} replicas exceeds the namespace quota of {MAX_REPLICAS}")
    return json.dumps({"service": service, "replicas": replicas, "status": "scaling"})


@tool
def rollback_release(service: str, to_version: str, runbook: str) -> str:
    """Roll a service back to an earlier release, citing the runbook that calls for it."""
    tick("rollback_release")
    _change_guard("rollback_release", service, runbook)
    if to_version != LIVE[service]["previous_version"]:
        failing("rollback_release")
        raise ValueError(f"{to_version} is not the release before {LIVE[service]['version']} on {service}")
    return json.dumps({"service": service, "version": to_version, "status": "rolling back"})


TOOLS = [get_deployment, list_alerts, get_runbook, scale_deployment, rollback_release]

SYSTEM = (
    "You are the on-call remediation assistant for the platform team. When paged: check the live "
    "deployment, list the alerts firing on the paged service, read the runbook of the most severe alert "
    "and apply exactly the remediation it prescribes, citing the runbook code. Report what you changed."
)


def _misread(code: str) -> str:
    prefix, digits = code.split("-")
    return f"{prefix}-{digits[:2]}{digits[3]}{digits[2]}"


def policy(conv: Conversation) -> Reply:
    service = conv.task["service"]
    if conv.called("get_deployment") == 0:
        return call("get_deployment", service=service)
    if conv.called("list_alerts") == 0:
        return call("list_alerts", service=service)
    if conv.called("get_runbook") == 0:
        top = conv.result("list_alerts")["alerts"][0]["code"]
        if conv.fault == "misread_alert_code":
            return call("get_runbook", faulty=True, alert_code=_misread(top))
        return call("get_runbook", alert_code=top)
    rb = conv.result("get_runbook")
    dep = conv.result("get_deployment")
    if conv.called("scale_deployment") + conv.called("rollback_release") == 0:
        if rb["action"] == "scale":
            return call(
                "scale_deployment",
                service=service,
                replicas=math.ceil(dep["replicas"] * rb["factor"]),
                runbook=rb["alert_code"],
            )
        return call(
            "rollback_release", service=service, to_version=dep["previous_version"], runbook=rb["alert_code"]
        )
    done = conv.results[-1][2]
    return say(
        f"Applied runbook {rb['alert_code']} on {service}: {done['status']}"
        + (f" to {done['replicas']} replicas." if "replicas" in done else f" to {done['version']}.")
    )


APP = react_graph(SYSTEM, TOOLS)


def run(task: dict[str, Any], path: Path) -> Any:
    page = f"PAGE: {task['service']} is alerting ({task['page']}). Please remediate per runbook."
    return invoke(APP, ask(page), path, run_name="oncall-remediation", tags=[task["service"]])


PASSING = [
    {"service": "search-indexer", "page": "indexing error spike"},
    {"service": "inventory-sync", "page": "consumer lag growing"},
    {"service": "auth-edge", "page": "token validation failures"},
    {"service": "notification-worker", "page": "memory climbing steadily"},
    {"service": "ledger-db-proxy", "page": "connection queue backing up"},
]

CASES = [
    Case(
        id="oncall-misread-alert-code",
        task={"service": "checkout-api", "page": "checkout p99 latency breach"},
        fault="misread_alert_code",
        fault_kind="wrong_tool_arguments",
        description="The model transposes two digits of the firing alert LAT-4471 and opens runbook LAT-4417, "
        "a release-regression runbook; it then rolls checkout-api back, which change management rejects "
        "because LAT-4417 is not firing.",
        root="llm",
        evidence="LAT-4417",
        path=["llm", "get_runbook", "llm", "rollback_release"],
        failure="rollback_release",
    ),
    Case(
        id="oncall-alerts-ignore-service",
        task={"service": "cart-service", "page": "cart 5xx after deploy"},
        fault="alerts_unscoped",
        fault_kind="tool_ignores_argument",
        description="list_alerts ignores its service filter and returns the fleet-wide list; the top entry is "
        "ledger-db-proxy's QUEUE-3302, whose scale-out runbook the model applies to cart-service; the scale "
        "tool blocks the change because that runbook belongs to another service.",
        root="list_alerts",
        evidence="ledger-db-proxy",
        path=["list_alerts", "llm", "get_runbook", "llm", "scale_deployment"],
        failure="scale_deployment",
    ),
    Case(
        id="oncall-stale-replica-count",
        task={"service": "pricing-engine", "page": "pricing CPU saturated"},
        fault="stale_inventory",
        fault_kind="stale_data",
        description="get_deployment answers from the inventory cache taken before the autoscaler ran: 2 replicas "
        "instead of 6. The model scales 'out' by 1.5x to 3, which the scale tool refuses as a scale-down "
        "during an incident.",
        root="get_deployment",
        evidence='"replicas": 2',
        path=["get_deployment", "llm", "scale_deployment"],
        failure="scale_deployment",
    ),
    Case(
        id="oncall-stale-payments-count",
        task={"service": "payments-gateway", "page": "payments authorisation slow"},
        fault="stale_inventory",
        fault_kind="stale_data",
        description="The cached deployment record for payments-gateway says 5 replicas (live: 12); scaling by "
        "the runbook's 1.25x gives 7, and the scale tool rejects shrinking a service under incident.",
        root="get_deployment",
        evidence='"replicas": 5',
        path=["get_deployment", "llm", "scale_deployment"],
        failure="scale_deployment",
    ),
]
