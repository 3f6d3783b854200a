"""Every field a model or a summarizer reads is redacted; signed thinking is kept out of summaries.

Every secret here is synthetic (random, generated for the test); none is a real key.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import string
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph, DocumentPart, ImagePart, TextPart, ThinkingPart
from context_graph.graph.content import ContentPart
from context_graph.graph.nodes import FileNode, Node, SubagentResultNode, ToolCallNode
from context_graph.testing import ScriptedSummarizer, WordCounter
from orchestrator import ContextManager
from orchestrator.policy import Policy
from processors import HistorySummarizer
from processors.base import ProcessorContext, Replace
from processors.redact import SIGNED_SECRETS, SecretRedactor, strip_signed_secrets

_rng = random.Random(15)
B62 = string.ascii_letters + string.digits


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


TOKEN = "ghp_" + _rand(36)
PASSWORD = _rand(7) + "!" + _rand(5)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _unb64(data: str) -> str | None:
    try:
        return base64.b64decode(data, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def _strings(value: Any) -> Iterator[str]:
    """Every string in plain data, and the text a base64 string or data URL decodes to."""
    if isinstance(value, str):
        yield value
        head, _, payload = value.partition(";base64,")
        decoded = _unb64(payload if head.startswith("data:") else value)
        if decoded is not None:
            yield decoded
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _leaks(secret: str, value: Any) -> bool:
    return any(secret in text for text in _strings(value))


async def _redacted(graph: ContextGraph) -> dict[str, Node]:
    """Each node the redactor replaces, by the kind of the node it replaces."""
    proposal = await SecretRedactor().propose(list(graph), ProcessorContext.for_graph(graph))
    edits = [e for e in proposal.edits if isinstance(e, Replace)]
    return {graph[e.target].kind: e.replacement for e in edits}


def _user_graph(parts: list[ContentPart]) -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_user(parts)
    return graph


class TestMediaParts:
    async def test_image_address_with_a_token_becomes_text(self) -> None:
        """An image URL holding a token is not sent: a text part names the redacted URL."""
        url = f"https://cdn.acme.dev/shots/1.png?access_token={TOKEN}"
        user = (await _redacted(_user_graph([ImagePart(url=url)])))["user"]
        assert user.content == (
            TextPart(
                text="[image not sent: its address held a credential: "
                "https://cdn.acme.dev/shots/1.png?access_token=[REDACTED:github_token]]"
            ),
        )

    async def test_image_address_with_userinfo_becomes_text(self) -> None:
        """`https://user:password@host/...` loses its password; the rest of the URL stays."""
        url = f"https://bot:{PASSWORD}@files.acme.dev/a.png"
        (part,) = (await _redacted(_user_graph([ImagePart(url=url)])))["user"].content
        assert isinstance(part, TextPart)
        assert "https://bot:[REDACTED:url_password]@files.acme.dev/a.png" in part.text

    async def test_clean_media_are_kept(self) -> None:
        """A clean URL, base64 image data and a PDF are left as they are: no edit."""
        pdf = base64.b64encode(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n" + bytes(range(256))).decode()
        parts: list[ContentPart] = [
            ImagePart(url="https://cdn.acme.dev/shots/1.png?w=640&h=480"),
            ImagePart(media_type="image/png", data=base64.b64encode(bytes(range(256))).decode()),
            DocumentPart(media_type="application/pdf", data=pdf, title="report.pdf"),
        ]
        assert await _redacted(_user_graph(parts)) == {}

    async def test_base64_json_document_is_decoded_redacted_and_encoded(self) -> None:
        """An `application/json` document in base64 (Gemini inlineData) is read decoded."""
        body = json.dumps({"service": "billing", "token": TOKEN}, indent=2)
        document = DocumentPart(media_type="application/json", data=_b64(body))
        (part,) = (await _redacted(_user_graph([document])))["user"].content
        assert isinstance(part, DocumentPart) and part.data is not None
        assert _unb64(part.data) == body.replace(TOKEN, "[REDACTED:github_token]")

    async def test_plain_json_document_and_title(self) -> None:
        """A JSON document given as text, and a title, are redacted in place."""
        document = DocumentPart(
            media_type="application/json",
            data=json.dumps({"env": f"DB_PASSWORD={PASSWORD}"}),
            title=f"dump for {TOKEN}",
        )
        (part,) = (await _redacted(_user_graph([document])))["user"].content
        assert part == DocumentPart(
            media_type="application/json",
            data=json.dumps({"env": "DB_PASSWORD=[REDACTED:password]"}),
            title="dump for [REDACTED:github_token]",
        )

    async def test_inline_data_url_is_redacted_in_place(self) -> None:
        """A base64 `data:` URL carrying JSON stays a document, its payload redacted."""
        url = "data:application/json;base64," + _b64(json.dumps({"token": TOKEN}))
        (part,) = (await _redacted(_user_graph([DocumentPart(url=url)])))["user"].content
        assert isinstance(part, DocumentPart) and part.url is not None
        assert _unb64(part.url.partition(",")[2]) == '{"token": "[REDACTED:github_token]"}'


class TestNodeFields:
    async def test_file_path_holding_a_token(self) -> None:
        """A file path with a token is redacted; the content next to it too."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_file_read(f"/home/u/downloads/export?token={TOKEN}", f"pw {PASSWORD}")
        node = (await _redacted(graph))["file"]
        assert isinstance(node, FileNode)
        assert node.path == "/home/u/downloads/export?token=[REDACTED:github_token]"

    async def test_credential_file_path_is_not_a_secret(self) -> None:
        """`~/.aws/credentials` names where a secret is, and is left alone."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_file_read("/home/u/.aws/credentials", "[default]\nregion = eu-west-1\n")
        assert await _redacted(graph) == {}

    async def test_subagent_id(self) -> None:
        """A sub-agent id is shown in the request, so it is scanned too."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_subagent_result("done", agent_id=f"run-{TOKEN}")
        node = (await _redacted(graph))["subagent_result"]
        assert isinstance(node, SubagentResultNode)
        assert node.agent_id == "run-[REDACTED:github_token]"

    @pytest.mark.parametrize(
        ("arguments", "expected"),
        [
            # Raw text hides the key behind `\n`: the decoded string is scanned.
            (json.dumps({"cmd": f"cat .env\nredis-cli -a {PASSWORD} ping"}), None),
            # A secret written with JSON escapes is not in the raw text at all.
            ('{"cmd": "echo ' + TOKEN.replace("_", "\\u005f") + '"}', None),
            # A secret as a key.
            (json.dumps({TOKEN: 1, "mode": "x"}), {"[REDACTED:github_token]": 1, "mode": "x"}),
        ],
        ids=["escaped-break", "unicode-escape", "key"],
    )
    async def test_tool_call_arguments_as_the_model_reads_them(
        self, arguments: str, expected: dict[str, Any] | None
    ) -> None:
        """No secret is left in the decoded arguments, and they stay valid JSON."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("go")
        graph.add_assistant(tool_calls=[{"id": "c", "name": "bash", "arguments": arguments}])
        call = (await _redacted(graph))["tool_call"]
        assert isinstance(call, ToolCallNode)
        decoded = json.loads(call.arguments)
        assert not _leaks(TOKEN, decoded) and not _leaks(PASSWORD, decoded)
        if expected is not None:
            assert decoded == expected

    async def test_json_tool_output_with_a_quoted_key(self) -> None:
        """JSON inside a JSON string (escaped quotes) is redacted as its strings decode."""
        inner = json.dumps({"client_secret": _rand(32)})
        output = json.dumps({"stdout": inner})
        graph = ContextGraph(counter=WordCounter())
        graph.add_user(output)
        (part,) = (await _redacted(graph))["user"].content
        assert isinstance(part, TextPart)
        assert json.loads(json.loads(part.text)["stdout"]) == {"client_secret": "[REDACTED:secret]"}


def _signed_graph() -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("deploy it")
    graph.add_assistant(
        [
            ThinkingPart(thinking=f"the env has GITHUB_TOKEN={TOKEN}; use it", signature="c2ln"),
            TextPart(text="Deploying."),
        ]
    )
    graph.add_user(f"it printed {TOKEN} on stdout")
    return graph


class TestSignedThinking:
    async def test_block_is_kept_and_the_node_marked(self) -> None:
        """The signed block goes back byte for byte; the node and the note say a secret stayed."""
        graph = _signed_graph()
        proposal = await SecretRedactor().propose(list(graph), ProcessorContext.for_graph(graph))
        by_kind = {graph[e.target].kind: e for e in proposal.edits if isinstance(e, Replace)}
        assistant = by_kind["assistant"].replacement
        assert assistant.content == graph[by_kind["assistant"].target].content
        assert assistant.meta[SIGNED_SECRETS] == {"github_token": 1}
        assert "redacted" not in assistant.meta
        assert "1 secret(s) left in signed thinking in 1 node(s)" in proposal.note
        assert "redacted 1 secret(s) in 1 node(s): 1 github_token" in proposal.note
        assert TOKEN not in proposal.note
        # The secret seen in the signed block is found where it repeats, keyless.
        assert TOKEN not in by_kind["user"].replacement.text

    async def test_redacting_again_changes_nothing(self) -> None:
        """A marked node is not edited again: redaction stays idempotent."""
        graph = _signed_graph()
        proposal = await SecretRedactor().propose(list(graph), ProcessorContext.for_graph(graph))
        replaced = [e.replacement for e in proposal.edits if isinstance(e, Replace)]
        again = await SecretRedactor().propose(replaced, ProcessorContext.for_graph(graph))
        assert again.empty

    async def test_a_marked_node_is_not_reported_again(self) -> None:
        """Among other edits, a node marked before adds nothing to the note's counts."""
        graph = _signed_graph()
        proposal = await SecretRedactor().propose(list(graph), ProcessorContext.for_graph(graph))
        replaced = {graph[e.target].kind: e.replacement for e in proposal.edits}
        fresh = ContextGraph(counter=WordCounter())
        fresh.add_user(f"DB_PASSWORD={PASSWORD}")
        targets = [replaced["assistant"], *fresh]
        again = await SecretRedactor().propose(targets, ProcessorContext.for_graph(fresh))
        assert again.note == "redacted 1 secret(s) in 1 node(s): 1 password"

    async def test_strip_signed_secrets(self) -> None:
        """Only marked nodes lose their signed thinking; other nodes pass through as they are."""
        graph = _signed_graph()
        marked = (await _redacted(graph))["assistant"]
        clean = graph[graph.by_kind("user")[0]]
        stripped, same = strip_signed_secrets([marked, clean])
        assert stripped.content == (TextPart(text="Deploying."),)
        assert stripped.id == marked.id and same is clean

    def test_a_summarizer_never_receives_the_block(self) -> None:
        """With a model summarizer, the marked node reaches it without its signed thinking."""
        summarizer = ScriptedSummarizer(["The agent deployed."] * 4)
        manager = ContextManager(
            policy=Policy(
                redact_secrets=True, summarizer=summarizer, pipeline=[HistorySummarizer()]
            )
        )
        manager.add_user("deploy it")
        manager.add_assistant(
            [ThinkingPart(thinking=f"GITHUB_TOKEN={TOKEN} works", signature="c2ln")],
            [{"id": "c1", "name": "bash", "arguments": '{"cmd": "make deploy"}'}],
        )
        manager.add_tool_result("c1", "deployed")
        for step in range(3):
            manager.add_assistant(f"Step {step}.", [{"id": f"s{step}", "name": "bash"}])
            manager.add_tool_result(f"s{step}", "ok " * 50)
        anyio.run(manager.compact)
        given = [node.model_dump(mode="json") for nodes, _, _ in summarizer.calls for node in nodes]
        assert any("make deploy" in json.dumps(node) for node in given)
        assert not _leaks(TOKEN, given)


# -- the property: no scanned field leaks into any request or any summarizer input ----------

# (text around the secret, the secret): realistic settings for a secret in prose or output.
TEXT_SECRETS = [
    ("GITHUB_TOKEN={s}", TOKEN),
    ("OPENAI_API_KEY={s}", "sk-proj-" + _rand(60)),
    ("export AWS_ACCESS_KEY_ID={s}", "AKIA" + _rand(16, string.ascii_uppercase + "234567")),
    ("Authorization: Bearer {s}", _rand(40)),
    ('{{"client_secret": "{s}"}}', _rand(32)),
    ("DB_PASSWORD={s}", PASSWORD),
    ("redis://:{s}@cache.internal:6379/0", PASSWORD),
    ("mysql -u app -p{s} shop", PASSWORD),
    ("redis-cli -h cache -a {s} ping", PASSWORD),
    ("\nlocalhost:5432:shop:app:{s}\n", PASSWORD),
    ("doctl auth init -t {s}", "dop_v1_" + _rand(64, "0123456789abcdef")),
    ("vault login {s}", "hvs." + _rand(90, B62 + "_-")),
    ("echo {s} | docker login -u acme --password-stdin", "dckr_pat_" + _rand(27)),
    ("aws configure set aws_secret_access_key {s}", _rand(40, B62 + "/+")),
    ("-u AC" + _rand(32, "0123456789abcdef") + ":{s}", _rand(32, "0123456789abcdef")),
]
# (address with {p} for random path text and {s} for the secret, the secret).
URL_SECRETS = [
    ("https://cdn.acme.dev/{p}/shot.png?access_token={s}", TOKEN),
    ("https://bot:{s}@files.acme.dev/{p}.png", PASSWORD),
    ("https://acme.blob.core.windows.net/c/{p}.png?sv=2022-11-02&sig={s}", _rand(43) + "%3D"),
    ("https://cdn.acme.dev/{p}/{s}/shot.png", TOKEN),
]
PATH_SECRETS = [
    ("/home/u/exports/{p}?token={s}", _rand(24)),
    ("/tmp/{p}/{s}.json", TOKEN),
    ("s3://acme-{p}/dump?X-Amz-Credential={s}%2F20240501", "AKIA" + _rand(16, "ABCDEFGHJK234567")),
]

_AROUND = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=24)
_GAP = st.sampled_from([" ", "\n", "\t", " \n"])
_PATH_TEXT = st.text(string.ascii_lowercase + string.digits + "-_", min_size=1, max_size=12)


@st.composite
def _texts(draw: st.DrawFn) -> tuple[str, str]:
    template, secret = draw(st.sampled_from(TEXT_SECRETS))
    before, after = draw(_AROUND), draw(_AROUND)
    return f"{before}{draw(_GAP)}{template.format(s=secret)}{draw(_GAP)}{after}", secret


@st.composite
def _addresses(draw: st.DrawFn, table: list[tuple[str, str]]) -> tuple[str, str]:
    template, secret = draw(st.sampled_from(table))
    return template.format(p=draw(_PATH_TEXT), s=secret), secret


Feed = Callable[[ContextManager], None]


def _field(name: str, text: str) -> Feed:
    """How to put `text` into the field called `name` of a fresh session."""

    def feed(manager: ContextManager) -> None:
        if name == "user":
            manager.add_user(text)
        elif name == "system":
            manager.add_system(text)
        elif name == "note":
            manager.add_note(text)
        elif name == "assistant":
            manager.add_assistant(text)
        elif name in ("tool_result", "arguments"):
            arguments = json.dumps({"cmd": text}) if name == "arguments" else "{}"
            manager.add_assistant("running", [{"id": "t", "name": "bash", "arguments": arguments}])
            manager.add_tool_result("t", text if name == "tool_result" else "done")
        elif name == "file_content":
            manager.add_file_read("src/settings.py", text)
        elif name == "file_path":
            manager.add_file_read(text, "print('hello')")
        elif name == "subagent":
            manager.add_subagent_result(text)
        elif name == "image_url":
            manager.add_user([TextPart(text="see"), ImagePart(url=text)])
        elif name == "document_url":
            manager.add_user([DocumentPart(url=text, media_type="application/pdf")])
        elif name == "document_json_base64":
            body = _b64(json.dumps({"log": text}))
            manager.add_user([DocumentPart(media_type="application/json", data=body)])
        elif name == "document_json":
            data = json.dumps({"log": text}, indent=2)
            manager.add_user([DocumentPart(media_type="application/json", data=data)])
        elif name == "document_text":
            manager.add_user([DocumentPart(media_type="text/plain", data=text)])
        elif name == "document_title":
            manager.add_user([DocumentPart(media_type="text/plain", data="notes", title=text)])
        elif name in ("thinking", "signed_thinking"):
            signature = "c2lnbmF0dXJl" if name == "signed_thinking" else None
            manager.add_user("go on")
            manager.add_assistant([ThinkingPart(thinking=text, signature=signature)])
        elif name == "compaction":
            manager.ingest([{"type": "compaction", "content": text}])
        elif name == "native_compaction":
            block = {"type": "compaction", "content": text}
            native = {"provider": "anthropic", "item": block}
            manager.ingest([{"type": "compaction", "content": [], "native": native}])

    return feed


_TEXT_FIELDS = [
    "user",
    "system",
    "note",
    "assistant",
    "tool_result",
    "arguments",
    "file_content",
    "subagent",
    "document_json_base64",
    "document_json",
    "document_text",
    "document_title",
    "thinking",
    "signed_thinking",
    "compaction",
    "native_compaction",
]


@st.composite
def _placements(draw: st.DrawFn) -> tuple[str, str, str]:
    """(field, text for it, the secret in that text)."""
    kind = draw(st.sampled_from(["text", "url", "path"]))
    if kind == "url":
        name = draw(st.sampled_from(["image_url", "document_url"]))
        text, secret = draw(_addresses(URL_SECRETS))
    elif kind == "path":
        name = "file_path"
        text, secret = draw(_addresses(PATH_SECRETS))
    else:
        name = draw(st.sampled_from(_TEXT_FIELDS))
        text, secret = draw(_texts())
    return name, text, secret


def _outside_thinking(payload: Any) -> Any:
    """The payload without its thinking blocks (where a signed block may go back)."""
    if isinstance(payload, dict):
        if payload.get("type") == "thinking" or payload.get("thought") is True:
            return {}
        return {k: _outside_thinking(v) for k, v in payload.items()}
    if isinstance(payload, list):
        return [_outside_thinking(v) for v in payload]
    return payload


class TestNothingLeaks:
    @settings(
        max_examples=120,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(placement=_placements())
    def test_no_request_and_no_summarizer_input_holds_the_secret(
        self, placement: tuple[str, str, str]
    ) -> None:
        """A secret anywhere in any scanned field reaches no request and no summarizer."""
        name, text, secret = placement
        summarizer = ScriptedSummarizer(["The agent worked on the task."] * 8)
        manager = ContextManager(
            policy=Policy(
                redact_secrets=True, summarizer=summarizer, pipeline=[HistorySummarizer()]
            )
        )
        manager.add_system("You are a careful agent.")
        manager.add_user("start")
        _field(name, text)(manager)
        for step in range(3):
            manager.add_assistant(f"Step {step}.", [{"id": f"s{step}", "name": "bash"}])
            manager.add_tool_result(f"s{step}", "ok " * 40)
        signed = name == "signed_thinking"
        for _ in range(2):  # before and after the compaction
            for fmt in ("openai", "anthropic", "gemini"):
                payload = manager.render_sync(format=fmt).payload
                # A signed block goes back to its provider as it came (the provider wrote
                # it); nowhere else in the request.
                assert not _leaks(secret, _outside_thinking(payload) if signed else payload)
            anyio.run(manager.compact)
        assert summarizer.calls
        given = [
            ([node.model_dump(mode="json") for node in nodes], previous, instructions)
            for nodes, previous, instructions in summarizer.calls
        ]
        assert not _leaks(secret, given)


def _compacted(block: dict[str, Any]) -> list[dict[str, Any]]:
    """A session that opens with an Anthropic compaction block, then a turn."""
    return [
        {"type": "system", "content": "You are a careful agent."},
        {"type": "compaction", "content": [], "native": {"provider": "anthropic", "item": block}},
        {"type": "user", "content": "go on"},
    ]


class TestImportedCompactions:
    """Another tool's compaction is redacted like any text, and its native block too."""

    def test_a_recorded_compaction_with_a_secret_is_redacted(self) -> None:
        """The redacted copy still stands for what came before, as the other tool's summary."""
        events = [
            {"type": "system", "content": "You are a careful agent."},
            {"type": "user", "content": "early question"},
            {"type": "assistant", "content": "early answer"},
            {"type": "compaction", "content": f"The agent used GITHUB_TOKEN={TOKEN}."},
            {"type": "user", "content": "go on"},
        ]
        plain = ContextManager(format="openai", policy=Policy())
        plain.ingest(events)
        manager = ContextManager(format="openai", policy=Policy(redact_secrets=True))
        manager.ingest(events)
        sent = manager.render_sync().payload
        expected = json.loads(
            json.dumps(plain.render_sync().payload).replace(TOKEN, "[REDACTED:github_token]")
        )
        assert sent == expected
        assert "early question" not in json.dumps(sent)

    def test_an_unsigned_block_goes_back_redacted(self) -> None:
        """The summary the block sends to Anthropic holds the placeholder, not the secret."""
        block = {"type": "compaction", "content": f"The agent used GITHUB_TOKEN={TOKEN}."}
        manager = ContextManager(format="anthropic", policy=Policy(redact_secrets=True))
        manager.ingest(_compacted(block))
        payload = manager.render_sync().payload
        assert TOKEN not in json.dumps(payload)
        (sent,) = [
            part
            for message in payload["messages"]
            if isinstance(message["content"], list)
            for part in message["content"]
            if part.get("type") == "compaction"
        ]
        assert sent["content"] == "The agent used GITHUB_TOKEN=[REDACTED:github_token]."
        assert manager.raw[manager.raw.by_kind("summary")[0]].native.item == block  # type: ignore[attr-defined]

    async def test_a_signed_block_is_kept_and_counted(self) -> None:
        """A signature covers the summary: it goes back unchanged, and the node says so."""
        block = {"type": "compaction", "content": f"token {TOKEN}", "signature": "c2ln"}
        graph = ContextGraph(counter=WordCounter())
        graph.ingest(_compacted(block))
        summary = graph[graph.by_kind("summary")[0]]
        proposal = await SecretRedactor().propose([summary], ProcessorContext.for_graph(graph))
        (edit,) = [e for e in proposal.edits if isinstance(e, Replace)]
        assert edit.replacement.native == summary.native  # type: ignore[attr-defined]
        assert edit.replacement.meta[SIGNED_SECRETS] == {"github_token": 1}
        assert TOKEN not in proposal.note

    async def test_a_secret_is_counted_once(self) -> None:
        """The block's summary is the node's text as well: one secret, one count."""
        block = {"type": "compaction", "content": f"DB_PASSWORD={PASSWORD}"}
        graph = ContextGraph(counter=WordCounter())
        graph.ingest(_compacted(block))
        summary = graph[graph.by_kind("summary")[0]]
        proposal = await SecretRedactor().propose([summary], ProcessorContext.for_graph(graph))
        (edit,) = [e for e in proposal.edits if isinstance(e, Replace)]
        assert edit.replacement.meta["redacted"] == {"password": 1}
        assert PASSWORD not in json.dumps(dict(edit.replacement.native.item))  # type: ignore[attr-defined]
