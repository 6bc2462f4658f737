r"""A Gaussian Receiver class in which noise on the mean pays: bounded error on every person.

Prop 7's class :math:`\mathcal G^r_x` (§5.1, Bon et al. 2026) bounds the Receiver's error on
the *mean*; a member may be arbitrarily wrong about one person, and such a member gains
about :math:`z_{1-\delta}^2` nats from any noisy mean, however noisy (``docs/release_means.md``,
"What noise can and cannot do"). This library's extension adds the bound the Sender needs for
noise to pay — how wrong the Receiver may be about any one person, in prior standard
deviations — to the subclass :math:`\mathcal G^{r,V}_x` with a bounded prior sd of the mean
(V = ∞, Prop 7's :math:`\mathcal G^r_x`, when ``max_mean_sd`` is None):

.. math::

    \mathcal G^{r,V,r_0}_x = \mathcal G^{r,V}_x \cap
    \Big\{\mathcal N(\mu, \Sigma) : \max_i \frac{|x_i - \mu_i|}{\sigma_i} \le r_0\Big\},
    \qquad r_0 > 0.

The certificate of the exact and the noisy mean against it is
:func:`persuasive.certify.bounded_error.bounded_error_kappa` (``docs/release_means.md``,
section (e)): with V finite it decreases to 0 as the noise sd grows; without V noise cannot
certify below the exact mean, whose bound needs only :math:`r_0`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from persuasive import _domains as dm
from persuasive import _tolerances as tol
from persuasive.classes.gaussian_mean import GaussianMeanClass
from persuasive.errors import ValidationError
from persuasive.priors import GaussianPrior, Prior, as_dataset

__all__ = ["BoundedErrorGaussianClass"]


@dataclass(frozen=True)
class BoundedErrorGaussianClass(GaussianMeanClass):
    r""":math:`\mathcal G^{r,V,r_0}_x`: Prop 7's class, the prior sd of the mean at most V, and
    every person's standardized prior error at most :math:`r_0`.

    Parameters
    ----------
    r1, r2 : float
        Prop 7's bounds (r1 > 0, r2 > 1).
    max_mean_sd : float, optional
        V > 0: the Receiver's prior sd of the mean is at most V (None: unbounded). Noise pays
        only with it: against a Receiver whose prior on the mean is vague the noise is
        negligible.
    max_person_error : float
        :math:`r_0 > 0`: :math:`|x_i - \mu_i| \le r_0 \sigma_i` for every person i.

    Examples
    --------
    >>> import numpy as np
    >>> from persuasive.priors import GaussianPrior
    >>> cls = BoundedErrorGaussianClass(1.0, 4.0, max_mean_sd=1.0, max_person_error=2.0)
    >>> q = GaussianPrior(np.zeros(3), np.eye(3))
    >>> cls.contains(q, [0.5, -1.0, 1.5]), cls.contains(q, [0.5, -1.0, 2.5])
    (True, False)
    """

    max_person_error: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_person_error is None:
            raise ValidationError(
                "max_person_error must be a number r0 > 0 (|x_i - mu_i| <= r0 sigma_i); got None"
            )
        r0 = dm.check("max_mean_sd", self.max_person_error, name="max_person_error")
        object.__setattr__(self, "max_person_error", r0)
        # the theorem for this class registers itself on import (before Prop 7's, which
        # would certify the larger class); imported here, once the class exists
        import persuasive.certify.bounded_error  # noqa: F401

    def contains(self, prior: Prior, x: ArrayLike | None = None) -> bool:
        if not super().contains(prior, x):
            return False
        assert isinstance(prior, GaussianPrior) and x is not None and self.max_person_error
        xs = as_dataset(x)
        z = np.abs(xs - prior.mean_) / np.sqrt(np.diag(prior.cov_))
        return bool(np.max(z) <= self.max_person_error * (1.0 + tol.CLASS_RTOL))

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["class"] = "BoundedErrorGaussianClass"
        out["max_person_error"] = self.max_person_error
        return out
