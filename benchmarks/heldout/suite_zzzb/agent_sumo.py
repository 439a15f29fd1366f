"""Sumo stable: tournament entries (recording route: the OpenAI Agents SDK, Chat Completions,
recorded with trajdebug's trace processor).

Shape: one stable-manager agent working turn by turn, one tool per turn: stable notes recalled
from the shared memo store, the entry plan saved, then for each rikishi his banzuke record, a
medical officer sub-agent (Agent.as_tool, its own model turns and fitness tool) and the entry
remembered; finally the entries are submitted to the association's system, which refuses what
does not match the banzuke.
"""
from __future__ import annotations

import ast
import asyncio
import json

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

RUN_NAME = "sumo-stable-entries"
ROUTE = "openai_agents"
DOMAIN = "a sumo stable's tournament entries"
SHAPE = "one agent, one tool per turn: memo recall -> plan save -> per rikishi (banzuke record, medical sub-agent as tool with its own turns, entry saved) -> submission API; 43-61 steps"

SWITCH = None

INPUTS = [
    {"stable": "Arashio-beya", "basho": "2026.11", "roster": ["Wakatakumi", "Hoshiryu", "Sokokurai"]},
    {"stable": "Tatsunami-beya", "basho": "2026.11", "roster": ["Meisei", "Tenkaiho", "Ryuden"]},
    {"stable": "Isegahama-beya", "basho": "2026.11", "roster": ["Takarafuji", "Midorifuji", "Nishikifuji"]},
    {"stable": "Kise-beya", "basho": "2026.11", "roster": ["Ura", "Shimazuumi", "Tokushoryu"]},
    {"stable": "Oitekaze-beya", "basho": "2026.11", "roster": ["Daieisho", "Endo", "Tsurugisho"]},
]

CASES = [
    {"id": "zzzb_sumo_01", "input": 1, "switch": "record_previous_basho_arg", "kind": "wrong_tool_args",
     "root": ("generation fake-model", 8), "failure": ("submit_banzuke_entries", 1),
     "description": "The manager asked for Tenkaiho's record with basho 2026.09 (the memo's date) instead of 2026.11, so he was entered at his September rank, Makushita 2, and the association refused the list."},
    {"id": "zzzb_sumo_02", "input": 0, "switch": "officer_similar_shikona", "kind": "subagent_wrong_entity",
     "root": ("generation fake-model", 5), "failure": ("submit_banzuke_entries", 1),
     "description": "The medical officer sub-agent looked up Wakatakuma instead of Wakatakumi, found him fit, and the stable entered an injured rikishi the association lists as kyujo."},
    {"id": "zzzb_sumo_03", "input": 3, "switch": "record_ignores_basho", "kind": "tool_ignores_argument",
     "root": ("rikishi_record", 3), "failure": ("submit_banzuke_entries", 1),
     "description": "The banzuke record tool answered from the September banzuke whatever basho it was asked for, so Tokushoryu went in at Juryo 1 although November ranks him Maegashira 16."},
    {"id": "zzzb_sumo_04", "input": 2, "switch": "memo_shared_namespace", "kind": "context_pollution",
     "root": ("recall_stable_notes", 1), "failure": ("submit_banzuke_entries", 1),
     "description": "The memo recall read the whole shared memo store, including another stable's note that its Makushita men skip November for the overseas tour, so Nishikifuji was left out of the entries."},
    {"id": "zzzb_sumo_05", "input": 4, "switch": "plan_sekitori_only", "kind": "plan_error",
     "root": ("generation fake-model", 2), "failure": ("submit_banzuke_entries", 1),
     "description": "The manager's entry plan listed only the sekitori and dropped Tsurugisho, so the submission missed a rikishi on the banzuke."},
]

BANZUKE = {
    "2026.11": {"Wakatakumi": "Makushita 12", "Hoshiryu": "Juryo 8", "Sokokurai": "Makushita 40", "Meisei": "Maegashira 5",
                "Tenkaiho": "Juryo 11", "Akinoumi": "Sandanme 7", "Ryuden": "Maegashira 14", "Takarafuji": "Juryo 3",
                "Midorifuji": "Maegashira 9", "Nishikifuji": "Makushita 4", "Ura": "Maegashira 11",
                "Shimazuumi": "Juryo 6", "Kinbozan": "Komusubi", "Tokushoryu": "Maegashira 16", "Kiseumi": "Makushita 30",
                "Daieisho": "Sekiwake", "Endo": "Maegashira 7", "Tsurugisho": "Makushita 2"},
    "2026.09": {"Wakatakumi": "Makushita 9", "Hoshiryu": "Juryo 10", "Sokokurai": "Makushita 38", "Meisei": "Maegashira 8",
                "Tenkaiho": "Makushita 2", "Akinoumi": "Sandanme 20", "Ryuden": "Juryo 1", "Takarafuji": "Juryo 5",
                "Midorifuji": "Maegashira 6", "Nishikifuji": "Makushita 6", "Ura": "Maegashira 11",
                "Shimazuumi": "Juryo 6", "Kinbozan": "Komusubi", "Tokushoryu": "Juryo 1", "Kiseumi": "Makushita 30",
                "Daieisho": "Sekiwake", "Endo": "Maegashira 9", "Tsurugisho": "Juryo 13"},
}
KYUJO = {"Wakatakumi": "medical certificate 2026-10-30, left knee"}
FITNESS = {"Wakatakuma": "fit"}
MEMOS = {
    "Arashio-beya": ["2026.09: Hoshiryu 9-6, promotion talk for Juryo"],
    "Tatsunami-beya": ["2026.09: banzuke meeting notes filed", "Tenkaiho kachi-koshi in 2026.09"],
    "Isegahama-beya": ["Takarafuji: keep keiko light before the basho"],
    "Kise-beya": ["Ura: shoulder taped, fine"],
    "Oitekaze-beya": ["Endo: 200th makuuchi bout coming up"],
    "Kokonoe-beya": ["Makushita men skip 2026.11 for the overseas tour (association approved)"],
}


def _done(messages):
    names, out = {}, []
    for m in messages:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                names[c["id"]] = (c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
        if m.get("role") == "tool":
            name, args = names.get(m["tool_call_id"], ("?", {}))
            try:
                value = ast.literal_eval(m["content"])
            except (ValueError, SyntaxError):
                value = m["content"]
            out.append((name, args, value))
    return out


def _officer(messages):
    shikona = [m for m in messages if m["role"] == "user"][-1]["content"].split()[-1]
    done = _done(messages)
    if not done:
        looked = shikona
        if SWITCH == "officer_similar_shikona" and shikona == "Wakatakumi":
            looked = "Wakatakuma"
        return Reply(tool_calls=(tool_call("fitness_record", {"shikona": looked}),))
    _, args, value = done[-1]
    return json.dumps({"shikona": args["shikona"], "status": value["status"], "note": value["note"]})


def policy(request):
    messages = request.body["messages"]
    if messages[0]["content"].startswith("You are the stable's medical officer"):
        return _officer(messages)
    ask = json.loads([m for m in messages if m["role"] == "user"][0]["content"])
    done = _done(messages)
    if not done:
        return Reply(tool_calls=(tool_call("recall_stable_notes", {"stable": ask["stable"]}),))
    if len(done) == 1:
        notes = done[0][2]
        plan = list(ask["roster"])
        if any("Makushita men skip" in n for n in notes):
            plan = [s for s in plan if not BANZUKE[ask["basho"]][s].startswith("Makushita")]
        if SWITCH == "plan_sekitori_only":
            plan = [s for s in plan if not BANZUKE[ask["basho"]][s].startswith(("Makushita", "Sandanme"))]
        return Reply(tool_calls=(tool_call("save_entry_plan", {"stable": ask["stable"], "order": plan}),))
    plan = done[1][1]["order"]
    steps = done[2:]
    i, phase = divmod(len(steps), 3)
    if i < len(plan):
        shikona = plan[i]
        if phase == 0:
            basho = ask["basho"]
            if SWITCH == "record_previous_basho_arg" and shikona == "Tenkaiho":
                basho = "2026.09"
            return Reply(tool_calls=(tool_call("rikishi_record", {"shikona": shikona, "basho": basho}),))
        if phase == 1:
            return Reply(tool_calls=(tool_call("medical_officer", {"input": f"Check fitness of {shikona}"}),))
        record = steps[3 * i][2]
        medical = steps[3 * i + 1][2]
        medical = json.loads(medical) if isinstance(medical, str) else medical
        return Reply(tool_calls=(tool_call("remember_entry", {"shikona": shikona, "rank": record["rank"],
                                                              "status": medical["status"]}),))
    if steps and steps[-1][0] != "submit_banzuke_entries":
        return Reply(tool_calls=(tool_call("submit_banzuke_entries", {"stable": ask["stable"], "basho": ask["basho"]}),))
    return f"Entries for {ask['stable']} submitted: {steps[-1][2]['receipt']}."


def build(model, store):
    @function_tool(failure_error_function=None)
    def recall_stable_notes(stable: str) -> list:
        """Memos the stable keeps for the coming basho."""
        if SWITCH == "memo_shared_namespace":
            return [n for memos in MEMOS.values() for n in memos]
        return list(MEMOS.get(stable, []))

    @function_tool(failure_error_function=None)
    def save_entry_plan(stable: str, order: list[str]) -> str:
        """Save the order in which the rikishi will be entered."""
        store["plan"] = list(order)
        return f"plan saved: {len(order)} rikishi"

    @function_tool(failure_error_function=None)
    def rikishi_record(shikona: str, basho: str) -> dict:
        """A rikishi's rank on a basho's banzuke."""
        table = "2026.09" if SWITCH == "record_ignores_basho" else basho
        return {"shikona": shikona, "basho": basho, "rank": BANZUKE[table][shikona]}

    @function_tool(failure_error_function=None)
    def fitness_record(shikona: str) -> dict:
        """The stable doctor's record for a rikishi."""
        if shikona in KYUJO:
            return {"shikona": shikona, "status": "kyujo", "note": KYUJO[shikona]}
        return {"shikona": shikona, "status": "fit", "note": FITNESS.get(shikona, "no findings")}

    @function_tool(failure_error_function=None)
    def remember_entry(shikona: str, rank: str, status: str) -> str:
        """Remember one rikishi's entry."""
        store.setdefault("entries", {})[shikona] = {"rank": rank, "status": status}
        return f"{shikona}: {rank}, {status}"

    @function_tool(failure_error_function=None)
    def submit_banzuke_entries(stable: str, basho: str) -> dict:
        """Submit the stable's entries to the association."""
        entries = store.get("entries", {})
        for shikona, rank in BANZUKE[basho].items():
            if shikona not in STABLES[stable]:
                continue
            if shikona not in entries:
                raise ValueError(f"entries refused: {shikona} ({rank}) is on the {basho} banzuke and was not entered")
            if entries[shikona]["rank"] != rank:
                raise ValueError(f"entries refused: {shikona} is {rank} on the {basho} banzuke, entered as {entries[shikona]['rank']}")
            if shikona in KYUJO and entries[shikona]["status"] != "kyujo":
                raise ValueError(f"entries refused: {shikona} is listed kyujo ({KYUJO[shikona]}), entered as {entries[shikona]['status']}")
        return {"stable": stable, "basho": basho, "receipt": f"NSK-{basho}-{stable[:4].upper()}-{len(entries)}"}

    officer = Agent(name="medical_officer", model=model, tools=[fitness_record],
                    instructions="You are the stable's medical officer: check a rikishi's fitness record and report.")
    return Agent(name="stable_manager", model=model,
                 tools=[recall_stable_notes, save_entry_plan, rikishi_record,
                        officer.as_tool(tool_name="medical_officer", tool_description="Ask the medical officer about a rikishi."),
                        remember_entry, submit_banzuke_entries],
                 instructions="You enter the stable's rikishi for the basho, one tool at a time.")


STABLES = {i["stable"]: set(i["roster"]) for i in INPUTS}


async def _run(inp, server):
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client)
    set_default_openai_api("chat_completions")
    try:
        return await Runner.run(build(server.model, {}), json.dumps(inp), max_turns=60,
                                run_config=RunConfig(workflow_name=RUN_NAME))
    finally:
        await client.close()


def record(inp, path, server):
    processor = TrajdebugProcessor(path=str(path), name=RUN_NAME, task=f"{inp['stable']} entries for basho {inp['basho']}")
    set_trace_processors([processor])
    try:
        asyncio.run(_run(inp, server))
    except Exception as exc:  # the SDK's trace records the failure
        if type(exc).__module__.split(".")[0] != "agents":
            raise
    finally:
        set_trace_processors([])
