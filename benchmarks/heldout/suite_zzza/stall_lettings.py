"""Stall lettings for a flea market day (route: otlp, OpenInference spans exported as OTLP JSON)."""
from __future__ import annotations

import json
import re

from openai import OpenAI

import suitekit

NAME = "stall-lettings"
ROUTE = "otlp"
DOMAIN = "flea market: stall lettings"
SHAPE = ("OpenInference/OTLP, ~22-25 spans: per application a model read (instrumented openai span inside a "
         "chain span), a parse chain and a licence tool; a pitch-plan retriever, an allocation chain, a model "
         "that drafts the letters from the plan, and the council ledger tool that books the pitches")

ON = {"plan": False, "frontage": False, "licence": False, "pitch": False, "fee": False}

LICENCES = {
    "SL-4417": {"trader": "Mabel Okoro", "frontage_m": 3.5, "expires": "2027-03-31"},
    "SL-2090": {"trader": "Quill & Daughter", "frontage_m": 2.5, "expires": "2027-06-30"},
    "SL-3302": {"trader": "Rook & Sons", "frontage_m": 4.0, "expires": "2026-09-30"},
    "SL-5121": {"trader": "Hetty Barr", "frontage_m": 3.5, "expires": "2027-01-31"},
    "SL-6610": {"trader": "Vinyl Vic", "frontage_m": 1.5, "expires": "2027-08-31"},
    "SL-7003": {"trader": "Penny Lane Books", "frontage_m": 3.0, "expires": "2027-05-31"},
    "SL-7788": {"trader": "Dora Fenn", "frontage_m": 2.0, "expires": "2027-02-28"},
    "SL-8124": {"trader": "Tin Soldier Toys", "frontage_m": 4.5, "expires": "2027-04-30"},
}
GOODS = {"SL-4417": "vintage clothes", "SL-2090": "old maps", "SL-3302": "garden tools", "SL-5121": "enamelware",
         "SL-6610": "records", "SL-7003": "paperbacks", "SL-7788": "buttons and lace", "SL-8124": "toy soldiers"}
ROWS = {"A": 10.0, "B": 12.0, "C": 14.0}
TARIFF = {"A": 6.0, "B": 5.0, "C": 4.0}  # GBP per metre of frontage


def _app(lic: str, row: str) -> str:
    metres = str(LICENCES[lic]["frontage_m"])
    if lic == "SL-2090":
        metres = metres.replace(".", ",")  # this trader writes a decimal comma
    return (f"{LICENCES[lic]['trader']}, licence {lic}: {GOODS[lic]}, needs {metres} m "
            f"frontage, prefers row {row}.")


DAYS = [
    ("2026-12-12", [("SL-4417", "A"), ("SL-2090", "A"), ("SL-5121", "A"), ("SL-6610", "A"), ("SL-7003", "B")]),
    ("2026-12-19", [("SL-8124", "B"), ("SL-3302", "A"), ("SL-7788", "A"), ("SL-2090", "C"), ("SL-6610", "B")]),
    ("2026-12-26", [("SL-7003", "A"), ("SL-4417", "B"), ("SL-8124", "C"), ("SL-5121", "B"), ("SL-7788", "C"),
                    ("SL-3302", "B")]),
    ("2027-01-02", [("SL-6610", "A"), ("SL-2090", "B"), ("SL-4417", "A"), ("SL-7788", "B")]),
    ("2027-01-09", [("SL-5121", "C"), ("SL-8124", "A"), ("SL-7003", "C"), ("SL-4417", "C"), ("SL-6610", "A")]),
]
INPUTS = [{"date": d, "applications": [_app(lic, row) for lic, row in apps]} for d, apps in DAYS]

CASES = [
    dict(id="zf01", input=2, switch="plan", fault_kind="context_pollution",
         root=("pitch_plan", 1), kind=None, failure=("ChatCompletion", 7),
         description="The pitch plan search returns every archived market day's plan besides 2026-12-26, and the whole plan is pasted into the letters prompt, which the model API refuses as too long."),
    dict(id="zf02", input=0, switch="frontage", fault_kind="lossy_parsing",
         root=("parse_application", 2), kind=None, failure=("book_pitches", 1),
         description="parse_application reads Quill & Daughter's '2,5 m' (a decimal comma) as 2 m, so their letter quotes 12.00 GBP where the ledger's tariff for 2.5 m on row A gives 15.00."),
    dict(id="zf03", input=1, switch="licence", fault_kind="swallowed_error",
         root=("check_licence", 2), kind=None, failure=("book_pitches", 1),
         description="check_licence catches the register's timeout for SL-3302 and reports the licence as unchecked instead of failing, so Rook & Sons, whose licence expired 2026-09-30, are given a pitch."),
    dict(id="zf04", input=3, switch="pitch", fault_kind="off_by_one",
         root=("allocate_pitches", 1), kind=None, failure=("book_pitches", 1),
         description="allocate_pitches numbers the pitches of each row from 0, so the first trader in a row is sent to pitch A0, which does not exist."),
    dict(id="zf05", input=4, switch="fee", fault_kind="hallucinated_value",
         root=("ChatCompletion", 6), kind="llm", failure=("book_pitches", 1),
         description="The letters model quotes Tin Soldier Toys a fee of 30.00 GBP, a figure in none of its inputs (4.5 m on row A at 6.00 GBP a metre is 27.00)."),
]


def policy(request):
    system = suitekit.system_of(request)
    user = suitekit.last_user(request)
    if system.startswith("Read"):
        m = re.match(r"(.+?), licence (SL-\d+): (.+?), needs ([\d.,]+ m) frontage, prefers row ([A-C])\.", user)
        trader, lic, goods, frontage, row = m.groups()
        return json.dumps({"trader": trader, "licence": lic, "goods": goods, "frontage": frontage, "row": row})
    if system.startswith("Draft"):
        if len(user) > 24000:
            from trajdebug.testing import Reply
            return Reply(status=400, error=f"This model's maximum context length is 8192 tokens; your messages "
                                           f"resulted in {len(user) // 3} tokens.")
        body = json.loads(user)
        letters = []
        for a in body["allocations"]:
            fee = round(a["frontage_m"] * body["tariff"][a["row"]], 2)
            if ON["fee"] and a["trader"] == "Tin Soldier Toys":
                fee = 30.0
            letters.append({"trader": a["trader"], "licence": a["licence"], "pitch": a["pitch"], "fee_gbp": fee,
                            "text": f"Dear {a['trader']}, your pitch {a['pitch']} on {body['date']} costs {fee:.2f} GBP."})
        return json.dumps({"letters": letters})
    return "?"


def _plan_docs(date: str) -> list[dict]:
    docs = [{"id": f"{date}/{row}", "content": f"Row {row}: {length} m, {TARIFF[row]} GBP per metre",
             "metadata": {"date": date, "row": row, "length_m": length}} for row, length in ROWS.items()]
    if ON["plan"]:
        for week in range(160):
            old = f"archive-{2023 + week // 52}-w{week % 52 + 1:02d}"
            for row, length in ROWS.items():
                docs.append({"id": f"{old}/{row}", "content": f"Row {row}: {length - (week % 3)} m, stalls let: "
                             f"{', '.join(LICENCES[k]['trader'] for k in list(LICENCES)[week % 5:week % 5 + 3])}",
                             "metadata": {"date": old, "row": row, "length_m": length - (week % 3)}})
    return docs


def record(inp: dict, path: str, base_url: str) -> None:
    from opentelemetry.trace import get_current_span

    global _CAPTURE
    try:
        _CAPTURE
    except NameError:
        _CAPTURE = suitekit.OtlpCapture()
    client = suitekit.client(base_url)
    A = suitekit.span_attrs
    with _CAPTURE.capturing(path) as tracer:
        try:
            with tracer.start_as_current_span(NAME, attributes=A("AGENT", inp)) as root:
                root.set_attribute("agent.name", NAME)
                with tracer.start_as_current_span("market_day", attributes=A("CHAIN", inp, inp)):
                    pass
                apps = []
                for text in inp["applications"]:
                    with tracer.start_as_current_span("read_application", attributes=A("CHAIN", {"text": text})) as s:
                        resp = client.chat.completions.create(model="fake-model", messages=[
                            {"role": "system", "content": "Read the stall application; answer JSON."},
                            {"role": "user", "content": text}])
                        content = resp.choices[0].message.content
                        suitekit.set_out(s, content)
                    with tracer.start_as_current_span("parse_application", attributes=A("CHAIN", {"content": content})) as s:
                        raw = json.loads(content)
                        text = raw["frontage"] if ON["frontage"] else raw["frontage"].replace(",", ".")
                        metres = float(re.search(r"\d+(?:\.\d+)?", text).group(0))
                        app = {"trader": raw["trader"], "licence": raw["licence"], "frontage_m": metres, "row": raw["row"]}
                        suitekit.set_out(s, app)
                    with tracer.start_as_current_span("check_licence", attributes=A("TOOL", {"licence": app["licence"]})) as s:
                        s.set_attribute("tool.name", "check_licence")
                        try:
                            lic = LICENCES[app["licence"]]
                            if ON["licence"] and app["licence"] == "SL-3302":
                                raise TimeoutError("licence register did not answer")
                            status = "valid" if lic["expires"] >= inp["date"] else "expired"
                        except TimeoutError:
                            status = "unchecked"
                        result = {"licence": app["licence"], "status": status}
                        suitekit.set_out(s, result)
                    apps.append(dict(app, licence_status=status))
                with tracer.start_as_current_span("pitch_plan", attributes=A("RETRIEVER", {"date": inp["date"]})) as s:
                    docs = _plan_docs(inp["date"])
                    suitekit.set_out(s, docs)
                with tracer.start_as_current_span("allocate_pitches", attributes=A("CHAIN", {"applications": apps})) as s:
                    rows = {d["metadata"]["row"]: d["metadata"]["length_m"] for d in docs if d["metadata"]["date"] == inp["date"]}
                    used = {r: 0.0 for r in rows}
                    count = {r: 0 for r in rows}
                    allocations, refused = [], []
                    for a in apps:
                        if a["licence_status"] == "expired":
                            refused.append({"trader": a["trader"], "reason": "licence expired"})
                            continue
                        for row in [a["row"]] + [r for r in sorted(rows) if r != a["row"]]:
                            if used[row] + a["frontage_m"] <= rows[row]:
                                number = count[row] if ON["pitch"] else count[row] + 1
                                count[row] += 1
                                used[row] += a["frontage_m"]
                                allocations.append({"trader": a["trader"], "licence": a["licence"], "row": row,
                                                    "pitch": f"{row}{number}", "frontage_m": a["frontage_m"]})
                                break
                        else:
                            refused.append({"trader": a["trader"], "reason": "no room"})
                    plan = {"allocations": allocations, "refused": refused}
                    suitekit.set_out(s, plan)
                with tracer.start_as_current_span("draft_letters", attributes=A("CHAIN", plan)) as s:
                    prompt = json.dumps({"date": inp["date"], "allocations": allocations, "tariff": TARIFF,
                                         "plan": [d["content"] + f" ({d['metadata']['date']})" for d in docs]})
                    resp = client.chat.completions.create(model="fake-model", messages=[
                        {"role": "system", "content": "Draft the letting letters as JSON {letters: [...]}."},
                        {"role": "user", "content": prompt}])
                    letters = json.loads(resp.choices[0].message.content)["letters"]
                    suitekit.set_out(s, letters)
                with tracer.start_as_current_span("book_pitches", attributes=A("TOOL", {"letters": letters})) as s:
                    s.set_attribute("tool.name", "book_pitches")
                    _ledger(inp["date"], letters)
                    suitekit.set_out(s, {"booked": len(letters)})
        except Exception:
            pass


def _ledger(date: str, letters: list[dict]) -> None:
    """The council market ledger's own checks when pitches are booked."""
    per_row: dict[str, float] = {}
    for let in letters:
        row, num = let["pitch"][0], int(let["pitch"][1:])
        if num < 1:
            raise ValueError(f"pitch {let['pitch']} does not exist (row {row} pitches are numbered from 1)")
        lic = LICENCES[let["licence"]]
        if lic["expires"] < date:
            raise ValueError(f"licence {let['licence']} of {lic['trader']} expired {lic['expires']}")
        per_row[row] = per_row.get(row, 0.0) + lic["frontage_m"]
        if per_row[row] > ROWS[row]:
            raise ValueError(f"row {row} over-let: {per_row[row]} m of frontage on a {ROWS[row]} m row")
        fee = round(lic["frontage_m"] * TARIFF[row], 2)
        if abs(let["fee_gbp"] - fee) > 0.005:
            raise ValueError(f"letter to {lic['trader']} quotes {let['fee_gbp']:.2f} GBP; tariff gives {fee:.2f} GBP")
