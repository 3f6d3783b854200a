"""Facts read off nodes: sentences, tool kinds, commands, paths, outcomes, error gists.

Shared by the extractive summarizer (which writes them down) and the candidate checks
(which require some of them to survive), so both sides agree on what a fact is.
"""

from __future__ import annotations

import operator
import re
import shlex
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from context_graph.entities import critical_entities
from context_graph.graph.nodes import (
    AnswerNode,
    FileNode,
    Node,
    SubagentResultNode,
    ToolCallNode,
    UserNode,
)
from processors.distill.testruns import reports_a_pass
from processors.exit_status import exit_code_of
from processors.summarize.outcomes import Outcome, read_outcome, reported_text, success_gist

__all__ = [
    "AGENT_SHELL_TOOLS",
    "ITEM_CHARS",
    "SHELL_TOOLS",
    "ErrorFact",
    "ToolUse",
    "arguments_of",
    "clear_cache",
    "clip",
    "command_key",
    "command_of",
    "constraint_sentences",
    "dedupe",
    "error_key",
    "errors_of",
    "failure_entities",
    "files_of",
    "is_shell",
    "open_error_entities",
    "outcome_of",
    "sentences",
    "source_of",
    "still_running",
    "tool_uses",
    "user_entities",
]

#: The shell tools of the agents, as each spells it: Claude Code's `Bash`, Codex CLI's
#: `shell`, `shell_command` and `exec_command`, gemini-cli's `run_shell_command`,
#: opencode's and SWE-agent's `bash`, OpenHands' `execute_bash`. The coding policy's
#: truncator matches them case-sensitively (`orchestrator.policy.named`).
AGENT_SHELL_TOOLS = (
    "bash",
    "Bash",
    "shell",
    "shell_command",
    "exec_command",
    "execute_bash",
    "run_shell_command",
)
#: Tool names (lower case) that run shell commands.
SHELL_TOOLS = frozenset(
    {
        "sh",
        "zsh",
        "terminal",
        "cmd",
        "powershell",
        "exec",
        "execute_command",
        "run_command",
        "run_terminal_cmd",
        "local_shell",
        "run_commands",  # Cline 3: a list of commands, run one after another
        *(name.lower() for name in AGENT_SHELL_TOOLS),
    }
)
_SHELL_WORDS = ("bash", "shell", "terminal")
_EDIT_WORDS = ("edit", "write", "str_replace", "apply_patch", "patch", "insert", "create_file")
_READ_WORDS = ("read", "view", "open", "cat")
_EDIT_COMMANDS = frozenset({"create", "str_replace", "insert", "undo_edit", "write", "edit"})
_PATH_KEYS = (
    "path",
    "file_path",
    "filepath",
    "filename",
    "file",
    "target_file",
    "notebook_path",
    "absolute_path",
)
_READ_VERBS = frozenset({"cat", "head", "tail", "less", "more", "nl", "bat", "view"})
_WRITE_VERBS = frozenset({"touch", "tee", "rm", "mv", "cp", "patch"})

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_CONSTRAINT = re.compile(
    r"\b(?:must|mustn't|never|don't|do not|always|prefer|please|avoid|make sure|ensure|"
    r"should|shouldn't|required|important|instead of|without)\b"
    # The same in Chinese and Japanese (no word boundaries there): must, do not, forbidden,
    # never, please, be sure to.
    "|必须|不要|禁止|不得|不能|请勿|务必|一定要|しないで|禁止|必ず|してください",
    re.IGNORECASE,
)
# Shell verbs whose output is content the agent asked to see: a failure word in it is
# data (a log, a source file), not a report of how the command ran.
_CONTENT_VERBS = frozenset(
    "cat head tail less more nl bat view grep egrep fgrep rg ag ack find fd ls tree wc sed "
    "awk sort uniq cut diff echo printf stat file du pwd which type jq yq curl wget "
    # SWE-agent's file viewer and search commands
    "open goto scroll_up scroll_down search_file search_dir find_file".split()
) | {f"git {sub}" for sub in "log show diff grep blame ls-files cat-file".split()}
_CONTENT_TOOL_WORDS = frozenset({"read", "view", "open", "cat", "fetch", "search", "grep", "glob"})
_NAME_WORDS = re.compile(r"[^a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_ASSIGNMENT = re.compile(r"^\w+=")
_PATHLIKE = re.compile(r"[\w.~/-]*(?:/[\w.-]+|\.[A-Za-z]\w{0,5})")
_REDIRECT = re.compile(r"(?<![<>&\d])>{1,2}\s*([^\s;&|<>]+)")
_SEGMENTS = re.compile(r"\|\||&&|[|;\n]")
# Without quotes or backslashes, POSIX shlex splits at runs of its whitespace and nothing
# else; most commands are like that, and shlex reads them a character at a time.
_SHLEX_QUOTING = re.compile(r"['\"\\]")
_SHLEX_WHITESPACE = re.compile(r"[ \t\r\n]+")

#: How long one item of the brief may be, in characters.
ITEM_CHARS = 300


def clip(text: str, limit: int = ITEM_CHARS) -> str:
    """`text` on one line, cut to `limit` characters with a `[...]` marker when longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 6].rstrip() + " [...]"


def sentences(text: str) -> Iterator[str]:
    """The sentences and lines of `text`, stripped, empty ones left out."""
    for piece in _SENTENCE_SPLIT.split(text):
        piece = piece.strip()
        if piece and not piece.startswith("```"):
            yield piece


def constraint_sentences(text: str) -> list[str]:
    """Sentences of a user turn that state a constraint or a preference."""
    return [s for s in sentences(text) if _CONSTRAINT.search(s)]


def arguments_of(call: ToolCallNode) -> dict[str, object]:
    """A call's arguments as a dict (empty when they are not a JSON object)."""
    parsed = call.parsed_arguments
    return dict(parsed) if isinstance(parsed, dict) else {}


def is_shell(call: ToolCallNode) -> bool:
    """Whether a call runs a shell command."""
    name = call.name.lower()
    return name in SHELL_TOOLS or any(word in name for word in _SHELL_WORDS)


def command_of(call: ToolCallNode) -> str | None:
    """The shell command a call runs, if it is a shell call."""
    if not is_shell(call):
        return None
    # Read in place, not copied (`arguments_of`): every summary asks this of each call
    # of its span several times (outcomes, error keys, the brief's lines).
    parsed = call.parsed_arguments
    args = parsed if isinstance(parsed, dict) else {}
    value = args.get("command", args.get("cmd"))
    if isinstance(value, list):
        return " ".join(str(part) for part in value)
    if isinstance(value, str):
        return value
    listed = args.get("commands")
    if value is None and isinstance(listed, list) and listed:
        # Cline runs each whether the one before failed or not, as `;` does.
        return "; ".join(str(part) for part in listed)
    return call.arguments if not args else None


def _paths_in_args(args: dict[str, object]) -> list[str]:
    found = [v for k in _PATH_KEYS if isinstance(v := args.get(k), str) and v.strip()]
    listed = args.get("paths")
    if isinstance(listed, list):
        found.extend(p for p in listed if isinstance(p, str) and p.strip())
    return found


def _is_pathlike(token: str) -> bool:
    return (
        not token.startswith("-")
        and "://" not in token
        and _PATHLIKE.fullmatch(token) is not None
        and any(c.isalpha() for c in token)
    )


def _shell_words(segment: str) -> list[str]:
    if _SHLEX_QUOTING.search(segment) is None:
        return [word for word in _SHLEX_WHITESPACE.split(segment) if word]
    try:
        return shlex.split(segment, comments=False)
    except ValueError:
        return segment.split()


def _shell_files(command: str) -> tuple[list[str], list[str]]:
    """Paths a shell command reads and writes (a plain, forgiving heuristic)."""
    read, written = _shell_paths(command)
    return list(read), list(written)


# Every summary re-reads the calls of the span it covers; the answer depends on the
# command alone, and splitting it (shlex) is the slow part.
@lru_cache(maxsize=4096)
def _shell_paths(command: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    read: list[str] = []
    written = [t for t in _REDIRECT.findall(command) if _is_pathlike(t) and t != "/dev/null"]
    for segment in _SEGMENTS.split(command.split("<<")[0]):
        words = _shell_words(segment)
        if not words:
            continue
        verb, rest = words[0], [w for w in words[1:] if _is_pathlike(w)]
        if verb == "sed" and "-i" in words:
            written.extend(rest[-1:])
        elif verb in _WRITE_VERBS:
            written.extend(rest)
        elif verb in _READ_VERBS and ">" not in segment:
            read.extend(rest)
    return tuple(read), tuple(written)


def files_of(call: ToolCallNode) -> tuple[list[str], list[str]]:
    """The paths a call reads and the paths it modifies."""
    command = command_of(call)
    if command is not None:
        return _shell_files(command)
    args = arguments_of(call)
    paths = _paths_in_args(args)
    name = call.name.lower()
    sub = args.get("command")
    if sub == "view":
        return paths, []
    if sub in _EDIT_COMMANDS or any(word in name for word in _EDIT_WORDS):
        return [], paths
    if any(word in name for word in _READ_WORDS):
        return paths, []
    return [], []


def outcome_of(answer: AnswerNode, call: ToolCallNode | None = None) -> Outcome:
    """The outcome of the call `answer` answers (`call`, when known, says what it ran)."""
    return _outcome(answer.text, answer.is_error, exit_code_of(answer), _is_content(call, answer))


# Every summary re-reads the results of the span it covers; the answer depends on these
# four alone, and reading a long output's summary lines is the slow part.
@lru_cache(maxsize=4096)
def _outcome(text: str, is_error: bool, code: int | None = None, content: bool = False) -> Outcome:
    return read_outcome(text, is_error=is_error, code=code, content=content)


def _is_content(call: ToolCallNode | None, answer: AnswerNode) -> bool:
    """Whether the output is what the call fetched (a file, a search), not a run's report."""
    if isinstance(answer, FileNode | SubagentResultNode):
        return True
    if call is None:
        return False
    command = command_of(call)
    if command is not None:
        return _shows_content(command)
    read, written = files_of(call)
    if read and not written:
        return True
    words = set(_NAME_WORDS.split(_CAMEL.sub("_", call.name).lower()))
    return not written and not words.isdisjoint(_CONTENT_TOOL_WORDS)


@lru_cache(maxsize=4096)
def _shows_content(command: str) -> bool:
    """Whether every step of a shell command prints content (`cat`, `grep`, `git diff`)."""
    verbs = []
    for segment in _SEGMENTS.split(command):
        words = [w for w in _shell_words(segment) if not _ASSIGNMENT.match(w)]
        if not words or words[0] in ("cd", "export", "set"):
            continue
        verb = words[0].rsplit("/", 1)[-1]
        if verb == "git":
            verb = f"git {next((w for w in words[1:] if not w.startswith('-')), '')}"
        elif verb == "sed" and "-i" in words:
            return False
        verbs.append(verb)
    return bool(verbs) and all(verb in _CONTENT_VERBS for verb in verbs)


def clear_cache() -> None:
    """Forget the memoized paths, outcomes, failure entities, uses (`caches.clear_caches`)."""
    _shell_paths.cache_clear()
    _shows_content.cache_clear()
    _outcome.cache_clear()
    _failure_entities.cache_clear()
    _RECENT_USES.clear()


# What an agent puts around the run it means: a `cd` into the checkout first, and after
# it a redirection of stderr and a pipe that only shortens the output. `pytest x 2>&1 |
# tail -100` failing and `cd /repo && pytest x | tail -30` passing are the same run.
_LEADING_CD = re.compile(r"^\s*cd\s+(?:\"[^\"]*\"|'[^']*'|[^\s;&|]+)\s*(?:&&|;)\s*")
_TRAILING_VIEW = re.compile(
    r"\s*(?:2>&1|\|&?\s*(?:tail|head|cat|less|more)(?:\s+-{0,2}[\w=]+)*)\s*$"
)


def command_key(command: str) -> str:
    """The run a shell command makes, without the `cd` before it and the views after it."""
    key = " ".join(command.split())
    while (found := _LEADING_CD.match(key)) and found.end() < len(key):
        key = key[found.end() :]
    while (found := _TRAILING_VIEW.search(key)) and found.start() > 0:
        key = key[: found.start()]
    return key


def error_key(call: ToolCallNode | None, answer: AnswerNode) -> str:
    """What identifies "the same tool or command" for error resolution."""
    if call is None:
        return answer.name or "unknown tool"
    command = command_of(call)
    if command is not None:
        return clip(command_key(command), 120)
    read, written = files_of(call)
    paths = written or read
    return f"{call.name} {paths[0]}" if paths else call.name


def user_entities(nodes: Iterable[Node], *, per_turn: int) -> list[str]:
    """Critical entities of the user's turns among `nodes` (at most `per_turn` from each).

    Not a notice's (`UserNode.notice`): the harness's text in the user's role is no word
    of the user's. Claude Code's list of agent types, a notice after the first request,
    put a dozen of its names (`settings.json`, `keybindings.json`) among the brief's key
    identifiers, where the room is for what the user named.
    """
    found: dict[str, None] = {}
    for node in nodes:
        if isinstance(node, UserNode) and not node.notice:
            found.update(dict.fromkeys(critical_entities(node.text, limit=per_turn)))
    return list(found)


def dedupe(items: Iterable[str]) -> list[str]:
    """`items` without repeats, first occurrence kept."""
    return list(dict.fromkeys(items))


@dataclass(frozen=True, slots=True)
class ToolUse:
    """A call paired with its answer.

    Attributes:
        call: The call, when it is among the nodes.
        answer: The node that answered it.
        outcome: How it ended.
        key: What makes two uses "the same tool or command".
    """

    call: ToolCallNode | None
    answer: AnswerNode
    outcome: Outcome
    key: str


# A summary reads the uses of its span four times (the brief's errors, its open errors'
# and failures' entities, the entities a brief must keep), each a pass over hundreds of
# outputs: the latest spans' uses are kept, matched by the very node objects (nodes are
# immutable, so the same objects give the same uses).
_RECENT_USES: list[tuple[tuple[Node, ...], tuple[ToolUse, ...]]] = []
_RECENT_SPANS = 2


def tool_uses(nodes: Iterable[Node]) -> list[ToolUse]:
    """Every answered call among `nodes`, in order (a reused call id pairs with its latest call)."""
    span = tuple(nodes)
    for known, uses in list(_RECENT_USES):
        if len(known) == len(span) and all(map(operator.is_, known, span)):
            return list(uses)
    found = _tool_uses(span)
    _RECENT_USES[:] = [(span, tuple(found)), *_RECENT_USES[: _RECENT_SPANS - 1]]
    return found


# Codex CLI's unified exec: `exec_command` answers "Process running with session ID N"
# when its command outlives the call's wait, and each later `write_stdin` with that
# `session_id` answers the next chunk of the same command's output, the last one with
# "Process exited with code N".
_SESSION_RUNNING = re.compile(r"^Process running with session ID (\d+)\s*$", re.MULTILINE)


def still_running(answer: AnswerNode) -> bool:
    """Whether `answer` is a chunk of a command still running (a Codex exec session's).

    It tells no outcome: the command's exit status comes with a later chunk.
    """
    return _SESSION_RUNNING.search(answer.text) is not None


def _tool_uses(nodes: Sequence[Node]) -> list[ToolUse]:
    latest: dict[str, ToolCallNode] = {}
    running: dict[str, ToolCallNode] = {}  # a Codex exec session -> the call that started it
    uses: list[ToolUse] = []
    for node in nodes:
        if isinstance(node, ToolCallNode):
            latest[node.tool_call_id] = node
        elif isinstance(node, AnswerNode) and node.tool_call_id is not None:
            call = latest.pop(node.tool_call_id, None)
            # A chunk of a running command is that command's output: its exit status
            # is the command's, and an error in it is keyed by the command.
            call = running.get(_continued_session(call), call)
            if call is not None and call.name == "exec_command":  # only it starts one
                started = _SESSION_RUNNING.search(node.text)
                if started is not None:
                    running[started.group(1)] = call
            uses.append(ToolUse(call, node, outcome_of(node, call), error_key(call, node)))
    return uses


def _continued_session(call: ToolCallNode | None) -> str:
    """The exec session a Codex `write_stdin` call reads on (empty for any other call)."""
    if call is None or call.name != "write_stdin":
        return ""
    parsed = call.parsed_arguments
    session = parsed.get("session_id") if isinstance(parsed, dict) else None
    return str(session) if isinstance(session, int | str) and not isinstance(session, bool) else ""


@dataclass(frozen=True, slots=True)
class ErrorFact:
    """An error seen in the session.

    Attributes:
        key: The tool or command that failed.
        said: What went wrong in our words: a test run's counts, or `failed` when the
            output gave no line; else empty.
        line: The line copied from the output that says what went wrong; else empty.
        source: The tool whose output `line` is.
        resolved: Whether a later use of the same tool or command read `ok`.
        fixed: The line of that later use's output that shows it worked
            (`outcomes.success_gist`); empty when unresolved or when it showed nothing.
    """

    key: str
    said: str
    line: str
    source: str
    resolved: bool
    fixed: str = ""

    @property
    def gist(self) -> str:
        """`said` and `line` as one plain string."""
        return ": ".join(part for part in (self.said, self.line) if part)


def source_of(use: ToolUse) -> str:
    """The name of the tool whose output `use.answer` is."""
    if use.call is not None and use.call.name:
        return use.call.name
    return use.answer.name or "a tool"


def errors_of(uses: Iterable[ToolUse]) -> list[ErrorFact]:
    """Errors in order of first failure; a later success of the same key resolves one.

    Only a use that reads `ok` resolves: one whose outcome is unknown leaves the error
    as it was (nothing says it went away).
    """
    state: dict[str, ErrorFact] = {}
    for use in uses:
        outcome = use.outcome
        if outcome.failed:
            said = outcome.counts or ("" if outcome.line else "failed")
            state[use.key] = ErrorFact(use.key, said, outcome.line, source_of(use), False)
        elif outcome.ok and use.key in state and not state[use.key].resolved:
            fixed = success_gist(use.answer.text)
            state[use.key] = replace(state[use.key], resolved=True, fixed=fixed)
    return list(state.values())


def open_error_entities(nodes: Iterable[Node]) -> list[str]:
    """Critical entities of the errors among `nodes` that are still open."""
    found: dict[str, None] = {}
    for error in errors_of(tool_uses(nodes)):
        if not error.resolved:
            found.update(dict.fromkeys(critical_entities(error.gist)))
    return list(found)


def failure_entities(nodes: Iterable[Node], *, per_failure: int | None) -> list[str]:
    """Critical entities of every failed tool use's whole output, each once.

    The gist line names the error; the paths, names and numbers around it (a
    traceback's frames, the file and line a linter points at) are what the agent needs
    when it meets the error again, resolved or not. The lines of a test run that report
    a test passed are left out: a failed run of a whole suite lists every file it ran
    (in a Gemini CLI session at an 8,000-token budget, 222 passing test files took 2,500
    tokens of the brief, while the file the agent was editing was cut). At most `per_failure`
    from each (`None`: all of them; the brief's bound then drops the oldest first).
    """
    found: dict[str, None] = {}
    for use in tool_uses(nodes):
        if use.outcome.failed:
            found.update(dict.fromkeys(_failure_entities(use.answer.text, per_failure)))
    return list(found)


# Every brief re-reads the failed outputs of its span: each is read once.
@lru_cache(maxsize=4096)
def _failure_entities(text: str, limit: int | None) -> tuple[str, ...]:
    """The critical entities of a failed output's lines that do not report a pass.

    Of a tool's JSON reports, the lines of what they say (`reported_text`): their escaped
    line breaks would glue an `n` to the word after each.
    """
    said = reported_text(text)
    kept = "\n".join(line for line in said.split("\n") if not reports_a_pass(line))
    return tuple(critical_entities(kept, limit=limit))
