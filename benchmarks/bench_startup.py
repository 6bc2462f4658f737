"""Start-up time of the command line, against ``python -c "import numpy"`` in the same run.

``persuasive --help`` and ``persuasive --version`` import typer and the command modules only;
the library (numpy, scipy, polars) is imported by a command when it runs. Prints the best wall
time of several runs of each (fresh interpreters) and the ratio to the numpy import (goal: at
most 2x). No asserts. Run: ``python benchmarks/bench_startup.py [--repeats N]``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time


def best(cmd: list[str], repeats: int) -> float:
    subprocess.run(cmd, check=True, capture_output=True)  # warm the file cache
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    exe = shutil.which("persuasive")
    cli = [exe] if exe else [sys.executable, "-m", "persuasive.cli"]
    base = best([sys.executable, "-c", "import numpy"], args.repeats)
    bare = best([sys.executable, "-c", "pass"], args.repeats)
    print(f"python -c 'pass'          : {bare * 1e3:7.1f} ms")
    print(f"python -c 'import numpy'  : {base * 1e3:7.1f} ms  (the baseline)")
    for extra in (["--version"], ["--help"], ["release", "table", "--help"]):
        t = best([*cli, *extra], args.repeats)
        label = "persuasive " + " ".join(extra)
        print(f"{label:<26}: {t * 1e3:7.1f} ms  ratio {t / base:4.2f}x (goal <= 2x)")


if __name__ == "__main__":
    main()
