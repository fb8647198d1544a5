"""Secret redaction: API keys, tokens, passwords and private keys become typed placeholders.

`redact` runs on text before it leaves the machine (the `llm` summarizer's requests): each
secret becomes `[REDACTED:<kind>]`. The values found are never logged, kept or returned;
only how many of each kind is. Precompiled regexes find secrets with a format of their own,
then values that only their name gives away (`DB_PASSWORD=...`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable

PLACEHOLDER = "[REDACTED:{}]"
# The order they are looked for in: whole key blocks, then the formats providers give
# their secrets (a longer prefix before a shorter one), then values known by what stands
# around them. A value that has a format counts once, as that format's kind.
KINDS = (
    "private_key", "jwt", "anthropic_key", "openai_key", "github_token", "gitlab_token",
    "google_api_key", "slack_token", "stripe_key", "huggingface_token", "aws_access_key",
    "bearer_token", "url_password", "aws_secret_key", "env_secret",
)

# Speed: a search with a regex whose every alternative starts with a literal character
# skips at C speed to the next place holding one of those characters. So each pattern
# below starts at a rare character of what it finds (the "k" of "sk-", the "J" of "eyJ"),
# with a lookbehind for the characters before it; the judges find where it starts.

# (kind, the fixed-width regex before the rare character, the rest from it)
_FORMATS = (
    ("jwt", "ey", r"J[\w-]{10,}\.[\w-]{10,}\.[\w-]*"),
    ("anthropic_key", "s", r"k-ant-[\w-]{20,}"),
    ("openai_key", "s", r"k-(?:proj-|svcacct-|admin-)?[\w-]{20,}"),
    ("github_token", "gh[pousr]", r"_[A-Za-z0-9]{36,}"),
    ("github_token", "github", r"_pat_\w{22,}"),
    ("gitlab_token", "glpat", r"-[\w-]{20,}(?:\.[\w-]+)*"),
    ("google_api_key", "A", r"Iza[\w-]{35}"),
    ("slack_token", "", r"xox[abprs]-[A-Za-z0-9-]{10,}"),
    ("stripe_key", "[rs]", r"k_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("huggingface_token", "hf", r"_[A-Za-z0-9]{30,}"),
    ("aws_access_key", "A[KS]", r"IA[A-Z0-9]{16}"),
)
_LONGEST_PREFIX = len("github")  # the longest part of a token before where its search starts
_PEM_LABEL = r"(?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
_NEWLINE = r"(?:\r?\n|\\r?\\n)"  # a real one, or one escaped in JSON text
# A whole block, found first: a token glued to it must not take its first line. A block
# cut short before its END line still loses every base64 line it kept.
_PRIVATE_KEY = re.compile(
    rf"G(?<=-----BEG)IN {_PEM_LABEL}(?:[\s\S]{{0,65536}}?-----END {_PEM_LABEL}"
    rf"|(?:{_NEWLINE}{{1,2}}(?:[A-Za-z0-9+/=]{{40,}}(?![\w-])|(?:Proc-Type|DEK-Info):[^\r\n\\]*))*"
    rf"(?:{_NEWLINE}[A-Za-z0-9+/=]+(?![\w-]))?)"
)
_AROUND = (
    ("bearer_token", "", r"Bearer[ \t]+[\w.~+/-]{15,}[\w~+/-]=*"),
    ("bearer_token", "", r"bearer[ \t]+[\w.~+/-]{15,}[\w~+/-]=*"),
    # scheme://user:password@host
    ("url_password", "", r"://[^\s:/?#@\"'<>`\\\[\]]*:[^\s/?#\"'<>`\\]+@(?=[\w\[])"),
)


def _union(patterns: Iterable[tuple[str, str]]) -> tuple[re.Pattern[str], dict[str, str]]:
    """One regex for (kind, regex) pairs, and the kind of each alternative by the name of
    the empty group that ends it (`match.lastgroup`)."""
    patterns = list(patterns)
    regex = "|".join(f"{p}(?P<k{n}>)" for n, (_, p) in enumerate(patterns))
    return re.compile(regex, re.ASCII), {f"k{n}": kind for n, (kind, _) in enumerate(patterns)}


def _anchored(before: str, rest: str, token: bool) -> str:
    """`before` + `rest` as a regex that starts at the first character of `rest`; a `token`
    starts where a word does (so that a run of "eyJeyJ..." is not searched once per J)."""
    behind = before + rest[0]
    return (rest[0] + (f"(?<={behind})" if before else "")
            + (rf"(?<![\w-]{behind})" if token else "") + rest[1:])


_END = r"(?![\w-])"  # tokens end where a word does
_SPECIFIC, _SPECIFIC_KIND = _union(
    [(kind, _anchored(before, rest, False)) for kind, before, rest in _AROUND]
    + [(kind, _anchored(before, rest, True) + _END) for kind, before, rest in _FORMATS]
)
_FORMAT, _FORMAT_KIND = _union((kind, before + rest + _END) for kind, before, rest in _FORMATS)
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_NOT_PASSWORDS = frozenset({"password", "passwd", "pass", "pwd", "pw", "secret"})  # templates

# Values known by their name: `NAME=value`, `export NAME=value`, `NAME: value` (YAML, HTTP
# headers), `"name": "value"` (JSON), `name = "value"` (code), found from the key word in
# the name, in any case; _named finds the rest of the name and judges the value.
_KEYWORDS = {  # and the index of its letter a search starts at
    "key": 0, "token": 2, "secret": 2, "credential": 0, "password": 4, "passwd": 4, "pwd": 1,
    "auth": 1, "private": 3,
}


def _any_case(word: str) -> str:
    return "".join(f"[{c.upper()}{c}]" for c in word)


def _keyword_regex() -> str:
    by_letter: dict[str, list[str]] = {}
    for word, at in _KEYWORDS.items():
        behind = f"(?<={_any_case(word[: at + 1])})" if at else ""
        by_letter.setdefault(word[at], []).append(behind + _any_case(word[at + 1 :]))
    return "|".join(f"{c}(?:{'|'.join(rests)})"
                    for letter, rests in by_letter.items() for c in (letter, letter.upper()))


_NAMED = re.compile(
    # (?=(x))\1 takes x whole, never a part of it: a long name fails at once
    rf"(?P<name>(?:{_keyword_regex()})(?=(?P<rest>[\w.-]{{0,64}}))(?P=rest))"
    r"(?P<close>[\"']?)"
    r"(?:[ \t]*:[ \t]*[A-Za-z_][\w.\[\], |]*?(?=[ \t]*=))?"  # the type of `name: str = "..."`
    r"(?P<op>[ \t]*[=:][ \t]*)"
    r"(?:\"(?P<dq>[^\"\\\n]*(?:\\.[^\"\\\n]*)*)\"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s\"'`&\\]+))",
    re.ASCII,
)
# A name whose last word is one of these holds something about a secret, not the secret:
# token_type, key_id, PRIVATE_KEY_PATH, auth_url, secret_name.
_QUALIFIERS = frozenset((
    "id ids name names type types kind count counts file files path paths dir url urls uri"
    " endpoint host port user username method mode length len size prefix suffix format"
    " field fields header env var hint help label description desc message msg prompt"
    " placeholder title text source provider strategy scope scopes version region expiry"
    " expires expiration ttl limit limits used usage budget model models index ref location"
    " store cache policy algorithm alg enabled required pattern regex class config info"
    " status state backend manager service engine"
).split())
_KEYWORD_ENDS = tuple(_KEYWORDS)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_NAME_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_AWS_NAME = re.compile(r"aws.?secret|secret.?access.?key", re.IGNORECASE)
_AWS_SECRET = re.compile(r"[A-Za-z0-9/+=]{40}")
# Around an unquoted value: what may stand before `NAME=value` (a shell line, a query
# string, a flag), and the start and end of the line of a `name: value`.
_BEFORE_ASSIGN = frozenset(" \t\r\n?&;|\"'`")
_LINE_HEAD = re.compile(r"[ \t]*(?:[0-9]+(?:\u2192|\t|:|\|))?[ \t+-]*")  # gutter, list, diff
_LINE_TAIL = re.compile(r"[ \t\r]*(?:#.*)?")
_CODE_CHARS = frozenset("()[]{}")
_NEARBY = 200
# Values that are not secrets whatever their name: references ($VAR, ${VAR}, %VAR%),
# templates (<token>, {{ x }}, ***, your-key-here), paths, numbers, versions and dates,
# names in code (os.environ, settings.API_KEY), URLs, elided values (sk-abc...); and
# unquoted, YAML's tags, anchors, aliases and block scalars, curl's @file.
_NOT_SECRET_START = "$%<{[("
_NOT_BARE_START = _NOT_SECRET_START + "!&*|>=:#@"
_NOT_SECRET = re.compile(
    r"\.{0,2}/|~[/\\]|[A-Za-z]:\\"
    r"|[-+]?[0-9][0-9.,_:eE+-]*$|v?[0-9]+(?:\.[0-9]+)+(?:[-+.][\w.]+)?$|[*xX.\u2022_-]+$"
    r"|[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+(?:\(\))?$"
    r"|.*(?:://|\.\.\.|\u2026"
    r"|(?<![A-Za-z0-9])(?:your|replace|changeme|change-me|placeholder|example|dummy)"
    r"(?![A-Za-z0-9]))",
    re.IGNORECASE,
)
_SPACE = re.compile(r"\s")
_NOT_VALUES = frozenset("true false null none nil undefined yes no on off".split())
_WORDS = re.compile(r"[A-Za-z]+(?:[ _-][A-Za-z]+)*")
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def redact(text: str) -> tuple[str, Counter[str]]:
    """`text` with every secret found replaced by [REDACTED:<kind>], and how many of each kind."""
    counts: Counter[str] = Counter()
    text = _replace(text, _PRIVATE_KEY, _private_key, counts)
    text = _replace(text, _SPECIFIC, _specific, counts)
    return _replace(text, _NAMED, _named, counts), counts


Judge = Callable[[str, re.Match[str]], tuple[str, int, int] | None]


def _replace(text: str, regex: re.Pattern[str], judge: Judge, counts: Counter[str]) -> str:
    """`text` with a placeholder for each secret that `judge` sees in a match of `regex`."""
    out: list[str] = []
    done = 0
    for match in regex.finditer(text):
        found = judge(text, match)
        if found is not None and found[1] >= done:
            kind, start, end = found
            out += (text[done:start], PLACEHOLDER.format(kind))
            done = end
            counts[kind] += 1
    return "".join(out) + text[done:] if out else text


def _private_key(text: str, match: re.Match[str]) -> tuple[str, int, int]:
    """The whole block, from its first dash."""
    return "private_key", match.start() - len("-----BE"), match.end()


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
    elif kind == "bearer_token":
        if start and text[start - 1] in _TOKEN_CHARS:
            return None  # "myBearer"
        start += len("Bearer")
        while text[start] in " \t":
            start += 1
        kind = _format(text, start, end) or ("bearer_token" if _random(text[start:end]) else "")
    else:  # a format: its token starts after the last character that a token cannot hold
        least = max(start - _LONGEST_PREFIX, 0)
        while start > least and text[start - 1] in _TOKEN_CHARS:
            start -= 1
        kind = "" if start and text[start - 1] in _TOKEN_CHARS else _format(text, start, end)
    return (kind, start, end) if kind else None


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


def _password(password: str) -> bool:
    """True unless the password of a URL is a template: $PASS, {password}, ****, "password"."""
    return (password[0] not in "$%{<[*" and password.lower() not in _NOT_PASSWORDS
            and password.strip("*xX") != "")


def _named(text: str, match: re.Match[str]) -> tuple[str, int, int] | None:
    """The kind, start and end of the value that a match of _NAMED assigns to a name, if
    that value is a secret."""
    group = "bare" if match["bare"] is not None else "dq" if match["dq"] is not None else "sq"
    start, end = match.span(group)
    value = text[start:end]
    if len(value) < 6 or "[REDACTED:" in value:
        return None  # most matches, at once: `"input_tokens": 1200`
    at = match.start()
    least = max(at - 100, 0)
    while at > least and text[at - 1] in _NAME_CHARS:
        at -= 1
    name, close = text[at : match.end("name")], match["close"]
    head = at - len(close)  # where the name starts, with its opening quote
    if close and text[head:at] != close:
        return None
    before = text[head - 1] if head else "\n"
    if _AWS_NAME.search(name) and _AWS_SECRET.fullmatch(value):
        return "aws_secret_key", start, end  # in any form, ini's `key = value` too
    if not _secret_name(name):
        return None
    op = match["op"]
    if group == "bare":
        if value.endswith(";"):  # `export TOKEN=...;`
            value, end = value[:-1], end - 1
        if not _bare_value(text, op, before, value, head, end):
            return None
    elif before in "\"'" and not close:
        return None  # the name is in a string that ends at the value's opening quote
    # plain words are secrets only as an environment variable's value (DB_PASSWORD=postgres),
    # not as a constant's in code (STORAGE_KEY = "todo-list")
    env = name.isupper() and (op == "=" or op.strip() == ":")
    if value[0] in (_NOT_BARE_START if group == "bare" else _NOT_SECRET_START):
        return None
    return ("env_secret", start, end) if _plausible(value, env) else None


def _secret_name(name: str) -> bool:
    """True when a part of `name` is a key word (API_KEY, githubToken, apikey, tokens) and
    its last part does not say that the value is about a secret (key_id, token_type)."""
    parts = [p.lower() for p in _NAME_PART.findall(name)]
    if not parts or parts[-1] in _QUALIFIERS or parts in (["key"], ["keys"], ["private"]):
        return False  # a map's "key", a keyboard's; `private: true`
    if any(p.startswith("pub") for p in parts):
        return False  # public_key, pubkey
    return any((p[:-1] if p.endswith("s") else p).endswith(_KEYWORD_ENDS) for p in parts)


def _bare_value(text: str, op: str, before: str, value: str, head: int, end: int) -> bool:
    """True when an unquoted value stands where a literal does: `NAME=value` in a shell
    line, a query string or a flag; `name: value` alone on a line (YAML, an HTTP header)
    or as a whole quoted string (curl -H "X-Api-Key: ..."). Not a call's argument."""
    if _CODE_CHARS.intersection(value) or value.endswith(","):
        return False
    if op == "=":
        return before in _BEFORE_ASSIGN
    if op.strip() != ":" or op[-1] not in " \t":
        return False  # `name = value` in code is an expression, not a literal
    if before in "\"'":
        return text[end : end + 1] == before
    # looked for nearby only, so that a long line costs no more than a short one
    line = text.rfind("\n", max(head - _NEARBY, 0), head) + 1
    eol = text.find("\n", end, end + _NEARBY)
    eol = len(text) if eol < 0 and end + _NEARBY >= len(text) else eol
    return (head - line < _NEARBY and eol >= 0
            and _LINE_HEAD.fullmatch(text, line, head) is not None
            and _LINE_TAIL.fullmatch(text, end, eol) is not None)


def _plausible(value: str, env: bool) -> bool:
    """True when `value` may be a secret: 6 characters or more, not a reference, template,
    number, path or name in code; plain words only when `env`."""
    if len(value) < 6 or value.lower() in _NOT_VALUES or _NOT_SECRET.match(value):
        return False
    if env:
        return True
    if _SPACE.search(value):
        return False
    if not _WORDS.fullmatch(value):
        return True
    # words ("Bearer", "changeme", "SecretStr"), not random letters ("kQzPwLmN")
    words = _WORD.findall(value)
    return any(len(w) > 15 for w in words) or len(value) < 3 * len(words)
