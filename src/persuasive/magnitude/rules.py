r"""The classical sensitivity rules of magnitude tables on the same contributors.

With a cell's contributions sorted :math:`x_{(1)} \ge x_{(2)} \ge \dots` (a holding one
contributor) and :math:`T` its total (``docs/magnitude.md`` §3):

.. math::

    \text{p\% rule: } T - x_{(1)} - x_{(2)} < p\,x_{(1)},\qquad
    (n,k)\text{-dominance: } x_{(1)} + \dots + x_{(n)} \ge k\,T .

These are the definitions of ACRO (the SACRO output checker: ``safe_pratio_p``,
``safe_nk_n``, ``safe_nk_k``, defaults p = 0.10, n = 2, k = 0.9), which
``tests/test_magnitude_rules.py`` runs on the same crosstab. A cell with no positive
contribution (total 0) is flagged by neither, as in ACRO.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from persuasive import _validation as v
from persuasive.magnitude.contributors import Contributions

__all__ = ["ACRO_K", "ACRO_N", "ACRO_P", "nk_dominance", "p_percent", "top_sum"]

#: ACRO's default parameters (``acro/default.yaml``).
ACRO_P, ACRO_N, ACRO_K = 0.10, 2, 0.90


def top_sum(c: Contributions, n: int) -> NDArray[np.float64]:
    """The sum of each cell's n largest contributions."""
    n = v.integer("n", n, low=1)
    w = np.where(c.rank < n, c.value, 0.0)
    return np.asarray(np.bincount(c.cell, weights=w, minlength=c.n_cells), dtype=np.float64)


def p_percent(c: Contributions, p: float = ACRO_P) -> NDArray[np.bool_]:
    """Cells the p% rule flags: the remainder after the two largest is below p × the largest.

    >>> from persuasive.magnitude.contributors import from_cells
    >>> p_percent(from_cells([[10.0, 5.0, 0.5], [10.0, 5.0, 2.0], [3.0]])).tolist()
    [True, False, True]
    """
    p = v.real("p", p, low=0.0)
    first = top_sum(c, 1)
    rest = np.bincount(c.cell, weights=np.where(c.rank >= 2, c.value, 0.0), minlength=c.n_cells)
    return np.asarray((first > 0) & (rest < p * first))


def nk_dominance(c: Contributions, n: int = ACRO_N, k: float = ACRO_K) -> NDArray[np.bool_]:
    """Cells the (n,k)-dominance rule flags: the n largest are at least k of the total.

    >>> from persuasive.magnitude.contributors import from_cells
    >>> nk_dominance(from_cells([[10.0, 5.0, 0.5], [10.0, 5.0, 2.0, 2.0]])).tolist()
    [True, False]
    """
    k = v.real("k", k, low=0.0, high=1.0)
    total = c.total
    return np.asarray((total > 0) & (top_sum(c, n) >= k * total))
