"""A local HTTP server speaking the Anthropic Messages, OpenAI Chat Completions and OpenAI
Embeddings wire formats.

One threaded server on 127.0.0.1:0 answers `/v1/messages`, `/v1/chat/completions` and
`/v1/embeddings`, so the real SDKs can be driven without network. Replies are programmable: a
FIFO script of `Reply` objects, then a default; faults (429 with Retry-After, 5xx, slow bodies,
malformed JSON, truncated output) are replies like any other. An optional server-side token bucket returns 429
when callers exceed a configured request rate, which is what the gateway benchmark runs against.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

ReplyKind = Literal["text", "json", "status", "malformed", "truncated"]


@dataclass
class Reply:
    kind: ReplyKind = "text"
    text: str = "ok"
    # kind="json": answered as tool call or JSON text; on /v1/embeddings, the whole response body
    data: dict[str, Any] | None = None
    status: int = 200
    retry_after: str | None = None
    delay_s: float = 0.0
    usage: tuple[int, int, int] = (12, 7, 0)  # input (incl. cached), output, cached

    @classmethod
    def ok(cls, text: str, *, delay_s: float = 0.0, usage: tuple[int, int, int] = (12, 7, 0)) -> Reply:
        return cls("text", text=text, delay_s=delay_s, usage=usage)

    @classmethod
    def json(cls, data: dict[str, Any]) -> Reply:
        return cls("json", data=data)

    @classmethod
    def error(cls, status: int, retry_after: str | None = None) -> Reply:
        return cls("status", status=status, retry_after=retry_after)

    @classmethod
    def malformed(cls) -> Reply:
        return cls("malformed")

    @classmethod
    def truncated(cls, text: str) -> Reply:
        return cls("truncated", text=text)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    images: int = 0


@dataclass
class _Bucket:
    """Server-side rate limit: `rate` requests per second, at most `capacity` in a burst."""

    rate: float
    capacity: float
    level: float = 0.0
    stamp: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self) -> float | None:
        """None when admitted; otherwise seconds until a request would be admitted."""
        with self.lock:
            now = time.monotonic()
            self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
            self.stamp = now
            if self.level >= 1.0:
                self.level -= 1.0
                return None
            return (1.0 - self.level) / self.rate


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (a cancelled call, engine/cancel.py) is expected, not an error.
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


class FakeLLMServer:
    def __init__(self, default: Reply | None = None) -> None:
        self.default = default or Reply.ok("hello from fake")
        self.handler: Callable[[Recorded], Reply] | None = None
        self.requests: list[Recorded] = []
        self.rejected_429 = 0
        # GET paths answered with JSON, as a real server describes itself (llama.cpp's /props,
        # vLLM's /v1/models); any other GET is a 404.
        self.pages: dict[str, Any] = {}
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._bucket: _Bucket | None = None
        self._server = _Server(("127.0.0.1", 0), _make_handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    # -- control ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def rate_limit(self, per_second: float, burst: float = 1.0) -> None:
        self._bucket = _Bucket(rate=per_second, capacity=burst, level=burst)

    def __enter__(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- serving ---------------------------------------------------------------------------
    def _next_reply(self, rec: Recorded) -> Reply:
        with self._lock:
            self.requests.append(rec)
            if self._script:
                return self._script.popleft()
        return self.handler(rec) if self.handler else self.default

    def respond(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], bytes]:
        body = json.loads(raw or b"{}")
        if self._bucket is not None:
            wait = self._bucket.take()
            if wait is not None:
                with self._lock:
                    self.rejected_429 += 1
                return _error(429, "rate limited", {"retry-after": f"{wait:.3f}"})
        try:
            images = _count_images(path, body)
        except ValueError as exc:
            return _error(400, str(exc))
        rec = Recorded(path=path, headers=headers, body=body, images=images)
        reply = self._next_reply(rec)
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.kind == "status":
            extra = {"retry-after": reply.retry_after} if reply.retry_after else {}
            return _error(reply.status, f"scripted {reply.status}", extra)
        if reply.kind == "malformed":
            return 200, {"content-type": "application/json"}, b'{"id": "msg_1", "content": [ {"ty'
        if path.endswith("/embeddings"):
            if body.get("encoding_format") != "float":
                return _error(400, "this fake server only speaks encoding_format=float")
            payload = reply.data if reply.kind == "json" else _embeddings_body(body, reply)
            return 200, {"content-type": "application/json"}, json.dumps(payload).encode()
        build = _anthropic_body if path.endswith("/messages") else _openai_body
        return 200, {"content-type": "application/json"}, json.dumps(build(body, reply)).encode()

    @property
    def embedding_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/embeddings")]


def _error(
    status: int, message: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    payload = {"type": "error", "error": {"type": "api_error", "message": message}}
    return status, {"content-type": "application/json", **(headers or {})}, json.dumps(payload).encode()


def _check_png(b64: str) -> None:
    if not base64.b64decode(b64).startswith(PNG_MAGIC):
        raise ValueError("image data is not a PNG")


def _count_images(path: str, body: dict[str, Any]) -> int:
    """Count image parts, rejecting any that is not in this API's own format (a 400, as real APIs do)."""
    count = 0
    for msg in body.get("messages", []):
        content = msg.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if path.endswith("/messages") and part.get("type") == "image":
                src = part["source"]
                if src.get("type") != "base64" or src.get("media_type") != "image/png":
                    raise ValueError("anthropic image must be a base64 PNG source")
                _check_png(src["data"])
                count += 1
            elif path.endswith("/chat/completions") and part.get("type") == "image_url":
                url = part["image_url"]["url"]
                prefix = "data:image/png;base64,"
                if not url.startswith(prefix):
                    raise ValueError("openai image must be a PNG data URL")
                _check_png(url[len(prefix) :])
                count += 1
            elif part.get("type") not in ("text",):
                raise ValueError(f"unexpected content part {part.get('type')!r} for {path}")
    return count


def _anthropic_body(req: dict[str, Any], reply: Reply) -> dict[str, Any]:
    stop = "end_turn"
    if reply.kind == "json" and req.get("tools"):
        tool = req["tools"][0]["name"]
        content: list[dict[str, Any]] = [
            {"type": "tool_use", "id": "toolu_1", "name": tool, "input": reply.data}
        ]
        stop = "tool_use"
    elif reply.kind == "json" and (req.get("output_config") or {}).get("format"):
        content = [{"type": "text", "text": json.dumps(reply.data)}]
    elif reply.kind == "json":
        content = [{"type": "text", "text": f"Here it is:\n```json\n{json.dumps(reply.data)}\n```\nDone."}]
    else:
        content = [{"type": "text", "text": reply.text}]
        stop = "max_tokens" if reply.kind == "truncated" else "end_turn"
    inp, out, cached = reply.usage
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": req.get("model", "fake"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": inp - cached, "output_tokens": out, "cache_read_input_tokens": cached},
    }


def _openai_body(req: dict[str, Any], reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    finish = "stop"
    if reply.kind == "json" and req.get("tools"):
        name = req["tools"][0]["function"]["name"]
        call = {
            "id": "call_1",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(reply.data)},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    elif reply.kind == "json" and (req.get("response_format") or {}).get("type") == "json_schema":
        message["content"] = json.dumps(reply.data)
    elif reply.kind == "json":
        message["content"] = f"Sure.\n```json\n{json.dumps(reply.data)}\n```"
    elif reply.kind == "truncated":
        finish = "length"
    inp, out, cached = reply.usage
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": req.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": inp,
            "completion_tokens": out,
            "total_tokens": inp + out,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def fake_vector(text: str, dims: int = 8) -> list[float]:
    """The vector the fake server returns for `text`: bytes of its SHA-256, scaled to [0, 1]."""
    digest = hashlib.sha256(text.encode()).digest() * (dims // 32 + 1)
    return [b / 255 for b in digest[:dims]]


def _embeddings_body(req: dict[str, Any], reply: Reply) -> dict[str, Any]:
    texts = [req["input"]] if isinstance(req["input"], str) else list(req["input"])
    dims = int(req.get("dimensions") or 8)
    data = [
        {"object": "embedding", "index": i, "embedding": fake_vector(t, dims)} for i, t in enumerate(texts)
    ]
    # Reversed, each with its index: a client that trusts position rather than `index` is caught.
    data.reverse()
    return {
        "object": "list",
        "data": data,
        "model": req.get("model", "fake"),
        "usage": {"prompt_tokens": reply.usage[0], "total_tokens": reply.usage[0]},
    }


def _make_handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # http.server's naming
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, out_headers, payload = server.respond(self.path, headers, raw)
            try:
                self.send_response(status)
                for key, value in out_headers.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test); nothing to answer

        def do_GET(self) -> None:  # http.server's naming
            page = server.pages.get(self.path.split("?")[0])
            status, payload = (200, json.dumps(page).encode()) if page is not None else (404, b"{}")
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:  # silence per-request logging
            return

    return Handler
