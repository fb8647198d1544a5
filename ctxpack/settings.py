"""Every compress setting, defined once: name, type, default, the check its value must
pass, and its flag's spelling and help. The rest is made from this table: `Options`
(ctxpack.compression.settings), the config file's `compress:` keys, the CTXPACK_<NAME>
variables and the options of `ctxpack compress`. It imports nothing heavy: the command
line reads it at every start, before it knows which command runs."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any, NamedTuple

from .errors import UsageError
from .numbers import LONG, number, quoted, real

STRATEGIES = ("extractive", "structured", "llm")
TRUNCATE_MODES = ("head", "tail", "head_tail")


class Rule(NamedTuple):
    """What a setting's value must satisfy, and how an error says it."""

    good: Callable[[Any], bool]
    must: str


def _one_of(choices: tuple[str, ...]) -> Rule:
    return Rule(lambda v: v in choices, f"one of {', '.join(choices)}")


def _always(value: Any) -> bool:
    return True


def _outside_here(folder: str) -> bool:
    """Is `folder` outside the working directory (links followed)?"""
    import os

    here = os.path.realpath(os.getcwd())
    return os.path.commonpath([here, os.path.realpath(folder)]) != here


def _is_regex(value: str) -> bool:
    try:
        re.compile(value)
    except (re.error, RecursionError, OverflowError):
        return False
    return True


def _is_url(value: str) -> bool:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # a malformed host ("[::1")
        return False


POSITIVE = Rule(lambda v: v > 0, "a positive number")
COUNT = Rule(lambda v: v >= 0, "0 or more")


@dataclass(frozen=True, slots=True)
class Setting:
    """One knob of the pipeline, as the table defines it for every layer that sets it."""

    name: str
    kind: type  # bool, int, float or str
    default: Any  # None: off, or worked out when compress runs (the help says how)
    help: str  # the flag's help, which states the default
    metavar: str | None = None  # None for a switch
    rule: Rule | None = None
    flag: str | None = None  # if not --name (or --name/--no-name for a switch)
    secret: bool = False  # where text or keys go: the value is never shown in an error
    # True for a value that sends data off the machine or weakens protection: a
    # ctxpack.yaml found in the working directory may not set it (see ctxpack.config)
    risky: Callable[[Any], bool] | None = None
    # a regex that a list may give (the config file, keyword arguments): its items are
    # alternatives, so that a text matching any of them matches
    alternatives: bool = False

    @property
    def variable(self) -> str:
        return f"CTXPACK_{self.name.upper()}"

    @property
    def flags(self) -> str:
        if self.flag:
            return self.flag
        dashed = self.name.replace("_", "-")
        return f"--{dashed}/--no-{dashed}" if self.kind is bool else f"--{dashed}"


# In the order `ctxpack compress --help` lists them.
SETTINGS: dict[str, Setting] = {s.name: s for s in (
    Setting("budget", int, None, metavar="N", rule=POSITIVE, help="Summarize above N tokens, "
            "and never write more than N (per conversation, in a file of many; default: "
            "--threshold x the model's window)."),
    Setting("target", int, None, metavar="N", rule=POSITIVE, help="Summarize down to N tokens "
            "(default: half the window, or 5/8 of --budget, or of the --threshold share, if "
            "less; at most --budget, or the window)."),
    Setting("threshold", float, 0.8, metavar="R", rule=Rule(lambda v: 0 < v <= 1,
            "above 0 and at most 1"), help="Summarize above this share of the window (0.8)."),
    Setting("strategy", str, "extractive", metavar="NAME", rule=_one_of(STRATEGIES),
            risky=lambda v: v == "llm",
            help="Summarizer: extractive (default), structured, or llm (a chat endpoint)."),
    Setting("truncate", bool, True, help="Cut tool outputs over the limits (on)."),
    Setting("max_lines", int, 300, metavar="N", rule=POSITIVE,
            help="Truncate outputs over N lines (300)."),
    Setting("max_bytes", int, 30_000, metavar="N", rule=POSITIVE,
            help="Truncate outputs over N bytes (30000)."),
    Setting("max_tokens", int, 6_000, metavar="N", rule=POSITIVE,
            help="Truncate outputs over N tokens (6000)."),
    Setting("truncate_mode", str, "head_tail", metavar="MODE", rule=_one_of(TRUNCATE_MODES),
            help="Keep head, tail or head_tail (default)."),
    Setting("mask", bool, True, help="Mask outputs older than the newest steps (on)."),
    Setting("keep_observations", int, 10, metavar="K", rule=COUNT,
            help="Steps whose outputs stay unmasked (10)."),
    Setting("keep_output_tokens", int, 40_000, metavar="N", rule=COUNT,
            help="Newest tool-output tokens never masked (40000; at most half the target)."),
    Setting("pin", str, None, metavar="REGEX", rule=Rule(_is_regex, "a Python regex"),
            alternatives=True, help="Keep messages matching REGEX (in any case) verbatim in "
            "the summary through every compress; repeat it for more (default: none; the task "
            "is always kept; the config file may give a list, which --pin replaces)."),
    Setting("focus", str, None, metavar="TEXT",
            help="What matters next: summaries keep the archived facts that name its "
            "words in a Focus section; the llm summarizer is told it (default: none)."),
    Setting("summarize", bool, True,
            help="Summarize old history when over the trigger (on)."),
    Setting("keep_rounds", int, 0, metavar="N", rule=COUNT,
            help="Newest rounds always kept in full (0)."),
    Setting("keep_steps", int, 2, metavar="N", rule=COUNT,
            help="Newest steps always kept in full (2)."),
    Setting("max_summary_tokens", int, 10_000, metavar="N", rule=POSITIVE,
            help="Condense the summary above N tokens (10000)."),
    # a summary is at most 1/N of the tokens it archives (as read)
    Setting("summary_ratio", int, 5, metavar="N", rule=Rule(lambda v: v >= 1,
            "at least 1 (1: no limit but the size)"),
            help="Keep the summary within 1/N of the tokens it archives (5; 1 for no limit)."),
    # the llm summarizer: an OpenAI-compatible chat endpoint (see summarizers.llm)
    Setting("llm_model", str, "gpt-4o-mini", metavar="NAME",
            risky=_always,
            help="llm: the model to ask (gpt-4o-mini)."),
    # None: the client's default (OpenAI, or $OPENAI_BASE_URL)
    Setting("llm_base_url", str, None, metavar="URL", secret=True,
            rule=Rule(_is_url, "an http:// or https:// URL"),
            risky=_always,
            help="llm: an OpenAI-compatible endpoint (OpenAI's; e.g. "
            "http://localhost:11434/v1 for Ollama)."),
    # the key is read from this variable: there is no setting for the key itself
    Setting("llm_api_key_env", str, "OPENAI_API_KEY", metavar="VAR", secret=True,
            rule=Rule(lambda v: bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v)),
                      "the name of an environment variable"),
            risky=_always,
            help="llm: the environment variable holding the API key (OPENAI_API_KEY)."),
    Setting("llm_timeout", float, 60.0, metavar="S", rule=POSITIVE,
            risky=_always,
            help="llm: seconds to wait for an answer (60)."),
    Setting("llm_retries", int, 3, metavar="N", rule=COUNT,
            risky=_always,
            help="llm: retries on 429, 5xx, timeouts, lost connections (3)."),
    Setting("llm_max_tokens", int, 2000, metavar="N", rule=POSITIVE,
            risky=_always,
            help="llm: the most tokens an answer may take (2000)."),
    Setting("llm_concurrency", int, 4, metavar="N", rule=POSITIVE,
            risky=_always,
            help="llm: requests in flight at once (4)."),
    # None: the model table's window for llm_model, else 8192
    Setting("llm_context", int, None, metavar="N", rule=Rule(lambda v: v >= 1024,
            "at least 1024 tokens"), risky=_always,
            help="llm: the summarizer model's window, for chunking "
            "(the model table's, else 8192)."),
    Setting("llm_per_step", bool, False,
            risky=_always,
            help="llm: a line per step, cached across runs, instead of sections (off)."),
    Setting("llm_verify", bool, False,
            risky=_always,
            help="llm: show the model what its summary dropped and ask for a corrected "
            "one, kept only if it keeps more (off)."),
    Setting("redact", bool, True, risky=lambda v: not v,
            help="llm: replace secrets by typed placeholders before sending (on)."),
    Setting("archive_dir", str, None, metavar="DIR", risky=_outside_here,
            help="Keep originals in this content-addressed folder instead of inline."),
    # on by default, so the flag only turns it off
    Setting("archive", bool, True, flag="--no-archive", risky=lambda v: not v,
            help="Drop the originals: restore cannot bring them back."),
)}
SECRET_LIKE = frozenset(s.name for s in SETTINGS.values() if s.secret)
# CTXPACK_* variables that are not compress settings, read where they apply
OTHER_VARIABLES = ("CTXPACK_CONFIG", "CTXPACK_CACHE_DIR", "CTXPACK_WORKERS", "CTXPACK_DEBUG")
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}
# How alike a name must be to a known one to be taken for a slip of the keyboard: a letter
# dropped, doubled or swapped in even a short name (MASC: MASK), but not an unrelated word
# of about the length (SHARED, TEST, DATA).
CLOSE_ENOUGH = 0.75


def convert(name: str, value: object, where: str) -> object:
    """A setting's value as its type; strings (env vars, YAML) are parsed."""
    kind = SETTINGS[name].kind
    if value is None:
        return None
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE | _FALSE:
            return text in _TRUE
    elif kind is str:
        if SETTINGS[name].alternatives and isinstance(value, (list, tuple)):
            return _alternatives(name, value, where)
        return str(value)
    elif kind is int:
        if isinstance(found := number(value, text=True), int):
            return found
    elif (found := real(value, text=True)) is not None and math.isfinite(found):
        return found
    raise UsageError(f"{where}: {name} must be {'true or false' if kind is bool else kind.__name__}"
                     f", not {quoted(value)}")


def _alternatives(name: str, items: list[Any] | tuple[Any, ...], where: str) -> str | None:
    """A list of regexes as one that matches what any of them does (None for none); an
    item that is not a regex is named."""
    texts = [str(x) for x in items]
    for n, text in enumerate(texts, 1):
        if isinstance(items[n - 1], (dict, list)) or not _is_regex(text):
            raise UsageError(f"{where}: {name} item {n} must be a Python regex, not {text!r}")
    return "|".join(_scoped(t) for t in texts) or None


_GLOBAL_FLAGS = re.compile(r"\(\?([aiLmsux]+)\)")


def _scoped(regex: str) -> str:
    """`regex` as a group that may stand among others: flags it opens with (`(?i)x`)
    apply to it alone (`(?i:x)`)."""
    found = _GLOBAL_FLAGS.match(regex)
    if found:
        return f"(?{found.group(1)}:{regex[found.end():]})"
    return f"(?:{regex})"


# The most digits a whole-number setting may have: a count of tokens, lines or steps
# comes nowhere near `LONG` (as a float setting takes no number a float cannot hold)
DIGITS = len(str(LONG - 1))


def check(settings: Mapping[str, Any]) -> list[str]:
    """What is wrong with these settings' values (any of them, by their names)."""
    problems = []
    for name, value in settings.items():
        rule = SETTINGS[name].rule
        if SETTINGS[name].kind is int and isinstance(value, int) and abs(value) >= LONG:
            problems.append(f"{name} must be int of at most {DIGITS} digits, not "
                            f"{quoted(value)}")
            continue
        if rule is None or value is None:
            continue
        try:
            fine = rule.good(value)
        except TypeError:  # a string for a number, say (Options made in code)
            fine = False
        if not fine:
            shown = "what was given" if name in SECRET_LIKE else quoted(value)
            problems.append(f"{name} must be {rule.must}, not {shown}")
    return problems


def read(given: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Settings given by name (a config file's `compress:`, keyword arguments) as their
    types, checked; every unknown name, and every bad value, is told at once."""
    unknown = sorted(str(name) for name in given if name not in SETTINGS)
    if unknown:
        raise UsageError(f"{where}: unknown setting(s): {', '.join(unknown)}",
                         f"known: {', '.join(SETTINGS)}")
    values = {name: convert(name, value, where) for name, value in given.items()}
    problems = check(values)
    if problems:
        raise UsageError(f"{where}: {'; '.join(problems)}")
    return values


def from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """Settings given as CTXPACK_<NAME> variables, each checked: a bad value is an error
    that names its variable. Other variables are not read here (see `misspelt`)."""
    return {s.name: read_one(s.name, environ[s.variable], s.variable)
            for s in SETTINGS.values() if s.variable in environ}


def read_one(name: str, value: object, where: str) -> object:
    """One setting's value as its type, checked: a bad value is an error that names
    `where` it was given (a variable, a flag)."""
    out = convert(name, value, where)
    problems = check({name: out})
    if problems:
        raise UsageError(f"{where}: {problems[0]}")
    return out


def misspelt(environ: Mapping[str, str]) -> list[str]:
    """A warning for each CTXPACK_ variable that ctxpack does not read but that looks like
    one it does. The rest pass without a word: the prefix is not ours alone (the test
    suite reads CTXPACK_SHARED), and a variable set for another program is no mistake."""
    known = [s.variable for s in SETTINGS.values()] + list(OTHER_VARIABLES)
    # compared without the prefix: every name shares it, and with it any CTXPACK_
    # variable looks close to some setting
    by_stem = {name.removeprefix("CTXPACK_"): name for name in known}
    warnings = []
    for variable in sorted(environ):
        if not variable.startswith("CTXPACK_") or variable in known:
            continue
        stem = variable.removeprefix("CTXPACK_").upper()
        close = get_close_matches(stem, list(by_stem), 1, CLOSE_ENOUGH)
        if close:
            warnings.append(f"{variable} is not a ctxpack setting; did you mean "
                            f"{by_stem[close[0]]}?")
    return warnings
