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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ...redact import redact

OPENAI_HOST = "api.openai.com"
NO_KEY = "not-needed"  # sent to servers that ask for none (llama.cpp, Ollama, vLLM)
REASON_CHARS = 200  # of a server's own error message, a reason shows this much
RETRIED = frozenset({408, 409, 429})  # statuses the client retries (and every 5xx)
BACKOFF = 10.0  # seconds the client may wait between two tries, at most (and some)


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

    @property
    def shown_url(self) -> str:
        """`url` as messages and reports may tell it: a password in it is not."""
        return redact(self.url)[0]


class Endpoint:
    """A chat-completions endpoint; `ask` is safe to call from several threads, and
    `ask_all` calls it from several at once."""

    def __init__(self, settings: Settings, spend: Spend) -> None:
        import openai

        self.settings = settings
        self.spend = spend
        self._key = os.environ.get(settings.key_env, "").strip()
        try:
            host = urlsplit(settings.url).hostname
        except ValueError:
            raise Failed(f"{settings.shown_url} is not a URL") from None
        if not self._key and host == OPENAI_HOST:
            raise Failed(f"no API key: ${settings.key_env} is not set")
        try:
            self._client = openai.OpenAI(
                api_key=self._key or NO_KEY, base_url=settings.url, timeout=settings.timeout,
                max_retries=settings.retries)
        except (openai.OpenAIError, ValueError) as exc:
            raise Failed(f"cannot use {settings.shown_url}: {self.scrub(str(exc))}") from None
        self._completion_param = "max_tokens"  # newer OpenAI models want the other name
        # the client's timeout holds for each read: a server that trickles bytes is
        # stopped by this deadline on the whole request, its retries and their backoff
        self.deadline = settings.timeout * (settings.retries + 1) + BACKOFF * settings.retries

    def close(self) -> None:
        self._client.close()

    def ask(self, system: str, user: str, max_tokens: int) -> str:
        """The model's answer to one system + user prompt, at most `max_tokens` long.

        An answer cut at `max_tokens` loses its unfinished last line; characters that
        cannot be written as UTF-8 become "?"; the API key, if echoed, is replaced."""
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        self.spend.sent()
        done: list[Any] = []
        worker = threading.Thread(target=lambda: done.append(self._answer(messages, max_tokens)),
                                  name="ctxpack-llm-request", daemon=True)
        worker.start()
        worker.join(self.deadline)
        if not done:
            raise Failed(f"no answer within {self.deadline:g} s, retries included")
        answer = done[0]
        if isinstance(answer, Failed):
            raise answer
        self.spend.add(getattr(answer, "usage", None))
        try:
            choice = answer.choices[0]
            text = choice.message.content
        except (AttributeError, IndexError, KeyError, TypeError):
            raise Failed("unusable answer: no choices[0].message.content in it") from None
        if not isinstance(text, str):
            raise Failed("unusable answer: its message has no text")
        text = self.scrub_key(text.encode("utf-8", "replace").decode("utf-8"))
        if getattr(choice, "finish_reason", None) == "length":
            text = text[: text.rfind("\n")] if "\n" in text.strip() else text + "…"
        return text

    def ask_all(self, system: str, prompts: list[str], max_tokens: int, concurrency: int,
                keep: Callable[[int, str], str] = lambda _, a: a.strip()) -> list[str]:
        """The answers to `prompts`, in order, each as `keep` (given its index) makes it,
        at most `concurrency` in flight; the first failure stops the rest."""
        def one(n: int, prompt: str) -> str:
            text = keep(n, self.ask(system, prompt, max_tokens))
            if not text:
                raise Failed("the model answered with no text")
            return text

        if len(prompts) <= 1:
            return [one(n, p) for n, p in enumerate(prompts)]
        # daemon threads, not an executor: Ctrl-C must not wait for requests in flight
        answers: list[str] = [""] * len(prompts)
        failures: list[BaseException] = []
        queue = iter(enumerate(prompts))
        lock = threading.Lock()

        def work() -> None:
            while not failures:
                with lock:
                    n, prompt = next(queue, (-1, ""))
                if n < 0:
                    return
                try:
                    answers[n] = one(n, prompt)
                except BaseException as exc:  # raised again in the caller's thread
                    failures.append(exc)

        threads = [threading.Thread(target=work, name="ctxpack-llm", daemon=True)
                   for _ in range(min(concurrency, len(prompts)))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if failures:
            raise failures[0]
        return answers

    def _answer(self, messages: list[dict[str, str]], max_tokens: int) -> Any:
        """The client's answer, or the Failed that says why there is none."""
        import openai

        try:
            try:
                return self._create(messages, max_tokens)
            except openai.BadRequestError as exc:
                if "max_completion_tokens" not in str(exc) or \
                        self._completion_param == "max_completion_tokens":
                    raise
                self._completion_param = "max_completion_tokens"
                return self._create(messages, max_tokens)
        except openai.APITimeoutError:
            return Failed(self._tries(f"no answer within {self.settings.timeout:g} s"))
        except openai.APIConnectionError:
            return Failed(self._tries(f"the connection to {self.settings.shown_url} failed"))
        except openai.APIStatusError as exc:
            said = f"the server answered {exc.status_code}{self._said(exc)}"
            retried = exc.status_code in RETRIED or exc.status_code >= 500
            return Failed(self._tries(said) if retried else said)
        except (openai.OpenAIError, ValueError) as exc:  # ValueError: a body not JSON
            return Failed(f"unusable answer: {self.scrub(type(exc).__name__)}")
        except Exception as exc:  # on its thread, an error must come back, not hang the run
            return Failed(f"the request failed: {type(exc).__name__}")

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
        return redact(self.scrub_key(text))[0]

    def scrub_key(self, text: str) -> str:
        return text.replace(self._key, "[REDACTED:api_key]") if self._key else text
