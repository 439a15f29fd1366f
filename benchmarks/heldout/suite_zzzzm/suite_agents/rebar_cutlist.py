"""Rebar fabrication shop: bar bending schedule to cut list and release (OpenTelemetry spans, OpenInference attributes, OTLP JSON).

The shop agent fetches the detailer's bar bending schedule, parses its rows, retrieves the shop notes
for the job, and asks the model to plan the cut per bar size (stock length and bending machine).  For
every size in the plan it retrieves the stock, runs the cutting optimiser and queues the bends, then
weighs the order, has the model write the delivery note, and releases the cut list to the shop floor,
whose release check compares it with the schedule.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from openai import OpenAI

from suite_agents._common import Otlp, dumps, last_user, system_of


NAME = "rebar-cutlist"
ROUTE = "otlp"
DOMAIN = "reinforcing-steel fabrication: bar bending schedules to cut lists"
SHAPE = "schedule tool -> parse chain -> shop-notes retriever -> model cut plan -> plan parse -> loop over bar sizes (stock retriever, cutting optimiser, bend queue) -> weight chain -> model delivery note -> shop release"

SWITCH: str | None = None


def switched(name: str) -> bool:
    """Whether the case ``name`` is on (the only place SWITCH is read)."""
    return SWITCH == name


def _kg(d: int, n: int, length_mm: int) -> float:
    return n * length_mm / 1000 * 0.00617 * d * d


# schedule -> header, rows (mark, size, members x bars, length mm, shape)
SCHEDULES = {
    "2231-B": {"member": "pile cap PC-4", "job": "2231", "main": "H20, H25", "rows": [
        ("01", "H25", "1x12", 4250, "21"), ("02", "H25", "1x12", 4250, "21"), ("03", "H20", "1x16", 3900, "00"),
        ("04", "H20", "1x16", 3900, "00"), ("05", "H10", "1x40", 1450, "51"), ("06", "H10", "1x40", 1380, "51"),
        ("07", "H16", "1x8", 2100, "11")]},
    "2240-A": {"member": "transfer beam TB-2", "job": "2240", "main": "H25, H32", "rows": [
        ("01", "H32", "1x6", 9800, "00"), ("02", "H32", "1x6", 9800, "00"), ("03", "H25", "1x4", 7200, "21"),
        ("04", "H12", "1x48", 2650, "51"), ("05", "H12", "1x24", 1900, "51"), ("06", "H16", "1x10", 3100, "00"),
        ("07", "H16", "1x10", 3100, "00"), ("08", "H25", "1x4", 7200, "21"), ("09", "H12", "1x12", 1100, "26"),
        ("10", "H16", "1x6", 2800, "11"), ("11", "H16", "1x6", 2800, "11"), ("12", "H12", "1x12", 1150, "26"),
        ("13", "H25", "1x2", 5400, "00"), ("14", "H25", "1x2", 5400, "00")]},
    "2252-C": {"member": "columns C1-C6 level 3", "job": "2252", "main": "H20", "rows": [
        ("01", "H20", "6x8", 3650, "00"), ("02", "H10", "6x22", 1200, "51"), ("03", "H10", "6x4", 950, "26"),
        ("04", "H16", "6x4", 1800, "11")]},
    "2260-A": {"member": "raft edge thickening", "job": "2260", "main": "H16, H20", "rows": [
        ("01", "H20", "1x30", 5800, "00"), ("02", "H20", "1x30", 5800, "00"), ("03", "H16", "1x44", 2300, "21"),
        ("04", "H12", "1x60", 1600, "51"), ("05", "H12", "1x60", 1550, "51")]},
    "2273-B": {"member": "pile cap PC-9", "job": "2273", "main": "H20, H25", "rows": [
        ("01", "H25", "1x14", 4600, "21"), ("02", "H20", "1x18", 7400, "00"), ("03", "H20", "1x18", 7400, "00"),
        ("04", "H10", "1x36", 1500, "51"), ("05", "H16", "1x10", 2200, "11")]},
}
SHOP_NOTES = [
    {"id": "SN-2231", "job": "2231", "member": "pile cap", "text": "Job 2231: all sizes from 12 m stock; links on BM-1."},
    {"id": "SN-2207", "job": "2207", "member": "pile cap", "text": "Job 2207 pile caps: cut H20 from 6 m stock only (site crane limit)."},
    {"id": "SN-2240", "job": "2240", "member": "transfer beam", "text": "Job 2240: H32 from 12 m stock, cut on the shear line."},
    {"id": "SN-2252", "job": "2252", "member": "columns", "text": "Job 2252: column starters tied in pairs."},
    {"id": "SN-2260", "job": "2260", "member": "raft", "text": "Job 2260: deliver in two loads."},
    {"id": "SN-2273", "job": "2273", "member": "pile cap", "text": "Job 2273: all sizes from 12 m stock."},
]
STOCK = {d: [{"length_mm": 12000, "count": 400, "heat": f"HT-{d}-88"}, {"length_mm": 6000, "count": 200, "heat": f"HT-{d}-61"}]
         for d in ("H10", "H12", "H16", "H20", "H25", "H32")}
MACHINES = {"H10": "BM-1", "H12": "BM-1", "H16": "BM-2", "H20": "BM-2", "H25": "BM-3", "H32": "BM-3"}
PREVIEW_CHARS = 360

INPUTS = [
    {"key": "pc4", "schedule": "2231-B", "task": "cut list for schedule 2231-B, pile cap PC-4"},
    {"key": "tb2", "schedule": "2240-A", "task": "cut list for schedule 2240-A, transfer beam TB-2"},
    {"key": "cols", "schedule": "2252-C", "task": "cut list for schedule 2252-C, columns C1-C6 level 3"},
    {"key": "raft", "schedule": "2260-A", "task": "cut list for schedule 2260-A, raft edge thickening"},
    {"key": "pc9", "schedule": "2273-B", "task": "cut list for schedule 2273-B, pile cap PC-9"},
]

CASES = [
    {
        "case": "zzzzm_rebar_links_left_out", "input": "pc4", "switch": "plan_main_bars", "fault_kind": "plan_error",
        "root": {"name": "ChatCompletion", "occurrence": 1, "kind": "llm"},
        "failure": {"name": "release_to_shop", "occurrence": 1},
        "description": "The model plans the cut for the schedule header's main bars (H20, H25) only, so the H10 links and the H16 bars (marks 05-07) get no cutting pattern and the shop release refuses the cut list.",
    },
    {
        "case": "zzzzm_rebar_preview_text", "input": "tb2", "switch": "preview", "fault_kind": "truncated_result",
        "root": {"name": "fetch_bbs", "occurrence": 1, "kind": "tool"},
        "failure": {"name": "release_to_shop", "occurrence": 1},
        "description": "The schedule tool returns the detailer portal's preview text, cut after mark 10, so marks 11-14 never reach the cut list and the shop release finds them missing.",
    },
    {
        "case": "zzzzm_rebar_members_times_bars", "input": "cols", "switch": "first_factor", "fault_kind": "lossy_parsing",
        "root": {"name": "parse_bbs", "occurrence": 1, "kind": "other"},
        "failure": {"name": "release_to_shop", "occurrence": 1},
        "description": "The schedule parser reads the 'members x bars' column '6x8' as 6 bars instead of 48, so the cut list weighs far less than the schedule's total and the shop release refuses it.",
    },
    {
        "case": "zzzzm_rebar_weight_in_mm", "input": "raft", "switch": "length_mm_as_m", "fault_kind": "unit_error",
        "root": {"name": "weight_check", "occurrence": 1, "kind": "other"},
        "failure": {"name": "release_to_shop", "occurrence": 1},
        "description": "The weight step multiplies the unit mass in kg/m by lengths still in millimetres, so the order is weighed 1000 times too heavy and the shop release refuses a load over the delivery limit.",
    },
    {
        "case": "zzzzm_rebar_other_job_notes", "input": "pc9", "switch": "notes_by_member", "fault_kind": "context_pollution",
        "root": {"name": "shop_notes", "occurrence": 1, "kind": "retrieval"},
        "failure": {"name": "cut_optimizer", "occurrence": 3},
        "description": "The shop-notes search matches on the member type and brings job 2207's pile-cap note ('cut H20 from 6 m stock only') into the plan's context; the model plans H20 on 6 m stock and the optimiser cannot cut the 7,400 mm bars.",
    },
]


class ReleaseRefused(Exception):
    pass


_otlp: Otlp | None = None
_client: OpenAI | None = None
_model = "fake-model"


def setup(env: dict) -> None:
    global _otlp, _client, _model
    _otlp = Otlp(NAME)
    _otlp.instrument()
    _client = OpenAI(base_url=env["server"].base_url, api_key="not-needed", max_retries=0)
    _model = env["server"].model


def teardown(env: dict) -> None:
    _otlp.uninstrument()


def schedule_text(sid: str) -> str:
    s = SCHEDULES[sid]
    total = sum(_kg(int(r[1][1:]), _count(r[2]), r[3]) for r in s["rows"])
    head = (f"Schedule {sid} | Member: {s['member']} | Job {s['job']} | Main bars: {s['main']} | "
            f"Bar marks: {len(s['rows'])} | Total weight: {total:,.0f} kg\n")
    return head + "mark,type,members_x_bars,length_mm,shape\n" + "".join(f"{m},{t},{n},{length},{sh}\n" for m, t, n, length, sh in s["rows"])


def _count(field: str) -> int:
    a, b = field.split("x")
    return int(a) * int(b)


# -- tools ----------------------------------------------------------------------------------------

def fetch_bbs(schedule: str) -> str:
    text = schedule_text(schedule)
    if switched("preview"):
        cut = text[:PREVIEW_CHARS]
        return cut[:cut.rfind("\n") + 1]
    return text


def stock_docs(size: str) -> list[dict]:
    return [{"id": f"STK-{size}-{s['length_mm'] // 1000}", "content": f"{size} {s['length_mm'] // 1000} m stock: {s['count']} bars, heat {s['heat']}",
             "score": 1.0, "metadata": {"size": size, **s}} for s in STOCK[size]]


def cut_optimizer(size: str, pieces: list[dict], stock_mm: int) -> dict:
    cuts = sorted((p["length_mm"] for p in pieces for _ in range(p["qty"])), reverse=True)
    if cuts and cuts[0] > stock_mm:
        raise ValueError(f"{size}: piece of {cuts[0]} mm is longer than the {stock_mm} mm stock bar")
    bars: list[int] = []
    for c in cuts:  # first fit decreasing
        for i, left in enumerate(bars):
            if left >= c:
                bars[i] -= c
                break
        else:
            bars.append(stock_mm - c)
    waste = sum(bars) / (len(bars) * stock_mm) if bars else 0.0
    return {"size": size, "stock_mm": stock_mm, "bars": len(bars), "waste_pct": round(100 * waste, 1),
            "marks": sorted({p["mark"] for p in pieces})}


def bend_queue(size: str, marks: list[str], machine: str) -> dict:
    return {"size": size, "machine": machine, "queued": marks, "slot": f"{machine}-Q{len(marks):02d}"}


def release_to_shop(schedule: str, cut_lists: list[dict], weight_kg: float, note: str) -> dict:
    s = SCHEDULES[schedule]
    covered = {m for c in cut_lists for m in c["marks"]}
    missing = [m for m, *_ in s["rows"] if m not in covered]
    if missing:
        sizes = sorted({t for m, t, *_ in s["rows"] if m in missing})
        raise ReleaseRefused(f"schedule {schedule} lists {len(s['rows'])} bar marks; marks {', '.join(missing)} ({', '.join(sizes)}) have no cutting pattern")
    if weight_kg > 24000:
        raise ReleaseRefused(f"order weight {weight_kg:,.0f} kg is over the 24,000 kg delivery limit")
    total = sum(_kg(int(t[1:]), _count(n), length) for _, t, n, length, _ in s["rows"])
    if abs(weight_kg - total) > 0.01 * total:
        raise ReleaseRefused(f"cut list weighs {weight_kg:,.0f} kg; schedule {schedule} totals {total:,.0f} kg")
    return {"release": f"REL-{schedule}", "bars": sum(c["bars"] for c in cut_lists), "weight_kg": round(weight_kg)}


# -- the agent ------------------------------------------------------------------------------------

PLAN_SYSTEM = ("You plan a rebar shop's cutting. From the schedule and the shop notes, answer JSON {\"groups\": "
               "[{\"size\", \"stock_mm\", \"machine\"}]}: one group per bar size to cut, its stock length and bending machine "
               "(BM-1 H10-H12, BM-2 H16-H20, BM-3 H25-H32).")
NOTE_SYSTEM = "Write the delivery note for the cut list in two sentences."


def _tool(name: str, fn, **kwargs):
    with _otlp.span(name, "TOOL", input=kwargs, tool__name=name) as sp:
        return sp.output(fn(**kwargs))


def _chat(messages: list[dict]) -> str:
    reply = _client.chat.completions.create(model=_model, messages=messages)
    return reply.choices[0].message.content


def record(inp: dict, dest: Path, env: dict) -> None:
    sid = inp["schedule"]
    try:
        with _otlp.span(NAME, "AGENT", input=f"Cut list for schedule {sid}", metadata=json.dumps({"task": inp["task"], "schedule": sid})) as top:
            text = _tool("fetch_bbs", fetch_bbs, schedule=sid)
            with _otlp.span("parse_bbs", "CHAIN", input=text) as sp:
                header = dict(re.findall(r"(\w[\w ]*): ([^|\n]+?)\s*(?:\||\n)", text.splitlines()[0] + "\n"))
                rows = []
                for line in text.splitlines()[2:]:
                    mark, size, n, length, shape = line.split(",")
                    qty = int(n.split("x")[0]) if switched("first_factor") else _count(n)
                    rows.append({"mark": mark, "size": size, "qty": qty, "length_mm": int(length), "shape": shape})
                sp.output({"header": header, "rows": rows})
            member = SCHEDULES[sid]["member"]
            job = SCHEDULES[sid]["job"]
            with _otlp.span("shop_notes", "RETRIEVER", input={"job": job, "member": member}) as sp:
                kind = member.split()[0] + (" " + member.split()[1] if member.split()[0] in ("pile", "transfer") else "")
                if switched("notes_by_member"):
                    notes = [n for n in SHOP_NOTES if n["member"] == kind]
                else:
                    notes = [n for n in SHOP_NOTES if n["job"] == job]
                docs = [{"id": n["id"], "content": n["text"], "score": 1.0, "metadata": {"job": n["job"]}} for n in notes]
                sp.documents(docs)
            plan_text = _chat([{"role": "system", "content": PLAN_SYSTEM},
                               {"role": "user", "content": dumps({"schedule": text, "shop_notes": [d["content"] for d in docs]})}])
            with _otlp.span("read_plan", "CHAIN", input=plan_text) as sp:
                groups = sp.output(json.loads(plan_text)["groups"])
            cut_lists = []
            for g in groups:
                size = g["size"]
                with _otlp.span("stock_lookup", "RETRIEVER", input={"size": size}) as sp:
                    stock = stock_docs(size)
                    sp.documents(stock)
                pieces = [{"mark": r["mark"], "length_mm": r["length_mm"], "qty": r["qty"]} for r in rows if r["size"] == size]
                cut = _tool("cut_optimizer", cut_optimizer, size=size, pieces=pieces, stock_mm=g["stock_mm"])
                _tool("bend_queue", bend_queue, size=size, marks=[p["mark"] for p in pieces], machine=g["machine"])
                cut_lists.append(cut)
            with _otlp.span("weight_check", "CHAIN", input={"rows": rows}) as sp:
                kg = 0.0
                for r in rows:
                    d = int(r["size"][1:])
                    length = r["length_mm"] if switched("length_mm_as_m") else r["length_mm"] / 1000
                    kg += r["qty"] * length * 0.00617 * d * d
                sp.output({"weight_kg": round(kg, 1)})
            note = _chat([{"role": "system", "content": NOTE_SYSTEM},
                          {"role": "user", "content": dumps({"schedule": sid, "member": member, "cut_lists": cut_lists, "weight_kg": round(kg, 1)})}])
            rel = _tool("release_to_shop", release_to_shop, schedule=sid, cut_lists=cut_lists, weight_kg=round(kg, 1), note=note)
            top.output(rel)
    except (ReleaseRefused, ValueError):
        pass
    dest.write_text(json.dumps(_otlp.document()))


# -- the model ------------------------------------------------------------------------------------

def brain(request) -> str:
    messages = request.body["messages"]
    system = system_of(messages)
    data = json.loads(last_user(messages))
    if system == PLAN_SYSTEM:
        text = data["schedule"]
        if switched("plan_main_bars"):
            sizes = [s.strip() for s in re.search(r"Main bars: ([^|]+)", text).group(1).split(",")]
        else:
            sizes = sorted({line.split(",")[1] for line in text.splitlines()[2:] if line}, key=lambda s: int(s[1:]))
        short = {}
        for n in data["shop_notes"]:
            m = re.search(r"cut (H\d+) from 6 m stock only", n)
            if m:
                short[m.group(1)] = 6000
        return json.dumps({"groups": [{"size": s, "stock_mm": short.get(s, 12000), "machine": MACHINES[s]} for s in sizes]})
    if system == NOTE_SYSTEM:
        bars = sum(c["bars"] for c in data["cut_lists"])
        return (f"Schedule {data['schedule']} ({data['member']}): {bars} stock bars cut, {data['weight_kg']:,.0f} kg. "
                "Bundles tagged by bar mark, delivered on one load.")
    return "I only plan rebar cutting."
