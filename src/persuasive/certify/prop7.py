r"""Prop 7 (Bon et al. 2026): the exact empirical mean is persuasively private.

.. math::

    M(x, \cdot) = \delta_{\bar x} \text{ is }
    (\mathcal I, \mathcal G^r_x, r_1 + \log r_2, 0)\text{-PP},

where :math:`\mathcal I = \{D_i\}_{i=1}^n` are the marginal Dawid–Sebastiani scores (Def 8) and
:math:`\mathcal G^r_x` the Gaussian class of :class:`~persuasive.GaussianMeanClass`.

The bound is *sharp* (docs/math.md §8 and erratum 6, [RECON, CHECK]): with
:math:`\rho_i = \mathrm{corr}(X_i, \bar X)` and :math:`w^2 = (\bar x - \bar\mu)^2/\bar\Sigma`,
:math:`\sup_{x_i}\Delta_i = w^2 - \log(1 - \rho_i^2)`, and :math:`\Phi = I`,
:math:`\sigma_1^2/\|\sigma\|^2 = 1 - 1/r_2`, :math:`w^2 = r_1` attain :math:`r_1 + \log r_2`.
It relies on reading σ in the class as the vector of marginal *standard deviations*
(:math:`\|\sigma\|^2 = \sum_j \sigma_j^2`); the paper also calls it "variances" (docs/math.md §8).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from persuasive._rounding import ceil_log_sum
from persuasive.certify.registry import Bound, Theorem, tail_definition_reason
from persuasive.classes import GaussianMeanClass
from persuasive.mechanisms import ExactMean, LinearStatistic, Mechanism
from persuasive.scores import MarginalDSS


def _n_of(mechanism: Mechanism) -> int | None:
    """n for a LinearStatistic equal to 1ᵀ/n, None for ExactMean (any n), -1 otherwise."""
    if isinstance(mechanism, ExactMean):
        return None
    if isinstance(mechanism, LinearStatistic):
        a = mechanism.A
        n = a.shape[1]
        if a.shape[0] == 1 and np.allclose(a, 1.0 / n, rtol=1e-12, atol=0.0):
            return n
    return -1


class Prop7(Theorem):
    """κ = r1 + log r2 at every δ, exactly (Prop 7, Bon et al. 2026).

    Examples
    --------
    >>> import persuasive as pp
    >>> d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0), 2.4)
    >>> round(Prop7().kappa_at(pp.ExactMean(), d, 0.0)[0], 10)
    2.3862943611
    """

    name = "prop7"
    basis = "Prop 7 (Bon et al. 2026)"

    def supports(self, mechanism: Mechanism, definition: Any) -> str | None:
        why = tail_definition_reason(definition, MarginalDSS, GaussianMeanClass)
        if why is not None:
            return why
        n = _n_of(mechanism)
        if n == -1:
            return (
                f"needs the exact mean (ExactMean or LinearStatistic with A = 1ᵀ/n); got "
                f"{type(mechanism).__name__}"
            )
        if n is not None and n < 2:
            return "needs n >= 2 data points (the class is empty for n = 1)"
        return None

    def _bound(self, mechanism: Mechanism, definition: Any) -> tuple[float, tuple[str, ...]]:
        cls = definition.priors
        n = _n_of(mechanism)
        notes = [
            "sharp: some Receiver of the class attains κ = r1 + log r2 (docs/math.md §8, "
            "erratum 6), reading σ in the class as each person's prior standard deviation"
        ]
        if n is not None and cls.r2 * (1.0 - 1.0 / n) < 1.0:
            return 0.0, (
                f"the class is empty for n = {n} (needs r2 >= n/(n-1) = "
                f"{n / (n - 1):g}): the guarantee holds vacuously",
            )
        # the exact sharp value, rounded up to a float (persuasive._rounding)
        return ceil_log_sum(cls.r1, cls.r2), tuple(notes)

    def kappa_at(self, mechanism: Mechanism, definition: Any, delta: float) -> Bound:
        k, notes = self._bound(mechanism, definition)
        return k, True, notes

    def delta_at(self, mechanism: Mechanism, definition: Any, kappa: float) -> float:
        # deterministic and sharp: below the bound some (x, Q) fails with probability 1
        k, _ = self._bound(mechanism, definition)
        return 0.0 if kappa >= k else 1.0
