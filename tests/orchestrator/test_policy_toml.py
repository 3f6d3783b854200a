"""Every field of `Policy` in TOML: read with the place of each mistake, written back equal."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from context_graph.errors import ConfigurationError
from orchestrator import ContextManager
from orchestrator.compaction.guards import GuardConfig
from orchestrator.compaction.triggers import TriggerConfig
from orchestrator.policy import POLICIES, Policy, StageConfig, SummarizerConfig
from orchestrator.pricing import CachePrice
from processors.mask import ObservationMasker
from processors.redact import SecretRedactor
from processors.summarize import ExtractiveSummarizer

EVERY_FIELD = """
name = "everything"
description = "Every field, set."
compact_to = 0.5
background_timeout = false
compaction_timeout = 30
redact_secrets = { processor = "redact", options = { min_length = 12 } }
cache_breakpoints = true
expand_pin_turns = 5
auto_continue = true

[triggers]
soft_ratio = false
hard_ratio = 0.8
max_messages = 400
pipelines = { budget_hard = "light" }

[guards]
min_progress = 0.1
failure_cooldown_runs = false
cost_aware = true

[guards.price]
provider = "Acme"
model = "acme-1"
input_per_million = 2.0
read = 0.1
write = 1.25
minimum = 1024

[summarizer]
kind = "extractive"
options = { max_items = 8 }

[[stages]]
processor = "mask"
options = { keep_turns = 2 }

[[stages]]
processor = "summarize"

[[pipelines.light]]
processor = "truncate"
options = { max_tokens = 900 }
"""

EVERY_FIELD_POLICY = Policy(
    name="everything",
    description="Every field, set.",
    compact_to=0.5,
    background_timeout=None,
    compaction_timeout=30.0,
    redact_secrets=StageConfig(processor="redact", options={"min_length": 12}),
    cache_breakpoints=True,
    expand_pin_turns=5,
    auto_continue=True,
    triggers=TriggerConfig(
        soft_ratio=None, hard_ratio=0.8, max_messages=400, pipelines={"budget_hard": "light"}
    ),
    guards=GuardConfig(
        min_progress=0.1,
        failure_cooldown_runs=None,
        cost_aware=True,
        price=CachePrice("Acme", "acme-1", 2.0, 0.1, 1.25, 1024),
    ),
    summarizer=SummarizerConfig(kind="extractive", options={"max_items": 8}),
    pipeline=(
        StageConfig(processor="mask", options={"keep_turns": 2}),
        StageConfig(processor="summarize"),
    ),
    pipelines={"light": (StageConfig(processor="truncate", options={"max_tokens": 900}),)},
)


class TestEveryField:
    def test_every_field_reads(self) -> None:
        """A TOML file setting every field is the policy that sets them in Python."""
        assert Policy.from_toml(EVERY_FIELD) == EVERY_FIELD_POLICY

    def test_false_is_none_where_a_field_takes_none(self) -> None:
        """`false` turns off what `None` turns off: the soft trigger, a time limit."""
        policy = Policy.from_toml(
            'name = "x"\ncompaction_timeout = false\n[triggers]\nsoft_ratio = false\n'
        )
        assert policy.compaction_timeout is None
        assert policy.triggers.soft_ratio is None

    def test_left_out_fields_are_the_defaults(self) -> None:
        """Only a name: every other field as `Policy()` has it, the built-in pipeline too."""
        assert Policy.from_toml('name = "custom"\n') == Policy()

    def test_a_manager_builds_the_configs(self) -> None:
        """The summarizer and the redactor stage are built anew for every manager."""
        policy = Policy.from_toml(EVERY_FIELD)
        first = ContextManager("anthropic", 10_000, policy=policy)
        second = ContextManager("anthropic", 10_000, policy=policy)
        assert isinstance(first._options.summarizer, ExtractiveSummarizer)
        assert first._options.summarizer is not second._options.summarizer
        assert isinstance(first.redactor, SecretRedactor)
        assert first.redactor.min_length == 12
        assert first.redactor is not second.redactor

    def test_a_bad_summarizer_option_names_the_field(self) -> None:
        """A summarizer that refuses its options fails when a manager is made, named."""
        policy = Policy(summarizer=SummarizerConfig(kind="extractive", options={"colour": 1}))
        with pytest.raises(ConfigurationError, match=r"`summarizer`.*colour"):
            ContextManager(policy=policy)


class TestErrorsNameTheLine:
    @pytest.mark.parametrize(
        ("text", "place"),
        [
            ('name = "x"\n\n[triggers]\nsoft_ration = 0.5\n', r"line 4: .*`triggers\.soft_ration`"),
            ('name = "x"\ncompact_to = "0.5"\n', r"line 2: .*`compact_to`"),
            ('name = "x"\nauto_continue = 1\n', r"line 2: .*`auto_continue`"),
            ('name = "x"\nexpand_pin_turns = -1\n', r"line 2: .*`expand_pin_turns`"),
            ('name = "x"\nbackground_timeout = 0\n', r"line 2: .*`background_timeout`"),
            ('name = "x"\n[guards]\nfloor_tokens = "many"\n', r"line 3: .*`guards\.floor_tokens`"),
            ('name = "x"\n[guards.price]\nprovider = "a"\n', r"`guards\.price\.model`"),
            ('name = "x"\n[summarizer]\nkind = "gpt"\n', r"line 3: .*`summarizer\.kind`"),
            (
                'name = "x"\n[[stages]]\nprocessor = "mask"\n'
                '[[stages]]\nprocessor = "mask"\nopts = 1\n',
                r"line 6: .*`stages\[1\]\.opts`",
            ),
            (
                'name = "x"\nredact_secrets = { processor = "nope" }\n',
                r"`redact_secrets\[0\]` \(processor 'nope'\)",
            ),
        ],
    )
    def test_the_message_names_the_key_and_line(self, text: str, place: str) -> None:
        """Wrong types and unknown keys are named by key path and line."""
        with pytest.raises(ConfigurationError, match=place):
            Policy.from_toml(text)

    def test_a_file_is_named(self, tmp_path: Path) -> None:
        """A file's mistake starts with the file's path and the line."""
        path = tmp_path / "bad.toml"
        path.write_text('name = "x"\ncolour = 1\n', encoding="utf-8")
        with pytest.raises(ConfigurationError, match=rf"{path.name}, line 2: .*`colour`"):
            Policy.load(path)


class TestToToml:
    @pytest.mark.parametrize("name", sorted(POLICIES))
    def test_each_named_policy_round_trips(self, name: str) -> None:
        """A named policy written as TOML reads back equal."""
        assert Policy.from_toml(POLICIES[name].to_toml()) == POLICIES[name]

    def test_every_field_round_trips(self) -> None:
        """The policy setting every field reads back equal, and its TOML is valid TOML."""
        text = EVERY_FIELD_POLICY.to_toml()
        tomllib.loads(text)
        assert Policy.from_toml(text) == EVERY_FIELD_POLICY

    @pytest.mark.parametrize(
        ("changes", "field"),
        [
            ({"pipeline": (ObservationMasker(),)}, r"`stages\[0\]`"),
            ({"redact_secrets": SecretRedactor()}, "`redact_secrets`"),
            ({"summarizer": ExtractiveSummarizer()}, "`summarizer`"),
        ],
    )
    def test_an_instance_is_refused_by_its_field(
        self, changes: dict[str, object], field: str
    ) -> None:
        """An object TOML cannot name is refused, naming the field and the config to use."""
        policy = dataclasses.replace(Policy(), **changes)
        with pytest.raises(ConfigurationError, match=field):
            policy.to_toml()


_text = st.text(max_size=30)
_ratio = st.floats(min_value=0.01, max_value=1.0, allow_nan=False)
_seconds = st.one_of(st.none(), st.floats(min_value=0.001, max_value=1e6, allow_nan=False))
_count = st.one_of(st.none(), st.integers(1, 10_000))


@st.composite
def _policies(draw: st.DrawFn) -> Policy:
    """A policy of arbitrary scalar fields, triggers and guards (stages by name)."""
    try:
        triggers = TriggerConfig(
            soft_ratio=draw(st.one_of(st.none(), st.floats(0.3, 0.7))),
            hard_ratio=draw(st.one_of(st.none(), st.floats(0.75, 1.0))),
            hysteresis=draw(st.floats(0.01, 0.25)),
            max_messages=draw(_count),
            max_tool_output_tokens=draw(_count),
        )
    except ConfigurationError:
        assume(False)
        raise
    guards = GuardConfig(
        min_progress=draw(st.floats(0, 0.99)),
        regrow=draw(st.floats(0.01, 10)),
        stall_runs=draw(st.integers(1, 100)),
        failure_cooldown_runs=draw(_count),
        floor_tokens=draw(st.integers(0, 100_000)),
        cost_aware=draw(st.booleans()),
        expected_calls=draw(_count),
    )
    stages = draw(st.one_of(st.none(), st.just((StageConfig(processor="mask"),))))
    return Policy(
        name=draw(_text.filter(bool)),
        description=draw(_text),
        triggers=triggers,
        pipeline=stages,
        compact_to=draw(_ratio),
        guards=guards,
        background_timeout=draw(_seconds),
        compaction_timeout=draw(_seconds),
        redact_secrets=draw(st.booleans()),
        cache_breakpoints=draw(st.booleans()),
        expand_pin_turns=draw(st.integers(0, 50)),
        auto_continue=draw(st.booleans()),
    )


@settings(max_examples=150, deadline=None)
@given(policy=_policies())
def test_any_policy_round_trips_through_toml(policy: Policy) -> None:
    """Any policy of settable scalar fields -> TOML -> policy is the same policy."""
    assert Policy.from_toml(policy.to_toml()) == policy
