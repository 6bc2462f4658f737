r"""A lower bound on the number of secondary cells that anyone can recompute from a publication.

The planner's :func:`~persuasive.margins.planning.lower_bound` (issue 5) uses the true counts:
which suppressed cells need protection (:math:`x_i < r` and a disclosure loss :math:`D(x_i) >
\kappa`) and which entries the primary pattern exposes. A verifier sees only the publication
(the released counts, which suppressed cells are primary and which secondary, the totals), so
the certificate states the bound below instead, a function of the publication alone, valid for
**every** table consistent with it (hence for the true one).

Under the primary pattern (the secondary cells released again) an entry :math:`e` with
:math:`n_e` primary cells is exposed for every consistent table when

* :math:`n_e = 1` (a lone primary, recovered by subtraction), or
* no secondary cell lies in :math:`e` (its primaries' sum :math:`s_e` is then the published
  total minus the released cells) and :math:`s_e = 0` or :math:`s_e = (h - 1) n_e` (every
  primary at an end of :math:`[0, h - 1]`).

Such an entry must get a hidden cell when the primaries it determines need protection for
every consistent table: where no secondary lies in :math:`e` their value :math:`v_e` is known
(:math:`s_e`, 0 or :math:`h - 1`) and the test is :math:`v_e < r` and :math:`D(v_e) > \kappa`;
otherwise (a lone primary beside secondary cells) its value is anywhere in :math:`[0, h - 1]`,
and the test is :math:`r = h` and :math:`\min_{v < h} D(v) > \kappa`. Every pattern meeting κ
hides a cell of each such entry (else the cell is disclosed, its loss :math:`D > \kappa`), so
its number of secondary cells is at least the covering LP's value over these entries, and at
least the number of such entries in any one margin (the entries of a margin are disjoint); the
LP is bounded through weak duality with a scaled dual point, as in
:func:`~persuasive.margins.planning.covering_bound`, and the larger bound is rounded up.

Its rows are a subset of the planner's at the true table, so it is usually at most the
planner's bound, and it is 0 when no entry qualifies.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.optimize import linprog

from persuasive.margins.constraints import full_incidence
from persuasive.margins.planning import disclosure_loss
from persuasive.margins.table import MarginTable

__all__ = ["publication_lower_bound"]


def publication_lower_bound(table: MarginTable, model: Any, kappa: float, r: int) -> float:
    """The lower bound on the number of secondary cells (module docstring) of the published
    pattern of ``table`` at target ``kappa``: uses only what the publication shows.

    Parameters
    ----------
    table : MarginTable
        The published pattern (primary and secondary cells); the hidden counts are not read
        (only the residuals of entries without a secondary cell, which the totals give).
    model : PoissonReceiver or NegativeBinomialReceiver
        The Receiver model, for the disclosure loss :math:`D(v)` of a value.
    kappa : float
        The target.
    r : int
        Score threshold, ``r <= h``.

    Returns
    -------
    float
        An integer-valued bound (``inf`` when an entry that must get a hidden cell has none).

    Examples
    --------
    >>> from persuasive.classes.receivers import PoissonReceiver
    >>> t = MarginTable([[0, 9, 8], [7, 6, 9], [8, 9, 7]], h=3, margins="rows,cols")
    >>> publication_lower_bound(t, PoissonReceiver(1, 10), 7.0, 3)  # row 0 and column 0
    2.0
    """
    A = full_incidence(table)[0].tocsr()
    if A.shape[0] == 0:
        return 0.0
    h = table.h
    x = table.counts.ravel()
    sup, sec = table.suppressed.ravel(), table.secondary.ravel()
    prim = sup & ~sec
    n_p = A @ prim.astype(np.int64)
    n_s = A @ sec.astype(np.int64)
    s = A @ np.where(prim, x, 0)  # public where n_s == 0: the total minus the released cells
    public = n_s == 0
    ends = (s == 0) | (s == (h - 1) * n_p)
    exposed = (n_p >= 1) & ((n_p == 1) | (public & ends))
    v = np.where(n_p == 1, s, np.where(s == 0, 0, h - 1))  # their value, where public
    d_all = disclosure_loss(model, np.arange(h))
    with np.errstate(invalid="ignore"):
        known_needy = (v < r) & (disclosure_loss(model, np.clip(v, 0, h - 1)) > kappa)
    any_needy = r >= h and float(d_all.min()) > kappa
    rows = np.flatnonzero(exposed & np.where(public, known_needy, any_needy))
    if table.has_apriori:  # D above is unconditioned: drop entries with a boxed primary (a
        # lower bound stays valid on fewer rows; docs/margins_apriori.md)
        lw, up = table.lower.ravel(), table.upper.ravel()
        boxed = (prim & ((lw > 0) | (up != np.iinfo(np.int64).max))).astype(np.int64)
        rows = rows[np.asarray(A[rows] @ boxed) == 0]
    if rows.size == 0:
        return 0.0
    cand = np.flatnonzero(table.hideable.ravel() | sec)  # hideable under the primary pattern
    M = A[rows][:, cand].tocsr()
    if np.any(np.diff(M.indptr) == 0):
        return math.inf
    sizes = [int(np.prod([table.shape[a] for a in m])) for m in table.margins]
    margin = np.searchsorted(np.cumsum(sizes), rows, side="right")
    per_margin = float(np.bincount(margin).max())
    used = np.unique(M.indices)
    Mu = M[:, used]
    res = linprog(np.ones(used.size), A_ub=-Mu, b_ub=-np.ones(rows.size), method="highs")
    lp = 0.0
    if res.status == 0:  # weak duality: any y >= 0 with M^T y <= 1, scaled into it, bounds
        y = np.maximum(-np.asarray(res.ineqlin.marginals), 0.0)
        load = np.asarray(Mu.T @ y)
        lp = float(y.sum() / max(1.0, float(load.max(initial=0.0))))
    return float(math.ceil(max(per_margin, lp) - 1e-9))
