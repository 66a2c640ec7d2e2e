"""Run every benchmark and print its table: ``python -m benchmarks [--quick] [name ...]``.

Each module under ``benchmarks/`` exposes ``main(quick: bool) -> None``. Ratios against the
reference implementations are measured in the same run, so they mean something on a shared,
noisy machine where absolute times do not.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import platform
import sys

BENCHMARKS = ("auc", "confusion", "normalization", "throughput", "detection", "budget",
              "agent", "memory", "hostile", "replay", "checkpoint", "kills", "comparison",
              "score_drift", "state_topic", "handover", "join_memory", "estimate", "estimate_cost",
              "brokers", "first_contact", "delayed_demo", "fleet", "otlp", "consume", "saves",
              "publish")


def _machine() -> str:
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"which to run (default: all): {', '.join(BENCHMARKS)}")
    parser.add_argument("--quick", action="store_true", help="fewer repeats, smaller sizes")
    parser.add_argument("--broker", choices=("tansu", "apache", "both"),
                        help="the broker(s) of the benchmarks that run one (kills, handover: "
                        "both by default; fleet --kill: apache)")
    parser.add_argument("--scrape", action="store_true",
                        help="fleet: its scrape part")
    parser.add_argument("--kill", action="store_true",
                        help="fleet: its kill part (benchmarks/fleet_kill.py)")
    args = parser.parse_args(argv)
    unknown = set(args.names) - set(BENCHMARKS)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    print(f"# driftwatch benchmarks\n\nMachine: {_machine()}\n")
    for name in args.names or BENCHMARKS:
        print(f"## {name}\n")
        run = importlib.import_module(f"benchmarks.{name}").main
        if name == "fleet":
            parts = tuple(part for part in ("scrape", "kill") if getattr(args, part))
            run(quick=args.quick, parts=parts or ("scrape", "kill"),
                broker=args.broker or "apache")
        elif "broker" in inspect.signature(run).parameters:
            run(quick=args.quick, broker=args.broker or "both")
        else:
            run(quick=args.quick)
        print()
        sys.stdout.flush()


if __name__ == "__main__":
    main()
