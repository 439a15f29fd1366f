"""Redaction of records by their encoded text (`Redactor.clean_strings`, `run_to_lines`): a record the
test finds clean is one redaction leaves as it is, and the lines written are byte for byte those of
redacting every record, with the same counts, whatever the strings hold and wherever they stand."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.test_redaction import _ESCAPED

from trajdebug.core.codec import dumps_line, plain_line
from trajdebug.core.model import REDACTED, Dependency, ErrorEvent, ErrorInfo, Run, Step
from trajdebug.core.redaction import Redactor, key_words
from trajdebug.core.redaction._prefilter import (
    _decoded,
    _decoded_all,
    _holding,
    _swap_all,
    _swap_escapes,
    _value_suspects,
)
from trajdebug.core.schema import run_to_lines, run_to_records


_LONGS = [
    "the customer asked about the refund " * 3,
    "the customer asked about the refund " * 3 + "api_key",
    "my " * 30 + "password",
    "note " * 20 + "uses sk-proj-Abc123Def456Ghi789Jkl012 here",
    "x" * 70 + "password=__REDACTED__",
    "y" * 70 + '\\"' + "session_id" + '\\":',
]
"""Strings longer than `redaction._LONG`, some of them secret keys' names, one a secret, one already redacted."""

_PARTS = [*_ESCAPED, *_LONGS]


def _value(keys: list[str], texts: list[str]) -> dict[str, Any]:
    """A record-like value: the texts as values, in a list, and under the keys (nested)."""
    inner: dict[str, Any] = dict(zip(keys, texts, strict=False))
    return {"t": "step", "input": {"messages": [{"role": "user", "content": t} for t in texts]}, "attrs": inner}


class TestCleanStrings:
    @settings(max_examples=400, deadline=None)
    @given(
        st.lists(
            st.tuples(
                st.lists(st.lists(st.sampled_from(_PARTS), min_size=1, max_size=3), min_size=1, max_size=3),
                st.lists(st.lists(st.sampled_from(_PARTS), min_size=1, max_size=2), min_size=1, max_size=3),
            ),
            min_size=1,
            max_size=5,
        ),
        st.booleans(),
    )
    def test_a_record_found_clean_is_one_redaction_leaves_as_it_is(
        self, records: list[tuple[list[list[str]], list[list[str]]]], email: bool
    ) -> None:
        """Over a sequence of records (the memo filling as it goes; long strings as values, as keys, both),
        every record `clean_strings` finds clean is one a fresh redactor leaves unchanged and counts nothing."""
        pii = ("email",) if email else ()
        r = Redactor(pii=pii)
        for keys, texts in records:
            value = _value(["".join(k) for k in keys], ["".join(t) for t in texts])
            line = plain_line(value)
            assert line is not None
            if r.clean_strings(line):
                fresh = Redactor(pii=pii)
                assert fresh(value) == value
                assert not fresh.counts

    def test_a_secret_beside_a_record_with_an_escaped_quote_is_never_found_clean(self) -> None:
        """A record holding a secret and a backslash, run together with a record whose text ends in a
        backslash (so the joined text is swapped and the record alone is not), is still found unclean."""
        values = [
            _value(["use sk-proj-Abc123Def456Ghi789Jkl012 for this"], ["\\"]),
            _value(["use sk-proj-Abc123Def456Ghi789Jkl012 for this\\\\n"], ["a basic understanding of the problem"]),
        ]
        lines = [plain_line(v) for v in values]
        together = Redactor().clean_lines([line for line in lines if line is not None])
        assert together == [False, False]

    @settings(max_examples=300, deadline=None)
    @given(
        st.lists(
            st.tuples(
                st.lists(st.lists(st.sampled_from(_PARTS), min_size=1, max_size=3), min_size=1, max_size=3),
                st.lists(st.lists(st.sampled_from(_PARTS), min_size=1, max_size=2), min_size=1, max_size=3),
            ),
            min_size=1,
            max_size=6,
        )
    )
    def test_records_tested_together_are_each_judged_as_alone(
        self, records: list[tuple[list[list[str]], list[list[str]]]]
    ) -> None:
        """`clean_lines` of a run's records finds clean only records redaction leaves unchanged, and every
        record that holds none of the others' unclean strings is found clean as `clean_strings` finds it."""
        values = [_value(["".join(k) for k in keys], ["".join(t) for t in texts]) for keys, texts in records]
        lines = [plain_line(v) for v in values]
        assert all(line is not None for line in lines)
        together = Redactor().clean_lines([line for line in lines if line is not None])
        for value, line, ok in zip(values, lines, together, strict=True):
            alone = Redactor().clean_strings(line) if line is not None else False
            if ok:
                assert alone
                fresh = Redactor()
                assert fresh(value) == value and not fresh.counts
        if all(Redactor().clean_strings(line) for line in lines if line is not None):
            assert all(together)

    def test_one_secret_key_sends_only_its_record_to_redaction(self) -> None:
        """In a run whose session is under a secret key, the other records are still found clean."""
        lines = [plain_line({"t": "run", "session.id": "abc"}), plain_line({"t": "step", "name": "lookup"})]
        assert Redactor().clean_lines([line for line in lines if line is not None]) == [False, True]

    def test_a_long_string_is_a_secret_key_only_where_it_is_a_key(self) -> None:
        """A long text ending in a secret word is clean as a value, and not clean once it is a key, even after
        it was seen as a value."""
        long = "the customer asked about the refund " * 3 + "api_key"
        r = Redactor()
        as_value = plain_line({"note": long})
        as_key = plain_line({long: "x"})
        assert as_value is not None and as_key is not None
        assert r.clean_strings(as_value)
        assert not r.clean_strings(as_key)
        assert r({long: "x"}) == {long: "__REDACTED__"}

    def test_an_escaped_key_inside_a_value_is_not_a_key(self) -> None:
        """Quotes escaped inside a string do not end it: ``\\"session_id\\":`` in a value is text."""
        text = "y" * 70 + '"session_id": 3'
        r = Redactor()
        line = plain_line({"note": text})
        assert line is not None
        assert r.clean_strings(line) == (r({"note": text}) == {"note": text})

    def test_a_placeholder_already_there_is_counted_each_time(self) -> None:
        """A secret already replaced by the placeholder is left as it is but counted by redaction; the
        test does not find it clean, so it is counted on every record, not only the first."""
        text = "x" * 70 + " password=__REDACTED__"
        r = Redactor()
        line = plain_line({"note": text})
        assert line is not None
        assert not r.clean_strings(line)
        assert not r.clean_strings(line)
        assert not r.counts

    @pytest.mark.parametrize(
        "key",
        ["OPENAI_API_KEY", "apiKey", "x-api-key", "sessionId", "session.id", "account_key", "credit-card",
         "connection string", "AUTHORIZATION", "Set-Cookie", "pa\u017fsword", "\u212aey", "api\u212aey"],
    )
    def test_the_cheap_key_test_agrees_with_the_words(self, key: str) -> None:
        """Whether a key names a secret is what its words say, the literal pre-test never deciding otherwise."""
        from trajdebug.core.redaction._rules import _secret_words

        r = Redactor()
        assert r.secret_key(key) == _secret_words(key_words(key), (), key)


_KEY_BITS = ["api", "Key", "session", "ID", "\u212aey", "token_count", "\x00", "a1b2c3d4e5f60718", "balance", "É"]
"""Pieces of keys: words of secret keys' groups (split between strings or not), the Kelvin sign that lowers
to ``k``, a NUL, an id, plain words, a letter outside ASCII."""


class TestUncleanTogether:
    @settings(max_examples=300, deadline=None)
    @given(
        st.lists(st.lists(st.sampled_from([*_KEY_BITS, *_ESCAPED]), min_size=1, max_size=4), min_size=1, max_size=8),
        st.sampled_from([(), ("internal_.*",)]),
    )
    def test_new_strings_judged_together_are_judged_each_as_alone(
        self, pieces: list[list[str]], extra: tuple[str, ...]
    ) -> None:
        """The new strings of a run's text, tested at once, are found unclean exactly when one alone is a
        secret key's name or not clean as a value, whatever words, escapes and letters they hold."""
        values = ["".join(p) for p in pieces]
        line = plain_line({v: v for v in values})
        assert line is not None
        text = line.replace(b"\\\\", b"\x01\x01").replace(b'\\"', b"\x02\x02")
        tokens = set(text.split(b'"')[1::2])
        alone = Redactor(extra)
        expected = {t for t in tokens if alone.secret_key(_decoded(t)) or not alone._text_clean(_decoded(t))}
        assert Redactor(extra)._unclean(set(tokens), text) == expected

    @given(st.lists(st.lists(st.sampled_from([*_KEY_BITS, *_ESCAPED]), max_size=4), max_size=6))
    def test_strings_decoded_at_once_are_those_decoded_one_by_one(self, pieces: list[list[str]]) -> None:
        """Decoding a run's new strings in one call gives each as decoding it alone does."""
        line = plain_line(["".join(p) for p in pieces])
        assert line is not None
        tokens = line.replace(b"\\\\", b"\x01\x01").replace(b'\\"', b"\x02\x02").split(b'"')[1::2]
        assert _decoded_all(tokens) == [_decoded(t) for t in tokens]


_RECORDS = st.lists(
    st.tuples(
        st.lists(st.lists(st.sampled_from(_PARTS), min_size=1, max_size=3), min_size=1, max_size=3),
        st.lists(st.lists(st.sampled_from(_PARTS), min_size=1, max_size=2), min_size=1, max_size=3),
    ),
    min_size=1,
    max_size=6,
)
"""A run's records, as `_value`'s keys and texts: escapes, quotes, long strings and secrets anywhere."""


def _lines(records: list[tuple[list[list[str]], list[list[str]]]]) -> list[bytes]:
    lines = [plain_line(_value(["".join(k) for k in keys], ["".join(t) for t in texts])) for keys, texts in records]
    assert all(line is not None for line in lines)
    return [line for line in lines if line is not None]


def _fresh(pii: tuple[str, ...] = (), extra: tuple[str, ...] = ()) -> Redactor:
    """A redactor whose memory of strings tested is empty (the policy's memo is shared otherwise)."""
    from trajdebug.core.redaction import _redactor

    _redactor._memo.cache_clear()
    return Redactor(extra, pii=pii)


def _tokens(pieces: list[list[str]]) -> tuple[list[bytes], bytes]:
    """The strings of orjson's text of these strings joined (as `clean_lines` splits them), and the text."""
    line = plain_line({"k": ["".join(p) for p in pieces]})
    assert line is not None
    text = _swap_escapes(line)
    return text.split(b'"')[1::2], text


class TestValueSuspects:
    @settings(max_examples=500, deadline=None)
    @given(
        st.lists(st.lists(st.sampled_from([*_ESCAPED, *_LONGS]), min_size=1, max_size=5), min_size=1, max_size=8),
        st.booleans(),
        st.booleans(),
    )
    @example([["Bearer", " ", "abcdefghijklmnop", "0123456789"], ["plain"]], False, True)
    @example([["plain"], ["ba\u017fic", " ", "YWI6Y2RlZmdo"], ["bAsIc YWI6Y2RlZmdo"]], False, True)
    @example([["4111", " ", "1111", " ", "1111", " ", "1111"]], False, True)
    def test_a_string_the_byte_passes_clear_is_clean_as_a_value(
        self, pieces: list[list[str]], email: bool, gated: bool
    ) -> None:
        """Every string `_value_suspects` leaves out of its suspects (with the rules' literals or without) is
        one the prefilter and the rules, asked of that string alone, find clean as a value."""
        r = _fresh(("email",) if email else ())
        tokens, _ = _tokens(pieces)
        suspects = _value_suspects(tokens, email, r._gates if gated else None)
        assert suspects is not None
        assert suspects == sorted(set(suspects)) and all(0 <= k < len(tokens) for k in suspects)
        for k, t in enumerate(tokens):
            if k not in suspects:
                s = _decoded(t)
                assert not (r.may_hold(s) and r._value_rules_hit(s)), s

    def test_the_passes_leave_plain_words_and_ids_out(self) -> None:
        """Plain words, hex ids and short numbers are no suspects; a secret, a card number, an escape, a
        character outside ASCII and a rule's literal past a rare character are."""
        tokens, _ = _tokens([["order refund status"], ["c7b5356873b907f8"], ["1644"], ["uses sk-proj-Abc123Def456Ghi789Jkl012"],
                             ["4111 1111 1111 1111"], ['say \\"hi\\"'], ["caf\u00e9 au lait"], ["key: token"]])
        assert _value_suspects(tokens, False, _fresh()._gates) == [4, 5, 6, 7, 8]

    def test_every_string_holding_a_card_length_run_of_digits_is_a_suspect(self) -> None:
        """Among many strings, each one holding 13 or more digits in a row is a suspect, wherever it stands
        (the runs are counted on from the last one found, not from the start)."""
        pieces = [["id 1700000000123 sent"] if k % 3 == 0 else ["plain words"] for k in range(300)]
        tokens, _ = _tokens(pieces)
        assert _value_suspects(tokens, False, _fresh()._gates) == list(range(1, 301, 3))  # token 0 is the key "k"

    def test_a_raw_nul_sends_every_string_to_the_rules(self) -> None:
        """A string holding a raw NUL (no text orjson writes) leaves the strings to be asked one by one."""
        assert _value_suspects([b"a\x00b", b"c"], False, None) is None


class TestUncleanMemory:
    @settings(max_examples=200, deadline=None)
    @given(st.lists(_RECORDS, min_size=2, max_size=4), st.booleans())
    def test_verdicts_with_the_memory_warm_are_those_of_an_empty_one(
        self, runs: list[list[tuple[list[list[str]], list[list[str]]]]], email: bool
    ) -> None:
        """Run after run through one redactor (strings found clean and unclean remembered), `clean_lines`
        finds each record as a redactor with nothing remembered finds it."""
        pii = ("email",) if email else ()
        warm = _fresh(pii)
        verdicts = [warm.clean_lines(_lines(records)) for records in runs]
        for records, got in zip(runs, verdicts, strict=True):
            assert got == _fresh(pii).clean_lines(_lines(records))

    def test_a_long_key_found_unclean_is_clean_later_as_a_value(self) -> None:
        """A long string that names a secret where it is a key is not remembered unclean: as a value
        in a later run it is clean; a short secret key's name is unclean wherever it stands."""
        long = "the customer asked about the refund " * 3 + "api_key"
        r = _fresh()
        assert r.clean_lines([_one({long: "x"}), _one({"n": 1})]) == [False, True]
        assert r.clean_lines([_one({"note": long})]) == [True]
        assert r.clean_lines([_one({"api_key": "x"})]) == [False]
        assert r.clean_lines([_one({"note": "api_key"})]) == [False]


    def test_the_strings_remembered_unclean_are_bounded_in_characters(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A secret resent inside ever-different long texts (an API key in a growing conversation) is not kept
        without bound: the memory of unclean strings is emptied past the memo's character cap."""
        from trajdebug.core.redaction import _redactor

        monkeypatch.setattr(_redactor, "_MEMO_CHARS", 20_000)
        r = _fresh()
        for k in range(200):
            text = f"turn {k}: " + "the conversation so far " * 20 + "uses sk-proj-Abc123Def456Ghi789Jkl012"
            assert r.clean_lines([_one({"note": text})]) == [False]
            assert sum(map(len, r._memo.unclean)) <= 20_000
        assert r.clean_lines([_one({"note": "uses sk-proj-Abc123Def456Ghi789Jkl012"})]) == [False]

    def test_a_value_found_unclean_is_unclean_again_wherever_it_stands(self) -> None:
        """A string holding a secret is found unclean as a value and as a key, run after run."""
        secret = "uses sk-proj-Abc123Def456Ghi789Jkl012"
        r = _fresh()
        for value in ({"note": secret}, {secret: 1}, {"note": secret}):
            assert r.clean_lines([_one(value), _one({"n": 1})]) == [False, True]


def _one(value: Any) -> bytes:
    line = plain_line(value)
    assert line is not None
    return line


def _old_clean_lines(r: Redactor, encoded: list[bytes]) -> list[bool]:
    """`Redactor.clean_lines` as it was before its escapes were swapped in a stretch and its records searched
    in the joined text: the whole text swapped when it holds an escaped quote, each record swapped and searched."""
    joined = b"".join(encoded)
    swap = b'\\"' in joined
    text = _swap_all(joined) if swap else joined
    new = set(text.split(b'"')[1::2])
    new.difference_update(r._clean_tokens)
    bad = r._unclean(new, text)
    if not bad:
        return [True] * len(encoded)
    if len(encoded) == 1:
        return [False]
    quoted = [b'"' + t + b'"' for t in bad]
    return [not any(q in e for q in quoted) for e in (map(_swap_all, encoded) if swap else encoded)]


class TestCleanLinesSearch:
    @settings(max_examples=300, deadline=None)
    @given(_RECORDS)
    def test_the_swapped_stretch_is_the_whole_text_swapped(
        self, records: list[tuple[list[list[str]], list[list[str]]]]
    ) -> None:
        """Swapping only from a run's first backslash to its last gives the text swapping all of it gives,
        and the text as it is when it holds no escaped quote."""
        joined = b"".join(_lines(records))
        assert _swap_escapes(joined) == (_swap_all(joined) if b'\\"' in joined else joined)

    @settings(max_examples=300, deadline=None)
    @given(_RECORDS, st.data())
    def test_a_record_holds_a_string_found_in_the_joined_text_as_searched_alone(
        self, records: list[tuple[list[list[str]], list[list[str]]]], data: st.DataObject
    ) -> None:
        """A quoted string is found in a record by one search of the joined text exactly when searching that
        record alone finds it: strings of the records, and stretches that run across two records, are
        counted in the record that holds them whole, never in two."""
        lines = _lines(records)
        joined = b"".join(lines)
        swap = b'\\"' in joined
        text = _swap_escapes(joined)
        parts = text.split(b'"')
        picks = data.draw(st.lists(st.integers(0, len(parts) - 1), min_size=1, max_size=4))
        quoted = [b'"' + parts[i] + b'"' for i in picks]
        across = text.rfind(b"\n", 0, len(text) - 1)
        if across > 0:  # a stretch across the last two records' boundary
            quoted.append(text[max(across - 3, 0) : across + 4])
        ends = [len(b"".join(lines[: k + 1])) for k in range(len(lines))]
        alone = [any(q in e for q in quoted) for e in (map(_swap_all, lines) if swap else lines)]
        assert _holding(text, ends, quoted) == alone

    @settings(max_examples=300, deadline=None)
    @given(_RECORDS, st.booleans())
    def test_records_found_clean_are_those_the_per_record_search_found(
        self, records: list[tuple[list[list[str]], list[list[str]]]], email: bool
    ) -> None:
        """`clean_lines` finds clean the same records as the search it replaced (every record swapped and
        searched on its own), with e-mail redaction on and off."""
        lines = _lines(records)
        pii = ("email",) if email else ()
        assert Redactor(pii=pii).clean_lines(lines) == _old_clean_lines(Redactor(pii=pii), lines)

    def test_a_string_split_across_two_records_is_in_neither(self) -> None:
        """A secret's text made of one record's end and the next one's start is found in neither record."""
        text = b'{"a":"x"}\n{"b":"y"}\n'
        assert _holding(text, [10, 20], [b'"}\n{"']) == [False, False]
        assert _holding(text, [10, 20], [b'"y"', b'"a"']) == [True, True]


def _run(texts: list[str]) -> Run:
    steps = tuple(
        Step(
            step_id=f"s{i}",
            name=t[:20] or "step",
            kind="tool",
            start_ns=i,
            end_ns=i + 1,
            status="ok",
            input={"query": t, 3: "int key", "pair": ("a", t)},
            output=t,
            attributes={"note": t, t or "empty": 1},
        )
        for i, t in enumerate(texts)
    )
    err = ErrorEvent(error_id="e1", step_id="s0", type="ValueError", message=texts[0])
    return Run(
        run_id="r1",
        name="run",
        start_ns=0,
        end_ns=10,
        outcome="failure",
        steps=steps,
        errors=(err,),
        failure_reason=texts[-1],
        metadata={"session.id": "abc", "source": texts[0]},
    )


class TestRunToLines:
    @settings(max_examples=150, deadline=None)
    @given(st.lists(st.lists(st.sampled_from(_PARTS), min_size=1, max_size=3), min_size=1, max_size=4))
    def test_lines_are_those_of_redacting_every_record(self, pieces: list[list[str]]) -> None:
        """`run_to_lines` writes the bytes and returns the records that redacting every record and encoding
        it gives, the counts in the end record included, run after run (the memo warm)."""
        run = _run(["".join(p) for p in pieces])
        for _ in range(2):
            recs, lines = run_to_lines(run)
            expected = run_to_records(run)
            assert recs == expected
            assert lines == [dumps_line(r) for r in expected]

    def test_unredacted_lines_are_the_records_as_they_are(self) -> None:
        """Without redaction, the lines are the records encoded, secrets and all."""
        run = _run(["uses sk-proj-Abc123Def456Ghi789Jkl012"])
        recs, lines = run_to_lines(run, redact=False)
        assert recs == run_to_records(run, redact=False)
        assert b"sk-proj-Abc123Def456Ghi789Jkl012" in b"".join(lines)

    def test_a_secret_in_a_long_value_never_reaches_the_lines(self) -> None:
        """A secret inside a long tool output, error message and failure reason is replaced in every line."""
        secret = "sk-proj-Abc123Def456Ghi789Jkl012"
        run = _run(["note " * 20 + "uses " + secret + " here", "plain text " * 10])
        recs, lines = run_to_lines(run)
        assert secret.encode() not in b"".join(lines)
        assert recs[-1]["recorder"]["redacted"]["openai_key"] >= 1


def test_error_info_and_session_are_redacted_as_before() -> None:
    """A step's error and the run's session key are redacted on the lines as in the records."""
    step = Step(
        step_id="s0", name="t", kind="tool", start_ns=0, end_ns=1, status="error",
        error=ErrorInfo(type="E", message="Bearer abcdefghijklmnop1234567890"),
    )  # fmt: skip
    run = Run(run_id="r2", name="n", start_ns=0, end_ns=2, outcome="failure", steps=(step,), metadata={"session_id": "s"})
    recs, lines = run_to_lines(run)
    assert recs == run_to_records(run)
    assert b"abcdefghijklmnop1234567890" not in b"".join(lines)


def _luhn_id_run() -> Run:
    # 16 digits that pass the Luhn check: what the card rule redacts in a value (a recorder prefix of digits
    # and an all-digit sequence number give such step ids about one time in twenty).
    a, b = "4068049600000001", "4068049600000002"
    return Run(
        run_id="r1",
        name="ids",
        start_ns=1,
        end_ns=3,
        outcome="failure",
        steps=(
            Step(step_id=a, name="fetch", kind="tool", input={"card": "4111 1111 1111 1111"}, output="ok", start_ns=1, end_ns=2),
            Step(
                step_id=b, name="plan", kind="llm", input="p", output="pay with 4111 1111 1111 1111",
                start_ns=2, end_ns=3, parent_id=a, deps=(Dependency(step_id=a, kind="data", origin="declared"),),
            ),
        ),
        errors=(ErrorEvent(error_id="e1", step_id=b, type="ValueError", message="no", stages=()),),
    )


@pytest.mark.parametrize("how", ["records", "lines"])
def test_a_written_run_keeps_step_ids_that_look_like_card_numbers(how: str) -> None:
    """Writing a run whole redacts the card number in its values but never its step ids, parent ids, the ids
    inside its dependencies or its errors' step ids (a redacted id merged such steps into one)."""
    recs = run_to_records(_luhn_id_run(), redact=True) if how == "records" else run_to_lines(_luhn_id_run(), redact=True)[0]
    steps = [r for r in recs if r["t"] == "step"]
    assert [s["step_id"] for s in steps] == ["4068049600000001", "4068049600000002"]
    assert steps[1]["parent_id"] == "4068049600000001" and steps[1]["deps"][0]["step_id"] == "4068049600000001"
    assert [r["step_id"] for r in recs if r["t"] == "error"] == ["4068049600000002"]
    assert steps[0]["input"] == {"card": REDACTED} and "4111" not in json.dumps(recs)


def test_a_secret_written_in_an_id_field_is_still_redacted() -> None:
    """Only numbers and plain-digit ids are kept as they are: an imported run id that holds a key is content,
    and is redacted like any other."""
    secret = "sk-proj-" + "a1B2c3D4e5" * 4
    run = Run(run_id=f"r-{secret}", name="ids", start_ns=1, end_ns=2, outcome="success",
              steps=(Step(step_id="4068049600000002", name="s", kind="tool", output="ok", start_ns=1, end_ns=2),))
    for recs in (run_to_records(run, redact=True), run_to_lines(run, redact=True)[0]):
        assert secret not in json.dumps(recs)
        assert [r["step_id"] for r in recs if r["t"] == "step"] == ["4068049600000002"]
