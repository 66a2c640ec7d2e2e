"""``python -m driftwatch``: the command line of :mod:`driftwatch.cli`."""

from driftwatch.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
