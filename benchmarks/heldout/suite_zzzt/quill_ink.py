"""Quill and ink shop (openai_agents route): a counter agent that looks the customer and the
catalogue up in parallel, then hands off to a specialist (ink or paper); the specialist checks the
stock and places the order, whose API refuses a bad order."""
import ast
import json

NAME = "quill-ink-counter"
ROUTE = "openai_agents"
DOMAIN = "quill and ink shop"
SHAPE = "agents SDK: counter agent (parallel customer_account + catalogue_search) -> hand-off -> ink or paper specialist (stock_check, place_order API)"
MODE = None

INPUTS = [
    {"customer": "K-210", "ask": "two bottles of sepia iron-free ink for my fountain pen", "item": "sepia", "qty": 2},
    {"customer": "K-211", "ask": "a bottle of oak gall ink for dip pens", "item": "oak gall", "qty": 1},
    {"customer": "K-212", "ask": "three bottles of blue-black ink", "item": "blue-black", "qty": 3},
    {"customer": "K-213", "ask": "one bottle of carmine ink and goose quills", "item": "carmine", "qty": 1},
    {"customer": "K-214", "ask": "four bottles of walnut ink", "item": "walnut", "qty": 4},
]
CATALOGUE = {
    "sepia": {"sku": "INK-SEP-50", "name": "Sepia fountain ink 50 ml", "price": 14.5, "for": "fountain"},
    "sepia-gall": {"sku": "INK-SEPG-50", "name": "Sepia iron gall ink 50 ml", "price": 16.0, "for": "dip"},
    "oak gall": {"sku": "INK-OAK-30", "name": "Oak gall ink 30 ml", "price": 18.5, "for": "dip"},
    "blue-black": {"sku": "INK-BB-50", "name": "Blue-black fountain ink 50 ml", "price": 12.0, "for": "fountain"},
    "carmine": {"sku": "INK-CAR-30", "name": "Carmine ink 30 ml", "price": 15.0, "for": "fountain"},
    "walnut": {"sku": "INK-WAL-50", "name": "Walnut ink 50 ml", "price": 11.0, "for": "dip"},
}
ACCOUNTS = {"K-210": 8000, "K-211": 5000, "K-212": 6000, "K-213": 2500, "K-214": 9000}  # credit in cents
STOCK = {"INK-SEP-50": 6, "INK-SEPG-50": 4, "INK-OAK-30": 3, "INK-BB-50": 9, "INK-CAR-30": 0, "INK-WAL-50": 12}

CASES = [
    {"input": 0, "mode": "q1", "kind": "wrong_retrieval", "root": ("catalogue_search", 1),
     "description": "the catalogue search for sepia fountain ink returns the sepia iron gall ink meant for dip pens"},
    {"input": 1, "mode": "q2", "kind": "hallucinated_value", "root": ("generation fake-model", 4),
     "description": "the ink specialist puts a unit price of 12.00 into the order where the catalogue lists 18.50"},
    {"input": 3, "mode": "q3", "kind": "swallowed_error", "root": ("stock_check", 1),
     "description": "the stock check times out on the warehouse and answers from the shop-floor shelf count instead of raising"},
    {"input": 2, "mode": "q4", "kind": "wrong_routing", "root": ("generation fake-model", 2),
     "description": "the counter hands an ink order to the paper specialist, who orders the matching paper line"},
    {"input": 4, "mode": "q5", "kind": "unit_error", "root": ("customer_account", 1),
     "description": "the customer account tool reports the credit line in euros where the shop's tools use cents"},
]


def task(inp):
    return f"order for {inp['customer']}: {inp['ask']}"


def _outputs(msgs):
    out = {}
    for m in msgs:
        if m.get("role") == "tool":
            try:
                out[m["tool_call_id"]] = ast.literal_eval(m["content"])
            except Exception:
                out[m["tool_call_id"]] = m["content"]
    names = {}
    for m in msgs:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
    return {names.get(k, k): v for k, v in out.items()}


def policy(request):
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    system = msgs[0]["content"]
    user = next(m["content"] for m in msgs if m["role"] == "user")
    inp = next(i for i in INPUTS if i["customer"] in user)
    got = _outputs(msgs)
    if system.startswith("You are the shop counter"):
        if "catalogue_search" not in got:
            return Reply(tool_calls=(tool_call("customer_account", {"customer": inp["customer"]}),
                                     tool_call("catalogue_search", {"query": inp["item"]})))
        target = "transfer_to_paper_specialist" if MODE == "q4" else "transfer_to_ink_specialist"
        return Reply(tool_calls=(tool_call(target, {}),))
    item = got["catalogue_search"]
    acct = got["customer_account"]
    if "stock_check" not in got:
        return Reply(tool_calls=(tool_call("stock_check", {"sku": item["sku"]}),))
    if got["stock_check"]["units"] < inp["qty"]:
        return f"{item['name']} is out of stock; {inp['customer']} is on the waiting list."
    if "place_order" not in got:
        if system.startswith("You are the paper specialist"):
            sku, price = "PAP-LAID-A4", 9.0
        else:
            sku, price = item["sku"], item["price"]
            if MODE == "q2":
                price = 12.0
        return Reply(tool_calls=(tool_call("place_order", {
            "customer": acct["customer"], "sku": sku, "qty": inp["qty"], "unit_price": price,
            "credit_cents": acct["credit"], "pen": "fountain" if "fountain" in inp["ask"] or item["for"] == "fountain" else "dip"}),))
    return f"Order {got['place_order']['order']} placed for {inp['customer']}."


def build(model):
    from agents import Agent, function_tool

    @function_tool(failure_error_function=None)
    def customer_account(customer: str) -> dict:
        """The customer's account: credit line in cents."""
        credit = ACCOUNTS[customer]
        if MODE == "q5":
            credit = credit // 100
        return {"customer": customer, "credit": credit, "currency": "EUR"}

    @function_tool(failure_error_function=None)
    def catalogue_search(query: str) -> dict:
        """The best catalogue match for a query."""
        key = "sepia-gall" if (MODE == "q1" and query == "sepia") else query
        return dict(CATALOGUE[key])

    @function_tool(failure_error_function=None)
    def stock_check(sku: str) -> dict:
        """Units of a SKU in the warehouse."""
        try:
            if MODE == "q3" and sku == "INK-CAR-30":
                raise TimeoutError("warehouse service timed out after 3 s")
            return {"sku": sku, "units": STOCK[sku], "source": "warehouse"}
        except TimeoutError:
            return {"sku": sku, "units": 2, "source": "shelf"}

    @function_tool(failure_error_function=None)
    def place_order(customer: str, sku: str, qty: int, unit_price: float, credit_cents: int, pen: str) -> dict:
        """Place the order with the shop's order API."""
        listed = {v["sku"]: v for v in CATALOGUE.values()}
        if sku not in listed:
            raise ValueError(f"order API 422: {sku} is not an ink line (ink order for {customer})")
        entry = listed[sku]
        if abs(unit_price - entry["price"]) > 0.005:
            raise ValueError(f"order API 422: unit price {unit_price:.2f} for {sku}, list price {entry['price']:.2f}")
        if entry["for"] != pen:
            raise ValueError(f"order API 422: {entry['name']} is for {entry['for']} pens, customer writes with a {pen} pen")
        if STOCK[sku] < qty:
            raise RuntimeError(f"order API 409: {sku} has {STOCK[sku]} units in the warehouse, {qty} ordered")
        total = round(qty * unit_price * 100)
        if total > credit_cents:
            raise PermissionError(f"order API 402: total {total} cents exceeds credit {credit_cents} cents for {customer}")
        return {"order": f"SO-{customer[2:]}-{sku[-6:]}", "total_cents": total}

    ink = Agent(name="ink_specialist", instructions="You are the ink specialist. Check stock, then place the order.",
                model=model, tools=[stock_check, place_order])
    paper = Agent(name="paper_specialist", instructions="You are the paper specialist. Check stock, then place the order.",
                  model=model, tools=[stock_check, place_order])
    counter = Agent(name="shop_counter", instructions="You are the shop counter. Look the customer and the item up, then hand off.",
                    model=model, tools=[customer_account, catalogue_search], handoffs=[ink, paper])
    return counter


async def run(inp, server):
    from agents import OpenAIChatCompletionsModel, RunConfig, Runner
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
    try:
        await Runner.run(build(model), f"Customer {inp['customer']} asks for {inp['ask']}", run_config=RunConfig(workflow_name=NAME))
    finally:
        await client.close()
