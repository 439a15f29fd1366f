"""A letterpress print shop's quote desk (the OpenAI Agents SDK over Chat Completions, trajdebug's tracing
processor): an estimator that writes its plan to memory, calls tools in parallel and hands off to a
ticket clerk whose job-ticket tool validates the job."""

from __future__ import annotations

import ast
import json
import math
import re

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from . import common

NAME = "inkwell-letterpress-quotes"
ROUTE = "openai_agents"
DOMAIN = "letterpress print shop: job brief to plan, imposition, press time, paper cost, job ticket"
SHAPE = "Agents SDK (chat completions): estimator (plan to memory, parallel stock+imposition, parallel press time+paper price) -> hand-off -> ticket clerk (job ticket tool, strict schema)"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


INPUTS = {
    "wedding": {"job": "J-501", "item": "wedding invitations", "qty": 150, "size": [105, 148], "colours": 2, "paper": "Cotton 600", "finish": "flat", "ceiling": 400.0},
    "coasters": {"job": "J-502", "item": "bar coasters", "qty": 500, "size": [95, 95], "colours": 1, "paper": "Board 1400", "finish": "rounded corners", "ceiling": 500.0},
    "cards": {"job": "J-503", "item": "business cards", "qty": 1000, "size": [85, 55], "colours": 2, "paper": "Cotton 600", "finish": "rounded corners", "ceiling": 450.0},
    "menus": {"job": "J-504", "item": "dinner menus", "qty": 80, "size": [210, 297], "colours": 1, "paper": "Cotton 300", "finish": "flat", "ceiling": 300.0},
    "notes": {"job": "J-505", "item": "notecards", "qty": 300, "size": [210, 148], "colours": 1, "paper": "Cotton 300", "finish": "scored and folded", "ceiling": 350.0},
}

CASES = [
    {"id": "print_imposition_count", "input": "cards", "switch": "ups_plus_one", "fault_kind": "off_by_one",
     "root": ("impose_sheet", 1), "failure": ("create_job_ticket", 1),
     "description": "Imposition counted one card more across the sheet (66-up instead of 55-up), so 16 sheets were ordered for 1000 cards that need 19."},
    {"id": "print_paper_cents", "input": "menus", "switch": "price_cents", "fault_kind": "unit_error",
     "root": ("price_paper", 1), "failure": ("create_job_ticket", 1),
     "description": "The paper price tool gave the sheet price in cents (185) where the estimate reads currency, and the job total went far over the approved ceiling."},
    {"id": "print_paper_weight", "input": "wedding", "switch": "paper_weight", "fault_kind": "wrong_tool_args",
     "root": ("generation fake-model", 2), "failure": ("create_job_ticket", 1),
     "description": "The estimator model checked stock for Cotton 300 although the brief asks for Cotton 600, and the job ticket refused the paper."},
    {"id": "print_press_duration", "input": "coasters", "switch": "duration_text", "fault_kind": "format_drift",
     "root": ("press_time", 1), "failure": ("create_job_ticket", 1),
     "description": "The press scheduler answered its time as '1:40' text instead of minutes, the clerk passed it on, and the job ticket's schema refused a non-integer press time."},
    {"id": "print_missing_score", "input": "notes", "switch": "plan_no_score", "fault_kind": "plan_error",
     "root": ("generation fake-model", 1), "failure": ("create_job_ticket", 1),
     "description": "The estimator's plan for scored and folded notecards had no score-and-fold step, and the job ticket check found the finish unplanned."},
]

SHEET = (508, 660)  # mm, 20 x 26 in
GUTTER = 3
STOCK = {"Cotton 600": 400, "Cotton 300": 900, "Board 1400": 250}
PAPER_PRICE = {"Cotton 600": 2.40, "Cotton 300": 1.85, "Board 1400": 3.10}
MEMO: dict = {}

ESTIMATOR = "You are the estimator of a letterpress shop. Record a plan, check stock and imposition in parallel, then press time and paper price in parallel, then hand off to the ticket clerk."
CLERK = "You are the ticket clerk. Create the job ticket from the estimate, then confirm."


def _outputs(request) -> dict:
    got: dict = {}
    for name, text in common.tool_results(request):
        try:
            got.setdefault(name, []).append(ast.literal_eval(text))
        except (ValueError, SyntaxError):
            got.setdefault(name, []).append(text)
    return got


def brain(request):
    system = common.system_of(request)
    got = _outputs(request)
    brief = json.loads(next(m for m in common.messages_of(request) if m.get("role") == "user")["content"])
    if system.startswith("You are the estimator"):
        if "record_plan" not in got:
            steps = [f"print colour {i + 1}" for i in range(brief["colours"])]
            if brief["finish"] == "rounded corners":
                steps.append("die cut corners")
            if brief["finish"] == "scored and folded" and not _on("plan_no_score"):
                steps.append("score and fold")
            steps += ["trim", "pack"]
            return Reply(tool_calls=(tool_call("record_plan", {"job": brief["job"], "steps": steps}),))
        if "paper_stock" not in got:
            paper = "Cotton 300" if _on("paper_weight") else brief["paper"]
            return Reply(tool_calls=(tool_call("paper_stock", {"paper": paper}),
                                     tool_call("impose_sheet", {"width": brief["size"][0], "height": brief["size"][1], "qty": brief["qty"]})))
        if "press_time" not in got:
            imp = got["impose_sheet"][0]
            paper = got["paper_stock"][0]["paper"]
            return Reply(tool_calls=(tool_call("press_time", {"passes": brief["colours"], "sheets": imp["sheets"]}),
                                     tool_call("price_paper", {"paper": paper, "sheets": imp["sheets"]})))
        return Reply(tool_calls=(tool_call("transfer_to_ticket_clerk", {}),))
    if system.startswith("You are the ticket clerk"):
        if "create_job_ticket" not in got:
            imp, press, price = got["impose_sheet"][0], got["press_time"][0], got["price_paper"][0]
            minutes = press.get("minutes", press.get("duration"))
            as_number = minutes if isinstance(minutes, (int, float)) else float(str(minutes).replace(":", "."))
            total = round(price["unit_price"] * imp["sheets"] + as_number * 1.2 + 35.0 * brief["colours"], 2)
            return Reply(tool_calls=(tool_call("create_job_ticket", {
                "job": brief["job"], "paper": price["paper"], "sheets": imp["sheets"], "ups": imp["ups"],
                "passes": press["passes"], "press_minutes": minutes, "total": total}),))
        t = got["create_job_ticket"][0]
        return f"Job ticket {t['ticket']} created: {t['sheets']} sheets, total {t['total']:.2f}."
    return "Noted."


@function_tool
def record_plan(job: str, steps: list[str]) -> dict:
    """Write the production plan to the job's memory."""
    MEMO[job] = {"steps": list(steps)}
    return {"job": job, "steps": steps, "saved": True}


@function_tool
def paper_stock(paper: str) -> dict:
    """Sheets of a paper in stock."""
    return {"paper": paper, "sheets": STOCK[paper]}


@function_tool
def impose_sheet(width: int, height: int, qty: int) -> dict:
    """How many pieces fit on a press sheet, and the sheets needed."""
    across = SHEET[0] // (width + GUTTER)
    down = SHEET[1] // (height + GUTTER)
    if _on("ups_plus_one"):
        across = (SHEET[0] + GUTTER) // width
    ups = across * down
    return {"ups": ups, "sheets": math.ceil(qty / ups) + 2, "makeready": 2}


@function_tool
def press_time(passes: int, sheets: int) -> dict:
    """Press time for the run."""
    minutes = 30 * passes + sheets // 2 + 20
    if _on("duration_text"):
        return {"passes": passes, "duration": f"{minutes // 60}:{minutes % 60:02d}"}
    return {"passes": passes, "minutes": minutes}


@function_tool
def price_paper(paper: str, sheets: int) -> dict:
    """Paper price per sheet."""
    unit = PAPER_PRICE[paper]
    if _on("price_cents"):
        unit = round(unit * 100)
    return {"paper": paper, "unit_price": unit, "sheets": sheets}


@function_tool(failure_error_function=None)
def create_job_ticket(job: str, paper: str, sheets: int, ups: int, passes: int, press_minutes: int, total: float) -> dict:
    """Create the job ticket; the shop's rules are checked here."""
    brief = CURRENT["brief"]
    if paper != brief["paper"]:
        raise ValueError(f"ticket paper {paper} does not match the brief's {brief['paper']}")
    true_ups = (SHEET[0] // (brief["size"][0] + GUTTER)) * (SHEET[1] // (brief["size"][1] + GUTTER))
    if (sheets - 2) * true_ups < brief["qty"]:
        raise ValueError(f"{sheets - 2} sheets at {true_ups}-up give {(sheets - 2) * true_ups} pieces, {brief['qty']} ordered")
    if passes != brief["colours"]:
        raise ValueError(f"{brief['colours']} ink colours but {passes} press passes")
    steps = MEMO.get(job, {}).get("steps", [])
    finish_step = {"rounded corners": "die cut corners", "scored and folded": "score and fold"}.get(brief["finish"])
    if finish_step and finish_step not in steps:
        raise ValueError(f"brief asks for {brief['finish']}, plan has no '{finish_step}' step")
    if total > brief["ceiling"]:
        raise ValueError(f"total {total:.2f} over the approved {brief['ceiling']:.2f}")
    return {"ticket": f"T{job[2:]}-{sheets}", "sheets": sheets, "total": total}


CURRENT: dict = {}
_AGENT: dict = {}


def _agents():
    if _AGENT.get("url") != common.SERVER.base_url:
        model = OpenAIChatCompletionsModel(model=common.SERVER.model, openai_client=AsyncOpenAI(
            base_url=common.SERVER.base_url, api_key="not-needed", max_retries=0))
        clerk = Agent(name="ticket_clerk", instructions=CLERK, model=model, tools=[create_job_ticket])
        estimator = Agent(name="estimator", instructions=ESTIMATOR, model=model, handoffs=[clerk],
                          tools=[record_plan, paper_stock, impose_sheet, press_time, price_paper])
        _AGENT.update(url=common.SERVER.base_url, estimator=estimator)
    return _AGENT["estimator"]


def record(key: str, path: str) -> None:
    brief = INPUTS[key]
    CURRENT["brief"] = brief
    MEMO.clear()
    estimator = _agents()
    text = json.dumps(brief)
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"{brief['job']} {brief['qty']} {brief['item']}")])
    try:
        common.LOOP.run_until_complete(Runner.run(estimator, text, run_config=RunConfig(workflow_name=NAME)))
    except Exception:
        pass
    finally:
        set_trace_processors([])
