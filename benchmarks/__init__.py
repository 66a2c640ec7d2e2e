"""Seeded benchmarks, run by ``python -m benchmarks`` (see README); outside the test run."""
