"""Screenshots for the docs that no other benchmark makes: ``python -m benchmarks.screens fleet-cost``.

``fleet-cost``: a small fleet of a support agent (three ways to fail: a bad currency, a scaled amount, a payment API that times out by itself; passing runs between them, every
model call stating its model and tokens through ``s.usage``) recorded into a store, grouped by
`trajdebug.fleet.engine.run_fleet`, rendered by the CLI's own renderer (`render_fleet`) into a recording
terminal, and photographed by Chromium from the system: docs/fleet-cost.png.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

import trajdebug


ROOT = Path(__file__).resolve().parent.parent


def _agent(i: int, fault: str | None) -> None:
    """One ticket: look the order up, ask the model for a refund amount, pay it out."""
    with trajdebug.step("lookup_order", kind="tool", input={"ticket": i}) as s:
        order = {"order": f"O-{1000 + i}", "paid": 40.0 + i, "currency": "EUR"}
        if fault == "currency":
            order["currency"] = "eur "  # a trailing space the payment API refuses
        s.output = order
    with trajdebug.step("draft_refund", kind="llm", input={"order": order}) as s:
        s.usage(model="gpt-4o-mini" if i % 3 else "gpt-4o", prompt_tokens=1800 + 40 * i, completion_tokens=120)
        amount = order["paid"] * (10 if fault == "scale" else 1)
        s.output = {"amount": amount}
    with trajdebug.step("issue_refund", kind="tool", input={"amount": amount, "currency": order["currency"]}) as s:
        if order["currency"] != "EUR":
            raise ValueError(f"payment API: unknown currency {order['currency']!r}")
        if amount > 500:
            raise ValueError(f"payment API: refund {amount:.2f} exceeds the amount paid")
        if fault == "timeout":
            raise TimeoutError("payment API: no answer in 30 s")
        s.output = {"status": "refunded"}


def fleet_cost(out: Path = ROOT / "docs" / "fleet-cost.png") -> Path:
    """Record the fleet, group it, render it and take the screenshot."""
    from rich.console import Console

    from trajdebug.fleet.engine import run_fleet
    from trajdebug.fleet.render import render_fleet

    tmp = Path(tempfile.mkdtemp(prefix="trajdebug-screens-"))
    try:
        store = tmp / "fleet.db"
        faults = ["currency", None, "scale", None, None, "timeout", "currency", None, "scale", "currency"] * 4
        for i, fault in enumerate(faults):
            try:
                with trajdebug.run("support-agent", store=store, version="1.4"):
                    _agent(i, fault)
            except (ValueError, TimeoutError):
                pass
        trajdebug.flush()
        report = run_fleet([store], workers=1)
        console = Console(record=True, width=100, force_terminal=True, color_system="truecolor")
        render_fleet(report, console, top=5)
        svg = tmp / "fleet.svg"
        console.save_svg(str(svg), title="trajdebug fleet fleet.db")
        chromium = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
        subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--screenshot={out}", "--window-size=1260,640", svg.as_uri()],
            check=True, capture_output=True, timeout=120,
        )
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.screens")
    p.add_argument("what", choices=["fleet-cost"])
    p.parse_args()
    print(fleet_cost())


if __name__ == "__main__":
    _main()
