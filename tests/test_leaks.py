"""Planted secrets never leave trajdebug from a foreign source: on every write and render path.

Nineteen secret shapes (every value rule of `trajdebug.core.redaction`, the opt-in
e-mail class included), each after a space and glued to a character outside
ASCII, are planted in a multi-agent transcript (message text, speaker names,
run metadata, the failure reason) and in an OTLP file
(attributes, span names, status messages).  Each file goes through every
command that writes or renders what it holds: ``import`` into a store and a
JSONL file, ``export`` to OTLP and Parquet, ``report`` (HTML), ``show`` (text
and ``--json``), and ``serve`` (the run list, a run's page, the JSON API), and
every byte each leaves (files, stdout, stderr, HTTP bodies) is scanned.

Phone numbers are not among the shapes: `trajdebug.core.redaction` has no phone rule.
"""

from __future__ import annotations

import base64
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import trajdebug
from trajdebug.core.jsonl import write_jsonl
from trajdebug.core.model import Run
from trajdebug.sources.load import read_source
from trajdebug.store import Store


# (shape, the secret as it appears in text)
SHAPES: list[tuple[str, str]] = [
    ("OpenAI API key", "sk-proj-Abc123Def456Ghi789Jkl012"),
    ("Anthropic API key", "sk-ant-api03-Zyx987Wvu654Tsr321Qpo0"),
    ("Stripe secret key", "sk_live_51HabcdefghijklmnopQRS"),
    ("GitHub token", "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("GitHub fine-grained token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv"),
    ("AWS access key id", "AKIAIOSFODNN7EXAMPLE"),
    ("AWS secret access key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("Google API key", "AIzaSyD-1234567890abcdefghijklmnopqrstu"),
    ("Hugging Face token", "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH"),
    ("Azure account key", "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5d2FsZG8="),
    ("Slack token", "xoxb-1234567890-abcdefghijkl"),
    ("bearer token", "abcdefghijklmnop1234567890bearer"),
    ("basic auth", base64.b64encode(b"admin:s3cretpass").decode()),
    ("JWT", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    ("private key block", "MIIEpAIBAAKCAQEA7zqPRIVATEKEYBODY"),
    ("password in a URL", "Pa55w0rdXyzURL"),
    ("password assignment", "hunter2hunter2"),
    ("credit card", "4111 1111 1111 1111"),
    ("e-mail address", "ana.secret@example.com"),
]

_TEXTS = [
    f"use {SHAPES[0][1]} for this",
    f"and {SHAPES[1][1]} for claude",
    f"charge with {SHAPES[2][1]}",
    f"git clone with {SHAPES[3][1]}",
    f"GH={SHAPES[4][1]}",
    f"key id {SHAPES[5][1]} in env",
    f"aws_secret_access_key = {SHAPES[6][1]}",
    f"maps key {SHAPES[7][1]} ok",
    f"HF {SHAPES[8][1]}",
    f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={SHAPES[9][1]};EndpointSuffix=core.windows.net",
    f"post via {SHAPES[10][1]} now",
    f"Authorization: Bearer {SHAPES[11][1]}",
    f"Authorization: Basic {SHAPES[12][1]}",
    f"token {SHAPES[13][1]}",
    f"-----BEGIN RSA PRIVATE KEY-----\n{SHAPES[14][1]}\n-----END RSA PRIVATE KEY-----",
    f"connect to postgres://app:{SHAPES[15][1]}@db.internal:5432/sales",
    f"retrying login with password={SHAPES[16][1]} failed",
    f"paid with {SHAPES[17][1]}, thanks",
    f"mail {SHAPES[18][1]} about it",
]
_GLUED = [
    f"用密钥{SHAPES[0][1]}调用",
    f"claude的token是{SHAPES[1][1]}",
    f"paiement par la cl\u00e9{SHAPES[2][1]}",
    f"令牌{SHAPES[3][1]}克隆",
    f"GH令牌{SHAPES[4][1]}",
    f"密钥{SHAPES[5][1]}在环境里",
    f"配置aws_secret_access_key = {SHAPES[6][1]}",
    f"\u043a\u043b\u044e\u0447{SHAPES[7][1]}",
    f"\u0645\u0641\u062a\u0627\u062d{SHAPES[8][1]}",
    f"连接串AccountKey={SHAPES[9][1]};",
    f"通过{SHAPES[10][1]}发送",
    f"认证Bearer {SHAPES[11][1]}",
    f"认证Basic {SHAPES[12][1]}",
    f"\uff21{SHAPES[13][1]}",
    f"私钥-----BEGIN RSA PRIVATE KEY-----\n{SHAPES[14][1]}\n-----END RSA PRIVATE KEY-----",
    f"连接postgres://app:{SHAPES[15][1]}@db.internal:5432/sales",
    f"重试password={SHAPES[16][1]}失败",
    f"用卡\uff14{SHAPES[17][1]}付款",
    f"邮件{SHAPES[18][1]}关于",
]
"""The same secrets glued to CJK, Cyrillic, Arabic, accented and full-width characters (CJK text often has no
space before a value)."""
SECRETS = [s for _, s in SHAPES]
ENV = {"TRAJDEBUG_REDACT_PII": "email"}


def test_there_are_nineteen_shapes_each_planted() -> None:
    """The nineteen shapes are distinct and each text, spaced and glued, plants its secret."""
    assert len(SHAPES) == 19 == len({s for _, s in SHAPES})
    assert all(secret in text for (_, secret), text in zip(SHAPES, _TEXTS, strict=True))
    assert all(secret in text for (_, secret), text in zip(SHAPES, _GLUED, strict=True))


def _transcript(path: Path) -> Path:
    messages = [{"role": "user", "name": "Planner", "content": t} for t in _TEXTS[:10]]
    messages += [{"role": "assistant", "name": f"Coder {SHAPES[0][1]}", "content": t} for t in _TEXTS[10:]]
    messages += [{"role": "user", "name": f"规划{SHAPES[0][1]}", "content": t} for t in _GLUED]
    reason = " / ".join(_TEXTS) + "".join(_GLUED)
    doc = {"messages": messages, "outcome": "failure", "failure_reason": reason, "config": {"note": _GLUED[16]}}
    path.write_text(json.dumps(doc))
    return path


def _otlp(path: Path) -> Path:
    spans = []
    texts = _TEXTS + _GLUED
    for i, text in enumerate(texts):
        spans.append(
            {
                "traceId": "0" * 31 + "1",
                "spanId": f"{i + 1:016x}",
                "parentSpanId": "" if i == 0 else "0" * 15 + "1",
                "name": f"tool {text}" if i % 2 else "tool",
                "startTimeUnixNano": str(1000 + i),
                "endTimeUnixNano": str(2000 + i),
                "attributes": [{"key": "input.value", "value": {"stringValue": text}}, {"key": "note", "value": {"stringValue": text}}],
                "status": {"code": 2, "message": text} if i in (len(_TEXTS) - 1, len(texts) - 1) else {},
            }
        )
    path.write_text(json.dumps({"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": _TEXTS[0]}}]}, "scopeSpans": [{"spans": spans}]}]}))
    return path


def _leaks(blob: bytes | str) -> list[str]:
    data = blob.encode() if isinstance(blob, str) else blob
    return [s for s in SECRETS if s.encode() in data or json.dumps(s)[1:-1].encode() in data]


def _scan(folder: Path) -> list[tuple[str, str]]:
    return [(f.name, s) for f in folder.rglob("*") if f.is_file() for s in _leaks(f.read_bytes())]


@pytest.mark.parametrize("kind", ["transcript", "otlp"])
def test_no_secret_leaves_any_command(kind: str, tmp_path: Path, cli_run: Any) -> None:
    """import (store, JSONL), export (OTLP, Parquet), report, show and show --json leave none of the 19 secrets in
    any file or output."""
    src = (_transcript if kind == "transcript" else _otlp)(tmp_path / f"{kind}.json")
    assert len(_leaks(src.read_bytes())) == 19  # the scan finds what is there
    out = tmp_path / "out"
    out.mkdir()
    commands = [
        ("import", str(src), "-o", str(out / "imported.db")),
        ("import", str(src), "-o", str(out / "imported.jsonl")),
        ("import", str(src), "-o", str(out / "imported2.jsonl"), "--json"),
        ("export", str(src), "-o", str(out / "spans.json")),
        ("export", str(src), "--to", "parquet", "-o", str(out / "dataset")),
        ("report", str(src), "-o", str(out / "report.html")),
        ("show", str(src)),
        ("show", str(src), "--json"),
    ]
    outputs = []
    for args in commands:
        got = cli_run(*args, env=ENV)
        assert got.returncode == 0, (args, got.stderr)
        outputs.append((args[0], _leaks(got.stdout) + _leaks(got.stderr)))
    assert {"imported.db", "imported.jsonl", "spans.json", "dataset", "report.html"} <= {f.name for f in out.iterdir()}
    assert list((out / "dataset").rglob("*.parquet"))
    assert [] == _scan(out)
    assert [] == [(c, leaked) for c, leaked in outputs if leaked]


def test_serve_of_a_foreign_source_shows_no_secret(tmp_path: Path) -> None:
    """serve's run list, a run's page and the JSON API of a foreign transcript hold none of the 19 secrets."""
    from trajdebug.serve import Server

    src = _transcript(tmp_path / "t.json")
    trajdebug.configure(redact_pii=("email",))
    with Server(src, port=0) as srv:
        base = f"http://127.0.0.1:{srv.port}"
        bodies = [urllib.request.urlopen(base + p, timeout=30).read() for p in ("/", "/api/runs")]
        run_id = json.loads(bodies[1])["runs"][0]["run_id"]
        bodies.append(urllib.request.urlopen(f"{base}/runs/{run_id}", timeout=60).read())
    assert all(len(b) > 100 for b in bodies)
    assert [] == [s for b in bodies for s in _leaks(b)]


def test_failure_reason_is_redacted_on_every_whole_run_write(tmp_path: Path) -> None:
    """A run's failure reason holding a secret is redacted by write_jsonl and Store.save_run (the end record)."""
    run = Run("r1", "run", outcome="failure", failure_reason=" / ".join(_TEXTS[:18]))
    write_jsonl([run], tmp_path / "w.jsonl")
    with Store(tmp_path / "s.db") as st:
        st.save_run(run)
    assert [] == _leaks((tmp_path / "w.jsonl").read_bytes())
    assert [] == _scan(tmp_path)
    with Store(tmp_path / "s.db") as st:
        assert st.load_run("r1").metadata["recorder"]["redacted"]


def test_reading_a_foreign_source_redacts_it(tmp_path: Path) -> None:
    """read_source of a foreign file gives runs without the secrets, and counts what it scrubbed."""
    trajdebug.configure(redact_pii=("email",))
    got = read_source(_otlp(tmp_path / "o.json"))
    text = json.dumps([trajdebug.core.schema.run_to_dict(r) for r in got.runs], default=str)
    assert [] == _leaks(text)
    assert got.runs[0].metadata["recorder"]["redacted"]


def _attr(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": value}


def _s(text: str) -> dict[str, str]:
    return {"stringValue": text}


def _span_everywhere(trace: int, i: int, text: str) -> dict[str, Any]:
    """A span carrying ``text`` in every place a span can: its name, string, array and key-value list
    attributes (flat, JSON inside a string, an LLM span's flattened messages and tool call, GenAI messages),
    an attribute named as a secret, an event's name and attributes, a link's attributes, its status message."""
    messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": text}]}])
    kind = ("LLM", "TOOL", "AGENT")[i % 3]
    return {
        "traceId": f"{trace + 1:032x}",
        "spanId": f"{trace + 1:08x}{i + 1:08x}",
        "parentSpanId": "" if i == 0 else f"{trace + 1:08x}{1:08x}",
        "name": f"step {text}",
        "startTimeUnixNano": str(1000 + i),
        "endTimeUnixNano": str(2000 + i),
        "attributes": [
            _attr("openinference.span.kind", _s(kind)),
            _attr("input.value", _s(json.dumps({"q": text, "nested": {"why": text}}))),
            _attr("output.value", _s(text)),
            _attr("note", _s(f"caf\u00e9 \u2014 {text} \u00e9t\u00e9")),
            _attr("tags", {"arrayValue": {"values": [_s(text), _s("plain")]}}),
            _attr("config", {"kvlistValue": {"values": [_attr("inner", _s(text))]}}),
            _attr("password", _s("plain words here")),
            _attr(f"header {text}", _s("x")),
            _attr("llm.input_messages.0.message.role", _s("user")),
            _attr("llm.input_messages.0.message.content", _s(text)),
            _attr("llm.output_messages.0.message.role", _s("assistant")),
            _attr("llm.output_messages.0.message.tool_calls.0.tool_call.id", _s(f"call_{i}")),
            _attr("llm.output_messages.0.message.tool_calls.0.tool_call.function.name", _s("lookup")),
            _attr("llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments", _s(json.dumps({"a": text}))),
            _attr("gen_ai.input.messages", _s(messages)),
        ],
        "events": [
            {"name": f"exception {text}", "timeUnixNano": str(1500 + i), "attributes": [
                _attr("exception.type", _s("ValueError")), _attr("exception.message", _s(text)),
                _attr("exception.stacktrace", _s(f'Traceback:\n  File "a.py"\n{text}')),
            ]},
        ],
        "links": [{"traceId": f"{trace + 1:032x}", "spanId": f"{trace + 1:08x}{1:08x}", "attributes": [_attr("why", _s(text))]}],
        "status": {"code": 2, "message": text},
    }


def test_import_of_otlp_lines_redacts_every_place_a_span_holds(tmp_path: Path, cli_run: Any) -> None:
    """``import --from otlp`` of JSON Lines whose spans carry each of the 19 secrets in every place a span can
    (several runs, so the redactor's memory of strings seen is warm, and each secret also in a later run)
    writes none of them, and writes what redacting every record the general way writes, byte for byte."""
    from trajdebug.core.codec import dumps_line
    from trajdebug.core.redaction import set_policy
    from trajdebug.core.schema import run_to_records
    from trajdebug.sources.formats.otlp import iter_otlp

    lines = []
    for trace in range(4):
        texts = _TEXTS[trace % 2 :: 2] + _GLUED[(trace + 1) % 2 :: 2] + _TEXTS[:3] + _GLUED[:3]
        spans = [_span_everywhere(trace, i, text) for i, text in enumerate(texts)]
        resource = {"attributes": [_attr("service.name", _s(_TEXTS[trace])), _attr("session.id", _s("s-1"))]}
        scope = {"scope": {"name": f"scope {_TEXTS[trace + 4]}"}, "spans": spans}
        lines.append(json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [scope]}]}))
    src = tmp_path / "spans.jsonl"
    src.write_text("\n".join(lines) + "\n")
    assert len(_leaks(src.read_bytes())) == 19
    out = tmp_path / "out.jsonl"
    got = cli_run("import", str(src), "--from", "otlp", "-o", str(out), env=ENV)
    assert got.returncode == 0, got.stderr
    written = out.read_bytes()
    assert [] == _leaks(written) + _leaks(got.stdout) + _leaks(got.stderr)
    set_policy(pii=("email",))
    general = b"".join(dumps_line(r) for run in iter_otlp(src, []) for r in run_to_records(run))
    assert written == general
