"""Shared builders of recorded steps for tests of the analysis."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from trajdebug.core.model import Dependency, ErrorInfo, Run, Step


def step(sid: str, name: str, kind: str, start: int, inp: Any, out: Any, *deps: str, **kw: Any) -> Step:
    """A step that ran for one nanosecond from ``start``, depending on the steps ``deps`` names."""
    return Step(
        sid,
        name,
        kind,  # type: ignore[arg-type]
        input=inp,
        output=out,
        start_ns=start,
        end_ns=start + 1,
        deps=tuple(Dependency(d) for d in deps),
        **kw,
    )


def propagated_error_run(*, ids: bool = True) -> Run:
    """A failed run whose one exception the steps it left each re-report, as the Agents SDK records an
    ``as_tool`` sub-agent: a tool raises inside the sub-agent, whose agent span, the caller's tool span and
    the caller's agent span end with it, an ok turn between each (so the step-error detector sees four).
    ``ids``: the steps carry the error's id (without them, each wrapper repeats the inner message)."""
    inner = "RuntimeError: order database down"

    def err(kind: str, message: str) -> ErrorInfo:
        return ErrorInfo(kind, message, "e1" if ids else None)

    steps = (
        Step("top", "workflow", "agent", start_ns=0, end_ns=100),
        Step("caller", "triage", "agent", parent_id="top", status="error",
             error=err("AgentError", f"Error in agent run: {inner}"), start_ns=1, end_ns=90),
        Step("turn", "turn 1", "agent", parent_id="caller", start_ns=2, end_ns=89),
        Step("ask", "response", "llm", parent_id="turn", input="where is W1?", output={"call": "specialist"},
             start_ns=3, end_ns=10),
        Step("as_tool", "specialist", "tool", parent_id="turn", status="error",
             error=err("ToolError", f"Error running tool: {inner}"), start_ns=11, end_ns=80,
             deps=(Dependency("ask"),)),
        Step("sub_run", "workflow", "agent", parent_id="as_tool", start_ns=12, end_ns=75),
        Step("sub", "specialist", "agent", parent_id="sub_run", status="error",
             error=err("AgentError", f"Error in agent run: {inner}"), start_ns=12, end_ns=70),
        Step("sub_turn", "turn 1", "agent", parent_id="sub", start_ns=13, end_ns=60),
        Step("look", "look", "tool", parent_id="sub_turn", input={"order": "W1"}, status="error",
             error=err("RuntimeError", "order database down"), start_ns=20, end_ns=50),
    )
    return Run("r-prop", "triage", 0, 100, "failure", f"Error in agent run: {inner}", steps=steps)


def cancelled_sibling_run() -> Run:
    """A failed run with two parallel tool calls: ``fetch`` raises at t=50 and fails the run; ``slow``,
    cancelled as the failure unwound, ends at t=60 with no output and no error of its own (as the Agents SDK
    records a cancelled task); ``early`` returned nothing before the error (its own doing)."""
    boom = ErrorInfo("ValueError", "bad page", "e1")
    steps = (
        Step("a", "agent", "agent", status="error", error=boom, start_ns=0, end_ns=100),
        Step("early", "lookup", "tool", parent_id="a", input={"q": 1}, start_ns=5, end_ns=20),
        Step("fetch", "fetch", "tool", parent_id="a", input={"q": 2}, status="error", error=boom,
             start_ns=10, end_ns=50),
        Step("slow", "slow", "tool", parent_id="a", input={"q": 3}, start_ns=10, end_ns=60),
    )
    return Run("r-cancel", "parallel", 0, 100, "failure", "ValueError: bad page", steps=steps)


def reading_state(s: Step, writer: str, key: str) -> Step:
    """``s`` with a read of the ``run.state`` key ``key`` that the step ``writer`` wrote, as the recorder keeps it."""
    return replace(s, deps=(*s.deps, Dependency(writer, "state", key=key)))


def quote_runs(*, fixed_reads_usage: bool = True, task: str | None = "quote C-105") -> tuple[Run, Run]:
    """A passing and a failing run of one quote: ``pick_rate`` takes a two-band tariff's first band as the rate
    in the failing run (0.11), where the passing run, of a fixed version, also reads the ``usage`` key of
    ``run.state`` (``fixed_reads_usage``) and weighs the bands (0.305); every step before it returned the same.
    ``task``: the passing run's input (the failing run's is ``quote C-105``); None: neither run states one (no
    task, and a first step given nothing)."""
    usage = {"kwh": 6800, "profile": {"day": 0.65, "night": 0.35}}
    tariff = {"plan": "Smart TOU", "bands": [{"name": "night", "rate": 0.11}, {"name": "day", "rate": 0.41}]}

    def run(rid: str, rate: float, reads: bool, outcome: str, given: str) -> Run:
        pick = step("4", "pick_rate", "state", 4, {"tariff": tariff}, {"eur_per_kwh": rate}, "3",
                    attributes={"state_values": {"rate": {"eur_per_kwh": rate}}})
        savings = round(4760 * rate + 3744 * 0.06, 2)
        steps = (
            step("1", "receive_request", "input", 1, None if task is None else {"customer_id": "C-105"},
                 {"customer_id": "C-105"}),
            step("2", "remember_usage", "state", 2, {"survey": {"usage_kwh": 6800}}, None, "1",
                 attributes={"state_values": {"usage": usage}}),
            step("3", "lookup_tariff", "tool", 3, {"utility": "MetroEnergy"}, tariff, "1"),
            reading_state(pick, "2", "usage") if reads else pick,
            reading_state(step("5", "compute_savings", "other", 5, {"self_used_kwh": 4760}, {"eur_per_year": savings}),
                          "4", "rate"),
            step("6", "compute_payback", "other", 6, {"total_eur": 10258, "savings": savings},
                 {"years": round(10258 / savings, 1)}, "5"),
        )
        reason = None if outcome == "success" else f"payback {round(10258 / savings, 1)} years is above the 12-year limit"
        return Run(rid, "solar-quote", outcome=outcome, failure_reason=reason,  # type: ignore[arg-type]
                   metadata={} if task is None else {"task": given}, steps=steps)

    good = run("good", 0.305, fixed_reads_usage, "success", task)
    return good, run("bad", 0.11, False, "failure", "quote C-105")


def recorded_boiler_run(path: Any, *, invent: bool = False) -> Run:
    """Record (with trajdebug's own recorder) one failing run of a boiler-service quote that keeps its data in
    ``run.state``: an inspection tool stores each boiler's reading, a parse step handed only the boiler's id
    reads that reading from the state and stores it under its own field names, an estimate reads that, and
    the quote reads every estimate (whole hours: small numbers the lineage traces only by their name) and prices
    the hours at a rate of its own.  ``invent``: the parse step
    stores a flue temperature for B2 that no reading holds (a value it made up)."""
    import trajdebug
    from trajdebug.sources.load import load_runs

    readings = {
        "B1": {"boiler": "B1", "pressure": 1.8, "flue_temp": 142.5, "make": "Ferroli"},
        "B2": {"boiler": "B2", "pressure": 2.6, "flue_temp": 171.5, "make": "Baxi"},
    }

    @trajdebug.step(kind="tool")
    def inspect_boiler(boiler_id: str) -> dict[str, Any]:
        trajdebug.current_run().state[f"reading:{boiler_id}"] = readings[boiler_id]
        return readings[boiler_id]

    @trajdebug.step(kind="parse")
    def normalise_reading(boiler_id: str) -> dict[str, Any]:
        r = trajdebug.current_run().state[f"reading:{boiler_id}"]
        flue = 187.25 if invent and boiler_id == "B2" else r["flue_temp"]
        norm = {"boiler": r["boiler"], "pressure_bar": r["pressure"], "flue_c": flue, "make": r["make"]}
        trajdebug.current_run().state[f"norm:{boiler_id}"] = norm
        return norm

    @trajdebug.step(kind="other")
    def estimate_hours(boiler_id: str) -> float:
        n = trajdebug.current_run().state[f"norm:{boiler_id}"]
        hours = float(round(1.5 + n["pressure_bar"] * 0.75 + (n["flue_c"] - 120) / 40))  # whole hours
        trajdebug.current_run().state[f"hours:{boiler_id}"] = hours
        return hours

    @trajdebug.step(kind="other")
    def price_quote() -> dict[str, Any]:
        state = trajdebug.current_run().state
        hours = {b: state[f"hours:{b}"] for b in ("B1", "B2")}
        quote = {"hours": hours, "labour": round(sum(hours.values()) * 61.0, 1)}
        state["quote"] = quote
        return quote

    with trajdebug.run("boiler-quote", path=path, metadata={"task": "quote service visit V-9"}) as run:
        for b in ("B1", "B2"):
            inspect_boiler(b)
            normalise_reading(b)
            estimate_hours(b)
        quote = price_quote()
        run.fail(f"labour {quote['labour']} is above the visit's cap of 450.0")
    [got] = load_runs(path)
    return got


MEETING_CALENDARS = {
    "Carla Weiss": (60, [("09:00", "12:00"), ("16:00", "17:00")]),
    "Bo Chen": (-300, [("08:00", "09:30"), ("12:00", "12:30")]),
    "Emma Jones": (0, [("10:00", "11:00"), ("15:00", "16:00")]),
    "Felix Braun": (60, [("08:00", "09:30"), ("13:00", "14:00")]),
    "Hugo Martin": (60, [("10:00", "12:30")]),
}
"""Each attendee's offset from UTC in minutes and local busy blocks (`recorded_meeting_run`)."""


def tz_applied(out: dict[str, Any], given: dict[str, Any]) -> bool | None:
    """The check a new user wrote on parse_calendar (nu62): with a non-zero offset in the calendar's header, its
    busy times in UTC differ from the local ones (None: no offset to apply)."""
    import re

    m = re.search(r"tz=([+-]\d\d:\d\d)", given["text"])
    if m is None or m.group(1) in ("+00:00", "-00:00"):
        return None
    local = [r.split()[0] for r in given["text"].splitlines()[1:]]
    return local != out["busy_utc"]


def recorded_meeting_run(path: Any) -> Run:
    """Record (with trajdebug's own recorder) a new user's meeting scheduler (nu62 agent B), shortened: a plain
    policy (kind llm) asks for each attendee's calendar in turn (``get_calendar(**action["args"])``: edges to it
    only inferred), each calendar is parsed to UTC, merged, a slot found, a room booked and saved to the state,
    invites sent from the state, and the replies confirmed.  The planted bug: parse_calendar reads only a
    positive ``tz=+HH:MM``, so Bo Chen's -05:00 is taken as UTC (his parse, the second, is the root) and he
    declines the slot; the run fails at confirm."""
    import json
    import re

    import trajdebug
    from trajdebug.sources.load import load_runs

    def hm(m: int) -> str:
        return f"{m // 60:02d}:{m % 60:02d}"

    def mins(t: str) -> int:
        return int(t[:2]) * 60 + int(t[3:5])

    @trajdebug.step(kind="input")
    def receive_request(request: dict[str, Any]) -> dict[str, Any]:
        return request

    @trajdebug.step(kind="llm")
    def policy(history: list[dict[str, Any]]) -> dict[str, Any]:
        request = json.loads(history[0]["content"])
        fetched = {json.loads(m["content"])["person"] for m in history[1:] if m["role"] == "tool"}
        todo = [p for p in request["attendees"] if p not in fetched]
        return {"tool": "get_calendar", "args": {"person": todo[0], "day": request["day"]}} if todo else {"tool": "done"}

    @trajdebug.step(kind="tool")
    def get_calendar(person: str, day: str) -> str:
        off, blocks = MEETING_CALENDARS[person]
        sign = "+" if off >= 0 else "-"
        return "\n".join([f"calendar {person} {day} tz={sign}{hm(abs(off))}", *(f"{a}-{b} busy" for a, b in blocks)])

    @trajdebug.step(kind="parse")
    def parse_calendar(text: str) -> dict[str, Any]:
        header, *rows = text.splitlines()
        m = re.search(r"tz=\+(\d\d):(\d\d)", header)  # the bug: a negative offset is read as none
        off = int(m.group(1)) * 60 + int(m.group(2)) if m else 0
        busy = [f"{hm(mins(r[:5]) - off)}-{hm(mins(r[6:11]) - off)}" for r in rows]
        return {"person": header.split(" 20")[0][len("calendar "):], "busy_utc": busy}

    @trajdebug.step(kind="other")
    def merge_busy(parsed: list[dict[str, Any]]) -> list[str]:
        spans = sorted((mins(s[:5]), mins(s[6:])) for p in parsed for s in p["busy_utc"])
        merged: list[list[int]] = []
        for a, b in spans:
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        return [f"{hm(a)}-{hm(b)}" for a, b in merged]

    @trajdebug.step(kind="other")
    def find_slot(busy: list[str], window: list[str], duration_min: int) -> dict[str, str]:
        t = mins(window[0])
        for span in [*busy, f"{window[1]}-{window[1]}"]:
            if mins(span[:5]) - t >= duration_min:
                break
            t = max(t, mins(span[6:]))
        return {"start_utc": hm(t), "end_utc": hm(t + duration_min)}

    @trajdebug.step(kind="tool")
    def book_room(slot: dict[str, str], size: int) -> dict[str, str]:
        return {"room": "Orion" if size > 4 else "Atlas", **slot, "booking": f"RM-{slot['start_utc'].replace(':', '')}"}

    @trajdebug.step(kind="state")
    def save_booking(booking: dict[str, str], attendees: list[str]) -> None:
        trajdebug.current_run().state["meeting"] = {**booking, "attendees": attendees}

    @trajdebug.step(kind="tool")
    def send_invites(day: str) -> dict[str, str]:
        meeting = trajdebug.current_run().state["meeting"]
        s, e = mins(meeting["start_utc"]), mins(meeting["end_utc"])
        replies = {}
        for person in meeting["attendees"]:
            off, blocks = MEETING_CALENDARS[person]
            clash = [(a, b) for a, b in blocks if mins(a) - off < e and s < mins(b) - off]
            replies[person] = f"declined: busy {hm(mins(clash[0][0]) - off)} UTC" if clash else "accepted"
        return replies

    @trajdebug.step(kind="output")
    def confirm(replies: dict[str, str]) -> str:
        declined = {p: r for p, r in replies.items() if r != "accepted"}
        if declined:
            person, why = next(iter(declined.items()))
            raise RuntimeError(f"{person} {why}; the meeting cannot go ahead at this slot")
        return "booked"

    req = {"topic": "Q1 roadmap review", "day": "2026-12-09", "attendees": list(MEETING_CALENDARS),
           "window": ["08:00", "18:00"], "duration_min": 60}
    try:
        with trajdebug.run("meeting-scheduler", task="schedule Q1 roadmap review", path=path):
            given = receive_request(req)
            history = [{"role": "user", "content": json.dumps(given)}]
            parsed = []
            while (action := policy(history))["tool"] != "done":
                history.append({"role": "assistant", "content": json.dumps(action)})
                cal = parse_calendar(get_calendar(**action["args"]))
                parsed.append(cal)
                history.append({"role": "tool", "content": json.dumps(cal)})
            slot = find_slot(merge_busy(parsed), given["window"], given["duration_min"])
            save_booking(book_room(slot, len(given["attendees"])), given["attendees"])
            confirm(send_invites(given["day"]))
    except RuntimeError:
        pass
    [got] = load_runs(path)
    return got


SHOP_TURNS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("dan", "I want a refund for A103, the laptop", ("prod", "refund"), "1.299,00"),
    ("eve", "Where is my order A100?", ("prod", "status"), "49.90"),
    ("eve", "And when does A100 arrive?", ("staging", "status"), "49.90"),
)
"""A support desk's turns: user, message, tags, the order's total as the shop writes it."""


def recorded_shop_store(path: Any) -> list[str]:
    """A store of support-desk turns as a Langfuse user records them: tags, a session and a user id per run,
    an LLM call with tokens (``gpt-4o-mini``), a tool with the order, and a parse that fails on the European
    total (``1.299,00``, dan's turn).  Returns the run ids in the order of `SHOP_TURNS`."""
    import trajdebug

    ids = []
    for user, text, tags, total in SHOP_TURNS:
        try:
            with trajdebug.run(
                "support-desk", store=str(path), task=text, tags=list(tags), session=f"s-{user}-1",
                metadata={"user_id": user, "channel": "chat"},
            ) as h:
                ids.append(h.run_id)
                with trajdebug.step("user_message", kind="input", input={"text": text}) as s:
                    s.output = {"text": text}
                with trajdebug.step("answer", kind="llm", input={"messages": [{"role": "user", "content": text}]}) as s:
                    s.usage(model="gpt-4o-mini", prompt_tokens=120, completion_tokens=30)
                    s.output = "Let me check the order."
                with trajdebug.step("lookup_order", kind="tool", input={"order_id": "A1" + text.split("A1")[1][:2]}) as s:
                    s.output = {"status": "delivered", "total": total}
                with trajdebug.step("parse_amount", kind="parse", input={"total": total}) as s:
                    if "," in total:
                        raise ValueError(f"cannot read the amount {total!r}")
                    s.output = {"amount": float(total)}
        except ValueError:
            pass
    return ids
