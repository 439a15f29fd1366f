"""Court stenography: certify a hearing transcript with the court registry (recording SDK)."""
from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import trajdebug

from .common import Case
from .kit import active
from .llmclient import ask, client_for, last_user

AGENT = "court-stenographer"
ROUTE = "sdk"

GUIDES = {
    "civil": {"court": "civil", "lines_per_page": 25, "rate_per_page": 4.10, "cover_pages": 1},
    "family": {"court": "family", "lines_per_page": 28, "rate_per_page": 3.65, "cover_pages": 2},
}
COURTS = {"H-1041": "civil", "H-1088": "family", "H-1102": "civil", "H-1150": "family", "H-1187": "civil", "H-1203": "family"}
NAMES = ["MS. OKAFOR", "MR. LINDQVIST", "MR. BRANNIGAN", "MS. TEMPLE", "DR. ASHWORTH", "MS. QUAYLE"]
REMARKS = [
    "I refer the witness to Exhibit {e}.",
    "Could you describe what happened next?",
    "The invoice was signed on the fourteenth.",
    "Objection, leading the witness.",
    "Sustained. Please rephrase.",
    "I have no further questions for now.",
    "We met at the depot twice that week.",
    "That is correct, to the best of my memory.",
]


def hearing(hid: str) -> dict:
    rng = random.Random(hid)
    parties = rng.sample(NAMES, 3)
    exhibits = sorted(rng.sample(range(1, 7), 2))
    segments = []
    for i in range(1, 5):
        lines = []
        for j in range(rng.randint(7, 11)):
            who = "THE COURT" if j % 4 == 0 else parties[j % 3]
            text = rng.choice(REMARKS).format(e=exhibits[(i + j) % 2])
            lines.append(f"{who}: {text}")
        if i == 2:
            lines.insert(3, f"THE COURT: Time noted: 11:{10 + rng.randint(0, 40)}. We resume after the break.")
        segments.append({"segment": i, "duration_sec": rng.randint(1500, 2400), "lines": lines})
    minutes = math.ceil(sum(s["duration_sec"] for s in segments) / 60) + rng.randint(2, 9)
    return {
        "hearing": hid, "court": COURTS[hid], "case_no": f"CV-{rng.randint(20000, 29999)}",
        "judge": rng.choice(["HHJ Moreton", "DJ Farrant", "HHJ Ilesanmi"]), "parties": parties,
        "exhibits_admitted": [f"Exhibit {e}" for e in exhibits], "session_minutes": minutes, "segments": segments,
    }


def policy(request):
    prompt = last_user(request)
    m = re.search(r"audio_ref=A-(H-\d+)-(\d)", prompt)
    if m:
        seg = hearing(m.group(1))["segments"][int(m.group(2)) - 1]
        return "\n".join(seg["lines"])
    if prompt.startswith("List the exhibits"):
        found = sorted(set(re.findall(r"Exhibit \d+", prompt)))
        if active("court-04"):
            found.append("Exhibit 7")
        return json.dumps({"exhibits": found})
    return "OK"


class RegistryRejected(Exception):
    pass


@trajdebug.step(kind="tool")
def fetch_docket(hearing_id: str) -> dict:
    h = hearing(hearing_id)
    return {k: h[k] for k in ("hearing", "court", "case_no", "judge", "parties", "exhibits_admitted", "session_minutes")}


@trajdebug.step(kind="retrieval")
def search_style_guide(court: str) -> dict:
    if active("court-03"):
        return dict(GUIDES["civil"])  # the index answers its default guide whatever court is asked
    return dict(GUIDES[court])


@trajdebug.step(kind="tool")
def fetch_steno_log(hearing_id: str) -> dict:
    h = hearing(hearing_id)
    n = sum(len(s["lines"]) for s in h["segments"])
    return {"hearing": hearing_id, "machine": "Luminex-II", "lines": n, "segments": len(h["segments"])}


@trajdebug.step(kind="tool")
def fetch_audio_segment(hearing_id: str, index: int) -> dict:
    seg = hearing(hearing_id)["segments"][index - 1]
    return {"audio_ref": f"A-{hearing_id}-{index}", "segment": index, "duration_sec": seg["duration_sec"], "codec": "opus"}


@trajdebug.step(kind="llm")
def transcribe_segment(client, audio: dict) -> str:
    return ask(client, "You are a court reporter. Produce verbatim speaker lines.",
               f"Transcribe audio_ref={audio['audio_ref']} ({audio['duration_sec']} s).")


@trajdebug.step(kind="parse")
def parse_speaker_lines(text: str, index: int) -> list[dict]:
    out = []
    for raw in text.splitlines():
        if active("court-02") and index == 2 and raw.count(":") > 1:
            continue
        speaker, _, said = raw.partition(":")
        out.append({"speaker": speaker.strip(), "text": said.strip()})
    return out


@trajdebug.step(kind="state")
def append_to_transcript(index: int, lines: list[dict]) -> int:
    transcript = trajdebug.current_run().state.setdefault("transcript", {})
    key = str(index)
    if active("court-05") and index == 3:
        key = str(index - 1)
    transcript[key] = lines
    return len(transcript)


@trajdebug.step(kind="llm")
def identify_exhibits(client, transcript: dict) -> str:
    body = "\n".join(f"{ln['speaker']}: {ln['text']}" for seg in transcript.values() for ln in seg)
    return ask(client, "You index court transcripts.", "List the exhibits referred to, as JSON.\n" + body)


@trajdebug.step(kind="parse")
def parse_exhibits(text: str) -> list[str]:
    return list(json.loads(text)["exhibits"])


@trajdebug.step
def paginate(transcript: dict, guide: dict) -> dict:
    lines = sum(len(seg) for seg in transcript.values())
    body_pages = math.ceil(lines / guide["lines_per_page"])
    return {"lines": lines, "lines_per_page": guide["lines_per_page"], "pages": body_pages + guide["cover_pages"]}


@trajdebug.step
def compute_fee(layout: dict, guide: dict) -> dict:
    return {"pages": layout["pages"], "rate": guide["rate_per_page"], "fee": round(layout["pages"] * guide["rate_per_page"], 2)}


@trajdebug.step
def total_recorded_time(audio: list[dict]) -> dict:
    secs = sum(a["duration_sec"] for a in audio)
    minutes = secs if active("court-01") else math.ceil(secs / 60)
    return {"recorded_minutes": minutes, "segments": len(audio)}


@trajdebug.step(kind="tool")
def certify_transcript(docket: dict, steno: dict, transcript: dict, layout: dict, fee: dict, exhibits: list[str], timing: dict) -> dict:
    h = hearing(docket["hearing"])
    guide = GUIDES[h["court"]]
    if sorted(transcript) != [str(i) for i in range(1, steno["segments"] + 1)]:
        have = ", ".join(sorted(transcript))
        raise RegistryRejected(f"HTTP 422 Unprocessable Entity: transcript for {docket['case_no']} holds segments [{have}], audio index lists {steno['segments']}")
    if layout["lines"] != steno["lines"]:
        raise RegistryRejected(f"HTTP 422 Unprocessable Entity: line count {layout['lines']} does not match stenotype log ({steno['lines']} lines, {steno['machine']})")
    if layout["lines_per_page"] != guide["lines_per_page"]:
        raise RegistryRejected(f"HTTP 422 Unprocessable Entity: page layout {layout['lines_per_page']} lines/page; {h['court']} court practice direction requires {guide['lines_per_page']}")
    for ex in exhibits:
        if ex not in docket["exhibits_admitted"]:
            raise RegistryRejected(f"HTTP 409 Conflict: exhibit index lists '{ex}', which was not admitted in {docket['case_no']}")
    if timing["recorded_minutes"] > docket["session_minutes"]:
        raise RegistryRejected(f"HTTP 422 Unprocessable Entity: recorded time {timing['recorded_minutes']} min exceeds listed session length {docket['session_minutes']} min")
    return {"certificate": f"CERT-{docket['case_no']}", "pages": fee["pages"], "fee": fee["fee"], "status": "certified"}


def record(hearing_id: str, path: Path, server) -> None:
    server.use(policy)
    client = client_for(server)
    try:
        with trajdebug.run(AGENT, task=f"certify the transcript of hearing {hearing_id}", path=str(path)):
            with trajdebug.step("hearing_request", kind="input") as s:
                s.output = {"hearing": hearing_id, "request": "certified transcript, standard turnaround"}
            docket = fetch_docket(hearing_id)
            guide = search_style_guide(docket["court"])
            steno = fetch_steno_log(hearing_id)
            audio = []
            for i in range(1, steno["segments"] + 1):
                clip = fetch_audio_segment(hearing_id, i)
                audio.append(clip)
                text = transcribe_segment(client, clip)
                lines = parse_speaker_lines(text, i)
                append_to_transcript(i, lines)
            transcript = dict(trajdebug.current_run().state["transcript"])
            exhibits = parse_exhibits(identify_exhibits(client, transcript))
            layout = paginate(transcript, guide)
            fee = compute_fee(layout, guide)
            timing = total_recorded_time(audio)
            certify_transcript(docket, steno, transcript, layout, fee, exhibits, timing)
    except RegistryRejected:
        pass


MAIN = ["H-1041", "H-1088"]
REF_INPUTS = ["H-1102", "H-1150", "H-1187", "H-1203"]
CASES = [
    Case("court-01", "unit_error", "H-1041", ("total_recorded_time", 1), ("certify_transcript", 1),
         "The recorded-time total sums segment durations in seconds and reports them as minutes."),
    Case("court-02", "lossy_parsing", "H-1041", ("parse_speaker_lines", 2), ("certify_transcript", 1),
         "The speaker-line parser drops lines of segment 2 whose text holds a second colon (a time stamp)."),
    Case("court-03", "tool_ignores_argument", "H-1088", ("search_style_guide", 1), ("certify_transcript", 1),
         "The style-guide search ignores the court it is asked for and returns the civil layout for a family hearing."),
    Case("court-04", "hallucinated_value", "H-1041", ("identify_exhibits", 1), ("certify_transcript", 1),
         "The exhibit indexer adds an Exhibit 7 that no transcript line mentions."),
    Case("court-05", "bad_memory_write", "H-1088", ("append_to_transcript", 3), ("certify_transcript", 1),
         "The transcript writer stores segment 3 under segment 2's key, overwriting it."),
]
