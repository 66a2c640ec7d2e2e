"""Champion and challenger: two models compared on the same labelled events.

Each statistic answers one form of the question "is the challenger better, and is the
difference real?", one test per module, and each result says which direction it measured:
**differences are challenger − champion**, so a positive value means the challenger did better.

- :mod:`~driftwatch.core.comparison.delong`: the difference of the two AUCs and DeLong's
  paired test (DeLong, DeLong & Clarke-Pearson 1988).
- :mod:`~driftwatch.core.comparison.mcnemar`: McNemar's test on the crisp predictions, κ of
  the challenger relative to the champion and Cohen's κ of agreement (Bifet et al. 2015, §4 and §5).
- :mod:`~driftwatch.core.comparison.sign_test` and :mod:`~driftwatch.core.comparison.wilcoxon`:
  the tests Bifet et al. 2015 (§4) recommends, over per-block (or per-fold) values of a measure.
- :mod:`~driftwatch.core.comparison.resampling`: the bootstrap confidence interval of the AUC
  difference and the k-fold AUCs of Bifet et al.'s (2015) validation schemes (§3).

:mod:`~driftwatch.core.comparison.inputs` checks their inputs (``ValueError`` naming the
argument), :mod:`~driftwatch.core.comparison.distributions` holds the tail probabilities they
need (standard library only), and :mod:`~driftwatch.core.comparison.window` the paired
prequential window that keeps both models' measures over the same last d events.

Bifet et al. 2015 (§4.1, Tables 2–3) shows why McNemar's test misleads on streams: its unit is the
event, so with enough events it calls two practically equal models (two seeds of one learner)
different, in 42–80 % of the paper's runs. DeLong's test has the same unit. The block tests
count blocks instead, and their smallest p-value is set by the number of blocks; they grow
more sensitive with the stream too, only more slowly (``benchmarks/comparison.py``), so a
verdict should also ask whether the difference is large enough to matter.
"""

from driftwatch.core.comparison.delong import DeLongResult, delong
from driftwatch.core.comparison.mcnemar import (
    CrispComparison,
    McNemarResult,
    crisp_comparison,
    mcnemar,
    mcnemar_from_counts,
)
from driftwatch.core.comparison.resampling import (
    BootstrapResult,
    FoldAUCs,
    bootstrap_auc_difference,
    fold_aucs,
)
from driftwatch.core.comparison.sign_test import SignTestResult, sign_test
from driftwatch.core.comparison.wilcoxon import WilcoxonResult, wilcoxon_signed_rank

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
