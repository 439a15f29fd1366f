"""Calligraphy commissions studio (recording SDK): guest list pages, rate quote, per-batch estimates, proof, invoice."""
from __future__ import annotations

import json
import re

import trajdebug
from openai import OpenAI

from .common import Case, last_user_json, policy
from .kit import active

NAME, ROUTE, DOMAIN = "calligraphy-commissions", "sdk", "calligraphy commissions"
SHAPE = "paged guest-list tool loop, parse, stock tool, LLM rate quote, per-batch LLM estimate + parse loop, schedule check, proof LLM, reserve + invoice APIs"

RATES = {"Copperplate": 4.5, "Italic": 3.0, "Uncial": 5.0}
FIRST = ["Ana", "Ben", "Cora", "Dev", "Eli", "Fay", "Gus", "Hal", "Ida", "Jo", "Kim", "Lev", "Mae", "Ned"]
LAST = ["Ruiz", "Park", "Lund", "Okafor", "Sato", "Weir"]
INPUTS = {
    "A": {"client": "Ana Ruiz", "count": 42, "script": "Copperplate", "card": "A6", "deadline": "2027-03-10", "stock": 60},
    "B": {"client": "Leo Brandt", "count": 27, "script": "Italic", "card": "A7", "deadline": "2027-04-02", "stock": 20},
    "R1": {"client": "Mia Costa", "count": 18, "script": "Uncial", "card": "A6", "deadline": "2027-05-01", "stock": 50},
    "R2": {"client": "Raj Patel", "count": 33, "script": "Copperplate", "card": "A7", "deadline": "2027-05-15", "stock": 45},
    "R3": {"client": "Zoe Klein", "count": 25, "script": "Italic", "card": "A6", "deadline": "2027-06-20", "stock": 60},
    "R4": {"client": "Tim Berg", "count": 32, "script": "Uncial", "card": "A7", "deadline": "2027-07-04", "stock": 10},
}
REFS = ["R1", "R2", "R3", "R4"]
PREVIOUS = {"client": "Hana Sato", "note": "Hana Sato asked for burgundy ink and a flourish under every surname."}

CASES = [
    Case("zm_callig_1", "truncated_result", "A", ("read_guest_page", 3, "tool"), ("reserve_cards", 1),
         "the third guest-list page comes back cut short, so fewer cards are reserved than the commission count", "callig.trunc"),
    Case("zm_callig_2", "swallowed_error", "B", ("check_card_stock", 1, "tool"), ("reserve_cards", 1),
         "the stock service error is swallowed and a default of 500 cards is assumed", "callig.swallow"),
    Case("zm_callig_3", "hallucinated_value", "A", ("quote_rate", 1, "llm"), ("issue_invoice", 1),
         "the model quotes a per-card rate that is not on the studio rate card", "callig.halluc"),
    Case("zm_callig_4", "format_drift", "B", ("estimate_batch", 2, "llm"), ("schedule_studio", 1),
         "the second batch estimate switches from decimal hours to an 'h m' string that the parser reads as whole hours", "callig.drift"),
    Case("zm_callig_5", "context_pollution", "A", ("recall_client_notes", 1, "state"), ("send_proof", 1),
         "notes from an earlier client are loaded into the proof context and the proof is addressed to that client", "callig.pollute"),
]


@policy("callig_rate")
def _rate(msgs):
    q = last_user_json(msgs)
    rate = q["rate_card"][q["script"]]
    if active("callig.halluc"):
        rate = 3.75
    return json.dumps({"script": q["script"], "per_card": rate, "currency": "EUR"})


@policy("callig_batch")
def _batch(msgs):
    q = last_user_json(msgs)
    hours = round(len(q["names"]) * 0.15, 2)
    if active("callig.drift") and q["batch"] == 2:
        return json.dumps({"batch": q["batch"], "hours": f"{int(hours)}h {round((hours % 1) * 60)}m"})
    return json.dumps({"batch": q["batch"], "hours": hours})


@policy("callig_proof")
def _proof(msgs):
    q = last_user_json(msgs)
    to = q["notes"][-1]["client"] if q["notes"] else q["client"]
    return json.dumps({"to": to, "text": f"Dear {to}, attached is a proof of {q['sample']} in {q['script']}."})


def _ask(client, desk, payload, name):
    msgs = [{"role": "system", "content": f"[desk:{desk}] You are the studio's commission assistant. Answer JSON."},
            {"role": "user", "content": json.dumps(payload)}]
    with trajdebug.step(name, kind="llm", input={"messages": msgs}) as s:
        r = client.chat.completions.create(model="studio-assist-2", messages=msgs)
        s.output = {"role": "assistant", "content": r.choices[0].message.content}
    return json.loads(s.output["content"])


def _guests(order):
    return [f"{FIRST[i % len(FIRST)]} {LAST[(i * 7) % len(LAST)]}" for i in range(order["count"])]


def record(key, out, base_url):
    client = OpenAI(base_url=base_url, api_key="local", max_retries=0)
    order = INPUTS[key]
    with trajdebug.run(NAME, path=str(out), task="fulfil a calligraphy commission") as run:
        with trajdebug.step("commission_form", kind="input") as f:
            f.output = dict(order)
        names, page = [], 1
        all_guests = _guests(order)
        while page:
            with trajdebug.step("read_guest_page", kind="tool", input={"page": page, "per_page": 15}) as g:
                chunk = all_guests[(page - 1) * 15: page * 15]
                if active("callig.trunc") and page == 3:
                    chunk = chunk[:4]
                more = page * 15 < len(all_guests)
                g.output = {"rows": [{"line": f"{i};{n}"} for i, n in enumerate(chunk)], "next_page": page + 1 if more else None}
            with trajdebug.step("parse_guest_rows", kind="parse", input=g.output) as pr:
                pr.output = [r["line"].split(";", 1)[1].strip() for r in g.output["rows"]]
            names += pr.output
            page = g.output["next_page"]
        with trajdebug.step("check_card_stock", kind="tool", input={"card": order["card"]}) as st:
            resp = {"error": "inventory service unavailable (503)"} if active("callig.swallow") else {"card": order["card"], "sheets": order["stock"]}
            st.output = {"available": resp.get("sheets", 500), "card": order["card"]}
        topped = 0
        if st.output["available"] < len(names):
            with trajdebug.step("order_card_topup", kind="tool", input={"card": order["card"], "qty": 50}) as tp:
                topped = 50
                tp.output = {"po": f"PO-{order['card']}-50", "arrives": "2 days"}
        with trajdebug.step("recall_client_notes", kind="state", input={"client": order["client"]}) as rc:
            notes = [dict(PREVIOUS)] if active("callig.pollute") else []
            run.state["client_notes"] = notes
            rc.output = {"notes": notes}
        rate = _ask(client, "callig_rate", {"script": order["script"], "rate_card": RATES}, "quote_rate")
        batches = [names[i:i + 10] for i in range(0, len(names), 10)]
        hours = []
        for b, chunk in enumerate(batches, 1):
            est = _ask(client, "callig_batch", {"batch": b, "names": chunk, "script": order["script"]}, "estimate_batch")
            with trajdebug.step("parse_estimate", kind="parse", input=est) as pe:
                h = est["hours"]
                if isinstance(h, str):
                    h = float(re.match(r"\d+", h).group(0))
                pe.output = {"batch": b, "hours": float(h)}
            hours.append(pe.output["hours"])
        with trajdebug.step("schedule_studio", kind="tool", input={"hours": hours, "cards": len(names), "deadline": order["deadline"]}) as sc:
            need = round(len(names) * 0.15, 2)
            if sum(hours) + 0.01 < need:
                raise RuntimeError(f"HTTP 400 studio-calendar: booked {round(sum(hours), 2)} h for {len(names)} cards; minimum is 9 min per card ({need} h)")
            sc.output = {"slot": f"{order['deadline']}-T09", "hours": round(sum(hours), 2)}
        with trajdebug.step("reserve_cards", kind="tool", input={"card": order["card"], "qty": len(names), "stock": st.output}) as rs:
            if len(names) != order["count"]:
                raise RuntimeError(f"HTTP 409 reservations: quantity {len(names)} does not match commission quantity {order['count']}")
            if order["count"] > order["stock"] + topped:
                raise RuntimeError(f"HTTP 409 reservations: insufficient {order['card']} cards: {order['stock'] + topped} in stock, {order['count']} requested")
            rs.output = {"reserved": len(names)}
        proof = _ask(client, "callig_proof", {"client": order["client"], "notes": run.state["client_notes"],
                                              "sample": names[0], "script": order["script"]}, "draft_proof")
        with trajdebug.step("send_proof", kind="tool", input=proof) as sp:
            if proof["to"] != order["client"]:
                raise RuntimeError(f"mailer rejected proof: addressee '{proof['to']}' is not the commission contact '{order['client']}'")
            sp.output = {"sent": True}
        with trajdebug.step("issue_invoice", kind="tool", input={"rate": rate, "qty": len(names)}) as inv:
            if rate["per_card"] != RATES[order["script"]]:
                raise RuntimeError(f"invoice validation: unit price {rate['per_card']} EUR differs from rate card {RATES[order['script']]} EUR for {order['script']}")
            inv.output = {"invoice": f"CAL-{key}-{len(names)}", "total": round(rate["per_card"] * len(names), 2)}
