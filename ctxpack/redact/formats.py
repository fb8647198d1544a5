"""Secrets with a format of their own: private key blocks, and the tokens providers give
(OpenAI's sk-, GitHub's ghp_, a JWT's eyJ...): their regexes, the search for whole blocks,
and the judge of whether a span is a token of a format, whole."""

from __future__ import annotations

import re
from collections.abc import Iterable

# Speed: a search with a regex whose every alternative starts with a literal character
# skips at C speed to the next place holding one of those characters. So each pattern
# below starts at a rare character of what it finds (the "k" of "sk-", the "J" of "eyJ"),
# with a lookbehind for the characters before it; the judges find where it starts.

# A Discord bot token opens with its bot's id in base64: M, N or O, then one of DTjz
_DISCORD = r"[DTjz][A-Za-z0-9]{21,25}\.[\w-]{6}\.[\w-]{27,38}"
# (kind, the fixed-width regex before the rare character, the rest from it)
_FORMATS = (
    ("jwt", "ey", r"J[\w-]{10,}\.[\w-]{10,}\.[\w-]*"),
    ("anthropic_key", "s", r"k-ant-[\w-]{20,}"),
    ("openrouter_key", "s", r"k-or-v1-[\w-]{20,}"),
    ("openai_key", "s", r"k-(?:proj-|svcacct-|admin-)?[\w-]{20,}"),
    ("github_token", "gh[pousr]", r"_[A-Za-z0-9]{36,}"),
    ("github_token", "github", r"_pat_\w{22,}"),
    ("gitlab_token", "glpat", r"-[\w-]{20,}(?:\.[\w-]+)*"),
    ("google_api_key", "A", r"Iza[\w-]{35}"),
    ("slack_token", "", r"xox[abprs]-[A-Za-z0-9-]{10,}"),
    ("stripe_key", "[rs]", r"k_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("huggingface_token", "hf", r"_[A-Za-z0-9]{30,}"),
    ("npm_token", "npm", r"_[A-Za-z0-9]{36}"),
    ("groq_key", "gsk", r"_[A-Za-z0-9]{48,}"),
    ("xai_key", "", r"xai-[A-Za-z0-9]{60,}"),
    ("sendgrid_key", "S", r"G\.[\w-]{22}\.[\w-]{43}"),
    ("twilio_key", "S", r"K[0-9a-f]{32}"),
    *(("discord_token", "", first + _DISCORD) for first in "MNO"),
    ("aws_access_key", "A[KS]", r"IA[A-Z0-9]{16}"),
)
_LONGEST_PREFIX = len("github")  # the longest part of a token before where its search starts
_PEM_LABEL = r"(?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
_NEWLINE = r"(?:\r?\n|(?:\\r)?\\n)"  # a real one, or one escaped in JSON text
# A whole block, found first: a token glued to it must not take its first line. A block
# cut short before its END line still loses every base64 line it kept.
_PRIVATE_KEY = re.compile(
    rf"G(?<=-----BEG)IN {_PEM_LABEL}(?:[\s\S]{{0,65536}}?-----END {_PEM_LABEL}"
    rf"|(?:{_NEWLINE}{{1,2}}(?:[A-Za-z0-9+/=]{{40,}}(?![\w-])|(?:Proc-Type|DEK-Info):[^\r\n\\]*))*"
    rf"(?:{_NEWLINE}[A-Za-z0-9+/=]+(?![\w-]))?)"
)


def _union(patterns: Iterable[tuple[str, str]]) -> tuple[re.Pattern[str], dict[str, str]]:
    """One regex for (kind, regex) pairs, and the kind of each alternative by the name of
    the empty group that ends it (`match.lastgroup`)."""
    patterns = list(patterns)
    regex = "|".join(f"{p}(?P<k{n}>)" for n, (_, p) in enumerate(patterns))
    return re.compile(regex, re.ASCII), {f"k{n}": kind for n, (kind, _) in enumerate(patterns)}


_END = r"(?![\w-])"  # tokens end where a word does
_FORMAT, _FORMAT_KIND = _union((kind, before + rest + _END) for kind, before, rest in _FORMATS)
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _private_key(text: str, match: re.Match[str]) -> tuple[str, int, int]:
    """The whole block, from its first dash."""
    return "private_key", match.start() - len("-----BE"), match.end()


def _format(text: str, start: int, end: int) -> str:
    """The kind of secret that text[start:end] is, whole, by its format alone; "" if none."""
    match = _FORMAT.fullmatch(text, start, end)
    if match is None:
        return ""
    kind = _FORMAT_KIND[match.lastgroup or ""]
    if kind in ("openai_key", "slack_token") and not _random(match.group()):
        return ""  # words joined by hyphens: "sk-learn-compatible-estimator"
    return kind


def _random(token: str) -> bool:
    """True when `token` has a digit or mixes cases, as generated ones do and words don't."""
    return (any(c.isdigit() for c in token)
            or (any(c.islower() for c in token) and any(c.isupper() for c in token)))
