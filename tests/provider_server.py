"""A local HTTP server that speaks the OpenAI and Anthropic wire formats, for the real SDKs.

The last user message picks the behaviour: ``MODE:ok`` (default), ``MODE:429``, ``MODE:500``,
``MODE:503``, ``MODE:529``, ``MODE:context``, ``MODE:401``, ``MODE:refusal``, ``MODE:quota``.
Every request is recorded in ``server.requests``.

Rate limits: ``FakeProviderServer(requests=N, tokens=T, window_s=W)`` admits at most N calls
(and T tokens of usage) per fixed window of W seconds, starting at the first call, and answers
every call with the provider's rate-limit headers: OpenAI's ``x-ratelimit-*`` (resets as
durations such as ``1.25s``) on its endpoints, Anthropic's ``anthropic-ratelimit-*`` (resets as
RFC 3339 times) on ``/v1/messages``. A call over the limit is refused 429 with those headers and
``Retry-After``; ``server.admitted`` holds the times of the calls let through, ``server.refused``
counts the refusals.
Agents: a chat completion (or a Responses API request) whose messages hold ``AGENT:<n>`` plays
a model that calls a tool ``n`` times, then answers (``tests/agent_replies.py``); each such
request is recorded as ``agent-<k>``, ``k`` the tool results it was sent, so a test reads the
bill step by step, and its body in ``server.asked``. Such a chat completion asked with
``stream`` is answered as server-sent events; ``server.hold`` keeps one in flight.

Batches: OpenAI's files and ``/v1/batches`` and Anthropic's ``/v1/messages/batches`` endpoints.
A batch stays in progress until the test calls ``server.finish(batch_id)`` (optionally with
only the first ``answered`` items answered and the batch ``expired``); each item's answer
follows its own ``MODE:``, as a call's would. Uploads are counted in ``server.uploads``.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from datetime import UTC, datetime
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from tests.agent_replies import agent_chat, agent_response, chunks


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


def _usage_tokens(payload: dict) -> int:
    usage = payload.get("usage") or {}
    if "prompt_tokens" in usage:
        return usage["prompt_tokens"] + usage["completion_tokens"]
    return sum(v for k, v in usage.items() if k.endswith("tokens") and isinstance(v, int)
               and k != "total_tokens")


class _Limiter:
    """A provider's per-window request and token limits (fixed windows)."""

    def __init__(self, requests: int, tokens: int | None, window_s: float) -> None:
        self.requests, self.tokens, self.window_s = requests, tokens, window_s
        self.start: float | None = None
        self.used_requests = self.used_tokens = 0
        self.admitted: list[float] = []
        self.refused = 0

    def take(self, tokens: int) -> tuple[bool, dict[str, str], dict[str, str]]:
        """Admit a call of ``tokens`` or refuse it: (admitted, OpenAI headers, Anthropic
        headers), the headers telling what is left after it."""
        now = time.time()
        if self.start is None or now >= self.start + self.window_s:
            self.start, self.used_requests, self.used_tokens = now, 0, 0
        ok = self.used_requests < self.requests and (
            self.tokens is None or self.used_tokens + tokens <= self.tokens)
        if ok:
            self.used_requests += 1
            self.used_tokens += tokens
            self.admitted.append(now)
        else:
            self.refused += 1
        reset = self.start + self.window_s - now
        at = datetime.fromtimestamp(self.start + self.window_s, UTC).isoformat()
        left = self.requests - self.used_requests
        openai = {"x-ratelimit-limit-requests": str(self.requests),
                  "x-ratelimit-remaining-requests": str(left),
                  "x-ratelimit-reset-requests": f"{reset:.3f}s"}
        anthropic = {"anthropic-ratelimit-requests-limit": str(self.requests),
                     "anthropic-ratelimit-requests-remaining": str(left),
                     "anthropic-ratelimit-requests-reset": at}
        if self.tokens is not None:
            openai.update({"x-ratelimit-limit-tokens": str(self.tokens),
                           "x-ratelimit-remaining-tokens": str(self.tokens - self.used_tokens),
                           "x-ratelimit-reset-tokens": f"{int(reset * 1000)}ms"})
            anthropic.update({
                "anthropic-ratelimit-tokens-limit": str(self.tokens),
                "anthropic-ratelimit-tokens-remaining": str(self.tokens - self.used_tokens),
                "anthropic-ratelimit-tokens-reset": at})
        if not ok:
            openai["retry-after"] = anthropic["retry-after"] = str(max(1, math.ceil(reset)))
        return ok, openai, anthropic


def _answer(path: str, body: dict) -> tuple[int, dict]:
    """One request's status and body, as the call endpoints answer it."""
    mode = _mode(body)
    if mode in ERRORS:
        status, _, payload = ERRORS[mode]
        return status, payload
    if path.endswith("/messages"):
        return 200, _anthropic(body, mode == "refusal")
    if path.endswith("/responses"):
        return 200, _openai_responses(body)
    return 200, _openai_chat(body, mode == "refusal")


def _openai_batch(b: dict) -> dict:
    items = b["items"]
    done = [k for k in items if k in b["answers"] and b["answers"][k][0] == 200]
    return {"id": b["id"], "object": "batch", "endpoint": b["endpoint"],
            "input_file_id": b["input_file_id"], "completion_window": "24h",
            "status": b["status"], "created_at": b.get("created_at", 1700000000),
            "metadata": b["metadata"],
            "output_file_id": b.get("output_file_id"), "error_file_id": b.get("error_file_id"),
            "request_counts": {"total": len(items), "completed": len(done),
                               "failed": len(b["answers"]) - len(done)}}


def _anthropic_batch(b: dict, url: str) -> dict:
    ended = b["status"] != "in_progress"
    ok = sum(1 for s, _ in b["answers"].values() if s == 200)
    return {"id": b["id"], "type": "message_batch",
            "processing_status": "ended" if ended else b["status"],
            "request_counts": {"processing": 0 if ended else len(b["items"]),
                               "succeeded": ok, "errored": len(b["answers"]) - ok,
                               "canceled": len(b["items"]) - len(b["answers"])
                               if b["status"] == "canceled" else 0,
                               "expired": len(b["items"]) - len(b["answers"])
                               if b["status"] == "expired" else 0},
            "created_at": "2026-01-01T00:00:00Z", "expires_at": "2026-01-02T00:00:00Z",
            "ended_at": "2026-01-01T01:00:00Z" if ended else None, "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{url}/v1/messages/batches/{b['id']}/results" if ended else None}


class _Handler(BaseHTTPRequestHandler):
    server_version = "fake-llm/1"

    def log_message(self, *args):  # quiet
        pass

    def _send(self, status: int, payload, content_type: str = "application/json",
              headers: dict | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802
        srv = self.server
        path = self.path.split("?")[0]
        srv.requests.append((self.path, "GET"))
        parts = path.strip("/").split("/")
        with srv.lock:
            if path == "/v1/batches":  # newest first, in pages (``limit``, ``after``)
                query = parse_qs(urlsplit(self.path).query)
                every = [b for b in reversed(srv.batches.values()) if b["kind"] == "openai"]
                ids = [b["id"] for b in every]
                start = ids.index(query["after"][0]) + 1 if "after" in query else 0
                limit = int(query.get("limit", ["20"])[0])
                data = [_openai_batch(b) for b in every[start:start + limit]]
                return self._send(200, {"object": "list", "data": data,
                                        "has_more": start + limit < len(every),
                                        "first_id": data[0]["id"] if data else None,
                                        "last_id": data[-1]["id"] if data else None})
            if parts[:2] == ["v1", "batches"] and parts[2] in srv.batches:
                return self._send(200, _openai_batch(srv.batches[parts[2]]))
            if parts[:2] == ["v1", "files"] and parts[-1] == "content":
                return self._send(200, srv.files[parts[2]], "application/octet-stream")
            if parts[:2] == ["v1", "responses"] and parts[2] in srv.batches:
                return self._send(200, _response_of(srv.batches[parts[2]]))
            if parts[:3] == ["v1", "messages", "batches"] and parts[3] in srv.batches:
                b = srv.batches[parts[3]]
                if parts[-1] == "results":
                    lines = "".join(json.dumps(_anthropic_result(k, *b["answers"][k])) + "\n"
                                    if k in b["answers"] else json.dumps(
                                        {"custom_id": k, "result": {"type": b["status"]}}) + "\n"
                                    for k in b["items"])
                    return self._send(200, lines.encode(), "application/binary")
                return self._send(200, _anthropic_batch(b, srv.url))
        self._send(404, {"error": {"message": "no such route"}})

    def _background(self, body: dict) -> None:
        """``POST /v1/responses`` with ``background``: queued until ``finish``."""
        srv = self.server
        with srv.lock:
            rid = f"resp_bg_{len(srv.batches) + 1}"
            srv.batches[rid] = {"id": rid, "kind": "response", "status": "queued",
                                "answers": {}, "items": {"r": ("/v1/responses", body)}}
            srv.uploads.append(rid)
            srv.requests.append((self.path, "background"))
            self._send(200, _response_of(srv.batches[rid]))

    def _batch_post(self, raw: bytes) -> bool:
        """The batch endpoints' POSTs; False: not one of them."""
        srv = self.server
        path = self.path.split("?")[0]
        parts = path.strip("/").split("/")
        with srv.lock:
            if path == "/v1/files":
                ctype = self.headers.get("content-type", "")
                msg = BytesParser().parsebytes(f"Content-Type: {ctype}\r\n\r\n".encode() + raw)
                content = next(p.get_payload(decode=True) for p in msg.get_payload()
                               if p.get_param("name", header="content-disposition") == "file")
                fid = f"file-{len(srv.files) + 1}"
                srv.files[fid] = content
                self._send(200, {"id": fid, "object": "file", "bytes": len(content),
                                 "created_at": 1700000000, "filename": "batch.jsonl",
                                 "purpose": "batch", "status": "processed"})
                return True
            if path == "/v1/batches":
                body = json.loads(raw)
                lines = [json.loads(x) for x in srv.files[body["input_file_id"]].splitlines()
                         if x.strip()]
                bid = f"batch_{len(srv.batches) + 1}"
                srv.batches[bid] = {
                    "id": bid, "kind": "openai", "status": "in_progress",
                    "created_at": int(time.time()),
                    "endpoint": body["endpoint"], "input_file_id": body["input_file_id"],
                    "metadata": body.get("metadata"), "answers": {},
                    "items": {x["custom_id"]: (x["url"], x["body"]) for x in lines}}
                srv.uploads.append(bid)
                self._send(200, _openai_batch(srv.batches[bid]))
                return True
            if path == "/v1/messages/batches":
                body = json.loads(raw)
                bad = [r["custom_id"] for r in body["requests"]
                       if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", r["custom_id"])]
                if bad:  # what Message Batches answer
                    self._send(400, {"type": "error", "error": {
                        "type": "invalid_request_error",
                        "message": f"requests.0.custom_id: String should match pattern "
                                   f"'^[a-zA-Z0-9_-]{{1,64}}$' ({bad[0]!r})"}})
                    return True
                bid = f"msgbatch_{len(srv.batches) + 1}"
                srv.batches[bid] = {
                    "id": bid, "kind": "anthropic", "status": "in_progress", "answers": {},
                    "items": {r["custom_id"]: ("/v1/messages", r["params"])
                              for r in body["requests"]}}
                srv.uploads.append(bid)
                self._send(200, _anthropic_batch(srv.batches[bid], srv.url))
                return True
            if parts[-1] == "cancel" and parts[-2] in srv.batches \
                    and srv.batches[parts[-2]]["kind"] != "response":
                b = srv.batches[parts[-2]]
                b["status"] = "cancelled" if b["kind"] == "openai" else "canceled"
                srv.finish_locked(b["id"], b["status"], 0)
                self._send(200, _openai_batch(b) if b["kind"] == "openai"
                           else _anthropic_batch(b, srv.url))
                return True
        return False

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        if self.path.endswith("/responses") and json.loads(raw or b"{}").get("background"):
            return self._background(json.loads(raw))
        if "batches" in self.path or self.path.startswith("/v1/files"):
            self.server.requests.append((self.path, "batch"))
            if self._batch_post(raw):
                return
        body = json.loads(raw or b"{}")
        mode = _mode(body)
        steps = re.search(r"AGENT:(\d+)", json.dumps(body.get("messages")
                                                      or body.get("input") or ""))
        if steps and mode not in ERRORS and self.path.endswith("/responses"):
            answer = agent_response(body, int(steps.group(1)), _openai_responses(body))
            self.server.requests.append((self.path, f"agent-{answer['id'][5:]}"))
            self.server.asked.append(body)
            return self._send(200, answer)
        if steps and mode not in ERRORS and self.path.endswith("/chat/completions"):
            answer = agent_chat(body, int(steps.group(1)), _openai_chat(body))
            done = sum(1 for m in body["messages"] if m.get("role") == "tool")
            self.server.requests.append((self.path, f"agent-{done}"))
            self.server.asked.append(body)
            gate = self.server.held.pop(f"agent-{done}", None)
            if gate is not None:  # in flight until the test lets it go (or kills the caller)
                gate.wait(60)
            if body.get("stream"):
                self.server.streams.append(f"agent-{done}")
                usage = bool((body.get("stream_options") or {}).get("include_usage"))
                return self._send(200, chunks(answer, usage), "text/event-stream")
            return self._send(200, answer)
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
        limiter = self.server.limiter
        if limiter is not None and status == 200:
            with self.server.lock:
                ok, oa_headers, an_headers = limiter.take(_usage_tokens(payload))
            headers = {**headers, **(an_headers if self.path.endswith("/messages")
                                     else oa_headers)}
            if not ok:
                status, payload = ERRORS["429"][0], ERRORS["429"][2]
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


def _response_of(b: dict) -> dict:
    """A background response as ``GET /v1/responses/{id}`` shows it."""
    if b["status"] == "completed":
        status, body = b["answers"]["r"]
        if status == 200:
            return dict(body, id=b["id"], background=True)
        return {"id": b["id"], "object": "response", "created_at": 1700000000,
                "model": "m", "status": "failed", "output": [], "background": True,
                "error": {"code": "server_error", "message": json.dumps(body)[:200]},
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}
    return {"id": b["id"], "object": "response", "created_at": 1700000000, "model": "m",
            "status": b["status"], "output": [], "background": True,
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}


def _anthropic_result(key: str, status: int, body: dict) -> dict:
    if status == 200:
        return {"custom_id": key, "result": {"type": "succeeded", "message": body}}
    return {"custom_id": key, "result": {"type": "errored", "error": body}}


class _Server(ThreadingHTTPServer):
    def finish_locked(self, batch_id: str, status: str, answered: int | None) -> None:
        b = self.batches[batch_id]
        items = list(b["items"].items())[:answered]
        b["answers"] = {k: _answer(url, body) for k, (url, body) in items}
        b["status"] = status
        if b["kind"] == "openai":
            ok = [k for k, (s, _) in b["answers"].items() if s == 200]
            bad = [k for k in b["answers"] if k not in ok]
            for name, keys in (("output_file_id", ok), ("error_file_id", bad)):
                if keys:
                    fid = f"file-{len(self.files) + 1}"
                    self.files[fid] = "".join(json.dumps({
                        "id": f"req_{k}", "custom_id": k, "error": None,
                        "response": {"status_code": b["answers"][k][0], "request_id": "r",
                                     "body": b["answers"][k][1]}}) + "\n"
                        for k in keys).encode()
                    b[name] = fid


class FakeProviderServer:
    def __init__(self, *, requests: int | None = None, tokens: int | None = None,
                 window_s: float = 60.0) -> None:
        self.limiter = None if requests is None else _Limiter(requests, tokens, window_s)

    def __enter__(self) -> "FakeProviderServer":
        self.httpd = _Server(("127.0.0.1", 0), _Handler)
        self.httpd.limiter = self.limiter
        self.httpd.requests = []
        self.httpd.batches = {}
        self.httpd.files = {}
        self.httpd.uploads = []
        self.httpd.streams = []
        self.httpd.asked = []
        self.httpd.held = {}
        self.httpd.lock = threading.Lock()
        self.httpd.url = self.url
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def requests(self) -> list:
        return self.httpd.requests

    def hold(self, request: str) -> threading.Event:
        """Keep the next agent request ``request`` (``agent-<k>``) in flight, recorded but
        unanswered, until the returned event is set."""
        gate = self.httpd.held[request] = threading.Event()
        return gate

    @property
    def asked(self) -> list:
        """The bodies of the agent requests, in order."""
        return self.httpd.asked

    @property
    def streams(self) -> list:
        """The agent requests answered as a stream (``agent-<k>``), in order."""
        return self.httpd.streams

    @property
    def admitted(self) -> list[float]:
        """The times of the calls the rate limits let through."""
        return self.limiter.admitted if self.limiter else []

    @property
    def refused(self) -> int:
        """How many calls the rate limits refused (429)."""
        return self.limiter.refused if self.limiter else 0

    @property
    def uploads(self) -> list:
        """The ids of the batches uploaded, in order."""
        return self.httpd.uploads

    def other_batches(self, n: int, *, created_at: int) -> None:
        """``n`` OpenAI batches of someone else on the account, made at ``created_at``."""
        with self.httpd.lock:
            for _ in range(n):
                bid = f"batch_{len(self.httpd.batches) + 1}"
                self.httpd.batches[bid] = {
                    "id": bid, "kind": "openai", "status": "completed", "endpoint":
                    "/v1/chat/completions", "input_file_id": "file-0", "metadata": None,
                    "answers": {}, "items": {}, "created_at": created_at}

    def finish(self, batch_id: str, *, status: str | None = None,
               answered: int | None = None) -> None:
        """End a batch: every item answered (by its ``MODE:``), or only the first
        ``answered`` with the batch ``status`` (``expired``)."""
        with self.httpd.lock:
            kind = self.httpd.batches[batch_id]["kind"]
            self.httpd.finish_locked(batch_id, status or (
                "ended" if kind == "anthropic" else "completed"), answered)

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
