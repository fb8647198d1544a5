"""Secrets in the forms of key and config files the other passes do not read: .netrc's
`machine h login u password x`, and PuTTY's key files' private lines."""

from __future__ import annotations

import re

from .formats import _NEWLINE, Found, _format
from .named import _NEARBY
from .values import _NOT_SECRET_START, _plausible

# (the name the around search knows them by, the fixed-width regex before its rare
# character, the rest from it)
_RULES = (
    ("netrc", "pass", r"word[ \t]+(?=[^\s\\])"),
    ("putty", "Private-Lines", r":[ \t]*[0-9]+"),
)
# .netrc's entry up to its password: `machine HOST` (or `default`), then its other tokens
_NETRC = re.compile(r"(?<![\w.-])(?:machine[ \t]+[^\s\\]+|default)"
                    r"(?:(?:\s|\\[nt])+(?:login|account|port)[ \t]+[^\s\\]+)*(?:\s|\\[nt])+")
_NETRC_VALUE = re.compile(r"[^\s\\\"']+")
# PuTTY's key files keep the private key in the lines after "Private-Lines: n", and its MAC
_PUTTY = re.compile(rf"(?:{_NEWLINE}[A-Za-z0-9+/=]+(?![\w-]))+"
                    rf"(?:{_NEWLINE}Private-MAC:[ \t]*[0-9a-fA-F]+)?")


def file_secret(text: str, rule: str, start: int, end: int) -> Found | None:
    """The kind, start and end of the secret a match of a _RULES rule holds, if any."""
    if rule == "putty":
        lines = _PUTTY.match(text, end)
        return ("private_key", start - len("Private-Lines"), lines.end()) if lines else None
    head = start - len("pass")
    if head and not text[head - 1].isspace() or not _netrc_entry(text, head):
        return None
    value = _NETRC_VALUE.match(text, end)
    if value is None or value[0][0] in _NOT_SECRET_START:
        return None
    kind = _format(text, *value.span()) or (
        "env_secret" if _plausible(value[0], 4, "loose", True) else "")
    return (kind, *value.span()) if kind else None


def _netrc_entry(text: str, head: int) -> bool:
    """True when text[:head] ends with a .netrc entry's tokens before its password."""
    entry = text.rfind("machine", max(head - _NEARBY, 0), head)
    if entry < 0:
        entry = text.rfind("default", max(head - _NEARBY, 0), head)
    return entry >= 0 and _NETRC.fullmatch(text, entry, head) is not None
