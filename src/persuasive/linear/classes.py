r"""The prior class :math:`\mathcal G^r_{A,x}`: Prop 7's class 𝒢^r_x generalised to A.

This library's extension of Prop 7 (Bon et al. 2026); proof in ``docs/linear.md`` (Thm 3).
With :math:`\Sigma = \mathrm{diag}(\sigma)\Phi\,\mathrm{diag}(\sigma)`,
:math:`c_\Phi = \lambda_{\max}(\Phi)/\lambda_{\min}(\Phi)` and
:math:`D_i(\sigma) = \min_c\|\mathrm{diag}(\sigma)(e_i - A^\top c)\|^2` (the variance of
:math:`x_i` given Ax under the independent prior with the same sds),

.. math::

    \mathcal G^r_{A,x} = \Big\{\mathcal N(\mu, \Sigma) :
    \|(A\Sigma A^\top)^{+1/2}A(x - \mu)\|^2 \le r_1,\
    c_\Phi \le r_2 \min_i \frac{D_i(\sigma)}{\sigma_i^2}
    \ [,\ \lambda_{\max}(A\Sigma A^\top) \le V^2]\Big\}.

For :math:`A = \mathbf 1^\top/n`, :math:`D_i/\sigma_i^2 = 1 - \sigma_i^2/\|\sigma\|^2` and this is
𝒢^r_x exactly. If some :math:`e_i` lies in A's row space (an exposed individual),
:math:`D_i \equiv 0` and the class is empty: no certificate is issued. It is also empty when
a group of records has :math:`r_2 < N_J/(N_J - d_J)` (``docs/linear.md`` §4,
:mod:`persuasive.linear.emptiness`), e.g. :math:`r_2 < n_g/(n_g - 1)` for the mean of a group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _domains as dm
from persuasive import _tolerances as tol
from persuasive import _validation as v
from persuasive.classes.base import PriorClass
from persuasive.errors import ValidationError
from persuasive.linear.analysis import analyse, check_A
from persuasive.linear.exposure import pattern_spread
from persuasive.linear.structured import StructuredCovariance
from persuasive.mechanisms.linear import noise_covariance
from persuasive.priors import GaussianPrior, Prior, as_dataset


def variance_spread(A: ArrayLike, sd: ArrayLike) -> NDArray[np.float64]:
    r""":math:`D_i(\sigma)/\sigma_i^2 = 1 - \rho_i^2` under :math:`\Sigma = \mathrm{diag}(\sigma^2)`
    (O(nk²)); 0 for individuals exposed by A.

    Examples
    --------
    >>> from persuasive.linear import variance_spread
    >>> variance_spread([[1.0, 1.0]], [3**0.5, 1.0]).round(6).tolist()  # 1 - σ_i²/‖σ‖²
    [0.25, 0.75]
    """
    a = check_A(A)
    s = v.array("sd", sd, ndim=1)
    if s.shape[0] == a.shape[1] and s[0] != 0 and np.all(s == s[0]):  # equal variances
        fast = pattern_spread(a)
        if fast is not None:
            return fast.spread
    an = analyse(np.zeros(a.shape[1]), StructuredCovariance(s**2), a)
    return np.where(an.exposed, 0.0, an.post_var / an.prior_var)


def exposed_by(A: ArrayLike) -> NDArray[np.bool_]:
    """Individuals i with :math:`e_i` in the row space of A (exposed under every prior)."""
    a = check_A(A)
    return np.asarray(variance_spread(a, np.ones(a.shape[1])) <= tol.VAR_RTOL)


def class_terms(
    prior: GaussianPrior, x: NDArray[np.float64], A: NDArray[np.float64]
) -> tuple[float, float, float, float]:
    """``(u², c_Φ, min_i D_i/σ_i², λ_max(AΣAᵀ))`` of a prior (dense, O(n³) for c_Φ)."""
    cov = prior.cov_
    sd = np.sqrt(np.diag(cov))
    phi = cov / np.outer(sd, sd)
    eig = np.linalg.eigvalsh(0.5 * (phi + phi.T))
    c_phi = float(eig[-1] / eig[0]) if eig[0] > 0 else math.inf
    an = analyse(prior.mean_, cov, A)
    y = an._y(A @ x)
    lam = float(np.linalg.eigvalsh(A @ cov @ A.T)[-1])
    return float(y @ y), c_phi, float(variance_spread(A, sd).min()), lam


@dataclass(frozen=True)
class LinearGaussianClass(PriorClass):
    """:math:`\\mathcal G^r_{A,x}`: Gaussian priors with bounded statistic error and
    correlation spread (``docs/linear.md``; this library's extension of Prop 7).

    Parameters
    ----------
    r1 : float
        Bound on the whitened squared error of the prior on the statistics, ``r1 > 0``.
    r2 : float
        Bound on :math:`c_\\Phi / \\min_i(D_i/\\sigma_i^2)`, ``r2 > 1``.
    A : array_like, optional
        Bind the statistics; otherwise pass ``A=`` to :meth:`contains` (certificates use the
        mechanism's A, and require it to equal a bound A).
    max_stat_sd : float, optional
        V with :math:`\\lambda_{\\max}(A\\Sigma A^\\top) \\le V^2`: needed for noise to help.

    Examples
    --------
    >>> import persuasive as pp
    >>> from persuasive.linear import LinearGaussianClass
    >>> g = LinearGaussianClass(1.0, 4.0, A=[[0.5, 0.5]])
    >>> g.contains(pp.GaussianPrior([0.0, 0.0], [3.0, 1.0]), x=[2.0, 0.0])
    True
    >>> round(g.class_kappa(), 10)
    2.3862943611
    """

    r1: float
    r2: float
    A: Any = field(default=None)
    max_stat_sd: float | None = None

    def __post_init__(self) -> None:
        for name, param in dm.PRIOR_CLASSES["linear_gaussian"].items():
            object.__setattr__(self, name, param.check(name, getattr(self, name)))
        if self.A is not None:
            a = check_A(self.A)
            a.setflags(write=False)
            object.__setattr__(self, "A", a)

    def _a(self, A: ArrayLike | None, n: int | None = None) -> NDArray[np.float64]:
        if A is None:
            if self.A is None:
                raise ValidationError("LinearGaussianClass needs the statistics A: pass A=...")
            return check_A(self.A, n)
        a = check_A(A, n)
        if self.A is not None and (a.shape != self.A.shape or not np.allclose(a, self.A)):
            raise ValidationError("A differs from the A bound to this LinearGaussianClass")
        return a

    def contains(
        self, prior: Prior, x: ArrayLike | None = None, A: ArrayLike | None = None
    ) -> bool:
        if not isinstance(prior, GaussianPrior) or prior.allow_singular:
            return False
        if x is None:
            raise ValidationError("LinearGaussianClass depends on x (through A x); pass x")
        xs = as_dataset(x)
        a = self._a(A, prior.dim)
        if xs.shape[0] != prior.dim:
            raise ValidationError(f"x must have n = {prior.dim} entries; got {xs.shape[0]}")
        u2, c_phi, spread, lam = class_terms(prior, xs, a)
        slack = 1.0 + tol.CLASS_RTOL
        inside = u2 <= self.r1 * slack and c_phi <= self.r2 * spread * slack
        if self.max_stat_sd is not None:
            inside = inside and lam <= self.max_stat_sd**2 * slack
        return bool(inside)

    @property
    def kappa(self) -> float:
        """The noise-free bound r1 + log r2."""
        return float(self.r1 + math.log(self.r2))

    def class_kappa(
        self, A: ArrayLike | None = None, R: ArrayLike | None = None, delta: float = 0.0
    ) -> float:
        r"""Certified κ(δ) for :math:`T = Ax + \mathcal N(0, R)` under the class.

        R = 0: :math:`r_1 + \log r_2` (sharp). R ≠ 0: the γ-supremum of
        :func:`persuasive.certify.noisy_mean.gaussian_noise_kappa` with
        :math:`\gamma_{\max} = V^2/(V^2 + \lambda_{\min}(R))` (1 without V or with singular R).
        Raises ValidationError when some individual is exposed by A, or when the class is
        proven empty (:func:`persuasive.linear.emptiness.class_emptiness`).
        """
        a = self._a(A)
        bad = np.flatnonzero(exposed_by(a))
        if bad.size:
            raise ValidationError(
                f"A exposes individual(s) {bad.tolist()} (e_i in A's row space): the class is "
                "empty and no guarantee is certified; withhold or add noise (fixed-prior analysis)"
            )
        from persuasive.linear.emptiness import class_emptiness, patterns_of_matrix

        empty = class_emptiness(patterns_of_matrix(a), self.r2)
        if empty.empty:
            raise ValidationError(f"{empty.reason}; no guarantee is certified")
        return self.noise_kappa(R, a.shape[0], delta)

    def noise_kappa(self, R: ArrayLike | None, k: int, delta: float = 0.0) -> float:
        r""":meth:`class_kappa` for k statistics that expose nobody (not checked here): it
        depends on the statistics only through that, and on R through
        :math:`\lambda_{\min}(R)`."""
        r = noise_covariance(R, k)
        delta = dm.DELTA.check("delta", delta)
        if not np.any(r):
            return self.kappa
        lam_min = max(float(np.linalg.eigvalsh(r)[0]), 0.0)
        # certify sits above linear (certify.linear builds on this class): import lazily
        from persuasive.certify.noisy_mean import gaussian_noise_kappa

        return gaussian_noise_kappa(self.r1, self.r2, math.sqrt(lam_min), self.max_stat_sd, delta)[
            0
        ]

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"class": "LinearGaussianClass", "r1": self.r1, "r2": self.r2}
        if self.A is not None:
            out["A"] = self.A.tolist()
        if self.max_stat_sd is not None:
            out["max_stat_sd"] = self.max_stat_sd
        return out
