"""Measures over a window's events: the exact AUC pair count and the crisp confusion measures.

:mod:`~driftwatch.core.measures.auc` keeps the Mann–Whitney pair count behind AUC in
O(log d) per event (paper 000, Algorithm 1, without its O(d) walk);
:mod:`~driftwatch.core.measures.crisp` computes the confusion-matrix measures (paper 002, §5;
paper 003, Table I).
"""
