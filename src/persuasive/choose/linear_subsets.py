r"""Which statistics to keep when some combination of them exposes someone: every subset.

A set S of statistics is *safe* when it exposes nobody: no :math:`e_i` lies in the row space
of :math:`A_S` (``docs/linear_release.md``). A subset of a safe set is safe. With a cost
:math:`c_j` for withholding statistic j and an error ℓ for each statistic kept (0 exact, σ²
with noise), the loss of keeping S is :math:`\sum_{j\notin S} c_j + |S|\,\ell`, so the best S
lies among the statistics with :math:`c_j \ge \ell`; :func:`best_safe_subset` orders every
subset of those by loss and returns the first safe one (exact: nothing is skipped).

Exposure of :math:`A_S` is decided as :func:`persuasive.linear.exposed_by` decides it, on A's
column patterns :math:`A = CE` (:func:`persuasive.linear.structured.column_patterns`): with the
thin SVD :math:`C_S\,\mathrm{diag}(n_p)^{1/2} = U s W^\top`, an individual of pattern p has
leverage :math:`\rho_p^2 = \|W_p\|^2/n_p` and is exposed iff :math:`1-\rho_p^2 \le`
``VAR_RTOL``. Each check costs one SVD of a :math:`|S| \times m` matrix.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from persuasive import _tolerances as tol

__all__ = ["EXHAUSTIVE_MAX", "add_back", "best_safe_subset"]

#: Every subset is searched up to this many statistics (2^12 = 4096 orderings, at most as many
#: SVDs); above it the search is greedy (and says so).
EXHAUSTIVE_MAX = 12


def _patterns(a: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(C, n_p): A's distinct columns and their counts (every column its own when A does not
    compress)."""
    from persuasive.linear.structured import column_patterns

    pat = column_patterns(a)
    if pat is None:
        return a, np.ones(a.shape[1])
    return pat.columns, pat.count.astype(float)


def _exposes(cols: NDArray[np.float64], count: NDArray[np.float64]) -> bool:
    from persuasive.linear.analysis import RANK_RTOL

    if cols.shape[0] == 0:
        return False
    _, s, wt = np.linalg.svd(cols * np.sqrt(count)[None, :], full_matrices=False)
    keep = s > RANK_RTOL * s[0]
    lev = np.einsum("ij,ij->j", wt[keep], wt[keep]) / count
    return bool(np.any(1.0 - lev <= tol.VAR_RTOL))


def best_safe_subset(
    a: NDArray[np.float64], costs: NDArray[np.float64], ell: float
) -> tuple[list[int], int]:
    r"""The kept rows of least loss :math:`\sum_{j\notin S} c_j + |S|\ell` among the safe sets
    (ties: more statistics kept), and how many subsets were checked.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([[1/3, 1/3, 1/3], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    >>> best_safe_subset(a, np.array([5.0, 1.0, 0.1]), 0.0)   # keep 'all' alone
    ([0], 4)
    """
    k = a.shape[0]
    cols, count = _patterns(a)
    useful = [j for j in range(k) if costs[j] >= ell]
    masks = np.arange(1 << len(useful), dtype=np.int64)
    bits = (masks[:, None] >> np.arange(len(useful))[None, :]) & 1  # (2^u, u): kept or not
    c = costs[useful]
    finite = np.where(np.isfinite(c), c, 0.0)
    lost_inf = ((1 - bits) * ~np.isfinite(c)).sum(axis=1)  # statistics of infinite cost lost
    loss = ((1 - bits) * finite).sum(axis=1) + bits.sum(axis=1) * ell
    order = np.lexsort((-bits.sum(axis=1), loss, lost_inf))
    for n_checked, idx in enumerate(order, start=1):
        rows = [useful[j] for j in np.flatnonzero(bits[idx])]
        if not _exposes(cols[rows], count):
            return rows, n_checked
    return [], int(order.size)  # unreachable: the empty set is safe


def add_back(
    a: NDArray[np.float64], costs: NDArray[np.float64], kept: list[int], ell: float
) -> list[int]:
    r"""``kept`` (a safe set) with every other statistic worth keeping (:math:`c_j \ge \ell`)
    added back, dearest first, whenever the set stays safe: a local improvement of a greedy
    choice (it cannot raise the loss; it is not an exact search).

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([[1/3, 1/3, 1/3], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    >>> add_back(a, np.array([5.0, 1.0, 0.1]), [], 0.0)   # 'all' first, then nothing fits
    [0]
    """
    cols, count = _patterns(a)
    out = sorted(kept)
    rest = [j for j in range(a.shape[0]) if j not in kept and costs[j] >= ell]
    for j in sorted(rest, key=lambda j: -costs[j]):
        trial = sorted([*out, j])
        if not _exposes(cols[trial], count):
            out = trial
    return out
