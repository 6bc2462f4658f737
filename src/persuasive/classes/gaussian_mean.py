r"""The Gaussian prior class 𝒢^r_x of Prop 7 (§5.1, Bon et al. 2026; docs/math.md §8).

Write :math:`\Sigma = \mathrm{diag}(\sigma)\,\Phi\,\mathrm{diag}(\sigma)` with σ the vector of
marginal standard deviations (the paper's ":math:`\sigma^\top\Phi\sigma`" is a typo,
docs/math.md §10),
:math:`c_\Phi = \lambda_{\max}(\Phi)/\lambda_{\min}(\Phi)`,
:math:`\bar\mu = \frac1n\sum_i\mu_i` and
:math:`\bar\Sigma = \frac{1}{n^2}\mathbf 1^\top\Sigma\mathbf 1`:

.. math::

    \mathcal G^r_x = \Big\{\mathcal N(\mu, \Sigma) :
    \frac{(\bar x - \bar\mu)^2}{\bar\Sigma} \le r_1,\
    c_\Phi \le r_2\Big(1 - \frac{\max_i \sigma_i^2}{\|\sigma\|_2^2}\Big)\Big\},
    \qquad r_1 > 0,\ r_2 > 1.

Optionally (this library's extension, ``docs/release_means.md``) the Receiver's prior sd of the
mean is bounded, :math:`\sqrt{\bar\Sigma} \le V` (``max_mean_sd``): the subclass
:math:`\mathcal G^{r,V}_x = \mathcal G^r_x \cap \{\bar\Sigma \le V^2\}` against which noise
on the mean can be certified. ``None`` (the default) is Prop 7's class exactly.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _domains as dm
from persuasive import _tolerances as tol
from persuasive.classes.base import PriorClass
from persuasive.errors import ValidationError
from persuasive.priors import GaussianPrior, Prior, as_dataset


def class_terms(
    mean: NDArray[np.float64], cov: NDArray[np.float64], x: NDArray[np.float64]
) -> tuple[float, float, float]:
    """``(w², c_Φ, r₂-factor)`` of a Gaussian prior: the mean-error statistic
    :math:`w^2 = (\\bar x - \\bar\\mu)^2/\\bar\\Sigma`, the condition number of the correlation
    matrix, and :math:`1 - \\max_i\\sigma_i^2/\\|\\sigma\\|^2`."""
    n = mean.shape[0]
    var = np.diag(cov)
    sd = np.sqrt(var)
    phi = cov / np.outer(sd, sd)
    np.fill_diagonal(phi, 1.0)
    eig = np.linalg.eigvalsh(0.5 * (phi + phi.T))
    c_phi = float(eig[-1] / eig[0]) if eig[0] > 0 else np.inf
    sbar = float(cov.sum()) / n**2
    w2 = float((x.mean() - mean.mean()) ** 2 / sbar)
    return w2, c_phi, float(1.0 - var.max() / var.sum())


@dataclass(frozen=True)
class GaussianMeanClass(PriorClass):
    """𝒢^r_x: Gaussian priors whose mean error and correlation spread are bounded (Prop 7).

    Parameters
    ----------
    r1 : float
        Bound on the squared standardised error of the prior mean of x̄, ``r1 > 0``.
    r2 : float
        Bound on the correlation condition number relative to the variance spread, ``r2 > 1``
        (non-empty for n data points only when ``r2 >= n / (n - 1)``).
    max_mean_sd : float, optional
        Bound V on the prior standard deviation of the mean, :math:`\\sqrt{\\bar\\Sigma} \\le V`
        (``V > 0``); ``None`` (default) leaves it unbounded, i.e. Prop 7's class.

    Examples
    --------
    >>> import persuasive as pp
    >>> g = pp.GaussianMeanClass(1.0, 4.0)
    >>> g.contains(pp.GaussianPrior([0.0, 0.0], [3.0, 1.0]), x=[2.0, 0.0])
    True
    >>> g.contains(pp.GaussianPrior([0.0, 0.0], [3.0, 1.0]), x=[4.0, 0.0])
    False
    """

    r1: float
    r2: float
    max_mean_sd: float | None = None

    def __post_init__(self) -> None:
        for name, param in dm.PRIOR_CLASSES["gaussian_mean"].items():
            object.__setattr__(self, name, param.check(name, getattr(self, name)))

    def contains(self, prior: Prior, x: ArrayLike | None = None) -> bool:
        # The structured priors of the search audit (audit/gaussian_families.py) state their
        # terms in O(n); none exists unless that module is loaded, so it is not imported here.
        search = sys.modules.get("persuasive.audit.gaussian_families")
        structured = search is not None and isinstance(prior, search.StructuredGaussianPrior)
        if not isinstance(prior, GaussianPrior) and not structured:
            return False
        if x is None:
            raise ValidationError("GaussianMeanClass depends on x (through its mean); pass x")
        xs = as_dataset(x)
        if xs.shape[0] != prior.dim:
            raise ValidationError(f"x must have n = {prior.dim} entries; got {xs.shape[0]}")
        if structured:
            w2, c_phi, spread, sbar = prior.class_terms(xs)  # type: ignore[attr-defined]
        else:
            w2, c_phi, spread = class_terms(prior.mean_, prior.cov_, xs)  # type: ignore[attr-defined]
            sbar = float(prior.cov_.sum()) / prior.dim**2  # type: ignore[attr-defined]
        slack = 1.0 + tol.CLASS_RTOL
        inside = bool(w2 <= self.r1 * slack and c_phi <= self.r2 * spread * slack)
        if self.max_mean_sd is not None:
            inside = inside and sbar <= self.max_mean_sd**2 * slack
        return inside

    @property
    def kappa(self) -> float:
        """The Prop 7 bound r1 + log r2."""
        return float(self.r1 + np.log(self.r2))

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"class": "GaussianMeanClass", "r1": self.r1, "r2": self.r2}
        if self.max_mean_sd is not None:
            out["max_mean_sd"] = self.max_mean_sd
        return out
