from __future__ import annotations

import itertools
import json
import random
import re
import string
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import (
    ConfigurationError,
    ContentPart,
    ContextGraph,
    DocumentPart,
    ImagePart,
    ThinkingPart,
)
from context_graph.graph.nodes import ToolCallNode
from context_graph.importers import load_sessions
from context_graph.testing import WordCounter, graph_snapshot, strict_trace, trace_files
from processors.base import ProcessorContext, Proposal, Replace
from processors.redact import (
    SECRET_TYPES,
    SecretFinding,
    SecretRedactor,
    find_secrets,
    redact_text,
)
from processors.redact.rules import PATTERN_RULES
from processors.registry import get_processor

PLACEHOLDER = re.compile(r"\[REDACTED:([a-z_]+)\]")

DATA = Path(__file__).resolve().parent / "data" / "secrets_labelled.jsonl"
TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
TRACE_FILES = trace_files(TRACES)
B62 = string.ascii_letters + string.digits
_rng = random.Random(7)


def _rand(n: int, alphabet: str = B62) -> str:
    """A synthetic random string using every character class its alphabet has."""
    classes = [c for c in (str.isupper, str.islower, str.isdigit) if any(map(c, alphabet))]
    while True:
        value = "".join(_rng.choice(alphabet) for _ in range(n))
        if all(any(map(c, value)) for c in classes) and "xxxx" not in value.lower():
            return value


def _load_rows() -> list[dict[str, Any]]:
    with DATA.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


ROWS = _load_rows()

# (text with {s} where the secret goes, the secret, its type)
CASES = [
    ("OPENAI_API_KEY={s}\n", "sk-proj-" + _rand(60), "openai_api_key"),
    ("key: {s}", "sk-ant-api03-" + _rand(90) + "AA", "anthropic_api_key"),
    ("git push https://bot:{s}@github.com/a/b", "ghp_" + _rand(36), "github_token"),
    ("token {s} ok", "github_pat_" + _rand(22) + "_" + _rand(59), "github_token"),
    (
        "SLACK={s}",
        f"xoxb-{_rand(12, string.digits)}-{_rand(13, string.digits)}-{_rand(24)}",
        "slack_token",
    ),
    ("stripe.api_key = '{s}'", "sk_live_" + _rand(40), "stripe_secret_key"),
    ("maps?key={s}&x=1", "AIza" + _rand(35), "google_api_key"),
    ("id={s}", "AKIA" + _rand(16, string.ascii_uppercase + "234567"), "aws_access_key_id"),
    ("aws_secret_access_key = {s}\n", _rand(40, B62 + "+/"), "aws_secret_access_key"),
    ("Authorization: Bearer {s}", _rand(32), "bearer_token"),
    ("Authorization: Basic {s}", _rand(24) + "==", "basic_auth"),
    ("redis://default:{s}@cache:6379", _rand(14), "url_password"),
    ("DB_PASSWORD={s}\n", _rand(12), "password"),
    ('{{"client_secret": "{s}"}}', _rand(32), "secret"),
    ("Set-Cookie: sessionid={s}; Path=/", _rand(32), "high_entropy_secret"),
    ("npm: {s}", "npm_" + _rand(36), "npm_token"),
    ("key = {s}", "SG." + _rand(22) + "." + _rand(43), "sendgrid_api_key"),
    (
        "jwt {s} end",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ." + _rand(43),
        "jwt",
    ),
    (
        "before\n{s}\nafter",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        + "\n".join(_rand(64, B62 + "+/") for _ in range(4))
        + "\n-----END OPENSSH PRIVATE KEY-----",
        "private_key",
    ),
]

NEGATIVES = [row["text"] for row in ROWS if not row["secrets"]]


class TestRedactText:
    @pytest.mark.parametrize(("template", "secret", "kind"), CASES, ids=[c[2] for c in CASES])
    def test_each_type_is_found_and_replaced(self, template: str, secret: str, kind: str) -> None:
        """A secret is replaced by its typed placeholder and the text around it is kept."""
        text = template.format(s=secret)
        redacted, findings = redact_text(text)
        assert redacted == text.replace(secret, f"[REDACTED:{kind}]")
        start = text.index(secret)
        assert findings == (SecretFinding(kind, (start, start + len(secret))),)
        assert findings[0].placeholder == f"[REDACTED:{kind}]"

    @pytest.mark.parametrize("text", NEGATIVES[:40])
    def test_hard_negatives_are_left_alone(self, text: str) -> None:
        """UUIDs, git SHAs, lockfile hashes, placeholders and code come back unchanged."""
        assert redact_text(text) == (text, ())

    def test_repeats_of_a_found_secret_are_redacted_too(self) -> None:
        """A password found once is also hidden where it is repeated without its key."""
        secret = _rand(12)
        text = f"DB_PASSWORD={secret}\nlogin failed for {secret}"
        redacted, findings = redact_text(text)
        assert secret not in redacted
        assert [f.type for f in findings] == ["password", "password"]

    def test_types_filter(self) -> None:
        """`types` restricts what is reported and replaced."""
        jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ." + _rand(43)
        key = "ghp_" + _rand(36)
        text = f"{jwt} {key}"
        redacted, findings = redact_text(text, types={"jwt"})
        assert redacted == f"[REDACTED:jwt] {key}"
        assert [f.type for f in findings] == ["jwt"]

    def test_entropy_options(self) -> None:
        """A high threshold or a long minimum turns the entropy rule off for a value."""
        text = f"cookie_value={_rand(24)}"
        assert [f.type for f in find_secrets(text)] == ["high_entropy_secret"]
        assert find_secrets(text, entropy_threshold=7.9) == ()
        assert find_secrets(text, min_length=25) == ()

    def test_existing_placeholders_are_kept(self) -> None:
        """Text that is already redacted is not redacted again."""
        text = "password=[REDACTED:password] token: '[REDACTED:token]'"
        assert redact_text(text) == (text, ())

    def test_empty_and_unicode(self) -> None:
        """Empty text is fine; spans count characters, also next to multi-byte text."""
        assert redact_text("") == ("", ())
        secret = "ghp_" + _rand(36)
        text = f"密钥 🔑 {secret} — ça marche"
        redacted, findings = redact_text(text)
        assert redacted == "密钥 🔑 [REDACTED:github_token] — ça marche"
        assert text[slice(*findings[0].span)] == secret

    def test_binary_looking_text(self) -> None:
        """Random bytes decoded as Latin-1 do not break the scanner."""
        blob = bytes(_rng.randrange(256) for _ in range(50_000)).decode("latin-1")
        redacted, findings = redact_text(blob)
        assert len(findings) == len(find_secrets(blob))
        assert all(f.type in SECRET_TYPES for f in findings)
        assert redact_text(redacted)[0] == redacted

    def test_huge_input(self) -> None:
        """Two megabytes of log with three planted secrets: all found, in seconds."""
        keys = ["ghp_" + _rand(36), "AKIA" + _rand(16, string.ascii_uppercase), _rand(16)]
        lines = [
            f"2024-05-01 INFO worker {i} processed batch {i * 7} in 12ms" for i in range(40_000)
        ]
        lines[100] += f" token={keys[0]}"
        lines[20_000] += f" using {keys[1]}"
        lines[39_000] = f"DB_PASSWORD={keys[2]}"
        text = "\n".join(lines)
        started = time.perf_counter()
        redacted, findings = redact_text(text)
        assert time.perf_counter() - started < 20
        assert len(findings) == 3
        assert not any(k in redacted for k in keys)

    def test_every_rule_has_a_needle_in_its_matches(self) -> None:
        """The cheap pre-check never hides a match: each match holds one of its rule's needles."""
        for row in ROWS:
            for rule in PATTERN_RULES:
                for match in rule.pattern.finditer(row["text"]):
                    assert any(n in match.group(0).lower() for n in rule.needles), rule.type


def _labelled_spans(row: dict[str, Any]) -> list[tuple[int, int]]:
    """Every occurrence of every labelled secret in the row's text."""
    text, spans = row["text"], []
    for secret in row["secrets"]:
        index = text.find(secret)
        while index != -1:
            spans.append((index, index + len(secret)))
            index = text.find(secret, index + 1)
    return spans


def _score(rows: list[dict[str, Any]]) -> tuple[int, int, int, int]:
    """(true findings, all findings, secrets fully hidden, all secrets) over `rows`.

    A finding is true when it lies inside a labelled secret (redacting more than the
    secret is a false positive); a secret counts as found when findings cover all of it.
    """
    good = total = hidden = secrets = 0
    for row in rows:
        spans = _labelled_spans(row)
        findings = find_secrets(row["text"])
        total += len(findings)
        good += sum(any(a <= f.span[0] and f.span[1] <= b for a, b in spans) for f in findings)
        for a, b in spans:
            covered: set[int] = set()
            for f in findings:
                covered.update(range(max(a, f.span[0]), min(b, f.span[1])))
            secrets += 1
            hidden += len(covered) == b - a
    return good, total, hidden, secrets


class TestLabelledSet:
    def test_set_is_well_formed(self) -> None:
        """At least 120 rows, unique ids, labels that occur in their text, many hard negatives."""
        assert len(ROWS) >= 120
        assert len({r["id"] for r in ROWS}) == len(ROWS)
        for row in ROWS:
            assert all(s and s in row["text"] for s in row["secrets"]), row["id"]
        assert len(NEGATIVES) >= 40
        assert len({r["kind"] for r in ROWS}) >= 8

    def test_metrics(self) -> None:
        """Precision >= 0.95 and recall >= 0.9 on the labelled set (numbers printed with -s)."""
        good, total, hidden, secrets = _score(ROWS)
        precision, recall = good / total, hidden / secrets
        print(
            f"\nlabelled set: {len(ROWS)} texts, {secrets} secrets, {len(NEGATIVES)} without"
            f"\nprecision {precision:.3f} ({good}/{total} findings inside a labelled secret)"
            f"\nrecall    {recall:.3f} ({hidden}/{secrets} secrets fully redacted)"
        )
        assert precision >= 0.95
        assert recall >= 0.9


_FILLER = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
_SECRETS = st.sampled_from([c[1] for c in CASES])
_SEPARATORS = st.sampled_from(["", " ", "\n", "=", ": ", '"', "'", "password=", "token: "])
_PIECES = st.one_of(_FILLER, _SECRETS, _SEPARATORS, st.sampled_from([r["text"] for r in ROWS]))


class TestRedactionProperties:
    @settings(max_examples=300, deadline=None)
    @given(pieces=st.lists(_PIECES, max_size=12))
    def test_idempotent_and_hides_what_it_found(self, pieces: list[str]) -> None:
        """Redacting twice changes nothing more, and no found secret is left in the output."""
        text = "".join(pieces)
        redacted, findings = redact_text(text)
        assert redact_text(redacted) == (redacted, ())
        for finding in findings:
            assert text[slice(*finding.span)] not in redacted
        ends = [f.span for f in findings]
        assert all(a < b <= c for (a, b), (c, _) in itertools.pairwise(ends))

    @settings(max_examples=300, deadline=None)
    @given(text=st.text(alphabet=string.ascii_lowercase + " \n.,!?'()-", max_size=400))
    def test_plain_prose_is_unchanged(self, text: str) -> None:
        """Text without secrets (lower-case prose) comes back exactly as it was."""
        assert redact_text(text) == (text, ())

    @settings(max_examples=100, deadline=None)
    @given(rows=st.lists(st.sampled_from(NEGATIVES), min_size=1, max_size=6))
    def test_hard_negatives_together_are_unchanged(self, rows: list[str]) -> None:
        """Hard negatives joined in any order still hold no secret."""
        text = "\n".join(rows)
        assert redact_text(text) == (text, ())


def _graph() -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("you are helpful")
    graph.add_user(f"here is my key {CASES[0][1]} please check it")
    graph.add_assistant(
        "running it",
        tool_calls=[
            {"id": "c1", "name": "bash", "arguments": json.dumps({"cmd": f"curl -u me:{SECRET}"})}
        ],
    )
    graph.add_tool_result("c1", f"HTTP 401 for me:{SECRET}\nGITHUB_TOKEN={CASES[2][1]}")
    graph.add_user("thanks, nothing secret here")
    graph.add_note(f"DB_PASSWORD={SECRET}")
    return graph


SECRET = _rand(14)


async def _propose(graph: ContextGraph, **options: Any) -> Proposal:
    return await SecretRedactor(**options).propose(list(graph), ProcessorContext.for_graph(graph))


def _replaces(proposal: Proposal) -> list[Replace]:
    edits = [e for e in proposal.edits if isinstance(e, Replace)]
    assert len(edits) == len(proposal.edits)
    return edits


class TestSecretRedactor:
    @pytest.mark.parametrize(
        ("options", "option"),
        [
            ({"types": ["nope"]}, "types"),
            ({"types": "jwt"}, "types"),
            ({"types": []}, "types"),
            ({"entropy_threshold": 0}, "entropy_threshold"),
            ({"entropy_threshold": 9}, "entropy_threshold"),
            ({"entropy_threshold": "high"}, "entropy_threshold"),
            ({"entropy_threshold": True}, "entropy_threshold"),
            ({"min_length": 4}, "min_length"),
            ({"min_length": "20"}, "min_length"),
            ({"include_pinned": "no"}, "include_pinned"),
        ],
    )
    def test_bad_options_are_refused_by_name(self, options: dict[str, Any], option: str) -> None:
        """A bad option raises ConfigurationError naming the option."""
        with pytest.raises(ConfigurationError, match=option):
            SecretRedactor(**options)

    def test_registered_by_name(self) -> None:
        """The redactor is found in the registry as `redact`."""
        assert get_processor("redact") is SecretRedactor

    async def test_only_nodes_with_secrets_are_replaced(self) -> None:
        """User, call, result and pinned note are redacted (a repeat too); clean nodes are not."""
        graph = _graph()
        proposal = await _propose(graph)
        targets = {graph[e.target].kind for e in _replaces(proposal)}
        assert targets == {"user", "tool_call", "tool_result", "note"}
        for edit in _replaces(proposal):
            original, new = graph[edit.target], edit.replacement
            assert new.kind == original.kind and new.call_id == original.call_id
            assert new.replaces == original.id and new.pinned == original.pinned
            dumped = new.model_dump_json()
            assert SECRET not in dumped and CASES[0][1] not in dumped
        (result,) = [
            e.replacement for e in _replaces(proposal) if e.replacement.kind == "tool_result"
        ]
        assert result.meta["redacted"] == {"github_token": 1, "password": 1}
        assert proposal.note == (
            "redacted 5 secret(s) in 4 node(s): 1 github_token, 1 openai_api_key, 3 password"
        )
        assert SECRET not in proposal.note

    async def test_pinned_nodes_can_be_left_out(self) -> None:
        """With include_pinned=False the pinned note is not touched."""
        graph = _graph()
        proposal = await _propose(graph, include_pinned=False)
        assert all(not graph[e.target].pinned for e in _replaces(proposal))

    async def test_tool_call_arguments_stay_valid_json(self) -> None:
        """Redacted arguments parse, and equal the arguments with the secret replaced."""
        graph = _graph()
        proposal = await _propose(graph)
        (call,) = [e.replacement for e in _replaces(proposal) if e.replacement.kind == "tool_call"]
        assert isinstance(call, ToolCallNode)
        assert json.loads(call.arguments) == {"cmd": "curl -u me:[REDACTED:password]"}

    async def test_arguments_that_would_break_fall_back_to_values(self) -> None:
        """A secret spanning JSON strings is redacted per value, keeping the JSON's shape."""
        body = "\n".join(_rand(64, B62 + "+/") for _ in range(3))
        arguments = json.dumps(
            {"a": "-----BEGIN RSA PRIVATE KEY-----", "b": body + "\n-----END RSA PRIVATE KEY-----"}
        )
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("go")
        graph.add_assistant(tool_calls=[{"id": "c", "name": "write", "arguments": arguments}])
        raw, _ = redact_text(arguments)
        assert set(json.loads(raw)) == {"a"}  # redacting the raw text would drop "b"
        (edit,) = _replaces(await _propose(graph))
        assert isinstance(edit.replacement, ToolCallNode)
        assert json.loads(edit.replacement.arguments) == {
            "a": "-----BEGIN RSA PRIVATE KEY-----",
            "b": "[REDACTED:private_key]",
        }

    async def test_parts_other_than_text(self) -> None:
        """Unsigned thinking and text documents are redacted; signed thinking and images not."""
        key = CASES[2][1]
        parts: list[ContentPart] = [
            ThinkingPart(thinking=f"use {key}", signature="sig"),
            ThinkingPart(thinking=f"use {key}"),
            DocumentPart(media_type="text/plain", data=f"token {key}"),
            ImagePart(media_type="image/png", data="iVBORw0KGgo="),
        ]
        graph = ContextGraph(counter=WordCounter())
        graph.add_user(parts)
        (edit,) = _replaces(await _propose(graph))
        signed, unsigned, document, image = edit.replacement.content
        assert signed == parts[0]
        assert isinstance(unsigned, ThinkingPart) and key not in unsigned.thinking
        assert (
            isinstance(document, DocumentPart) and document.data == "token [REDACTED:github_token]"
        )
        assert image == parts[3]

    async def test_tokens_and_graph(self) -> None:
        """Token counts match the nodes; the graph is unchanged; the result is deterministic."""
        graph = _graph()
        ctx = ProcessorContext.for_graph(graph)
        before = graph_snapshot(graph)
        proposal = await SecretRedactor().propose(list(graph), ctx)
        again = await SecretRedactor().propose(list(graph), ctx)
        assert proposal == again
        assert graph_snapshot(graph) == before
        edits = _replaces(proposal)
        assert proposal.tokens_before == sum(graph.tokens(e.target) for e in edits)
        assert proposal.tokens_after == sum(ctx.count(e.replacement) for e in edits)
        assert proposal.base_version == graph.version

    async def test_clean_and_empty_targets(self) -> None:
        """No secrets, or no targets, gives an empty proposal; duplicates give one edit."""
        graph = _graph()
        ctx = ProcessorContext.for_graph(graph)
        clean = [n for n in graph if n.kind in {"system", "assistant"}]
        assert (await SecretRedactor().propose(clean, ctx)).empty
        assert (await SecretRedactor().propose([], ctx)).note == "no secrets found"
        user = graph[graph.by_kind("user")[0]]
        assert len((await SecretRedactor().propose([user, user], ctx)).edits) == 1

    def test_redact_uses_the_options(self) -> None:
        """`SecretRedactor.redact` is `redact_text` with the redactor's options."""
        text = f"{CASES[0][1]} cookie_value={_rand(24)}"
        assert SecretRedactor(types={"openai_api_key"}).redact(text) == redact_text(
            text, types={"openai_api_key"}
        )


@pytest.mark.slow
@pytest.mark.skipif(not TRACE_FILES, reason="shared traces not present")
def test_redactor_on_shared_traces(unread_trace: Callable[[Path], bool]) -> None:
    """Over every shared trace the redactor never raises; its findings are listed (-s)."""
    import anyio

    found: Counter[str] = Counter()
    lines = []
    for path in (p for p in TRACE_FILES if not unread_trace(p)):
        for session in load_sessions(path, strict=strict_trace(path)):
            graph = ContextGraph()
            graph.ingest(session.events)
            proposal = anyio.run(_propose, graph)
            for edit in _replaces(proposal):
                original = graph[edit.target]
                assert edit.replacement.call_id == original.call_id
                added = Counter(PLACEHOLDER.findall(edit.replacement.model_dump_json()))
                added.subtract(PLACEHOLDER.findall(original.model_dump_json()))
                for kind, count in sorted(added.items()):
                    found[kind] += count
                    lines.append(f"  {kind:<20} x{count} {path.relative_to(TRACES)} {original.id}")
    print(f"\nsecrets found in the shared traces: {dict(found) or 'none'}")
    print("\n".join(lines))
