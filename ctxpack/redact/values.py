"""Whether a value may be a secret: not a reference, template, number, path, version, URL
or name in code, and plain words only where a password's or an environment variable's
value may be them."""

from __future__ import annotations

import re

_NOT_PASSWORDS = frozenset({"password", "passwd", "pass", "pwd", "pw", "secret"})  # templates
# Values that are not secrets whatever their name: references ($VAR, ${VAR}, %VAR%),
# templates (<token>, {{ x }}, ***, your-key-here), paths, numbers, versions and dates,
# URLs, elided or masked values (sk-abc..., gho_****); and unquoted, YAML's tags, anchors,
# aliases and block scalars, curl's @file. Names in code (os.environ, settings.API_KEY)
# are _DOTTED.
_NOT_SECRET_START = "$%<{[("
_NOT_BARE_START = _NOT_SECRET_START + "!&*|>=:#@"
_NOT_SECRET = re.compile(
    r"\.{0,2}/|~[/\\]|[A-Za-z]:\\|[\w.-]+(?:/[\w.-]+)+\.[A-Za-z]\w{0,4}$"
    r"|[-+]?[0-9][0-9.,_:eE+-]*$|v?[0-9]+(?:\.[0-9]+)+(?:[-+.][\w.]+)?$|[*xX.\u2022_/-]+$"
    r"|.*(?:://|\.\.\.|\u2026|\*{4}"
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
_SELF_NAMING = frozenset("key apikey token secret password".split())
_SEPARATORS = re.compile(r"[ _-]")
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


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
    if _WORDS.fullmatch(value) and not _SELF_NAMING.isdisjoint(_SEPARATORS.split(value.lower())):
        return False  # a placeholder that names itself: "user-provided-api-key", "test-secret"
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
