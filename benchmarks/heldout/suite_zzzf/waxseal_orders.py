"""Wax-seal engraver: a reorder desk that matches a customer's earlier seal, lays out the design, briefs the
engraver with a model, orders the brass blank and approves the proof.

Route: OpenInference (openai client instrumented) + the agent's own OpenTelemetry spans, exported as OTLP JSON.
"""

from __future__ import annotations

import json
import re

import suite_common as sc

RUN_NAME = "waxseal-reorder-desk"
ROUTE = "otlp"
DOMAIN = "wax-seal engraver's orders"
SHAPE = "OTLP spans: model extraction -> parser -> archive retriever -> per-element render tool loop -> ring layout -> brief context -> model engraver brief -> blank order tool -> proof approval tool -> model letter (11-14 steps)"
ACTIVE = None

INPUTS = [
    {"order": "WO-71", "customer": "C-Hale", "email": "Please cut a new seal to match my earlier seal (ref WS-2019). Monogram EH, motto 'Fortis et Fidelis', handle in rosewood, diameter 1 in."},
    {"order": "WO-72", "customer": "C-Marsh", "email": "A seal matching ref WS-2231: monogram JM, motto 'Semper Paratus', ebony handle, diameter 30 mm."},
    {"order": "WO-73", "customer": "C-Quill", "email": "Reorder of ref WS-1874 please: monogram AQ, motto 'Lux in Tenebris Lucet', boxwood handle, diameter 1.25 in."},
    {"order": "WO-74", "customer": "C-Haleby", "email": "New seal like ref WS-2020: monogram RH, motto 'Nil Desperandum', walnut handle, diameter 25 mm."},
    {"order": "WO-75", "customer": "C-Orr", "email": "Matching ref WS-2102: monogram TO, motto 'Per Ardua ad Astra', olive wood handle, diameter 35 mm."},
]
ARCHIVE = [
    {"ref": "WS-2019", "customer": "C-Hale", "border": "rope", "depth_mm": 1.2, "letters": "roman caps"},
    {"ref": "WS-2020", "customer": "C-Haleby", "border": "beaded", "depth_mm": 1.0, "letters": "uncial"},
    {"ref": "WS-2231", "customer": "C-Marsh", "border": "plain", "depth_mm": 1.1, "letters": "roman caps"},
    {"ref": "WS-1874", "customer": "C-Quill", "border": "laurel", "depth_mm": 1.4, "letters": "black letter"},
    {"ref": "WS-2102", "customer": "C-Orr", "border": "rope", "depth_mm": 1.3, "letters": "roman caps"},
] + [{"ref": f"WS-{1500 + i}", "customer": f"C-{i:03d}", "border": "plain", "depth_mm": 1.0, "letters": "roman caps",
      "notes": "Die retired; impression sample kept in drawer " + str(i % 40) + ". " * 40} for i in range(400)]
BLANKS_MM = [20, 25, 28, 30, 32, 35, 38, 40]
CONTEXT_LIMIT_CHARS = 24000

CASES = [
    {"id": "zzzf_waxseal_01", "input": 0, "switch": "inch_as_cm", "fault_kind": "unit_error",
     "root": ("parse_design", 1), "failure": "order_brass_blank",
     "description": "The design parser reads a diameter given in inches as centimetres, so a one-inch seal asks for a 10 mm blank."},
    {"id": "zzzf_waxseal_02", "input": 3, "switch": "near_name", "fault_kind": "wrong_retrieval",
     "root": ("search_design_archive", 1), "failure": "approve_proof",
     "description": "The archive search returns customer C-Hale's seal WS-2019 for C-Haleby's reorder of WS-2020, so the proof copies another family's border and lettering."},
    {"id": "zzzf_waxseal_03", "input": 1, "switch": "whole_archive", "fault_kind": "context_pollution",
     "root": ("assemble_brief_context", 1), "failure": "ChatCompletion",
     "description": "The brief's context takes every archived design instead of the customer's own, and the model API refuses the request as longer than its context window."},
    {"id": "zzzf_waxseal_04", "input": 2, "switch": "motto_clip", "fault_kind": "truncated_result",
     "root": ("render_element", 3), "failure": "approve_proof",
     "description": "The motto render returns only the first sixteen letters of an eighteen-letter motto, so the proof's motto is cut short."},
    {"id": "zzzf_waxseal_05", "input": 4, "switch": "ring_positions", "fault_kind": "off_by_one",
     "root": ("layout_ring", 1), "failure": "approve_proof",
     "description": "The ring layout leaves one letter position fewer than the motto has letters, so the last letter has no place on the ring."},
]


def policy(request):
    system = sc.system_of(request)
    user = sc.last_user(request)
    if sum(len(str(m.get("content"))) for m in request.body.get("messages", [])) > CONTEXT_LIMIT_CHARS:
        from trajdebug.testing import Reply
        return Reply(status=400, error="This model's maximum context length is 8192 tokens; the messages resulted in 11873 tokens.")
    if system.startswith("Extract the seal order"):
        mono = re.search(r"[Mm]onogram (\w+)", user).group(1)
        motto = re.search(r"motto '(.*?)'", user).group(1)
        handle = re.search(r"(\w+(?: wood)?) handle|handle in (\w+)", user)
        handle = handle.group(1) or handle.group(2)
        diameter = re.search(r"diameter ([\d.]+ (?:in|mm))", user).group(1)
        ref = re.search(r"ref (WS-\d+)", user).group(1)
        return json.dumps({"monogram": mono, "motto": motto, "handle": handle, "diameter": diameter, "match_ref": ref})
    if system.startswith("Write the engraver's brief"):
        ctx = json.loads(user)
        d = ctx["design"]
        return (f"Cut a {d['diameter_mm']} mm die, {ctx['archive'][0]['border']} border, {ctx['archive'][0]['letters']} letters, "
                f"monogram {d['monogram']} centred, motto on the ring, depth {ctx['archive'][0]['depth_mm']} mm.")
    if system.startswith("Write a short confirmation"):
        return "Your new seal is in hand; we will post the proof within the week."
    return "Noted."


def record(inp: dict, path: str) -> None:
    client = sc.openai_client()
    with sc.otlp_capture(path, RUN_NAME) as tr:
        with sc.span(tr, RUN_NAME, "AGENT", inp, **{"agent.name": RUN_NAME}) as root:
            with sc.span(tr, "receive_order", "CHAIN", inp) as s:
                s.value = {"order": inp["order"], "customer": inp["customer"], "email": inp["email"]}
            reply = client.chat.completions.create(model=sc.model(), messages=[
                {"role": "system", "content": "Extract the seal order as JSON: monogram, motto, handle, diameter, match_ref."},
                {"role": "user", "content": inp["email"]}]).choices[0].message.content
            with sc.span(tr, "parse_design", "CHAIN", reply) as s:
                raw = json.loads(reply)
                num, unit = raw["diameter"].split()
                per_unit = 10.0 if (unit == "in" and ACTIVE == "inch_as_cm") else (25.4 if unit == "in" else 1.0)
                design = {"monogram": raw["monogram"], "motto": raw["motto"], "handle": raw["handle"],
                          "diameter_mm": round(float(num) * per_unit, 1), "match_ref": raw["match_ref"]}
                s.value = design
            with sc.span(tr, "search_design_archive", "RETRIEVER", {"customer": inp["customer"], "ref": design["match_ref"]}) as s:
                if ACTIVE == "near_name":
                    hits = [a for a in ARCHIVE if inp["customer"].startswith(a["customer"])][:1]
                else:
                    hits = [a for a in ARCHIVE if a["customer"] == inp["customer"] and a["ref"] == design["match_ref"]]
                s.value = hits
            earlier = hits[0]
            elements = []
            for element, text in (("monogram", design["monogram"]), ("border", earlier["border"]), ("motto", design["motto"])):
                with sc.span(tr, "render_element", "TOOL", {"element": element, "text": text, "style": earlier["letters"]},
                             **{"tool.name": "render_element"}) as s:
                    glyphs = list(text.replace(" ", "")) if element != "border" else [text]
                    if element == "motto" and ACTIVE == "motto_clip":
                        glyphs = glyphs[:16]
                    s.value = {"element": element, "glyphs": glyphs, "style": earlier["letters"], "border": earlier["border"]}
                    elements.append(s.value)
            with sc.span(tr, "layout_ring", "TOOL", {"motto_glyphs": elements[2]["glyphs"], "diameter_mm": design["diameter_mm"]},
                         **{"tool.name": "layout_ring"}) as s:
                n = len(elements[2]["glyphs"]) - (1 if ACTIVE == "ring_positions" else 0)
                s.value = {"positions": n, "degrees_apart": round(300 / max(n, 1), 2)}
                ring = s.value
            with sc.span(tr, "assemble_brief_context", "CHAIN", {"design": design, "ref": earlier["ref"]}) as s:
                archive = ARCHIVE if ACTIVE == "whole_archive" else [earlier]
                ctx = {"design": design, "archive": archive, "ring": ring}
                s.value = {"archive_entries": len(archive), "letter_positions": ring["positions"]}
            brief = client.chat.completions.create(model=sc.model(), messages=[
                {"role": "system", "content": "Write the engraver's brief from the design and the archived seal."},
                {"role": "user", "content": json.dumps(ctx)}]).choices[0].message.content
            with sc.span(tr, "order_brass_blank", "TOOL", {"diameter_mm": design["diameter_mm"]}, **{"tool.name": "order_brass_blank"}) as s:
                fits = [b for b in BLANKS_MM if abs(b - design["diameter_mm"]) <= 1.0]
                if not fits:
                    raise ValueError(f"no brass blank within 1 mm of {design['diameter_mm']} mm (stock: {BLANKS_MM})")
                s.value = {"blank_mm": fits[0], "supplier": "Birmingham Brass"}
            with sc.span(tr, "approve_proof", "TOOL", {"order": inp["order"], "brief": brief, "elements": elements, "ring": ring},
                         **{"tool.name": "approve_proof"}) as s:
                own = next(a for a in ARCHIVE if a["ref"] == design["match_ref"])
                if elements[1]["border"] != own["border"] or elements[0]["style"] != own["letters"]:
                    raise ValueError(f"proof has a {elements[1]['border']} border in {elements[0]['style']}; {own['ref']} has a {own['border']} border in {own['letters']}")
                motto = design["motto"].replace(" ", "")
                if "".join(elements[2]["glyphs"]) != motto:
                    raise ValueError(f"proof motto reads '{''.join(elements[2]['glyphs'])}', order asks '{design['motto']}'")
                if ring["positions"] != len(motto):
                    raise ValueError(f"ring has {ring['positions']} letter positions for a {len(motto)}-letter motto")
                s.value = {"approved": True, "proof": f"P-{inp['order'][3:]}"}
            letter = client.chat.completions.create(model=sc.model(), messages=[
                {"role": "system", "content": "Write a short confirmation to the customer."},
                {"role": "user", "content": json.dumps({"order": inp["order"], "proof": s.value["proof"]})}]).choices[0].message.content
            root.value = letter
