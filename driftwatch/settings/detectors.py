"""A detector in the settings: a registry name and its parameters, typed from the
detector's constructor signature."""

from __future__ import annotations

import functools
import inspect
import typing
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from driftwatch.core.config_error import ConfigError
from driftwatch.core.detectors import registry
from driftwatch.core.detectors.base import Detector
from driftwatch.core.monitor import DetectorSpec
from driftwatch.settings.common import _core_problems, _problem, _raise, _Section


@functools.cache
def _parameters_model(detector: type[Detector]) -> type[BaseModel]:
    """A pydantic model of ``detector``'s constructor parameters, derived from its signature.

    Every keyword argument of ``__init__`` becomes a field with its type hint (``Any`` when
    it has none or it cannot be resolved) and its default, and with the description and
    bounds of the detector's ``parameter_docs`` when it gives them. Strict: ``delta: true`` is not
    0.999…, it is a mistake. The detector's own checks (bounds, cross-parameter rules) run
    afterwards, when the settings build it once.
    """
    try:
        hints = typing.get_type_hints(detector.__init__)
    except Exception:  # a plug-in's unresolvable hint must not break settings
        hints = {}
    fields: dict[str, Any] = {}
    parameters = list(inspect.signature(detector.__init__).parameters.values())[1:]
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        required = parameter.default is parameter.empty
        described = detector.parameter_docs.get(parameter.name)
        description, low, high = described or (
            f"Parameter {parameter.name} of {detector.__qualname__} "
            f"({detector.__module__}); see its documentation.", None, None)
        fields[parameter.name] = (
            hints.get(parameter.name, Any),
            Field(
                default=... if required else parameter.default,
                description=description,
                ge=low,
                le=high,
            ),
        )
    return create_model(
        f"{detector.__qualname__}Parameters",
        __config__=ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True),
        **fields,
    )


def _detector_schema(schema: dict[str, Any]) -> None:
    """Add the registry's detectors to the JSON Schema: ``name`` as an enum, and for each
    name the schema of its ``params``, so editors complete and check them."""
    detectors = registry.available()
    schema["properties"]["name"]["enum"] = list(detectors)
    branches: list[dict[str, Any]] = []
    for name, detector in detectors.items():
        params = _parameters_model(detector).model_json_schema()
        if "$defs" in params:  # nested types: leave params as a plain object for this one
            continue
        params.pop("title", None)
        params["description"] = f"Parameters of the {name} detector ({detector.__qualname__})."
        branches.append({
            "if": {"properties": {"name": {"const": name}}, "required": ["name"]},
            "then": {"properties": {"params": params}},
        })
    if branches:
        schema["allOf"] = branches


class DetectorSettings(_Section):
    """A detector fed with a measure's samples: a registry name and its parameters."""

    model_config = ConfigDict(json_schema_extra=_detector_schema)

    name: Annotated[str, StringConstraints(min_length=1, max_length=100)] = Field(
        description=(
            "A detector registered under this name: page_hinkley, adwin, ddm, or a plug-in "
            "of the driftwatch.detectors entry-point group."
        )
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        max_length=100,
        description=(
            "Constructor parameters of the detector, checked against its signature and by "
            "the detector itself; omitted ones take the detector's defaults. direction, when "
            "the detector has it and it is not given, comes from the watch."
        ),
    )

    @field_validator("name")
    @classmethod
    def _registered(cls, name: str) -> str:
        registry.get(name)  # ValueError listing the known detectors, or why a plug-in is broken
        return name

    @field_validator("params")
    @classmethod
    def _typed(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        name = info.data.get("name")
        if name is None:  # the name was refused: nothing to check the parameters against
            return params
        model = _parameters_model(registry.get(name))
        try:
            validated = model.model_validate(params)
        except ValidationError as exc:
            accepted = ", ".join(model.model_fields) or "(none)"
            problems: list[InitErrorDetails] = []
            for error in exc.errors(include_url=False):
                if error["type"] == "extra_forbidden":
                    message = f"{name} has no such parameter; its parameters: {accepted}"
                    problems.append(_problem(error["loc"], message))
                else:
                    problems.append({
                        "type": PydanticCustomError(
                            "detector_parameter", "{message}", {"message": error["msg"]}
                        ),
                        "loc": error["loc"],
                        "input": error["input"],
                    })
            _raise(cls.__name__, problems)
        params = {key: getattr(validated, key) for key in params}
        # Build it once, so the detector's own checks (bounds, rules between parameters)
        # report here, at the parameter the core's error locates. The watch builds it again
        # with the direction it inherits (WatchSettings._buildable).
        try:
            registry.create(name, **params)
        except ConfigError as exc:
            _raise(cls.__name__, _core_problems(exc, inside=("params",)))
        return params

    def spec(self) -> DetectorSpec:
        return DetectorSpec(self.name, dict(self.params))
