"""nutrition-coach: a chat coach that logs what the client ate during the day (a meal log kept across the
client's turns), answers calorie questions, and suggests a dinner that fits the rest of the day's energy
budget and the client's allergies, checked by a safety guardrail before it is sent.  The `openai` client
is instrumented with OpenInference; tools, parsing and checks are OTel spans; exported as OTLP JSON."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from typing import Any

from openai import OpenAI
from otel_route import Telemetry
from suite_common import FAULT, Agent, Case, Loc, messages_of, system_text

from trajdebug.testing import FakeModelServer


NAME = "nutrition-coach"
MODEL = "gpt-4o-mini-2024-07-18"

FOODS = {  # kcal per 100 g, household measures in grams
    "granola": {"kcal_100g": 471, "cup": 110, "allergens": ["gluten", "tree nuts"]},
    "oats": {"kcal_100g": 379, "cup": 80, "allergens": ["gluten"]},
    "greek yogurt": {"kcal_100g": 59, "cup": 245, "allergens": ["dairy"]},
    "milk": {"kcal_100g": 42, "cup": 244, "allergens": ["dairy"]},
    "banana": {"kcal_100g": 89, "piece": 118, "allergens": []},
    "apple": {"kcal_100g": 52, "piece": 182, "allergens": []},
    "avocado": {"kcal_100g": 160, "piece": 150, "allergens": []},
    "egg": {"kcal_100g": 143, "piece": 50, "allergens": ["egg"]},
    "whole wheat bread": {"kcal_100g": 247, "slice": 32, "allergens": ["gluten"]},
    "tuna": {"kcal_100g": 116, "allergens": ["fish"]},
    "spinach": {"kcal_100g": 23, "cup": 30, "allergens": []},
    "blueberries": {"kcal_100g": 57, "cup": 148, "allergens": []},
    "almonds": {"kcal_100g": 579, "cup": 143, "allergens": ["tree nuts"]},
    "chicken breast": {"kcal_100g": 165, "allergens": []},
    "brown rice": {"kcal_100g": 123, "cup": 195, "allergens": []},
    "pasta": {"kcal_100g": 158, "cup": 140, "allergens": ["gluten"]},
    "hummus": {"kcal_100g": 166, "tbsp": 15, "allergens": ["sesame"]},
    "peanut butter": {"kcal_100g": 588, "tbsp": 16, "allergens": ["peanut"]},
}

RECIPES = [
    {"recipe_id": "R-01", "name": "Garlic shrimp quinoa bowl", "kcal": 610, "protein_g": 55, "allergens": ["shellfish"]},
    {"recipe_id": "R-02", "name": "Lemon chicken with roasted vegetables", "kcal": 540, "protein_g": 46, "allergens": []},
    {"recipe_id": "R-03", "name": "Red lentil dal with rice", "kcal": 580, "protein_g": 24, "allergens": []},
    {"recipe_id": "R-04", "name": "Salmon, sweet potato and greens", "kcal": 690, "protein_g": 41, "allergens": ["fish"]},
    {"recipe_id": "R-05", "name": "Tofu and broccoli stir-fry", "kcal": 450, "protein_g": 28, "allergens": ["soy"]},
    {"recipe_id": "R-06", "name": "Turkey chili", "kcal": 520, "protein_g": 39, "allergens": []},
    {"recipe_id": "R-07", "name": "Chickpea and feta salad", "kcal": 420, "protein_g": 18, "allergens": ["dairy"]},
    {"recipe_id": "R-08", "name": "Miso soup with tofu", "kcal": 140, "protein_g": 9, "allergens": ["soy"]},
    {"recipe_id": "R-10", "name": "Beef burrito bowl", "kcal": 860, "protein_g": 52, "allergens": []},
    {"recipe_id": "R-11", "name": "Vegetable omelette with toast", "kcal": 360, "protein_g": 22, "allergens": ["egg", "gluten"]},
    {"recipe_id": "R-12", "name": "Steak frites", "kcal": 1150, "protein_g": 58, "allergens": []},
    {"recipe_id": "R-13", "name": "Shrimp pad thai", "kcal": 780, "protein_g": 34, "allergens": ["shellfish", "peanut"]},
    {"recipe_id": "R-15", "name": "Clear vegetable broth", "kcal": 90, "protein_g": 3, "allergens": []},
    {"recipe_id": "R-16", "name": "Side salad with vinaigrette", "kcal": 150, "protein_g": 2, "allergens": []},
]

PROFILES = {
    "CL-301": {"name": "Erin", "target_kcal": 1800, "allergies": ["shellfish"]},
    "CL-302": {"name": "Tomasz", "target_kcal": 2200, "allergies": ["peanut"]},
    "CL-303": {"name": "Aiko", "target_kcal": 1800, "allergies": ["soy"]},
    "CL-304": {"name": "Farah", "target_kcal": 1900, "allergies": ["shellfish", "peanut"]},
    "CL-305": {"name": "Ben", "target_kcal": 2600, "allergies": ["fish"]},
}

MEAL_LOG: dict[tuple[str, str], list[dict[str, Any]]] = {}
_OUTBOX: dict[str, list[dict[str, Any]]] = {}


class GuardrailTripped(RuntimeError):
    pass


# -- the fake model server's brain --------------------------------------------------------------

_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}
_UNITS = {"g": "g", "oz": "oz", "cup": "cup", "cups": "cup", "slice": "slice", "slices": "slice", "tbsp": "tbsp"}


def _items(text: str) -> list[dict[str, Any]]:
    out = []
    for part in re.split(r",\s*|\s+and\s+|\s+with\s+", text.strip().rstrip(".")):
        m = re.match(r"(a|an|one|two|three|\d+(?:\.\d+)?)\s+(?:(g|oz|cups?|slices?|tbsp)\s+(?:of\s+)?)?(.+)", part.strip())
        if not m:
            continue
        qty = _WORDS.get(m.group(1)) or float(m.group(1))
        food = m.group(3).strip()
        food = {"eggs": "egg", "bananas": "banana", "apples": "apple"}.get(food, food)
        out.append({"food": food, "qty": qty, "unit": _UNITS.get(m.group(2) or "", "piece")})
    return out


def brain(request: Any) -> str:
    msgs = messages_of(request)
    system = system_text(msgs)
    user = msgs[-1]["content"]
    if "Classify" in system:
        low = user.lower()
        meal = re.match(r"(breakfast|lunch|snack|dinner)\s*:\s*(.+)", user, re.I)
        if meal:
            return json.dumps({"kind": "meal", "meal": meal.group(1).lower(), "items": _items(meal.group(2))})
        burned = re.search(r"(?:burned|about)\s+(?:about\s+)?([\d,]+)\s*kcal", low)
        if burned:
            when = "yesterday" if "yesterday" in low else "today"
            return json.dumps({"kind": "activity", "kcal": int(burned.group(1).replace(",", "")), "when": when})
        q = re.search(r"how many calories (?:are )?in (.+?)\?", low)
        if q:
            return json.dumps({"kind": "question", "items": _items(q.group(1))})
        if "dinner" in low:
            return json.dumps({"kind": "dinner_request"})
        return json.dumps({"kind": "chat"})
    if "Pick one dinner" in system:
        cands = json.loads(user.split("Candidates:", 1)[1])
        ok = [c for c in cands if c["kcal"] >= 300] or cands
        if not ok:
            return json.dumps({"recipe_id": None, "name": None, "kcal": 0,
                               "note": "You have already covered today's energy needs."})
        c = ok[0]
        return json.dumps({"recipe_id": c["recipe_id"], "name": c["name"], "kcal": c["kcal"],
                           "why": f"most protein ({c['protein_g']} g) within the limit"})
    if "answer the client's calorie question" in system:
        total = re.search(r"Total:\s*([\d.]+)", user).group(1)
        return f"That comes to about {float(total):.0f} kcal."
    if "coach's reply" in system:
        s = json.loads(user.split("Suggestion:", 1)[1])
        return f"For dinner tonight, how about the {s['name']}? It's about {s['kcal']} kcal and keeps you on track."
    return "Noted!"


# -- the agent ----------------------------------------------------------------------------------


def build(tel: Telemetry, client: OpenAI):
    @tel.tool
    def lookup_food(food: str) -> dict[str, Any]:
        return {"food": food, **FOODS[food]}

    @tel.chain
    def portion_to_grams(item: dict[str, Any], food: dict[str, Any]) -> dict[str, Any]:
        unit, qty = item["unit"], item["qty"]
        if unit == "g":
            grams = qty
        elif unit == "oz":
            grams = qty * 28.35
        elif unit == "cup" and FAULT.on("cup_240"):
            grams = qty * 240  # a cup is 240 ml; treated as 240 g whatever the food
        else:
            grams = qty * food[unit]
        return {"food": item["food"], "grams": round(grams, 1), "kcal": round(grams * food["kcal_100g"] / 100, 1),
                "allergens": food["allergens"]}

    @tel.tool
    def log_meal(client_id: str, date: str, meal: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
        batch = [{**e, "meal": meal} for e in entries]
        if FAULT.on("outbox_resend"):
            outbox = _OUTBOX.setdefault(client_id, [])
            outbox.extend(batch)
            batch = list(outbox)  # everything not yet acknowledged... but the outbox is never emptied
        MEAL_LOG.setdefault((client_id, date), []).extend(batch)
        return {"written": len(batch), "meal": meal, "date": date}

    @tel.tool
    def load_day_log(client_id: str, date: str) -> dict[str, Any]:
        entries = [dict(e) for e in MEAL_LOG.get((client_id, date), [])]
        return {"date": date, "entries": entries, "total_kcal": round(sum(e["kcal"] for e in entries), 1)}

    @tel.tool
    def get_profile(client_id: str) -> dict[str, Any]:
        return {"client_id": client_id, **PROFILES[client_id]}

    @tel.chain
    def build_context(profile: dict[str, Any], day_log: dict[str, Any], activities: list[dict[str, Any]]) -> dict[str, Any]:
        counted = activities if FAULT.on("all_activities") else [a for a in activities if a["when"] == "today"]
        credit = sum(a["kcal"] for a in counted)
        remaining = profile["target_kcal"] + credit - day_log["total_kcal"]
        return {"eaten_kcal": day_log["total_kcal"], "activity_credit": credit,
                "remaining_kcal": round(remaining, 1), "max_meal_kcal": round(min(900, max(remaining, 0)), 1),
                "exclude_allergens": list(profile["allergies"])}

    @tel.tool
    def search_recipes(max_kcal: float, exclude_allergens: list[str]) -> list[dict[str, Any]]:
        found = [r for r in RECIPES if r["kcal"] <= max_kcal]
        if not FAULT.on("ignore_exclusions"):
            found = [r for r in found if not set(r["allergens"]) & set(exclude_allergens)]
        found.sort(key=lambda r: -r["protein_g"])
        return [dict(r) for r in found[:5]]

    @tel.chain
    def parse_suggestion(raw: str) -> dict[str, Any]:
        data = json.loads(raw)
        return {"recipe_id": data.get("recipe_id"), "name": data.get("name"), "kcal": float(data.get("kcal") or 0)}

    @tel.chain
    def safety_check(suggestion: dict[str, Any], profile: dict[str, Any], day_log: dict[str, Any],
                     activities: list[dict[str, Any]]) -> dict[str, Any]:
        recipe = next((r for r in RECIPES if r["recipe_id"] == suggestion["recipe_id"]), None)
        if recipe and set(recipe["allergens"]) & set(profile["allergies"]):
            raise GuardrailTripped("Safety guardrail: the suggested dinner contains something on the client's avoid list")
        if not 300 <= suggestion["kcal"] <= 900:
            raise GuardrailTripped("Coaching guardrail: the suggestion is not an adequate dinner (300-900 kcal)")
        today = sum(a["kcal"] for a in activities if a["when"] == "today")
        if day_log["total_kcal"] + suggestion["kcal"] > 1.10 * (profile["target_kcal"] + today):
            raise GuardrailTripped("Coaching guardrail: the day would end far above the client's energy target")
        return {"passed": ["allergens", "meal size", "daily total"]}

    def chat(system: str, user: str) -> str:
        r = client.chat.completions.create(model=MODEL, temperature=0.2, messages=[
            {"role": "system", "content": system}, {"role": "user", "content": user}])
        return r.choices[0].message.content

    classify_prompt = ("Classify the client's message as meal, activity, question, dinner_request or chat. For "
                       "meals and questions list each food with qty and unit (g, oz, cup, slice, tbsp, piece). JSON.")

    def session_run(client_id: str, date: str, turns: list[str]) -> None:
        MEAL_LOG.pop((client_id, date), None)
        _OUTBOX.pop(client_id, None)
        with tel.span(NAME, "AGENT", input={"client": client_id, "date": date, "messages": turns},
                      agent__name=NAME, session__id=f"{client_id}/{date}") as root:
            activities: list[dict[str, Any]] = []
            reply = None
            for turn in turns:
                parsed = json.loads(chat(classify_prompt, turn))
                if parsed["kind"] == "meal":
                    entries = [portion_to_grams(item=it, food=lookup_food(food=it["food"])) for it in parsed["items"]]
                    log_meal(client_id=client_id, date=date, meal=parsed["meal"], entries=entries)
                elif parsed["kind"] == "activity":
                    activities.append({"kcal": parsed["kcal"], "when": parsed["when"]})
                elif parsed["kind"] == "question":
                    entries = [portion_to_grams(item=it, food=lookup_food(food=it["food"])) for it in parsed["items"]]
                    chat("You answer the client's calorie question in one sentence.",
                         f"Question: {turn}\nEntries: {json.dumps(entries)}\nTotal: {sum(e['kcal'] for e in entries)}")
                elif parsed["kind"] == "dinner_request":
                    profile = get_profile(client_id=client_id)
                    day_log = load_day_log(client_id=client_id, date=date)
                    ctx = build_context(profile=profile, day_log=day_log, activities=activities)
                    candidates = search_recipes(max_kcal=ctx["max_meal_kcal"], exclude_allergens=ctx["exclude_allergens"])
                    raw = chat("You are a nutrition coach. Pick one dinner from the candidates: the one with the most "
                               "protein between 300 kcal and the limit. Answer as JSON.",
                               f"Context: {json.dumps(ctx)}\nCandidates: {json.dumps(candidates)}")
                    suggestion = parse_suggestion(raw=raw)
                    safety_check(suggestion=suggestion, profile=profile, day_log=day_log, activities=activities)
                    reply = chat("Write the coach's reply to the client, warm and brief.",
                                 f"Suggestion: {json.dumps(suggestion)}")
            root.output(reply)

    return session_run


@contextmanager
def session():
    with FakeModelServer(brain, model=MODEL) as server, Telemetry(NAME) as tel:
        client = OpenAI(base_url=server.base_url, api_key="sk-fake-not-used", max_retries=0)
        run = build(tel, client)

        def record(inp: dict[str, Any], path: str) -> BaseException | None:
            return tel.record(lambda: run(inp["client"], inp["date"], inp["turns"]), path, (GuardrailTripped,))

        yield record


AGENT = Agent(
    name=NAME,
    route="otlp",
    domain="nutrition coaching",
    summary="classify each client message (meal, activity, question, dinner request), look foods up, convert "
    "portions, log meals in a day log kept across turns; for dinner: profile, day log, context, recipe search, "
    "a model picks, parse, safety guardrail, a model writes the reply",
    features=["memory across turns", "loop over food items"],
    passing=[
        {"client": "CL-305", "date": "2025-04-07", "turns": [
            "Breakfast: 4 eggs and 2 slices of whole wheat bread.",
            "Lunch: 250 g chicken breast and 1 cup of pasta.",
            "What should I make for dinner?"]},
        {"client": "CL-301", "date": "2025-04-07", "turns": [
            "Breakfast: 1 cup of greek yogurt with 1 cup of blueberries.",
            "Lunch: 1 avocado, 2 slices of whole wheat bread and 2 eggs.",
            "Any dinner ideas for tonight?"]},
        {"client": "CL-304", "date": "2025-04-08", "turns": [
            "Breakfast: 1 cup of oats with 1 cup of milk.",
            "Lunch: 3 oz tuna, 1 cup of brown rice and 1 cup of spinach.",
            "Snack: an apple.",
            "What's a good dinner for me today?"]},
        {"client": "CL-302", "date": "2025-04-08", "turns": [
            "How many calories are in 2 tbsp of peanut butter? Asking for my son.",
            "Breakfast: 2 eggs and 1 cup of oats.",
            "Lunch: 200 g chicken breast and 1 cup of pasta.",
            "Dinner suggestion please!"]},
        {"client": "CL-303", "date": "2025-04-09", "turns": [
            "This morning I cycled for an hour, about 500 kcal.",
            "Breakfast: 1 cup of granola with 1 cup of milk.",
            "Lunch: 2 slices of whole wheat bread, 3 oz tuna and an apple.",
            "What should I eat for dinner?"]},
    ],
    session=session,
    cases=[
        Case(
            "d-nutri-cup-grams",
            {"client": "CL-303", "date": "2025-04-10", "turns": [
                "Breakfast: 1 cup of granola with 200 g greek yogurt and a banana.",
                "Lunch: 2 slices of whole wheat bread, 3 oz tuna and 40 g spinach.",
                "What should I have for dinner?"]},
            "cup_240",
            "unit_error",
            "Portion conversion turns '1 cup' into 240 g for every food (a cup of granola weighs about 110 g), "
            "so breakfast is logged at about 1,350 kcal instead of about 740; the day looks nearly used up, only "
            "a 90 kcal broth fits, and the guardrail refuses it as a dinner.",
            [Loc("portion_to_grams", 1, "240"), Loc("log_meal", 1), Loc("load_day_log"), Loc("build_context"),
             Loc("search_recipes"), Loc("ChatCompletion", 4, "R-15"), Loc("parse_suggestion"), Loc("safety_check")],
        ),
        Case(
            "d-nutri-outbox",
            {"client": "CL-302", "date": "2025-04-10", "turns": [
                "Breakfast: 3 eggs, 2 slices of whole wheat bread and 1 cup of blueberries.",
                "Lunch: 200 g chicken breast, 1 cup of brown rice and an apple.",
                "Snack: 1.5 oz almonds.",
                "What do you suggest for dinner?"]},
            "outbox_resend",
            "bad_memory_write",
            "The meal-log writer never empties its outbox, so logging lunch writes breakfast into the day log "
            "again (and the snack both meals); the log is read back as about 2,950 kcal, no dinner fits, and the "
            "guardrail refuses the empty suggestion.",
            [Loc("log_meal", 2, "\"written\": 6"), Loc("load_day_log"), Loc("build_context"), Loc("search_recipes"),
             Loc("ChatCompletion", 5), Loc("parse_suggestion"), Loc("safety_check")],
        ),
        Case(
            "d-nutri-yesterday-run",
            {"client": "CL-301", "date": "2025-04-10", "turns": [
                "Yesterday I ran a half marathon, burned about 1,400 kcal!",
                "Breakfast: 2 eggs, 1 slice of whole wheat bread and 1 cup of greek yogurt.",
                "Lunch: 200 g chicken breast, 1 cup of brown rice and 1 cup of spinach.",
                "Snack: an apple and 1 oz almonds.",
                "Dinner idea?"]},
            "all_activities",
            "context_pollution",
            "Building the dinner context counts every activity mentioned in the conversation, so yesterday's "
            "half-marathon (1,400 kcal) is credited to today; the limit jumps to 900 kcal, the 860 kcal burrito "
            "bowl is picked and the day ends far above target.",
            [Loc("build_context", 1, "1400"), Loc("search_recipes"), Loc("ChatCompletion", 6, "R-10"),
             Loc("parse_suggestion"), Loc("safety_check")],
        ),
        Case(
            "d-nutri-allergen-filter",
            {"client": "CL-304", "date": "2025-04-10", "turns": [
                "Breakfast: 1 cup of oats with 1 cup of milk and a banana.",
                "Lunch: 2 slices of whole wheat bread, 2 tbsp hummus and an apple.",
                "What can I have for dinner?"]},
            "ignore_exclusions",
            "tool_ignores_argument",
            "The recipe search ignores exclude_allergens; the shrimp bowl tops the protein ranking, the model "
            "picks it and the safety guardrail blocks it (the client avoids shellfish).",
            [Loc("search_recipes", 1, "R-01"), Loc("ChatCompletion", 4, "R-01"), Loc("parse_suggestion"),
             Loc("safety_check")],
        ),
    ],
)
