"""Records into events: :mod:`~driftwatch.decoding.decoder` (the rules, every rejection
reason), :mod:`~driftwatch.decoding.fast_decoder` (its fast path for plainly valid records)
and :mod:`~driftwatch.decoding.joinable` (records into the join's predictions and labels).
Pure of I/O: the agent, replay and compare all decode through it.
"""
