"""TEMPORARY: log where new rules fire (removed before merge)."""
import json
import os


def off(rule: str) -> bool:
    return rule in os.environ.get("MSB_OFF", "").split(",")


def fire(rule: str, run_id: str, step_id: str, name: str, extra: str = "") -> None:
    p = os.environ.get("TRAJDEBUG_FIRE_LOG")
    if p:
        with open(p, "a") as f:
            f.write(json.dumps({"rule": rule, "run": run_id, "step": step_id, "name": name, "extra": extra[:200]}) + "\n")
