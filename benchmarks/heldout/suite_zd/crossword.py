"""Crossword syndication: prepare a daily puzzle and publish it to partner papers (otlp)."""
from __future__ import annotations

import json
from pathlib import Path

from .common import Otlp, last_user_json
from .kit import active

NAME = "crossword-syndication"
ROUTE = "otlp"
DOMAIN = "crossword syndication"
SHAPE = "puzzle file -> parse -> grid numbering -> solution check -> LLM clue review -> partner-desk sub-agent per partner (spec retrieval, notes, fit, LLM teaser) -> LLM manifest -> publish"

PUZZLES = {
    "2026-12-05": {"setter": "Quill", "grid": ["CAT#DOG", "A#O#O#A", "RATEDAY", "#I#A#E#", "SOW#PAN"],
                   "clues": {"1A": "Purring pet", "5A": "Loyal pet", "8A": "Daily price", "11A": "Plant seed", "12A": "Cooking vessel",
                             "1D": "Vehicle", "3D": "Tool", "5D": "Female deer", "7D": "Gallery"}},
    "2026-12-06": {"setter": "Brae", "grid": ["BUS#HAT", "O#A#O#O", "ARENAED", "#I#D#E#", "TOE#LID"],
                   "clues": {"1A": "Coach", "5A": "Cap", "8A": "Stadium, loosely", "11A": "Foot digit", "12A": "Cover",
                             "1D": "Pig", "3D": "Sailor", "5D": "Garden tool", "7D": "Bottle top"}},
}
for _d in ("2026-11-28", "2026-11-29", "2026-11-30", "2026-12-01"):
    PUZZLES[_d] = {**PUZZLES["2026-12-05"], "setter": "Fenn"}
PARTNERS = {
    "north-gazette": {"format": "ipuz", "spelling": "en-GB", "prize": None},
    "coastal-courier": {"format": "across-lite", "spelling": "en-US", "prize": None},
    "valley-echo": {"format": "ipuz", "spelling": "en-GB", "prize": "book token"},
}
NOTES = {"north-gazette": ["runs Saturday, page 31"], "coastal-courier": ["no prize lines (contract 2024)"],
         "valley-echo": ["prize: book token", "runs Friday"]}
INPUTS = {d: {"date": d, "partners": list(PARTNERS)} for d in PUZZLES}
INPUTS["2026-12-06"] = {"date": "2026-12-06", "partners": ["valley-echo", "coastal-courier"]}
REFS = ["2026-11-28", "2026-11-29", "2026-11-30", "2026-12-01"]
CASES = [
    {"id": "zd_crossword_notes", "kind": "context_pollution", "input": "2026-12-05", "root": "recall_notes", "occ": 2,
     "failure": "publish_syndication", "description": "recall_notes hands the coastal-courier desk the valley-echo prize note too, the teaser promises a prize, and the syndication API refuses prize lines for that partner."},
    {"id": "zd_crossword_spec", "kind": "wrong_retrieval", "input": "2026-12-06", "root": "partner_spec", "occ": 2,
     "failure": "publish_syndication", "description": "partner_spec returns the north-gazette spec for coastal-courier, so its bundle is built as ipuz and the syndication API refuses a format the partner does not take."},
    {"id": "zd_crossword_manifest", "kind": "format_drift", "input": "2026-12-06", "root": "build_manifest", "occ": 1,
     "failure": "publish_syndication", "description": "build_manifest writes the release date day-first with slashes instead of ISO, and the syndication API rejects the manifest date."},
    {"id": "zd_crossword_solution", "kind": "swallowed_error", "input": "2026-12-05", "root": "validate_solution", "occ": 1,
     "failure": "publish_syndication", "description": "validate_solution catches the mismatch between the solution file and the grid and carries on, and the syndication API finds the solution checksum does not match the grid."},
    {"id": "zd_crossword_numbering", "kind": "off_by_one", "input": "2026-12-06", "root": "number_grid", "occ": 1,
     "failure": "publish_syndication", "description": "number_grid starts the down scan one column late, missing 1-Down, and the syndication API finds a clue with no numbered entry."},
]


def policy(req):
    ask = last_user_json(req)
    if ask.get("ask") == "review":
        return json.dumps({"approved": True, "notes": [f"{k}: fine" for k in list(ask["clues"])[:3]]})
    if ask.get("ask") == "teaser":
        prize = next((n.split(": ")[1] for n in ask["notes"] if n.startswith("prize:")), None)
        text = f"Today's {ask['size']} cryptic-lite by {ask['setter']}."
        if prize:
            text += f" Win a {prize}!"
        return json.dumps({"partner": ask["partner"], "teaser": text})
    if ask.get("ask") == "manifest":
        date = ask["date"]
        if active("zd_crossword_manifest"):
            y, m, d = date.split("-")
            date = f"{d}/{m}/{y}"
        return json.dumps({"release_date": date, "bundles": ask["bundles"], "setter": ask["setter"]})
    return json.dumps({})


def _checksum(rows: list[str]) -> int:
    return sum((i + 1) * ord(c) for i, c in enumerate("".join(rows))) % 65521


def _numbering(grid: list[str], skip_first: bool) -> dict:
    nums, n = {}, 0
    h, w = len(grid), len(grid[0])
    for r in range(h):
        for c in range(w):
            if grid[r][c] == "#":
                continue
            across = (c == 0 or grid[r][c - 1] == "#") and c + 1 < w and grid[r][c + 1] != "#"
            down = (r == 0 or grid[r - 1][c] == "#") and r + 1 < h and grid[r + 1][c] != "#"
            if skip_first and c == 0:
                down = False
            if across or down:
                n += 1
                if across:
                    nums[f"{n}A"] = [r, c]
                if down:
                    nums[f"{n}D"] = [r, c]
    return nums


CLUE_TEXTS = ["Purring pet", "Loyal pet", "Daily price", "Plant seed", "Cooking vessel", "Vehicle", "Tool",
              "Female deer", "Gallery", "Stadium, loosely", "Foot digit", "Cover", "Sailor", "Garden tool"]
for _p in PUZZLES.values():
    _p["clues"] = dict(zip(sorted(_numbering(_p["grid"], False), key=lambda k: (k[-1], int(k[:-1]))), CLUE_TEXTS))


def record(inp: dict, path: Path, base_url: str) -> None:
    ot = Otlp(NAME)
    date = inp["date"]
    try:
        with ot.span(NAME, "AGENT", {"date": date, "partners": inp["partners"]}, **{"agent.name": NAME}) as root:
            with ot.span("fetch_puzzle", "TOOL", {"date": date}, **{"tool.name": "fetch_puzzle"}) as s:
                p = PUZZLES[date]
                raw = f"SETTER {p['setter']}\nGRID\n" + "\n".join(p["grid"]) + "\nCLUES\n" + "\n".join(f"{k}|{v}" for k, v in p["clues"].items())
                s["output"] = raw
            with ot.span("parse_puzzle", "CHAIN", {"text": raw}) as s:
                lines = raw.split("\n")
                gi, ci = lines.index("GRID"), lines.index("CLUES")
                puzzle = {"setter": lines[0].split()[1], "grid": lines[gi + 1:ci],
                          "clues": dict(ln.split("|", 1) for ln in lines[ci + 1:])}
                s["output"] = puzzle
            with ot.span("number_grid", "CHAIN", {"grid": puzzle["grid"]}) as s:
                numbering = _numbering(puzzle["grid"], active("zd_crossword_numbering"))
                s["output"] = numbering
            with ot.span("fetch_solution", "TOOL", {"date": date}, **{"tool.name": "fetch_solution"}) as s:
                sol = {"rows": list(puzzle["grid"]), "checksum": _checksum(puzzle["grid"])}
                if date == "2026-12-05":
                    sol["rows"][2] = "RATEDAT"  # the setter's file has a late correction in row 3
                s["output"] = sol
            with ot.span("validate_solution", "CHAIN", {"solution": sol, "grid": puzzle["grid"]}) as s:
                try:
                    if _checksum(sol["rows"]) != _checksum(puzzle["grid"]):
                        raise ValueError("solution rows differ from grid")
                    checked = sol
                except ValueError:
                    if active("zd_crossword_solution"):
                        checked = sol
                    else:
                        with ot.span("request_corrected_solution", "TOOL", {"date": date}, **{"tool.name": "request_corrected_solution"}) as t:
                            checked = {"rows": list(puzzle["grid"]), "checksum": _checksum(puzzle["grid"])}
                            t["output"] = checked
                s["output"] = checked
            review = ot.llm(base_url, "clue_review", "You edit crossword clues. Answer JSON.",
                            {"ask": "review", "clues": puzzle["clues"], "setter": puzzle["setter"]})
            bundles = []
            for partner in inp["partners"]:
                with ot.span("partner_desk", "AGENT", {"partner": partner}, **{"agent.name": "partner_desk"}) as desk:
                    with ot.span("partner_spec", "RETRIEVER", {"query": f"syndication spec {partner}"}) as s:
                        spec_of = "north-gazette" if active("zd_crossword_spec") and partner == "coastal-courier" else partner
                        spec = {"partner": spec_of, **PARTNERS[spec_of]}
                        s["output"] = [spec]
                    with ot.span("recall_notes", "CHAIN", {"partner": partner}) as s:
                        notes = list(NOTES[partner])
                        if active("zd_crossword_notes") and partner == "coastal-courier":
                            notes += NOTES["valley-echo"]
                        s["output"] = notes
                    with ot.span("fit_grid", "CHAIN", {"spec": spec, "size": len(puzzle["grid"])}) as s:
                        fitted = {"partner": partner, "format": spec["format"], "rows": len(puzzle["grid"]),
                                  "spelling": spec["spelling"]}
                        s["output"] = fitted
                    teaser = ot.llm(base_url, "write_teaser", "Write a one-line teaser for the partner. Answer JSON.",
                                    {"ask": "teaser", "partner": partner, "notes": notes, "setter": puzzle["setter"],
                                     "size": f"{len(puzzle['grid'])}x{len(puzzle['grid'][0])}"})
                    bundle = {**fitted, "teaser": teaser["teaser"]}
                    bundles.append(bundle)
                    desk["output"] = bundle
            manifest = ot.llm(base_url, "build_manifest", "Write the syndication manifest. Answer JSON.",
                              {"ask": "manifest", "date": date, "bundles": [b["partner"] for b in bundles], "setter": puzzle["setter"]})
            with ot.span("publish_syndication", "TOOL", {"manifest": manifest, "bundles": bundles}, **{"tool.name": "publish_syndication"}) as s:
                import re
                if not re.fullmatch(r"\d{4}-\d\d-\d\d", manifest["release_date"]):
                    raise ValueError(f"syndication API 400: release_date '{manifest['release_date']}' is not YYYY-MM-DD")
                if checked["checksum"] != _checksum(checked["rows"]):
                    raise ValueError(f"syndication API 422: solution checksum {checked['checksum']} does not match solution grid ({_checksum(checked['rows'])})")
                for clue in puzzle["clues"]:
                    if clue not in numbering:
                        raise ValueError(f"syndication API 422: clue {clue} has no numbered entry in the grid")
                for b in bundles:
                    want = PARTNERS[b["partner"]]
                    if b["format"] != want["format"]:
                        raise ValueError(f"syndication API 415: {b['partner']} takes {want['format']}, bundle is {b['format']}")
                    if "Win a" in b["teaser"] and not want["prize"]:
                        raise ValueError(f"syndication API 422: {b['partner']} teaser offers a prize its contract does not include")
                s["output"] = {"syndication_id": "SYN-" + date.replace("-", ""), "status": "published"}
            root["output"] = {"published": len(bundles)}
    except ValueError:
        pass
    ot.write(path)
