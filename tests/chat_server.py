"""A real OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

Each request takes the next queued behaviour (a reply, an error status, a delay, a
malformed body), or else the responder's answer. The `openai` client talks to it over
real HTTP, so its retries, timeouts and parsing are exercised as they are in use.
"""

from __future__ import annotations

import itertools
import json
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")


@dataclass(frozen=True)
class Reply:
    """A completion with this text; usage computed from the request when None."""

    text: str
    usage: dict[str, int] | None = None
    finish_reason: str = "stop"


@dataclass(frozen=True)
class Status:
    """An error status, with an OpenAI-style error body unless one is given."""

    code: int
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Delay:
    """Sleep, then answer with `then` (the responder when None)."""

    seconds: float
    then: Behaviour | None = None


@dataclass(frozen=True)
class Malformed:
    """A 200 whose body is these raw bytes."""

    body: bytes
    content_type: str = "application/json"


Behaviour = Reply | Status | Delay | Malformed
Responder = Callable[[dict[str, Any]], "str | Behaviour"]


@dataclass(frozen=True)
class Received:
    """One request as it arrived: header names are lower-case, body is parsed JSON or None."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes


def message_text(content: Any) -> str:
    """The text of a message's content, a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def summary_responder(body: dict[str, Any]) -> str:
    """A deterministic summary-shaped answer that tells requests apart."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    chars = sum(len(message_text(m.get("content"))) for m in messages)
    users = [message_text(m.get("content")) for m in messages if m.get("role") == "user"]
    lines = users[-1].strip().splitlines() if users else []
    first = lines[0][:80] if lines else ""
    return f"### Task goal\n- summary of {chars} chars\n- {first}"


def estimated_usage(body: dict[str, Any], text: str) -> dict[str, int]:
    """Token counts at about four characters a token, as a server would report them."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    prompt = sum(len(message_text(m.get("content"))) for m in messages)
    prompt_tokens, completion_tokens = (prompt + 3) // 4, (len(text) + 3) // 4
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def error_body(code: int, message: str | None = None) -> bytes:
    """An OpenAI-style error document for `code`."""
    try:
        phrase = HTTPStatus(code).phrase
    except ValueError:
        phrase = "Error"
    kind = "invalid_request_error" if code < 500 else "server_error"
    error = {"message": message or f"{code} {phrase}", "type": kind, "code": None}
    return json.dumps({"error": error}).encode()


class ChatServer:
    """Context manager: listens on an OS-chosen port of 127.0.0.1 inside the block."""

    def __init__(self, responder: Responder | None = None, script: Iterable[Behaviour] = ()):
        self.responder = responder or summary_responder
        self.requests: list[Received] = []
        self.errors: list[BaseException] = []  # responder failures and server bugs
        self._queue: deque[Behaviour] = deque(script)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, "http://127.0.0.1:PORT/v1"."""
        if self._httpd is None:
            raise RuntimeError("ChatServer is not running: use it as a context manager")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def push(self, *behaviours: Behaviour) -> None:
        """Queue behaviours; each chat request takes the next one, else the responder."""
        with self._lock:
            self._queue.extend(behaviours)

    def __enter__(self) -> ChatServer:
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler, self)
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        name="chat-server", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._httpd is not None and self._thread is not None
        self._stopping.set()  # wakes sleeping delays
        self._httpd.shutdown()
        with self._lock:
            for conn in self._connections:  # wakes handlers idling on keep-alive
                _hang_up(conn)
        self._httpd.server_close()  # joins the handler threads
        self._thread.join()

    def _track(self, conn: socket.socket) -> bool:
        with self._lock:
            if self._stopping.is_set():
                return False
            self._connections.add(conn)
            return True

    def _untrack(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.discard(conn)

    def _record(self, received: Received) -> None:
        with self._lock:
            self.requests.append(received)

    def _next(self) -> Behaviour | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None

    def _respond(self, body: Any) -> Behaviour:
        if not isinstance(body, dict):
            return Status(400, error_body(400, "request body is not a JSON object"))
        if body.get("stream"):
            return Status(400, error_body(400, "ChatServer does not stream"))
        try:
            answer = self.responder(body)
        except Exception as exc:  # the test sees a 500 and finds the cause in .errors
            with self._lock:
                self.errors.append(exc)
            return Status(500, error_body(500, f"responder failed: {exc!r}"))
        return Reply(answer) if isinstance(answer, str) else answer

    def _completion(self, body: dict[str, Any], reply: Reply) -> bytes:
        message = {"role": "assistant", "content": reply.text}
        return json.dumps({
            "id": f"chatcmpl-{next(self._ids):06d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "chat-server"),
            "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
            "usage": reply.usage if reply.usage is not None else estimated_usage(body, reply.text),
        }).encode()


class _HTTPServer(ThreadingHTTPServer):
    def __init__(self, address: tuple[str, int], handler: type, chat: ChatServer):
        self.chat = chat
        super().__init__(address, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        # A client that gave up (a timeout) or a hang-up at shutdown is not a failure.
        if isinstance(exc, ConnectionError | TimeoutError) or (
                isinstance(exc, OSError) and self.chat._stopping.is_set()):
            return
        if exc is not None:
            with self.chat._lock:
                self.chat.errors.append(exc)
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the openai client pools connections
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        if not self.server.chat._track(self.connection):
            _hang_up(self.connection)

    def finish(self) -> None:
        self.server.chat._untrack(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._receive(b"")
        self._send_status(Status(404))

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        received = self._receive(raw)
        if received.path not in CHAT_PATHS:
            self._send_status(Status(404))
            return
        self._perform(self.server.chat._next(), received.body)

    def _receive(self, raw: bytes) -> Received:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        received = Received(self.command, urlsplit(self.path).path,
                            {k.lower(): v for k, v in self.headers.items()}, body, raw)
        self.server.chat._record(received)
        return received

    def _perform(self, behaviour: Behaviour | None, body: Any) -> None:
        chat = self.server.chat
        while isinstance(behaviour, Delay):
            if chat._stopping.wait(behaviour.seconds):
                self.close_connection = True
                return
            behaviour = behaviour.then
        if behaviour is None:
            behaviour = chat._respond(body)
        if isinstance(behaviour, Delay):  # a responder may answer with a delay too
            self._perform(behaviour, body)
        elif isinstance(behaviour, Reply):
            self._send(200, chat._completion(body, behaviour))
        elif isinstance(behaviour, Malformed):
            self._send(200, behaviour.body, {"content-type": behaviour.content_type})
        else:
            self._send_status(behaviour)

    def _send_status(self, status: Status) -> None:
        body = status.body if status.body is not None else error_body(status.code)
        self._send(status.code, body, status.headers)

    def _send(self, code: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        headers = {"content-type": "application/json",
                   **{k.lower(): v for k, v in (headers or {}).items()}}
        self.send_response(code)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _hang_up(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
