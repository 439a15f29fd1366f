"""Birdwatching tour desk (OpenAI Agents SDK: a triage agent hands off to a tour agent, which uses a scout agent as a tool)."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from pathlib import Path

from . import common
from .common import Case
from .kit import active

NAME = "birding-tour-desk"
ROUTE = "openai_agents"
DOMAIN = "birdwatching tours"
SHAPE = "tour_desk (llm) hands off to group_tours or private_tours -> site_scout agent-as-tool (site_checklist) -> sightings, tide, guide, hide (tools) -> book_tour"

SITES = {
    "North Norfolk": {"Cley Marshes": {"targets": ["Spoonbill", "Avocet", "Bearded Tit"], "hides": ["Bishop's Hide", "Dauke's Hide"], "hw": "09:52"},
                      "Titchwell": {"targets": ["Spotted Redshank", "Marsh Harrier", "Avocet"], "hides": ["Island Hide", "Parrinder Hide"], "hw": "10:20"}},
    "Suffolk Coast": {"Minsmere": {"targets": ["Bittern", "Marsh Harrier", "Bearded Tit"], "hides": ["Island Mere Hide", "Bittern Hide"], "hw": "07:15"},
                      "Havergate": {"targets": ["Spoonbill", "Avocet"], "hides": ["Main Hide"], "hw": "07:40"}},
}
TODAY_TIDE = "13:05"
_CLOCK: dict[str, date] = {}

INPUTS = [
    {"enquiry": "BT-2207", "species": "Spoonbill", "region": "North Norfolk", "group": 9, "date": "2025-05-17"},
    {"enquiry": "BT-2231", "species": "Bittern", "region": "Suffolk Coast", "group": 6, "date": "2025-04-26"},
    {"enquiry": "BT-2190", "species": "Marsh Harrier", "region": "Suffolk Coast", "group": 3, "date": "2025-06-07"},
    {"enquiry": "BT-2198", "species": "Avocet", "region": "North Norfolk", "group": 12, "date": "2025-05-03"},
    {"enquiry": "BT-2214", "species": "Spotted Redshank", "region": "North Norfolk", "group": 2, "date": "2025-08-23"},
    {"enquiry": "BT-2225", "species": "Spoonbill", "region": "Suffolk Coast", "group": 7, "date": "2025-07-12"},
]

CASES = [
    Case("zn_birding_1", "wrong_routing", 0, "generation birding-desk", 1, "book_tour",
         "the triage model hands a party of nine to the private tours agent, whose tours take at most four."),
    Case("zn_birding_2", "hallucinated_value", 1, "generation birding-group", 6, "book_tour",
         "the model books the tour in a hide it made up instead of the hide reserve_hide returned."),
    Case("zn_birding_3", "stale_data", 0, "get_sightings", 1, "book_tour",
         "get_sightings answers from last year's cached sightings log, so the latest sighting is a year old."),
    Case("zn_birding_4", "tool_ignores_argument", 1, "get_tide", 1, "book_tour",
         "get_tide ignores the date argument and returns today's high water, so the start time is set for the wrong tide."),
    Case("zn_birding_5", "subagent_wrong_entity", 0, "generation birding-scout", 2, "book_tour",
         "the scout agent reads the checklist row below the one for the species asked about and answers with that site."),
]


def _inp(enquiry: str) -> dict:
    return next(i for i in INPUTS if i["enquiry"] == enquiry)


def _hw_start(hw: str) -> str:
    t = datetime.strptime(hw, "%H:%M") - timedelta(minutes=60)
    return t.strftime("%H:%M")


@common.policy("birding-desk")
def _desk(body: dict) -> object:
    from trajdebug.testing import Reply, tool_call

    user = common.first_user(body)
    inp = next(i for i in INPUTS if i["enquiry"] in user)
    target = "private_tours" if inp["group"] <= 4 else "group_tours"
    if active("zn_birding_1"):
        target = "private_tours"
    return Reply(tool_calls=(tool_call(f"transfer_to_{target}", {}),))


@common.policy("birding-scout")
def _scout(body: dict) -> object:
    from trajdebug.testing import Reply, tool_call

    req = json.loads(common.first_user(body))
    res = common.results_by_tool(body)
    if "site_checklist" not in res:
        return Reply(tool_calls=(tool_call("site_checklist", {"region": req["region"]}),))
    sites = res["site_checklist"]["sites"]
    row = next(n for n, s in enumerate(sites) if req["species"] in s["targets"])
    if active("zn_birding_5"):
        row = (row + 1) % len(sites)
    site = sites[row]
    return json.dumps({"site": site["name"], "species": req["species"], "hides": site["hides"]})


def _tour_policy(product: str):
    def policy(body: dict) -> object:
        from trajdebug.testing import Reply, tool_call

        user = common.first_user(body)
        inp = next(i for i in INPUTS if i["enquiry"] in user)
        res = common.results_by_tool(body)
        done = [n for n, _ in common.called(body)]
        if "ask_site_scout" not in done:
            ask = {"species": inp["species"], "region": inp["region"]}
            return Reply(tool_calls=(tool_call("ask_site_scout", {"input": json.dumps(ask)}),))
        scout = res["ask_site_scout"]
        scout = json.loads(scout) if isinstance(scout, str) else scout
        site = scout["site"]
        if "get_sightings" not in done:
            return Reply(tool_calls=(tool_call("get_sightings", {"site": site, "species": inp["species"], "days": 14}),))
        if "get_tide" not in done:
            return Reply(tool_calls=(tool_call("get_tide", {"site": site, "date": inp["date"]}),))
        if "check_guide" not in done:
            return Reply(tool_calls=(tool_call("check_guide", {"date": inp["date"], "group_size": inp["group"]}),))
        if "reserve_hide" not in done:
            return Reply(tool_calls=(tool_call("reserve_hide", {"site": site, "hide": scout["hides"][0], "date": inp["date"], "group_size": inp["group"]}),))
        if "book_tour" not in done:
            hide = res["reserve_hide"]["hide"]
            if active("zn_birding_2"):
                hide = "Avocet Hide"
            tide = res["get_tide"]
            args = {"enquiry": inp["enquiry"], "product": product, "site": site, "species": inp["species"],
                    "date": inp["date"], "start": _hw_start(tide["high_water"]), "group_size": inp["group"],
                    "guide": res["check_guide"]["guide"], "hide": hide,
                    "last_sighting": res["get_sightings"]["latest"]}
            return Reply(tool_calls=(tool_call("book_tour", args),))
        return f"Booked: {res['book_tour']['booking']}. See you at the car park 15 minutes before the start."

    return policy


common.policy("birding-group")(_tour_policy("group"))
common.policy("birding-private")(_tour_policy("private"))


def _build():
    from agents import Agent, function_tool

    @function_tool
    def site_checklist(region: str) -> str:
        """The sites of a region with their target species and hides."""
        sites = [{"name": n, "targets": s["targets"], "hides": s["hides"]} for n, s in SITES[region].items()]
        return json.dumps({"region": region, "sites": sites})

    @function_tool
    def get_sightings(site: str, species: str, days: int) -> str:
        """Recent sightings of a species at a site over the last N days."""
        latest = _CLOCK["today"] - timedelta(days=2)
        if active("zn_birding_3"):
            latest = latest.replace(year=latest.year - 1)
        return json.dumps({"site": site, "species": species, "count": 4, "latest": latest.isoformat()})

    @function_tool
    def get_tide(site: str, date: str) -> str:
        """High water at the nearest tide station for a date."""
        region = next(r for r, s in SITES.items() if site in s)
        hw = SITES[region][site]["hw"]
        on = date
        if active("zn_birding_4"):
            hw, on = TODAY_TIDE, "2025-04-02"
        return json.dumps({"site": site, "date": on, "high_water": hw})

    @function_tool
    def check_guide(date: str, group_size: int) -> str:
        """A free guide for a date."""
        return json.dumps({"date": date, "guide": "G-14 (R. Ashby)" if group_size > 4 else "G-03 (M. Ince)"})

    @function_tool
    def reserve_hide(site: str, hide: str, date: str, group_size: int) -> str:
        """Reserve a hide for a morning."""
        return json.dumps({"site": site, "hide": hide, "date": date, "reservation": f"HR-{len(hide) * 37}"})

    @function_tool(failure_error_function=None)
    def book_tour(enquiry: str, product: str, site: str, species: str, date: str, start: str, group_size: int,
                  guide: str, hide: str, last_sighting: str) -> str:
        """Create the tour booking (the bookings system checks it)."""
        region = next(r for r, s in SITES.items() if site in s)
        info = SITES[region][site]
        if product == "private" and group_size > 4:
            raise ValueError(f"HTTP 422: group of {group_size} exceeds the private tour limit of 4 (enquiry {enquiry})")
        if species not in info["targets"]:
            raise ValueError(f"HTTP 422: {species} is not on the target list of {site}")
        if hide not in info["hides"]:
            raise ValueError(f"HTTP 404: hide '{hide}' not found at {site}")
        tour_day = datetime.fromisoformat(date)
        if (tour_day - datetime.fromisoformat(last_sighting)).days > 14:
            raise ValueError(f"HTTP 422: latest {species} sighting at {site} is {last_sighting}; guaranteed-species "
                             f"tours need one within 14 days of {date}")
        gap = abs((datetime.strptime(start, "%H:%M") - datetime.strptime(info["hw"], "%H:%M")).total_seconds()) / 60
        if gap > 90:
            raise ValueError(f"HTTP 422: start {start} on {date} is {int(gap)} min from high water at {site} "
                             f"({info['hw']}); wader tours start within 90 min of high water")
        return json.dumps({"booking": f"TB-{enquiry[3:]}", "status": "confirmed"})

    scout = Agent(name="site_scout", instructions="Pick the best site for a species. Answer JSON.",
                  tools=[site_checklist], model=common.agents_model("birding-scout"))
    tools = [scout.as_tool(tool_name="ask_site_scout", tool_description="Ask the scout which site suits a species."),
             get_sightings, get_tide, check_guide, reserve_hide, book_tour]
    group = Agent(name="group_tours", instructions="You book guided group birding tours.", tools=tools,
                  model=common.agents_model("birding-group"))
    private = Agent(name="private_tours", instructions="You book private birding tours (up to 4 people).", tools=tools,
                    model=common.agents_model("birding-private"))
    return Agent(name="tour_desk", instructions="Route each enquiry to group or private tours.",
                 handoffs=[group, private], model=common.agents_model("birding-desk"))


def record(path: Path, inp: dict) -> None:
    prompt = (f"Enquiry {inp['enquiry']}: a party of {inp['group']} would like a {inp['species']} tour in "
              f"{inp['region']} on {inp['date']}.")
    _CLOCK["today"] = date.fromisoformat(inp["date"]) - timedelta(days=5)
    common.run_agents(path, NAME, f"tour enquiry {inp['enquiry']}", _build(), prompt)
