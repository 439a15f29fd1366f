"""Tests of the request diagnosers: a tool or retrieval that did not answer what it was asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trajdebug
from trajdebug.analysis.diagnosers import DiagnoseContext, Evidence, registered_diagnosers
from trajdebug.analysis.diagnosers._request_parts import name_words
from trajdebug.api import analyze_source
from trajdebug.core.model import Run, Step


def _t(sid: str, name: str, kind: str, start: int, **kw: Any) -> Step:
    """A timed step (start..start+1)."""
    return Step(sid, name, kind, start_ns=start, end_ns=start + 1, **kw)  # type: ignore[arg-type]


def _ev(run: Run, step_id: str, diagnoser: str) -> list[Evidence]:
    ctx = DiagnoseContext.build(run, diagnosers=registered_diagnosers())
    return [e for e in ctx.verdict(step_id).evidence if e.diagnoser == diagnoser]


def _run(*steps: Step) -> Run:
    return Run("r", "test", steps=steps)


def test_name_words_split_snake_and_camel_case() -> None:
    """A field's name is read as a set of words, whether written in snake case or camel case."""
    assert name_words("top_k") == {"top", "k"}
    assert name_words("pageSize") == {"page", "size"}
    assert name_words("next_page_token") == {"next", "page", "token"}


class TestCount:
    def _units(self, n: int) -> list[dict[str, Any]]:
        return [{"unit": f"U-{i}", "type": "O+"} for i in range(n)]

    def test_more_items_than_asked_is_flagged(self) -> None:
        """A tool asked for n=2 items that answers with three is suspected (an off-by-one window)."""
        run = _run(
            _t(
                "t",
                "find_units",
                "tool",
                1,
                input={"request": "R-9", "n": 2},
                output={"units": self._units(3)},
            )
        )
        ev = _ev(run, "t", "request-count")
        assert ev and "n=2" in ev[0].reason and "3 items" in ev[0].reason

    def test_as_many_or_fewer_items_than_asked_is_no_tell(self) -> None:
        """Answering with the items asked for, or fewer (a search may find less), raises nothing."""
        for n in (1, 2):
            run = _run(_t("t", "find_units", "tool", 1, input={"limit": 2}, output={"units": self._units(n)}))
            assert _ev(run, "t", "request-count") == []

    def test_a_selector_keeping_fewer_than_asked_of_more_it_was_given_is_flagged(self) -> None:
        """A code step given ten records and count=5 that keeps four of them is short of what it was asked (an
        off-by-one); given only four to choose from, keeping four is all it could."""

        def select(given: int) -> Run:
            units = self._units(given)
            return _run(_t("s", "select_units", "other", 1, input={"units": units, "count": 5}, output=units[:4]))

        ev = _ev(select(10), "s", "request-count")
        assert ev and "count=5" in ev[0].reason and "kept 4" in ev[0].reason
        assert _ev(select(4), "s", "request-count") == []

    def test_a_filter_under_a_cap_keeping_fewer_is_no_slip(self) -> None:
        """``limit=5`` is a cap, and a criterion beside ``count`` may leave fewer: a filter keeping the three of
        six records that pass is doing its job."""
        units = self._units(6)

        def step(args: dict[str, object]) -> Run:
            return _run(_t("s", "filter_units", "other", 1, input={"units": units, **args}, output=units[:3]))

        assert _ev(step({"limit": 5}), "s", "request-count") == []
        assert _ev(step({"max_results": 5}), "s", "request-count") == []
        assert _ev(step({"count": 5, "min_stars": 4}), "s", "request-count") == []
        assert _ev(step({"count": 5}), "s", "request-count") != []

    def test_a_page_number_is_no_count(self) -> None:
        """``page=1`` asks for a page, not for one item: a page of three items is fine."""
        run = _run(_t("t", "list", "tool", 1, input={"page": 1}, output={"units": self._units(3)}))
        assert _ev(run, "t", "request-count") == []


class TestMore:
    def test_a_cursor_nobody_followed_is_flagged(self) -> None:
        """An answer with a next cursor from a tool never called again: the agent acted on the first page."""
        out = {"tradelines": [{"creditor": "A", "monthly": 1}], "next_cursor": "eyJwYWdlIjoyfQ"}
        run = _run(
            _t("t", "fetch_report", "tool", 1, input={"application": "A-1"}, output=out),
            _t("u", "submit", "tool", 2, input={"monthly": 1}),
        )
        ev = _ev(run, "t", "request-more")
        assert ev and "next_cursor" in ev[0].reason

    def test_a_cursor_followed_or_empty_is_no_tell(self) -> None:
        """A next page fetched later, or a cursor that is empty (no more pages), raises nothing."""
        out = {"rows": [{"a": "x"}], "next_page_token": "tok"}
        followed = _run(
            _t("t", "fetch", "tool", 1, input={}, output=out),
            _t(
                "u",
                "fetch",
                "tool",
                2,
                input={"page_token": "tok"},
                output={"rows": [], "next_page_token": None},
            ),
        )
        assert _ev(followed, "t", "request-more") == []
        assert _ev(followed, "u", "request-more") == []
        done = _run(_t("t", "fetch", "tool", 1, input={}, output={"rows": [], "has_more": False}))
        assert _ev(done, "t", "request-more") == []


class TestRecord:
    def _run(self, first_author: str) -> Run:
        out = [
            {
                "page_content": "x",
                "metadata": {"oclc": "701554122", "title": "Virtues", "author": first_author},
            },
            {
                "page_content": "y",
                "metadata": {"oclc": "869311220", "title": "Virtues", "author": "Michael Ignatieff"},
            },
        ]
        return _run(
            _t("t", "catalogue", "retrieval", 1, input={"query": "Virtues by Michael Ignatieff"}, output=out),
            _t("u", "place_request", "tool", 2, input={"oclc": "701554122"}),
        )

    def test_a_first_record_off_the_query_that_was_used_is_flagged(self) -> None:
        """The first record has another author than the query's, a later one has it, and the agent used the first."""
        ev = _ev(self._run("Lena Hartwig"), "t", "request-record")
        assert ev and "Lena Hartwig" in ev[0].reason and "701554122" in ev[0].reason

    def test_an_entity_listing_its_parts_ranks_none_first(self) -> None:
        """An order (many fields) listing its items is no search result: its first item is not its top hit."""
        order = {
            "order_id": "#W1",
            "user_id": "u1",
            "status": "pending",
            "address": "x",
            "items": [{"item_id": "2492465580", "name": "lamp"}, {"item_id": "5320792178", "name": "lamp"}],
        }
        run = _run(
            _t(
                "t",
                "modify_items",
                "tool",
                1,
                input={"order_id": "#W1", "item_ids": ["5320792178"]},
                output=order,
            ),
            _t("u", "next", "tool", 2, input={"item_id": "2492465580"}),
        )
        assert _ev(run, "t", "request-record") == []

    def test_a_first_record_matching_the_query_is_no_tell(self) -> None:
        """When the first record agrees with the query, nothing is raised."""
        assert _ev(self._run("Michael Ignatieff"), "t", "request-record") == []

    def test_a_first_record_whose_list_holds_the_asked_value_later_in_it_agrees_with_the_query(self) -> None:
        """A farrier listed first who serves the asked yard second in his list of yards agrees with the request:
        no "first record" finding, though a later record lists the yard first; one who serves it nowhere is
        still flagged."""

        def run(first_yards: list[str]) -> Run:
            out = [
                {"id": "F-3", "name": "Rui", "yards": first_yards},
                {"id": "F-5", "name": "Jess", "yards": ["mill-lane", "sand-row"]},
            ]
            return _run(
                _t("t", "list_farriers", "tool", 1, input={"yard": "mill-lane"}, output=out),
                _t("u", "book_shoeing", "tool", 2, input={"farrier": "F-3"}),
            )

        assert _ev(run(["north-fold", "mill-lane"]), "t", "request-record") == []
        [e] = _ev(run(["north-fold", "oak-end"]), "t", "request-record")
        assert "north-fold" in e.reason and "mill-lane" in e.reason


class TestFlag:
    def test_an_item_of_a_kind_kept_out_is_flagged(self) -> None:
        """``include_cancelled=false`` answered with a cancelled line: the argument was ignored."""
        out = {"lines": [{"sku": "A", "status": "shipped"}, {"sku": "B", "status": "cancelled"}]}
        run = _run(
            _t("t", "get_lines", "tool", 1, input={"order_id": "O-1", "include_cancelled": False}, output=out)
        )
        ev = _ev(run, "t", "request-flag")
        assert ev and "cancelled" in ev[0].reason

    def test_items_of_that_kind_asked_for_are_no_tell(self) -> None:
        """``include_cancelled=true`` lets cancelled lines in: nothing is raised."""
        out = {"lines": [{"sku": "A", "status": "shipped"}, {"sku": "B", "status": "cancelled"}]}
        run = _run(_t("t", "get_lines", "tool", 1, input={"include_cancelled": True}, output=out))
        assert _ev(run, "t", "request-flag") == []


class TestCode:
    def test_another_short_code_under_the_asked_field_is_flagged(self) -> None:
        """Asked for recipient ``A-``, answered with the row of recipient ``A+``: the wrong row."""
        out = {"query": "A-", "row": {"recipient": "A+", "donor_types": ["A+", "O+"]}}
        run = _run(_t("t", "lookup", "retrieval", 1, input={"recipient": "A-"}, output=out))
        ev = _ev(run, "t", "request-code")
        assert ev and "'A+'" in ev[0].reason

    def test_the_same_code_is_no_tell(self) -> None:
        """The row of the asked recipient raises nothing."""
        out = {"row": {"recipient": "A-", "donor_types": ["A-", "O-"]}}
        run = _run(_t("t", "lookup", "retrieval", 1, input={"recipient": "A-"}, output=out))
        assert _ev(run, "t", "request-code") == []


class TestVariant:
    def test_the_plain_item_for_a_qualified_query_is_flagged(self) -> None:
        """Asked for ``lemon tart (gluten-free)``, answered with ``lemon tart`` and no word of gluten-free."""
        out = [{"title": "lemon tart", "text": "300 g wheat flour", "tags": ["dessert"]}]
        run = _run(
            _t("t", "find_recipe", "retrieval", 1, input={"query": "lemon tart (gluten-free)"}, output=out)
        )
        ev = _ev(run, "t", "request-variant")
        assert ev and "gluten-free" in ev[0].reason

    def test_a_qualifier_the_answer_mentions_or_a_request_of_fields_is_no_tell(self) -> None:
        """The qualifier written in the answer, or a request of several fields (no query), raises nothing."""
        out = [{"title": "lemon tart", "tags": ["gluten-free"]}]
        run = _run(
            _t("t", "find_recipe", "retrieval", 1, input={"query": "lemon tart (gluten-free)"}, output=out)
        )
        assert _ev(run, "t", "request-variant") == []
        fields = _run(
            _t(
                "t",
                "lookup",
                "tool",
                1,
                input={"lot": "CHP-NV", "style": "sparkling"},
                output={"lot": "CHP-NV"},
            )
        )
        assert _ev(fields, "t", "request-variant") == []


class TestShape:
    def test_records_under_another_records_key_are_flagged(self) -> None:
        """Records keyed by lot whose own lot field names the next key: shifted by one against their keys."""
        out = {
            "A-1": {"lot": "B-2", "hts": "x"},
            "B-2": {"lot": "C-3", "hts": "y"},
            "C-3": {"lot": "A-1", "hts": "z"},
        }
        run = _run(_t("t", "collect", "other", 1, input={"lots": ["A-1", "B-2", "C-3"]}, output=out))
        ev = _ev(run, "t", "request-misaligned")
        assert ev and "'A-1'" in ev[0].reason
        aligned = {k: {"lot": k, "hts": "x"} for k in ("A-1", "B-2", "C-3")}
        run = _run(_t("t", "collect", "other", 1, input={}, output=aligned))
        assert _ev(run, "t", "request-misaligned") == []

    def test_a_sum_that_held_in_the_input_and_not_in_the_output_is_flagged(self) -> None:
        """scored + remaining == total held when given and not when answered: an update moved one field only."""
        run = _run(
            _t(
                "t",
                "advance",
                "other",
                1,
                input={"scored": 2, "total": 4, "remaining": 2},
                output={"scored": 3, "total": 4, "remaining": 0},
            )
        )
        ev = _ev(run, "t", "request-sum")
        assert ev and "total" in ev[0].reason
        kept = _run(
            _t(
                "t",
                "advance",
                "other",
                1,
                input={"scored": 2, "total": 4, "remaining": 2},
                output={"scored": 3, "total": 4, "remaining": 1},
            )
        )
        assert _ev(kept, "t", "request-sum") == []


class TestSeries:
    def test_another_code_of_the_asked_series_is_flagged(self) -> None:
        """Asked about unit 4D, answered about unit 4B and never 4D: the neighbouring record."""
        out = {"documents": [{"id": "listing-LC-4B", "content": "Linden Court, Unit 4B: rent EUR 1,090."}]}
        run = _run(
            _t(
                "t",
                "find_listing",
                "retrieval",
                1,
                input={"query": "Linden Court unit 4D listing"},
                output=out,
            )
        )
        ev = _ev(run, "t", "request-series")
        assert ev and "'4D'" in ev[0].reason and "4B" in ev[0].reason

    def test_another_code_of_the_series_inside_a_compound_code_is_flagged(self) -> None:
        """Asked for layer M2, answered a spec whose codes are Q12-M1 and RT-Q12-M1: M1, written inside the
        compound codes, is another code of the series, and M2 is never named."""
        out = {"document": "Q12-M1 spec rev C", "reticle": "RT-Q12-M1", "dose": 24}
        run = _run(_t("t", "constraints", "retrieval", 1, input="constraints product Q12 layer M2", output=out))
        ev = _ev(run, "t", "request-series")
        assert ev and "'M2'" in ev[0].reason and "'M1'" in ev[0].reason

    def test_the_asked_code_named_or_a_filter_over_the_series_is_no_tell(self) -> None:
        """An answer naming the asked code, or a request naming several codes of one series, raises nothing."""
        named = {"documents": [{"id": "LC-4D", "content": "Unit 4D, next to 4B."}]}
        run = _run(_t("t", "find_listing", "retrieval", 1, input={"query": "unit 4D"}, output=named))
        assert _ev(run, "t", "request-series") == []
        subset = [{"berth": "B7"}]
        run = _run(_t("t", "candidates", "tool", 1, input={"berths": ["B1", "B2", "B7"]}, output=subset))
        assert _ev(run, "t", "request-series") == []

    def test_a_code_under_a_field_the_answer_also_has_is_left_to_the_conflict_rule(self) -> None:
        """Given employee=E104 and answered employee=E117, the mismatch is `lineage:conflict`'s: this rule
        stays silent, so one mismatch is not counted twice."""
        out = {"claim_id": "CLM-2219", "employee": "E117", "receipts": ["Hotel"]}
        run = _run(
            _t(
                "t",
                "fetch_receipts",
                "tool",
                1,
                input={"claim_id": "CLM-2219", "employee": "E104"},
                output=out,
            )
        )
        assert _ev(run, "t", "request-series") == []


class TestSeriesExcluded:
    def test_a_code_given_to_exclude_is_not_asked_about(self) -> None:
        """nu29 finding 1: ``exclude=["R-101"]`` asks the answer not to name R-101; naming R-207 instead is right.
        A code given under a plain argument still is asked about, and ``recipe_no`` names no exclusion."""
        out = {"recipes": [{"id": "R-207", "title": "Lentil soup"}]}
        for excluding in ("exclude", "skip_ids", "not_in", "blacklist", "exceptIds"):
            run = _run(_t("t", "search_recipes", "tool", 1, input={excluding: ["R-101"], "diet": "vegan"}, output=out))
            assert _ev(run, "t", "request-series") == [], excluding
        asked = _run(_t("t", "search_recipes", "tool", 1, input={"recipe_no": "R-101"}, output=out))
        ev = _ev(asked, "t", "request-series")
        assert ev and "'R-101'" in ev[0].reason and "'R-207'" in ev[0].reason

    def test_the_words_of_an_excluded_code_name_no_flag(self, tmp_path: Path) -> None:
        """rev56b MEDIUM, recorded (its probe p5, reduced): ``not`` makes ``not_in`` an exclusion of codes, not
        ``not_shipped=True`` a flag keeping shipped orders out; a tool listing a shipped order under it is not
        blamed (`request-flag` reads `Lexicon.exclude_words` alone), and the room finder is ranked first."""

        @trajdebug.step(kind="tool")
        def find_rooms(floor: str, exclude: list[str]) -> list[dict[str, Any]]:
            return [{"room": "R-101", "seats": 8}, {"room": "R-102", "seats": 6}]

        @trajdebug.step(kind="tool")
        def list_orders(customer: str, not_shipped: bool) -> list[dict[str, str]]:
            return [{"order": "O-1", "status": "pending"}, {"order": "O-2", "status": "shipped"}]

        @trajdebug.step(kind="llm")
        def pick(rooms: list[dict[str, Any]], orders: list[dict[str, str]]) -> dict[str, Any]:
            return {"room": rooms[0]["room"], "pending": [o["order"] for o in orders]}

        path = tmp_path / "rooms.jsonl"
        with trajdebug.run("rooms", task="book a room", path=path) as r:
            pick(find_rooms("1", exclude=["R-101"]), list_orders("C-1", not_shipped=True))
            r.fail("booked a room the user excluded")
        a = analyze_source(path).analyses[0]
        assert all("request-flag" not in c.signals for c in a.root_causes)
        assert a.run.step(a.root_causes[0].step_id).name == "find_rooms"

    def test_an_excluded_code_still_makes_the_request_a_filter_over_its_series(self) -> None:
        """rev57f: alternatives near R-104 with R-101 excluded name neither (R-105, R-106): right, as main read it
        (two codes of one series asked); leaving the excluded code out of the count blamed the tool."""
        out = {"options": [{"id": "R-105", "seats": 4}, {"id": "R-106", "seats": 12}]}
        run = _run(_t("t", "alternatives", "tool", 1, input={"near": "R-104", "exclude": ["R-101"]}, output=out))
        assert _ev(run, "t", "request-series") == []


def test_codes_are_tokens_with_a_digit_and_a_letter_or_capitals_joined_by_a_hyphen() -> None:
    """`_codes` keeps exactly the tokens of 2 to 30 characters that hold both a digit and a letter, or are capitals
    joined by a hyphen: the two string tests it makes agree with reading the token character by character."""
    import random
    import re

    from trajdebug.analysis.diagnosers._requests import _TOKEN, _codes

    def scanned(text: str) -> list[str]:
        return [
            t for t in _TOKEN.findall(text) if 2 <= len(t) <= 30
            and ((any(c.isdigit() for c in t) and any(c.isalpha() for c in t)) or ("-" in t and t.isupper()))
        ]

    rng = random.Random(7)
    alphabet = "aZ9-0xQ- é٣_.R1"
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        assert _codes(text) == scanned(text)
    assert _codes("ask 4D, TRV-BASIC, R-104 or 2024 and abc") == ["4D", "TRV-BASIC", "R-104"]
    assert re.fullmatch(_TOKEN, "RT-Q12-M1")
