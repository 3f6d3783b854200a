"""Finding secrets in text and replacing them by typed placeholders.

```python
clean, findings = redact_text("export OPENAI_API_KEY=sk-proj-...")
# findings: (SecretFinding(type='openai_api_key', span=(22, 73)),)
```
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass

from processors.redact.rules import (
    KEY_VALUE,
    KEY_VALUE_PRIORITY,
    PATTERN_RULES,
    PEM_BODY_REVERSED,
    PEM_END,
    PLACEHOLDER,
    SECRET_TYPES,
    STANDALONE_AWS_SECRET,
)
from processors.redact.values import is_placeholder, key_kind, looks_random, names_non_secret

__all__ = [
    "DEFAULT_ENTROPY_THRESHOLD",
    "DEFAULT_MIN_LENGTH",
    "SecretFinding",
    "find_secrets",
    "redact_text",
]

#: Bits per character a value needs to count as random (base62 of 20 chars is ~4.1).
DEFAULT_ENTROPY_THRESHOLD = 3.5
#: Characters a value needs before entropy alone can flag it.
DEFAULT_MIN_LENGTH = 20

# Values that are types or keywords in code and schemas, not passwords.
_TYPE_WORDS = frozenset(
    "str string int integer bytes bool boolean float number secretstr text varchar char "
    "optional required any object true false yes no on off none null nil undefined".split()
)
# `settings.API_KEY`, `config.secret_key`, `self.token2`: names in code, not values.
_DOTTED = re.compile(r"[A-Za-z_]+\d*(?:\.[A-Za-z_]+\d*)+")
_WORDLIKE = re.compile(r"[A-Za-z_-]+")
_NUMBER = re.compile(r"[\d.,:_-]+")
_LINE_LEAD = re.compile(r"[ \t]*(?:export[ \t]+|set[ \t]+|-[ \t]+)?")
_AWS_WINDOW = 400
# Every rule needs at least this many characters, so repeats of a secret are worth
# redacting too without blanking common short strings.
_MIN_ECHO = 6
_PEM_WINDOW = 20_000
_MAX_ROUNDS = 4
_ESCAPED_BREAK = re.compile(r"\\[nrt]")


def _break_for(match: re.Match[str]) -> str:
    return "  " if match.group(0) == "\\t" else " \n"


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """One secret found in a text.

    Attributes:
        type: What it is, one of `SECRET_TYPES` (`aws_access_key_id`, `jwt`, ...).
        span: Its `(start, end)` offsets in the text searched.
    """

    type: str
    span: tuple[int, int]

    @property
    def placeholder(self) -> str:
        """The text that replaces it: `[REDACTED:<type>]`."""
        return f"[REDACTED:{self.type}]"


@dataclass(frozen=True, slots=True)
class _Candidate:
    priority: int
    start: int
    end: int
    type: str


def find_secrets(
    text: str,
    *,
    types: Collection[str] | None = None,
    entropy_threshold: float = DEFAULT_ENTROPY_THRESHOLD,
    min_length: int = DEFAULT_MIN_LENGTH,
    known: Mapping[str, str] | None = None,
) -> tuple[SecretFinding, ...]:
    """Find the secrets in `text`, in order, none overlapping.

    A secret found once is also found wherever it is repeated in `text`.

    Args:
        text: Any text.
        types: Report only these types (all of `SECRET_TYPES` when `None`).
        entropy_threshold: Bits per character for a value found by entropy alone.
        min_length: Characters a value needs before entropy alone can flag it.
        known: Secrets found elsewhere (secret -> type), to find here too wherever
            they appear, e.g. a password from a config file repeated in a log.

    Returns:
        The findings, sorted by position. Deterministic: the same text and options
        give the same findings.
    """
    wanted = frozenset(SECRET_TYPES if types is None else types)
    sources = {k: v for k, v in (known or {}).items() if v in wanted}
    found = _scan(text, wanted, entropy_threshold, min_length, sources)
    # Hiding a secret can expose a neighbour that its context hid (a key glued to the
    # end of another); scanning the redacted text again until nothing new turns up
    # makes redaction idempotent.
    for _ in range(_MAX_ROUNDS):
        if not found:
            break
        redacted = _apply(text, found)
        sources.update((text[f.span[0] : f.span[1]], f.type) for f in found)
        extra = _scan(redacted, wanted, entropy_threshold, min_length, sources)
        if not extra:
            break
        found = sorted([*found, *_to_original(extra, found)], key=lambda f: f.span)
    return tuple(found)


def _scan(
    text: str,
    wanted: frozenset[str],
    threshold: float,
    min_length: int,
    known: Mapping[str, str],
) -> list[SecretFinding]:
    """One pass over `text`: every rule, overlaps resolved by priority, then repeats."""
    # Rules read `\n` / `\t` escapes (JSON strings, Python reprs) as the breaks they stand
    # for, so `"...\nredis-cli -a pw"` starts a command; the swap keeps every offset.
    view = _ESCAPED_BREAK.sub(_break_for, text) if "\\" in text else text
    candidates = [
        *_pattern_candidates(view),
        *_key_value_candidates(view, threshold, min_length),
    ]
    candidates.extend(_aws_secret_candidates(view, candidates, threshold))
    candidates.extend(_pem_tail_candidates(view))
    taken = [(m.start(), m.end()) for m in PLACEHOLDER.finditer(text)]
    chosen: list[_Candidate] = []
    for cand in sorted(candidates, key=lambda c: (-c.priority, c.start - c.end, c.start)):
        if cand.type in wanted and not _overlaps(cand.start, cand.end, taken):
            taken.append((cand.start, cand.end))
            chosen.append(cand)
    sources = dict(known)
    sources.update((text[c.start : c.end], c.type) for c in chosen)
    chosen.extend(_echoes(text, sources, taken))
    chosen.sort(key=lambda c: c.start)
    return [SecretFinding(c.type, (c.start, c.end)) for c in chosen]


def _apply(text: str, findings: Sequence[SecretFinding]) -> str:
    """`text` with each finding (sorted, not overlapping) replaced by its placeholder."""
    pieces: list[str] = []
    cursor = 0
    for finding in findings:
        start, end = finding.span
        pieces.append(text[cursor:start])
        pieces.append(finding.placeholder)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def _to_original(
    extra: Sequence[SecretFinding], found: Sequence[SecretFinding]
) -> Iterator[SecretFinding]:
    """Map findings in the redacted text back to the original text's offsets.

    They never overlap a placeholder (placeholders are skipped), so each lies in a
    stretch of original text shifted by the placeholders before it.
    """
    shifts: list[tuple[int, int]] = []  # (end of a placeholder in redacted text, shift)
    shift = 0
    for finding in found:
        start, end = finding.span
        shift += len(finding.placeholder) - (end - start)
        shifts.append((end + shift, shift))
    for finding in extra:
        start, end = finding.span
        before = bisect.bisect_right(shifts, (start, float("inf"))) - 1
        delta = shifts[before][1] if before >= 0 else 0
        yield SecretFinding(finding.type, (start - delta, end - delta))


def redact_text(
    text: str,
    *,
    types: Collection[str] | None = None,
    entropy_threshold: float = DEFAULT_ENTROPY_THRESHOLD,
    min_length: int = DEFAULT_MIN_LENGTH,
    known: Mapping[str, str] | None = None,
) -> tuple[str, tuple[SecretFinding, ...]]:
    """Replace each secret in `text` by `[REDACTED:<type>]`, keeping the text around it.

    Args:
        text: Any text.
        types: Redact only these types (all of `SECRET_TYPES` when `None`).
        entropy_threshold: Bits per character for a value found by entropy alone.
        min_length: Characters a value needs before entropy alone can flag it.
        known: Secrets found elsewhere (secret -> type), to redact here too.

    Returns:
        The redacted text and the findings, whose spans refer to the original `text`.
        Text without secrets comes back unchanged; redacting twice changes nothing more.
    """
    findings = find_secrets(
        text,
        types=types,
        entropy_threshold=entropy_threshold,
        min_length=min_length,
        known=known,
    )
    return _apply(text, findings), findings


def _echoes(
    text: str, sources: Mapping[str, str], taken: list[tuple[int, int]]
) -> Iterator[_Candidate]:
    """Every other place where one of `sources` (secret -> type) appears verbatim.

    A password found in `password=...` often comes back in a log line or a message;
    left there it would leak what the first placeholder hid. Longest secrets first.
    """
    for secret in sorted(sources, key=lambda s: (-len(s), s)):
        if len(secret) < _MIN_ECHO:
            continue
        index = text.find(secret)
        while index != -1:
            end = index + len(secret)
            if not _overlaps(index, end, taken):
                taken.append((index, end))
                yield _Candidate(0, index, end, sources[secret])
            index = text.find(secret, index + 1)


def _overlaps(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    return any(start < b and a < end for a, b in spans)


def _pattern_candidates(text: str) -> Iterator[_Candidate]:
    lowered = text.lower()
    for rule in PATTERN_RULES:
        if not any(needle in lowered for needle in rule.needles):
            continue
        for match in rule.pattern.finditer(text):
            group = "secret" if "secret" in rule.pattern.groupindex else 0
            start, end = match.span(group)
            if start == end or (rule.check is not None and not rule.check(text[start:end])):
                continue
            yield _Candidate(rule.priority, start, end, rule.type)


def _key_value_candidates(text: str, threshold: float, min_length: int) -> Iterator[_Candidate]:
    for match in _key_values(text):
        key = match.group("key") or match.group("flag")
        quoted = match.group("qv") is not None
        group = "qv" if quoted else "uv"
        value = match.group(group)
        kind = key_kind(key)
        if kind in {"password", "token", "api_key", "secret"}:
            literal = quoted or _bare_word_allowed(text, match)
            if _named_value_is_secret(value, kind, literal=literal):
                yield _Candidate(KEY_VALUE_PRIORITY, *match.span(group), kind or "secret")
            continue
        if len(key) < 3 or names_non_secret(key) or is_placeholder(value):
            continue
        if value.startswith("/") or "//" in value:  # a path or a URL
            continue
        if looks_random(value, threshold=threshold, min_length=min_length):
            yield _Candidate(KEY_VALUE_PRIORITY - 10, *match.span(group), "high_entropy_secret")


def _key_values(text: str) -> Iterator[re.Match[str]]:
    """Every `key = value` match, including those whose key is a previous value.

    `TOKEN: str = '...'` holds two pairs that share `str`; searching again from each
    value's start finds both.
    """
    position = 0
    while (match := KEY_VALUE.search(text, position)) is not None:
        yield match
        value_start = match.start("qv" if match.group("qv") is not None else "uv")
        position = max(value_start, match.start() + 1)


def _bare_word_allowed(text: str, match: re.Match[str]) -> bool:
    """Whether a bare word after this key is a value rather than a variable name.

    It is in a `.env` line (`KEY=value`, no spaces), a YAML line (`key: value`) or
    after a command-line flag; in code (`password = password_input`) it is a name.
    """
    if match.group("flag") is not None:
        return True
    sep = match.group("sep")
    if sep != "=" and sep.strip() != ":":
        return False
    line_start = text.rfind("\n", 0, match.start()) + 1
    return _LINE_LEAD.fullmatch(text, line_start, match.start()) is not None


def _named_value_is_secret(value: str, kind: str, *, literal: bool) -> bool:
    """Whether the value of a secret-sounding key is a credential, not code or a stand-in.

    `literal` says a bare word would be a value here (quoted, or in a `.env` / YAML
    line); elsewhere bare words are variable names.
    """
    if len(value) < (6 if kind == "password" else 8) or is_placeholder(value):
        return False
    if value.lower() in _TYPE_WORDS or _NUMBER.fullmatch(value) or _DOTTED.fullmatch(value):
        return False
    if value.startswith(("/", "./", "~/", "\\")) or "://" in value:
        return False
    return literal or not _WORDLIKE.fullmatch(value)


def _aws_secret_candidates(
    text: str, found: list[_Candidate], threshold: float
) -> Iterator[_Candidate]:
    """40-character secrets near an access key id (`aws configure`, credential CSVs)."""
    for cand in found:
        if cand.type != "aws_access_key_id":
            continue
        start = max(0, cand.start - _AWS_WINDOW)
        end = min(len(text), cand.end + _AWS_WINDOW)
        for match in STANDALONE_AWS_SECRET.finditer(text, start, end):
            value = match.group(0)
            if looks_random(value, threshold=threshold, min_length=40) and not is_placeholder(
                value
            ):
                yield _Candidate(85, match.start(), match.end(), "aws_secret_access_key")


def _pem_tail_candidates(text: str) -> Iterator[_Candidate]:
    """Private key blocks whose BEGIN line is missing (`tail key.pem`, split strings)."""
    if "PRIVATE KEY" not in text:
        return
    for match in PEM_END.finditer(text):
        start = max(0, match.start() - _PEM_WINDOW)
        # Blank `\n` escapes (same length, so offsets hold) and read backwards.
        before = text[start : match.start()].replace("\\n", "  ").replace("\\r", "  ")
        body = PEM_BODY_REVERSED.match(before[::-1])
        if body is not None:
            first = match.start() - len(body.group(0))
            yield _Candidate(93, first, match.end(), "private_key")
