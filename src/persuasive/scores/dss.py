"""Dawid–Sebastiani scores: multivariate and marginal (§5.1, Bon et al. 2026)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _domains as dm
from persuasive import _tolerances as tol
from persuasive.errors import ValidationError
from persuasive.priors.base import Prior, as_dataset
from persuasive.scores.base import Score


def _point_tol(x: ArrayLike) -> NDArray[np.float64]:
    """How far a point-mass belief may sit from x and still count as right (rounding)."""
    return np.asarray(tol.OUTPUT_ATOL * (1.0 + np.abs(np.asarray(x, dtype=np.float64))))


@dataclass(frozen=True)
class DawidSebastiani(Score):
    r"""The Dawid–Sebastiani score (Dawid & Sebastiani 1999; Gneiting & Raftery 2007, eq. 27).

    .. math:: \mathrm{DSS}(P, x) = \log\det\Sigma_P + (x - \mu_P)^\top \Sigma_P^{-1}(x - \mu_P)

    Proper (not strictly) for any P with finite, non-singular covariance. A singular
    :math:`\Sigma_P` gives :math:`-\infty` (the belief has no spread in some direction).

    Examples
    --------
    >>> import persuasive as pp
    >>> q = pp.GaussianPrior([0.0, 0.0], [[1.0, 0.0], [0.0, 1.0]])
    >>> pp.DawidSebastiani()(q, [1.0, 1.0])
    2.0
    """

    def __call__(self, P: Prior, x: ArrayLike) -> float:
        xs = as_dataset(x)
        mu, cov = P.mean(), P.cov()
        sign, logdet = np.linalg.slogdet(cov)
        if sign <= 0:
            return -np.inf
        d = xs - mu
        return float(logdet + d @ np.linalg.solve(cov, d))

    def describe(self) -> dict[str, Any]:
        return {"score": "DawidSebastiani"}


@dataclass(frozen=True)
class MarginalDSS(Score):
    r"""The marginal Dawid–Sebastiani score :math:`D_i` (Def 8, §5.1, Bon et al. 2026).

    .. math:: D_i(Q, x) = \log\sigma_i^2(Q) + \frac{(x_i - \mu_i(Q))^2}{\sigma_i^2(Q)}

    where :math:`\mu_i, \sigma_i^2` are the marginal mean and variance of coordinate i under Q.
    A zero marginal variance gives :math:`D_i = -\infty` when :math:`x_i = \mu_i` (the Receiver
    knows :math:`x_i`; equality up to ``OUTPUT_ATOL`` relative rounding) and :math:`+\infty`
    otherwise.

    Parameters
    ----------
    i : int or None
        The coordinate (0-based). ``None`` is the family :math:`\mathcal I = \{D_i\}_{i=1}^n`
        of Prop 7: every coordinate, the worst one counting.

    Examples
    --------
    >>> import persuasive as pp
    >>> q = pp.GaussianPrior([0.0, 0.0], [3.0, 1.0])
    >>> round(pp.MarginalDSS(0)(q, [2.0, 0.0]), 6)
    2.431946
    """

    i: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "i", dm.SCORES["marginal_dss"]["i"].check("i", self.i))

    @property
    def is_family(self) -> bool:
        return self.i is None

    def members(self, n: int) -> list[Score]:
        if self.i is None:
            return [MarginalDSS(j) for j in range(n)]
        if self.i >= n:
            raise ValidationError(f"MarginalDSS index i must be < n = {n}; got {self.i}")
        return [self]

    def member_values(self, P: Prior, x: ArrayLike, n: int) -> NDArray[np.float64]:
        """Every :math:`D_i(P, x)` of the family at once (vectorised over i)."""
        if self.i is not None:
            return super().member_values(P, x, n)
        xs = as_dataset(x)
        d2 = (xs - P.mean()) ** 2
        var = P.marginal_var()
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.log(var) + d2 / var
        degenerate = np.where(d2 <= _point_tol(xs) ** 2, -np.inf, np.inf)
        return np.where(var > 0.0, out, degenerate)

    def __call__(self, P: Prior, x: ArrayLike) -> float:
        if self.i is None:
            raise ValidationError(
                "MarginalDSS() without i is the family of every D_i; "
                "use members(n) or MarginalDSS(i)"
            )
        xs = as_dataset(x)
        if self.i >= xs.shape[0]:
            raise ValidationError(f"MarginalDSS index i must be < n = {xs.shape[0]}; got {self.i}")
        mu = float(P.mean()[self.i])
        var = float(P.marginal_var()[self.i])
        d2 = (float(xs[self.i]) - mu) ** 2
        if var <= 0.0:  # the belief knows x_i: right (within rounding) or wrong
            return -np.inf if d2 <= float(_point_tol(xs[self.i])) ** 2 else np.inf
        return float(np.log(var) + d2 / var)

    def describe(self) -> dict[str, Any]:
        return {"score": "MarginalDSS", "i": self.i}
