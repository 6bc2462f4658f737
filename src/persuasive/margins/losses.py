r"""Per-cell relative loss of a suppressed table with published margins (Bon et al. 2026).

For cell i with true count :math:`x_i`, prior marginal :math:`q_i` and posterior marginal
:math:`\pi_i` (:mod:`persuasive.margins.posterior`; :math:`\pi_i = \delta_{x_i}` for a released
cell), the relative loss under the marginal log score and under :math:`L_i^r` (Prop 8) is

.. math:: \Delta_i^{\log} = -\log q_i(x_i) + \log \pi_i(x_i), \qquad
          \Delta_i^{r} = \Delta_i^{\log}\ \mathbb 1\{x_i < r\},

with :math:`\infty - \infty = 0` (a value of prior mass 0). A *disclosed* cell
(:math:`\pi_i(x_i) = 1`) loses :math:`-\log q_i(x_i)`: over the class
:math:`\mathcal C^{h,\alpha}` this is unbounded (:math:`q_i(x_i) \to 0` stays in the class).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from persuasive import _domains as dm
from persuasive import _validation as v
from persuasive.margins.posterior import MarginPosterior, posterior_marginals
from persuasive.margins.table import MarginTable
from persuasive.priors.cells import IndependentCellsPrior


def _diff(prior_lp: NDArray[np.float64], post_lp: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(invalid="ignore"):
        d = -prior_lp + post_lp
    return np.where(np.isneginf(prior_lp), 0.0, d)  # ∞ − ∞ = 0 (post is 0 where prior is)


@dataclass(frozen=True, eq=False)
class CellLosses:
    """Per-cell relative losses (arrays of the table's shape) for one prior."""

    small_cell: NDArray[np.float64]
    log: NDArray[np.float64]
    disclosed: NDArray[np.bool_]
    exact: bool
    r: int


def cell_losses(
    table: MarginTable,
    prior: IndependentCellsPrior,
    *,
    r: int | None = None,
    posterior: MarginPosterior | None = None,
) -> CellLosses:
    r"""Relative loss of every cell under :math:`L_i^r` and the marginal log score.

    Examples
    --------
    >>> import persuasive as pp
    >>> from persuasive.margins import MarginTable
    >>> t = MarginTable([[1, 5], [6, 8]], h=3, margins="rows")
    >>> q = pp.IndependentCellsPrior([[0.25] * 4] * 4)
    >>> out = cell_losses(t, q)
    >>> out.disclosed.tolist(), round(float(out.small_cell[0, 0]), 6)   # -log(1/4)
    ([[True, False], [False, False]], 1.386294)
    """
    r_ = table.h if r is None else v.integer("r", r, low=dm.R_MIN, high=table.h)
    post = posterior_marginals(table, prior) if posterior is None else posterior
    x = table.counts.ravel()
    prior_lp = prior.logpmf_cells(x.astype(np.float64))
    post_lp = np.zeros(table.n_cells)
    post_lp[post.cells] = post.log_prob_of(x[post.cells])
    log = _diff(prior_lp, post_lp)
    small = np.where(x < r_, log, 0.0)
    disc = np.zeros(table.n_cells, dtype=bool)
    disc[post.cells] = post.disclosed
    s = table.shape
    return CellLosses(small.reshape(s), log.reshape(s), disc.reshape(s), post.exact, r_)
