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
from persuasive.scores.base import Score, score_differences


def _point_tol(x: ArrayLike) -> NDArray[np.float64]:
    """How far a point-mass belief may sit from x and still count as right (rounding)."""
    return np.asarray(tol.OUTPUT_ATOL * (1.0 + np.abs(np.asarray(x, dtype=np.float64))))


def _dss_values(
    mean: NDArray[np.float64], var: NDArray[np.float64], x: NDArray[np.float64]
) -> NDArray[np.float64]:
    r""":math:`\log\sigma^2 + ((x - \mu)/\sigma)^2` per coordinate (standardised first: no
    overflow of (x − μ)²); a zero variance gives −∞ when x = μ (within rounding), else +∞."""
    d = x - mean
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = np.log(var) + (d / np.sqrt(var)) ** 2
    degenerate = np.where(np.abs(d) <= _point_tol(x), -np.inf, np.inf)
    return np.asarray(np.where(var > 0.0, out, degenerate), dtype=np.float64)


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

    def _coords(self, n: int) -> slice | list[int]:
        if self.i is None:
            return slice(None)
        if self.i >= n:
            raise ValidationError(f"MarginalDSS index i must be < n = {n}; got {self.i}")
        return [self.i]

    def member_values(self, P: Prior, x: ArrayLike, n: int) -> NDArray[np.float64]:
        """Every :math:`D_i(P, x)` of the family at once (vectorised over i)."""
        if self.i is not None:
            return super().member_values(P, x, n)
        return _dss_values(P.mean(), P.marginal_var(), as_dataset(x))

    def member_losses(self, prior: Prior, post: Prior, x: ArrayLike, n: int) -> NDArray[np.float64]:
        r""":math:`D_i(Q, x) - D_i(Q_T, x)` for every member, as
        :math:`\log(\sigma_i^2/\sigma_{T,i}^2) + (z_i - z_{T,i})(z_i + z_{T,i})` with the
        standardised errors :math:`z = (x_i - \mu_i)/\sigma_i`: no cancellation of two large
        log-variances (e.g. σ² = 1e308) and no overflow of :math:`(x_i - \mu_i)^2`. A zero
        variance gives the ±∞ scores of :meth:`__call__` and the ∞ − ∞ = 0 convention."""
        xs = as_dataset(x)
        idx = self._coords(xs.shape[0])
        var_q, var_t = prior.marginal_var()[idx], post.marginal_var()[idx]
        xi = xs[idx]
        d_q, d_t = xi - prior.mean()[idx], xi - post.mean()[idx]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            z_q = d_q / np.sqrt(var_q)
            z_t = d_t / np.sqrt(var_t)
            ratio = var_q / var_t
            log_ratio = np.where(
                np.isfinite(ratio) & (ratio > 0.0), np.log(ratio), np.log(var_q) - np.log(var_t)
            )
            regular = log_ratio + (z_q - z_t) * (z_q + z_t)
        both = (var_q > 0.0) & (var_t > 0.0)
        if both.all():
            return np.asarray(regular, dtype=np.float64)
        fallback = score_differences(
            _dss_values(prior.mean()[idx], var_q, xi), _dss_values(post.mean()[idx], var_t, xi)
        )
        return np.where(both, regular, fallback)

    def __call__(self, P: Prior, x: ArrayLike) -> float:
        if self.i is None:
            raise ValidationError(
                "MarginalDSS() without i is the family of every D_i; "
                "use members(n) or MarginalDSS(i)"
            )
        xs = as_dataset(x)
        if self.i >= xs.shape[0]:
            raise ValidationError(f"MarginalDSS index i must be < n = {xs.shape[0]}; got {self.i}")
        i = self.i
        return float(
            _dss_values(P.mean()[i : i + 1], P.marginal_var()[i : i + 1], xs[i : i + 1])[0]
        )

    def describe(self) -> dict[str, Any]:
        return {"score": "MarginalDSS", "i": self.i}
