"""Yacht club race office: scores a handicap race under IRC (finish log, sailing instructions, rating
certificates, protest decisions, corrected times) and publishes the results (route: otlp)."""

from __future__ import annotations

import json
import re

from _common import last_user, system_of
from _otlp import setup, span, teardown, write_run

NAME = "yacht-race-scorer"
ROUTE = "otlp"
SWITCH = None
SEASON = 2025

BOATS = {
    "GBR 1234": 1.034, "GBR 1243": 1.012, "GBR 8841": 0.987, "GBR 4410": 1.101, "GBR 7712": 0.962,
    "GBR 3090": 1.047, "IRL 2200": 1.005, "FRA 3915": 1.071, "GBR 5127": 0.945, "GBR 6603": 1.023,
    "NED 7001": 1.088,
}
TCC_2024 = {k: round(v - 0.011, 3) for k, v in BOATS.items()}
RACES = {
    "Solent Thursday series, race 4": {"start": "18:30:00", "limit_h": 3},
    "Round the Island feeder, race 2": {"start": "10:30:00", "limit_h": 5},
    "Cowes autumn series, race 6": {"start": "11:00:00", "limit_h": 4},
    "Cowes autumn series, race 5": {"start": "11:00:00", "limit_h": 2},
    "Hamble winter series, race 3": {"start": "10:15:00", "limit_h": 4},
    "Lymington spring cup, race 1": {"start": "13:00:00", "limit_h": 4},
    "Solent Thursday series, race 3": {"start": "18:30:00", "limit_h": 2},
}
PROTESTS = {
    "Solent Thursday series, race 4": [],
    "Solent Thursday series, race 3": ["GBR 8841 disqualified, rule 10 (port-starboard with GBR 7712)."],
    "Round the Island feeder, race 2": ["IRL 2200 protest dismissed, no contact established."],
    "Cowes autumn series, race 6": [],
    "Hamble winter series, race 3": [],
    "Lymington spring cup, race 1": [],
}


SCP_DECLARED = {"Hamble winter series, race 3": ["GBR 5127"]}  # scoring penalties declared at the finish


def _hms(t: str) -> int:
    h, m, s = map(int, t.split(":"))
    return h * 3600 + m * 60 + s


def _fmt(sec: float) -> str:
    sec = int(round(sec))
    return f"{sec // 3600}:{sec % 3600 // 60:02d}:{sec % 60:02d}"


def _log(race: str, finishes: list[tuple[str, str, str]]) -> str:
    return "\n".join(f"{sail} | finish {t}{(' ' + note) if note else ''}" for sail, t, note in finishes)


INPUTS = [
    {"task": "score Solent Thursday series, race 4", "race": "Solent Thursday series, race 4",
     "log": _log("", [("GBR 1234", "20:41:12", ""), ("GBR 8841", "20:55:40", ""), ("GBR 4410", "20:38:05", ""),
                      ("GBR 7712", "21:02:31", ""), ("GBR 3090", "20:44:59", "")])},
    {"task": "score Round the Island feeder, race 2", "race": "Round the Island feeder, race 2",
     "log": _log("", [("IRL 2200", "13:55:20", ""), ("FRA 3915", "13:41:02", ""), ("GBR 1243", "14:03:47", ""),
                      ("GBR 6603", "13:58:10", ""), ("NED 7001", "13:44:36", "")])},
    {"task": "score Cowes autumn series, race 6", "race": "Cowes autumn series, race 6",
     "log": _log("", [("GBR 7712", "13:48:00", ""), ("GBR 5127", "13:59:41", ""), ("GBR 1234", "13:30:15", ""),
                      ("NED 7001", "13:22:09", "")])},
    {"task": "score Hamble winter series, race 3", "race": "Hamble winter series, race 3",
     "log": _log("", [("GBR 5127", "12:58:33", "SCP 20%"), ("GBR 3090", "12:31:04", ""),
                      ("GBR 8841", "12:49:50", ""), ("FRA 3915", "12:27:18", ""), ("GBR 6603", "12:40:02", "")])},
    {"task": "score Lymington spring cup, race 1", "race": "Lymington spring cup, race 1",
     "log": _log("", [("GBR 4410", "15:12:44", ""), ("GBR 1243", "15:30:09", ""), ("IRL 2200", "15:26:51", ""),
                      ("GBR 7712", "15:41:27", ""), ("GBR 3090", "15:15:38", "")])},
]

CASES = [
    {"id": "yachting_penalty_dropped", "input": 3, "switch": "penalty_dropped", "fault_kind": "lossy_parsing",
     "root": ("parse_finish_log", 1, "other"), "failure": ("publish_results", 1),
     "description": "the finish-log parser keeps the time but drops GBR 5127's 'SCP 20%' note, so the results "
                    "carry no penalty and the publishing service finds the declared penalty missing"},
    {"id": "yachting_other_race_si", "input": 2, "switch": "other_race_si", "fault_kind": "wrong_retrieval",
     "root": ("si_search", 1, "retrieval"), "failure": ("check_results", 1),
     "description": "the sailing-instructions search returns the race 5 instructions (a 2 h limit) "
                    "for Cowes race 6, and the results check finds finishers beyond the time limit"},
    {"id": "yachting_last_season_cert", "input": 4, "switch": "last_season_cert", "fault_kind": "stale_data",
     "root": ("get_certificate", 3, "tool"), "failure": ("publish_results", 1),
     "description": "the rating office answers IRL 2200's 2024 certificate (TCC 0.994), the race is scored "
                    "with it and the publishing service rejects a certificate from last season"},
    {"id": "yachting_tcc_percent", "input": 1, "switch": "tcc_percent", "fault_kind": "unit_error",
     "root": ("get_certificate", 4, "tool"), "failure": ("check_results", 1),
     "description": "the certificate service gives GBR 6603's TCC as a percentage (102.3), and the results "
                    "check finds a corrected time a hundred times the elapsed time"},
    {"id": "yachting_jury_board_mixed", "input": 0, "switch": "jury_board_mixed", "fault_kind": "context_pollution",
     "root": ("gather_protest_context", 1, "other"), "failure": ("publish_results", 1),
     "description": "the jury notice board context for race 4 also holds race 3's decisions, the model reads "
                    "GBR 8841's race 3 disqualification into race 4 and publishing finds no such decision"},
]


def brain(request):
    system = system_of(request)
    user = last_user(request)
    if "protest decisions" in system:
        out = []
        for line in user.splitlines():
            m = re.match(r"(?:\[[^\]]*\] )?([A-Z]{3} \d{4}) (disqualified|20% scoring penalty)", line)
            if m:
                out.append({"sail": m.group(1), "penalty": "DSQ" if m.group(2) == "disqualified" else "SCP 20%"})
        return json.dumps({"penalties": out})
    if "results report" in system:
        req = json.loads(user)
        top = req["results"][0]
        return f"{req['race']}: {top['sail']} wins on corrected time {top['corrected']}; {len(req['results'])} boats scored."
    return "Noted."


def record(inp: dict, out: str, client, model: str) -> None:
    provider, exporter = setup()
    tracer = provider.get_tracer("yacht-race-office")
    race = inp["race"]
    try:
        with span(tracer, NAME, "AGENT", {"race": race, "finish_log": inp["log"]}, **{"agent.name": NAME,
                  "metadata": json.dumps({"task": inp["task"]})}) as top:
            with span(tracer, "fetch_finish_log", "TOOL", {"race": race}, **{"tool.name": "fetch_finish_log"}) as s:
                s.output = inp["log"]
            log = s.output
            with span(tracer, "parse_finish_log", "CHAIN", log) as s:
                rows = []
                for line in log.splitlines():
                    m = re.match(r"([A-Z]{3} \d{4}) \| finish (\d\d:\d\d:\d\d)(?: (.*))?$", line)
                    note = m.group(3) or ""
                    if SWITCH == "penalty_dropped":
                        note = ""
                    rows.append({"sail": m.group(1), "finish": m.group(2), "note": note})
                s.output = rows
            with span(tracer, "si_search", "RETRIEVER", f"sailing instructions {race}") as s:
                found = "Cowes autumn series, race 5" if SWITCH == "other_race_si" else race
                si = RACES[found]
                s.output = [{"id": f"SI/{found}", "content": f"{found}: warning signal {si['start']} less 5 min, "
                             f"start {si['start']}; time limit {si['limit_h']} hours after the start."}]
            si_text = s.output[0]["content"]
            with span(tracer, "read_si", "CHAIN", si_text) as s:
                m = re.search(r"start (\d\d:\d\d:\d\d); time limit (\d+) hours", si_text)
                s.output = {"start": m.group(1), "limit_h": int(m.group(2))}
            si = s.output
            certs = {}
            for row in rows:
                with span(tracer, "get_certificate", "TOOL", {"sail": row["sail"], "season": SEASON},
                          **{"tool.name": "get_certificate"}) as s:
                    tcc, season = BOATS[row["sail"]], SEASON
                    if SWITCH == "last_season_cert" and row["sail"] == "IRL 2200":
                        tcc, season = TCC_2024[row["sail"]], SEASON - 1
                    if SWITCH == "tcc_percent" and row["sail"] == "GBR 6603":
                        tcc = round(tcc * 100, 1)
                    s.output = {"sail": row["sail"], "system": "IRC", "tcc": tcc, "certificate_season": season}
                certs[row["sail"]] = s.output
            with span(tracer, "gather_protest_context", "CHAIN", {"race": race}) as s:
                lines = [f"[{race}] {d}" for d in PROTESTS[race]]
                if SWITCH == "jury_board_mixed":
                    prev = "Solent Thursday series, race 3"
                    lines += [f"{d}" for d in PROTESTS[prev]]
                s.output = "\n".join(lines) or "No decisions posted."
            board = s.output
            reply = client.chat.completions.create(model=model, messages=[
                {"role": "system", "content": "Extract the penalties from the protest decisions as JSON."},
                {"role": "user", "content": board}])
            with span(tracer, "parse_penalties", "CHAIN", reply.choices[0].message.content) as s:
                s.output = json.loads(reply.choices[0].message.content)["penalties"]
            penalties = {p["sail"]: p["penalty"] for p in s.output}
            for r in rows:
                if r["note"]:
                    penalties.setdefault(r["sail"], r["note"])
            with span(tracer, "compute_corrected", "CHAIN", {"rows": rows, "certificates": certs, "si": si,
                                                              "penalties": penalties}) as s:
                results = []
                for r in rows:
                    elapsed = _hms(r["finish"]) - _hms(si["start"])
                    corrected = elapsed * certs[r["sail"]]["tcc"]
                    results.append({"sail": r["sail"], "elapsed": _fmt(elapsed), "elapsed_s": elapsed,
                                    "tcc": certs[r["sail"]]["tcc"], "corrected": _fmt(corrected),
                                    "corrected_s": round(corrected), "penalty": penalties.get(r["sail"], "")})
                results.sort(key=lambda x: (x["penalty"] == "DSQ", x["corrected_s"]))
                s.output = results
            with span(tracer, "check_results", "CHAIN", {"results": results, "si": si}) as s:
                for r in results:
                    if r["elapsed_s"] > si["limit_h"] * 3600:
                        raise ValueError(f"{r['sail']} elapsed {r['elapsed']} beyond the {si['limit_h']} h time limit "
                                         f"but scored as a finisher")
                    if not 0.5 < r["corrected_s"] / r["elapsed_s"] < 1.6:
                        raise ValueError(f"{r['sail']}: corrected {r['corrected']} against elapsed {r['elapsed']}")
                s.output = "results consistent"
            report = client.chat.completions.create(model=model, messages=[
                {"role": "system", "content": "Write the race results report for the club website."},
                {"role": "user", "content": json.dumps({"race": race, "results": results})}])
            with span(tracer, "publish_results", "TOOL", {"race": race, "results": results},
                      **{"tool.name": "publish_results"}) as s:
                jury = {d.split()[0] + " " + d.split()[1]: d for d in PROTESTS[race]}
                for sail in SCP_DECLARED.get(race, []):
                    if any(r["sail"] == sail and not r["penalty"] for r in results):
                        raise ValueError(f"results service: {sail} declared a 20% scoring penalty (rule 44.3) "
                                         f"at the finish; results show none")
                for r in results:
                    if r["penalty"] == "DSQ" and r["sail"] not in jury:
                        raise ValueError(f"results service: {r['sail']} scored {r['penalty']} in {race}, but the "
                                         f"jury posted no decision on it")
                    if r["sail"] in jury and "penalty" in jury[r["sail"]] and not r["penalty"]:
                        raise ValueError(f"results service: jury decision '{jury[r['sail']]}' is not applied")
                    if certs[r["sail"]]["certificate_season"] != SEASON:
                        raise ValueError(f"results service: {r['sail']} scored on a "
                                         f"{certs[r['sail']]['certificate_season']} certificate; {SEASON} required")
                s.output = {"published": True, "boats": len(results)}
            top.output = {"published": s.output, "report": report.choices[0].message.content}
    finally:
        write_run(exporter, out)


def finish():
    teardown()
