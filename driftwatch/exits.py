"""Exit statuses of the ``driftwatch`` commands, each defined once.

Every command returns one of these from its handler (:func:`driftwatch.commands.main.main`
passes it to the shell); what each status means for each command is in the command's help and
module docstring.
"""

from __future__ import annotations

EXIT_OK = 0
"""The command did its work (for ``replay``, whatever it found)."""

EXIT_FAILED = 1
"""Something failed while running: a port in use, the broker or the agent died, events
that could not be delivered. One line on stderr says what."""

EXIT_NO_EVENTS = 1
"""``replay``: nothing became an event: the input held no record at all, or records of which
none became an event (all rejected, or other models'): a backtest of nothing must not pass.
The status of a failure, under the name that says which."""

EXIT_NO_FIGURE = 1
"""``replay --plot``: events were replayed but no model has a sample to draw (each model's
first comes once its window is full): no figure is written, and a CI job that expects one
fails here rather than on a missing file. The status of a failure, under the name that says
which."""

EXIT_NEVER_READY = 1
"""``run``: stopped before it was ever ready, while something named in the last line kept it
so (no broker of ``kafka.bootstrap_servers`` answered, a topic of ``kafka.topics`` did not
exist): nothing was consumed, saved or committed, so nothing is lost. The status of a
failure, under the name that says which."""

EXIT_INVALID = 2
"""Invalid settings or input, or a missing optional extra: the status argparse uses for a
wrong command line, so that everything the user must fix before a retry exits alike. For
``run`` also settings the brokers refuse: an untrusted certificate, TLS on one side only, a
SASL mechanism or credentials refused, a missing ACL (the line names the setting or ACL)."""

EXIT_CHECKPOINT = 3
"""``run``: the checkpoint cannot be restored (corrupt, or from an incompatible version)."""

EXIT_SAVE_FAILED = 4
"""``run``: the checkpoint could not be saved on the way out, so no offset was committed."""

EXIT_INTERRUPTED = 130
"""128 + SIGINT, the shell's status for a process ended by Ctrl+C: a second Ctrl+C (``run``,
``demo``, ``simulate``) or an interrupted ``replay``."""
