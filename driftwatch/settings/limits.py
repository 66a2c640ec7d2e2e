"""``limits``: bounds on models, and so on memory and metric cardinality."""

from __future__ import annotations

from pydantic import Field

from driftwatch.settings.common import _Section


class LimitsSettings(_Section):
    """Bounds that keep memory and metric cardinality finite whatever the stream holds."""

    max_models: int = Field(
        default=100,
        ge=1,
        le=100_000,
        description=(
            "Most models monitored at once; events of further models are rejected (reason "
            "too_many_models) and counted. Each model costs a window (window_size events) "
            "and a few dozen Prometheus series, so 100 models stay within tens of MB and a "
            "few thousand series."
        ),
    )
