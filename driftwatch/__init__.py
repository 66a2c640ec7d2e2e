"""driftwatch: watch a deployed binary classifier for drift.

The pure measurement core lives in :mod:`driftwatch.core`; everything that touches the outside
world (Kafka, Prometheus, files) stays outside it. To embed a monitor in Python code, use
:class:`driftwatch.ModelMonitor` (:mod:`driftwatch.api`, documented in ``docs/api.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

__all__ = ["ModelMonitor", "UpdateResult", "__version__"]

if TYPE_CHECKING:
    from driftwatch.api import ModelMonitor, UpdateResult


def __getattr__(name: str) -> Any:
    # Imported on first use: ``import driftwatch.core`` (and the CLI) must not pay for the
    # API's imports, and the pure core must not load the settings' libraries.
    if name in ("ModelMonitor", "UpdateResult"):
        from driftwatch import api

        return getattr(api, name)
    raise AttributeError(f"module 'driftwatch' has no attribute {name!r}")
