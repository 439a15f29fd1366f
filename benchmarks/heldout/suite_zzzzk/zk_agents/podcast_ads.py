"""Podcast network ad operations: book host-read mid-rolls for a campaign (OpenAI Agents SDK route)."""

from __future__ import annotations

import ast
import asyncio
import json

from agents import Agent, ModelSettings, OpenAIResponsesModel, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

import common
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

RUN_NAME = "podcast-ad-ops"
ROUTE = "openai_agents"
DOMAIN = "podcast network ad operations: host-read insertion booking against an insertion order"
SHAPE = "Agents SDK: traffic agent with parallel tool calls, a show-research sub-agent as a tool, episode listing, per-episode marker lookups, per-episode bookings, insertion-order confirmation"
SWITCH = None

SHOWS = {
    "DC-1": {"title": "Deep Cuts", "host": "Mina Osei"},
    "DC-2": {"title": "Deep Cut Radio", "host": "Rob Tan"},
    "KL-7": {"title": "Kiln Talk", "host": "Asha Verma"},
    "PL-3": {"title": "Plate & Press", "host": "Jonas Berg"},
    "SS-5": {"title": "Stagehands", "host": "Lea Morin"},
}
EPISODES = {
    "DC-1": [(88, 2950), (89, 1520), (90, 3100), (91, 2700)],
    "DC-2": [(212, 1800), (213, 1750)],
    "KL-7": [(40, 2400), (41, 1100), (42, 2600)],
    "PL-3": [(15, 1900), (16, 2100), (17, 2000), (18, 2300)],
    "SS-5": [(7, 3300), (8, 3000), (9, 2800)],
}
CAMPAIGNS = {
    "CMP-901": {"advertiser": "Loomwell Yarns", "show": "DC-1", "placement": "mid-roll", "episodes": 4, "impressions": 40000},
    "CMP-902": {"advertiser": "Brightkiln Supply", "show": "KL-7", "placement": "mid-roll", "episodes": 3, "impressions": 24000},
    "CMP-903": {"advertiser": "Inkwell Presses", "show": "PL-3", "placement": "mid-roll", "episodes": 4, "impressions": 30000},
    "CMP-904": {"advertiser": "Rigging Co-op", "show": "SS-5", "placement": "mid-roll", "episodes": 3, "impressions": 18000},
    "CMP-905": {"advertiser": "Glaze Lab", "show": "KL-7", "placement": "mid-roll", "episodes": 3, "impressions": 15000},
}
INPUTS = [
    {"campaign": "CMP-901", "show_name": "Deep Cuts", "month": "2026-05"},
    {"campaign": "CMP-902", "show_name": "Kiln Talk", "month": "2026-05"},
    {"campaign": "CMP-903", "show_name": "Plate & Press", "month": "2026-06"},
    {"campaign": "CMP-904", "show_name": "Stagehands", "month": "2026-06"},
    {"campaign": "CMP-905", "show_name": "Kiln Talk", "month": "2026-07"},
]


@function_tool
def search_shows(query: str) -> list:
    """Search the network's show directory by title."""
    q = query.lower()
    return [{"show_id": k, **v} for k, v in SHOWS.items() if q.split()[0] in v["title"].lower()]


@function_tool
def get_campaign(campaign_id: str) -> dict:
    """The insertion order of a campaign."""
    return {"campaign_id": campaign_id, **CAMPAIGNS[campaign_id]}


@function_tool
def list_episodes(show_id: str, month: str) -> dict:
    """Episodes of a show releasing in a month, with their lengths in seconds."""
    eps = [{"episode": n, "length_s": s} for n, s in EPISODES[show_id]]
    if SWITCH == "zk-pod-5":
        eps = eps[:2]
    return {"show_id": show_id, "month": month, "episodes": eps}


@function_tool
def get_ad_markers(show_id: str, episode: int) -> dict:
    """Host-read ad markers (seconds from start) of one episode."""
    n, length = next(e for e in EPISODES[show_id] if e[0] == episode)
    if SWITCH == "zk-pod-1":
        n, length = max(EPISODES[show_id], key=lambda e: e[0])
    return {"show_id": show_id, "episode": episode, "pre_roll": 0, "mid_roll": round(length * 0.48), "post_roll": length - 30}


BOOKED: dict = {}


@function_tool(failure_error_function=None)
def book_insertion(campaign_id: str, show_id: str, episode: int, placement: str, offset_s: int, impressions: int) -> dict:
    """Book one host-read insertion in an episode."""
    c = CAMPAIGNS[campaign_id]
    if show_id != c["show"]:
        raise ValueError(f"show {show_id} is not on the insertion order of {campaign_id} ({c['advertiser']})")
    if placement != c["placement"]:
        raise ValueError(f"{campaign_id} bought {c['placement']} only, not {placement}")
    ep = next((e for e in EPISODES[show_id] if e[0] == episode), None)
    if ep is None:
        raise ValueError(f"{show_id} has no episode {episode}")
    if offset_s >= ep[1]:
        raise ValueError(f"offset {offset_s} s is past the end of episode {episode} ({ep[1]} s)")
    BOOKED.setdefault(campaign_id, []).append(episode)
    return {"booking": f"BK-{campaign_id[4:]}-{episode}", "episode": episode, "offset_s": offset_s, "impressions": impressions}


@function_tool(failure_error_function=None)
def confirm_insertion_order(campaign_id: str, episodes: list[int]) -> dict:
    """Confirm the insertion order once every episode is booked."""
    c = CAMPAIGNS[campaign_id]
    if len(episodes) != c["episodes"]:
        raise ValueError(f"{campaign_id} needs {c['episodes']} episodes booked, {len(episodes)} were")
    return {"campaign_id": campaign_id, "status": "confirmed", "episodes": episodes}


def _outputs(request):
    calls = [i for i in request.body.get("input") or [] if isinstance(i, dict) and i.get("type") == "function_call"]
    outs = {i["call_id"]: i["output"] for i in request.body.get("input") or []
            if isinstance(i, dict) and i.get("type") == "function_call_output"}
    done = []
    for c in calls:
        out = outs.get(c["call_id"])
        try:
            val = ast.literal_eval(out) if out else None
        except (ValueError, SyntaxError):
            val = out
        done.append((c["name"], json.loads(c["arguments"]), val))
    return done


def brain(request):
    instructions = request.body.get("instructions") or ""
    done = _outputs(request)
    names = [d[0] for d in done]
    first = request.body["input"][0]["content"] if isinstance(request.body["input"], list) else request.body["input"]
    if instructions.startswith("You research shows"):
        if "search_shows" not in names:
            return Reply(tool_calls=(tool_call("search_shows", {"query": first}),))
        hits = done[-1][2]
        pick = next(h for h in hits if h["title"] == first)
        if SWITCH == "zk-pod-2" and len(hits) > 1:
            pick = next(h for h in hits if h["title"] != first)
        return json.dumps({"show_id": pick["show_id"], "title": pick["title"]})
    ask = json.loads(first)
    if not done:
        return Reply(tool_calls=(tool_call("show_researcher", {"input": ask["show_name"]}),
                                 tool_call("get_campaign", {"campaign_id": ask["campaign"]})))
    show = next(d[2] for d in done if d[0] == "show_researcher")
    show = show if isinstance(show, dict) else json.loads(show)
    camp = next(d[2] for d in done if d[0] == "get_campaign")
    if "list_episodes" not in names:
        return Reply(tool_calls=(tool_call("list_episodes", {"show_id": show["show_id"], "month": ask["month"]}),))
    eps = next(d[2] for d in done if d[0] == "list_episodes")["episodes"]
    if "get_ad_markers" not in names:
        return Reply(tool_calls=tuple(tool_call("get_ad_markers", {"show_id": show["show_id"], "episode": e["episode"]})
                                      for e in eps))
    markers = [d[2] for d in done if d[0] == "get_ad_markers"]
    if "book_insertion" not in names:
        per = camp["impressions"] // len(eps)
        calls = []
        for m in markers:
            placement = "pre-roll" if SWITCH == "zk-pod-3" else camp["placement"]
            episode = m["episode"] + 1 if SWITCH == "zk-pod-4" and m is markers[-1] else m["episode"]
            calls.append(tool_call("book_insertion", {"campaign_id": camp["campaign_id"], "show_id": show["show_id"],
                                                      "episode": episode, "placement": placement,
                                                      "offset_s": m["mid_roll"], "impressions": per}))
        return Reply(tool_calls=tuple(calls))
    if "confirm_insertion_order" not in names:
        booked = [d[2]["episode"] for d in done if d[0] == "book_insertion"]
        return Reply(tool_calls=(tool_call("confirm_insertion_order", {"campaign_id": camp["campaign_id"], "episodes": booked}),))
    return f"Booked {camp['advertiser']} on {show['title']}: {len(markers)} mid-rolls, insertion order confirmed."


def _agents():
    client = AsyncOpenAI(base_url=common.SERVER.base_url, api_key="not-needed", max_retries=0)  # one per event loop
    model = OpenAIResponsesModel(model=common.MODEL, openai_client=client)
    researcher = Agent(name="show_researcher", instructions="You research shows: find the show id for a title.",
                       model=model, tools=[search_shows])
    return Agent(name="traffic_manager", model=model, model_settings=ModelSettings(parallel_tool_calls=True),
                 instructions="You book podcast ad insertions against the campaign's insertion order.",
                 tools=[researcher.as_tool(tool_name="show_researcher", tool_description="Find a show's id by title."),
                        get_campaign, list_episodes, get_ad_markers, book_insertion, confirm_insertion_order])


def record(inp: dict, path: str) -> None:
    BOOKED.clear()
    set_trace_processors([TrajdebugProcessor(path=path, name=RUN_NAME,
                                             task=f"book {inp['campaign']} on {inp['show_name']} for {inp['month']}")])
    try:
        asyncio.run(Runner.run(_agents(), json.dumps(inp), run_config=RunConfig(workflow_name=RUN_NAME)))
    except Exception:  # noqa: BLE001 - the run records how it ended
        pass
    finally:
        set_trace_processors([])


CASES = [
    {"case": "zk-pod-1", "input": 1, "switch": "zk-pod-1", "fault_kind": "tool_ignores_argument",
     "root": ("get_ad_markers", 2, "tool"), "failure": ("book_insertion", 2),
     "description": "The marker lookup ignores the episode it is asked for and answers the latest episode's "
                    "markers, so the mid-roll for the 1,100 s episode 41 is placed at 1,248 s (episode 42's "
                    "marker), past its end."},
    {"case": "zk-pod-2", "input": 0, "switch": "zk-pod-2", "fault_kind": "subagent_wrong_entity",
     "root": ("response", 3, "llm"), "failure": ("book_insertion", 1),
     "description": "The show-research sub-agent answers Deep Cut Radio (DC-2) for 'Deep Cuts', and the booking "
                    "system refuses a show that is not on the insertion order."},
    {"case": "zk-pod-3", "input": 2, "switch": "zk-pod-3", "fault_kind": "wrong_tool_args",
     "root": ("response", 6, "llm"), "failure": ("book_insertion", 1),
     "description": "The traffic model books the insertions as pre-roll although the insertion order bought "
                    "mid-roll only."},
    {"case": "zk-pod-4", "input": 3, "switch": "zk-pod-4", "fault_kind": "hallucinated_value",
     "root": ("response", 6, "llm"), "failure": ("book_insertion", 3),
     "description": "The traffic model books the last insertion in episode 10 of Stagehands, an episode no "
                    "listing returned, and the booking system has no such episode."},
    {"case": "zk-pod-5", "input": 0, "switch": "zk-pod-5", "fault_kind": "truncated_result",
     "root": ("list_episodes", 1, "tool"), "failure": ("confirm_insertion_order", 1),
     "description": "The episode listing returns only the first two of the month's four Deep Cuts episodes, so "
                    "only two insertions are booked and the insertion order cannot be confirmed."},
]
