"""Timing of linear releases and of the linear analysis (issues 4 and 14), in ONE run.

Printed, each next to references measured in the same run:

* dense n = 5,000: ``analyse`` + ``kappa`` against one numpy product Σ (n x n) @ Aᵀ (n x k);
* n = 10^6 records, 11 group means (overall + 10 groups) and 4 overlapping subset sums:
  the exact release (``release_linear``), the calibrated-noise release (``target_kappa=2``;
  reachable with ``max_stat_sd=1, delta=0.5``, and the default class, where 2 is unreachable
  and the release refuses after the whole scan), and the structured analysis
  (``analyse`` + ``kappa`` under a block-equicorrelated ``StructuredCovariance``), each as a
  ratio to (a) one polars group-by (select) of the same statistics and (b) one ``A @ U``
  product, A the dense k x n matrix the code builds and U an n x k matrix;
* the command line end to end on the same 10^6 rows written as CSV (``persuasive release
  linear ... --stats FILE`` with its final verify, then ``persuasive verify --published``),
  each in a fresh process: wall time (imports included), peak resident memory and the
  certificate's size, against the same two references.

Run: ``python benchmarks/bench_linear.py`` (``--quick`` skips the refused calibration).
Timings only; nothing is asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from persuasive.errors import ValidationError
from persuasive.linear import StructuredCovariance, analyse
from persuasive.release.linear import release_linear
from persuasive.release.statistics import statistics_matrix


def best_of(fn: Callable[[], Any], repeat: int = 3) -> float:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def dense_part(rng: np.random.Generator) -> None:
    n, k = 5_000, 20
    low = rng.standard_normal((n, 50))
    cov = low @ low.T / 50 + np.eye(n)
    a = rng.standard_normal((k, n)) / n
    mu = np.zeros(n)
    ref = best_of(lambda: cov @ a.T)
    run = best_of(lambda: analyse(mu, cov, a, 0.01).kappa(1.0, 0.05))
    run0 = best_of(lambda: analyse(mu, cov, a).kappa(1.0))
    print(
        f"dense n={n} k={k}: analyse+kappa noisy {run:.3f}s, exact {run0:.3f}s; "
        f"numpy Sigma@A.T {ref:.3f}s (ratio {run / ref:.1f})"
    )


def line(what: str, secs: float, ref_gb: float, ref_au: float) -> None:
    print(
        f"  {what:44s} {secs:9.4f} s   x{secs / ref_gb:9.1f} group-by   x{secs / ref_au:7.1f} A@U"
    )


def refused(fn: Callable[[], Any]) -> None:
    try:
        fn()
    except ValidationError:
        return
    raise AssertionError("expected the release to refuse")


#: Runs a command in a child and prints its wall time, peak RSS (kB) and exit status.
TIMED = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
    "r.returncode)"
)
CLI = "import sys; from persuasive.cli import app; sys.argv[0] = 'persuasive'; app()"


def timed_cli(*args: str) -> tuple[float, float]:
    """Wall seconds and peak MB of ``persuasive ARGS`` in a fresh process (exit 0 required)."""
    out = subprocess.run(
        [sys.executable, "-c", TIMED, sys.executable, "-c", CLI, *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if out[2] != "0":
        raise AssertionError(f"persuasive {' '.join(args)} exited {out[2]}")
    return float(out[0]), float(out[1]) / 1024


def cli_part(df: pl.DataFrame, means: list[Any], ref_gb: float, ref_au: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        df.write_csv(root / "data.csv")
        toml = "".join(
            f'[[statistics]]\nname = "{n}"\nkind = "{k}"\nwhere = "{w}"\n' for n, k, w in means
        )
        (root / "stats.toml").write_text(toml, encoding="utf-8")
        for run in (1, 2):
            out = root / f"out{run}"
            secs, mb = timed_cli(
                "release", "linear", str(root / "data.csv"), "--out", str(out), "--value", "y",
                "--r1", "1", "--r2", "4", "--stats", str(root / "stats.toml"), "-q",
            )  # fmt: skip
            line(f"CLI release + verify, run {run} (peak {mb:,.0f} MB)", secs, ref_gb, ref_au)
        secs, mb = timed_cli("verify", str(out / "certificate.json"), "--published", str(out))
        line(f"CLI verify --published (peak {mb:,.0f} MB)", secs, ref_gb, ref_au)
        size = (out / "certificate.json").stat().st_size
        same = (root / "out1" / "certificate.json").read_bytes() == (
            out / "certificate.json"
        ).read_bytes()
        doc = json.loads((out / "certificate.json").read_text(encoding="utf-8"))
        print(
            f"  certificate.json {size / 1e3:,.0f} kB, the same bytes in both runs: {same}, "
            f"kappa {doc['guarantee']['kappa']}"
        )


def main() -> None:
    quick = "--quick" in sys.argv
    rng = np.random.default_rng(0)
    dense_part(rng)

    n, groups = 1_000_000, 10
    g = rng.integers(0, groups, n)
    df = pl.DataFrame({"y": rng.normal(10.0, 2.0, n), "g": g})
    means = [("all", "mean", "true")] + [(f"g{j}", "mean", f"g = {j}") for j in range(groups)]
    sums = [
        ("not17", "sum", "row_id != 17"),
        ("low", "sum", "g < 5"),
        ("mid", "sum", "g >= 3 AND g < 8"),
        ("even", "sum", "g IN (0, 2, 4, 6, 8)"),
    ]
    indexed = df.with_row_index("row_id")
    mu = np.zeros(n)

    def groupby_means() -> Any:
        return df.group_by("g").agg(pl.col("y").mean()), df.select(pl.col("y").mean())

    def select_sums() -> Any:
        return indexed.select(
            [pl.col("y").filter(pl.sql_expr(w)).sum().alias(s) for s, _, w in sums]
        )

    for label, stats, ref_fn in (
        ("11 group means", means, groupby_means),
        ("4 overlapping subset sums", sums, select_sums),
    ):
        _, a = statistics_matrix(df, stats, value="y")
        k = a.shape[0]
        u = rng.standard_normal((n, k))
        ref_gb = best_of(ref_fn, 5)
        ref_au = best_of(lambda a=a, u=u: a @ u, 5)
        print(
            f"n={n:,}, {label} (k={k}): polars group-by/select {ref_gb * 1e3:.2f} ms, "
            f"A@U ({k}x{n} @ {n}x{k}) {ref_au * 1e3:.2f} ms"
        )

        def exact(stats: Any = stats) -> Any:
            return release_linear(df, value="y", statistics=stats, r1=1, r2=4)

        line("exact release", best_of(exact, 2), ref_gb, ref_au)
        if stats is means:

            def calibrated() -> Any:
                rel = release_linear(
                    df, value="y", statistics=means, r1=1, r2=4, target_kappa=2,
                    max_stat_sd=1.0, delta=0.5,
                )  # fmt: skip
                assert rel.noise_sd is not None and rel.holds
                return rel

            line(
                "calibrated noise (V=1, delta=0.5)",
                best_of(calibrated, 1),
                ref_gb,
                ref_au,
            )
            if not quick:
                line(
                    "calibrated, default class (refused)",
                    best_of(
                        lambda: refused(
                            lambda: release_linear(
                                df, value="y", statistics=means, r1=1, r2=4, target_kappa=2
                            )
                        ),
                        1,
                    ),
                    ref_gb,
                    ref_au,
                )
            s = StructuredCovariance.block_equicorrelated(g, rng.uniform(0.5, 2.0, n), 0.3)
            line(
                "structured analysis, noisy (p=10)",
                best_of(lambda a=a, s=s: analyse(mu, s, a, 1e-4).kappa(1.0, 0.05), 2),
                ref_gb,
                ref_au,
            )
            line(
                "structured analysis, exact (p=10)",
                best_of(lambda a=a, s=s: analyse(mu, s, a).kappa(1.0), 2),
                ref_gb,
                ref_au,
            )
            cli_part(df, means, ref_gb, ref_au)


if __name__ == "__main__":
    main()
