"""The model table: which tokenizer each model uses and how big its context is.

This is the one place the table lives. Lookup is by longest matching prefix, so
dated snapshots (gpt-4o-2024-08-06) find their family. The config file may add
or override entries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

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


@dataclass(frozen=True, slots=True)
class Calibration:
    """How the tokens a provider bills for a model follow ctxpack's count: `slope` tokens
    of the model's tokenizer per token counted; `overhead`, the tokens an agent sends
    that its file does not hold (system prompt, tool definitions; None: the format's
    usual figure, see ctxpack.calibration); `error`, the relative error measured on
    held-out calls (None: not measured)."""

    name: str
    slope: float
    overhead: int | None = None
    error: float | None = None


@dataclass(frozen=True, slots=True)
class Listed:
    """A model as `ctxpack models` lists it: its table entry (None where only a
    calibration names a model no entry is a prefix of), the calibration it is billed with
    (None: none, its count is billed 1:1) and where that comes from: "shipped"
    (`CALIBRATED`) or "config" (a config's `calibration:` entry)."""

    name: str
    info: ModelInfo | None
    calibration: Calibration | None
    source: str | None

    def to_dict(self) -> dict[str, Any]:
        i, c = self.info, self.calibration
        return {"name": self.name, "encoding": i and i.encoding,
                "context_window": i and i.context_window, "exact": i and i.exact,
                "provider": i and i.provider, "note": i and i.note,
                "calibration": None if c is None else {
                    "name": c.name, "slope": c.slope, "overhead": c.overhead,
                    "error": c.error, "source": self.source}}


# Each slope is the `--slopes` median of bench/bench_calibration.py on the shared corpus,
# read with that value in the table (hidden content is converted at the table's slope, so
# a value stands where the median read with it rounds back to it): a model's entry from
# its own steps (5 or more), a family's (claude, gpt-5) from the family's model read on the
# most steps. claude-opus-4-7 reads the table's value plus about 0.01 whatever it is, so it
# is the one value not fitted so (BENCHMARKS.md, "the model table and where its values come
# from"). A model not listed counts 1:1. The config's `calibration:` adds or replaces
# entries (`ctxpack calibrate`).
CALIBRATED: tuple[Calibration, ...] = (
    Calibration("claude", 1.21),
    Calibration("claude-haiku-4-5", 1.17),
    Calibration("claude-opus-4-5", 1.27),
    Calibration("claude-opus-4-6", 1.21),
    Calibration("claude-opus-4-7", 1.45),
    Calibration("claude-sonnet-5", 1.61),
    Calibration("gpt-5", 1.01),
    Calibration("gpt-5.5", 1.02),
)


# What a calibration may say (a config's entry, a fit `calibrate` writes). The corpus's
# models bill 0.88 to 1.66 tokens per token counted (BENCHMARKS.md); a slope a quarter of
# that or four times it is no tokenizer's ratio to another but a mistake (a percentage, a
# ratio turned over, a window), and it would put every bill and every compress decision
# for the model off by as much. The overhead, sent besides the messages, must leave room
# for them in the largest window a model has.
SLOPES = (0.25, 4.0)
LARGEST_WINDOW = max(m.context_window for m in BUILTIN)


def overhead_bound(model: str, table: ModelTable) -> tuple[int, str]:
    """The window a calibration's overhead for `model` must be below, and what it is: the
    model's own where `table` knows it, else the largest of any model."""
    found = table.find(model)
    if found is None:
        return LARGEST_WINDOW, "the largest model window"
    return found.context_window, table_window(model, found)


def table_window(model: str, found: ModelInfo) -> str:
    """The window a table gives `model` (its entry `found`), named by that model, and by
    the entry too where the model is found under another name: "the 400,000-token window
    the table gives gpt-5.4 (as gpt-5)"."""
    alias = "" if model_key(model) == model_key(found.name) else f" (as {found.name})"
    return f"the {found.context_window:,}-token window the table gives {model}{alias}"


# Models whose reasoning an agent sends back (encrypted) stays in every later prompt: on
# the corpus, gpt-5.4, 5.5 and 5.6 prompts grow by each reply's reasoning tokens (counting
# it takes edgerunner's calibrated error from 3.5% to 0.1%). Older ones (gpt-5.1-codex-max)
# drop it at the next user message: only the current turn's is in the prompt.
REASONING_KEPT = ("gpt-5.4", "gpt-5.5", "gpt-5.6")


def keeps_reasoning(model: str | None) -> bool:
    """Does `model` keep the reasoning of earlier turns in its prompts?"""
    return model is not None and _longest(dict.fromkeys(REASONING_KEPT, True), model) is True


# Amazon Bedrock's model ids: a provider, and for a cross-region profile its region, before
# the model (`us.anthropic.claude-opus-4-7-v1:0`)
_BEDROCK = re.compile(r"^(?:(?:us|eu|apac|us-gov|global)\.)?"
                      r"(?:anthropic|meta|mistral|amazon|cohere|ai21|deepseek|openai|qwen)\.")


def model_key(name: str) -> str:
    """What a lookup compares of a model's name: without case, or a provider's prefix
    (`openai/GPT-5.4` is `gpt-5.4`, Bedrock's `us.anthropic.claude-opus-4-7-v1:0` is
    `claude-opus-4-7-v1:0`)."""
    return _BEDROCK.sub("", name.strip().lower().rsplit("/", 1)[-1])


def model_name(value: Any) -> str | None:
    """A model's name as a file gives it: a string of more than spaces; else None. An empty
    name names no model: read as a name, it would be billed (and written to a config by
    `calibrate`) as the table's shortest entry, which by longest prefix stands for every
    model of its family without its own."""
    return value if isinstance(value, str) and value.strip() else None


# What a model's name may end with that names a snapshot or build of one model, not
# another: a date (Anthropic's `-20250514`, Vertex's `@20250514`, OpenAI's `-2024-08-06`),
# Bedrock's version (`-v1:0`), `-latest`
_SNAPSHOT = re.compile(r"(?:[-@]\d{8}|-\d{4}-\d{2}-\d{2}|-v\d+:\d+|[-:@]latest)+$")


def same_model(a: str, b: str) -> bool:
    """Whether two names are of one model: the same whole name as a lookup compares it
    (`model_key`), but for what names a snapshot of it (`claude-opus-4-6-20260101` is
    `claude-opus-4-6`). Not a prefix: `claude-opus-4` is another model than
    `claude-opus-4-6`, though the table bills both by one entry."""
    return _SNAPSHOT.sub("", model_key(a)) == _SNAPSHOT.sub("", model_key(b))


def _longest(names: dict[str, Any], model: str) -> Any | None:
    """The entry whose name is `model`, else the longest that is a prefix of it ending at
    a boundary (so dated snapshots find their family)."""
    name = model_key(model)
    if name in names:
        return names[name]
    best: str | None = None
    for key in names:
        boundary = name[len(key) : len(key) + 1] in ("", "-", ".", ":", "@", "_")
        if name.startswith(key) and boundary and (best is None or len(key) > len(best)):
            best = key
    return None if best is None else names[best]


class ModelTable:
    """Model families by name; `find` resolves a concrete model id by longest prefix, and
    `calibration` the same way in the calibration table."""

    def __init__(self, entries: tuple[ModelInfo, ...] = BUILTIN,
                 calibrations: tuple[Calibration, ...] = CALIBRATED) -> None:
        self._by_name = {model_key(m.name): m for m in entries}
        self._calibrations = {model_key(c.name): c for c in calibrations}
        # what each name looked up resolved to (a table is never changed: `extend` makes
        # another): a file names a few models in each of its calls, and a lookup scans
        # every entry
        self._found: dict[str, ModelInfo | None] = {}
        self._calibrated: dict[str, Calibration | None] = {}

    def extend(self, entries: list[ModelInfo],
               calibrations: list[Calibration] | None = None) -> ModelTable:
        """A new table with `entries` (and `calibrations`) added or replacing same-named
        ones."""
        return ModelTable((*self._by_name.values(), *entries),
                          (*self._calibrations.values(), *(calibrations or ())))

    def shipped_calibrations(self) -> ModelTable:
        """This table's models with the calibrations ctxpack ships, none a config added."""
        return ModelTable(tuple(self._by_name.values()), CALIBRATED)

    def calibration(self, model: str | None) -> Calibration | None:
        """How `model`'s billed tokens follow the count, or None where nothing says."""
        if not model:
            return None
        if model not in self._calibrated:
            self._calibrated[model] = _longest(self._calibrations, model)
        return self._calibrated[model]

    def all(self) -> list[ModelInfo]:
        return sorted(self._by_name.values(), key=lambda m: (m.provider != "openai", m.name))

    def listing(self) -> list[Listed]:
        """Every model this table names, its own entry's or a calibration's (a calibration
        for `claude-opus-4-6` is billed under the `claude-opus-4` entry's tokenizer and
        window), with the calibration each is billed with and where that comes from: what
        `ctxpack models` lists."""
        entries: dict[str, ModelInfo | None] = {model_key(m.name): m for m in self.all()}
        for c in self._calibrations.values():
            found = self.find(c.name)
            entries.setdefault(model_key(c.name), found and replace(found, name=c.name))
        out = []
        for key, info in entries.items():
            name = info.name if info is not None else self._calibrations[key].name
            found = self.calibration(name)
            source = None if found is None else \
                "shipped" if any(found is c for c in CALIBRATED) else "config"
            out.append(Listed(name, info, found, source))
        return sorted(out, key=lambda x: (x.info is None or x.info.provider != "openai",
                                          x.name))

    def choose(self, candidates: list[str | None]) -> str | None:
        """The first candidate model this table knows (a transcript may name any model)."""
        return next((c for c in candidates if c and self.find(c) is not None), None)

    def find(self, model: str) -> ModelInfo | None:
        """The entry for `model` (e.g. 'openai/gpt-4o-2024-08-06'), or None."""
        if model not in self._found:
            self._found[model] = _longest(self._by_name, model)
        return self._found[model]


TABLE = ModelTable()
