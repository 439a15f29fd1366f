"""Workflow: an on-call runbook agent with retries and timeouts.

receive the alert -> open an incident in shared state -> fetch the runbook ->
plan diagnostic tool calls (LLM) -> check health (retried on timeouts, a
timeout falling back to the last cached status) -> tail the logs -> list
deploys -> read the clock -> diagnose (LLM) -> decide the action (a branch) ->
roll back or restart -> verify health (retried) -> page on-call from the
incident's severity -> close the incident, checking the service recovered and
the right people were paged.
"""

from __future__ import annotations

import json
from typing import Any

import trajdebug
from benchmarks.faults import Case, Injector, ToolTimeout, TransientError
from benchmarks.workflows._base import CheckFailed, Result, record


NAME = "ops-runbook"
FAULTS = (
    "bad-tool-args",
    "masked-retry-stale",
    "truncated-output",
    "wrong-state-value",
    "env-change",
    "wrong-branch",
)
SERVICES = ("checkout", "search", "payments", "inventory", "login", "catalog")
REGIONS = ("eu-west", "us-east", "ap-south")
NOW = 1_780_000_000  # the incident's wall-clock time (seconds since the epoch)


class Infra:
    """A simulated production: one broken service in one region, its logs and deploys."""

    def __init__(self, inj: Injector, service: str, region: str, scenario: str) -> None:
        self.service, self.region, self.scenario = service, region, scenario
        self.healthy = False
        self.version = f"v{inj.rng.randint(100, 400)}"
        age_min = inj.rng.randint(8, 45) if scenario == "deploy" else inj.rng.randint(3, 9) * 1440
        self.deployed_at = NOW - age_min * 60
        self.cached_status = {
            "service": service,
            "region": region,
            "status": "healthy",
            "error_rate": 0.002,
            "age_s": 600,
        }
        noise = [f"INFO request served in {inj.rng.randint(5, 90)} ms" for _ in range(inj.rng.randint(6, 12))]
        cause = (
            f"ERROR NullPointerException in PriceHandler ({self.version}) on every request"
            if scenario == "deploy"
            else "ERROR container OOMKilled: memory limit 2Gi exceeded"
        )
        self.logs = [*noise, "WARN retrying upstream call", cause, cause]
        self.error_rate = round(inj.rng.uniform(0.08, 0.3), 3)

    def status(self, service: str, region: str) -> dict[str, Any]:
        bad = service == self.service and region == self.region and not self.healthy
        return {
            "service": service,
            "region": region,
            "status": "degraded" if bad else "healthy",
            "error_rate": self.error_rate if bad else 0.001,
        }


class ScriptedModel:
    """A deterministic stand-in for the LLM."""

    def __init__(self, inj: Injector) -> None:
        self.inj = inj

    def plan(self, alert: dict[str, Any], runbook: str) -> str:
        region = alert["region"]
        if self.inj.on("bad-tool-args"):
            region = next(r for r in REGIONS if r != alert["region"])  # the planner names the wrong region
        return json.dumps(
            [
                {"tool": "check_health", "args": {"service": alert["service"], "region": region}},
                {"tool": "tail_logs", "args": {"service": alert["service"], "region": region, "lines": 50}},
            ]
        )

    def diagnose(self, health: dict[str, Any], logs: list[str], deploy: dict[str, Any], now: int) -> str:
        errors = [line for line in logs if line.startswith("ERROR")]
        age = (now - deploy["deployed_at"]) // 60
        if health["status"] == "healthy":
            cause = "none"
        elif any("OOMKilled" in e for e in errors):
            cause = "memory"
        elif any(deploy["version"] in e for e in errors):
            cause = "deploy"
        else:
            cause = "unknown"
        return json.dumps({"cause": cause, "deploy_age_min": age, "evidence": errors[-1] if errors else None})


class OpsAgent:
    """The agent: decorated functions calling each other; no ``deps=``."""

    def __init__(self, inj: Injector, infra: Infra) -> None:
        self.inj, self.infra, self.llm = inj, infra, ScriptedModel(inj)
        self.attempts: dict[str, int] = {}
        self.paged: list[str] = []

    @trajdebug.step(kind="input")
    def receive_alert(self, alert: dict[str, Any]) -> dict[str, Any]:
        return alert

    @trajdebug.step(kind="state")
    def open_incident(self, alert: dict[str, Any], state: Any) -> str:
        sev = "SEV1" if alert["error_rate"] >= 0.05 else "SEV3"
        if self.inj.on("wrong-state-value"):
            sev = "SEV3"  # the severity table was read with the wrong threshold column
        state["incident"] = {
            "id": f"INC-{self.inj.rng.randint(1000, 9999)}",
            "severity": sev,
            "service": alert["service"],
        }
        return str(state["incident"]["id"])

    @trajdebug.step(kind="tool")
    def fetch_runbook(self, service: str) -> str:
        self.inj.warning(f"runbook for {service} was last reviewed 400 days ago")
        return f"Runbook {service}: check health; read logs; if a deploy in the last hour broke it roll back; if OOM restart."

    @trajdebug.step(kind="llm")
    def plan(self, alert: dict[str, Any], runbook: str) -> str:
        return self.llm.plan(alert, runbook)

    @trajdebug.step(kind="parse")
    def parse_plan(self, text: str) -> dict[str, dict[str, Any]]:
        return {c["tool"]: c["args"] for c in json.loads(text)}

    @trajdebug.retry(attempts=3, on=(ToolTimeout, TransientError), reason="policy: retry timeouts and resets")
    @trajdebug.step(kind="tool")
    def check_health(self, service: str, region: str) -> dict[str, Any]:
        n = self.attempts["health"] = self.attempts.get("health", 0) + 1
        if n == 1 and self.inj.fault == "masked-retry-stale":
            raise ToolTimeout(f"health check of {service}/{region} timed out after 5 s")
        if n > 1 and self.inj.on("masked-retry-stale"):
            return dict(self.infra.cached_status)  # the last cached status, 10 minutes old
        self.inj.transient("check_health")
        return self.infra.status(service, region)

    @trajdebug.step(kind="tool")
    def tail_logs(self, service: str, region: str, lines: int) -> list[str]:
        if service == self.infra.service and region == self.infra.region:
            out = self.infra.logs[-lines:]
        else:
            out = [f"INFO request served in {10 + i} ms" for i in range(8)]
        if self.inj.on("truncated-output"):
            out = out[: len(out) - 3]  # the log API cut the response at its byte limit
        return out

    @trajdebug.step(kind="tool")
    def list_deploys(self, service: str) -> dict[str, Any]:
        return {"service": service, "version": self.infra.version, "deployed_at": self.infra.deployed_at}

    @trajdebug.step(kind="tool")
    def read_clock(self) -> int:
        now = NOW
        if self.inj.on("env-change"):
            now += 3 * 3600  # the host's clock jumped three hours ahead
        trajdebug.uses_env("clock", now)
        return now

    @trajdebug.step(kind="llm")
    def diagnose(self, health: dict[str, Any], logs: list[str], deploy: dict[str, Any], now: int) -> str:
        return self.llm.diagnose(health, logs, deploy, now)

    @trajdebug.step(kind="tool")
    def rollback(self, service: str, version: str) -> dict[str, Any]:
        if self.infra.scenario == "deploy":
            self.infra.healthy = True
        return {"ok": True, "action": "rollback", "service": service, "from": version}

    @trajdebug.step(kind="tool")
    def restart(self, service: str, region: str) -> dict[str, Any]:
        if self.infra.scenario == "memory" and region == self.infra.region:
            self.infra.healthy = True
        return {"ok": True, "action": "restart", "service": service, "region": region}

    @trajdebug.step(kind="tool")
    def page_oncall(self, state: Any) -> list[str]:
        inc = state["incident"]
        if inc["severity"] in ("SEV1", "SEV2"):
            self.paged.append(f"{inc['service']}-primary")
        return list(self.paged)

    @trajdebug.retry(attempts=3, on=(TransientError,), reason="policy: retry resets")
    @trajdebug.step(kind="tool")
    def verify_health(self, service: str, region: str) -> dict[str, Any]:
        self.inj.transient("verify_health")
        return self.infra.status(service, region)

    @trajdebug.step(kind="output")
    def close_incident(
        self, alert: dict[str, Any], final: dict[str, Any], paged: list[str], action: str
    ) -> str:
        problems = []
        if final["status"] != "healthy":
            problems.append(
                f"{alert['service']} in {alert['region']} is still {final['status']} after '{action}'"
            )
        if alert["error_rate"] >= 0.05 and not paged:
            problems.append(f"error rate {alert['error_rate']:.0%} but nobody was paged")
        if problems:
            raise CheckFailed("incident check failed: " + "; ".join(problems))
        return f"resolved by {action}"

    @trajdebug.step(kind="agent")
    def handle(self, alert: dict[str, Any], state: Any) -> str:
        a = self.receive_alert(alert)
        self.open_incident(a, state)
        calls = self.parse_plan(self.plan(a, self.fetch_runbook(a["service"])))
        health = self.check_health(**calls["check_health"])
        logs = self.tail_logs(**calls["tail_logs"])
        deploy = self.list_deploys(a["service"])
        now = self.read_clock()
        diagnosis = json.loads(self.diagnose(health, logs, deploy, now))
        with trajdebug.step("decide_action", kind="condition", input={"diagnosis": diagnosis}) as decision:
            cause, age = diagnosis["cause"], diagnosis["deploy_age_min"]
            action = {
                "deploy": "rollback" if age <= 60 else "restart",
                "memory": "restart",
                "none": "none",
            }.get(cause, "escalate")
            if self.inj.on("wrong-branch"):
                action = "restart" if action == "rollback" else "rollback"
            decision.output = action
        with trajdebug.branch(decision):
            if action == "rollback":
                self.rollback(a["service"], deploy["version"])
            elif action == "restart":
                self.restart(a["service"], a["region"])
        final = self.verify_health(a["service"], a["region"])
        paged = self.page_oncall(state)
        return str(self.close_incident(a, final, paged, action))


def run(case: Case) -> Result:
    """Run the workflow once for ``case``."""
    inj = Injector(case)
    service, region = inj.rng.choice(SERVICES), inj.rng.choice(REGIONS)
    scenario = "deploy" if case.fault == "env-change" else inj.rng.choice(("deploy", "memory"))
    infra = Infra(inj, service, region, scenario)
    alert = {
        "service": service,
        "region": region,
        "symptom": "5xx rate above threshold",
        "error_rate": infra.error_rate,
    }
    agent = OpsAgent(inj, infra)
    r = record(
        NAME, inj, lambda run: agent.handle(alert, run.state), metadata={"task": f"alert: {service} {region}"}
    )
    return Result(r)
