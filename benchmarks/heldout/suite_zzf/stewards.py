"""Horse racing stewards' inquiries (openai_agents): desk -> hand-off to a panel -> result, statements (clerk agent as tool), rules -> ruling."""
from __future__ import annotations

import json

from agents import Agent, function_tool
from trajdebug.testing import Reply, tool_call

from ._agents_rt import history, model_for, run_agent
from .kit import active

AGENT = "stewards-inquiries"
ROUTE = "openai_agents"
DOMAIN = "horse racing stewards' inquiries"

RACES = {
    "R-4412": [("Bright Meridian", "T. Walsh", 0.0), ("Copper Vane", "L. Grady", 1.5), ("Ardent Sky", "M. Cole", 0.75),
               ("Quiet Harbour", "K. Doyle", 2.0), ("Storm Lantern", "P. Reyes", 0.1), ("Tallis Bay", "J. Finn", 3.0)],
    "R-4420": [("Amber Reach", "S. Byrne", 0.0), ("Fen Runner", "D. Hale", 0.3), ("Grey Minstrel", "A. Oduya", 1.5),
               ("Moth Light", "C. Price", 2.5), ("Elder Gate", "R. Mohan", 0.5)],
    "R-4431": [("Velvet Rook", "J. Finn", 0.0), ("Harrow Lad", "T. Walsh", 0.2), ("Sable Note", "K. Doyle", 1.0),
               ("Winter Ash", "L. Grady", 4.0)],
    "R-4437": [("North Cairn", "M. Cole", 0.0), ("Bell Tarn", "P. Reyes", 0.5), ("Kestrel Run", "A. Oduya", 0.1),
               ("Pale Regent", "D. Hale", 2.0), ("Cinder Way", "S. Byrne", 1.0)],
    "R-4445": [("Lamp Street", "C. Price", 0.0), ("Otter Glen", "R. Mohan", 3.0), ("Hollow Crown", "J. Finn", 0.2)],
    "R-4452": [("Marram", "L. Grady", 0.0), ("Sea Holly", "T. Walsh", 1.25), ("Drift Line", "K. Doyle", 0.3),
               ("Foxglove Hill", "M. Cole", 0.5), ("Iron Bridge", "P. Reyes", 2.0)],
}
INCIDENTS = {
    "INQ-771": {"race": "R-4412", "type": "interference", "offender": "Quiet Harbour", "sufferer": "Storm Lantern", "severity": 2},
    "INQ-784": {"race": "R-4420", "type": "interference", "offender": "Fen Runner", "sufferer": "Grey Minstrel", "severity": 3},
    "INQ-790": {"race": "R-4431", "type": "interference", "offender": "Velvet Rook", "sufferer": "Harrow Lad", "severity": 1},
    "INQ-793": {"race": "R-4437", "type": "whip", "offender": "Kestrel Run", "sufferer": None, "severity": 2},
    "INQ-801": {"race": "R-4445", "type": "interference", "offender": "Otter Glen", "sufferer": "Hollow Crown", "severity": 2},
    "INQ-806": {"race": "R-4452", "type": "whip", "offender": "Drift Line", "sufferer": None, "severity": 1},
}
RULES = {"B58": {"rule": "(B)58", "covers": "interference", "min_days": 2, "max_days": 6, "amend_if_margin_at_most": 0.5},
         "F45": {"rule": "(F)45", "covers": "whip", "min_days": 1, "max_days": 4, "amend_if_margin_at_most": None}}
STATEMENTS = {r: f"{r}: my horse shifted off a true line approaching the final furlong" for r in
              {row[1] for rows in RACES.values() for row in rows}}

INPUTS = {"A": "INQ-771", "B": "INQ-784", "R1": "INQ-790", "R2": "INQ-793", "R3": "INQ-801", "R4": "INQ-806"}

CASES = [
    {"id": "zzf-stewards-01", "kind": "truncated_result", "input": "A", "root": ("fetch_race_result", 1),
     "failure": ("issue_ruling", 1),
     "desc": "fetch_race_result returns only the first four finishers, so the panel never sees that Storm Lantern was beaten a short head and keeps the placings."},
    {"id": "zzf-stewards-02", "kind": "subagent_wrong_entity", "input": "B", "root": ("generation fake-model", 8),
     "failure": ("issue_ruling", 1),
     "desc": "The statement clerk looks up the rider of the next-placed horse instead of the sufferer's rider, so the ruling cites a non-party."},
    {"id": "zzf-stewards-03", "kind": "wrong_routing", "input": "A", "root": ("generation fake-model", 2),
     "failure": ("issue_ruling", 1),
     "desc": "The inquiry desk's model hands an interference inquiry to the whip panel, which rules under the whip rule."},
    {"id": "zzf-stewards-04", "kind": "hallucinated_value", "input": "B", "root": ("generation fake-model", 11),
     "failure": ("issue_ruling", 1),
     "desc": "The interference panel's model proposes a 9-day suspension, a figure outside the (B)58 range it was given."},
    {"id": "zzf-stewards-05", "kind": "swallowed_error", "input": "A", "root": ("consult_rules", 1),
     "failure": ("issue_ruling", 1),
     "desc": "consult_rules swallows the rule archive's timeout and returns a zero-day penalty range, so the suspension is 0 days."},
]


@function_tool
def fetch_incident_report(inquiry_id: str) -> str:
    """The raceday incident report for an inquiry."""
    inc = INCIDENTS[inquiry_id]
    riders = {h: r for h, r, _ in RACES[inc["race"]]}
    return json.dumps({"inquiry": inquiry_id, **inc, "offender_rider": riders[inc["offender"]],
                       "sufferer_rider": riders.get(inc["sufferer"])})


@function_tool
def fetch_race_result(race_id: str) -> str:
    """The official result of a race: finishers in order with margins."""
    rows = RACES[race_id]
    if active("zzf-stewards-01"):
        rows = rows[:4]
    return json.dumps({"race": race_id, "finishers": [
        {"pos": i, "horse": h, "rider": r, "margin_behind_previous": m} for i, (h, r, m) in enumerate(rows, 1)]})


@function_tool
def lookup_rider_statement(rider: str, inquiry_id: str) -> str:
    """A rider's recorded statement to the stewards."""
    return json.dumps({"inquiry": inquiry_id, "rider": rider, "statement": STATEMENTS[rider]})


@function_tool
def consult_rules(rule_code: str) -> str:
    """The penalty range and amendment rule of a rule code."""
    rule = dict(RULES[rule_code])
    if active("zzf-stewards-05") and rule_code == "B58":
        try:
            raise TimeoutError("rule archive did not answer")
        except TimeoutError:
            rule.update(min_days=0, max_days=0)
    return json.dumps(rule)


def _issue(inquiry_id: str, rule_code: str, suspension_days: int, amended_placings: list[str], statements_from: list[str]) -> str:
    inc = INCIDENTS[inquiry_id]
    rows = RACES[inc["race"]]
    riders = {h: r for h, r, _ in rows}
    rule = RULES[rule_code]
    if rule["covers"] != inc["type"]:
        raise ValueError(f"BHA ruling rejected: rule {rule['rule']} covers {rule['covers']}, inquiry {inquiry_id} "
                         f"is an {inc['type']} inquiry")
    if not rule["min_days"] <= suspension_days <= rule["max_days"]:
        raise ValueError(f"BHA ruling rejected: suspension of {suspension_days} days outside {rule['rule']} "
                         f"range {rule['min_days']}-{rule['max_days']}")
    parties = {riders[inc["offender"]]} | ({riders[inc["sufferer"]]} if inc["sufferer"] else set())
    if set(statements_from) != parties:
        extra = sorted(set(statements_from) - parties) or sorted(parties - set(statements_from))
        raise ValueError(f"BHA ruling rejected: statements {sorted(statements_from)} do not match the parties "
                         f"{sorted(parties)} (check {extra[0]})")
    order = [h for h, _, _ in rows]
    expected = list(order)
    if inc["sufferer"] and rule["amend_if_margin_at_most"] is not None:
        i, j = order.index(inc["offender"]), order.index(inc["sufferer"])
        if j == i + 1 and rows[j][2] <= rule["amend_if_margin_at_most"]:
            expected[i], expected[j] = expected[j], expected[i]
    if amended_placings != expected:
        raise ValueError(f"BHA ruling rejected: placings for {inc['race']} should read {expected}, ruling gives {amended_placings}")
    return json.dumps({"ruling": f"SR-{inquiry_id[4:]}", "published": True})


issue_ruling = function_tool(_issue, name_override="issue_ruling", failure_error_function=None)


def _payload(m):
    c = m.get("content")
    if isinstance(c, list):
        c = "".join(p.get("text", "") for p in c)
    return c or ""


def policy(request):
    msgs = request.body["messages"]
    system = _payload(msgs[0])
    done = history(msgs)
    got = {name: res for name, _, res in done}
    users = [_payload(m) for m in msgs if m.get("role") == "user"]
    if system.startswith("Statement clerk"):
        ask = json.loads(users[-1])
        if "lookup_rider_statement" not in got:
            rider = ask["rider"]
            if active("zzf-stewards-02") and ask.get("role") == "sufferer":
                rider = ask["next_rider"]
            return Reply(tool_calls=(tool_call("lookup_rider_statement", {"rider": rider, "inquiry_id": ask["inquiry"]}),))
        return json.dumps(got["lookup_rider_statement"])
    inquiry = users[0].split()[-1]
    if system.startswith("Inquiry desk"):
        if "fetch_incident_report" not in got:
            return Reply(tool_calls=(tool_call("fetch_incident_report", {"inquiry_id": inquiry}),))
        kind = got["fetch_incident_report"]["type"]
        if active("zzf-stewards-03"):
            kind = "whip"
        return Reply(tool_calls=(tool_call("transfer_to_interference_panel" if kind == "interference" else "transfer_to_whip_panel", {}),))
    inc = got["fetch_incident_report"]
    if "fetch_race_result" not in got:
        return Reply(tool_calls=(tool_call("fetch_race_result", {"race_id": inc["race"]}),))
    fin = got["fetch_race_result"]["finishers"]
    rider_of = {f["horse"]: f["rider"] for f in fin}
    statements = [res for name, _, res in done if name == "take_statement"]
    wanted = [("offender", inc["offender"])] + ([("sufferer", inc["sufferer"])] if inc["sufferer"] else [])
    if len(statements) < len(wanted):
        role, horse = wanted[len(statements)]
        pos = next((f["pos"] for f in fin if f["horse"] == horse), None)
        nxt = fin[pos]["rider"] if pos is not None and pos < len(fin) else fin[0]["rider"]
        rider = inc[f"{role}_rider"]
        return Reply(tool_calls=(tool_call("take_statement", {"input": json.dumps(
            {"inquiry": inquiry, "role": role, "horse": horse, "rider": rider, "next_rider": nxt})}),))
    code = "B58" if system.startswith("Interference panel") else "F45"
    if "consult_rules" not in got:
        return Reply(tool_calls=(tool_call("consult_rules", {"rule_code": code}),))
    rule = got["consult_rules"]
    if "issue_ruling" not in got:
        days = min(rule["min_days"] + inc["severity"] - 1, rule["max_days"])
        if active("zzf-stewards-04"):
            days = 9
        order = [f["horse"] for f in fin]
        if inc["sufferer"] in order and rule.get("amend_if_margin_at_most") is not None:
            i, j = order.index(inc["offender"]), order.index(inc["sufferer"])
            if j == i + 1 and fin[j]["margin_behind_previous"] <= rule["amend_if_margin_at_most"]:
                order[i], order[j] = order[j], order[i]
        if len(order) < len(RACES[inc["race"]]):
            order = order + [h for h, _, _ in RACES[inc["race"]][len(order):]]
        said = [s["rider"] if isinstance(s, dict) else json.loads(s)["rider"] if s.startswith("{") else s for s in statements]
        return Reply(tool_calls=(tool_call("issue_ruling", {"inquiry_id": inquiry, "rule_code": code, "suspension_days": days,
                                                            "amended_placings": order, "statements_from": said}),))
    return f"Ruling {got['issue_ruling']['ruling']} published for {inquiry}."


def build(server):
    model = model_for(server)
    clerk = Agent(name="Statement clerk", model=model, tools=[lookup_rider_statement],
                  instructions="Statement clerk: fetch the named rider's statement and return it as JSON.")
    take_statement = clerk.as_tool(tool_name="take_statement", tool_description="Take one rider's statement.")
    common_tools = [fetch_race_result, take_statement, consult_rules, issue_ruling]
    interference = Agent(name="Interference panel", model=model, tools=common_tools,
                         instructions="Interference panel: establish the facts, take statements, apply rule (B)58, issue the ruling.")
    whip = Agent(name="Whip panel", model=model, tools=common_tools,
                 instructions="Whip panel: establish the facts, take statements, apply rule (F)45, issue the ruling.")
    desk = Agent(name="Inquiry desk", model=model, tools=[fetch_incident_report], handoffs=[interference, whip],
                 instructions="Inquiry desk: read the incident report and hand the inquiry to the right panel.")
    return desk


def record(inp: str, out, server) -> None:
    server.use(policy)
    run_agent(build(server), f"Open stewards' inquiry {inp}", out, AGENT, f"stewards' inquiry {inp}", catch=(Exception,))
