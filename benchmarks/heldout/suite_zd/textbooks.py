"""Textbook buyback: price a student's box of textbooks and issue the payout (sdk)."""
from __future__ import annotations

import json
from pathlib import Path

import trajdebug

from .common import chat_json, last_user_json
from .kit import active

NAME = "textbook-buyback"
ROUTE = "sdk"
DOMAIN = "textbook buyback"
SHAPE = "box intake -> per book: normalize ISBN, catalog retrieval, price feed, LLM condition grade, offer memory -> edition-desk sub-agent per book -> total -> LLM payout note -> issue payout"

CATALOG = {
    "9780134685991": [{"isbn": "9780134685991", "title": "Effective Java", "edition": 3, "market": "US"},
                      {"isbn": "9780134685991", "title": "Effective Java", "edition": 3, "market": "INTL"}],
    "9780262046305": [{"isbn": "9780262046305", "title": "Introduction to Algorithms", "edition": 4, "market": "US"},
                      {"isbn": "9780262046305", "title": "Introduction to Algorithms", "edition": 4, "market": "INTL"}],
    "9781319244194": [{"isbn": "9781319244194", "title": "Lehninger Principles of Biochemistry", "edition": 8, "market": "US"},
                      {"isbn": "9781319244194", "title": "Lehninger Principles of Biochemistry", "edition": 8, "market": "INTL"}],
    "9780073383095": [{"isbn": "9780073383095", "title": "Calculus: Early Transcendentals", "edition": 2, "market": "US"},
                      {"isbn": "9780073383095", "title": "Calculus: Early Transcendentals", "edition": 2, "market": "INTL"}],
    "9780321982384": [{"isbn": "9780321982384", "title": "Campbell Biology", "edition": 11, "market": "US"},
                      {"isbn": "9780321982384", "title": "Campbell Biology", "edition": 11, "market": "INTL"}],
    "9781292401133": [{"isbn": "9781292401133", "title": "Microeconomics", "edition": 9, "market": "US"},
                      {"isbn": "9781292401133", "title": "Microeconomics", "edition": 9, "market": "INTL"}],
}
PRICES = {"9780134685991": 21.5, "9780262046305": 48.0, "9781319244194": 62.25, "9780073383095": 35.0,
          "9780321982384": 55.75, "9781292401133": 18.4}
OLD_PRICES = {k: round(v * 1.3, 2) for k, v in PRICES.items()}
CONDITION = {"9780134685991": "VG", "9780262046305": "G", "9781319244194": "LN", "9780073383095": "VG",
             "9780321982384": "A", "9781292401133": "G"}
FACTOR = {"LN": 1.0, "VG": 0.85, "G": 0.7, "A": 0.5}
LIST_ID = "2026-spring"

INPUTS = {
    "box_a": {"seller": "S-88120", "isbns": ["978-0-13-468599-1", "978-0-262-04630-5", "978-1-319-24419-4"]},
    "box_b": {"seller": "S-88131", "isbns": ["978 0 07 338309 5", "978-0-321-98238-4", "978-1-292-40113-3", "978-0-13-468599-1"]},
    "r1": {"seller": "S-87001", "isbns": ["978-0-262-04630-5", "978-0-321-98238-4"]},
    "r2": {"seller": "S-87002", "isbns": ["978-1-292-40113-3", "978-0-07-338309-5", "978-1-319-24419-4"]},
    "r3": {"seller": "S-87003", "isbns": ["978-0-13-468599-1"]},
    "r4": {"seller": "S-87004", "isbns": ["978-0-321-98238-4", "978-0-262-04630-5", "978-0-13-468599-1"]},
}
REFS = ["r1", "r2", "r3", "r4"]
CASES = [
    {"id": "zd_textbooks_price", "kind": "stale_data", "input": "box_a", "root": "price_feed", "occ": 1,
     "failure": "issue_payout", "description": "price_feed answers the first book from its cached autumn list, and the payout service refuses a line priced from a list that is no longer current."},
    {"id": "zd_textbooks_memory", "kind": "bad_memory_write", "input": "box_b", "root": "remember_offer", "occ": 3,
     "failure": "issue_payout", "description": "remember_offer files the third book's offer (and the fourth's) under the previous book's ISBN, overwriting it, so the payout has fewer lines than books received."},
    {"id": "zd_textbooks_catalog", "kind": "wrong_retrieval", "input": "box_a", "root": "catalog_search", "occ": 2,
     "failure": "issue_payout", "description": "catalog_search returns the international-market record for the second book, and the payout service refuses international editions."},
    {"id": "zd_textbooks_desk", "kind": "subagent_wrong_entity", "input": "box_b", "root": "read_brief", "occ": 2,
     "failure": "issue_payout", "description": "the edition desk sub-agent reads its brief and verifies the first book's ISBN instead of the second's, so the second payout line carries a verification for another book."},
    {"id": "zd_textbooks_grade", "kind": "format_drift", "input": "box_a", "root": "grade_condition", "occ": 3,
     "failure": "issue_payout", "description": "grade_condition answers the third book's condition as a spelled-out phrase instead of the two-letter code, and the payout service rejects the condition field."},
]


def policy(req):
    ask = last_user_json(req)
    if ask.get("ask") == "grade":
        code = CONDITION[ask["isbn"]]
        if active("zd_textbooks_grade") and ask["isbn"] == "9781319244194":
            return json.dumps({"isbn": ask["isbn"], "condition": "Like New", "notes": "light shelf wear"})
        return json.dumps({"isbn": ask["isbn"], "condition": code, "notes": "checked spine and pages"})
    if ask.get("ask") == "brief":
        isbn = ask["brief"]["isbn"]
        if active("zd_textbooks_desk") and ask["brief"]["line"] == 2:
            isbn = ask["brief"]["box"][0]
        return json.dumps({"verify_isbn": isbn})
    if ask.get("ask") == "payout_note":
        return json.dumps({"note": f"{len(ask['lines'])} books bought back, total {ask['total']:.2f} USD"})
    return json.dumps({})


@trajdebug.step(kind="parse")
def normalize_isbn(raw: str) -> str:
    return "".join(ch for ch in raw if ch.isdigit())


@trajdebug.step(kind="retrieval")
def catalog_search(isbn: str) -> dict:
    hits = CATALOG[isbn]
    if active("zd_textbooks_catalog") and isbn == "9780262046305":
        return dict(hits[1])
    return dict(hits[0])


@trajdebug.step(kind="tool")
def price_feed(isbn: str) -> dict:
    if active("zd_textbooks_price"):
        return {"isbn": isbn, "buyback_usd": OLD_PRICES[isbn], "list": "2025-fall", "source": "cache"}
    return {"isbn": isbn, "buyback_usd": PRICES[isbn], "list": LIST_ID, "source": "live"}


@trajdebug.step(kind="llm")
def grade_condition(base_url: str, record: dict) -> dict:
    return chat_json(base_url, "Grade the returned copy. Answer JSON with condition LN/VG/G/A.",
                     {"ask": "grade", "isbn": record["isbn"], "title": record["title"]})


@trajdebug.step(kind="state")
def remember_offer(isbn: str, offer: dict) -> None:
    st = trajdebug.current_run().state
    offers = st.setdefault("offers", {})
    key = isbn
    if active("zd_textbooks_memory") and len(offers) == 2:
        key = list(offers)[-1]
    offers[key] = offer


@trajdebug.step(kind="llm")
def read_brief(base_url: str, brief: dict) -> dict:
    return chat_json(base_url, "You are the edition desk. Say which ISBN to verify. Answer JSON.",
                     {"ask": "brief", "brief": brief})


@trajdebug.step(kind="tool")
def edition_registry(isbn: str) -> dict:
    rec = CATALOG[isbn][0]
    return {"isbn": isbn, "edition": rec["edition"], "current": True, "verification": f"ED-{isbn[-6:]}"}


@trajdebug.step(kind="agent")
def edition_desk(base_url: str, brief: dict) -> dict:
    target = read_brief(base_url, brief)
    return edition_registry(target["verify_isbn"])


@trajdebug.step(kind="other")
def total_offer(offers: dict) -> dict:
    return {"total": round(sum(o["amount"] for o in offers.values()), 2), "lines": len(offers)}


@trajdebug.step(kind="llm")
def payout_note(base_url: str, lines: list, total: dict) -> dict:
    return chat_json(base_url, "Write a one-line payout note. Answer JSON.",
                     {"ask": "payout_note", "lines": lines, "total": total["total"]})


@trajdebug.step(kind="tool")
def issue_payout(request: dict) -> dict:
    if len(request["lines"]) != request["books_received"]:
        raise RuntimeError(f"HTTP 422 payouts: {len(request['lines'])} lines for {request['books_received']} books received")
    for ln in request["lines"]:
        if ln["list"] != LIST_ID:
            raise RuntimeError(f"HTTP 409 payouts: line {ln['isbn']} priced from list {ln['list']}; current list is {LIST_ID}")
        if ln["market"] != "US":
            raise RuntimeError(f"HTTP 422 payouts: line {ln['isbn']} market {ln['market']} not eligible for buyback")
        if ln["condition"] not in FACTOR:
            raise RuntimeError(f"HTTP 400 payouts: lines[].condition must be one of LN, VG, G, A (got {ln['condition']!r})")
        if ln["verification"] != f"ED-{ln['isbn'][-6:]}":
            raise RuntimeError(f"HTTP 409 payouts: edition verification {ln['verification']} does not belong to {ln['isbn']}")
    return {"payout_id": "PO-" + request["seller"][2:], "status": "issued"}


def record(box: dict, path: Path, base_url: str) -> None:
    try:
        with trajdebug.run(NAME, task=f"buy back textbooks for seller {box['seller']}", path=str(path)) as run:
            with trajdebug.step("receive_box", kind="input") as s:
                s.output = dict(box)
            isbns = []
            for raw in box["isbns"]:
                isbn = normalize_isbn(raw)
                isbns.append(isbn)
                rec = catalog_search(isbn)
                price = price_feed(isbn)
                grade = grade_condition(base_url, rec)
                factor = FACTOR.get(grade["condition"], 0.0)
                remember_offer(isbn, {"isbn": isbn, "market": rec["market"], "list": price["list"],
                                      "condition": grade["condition"], "amount": round(price["buyback_usd"] * factor, 2)})
            offers = run.state["offers"]
            for i, isbn in enumerate(isbns, 1):
                ver = edition_desk(base_url, {"line": i, "isbn": isbn, "box": isbns})
                if isbn in offers:
                    offers[isbn]["verification"] = ver["verification"]
            lines = [dict(o) for o in offers.values()]
            total = total_offer(offers)
            payout_note(base_url, lines, total)
            issue_payout({"seller": box["seller"], "books_received": len(isbns), "lines": lines, "total": total["total"]})
    except RuntimeError:
        pass
