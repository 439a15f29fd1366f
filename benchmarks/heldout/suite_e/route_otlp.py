"""Route 3: plain-Python agents on the `openai` client, instrumented with openinference-instrumentation-openai,
with their own OpenInference spans for tools and code; spans kept by an in-memory exporter and written as OTLP/JSON."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common import Agent, Case, append_otlp
from fakellm import ScriptedModel, say, text_of
from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


FAULT: str | None = None
_STATE: dict[str, Any] = {}


def on(name: str) -> bool:
    return FAULT == name


def _setup() -> dict[str, Any]:
    if not _STATE:
        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "suite-e-agents", "deployment.environment": "bench"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        server = ScriptedModel().__enter__()
        _STATE.update(exporter=exporter, provider=provider, tracer=provider.get_tracer("suite_e.agents"), server=server,
                      client=OpenAI(base_url=server.base_url, api_key="sk-suite-e-placeholder", max_retries=0, timeout=20))
    return _STATE


def _dump(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


@contextlib.contextmanager
def span(name: str, kind: str, inputs: Any) -> Iterator[Any]:
    attrs = {"openinference.span.kind": kind, "input.value": _dump(inputs),
             "input.mime_type": "text/plain" if isinstance(inputs, str) else "application/json"}
    if kind == "TOOL":
        attrs["tool.name"] = name
    with _STATE["tracer"].start_as_current_span(name, attributes=attrs) as sp:
        yield sp


def step(name: str, kind: str, fn: Any, **inputs: Any) -> Any:
    with span(name, kind, inputs) as sp:
        out = fn(**inputs)
        sp.set_attribute("output.value", _dump(out))
        sp.set_attribute("output.mime_type", "text/plain" if isinstance(out, str) else "application/json")
        return out


def chat(system: str, user: str) -> str:
    resp = _STATE["client"].chat.completions.create(
        model="gpt-4o-mini", temperature=0,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}])
    return resp.choices[0].message.content


def traced_run(name: str, task: str, body: Any, brain: Any, fault: str | None, path: Path) -> None:
    global FAULT
    st = _setup()
    st["exporter"].clear()
    st["server"].brain = brain
    FAULT = fault
    try:
        with span(name, "AGENT", task) as root:
            root.set_attribute("agent.name", name)
            out = body()
            root.set_attribute("output.value", _dump(out))
    except (ValueError, RuntimeError):
        pass
    finally:
        FAULT = None
    st["provider"].force_flush()
    envelope = MessageToDict(encode_spans(st["exporter"].get_finished_spans()))
    append_otlp(path, envelope)


def user_text(body: dict) -> str:
    return text_of([m for m in body["messages"] if m["role"] == "user"][-1])


# =====================================================================================
# C1  Utility billing disputes: re-rate a disputed bill from meter reads, post an adjustment
# =====================================================================================

ACCOUNTS = {
    "4410-2291": {"rate_class": "R1", "invoices": {"2024-03": ("INV-88310", 141.06), "2024-02": ("INV-87102", 120.40)}},
    "4410-3307": {"rate_class": "R1", "invoices": {"2024-05": ("INV-90221", 98.77)}},
    "5520-0198": {"rate_class": "R2", "invoices": {"2024-03": ("INV-88577", 260.11)}},
    "5520-0412": {"rate_class": "R2", "invoices": {"2024-06": ("INV-91030", 318.52)}},
    "6630-7781": {"rate_class": "R1", "invoices": {"2024-04": ("INV-89412", 77.90)}},
    "6630-8002": {"rate_class": "R1", "invoices": {"2024-07": ("INV-92115", 133.10)}},
    "7740-1100": {"rate_class": "R2", "invoices": {"2024-08": ("INV-93007", 402.25)}},
    "7740-1250": {"rate_class": "R1", "invoices": {"2024-05": ("INV-90340", 180.35)}},
}
READS = {
    ("4410-2291", "2024-03"): (41872, 42655), ("4410-2291", "2024-02"): (41100, 41872),
    ("4410-3307", "2024-05"): (9050, 9560), ("5520-0198", "2024-03"): (120310, 121740),
    ("5520-0412", "2024-06"): (7800, 9630), ("6630-7781", "2024-04"): (33020, 33420),
    ("6630-8002", "2024-07"): (15990, 16770), ("7740-1100", "2024-08"): (204500, 206880),
    ("7740-1250", "2024-05"): (55870, 56910),
}
TARIFFS = {"R1": {"energy_per_kwh": 0.1432, "fixed_charge": 12.50}, "R2": {"energy_per_kwh": 0.1585, "fixed_charge": 18.00}}
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August"]


def fetch_meter_reads(account: str, period: str) -> str:
    start, end = READS[(account, period)]
    return f'read_date,reading_kwh\n{period}-01,"{start:,}"\n{period}-28,"{end:,}"\n'


def parse_meter_csv(csv_text: str) -> dict:
    rows = csv_text.strip().splitlines()[1:]
    values = []
    for row in rows:
        if on("csv_cut"):
            values.append(int(row.split(",")[1].strip('"')))  # naive split: stops at the thousands separator
        else:
            values.append(int(row.split(",", 1)[1].strip('"').replace(",", "")))
    return {"start_kwh": values[0], "end_kwh": values[-1]}


def tariff_lookup(rate_class: str, period: str) -> dict:
    t = dict(TARIFFS[rate_class])
    if on("tariff_cents"):
        t["energy_per_kwh"] = round(t["energy_per_kwh"] * 100, 2)  # the rates table is stored in cents
    return {"rate_class": rate_class, "period": period, **t, "currency": "USD"}


def recompute_bill(reads: dict, tariff: dict) -> dict:
    kwh = reads["end_kwh"] - reads["start_kwh"]
    return {"kwh": kwh, "amount": round(kwh * tariff["energy_per_kwh"] + tariff["fixed_charge"], 2)}


def post_adjustment(account: str, invoice: str, period: str, adjustment: float) -> dict:
    by_id = {inv: (p, amt) for p, (inv, amt) in ACCOUNTS[account]["invoices"].items()}
    inv_period, billed = by_id[invoice]
    if period != inv_period:
        raise RuntimeError(f"CIS rejected adjustment: {invoice} covers {inv_period}, the re-rate was run for {period}")
    if adjustment < 0:
        raise RuntimeError(f"CIS rejected adjustment on {invoice}: re-rated charges exceed the billed ${billed:.2f} "
                           f"by ${-adjustment:,.2f}; a dispute may only credit")
    if adjustment > 0.5 * billed:
        raise RuntimeError(f"CIS hold on {invoice}: a ${adjustment:,.2f} credit is {adjustment / billed:.0%} of the bill; "
                           "credits over half the bill need a field re-read first")
    return {"account": account, "invoice": invoice, "credit": adjustment, "status": "posted"}


def billing_brain(body: dict) -> Any:
    system, user = body["messages"][0]["content"], user_text(body)
    if system.startswith("Extract"):
        account = re.search(r"account (\d{4}-\d{4})", user).group(1)
        month = next(m for m in MONTHS if m in user)
        idx = MONTHS.index(month) + 1
        if on("period_slip"):
            idx -= 1
        invoice = re.search(r"invoice (INV-\d+)", user).group(1)
        return say(json.dumps({"account": account, "invoice": invoice, "period": f"2024-{idx:02d}"}))
    billed = float(re.search(r"billed \$(\d+\.\d+)", user).group(1))
    fair = json.loads(user.split("Re-rated:", 1)[1].strip().splitlines()[0])
    adj = round(billed - fair["amount"], 2)
    return say(json.dumps({"adjustment": adj, "letter": f"We re-read your meter ({fair['kwh']} kWh) and will credit ${adj:.2f}."
                           if adj >= 0 else f"Your re-rated bill is ${fair['amount']:.2f}."}))


def record_billing(inp: tuple, fault: str | None, path: Path) -> None:
    account, period = inp
    month = MONTHS[int(period[-2:]) - 1]
    invoice_id = ACCOUNTS[account]["invoices"][period][0]
    complaint = (f"Customer on account {account} disputes invoice {invoice_id}, the {month} 2024 bill: says the estimate "
                 "is far above what the meter shows.")

    def body() -> dict:
        ext = json.loads(chat("Extract the account number, invoice number and billing period (YYYY-MM) as JSON.", complaint))
        invoice = ext["invoice"]
        billed = next(amt for inv, amt in ACCOUNTS[ext["account"]]["invoices"].values() if inv == invoice)
        csv_text = step("fetch_meter_reads", "TOOL", fetch_meter_reads, account=ext["account"], period=ext["period"])
        reads = step("parse_meter_csv", "other", parse_meter_csv, csv_text=csv_text)
        tariff = step("tariff_lookup", "tool", tariff_lookup, rate_class=ACCOUNTS[account]["rate_class"], period=ext["period"])
        fair = step("recompute_bill", "CHAIN", recompute_bill, reads=reads, tariff=tariff)
        draft = json.loads(chat("Draft the dispute resolution. Reply JSON {adjustment, letter}.",
                                f"Invoice {invoice} billed ${billed:.2f}.\nRe-rated: {json.dumps(fair)}\n{complaint}"))
        return step("post_adjustment", "TOOL", post_adjustment, account=account, invoice=invoice, period=ext["period"],
                    adjustment=draft["adjustment"])

    traced_run("billing-dispute-agent", complaint, body, billing_brain, fault, path)


BILLING = Agent(
    "billing-dispute-agent", "otlp", "utility billing disputes", "json", record_billing,
    passing=[("4410-3307", "2024-05"), ("5520-0412", "2024-06"), ("6630-7781", "2024-04"), ("7740-1100", "2024-08"), ("7740-1250", "2024-05")],
    cases=[
        Case("e-bill-csv-thousands", "csv_cut", "lossy_parse", ("5520-0198", "2024-03"),
             "parse_meter_csv splits the row on every comma, so the quoted reading \"120,310\" becomes 120; the re-rated "
             "bill balloons past the billed amount and the CIS refuses a debit adjustment.",
             "parse_meter_csv", "other", '"start_kwh": 120,', "post_adjustment", 3),
        Case("e-bill-tariff-cents", "tariff_cents", "unit_error", ("6630-8002", "2024-07"),
             "tariff_lookup returns the R1 energy rate in cents (14.32) where dollars per kWh are expected; the re-rate and "
             "the drafted adjustment come out negative and the CIS rejects them.", "tariff_lookup", "tool", "14.32",
             "post_adjustment", 3),
        Case("e-bill-period-slip", "period_slip", "wrong_tool_args", ("4410-2291", "2024-03"),
             "The extraction model reads 'the March 2024 bill' as period 2024-02; February's reads are re-rated against the "
             "March invoice and the adjustment is rejected for the period mismatch.", "ChatCompletion", "llm", "2024-02",
             "post_adjustment", 4),
    ],
)


# =====================================================================================
# C2  Podcast production: show notes, chapters and sponsor reads, then publish
# =====================================================================================

EPISODES = {
    "EP-213": {"guest": "Dr. Amara Osei", "topic": "deep-sea mining", "month": "2024-08", "audio": "58:20",
               "segments": [("Cold open", "1:40"), ("Interview", "44:10"), ("Listener mail", "12:30")]},
    "EP-214": {"guest": "Lars Nyberg", "topic": "Nordic rail history", "month": "2024-09", "audio": "52:05",
               "segments": [("Cold open", "2:05"), ("Interview", "41:30"), ("Rapid fire", "8:30")]},
    "EP-215": {"guest": "Priscila Duarte", "topic": "urban heat islands", "month": "2024-09", "audio": "1:04:10",
               "segments": [("Cold open", "1:25"), ("Interview", "51:45"), ("Listener mail", "11:00")]},
    "EP-216": {"guest": "Kenji Watanabe", "topic": "the economics of ramen", "month": "2024-09", "audio": "1:12:00",
               "segments": [("Cold open", "2:00"), ("Interview", "1:02:45"), ("Outro", "7:15")]},
    "EP-217": {"guest": "Ines Carvalho", "topic": "cork forests", "month": "2024-10", "audio": "47:30",
               "segments": [("Cold open", "1:30"), ("Interview", "39:00"), ("Rapid fire", "7:00")]},
    "EP-218": {"guest": "Ruth Mwangi", "topic": "mobile money", "month": "2024-10", "audio": "55:45",
               "segments": [("Cold open", "1:45"), ("Interview", "46:00"), ("Listener mail", "8:00")]},
    "EP-219": {"guest": "Oskar Lind", "topic": "ice roads", "month": "2024-10", "audio": "1:08:30",
               "segments": [("Cold open", "2:30"), ("Interview", "1:00:00"), ("Outro", "6:00")]},
    "EP-220": {"guest": "Nadia Rahman", "topic": "textile recycling", "month": "2024-11", "audio": "50:00",
               "segments": [("Cold open", "2:00"), ("Interview", "40:00"), ("Rapid fire", "8:00")]},
    "EP-221": {"guest": "Felix Adler", "topic": "glacier archives", "month": "2024-11", "audio": "49:40",
               "segments": [("Cold open", "1:40"), ("Interview", "40:00"), ("Listener mail", "8:00")]},
}
SPONSORS = {"2024-08": ["Brightline VPN", "Harvest Box"], "2024-09": ["Quillpad Notebooks", "Harvest Box"],
            "2024-10": ["Tideway Coffee", "Quillpad Notebooks"], "2024-11": ["Northstar Bank", "Tideway Coffee"]}


def _seconds(mmss: str) -> int:
    parts = [int(p) for p in mmss.split(":")]
    if on("hours_dropped"):
        parts = parts[-2:]  # the timing helper only knows mm:ss
    total = 0
    for p in parts:
        total = total * 60 + p
    return total


def fetch_episode_brief(episode_id: str) -> dict:
    return {"episode_id": episode_id, **EPISODES[episode_id]}


def sponsor_calendar(month: str) -> dict:
    if on("stale_sponsors"):
        y, m = month.split("-")
        month_used = f"{y}-{int(m) - 1:02d}"  # cached calendar from the previous month
        return {"month": month, "active": SPONSORS[month_used], "fetched": "cache"}
    return {"month": month, "active": SPONSORS[month], "fetched": "live"}


def recall_show_memory(episode_id: str) -> dict:
    prev = f"EP-{int(episode_id[3:]) - 1}"
    e = EPISODES.get(prev, EPISODES["EP-213"])
    return {"previous_episode": prev, "guest": e["guest"], "style": "warm, curious, two-sentence summary"}


def build_notes_prompt(brief: dict, sponsors: dict, memory: dict) -> str:
    guest = memory["guest"] if on("memory_guest") else brief["guest"]
    return (f"Write show notes for {brief['episode_id']} about {brief['topic']}.\nGuest: {guest}\n"
            f"Style (from last episode): {memory['style']}\nActive sponsors: {', '.join(sponsors['active'])}\n"
            "Reply JSON {title, guest, sponsor, summary}.")


def compute_chapter_times(segments: list) -> dict:
    chapters, t = [], 0
    for title, dur in segments:
        chapters.append({"title": title, "start_s": t})
        t += _seconds(dur)
    return {"chapters": chapters, "total_s": t}


def format_show_notes(notes: dict, timing: dict) -> dict:
    lines = [f"{c['start_s'] // 60:02d}:{c['start_s'] % 60:02d} {c['title']}" for c in timing["chapters"]]
    return {"title": notes["title"], "guest": notes["guest"], "midroll_sponsor": notes["sponsor"],
            "body": notes["summary"] + "\n\nChapters:\n" + "\n".join(lines), "runtime_s": timing["total_s"]}


def publish_episode(episode_id: str, package: dict) -> dict:
    e = EPISODES[episode_id]
    if package["guest"] != e["guest"]:
        raise ValueError(f"Publish blocked for {episode_id}: notes credit {package['guest']}, booking sheet says {e['guest']}")
    if package["midroll_sponsor"] not in SPONSORS[e["month"]]:
        raise ValueError(f"Publish blocked: midroll sponsor {package['midroll_sponsor']} has no insertion order for {e['month']}")
    audio = sum(int(p) * 60 ** i for i, p in enumerate(reversed(e["audio"].split(":"))))
    if abs(audio - package["runtime_s"]) > 5:
        raise ValueError(f"Chapter markers run {package['runtime_s']} s but the mastered audio is {audio} s; the feed "
                         "validator rejects the chapter file")
    return {"episode_id": episode_id, "status": "scheduled"}


def podcast_brain(body: dict) -> Any:
    prompt = user_text(body)
    guest = re.search(r"Guest: (.+)", prompt).group(1)
    sponsor = re.search(r"Active sponsors: ([^,\n]+)", prompt).group(1)
    topic = re.search(r"about (.+)\.", prompt).group(1)
    return say(json.dumps({"title": f"{topic.title()} with {guest}", "guest": guest, "sponsor": sponsor,
                           "summary": f"{guest} joins us to talk about {topic}."}))


def record_podcast(episode_id: str, fault: str | None, path: Path) -> None:
    def body() -> dict:
        brief = step("fetch_episode_brief", "TOOL", fetch_episode_brief, episode_id=episode_id)
        sponsors = step("sponsor_calendar", "tool", sponsor_calendar, month=brief["month"])
        memory = step("recall_show_memory", "RETRIEVER", recall_show_memory, episode_id=episode_id)
        prompt = step("build_notes_prompt", "other", build_notes_prompt, brief=brief, sponsors=sponsors, memory=memory)
        notes = json.loads(chat("You write podcast show notes.", prompt))
        timing = step("compute_chapter_times", "other", compute_chapter_times, segments=brief["segments"])
        package = step("format_show_notes", "CHAIN", format_show_notes, notes=notes, timing=timing)
        return step("publish_episode", "TOOL", publish_episode, episode_id=episode_id, package=package)

    traced_run("episode-producer", f"produce {episode_id}", body, podcast_brain, fault, path)


PODCAST = Agent(
    "episode-producer", "otlp", "podcast production", "json", record_podcast,
    passing=["EP-213", "EP-219", "EP-217", "EP-218", "EP-221"],
    cases=[
        Case("e-pod-memory-guest", "memory_guest", "context_pollution", "EP-214",
             "build_notes_prompt takes the guest line from the recalled previous episode (Dr. Amara Osei) instead of the "
             "brief; the model writes the notes around her and publishing blocks the guest mismatch.",
             "build_notes_prompt", "other", "Amara Osei", "publish_episode", 3),
        Case("e-pod-hours-dropped", "hours_dropped", "lossy_parse", "EP-216",
             "compute_chapter_times reads the 1:02:45 interview as 02:45, dropping the hour; the chapter file built from it "
             "is an hour short of the mastered audio and the feed validator rejects it.",
             "compute_chapter_times", "other", '"total_s": 720', "publish_episode", 2),
        Case("e-pod-stale-sponsors", "stale_sponsors", "stale_data", "EP-215",
             "sponsor_calendar serves August's cached calendar for a September episode; the model gives the midroll to "
             "Brightline VPN, whose insertion order has lapsed, and publishing blocks it.", "sponsor_calendar", "tool", "cache",
             "publish_episode", 3),
    ],
)


# =====================================================================================
# C3  Energy trading desk: end-of-day booking of trader chat tickets (a loop), then a risk check
# =====================================================================================

TICKETS = {
    "T-101": "bought 25 MW PJM-W on-peak Oct-24 at 61.50, 16h x 22 days",
    "T-102": "sold 10 MW ERCOT-N on-peak Nov-24 at 48.25, 16h x 21 days",
    "T-103": "bought 5 MW NP15 off-peak Oct-24 at 39.80, 8h x 31 days",
    "T-104": "sold 20 MW PJM-W on-peak Dec-24 at 66.00, 16h x 21 days",
    "T-105": "bought 15 MW ERCOT-N on-peak Oct-24 at 45.10, 16h x 22 days",
    "T-106": "bought 8 MW NP15 on-peak Nov-24 at 52.75, 16h x 21 days",
    "T-107": "sold 12 MW PJM-W on-peak Nov-24 at 63.40, 16h x 21 days",
    "T-108": "bought 30 MW ERCOT-N on-peak Jan-25 at 71.00, 16h x 22 days",
    "T-109": "sold 6 MW NP15 off-peak Dec-24 at 41.20, 8h x 31 days",
}
CURVE = {("PJM-W", "Oct-24"): 62.10, ("PJM-W", "Nov-24"): 64.00, ("PJM-W", "Dec-24"): 66.80, ("ERCOT-N", "Oct-24"): 45.90,
         ("ERCOT-N", "Nov-24"): 47.60, ("ERCOT-N", "Jan-25"): 112.40, ("NP15", "Oct-24"): 40.30, ("NP15", "Nov-24"): 53.10,
         ("NP15", "Dec-24"): 40.70}
PROMPT_MONTH = "Oct-24"
HUB_LIMIT_MWH = 20000
STOP_LOSS = 75000


def normalize_ticket(ticket: dict) -> dict:
    on_peak_bug = on("days_dropped") and ticket["hours_per_day"] == 16  # on-peak strips taken as already totalled
    hours = ticket["hours_per_day"] * (1 if on_peak_bug else ticket["days"])
    return {**ticket, "mwh": ticket["mw"] * hours}


def forward_curve(hub: str, month: str) -> dict:
    used = PROMPT_MONTH if on("curve_prompt_month") else month
    return {"hub": hub, "month": month, "settle": CURVE[(hub, used)] if (hub, used) in CURVE else CURVE[(hub, month)]}


def mark_position(ticket: dict, curve: dict) -> dict:
    sign = 1 if ticket["side"] == "buy" else -1
    return {"ticket_id": ticket["ticket_id"], "hub": ticket["hub"], "mwh": sign * ticket["mwh"],
            "mtm": round(sign * (curve["settle"] - ticket["price"]) * ticket["mwh"], 2)}


BOOK: dict[str, list] = {}


def book_trade(position: dict, previous_hub: str | None) -> dict:
    hub = previous_hub if (on("book_prev_hub") and previous_hub) else position["hub"]
    BOOK.setdefault(hub, []).append({**position, "hub": hub})
    return {"ticket_id": position["ticket_id"], "booked_to": hub, "status": "booked"}


def aggregate_exposure(book: dict) -> dict:
    return {hub: {"net_mwh": sum(p["mwh"] for p in rows), "mtm": round(sum(p["mtm"] for p in rows), 2),
                  "tickets": sorted(p["ticket_id"] for p in rows)} for hub, rows in book.items()}


def risk_limit_check(exposure: dict, confirms: dict) -> dict:
    for hub, ex in exposure.items():
        for tid in ex["tickets"]:
            if confirms[tid]["hub"] != hub:
                raise RuntimeError(f"Broker confirm mismatch: {tid} confirms at {confirms[tid]['hub']} but the book carries it in {hub}")
        confirmed = sum(confirms[t]["signed_mwh"] for t in ex["tickets"])
        if confirmed != ex["net_mwh"]:
            raise RuntimeError(f"EOD recon break at {hub}: book net {ex['net_mwh']:,} MWh vs broker confirms {confirmed:,} MWh")
        if abs(ex["net_mwh"]) > HUB_LIMIT_MWH:
            raise RuntimeError(f"{hub} net position {ex['net_mwh']:,} MWh breaches the {HUB_LIMIT_MWH:,} MWh hub limit")
        if ex["mtm"] < -STOP_LOSS:
            raise RuntimeError(f"{hub} unrealised P&L {ex['mtm']:,.0f} USD is through the {STOP_LOSS:,} USD daily stop")
    return {"status": "within limits", "hubs": sorted(exposure)}


def energy_brain(body: dict) -> Any:
    text = user_text(body)
    m = re.search(r"(bought|sold) (\d+) MW (\S+) (on|off)-peak (\w{3}-\d\d) at ([\d.]+), (\d+)h x (\d+) days", text)
    side = "buy" if m.group(1) == "bought" else "sell"
    if on("side_flip") and "T-104" in text:
        side = "buy"
    return say(json.dumps({"side": side, "mw": int(m.group(2)), "hub": m.group(3), "month": m.group(5),
                           "price": float(m.group(6)), "hours_per_day": int(m.group(7)), "days": int(m.group(8))}))


def _confirm(tid: str) -> dict:
    m = re.search(r"(bought|sold) (\d+) MW (\S+) .* (\d+)h x (\d+) days", TICKETS[tid])
    mwh = int(m.group(2)) * int(m.group(4)) * int(m.group(5))
    return {"hub": m.group(3), "signed_mwh": mwh if m.group(1) == "bought" else -mwh}


def record_energy(ticket_ids: list, fault: str | None, path: Path) -> None:
    def body() -> dict:
        BOOK.clear()
        previous_hub = None
        for tid in ticket_ids:
            raw = json.loads(chat("Turn the trader's chat line into a ticket JSON {side, mw, hub, month, price, "
                                  "hours_per_day, days}.", f"{tid}: {TICKETS[tid]}"))
            ticket = step("normalize_ticket", "CHAIN", normalize_ticket, ticket={"ticket_id": tid, **raw})
            curve = step("forward_curve", "TOOL", forward_curve, hub=ticket["hub"], month=ticket["month"])
            pos = step("mark_position", "CHAIN", mark_position, ticket=ticket, curve=curve)
            step("book_trade", "TOOL", book_trade, position=pos, previous_hub=previous_hub)
            previous_hub = ticket["hub"]
        exposure = step("aggregate_exposure", "CHAIN", aggregate_exposure, book={k: list(v) for k, v in BOOK.items()})
        return step("risk_limit_check", "TOOL", risk_limit_check, exposure=exposure, confirms={t: _confirm(t) for t in ticket_ids})

    traced_run("power-desk-eod", f"book {', '.join(ticket_ids)}", body, energy_brain, fault, path)


ENERGY = Agent(
    "power-desk-eod", "otlp", "energy trading desk", "json", record_energy,
    passing=[["T-103", "T-105"], ["T-106", "T-109"], ["T-101", "T-107"], ["T-105", "T-103", "T-106"], ["T-109"]],
    cases=[
        Case("e-power-days-dropped", "days_dropped", "unit_error", ["T-103", "T-101"],
             "normalize_ticket multiplies an on-peak strip's MW by hours per day but not by the delivery days, so T-101 books "
             "400 MWh instead of 8,800; the end-of-day reconciliation against broker confirms breaks.",
             "normalize_ticket", "other", 2, "risk_limit_check", 4),
        Case("e-power-curve-month", "curve_prompt_month", "tool_ignores_arg", ["T-105", "T-108"],
             "forward_curve ignores the delivery month and returns the Oct-24 settle for T-108's Jan-25 ERCOT-N strip; "
             "the mark is deep underwater and the hub's P&L blows through the daily stop.",
             "forward_curve", "tool", 2, "risk_limit_check", 4),
        Case("e-power-book-prev-hub", "book_prev_hub", "bad_state_write", ["T-106", "T-104"],
             "book_trade files T-104 (PJM-W) under the previous ticket's hub NP15 in the desk book; aggregation and the "
             "risk check read the book and the broker confirm for T-104 does not match the hub it sits in.",
             "book_trade", "tool", 2, "risk_limit_check", 2),
        Case("e-power-side-flip", "side_flip", "wrong_tool_args", ["T-107", "T-104"],
             "The ticket-extraction model reads 'sold 20 MW PJM-W' as a buy; the signed volume flows through the mark and "
             "the book, and the reconciliation with the broker confirm breaks.",
             "ChatCompletion", "llm", 2, "risk_limit_check", 4),
    ],
)

AGENTS = [BILLING, PODCAST, ENERGY]
