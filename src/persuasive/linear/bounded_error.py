r"""A Gaussian Receiver class in which noise on linear statistics pays: bounded error on
every person.

The class :math:`\mathcal G^r_{A,x}` of ``docs/linear.md`` (this library's extension of Prop 7,
Bon et al. 2026) bounds the Receiver's error on the *statistics*; a member may be arbitrarily
wrong about one person, and such a member gains about :math:`z_{1-\delta}^2` nats from any
noisy release, however noisy (``docs/linear_bounded.md``, "What noise cannot do"). This
library's extension adds how wrong the Receiver may be about any one person, in prior standard
deviations:

.. math::

    \mathcal G^{r,V,r_0}_{A,x} = \mathcal G^{r}_{A,x} \cap
    \{\lambda_{\max}(A\Sigma A^\top) \le V^2\} \cap
    \Big\{\mathcal N(\mu, \Sigma) : \max_i \frac{|x_i - \mu_i|}{\sigma_i} \le r_0\Big\}.

For :math:`A = \mathbf 1^\top/n` it is the mean's class
:class:`~persuasive.classes.bounded_error.BoundedErrorGaussianClass`. The certificate is
:func:`persuasive.certify.linear_bounded_error.linear_bounded_error_kappa`; it decreases to 0
as the noise sd grows when V is given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from persuasive import _domains as dm
from persuasive import _tolerances as tol
from persuasive.errors import ValidationError
from persuasive.linear.classes import LinearGaussianClass
from persuasive.mechanisms.linear import noise_covariance
from persuasive.priors import GaussianPrior, Prior, as_dataset

__all__ = ["BoundedErrorLinearClass"]


@dataclass(frozen=True)
class BoundedErrorLinearClass(LinearGaussianClass):
    r""":math:`\mathcal G^{r,V,r_0}_{A,x}`: the linear class, the prior sd of the statistics at
    most V (optional), and every person's standardized prior error at most :math:`r_0`.

    Parameters
    ----------
    r1, r2 : float
        The bounds of :class:`~persuasive.linear.LinearGaussianClass`.
    A : array_like, optional
        Bind the statistics (as for the linear class).
    max_stat_sd : float, optional
        V with :math:`\lambda_{\max}(A\Sigma A^\top) \le V^2`. Without it the class still
        certifies the exact statistics below :math:`r_1 + \log r_2` for a small :math:`r_0`,
        but noise cannot lower κ.
    max_person_error : float
        :math:`r_0 > 0`: :math:`|x_i - \mu_i| \le r_0 \sigma_i` for every person i.

    Examples
    --------
    >>> import persuasive as pp
    >>> cls = BoundedErrorLinearClass(1.0, 4.0, A=[[0.5, 0.5]], max_person_error=2.0)
    >>> q = pp.GaussianPrior([0.0, 0.0], [3.0, 1.0])
    >>> cls.contains(q, [2.0, 0.0]), cls.contains(q, [4.0, 0.0])
    (True, False)
    >>> round(cls.class_kappa(), 4)   # Prop 7's r1 + log r2 = 2.3863 is the smaller here
    2.3863
    """

    max_person_error: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        r0 = dm.check("max_stat_sd", self.max_person_error, name="max_person_error")
        if r0 is None:  # the domain allows "absent"; this class is the bound
            raise ValidationError(
                "max_person_error: got None; give r0 > 0, the largest |x_i - mu_i| / sigma_i"
            )
        object.__setattr__(self, "max_person_error", r0)
        # pp.certify must find this class's theorem (certify sits above linear: import lazily)
        import persuasive.certify.linear_bounded_error  # noqa: F401

    def contains(
        self, prior: Prior, x: ArrayLike | None = None, A: ArrayLike | None = None
    ) -> bool:
        if not super().contains(prior, x, A):
            return False
        assert isinstance(prior, GaussianPrior) and x is not None and self.max_person_error
        z = np.abs(as_dataset(x) - prior.mean_) / np.sqrt(np.diag(prior.cov_))
        return bool(np.max(z) <= self.max_person_error * (1.0 + tol.CLASS_RTOL))

    @property
    def kappa(self) -> float:
        r"""The noise-free bound :math:`\min(r_1 + \log r_2,\ \log r_2 + 2r_0r_2\sqrt{c\,r_1})`."""
        return self.noise_kappa(None, 1)

    def noise_kappa(self, R: ArrayLike | None, k: int, delta: float = 0.0) -> float:
        r"""κ(δ) of k statistics that expose nobody (not checked here) with noise covariance R:
        :func:`persuasive.certify.linear_bounded_error.bounded_kappa` with
        :math:`s^2 = \lambda_{\min}(R)`."""
        from persuasive.certify.linear_bounded_error import bounded_kappa

        r = noise_covariance(R, k)
        delta = dm.DELTA.check("delta", delta)
        lam_min = max(float(np.linalg.eigvalsh(r)[0]), 0.0) if np.any(r) else 0.0
        assert self.max_person_error is not None
        return bounded_kappa(
            self.r1,
            self.r2,
            self.max_person_error,
            self.max_stat_sd,
            math.sqrt(lam_min),
            delta,
            exact=not np.any(r),
        )

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["class"] = "BoundedErrorLinearClass"
        out["max_person_error"] = self.max_person_error
        return out
