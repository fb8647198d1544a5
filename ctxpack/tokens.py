"""Token counting: model -> encoding, cached counts, chat overhead, images, offline fallback.

Counts follow the OpenAI cookbook for chat messages (3 tokens per message, the
role and content tokens, +1 per name, +3 to prime the reply). tiktoken is
imported on first use. Where no encoding file can be had, counts fall back to a
stated estimate and are marked inexact; nothing here ever crashes for it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from . import images
from .errors import UsageError
from .model import Image, Message, Text, Thinking, ToolCall, ToolResult
from .models import DEFAULT_MODEL, TABLE, ModelInfo, ModelTable

TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3
# Framing tokens around each tool call (name and arguments are counted apart);
# the API does not publish it, so this is our stated approximation.
TOKENS_PER_TOOL_CALL = 3
ESTIMATE_NOTE = "no tiktoken encoding file could be loaded; counts estimated as 1 token per 4 characters"

# tiktoken slows down sharply (and o200k can fail) on very long runs of
# whitespace or of non-space characters, so such runs are encoded in pieces.
_RUN_LIMIT = 8192
_LONG_RUN = re.compile(r"\s{%d,}|\S{%d,}" % (_RUN_LIMIT, _RUN_LIMIT))
_SHORT_KEY = 256

_encodings: dict[str, Any] = {}
_failures: dict[str, str] = {}


def load_encoding(name: str) -> Any | None:
    """The tiktoken encoding `name`, or None (with the reason kept) when it cannot be had."""
    if name in _encodings:
        return _encodings[name]
    if name in _failures:
        return None
    try:
        import tiktoken

        enc = tiktoken.get_encoding(name)
    except BaseException as exc:  # noqa: BLE001 - a PanicException is not an Exception
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        _failures[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
        return None
    _encodings[name] = enc
    return enc


def split_long_runs(text: str) -> list[str]:
    """Cut runs longer than the limit into pieces; short texts come back whole."""
    if len(text) <= _RUN_LIMIT or not _LONG_RUN.search(text):
        return [text]
    pieces: list[str] = []
    pos = 0
    for match in _LONG_RUN.finditer(text):
        if match.start() > pos:
            pieces.append(text[pos : match.start()])
        run_start, run_end = match.span()
        pieces.extend(text[i : min(i + _RUN_LIMIT, run_end)] for i in range(run_start, run_end, _RUN_LIMIT))
        pos = run_end
    if pos < len(text):
        pieces.append(text[pos:])
    return pieces


def encode_count(enc: Any, text: str) -> int:
    """Token count of `text` with `enc`, guarding tiktoken's weak spots."""
    total = 0
    for piece in split_long_runs(text):
        try:
            total += len(enc.encode_ordinary(piece))
        except BaseException as exc:  # noqa: BLE001 - PanicException included
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            total += estimate(piece)
    return total


def estimate(text: str) -> int:
    """The fallback estimate: one token per four characters, rounded up."""
    return (len(text) + 3) // 4


def cache_key(text: str) -> str | bytes:
    """Short texts key themselves; long ones by a 128-bit digest to bound memory."""
    if len(text) <= _SHORT_KEY:
        return text
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


@dataclass(frozen=True, slots=True)
class MessageCount:
    """Tokens of one message: the total and each part's share (overhead not in parts)."""

    total: int
    parts: tuple[int, ...]


class TokenCounter:
    """Counts tokens for one model, caching by content so repeats are tokenized once."""

    def __init__(self, model: str | None = None, table: ModelTable = TABLE) -> None:
        name = model or DEFAULT_MODEL
        info = table.find(name)
        if info is None:
            raise UsageError(
                f"unknown model {name!r}",
                "`ctxpack models` lists the known ones; add others under `models:` in the config",
            )
        self.model = name
        self.table = table
        self.info: ModelInfo = info
        self.encoding_name = info.encoding
        self._enc = load_encoding(info.encoding)
        self.estimated = self._enc is None
        self._cache: dict[str | bytes, int] = {}
        self.hits = 0
        self.misses = 0

    @property
    def exact(self) -> bool:
        """True when counts are the model's own tokenizer, not an approximation or estimate."""
        return self.info.exact and not self.estimated

    @property
    def note(self) -> str:
        """Why counts are not exact, or '' when they are."""
        if self.estimated:
            reason = _failures.get(self.encoding_name, "")
            return f"{ESTIMATE_NOTE} ({reason})" if reason else ESTIMATE_NOTE
        return self.info.note

    def text(self, text: str) -> int:
        """Tokens of plain text, no chat overhead."""
        if not text:
            return 0
        key = cache_key(text)
        hit = self._cache.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        self.misses += 1
        n = estimate(text) if self._enc is None else encode_count(self._enc, text)
        self._cache[key] = n
        return n

    def prime(self, texts: Iterable[str]) -> None:
        """Count many texts ahead of use (one place to batch or parallelize)."""
        for t in texts:
            self.text(t)

    def image(self, part: Image) -> int:
        """Tokens of an image from its pixel size, by the provider's formula."""
        size = images.size_from_base64(part.data) if part.data else None
        width, height = size or images.DEFAULT_SIZE
        if self.info.provider == "anthropic":
            return images.anthropic_image_tokens(width, height)
        return images.openai_image_tokens(width, height, part.detail or "auto")

    def part(self, part: Any) -> int:
        """Tokens of one message part."""
        if isinstance(part, (Text, Thinking)):
            return self.text(part.text)
        if isinstance(part, ToolCall):
            return TOKENS_PER_TOOL_CALL + self.text(part.name) + self.text(part.arguments)
        if isinstance(part, ToolResult):
            return sum(self.part(p) for p in part.parts)
        if isinstance(part, Image):
            return self.image(part)
        return 0

    def message(self, message: Message) -> MessageCount:
        """Tokens of one chat message, cookbook overhead included."""
        parts = tuple(self.part(p) for p in message.parts)
        overhead = TOKENS_PER_MESSAGE + self.text(message.role)
        if message.name:
            overhead += self.text(message.name) + TOKENS_PER_NAME
        return MessageCount(overhead + sum(parts), parts)

    def messages(self, messages: Iterable[Message]) -> int:
        """Tokens of a whole prompt: every message plus the reply priming."""
        return sum(self.message(m).total for m in messages) + REPLY_PRIMING


def texts_of(message: Message) -> list[str]:
    """Every text of a message that counting will tokenize (for batching)."""
    out = [message.role]
    if message.name:
        out.append(message.name)
    for p in message.parts:
        if isinstance(p, (Text, Thinking)):
            out.append(p.text)
        elif isinstance(p, ToolCall):
            out += (p.name, p.arguments)
        elif isinstance(p, ToolResult):
            out += (q.text for q in p.parts if isinstance(q, Text))
    return out
