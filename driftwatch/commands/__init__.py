"""The command line: ``driftwatch run | config | demo | simulate | replay | compare``.

The top of the package's layering: :mod:`driftwatch.commands.main` builds the parser from one
module per command (:mod:`~driftwatch.commands.replay`, :mod:`~driftwatch.commands.compare`,
:mod:`~driftwatch.commands.demo`), each of which parses its arguments, loads the settings
(:mod:`~driftwatch.commands.arguments`) and hands over to the library below: the agent,
:mod:`driftwatch.replay`, :mod:`driftwatch.compare`, :mod:`driftwatch.demo`. Nothing outside
this package imports it (a layering test in tests/test_imports.py checks it).
"""
