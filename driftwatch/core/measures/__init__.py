"""Measures over a window's events: the registry, the exact AUC pair count, the crisp measures.

:mod:`~driftwatch.core.measures.registry` holds one object per measure (formula, direction,
range, normalization, NaN rule, description) that every consumer reads;
:mod:`~driftwatch.core.measures.auc` keeps the Mann–Whitney pair count behind AUC in
O(log d) per event (Brzezinski & Stefanowski 2017, Algorithm 1, without its O(d) walk);
:mod:`~driftwatch.core.measures.crisp` computes the confusion-matrix measures (Bifet et al. 2015,
§5; Brzezinski et al. 2019, Table I); :mod:`~driftwatch.core.measures.estimates` holds the closed
forms class-ratio normalization starts its grid search from (Brzezinski et al. 2019, eq. 10).
"""
