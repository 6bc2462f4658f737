"""Tight composition: persuasive.pld vs dp_accounting's PLD, same grid, one run.

For Laplace and Gaussian noise (scale sqrt(k), sensitivity 1) composed k = 10, 100, 1000
times on the grid 1e-4 (dp_accounting's default), time

* ours: connect-the-dots loss pmf (``pld.dots_compose``, the hockey-stick path; Doroshenko et
  al. 2022, as dp_accounting) + FFT composition + hockey-stick delta on a 50-point epsilon grid;
* ours, pessimistic: the rounded-up pmf the PDP-tail certificates use (``pld.compose``);
* dp_accounting: ``from_*_mechanism`` + ``self_compose`` + ``get_delta_for_epsilon``,

and print the largest |difference| in hockey-stick delta over the grid and each side's error
against the exact Gaussian value (Laplace has no closed form: its reference is the dots value at
grid Delta/10, itself an upper bound, so the printed 'error' there is an estimate).
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


def _mech(kind: str, scale: float) -> pp.Mechanism:
    return pp.LaplaceMechanism(scale) if kind == "laplace" else pp.GaussianMechanism(scale)


def _ours(kind: str, scale: float, k: int, step: float = STEP) -> tuple[float, np.ndarray]:
    t0 = time.perf_counter()
    hs = pld.dots_compose([(_mech(kind, scale), k)], step=step).hockey_stick(EPS)
    return time.perf_counter() - t0, hs


def _pessimistic(kind: str, scale: float, k: int) -> tuple[float, np.ndarray]:
    t0 = time.perf_counter()
    hs = pld.compose([(_mech(kind, scale), k)], step=STEP).hockey_stick(EPS)
    return time.perf_counter() - t0, hs


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
    pld.dots_compose([(pp.LaplaceMechanism(1.0), 2)])  # warm-up (imports, FFT plans)
    pld.compose([(pp.LaplaceMechanism(1.0), 2)])
    print(f"grid {STEP:g}, epsilon grid 0..4 (50 points), noise scale sqrt(k)")
    print(
        f"{'mechanism':9} {'k':>5} {'ours s':>7} {'dp_acc s':>8} {'speed-up':>8} "
        f"{'max|ours-dp|':>12} {'ours err':>9} {'dp err':>9} {'ref':>5} "
        f"{'pess s':>7} {'pess err':>9}"
    )
    for kind in ("laplace", "gaussian"):
        for k in (10, 100, 1000):
            scale = float(np.sqrt(k))
            t_ours, ours = _ours(kind, scale, k)
            t_dp, dp = _theirs(kind, scale, k)
            t_pess, pess = _pessimistic(kind, scale, k)
            if kind == "gaussian":
                ex, ref = _exact_gaussian(scale, k), "exact"
            else:
                ex, ref = _ours(kind, scale, k, STEP / 10)[1], "D/10"
            e_ours, e_dp, e_pess = (np.max(np.abs(x - ex)) for x in (ours, dp, pess))
            print(
                f"{kind:9} {k:5d} {t_ours:7.3f} {t_dp:8.3f} {t_dp / t_ours:7.1f}x "
                f"{np.max(np.abs(ours - dp)):12.2e} {e_ours:9.2e} {e_dp:9.2e} {ref:>5} "
                f"{t_pess:7.3f} {e_pess:9.2e}"
            )


if __name__ == "__main__":
    main()
