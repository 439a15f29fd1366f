"""Observatory night planner (otlp route): OpenInference spans around an instrumented openai client."""

from __future__ import annotations

import re
from typing import Any

import nkit
from nkit import otlp_span, set_out
from opentelemetry.trace import Status, StatusCode


NAME = "night-planner"
ROUTE = "otlp"
DOMAIN = "observatory telescope time allocation"
SHAPE = "queue tool; per-proposal loop: coordinates tool, visibility, instrument status, model slot choice, slot arithmetic, plan write; TCS submission"

NIGHT = (360, 1080)  # minutes after noon: 18:00 .. 06:00
RA = {"M31": 0.71, "M42": 5.58, "NGC 7000": 20.98, "M45": 3.79, "NGC 2237": 6.53, "IC 434": 5.68, "NGC 891": 2.38, "M33": 1.56,
      "NGC 281": 0.88, "M1": 5.58, "NGC 7293": 22.49, "M74": 1.61, "NGC 1499": 4.01}
# night -> proposals (id, target, exposure_s, instrument, priority); instruments offline that night
NIGHTS = {
    "2026-11-12": ([("P-11", "NGC 7000", 5400, "IMG", "A"), ("P-12", "M31", 7200, "HRS", "B"), ("P-13", "M42", 5400, "IMG", "A")], {"HRS"}),
    "2026-11-13": ([("P-21", "NGC 7293", 3600, "LRS", "B"), ("P-22", "M33", 5400, "IMG", "A"), ("P-23", "NGC 1499", 7200, "HRS", "A"),
                    ("P-24", "M1", 3600, "IMG", "B")], set()),
    "2026-11-14": ([("P-31", "NGC 281", 3600, "IMG", "A"), ("P-32", "IC 434", 7200, "LRS", "A")], set()),
    "2026-11-15": ([("P-41", "M74", 5400, "IMG", "B"), ("P-42", "M45", 3600, "LRS", "A")], set()),
    "2026-11-16": ([("P-51", "NGC 7000", 3600, "IMG", "A"), ("P-52", "NGC 891", 5400, "HRS", "A"), ("P-53", "NGC 2237", 3600, "IMG", "B")], {"LRS"}),
    "2026-11-17": ([("P-61", "M31", 5400, "LRS", "A"), ("P-62", "M1", 7200, "IMG", "A")], set()),
    "2026-11-18": ([("P-71", "NGC 7293", 3600, "IMG", "B"), ("P-72", "M33", 3600, "HRS", "A"), ("P-73", "M42", 5400, "LRS", "B")], set()),
}
INPUTS = {n: {"night": n, "site": "Roque 2.5 m"} for n in NIGHTS}
REFS = ["2026-11-15", "2026-11-16", "2026-11-17", "2026-11-18"]
FAULTS = [
    {"id": "tp-status", "kind": "stale_data", "input": "2026-11-12", "root": "instrument_status", "marker": "2026-11-12T16:05"},
    {"id": "tp-units", "kind": "unit_error", "input": "2026-11-13", "root": "plan_slot", "marker": "\"minutes\": 1.5"},
    {"id": "tp-start", "kind": "hallucinated_value", "input": "2026-11-14", "root": "ChatCompletion", "marker": "SCHEDULE 19:10"},
    {"id": "tp-ra", "kind": "format_drift", "input": "2026-11-12", "root": "target_coords", "marker": "83.70"},
    {"id": "tp-plan", "kind": "bad_memory_write", "input": "2026-11-13", "root": "record_slot", "marker": "\"instrument\": \"IMG\", \"minutes\": 120.0, \"proposal\": \"P-23\""},
]


def clock(m: int) -> str:
    return f"{(12 * 60 + m) // 60 % 24:02d}:{m % 60:02d}"


def minutes(text: str) -> int:
    h, m = (int(x) for x in text.split(":"))
    return (h * 60 + m - 12 * 60) % (24 * 60)


def true_window(target: str) -> tuple[int, int]:
    transit = round(((RA[target] - 3.0) % 24) * 60)
    transit = (transit - 12 * 60) % (24 * 60)
    return max(NIGHT[0], transit - 180), min(NIGHT[1], transit + 180)


def agent(tracer: Any, client: Any, model: str, inp: dict) -> None:
    night = inp["night"]
    with otlp_span(tracer, "night-planner", "AGENT", inp, **{"agent.name": "night-planner"}) as root:
        with otlp_span(tracer, "fetch_queue", "TOOL", {"night": night}, **{"tool.name": "fetch_queue"}) as s:
            queue = [{"proposal": p, "target": t, "exposure_s": e, "instrument": i, "priority": pr} for p, t, e, i, pr in NIGHTS[night][0]]
            set_out(s, queue)
        free_from = NIGHT[0]
        plan: dict[str, dict] = {}
        last_slot = None
        for prop in queue:
            with otlp_span(tracer, "plan_proposal", "CHAIN", prop):
                with otlp_span(tracer, "target_coords", "TOOL", {"target": prop["target"]}, **{"tool.name": "target_coords"}) as s:
                    ra_h = RA[prop["target"]]
                    ra = f"{int(ra_h):02d}h{round(ra_h % 1 * 60):02d}m"
                    if nkit.active("tp-ra") and prop["target"] == "M42":
                        ra = f"{ra_h * 15:.2f}"
                    coords = {"target": prop["target"], "ra": ra, "epoch": "J2000"}
                    set_out(s, coords)
                with otlp_span(tracer, "compute_visibility", "CHAIN", coords) as s:
                    m = re.fullmatch(r"(\d+)h(\d+)m", coords["ra"])
                    ra_hours = int(m.group(1)) + int(m.group(2)) / 60 if m else float(coords["ra"])
                    transit = (round(((ra_hours - 3.0) % 24) * 60) - 12 * 60) % (24 * 60)
                    lo, hi = max(NIGHT[0], transit - 180), min(NIGHT[1], transit + 180)
                    vis = {"target": prop["target"], "from": clock(lo), "to": clock(hi), "observable": hi - lo > 0}
                    set_out(s, vis)
                with otlp_span(tracer, "instrument_status", "TOOL", {"instrument": prop["instrument"]}, **{"tool.name": "instrument_status"}) as s:
                    offline = prop["instrument"] in NIGHTS[night][1]
                    status = {"instrument": prop["instrument"], "state": "OFFLINE" if offline else "ONLINE", "as_of": f"{night}T19:40"}
                    if nkit.active("tp-status") and offline:
                        status = {"instrument": prop["instrument"], "state": "ONLINE", "as_of": f"{night}T16:05"}
                    set_out(s, status)
                prompt = (f"Proposal {prop['proposal']} ({prop['priority']}) on {prop['target']}, exposure {prop['exposure_s']} s, "
                          f"instrument {status['instrument']} {status['state']}. Visible {vis['from']}-{vis['to']}"
                          f"{'' if vis['observable'] else ' (not in the night)'}. Telescope free from {clock(free_from)}.")
                reply = client.chat.completions.create(model=model, messages=[
                    {"role": "system", "content": "You schedule the night. Answer SCHEDULE HH:MM or SKIP."},
                    {"role": "user", "content": prompt},
                ])
                answer = reply.choices[0].message.content
                if answer.startswith("SKIP"):
                    continue
                with otlp_span(tracer, "plan_slot", "CHAIN", {"answer": answer, "exposure_s": prop["exposure_s"]}) as s:
                    start = minutes(answer.split()[1])
                    mins = prop["exposure_s"] / 3600 if nkit.active("tp-units") and prop["proposal"] == "P-22" else prop["exposure_s"] / 60
                    slot = {"proposal": prop["proposal"], "start": clock(start), "end": clock(start + round(mins)), "minutes": round(mins, 1)}
                    set_out(s, slot)
                with otlp_span(tracer, "record_slot", "CHAIN", slot) as s:
                    entry = {**slot, "instrument": prop["instrument"]}
                    if nkit.active("tp-plan") and last_slot is not None and prop["proposal"] == "P-23":
                        entry["instrument"] = last_slot["instrument"]
                    plan[prop["proposal"]] = entry
                    last_slot = entry
                    set_out(s, entry)
                free_from = start + round(mins)
        with otlp_span(tracer, "submit_night_plan", "TOOL", {"night": night, "plan": plan}, **{"tool.name": "submit_night_plan"}) as s:
            for p, t, e, i, pr in NIGHTS[night][0]:
                slot = plan.get(p)
                if slot is None:
                    if pr == "A" and i not in NIGHTS[night][1]:
                        raise RuntimeError(f"TCS rejected night plan {night}: priority A programme {p} is observable ({clock(true_window(t)[0])}-{clock(true_window(t)[1])}) but not scheduled")
                    continue
                if i in NIGHTS[night][1]:
                    raise RuntimeError(f"TCS rejected night plan {night}: {i} has been offline since 19:40, {p} cannot be queued on it")
                if slot["instrument"] != i:
                    raise RuntimeError(f"TCS rejected night plan {night}: {p} is approved for {i}, plan lists {slot['instrument']}")
                lo, hi = true_window(t)
                a, b = minutes(slot["start"]), minutes(slot["end"])
                if b - a < e / 60:
                    raise RuntimeError(f"TCS rejected night plan {night}: {p} slot {slot['start']}-{slot['end']} is shorter than its {e} s exposure")
                if a < lo or b > hi:
                    raise RuntimeError(f"TCS rejected night plan {night}: {p} slot {slot['start']}-{slot['end']} leaves {t}'s window above 30 deg ({clock(lo)}-{clock(hi)})")
            set_out(s, {"night": night, "queued": sorted(plan)})
        set_out(root, f"{len(plan)} slots queued")
        root.set_status(Status(StatusCode.OK))


def policy(request) -> str:
    text = request.body["messages"][-1]["content"]
    if "OFFLINE" in text or "not in the night" in text:
        return "SKIP"
    exp = int(re.search(r"exposure (\d+) s", text).group(1)) // 60
    lo, hi = (minutes(x) for x in re.search(r"Visible (\d\d:\d\d)-(\d\d:\d\d)", text).groups())
    free = minutes(re.search(r"free from (\d\d:\d\d)", text).group(1))
    start = max(lo, free)
    if start + exp > hi:
        return "SKIP"
    if nkit.active("tp-start") and "P-32" in text:
        return "SCHEDULE 19:10"
    return f"SCHEDULE {clock(start)}"


def record(inp: dict, path) -> None:
    from openai import OpenAI

    tracer, exporter = nkit.otel()
    exporter.clear()
    nkit.SERVER.use(policy)
    client = OpenAI(base_url=nkit.SERVER.base_url, api_key="not-needed", max_retries=0)
    try:
        agent(tracer, client, nkit.SERVER.model, inp)
    except RuntimeError:
        pass
    nkit.write_otlp(list(exporter.get_finished_spans()), path)
