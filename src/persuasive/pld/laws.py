r"""Pessimistic loss pmfs of the Prop 6 mechanisms (sensitivity 1, docs/math.md §6).

For the worst neighbour pair :math:`x' = x + 1` (the noise mechanisms are symmetric, so one
pair gives every pair's law) the privacy loss :math:`\ell = \log m(x,T)/m(x',T)` is

* Gaussian: :math:`\ell \sim \mathcal N(1/(2\sigma^2), 1/\sigma^2)`;
* Laplace (c = 1/b): atom :math:`+c` of mass 1/2, atom :math:`-c` of mass
  :math:`\tfrac12 e^{-c}`, and on :math:`(-c, c)` the cdf
  :math:`F(u) = \tfrac12 e^{-(c-u)/2}` (continuous part);
* geometric: :math:`\pm 1/b` with :math:`P(+1/b) = 1/(1 + e^{-1/b})`;
* finite kernels (incl. randomized response): :math:`\log(m_{xt}/m_{x't})` with mass
  :math:`m_{xt}`, :math:`+\infty` when :math:`m_{x't} = 0`, one law per ordered pair.

Each law is put on the grid by rounding up (:func:`persuasive.pld.pmf.grid_index`), after the
losses themselves are rounded up past their floating-point error (1/b, finite-kernel logs).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats
from scipy.special import ndtr

from persuasive import _validation as v
from persuasive._rounding import div_up
from persuasive.classes import NeighbourPriors
from persuasive.closed.pdp import finite_matrix, finite_pairs, loss_table_up
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.mechanisms import (
    GaussianMechanism,
    GeometricMechanism,
    LaplaceMechanism,
    Mechanism,
)
from persuasive.pld.pmf import STEP, TAIL_MASS, LossPMF, grid_index

Pair = tuple[int, int]


def _step(step: float) -> float:
    return v.real("step", step, low=0.0, low_open=True)


def gaussian_pmf(sigma: float, step: float = STEP, tail_mass: float = TAIL_MASS) -> LossPMF:
    r"""Loss pmf of the Gaussian mechanism: :math:`\mathcal N(1/(2\sigma^2), 1/\sigma^2)`,
    binned to :math:`((j-1)\Delta, j\Delta] \mapsto j\Delta`; the lower tail goes to the lowest
    bin (rounding up), the upper tail beyond :math:`\mu + z s` (mass ``tail_mass / 2``) to
    :math:`+\infty`.

    Examples
    --------
    >>> p = gaussian_pmf(1.0, 1e-3)
    >>> round(float(p.tail(1.0)[0]), 4)  # Φ(-0.5) = 0.3085
    0.3085
    """
    sigma = v.real("sigma", sigma, low=0.0, low_open=True)
    step = _step(step)
    mu, s = 0.5 / sigma**2, 1.0 / sigma
    z = float(stats.norm.isf(tail_mass / 2.0))
    lo, hi = math.floor((mu - z * s) / step), math.ceil((mu + z * s) / step)
    edges = ((lo - 1 + np.arange(hi - lo + 2)) * step - mu) / s
    e1, e2 = edges[:-1], edges[1:]
    masses = np.where(e2 <= 0, ndtr(e2) - ndtr(e1), ndtr(-e1) - ndtr(-e2))
    masses[0] = ndtr(e2[0])
    return LossPMF(step, lo, masses, truncated=float(ndtr(-e2[-1])))


def laplace_pmf(b: float, step: float = STEP) -> LossPMF:
    r"""Loss pmf of the Laplace mechanism with scale b (exact cdf, rounded up).

    Examples
    --------
    >>> p = laplace_pmf(1.0, 1e-3)
    >>> round(float(p.tail(0.5)[0]), 4)  # 1 - exp(-1/4)/2
    0.6106
    """
    b = v.real("scale", b, low=0.0, low_open=True)
    step = _step(step)
    c = div_up(1.0, b)  # the atom, rounded up
    j_lo, j_hi = int(grid_index(-c, step)), int(grid_index(c, step))
    j = np.arange(j_lo, j_hi + 1)
    u1 = np.maximum((j - 1) * step, -c)
    u2 = np.minimum(j * step, c)
    u1[0], u2[-1] = -c, c
    # F(u2) - F(u1) = exp(-(c - u1)/2) expm1((u2 - u1)/2) / 2, on (-c, c)
    masses = 0.5 * np.exp(-(c - u1) / 2.0) * np.expm1(np.maximum(u2 - u1, 0.0) / 2.0)
    masses[0] += 0.5 * math.exp(-c)  # atom at -c
    masses[-1] += 0.5  # atom at +c
    return LossPMF(step, j_lo, masses)


def atoms_pmf(values: ArrayLike, probs: ArrayLike, step: float = STEP) -> LossPMF:
    r"""Loss pmf of a discrete loss law (``+inf`` allowed; entries with prob 0 ignored).

    Examples
    --------
    >>> atoms_pmf([1.0, 0.0, np.inf], [0.5, 0.3, 0.2], 0.5).tail(0.0).tolist()
    [0.7]
    """
    vals = np.asarray(values, dtype=np.float64).ravel()
    p = np.asarray(probs, dtype=np.float64).ravel()
    keep = p > 0
    vals, p = vals[keep], p[keep]
    fin = np.isfinite(vals)
    inf_mass = float(p[~fin & (vals > 0)].sum())
    if not fin.any():
        return LossPMF(step, 0, np.zeros(1), inf_mass=inf_mass)
    idx = grid_index(vals[fin], step)
    off = int(idx.min())
    masses = np.bincount(idx - off, weights=p[fin]).astype(np.float64)
    return LossPMF(step, off, masses, inf_mass=inf_mass)


def geometric_pmf(b: float, step: float = STEP) -> LossPMF:
    """Loss pmf of the two-sided geometric mechanism: ±1/b."""
    b = v.real("scale", b, low=0.0, low_open=True)
    p = 1.0 / (1.0 + math.exp(-1.0 / b))
    c = div_up(1.0, b)  # the atoms, the upper one rounded up
    return atoms_pmf([c, -1.0 / b], [p, 1.0 - p], _step(step))


def noise_pmf(mechanism: Mechanism, step: float = STEP) -> LossPMF | None:
    """The loss pmf of a Laplace / Gaussian / geometric mechanism, else None."""
    if isinstance(mechanism, GaussianMechanism):
        return gaussian_pmf(mechanism.sigma, step)
    if isinstance(mechanism, LaplaceMechanism):
        return laplace_pmf(mechanism.scale, step)
    if isinstance(mechanism, GeometricMechanism):
        return geometric_pmf(mechanism.scale, step)
    return None


def finite_pmfs(
    matrix: Any, priors: NeighbourPriors | None = None, step: float = STEP
) -> dict[Pair, LossPMF]:
    """One loss pmf per ordered neighbour pair (rows of ``matrix``)."""
    mat = np.asarray(matrix, dtype=np.float64)
    pairs = finite_pairs(priors or NeighbourPriors(), mat.shape[0])
    if isinstance(pairs, str):
        raise ValidationError(pairs)
    loss, p = loss_table_up(mat, pairs)  # losses rounded up past their float error
    return {(int(a), int(b)): atoms_pmf(loss[r], p[r], step) for r, (a, b) in enumerate(pairs)}


def mechanism_pmfs(
    mechanism: Mechanism, step: float = STEP, priors: NeighbourPriors | None = None
) -> dict[Pair, LossPMF]:
    """Loss pmfs of one Prop-6 mechanism: ``{(0, 1): pmf}`` for the (symmetric) noise
    mechanisms, one per ordered neighbour pair for finite kernels.

    Examples
    --------
    >>> import persuasive as pp
    >>> sorted(mechanism_pmfs(pp.RandomizedResponse(1.0, 3), 0.01))
    [(0, 1), (1, 0), (1, 2), (2, 1)]
    """
    step = _step(step)
    pmf = noise_pmf(mechanism, step)
    if pmf is not None:
        return {(0, 1): pmf}
    matrix = finite_matrix(mechanism)
    if matrix is None:
        raise UnsupportedCombinationError(
            f"no privacy-loss distribution for {type(mechanism).__name__}: supported are "
            "Laplace, Gaussian, geometric, randomized response and finite kernels"
        )
    return finite_pmfs(matrix, priors, step)
