r"""The exact loss of one Receiver of a magnitude cell, the sharp witness, and an audit.

A Receiver C knows :math:`x_C` and learns :math:`s = \mathbf 1^\top x_R`, the total of the others
(``docs/magnitude.md`` §1). With its prior :math:`\mathcal N(\mu, \Sigma)` on :math:`x_R`,
:math:`b = \Sigma\mathbf 1` and :math:`v = \mathbf 1^\top\Sigma\mathbf 1`, the posterior
marginal of :math:`x_i` is Gaussian with

.. math::

    m_i = \mu_i + \frac{b_i (s - \mathbf 1^\top\mu)}{v},\qquad
    \tau_i^2 = \Sigma_{ii} - \frac{b_i^2}{v},\qquad
    \Delta_i = \log\frac{\Sigma_{ii}}{\tau_i^2} + \frac{(x_i - \mu_i)^2}{\Sigma_{ii}}
        - \frac{(x_i - m_i)^2}{\tau_i^2},

the marginal Dawid–Sebastiani loss (Prop 7's posterior with :math:`A = \mathbf 1^\top`, Bon et
al. 2026). :func:`witness` is the prior of the class attaining the certificate when
:math:`r_2 = 1`; :func:`audit_cells` evaluates the witness and random members of the class and
returns the largest loss it found per cell — a lower bound on the worst case, never above the
certificate (``tests/test_magnitude.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _validation as v
from persuasive.errors import ValidationError
from persuasive.magnitude.certificate import MagnitudeClass
from persuasive.magnitude.contributors import Contributions

__all__ = ["audit_cells", "class_member", "loss", "witness"]


def _rest(n: int, coalition: Sequence[int], i: int) -> NDArray[np.int64]:
    known = set(int(j) for j in coalition)
    if i in known or not 0 <= i < n or any(not 0 <= j < n for j in known):
        raise ValidationError(
            f"target {i} and coalition {sorted(known)} must be distinct contributors of 0..{n - 1}"
        )
    return np.asarray([j for j in range(n) if j not in known], dtype=np.int64)


def loss(
    values: ArrayLike, coalition: Sequence[int], i: int, mean: ArrayLike, cov: ArrayLike
) -> float:
    """The exact marginal DSS loss of contribution ``i`` for the Receiver who knows
    ``values[coalition]`` and has prior N(mean, cov) on the other contributions (in the order
    of the others), after the cell total is published. ∞ when ``i`` is the only other."""
    x = np.asarray(values, dtype=float)
    rest = _rest(x.size, coalition, i)
    mu = np.asarray(mean, dtype=float)
    sig = np.asarray(cov, dtype=float)
    if rest.size == 1:
        return math.inf
    xr = x[rest]
    k = int(np.flatnonzero(rest == i)[0])
    b = sig.sum(axis=1)
    var_s = float(b.sum())
    m = mu[k] + b[k] * (xr.sum() - mu.sum()) / var_s
    tau2 = float(sig[k, k] - b[k] ** 2 / var_s)
    d = xr[k] - mu[k]
    return float(math.log(sig[k, k] / tau2) + d * d / sig[k, k] - (xr[k] - m) ** 2 / tau2)


def _mean_for(xr: NDArray[np.float64], sig: NDArray[np.float64], k: int, w: float) -> Any:
    """The prior mean with whitened error w on the learnt total and the worst z_k = w/ρ_k."""
    b = sig.sum(axis=1)
    sd_s = math.sqrt(float(b.sum()))
    sd_k = math.sqrt(float(sig[k, k]))
    rho = float(b[k]) / (sd_k * sd_s)
    mu = np.empty_like(xr)
    mu[k] = xr[k] - sd_k * w / rho
    others = np.arange(xr.size) != k
    mu[others] = (xr.sum() - w * sd_s - mu[k]) / int(others.sum())
    return mu


def class_member(
    values: ArrayLike,
    coalition: Sequence[int],
    i: int,
    cls: MagnitudeClass,
    *,
    spreads: ArrayLike,
    phi: ArrayLike | None = None,
    w: float | None = None,
    sizes: ArrayLike | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """A prior of the class on the others: sds ``spreads·x`` (``spreads·sizes`` with public
    sizes; ratio ≤ γ checked), correlation ``phi`` (c_Φ ≤ r2 checked; identity by default)
    and the mean with error ``w`` (default √r1) on the learnt total and the worst z_i for that
    Σ."""
    x = np.asarray(values, dtype=float)
    rest = _rest(x.size, coalition, i)
    xr = x[rest]
    scale = xr if sizes is None else np.asarray(sizes, dtype=float)[rest]
    s = np.asarray(spreads, dtype=float)
    if s.shape != xr.shape or np.any(s <= 0) or s.max() / s.min() > cls.gamma * (1 + 1e-12):
        raise ValidationError(f"spreads must be {xr.size} positive numbers within a factor γ")
    p = np.eye(xr.size) if phi is None else np.asarray(phi, dtype=float)
    eig = np.linalg.eigvalsh(p)
    if eig[0] <= 0 or eig[-1] / eig[0] > cls.r2 * (1 + 1e-9) or np.any(np.diag(p) != 1.0):
        raise ValidationError("phi must be a correlation matrix with condition number ≤ r2")
    sd = s * scale
    sig = p * np.outer(sd, sd)
    w = math.sqrt(cls.r1) if w is None else v.real("w", w)
    if w * w > cls.r1 * (1 + 1e-12):
        raise ValidationError(f"w must satisfy w² ≤ r1 = {cls.r1}; got {w}")
    return _mean_for(xr, sig, int(np.flatnonzero(rest == i)[0]), w), sig


def witness(
    values: ArrayLike,
    coalition: Sequence[int],
    i: int,
    cls: MagnitudeClass,
    sizes: ArrayLike | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The sharp witness (``docs/magnitude.md`` §2): Φ = I, spread γ on ``i`` and 1 on the
    others, w² = r1 and z_i = w/ρ_i. Its loss is the certificate when r2 = 1."""
    x = np.asarray(values, dtype=float)
    rest = _rest(x.size, coalition, i)
    s = np.where(rest == i, cls.gamma, 1.0)
    return class_member(x, coalition, i, cls, spreads=s, sizes=sizes)


def _random_phi(n: int, r2: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """A random correlation matrix on the class boundary c_Φ = r2 (or inside it):
    (1 − t) I + t Φ0 has affine eigenvalues, so t is solved in closed form."""
    if r2 == 1.0 or n == 1:
        return np.eye(n)
    g = rng.normal(size=(n, n + 2))
    c0 = g @ g.T
    d = np.sqrt(np.diag(c0))
    p0 = c0 / np.outer(d, d)
    eig = np.linalg.eigvalsh(p0)
    lo, hi = float(eig[0]), float(eig[-1])
    t = min(1.0, (r2 - 1.0) / (r2 - 1.0 + hi - r2 * lo)) * (1 - 1e-9)
    out = (1 - t) * np.eye(n) + t * p0
    np.fill_diagonal(out, 1.0)
    return out


def audit_cells(
    c: Contributions,
    cls: MagnitudeClass,
    insiders: int = 1,
    *,
    draws: int = 20,
    rng: Any = None,
    max_size: int = 60,
) -> NDArray[np.float64]:
    """The largest loss found in each cell (NaN for cells above ``max_size`` contributors or
    with none; ∞ when exposed): the largest contribution against the outsider and the worst
    coalition of at most m (its m largest others), by the witness and ``draws`` random members
    of the class (random correlations on the boundary c_Φ = r2, random spreads in [1, γ],
    random w² ≤ r1). Not vectorised: a check on small cells, not a release path."""
    m = v.integer("insiders", insiders, low=0)
    gen = v.rng("rng", rng)
    out = np.full(c.n_cells, np.nan)
    count = c.count
    for cell in np.flatnonzero((count >= 1) & (count <= max_size)):
        x = c.of_cell(int(cell))
        start = int(c.start[cell])
        sizes = None if c.size is None else c.size[start : start + x.size]
        by = np.argsort(-(x if sizes is None else sizes), kind="stable")
        i = int(by[0])  # the largest (by the spreads' scale), against its m largest others
        best = -math.inf
        for coalition in ([], [int(j) for j in by[1 : min(m, x.size - 1) + 1]]):
            if x.size - len(coalition) <= 1:
                best = math.inf
                continue
            best = max(best, loss(x, coalition, i, *witness(x, coalition, i, cls, sizes)))
            n_rest = x.size - len(coalition)
            for _ in range(draws):
                s = gen.uniform(1.0, cls.gamma, size=n_rest)
                phi = _random_phi(n_rest, cls.r2, gen)
                w = math.sqrt(cls.r1) * gen.uniform(-1.0, 1.0)
                if abs(w) < 1e-9:
                    continue
                mu, sig = class_member(x, coalition, i, cls, spreads=s, phi=phi, w=w, sizes=sizes)
                best = max(best, loss(x, coalition, i, mu, sig))
        out[cell] = best
    return out
