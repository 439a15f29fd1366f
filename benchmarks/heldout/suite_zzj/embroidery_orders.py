"""Custom embroidery shop: turns an order e-mail into a priced, scheduled embroidery job (langgraph route).

Shape: a StateGraph: model reads the order + JSON parser -> normalisation -> stitch estimate tool -> a loop
matching each logo colour with a thread-catalogue retriever -> price list tool and pricing -> a production
sub-graph (hoop runs, a loop booking machine slots) -> quote -> model confirmation e-mail -> validator node.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import operator
import re
from typing import Annotated, TypedDict

import kit
from common import dumps, json_in, system_text, user_text
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer


NAME = "embroidery-order-desk"
ROUTE = "langgraph"
DOMAIN = "custom embroidery shop"
SHAPE = "graph: model reads order + parser -> normalise -> stitch tool -> per-colour thread retriever loop -> price tool -> production sub-graph (hoop runs, machine-slot loop) -> quote -> model e-mail -> validator"

THREADS = [
    ("Madeira 1043", "Navy", "#1C2841"),
    ("Madeira 1070", "Gold", "#C8A02A"),
    ("Madeira 1001", "White", "#FDFDFD"),
    ("Madeira 1147", "Flag Red", "#B0243A"),
    ("Madeira 1079", "Forest", "#1F5A33"),
    ("Madeira 1000", "Black", "#121212"),
    ("Madeira 1095", "Sky", "#5FA8E6"),
    ("Madeira 1078", "Orange", "#F08A2B"),
    ("Madeira 1122", "Purple", "#5A2C83"),
    ("Madeira 1011", "Steel Grey", "#888B8E"),
    ("Madeira 1158", "Chestnut", "#45291E"),
    ("Madeira 1024", "Goldenrod", "#2AA2C6"),
    ("Madeira 1134", "Teal", "#31561F"),
    ("Madeira 1181", "Rust", "#E9A95D"),
]
PRICES_2026 = {
    "season": "2026",
    "valid_from": "2026-01-01",
    "garments": {"performance polo": 14.90, "cotton polo": 11.50, "softshell jacket": 32.00, "hoodie": 21.00},
    "stitch_tiers": [[5000, 2.40], [10000, 3.60], [15000, 5.10], [99999, 6.90]],
    "setup_gbp": 30.0,
}
PRICES_2025 = {
    "season": "2025",
    "valid_from": "2025-01-01",
    "garments": {"performance polo": 13.80, "cotton polo": 10.90, "softshell jacket": 29.50, "hoodie": 19.50},
    "stitch_tiers": [[5000, 2.20], [10000, 3.40], [15000, 4.80], [99999, 6.50]],
    "setup_gbp": 25.0,
}
PLACEMENTS = {"left chest": (60, 100, 90), "full back": (200, 300, 250), "sleeve": (50, 80, 70)}
RUN_SIZE = 24
GARMENTS_PER_DAY = 60
ORDER_DATE = "2026-03-02"


def _email(ref, customer, garment, colour, sizes, logo, placement, width, colours, due):
    w = f", {width} mm wide" if width else ""
    return (
        f"Order ref: {ref}\nFrom: {customer}\nGarment: {garment}, {colour}\n"
        f"Sizes: {', '.join(f'{k} {v}' for k, v in sizes.items())}\n"
        f"Logo: '{logo}', {placement}{w}\nLogo colours: {', '.join(colours)}\nNeeded by: {due}"
    )


INPUTS = {
    "em5521": _email(
        "EM-5521",
        "Harbour Rowing Club",
        "performance polo",
        "navy",
        {"S": 10, "M": 20, "L": 15, "XL": 5},
        "HRC crest",
        "left chest",
        90,
        ["#C9A227", "#FFFFFF"],
        "2026-04-10",
    ),
    "em5522": _email(
        "EM-5522",
        "Bramley Dental",
        "cotton polo",
        "white",
        {"S": 6, "M": 12, "L": 8},
        "tooth mark",
        "left chest",
        80,
        ["#1F2A44", "#5DA9E9"],
        "2026-04-02",
    ),
    "em5523": _email(
        "EM-5523",
        "Kestrel Cycling",
        "softshell jacket",
        "black",
        {"M": 14, "L": 18, "XL": 6},
        "kestrel",
        "left chest",
        95,
        ["#F28C28", "#FFFFFF"],
        "2026-04-17",
    ),
    "em5524": _email(
        "EM-5524",
        "Oakfield Primary PTA",
        "hoodie",
        "purple",
        {"S": 15, "M": 25, "L": 12},
        "oak leaf",
        "left chest",
        85,
        ["#FFFFFF", "#C9A227"],
        "2026-04-24",
    ),
    "em5525": _email(
        "EM-5525",
        "Greenway Landscapes",
        "performance polo",
        "forest green",
        {"M": 18, "L": 22, "XL": 10},
        "greenway G",
        "left chest",
        None,
        ["#FFFFFF", "#111111"],
        "2026-04-15",
    ),
    "em5526": _email(
        "EM-5526",
        "Ridgeback Brewing",
        "hoodie",
        "black",
        {"M": 20, "L": 20, "XL": 8},
        "hop cone",
        "full back",
        260,
        ["#F28C28", "#1E5631", "#FFFFFF"],
        "2026-04-20",
    ),
    "em5527": _email(
        "EM-5527",
        "Northshore Sailing",
        "softshell jacket",
        "navy",
        {"S": 5, "M": 10, "L": 10},
        "burgee",
        "left chest",
        None,
        ["#B22234", "#FFFFFF"],
        "2026-04-08",
    ),
    "em5528": _email(
        "EM-5528",
        "Castle Veterinary",
        "cotton polo",
        "grey",
        {"S": 8, "M": 16, "L": 9, "XL": 3},
        "paw",
        "sleeve",
        70,
        ["#5B2A86", "#111111"],
        "2026-04-06",
    ),
    "em5529": _email(
        "EM-5529",
        "Millbrook Tennis",
        "performance polo",
        "white",
        {"S": 12, "M": 12, "L": 12},
        "crossed rackets",
        "left chest",
        75,
        ["#1E5631", "#8A8D8F"],
        "2026-04-21",
    ),
}
REFS = ["em5526", "em5527", "em5528", "em5529"]
CASES = [
    {
        "id": "embroidery_c1",
        "kind": "format_drift",
        "input": "em5521",
        "root": ("ChatOpenAI", 1),
        "failure": "validate_order",
        "description": "The order reader answers the logo width as the text '9 cm' instead of a number of millimetres, and the normaliser reads it as 9 mm.",
    },
    {
        "id": "embroidery_c2",
        "kind": "wrong_retrieval",
        "input": "em5522",
        "root": ("ThreadCatalogue", 1),
        "failure": "validate_order",
        "description": "The thread catalogue search compares colours with the channels read in reverse order, so navy #1F2A44 is matched to Chestnut (Madeira 1158).",
    },
    {
        "id": "embroidery_c3",
        "kind": "stale_data",
        "input": "em5523",
        "root": ("price_list", 1),
        "failure": "validate_order",
        "description": "The price list comes from the cache filled in 2025, so the jackets are priced on the 2025 season's list.",
    },
    {
        "id": "embroidery_c4",
        "kind": "off_by_one",
        "input": "em5524",
        "root": ("split_runs", 1),
        "failure": "validate_order",
        "description": "The hoop-run splitter steps through range(0, qty - 1, 24), so the 25 size-M hoodies become one run of 24 and one hoodie is never scheduled.",
    },
    {
        "id": "embroidery_c5",
        "kind": "hallucinated_value",
        "input": "em5525",
        "root": ("ChatOpenAI", 1),
        "failure": "validate_order",
        "description": "The e-mail gives no logo width; the order reader states 120 mm, a figure in neither the e-mail nor the placement standard (90 mm).",
    },
]


class OrderState(TypedDict, total=False):
    email: str
    raw: dict
    order: dict
    stitches: dict
    colour_index: int
    threads: Annotated[list, operator.add]
    prices: dict
    pricing: dict
    runs: list
    run_index: int
    slots: Annotated[list, operator.add]
    schedule: dict
    quote: dict
    confirmation: str
    verdict: dict


READ_SYSTEM = (
    "Read the embroidery order e-mail. Return only JSON with keys ref, customer, garment, garment_colour, "
    "sizes (size -> quantity), logo {name, placement, width_mm, colours}, due. width_mm is a number of "
    "millimetres; when the e-mail gives no width use the placement's standard width (left chest 90, full "
    "back 250, sleeve 70)."
)
CONFIRM_SYSTEM = "Write a short confirmation e-mail for the embroidery quote given as JSON. Plain text."


def brain(request):
    system = system_text(request)
    if system.startswith("Read the embroidery order"):
        text = user_text(request)
        field = lambda k: re.search(rf"^{k}: (.+)$", text, re.M).group(1).strip()  # noqa: E731
        garment, colour = [x.strip() for x in field("Garment").split(",", 1)]
        sizes = {k: int(v) for k, v in re.findall(r"(\w+) (\d+)", field("Sizes"))}
        logo_m = re.match(r"'(.+)', ([a-z ]+?)(?:, (\d+) mm wide)?$", field("Logo"))
        name, placement, width = logo_m.group(1), logo_m.group(2), logo_m.group(3)
        width_mm: object = int(width) if width else PLACEMENTS[placement][2]
        if kit.on("embroidery_c1"):
            width_mm = f"{int(width_mm) / 10:g} cm"
        if kit.on("embroidery_c5") and not width:
            width_mm = 120
        return json.dumps(
            {
                "ref": field("Order ref"),
                "customer": field("From"),
                "garment": garment,
                "garment_colour": colour,
                "sizes": sizes,
                "logo": {
                    "name": name,
                    "placement": placement,
                    "width_mm": width_mm,
                    "colours": [c.strip() for c in field("Logo colours").split(",")],
                },
                "due": field("Needed by"),
            }
        )
    if system.startswith("Write a short confirmation"):
        q = json_in(user_text(request))
        return (
            f"Dear {q['customer']},\n\nThank you for order {q['ref']}: {q['garments']} garments embroidered with "
            f"your logo, total {q['total_gbp']:.2f} GBP, ready on {q['ready']}.\n\nKind regards,\nThe stitching room"
        )
    return "{}"


def _rgb(hexcode: str) -> tuple[int, int, int]:
    h = hexcode.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def _dist(a: tuple, b: tuple) -> float:
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))


class ThreadCatalogue(BaseRetriever):
    """Nearest embroidery threads to a colour given as #RRGGBB."""

    k: int = 3

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        want = _rgb(query)
        if kit.on("embroidery_c2"):
            want = want[::-1]
        ranked = sorted(THREADS, key=lambda t: _dist(_rgb(t[2]), want))[: self.k]
        return [
            Document(page_content=f"{code} {name}", metadata={"code": code, "name": name, "hex": hx})
            for code, name, hx in ranked
        ]


@tool
def stitch_estimate(width_mm: float, colours: int) -> dict:
    """Stitch count estimate of a logo from the digitising service."""
    stitches = int(round(width_mm * width_mm * 1.05 + 400 * colours, -1))
    return {"width_mm": width_mm, "stitches": stitches, "colour_changes": colours}


@tool
def price_list(garment: str, max_age_days: int = 30) -> dict:
    """The shop's price list for a garment (read through the quote cache)."""
    table = PRICES_2025 if kit.on("embroidery_c3") else PRICES_2026
    return {
        "season": table["season"],
        "valid_from": table["valid_from"],
        "garment": garment,
        "garment_gbp": table["garments"][garment],
        "stitch_tiers": table["stitch_tiers"],
        "setup_gbp": table["setup_gbp"],
    }


@tool
def machine_slot(run_id: str, garments: int, after: str) -> dict:
    """Book the next free slot on a six-head machine for a hoop run."""
    n = int(run_id.rsplit("-", 1)[1])
    day = dt.date.fromisoformat(after) + dt.timedelta(days=1 + n // 2)
    return {"run": run_id, "machine": f"M{1 + n % 2}", "day": day.isoformat(), "garments": garments}


def build(llm):
    parser = JsonOutputParser()
    retriever = ThreadCatalogue()

    def read_order(s: OrderState) -> dict:
        msg = llm.invoke([SystemMessage(READ_SYSTEM), HumanMessage(s["email"])])
        return {"raw": parser.invoke(msg)}

    def normalise_order(s: OrderState) -> dict:
        raw = s["raw"]
        width = raw["logo"]["width_mm"]
        if not isinstance(width, (int, float)):
            width = float(re.findall(r"[\d.]+", str(width))[0])
        logo = {
            **raw["logo"],
            "width_mm": float(width),
            "colours": [c.upper() for c in raw["logo"]["colours"]],
        }
        sizes = {k: int(v) for k, v in raw["sizes"].items()}
        return {
            "order": {**raw, "logo": logo, "sizes": sizes, "garments": sum(sizes.values())},
            "colour_index": 0,
        }

    def digitise_logo(s: OrderState) -> dict:
        logo = s["order"]["logo"]
        return {
            "stitches": stitch_estimate.invoke(
                {"width_mm": logo["width_mm"], "colours": len(logo["colours"])}
            )
        }

    def match_thread(s: OrderState) -> dict:
        colour = s["order"]["logo"]["colours"][s["colour_index"]]
        best = retriever.invoke(colour)[0].metadata
        return {"threads": [{"colour": colour, **best}], "colour_index": s["colour_index"] + 1}

    def more_colours(s: OrderState) -> str:
        return "match_thread" if s["colour_index"] < len(s["order"]["logo"]["colours"]) else "price_order"

    def price_order(s: OrderState) -> dict:
        prices = price_list.invoke({"garment": s["order"]["garment"], "max_age_days": 30})
        st = s["stitches"]["stitches"]
        tier = next(p for limit, p in prices["stitch_tiers"] if st <= limit)
        unit = round(prices["garment_gbp"] + tier, 2)
        return {
            "prices": prices,
            "pricing": {"season": prices["season"], "unit_gbp": unit, "setup_gbp": prices["setup_gbp"]},
        }

    def split_runs(s: OrderState) -> dict:
        runs = []
        for size, qty in s["order"]["sizes"].items():
            top = qty - 1 if kit.on("embroidery_c4") else qty
            for start in range(0, top, RUN_SIZE):
                runs.append(
                    {
                        "run": f"{s['order']['ref']}-{len(runs)}",
                        "size": size,
                        "garments": min(RUN_SIZE, qty - start),
                    }
                )
        return {"runs": runs, "run_index": 0}

    def book_run(s: OrderState) -> dict:
        r = s["runs"][s["run_index"]]
        slot = machine_slot.invoke({"run_id": r["run"], "garments": r["garments"], "after": ORDER_DATE})
        return {"slots": [{**slot, "size": r["size"]}], "run_index": s["run_index"] + 1}

    def more_runs(s: OrderState) -> str:
        return "book_run" if s["run_index"] < len(s["runs"]) else "finish_schedule"

    def finish_schedule(s: OrderState) -> dict:
        last = max(x["day"] for x in s["slots"])
        return {
            "schedule": {
                "runs": len(s["slots"]),
                "garments": sum(x["garments"] for x in s["slots"]),
                "ready": last,
            }
        }

    sub = StateGraph(OrderState)
    sub.add_node("split_runs", split_runs)
    sub.add_node("book_run", book_run)
    sub.add_node("finish_schedule", finish_schedule)
    sub.add_edge(START, "split_runs")
    sub.add_edge("split_runs", "book_run")
    sub.add_conditional_edges("book_run", more_runs, ["book_run", "finish_schedule"])
    sub.add_edge("finish_schedule", END)
    production = sub.compile()

    def compose_quote(s: OrderState) -> dict:
        o, p = s["order"], s["pricing"]
        total = round(p["unit_gbp"] * o["garments"] + p["setup_gbp"], 2)
        return {
            "quote": {
                "ref": o["ref"],
                "customer": o["customer"],
                "garments": o["garments"],
                "unit_gbp": p["unit_gbp"],
                "setup_gbp": p["setup_gbp"],
                "season": p["season"],
                "total_gbp": total,
                "threads": [t["code"] for t in s["threads"]],
                "ready": s["schedule"]["ready"],
            }
        }

    def write_confirmation(s: OrderState) -> dict:
        msg = llm.invoke([SystemMessage(CONFIRM_SYSTEM), HumanMessage(dumps(s["quote"]))])
        return {"confirmation": msg.content}

    def validate_order(s: OrderState) -> dict:
        o, q = s["order"], s["quote"]
        lo, hi, _std = PLACEMENTS[o["logo"]["placement"]]
        w = o["logo"]["width_mm"]
        if not lo <= w <= hi:
            raise ValueError(f"{o['logo']['placement']} logo {w:g} mm wide is outside {lo}-{hi} mm")
        for t in s["threads"]:
            d = _dist(_rgb(t["colour"]), _rgb(t["hex"]))
            if d > 40:
                raise ValueError(
                    f"thread {t['code']} {t['name']} ({t['hex']}) is {d:.0f} away from logo colour {t['colour']}"
                )
        if s["schedule"]["garments"] != o["garments"]:
            raise ValueError(f"{s['schedule']['garments']} garments scheduled, {o['garments']} ordered")
        st = s["stitches"]["stitches"]
        tier = next(p for limit, p in PRICES_2026["stitch_tiers"] if st <= limit)
        unit = round(PRICES_2026["garments"][o["garment"]] + tier, 2)
        if abs(q["unit_gbp"] - unit) > 0.005:
            raise ValueError(
                f"unit price {q['unit_gbp']:.2f} GBP, the {PRICES_2026['season']} list gives {unit:.2f} GBP"
            )
        if q["ready"] > o["due"]:
            raise ValueError(f"ready {q['ready']}, needed by {o['due']}")
        return {"verdict": {"ref": o["ref"], "status": "confirmed"}}

    g = StateGraph(OrderState)
    for name, fn in [
        ("read_order", read_order),
        ("normalise_order", normalise_order),
        ("digitise_logo", digitise_logo),
        ("match_thread", match_thread),
        ("price_order", price_order),
        ("plan_production", production),
        ("compose_quote", compose_quote),
        ("write_confirmation", write_confirmation),
        ("validate_order", validate_order),
    ]:
        g.add_node(name, fn)
    g.add_edge(START, "read_order")
    g.add_edge("read_order", "normalise_order")
    g.add_edge("normalise_order", "digitise_logo")
    g.add_edge("digitise_logo", "match_thread")
    g.add_conditional_edges("match_thread", more_colours, ["match_thread", "price_order"])
    g.add_edge("price_order", "plan_production")
    g.add_edge("plan_production", "compose_quote")
    g.add_edge("compose_quote", "write_confirmation")
    g.add_edge("write_confirmation", "validate_order")
    g.add_edge("validate_order", END)
    return g.compile()


def record(server, inp: str, path: str) -> None:
    server.use(brain)
    llm = ChatOpenAI(
        base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0
    )
    ref = re.search(r"Order ref: (\S+)", inp).group(1)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"quote and schedule embroidery order {ref}")
    try:
        build(llm).invoke({"email": inp, "threads": [], "slots": []}, config={"callbacks": [tracer]})
    except ValueError:
        pass
