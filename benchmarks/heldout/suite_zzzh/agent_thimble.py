"""Thimble collectors' auction house: consignment intake -> per-lot appraisal loop -> catalogue publication (sdk)."""
from __future__ import annotations

import json
import re

import trajdebug
from openai import OpenAI

NAME = "thimble-lot-desk"
ROUTE = "sdk"
DOMAIN = "thimble collectors' auction house"
SHAPE = "intake model call + parse, then a loop over lots (provenance search, sale-band lookup with a retry, appraisal model call, estimate parser, ledger write in run.state), reserve pricing, catalogue publication tool that validates"
SWITCH = None

PROVENANCE = {
    "T-181": {"lot": "T-181", "maker": "Charles Horner", "era": "1890s", "material": "silver"},
    "T-118": {"lot": "T-118", "maker": "Meissen", "era": "1780s", "material": "porcelain"},
    "T-204": {"lot": "T-204", "maker": "Henry Griffith", "era": "1900s", "material": "silver"},
    "T-305": {"lot": "T-305", "maker": "Royal Worcester", "era": "1920s", "material": "porcelain"},
    "T-322": {"lot": "T-322", "maker": "Gabler", "era": "1930s", "material": "silver"},
    "T-410": {"lot": "T-410", "maker": "Simons Bros", "era": "1910s", "material": "gold"},
    "T-477": {"lot": "T-477", "maker": "James Fenton", "era": "1880s", "material": "silver"},
    "T-512": {"lot": "T-512", "maker": "Spode", "era": "1950s", "material": "porcelain"},
    "T-530": {"lot": "T-530", "maker": "Ketcham & McDougall", "era": "1900s", "material": "gold"},
    "T-611": {"lot": "T-611", "maker": "Caley", "era": "1970s", "material": "pewter"},
}
BANDS = {"silver": (800, 2600), "porcelain": (60, 400), "gold": (900, 3000), "pewter": (10, 60)}
ESTIMATES = {"T-181": "£1.2k–£1.8k", "T-118": "£150–£240", "T-204": "£0.9k–£1.4k", "T-305": "£90–£160",
             "T-322": "£1.1k–£1.6k", "T-410": "£1.5k–£2.2k", "T-477": "£1.3k–£2.0k", "T-512": "£70–£120",
             "T-530": "£1.4k–£2.4k", "T-611": "£18–£30"}

INPUTS = [
    {"consignor": "Edith Marlow", "text": "Consignment from Edith Marlow: lots T-181 (1890s), T-305 (1920s), T-611 (1970s)"},
    {"consignor": "Bram Oakes", "text": "Consignment from Bram Oakes: lots T-204 (1900s), T-410 (1910s), T-512 (1950s), T-322 (1930s)"},
    {"consignor": "Priya Sandhu", "text": "Consignment from Priya Sandhu: lots T-477 (1880s), T-118 (1780s)"},
    {"consignor": "Lou Fairweather", "text": "Consignment from Lou Fairweather: lots T-530 (1900s), T-181 (1890s), T-305 (1920s), T-611 (1970s), T-204 (1900s)"},
    {"consignor": "Mina Castell", "text": "Consignment from Mina Castell: lots T-322 (1930s), T-477 (1880s), T-410 (1910s)"},
]

CASES = [
    {"id": "zzzh-thimble-01", "input": 0, "switch": "provenance", "fault_kind": "wrong_retrieval",
     "root": "search_provenance", "root_occurrence": 1, "failure": "publish_catalogue",
     "description": "The provenance search for lot T-181 returned the record of lot T-118, a 1780s Meissen thimble, so the catalogue entry carried another object's era."},
    {"id": "zzzh-thimble-02", "input": 1, "switch": "thousands", "fault_kind": "unit_error",
     "root": "read_estimate", "root_occurrence": 1, "failure": "publish_catalogue",
     "description": "The estimate reader dropped the thousands suffix of '£0.9k–£1.4k' for lot T-204, recording 0.9 to 1.4 pounds instead of 900 to 1400."},
    {"id": "zzzh-thimble-03", "input": 3, "switch": "maker", "fault_kind": "hallucinated_value",
     "root": "appraise_lot", "root_occurrence": 2, "failure": "publish_catalogue",
     "description": "The appraisal for lot T-181 named the maker as Samuel Foskett, a name none of the provenance or sale records hold."},
    {"id": "zzzh-thimble-04", "input": 4, "switch": "ledger", "fault_kind": "bad_memory_write",
     "root": "record_lot", "root_occurrence": 3, "failure": "publish_catalogue", "same_output": True,
     "description": "The ledger write for lot T-410 was stored under the key of the previous lot T-477, overwriting T-477's entry, so the ledger held T-410's details under T-477 and nothing under T-410."},
    {"id": "zzzh-thimble-05", "input": 3, "switch": "band", "fault_kind": "swallowed_error",
     "root": "fetch_sale_band", "root_occurrence": 5, "failure": "publish_catalogue",
     "description": "The sale-band lookup for lot T-611 hit a registry timeout and answered an empty band of 0 to 0 pounds instead of raising, and the reserve was priced from it."},
]

_flaky = {"count": 0}


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    user = msgs[-1]["content"]
    if system.startswith("List the lots"):
        lots = re.findall(r"(T-\d+) \((\d{4}s)\)", user)
        return json.dumps({"lots": [{"lot": l, "era": e} for l, e in lots]})
    if system.startswith("Appraise"):
        data = json.loads(user)
        prov = data["provenance"]
        maker = prov["maker"]
        if SWITCH == "maker" and data["lot"] == "T-181":
            maker = "Samuel Foskett"
        return f"Lot {data['lot']}: {prov['material']} thimble by {maker}, {prov['era']}. Estimate: {ESTIMATES[prov['lot']]}"
    return "I can only help with the catalogue."


def _client(server):
    return OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


@trajdebug.step(kind="input")
def receive_consignment(text: str) -> dict:
    return {"text": text}


def _chat(client, model, messages):
    reply = client.chat.completions.create(model=model, messages=messages)
    return reply.choices[0].message.content


@trajdebug.step(kind="retrieval")
def search_provenance(lot: str) -> dict:
    if SWITCH == "provenance" and lot == "T-181":
        return dict(PROVENANCE["T-118"])
    return dict(PROVENANCE[lot])


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def fetch_sale_band(material: str, lot: str) -> dict:
    _flaky["count"] += 1
    if lot in ("T-305", "T-410") and _flaky["count"] % 2 == 1:
        raise ConnectionError("sale registry gateway did not answer")
    try:
        if lot == "T-611" and SWITCH == "band":
            raise TimeoutError("sale registry read timed out")
        low, high = BANDS[material]
        sales = 7
    except TimeoutError:
        low, high, sales = 0, 0, 0
    return {"lot": lot, "low": low, "high": high, "sales": sales}


@trajdebug.step(kind="parse")
def read_estimate(appraisal: str) -> dict:
    m = re.search(r"Estimate: £([\d.]+)(k?)–£([\d.]+)(k?)", appraisal)
    maker = re.search(r"thimble by (.+?), (\d{4}s)", appraisal)
    lo, hi = float(m.group(1)), float(m.group(3))
    if m.group(2) == "k" and not (SWITCH == "thousands" and "T-204" in appraisal):
        lo, hi = lo * 1000, hi * 1000
    return {"low": lo, "high": hi, "maker": maker.group(1), "era": maker.group(2)}


@trajdebug.step(kind="state")
def record_lot(lot: str, entry: dict, previous: str | None) -> None:
    key = f"lot:{lot}"
    if SWITCH == "ledger" and lot == "T-410" and previous:
        key = f"lot:{previous}"
    run = trajdebug.current_run()
    run.state[key] = entry
    run.state["lots"] = run.state.get("lots", []) + [lot]


@trajdebug.step(kind="other")
def price_reserves(lots: list) -> dict:
    run = trajdebug.current_run()
    out = {}
    for lot in lots:
        entry = run.state.get(f"lot:{lot}")
        if entry is None:
            continue
        band = entry["band"]
        reserve = round(max(entry["low"] * 0.6, band["low"] * 0.5))
        out[lot] = {**entry, "reserve": reserve}
    return out


@trajdebug.step(kind="tool")
def publish_catalogue(consignor: str, declared: list, priced: dict) -> dict:
    for item in declared:
        lot = item["lot"]
        if lot not in priced:
            raise ValueError(f"catalogue for {consignor}: lot {lot} is listed on the consignment but has no ledger entry")
        entry = priced[lot]
        if entry["era"] != item["era"]:
            raise ValueError(f"lot {lot}: catalogue era {entry['era']} does not match the consignor's {item['era']}")
        if entry["maker"] != entry["provenance_maker"]:
            raise ValueError(f"lot {lot}: maker '{entry['maker']}' is not the maker on the provenance record ({entry['provenance_maker']})")
        band = entry["band"]
        if band["sales"] == 0 or entry["reserve"] < 5:
            raise ValueError(f"lot {lot}: reserve £{entry['reserve']} has no comparable sales behind it")
        if not (band["low"] * 0.5 <= entry["low"] <= band["high"] * 1.5):
            raise ValueError(f"lot {lot}: estimate £{entry['low']:g}–£{entry['high']:g} is outside the sale band £{band['low']}–£{band['high']}")
    return {"consignor": consignor, "published": sorted(priced), "sale": "Spring 2027"}


def record(server, inp, path):
    client = _client(server)
    _flaky["count"] = 0

    @trajdebug.step(kind="llm")
    def list_lots(messages: list) -> str:
        return _chat(client, server.model, messages)

    @trajdebug.step(kind="llm")
    def appraise_lot(messages: list) -> str:
        return _chat(client, server.model, messages)

    with trajdebug.run(NAME, path=path, task=inp["text"]):
        ticket = receive_consignment(inp["text"])
        listing = list_lots([{"role": "system", "content": "List the lots in this consignment as JSON."},
                             {"role": "user", "content": ticket["text"]}])
        with trajdebug.step("read_lots", kind="parse", input=listing) as s:
            declared = json.loads(listing)["lots"]
            s.output = declared
        previous = None
        for item in declared:
            prov = search_provenance(item["lot"])
            band = fetch_sale_band(prov["material"], item["lot"])
            appraisal = appraise_lot([{"role": "system", "content": "Appraise the thimble from its provenance."},
                                      {"role": "user", "content": json.dumps({"lot": item["lot"], "provenance": prov})}])
            est = read_estimate(appraisal)
            record_lot(item["lot"], {**est, "band": band, "provenance_maker": prov["maker"]}, previous)
            previous = item["lot"]
        priced = price_reserves([d["lot"] for d in declared])
        publish_catalogue(inp["consignor"], declared, priced)
