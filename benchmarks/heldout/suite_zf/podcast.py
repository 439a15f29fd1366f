"""Podcast episode editing: OpenAI Agents SDK (showrunner with an audio-editor agent as a tool, hand-off to the publisher)."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from .common import Case
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "podcast-edit-bay", "openai_agents", "podcast episode editing", "jsonl"
SHAPE = "showrunner: episode, memory, transcript, edit plan -> audio_editor sub-agent (cuts, normalize, measure) -> export -> hand-off to publisher (feed spec, publish)"

JOBS = {
    "ns42": {"episode": "NS-42", "feed": "nightshift-main", "publish": "2026-05-05"},
    "tg07": {"episode": "TG-07", "feed": "tidegauge-talk", "publish": "2026-05-12"},
    "ns43": {"episode": "NS-43", "feed": "nightshift-main", "publish": "2026-05-19"},
    "tg08": {"episode": "TG-08", "feed": "tidegauge-talk", "publish": "2026-05-26"},
    "bk01": {"episode": "BK-01", "feed": "backlot-notes", "publish": "2026-06-02"},
    "bk02": {"episode": "BK-02", "feed": "backlot-notes", "publish": "2026-06-09"},
}
REFS = ["ns43", "tg08", "bk01", "bk02"]
EPISODES = {
    "NS-42": {"duration_s": 3120, "lufs": -21.5, "events": [[750, 840, "sponsor read SP-77"], [1865, 1868, "cough"]]},
    "TG-07": {"duration_s": 2700, "lufs": -19.0, "events": [[300, 330, "phone ring"], [1960, 1964, "cough"], [2400, 2460, "sponsor read SP-80"]]},
    "NS-43": {"duration_s": 2990, "lufs": -20.0, "events": [[600, 690, "sponsor read SP-81"]]},
    "TG-08": {"duration_s": 2500, "lufs": -18.0, "events": [[1200, 1203, "cough"]]},
    "BK-01": {"duration_s": 1900, "lufs": -17.5, "events": [[100, 130, "door slam"], [900, 990, "sponsor read SP-82"]]},
    "BK-02": {"duration_s": 2100, "lufs": -22.0, "events": []},
}
MEMORY = {"nightshift-main": ["NS-41: keep the sponsor read at 12:30, SP-77 extended by the sponsor"],
          "tidegauge-talk": [], "backlot-notes": []}
FEEDS = {"nightshift-main": {"lufs": -16.0, "tolerance": 1.0}, "tidegauge-talk": {"lufs": -16.0, "tolerance": 1.0},
         "backlot-notes": {"lufs": -14.0, "tolerance": 1.0}}

CASES = [
    Case("zf_pc_1", "plan_error", "ns42", "generation fake-model", 4, "publish_episode", 1,
         "the showrunner's edit plan applies the cuts earliest first, so the later cut lands 90 s after the cough."),
    Case("zf_pc_2", "truncated_result", "tg07", "get_transcript", 1, "publish_episode", 1,
         "get_transcript returns only the first 1800 s of segments, so the cough at 32:40 never reaches the edit plan."),
    Case("zf_pc_3", "context_pollution", "ns42", "load_session_memory", 1, "publish_episode", 1,
         "load_session_memory hands the showrunner the NS-41 note to keep the sponsor read, and the plan keeps an expired read in NS-42."),
    Case("zf_pc_4", "tool_ignores_argument", "tg07", "normalize", 1, "publish_episode", 1,
         "normalize ignores target_lufs and levels the master to the -23 LUFS broadcast default."),
    Case("zf_pc_5", "format_drift", "ns42", "generation fake-model", 13, "publish_episode", 1,
         "the publisher's model writes publish_at as 05/05/2026 instead of an ISO 8601 date-time."),
]


class PublishRejected(RuntimeError):
    pass


def _tool_results(msgs: list) -> dict:
    names = {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
    out: dict = {}
    for m in msgs:
        if m["role"] == "tool":
            content = m["content"]
            for reader in (json.loads, ast.literal_eval):
                try:
                    content = reader(content)
                    break
                except (TypeError, ValueError, SyntaxError):
                    pass
            out.setdefault(names.get(m["tool_call_id"], "?"), []).append(content)
    return out


def _user(msgs: list) -> str:
    return next(m["content"] for m in msgs if m["role"] == "user")


def policy(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    done = _tool_results(msgs)
    if system.startswith("You are the audio editor"):
        edl = json.loads(_user(msgs))
        n = len(done.get("cut_range", []))
        if n < len(edl["cuts"]):
            c = edl["cuts"][n]
            return Reply(tool_calls=(tool_call("cut_range", {"episode": edl["episode"], "start_s": c[0], "end_s": c[1]}),))
        if "normalize" not in done:
            return Reply(tool_calls=(tool_call("normalize", {"episode": edl["episode"], "target_lufs": edl["target_lufs"]}),))
        if "measure_loudness" not in done:
            return Reply(tool_calls=(tool_call("measure_loudness", {"episode": edl["episode"]}),))
        return json.dumps({"episode": edl["episode"], "cuts": n, "lufs": done["measure_loudness"][0]["lufs"]})
    job = json.loads(_user(msgs))
    if system.startswith("You are the showrunner"):
        if "fetch_episode" not in done:
            return Reply(tool_calls=(tool_call("fetch_episode", {"episode": job["episode"]}),))
        if "load_session_memory" not in done:
            return Reply(tool_calls=(tool_call("load_session_memory", {"feed": job["feed"]}),))
        if "get_transcript" not in done:
            return Reply(tool_calls=(tool_call("get_transcript", {"episode": job["episode"]}),))
        if "audio_editor" not in done:
            segments = done["get_transcript"][0]["segments"]
            notes = " ".join(done["load_session_memory"][0]["notes"])
            cuts = [[s["start_s"], s["end_s"]] for s in segments if s["tag"] != "speech"
                    and not (s["tag"] == "sponsor" and "keep the sponsor read" in notes)]
            cuts.sort(reverse=not active("zf_pc_1"))
            spec = {"episode": job["episode"], "cuts": cuts, "target_lufs": -16.0 if "backlot" not in job["feed"] else -14.0}
            return Reply(tool_calls=(tool_call("audio_editor", {"input": json.dumps(spec)}),))
        if "export_master" not in done:
            return Reply(tool_calls=(tool_call("export_master", {"episode": job["episode"]}),))
        return Reply(tool_calls=(tool_call("transfer_to_publisher", {}),))
    if system.startswith("You publish"):
        if "get_feed_spec" not in done:
            return Reply(tool_calls=(tool_call("get_feed_spec", {"feed": job["feed"]}),))
        if "publish_episode" not in done:
            y, m, d = job["publish"].split("-")
            when = f"{m}/{d}/{y} 06:00" if active("zf_pc_5") else f"{job['publish']}T06:00:00Z"
            master = done["export_master"][0]
            return Reply(tool_calls=(tool_call("publish_episode", {"feed": job["feed"], "episode": job["episode"],
                                                                   "file": master["file"], "publish_at": when}),))
        return "Published."
    return "ok"


def build(model: Any, masters: dict) -> Any:
    from agents import Agent, function_tool

    @function_tool
    def fetch_episode(episode: str) -> dict:
        """Raw episode metadata from the recording library."""
        ep = EPISODES[episode]
        masters[episode] = {"events": [list(e) for e in ep["events"]], "lufs": ep["lufs"], "duration_s": ep["duration_s"]}
        return {"episode": episode, "duration_s": ep["duration_s"], "raw_lufs": ep["lufs"], "transcript": f"TR-{episode}"}

    @function_tool
    def load_session_memory(feed: str) -> dict:
        """Editing notes remembered for a feed."""
        notes = list(MEMORY[feed]) if active("zf_pc_3") else []
        return {"feed": feed, "notes": notes}

    @function_tool
    def get_transcript(episode: str) -> dict:
        """Tagged transcript segments (speech, sponsor, noise) of an episode."""
        segs = []
        for start, end, label in EPISODES[episode]["events"]:
            tag = "sponsor" if label.startswith("sponsor") else "noise"
            segs.append({"start_s": start, "end_s": end, "tag": tag, "label": label})
        segs.append({"start_s": 0, "end_s": 60, "tag": "speech", "label": "intro"})
        segs.sort(key=lambda s: s["start_s"])
        if active("zf_pc_2"):
            segs = [s for s in segs if s["start_s"] < 1800]
        return {"episode": episode, "segments": segs}

    @function_tool
    def cut_range(episode: str, start_s: int, end_s: int) -> dict:
        """Cut a time range out of the working master; later audio moves earlier."""
        m = masters[episode]
        kept = []
        for e in m["events"]:
            if e[0] >= start_s and e[1] <= end_s:
                continue
            if e[0] >= end_s:
                e = [e[0] - (end_s - start_s), e[1] - (end_s - start_s), e[2]]
            kept.append(e)
        m["events"] = kept
        m["duration_s"] -= end_s - start_s
        return {"episode": episode, "removed_s": end_s - start_s, "duration_s": m["duration_s"]}

    @function_tool
    def normalize(episode: str, target_lufs: float) -> dict:
        """Normalize the working master's integrated loudness to a target."""
        masters[episode]["lufs"] = -23.0 if active("zf_pc_4") else target_lufs
        return {"episode": episode, "status": "normalized"}

    @function_tool
    def measure_loudness(episode: str) -> dict:
        """Measure the working master's integrated loudness."""
        return {"episode": episode, "lufs": masters[episode]["lufs"]}

    @function_tool
    def export_master(episode: str) -> dict:
        """Render the working master to an MP3 file."""
        return {"file": f"s3://edit-bay/{episode}/master.mp3", "duration_s": masters[episode]["duration_s"]}

    @function_tool
    def get_feed_spec(feed: str) -> dict:
        """Loudness and format requirements of a feed."""
        return {"feed": feed, **FEEDS[feed], "format": "mp3 128k"}

    @function_tool(failure_error_function=None)
    def publish_episode(feed: str, episode: str, file: str, publish_at: str) -> dict:
        """Publish the episode to the feed (the host runs its QC first)."""
        import datetime

        try:
            datetime.datetime.strptime(publish_at, "%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            raise PublishRejected(f"HTTP 422 {{\"error\": \"publish_at '{publish_at}' is not an ISO 8601 date-time\"}}") from None
        m, spec = masters[episode], FEEDS[feed]
        if abs(m["lufs"] - spec["lufs"]) > spec["tolerance"]:
            raise PublishRejected(f"HTTP 422 {{\"error\": \"QC: integrated loudness {m['lufs']:.1f} LUFS outside "
                                  f"{spec['lufs']:.0f} +/- {spec['tolerance']:.0f} LUFS\"}}")
        for start, _end, label in m["events"]:
            mm, ss = divmod(start, 60)
            if label.startswith("sponsor"):
                raise PublishRejected(f"HTTP 409 {{\"error\": \"QC: {label} still in master at {mm}:{ss:02d}; sponsor slot "
                                      "ended 2026-04-30\"}")
            raise PublishRejected(f"HTTP 422 {{\"error\": \"QC: flagged {label} still audible at {mm}:{ss:02d}\"}}")
        return {"episode": episode, "guid": f"{feed}:{episode}", "status": "scheduled"}

    editor = Agent(name="audio_editor", instructions="You are the audio editor: apply the edit list, then normalize and measure.",
                   tools=[cut_range, normalize, measure_loudness], model=model)
    publisher = Agent(name="publisher", instructions="You publish finished episodes to their feed.",
                      tools=[get_feed_spec, publish_episode], model=model)
    return Agent(name="showrunner", instructions="You are the showrunner: plan the edit, have it made, export, then hand off.",
                 tools=[fetch_episode, load_session_memory, get_transcript,
                        editor.as_tool(tool_name="audio_editor", tool_description="Apply an edit decision list (JSON)."),
                        export_master], handoffs=[publisher], model=model)


def record(server: Any, key: str, path: Path) -> None:
    from agents import OpenAIChatCompletionsModel, RunConfig, Runner, set_trace_processors
    from agents.exceptions import UserError
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    server.use(policy)
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
    set_trace_processors([TrajdebugProcessor(path=str(path), name=AGENT, task=json.dumps(JOBS[key]))])
    try:
        Runner.run_sync(build(model, {}), json.dumps(JOBS[key]), run_config=RunConfig(workflow_name=AGENT), max_turns=20)
    except (PublishRejected, UserError):
        pass
    finally:
        set_trace_processors([])
