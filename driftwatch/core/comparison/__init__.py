"""Champion and challenger: two models compared on the same labelled events.

:mod:`~driftwatch.core.comparison.statistics` holds the tests (DeLong, McNemar, κ, sign,
Wilcoxon, bootstrap), :mod:`~driftwatch.core.comparison.distributions` the tail probabilities
they need (standard library only), and :mod:`~driftwatch.core.comparison.window` the paired
prequential window that keeps both models' measures over the same last d events.
"""

from driftwatch.core.comparison.statistics import (
    BootstrapResult,
    CrispComparison,
    DeLongResult,
    FoldAUCs,
    McNemarResult,
    SignTestResult,
    WilcoxonResult,
    bootstrap_auc_difference,
    crisp_comparison,
    delong,
    fold_aucs,
    mcnemar,
    mcnemar_from_counts,
    sign_test,
    wilcoxon_signed_rank,
)

__all__ = [
    "BootstrapResult",
    "CrispComparison",
    "DeLongResult",
    "FoldAUCs",
    "McNemarResult",
    "SignTestResult",
    "WilcoxonResult",
    "bootstrap_auc_difference",
    "crisp_comparison",
    "delong",
    "fold_aucs",
    "mcnemar",
    "mcnemar_from_counts",
    "sign_test",
    "wilcoxon_signed_rank",
]
