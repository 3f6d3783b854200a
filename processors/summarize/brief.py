"""The structured brief: its sections, how it is written, read back, merged and bounded.

A brief is markdown under a fixed title, one `##` heading per section. Writing and
reading are inverse for briefs this module wrote, which is what makes rolling summaries
updates rather than summaries of summaries: the previous brief is read back into
sections, the newer span's facts are merged in, and the result is bounded again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from processors.summarize.facts import ErrorFact, command_key, dedupe
from processors.summarize.quoting import code_span, find_output_quote, quote_output, read_span
from processors.summarize.updates import is_stale, stale_values, supersede
from processors.summarize.written import Writes, apply

__all__ = [
    "ASKED_BY",
    "DROP_ORDER",
    "LIVE_RESULTS",
    "TITLE",
    "TOOL_IDENTIFIERS",
    "Brief",
    "bound",
    "cap_lists",
    "clip_tokens",
    "merge",
    "parse",
    "render",
    "tool_lines",
]

#: The first line of every brief; how a previous brief is recognized.
TITLE = "# Summary of the earlier conversation"

_BLOCKS = {
    "goal": "Goal: the user's first request, verbatim",
    "earlier": "Earlier summary",
}
_LISTS = {
    "requests": "User messages (verbatim; a later value replaces an earlier one)",
    "focus": "Requested focus",
    "constraints": "User constraints and preferences (verbatim)",
    "decisions": "Decisions made and why",
    "plan": "Plan (the latest todo list)",
    "files_modified": "Files modified",
    "files_read": "Files read",
    "commands": "Commands and tool use",
    "tests": "Latest test run (the runner's summary as printed)",
    "questions": "Open questions (not answered later)",
    "after_error": "After the latest error: the next output of the same tool (verbatim lines)",
}
#: Headings earlier versions wrote, read back as the section they name now.
_FORMER_HEADINGS = {"Decisions": "decisions"}
_ERRORS = "Errors"
_IDENTIFIERS = "Key identifiers"
_WRITTEN = "Files as the agent wrote them (its later edits applied)"
_WRITTEN_FILE = re.compile(r"^### `(.+)`$")
_STATE = "Current state and next step"
_HEADING_TO_FIELD = {
    **{v: k for k, v in _BLOCKS.items()},
    **{v: k for k, v in _LISTS.items()},
    _ERRORS: "errors",
    _IDENTIFIERS: "identifiers",
    _STATE: "state",
    _WRITTEN: "written",
    **_FORMER_HEADINGS,
}
_OMITTED = re.compile(r"^\((\d+) earlier items? omitted\)$")
_ERROR_ITEM = re.compile(r"^\[(open|resolved)\] `(.*?)`: (.*)$")
_ASKED = "Asked for: "
#: Opens the line of key identifiers found in tool output (each one a code span).
TOOL_IDENTIFIERS = "From tool output: "

#: Sections dropped from, oldest items first, when a brief is over its bound; most
#: expendable first. Older open errors, what the failed tool showed next, constraints,
#: the user's own messages and identifiers go last (the newest error after all of them).
DROP_ORDER = (
    "written",
    "files_read",
    "commands",
    "decisions",
    "focus",
    "resolved",
    "questions",
    "plan",
    "files_modified",
    "open",
    "after_error",
    "constraints",
    "tool_identifiers",
    "tests",
    "requests",
    "identifiers",
)


@dataclass
class Brief:
    """The sections of a brief, built fresh for each summary (never shared)."""

    goal: str = ""
    earlier: str = ""
    asked: str = ""
    requests: list[str] = field(default_factory=list)
    """The user's messages after the first, verbatim, oldest first; stale values removed."""
    focus: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    """The assistant's decisions, each with the reason it gave, if any."""
    plan: list[str] = field(default_factory=list)
    """The latest todo list an agent wrote (`[status] step`); a newer list replaces it."""
    files_modified: list[str] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    """The newest test run (one item, as a command item reads): what the agent compares
    its next run with. Kept apart from `commands`, whose oldest items go first; a newer
    run replaces it, and the replaced one joins the commands."""
    questions: list[str] = field(default_factory=list)
    """Questions the user or the assistant asked that the other has not answered since."""
    errors: list[ErrorFact] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    tool_identifiers: list[str] = field(default_factory=list)
    """Key identifiers found only in tool output (written quoted, on a line of their own)."""
    state: str = ""
    omitted: dict[str, int] = field(default_factory=dict)
    after_error: list[str] = field(default_factory=list)
    """Lines of the first output of the same tool that did not fail after the latest
    error, each quoted as written (`quote_output`): what the agent saw next. Kept while
    fewer than `LIVE_RESULTS` tool results came after the error."""
    written: dict[str, str] = field(default_factory=dict)
    """Each file the agent wrote whole, as it reads after its later edits, by path; the
    most recently written last."""
    writes: Writes = field(default_factory=Writes)
    """The span's edits to files it did not write, and the files it changed in ways not
    known (not written; applied to an older brief's `written` when merged)."""
    failed: bool = False
    """The span had a failed tool use (not written; a newer error replaces `after_error`)."""
    since_error: int = 0
    """Tool results in the span after its latest failure, or all of them without one (not
    written; `after_error` goes stale after `LIVE_RESULTS`)."""
    successes: dict[str, str] = field(default_factory=dict)
    """Keys of tool uses that read `ok` in the span, each with the line its output showed
    (not written; resolves older errors, and says what fixed them)."""
    spoke: set[str] = field(default_factory=set)
    """Who wrote text in the span, `user` or `assistant` (not written; answers older
    questions of the other)."""

    def list_of(self, name: str) -> list[str]:
        """The list section called `name`."""
        items: list[str] = getattr(self, name)
        return items


_FIXED = " then: "
"""Ends a resolved error's item: the line of the output that showed the fix worked."""


def _error_line(error: ErrorFact) -> str:
    status = "resolved" if error.resolved else "open"
    key = error.key.replace("`", "'")
    quoted = quote_output(error.source, error.line) if error.line else ""
    said = "; ".join(part for part in (error.said, quoted) if part)
    fixed = f";{_FIXED}{code_span(error.fixed)}" if error.resolved and error.fixed else ""
    return f"[{status}] `{key}`: {said or 'failed'}{fixed}"


def _read_error(status: str, key: str, rest: str) -> ErrorFact:
    """An error item read back: its words, the tool output it quotes, and what fixed it."""
    resolved = status == "resolved"
    rest, fixed = _split_fixed(rest) if resolved else (rest, "")
    found = find_output_quote(rest)
    if found is None:
        return ErrorFact(key, rest, "", "", resolved, fixed)
    start, source, line = found
    return ErrorFact(key, rest[:start].removesuffix("; "), line, source, resolved, fixed)


def _split_fixed(rest: str) -> tuple[str, str]:
    """`rest` without its closing `; then: <span>`, and the span's text ("" if none)."""
    start = rest.rfind(";" + _FIXED)
    while start >= 0:
        span = read_span(rest, start + 1 + len(_FIXED))
        if span is not None and span[1] == len(rest):
            return rest[:start], span[0]
        start = rest.rfind(";" + _FIXED, 0, start)
    return rest, ""


def _identifier_lines(brief: Brief) -> list[str]:
    lines = [", ".join(brief.identifiers)] if brief.identifiers else []
    if brief.tool_identifiers:
        lines.append(TOOL_IDENTIFIERS + ", ".join(map(code_span, brief.tool_identifiers)))
    return lines


def _read_tool_identifiers(line: str) -> list[str]:
    """The identifiers of a `TOOL_IDENTIFIERS` line, each read out of its code span."""
    found: list[str] = []
    position = len(TOOL_IDENTIFIERS)
    while (span := read_span(line, position)) is not None:
        found.append(span[0])
        position = span[1] + 2  # past ", "
    return found


def _list_lines(items: Sequence[str], omitted: int) -> list[str]:
    lines = [f"({omitted} earlier items omitted)"] if omitted else []
    return [f"- {line}" for line in (*lines, *items)]


#: The sections of a rendered brief, in order: each is one paragraph of the markdown.
_SECTIONS = (
    "title",
    *_BLOCKS,
    *(name for name in _LISTS if name != "after_error"),
    "written",
    "errors",
    "after_error",
    "identifiers",
    "state",
)
#: The section each name in `DROP_ORDER` drops from.
_SECTION_OF = {
    **{name: name for name in _LISTS},
    "open": "errors",
    "resolved": "errors",
    "identifiers": "identifiers",
    "tool_identifiers": "identifiers",
    "written": "written",
}


def _section(brief: Brief, name: str) -> str:
    """One section of the brief as markdown; empty when the section is left out."""
    if name == "title":
        return TITLE
    if name in _BLOCKS:
        text: str = getattr(brief, name)
        return f"## {_BLOCKS[name]}\n{text}" if text else ""
    if name in _LISTS:
        items = brief.list_of(name)
        omitted = brief.omitted.get(name, 0)
        head = [_ASKED + brief.asked] if name == "focus" and brief.asked else []
        if not (items or omitted or head):
            return ""
        return "\n".join([f"## {_LISTS[name]}", *head, *_list_lines(items, omitted)])
    if name == "errors":
        errors = [_error_line(e) for e in brief.errors]
        omitted_errors = brief.omitted.get("errors", 0)
        if not (errors or omitted_errors):
            return ""
        return "\n".join([f"## {_ERRORS}", *_list_lines(errors, omitted_errors)])
    if name == "written":
        return _written_section(brief.written)
    if name == "identifiers":
        identifiers = _identifier_lines(brief)
        return "\n".join([f"## {_IDENTIFIERS}", *identifiers]) if identifiers else ""
    return f"## {_STATE}\n{brief.state}" if brief.state else ""


def _written_section(files: Mapping[str, str]) -> str:
    if not files:
        return ""
    parts = [f"## {_WRITTEN}"]
    for path, text in files.items():
        runs = [len(run) for run in re.findall(r"`+", text)]
        fence = "`" * max(3, max(runs, default=0) + 1)
        parts.append(f"### `{path}`\n{fence}\n{text}\n{fence}")
    return "\n".join(parts)


def render(brief: Brief) -> str:
    """The brief as markdown; empty sections are left out."""
    return _joined([_section(brief, name) for name in _SECTIONS])


def _joined(sections: Sequence[str]) -> str:
    return "\n\n".join(section for section in sections if section)


def _read_item(brief: Brief, name: str, line: str) -> None:
    omitted = _OMITTED.match(line)
    if omitted:
        key = "errors" if name == "errors" else name
        brief.omitted[key] = brief.omitted.get(key, 0) + int(omitted.group(1))
    elif name == "errors":
        match = _ERROR_ITEM.match(line)
        if match:
            brief.errors.append(_read_error(*match.groups()))
    else:
        brief.list_of(name).append(line)


def parse(text: str) -> Brief | None:
    """Read back a brief that `render` wrote; `None` for any other text."""
    lines = text.strip().split("\n")  # not splitlines: a quoted goal keeps its \r\n
    if not lines or lines[0].strip() != TITLE:
        return None
    brief = Brief()
    blocks: dict[str, list[str]] = {}
    current: str | None = None
    fence: str | None = None
    path = ""
    body: list[str] = []
    for line in lines[1:]:
        if current == "written" and (fence is not None or _WRITTEN_FILE.match(line)):
            if fence is None:
                match = _WRITTEN_FILE.match(line)
                path, fence, body = (match.group(1) if match else ""), "", []
            elif not fence:
                fence = line.strip()
            elif line == fence:
                brief.written[path] = "\n".join(body)
                fence = None
            else:
                body.append(line)
            continue
        heading = line[3:].strip() if line.startswith("## ") else None
        if heading in _HEADING_TO_FIELD:
            current = _HEADING_TO_FIELD[heading]
            blocks.setdefault(current, [])
        elif current in (*_BLOCKS, "state", "identifiers"):
            blocks[current].append(line)
        elif current is not None and line.startswith("- "):
            _read_item(brief, current, line[2:])
        elif current == "focus" and line.startswith(_ASKED):
            brief.asked = line[len(_ASKED) :]
    for name, block in blocks.items():
        joined = "\n".join(block).strip()
        if name == "identifiers":
            for line in block:
                if line.startswith(TOOL_IDENTIFIERS):
                    brief.tool_identifiers.extend(_read_tool_identifiers(line))
                else:
                    brief.identifiers.extend(i for i in line.strip().split(", ") if i)
        elif name in (*_BLOCKS, "state"):
            setattr(brief, name, joined)
    return brief


def merge(old: Brief, new: Brief) -> Brief:
    """`old` updated with the facts of a newer span (`new`): a rolling update."""
    errors: dict[str, ErrorFact] = {}
    for error in old.errors:
        # Keyed by the run: a brief written before keys left out `cd` and `| tail` has
        # its errors resolved by the same run too.
        run = command_key(error.key)
        if run in new.successes and not error.resolved:
            error = replace(error, resolved=True, fixed=new.successes[run])
        errors[run] = error
    for error in new.errors:
        errors.pop(error.key, None)
        errors[error.key] = error
    modified = dedupe([*old.files_modified, *new.files_modified])
    identifiers = dedupe([*old.identifiers, *new.identifiers])
    from_tools = dedupe([*old.tool_identifiers, *new.tool_identifiers])
    touched = set(modified)
    merged = Brief(
        goal=old.goal or new.goal,
        earlier="\n\n".join(t for t in (old.earlier, new.earlier) if t),
        asked=new.asked or old.asked,
        files_modified=modified,
        files_read=[p for p in dedupe([*old.files_read, *new.files_read]) if p not in touched],
        errors=list(errors.values()),
        identifiers=identifiers,
        tool_identifiers=[i for i in from_tools if i not in identifiers],
        state=new.state or old.state,
        successes=old.successes | new.successes,
        spoke=old.spoke | new.spoke,
        plan=new.plan or old.plan,
        tests=new.tests or old.tests,
        questions=dedupe([*_unanswered(old.questions, new.spoke), *new.questions]),
        failed=old.failed or new.failed,
    )
    merged.after_error, merged.since_error = _after_error(old, new)
    # The older brief's files as the newer span left them (its edits applied, files it
    # changed in ways not known dropped); the span's own files are the newest.
    merged.written = apply(old.written, _span_writes(new))
    for name in ("focus", "constraints", "decisions"):
        setattr(merged, name, dedupe([*old.list_of(name), *new.list_of(name)]))
    # A test run a newer one replaced is history again: it ran after the old commands.
    replaced = [t for t in old.tests if new.tests and t not in new.tests]
    merged.commands = dedupe([*old.commands, *replaced, *new.commands])
    # A message the user repeated stands where it was said last: the bound drops the
    # oldest first, and never the newest (`_drop_one`).
    said = dedupe([*old.requests, *new.requests][::-1])[::-1]
    merged.requests = supersede(said)
    stale = stale_values(said)
    merged.identifiers = [i for i in merged.identifiers if not is_stale(i, stale)]
    for name in {*old.omitted, *new.omitted}:
        merged.omitted[name] = old.omitted.get(name, 0) + new.omitted.get(name, 0)
    return merged


def _span_writes(new: Brief) -> Writes:
    """What a newer span did to the agent's files: its files written whole, its edits."""
    return Writes(files=dict(new.written), edits=list(new.writes.edits), lost=set(new.writes.lost))


#: Tool results after an error for which what followed it stays in the brief (as the
#: orchestrator's `recency.RECENT_ANSWERS` spares the live error's outputs).
LIVE_RESULTS = 10


def _after_error(old: Brief, new: Brief) -> tuple[list[str], int]:
    """What followed the latest error, and the tool results since it, after a merge.

    A newer span's error (or an absorbed brief's lines) replaces the older lines; they
    go stale once `LIVE_RESULTS` tool results came after their error.
    """
    if new.failed or new.after_error:
        return list(new.after_error), new.since_error
    since = old.since_error + new.since_error
    return (list(old.after_error) if since < LIVE_RESULTS else []), since


#: How a question item says who asked it; the other party's reply answers it.
ASKED_BY: Mapping[str, str] = MappingProxyType(
    {"user": "the user asked: ", "assistant": "the assistant asked: "}
)


def _unanswered(questions: Sequence[str], spoke: set[str]) -> list[str]:
    """The questions no later text of the other party answers."""
    other = {"user": "assistant", "assistant": "user"}
    return [
        question
        for question in questions
        if not any(question.startswith(ASKED_BY[who]) and other[who] in spoke for who in other)
    ]


def cap_lists(brief: Brief, max_items: int) -> None:
    """Keep at most `max_items` (the newest) in each list section; count the rest.

    The user's messages are not capped: every one stays while the token bound allows.
    """
    for name in (*(n for n in _LISTS if n != "requests"), "errors"):
        items: list[object] = getattr(brief, name)
        extra = len(items) - max_items
        if extra > 0:
            del items[:extra]
            brief.omitted[name] = brief.omitted.get(name, 0) + extra


def _drop_one(brief: Brief, name: str, keep: frozenset[str], *, latest: bool = False) -> bool:
    """Drop the oldest droppable item of one section; whether one was dropped.

    The newest error is droppable only with `latest`: the error the agent is acting on
    (or just fixed) is the last thing a brief gives up (`bound`).
    """
    if name in ("open", "resolved"):
        errors = brief.errors if latest else brief.errors[:-1]
        for index, error in enumerate(errors):
            if error.resolved == (name == "resolved"):
                del brief.errors[index]
                brief.omitted["errors"] = brief.omitted.get("errors", 0) + 1
                return True
        return False
    if name == "written":
        if not brief.written:
            return False
        del brief.written[next(iter(brief.written))]
        return True
    items = brief.list_of(name)
    if name == "requests" and len(items) <= 1:
        # The newest of the user's messages stays, even over the bound: a brief with none
        # of them is no summary of what was asked, and the checks would refuse it (a run
        # then compacts nothing, and the tool loop grows in the floor until refused).
        return False
    for index, item in enumerate(items):
        if item not in keep:
            del items[index]
            # A section about one output says nothing with its lines gone: no marker.
            if name not in ("identifiers", "tool_identifiers", "after_error", "tests"):
                brief.omitted[name] = brief.omitted.get(name, 0) + 1
            return True
    return False


def clip_tokens(text: str, limit: int, count: Callable[[str], int]) -> str:
    """`text` cut to about `limit` tokens: its head and tail around an omission marker."""
    tokens = count(text)
    if tokens <= limit:
        return text
    keep_chars = max(int(len(text) * limit / tokens) - 60, 0)
    head, back = keep_chars * 2 // 3, keep_chars // 3
    marker = f"\n[... about {tokens - limit:,} tokens omitted ...]\n"
    return text[:head].rstrip() + marker + (text[len(text) - back :].lstrip() if back else "")


def bound(brief: Brief, max_tokens: int, count: Callable[[str], int], keep: Sequence[str]) -> str:
    """Render `brief` within `max_tokens`, dropping the least needed items first.

    Items in `keep` are never dropped, nor the newest of the user's messages; if they
    alone are over the bound, the result is over it too (the candidate check refuses a
    brief no shorter than what it replaces).
    """
    kept = frozenset(keep)
    # A drop changes one section: only that one is written again (a brief shortened by a
    # hundred items would otherwise be written whole a hundred times). `count` is a
    # function of the text alone, so the text's last count stands until the text changes.
    sections = {name: _section(brief, name) for name in _SECTIONS}
    text = _joined(list(sections.values()))
    tokens = count(text)
    for name in DROP_ORDER:
        if name == "requests":
            # The user's own words go last: the earlier-summary block and the assistant's
            # last text are shortened before any of them is dropped.
            text, tokens = _shorten_blocks(brief, sections, max_tokens, count)
        section = _SECTION_OF[name]
        while tokens > max_tokens and _drop_one(brief, name, kept):
            sections[section] = _section(brief, section)
            text = _joined(list(sections.values()))
            tokens = count(text)
    if tokens > max_tokens and brief.errors:
        # Last of all, the newest error (kept through every drop above).
        status = "resolved" if brief.errors[-1].resolved else "open"
        _drop_one(brief, status, kept, latest=True)
        sections["errors"] = _section(brief, "errors")
        text = _joined(list(sections.values()))
    return text


def _shorten_blocks(
    brief: Brief, sections: dict[str, str], limit: int, count: Callable[[str], int]
) -> tuple[str, int]:
    """Shorten the earlier-summary block, then the state (to 80 tokens at least).

    Toward `limit`; returns the brief's text and its tokens after.
    """
    text = _joined(list(sections.values()))
    tokens = count(text)
    for name, floor in (("earlier", 0), ("state", 80)):
        over = tokens - limit
        block = getattr(brief, name)
        if over > 0 and block:
            setattr(brief, name, clip_tokens(block, max(count(block) - over, floor), count))
            sections[name] = _section(brief, name)
            text = _joined(list(sections.values()))
            tokens = count(text)
    return text, tokens


def tool_lines(text: str) -> list[int]:
    """The lines of a brief (1-based) that quote tool output, read the way `parse` reads.

    The command and error items that end in a quote of a tool's output, and the line of
    key identifiers found in tool output. Empty for any text that is not a brief.
    """
    lines = text.split("\n")
    if lines[0].strip() != TITLE:
        return []
    found: list[int] = []
    current: str | None = None
    for number, line in enumerate(lines[1:], start=2):
        heading = line[3:].strip() if line.startswith("## ") else None
        if heading in _HEADING_TO_FIELD:
            current = _HEADING_TO_FIELD[heading]
        elif current == "identifiers" and line.startswith(TOOL_IDENTIFIERS):
            found.append(number)
        elif current in ("commands", "tests", "errors", "after_error") and line.startswith("- "):
            if find_output_quote(line[2:]) is not None:
                found.append(number)
    return found
