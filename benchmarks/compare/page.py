"""docs/benchmarks.md, assembled from what was just measured."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from benchmarks.compare import dollars, fidelity, report
from benchmarks.compare.compaction import CompactionRow
from benchmarks.compare.contenders import ContenderSpec
from benchmarks.compare.facts import KINDS
from benchmarks.compare.hotspots import Hotspot
from benchmarks.compare.ideal_drop import bound_line
from benchmarks.compare.runner import Run
from benchmarks.compare.sessions import Session
from benchmarks.compare.stats import fit_split, kind_shares, summarize

PACKAGES = ("tiktoken", "langchain-core", "autogen-core", "matplotlib", "openai")


@dataclass
class Measured:
    """Everything the page shows."""

    specs: list[ContenderSpec]
    sessions: list[Session]
    budgets: tuple[str, ...]
    runs: list[Run]
    compactions: list[CompactionRow]
    plots: list[tuple[str, str]]
    """(image path relative to the page, caption)."""
    section_plots: dict[str, tuple[str, str]] = field(default_factory=dict)
    """A plot that goes with one section (`"dollars"`), as (path, caption)."""
    notes: list[str] = field(default_factory=list)
    """Skipped peers, missing plots, sampling."""
    hotspots: dict[str, list[Hotspot]] = field(default_factory=dict)
    """Per profile of ours, where its time went (one profiled replay)."""
    hotspot_run: str = ""
    """Which session and budget the profiled replay was."""
    fast: bool = False
    seconds: float = 0.0
    ideal_drop: list[Run] = field(default_factory=list)
    """The ideal drop compactor's replays (`benchmarks.compare.ideal_drop`), the bound
    the prefix target is set beside."""
    later_targets: list[str] = field(default_factory=list)
    """Rows of the targets table from the sections after the comparison (the long
    session's), as `| target | measured | met |`."""


def _versions() -> str:
    found = []
    for name in PACKAGES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} not installed")
    return ", ".join(found)


def _commit() -> str:
    """` at commit abc1234` (and whether the code had changes), or nothing without git."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
        )
        dirty = subprocess.run(
            # docs/ is what this run writes (the page, the plots): not a change of code.
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!docs"],
            cwd=root,
            capture_output=True,
            text=True,
        )
    except OSError:
        return ""
    if head.returncode != 0:
        return ""
    changes = " with uncommitted changes" if dirty.stdout.strip() else ""
    return f" at commit {head.stdout.strip()}{changes}"


def _header(m: Measured) -> list[str]:
    today = datetime.date.today().isoformat()
    mode = "`python -m benchmarks --fast`" if m.fast else "`python -m benchmarks`"
    return [
        "# Benchmarks",
        "",
        f"Every number on this page was measured by {mode}{_commit()} on {today}, in "
        f"{m.seconds / 60:.1f} minutes, on {platform.system()} with {os.cpu_count()} cores, "
        f"Python {platform.python_version()} ({_versions()}). Rerun it to regenerate the "
        "page and its plots; `--fast` replays a few small sessions at one budget (the test "
        "suite runs it), `--only FAMILY` one session family, `--out PATH` writes elsewhere.",
        "",
    ]


def _method(m: Measured) -> list[str]:
    families = sorted({s.family for s in m.sessions})
    calls = sum(len(s.calls) for s in m.sessions)
    subagents = sum(s.subagent for s in m.sessions)
    rows = [f"| {spec.name} | {spec.settings} |" for spec in m.specs]
    return [
        "## Against the peers on real sessions",
        "",
        f"**Sessions.** {len(m.sessions)} sessions ({subagents} of them Claude Code "
        f"sub-agent sessions, replayed like the others) from {len(families)} families in "
        f"../shared/traces, {calls:,} model calls in all. Each session is replayed event "
        "by event; at every point where the recorded agent called its model "
        "(`orchestrator.replay.model_call_points`: right before each assistant turn, and "
        "after the last event) every contender produces the request it would send. "
        f"Budgets: {', '.join(m.budgets)} (the percentages are of the session's final raw "
        "size, the whole session rendered with no budget; 8k is 8,000 tokens).",
        "",
        "**Contenders.** Each is made fresh for each session and budget and fed the same "
        "events; every request is converted to an OpenAI Chat Completions body and counted "
        "with the same counter (cl100k_base, offline; `context_graph.render.count_payload`).",
        "",
        "| contender | settings |",
        "|---|---|",
        *rows,
        "",
        "Peers' message counts cannot follow a token budget, so AutoGen's sizes are chosen "
        "at each call as the largest that fits (the best any fixed setting could do there). "
        "OpenHands' observation masking is a reimplementation: `openhands-sdk` needs "
        "Python >= 3.12 and has no masking condenser (only an LLM summarizer, which needs a "
        "model); the masking condenser and its defaults (`attention_window` 100 in "
        "`ObservationMaskingCondenserConfig`, 5 in the class) are in OpenHands V0, "
        "`openhands/memory/condenser/impl/observation_masking_condenser.py` and "
        "`openhands/core/config/condenser_config.py` (see also ../shared/research/peers.md, "
        "section 2). It keeps each masked result paired with its call, which V0 does not: "
        "this errs in its favour.",
        "",
        "**Measures.**",
        "",
        "- *Engine time*: the contender's own work, taking each event and answering each "
        "call (converting messages, choosing AutoGen's sizes and measuring are outside the "
        "timed spans), against the *floor*: tokenizing each node's text once (best of 3, "
        "in a loop that does nothing else). Every replay starts with the library's "
        "process-wide memos empty (`processors.clear_caches`), as in a new process. The "
        "tokenizer's part of it is timed inside the same spans (`TokenizerClock`: every "
        "`TiktokenCounter.count` call, for every contender).",
        "- *Peak memory*: `tracemalloc` peak during a second replay of the same session, "
        "without measuring, so that tracing does not slow the timed pass; the agent's own "
        "message objects are made before tracing starts.",
        "- *Sent / raw*: tokens sent over the raw size at the answered calls.",
        "- *Invalid*: calls whose request breaks a rule of our validator "
        "(`context_graph.validate.request`, OpenAI), and calls whose messages do not conform to "
        "the `openai` SDK's request types (`ChatCompletionMessageParam`, walked key by key) "
        "or that send no message at all.",
        "- *Retention*: at each call, the share of the reference entities present verbatim "
        "in the request (a tool call's arguments read decoded, as the model reads them). "
        "The reference: critical entities (`context_graph.entities`: "
        "identifiers, paths, numbers, error names) of the user's turns (not a harness's "
        "notices: Gemini CLI's folder tree, SWE-agent's demonstration) and tool errors in "
        "view so far, plus the values in the gold actions and outputs tau-bench and tau2 "
        "record, once they have appeared in the history. A recorded compaction (Claude "
        "Code's) resets the view for everyone. *Retention* counts a refused call as 0; "
        "*within budget* also counts a request over the budget as 0. Calls with an empty "
        "reference are left out.",
        "- *Prefix stability*: the share of calls after the first whose request starts "
        "with the previous request's messages (prompt-cache reuse); a refused call does "
        "not count as reuse.",
        "- *Refused*: context-graph raises `BudgetExceededError` when even its floor "
        "(system, pinned notes, first request, latest turn and what follows) does not fit. "
        "Nothing is sent: it is not an invalid request, and it is not a success.",
        "",
    ]


def _results(m: Measured) -> list[str]:
    names = [spec.name for spec in m.specs]
    families = sorted({s.family for s in m.sessions})
    out = ["### Results", ""]
    for label in m.budgets:
        out += [f"Budget {label}:", "", report.summary_table(m.runs, names, label), ""]
    out += [
        "Rules of our validator the requests broke (a call counts once per rule):",
        "",
        report.rules_table(m.runs, names),
        "",
        *_reading(),
        "### Which facts are kept",
        "",
        "Within budget, pooled over every call, by where the expected entity came from "
        f"(budget {_main_budget(m)}):",
        "",
        report.kinds_table(m.runs, names, _main_budget(m)),
        "",
        "### Retention within budget, per session family",
        "",
    ]
    for label in m.budgets:
        out += [
            f"Budget {label}:",
            "",
            report.family_table(m.runs, names, families, label),
            "",
        ]
    for path, caption in m.plots:
        out += [f"![{caption}]({path})", "", f"*{caption}.*", ""]
    return out + _time_split(m)


def _time_split(m: Measured) -> list[str]:
    names = [spec.name for spec in m.specs]
    return [
        "### Where the engine time goes",
        "",
        "Engine time split into the tokenizer (inside the timed spans) and everything "
        "else, each over the floor. *Text tokenized* is the characters the contender had "
        "the counter encode over the characters the floor encodes; *cost per character* "
        "compares the tokenizer's time per character there with the floor's. The floor "
        "encodes its texts back to back, best of 3, so the tokenizer's tables and the "
        "texts are in the processor's caches; inside an engine the same encoding runs "
        "between other work. *One call* is the engine time between two model calls: "
        "the events fed since the previous call and the request.",
        "",
        report.time_table(m.runs, names, m.budgets),
        "",
        "The former target of at most 2x the floor is retired: what users feel on a long "
        "session is the time per call as the history grows, measured with its own targets "
        "in the long-session section below.",
        "",
        *(f"- **{s.name}**: " + _engine_time_line(m.runs, s.name) for s in m.specs if s.ours),
        "",
    ]


def _main_budget(m: Measured) -> str:
    return "50%" if "50%" in m.budgets else m.budgets[0]


def _reading() -> list[str]:
    return [
        "How to read these rows:",
        "",
        "- AutoGen's sizes are picked at every call with that call's budget in hand, which "
        "no fixed setting can do: its rows are the best its contexts could reach.",
        "- OpenHands' masking does not look at the budget: *retention* is what it sends, "
        "*within budget* what would have fitted.",
        '- LangChain with `start_on="human"` keeps nothing after the system message once '
        "the latest user message no longer fits, which is what happens in a long tool loop "
        "after the task.",
        "- context-graph refuses (raises `BudgetExceededError`) instead of sending a "
        "request without the system prompt, the first request or the latest turn. Where "
        "the system prompt and the task alone are larger than the budget (short sessions "
        "at 25% and 50%), no engine can send both; the targets section counts those calls.",
        "",
    ]


def _targets(m: Measured) -> list[str]:
    ours = [s.name for s in m.specs if s.ours]
    peers = [s.name for s in m.specs if not s.ours]
    verdicts = report.judge(m.runs, ours, peers, m.budgets)
    out = [
        "### The issue's targets",
        "",
        "Judged on the numbers above; retention is the within-budget figure, against the "
        "best peer at the same budget; each probe kind is judged against the peer with the "
        "highest share of it there (a request over the budget passes no probe), and fill "
        "at the calls that were compacted.",
        "",
        report.verdict_table(verdicts, ours),
        "",
    ]
    if m.later_targets:
        out += [
            "The later sections' targets, from this run: time per call on a long session "
            "(context-graph coding against `trim_messages`) and the planted facts (each in "
            "its section below):",
            "",
            "| target | measured | met |",
            "|---|---:|---|",
            *m.later_targets,
            "",
        ]
    missed = [v for v in verdicts if not v.met]
    if missed:
        out += ["Where the targets are missed, the data says:", ""]
        out += _diagnosis(m, missed, ours)
    return out


def _diagnosis(m: Measured, missed: Sequence[report.Verdict], ours: Sequence[str]) -> list[str]:
    out: list[str] = []
    label = "50%" if "50%" in m.budgets else m.budgets[0]
    for name in ours:
        mine = {v.target for v in missed if v.profile == name}
        if not mine:
            continue
        s = summarize(m.runs, name, label)
        runs = [r for r in m.runs if r.contender == name and r.budget_label == label]
        out.append(f"- **{name}** misses: {', '.join(sorted(mine))}.")
        if any(t.startswith("retention") for t in mine):
            hopeless = sum(row.refused for r in runs if r.task_tokens > r.budget for row in r.rows)
            out += [
                f"  At {label}: {s.refused:,} of {s.calls:,} calls refused, {hopeless:,} of them "
                "in sessions whose system prompt and first request alone do not fit the "
                "budget (no engine can send both there); retention over the answered calls "
                f"alone {report.share(s.retention_answered)}. Lowest sessions:",
                *("  " + line for line in report.worst_sessions(m.runs, name, label).split("\n")),
                "  " + _fit_line(m, name, label),
                "  " + _kind_line(m, name, label),
            ]
        if any(t.startswith("prefix") for t in mine):
            out.append(
                f"  Prefix stability at {label} over pairs of answered calls only: "
                f"{report.share(s.prefix_answered, 2)} (a refused call breaks the chain)."
            )
            out.append("  " + _tight_line(runs))
    bound = bound_line(m.ideal_drop, label)
    if bound and any(v.target.startswith("prefix") for v in missed):
        out.append(f"- **Prefix stability against fill**: {bound}")
    return [*out, "", *_hotspots(m)]


def _engine_time_line(runs: Sequence[Run], name: str) -> str:
    """Where `name`'s engine time goes over every budget: ingest, answering, tokenizer."""
    split = report.time_split(runs, name)
    line = (
        f"Over every budget: taking the events (ingest) costs {split.feed:.1f}x the "
        f"floor ({split.feed_tokenizer:.1f}x of it the tokenizer), answering the calls "
        f"(triggers, compaction, render) {split.answer:.1f}x. "
        f"The tokenizer alone takes {split.tokenizer:.2f}x the floor: {split.text:.2f}x the "
        f"floor's text, at {report.share(split.per_char, 2)}x its cost per character; "
        f"everything else takes {split.rest:.2f}x."
    )
    if split.tokenizer > 2:
        line += (
            " The tokenizer alone is over the 2x target: no saving elsewhere can meet it "
            "while the engine encodes this much text."
        )
    return line


def _tight_line(runs: Sequence[Run]) -> str:
    """How many prefix misses come from sessions whose task fills most of the budget."""

    def misses(chosen: Sequence[Run]) -> tuple[int, int]:
        pairs = [row for r in chosen for row in r.rows[1:]]
        return sum(1 for row in pairs if not row.prefix_reused), len(pairs)

    tight = [r for r in runs if 2 * r.task_tokens > r.budget]
    rest = [r for r in runs if 2 * r.task_tokens <= r.budget]
    (missed, _), (tight_missed, _) = misses(runs), misses(tight)
    rest_missed, rest_pairs = misses(rest)
    rest_share = report.share(1 - rest_missed / rest_pairs, 2) if rest_pairs else "n/a"
    return (
        f"{tight_missed:,} of the {missed:,} misses are in the {len(tight):,} sessions whose "
        "system prompt and first request alone take more than half the budget (what is left "
        "holds a few turns, so nearly every call compacts); over the other "
        f"{len(rest):,} sessions prefix stability is {rest_share}."
    )


def _fit_line(m: Measured, name: str, label: str) -> str:
    mine = fit_split(m.runs, name, label)
    peers = [s.name for s in m.specs if not s.ours]
    best = max(
        ((p, fit_split(m.runs, p, label)) for p in peers),
        key=lambda item: item[1].over_retention or 0.0,
        default=None,
    )
    line = (
        f"Calls where the whole history fitted the budget: {mine.fit_calls:,}, retention "
        f"{report.share(mine.fit_retention)}; {mine.fit_lossy:,} of them lost an entity "
        "(the profile compacts once the view reaches its trigger ratio, before the budget "
        "itself is reached). "
        f"Calls where it did not fit: {mine.over_calls:,}, retention "
        f"{report.share(mine.over_retention)}"
    )
    if best is not None:
        line += f" (best peer there: {best[0]}, {report.share(best[1].over_retention)})"
    return line + "."


def _kind_line(m: Measured, name: str, label: str) -> str:
    """The kind of entity where `name` trails the best peer most."""
    mine = kind_shares(m.runs, name, label)
    gaps: list[tuple[float, str, float, str, float]] = []
    for index, kind in enumerate(KINDS):
        if mine[index] is None:
            continue
        for spec in m.specs:
            theirs = None if spec.ours else kind_shares(m.runs, spec.name, label)[index]
            if theirs is not None:
                gaps.append(
                    (theirs - (mine[index] or 0.0), kind, mine[index] or 0.0, spec.name, theirs)
                )
    if not gaps:
        return "No peer to compare the kinds of entities with."
    gap, kind, own, peer, theirs = max(gaps)
    words = {"user": "user turns", "error": "tool errors", "gold": "gold facts"}[kind]
    if gap <= 0:
        return "By kind of entity, no peer keeps more than this profile does."
    return (
        f"By kind of entity, the widest gap is in those from {words}: {own:.3f} kept, "
        f"against {theirs:.3f} for {peer}."
    )


def _hotspots(m: Measured) -> list[str]:
    if not m.hotspots:
        return []
    out = [
        f"Where context-graph's time goes: one replay of {m.hotspot_run} under cProfile, "
        "the library's functions with the most time in and below them (the entry points "
        "aside), as a share of the library's time:",
        "",
    ]
    for name, spots in m.hotspots.items():
        out += [f"{name}:", "", report.hotspot_table(spots), ""]
    return out


def _compaction(m: Measured) -> list[str]:
    if not m.compactions:
        return []
    return [
        "### Claude Code's own compaction against ours",
        "",
        "Claude Code compacted these sessions itself (a model-written summary, recorded "
        "in the session). For the span each compaction replaced: how many of the watched "
        "entities (user turns and tool errors, as in retention) and of every critical "
        "entity of the span each summary holds verbatim. Ours is the deterministic "
        "`ExtractiveSummarizer` (what `HistorySummarizer` uses without a model) over the "
        "same span, with Claude Code's summary size as its bound.",
        "",
        report.compaction_table(m.compactions),
        "",
    ]


def _dollars(m: Measured) -> list[str]:
    out = dollars.dollars_section(m.runs, [spec.name for spec in m.specs], m.budgets)
    return out + _plot_lines(m, "dollars")


def _plot_lines(m: Measured, section: str) -> list[str]:
    if section not in m.section_plots:
        return []
    path, caption = m.section_plots[section]
    return [f"![{caption}]({path})", "", f"*{caption}.*", ""]


def build_page(m: Measured, tail: Sequence[str]) -> str:
    """The whole page; `tail` are the other benchmarks' sections."""
    lines = [
        *_header(m),
        *_method(m),
        *_results(m),
        *fidelity.probe_section(m.runs, [spec.name for spec in m.specs], m.budgets),
        *_dollars(m),
        *_targets(m),
        *_compaction(m),
    ]
    if m.notes:
        lines += ["### Notes on this run", "", *(f"- {note}" for note in m.notes), ""]
    body = "\n".join(lines).rstrip() + "\n"
    for section in tail:
        body += "\n" + section.rstrip() + "\n"
    return body
