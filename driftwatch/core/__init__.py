"""The pure core: windows, measures, normalization and detectors.

Nothing under this package imports Kafka, Prometheus, pydantic or reads the clock; time arrives
with the events. ``tests/core/test_purity.py`` keeps it that way.

**Validation happens once, at the boundary.** An event's label, score, prediction and time are
checked where they enter: by :class:`~driftwatch.core.events.Event`'s constructor (an
embedder's ``Monitor.update(Event(...))``, and ``ModelMonitor.update`` of
:mod:`driftwatch.api`, which builds one), or by the decoder for records, which checks a
record's values and builds its event with :func:`~driftwatch.core.events.valid_event`. Behind
the boundary nothing checks them again: the monitor feeds the window's
:meth:`~driftwatch.core.window.PrequentialWindow.update_valid` and the detectors'
:meth:`~driftwatch.core.detectors.base.Detector.update_valid`, whose inputs are valid by
construction (the monitor's configuration refuses a bounded detector on a measure that can
leave its bounds). The building blocks' own public ``update`` methods check their arguments,
for whoever uses them directly; a bad value anywhere public gets a clear error naming it and
changes nothing (``Monitor.update`` of anything but an Event: ``TypeError``).
"""
