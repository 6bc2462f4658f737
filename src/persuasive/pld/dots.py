r"""Connect-the-dots discretisation for the hockey-stick δ(ε) only (approximate DP).

Doroshenko, Ghazi, Kamath, Kumar & Manurangsi (2022), "Connect the Dots: Tighter Discrete
Approximations of Privacy Loss Distributions". The hockey-stick divergence is

.. math:: \delta(\varepsilon) = E\big[(1 - e^{\varepsilon}\,e^{-\ell})_+\big],

a **convex** function of :math:`y = e^{-\ell}`. A loss :math:`\ell \in [a, b]` between two grid
points is replaced by :math:`a` or :math:`b` with the probabilities that keep
:math:`E[e^{-\ell}]` unchanged,

.. math:: P[b] = \frac{1 - e^{a - \ell}}{1 - e^{a - b}}, \qquad P[a] = 1 - P[b],

a mean-preserving spread in y, so by Jensen every δ(ε) can only grow (and it is exact at grid
ε for a single mechanism). The spread pair dominates the original pair of output laws
(Blackwell), so the bound survives composition, done here with the same FFT convolution as the
pessimistic PLD (:func:`persuasive.pld.pmf.convolve`). Below the window a loss is rounded up
(δ grows); above it, and outside the composition window, mass goes to :math:`+\infty`.

**Only the hockey-stick δ is valid for these pmfs.** Mass is moved *down* as well as up, so
their PDP tail :math:`P[\ell > \varepsilon]`, κ and bracket are *not* bounds; the PP / PDP
certificates use :func:`persuasive.pld.compose` (pessimistic rounding) and never this module.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats
from scipy.special import ndtr

from persuasive import _validation as v
from persuasive.classes import NeighbourPriors
from persuasive.closed.pdp import finite_pairs, loss_table
from persuasive.errors import ValidationError
from persuasive.mechanisms import (
    GaussianMechanism,
    GeometricMechanism,
    LaplaceMechanism,
    Mechanism,
)
from persuasive.pld.compose import Parts, split_parts
from persuasive.pld.laws import Pair
from persuasive.pld.pmf import STEP, TAIL_MASS, LossPMF, convolve, eps_array

#: Gauss-Legendre nodes per grid interval for the split ratio of a continuous loss density.
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(8)

Density = Callable[[NDArray[Any]], NDArray[Any]]


def _up_weight(a: NDArray[Any], u: NDArray[Any], step: float) -> NDArray[Any]:
    """Share of a loss u in [a, a + Δ] sent to the upper end a + Δ (E[e^{-ℓ}] preserved)."""
    return np.clip(np.expm1(a - u) / math.expm1(-step), 0.0, 1.0)


def _split(
    j: NDArray[np.int64],
    mass: NDArray[Any],
    up: NDArray[Any],
    lo: int,
    hi: int,
) -> NDArray[Any]:
    """Masses on grid indices lo..hi: ``mass * (1 - up)`` at j, ``mass * up`` at j + 1."""
    out = np.bincount(j - lo, weights=mass * (1.0 - up), minlength=hi - lo + 1)
    out += np.bincount(j + 1 - lo, weights=mass * up, minlength=hi - lo + 1)[: hi - lo + 1]
    return np.asarray(out[: hi - lo + 1], dtype=np.float64)


def _continuous(
    lo: int,
    hi: int,
    step: float,
    left: NDArray[Any],
    right: NDArray[Any],
    mass: NDArray[Any],
    density: Density,
) -> NDArray[Any]:
    r"""Connect-the-dots masses on indices lo..hi of a density on the intervals
    ``[left_i, right_i]`` inside :math:`[\Delta(lo + i), \Delta(lo + i + 1)]` with exact masses
    ``mass`` (the split ratio is a Gauss-Legendre average of :func:`_up_weight`)."""
    j = lo + np.arange(mass.size, dtype=np.int64)
    a = j * step
    half = 0.5 * (right - left)
    u = 0.5 * (left + right)[:, None] + half[:, None] * _NODES[None, :]
    f = density(u) * _WEIGHTS[None, :]
    num = np.sum(f * _up_weight(a[:, None], u, step), axis=1)
    den = np.sum(f, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        up = np.where(den > 0, num / den, 0.5)
    return _split(j, mass, up, lo, hi)


def gaussian_dots(sigma: float, step: float = STEP, tail_mass: float = TAIL_MASS) -> LossPMF:
    r"""Connect-the-dots loss pmf of the Gaussian mechanism (hockey-stick δ only).

    The loss :math:`\mathcal N(\mu, 2\mu)`, :math:`\mu = 1/(2\sigma^2)`, on
    :math:`[\mu - zs, \mu + zs]` (upper tail ``tail_mass / 2`` to :math:`+\infty`, lower tail
    rounded up to the first grid point).

    Examples
    --------
    >>> p = gaussian_dots(1.0, 1e-3)
    >>> round(float(p.hockey_stick(1.0)[0]), 6)  # exact: 0.126937
    0.126937
    """
    sigma = v.real("sigma", sigma, low=0.0, low_open=True)
    step = v.real("step", step, low=0.0, low_open=True)
    mu, s = 0.5 / sigma**2, 1.0 / sigma
    z = float(stats.norm.isf(tail_mass / 2.0))
    lo, hi = math.floor((mu - z * s) / step), math.ceil((mu + z * s) / step)
    edges = ((lo + np.arange(hi - lo + 1)) * step - mu) / s  # standardised grid points
    e1, e2 = edges[:-1], edges[1:]
    mass = np.where(e2 <= 0, ndtr(e2) - ndtr(e1), ndtr(-e1) - ndtr(-e2))
    grid = (lo + np.arange(hi - lo + 1)) * step
    out = _continuous(
        lo,
        hi,
        step,
        grid[:-1],
        grid[1:],
        mass,
        lambda u: np.exp(-0.5 * ((u - mu) / s) ** 2),
    )
    out[0] += ndtr(edges[0])  # lower tail, rounded up
    return LossPMF(step, lo, out, truncated=float(ndtr(-edges[-1])))


def laplace_dots(b: float, step: float = STEP) -> LossPMF:
    r"""Connect-the-dots loss pmf of the Laplace mechanism with scale b (hockey-stick δ only).

    Atoms :math:`\pm c` (c = 1/b) split between their neighbouring grid points, the continuous
    part :math:`dF = \tfrac14 e^{-(c-u)/2} du` on :math:`(-c, c)` interval by interval.

    Examples
    --------
    >>> p = laplace_dots(1.0, 1e-3)
    >>> round(float(p.hockey_stick(0.5)[0]), 6)  # exact: 1 - exp(-1/4) = 0.221199
    0.221199
    """
    b = v.real("scale", b, low=0.0, low_open=True)
    step = v.real("step", step, low=0.0, low_open=True)
    c = 1.0 / b
    lo, hi = math.floor(-c / step), math.ceil(c / step)
    j = np.arange(lo, hi, dtype=np.int64)
    u1 = np.maximum(j * step, -c)
    u2 = np.minimum((j + 1) * step, c)
    width = np.maximum(u2 - u1, 0.0)
    mass = 0.5 * np.exp(-(c - u1) / 2.0) * np.expm1(width / 2.0)
    out = _continuous(lo, hi, step, u1, u2, mass, lambda u: np.exp(u / 2.0))
    atoms = np.array([-c, c])
    ja = np.minimum(np.floor(atoms / step).astype(np.int64), hi - 1)
    up = _up_weight(ja * step, atoms, step)
    out += _split(ja, np.array([0.5 * math.exp(-c), 0.5]), up, lo, hi)
    return LossPMF(step, lo, out)


def atoms_dots(values: ArrayLike, probs: ArrayLike, step: float = STEP) -> LossPMF:
    r"""Connect-the-dots loss pmf of a discrete loss law (``+inf`` kept as an atom).

    Examples
    --------
    >>> p = atoms_dots([0.15, -0.15], [0.6, 0.4], 0.1)
    >>> p.offset, p.masses.round(4).tolist()
    (-2, [0.195, 0.205, 0.0, 0.2925, 0.3075])
    """
    vals = np.asarray(values, dtype=np.float64).ravel()
    p = np.asarray(probs, dtype=np.float64).ravel()
    keep = p > 0
    vals, p = vals[keep], p[keep]
    fin = np.isfinite(vals)
    inf_mass = float(p[~fin & (vals > 0)].sum())
    if not fin.any():
        return LossPMF(step, 0, np.zeros(1), inf_mass=inf_mass)
    x = vals[fin]
    j = np.floor(x / step).astype(np.int64)
    up = _up_weight(j * step, x, step)
    lo, hi = int(j.min()), int(j.max()) + 1
    return LossPMF(step, lo, _split(j, p[fin], up, lo, hi), inf_mass=inf_mass)


def noise_dots(mechanism: Mechanism, step: float = STEP) -> LossPMF | None:
    """Connect-the-dots pmf of a Laplace / Gaussian / geometric mechanism, else None."""
    if isinstance(mechanism, GaussianMechanism):
        return gaussian_dots(mechanism.sigma, step)
    if isinstance(mechanism, LaplaceMechanism):
        return laplace_dots(mechanism.scale, step)
    if isinstance(mechanism, GeometricMechanism):
        q = 1.0 / (1.0 + math.exp(-1.0 / mechanism.scale))
        c = 1.0 / mechanism.scale
        return atoms_dots([c, -c], [q, 1.0 - q], step)
    return None


@dataclass(frozen=True, eq=False)
class DotsPLD:
    """Connect-the-dots loss pmfs of a composition, one per distinct neighbour pair.

    Only :meth:`hockey_stick` is a bound; use :func:`persuasive.pld.compose` for the PDP tail.
    """

    pmfs: dict[Pair, LossPMF]

    @property
    def step(self) -> float:
        return next(iter(self.pmfs.values())).step

    def hockey_stick(self, eps: ArrayLike) -> NDArray[Any]:
        """Approximate-DP δ(ε), an upper bound (max over neighbour pairs)."""
        e = eps_array(eps)
        return np.asarray(np.max([p.hockey_stick(e) for p in self.pmfs.values()], axis=0))


def dots_compose(
    parts: Mechanism | Parts,
    step: float = STEP,
    priors: NeighbourPriors | None = None,
    tail_mass: float = TAIL_MASS,
) -> DotsPLD:
    r"""Hockey-stick δ(ε) of a composition with connect-the-dots pmfs (same parts as
    :func:`persuasive.pld.compose`).

    Examples
    --------
    >>> import persuasive as pp
    >>> d = dots_compose([(pp.GaussianMechanism(3.0), 9)], step=1e-3)
    >>> round(float(d.hockey_stick(1.0)[0]), 5)  # exact (one Gaussian, sigma 1): 0.12694
    0.12694
    """
    step, tail_mass, _, noise, finite = split_parts(parts, step, tail_mass, priors, noise_dots)
    per_pair: dict[Pair, list[tuple[LossPMF, int]]] = {}
    if not finite:
        per_pair[(0, 1)] = []
    for mat, k in finite:
        pairs = finite_pairs(priors or NeighbourPriors(), mat.shape[0])
        if isinstance(pairs, str):
            raise ValidationError(pairs)
        loss, p = loss_table(mat, pairs)
        for r, (a, b) in enumerate(pairs):
            per_pair.setdefault((int(a), int(b)), []).append((atoms_dots(loss[r], p[r], step), k))
    return DotsPLD({pair: convolve(noise + fin, tail_mass) for pair, fin in per_pair.items()})
