"""What a body is: JSON, test output, a traceback, grep output, a listing, a log, code, text.

Detection tries the most specific shapes first, so content that looks like two types
gets the more informative one: pytest output holds tracebacks but is test output; a
log with one traceback in it is a traceback only when the traceback is a good share
of it. A hint (the file's extension, or the tool's name) settles what the text alone
cannot, e.g. a `.py` file that does not parse is still Python. A diff is text (its
file and hunk headers are kept as headings).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Literal, TypeAlias

from processors.distill.code import looks_like_code, looks_like_python_window, parse_python_as_is
from processors.distill.common import at_least
from processors.distill.listings import looks_like_grep, looks_like_listing
from processors.distill.logs import looks_like_log
from processors.distill.testruns import looks_like_tests
from processors.distill.tracebacks import find_tracebacks, share_of

__all__ = ["CONTENT_TYPES", "LANGUAGES", "ContentType", "detect"]

ContentType: TypeAlias = Literal[
    "json", "test_output", "traceback", "grep", "listing", "log", "python", "code", "text"
]

#: Every content type, in the order detection tries them.
CONTENT_TYPES: tuple[ContentType, ...] = (
    "json",
    "test_output",
    "traceback",
    "grep",
    "listing",
    "log",
    "python",
    "code",
    "text",
)

#: File extensions of source code, and the language each names.
LANGUAGES: Mapping[str, str] = MappingProxyType(
    {
        "py": "python", "pyi": "python", "js": "javascript", "mjs": "javascript",
        "cjs": "javascript", "jsx": "javascript", "ts": "typescript", "tsx": "typescript",
        "go": "go", "rs": "rust", "java": "java", "kt": "kotlin", "scala": "scala",
        "rb": "ruby", "ex": "elixir", "exs": "elixir", "erl": "erlang", "c": "c", "h": "c",
        "cc": "c++", "cpp": "c++", "hpp": "c++", "cs": "c#", "swift": "swift", "php": "php",
        "sh": "shell", "bash": "shell", "lua": "lua", "sql": "sql", "css": "css",
        "scss": "css", "html": "html", "heex": "html", "vue": "vue", "svelte": "svelte",
    }
)  # fmt: skip

_DIFF = re.compile(r"^(?:diff --git |--- a/|\+\+\+ b/|@@ -\d+(?:,\d+)? \+\d+)", re.MULTILINE)
_TEXT_EXTENSIONS = frozenset({"md", "txt", "rst", "adoc", "csv", "tsv"})
_PY_KEYWORDS = re.compile(
    r"^\s*(?:(?:async\s+)?def \w+\(.*\)\s*(?:->.*)?:|class \w+(?:\(.*\))?:"
    r"|import [\w.]+(?: as \w+)?$|from [\w.]+ import )"
)


def _json(text: str) -> bool:
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[" or stripped[-1] not in "}]":
        return False
    try:
        json.loads(stripped)
    except (ValueError, RecursionError):
        return False
    return True


def _python(plain: Sequence[str]) -> bool:
    tree, as_is = parse_python_as_is("\n".join(plain))
    if tree is not None:
        return any(
            hasattr(node, "body") or isinstance(node, ast.Import | ast.ImportFrom)
            for node in tree.body
        )
    filled = list(filter(str.strip, plain))
    if at_least(filled, _PY_KEYWORDS.match, max(2, 0.15 * len(filled))):
        return True
    has_keyword = any(map(_PY_KEYWORDS.match, filled))
    return has_keyword and looks_like_python_window(plain, as_is=as_is)


def detect(plain: Sequence[str], hint: str | None = None) -> ContentType:
    """The content type of a body's (gutter-free) lines; `hint` is an extension or tool name."""
    text = "\n".join(plain)
    if not text.strip():
        return "text"
    is_json = _json(text)
    if hint == "json" or is_json:
        return "json" if is_json else "text"
    language = LANGUAGES.get(hint or "")
    if language is not None:
        return "python" if language == "python" else "code"
    if hint in _TEXT_EXTENSIONS:
        return "text"
    if looks_like_tests(plain):
        return "test_output"
    blocks = find_tracebacks(plain)
    if blocks and (share_of(plain, blocks) >= 0.3 or not looks_like_log(plain)):
        return "traceback"
    if looks_like_grep(plain, hint=hint):
        return "grep"
    if looks_like_listing(plain, hint=hint):
        return "listing"
    if looks_like_log(plain) or hint == "log":
        return "log"
    if _DIFF.search(text):
        return "text"
    if _python(plain):
        return "python"
    if looks_like_code(plain):
        return "code"
    return "text"
