r"""Who a set of linear statistics exposes, and the combination that does it.

Individual :math:`i` is *exposed* by :math:`T = A x` when some combination of the statistics
equals that person's value, :math:`A^\top c = e_i` (a differencing attack: the mean of n and of
the n − 1 others). Exposure does not depend on the Receiver's prior as long as its covariance is
positive definite, so an independent unit-variance prior finds exactly the exposed individuals
(``docs/linear.md``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["COMBINATION_RTOL", "LinearExposure", "combination_of", "exposures"]

#: Coefficients of a revealing combination below this (relative to the largest) are not shown.
COMBINATION_RTOL = 1e-9


class LinearExposure(NamedTuple):
    """An exposed individual: ``row_id`` and the combination {statistic name: c_j} with
    :math:`\\sum_j c_j T_j = x_{row\\_id}`."""

    row_id: int
    combination: dict[str, float]

    def describe(self) -> str:
        """``row 17 = 6366·overall − 6365·all_but_17`` (coefficients to 6 significant digits)."""
        terms = []
        for name, c in self.combination.items():
            sign = "−" if c < 0 else "+"
            mag = "" if math.isclose(abs(c), 1.0) else f"{abs(c):.6g}·"
            terms.append(f"{sign} {mag}{name}")
        text = " ".join(terms).removeprefix("+ ").replace("− ", "−", 1 if terms[0][0] == "−" else 0)
        return f"row {self.row_id} = {text}"


def combination_of(coefficients: ArrayLike, names: Sequence[str]) -> dict[str, float]:
    """The non-negligible coefficients of a combination, by statistic name."""
    c = np.asarray(coefficients, dtype=float)
    top = float(np.max(np.abs(c))) if c.size else 0.0
    return {n: float(x) for n, x in zip(names, c, strict=True) if abs(x) > COMBINATION_RTOL * top}


def _sparsest(a: NDArray[np.float64], i: int, fallback: NDArray[np.float64]) -> NDArray[np.float64]:
    """A combination c with Aᵀc = e_i using as few statistics as possible (up to 3, k ≤ 40),
    else ``fallback`` (the minimum-norm one): the readable form of a differencing attack."""
    k = a.shape[0]
    e = np.zeros(a.shape[1])
    e[i] = 1.0
    for size in range(1, min(3, k) + 1 if k <= 40 else 1):
        for rows in combinations(range(k), size):
            sub = a[list(rows)].T
            c, *_ = np.linalg.lstsq(sub, e, rcond=None)
            if np.linalg.norm(sub @ c - e) <= 1e-8:
                out = np.zeros(k)
                out[list(rows)] = c
                return out
    return fallback


def exposures(a: NDArray[np.float64], names: Sequence[str]) -> tuple[LinearExposure, ...]:
    """Every individual the statistics with matrix ``a`` (k × n) expose, with a combination."""
    from persuasive.linear.analysis import analyse
    from persuasive.linear.structured import StructuredCovariance

    n = a.shape[1]
    found = analyse(np.zeros(n), StructuredCovariance(np.ones(n)), a).exposures()
    return tuple(
        LinearExposure(e.i, combination_of(_sparsest(a, e.i, e.combination), names)) for e in found
    )
