"""Secret redaction: API keys, tokens, passwords and private keys become typed placeholders.

`redact` runs on text before it leaves the machine (the `llm` summarizer's requests): each
secret becomes `[REDACTED:<kind>]`. The values found are never logged, kept or returned;
only how many of each kind is. Precompiled regexes find secrets with a format of their own
or a word or flag before them (`Basic`, `--password`), then values that only their name
gives away (`DB_PASSWORD=...`), also inside JSON text, where a newline is `\\n`.

The passes live in their own modules: `formats` (private key blocks, and a table of the
token formats providers give their secrets), `around` (the search for secrets a word, flag
or URL stands before, and for the formats), whose judges are in `web` (URLs, headers,
cookies, webhooks), `commands` (command lines' flags) and `files` (.netrc, PuTTY keys),
and `named` (values their name gives away: also in XML, and Authorization headers), which
`values` helps judge.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from .around import _SPECIFIC, _specific
from .formats import _FORMATS, _PRIVATE_KEY, _private_key
from .named import _NAMED, _named

__all__ = ["KINDS", "PLACEHOLDER", "redact"]

PLACEHOLDER = "[REDACTED:{}]"
# The order they are looked for in: whole key blocks, then the formats providers give
# their secrets (a longer prefix before a shorter one), then values known by what stands
# around them. A value that has a format counts once, as that format's kind.
KINDS = (
    "private_key",
    *dict.fromkeys(kind for kind, _, _ in _FORMATS),
    "bearer_token", "basic_auth", "sentry_dsn", "url_password", "slack_webhook",
    "discord_webhook", "teams_webhook", "azure_sas", "cookie", "cli_secret", "auth_header",
    "aws_secret_key", "env_secret",
)


def redact(text: str) -> tuple[str, Counter[str]]:
    """`text` with every secret found replaced by [REDACTED:<kind>], and how many of each kind."""
    counts: Counter[str] = Counter()
    text = _replace(text, _PRIVATE_KEY, _private_key, counts)
    text = _replace(text, _SPECIFIC, _specific, counts)
    return _replace(text, _NAMED, _named, counts), counts


Judge = Callable[[str, re.Match[str]], tuple[str, int, int] | None]


def _replace(text: str, regex: re.Pattern[str], judge: Judge, counts: Counter[str]) -> str:
    """`text` with a placeholder for each secret that `judge` sees in a match of `regex`.
    The search goes on from the end of each secret, which may end before its match or after
    it (a value that runs on past an `&`), as it will in the text redacted: so redacting
    again finds nothing more."""
    out: list[str] = []
    done = 0
    match = regex.search(text)
    while match is not None:
        found = judge(text, match)
        if found is not None and found[1] >= done:
            kind, start, end = found
            out += (text[done:start], PLACEHOLDER.format(kind))
            done = resume = end
            counts[kind] += 1
        elif "name" in regex.groupindex:  # a value not taken may hold the next name:
            resume = match.end("name")  # `passphrase: <password>x</password>`
        else:
            resume = match.end()
        match = regex.search(text, max(resume, done))
    return "".join(out) + text[done:] if out else text
