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
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _tolerances as tol
from persuasive.errors import ValidationError

if TYPE_CHECKING:
    from persuasive.linear.structured import ColumnPatterns

__all__ = [
    "COMBINATION_RTOL",
    "LinearExposure",
    "PatternSpread",
    "combination_of",
    "exposures",
    "pattern_spread",
    "spread_of",
]

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


def _sparsest(
    at: NDArray[np.float64], i: int, fallback: NDArray[np.float64]
) -> NDArray[np.float64]:
    """A combination c with ``at @ c = e_i`` using as few statistics as possible (up to 3,
    k ≤ 40), else ``fallback`` (the minimum-norm one): the readable form of a differencing
    attack. ``at`` is Aᵀ (n, k), or the compressed :math:`M^\\top` (m, k) of
    :func:`pattern_spread` (same residuals: :math:`\\|A^\\top c - e_i\\| =
    \\|M^\\top c - e_p\\|` for an individual alone in pattern p)."""
    k = at.shape[1]
    e = np.zeros(at.shape[0])
    e[i] = 1.0
    for size in range(1, min(3, k) + 1 if k <= 40 else 1):
        for rows in combinations(range(k), size):
            sub = at[:, list(rows)]
            c, *_ = np.linalg.lstsq(sub, e, rcond=None)
            if np.linalg.norm(sub @ c - e) <= 1e-8:
                out = np.zeros(k)
                out[list(rows)] = c
                return out
    return fallback


class PatternSpread(NamedTuple):
    """:func:`pattern_spread`: ``spread`` (n,) the share :math:`1 - \\rho_i^2` of each
    individual's variance the statistics leave unexplained under an independent prior of equal
    variances (0 when exposed), ``exposed`` (sorted row ids) and ``combination`` (k, per
    exposed row) with :math:`A^\\top c = e_i`, and ``mt`` the compressed :math:`M^\\top`
    (m, k) with the pattern of each exposed row in ``pattern``."""

    spread: NDArray[np.float64]
    exposed: NDArray[np.intp]
    combination: list[NDArray[np.float64]]
    mt: NDArray[np.float64]
    pattern: NDArray[np.intp]


def pattern_spread(a: NDArray[np.float64]) -> PatternSpread | None:
    r"""Exposure and :math:`1 - \rho_i^2` under :math:`\Sigma = I` from A's column patterns
    (:func:`~persuasive.linear.structured.column_patterns`): O(nk + mk²); None when A has too
    many distinct columns (then :func:`~persuasive.linear.analysis.analyse` is used).

    With :math:`A = C E`, :math:`M = C\,\mathrm{diag}(n_p)^{1/2} = U S W^\top`:
    :math:`\rho_i^2 = \|W_{p(i)}\|^2 / n_{p(i)}` (the leverage of i), equal to the analysis'
    :math:`a_i^\top (AA^\top)^+ a_i`; only someone alone in a pattern can be exposed, by
    :math:`c = U S^{-1} W_{p}` (the analysis' minimum-norm combination).

    Examples
    --------
    >>> import numpy as np
    >>> from persuasive.linear.exposure import pattern_spread
    >>> a = np.array([[0.25] * 4, [1/3, 1/3, 1/3, 0.0]])  # person 3 is the difference
    >>> ps = pattern_spread(a)
    >>> ps.exposed.tolist(), ps.combination[0].round(8).tolist(), ps.spread.round(6).tolist()
    ([3], [4.0, -3.0], [0.666667, 0.666667, 0.666667, 0.0])
    """
    from persuasive.linear.structured import column_patterns

    pat = column_patterns(a)
    return None if pat is None else spread_of(pat)


def spread_of(pat: ColumnPatterns) -> PatternSpread:
    """:func:`pattern_spread` from A's column patterns ``pat`` (known, e.g. from the
    statistics' selections by :func:`~persuasive.linear.structured.patterns_of_masks`)."""
    from persuasive.linear.analysis import RANK_RTOL

    u, s, wt, w = pat.svd()
    keep = s > RANK_RTOL * s[0]
    u, s, wt = u[:, keep], s[keep], wt[keep]
    post = np.maximum(1.0 - np.einsum("ij,ij->j", wt, wt) / w, 0.0)
    bare = post <= tol.VAR_RTOL
    spread = np.where(bare, 0.0, post)[pat.index]
    exposed = np.flatnonzero(bare[pat.index])
    pattern = pat.index[exposed]
    combination = [u @ (wt[:, p] / s) for p in pattern]
    mt = (pat.columns * np.sqrt(w)[None, :]).T
    return PatternSpread(spread, exposed, combination, mt, pattern)


def exposures(
    a: NDArray[np.float64] | None,
    names: Sequence[str],
    *,
    patterns: ColumnPatterns | None = None,
) -> tuple[LinearExposure, ...]:
    """Every individual the statistics with matrix ``a`` (k × n) expose, with a combination
    (from A's column patterns when it has few distinct columns, :func:`pattern_spread`, or
    from ``patterns`` when they are known; ``a`` may then be None)."""
    if patterns is not None:
        fast: PatternSpread | None = spread_of(patterns)
    elif a is None:
        raise ValidationError("exposures needs the matrix a or its column patterns")
    else:
        fast = pattern_spread(a)
    if fast is not None:
        return tuple(
            LinearExposure(int(i), combination_of(_sparsest(fast.mt, int(p), c), names))
            for i, p, c in zip(fast.exposed, fast.pattern, fast.combination, strict=True)
        )
    from persuasive.linear.analysis import analyse
    from persuasive.linear.structured import StructuredCovariance

    assert a is not None  # pattern_spread(a) was None
    n = a.shape[1]
    found = analyse(np.zeros(n), StructuredCovariance(np.ones(n)), a).exposures()
    return tuple(
        LinearExposure(e.i, combination_of(_sparsest(a.T, e.i, e.combination), names))
        for e in found
    )
