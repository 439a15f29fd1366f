"""Street-organ hire company: a LangGraph tool-calling desk with parallel tool calls.

Shape: recall_customer (tool customer_history) -> search_depots (a LangChain retriever over the organ
catalogue) -> desk (ChatOpenAI with tools bound) -> tools (ToolNode: availability, quote and music rolls
called in parallel) -> desk -> confirm_hire (the hire desk's confirmation schema, pydantic, raises).
"""

from __future__ import annotations

import json
import re
from typing import Annotated, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel, Field, model_validator

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

NAME = "street-organ-hire"
ROUTE = "langgraph"
DOMAIN = "street-organ hire company"
SHAPE = "tool-calling desk, 16 steps: memory tool -> retriever -> llm -> 3 parallel tool calls (ToolNode) -> llm -> pydantic schema check raises"
SWITCH = None

DEPOTS = {"Manchester": ("M", "SK", "WA"), "Bristol": ("BS", "BA"), "London": ("E", "N", "SE"),
          "Leeds": ("LS", "BD")}
ORGANS = [
    {"id": "SO-104", "name": "Die Lustige Witwe", "depot": "Manchester", "genres": ["waltz", "music hall"], "rate": 85},
    {"id": "SO-117", "name": "Carl Frei 52-key", "depot": "Manchester", "genres": ["dance band", "waltz"], "rate": 110},
    {"id": "SO-121", "name": "Little Harmonia", "depot": "Manchester", "genres": ["nursery", "music hall"], "rate": 60},
    {"id": "SO-203", "name": "Bristol Belle", "depot": "Bristol", "genres": ["sea shanty", "music hall"], "rate": 90},
    {"id": "SO-208", "name": "Avon Raffin 31", "depot": "Bristol", "genres": ["waltz", "carols"], "rate": 75},
    {"id": "SO-302", "name": "Pearly Queen", "depot": "London", "genres": ["music hall", "carols"], "rate": 95},
    {"id": "SO-309", "name": "Thames Decap", "depot": "London", "genres": ["dance band", "jazz"], "rate": 140},
    {"id": "SO-401", "name": "Aire Valley Gavioli", "depot": "Leeds", "genres": ["brass band", "waltz"], "rate": 100},
]
ROLLS = {
    "SO-104": ["waltz: Skaters' Waltz", "waltz: Blue Danube", "music hall: Daisy Bell"],
    "SO-117": ["dance band: In the Mood", "dance band: Tiger Rag", "waltz: Emperor Waltz"],
    "SO-121": ["nursery: Oranges and Lemons", "music hall: Any Old Iron"],
    "SO-203": ["music hall: Daisy Bell", "sea shanty: Wellerman", "sea shanty: Drunken Sailor"],
    "SO-208": ["waltz: Gold and Silver", "carols: Silent Night"],
    "SO-302": ["music hall: My Old Man", "carols: Ding Dong Merrily", "carols: Good King Wenceslas"],
    "SO-309": ["dance band: Sing Sing Sing", "jazz: Tiger Rag"],
    "SO-401": ["waltz: Skaters' Waltz", "brass band: Floral Dance", "brass band: Slaidburn"],
}
HISTORY = {
    "Agnes Whitlow": [{"customer": "Agnes Whitlow", "text": "Last year's waltz organ was lovely."}],
    "Bertie Okafor": [{"customer": "Bertie Okafor", "text": "Our carol evening is on 2027-12-11 again."}],
    "June Whitlow": [{"customer": "June Whitlow", "text": "Please hold an organ for our fete on 2027-07-24."}],
}

INPUTS = [
    {"customer": "Agnes Whitlow", "postcode": "SK4 2HD", "date": "2027-06-05", "hours": 4, "genre": "waltz",
     "occasion": "garden party"},
    {"customer": "Bertie Okafor", "postcode": "SE15 4QL", "date": "2027-12-11", "hours": 3, "genre": "carols",
     "occasion": "carol evening"},
    {"customer": "Harbour Festival Bristol", "postcode": "BS1 5TY", "date": "2027-07-17", "hours": 6,
     "genre": "sea shanty", "occasion": "harbour festival"},
    {"customer": "Saltaire Wedding Barn", "postcode": "BD18 3LA", "date": "2027-09-04", "hours": 5,
     "genre": "brass band", "occasion": "wedding"},
    {"customer": "Didsbury Primary", "postcode": "M20 6RL", "date": "2027-05-22", "hours": 2,
     "genre": "music hall", "occasion": "school summer fair"},
]

CASES = [
    {"id": "zzzg_org_01", "input": 3, "switch": 1, "kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 1), "failure": ("confirm_hire", 1),
     "description": "The desk model asks the quote tool for 2 hours where the wedding booked 5, so the "
                    "confirmed total does not match the hourly rate times the hours."},
    {"id": "zzzg_org_02", "input": 1, "switch": 2, "kind": "hallucinated_value",
     "root": ("ChatOpenAI", 2), "failure": ("confirm_hire", 1),
     "description": "The desk model's confirmation states a deposit of 20 GBP that no quote gave; the "
                    "quote asked for 25 percent of the total."},
    {"id": "zzzg_org_03", "input": 2, "switch": 3, "kind": "truncated_result",
     "root": ("music_rolls", 1), "failure": ("confirm_hire", 1),
     "description": "The music roll listing is cut after its first entries, so none of Bristol Belle's "
                    "sea shanty rolls reach the confirmation."},
    {"id": "zzzg_org_04", "input": 4, "switch": 4, "kind": "wrong_retrieval",
     "root": ("OrganCatalogueRetriever", 1), "failure": ("confirm_hire", 1),
     "description": "The catalogue search returns the Bristol depot's organs for a Manchester postcode, "
                    "and the desk offers an organ the Manchester area is not served from."},
    {"id": "zzzg_org_05", "input": 0, "switch": 5, "kind": "context_pollution",
     "root": ("customer_history", 1), "failure": ("confirm_hire", 1),
     "description": "The customer history lookup matches on surname and brings in June Whitlow's fete "
                    "date, 2027-07-24, which the desk books instead of Agnes Whitlow's 2027-06-05."},
]

DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def depot_for(postcode: str) -> str:
    area = re.match(r"[A-Z]+", postcode).group(0)
    return next(d for d, areas in DEPOTS.items() if area in areas)


# ---------------------------------------------------------------- model policy

def policy(request):
    msgs = request.body["messages"]
    req = json.loads(next(m["content"] for m in msgs if m["role"] == "user" and m["content"].startswith("{")))
    said = [d for m in msgs if m["role"] in ("user", "system") for d in DATE.findall(m.get("content") or "")]
    date = said[-1]
    catalogue = json.loads(next(m["content"] for m in msgs if m["role"] == "system"
                                and m["content"].startswith("Catalogue"))[len("Catalogue:"):])
    organ = next((o for o in catalogue if req["genre"] in o["genres"]), catalogue[0])
    results = [json.loads(m["content"]) for m in msgs if m["role"] == "tool"]
    if not results:
        hours = 2 if SWITCH == 1 else req["hours"]
        return Reply(tool_calls=(
            tool_call("check_availability", {"organ_id": organ["id"], "date": date}),
            tool_call("quote_hire", {"organ_id": organ["id"], "hours": hours, "postcode": req["postcode"]}),
            tool_call("music_rolls", {"organ_id": organ["id"]}),
        ))
    quote = next(r for r in results if "total_gbp" in r)
    listing = next(r for r in results if "rolls" in r)
    deposit = 20.0 if SWITCH == 2 else quote["deposit_gbp"]
    rolls = [r.split(": ", 1)[1] for r in listing["rolls"] if r.startswith(req["genre"] + ":")]
    return json.dumps({"customer": req["customer"], "organ_id": organ["id"], "depot": organ["depot"],
                       "postcode": req["postcode"], "date": date, "hours": req["hours"],
                       "rate_gbp": quote["rate_gbp"], "total_gbp": quote["total_gbp"], "deposit_gbp": deposit,
                       "rolls": rolls})


# ---------------------------------------------------------------- tools and retriever

@tool
def customer_history(customer: str) -> str:
    """Earlier messages from this customer."""
    if SWITCH == 5:
        surname = customer.split()[-1]
        found = [m for k, v in HISTORY.items() if k.split()[-1] == surname for m in v]
    else:
        found = HISTORY.get(customer, [])
    return json.dumps(found)


class OrganCatalogueRetriever(BaseRetriever):
    """Organs held at the depot that serves a postcode."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        depot = depot_for(query.split("|")[0].strip())
        if SWITCH == 4:
            depot = "Bristol"
        return [Document(page_content=json.dumps(o), metadata={"id": o["id"], "depot": o["depot"]})
                for o in ORGANS if o["depot"] == depot]


@tool
def check_availability(organ_id: str, date: str) -> str:
    """Whether an organ is free on a date."""
    return json.dumps({"organ_id": organ_id, "date": date, "available": True})


@tool
def quote_hire(organ_id: str, hours: int, postcode: str) -> str:
    """Hire quote for an organ: hourly rate, total and deposit (25 percent)."""
    organ = next(o for o in ORGANS if o["id"] == organ_id)
    total = organ["rate"] * hours
    return json.dumps({"organ_id": organ_id, "hours": hours, "rate_gbp": organ["rate"], "total_gbp": total,
                       "deposit_gbp": round(total * 0.25, 2)})


@tool
def music_rolls(organ_id: str) -> str:
    """The music rolls that travel with an organ."""
    rolls = ROLLS[organ_id]
    if SWITCH == 3:
        rolls = rolls[:1]
    return json.dumps({"organ_id": organ_id, "rolls": rolls})


class HireConfirmation(BaseModel):
    customer: str
    organ_id: str = Field(pattern=r"^SO-\d{3}$")
    depot: str
    postcode: str
    date: str
    hours: int = Field(gt=0, le=8)
    rate_gbp: float
    total_gbp: float
    deposit_gbp: float
    rolls: list[str] = Field(min_length=1)

    @model_validator(mode="after")
    def consistent(self):
        if abs(self.rate_gbp * self.hours - self.total_gbp) > 0.01:
            raise ValueError(f"total {self.total_gbp} GBP is not {self.hours} h at {self.rate_gbp} GBP/h")
        if self.deposit_gbp < round(self.total_gbp * 0.25, 2):
            raise ValueError(f"deposit {self.deposit_gbp} GBP is below a quarter of {self.total_gbp} GBP")
        if depot_for(self.postcode) != self.depot:
            raise ValueError(f"{self.postcode} is served from {depot_for(self.postcode)}, not {self.depot}")
        return self


class HireDateMismatch(Exception):
    pass


# ---------------------------------------------------------------- graph

class Hire(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    request: dict
    confirmation: dict


def build(llm):
    tools = [check_availability, quote_hire, music_rolls]
    desk_llm = llm.bind_tools(tools)
    retriever = OrganCatalogueRetriever()

    def recall_customer(state: Hire) -> dict:
        req = state["request"]
        history = json.loads(customer_history.invoke({"customer": req["customer"]}))
        notes = [SystemMessage(f"Earlier message from {h['customer']}: {h['text']}") for h in history]
        return {"messages": [SystemMessage("You are the hire desk. Book an organ for the request."),
                             HumanMessage(json.dumps(req)), *notes]}

    def search_depots(state: Hire) -> dict:
        req = state["request"]
        docs = retriever.invoke(f"{req['postcode']} | {req['genre']}")
        catalogue = [json.loads(d.page_content) for d in docs]
        return {"messages": [SystemMessage("Catalogue:" + json.dumps(catalogue))]}

    def desk(state: Hire) -> dict:
        return {"messages": [desk_llm.invoke(state["messages"])]}

    def confirm_hire(state: Hire) -> dict:
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        confirmation = HireConfirmation.model_validate_json(last.content)
        if confirmation.date != state["request"]["date"]:
            raise HireDateMismatch(f"confirmation is for {confirmation.date}; {confirmation.customer} asked for "
                                   f"{state['request']['date']}")
        return {"confirmation": confirmation.model_dump()}

    g = StateGraph(Hire)
    g.add_node("recall_customer", recall_customer)
    g.add_node("search_depots", search_depots)
    g.add_node("desk", desk)
    g.add_node("tools", ToolNode(tools))
    g.add_node("confirm_hire", confirm_hire)
    g.add_edge(START, "recall_customer")
    g.add_edge("recall_customer", "search_depots")
    g.add_edge("search_depots", "desk")
    g.add_conditional_edges("desk", tools_condition, {"tools": "tools", END: "confirm_hire"})
    g.add_edge("tools", "desk")
    g.add_edge("confirm_hire", END)
    return g.compile()


def record(inp: dict, path: str, server) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"hire an organ for {inp['customer']} on {inp['date']}")
    build(llm).invoke({"request": inp, "messages": []}, config={"callbacks": [tracer]})
