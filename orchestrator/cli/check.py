"""`context-graph check`: every rule a request body breaks, its format detected if not given.

A rule's message can quote the body (a tool call's id); with `--redact` every line goes
through the `OutputScreen` every command's output goes through.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.wires import WIRES
from context_graph.importers import read_raw
from context_graph.render import FORMATS as RENDER_FORMATS
from context_graph.render import count_payload
from context_graph.tokens.counting import ProviderFormat, default_counter
from context_graph.validate.request import detect_request_format, request_format_clues, validate
from orchestrator.cli.errors import EXIT_OK, EXIT_VIOLATIONS
from orchestrator.cli.session import output_screen

__all__ = ["run_check"]


def run_check(args: argparse.Namespace, _progress: object) -> int:
    """Validate the body; exit 1 when it breaks any rule."""
    raw = read_raw(args.payload)
    where = SourceLocation(str(args.payload))
    body = _one_object(raw.data, raw.lines is not None, where)
    fmt: ProviderFormat = args.provider or _detect(body, where)
    note = _mismatch(body, fmt) if args.provider else None
    violations = [v.model_dump() for v in validate(body, fmt)]
    tokens = None
    if not violations:
        tokens = count_payload(body, fmt, default_counter())
        if args.budget is not None and tokens > args.budget:
            violations.append(
                {
                    "rule": "over_budget",
                    "index": None,
                    "path": "",
                    "message": f"the request has {tokens:,} tokens, over the budget of "
                    f"{args.budget:,}: drop or compact earlier turns",
                }
            )
    screen = output_screen(args)
    screen.learn_value(body)  # a message quotes the body's ids and values, cut short
    if args.json:
        out = {"format": fmt, "detected": args.provider is None, "note": note}
        text = json.dumps({**out, "violations": violations, "tokens": tokens}, indent=2)
        print(screen.json_text(text, indent=2))
    else:
        lines = [f"format: {fmt} (detected)"] if args.provider is None else []
        lines += [f"note: {note}"] if note is not None else []
        lines += [f"{v['rule']}: {v['message']}" for v in violations]
        size = f", {tokens:,} tokens" if tokens is not None else ""
        lines.append(f"{len(violations)} violation{'s' if len(violations) != 1 else ''}{size}")
        print(screen.text("\n".join(lines)))
    return EXIT_VIOLATIONS if violations else EXIT_OK


def _one_object(data: Any, jsonl: bool, where: SourceLocation) -> dict[str, Any]:
    """The body, which must be one JSON object.

    Raises:
        IngestError: anything else (JSONL, an array, `null`, a number, a string).
    """
    if isinstance(data, dict):
        return data
    if jsonl and isinstance(data, list) and len(data) == 1:
        held = _kind(data[0])
    elif jsonl:
        held = f"{len(data)} JSON lines (JSONL)"
    else:
        held = _kind(data)
    msg = f"holds {held}, not a request body: a body is one JSON object"
    raise IngestError(msg, where)


def _kind(value: object) -> str:
    if value is None or isinstance(value, bool):
        return f"`{json.dumps(value)}`"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return "a string" if isinstance(value, str) else "a number"


def _detect(body: dict[str, Any], where: SourceLocation) -> ProviderFormat:
    """The body's format.

    Raises:
        IngestError: it cannot be told; the message says why and asks for --format.
    """
    found = detect_request_format(body)
    if found is not None:
        return found
    clues = {fmt: signs for fmt, signs in request_format_clues(body).items() if signs}
    if len(clues) == 1:
        why = _mixed(body, *clues.items())
    elif clues:
        signs = "; ".join(f"{fmt}: {', '.join(s[:2])}" for fmt, s in clues.items())
        why = f"it has signs of {' and '.join(clues)} ({signs})"
    else:
        why = (
            "nothing in it is particular to one provider (user and assistant text alone is "
            "valid OpenAI and Anthropic)"
        )
    *others, last = RENDER_FORMATS  # what `check --format` takes
    msg = f"cannot tell the format: {why}; give --format {', '.join(others)} or {last}"
    raise IngestError(msg, where)


def _mixed(body: dict[str, Any], found: tuple[str, list[str]]) -> str:
    """Why a body with one format's signs alone is not told as that format.

    It also holds another format's conversation (`ProviderValidator.mixes`).
    """
    fmt, signs = found
    own = WIRES[fmt].history_key
    others = sorted({w.history_key for w in WIRES.values()} - {own} & body.keys())
    if not others:
        return (
            f"it has signs of {fmt} ({', '.join(signs[:2])}) beside another format's conversation"
        )
    keys = " and ".join(f"`{key}`" for key in others)
    return f"it has {fmt}'s {', '.join(signs[:2])} and also {keys}, which {fmt} does not use"


def _mismatch(body: dict[str, Any], fmt: ProviderFormat) -> str | None:
    """A note when the body looks like another format than the one given."""
    clues = request_format_clues(body)
    if clues[fmt]:
        return None
    for other, signs in clues.items():
        if signs and other != fmt:
            article = "an" if other[0] in "aeiou" else "a"
            return f"this looks like {article} {other} body ({', '.join(signs[:2])}), not {fmt}"
    return None
