"""Keeping the cyclic garbage collector's full passes short at thousands of models.

CPython's collector scans, at each full (generation 2) pass, every container object that
survived its younger passes: at thousands of monitors of d = 1 000 that is millions of
objects, and a pass took 0.3–0.6 s with 5 000 models on this project's 2-core machine
(the fleet benchmark's last loop pauses over 0.5 s). Those objects are long-lived by
design (a monitor lives as long as its model) and hold no reference cycles (a monitor's
whole life, updates, snapshots, export and restore, creates no cyclic garbage: tested), so
scanning them finds nothing. :func:`settle` moves every object alive into the permanent
generation (``gc.freeze``), which full passes skip, after a young pass has collected the
cyclic garbage of the moment; objects dropped later are still freed by their reference
counts. The loop settles the heap after each publish round and each restore slice, so a
full pass only scans what was created since.

What it costs: a reference cycle that is alive when frozen and dies later is not
collected while the agent runs. The agent's own objects make none; kafka-python's
connections and futures may, once per reconnect or rebalance, a few kilobytes. When the
agent stops, :func:`release` unfreezes everything, so a process that goes on (the Python
API, a tool or a test that builds several agents) can collect the agent it dropped: the
agent holds reference cycles (its handover and its loop refer to each other), which frozen
would have stayed for the life of the process, monitors and all. Being cycles, they go at
the collector's next full pass, which CPython runs rarely; a process that builds agents one
after another and wants the memory back at once calls ``gc.collect()`` after dropping one
(three restores of 10 000 models in one process took 7.0, 12.6 and 13.0 s, and 6.8, 6.8
and 6.9 s with a collection after each). The permanent generation is the process's, not the
agent's: what else was frozen (a pre-fork server's ``gc.freeze``) is unfrozen too.
"""

from __future__ import annotations

import gc

__all__ = ["release", "settle"]


def settle() -> None:
    """Collect the young generations' cyclic garbage, then freeze every object alive
    (O(young objects); the freeze itself is a list splice)."""
    gc.collect(1)
    gc.freeze()


def release() -> None:
    """Unfreeze everything (the agent stopped): its objects are collected again once
    unreachable, cycles included."""
    gc.unfreeze()
