"""Cellarmaster's tastings (openai_agents route): a host agent with memory tools (recall and
remember a guest), a sommelier sub-agent called as a tool (it reads the guest notes and the
vintage notes, in parallel), and a booking tool that refuses a tasting it cannot serve."""
import ast
import json

NAME = "cellar-tastings"
ROUTE = "openai_agents"
DOMAIN = "cellarmaster's tastings"
SHAPE = "agents SDK: host (recall_guest + cellar_inventory parallel, remember_guest) -> sommelier agent-as-tool (guest_notes, parallel vintage_notes) -> book_tasting refuses"
MODE = None

INPUTS = [
    {"guest": "Mme. Roux", "date": "2026-03-14", "wines": [["Barolo", 2016], ["Chablis", 2020]], "allergy": "walnut", "seats": 2},
    {"guest": "Mr. Adeyemi", "date": "2026-03-15", "wines": [["Rioja", 2014], ["Sancerre", 2021], ["Port", 2000]], "allergy": None, "seats": 4},
    {"guest": "Ms. Lund", "date": "2026-03-20", "wines": [["Chablis", 2020], ["Rioja", 2014]], "allergy": "shellfish", "seats": 3},
    {"guest": "Herr Vogt", "date": "2026-03-21", "wines": [["Riesling", 2019], ["Barolo", 2016]], "allergy": None, "seats": 2},
    {"guest": "Sra. Campos", "date": "2026-03-27", "wines": [["Port", 2000], ["Sancerre", 2021]], "allergy": "walnut", "seats": 6},
]
CELLAR = {("Barolo", 2016): 8, ("Barolo", 2015): 3, ("Chablis", 2020): 12, ("Chablis", 2019): 2, ("Rioja", 2014): 5,
          ("Rioja", 2013): 1, ("Sancerre", 2021): 9, ("Sancerre", 2020): 4, ("Port", 2000): 4, ("Port", 1999): 2,
          ("Riesling", 2019): 7, ("Riesling", 2018): 5}
LAST_MONTH = {**CELLAR, ("Rioja", 2014): 11, ("Sancerre", 2021): 14}
PAIRING = {"Barolo": ["aged comte", "walnut bread"], "Chablis": ["oysters", "goat cheese"], "Rioja": ["manchego", "jamon"],
           "Sancerre": ["goat cheese", "crudites"], "Port": ["stilton", "walnut tart"], "Riesling": ["pork belly", "apple"]}
ALTERNATIVE = {"walnut bread": "rye bread", "walnut tart": "dark chocolate", "oysters": "gougeres"}

CASES = [
    {"input": 1, "mode": "w1", "kind": "stale_data", "root": ("cellar_inventory", 1),
     "description": "the cellar inventory answers last month's bottle counts, before the Rioja 2014 was poured down to 5"},
    {"input": 0, "mode": "w2", "kind": "bad_memory_write", "root": ("remember_guest", 1),
     "description": "the guest memory write keeps the guest's wines but leaves out the walnut allergy"},
    {"input": 2, "mode": "w3", "kind": "subagent_wrong_entity", "root": ("generation fake-model", 3),
     "description": "the host asks the sommelier to pair for the previous guest on file, so the flight is built on that guest's wines"},
    {"input": 3, "mode": "w4", "kind": "off_by_one", "root": ("vintage_notes", {"wine": "Barolo"}),
     "description": "the vintage notes lookup steps one row back and returns the Barolo 2015 notes for the 2016"},
    {"input": 4, "mode": "w5", "kind": "format_drift", "root": ("generation fake-model", 5),
     "description": "the sommelier answers its pairing with a label key where the booking expects the wine key"},
]


def task(inp):
    return f"tasting for {inp['guest']} on {inp['date']}"


def _outputs(msgs):
    names = {}
    for m in msgs:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
    out = {}
    for m in msgs:
        if m.get("role") == "tool":
            try:
                v = ast.literal_eval(m["content"])
            except Exception:
                try:
                    v = json.loads(m["content"])
                except Exception:
                    v = m["content"]
            out.setdefault(names.get(m["tool_call_id"], "?"), []).append(v)
    return out


def policy(request):
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    system = msgs[0]["content"]
    user = next(m["content"] for m in msgs if m["role"] == "user")
    got = _outputs(msgs)
    if system.startswith("You are the sommelier"):
        guest = user.split("for guest ")[1].split(":")[0]
        inp = next(i for i in INPUTS if i["guest"] == guest)
        if "guest_notes" not in got:
            calls = [tool_call("guest_notes", {"guest": guest})]
            calls += [tool_call("vintage_notes", {"wine": w, "vintage": v}) for w, v in inp["wines"]]
            return Reply(tool_calls=tuple(calls))
        notes = got["guest_notes"][0]
        allergy = notes.get("allergy")
        courses = []
        for vn in got["vintage_notes"]:
            foods = [ALTERNATIVE.get(f, f) if allergy and allergy.split()[0] in f or (allergy == "shellfish" and f == "oysters") else f
                     for f in PAIRING[vn["wine"]]]
            key = "label" if MODE == "w5" else "wine"
            courses.append({key: vn["wine"], "vintage": vn["vintage"], "serve_c": vn["serve_c"], "food": foods})
        return json.dumps({"guest": guest, "courses": courses})
    inp = next(i for i in INPUTS if i["guest"] in user)
    if "recall_guest" not in got:
        return Reply(tool_calls=(tool_call("recall_guest", {"guest": inp["guest"]}),
                                 tool_call("cellar_inventory", {"wines": [f"{w} {v}" for w, v in inp["wines"]]})))
    if "remember_guest" not in got:
        return Reply(tool_calls=(tool_call("remember_guest", {"guest": inp["guest"], "wines": [f"{w} {v}" for w, v in inp["wines"]],
                                                              "allergy": inp["allergy"] or "none"}),))
    if "sommelier" not in got:
        who = inp["guest"]
        if MODE == "w3":
            who = INPUTS[INPUTS.index(inp) - 1]["guest"]
        return Reply(tool_calls=(tool_call("sommelier", {"input": f"Pair the flight for guest {who}: " + ", ".join(f"{w} {v}" for w, v in inp["wines"])}),))
    if "book_tasting" not in got:
        stock = got["cellar_inventory"][0]
        return Reply(tool_calls=(tool_call("book_tasting", {"guest": inp["guest"], "date": inp["date"], "seats": inp["seats"],
                                                            "pairing": got["sommelier"][0] if isinstance(got["sommelier"][0], str) else json.dumps(got["sommelier"][0]), "bottles_on_hand": json.dumps(stock)}),))
    return f"Tasting booked for {inp['guest']} on {inp['date']}."


def build(model, memory):
    from agents import Agent, function_tool

    @function_tool(failure_error_function=None)
    def recall_guest(guest: str) -> dict:
        """What the cellar remembers about a guest."""
        return memory.get(guest, {"guest": guest, "visits": 0})

    @function_tool(failure_error_function=None)
    def cellar_inventory(wines: list[str]) -> dict:
        """Bottles on hand for each wine and vintage."""
        book = LAST_MONTH if MODE == "w1" else CELLAR
        return {w: book[(w.rsplit(" ", 1)[0], int(w.rsplit(" ", 1)[1]))] for w in wines}

    @function_tool(failure_error_function=None)
    def remember_guest(guest: str, wines: list[str], allergy: str) -> dict:
        """Write the guest's preferences to the cellar's memory."""
        entry = {"guest": guest, "wines": wines, "allergy": None if allergy == "none" else allergy}
        if MODE == "w2":
            entry = {"guest": guest, "wines": wines}
        memory[guest] = entry
        return {"saved": guest}

    @function_tool(failure_error_function=None)
    def guest_notes(guest: str) -> dict:
        """The guest's notes from the cellar's memory."""
        return memory.get(guest) or {"guest": guest, "allergy": None}

    @function_tool(failure_error_function=None)
    def vintage_notes(wine: str, vintage: int) -> dict:
        """Tasting notes and serving temperature of a wine and vintage."""
        rows = sorted(k for k in CELLAR if k[0] == wine)
        i = rows.index((wine, vintage))
        if MODE == "w4" and wine == "Barolo":
            i -= 1
        w, v = rows[i]
        return {"wine": w, "vintage": v, "serve_c": 17 if w in ("Barolo", "Rioja") else 10, "notes": f"{w} {v} from bin {i + 1}"}

    @function_tool(failure_error_function=None)
    def book_tasting(guest: str, date: str, seats: int, pairing: str, bottles_on_hand: str) -> dict:
        """Book the tasting room and pull the bottles."""
        flight = json.loads(pairing)
        bottles_on_hand = json.loads(bottles_on_hand)
        form = next(i for i in INPUTS if i["guest"] == guest)
        for n, course in enumerate(flight["courses"], 1):
            if "wine" not in course:
                raise ValueError(f"booking {date}: course {n} of the pairing names no wine")
            if [course["wine"], course["vintage"]] not in form["wines"]:
                raise ValueError(f"booking {date}: course {n} pours {course['wine']} {course['vintage']}, {guest} booked {form['wines']}")
            if form["allergy"] and any(form["allergy"] in f or (form["allergy"] == "shellfish" and f == "oysters") for f in course["food"]):
                raise ValueError(f"booking {date}: course {n} serves {course['food']} to a guest allergic to {form['allergy']}")
            needed = max(1, seats // 6 + 1)
            have = CELLAR[(course["wine"], course["vintage"])]
            if have - needed < 2:
                raise RuntimeError(f"cellar pull for {date}: {course['wine']} {course['vintage']} has {have} bottles, reserve of 2 reached")
            if bottles_on_hand.get(f"{course['wine']} {course['vintage']}") != have:
                raise RuntimeError(f"cellar pull for {date}: {course['wine']} {course['vintage']} count {bottles_on_hand.get(course['wine'] + ' ' + str(course['vintage']))} on the sheet, {have} in the racks")
        return {"booking": f"TR-{date}", "seats": seats}

    sommelier = Agent(name="sommelier", instructions="You are the sommelier. Read the guest notes and vintage notes, answer the pairing as JSON.",
                      model=model, tools=[guest_notes, vintage_notes])
    host = Agent(name="cellar_host", instructions="You are the cellar host. Recall the guest, check the cellar, remember the guest, ask the sommelier, book.",
                 model=model, tools=[recall_guest, cellar_inventory, remember_guest,
                                     sommelier.as_tool(tool_name="sommelier", tool_description="Pairs a flight for a guest."),
                                     book_tasting])
    return host


async def run(inp, server):
    from agents import OpenAIChatCompletionsModel, RunConfig, Runner
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
    try:
        await Runner.run(build(model, {}), f"Book a tasting for {inp['guest']} on {inp['date']}, {inp['seats']} seats.",
                         run_config=RunConfig(workflow_name=NAME))
    finally:
        await client.close()
