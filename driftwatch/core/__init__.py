"""The pure core: windows, measures, normalization and detectors.

Nothing under this package imports Kafka, Prometheus, pydantic or reads the clock; time arrives
with the events. ``tests/core/test_purity.py`` keeps it that way.
"""
