"""The real agent CLIs (Claude Code, Codex) resuming a session against a mock provider.

The provider, on 127.0.0.1, speaks just enough of two streaming APIs for one turn:
Anthropic Messages (`POST /v1/messages`, server-sent events) and OpenAI Responses
(`POST /v1/responses`). Every model request's JSON body is recorded, so a test can check
what the agent sent after it loaded a session from disk. Any other path gets an empty
JSON object. `claude_resume` and `codex_resume` run a CLI under a temporary home.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REPLY = "Resumed and ready."


@dataclass
class Provider:
    """The server's address and what it was sent: model requests by API, other paths."""

    port: int = 0
    messages: list[dict[str, Any]] = field(default_factory=list)  # Anthropic bodies
    responses: list[dict[str, Any]] = field(default_factory=list)  # OpenAI bodies
    sizes: list[int] = field(default_factory=list)  # bytes of each model request's body
    other: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                    for name, data in events)


def _anthropic_stream(body: dict[str, Any]) -> bytes:
    model = body.get("model", "claude")
    usage = {"input_tokens": 10, "output_tokens": 4, "cache_read_input_tokens": 0,
             "cache_creation_input_tokens": 0}
    return _sse([
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_mock01", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": REPLY}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": 4}}),
        ("message_stop", {"type": "message_stop"}),
    ])


def _anthropic_json(body: dict[str, Any]) -> bytes:
    return json.dumps({
        "id": "msg_mock02", "type": "message", "role": "assistant",
        "model": body.get("model", "claude"),
        "content": [{"type": "text", "text": REPLY}], "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 4}}).encode()


def _responses_stream(body: dict[str, Any]) -> bytes:
    model = body.get("model", "gpt-5")
    item = {"type": "message", "id": "msg_mock01", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": REPLY, "annotations": []}]}
    response = {"id": "resp_mock01", "object": "response", "model": model,
                "status": "in_progress", "output": []}
    done = {**response, "status": "completed", "output": [item],
            "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": 4, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": 14}}
    return _sse([
        ("response.created", {"type": "response.created", "response": response}),
        ("response.output_item.added", {"type": "response.output_item.added",
                                        "output_index": 0,
                                        "item": {**item, "status": "in_progress",
                                                 "content": []}}),
        ("response.output_text.delta", {"type": "response.output_text.delta",
                                        "item_id": "msg_mock01", "output_index": 0,
                                        "content_index": 0, "delta": REPLY}),
        ("response.output_item.done", {"type": "response.output_item.done",
                                       "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": done}),
    ])


def _handler(provider: Provider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, data: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - the http.server name
            with provider.lock:
                provider.other.append(f"GET {self.path}")
            # 426: no WebSocket here, so Codex takes HTTPS at once instead of retrying
            self._send(426, b'{"error": "use HTTPS"}', "application/json")

        def do_HEAD(self) -> None:  # noqa: N802
            self._send(200, b"", "application/json")

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = urlsplit(self.path).path
            try:
                body = json.loads(raw)
            except ValueError:
                body = {}
            if path.endswith("/v1/messages"):
                with provider.lock:
                    provider.messages.append(body)
                    provider.sizes.append(len(raw))
                if body.get("stream"):
                    self._send(200, _anthropic_stream(body), "text/event-stream")
                else:
                    self._send(200, _anthropic_json(body), "application/json")
            elif path.endswith("/responses"):
                with provider.lock:
                    provider.responses.append(body)
                    provider.sizes.append(len(raw))
                self._send(200, _responses_stream(body), "text/event-stream")
            else:
                with provider.lock:
                    provider.other.append(f"POST {self.path}")
                self._send(200, b"{}", "application/json")

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a CLI that hangs up once it has its answer is no error of the test's


@contextmanager
def serving() -> Iterator[Provider]:
    """A provider on an ephemeral port of 127.0.0.1, for the length of the block."""
    provider = Provider()
    server = _Server(("127.0.0.1", 0), _handler(provider))
    provider.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        server.shutdown()
        server.server_close()


# --- the CLIs, each under a home of its own --------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
INSTALLED = ROOT / ".agents" / "node_modules" / ".bin"  # where .ci/run installs them
PACKAGES = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex"}
TIMEOUT = 180


def find(name: str) -> str | None:
    """The CLI `name` (claude, codex): on PATH, else installed in the checkout."""
    found = shutil.which(name)
    if found:
        return found
    local = INSTALLED / name
    return str(local) if local.is_file() and os.access(local, os.X_OK) else None


def version(cli: str) -> str:
    out = subprocess.run([cli, "--version"], capture_output=True, text=True, timeout=60,
                         env={"PATH": os.environ.get("PATH", ""), "HOME": tempfile.gettempdir()})
    return out.stdout.strip()


@dataclass
class Run:
    """One resume: the CLI's exit status and output, and what the provider was sent."""

    code: int
    stdout: str
    stderr: str
    provider: Provider


def _records(data: bytes) -> Iterator[dict[str, Any]]:
    for line in data.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def claude_session(data: bytes) -> str:
    """The id of the Claude Code session a file holds (its main chain's)."""
    return next(r["sessionId"] for r in _records(data)
                if isinstance(r.get("sessionId"), str) and not r.get("isSidechain"))


def codex_session(data: bytes) -> tuple[str, str]:
    """The id and start time of the Codex session a rollout holds."""
    meta = next(r["payload"] for r in _records(data) if r.get("type") == "session_meta")
    return meta["id"], str(meta.get("timestamp") or "2025-01-01T00:00:00")


def _base_env(home: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "LANG": "C.UTF-8",
            "TMPDIR": str(home)}


def claude_resume(cli: str, data: bytes, where: Path, *, latest: bool = False,
                  env: dict[str, str] | None = None, prompt: str = "continue") -> Run:
    """Put the session `data` where Claude Code looks for it (its project folder under
    CLAUDE_CONFIG_DIR, for a working folder in `where`) and run `claude -p --resume ID
    prompt` (`--continue` instead with `latest`) against a provider of our own."""
    home, config, project = where / "home", where / "claude", where / "project"
    for d in (home, config, project):
        d.mkdir(parents=True, exist_ok=True)
    folder = config / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", str(project.resolve()))
    folder.mkdir(parents=True, exist_ok=True)
    sid = claude_session(data)
    (folder / f"{sid}.jsonl").write_bytes(data)
    with serving() as provider:
        full = {**_base_env(home), "CLAUDE_CONFIG_DIR": str(config),
                "ANTHROPIC_BASE_URL": provider.url, "ANTHROPIC_API_KEY": "sk-ant-not-a-key",
                "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
                "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                **(env or {})}
        how = ("--continue",) if latest else ("--resume", sid)
        out = subprocess.run([cli, "-p", *how, prompt], cwd=project,
                             env=full, capture_output=True, text=True, timeout=TIMEOUT)
    return Run(out.returncode, out.stdout, out.stderr, provider)


def codex_resume(cli: str, data: bytes, where: Path, *options: str, latest: bool = False,
                 prompt: str = "continue") -> Run:
    """Put the rollout `data` where Codex looks for it (CODEX_HOME/sessions/Y/M/D) and run
    `codex exec resume OPTIONS ID prompt` (`--last --all` for the id with `latest`: the
    session's working folder is another machine's) against a provider of our own,
    through the built-in `openai` provider (a thread's provider cannot change on resume)."""
    home, codex_home, project = where / "home", where / "codex", where / "project"
    for d in (home, codex_home, project):
        d.mkdir(parents=True, exist_ok=True)
    sid, start = codex_session(data)
    day = codex_home / "sessions" / start[:4] / start[5:7] / start[8:10]
    day.mkdir(parents=True, exist_ok=True)
    (day / f"rollout-{start[:19].replace(':', '-')}-{sid}.jsonl").write_bytes(data)
    with serving() as provider:
        (codex_home / "config.toml").write_text(f'openai_base_url = "{provider.url}/v1"\n')
        full = {**_base_env(home), "CODEX_HOME": str(codex_home),
                "OPENAI_API_KEY": "sk-not-a-key", "CODEX_API_KEY": "sk-not-a-key"}
        which = ("--last", "--all") if latest else (sid,)
        out = subprocess.run([cli, "exec", "--skip-git-repo-check", "resume", *options,
                              *which, prompt], cwd=project, env=full,
                             capture_output=True, text=True, timeout=TIMEOUT)
    return Run(out.returncode, out.stdout, out.stderr, provider)
