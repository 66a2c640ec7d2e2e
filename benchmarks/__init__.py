"""Seeded benchmarks, run by ``python -m benchmarks`` (see docs/benchmarks.md); outside the test
run."""

import os

ENVIRONMENT = dict(os.environ)
"""The environment as the benchmarks were started, before any import of driftwatch: the
command line sets ``OPENBLAS_NUM_THREADS`` for its own processes when the user has not
(``driftwatch.commands``), and a benchmark timing another version's command as a child
process must give it the user's environment, not today's choice."""
