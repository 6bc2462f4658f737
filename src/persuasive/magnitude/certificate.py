r"""The certified κ of each contribution and each cell of a magnitude table.

This library's extension of Prop 7 (Bon et al. 2026); proof in ``docs/magnitude.md`` §2. A
Receiver C (an outsider, C = ∅, or a coalition of at most m insiders who know their own values)
learns the total of the others :math:`R = J\setminus C`; its Gaussian prior on :math:`x_R` is in
the class :class:`MagnitudeClass`. For a contribution :math:`i \in R`,

.. math::

    \Delta_i \le \kappa_i^C = r_1 + \log r_2
        + \log\Big(1 + \frac{\gamma^2 x_i^2}{\sum_{j \in R\setminus\{i\}} x_j^2}\Big),

sharp when :math:`r_2 = 1`, and :math:`\kappa_i^C = \infty` (exposed) when
:math:`R = \{i\}`. The worst coalition of at most m is the m largest others, so with the cell's
values sorted :math:`x_{(1)} \ge x_{(2)} \ge \dots`,
:math:`\kappa_{\rm cell}(m) = r_1 + \log r_2 + \log(1 + \gamma^2 x_{(1)}^2/\sum_{k \ge m+2}
x_{(k)}^2)`. Every sum is of non-negative terms; the ratio is enlarged by
:math:`(1 + 4 n \epsilon)` so that rounding errs towards a larger κ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from persuasive import _validation as v
from persuasive.magnitude.contributors import Contributions

__all__ = ["MagnitudeCertificate", "MagnitudeClass", "certify_cells", "kappa_of_ratio"]

#: The relative rounding margin per summed term.
_EPS = 4.0 * float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class MagnitudeClass:
    r"""The Receivers' Gaussian priors on the contributions they do not know
    (``docs/magnitude.md`` §1):

    .. math::

        \mathcal M^{r,\gamma}_{x_R} = \Big\{\mathcal N(\mu, \Sigma) :
        \frac{(\mathbf 1^\top x_R - \mathbf 1^\top\mu)^2}{\mathbf 1^\top\Sigma\mathbf 1} \le r_1,\
        c_\Phi \le r_2,\ \sigma_j = s_j x_j,\ \frac{\max s}{\min s} \le \gamma\Big\}.

    Parameters
    ----------
    r1 : float
        Bound on the squared whitened error of the prior guess of the learnt total, > 0.
    r2 : float
        Bound on the condition number of the prior correlation matrix, ≥ 1 (1: independent).
    gamma : float
        How unequal the relative prior spreads of the contributions may be, ≥ 1.

    Examples
    --------
    >>> cls = MagnitudeClass(1.0)
    >>> round(cls.base, 6), cls.exact
    (1.0, True)
    """

    r1: float = 1.0
    r2: float = 1.0
    gamma: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "r1", v.real("r1", self.r1, low=0.0, low_open=True))
        object.__setattr__(self, "r2", v.real("r2", self.r2, low=1.0))
        object.__setattr__(self, "gamma", v.real("gamma", self.gamma, low=1.0))

    @property
    def base(self) -> float:
        r""":math:`r_1 + \log r_2`: the κ of a contribution that is a vanishing share."""
        return float(self.r1 + math.log(self.r2))

    @property
    def exact(self) -> bool:
        """Whether the certificate is attained (``r2 = 1``: independent priors)."""
        return self.r2 == 1.0

    def describe(self) -> dict[str, Any]:
        return {"class": "magnitude_gaussian", "r1": self.r1, "r2": self.r2, "gamma": self.gamma}


def kappa_of_ratio(cls: MagnitudeClass, ratio: NDArray[np.float64]) -> NDArray[np.float64]:
    r""":math:`r_1 + \log r_2 + \log(1 + \gamma^2 \cdot \mathrm{ratio})`; ∞ where ratio is ∞."""
    g2 = float(np.float64(cls.gamma) ** 2) if cls.gamma < 1e150 else math.inf
    if math.isfinite(g2):
        with np.errstate(over="ignore"):
            return cls.base + np.log1p(g2 * ratio)
    # γ² overflows: log(1 + γ² r) = 2 log γ + log(r + γ⁻²), γ⁻² = 0 at this size
    with np.errstate(divide="ignore"):
        return np.where(ratio > 0, cls.base + 2.0 * math.log(cls.gamma) + np.log(ratio), 0.0)


def _ratio(num: NDArray[np.float64], den: NDArray[np.float64], n: NDArray[np.int64]) -> Any:
    """num/den enlarged by the rounding margin; ∞ where den is 0 (exposed)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.inf)
    return r * (1.0 + _EPS * (n + 2))


@dataclass(frozen=True)
class MagnitudeCertificate:
    """Certified κ of every contribution and cell (arrays by contributor and by cell).

    Attributes
    ----------
    insiders : int
        m, the largest coalition covered.
    contributor_outsider, contributor_insider : ndarray
        κ of each contribution against the outsider and against the worst coalition of at
        most m others (∞ when exposed).
    cell_by_size : ndarray, shape (n_cells, min(m, max n - 1) + 1)
        ``[c, k]``: the cell's κ against the worst coalition of up to k insiders (the last
        column also for every k beyond: no cell has more than max n - 1 others).
    worst : ndarray of int64
        The index (into the contributors) of each cell's worst contribution (its largest, by
        value or by the public size), -1 for a cell with no contributor.
    """

    cls: MagnitudeClass
    insiders: int
    contributor_outsider: NDArray[np.float64]
    contributor_insider: NDArray[np.float64]
    cell_by_size: NDArray[np.float64]
    count: NDArray[np.int64]
    worst: NDArray[np.int64]

    @property
    def cell_outsider(self) -> NDArray[np.float64]:
        return self.cell_by_size[:, 0]

    @property
    def cell(self) -> NDArray[np.float64]:
        """Each cell's κ against outsiders and every coalition of at most m insiders."""
        return self.cell_by_size[:, -1]

    @property
    def exposed(self) -> NDArray[np.bool_]:
        """Cells some covered Receiver reads a contribution off: 1 ≤ n ≤ m + 1."""
        return (self.count >= 1) & (self.count <= self.insiders + 1)


def certify_cells(c: Contributions, cls: MagnitudeClass, insiders: int = 1) -> MagnitudeCertificate:
    r"""The certificate of every contribution and cell (vectorised, O(N) after the sort).

    Parameters
    ----------
    c : Contributions
    cls : MagnitudeClass
    insiders : int
        m ≥ 0, the largest insider coalition covered (0: outsiders only).

    Returns
    -------
    MagnitudeCertificate

    Examples
    --------
    >>> from persuasive.magnitude.contributors import from_cells
    >>> cert = certify_cells(from_cells([[3.0, 1.0, 1.0], [2.0, 2.0]]), MagnitudeClass(1.0), 1)
    >>> cert.cell.round(4).tolist(), cert.exposed.tolist()  # 1 + log(1 + 9/1); two exposed
    ([3.3026, inf], [False, True])
    """
    m = v.integer("insiders", insiders, low=0)
    n_cells = c.n_cells
    count = c.count
    # the spreads scale with c.scale (the value, or a public size): rank by it within cells
    order = np.arange(c.cell.size) if c.size is None else np.lexsort((-c.scale, c.cell)).astype(int)
    cell = c.cell[order]
    # κ is invariant to scaling a cell: square the scales relative to the cell's largest, so
    # that no square overflows (one that underflows to 0 only shrinks a tail: κ errs upwards)
    peak = np.zeros(n_cells)
    np.maximum.at(peak, cell, c.scale[order])
    q = (c.scale[order] / np.where(peak > 0, peak, 1.0)[cell]) ** 2
    rank = np.arange(cell.size, dtype=np.int64) - c.start[cell]

    def back(x: NDArray[np.float64]) -> NDArray[np.float64]:  # sorted order -> c's order
        out = np.empty_like(x)
        out[order] = x
        return out

    def segment(w: NDArray[np.float64]) -> NDArray[np.float64]:  # Σ of w per cell
        return np.asarray(np.bincount(cell, weights=w, minlength=n_cells), dtype=np.float64)

    def tail(k: int) -> NDArray[np.float64]:  # Σ_{rank ≥ k} q per cell
        return segment(np.where(rank >= k, q, 0.0))

    def at(k: int) -> NDArray[np.float64]:  # q of rank k per cell (0 if none)
        return segment(np.where(rank == k, q, 0.0))

    n_of = count[cell]
    # a coalition of n - 1 or more others already leaves a cell's largest alone: columns past
    # the largest cell's n - 1 repeat the last, so at most max(n) segment sums are computed
    m_eff = min(m, max(int(count.max(initial=1)) - 1, 0))
    by_size = np.zeros((n_cells, m_eff + 1))
    top = at(0)
    for k in range(m_eff + 1):  # m_eff + 1 segment sums; m_eff ≤ the largest cell's size
        by_size[:, k] = kappa_of_ratio(cls, _ratio(top, tail(k + 1), count))
    by_size[count == 0, :] = 0.0  # no contributor: nothing to learn
    by_size[np.isnan(by_size)] = np.inf  # never certify a κ that is not a number

    def per_contributor(k: int) -> NDArray[np.float64]:
        # the worst coalition of ≤ k others: the k largest others. Inside the top k + 1 the
        # rest is Σ_{rank ≥ k+1}; below, it is q_(k) + Σ_{rank ≥ k+1} − q_i (≥ q_(k) ≥ q_i).
        t = tail(k + 1)[cell]
        rest = np.where(rank <= k, t, at(k)[cell] + np.maximum(t - q, 0.0))
        kappa = kappa_of_ratio(cls, _ratio(q, rest, n_of))
        return back(np.where(np.isnan(kappa), np.inf, kappa))

    worst = np.full(n_cells, -1, dtype=np.int64)
    firsts = np.flatnonzero(rank == 0)
    worst[cell[firsts]] = order[firsts]
    return MagnitudeCertificate(
        cls=cls,
        insiders=m,
        contributor_outsider=per_contributor(0),
        contributor_insider=per_contributor(m_eff),
        cell_by_size=by_size,
        count=count,
        worst=worst,
    )
