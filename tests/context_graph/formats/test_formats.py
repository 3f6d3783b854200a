"""One folder per wire format, and one registry that the generic code asks by name."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from context_graph.errors import ConfigurationError, IngestError, SourceLocation
from context_graph.formats.registry import (
    CACHE_MARKING_FORMATS,
    PROVIDER_RENDERERS,
    PROVIDER_VALIDATORS,
    READERS,
    REPLY_READERS,
)
from context_graph.formats.wire import CallProblem
from context_graph.formats.wires import (
    ANTHROPIC_FORMAT,
    DEFAULT_FORMAT,
    FORMAT_NAMES,
    GEMINI_FORMAT,
    OPENAI_FORMAT,
    READ_ORDER,
    RESPONSES_FORMAT,
    WIRES,
    only_formats,
    provider_format,
)
from context_graph.graph.call_ids import ID_RULES
from context_graph.graph.content import THINKING_SIGNERS, ThinkingPart
from context_graph.graph.native import NATIVE_FORMATS, NativeCompaction
from context_graph.importers import FORMATS as IMPORT_FORMATS
from context_graph.render import FORMATS as RENDER_FORMATS
from context_graph.render import Renderer, render_history
from context_graph.tokens.calibration import FORMAT_OVERHEADS
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy
from orchestrator.policy.resolved import resolve_options
from orchestrator.pricing import PRICES, price_for
from orchestrator.replay import replay

ROOT = Path(__file__).resolve().parents[3]
FOLDERS = sorted(
    p
    for p in (ROOT / "context_graph" / "formats").iterdir()
    if p.is_dir() and p.name != "__pycache__"
)


class TestRegistry:
    def test_every_table_lists_the_same_formats_in_one_order(self) -> None:
        """Constants, renderers, validators and the render formats agree, in order."""
        assert tuple(WIRES) == FORMAT_NAMES == RENDER_FORMATS
        assert tuple(PROVIDER_RENDERERS) == tuple(PROVIDER_VALIDATORS) == FORMAT_NAMES
        assert tuple(REPLY_READERS) == FORMAT_NAMES

    def test_each_entry_is_its_own_format(self) -> None:
        """A renderer, validator and wire filed under a name say that name."""
        for name in FORMAT_NAMES:
            assert WIRES[name].name == PROVIDER_RENDERERS[name].format == name
            assert PROVIDER_VALIDATORS[name].format == name
            assert REPLY_READERS[name].format == name
            assert PROVIDER_RENDERERS[name].overhead is WIRES[name].overhead

    def test_the_readers_are_the_wires_readers(self) -> None:
        """Each format's reader is found by its importer name, after every trace format."""
        assert (
            sorted(READERS) == sorted(READ_ORDER) == sorted(w.reader_name for w in WIRES.values())
        )
        assert IMPORT_FORMATS[-len(READ_ORDER) :] == READ_ORDER
        for module in READERS.values():
            assert callable(module.sniff) and callable(module.to_sessions)

    def test_the_derived_tables_read_the_wires(self) -> None:
        """Id rules, overheads and prices are each format's own, read-only where tabled."""
        for name, wire in WIRES.items():
            assert ID_RULES[name] is wire.id_rule
            assert FORMAT_OVERHEADS[name] is wire.overhead
            assert price_for(name) is wire.price
        assert isinstance(WIRES, MappingProxyType)
        assert set(PRICES) == {wire.price for wire in WIRES.values()}
        assert len(PRICES) == len(set(PRICES))

    @pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
    def test_each_folder_holds_the_five_parts(self, folder: Path) -> None:
        """wire, render, validate, read and replies: what one format needs, in one place."""
        assert {"wire.py", "render.py", "validate.py", "read.py", "replies.py"} <= {
            p.name for p in folder.iterdir()
        }

    def test_the_folders_are_the_registered_formats(self) -> None:
        """No folder without a registry entry, and no entry without a folder."""
        homes = {type(PROVIDER_RENDERERS[n]).__module__.split(".")[2] for n in FORMAT_NAMES}
        assert homes == {folder.name for folder in FOLDERS}

    def test_each_reply_reader_lives_in_its_renderers_folder(self) -> None:
        """A format's SDK replies are read in the folder that renders its requests."""
        for name in FORMAT_NAMES:
            home = type(PROVIDER_RENDERERS[name]).__module__.rpartition(".")[0]
            assert type(REPLY_READERS[name]).__module__ == f"{home}.replies"

    def test_a_reader_that_claims_no_message_refuses_one(self) -> None:
        """The Responses API's reply holds no single message: its reader says to read it whole."""
        reader = REPLY_READERS["responses"]
        assert reader.claims_message({"role": "assistant", "content": "x"}) is None
        with pytest.raises(IngestError, match="read whole"):
            reader.read_message({"role": "assistant"}, SourceLocation(), {})


@pytest.mark.parametrize(
    "module",
    [
        "context_graph.formats.anthropic.render",
        "context_graph.formats.openai_responses.validate",
        "context_graph.formats.gemini.read",
        "context_graph.formats.openai_chat.wire",
        "context_graph.graph.call_ids",
        "context_graph.formats.gemini.usage",
        "context_graph.tokens.usage_counts",
        "context_graph.formats.wire",
    ],
)
def test_any_module_imports_first(module: str) -> None:
    """A format module imported before the generic packages loads (the registry is asked late)."""
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}; import context_graph.render"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


class TestCallShapes:
    def test_only_gemini_has_a_call_shape_of_its_own(self) -> None:
        """The shared shapes cover chat, Anthropic and Responses calls; Gemini adds its parts."""
        assert [name for name, wire in WIRES.items() if wire.call_shape] == ["gemini"]

    def test_a_malformed_part_names_the_key(self) -> None:
        """A wrapped call that is not an object is a `CallProblem` at the wrapper's key."""
        shape = WIRES["gemini"].call_shape
        assert shape is not None
        part = {"function_call": "read"}
        key = shape.wrapper(part)
        assert key == "function_call"
        with pytest.raises(CallProblem, match="must be an object") as caught:
            shape.read_wrapped(part, key, 0)
        assert caught.value.path == "function_call"


class TestThinkingSigners:
    def test_the_signers_are_the_wires_that_sign(self) -> None:
        """A thinking part may name Anthropic or Gemini as signer: their wires say they sign."""
        assert THINKING_SIGNERS == ("anthropic", "gemini")
        assert ThinkingPart(thinking="t", signature="s", provider="gemini").provider == "gemini"

    @pytest.mark.parametrize("name", ["openai", "responses", "mine"])
    def test_any_other_name_is_refused(self, name: str) -> None:
        """A format that signs no thinking, or no format at all, is a validation error."""
        with pytest.raises(ValidationError, match="provider"):
            ThinkingPart.model_validate({"thinking": "t", "provider": name})


class TestDefaultFormat:
    @pytest.mark.parametrize(
        "function",
        [
            Renderer.__init__,
            render_history,
            ContextManager.__init__,
            ContextManager.open,
            resolve_options,
            replay,
        ],
        ids=lambda f: f.__qualname__,
    )
    def test_every_default_is_the_registrys(self, function: Callable[..., Any]) -> None:
        """A renderer, manager or replay not told a format takes the one named default."""
        assert inspect.signature(function).parameters["format"].default is DEFAULT_FORMAT
        assert DEFAULT_FORMAT in FORMAT_NAMES

    def test_a_manager_not_told_a_format_renders_in_it(self) -> None:
        """The default is what a render is written in, not only a name in a signature."""
        manager = ContextManager(budget=10_000, policy=Policy())
        manager.add_user("hello")
        assert manager.render_sync().format == DEFAULT_FORMAT


class TestCacheMarking:
    def test_the_marking_formats_are_those_whose_renderer_marks(self) -> None:
        """`CACHE_MARKING_FORMATS` is read from the renderers, in the registry's order."""
        expected = tuple(n for n in FORMAT_NAMES if PROVIDER_RENDERERS[n].cache_marking)
        assert CACHE_MARKING_FORMATS == expected
        assert CACHE_MARKING_FORMATS  # one format at least takes marks

    @pytest.mark.parametrize("name", FORMAT_NAMES)
    def test_a_manager_takes_marks_exactly_where_the_registry_says(self, name: str) -> None:
        """A policy with cache marks is accepted for a marking format, refused for the rest."""
        policy = Policy(cache_breakpoints=True)
        if name in CACHE_MARKING_FORMATS:
            assert resolve_options(policy, format=name).cache_breakpoints  # type: ignore[arg-type]
        else:
            with pytest.raises(ConfigurationError, match=repr(name)):
                resolve_options(policy, format=name)  # type: ignore[arg-type]


class TestOnlyFormats:
    @given(
        names=st.lists(st.sampled_from(FORMAT_NAMES), unique=True).map(tuple),
        name=st.one_of(st.sampled_from(FORMAT_NAMES), st.text(max_size=12)),
    )
    def test_admits_exactly_the_named_formats(self, names: tuple[str, ...], name: str) -> None:
        """A name of the set comes back unchanged; any other is a `ValueError` naming it."""
        admit = only_formats(names, "lacks it")
        if name in names:
            assert admit(name) == name  # type: ignore[arg-type]
        else:
            with pytest.raises(ValueError, match="lacks it; expected one of") as caught:
                admit(name)  # type: ignore[arg-type]
            assert repr(name) in str(caught.value)

    @pytest.mark.parametrize("name", [n for n in FORMAT_NAMES if n not in NATIVE_FORMATS])
    def test_a_format_without_artifacts_is_refused_as_a_provider(self, name: str) -> None:
        """A compaction artifact credited to a format that makes none names the format."""
        with pytest.raises(ValidationError, match="makes no compaction artifact"):
            NativeCompaction.model_validate({"provider": name, "item": {}})


class TestFormatConstants:
    def test_each_constant_is_its_folders_wire(self) -> None:
        """The named constants are the registered names, each its own folder's wire."""
        folders = {
            OPENAI_FORMAT: "openai_chat",
            ANTHROPIC_FORMAT: "anthropic",
            GEMINI_FORMAT: "gemini",
            RESPONSES_FORMAT: "openai_responses",
        }
        assert tuple(folders) == FORMAT_NAMES
        for name, folder in folders.items():
            wire = importlib.import_module(f"context_graph.formats.{folder}.wire").WIRE
            assert wire is WIRES[name]
            assert wire.name == name


class TestProviderFormat:
    def test_no_two_formats_claim_one_provider(self) -> None:
        """A provider name is in one wire's `providers` at most, and written in lowercase."""
        claimed = [p for name in FORMAT_NAMES for p in WIRES[name].providers]
        assert len(claimed) == len(set(claimed))
        assert all(p == p.lower() for p in claimed)

    @pytest.mark.parametrize(
        ("provider", "expected"),
        [
            ("anthropic", ANTHROPIC_FORMAT),
            ("OpenAI", OPENAI_FORMAT),
            ("azure_openai", OPENAI_FORMAT),
            ("google-gla", GEMINI_FORMAT),
            ("google_vertexai", GEMINI_FORMAT),
            ("mistral", None),
            (None, None),
        ],
    )
    def test_a_provider_resolves_to_the_format_that_claims_it(
        self, provider: str | None, expected: str | None
    ) -> None:
        """What a framework calls a provider resolves, case ignored; an unknown one to None."""
        assert provider_format(provider) == expected

    def test_no_framework_names_the_responses_api_as_a_provider(self) -> None:
        """Responses is told by a model class or a flag, never by a provider name."""
        assert WIRES[RESPONSES_FORMAT].providers == frozenset()
