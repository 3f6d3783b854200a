"""Judging candidate values and key names: placeholders, randomness, secret-sounding keys.

Pure functions over strings, shared by the pattern rules and the key/value rules.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from urllib.parse import unquote

__all__ = [
    "is_placeholder",
    "key_kind",
    "key_words",
    "looks_random",
    "names_non_secret",
    "shannon_entropy",
]

# Words that mark a value as an example or a stand-in, never a live credential.
_PLACEHOLDER_WORDS = (
    "xxxx",
    "****",
    "...",
    "…",
    "<",
    ">",
    "{{",
    "${",
    "$(",
    "%(",
    "your",
    "example",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "replace",
    "redacted",
    "dummy",
    "fake",
    "sample",
    "insert",
    "123456789",
    "abcdefgh",
    "0000000000",
)
# Whole values that are words about a secret rather than a secret.
_STAND_IN_VALUES = frozenset(
    {"password", "passwd", "pass", "secret", "token", "apikey", "api_key", "key", "none", "null"}
)
# Values made only of these words (and punctuation, no digits) are stand-ins:
# `test-secret-key`, `pass:word`, `root`, `django_tests_secret_key`.
_STAND_IN_WORDS = frozenset(
    "password passwd pass word secret secrets token key keys api apikey test tests testing "
    "dev development local localhost insecure demo default my the a user username admin "
    "root guest django flask app value string foo bar baz qux".split()
)
# Words that, as the last word of a key name, say the value is not the secret itself.
_NON_SECRET_TAILS = frozenset(
    "id ids name names type types file path dir url uri endpoint host length len count "
    "size ttl expiry expires expiration hash digest header prefix env var field policy "
    "ref arn version format kind mode enabled required min max limit timeout label hint "
    "prompt pattern regex template description location rotation strength source "
    "provider manager store usage algorithm alg scope scopes kid".split()
)
# Words anywhere in a key name that say the value is not a credential.
_NON_SECRET_WORDS = frozenset(
    "public pub publishable tokens tokenizer tokenize cache sort primary foreign partition "
    "idempotency lookup index row column composite unique keyboard keys keyword hotkey "
    "shortcut next page pagination continuation cursor sync csrf xsrf eos bos pad unk "
    "special".split()
)
# Words anywhere in a key name that say the value is a digest or an identifier.
_DIGEST_WORDS = frozenset(
    "integrity hash checksum digest sha sha1 sha224 sha256 sha384 sha512 md5 blake2b h1 "
    "etag commit rev revision oid tree parent uuid guid nonce signature sig resolved "
    "image img data src href url uri version fingerprint thumbprint content body payload "
    "blob base64 encoded raw".split()
)
_STRONG_WORDS = frozenset(
    "password passwd passphrase pwd secret secrets token credential credentials apikey "
    "privatekey".split()
)
_KEY_MODIFIERS = frozenset(
    "api access private secret signing encryption master session client license app auth "
    "account subscription service webhook admin deploy".split()
)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_HEX = re.compile(r"[0-9a-fA-F]+")
_LETTERS = re.compile(r"[a-z]+")
_MARKUP = re.compile(r"[!&*@%][A-Za-z_.()]*")
_RANDOM_CHARS = re.compile(r"[A-Za-z0-9+/=_-]+")
_WORD = re.compile(r"[A-Z]?[a-z]{5,}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")


def key_words(key: str) -> tuple[str, ...]:
    """The lowercase words of a key name: `AWS_SECRET_KEY`, `apiKey` -> `aws secret key`."""
    return tuple(w.lower() for w in _CAMEL.findall(key))


def key_kind(key: str) -> str | None:
    """What a key name says its value is: `password`, `token`, `api_key`, `secret`, `key`.

    `key` means a bare or weak `...key` name (`KEY`, `cache`-free `myKey`) whose value
    is only a secret if it also looks random; `None` means the name does not suggest a
    credential (or says the value is an id, a count, a path or a public key).
    """
    words = key_words(key)
    if not words or words[-1] in _NON_SECRET_TAILS:
        return None
    if any(w in _NON_SECRET_WORDS for w in words):
        return None
    joined = "".join(words)
    if any(w in {"password", "passwd", "passphrase", "pwd", "pass"} for w in words):
        return "password"
    if "password" in joined or "passwd" in joined:
        return "password"
    if "token" in words or joined.endswith("token"):
        return "token"
    if "apikey" in joined:
        return "api_key"
    if any(w in _STRONG_WORDS for w in words):
        return "secret"
    if words[-1] == "key":
        modified = any(w in _KEY_MODIFIERS for w in words[:-1])
        return "secret" if modified else "key"
    return None


def names_non_secret(key: str) -> bool:
    """Whether a key name says its value is a digest, an id, data or something public."""
    words = key_words(key)
    return bool(words) and (
        words[-1] in _NON_SECRET_TAILS
        or any(w in _DIGEST_WORDS or w in _NON_SECRET_WORDS for w in words)
    )


def is_placeholder(value: str) -> bool:
    """Whether a value is an example or a stand-in (`YOUR_API_KEY`, `sk-...`, `xxxx`)."""
    lowered = value.lower()
    if lowered.strip("\"'`") in _STAND_IN_VALUES:
        return True
    if any(word in lowered for word in _PLACEHOLDER_WORDS):
        return True
    if value.startswith("$") or _MARKUP.fullmatch(value):
        return True  # a variable; a YAML tag / anchor / alias, a decorator, a template
    distinct = len(set(value))
    if distinct < 4 or (len(value) >= 16 and distinct < len(value) / 5):
        return True
    return _is_stand_in(value)


def _is_stand_in(value: str) -> bool:
    """Whether a value (percent-decoded) is only stand-in words and punctuation."""
    decoded = unquote(value)
    if any(c.isdigit() for c in decoded):
        return False
    words = _LETTERS.findall(decoded.lower())
    return bool(words) and all(w in _STAND_IN_WORDS for w in words)


def shannon_entropy(value: str) -> float:
    """Bits per character of `value` by its own character frequencies (0 for '')."""
    if not value:
        return 0.0
    counts = Counter(value)
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def _class(char: str) -> int:
    if char.islower():
        return 0
    if char.isupper():
        return 1
    return 2 if char.isdigit() else 3


def looks_random(value: str, *, threshold: float, min_length: int) -> bool:
    """Whether `value` looks like generated key material rather than a word or a digest.

    Random material is base64 / base62-like, mixes upper case, lower case and digits,
    has high per-character entropy and is not made of words (`RemovedInDjango40Warning`
    is). Hex strings and UUIDs are left out: they are digests and ids far more often
    than secrets, and a secret-sounding key name catches the hex secrets.
    """
    if len(value) < min_length or not _RANDOM_CHARS.fullmatch(value) or _HEX.fullmatch(value):
        return False
    if not (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
    ):
        return False
    in_words = sum(len(m) for m in _WORD.findall(value))
    if in_words >= len(value) / 2:
        return False
    switches = sum(_class(a) != _class(b) for a, b in itertools.pairwise(value))
    return switches / (len(value) - 1) >= 0.3 and shannon_entropy(value) >= threshold
