"""Guards against compaction loops: pure decisions on whether a stage may run now.

A compaction that frees too little, fails again and again, or keeps re-summarizing its
own summary rewrites the cached prompt prefix for nothing, every turn. The guards stop
that. Like the trigger evaluator they are pure: `allowed` and `record` read a frozen
`GuardState` and return a new one, so the caller (the manager, a replay, a test) holds
the state and passes it back in.

Per stage (keyed by the processor's name; two stages with one name share a record):

- minimum progress: a run that frees less than `min_progress` of the view's tokens
  *stalls* its stage. A stalled stage skips automatic runs until the view has grown by
  `regrow` (a share of its size when the stage stalled: there is new material to work
  on) or `stall_runs` pipeline runs have passed since it ran.
- consecutive failures: after `max_consecutive_failures` failed or rejected runs in a
  row the stage is disabled for automatic runs, until `failure_cooldown_runs` pipeline
  runs have passed since the last failure (`None`: until a manual run succeeds). A run
  that applies a proposal ends the streak; an empty proposal leaves it as it is.
- re-summarizing: once the stage rolled one summary chain `max_resummarize` times (a
  chain of length `max_resummarize + 1`), it stops running automatically.

Graph-wide, the floor: below `floor_tokens` in the view no automatic stage runs (a
compaction rewrites the cached prefix; under the floor the cache is worth more).

The cost guard (`cost_aware`, off by default) is the floor measured in money, per
proposal: `orchestrator.compaction.cost_guard` weighs what a stage proposed, after it
proposed and before it is applied; a proposal that waits is recorded as a stage that
freed nothing (so the minimum-progress stall holds the stage until the view has grown).

A manual run (`manual=True`, i.e. `compact()`) bypasses every guard: a request from the
user is not a loop. Its outcome is still recorded, and it resets the stage's failure
streak first, so a manual run that works re-enables a disabled stage.

Pipeline runs are counted by `tick`, called once at the start of every run.

A failure that disables a stage is worth telling whoever runs the agent, not only a bus
receiver: `disabled_notice` words it, and the pipeline logs it as a warning on the
`context_graph` logger.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict, Unpack

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from context_graph._keywords import check_keywords
from context_graph.errors import ConfigurationError
from orchestrator.pricing import CachePrice

__all__ = [
    "GuardConfig",
    "GuardFields",
    "GuardState",
    "StageOutcome",
    "StageRecord",
    "allowed",
    "disabled_notice",
    "record",
    "tick",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class GuardFields(TypedDict, total=False):
    """The keywords `GuardConfig(...)` takes: its fields, each documented there."""

    min_progress: float
    regrow: float
    stall_runs: int
    max_consecutive_failures: int
    failure_cooldown_runs: int | None
    max_resummarize: int
    floor_tokens: int
    cost_aware: bool
    price: CachePrice | None
    expected_calls: int | None


class GuardConfig(BaseModel):
    """The loop guards' limits. Invalid options raise `ConfigurationError`."""

    model_config = _FROZEN

    min_progress: float = Field(0.05, ge=0, lt=1)
    """Share of the view's tokens a run must free, else its stage stalls (0 turns it off)."""
    regrow: float = Field(0.1, gt=0)
    """Share by which the view must grow past its size at the stall to retry a stage."""
    stall_runs: int = Field(10, ge=1)
    """Pipeline runs after which a stalled stage retries anyway."""
    max_consecutive_failures: int = Field(3, ge=1)
    """Failed or rejected runs in a row that disable a stage for automatic runs."""
    failure_cooldown_runs: int | None = Field(20, ge=1)
    """Pipeline runs after the last failure that re-enable it; `None`: only a manual run."""
    max_resummarize: int = Field(3, ge=0)
    """How often one summary chain may be rolled by automatic runs (0: never)."""
    floor_tokens: int = Field(1024, ge=0)
    """View tokens below which automatic compaction never runs (0 turns it off)."""
    cost_aware: bool = False
    """Let a proposal wait when rewriting the cached prompt costs more than it saves over
    the calls expected (`orchestrator.compaction.cost_guard`); never when a request does
    not fit. With it, the relief pass (new outputs only) goes on to the run's low-water
    mark instead of stopping under the level that fired. Off by default: it changes
    when compaction happens, so turning it on is the user's choice (and keeps every
    request rendered without it as it was)."""
    price: CachePrice | None = None
    """The caching prices the cost guard weighs with (`orchestrator.pricing.price_for`);
    `None`: those of the manager's format (OpenAI's outside a manager)."""
    expected_calls: int | None = Field(None, ge=1)
    """The calls the cost guard counts the saving over; `None`: as many as the session
    has made so far (at least 1)."""

    def __init__(self, **data: Unpack[GuardFields]) -> None:
        check_keywords("GuardConfig()", data, GuardFields)
        try:
            super().__init__(**data)
        except ValidationError as exc:
            problems = "; ".join(
                f"`{'.'.join(str(p) for p in e['loc']) or 'config'}`: {e['msg']}"
                for e in exc.errors()
            )
            msg = f"GuardConfig: {problems}"
            raise ConfigurationError(msg) from None


class StageOutcome(BaseModel):
    """What one run of one stage did, as `record` needs it."""

    model_config = _FROZEN

    view_tokens: int = Field(ge=0)
    """The view's tokens when the stage started."""
    freed: int = 0
    """Tokens the applied proposal saved (0 when nothing was applied)."""
    failed: bool = False
    """The processor raised."""
    rejected: bool = False
    """The invariant checker refused its proposal."""
    applied: bool = False
    """Its proposal was applied."""
    chain_length: int = Field(0, ge=0)
    """The longest summary chain the applied proposal produced (1: a first summary)."""
    manual: bool = False
    """The run was manual (`compact()`)."""
    error: str = ""
    """Why it failed or was rejected (the processor's error, the checker's reason)."""
    waited: bool = False
    """The cost guard held its proposal back (nothing was applied)."""
    rewritten_from: int | None = None
    """With the cost guard, once applied: the view's tokens before the first node the
    run's applied proposals changed so far (the cache holds no more)."""


class StageRecord(BaseModel):
    """What the guards remember about one stage."""

    model_config = _FROZEN

    ran_at: int = 0
    """The pipeline run (`GuardState.runs`) in which the stage last ran."""
    view_tokens: int = 0
    """The view's tokens when it last ran."""
    freed: int = 0
    """Tokens its last run freed."""
    failures: int = 0
    """Failed or rejected runs in a row."""
    failed_at: int = 0
    """The pipeline run of the last failure."""
    chain_length: int = 0
    """The longest summary chain it last produced (0: none yet)."""


class GuardState(BaseModel):
    """Per-stage records and the pipeline-run count; immutable, so decisions stay pure."""

    model_config = _FROZEN

    runs: int = 0
    """Pipeline runs so far (`tick` counts them)."""
    stages: Mapping[str, StageRecord] = Field(default_factory=dict)
    """Stage name -> its record; never mutated, `record` builds a new mapping."""


def tick(state: GuardState) -> GuardState:
    """The state at the start of one more pipeline run."""
    return state.model_copy(update={"runs": state.runs + 1})


def allowed(
    stage_name: str,
    state: GuardState,
    view_tokens: int,
    manual: bool,
    *,
    config: GuardConfig | None = None,
) -> tuple[bool, str]:
    """Whether `stage_name` may run now, and why (a reason starting "guard: " when not).

    Pure: the same arguments give the same answer. Checks, in order: manual (always
    allowed), the floor, the failure limit, minimum progress, the re-summarize cap.

    Args:
        stage_name: The stage's processor name.
        state: The guard state (start with `GuardState()`, `tick` it once per run).
        view_tokens: The view's tokens now.
        manual: Whether this is a manual run (bypasses every guard).
        config: The limits; `GuardConfig()` by default.
    """
    config = config if config is not None else GuardConfig()
    if manual:
        return True, "manual run"
    if view_tokens < config.floor_tokens:
        return False, (
            f"guard: the view has {view_tokens} tokens, under the floor of "
            f"{config.floor_tokens}; automatic compaction waits"
        )
    stage = state.stages.get(stage_name)
    if stage is None:
        return True, "first run"
    reasons = (
        _failing(stage_name, stage, state, config),
        _stalled(stage_name, stage, state, view_tokens, config),
        _capped(stage_name, stage, config),
    )
    for reason in reasons:
        if reason is not None:
            return False, reason
    return True, "no guard applies"


def _failing(name: str, stage: StageRecord, state: GuardState, config: GuardConfig) -> str | None:
    if stage.failures < config.max_consecutive_failures:
        return None
    cooldown = config.failure_cooldown_runs
    since = state.runs - stage.failed_at
    if cooldown is not None and since >= cooldown:
        return None
    until = "a manual compact" if cooldown is None else f"{cooldown - since} more runs"
    return f"guard: stage `{name}` failed {stage.failures} times in a row; disabled until {until}"


def _stalled(
    name: str, stage: StageRecord, state: GuardState, view_tokens: int, config: GuardConfig
) -> str | None:
    share = stage.freed / stage.view_tokens if stage.view_tokens else 0.0
    if share >= config.min_progress or config.min_progress == 0:
        return None
    regrown = stage.view_tokens * (1 + config.regrow)
    if view_tokens >= regrown or state.runs - stage.ran_at >= config.stall_runs:
        return None
    return (
        f"guard: stage `{name}` freed {share:.1%} of {stage.view_tokens} tokens last time "
        f"(under {config.min_progress:.1%}); it waits until the view reaches "
        f"{regrown:.0f} tokens or {config.stall_runs} runs passed"
    )


def _capped(name: str, stage: StageRecord, config: GuardConfig) -> str | None:
    rolled = stage.chain_length - 1
    if rolled < config.max_resummarize:
        return None
    return (
        f"guard: stage `{name}` rolled its summary chain {rolled} times "
        f"(the cap is {config.max_resummarize}); run compact() to summarize again"
    )


def record(state: GuardState, stage_name: str, outcome: StageOutcome) -> GuardState:
    """The state after `stage_name` ran with `outcome` (pure; `state` is unchanged)."""
    before = state.stages.get(stage_name, StageRecord())
    failures = 0 if outcome.manual else before.failures
    failed_at = before.failed_at
    if outcome.failed or outcome.rejected:
        failures += 1
        failed_at = state.runs
    elif outcome.applied:
        failures = 0
    after = StageRecord(
        ran_at=state.runs,
        view_tokens=outcome.view_tokens,
        freed=max(0, outcome.freed),
        failures=failures,
        failed_at=failed_at,
        chain_length=outcome.chain_length or before.chain_length,
    )
    return state.model_copy(update={"stages": {**state.stages, stage_name: after}})


def disabled_notice(
    state: GuardState, stage_name: str, outcome: StageOutcome, config: GuardConfig
) -> str | None:
    """What to tell when the failure `outcome` left `stage_name` disabled; else `None`.

    Pure. `state` is the one `record` returned for that outcome. Each such failure is
    one warning: a disabled stage does not run automatically, so the next failure comes
    only after the cool-down, and disables it again.
    """
    stage = state.stages.get(stage_name)
    failed = outcome.failed or outcome.rejected
    if not failed or stage is None or stage.failures < config.max_consecutive_failures:
        return None
    cooldown = config.failure_cooldown_runs
    off = (
        "until a manual compact() succeeds"
        if cooldown is None
        else f"for the next {cooldown} pipeline runs (or until a manual compact() succeeds)"
    )
    what = "failed" if outcome.failed else "had its proposal rejected"
    error = outcome.error or "no reason given"
    return (
        f"guard: processor `{stage_name}` {what} {stage.failures} times in a row "
        f"(last error: {error}); automatic compaction skips it {off}"
    )
