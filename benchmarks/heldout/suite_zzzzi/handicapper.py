"""Racecourse handicapper: allots the weights of a flat handicap from the race conditions and the runners'
official ratings, then submits them to the racing authority (route: langgraph)."""

from __future__ import annotations

import json
import re
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import BaseOutputParser, JsonOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from _common import last_user, system_of
from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "racing-handicapper"
ROUTE = "langgraph"
SWITCH = None
MIN_LB = 112  # 8st 0lb

CONDITIONS = {
    "Ripon 2:30": "Ripon 2:30, Class 4 handicap, 6f, rating band 0-85. Top weight 9st 12lb. Entries close Monday.",
    "Ripon 3:05": "Ripon 3:05, Class 5 handicap, 1m, rating band 0-75. Top weight 9st 9lb. Entries close Monday.",
    "Ripon 3:40": "Ripon 3:40, Class 6 handicap, 1m, rating band 0-60. Top weight 9st 7lb. Entries close Monday.",
    "Chantilly 14:10": "Chantilly 14:10, Handicap de Chantilly, 1600m, rating band 0-80. Top weight 62kg.",
    "Chantilly 15:20": "Chantilly 15:20, Handicap de l'Oise, 2000m, rating band 0-70. Top weight 61kg.",
    "Ayr 4:15": "Ayr 4:15, Class 4 handicap, 7f, rating band 0-80. Top weight 9st 10lb.",
    "Ayr 4:50": "Ayr 4:50, Class 6 handicap, 7f, rating band 0-55. Top weight 9st 7lb.",
}


def _decl(rows):
    return "\n".join(f"{i + 1} | {h} | {age}yo | OR {r if r is not None else '-'} | {t}"
                     for i, (h, age, r, t) in enumerate(rows))


INPUTS = [
    {"task": "weights for Ripon 3:05 handicap", "race": "Ripon 3:05",
     "declarations": _decl([("Copper Kettle (IRE)", 4, 75, "K. Dalgleish"), ("Mister Tamber", 5, 71, "T. Easterby"),
                            ("Lady of Amber (GB)", 3, 68, "R. Fahey"), ("Byron Bay", 6, 66, "D. O'Meara"),
                            ("Skiddaw Lass", 4, 60, "M. Dods"), ("Quietly Rising", 3, None, "J. Quinn")])},
    {"task": "weights for Chantilly 14:10 handicap", "race": "Chantilly 14:10",
     "declarations": _decl([("Belle de Senlis", 4, 80, "C. Ferland"), ("Roi du Lys", 5, 77, "F. Rossi"),
                            ("Marquise d'Oise", 4, 74, "N. Clement"), ("Petit Matin", 3, 70, "H. Pantall"),
                            ("Ciel Ouvert", 6, 66, "J. Reynier")])},
    {"task": "weights for Ayr 4:15 handicap", "race": "Ayr 4:15",
     "declarations": _decl([("Lucky Strike (IRE)", 5, 80, "I. Jardine"), ("Glen Affric", 4, 77, "J. Goldie"),
                            ("Lucky Strike (GB)", 4, 71, "L. Russell"), ("Arran Mist", 3, 69, "K. Dalgleish"),
                            ("Troon Harbour", 6, 64, "R. Fahey"), ("Culzean", 4, 61, "J. Goldie")])},
    {"task": "weights for Ripon 2:30 handicap", "race": "Ripon 2:30",
     "declarations": _decl([("Swaledale", 4, 85, "R. Fahey"), ("Fountains Abbey", 5, 82, "T. Easterby"),
                            ("Nidd Gorge", 3, 79, "M. Dods"), ("Studley Royal", 4, 74, "D. O'Meara"),
                            ("Ure Bank", 6, 70, "K. Dalgleish")])},
    {"task": "weights for Chantilly 15:20 handicap", "race": "Chantilly 15:20",
     "declarations": _decl([("Val d'Oise", 5, 70, "F. Rossi"), ("Pont-Sainte-Maxence", 4, 68, "C. Ferland"),
                            ("Creil Matin", 4, 64, "H. Pantall"), ("Lamorlaye", 3, 62, "N. Clement"),
                            ("Gouvieux", 6, 58, "J. Reynier"), ("Senlis Rose", 5, None, "F. Rossi")])},
]

CASES = [
    {"id": "handicapper_kg_as_lb", "input": 1, "switch": "kg_as_lb", "fault_kind": "unit_error",
     "root": ("ConditionsParser", 1, "parse"), "failure": ("validate_weights", 1),
     "description": "the conditions parser takes Chantilly's 62kg top weight as 62 lb, and the weight "
                    "validation finds a top weight far under the 8st minimum"},
    {"id": "handicapper_next_race", "input": 0, "switch": "next_race", "fault_kind": "wrong_retrieval",
     "root": ("conditions_search", 1, "retrieval"), "failure": ("validate_weights", 1),
     "description": "the conditions search returns the 3:40 race's conditions (band 0-60) for the 3:05, and "
                    "the validation rejects runners rated above 60"},
    {"id": "handicapper_unrated_rating", "input": 4, "switch": "unrated_rating", "fault_kind": "hallucinated_value",
     "root": ("declarations_model", 1, "llm"), "failure": ("bha_submit", 1),
     "description": "reading the declarations, the model gives the unrated Senlis Rose an official rating of "
                    "63, the horse is allotted a weight and the authority refuses it"},
    {"id": "handicapper_suffix_key", "input": 2, "switch": "suffix_key", "fault_kind": "bad_memory_write",
     "root": ("store_ratings", 1, "other"), "failure": ("allot_weights", 1),
     "description": "the ratings memory keys horses by name without their country suffix, so Lucky Strike "
                    "(GB) overwrites Lucky Strike (IRE) and the allotment finds no rating for one of them"},
    {"id": "handicapper_skip_top", "input": 3, "switch": "skip_top", "fault_kind": "off_by_one",
     "root": ("allot_weights", 1, "other"), "failure": ("validate_weights", 1),
     "description": "the allotment loop starts at the second-rated horse, so the top-rated Swaledale gets "
                    "no weight and the validation stops on it"},
]


def st_lb(lb: int) -> str:
    return f"{lb // 14}-{lb % 14:02d}"


class ConditionsSearch(BaseRetriever):
    """Search over the race conditions book of the week's meetings."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        race = next(r for r in CONDITIONS if r in query)
        if SWITCH == "next_race":
            race = "Ripon 3:40"
        return [Document(page_content=CONDITIONS[race], metadata={"race": race, "book": "conditions week 17"})]


@tool
def form_lookup(horse: str) -> str:
    """Recent form figures and days since the horse last ran."""
    n = sum(map(ord, horse))
    return json.dumps({"horse": horse, "form": f"{n % 7}{n % 5}{(n // 3) % 9}", "days_since_run": 10 + n % 40})


@tool
def bha_submit(race: str, weights: list[dict]) -> str:
    """Submit the allotted weights to the racing authority."""
    decl = next(i for i in INPUTS if i["race"] == race)["declarations"]
    unrated = [m.group(1) for m in re.finditer(r"\| ([^|]+?) \| \d+yo \| OR - \|", decl)]
    for w in weights:
        if w["horse"] in unrated:
            raise ValueError(f"racing authority: {w['horse']} holds no official rating; weight {w['weight']} "
                             f"refused for {race}")
    return json.dumps({"race": race, "accepted": len(weights)})


def _parse_conditions(doc_text: str) -> dict:
    band = int(re.search(r"rating band 0-(\d+)", doc_text).group(1))
    m = re.search(r"Top weight (\d+)st (\d+)lb", doc_text)
    if m:
        top = int(m.group(1)) * 14 + int(m.group(2))
    else:
        kg = int(re.search(r"Top weight (\d+)kg", doc_text).group(1))
        top = kg if SWITCH == "kg_as_lb" else round(kg * 2.20462)
    return {"band_max": band, "top_weight_lb": top}


class ConditionsParser(BaseOutputParser[dict]):
    """Reads the rating band and the top weight (in pounds) out of a race's conditions."""

    def parse(self, text: str) -> dict:
        return _parse_conditions(text)


def brain(request):
    system = system_of(request)
    user = last_user(request)
    if "declarations" in system:
        runners = []
        for line in user.splitlines():
            parts = [p.strip() for p in line.split("|")]
            rating = None if parts[3] == "OR -" else int(parts[3][3:])
            if rating is None and SWITCH == "unrated_rating":
                rating = 63
            runners.append({"horse": parts[1], "age": int(parts[2][:-2]), "rating": rating, "trainer": parts[4]})
        return json.dumps({"runners": runners})
    if "bulletin" in system:
        req = json.loads(user)
        return f"{req['race']}: " + "; ".join(f"{w['horse']} {w['weight']}" for w in req["weights"]) + "."
    return "Noted."


class S(TypedDict, total=False):
    race: str
    declarations: str
    conditions: dict
    runners: list
    ratings: dict
    form: dict
    weights: list
    bulletin: str
    receipt: dict


def build(llm):
    search = ConditionsSearch().with_config(run_name="conditions_search")
    parse_conditions = ConditionsParser()
    decl_llm = llm.with_config(run_name="declarations_model")
    bulletin_llm = llm.with_config(run_name="bulletin_model")
    json_parser = JsonOutputParser().with_config(run_name="parse_runners")

    def find_conditions(state: S) -> dict:
        docs = search.invoke(f"conditions {state['race']}")
        return {"conditions": parse_conditions.invoke(docs[0].page_content)}

    def read_declarations(state: S) -> dict:
        msg = decl_llm.invoke([SystemMessage("Read the declarations into JSON runners: horse, age, rating, trainer."),
                               HumanMessage(state["declarations"])])
        return {"runners": json_parser.invoke(msg)["runners"]}

    def check_form(state: S) -> dict:
        form = {}
        for r in state["runners"]:
            form[r["horse"]] = json.loads(form_lookup.invoke({"horse": r["horse"]}))
        return {"form": form}

    def store_ratings(state: S) -> dict:
        ratings = {}
        for r in state["runners"]:
            if r["rating"] is None:
                continue
            key = re.sub(r" \((IRE|GB|FR)\)$", "", r["horse"]) if SWITCH == "suffix_key" else r["horse"]
            ratings[key] = r["rating"]
        return {"ratings": ratings}

    def allot_weights(state: S) -> dict:
        rated = [r for r in state["runners"] if r["rating"] is not None]
        rated.sort(key=lambda r: -state["ratings"][r["horse"]])
        top_rating = state["ratings"][rated[0]["horse"]]
        start = 1 if SWITCH == "skip_top" else 0
        weights = []
        for i in range(start, len(rated)):
            lb = state["conditions"]["top_weight_lb"] - (top_rating - state["ratings"][rated[i]["horse"]])
            weights.append({"horse": rated[i]["horse"], "rating": state["ratings"][rated[i]["horse"]],
                            "lb": max(lb, MIN_LB), "weight": st_lb(max(lb, MIN_LB))})
        return {"weights": weights}

    def validate_weights(state: S) -> dict:
        cond = state["conditions"]
        allotted = {w["horse"] for w in state["weights"]}
        for r in state["runners"]:
            if r["rating"] is None:
                continue
            if r["rating"] > cond["band_max"]:
                raise ValueError(f"{r['horse']} rated {r['rating']} above the race's 0-{cond['band_max']} band")
            if r["horse"] not in allotted:
                raise ValueError(f"no weight allotted to {r['horse']} (rated {r['rating']})")
        if cond["top_weight_lb"] < MIN_LB:
            raise ValueError(f"top weight {st_lb(cond['top_weight_lb'])} below the {st_lb(MIN_LB)} minimum")
        return {}

    def publish(state: S) -> dict:
        msg = bulletin_llm.invoke([SystemMessage("Write the weights bulletin for the racecard."),
                                   HumanMessage(json.dumps({"race": state["race"], "weights": state["weights"]}))])
        receipt = bha_submit.invoke({"race": state["race"],
                                     "weights": [{"horse": w["horse"], "weight": w["weight"]} for w in state["weights"]]})
        return {"bulletin": msg.content, "receipt": json.loads(receipt)}

    g = StateGraph(S)
    order = [("find_conditions", find_conditions), ("read_declarations", read_declarations),
             ("check_form", check_form), ("store_ratings", store_ratings), ("allot_weights", allot_weights),
             ("validate_weights", validate_weights), ("publish", publish)]
    for name, fn in order:
        g.add_node(name, fn)
    g.add_edge(START, order[0][0])
    for (a, _), (b, _) in zip(order, order[1:]):
        g.add_edge(a, b)
    g.add_edge(order[-1][0], END)
    return g.compile()


_GRAPH: dict[str, Any] = {}


def record(inp: dict, out: str, client, model: str) -> None:
    base = str(client.base_url)
    if base not in _GRAPH:
        _GRAPH.clear()
        _GRAPH[base] = build(ChatOpenAI(base_url=base, api_key="not-needed", model=model, max_retries=0))
    tracer = TrajdebugTracer(path=out, name=NAME, task=inp["task"])
    _GRAPH[base].invoke({"race": inp["race"], "declarations": inp["declarations"]},
                        config={"callbacks": [tracer], "run_name": NAME})
