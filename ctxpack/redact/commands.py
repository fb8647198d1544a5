"""Secrets on a command line: the value of a long flag named for one (`--password x`,
`--api-key=x`), of the short flags some commands give a password with (mysql's `-px`,
`sshpass -p x`, `docker login -p x`, `curl -u user:x`), and openssl's `pass:x`."""

from __future__ import annotations

import re

from .formats import Found, _format
from .named import _NEARBY, _password_part
from .values import _NOT_SECRET_START, _plausible
from .web import cookie_values

# What a command line's secret is given by: --password, --db-password, --api-key, --token,
# --account-key
_FLAG = (r"(?:pass(?:word|wd|phrase)?|pwd|token|secret|api[-_]?key"
         r"|(?:access|secret|auth|account|storage|master|shared|signing)[-_]key)")
_ARGUMENT_START = r"(?=[^\s$<>|&;`-])"  # not another flag, a $VAR, a redirection
# The short flags that give a secret, by the commands they do it in: (commands, the flag,
# the subcommand it needs, where its argument holds the secret). "glued": only glued to
# the flag (mysql's `-p db` asks for the password and opens db); "user:": after the user's
# name and a colon; "user%": after a "%"; "cookie": in name=value pairs; a number: the
# argument so many places on (htpasswd -b FILE USER PASSWORD).
_SHORT_FLAGS = (
    (("mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlcheck", "mysqlsh", "mariadb",
      "mariadb-dump"), "p", "", "glued"),
    (("sshpass",), "p", "", "value"),
    (("mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport"), "p", "",
     "value"),
    (("docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras", "oc", "az"), "p",
     "login", "value"),
    (("redis-cli", "valkey-cli"), "a", "", "value"),
    (("ldapsearch", "ldapadd", "ldapmodify", "ldapdelete", "ldappasswd", "ldapwhoami"), "w", "",
     "value"),
    (("smbclient", "rpcclient", "smbmap"), "U", "", "user%"),
    (("curl",), "u", "", "user:"),
    (("curl",), "U", "", "user:"),
    (("curl",), "b", "", "cookie"),
    (("htpasswd",), "b", "", "3"),
    (("zip", "sqlcmd", "bcp", "osql"), "P", "", "value"),
    (("7z", "7za", "7zz", "rar", "unrar"), "p", "", "glued"),
)
_LONG_FLAGS = {"user": "user:", "proxy-user": "user:", "cookie": "cookie"}  # curl's
_COMMAND = re.compile(
    r"(?<![\w.-])(" + "|".join(sorted({re.escape(c) for cs, *_ in _SHORT_FLAGS for c in cs},
                                      key=len, reverse=True)) + r")(?![\w.-])")
_SHORT_LETTERS = "".join(sorted({flag for _, flag, _, _ in _SHORT_FLAGS}))
# (the name the around search knows them by, the fixed-width regex before its rare
# character, the rest from it)
_RULES = (
    # --password x, --api-key=x (not a word's hyphen, nor one glued to a placeholder)
    ("cli_secret", "", rf"--(?<![\w\]-]--)(?:[a-z0-9]+[-_])*{_FLAG}(?:=|[ \t]+){_ARGUMENT_START}"),
    ("cli_long", "", rf"--(?<![\w\]-]--)(?:user|proxy-user|cookie)(?:=|[ \t]+){_ARGUMENT_START}"),
    ("cli_pass", "", rf"-(?<=[ \t]-)pass(?:in|out)?[ \t]+pass:{_ARGUMENT_START}"),
    # Windows' `net use Z: \\srv\share /user:NAME password`
    ("cli_net_use", "/user", r":[^\s\"]+[ \t]+(?=[^\s/*])"),
    # keytool's -storepass x, -keypass x; Java's and openssl's -password x
    ("cli_single", "", rf"-(?<=[ \t]-)[a-z]*pass(?:word|wd)?(?:=|[ \t]+){_ARGUMENT_START}"),
    # (other flags may stand between: `htpasswd -b -c FILE USER PASSWORD`)
    ("cli_short", "", rf"-(?<=[ \t]-)[{_SHORT_LETTERS}]"
                      rf"(?=[^\s$<>|&;`-]|(?:[ \t]+-[A-Za-z]+){{0,3}}[ \t]+{_ARGUMENT_START})"),
)
# A flag's value, quoted (also in JSON text) or not
_ARGUMENT = re.compile(r"\\?\"(?P<dq>[^\"\\\n]*)\\?\"|'(?P<sq>[^'\n]*)'"
                       r"|(?P<bare>[^\s\"'`;&|<>()\\]+)")
_SPACES = re.compile(r"[ \t]*")
_NET_USE = re.compile(r"(?<![\w-])net(?:\.exe)?[ \t]+use[ \t]", re.IGNORECASE)
_SOURCE = re.compile(r"(?:env|file|fd|stdin|pass):")  # openssl's places of a password
# --no-password, --ask-pass: what follows is the next argument; --next-token: a page's
_NOT_SECRET_FLAGS = frozenset(
    "no ask prompt with use read show skip require next starting start continuation page"
    " idempotency request change lock".split())


def flag_secret(text: str, rule: str, at: int, end: int) -> Found | None:
    """The kind, start and end of the secret that the flag text[at:end], found by `rule`,
    gives, if it gives one: typed by its format if it has one, else "cli_secret"."""
    flag = text[at:end].strip("-= \t")
    if rule == "cli_short":
        return _short_flag(text, flag, at, end)
    argument = _ARGUMENT.match(text, end)
    if argument is None:
        return None
    start, stop = argument.span(argument.lastgroup or "bare")
    if rule == "cli_long":
        line = text.rfind("\n", max(at - _NEARBY, 0), at) + 1
        command = _last_command(text, line, at)
        return _part(text, start, stop, _LONG_FLAGS[flag]) if command == "curl" else None
    if rule == "cli_net_use":
        line = text.rfind("\n", max(at - _NEARBY, 0), at) + 1
        return _judged(text, start, stop, 4, "loose") if _NET_USE.search(text, line, at) else None
    if rule == "cli_pass":
        return _judged(text, start, stop, 4, "loose")
    if rule == "cli_single":  # not openssl's `-passin env:VAR`, `-passout file:path`
        return None if _SOURCE.match(text, start) else _judged(text, start, stop, 4, "")
    if not _NOT_SECRET_FLAGS.isdisjoint(flag.replace("_", "-").split("-")):
        return None
    least = 4 if _password_part(flag.replace("-", "_").split("_")[-1]) else 6
    # "--token flag": a word after a space is prose; glued to the flag, it is its value
    return _judged(text, start, stop, least, "" if text[end - 1] in " \t" else "loose")


def _short_flag(text: str, letter: str, at: int, end: int) -> Found | None:
    """The secret a short flag gives in the command it stands in (see _SHORT_FLAGS)."""
    line = text.rfind("\n", max(at - _NEARBY, 0), at) + 1
    command = _last_command(text, line, at)
    for commands, flag, subcommand, where in _SHORT_FLAGS:
        if letter != flag or command not in commands:
            continue
        if subcommand and re.search(rf"\s{subcommand}\s", text[line:at]) is None:
            return None
        glued = text[end] not in " \t"
        if where == "glued" and not glued:
            return None
        if where.isdigit():  # htpasswd -bc FILE USER PASSWORD: the flag's letters go on
            return _nth_argument(text, end, int(where))
        spaces = _SPACES.match(text, end).end()  # type: ignore[union-attr]  # or ""
        argument = _ARGUMENT.match(text, spaces)
        if argument is None or text.startswith("-", spaces):  # another flag, not its value
            return None
        start, stop = argument.span(argument.lastgroup or "bare")
        return _part(text, start, stop, where)
    return None


def _last_command(text: str, line: int, at: int) -> str:
    """The last of the commands _SHORT_FLAGS knows that stands in text[line:at]."""
    found = ""
    for match in _COMMAND.finditer(text, line, at):
        found = match[1]
    return found


def _part(text: str, start: int, stop: int, where: str) -> Found | None:
    """The secret in the argument text[start:stop], by `where` it is in it."""
    if where == "cookie":
        return cookie_values(text, start, stop)
    if where in ("user:", "user%"):
        split = text.find(where[-1], start, stop)
        if split < 0:
            return None  # no password: the command asks for it
        start = split + 1
    return _judged(text, start, stop, 4, "loose")


def _nth_argument(text: str, end: int, n: int) -> Found | None:
    """The nth argument after the flag that ends at `end`, counting its glued letters as
    the first and skipping other flags (`htpasswd -b -c FILE USER PASSWORD`)."""
    at = _next_word(text, end)
    counted = 1
    while counted < n or text.startswith("-", at):
        counted += not text.startswith("-", at)
        at = _next_word(text, at)
    argument = _ARGUMENT.match(text, at)
    if argument is None:
        return None
    start, stop = argument.span(argument.lastgroup or "bare")
    return _judged(text, start, stop, 4, "loose")


def _next_word(text: str, at: int) -> int:
    """Where the word after the one at `at` starts, on the same line."""
    while at < len(text) and text[at] not in " \t\n":
        at += 1
    return _SPACES.match(text, at).end()  # type: ignore[union-attr]  # or ""


def _judged(text: str, start: int, stop: int, least: int, how: str) -> Found | None:
    """text[start:stop] as a secret of its format, else as "cli_secret" if it may be one."""
    value = text[start:stop]
    if not value or value[0] in _NOT_SECRET_START + "@" or "[REDACTED:" in value:
        return None  # also curl's @file
    kind = _format(text, start, stop)
    if kind:
        return kind, start, stop
    return ("cli_secret", start, stop) if _plausible(value, least, how, True) else None
