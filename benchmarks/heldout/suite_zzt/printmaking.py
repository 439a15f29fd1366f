"""Printmaking studio limited editions: plan and price an edition (openai_agents route, Responses API)."""
import asyncio
import json

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

import common
import kit
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME, ROUTE, DOMAIN = "printmaking-editions", "openai_agents", "a printmaking studio's limited editions"
SHAPE = "Agent + Runner (Responses API), 4 turns: artist + plate -> ink mix per colourway + framing sub-agent (agent as tool: frame quote) -> paper, register, price -> validate tool"

ARTISTS = {"Mara Quist": {"artist_id": "A-04", "split": 0.5}, "Tobias Renn": {"artist_id": "A-09", "split": 0.55},
           "Ines Calloway": {"artist_id": "A-12", "split": 0.5}, "Dov Harrak": {"artist_id": "A-15", "split": 0.6},
           "Sunniva Berg": {"artist_id": "A-21", "split": 0.5}}
PLATES = {"P-101": {"w_cm": 30, "h_cm": 40, "medium": "etching"}, "P-102": {"w_cm": 45, "h_cm": 60, "medium": "linocut"},
          "P-103": {"w_cm": 20, "h_cm": 25, "medium": "drypoint"}, "P-104": {"w_cm": 38, "h_cm": 50, "medium": "etching"},
          "P-105": {"w_cm": 25, "h_cm": 35, "medium": "aquatint"}, "P-106": {"w_cm": 50, "h_cm": 70, "medium": "woodcut"},
          "P-107": {"w_cm": 28, "h_cm": 28, "medium": "mezzotint"}, "P-108": {"w_cm": 40, "h_cm": 30, "medium": "linocut"},
          "P-109": {"w_cm": 32, "h_cm": 44, "medium": "etching"}}
PAPER = {"somerset 300gsm": 140, "hahnemuhle 350gsm": 400, "arches 88": 60, "fabriano 250gsm": 90}
REGISTER = [{"plate": f"P-0{n:02d}", "edition": "closed"} for n in range(40, 62)] + [{"plate": "P-104", "edition": "2025 edition of 20"}]
INKS = ["sepia", "prussian blue", "carbon black", "burnt umber", "viridian", "madder red"]


def _i(cid, artist, title, plate, paper, prints, aps, colours, band):
    return {"id": cid, "artist": artist, "title": title, "plate": plate, "paper": paper, "prints": prints, "aps": aps,
            "colours": colours, "band": band}


INPUTS = {
    "print-1": _i("print-1", "Mara Quist", "Heron at Dusk", "P-101", "arches 88", 40, 4, ["sepia", "prussian blue"], [150, 260]),
    "print-2": _i("print-2", "Tobias Renn", "Quarry Light", "P-102", "somerset 300gsm", 30, 3,
                  ["carbon black", "burnt umber", "viridian"], [200, 380]),
    "print-3": _i("print-3", "Ines Calloway", "Salt Marsh II", "P-103", "fabriano 250gsm", 25, 2, ["sepia"], [90, 180]),
    "print-4": _i("print-4", "Dov Harrak", "Night Ferry", "P-104", "somerset 300gsm", 20, 2, ["carbon black", "prussian blue"], [180, 320]),
    "print-5": _i("print-5", "Sunniva Berg", "Birch Study", "P-105", "hahnemuhle 350gsm", 35, 3, ["madder red", "viridian"], [120, 240]),
}
REFS = [_i("print-r1", "Mara Quist", "Tidal Clock", "P-106", "hahnemuhle 350gsm", 15, 2, ["carbon black", "madder red"], [300, 520]),
        _i("print-r2", "Tobias Renn", "Kiln Yard", "P-107", "somerset 300gsm", 50, 5, ["burnt umber"], [80, 160]),
        _i("print-r3", "Ines Calloway", "Estuary", "P-108", "arches 88", 30, 3, ["prussian blue", "viridian", "sepia"], [140, 260]),
        _i("print-r4", "Dov Harrak", "Low Tide", "P-109", "fabriano 250gsm", 25, 2, ["carbon black"], [160, 300])]

CASES = [
    dict(id="print-1", switch="print_paper", kind="tool_ignores_argument", root=("paper_stock", 1),
         failure=("validate_edition", 1),
         description="The paper stock tool ignores the paper it is asked about and answers with the house paper's stock."),
    dict(id="print-2", switch="print_sheets", kind="wrong_tool_args", root=("response", 5),
         failure=("validate_edition", 1),
         description="The model asks the paper stock tool for the print count only, leaving the artist's proofs and trial proofs out of the sheets."),
    dict(id="print-3", switch="print_pence", kind="unit_error", root=("price_edition", 1),
         failure=("validate_edition", 1),
         description="The pricing tool answers the print price in pence while the edition sheet takes it as pounds."),
    dict(id="print-4", switch="print_register", kind="truncated_result", root=("edition_register", 1),
         failure=("validate_edition", 1),
         description="The edition register returns only its first page, so the plate's earlier edition is not seen."),
    dict(id="print-5", switch="print_frame", kind="hallucinated_value", root=("response", 4),
         failure=("validate_edition", 1),
         description="The framing sub-agent recommends a frame size that none of the frame quotes it received holds."),
]


@function_tool
def find_artist(name: str) -> dict:
    """The artist's record and royalty split."""
    return dict(ARTISTS[name], name=name)


@function_tool
def ink_mix(colour: str) -> dict:
    """Ink recipe for one colourway."""
    return {"colour": colour, "base": "oil", "tins": 2 if colour in ("carbon black", "sepia") else 1}


@function_tool
def get_plate(plate_id: str) -> dict:
    """Plate size and medium."""
    return dict(PLATES[plate_id], plate=plate_id)


@function_tool
def paper_stock(paper: str, sheets: int) -> dict:
    """Sheets of a paper in stock."""
    p = "hahnemuhle 350gsm" if kit.on("print_paper") else paper
    return {"paper": paper, "in_stock": PAPER[p], "needed": sheets}


@function_tool
def edition_register(plate_id: str) -> dict:
    """Past editions in the studio register."""
    rows = REGISTER[:20] if kit.on("print_register") else REGISTER
    return {"plate": plate_id, "entries": rows, "count": len(rows)}


@function_tool
def frame_quote(w_cm: int, h_cm: int) -> dict:
    """Frame sizes and prices for a plate with a 6 cm mount."""
    return {"options": [{"frame": f"{w_cm + 12} x {h_cm + 12} cm oak", "price": 85},
                        {"frame": f"{w_cm + 16} x {h_cm + 16} cm ash", "price": 98}]}


@function_tool
def price_edition(plate_cost: float, paper_cost: float, prints: int, band_low: int, band_high: int) -> dict:
    """Retail price per print within the artist's band."""
    price = max(band_low, min(band_high, round((plate_cost + paper_cost) / prints * 6)))
    return {"price_each": price * 100 if kit.on("print_pence") else price, "currency": "GBP"}


@function_tool(failure_error_function=None)
def validate_edition(sheet: str) -> dict:
    """Check the edition sheet against the studio's rules."""
    s = json.loads(sheet)
    if s["paper_in_stock"] != PAPER[s["paper"]]:
        raise ValueError(f"{s['paper']} stock given as {s['paper_in_stock']} sheets, the paper ledger holds {PAPER[s['paper']]}")
    if s["sheets_needed"] < s["prints"] + s["aps"] + 3:
        raise ValueError(f"{s['sheets_needed']} sheets reserved for {s['prints']} prints, {s['aps']} proofs and 3 trial proofs")
    if s["paper_in_stock"] < s["sheets_needed"]:
        raise ValueError(f"{s['sheets_needed']} sheets of {s['paper']} needed, {s['paper_in_stock']} in stock")
    missing = [c for c in s["colours"] if c not in s["inks"]]
    if missing:
        raise ValueError(f"no ink mix for colourway {missing}")
    if any(r["plate"] == s["plate"] for r in REGISTER) and not s["plate_editioned_before"]:
        raise ValueError(f"plate {s['plate']} already has an edition in the register")
    if not s["band"][0] <= s["price_each"] <= s["band"][1]:
        raise ValueError(f"price {s['price_each']} GBP outside the artist's band {s['band']}")
    fw, fh = (int(x) for x in s["frame"].split(" cm")[0].split(" x "))
    if fw < s["plate_w"] + 12 or fh < s["plate_h"] + 12:
        raise ValueError(f"frame {s['frame']} too small for a {s['plate_w']} x {s['plate_h']} cm plate with mount")
    return {"approved": True}


def brain(inp):
    def answer(request):
        outs = common.oa_outputs(request)
        got = {}
        for n, o in outs:
            got.setdefault(n, []).append(o)
        if "framing" in common.oa_instructions(request):
            if "frame_quote" not in got:
                p = json.loads(common.oa_user_text(request))
                return Reply(tool_calls=(tool_call("frame_quote", {"w_cm": p["w_cm"], "h_cm": p["h_cm"]}),))
            opt = got["frame_quote"][0]["options"][0]
            if kit.on("print_frame"):
                opt = {"frame": "30 x 40 cm oak", "price": 85}
            return json.dumps(opt)
        if "find_artist" not in got:
            return Reply(tool_calls=(tool_call("find_artist", {"name": inp["artist"]}),
                                     tool_call("get_plate", {"plate_id": inp["plate"]})))
        plate = got["get_plate"][0]
        if "ink_mix" not in got:
            return Reply(tool_calls=tuple(tool_call("ink_mix", {"colour": c}) for c in inp["colours"]) + (
                tool_call("framing_advisor", {"input": json.dumps({"w_cm": plate["w_cm"], "h_cm": plate["h_cm"]})}),))
        if "paper_stock" not in got:
            sheets = inp["prints"] if kit.on("print_sheets") else inp["prints"] + inp["aps"] + 3
            return Reply(tool_calls=(tool_call("paper_stock", {"paper": inp["paper"], "sheets": sheets}),
                                     tool_call("edition_register", {"plate_id": inp["plate"]}),
                                     tool_call("price_edition", {"plate_cost": 240.0, "paper_cost": 4.5 * (inp["prints"] + inp["aps"]),
                                                                 "prints": inp["prints"], "band_low": inp["band"][0],
                                                                 "band_high": inp["band"][1]})))
        if "validate_edition" not in got:
            frame = got["framing_advisor"][0]
            frame = json.loads(frame) if isinstance(frame, str) else frame
            paper = got["paper_stock"][0]
            reg = got["edition_register"][0]
            sheet = {"title": inp["title"], "plate": inp["plate"], "plate_w": plate["w_cm"], "plate_h": plate["h_cm"],
                     "paper": paper["paper"], "paper_in_stock": paper["in_stock"], "sheets_needed": paper["needed"],
                     "colours": inp["colours"], "prints": inp["prints"], "aps": inp["aps"], "inks": [o["colour"] for o in got["ink_mix"]],
                     "plate_editioned_before": any(r["plate"] == inp["plate"] for r in reg["entries"]),
                     "price_each": got["price_edition"][0]["price_each"], "band": inp["band"], "frame": frame["frame"]}
            return Reply(tool_calls=(tool_call("validate_edition", {"sheet": json.dumps(sheet)}),))
        return f"Edition of {inp['title']} is ready for proofing."
    return answer


def record(inp, path, seed):
    server = common.SERVER
    server.use(brain(inp))
    set_default_openai_api("responses")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"plan edition {inp['id']}")])
    framer = Agent(name="framing advisor", instructions="You are the framing advisor. Quote a frame for the plate.",
                   model=server.model, tools=[frame_quote])
    desk = Agent(name="edition desk", model=server.model,
                 instructions="You are the edition desk of Saltgrass Print Studio. Use the tools, then validate the sheet.",
                 tools=[find_artist, ink_mix, get_plate, paper_stock, edition_register,
                        framer.as_tool("framing_advisor", "Ask the framing advisor for a frame."), price_edition,
                        validate_edition])
    text = (f"{inp['artist']} wants an edition of '{inp['title']}' from plate {inp['plate']}: {inp['prints']} prints "
            f"and {inp['aps']} artist's proofs on {inp['paper']}, colourways {', '.join(inp['colours'])}, "
            f"retail between {inp['band'][0]} and {inp['band'][1]} GBP.")
    async def go():
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(client, use_for_tracing=False)
        try:
            await Runner.run(desk, text, run_config=RunConfig(workflow_name=NAME))
        finally:
            await client.close()
    try:
        asyncio.run(go())
    finally:
        set_trace_processors([])
