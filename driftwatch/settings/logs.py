"""``logging``: log level and format."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from driftwatch.settings.common import _Section


class LoggingSettings(_Section):
    """Log output."""

    level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field(
        default="INFO", description="Least severe level logged (case-insensitive)."
    )
    format: Literal["text", "json"] = Field(
        default="text",
        description="text for people, json (one object per line) for log collectors.",
    )

    @field_validator("level", mode="before")
    @classmethod
    def _upper(cls, level: Any) -> Any:
        return level.upper() if isinstance(level, str) else level
