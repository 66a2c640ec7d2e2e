"""The command line: ``driftwatch run | config | demo | simulate | replay | compare``.

The top of the package's layering: :mod:`driftwatch.commands.main` builds the parser from one
module per command (:mod:`~driftwatch.commands.replay`, :mod:`~driftwatch.commands.compare`,
:mod:`~driftwatch.commands.demo`), each of which parses its arguments, loads the settings
(:mod:`~driftwatch.commands.arguments`) and hands over to the library below: the agent,
:mod:`driftwatch.replay`, :mod:`driftwatch.compare`, :mod:`driftwatch.demo`. Nothing outside
this package imports it (a layering test in tests/test_imports.py checks it).
"""

import os

# One BLAS thread in the command line's processes, unless the user chose otherwise. Their only
# matrix work is a 65 × 65 solve per CUSUM threshold (driftwatch.core.sequential); OpenBLAS's
# thread pool, started when numpy is imported, cost a third of a short replay's CPU time
# (110 of 430 ms, benchmarks/replay.py) and does nothing for matrices this small. Set here,
# before anything imports numpy, and only for the commands: a library must not change its
# host process's threading.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

