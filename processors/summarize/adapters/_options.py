"""Option checks shared by the model-backed summarizers."""

from __future__ import annotations

from context_graph.errors import ConfigurationError


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
    msg = f"{owner} needs the `{package}` package: pip install 'context-graph[{package}]'"
    return ConfigurationError(msg)
