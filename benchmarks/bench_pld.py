"""Tight composition: persuasive.pld vs dp_accounting's PLD, same grid, one run.

For Laplace and Gaussian noise (scale sqrt(k), sensitivity 1) composed k = 10, 100, 1000
times on the grid 1e-4 (dp_accounting's default), time

* ours: loss pmf + FFT composition + hockey-stick delta on a 50-point epsilon grid;
* dp_accounting: ``from_*_mechanism`` + ``self_compose`` + ``get_delta_for_epsilon``,

and print the largest |difference| in hockey-stick delta over the grid, each side's error
against the exact Gaussian value, and the width of our certified bracket (our error bound).
Run from the repository root: ``python benchmarks/bench_pld.py``.
"""

from __future__ import annotations

import logging
import time

import numpy as np
from dp_accounting.pld import privacy_loss_distribution as dpl
from scipy import stats

import persuasive as pp
from persuasive import pld

STEP = 1e-4
EPS = np.linspace(0.0, 4.0, 50)


def _ours(kind: str, scale: float, k: int) -> tuple[float, np.ndarray, np.ndarray]:
    m = pp.LaplaceMechanism(scale) if kind == "laplace" else pp.GaussianMechanism(scale)
    t0 = time.perf_counter()
    c = pld.compose([(m, k)], step=STEP)
    hs = c.hockey_stick(EPS)
    el = time.perf_counter() - t0
    p = c.pmfs[(0, 1)]
    low = np.clip(p.hockey_stick(EPS + p.rounds * p.step) - p.truncated, 0, None)
    return el, hs, low


def _theirs(kind: str, scale: float, k: int) -> tuple[float, np.ndarray]:
    make = dpl.from_laplace_mechanism if kind == "laplace" else dpl.from_gaussian_mechanism
    t0 = time.perf_counter()
    c = make(scale, value_discretization_interval=STEP).self_compose(k)
    d = np.asarray(c.get_delta_for_epsilon(EPS))
    return time.perf_counter() - t0, d


def _exact_gaussian(scale: float, k: int) -> np.ndarray:
    mu = np.sqrt(k) / scale
    return stats.norm.cdf(-EPS / mu + mu / 2) - np.exp(EPS) * stats.norm.cdf(-EPS / mu - mu / 2)


def main() -> None:
    logging.getLogger().setLevel(logging.ERROR)
    pld.compose([(pp.LaplaceMechanism(1.0), 2)])  # warm-up (imports, FFT plans)
    print(f"grid {STEP:g}, epsilon grid 0..4 (50 points), noise scale sqrt(k)")
    print(
        f"{'mechanism':9} {'k':>5} {'ours s':>8} {'dp_acc s':>9} {'speed-up':>8} "
        f"{'max|ours-dp|':>12} {'our bracket':>11} {'ours err':>9} {'dp err':>9}"
    )
    for kind in ("laplace", "gaussian"):
        for k in (10, 100, 1000):
            scale = float(np.sqrt(k))
            t_ours, ours, low = _ours(kind, scale, k)
            t_dp, dp = _theirs(kind, scale, k)
            if kind == "gaussian":
                ex = _exact_gaussian(scale, k)
                e_ours, e_dp = np.max(np.abs(ours - ex)), np.max(np.abs(dp - ex))
                errs = f"{e_ours:9.2e} {e_dp:9.2e}"
            else:
                errs = f"{'-':>9} {'-':>9}"
            print(
                f"{kind:9} {k:5d} {t_ours:8.3f} {t_dp:9.3f} {t_dp / t_ours:7.1f}x "
                f"{np.max(np.abs(ours - dp)):12.2e} {np.max(ours - low):11.2e} {errs}"
            )


if __name__ == "__main__":
    main()
