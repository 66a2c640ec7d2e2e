"""``source``: where the agent's records come from, by name, with the source's options."""

from __future__ import annotations

import functools
import inspect
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from driftwatch.settings.common import _problem, _raise, _Section
from driftwatch.sources import registry
from driftwatch.sources.registry import SourceFactory


class SourceSettings(_Section):
    """The agent's source: ``kind`` names it (a built-in or a ``driftwatch.sources``
    plug-in, see docs/plugins.md) and ``options`` are its settings, checked against the
    source factory's keyword parameters (their names, type hints and defaults)."""

    model_config = ConfigDict(extra="forbid", frozen=True,
                              json_schema_extra=lambda schema: _kind_schema(schema))

    kind: str = Field(
        default="kafka",
        description="The source: kafka (the kafka section says which brokers and topics), "
        "jsonl (a JSON Lines file or standard input, followed as it grows; options: path, "
        "poll_interval_seconds), or the name of a driftwatch.sources plug-in.",
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="The source's options (the keyword parameters of its factory); the "
        "kafka source takes none: its settings are the kafka section.",
    )

    @model_validator(mode="after")
    def _known_source(self) -> SourceSettings:
        try:
            factory = registry.get(self.kind)
        except ValueError as error:
            _raise(type(self).__name__, [_problem(("kind",), str(error), self.kind)])
            raise  # unreachable: _raise raised
        try:
            _options_model(factory).model_validate(self.options)
        except ValidationError as error:
            _raise(type(self).__name__, [
                _problem(("options", *problem["loc"]),
                         f"source {self.kind!r}: {problem['msg']}", problem.get("input"))
                for problem in error.errors()])
        return self


def _kind_schema(schema: dict[str, Any]) -> None:
    """The registry's sources as the choices of ``kind`` in the JSON Schema (editors)."""
    schema["properties"]["kind"]["enum"] = list(registry.available())


@functools.cache
def _options_model(factory: SourceFactory) -> type[BaseModel]:
    """A strict pydantic model of the factory's keyword parameters (after the context)."""
    try:
        hints = typing.get_type_hints(factory, include_extras=True)
    except Exception:  # a plug-in's unresolvable hint must not break the settings
        hints = {}
    fields: dict[str, Any] = {}
    for name in registry.option_names(factory):
        parameter = inspect.signature(factory).parameters[name]
        required = parameter.default is parameter.empty
        fields[name] = (hints.get(name, Any), Field(... if required else parameter.default))
    return create_model(
        f"{getattr(factory, '__qualname__', 'source')}Options",
        __config__=ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True),
        **fields,
    )
