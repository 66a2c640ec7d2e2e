"""The ``/metrics`` body: prometheus_client's encoders, with rendered families written as is.

:func:`encode` walks a registry as prometheus_client's ``generate_latest`` (either format)
does, and gives each family to that same encoder, except the sample lines of a
:class:`~driftwatch.sinks.prometheus.rendered.RenderedFamily`, which are already text: the
encoder writes only its ``# HELP`` / ``# TYPE`` lines (from an empty copy of it), so the
headers are byte for byte the encoder's own in every format and escaping it negotiates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from driftwatch.sinks.prometheus.rendered import RenderedFamily

__all__ = ["encode"]

Encoder = Callable[[Collector], bytes]


@dataclass(frozen=True)
class _Only(Collector):
    """A collector of the given families, to hand one family at a time to an encoder."""

    families: tuple[Metric, ...]

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)


def _header(family: RenderedFamily) -> Metric:
    """An empty family of ``family``'s name, type and help: what its header lines need."""
    return Metric(family.name, family.documentation, family.type)


def encode(registry: Collector, encoder: Encoder) -> bytes:
    """``encoder(registry)``, the same bytes, with rendered families' lines taken as they
    are. ``encoder`` is one prometheus_client gives (``choose_encoder``)."""
    ending = encoder(_Only(()))  # b"# EOF\n" for OpenMetrics, b"" for the text format
    out: list[bytes] = []
    plain: list[Metric] = []

    def flush(families: Iterable[Metric]) -> None:
        text = encoder(_Only(tuple(families)))
        out.append(text[:len(text) - len(ending)] if ending else text)

    for family in registry.collect():
        if isinstance(family, RenderedFamily):
            if plain:
                flush(plain)
                plain = []
            flush((_header(family),))
            out.append(family.body().encode("utf-8"))
        else:
            plain.append(family)
    if plain:
        flush(plain)
    out.append(ending)
    return b"".join(out)
