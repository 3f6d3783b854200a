"""The detection rules: provider key formats, structural secrets, secrets named by context.

Each `PatternRule` is one regular expression; the secret is its `secret` group when it
has one (the rest is context that stays), else the whole match. When candidates
overlap, the higher `priority` wins: a provider's exact format beats a structural
match, which beats context, which beats a key name, which beats entropy alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from processors.redact.values import is_placeholder

__all__ = [
    "KEY_VALUE",
    "KEY_VALUE_PRIORITY",
    "PATTERN_RULES",
    "PEM_BODY_REVERSED",
    "PEM_END",
    "PLACEHOLDER",
    "SECRET_TYPES",
    "STANDALONE_AWS_SECRET",
    "PatternRule",
]

#: Every type a finding can have, which is also the word in its placeholder.
SECRET_TYPES: tuple[str, ...] = (
    "anthropic_api_key",
    "api_key",
    "aws_access_key_id",
    "aws_secret_access_key",
    "azure_sas_token",
    "azure_storage_key",
    "basic_auth",
    "bearer_token",
    "digitalocean_token",
    "docker_token",
    "github_token",
    "gitlab_token",
    "google_api_key",
    "high_entropy_secret",
    "huggingface_token",
    "jwt",
    "npm_token",
    "openai_api_key",
    "password",
    "private_key",
    "pypi_token",
    "secret",
    "sendgrid_api_key",
    "slack_token",
    "slack_webhook",
    "stripe_secret_key",
    "token",
    "twilio_auth_token",
    "url_password",
    "vault_token",
)

#: A placeholder this module wrote; never a secret itself (keeps redaction idempotent).
PLACEHOLDER = re.compile(r"\[REDACTED:[a-z_]+\]")


@dataclass(frozen=True, slots=True)
class PatternRule:
    """One regular expression for one type of secret.

    Attributes:
        type: The finding type (one of `SECRET_TYPES`).
        pattern: The expression; the `secret` group, if any, is what gets redacted.
        priority: Wins over lower priorities when candidates overlap.
        needles: Lowercase strings one of which any match contains; a text holding
            none of them is not searched (most texts hold none, and `in` is cheap).
        check: Extra test on the secret text; the candidate is dropped when it fails.
    """

    type: str
    pattern: re.Pattern[str]
    priority: int
    needles: tuple[str, ...]
    check: Callable[[str], bool] | None = None


def _real(value: str) -> bool:
    return not is_placeholder(value)


def _mixed(value: str) -> bool:
    """Letters and digits both present, and not a placeholder."""
    has_digit = any(c.isdigit() for c in value)
    return has_digit and any(c.isalpha() for c in value) and not is_placeholder(value)


def _mixed_case(value: str) -> bool:
    return any(c.isupper() for c in value) and any(c.islower() for c in value) and _real(value)


def _not_a_word(value: str) -> bool:
    """Not a placeholder, and more than letters (`verbose` ends many a colon-separated row)."""
    return not value.isalpha() and _real(value)


_START = r"(?<![A-Za-z0-9_-])"  # the token starts here
_END = r"(?![A-Za-z0-9_-])"  # and ends here
_GAP = r"(?:\s|\\r|\\n)+"  # line breaks, also as `\n` escapes inside JSON strings
_PEM_LABEL = r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
_PEM_END = r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"


def _rule(
    type_: str,
    pattern: str,
    priority: int,
    needles: str,
    check: Callable[[str], bool] | None = _real,
) -> PatternRule:
    return PatternRule(type_, re.compile(pattern), priority, tuple(needles.split()), check)


def _cli_password(command: str, flag: str, needles: str) -> tuple[PatternRule, PatternRule]:
    """A password right after `flag` in a `command` line, bare or quoted.

    The flag must come in the same shell command (no `|`, `;` or `&` before it).
    """
    lead = r"\b(?:" + command + r")(?![\w-])[^\n|;&]*?[ \t]" + flag
    return (
        _rule("password", lead + r"(?P<secret>[^\s'\"`;|&]{6,})", 80, needles),
        _rule(
            "password",
            lead + r"(?P<q>['\"])(?P<secret>(?:(?!(?P=q))[^\n]){6,})(?P=q)",
            81,
            needles,
        ),
    )


_MYSQL = r"mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlpump|mariadb(?:-dump)?"
_AWS_SET = r"\baws[ \t]+configure[ \t]+set[ \t]+(?:[\w.-]+\.)?"

PATTERN_RULES: tuple[PatternRule, ...] = (
    # Provider formats: a fixed prefix and a known alphabet and length.
    _rule(
        "anthropic_api_key",
        _START + r"sk-ant-[a-z]{2,10}\d{0,3}-[A-Za-z0-9_-]{32,}",
        100,
        "sk-ant-",
    ),
    _rule(
        "openai_api_key",
        _START + r"sk-(?!ant-)(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_-]{20,}" + _END,
        100,
        "sk-",
        _mixed,
    ),
    _rule(
        "github_token",
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{50,255})"
        r"(?![A-Za-z0-9_])",
        100,
        "ghp_ gho_ ghu_ ghs_ ghr_ github_pat_",
    ),
    _rule("gitlab_token", _START + r"glpat-[A-Za-z0-9_-]{20,}" + _END, 100, "glpat-"),
    _rule("slack_token", r"(?<![A-Za-z0-9])xox[abposre]-\d{6,}-[A-Za-z0-9-]{10,}", 100, "xox"),
    _rule(
        "slack_webhook",
        r"hooks\.slack\.com/services/(?P<secret>T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{20,})",
        100,
        "hooks.slack.com",
    ),
    _rule(
        "stripe_secret_key",
        r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}(?![A-Za-z0-9])",
        100,
        "sk_ rk_",
    ),
    _rule("google_api_key", _START + r"AIza[0-9A-Za-z_-]{35}" + _END, 100, "aiza"),
    _rule(
        "aws_access_key_id",
        r"(?<![A-Za-z0-9+/])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9+/])",
        100,
        "akia asia",
    ),
    _rule("npm_token", r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", 100, "npm_"),
    _rule("pypi_token", _START + r"pypi-AgE[A-Za-z0-9_-]{50,}", 100, "pypi-age"),
    _rule(
        "huggingface_token",
        r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{34,}(?![A-Za-z0-9])",
        100,
        "hf_",
        _mixed_case,
    ),
    _rule(
        "sendgrid_api_key", _START + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + _END, 100, "sg."
    ),
    _rule("digitalocean_token", _START + r"do[opr]_v1_[a-f0-9]{64}" + _END, 100, "_v1_"),
    _rule("docker_token", _START + r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}" + _END, 100, "dckr_"),
    # Vault service, batch and recovery tokens; `hvs.shape` in numpy code has no digits.
    _rule(
        "vault_token", _START + r"hv[sbr]\.[A-Za-z0-9_-]{24,}" + _END, 100, "hvs. hvb. hvr.", _mixed
    ),
    # Structure: private key blocks (whole, or cut off before their END line), JWTs.
    _rule("private_key", _PEM_LABEL + r"[\s\S]{0,20000}?" + _PEM_END, 95, "private", None),
    _rule(
        "private_key", _PEM_LABEL + r"(?:" + _GAP + r"[A-Za-z0-9+/=]{16,})+", 94, "private", None
    ),
    _rule(
        "jwt",
        _START + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}" + _END,
        90,
        "eyj",
    ),
    # Context: where the value sits says what it is.
    _rule(
        "aws_secret_access_key",
        r"(?i:aws_?secret_?(?:access_?)?key|secret_?access_?key)[\"']?\s*[:=]\s*[\"']?"
        r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        85,
        "secret",
    ),
    _rule(
        "aws_secret_access_key",
        _AWS_SET
        + r"aws_secret_access_key[ \t]+[\"']?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        86,
        "configure",
    ),
    _rule(
        "token",
        _AWS_SET + r"aws_session_token[ \t]+[\"']?(?P<secret>[A-Za-z0-9/+]{16,}={0,2})",
        86,
        "configure",
    ),
    # A Twilio auth token given right after its account SID: `-u AC...:<token>`,
    # `Client("AC...", "<token>")`, `twilio ... AC... <token>`.
    _rule(
        "twilio_auth_token",
        r"(?<![A-Za-z0-9])AC[0-9a-f]{32}[\"']?(?:[ \t]*[,:][ \t]*|[ \t]+)[\"']?"
        r"(?P<secret>[0-9a-f]{32})(?![A-Za-z0-9])",
        85,
        "ac",
    ),
    _rule(
        "azure_storage_key",
        r"(?i:AccountKey)=(?P<secret>[A-Za-z0-9+/]{40,}={0,2})",
        85,
        "accountkey",
    ),
    _rule(
        "azure_sas_token", r"[?&]sig=(?P<secret>[A-Za-z0-9%+/]{20,}(?:=|%3[Dd]){0,2})", 85, "sig="
    ),
    _rule(
        "bearer_token",
        r"(?i:authorization)[\"']?\s*[:=]\s*[\"']?(?i:bearer|token)[ \t]+"
        r"(?P<secret>[A-Za-z0-9._~+/-]{8,}=*)",
        80,
        "bearer token",
    ),
    _rule(
        "basic_auth",
        r"(?i:authorization)[\"']?\s*[:=]\s*[\"']?(?i:basic)[ \t]+"
        r"(?P<secret>[A-Za-z0-9+/]{8,}={0,2})",
        80,
        "basic",
    ),
    _rule(
        "bearer_token",
        r"\b[Bb]earer[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{20,}=*)",
        75,
        "bearer token",
        _mixed,
    ),
    _rule(
        "url_password",
        # The user may be empty: `redis://:password@host`.
        r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@?#\"'<>]{0,128}:"
        r"(?P<secret>[^\s@/?#\"'<>]{6,256})@(?=[A-Za-z0-9\[])",
        80,
        "://",
    ),
    _rule(
        "password",
        r"(?:^|(?<=\s))(?:-u|--user)[ \t]+[\"']?[^\s:\"']+:(?!//)(?P<secret>[^\s\"']{6,})",
        80,
        "-u --user",
    ),
    # Passwords glued to a client's short flag: `mysql -pS3cret`, `redis-cli -a S3cret`.
    *_cli_password(_MYSQL, "-p", "mysql mariadb"),
    *_cli_password("redis-cli", r"-a[ \t]+", "redis-cli"),
    # A `.pgpass` line: host:port:database:user:password. The port has 4-5 digits or is
    # `*` (not an `/etc/passwd` row, not `grep -n` output), the database is not a log
    # level (`app.log:1200:ERROR:...`), and the password is not a plain word.
    _rule(
        "password",
        r"(?m)^[ \t]*(?:\*|\[[0-9A-Fa-f:.]+\]|\d{1,3}(?:\.\d{1,3}){3}"
        r"|[A-Za-z0-9-]*[A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*)"
        r":(?:\d{4,5}|\*):(?!(?i:debug|info|warn|warning|error|critical|fatal|trace):)"
        r"[\w.*-]+:[\w.@*-]+:(?P<secret>[^\s:]{6,})[ \t]*$",
        80,
        ":",
        _not_a_word,
    ),
)

#: The last line of a private key block, for blocks whose start was cut off.
PEM_END = re.compile(_PEM_END)
#: Base64 lines read backwards from a block's END line (with `\n` escapes blanked).
PEM_BODY_REVERSED = re.compile(r"(?:\s+[A-Za-z0-9+/=]{16,})+")

#: A 40-character AWS secret access key standing alone (checked only near a key id).
STANDALONE_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")

#: Priority of secrets found by key name or by entropy in `key = value` pairs.
KEY_VALUE_PRIORITY = 70

#: `key = value` in its common spellings: `.env` and shell, YAML, JSON, code, HTTP
#: headers, query strings and command-line flags (`--password hunter2`). The value is
#: quoted (`qv`) or bare (`uv`); a bare value must end where a value ends.
KEY_VALUE = re.compile(
    r"(?:(?<![\w.-])(?P<kq>[\"']?)(?P<key>[A-Za-z_][\w.-]{0,80})(?P=kq)"
    r"(?P<sep>[ \t]*(?::=|=>|=(?!=)|:(?!:))[ \t]*)"
    r"|(?:^|(?<=\s))--?(?P<flag>[A-Za-z][\w-]{1,40})(?:=|[ \t]+))"
    r"(?:(?P<vq>[\"'`])(?P<qv>[^\"'`\s\\]{1,400})(?P=vq)"
    r"|(?P<uv>[^\s\"'`,;&<>(){}\[\]\\=]{1,400}={0,3})(?=[\s,;&)}\]\\\"'`]|$))",
    re.MULTILINE,
)
