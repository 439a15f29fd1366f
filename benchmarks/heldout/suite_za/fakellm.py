"""A tiny OpenAI-compatible Chat Completions server on 127.0.0.1:0 answering from a Python policy."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_POLICY = {"fn": None}
_COUNTER = {"n": 0}


def set_policy(fn):
    _POLICY["fn"] = fn


class _H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        ans = _POLICY["fn"](body.get("messages", []), body.get("tools") or [])
        _COUNTER["n"] += 1
        n = _COUNTER["n"]
        msg = {"role": "assistant", "content": None}
        finish = "stop"
        if isinstance(ans, str):
            msg["content"] = ans
        else:
            calls = []
            for i, (name, args) in enumerate(ans):
                calls.append({"id": f"call_{n}_{i}", "type": "function",
                              "function": {"name": name, "arguments": json.dumps(args)}})
            msg["tool_calls"] = calls
            finish = "tool_calls"
        out = {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": int(time.time()),
               "model": body.get("model", "gpt-4o-mini"),
               "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
               "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Server:
    def __enter__(self):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        return self

    def __exit__(self, *a):
        self.httpd.shutdown()
        self.httpd.server_close()


def last_user(messages):
    for m in reversed(messages):
        if m.get("role") in ("user", "tool"):
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def tool_results(messages):
    """Contents of tool messages after the last user message."""
    out = []
    for m in messages:
        if m.get("role") == "user":
            out = []
        elif m.get("role") == "tool":
            out.append(m.get("content"))
    return out
