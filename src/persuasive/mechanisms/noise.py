"""Additive-noise mechanisms T = x + noise: Laplace, Gaussian and geometric (discrete Laplace).

Each adds independent noise to every coordinate of the dataset value itself; with neighbouring
datasets |x - x'| <= 1 they have sensitivity 1 (Prop 6, Bon et al. 2026; docs/math.md §6).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _domains as dm
from persuasive import _validation as v
from persuasive.mechanisms.base import Mechanism


class _Additive(Mechanism):
    def _noise(self, rng: np.random.Generator, shape: tuple[int, ...]) -> NDArray[np.float64]:
        raise NotImplementedError

    def _logpdf_noise(self, z: NDArray[np.float64]) -> NDArray[np.float64]:
        raise NotImplementedError

    def sample(self, x: ArrayLike, size: int, rng: np.random.Generator | None = None) -> Any:
        xs = np.atleast_1d(v.array("x", x, ndim=(0, 1)))
        rng = np.random.default_rng(rng)
        return xs + self._noise(rng, (size, xs.shape[0]))

    def sample_batch(self, xs: ArrayLike, rng: np.random.Generator | None = None) -> Any:
        batch = np.asarray(xs, dtype=np.float64)
        rng = np.random.default_rng(rng)
        return batch + self._noise(rng, batch.shape)

    def log_likelihood(self, x: ArrayLike, t: Any) -> NDArray[np.float64]:
        z = np.asarray(t, dtype=np.float64) - np.asarray(x, dtype=np.float64)
        return self._logpdf_noise(z).sum(axis=-1)


@dataclass(frozen=True)
class LaplaceMechanism(_Additive):
    r"""Laplace noise, :math:`T = x + \mathrm{Lap}(b)` per coordinate.

    .. math:: m(x, t) = \prod_j \frac{1}{2b} e^{-|t_j - x_j|/b}

    Parameters
    ----------
    scale : float
        The Laplace scale b > 0 (epsilon-DP with epsilon = 1/b at sensitivity 1).
    """

    scale: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", dm.LAPLACE_SCALE.check("scale", self.scale))

    def _noise(self, rng: np.random.Generator, shape: tuple[int, ...]) -> NDArray[np.float64]:
        return rng.laplace(0.0, self.scale, size=shape)

    def _logpdf_noise(self, z: NDArray[np.float64]) -> NDArray[np.float64]:
        return -np.abs(z) / self.scale - math.log(2.0 * self.scale)

    def describe(self) -> dict[str, Any]:
        return {"mechanism": "LaplaceMechanism", "scale": self.scale}


@dataclass(frozen=True)
class GaussianMechanism(_Additive):
    r"""Gaussian noise, :math:`T = x + \mathcal N(0, \sigma^2)` per coordinate.

    Parameters
    ----------
    sigma : float
        Noise standard deviation σ > 0.
    """

    sigma: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", dm.GAUSSIAN_SIGMA.check("sigma", self.sigma))

    def _noise(self, rng: np.random.Generator, shape: tuple[int, ...]) -> NDArray[np.float64]:
        return rng.normal(0.0, self.sigma, size=shape)

    def _logpdf_noise(self, z: NDArray[np.float64]) -> NDArray[np.float64]:
        s = self.sigma
        return -0.5 * (z / s) ** 2 - math.log(s) - 0.5 * math.log(2.0 * math.pi)

    def describe(self) -> dict[str, Any]:
        return {"mechanism": "GaussianMechanism", "sigma": self.sigma}


@dataclass(frozen=True)
class GeometricMechanism(_Additive):
    r"""Two-sided geometric (discrete Laplace) noise on integer data.

    .. math:: P(T = x + k) = \frac{1 - a}{1 + a} a^{|k|}, \qquad a = e^{-1/b}, \ k \in \mathbb Z

    Parameters
    ----------
    scale : float
        The scale b > 0 (epsilon-DP with epsilon = 1/b at sensitivity 1).
    """

    scale: float
    discrete_output = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", dm.GEOMETRIC_SCALE.check("scale", self.scale))

    @property
    def a(self) -> float:
        return math.exp(-1.0 / self.scale)

    def _noise(self, rng: np.random.Generator, shape: tuple[int, ...]) -> NDArray[np.float64]:
        p = 1.0 - self.a  # difference of two iid geometrics on {0,1,...} is two-sided geometric
        g1 = rng.geometric(p, size=shape) - 1
        g2 = rng.geometric(p, size=shape) - 1
        return (g1 - g2).astype(np.float64)

    def _logpdf_noise(self, z: NDArray[np.float64]) -> NDArray[np.float64]:
        a = self.a
        base = math.log1p(-a) - math.log1p(a) - np.abs(z) / self.scale
        return np.where(z == np.round(z), base, -np.inf)

    def describe(self) -> dict[str, Any]:
        return {"mechanism": "GeometricMechanism", "scale": self.scale}
