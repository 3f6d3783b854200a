from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from context_graph.errors import BudgetExceededError, ConfigurationError
from context_graph.graph.events import AgentEvent, AssistantTurn
from context_graph.graph.nodes import Node
from context_graph.importers import load_sessions
from context_graph.render import Renderer
from context_graph.validate.request import validate
from orchestrator.compaction.triggers import Firing, TriggerConfig
from orchestrator.manager import ContextManager
from orchestrator.policy import POLICIES, Policy, StageConfig, as_policy, get_policy
from orchestrator.policy.table import PolicyTable
from processors import registry
from processors.base import Processor, ProcessorContext, Proposal
from processors.distill import Distiller
from processors.mask import ObservationMasker
from processors.preamble_trees import PreambleTreeTrimmer
from processors.summarize import HistorySummarizer
from processors.thinking import ThinkingClearer
from processors.tool_inputs import ToolInputClearer
from processors.truncate import ToolOutputTruncator


def _default(policy: Policy) -> tuple[Processor, ...]:
    """The policy's default pipeline, built (new processors each call)."""
    pipeline, _ = policy.build_pipelines()
    assert pipeline is not None
    return pipeline


ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT.parent / "shared" / "traces"
DOC = ROOT / "docs" / "configuration.md"


class Noop:
    """A custom processor that proposes nothing, with one option."""

    name = "noop"

    def __init__(self, *, label: str = "x") -> None:
        if not label:
            msg = "Noop: `label` must not be empty"
            raise ConfigurationError(msg)
        self.label = label

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        """Propose no edit."""
        return Proposal(processor=self.name, edits=())


@pytest.fixture(name="noop")
def _noop() -> Iterator[type[Noop]]:
    registry.register_processor(Noop, name="noop_test")
    yield Noop
    registry.unregister_processor("noop_test")


def _events(kind: str) -> Sequence[AgentEvent]:
    """A mini-swe-agent session for `coding`, else the longest tau-bench session."""
    if kind == "coding":
        return load_sessions(next((TRACES / "mini_swe_agent_deepseek").rglob("*.traj.json")))[
            0
        ].events
    sessions = load_sessions(TRACES / "tau_bench_gpt4o_airline" / "gpt-4o-airline.sample12.json")
    return max(sessions, key=lambda s: len(s.events)).events


def _replay(profile: Policy, events: Sequence[AgentEvent]) -> tuple[int, int]:
    """Render before each assistant turn at half the raw size; (valid renders, over budget)."""
    raw = ContextManager(format="openai")
    raw.ingest(events)
    budget = Renderer(format="openai").render(raw.raw).tokens // 2
    manager = ContextManager(format="openai", budget=budget, policy=profile)
    rendered = exceeded = 0
    for index, event in enumerate(events):
        if isinstance(event, AssistantTurn) and index > 0:
            try:
                result = manager.render_sync()
            except BudgetExceededError:
                exceeded += 1
            else:
                assert validate(result.payload, "openai") == []
                rendered += 1
        manager.ingest([event])
    return rendered, exceeded


class TestNamedPolicies:
    def test_names(self) -> None:
        """The coding, service and chat policies are built in and found by name."""
        assert set(POLICIES) == {"coding", "service", "chat"}
        assert get_policy("coding") is POLICIES["coding"]

    def test_unknown_name(self) -> None:
        """An unknown policy name lists the known ones."""
        with pytest.raises(ConfigurationError, match="chat, coding, service"):
            get_policy("nope")

    def test_pipelines(self) -> None:
        """Each policy builds its stages cheapest first; chat only cuts tool outputs."""
        kinds = {name: [type(p) for p in _default(profile)] for name, profile in POLICIES.items()}
        assert kinds == {
            "coding": [
                PreambleTreeTrimmer,
                ThinkingClearer,
                ToolInputClearer,
                ObservationMasker,
                ToolOutputTruncator,
                Distiller,
                HistorySummarizer,
            ],
            "service": [ObservationMasker, ToolOutputTruncator, HistorySummarizer],
            "chat": [ToolOutputTruncator, HistorySummarizer],
        }

    def test_build_makes_new_processors(self) -> None:
        """Two builds share no processor instance."""
        profile = get_policy("coding")
        first, second = _default(profile), _default(profile)
        assert all(a is not b for a, b in zip(first, second, strict=True))

    def test_test_tools_truncate_errors_first(self) -> None:
        """The coding truncator keeps errors first for shell and test tools."""
        truncator = _default(get_policy("coding"))[4]
        assert isinstance(truncator, ToolOutputTruncator)
        assert truncator.policy_for("bash") == "errors_first"
        assert truncator.policy_for("run_unit_tests") == "errors_first"
        assert truncator.policy_for("read_file") == "head_tail"

    @pytest.mark.parametrize(
        "tool",
        # The shell tools as the agents name them (in ../shared/traces and the CLIs).
        ["Bash", "shell_command", "exec_command", "write_stdin", "run_shell_command"],
    )
    def test_every_agents_shell_tool_truncates_errors_first(self, tool: str) -> None:
        """Claude Code's `Bash` and the other CLIs' shell tools get errors first too
        (before, only the lower-case names did, so a failed run in Claude Code kept its
        head and tail and could lose the failure in between)."""
        truncator = _default(get_policy("coding"))[4]
        assert isinstance(truncator, ToolOutputTruncator)
        assert truncator.policy_for(tool) == "errors_first"

    @pytest.mark.skipif(not TRACES.exists(), reason="shared traces not present")
    @pytest.mark.parametrize(
        ("profile", "trace"), [("coding", "coding"), ("service", "service"), ("chat", "service")]
    )
    def test_replays_a_shared_trace_validly(self, profile: str, trace: str) -> None:
        """At half the raw size, every render before an assistant turn is a valid request."""
        events = _events(trace)
        rendered, exceeded = _replay(get_policy(profile), events)
        assert rendered > 0
        assert rendered + exceeded == sum(
            isinstance(e, AssistantTurn) and i > 0 for i, e in enumerate(events)
        )


class TestPolicyToml:
    def test_round_trip_with_a_custom_processor(self, noop: type[Noop]) -> None:
        """A registered processor is usable by name, and its options reach its constructor."""
        profile = Policy.from_toml(
            """
            name = "mine"
            compact_to = 0.5

            [triggers]
            soft_ratio = 0.6
            max_messages = 200

            [[stages]]
            processor = "noop_test"
            options = { label = "hello" }

            [[stages]]
            processor = "summarize"
            """
        )
        assert profile == Policy(
            name="mine",
            compact_to=0.5,
            triggers=TriggerConfig(soft_ratio=0.6, max_messages=200),
            pipeline=(
                StageConfig(processor="noop_test", options={"label": "hello"}),
                StageConfig(processor="summarize"),
            ),
        )
        assert profile.compact_to == 0.5
        assert profile.triggers.max_messages == 200
        stage = _default(profile)[0]
        assert isinstance(stage, noop) and stage.label == "hello"
        ContextManager(format="anthropic", budget=1_000, policy=profile)

    def test_load_policy_from_a_file(self, tmp_path: Path) -> None:
        """`Policy.load` reads a file, so does `policy=` with its path; a missing one names it."""
        path = tmp_path / "p.toml"
        path.write_text('name = "f"\n[[stages]]\nprocessor = "mask"\n', encoding="utf-8")
        assert Policy.load(path).pipeline == (StageConfig(processor="mask"),)
        manager = ContextManager(budget=1_000, policy=str(path))
        assert [type(p) for p in manager._options.default_stages] == [ObservationMasker]
        with pytest.raises(ConfigurationError, match=r"missing\.toml"):
            Policy.load(tmp_path / "missing.toml")

    def test_docs_example_loads(self) -> None:
        """The TOML example in docs/configuration.md is a valid policy."""
        block = re.search(r"```toml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
        assert block is not None
        profile = Policy.from_toml(block.group(1))
        assert profile.pipeline is not None
        assert len(_default(profile)) == len(profile.pipeline)

    @pytest.mark.parametrize(
        ("text", "place"),
        [
            ('name = "x"\n[[stages]\n', r"invalid TOML.*line 2"),
            ('name = "x"\ncolour = 1\n[[stages]]\nprocessor = "mask"\n', r"`colour`"),
            ('name = "x"\n[[stages]]\nprocessor = "mask"\nopts = {}\n', r"`stages\[0\]\.opts`"),
            (
                'name = "x"\n[triggers]\nsoft_ratio = -1\n[[stages]]\nprocessor = "mask"\n',
                r"`triggers\.soft_ratio`",
            ),
            ('name = "x"\n[triggers]\nsoft_ration = 0.5\n', r"`triggers\.soft_ration`"),
            ('name = "x"\ncompact_to = 2\n[[stages]]\nprocessor = "mask"\n', r"`compact_to`"),
            ('name = "x"\nstages = []\n', r"`stages`"),
            (
                'name = "x"\n[[stages]]\nprocessor = "mask"\n[[stages]]\nprocessor = "nope"\n',
                r"`stages\[1\]` \(processor 'nope'\).*no processor named 'nope'",
            ),
            (
                'name = "x"\n[[stages]]\nprocessor = "truncate"\noptions = { max_tokens = 1 }\n',
                r"`stages\[0\]` \(processor 'truncate'\).*max_tokens",
            ),
            (
                'name = "x"\n[[stages]]\nprocessor = "mask"\noptions = { keep = 1 }\n',
                r"`stages\[0\]` \(processor 'mask'\).*TypeError.*keep",
            ),
        ],
    )
    def test_errors_name_the_place(self, text: str, place: str) -> None:
        """Malformed TOML, unknown keys, unknown processors and bad options say where."""
        with pytest.raises(ConfigurationError, match=place):
            Policy.from_toml(text)

    def test_custom_processor_bad_option(self, noop: type[Noop]) -> None:
        """A custom processor refusing its options is reported with its stage."""
        text = 'name = "x"\n[[stages]]\nprocessor = "noop_test"\noptions = { label = "" }\n'
        with pytest.raises(ConfigurationError, match=r"`stages\[0\]` \(processor 'noop_test'\)"):
            Policy.from_toml(text)

    def test_direct_construction_errors(self) -> None:
        """Building a policy table in code with a bad field raises ConfigurationError too."""
        with pytest.raises(ConfigurationError, match=r"`stages\[0\]\.processor`"):
            PolicyTable(name="x", stages=({"processor": ""},))


class TestSoftTriggerShrinksOutputsOnly:
    def test_coding_soft_trigger_never_summarizes_while_the_request_fits(self) -> None:
        """Opted in, the soft trigger runs the outputs pipeline; the hard one may summarize."""
        from context_graph.testing import WordCounter
        from orchestrator import GuardConfig, TriggerConfig

        # The named policy has no soft trigger; `pipelines.outputs` is there to opt in.
        triggers = TriggerConfig(
            soft_ratio=0.7, hard_ratio=0.9, pipelines={"budget_soft": "outputs"}
        )
        manager = ContextManager(
            budget=3_000,
            counter=WordCounter(),
            policy=get_policy("coding").replace(
                triggers=triggers, guards=GuardConfig(floor_tokens=0)
            ),
        )
        fired: list[Firing] = []
        manager.bus.connect("trigger_fired", lambda _sender, firing: fired.append(firing))
        manager.add_system("You are a careful agent.")
        manager.add_user("Fix the bug.")
        for step in range(4):
            manager.add_assistant(f"Step {step}.", [{"id": f"c{step}", "name": "bash"}])
            manager.add_tool_result(f"c{step}", " ".join(f"w{step}x{n}" for n in range(520)))
            manager.add_user(f"Go on {step}.")
        # The soft trigger fired on ingest (2,100+ of 3,000), and only it.
        assert [f.name for f in fired] == ["budget_soft"]
        assert fired[0].pipeline == "outputs"
        manager.render_sync()
        processors = {entry.processor for entry in manager.working.audit()}
        assert processors and "summarize" not in processors


class TestChatWithTools:
    """A chat that calls a tool now and then (a web search): a large result is cut, the
    history already sent stays, and the prompt cache with it."""

    @staticmethod
    def _manager(profile: Policy) -> ContextManager:
        manager = ContextManager(budget=6_000, policy=profile)
        manager.add_system("You are a helpful assistant with a web search tool.")
        for turn in range(6):
            manager.add_user(f"Question {turn}: what changed in release {turn}.{turn}?")
            manager.add_assistant(f"Release {turn}.{turn} " + "changed the parser. " * 40)
        return manager

    @staticmethod
    def _search(manager: ContextManager) -> None:
        manager.add_user("Search the changelog for the 7.0 breaking changes.")
        manager.add_assistant("Searching.", [{"id": "s1", "name": "web_search"}])
        page = "\n".join(f"- change {i}: renamed option opt_{i} to option_{i}" for i in range(900))
        manager.add_tool_result("s1", page)

    def test_a_large_tool_result_is_cut_and_the_sent_messages_stay(self) -> None:
        manager = self._manager(get_policy("chat"))
        before = manager.render_sync().payload["messages"]
        self._search(manager)
        after = manager.render_sync()
        assert after.tokens <= 6_000
        assert after.payload["messages"][: len(before)] == before  # the prefix is reused
        result = after.payload["messages"][-1]["content"]
        assert "change 0:" in result and "change 899:" in result  # head and tail kept
        assert "change 450:" not in result

    def test_summarize_alone_rewrites_the_history_instead(self) -> None:
        """Without the truncate stage the same session summarizes what was already sent."""
        chat = get_policy("chat")
        assert chat.pipeline is not None
        summary_only = chat.replace(pipeline=chat.pipeline[-1:])
        manager = self._manager(summary_only)
        before = manager.render_sync().payload["messages"]
        self._search(manager)
        after = manager.render_sync().payload["messages"]
        assert after[: len(before)] != before


class TestBuiltInTable:
    def test_the_named_policies_cannot_be_replaced_in_place(self) -> None:
        """`POLICIES` is read-only: a caller cannot swap a named policy for everyone."""
        with pytest.raises(TypeError):
            POLICIES["coding"] = POLICIES["chat"]  # type: ignore[index]
        assert POLICIES["coding"].name == "coding"


class TestPolicyValue:
    """One frozen value, derived with typed keywords, read the same way in every spelling."""

    def test_two_managers_of_one_named_policy_share_no_processor(self) -> None:
        """A policy of stages builds new processors per manager (no shared state)."""
        first = ContextManager(budget=1_000, policy="coding")
        second = ContextManager(budget=1_000, policy=get_policy("coding"))
        for name, stages in first._options.pipelines.items():
            others = second._options.pipelines[name]
            assert all(a is not b for a, b in zip(stages, others, strict=True))

    def test_a_users_own_processor_instances_are_used_as_given(self) -> None:
        """`Policy(pipeline=[...])` takes processor instances, as `pipeline=` did."""
        masker = ObservationMasker(keep_turns=1)
        manager = ContextManager(budget=1_000, policy=Policy(pipeline=[masker]))
        assert manager._options.default_stages == (masker,)

    def test_replace_changes_only_what_it_names(self) -> None:
        coding = get_policy("coding")
        changed = coding.replace(compact_to=0.5, redact_secrets=True)
        assert (changed.compact_to, changed.redact_secrets) == (0.5, True)
        assert (changed.triggers, changed.pipeline) == (coding.triggers, coding.pipeline)
        assert coding.compact_to == 0.7  # frozen: the named policy is unchanged
        with pytest.raises(TypeError, match="nope"):
            coding.replace(nope=1)  # type: ignore[call-arg]

    def test_a_policy_is_frozen(self) -> None:
        with pytest.raises(AttributeError):
            get_policy("chat").compact_to = 0.1  # type: ignore[misc]

    @pytest.mark.parametrize("value", [3, None, b"coding"])
    def test_a_policy_of_the_wrong_kind_is_named(self, value: object) -> None:
        with pytest.raises(ConfigurationError, match="ContextManager: `policy` must be a Policy"):
            as_policy(value)

    def test_a_bad_value_in_a_policy_names_the_field(self) -> None:
        with pytest.raises(ConfigurationError, match="compact_to"):
            ContextManager(budget=1_000, policy=Policy(compact_to=2.0))

    def test_a_misspelled_keyword_names_the_public_method(self, tmp_path: Path) -> None:
        """An option that is now the policy's, given to the manager, names the method."""
        with pytest.raises(TypeError, match=r"ContextManager\.__init__\(\).*'compact_to'"):
            ContextManager(budget=1_000, compact_to=0.5)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match=r"ContextManager\.open\(\).*'pipeline'"):
            ContextManager.open(tmp_path / "s.db", pipeline=[])  # type: ignore[call-arg]
        assert not (tmp_path / "s.db").exists()
        manager = ContextManager(budget=1_000)
        with pytest.raises(TypeError, match=r"fork\(\).*'profile'"):
            manager.fork(profile="chat")  # type: ignore[call-arg]

    def test_a_fork_takes_another_policy(self) -> None:
        manager = ContextManager(budget=1_000, policy="chat")
        manager.add_user("Hello.")
        same = manager.fork()
        other = manager.fork(policy="service")
        assert same._given.policy is get_policy("chat")
        assert other._given.policy is get_policy("service")


class TestTheDefaultIsMeasured:
    """A manager given no policy runs `coding`, the policy docs/benchmarks.md measures,
    wherever it is made: the constructor, `open`, the CLI and the integrations."""

    def test_the_constructor_and_open_run_coding(self, tmp_path: Path) -> None:
        coding = get_policy("coding")
        made = ContextManager(budget=1_000)
        assert made._given.policy is coding
        assert made._options.triggers == coding.triggers  # no soft trigger, hard at 0.95
        opened = ContextManager.open(tmp_path / "s.db", budget=1_000)
        try:
            assert opened._given.policy is coding
        finally:
            opened.close()

    def test_the_general_mechanics_are_a_policy_of_their_own(self) -> None:
        """`Policy()`: soft 0.7, hard 0.9, the default pipeline (what the default was)."""
        manager = ContextManager(budget=1_000, policy=Policy())
        assert (manager._options.triggers.soft_ratio, manager._options.triggers.hard_ratio) == (
            0.7,
            0.9,
        )
        assert [type(p) for p in manager._options.default_stages] == [
            ObservationMasker,
            ToolOutputTruncator,
            Distiller,
            HistorySummarizer,
        ]

    def test_the_integrations_run_coding(self) -> None:
        pytest.importorskip("langchain")
        pytest.importorskip("pydantic_ai")
        from orchestrator.integrations.langchain import ContextMiddleware
        from orchestrator.integrations.pydantic_ai import ContextHistory

        middleware = ContextMiddleware(budget=1_000)
        history = ContextHistory(budget=1_000)
        assert middleware.manager("t")._given.policy is get_policy("coding")
        assert history.manager("c")._given.policy is get_policy("coding")
