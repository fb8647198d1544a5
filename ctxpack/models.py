"""The model table: which tokenizer each model uses and how big its context is.

This is the one place the table lives. Lookup is by longest matching prefix, so
dated snapshots (gpt-4o-2024-08-06) find their family. The config file may add
or override entries.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MODEL = "gpt-4o"


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A model family: `exact` is False where the tokenizer is an approximation."""

    name: str
    encoding: str
    context_window: int
    exact: bool = True
    provider: str = "openai"
    note: str = ""


_CLAUDE_NOTE = "no public tokenizer; counted with cl100k_base as an approximation"
_GEMINI_NOTE = "no public tokenizer; counted with o200k_base as an approximation"
_OPEN_NOTE = "tokenizer not in tiktoken; counted with o200k_base as an approximation"

BUILTIN: tuple[ModelInfo, ...] = (
    ModelInfo("gpt-5", "o200k_base", 400_000),
    ModelInfo("gpt-5-codex", "o200k_base", 400_000),
    ModelInfo("gpt-5.1-codex", "o200k_base", 400_000),
    ModelInfo("gpt-5.1-codex-max", "o200k_base", 400_000),
    ModelInfo("gpt-5-chat", "o200k_base", 128_000),
    ModelInfo("gpt-4.1", "o200k_base", 1_047_576),
    ModelInfo("gpt-4.5", "o200k_base", 128_000),
    ModelInfo("gpt-4o", "o200k_base", 128_000),
    ModelInfo("chatgpt-4o", "o200k_base", 128_000),
    ModelInfo("gpt-oss", "o200k_base", 131_072),
    ModelInfo("o1", "o200k_base", 200_000),
    ModelInfo("o1-mini", "o200k_base", 128_000),
    ModelInfo("o3", "o200k_base", 200_000),
    ModelInfo("o4-mini", "o200k_base", 200_000),
    ModelInfo("codex-mini", "o200k_base", 200_000),
    ModelInfo("gpt-4", "cl100k_base", 8_192),
    ModelInfo("gpt-4-32k", "cl100k_base", 32_768),
    ModelInfo("gpt-4-turbo", "cl100k_base", 128_000),
    ModelInfo("gpt-4-1106", "cl100k_base", 128_000),
    ModelInfo("gpt-4-0125", "cl100k_base", 128_000),
    ModelInfo("gpt-3.5-turbo", "cl100k_base", 16_385),
    ModelInfo("text-embedding-3", "cl100k_base", 8_191),
    ModelInfo("text-davinci-003", "p50k_base", 4_097),
    ModelInfo("claude", "cl100k_base", 200_000, False, "anthropic", _CLAUDE_NOTE),
    ModelInfo("claude-sonnet-4", "cl100k_base", 200_000, False, "anthropic", _CLAUDE_NOTE),
    ModelInfo("claude-opus-4", "cl100k_base", 200_000, False, "anthropic", _CLAUDE_NOTE),
    ModelInfo("claude-haiku-4", "cl100k_base", 200_000, False, "anthropic", _CLAUDE_NOTE),
    ModelInfo("claude-3", "cl100k_base", 200_000, False, "anthropic", _CLAUDE_NOTE),
    ModelInfo("gemini", "o200k_base", 1_048_576, False, "google", _GEMINI_NOTE),
    ModelInfo("gemini-1.5-flash", "o200k_base", 1_048_576, False, "google", _GEMINI_NOTE),
    ModelInfo("gemini-2.0", "o200k_base", 1_048_576, False, "google", _GEMINI_NOTE),
    ModelInfo("deepseek", "o200k_base", 128_000, False, "deepseek", _OPEN_NOTE),
    ModelInfo("qwen", "o200k_base", 131_072, False, "qwen", _OPEN_NOTE),
    ModelInfo("llama", "o200k_base", 131_072, False, "meta", _OPEN_NOTE),
    ModelInfo("mistral", "o200k_base", 131_072, False, "mistral", _OPEN_NOTE),
)


class ModelTable:
    """Model families by name; `find` resolves a concrete model id by longest prefix."""

    def __init__(self, entries: tuple[ModelInfo, ...] = BUILTIN) -> None:
        self._by_name = {m.name: m for m in entries}

    def extend(self, entries: list[ModelInfo]) -> ModelTable:
        """A new table with `entries` added or replacing same-named ones."""
        return ModelTable((*self._by_name.values(), *entries))

    def all(self) -> list[ModelInfo]:
        return sorted(self._by_name.values(), key=lambda m: (m.provider != "openai", m.name))

    def choose(self, candidates: list[str | None]) -> str | None:
        """The first candidate model this table knows (a transcript may name any model)."""
        return next((c for c in candidates if c and self.find(c) is not None), None)

    def find(self, model: str) -> ModelInfo | None:
        """The entry for `model` (e.g. 'openai/gpt-4o-2024-08-06'), or None."""
        name = model.strip().lower().rsplit("/", 1)[-1]
        if name in self._by_name:
            return self._by_name[name]
        best: ModelInfo | None = None
        for key, info in self._by_name.items():
            boundary = name[len(key) : len(key) + 1] in ("", "-", ".", ":", "@", "_")
            if name.startswith(key) and boundary and (best is None or len(key) > len(best.name)):
                best = info
        return best


TABLE = ModelTable()
