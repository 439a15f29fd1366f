"""Runbook executor (trajdebug recording SDK, devops / incident response).

For an incident: read it, let the model pick the runbook, load the runbook,
pull the cluster's recent logs, let the model name the host to act on, record
the target in the run's state, execute the runbook's steps against the target
read from state, and verify the service recovered.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trajdebug
from sb.harness import Case, failing, faulty, tick


AGENT = "runbook-executor"
ROUTE = "trajdebug-sdk"
DOMAIN = "devops / incident response"

CLUSTERS = {
    "use1-prod": {
        "cache": ["cache-use1-01", "cache-use1-02", "cache-use1-03"],
        "db-primary": ["pg-use1-a"],
        "worker": ["wrk-use1-11", "wrk-use1-12"],
    },
    "euw2-prod": {
        "cache": ["cache-euw2-01", "cache-euw2-03"],
        "db-primary": ["pg-euw2-a"],
        "worker": ["wrk-euw2-07"],
    },
    "apse1-prod": {
        "cache": ["cache-apse1-02"],
        "db-primary": ["pg-apse1-b"],
        "worker": ["wrk-apse1-01", "wrk-apse1-04"],
    },
}
INCIDENTS = {
    "INC-4410": {
        "cluster": "use1-prod",
        "symptom": "cache evictions storm, hit ratio 41%",
        "kind": "cache-flush",
        "host": "cache-use1-02",
    },
    "INC-4411": {
        "cluster": "use1-prod",
        "symptom": "worker queue stuck, jobs not acked",
        "kind": "restart-workers",
        "host": "wrk-use1-12",
    },
    "INC-4412": {
        "cluster": "euw2-prod",
        "symptom": "replication lag 340s on primary",
        "kind": "db-failover",
        "host": "pg-euw2-a",
    },
    "INC-4413": {
        "cluster": "apse1-prod",
        "symptom": "cache memory fragmentation, hit ratio 55%",
        "kind": "cache-flush",
        "host": "cache-apse1-02",
    },
    "INC-4414": {
        "cluster": "apse1-prod",
        "symptom": "workers OOM-looping",
        "kind": "restart-workers",
        "host": "wrk-apse1-04",
    },
    "INC-4415": {
        "cluster": "use1-prod",
        "symptom": "primary disk latency 900ms, writes timing out",
        "kind": "db-failover",
        "host": "pg-use1-a",
    },
    "INC-4416": {
        "cluster": "euw2-prod",
        "symptom": "cache node evicting hot keys, hit ratio 38%",
        "kind": "cache-flush",
        "host": "cache-euw2-03",
    },
    "INC-4417": {
        "cluster": "apse1-prod",
        "symptom": "primary connection slots exhausted",
        "kind": "db-failover",
        "host": "pg-apse1-b",
    },
    "INC-4418": {
        "cluster": "use1-prod",
        "symptom": "cache evictions after deploy, hit ratio 47%",
        "kind": "cache-flush",
        "host": "cache-use1-03",
    },
}
RUNBOOKS = {
    "cache-flush": {"role": "cache", "steps": ["drain connections", "flush keyspace", "warm hot keys"]},
    "db-failover": {"role": "db-primary", "steps": ["freeze writes", "promote replica", "repoint DNS"]},
    "restart-workers": {"role": "worker", "steps": ["pause consumers", "rolling restart"]},
}
# What the shared log buffer still held from the previous incident handled on this runner.
LEFTOVER = [
    "2025-06-11T01:02:11Z ERROR cache-euw2-01 evicted 1.2M keys in 60s",
    "2025-06-11T01:02:40Z ERROR pg-euw2-a replication slot lagging",
]
EXECUTED: list[dict[str, str]] = []


@trajdebug.step(kind="tool")
def fetch_incident(incident_id: str) -> dict[str, Any]:
    tick("fetch_incident")
    i = INCIDENTS[incident_id]
    return {"incident_id": incident_id, "cluster": i["cluster"], "symptom": i["symptom"]}


@trajdebug.step(kind="llm", attributes={"model": "ops-router"})
def classify_incident(prompt: str) -> str:
    """The fake model: maps the symptom to a runbook."""
    tick("classify_incident")
    symptom = prompt.split("Symptom: ", 1)[1].lower()
    if "cache" in symptom:
        choice = "cache-flush"
        if faulty("route_eviction_to_failover", "classify_incident"):
            choice = "db-failover"  # 'evictions storm' read as a database capacity problem
    elif "worker" in symptom:
        choice = "restart-workers"
    else:
        choice = "db-failover"
    return json.dumps({"runbook": choice, "confidence": 0.82})


@trajdebug.step(kind="tool")
def load_runbook(name: str) -> dict[str, Any]:
    tick("load_runbook")
    return {"name": name, **RUNBOOKS[name]}


@trajdebug.step(kind="tool")
def fetch_logs(cluster: str, incident_id: str) -> list[str]:
    tick("fetch_logs")
    host = INCIDENTS[incident_id]["host"]
    lines = [
        f"2025-06-11T02:10:03Z WARN {CLUSTERS[cluster]['worker'][0]} slow heartbeat",
        f"2025-06-11T02:10:09Z ERROR {host} {INCIDENTS[incident_id]['symptom']}",
        f"2025-06-11T02:10:15Z INFO {CLUSTERS[cluster]['cache'][0]} stats ok",
    ]
    if faulty("log_buffer_leftover", "fetch_logs"):
        lines += LEFTOVER  # the ring buffer was not cleared after the last incident
    return lines


@trajdebug.step(kind="llm", attributes={"model": "ops-analyst"})
def identify_target(prompt: str) -> str:
    """The fake model: the host of the most recent ERROR line with the runbook's role."""
    tick("identify_target")
    req = json.loads(prompt.split("CONTEXT:", 1)[1])
    prefix = {"cache": "cache-", "db-primary": "pg-", "worker": "wrk-"}[req["role"]]
    hosts = [ln.split()[2] for ln in req["logs"] if " ERROR " in ln and ln.split()[2].startswith(prefix)]
    if not hosts:
        hosts = [h for h in req["inventory"] if h.startswith(prefix)]
    return hosts[-1]


@trajdebug.step(kind="state")
def record_target(host: str) -> str:
    tick("record_target")
    value = host
    if faulty("target_pool_name", "record_target"):
        value = host.rsplit("-", 1)[0]  # normalised to the pool name for the change ticket
    trajdebug.current_run().state["target"] = value
    return "recorded"


@trajdebug.step(kind="tool")
def execute_step(action: str) -> dict[str, str]:
    tick("execute_step")
    target = trajdebug.current_run().state["target"]
    EXECUTED.append({"action": action, "target": target})
    return {"action": action, "target": target, "exit": "0"}


@trajdebug.step(kind="condition")
def verify_health(incident_id: str, runbook: dict[str, Any]) -> dict[str, Any]:
    tick("verify_health")
    inc = INCIDENTS[incident_id]
    targets = {e["target"] for e in EXECUTED}
    if runbook["name"] != inc["kind"]:
        failing("verify_health")
        raise RuntimeError(f"{incident_id} still degraded after {runbook['name']}: {inc['symptom']}")
    inventory = [h for hosts in CLUSTERS[inc["cluster"]].values() for h in hosts]
    stray = sorted(t for t in targets if t not in inventory)
    if stray:
        failing("verify_health")
        raise RuntimeError(f"runbook actions hit {', '.join(stray)}, which is not a host of {inc['cluster']}")
    if inc["host"] not in targets:
        failing("verify_health")
        raise RuntimeError(f"{inc['host']} never received the runbook; symptom persists on {inc['cluster']}")
    return {"healthy": True, "targets": sorted(targets)}


def run(task: dict[str, Any], path: Path) -> Any:
    EXECUTED.clear()
    iid = task["incident_id"]
    with trajdebug.run("runbook-executor", path=path, task=f"resolve {iid}", agent=AGENT):
        inc = fetch_incident(iid)
        choice = json.loads(
            classify_incident(f"Pick a runbook for {iid} on {inc['cluster']}. Symptom: {inc['symptom']}")
        )
        runbook = load_runbook(choice["runbook"])
        logs = fetch_logs(inc["cluster"], iid)
        inventory = [h for hosts in CLUSTERS[inc["cluster"]].values() for h in hosts]
        host = identify_target(
            "Which host should the runbook act on? CONTEXT:"
            + json.dumps({"role": runbook["role"], "logs": logs, "inventory": inventory})
        )
        record_target(host)
        for action in runbook["steps"]:
            execute_step(action)
        return verify_health(iid, runbook)


PASSING = [{"incident_id": i} for i in ("INC-4411", "INC-4412", "INC-4414", "INC-4415", "INC-4417")]

CASES = [
    Case(
        id="runbook-evictions-routed-to-failover",
        task={"incident_id": "INC-4410"},
        fault="route_eviction_to_failover",
        fault_kind="wrong_routing",
        description="The routing model reads an eviction storm as a database problem and picks db-failover. The "
        "failover runbook is loaded, the primary is targeted and failed over, and verification finds the cache "
        "symptom unchanged.",
        root="classify_incident",
        evidence="db-failover",
        path=[
            "classify_incident",
            "load_runbook",
            "identify_target",
            "record_target",
            "execute_step",
            "verify_health",
        ],
        failure="verify_health",
    ),
    Case(
        id="runbook-log-buffer-leftover",
        task={"incident_id": "INC-4418"},
        fault="log_buffer_leftover",
        fault_kind="context_pollution",
        description="fetch_logs returns the ring buffer with two lines left from last night's euw2 incident. The "
        "analyst model takes the most recent cache ERROR line, cache-euw2-01, as the target; the runbook runs "
        "against a host outside use1-prod and verification fails.",
        root="fetch_logs",
        evidence="cache-euw2-01",
        path=["fetch_logs", "identify_target", "record_target", "execute_step", "verify_health"],
        failure="verify_health",
    ),
    Case(
        id="runbook-target-pool-name",
        task={"incident_id": "INC-4416"},
        fault="target_pool_name",
        fault_kind="bad_memory_write",
        description="record_target normalises cache-euw2-03 to its pool name cache-euw2 before writing it to run "
        "state; every runbook step reads that value and verification reports actions on a non-existent host.",
        root="record_target",
        evidence="recorded",
        path=["record_target", "execute_step", "verify_health"],
        failure="verify_health",
    ),
    Case(
        id="runbook-fragmentation-routed-to-failover",
        task={"incident_id": "INC-4413"},
        fault="route_eviction_to_failover",
        fault_kind="wrong_routing",
        description="A cache fragmentation incident is routed to db-failover; the Singapore primary is failed over "
        "for nothing and the verification finds the cache still degraded.",
        root="classify_incident",
        evidence="db-failover",
        path=[
            "classify_incident",
            "load_runbook",
            "identify_target",
            "record_target",
            "execute_step",
            "verify_health",
        ],
        failure="verify_health",
    ),
]
