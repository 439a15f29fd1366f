"""Lost property office: match a claim to the found-items register and release the item (recording SDK)."""
from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path

import trajdebug

from .common import Case
from .kit import active
from .llmclient import ask, client_for, last_user

AGENT = "lost-property-clerk"
ROUTE = "sdk"

CLAIMS = {
    "C-5521": {"category": "umbrella", "colour": "navy", "feature": "duck-head handle", "lost_on": "2026-11-03", "route": "14", "claimant": "Omar Haddad", "release_on": "2026-11-25"},
    "C-5580": {"category": "backpack", "colour": "green", "feature": "embroidered fox patch", "lost_on": "2026-11-06", "route": "7", "claimant": "Ines Vallabh", "release_on": "2026-11-24"},
    "C-5602": {"category": "scarf", "colour": "red", "feature": "tartan fringe", "lost_on": "2026-11-09", "route": "22", "claimant": "Pavel Ruiz", "release_on": "2026-11-23"},
    "C-5617": {"category": "glasses case", "colour": "brown", "feature": "initials K.T. stamped", "lost_on": "2026-11-01", "route": "3", "claimant": "Kemi Tanaka", "release_on": "2026-11-18"},
    "C-5633": {"category": "umbrella", "colour": "yellow", "feature": "bamboo handle", "lost_on": "2026-11-12", "route": "14", "claimant": "Ruth Obi", "release_on": "2026-11-26"},
    "C-5649": {"category": "backpack", "colour": "grey", "feature": "broken left zip", "lost_on": "2026-11-10", "route": "9", "claimant": "Tom Achebe", "release_on": "2026-11-27"},
}
FINDERS = ["Dana Price", "Luis Ferro", "Ana Kovac", "Jin Park"]


def register(cid: str) -> list[dict]:
    c = CLAIMS[cid]
    n = int(cid[2:])
    found = date.fromisoformat(c["lost_on"]).replace(day=int(c["lost_on"][-2:]) + 1).isoformat()
    others = [("black", "plain handle"), ("navy", "cracked ferrule"), (c["colour"], "no distinguishing marks")]
    items = []
    for k, (colour, feat) in enumerate(others):
        items.append({"item_id": f"LP-{n - 300 + 7 * k}", "category": c["category"], "colour": colour, "features": feat,
                      "found_on": found, "route": c["route"], "depot": "Central", "finder": FINDERS[k]})
    match = {"item_id": f"LP-{n - 280}", "category": c["category"], "colour": c["colour"], "features": c["feature"],
             "found_on": found, "route": c["route"], "depot": "Central", "finder": FINDERS[3]}
    items.insert(1, match)
    return items


def true_item(cid: str) -> str:
    return register(cid)[1]["item_id"]


def policy(request):
    prompt = last_user(request)
    if prompt.startswith("Extract"):
        cid = re.search(r"claim (C-\d+)", prompt).group(1)
        c = CLAIMS[cid]
        return json.dumps({k: c[k] for k in ("category", "colour", "feature", "lost_on", "route", "claimant")})
    if prompt.startswith("Score"):
        claim = json.loads(prompt.split("CLAIM:", 1)[1].split("ITEM:", 1)[0])
        seen = prompt.split("ITEM:", 1)[1]
        score = 0.1
        if claim["colour"] in seen:
            score += 0.3
        if claim["feature"] in seen:
            score += 0.55
        return f"score: {score:.2f}"
    return "OK"


class ReleaseRefused(Exception):
    pass


@trajdebug.step(kind="llm")
def extract_claim_details(client, form: str) -> str:
    return ask(client, "You read lost property claim forms and answer JSON.", "Extract the claim fields from this form.\n" + form)


@trajdebug.step(kind="parse")
def parse_claim_json(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="retrieval")
def search_found_register(category: str, route: str, lost_on: str, cid: str) -> list[str]:
    return [it["item_id"] for it in register(cid) if it["category"] == category and it["route"] == route and it["found_on"] >= lost_on]


@trajdebug.step(kind="tool")
def fetch_item_record(item_id: str, cid: str) -> dict:
    rec = dict(next(it for it in register(cid) if it["item_id"] == item_id))
    if item_id == true_item(cid):
        rec["depot"] = "Central"
        if active("lost-01"):
            rec["depot"] = "Northgate"  # read from the overnight register snapshot, before the transfer
        if active("lost-04"):
            try:
                raise TimeoutError("photo-notes service timed out after 5.0 s")
            except TimeoutError:
                rec["features"], rec["colour"] = "", ""
    return rec


@trajdebug.step(kind="llm")
def score_match(client, claim: dict, item_text: str) -> str:
    return ask(client, "You compare a claim with a found item.", f"Score the match.\nCLAIM:{json.dumps(claim)}\nITEM:{item_text}")


@trajdebug.step(kind="state")
def record_candidate_score(item_id: str, reply: str) -> dict:
    scores = trajdebug.current_run().state.setdefault("scores", {})
    scores[item_id] = float(reply.split(":")[1])
    return dict(scores)


@trajdebug.step(kind="condition")
def pick_best_match(scores: dict) -> str:
    best = None
    for item_id, score in scores.items():  # the most recently found item wins a tie
        if best is None or score >= scores[best]:
            best = item_id
    return best


@trajdebug.step(kind="tool")
def verify_owner_identity(name: str, document: str) -> dict:
    return {"verified": True, "name": name, "document": document, "reference": f"V-{sum(map(ord, name)) % 9000 + 1000}"}


@trajdebug.step
def compute_storage_fee(found_on: str, release_on: str) -> dict:
    days = (date.fromisoformat(release_on) - date.fromisoformat(found_on)).days
    if active("lost-02"):
        days += 1
    return {"days_held": days, "fee_gbp": round(min(days * 0.5, 15.0), 2)}


@trajdebug.step(kind="tool")
def take_payment(fee: dict, item: dict, release_on: str) -> dict:
    days = (date.fromisoformat(release_on) - date.fromisoformat(item["found_on"])).days
    due = round(min(days * 0.5, 15.0), 2)
    if fee["fee_gbp"] != due:
        raise ReleaseRefused(f"402 Payment Required: fee {fee['fee_gbp']:.2f} GBP presented, tariff gives {due:.2f} GBP for item {item['item_id']} held {days} days")
    return {"paid_gbp": due, "terminal": "T-OFFICE-2", "auth": f"A{days:03d}{int(due * 100):05d}"}


@trajdebug.step(kind="tool")
def release_item(claim: dict, item: dict, identity: dict, fee: dict, release_on: str) -> dict:
    truth = next(it for it in register(claim["cid"]) if it["item_id"] == item["item_id"])
    if identity["name"] != claim["claimant"]:
        raise ReleaseRefused(f"403 Forbidden: ID check {identity['reference']} is for '{identity['name']}', claim {claim['cid']} is made by '{claim['claimant']}'")
    if claim["feature"] not in truth["features"] or truth["colour"] != claim["colour"]:
        raise ReleaseRefused(f"409 Conflict: item {truth['item_id']} ({truth['colour']}, {truth['features']}) does not carry the claimed feature '{claim['feature']}'")
    if item["depot"] != truth["depot"]:
        raise ReleaseRefused(f"404 Not Found: item {truth['item_id']} is not held at depot {item['depot'].upper()} (transferred to {truth['depot'].upper()} on 2026-11-20)")
    return {"released": truth["item_id"], "receipt": f"R-{truth['item_id']}-{release_on}"}


def record(cid: str, path: Path, server) -> None:
    server.use(policy)
    client = client_for(server)
    c = CLAIMS[cid]
    form = (f"Lost property claim {cid}. I lost my {c['colour']} {c['category']} ({c['feature']}) on route {c['route']} "
            f"on {c['lost_on']}. Claimant: {c['claimant']}, passport P{cid[2:]}88.")
    try:
        with trajdebug.run(AGENT, task=f"resolve lost property claim {cid}", path=str(path)):
            with trajdebug.step("claim_form", kind="input") as s:
                s.output = {"claim": cid, "form": form}
            claim = parse_claim_json(extract_claim_details(client, form))
            claim["cid"] = cid
            ids = search_found_register(claim["category"], claim["route"], claim["lost_on"], cid)
            records = {}
            previous = ""
            for item_id in ids:
                rec = fetch_item_record(item_id, cid)
                records[item_id] = rec
                own = text = f"{rec['colour']} {rec['category']}; features: {rec['features'] or 'n/a'}; found {rec['found_on']}"
                if active("lost-05") and previous:
                    text = text + " | " + previous  # the notes buffer is not cleared between candidates
                reply = score_match(client, {k: claim[k] for k in ("category", "colour", "feature")}, text)
                record_candidate_score(item_id, reply)
                previous = own
            best = pick_best_match(trajdebug.current_run().state["scores"])
            item = records[best]
            fee = compute_storage_fee(item["found_on"], c["release_on"])
            take_payment(fee, item, c["release_on"])
            who = item["finder"] if active("lost-03") else claim["claimant"]
            identity = verify_owner_identity(who, f"passport P{cid[2:]}88")
            release_item(claim, item, identity, fee, c["release_on"])
    except ReleaseRefused:
        pass


REF_INPUTS = ["C-5602", "C-5617", "C-5633", "C-5649"]
CASES = [
    Case("lost-01", "stale_data", "C-5521", ("fetch_item_record", 2), ("release_item", 1),
         "The item record is served from the overnight register snapshot, giving the depot it left before the transfer."),
    Case("lost-02", "off_by_one", "C-5580", ("compute_storage_fee", 1), ("take_payment", 1),
         "The storage fee counts the day of release as an extra day held."),
    Case("lost-03", "wrong_tool_args", "C-5521", ("verify_owner_identity", 1), ("release_item", 1),
         "The identity check is called with the finder's name instead of the claimant's."),
    Case("lost-04", "swallowed_error", "C-5580", ("fetch_item_record", 2), ("release_item", 1),
         "A timeout reading the matching item's notes is caught and the record goes on with empty colour and features."),
    Case("lost-05", "context_pollution", "C-5521", ("score_match", 3), ("release_item", 1),
         "The scoring prompt for the third candidate still carries the previous candidate's description."),
]
