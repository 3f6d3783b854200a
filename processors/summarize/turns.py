"""Decisions with their reasons, questions nobody answered, and the agent's latest plan.

A decision is an assistant sentence that commits to something ("I'll use X", "decided",
"switched to"); its reason is the clause that says why, in the sentence or in the one
after it ("because ...", "since ..."). A sentence that states a cause the agent found
("The lookup fails because the map is built lazily") is kept with them: the diagnosis
is why the decisions after it were made. A question is a sentence that ends in a question
mark, in any script; it is open until the other party writes text after it (the user's
reply answers the assistant's question, the assistant's reply the user's). The plan is
the last todo list a todo tool was given (Claude Code's and opencode's todo writers,
Gemini CLI's `write_todos`, Codex's `update_plan`).

```python
decisions_with_reasons("I'll use SQLite. It needs no server, so the tests stay local.")
# ["I'll use SQLite. It needs no server, so the tests stay local."]
```
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping

from context_graph.graph.nodes import AssistantNode, Node, ToolCallNode, UserNode
from processors.summarize.facts import ITEM_CHARS, arguments_of, clip, dedupe, sentences
from processors.summarize.said import split_sentences

__all__ = [
    "Questions",
    "clear_cache",
    "decisions_with_reasons",
    "is_todo_tool",
    "latest_plan",
    "question_sentences",
]

_DECISION = re.compile(
    r"\b(?:I'll|I will|I'm going to|we'll|we will|let's|going to|decided|decide to|"
    r"I chose|chose to|opted|going with|switch(?:ed)? to|the fix is|"
    r"the solution is|my plan|the plan is)\b"
    # "instead" and "rather than" choose only beside a verb of choosing: "use X instead",
    # "rather than patching it, subclass" ("it returns None instead" only observes).
    r"|\b(?:use|using|try|trying|pick|prefer|go with|switch to|subclass|patch|call)\b"
    r"[^.!?\n]{0,80}\b(?:instead|rather than)\b"
    r"|\b(?:instead of|rather than)\b[^.!?\n]{0,80}\b(?:use|try|pick|go with|switch to)\b"
    # German, Spanish, French: decided, I'll use; Chinese and Japanese: decided, will use.
    r"|\b(?:entschieden|werde ich|decidí|decidimos|usaré|j'ai décidé|nous avons décidé|"
    r"je vais)\b|决定|改用|決めました|にします",
    re.IGNORECASE,
)
_REASON = re.compile(
    r"\b(?:because|since|so that|so the|so it|to avoid|due to|given that|otherwise|"
    r"which means|that way|this way|weil|porque|ya que|parce que|car)\b|因为|由于|ので|ため",
    re.IGNORECASE,
)
#: A sentence that states a cause, decision or not (narrower than `_REASON`, which only
#: joins the sentence after a decision: "since" and "otherwise" alone say too little).
_CAUSE = re.compile(
    r"\b(?:because|due to|caused by|the (?:root )?cause|the reason|which is why|that's why|"
    r"that is why|which means|this means|so that|in order to|therefore|weil|porque|"
    r"parce que)\b|因为|由于|ので",
    re.IGNORECASE,
)
_QUESTION_END = re.compile("[?\uff1f]\\s*$")
#: Tool names (lower case, `_` and `-` removed) that take a todo list.
_TODO_TOOLS = frozenset({"todowrite", "writetodos", "updateplan", "todo"})
_TODO_LISTS = ("todos", "plan", "items", "tasks")
_TODO_TEXT = ("content", "step", "description", "task", "title", "text")


def decisions_with_reasons(text: str) -> list[str]:
    """The decisions of an assistant's text, each with its reason, and the causes it states.

    The sentence after a decision is its reason when it gives one and the decision
    itself does not. A sentence that states a cause (`_CAUSE`) and is no decision's
    reason is kept on its own, verbatim.
    """
    return list(_decisions(text))


#: A summary that is sized to its room reads its span twice (`HistorySummarizer`: the
#: whole span, then the shorter one the room leaves), and the regular expressions over
#: every sentence of every assistant turn were the largest part of reading it.
@functools.lru_cache(maxsize=4096)
def _decisions(text: str) -> tuple[str, ...]:
    said = list(sentences(text))
    found: list[str] = []
    joined = -1  # the sentence last taken in as a decision's reason
    for index, sentence in enumerate(said):
        if not _DECISION.search(sentence):
            if index != joined and _CAUSE.search(sentence):
                found.append(clip(sentence, ITEM_CHARS))
            continue
        after = said[index + 1] if index + 1 < len(said) else ""
        why = after if after and not _REASON.search(sentence) and _REASON.search(after) else ""
        if why:
            joined = index + 1
        found.append(clip(f"{sentence} {why}".strip(), ITEM_CHARS))
    return tuple(dedupe(found))


def question_sentences(text: str) -> list[str]:
    """The sentences of `text` that ask something (end in a question mark, any width)."""
    return list(_questions(text))


@functools.lru_cache(maxsize=4096)
def _questions(text: str) -> tuple[str, ...]:
    return tuple(s for s in split_sentences(text) if _QUESTION_END.search(s))


def clear_cache() -> None:
    """Forget the decisions and questions read (`processors.caches.clear_caches`)."""
    _decisions.cache_clear()
    _questions.cache_clear()


class Questions:
    """The questions of a run of turns still waiting for the other party's reply."""

    def __init__(self) -> None:
        self._open: dict[str, list[str]] = {"user": [], "assistant": []}
        self.spoke: set[str] = set()

    def read(self, node: Node) -> None:
        """Take in one turn: it answers the other party's questions and may ask its own."""
        if isinstance(node, UserNode) and not node.notice and node.text.strip():
            who, other = "user", "assistant"
        elif isinstance(node, AssistantNode) and node.text.strip():
            who, other = "assistant", "user"
        else:
            return
        self.spoke.add(who)
        self._open[other].clear()
        self._open[who].extend(question_sentences(node.text))

    def open(self, asked_by: Mapping[str, str]) -> list[str]:
        """The open questions, each opened by `asked_by[who]`, oldest first per party."""
        return dedupe(
            clip(asked_by[who] + question, ITEM_CHARS)
            for who in ("user", "assistant")
            for question in self._open[who]
        )


def latest_plan(nodes: Iterable[Node]) -> list[str]:
    """The items of the last todo list among `nodes`, as `[status] step`; empty if none."""
    plan: list[str] = []
    for node in nodes:
        if isinstance(node, ToolCallNode) and is_todo_tool(node.name):
            items = _todo_items(arguments_of(node))
            if items:
                plan = items
    return plan


def is_todo_tool(name: str) -> bool:
    """Whether a tool of this name takes the agent's todo list."""
    return name.lower().replace("_", "").replace("-", "") in _TODO_TOOLS


def _todo_items(args: dict[str, object]) -> list[str]:
    for key in _TODO_LISTS:
        entries = args.get(key)
        if isinstance(entries, list):
            return [item for entry in entries if (item := _todo_item(entry))]
    return []


def _todo_item(entry: object) -> str:
    if isinstance(entry, str):
        return clip(entry, 200)
    if not isinstance(entry, dict):
        return ""
    text = next((entry[k] for k in _TODO_TEXT if isinstance(entry.get(k), str)), "")
    status = entry.get("status")
    if not text:
        return ""
    return clip(f"[{status}] {text}" if isinstance(status, str) else text, 200)
