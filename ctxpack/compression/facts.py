"""Facts: the verbatim details of a text that a summary must not lose.

`extract` finds file paths, URLs, identifiers, error lines, significant numbers and
shell commands; `retention` says how many of them a summary still holds. Pure and
fast: linear-time precompiled regexes, so a megabyte of tool output takes milliseconds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from itertools import chain

CATEGORIES = ("paths", "urls", "identifiers", "errors", "numbers", "commands")
MAX_LINE = 300  # error lines and commands longer than this are kept cut to it
MAX_WORD = 2048  # a longer run without spaces is data (base64, minified code), not a path
MAX_NAME = 200  # nor can a longer one be an identifier
GRAM = 6  # the retention audit's quick test: see `retention`
EDGE = 4096  # characters at each end of an output that tell whether it failed

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

# No two quantifiers here may take the same characters one after the other: on a long
# run of spaces that backtracks quadratically.
_ERROR_START = re.compile(
    r"^[ \t]*(?:<\w+>)?(?:E[ \t]+)?(?:"
    r"Traceback \(most recent call last\)"
    r"|(?:[A-Za-z_][\w.]*)?(?:Error|Exception)\b(?:\[\w+\])?(?::|[ \t]*$)"
    r"|FAILED\b|FAIL:|ERROR\b|FATAL\b|fatal:|fatal error\b|panic:|npm ERR!"
    r"|thread '[^'\n]*' panicked|Segmentation fault"
    r"|(?:\S{1,2}[ \t]+)?\[(?:ERROR|FATAL)\]"
    r"|(?:=+[ \t]+)?\d+ (?:failed|errors?)\b"
    r")|^(?:error|Error)(?:\[\w+\])?:",
    re.MULTILINE,
)
# Every branch starts with a literal, so the regex engine can skip ahead quickly.
_ERROR_ANYWHERE = re.compile(
    r"No such file or directory|command not found|Permission denied|Operation not permitted"
    r"|(?:[Ee]xit(?:ed)?(?: with)? (?:code|status)|[Ee]xit [Cc]ode:?|EXIT CODE:?|returncode>)"
    r"[ \t]*(?::[ \t]*)?-?[1-9]"
)
# A compiler's or linter's finding: `path.ext:LINE:COL: message` (go build, gcc, clang,
# ruff, eslint's unix format; not warnings or notes), or `path.ext:LINE: error: ...`
# (mypy). Lines the gate finds are checked from their start.
_DIAGNOSTIC_GATE = re.compile(r":\d+(?::\d+)?: ")
_DIAGNOSTIC = re.compile(
    r"[ \t]*(?:[A-Za-z]:)?[\w./\\@+~\-]*\w\.[A-Za-z]\w{0,9}:\d+"
    r"(?::\d+: (?!warning\b|note\b|info\b|hint\b)[^\s\d]|: (?:fatal )?error\b)"
)
_EXIT = re.compile(
    r"\b(?:exit(?:ed)?(?: with)? (?:code|status)|exit code:?|returncode>)[ \t]*(?::[ \t]*)?(-?\d+)",
    re.IGNORECASE,
)

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


@dataclass(frozen=True, slots=True)
class Retention:
    """How many facts of one category a summary kept, and which it dropped."""

    total: int
    kept: int
    dropped: tuple[str, ...]

    @property
    def ratio(self) -> float:
        return self.kept / self.total if self.total else 1.0


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


def retention(source: Facts, summary: str) -> dict[str, Retention]:
    """For each category, how many of the source facts appear verbatim in the summary."""
    # Lookups, where a search would read the whole summary once per fact: a fact shorter
    # than GRAM is in it if it is one of its pieces that long; a longer one can only start
    # where its first GRAM characters do, and end where its last do: it is compared there
    # alone, from whichever of the two places are fewer.
    pieces = {summary[i : i + n] for n in range(GRAM) for i in range(len(summary) - n + 1)}
    at: dict[str, list[int]] = {}
    for i in range(len(summary) - GRAM + 1):
        at.setdefault(summary[i : i + GRAM], []).append(i)

    def dropped_fact(x: str) -> bool:
        if len(x) < GRAM:
            return x not in pieces
        starts, ends = at.get(x[:GRAM]), at.get(x[-GRAM:])
        if starts is None or ends is None:
            return True
        if len(ends) < len(starts):
            back = len(x) - GRAM
            return not any(summary.startswith(x, i - back) for i in ends if i >= back)
        return not any(summary.startswith(x, i) for i in starts)

    out: dict[str, Retention] = {}
    for name in CATEGORIES:
        items: tuple[str, ...] = getattr(source, name)
        dropped = tuple(filter(dropped_fact, items))
        out[name] = Retention(len(items), len(items) - len(dropped), dropped)
    return out


# Every branch of _ERROR_START holds one of these, lowercased, and so does every branch
# of _ERROR_ANYWHERE one of the second or the third: lines without one need no regex.
_START_WORDS = ("error", "exception", "traceback", "fail", "fatal", "panic", "npm err",
                "segmentation fault")
_ANYWHERE_WORDS = ("no such file", "command not found", "permission denied", "not permitted")
_EXIT_WORDS = ("exit", "returncode")  # the rest of _ERROR_ANYWHERE's words


def _lowered(text: str) -> str | None:
    """`text` in lower case with every character where it was, or None if that cannot be."""
    if text.isascii():
        return text.lower()
    low = text.replace("\u0130", "I").lower()  # the one character lower() lengthens
    return low if len(low) == len(text) else None  # a future Unicode may add more


def _spans(text: str, low: str | None, words: Iterable[str]) -> Iterator[tuple[int, int]]:
    """(start, end) of the lines of `text` holding one of `words` (lowercase), word by
    word, a line again for each word it holds; `low` is `_lowered(text)`. A substring
    search runs at C speed, so the regexes that judge a line need only run on the few
    lines it finds."""
    if low is None:  # every line, then
        start = 0
        for line in text.split("\n"):
            yield start, start + len(line)
            start += len(line) + 1
        return
    for word in words:
        at = low.find(word)
        while at >= 0:
            end = text.find("\n", at)
            end = len(text) if end < 0 else end
            yield text.rfind("\n", 0, at) + 1, end
            at = low.find(word, end)


def error_spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of the lines of `text` that report an error, in no order, at times
    more than once; lazily, so that the first one costs no more than it must."""
    return _error_spans(text, _lowered(text))


def _error_spans(text: str, low: str | None,
                 exits: Iterable[tuple[int, int]] | None = None) -> Iterator[tuple[int, int]]:
    # _ERROR_START only matches where a line begins, so such lines cost little to check;
    # `exits`: the lines holding an _EXIT_WORDS word, when they were found already
    for start, end in _spans(text, low, _START_WORDS):
        if _ERROR_START.match(text, start, end):
            yield start, end
    if exits is None:
        exits = _spans(text, low, _EXIT_WORDS)
    for start, end in chain(_spans(text, low, _ANYWHERE_WORDS), exits):
        if _ERROR_ANYWHERE.search(text, start, end):
            yield start, end
    at = _DIAGNOSTIC_GATE.search(text)
    while at is not None:
        start = text.rfind("\n", 0, at.start()) + 1
        end = text.find("\n", at.end())
        end = len(text) if end < 0 else end
        if _DIAGNOSTIC.match(text, start, end):
            yield start, end
        at = _DIAGNOSTIC_GATE.search(text, end)


def error_lines(text: str) -> Iterator[str]:
    """Whole lines of `text` that report an error, stripped and cut to MAX_LINE."""
    for start, end in sorted(set(error_spans(text))):
        line = text[start:end].strip()
        if line:
            yield line[:MAX_LINE]


def looks_failed(text: str) -> bool:
    """True when `text` reports a failure: a non-zero exit code, else an error line,
    among its first and last EDGE characters. That is where an outcome shows: a
    traceback, a test run's tally and an exit code end an output, and a command that
    cannot start says so at once; the middle of a long output is what the command
    printed (a log read back, with its old errors in it), and costs the most to read."""
    text = _edges(text, EDGE)
    low = _lowered(text)  # once, for both searches
    exits = list(_spans(text, low, _EXIT_WORDS))  # and these lines once
    code = _exit_code(text, exits)
    if code is not None:
        return code != 0
    # a line the error patterns match holds one of their words: it is never blank
    return next(_error_spans(text, low, exits), None) is not None


def _edges(text: str, size: int) -> str:
    """The lines within the first and the last `size` characters of `text`, one after
    the other: whole, unless a line is longer than that (a text no longer than both is
    itself)."""
    if len(text) <= 2 * size:
        return text
    head = text.rfind("\n", 0, size)
    tail = text.find("\n", len(text) - size, len(text) - 1)  # not the final newline
    return text[: size if head < 0 else head] + "\n" + text[
        len(text) - size if tail < 0 else tail + 1 :]


def exit_code(text: str) -> int | None:
    """The last exit code `text` reports (`Exit code: 2`, `<returncode>0`...), if any."""
    return _exit_code(text, _spans(text, _lowered(text), _EXIT_WORDS))


def _exit_code(text: str, exits: Iterable[tuple[int, int]]) -> int | None:
    """The last exit code on the lines `exits` (those holding an _EXIT_WORDS word)."""
    for start, end in sorted(exits, reverse=True):
        found = _EXIT.findall(text, start, end)
        if found:
            return int(found[-1])
    return None


def commands(text: str) -> Iterator[str]:
    """Shell commands in `text`: `$ cmd` lines and JSON "command"/"cmd" values."""
    for match in _COMMAND_LINE.finditer(text):
        yield match.group(1).strip()[:MAX_LINE]
    for match in _COMMAND_JSON.finditer(text):
        try:
            value = json.loads(match.group(1))
        except ValueError:
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
        return bool(name) and ext.lower() in EXTENSIONS and _LETTER.search(name) is not None
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
