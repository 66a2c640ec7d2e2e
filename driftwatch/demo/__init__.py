"""The demo's tooling: what ``driftwatch demo`` and ``driftwatch simulate`` run on.

:mod:`~driftwatch.demo.run` (the demo: embedded broker, agent and simulated model, watched
live), :mod:`~driftwatch.demo.delayed` (its ``--delayed-labels`` story: predictions now,
labels later), :mod:`~driftwatch.demo.display` (what it prints), :mod:`~driftwatch.demo.broker`
(the embedded Tansu broker, from an optional extra) and :mod:`~driftwatch.demo.feed`
(simulated models producing to Kafka). Not part of the agent's runtime: only the commands
import this package.
"""
