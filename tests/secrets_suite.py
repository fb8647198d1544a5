"""A suite of planted secrets for ctxpack.redact: over 300 synthetic secrets of over 100
kinds, each in the kind of text it turns up in (a shell line, a config file, a header, a
log line, prose), bare and under a variable's name.

Every secret is random, of the shape its provider gives (the prefix and the length and
alphabet of the rest), made at import time from a fixed seed: nothing here is a real
secret, and the file holds no string a secret scanner would flag. `leaks` says whether any
part of a secret survived redaction. tests/test_secrets_suite.py asserts on it, and
bench/secret_suite.py prints what is caught of each kind.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

_RNG = random.Random(20261126)
_ALNUM = string.ascii_letters + string.digits
_URLSAFE = _ALNUM + "-_"
_HEX = "0123456789abcdef"
_UPPER = string.ascii_uppercase + string.digits
_BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def _pick(alphabet: str, n: int) -> str:
    """n random characters of `alphabet`, with a digit and (where it has them) both cases,
    as generated secrets have."""
    while True:
        out = "".join(_RNG.choice(alphabet) for _ in range(n))
        if n < 8 or ((not any(c.isdigit() for c in alphabet) or any(c.isdigit() for c in out))
                     and (not any(c.islower() for c in alphabet) or any(c.islower() for c in out))
                     and (not any(c.isupper() for c in alphabet) or any(c.isupper() for c in out))):
            return out


def alnum(n: int) -> str:
    return _pick(_ALNUM, n)


def urlsafe(n: int) -> str:
    return _pick(_URLSAFE, n)


def hexa(n: int) -> str:
    return _pick(_HEX, n)


def digits(n: int) -> str:
    return str(_RNG.randint(1, 9)) + _pick(string.digits, n - 1)


def b64(n: int) -> str:
    return base64.b64encode(_RNG.randbytes(n)).decode()


def uid() -> str:
    return str(uuid.UUID(int=_RNG.getrandbits(128), version=4))


def password(n: int = 14, extra: str = "!-_.") -> str:
    """A password a person might pick: letters, digits and a few of `extra`."""
    return _pick(_ALNUM, n - 2) + _RNG.choice(extra) + _pick(string.digits, 1)


@dataclass(frozen=True)
class Planted:
    """One secret in the text around it; `kind` groups those of a provider or a place."""

    kind: str
    form: str
    text: str
    secret: str


SUITE: list[Planted] = []


def _plant(kind: str, form: str, text: str, secret: str) -> None:
    assert secret in text, (kind, form)
    SUITE.append(Planted(kind, form, text, secret))


def _token(kind: str, make: Callable[[], str], name: str, bare: str = "",
           named: str = "") -> None:
    """A token that `make` makes bare in text (`bare`, "{s}" where it goes), and another
    under `name` (by default an .env line)."""
    secret = make()
    _plant(kind, "bare", (bare or "the key is {s} (rotate it)").format(s=secret), secret)
    other = make()
    _plant(kind, "named", (named or "{n}={s}\n").format(n=name, s=other), other)


# --- provider tokens, bare and under a variable's name ------------------------------------

_token("openai", lambda: "sk-" + "proj-" + urlsafe(74) + "T3Blbk" + "FJ" + urlsafe(74),
       "OPENAI_API_KEY", "curl https://api.openai.com/v1/models -H 'x: {s}'")
_token("openai", lambda: "sk-" + alnum(20) + "T3Blbk" + "FJ" + alnum(20), "openai_api_key",
       named="openai_api_key: {s}\n")
_token("anthropic", lambda: "sk-" + "ant-api03-" + urlsafe(93) + "AA", "ANTHROPIC_API_KEY",
       "client = Anthropic(api_key='{s}')")
_token("github_token", lambda: "gh" + "p_" + alnum(36), "GITHUB_TOKEN")
_token("github_token", lambda: "gh" + "o_" + alnum(36), "GH_TOKEN",
       "oauth_token: {s}\n", 'export {n}="{s}"')
_token("github_token", lambda: "gh" + "s_" + alnum(36), "GITHUB_APP_TOKEN",
       "git remote set-url origin https://x-access-token:{s}@github.com/o/r.git")
_token("github_fine_grained", lambda: "github" + "_pat_" + alnum(22) + "_" + alnum(59),
       "GITHUB_PAT")
_token("gitlab", lambda: "gl" + "pat-" + urlsafe(20), "GITLAB_TOKEN",
       "curl --header 'PRIVATE-TOKEN: {s}' https://gitlab.com/api/v4/projects")
_token("gitlab_runner", lambda: "gl" + "rt-" + urlsafe(20), "CI_RUNNER_TOKEN",
       "gitlab-runner register --url https://gitlab.com --token {s}")
_token("gitlab_deploy", lambda: "gl" + "dt-" + urlsafe(20), "DEPLOY_TOKEN")
_token("slack_bot", lambda: "xo" + "xb-" + digits(12) + "-" + digits(13) + "-" + alnum(24),
       "SLACK_BOT_TOKEN")
_token("slack_user", lambda: "xo" + "xp-" + digits(12) + "-" + digits(12) + "-" + digits(13)
                               + "-" + hexa(32), "SLACK_USER_TOKEN")
_token("slack_app", lambda: "xa" + "pp-1-" + "A" + _pick(_UPPER, 10) + "-" + digits(13) + "-"
                              + hexa(64), "SLACK_APP_TOKEN")
_token("stripe_secret", lambda: "sk" + "_live_" + alnum(99), "STRIPE_SECRET_KEY",
       "stripe.api_key = '{s}'")
_token("stripe_restricted", lambda: "rk" + "_live_" + alnum(99), "STRIPE_RESTRICTED_KEY")
_token("stripe_test", lambda: "sk" + "_test_" + alnum(24), "STRIPE_TEST_KEY")
_token("stripe_webhook", lambda: "wh" + "sec_" + alnum(32), "STRIPE_WEBHOOK_SECRET",
       "stripe listen ... Ready! Your webhook signing secret is {s} (^C to quit)")
_token("twilio_api_key", lambda: "S" + "K" + hexa(32), "TWILIO_API_KEY")
_token("sendgrid", lambda: "S" + "G." + urlsafe(22) + "." + urlsafe(43), "SENDGRID_API_KEY")
_token("mailgun", lambda: "ke" + "y-" + _pick(string.ascii_lowercase + string.digits, 32),
       "MAILGUN_API_KEY", "auth=('api', '{s}')")
_token("mailgun", lambda: hexa(32) + "-" + hexa(8) + "-" + hexa(8), "MAILGUN_KEY",
       "mailgun key {s} for mg.example.org")
_token("mailchimp", lambda: hexa(32) + "-us" + digits(2), "MAILCHIMP_API_KEY")
_token("shopify_access", lambda: "sh" + "pat_" + hexa(32), "SHOPIFY_ACCESS_TOKEN",
       "X-Shopify-Access-Token: {s}")
_token("shopify_shared_secret", lambda: "sh" + "pss_" + hexa(32), "SHOPIFY_SHARED_SECRET")
_token("shopify_custom_app", lambda: "sh" + "pca_" + hexa(32), "SHOPIFY_TOKEN")
_token("shopify_private_app", lambda: "sh" + "ppa_" + hexa(32), "SHOPIFY_PASSWORD")
_token("digitalocean", lambda: "do" + "p_v1_" + hexa(64), "DIGITALOCEAN_TOKEN",
       "doctl auth init -t {s}")
_token("digitalocean_oauth", lambda: "do" + "o_v1_" + hexa(64), "DO_OAUTH_TOKEN")
_token("pypi", lambda: "py" + "pi-" + "AgEIcHlwaS5vcmc" + urlsafe(150), "PYPI_TOKEN",
       "twine upload -u __token__ -p {s} dist/*")
_token("npm", lambda: "np" + "m_" + alnum(36), "NPM_TOKEN")
_token("vault_service", lambda: "hv" + "s." + urlsafe(90), "VAULT_TOKEN",
       "Key Value\ntoken {s}\ntoken_accessor x")
_token("vault_batch", lambda: "hv" + "b." + urlsafe(120), "VAULT_BATCH_TOKEN")
_token("vault_legacy", lambda: "s" + "." + alnum(24), "VAULT_TOKEN",
       "vault login {s}")
_token("notion", lambda: "sec" + "ret_" + alnum(43), "NOTION_TOKEN")
_token("notion", lambda: "nt" + "n_" + digits(11) + alnum(35), "NOTION_API_KEY")
_token("telegram_bot", lambda: digits(10) + ":" + "AA" + urlsafe(33), "TELEGRAM_BOT_TOKEN",
       "curl https://api.telegram.org/bot{s}/getMe")
_token("huggingface", lambda: "h" + "f_" + _pick(string.ascii_letters, 34), "HF_TOKEN")
_token("databricks", lambda: "da" + "pi" + hexa(32), "DATABRICKS_TOKEN")
_token("heroku", lambda: "HR" + "KU-" + "AA" + urlsafe(58), "HEROKU_API_KEY")
_token("linear", lambda: "lin" + "_api_" + alnum(40), "LINEAR_API_KEY")
_token("atlassian", lambda: "AT" + "ATT" + "3xFfGF0" + urlsafe(170) + "=" + hexa(8).upper(),
       "JIRA_API_TOKEN")
_token("bitbucket", lambda: "AT" + "BB" + alnum(32), "BITBUCKET_APP_PASSWORD")
_token("doppler", lambda: "dp" + ".pt." + alnum(43), "DOPPLER_TOKEN")
_token("pulumi", lambda: "pu" + "l-" + hexa(40), "PULUMI_ACCESS_TOKEN")
_token("sentry_token", lambda: "sn" + "trys_" + "eyJ" + urlsafe(120), "SENTRY_AUTH_TOKEN")
_token("sentry_user_token", lambda: "sn" + "tryu_" + hexa(64), "SENTRY_TOKEN")
_token("postman", lambda: "PM" + "AK-" + hexa(24) + "-" + hexa(34), "POSTMAN_API_KEY")
_token("aws_access_key", lambda: "AK" + "IA" + _pick(_BASE32, 16), "AWS_ACCESS_KEY_ID")
_token("aws_session_key", lambda: "AS" + "IA" + _pick(_BASE32, 16), "aws_access_key_id",
       named="[default]\n{n} = {s}\n")
_token("google_api_key", lambda: "AI" + "za" + "Sy" + urlsafe(33), "GOOGLE_API_KEY",
       "https://maps.googleapis.com/maps/api/geocode/json?address=x&key={s}")
_token("google_oauth_secret", lambda: "GO" + "CSPX-" + urlsafe(28), "GOOGLE_CLIENT_SECRET")
_token("google_oauth_token", lambda: "ya" + "29." + "a0" + urlsafe(150), "GOOGLE_TOKEN")
_token("azure_client_secret", lambda: alnum(3) + digits(1) + "Q~" + _pick(_ALNUM + "~._-", 34),
       "AZURE_CLIENT_SECRET")
_token("jwt", lambda: ".".join(("ey" + "J" + urlsafe(30), "ey" + "J" + urlsafe(60), urlsafe(43))),
       "ACCESS_TOKEN", "Cookie value: {s}")
_token("groq", lambda: "gs" + "k_" + alnum(52), "GROQ_API_KEY")
_token("xai", lambda: "xa" + "i-" + alnum(80), "XAI_API_KEY")
_token("openrouter", lambda: "sk-" + "or-v1-" + hexa(64), "OPENROUTER_API_KEY")
_token("perplexity", lambda: "pp" + "lx-" + alnum(48), "PERPLEXITY_API_KEY")
_token("replicate", lambda: "r" + "8_" + alnum(37), "REPLICATE_API_TOKEN")
_token("nvidia", lambda: "nv" + "api-" + urlsafe(64), "NVIDIA_API_KEY")
_token("tavily", lambda: "tv" + "ly-" + alnum(32), "TAVILY_API_KEY")
_token("langsmith", lambda: "ls" + "v2_pt_" + hexa(32) + "_" + hexa(10), "LANGSMITH_API_KEY")
_token("grafana_cloud", lambda: "gl" + "c_" + b64(96).rstrip("="), "GRAFANA_CLOUD_TOKEN")
_token("grafana_service_account", lambda: "gl" + "sa_" + alnum(32) + "_" + hexa(8),
       "GRAFANA_TOKEN")
_token("new_relic", lambda: "NR" + "AK-" + _pick(_UPPER, 27), "NEW_RELIC_API_KEY")
_token("square", lambda: "sq" + "0atp-" + urlsafe(22), "SQUARE_ACCESS_TOKEN")
_token("square_secret", lambda: "sq" + "0csp-" + urlsafe(43), "SQUARE_APP_SECRET")
_token("dropbox", lambda: "s" + "l." + urlsafe(140), "DROPBOX_TOKEN")
_token("age", lambda: "AGE-" + "SECRET-KEY-1" + _pick(_BECH32, 58), "SOPS_AGE_KEY",
       "# created: 2026-01-01\n# public key: age1xyz\n{s}\n")
_token("mapbox", lambda: "s" + "k." + "eyJ1Ijoi" + urlsafe(40) + "." + urlsafe(22),
       "MAPBOX_SECRET_TOKEN")
_token("shippo", lambda: "shippo" + "_live_" + hexa(40), "SHIPPO_API_KEY")
_token("planetscale", lambda: "pscale" + "_tkn_" + urlsafe(43), "PLANETSCALE_TOKEN")
_token("planetscale_password", lambda: "pscale" + "_pw_" + urlsafe(43), "DATABASE_PASSWORD")
_token("supabase", lambda: "sb" + "p_" + hexa(40), "SUPABASE_ACCESS_TOKEN")
_token("docker_hub", lambda: "dc" + "kr_pat_" + urlsafe(27), "DOCKERHUB_TOKEN")
_token("rubygems", lambda: "ruby" + "gems_" + hexa(48), "GEM_HOST_API_KEY")
_token("terraform_cloud", lambda: alnum(14) + ".atlas" + "v1." + urlsafe(67), "TFE_TOKEN")
_token("contentful", lambda: "CF" + "PAT-" + urlsafe(43), "CONTENTFUL_MANAGEMENT_TOKEN")
_token("prefect", lambda: "pn" + "u_" + alnum(36), "PREFECT_API_KEY")
_token("readme", lambda: "rd" + "me_" + _pick(string.ascii_lowercase + string.digits, 70),
       "README_API_KEY")
_token("discord_bot", lambda: "MT" + urlsafe(24) + "." + urlsafe(6) + "." + urlsafe(38),
       "DISCORD_TOKEN", "bot.run('{s}')")
_token("jupiter", lambda: "ju" + "p_" + hexa(64), "JUPITER_API_KEY",
       "- Configured Jupiter API key `{s}`")
_token("jfrog", lambda: "AK" + "Cp8" + alnum(68), "ARTIFACTORY_API_KEY")
_token("azure_devops", lambda: _pick(string.ascii_lowercase + "234567", 52), "AZURE_DEVOPS_PAT",
       "az devops login <<< {s}")
_token("twilio_auth", lambda: hexa(32), "TWILIO_AUTH_TOKEN", "TWILIO_AUTH_TOKEN: {s}")
_token("datadog", lambda: hexa(32), "DD_API_KEY", '"DD_API_KEY": "{s}"', '{n}: "{s}"')
_token("cloudflare", lambda: urlsafe(40), "CLOUDFLARE_API_TOKEN", 'api_token = "{s}"')
_token("algolia", lambda: hexa(32), "ALGOLIA_ADMIN_KEY", 'algoliasearch("APPID", "{s}")',
       '{{"{n}": "{s}"}}')
_token("heroku_legacy", lambda: uid(), "HEROKU_API_KEY", "heroku authorizations: {s}",
       "export {n}={s}")
_token("generic_api_key", lambda: alnum(32), "MY_SERVICE_API_KEY", "api key: {s}")

# --- webhook URLs and DSNs -----------------------------------------------------------------

_SLACK_HOOK = "T" + _pick(_UPPER, 8) + "/B" + _pick(_UPPER, 10) + "/" + alnum(24)
_plant("slack_webhook", "url", "curl -X POST -d '{\"text\":\"hi\"}' "
       "https://hooks.slack.com/services/" + _SLACK_HOOK, _SLACK_HOOK.rsplit("/", 1)[1])
_SLACK_HOOK2 = "T" + _pick(_UPPER, 8) + "/B" + _pick(_UPPER, 10) + "/" + alnum(24)
_plant("slack_webhook", "named", "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/"
       + _SLACK_HOOK2 + "\n", _SLACK_HOOK2.rsplit("/", 1)[1])
_DISCORD_HOOK = urlsafe(68)
_plant("discord_webhook", "url", "webhook = 'https://discord.com/api/webhooks/"
       + digits(18) + "/" + _DISCORD_HOOK + "'", _DISCORD_HOOK)
_DISCORD_HOOK2 = urlsafe(68)
_plant("discord_webhook", "named", "DISCORD_WEBHOOK=https://discordapp.com/api/webhooks/"
       + digits(19) + "/" + _DISCORD_HOOK2, _DISCORD_HOOK2)
_TEAMS = hexa(32)
_plant("teams_webhook", "url", "POST https://contoso.webhook.office.com/webhookb2/" + uid()
       + "@" + uid() + "/IncomingWebhook/" + _TEAMS + "/" + uid() + " -> 200", _TEAMS)
_TEAMS2 = urlsafe(43)
_plant("teams_webhook", "workflow", "url: https://prod-12.westus.logic.azure.com:443/workflows/"
       + hexa(32) + "/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers"
       "%2Fmanual%2Frun&sv=1.0&sig=" + _TEAMS2, _TEAMS2)
_GCHAT = urlsafe(43)
_plant("google_chat_webhook", "url", "https://chat.googleapis.com/v1/spaces/AAAA" + urlsafe(7)
       + "/messages?key=" + "AI" + "za" + "Sy" + urlsafe(33) + "&token=" + _GCHAT + "%3D",
       _GCHAT)
_SENTRY = hexa(32)
_plant("sentry_dsn", "url", "sentry_sdk.init(dsn='https://" + _SENTRY + "@o" + digits(6)
       + ".ingest.sentry.io/" + digits(7) + "')", _SENTRY)
_SENTRY2 = hexa(32)
_plant("sentry_dsn", "named", "SENTRY_DSN=https://" + _SENTRY2 + "@o" + digits(6)
       + ".ingest.us.sentry.io/" + digits(7) + "\n", _SENTRY2)
_AZ_KEY = b64(64)
_plant("azure_storage_key", "connection string", "DefaultEndpointsProtocol=https;AccountName="
       "acct01;AccountKey=" + _AZ_KEY + ";EndpointSuffix=core.windows.net", _AZ_KEY)
_AZ_KEY2 = b64(64)
_plant("azure_storage_key", "cli", "az storage blob list --account-name acct01 --account-key "
       + _AZ_KEY2 + " -c logs", _AZ_KEY2)
_SAS = quote(b64(32), safe="")
_plant("azure_sas", "url", "https://acct01.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b"
       "&srt=sco&sp=rl&se=2026-12-01T00:00:00Z&spr=https&sig=" + _SAS, _SAS)
_SAS2 = quote(b64(32), safe="")
_plant("azure_sas", "named", "AZURE_SAS_TOKEN='sv=2022-11-02&ss=bfqt&srt=sco&sp=rwdlacup&se="
       "2026-12-01T00:00:00Z&sig=" + _SAS2 + "'", _SAS2)

# --- credentials in commands ---------------------------------------------------------------

for _form, _line in [
    ("curl -u", "curl -u deploy:{s} https://api.internal/v1/items"),
    ("curl --user", "curl -s --user 'admin:{s}' -X POST https://ci.internal/job/build"),
    ("sshpass -p", "sshpass -p '{s}' ssh root@10.0.0.12 uptime"),
    ("sshpass -p bare", "sshpass -p {s} scp backup.tar root@host:/srv"),
    ("docker login -p", "docker login -u ci-bot -p {s} registry.gitlab.com"),
    ("docker login --password", "docker login --username ci --password {s} ghcr.io"),
    ("mysql -p", "mysql -h db -u root -p{s} shop < dump.sql"),
    ("mysql --password", "mysqldump --user=root --password={s} shop > dump.sql"),
    ("redis-cli -a", "redis-cli -h cache -a {s} ping"),
    ("ldapsearch -w", "ldapsearch -x -D cn=admin,dc=ex,dc=org -w {s} -b dc=ex,dc=org"),
    ("wget --password", "wget --user=bob --password={s} https://files.internal/a.zip"),
    ("smbclient -U", "smbclient //fs/share -U alice%{s}"),
    ("htpasswd -b", "htpasswd -bc .htpasswd admin {s}"),
    ("htpasswd -b -c", "htpasswd -b -c /etc/nginx/.htpasswd admin {s}"),
    ("PGPASSWORD", "PGPASSWORD={s} psql -h db -U app app"),
    ("psql url", "psql postgresql://app:{s}@db.internal:5432/app"),
    ("git clone", "git clone https://bob:{s}@git.internal.org/team/repo.git"),
    ("mongosh", "mongosh 'mongodb://admin:{s}@mongo:27017/?authSource=admin'"),
    ("helm repo", "helm repo add internal https://charts.internal --username u --password {s}"),
    ("kubectl secret", "kubectl create secret generic db --from-literal=password={s}"),
    ("openssl pass", "openssl rsa -in key.pem -passin pass:{s} -out plain.pem"),
]:
    _secret = password()
    _plant("command_credentials", _form, _line.format(s=_secret), _secret)

# --- headers -----------------------------------------------------------------------------

_BASIC_PW = password()
_plant("auth_basic", "header", "Authorization: Basic "
       + base64.b64encode(f"ci:{_BASIC_PW}".encode()).decode(),
       base64.b64encode(f"ci:{_BASIC_PW}".encode()).decode())
_plant("auth_bearer", "header", "-H 'Authorization: Bearer " + (_s := urlsafe(40)) + "'", _s)
_plant("auth_token", "header", "Authorization: Token " + (_s := hexa(40)), _s)
_plant("auth_token", "github", 'curl -H "Authorization: token ' + (_s := alnum(40))
       + '" https://api.github.com/user', _s)
_plant("auth_token", "json", '{"headers": {"Authorization": "Token ' + (_s := alnum(32))
       + '"}}', _s)
_plant("auth_bot", "header", "Authorization: Bot " + (_s := urlsafe(24) + "." + urlsafe(6)
                                                      + "." + urlsafe(27)), _s)
_plant("auth_ssws", "header", "Authorization: SSWS 00" + (_s := urlsafe(40)), _s)
_plant("auth_raw", "header", "authorization: " + (_s := alnum(48)), _s)
_plant("api_key_header", "X-API-Key", "curl -H 'X-API-Key: " + (_s := alnum(32))
       + "' https://api.x.io", _s)
_plant("api_key_header", "X-Auth-Token", "X-Auth-Token: " + (_s := hexa(40)), _s)
_plant("api_key_header", "api-key", "api-key: " + (_s := hexa(32)), _s)
_plant("api_key_header", "Ocp-Apim", "Ocp-Apim-Subscription-Key: " + (_s := hexa(32)), _s)
_plant("cookie", "Cookie", "Cookie: theme=dark; sessionid=" + (_s := alnum(32))
       + "; lang=en", _s)
_plant("cookie", "Set-Cookie", "Set-Cookie: session=" + (_s := urlsafe(40))
       + "; Path=/; HttpOnly; Secure; SameSite=Lax", _s)
_plant("cookie", "csrf", "Cookie: csrftoken=" + (_s := alnum(32)) + "; sessionid="
       + alnum(32), _s)
_plant("cookie", "curl -b", "curl -b 'connect.sid=s%3A" + (_s := urlsafe(32))
       + "' https://app.internal/api/me", _s)
_plant("cookie", "curl --cookie", "curl --cookie \"auth_token=" + (_s := hexa(40))
       + "\" https://app.internal/", _s)

# --- URLs with passwords -------------------------------------------------------------------

for _form, _pw in [("plain", password()), ("hash", password(8) + "#" + password(8)),
                   ("at", password(8) + "@" + password(8)),
                   ("percent", password(6) + "%40" + password(6) + "%23" + password(4)),
                   ("question", password(8) + "?" + password(6)),
                   ("only password", password())]:
    _user = "" if _form == "only password" else "svc"
    _plant("url_password", _form, f"connecting to https://{_user}:{_pw}@api.internal.io/v2 ...",
           _pw)

# --- connection strings -------------------------------------------------------------------

for _form, _line in [
    ("ado.net", "Server=tcp:db.internal,1433;Database=app;User Id=sa;Password={s};"),
    ("ado.net pwd", "Data Source=db;Initial Catalog=app;Uid=app;Pwd={s};Encrypt=True"),
    ("jdbc query", "jdbc:postgresql://db:5432/app?user=app&password={s}&ssl=true"),
    ("jdbc sqlserver", "jdbc:sqlserver://db:1433;databaseName=app;user=sa;password={s};"),
    ("jdbc oracle", "jdbc:oracle:thin:scott/{s}@db.internal:1521/ORCL"),
    ("mongodb+srv", "MONGO_URI=mongodb+srv://app:{s}@cluster0.ab1cd.mongodb.net/app"),
    ("redis", "redis://default:{s}@redis-12345.cloud.redislabs.com:12345"),
    ("amqp", "broker_url = 'amqp://guest:{s}@rabbit:5672//'"),
    ("odbc", "Driver={{ODBC Driver 18}};Server=db;UID=app;PWD={s};"),
    ("libpq", "dbname=app host=db user=app password={s} sslmode=require"),
]:
    _secret = password(16, "!-_.&#%") if "ado" in _form else password()
    _plant("connection_string", _form, _line.format(s=_secret), _secret)
_plant("connection_string", "ado.net ampersand", "Server=db;User ID=app;Password=" +
       (_s := password(7) + "&" + password(7)) + ";Database=x", _s)

# --- config files --------------------------------------------------------------------------

for _kind, _form, _text in [
    ("netrc", "one line", "machine api.heroku.com login me@x.io password {s}\n"),
    ("netrc", "lines", "machine github.com\n  login bob\n  password {s}\n"),
    ("pypirc", "password", "[pypi]\nusername = bob\npassword = {s}\n"),
    ("npmrc", "_authToken", "//npm.internal.io/:_authToken={s}\n"),
    ("npmrc", "_auth", "_auth={s}\nalways-auth=true\n"),
    ("npmrc", "_password", "//npm.internal.io/:_password={s}\n"),
    ("dotenv", "quoted", 'DB_PASSWORD="{s}"\n'),
    ("dotenv", "bare", "REDIS_PASSWORD={s}\nREDIS_HOST=cache\n"),
    ("yaml", "nested", "database:\n  host: db\n  password: {s}\n"),
    ("yaml", "secret key", "auth:\n  client_secret: '{s}'\n"),
    ("json", "password", '{{"user": "app", "password": "{s}"}}'),
    ("json", "apiKey", '{{"apiKey": "{s}", "region": "eu"}}'),
    ("toml", "token", '[registry]\ntoken = "{s}"\n'),
    ("ini", "password", "[client]\nuser = root\npassword = {s}\n"),
    ("xml", "maven", "<server>\n  <id>nexus</id>\n  <password>{s}</password>\n</server>"),
    ("xml", "nuget", '<add key="ClearTextPassword" value="{s}" />'),
    ("kubeconfig", "token", "users:\n- name: admin\n  user:\n    token: {s}\n"),
    ("k8s secret", "data", "kind: Secret\ndata:\n  password: {s}\n"),
    ("git-credentials", "line", "https://bob:{s}@github.com\n"),
    ("docker config", "auth", '{{"auths": {{"https://index.docker.io/v1/": {{"auth": "{s}"}}}}}}'),
    ("properties", "spring", "spring.datasource.password={s}\n"),
    ("terraform", "tfvars", 'db_password = "{s}"\n'),
]:
    _secret = (base64.b64encode(f"bob:{password()}".encode()).decode()
               if "auth" == _form or _kind == "docker config" or _form == "data"
               else urlsafe(40) if _form in ("_authToken", "token") else password())
    _plant(_kind, _form, _text.format(s=_secret), _secret)

# --- private keys ------------------------------------------------------------------------


def _pem(label: str, lines: int = 6, headers: str = "", dashes: str = "-----") -> str:
    body = base64.b64encode(_RNG.randbytes(48 * lines)).decode()
    rows = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "\n".join([f"{dashes}BEGIN {label}{dashes}", *([headers] if headers else []),
                      *rows, f"{dashes}END {label}{dashes}"])


def _body(block: str) -> str:
    """The longest base64 line of a block: what must not survive."""
    return max(block.splitlines(), key=len)


for _label in ["RSA PRIVATE KEY", "PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "EC PRIVATE KEY",
               "DSA PRIVATE KEY", "OPENSSH PRIVATE KEY"]:
    _block = _pem(_label)
    _plant("private_key", _label, f"$ cat ~/.ssh/key\n{_block}\n$ ", _body(_block))
_block = _pem("RSA PRIVATE KEY", headers="Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-256-CBC,"
              + hexa(32).upper() + "\n")
_plant("private_key", "encrypted PEM", _block, _body(_block))
_block = _pem("PGP PRIVATE KEY BLOCK", 10, "Version: GnuPG v2\n")
_plant("private_key", "PGP", _block, _body(_block))
_block = _pem("SSH2 ENCRYPTED PRIVATE KEY", 8, 'Comment: "rsa-key-20260101"', "---- ")
_block = _block.replace("-----", "----").replace("KEY---- ", "KEY ----")
_plant("private_key", "SSH2", _block, _body(_block))
_PUTTY = base64.b64encode(_RNG.randbytes(96)).decode()
_plant("private_key", "PuTTY", "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n"
       "Comment: eddsa-key-20260101\nPublic-Lines: 2\n" + b64(33) + "\n" + b64(15)
       + "\nPrivate-Lines: 1\n" + _PUTTY + "\nPrivate-MAC: " + hexa(64) + "\n", _PUTTY)
_block = _pem("PRIVATE KEY")
_plant("private_key", "GCP service account JSON", json.dumps(
    {"type": "service_account", "project_id": "demo-123", "private_key_id": hexa(40),
     "private_key": _block + "\n", "client_email": "ci@demo-123.iam.gserviceaccount.com"},
    indent=2), _body(_block))
_cert = _pem("CERTIFICATE")
_block = _pem("PRIVATE KEY")
_plant("private_key", "cert and key bundle", f"{_cert}\n{_block}\n", _body(_block))
_block = _pem("RSA PRIVATE KEY")
_plant("private_key", "escaped in JSON", json.dumps({"content": _block}), _body(_block))

# --- AWS secrets under their names --------------------------------------------------------

_AWS = _pick(_ALNUM + "/+", 40)
_plant("aws_secret_key", "credentials file", "[default]\naws_access_key_id = "
       + "AK" + "IA" + _pick(_BASE32, 16) + "\naws_secret_access_key = " + _AWS + "\n", _AWS)
_AWS2 = _pick(_ALNUM + "/+", 40)
_plant("aws_secret_key", "env", "export AWS_SECRET_ACCESS_KEY=" + _AWS2, _AWS2)
_AWS3 = _pick(_ALNUM + "/+", 40)
_plant("aws_secret_key", "json", '{"AccessKeyId": "' + "AS" + "IA" + _pick(_BASE32, 16)
       + '", "SecretAccessKey": "' + _AWS3 + '"}', _AWS3)
_AWS_SESSION = "IQoJb3JpZ2luX2Vj" + _pick(_ALNUM + "/+", 300) + "=="
_plant("aws_session_token", "env", "AWS_SESSION_TOKEN=" + _AWS_SESSION, _AWS_SESSION)

# --- a second batch, written after the rules as a check of how well they generalize: at
# first 17 of these 25 were caught -------------------------------------------------------

for _kind, _form, _line in [
    ("command_credentials", "wget --http-password", "wget --http-password={s} https://x.io/f"),
    ("url_password", "git clone oauth2", "git clone https://oauth2:{s}@gitlab.com/g/r.git"),
    ("command_credentials", "docker login --password=", "docker login --password={s} r.io"),
    ("url_password", "psql quoted", 'psql "postgresql://u:{s}@h/db"'),
    ("auth_token", "ApiKey", "Authorization: ApiKey {s}"),
    ("api_key_header", "X-Vault-Token", "X-Vault-Token: {s}"),
    ("json", "X-API-KEY", '{{"headers": {{"X-API-KEY": "{s}"}}}}'),
    ("cookie", "set-cookie JSESSIONID", "set-cookie: JSESSIONID={s}; Path=/"),
    ("config_set", "aws configure set", "aws configure set aws_secret_access_key {s}"),
    ("config_set", "npm config set", "npm config set //registry.npmjs.org/:_authToken {s}"),
    ("command_credentials", "kubectl --docker-password",
     "kubectl create secret docker-registry r --docker-password={s}"),
    ("command_credentials", "curl --user", "curl --user admin:{s} https://x.io"),
    ("command_credentials", "curl -u quoted", 'curl -sSf -u "admin:{s}" https://x.io'),
    ("command_credentials", "mongosh --password", "mongosh --username admin --password {s}"),
    ("url_password", "redis-cli -u", "redis-cli -u redis://default:{s}@host:6379"),
    ("url_password", "ftp", "ftp://anonymous:{s}@ftp.x.org/pub"),
    ("yaml", "smtp_password", 'smtp_password: "{s}"'),
    ("json", "client_secret", '{{"client_secret": "{s}"}}'),
    ("env_list", "kubernetes", "env:\n  - name: DB_PASSWORD\n    value: {s}\n"),
    ("command_credentials", "keytool -storepass", "keytool -storepass {s} -keystore k.jks"),
    ("command_credentials", "openssl -passout", "openssl pkcs12 -export -passout pass:{s}"),
    ("command_credentials", "zip -P", "zip -P {s} a.zip f"),
    ("command_credentials", "7z -p", "7z a -p{s} a.7z f"),
    ("command_credentials", "sqlcmd -P", "sqlcmd -S db -U sa -P {s}"),
    ("command_credentials", "net use", "net use z: \\\\srv\\s /user:bob {s}"),
]:
    _secret = (_pick(_ALNUM + "/+", 40) if "aws" in _form else urlsafe(36) if "Token" in _form
               or "ApiKey" in _form or "JSESSIONID" in _form else password())
    _plant(_kind, _form, _line.format(s=_secret), _secret)

# The secrets a miss of is accepted, and why: bare, they have no shape of their own, and
# what they look like must stay (ids, digests)
ACCEPTED_MISSES: dict[tuple[str, str], str] = {
    ("azure_devops", "bare"): "52 lowercase letters and digits, with no prefix",
    ("algolia", "bare"): "32 hex digits, as an MD5 digest is",
    ("heroku_legacy", "bare"): "a UUID",
}


_PLACEHOLDER = re.compile(r"\[REDACTED:\w+\]")
_PLACEHOLDER_KIND = re.compile(r"\[REDACTED:(\w+)\]")


def leaks(secret: str, redacted: str, text: str) -> bool:
    """True when `redacted` still holds `secret`, or a piece of it: 4 or more of its letters
    and digits in a row (the part after a `#` or an `&`, half a token), unless they also
    stand in `text` apart from the secret (a word of the sentence around it)."""
    redacted = _PLACEHOLDER.sub("\0", redacted)
    if secret in redacted:
        return True
    around = text.replace(secret, "\0")
    pieces = "".join(c if c.isalnum() else " " for c in secret).split()
    for piece in pieces:
        width = min(len(piece), 6)
        for i in range(len(piece) - width + 1):
            window = piece[i : i + width]
            if width >= 4 and window in redacted and window not in around:
                return True
    return False


def found_values(text: str, redacted: str) -> list[tuple[str, str]]:
    """The (kind, value) of each placeholder of `redacted`, recovered from `text` (what the
    corpus report sorts; redact itself never returns a value)."""
    kinds = _PLACEHOLDER_KIND.findall(redacted)
    pieces = _PLACEHOLDER.split(redacted)
    pattern = "(.+?)".join(re.escape(piece) for piece in pieces)
    match = re.fullmatch(pattern, text, re.DOTALL)
    if match is None:
        return [(kind, "?") for kind in kinds]
    return list(zip(kinds, match.groups(), strict=True))
