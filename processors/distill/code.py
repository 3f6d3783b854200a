"""Source code: its structure (imports, classes, functions with signatures, docstrings).

Python is read with `ast`: the kept lines are the original lines of each class and
function signature (decorators included at medium), the imports, the first line of each
docstring, the `raise` lines and the module-level assignments. Other languages, and
Python that does not parse, get an outline from the text: declaration lines (by keyword,
or a signature followed by an opening brace), imports and doc-comment lines, ranked by
indentation depth. Either way the lines are taken in order of importance while the
budget allows (top-level declarations always stay); heavy keeps declarations and imports
only. Lines are kept verbatim, so a line-number gutter stays; without one, each left-out
run becomes a `...` line at its own indentation.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable, Iterable, Sequence
from enum import Enum

from processors.distill.common import Doc, at_least, fill_by_entities, has_gutter, scan_range

__all__ = [
    "code_rule",
    "distill_code",
    "distill_python",
    "looks_like_code",
    "looks_like_python_window",
    "parse_python",
    "parse_python_as_is",
    "python_rule",
]

_DECL = re.compile(
    r"^\s*(?:(?:export|default|pub(?:\([\w:]+\))?|public|private|protected|internal|static"
    r"|abstract|final|async|unsafe|extern|override|virtual|inline|sealed|open|data|suspend)\s+)*"
    r"(?:function\*?|class|interface|type|enum|struct|trait|impl|fn|func|def|defp|defmodule"
    r"|defmacrop?|defprotocol|defimpl|defstruct|defdelegate|module|namespace|object|record"
    r"|union|macro_rules!|schema|describe|test|it|setup)\b"
)
_ARROW = re.compile(r"^\s*(?:export\s+)?(?:const|let|var)\s+\w+\s*(?::[^=]+)?=\s*(?:async\s*)?\(")
_C_SIGNATURE = re.compile(
    r"^\s*(?!(?:if|for|while|switch|catch|return|else|do|try|new|throw|case)\b)"
    r"(?:[\w<>\[\],.*&:]+\s+)+[*&]?\w+\s*\([^;]*\)\s*(?:const\s*)?(?:throws [\w., ]+)?\{\s*$"
)
_IMPORT = re.compile(
    r"^\s*(?:import\b|from\s+\S+\s+import\b|use\s|using\s|require\b|#include\b|alias\s"
    r"|extern crate\b|package\s|@import\b|(?:const|let|var)\s+.+=\s*require\()"
)
_DOC = re.compile(r'^\s*(?:@moduledoc|@doc|@spec|@callback|@type|///|/\*\*|"""|#\s*@)')
_CODE_LINE = re.compile(
    r"[{};]\s*$|^\s*[})\]]|=>|->|::|^\s*(?:return|if|else|end|do|for|while|let|const|var"
    r"|import|export|def|fn|func|class|public|private|@\w+)\b|^\s*</?[a-zA-Z][\w-]*[\s>/]"
    r"|^\s*#include|(?<!\w)\w+\([^)]*\)\s*[{:;]?\s*$"
)
#: A line longer than this is judged by its two ends (`looks_like_code`).
_LINE_ENDS = 1_000


def looks_like_code(lines: Sequence[str]) -> bool:
    """Whether at least 40% of the non-blank lines look like code (of any language).

    A long line (minified code, a blob) is judged by its first and last `_LINE_ENDS`
    characters: a call's name is read from the start of each word only, but from every
    `(` of a line without `)` the rest of the line is read again.
    """
    filled = list(filter(str.strip, lines[:2_000]))
    if len(filled) < 3:
        return False
    return at_least(filled, _looks_like_code_line, 0.4 * len(filled))


def _looks_like_code_line(line: str) -> bool:
    if len(line) > 2 * _LINE_ENDS:
        line = f"{line[:_LINE_ENDS]}\n{line[-_LINE_ENDS:]}"
    return _CODE_LINE.search(line) is not None


def _parse(source: str) -> ast.Module | int | None:
    """The module, or the line of the syntax error, or None when it cannot be parsed."""
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        return exc.lineno
    except (ValueError, RecursionError, MemoryError):
        return None


def parse_python(source: str) -> ast.Module | None:
    """The module `source` parses to (dedented when it all starts indented), or None."""
    return parse_python_as_is(source)[0]


def parse_python_as_is(source: str) -> tuple[ast.Module | None, ast.Module | int | None]:
    """`parse_python(source)`, and what parsing `source` itself gave.

    The second is what `looks_like_python_window` parses first when the window starts
    unindented: detection passes it on instead of parsing the same text again.
    """
    as_is = _parse(source)
    if isinstance(as_is, ast.Module):
        return as_is, as_is
    dedented = textwrap.dedent(source)
    if dedented != source:
        parsed = _parse(dedented)
        if isinstance(parsed, ast.Module):
            return parsed, as_is
    return None, as_is


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


class _Unparsed(Enum):
    """`looks_like_python_window` was given no parse (None means the parse failed)."""

    UNPARSED = "unparsed"


def looks_like_python_window(
    lines: Sequence[str],
    *,
    whole: float = 0.8,
    as_is: ast.Module | int | _Unparsed | None = _Unparsed.UNPARSED,
) -> bool:
    """Whether `lines` parse as a window of Python source.

    A window may start inside nested blocks (open `if 1:` lines are put in front of it)
    and end inside a statement (it is cut before the line of the syntax error, as long
    as at least the share `whole` of it parses). `as_is`, when given, holds what parsing
    the lines joined gave (`parse_python_as_is`).
    """
    filled = [line for line in lines if line.strip()]
    if not filled:
        return False
    first = _indent(filled[0])
    levels = sorted({0, *(_indent(ln) for ln in filled if _indent(ln) < first)})
    prefix = [" " * level + "if 1:" for level in levels] if first else []
    attempt = [*prefix, *lines]
    parsed = _parse("\n".join(attempt)) if prefix or as_is is _Unparsed.UNPARSED else as_is
    if isinstance(parsed, int) and parsed - 1 - len(prefix) >= whole * len(lines):
        parsed = _parse("\n".join(attempt[: parsed - 1]))
    return isinstance(parsed, ast.Module)


_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
_QUOTES = {'"""', "'''", 'r"""', "r'''"}


def _signature(node: _Def, *, decorators: bool) -> range:
    """Line indices from the first decorator (or the keyword) to the line before the body."""
    first = node.lineno
    if decorators and node.decorator_list:
        first = min(d.lineno for d in node.decorator_list)
    last = max(node.lineno, node.body[0].lineno - 1) if node.body else node.lineno
    return range(first - 1, last)


def _docstring_line(node: ast.AST, plain: Sequence[str]) -> list[int]:
    """The index of a docstring's first line of text, if the node has a docstring."""
    body = getattr(node, "body", None)
    if not body or not isinstance(body[0], ast.Expr):
        return []
    value = body[0].value
    if not isinstance(value, ast.Constant) or not isinstance(value.value, str):
        return []
    first = body[0].lineno - 1
    if 0 <= first < len(plain) - 1 and plain[first].strip() in _QUOTES:
        return [first, first + 1]
    return [first]


def _python_tiers(tree: ast.Module, plain: Sequence[str], *, heavy: bool) -> list[list[int]]:
    """Line indices of the module's structure, most important tier first."""
    tops: list[int] = []
    members: list[int] = []
    imports: list[int] = []
    docs = _docstring_line(tree, plain)
    raises: list[int] = []
    assigns: list[int] = []
    nested: list[int] = []
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for statement in tree.body:
        if isinstance(statement, ast.Import | ast.ImportFrom):
            end = statement.end_lineno or statement.lineno
            imports.extend(range(statement.lineno - 1, end))
        elif isinstance(statement, ast.Assign | ast.AnnAssign):
            assigns.append(statement.lineno - 1)
        elif isinstance(statement, defs):
            tops.extend(_signature(statement, decorators=not heavy))
            docs.extend(_docstring_line(statement, plain))
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise):
            raises.append(node.lineno - 1)
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, defs):
                    members.extend(_signature(member, decorators=not heavy))
                    docs.extend(_docstring_line(member, plain))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                if inner is not node and isinstance(inner, defs):
                    nested.extend(_signature(inner, decorators=False))
    if heavy:
        return [tops, members, imports]
    return [tops, members, imports, docs, raises, assigns, nested]


def _depth(line: str, base: int) -> int:
    width = len(line) - len(line.lstrip(" \t"))
    return max(0, (width - base) // 2)


def _outline_tiers(plain: Sequence[str], *, heavy: bool) -> list[list[int]]:
    """Declaration, import and doc lines found by their shape, most important first."""
    filled = [line for line in plain if line.strip()]
    base = min((len(ln) - len(ln.lstrip(" \t")) for ln in filled), default=0)
    tiers: list[list[int]] = [[] for _ in range(5)]
    in_string = False
    for index, line in enumerate(plain):
        quotes = line.count('"""') + line.count("'''")
        opening = not in_string and quotes > 0
        in_string = in_string != (quotes % 2 == 1)
        if not line.strip() or (in_string and not opening):
            continue
        if _IMPORT.match(line):
            tiers[2].append(index)
        elif _DECL.match(line) or _ARROW.match(line) or _C_SIGNATURE.match(line):
            depth = _depth(line, base)
            tiers[0 if depth == 0 else 1 if depth <= 2 else 4].append(index)
        elif _DOC.match(line) and (opening or '"""' not in line):
            bare = line.rstrip().endswith(('"""', "'''", "/**")) and (opening or "/**" in line)
            tiers[3].extend([index, index + 1] if bare else [index])
    return tiers[:3] if heavy else tiers


def _pick(doc: Doc, tiers: Sequence[Iterable[int]]) -> set[int]:
    kept: set[int] = set()
    spent = 0
    for rank, tier in enumerate(tiers):
        for index in dict.fromkeys(tier):
            if index in kept or not 0 <= index < len(doc.lines):
                continue
            cost = doc.costs.of(doc.lines[index])
            if rank > 0 and spent + cost > doc.budget:
                return kept
            kept.add(index)
            spent += cost
    return kept


def _fill(doc: Doc, kept: set[int]) -> set[int]:
    """At medium, the budget the structure leaves goes to the lines richest in identifiers."""
    if doc.heavy:
        return kept
    return fill_by_entities(doc, kept, doc.budget, candidates=scan_range(len(doc.lines)))


def _render(doc: Doc, kept: set[int], gutter: bool) -> str:
    if gutter:
        return "\n".join(doc.lines[i] for i in sorted(kept))
    out: list[str] = []
    previous = -1
    for index in [*sorted(kept), len(doc.lines)]:
        gap = [ln for ln in doc.plain[previous + 1 : index] if ln.strip()]
        if gap:
            out.append(gap[0][: len(gap[0]) - len(gap[0].lstrip())] + "...")
        if index < len(doc.lines):
            out.append(doc.lines[index])
        previous = index
    return "\n".join(out)


def distill_python(doc: Doc) -> str | None:
    """Distill Python source through `ast`; None when it does not parse."""
    rule = python_rule(doc)
    return rule(doc) if rule is not None else None


def distill_code(doc: Doc) -> str | None:
    """Distill source code by its outline; None when no structure is found."""
    rule = code_rule(doc)
    return rule(doc) if rule is not None else None


def python_rule(doc: Doc) -> Callable[[Doc], str] | None:
    """`distill_python` for `doc`'s lines at any budget (None when it gives None).

    The parse and the tiers do not depend on the budget: they are worked out once, for
    the reserve's second pass at a smaller budget too.
    """
    tree = parse_python(doc.text)
    if tree is None:
        return None
    return _tiered(doc, _python_tiers(tree, doc.plain, heavy=doc.heavy))


def code_rule(doc: Doc) -> Callable[[Doc], str] | None:
    """`distill_code` for `doc`'s lines at any budget (None when it gives None)."""
    return _tiered(doc, _outline_tiers(doc.plain, heavy=doc.heavy))


def _tiered(doc: Doc, tiers: list[list[int]]) -> Callable[[Doc], str] | None:
    """The rule that keeps lines by `tiers` within the budget of the doc it is given.

    That doc has `doc`'s lines and level; None when no tier holds a line.
    """
    if not any(tiers):
        return None
    gutter = has_gutter(doc.lines)
    return lambda budgeted: _render(budgeted, _fill(budgeted, _pick(budgeted, tiers)), gutter)
