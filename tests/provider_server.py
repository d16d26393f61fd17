"""A local HTTP server that speaks the OpenAI and Anthropic wire formats, for the real SDKs.

The last user message picks the behaviour: ``MODE:ok`` (default), ``MODE:429``, ``MODE:500``,
``MODE:503``, ``MODE:529``, ``MODE:context``, ``MODE:401``, ``MODE:refusal``, ``MODE:quota``.
Every request is recorded in ``server.requests``.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _mode(body: dict) -> str:
    text = json.dumps(body.get("messages") or body.get("input") or "")
    m = re.search(r"MODE:(\w+)", text)
    return m.group(1) if m else "ok"


def _openai_chat(body, refusal=False):
    message = {"role": "assistant", "content": None if refusal else "a fine answer",
               "refusal": "I can't help with that." if refusal else None}
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000,
            "model": body["model"], "choices": [{"index": 0, "message": message,
                                                 "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500,
                      "prompt_tokens_details": {"cached_tokens": 1000},
                      "completion_tokens_details": {"reasoning_tokens": 100}}}


def _openai_responses(body):
    return {"id": "resp_1", "object": "response", "created_at": 1700000000,
            "model": body["model"], "status": "completed", "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [],
            "output": [{"type": "message", "id": "msg_1", "status": "completed",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": "ok", "annotations": []}]}],
            "usage": {"input_tokens": 500, "output_tokens": 80, "total_tokens": 580,
                      "input_tokens_details": {"cached_tokens": 200},
                      "output_tokens_details": {"reasoning_tokens": 30}}}


def _anthropic(body, refusal=False):
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
            "content": [] if refusal else [{"type": "text", "text": "a fine answer"}],
            "stop_reason": "refusal" if refusal else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 40, "output_tokens": 25, "cache_read_input_tokens": 2000,
                      "cache_creation_input_tokens": 60,
                      "cache_creation": {"ephemeral_5m_input_tokens": 45,
                                         "ephemeral_1h_input_tokens": 15}}}


ERRORS = {
    "429": (429, {"retry-after": "7"}, {"error": {"message": "Rate limit reached",
                                                  "type": "rate_limit_error", "code": None}}),
    "500": (500, {}, {"error": {"message": "server error", "type": "server_error"}}),
    "503": (503, {"retry-after": "3"}, {"error": {"message": "overloaded", "type": "server_error"}}),
    "529": (529, {}, {"type": "error", "error": {"type": "overloaded_error",
                                                 "message": "Overloaded"}}),
    "context": (400, {}, {"error": {"message": "maximum context length is 128000 tokens",
                                    "type": "invalid_request_error",
                                    "code": "context_length_exceeded"}}),
    "401": (401, {}, {"error": {"message": "Incorrect API key", "type": "authentication_error",
                                "code": "invalid_api_key"}}),
    "quota": (429, {}, {"error": {"message": "You exceeded your current quota",
                                  "type": "insufficient_quota", "code": "insufficient_quota"}}),
}


class _Handler(BaseHTTPRequestHandler):
    server_version = "fake-llm/1"

    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        mode = _mode(body)
        self.server.requests.append((self.path, mode))
        if mode in ERRORS:
            status, headers, payload = ERRORS[mode]
        else:
            status, headers = 200, {}
            refusal = mode == "refusal"
            if self.path.endswith("/chat/completions"):
                payload = _openai_chat(body, refusal)
            elif self.path.endswith("/responses"):
                payload = _openai_responses(body)
            elif self.path.endswith("/messages"):
                payload = _anthropic(body, refusal)
            else:
                status, payload = 404, {"error": {"message": "no such route"}}
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


class FakeProviderServer:
    def __enter__(self) -> "FakeProviderServer":
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.requests = []
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def requests(self) -> list:
        return self.httpd.requests

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
