r"""The interval privacy function and its score (Examples 1 and 3, Bon et al. 2026).

The Receiver names an interval of length at most s and "wins" if the Sender's value lies in it
(Example 1). The Bayes act is a length-s interval of maximal mass and the induced score
(Example 3, via Prop 2) is :math:`S(P, x) = 1 - \mathbf 1\{x \in d^P\}`.

Tie-break rule (used everywhere in this module): among maximal-mass intervals
:math:`[a, a + s]`, the one with the **smallest left end a**. For a point mass at c this is
:math:`[c - s, c]`; for a symmetric unimodal P with centre c it is the unique
:math:`[c - s/2, c + s/2]`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, stats

from persuasive import _domains as dm
from persuasive.errors import ValidationError
from persuasive.priors.base import Prior, as_dataset
from persuasive.priors.cells import IndependentCellsPrior
from persuasive.priors.discrete import DiscretePrior
from persuasive.priors.gaussian import GaussianPrior
from persuasive.scores.base import Score
from persuasive.scores.privacy_function import TIE_RTOL, PrivacyFunction

#: Quantile levels bracketing the search for continuous laws: a window of mass above
#: ``level`` must meet [ppf(level), ppf(1 - level)], so its left end is in that range minus s.
_QUANTILE_LEVELS: tuple[float, ...] = (1e-3, 1e-8, 1e-14)
_GRID_MIN, _GRID_MAX, _GRID_PER_S = 4097, 1_000_001, 64


def _ulp_slack(*values: float) -> float:
    """A few units in the last place: the rounding of ``b - s`` when an act is built."""
    return 4.0 * float(np.spacing(max(abs(w) for w in values)))


def _discrete_act(xs: NDArray[np.float64], p: NDArray[np.float64], s: float) -> tuple[float, float]:
    """Smallest-left-end maximiser of P([a, a+s]) for atoms xs (sorted, distinct) with mass p.

    Any maximal window can be slid left until its right end hits its largest atom without
    losing mass, so the smallest maximiser is right-anchored: [x_k - s, x_k], smallest such k.
    """
    lefts = xs - s
    first = np.searchsorted(xs, lefts, side="left")  # first atom >= x_k - s
    csum = np.concatenate([[0.0], np.cumsum(p)])
    mass = csum[np.arange(xs.size) + 1] - csum[first]
    best = float(mass.max())
    k = int(np.flatnonzero(mass >= best - TIE_RTOL * max(best, 1.0))[0])
    return float(lefts[k]), float(xs[k])


def _integer_law_act(dist: Any, s: float) -> tuple[float, float]:
    """Right-anchored windows [k - s, k] over integers k, masses from the cdf (exact)."""
    lo = float(dist.ppf(_QUANTILE_LEVELS[-1]))
    hi = float(dist.ppf(1.0 - _QUANTILE_LEVELS[-1])) + np.ceil(s)
    ks = np.arange(lo, hi + 1.0)
    mass = dist.cdf(ks) - dist.cdf(np.ceil(ks - s) - 1.0)
    best = float(mass.max())
    k = float(ks[np.flatnonzero(mass >= best - TIE_RTOL * max(best, 1.0))[0]])
    return k - s, k


def _continuous_act(dist: Any, s: float) -> tuple[float, float]:
    """Maximise g(a) = F(a+s) - F(a): global grid search, then solve g'(a) = p(a+s) - p(a) = 0.

    For a unimodal density g is quasi-concave and the root of p(a+s) = p(a) (brentq) is the
    exact maximiser; a flat top (e.g. a uniform law) is resolved to its smallest point by
    bisection on {a : p(a+s) <= p(a)}.
    """
    grid: NDArray[np.float64] = np.empty(0)
    g: NDArray[np.float64] = np.empty(0)
    for level in _QUANTILE_LEVELS:
        lo, hi = float(dist.ppf(level)) - s, float(dist.ppf(1.0 - level))
        n = int(min(max(_GRID_MIN, np.ceil((hi - lo) / s * _GRID_PER_S)), _GRID_MAX))
        grid = np.linspace(lo, hi, n)
        g = dist.cdf(grid + s) - dist.cdf(grid)
        if g.max() > level:
            break
    best = float(g.max())
    i = int(np.flatnonzero(g >= best - TIE_RTOL * max(best, 1.0))[0])
    left, right = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]

    def h(a: float) -> float:
        return float(dist.pdf(a + s) - dist.pdf(a))

    h_left, h_right = h(left), h(right)
    if h_left > 0.0 > h_right:
        a = float(optimize.brentq(h, left, right, xtol=1e-14, rtol=4 * np.finfo(float).eps))
    elif h_left > 0.0 and h_right == 0.0:  # flat top: smallest a with p(a+s) <= p(a)
        for _ in range(200):
            mid = 0.5 * (left + right)
            if mid in (left, right):
                break
            left, right = (mid, right) if h(mid) > 0.0 else (left, mid)
        a = float(right)
    else:  # not bracketed (e.g. multimodal): local bounded maximisation of g
        res = optimize.minimize_scalar(
            lambda t: -(dist.cdf(t + s) - dist.cdf(t)),
            bounds=(left, right),
            method="bounded",
            options={"xatol": 1e-12},
        )
        a = float(res.x) if -res.fun >= best else float(grid[i])
    return a, a + s


def _is_scipy(P: Any, kind: type) -> bool:
    return hasattr(P, "dist") and isinstance(P.dist, kind)


def interval_bayes_act(P: Any, s: float) -> tuple[float, float]:
    r"""The Bayes act :math:`d^P = [a_P, a_P + s]` of Example 1 (smallest maximising left end).

    .. math:: a_P = \min \arg\max_a P([a, a + s])

    Parameters
    ----------
    P : Prior or frozen scipy.stats distribution
        A univariate belief: ``GaussianPrior`` / ``DiscretePrior`` / ``IndependentCellsPrior``
        of dimension 1, or a frozen univariate :mod:`scipy.stats` law (continuous or discrete).
    s : float
        The interval length, s > 0.

    Returns
    -------
    (a, b) : tuple of float
        The interval's ends; ``b - a == s`` up to rounding.

    Notes
    -----
    Gaussian: :math:`a = \mu - s/2` (closed form; a zero variance is a point mass at μ, giving
    :math:`[\mu - s, \mu]`). Finite support: exact, scanning the intervals whose right end is an
    atom. Integer-valued scipy laws: exact scan of right ends k with masses from the cdf.
    Continuous scipy laws: grid search then a root of :math:`p(a+s) = p(a)`; exact (to
    root-finding precision) for unimodal densities, e.g. Gamma(2, 1), s = 1 gives
    :math:`a = 1/(e-1)` (docs/math.md §2).

    Examples
    --------
    >>> from scipy import stats
    >>> a, b = interval_bayes_act(stats.gamma(2.0), 1.0)
    >>> round(a, 9)
    0.581976707
    """
    s = dm.INTERVAL_S.check("s", s)
    if isinstance(P, Prior):
        if P.dim != 1:
            raise ValidationError(
                f"P must be a univariate belief (dim 1) for the interval score; got dim {P.dim}"
            )
        if isinstance(P, GaussianPrior):
            mu, var = float(P.mean_[0]), float(P.cov_[0, 0])
            return (mu - s / 2.0, mu + s / 2.0) if var > 0.0 else (mu - s, mu)
        if isinstance(P, DiscretePrior):
            keep = P.probs > 0.0  # support is sorted and distinct (np.unique)
            return _discrete_act(P.support[keep, 0], P.probs[keep], s)
        if isinstance(P, IndependentCellsPrior):
            cell = P.cells[0]
            if isinstance(cell, np.ndarray):
                keep = cell > 0.0
                return _discrete_act(np.flatnonzero(keep).astype(np.float64), cell[keep], s)
            return _integer_law_act(cell, s)
    elif _is_scipy(P, stats.rv_continuous):
        return _continuous_act(P, s)
    elif _is_scipy(P, stats.rv_discrete) and not hasattr(P.dist, "xk"):
        return _integer_law_act(P, s)
    raise ValidationError(
        f"P must be a univariate GaussianPrior, DiscretePrior or IndependentCellsPrior, or a "
        f"frozen scipy.stats univariate law; got {P!r}"
    )


def _scalar(x: ArrayLike) -> float:
    xs = as_dataset(x)
    if xs.shape[0] != 1:
        raise ValidationError(
            f"x must be a scalar dataset (n = 1) for the interval score; got {xs.tolist()}"
        )
    return float(xs[0])


@dataclass(frozen=True)
class IntervalPrivacyFunction(PrivacyFunction):
    r"""The interval privacy function (Example 1, Bon et al. 2026).

    .. math:: \rho(d, x) = \begin{cases} 0 & x \in d \text{ and } |d| \le s \\
              1 & \text{otherwise} \end{cases}, \qquad d = [a, b],\ a \le b

    Decisions are pairs ``(a, b)``. The Bayes act minimises :math:`1 - P(d)` over
    :math:`|d| \le s`: a length-s interval of maximal mass, smallest left end on ties (see
    :func:`interval_bayes_act`).

    Parameters
    ----------
    s : float
        The maximal interval length, s > 0.

    Examples
    --------
    >>> import persuasive as pp
    >>> rho = pp.IntervalPrivacyFunction(1.0)
    >>> rho((0.0, 1.0), 0.5), rho((0.0, 2.0), 0.5)
    (0.0, 1.0)
    """

    s: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "s", dm.INTERVAL_S.check("s", self.s))

    def __call__(self, d: Any, x: ArrayLike) -> float:
        try:
            a, b = (float(e) for e in d)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"d must be an interval (a, b) with a <= b; got {d!r}") from exc
        if not a <= b:
            raise ValidationError(f"d must be an interval (a, b) with a <= b; got {d!r}")
        xv = _scalar(x)
        short = b - a <= self.s + _ulp_slack(a, b, self.s)
        return 0.0 if (short and a <= xv <= b) else 1.0

    def bayes_act(self, P: Any) -> tuple[float, float]:
        return interval_bayes_act(P, self.s)

    def describe(self) -> dict[str, Any]:
        return {"privacy_function": "IntervalPrivacyFunction", "s": self.s}


@dataclass(frozen=True)
class IntervalScore(Score):
    r"""The interval privacy score (Example 3, Bon et al. 2026).

    .. math:: S(P, x) = 1 - \mathbf 1\{x \in d^P\}, \qquad d^P = [a_P, a_P + s],
              \quad a_P \in \arg\max_a P([a, a + s])

    Tie-break: the smallest maximising left end :math:`a_P`. The Bayes act is from the text;
    the score formula is [RECON, docs/math.md §2]. The score is proper (Prop 2) but **not strictly
    proper**, and it is **not** the Gneiting–Raftery interval score (which scores a central
    prediction interval by its width and exceedances).

    The relative loss :math:`\Delta = \mathbf 1\{x \in d^{Q_T}\} - \mathbf 1\{x \in d^Q\}`
    takes values in {-1, 0, 1}.

    Parameters
    ----------
    s : float
        The interval length, s > 0.

    Examples
    --------
    >>> import persuasive as pp
    >>> q = pp.GaussianPrior([0.0], [[1.0]])
    >>> pp.IntervalScore(1.0).bayes_act(q)
    (-0.5, 0.5)
    >>> pp.IntervalScore(1.0)(q, 0.4), pp.IntervalScore(1.0)(q, 0.6)
    (0.0, 1.0)
    """

    s: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "s", dm.INTERVAL_S.check("s", self.s))

    def bayes_act(self, P: Any) -> tuple[float, float]:
        """The interval :math:`d^P = (a_P, a_P + s)`; see :func:`interval_bayes_act`."""
        return interval_bayes_act(P, self.s)

    def __call__(self, P: Any, x: ArrayLike) -> float:
        a, b = self.bayes_act(P)
        xv = _scalar(x)
        return 0.0 if a <= xv <= b else 1.0

    def _evaluate_many(self, P: Any, xs: NDArray[np.float64]) -> NDArray[np.float64]:
        """S(P, x) for datasets of shape (m, 1), the act computed once."""
        a, b = self.bayes_act(P)
        col = np.asarray(xs, dtype=np.float64).reshape(-1)
        return np.where((a <= col) & (col <= b), 0.0, 1.0)

    def describe(self) -> dict[str, Any]:
        return {"score": "IntervalScore", "s": self.s}
