"""Millinery (otlp route): turn a bespoke hat order into a workroom ticket (blocks, materials, trims, slots)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from . import kit
from .common import Agent, Case, last_user_json
from .otel import Spans, export, instrumented_client, provider

BLOCKS = {
    "cloche": [{"block": f"CL-{s}", "size_cm": s} for s in (53, 54, 55, 56, 57, 58, 59, 60)],
    "trilby": [{"block": f"TR-{s}", "size_cm": s} for s in (54, 55, 56, 57, 58, 59, 60, 61)],
    "fascinator base": [{"block": f"FB-{s}", "size_cm": s} for s in (10, 12, 14)],
    "boater": [{"block": f"BO-{s}", "size_cm": s} for s in (55, 56, 57, 58, 59)],
}
RIBBONS = [
    {"code": "GG-25-BLK", "ribbon": "grosgrain", "width_mm": 25, "colour": "black"},
    {"code": "GG-25-NVY", "ribbon": "grosgrain", "width_mm": 25, "colour": "navy"},
    {"code": "PT-16-IVR", "ribbon": "petersham", "width_mm": 16, "colour": "ivory"},
    {"code": "GG-38-NVY", "ribbon": "grosgrain", "width_mm": 38, "colour": "navy"},
    {"code": "GG-38-BRG", "ribbon": "grosgrain", "width_mm": 38, "colour": "burgundy"},
    {"code": "SA-10-GRN", "ribbon": "satin", "width_mm": 10, "colour": "green"},
    {"code": "PT-25-TAN", "ribbon": "petersham", "width_mm": 25, "colour": "tan"},
]
LAST_ORDER_NOTES = {"order": "MH-2207", "client": "Mrs Aldous", "trim": {"colour": "burgundy", "width_mm": 38},
                    "note": "client loved the burgundy band, use it again"}
STIFFENED = {"sinamay", "straw braid"}


class TicketRejected(Exception):
    """The workroom system's error answer."""


def _inches(text: str) -> float:
    m = re.match(r"(\d+)(?: (\d+)/(\d+))?", text)
    whole = float(m.group(1))
    return whole + (float(m.group(2)) / float(m.group(3)) if m.group(2) else 0.0)


def true_head_cm(order: dict) -> float:
    return round(_inches(order["head"]) * 2.54, 1)


def policy(request: Any) -> str:
    p = last_user_json(request.body)
    if p.get("task") == "plan":
        steps = ["steam", "block", "dry", "trim", "line"]
        if p["material"] in STIFFENED and not kit.active("mil.plan_error"):
            steps.insert(1, "stiffen")
        return json.dumps({"steps": steps, "block": p["blocks"][0]["block"] if p["blocks"] else None})
    if p.get("task") == "trim":
        want = p["order_trim"]
        colour = want["colour"]
        for n in p.get("notes", []):
            if n.get("trim"):
                colour = n["trim"]["colour"]
        pool = [r for r in p["stock"] if r["colour"] == colour and r["ribbon"] == want["ribbon"]]
        pool.sort(key=lambda r: abs(r["width_mm"] - want["width_mm"]))
        return json.dumps({"code": pool[0]["code"], "width_mm": pool[0]["width_mm"], "colour": pool[0]["colour"]})
    return "{}"


def record(order: dict, out: Path, base_url: str) -> None:
    prov, exp = provider("millinery-workroom")
    exp.clear()
    client = instrumented_client(base_url, prov)
    sp = Spans(prov, "millinery")

    def ask(system: str, payload: dict) -> str:
        r = client.chat.completions.create(model="gpt-4o-mini", temperature=0, messages=[
            {"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}])
        return r.choices[0].message.content or ""

    memory: dict[str, Any] = {}
    try:
        with sp.span("millinery-order", "AGENT", input=order, **{"agent.name": "millinery-workroom"}) as top:
            with sp.span("intake_order", "CHAIN", input=order) as s:
                o = {k: (v.strip().lower() if isinstance(v, str) and k not in ("head", "ref") else v) for k, v in order.items()}
                s["output"] = o
            with sp.span("parse_measurements", "CHAIN", input={"head": o["head"]}) as s:
                inches = _inches(o["head"])
                head_cm = round(inches, 1) if kit.active("mil.unit_error") else round(inches * 2.54, 1)
                s["output"] = {"head_cm": head_cm}
            with sp.span("retrieve_blocks", "RETRIEVER", input={"style": o["style"], "head_cm": head_cm}) as s:
                pool = sorted(BLOCKS[o["style"]], key=lambda b: (abs(b["size_cm"] - head_cm), b["size_cm"]))
                blocks = pool[:3] if o["style"] != "fascinator base" else pool[:1]
                s["output"] = blocks
            plan = json.loads(ask("Plan the workroom steps for this hat and pick the block. Answer JSON.",
                                  {"task": "plan", "style": o["style"], "material": o["material"], "blocks": blocks}))
            for item in (o["material"], "ribbon", "lining"):
                with sp.span("check_material_stock", "TOOL", input={"item": item}, **{"tool.name":
                                                                                     "check_material_stock"}) as s:
                    s["output"] = {"item": item, "available": True}
            slots = []
            for i, step in enumerate(plan["steps"]):
                with sp.span("book_workroom_slot", "TOOL", input={"step": step, "day": o["due"]},
                             **{"tool.name": "book_workroom_slot"}) as s:
                    s["output"] = {"step": step, "bench": "B2" if step in ("steam", "block") else "B4",
                                   "slot": f"{8 + i}:00"}
                    slots.append(s["output"])
            with sp.span("trim_designer", "AGENT", input={"trim": o["trim"]}, **{"agent.name": "trim-designer"}) as sub:
                with sp.span("gather_trim_context", "CHAIN", input={"order": o["ref"]}) as s:
                    ctx: dict[str, Any] = {"order_trim": o["trim"], "notes": []}
                    if kit.active("mil.context_pollution"):
                        ctx["notes"].append(LAST_ORDER_NOTES)
                    s["output"] = ctx
                with sp.span("fetch_trim_stock", "TOOL", input={"ribbon": o["trim"]["ribbon"]},
                             **{"tool.name": "fetch_trim_stock"}) as s:
                    stock = [r for r in RIBBONS if r["ribbon"] == o["trim"]["ribbon"]]
                    if kit.active("mil.truncated_result"):
                        stock = stock[:2]
                    s["output"] = stock
                trim = json.loads(ask("Choose the ribbon for the trim from stock. Answer JSON.",
                                      {"task": "trim", **ctx, "stock": stock}))
                with sp.span("compute_trim_length", "CHAIN", input={"head_cm": head_cm, "trim": trim}) as s:
                    trim["length_cm"] = round(head_cm + 6.0, 1)
                    s["output"] = trim
                sub["output"] = trim
            with sp.span("build_ticket", "CHAIN", input={"plan": plan, "trim": trim}) as s:
                ticket = {"order": o["ref"], "style": o["style"], "material": o["material"], "block": plan["block"],
                          "blocks": blocks, "steps": plan["steps"], "slots": slots, "trim": trim, "head_cm": head_cm}
                s["output"] = ticket
            with sp.span("save_order_memory", "CHAIN", input={"order": o["ref"]}) as s:
                chosen = ticket["blocks"][-1] if kit.active("mil.bad_memory_write") else \
                    next(b for b in ticket["blocks"] if b["block"] == ticket["block"])
                memory["ticket"] = {**{k: ticket[k] for k in ("order", "style", "material", "steps", "trim")},
                                    "block": chosen["block"], "block_cm": chosen["size_cm"]}
                s["output"] = memory["ticket"]
            with sp.span("submit_workroom_ticket", "TOOL", input=memory["ticket"],
                         **{"tool.name": "submit_workroom_ticket"}) as s:
                s["output"] = _submit(order, memory["ticket"])
            top["output"] = s["output"]
    except TicketRejected:
        pass
    finally:
        client.close()
    export(exp, out)


def _submit(order: dict, t: dict) -> dict:
    head = true_head_cm(order)
    errors = []
    if order["style"] != "fascinator base" and abs(t["block_cm"] - head) > 0.8:
        errors.append(f"block {t['block']} ({t['block_cm']} cm) does not fit head {head} cm ({order['head']})")
    if t["material"] in STIFFENED and ("stiffen" not in t["steps"] or t["steps"].index("stiffen") >
                                       t["steps"].index("block")):
        errors.append(f"{t['material']} requires a stiffening step before blocking")
    want = order["trim"]
    if t["trim"]["colour"] != want["colour"]:
        errors.append(f"trim colour {t['trim']['colour']} does not match the ordered {want['colour']}")
    if t["trim"]["width_mm"] != want["width_mm"]:
        errors.append(f"trim width {t['trim']['width_mm']} mm differs from the {want['width_mm']} mm ordered")
    if errors:
        exc = TicketRejected("HTTP 422 Unprocessable Entity: " + json.dumps({"order": t["order"], "errors": errors}))
        raise exc
    return {"ticket": f"WR-{t['order'][3:]}", "status": "queued"}


def _o(ref: str, style: str, material: str, head: str, due: str, ribbon: str, width: int, colour: str) -> dict:
    return {"ref": ref, "style": style, "material": material, "head": head, "due": due,
            "trim": {"ribbon": ribbon, "width_mm": width, "colour": colour}}


INPUTS = {
    "A": _o("MH-2231", "cloche", "fur felt", "22 1/4", "2026-06-03", "grosgrain", 38, "navy"),
    "B": _o("MH-2240", "fascinator base", "sinamay", "21 3/4", "2026-06-05", "grosgrain", 38, "navy"),
    "C": _o("MH-2244", "trilby", "wool felt", "23", "2026-06-08", "petersham", 25, "tan"),
    "D": _o("MH-2251", "boater", "straw braid", "22 1/2", "2026-06-10", "grosgrain", 25, "black"),
    "E": _o("MH-2257", "cloche", "wool felt", "21 1/2", "2026-06-12", "satin", 10, "green"),
    "F": _o("MH-2263", "fascinator base", "sinamay", "22", "2026-06-15", "petersham", 16, "ivory"),
}

AGENT = Agent(
    name="millinery", module="millinery.py", route="otlp", domain="millinery (hat making)",
    shape="OTel/OpenInference spans: intake -> measurement parse -> block retriever -> LLM plan (instrumented "
          "OpenAI) -> material stock loop -> workroom slot loop -> trim designer sub-agent (context, stock tool, "
          "LLM, length) -> ticket -> memory -> submit ticket",
    inputs=INPUTS, refs=("C", "D", "E", "F"), policy=policy, record=record,
    cases=(
        Case("zze_mil_01", "mil.unit_error", "unit_error", "A", ("parse_measurements", 1, "other"),
             ("submit_workroom_ticket", 1), "The head size in inches is taken as centimetres."),
        Case("zze_mil_02", "mil.plan_error", "plan_error", "B", ("ChatCompletion", 1, "llm"),
             ("submit_workroom_ticket", 1), "The workroom plan for a sinamay base leaves out the stiffening step."),
        Case("zze_mil_03", "mil.bad_memory_write", "bad_memory_write", "A", ("save_order_memory", 1, "other"),
             ("submit_workroom_ticket", 1), "The saved ticket records the last candidate block, not the chosen one."),
        Case("zze_mil_04", "mil.truncated_result", "truncated_result", "A", ("fetch_trim_stock", 1, "tool"),
             ("submit_workroom_ticket", 1), "The trim stock list comes back cut to its first two ribbons."),
        Case("zze_mil_05", "mil.context_pollution", "context_pollution", "B", ("gather_trim_context", 1, "other"),
             ("submit_workroom_ticket", 1), "The trim designer's context carries the previous client's trim notes."),
    ),
)
