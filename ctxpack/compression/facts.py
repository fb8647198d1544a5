"""Facts: the verbatim details of a text that a summary must not lose.

`extract` finds file paths, URLs, identifiers, error lines, significant numbers and
shell commands (error lines as `failures` tells them); `merge` joins the facts of
several texts. Pure and fast: linear-time precompiled regexes, so a megabyte of tool
output takes milliseconds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields

from .failures import MAX_LINE, error_lines

CATEGORIES = ("paths", "urls", "identifiers", "errors", "numbers", "commands")
MAX_WORD = 2048  # a longer run without spaces is data (base64, minified code), not a path
MAX_NAME = 200  # nor can a longer one be an identifier

EXTENSIONS = frozenset((
    "py pyi pyx ipynb js mjs cjs jsx ts tsx vue svelte go rs rb java kt kts scala swift c h cc"
    " cpp cxx hpp hh cs fs m mm php pl pm lua r jl ex exs erl hrl hs ml mli clj dart zig nim sol"
    " move sh bash zsh fish ps1 bat cmd sql graphql gql proto json jsonl ndjson yaml yml toml ini"
    " cfg conf env lock xml html htm css scss sass less md mdx rst txt csv tsv log svg png jpg"
    " jpeg gif webp ico pdf zip gz tgz tar whl db sqlite parquet patch diff tf tfvars gradle"
    " cmake mk dockerfile pem crt key out err bak tmp map wasm so dll exe bin dat heex eex leex"
    " astro"
).split())
# A run of path characters; whether it is a path is judged in Python (fast, no backtracking).
_RUN = re.compile(r"(?:[A-Za-z]:)?[\w.@+~\-/]+")
_WIN_PATH = re.compile(r"(?<![\w\\])[A-Za-z]:(?:\\{1,2}[\w.@+~\-]+)+")
_LETTER = re.compile(r"[^\W\d_]")
# (opening with the class of its first letter lets the engine skip to the next h or f
# at C speed; the lookbehind is the word boundary before it)
_URL = re.compile(r"[hf](?<!\w[hf])(?:(?<=h)ttps?|(?<=f)(?:tp|ile))://[^\s<>\"'`\\|^{}]+")
_URL_TAIL = ".,;:!?'\")]}*"
_NOT_PATHS = frozenset({
    "and/or", "either/or", "w/o", "yes/no", "true/false", "on/off", "read/write", "input/output",
    "client/server", "he/she", "his/her", "s/he", "n/a", "am/pm",
})
_MEDIA = re.compile(r"(?:application|text|image|audio|video|multipart|font)/[\w.+\-]+$")

# The kinds that begin a word share one lookbehind, tried once where each would try its
# own: inside a word (most places) the search moves on after two cheap tests.
_IDENTIFIER = re.compile(
    r"`(?P<code>[\w.:$@<>\[\]()\-]{2,60})`"
    r"|(?<!\w)(?:"
    r"(?P<uuid>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\b"
    r"|(?P<sha>[0-9a-f]{7,64})\b"
    r"|(?P<call>(?:toolu|call|fc)_[A-Za-z0-9_]{8,})\b"
    r"|(?<![&#])(?P<issue>#\d{1,6})\b"
    r"|(?P<ticket>[A-Z][A-Z0-9]{1,9}-\d{2,})\b"
    r"|(?<!\.)(?P<dotted>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?)(?![\w.])"
    r"|(?<!\.)(?P<called>[A-Za-z_]\w*\(\)))"
)
_ID_HINT = re.compile(r"[\d`.(]")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z][a-z]+[A-Z]")
_SYMBOL_SPLIT = re.compile(r"[.:()<>\[\]$@\-]+")
_NOT_TICKETS = frozenset({"UTF", "SHA", "ISO", "AES", "RSA", "TLS", "SSL", "HTTP", "COVID", "MD"})

_UNITS = (
    r"ms|s|sec|secs|seconds?|min|mins|minutes?|h|hours?|[kKMGT]i?B|bytes?|tokens?|%|x"
    r"|passed|failed|errors?|tests?|files?|lines?|warnings?|skipped|items?|rows?|commits?"
)
_VERSION_TAIL = r"(?:[.\-+][0-9A-Za-z]+)*(?![\w.\-/])"
# A version (v1.2.3), a number with its unit (12 ms, 3 passed), or a bare number of 3+
# digits, none glued to the word before. The pattern opens with the character class
# every match starts with, so that the regex engine skips to the next "v" or digit at
# C speed; the lookbehind then looks at the character before it, and the branches know
# which it was by looking back at it.
_NUMBER = re.compile(
    r"[v\d](?<![\w.,:/#+\-].)(?:"
    rf"(?<=v)\d+\.\d+\.\d+{_VERSION_TAIL}"
    rf"|(?<=\d)(?:\d*\.\d+\.\d+{_VERSION_TAIL}"
    rf"|\d*(?:\.\d+)?[ ]?(?:{_UNITS})(?![\w/])"
    # a bare number needs 3+ digits; line numbers of listings ("12→", "12\t", ":12:") are not facts
    r"|\d{2,}(?:,\d{3})*(?:\.\d+)?(?![\w:/\-\t→|]|[.,]\d)"
    r"))"
)
_COMMAND_LINE = re.compile(r"^[ \t]*\$ ([^\n]+)", re.MULTILINE)
_COMMAND_JSON = re.compile(
    r'"(?:command|cmd)"[ \t]*:[ \t]*(\[(?:[^\]"]|"(?:[^"\\\n]|\\.)*")*\]|"(?:[^"\\\n]|\\.)*")'
)


@dataclass(frozen=True, slots=True)
class Facts:
    """Facts of one kind each, distinct and in first-seen order."""

    paths: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    numbers: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()

    def all(self) -> Iterator[str]:
        """Every fact, category by category in CATEGORIES order."""
        for name in CATEGORIES:
            yield from getattr(self, name)


def extract(text: str) -> Facts:
    """The facts of `text`."""
    urls = _distinct(_urls(text))
    # URLs are blanked out so that their paths and hosts are not read a second time
    rest = _URL.sub(lambda m: " " * len(m.group()), text) if urls else text
    # Paths and identifiers sit inside one word; scanning only the words that can hold
    # one is several times faster than scanning everything (and skips base64 blobs).
    words = [w for w in rest.split() if len(w) <= MAX_WORD]
    path_words = " ".join(w for w in words if "/" in w or "." in w or "\\" in w)
    # every kind of identifier holds a digit, a backtick, a dot or a call's "(" (a UUID
    # may have none: it is long and has dashes)
    hint = _ID_HINT.search
    id_words = " ".join([w for w in words if not w.isalpha() and len(w) <= MAX_NAME
                         and (hint(w) or len(w) >= 36 and "-" in w)])
    return Facts(
        paths=_distinct(_paths(path_words)),
        urls=urls,
        identifiers=_distinct(_identifiers(id_words)),
        errors=_distinct(error_lines(text)),
        numbers=_distinct(_numbers(rest)),
        commands=_distinct(commands(text)),
    )


def extract_all(texts: list[str]) -> list[Facts]:
    """The facts of each text (in a form worker processes can be given: see `workers`)."""
    return [extract(t) for t in texts]


def merge(*facts: Facts) -> Facts:
    """One Facts holding all of `facts`, still distinct and in first-seen order."""
    return Facts(**{
        f.name: _distinct(x for one in facts for x in getattr(one, f.name)) for f in fields(Facts)
    })


def commands(text: str) -> Iterator[str]:
    """Shell commands in `text`: `$ cmd` lines and JSON "command"/"cmd" values."""
    for match in _COMMAND_LINE.finditer(text):
        yield match.group(1).strip()[:MAX_LINE]
    for match in _COMMAND_JSON.finditer(text):
        try:
            value = json.loads(match.group(1))
        except (ValueError, RecursionError):  # not JSON, or an array nested past the parser
            continue
        command = shell_command(value)
        if command:
            yield command[:MAX_LINE]


def shell_command(value: object) -> str:
    """A command as one line of text, from a string or an argv list (`bash -lc X` gives X)."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        if len(value) == 3 and value[1] in ("-lc", "-c") and value[0].endswith("sh"):
            return value[2].strip()
        return " ".join(value)
    return ""


def _paths(text: str) -> Iterator[str]:
    for match in _RUN.finditer(text):
        run = match.group()
        if "/" not in run and "." not in run:
            continue
        before = text[match.start() - 1] if match.start() else ""
        if before in (":", "<"):  # "host:8080/api", "</div>": not paths
            continue
        if before == "\\":
            if run[0] not in "ntr":  # a piece of a Windows path, found whole below
                continue
            run = run[1:]  # glued to a JSON escape ("\n/src/app.py")
        path = run.rstrip(".-~")
        if _is_path(path):
            yield path
    if ":\\" in text:
        for match in _WIN_PATH.finditer(text):
            yield match.group().replace("\\\\", "\\")


def _is_path(path: str) -> bool:
    if "/" not in path:
        name, _, ext = path.rpartition(".")
        # a file name's extension is in lower case, or the whole name in capitals
        # (README.TXT); `store.DB` and `ctx.Err` are a field and a method, not files
        cased = ext.islower() or path.isupper()
        return (bool(name) and cased and ext.lower() in EXTENSIONS
                and _LETTER.search(name) is not None)
    if not _LETTER.search(path) or path.lower() in _NOT_PATHS or _MEDIA.match(path):
        return False
    parts = [p for p in path.split("/") if p]
    # "I/O", "TCP/IP", "A/B": short all-capital words are prose, not folders
    return not (len(parts) == 2 and all(p.isupper() and len(p) <= 4 for p in parts))


def _urls(text: str) -> Iterator[str]:
    for match in _URL.finditer(text):
        url = match.group()
        while url and url[-1] in _URL_TAIL:
            if url[-1] == ")" and url.count("(") >= url.count(")"):
                break
            url = url[:-1]
        if len(url) > url.find("://") + 3:
            yield url


def _identifiers(text: str) -> Iterator[str]:
    for match in _IDENTIFIER.finditer(text):
        kind = match.lastgroup
        value = match.group(kind or 0)
        if kind == "sha" and (value.isdigit() or value.isalpha()):
            continue
        if kind == "ticket" and value.split("-")[0] in _NOT_TICKETS:
            continue
        if kind == "call" and not any(c.isdigit() for c in value):
            continue  # a snake_case name such as call_count, not an API call id
        if kind in ("dotted", "code", "called") and not _is_symbol(value):
            continue
        yield value


def _is_symbol(value: str) -> bool:
    """A name worth keeping: snake_case or CamelCase, or a dotted or called Capitalized one."""
    if "/" in value or _is_path(value):
        return False
    words = [w for w in _SYMBOL_SPLIT.split(value) if w]
    if any("_" in w.strip("_") or _CAMEL.search(w) for w in words):
        return True
    shaped = "." in value or value.endswith(")")
    return shaped and any(w[0].isupper() and not w.isupper() for w in words)


def _numbers(text: str) -> Iterator[str]:
    for match in _NUMBER.finditer(text):
        yield match.group()


def _distinct(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))
