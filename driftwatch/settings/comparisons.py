"""``comparisons``: champion/challenger comparisons over the same events."""

from __future__ import annotations

from pydantic import Field

from driftwatch.settings.common import FieldName, Name, _Section
from driftwatch.settings.monitoring import Threshold, WindowSize


class ComparisonSettings(_Section):
    """One champion/challenger comparison over the same events (Bifet et al. 2015, §4).

    The records of ``model`` carry the champion's score in the events' score field (they
    feed the model's monitor as usual) and the challenger's in ``challenger_score_field``;
    both go to one paired window of the last ``window_size`` events. Exported as
    ``driftwatch_comparison_*`` metrics (AUC difference, DeLong, McNemar, sign and Wilcoxon
    tests, κ).
    """

    name: Name = Field(description="The comparison's id: the comparison label of its metrics.")
    model: Name = Field(
        description="The champion's model id: its records carry the challenger's score too."
    )
    challenger_score_field: FieldName = Field(
        description="The record field holding the challenger's score (same rules as the score)."
    )
    challenger_prediction_field: FieldName | None = Field(
        default=None,
        description=(
            "The record field holding the challenger's crisp prediction; absent or null: "
            "derived from its score and challenger_threshold."
        ),
    )
    challenger_threshold: Threshold | None = Field(
        default=None,
        description="The challenger's decision threshold; null: the model's threshold.",
    )
    window_size: WindowSize | None = Field(
        default=None,
        description="Events in the paired window of both models; null: the model's window_size.",
    )
    block_size: WindowSize | None = Field(
        default=None,
        description=(
            "Events per block of the sign and Wilcoxon tests over recent blocks; null: the "
            "window size."
        ),
    )
    blocks: int = Field(
        default=10,
        ge=1,
        le=1000,
        description=(
            "Recent complete blocks the sign and Wilcoxon tests use. Wilcoxon needs 6 or more "
            "for p < 0.05 to be possible at all."
        ),
    )
