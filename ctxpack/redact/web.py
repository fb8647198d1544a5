"""Secrets of the web: a URL's user:password@ (also JDBC's Oracle user/password@), a Sentry
DSN's key, the secret part of webhook URLs (Slack, Discord, Teams) and of signed URLs
(Azure's `sig=`), session cookies, and the credentials of an Authorization header in any
scheme (which the named pass finds by its name)."""

from __future__ import annotations

import re

from .formats import Found, _format, _random
from .values import _NOT_PASSWORDS, _plausible

# (the name the around search knows them by, the fixed-width regex before its rare
# character, the rest from it)
_RULES = (
    ("sentry_dsn", "", r"://[0-9a-f]{32}(?::[0-9a-f]{32})?@(?=\w)"),
    # scheme://user:password@host; the password may hold "#", "?" and "@"
    ("url_password", "", r"://[^\s:/?#@\"'<>`\\\[\]]*:[^\s/\"'<>`\\]+@(?=[\w\[])"),
    ("url_password", "jdbc:oracle", r":thin:[\w$#]+/(?=[^\s@/\"']+@)"),
    ("slack_webhook", r"hooks\.slac", r"k\.com/(?:services|workflows|triggers)/"),
    ("discord_webhook", "/api/webhoo", r"ks/[0-9]{17,20}/"),
    ("teams_webhook", r"webhook\.office\.com/webhoo", r"kb2/"),
    ("azure_sas", "", r"&sig="),
    ("cookie", "[Cc]oo", r"kie[ \t]*:[ \t]*"),
)
# What follows the match of a rule that is the secret, and how long it is at least
_FOLLOWS = {
    "slack_webhook": (re.compile(r"[\w/-]+"), 20),
    "discord_webhook": (re.compile(r"[\w-]+"), 40),
    "teams_webhook": (re.compile(r"[\w@/-]+"), 40),
    "azure_sas": (re.compile(r"[\w%+/=-]+"), 20),
}
_PORT = re.compile(r"[0-9]+[?#]")  # host:8080?mail=a@b, not a password
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_SCHEME = re.compile(r"([A-Za-z][\w-]*)[ \t]+(?=[\w.~+/=-])")
_CREDENTIAL = re.compile(r"[\w.~+/=:-]+")
_OWN_RULES = frozenset({"bearer", "basic", "digest"})  # Bearer and Basic have their own
# A cookie's name=value pairs, and the names of a Set-Cookie's attributes (not cookies)
_PAIR = re.compile(r"[ \t]*([\w.$!#%&*+^`|~-]+)=([^;\s\"'\\,]*);?")
_PAIRS_END = re.compile(r"[^\n\"'\\]*")  # a header's pairs end with its line, or string
_ATTRIBUTES = frozenset("path domain expires max-age samesite secure httponly priority"
                        " partitioned version comment".split())
_SESSION = re.compile(r"se?ss|sid|token|auth|jwt|csrf|xsrf|remember|login|key|secret|pass"
                      r"|user", re.IGNORECASE)


def url_secret(text: str, rule: str, start: int, end: int) -> Found | None:
    """The kind, start and end of the secret a match of a _RULES rule holds, if any."""
    if rule == "sentry_dsn":
        return ("sentry_dsn", start + 3, end - 1) if text[start - 1 : start].isalpha() else None
    if rule == "url_password":
        return _url_password(text, start, end)
    if rule == "cookie":
        stop = _PAIRS_END.match(text, end).end()  # type: ignore[union-attr]  # or ""
        return cookie_values(text, end, stop)
    if rule == "discord_webhook" and text.rfind("discord", max(start - 40, 0), start) < 0:
        return None  # another host's /api/webhooks/
    follows, least = _FOLLOWS[rule]
    value = follows.match(text, end)
    if value is None or len(value[0]) < least or not _random(value[0]):
        return None
    return rule, end, value.end()


def _url_password(text: str, start: int, end: int) -> Found | None:
    if text[start + 1] == "t":  # jdbc:oracle:thin:user/password@host
        stop = text.index("@", end)
        start = end
    elif not start or not text[start - 1].isalnum():
        return None  # no scheme before "://"
    else:
        start = text.index(":", start + 3) + 1  # the user's name ends at the first colon
        stop = end - 1  # "@"
    password = text[start:stop]
    if _PORT.match(password) or not _template_free(password):
        return None
    return _format(text, start, stop) or "url_password", start, stop


def _template_free(password: str) -> bool:
    """True unless the password of a URL is a template: $PASS, {password}, ****, "password"."""
    return ((password[0] not in "$%{<[*" or _PERCENT.match(password) is not None)
            and password.lower() not in _NOT_PASSWORDS and password.strip("*xX") != "")


def credentials(text: str, at: int) -> Found | None:
    """The credentials of an Authorization header's value at `at`: after its scheme
    (Token, Bot, SSWS, ApiKey...) or alone; Bearer and Basic are their own rules'."""
    scheme = _SCHEME.match(text, at)
    if scheme is not None:
        if scheme[1].lower() in _OWN_RULES:
            return None
        at = scheme.end()
    credential = _CREDENTIAL.match(text, at)
    value = credential[0] if credential else ""
    if len(value) < 16 or not _random(value) or "[REDACTED:" in text[at : at + 11]:
        return None
    return _format(text, at, credential.end()) or "auth_header", at, credential.end()  # type: ignore[union-attr]



def cookie_values(text: str, start: int, stop: int) -> Found | None:
    """The span of a cookie header's values (text[start:stop], `a=1; b=2`) from the first
    that is a secret to the last: a session's, a token's, or any random enough."""
    first = last = -1
    at = start
    while at < stop and (pair := _PAIR.match(text, at, stop)) is not None and pair.end() > at:
        name, value = pair[1], pair[2]
        if name.lower() not in _ATTRIBUTES and "[REDACTED:" not in value and (
                (len(value) >= 16 and _random(value))
                or (_SESSION.search(name) and _plausible(value, 8, "", True))):
            first = pair.start(2) if first < 0 else first
            last = pair.end(2)
        at = pair.end()
    return ("cookie", first, last) if first >= 0 else None
