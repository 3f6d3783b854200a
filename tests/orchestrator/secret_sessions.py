"""Sessions with made-up credentials of many kinds, for the tests that nothing leaks.

Every secret is random (seeded), shaped like the real thing, and detected by
`processors.redact` in the setting it is planted in; none is a real key. `leaks(text)`
names the planted secrets found in any output, JSON-escaped or not.
"""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path
from typing import Any

_rng = random.Random(30)
B62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def _rand(n: int, alphabet: str = B62) -> str:
    classes = [c for c in (str.isupper, str.islower, str.isdigit) if any(map(c, alphabet))]
    while True:
        value = "".join(_rng.choice(alphabet) for _ in range(n))
        if (
            all(any(map(c, value)) for c in classes)
            and "xxxx" not in value.lower()
            and "123456789" not in value
        ):
            return value


def _b64url(data: str) -> str:
    return base64.urlsafe_b64encode(data.encode()).decode().rstrip("=")


_PEM_BODY = [_rand(64, B62 + "+/") for _ in range(6)]
PASSWORD = _rand(8) + "!" + _rand(5)
"""A password in a `.env` line, repeated later in a turn that says nothing about it."""

#: kind -> (the line a session holds, the secret in it).
PLANTED: dict[str, tuple[str, str]] = {
    kind: (template.format(s=secret), secret)
    for kind, template, secret in [
        ("openai_api_key", "OPENAI_API_KEY={s}", "sk-proj-" + _rand(60)),
        ("github_token", "GITHUB_TOKEN={s}", "ghp_" + _rand(36)),
        (
            "aws_access_key_id",
            "export AWS_ACCESS_KEY_ID={s}",
            "AKIA" + _rand(16, string.ascii_uppercase + "234567"),
        ),
        (
            "aws_secret_access_key",
            "aws configure set aws_secret_access_key {s}",
            _rand(40, B62 + "/+"),
        ),
        ("bearer_token", "curl -H 'Authorization: Bearer {s}' https://api.acme.dev", _rand(40)),
        (
            "jwt",
            "session cookie: {s}",
            ".".join(
                [
                    _b64url('{"alg":"HS256","typ":"JWT"}'),
                    _b64url(json.dumps({"sub": _rand(12), "exp": 1893456000})),
                    _rand(43, B62 + "-_"),
                ]
            ),
        ),
        ("url_password", "DATABASE_URL=postgres://analytics:{s}@db.internal:5432/wh", _rand(16)),
        ("password", "DB_PASSWORD={s}", PASSWORD),
        ("client_secret", '{{"client_id": "app-7", "client_secret": "{s}"}}', _rand(32)),
        ("digitalocean_token", "doctl auth init -t {s}", "dop_v1_" + _rand(64, HEX)),
        ("vault_token", "vault login {s}", "hvs." + _rand(90, B62 + "_-")),
        (
            "private_key",
            "{s}",
            "-----BEGIN RSA PRIVATE KEY-----\n"
            + "\n".join(_PEM_BODY)
            + "\n-----END RSA PRIVATE KEY-----",
        ),
    ]
}

#: What must never appear in an output: each secret, and each line of the private key.
NEEDLES: tuple[str, ...] = tuple(
    needle
    for _line, secret in PLANTED.values()
    for needle in (secret.splitlines() if "\n" in secret else [secret])
)


def leaks(text: str) -> list[str]:
    """The planted secrets (or private-key lines) found in `text`, escaped or not."""
    found = []
    for needle in NEEDLES:
        escaped = json.dumps(needle)[1:-1]
        if needle in text or escaped in text:
            found.append(needle[:12] + "...")
    return found


def _filler(i: int, n: int = 150) -> list[str]:
    return [f"tests/test_mod_{i}.py::test_case_{k} PASSED  [{k % 100:3d}%]" for k in range(n)]


def messages(turns: int = 8) -> list[dict[str, Any]]:
    """An OpenAI Chat Completions history: every kind of secret planted, one in the last turn.

    Large tool outputs hold most of them (so that a small budget masks, truncates or
    summarizes them, and the report shows their originals); a tool call's arguments hold
    one; the `.env` password is repeated bare in a later turn; and the last message, a
    user turn after the last model call, holds another.
    """
    lines = [line for line, _ in PLANTED.values()]
    last_line = lines.pop()
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful deployment agent."},
        {"role": "user", "content": "Deploy the service; the settings are in .env."},
    ]
    for i in range(turns):
        command = f"cat deploy/part_{i}.env"
        if i == 1:
            command = f"mysql -u app -p{PASSWORD} shop -e 'select 1'"
        history.append(
            {
                "role": "assistant",
                "content": f"Reading part {i}.",
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"cmd": command})},
                    }
                ],
            }
        )
        body = _filler(i)
        for k, line in enumerate(lines[i::turns]):
            body.insert(40 + 30 * k, line)
        history.append({"role": "tool", "tool_call_id": f"call_{i}", "content": "\n".join(body)})
    history.append({"role": "assistant", "content": "The .env files are read."})
    history.append({"role": "user", "content": f"The login with {PASSWORD} failed; retry."})
    history.append({"role": "assistant", "content": "Retrying."})
    history.append({"role": "user", "content": f"Use this key instead:\n{last_line}"})
    return history


def write_session(folder: Path, name: str = "secrets.json") -> Path:
    """`messages()` as a session file the command line reads."""
    path = folder / name
    path.write_text(json.dumps({"messages": messages()}), encoding="utf-8")
    return path
