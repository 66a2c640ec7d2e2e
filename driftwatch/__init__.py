"""driftwatch: watch a deployed binary classifier for drift.

The pure measurement core lives in :mod:`driftwatch.core`; everything that touches the outside
world (Kafka, Prometheus, files) stays outside it.
"""

__version__ = "0.1.0"
