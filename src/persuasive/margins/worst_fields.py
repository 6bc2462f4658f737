r"""The per-cell fields of the worst case from a posterior, and the switching bounds' part in them.

Split from :mod:`persuasive.margins.worst` (which re-exports them): for each suppressed cell, the
exact value :math:`\log\Pi^0_i(x_i) + B(x_i)` below r (``docs/margins.md``), its publication
bound over every value the publication leaves possible, the proven fallbacks
(:math:`\Pi \le 1`) where a component is not computed exactly, and the proven switching bounds
of :mod:`persuasive.margins.switching` (``docs/margins_bounds.md``) in their place. ``s_true``
and ``s_grid`` are the disclosure losses :math:`B`, conditioned on the a-priori bounds where a
cell has one (:mod:`persuasive.margins.apriori`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from persuasive.margins.constraints import constraint_system
from persuasive.margins.posterior import MarginPosterior
from persuasive.margins.switching import posterior_upper
from persuasive.margins.table import MarginTable
from persuasive.priors.cells import IndependentCellsPrior

__all__ = ["bound_certified", "by_switching", "posterior_fields", "switching_grid"]


def posterior_fields(
    post: MarginPosterior,
    x: NDArray[np.int64],
    r: int,
    h: int,
    s_true: NDArray[np.float64],
    s_grid: NDArray[np.float64],
    bound: NDArray[np.float64] | None = None,
) -> tuple[NDArray[Any], ...]:
    r"""Per suppressed cell of ``post``: ``(exact, value, upper, lower, published, log)``.

    ``s_true`` is the disclosure loss :math:`-\log q(x_i)` (or its sup :math:`B(x_i)`) of each
    cell at its true value, ``s_grid[k, j]`` the same at value ``post.lo[k] + j``. On an exact
    component the loss is :math:`\log\Pi_i(x_i) + s(x_i)` below r (∞ − ∞ = 0), its publication
    bound the maximum over possible values below r; on an MCMC component the proven fallbacks
    (:math:`\Pi \le 1`) are ``s_true`` and the largest ``s_grid`` below r.
    """
    c, lp = post.cells, post.log_pmf
    ex = np.array([m == "exact-dp" for m in post.methods], dtype=bool)[post.component]
    grid = post.lo[:, None] + np.arange(lp.shape[1])[None, :]
    lp_true = post.log_prob_of(x[c])
    with np.errstate(invalid="ignore"):
        log_val = np.where(np.isinf(s_true) & np.isneginf(lp_true), 0.0, lp_true + s_true)
        pub_x = np.max(np.where(np.isfinite(lp) & (grid < r), lp + s_grid, -np.inf), axis=1)
    small = x[c] < r
    val = np.where(small, log_val, 0.0)
    # Pi <= 1: the largest B over the values below r of the support (a box may start it above 0)
    below = np.max(np.where(grid < r, s_grid, -np.inf), axis=1, initial=-np.inf)
    fall = np.where(x[c] < h, np.maximum(below, 0.0), 0.0)
    b_val, b_pub = np.where(small, s_true, 0.0), fall
    if bound is not None:  # proven switching bounds (persuasive.margins.switching)
        b_val, b_pub = _bounded(bound, post, x[c], r, s_true, s_grid, b_val, b_pub)
    upper = np.where(ex, val, b_val)
    lower = np.where(ex, val, 0.0)
    pub = np.where(ex, np.maximum(pub_x, 0.0), b_pub)
    log_up = np.where(ex, log_val, np.minimum(s_true, np.where(small, b_val, s_true)))
    return ex, val, upper, lower, pub, log_up


def _bounded(
    bound: NDArray[np.float64],
    post: MarginPosterior,
    xc: NDArray[np.int64],
    r: int,
    s_true: NDArray[np.float64],
    s_grid: NDArray[np.float64],
    b_val: NDArray[np.float64],
    b_pub: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""κ from proven upper bounds ``bound[k, j]`` :math:`\ge \log\Pi(y_k = lo_k + j)` (aligned
    with ``post``; nan where none): the loss :math:`\log\Pi_i(x_i) + B(x_i)` is increasing in
    :math:`\Pi_i(x_i)`, so the bound at :math:`x_i` bounds it; the publication bound is its
    maximum over the values below r the bound leaves possible (all of them bounded, else the
    fallback). Never above the fallbacks ``b_val``, ``b_pub`` (:math:`\Pi \le 1`)."""
    w = min(bound.shape[1], s_grid.shape[1])
    bd, sg = bound[:, :w], s_grid[:, :w]
    grid = post.lo[:, None] + np.arange(w)[None, :]
    idx = np.clip(xc - post.lo, 0, w - 1)
    at = bd[np.arange(xc.size), idx]
    small = xc < r
    with np.errstate(invalid="ignore"):
        v_true = np.where(np.isneginf(at) & np.isinf(s_true), 0.0, at + s_true)
        val = np.where(small & ~np.isnan(at), np.minimum(b_val, v_true), b_val)
        below = grid < r
        cand = np.where(below & (bd > -np.inf), bd + sg, -np.inf)
        cand = np.where(np.isnan(bd) & below, np.inf, cand)  # an unbounded value below r
        pub = np.where(np.any(below, axis=1), np.max(cand, axis=1), 0.0)
        pub = np.minimum(b_pub, np.maximum(np.where(np.isnan(pub), np.inf, pub), 0.0))
    return val, pub


def switching_grid(
    table: MarginTable, prior: IndependentCellsPrior, post: MarginPosterior, r: int
) -> NDArray[np.float64]:
    """Switching upper bounds on ``log Π`` aligned with ``post`` (its cells, lo and width), for
    the cells below r of the components not computed exactly (nan elsewhere). ``post`` may
    number its components in any order (the planner's partial posteriors do): the components
    bounded are those of the table's constraint system holding such cells."""
    cs = constraint_system(table)
    assert np.array_equal(cs.cells, post.cells) and np.array_equal(cs.lo, post.lo)
    skipped = ~np.array([m == "exact-dp" for m in post.methods], dtype=bool)[post.component]
    big = np.unique(cs.labels[skipped])
    sb = posterior_upper(table, prior, components=big, top=r - 1, cs=cs)
    width = int(post.log_pmf.shape[1])
    out = np.full((post.cells.size, width), np.nan)
    w = min(width, int(sb.log_upper.shape[1]))
    assert np.array_equal(sb.cells, post.cells) and np.array_equal(sb.lo, post.lo)
    out[:, :w] = sb.log_upper[:, :w]
    return out


def by_switching(
    bnd: NDArray[np.float64],
    post: MarginPosterior,
    x: NDArray[np.int64],
    args: tuple[int, int, float | None, str],
    s_true: NDArray[np.float64],
    s_grid: NDArray[np.float64],
    ex: NDArray[np.bool_],
    upper: NDArray[np.float64],
    pub: NDArray[np.float64],
) -> tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]]:
    r"""Per cell of ``post`` (``upper`` and ``pub`` flat over the table, from
    :func:`posterior_fields` with ``bound=bnd``): whether ``kappa_published`` is the switching
    bound below the full-disclosure one; whether the target ``kappa`` certifies the cell
    (``args = (r, h, kappa, bound)``); and which certified cells are proven not disclosed
    (the bound gives :math:`\Pi_i(x_i) < 1`; elsewhere the chain's verdict stands)."""
    r, h, kappa, bound = args
    c = post.cells
    fall_pub = posterior_fields(post, x, r, h, s_true, s_grid)[4]
    switched = ~ex & (pub[c] < fall_pub)
    values = np.maximum(pub[c], upper[c]) if bound == "publication" else upper[c]
    ok = bound_certified(ex, values, kappa)
    at = bnd[np.arange(c.size), np.clip(x[c] - post.lo, 0, bnd.shape[1] - 1)]
    return switched, ok, ok & (at < 0.0)


def bound_certified(
    ex: NDArray[np.bool_], values: NDArray[np.float64], kappa: float | None
) -> NDArray[np.bool_]:
    r"""Cells of non-exact components whose proven bound ``values`` (``kappa_upper`` or
    ``kappa_published``: the switching bound, or :math:`B` from :math:`\Pi \le 1`; 0 at or
    above r) is at most ``kappa`` (none without a target)."""
    if kappa is None:
        return np.zeros(ex.shape, dtype=bool)
    return ~ex & (values <= kappa)
