"""Gaussian data-prior N(μ, Σ) (Bon et al. 2026, §5.1)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _domains as dm
from persuasive import _tolerances as tol
from persuasive import _validation as v
from persuasive.priors.base import Prior


@dataclass(frozen=True, eq=False)
class GaussianPrior(Prior):
    r"""Multivariate normal data-prior :math:`Q = \mathcal N(\mu, \Sigma)`.

    Parameters
    ----------
    mean : array_like, shape (n,)
        Prior mean :math:`\mu`.
    cov : array_like, shape (n, n) or (n,)
        Prior covariance :math:`\Sigma` (a 1-d array is a diagonal). Must be positive definite
        unless ``allow_singular`` is True (posteriors of exact linear releases are singular).
    allow_singular : bool
        Accept a positive semi-definite ``cov``.

    Examples
    --------
    >>> import persuasive as pp
    >>> q = pp.GaussianPrior([0.0, 0.0], [[3.0, 0.0], [0.0, 1.0]])
    >>> q.dim, q.marginal_var().tolist()
    (2, [3.0, 1.0])
    """

    mean_: NDArray[np.float64] = field(repr=False)
    cov_: NDArray[np.float64] = field(repr=False)
    allow_singular: bool = False

    def __init__(self, mean: ArrayLike, cov: ArrayLike, allow_singular: bool = False) -> None:
        params = dm.PRIORS["gaussian"]
        singular = params["allow_singular"].check("allow_singular", allow_singular)
        mu = np.atleast_1d(params["mean"].check("mean", mean))
        sigma = v.covariance(
            "cov", params["cov"].check("cov", cov), mu.shape[0], definite=not singular
        )
        object.__setattr__(self, "mean_", mu)
        object.__setattr__(self, "cov_", sigma)
        object.__setattr__(self, "allow_singular", singular)
        mu.setflags(write=False)
        sigma.setflags(write=False)

    @classmethod
    def _trusted(cls, mean: NDArray[np.float64], cov: NDArray[np.float64]) -> GaussianPrior:
        """Internal constructor for posteriors (already validated PSD moments): skips the
        O(n³) eigenvalue check of the public constructor."""
        obj = cls.__new__(cls)
        mu, sigma = np.array(mean, dtype=np.float64), np.array(cov, dtype=np.float64)
        mu.setflags(write=False)
        sigma.setflags(write=False)
        object.__setattr__(obj, "mean_", mu)
        object.__setattr__(obj, "cov_", sigma)
        object.__setattr__(obj, "allow_singular", True)
        return obj

    def marginal_var(self) -> NDArray[np.float64]:
        return np.diag(self.cov_).copy()

    def __repr__(self) -> str:
        return f"GaussianPrior(mean={self.mean_.tolist()}, cov={self.cov_.tolist()})"

    @property
    def dim(self) -> int:
        return int(self.mean_.shape[0])

    def mean(self) -> NDArray[np.float64]:
        return self.mean_.copy()

    def cov(self) -> NDArray[np.float64]:
        return self.cov_.copy()

    def logpdf(self, x: ArrayLike) -> NDArray[np.float64] | float:
        """Log density with respect to Lebesgue measure on R^n.

        For a singular covariance the density is taken with respect to Lebesgue measure on the
        affine support (scipy's ``allow_singular`` convention) and is -inf off it.
        """
        from scipy import stats

        xs = np.asarray(x, dtype=np.float64)
        out = stats.multivariate_normal(self.mean_, self.cov_, allow_singular=True).logpdf(xs)
        if self.allow_singular:
            # scipy evaluates the density on the projection; put -inf off the affine support.
            eigval, eigvec = np.linalg.eigh(self.cov_)
            null = eigvec[:, eigval <= tol.PSD_RTOL * max(eigval[-1], 1e-300)]
            if null.shape[1]:
                off = np.abs((xs - self.mean_) @ null).max(axis=-1) > tol.OUTPUT_ATOL * (
                    1.0 + np.abs(xs).max(axis=-1)
                )
                out = np.where(off, -np.inf, out)
        return float(out) if np.ndim(out) == 0 else np.asarray(out)

    def sample(self, size: int, rng: np.random.Generator | None = None) -> NDArray[np.float64]:
        rng = np.random.default_rng(rng)
        return rng.multivariate_normal(self.mean_, self.cov_, size=size, method="eigh")
