"""Shared business logic of the suite's agents: inputs, the scripted model, the per-step computations.

Every agent runs the same kind of job (a batch of items priced or measured, checked by a sub-agent, totalled,
routed and validated), each in its own business words and through its own recording route. A case's switch is
read at exactly one place: `Agent.hit(point, index)` at the step named by the case.
"""
from __future__ import annotations

import datetime as _dt
import json
import random
import re
import zlib

import kit


_CLIENT = None


def fast_client():
    """One shared HTTP client with TCP_NODELAY (small requests to the local model server go out at once)."""
    global _CLIENT
    if _CLIENT is None:
        import socket

        import httpx
        _CLIENT = httpx.Client(transport=httpx.HTTPTransport(
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]))
    return _CLIENT


class ValidationFailed(Exception):
    """Raised by an agent's validator when its final product breaks the business's rules."""


class Agent:
    def __init__(self, *, name, route, domain, module, v, unit, qty_unit, currency, factor, band, names, seed,
                 cases, approval, standard, cap_noun, items=5, qty_ranges=((3, 40), (1100, 2900))):
        self.name, self.route, self.domain, self.module = name, route, domain, module
        self.v = v                      # step names in the business's words
        self.unit, self.qty_unit, self.currency = unit, qty_unit, currency
        self.factor = factor            # source amount -> ledger amount
        self.band = band                # plausible ledger rate per unit (lo, hi)
        self.names, self.seed, self.n_items = names, seed, items
        self.cases = cases              # list of dicts: id, kind, point, index, mutation, root, failure, description
        self.approval, self.standard, self.cap_noun = approval, standard, cap_noun
        self.qty_ranges = qty_ranges
        for i, c in enumerate(cases):
            c["input"] = i

    # ---- switches -------------------------------------------------------------------------------------
    def hit(self, point: str, index: int = 0) -> str | None:
        for c in self.cases:
            if c["point"] == point and c.get("index", 0) == index and kit.on(c["id"]):
                return c["mutation"]
        return None

    # ---- inputs ---------------------------------------------------------------------------------------
    def inputs(self) -> list[dict]:
        """Inputs 0-4 are the cases' inputs (case i runs input i); 5-8 are the reference inputs."""
        out = []
        for i in range(9):
            rng = random.Random(self.seed * 100 + i)
            picked = rng.sample(self.names, self.n_items)
            items = []
            for j, nm in enumerate(picked):
                qty = rng.choice([rng.randint(lo, hi) for lo, hi in self.qty_ranges])
                if any(c.get("big_qty") and c.get("input") == i and c.get("index") == j for c in self.cases):
                    qty = rng.randint(1100, 2900)
                slug = re.sub(r"[^A-Z]", "", nm.upper())[:3] or "ITM"
                items.append({"id": f"{slug}-{100 + i * 10 + j}", "name": nm, "qty": qty})
            date = (_dt.date(2026, 1, 5) + _dt.timedelta(days=7 * i)).isoformat()
            expect = sum(it["qty"] * self.rate(it["id"]) * self.factor for it in items)
            over = any(c.get("over_cap") and c.get("input") == i for c in self.cases) or i == 6
            cap = round(expect * (0.8 if over else 1.35), -1)
            flag = items[(i + 2) % len(items)]["id"]
            out.append({"ref": f"{self.v['ref_prefix']}-{2600 + i}", "date": date, "cap": cap, "flag": flag,
                        "items": items})
        return out

    def rate(self, item_id: str) -> float:
        lo, hi = self.band
        h = zlib.crc32(item_id.encode()) % 1000 / 1000.0
        return round((lo + (hi - lo) * (0.15 + 0.7 * h)) / self.factor, 2)

    @staticmethod
    def fmt_qty(q) -> str:
        return f"{q:,}"

    def note_for(self, item) -> str:
        return f"{item['name']}: {self.fmt_qty(item['qty'])} {self.qty_unit} requested for this {self.unit}"

    # ---- the scripted model (Chat Completions) ---------------------------------------------------------
    def chat_brain(self, request):
        msgs = request.body["messages"]
        role = msgs[0]["content"].split(":", 1)[1].strip() if msgs[0]["role"] == "system" else ""
        payload = json.loads(msgs[-1]["content"])
        return self.answer(role, payload)

    def answer(self, role: str, p: dict) -> str:
        if role == "plan":
            ids = [it["id"] for it in sorted(p["items"], key=lambda it: -it["qty"])]
            if self.hit("plan") == "drop_one":
                ids = ids[:1] + ids[2:]
            return json.dumps({"order": ids, "reason": f"largest {self.qty_unit} first"})
        if role == "estimate":
            idx = p["position"]
            item = p["item"]
            m = re.search(r": ([\d,]+) ", p["note"])
            qty_text = m.group(1)
            key, ident = "qty", item
            mut = self.hit("estimate", idx)
            if mut == "previous_note" and p.get("history"):
                qty_text = re.search(r": ([\d,]+) ", p["history"][-1]).group(1)
            elif mut == "neighbour_id":
                ident = p["neighbour"]
            elif mut == "renamed_key":
                key = "quantity"
            elif mut == "invented_qty":
                qty_text = self.fmt_qty(int(qty_text.replace(",", "")) * 2 + 7)
            return json.dumps({"id": ident, key: qty_text, "unit": self.qty_unit})
        if role == "resolve":
            target = p["flag"]
            if self.hit("resolve") == "similar_name":
                others = [i for i in p["ids"] if i != target]
                target = others[0]
            return json.dumps({"id": target})
        if role == "summarise":
            rec = p["record"]
            checked = rec["checked"]
            mut = self.hit("summarise")
            if mut == "invented_date" and checked:
                checked = (_dt.date.fromisoformat(checked) + _dt.timedelta(days=3)).isoformat()
            elif mut == "date_format" and checked:
                checked = _dt.date.fromisoformat(checked).strftime("%d/%m/%Y")
            return json.dumps({"id": rec["id"], "status": "clear" if not rec["hold"] else "hold", "checked": checked})
        if role == "note":
            total = p["total"]
            if self.hit("note") == "invented_total":
                total = round(total * 1.1 + 35, 2)
            if self.hit("note") == "currency_first":
                return f"{p['ref']}: {p['lines']} lines, total {self.currency} {total:.2f}, channel {p['channel']}."
            return (f"{p['ref']}: {p['lines']} lines, total {total:.2f} {self.currency}, "
                    f"channel {p['channel']}.")
        raise ValueError(f"no script for role {role!r}")

    # ---- tools and code steps --------------------------------------------------------------------------
    def catalogue(self, inp) -> dict:
        recs = [{"id": it["id"], "name": it["name"], "rate": self.rate(it["id"]), "as_of": inp["date"]}
                for it in inp["items"]]
        for j in range(len(recs)):
            mut = self.hit("catalogue", j)
            if mut == "neighbour_record":
                alt = dict(recs[(j + 1) % len(recs)])
                recs[j] = {**alt, "name": recs[j]["name"]}
            elif mut == "page_limit":
                recs = recs[: len(recs) - 1]
                break
            elif mut == "cached_copy":
                old = (_dt.date.fromisoformat(inp["date"]) - _dt.timedelta(days=14)).isoformat()
                recs = [{**r, "as_of": old} for r in recs]
                break
        return {"records": recs, "count": len(recs)}

    def lookup_rate(self, cat: dict, item: dict) -> dict:
        for r in cat["records"]:
            if r["name"] == item["name"]:
                return r
        return {"id": item["id"], "name": item["name"], "rate": 0.0,
                "as_of": cat["records"][0]["as_of"] if cat["records"] else None}

    def parse_plan(self, text: str) -> list:
        order = json.loads(text)["order"]
        if self.hit("parse_plan") == "skip_last":
            return order[: len(order) - 1] if len(order) > 1 else order
        return list(order)

    def parse_estimate(self, text: str, idx: int) -> dict:
        d = json.loads(text)
        raw = str(d.get("qty", "1"))
        mut = self.hit("parse_estimate", idx)
        if mut == "first_group":
            qty = int(raw.split(",")[0])
        else:
            qty = int(raw.replace(",", ""))
        if mut == "inclusive":
            qty += 1
        return {"id": d["id"], "qty": qty}

    def quote(self, item_id: str, qty: int, idx: int) -> dict:
        mut = self.hit("quote", idx)
        rate = self.rate(item_id)
        if mut == "ignores_qty":
            return {"id": item_id, "qty": qty, "source_amount": round(rate, 2)}
        if mut == "swallow":
            try:
                raise TimeoutError("upstream pricing service timed out")
            except TimeoutError:
                return {"id": item_id, "qty": qty, "source_amount": 0.0}
        return {"id": item_id, "qty": qty, "source_amount": round(rate * qty, 2)}

    def convert(self, q: dict, idx: int) -> dict:
        factor = self.factor
        if self.hit("convert", idx) == "units":
            factor = self.factor * 100 if self.factor < 1 else self.factor / 100
        return {**q, "amount": round(q["source_amount"] * factor, 2)}

    def line(self, item_id: str, rec: dict, conv: dict) -> dict:
        return {"item": item_id, "catalogue_id": rec["id"], "quoted_id": conv["id"], "qty": conv["qty"],
                "rate": rec["rate"],
                "amount": conv["amount"], "as_of": rec["as_of"]}

    def hold_record(self, inp, item_id: str) -> dict:
        checked = inp["date"]
        mut = self.hit("hold")
        if mut == "ignores_id":
            item_id = inp["items"][0]["id"]
        elif mut == "cached_copy":
            checked = (_dt.date.fromisoformat(checked) - _dt.timedelta(days=14)).isoformat()
        elif mut == "cut_text":
            return {"id": item_id, "hold": zlib.crc32(item_id.encode()) % 5 == 0, "checked": checked[:7]}
        elif mut == "swallow":
            try:
                raise TimeoutError("records service timed out")
            except TimeoutError:
                return {"id": item_id, "hold": False, "checked": None}
        return {"id": item_id, "hold": zlib.crc32(item_id.encode()) % 5 == 0, "checked": checked}

    def store_cap(self, cap: float) -> float:
        if self.hit("cap") == "minor_units":
            return cap * 100
        return cap

    def total(self, lines: list) -> float:
        if self.hit("total") == "minor_units":
            return round(sum(round(l["amount"] * 100) for l in lines), 2)
        return round(sum(l["amount"] for l in lines), 2)

    def channel(self, total: float, cap: float) -> str:
        over = total > cap
        if self.hit("route") == "flip":
            over = total > cap * 1.3
        return self.approval if over else self.standard

    def validate(self, inp, lines, check, total, channel, note) -> dict:
        """The business's rules. Raises ValidationFailed when the final product is inconsistent."""
        items = {it["id"]: it for it in inp["items"]}
        seen = [l["item"] for l in lines]
        if sorted(seen) != sorted(items):
            missing = sorted(set(items) - set(seen))
            raise ValidationFailed(f"{self.v['ref_prefix']} {inp['ref']}: {len(seen)} lines for {len(items)} "
                                   f"{self.unit}s, missing {missing}")
        lo, hi = self.band
        for l in lines:
            it = items[l["item"]]
            if l["catalogue_id"] != l["item"]:
                raise ValidationFailed(f"line {l['item']} is priced from catalogue entry {l['catalogue_id']}")
            if l["quoted_id"] != l["item"]:
                raise ValidationFailed(f"line {l['item']} carries the quote for {l['quoted_id']}")
            if l["as_of"] != inp["date"]:
                raise ValidationFailed(f"line {l['item']} uses rates dated {l['as_of']}, job date is {inp['date']}")
            if l["qty"] != it["qty"]:
                raise ValidationFailed(f"line {l['item']} has {l['qty']} {self.qty_unit}, request says {it['qty']}")
            unit_rate = l["amount"] / l["qty"] if l["qty"] else 0.0
            if not (lo <= unit_rate <= hi):
                raise ValidationFailed(f"line {l['item']}: {unit_rate:.2f} {self.currency} per {self.qty_unit} "
                                       f"is outside {lo}-{hi}")
            if abs(l["amount"] - l["qty"] * l["rate"] * self.factor) > 0.05 + 0.001 * l["amount"]:
                raise ValidationFailed(f"line {l['item']}: amount {l['amount']} does not equal qty x rate")
        if check["id"] != inp["flag"]:
            raise ValidationFailed(f"{self.v['check_noun']} covers {check['id']}, flagged item is {inp['flag']}")
        if check.get("checked") != inp["date"]:
            raise ValidationFailed(f"{self.v['check_noun']} for {check['id']} is dated {check.get('checked')}, "
                                   f"job date is {inp['date']}")
        if abs(total - sum(l["amount"] for l in lines)) > 0.01:
            raise ValidationFailed("total does not match its lines")
        want = self.approval if total > inp["cap"] else self.standard
        if channel != want:
            raise ValidationFailed(f"total {total:.2f} against {self.cap_noun} {inp['cap']:.2f} needs channel "
                                   f"{want}, got {channel}")
        m = re.search(r"total ([\d.]+)", note)
        if not m or abs(float(m.group(1)) - total) > 0.01:
            raise ValidationFailed(f"summary states total {m.group(1) if m else None}, ledger total is {total:.2f}")
        return {"ref": inp["ref"], "ok": True, "lines": len(lines), "total": total, "channel": channel}
