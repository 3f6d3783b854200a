"""Every integration module, imported without its framework, names the extra to install."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from context_graph.errors import ConfigurationError
from orchestrator.integrations import extras

# module, a framework module it imports, the extra that installs it
MODULES = [
    ("orchestrator.integrations.pydantic_ai", "pydantic_ai.capabilities", "pydantic-ai"),
    ("orchestrator.integrations.pydantic_ai_messages", "pydantic_ai.messages", "pydantic-ai"),
    ("orchestrator.integrations.pydantic_ai_thinking", "pydantic_ai.messages", "pydantic-ai"),
    ("orchestrator.integrations.langchain", "langgraph.config", "langchain"),
    ("orchestrator.integrations.langchain_messages", "langchain_core.messages", "langchain"),
]


@pytest.mark.parametrize(("name", "framework", "extra"), MODULES)
def test_a_missing_framework_names_the_module_and_the_extra(
    name: str, framework: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The module's own import fails with the install that brings the framework."""
    path = importlib.util.find_spec(name)
    assert path is not None and path.origin is not None
    monkeypatch.setitem(sys.modules, framework, None)  # `import` of it now fails
    spec = importlib.util.spec_from_file_location(name, path.origin)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with pytest.raises(ConfigurationError) as caught:
        spec.loader.exec_module(module)
    message = str(caught.value)
    assert message.startswith(f"{name} needs ")
    assert f"pip install '.[{extra}]'" in message
    assert isinstance(caught.value.__cause__, ImportError)


def test_the_message_reads_whole() -> None:
    """What the module needs, the extra, and the plain packages, in one sentence."""
    error = extras.missing_extra("m", "Frame v2", "frame", "frame-core frame-x")
    assert str(error) == (
        "m needs Frame v2: in the context-graph checkout, `pip install '.[frame]'` "
        "(or `pip install frame-core frame-x`)"
    )
