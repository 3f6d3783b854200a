"""`AnthropicSummarizer`: summaries from the Anthropic Messages API.

The `anthropic` SDK is an optional extra, imported when the summarizer is constructed.

```python
summarizer = AnthropicSummarizer(model="claude-haiku-4-5")
```
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from context_graph.errors import ConfigurationError
from context_graph.graph.nodes import Node
from processors.summarize.adapters.options import ModelSummarizer, SummarizerVendor, missing_sdk
from processors.summarize.adapters.prompt import SYSTEM_PROMPT, build_prompt

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ["AnthropicSummarizer"]


def _make_client(
    base_url: str | None, api_key: str | None, max_retries: int | None
) -> AsyncAnthropic:
    try:
        import anthropic
    except ImportError as exc:
        raise missing_sdk("AnthropicSummarizer", AnthropicSummarizer.provider) from exc
    options: dict[str, Any] = {"base_url": base_url, "api_key": api_key}
    if max_retries is not None:
        options["max_retries"] = max_retries
    try:
        return anthropic.AsyncAnthropic(**options)
    except anthropic.AnthropicError as exc:
        msg = f"AnthropicSummarizer: cannot make a client ({exc}); pass api_key= or client="
        raise ConfigurationError(msg) from exc


class AnthropicSummarizer(ModelSummarizer["AsyncAnthropic"]):
    """A `Summarizer` backed by `anthropic.AsyncAnthropic().messages.create`.

    Args:
        model: The model name.
        base_url: The API address; the SDK's default when `None`.
        api_key: The key; the SDK reads `ANTHROPIC_API_KEY` when `None`.
        client: A ready `AsyncAnthropic` client (instead of `base_url` / `api_key`);
            the caller keeps ownership of it.
        max_tokens: The most tokens the summary may have.
        temperature: Sampling temperature; `None` (the default) leaves it to the API.
        max_retries: The SDK's retries of failed requests; the SDK default when `None`.
    """

    provider: ClassVar[SummarizerVendor] = "anthropic"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        client: AsyncAnthropic | None = None,
        max_tokens: int = 2_048,
        temperature: float | None = None,
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
            # Sent as a body field: recent SDKs dropped the keyword, the API still takes it.
            extra["extra_body"] = {"temperature": self.temperature}
        response = await self._client.messages.create(
            model=self.model,
            max_tokens=self.max_tokens,
            system=SYSTEM_PROMPT,
            messages=[{"role": "user", "content": prompt}],
            **extra,
        )
        return self.checked(
            "".join(b.text for b in response.content if b.type == "text"),
            tool_call=any(b.type in ("tool_use", "server_tool_use") for b in response.content),
            cut_off=response.stop_reason == "max_tokens",
        )
