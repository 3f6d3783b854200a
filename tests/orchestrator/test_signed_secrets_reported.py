"""A secret the redactor had to leave in a signed thinking block is reported by the render."""

from __future__ import annotations

import pytest

from context_graph import TextPart, ThinkingPart
from context_graph.graph.nodes import SIGNED_SECRETS
from orchestrator import ContextManager
from orchestrator.policy import Policy

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _manager(fmt: str) -> ContextManager:
    manager = ContextManager(format=fmt, policy=Policy(redact_secrets=True))  # type: ignore[arg-type]
    manager.add_user("Deploy it.")
    manager.add_assistant(
        [
            ThinkingPart(thinking=f"The env has GITHUB_TOKEN={TOKEN}.", signature="c2ln"),
            TextPart(text="Deploying."),
        ]
    )
    manager.add_user("Go on.")
    return manager


class TestSignedSecretsReported:
    @pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini"])
    def test_the_render_counts_the_secret_left_in_signed_thinking(self, fmt: str) -> None:
        """RenderResult.signed_secrets names the type and count, whatever the format."""
        result = _manager(fmt).render_sync()
        assert dict(result.signed_secrets) == {"github_token": 1}

    def test_only_anthropic_is_sent_the_signed_block(self) -> None:
        """The block goes back to the provider that signed it, unchanged; others never see it."""
        assert TOKEN in _manager("anthropic").render_sync().to_json()
        assert TOKEN not in _manager("openai").render_sync().to_json()
        assert TOKEN not in _manager("gemini").render_sync().to_json()

    def test_no_secret_no_report(self) -> None:
        """A session without secrets in signed blocks reports none."""
        manager = ContextManager(format="anthropic", policy=Policy(redact_secrets=True))
        manager.add_user("Hello.")
        result = manager.render_sync()
        assert dict(result.signed_secrets) == {}
        assert all(SIGNED_SECRETS not in node.meta for node in manager.raw)

    def test_a_dropped_unit_is_not_counted(self) -> None:
        """When the unit with the signed block is left out, the request carries no secret."""
        manager = _manager("anthropic")
        for n in range(30):
            manager.add_user(f"Step {n}: " + "more words to fill the history " * 20)
            manager.add_assistant(f"Done with step {n}.")
        result = manager.render_sync(budget=900)
        assert TOKEN not in result.to_json()
        assert dict(result.signed_secrets) == {}
