"""Distiller retention and compression on the shared traces, per level and content type.

For every tool result, file read and sub-agent answer of the coding-agent sessions
(Claude Code, mini-swe-agent, SWE-agent, OpenHands), the `Distiller` runs at each level.
For each node it proposes to replace, we record the tokens before and after (cl100k_base)
and the share of the original's critical entities (`context_graph.entities`) found
verbatim in the distilled text: overall, for paths, for error names (`KeyError`), for the
entities on error lines, and for the entities a later turn of the agent names (its own
text or a later tool call's arguments name the entity exactly): the ones it went on to use.

    python -m benchmarks.distill_retention [TRACES_DIR]

prints the markdown tables that docs/processors/distill.md shows.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from context_graph.entities import critical_entities, missing_entities
from context_graph.graph.nodes import AnswerNode, AssistantNode, FileNode, Node, ToolCallNode
from context_graph.importers import load_graph
from processors.base import ProcessorContext, Replace
from processors.distill import LEVELS, Distiller, Level, detect_content_type

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACES = ROOT.parent / "shared" / "traces"
FAMILIES = (
    "claude_code",
    "mini_swe_agent_deepseek",
    "swe_agent",
    "openhands_claude35_swebench_verified",
)
#: Content types whose error lines the distiller promises to keep (command output).
REPORTING = frozenset({"log", "traceback", "test_output", "text"})
#: Error lines, recognized independently of the distiller's own rule.
ERROR_LINE = re.compile(r"\b\w*(?:Error|Exception)\b|\bERROR\b|\bFAIL(?:ED)?\b|\bFATAL\b|Traceback")
#: Error names, as `context_graph.entities` finds them.
ERROR_NAME = re.compile(r"^[A-Z][A-Za-z]*(?:Error|Exception|Warning|Fault)$")


@dataclass
class Tally:
    """Sums over the nodes of one (level, content type) cell."""

    nodes: int = 0
    before: int = 0
    after: int = 0
    entities: int = 0
    kept: int = 0
    paths: int = 0
    paths_kept: int = 0
    error_entities: int = 0
    error_kept: int = 0
    names: int = 0
    names_kept: int = 0
    later: int = 0
    later_kept: int = 0
    later_paths: int = 0
    later_paths_kept: int = 0
    worst: float = 1.0

    @property
    def ratio(self) -> float:
        return self.after / self.before if self.before else 1.0

    @property
    def retention(self) -> float:
        return self.kept / self.entities if self.entities else 1.0

    @property
    def path_retention(self) -> float:
        return self.paths_kept / self.paths if self.paths else 1.0

    @property
    def error_retention(self) -> float:
        return self.error_kept / self.error_entities if self.error_entities else 1.0

    @property
    def name_retention(self) -> float:
        return self.names_kept / self.names if self.names else 1.0

    @property
    def later_retention(self) -> float:
        return self.later_kept / self.later if self.later else 1.0

    @property
    def later_path_retention(self) -> float:
        return self.later_paths_kept / self.later_paths if self.later_paths else 1.0


@dataclass
class Measurement:
    """Tallies per (level, content type) and per level, plus every error-line miss."""

    cells: dict[tuple[str, str], Tally] = field(default_factory=lambda: defaultdict(Tally))
    levels: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    error_misses: list[tuple[str, str, str, list[str]]] = field(default_factory=list)
    files: int = 0


def trace_files(root: Path, families: Sequence[str] = FAMILIES) -> list[Path]:
    """The session files of the coding-agent families (sub-agent transcripts aside)."""
    found: list[Path] = []
    for family in families:
        for path in sorted((root / family).rglob("*")):
            if path.suffix in {".jsonl", ".traj"} or path.name.endswith(".traj.json"):
                if "subagents" not in path.parts:
                    found.append(path)
            elif path.suffix == ".json" and "llm_completions" in path.parts:
                found.append(path)
    return found


def error_entities(text: str) -> list[str]:
    """The critical entities on the error lines of `text`."""
    lines = [line for line in text.split("\n") if ERROR_LINE.search(line)]
    return critical_entities("\n".join(lines))


@dataclass(frozen=True)
class _Facts:
    """What is measured against, per original node (the same at every level)."""

    kind: str
    entities: list[str]
    paths: list[str]
    errors: list[str]
    names: list[str]
    later: list[str]


def _facts(node: Node, named_after: set[str]) -> _Facts:
    path = node.path if isinstance(node, FileNode) else None
    kind = detect_content_type(node.text, path=path, tool=getattr(node, "name", None))
    entities = critical_entities(node.text)
    errors = error_entities(node.text) if kind in REPORTING else []
    return _Facts(
        kind,
        entities,
        [e for e in entities if "/" in e],
        errors,
        [e for e in entities if ERROR_NAME.match(e)],
        [e for e in entities if e in named_after],
    )


def _scalars(value: object) -> list[str]:
    if isinstance(value, dict):
        return [s for item in value.values() for s in _scalars(item)]
    if isinstance(value, list):
        return [s for item in value for s in _scalars(item)]
    return [] if value is None or isinstance(value, bool) else [str(value)]


def _agent_text(node: Node) -> str:
    """The agent's own words: an assistant turn's text, a tool call's argument values."""
    if isinstance(node, AssistantNode):
        return node.text
    if isinstance(node, ToolCallNode):
        try:
            return "\n".join(_scalars(json.loads(node.arguments)))
        except ValueError:
            return node.arguments
    return ""


def named_later(nodes: Sequence[Node]) -> dict[str, set[str]]:
    """For each node id, the entities an agent turn after it names (exactly)."""
    out: dict[str, set[str]] = {}
    seen: set[str] = set()
    for node in reversed(nodes):
        out[node.id] = set(seen)
        seen.update(critical_entities(_agent_text(node)))
    return out


def _record(
    measure: Measurement,
    level: Level,
    node: Node,
    facts: _Facts,
    new: Node,
    tokens: tuple[int, int],
) -> None:
    missing = set(missing_entities(facts.entities, new.text))
    lost = missing_entities(facts.errors, new.text)
    for tally in (measure.cells[(level, facts.kind)], measure.levels[level]):
        tally.names += len(facts.names)
        tally.names_kept += sum(1 for e in facts.names if e not in missing)
        tally.later += len(facts.later)
        tally.later_kept += sum(1 for e in facts.later if e not in missing)
        tally.later_paths += sum(1 for e in facts.later if "/" in e)
        tally.later_paths_kept += sum(1 for e in facts.later if "/" in e and e not in missing)
        tally.nodes += 1
        tally.before += tokens[0]
        tally.after += tokens[1]
        tally.entities += len(facts.entities)
        tally.kept += len(facts.entities) - len(missing)
        tally.paths += len(facts.paths)
        tally.paths_kept += sum(1 for e in facts.paths if e not in missing)
        tally.error_entities += len(facts.errors)
        tally.error_kept += len(facts.errors) - len(lost)
        if facts.entities:
            tally.worst = min(tally.worst, 1 - len(missing) / len(facts.entities))
    if lost:
        measure.error_misses.append((level, facts.kind, node.id, lost))


async def _measure_file(measure: Measurement, path: Path, levels: Iterable[Level]) -> None:
    graph = load_graph(path)
    ctx = ProcessorContext.for_graph(graph)
    targets = [node for node in graph if isinstance(node, AnswerNode)]
    later = named_later([graph[node_id] for node_id in graph.transcript()])
    facts: dict[str, _Facts] = {}
    for level in levels:
        proposal = await Distiller(level=level).propose(targets, ctx)
        for edit in proposal.edits:
            if isinstance(edit, Replace):
                node = graph[edit.target]
                known = facts.get(node.id) or facts.setdefault(
                    node.id, _facts(node, later.get(node.id, set()))
                )
                tokens = (ctx.count(node), ctx.count(edit.replacement))
                _record(measure, level, node, known, edit.replacement, tokens)
    measure.files += 1


def measure(paths: Iterable[Path], levels: Iterable[Level] = LEVELS) -> Measurement:
    """Distill every answer node of every file at every level and tally the outcome."""
    result = Measurement()
    chosen = tuple(levels)
    for path in paths:
        asyncio.run(_measure_file(result, path, chosen))
    return result


def _row(label: str, tally: Tally) -> str:
    return (
        f"| {label} | {tally.nodes:,} | {tally.before:,} | {tally.after:,} | {tally.ratio:.2f} "
        f"| {tally.retention:.3f} | {tally.path_retention:.3f} | {tally.name_retention:.3f} "
        f"| {tally.error_retention:.3f} | {tally.later_retention:.3f} "
        f"| {tally.later_path_retention:.3f} | {tally.worst:.2f} |"
    )


def report(result: Measurement) -> str:
    """The measurement as markdown tables: per level, then per level and content type."""
    head = (
        "| {0} | nodes | tokens before | tokens after | after/before | entities kept "
        "| paths kept | error names kept | error-line entities kept | named later kept "
        "| named later paths kept | worst node |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    out = [f"{result.files} session files.", "", head.format("level")]
    out += [_row(level, result.levels[level]) for level in LEVELS if level in result.levels]
    out += ["", head.format("level / content type")]
    for (level, kind), tally in sorted(
        result.cells.items(), key=lambda item: (LEVELS.index(item[0][0]), item[0][1])
    ):
        out.append(_row(f"{level} / {kind}", tally))
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="?", type=Path, default=DEFAULT_TRACES)
    args = parser.parse_args(argv)
    files = trace_files(args.traces)
    if not files:
        print(f"no session files under {args.traces}", file=sys.stderr)
        return 1
    print(report(measure(files)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
