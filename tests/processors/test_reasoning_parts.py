"""Processors never change a Responses reasoning part: it goes back to OpenAI as received."""

from __future__ import annotations

import random
import string

from context_graph import ContextGraph, ReasoningPart, TextPart
from context_graph.testing import WordCounter
from processors.base import ProcessorContext, Replace
from processors.redact import SecretRedactor

_TOKEN = "ghp_" + "".join(random.Random(7).choices(string.ascii_letters + string.digits, k=36))


class TestSecretRedactor:
    async def test_the_text_is_redacted_and_the_reasoning_is_not_touched(self) -> None:
        """The turn's text loses its secret; its reasoning part is the very same part."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("push it")
        reasoning = ReasoningPart(
            id="rs_1", summary=(f"use token {_TOKEN}",), encrypted_content=f"gAAA{_TOKEN}"
        )
        head = graph.add_assistant([reasoning, TextPart(text=f"pushing with {_TOKEN}")])[0]
        proposal = await SecretRedactor().propose(list(graph), ProcessorContext.for_graph(graph))
        (edit,) = [e for e in proposal.edits if isinstance(e, Replace) and e.target == head]
        first, text = edit.replacement.content
        assert first == reasoning
        assert isinstance(text, TextPart) and _TOKEN not in text.text
