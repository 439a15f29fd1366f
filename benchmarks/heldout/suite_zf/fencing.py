"""Fencing club tournament entries: OpenAI Agents SDK (triage agent, licence sub-agent as a tool, hand-offs to weapon clerks)."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from .common import Case
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "salle-entries-desk", "openai_agents", "fencing club tournament entries", "jsonl"
SHAPE = "entry_triage (lookup_fencer, licence_checker sub-agent as tool) -> hand-off to weapon clerk -> age category, event, ranking, fee -> submit_entry"

ENTRIES = {
    "quint_sabre": "Enter Mara Quint (F-1877) in the Spring Open 2026 sabre.",
    "okafor_epee": "Enter Tobi Okafor (F-2231) in the Spring Open 2026 epee.",
    "lind_foil": "Enter Siv Lind (F-3010) in the Spring Open 2026 foil.",
    "ruiz_sabre": "Enter Paco Ruiz (F-1402) in the Spring Open 2026 sabre.",
    "chen_epee": "Enter Wei Chen (F-2555) in the Spring Open 2026 epee.",
    "adair_foil": "Enter Rory Adair (F-3321) in the Spring Open 2026 foil.",
}
REFS = ["lind_foil", "ruiz_sabre", "chen_epee", "adair_foil"]
FENCERS = {
    "F-1877": {"name": "Mara Quint", "born": 2008, "club": "Salle Nord", "weapon": "sabre"},
    "F-1878": {"name": "Mara Quint", "born": 1979, "club": "Cercle Sud", "weapon": "sabre"},
    "F-2231": {"name": "Tobi Okafor", "born": 2006, "club": "Salle Nord", "weapon": "epee"},
    "F-3010": {"name": "Siv Lind", "born": 2009, "club": "Blade Hall", "weapon": "foil"},
    "F-1402": {"name": "Paco Ruiz", "born": 1998, "club": "Cercle Sud", "weapon": "sabre"},
    "F-2555": {"name": "Wei Chen", "born": 2007, "club": "Blade Hall", "weapon": "epee"},
    "F-3321": {"name": "Rory Adair", "born": 2001, "club": "Salle Nord", "weapon": "foil"},
}
RANKING = {"F-1877": 88, "F-1878": 12, "F-2231": 140, "F-3010": 35, "F-1402": 210, "F-2555": 64, "F-3321": 97}
SEASON = 2026
FEES = {"U20": 25.0, "Senior": 40.0}

CASES = [
    Case("zf_fc_1", "wrong_routing", "quint_sabre", "generation fake-model", 6, "submit_entry", 1,
         "the triage model hands a sabre entry to the epee clerk."),
    Case("zf_fc_2", "hallucinated_value", "okafor_epee", "generation fake-model", 11, "submit_entry", 1,
         "the clerk's model states 104 seed points on the entry, a number no tool returned."),
    Case("zf_fc_3", "wrong_tool_args", "quint_sabre", "generation fake-model", 8, "submit_entry", 1,
         "the clerk's model asks get_event for the Senior category although the age tool said U20."),
    Case("zf_fc_4", "subagent_wrong_entity", "quint_sabre", "generation fake-model", 4, "submit_entry", 1,
         "the licence sub-agent picks the other Mara Quint (F-1878) from the name search and reports her club."),
    Case("zf_fc_5", "off_by_one", "okafor_epee", "age_category", 1, "submit_entry", 1,
         "age_category counts a fencer who turns 20 this season as still under 20."),
]


class EntryRejected(RuntimeError):
    pass


def _tool_results(msgs: list) -> list[tuple[str, Any]]:
    names = {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
    out = []
    for m in msgs:
        if m["role"] == "tool":
            content = m["content"]
            for reader in (json.loads, ast.literal_eval):
                try:
                    content = reader(content)
                    break
                except (TypeError, ValueError, SyntaxError):
                    pass
            out.append((names.get(m["tool_call_id"], "?"), content))
    return out


def _user(msgs: list) -> str:
    return next(m["content"] for m in msgs if m["role"] == "user")


def policy(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    done = dict(_tool_results(msgs))
    if system.startswith("You check fencing licences"):
        ask = _user(msgs)
        name = ask.split("licence of ")[1].split(" (")[0]
        licence = ask.split("(")[1].split(")")[0]
        if "find_licences" not in done:
            return Reply(tool_calls=(tool_call("find_licences", {"name": name}),))
        if "licence_record" not in done:
            matches = done["find_licences"]
            pick = matches[-1]["licence"] if active("zf_fc_4") else next(m["licence"] for m in matches if m["licence"] == licence)
            return Reply(tool_calls=(tool_call("licence_record", {"licence": pick}),))
        return json.dumps(done["licence_record"])
    if system.startswith("You triage"):
        text = _user(msgs)
        licence = text.split("(")[1].split(")")[0]
        if "lookup_fencer" not in done:
            return Reply(tool_calls=(tool_call("lookup_fencer", {"licence": licence}),))
        if "licence_checker" not in done:
            f = done["lookup_fencer"]
            return Reply(tool_calls=(tool_call("licence_checker", {"input": f"Check the licence of {f['name']} ({licence})"}),))
        weapon = text.rstrip(".").split()[-1]
        if active("zf_fc_1"):
            weapon = "epee"
        return Reply(tool_calls=(tool_call(f"transfer_to_{weapon}_clerk", {}),))
    if "entries clerk" in system:
        weapon = system.split("the ")[1].split(" ")[0]
        text = _user(msgs)
        licence = text.split("(")[1].split(")")[0]
        fencer, lic = done["lookup_fencer"], done["licence_checker"]
        if isinstance(lic, str):
            lic = json.loads(lic)
        if "age_category" not in done:
            return Reply(tool_calls=(tool_call("age_category", {"born": fencer["born"], "season": SEASON}),))
        if "get_event" not in done:
            cat = done["age_category"]["category"]
            if active("zf_fc_3"):
                cat = "Senior"
            return Reply(tool_calls=(tool_call("get_event", {"tournament": "Spring Open 2026", "weapon": weapon,
                                                             "category": cat}),))
        if "check_ranking" not in done:
            return Reply(tool_calls=(tool_call("check_ranking", {"licence": licence, "weapon": weapon}),))
        if "entry_fee" not in done:
            return Reply(tool_calls=(tool_call("entry_fee", {"event_id": done["get_event"]["event_id"],
                                                             "club": lic["club"]}),))
        if "submit_entry" not in done:
            points = done["check_ranking"]["points"]
            if active("zf_fc_2"):
                points = 104
            return Reply(tool_calls=(tool_call("submit_entry", {
                "licence": licence, "event_id": done["get_event"]["event_id"], "club": lic["club"],
                "seed_points": points, "fee_eur": done["entry_fee"]["fee_eur"]}),))
        return f"Entry confirmed: {done['submit_entry']['entry']}."
    return "ok"


def build(model: Any) -> Any:
    from agents import Agent, function_tool

    @function_tool
    def lookup_fencer(licence: str) -> dict:
        """Federation record of a fencer by licence number."""
        return {"licence": licence, **FENCERS[licence]}

    @function_tool
    def find_licences(name: str) -> list:
        """All federation licences held under a name."""
        return [{"licence": k, "name": v["name"], "born": v["born"]} for k, v in FENCERS.items() if v["name"] == name]

    @function_tool
    def licence_record(licence: str) -> dict:
        """Licence status and club of a licence number."""
        return {"licence": licence, "club": FENCERS[licence]["club"], "valid_until": "2026-08-31"}

    @function_tool
    def age_category(born: int, season: int) -> dict:
        """Age category of a fencer for a season."""
        age = season - born
        limit = 21 if active("zf_fc_5") else 20
        return {"age_in_season": age, "category": "U20" if age < limit else "Senior"}

    @function_tool
    def get_event(tournament: str, weapon: str, category: str) -> dict:
        """Event id of a tournament's weapon and category."""
        return {"event_id": f"SO26-{weapon[:2].upper()}-{category.upper()}", "weapon": weapon, "category": category}

    @function_tool
    def check_ranking(licence: str, weapon: str) -> dict:
        """Federation ranking points of a fencer in a weapon."""
        return {"licence": licence, "weapon": weapon, "points": RANKING[licence]}

    @function_tool
    def entry_fee(event_id: str, club: str) -> dict:
        """Entry fee of an event for a club member."""
        cat = "U20" if event_id.endswith("U20") else "Senior"
        return {"event_id": event_id, "fee_eur": FEES[cat] - (5.0 if club == "Salle Nord" else 0.0)}

    @function_tool(failure_error_function=None)
    def submit_entry(licence: str, event_id: str, club: str, seed_points: int, fee_eur: float) -> dict:
        """Submit the entry to the tournament organiser."""
        f = FENCERS[licence]
        weapon_code = event_id.split("-")[1]
        if weapon_code != f["weapon"][:2].upper():
            raise EntryRejected(f"HTTP 422 {{\"error\": \"{licence} holds no ranking in the weapon of {event_id}\"}}")
        cat = event_id.split("-")[2]
        age = SEASON - f["born"]
        if (cat == "U20") != (age < 20):
            raise EntryRejected(f"HTTP 422 {{\"error\": \"{event_id} does not admit {licence} (born {f['born']})\"}}")
        if club != f["club"]:
            raise EntryRejected(f"HTTP 409 {{\"error\": \"{licence} is registered with {f['club']}, entry names {club}\"}}")
        if seed_points != RANKING[licence]:
            raise EntryRejected(f"HTTP 409 {{\"error\": \"seed points {seed_points} do not match the federation ranking "
                                f"{RANKING[licence]} for {licence}\"}}")
        return {"entry": f"ENT-{event_id}-{licence}", "status": "accepted"}

    clerk_tools = [age_category, get_event, check_ranking, entry_fee, submit_entry]
    clerks = [Agent(name=f"{w}_clerk", instructions=f"You are the {w} entries clerk; enter the fencer with the tools.",
                    tools=clerk_tools, model=model) for w in ("sabre", "epee", "foil")]
    checker = Agent(name="licence_checker", instructions="You check fencing licences; answer with the licence record JSON.",
                    tools=[find_licences, licence_record], model=model)
    triage = Agent(name="entry_triage", instructions="You triage tournament entries and hand them to the right clerk.",
                   tools=[lookup_fencer, checker.as_tool(tool_name="licence_checker",
                                                         tool_description="Check a fencer's licence and club.")],
                   handoffs=clerks, model=model)
    return triage


def record(server: Any, key: str, path: Path) -> None:
    from agents import OpenAIChatCompletionsModel, RunConfig, Runner, set_trace_processors
    from agents.exceptions import UserError
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    server.use(policy)
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
    set_trace_processors([TrajdebugProcessor(path=str(path), name=AGENT, task=ENTRIES[key])])
    try:
        Runner.run_sync(build(model), ENTRIES[key], run_config=RunConfig(workflow_name=AGENT), max_turns=20)
    except (EntryRejected, UserError):
        pass
    finally:
        set_trace_processors([])
