"""Secrets found by what stands before them, and the one search for them and for the token
formats, grouped by the rare character each starts at. `Bearer` and `Basic` credentials
are judged here; URLs, headers and cookies in `web`, command lines in `commands`, config
files' forms in `files`."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable

from . import commands, files, web
from .formats import (
    _END,
    _FORMATS,
    _IDS,
    _LONGEST_PREFIX,
    _TOKEN_CHARS,
    Found,
    _format,
    _random,
)

# Found by what stands before them: (the rule's name, the fixed-width regex before its
# rare character, the rest from it); the judges find where the secret starts and ends.
_AROUND = (
    ("bearer_token", "", r"Bearer[ \t]+[\w.~+/-]{15,}[\w~+/-]=*"),
    ("bearer_token", "", r"bearer[ \t]+[\w.~+/-]{15,}[\w~+/-]=*"),
    ("basic_auth", "", r"Basic[ \t]+(?=[A-Za-z0-9+/]{8})"),
    ("basic_auth", "", r"basic[ \t]+(?=[A-Za-z0-9+/]{8})"),
    *web._RULES,
    *commands._RULES,
    *files._RULES,
)
_JUDGES: dict[str, Callable[[str, str, int, int], Found | None]] = {
    **{rule: web.url_secret for rule, _, _ in web._RULES},
    **{rule: commands.flag_secret for rule, _, _ in commands._RULES},
    **{rule: files.file_secret for rule, _, _ in files._RULES},
}


def _searched(patterns: list[tuple[str, str, str, bool]]) -> tuple[re.Pattern[str], dict[str, str]]:
    """_union of (kind, before, rest, token) as _anchored regexes, grouped by the first
    character of `rest`: a group is tried after that character, and only where what stands
    before it may end a `before` of the group (so the "_" of snake_case names is not tried
    as the "_" of "ghp_", "hf_", "npm_" and "gsk_" one after another). Patterns with no
    `before` make a group of their own, so that the others keep that guard."""
    groups: dict[tuple[str, bool], list[tuple[int, str, str, bool]]] = {}
    for n, (_, before, rest, token) in enumerate(patterns):
        groups.setdefault((_first(rest), bool(before)), []).append((n, before, rest, token))
    regex = []
    for (first, _), group in groups.items():
        ends = [_last(before) for _, before, _, _ in group]
        guard = f"(?<=[{''.join(e.strip('[]') for e in ends)}]{first})" if all(ends) else ""
        rests = "|".join(_anchored(before, rest, token)[len(_atom(rest)) :]
                         + (_END if token else "")
                         + f"(?P<k{n}>)" for n, before, rest, token in group)
        regex.append(f"{first}{guard}(?:{rests})")
    kinds = {f"k{n}": kind for n, (kind, *_) in enumerate(patterns)}
    return re.compile("|".join(regex), re.ASCII), kinds


def _last(before: str) -> str:
    """The characters `before` may end at, as a class: "[pousr]" of "gh[pousr]", "f" of
    "hf", "[0-9a-f]" of "[0-9a-f]{32}"; "" when nothing needs to stand before."""
    before = re.sub(r"\{[0-9,]+\}$", "", before)
    return before[before.rfind("[") :] if before.endswith("]") else before[-1:]


def _atom(rest: str) -> str:
    """The character a pattern starts at, as it is written: "k", or an escaped "\\."."""
    return rest[:2] if rest[0] == "\\" else rest[0]


def _first(rest: str) -> str:
    """The character a pattern's search starts at, as a regex."""
    return rest[:2] if rest[0] == "\\" else re.escape(rest[0])


def _anchored(before: str, rest: str, token: bool) -> str:
    """`before` + `rest` as a regex that starts at the first character of `rest`; a `token`
    starts where a word does (so that a run of "eyJeyJ..." is not searched once per J).
    The lookbehinds come after the characters `rest` opens with ("-us" of "-us[0-9]"), so
    that most places fail at one of those first."""
    run = _LITERALS.match(rest)[0]  # type: ignore[index]  # matches ""
    if run and rest[len(run) : len(run) + 1] in ("?", "*", "{", "+"):
        run = run[:-2] if run[-2:-1] == "\\" else run[:-1]  # "_v1?": not the "1"
    run = run or _atom(rest)
    behind = before + run
    # (a `before` of classes may stand after more of the token: a Telegram bot's digits;
    # the n, t or r of an escaped newline, tab or return of JSON text may stand before one)
    start = token and not set("[{").intersection(before)
    return (run + (f"(?<={behind})" if before else "")
            + (rf"(?<![A-Za-mo-qsu-z0-9_-]{behind})" if start else "") + rest[len(run) :])


_LITERALS = re.compile(r"(?:[\w:&/<>=~-]|\\[.-])*")


_SPECIFIC, _SPECIFIC_KIND = _searched(
    [(kind, before, rest, False) for kind, before, rest in _AROUND]
    + [(kind, before, rest, True) for kind, before, rest in _FORMATS]
)
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
# Basic's credentials run to where a token could not go on (its JWT's dot, a placeholder)
_CREDENTIALS = re.compile(r"[\w+/=.~\[-]*")


def _specific(text: str, match: re.Match[str]) -> tuple[str, int, int] | None:
    """The kind, start and end of the secret a match of _SPECIFIC holds, if it holds one."""
    kind = _SPECIFIC_KIND[match.lastgroup or ""]
    start, end = match.span()
    if kind in _JUDGES:
        return _JUDGES[kind](text, kind, start, end)
    if kind in ("bearer_token", "basic_auth"):
        if start and text[start - 1] in _TOKEN_CHARS:
            return None  # "myBearer"
        start += len("Bearer" if kind == "bearer_token" else "Basic")
        while text[start] in " \t":
            start += 1
        if kind == "basic_auth":
            end = _CREDENTIALS.match(text, start).end()  # type: ignore[union-attr]  # or ""
            return (kind, start, end) if _user_and_password(text[start:end]) else None
        kind = _format(text, start, end) or ("bearer_token" if _random(text[start:end]) else "")
    else:  # a format: its token starts after the last character that a token cannot hold
        least = max(start - _LONGEST_PREFIX, 0)
        while start > least and text[start - 1] in _TOKEN_CHARS:
            start -= 1
        if text[start - 1 : start] == "\\" and text[start] in "ntr":
            start += 1  # JSON text's "\n" before it
        elif start and text[start - 1] in _TOKEN_CHARS:
            return None  # more of a word than a token of the format holds
        kind = _format(text, start, end)
        if kind in _IDS and start >= 15 and _IDS[kind].fullmatch(text, start - 15, start):
            start -= 15
    return (kind, start, end) if kind else None


def _user_and_password(credentials: str) -> bool:
    """True when `credentials` is base64 for "user:password", as HTTP's Basic scheme has it;
    prose ("Basic authentication") is not."""
    if _BASE64.fullmatch(credentials) is None:
        return False
    try:
        return b":" in base64.b64decode(credentials + "=" * (-len(credentials) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
