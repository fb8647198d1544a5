"""Tests of ctxpack.redact: each kind of secret, the placeholder and the counts, what stays
(names, hosts, the words Bearer and Basic), which kind wins, the places secrets hide in
(JSON text, numbered listings, diffs, command lines), idempotence, secrets anywhere in
random text, and ordinary engineering text that must come back untouched.

Every fake secret is put together from pieces at run time, so that this file holds nothing
a secret scanner would flag.
"""

from __future__ import annotations

import base64
import json
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxpack.redact import KINDS, PLACEHOLDER, redact

from .secrets_suite import SUITE


def mark(kind: str) -> str:
    return PLACEHOLDER.format(kind)


OPENAI = "sk-" + "A1b2" * 12
OPENAI_PROJECT = "sk-proj-" + "Xy7_Qw3-" * 6 + "Zz9"
OPENAI_SERVICE = "sk-svcacct-" + "Zq9Yw8Xv" * 5
ANTHROPIC = "sk-ant-" + "api03-" + "Qm4_Rt7-" * 11 + "AA"
GITHUB = "gh" + "p_" + "a1B2c3D4e5F6" * 3
GITHUB_APP = "gh" + "s_" + "Z9y8X7w6V5u4" * 3
GITHUB_PAT = "github" + "_pat_" + "11ABCDEFG0" + "_" + "x9Y8z7W6v5" * 6
GITLAB = "gl" + "pat-" + "Ab3Cd4Ef5Gh6Ij7Kl8Mn"
GOOGLE = "AI" + "za" + "Sy" + "B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R"
SLACK = "xo" + "xb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"
STRIPE = "sk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
STRIPE_RESTRICTED = "rk" + "_live_" + "51H8bN2eZvKYlo2C0a1b2c3d"
STRIPE_TEST = "sk" + "_test_" + "26PHem9AhJZvU623DfE1x4sd"
HUGGINGFACE = "hf" + "_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123"
AWS_ID = "AK" + "IA" + "QX7RT2LM9PWZ4KDA"
AWS_SESSION_ID = "AS" + "IA" + "Y34FZKBOKMUTVV7A"
AWS_SECRET = ("Zq8R" + "t1V/") * 5
JWT = ".".join(("ey" + "JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9", "ey" + "JzdWIiOiIxMjM0NTY3ODkwIn0",
                "s1gNaTuRe_" * 4))
BEARER = "mF_9.B5f-4.1JqM" + "Tk7vQ2"
OPENROUTER = "sk-" + "or-v1-" + "0123456789abcdef" * 4
NPM = "np" + "m_" + "a1B2c3D4e5F6g7H8i9J0" + "k1L2m3N4o5P6q7R8"
GROQ = "gs" + "k_" + "Ab1Cd2Ef3Gh4" * 4 + "Zz9Yy8Xx"
XAI = "xa" + "i-" + "Qw3Er4Ty5Ui6Op7As8Df9" * 4
SENDGRID = ("S" + "G." + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7O" + "."
            + "Pq8Rs9Tu0Vw1Xy2Za3Bc4" + "De5Fg6Hi7Jk8Lm9No0Pq1R")
TWILIO = "S" + "K" + "0123456789abcdef" * 2
DISCORD = "MT" + "A4NjU0NzY1NDMyMTIzNDU2Nw" + ".GhIjKl." + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123"
BASIC = base64.b64encode(b"deploy:" + b"Tr0ub4dor-3").decode()
DASHES = "-" * 5
BODY = "\n".join(["MIIEpAIBAAKCAQEA" + "u1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"] * 3
                 + ["VHqF1jv3zLxk="])


def pem(label: str, body: str = BODY, newline: str = "\n") -> str:
    """A private key block with `label` ("RSA ", "OPENSSH "...) around `body`."""
    return newline.join((f"{DASHES}BEGIN {label}PRIVATE KEY{DASHES}",
                         body.replace("\n", newline), f"{DASHES}END {label}PRIVATE KEY{DASHES}"))


# (kind, text, the text redacted): one secret in each
CASES = [
    ("openai_key", f"key: {OPENAI} done", f"key: {mark('openai_key')} done"),
    ("openai_key", f"using {OPENAI_PROJECT}.", f"using {mark('openai_key')}."),
    ("openai_key", f"({OPENAI_SERVICE})", f"({mark('openai_key')})"),
    ("anthropic_key", f"client = Anthropic('{ANTHROPIC}')",
     f"client = Anthropic('{mark('anthropic_key')}')"),
    ("github_token", f"git push https://{GITHUB}@github.com/o/r",
     f"git push https://{mark('github_token')}@github.com/o/r"),
    ("github_token", f"token {GITHUB_APP} expires", f"token {mark('github_token')} expires"),
    ("github_token", f"gh auth login --with-token <<< {GITHUB_PAT}",
     f"gh auth login --with-token <<< {mark('github_token')}"),
    ("gitlab_token", f"PRIVATE-TOKEN: {GITLAB}", f"PRIVATE-TOKEN: {mark('gitlab_token')}"),
    ("google_api_key", f"maps.googleapis.com/maps/api/js?key={GOOGLE}&v=3",
     f"maps.googleapis.com/maps/api/js?key={mark('google_api_key')}&v=3"),
    ("slack_token", f"slack: {SLACK}", f"slack: {mark('slack_token')}"),
    ("stripe_key", f"stripe.api_key = '{STRIPE}'", f"stripe.api_key = '{mark('stripe_key')}'"),
    ("stripe_key", f"{STRIPE_RESTRICTED} and", f"{mark('stripe_key')} and"),
    ("stripe_key", f"[{STRIPE_TEST}]", f"[{mark('stripe_key')}]"),
    ("huggingface_token", f"huggingface-cli login --token {HUGGINGFACE}",
     f"huggingface-cli login --token {mark('huggingface_token')}"),
    ("aws_access_key", f"aws_access_key_id = {AWS_ID}",
     f"aws_access_key_id = {mark('aws_access_key')}"),
    ("aws_access_key", f'"AccessKeyId": "{AWS_SESSION_ID}"',
     f'"AccessKeyId": "{mark("aws_access_key")}"'),
    ("aws_secret_key", f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
     f"export AWS_SECRET_ACCESS_KEY={mark('aws_secret_key')}"),
    ("aws_secret_key", f"[default]\naws_secret_access_key = {AWS_SECRET}\n",
     f"[default]\naws_secret_access_key = {mark('aws_secret_key')}\n"),
    ("aws_secret_key", f'{{"SecretAccessKey": "{AWS_SECRET}"}}',
     f'{{"SecretAccessKey": "{mark("aws_secret_key")}"}}'),
    ("aws_secret_key", f"  aws_secret_access_key: {AWS_SECRET}",
     f"  aws_secret_access_key: {mark('aws_secret_key')}"),
    ("jwt", f"cookie session={JWT}; Path=/", f"cookie session={mark('jwt')}; Path=/"),
    ("bearer_token", f"Authorization: Bearer {BEARER}",
     f"Authorization: Bearer {mark('bearer_token')}"),
    ("bearer_token", f"curl -H 'authorization: bearer {BEARER}' https://api.x.io",
     f"curl -H 'authorization: bearer {mark('bearer_token')}' https://api.x.io"),
    ("private_key", f"id_rsa:\n{pem('RSA ')}\nthat was it",
     f"id_rsa:\n{mark('private_key')}\nthat was it"),
    ("url_password", "postgres://app:" + "hunter2-Very-Secret" + "@db:5432/x",
     f"postgres://app:{mark('url_password')}@db:5432/x"),
    ("url_password", "REDIS_URL=redis://:" + "s3cr3tRedis" + "@cache.internal:6379/0",
     f"REDIS_URL=redis://:{mark('url_password')}@cache.internal:6379/0"),
    ("env_secret", "DB_PASSWORD=" + "hunter2-prod", f"DB_PASSWORD={mark('env_secret')}"),
    ("env_secret", "export API_KEY=" + "9f8e7d6c5b4a", f"export API_KEY={mark('env_secret')}"),
    ("env_secret", "  client_secret: " + "Zx9-Lm8-Qw7\n",
     f"  client_secret: {mark('env_secret')}\n"),
    ("env_secret", '{"githubToken": "' + "abc123def456" + '"}',
     f'{{"githubToken": "{mark("env_secret")}"}}'),
    ("env_secret", 'api_key = "' + "abc123secretvalue" + '"', f'api_key = "{mark("env_secret")}"'),
    ("openrouter_key", f"OPENROUTER_API_KEY={OPENROUTER}",
     f"OPENROUTER_API_KEY={mark('openrouter_key')}"),
    ("npm_token", f"//registry.npmjs.org/:_authToken={NPM}",
     f"//registry.npmjs.org/:_authToken={mark('npm_token')}"),
    ("groq_key", f"Groq(api_key='{GROQ}')", f"Groq(api_key='{mark('groq_key')}')"),
    ("xai_key", f"export XAI_API_KEY={XAI}", f"export XAI_API_KEY={mark('xai_key')}"),
    ("sendgrid_key", f"SendGrid('{SENDGRID}')", f"SendGrid('{mark('sendgrid_key')}')"),
    ("twilio_key", f"Client('{TWILIO}', secret)", f"Client('{mark('twilio_key')}', secret)"),
    ("discord_token", f"bot.run('{DISCORD}')", f"bot.run('{mark('discord_token')}')"),
    ("basic_auth", f"curl -H 'Authorization: Basic {BASIC}' https://api.x.io",
     f"curl -H 'Authorization: Basic {mark('basic_auth')}' https://api.x.io"),
    ("cli_secret", "mysql -u root -p" + "Hunter22" + " app",
     f"mysql -u root -p{mark('cli_secret')} app"),
]


@pytest.mark.parametrize(("kind", "text", "expected"), CASES,
                         ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(CASES)])
def test_each_kind_is_replaced_by_its_placeholder(kind: str, text: str, expected: str) -> None:
    out, counts = redact(text)
    assert out == expected
    assert counts == Counter({kind: 1})


def test_every_kind_is_tested_and_kinds_lists_each_once() -> None:
    # the kinds not in CASES are in the planted-secret suite (tests/test_secrets_suite.py)
    planted = {kind for p in SUITE for kind in redact(p.text)[1]}
    assert sorted({kind for kind, _, _ in CASES} | planted) == sorted(KINDS)
    assert len(set(KINDS)) == len(KINDS)


def test_the_placeholder_names_the_kind_in_brackets() -> None:
    assert redact(f"a {OPENAI} b")[0] == "a [REDACTED:openai_key] b"


def test_counts_say_how_many_of_each_kind_and_nothing_of_the_values() -> None:
    text = "\n".join([OPENAI, OPENAI_PROJECT, f"x={GITHUB}", "API_TOKEN=" + "q1w2e3r4t5",
                      f"Bearer {BEARER}", AWS_ID, OPENAI])
    out, counts = redact(text)
    assert counts == Counter(openai_key=3, github_token=1, env_secret=1, bearer_token=1,
                             aws_access_key=1)
    assert out.count("[REDACTED:") == 7
    assert "A1b2" not in repr(counts) and "q1w2" not in repr(counts)


@pytest.mark.parametrize("label", ["", "RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED "])
def test_a_private_key_block_becomes_one_placeholder(label: str) -> None:
    out, counts = redact(f"before\n{pem(label)}\nafter")
    assert out == f"before\n{mark('private_key')}\nafter"
    assert counts == Counter(private_key=1)


def test_an_encrypted_pem_with_headers_an_escaped_one_and_a_cut_one_are_gone() -> None:
    headers = "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\n" + BODY
    escaped = pem("RSA ", newline="\\n")  # inside a JSON string
    cut = pem("RSA ").rsplit("\n", 2)[0]  # no END line: the output was truncated
    escaped_cut = cut.replace("\n", "\\n")
    for text in (pem("RSA ", headers), f'{{"key": "{escaped}"}}', cut + "\n[truncated]",
                 f'{{"out": "{escaped_cut}\\n[truncated]"}}'):
        out, counts = redact(text)
        assert counts == Counter(private_key=1), text
        assert "MIIE" not in out and "VHqF" not in out and "ENCRYPTED" not in out


def test_names_schemes_users_hosts_and_the_word_bearer_stay() -> None:
    out, _ = redact("mysql://root:" + "Tr0ub4dor-3" + "@10.0.0.7:3306/app?ssl=true")
    assert out == f"mysql://root:{mark('url_password')}@10.0.0.7:3306/app?ssl=true"
    out, _ = redact(f"-H 'Authorization: Bearer   {BEARER}'")
    assert out == f"-H 'Authorization: Bearer   {mark('bearer_token')}'"
    out, _ = redact('DB_PASSWORD="' + "hunter22" + "\"\nSECRET_KEY='" + "x9y8z7w6" + "'")
    assert out == f"DB_PASSWORD=\"{mark('env_secret')}\"\nSECRET_KEY='{mark('env_secret')}'"


@pytest.mark.parametrize(("text", "expected"), [
    ("POSTGRES_PASSWORD: " + "postgres", f"POSTGRES_PASSWORD: {mark('env_secret')}"),
    ("curl -H 'X-Api-Key: " + "k3y-v4lue-99" + "' https://a.io",
     f"curl -H 'X-Api-Key: {mark('env_secret')}' https://a.io"),
    ("https://rpc.io/?api-key=" + "d4f302b4-c9aa" + "&cluster=dev",
     f"https://rpc.io/?api-key={mark('env_secret')}&cluster=dev"),
    ("    api_key: str = '" + "abc123secretvalue" + "'",
     f"    api_key: str = '{mark('env_secret')}'"),
    ("    12\u2192auth_token: " + "Qw3rTy-9876", f"    12\u2192auth_token: {mark('env_secret')}"),
    ("OAUTH_CREDENTIALS=" + "x1y2z3w4v5", f"OAUTH_CREDENTIALS={mark('env_secret')}"),
    ("DB_PASSWORD='" + "@dm1n!Pa55" + "'", f"DB_PASSWORD='{mark('env_secret')}'"),
    ("password: " + "hunter2-prod" + "\r\nuser: app",
     f"password: {mark('env_secret')}\r\nuser: app"),
    ('{"command": "export API_KEY=' + "abc123def" + '\\nmake"}',
     f'{{"command": "export API_KEY={mark("env_secret")}\\nmake"}}'),
])
def test_env_secret_forms(text: str, expected: str) -> None:
    out, counts = redact(text)
    assert out == expected
    assert counts == Counter(env_secret=1)


@pytest.mark.parametrize(("text", "kind"), [
    (f"OPENAI_API_KEY={OPENAI}", "openai_key"),
    (f'"api_key": "{GOOGLE}"', "google_api_key"),
    (f"export GITHUB_TOKEN={GITHUB}", "github_token"),
    (f"x {ANTHROPIC} y", "anthropic_key"),
    (f"Authorization: Bearer {JWT}", "jwt"),
    (f"Authorization: Bearer {OPENAI}", "openai_key"),
    (f"https://x-access-token:{GITHUB_APP}@github.com/o/r.git", "github_token"),
    (f"AWS_ACCESS_KEY_ID={AWS_ID}", "aws_access_key"),
    ("GOOGLE_OAUTH_TOKEN=ya29." + "a0AfH6SMBx" + "Zr9-kQ2_" * 5, "google_oauth"),
    ("TFE_TOKEN=" + "Ab3dE5gH7jK9mN" + ".atlas" + "v1." + "Zr9-kQ2_" * 8, "terraform_token"),
    (f'{{"cmd": "printf \'x\\n{GITHUB}\\n\'"}}', "github_token"),
    (f'{{"cmd": "echo \\t{OPENAI}"}}', "openai_key"),
])
def test_a_value_of_a_known_format_counts_once_as_that_format(text: str, kind: str) -> None:
    out, counts = redact(text)
    assert counts == Counter({kind: 1})
    assert mark(kind) in out


ENV_FILE = ["DB_HOST=db", "DB_PASSWORD=" + "Pg-Pass-2931", "JWT_SECRET=" + "abc123def456ghi"]
ENV_FILE_REDACTED = ["DB_HOST=db", f"DB_PASSWORD={mark('env_secret')}",
                     f"JWT_SECRET={mark('env_secret')}"]


@pytest.mark.parametrize("separator", ["\n", "\r\n", "\t"])
def test_an_env_file_in_json_text_loses_its_values_and_keeps_its_names(separator: str) -> None:
    # a tool call's arguments as they are sent: JSON, its newlines the two characters \n
    text = json.dumps({"path": ".env", "content": separator.join(ENV_FILE)})
    out, counts = redact(text)
    assert json.loads(out) == {"path": ".env", "content": separator.join(ENV_FILE_REDACTED)}
    assert counts == Counter(env_secret=2)


SECRET = "hunter2-" + "smtp-99"


@pytest.mark.parametrize("content", [
    f"db:\n  host: db\n  password: {SECRET}\n",
    f"password: {SECRET}\nuser: app",
    f'{{\n  "user": "app",\n  "password": "{SECRET}"\n}}',
    f"     1\u2192# mail\n     2\u2192SMTP_PASSWORD={SECRET}\n",
    f"     2\u2192SMTP_PASSWORD={SECRET}\n",
    f"    12\u2192  smtp_password: {SECRET}\n",
    f"     2\tSMTP_PASSWORD={SECRET}\n",
])
@pytest.mark.parametrize("ascii_only", [True, False])
def test_a_file_in_json_text_loses_its_secret(content: str, ascii_only: bool) -> None:
    text = json.dumps({"file_path": "x", "content": content}, ensure_ascii=ascii_only)
    out, counts = redact(text)
    assert json.loads(out)["content"] == content.replace(SECRET, mark("env_secret"))
    assert counts == Counter(env_secret=1)


@pytest.mark.parametrize("gutter", ["     2\u2192", "  12\t", "12: ", "12|", "   7\u2192  "])
@pytest.mark.parametrize("name", ["SMTP_PASSWORD", "API_KEY", "TOKEN", "SECRET"])
def test_a_numbered_listing_line_loses_its_value(gutter: str, name: str) -> None:
    # Claude Code's Read tool, cat -n, grep -n
    assert redact(f"{gutter}{name}={SECRET}") == (f"{gutter}{name}={mark('env_secret')}",
                                                  Counter(env_secret=1))


@pytest.mark.parametrize("text", [
    f"DB_PASS={SECRET}", f"MYSQL_PASS={SECRET}", f"REDIS_PWD={SECRET}", f"SMTPPASS={SECRET}",
    f"SMTP_PASSPHRASE={SECRET}", f"passphrase: {SECRET}", f'{{"dbPass": "{SECRET}"}}',
    f"  ssh_key_passphrase: '{SECRET}'",
    # diffs and quotes
    f"+DB_PASSWORD={SECRET}", f"-API_KEY={SECRET}", f"> TOKEN={SECRET}", f"+  password: {SECRET}",
    # dotted or slashed values under a secret's name
    "OAUTH_TOKEN=zz29." + "a0AfH6SMBx" + "Zr9-kQ2_" * 5,
    "GOOGLE_OAUTH_TOKEN=ya29." + "a0AfH6SMBxyzQ12abcDEF", "API_TOKEN=abcd1234." + "efgh5678ijkl",
    'token: "abcd1234.' + 'efgh5678ijkl"', "AWS_SESSION_TOKEN=" + "IQoJb3JpZ2luX2Vj/" * 3,
    "SECRET_KEY=django-insecure-" + "x9#f!2k$a@q8(z)w&k2^m*=+-_",
    "SECRET_KEY = 'django-insecure-" + "x9#f!2k$a@q8(z)w&k2^m*=+-_'",
    # short passwords under a password's name
    "PASSWORD=" + "pg12", "DB_PASSWORD=" + "abcd", '{"password": "' + "abcd" + '"}',
    "  db_password: " + "admin", "password = '" + "hunter" + "'",
    # a passphrase's words
    '"passphrase": "correct horse battery staple"', "passphrase: correct horse battery staple",
    "SMTP_PASSPHRASE: correct horse battery staple", 'password = "correct horse battery staple"',
])
def test_more_values_known_by_their_name_go_whole(text: str) -> None:
    out, counts = redact(text)
    assert counts == Counter(env_secret=1), out
    name, value_ends = out.split(mark("env_secret"))
    assert text.startswith(name) and value_ends in ("", "'", '"', '"}')  # the whole value


def test_a_diff_loses_the_old_and_the_new_value() -> None:
    text = f"@@ -1,2 +1,2 @@\n DB_HOST=db\n-DB_PASSWORD={SECRET}\n+DB_PASSWORD={SECRET}x\n"
    out, counts = redact(text)
    assert out == (f"@@ -1,2 +1,2 @@\n DB_HOST=db\n-DB_PASSWORD={mark('env_secret')}\n"
                   f"+DB_PASSWORD={mark('env_secret')}\n")
    assert counts == Counter(env_secret=2)


@pytest.mark.parametrize(("text", "expected"), [
    ("mysql -u root -p" + "Hunter22" + " app", f"mysql -u root -p{mark('cli_secret')} app"),
    ("mysql -uroot -p'" + "S3cr3t pw" + "' app", f"mysql -uroot -p'{mark('cli_secret')}' app"),
    ("mysqldump --password=" + "hunter22" + " db", f"mysqldump --password={mark('cli_secret')} db"),
    ("mytool --password=" + "Pa55word!" + " --verbose",
     f"mytool --password={mark('cli_secret')} --verbose"),
    ("docker login -u me --password " + "Xy9-pw77" + " ghcr.io",
     f"docker login -u me --password {mark('cli_secret')} ghcr.io"),
    ("tool --token " + "abc123def456", f"tool --token {mark('cli_secret')}"),
    ("tool --api-key=" + "abc123def456", f"tool --api-key={mark('cli_secret')}"),
    ("tool --api-key '" + "abc123def456" + "' -v", f"tool --api-key '{mark('cli_secret')}' -v"),
    ("vault login --db-password=" + "hunter", f"vault login --db-password={mark('cli_secret')}"),
    ('{"command": "deploy --db-password \\"' + "S3cret-99" + '\\""}',
     f'{{"command": "deploy --db-password \\"{mark("cli_secret")}\\""}}'),
])
def test_a_command_line_flag_loses_its_value(text: str, expected: str) -> None:
    assert redact(text) == (expected, Counter(cli_secret=1))


PW = "Zt4v" + "B8nR-q2"
HOOK = "T0A1B2C3D/B4E5F6G7H8/" + "aB3dE5gH7jK9mN1pQ3sT5vX7"


@pytest.mark.parametrize(("text", "expected", "kind"), [
    # the user, the command, the flag stay; the password goes
    (f"curl -u deploy:{PW} https://x.io", f"curl -u deploy:{mark('cli_secret')} https://x.io",
     "cli_secret"),
    (f"sshpass -p '{PW}' ssh h", f"sshpass -p '{mark('cli_secret')}' ssh h", "cli_secret"),
    (f"docker login -u me -p {PW} ghcr.io", f"docker login -u me -p {mark('cli_secret')} ghcr.io",
     "cli_secret"),
    (f"smbclient //fs/s -U bob%{PW}", f"smbclient //fs/s -U bob%{mark('cli_secret')}",
     "cli_secret"),
    (f"htpasswd -bc .htpasswd admin {PW}", f"htpasswd -bc .htpasswd admin {mark('cli_secret')}",
     "cli_secret"),
    (f"htpasswd -B -b -c .htpasswd admin {PW}",
     f"htpasswd -B -b -c .htpasswd admin {mark('cli_secret')}", "cli_secret"),
    # a cookie's name and the other cookies stay
    (f"Cookie: theme=dark; sessionid={PW}x9Kq; lang=en",
     f"Cookie: theme=dark; sessionid={mark('cookie')}; lang=en", "cookie"),
    (f"Set-Cookie: sid={PW}x9Kq; Path=/; HttpOnly", f"Set-Cookie: sid={mark('cookie')}; Path=/; "
     "HttpOnly", "cookie"),
    # a header's scheme stays
    (f"Authorization: Token {PW}x9Kq1234", f"Authorization: Token {mark('auth_header')}",
     "auth_header"),
    # the host and path of a webhook, a DSN, a signed URL stay
    (f"https://hooks.slack.com/services/{HOOK}",
     f"https://hooks.slack.com/services/{mark('slack_webhook')}", "slack_webhook"),
    ("https://" + "0123456789abcdef" * 2 + "@o12.ingest.sentry.io/34",
     f"https://{mark('sentry_dsn')}@o12.ingest.sentry.io/34", "sentry_dsn"),
    ("https://a.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig=" + "aB3dE5gH7jK9mN1pQ3sT5v%3D",
     f"https://a.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig={mark('azure_sas')}",
     "azure_sas"),
    # a password with "#", "&" or ";" goes whole, and only it
    (f"postgres://app:{PW}#x@db/x", f"postgres://app:{mark('url_password')}@db/x",
     "url_password"),
    (f"Server=db;User ID=app;Password={PW}&b;Database=x",
     f"Server=db;User ID=app;Password={mark('env_secret')};Database=x", "env_secret"),
    (f"Data Source=db;Pwd={PW};Encrypt=True", f"Data Source=db;Pwd={mark('env_secret')};"
     "Encrypt=True", "env_secret"),
    # config files' forms
    (f"machine h.io login bob password {PW}", f"machine h.io login bob password "
     f"{mark('env_secret')}", "env_secret"),
    (f"<server><password>{PW}</password></server>",
     f"<server><password>{mark('env_secret')}</password></server>", "env_secret"),
    (f'<add key="ClearTextPassword" value="{PW}" />',
     f'<add key="ClearTextPassword" value="{mark("env_secret")}" />', "env_secret"),
])
def test_commands_headers_urls_and_config_forms_lose_only_the_secret(
        text: str, expected: str, kind: str) -> None:
    assert redact(text) == (expected, Counter({kind: 1}))


def test_a_flag_value_with_a_format_counts_as_that_format() -> None:
    assert redact(f"gh auth --token {GITHUB}") == (f"gh auth --token {mark('github_token')}",
                                                    Counter(github_token=1))


def test_basic_credentials_go_and_the_word_basic_stays() -> None:
    out, counts = redact(f'headers = {{"authorization": "basic {BASIC}"}}')
    assert out == f'headers = {{"authorization": "basic {mark("basic_auth")}"}}'
    assert counts == Counter(basic_auth=1)


@pytest.mark.parametrize("text", [
    # placeholders, in every place a secret was
    "API_KEY=[REDACTED:env_secret]", "Authorization: Bearer [REDACTED:bearer_token]",
    "postgres://app:[REDACTED:url_password]@db:5432/x", '{"token": "[REDACTED:github_token]"}',
    "[REDACTED:private_key]\n", "  password: [REDACTED:env_secret]  # rotated",
    # digests, ids, paths
    "commit 3f786850e387550fdab836ed7e6dc881de23001b (HEAD -> main, a1b2c3d)",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "request 123e4567-e89b-12d3-a456-426614174000 failed",
    "src/keys/token_store.py:12: error: Name 'secret' is not defined",
    "tests/test_auth.py::test_password_reset PASSED",
    "ls ~/.ssh/id_rsa.pub /etc/ssl/private/server.key",
    # settings that are not secrets
    "PATH=/usr/bin:/bin\nDEBUG=1\nHOME=/root", "max_tokens=4096", "tokens: 1200",
    "TOKENIZERS_PARALLELISM=false", "PRIVATE_KEY_PATH=~/.ssh/id_ed25519",
    '{"token_type": "Bearer", "expires_in": 3600, "input_tokens": 1234}',
    "auth_method: password", "secret_name: prod-db-creds-v2", "key_id: 7f3a9c",
    "public_key: ssh-ed25519-AAAAC3NzaC1lZDI1NTE5", "private: true",
    # prose
    "Please enter your password to continue.", "The token limit was exceeded again.",
    "Rotate the API key every 90 days; the secret manager handles it.",
    "Bearer tokens are described in RFC 6750.", "Use sk-learn-compatible-estimators here.",
    # code: expressions, not literals
    "token = tokens[i]", 'api_key = os.environ["OPENAI_API_KEY"]',
    "client = OpenAI(api_key=api_key)", "password = getpass.getpass()",
    "if token == expected_token:\n    return True", "def login(user, password=None):",
    "    api_key=api_key,\n    base_url=base_url,\n",
    "headers = {'Authorization': f'Bearer {token}'}",
    "apiKey: string;", "password: string", "token: process.env.API_TOKEN,",
    "const STORAGE_KEY = 'vue-todo-list'", "print('keys:', sorted(d.keys()), 'relation:', rel)",
    # templates and references
    "API_KEY=your-api-key-here", "TOKEN=${GITHUB_TOKEN}", "PASSWORD=$DB_PASSWORD",
    "OPENAI_API_KEY=<your key>", "password: '***'", "SECRET_KEY=changeme-please",
    "db_password: !vault |", "api_token: *default_token", "curl -d token=@token.txt",
    "postgres://user:${DB_PASSWORD}@db/x", "postgres://user:password@localhost/db",
    # URLs, other blocks and near misses
    "https://example.com:8080/path?q=1 and git@github.com:org/repo.git",
    "ssh://git@github.com/org/repo.git", "http://user@host/x",
    f"{DASHES}BEGIN PUBLIC KEY{DASHES}\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n"
    f"{DASHES}END PUBLIC KEY{DASHES}",
    "ey" + "JhbGciOiJIUzI1NiJ9 alone", "AKIA1234 is too short", "task-" + "A1b2" * 10,
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5Erk",
    # paths, URLs, references, numbers, versions and names in code under a secret's name
    "API_KEY=/etc/ssl/key.pem", "API_TOKEN=./secrets/token.txt", "API_TOKEN=secrets/token.txt",
    "API_KEY=https://vault.internal/v1/key", "PASSWORD=true", "SECRET_KEY=12345678",
    "API_KEY=1.2.3", "token = self.config.token", "password=args.password",
    "PASSWORD=args.password", "login(user, password=args.password)",
    "TOKEN_SERIALIZER=app.serializers.TokenSerializer", "OLDPWD=/home/app",
    # short values under a looser name; placeholders, types and sentences under a password's
    "API_KEY=" + "ab12c", "TOKEN=" + "abcde", "password: abc", '"password": "string"',
    '"password": "Password"', '"new_password": "New password"', "password: string | null",
    '"password": "Enter your password"', '"password": "This field may not be blank."',
    '    "password": user_password\n}', "password: hashedPassword", "gpass : float",
    "passwd:         files systemd", "pwd: Jim Meyering", "Password: enter it twice",
    'raise TypeError("pwd: expected bytes, got %s" % type(pwd))', "bypass: enabled",
    # test runs
    "--- PASS: TestRouter (0.00s)\n    --- PASS: TestRouter/not_found (0.00s)\nPASS",
    "5 passed, 1 failed", "passes: 12",
    # flags that hold no secret, or not here
    "--password is required", "use the --token flag", "tool --token $TOKEN",
    'tool --password "$PW"', "tool --api-key ${KEY}", "tool --token <token>",
    "tool --api-key YOUR_API_KEY", "tool --api-key=API_KEY", "tool --password=***",
    "mysql -u root -p mydb", "mysql -u root -p$MYSQL_PWD mydb", "pg_dump --no-password mydb2",
    "ansible-playbook --ask-pass site2.yml", "echo $PW | docker login --password-stdin",
    "aws s3api list-objects --bucket b --starting-token Z3M3LMPEXAMPLE2",
    "gh auth login --with-token < token.txt", "mkdir -p /tmp/x && cp -pr a b", "ssh -p 2222 h",
    "docker run -p8080:80 img", "gcc -pthread -pedantic x.c", "find . -name x -print",
    "parser.add_argument('--password', help='x')", 'run(["mysql", "--password", pw])',
    # the word Basic
    "Basic authentication is described in RFC 7617.", "Basic usage: ctxpack stats x.jsonl",
    "Authorization: Basic ABCDEFGHIJKL", "Authorization: Basic [REDACTED:basic_auth]",
    "mysql -p[REDACTED:cli_secret]", "--token [REDACTED:cli_secret]",
    # near misses of the new formats
    "SKU 0123456789abcdef0123456789abcdef", "npm_" + "config_cache", "xai-" + "grok-2",
    "SG.key.value", "MTIz.abc.def is not a bot token",
    # short flags of commands that give no password with them
    "docker run -p 8080:80 nginx", "docker login -u me --password-stdin ghcr.io",
    "curl -u deploy https://api.x.io", "curl -b cookies.txt -c cookies.txt https://x.io",
    "redis-cli -h cache -p 6379 ping", "sshpass -p $PW ssh host", "psql -U app -W -h db",
    "htpasswd -c .htpasswd admin", "tar -a -b 20 -u -w -f x.tar", "ls -a -b -p -u -w",
    "openssl rsa -passin env:KEY_PASS -in k.pem", "mysql -p -u root",
    "sshpass -p -e ssh host", "htpasswd -b -c .htpasswd admin",
    # headers and cookies that hold none
    "Authorization: required", "the Authorization header carries the token",
    "Cookie: theme=dark; lang=en-US", "Set-Cookie: theme=dark; Path=/; Max-Age=3600",
    "Set-Cookie: sessionid=; expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=/",
    "Authorization: Digest username=\"bob\", realm=\"x\"",
    # URLs, webhooks and DSNs without their secret
    "http://localhost:8080?next=a@b.io", "https://hooks.slack.com/services/T000/B000/XXXX",
    "https://discord.com/api/webhooks/123/xxxxxxxx", "https://sentry.io/organizations/acme/",
    "https://x.blob.core.windows.net/c?sig=...",
    # config forms that hold none
    "machine learning models forget the password policy", "<password>${DB_PASSWORD}</password>",
    "<token></token> and <div>hello world</div>", '<add key="ApiBase" value="https://x.io" />',
    "password = getpass()", "token = fetch_token()", "secret = os.urandom(32)",
    "token = token_v2", "password = password2", "    secret = make_secret3",
    # near misses of the formats added for more providers
    "key-value store", "s.upper()", "os.environ.get('X')", "the rapid API", "pul-request",
    "shpat_ is Shopify's prefix", "dapi is Databricks'", "NRAK-",
    "RFC 3339 10:30:00", "bot12345:AAbc is short", "Q~ alone", "AKIA" + "x" * 16,
    "deadbeef-us1 is too short", "cache/key-" + "0123456789abcdef" * 2,
    "Token: gho_************************************", "OPENWEATHER_API_KEY=user-provided-api-key",
    "SECRET_KEY='test-secret-key'",
])
def test_ordinary_text_comes_back_unchanged(text: str) -> None:
    assert redact(text) == (text, Counter())


SHOPIFY = "sh" + "pat_" + "0123456789abcdef" * 2
DIGITALOCEAN = "do" + "p_v1_" + "0123456789abcdef" * 4
PYPI = "py" + "pi-" + "AgEIcHlwaS5vcmc" + "Zr9-kQ2_" * 8
VAULT = "hv" + "s." + "CAESI" + "Zr9-kQ2_" * 4
NOTION = "nt" + "n_" + "12345678901" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM"
TELEGRAM = "1234567890" + ":AA" + "Zr9-kQ2_" * 4 + "x"
SECRETS = [OPENAI, OPENAI_PROJECT, ANTHROPIC, GITHUB, GITHUB_PAT, GITLAB, GOOGLE, SLACK,
           STRIPE, HUGGINGFACE, AWS_ID, AWS_SESSION_ID, JWT, pem("OPENSSH "), OPENROUTER, NPM,
           GROQ, XAI, SENDGRID, TWILIO, DISCORD, SHOPIFY, DIGITALOCEAN, PYPI, VAULT, NOTION,
           TELEGRAM]
SPACE = st.text(alphabet=" \t\n\r\u00a0\u2003", min_size=1, max_size=3)


@settings(max_examples=300, deadline=None)
@given(before=st.text(max_size=80), secret=st.sampled_from(SECRETS), space=SPACE,
       after=st.text(max_size=80), space2=SPACE)
def test_a_secret_anywhere_in_any_text_never_survives(before: str, secret: str, space: str,
                                                      after: str, space2: str) -> None:
    out, counts = redact(before + space + secret + space2 + after)
    assert secret not in out
    assert sum(counts.values()) >= 1
    for line in secret.splitlines():  # not a line of a key block, nor most of a token
        assert line not in out and line[len(line) // 4 :] not in out


IN_CONTEXT = [f"Bearer {BEARER}", "DB_PASSWORD=hunter2-prod", "postgres://app:pw-Zz9@db/x",
              f"AWS_SECRET_KEY={AWS_SECRET}", '"api_key": "abc123secretvalue"',
              "  client_secret: Zx9-Lm8\n", "--password S3cret-99", f"Basic {BASIC}",
              "\\nDB_PASSWORD=Pg-Pass-2931\\n", "  2\u2192SMTP_PASS=hunter2", "+DB_PWD=abcd",
              "passphrase: correct horse battery staple\n", "mysql -u root -pHunter22",
              "SECRET_KEY=django-insecure-x9#f!2k&q8(z)w", f"curl -u deploy:{PW} x",
              f"sshpass -p {PW} ssh h", f"Cookie: a=1; sessionid={PW}x9Kq; b=2",
              f"Authorization: Token {PW}x9Kq1234", f"https://hooks.slack.com/services/{HOOK}",
              f"machine h login u password {PW}\n", f"<password>{PW}</password>",
              f"Server=db;Password={PW}&x;Database=y", f"https://u:{PW}#x@h/"]
FRAGMENTS = ["token", "password:", "key=", "Bearer", "://", "@", '"', "'", "\n", "=", "]",
             f"{DASHES}BEGIN RSA PRIVATE KEY{DASHES}", "[REDACTED:", "sk-", "eyJ", "x",
             "\\n", "\\", '\\"', "--token ", " -p", "PASS", "passphrase: ", "\u2192", "Basic ",
             "&", "."]
PIECES = st.one_of(st.sampled_from(SECRETS + IN_CONTEXT), st.sampled_from(FRAGMENTS),
                   st.text(max_size=12))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(PIECES, max_size=12), glue=st.sampled_from(["", " ", "\n", "=", ": "]))
def test_redacting_twice_changes_nothing_more(pieces: list[str], glue: str) -> None:
    once, counts = redact(glue.join(pieces))
    assert set(counts) <= set(KINDS)
    assert redact(once) == (once, Counter())


def test_inputs_built_to_be_slow_come_back_whole() -> None:
    """Megabytes of what would make a careless pattern backtrack without end; none holds
    a secret. (Their speed is measured in bench/bench_redact.py; a pattern gone quadratic
    shows here as a suite that no longer finishes.)"""
    line = ("2026-01-02 INFO fetched src/app/auth.py in 12 ms; token count: 1200; "
            "sha 3f786850e387550fdab836ed7e6dc881de23001b\n")
    for text in (line * 40_000, "eyJ" * 100_000, "password: x\n" * 50_000, "api_key" * 80_000,
                 "--token ab\n" * 80_000, "--- PASS: TestX (0.00s)\n" * 40_000,
                 " -p" * 200_000, "MTA" * 200_000, "passphrase: " + "a " * 300_000):
        assert redact(text) == (text, Counter()), text[:40]
    for text in (f"{DASHES}BEGIN PRIVATE KEY{DASHES}\n" * 2_000, "\\nDB_PASS=x" * 60_000,
                 "passphrase: a b c d e f g h i\n" * 30_000, "Basic " + "QUJD" * 200_000):
        once, _ = redact(text)
        assert redact(once) == (once, Counter()), text[:40]
