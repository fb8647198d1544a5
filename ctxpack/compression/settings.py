"""The settings of one compress run, checked once, with the documented defaults."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from difflib import get_close_matches
from typing import Any
from urllib.parse import urlsplit

from ..errors import UsageError
from .truncate import MODES, Limits

STRATEGIES = ("extractive", "structured", "llm")


@dataclass(frozen=True, slots=True)
class Options:
    """Every knob of the pipeline; each step can be turned off."""

    truncate: bool = True
    limits: Limits = field(default_factory=Limits)
    mask: bool = True
    keep_observations: int = 10  # steps whose outputs stay unmasked
    summarize: bool = True
    strategy: str = "extractive"
    threshold: float = 0.8  # summarize above this share of the context window
    budget: int | None = None  # or above this many tokens
    target: int | None = None  # summarize down to this (half the window, or 5/8 of budget)
    keep_rounds: int = 0  # most recent rounds always kept in full
    keep_steps: int = 2  # most recent steps always kept in full
    max_summary_tokens: int = 10_000
    summary_ratio: int = 5  # a summary is at most 1/N of the tokens it archives (as read)
    archive: bool = True
    archive_dir: str | None = None
    # the llm summarizer: an OpenAI-compatible chat endpoint (see summarize.llm)
    llm_model: str = "gpt-4o-mini"
    llm_base_url: str | None = None  # None: the client's default (OpenAI, or $OPENAI_BASE_URL)
    llm_api_key_env: str = "OPENAI_API_KEY"  # the key is read from this variable, never a flag
    llm_timeout: float = 60.0  # seconds per request
    llm_retries: int = 3  # more attempts on 429, 5xx, timeouts and lost connections
    llm_max_tokens: int = 2000  # the most tokens one answer may take
    llm_concurrency: int = 4  # requests in flight at once
    llm_context: int | None = None  # the summarizer model's window (the table's, or 8192)
    llm_per_step: bool = False  # a line per step, each asked for once and cached
    redact: bool = True  # secrets become typed placeholders before any text is sent

    def __post_init__(self) -> None:
        settings = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "limits"}
        settings.update(truncate_mode=self.limits.mode, max_lines=self.limits.max_lines,
                        max_bytes=self.limits.max_bytes, max_tokens=self.limits.max_tokens)
        problems = check(settings)
        if problems:
            raise UsageError("; ".join(problems))


def check(settings: dict[str, Any]) -> list[str]:
    """What is wrong with these settings' values (any of them, by their config names)."""
    problems = []
    for name, value in settings.items():
        good, what = _RULES.get(name, (None, ""))
        if good is None or value is None:
            continue
        try:
            fine = good(value)
        except TypeError:  # a string for a number, say (Options made in code)
            fine = False
        if not fine:  # (a key given for its variable's name is not echoed)
            shown = "what was given" if name in SECRET_LIKE else repr(value)
            problems.append(f"{name} must be {what}, not {shown}")
    return problems


_POSITIVE: tuple[Callable[[Any], bool], str] = (lambda v: v > 0, "a positive number")
_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "truncate_mode": (lambda v: v in MODES, f"one of {', '.join(MODES)}"),
    "strategy": (lambda v: v in STRATEGIES, f"one of {', '.join(STRATEGIES)}"),
    "threshold": (lambda v: 0 < v <= 1, "above 0 and at most 1"),
    "summary_ratio": (lambda v: v >= 1, "at least 1 (1: no limit but the size)"),
    **dict.fromkeys(("budget", "target", "max_summary_tokens", "max_lines", "max_bytes",
                     "max_tokens"), _POSITIVE),
    **dict.fromkeys(("keep_observations", "keep_rounds", "keep_steps", "llm_retries"),
                    (lambda v: v >= 0, "0 or more")),
    **dict.fromkeys(("llm_timeout", "llm_max_tokens", "llm_concurrency"), _POSITIVE),
    "llm_context": (lambda v: v >= 1024, "at least 1024 tokens"),
    "llm_api_key_env": (lambda v: bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v)),
                        "the name of an environment variable"),
    "llm_base_url": (lambda v: _is_url(v), "an http:// or https:// URL"),
}
SECRET_LIKE = frozenset({"llm_api_key_env", "llm_base_url"})  # values never shown in errors


def _is_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # a malformed host ("[::1")
        return False


OPTION_NAMES = tuple(f.name for f in fields(Options))


# The settings as config keys and CTXPACK_* env vars: a flat name per knob, with its type.
SETTINGS: dict[str, type] = {
    "truncate": bool, "max_lines": int, "max_bytes": int, "max_tokens": int,
    "truncate_mode": str, "mask": bool, "keep_observations": int, "summarize": bool,
    "strategy": str, "threshold": float, "budget": int, "target": int, "keep_rounds": int,
    "keep_steps": int, "max_summary_tokens": int, "summary_ratio": int, "archive": bool,
    "archive_dir": str, "llm_model": str, "llm_base_url": str, "llm_api_key_env": str,
    "llm_timeout": float, "llm_retries": int, "llm_max_tokens": int, "llm_concurrency": int,
    "llm_context": int, "llm_per_step": bool, "redact": bool,
}
_LIMITS = {"max_lines": "max_lines", "max_bytes": "max_bytes", "max_tokens": "max_tokens",
           "truncate_mode": "mode"}
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def convert(name: str, value: object, where: str) -> object:
    """A setting's value as its type; strings (env vars, YAML) are parsed."""
    kind = SETTINGS[name]
    if value is None:
        return None
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE | _FALSE:
            return text in _TRUE
    elif kind is str:
        return str(value)
    elif not isinstance(value, bool) and not (kind is int and isinstance(value, float)):
        try:
            return kind(str(value).replace("_", "")) if isinstance(value, str) else kind(value)
        except (TypeError, ValueError):
            pass
    raise UsageError(f"{where}: {name} must be {'true or false' if kind is bool else kind.__name__}"
                     f", not {value!r}")


# CTXPACK_* variables that are not compress settings, read where they apply
OTHER_VARIABLES = ("CTXPACK_CONFIG", "CTXPACK_CACHE_DIR", "CTXPACK_WORKERS", "CTXPACK_DEBUG")


def from_env(environ: dict[str, str]) -> dict[str, object]:
    """Settings given as CTXPACK_<NAME> environment variables, each checked (the error
    names the variable); any other CTXPACK_ variable is an error, as an unknown key of
    the config file is (a misspelt setting would otherwise be ignored without a word)."""
    known = {f"CTXPACK_{name.upper()}" for name in SETTINGS} | set(OTHER_VARIABLES)
    unknown = sorted(k for k in environ if k.startswith("CTXPACK_") and k not in known)
    if unknown:
        close = get_close_matches(unknown[0].upper(), sorted(known), 1)
        raise UsageError(f"{unknown[0]} is not a ctxpack setting"
                         + (f"; did you mean {close[0]}?" if close else ""),
                         "settings are CTXPACK_<KEY>, one for each key under `compress:` "
                         "in config.example.yaml")
    out = {}
    for name in SETTINGS:
        key = f"CTXPACK_{name.upper()}"
        if key in environ:
            out[name] = convert(name, environ[key], key)
            problems = check({name: out[name]})
            if problems:
                raise UsageError(f"{key}: {problems[0]}")
    return out


def resolve(*layers: dict[str, object]) -> Options:
    """Options from settings layers, later layers winning (None means "not given")."""
    merged: dict[str, object] = {}
    for layer in layers:
        merged.update({k: v for k, v in layer.items() if v is not None})
    limits = {_LIMITS[k]: merged.pop(k) for k in list(merged) if k in _LIMITS}
    return Options(limits=Limits(**limits), **merged)  # type: ignore[arg-type]
