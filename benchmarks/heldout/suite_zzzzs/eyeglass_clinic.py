"""Lions-club recycled eyeglasses clinic: volunteers match donated, lensometer-graded glasses to screened clients.

Route: sdk (trajdebug's own recorder, JSONL). Shape: input, a day-plan model call and its parser, then a loop over
clients (prescription parser, computation, inventory retrieval, a prompt kept in run.state, a model choosing a
pair, a parser of its choice, a reservation tool, a lensometer/frame check), and a closing log tool.
"""

from __future__ import annotations

import json
import re

import trajdebug

from _common import chat, last_user_json, messages_of, system_of

NAME = "eyeglass-clinic"
ROUTE = "sdk"
DOMAIN = "service-club recycled eyeglasses clinic (vision screening day)"
SHAPE = "input, llm plan + parser, per-client loop of parse/compute/retrieval/state/llm/parse/tool/check, closing tool"
SWITCH = None

# pair id: (right SE, left SE, tray, PD range of the frame)
INVENTORY = {
    "G-2001": (-3.25, -2.75, "adult", (58, 66)), "G-2002": (-3.00, -3.00, "adult", (58, 66)),
    "G-2003": (-3.75, -3.25, "adult", (58, 66)), "G-2004": (-1.25, -1.25, "adult", (57, 65)),
    "G-2005": (-1.00, -1.50, "adult", (57, 65)), "G-2006": (-1.75, -1.75, "adult", (57, 65)),
    "G-2007": (2.00, 2.25, "adult", (60, 68)), "G-2009": (2.75, 2.75, "adult", (60, 68)),
    "G-2010": (-4.50, -4.50, "adult", (58, 66)), "G-2011": (-4.00, -4.25, "adult", (58, 66)),
    "G-2012": (-5.00, -5.00, "adult", (59, 67)), "G-2013": (-4.75, -5.25, "adult", (59, 67)),
    "G-2014": (-1.00, -1.00, "adult", (56, 64)), "G-2015": (-1.00, -3.75, "adult", (56, 64)),
    "G-2016": (1.75, 1.50, "adult", (60, 68)), "G-2017": (1.50, 1.50, "adult", (60, 68)),
    "G-2018": (3.25, 3.00, "adult", (60, 68)), "G-2019": (2.75, 2.50, "adult", (60, 68)),
    "K-0401": (1.50, 1.00, "child", (48, 56)), "K-0402": (-0.75, -1.00, "child", (48, 56)),
    "K-0403": (-2.00, -2.25, "child", (50, 58)), "K-0404": (1.75, 1.50, "child", (48, 56)),
    "K-0405": (-1.00, -1.00, "child", (48, 56)), "K-0406": (-2.25, -2.25, "child", (50, 58)),
}

M = "\u2212"  # the autorefractor's printout uses a typographic minus
INPUTS = [
    {"task": "St Brendan's hall vision day, morning list", "camp": "St Brendan's hall 2025-07-05 AM", "clients": [
        {"id": "V-031", "age": 67, "rx": f"OD {M}3.00 {M}0.50 x 90 / OS {M}2.75 DS / PD 63"},
        {"id": "V-032", "age": 12, "rx": "OD +1.50 DS / OS +1.25 -0.50 x 10 / PD 54"},
        {"id": "V-033", "age": 44, "rx": "OD -1.00 -0.50 x 180 / OS -1.25 DS / PD 61"}]},
    {"task": "St Brendan's hall vision day, afternoon list", "camp": "St Brendan's hall 2025-07-05 PM", "clients": [
        {"id": "V-041", "age": 58, "rx": "OD +2.00 DS / OS +2.25 DS / PD 64"},
        {"id": "V-042", "age": 35, "rx": f"OD {M}4.00 {M}1.00 x 15 / OS {M}4.25 {M}0.50 x 165 / PD 62"}]},
    {"task": "Riverside mosque outreach vision day", "camp": "Riverside mosque 2025-07-12", "clients": [
        {"id": "V-051", "age": 29, "rx": "OD -1.00 DS / OS -3.50 -0.50 x 90 / PD 60"},
        {"id": "V-052", "age": 71, "rx": "OD +2.75 DS / OS +2.50 DS / PD 65"}]},
    {"task": "Hollins family booking, community centre vision day", "camp": "Hollins Rd community centre 2025-07-19",
     "clients": [
        {"id": "V-061", "age": 9, "rx": "OD -0.75 DS / OS -1.00 DS / PD 52"},
        {"id": "V-062", "age": 14, "rx": "OD -2.00 DS / OS -2.00 -0.50 x 180 / PD 57"},
        {"id": "V-064", "age": 11, "rx": "OD -2.25 DS / OS -2.25 DS / PD 53"},
        {"id": "V-063", "age": 63, "rx": "OD +1.75 DS / OS +1.75 -0.50 x 90 / PD 64"}]},
    {"task": "Night shelter outreach vision day", "camp": "Hope St night shelter 2025-07-26", "clients": [
        {"id": "V-071", "age": 50, "rx": f"OD {M}5.00 DS / OS {M}4.75 {M}0.50 x 180 / PD 63"},
        {"id": "V-072", "age": 47, "rx": "OD -2.75 -0.50 x 170 / OS -3.25 DS / PD 62"}]},
]

CASES = [
    {"id": "eyeglass_clinic-1", "input": 0, "kind": "lossy_parsing",
     "root": ("parse_rx", 1, "parse"), "failure": ("dispense_check", 1),
     "what": "the typographic minus signs are dropped: OD -3.00 -0.50 / OS -2.75 read as +3.00 +0.50 / +2.75",
     "description": "The prescription parser did not read the printout's typographic minus signs, so a myopic "
                    "client's lenses were searched as plus powers and the lensometer check rejects the pair."},
    {"id": "eyeglass_clinic-2", "input": 1, "kind": "off_by_one",
     "root": ("select_candidate", 1, "parse"), "failure": ("dispense_check", 1),
     "what": "the model's 1-based option 1 is taken as index 1, so the second candidate G-2016 is reserved",
     "description": "The choice parser used the model's 1-based option number as a list index and picked the "
                    "next pair down, which the lensometer check finds 0.75 D off the slip."},
    {"id": "eyeglass_clinic-3", "input": 2, "kind": "wrong_retrieval",
     "root": ("search_inventory", 1, "retrieval"), "failure": ("dispense_check", 1),
     "what": "the inventory search matched both lenses on the right-eye power (-1.00/-1.00) for a -1.00/-3.75 client",
     "description": "The inventory search ranked pairs against the right eye's power for both lenses, so an "
                    "anisometropic client was offered -1.00/-1.00 pairs and the left lens fails the check."},
    {"id": "eyeglass_clinic-4", "input": 3, "kind": "plan_error",
     "root": ("plan_day", 1, "llm"), "failure": ("dispense_check", 4),
     "what": "the day plan put the 63-year-old of the family booking in the children's tray",
     "description": "The day plan gave every client of the family booking the children's tray, so the "
                    "63-year-old grandparent is matched to a child frame that cannot fit a 64 mm PD."},
    {"id": "eyeglass_clinic-5", "input": 4, "kind": "context_pollution",
     "root": ("compose_choice_prompt", 2, "state"), "failure": ("dispense_check", 2),
     "what": "the second client's prompt still carries the first client's exchange (-5.00 D)",
     "description": "The fitting thread kept in run state was not cleared between clients, so the model chose the "
                    "second client's pair against the first client's stronger prescription."},
]


def _powers(text: str) -> dict:
    out = {}
    for seg in text.split("/"):
        seg = seg.strip()
        if seg.startswith(("OD", "OS")):
            nums = [float(x) for x in re.findall(r"[-+]?\d+\.\d+", seg)]
            axis = re.search(r"x\s*(\d+)", seg)
            out[seg[:2].lower()] = {"sph": nums[0], "cyl": nums[1] if len(nums) > 1 else 0.0,
                                     "axis": int(axis.group(1)) if axis else None}
        elif seg.startswith("PD"):
            out["pd"] = int(re.search(r"\d+", seg).group(0))
    return out


@trajdebug.step(kind="input")
def read_clinic_day(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="llm")
def plan_day(messages: list[dict]) -> dict:
    return chat(messages)


@trajdebug.step(kind="parse")
def parse_day_plan(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="parse")
def parse_rx(rx_text: str) -> dict:
    text = rx_text if SWITCH == "eyeglass_clinic-1" else rx_text.replace(M, "-")
    return _powers(text)


@trajdebug.step(kind="other")
def spherical_equivalent(rx: dict) -> dict:
    return {eye: rx[eye]["sph"] + rx[eye]["cyl"] / 2 for eye in ("od", "os")}


@trajdebug.step(kind="retrieval")
def search_inventory(se: dict, tray: str, reserved: list[str]) -> list[dict]:
    want_od = se["od"]
    want_os = se["od"] if SWITCH == "eyeglass_clinic-3" else se["os"]
    rows = []
    for pid, (od, os_, t, pd) in INVENTORY.items():
        if t != tray or pid in reserved:
            continue
        dev = (abs(od - want_od), abs(os_ - want_os))
        rows.append((max(dev), sum(dev), pid, {"pair": pid, "od": od, "os": os_, "frame": tray, "pd_range": list(pd)}))
    rows.sort(key=lambda r: r[:3])
    return [r[3] for r in rows[:3]]


@trajdebug.step(kind="state")
def compose_choice_prompt(client: dict, se: dict, candidates: list[dict]) -> list[dict]:
    state = trajdebug.current_run().state
    thread = state.get("fitting_thread") or []
    if SWITCH != "eyeglass_clinic-5":
        thread = []  # a new client starts a new thread
    thread = thread + [{"role": "user", "content": json.dumps({"client": client["id"], "age": client["age"], "se": se,
                                                             "candidates": candidates})}]
    state["fitting_thread"] = thread
    return [{"role": "system", "content": "You fit recycled glasses. Pick the candidate closest to the client's "
                                          "spherical equivalent in both eyes. Answer JSON {\"option\": n (1-based), "
                                          "\"note\": text}."}] + thread


@trajdebug.step(kind="llm")
def choose_pair(messages: list[dict]) -> dict:
    return chat(messages)


@trajdebug.step(kind="parse")
def select_candidate(candidates: list[dict], answer: str) -> dict:
    option = json.loads(answer)["option"]
    index = option if SWITCH == "eyeglass_clinic-2" else option - 1
    return candidates[index]


@trajdebug.step(kind="tool")
def reserve_pair(pair_id: str, client_id: str) -> dict:
    holder = trajdebug.current_run().state.get(f"reserved:{pair_id}")
    if holder:
        raise RuntimeError(f"{pair_id} already reserved for {holder}")
    trajdebug.current_run().state[f"reserved:{pair_id}"] = client_id
    return {"pair": pair_id, "client": client_id, "tag": f"{client_id}/{pair_id}"}


@trajdebug.step(kind="tool")
def dispense_check(pair_id: str, rx_text: str) -> dict:
    """Lensometer reading of the pair against the screening slip, and the frame against the client's PD."""
    od, os_, _, (lo, hi) = INVENTORY[pair_id]
    slip = _powers(rx_text.replace(M, "-"))
    need = {eye: slip[eye]["sph"] + slip[eye]["cyl"] / 2 for eye in ("od", "os")}
    for eye, got in (("od", od), ("os", os_)):
        if abs(got - need[eye]) > 0.5:
            raise ValueError(f"{pair_id} measures {od:+.2f}/{os_:+.2f} D; slip needs {need['od']:+.2f}/"
                             f"{need['os']:+.2f} D ({eye.upper()} off by {abs(got - need[eye]):.2f} D)")
    if not lo <= slip["pd"] <= hi:
        raise ValueError(f"frame of {pair_id} fits PD {lo}-{hi} mm; client PD is {slip['pd']} mm")
    return {"pair": pair_id, "od": od, "os": os_, "pd_ok": True}


@trajdebug.step(kind="tool")
def log_dispensed(camp: str, fitted: list[dict]) -> dict:
    return {"camp": camp, "dispensed": len(fitted), "sheet": f"LCI-{camp[:3].upper()}-{len(fitted):02d}"}


def execute(inp: dict, out_path: str) -> None:
    try:
        with trajdebug.run(NAME, task=inp["task"], path=out_path):
            day = read_clinic_day(inp)
            answer = plan_day([
                {"role": "system", "content": "You plan a recycled-eyeglasses clinic day: the fitting order and "
                                              "the tray (adult or child) for each client. Answer JSON."},
                {"role": "user", "content": json.dumps({"camp": day["camp"], "clients": [
                    {"id": c["id"], "age": c["age"]} for c in day["clients"]]})},
            ])
            plan = parse_day_plan(answer["content"])
            by_id = {c["id"]: c for c in day["clients"]}
            fitted: list[dict] = []
            for cid in plan["order"]:
                client = by_id[cid]
                rx = parse_rx(client["rx"])
                se = spherical_equivalent(rx)
                candidates = search_inventory(se, plan["trays"][cid], [f["pair"] for f in fitted])
                messages = compose_choice_prompt(client, se, candidates)
                choice = choose_pair(messages)
                pair = select_candidate(candidates, choice["content"])
                reserve_pair(pair["pair"], cid)
                dispense_check(pair["pair"], client["rx"])
                fitted.append({"client": cid, "pair": pair["pair"]})
            log_dispensed(day["camp"], fitted)
    except (ValueError, RuntimeError, IndexError):
        pass


def brain(request):
    system = system_of(request)
    if "clinic day" in system:
        day = last_user_json(request)
        clients = day["clients"]
        trays = {c["id"]: "child" if c["age"] < 16 else "adult" for c in clients}
        if SWITCH == "eyeglass_clinic-4":
            trays = {c["id"]: trays[clients[0]["id"]] for c in clients}  # one tray for the whole booking
        return json.dumps({"order": [c["id"] for c in clients], "trays": trays})
    if "recycled glasses" in system:
        users = [json.loads(m["content"]) for m in messages_of(request) if m["role"] == "user"]
        se = users[0]["se"]  # the client the thread is about
        cands = users[-1]["candidates"]
        score = [max(abs(c["od"] - se["od"]), abs(c["os"] - se["os"])) for c in cands]
        best = min(range(len(cands)), key=lambda k: (score[k], k))
        c = cands[best]
        return json.dumps({"option": best + 1, "note": f"{c['pair']} is within {score[best]:.2f} D in both eyes"})
    return "Unknown request."
