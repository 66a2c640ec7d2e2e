"""NannyML's CBPE on data written by ``benchmarks/estimate.py``, run in NannyML's own venv.

NannyML pins its own pandas, scikit-learn and numpy, so it is installed apart from
driftwatch's environment (``benchmarks/.venv-nannyml``, git-ignored; see
``benchmarks/estimate.py``) and this script runs under that venv's Python:

    python nannyml_cbpe.py DATA.npz  →  JSON on stdout

DATA.npz holds the reference (``ref_score``, ``ref_label``, ``ref_pred``), the analysis
predictions (``score``, ``pred``, and ``label`` for the realized values NannyML also
reports) and ``chunk_size``. The JSON holds NannyML's estimated ROC AUC, recall and
specificity per chunk and the process CPU seconds of its fit, of its estimate, and of one
estimate of a single chunk (the best of five).
"""

from __future__ import annotations

import json
import sys
import time
import warnings

import nannyml
import numpy as np
import pandas as pd


def main(path: str) -> None:
    warnings.simplefilter("ignore")  # "too few chunks" for the one-chunk timing
    data = np.load(path)

    def frame(prefix: str) -> pd.DataFrame:
        return pd.DataFrame({"y_pred_proba": data[f"{prefix}score"],
                             "y_pred": data[f"{prefix}pred"],
                             "y_true": data[f"{prefix}label"]})

    reference, analysis = frame("ref_"), frame("")
    estimator = nannyml.CBPE(
        y_pred_proba="y_pred_proba", y_pred="y_pred", y_true="y_true",
        metrics=["roc_auc", "recall", "specificity"], chunk_size=int(data["chunk_size"]),
        problem_type="classification_binary")
    start = time.process_time()
    estimator.fit(reference)
    fitted = time.process_time()
    results = estimator.estimate(analysis.drop(columns=["y_true"]))
    done = time.process_time()
    table = results.filter(period="analysis").to_df()
    # One estimate of one window: what a sliding estimate would cost per event.
    one_chunk = analysis.drop(columns=["y_true"]).iloc[:int(data["chunk_size"])]
    single = []
    for _ in range(5):
        begin = time.process_time()
        estimator.estimate(one_chunk)
        single.append(time.process_time() - begin)
    out = {
        "version": nannyml.__version__,
        "fit_s": fitted - start,
        "estimate_s": done - fitted,
        "single_chunk_s": min(single),
        "needs_calibration": bool(getattr(estimator, "needs_calibration", True)),
    }
    for metric in ("roc_auc", "recall", "specificity"):
        out[metric] = table[(metric, "value")].astype(float).tolist()
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
