"""Pottery studio kiln desk (openai_agents route): a member's firing request -> intake agent (member's
pieces, a glaze-chemist agent used as a tool, in parallel per glaze) -> hand-off to the kiln scheduler
(kiln availability, booking, member notice)."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

from agents import Agent, function_tool

from trajdebug.testing import Reply, tool_call

from ._sdk import calls_and_outputs, first_user, run_workflow


NAME = "kiln-firing-desk"
ROUTE = "openai_agents"
DOMAIN = "pottery studio, kiln firing bookings"
SHAPE = "Agents SDK: intake agent with a tool and a sub-agent as a tool (parallel calls per glaze), hand-off to a scheduler agent with three tools; booking and notice tools raise"
SWITCH = None


def _switched(name: str) -> bool:
    return SWITCH == name


INPUTS = [
    {"task": "glaze firing for member M-14", "message": "Hi, member M-14 here. My pieces are glazed and ready; please book them into a glaze firing in week 2026-W12."},
    {"task": "glaze firing for member M-22", "message": "Member M-22: could you fire my glazed pieces in week 2026-W12?"},
    {"task": "glaze firing for member M-07", "message": "M-07 here, I'd like a glaze firing in week 2026-W13 for everything I left on the shelf."},
    {"task": "glaze firing for member M-31", "message": "Booking request from member M-31: glaze firing, week 2026-W13 please."},
    {"task": "glaze firing for member M-18", "message": "Member M-18 asking for a glaze firing in week 2026-W12. Thanks!"},
]

PIECES = {
    "M-14": [{"id": "P-141", "form": "mug", "clay": "stoneware", "glaze": "Shino Satin", "shelf_cm2": 120},
             {"id": "P-142", "form": "bowl", "clay": "stoneware", "glaze": "Celadon Blue", "shelf_cm2": 300},
             {"id": "P-143", "form": "vase", "clay": "stoneware", "glaze": "Shino Satin", "shelf_cm2": 180},
             {"id": "P-144", "form": "plate", "clay": "stoneware", "glaze": "Celadon Blue", "shelf_cm2": 520},
             {"id": "P-145", "form": "mug", "clay": "stoneware", "glaze": "Shino Satin", "shelf_cm2": 120}],
    "M-22": [{"id": "P-221", "form": "planter", "clay": "stoneware", "glaze": "Tenmoku", "shelf_cm2": 650},
             {"id": "P-222", "form": "jar", "clay": "stoneware", "glaze": "Tenmoku", "shelf_cm2": 260}],
    "M-07": [{"id": "P-071", "form": "teapot", "clay": "porcelain", "glaze": "Clear Gloss", "shelf_cm2": 340},
             {"id": "P-072", "form": "cup", "clay": "porcelain", "glaze": "Clear Gloss", "shelf_cm2": 80},
             {"id": "P-073", "form": "cup", "clay": "porcelain", "glaze": "Clear Gloss", "shelf_cm2": 80}],
    "M-31": [{"id": "P-311", "form": "platter", "clay": "stoneware", "glaze": "Celadon Blue", "shelf_cm2": 1600},
             {"id": "P-312", "form": "bowl", "clay": "stoneware", "glaze": "Celadon Blue", "shelf_cm2": 950},
             {"id": "P-313", "form": "bowl", "clay": "stoneware", "glaze": "Celadon Blue", "shelf_cm2": 950}],
    "M-18": [{"id": "P-181", "form": "mug", "clay": "stoneware", "glaze": "Tenmoku", "shelf_cm2": 120},
             {"id": "P-182", "form": "mug", "clay": "stoneware", "glaze": "Shino", "shelf_cm2": 120},
             {"id": "P-183", "form": "bottle", "clay": "stoneware", "glaze": "Tenmoku", "shelf_cm2": 150},
             {"id": "P-184", "form": "bowl", "clay": "stoneware", "glaze": "Shino", "shelf_cm2": 260}],
}
GLAZES = {"Shino Satin": 6, "Celadon Blue": 6, "Celadon": 10, "Tenmoku": 10, "Clear Gloss": 6, "Shino": 10}
KILNS = {  # kiln -> (cone, {week: [(date, free shelf cm2)]})
    "electric-L": (6, {"2026-W12": [("2026-03-17", 900), ("2026-03-20", 3600)], "2026-W13": [("2026-03-24", 3600)]}),
    "gas-R": (10, {"2026-W12": [("2026-03-19", 2400)], "2026-W13": [("2026-03-26", 2400)]}),
}
BOOKED: dict[str, list[str]] = {}


# ---- model -------------------------------------------------------------------------------------------

def brain(request):
    instructions = request.body.get("instructions") or ""
    done = calls_and_outputs(request)
    names = [n for n, _, _ in done]
    if instructions.startswith("You are the glaze chemist"):
        glaze = re.search(r"glaze (.+?) on", first_user(request)).group(1)
        if "glaze_lookup" not in names:
            if _switched("chemist-name"):
                glaze = glaze.split()[0]
            return Reply(tool_calls=(tool_call("glaze_lookup", {"glaze": glaze}),))
        found = done[-1][2]
        return f"{found['glaze']}: cone {found['cone']}, {found['atmosphere']}."
    text = first_user(request)
    member = re.search(r"M-\d+", text).group(0)
    week = re.search(r"\d{4}-W\d{2}", text).group(0)
    pieces = next((o for n, _, o in done if n == "member_pieces"), None)
    if instructions.startswith("You are the studio intake"):
        if pieces is None:
            return Reply(tool_calls=(tool_call("member_pieces", {"member_id": member}),))
        if "glaze_chemist" not in names:
            glazes = sorted({p["glaze"] for p in pieces["pieces"]})
            return Reply(tool_calls=tuple(tool_call("glaze_chemist", {"input": f"Firing cone for glaze {g} on {pieces['pieces'][0]['clay']}?"})
                                          for g in glazes))
        return Reply(tool_calls=(tool_call("transfer_to_kiln_scheduler", {}),))
    if instructions.startswith("You schedule kiln"):
        cones = {int(re.search(r"cone (\d+)", o).group(1)) for n, _, o in done if n == "glaze_chemist"}
        if "kiln_availability" not in names:
            cone = max(cones)
            if _switched("clay-cone"):
                cone = 10
            return Reply(tool_calls=(tool_call("kiln_availability", {"cone": cone, "week": week}),))
        avail = next(o for n, _, o in done if n == "kiln_availability")
        ids = [p["id"] for p in pieces["pieces"]]
        area = sum(p["shelf_cm2"] for p in pieces["pieces"])
        if "book_firing" not in names:
            slots = avail["slots"]
            fit = slots[0] if _switched("first-slot") else next((s for s in slots if s["free_cm2"] >= area), slots[0])
            return Reply(tool_calls=(tool_call("book_firing", {"kiln": avail["kiln"], "cone": avail["cone"], "firing_date": fit["date"],
                                                               "piece_ids": ids, "shelf_cm2": area}),))
        booking = next(o for n, _, o in done if n == "book_firing")
        if "notify_member" not in names:
            return Reply(tool_calls=(tool_call("notify_member", {"member_id": member, "piece_ids": ids, "firing_date": booking["date"],
                                                                 "kiln": booking["kiln"]}),))
        return f"Booked: {len(ids)} pieces of {member} in {booking['kiln']} on {booking['date']} (cone {booking['cone']})."
    return "I can only help with kiln firings."


# ---- tools -------------------------------------------------------------------------------------------

@function_tool
def member_pieces(member_id: str) -> dict:
    """Glazed pieces a member left on the firing shelf."""
    pieces = PIECES[member_id]
    if _switched("shelf-page"):
        pieces = pieces[:3]
    return {"member_id": member_id, "pieces": pieces}


@function_tool
def glaze_lookup(glaze: str) -> dict:
    """Maturing cone and atmosphere of a studio glaze."""
    return {"glaze": glaze, "cone": GLAZES[glaze], "atmosphere": "reduction" if GLAZES[glaze] == 10 else "oxidation"}


@function_tool
def kiln_availability(cone: int, week: str) -> dict:
    """Free firing slots in a week for kilns that fire to a cone."""
    kiln = next(k for k, (c, _) in KILNS.items() if c == cone)
    slots = [{"date": d, "free_cm2": free} for d, free in KILNS[kiln][1][week]]
    if _switched("calendar-export"):
        slots = [{"date": date.fromisoformat(s["date"]).strftime("%d/%m/%Y"), "free_cm2": s["free_cm2"]} for s in slots]
    return {"kiln": kiln, "cone": cone, "week": week, "slots": slots}


@function_tool(failure_error_function=None)
def book_firing(kiln: str, cone: int, firing_date: str, piece_ids: list[str], shelf_cm2: int) -> dict:
    """Book pieces into a kiln firing."""
    day = date.fromisoformat(firing_date)
    kcone, weeks = KILNS[kiln]
    every = {p["id"]: p for ps in PIECES.values() for p in ps}
    for pid in piece_ids:
        if GLAZES[every[pid]["glaze"]] != cone or kcone != cone:
            raise ValueError(f"{pid} ({every[pid]['glaze']}) matures at cone {GLAZES[every[pid]['glaze']]}, {kiln} fires to cone {kcone}")
    free = dict(s for slots in weeks.values() for s in slots)[day.isoformat()]
    area = sum(every[p]["shelf_cm2"] for p in piece_ids)
    if area > free:
        raise ValueError(f"{kiln} on {day}: {area} cm2 of pieces, {free} cm2 of shelf free")
    BOOKED[piece_ids[0][:4]] = list(piece_ids)
    return {"kiln": kiln, "cone": cone, "date": day.isoformat(), "pieces": len(piece_ids)}


@function_tool(failure_error_function=None)
def notify_member(member_id: str, piece_ids: list[str], firing_date: str, kiln: str) -> str:
    """Send the member their firing notice."""
    missing = [p["id"] for p in PIECES[member_id] if p["id"] not in piece_ids]
    if missing:
        raise ValueError(f"{member_id} has {', '.join(missing)} on the glaze shelf and they are not in the firing")
    return f"notice sent to {member_id}: {len(piece_ids)} pieces, {kiln}, {firing_date}"


def agent(model: str) -> Agent:
    chemist = Agent(name="glaze_chemist", model=model, tools=[glaze_lookup],
                    instructions="You are the glaze chemist. Look the glaze up and give its firing cone.")
    scheduler = Agent(name="kiln_scheduler", model=model, tools=[kiln_availability, book_firing, notify_member],
                      instructions="You schedule kiln firings: find a slot, book it, notify the member.")
    return Agent(name="intake", model=model, handoffs=[scheduler],
                 tools=[member_pieces, chemist.as_tool("glaze_chemist", "Ask the glaze chemist for a glaze's firing cone.")],
                 instructions="You are the studio intake desk. Find the member's pieces, get each glaze's cone, hand off to the scheduler.")


def record(inp: dict, out: Path, ctx) -> None:
    run_workflow(agent(ctx.model), inp["message"], NAME, inp["task"], out, ctx)


CASES = [
    {"id": "kiln_1", "input": 2, "switch": "clay-cone", "kind": "wrong_tool_args",
     "root": ("response", 6), "failure": ("book_firing", 1),
     "description": "The scheduler asks for kiln slots at cone 10, the porcelain's limit, instead of the glaze's cone 6, so it books the gas kiln and the booking refuses the pieces."},
    {"id": "kiln_2", "input": 3, "switch": "chemist-name", "kind": "subagent_wrong_entity",
     "root": ("response", 3), "failure": ("book_firing", 1),
     "description": "The glaze-chemist sub-agent looks up Celadon, a cone-10 glaze, when asked about Celadon Blue, so the load goes to the cone-10 kiln and the booking refuses it."},
    {"id": "kiln_3", "input": 1, "switch": "calendar-export", "kind": "format_drift",
     "root": ("kiln_availability", 1), "failure": ("book_firing", 1),
     "description": "The kiln calendar answers its slot dates as 19/03/2026 instead of ISO dates, and the booking tool cannot read the date it is handed."},
    {"id": "kiln_4", "input": 4, "switch": "shelf-page", "kind": "truncated_result",
     "root": ("member_pieces", 1), "failure": ("notify_member", 1),
     "description": "The member's shelf list answers only its first three pieces, so P-184 is never booked and the member notice refuses the firing."},
    {"id": "kiln_5", "input": 0, "switch": "first-slot", "kind": "plan_error",
     "root": ("response", 9), "failure": ("book_firing", 1),
     "description": "The scheduler plans the whole load into the week's first slot without checking its free shelf, 900 cm2 for 1240 cm2 of pieces, and the booking refuses."},
]
