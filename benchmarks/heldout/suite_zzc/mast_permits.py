"""Phone mast planning permits: application fetch, policy retrieval, consultee loop, impact LLM, notice sub-agent, decision (otlp)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from openai import OpenAI

from .common import Case, Otel, brain, last_user
from .kit import active

NAME = "mast-permit-officer"
ROUTE = "otlp"
DOMAIN = "phone mast planning permits"
SHAPE = "application tool, policy retriever, consultee loop with parsing, context chain, impact LLM, notice sub-agent, decision tool"

APPS = {
    "PA/26/0412": {"site": "Elm Road verge", "zone": "conservation", "height_m": 14.0, "operator": "Vantel",
                   "received": "2026-11-02", "consultees": ["highways", "heritage", "parish"]},
    "PA/26/0433": {"site": "Gasworks yard", "zone": "industrial", "height_m": 22.5, "operator": "Orbis",
                   "received": "2026-11-09", "consultees": ["highways", "airfield"]},
    "PA/26/0390": {"site": "Mill Lane", "zone": "residential", "height_m": 17.5, "operator": "Vantel",
                   "received": "2026-10-12", "consultees": ["highways", "parish"]},
    "PA/26/0398": {"site": "Depot Street", "zone": "industrial", "height_m": 24.0, "operator": "Orbis",
                   "received": "2026-10-19", "consultees": ["highways"]},
    "PA/26/0401": {"site": "Church Green", "zone": "conservation", "height_m": 12.0, "operator": "Kestrel",
                   "received": "2026-10-26", "consultees": ["heritage", "parish"]},
    "PA/26/0407": {"site": "Retail park", "zone": "residential", "height_m": 18.0, "operator": "Kestrel",
                   "received": "2026-10-30", "consultees": ["highways", "airfield", "parish"]},
}
INPUTS = {k: {"ref": k} for k in APPS}
REFS = ["PA/26/0390", "PA/26/0398", "PA/26/0401", "PA/26/0407"]
POLICY = {"conservation": {"policy": "DM14", "max_height_m": 15.0},
          "residential": {"policy": "DM12", "max_height_m": 20.0},
          "industrial": {"policy": "DM9", "max_height_m": 25.0}}
REPLIES = {"highways": "no objection", "heritage": "no objection subject to colour RAL 6009",
           "parish": "support", "airfield": "no objection"}

CASES = [
    Case("mast_policy_zone", "mp1", "wrong_retrieval", "PA/26/0433", ("search_policy", 1, "retrieval"),
         ("issue_decision", 1),
         "The policy search returns the conservation-area policy for an industrial site, so the height limit applied is 15 m."),
    Case("mast_context_previous", "mp2", "context_pollution", "PA/26/0412", ("build_case_context", 1, "other"),
         ("issue_decision", 1),
         "The case context carries the previous application's mast height, so the impact assessment judges a 22.5 m mast."),
    Case("mast_notice_days", "mp3", "off_by_one", "PA/26/0412", ("count_notice_days", 1, "other"),
         ("issue_decision", 1),
         "count_notice_days counts the day of posting as day one, so the site notice expiry is one day early."),
    Case("mast_invented_condition", "mp4", "hallucinated_value", "PA/26/0433", ("assess_impact", 1, "llm"),
         ("issue_decision", 1),
         "The impact assessment cites an exclusion zone of 35 m that no consultee or policy stated."),
    Case("mast_consultee_reply_shape", "mp5", "format_drift", "PA/26/0412", ("fetch_consultee_reply", 2, "tool"),
         ("issue_decision", 1),
         "The consultation portal returns the heritage reply as a coded status object instead of text, which parsing reads as silence."),
]
SYSTEM_IMPACT = "[agent:mast] You are a planning officer. Answer JSON."
SYSTEM_NOTICE = "[agent:mast] You draft site notices. Answer JSON."


@brain("mast")
def _brain(body: dict) -> str:
    req = json.loads(last_user(body))
    if req["ask"] == "impact":
        ok = req["height_m"] <= req["policy"]["max_height_m"] and not req["objections"]
        out = {"recommend": "approve" if ok else "refuse", "height_m": req["height_m"],
               "conditions": req["conditions"]}
        if active("mp4"):
            out["conditions"] = req["conditions"] + ["exclusion zone 35 m"]
        return json.dumps(out)
    return json.dumps({"notice": f"Site notice for {req['ref']} expires {req['expires']}"})


def record(inp: dict, path: Path, server, _prev={"height": 22.5}) -> None:
    ot = Otel("mast-permits")
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    ref = inp["ref"]
    try:
        with ot.span(NAME, "AGENT", inp, **{"agent.name": NAME}) as root:
            with ot.span("fetch_application", "TOOL", {"ref": ref}, **{"tool.name": "fetch_application"}) as sp:
                app = ot.out(sp, {"ref": ref, **APPS[ref]})
            with ot.span("search_policy", "RETRIEVER", f"mast height limit {app['zone']}") as sp:
                zone = app["zone"]
                if active("mp1"):
                    zone = "conservation"
                pol = ot.out(sp, {"documents": [{"id": POLICY[zone]["policy"], **POLICY[zone]}]})
            policy = pol["documents"][0]
            objections, conditions = [], []
            for who in app["consultees"]:
                with ot.span("fetch_consultee_reply", "TOOL", {"ref": ref, "consultee": who},
                             **{"tool.name": "fetch_consultee_reply"}) as sp:
                    reply = REPLIES[who]
                    if active("mp5") and who == "heritage":
                        reply = {"code": "NOC", "cond": "RAL 6009"}
                    got = ot.out(sp, {"consultee": who, "reply": reply})
                with ot.span("parse_reply", "CHAIN", got) as sp:
                    text = got["reply"] if isinstance(got["reply"], str) else ""
                    parsed = {"consultee": who, "objects": text.startswith("object"),
                              "condition": text.split("subject to ")[1] if "subject to" in text else None,
                              "answered": bool(text)}
                    ot.out(sp, parsed)
                if parsed["objects"]:
                    objections.append(who)
                if parsed["condition"]:
                    conditions.append(parsed["condition"])
            with ot.span("build_case_context", "CHAIN", {"ref": ref}) as sp:
                height = app["height_m"]
                if active("mp2"):
                    height = _prev["height"]
                ctx = ot.out(sp, {"ref": ref, "height_m": height, "policy": policy, "objections": objections,
                                  "conditions": conditions, "answered": len(app["consultees"])})
            impact = json.loads(ot.llm("assess_impact", client, SYSTEM_IMPACT, {"ask": "impact", **ctx}))
            with ot.span("notice_agent", "AGENT", {"ref": ref}, **{"agent.name": "notice_agent"}) as sub:
                notice = json.loads(ot.llm("draft_notice", client, SYSTEM_NOTICE,
                                           {"ask": "notice", "ref": ref, "expires": "21 days after posting"}))
                with ot.span("count_notice_days", "CHAIN", {"received": app["received"], "days": 21}) as sp:
                    start = dt.date.fromisoformat(app["received"])
                    days = 21
                    if active("mp3"):
                        days = 20
                    expires = ot.out(sp, {"expires": (start + dt.timedelta(days=days)).isoformat()})
                ot.out(sub, notice)
            with ot.span("issue_decision", "TOOL", {"ref": ref, "impact": impact, "expires": expires},
                         **{"tool.name": "issue_decision"}) as sp:
                errs = []
                lim = POLICY[app["zone"]]["max_height_m"]
                if impact["height_m"] != app["height_m"]:
                    errs.append(f"assessed height {impact['height_m']} m differs from application {app['height_m']} m")
                want = "approve" if app["height_m"] <= lim else "refuse"
                if impact["recommend"] != want:
                    errs.append(f"recommendation {impact['recommend']} contradicts {app['zone']} limit {lim} m")
                allowed = {c for c in ["colour RAL 6009"] if "heritage" in app["consultees"]}
                extra = [c for c in impact["conditions"] if c not in allowed]
                if extra:
                    errs.append(f"condition(s) {extra} have no consultee or policy source")
                if "heritage" in app["consultees"] and "colour RAL 6009" not in impact["conditions"]:
                    errs.append("heritage consultee condition RAL 6009 missing from decision")
                earliest = (dt.date.fromisoformat(app["received"]) + dt.timedelta(days=21)).isoformat()
                if expires["expires"] < earliest:
                    errs.append(f"notice expiry {expires['expires']} is before the statutory 21 days ({earliest})")
                if errs:
                    raise ValueError("Planning portal 422: " + "; ".join(errs))
                ot.out(root, ot.out(sp, {"decision": want, "ref": ref}))
    except ValueError:
        pass
    ot.write(path)
