"""Replay: the agent's monitors over recorded events, for backtesting settings.

``driftwatch replay FILE`` reads recorded events (JSON Lines or CSV files, or a range of a
Kafka topic), decodes them exactly as the agent decodes Kafka records, runs them through
per-model monitors built from the same settings, and reports the alarms and final measures,
optionally with a figure in the style of Brzezinski & Stefanowski's (2017) Fig. 4/8.

Modules: :mod:`~driftwatch.replay.sources` (reading records), :mod:`~driftwatch.replay.run`
(records → monitors → alarms, with the decoder's fast path for plainly valid records,
:mod:`driftwatch.decoding.fast_decoder`), :mod:`~driftwatch.replay.parallel` (a file of several
models in several processes), :mod:`~driftwatch.replay.series` (measures at every sample,
for the figure), :mod:`~driftwatch.replay.report` (table and JSON),
:mod:`~driftwatch.replay.plot` (the figure) and :mod:`~driftwatch.replay.progress` (the bar).
The command line is :mod:`driftwatch.commands.replay`, which imports these when the command
runs.
"""
