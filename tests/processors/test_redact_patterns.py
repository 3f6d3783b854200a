"""Credential formats found on realistic text, and their look-alikes left alone.

Every secret here is synthetic (random, generated for the test); none is a real key.
"""

from __future__ import annotations

import base64
import random
import string

import pytest

from processors.redact import find_secrets, redact_text

_rng = random.Random(20260101)
B62 = string.ascii_letters + string.digits


def _rand(n: int, alphabet: str = B62) -> str:
    """A random string with every character class of its alphabet (no `xxxx`, no runs)."""
    classes = [c for c in (str.isupper, str.islower, str.isdigit) if any(map(c, alphabet))]
    while True:
        value = "".join(_rng.choice(alphabet) for _ in range(n))
        if (
            all(any(map(c, value)) for c in classes)
            and "xxxx" not in value.lower()
            and "123456789" not in value
        ):
            return value


def _hex(n: int) -> str:
    return _rand(n, "0123456789abcdef")


PASSWORD = _rand(6) + "!" + _rand(5)  # a realistic password: letters, digits, a symbol
DO_TOKEN = "dop_v1_" + _hex(64)
VAULT = "hvs." + _rand(91, B62 + "_-")
DOCKER = "dckr_pat_" + _rand(27, B62 + "_-")
AWS_SECRET = _rand(40, B62 + "/+")
TWILIO_SID = "AC" + _hex(32)
TWILIO_TOKEN = _hex(32)

# (realistic text with {s} where the secret goes, the secret, the placeholder's type)
POSITIVES = [
    ("REDIS_URL=redis://:{s}@cache.internal:6379/0\n", PASSWORD, "url_password"),
    ("$ redis-cli -u rediss://:{s}@redis.acme.dev:6380 ping\nPONG", PASSWORD, "url_password"),
    ("celery -A app worker --broker 'redis://:{s}@10.0.3.7:6379/2'", PASSWORD, "url_password"),
    ("export DIGITALOCEAN_ACCESS_TOKEN={s}\n", DO_TOKEN, "digitalocean_token"),
    (
        "$ doctl auth init --context prod -t {s}\nValidating token... OK",
        DO_TOKEN,
        "digitalocean_token",
    ),
    (
        "droplets are created by deploy.sh, which calls the API with {s} today",
        DO_TOKEN,
        "digitalocean_token",
    ),
    ("$ vault login {s}\nSuccess! You are now authenticated.", VAULT, "vault_token"),
    ("curl -H 'X-Vault-Token: {s}' https://vault.acme.dev/v1/kv/data/app", VAULT, "vault_token"),
    (
        "token_accessor  Yq2m...\ntoken           {s}\ntoken_policies  [default]",
        VAULT,
        "vault_token",
    ),
    (
        "$ mysql -h db.internal -u app -p{s} shop\nWelcome to the MySQL monitor.",
        PASSWORD,
        "password",
    ),
    ("mysqldump -uroot -p'{s}' --all-databases > /backup/all.sql", PASSWORD, "password"),
    ('docker exec db mariadb -u root -p"{s}" -e "SHOW DATABASES"', PASSWORD, "password"),
    ("mysql --user=app --password={s} --host=db.internal shop", PASSWORD, "password"),
    ("mysqladmin -u root --password {s} status", PASSWORD, "password"),
    ("$ cat ~/.pgpass\ndb.internal:5432:warehouse:analytics:{s}\n", PASSWORD, "password"),
    ("*:6432:*:pgbouncer:{s}", PASSWORD, "password"),
    ("  10.0.0.12:5432:orders:orders_rw:{s}  \n", PASSWORD, "password"),
    ("echo {s} | docker login -u acme --password-stdin", DOCKER, "docker_token"),
    ('{{"auths": {{"docker.io": {{"identitytoken": "{s}"}}}}}}', DOCKER, "docker_token"),
    (
        "aws configure set aws_secret_access_key {s} --profile prod",
        AWS_SECRET,
        "aws_secret_access_key",
    ),
    (
        "aws configure set profile.ci.aws_secret_access_key '{s}'",
        AWS_SECRET,
        "aws_secret_access_key",
    ),
    ("$ redis-cli -h cache.internal -p 6379 -a {s} INFO keyspace", PASSWORD, "password"),
    ("redis-cli -a '{s}' --no-auth-warning DBSIZE", PASSWORD, "password"),
    ("redis-cli --pass {s} ping", PASSWORD, "password"),
    (
        f"curl -X POST https://api.twilio.com/2010-04-01/Accounts/{TWILIO_SID}/Messages.json "
        f"-u {TWILIO_SID}:{{s}} --data-urlencode 'Body=hi'",
        TWILIO_TOKEN,
        "twilio_auth_token",
    ),
    (f"client = Client('{TWILIO_SID}', '{{s}}')", TWILIO_TOKEN, "twilio_auth_token"),
    (f"twilio-notify --account {TWILIO_SID} {{s}} +15550100", TWILIO_TOKEN, "twilio_auth_token"),
]

_SHA1 = [_hex(40) for _ in range(4)]
_PNG = base64.b64encode(bytes(_rng.randrange(256) for _ in range(300))).decode()

# Texts that look like the new formats (or like the classic false positives) and hold
# no secret: each must come back unchanged.
LOOK_ALIKES = [
    # URLs with an empty or stand-in password, or none.
    "REDIS_URL=redis://cache.internal:6379/0",
    "redis://:@localhost:6379 (no password set)",
    "redis://:password@localhost:6379/0",
    "redis://:${REDIS_PASSWORD}@cache:6379",
    "http://[::1]:8080/healthz and http://:8080/",
    # DigitalOcean-shaped but wrong length, alphabet or a stand-in.
    "dop_v1_" + _hex(63),
    "dop_v1_<your-token-here>",
    "DIGITALOCEAN_TOKEN=dop_v1_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    # `hvs` as a variable name.
    "hvs = np.stack(frames); print(hvs.shape, hvs.mean_velocity_over_frames())",
    "vault login -method=userpass username=ana  # prompts for the password",
    # mysql without a password on the command line.
    "$ mysql -u root -p shop\nEnter password:",
    "mysql -P 3306 -h db.internal -u app shop",
    "mysql -u root -p$MYSQL_ROOT_PASSWORD",
    'mysqldump -u app -p"${DB_PASS}" shop',
    "mysql -uroot -pxxxxxxxx shop",
    "pip install mysql-connector-python -p3.11",
    "mysql --port=3306 --protocol=tcp -e 'select 1'",
    # Colon-separated lines that are not .pgpass lines.
    "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin",
    "app.py:42:def connect(host, port):",
    "settings.py:1200:DEBUG:True:verbose",
    "app.log:1200:ERROR:worker:timeout42\nserver.log:1042:WARNING:urllib3:Retrying",
    "10:00:mon:fri:closed",
    "2001:db8:85a3:0:0:8a2e:370:7334",
    "localhost:5432:*:postgres:*",
    "db:5432:app:app:${PGPASSWORD}",
    # Docker stand-ins.
    "docker login -u acme -p dckr_pat_xxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "Create a token (it starts with dckr_pat_) under Account settings.",
    # aws configure without a secret.
    "aws configure set region eu-west-1 --profile prod",
    "aws configure get aws_secret_access_key --profile prod",
    "aws configure set aws_secret_access_key $AWS_SECRET_ACCESS_KEY",
    # redis-cli without a password.
    "redis-cli -h cache.internal -n 2 keys 'session:*'",
    "redis-cli -a $REDIS_PASSWORD ping",
    "redis-cli --askpass -h cache ping",
    # Twilio SIDs are ids, not secrets; a SID next to another SID is not a token.
    f"message {'SM' + _hex(32)} sent from account {TWILIO_SID}",
    f"{TWILIO_SID} {'PN' + _hex(32)}",
    f"client = Client('{TWILIO_SID}', 'your_auth_token')",
    # The classic look-alikes: git SHAs, UUIDs, base64 images, lockfile hashes, digests.
    "\n".join(f"{sha} fix flaky test in {i}" for i, sha in enumerate(_SHA1)),
    f"Merge: {_SHA1[0][:7]} {_SHA1[1][:7]}\ncommit {_SHA1[2]}",
    "request 6f1c2a4e-8b3d-4c1a-9e2f-7a5b3c1d0e9f and 0b7e3f1a-2c4d-4e6f-8a9b-1c2d3e4f5a6b",
    f'<img src="data:image/png;base64,{_PNG}">',
    f'"integrity": "sha512-{base64.b64encode(bytes(range(64))).decode()}"',
    f'{{file = "requests-2.32.3-py3-none-any.whl", hash = "sha256:{_hex(64)}"}}',
    f'hash = "sha256:{_hex(64)}"\nsize = 64922',
    f"2024-05-02 10:14:07 INFO upload done sha256={_hex(64)} md5={_hex(32)} etag={_hex(32)}",
    f"docker pull ghcr.io/acme/api@sha256:{_hex(64)}",
]


class TestNewFormats:
    @pytest.mark.parametrize(
        ("template", "secret", "kind"),
        POSITIVES,
        ids=[f"{p[2]}-{i}" for i, p in enumerate(POSITIVES)],
    )
    def test_found_and_replaced_whole(self, template: str, secret: str, kind: str) -> None:
        """The secret, and only the secret, becomes its typed placeholder."""
        text = template.format(s=secret)
        redacted, findings = redact_text(text)
        assert redacted == text.replace(secret, f"[REDACTED:{kind}]")
        assert {f.type for f in findings} == {kind}

    def test_short_passwords_after_short_flags_are_left(self) -> None:
        """Five characters after `-p` or `-a` are too short to tell from a value or a name."""
        assert find_secrets("mysql -pab12c shop") == ()
        assert find_secrets("redis-cli -a ab12c ping") == ()

    def test_flag_in_a_later_command_is_not_the_clients(self) -> None:
        """A `-p` after a pipe belongs to another program, not to mysql."""
        assert find_secrets("mysql -e 'show tables' shop | column -pwide12") == ()


class TestLookAlikes:
    @pytest.mark.parametrize(
        "text", LOOK_ALIKES, ids=[f"lookalike-{i}" for i in range(len(LOOK_ALIKES))]
    )
    def test_left_alone(self, text: str) -> None:
        """A look-alike of a credential comes back unchanged, with no finding."""
        assert redact_text(text) == (text, ())

    def test_all_look_alikes_together(self) -> None:
        """Every look-alike in one text: precision holds across neighbours too."""
        text = "\n".join(LOOK_ALIKES)
        assert find_secrets(text) == ()
