# ruff: noqa: E501, UP031  (a table of templates; long lines read better than split ones)
"""Write the generated masking corpus: secrets in documented vendor formats and credential
contexts, and look-alikes from real code and tool output (format: tests/masking/README.md).

    python tests/masking/generate.py        # writes generated.txt and heldback.txt

Every value is synthetic, made from the vendor's documented format (prefix, length,
alphabet, GitHub's and npm's CRC32 checksum) with a fixed seed; none is a real credential.
Each case goes to generated.txt (two thirds) or heldback.txt (one third) at random.
"""

from __future__ import annotations

import base64
import random
import string
import sys
import urllib.parse
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
HEX = "0123456789abcdef"
R = random.Random(26)


def rnd(n: int, alphabet: str = B62) -> str:
    return "".join(R.choice(alphabet) for _ in range(n))


def b62(number: int) -> str:
    out = ""
    while number:
        number, rest = divmod(number, 62)
        out = B62[rest] + out
    return out.rjust(6, "0")


def crc_token(prefix: str) -> str:
    body = rnd(30)
    return prefix + body + b62(zlib.crc32(body.encode()))


def password() -> str:
    words = ["Summer", "Winter", "Falcon", "Orbit", "Maple", "Quartz", "Tiger", "Cobalt"]
    return R.choice(
        [
            f"{R.choice(words)}{R.randint(1990, 2030)}{R.choice('!@#$%&*')}",
            rnd(R.randint(12, 24), B62 + "!@#%^*-_"),
            f"{R.choice(words).lower()}-{R.choice(words).lower()}-{R.randint(10, 99)}",
            rnd(R.randint(10, 16)),
        ]
    )


VENDORS = {
    "GitHub classic token": lambda: crc_token("ghp_"),
    "GitHub OAuth token": lambda: crc_token("gho_"),
    "GitHub app token": lambda: crc_token(R.choice(["ghs_", "ghu_"])),
    "GitHub fine-grained token": lambda: f"github_pat_11{rnd(20)}_{rnd(59)}",
    "GitLab token": lambda: R.choice(["glpat-", "gldt-", "glrt-"]) + rnd(20, B62 + "_-"),
    "Slack bot token": lambda: f"xoxb-{rnd(12, string.digits)}-{rnd(13, string.digits)}-{rnd(24)}",
    "Slack user token": lambda: (
        f"xoxp-{rnd(12, string.digits)}-{rnd(12, string.digits)}-{rnd(13, string.digits)}-{rnd(32, HEX)}"
    ),
    "Slack app token": lambda: (
        f"xapp-1-A{rnd(10, string.ascii_uppercase + string.digits)}-{rnd(13, string.digits)}-{rnd(64, HEX)}"
    ),
    "Stripe secret key": lambda: (
        R.choice(["sk_live_", "sk_test_", "rk_live_"]) + rnd(R.choice([24, 99]))
    ),
    "Stripe webhook secret": lambda: "whsec_" + rnd(32),
    "OpenAI project key": lambda: "sk-proj-" + rnd(R.choice([48, 120]), B62 + "_-"),
    "OpenAI legacy key": lambda: f"sk-{rnd(20)}T3BlbkFJ{rnd(20)}",
    "Anthropic key": lambda: f"sk-ant-api03-{rnd(93, B62 + '_-')}AA",
    "AWS access key id": lambda: "AKIA" + rnd(16, string.ascii_uppercase + "234567"),
    "Google API key": lambda: "AIza" + rnd(35, B62 + "_-"),
    "Google OAuth client secret": lambda: "GOCSPX-" + rnd(28, B62 + "_-"),
    "Google OAuth access token": lambda: "ya29.a0" + rnd(120, B62 + "_-"),
    "npm token": lambda: crc_token("npm_"),
    "PyPI token": lambda: "pypi-AgEIcHlwaS5vcmc" + rnd(140, B62 + "_-"),
    "Hugging Face token": lambda: "hf_" + rnd(34, string.ascii_letters),
    "SendGrid key": lambda: f"SG.{rnd(22, B62 + '_-')}.{rnd(43, B62 + '_-')}",
    "Twilio API key": lambda: "SK" + rnd(32, HEX),
    "Mailgun key": lambda: "key-" + rnd(32, HEX),
    "Shopify token": lambda: R.choice(["shpat_", "shpss_", "shpca_"]) + rnd(32, HEX),
    "Atlassian API token": lambda: (
        "ATATT3xFfGF0" + rnd(170, B62 + "_-") + "=" + rnd(8, HEX.upper())
    ),
    "DigitalOcean token": lambda: R.choice(["dop_v1_", "doo_v1_"]) + rnd(64, HEX),
    "Doppler token": lambda: "dp.pt." + rnd(43),
    "Vault token": lambda: "hvs." + rnd(90, B62 + "_-"),
    "Terraform Cloud token": lambda: f"{rnd(14)}.atlasv1.{rnd(67, B62 + '_-')}",
    "Databricks token": lambda: "dapi" + rnd(32, HEX),
    "Linear key": lambda: "lin_api_" + rnd(40),
    "Postman key": lambda: f"PMAK-{rnd(24, HEX)}-{rnd(34, HEX)}",
    "Grafana service token": lambda: f"glsa_{rnd(32)}_{rnd(8, HEX)}",
    "New Relic key": lambda: "NRAK-" + rnd(27, string.ascii_uppercase + string.digits),
    "PlanetScale token": lambda: "pscale_tkn_" + rnd(43, B62 + "_"),
    "Pulumi token": lambda: "pul-" + rnd(40, HEX),
    "Supabase token": lambda: "sbp_" + rnd(40, HEX),
    "age secret key": lambda: (
        "AGE-SECRET-KEY-1" + rnd(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L".upper())
    ),
    "Square secret": lambda: "sq0csp-" + rnd(43, B62 + "_-"),
    "Figma token": lambda: "figd_" + rnd(40, B62 + "_-"),
    "Replicate token": lambda: "r8_" + rnd(37),
    "Groq key": lambda: "gsk_" + rnd(52),
    "Tailscale key": lambda: f"tskey-auth-{rnd(12)}-{rnd(32)}",
    "Contentful token": lambda: "CFPAT-" + rnd(43, B62 + "_-"),
    "Docker Hub token": lambda: "dckr_pat_" + rnd(27, B62 + "_-"),
    "Netlify token": lambda: "nfp_" + rnd(36),
    "RubyGems key": lambda: "rubygems_" + rnd(48, HEX),
    "Brevo key": lambda: f"xkeysib-{rnd(64, HEX)}-{rnd(16)}",
    "LangSmith key": lambda: f"lsv2_pt_{rnd(32, HEX)}_{rnd(10, HEX)}",
    "Sentry token": lambda: "sntryu_" + rnd(64, HEX),
    "JWT": lambda: (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
        + base64.urlsafe_b64encode(
            f'{{"sub":"{rnd(8, string.digits)}","exp":{R.randint(1700000000, 1800000000)}}}'.encode()
        )
        .decode()
        .rstrip("=")
        + "."
        + rnd(43, B62 + "_-")
    ),
    "Telegram bot token": lambda: f"{R.randint(100000000, 9999999999)}:AA{rnd(33, B62 + '_-')}",
}

# Contexts for any value: (category, template). `{v}` is the marked secret.
VALUE_CONTEXTS = [
    ("env file", "{NAME}={v}"),
    ("shell export", 'export {NAME}="{v}"'),
    ("yaml", "config:\n  {name}: {v}\n  region: eu-west-1"),
    ("json", '{{"{camel}": "{v}", "timeout": 30}}'),
    ("toml", '[service]\n{name} = "{v}"'),
    ("properties", "app.{dotted}={v}"),
    ("python kwarg", 'client = Client({name}="{v}", timeout=10)'),
    ("js object", "const cfg = {{ {camel}: '{v}', retries: 3 }};"),
    ("cli long flag", "deploy --{flag} {v} --region us-east-1"),
    ("cli flag equals", "tool sync --{flag}={v}"),
    ("docker env", "docker run -e {NAME}={v} app:latest"),
    ("k8s literal", "kubectl create secret generic app --from-literal={name}={v}"),
]
NAMES = [
    ("API_KEY", "api_key", "apiKey", "api.key", "api-key"),
    ("AUTH_TOKEN", "auth_token", "authToken", "auth.token", "auth-token"),
    ("CLIENT_SECRET", "client_secret", "clientSecret", "client.secret", "client-secret"),
    ("DB_PASSWORD", "db_password", "dbPassword", "db.password", "db-password"),
    ("SERVICE_KEY", "service_key", "serviceKey", "service.key", "service-key"),
    ("SMTP_PASS", "smtp_pass", "smtpPass", "smtp.pass", "smtp-pass"),
    ("ADMIN_PWD", "admin_pwd", "adminPwd", "admin.pwd", "admin-pwd"),
    ("NPM_AUTH", "npm_auth", "npmAuth", "npm.auth", "npm-auth"),
    ("GCP_CREDENTIALS", "gcp_credentials", "gcpCredentials", "gcp.credentials", "gcp-credentials"),
    ("SIGNING_SECRET", "signing_secret", "signingSecret", "signing.secret", "signing-secret"),
    (
        "MAPBOX_ACCESS_TOKEN",
        "mapbox_access_token",
        "mapboxAccessToken",
        "mapbox.access_token",
        "mapbox-access-token",
    ),
    ("ENCRYPTION_KEY", "encryption_key", "encryptionKey", "encryption.key", "encryption-key"),
]

BARE_CONTEXTS = [
    ("prose", "Using {v} for the staging deploy."),
    ("log line", "2026-11-30T10:00:01Z DEBUG loaded credential {v} from keychain"),
    ("quoted in code", 'client = new Client("{v}");'),
    ("glued to underscore", "PROD_{v}"),
    ("glued to dash", "--{v}"),
    ("header", 'curl -H "Authorization: Bearer {v}" https://api.example.com/v1/me'),
    ("markdown", "| staging | `{v}` | rotated |"),
]

CLI_SECRETS = [
    ("mysql attached", "mysql -h db.internal -uroot -p{v} shop < dump.sql"),
    ("mysqldump combined", "mysqldump -uadmin -p{v} --single-transaction app > app.sql"),
    ("ldapsearch -w", "ldapsearch -x -H ldap://dc1 -D 'cn=admin,dc=corp' -w {v} -b dc=corp"),
    ("ldapsearch combined", "ldapsearch -LLL -xw {v} -D cn=admin,dc=corp uid=bob"),
    ("redis-cli -a", "redis-cli -h cache.internal -a {v} INFO"),
    ("sqlcmd -P", "sqlcmd -S tcp:db,1433 -U sa -P {v} -Q 'SELECT 1'"),
    ("docker login -p", "docker login -u ci -p {v} registry.example.com"),
    ("az login -p", "az login --service-principal -u 8f1c-app -p {v} --tenant corp"),
    ("helm registry login", "helm registry login ghcr.io -u bot -p {v}"),
    ("sshpass", "sshpass -p {v} ssh deploy@10.0.0.5 'uptime'"),
    ("smbclient", "smbclient //fs01/share -U CORP/bob%{v} -c ls"),
    ("sqlplus", "sqlplus scott/{v}@//db.example.com:1521/ORCL"),
    ("openssl pass", "openssl enc -aes-256-cbc -in a.tar -out a.enc -pass pass:{v}"),
    ("keytool storepass", "keytool -list -keystore app.jks -storepass {v}"),
    ("7z attached", "7z a -p{v} -mhe=on backup.7z data/"),
    ("zip -P", "zip -r -P {v} secrets.zip keys/"),
    ("mongosh -p", "mongosh mongodb://db:27017/app -u admin -p {v} --authenticationDatabase admin"),
    ("curl -u", "curl -u deploy:{v} https://nexus.example.com/repository/raw/"),
    ("curl combined -u", "curl -fsSLu ci:{v} https://artifacts.example.com/app.tgz"),
    ("wget password", "wget --user=ci --password={v} https://ftp.example.com/a.iso"),
    ("htpasswd -b", "htpasswd -b -c .htpasswd admin {v}"),
    ("aws configure set", "aws configure set aws_secret_access_key {v} --profile prod"),
    ("yarn config set", "yarn config set npmAuthToken {v}"),
    ("vault login", "vault login {v}"),
    ("mysql env", "MYSQL_PWD={v} mysql -u root app"),
    ("psql uri", 'psql "postgresql://app:{v}@db.internal:5432/app?sslmode=require"'),
    ("pip index url", "pip install --index-url https://__token__:{v}@pypi.example.com/simple pkg"),
    ("git clone userinfo", "git clone https://oauth2:{v}@gitlab.example.com/group/app.git"),
]

FILE_SECRETS = [
    ("netrc", "machine api.example.com\n  login bob@example.com\n  password {v}"),
    ("netrc one line", "machine github.com login bob password {v}"),
    ("pgpass", "db.internal:5432:app:app_user:{v}"),
    ("npmrc authToken", "//registry.npmjs.org/:_authToken={v}"),
    ("npmrc _auth", "registry=https://npm.example.com/\n_auth={v}\nalways-auth=true"),
    ("pypirc", "[pypi]\nusername = __token__\npassword = {v}"),
    (
        "maven settings",
        "<server>\n  <id>nexus</id>\n  <username>deploy</username>\n  <password>{v}</password>\n</server>",
    ),
    (
        "nuget config",
        '<packageSourceCredentials><feed><add key="ClearTextPassword" value="{v}" /></feed></packageSourceCredentials>',
    ),
    ("git-credentials", "https://bob:{v}@github.com"),
    ("ini password", "[database]\nhost = db.internal\npassword = {v}"),
    ("xml attribute", '<datasource url="jdbc:mysql://db/app" user="app" password="{v}"/>'),
    (
        "connection string",
        "Server=tcp:db.example.com,1433;Database=app;User ID=app;Password={v};Encrypt=true",
    ),
    ("gradle properties", "ossrhUsername=bob\nossrhPassword={v}"),
    ("spring properties", "spring.datasource.password={v}"),
    ("redis url", "REDIS_URL=redis://:{v}@cache.internal:6379/0"),
    ("mongodb srv", "mongodb+srv://admin:{v}@cluster0.ab1cd.mongodb.net/app"),
]

CODE_SECRETS = [
    ("requests auth tuple", 'r = requests.get(url, auth=("api", "{v}"))'),
    ("HTTPBasicAuth", 'session.auth = HTTPBasicAuth("admin", "{v}")'),
    ("boto3 kwargs", 'boto3.client("s3", aws_access_key_id=key_id, aws_secret_access_key="{v}")'),
    ("axios auth", "axios.get(url, {{ auth: {{ username: 'bob', password: '{v}' }} }})"),
    ("go struct", 'cfg := Config{{Password: "{v}", Host: "db"}}'),
    ("header dict", 'headers = {{"X-Api-Key": "{v}", "Accept": "application/json"}}'),
    ("header x-auth-token", 'curl -H "X-Auth-Token: {v}" https://api.example.com/v2/servers'),
    (
        "ocp subscription key",
        'curl -H "Ocp-Apim-Subscription-Key: {v}" https://api.cognitive.example.com',
    ),
    (
        "authorization custom scheme",
        'curl -H "Authorization: SSWS {v}" https://corp.okta.com/api/v1/users',
    ),
    ("authorization token scheme", "Authorization: token {v}"),
    ("authorization no scheme", '{{"Authorization": "{v}"}}'),
    ("cookie session", "Cookie: _ga=GA1.2.1; sessionid={v}; theme=dark"),
    (
        "set-cookie",
        "Set-Cookie: laravel_session={v}; expires=Wed, 02 Dec 2026 12:00:00 GMT; path=/; httponly",
    ),
    ("curl cookie", "curl -b 'PHPSESSID={v}' https://shop.example.com/cart"),
    (
        "signed url amz",
        "https://bucket.s3.amazonaws.com/a.zip?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261130T100000Z&X-Amz-Expires=3600&X-Amz-Signature={v}",
    ),
    (
        "azure sas sig",
        "https://acct.blob.core.windows.net/c/a.txt?sv=2022-11-02&se=2026-12-01&sr=b&sp=r&sig={v}",
    ),
    ("query access_token", "GET /api/v1/me?access_token={v}&fields=id,name"),
    ("percent encoded password", "POST /login body=username%3Dbob%26password%3D{v}%26remember%3D1"),
]

WEBHOOKS = [
    (
        "discord webhook",
        lambda: (
            f"https://discord.com/api/webhooks/{rnd(18, string.digits)}/⟦{rnd(68, B62 + '_-')}⟧"
        ),
    ),
    (
        "slack webhook",
        lambda: (
            f"https://hooks.slack.com/services/⟦T{rnd(8, string.ascii_uppercase + string.digits)}/B{rnd(10, string.ascii_uppercase + string.digits)}/{rnd(24)}⟧"
        ),
    ),
    (
        "teams webhook",
        lambda: (
            f"https://corp.webhook.office.com/webhookb2/⟦{rnd(8, HEX)}-{rnd(4, HEX)}-{rnd(4, HEX)}-{rnd(4, HEX)}-{rnd(12, HEX)}@{rnd(8, HEX)}-{rnd(4, HEX)}-{rnd(4, HEX)}-{rnd(4, HEX)}-{rnd(12, HEX)}⟧/IncomingWebhook/⟦{rnd(32, HEX)}⟧/⟦{rnd(8, HEX)}-{rnd(4, HEX)}-{rnd(4, HEX)}-{rnd(4, HEX)}-{rnd(12, HEX)}⟧"
        ),
    ),
    (
        "mattermost webhook",
        lambda: (
            f"curl -X POST https://chat.example.com/hooks/⟦{rnd(26, string.ascii_lowercase + string.digits)}⟧ -d @msg.json"
        ),
    ),
    (
        "google chat webhook",
        lambda: (
            f"https://chat.googleapis.com/v1/spaces/AAAA{rnd(7)}/messages?key=⟦AIza{rnd(35, B62 + '_-')}⟧&token=⟦{rnd(43, B62 + '_-')}⟧"
        ),
    ),
]


def encoded_cases() -> list[tuple[str, str]]:
    token = crc_token("ghp_")
    pw = password()
    cases = [
        (
            "base64 docker auth",
            '{"auths": {"registry.example.com": {"auth": "⟦%s⟧"}}}'
            % base64.b64encode(f"ci:{pw}".encode()).decode(),
        ),
        (
            "base64 wrapped json",
            "payload: ⟦%s⟧"
            % base64.b64encode(f'{{"token": "{token}", "user": "ci"}}'.encode()).decode(),
        ),
        (
            "base64 env",
            "echo ⟦%s⟧ | base64 -d > .env"
            % base64.b64encode(f"DB_PASSWORD={pw}\nDEBUG=1\n".encode()).decode(),
        ),
        (
            "percent encoded url userinfo",
            "redirect="
            + urllib.parse.quote(f"https://bob:{pw}@internal.example.com/", safe="").replace(
                urllib.parse.quote(pw, safe=""), "⟦" + urllib.parse.quote(pw, safe="") + "⟧"
            ),
        ),
    ]
    pem = f"-----BEGIN RSA PRIVATE KEY-----\nMIIEow{rnd(58, B62 + '+/')}\n{rnd(64, B62 + '+/')}\n-----END RSA PRIVATE KEY-----\n"
    cases.append(
        (
            "kubeconfig client-key-data",
            "users:\n- name: admin\n  user:\n    client-certificate-data: "
            + base64.b64encode(
                b"-----BEGIN CERTIFICATE-----\nMIIB"
                + rnd(60).encode()
                + b"\n-----END CERTIFICATE-----\n"
            ).decode()
            + "\n    client-key-data: ⟦"
            + base64.b64encode(pem.encode()).decode()
            + "⟧",
        )
    )
    return cases


def secret_cases() -> list[tuple[str, str]]:
    cases: list[tuple[str, str]] = []
    for name, make in VENDORS.items():
        for category, template in R.sample(BARE_CONTEXTS, 3):
            cases.append((f"{name}, {category}", template.format(v=f"⟦{make()}⟧")))
    for category, template in VALUE_CONTEXTS:
        for names in R.sample(NAMES, 5):
            value = R.choice(
                [password(), rnd(32, HEX), rnd(40, B62 + "/+"), R.choice(list(VENDORS.values()))()]
            )
            if category.startswith("cli") and value.startswith("-"):
                value = "x" + value
            upper, snake, camel, dotted, flag = names
            text = template.format(
                NAME=upper, name=snake, camel=camel, dotted=dotted, flag=flag, v=f"⟦{value}⟧"
            )
            cases.append((f"{category} {snake}", text))
    for group in (CLI_SECRETS, FILE_SECRETS, CODE_SECRETS):
        for category, template in group:
            for _ in range(2):
                value = password() if R.random() < 0.6 else rnd(R.choice([24, 32, 40]))
                value = value.lstrip("-")
                if "%2" in template or "percent" in category:
                    value = rnd(16)
                if "://" in template and "@" in template:
                    value = urllib.parse.quote(value, safe="")
                cases.append((category, template.format(v=f"⟦{value}⟧")))
    for category, make in WEBHOOKS:
        for _ in range(2):
            cases.append((category, make()))
    cases += encoded_cases()
    return cases


def _png_b64() -> str:
    raw = b"\x89PNG\r\n\x1a\n" + bytes(R.randrange(256) for _ in range(R.randint(60, 300)))
    return base64.b64encode(raw).decode()


def _uuid() -> str:
    return (
        f"{rnd(8, HEX)}-{rnd(4, HEX)}-4{rnd(3, HEX)}-{R.choice('89ab')}{rnd(3, HEX)}-{rnd(12, HEX)}"
    )


def _integrity() -> str:
    return "sha512-" + base64.b64encode(bytes(R.randrange(256) for _ in range(64))).decode()


KEEP_MAKERS = [
    (
        "git sha",
        lambda: f"commit {rnd(40, HEX)}\nAuthor: Dev <dev@example.com>\n\n    fix token refresh",
    ),
    (
        "git log oneline",
        lambda: f"{rnd(7, HEX)} fix(auth): rotate refresh token on use (#{R.randint(100, 999)})",
    ),
    ("sha256 digest", lambda: f"sha256:{rnd(64, HEX)}"),
    (
        "docker pull digest",
        lambda: f"Digest: sha256:{rnd(64, HEX)}\nStatus: Downloaded newer image for node:20-alpine",
    ),
    ("lockfile integrity", lambda: f'"integrity": "{_integrity()}",'),
    (
        "yarn lock integrity",
        lambda: (
            f'  resolved "https://registry.yarnpkg.com/jsonwebtoken/-/jsonwebtoken-9.0.{R.randint(0, 9)}.tgz#{rnd(40, HEX)}"\n  integrity {_integrity()}'
        ),
    ),
    ("pip hash", lambda: f"requests==2.32.{R.randint(0, 3)} --hash=sha256:{rnd(64, HEX)}"),
    ("uuid request id", lambda: f"request_id={_uuid()} status=200 took={R.randint(3, 90)}ms"),
    ("idempotency key uuid", lambda: f'"idempotency_key": "{_uuid()}"'),
    ("trace id", lambda: f"traceparent: 00-{rnd(32, HEX)}-{rnd(16, HEX)}-01"),
    (
        "css classes",
        lambda: (
            f'<button class="sk-button sk-button--primary css-{rnd(6, string.ascii_lowercase + string.digits)}">Save</button>'
        ),
    ),
    (
        "tailwind classes",
        lambda: (
            '<div class="bg-blue-500 hover:bg-blue-700 text-white font-bold py-2 px-4 rounded">'
        ),
    ),
    (
        "styled components class",
        lambda: f'<div class="sc-{rnd(6, string.ascii_letters)} {rnd(6, string.ascii_letters)}">',
    ),
    (
        "test fixture name",
        lambda: R.choice(
            [
                "tests/test_auth.py::test_refresh_token_rotates PASSED",
                "def test_password_reset_sends_email(client, mailoutbox):",
                "--- PASS: TestAuthTokenExpiry (0.00s)",
                "PASS: test_login_with_api_key",
                "it('rejects an expired session token', async () => {",
            ]
        ),
    ),
    (
        "fixture constant",
        lambda: R.choice(
            [
                'FAKE_TOKEN_NAME = "test-token"',
                "fixture_path = 'fixtures/tokens/expired.json'",
                "@pytest.fixture\ndef api_key_header():",
            ]
        ),
    ),
    ("base64 image", lambda: f'<img src="data:image/png;base64,{_png_b64()}" alt="logo">'),
    (
        "minified bundle",
        lambda: (
            f"!function(e,t){{var n=e.token||t.token,r=n&&n.length;return r?{R.randint(1, 9)}:0}}(window,{{}});var a=function(e){{return e.password=e.value,e}}"
        ),
    ),
    ("pagination token", lambda: f'{{"items": [], "nextPageToken": "{rnd(40, B62 + "_-")}"}}'),
    (
        "aws next token",
        lambda: (
            f'{{"Functions": [], "NextToken": "{base64.b64encode(rnd(60).encode()).decode()}"}}'
        ),
    ),
    ("continuation token", lambda: f'"continuationToken": "{rnd(32, B62)}"'),
    ("page token query", lambda: f"GET /v1/items?page_token={rnd(24)}&limit=50"),
    (
        "type declaration ts",
        lambda: R.choice(
            [
                "  token: string;",
                "  password?: string | null;",
                "  apiKey: Readonly<string>;",
                "  private readonly token: string,",
                "export type Credentials = { password: string; token?: string };",
            ]
        ),
    ),
    (
        "type declaration py",
        lambda: R.choice(
            [
                "    api_key: Optional[str] = None",
                "    password: SecretStr",
                "    token: str | None = None",
                "def login(user: str, password: str) -> Session:",
                "    secret_key: bytes",
            ]
        ),
    ),
    (
        "type declaration rust go",
        lambda: R.choice(
            [
                "    pub token: String,",
                "    api_key: Option<String>,",
                '\tPassword string `json:"password"`',
                "    secret: &'a str,",
            ]
        ),
    ),
    (
        "env reference",
        lambda: R.choice(
            [
                "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
                "password: ${DB_PASSWORD}",
                "API_KEY=$API_KEY",
                "token: process.env.API_TOKEN",
                'secret = os.environ["AWS_SECRET_ACCESS_KEY"]',
                'password = os.getenv("DB_PASS")',
                "STRIPE_KEY: ${STRIPE_KEY:-}",
                'token: "{{ vault_token }}"',
                "const apiKey = import.meta.env.VITE_API_KEY;",
                "secret_key = ENV.fetch('SECRET_KEY_BASE')",
                "api_key = settings.OPENAI_API_KEY",
                "password: !Ref DbPassword",
            ]
        ),
    ),
    (
        "placeholder",
        lambda: R.choice(
            [
                "password: <your-password>",
                "TOKEN=changeme",
                "API_KEY=your-api-key-here",
                'password: "********"',
                "apiKey: 'xxx'",
                "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                "OPENAI_API_KEY=sk-...",
                "SECRET_KEY=replace-me",
                "export API_TOKEN=<token>",
                "password = 'REDACTED'",
            ]
        ),
    ),
    (
        "counts and flags",
        lambda: R.choice(
            [
                f"max_tokens: {R.randint(256, 8192)}",
                f"token_count={R.randint(1, 99)}",
                "password_required: true",
                "auth: false",
                f"tokens_used: {R.randint(10, 999)}",
                f"password_min_length = {R.randint(8, 16)}",
                f"refresh_token: {R.randint(1, 9)} failed",
                "token_type: bearer",
                "secret: true",
            ]
        ),
    ),
    (
        "vendor-like identifier",
        lambda: R.choice(
            [
                "from sklearn.pipeline import Pipeline  # sk-learn compatible",
                "import { ghp_config_loader } from './loaders';",
                "const hf_hub_download = require('./hf');",
                "npm_package_version=1.4.2",
                "let xoxo_gallery_items = [];",
                "class SkButtonPrimary extends Component {}",
                "AKIA_PREFIX_LENGTH = 4",
                "re_compile_cache = {}",
                "key-value store",
            ]
        ),
    ),
    (
        "public keys and publishable",
        lambda: R.choice(
            [
                f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{rnd(43, B62 + '+/')} bob@laptop",
                f"STRIPE_PUBLISHABLE_KEY=pk_live_{rnd(24)}",
                f"mapboxgl.accessToken = 'pk.eyJ1Ijoi{rnd(12)}IiwiYSI6Im{rnd(20)}In0.{rnd(22, B62 + '_-')}';",
                "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE"
                + rnd(50, B62 + "+/")
                + "\n-----END PUBLIC KEY-----",
            ]
        ),
    ),
    (
        "api object ids",
        lambda: R.choice(
            [
                f"customer cus_{rnd(14)} created",
                f"payment_intent pi_{rnd(24)} succeeded",
                f'"id": "toolu_01{rnd(22)}"',
                f'"id": "msg_01{rnd(22)}"',
                f'"id": "chatcmpl-{rnd(29)}"',
                f"call_{rnd(24)}",
                f"evt_{rnd(24)} delivered",
            ]
        ),
    ),
    (
        "semver and paths",
        lambda: R.choice(
            [
                f"node_modules/.pnpm/@babel+core@7.{R.randint(10, 25)}.0/node_modules/@babel/core/lib/index.js",
                "src/components/auth/TokenRefreshProvider.tsx",
                f"v{R.randint(1, 9)}.{R.randint(0, 20)}.{R.randint(0, 20)}-rc.{R.randint(1, 5)}+build.{rnd(7, HEX)}",
            ]
        ),
    ),
    (
        "cookie without session",
        lambda: (
            "Set-Cookie: theme=dark; Path=/; SameSite=Lax\nCookie: lang=en-US; tz=Europe%2FBerlin"
        ),
    ),
    (
        "webhook docs url",
        lambda: R.choice(
            [
                "https://docs.github.com/en/webhooks/using-webhooks/creating-webhooks",
                f"https://github.com/acme/app/settings/hooks/{R.randint(100000, 999999)}",
                "see https://api.slack.com/messaging/webhooks for setup",
            ]
        ),
    ),
    (
        "base64 plain text",
        lambda: (
            "echo "
            + base64.b64encode(
                R.choice(
                    [
                        b"Hello, world! This is only a test.",
                        b"build finished in 12 seconds without errors",
                        b'{"name": "app", "version": "1.2.3"}',
                    ]
                )
            ).decode()
            + " | base64 -d"
        ),
    ),
    (
        "percent encoded redirect",
        lambda: (
            "https://auth.example.com/authorize?redirect_uri=https%3A%2F%2Fapp.example.com%2Fcallback&response_type=code&state="
            + rnd(8)
        ),
    ),
    (
        "log with port lines",
        lambda: f"listening on 0.0.0.0:{R.randint(3000, 9000)}\nworker {R.randint(1, 8)} ready",
    ),
    (
        "prose about secrets",
        lambda: R.choice(
            [
                "Rotate the API key every 90 days and store it in the vault.",
                "The token is passed in the Authorization header as a Bearer token.",
                "Set the password in your .env file, never commit it.",
                "If the session cookie expires, the user is logged out.",
            ]
        ),
    ),
    (
        "numbers and hex",
        lambda: f"0x{rnd(40, HEX)} block {R.randint(10**6, 10**7)} gas {R.randint(21000, 90000)}",
    ),
    (
        "k8s secret reference",
        lambda: (
            "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db\n        key: password"
        ),
    ),
    ("cache key", lambda: f'cache_key = "user:{R.randint(1, 9999)}:profile"'),
    (
        "github actions",
        lambda: (
            "      - uses: actions/checkout@v4\n        with:\n          token: ${{ secrets.PAT }}"
        ),
    ),
]


def keep_cases() -> list[tuple[str, str]]:
    cases = []
    for category, make in KEEP_MAKERS:
        for _ in range(8):
            cases.append((category, make()))
    return cases


def write() -> None:
    secrets, keeps = secret_cases(), keep_cases()
    out: dict[str, list[str]] = {"generated.txt": [], "heldback.txt": []}
    header = (
        "# Generated by tests/masking/generate.py (fixed seed); every value is synthetic.\n"
        "# Format: tests/masking/README.md.\n"
    )
    for kind, cases in (("secret", secrets), ("keep", keeps)):
        seen: set[str] = set()
        for i, (name, text) in enumerate(cases):
            if text in seen:
                continue
            seen.add(text)
            target = "heldback.txt" if R.random() < 1 / 3 else "generated.txt"
            out[target].append(f"=== {kind} {name} #{i}\n{text}")
    for name, blocks in out.items():
        (HERE / name).write_text(header + "\n".join(blocks) + "\n", encoding="utf-8")
        print(
            name,
            sum(b.startswith("=== secret") for b in blocks),
            "secrets,",
            sum(b.startswith("=== keep") for b in blocks),
            "keeps",
            file=sys.stderr,
        )


if __name__ == "__main__":
    write()
