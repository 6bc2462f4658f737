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

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from persuasive import _validation as v
from persuasive.errors import ValidationError
from persuasive.margins.constraints import constraint_system
from persuasive.margins.posterior import MarginPosterior, posterior_marginals
from persuasive.margins.table import MarginTable
from persuasive.priors.cells import IndependentCellsPrior
from persuasive.release.receivers import (
    NegativeBinomialReceiver,
    PoissonReceiver,
    Receiver,
    SmallCellReceiver,
    kappa_of,
)


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
    r_ = table.h if r is None else v.integer("r", r, low=1)
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


@dataclass(frozen=True, eq=False)
class WorstCaseLosses:
    """Worst case of the per-cell :math:`L_i^r` loss over a Receiver model.

    ``kappa_lower`` is attained by a prior of the model (an audit); ``kappa_upper`` is a proven
    bound (may be inf); ``exact`` marks cells where they agree.
    """

    kappa_lower: NDArray[np.float64]
    kappa_upper: NDArray[np.float64]
    disclosed: NDArray[np.bool_]
    score: str
    notes: tuple[str, ...]

    @property
    def exact(self) -> NDArray[np.bool_]:
        return self.kappa_lower >= self.kappa_upper

    @property
    def max_lower(self) -> float:
        return float(self.kappa_lower.max(initial=0.0))

    @property
    def max_upper(self) -> float:
        return float(self.kappa_upper.max(initial=0.0))


def _family(receiver: Receiver, means: Any) -> Any:
    if isinstance(receiver, PoissonReceiver):
        return stats.poisson(means)
    assert isinstance(receiver, NegativeBinomialReceiver)
    return stats.nbinom(receiver.size, receiver.size / (receiver.size + means))


def _disclosure_bound(receiver: Receiver, x: NDArray[np.int64]) -> NDArray[np.float64]:
    r"""``sup_P -log p(x)`` over the model, per count: exact (unimodality in the mean, whose
    single critical point is μ = x, so the minimum of p(x; μ) over an interval is at an end)."""
    if isinstance(receiver, SmallCellReceiver):
        return np.full(x.shape, math.inf)
    ends = np.array([receiver.mean_min, receiver.mean_max])  # type: ignore[attr-defined]
    with np.errstate(divide="ignore"):
        lp = _family(receiver, ends[:, None]).logpmf(x[None, :])
    return -lp.min(axis=0)


def worst_case_losses(
    table: MarginTable, receiver: Receiver, *, r: int | None = None, grid: int = 5
) -> WorstCaseLosses:
    r"""Per-cell worst case of :math:`\Delta_i^r` over a Receiver model (audit + bound).

    Model priors are independent, each cell with its own mean in ``[mean_min, mean_max]``
    (Poisson / negative binomial), or any law with :math:`P(X<h) \ge \alpha` (small-cell class).

    - *Upper bound* (proven): :math:`\Delta_i^r \le -\log q_i(x_i)` since :math:`\pi_i \le 1`,
      maximised exactly over the family at an end of the mean range; for
      :math:`\mathcal C^{h,\alpha}` it is ∞. A cell in no margin keeps Prop 8's
      :math:`-\log\alpha(h)`; a cell with :math:`x_i \ge r` has loss 0.
    - *Lower bound* (audit): the largest loss over a ``grid`` × ``grid`` grid of (mean of the
      cell, common mean of the other cells); for :math:`\mathcal C^{h,\alpha}` a suppressed cell
      sharing a margin with only primary suppressed cells is ∞ (witness: point-mass priors at the
      true values on its partners — they are in the class — disclose it, and
      :math:`q_i(x_i) \to 0`), otherwise the worst prior of the model is used.

    Examples
    --------
    >>> from persuasive.margins import MarginTable
    >>> from persuasive.release.receivers import PoissonReceiver
    >>> t = MarginTable([[1, 5], [6, 8]], h=3, margins="rows")
    >>> w = worst_case_losses(t, PoissonReceiver(1.0, 4.0))
    >>> bool(w.disclosed[0, 0]), round(float(w.kappa_upper[0, 0]), 6), bool(w.exact[0, 0])
    (True, 2.613706, True)
    """
    if not isinstance(receiver, (SmallCellReceiver, PoissonReceiver, NegativeBinomialReceiver)):
        raise ValidationError(
            "receiver must be SmallCellReceiver, PoissonReceiver or NegativeBinomialReceiver; "
            f"got {type(receiver).__name__}"
        )
    r_ = table.h if r is None else v.integer("r", r, low=1, high=table.h)
    grid = v.integer("grid", grid, low=1)
    x = table.counts.ravel()
    n = table.n_cells
    cs = constraint_system(table)
    lower, upper = np.zeros(n), np.zeros(n)
    small_sup = np.zeros(n, dtype=bool)
    small_sup[cs.cells] = x[cs.cells] < r_
    in_margin = np.zeros(n, dtype=bool)
    in_margin[cs.cells[np.asarray(cs.A.sum(axis=0)).ravel() > 0]] = True
    bound = _disclosure_bound(receiver, x)
    prop8 = kappa_of(receiver.alpha(table.h))
    upper[small_sup] = np.where(in_margin[small_sup], bound[small_sup], prop8)
    notes = [
        "kappa_upper: proven (-log q_i(x_i) maximised over the model; Prop 8's -log alpha(h) "
        "for cells in no margin; 0 for released cells and cells >= r)",
    ]
    if isinstance(receiver, SmallCellReceiver):
        post = posterior_marginals(table, _independent([receiver.worst_prior(table.h)] * n))
        lower = cell_losses(
            table, _independent([receiver.worst_prior(table.h)] * n), r=r_, posterior=post
        ).small_cell.ravel()
        coo = cs.A.tocoo()
        bad_row = np.zeros(cs.A.shape[0], dtype=bool)
        np.logical_or.at(bad_row, coo.row, table.secondary.ravel()[cs.cells[coo.col]])
        partners_ok = np.zeros(cs.cells.size, dtype=bool)
        np.logical_or.at(partners_ok, coo.col, ~bad_row[coo.row])
        inf_cells = cs.cells[partners_ok]
        lower[inf_cells[x[inf_cells] < r_]] = math.inf
        lower[~small_sup] = 0.0
        lower[small_sup & ~in_margin] = prop8
        notes.append(
            "kappa_lower: inf where a partner-only-primary margin gives a witness; "
            "else the loss at the model's worst prior (an audit, a lower bound)"
        )
    else:
        lo, hi = receiver.mean_min, receiver.mean_max
        mus = np.unique(np.linspace(lo, hi, grid))
        sup = table.suppressed.ravel()
        for mu_other in mus:
            for mu_cell in mus:
                # every suppressed cell at mu_cell at once: a lower bound for each cell
                means = np.where(sup, mu_cell, mu_other)
                laws = [_family(receiver, np.float64(m)) for m in means]
                got = cell_losses(table, _independent(laws), r=r_).small_cell.ravel()
                lower = np.maximum(lower, got)
        lower[small_sup & ~in_margin] = prop8
        notes.append(
            f"kappa_lower: grid audit over {mus.size}x{mus.size} (suppressed-cell "
            "mean, other-cell mean): a lower bound on the sup, not monotone in general"
        )
    disc = np.zeros(n, dtype=bool)
    if cs.cells.size:
        width = max(table.h, int(cs.b.max(initial=0)) + 1)
        rest = np.flatnonzero(~table.suppressed.ravel())
        flat = IndependentCellsPrior._from_parts(
            n,
            table=(cs.cells, np.full((cs.cells.size, width), 1.0 / width)),
            points=(rest, x[rest].astype(np.float64)),
        )
        disc[cs.cells] = posterior_marginals(table, flat).disclosed
    dsup = disc & small_sup
    lower[dsup] = upper[dsup]
    s = table.shape
    return WorstCaseLosses(
        lower.reshape(s),
        np.maximum(upper, lower).reshape(s),
        disc.reshape(s),
        "small_cell",
        tuple(notes),
    )


def _independent(cells: list[Any]) -> IndependentCellsPrior:
    return IndependentCellsPrior(cells)


def meets(worst: WorstCaseLosses, kappa: float) -> NDArray[np.bool_]:
    """Cells certified at κ: ``kappa_upper <= kappa``."""
    return worst.kappa_upper <= kappa
