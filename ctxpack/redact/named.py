"""Values known by their name: `NAME=value`, `name: value`, `"name": "value"`, also in JSON
text, numbered listings and diffs, in XML (`<password>x</password>`), an Authorization
header's credentials, and AWS secret keys under their names; the regex that
finds a key word in a name, and the judges of the name, of where the value stands and
where an unquoted one ends."""

from __future__ import annotations

import re

from .formats import Found
from .values import _NOT_BARE_START, _NOT_SECRET_START, _plausible
from .web import credentials

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
    rf"(?P<name>(?:{_keyword_regex()}|T(?<=_PAT))(?=(?P<rest>[\w.-]{{0,64}}))(?P=rest))"
    r"(?P<close>\\\"|[\"']?)"
    r"(?:[ \t]*:[ \t]*[A-Za-z_][\w.\[\], |]*?(?=[ \t]*=))?"  # the type of `name: str = "..."`
    # also XML's <name>, and the value after an env list's name (Kubernetes, ECS)
    r"(?P<op>[ \t]*[=:][ \t]*|>|[ \t]*(?:\r?\n|\\n)[ \t]*value:[ \t]*"
    r"|,[ \t]*\\?\"value\\?\":[ \t]*|[ \t]+(?=[^\s=:]))"  # and `config set NAME value`
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
_BEFORE_ASSIGN = frozenset(" \t\r\n?&;|\"'`\u2192:=")  # also .npmrc's ":_authToken="
_LINE_HEAD = re.compile(
    r"(?:[ \t]|\\t)*(?:[0-9]+(?:\u2192|\\u2192|\t|\\t|:|\|))?(?:[ \t+>-]|\\t)*(?:export )?")
_LINE_TAIL = re.compile(r"[ \t\r]*(?:#[^\n]{0,200})?(?:\n|\Z)"
                        r"|(?:[ \t]|\\t)*(?:#[^\"\\\n]{0,200})?(?:\\r)?(?:\\n|\")")
_MORE_WORDS = re.compile(r"(?: [^\s\"'`#|\\()\[\]{},%]+){1,7}")  # a passphrase's, in YAML
_ENV_REST = re.compile(r"[^\s\"'`\\]*")  # an .env line's value goes on past "&"
_CONFIG_SET = re.compile(r"config(?:ure)?[ \t]+set[ \t]+(?:[\w./:-]*:)?\Z")
_ENV_LIST_NAME = re.compile(r"(?:name:[ \t]*|\\?\"name\\?\":[ \t]*)\Z")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_SECTION = re.compile(r"(?:^|\n|\\n|\")\[[\w. \"-]+\](?:\r?\n|\\r?\\n)")  # ini's [pypi]
_GENERATED = re.compile(r"(?=.{12})(?=.*[0-9])(?=.*[a-z])(?=.*[A-Z]).*")  # Xk9mQ_2pLzT4v
_NEXT_PAIR = re.compile(r";[A-Za-z][\w ]*=")  # a connection string's next `;Name=`
_PAIR_VALUE = re.compile(r"[^;\s\"'`\\]*")
_CODE_CHARS = frozenset("()[]{}")
_CALL = re.compile(r"[\w.]*[(\[{]")
_NEARBY = 200
_ATTRIBUTE_VALUE = re.compile(r"\\?\"[ \t]+value=\\?\"([^\"\\\n]*)\\?\"")  # key="name" value="x"


def _named(text: str, match: re.Match[str]) -> Found | None:
    """The kind, start and end of the value that a match of _NAMED assigns to a name, if
    that value is a secret."""
    group = match.lastgroup or "bare"  # the value's group closes last
    start, end = match.span(group)
    name = match["name"].lower()
    if match["op"][-1] in " \t" and not match["op"].strip():
        return _config_set(text, match, start, end)
    if name == "uthorization" and match["op"] != ">":
        return credentials(text, start)  # `Authorization: Token x`, in any scheme
    if match["op"] == ">" or (name == "key" and match["op"] == "=" and group in ("dq", "edq")
                              and text[match.start() - 1 : match.start()] in (" ", "\t")):
        return _markup(text, match, start, end)
    if not _may_hold(text, match, start, end, group == "bare"):
        return None
    at, escaped = _name_start(text, match.start())
    name, close, op = text[at : match.end("name")], match["close"], match["op"]
    if name.lower() == "key" and text[at - 4 : at].lower() == "api " and not close:
        at, name = at - 4, "api_key"  # "API key: ..."
    head = at - len(close)  # where the name starts, with its opening quote
    if close and text[head:at] != close:
        return None
    before = "\n" if escaped else text[head - 1] if head else "\n"
    if "value" in op and _ENV_LIST_NAME.search(text, max(head - 20, 0), head) is None:
        return None  # `- name: DB_PASSWORD` then `value: x`; {"name": "X", "value": "x"}
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
    elif before in "\"'" and not close and group != "edq":
        return None  # the name is in a string that ends at the value's opening quote
    value = text[start:end]
    if value[0] in (_NOT_BARE_START if group == "bare" else _NOT_SECRET_START):
        return None
    least = 4 if password == "password" else 6
    return ("env_secret", start, end) if _plausible(value, least, how, group == "bare") else None


def _config_set(text: str, match: re.Match[str], start: int, end: int) -> Found | None:
    """The value of `aws configure set NAME value`, `npm config set NAME value`."""
    at, _ = _name_start(text, match.start())
    if _CONFIG_SET.search(text, max(at - 80, 0), at) is None or match["close"]:
        return None
    kind, value = _name_kind(text[at : match.end("name")]), text[start:end]
    if not kind or value[0] in _NOT_BARE_START:
        return None
    if _AWS_NAME.search(text, at, match.end("name")) and _AWS_SECRET.fullmatch(value):
        return "aws_secret_key", start, end
    return ("env_secret", start, end) if _plausible(value, 4 if kind == "password" else 6,
                                                    "", True) else None


def _markup(text: str, match: re.Match[str], start: int, end: int) -> Found | None:
    """The value of an XML element named for a secret (`<password>x</password>`), or of
    .NET's `<add key="Password" value="x" />`, if it may be one."""
    if match["op"] == ">":
        at, _ = _name_start(text, match.start())
        name = text[at : match.end("name")]
        end = text.find("<", start, end)
        if text[at - 1 : at] != "<" or end < 0 or not text.startswith(f"</{name}>", end):
            return None
    else:  # key="Password" value="x": the name is the key's value
        value = _ATTRIBUTE_VALUE.match(text, end)
        if value is None:
            return None
        name, (start, end) = text[start:end], value.span(1)
    kind, value = _name_kind(name), text[start:end]
    if not kind or not value or value[0] in _NOT_SECRET_START:
        return None
    least, how = (4, "loose") if kind == "password" else (6, "")
    return ("env_secret", start, end) if _plausible(value, least, how, False) else None


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
    while len(parts) > 1 and parts[-1].isdigit():
        parts.pop()  # KEY_FILE_2, PuTTY-User-Key-File-3
    if not parts or parts[-1] in _QUALIFIERS or parts in (["key"], ["keys"], ["private"],
                                                          ["pass"]):
        return ""  # a map's "key", a keyboard's; `private: true`; a test's "--- PASS: x"
    if any(p.startswith("pub") for p in parts):
        return ""  # public_key, pubkey
    upper = name.isupper()
    if _password_part(parts[-1], upper):
        return "password"
    if upper and parts[-1] == "pat" and len(parts) > 1:
        return "secret"  # a personal access token's: GITHUB_PAT, AZURE_DEVOPS_PAT
    return "secret" if any(_password_part(p, upper) or (p[:-1] if p.endswith("s") else p)
                           .endswith(_KEYWORD_ENDS) for p in parts) else ""


def _password_part(part: str, upper: bool = False) -> bool:
    """True for pass, password, passwd, passphrase, pwd, and words ending in them; "pass"
    glued to another word only in an environment variable's name (DBPASS, not lowpass)."""
    return (part == "pass" or part.endswith(_PASSWORD_ENDS)
            or (upper and part.endswith("pass") and part not in _NOT_PASS))


def _bare_end(text: str, match: re.Match[str], head: int, end: int, env: bool,
              words: bool) -> int:
    """Where an unquoted value ends: at the `;` that ends a connection string's pair
    (`Server=db;Password=a&b;Database=x`), also past an `&`; before a `;` (`export
    TOKEN=...;`); past an `&` on an .env line (a Django key); past its spaces when a YAML
    passphrase has `words`; -1 if it does not end where a value can."""
    start = match.start("bare")
    if text[head - 1 : head] == ";" or _NEXT_PAIR.search(text, start, end):
        return _PAIR_VALUE.match(text, start).end()  # type: ignore[union-attr]  # matches ""
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
    line, a query string, a flag or a listing's line; `name = value` alone on a line (an
    ini file); `name: value` alone on a line (YAML,
    an HTTP header) or as a whole quoted string (curl -H "X-Api-Key: ..."). Not a call's
    argument, nor code (an .env value may hold brackets, but is not a call)."""
    if value.endswith(",") or (_CODE_CHARS.intersection(value)
                               and (not env or op != "=" or _CALL.match(value))):
        return False
    if op == "=":
        return before in _BEFORE_ASSIGN or _line_head(text, head)
    if op.strip() == "=":  # an ini file's `name = value`, alone on its line; in code, a
        # name (`token = token_v2`) is a variable, unless a [section] stands before or it
        # looks generated
        if (_IDENTIFIER.fullmatch(value) and not _GENERATED.fullmatch(value)
                and _SECTION.search(text, max(head - 10 * _NEARBY, 0), head) is None):
            return False
        return _line_head(text, head) and _line_tail(text, end)
    if "value:" in op:  # an env list's `value: x` under `- name: X`
        return _line_tail(text, end)
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
