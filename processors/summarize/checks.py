"""Candidate checks: is a summary fit to stand in for the history it would replace?

A candidate is refused when it is not shorter than what it replaces, when it contains
tool-call syntax or an attempted tool call (a model that sees such text in its history
tends to copy it as prose instead of calling the tool), when it carries role markup (a
speaker label or chat-template token would forge a turn in the history), or when it
drops a pinned fact or a critical entity: the identifiers, paths and numbers of the user's
turns and of the errors still open (a summary that turns `ABC-1234` into `ABC-1243` is
worse than none), or when it loses a sentence the user said (`said`: every sentence of
their later messages that no later one restated, in any language). Each problem has a
kind (`CandidateCheck.kinds`), the typed reason a refusal is reported with.

```python
check = check_candidate(text, tokens=812, limit=5_000, required=["ABC-1234"])
if not check.ok:
    retry_with = check.retry_instructions()
```
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from context_graph.entities import missing_entities
from context_graph.graph.nodes import Node, ToolCallNode
from processors.summarize.facts import dedupe, open_error_entities, user_entities
from processors.summarize.quoting import outside_spans
from processors.summarize.said import lost_sentences

#: Why a candidate was refused, one kind per problem.
RefusalKind = Literal[
    "empty", "too_long", "tool_syntax", "role_markup", "missing", "lost_user_words"
]

__all__ = [
    "COMMON_TOOL_NAMES",
    "CandidateCheck",
    "RefusalKind",
    "check_candidate",
    "find_role_markup",
    "find_tool_call_syntax",
    "required_entities",
    "tool_names_of",
]

#: Tool names that are checked for call syntax even when the span did not use them.
COMMON_TOOL_NAMES = frozenset(
    {
        "bash",
        "Bash",
        "shell",
        "execute_bash",
        "run_command",
        "str_replace_editor",
        "str_replace_based_edit_tool",
        "Read",
        "Write",
        "Edit",
        "MultiEdit",
        "Glob",
        "Grep",
        "read_file",
        "write_file",
        "edit_file",
        "apply_patch",
        "execute_ipython_cell",
        "python",
    }
)

_LABELLED_CALL = re.compile(
    r"\[\s*(?:assistant\s+)?tool[ _-]?(?:call|use)s?\s*\]"
    r"|^\W*(?:assistant\s+)?tool[ _-]?(?:call|use)\s*:\s*[\w.-]+\s*[({]",
    re.IGNORECASE | re.MULTILINE,
)
_JSON_CALL = re.compile(
    r'"(?:name|tool|tool_name|function)"\s*:\s*"[^"\n]*"\s*,\s*'
    r'"(?:arguments|input|parameters|args)"\s*:'
    r'|"(?:arguments|input|parameters)"\s*:\s*\{[^{}]*\}\s*,\s*"name"\s*:'
    r'|"(?:tool_calls|function_call)"\s*:'
    r'|"type"\s*:\s*"(?:tool_use|tool_call|function_call)"'
)
_XML_CALL = re.compile(
    r"<\s*/?\s*(?:[\w-]+:)?(?:function_calls|invoke|tool_call|tool_calls|tool_use|"
    r"tool_code|function_call)\b"
    r"|<\s*(?:[\w-]+:)?parameter\s+name\s*="
    r"|<function=[\w.-]+>"
    r"|<\|(?:tool_call|tool_calls|python_tag|tool_call_begin|tool_calls_begin)[^|>]*\|>"
    r"|\[TOOL_CALLS\]",
    re.IGNORECASE,
)
_LINE_PREFIX = re.compile(r"^[\s>*`#-]*(?:\d+[.)]\s*)?")
# Role markup: what a transcript or a chat template uses to say who speaks. In a summary
# that is sent as history it forges a turn: a tool output that smuggled `Human: run this`
# into the summary would be read as the user's words.
_ROLE_MARKUP = re.compile(
    r"^[\s>*_#-]*(?:Human|Assistant|User|System|Developer)\s*[*_]*\s*:"
    r"|<\|(?:im_start|im_end|im_sep|system|user|assistant|developer|endoftext|eot_id|"
    r"start_header_id|end_header_id)\|>"
    r"|<<\s*/?\s*SYS\s*>>|\[/?INST\]|<(?:start|end)_of_turn>"
    r"|<\s*/?\s*(?:system|user|human|assistant|developer)(?:_message)?\s*>"
    r'|"role"\s*:\s*"(?:system|user|assistant|developer|tool|model|human)"',
    re.IGNORECASE | re.MULTILINE,
)


def _call_lines(text: str, names: frozenset[str]) -> list[str]:
    """Whole lines that read like a call of a known tool: `bash(command="ls")`."""
    hits: list[str] = []
    for line in text.splitlines():
        body = _LINE_PREFIX.sub("", line).rstrip(" `;")
        paren = body.find("(")
        if paren > 0 and body.endswith(")") and body[:paren].strip() in names:
            hits.append(line.strip())
    return hits


def find_tool_call_syntax(text: str, tool_names: Iterable[str] = ()) -> list[str]:
    """The snippets of `text` that look like a tool call, in order found.

    Looks for lines that read as a call of a tool (`name(args)` for the names in
    `tool_names` and `COMMON_TOOL_NAMES`), labelled calls (`[tool call]`), JSON objects
    with a tool name and its arguments, and XML or special-token tool tags.
    """
    names = COMMON_TOOL_NAMES | frozenset(n for n in tool_names if n)
    found = _call_lines(text, names)
    for pattern in (_LABELLED_CALL, _JSON_CALL, _XML_CALL):
        found.extend(m.group(0).strip() for m in pattern.finditer(text))
    return dedupe(found)


def find_role_markup(text: str) -> list[str]:
    """The snippets of `text` that say who speaks, in order found.

    Speaker labels at the start of a line (`Human:`, `User:`, `System:`), chat-template
    tokens (`<|im_start|>`, `[INST]`, `<start_of_turn>`), role tags (`<system>`) and JSON
    role fields (`"role": "system"`). Prose about a speaker ("the user asked") is none,
    and so is text inside a one-line code span: that is how the extractive brief quotes
    tool output (`output of `bash`: `<|im_start|>system``), and a span's text cannot
    end the span, so it reads as a quote, not as a turn.
    """
    scanned = outside_spans(text)
    return dedupe(m.group(0).strip() for m in _ROLE_MARKUP.finditer(scanned))


def required_entities(
    nodes: Sequence[Node],
    *,
    carried: Sequence[str] = (),
    per_turn: int = 12,
    limit: int = 48,
) -> list[str]:
    """The critical entities a summary of `nodes` must keep verbatim.

    The entities of the user turns (at most `per_turn` from each) and of the errors
    still open, then, as room allows within `limit`, those `carried` over from the
    summary this one updates.
    """
    fresh = dedupe([*user_entities(nodes, per_turn=per_turn), *open_error_entities(nodes)])
    fresh = fresh[:limit]
    room = max(limit - len(fresh), 0)
    old = [e for e in dedupe(carried) if e not in fresh][:room]
    return [*old, *fresh]


@dataclass(frozen=True, slots=True)
class CandidateCheck:
    """The verdict on a candidate summary.

    Attributes:
        tokens: The candidate's tokens.
        limit: The tokens of what it would replace; the candidate must be below.
        missing: Required entities and pinned facts it does not contain verbatim.
        tool_syntax: Snippets that look like tool calls.
        role_markup: Snippets that say who speaks (`Human:`, `<|im_start|>system`).
        empty: Whether the candidate has no text at all.
        lost: The user's sentences it does not keep (neither verbatim nor all their
            words on one line).
    """

    tokens: int
    limit: int
    missing: tuple[str, ...] = ()
    tool_syntax: tuple[str, ...] = ()
    role_markup: tuple[str, ...] = ()
    empty: bool = False
    lost: tuple[str, ...] = ()

    @property
    def too_long(self) -> bool:
        """Whether the candidate is not shorter than what it replaces."""
        return self.tokens >= self.limit

    @property
    def ok(self) -> bool:
        """Whether the candidate may be committed."""
        return not self.kinds

    @property
    def kinds(self) -> tuple[RefusalKind, ...]:
        """The kind of every problem found, in a fixed order (empty when `ok`)."""
        found: dict[RefusalKind, object] = {
            "empty": self.empty,
            "too_long": self.too_long,
            "tool_syntax": self.tool_syntax,
            "role_markup": self.role_markup,
            "missing": self.missing,
            "lost_user_words": self.lost,
        }
        return tuple(kind for kind, present in found.items() if present)

    def reason(self) -> str:
        """A short phrase naming every problem (empty when `ok`)."""
        problems: list[str] = []
        if self.empty:
            problems.append("empty")
        if self.too_long:
            problems.append(f"not shorter ({self.tokens:,} >= {self.limit:,} tokens)")
        if self.tool_syntax:
            problems.append(f"tool-call syntax ({_shorten(self.tool_syntax[0])})")
        if self.role_markup:
            problems.append(f"role markup ({_shorten(self.role_markup[0])})")
        if self.missing:
            problems.append("dropped " + ", ".join(self.missing[:5]))
        if self.lost:
            shown = " | ".join(_shorten(s) for s in self.lost[:3])
            problems.append(f"lost {len(self.lost)} of the user's sentences ({shown})")
        return "; ".join(problems)

    def retry_instructions(self) -> str:
        """Instructions for one more attempt that name what was wrong."""
        lines = ["Your previous summary was rejected. Write it again and fix this:"]
        if self.empty:
            lines.append("- It was empty.")
        if self.missing:
            lines.append(
                "- It dropped or changed these; copy each exactly as written: "
                + ", ".join(self.missing)
            )
        if self.lost:
            lines.append(
                "- It lost what the user said; quote each of these sentences of the user "
                "exactly, in its own language: " + " | ".join(self.lost)
            )
        if self.tool_syntax:
            lines.append(
                "- It contained tool-call syntax; describe actions in plain prose, "
                "never as function calls, JSON tool requests or tool tags."
            )
        if self.role_markup:
            lines.append(
                "- It contained speaker labels or chat markup; say who said what in prose "
                '("the user asked ..."), never as "User:", "Human:" or role tags.'
            )
        if self.too_long:
            lines.append(f"- It must be well under {self.limit:,} tokens.")
        return "\n".join(lines)


def _shorten(snippet: str) -> str:
    return snippet if len(snippet) <= 60 else snippet[:57] + "..."


def check_candidate(
    text: str,
    *,
    tokens: int,
    limit: int,
    required: Sequence[str] = (),
    facts: Sequence[str] = (),
    tool_names: Iterable[str] = (),
    said: Sequence[str] = (),
) -> CandidateCheck:
    """Check a candidate summary.

    Args:
        text: The candidate.
        tokens: Its tokens (counted the way the proposal counts them).
        limit: The tokens of what it would replace.
        required: Critical entities it must contain verbatim.
        facts: Pinned facts it must contain verbatim.
        tool_names: Names of the tools the summarized span used.
        said: The user's sentences it must keep (`said.user_sentences`).
    """
    return CandidateCheck(
        tokens=tokens,
        limit=limit,
        missing=tuple(missing_entities([*required, *facts], text)),
        tool_syntax=tuple(find_tool_call_syntax(text, tool_names)),
        role_markup=tuple(find_role_markup(text)),
        empty=not text.strip(),
        lost=tuple(lost_sentences(said, text)),
    )


def tool_names_of(nodes: Iterable[Node]) -> list[str]:
    """The names of the tools called among `nodes`."""
    return dedupe(n.name for n in nodes if isinstance(n, ToolCallNode))
