"""`python -m benchmarks.house`: the counts issue 32 asks of the house, on the current tree.

It reads the source (the AST; only the constructor's parameters come from importing
`ContextManager`) and prints:

- the parameters of `ContextManager.__init__` (the target is at most 9);
- the public functions and methods whose signature takes `**name: Any` (target 0);
- the `isinstance` checks on built-in processor classes outside processors/ (target 0);
- the pairs of folders under orchestrator/ that import each other, counting imports
  inside functions and under `TYPE_CHECKING` (target: only the one `wrap()` needs);
- for each wire format, the library files that hold its name as a string literal (target:
  only its own folder, `context_graph/formats/<folder>/`, and the registry, `registry.py`
  and `wires.py`; everywhere else a format is named by its constant, `RESPONSES_FORMAT`);
- apart, not counted: the files where the same spelling names something else (namesakes).

A "folder" of orchestrator/ is one of its subpackages (`compaction`, `persistence`, ...)
or one of its top-level modules (`manager`, `options`, ...): the units that own a piece.

A format's name is also a vendor's (`anthropic`, `openai`) or a recording's word (the
Gemini CLI records its model's messages as type `gemini`). Such a literal is a namesake,
told apart by where it stands, never by which file holds it:

- a vendor (the company, or its SDK package, which bears its name): a literal in the
  definition of a type alias whose name ends in `Vendor` (`Vendor = Literal["openai",
  ...]`), or the value of an assignment annotated with such an alias
  (`OPENAI: Final[Vendor] = "openai"`); code that means the vendor uses those names;
- a recording's vocabulary: a literal inside a `Names(...)` call, the importers' set of
  the values a recorded field may take (roles, message types).

Every other literal equal to a format's name counts as naming the format.

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
    "format_literals",
    "format_mentions",
    "format_strays",
    "main",
    "mutual_folder_imports",
    "namesakes",
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
    format_strays: dict[str, list[str]]
    namesakes: dict[str, list[str]]


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


#: The registry's two halves: behaviour and constants.
REGISTRY = ("context_graph/formats/registry.py", "context_graph/formats/wires.py")


def format_homes() -> dict[str, str]:
    """Each format's folder (`context_graph/formats/<folder>/`), as the registry files it.

    Read off the module of the format's renderer, so a new format needs no entry here.
    """
    from context_graph.formats.registry import PROVIDER_RENDERERS

    homes: dict[str, str] = {}
    for name, renderer in PROVIDER_RENDERERS.items():
        module = type(renderer).__module__.rpartition(".")[0]
        homes[name] = module.replace(".", "/") + "/"
    return homes


def _names_vendor(annotation: ast.expr) -> bool:
    """Whether an annotation mentions a type whose name ends in `Vendor`."""
    return any(
        (isinstance(n, ast.Name) and n.id.endswith("Vendor"))
        or (isinstance(n, ast.Attribute) and n.attr.endswith("Vendor"))
        for n in ast.walk(annotation)
    )


def _namesake_values(tree: ast.Module) -> Iterator[ast.expr]:
    """The expressions whose string literals are namesakes (see the module docstring)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id.endswith("Vendor") for t in node.targets
        ):
            yield node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target = node.target
            if (isinstance(target, ast.Name) and target.id.endswith("Vendor")) or _names_vendor(
                node.annotation
            ):
                yield node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
            called = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if called == "Names":
                yield node


def _strings(node: ast.AST) -> Iterator[ast.Constant]:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
            yield inner


def format_literals(tree: ast.Module, names: Sequence[str]) -> tuple[set[str], set[str]]:
    """The format names among a module's string literals: as formats, and as namesakes.

    A name may be in both sets (a vendor's constant and a format's, in one file).
    """
    namesakes = {id(c) for value in _namesake_values(tree) for c in _strings(value)}
    as_format: set[str] = set()
    as_namesake: set[str] = set()
    for constant in _strings(tree):
        value = constant.value
        if isinstance(value, str) and value in names:
            (as_namesake if id(constant) in namesakes else as_format).add(value)
    return as_format, as_namesake


def _mentions(root: Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    names = _format_names()
    formats: dict[str, list[str]] = {name: [] for name in names}
    namesakes: dict[str, list[str]] = {name: [] for name in names}
    for path in _library_files(root):
        as_format, as_namesake = format_literals(_parse(path), names)
        where = path.relative_to(root).as_posix()
        for name in names:
            if name in as_format:
                formats[name].append(where)
            if name in as_namesake:
                namesakes[name].append(where)
    return formats, namesakes


def format_mentions(root: Path = ROOT) -> dict[str, list[str]]:
    """For each wire format, the library files holding its name as a string literal.

    Namesakes (a vendor's name, a recording's word) are left out: see `namesakes`.
    """
    return _mentions(root)[0]


def namesakes(root: Path = ROOT) -> dict[str, list[str]]:
    """For each format's name, the library files that spell it for a vendor or a recording."""
    return _mentions(root)[1]


def format_strays(root: Path = ROOT) -> dict[str, list[str]]:
    """For each format, the files naming it outside its own folder and the registry (target 0)."""
    return _strays(format_mentions(root))


def _strays(mentions: dict[str, list[str]]) -> dict[str, list[str]]:
    homes = format_homes()
    return {
        name: [p for p in files if not p.startswith(homes[name]) and p not in REGISTRY]
        for name, files in mentions.items()
    }


def count_house(root: Path = ROOT) -> HouseCounts:
    """Every count, on the tree at `root`."""
    mentions, spelled_otherwise = _mentions(root)
    return HouseCounts(
        constructor_parameters=constructor_parameters(),
        any_keyword_signatures=any_keyword_signatures(root),
        builtin_processor_isinstance=builtin_processor_isinstance(root),
        mutual_folder_imports=mutual_folder_imports(root),
        format_mentions=mentions,
        format_strays=_strays(mentions),
        namesakes=spelled_otherwise,
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
        "library files naming each format: "
        f"{sum(map(len, counts.format_strays.values()))} outside its folder and the registry "
        "(target 0)",
    ]
    for name, files in counts.format_mentions.items():
        strays = counts.format_strays[name]
        lines.append(f"  {name}: {len(files)} files, {len(strays)} outside")
        lines.extend(f"    {path}{'   <- outside' if path in strays else ''}" for path in files)
    lines.append(
        "namesakes, not counted (a vendor or its package, typed `...Vendor`; "
        "a recording's word, in `Names(...)`):"
    )
    for name, files in counts.namesakes.items():
        if files:
            lines.append(f"  {name}: {', '.join(files)}")
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
