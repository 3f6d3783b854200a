"""`check_keywords`: the keyword check Python makes of explicit parameters, for `**fields`.

A shorthand that passes `**fields: Unpack[SomeFields]` on to a model is typed for mypy,
but at run time Python takes any keyword. A misspelled one would reach the model and fail
there as a validation error about the model, not about the call; checked here, it is a
`TypeError` that names the call, the keyword and the ones the call accepts.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

__all__ = ["accepted_keywords", "check_keywords"]


def accepted_keywords(fields: type) -> frozenset[str]:
    """The keys a `TypedDict` class lists, required or not."""
    required: frozenset[str] = getattr(fields, "__required_keys__", frozenset())
    optional: frozenset[str] = getattr(fields, "__optional_keys__", frozenset())
    return required | optional


def check_keywords(
    where: str, given: Iterable[str], fields: type, *, explicit: Collection[str] = ()
) -> None:
    """Refuse a keyword of `given` that neither `fields` nor `explicit` lists.

    Args:
        where: The call, as the message names it (`add_user()`).
        given: The keywords the call received in its `**fields`.
        fields: The `TypedDict` that types those keywords.
        explicit: The call's own keyword parameters, named among the accepted ones.

    Raises:
        TypeError: naming the first unknown keyword and every accepted one.
    """
    accepted = accepted_keywords(fields)
    unknown = [name for name in given if name not in accepted]
    if unknown:
        names = ", ".join(sorted(accepted | set(explicit)))
        msg = f"{where} got an unexpected keyword argument {unknown[0]!r}; it accepts: {names}"
        raise TypeError(msg)
