"""Tool-calling conversation diagnosers: each rule on small hand-made chat logs, and on the real tau-bench failures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trajdebug.analysis._pipeline import analyze
from trajdebug.analysis.diagnosers._chat_rules import CONVERSATION_DIAGNOSERS, plan_mismatch
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.analysis.diagnosers._conversation import conversation, is_write
from trajdebug.core.model import Run, Step
from trajdebug.sources.formats.messages import messages_to_run


def _u(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _a(text: str | None = None, *calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        msg["tool_calls"] = [
            {"id": f"call_{name}_{abs(hash(json.dumps(args))) % 10_000}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for name, args in calls
        ]  # fmt: skip
    return msg


def _chat(*msgs: dict[str, Any], results: dict[int, Any] | None = None) -> Run:
    """A message log; ``results`` maps the index of an assistant message to its tool results (in call order)."""
    out: list[dict[str, Any]] = []
    for i, m in enumerate(msgs):
        out.append(m)
        for call, res in zip(m.get("tool_calls", []), (results or {}).get(i, [])):
            text = res if isinstance(res, str) else json.dumps(res)
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "name": call["function"]["name"],
                    "content": text,
                }
            )
    run, problems = messages_to_run(out, run_id="chat", outcome="failure")
    assert not problems
    return run


RULES = {**CONVERSATION_DIAGNOSERS, "plan-mismatch": plan_mismatch}


def _evidence(run: Run, index: int, diagnoser: str) -> list[Evidence]:
    """The evidence a diagnoser finds on the step imported from message ``index``."""
    step = next(s for s in run.steps if s.source_index == index)
    ctx = DiagnoseContext.build(run, diagnosers={diagnoser: RULES[diagnoser]})
    return [e for e in RULES[diagnoser](step, ctx) if not e.sound]


VARIANTS = {
    "name": "T-Shirt",
    "variants": {
        "111": {"item_id": "111", "options": {"color": "red"}, "available": True, "price": 20.5},
        "222": {"item_id": "222", "options": {"color": "blue"}, "available": True, "price": 18.25},
        "333": {"item_id": "333", "options": {"color": "green"}, "available": False, "price": 9.99},
    },
}


class TestStatedCounts:
    def _run(self, answer: str) -> Run:
        return _chat(
            _u("How many shirts of product 900 can I buy?"),
            _a(None, ("get_product_details", {"product_id": "900"})),
            _a(answer),
            results={1: [VARIANTS]},
        )

    def test_count_contradicting_the_result_is_suspect(self) -> None:
        """A count of available options that matches neither the records nor those flagged available is suspect."""
        run = self._run("There are 3 available T-shirt options right now.")
        [e] = _evidence(run, 3, "stated-counts")
        assert e.suspicion >= 0.5
        assert "3 available" in e.reason

    def test_count_matching_the_result_is_not(self) -> None:
        """A count equal to the records flagged available raises nothing."""
        assert (
            _evidence(self._run("There are 2 available T-shirt options right now."), 3, "stated-counts") == []
        )

    def test_wrong_cheapest_price_is_suspect(self) -> None:
        """Calling a price the cheapest when a cheaper available record is listed is suspect."""
        [e] = _evidence(self._run("The cheapest shirt is $20.50."), 3, "stated-counts")
        assert "$18.25" in e.reason

    def test_right_cheapest_price_is_not(self) -> None:
        """The cheapest available price (unavailable records left out) raises nothing."""
        assert _evidence(self._run("The cheapest shirt is $18.25."), 3, "stated-counts") == []


ORDER = {"order_id": "#W1", "status": "pending", "items": [{"item_id": "111", "name": "T-Shirt"}]}
LOCKED = "Error: non-pending order cannot be modified"


class TestFailedCalls:
    def test_write_that_blocks_a_call_planned_with_it_is_misordered(self) -> None:
        """A write that makes the next planned call on the same object fail (no user turn between) is the deviation; the failing call its consequence."""
        run = _chat(
            _u("Swap my shirt to blue and fix the address of order #W1, yes please."),
            _a(
                None,
                (
                    "modify_pending_order_items",
                    {"order_id": "#W1", "item_ids": ["111"], "new_item_ids": ["222"]},
                ),
            ),
            _a(None, ("modify_pending_order_address", {"order_id": "#W1", "city": "Austin"})),
            results={1: [ORDER], 2: [LOCKED]},
        )
        [first] = _evidence(run, 1, "failed-calls")
        assert first.suspicion >= 0.5
        assert "misordered" in first.reason
        [later] = _evidence(run, 3, "failed-calls")
        assert "consequence of its earlier modify_pending_order_items" in later.reason
        assert later.suspicion < first.suspicion

    def test_after_a_new_request_the_failing_call_is_the_invalid_one(self) -> None:
        """When the user asked for the later call only after the write, the write is not blamed for it."""
        run = _chat(
            _u("Swap my shirt to blue, yes."),
            _a(
                None,
                (
                    "modify_pending_order_items",
                    {"order_id": "#W1", "item_ids": ["111"], "new_item_ids": ["222"]},
                ),
            ),
            _a("Done."),
            _u("Also change the address of #W1."),
            _a(None, ("modify_pending_order_address", {"order_id": "#W1", "city": "Austin"})),
            results={1: [ORDER], 4: [LOCKED]},
        )
        assert _evidence(run, 1, "failed-calls") == []
        [e] = _evidence(run, 5, "failed-calls")
        assert e.suspicion >= 0.5

    def test_lookup_of_a_value_the_user_gave_is_barely_suspect(self) -> None:
        """A lookup that fails on the value the user typed says little about the agent."""
        run = _chat(
            _u("My email is ana7@example.com"),
            _a(None, ("find_user_id_by_email", {"email": "ana7@example.com"})),
            results={1: ["Error: user not found"]},
        )
        [e] = _evidence(run, 1, "failed-calls")
        assert e.suspicion < 0.3


class TestConfirmation:
    def _run(self, reply: str) -> Run:
        return _chat(
            _u("Cancel order #W1."),
            _a("Order #W1 is pending. Shall I cancel it for 'no longer needed'?"),
            _u(reply),
            _a(None, ("cancel_pending_order", {"order_id": "#W1", "reason": "no longer needed"})),
            results={3: [ORDER]},
        )

    def test_write_after_an_explicit_yes_is_sound(self) -> None:
        """A consequential call right after the user's yes to the proposal is sound."""
        assert _evidence(self._run("Yes, please go ahead."), 3, "unconfirmed-writes") == []

    def test_write_without_a_yes_is_suspect(self) -> None:
        """A consequential call after a reply that confirms nothing is suspect."""
        [e] = _evidence(self._run("Hmm, what would the refund be?"), 3, "unconfirmed-writes")
        assert "cancel_pending_order" in e.reason


class TestAbandonedRequests:
    def test_hand_off_after_a_confirmed_action_never_done(self) -> None:
        """Handing off after the user confirmed an action that no call carried out is suspect."""
        run = _chat(
            _u("Return my shirt."),
            _a("I can return the shirt for a refund of $20.50. Proceed?"),
            _u("Yes, please proceed with the return."),
            _a("Refunds take 5-7 days."),
            _u("Can it be faster?"),
            _a(None, ("transfer_to_human_agents", {"summary": "wants a faster refund"})),
            results={5: ["Transfer successful"]},
        )
        [e] = _evidence(run, 5, "abandoned-requests")
        assert e.suspicion >= 0.5

    def test_hand_off_the_user_asked_for_after_the_work_was_done(self) -> None:
        """A hand-off after the confirmed action was carried out, which the user asked for, is not suspect."""
        run = _chat(
            _u("Return my shirt."),
            _a("Proceed with the return?"),
            _u("Yes."),
            _a(None, ("return_delivered_order_items", {"order_id": "#W1", "item_ids": ["111"]})),
            _u("Yes, transfer me to a human agent please."),
            _a(None, ("transfer_to_human_agents", {"summary": "wants a human"})),
            results={3: [ORDER], 5: ["Transfer successful"]},
        )
        assert _evidence(run, 6, "abandoned-requests") == []


class TestRefusals:
    def test_refusal_without_consulting_a_tool(self) -> None:
        """Declaring an inability without any tool result since the request is suspect."""
        run = _chat(
            _u("Find me order #W1."),
            _a(None, ("get_order_details", {"order_id": "#W1"})),
            _a("Here it is."),
            _u("Can you use its address as my new address?"),
            _a("Unfortunately, I can't read addresses from orders."),
            results={1: [ORDER]},
        )
        [e] = _evidence(run, 5, "unverified-refusals")
        assert "without consulting a tool" in e.reason

    def test_refusal_after_a_tool_result_is_not(self) -> None:
        """An inability stated after reading a tool result is grounded in it."""
        run = _chat(
            _u("Cancel order #W1."),
            _a(None, ("get_order_details", {"order_id": "#W1"})),
            _a("I can't cancel it: it was delivered."),
            results={1: [{**ORDER, "status": "delivered"}]},
        )
        assert _evidence(run, 3, "unverified-refusals") == []


USER = {
    "user_id": "ana_1",
    "payment_methods": {
        "credit_card_1": {"brand": "visa", "last_four": "1111", "id": "credit_card_1"},
        "credit_card_2": {"brand": "mastercard", "last_four": "2222", "id": "credit_card_2"},
    },
}


class TestPlanMismatch:
    def _run(self, card: str) -> Run:
        return _chat(
            _u("Cancel #W1 and refund it."),
            _a(None, ("get_user_details", {"user_id": "ana_1"})),
            _a("I will refund your mastercard ending in 2222. Proceed?"),
            _u("Yes."),
            _a(None, ("refund_order", {"order_id": "#W1", "payment_method_id": card})),
            results={1: [USER], 4: [ORDER]},
        )

    def test_call_on_another_record_than_announced(self) -> None:
        """A write using the card the plan did not name, while the plan named another card's digits, is suspect."""
        [e] = _evidence(self._run("credit_card_1"), 5, "plan-mismatch")
        assert "credit_card_1" in e.reason

    def test_call_on_the_announced_record(self) -> None:
        """A write using the announced card raises nothing."""
        assert _evidence(self._run("credit_card_2"), 5, "plan-mismatch") == []


class TestCompletionClaims:
    def _run(self, orders: list[str]) -> Run:
        calls = [("modify_pending_order_address", {"order_id": o, "city": "Austin"}) for o in orders]
        return _chat(
            _u("Update the address of all my pending orders, yes."),
            _a(None, ("get_order_details", {"order_id": "#W1"}), ("get_order_details", {"order_id": "#W2"})),
            _a(None, *calls),
            _a("All your orders have been updated."),
            results={1: [ORDER, {**ORDER, "order_id": "#W2"}], 2: [ORDER] * len(orders)},
        )

    def test_claim_while_a_like_object_was_left_untouched(self) -> None:
        """Saying all is done while a pending order it read got no call is suspect."""
        run = self._run(["#W1"])
        index = max(s.source_index or 0 for s in run.steps)
        [e] = _evidence(run, index, "completion-claims")
        assert "#W2" in e.reason

    def test_claim_when_every_like_object_was_changed(self) -> None:
        """Saying all is done after changing every pending order read raises nothing."""
        run = self._run(["#W1", "#W2"])
        index = max(s.source_index or 0 for s in run.steps)
        assert _evidence(run, index, "completion-claims") == []


class TestUserDecisions:
    def test_pick_among_offered_options_that_the_agent_acted_on(self) -> None:
        """A user's pick among several listed options, acted on by a write, makes the user's turn a weak candidate."""
        run = _chat(
            _u("Change my shirt."),
            _a("Options:\n1. red $20.50\n2. blue $18.25"),
            _u("The blue one."),
            _a(
                None,
                (
                    "modify_pending_order_items",
                    {"order_id": "#W1", "item_ids": ["111"], "new_item_ids": ["222"]},
                ),
            ),
            results={3: [ORDER]},
        )
        [e] = _evidence(run, 2, "user-decisions")
        assert e.suspicion <= 0.3

    def test_plain_yes_is_not_a_decision(self) -> None:
        """A bare confirmation does not decide anything new."""
        run = _chat(
            _u("Change my shirt."),
            _a("Options:\n1. red $20.50\n2. blue $18.25"),
            _u("Yes please."),
            _a(
                None,
                (
                    "modify_pending_order_items",
                    {"order_id": "#W1", "item_ids": ["111"], "new_item_ids": ["222"]},
                ),
            ),
            results={3: [ORDER]},
        )
        assert _evidence(run, 2, "user-decisions") == []

    def test_withdrawn_request(self) -> None:
        """A user taking a request back ("actually, leave it") is a weak candidate."""
        run = _chat(_u("Cancel #W1."), _a("Shall I cancel #W1?"), _u("Actually, leave it for now."))
        [e] = _evidence(run, 2, "user-decisions")
        assert "withdraws" in e.reason


class TestScope:
    def test_runs_without_a_user_get_no_conversation_evidence(self) -> None:
        """A recorded pipeline (no chat roles) is not a conversation: the rules stay silent."""
        run = Run(
            "r",
            "pipeline",
            steps=(
                Step("a", "fetch", kind="tool", output={"variants": VARIANTS["variants"]}),
                Step("b", "answer", kind="llm", output="There are 7 available options."),
            ),
        )
        assert not conversation(run).is_chat
        ctx = DiagnoseContext.build(run, diagnosers=RULES)
        assert all(list(fn(s, ctx)) == [] for fn in RULES.values() for s in run.steps)

    def test_write_tools_by_name_and_by_declared_schema(self) -> None:
        """Read verbs read, write verbs write, and a declared read-only hint wins over the name."""
        assert not is_write("get_order_details")
        assert not is_write("list_all_product_types")
        assert is_write("cancel_pending_order")
        assert is_write("exchange_delivered_order_items")
        run = Run(
            "r", "x", metadata={"tools": [{"name": "cancel_preview", "annotations": {"readOnlyHint": True}}]}
        )
        assert not is_write("cancel_preview", run)

    def test_analysis_ranks_the_misread_count_first(self) -> None:
        """End to end: in a failed chat whose agent misreports a count, that assistant turn is ranked first."""
        run = _chat(
            _u("How many shirts of product 900 can I buy?"),
            _a(None, ("get_product_details", {"product_id": "900"})),
            _a("There are 3 available T-shirt options right now."),
            _u("Thanks, bye."),
            results={1: [VARIANTS]},
        )
        top = analyze(run, outcome="failure").root_causes[0]
        assert run.step(top.step_id).source_index == 3
        assert any("3 available" in r for r in top.reasons)


class TestTauBench:
    def test_real_failures_rank_the_annotated_root_in_the_top_three(self, tau_dir: Path) -> None:
        """All 29 real failed tau-bench conversations analyze, and the annotated root is in the top 3 in at least 14."""
        from trajdebug.sources.formats import import_path

        truth = json.loads((tau_dir / "tau_ground_truth.json").read_text())
        runs = {r.run_id: r for r in import_path(tau_dir / "tau_dataset_failed.json", "openai").runs}
        top3 = 0
        for g in truth:
            run = runs[f"tau-{g['trajectory_id']}"]
            by_id = {f["failure_id"]: f for f in g["failures"]}
            root = by_id[g["root_cause"]["failure_id"]]["step_number"] - 1
            ranked = [run.step(c.step_id).source_index for c in analyze(run, outcome="failure").root_causes]
            top3 += root in ranked[:3]
        assert len(truth) == 29
        assert top3 >= 14  # measured 16 of 29; a small margin for harmless ranking drift
