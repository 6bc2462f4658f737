r"""The certified κ of linear statistics that expose nobody, as the Sender's search needs it.

Under both classes the certificate depends on the statistics only through "nobody is exposed",
and on Gaussian noise only through the noise sd σ on every statistic (the smallest noise
variance), so the search needs three things of it: κ of the exact release, κ(σ) over many σ,
and the smallest σ meeting a target.

* :class:`ClassKappa` — :class:`persuasive.linear.LinearGaussianClass` (Prop 7 generalised to
  A, ``docs/linear_release.md``): κ(σ) by :class:`persuasive.linear.calibrate.ClassCurve`
  (equal to the class certificate), the smallest σ by :func:`persuasive.linear.calibrate_noise`;
* :class:`BoundedKappa` — with every person's standardized prior error at most :math:`r_0`
  (:class:`persuasive.linear.bounded_error.BoundedErrorLinearClass`, ``docs/linear_bounded.md``):
  κ(σ) by :func:`persuasive.certify.linear_bounded_error.bounded_kappa`, which decreases to 0
  as σ grows when V is given; the smallest σ by bisection on log σ, as for a mean.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from persuasive.errors import ValidationError

__all__ = ["BoundedKappa", "ClassKappa"]


@functools.lru_cache(maxsize=8)
def _curve(r1: float, r2: float, v: float | None, delta: float) -> Any:
    """The class certificate over many noise covariances (:class:`ClassCurve`: its fixed cells
    bounded once), shared by the Gaussian candidate and the frontier."""
    from persuasive.linear import LinearGaussianClass
    from persuasive.linear.calibrate import ClassCurve

    return ClassCurve(LinearGaussianClass(r1, r2, max_stat_sd=v), delta)


@dataclass(frozen=True)
class ClassKappa:
    """κ under the linear class with r1, r2 and V (``v``) at δ."""

    r1: float
    r2: float
    v: float | None
    delta: float

    @property
    def exact(self) -> float:
        return float(self.r1 + math.log(self.r2))

    basis = "Prop 7 generalised to A, docs/linear_release.md"

    def many(self, sigmas: NDArray[np.float64]) -> NDArray[np.float64]:
        curve = _curve(self.r1, self.r2, self.v, self.delta)
        return np.asarray(curve.many([float(s) ** 2 for s in sigmas], 1), dtype=float)

    def smallest(self, target: float) -> tuple[float | None, float, str]:
        """(σ*, κ(σ*), why not): calibrated on one mean of two people (any statistics that
        expose nobody give the same σ)."""
        from persuasive.linear import LinearGaussianClass, calibrate_noise

        cls = LinearGaussianClass(self.r1, self.r2, max_stat_sd=self.v)
        try:
            cal = calibrate_noise(np.full((1, 2), 0.5), target, cls=cls, delta=self.delta)
        except ValidationError as exc:
            return None, math.inf, f"no noise sd certifies κ ≤ {target:g}: {exc}"
        return float(cal.sd), float(cal.kappa), ""


@dataclass(frozen=True)
class BoundedKappa:
    """κ under the linear class with every person's error at most ``r0`` prior sds."""

    r1: float
    r2: float
    v: float | None
    delta: float
    r0: float

    basis = "the linear class with bounded error on every person, docs/linear_bounded.md"

    @property
    def exact(self) -> float:
        from persuasive.certify.linear_bounded_error import bounded_kappa

        return float(bounded_kappa(self.r1, self.r2, self.r0, self.v, 0.0, 0.0, exact=True))

    def one(self, sigma: float) -> float:
        from persuasive.certify.linear_bounded_error import bounded_kappa

        if sigma == 0.0:
            return self.exact
        return float(bounded_kappa(self.r1, self.r2, self.r0, self.v, sigma, self.delta,
                                   exact=False))  # fmt: skip

    def many(self, sigmas: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.array([self.one(float(s)) for s in sigmas])

    def smallest(self, target: float) -> tuple[float | None, float, str]:
        """(σ*, κ(σ*), why not) by the mean's bisection on log σ (κ non-increasing in σ);
        0 when the exact release meets the target."""
        from persuasive.choose.mean import _gaussian

        if self.exact <= target:
            return 0.0, self.exact, ""
        c = _gaussian(self.one, target, self.delta, self.v)
        if not c.certified or c.parameter is None:
            return None, math.inf, c.reason
        return float(c.parameter), float(c.kappa), ""
