"""Redaction: each rule with its false positives, keys word by word, depth, before truncation, names, and a
planted-secret scan over every byte every write path leaves on disk."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trajdebug
from trajdebug.core.model import REDACTED, TRUNCATED_KEY, Run, Step
from trajdebug.core.redaction import MAX_DEPTH, RULES, Redactor, key_words


# (rule, text holding the secret, the secret part that must disappear)
SECRETS: list[tuple[str, str, str]] = [
    ("openai_key", "use sk-proj-Abc123Def456Ghi789Jkl012 for this", "sk-proj-Abc123Def456Ghi789Jkl012"),
    ("stripe_key", "charge with sk_live_51HabcdefghijklmnopQRS", "sk_live_51HabcdefghijklmnopQRS"),
    ("github_token", "git clone with ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("github_token", "GH=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv"),
    ("aws_access_key_id", "key id AKIAIOSFODNN7EXAMPLE in env", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_secret_key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("google_api_key", "maps key AIzaSyD-1234567890abcdefghijklmnopqrstu ok", "AIzaSyD-1234567890abcdefghijklmnopqrstu"),
    ("huggingface_token", "HF hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH"),
    (
        "azure_key",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5d2FsZG8=;EndpointSuffix=core.windows.net",
        "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5d2FsZG8=",
    ),
    ("slack_token", "post via xoxb-1234567890-abcdefghijkl now", "xoxb-1234567890-abcdefghijkl"),
    ("bearer", "Authorization: BEARER abcdefghijklmnop1234567890", "abcdefghijklmnop1234567890"),
    ("bearer", "authorization: bearer abcdefghijklmnop1234567890", "abcdefghijklmnop1234567890"),
    ("basic_auth", "Authorization: Basic " + base64.b64encode(b"admin:s3cretpass").decode(), base64.b64encode(b"admin:s3cretpass").decode()),
    ("jwt", "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"),
    ("private_key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7zq\n-----END RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA7zq"),
    ("url_credentials", "connect to postgres://app:Pa55w0rdXyz@db.internal:5432/sales", "Pa55w0rdXyz"),
    ("assignment", "retrying login with password=hunter2hunter2 failed", "hunter2hunter2"),
    ("assignment", "{'client_secret': 'cs-9876543210zyx', 'n': 1}", "cs-9876543210zyx"),
    ("card_number", "paid with 4111 1111 1111 1111, thanks", "4111 1111 1111 1111"),
    ("card_number", "amex 378282246310005 on file", "378282246310005"),
]

BENIGN = [
    "a basic understanding of the problem",
    "the bearer of bad news",
    "prompt tokens: 85, max_tokens=100, token_count=5",
    "commit e83c5163316f89bfbde7d9ab23ca2e25604af290",
    "step d347011200000249 at 1700000000000000000 ns",
    "order 1234567890123456 shipped",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "https://example.com/path?q=1",
    "ana@example.com asked about her order",
    "the key to success is patience",
]


# (rule, text with the secret glued to a character outside ASCII, the secret part that must disappear): CJK text
# often has no space before a value; a word of any other script, an accented letter or a full-width character
# before a key's prefix (or after its end) cannot be part of an ASCII token.
GLUED: list[tuple[str, str, str]] = [
    ("openai_key", "用密钥sk-proj-Abc123Def456Ghi789Jkl012调用", "sk-proj-Abc123Def456Ghi789Jkl012"),
    ("openai_key", "token是sk-ant-api03-Zyx987Wvu654Tsr321Qpo0", "sk-ant-api03-Zyx987Wvu654Tsr321Qpo0"),
    ("openai_key", "la cl\u00e9sk-proj-Abc123Def456Ghi789Jkl012", "sk-proj-Abc123Def456Ghi789Jkl012"),
    ("openai_key", "\uff21sk-proj-Abc123Def456Ghi789Jkl012", "sk-proj-Abc123Def456Ghi789Jkl012"),
    ("stripe_key", "用sk_live_51HabcdefghijklmnopQRS付款", "sk_live_51HabcdefghijklmnopQRS"),
    ("github_token", "令牌ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789克隆", "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("github_token", "GH令牌github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv"),
    ("aws_access_key_id", "密钥AKIAIOSFODNN7EXAMPLE在环境里", "AKIAIOSFODNN7EXAMPLE"),
    ("google_api_key", "\u043a\u043b\u044e\u0447AIzaSyD-1234567890abcdefghijklmnopqrstu", "AIzaSyD-1234567890abcdefghijklmnopqrstu"),
    ("huggingface_token", "\u0645\u0641\u062a\u0627\u062dhf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH"),
    ("slack_token", "通过xoxb-1234567890-abcdefghijkl发送", "xoxb-1234567890-abcdefghijkl"),
    ("bearer", "认证Bearer abcdefghijklmnop1234567890", "abcdefghijklmnop1234567890"),
    ("basic_auth", "认证Basic " + base64.b64encode(b"admin:s3cretpass").decode(), base64.b64encode(b"admin:s3cretpass").decode()),
    ("jwt", "令牌eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"),
    ("url_credentials", "连接postgres://app:Pa55w0rdXyz@db.internal:5432/sales", "Pa55w0rdXyz"),
    ("card_number", "用卡4111 1111 1111 1111付款", "4111 1111 1111 1111"),
    ("card_number", "\uff144111 1111 1111 1111", "4111 1111 1111 1111"),
    ("card_number", "\u0663378282246310005", "378282246310005"),
]

GLUED_BENIGN = [
    "xsk-proj-Abc123Def456Ghi789Jkl012",  # glued to an ASCII letter: part of a longer token
    "task-1234567890abcdefghijklmnop",
    "mask-abcdefghijklmnopqrstuvwx and desk-0123456789abcdef0123",
    "a risk-free plan",
    "任务task-123已完成，风险risk-free",
    "提交e83c5163316f89bfbde7d9ab23ca2e25604af290到主分支",
    "订单1234567890123456已发货",
    "亚洲ASIA区域和AKIA前缀",
    "这是一段普通的中文说明：没有任何密钥。",
    "Gda\u0144sk-Gdynia ist eine Stadt",
]


class TestValueRules:
    @pytest.mark.parametrize(("rule", "text", "secret"), SECRETS, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(SECRETS)])
    def test_each_secret_shape_is_replaced_and_counted(self, rule: str, text: str, secret: str) -> None:
        """A string holding a known credential shape keeps its text but not the credential; the rule is counted."""
        r = Redactor()
        out = r.text(text)
        assert secret not in out
        assert REDACTED in out
        assert r.counts[rule] >= 1

    @pytest.mark.parametrize(("rule", "text", "secret"), GLUED, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(GLUED)])
    def test_a_secret_glued_to_a_character_outside_ascii_is_replaced(self, rule: str, text: str, secret: str) -> None:
        """A credential glued to a word of another script, an accented letter or a full-width character is
        replaced, and the encoded-text tests (the prefilter's passes over bytes) do not call its text clean."""
        from trajdebug.core.codec import dumps_line

        r = Redactor()
        out = r.text(text)
        assert secret not in out
        assert r.counts[rule] >= 1
        assert not Redactor().clean_lines([dumps_line({"v": text})])[0]
        assert not Redactor().clean_json(json.dumps({"v": [text]}).encode())

    @pytest.mark.parametrize("text", GLUED_BENIGN)
    def test_a_prefix_glued_to_an_ascii_token_or_in_cjk_prose_is_left_alone(self, text: str) -> None:
        """A key-shaped tail glued to an ASCII letter or digit (a longer token: ``task-``, ``mask-``), ids,
        hashes and order numbers in CJK prose, and an accented word before a short dashed word are kept."""
        r = Redactor()
        assert text == r.text(text)
        assert not r.counts

    @pytest.mark.parametrize("text", BENIGN)
    def test_innocent_text_is_left_alone(self, text: str) -> None:
        """Ids, hashes, timestamps, order numbers, prose and (without opt-in) e-mail are not redacted."""
        r = Redactor()
        assert text == r.text(text)
        assert not r.counts

    def test_email_is_an_opt_in_pii_class(self) -> None:
        """E-mail addresses are kept by default and redacted once the class is enabled."""
        text = "ana@example.com asked"
        assert text == Redactor().text(text)
        r = Redactor(pii=("email",))
        assert f"{REDACTED} asked" == r.text(text)
        assert {"email": 1} == dict(r.counts)

    def test_an_email_glued_to_cjk_text_is_redacted_whole(self) -> None:
        """An e-mail address between CJK characters is replaced whole once the class is enabled."""
        r = Redactor(pii=("email",))
        assert f"邮件{REDACTED}关于订单" == r.text("邮件ana.secret@example.com关于订单")

    def test_configure_turns_on_pii_classes_and_refuses_unknown_ones(self) -> None:
        """`configure(redact_pii=...)` reaches every write path's redactor; an unknown class is an error."""
        from trajdebug.core import redaction

        trajdebug.configure(redact_pii=("email",))
        assert "email" in redaction.POLICY.pii
        with pytest.raises(ValueError, match="unknown PII class 'phone'"):
            trajdebug.configure(redact_pii=("phone",))


def _every_rule(text: str, pii: tuple[str, ...] = ()) -> str:
    """The value rules run on ``text`` one after another with no prefilter and no gate at all."""
    import functools
    import re

    r = Redactor(pii=pii)
    for rule in RULES:
        if not rule.pii or rule.name in pii:
            text = re.compile(rule.pattern).sub(functools.partial(r._replace, rule), text)
    return text


# Pieces that make strings near and on every rule's edge: secrets, their words in odd cases and with the
# Unicode letters `re` equates with ASCII ones, separators, quotes, digit groups.
_PIECES = [
    *(t for _, t, _ in SECRETS), *BENIGN,
    "password", "PassWord", "pa\u017fsword", "TOKEN", "api-key", "client_secret", "credent\u0131al", "cred\u0130ntial",
    "Bearer", "bEaReR", "BASIC", "ba\u017fic", "aws_secret_access_key", "AccountKey", "sig", "AKIA", "AIza", "eyJ",
    "sk-", "xoxb-", "ghp_", "hf_", "://", "@", ":", "=", "'", '"', " ", "  ", "\t", "\n", "4111", "1111", "3782",
    "8224", "-", "_", "abcdefghijklmnop", "QWxhZGRpbjpvcGVuIHNlc2FtZQ==", "0123456789", "\u00e9t\u00e9", "\u212aey",
    "密钥", "是", "\uff21", "\uff14", "\u0663", "cl\u00e9",
]


_ESCAPED = [*_PIECES, "\\", '\\"', '"', "\x01", "\x02\x02", "\\\\n"]
"""The pieces, and what JSON escapes (backslashes, quotes, control characters) in every combination."""


class TestPrefilter:
    @settings(max_examples=400, deadline=None)
    @given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8), st.booleans())
    def test_the_prefilter_never_skips_what_a_rule_would_change(self, pieces: list[str], email: bool) -> None:
        """Whatever the rules would replace when every one runs on every string, the redactor (its
        single-character prefilter and each rule's gates) replaces too, with e-mail on and off."""
        text = "".join(pieces)
        pii = ("email",) if email else ()
        expected = _every_rule(text, pii)
        r = Redactor(pii=pii)
        assert expected == r.text(text)
        if expected != text:
            assert r.may_hold(text)
            assert not r.clean({"k": [text]})

    @pytest.mark.parametrize("text", ["i" * 200, "The quarterly report: the key accounts, a token budget, pass it on."])
    def test_ordinary_text_is_clean_for_the_cheap_test(self, text: str) -> None:
        """A value without any character a secret needs is clean for `clean` (nothing is copied); English with a
        ":" is not, and `text` still leaves it as it is."""
        r = Redactor()
        assert r.clean({"query": text, "n": [1, 2.5, True, None]}) is ("i" * 200 == text)
        assert text == r.text(text)


class TestKeyRules:
    @pytest.mark.parametrize(
        "key",
        ["password", "pwd", "token", "auth_token", "token_count_secret", "dsn", "apiKey", "x-api-key", "OPENAI_API_KEY", "Authorization",
         "session_id", "client_secret", "credit_card", "aws_secret_access_key", "Set-Cookie", "passphrase"],
    )
    def test_secret_keys_are_redacted_whole(self, key: str) -> None:
        """A value under a key naming a secret is replaced, whatever its shape (a number, a dict)."""
        r = Redactor()
        assert {key: REDACTED, "n": 1} == r({key: {"nested": "value"}, "n": 1})
        assert 1 == r.counts["key_name"]

    @pytest.mark.parametrize(
        "key",
        ["classname", "businessname", "prompt_tokens", "token_count", "max_tokens", "author", "authors",
         "keyboard", "monkey", "password_length", "secret_name", "tokenizer", "llm.token_count.prompt",
         "llm.token_count.completion", "llm.token_count.total", "refresh_token_expires_at"],
    )
    def test_keys_that_only_look_like_secrets_are_kept(self, key: str) -> None:
        """Keys are compared word by word: no `ssn` in classname, no `token` in prompt_tokens, and a key with a
        counting word after the secret word (OpenInference's token counts too) describes a secret without
        holding it."""
        r = Redactor()
        assert {key: "kept"} == r({key: "kept"})

    def test_key_words_split_every_spelling(self) -> None:
        """camelCase, kebab-case, SCREAMING_SNAKE and dotted keys split into the same words."""
        assert ("api", "key") == key_words("apiKey") == key_words("api-key") == key_words("API_KEY") == key_words("api.key")

    def test_extra_key_patterns_are_honoured(self) -> None:
        """`configure(redact_keys=...)` adds key patterns of the user's own."""
        trajdebug.configure(redact_keys=("^internal_ref$",))
        sink = trajdebug.record.MemorySink()
        with trajdebug.run("k", sinks=[sink]) as h, trajdebug.step("s") as s:
            s.output = {"internal_ref": "R-1", "other": "x"}
        assert {"internal_ref": REDACTED, "other": "x"} == h.load().steps[0].output


class TestDepthSizeAndNames:
    def test_a_secret_at_any_depth_is_redacted(self) -> None:
        """A secret 40 levels deep is scrubbed; a value deeper than the walk goes is replaced whole."""
        deep: Any = {"password": "hunter2"}
        for _ in range(40):
            deep = {"d": deep}
        out = Redactor()(deep)
        for _ in range(40):
            out = out["d"]
        assert {"password": REDACTED} == out
        deeper: Any = "sk-proj-Abc123Def456Ghi789Jkl012"
        for _ in range(MAX_DEPTH + 5):
            deeper = [deeper]
        assert "sk-proj" not in json.dumps(Redactor()(deeper))

    def test_a_large_value_is_redacted_before_it_is_cut(self, tmp_path: Path) -> None:
        """A 200 KiB output is stored truncated, and the secrets in the part that is kept are scrubbed first
        (the head of the stored JSON never holds them)."""
        path = tmp_path / "big.jsonl"
        big = {"password": "hunter2hunter2", "note": "uses sk-proj-Abc123Def456Ghi789Jkl012", "blob": "x" * 200_000}
        with trajdebug.run("big", path=path), trajdebug.step("s") as s:
            s.output = big
        text = path.read_text()
        assert "hunter2hunter2" not in text and "sk-proj-Abc123" not in text
        (run,) = trajdebug.read_jsonl(path).runs
        assert TRUNCATED_KEY in run.steps[0].output

    def test_names_messages_and_run_fields_are_redacted(self, tmp_path: Path) -> None:
        """Step, agent and run names, error messages and failure reasons are scrubbed like values."""
        key = "sk-proj-Abc123Def456Ghi789Jkl012"
        path = tmp_path / "n.jsonl"
        with trajdebug.run(f"run {key}", path=path) as h:
            with trajdebug.step(f"call {key}", agent=f"agent {key}"):
                pass
            h.fail(f"because {key}")
        assert key not in path.read_text()

    def test_what_was_scrubbed_is_counted_in_the_end_record_never_the_value(self, tmp_path: Path) -> None:
        """The run's end record says how many values each rule replaced."""
        path = tmp_path / "c.jsonl"
        with trajdebug.run("c", path=path), trajdebug.step("s", input={"token": "t-1234567"}) as s:
            s.output = "key AKIAIOSFODNN7EXAMPLE"
        (run,) = trajdebug.read_jsonl(path).runs
        assert {"key_name": 1, "aws_access_key_id": 1} == run.metadata["recorder"]["redacted"]
        assert "t-1234567" not in path.read_text()


def _planted() -> tuple[dict[str, Any], list[str]]:
    """A value holding every planted secret (in strings, under secret keys, as a key, deep, past the size cut)."""
    texts = {f"v{i}": text for i, (_, text, _) in enumerate(SECRETS)}
    deep: Any = {"api_key": "deep-key-value-0001"}
    for _ in range(35):
        deep = {"level": deep}
    value = {
        **texts,
        "token": "plain-token-value-0002",
        "pwd": "plain-pwd-value-0003",
        "dsn": "plain-dsn-value-0004",
        "auth_token": "plain-auth-value-0005",
        "sk-proj-KeyAsAKeyAbcdefghij123456": "key as a key",
        "deep": deep,
        "huge": "y" * 70_000 + " password=far-past-the-cut-0006",
    }
    secrets = [s for _, _, s in SECRETS] + [
        "deep-key-value-0001",
        "plain-token-value-0002",
        "plain-pwd-value-0003",
        "plain-dsn-value-0004",
        "plain-auth-value-0005",
        "sk-proj-KeyAsAKeyAbcdefghij123456",
        "far-past-the-cut-0006",
    ]
    return value, secrets


def _scan(folder: Path, secrets: list[str], skip: set[Path]) -> list[tuple[str, str]]:
    found = []
    for f in folder.rglob("*"):
        if f.is_file() and f not in skip:
            data = f.read_bytes()
            found += [(f.name, s) for s in secrets if s.encode() in data]
    return found


class TestEveryWritePath:
    def test_no_planted_secret_reaches_disk_on_any_write_path(self, tmp_path: Path, cli_run: Any) -> None:
        """Secrets planted in values, keys, names, metadata, errors, deep nesting and past the size cut are
        absent from every byte written by: the recorder (JSONL, store and its WAL), an integration delivering
        to a store and a file, `import` of a message log into a store and a file, a store-to-store import,
        `export`, and write_jsonl."""
        from trajdebug.core.jsonl import write_jsonl
        from trajdebug.integrations._deliver import deliver

        value, secrets = _planted()
        out = tmp_path / "out"
        out.mkdir()
        key = SECRETS[0][2]

        @trajdebug.step(kind="tool")
        def leaky(arg: Any) -> Any:
            raise ValueError(f"failed with {key} and {SECRETS[5][1]}")

        with trajdebug.run(f"recorded {key}", store=out / "rec.db", path=out / "rec.jsonl", metadata={"cfg": value}) as h:
            with trajdebug.step(f"step {key}", kind="tool", input=value, attributes={"attr": value}) as s:
                s.output = value
                s.error(f"reported {SECRETS[10][1]}", detail=value)
            try:
                leaky(value)
            except ValueError:
                pass
            h.fail(f"reason {SECRETS[16][1]}")
        trajdebug.record.flush(10)

        foreign = Run(
            "foreign-1",
            f"integration {key}",
            outcome="success",
            metadata={"cfg": value},
            steps=(Step("s1", f"tool {key}", "tool", input=value, output=value, start_ns=1, end_ns=2, attributes={"a": value}),),
        )
        deliver(foreign, store=out / "integration.db", path=out / "integration.jsonl")
        write_jsonl([foreign], out / "written.jsonl")

        inputs = tmp_path / "in"
        inputs.mkdir()
        log = inputs / "chat.json"
        log.write_text(
            json.dumps(
                [
                    {"role": "user", "content": f"my card is {SECRETS[18][1]} and {SECRETS[3][1]}"},
                    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "login", "arguments": json.dumps(value)}}]},
                    {"role": "tool", "tool_call_id": "c1", "content": json.dumps(value)},
                    {"role": "assistant", "content": f"done, {SECRETS[11][1]}"},
                ]
            )
        )
        cli_run("import", str(log), "--from", "openai", "-o", str(out / "imported.db"), check=True)
        cli_run("import", str(log), "--from", "openai", "-o", str(out / "imported.jsonl"), check=True)
        cli_run("import", str(out / "integration.db"), "-o", str(out / "merged.db"), check=True)
        cli_run("export", str(log), "--from", "openai", "-o", str(out / "spans.json"), check=True)
        written = {f.name for f in out.iterdir() if f.stat().st_size > 0}
        assert {"rec.db", "rec.jsonl", "integration.db", "integration.jsonl", "written.jsonl", "imported.db",
                "imported.jsonl", "merged.db", "spans.json"} <= written
        assert len(_scan(inputs, secrets, set())) > 10  # the scan finds what is there
        assert [] == _scan(out, secrets, set())
        assert h.load().metadata["recorder"]["redacted"]


    def test_a_glued_secret_never_reaches_the_recorders_files(self, tmp_path: Path) -> None:
        """Secrets glued to CJK and full-width characters, in a recorded run's name, a step's name, input, output,
        error and the failure reason, are absent from the recorder's JSONL file and store."""
        texts = [t for _, t, _ in GLUED]
        secrets = [s for _, _, s in GLUED]
        with trajdebug.run(f"run {texts[0]}", store=tmp_path / "rec.db", path=tmp_path / "rec.jsonl") as h:
            for i, text in enumerate(texts):
                with trajdebug.step(f"step {text}", kind="tool", input={"q": text}) as s:
                    s.output = [text, {"nested": text}]
                    if i % 3 == 0:
                        s.error(f"failed: {text}")
            h.fail(" / ".join(texts))
        trajdebug.record.flush(10)
        assert {"rec.db", "rec.jsonl"} <= {f.name for f in tmp_path.iterdir()}
        assert [] == _scan(tmp_path, secrets, set())


class TestCleanJson:
    @settings(max_examples=400, deadline=None)
    @given(
        st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8),
        st.lists(st.sampled_from(_PIECES), max_size=3),
        st.booleans(),
        st.booleans(),
    )
    def test_json_text_found_clean_is_left_as_it_is(
        self, pieces: list[str], key: list[str], email: bool, ascii_only: bool
    ) -> None:
        """A value whose JSON text `clean_json` finds clean is one redaction leaves unchanged, whatever its
        strings hold (newlines, quotes, Unicode letters, escaped by either encoder), in keys or in values."""
        from trajdebug.core.codec import dumps

        text = "".join(pieces)
        value = {"note": [text, {"".join(key) or "k": text}], "n": 12}
        pii = ("email",) if email else ()
        r = Redactor(pii=pii)
        encoded = json.dumps(value).encode() if ascii_only else dumps(value)
        if r.clean_json(encoded):
            assert r(value) == value

    @settings(max_examples=400, deadline=None)
    @given(
        st.lists(st.lists(st.sampled_from(_ESCAPED), min_size=1, max_size=6), min_size=1, max_size=4),
        st.lists(st.sampled_from(_ESCAPED), max_size=3),
        st.booleans(),
    )
    def test_encoded_text_found_clean_is_left_as_it_is(self, texts: list[list[str]], key: list[str], email: bool) -> None:
        """`clean_encoded`, which remembers the strings it found clean, agrees with redaction on every value
        of a sequence (strings seen before, new strings, keys and values, quotes and backslashes): a value it
        finds clean is one redaction leaves unchanged, and it finds clean what `clean_json` does."""
        from trajdebug.core.codec import dumps

        r = Redactor(pii=("email",) if email else ())
        seen: list[str] = []
        for pieces in texts:
            seen.append("".join(pieces))
            value = {"messages": [{"role": "user", "content": t} for t in seen], "".join(key) or "k": seen[-1]}
            encoded = dumps(value)
            fresh = Redactor(pii=("email",) if email else ())
            assert r.clean_encoded(encoded) == fresh.clean_json(encoded)
            if r.clean_encoded(encoded):
                assert fresh(value) == value

    @settings(max_examples=300, deadline=None)
    @given(
        st.lists(
            st.tuples(
                st.sampled_from(["append", "resend", "drop", "wrap", "number"]),
                st.lists(st.sampled_from([*_ESCAPED, "sk-abcdefghijklmnopqrstuvwx", "api_key", "12"]), max_size=4),
            ),
            min_size=1,
            max_size=8,
        )
    )
    def test_a_snapshot_that_begins_with_a_clean_one_is_judged_as_clean_json_judges_it(
        self, ops: list[tuple[str, list[str]]]
    ) -> None:
        """`clean_encoded` that splits only what follows the head of an earlier clean snapshot (a conversation
        resent, grown, shortened, wrapped in a dict, ending in a number) finds clean exactly what `clean_json`
        does, secrets and secret key names among the new strings included."""
        from trajdebug.core import redaction
        from trajdebug.core.codec import dumps

        was = redaction._redactor._HEAD_MIN
        redaction._redactor._HEAD_MIN = 0  # every snapshot remembered, however short
        try:
            r = Redactor()
            msgs: list[Any] = []
            for op, pieces in ops:
                text = "".join(pieces)
                if op == "drop" and msgs:
                    msgs.pop()
                elif op != "resend":
                    msgs.append({"role": "user", text or "content": text} if op != "number" else len(text))
                value: Any = {"messages": msgs, "n": len(msgs)} if op == "wrap" else msgs
                encoded = dumps(value)
                assert r.clean_encoded(encoded) == Redactor().clean_json(encoded)
        finally:
            redaction._redactor._HEAD_MIN = was

    def test_a_resent_conversation_is_tested_once_per_new_string(self) -> None:
        """A conversation resent with one more message tests only the new message's strings; a secret in it is
        found, and the strings found clean before stay clean."""
        from trajdebug.core.codec import dumps

        r = Redactor()
        msgs = [{"role": "user", "content": f"Order O-{i}: ship to Berlin - tracking: yes"} for i in range(20)]
        assert r.clean_encoded(dumps({"messages": msgs}))
        tested: list[str] = []
        real = r._text_clean
        r._text_clean = lambda s: tested.append(s) or real(s)  # type: ignore[method-assign]
        assert r.clean_encoded(dumps({"messages": [*msgs, {"role": "user", "content": "Next: order O-99"}]}))
        assert tested == ["Next: order O-99"]
        leaked = [*msgs, {"role": "user", "content": "use sk-abcdefghijklmnopqrstuvwx"}]
        assert not r.clean_encoded(dumps({"messages": leaked}))
        assert not r.clean_encoded(dumps({"messages": msgs, "api_key": "x"}))
        assert r.clean_encoded(dumps({"messages": msgs}))

    def test_a_chat_payload_without_secrets_is_clean_in_one_pass(self) -> None:
        """Chat messages of ordinary English (with ``:``, ``-``, capitals and usage counts) are clean for
        `clean_json`, which `clean` cannot tell from its per-string prefilter; a key in one message is found."""
        from trajdebug.core.codec import dumps

        messages = [
            {"role": "system", "content": "You are a careful agent: verify the customer, look up order O-41190."},
            {"role": "user", "content": "Ticket 12: refund 45.20 EUR for customer C-117\nThanks!"},
        ]
        usage = {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240}
        r = Redactor()
        assert r.clean_json(dumps({"messages": messages, "usage": usage}))
        assert not r.clean({"messages": messages})
        leaked = [*messages, {"role": "user", "content": "my key is sk-abcdefghijklmnopqrstuvwx"}]
        assert not r.clean_json(dumps({"messages": leaked}))

    @pytest.mark.parametrize(
        "text",
        [
            "Bearer\nabcdefghijklmnopqrstu",
            "auth: basic\tQWxhZGRpbjpvcGVuIHNlc2FtZQ==",
            'aws_secret_access_key = "' + "A" * 40 + '"',
            'password="hunter22"',
            "token\r\n= abc",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
            "card\n4111 1111-1111 1111\n",
            "pa\u017fsword: x",
        ],
    )
    def test_secrets_across_escaped_characters_are_found(self, text: str) -> None:
        """A secret whose match spans a character JSON escapes (newline, tab, quote, non-ASCII) is not
        taken for clean, from either encoder's text."""
        from trajdebug.core.codec import dumps

        r = Redactor()
        assert r.text(text) != text
        assert not r.clean_json(dumps({"m": text}))
        assert not r.clean_json(json.dumps({"m": text}).encode())
