"""The TOML form of a policy: every field of `Policy`, read with its place, written back.

`read_table` parses TOML text or a file into a checked `PolicyTable`; a mistake raises
`ConfigurationError` naming where the TOML came from, the line when the key can be found
in it, and the key path (`stages[1].options`). `write_table` writes a policy's fields back.

TOML has no null: `false` stands for `None` wherever a field takes `None` and is not
itself a bool (`soft_ratio = false`: no soft trigger; `background_timeout = false`: no
time limit), and a field left out has its default.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tomllib
import types
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, NoReturn, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from context_graph.errors import ConfigurationError
from orchestrator.compaction.guards import GuardConfig
from orchestrator.compaction.triggers import TriggerConfig
from orchestrator.policy.stages import StageConfig, SummarizerConfig, build_stages, key_path
from orchestrator.pricing import CachePrice

__all__ = ["PolicyTable", "TableError", "line_of", "read_table", "write_table"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")
_Seconds = Annotated[float, Strict(), Field(gt=0)]


class _TriggerFields(TriggerConfig):
    """`TriggerConfig` validated the plain pydantic way, so its errors keep their location."""

    __init__ = BaseModel.__init__  # plain pydantic errors, not the reworded ones


class _GuardFields(GuardConfig):
    """`GuardConfig` validated the plain pydantic way, so its errors keep their location."""

    __init__ = BaseModel.__init__


_PRICE = TypeAdapter(CachePrice)


def _price(table: Mapping[str, Any]) -> CachePrice:
    """`[guards.price]` as a `CachePrice` (a dataclass, which strict validation refuses)."""
    try:
        return _PRICE.validate_python(table)
    except ValidationError as exc:
        raise TableError([(("price", *e["loc"]), e["msg"]) for e in exc.errors()]) from None


class TableError(ConfigurationError):
    """A policy table's fields are wrong; `locations` holds each problem's key path."""

    def __init__(self, problems: Sequence[tuple[tuple[int | str, ...], str]]) -> None:
        self.problems = tuple(problems)
        self.locations = tuple(loc for loc, _ in problems)
        text = "; ".join(f"`{key_path(loc)}`: {message}" for loc, message in problems)
        super().__init__(f"Policy: {text}")


class PolicyTable(BaseModel):
    """A policy as TOML writes it: every field of `Policy` (`stages` is its `pipeline`).

    Invalid fields raise `ConfigurationError` (a `TableError`) naming the key path.
    """

    model_config = _FROZEN

    name: StrictStr = Field(min_length=1)
    """The policy's name (`coding`, `service`, `chat`, or your own)."""
    description: StrictStr = ""
    """One or two sentences: the kind of agent the policy is for."""
    triggers: TriggerConfig = Field(default_factory=TriggerConfig)
    """The graph-level triggers (budget ratios, counts); `TriggerConfig()` by default."""
    stages: tuple[StageConfig, ...] | None = Field(None, min_length=1)
    """The default pipeline's stages, cheapest first; `default_pipeline()` when left out."""
    pipelines: Mapping[str, tuple[StageConfig, ...]] = Field(default_factory=dict)
    """More pipelines by name (`[[pipelines.light]]` tables in TOML), for the triggers
    that name them in `triggers.pipelines` or in a node's trigger."""
    summarizer: SummarizerConfig | None = None
    """The summarizer by kind and options (`[summarizer]`); the extractive brief when left out."""
    compact_to: Annotated[float, Strict()] = Field(0.7, gt=0, le=1)
    """A compaction goes on until the request is at most this share of the budget."""
    guards: GuardConfig = Field(default_factory=GuardConfig)
    """The loop guards (`[guards]`, `[guards.price]`)."""
    background_timeout: _Seconds | None = 120.0
    """Seconds a background compaction may run; `false` for no limit."""
    compaction_timeout: _Seconds | None = 60.0
    """Seconds a foreground compaction may run; `false` for no limit."""
    redact_secrets: StrictBool | StageConfig = False
    """`true`, or a redactor stage (`[redact_secrets]` with `processor` and `options`)."""
    cache_breakpoints: StrictBool = False
    """Mark prompt-cache breakpoints, for a format that takes them
    (`context_graph.formats.registry.CACHE_MARKING_FORMATS`; any other refuses)."""
    expand_pin_turns: StrictInt = Field(3, ge=0)
    """User turns for which compaction leaves what `context_expand` restored alone."""
    auto_continue: StrictBool = False
    """End the request after an automatic summary with the auto-continue line."""

    def __init__(self, **data: Any) -> None:
        problems: list[tuple[tuple[int | str, ...], str]] = []
        data = _nulls(data, type(self))
        for key, fields, config in (
            ("triggers", _TriggerFields, TriggerConfig),
            ("guards", _GuardFields, GuardConfig),
        ):
            table = data.get(key)
            if not isinstance(table, Mapping):
                continue
            # A nested config would hide the key path inside its own reworded message.
            table = _nulls(table, fields)
            try:
                if key == "guards" and isinstance(table.get("price"), Mapping):
                    table = {**table, "price": _price(table["price"])}
                checked = fields.model_validate(table, strict=True)
            except ValidationError as exc:
                problems += [((key, *e["loc"]), e["msg"]) for e in exc.errors()]
                continue
            except TableError as exc:
                problems += [((key, *loc), message) for loc, message in exc.problems]
                continue
            data = {**data, key: config(**dict(checked))}
        if problems:
            raise TableError(problems)
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise TableError([(e["loc"], e["msg"]) for e in exc.errors()]) from None

    @model_validator(mode="after")
    def _check_pipeline_names(self) -> PolicyTable:
        known = {self.triggers.default_pipeline, *self.pipelines}
        if self.triggers.default_pipeline in self.pipelines:
            msg = (
                f"`pipelines.{self.triggers.default_pipeline}` is the default pipeline; "
                "its stages go in `stages`"
            )
            raise ValueError(msg)
        for trigger, name in self.triggers.pipelines.items():
            if name not in known:
                msg = (
                    f"`triggers.pipelines.{trigger}` names pipeline {name!r}, which the "
                    f"policy does not define (it has {', '.join(sorted(known))})"
                )
                raise ValueError(msg)
        return self


def _takes_none_not_bool(annotation: object) -> bool:
    """Whether a field of this type takes `None` and is no bool (so `false` means `None`)."""
    if get_origin(annotation) is Annotated:
        return _takes_none_not_bool(get_args(annotation)[0])
    if get_origin(annotation) not in (Union, types.UnionType):
        return False
    members = get_args(annotation)
    return type(None) in members and not any(
        m is bool or (get_origin(m) is Annotated and get_args(m)[0] is bool) for m in members
    )


def _nulls(data: Mapping[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """`data` with `false` read as `None` for the fields of `model` that take `None`."""
    nullable = {
        name for name, field in model.model_fields.items() if _takes_none_not_bool(field.annotation)
    }
    return {k: None if (k in nullable and v is False) else v for k, v in data.items()}


def read_table(source: str | os.PathLike[str]) -> PolicyTable:
    """Parse a policy table from TOML text (a `str`) or a file (a `Path`).

    Raises:
        ConfigurationError: invalid TOML, an unknown or invalid key (named by its key
            path, and its line when it can be found), or a stage, summarizer or
            redactor that cannot be built; the message starts with where the TOML came
            from.
    """
    where, text = _text_of(source)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = f"{where}: invalid TOML: {exc}"
        raise ConfigurationError(msg) from exc
    except RecursionError:
        msg = f"{where}: invalid policy: arrays or tables nested too deeply to read"
        raise ConfigurationError(msg) from None
    try:
        table = PolicyTable(**data)
    except TableError as exc:
        line = next(filter(None, (line_of(text, loc) for loc in exc.locations)), None)
        at = where if line is None else f"{where}, line {line}"
        msg = f"{at}: {exc}"
        raise ConfigurationError(msg) from exc
    try:
        build_stages(table.name, "stages", table.stages or ())  # an unknown processor fails
        for name, stages in table.pipelines.items():
            build_stages(table.name, f"pipelines.{name}", stages)
        if isinstance(table.redact_secrets, StageConfig):
            build_stages(table.name, "redact_secrets", (table.redact_secrets,))
    except ConfigurationError as exc:
        msg = f"{where}: {exc}"
        raise ConfigurationError(msg) from exc
    return table


def _text_of(source: str | os.PathLike[str]) -> tuple[str, str]:
    if isinstance(source, str):
        return "policy TOML", source
    where = os.fspath(source)
    try:
        return where, Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        msg = f"{where}: cannot read the policy: {exc.strerror or exc}"
        raise ConfigurationError(msg) from exc
    except UnicodeDecodeError as exc:
        msg = f"{where}: not valid UTF-8 (byte {exc.start}); TOML files are UTF-8"
        raise ConfigurationError(msg) from None


def line_of(text: str, loc: Sequence[int | str]) -> int | None:
    """The 1-based line of TOML `text` that holds the key at `loc`, if it can be found.

    Best effort, for messages: it follows table headers (`[triggers]`, the n-th
    `[[stages]]`) and then looks for `key =` (also inside an inline table).
    """
    lines = text.splitlines()
    start, prefix = 0, ""
    found: int | None = None
    parts = list(loc)
    for index, part in enumerate(parts):
        if isinstance(part, int):
            continue
        dotted = f"{prefix}.{part}" if prefix else part
        count = parts[index + 1] if index + 1 < len(parts) else None
        header = _header_line(lines, start, dotted, count if isinstance(count, int) else 0)
        if header is not None:
            start, prefix, found = header, dotted, header + 1
            continue
        key = re.compile(rf"(^|[\s{{,]){re.escape(part)}\s*=")
        hit = next((i for i in range(start, len(lines)) if key.search(lines[i])), None)
        if hit is None:
            return found
        start, found = hit, hit + 1
    return found


def _header_line(lines: Sequence[str], start: int, dotted: str, nth: int) -> int | None:
    """The line of the `nth` `[dotted]` or `[[dotted]]` header at or after `start`."""
    pattern = re.compile(rf"^\s*\[\[?\s*{re.escape(dotted)}\s*\]\]?\s*(#.*)?$")
    hits = [i for i in range(start, len(lines)) if pattern.match(lines[i])]
    return hits[nth] if nth < len(hits) else None


def write_table(fields: Mapping[str, Any]) -> str:
    """A policy's `fields` (each `Policy` field by name) as TOML that reads back equal.

    Raises:
        ConfigurationError: a field holds an object TOML cannot name (a processor, a
            summarizer or a redactor instance instead of its config), named by its field.
    """
    name = fields["name"]
    top: dict[str, Any] = {key: fields[key] for key in _PLAIN}
    for key in ("background_timeout", "compaction_timeout"):
        top[key] = False if fields[key] is None else fields[key]
    redact = fields["redact_secrets"]
    top["redact_secrets"] = (
        redact if isinstance(redact, bool) else _stage(name, "redact_secrets", redact)
    )
    top["triggers"] = _config(fields["triggers"])
    guards = _config(fields["guards"])
    price = getattr(fields["guards"], "price", None)
    if isinstance(price, CachePrice):
        guards["price"] = dataclasses.asdict(price)
    top["guards"] = guards
    summarizer = fields["summarizer"]
    if summarizer is not None:
        if not isinstance(summarizer, SummarizerConfig):
            _unwritable(name, "summarizer", summarizer, "SummarizerConfig")
        top["summarizer"] = {"kind": summarizer.kind, "options": dict(summarizer.options)}
    if fields["pipeline"] is not None:
        top["stages"] = [_stage(name, f"stages[{i}]", s) for i, s in enumerate(fields["pipeline"])]
    top["pipelines"] = {
        key: [_stage(name, f"pipelines.{key}[{i}]", s) for i, s in enumerate(stages)]
        for key, stages in fields["pipelines"].items()
    }
    return "\n".join(_emit(top, ())) + "\n"


#: The fields written as they are, in the order a reader meets them.
_PLAIN = (
    "name",
    "description",
    "compact_to",
    "cache_breakpoints",
    "expand_pin_turns",
    "auto_continue",
)


def _config(config: BaseModel) -> dict[str, Any]:
    """A trigger or guard config as TOML values: `None` as `false`, the price left out."""
    values = config.model_dump(exclude={"price"} if isinstance(config, GuardConfig) else set())
    return {k: False if v is None else v for k, v in values.items()}


def _stage(policy: str, where: str, stage: object) -> dict[str, Any]:
    if not isinstance(stage, StageConfig):
        _unwritable(policy, where, stage, "StageConfig")
    return {"processor": stage.processor, "options": dict(stage.options)}


def _unwritable(policy: str, where: str, value: object, config: str) -> NoReturn:
    msg = (
        f"policy {policy!r}: `{where}` is {type(value).__name__} instance, which TOML "
        f"cannot name; give it as a {config} to write the policy as TOML"
    )
    raise ConfigurationError(msg)


_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _key(name: str) -> str:
    return name if _BARE.fullmatch(name) else _value(name, name)


def _value(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)  # `inf` and `nan` are TOML's spellings too
    if isinstance(value, str):
        # A JSON string is a TOML basic string, once DEL (which JSON leaves) is escaped.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_key(str(k))} = {_value(v, where)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, Sequence | set | frozenset):
        items = sorted(value) if isinstance(value, set | frozenset) else value
        return "[" + ", ".join(_value(v, where) for v in items) + "]"
    msg = f"`{where}`: {type(value).__name__} {value!r} has no TOML form"
    raise ConfigurationError(msg)


def _emit(table: Mapping[str, Any], path: tuple[str, ...]) -> Iterator[str]:
    """Lines of `table`: its plain values first, then its sub-tables and arrays of tables."""
    # An empty table is left out: read back, it is the field's default, also empty.
    table = {k: v for k, v in table.items() if not (isinstance(v, Mapping) and not v)}
    nested = {k: v for k, v in table.items() if isinstance(v, Mapping) and k != "options"}
    arrays = {
        k: v
        for k, v in table.items()
        if isinstance(v, list) and v and all(isinstance(i, Mapping) for i in v)
    }
    for key, value in table.items():
        if key not in nested and key not in arrays:
            yield f"{_key(key)} = {_value(value, '.'.join((*path, key)))}"
    for key, value in nested.items():
        inner = (*path, key)
        if any(not isinstance(v, Mapping) for v in value.values()):
            yield ""
            yield f"[{'.'.join(map(_key, inner))}]"
        yield from _emit(value, inner)
    for key, items in arrays.items():
        inner = (*path, key)
        for item in items:
            yield ""
            yield f"[[{'.'.join(map(_key, inner))}]]"
            yield from _emit(item, inner)
