"""Phone repair counter: an OpenAI Agents SDK counter agent hands off to a repair bench (openai_agents)."""
from __future__ import annotations

import json
from pathlib import Path

from .common import agents_setup, as_json, system_text, tool_outputs
from .kit import active

NAME = "phone-repair-counter"
ROUTE = "openai_agents"
DOMAIN = "phone repair counter"
SHAPE = "counter agent (intake form tool) -> hand-off to screen or battery bench -> warranty, parts search, diagnostics agent-as-tool (log tool) -> issue work order"

DEVICES = {
    "T-4410": "Ticket T-4410 | model: iPhone 14 | IMEI: 356 789 104 223 871 | symptom: cracked screen, touch dead in corner | customer: R. Okafor",
    "T-4418": "Ticket T-4418 | model: Pixel 8 | IMEI: 352 114 900 781 236 | symptom: battery swelling, back lifting | customer: D. Marsh",
    "T-4301": "Ticket T-4301 | model: Galaxy S23 | IMEI: 351 220 448 190 552 | symptom: cracked screen | customer: P. Lind",
    "T-4302": "Ticket T-4302 | model: iPhone 13 | IMEI: 353 901 227 640 118 | symptom: battery drains by noon | customer: S. Ivers",
    "T-4303": "Ticket T-4303 | model: Pixel 7 | IMEI: 358 660 712 034 995 | symptom: screen flicker | customer: H. Tran",
    "T-4304": "Ticket T-4304 | model: iPhone 15 | IMEI: 350 118 392 775 460 | symptom: battery at 71% health | customer: M. Diaz",
}
PARTS = {("iPhone 14", "screen"): ("SCR-IP14", 189.0), ("Pixel 8", "battery"): ("BAT-PX8", 79.0),
         ("Galaxy S23", "screen"): ("SCR-GS23", 169.0), ("iPhone 13", "battery"): ("BAT-IP13", 69.0),
         ("Pixel 7", "screen"): ("SCR-PX7", 139.0), ("iPhone 15", "battery"): ("BAT-IP15", 89.0),
         ("iPhone 13", "screen"): ("SCR-IP13", 159.0), ("Pixel 8", "screen"): ("SCR-PX8", 149.0)}
LOGS = {t: ["boot ok", "touch controller: ok" if "battery" in v else "touch controller: dead zone r3", "charge cycles: 412",
            "moisture indicator: pass"] for t, v in DEVICES.items()}
INPUTS = {k: {"ticket": k} for k in DEVICES}
INPUTS.update({"r1": {"ticket": "T-4301"}, "r2": {"ticket": "T-4302"}, "r3": {"ticket": "T-4303"}, "r4": {"ticket": "T-4304"}})
REFS = ["r1", "r2", "r3", "r4"]
CASES = [
    {"id": "zd_phone_route", "kind": "wrong_routing", "input": "T-4410", "root": "generation gpt-4o-mini", "occ": 2,
     "failure": "issue_work_order", "description": "the counter agent hands a cracked-screen ticket to the battery bench, which orders a battery the work-order system refuses for the reported symptom."},
    {"id": "zd_phone_price", "kind": "hallucinated_value", "input": "T-4418", "root": "generation gpt-4o-mini", "occ": 8,
     "failure": "issue_work_order", "description": "the battery bench's model writes a part price into the work order that no parts result gave, and the work-order system refuses the price."},
    {"id": "zd_phone_parts", "kind": "tool_ignores_argument", "input": "T-4410", "root": "parts_search", "occ": 1,
     "failure": "issue_work_order", "description": "parts_search ignores the model argument and returns the iPhone 13 screen, which the work-order system finds incompatible with the iPhone 14."},
    {"id": "zd_phone_log", "kind": "truncated_result", "input": "T-4418", "root": "read_diag_log", "occ": 1,
     "failure": "issue_work_order", "description": "read_diag_log returns the log cut before its moisture line, the diagnostics agent reports moisture unknown, and the work-order system requires pass or fail."},
    {"id": "zd_phone_imei", "kind": "lossy_parsing", "input": "T-4410", "root": "read_intake_form", "occ": 1,
     "failure": "issue_work_order", "description": "read_intake_form keeps only the first group of the spaced IMEI, and the work-order system rejects the short IMEI."},
]


def policy(req):
    from trajdebug.testing import Reply, tool_call
    sys_text = system_text(req)
    done = tool_outputs(req)
    if "[diagnostics]" in sys_text:
        if "read_diag_log" not in done:
            ask = (req.body["messages"][-1].get("content") or "")
            return Reply(tool_calls=(tool_call("read_diag_log", {"ticket": ask.split("ticket ")[-1].split()[0].strip(".")}),))
        lines = as_json(done["read_diag_log"][-1][1])
        moist = next((ln.split(": ")[1] for ln in lines if ln.startswith("moisture")), "unknown")
        touch = next((ln.split(": ")[1] for ln in lines if ln.startswith("touch")), "unknown")
        return json.dumps({"moisture_check": moist, "touch": touch})
    if "[counter]" in sys_text:
        if "read_intake_form" not in done:
            ticket = json.loads(req.body["messages"][-1]["content"])["ticket"]
            return Reply(tool_calls=(tool_call("read_intake_form", {"ticket": ticket}),))
        form = as_json(done["read_intake_form"][-1][1])
        bench = "screen" if "screen" in form["symptom"] else "battery"
        if active("zd_phone_route"):
            bench = "battery"
        return Reply(tool_calls=(tool_call(f"transfer_to_{bench}_bench", {}),))
    # a bench
    part = "screen" if "[screen_bench]" in sys_text else "battery"
    form = as_json(done["read_intake_form"][-1][1])
    if "check_warranty" not in done:
        return Reply(tool_calls=(tool_call("check_warranty", {"imei": form["imei"]}),))
    if "parts_search" not in done:
        return Reply(tool_calls=(tool_call("parts_search", {"model": form["model"], "part": part}),))
    if "run_diagnostics" not in done:
        return Reply(tool_calls=(tool_call("run_diagnostics", {"input": f"Run the bench diagnostics for ticket {form['ticket']}."}),))
    if "issue_work_order" not in done:
        p = as_json(done["parts_search"][-1][1])
        diag = as_json(done["run_diagnostics"][-1][1])
        price = p["price"]
        if active("zd_phone_price"):
            price = 59.0
        w = as_json(done["check_warranty"][-1][1])
        return Reply(tool_calls=(tool_call("issue_work_order", {
            "ticket": form["ticket"], "imei": form["imei"], "model": form["model"], "part_sku": p["sku"], "price": price,
            "warranty": w["covered"], "moisture_check": diag["moisture_check"], "symptom": form["symptom"]}),))
    return "Work order issued; the customer has been told the pickup time."


def build():
    from agents import Agent, function_tool

    @function_tool
    def read_intake_form(ticket: str) -> dict:
        """Read the counter's intake form for a ticket."""
        fields = dict(p.strip().split(": ", 1) for p in DEVICES[ticket].split("|")[1:])
        imei = fields["IMEI"].split()[0] if active("zd_phone_imei") else fields["IMEI"].replace(" ", "")
        return {"ticket": ticket, "model": fields["model"], "imei": imei, "symptom": fields["symptom"], "customer": fields["customer"]}

    @function_tool
    def check_warranty(imei: str) -> dict:
        """Warranty status of a device."""
        return {"imei": imei, "covered": imei.endswith(("1", "5")), "until": "2027-03-01"}

    @function_tool
    def parts_search(model: str, part: str) -> dict:
        """Find the part for a phone model."""
        key = ("iPhone 13", part) if active("zd_phone_parts") else (model, part)
        sku, price = PARTS.get(key) or (("SCR-" if part == "screen" else "BAT-") + key[0].replace(" ", "")[:6].upper(), 99.0)
        return {"sku": sku, "price": price, "in_stock": 3}

    @function_tool
    def read_diag_log(ticket: str) -> list[str]:
        """The bench diagnostic log of a device."""
        lines = LOGS[ticket]
        return lines[:3] if active("zd_phone_log") else list(lines)

    def _order_error(ctx, error):
        raise error

    @function_tool(failure_error_function=None)
    def issue_work_order(ticket: str, imei: str, model: str, part_sku: str, price: float, warranty: bool,
                         moisture_check: str, symptom: str) -> dict:
        """Issue the repair work order (validated by the work-order system)."""
        if len(imei) != 15 or not imei.isdigit():
            raise ValueError(f"work-order API 422: imei '{imei}' must be 15 digits")
        want = "screen" if "screen" in symptom else "battery"
        if not part_sku.startswith("SCR" if want == "screen" else "BAT"):
            raise ValueError(f"work-order API 422: part {part_sku} does not address the reported symptom '{symptom}'")
        sku = PARTS.get((model, want), ("", 0.0))
        if part_sku != sku[0]:
            raise ValueError(f"work-order API 409: part {part_sku} is not compatible with {model}")
        if abs(price - sku[1]) > 0.01:
            raise ValueError(f"work-order API 409: price {price:.2f} differs from catalogue price {sku[1]:.2f} for {part_sku}")
        if moisture_check not in ("pass", "fail"):
            raise ValueError(f"work-order API 422: moisture_check must be 'pass' or 'fail', got '{moisture_check}'")
        return {"work_order": "WO-" + ticket[2:], "status": "queued"}

    diag = Agent(name="diagnostics", model="gpt-4o-mini", instructions="[diagnostics] Read the bench log and answer JSON.", tools=[read_diag_log])
    diag_tool = diag.as_tool(tool_name="run_diagnostics", tool_description="Run the bench diagnostics for a ticket.")
    bench_tools = [check_warranty, parts_search, diag_tool, issue_work_order]
    screen = Agent(name="screen_bench", model="gpt-4o-mini", instructions="[screen_bench] Quote and order the screen repair.", tools=bench_tools)
    battery = Agent(name="battery_bench", model="gpt-4o-mini", instructions="[battery_bench] Quote and order the battery repair.", tools=bench_tools)
    counter = Agent(name="counter", model="gpt-4o-mini", instructions="[counter] Read the intake form and hand off to the right bench.",
                    tools=[read_intake_form], handoffs=[screen, battery])
    return counter


def record(inp: dict, path: Path, base_url: str) -> None:
    from agents import RunConfig, Runner
    from trajdebug.integrations.openai_agents import TrajdebugProcessor
    proc = TrajdebugProcessor(path=str(path), name=NAME, task=f"repair ticket {inp['ticket']}")
    agents_setup(base_url, proc)
    try:
        Runner.run_sync(build(), json.dumps({"ticket": inp["ticket"]}), run_config=RunConfig(workflow_name=NAME))
    except Exception:
        pass
