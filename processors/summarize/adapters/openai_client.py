"""`OpenAISummarizer`: summaries from any OpenAI-compatible chat completions endpoint.

Works with OpenAI and with servers that speak the same protocol (vLLM, the llama.cpp
server, Ollama, LiteLLM proxies): point `base_url` at them. The `openai` SDK is an
optional extra, imported when the summarizer is constructed.

```python
summarizer = OpenAISummarizer(model="qwen2.5:7b", base_url="http://localhost:11434/v1",
                              api_key="ollama")
```
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from context_graph.errors import ConfigurationError, SummarizerError
from context_graph.graph.nodes import Node
from processors.summarize.adapters.options import ModelSummarizer, SummarizerVendor, missing_sdk
from processors.summarize.adapters.prompt import SYSTEM_PROMPT, build_prompt

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAISummarizer"]


def _make_client(base_url: str | None, api_key: str | None, max_retries: int | None) -> AsyncOpenAI:
    try:
        import openai
    except ImportError as exc:
        raise missing_sdk("OpenAISummarizer", OpenAISummarizer.provider) from exc
    options: dict[str, Any] = {"base_url": base_url, "api_key": api_key}
    if max_retries is not None:
        options["max_retries"] = max_retries
    try:
        return openai.AsyncOpenAI(**options)
    except openai.OpenAIError as exc:
        msg = f"OpenAISummarizer: cannot make a client ({exc}); pass api_key= or client="
        raise ConfigurationError(msg) from exc


class OpenAISummarizer(ModelSummarizer["AsyncOpenAI"]):
    """A `Summarizer` backed by `openai.AsyncOpenAI().chat.completions.create`.

    Args:
        model: The model name the endpoint knows.
        base_url: The endpoint (`http://host:port/v1`); the SDK's default when `None`.
        api_key: The key; the SDK reads `OPENAI_API_KEY` when `None`. Local servers
            usually accept any string.
        client: A ready `AsyncOpenAI` client (instead of `base_url` / `api_key`); the
            caller keeps ownership of it.
        max_tokens: The most tokens the summary may have.
        temperature: Sampling temperature; `None` leaves it to the endpoint.
        max_retries: The SDK's retries of failed requests; the SDK default when `None`.
    """

    provider: ClassVar[SummarizerVendor] = "openai"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        client: AsyncOpenAI | None = None,
        max_tokens: int = 2_048,
        temperature: float | None = 0,
        max_retries: int | None = None,
    ) -> None:
        super().__init__(
            model=model,
            base_url=base_url,
            api_key=api_key,
            client=client,
            max_tokens=max_tokens,
            temperature=temperature,
            max_retries=max_retries,
            make_client=_make_client,
        )

    async def summarize(
        self, nodes: Sequence[Node], *, previous: str | None, instructions: str | None
    ) -> str:
        """Return the model's summary of `nodes`, updating `previous` when given.

        Raises:
            SummarizerError: the model made a tool call, was cut off at `max_tokens`, or
                returned no text. SDK errors (HTTP status, connection) propagate as is.
        """
        prompt = build_prompt(nodes, previous=previous, instructions=instructions)
        extra: dict[str, Any] = {}
        if self.temperature is not None:
            extra["temperature"] = self.temperature
        response = await self._client.chat.completions.create(
            model=self.model,
            messages=[
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": prompt},
            ],
            max_tokens=self.max_tokens,
            **extra,
        )
        if not response.choices:
            raise SummarizerError(self.name, "the response has no choices")
        choice = response.choices[0]
        return self.checked(
            choice.message.content or "",
            tool_call=bool(choice.message.tool_calls),
            cut_off=choice.finish_reason == "length",
        )
