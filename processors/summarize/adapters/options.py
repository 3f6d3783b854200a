"""What the model-backed summarizers share: option checks and a base class."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Generic, Literal, Protocol, TypeAlias, TypeVar

from context_graph.errors import ConfigurationError, SummarizerError

__all__ = ["ClientT", "ModelSummarizer", "SummarizerVendor", "check_model_options", "missing_sdk"]

#: The vendors (`context_graph.vendors.Vendor`) whose SDK a summarizer here calls: each
#: summarizer's `provider`, and its kind in a policy's `[summarizer]` table.
SummarizerVendor: TypeAlias = Literal["anthropic", "openai"]


class _Closable(Protocol):
    async def close(self) -> None:
        """Release the client's connections."""


ClientT = TypeVar("ClientT", bound=_Closable)


def check_model_options(
    owner: str,
    *,
    model: object,
    max_tokens: object,
    temperature: object,
    max_retries: object,
    client: object,
    base_url: object,
    api_key: object,
) -> None:
    """Raise `ConfigurationError` naming the first bad option and its fix."""
    if not isinstance(model, str) or not model.strip():
        msg = f"{owner}: `model` must be a model name, e.g. model='gpt-4o-mini'"
        raise ConfigurationError(msg)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        msg = f"{owner}: `max_tokens` must be an int >= 1, got {max_tokens!r}"
        raise ConfigurationError(msg)
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not 0 <= temperature <= 2
    ):
        msg = f"{owner}: `temperature` must be between 0 and 2 (or None), got {temperature!r}"
        raise ConfigurationError(msg)
    if max_retries is not None and (
        isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0
    ):
        msg = f"{owner}: `max_retries` must be an int >= 0 (or None), got {max_retries!r}"
        raise ConfigurationError(msg)
    if client is not None and (base_url is not None or api_key is not None):
        msg = f"{owner}: pass either `client` or `base_url`/`api_key`, not both"
        raise ConfigurationError(msg)


def missing_sdk(owner: str, package: str) -> ConfigurationError:
    """The error for an adapter whose SDK is not installed."""
    msg = (
        f"{owner} needs the `{package}` package: in the context-graph checkout, "
        f"`pip install '.[{package}]'` (or `pip install {package}`)"
    )
    return ConfigurationError(msg)


class ModelSummarizer(Generic[ClientT]):
    """What the SDK-backed summarizers share: options, the client's life, answer checks.

    A subclass sets `provider`, passes its SDK's client factory to `__init__`, and
    implements `summarize` with its SDK's call, passing the answer through `checked`.
    """

    provider: ClassVar[SummarizerVendor]

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None,
        api_key: str | None,
        client: ClientT | None,
        max_tokens: int,
        temperature: float | None,
        max_retries: int | None,
        make_client: Callable[[str | None, str | None, int | None], ClientT],
    ) -> None:
        check_model_options(
            type(self).__name__,
            model=model,
            max_tokens=max_tokens,
            temperature=temperature,
            max_retries=max_retries,
            client=client,
            base_url=base_url,
            api_key=api_key,
        )
        self.model = model
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._owns_client = client is None
        self._client: ClientT = (
            client if client is not None else make_client(base_url, api_key, max_retries)
        )

    @property
    def name(self) -> str:
        """`<provider>:<model>`."""
        return f"{self.provider}:{self.model}"

    def checked(self, text: str, *, tool_call: bool, cut_off: bool) -> str:
        """The answer's text, or `SummarizerError` when it is not a usable summary."""
        if tool_call:
            raise SummarizerError(self.name, "the model attempted a tool call, not a summary")
        if cut_off:
            msg = f"the summary was cut off at max_tokens={self.max_tokens}"
            raise SummarizerError(self.name, msg)
        if not text.strip():
            raise SummarizerError(self.name, "the model returned no text")
        return text.strip()

    async def aclose(self) -> None:
        """Close the HTTP client if this summarizer made it."""
        if self._owns_client:
            await self._client.close()
