"""Secrets found by what stands before them: `Bearer` and `Basic` credentials, a URL's
user:password@, a command line's flags (`--password x`, mysql's `-px`); and the one search
for them and for the token formats, grouped by the rare character each starts at."""

from __future__ import annotations

import base64
import binascii
import re

from .formats import _END, _FORMATS, _LONGEST_PREFIX, _TOKEN_CHARS, _format, _random
from .named import _NEARBY, _password_part
from .values import _NOT_PASSWORDS, _NOT_SECRET_START, _plausible

# What a command line's secret is given by: --password, --db-password, --api-key, --token
_FLAG = r"(?:pass(?:word|wd|phrase)?|pwd|token|secret|api[-_]?key|(?:access|secret|auth)[-_]key)"
_ARGUMENT_START = r"(?=[^\s$<>|&;`-])"  # not another flag, a $VAR, a redirection
# Found by what stands before them; the judges find where the secret starts and ends.
_AROUND = (
    ("bearer_token", "", r"Bearer[ \t]+[\w.~+/-]{15,}[\w~+/-]=*"),
    ("bearer_token", "", r"bearer[ \t]+[\w.~+/-]{15,}[\w~+/-]=*"),
    ("basic_auth", "", r"Basic[ \t]+(?=[A-Za-z0-9+/]{8})"),
    ("basic_auth", "", r"basic[ \t]+(?=[A-Za-z0-9+/]{8})"),
    # scheme://user:password@host
    ("url_password", "", r"://[^\s:/?#@\"'<>`\\\[\]]*:[^\s/?#\"'<>`\\]+@(?=[\w\[])"),
    # --password x, --api-key=x (not a word's hyphen, nor one glued to a placeholder); mysql's -px
    ("cli_secret", "", rf"-(?<![\w\]-]-)-(?:[a-z0-9]+[-_])*{_FLAG}(?:=|[ \t]+){_ARGUMENT_START}"),
    ("cli_secret", "", rf"-(?<=[ \t]-)p{_ARGUMENT_START}"),
)


def _searched(patterns: list[tuple[str, str, str, bool]]) -> tuple[re.Pattern[str], dict[str, str]]:
    """_union of (kind, before, rest, token) as _anchored regexes, grouped by the first
    character of `rest`: a group is tried after that character, and only where what stands
    before it may end a `before` of the group (so the "_" of snake_case names is not tried
    as the "_" of "ghp_", "hf_", "npm_" and "gsk_" one after another)."""
    groups: dict[str, list[tuple[int, str, str, bool]]] = {}
    for n, (_, before, rest, token) in enumerate(patterns):
        groups.setdefault(rest[0], []).append((n, before, rest, token))
    regex = []
    for first, group in groups.items():
        ends = [b[b.rfind("[") :] if b.endswith("]") else b[-1:] for _, b, _, _ in group]
        first = re.escape(first)
        guard = f"(?<=[{''.join(e.strip('[]') for e in ends)}]{first})" if all(ends) else ""
        rests = "|".join(_anchored(before, rest, token)[1:] + (_END if token else "")
                         + f"(?P<k{n}>)" for n, before, rest, token in group)
        regex.append(f"{first}{guard}(?:{rests})")
    kinds = {f"k{n}": kind for n, (kind, *_) in enumerate(patterns)}
    return re.compile("|".join(regex), re.ASCII), kinds


def _anchored(before: str, rest: str, token: bool) -> str:
    """`before` + `rest` as a regex that starts at the first character of `rest`; a `token`
    starts where a word does (so that a run of "eyJeyJ..." is not searched once per J), or
    after the n, t or r of a newline, tab or return escaped in JSON text."""
    behind = before + rest[0]
    return (rest[0] + (f"(?<={behind})" if before else "")
            + (rf"(?<![A-Za-mo-qsu-z0-9_-]{behind})" if token else "") + rest[1:])


_SPECIFIC, _SPECIFIC_KIND = _searched(
    [(kind, before, rest, False) for kind, before, rest in _AROUND]
    + [(kind, before, rest, True) for kind, before, rest in _FORMATS]
)
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
# Basic's credentials run to where a token could not go on (its JWT's dot, a placeholder)
_CREDENTIALS = re.compile(r"[\w+/=.~\[-]*")
# A flag's value, quoted (also in JSON text) or not
_ARGUMENT = re.compile(r"\\?\"(?P<dq>[^\"\\\n]*)\\?\"|'(?P<sq>[^'\n]*)'"
                       r"|(?P<bare>[^\s\"'`;&|<>()\\]+)")
_MYSQL = re.compile(r"(?<![\w-])(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)(?![\w-])")
# --no-password, --ask-pass: what follows is the next argument; --next-token: a page's
_NOT_SECRET_FLAGS = frozenset(
    "no ask prompt with use read show skip require next starting start continuation page"
    " idempotency request change lock".split())



def _specific(text: str, match: re.Match[str]) -> tuple[str, int, int] | None:
    """The kind, start and end of the secret a match of _SPECIFIC holds, if it holds one."""
    kind = _SPECIFIC_KIND[match.lastgroup or ""]
    start, end = match.span()
    if kind == "url_password":
        if not start or not text[start - 1].isalnum():
            return None  # no scheme before "://"
        start = text.index(":", start + 3) + 1  # the user's name ends at the first colon
        end -= 1  # "@"
        kind = _format(text, start, end) or ("url_password" if _password(text[start:end]) else "")
    elif kind == "cli_secret":
        return _cli_secret(text, start, end)
    elif kind in ("bearer_token", "basic_auth"):
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
    return (kind, start, end) if kind else None


def _password(password: str) -> bool:
    """True unless the password of a URL is a template: $PASS, {password}, ****, "password"."""
    return (password[0] not in "$%{<[*" and password.lower() not in _NOT_PASSWORDS
            and password.strip("*xX") != "")


def _user_and_password(credentials: str) -> bool:
    """True when `credentials` is base64 for "user:password", as HTTP's Basic scheme has it;
    prose ("Basic authentication") is not."""
    if _BASE64.fullmatch(credentials) is None:
        return False
    try:
        return b":" in base64.b64decode(credentials + "=" * (-len(credentials) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False


def _cli_secret(text: str, at: int, end: int) -> tuple[str, int, int] | None:
    """The value of the flag text[at:end] (`--password x`, `--api-key=x`, mysql's `-px`)
    if it is a secret: typed by its format if it has one, else "cli_secret"."""
    argument = _ARGUMENT.match(text, end)
    if argument is None:
        return None
    start, stop = argument.span(argument.lastgroup or "bare")
    value, flag = text[start:stop], text[at:end].strip("-= \t")
    if flag == "p":  # elsewhere a port, a path, "mkdir -p"
        line = text.rfind("\n", max(at - _NEARBY, 0), at) + 1
        if _MYSQL.search(text, line, at) is None:
            return None
    elif not _NOT_SECRET_FLAGS.isdisjoint(flag.replace("_", "-").split("-")):
        return None
    if not value or value[0] in _NOT_SECRET_START + "@" or "[REDACTED:" in value:
        return None  # also curl's @file
    kind = _format(text, start, stop)
    if kind:
        return kind, start, stop
    least = 4 if flag == "p" or _password_part(flag.replace("-", "_").split("_")[-1]) else 6
    # "--token flag": a word after a space is prose; glued to the flag, it is its value
    how = "" if text[end - 1] in " \t" else "loose"
    return ("cli_secret", start, stop) if _plausible(value, least, how, True) else None
