"""Failures: what in a tool's output says that it failed.

`error_lines` finds the lines that report an error, `exit_code` the code an output
reports, and `looks_failed` judges an output by both, near its ends. Fast: a substring
search finds the few lines worth running a regex on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import chain

MAX_LINE = 300  # error lines and commands longer than this are kept cut to it
EDGE = 4096  # characters at each end of an output that tell whether it failed

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
