"""``python -m driftwatch``: the command line of :mod:`driftwatch.commands.main`."""

from driftwatch.commands.main import main

if __name__ == "__main__":
    raise SystemExit(main())
