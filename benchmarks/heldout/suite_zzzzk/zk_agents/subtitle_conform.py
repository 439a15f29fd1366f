"""Subtitling house: conform an English subtitle file into German for a broadcaster's delivery spec (sdk route)."""

from __future__ import annotations

import json
import re

import trajdebug

import common
from common import model_call

RUN_NAME = "subtitle-conform"
ROUTE = "sdk"
DOMAIN = "subtitling house: translated subtitle conform to a broadcaster's delivery spec"
SHAPE = "spec retrieval, SRT parser, glossary tool, planner LLM, batched translation loop, per-cue reflow, QA, EBU-STL export"
SWITCH = None

SPECS = {
    "ARTE": {"broadcaster": "ARTE", "max_chars": 42, "max_lines": 2, "max_cps": 17.0, "min_ms": 833, "fps": 25},
    "ARTE Junior": {"broadcaster": "ARTE Junior", "max_chars": 37, "max_lines": 2, "max_cps": 12.0, "min_ms": 1200, "fps": 25},
    "ZDFneo": {"broadcaster": "ZDFneo", "max_chars": 40, "max_lines": 2, "max_cps": 15.0, "min_ms": 1000, "fps": 25},
    "3sat": {"broadcaster": "3sat", "max_chars": 42, "max_lines": 2, "max_cps": 17.0, "min_ms": 833, "fps": 25},
}
GLOSSARIES = {
    "The Salt Roads": {"Inspector Roth": "Kommissarin Roth", "the harbour office": "das Hafenamt"},
    "Quiet Looms": {"Mrs Adeyemi": "Frau Adeyemi", "the mill": "die Weberei"},
    "Night Ferry": {"Captain Ilves": "Kapitän Ilves", "the ferry": "die Fähre"},
    "Brass & Bone": {"Uncle Teo": "Onkel Teo", "the foundry": "die Gießerei"},
    "Northern Choir": {"Maestro Lind": "Maestro Lind", "the choir": "der Chor"},
}
PHRASES = {
    "Meet me at 9 by {place}.": "Wir treffen uns um 9 bei {place}.",
    "{name} wants the files by Friday.": "{name} will die Akten bis Freitag.",
    "It has been 12 years.": "Es ist 12 Jahre her.",
    "Nobody leaves {place} tonight.": "Heute Nacht verlässt niemand {place}.",
    "Ask {name} yourself.": "Frag {name} selbst.",
    "We sail at dawn.": "Wir legen im Morgengrauen ab.",
    "I kept every letter.": "Ich habe jeden Brief behalten.",
    "Two tickets, one way.": "Zwei Fahrkarten, einfach.",
}


def _srt(cues):
    def ts(ms):
        return f"{ms // 3600000:02d}:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"
    return "\n\n".join(f"{i}\n{ts(a)} --> {ts(b)}\n{t}" for i, (a, b, t) in enumerate(cues, 1)) + "\n"


def _job(jid, title, broadcaster, name, place, cues, pace=17):
    return {"job_id": jid, "title": title, "broadcaster": broadcaster, "target": "de",
            "name": name, "place": place,
            "srt": _srt([(a * pace // 10, b * pace // 10 + 400, t.format(name=name, place=place)) for a, b, t in cues])}


INPUTS = [
    _job("SUB-3107", "The Salt Roads", "ARTE", "Inspector Roth", "the harbour office", [
        (1000, 3400, "Meet me at 9 by {place}."), (4200, 6300, "{name} wants the files by Friday."),
        (7000, 8800, "It has been 12 years."), (9400, 11800, "Nobody leaves {place} tonight."),
        (12383, 13265, "Ask {name} yourself."), (14600, 16400, "I kept every letter.")]),
    _job("SUB-3112", "Quiet Looms", "ZDFneo", "Mrs Adeyemi", "the mill", [
        (2000, 4100, "I kept every letter."), (4800, 7300, "Nobody leaves {place} tonight."),
        (8000, 10600, "{name} wants the files by Friday."), (11200, 12900, "It has been 12 years."),
        (13500, 15100, "Ask {name} yourself."), (15800, 18400, "Meet me at 9 by {place}.")]),
    _job("SUB-3120", "Night Ferry", "ARTE Junior", "Captain Ilves", "the ferry", [
        (500, 3200, "We sail at dawn."), (3900, 7100, "Nobody leaves {place} tonight."),
        (7800, 10400, "Two tickets, one way."), (11000, 14400, "Ask {name} yourself."),
        (15000, 17900, "It has been 12 years."), (18500, 21900, "I kept every letter.")]),
    _job("SUB-3126", "Brass & Bone", "3sat", "Uncle Teo", "the foundry", [
        (1500, 3300, "Two tickets, one way."), (4000, 6600, "Meet me at 9 by {place}."),
        (7300, 9200, "Ask {name} yourself."), (9900, 12300, "{name} wants the files by Friday."),
        (13000, 14500, "We sail at dawn."), (15200, 17600, "Nobody leaves {place} tonight.")]),
    _job("SUB-3131", "Northern Choir", "ARTE", "Maestro Lind", "the choir", [
        (800, 2500, "It has been 12 years."), (3100, 5000, "{name} wants the files by Friday."),
        (6200, 8400, "Meet me at 9 by {place}."), (9000, 10700, "I kept every letter."),
        (11300, 13500, "Nobody leaves {place} tonight."), (14100, 15600, "Ask {name} yourself.")], pace=12),
]


def _translate(text, glossary):
    for pat, de in PHRASES.items():
        rx = "^" + re.escape(pat).replace(r"\{name\}", "(?P<name>.+?)").replace(r"\{place\}", "(?P<place>.+?)") + "$"
        m = re.match(rx, text)
        if m:
            parts = {k: glossary.get(v, v.replace("Inspector", "Inspektor").replace("Mrs", "Frau")
                                     .replace("Captain", "Kapitän").replace("Uncle", "Onkel"))
                     for k, v in m.groupdict().items()}
            return de.format(**parts)
    return text


def brain(request):
    system = common.system_of(request)
    user = common.last_user(request)
    if system.startswith("You plan subtitle conforms"):
        return json.dumps({"batch_size": 2, "order": ["translate", "qa", "reflow", "number", "validate", "export"]})
    if system.startswith("You translate subtitles"):
        payload = json.loads(user)
        out = []
        for cue in payload["cues"]:
            de = _translate(cue["text"], payload["glossary"])
            if SWITCH == "zk-sub-3" and cue["text"].startswith("Meet me at 9"):
                de = de.replace("um 9", "um 10")
            out.append({"index": cue["index"], "text": de})
        return json.dumps({"cues": out})
    return "Delivered."


@trajdebug.step(kind="input")
def receive_job(job: dict) -> dict:
    return {"job_id": job["job_id"], "title": job["title"], "broadcaster": job["broadcaster"], "target": job["target"]}


@trajdebug.step(kind="retrieval")
def fetch_delivery_spec(broadcaster: str) -> dict:
    key = broadcaster
    if SWITCH == "zk-sub-2":
        key = next(k for k in SPECS if k.startswith(broadcaster) and k != broadcaster)
    return dict(SPECS[key])


@trajdebug.step(kind="parse")
def parse_srt(srt: str) -> list[dict]:
    cues = []
    for block in srt.strip().split("\n\n"):
        idx, times, *text = block.split("\n")
        a, b = (t.strip() for t in times.split("-->"))
        def ms(t):
            h, m, rest = t.split(":")
            s, frac = rest.split(",")
            if SWITCH == "zk-sub-1":
                frac = "0"
            return ((int(h) * 60 + int(m)) * 60 + int(s)) * 1000 + int(frac)
        cues.append({"index": int(idx), "start_ms": ms(a), "end_ms": ms(b), "text": " ".join(text)})
    return cues


@trajdebug.step(kind="tool")
def fetch_glossary(title: str) -> dict:
    answer = {"status": 200, "terms": GLOSSARIES.get(title, {})}
    if SWITCH == "zk-sub-4":
        answer = {"status": 504, "error": "glossary service timed out", "terms": {}}
    return answer.get("terms", {})


@trajdebug.step(kind="parse")
def read_plan(message: dict) -> dict:
    return json.loads(message["content"])


@trajdebug.step(kind="other")
def apply_translation(cues: list[dict], answer: dict) -> list[dict]:
    by_index = {c["index"]: c["text"] for c in json.loads(answer["content"])["cues"]}
    return [dict(c, target=by_index[c["index"]]) for c in cues]


@trajdebug.step(kind="condition")
def qa_translation(cues: list[dict], glossary: dict, job: dict) -> dict:
    for c in cues:
        src_n = set(re.findall(r"\d+", c["text"]))
        tgt_n = set(re.findall(r"\d+", c["target"]))
        if src_n != tgt_n:
            raise ValueError(f"cue {c['index']}: numbers {sorted(tgt_n)} in the German do not match {sorted(src_n)}")
        if job["name"] in c["text"]:
            locked = glossary.get(job["name"])
            if not locked or locked not in c["target"]:
                raise ValueError(f"cue {c['index']}: character name {c['target'].split()[0]!r}... is not the "
                                 f"series form of {job['name']!r}")
    return {"checked": len(cues), "numbers": "ok", "names": "ok"}


@trajdebug.step(kind="other")
def reflow_lines(cue: dict, max_chars: int) -> dict:
    words, lines, cur = cue["target"].split(), [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > max_chars:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}".strip()
    lines.append(cur)
    return dict(cue, lines=lines)


@trajdebug.step(kind="other")
def number_cues(cues: list[dict]) -> list[dict]:
    start = 0 if SWITCH == "zk-sub-5" else 1
    return [dict(c, tti_number=start + i) for i, c in enumerate(cues)]


@trajdebug.step(kind="state")
def store_reading_speed(cues: list[dict]) -> dict:
    speeds = {c["index"]: round(len(" ".join(c["lines"])) / ((c["end_ms"] - c["start_ms"]) / 1000), 1)
              if c["end_ms"] > c["start_ms"] else None for c in cues}
    trajdebug.current_run().state["reading_speed"] = speeds
    return speeds


@trajdebug.step(kind="condition")
def validate_against_spec(cues: list[dict], spec: dict) -> dict:
    speeds = trajdebug.current_run().state["reading_speed"]
    for c in cues:
        dur = c["end_ms"] - c["start_ms"]
        if dur < spec["min_ms"]:
            raise ValueError(f"cue {c['index']} lasts {dur} ms, under the {spec['broadcaster']} minimum of {spec['min_ms']} ms")
        if len(c["lines"]) > spec["max_lines"] or max(len(x) for x in c["lines"]) > spec["max_chars"]:
            raise ValueError(f"cue {c['index']} does not fit {spec['max_lines']} lines of {spec['max_chars']} characters")
        if speeds[c["index"]] > spec["max_cps"]:
            raise ValueError(f"cue {c['index']} reads at {speeds[c['index']]} cps, above the {spec['broadcaster']} "
                             f"limit of {spec['max_cps']}")
    return {"cues": len(cues), "spec": spec["broadcaster"], "result": "pass"}


@trajdebug.step(kind="tool")
def export_stl(cues: list[dict], fps: int, job_id: str) -> dict:
    for c in cues:
        if c["tti_number"] < 1:
            raise ValueError(f"EBU-STL TTI block {c['tti_number']}: subtitle numbers start at 1 (cue '{c['target'][:20]}')")
    return {"file": f"{job_id}_de.stl", "tti_blocks": len(cues), "fps": fps, "bytes": 1024 + 128 * len(cues)}


@trajdebug.step(kind="output")
def delivery_note(job: dict, export: dict, report: dict) -> str:
    return f"{job['job_id']} {job['title']}: {export['tti_blocks']} subtitles delivered as {export['file']} ({report['spec']} spec)."


def record(job: dict, path: str) -> None:
    try:
        with trajdebug.run(RUN_NAME, task=f"conform {job['job_id']} ({job['title']}) to German for {job['broadcaster']}",
                           path=path):
            ticket = receive_job(job)
            spec = fetch_delivery_spec(ticket["broadcaster"])
            cues = parse_srt(job["srt"])
            glossary = fetch_glossary(job["title"])
            plan_msg = model_call("plan_conform", [
                {"role": "system", "content": "You plan subtitle conforms. Answer JSON: batch_size, order."},
                {"role": "user", "content": json.dumps({"job": ticket, "spec": spec, "cues": len(cues)})}])
            plan = read_plan(plan_msg)
            done = []
            for k in range(0, len(cues), plan["batch_size"]):
                batch = cues[k:k + plan["batch_size"]]
                answer = model_call("translate_batch", [
                    {"role": "system", "content": "You translate subtitles from English to German. Use the glossary "
                                                  "forms exactly. Answer JSON {cues: [{index, text}]}."},
                    {"role": "user", "content": json.dumps({"cues": [{"index": c["index"], "text": c["text"]} for c in batch],
                                                            "glossary": glossary})}])
                done.extend(apply_translation(batch, answer))
            qa_translation(done, glossary, {"name": job["name"]})
            flowed = [reflow_lines(c, spec["max_chars"]) for c in done]
            numbered = number_cues(flowed)
            store_reading_speed(numbered)
            report = validate_against_spec(numbered, spec)
            export = export_stl(numbered, spec["fps"], job["job_id"])
            delivery_note(ticket, export, report)
    except ValueError:
        pass


CASES = [
    {"case": "zk-sub-1", "input": 0, "switch": "zk-sub-1", "fault_kind": "lossy_parsing",
     "root": ("parse_srt", 1, "parse"), "failure": ("validate_against_spec", 1),
     "description": "The SRT parser keeps whole seconds and drops the milliseconds, so a 1.5 s cue is read as 1 s "
                    "and another shrinks under the broadcaster's minimum duration."},
    {"case": "zk-sub-2", "input": 4, "switch": "zk-sub-2", "fault_kind": "wrong_retrieval",
     "root": ("fetch_delivery_spec", 1, "retrieval"), "failure": ("validate_against_spec", 1),
     "description": "The spec lookup for ARTE returns the ARTE Junior children's spec (12 cps, 37 characters), "
                    "so adult-paced German subtitles fail its reading-speed limit."},
    {"case": "zk-sub-3", "input": 3, "switch": "zk-sub-3", "fault_kind": "hallucinated_value",
     "root": ("translate_batch", 1, "llm"), "failure": ("qa_translation", 1),
     "description": "The translation model renders 'Meet me at 9' as 'um 10', a time the English cue never gave, "
                    "and the numbers check rejects it."},
    {"case": "zk-sub-4", "input": 0, "switch": "zk-sub-4", "fault_kind": "swallowed_error",
     "root": ("fetch_glossary", 1, "tool"), "failure": ("qa_translation", 1),
     "description": "The glossary service times out and the tool returns an empty glossary instead of failing, so "
                    "the series name 'Kommissarin Roth' is translated freely and the name check stops the job."},
    {"case": "zk-sub-5", "input": 1, "switch": "zk-sub-5", "fault_kind": "off_by_one",
     "root": ("number_cues", 1, "other"), "failure": ("export_stl", 1),
     "description": "Subtitle numbering starts at 0 instead of 1, which the EBU-STL exporter refuses."},
]
