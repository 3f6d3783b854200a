"""`python -m benchmarks.house`: the counts issue 32 asks of the house, on the current tree.

It reads the source (the AST; only the constructor's parameters come from importing
`ContextManager`) and prints:

- the parameters of `ContextManager.__init__` (the target is at most 9);
- the public functions and methods whose signature takes `**name: Any` (target 0);
- the `isinstance` checks on built-in processor classes outside processors/ (target 0);
- the pairs of folders under orchestrator/ that import each other, counting imports
  inside functions and under `TYPE_CHECKING` (target: only the one `wrap()` needs);
- for each wire format, the library files that hold its name as a string literal.

A "folder" of orchestrator/ is one of its subpackages (`compaction`, `persistence`, ...)
or one of its top-level modules (`manager`, `options`, ...): the units that own a piece.

    python -m benchmarks.house
    python -m benchmarks.house --json
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = [
    "LIBRARY",
    "HouseCounts",
    "any_keyword_signatures",
    "builtin_processor_isinstance",
    "constructor_parameters",
    "count_house",
    "format_mentions",
    "main",
    "mutual_folder_imports",
]

ROOT = Path(__file__).resolve().parents[1]
#: The packages the wheel ships.
LIBRARY = ("context_graph", "processors", "orchestrator")


@dataclass(frozen=True)
class HouseCounts:
    """What `count_house` found; each list names the places, sorted."""

    constructor_parameters: list[str]
    any_keyword_signatures: list[str]
    builtin_processor_isinstance: list[str]
    mutual_folder_imports: list[tuple[str, str]]
    format_mentions: dict[str, list[str]]


def _library_files(root: Path, packages: Sequence[str] = LIBRARY) -> Iterator[Path]:
    for package in packages:
        yield from sorted((root / package).rglob("*.py"))


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def constructor_parameters() -> list[str]:
    """The parameters `ContextManager(...)` takes, `self` left out, in order."""
    from orchestrator import ContextManager

    names = list(inspect.signature(ContextManager.__init__).parameters)
    return [name for name in names if name != "self"]


def _is_any(annotation: ast.expr | None) -> bool:
    if isinstance(annotation, ast.Name):
        return annotation.id == "Any"
    if isinstance(annotation, ast.Attribute):
        return annotation.attr == "Any"
    return isinstance(annotation, ast.Constant) and annotation.value == "Any"


def _exported_names(root: Path) -> set[str]:
    """The names some package of the library lists in the `__all__` of its `__init__`."""
    names: set[str] = set()
    for path in _library_files(root):
        if path.name != "__init__.py":
            continue
        for node in _parse(path).body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                names |= {
                    e.value
                    for e in ast.walk(node.value)
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                }
    return _with_bases(names, root)


def _with_bases(exported: set[str], root: Path) -> set[str]:
    """`exported` and the library classes they inherit from (their methods are public too)."""
    bases: dict[str, set[str]] = {}
    for path in _library_files(root):
        for node in _parse(path).body:
            if isinstance(node, ast.ClassDef):
                named = {b.id for b in node.bases if isinstance(b, ast.Name)}
                bases.setdefault(node.name, set()).update(named)
    waiting = list(exported)
    while waiting:
        for base in bases.get(waiting.pop(), set()) - exported:
            exported.add(base)
            waiting.append(base)
    return exported


def _public_functions(
    body: Sequence[ast.stmt], exported: set[str]
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Exported functions, and the public methods (and `__init__`) of exported classes."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in exported:
            yield node.name, node
        elif isinstance(node, ast.ClassDef) and node.name in exported:
            for method in node.body:
                if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    not method.name.startswith("_") or method.name == "__init__"
                ):
                    yield f"{node.name}.{method.name}", method


def any_keyword_signatures(root: Path = ROOT) -> list[str]:
    """`file:line name` of each exported function or method taking `**kwargs: Any`.

    Exported: named in a package's `__all__`, or inherited by a class that is (a class's
    public methods with it).
    """
    exported = _exported_names(root)
    found = []
    for path in _library_files(root):
        for name, function in _public_functions(_parse(path).body, exported):
            extra = function.args.kwarg
            if extra is not None and _is_any(extra.annotation):
                where = path.relative_to(root).as_posix()
                found.append(f"{where}:{function.lineno} {name}(**{extra.arg}: Any)")
    return sorted(found, key=_place_order)


def _place_order(place: str) -> tuple[str, int]:
    """`file:line ...` in file order, then line order (line 53 before line 102)."""
    where, _, rest = place.partition(":")
    return where, int(rest.split(" ", 1)[0])


def _builtin_processor_classes() -> set[str]:
    import processors

    return {
        name
        for name in processors.__all__
        if isinstance(getattr(processors, name), type)
        and callable(getattr(getattr(processors, name), "propose", None))
    }


def builtin_processor_isinstance(root: Path = ROOT) -> list[str]:
    """`file:line classes` of each `isinstance` on a built-in processor outside processors/."""
    classes = _builtin_processor_classes()
    found = []
    for path in _library_files(root, [p for p in LIBRARY if p != "processors"]):
        for node in ast.walk(_parse(path)):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "isinstance"
                and len(node.args) == 2
            ):
                continue
            named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
            named |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
            if named & classes:
                where = path.relative_to(root).as_posix()
                found.append(f"{where}:{node.lineno} {', '.join(sorted(named & classes))}")
    return sorted(found, key=_place_order)


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported_modules(path: Path, name: str, modules: set[str]) -> set[str]:
    """The modules of `modules` that `path` imports anywhere (in functions too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    imported: set[str] = set()
    for node in ast.walk(_parse(path)):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = parts[: len(parts) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                imported.add(submodule if submodule in modules else base)
    return imported & modules


def _folder(module: str, package: str) -> str | None:
    """The unit of `package` a module belongs to: `package.<first part>`, or None outside."""
    parts = module.split(".")
    if parts[0] != package or len(parts) < 2:
        return None  # the package's own `__init__` re-exports; it owns no piece
    return f"{package}.{parts[1]}"


def mutual_folder_imports(
    root: Path = ROOT, package: str = "orchestrator"
) -> list[tuple[str, str]]:
    """The pairs of folders (or top-level modules) of `package` that import each other."""
    paths = {_module_name(root, path): path for path in _library_files(root, [package])}
    modules = set(paths)
    edges: set[tuple[str, str]] = set()
    for name, path in paths.items():
        source = _folder(name, package)
        for target in _imported_modules(path, name, modules):
            sink = _folder(target, package)
            if source and sink and source != sink:
                edges.add((source, sink))
    return sorted((a, b) for a, b in edges if a < b and (b, a) in edges)


def _format_names() -> list[str]:
    from context_graph.validate import PROVIDER_VALIDATORS

    return sorted(PROVIDER_VALIDATORS)


def format_mentions(root: Path = ROOT) -> dict[str, list[str]]:
    """For each wire format, the library files holding its name as a string literal."""
    names = _format_names()
    found: dict[str, list[str]] = {name: [] for name in names}
    for path in _library_files(root):
        literals = {
            node.value
            for node in ast.walk(_parse(path))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        }
        for name in names:
            if name in literals:
                found[name].append(path.relative_to(root).as_posix())
    return found


def count_house(root: Path = ROOT) -> HouseCounts:
    """Every count, on the tree at `root`."""
    return HouseCounts(
        constructor_parameters=constructor_parameters(),
        any_keyword_signatures=any_keyword_signatures(root),
        builtin_processor_isinstance=builtin_processor_isinstance(root),
        mutual_folder_imports=mutual_folder_imports(root),
        format_mentions=format_mentions(root),
    )


def _report(counts: HouseCounts) -> str:
    lines = [
        f"ContextManager constructor parameters: {len(counts.constructor_parameters)} "
        f"(target <= 9): {', '.join(counts.constructor_parameters)}",
        f"**Any in public signatures: {len(counts.any_keyword_signatures)} (target 0)",
        *(f"  {place}" for place in counts.any_keyword_signatures),
        "isinstance on built-in processor classes outside processors/: "
        f"{len(counts.builtin_processor_isinstance)} (target 0)",
        *(f"  {place}" for place in counts.builtin_processor_isinstance),
        f"mutual folder imports in orchestrator/: {len(counts.mutual_folder_imports)} "
        "(target: the one wrap() needs, manager <-> integrations)",
        *(f"  {a} <-> {b}" for a, b in counts.mutual_folder_imports),
        "library files naming each format (target: its own folder, the registry):",
    ]
    for name, files in counts.format_mentions.items():
        lines.append(f"  {name}: {len(files)} files")
        lines.extend(f"    {path}" for path in files)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the counts (as text, or one JSON object with `--json`)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.house", description=__doc__)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    counts = count_house()
    print(json.dumps(asdict(counts), indent=2) if args.json else _report(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
