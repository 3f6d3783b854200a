"""`ExtractiveSummarizer`: a deterministic, offline brief built from the nodes themselves.

Nothing is paraphrased: the user's first request and constraints are quoted, decisions
are the assistant's own sentences, files and commands come from the calls' arguments,
outcomes from the results' error flags, exit statuses and what the output reports (a
test summary, a traceback, a compiler error; "outcome unknown" when nothing tells).
Given a previous brief, it reads it back and merges the newer span into it (a rolling
update).

```python
text = await ExtractiveSummarizer(max_tokens=2_000).summarize(nodes, previous=None,
                                                              instructions=None)
```
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from context_graph.errors import ConfigurationError
from context_graph.graph.content import ImagePart, TextPart
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.graph.nodes import (
    AssistantNode,
    FileNode,
    Node,
    NoteNode,
    SummaryNode,
    ToolCallNode,
    UserNode,
)
from context_graph.tokens.counting import TokenCounter, default_counter
from processors.pieces import counting_by_lines, line_pieces
from processors.summarize import brief as brief_format
from processors.summarize.brief import Brief
from processors.summarize.checks import find_role_markup, find_tool_call_syntax, tool_names_of
from processors.summarize.facts import (
    ITEM_CHARS,
    ToolUse,
    arguments_of,
    clip,
    command_of,
    constraint_sentences,
    dedupe,
    errors_of,
    failure_entities,
    files_of,
    open_error_entities,
    sentences,
    source_of,
    tool_uses,
    user_entities,
)
from processors.summarize.foreign import without_scratchpad
from processors.summarize.outcomes import success_gist, telling_lines
from processors.summarize.quoting import quote_output
from processors.summarize.said import MESSAGE_CHARS
from processors.summarize.turns import (
    Questions,
    decisions_with_reasons,
    is_todo_tool,
    latest_plan,
)
from processors.summarize.written import Writes, read_writes

__all__ = ["ExtractiveSummarizer", "describe_use"]

_STATE_CHARS = 800
#: How long one of the user's messages may be in the brief: longer ones keep their head,
#: and the constraint sentences of what was cut are listed on their own.
_USER_MESSAGE_CHARS = MESSAGE_CHARS
_STOPWORDS = frozenset(
    "about also especially focus include keep make mention only please should summary "
    "summarize sure that their there these they this those what when which with from into "
    "details detail more".split()
)
_WORD = re.compile(r"[A-Za-z][\w-]{3,}")


class ExtractiveSummarizer:
    """Writes a structured brief of nodes, deterministically and offline (the default).

    Sections: the goal (the user's first request, verbatim), every later user message
    (verbatim; a later value replaces an earlier one), constraints (notes, and those of a
    message too long to keep whole), decisions made and why, the latest todo list, files
    modified and read, commands and tool use with their outcomes, open questions, errors
    open and resolved, what the failed tool showed next (verbatim, while the error is
    live), key identifiers, the current state and next step. Given `previous`
    (a brief it wrote), the newer span is merged into it.

    Args:
        max_tokens: Upper bound of the brief; the least needed items are dropped first.
        max_items: At most this many (the newest) items per list section.
        entities_per_turn: Key identifiers taken from each user turn, at most.
        counter: Counts tokens for the bound; if `None`, the counter of the caller's
            token cache (`brief(tokens=...)`, as a managed summary passes it), else the
            default offline tiktoken counter.
    """

    name = "extractive"

    def __init__(
        self,
        *,
        max_tokens: int = 4_000,
        max_items: int = 20,
        entities_per_turn: int = 12,
        counter: TokenCounter | None = None,
    ) -> None:
        for option, value, floor in (
            ("max_tokens", max_tokens, 64),
            ("max_items", max_items, 1),
            ("entities_per_turn", entities_per_turn, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < floor:
                msg = f"ExtractiveSummarizer: `{option}` must be an int >= {floor}, got {value!r}"
                raise ConfigurationError(msg)
        if counter is not None and not callable(getattr(counter, "count", None)):
            msg = "ExtractiveSummarizer: `counter` must have a `count(text)` method"
            raise ConfigurationError(msg)
        self.max_tokens = max_tokens
        self.max_items = max_items
        self.entities_per_turn = entities_per_turn
        self.counter = counter

    async def summarize(
        self,
        nodes: Sequence[Node],
        *,
        previous: str | None,
        instructions: str | None,
        keep: Sequence[str] = (),
    ) -> str:
        """Return the brief of `nodes`, merged into `previous` when given.

        Args:
            nodes: The span to summarize, in transcript order.
            previous: The summary this one updates, if any.
            instructions: A requested focus; sentences that mention its words are listed.
            keep: Strings that must appear in the brief (listed as key identifiers and
                never dropped to meet the bound).
        """
        return self.brief(nodes, previous=previous, instructions=instructions, keep=keep)

    def brief(
        self,
        nodes: Sequence[Node],
        *,
        previous: str | None = None,
        instructions: str | None = None,
        keep: Sequence[str] = (),
        max_tokens: int | None = None,
        words: int = 0,
        tokens: NodeTokenCache | None = None,
    ) -> str:
        """The blocking twin of `summarize`.

        Args:
            nodes: As for `summarize`.
            previous: As for `summarize`.
            instructions: As for `summarize`.
            keep: As for `summarize`.
            max_tokens: A tighter bound for this brief (the room the view has left for
                it); `self.max_tokens` when `None` or larger.
            words: The room the user's words (and `keep`) claim within `max_tokens`
                (`history.words_room`): the bound is at least that, whatever
                `self.max_tokens` says. The checks refuse a summary that lost a sentence
                of the user's, so a fixed cap below their words would refuse every
                summary of a session with many requests, and nothing would be compacted.
            tokens: The caller's token cache. When its counter counts like this
                summarizer's (`NodeTokenCache.counts_like`), the bound counts the brief's
                lines through it, and the brief is counted from them, so that the
                caller's count of the brief is a cache hit. The brief is the same.
        """
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            msg = f"ExtractiveSummarizer.brief: `max_tokens` must be an int >= 1: {max_tokens!r}"
            raise ConfigurationError(msg)
        # Without a counter of its own, the brief counts as the caller does: the room it
        # is given (`max_tokens`, `words`) is in the caller's tokens.
        counter = self.counter or (tokens.counter if tokens is not None else default_counter())
        if isinstance(words, bool) or not isinstance(words, int) or words < 0:
            msg = f"ExtractiveSummarizer.brief: `words` must be an int >= 0: {words!r}"
            raise ConfigurationError(msg)
        own = max(self.max_tokens, words)
        limit = own if max_tokens is None else max(1, min(max_tokens, own))
        brief = _start(previous, counter.count, limit)
        for segment in _segments(nodes):
            if isinstance(segment, SummaryNode):
                brief = brief_format.merge(brief, _start(segment.text, counter.count, limit))
            else:
                awaited = _awaited(brief)
                brief = brief_format.merge(
                    brief, self._extract(segment, instructions, counter, limit, awaited)
                )
        brief.written = _quotable(brief.written, tool_names_of(nodes))
        listed = {*brief.identifiers, *brief.tool_identifiers}
        brief.identifiers.extend(k for k in dedupe(keep) if k and k not in listed)
        brief_format.cap_lists(brief, self.max_items)
        if tokens is None or not tokens.counts_like(counter):
            return brief_format.bound(brief, limit, counting_by_lines(counter), keep)
        count = counting_by_lines(counter, tokens.count_text)
        text = brief_format.bound(brief, limit, count, keep)
        tokens.count_pieces(line_pieces(text))  # the cache adds up what bound counted
        return text

    def _extract(
        self,
        nodes: Sequence[Node],
        instructions: str | None,
        counter: TokenCounter,
        limit: int,
        awaited: str = "",
    ) -> Brief:
        uses = tool_uses(nodes)
        brief = Brief(errors=errors_of(uses), successes=_successes(uses))
        _read_after_error(brief, uses, awaited)
        _read_turns(brief, nodes, limit // 2, counter)
        _read_files(brief, nodes)
        writes = read_writes(uses)
        brief.written = {
            path: brief_format.clip_tokens(text, limit // 2, counter.count)
            for path, text in writes.files.items()
        }
        brief.writes = Writes(edits=writes.edits, lost=writes.lost)
        described = [
            (describe_use(use.call, use), bool(use.outcome.counts))
            for use in uses
            if use.call and _is_command(use.call)
        ]
        # The newest test run has a section of its own (its counts say it is one): the
        # command list keeps its newest items only, and the run is what the agent
        # compares its next one with.
        latest = max((i for i, (_, is_run) in enumerate(described) if is_run), default=None)
        brief.tests = [described[latest][0]] if latest is not None else []
        brief.commands = [item for index, (item, _) in enumerate(described) if index != latest]
        brief.identifiers = user_entities(nodes, per_turn=self.entities_per_turn)
        said = set(brief.identifiers)
        brief.tool_identifiers = [
            entity
            for entity in dedupe(
                [*open_error_entities(nodes), *failure_entities(nodes, per_failure=None)]
            )
            if entity not in said
        ]
        if instructions and instructions.strip():
            brief.asked = clip(instructions)
            brief.focus = _focus(nodes, instructions)
        return brief


def _quotable(files: dict[str, str], tool_names: Sequence[str]) -> dict[str, str]:
    """The files whose text the brief may quote: none that reads as a call or a turn.

    A file the agent wrote can hold what the candidate checks refuse in a summary (a
    test of a chat client writes `"role": "user"`, a script `bash(...)`): quoting it
    would get the whole brief refused, so such a file is only listed as modified.
    """
    return {
        path: text
        for path, text in files.items()
        if not find_tool_call_syntax(text, tool_names) and not find_role_markup(text)
    }


def _start(previous: str | None, count: Callable[[str], int], limit: int) -> Brief:
    """The brief to update: a parsed previous brief, or any other text as an earlier block."""
    if not previous or not previous.strip():
        return Brief()
    parsed = brief_format.parse(previous)
    if parsed is not None:
        return parsed
    earlier = without_scratchpad(previous.strip())
    return Brief(earlier=brief_format.clip_tokens(earlier, limit // 3, count))


def _segments(nodes: Iterable[Node]) -> list[SummaryNode | list[Node]]:
    """Runs of ordinary nodes, with summary nodes standing alone between them."""
    out: list[SummaryNode | list[Node]] = []
    for node in nodes:
        if isinstance(node, SummaryNode):
            out.append(node)
        elif out and isinstance(out[-1], list):
            out[-1].append(node)
        else:
            out.append([node])
    return out


def _user_text(node: Node) -> str:
    """A user turn's text, with its media named (an image-only turn is not blank)."""
    media = sum(1 for p in node.content if not isinstance(p, TextPart))
    images = sum(1 for p in node.content if isinstance(p, ImagePart))
    note = f"[{images} image(s)]" if images else f"[{media} attachment(s)]" if media else ""
    return "\n".join(t for t in (node.text, note) if t)


def _read_turns(brief: Brief, nodes: Sequence[Node], goal_tokens: int, c: TokenCounter) -> None:
    """Goal, the user's messages, constraints, decisions, questions, the last assistant text.

    The goal is the session's first request (a node of turn 1, or the span's first user
    node when turns are unknown); every later user message is kept verbatim, in any
    language, its head when it is very long. A notice (`UserNode.notice`) is neither:
    the harness wrote it ("DO NOT respond to these messages" is not the user's rule).
    """
    questions = Questions()
    for node in nodes:
        questions.read(node)
        if isinstance(node, UserNode) and not node.notice:
            _read_user_turn(brief, node, goal_tokens, c)
        elif isinstance(node, NoteNode) and node.text:
            brief.constraints.append(clip(f"Note: {node.text}"))
        elif isinstance(node, AssistantNode) and node.text.strip():
            brief.decisions.extend(decisions_with_reasons(node.text))
            brief.state = clip(node.text, _STATE_CHARS)
    brief.constraints = dedupe(brief.constraints)
    brief.decisions = dedupe(brief.decisions)
    brief.questions = questions.open(brief_format.ASKED_BY)
    brief.spoke = questions.spoke
    brief.plan = latest_plan(nodes)


def _read_user_turn(brief: Brief, node: UserNode, goal_tokens: int, c: TokenCounter) -> None:
    text = _user_text(node).strip()
    if not text:
        return
    if not brief.goal and not brief.requests and node.turn <= 1:
        brief.goal = brief_format.clip_tokens(text, goal_tokens, c.count)
        kept = brief.goal
    else:
        brief.requests.append(clip(text, _USER_MESSAGE_CHARS))
        kept = brief.requests[-1]
    if kept != text and kept != " ".join(text.split()):
        # Cut: the constraints of the whole message are listed, so none is lost.
        brief.constraints.extend(clip(s) for s in constraint_sentences(node.text))


def _read_files(brief: Brief, nodes: Sequence[Node]) -> None:
    """Files read (file nodes, read calls) and modified (edit calls, shell writes)."""
    read: list[str] = []
    written: list[str] = []
    for node in nodes:
        if isinstance(node, FileNode):
            read.append(node.path)
        elif isinstance(node, ToolCallNode):
            got, put = files_of(node)
            read.extend(got)
            written.extend(put)
    brief.files_modified = dedupe(clip(p, 200) for p in written)
    touched = set(brief.files_modified)
    brief.files_read = [p for p in dedupe(clip(p, 200) for p in read) if p not in touched]


def _successes(uses: Iterable[ToolUse]) -> dict[str, str]:
    """Keys of the uses that read `ok`, with what the first such output showed.

    An unknown outcome resolves no earlier error; the line is `success_gist`'s.
    """
    found: dict[str, str] = {}
    for use in uses:
        if use.outcome.ok and use.key not in found:
            found[use.key] = success_gist(use.answer.text)
    return found


def _awaited(brief: Brief) -> str:
    """The tool whose next output that does not fail the brief still waits for.

    The tool of the newest error, while it is open and nothing followed it yet: an
    error that closed the span a summary took has its answer in the next span.
    """
    if brief.after_error or not brief.errors or brief.errors[-1].resolved:
        return ""
    return brief.errors[-1].source


def _read_after_error(brief: Brief, uses: Sequence[ToolUse], awaited: str = "") -> None:
    """The span's latest error: whether it has one, and what the same tool showed next.

    The first later output of the tool that failed that did not fail itself (what the
    agent saw after the error, often the fix at work): its first line and the first that
    names an error or a warning, verbatim, for as long as the error is live
    (`brief_format.LIVE_RESULTS`); the rest of that output is the summary's like any.
    A span with no error of its own looks among its first outputs for the one an
    earlier span's error awaits (`awaited`, its tool).
    """
    failures = [index for index, use in enumerate(uses) if use.outcome.failed]
    if failures:
        latest = failures[-1]
        brief.failed = True
        brief.since_error = len(uses) - latest - 1
        tool = source_of(uses[latest])
        later = uses[latest + 1 :]
    else:
        brief.since_error = len(uses)
        tool = awaited
        later = uses[: brief_format.LIVE_RESULTS] if awaited else []
    after = next((u for u in later if source_of(u) == tool and not u.outcome.failed), None)
    if after is None:
        return
    lines = telling_lines(after.answer.text)
    named = next((line for line in lines if _NAMES_TROUBLE.search(line)), None)
    chosen = dedupe([*lines[:1], *([named] if named else [])])
    brief.after_error = [quote_output(clip(tool, 60), _verbatim(line)) for line in chosen]


#: A line of an output that names an error or a warning (one that did not fail may).
_NAMES_TROUBLE = re.compile(
    r"error|exception|traceback|fail|fatal|warning|not found|denied|invalid|cannot|can't|"
    r"refused|no such|undefined|missing",
    re.IGNORECASE,
)
#: The most characters of a line quoted verbatim; a longer one keeps its head.
_VERBATIM_CHARS = 200


def _verbatim(line: str) -> str:
    return line if len(line) <= _VERBATIM_CHARS else line[: _VERBATIM_CHARS - 6] + " [...]"


def _is_command(call: ToolCallNode) -> bool:
    """Shell commands and other tools (a todo list is the plan, files are listed apart)."""
    if is_todo_tool(call.name):
        return False
    return command_of(call) is not None or files_of(call) == ([], [])


def describe_use(call: ToolCallNode, use: ToolUse) -> str:
    """One line in prose: what was run and how it ended (never call syntax).

    A line copied from the output ends the item as quoted tool output, attributed to
    its tool; it is shortened to keep the item near `ITEM_CHARS`, never cut open.
    """
    outcome = use.outcome.words()
    command = command_of(call)
    if command is not None:
        shown = clip(command, 160).replace("`", "'")
        head = clip(f"ran `{shown}`: {outcome}", ITEM_CHARS)
    else:
        args = arguments_of(call)
        scalars = [f"{k} {v}" for k, v in args.items() if isinstance(v, str | int | float)]
        given = f" with {clip(', '.join(scalars), 120)}" if scalars else ""
        head = clip(f"used {call.name}{given}: {outcome}", ITEM_CHARS)
    if not use.outcome.line:
        return head
    tool = clip(source_of(use), 60)
    room = ITEM_CHARS - len(head) - len(quote_output(tool, ""))
    return f"{head}; {quote_output(tool, clip(use.outcome.line, max(room, 60)))}"


def _focus(nodes: Sequence[Node], instructions: str) -> list[str]:
    """Sentences of user and assistant turns that mention the requested focus."""
    words = {w.lower() for w in _WORD.findall(instructions)} - _STOPWORDS
    if not words:
        return []
    found: list[str] = []
    for node in nodes:
        if isinstance(node, UserNode | AssistantNode):
            found.extend(
                clip(s) for s in sentences(node.text) if words & set(_WORD.findall(s.lower()))
            )
    return dedupe(found)
