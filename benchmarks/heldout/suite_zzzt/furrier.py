"""Furrier's storage service (sdk route): ticket read by the model, per-garment vault loop with a
climate gateway that needs a second attempt, slots kept in run.state, final validator step."""
import json

import trajdebug

NAME = "furrier-vault-desk"
ROUTE = "sdk"
DOMAIN = "furrier's storage service"
SHAPE = "input -> llm read -> parse -> customer tool -> per garment (retrieval, tool w/ retry, state write) -> pricing -> llm letter -> validator"
MODE = None  # one switch, read in exactly one place per case

INPUTS = [
    {"ticket": "T-301", "customer": "Mrs. Okafor", "text": "Store my mink coat (110 cm) and fox stole (60 cm) for 6 months.",
     "garments": [["mink coat", "mink", 110], ["fox stole", "fox", 60]], "months": 6},
    {"ticket": "T-302", "customer": "Mr. Lindqvist", "text": "Sable hat, beaver jacket and mink cape, 4 months please.",
     "garments": [["sable hat", "sable", 30], ["beaver jacket", "beaver", 80], ["mink cape", "mink", 70]], "months": 4},
    {"ticket": "T-303", "customer": "Ms. Duarte", "text": "One chinchilla wrap, 9 months.",
     "garments": [["chinchilla wrap", "chinchilla", 90]], "months": 9},
    {"ticket": "T-304", "customer": "Dr. Haas", "text": "Fox coat and fox muff, 5 months.",
     "garments": [["fox coat", "fox", 105], ["fox muff", "fox", 25]], "months": 5},
    {"ticket": "T-305", "customer": "Mrs. Ibarra", "text": "Mink coat, sable collar, fox hat and beaver vest for 3 months.",
     "garments": [["mink coat", "mink", 115], ["sable collar", "sable", 20], ["fox hat", "fox", 28], ["beaver vest", "beaver", 65]], "months": 3},
]

CASES = [
    {"input": 0, "mode": "m1", "kind": "hallucinated_value", "root": ("read_ticket", 1),
     "description": "the model's reading of the ticket gives 12 months of storage where the customer asked for 6"},
    {"input": 1, "mode": "m2", "kind": "lossy_parsing", "root": ("parse_ticket", 1),
     "description": "the ticket parser keeps only the garments whose length it can read as a whole number, dropping the sable hat"},
    {"input": 2, "mode": "m3", "kind": "unit_error", "root": ("climate_reading", 2),
     "description": "the climate gateway's reading for the vault is passed on in Fahrenheit as if it were Celsius"},
    {"input": 3, "mode": "m4", "kind": "bad_memory_write", "root": ("assign_vault", 2),
     "description": "the second garment's slot is written under the first garment's key, so the fox coat loses its slot"},
    {"input": 4, "mode": "m5", "kind": "swallowed_error", "root": ("vault_lookup", 3),
     "description": "the vault catalogue lookup for the fox hat times out and the lookup returns an empty list instead of raising"},
]

VAULTS = {
    "mink": [{"vault": "V-2", "temp_c": 4.0, "rh": 50}],
    "fox": [{"vault": "V-3", "temp_c": 5.0, "rh": 48}],
    "sable": [{"vault": "V-1", "temp_c": 3.0, "rh": 52}],
    "beaver": [{"vault": "V-4", "temp_c": 6.0, "rh": 50}],
    "chinchilla": [{"vault": "V-1", "temp_c": 3.0, "rh": 45}],
}
RATE = {"mink": 14.0, "fox": 11.0, "sable": 16.0, "beaver": 9.5, "chinchilla": 18.0}


def policy(request):
    msgs = request.body["messages"]
    prompt = msgs[-1]["content"]
    inp = next(i for i in INPUTS if i["ticket"] in prompt)
    if prompt.startswith("Read this storage ticket"):
        months = inp["months"]
        if MODE == "m1":
            months = 12
        items = [{"item": g, "fur": f, "length": (f"{n} cm" if (inp["ticket"] == "T-302" and g == "sable hat") else n)}
                 for g, f, n in inp["garments"]]
        return json.dumps({"ticket": inp["ticket"], "months": months, "items": items})
    return f"Dear {inp['customer']}, your furs for ticket {inp['ticket']} are stored in our cold vaults. Storage fee as quoted."


def build(client, model):
    gateway_calls = {"n": 0}

    @trajdebug.step(kind="input")
    def receive_request(ticket: dict) -> dict:
        return ticket

    @trajdebug.step(kind="llm")
    def read_ticket(messages: list) -> str:
        r = client.chat.completions.create(model=model, messages=messages)
        return r.choices[0].message.content

    @trajdebug.step(kind="parse")
    def parse_ticket(text: str) -> dict:
        data = json.loads(text)
        items = []
        for it in data["items"]:
            length = it["length"]
            if isinstance(length, str):
                if MODE == "m2":
                    continue
                length = int(length.split()[0])
            items.append({"item": it["item"], "fur": it["fur"], "length_cm": length})
        return {"ticket": data["ticket"], "months": data["months"], "items": items}

    @trajdebug.step(kind="tool")
    def load_customer(ticket_id: str) -> dict:
        inp = next(i for i in INPUTS if i["ticket"] == ticket_id)
        return {"ticket": ticket_id, "customer": inp["customer"], "account": "A-" + ticket_id[2:], "insured": True}

    @trajdebug.step(kind="state")
    def remember_customer(customer: dict) -> None:
        trajdebug.current_run().state["customer"] = customer

    @trajdebug.step(kind="retrieval")
    def vault_lookup(fur: str, length_cm: int) -> list:
        try:
            if MODE == "m5" and fur == "fox" and length_cm < 30:
                raise TimeoutError("catalogue service did not answer in 2.0 s")
            return [dict(v, max_length_cm=130) for v in VAULTS[fur]]
        except TimeoutError:
            return []

    @trajdebug.retry(attempts=2, on=(ConnectionError,))
    @trajdebug.step(kind="tool")
    def climate_reading(vault: str) -> dict:
        gateway_calls["n"] += 1
        if gateway_calls["n"] == 1:
            raise ConnectionError("climate gateway reset the connection")
        base = {"V-1": 3.1, "V-2": 4.2, "V-3": 5.0, "V-4": 6.1, "overflow": 17.5}[vault]
        if MODE == "m3":
            return {"vault": vault, "temp": round(base * 9 / 5 + 32, 1), "unit": "C"}
        return {"vault": vault, "temp": base, "unit": "C"}

    @trajdebug.step(kind="state")
    def assign_vault(index: int, item: str, option: dict, reading: dict) -> dict:
        st = trajdebug.current_run().state
        key = f"slot:{index - 1 if (MODE == 'm4' and index == 1) else index}"
        slot = {"item": item, "vault": option["vault"], "temp_c": reading["temp"], "rh": option.get("rh")}
        st[key] = slot
        return slot

    @trajdebug.step(kind="other")
    def price_storage(items: list, months: int) -> dict:
        lines = [{"item": it["item"], "fee": round(RATE[it["fur"]] * months, 2)} for it in items]
        return {"lines": lines, "total": round(sum(x["fee"] for x in lines), 2), "months": months}

    @trajdebug.step(kind="llm")
    def draft_letter(messages: list) -> str:
        r = client.chat.completions.create(model=model, messages=messages)
        return r.choices[0].message.content

    @trajdebug.step(kind="condition")
    def check_storage_order(request: dict, quote: dict, count: int) -> str:
        st = trajdebug.current_run().state
        if quote["months"] != request["months"]:
            raise ValueError(f"quote covers {quote['months']} months, customer asked for {request['months']}")
        if len(quote["lines"]) != len(request["garments"]):
            raise ValueError(f"quote lists {len(quote['lines'])} garments, ticket {request['ticket']} has {len(request['garments'])}")
        for i in range(count):
            slot = st.get(f"slot:{i}")
            if slot is None:
                raise KeyError(f"no vault slot recorded for garment {i + 1} of ticket {request['ticket']}")
            if slot["rh"] is None or not (1.0 <= slot["temp_c"] <= 10.0):
                raise ValueError(f"{slot['item']} in {slot['vault']} at {slot['temp_c']} C, rh {slot['rh']}: outside fur storage range")
        return "approved"

    def agent(inp):
        req = receive_request({"ticket": inp["ticket"], "customer": inp["customer"], "text": inp["text"]})
        text = read_ticket([{"role": "system", "content": "You read fur storage tickets into JSON."},
                            {"role": "user", "content": f"Read this storage ticket {req['ticket']}: {req['text']}"}])
        parsed = parse_ticket(text)
        remember_customer(load_customer(parsed["ticket"]))
        for i, it in enumerate(parsed["items"]):
            options = vault_lookup(it["fur"], it["length_cm"])
            option = options[0] if options else {"vault": "overflow", "rh": None}
            reading = climate_reading(option["vault"])
            assign_vault(i, it["item"], option, reading)
        quote = price_storage(parsed["items"], parsed["months"])
        draft_letter([{"role": "user", "content": f"Write the storage confirmation for ticket {parsed['ticket']}: {json.dumps(quote)}"}])
        check_storage_order(inp, quote, len(parsed["items"]))

    return agent


def run(inp, server, path):
    from openai import OpenAI
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    agent = build(client, server.model)
    with trajdebug.run(NAME, task=f"storage ticket {inp['ticket']}", path=path):
        agent(inp)
