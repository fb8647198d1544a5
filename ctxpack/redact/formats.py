"""Secrets with a format of their own: private key blocks, and the tokens providers give
(OpenAI's sk-, GitHub's ghp_, a JWT's eyJ...): their regexes, the search for whole blocks,
and the judge of whether a span is a token of a format, whole."""

from __future__ import annotations

import re
from collections.abc import Iterable

Found = tuple[str, int, int]  # a secret's kind, start and end

# Speed: a search with a regex whose every alternative starts with a literal character
# skips at C speed to the next place holding one of those characters. So each pattern
# below starts at a rare character of what it finds (the "k" of "sk-", the "J" of "eyJ"),
# with a lookbehind for the characters before it; the judges find where it starts.

# A Discord bot token opens with its bot's id in base64: M, N or O, then one of DTjz
_DISCORD = r"[DTjz][A-Za-z0-9]{21,25}\.[\w-]{6}\.[\w-]{27,38}"
# (kind, the fixed-width regex before the rare character, the rest from it: a character,
# or an escaped one). What each provider's tokens look like: a fixed prefix, then so many
# characters of an alphabet.
_FORMATS = (
    ("jwt", "ey", r"J[\w-]{10,}\.[\w-]{10,}\.[\w-]*"),
    # AI providers
    ("anthropic_key", "s", r"k-ant-[\w-]{20,}"),
    ("openrouter_key", "s", r"k-or-v1-[\w-]{20,}"),
    ("openai_key", "s", r"k-(?:proj-|svcacct-|admin-)?[\w-]{20,}"),
    ("huggingface_token", "hf", r"_[A-Za-z0-9]{30,}"),
    ("groq_key", "gsk", r"_[A-Za-z0-9]{48,}"),
    ("xai_key", "xai", r"-[A-Za-z0-9]{60,}"),
    ("perplexity_key", "pplx", r"-[A-Za-z0-9]{48}"),
    ("replicate_token", "r8", r"_[A-Za-z0-9]{37}"),
    ("nvidia_key", "nvapi", r"-[\w-]{64}"),
    ("tavily_key", "tvly", r"-(?:dev-|prod-)?[A-Za-z0-9]{32}"),
    ("langsmith_key", "lsv2", r"_(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}"),
    # code hosting and registries
    ("github_token", "gh[pousr]", r"_[A-Za-z0-9]{36,}"),
    ("github_token", "github", r"_pat_\w{22,}"),
    ("gitlab_token", "gl[pc][atb]t", r"-[\w-]{20,}(?:\.[\w-]+)*"),
    ("gitlab_token", "gl[dr]t", r"-[\w-]{20,}(?:\.[\w-]+)*"),
    ("atlassian_token", "ATAT", r"T[\w=-]{100,}"),
    ("atlassian_token", "AT", r"BB[A-Za-z0-9]{32}"),
    ("npm_token", "npm", r"_[A-Za-z0-9]{36}"),
    ("pypi_token", "pypi", r"-AgE[\w-]{50,}"),
    ("rubygems_key", "rubygems", r"_[0-9a-f]{48}"),
    ("docker_hub_token", "dckr", r"_pat_[\w-]{27}"),
    ("jfrog_key", "A", r"KCp[A-Za-z0-9]{69}"),
    ("terraform_token", "atlasv1", r"\.[\w-]{60,70}"),
    ("pulumi_token", "pul", r"-[0-9a-f]{40}"),
    ("postman_key", "PMAK", r"-[0-9a-f]{24}-[0-9a-f]{34}"),
    ("readme_key", "rdme", r"_[a-z0-9]{70}"),
    # clouds, platforms and secret stores
    ("aws_access_key", "A[KS]", r"IA[A-Z0-9]{16}"),
    ("google_api_key", "A", r"Iza[\w-]{35}"),
    ("google_oauth", "GOCSPX", r"-[\w-]{28}"),
    ("google_oauth", "ya29", r"\.[\w-]{30,}"),
    ("azure_client_secret", r"[\w~.-]{3}[0-9]Q", r"~[\w~.-]{31,34}"),
    ("digitalocean_token", "do[por]", r"_v1_[0-9a-f]{64}"),
    ("heroku_key", "HRKU", r"-[\w-]{58,}"),
    ("databricks_token", "da", r"pi[0-9a-f]{32}(?:-[0-9]+)?"),
    ("vault_token", "hv[sbr]", r"\.[\w-]{24,}"),
    ("vault_token", "s", r"\.[A-Za-z0-9]{24}"),
    ("doppler_token", "dp", r"\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}"),
    ("planetscale_token", "pscale", r"_(?:tkn|pw|oauth)_[\w-]{32,64}"),
    ("supabase_token", "sbp", r"_[0-9a-f]{40}"),
    ("grafana_token", "glc", r"_[A-Za-z0-9+/]{32,}={0,2}"),
    ("grafana_token", "glsa", r"_[A-Za-z0-9]{32}_[0-9a-f]{8}"),
    ("new_relic_key", "NR[AIJ][KISA]", r"-[A-Za-z0-9]{27}"),
    ("sentry_token", "sntry[su]", r"_[\w+/=-]{60,}"),
    ("age_secret_key", "AGE-SECRET-KEY", r"-1[0-9A-Z]{58}"),
    # payments, messaging and mail
    ("slack_token", "xox[abposre]", r"-[A-Za-z0-9-]{10,}"),
    ("slack_token", "xapp", r"-[0-9]-[A-Za-z0-9-]{20,}"),
    ("stripe_key", "[rs]", r"k_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("stripe_key", "whsec", r"_[A-Za-z0-9+/=]{32,}"),
    ("shopify_token", "shp[acps][tsa]", r"_[0-9a-fA-F]{32}"),
    ("square_token", "sq0[ac][ts]p", r"-[\w-]{22,43}"),
    ("shippo_token", "shippo", r"_(?:live|test)_[0-9a-f]{40}"),
    ("sendgrid_key", "S", r"G\.[\w-]{22}\.[\w-]{43}"),
    ("twilio_key", "S", r"K[0-9a-f]{32}"),
    ("mailgun_key", "key", r"-[0-9a-z]{32}"),
    ("mailgun_key", "[0-9a-f]{32}", r"-[0-9a-f]{8}-[0-9a-f]{8}"),
    ("mailchimp_key", "[0-9a-f]{32}", r"-us[0-9]{1,2}"),
    ("telegram_bot_token", "[0-9]", r":AA[\w-]{33}"),
    *(("discord_token", "", first + _DISCORD) for first in "MNO"),
    ("notion_token", "secret", r"_[A-Za-z0-9]{43}"),
    ("notion_token", "ntn", r"_[0-9]{11}[A-Za-z0-9]{35}"),
    ("linear_key", "lin_api", r"_[A-Za-z0-9]{40}"),
    ("dropbox_token", "sl", r"\.(?:u\.)?[\w-]{130,}"),
    ("mapbox_token", "s", r"k\.eyJ[\w-]{20,}\.[\w-]{20,}"),
    ("contentful_token", "CFPAT", r"-[\w-]{43}"),
    ("prefect_key", "pnu", r"_[A-Za-z0-9]{36}"),
    ("jupiter_key", "jup", r"_[0-9a-f]{64}"),
)
# Where the token of a format starts, when more than its `before` may stand before its
# rare character: a Telegram bot's "bot" and id (as in its API's URLs)
_HEADS = {"telegram_bot_token": r"(?:bot)?[0-9]{8,10}"}
# The id before a token that goes with it: Terraform's "<14 characters>.atlasv1.<secret>"
_IDS = {"terraform_token": re.compile(r"[A-Za-z0-9]{14}\.")}
# Where a token of a format may start before its search does: "github", a Telegram bot's
# "bot" and ten digits, a Mailgun key's 32 hex digits
_LONGEST_PREFIX = 32
# Formats whose tokens could be words or digests but for a digit, mixed case or a letter
# past f: "sk-learn-compatible-estimator", "xoxo-", a cache's "key-<md5>"
_MAY_BE_WORDS = frozenset({"openai_key", "slack_token", "tavily_key", "vault_token",
                           "mailgun_key", "mailchimp_key", "grafana_token",
                           "square_token"})
_PEM_LABEL = r"(?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
_SSH2_LABEL = r"SSH2 (?:ENCRYPTED )?PRIVATE KEY ----"  # ssh.com's: four dashes and a space
_NEWLINE = r"(?:\r?\n|(?:\\r)?\\n)"  # a real one, or one escaped in JSON text
_BASE64_LINES = (rf"(?:{_NEWLINE}{{1,2}}(?:[A-Za-z0-9+/=]{{40,}}(?![\w-])"
                 rf"|(?:Proc-Type|DEK-Info|Comment|Version):[^\r\n\\]*))*"
                 rf"(?:{_NEWLINE}[A-Za-z0-9+/=]+(?![\w-]))?")
# A whole block, found first: a token glued to it must not take its first line. A block
# cut short before its END line still loses every base64 line it kept.
_PRIVATE_KEY = re.compile(
    rf"G(?<=-----BEG)IN {_PEM_LABEL}(?:[\s\S]{{0,65536}}?-----END {_PEM_LABEL}|{_BASE64_LINES})"
    rf"|G(?<=---- BEG)IN {_SSH2_LABEL}(?:[\s\S]{{0,65536}}?---- END {_SSH2_LABEL}"
    rf"|{_BASE64_LINES})"
)


def _union(patterns: Iterable[tuple[str, str]]) -> tuple[re.Pattern[str], dict[str, str]]:
    """One regex for (kind, regex) pairs, and the kind of each alternative by the name of
    the empty group that ends it (`match.lastgroup`)."""
    patterns = list(patterns)
    regex = "|".join(f"{p}(?P<k{n}>)" for n, (_, p) in enumerate(patterns))
    return re.compile(regex, re.ASCII), {f"k{n}": kind for n, (kind, _) in enumerate(patterns)}


_END = r"(?![\w-])"  # tokens end where a word does
_FORMAT, _FORMAT_KIND = _union((kind, _HEADS.get(kind, before) + rest + _END)
                               for kind, before, rest in _FORMATS)
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _private_key(text: str, match: re.Match[str]) -> tuple[str, int, int]:
    """The whole block, from its first dash."""
    return "private_key", match.start() - len("-----BE"), match.end()


def _format(text: str, start: int, end: int) -> str:
    """The kind of secret that text[start:end] is, whole, by its format alone; "" if none."""
    match = _FORMAT.fullmatch(text, start, end)
    if match is None:
        return ""
    kind = _FORMAT_KIND[match.lastgroup or ""]
    if kind in _MAY_BE_WORDS and not _random(match.group()):
        return ""
    if kind == "mailgun_key" and match.group().startswith("key-") and not re.search(
            "[g-z]", match.group()[4:]):
        return ""  # key-<a digest>
    return kind


def _random(token: str) -> bool:
    """True when `token` has a digit or mixes cases, as generated ones do and words don't."""
    return (any(c.isdigit() for c in token)
            or (any(c.islower() for c in token) and any(c.isupper() for c in token)))
