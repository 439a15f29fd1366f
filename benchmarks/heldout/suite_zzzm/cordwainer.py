"""Cordwainer's bespoke shoe orders (otlp): extraction model (retried after a rate limit), measurement parser, a last-maker
sub-agent (library retriever, model choice, reservation), profile memory, a clicker brief model call, fitting booking."""
import json

import openai
from openai import OpenAI

import otlp_kit
from trajdebug.testing import Reply

NAME, ROUTE, DOMAIN = "cordwainer-order-desk", "otlp", "cordwainer's bespoke shoe orders"
SHAPE = "email -> extraction model (429 then retry) -> parse -> history tool -> last_maker sub-agent (retriever, model, reserve tool) -> leather tool -> profile memory save/load -> clicker brief (prompt assembly + model) -> fitting booking"
ON: set = set()

LASTS = [{"last": f"L-{n}", "length_mm": n, "girth_mm": g, "style": st} for n, g, st in
         [(250, 228, "oxford"), (258, 234, "oxford"), (266, 240, "oxford"), (274, 246, "oxford"), (282, 252, "oxford"), (290, 258, "oxford"),
          (262, 236, "derby"), (270, 242, "derby"), (278, 250, "derby"), (286, 256, "derby"), (294, 262, "derby")]]
HISTORY = {
    "C-1042": [{"order": "O-3311", "year": 2024, "last": "L-258", "note": "Tan oxford, full brogue."}],
    "C-2290": [], "C-0871": [{"order": "O-2750", "year": 2023, "last": "L-278", "note": "Black derby, storm welt."}],
    "C-3005": [{"order": "O-3390", "year": 2025, "last": "L-250", "note": "Oxblood oxford, plain cap."}], "C-1776": [],
}
OLD_PROFILES = {"C-1042": {"foot_length_mm": 251, "ball_girth_mm": 238, "taken": "2024-03-02"},
                "C-3005": {"foot_length_mm": 238, "ball_girth_mm": 219, "taken": "2025-01-20"}}
INPUTS = [
    {"customer": "C-1042", "account": "A-77", "email": "Dear Mr Pell, please make me black oxfords. Foot 256 mm long, ball girth 236 mm. Calf leather."},
    {"customer": "C-2290", "account": "A-81", "email": "Hello, I'd like brown derbys, foot length 265 mm, girth 248 mm, in suede."},
    {"customer": "C-0871", "account": "A-12", "email": "A second pair of derbys in cordovan please: length 272, girth 248 (measured in mm)."},
    {"customer": "C-3005", "account": "A-77", "email": "Oxfords for my wedding, navy calf. My foot is 242 mm and the ball girth 226 mm."},
    {"customer": "C-1776", "account": "A-90", "email": "Chelsea-style derby boots, dark brown calf. Foot 280 mm, girth 254 mm."},
]
CASES = [
    {"id": "zzzm-36", "input": 2, "switch": "length_cm", "kind": "format_drift",
     "root": ("ChatCompletion", 2, "llm"), "failure": ("book_fitting", 1),
     "description": "The extraction model gives the foot length in centimetres (27.2) where the order card takes millimetres."},
    {"id": "zzzm-37", "input": 0, "switch": "reserve_history", "kind": "wrong_tool_args",
     "root": ("ChatCompletion", 3, "llm"), "failure": ("book_fitting", 1),
     "description": "The last maker's model reserves the customer's previous last from the 2024 order instead of the one it chose from the library."},
    {"id": "zzzm-38", "input": 4, "switch": "search_girth", "kind": "wrong_retrieval",
     "root": ("last_library_search", 1, "retrieval"), "failure": ("book_fitting", 1),
     "description": "The last library search ranks lasts by their girth against the target length, so it returns the widest derby last."},
    {"id": "zzzm-39", "input": 3, "switch": "profile_key", "kind": "bad_memory_write",
     "root": ("profile_memory_save", 1, "tool"), "failure": ("book_fitting", 1),
     "description": "The new measurement profile is saved under the household account key instead of the customer's, so the fitting reads an older profile."},
    {"id": "zzzm-40", "input": 1, "switch": "brief_history", "kind": "context_pollution",
     "root": ("assemble_clicker_brief", 1, None), "failure": ("ChatCompletion", 4),
     "description": "The clicker brief's prompt pastes the whole workshop order ledger, not just this order, and the model API refuses it as too long."},
]
_calls = {"n": 0}
LEDGER = "\n".join(f"O-{2000 + i}: customer C-{1000 + i * 7 % 900:04d}, last L-{250 + (i % 6) * 8}, leather calf, notes: welted, waxed thread, hand-finished edge." for i in range(900))


def policy(request):
    _calls["n"] += 1
    msgs = request.body["messages"]
    system, prompt = msgs[0]["content"], msgs[-1]["content"]
    if system.startswith("Extract"):
        if _calls["n"] == 1:
            return Reply(status=429, error="Rate limit reached for requests. Please retry after 1s.")
        import re
        nums = [int(x) for x in re.findall(r"(\d{3})", prompt)]
        length, girth = nums[0], nums[1]
        style = "derby" if "derby" in prompt.lower() else "oxford"
        leather = next(w for w in ("calf", "suede", "cordovan") if w in prompt.lower())
        if "length_cm" in ON:
            length = length / 10
        return json.dumps({"foot_length_mm": length, "ball_girth_mm": girth, "style": style, "leather": leather})
    if system.startswith("Choose"):
        data = json.loads(prompt)
        pick = data["candidates"][0]["last"]
        if "reserve_history" in ON and data["history"]:
            pick = data["history"][0]["last"]
        return json.dumps({"reserve": pick, "reason": "closest length and girth"})
    if len(prompt) > 24000:
        return Reply(status=400, error="This model's maximum context length is 8192 tokens. Your messages resulted in 31877 tokens.")
    return "Clicker brief: cut vamp and quarters from the hide's backbone area, toe allowance as per last, lining in natural calf."


def run_one(inp, path, server):
    _calls["n"] = 0
    tr = otlp_kit.tracer("order-desk")
    client = OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    memory = {f"profile:{k}": v for k, v in OLD_PROFILES.items()}
    A = otlp_kit.attrs
    try:
        with tr.start_as_current_span(NAME, attributes=A("AGENT", {"customer": inp["customer"], "email": inp["email"]})):
            with tr.start_as_current_span("read_order_email", attributes=A("CHAIN", inp, {"customer": inp["customer"], "text": inp["email"]})):
                email = inp["email"]
            messages = [{"role": "system", "content": "Extract the shoe order: foot_length_mm, ball_girth_mm, style, leather. JSON."},
                        {"role": "user", "content": email}]
            for attempt in (1, 2):
                try:
                    text = client.chat.completions.create(model="order-clerk", messages=messages).choices[0].message.content
                    break
                except openai.RateLimitError:
                    if attempt == 2:
                        raise
            with tr.start_as_current_span("parse_measurements", attributes=A("CHAIN", text)) as s:
                raw = json.loads(text)
                card = {"customer": inp["customer"], "foot_length_mm": raw["foot_length_mm"], "ball_girth_mm": int(raw["ball_girth_mm"]),
                        "style": raw["style"], "leather": raw["leather"]}
                s.set_attributes(otlp_kit.output(card))
            with tr.start_as_current_span("customer_history", attributes=A("TOOL", {"customer": inp["customer"]}, tool_name="customer_history")) as s:
                history = HISTORY[inp["customer"]]
                s.set_attributes(otlp_kit.output(history))
            with tr.start_as_current_span("last_maker", attributes=A("AGENT", {"card": card}, **{"agent.name": "last_maker"})) as agent:
                with tr.start_as_current_span("last_library_search", attributes=A("RETRIEVER", {"length_mm": card["foot_length_mm"], "girth_mm": card["ball_girth_mm"], "style": card["style"]})) as s:
                    pool = [x for x in LASTS if x["style"] == card["style"]]
                    field = "girth_mm" if "search_girth" in ON else "length_mm"
                    ranked = sorted(pool, key=lambda x: (abs(x[field] - card["foot_length_mm"] - 10), x["length_mm"]))[:3]
                    s.set_attributes(otlp_kit.output(ranked))
                choice = json.loads(client.chat.completions.create(model="last-maker", messages=[
                    {"role": "system", "content": "Choose the stock last to reserve for this customer. JSON {reserve, reason}."},
                    {"role": "user", "content": json.dumps({"card": card, "candidates": ranked, "history": history})}]).choices[0].message.content)
                with tr.start_as_current_span("reserve_last", attributes=A("TOOL", {"last": choice["reserve"]}, tool_name="reserve_last")) as s:
                    last = dict(next(x for x in LASTS if x["last"] == choice["reserve"]), reserved_for=inp["customer"])
                    s.set_attributes(otlp_kit.output(last))
                agent.set_attributes(otlp_kit.output(last))
            with tr.start_as_current_span("leather_stock", attributes=A("TOOL", {"leather": card["leather"]}, tool_name="leather_stock")) as s:
                hide = {"leather": card["leather"], "hides": 2, "tannery": "J&FJ Baker" if card["leather"] == "calf" else "Horween"}
                s.set_attributes(otlp_kit.output(hide))
            key = inp["account"] if "profile_key" in ON else inp["customer"]
            with tr.start_as_current_span("profile_memory_save", attributes=A("TOOL", {"key": f"profile:{key}", "value": card}, tool_name="profile_memory_save")) as s:
                memory[f"profile:{key}"] = {"foot_length_mm": card["foot_length_mm"], "ball_girth_mm": card["ball_girth_mm"], "taken": "2027-02-11"}
                s.set_attributes(otlp_kit.output({"saved": f"profile:{key}"}))
            with tr.start_as_current_span("assemble_clicker_brief", attributes=A("CHAIN", {"card": card, "last": last["last"], "hide": hide})) as s:
                context = LEDGER if "brief_history" in ON else json.dumps(history)
                brief_prompt = (f"Write the clicker's cutting brief.\nOrder card: {json.dumps(card)}\nLast: {json.dumps(last)}\n"
                                f"Leather: {json.dumps(hide)}\nPrevious orders:\n{context}")
                s.set_attributes(otlp_kit.output(brief_prompt))
            brief = client.chat.completions.create(model="clicker-writer", messages=[
                {"role": "system", "content": "You write cutting briefs for the clicking room."},
                {"role": "user", "content": brief_prompt}]).choices[0].message.content
            with tr.start_as_current_span("profile_memory_load", attributes=A("TOOL", {"key": f"profile:{inp['customer']}"}, tool_name="profile_memory_load")) as s:
                profile = memory.get(f"profile:{inp['customer']}")
                s.set_attributes(otlp_kit.output(profile))
            with tr.start_as_current_span("book_fitting", attributes=A("TOOL", {"customer": inp["customer"], "last": last, "profile": profile, "brief": brief[:80]}, tool_name="book_fitting")) as s:
                allowance = last["length_mm"] - profile["foot_length_mm"]
                if not 5 <= allowance <= 22:
                    raise ValueError(f"last {last['last']} ({last['length_mm']} mm) leaves {allowance:g} mm toe allowance on a {profile['foot_length_mm']} mm foot; 5-22 mm required")
                if abs(last["girth_mm"] - profile["ball_girth_mm"]) > 6:
                    raise ValueError(f"last {last['last']} girth {last['girth_mm']} mm against a {profile['ball_girth_mm']} mm ball girth on the fitting card")
                s.set_attributes(otlp_kit.output({"fitting": "Thursday 10:00", "last": last["last"]}))
    except Exception:
        pass
    otlp_kit.write(path)
