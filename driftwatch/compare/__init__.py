"""``driftwatch compare``: champion against challenger on recorded events.

Records are decoded by the agent's decoder (:func:`driftwatch.decoding.decoder.decode`) from the
replay's sources (:mod:`driftwatch.replay.sources`), paired (:mod:`.pairing`: two scores in
one record, or two models' records joined by an event id), fed to a
:class:`~driftwatch.core.comparison.window.PairedWindow` and, for the whole run, to the tests
of :mod:`driftwatch.core.comparison` (:mod:`.run`). :mod:`.report` writes the summary a user
pastes in a review, :mod:`.plot` the figure; the command line is :mod:`driftwatch.commands.compare`.
"""
