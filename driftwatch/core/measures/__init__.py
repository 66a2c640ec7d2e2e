"""Measures over a window's events: the registry, the exact AUC pair count, the crisp measures.

:mod:`~driftwatch.core.measures.registry` holds one object per measure (formula, direction,
range, normalization, NaN rule, description) that every consumer reads;
:mod:`~driftwatch.core.measures.auc` keeps the Mann–Whitney pair count behind AUC in
O(log d) per event (paper 000, Algorithm 1, without its O(d) walk);
:mod:`~driftwatch.core.measures.crisp` computes the confusion-matrix measures (paper 002, §5;
paper 003, Table I); :mod:`~driftwatch.core.measures.estimates` holds the closed forms class-ratio
normalization starts its grid search from (paper 003, eq. 10).
"""
