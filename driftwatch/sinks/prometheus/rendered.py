"""Per-model metric families written as exposition text directly, not sample by sample.

At 10 000 models a scrape holds about half a million per-model samples. Added to
prometheus_client's families and formatted by its ``generate_latest`` they cost about 11 µs
of CPU each (label dicts, name validation, sorting and escaping each label of each sample):
5.6 s per scrape; written as text here, 2.7 µs (``python -m benchmarks fleet --scrape``). A
:class:`RenderedFamily` instead holds its samples' lines already written:
:class:`LineFormat` writes a line with the family's label names sorted once, each label
value escaped once per scrape, and the value formatted as prometheus_client formats it
(``floatToGoString``), so the text is the same bytes ``generate_latest`` writes, in the
Prometheus text format and in OpenMetrics alike (the sample lines of these families are the
same in both: names and label names are valid legacy names). Only the ``# HELP`` / ``#
TYPE`` lines differ between the formats; :mod:`driftwatch.sinks.prometheus.exposition` takes
them from prometheus_client itself.

A model's lines are written once and reused for as long as its snapshot is the same object
(the agent reuses the snapshot of a monitor without new events):
:class:`~driftwatch.sinks.prometheus.collector.SnapshotCollector` keeps them between scrapes.

``RenderedFamily.samples`` parses the lines back into prometheus_client samples, for the
slow paths that need them (``name[]`` filtering, ``get_sample_value``, tests): the same
values, since ``floatToGoString`` writes a float's shortest round-trip digits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

__all__ = ["LineFormat", "RenderedFamily", "escape_label_value", "format_value"]


def escape_label_value(value: str) -> str:
    """A label value as both exposition formats write it (backslash, newline, quote)."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def format_value(value: float) -> str:
    """A sample value as prometheus_client writes it (``floatToGoString``): Python's
    shortest round-trip digits, Go's exponent form from 10^6 on, ``+Inf``, ``NaN``."""
    text = repr(float(value))
    if text.find(".") > 6 or text[-1] in "fn":  # ±1e6 and more, inf, nan: the rare cases
        return str(floatToGoString(value))  # type: ignore[no-untyped-call]
    return text


class LineFormat:
    """Writes one family's sample lines: ``name{a="…",b="…"} value``, labels in name order
    (as prometheus_client sorts them), from label values given in the family's order."""

    def __init__(self, sample_name: str, label_names: Sequence[str]) -> None:
        self.sample_name = sample_name
        order = sorted(range(len(label_names)), key=lambda i: label_names[i])
        names = [label_names[i] for i in order]
        if not names:
            self.line = lambda escaped, value: f"{sample_name} {format_value(value)}\n"
            return
        # The literal text around each label value: name{a=" … ",b=" … "} (one f-string
        # per line, the fastest way CPython joins them).
        pieces = [f'{sample_name}{{{names[0]}="',
                  *(f'",{name}="' for name in names[1:]), '"} ']
        if len(order) == 1:
            a, b = pieces
            self.line = lambda escaped, value: f"{a}{escaped[0]}{b}{format_value(value)}\n"
        elif len(order) == 2:
            a, b, c = pieces
            i, j = order
            self.line = lambda escaped, value: (
                f"{a}{escaped[i]}{b}{escaped[j]}{c}{format_value(value)}\n")
        else:
            def line(escaped: Sequence[str], value: float) -> str:
                parts = [pieces[0]]
                for position, index in enumerate(order):
                    parts += (escaped[index], pieces[position + 1])
                return f"{''.join(parts)}{format_value(value)}\n"
            self.line = line

    line: Callable[[Sequence[str], float], str]
    """The line of one sample; ``escaped``: its label values in the family's order, already
    passed through :func:`escape_label_value`."""


class RenderedFamily(Metric):
    """A metric family whose sample lines are already written (:class:`LineFormat`);
    ``parts`` are appended by the owner and joined when the exposition is written."""

    def __init__(self, name: str, documentation: str, typ: str,
                 labels: Sequence[str] = ()) -> None:
        if typ == "counter" and name.endswith("_total"):  # as CounterMetricFamily does
            name = name[:-len("_total")]
        super().__init__(name, documentation, typ)
        self._labelnames = tuple(labels)  # where prometheus_client's families keep them
        sample_name = f"{self.name}_total" if typ == "counter" else self.name
        self.format = LineFormat(sample_name, self._labelnames)
        self.parts: list[str] = []

    @property
    def label_names(self) -> tuple[str, ...]:
        return self._labelnames

    def body(self) -> str:
        """The sample lines of the family, in the order they were added."""
        return "".join(self.parts)

    @property
    def samples(self) -> list[Sample]:
        """The samples the lines hold, parsed back (slow: for filtering and tests)."""
        kind = "gauge" if self.type == "info" else self.type
        text = f"# TYPE {self.format.sample_name} {kind}\n{self.body()}"
        return [sample for family in text_string_to_metric_families(text)
                for sample in family.samples]

    @samples.setter
    def samples(self, value: list[Sample]) -> None:
        if value:  # Metric.__init__ sets [] only; the lines are the samples
            raise AttributeError("a RenderedFamily's samples are its lines")
