"""`python -m benchmarks.house`: issue 32's counts, on small trees and on this one.

The checks on the repository assert what holds today and what may only shrink: other
work on issue 32 cuts the constructor, the `**Any` signatures and the mutual imports, and
tightens these bounds as it lands.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from benchmarks.house import (
    LIBRARY,
    any_keyword_signatures,
    builtin_processor_isinstance,
    constructor_parameters,
    count_house,
    format_mentions,
    format_strays,
    main,
    mutual_folder_imports,
    namesakes,
)


def _tree(root: Path, files: dict[str, str]) -> Path:
    """A library laid out under `root`: every package of `LIBRARY`, with `files` in it."""
    for package in LIBRARY:
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").touch()
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


class TestMutualFolderImports:
    def test_a_function_level_import_back_closes_a_pair(self, tmp_path: Path) -> None:
        """Two folders importing each other are a pair even when one import is deferred."""
        root = _tree(
            tmp_path,
            {
                "orchestrator/a/__init__.py": "",
                "orchestrator/a/one.py": "from orchestrator.b.two import X\n",
                "orchestrator/b/__init__.py": "",
                "orchestrator/b/two.py": "X = 1\ndef f():\n    from orchestrator.a import one\n",
            },
        )
        assert mutual_folder_imports(root) == [("orchestrator.a", "orchestrator.b")]

    def test_a_top_level_module_is_a_unit_of_its_own(self, tmp_path: Path) -> None:
        """`manager.py` and `compaction/` importing each other are a pair; one way is none."""
        root = _tree(
            tmp_path,
            {
                "orchestrator/manager.py": "from orchestrator.compaction import run\n",
                "orchestrator/compaction/__init__.py": "from .run import run\n",
                "orchestrator/compaction/run.py": (
                    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                    "    from orchestrator.manager import M\ndef run(): ...\n"
                ),
                "orchestrator/bus.py": "",
                "orchestrator/working/__init__.py": "from orchestrator import bus\n",
            },
        )
        assert mutual_folder_imports(root) == [("orchestrator.compaction", "orchestrator.manager")]

    def test_the_package_init_owns_no_piece(self, tmp_path: Path) -> None:
        """The package's `__init__` re-exporting a folder that imports the package is no pair."""
        root = _tree(
            tmp_path,
            {
                "orchestrator/__init__.py": "from orchestrator.manager import M\n",
                "orchestrator/manager.py": "import orchestrator\nM = 1\n",
            },
        )
        assert mutual_folder_imports(root) == []

    def test_orchestrator_has_only_the_one_wrap_needs(self) -> None:
        """manager <-> integrations (`wrap()`), and no other pair of folders.

        Issue 32 counted four; agent_tools/ and compaction/ now read the options through
        protocols of their own (`ExpandSettings`, `CompactionSettings`) instead of
        importing the options module, which imports them, and persistence/ gathers the
        state from its owners through `StateOwner` instead of holding a record typed by
        compaction/'s classes.
        """
        known = {("orchestrator.integrations", "orchestrator.manager")}
        found = set(mutual_folder_imports())
        assert found <= known, f"a new pair of folders imports each other: {found - known}"


class TestAnyKeywordSignatures:
    def test_only_exported_names_and_their_bases_count(self, tmp_path: Path) -> None:
        """An exported class's method, and one it inherits, count; a private helper does not."""
        root = _tree(
            tmp_path,
            {
                "processors/__init__.py": '__all__ = ["Maker", "make"]\n',
                "processors/things.py": """\
                    from typing import Any
                    class Base:
                        def add(self, **fields: Any) -> None: ...
                    class Maker(Base):
                        def __init__(self, **options: Any) -> None: ...
                        def _inner(self, **options: Any) -> None: ...
                        def typed(self, **options: int) -> None: ...
                    def make(**options: "Any") -> None: ...
                    def helper(**options: Any) -> None: ...
                    """,
            },
        )
        assert any_keyword_signatures(root) == [
            "processors/things.py:3 Base.add(**fields: Any)",
            "processors/things.py:5 Maker.__init__(**options: Any)",
            "processors/things.py:8 make(**options: Any)",
        ]

    def test_none_is_left(self) -> None:
        """No public signature takes `**name: Any`: each is typed (`Unpack[...]`, keywords).

        The shorthands and configs take `**fields: Unpack[SomeFields]`, checked against
        their models by tests; the bus's payload and a registered processor's options,
        which no signature here can know, are `**name: object`.
        """
        assert any_keyword_signatures() == []


class TestBuiltinProcessorIsinstance:
    def test_a_check_outside_processors_is_found(self, tmp_path: Path) -> None:
        """`isinstance(x, HistorySummarizer)` in orchestrator/ is counted; in processors/ not."""
        check = "def f(p):\n    return isinstance(p, (int, HistorySummarizer))\n"
        root = _tree(tmp_path, {"orchestrator/pick.py": check, "processors/own.py": check})
        assert builtin_processor_isinstance(root) == ["orchestrator/pick.py:2 HistorySummarizer"]

    def test_none_is_left(self) -> None:
        """No library code outside processors/ recognises a built-in processor by its class.

        The last one picked a pipeline's redact stage; the stage now declares that it
        screens new nodes (`screens_new_nodes`, the `Redactor` protocol).
        """
        assert builtin_processor_isinstance() == []


class TestFormatMentions:
    def test_a_string_literal_counts_a_word_in_prose_does_not(self, tmp_path: Path) -> None:
        """`"responses"` as a literal names the format; the English word in a docstring does not."""
        root = _tree(
            tmp_path,
            {
                "context_graph/wire.py": 'FORMAT = "responses"\n',
                "processors/prose.py": '"""The model\'s responses, kept."""\n',
            },
        )
        found = format_mentions(root)
        assert found["responses"] == ["context_graph/wire.py"]
        assert found["anthropic"] == []

    def test_every_registered_format_is_listed(self) -> None:
        """Each format of the validators' registry has its files, the registry's among them."""
        found = format_mentions()
        assert sorted(found) == ["anthropic", "gemini", "openai", "responses"]
        for files in found.values():
            assert "context_graph/formats/wires.py" in files

    def test_a_vendor_typed_literal_is_a_namesake(self, tmp_path: Path) -> None:
        """A `...Vendor` alias, a value annotated with one and a `Names(...)` set are namesakes.

        A format's name spelled anywhere else in the same file still counts.
        """
        root = _tree(
            tmp_path,
            {
                "context_graph/vendors.py": """\
                    from typing import Final, Literal
                    Vendor = Literal["anthropic", "openai", "google"]
                    OPENAI: Final[Vendor] = "openai"
                    """,
                "processors/kinds.py": """\
                    from typing import ClassVar, Literal, TypeAlias
                    SummarizerVendor: TypeAlias = Literal["anthropic"]
                    class S:
                        provider: ClassVar[SummarizerVendor] = "anthropic"
                    """,
                "context_graph/cli_log.py": """\
                    _TYPES = Names({"user", "gemini"})
                    THOUGHT = "gemini"
                    """,
                "orchestrator/plain.py": 'PACKAGE: str = "openai"\n',
            },
        )
        assert format_mentions(root) == {
            "anthropic": [],
            "gemini": ["context_graph/cli_log.py"],
            "openai": ["orchestrator/plain.py"],
            "responses": [],
        }
        assert namesakes(root) == {
            "anthropic": ["context_graph/vendors.py", "processors/kinds.py"],
            "gemini": ["context_graph/cli_log.py"],
            "openai": ["context_graph/vendors.py"],
            "responses": [],
        }

    def test_a_name_outside_its_folder_is_a_stray(self, tmp_path: Path) -> None:
        """A format's name counts as a stray outside its folder and the registry, not inside."""
        root = _tree(
            tmp_path,
            {
                "orchestrator/pick.py": 'FORMAT = "responses"\n',
                "context_graph/formats/openai_responses/render.py": 'NAME = "responses"\n',
                "context_graph/formats/wires.py": 'NAMES = ("openai", "responses")\n',
                "context_graph/formats/gemini/render.py": 'OTHER = "responses"\n',
            },
        )
        assert format_strays(root)["responses"] == [
            "context_graph/formats/gemini/render.py",
            "orchestrator/pick.py",
        ]
        assert format_strays(root)["openai"] == []

    def test_no_format_is_named_outside_its_folder_and_the_registry(self) -> None:
        """Everywhere else a format is named by its constant (`RESPONSES_FORMAT`), issue 32.

        A vendor or its SDK package is named through `context_graph.vendors`; a new format
        literal in an integration, an importer or a processor fails here.
        """
        assert format_strays() == {"anthropic": [], "gemini": [], "openai": [], "responses": []}


class TestScript:
    def test_the_constructor_parameters_are_the_signatures(self) -> None:
        """The parameters are read from `ContextManager.__init__`, in order, without `self`."""
        names = constructor_parameters()
        assert names[:2] == ["format", "budget"]
        assert "self" not in names

    def test_json_holds_every_count(self, capsys: pytest.CaptureFixture[str]) -> None:
        """`--json` prints one object whose counts are those `count_house` finds."""
        assert main(["--json"]) == 0
        printed = json.loads(capsys.readouterr().out)
        counts = count_house()
        assert printed["constructor_parameters"] == counts.constructor_parameters
        assert [tuple(p) for p in printed["mutual_folder_imports"]] == counts.mutual_folder_imports
        assert printed["format_mentions"] == counts.format_mentions
        assert printed["format_strays"] == counts.format_strays
        assert printed["namesakes"] == counts.namesakes

    def test_text_names_each_count(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The text report has one headline per count, with its target."""
        assert main([]) == 0
        out = capsys.readouterr().out
        for headline in (
            "ContextManager constructor parameters:",
            "**Any in public signatures:",
            "isinstance on built-in processor classes outside processors/:",
            "mutual folder imports in orchestrator/:",
            "library files naming each format",
            "namesakes, not counted",
        ):
            assert headline in out
