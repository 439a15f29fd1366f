"""Bookbinder's commissions: a LangGraph tool-calling loop (ChatOpenAI.bind_tools + ToolNode, parallel tool calls), a parse node and a schema check node."""
from __future__ import annotations

import json
import re
from typing import Annotated, TypedDict

from langchain_core.messages import AnyMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from pydantic import BaseModel, field_validator, model_validator
from trajdebug.testing import Reply, tool_call

from suite_common import call_results, first_user
from trajdebug.integrations.langchain import TrajdebugTracer

RUN_NAME = "bindery-commission-desk"
ROUTE = "langgraph"
DOMAIN = "bookbinder's commissions"
SHAPE = "LangGraph ReAct loop: model -> ToolNode (commission lookup; parallel leather stock + board size; quote) -> model worksheet -> parse node -> pydantic schema check node"
SWITCH = None

COMMISSIONS = {
    "BC-41": {"ref": "BC-41", "client": "Dr Rhee", "work": "thesis, 3 copies", "format": "A4", "pages": 212, "style": "full cloth", "leather": None, "colour": "navy"},
    "BC-42": {"ref": "BC-42", "client": "Ellery & Sons", "work": "family bible rebind", "format": "quarto", "pages": 1180, "style": "full leather", "leather": "goatskin", "colour": "black"},
    "BC-43": {"ref": "BC-43", "client": "Miss Tolland", "work": "poetry, fine binding", "format": "octavo", "pages": 96, "style": "quarter leather", "leather": "goatskin", "colour": "green"},
    "BC-44": {"ref": "BC-44", "client": "Stowe Library", "work": "ledger restoration", "format": "folio", "pages": 480, "style": "half leather", "leather": "calf", "colour": "tan"},
    "BC-45": {"ref": "BC-45", "client": "Mr Iqbal", "work": "sketchbook set", "format": "octavo", "pages": 160, "style": "full cloth", "leather": None, "colour": "grey"},
}
FORMATS = {"octavo": (150, 230), "quarto": (190, 250), "A4": (210, 297), "folio": (300, 480)}
STOCK = {"goatskin": ["black", "green", "red", "navy"], "calf": ["tan", "red", "brown"], "cloth": ["navy", "grey", "green", "black"]}
INPUTS = [{"ref": r, "due": d} for r, d in [("BC-41", "2027-01-15"), ("BC-42", "2027-02-26"), ("BC-43", "2027-01-29"), ("BC-44", "2027-03-12"), ("BC-45", "2027-01-22")]]
CASES = [
    dict(id="zzzp_bind_01", input=1, switch="a", fault_kind="tool_ignores_argument", root=("board_size", 1, "tool"),
         failure=("validate_worksheet", 1), description="The board size tool ignores the format it is asked for and answers with octavo boards for the quarto bible."),
    dict(id="zzzp_bind_02", input=4, switch="b", fault_kind="format_drift", root=("ChatOpenAI", 4, "llm"),
         failure=("validate_worksheet", 1), description="The model writes the worksheet's price as a text with a pound sign instead of a number."),
    dict(id="zzzp_bind_03", input=2, switch="c", fault_kind="lossy_parsing", root=("write_worksheet", 1, "other"),
         failure=("validate_worksheet", 1), description="Reading the worksheet keeps only the first word of the covering material, so the green goatskin becomes 'green'."),
    dict(id="zzzp_bind_04", input=3, switch="d", fault_kind="wrong_tool_args", root=("ChatOpenAI", 3, "llm"),
         failure=("validate_worksheet", 1), description="The model asks for the quote with the ledger's leaf count (240) instead of its page count (480), so the spine is quoted half as thick."),
    dict(id="zzzp_bind_05", input=0, switch="e", fault_kind="context_pollution", root=("lookup_commission", 1, "tool"),
         failure=("validate_worksheet", 1), description="The commission record for BC-41 carries a note from another client's order asking for red goatskin, and the worksheet takes it up."),
]


@tool
def lookup_commission(ref: str) -> dict:
    """The commission sheet of a binding job."""
    rec = dict(COMMISSIONS[ref])
    if SWITCH == "e":
        rec["desk_notes"] = "Customer prefers red goatskin, full leather (from order BC-39, Mrs Hale)."
    return rec


@tool
def leather_stock(material: str) -> dict:
    """Colours in stock for a covering material (goatskin, calf, cloth)."""
    return {"material": material, "colours": STOCK[material]}


@tool
def board_size(format: str) -> dict:
    """Board dimensions in mm for a book format, squares included."""
    w, h = FORMATS["octavo" if SWITCH == "a" else format]
    return {"format": format, "board_mm": [w + 6, h + 6]}


@tool
def quote_binding(style: str, pages: int, board_mm: list) -> dict:
    """Price and spine thickness for a binding."""
    spine = round(pages * 0.11 + 4, 1)
    base = {"full cloth": 38.0, "quarter leather": 95.0, "half leather": 140.0, "full leather": 210.0}[style]
    return {"spine_mm": spine, "price_gbp": round(base + board_mm[0] * board_mm[1] / 10000 * 3.5 + pages * 0.05, 2)}


class Worksheet(BaseModel):
    ref: str
    style: str
    material: str
    colour: str
    board_mm: list[int]
    spine_mm: float
    price_gbp: float
    due: str

    @field_validator("material")
    @classmethod
    def known_material(cls, v):
        if v not in ("goatskin", "calf", "cloth", "full cloth"):
            raise ValueError(f"covering material {v!r} is not one the bindery stocks")
        return v

    @model_validator(mode="after")
    def fits_commission(self):
        c = COMMISSIONS[self.ref]
        w, h = FORMATS[c["format"]]
        if self.board_mm[0] < w or self.board_mm[1] < h:
            raise ValueError(f"boards {self.board_mm} mm smaller than the {c['format']} text block {w}x{h} mm")
        if self.spine_mm < c["pages"] * 0.1:
            raise ValueError(f"spine {self.spine_mm} mm too thin for {c['pages']} pages")
        if self.colour != c["colour"]:
            raise ValueError(f"colour {self.colour} on the worksheet, {c['colour']} commissioned")
        return self


def policy(request):
    res = dict(call_results(request))
    ref = re.search(r"BC-\d+", first_user(request)).group(0)
    due = re.search(r"\d{4}-\d{2}-\d{2}", first_user(request)).group(0)
    if "lookup_commission" not in res:
        return Reply(tool_calls=(tool_call("lookup_commission", {"ref": ref}),))
    c = res["lookup_commission"]
    material = c["leather"] or "cloth"
    colour = c["colour"]
    if "desk_notes" in c and "red goatskin" in c["desk_notes"]:
        material, colour = "goatskin", "red"
    if "leather_stock" not in res:
        return Reply(tool_calls=(tool_call("leather_stock", {"material": material}), tool_call("board_size", {"format": c["format"]})))
    if "quote_binding" not in res:
        pages = c["pages"] // 2 if SWITCH == "d" else c["pages"]
        return Reply(tool_calls=(tool_call("quote_binding", {"style": c["style"], "pages": pages, "board_mm": res["board_size"]["board_mm"]}),))
    q = res["quote_binding"]
    price = f"£{q['price_gbp']:.2f}" if SWITCH == "b" else q["price_gbp"]
    sheet = {"ref": ref, "style": c["style"], "material": f"{material} {colour}" if material != "cloth" else f"cloth {colour}",
             "board_mm": res["board_size"]["board_mm"], "spine_mm": q["spine_mm"], "price_gbp": price, "due": due}
    return "Worksheet:\n" + json.dumps(sheet)


class Desk(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    worksheet: dict
    checked: dict


def build(llm):
    tools = [lookup_commission, leather_stock, board_size, quote_binding]
    bound = llm.bind_tools(tools)

    def binder(state: Desk) -> dict:
        return {"messages": [bound.invoke(state["messages"])]}

    def route(state: Desk) -> str:
        return "tools" if state["messages"][-1].tool_calls else "write_worksheet"

    def write_worksheet(state: Desk) -> dict:
        text = state["messages"][-1].content
        raw = json.loads(text.split("\n", 1)[1])
        words = raw.pop("material").split()
        if SWITCH == "c":
            material, colour = words[-1], words[-1]
        else:
            material, colour = " ".join(words[:-1]), words[-1]
        return {"worksheet": dict(raw, material=material, colour=colour)}

    def validate_worksheet(state: Desk) -> dict:
        return {"checked": Worksheet(**state["worksheet"]).model_dump()}

    g = StateGraph(Desk)
    g.add_node("binder", binder)
    g.add_node("tools", ToolNode(tools))
    g.add_node("write_worksheet", write_worksheet)
    g.add_node("validate_worksheet", validate_worksheet)
    g.add_edge(START, "binder")
    g.add_conditional_edges("binder", route, ["tools", "write_worksheet"])
    g.add_edge("tools", "binder")
    g.add_edge("write_worksheet", "validate_worksheet")
    g.add_edge("validate_worksheet", END)
    return g.compile()


def record(server, inp: dict, path: str) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="bindery-model", max_retries=0)
    tracer = TrajdebugTracer(path=path, name=RUN_NAME, task=f"commission {inp['ref']}")
    try:
        build(llm).invoke({"messages": [("user", f"Prepare the worksheet for commission {inp['ref']}, due {inp['due']}.")]},
                          config={"callbacks": [tracer]})
    except Exception:
        pass
