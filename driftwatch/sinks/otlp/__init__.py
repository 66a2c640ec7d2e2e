"""OpenTelemetry metrics over OTLP/HTTP: :mod:`~driftwatch.sinks.otlp.translate` turns the
Prometheus collectors' families into OTLP metrics (same names, labels as attributes),
:mod:`~driftwatch.sinks.otlp.sink` exports them on an interval. Needs the ``otlp`` extra
(``pip install 'driftwatch-agent[otlp]'``); nothing imports this package unless
``exporters.otlp.enabled`` is set."""
