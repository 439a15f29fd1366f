"""Lineal Subtitles: an SDH subtitling job run through the trajdebug recording API.

Shape: style-guide retrieval and speaker memory, batches of dialogue each handled by a translator
sub-agent (character notes tool, context builder, model call, parse, speaker-memory writes), async
reading-speed checks in parallel with a condensing model call when a line reads too fast, a cast check,
SRT build and validation, and a delivery upload retried once when the portal drops the connection.
~30-50 steps.
"""

from __future__ import annotations

import asyncio
import json

import trajdebug

from suite_common import complete, last_user, payload_after, system_of

NAME = "lineal-subtitles"
ROUTE = "sdk"
DOMAIN = "subtitling agency jobs"
SHAPE = "retrieval + memory -> per batch translator sub-agent (notes tool, context, model, parse, memory writes) -> parallel async speed checks + condense model -> cast check -> SRT build/validate -> upload with retry"

LINES_JOINED_WITH_SLASH = False
SPEAKER_LABEL_FROM_PREVIOUS = False
CONTEXT_CARRIES_TRANSLATION = False
NOTES_FROM_SEQUEL = False
SPEED_CHECK_DEFAULT_LIMIT = False

CHARACTERS = {
    "HARB-1": {"S1": "MARTA", "S2": "JONAH", "S3": "ELSIE"},
    "HARB-2": {"S1": "MARTHA", "S2": "JONAH", "S3": "ELSIE"},
    "KILN-1": {"S1": "DEV", "S2": "ROSA"},
    "PASS-1": {"S1": "OTTO", "S2": "LENA", "S3": "PRIYA"},
    "GRID-1": {"S1": "SAM", "S2": "NOOR"},
}
STYLE = {
    "Northlight": {"max_chars_per_line": 42, "max_cps": 15, "batch": 4},
    "Kiln Films": {"max_chars_per_line": 37, "max_cps": 17, "batch": 3},
    "Passage TV": {"max_chars_per_line": 42, "max_cps": 17, "batch": 4},
}
WORDS = {"es": {"the": "el", "and": "y", "you": "tú", "I": "yo", "we": "nosotros", "no": "no", "yes": "sí", "boat": "barco",
                "tonight": "esta noche", "well": "pues", "really": "de verdad"},
         "fr": {"the": "le", "and": "et", "you": "tu", "I": "je", "we": "nous", "yes": "oui", "boat": "bateau",
                "tonight": "ce soir", "well": "bon", "really": "vraiment"},
         "de": {"the": "der", "and": "und", "you": "du", "I": "ich", "we": "wir", "yes": "ja", "boat": "Boot",
                "tonight": "heute Abend", "well": "na ja", "really": "wirklich"}}
FILLERS = {"well", "really", "pues", "de", "verdad", "bon", "vraiment", "na", "ja,", "wirklich", "just", "so"}


def _seg(i, speaker, start, dur, text):
    return {"id": i, "speaker": speaker, "start": start, "end": round(start + dur, 2), "text": text}


INPUTS = [
    {"client": "Northlight", "title": "HARB-1", "lang": "es", "segments": [
        _seg(1, "S1", 2.0, 2.5, "Is the boat ready?"), _seg(2, "S2", 5.0, 3.5, "Well, I really think we should wait until tonight."),
        _seg(3, "S1", 8.5, 2.0, "No. We go now."), _seg(4, "S3", 11.0, 2.5, "Wait for me!"),
        _seg(5, "S3", 14.0, 3.0, "I brought the ropes and the lamp."), _seg(6, "S2", 17.5, 2.0, "Good. Get in."),
        _seg(7, "S1", 20.0, 2.4, "Quiet, all of you."), _seg(8, "S3", 23.0, 3.5, "Marta, you know the tide turns at nine.")]},
    {"client": "Kiln Films", "title": "KILN-1", "lang": "fr", "segments": [
        _seg(1, "S1", 1.0, 2.0, "The kiln is too hot."), _seg(2, "S2", 3.5, 2.5, "Then open the vents."),
        _seg(3, "S1", 6.5, 2.0, "I did, an hour ago."), _seg(4, "S2", 9.0, 3.0, "Well, really, open them again."),
        _seg(5, "S1", 12.5, 2.5, "Yes, chef."), _seg(6, "S2", 15.5, 2.0, "And the glaze?")]},
    {"client": "Passage TV", "title": "PASS-1", "lang": "de", "segments": [
        _seg(1, "S1", 0.5, 2.0, "Tickets, please."), _seg(2, "S2", 3.0, 2.5, "I have mine here somewhere."),
        _seg(3, "S3", 6.0, 2.0, "She is with me."), _seg(4, "S1", 8.5, 2.5, "And you, sir?"),
        _seg(5, "S2", 11.5, 4.5, "We changed trains at the border and I lost it somewhere."), _seg(6, "S3", 16.5, 2.0, "Really? Again?"),
        _seg(7, "S1", 19.0, 2.5, "Then you pay the fare."), _seg(8, "S2", 22.0, 2.0, "Yes, yes.")]},
    {"client": "Northlight", "title": "GRID-1", "lang": "fr", "segments": [
        _seg(1, "S1", 1.0, 2.5, "Power is down on the east side."), _seg(2, "S2", 4.0, 2.0, "All of it?"),
        _seg(3, "S1", 6.5, 3.0, "The hospital runs on the generator."), _seg(4, "S2", 10.0, 2.5, "How long does it last?"),
        _seg(5, "S1", 13.0, 2.0, "Six hours."), _seg(6, "S2", 15.5, 2.5, "Well, then we really have until tonight.")]},
    {"client": "Passage TV", "title": "HARB-1", "lang": "fr", "segments": [
        _seg(1, "S1", 2.0, 2.5, "Is the boat ready?"), _seg(2, "S2", 5.0, 2.5, "Almost. The sail is torn."),
        _seg(3, "S3", 8.0, 2.0, "I can mend it."), _seg(4, "S1", 10.5, 2.0, "How long?"),
        _seg(5, "S3", 13.0, 2.5, "An hour, maybe two."), _seg(6, "S2", 16.0, 2.0, "We have one."),
        _seg(7, "S1", 18.5, 3.0, "Then the boat leaves without the sail.")]},
]
CASES = [
    {"id": "zzzc-subs-slash", "input": 2, "switch": "LINES_JOINED_WITH_SLASH", "fault_kind": "format_drift",
     "root": {"name": "translate", "occurrence": 2, "kind": "llm"},
     "failure": {"name": "validate_srt", "occurrence": 1},
     "description": "The translation of the second batch of PASS-1 marks its line breaks with ' / ' instead of a newline, so segment 5 reaches the SRT as one 60-character line."},
    {"id": "zzzc-subs-speaker", "input": 0, "switch": "SPEAKER_LABEL_FROM_PREVIOUS", "fault_kind": "bad_memory_write",
     "root": {"name": "remember_speaker", "occurrence": 3, "kind": "state"},
     "failure": {"name": "cast_check", "occurrence": 1},
     "description": "The speaker memory stores ELSIE's id S3 with the label of the speaker remembered before her, JONAH, so her lines are labelled JONAH."},
    {"id": "zzzc-subs-context", "input": 4, "switch": "CONTEXT_CARRIES_TRANSLATION", "fault_kind": "context_pollution",
     "root": {"name": "build_context", "occurrence": 2, "kind": "other"},
     "failure": {"name": "validate_srt", "occurrence": 1},
     "description": "The context for the second batch puts the first batch's French lines among the lines to translate, and the model returns segment 4 twice."},
    {"id": "zzzc-subs-sequel", "input": 4, "switch": "NOTES_FROM_SEQUEL", "fault_kind": "subagent_wrong_entity",
     "root": {"name": "translate_batch", "occurrence": 1, "kind": "agent"},
     "failure": {"name": "cast_check", "occurrence": 1},
     "description": "The translator sub-agent of the first batch looks up the character notes of HARB-2, the sequel, whose S1 is MARTHA rather than HARB-1's MARTA."},
    {"id": "zzzc-subs-speed", "input": 3, "switch": "SPEED_CHECK_DEFAULT_LIMIT", "fault_kind": "tool_ignores_argument",
     "root": {"name": "measure_reading_speed", "occurrence": 6, "kind": "tool"},
     "failure": {"name": "upload_to_portal", "occurrence": 1},
     "description": "The reading-speed check for GRID-1's segment 6 measures against its default 20 characters per second instead of Northlight's 15, so the line is never condensed."},
]


# ---------------------------------------------------------------- the fake model's behaviour
def _render(text: str, lang: str) -> str:
    return " ".join(WORDS[lang].get(w.strip(",.?!"), w.strip(",.?!")) + w[len(w.strip(",.?!")):] if w.strip(",.?!") in WORDS[lang] else w
                    for w in text.split())


def _wrap(text: str, width: int) -> list[str]:
    lines, cur = [], ""
    for w in text.split():
        if cur and len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}".strip()
    return lines + [cur]


def policy(request):
    system = system_of(request)
    prompt = last_user(request)
    if system.startswith("Translate subtitle lines"):
        lang = payload_after(prompt, "Target:")
        width = payload_after(prompt, "Line width:")
        names = payload_after(prompt, "Speakers:")
        segs = payload_after(prompt, "Translate:")
        out = []
        for s in segs:
            lines = _wrap(_render(s["text"], lang), width)
            sep = " / " if LINES_JOINED_WITH_SLASH and s["id"] == 5 else "\n"
            out.append({"id": s["id"], "speaker": names.get(s["speaker"], s["speaker"]), "text": sep.join(lines)})
        return json.dumps(out, ensure_ascii=False)
    if system.startswith("Shorten this subtitle"):
        seg = payload_after(prompt, "Subtitle:")
        words = [w for w in seg["text"].replace("\n", " ").split() if w.strip(",.?!").lower() not in FILLERS]
        return " ".join(words)
    return "I translate subtitles."


# ---------------------------------------------------------------- steps
SERVER = None


@trajdebug.step(kind="input")
def job_intake(job: dict) -> dict:
    return {"client": job["client"], "title": job["title"], "lang": job["lang"], "segments": [dict(s) for s in job["segments"]]}


@trajdebug.step(kind="retrieval")
def load_style_guide(client: str) -> dict:
    return {"client": client, **STYLE[client], "sdh_labels": True}


@trajdebug.step(kind="tool")
def speaker_memory(title: str) -> dict:
    return {"title": title, "known": {}}


@trajdebug.step(kind="other")
def split_batches(segments: list[dict], size: int) -> list[list[dict]]:
    return [segments[i:i + size] for i in range(0, len(segments), size)]


@trajdebug.step(kind="tool")
def character_notes(title: str) -> dict:
    return {"title": title, "speakers": dict(CHARACTERS[title])}


@trajdebug.step(kind="other")
def build_context(batch: list[dict], done: list[dict]) -> dict:
    todo = [{"id": s["id"], "speaker": s["speaker"], "text": s["text"]} for s in batch]
    if CONTEXT_CARRIES_TRANSLATION and done:
        todo = [{"id": d["id"], "speaker": "S1", "text": d["text"].replace("\n", " ")} for d in done[-1:]] + todo
    return {"translate": todo, "previous": [d["text"] for d in done[-2:]]}


@trajdebug.step(kind="llm")
def translate(messages: list[dict]) -> str:
    return complete(SERVER, messages)


@trajdebug.step(kind="parse")
def parse_translation(text: str, segments: list[dict]) -> list[dict]:
    times = {s["id"]: (s["start"], s["end"]) for s in segments}
    rows = json.loads(text)
    return [{**r, "start": times.get(r["id"], (None, None))[0], "end": times.get(r["id"], (None, None))[1]} for r in rows]


@trajdebug.step(kind="state")
def remember_speaker(speaker_id: str, label: str) -> dict:
    memory = trajdebug.current_run().state.setdefault("speakers", {})
    value = label
    if SPEAKER_LABEL_FROM_PREVIOUS and speaker_id == "S3" and memory:
        value = list(memory.values())[-1]
    memory[speaker_id] = value
    return {speaker_id: value}


@trajdebug.step(kind="agent")
def translate_batch(job: dict, style: dict, batch: list[dict], done: list[dict]) -> list[dict]:
    run = trajdebug.current_run()
    title = job["title"]
    if NOTES_FROM_SEQUEL and title == "HARB-1" and not done:
        title = "HARB-2"
    notes = character_notes(title)
    known = run.state.get("speakers", {})
    for sid in sorted({s["speaker"] for s in batch}):
        if sid not in known:
            remember_speaker(sid, notes["speakers"][sid])
    context = build_context(batch, done)
    text = translate([
        {"role": "system", "content": "Translate subtitle lines, keeping ids and speakers; break lines to the width given."},
        {"role": "user", "content": f"Target: {json.dumps(job['lang'])}\nLine width: {style['max_chars_per_line']}\n"
                                    f"Speakers: {json.dumps(run.state['speakers'])}\nPrevious: {json.dumps(context['previous'], ensure_ascii=False)}\n"
                                    f"Translate: {json.dumps(context['translate'], ensure_ascii=False)}"},
    ])
    return parse_translation(text, job["segments"])


@trajdebug.step(kind="tool")
async def measure_reading_speed(segment: dict, max_cps: float) -> dict:
    await asyncio.sleep(0)
    limit = 20.0 if SPEED_CHECK_DEFAULT_LIMIT and segment["id"] == 6 else max_cps
    chars = len(segment["text"].replace("\n", ""))
    cps = round(chars / (segment["end"] - segment["start"]), 2)
    return {"id": segment["id"], "cps": cps, "limit": limit, "too_fast": cps > limit}


@trajdebug.step(kind="agent")
async def reading_speed_pass(segments: list[dict], max_cps: float) -> list[dict]:
    return list(await asyncio.gather(*(measure_reading_speed(s, max_cps) for s in segments)))


@trajdebug.step(kind="llm")
def condense(messages: list[dict]) -> str:
    return complete(SERVER, messages)


@trajdebug.step(kind="condition")
def cast_check(segments: list[dict], title: str, job_speakers: list[str]) -> dict:
    cast = CHARACTERS[title]
    used = {s["speaker"] for s in segments}
    wanted = {cast[sid] for sid in job_speakers}
    if used != wanted:
        raise ValueError(f"SDH labels {sorted(used)} do not match the cast of {title}: {sorted(wanted)}")
    return {"labels": sorted(used)}


@trajdebug.step(kind="other")
def build_srt(segments: list[dict]) -> str:
    def tc(t):
        ms = int(round(t * 1000))
        return f"{ms // 3600000:02d}:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"

    blocks = [f"{s['id']}\n{tc(s['start'] or 0)} --> {tc(s['end'] or 0)}\n{s['text']}" for s in segments]
    return "\n\n".join(blocks) + "\n"


@trajdebug.step(kind="condition")
def validate_srt(srt: str, max_chars: int) -> dict:
    numbers = []
    for block in srt.strip().split("\n\n"):
        lines = block.split("\n")
        numbers.append(int(lines[0]))
        for line in lines[2:]:
            if len(line) > max_chars:
                raise ValueError(f"subtitle {lines[0]}: line of {len(line)} characters, over {max_chars}")
    if numbers != list(range(1, len(numbers) + 1)):
        raise ValueError(f"subtitle numbering is not sequential: {numbers}")
    return {"subtitles": len(numbers)}


ATTEMPTS = {"n": 0}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def upload_to_portal(client: str, title: str, srt: str, max_cps: float, timings: list[dict]) -> dict:
    ATTEMPTS["n"] += 1
    if ATTEMPTS["n"] == 1 and client == "Passage TV":
        raise ConnectionError("portal closed the connection during upload")
    for t in timings:
        cps = t["chars"] / t["seconds"]
        if cps > max_cps:
            raise ValueError(f"{client} portal rejected {title}: subtitle {t['id']} reads at {cps:.1f} cps, limit {max_cps}")
    return {"accepted": True, "title": title, "bytes": len(srt.encode())}


def _job(job: dict) -> None:
    req = job_intake(job)
    style = load_style_guide(req["client"])
    speaker_memory(req["title"])
    done: list[dict] = []
    for batch in split_batches(req["segments"], style["batch"]):
        done.extend(translate_batch(req, style, batch, done))
    speeds = asyncio.run(reading_speed_pass(done, style["max_cps"]))
    fast = {s["id"] for s in speeds if s["too_fast"]}
    final = []
    for seg in done:
        if seg["id"] in fast:
            text = condense([{"role": "system", "content": "Shorten this subtitle, dropping filler words only."},
                             {"role": "user", "content": f"Subtitle: {json.dumps(seg, ensure_ascii=False)}"}])
            seg = {**seg, "text": "\n".join(_wrap(text, style["max_chars_per_line"]))}
        final.append(seg)
    cast_check(final, req["title"], sorted({s["speaker"] for s in req["segments"]}))
    srt = build_srt(final)
    validate_srt(srt, style["max_chars_per_line"])
    timings = [{"id": s["id"], "chars": len(s["text"].replace("\n", "")), "seconds": s["end"] - s["start"]} for s in final]
    upload_to_portal(req["client"], req["title"], srt, style["max_cps"], timings)


def run_once(server, inp: dict, path: str) -> None:
    global SERVER
    SERVER = server
    ATTEMPTS["n"] = 0
    try:
        with trajdebug.run(NAME, task=f"{inp['lang']} SDH subtitles of {inp['title']} for {inp['client']}", path=path):
            _job(inp)
    except ValueError:
        pass
