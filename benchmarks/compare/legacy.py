"""The earlier benchmark sections (ingest, render, processors, distiller), regenerated.

Each script is run through its command-line entry point (`main(argv)`, output captured),
the contract those scripts keep, and its output is set in the prose the page had. The
long-session benchmark runs as its own command, in a fresh interpreter, exactly as the
page tells a reader to run it: its replays fork, and forked from this process they would
carry the whole comparison's heap with them.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import distill_retention, ingest, processors, render
from benchmarks.compare.plots import matplotlib_available

# The ingest table: the largest session, plus two with shorter messages.
INGEST_EXTRA = (
    "mini_swe_agent_deepseek/deepseek_chat_test_1-100/django__django-11910/"
    "django__django-11910.traj.json",
    "tau_bench_gpt4o_airline/gpt-4o-airline.sample12.json",
)


def _captured(main: Callable[[list[str]], int], argv: Sequence[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(list(argv))
    return out.getvalue().strip()


def _command(module: str, argv: Sequence[str]) -> str:
    """`python -m module argv` in a fresh interpreter, from the checkout; its output.

    Raises:
        RuntimeError: the command failed; says how, with the end of what it printed.
    """
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", module, *argv],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-5:]
        msg = f"`python -m {module}` exited with {done.returncode}: " + " / ".join(tail)
        raise RuntimeError(msg)
    return done.stdout.strip()


def ingest_section(traces: Path, progress: Callable[[str], None]) -> str:
    rows = []
    paths = [ingest.largest_session(traces), *(traces / p for p in INGEST_EXTRA)]
    for path in paths:
        if not path.exists():
            continue
        progress(f"ingest benchmark: {path.name}")
        figures = json.loads(_captured(ingest.main, [str(path), "--repeat", "7", "--json"]))
        rows.append(
            f"| {path.relative_to(traces).as_posix()} | {figures['events']} | {figures['nodes']} "
            f"| {figures['tokens']:,} | {figures['engine_total_ns'] / 1e6:.1f} ms "
            f"({figures['engine_per_event_ns'] / 1e3:.0f} us/event) "
            f"| {figures['floor_total_ns'] / 1e6:.1f} ms "
            f"({figures['floor_per_event_ns'] / 1e3:.0f} us/event) | {figures['ratio']:.2f}x |"
        )
    return "\n".join(
        [
            "## Ingest speed against the tokenize-once floor",
            "",
            "```bash",
            "python -m benchmarks.ingest            # the largest session in ../shared/traces",
            "python -m benchmarks.ingest PATH --repeat 7",
            "```",
            "",
            "The script replays one recorded session event by event into a fresh "
            "`ContextGraph` (validation, deterministic ids, pairing, units, edges, indexes "
            "and token counting) and, in the same run and interleaved with it, times the "
            "**floor**: tiktoken-encoding the countable text of every node once with the "
            "same `cl100k_base` encoding, with nothing else. Both are the best of `--repeat` "
            "runs. Parsing the file is outside both timings. The table is the largest "
            "session and two with shorter messages (`--repeat 7`, first session of each "
            "file):",
            "",
            "| trace | events | nodes | tokens | engine | floor | ratio |",
            "|---|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            "The target for this benchmark (the largest session) is at most 1.5x the floor. "
            "The engine's own work per event does not grow with the history, so the ratio "
            "is set by how much text each event carries: sessions of short messages sit "
            "further from the floor.",
        ]
    )


def render_section(
    traces: Path, image: Path, image_ref: str, progress: Callable[[str], None]
) -> str:
    plotted = matplotlib_available()
    progress("render benchmark at 50%" + (" (with the plot)" if plotted else ""))
    half = _captured(
        render.main, ["--traces", str(traces), *(["--plot", str(image)] if plotted else [])]
    )
    progress("render benchmark at 75%")
    three_quarters = _captured(render.main, ["--traces", str(traces), "--budget-ratio", "0.75"])
    return "\n".join(
        [
            "## Render after every event, against LangChain `trim_messages`",
            "",
            "```bash",
            "python -m benchmarks.render --plot docs/img/render_time.png      # budget: 50%",
            "python -m benchmarks.render --budget-ratio 0.75",
            "```",
            "",
            "The script replays the session with the most events in ../shared/traces and, "
            "after every event, asks each contender for the history to send under the same "
            "budget, counted with the same cl100k_base encoding: context-graph keeps one "
            "`Renderer` (no processors: this measures the renderer alone); LangChain runs "
            '`trim_messages` (`strategy="last"`, `start_on="human"`, '
            "`include_system=True`, a tiktoken counter that is not cached) on the message "
            "list an agent would hold. Every render is timed. The outputs are checked at "
            "the points where the recorded session really called the model: invalid "
            "bodies by our validator (OpenAI rules), and whether the user's latest request "
            "and the first request in view (after Claude Code's own compaction) are still "
            "there.",
            "",
            "Budget 50% of the final size:",
            "",
            half,
            "",
            "Budget 75%:",
            "",
            three_quarters,
            "",
            "Reading the table: where even our floor (system, first request, latest user "
            "turn and everything after it) does not fit, `render` raises "
            "`BudgetExceededError` with the size it would need instead of sending "
            "something (the refused column). At the same calls LangChain's "
            '`start_on="human"` leaves an empty message list or one that starts after the '
            "latest request, which is where its invalid bodies and lost requests come from. "
            "Compacting inside a tool loop is the processors' job: the comparison above runs "
            "them through `ContextManager`.",
            "",
            f"![time per render, both contenders]({image_ref})"
            if plotted
            else "(No plot: matplotlib is not installed; `pip install '.[bench]'` draws it.)",
        ]
    )


def _judged(size: str, figures: dict[str, Any]) -> list[str]:
    """The targets of one long-session run (its `--json`), as rows of the targets table."""
    tokens = f"{figures['raw_tokens']:,} raw tokens"
    return [
        f"| long session ({size}, {tokens}): {t['target']} | {t['measured']} "
        f"| {'met' if t['met'] else 'not met'} |"
        for t in figures["targets"]
    ]


def processors_section(traces: Path, progress: Callable[[str], None]) -> str:
    progress("processors benchmark")
    table = _captured(processors.main, ["--traces", str(traces)])
    progress("distiller retention benchmark")
    distill = _captured(distill_retention.main, [str(traces)]).split("\n\n")
    return "\n".join(
        [
            "## Processors on the shared traces",
            "",
            "```bash",
            "python -m benchmarks.processors",
            "python -m benchmarks.distill_retention",
            "```",
            "",
            "Every processor is given every node it works on in every shared main session "
            "(tool results, file reads and sub-agent results; the summarizer gets the first "
            "half of the units), and its proposal is measured over the nodes it changed: "
            "size after / before, the share of critical entities (`context_graph.entities`) "
            "of the originals still present in the replacements, and processing time per "
            "1,000 input tokens:",
            "",
            table,
            "",
            "What the retention column measures is every entity of the changed nodes, "
            "including whole code bodies and long listings. The masker keeps almost none by "
            "design (it leaves a gist and an expand pointer); truncation keeps what is in "
            "the head and tail; the extractive summary keeps the user's requests, "
            "constraints and the entities of user turns and open errors (measured "
            "separately in tests/processors/test_summarize_traces.py), not those of every "
            "tool output.",
            "",
            "The distiller per level, over the coding-agent sessions (per content type in "
            "docs/processors/distill.md):",
            "",
            "\n\n".join(distill[:2]),
        ]
    )


def long_session_section(
    traces: Path,
    image: Path,
    image_ref: str,
    progress: Callable[[str], None],
    judged: list[str] | None = None,
) -> str:
    """The section; each of its targets, met or not, is added to `judged` as a table row."""
    plotted = matplotlib_available()
    progress("long-session benchmark (about 3M tokens)" + (" (with the plot)" if plotted else ""))
    with tempfile.TemporaryDirectory() as scratch:
        figures = Path(scratch) / "long.json"
        table = _command(
            "benchmarks.long_session",
            [
                "--traces",
                str(traces),
                "--json",
                str(figures),
                *(["--plot", str(image)] if plotted else []),
            ],
        )
        rows = _judged("3M", json.loads(figures.read_text(encoding="utf-8")))
        progress("long-session benchmark, the long version (about 10M tokens)")
        long_table = _command(
            "benchmarks.long_session",
            [
                "--traces",
                str(traces),
                "--tokens",
                "10M",
                "--small-budget",
                "0",
                "--json",
                str(figures),
            ],
        )
        rows += _judged("10M", json.loads(figures.read_text(encoding="utf-8")))
    if judged is not None:
        judged.extend(rows)
    return "\n".join(
        [
            "## Time per call on a long session, against LangChain `trim_messages`",
            "",
            "```bash",
            "python -m benchmarks.long_session     # about 3M tokens, 200k budget (and 16k)",
            "python -m benchmarks.long_session --tokens 10M --small-budget 0",
            "python -m benchmarks.long_session --plot docs/img/long_session.png",
            "```",
            "",
            "The script stitches one long coding session out of the shared ones (the main "
            "sessions of the coding families, taken in turn from each family, largest first; "
            "rounds of them repeated until the raw history holds the asked size) and replays "
            "it for context-graph's coding profile and for `trim_messages` with a counter "
            "cached per message, each in a process of its own. A call's time is feeding the "
            "events since the previous call plus the request. Every 50th request and the last "
            "are checked by our validator and counted against the budget. One replay's wall "
            "time moves by a quarter from run to run on a shared machine, so each "
            "contender replays three times, taking turns; the first table holds its median "
            "replay, the second each call at its fastest over the three (a call does the "
            "same work in every replay, and a slow stretch of the machine lands in one), and "
            "the targets are judged on the second (at 3M and at 10M alike). The 3M command "
            "then replays "
            "context-graph alone at a 16,000-token budget, where it compacts many times "
            "more often and each rolling summary absorbs the one before it: the time per "
            "call must stay as flat there.",
            "",
            table,
            "",
            "![mean time per call along the session (each call at its fastest over the "
            f"replays), and the time summed]({image_ref})"
            if plotted
            else "(No plot: matplotlib is not installed; `pip install '.[bench]'` draws it.)",
            "",
            "The long version, `--tokens 10M` (the same tasks, more rounds):",
            "",
            long_table,
        ]
    )
