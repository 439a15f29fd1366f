"""Route 4: agents recorded with the trajdebug recording SDK, with a plain-Python fake LLM."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

from common import Agent, Case

import trajdebug


FAULT: str | None = None


def on(name: str) -> bool:
    return FAULT == name


# =====================================================================================
# D1  University admissions: a committee batch over applicants, with a letters sub-agent
# =====================================================================================

APPLICANTS = {
    "A-2201": {"name": "Lena Fischer", "transcript": "Cumulative GPA 3.72 / 4.00", "essay": "robotics club, built a prosthetic hand", "interview": 8, "score_report": "SR-88201", "letters": "L-2201"},
    "A-2202": {"name": "Tomás Ortega", "transcript": "CGPA 8.9 on a 10-point scale", "essay": "community radio in Oaxaca", "interview": 7, "score_report": "SR-88202", "letters": "L-2202"},
    "A-2203": {"name": "Mei Tanaka", "transcript": "Cumulative GPA 3.41 / 4.00", "essay": "caring for a sibling, night shifts", "interview": 9, "score_report": "SR-88203", "letters": "L-2203"},
    "A-2204": {"name": "Arjun Raman", "transcript": "CGPA 9.1 on a 10-point scale", "essay": "open-source compilers", "interview": 8, "score_report": "SR-88204", "letters": "L-2204"},
    "A-2205": {"name": "Priya Raman", "transcript": "Cumulative GPA 3.95 / 4.00", "essay": "marine biology fieldwork", "interview": 6, "score_report": "SR-88205", "letters": "L-2205"},
    "A-2206": {"name": "Jonah Baptiste", "transcript": "Cumulative GPA 3.12 / 4.00", "essay": "starting a repair café", "interview": 7, "score_report": "SR-88206", "letters": "L-2206"},
    "A-2207": {"name": "Sofia Marchetti", "transcript": "CGPA 7.8 on a 10-point scale", "essay": "translating for refugees", "interview": 9, "score_report": "SR-88207", "letters": "L-2207"},
    "A-2208": {"name": "Kwame Mensah", "transcript": "Cumulative GPA 3.58 / 4.00", "essay": "debate team captain", "interview": 8, "score_report": "SR-88208", "letters": "L-2208"},
    "A-2209": {"name": "Hana Kowalski", "transcript": "Cumulative GPA 3.84 / 4.00", "essay": "urban beekeeping study", "interview": 7, "score_report": "SR-88209", "letters": "L-2209"},
    "A-2210": {"name": "Diego Raman", "transcript": "CGPA 8.2 on a 10-point scale", "essay": "chess coaching in prisons", "interview": 8, "score_report": "SR-88210", "letters": "L-2210"},
}
SCORE_REPORTS = {sr: {"report_id": sr, "sat": 1300 + (int(sr[-2:]) * 37) % 250, "issued": "2024-10-12"} for sr in
                 [a["score_report"] for a in APPLICANTS.values()]}
OLD_SCORE_CACHE = {"SR-88203": {"report_id": "SR-61733", "sat": 1390, "issued": "2021-03-13"},
                   "SR-88208": {"report_id": "SR-61790", "sat": 1270, "issued": "2021-05-08"}}
LETTERS = {a["letters"]: {"packet": a["letters"], "applicant": a["name"],
                          "text": f"I recommend {a['name']} without reservation; exceptional work on {a['essay']}."}
           for a in APPLICANTS.values()}


@trajdebug.step(kind="tool")
def fetch_application(applicant_id: str) -> dict:
    return {"applicant_id": applicant_id, **APPLICANTS[applicant_id]}


@trajdebug.step(kind="parse")
def normalize_gpa(transcript: str) -> float:
    m = re.search(r"([\d.]+)\s*(?:/|on a)\s*([\d.]+)", transcript)
    value, scale = float(m.group(1)), float(m.group(2).split("-")[0])
    if on("gpa_scale"):
        return round(value, 2)  # the 10-point scale is taken as already on 4.0
    return round(value * 4.0 / scale, 2)


@trajdebug.step(kind="tool")
def fetch_test_scores(report_id: str) -> dict:
    if on("stale_scores") and report_id in OLD_SCORE_CACHE:
        return dict(OLD_SCORE_CACHE[report_id])  # served from last cycle's cache
    return dict(SCORE_REPORTS[report_id])


def fake_llm(prompt: str) -> str:
    """The committee's scripted model: essay rubric and letter summaries."""
    if prompt.startswith("Rate this essay"):
        topic = prompt.split(":", 1)[1]
        return json.dumps({"score": 6 + len(topic) % 4, "rationale": f"clear voice; concrete detail about {topic.strip()[:40]}"})
    if prompt.startswith("Summarize the recommendation"):
        name = re.search(r"for (.+?) \(packet", prompt).group(1)
        return json.dumps({"applicant": name, "strength": "strong", "summary": f"Recommender praises {name}'s initiative."})
    return "{}"


@trajdebug.step(kind="llm")
def score_essay(prompt: str) -> str:
    return fake_llm(prompt)


@trajdebug.step(kind="tool")
def fetch_letters(surname: str, first_name: str) -> dict:
    matches = [p for p in LETTERS.values() if p["applicant"].endswith(" " + surname)]
    if not on("letters_surname"):
        matches = [p for p in matches if p["applicant"].startswith(first_name + " ")]
    return sorted(matches, key=lambda p: p["packet"], reverse=True)[0]  # the registry lists packets newest first


@trajdebug.step(kind="llm")
def summarize_letters(prompt: str) -> str:
    return fake_llm(prompt)


@trajdebug.step(kind="agent")
def letters_reader(applicant: dict) -> dict:
    first, surname = applicant["name"].split(" ", 1)
    packet = fetch_letters(surname, first)
    out = summarize_letters(f"Summarize the recommendation for {packet['applicant']} (packet {packet['packet']}):\n{packet['text']}")
    return json.loads(out)


@trajdebug.step(kind="state")
def record_interview(applicant_id: str, score: int, previous: str | None) -> None:
    interviews = trajdebug.current_run().state.setdefault("interviews", {})
    key = previous if (on("interview_slot") and previous) else applicant_id
    interviews[key] = score
    trajdebug.current_run().state["interviews"] = interviews


@trajdebug.step(kind="other")
def composite_score(applicant_id: str, gpa: float, scores: dict, essay: dict, letters: dict) -> dict:
    interview = trajdebug.current_run().state.get("interviews", {}).get(applicant_id)
    value = 35 * gpa / 4.0 + 20 * (scores["sat"] - 400) / 1200 + 2 * essay["score"] + (10 if letters["strength"] == "strong" else 5)
    value += 1.5 * (interview if interview is not None else 0)
    return {"applicant_id": applicant_id, "composite": round(value, 1), "gpa": gpa, "interview": interview,
            "score_report": scores, "letters_about": letters["applicant"]}


@trajdebug.step(kind="condition")
def decide(composite: dict) -> str:
    return "admit" if composite["composite"] >= 80 else "waitlist"


@trajdebug.step(kind="tool")
def commit_decisions(batch: list[dict], names: dict) -> dict:
    for row in batch:
        c, aid = row["composite"], row["composite"]["applicant_id"]
        if not 0 <= c["composite"] <= 100:
            raise ValueError(f"Registrar rejected batch: composite {c['composite']} for {aid} is outside 0-100")
        if c["letters_about"] != names[aid]:
            raise ValueError(f"Letter summary attached to {aid} ({names[aid]}) is about {c['letters_about']}")
        if c["score_report"]["issued"] < "2022-09-01":
            raise ValueError(f"{aid}: score report {c['score_report']['report_id']} dated {c['score_report']['issued']} is past the two-year validity window")
        if c["interview"] is None:
            raise ValueError(f"No interview score on file for {aid}; the committee cannot record a {row['decision']} without one")
    return {"committed": len(batch), "admits": sum(r["decision"] == "admit" for r in batch)}


def record_admissions(batch: list[str], fault: str | None, path: Path) -> None:
    global FAULT
    FAULT = fault
    try:
        with trajdebug.run("admissions-committee-batch", path=str(path), task=f"review batch {', '.join(batch)}"):
            rows, names, previous = [], {}, None
            for aid in batch:
                app = fetch_application(aid)
                names[aid] = app["name"]
                gpa = normalize_gpa(app["transcript"])
                scores = fetch_test_scores(app["score_report"])
                essay = json.loads(score_essay(f"Rate this essay 1-10 for the committee: {app['essay']}"))
                letters = letters_reader(app)
                record_interview(aid, app["interview"], previous)
                previous = aid
                comp = composite_score(aid, gpa, scores, essay, letters)
                rows.append({"composite": comp, "decision": decide(comp)})
            commit_decisions(rows, names)
    except ValueError:
        pass
    finally:
        FAULT = None


ADMISSIONS = Agent(
    "admissions-committee-batch", "recorder", "university admissions", "jsonl", record_admissions,
    passing=[["A-2201", "A-2203"], ["A-2205", "A-2206"], ["A-2208", "A-2209", "A-2201"], ["A-2210"], ["A-2206", "A-2203"]],
    cases=[
        Case("e-adm-gpa-scale", "gpa_scale", "unit_error", ["A-2201", "A-2202"],
             "normalize_gpa returns a 10-point CGPA (8.9) as if it were on the 4.0 scale; the composite built on it "
             "exceeds 100 and the registrar rejects the batch.", "normalize_gpa", "parse", 2, "commit_decisions", 2),
        Case("e-adm-letters-wrong-person", "letters_surname", "wrong_entity_subagent", ["A-2203", "A-2204"],
             "Inside the letters_reader sub-agent, fetch_letters matches on surname only and returns Diego Raman's packet "
             "for Arjun Raman; the sub-agent's summary is about the wrong applicant and the commit check catches it.",
             "fetch_letters", "tool", "Diego Raman", "commit_decisions", 4),
        Case("e-adm-stale-score", "stale_scores", "stale_data", ["A-2209", "A-2208"],
             "fetch_test_scores serves A-2208's score report from last cycle's cache (issued 2021); the composite "
             "carries it to the commit, which rejects the expired report.", "fetch_test_scores", "tool", "SR-61790",
             "commit_decisions", 2),
        Case("e-adm-interview-slot", "interview_slot", "bad_state_write", ["A-2207", "A-2205"],
             "record_interview files the second applicant's interview score under the previous applicant's key; "
             "A-2205 ends with no interview on file and the commit refuses the batch.",
             "record_interview", "state", 2, "commit_decisions", 2),
    ],
)


# =====================================================================================
# D2  Customs brokerage: file an entry from a commercial invoice, line by line
# =====================================================================================

INVOICES = {
    "CI-7701": {"currency": "EUR", "origin": "DE", "lines": [("notebook computer 14in", 120, "312.50"), ("USB-C docking station", 120, "84.00"), ("volume discount", 1, "-1,200.00")], "total": "46,380.00"},
    "CI-7702": {"currency": "EUR", "origin": "IT", "lines": [("espresso machine, household", 40, "265.00"), ("grinder burr set", 40, "19.50")], "total": "11,380.00"},
    "CI-7703": {"currency": "EUR", "origin": "FR", "lines": [("cotton knit sweater", 300, "38.00"), ("wool scarf", 150, "22.00"), ("freight allowance", 1, "-450.00")], "total": "14,250.00"},
    "CI-7704": {"currency": "EUR", "origin": "DE", "lines": [("notebook computer 14in", 60, "318.00"), ("laptop sleeve", 60, "12.00")], "total": "19,800.00"},
    "CI-7705": {"currency": "EUR", "origin": "ES", "lines": [("olive oil, extra virgin 5l", 200, "41.00")], "total": "8,200.00"},
    "CI-7706": {"currency": "EUR", "origin": "NL", "lines": [("LED grow light 600W", 80, "149.00"), ("early payment rebate", 1, "-320.00")], "total": "11,600.00"},
    "CI-7707": {"currency": "EUR", "origin": "DE", "lines": [("USB-C docking station", 200, "82.00"), ("notebook computer 14in", 10, "330.00")], "total": "19,700.00"},
    "CI-7708": {"currency": "EUR", "origin": "IT", "lines": [("wool scarf", 500, "21.00"), ("cotton knit sweater", 100, "36.50")], "total": "14,150.00"},
}
HS = {"notebook computer 14in": "8471.30", "USB-C docking station": "8471.80", "espresso machine, household": "8516.71",
      "grinder burr set": "8516.90", "cotton knit sweater": "6110.20", "wool scarf": "6117.10",
      "olive oil, extra virgin 5l": "1509.20", "LED grow light 600W": "9405.42", "laptop sleeve": "4202.12"}
HEADINGS = {"8471": "automatic data-processing machines", "8417": "industrial furnaces and ovens", "8516": "electric heating appliances",
            "6110": "knitted jerseys and pullovers", "6117": "knitted clothing accessories", "1509": "olive oil",
            "9405": "luminaires", "4202": "cases and containers"}
DUTY = {"8471.30": 0.0, "8471.80": 0.0, "8417.30": 2.9, "8516.71": 2.5, "8516.90": 2.8, "6110.20": 16.5, "6117.10": 10.6,
        "1509.20": 5.0, "9405.42": 3.9, "4202.12": 20.0}
CBP_RATE = {"EUR": 1.0842}


@trajdebug.step(kind="tool")
def fetch_commercial_invoice(invoice_id: str) -> str:
    inv = INVOICES[invoice_id]
    body = "\n".join(f"{d} | {q} | {p}" for d, q, p in inv["lines"])
    return f"COMMERCIAL INVOICE {invoice_id}  currency {inv['currency']}  origin {inv['origin']}\n{body}\nTOTAL {inv['total']}"


def _num(text: str) -> float:
    t = text.replace(",", "")
    if on("drop_sign"):
        t = t.lstrip("-")  # the cleaner strips "junk" characters around the figure, the minus sign with them
    return float(t)


@trajdebug.step(kind="parse")
def parse_invoice_lines(document: str) -> dict:
    head, *rows, foot = document.strip().splitlines()
    lines = []
    for row in rows:
        desc, qty, price = (c.strip() for c in row.split("|"))
        lines.append({"description": desc, "qty": int(qty), "unit_price": _num(price), "amount": round(int(qty) * _num(price), 2)})
    return {"currency": re.search(r"currency (\w+)", head).group(1), "origin": re.search(r"origin (\w+)", head).group(1),
            "lines": lines, "footer_total": float(foot.split()[1].replace(",", ""))}


@trajdebug.step(kind="llm")
def classify_hs(prompt: str) -> str:
    desc = prompt.split("Goods:", 1)[1].strip()
    code = HS.get(desc, "9999.99")
    if on("hs_transpose") and code == "8471.30":
        code = "8417.30"  # the model transposes the heading digits
    return json.dumps({"hts": code, "confidence": 0.93})


@trajdebug.step(kind="tool")
def tariff_rate(hts: str, origin: str) -> dict:
    return {"hts": hts, "origin": origin, "ad_valorem_pct": DUTY.get(hts, 6.0)}


@trajdebug.step(kind="tool")
def fx_rate(base: str, quote: str) -> dict:
    rate = CBP_RATE[base]
    if on("fx_inverted"):
        rate = round(1 / rate, 4)  # the feed's USD->EUR column was wired in
    return {"pair": f"{base}/{quote}", "rate": rate, "source": "treasury-daily"}


@trajdebug.step(kind="other")
def compute_entry(invoice: dict, classified: list[dict], fx: dict) -> dict:
    lines = []
    for line, cls in zip(invoice["lines"], classified):
        usd = round(line["amount"] * fx["rate"], 2)
        lines.append({**line, "hts": cls["hts"], "value_usd": usd, "duty_usd": round(usd * cls["ad_valorem_pct"] / 100, 2)})
    return {"lines": lines, "entered_value_foreign": round(sum(ln["amount"] for ln in invoice["lines"]), 2),
            "entered_value_usd": round(sum(ln["value_usd"] for ln in lines), 2), "footer_total": invoice["footer_total"],
            "currency": invoice["currency"]}


@trajdebug.step(kind="tool")
def file_entry(entry: dict) -> dict:
    if abs(entry["entered_value_foreign"] - entry["footer_total"]) > 0.5:
        raise RuntimeError(f"ACE reject E-417: line values sum to {entry['entered_value_foreign']:,.2f} {entry['currency']}, "
                           f"invoice footer says {entry['footer_total']:,.2f}")
    expected = round(entry["footer_total"] * CBP_RATE[entry["currency"]], 2)
    if abs(entry["entered_value_usd"] - expected) > 0.02 * expected:
        raise RuntimeError(f"ACE reject V-102: declared value USD {entry['entered_value_usd']:,.2f} vs {expected:,.2f} at the certified rate")
    for i, ln in enumerate(entry["lines"], 1):
        heading = HEADINGS.get(ln["hts"][:4], "?")
        words = set(ln["description"].lower().replace(",", " ").split())
        if ln["description"] != "volume discount" and heading == "industrial furnaces and ovens" and "oven" not in words:
            raise RuntimeError(f"ACE reject C-09 line {i}: HTS {ln['hts']} ({heading}) does not describe '{ln['description']}'")
    return {"entry_no": "EN-" + str(zlib.crc32(json.dumps(entry, sort_keys=True).encode()) % 10**7).zfill(7), "status": "accepted"}


def record_customs(invoice_id: str, fault: str | None, path: Path) -> None:
    global FAULT
    FAULT = fault
    try:
        with trajdebug.run("customs-entry-filer", path=str(path), task=f"file entry for {invoice_id}"):
            doc = fetch_commercial_invoice(invoice_id)
            invoice = parse_invoice_lines(doc)
            classified = []
            for line in invoice["lines"]:
                if line["amount"] < 0 or "allowance" in line["description"] or "rebate" in line["description"]:
                    classified.append({"hts": "0000.00", "ad_valorem_pct": 0.0})
                    continue
                hts = json.loads(classify_hs(f"Give the 6-digit HTS subheading for these goods.\nGoods: {line['description']}"))["hts"]
                classified.append(tariff_rate(hts, invoice["origin"]))
            fx = fx_rate(invoice["currency"], "USD")
            file_entry(compute_entry(invoice, classified, fx))
    except RuntimeError:
        pass
    finally:
        FAULT = None


CUSTOMS = Agent(
    "customs-entry-filer", "recorder", "freight customs brokerage", "jsonl", record_customs,
    passing=["CI-7702", "CI-7703", "CI-7705", "CI-7708", "CI-7707"],
    cases=[
        Case("e-cus-discount-sign", "drop_sign", "lossy_parse", "CI-7701",
             "parse_invoice_lines strips the minus sign of the -1,200.00 volume-discount line; the entry's line values "
             "no longer add up to the invoice footer and ACE rejects the filing.", "parse_invoice_lines", "parse",
             '"unit_price": 1200.0', "file_entry", 2),
        Case("e-cus-fx-inverted", "fx_inverted", "unit_error", "CI-7704",
             "fx_rate returns the inverted EUR/USD rate (0.9223 instead of 1.0842); compute_entry converts every line "
             "with it and ACE rejects the declared dollar value.", "fx_rate", "tool", "0.9223", "file_entry", 2),
        Case("e-cus-hs-transposed", "hs_transpose", "wrong_tool_args", "CI-7704",
             "The model classifies the notebook computers as 8417.30 (furnaces) instead of 8471.30; the tariff lookup "
             "and the entry carry the wrong heading to ACE, which rejects the line.", "classify_hs", "llm", "8417.30",
             "file_entry", 3),
        Case("e-cus-rebate-sign", "drop_sign", "lossy_parse", "CI-7706",
             "The -320.00 early-payment rebate loses its sign in parse_invoice_lines; the entered value overshoots the "
             "footer by 640 EUR and the filing is rejected.", "parse_invoice_lines", "parse", '"unit_price": 320.0',
             "file_entry", 2),
    ],
)


# =====================================================================================
# D3  Warehouse replenishment: forecast and order per SKU, one purchase order at the end
# =====================================================================================

SKUS = {
    "SKU-1001": {"on_hand": 640, "morning_snapshot": 40, "sales": [118, 124, 131, 120], "case_pack": 24, "bin_capacity": 1000, "unit_cost": 3.10},
    "SKU-1002": {"on_hand": 210, "morning_snapshot": 210, "sales": [2210, 2340, 2295, 2410], "case_pack": 50, "bin_capacity": 16000, "unit_cost": 0.85},
    "SKU-1003": {"on_hand": 95, "morning_snapshot": 95, "sales": [22, 25, 19, 24], "case_pack": 12, "bin_capacity": 200, "unit_cost": 14.20},
    "SKU-1004": {"on_hand": 1300, "morning_snapshot": 300, "sales": [305, 298, 322, 310], "case_pack": 20, "bin_capacity": 2000, "unit_cost": 2.40},
    "SKU-1005": {"on_hand": 30, "morning_snapshot": 30, "sales": [61, 58, 66, 64], "case_pack": 6, "bin_capacity": 420, "unit_cost": 9.75},
    "SKU-1006": {"on_hand": 400, "morning_snapshot": 400, "sales": [1480, 1525, 1550, 1610], "case_pack": 100, "bin_capacity": 9000, "unit_cost": 1.15},
    "SKU-1007": {"on_hand": 12, "morning_snapshot": 12, "sales": [9, 11, 8, 10], "case_pack": 4, "bin_capacity": 80, "unit_cost": 22.00},
}
BUDGET = 16000.0


class StockCache:
    def __init__(self) -> None:
        self.snapshot = {k: v["morning_snapshot"] for k, v in SKUS.items()}


@trajdebug.step(kind="tool")
def read_stock(sku: str, cache: StockCache) -> dict:
    if on("stale_stock"):
        return {"sku": sku, "on_hand": cache.snapshot[sku], "as_of": "06:00"}  # pre-receiving cache served
    return {"sku": sku, "on_hand": SKUS[sku]["on_hand"], "as_of": "now"}


@trajdebug.step(kind="tool")
def sales_history(sku: str) -> dict:
    return {"sku": sku, "weekly_units": list(SKUS[sku]["sales"])}


@trajdebug.step(kind="other")
def build_forecast_prompt(sku: str, history: dict, previous: dict | None) -> str:
    use = previous if (on("prompt_carryover") and previous is not None) else history
    weeks = ", ".join(str(x) for x in use["weekly_units"])
    return f"Forecast total demand for {sku} over the next 4 weeks. Weekly unit sales, oldest first: {weeks}."


@trajdebug.step(kind="llm")
def forecast_demand(prompt: str) -> str:
    weeks = [int(x) for x in re.search(r"oldest first: ([\d, ]+)\.", prompt).group(1).split(", ")]
    trend = (weeks[-1] - weeks[0]) / 3
    total = int(round(sum(weeks[-1] + trend * (i + 1) for i in range(4)) / 10) * 10)
    return f"Based on the recent trend I expect about {total:,} units over the next four weeks."


@trajdebug.step(kind="parse")
def parse_forecast(text: str) -> int:
    if on("thousands_cut"):
        return int(re.search(r"about (\d+)", text).group(1))  # stops at the thousands separator
    return int(re.search(r"about ([\d,]+)", text).group(1).replace(",", ""))


@trajdebug.step(kind="other")
def reorder_qty(sku: str, forecast: int, stock: dict) -> dict:
    need = max(0, forecast + forecast // 4 - stock["on_hand"])
    pack = SKUS[sku]["case_pack"]
    qty = -(-need // pack) * pack
    return {"sku": sku, "qty": qty, "forecast": forecast, "on_hand": stock["on_hand"]}


@trajdebug.step(kind="state")
def stage_po_line(line: dict, previous_sku: str | None) -> None:
    lines = trajdebug.current_run().state.get("po_lines", {})
    key = previous_sku if (on("po_overwrite") and previous_sku) else line["sku"]
    lines[key] = dict(line, sku=key)
    trajdebug.current_run().state["po_lines"] = lines


@trajdebug.step(kind="other")
def assemble_po(skus: list[str]) -> dict:
    staged = trajdebug.current_run().state.get("po_lines", {})
    lines = [staged.get(s, {"sku": s, "qty": 0, "forecast": None, "on_hand": None}) for s in skus]
    return {"supplier": "Northwind Wholesale", "lines": lines,
            "total_cost": round(sum(ln["qty"] * SKUS[ln["sku"]]["unit_cost"] for ln in lines), 2)}


@trajdebug.step(kind="tool")
def place_po(po: dict) -> dict:
    for ln in po["lines"]:
        sku = SKUS[ln["sku"]]
        if ln["qty"] + sku["on_hand"] > sku["bin_capacity"]:
            raise RuntimeError(f"WMS refused PO: {ln['sku']} would hold {ln['qty'] + sku['on_hand']} units, bin takes {sku['bin_capacity']}")
        cover = (sku["on_hand"] + ln["qty"]) / max(1, sum(sku["sales"]) / 4)
        if cover < 2.0:
            raise RuntimeError(f"Planning guard: {ln['sku']} would have {cover:.1f} weeks of cover after this PO (minimum 2)")
    if po["total_cost"] > BUDGET:
        raise RuntimeError(f"PO total ${po['total_cost']:,.2f} is over the weekly open-to-buy of ${BUDGET:,.0f}")
    return {"po": "PO-55" + str(len(po["lines"])), "status": "released"}


def record_warehouse(skus: list[str], fault: str | None, path: Path) -> None:
    global FAULT
    FAULT = fault
    try:
        with trajdebug.run("replenishment-planner", path=str(path), task=f"weekly replenishment for {', '.join(skus)}"):
            cache = StockCache()
            previous_hist, previous_sku = None, None
            for sku in skus:
                stock = read_stock(sku, cache)
                hist = sales_history(sku)
                prompt = build_forecast_prompt(sku, hist, previous_hist)
                forecast = parse_forecast(forecast_demand(prompt))
                stage_po_line(reorder_qty(sku, forecast, stock), previous_sku)
                previous_hist, previous_sku = hist, sku
            place_po(assemble_po(skus))
    except RuntimeError:
        pass
    finally:
        FAULT = None


WAREHOUSE = Agent(
    "replenishment-planner", "recorder", "warehouse replenishment", "jsonl", record_warehouse,
    passing=[["SKU-1003", "SKU-1005"], ["SKU-1007", "SKU-1003"], ["SKU-1005"], ["SKU-1001", "SKU-1007"], ["SKU-1003", "SKU-1007", "SKU-1005"]],
    cases=[
        Case("e-wh-stale-stock", "stale_stock", "stale_data", ["SKU-1005", "SKU-1001"],
             "read_stock serves SKU-1001 from the 06:00 cache (40 units) instead of the 640 on hand after receiving; "
             "the reorder quantity is sized on it and the WMS refuses the PO for bin capacity.", "read_stock", "tool", 2,
             "place_po", 4),
        Case("e-wh-prompt-carryover", "prompt_carryover", "context_pollution", ["SKU-1002", "SKU-1003"],
             "build_forecast_prompt puts the previous SKU's sales history (SKU-1002, ~2,300 a week) into SKU-1003's "
             "forecast prompt; the forecast and order balloon and the bin check rejects the PO.",
             "build_forecast_prompt", "other", 2, "place_po", 5),
        Case("e-wh-thousands-cut", "thousands_cut", "lossy_parse", ["SKU-1003", "SKU-1006"],
             "parse_forecast stops at the thousands separator of '6,720 units' and returns 6; SKU-1006 is ordered "
             "to zero and the planning guard refuses a PO that leaves under two weeks of cover.", "parse_forecast",
             "parse", 2, "place_po", 4),
        Case("e-wh-po-overwrite", "po_overwrite", "bad_state_write", ["SKU-1007", "SKU-1004"],
             "stage_po_line writes SKU-1004's line under SKU-1007's key in the run state; assemble_po reads SKU-1007 "
             "with SKU-1004's quantity and the WMS refuses the overfilled bin.", "stage_po_line", "state", 2,
             "place_po", 2),
    ],
)

AGENTS = [ADMISSIONS, CUSTOMS, WAREHOUSE]
