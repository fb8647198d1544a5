"""Secret redaction: API keys, tokens, passwords and private keys become typed placeholders.

`redact` runs on text before it leaves the machine (the `llm` summarizer's requests): each
secret becomes `[REDACTED:<kind>]`. The values found are never logged, kept or returned;
only how many of each kind is. Precompiled regexes find secrets with a format of their own
or a word or flag before them (`Basic`, `--password`), then values that only their name
gives away (`DB_PASSWORD=...`), also inside JSON text, where a newline is `\\n`.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import Counter
from collections.abc import Callable, Iterable

PLACEHOLDER = "[REDACTED:{}]"
# The order they are looked for in: whole key blocks, then the formats providers give
# their secrets (a longer prefix before a shorter one), then values known by what stands
# around them. A value that has a format counts once, as that format's kind.
KINDS = (
    "private_key", "jwt", "anthropic_key", "openrouter_key", "openai_key", "github_token",
    "gitlab_token", "google_api_key", "slack_token", "stripe_key", "huggingface_token",
    "npm_token", "groq_key", "xai_key", "sendgrid_key", "twilio_key", "discord_token",
    "aws_access_key", "bearer_token", "basic_auth", "url_password", "cli_secret",
    "aws_secret_key", "env_secret",
)

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
_NEWLINE = r"(?:\r?\n|\\r?\\n)"  # a real one, or one escaped in JSON text
# A whole block, found first: a token glued to it must not take its first line. A block
# cut short before its END line still loses every base64 line it kept.
_PRIVATE_KEY = re.compile(
    rf"G(?<=-----BEG)IN {_PEM_LABEL}(?:[\s\S]{{0,65536}}?-----END {_PEM_LABEL}"
    rf"|(?:{_NEWLINE}{{1,2}}(?:[A-Za-z0-9+/=]{{40,}}(?![\w-])|(?:Proc-Type|DEK-Info):[^\r\n\\]*))*"
    rf"(?:{_NEWLINE}[A-Za-z0-9+/=]+(?![\w-]))?)"
)
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


def _union(patterns: Iterable[tuple[str, str]]) -> tuple[re.Pattern[str], dict[str, str]]:
    """One regex for (kind, regex) pairs, and the kind of each alternative by the name of
    the empty group that ends it (`match.lastgroup`)."""
    patterns = list(patterns)
    regex = "|".join(f"{p}(?P<k{n}>)" for n, (_, p) in enumerate(patterns))
    return re.compile(regex, re.ASCII), {f"k{n}": kind for n, (kind, _) in enumerate(patterns)}


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
    starts where a word does (so that a run of "eyJeyJ..." is not searched once per J)."""
    behind = before + rest[0]
    return (rest[0] + (f"(?<={behind})" if before else "")
            + (rf"(?<![\w-]{behind})" if token else "") + rest[1:])


_END = r"(?![\w-])"  # tokens end where a word does
_SPECIFIC, _SPECIFIC_KIND = _searched(
    [(kind, before, rest, False) for kind, before, rest in _AROUND]
    + [(kind, before, rest, True) for kind, before, rest in _FORMATS]
)
_FORMAT, _FORMAT_KIND = _union((kind, before + rest + _END) for kind, before, rest in _FORMATS)
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_NOT_PASSWORDS = frozenset({"password", "passwd", "pass", "pwd", "pw", "secret"})  # templates
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

# Values known by their name: `NAME=value`, `export NAME=value`, `NAME: value` (YAML, HTTP
# headers), `"name": "value"` (JSON, also escaped in JSON text), `name = "value"` (code),
# found from the key word in the name, in any case; _named finds the rest of the name and
# judges the value. "pass" covers password, passwd and passphrase.
_KEYWORDS = {  # and the index of its letter a search starts at
    "key": 0, "token": 2, "secret": 2, "credential": 0, "pass": 0, "pwd": 1, "auth": 1,
    "private": 3,
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
    r"(?P<close>\\\"|[\"']?)"
    r"(?:[ \t]*:[ \t]*[A-Za-z_][\w.\[\], |]*?(?=[ \t]*=))?"  # the type of `name: str = "..."`
    r"(?P<op>[ \t]*[=:][ \t]*)"
    r"(?:\"(?P<dq>[^\"\\\n]*(?:\\.[^\"\\\n]*)*)\"|\\\"(?P<edq>[^\"\\\n]*)\\\""
    r"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s\"'`&\\]+))",
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
_KEYWORD_ENDS = ("key", "token", "secret", "credential", "auth", "private")
_PASSWORD_ENDS = ("password", "passwd", "passphrase", "pwd")
_NOT_PASS = frozenset("bypass compass encompass overpass underpass trespass surpass".split())
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_NAME_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_ESCAPE = re.compile(r"\\(?:[nrt]|u[0-9a-fA-F]{4})")  # JSON text's newline, tab, "→"
_AWS_NAME = re.compile(r"aws.?secret|secret.?access.?key", re.IGNORECASE)
_AWS_SECRET = re.compile(r"[A-Za-z0-9/+=]{40}")
# Around an unquoted value: what may stand before `NAME=value` (a shell line, a query
# string, a flag), and the start and end of the line of a `name: value`, real or in JSON
# text: a listing's gutter (`12→`, `12\t`, `12:`, `12|`), a diff's +/-, a quote's >, export.
_BEFORE_ASSIGN = frozenset(" \t\r\n?&;|\"'`\u2192")
_LINE_HEAD = re.compile(
    r"(?:[ \t]|\\t)*(?:[0-9]+(?:\u2192|\\u2192|\t|\\t|:|\|))?(?:[ \t+>-]|\\t)*(?:export )?")
_LINE_TAIL = re.compile(r"[ \t\r]*(?:#[^\n]{0,200})?(?:\n|\Z)"
                        r"|(?:[ \t]|\\t)*(?:#[^\"\\\n]{0,200})?(?:\\r)?(?:\\n|\")")
_MORE_WORDS = re.compile(r"(?: [^\s\"'`#|\\()\[\]{},%]+){1,7}")  # a passphrase's, in YAML
_ENV_REST = re.compile(r"[^\s\"'`\\]*")  # an .env line's value goes on past "&"
_CODE_CHARS = frozenset("()[]{}")
_CALL = re.compile(r"[\w.]*[(\[{]")
_NEARBY = 200
# Values that are not secrets whatever their name: references ($VAR, ${VAR}, %VAR%),
# templates (<token>, {{ x }}, ***, your-key-here), paths, numbers, versions and dates,
# URLs, elided values (sk-abc...); and unquoted, YAML's tags, anchors, aliases and block
# scalars, curl's @file. Names in code (os.environ, settings.API_KEY) are _DOTTED.
_NOT_SECRET_START = "$%<{[("
_NOT_BARE_START = _NOT_SECRET_START + "!&*|>=:#@"
_NOT_SECRET = re.compile(
    r"\.{0,2}/|~[/\\]|[A-Za-z]:\\|[\w.-]+(?:/[\w.-]+)+\.[A-Za-z]\w{0,4}$"
    r"|[-+]?[0-9][0-9.,_:eE+-]*$|v?[0-9]+(?:\.[0-9]+)+(?:[-+.][\w.]+)?$|[*xX.\u2022_/-]+$"
    r"|.*(?:://|\.\.\.|\u2026"
    r"|(?<![A-Za-z0-9])(?:your|replace|changeme|change-me|placeholder|example|dummy)"
    r"(?![A-Za-z0-9]))",
    re.IGNORECASE,
)
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+(?:\(\))?")
_SPACE = re.compile(r"\s")
_NOT_VALUES = frozenset("true false null none nil undefined yes no on off".split())
# what a password's name is given in a type or a schema rather than a password
_TYPE_WORDS = frozenset(
    "string str bytes text number int integer float double any unknown object boolean bool"
    " dict list tuple array callable secretstr secretbytes required optional".split())
_SENTENCE_CHARS = frozenset(",%{}")  # "expected bytes, got %s"
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
    """`text` with a placeholder for each secret that `judge` sees in a match of `regex`.
    A secret that ends after its match (a value that runs on past an `&`) is searched on
    from its end, as the text redacted will be: so redacting again finds nothing more."""
    out: list[str] = []
    done = 0
    match = regex.search(text)
    while match is not None:
        found = judge(text, match)
        if found is not None and found[1] >= done:
            kind, start, end = found
            out += (text[done:start], PLACEHOLDER.format(kind))
            done = end
            counts[kind] += 1
        match = regex.search(text, max(match.end(), done))
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


def _named(text: str, match: re.Match[str]) -> tuple[str, int, int] | None:
    """The kind, start and end of the value that a match of _NAMED assigns to a name, if
    that value is a secret."""
    group = match.lastgroup or "bare"  # the value's group closes last
    start, end = match.span(group)
    if not _may_hold(text, match, start, end, group == "bare"):
        return None
    at, escaped = _name_start(text, match.start())
    name, close, op = text[at : match.end("name")], match["close"], match["op"]
    head = at - len(close)  # where the name starts, with its opening quote
    if close and text[head:at] != close:
        return None
    before = "\n" if escaped else text[head - 1] if head else "\n"
    if _AWS_NAME.search(name) and _AWS_SECRET.fullmatch(text, start, end):
        return "aws_secret_key", start, end  # in any form, ini's `key = value` too
    password = _name_kind(name)
    if not password or (end - start < 6 and password != "password"):
        return None
    # plain words are secrets only as an environment variable's value (DB_PASSWORD=postgres),
    # not as a constant's in code (STORAGE_KEY = "todo-list"), or as a password's
    env = name.isupper() and (op == "=" or op.strip() == ":")
    how = "env" if env else "loose" if password == "password" else ""
    if group == "bare":
        # a YAML passphrase's words, not "pwd: Jim Meyering" (coreutils' AUTHORS)
        words = (not close and (name.islower() or name.isupper())
                 and name.lower().endswith(("password", "passwd", "passphrase")))
        end = _bare_end(text, match, head, end, env, words)
        if end < 0 or not _bare_value(text, op, before, text[start:end], head, end, env):
            return None
        if "=" in op and not env:
            how = "code"  # `login(password=args.password)`
    elif before in "\"'" and not close:
        return None  # the name is in a string that ends at the value's opening quote
    value = text[start:end]
    if value[0] in (_NOT_BARE_START if group == "bare" else _NOT_SECRET_START):
        return None
    least = 4 if password == "password" else 6
    return ("env_secret", start, end) if _plausible(value, least, how, group == "bare") else None


def _may_hold(text: str, match: re.Match[str], start: int, end: int, bare: bool) -> bool:
    """False for most matches, at once: `"input_tokens": 1200`, `"output_tokens":12,`, a
    test's `--- PASS: TestX`, a value too short even for a password ("password: x")."""
    name, at = match["name"], match.start()
    if name in ("PASS", "Pass", "pass") and text[at - 1 : at] not in _NAME_CHARS:
        return False
    if (bare and text[end - 1] == ",") or (end - start < 6 and not (
            name.lower().endswith(("pass", "wd", "word", "phrase"))
            and (end - start > 3 or text[end : end + 1] in (" ", "\t")))):
        return False
    return "[REDACTED:" not in text[start:end]


def _name_start(text: str, at: int) -> tuple[int, bool]:
    """Where the name that goes on at `at` starts, and whether a newline or tab escaped in
    JSON text stands before it ("...\\nDB_PASSWORD=...")."""
    least = max(at - 100, 0)
    while at > least and text[at - 1] in _NAME_CHARS:
        at -= 1
    if at and text[at - 1] == "\\" and (escape := _ESCAPE.match(text, at - 1)):
        return escape.end(), True
    return at, False


def _name_kind(name: str) -> str:
    """"password" when the last part of `name` says it holds one (DB_PASS, passphrase),
    "secret" when another part is a key word (API_KEY, githubToken, apikey, tokens) and
    its last part does not say that the value is about a secret (key_id, token_type)."""
    parts = [p.lower() for p in _NAME_PART.findall(name)]
    if not parts or parts[-1] in _QUALIFIERS or parts in (["key"], ["keys"], ["private"],
                                                          ["pass"]):
        return ""  # a map's "key", a keyboard's; `private: true`; a test's "--- PASS: x"
    if any(p.startswith("pub") for p in parts):
        return ""  # public_key, pubkey
    upper = name.isupper()
    if _password_part(parts[-1], upper):
        return "password"
    return "secret" if any(_password_part(p, upper) or (p[:-1] if p.endswith("s") else p)
                           .endswith(_KEYWORD_ENDS) for p in parts) else ""


def _password_part(part: str, upper: bool = False) -> bool:
    """True for pass, password, passwd, passphrase, pwd, and words ending in them; "pass"
    glued to another word only in an environment variable's name (DBPASS, not lowpass)."""
    return (part == "pass" or part.endswith(_PASSWORD_ENDS)
            or (upper and part.endswith("pass") and part not in _NOT_PASS))


def _bare_end(text: str, match: re.Match[str], head: int, end: int, env: bool,
              words: bool) -> int:
    """Where an unquoted value ends: before a `;` (`export TOKEN=...;`); past an `&` on an
    .env line (a Django key); past its spaces when a YAML passphrase has `words`; -1 if
    it does not end where a value can."""
    if text[end - 1] == ";":
        return end - 1
    if text[end : end + 1] == "&" and env and _line_head(text, head):
        return _ENV_REST.match(text, end).end()  # type: ignore[union-attr]  # matches ""
    op = match["op"]
    if words and op in (": ", " : ") and text[end : end + 1] == " ":  # not a table's columns
        more = _MORE_WORDS.match(text, end)
        return more.end() if more else -1
    return end


def _bare_value(text: str, op: str, before: str, value: str, head: int, end: int,
                env: bool) -> bool:
    """True when an unquoted value stands where a literal does: `NAME=value` in a shell
    line, a query string, a flag or a listing's line; `name: value` alone on a line (YAML,
    an HTTP header) or as a whole quoted string (curl -H "X-Api-Key: ..."). Not a call's
    argument, nor code (an .env value may hold brackets, but is not a call)."""
    if value.endswith(",") or (_CODE_CHARS.intersection(value)
                               and (not env or op != "=" or _CALL.match(value))):
        return False
    if op == "=":
        return before in _BEFORE_ASSIGN or _line_head(text, head)
    if op.strip() != ":" or op[-1] not in " \t":
        return False  # `name = value` in code is an expression, not a literal
    if before in "\"'":
        return text[end : end + 1] == before or (before == '"' and _line_tail(text, end))
    return _line_head(text, head) and _line_tail(text, end)


def _line_head(text: str, head: int) -> bool:
    """True when only a margin stands between the start of the line and `head`: spaces, a
    listing's line number, a diff's sign; the line ends at a real newline or an escaped one.
    Looked for nearby only, so that a long line costs no more than a short one."""
    least = max(head - _NEARBY, 0)
    escaped = text.rfind("\\n", least, head)
    line = max(text.rfind("\n", least, head) + 1, escaped + 2 if escaped >= 0 else 0)
    quote = text.rfind('"', line, head)  # a JSON string's first line starts after `"key": "`
    if quote > 0 and text[max(quote - 2, 0) : quote].rstrip().endswith(":"):
        line = quote + 1
    return head - line < _NEARBY and _LINE_HEAD.fullmatch(text, line, head) is not None


def _line_tail(text: str, end: int) -> bool:
    """True when only spaces and a comment stand between `end` and the end of its line."""
    return _LINE_TAIL.match(text, end) is not None


def _plausible(value: str, least: int, how: str, bare: bool) -> bool:
    """True when `value` may be a secret: `least` characters or more, not a reference,
    template, number, path or name in code; plain words only `how` = "env", or "loose" (a
    password's, not a placeholder's, a type's or a sentence's); a dotted name only with a
    digit as "env", with a generated part otherwise, never as "code"."""
    if len(value) < least or value.lower() in _NOT_VALUES or _NOT_SECRET.match(value):
        return False
    if _DOTTED.fullmatch(value):  # os.environ, self.config.token; ya29.a0Af...
        if how == "env":
            return any(c.isdigit() for c in value)
        return how != "code" and any(
            len(p) >= 8 and any(c.isdigit() for c in p) and any(c.isalpha() for c in p)
            for p in value.split("."))
    if how == "env":
        return True
    spaced = _SPACE.search(value) is not None
    if how == "loose" and (spaced or _WORDS.fullmatch(value)):
        return _passphrase(value, spaced, bare)
    if spaced:
        return False
    if not _WORDS.fullmatch(value):
        return True
    # words ("Bearer", "changeme", "SecretStr"), not random letters ("kQzPwLmN")
    words = _WORD.findall(value)
    return any(len(w) > 15 for w in words) or len(value) < 3 * len(words)


def _passphrase(value: str, spaced: bool, bare: bool) -> bool:
    """True when the words `value` holds as a password's value are one, not a placeholder
    ("password", "string", API_KEY), a variable (user_password) or a sentence ("Enter your
    password:", "Forgot password?", "string | null")."""
    low = value.lower()
    if low in _NOT_PASSWORDS or low in _TYPE_WORDS or (bare and value.isupper()):
        return False
    if "pass" in low or "pwd" in low:
        return False
    return not spaced or (value[-1] not in ".?!:" and not _SENTENCE_CHARS.intersection(value)
                          and _TYPE_WORDS.isdisjoint(low.split()))
