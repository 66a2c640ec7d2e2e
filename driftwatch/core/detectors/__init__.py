"""Drift detectors: a stream of floats in, stable / warning / drift out.

Built in: :class:`PageHinkley` (``"page_hinkley"``), :class:`ADWIN` (``"adwin"``),
:class:`DDM` (``"ddm"``) and :class:`Cusum` (``"cusum"``, for standardized inputs).
Third-party detectors plug in through the ``driftwatch.detectors`` entry-point group;
:mod:`driftwatch.core.detectors.registry` finds them by name. The shared contract (input
checking, one-step drift signal, reset, checkpointing) is
:class:`~driftwatch.core.detectors.base.Detector`.
"""

from driftwatch.core.detectors.adwin import ADWIN
from driftwatch.core.detectors.base import Detector, DetectorState, Direction
from driftwatch.core.detectors.cusum import Cusum
from driftwatch.core.detectors.ddm import DDM
from driftwatch.core.detectors.page_hinkley import PageHinkley

__all__ = ["ADWIN", "DDM", "Cusum", "Detector", "DetectorState", "Direction", "PageHinkley"]
