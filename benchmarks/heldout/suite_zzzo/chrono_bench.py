"""Chronometer servicing shop: bench quote for a watch service (sdk route)."""
import json

from openai import OpenAI

import trajdebug

NAME, ROUTE, DOMAIN = "chrono-bench", "sdk", "chronometer servicing shop"
SHAPE = "intake, history retrieval, model diagnosis, parse, per-part price loop with a retried catalogue call, run.state fitting ledger, timing test, quote check"
SWITCH = None
_CLIENTS = {}

CATALOGUE = {"mainspring": 4200, "balance staff": 6800, "hairspring stud": 2900, "crown": 1800,
             "crystal": 2400, "pallet fork": 7600, "fourth wheel": 5100, "jewel set": 3900}
HISTORY = {"CH-101": [{"year": 2016, "work": "clean"}, {"year": 2024, "work": "overhaul"}],
           "CH-102": [{"year": 2023, "work": "overhaul"}],
           "CH-103": [{"year": 2022, "work": "overhaul"}],
           "CH-104": [{"year": 2025, "work": "overhaul"}],
           "CH-105": [{"year": 2024, "work": "overhaul"}]}
DIAG = {"losing 40 s/day": ["mainspring", "hairspring stud"],
        "stops when face up": ["balance staff", "jewel set", "crystal"],
        "gaining 25 s/day": ["hairspring stud", "pallet fork"],
        "crown slips": ["crown", "mainspring"],
        "runs 2 hours then stops": ["mainspring", "fourth wheel", "jewel set", "crown"]}
INPUTS = [
    {"ticket": "CH-101", "movement": "Hamilton 992B", "symptom": "losing 40 s/day", "ceiling_pence": 25000},
    {"ticket": "CH-102", "movement": "Omega 30T2", "symptom": "stops when face up", "ceiling_pence": 30000},
    {"ticket": "CH-103", "movement": "Longines 12.68Z", "symptom": "gaining 25 s/day", "ceiling_pence": 26000},
    {"ticket": "CH-104", "movement": "Elgin 571", "symptom": "crown slips", "ceiling_pence": 16000},
    {"ticket": "CH-105", "movement": "Zenith 135", "symptom": "runs 2 hours then stops", "ceiling_pence": 31000},
]
CASES = [
    {"id": "zzzo_c01", "input": 0, "switch": "pence", "fault_kind": "unit_error",
     "root": ("part_price", 3, "tool"), "failure": ("check_quote", 1),
     "description": "The catalogue price for the hairspring stud came back in pounds and was taken as pence, so the quote fell under the parts floor."},
    {"id": "zzzo_c02", "input": 4, "switch": "split", "fault_kind": "lossy_parsing",
     "root": ("read_diagnosis", 1, "parse"), "failure": ("timing_test", 1),
     "description": "Reading the diagnosis kept only the first three parts, so the crown was never fitted and the timing test failed."},
    {"id": "zzzo_c03", "input": 1, "switch": "diag", "fault_kind": "hallucinated_value",
     "root": ("diagnose", 1, "llm"), "failure": ("part_price", 3),
     "description": "The diagnosis named a part, a 'balance cock spring', that no catalogue for the movement has."},
    {"id": "zzzo_c04", "input": 3, "switch": "cache", "fault_kind": "stale_data",
     "root": ("service_history", 1, "retrieval"), "failure": ("check_quote", 1),
     "description": "Service history came from an old cached copy ending in 2016, so a full overhaul was charged and the quote exceeded the customer's ceiling."},
    {"id": "zzzo_c05", "input": 2, "switch": "ledger", "fault_kind": "bad_memory_write",
     "root": ("record_fitting", 2, "state"), "failure": ("timing_test", 1),
     "description": "Recording the pallet fork replaced the fitting list instead of adding to it, so the hairspring stud dropped out before the timing test."},
]
_attempts = {}


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    data = json.loads(prompt.split("\n", 1)[1])
    parts = DIAG[data["symptom"]]
    if SWITCH == "diag":
        parts = parts[:2] + ["balance cock spring"]
    return json.dumps({"parts": ", ".join(parts), "note": f"{data['movement']}: service advised"})


@trajdebug.step(kind="input")
def receive_ticket(ticket: dict) -> dict:
    return dict(ticket)


@trajdebug.step(kind="retrieval")
def service_history(ticket_no: str) -> list:
    if SWITCH == "cache":
        return [{"year": 2016, "work": "clean"}]
    return list(HISTORY[ticket_no])


@trajdebug.step(kind="llm")
def diagnose(client: OpenAI, model: str, ticket: dict) -> str:
    msg = "Diagnose this movement and list the parts to replace.\n" + json.dumps(
        {"movement": ticket["movement"], "symptom": ticket["symptom"]})
    r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": msg}])
    return r.choices[0].message.content


@trajdebug.step(kind="parse")
def read_diagnosis(text: str) -> list:
    parts = [p.strip() for p in json.loads(text)["parts"].split(",")]
    if SWITCH == "split":
        parts = parts[:3]
    return parts


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def part_price(part: str, ticket_no: str) -> dict:
    key = (ticket_no, part)
    _attempts[key] = _attempts.get(key, 0) + 1
    if part == "mainspring" and _attempts[key] == 1:
        raise ConnectionError("catalogue server reset the connection")
    pence = CATALOGUE[part]
    if SWITCH == "pence" and part == "hairspring stud":
        return {"part": part, "price": pence / 100}
    return {"part": part, "price": pence}


@trajdebug.step(kind="state")
def record_fitting(part: str, price: dict) -> None:
    st = trajdebug.current_run().state
    fitted = list(st.get("fitted", []))
    if SWITCH == "ledger" and part == "pallet fork":
        fitted = []
    fitted.append(part)
    st["fitted"] = fitted
    st["parts_pence"] = st.get("parts_pence", 0) + int(price["price"])


@trajdebug.step(kind="tool")
def labour_estimate(history: list) -> int:
    last = max(h["year"] for h in history if h["work"] == "overhaul") if any(
        h["work"] == "overhaul" for h in history) else 0
    return 18000 if 2026 - last > 5 else 9500


@trajdebug.step(kind="tool")
def timing_test(needed: list) -> dict:
    fitted = trajdebug.current_run().state["fitted"]
    missing = [p for p in needed if p not in fitted]
    rate = 3 + 12 * len(missing)
    if rate > 6:
        raise RuntimeError(f"rate {rate:+d} s/day on the timing machine, tolerance is +/-6 s/day")
    return {"rate_s_per_day": rate, "positions": 5}


@trajdebug.step(kind="condition")
def check_quote(ticket: dict, labour: int, parts_count: int) -> dict:
    parts = trajdebug.current_run().state["parts_pence"]
    total = parts + labour
    if parts < 2500 * parts_count:
        raise ValueError(f"parts at {parts} pence for {parts_count} parts is under the catalogue floor")
    if total > ticket["ceiling_pence"]:
        raise ValueError(f"quote {total} pence is over the customer's ceiling of {ticket['ceiling_pence']} pence")
    return {"total_pence": total, "labour_pence": labour, "parts_pence": parts}


@trajdebug.step(kind="output")
def send_quote(ticket: dict, quote: dict) -> str:
    return f"{ticket['ticket']}: service quote {quote['total_pence'] / 100:.2f} GBP"


def record(inp, server, path):
    _attempts.clear()
    if server.base_url not in _CLIENTS:
        _CLIENTS[server.base_url] = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    client = _CLIENTS[server.base_url]
    try:
        with trajdebug.run(NAME, task=f"service quote {inp['ticket']}", path=path):
            t = receive_ticket(inp)
            hist = service_history(t["ticket"])
            parts = read_diagnosis(diagnose(client, server.model, t))
            needed = DIAG[t["symptom"]]
            for p in parts:
                record_fitting(p, part_price(p, t["ticket"]))
            labour = labour_estimate(hist)
            timing_test(needed)
            q = check_quote(t, labour, len(parts))
            send_quote(t, q)
    except (RuntimeError, ValueError, KeyError):
        pass
