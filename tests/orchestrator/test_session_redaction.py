"""Redaction is a property of the session: every new node is redacted before any render.

However it is switched on (`redact_secrets=True`, a configured `SecretRedactor`, a
profile with a `redact` stage, in Python or in TOML, a named pipeline's stage), a secret
reaches no request, also in a turn that came after the last compaction, and also where a
later turn repeats a secret found earlier without what gave it away. The pristine record
keeps what the session held (docs/processors/redact.md).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph.errors import BudgetExceededError, ConfigurationError
from context_graph.graph.content import TextPart
from context_graph.graph.nodes import Node
from context_graph.testing import WordCounter
from orchestrator import ContextManager
from orchestrator.policy import Policy, PolicyLike, StageConfig
from processors.base import ProcessorContext, Proposal, replace_each, replacement_for
from processors.mask import ObservationMasker
from processors.redact import SecretRedactor
from tests.orchestrator.secret_sessions import PASSWORD, PLANTED, leaks

REDACT_TOML = """
name = "redacting"
[[stages]]
processor = "redact"
[[stages]]
processor = "mask"
options = { keep_turns = 1, min_tokens = 20 }
"""


def _python_policy() -> Policy:
    stages = (StageConfig(processor="mask"), StageConfig(processor="redact"))
    return Policy(name="p", pipeline=stages)


#: Every way to switch redaction on, as a `ContextManager` policy.
SWITCHES: dict[str, Callable[[], PolicyLike]] = {
    "redact_secrets": lambda: Policy(redact_secrets=True),
    "configured redactor": lambda: Policy(redact_secrets=SecretRedactor(min_length=12)),
    "toml policy": lambda: Policy.from_toml(REDACT_TOML),
    "toml policy file": lambda: str(_toml_file()),
    "python policy": _python_policy,
    "pipeline stage": lambda: Policy(pipeline=[SecretRedactor(), ObservationMasker()]),
    "named pipeline": lambda: Policy(pipelines={"safety": [SecretRedactor()]}),
}


def _toml_file() -> Path:
    folder = Path(tempfile.mkdtemp())
    path = folder / "redact.toml"
    path.write_text(REDACT_TOML, encoding="utf-8")
    return path


class TestLatestTurn:
    """A secret in the turn after the last compaction."""

    def test_a_toml_redact_stage_redacts_the_latest_turn(self) -> None:
        """A TOML profile's `redact` stage: the latest turn's key is not in the request."""
        line, secret = PLANTED["openai_api_key"]
        manager = ContextManager(budget=100_000, policy=Policy.from_toml(REDACT_TOML))
        manager.add_system("You deploy services.")
        manager.add_user(f"Use this key:\n{line}")
        request = manager.render_sync().to_json()
        assert secret not in request
        assert "[REDACTED:openai_api_key]" in request
        assert manager.redactor is not None

    @pytest.mark.parametrize("switch", sorted(SWITCHES))
    def test_every_switch_redacts_every_new_turn(self, switch: str) -> None:
        """Whatever switched it on, each turn is redacted before the render after it."""
        manager = ContextManager(budget=100_000, policy=SWITCHES[switch]())
        manager.add_system("You deploy services.")
        for line, secret in PLANTED.values():
            manager.add_user(line)
            request = manager.render_sync().to_json()
            assert secret.splitlines()[1 if "\n" in secret else 0] not in request

    def test_the_pristine_record_keeps_the_original(self) -> None:
        """As documented: the raw record is the record; only what the model is shown changes."""
        line, secret = PLANTED["github_token"]
        manager = ContextManager(policy=Policy.from_toml(REDACT_TOML))
        manager.add_user(line)
        manager.render_sync()
        assert any(secret in node.text for node in manager.raw)

    def test_without_a_switch_nothing_is_redacted(self) -> None:
        """The default profile has no `redact` stage: the session is sent as it is."""
        line, secret = PLANTED["github_token"]
        manager = ContextManager(policy="coding")
        manager.add_user(line)
        assert manager.redactor is None
        assert secret in manager.render_sync().to_json()


class TestEchoes:
    """A secret found by its context, repeated bare in a later turn."""

    @pytest.mark.parametrize("switch", sorted(SWITCHES))
    def test_a_repeated_password_is_redacted_in_the_later_turn(self, switch: str) -> None:
        """`DB_PASSWORD=...` read in one turn, the bare password in the next: both hidden."""
        manager = ContextManager(policy=SWITCHES[switch]())
        manager.add_user(f"here is .env:\nDB_PASSWORD={PASSWORD}")
        manager.render_sync()
        manager.add_user(f"the login with {PASSWORD} failed, retry?")
        request = manager.render_sync().to_json()
        assert PASSWORD not in request
        assert request.count("[REDACTED:password]") == 2


_LINES = sorted(PLANTED)


@st.composite
def _sessions(draw: st.DrawFn) -> list[tuple[str, str, bool]]:
    """(kind of turn, its text, render after it): secrets planted at random turns."""
    turns = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["user", "tool", "note"]))
        filler = draw(st.sampled_from(["ok", "see below", "word " * 60]))
        planted = draw(st.one_of(st.none(), st.sampled_from(_LINES)))
        text = filler if planted is None else f"{filler}\n{PLANTED[planted][0]}\n{filler}"
        turns.append((kind, text, draw(st.booleans())))
    return turns


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    switch=st.sampled_from(sorted(SWITCHES)),
    turns=_sessions(),
    budget=st.sampled_from([None, 400, 4_000]),
)
def test_no_request_holds_a_planted_secret(
    switch: str, turns: list[tuple[str, str, bool]], budget: int | None
) -> None:
    """Any session, secrets at random turns, any switch, any budget: no request leaks."""
    manager = ContextManager(budget=budget, counter=WordCounter(), policy=SWITCHES[switch]())
    manager.add_system("You deploy services.")
    for index, (kind, text, render) in enumerate(turns):
        if kind == "tool":
            manager.add_assistant(
                tool_calls=[{"id": f"c{index}", "name": "bash", "arguments": {"cmd": "env"}}]
            )
            manager.add_tool_result(f"c{index}", text)
        elif kind == "note":
            manager.add_note(text)
        else:
            manager.add_user(text)
        if render or index == len(turns) - 1:
            try:
                request = manager.render_sync().to_json()
            except BudgetExceededError:  # a tiny budget may refuse: then nothing is sent
                continue
            assert leaks(request) == []


class _WordFinding:
    """A found word, with the `Finding` fields."""

    def __init__(self, start: int, end: int) -> None:
        self.type = "codeword"
        self.span = (start, end)


class WordRedactor:
    """A user's own redactor (no `SecretRedactor` subclass): hides one code word."""

    name = "word_redactor"
    screens_new_nodes = True

    def __init__(self, word: str = "bluebird-7731") -> None:
        self.word = word

    def secrets(self, targets: Sequence[Node]) -> dict[str, str]:
        return {self.word: "codeword"} if any(self.word in n.text for n in targets) else {}

    def knowing(self, known: Mapping[str, str]) -> WordRedactor:
        return self

    def redact(
        self, text: str, *, known: Mapping[str, str] | None = None
    ) -> tuple[str, tuple[_WordFinding, ...]]:
        start = text.find(self.word)
        found = () if start < 0 else (_WordFinding(start, start + len(self.word)),)
        return text.replace(self.word, "[HIDDEN]"), found

    def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        pairs = [
            (n, replacement_for(n, [TextPart(text=self.redact(n.text)[0])]))
            for n in targets
            if self.word in n.text
        ]
        return replace_each(
            self.name, ctx, pairs, note=lambda *_: "hid", shrink_only=False, purpose="safety"
        )


class TestOwnRedactor:
    """A redactor of one's own is found by its declaration, never by its class."""

    @pytest.mark.parametrize(
        "policy",
        [
            Policy(pipeline=[ObservationMasker(), WordRedactor()]),
            Policy(pipelines={"safety": [WordRedactor()]}),
            Policy(redact_secrets=WordRedactor()),
        ],
        ids=["default pipeline", "named pipeline", "redact_secrets"],
    )
    def test_it_screens_every_new_turn(self, policy: Policy) -> None:
        """Its word is hidden in the latest turn, before any compaction ran."""
        manager = ContextManager(budget=100_000, policy=policy)
        manager.add_user("the code word is bluebird-7731, keep it")
        request = manager.render_sync().to_json()
        assert "bluebird-7731" not in request
        assert "[HIDDEN]" in request
        assert isinstance(manager.redactor, WordRedactor)
        assert any("bluebird-7731" in node.text for node in manager.raw)

    def test_without_the_declaration_it_is_only_a_stage(self) -> None:
        """A redactor that does not declare `screens_new_nodes` runs only in compactions."""
        quiet = WordRedactor()
        quiet.screens_new_nodes = False
        manager = ContextManager(budget=100_000, policy=Policy(pipeline=[quiet]))
        manager.add_user("the code word is bluebird-7731")
        assert manager.redactor is None
        assert "bluebird-7731" in manager.render_sync().to_json()

    def test_a_declaration_without_the_methods_is_refused(self) -> None:
        """`screens_new_nodes = True` on a processor lacking `secrets` names what is missing."""

        class Pretender(ObservationMasker):
            screens_new_nodes = True

        with pytest.raises(ConfigurationError, match=r"`secrets`, `knowing`, `redact`"):
            ContextManager(policy=Policy(pipeline=[Pretender()]))

    @pytest.mark.parametrize("value", [None, 1, "yes", object()])
    def test_redact_secrets_refuses_what_is_no_redactor(self, value: object) -> None:
        """`redact_secrets` must be a bool or a `Redactor`; the message names the value."""
        with pytest.raises(ConfigurationError, match="redact_secrets"):
            ContextManager(policy=Policy(redact_secrets=value))  # type: ignore[arg-type]
