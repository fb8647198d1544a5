"""One OpenAI-compatible chat endpoint, as the `llm` summarizer uses it.

Requests go through the official `openai` client, which retries 429s, 5xx answers,
timeouts and lost connections with backoff (and honours Retry-After). Every way a
request can fail ends in `Failed` with a reason fit to print: the API key is read
from the environment variable the settings name, and scrubbed from any text that
could reach a message, a report or a traceback.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ...redact import redact

OPENAI_HOST = "api.openai.com"
NO_KEY = "not-needed"  # sent to servers that ask for none (llama.cpp, Ollama, vLLM)
REASON_CHARS = 200  # of a server's own error message, a reason shows this much


class Failed(Exception):
    """The endpoint gave no usable answer; `str()` says why, with no secret in it."""


@dataclass
class Spend:
    """What the requests of one compress cost, as the server reports it."""

    requests: int = 0  # summary requests made (each retried by the client as it needs)
    answers: int = 0  # answers received and read
    prompt_tokens: int = 0
    completion_tokens: int = 0
    unreported: int = 0  # answers that came without usage numbers
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, usage: Any) -> None:
        with self.lock:
            self.answers += 1
            prompt = getattr(usage, "prompt_tokens", None)
            completion = getattr(usage, "completion_tokens", None)
            if not isinstance(prompt, int) or not isinstance(completion, int):
                self.unreported += 1
                return
            self.prompt_tokens += prompt
            self.completion_tokens += completion

    def sent(self) -> None:
        with self.lock:
            self.requests += 1


@dataclass(frozen=True, slots=True)
class Settings:
    """Where to send requests and how patiently."""

    model: str
    base_url: str | None
    key_env: str
    timeout: float
    retries: int

    @property
    def url(self) -> str:
        """The base URL requests go to, as the client resolves it."""
        return (self.base_url or os.environ.get("OPENAI_BASE_URL")
                or f"https://{OPENAI_HOST}/v1").rstrip("/")


class Endpoint:
    """A chat-completions endpoint; `ask` is safe to call from several threads."""

    def __init__(self, settings: Settings, spend: Spend) -> None:
        import openai

        self.settings = settings
        self.spend = spend
        self._key = os.environ.get(settings.key_env, "").strip()
        if not self._key and urlsplit(settings.url).hostname == OPENAI_HOST:
            raise Failed(f"no API key: ${settings.key_env} is not set")
        self._client = openai.OpenAI(
            api_key=self._key or NO_KEY, base_url=settings.url, timeout=settings.timeout,
            max_retries=settings.retries)
        self._completion_param = "max_tokens"  # newer OpenAI models want the other name

    def close(self) -> None:
        self._client.close()

    def ask(self, system: str, user: str, max_tokens: int) -> str:
        """The model's answer to one system + user prompt, at most `max_tokens` long."""
        import openai

        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        self.spend.sent()
        try:
            try:
                answer = self._create(messages, max_tokens)
            except openai.BadRequestError as exc:
                if "max_completion_tokens" not in str(exc) or \
                        self._completion_param == "max_completion_tokens":
                    raise
                self._completion_param = "max_completion_tokens"
                answer = self._create(messages, max_tokens)
        except openai.APITimeoutError:
            raise Failed(self._tries(f"no answer within {self.settings.timeout:g} s")) from None
        except openai.APIConnectionError:
            raise Failed(self._tries(f"could not connect to {self.settings.url}")) from None
        except openai.APIStatusError as exc:
            raise Failed(self._tries(f"the server answered {exc.status_code}"
                                     + self._said(exc))) from None
        except (openai.OpenAIError, ValueError) as exc:  # ValueError: a body not JSON
            raise Failed(f"unusable answer: {self.scrub(type(exc).__name__)}") from None
        self.spend.add(getattr(answer, "usage", None))
        try:
            text = answer.choices[0].message.content
        except (AttributeError, IndexError, KeyError, TypeError):
            raise Failed("unusable answer: no choices[0].message.content in it") from None
        if not isinstance(text, str):
            raise Failed("unusable answer: its message has no text")
        return text

    def _create(self, messages: list[dict[str, str]], max_tokens: int) -> Any:
        return self._client.chat.completions.create(
            model=self.settings.model, messages=messages,  # type: ignore[arg-type]
            **{self._completion_param: max_tokens})

    def _tries(self, what: str) -> str:
        n = self.settings.retries
        return what + (f" (after {n} retr{'y' if n == 1 else 'ies'})" if n else "")

    def _said(self, exc: Any) -> str:
        """The server's own words about an error, short and scrubbed."""
        body = getattr(exc, "body", None)
        message = body.get("message") if isinstance(body, dict) else None
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            message = body["error"].get("message")
        if not isinstance(message, str) or not message.strip():
            return ""
        text = " ".join(self.scrub(message).split())
        return ": " + (text[:REASON_CHARS] + "…" if len(text) > REASON_CHARS else text)

    def scrub(self, text: str) -> str:
        """`text` with the API key (and any other secret) replaced."""
        if self._key:
            text = text.replace(self._key, "[REDACTED:api_key]")
        return redact(text)[0]
