"""The Receiver's data-prior: a distribution Q over datasets x (Bon et al. 2026, §3).

A dataset is a 1-d float array of length ``n`` (a scalar dataset has ``n = 1``). Batches of
datasets are arrays of shape ``(..., n)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _validation as v


def as_dataset(x: ArrayLike, name: str = "x") -> NDArray[np.float64]:
    """Return ``x`` as a float array of shape ``(n,)`` (scalars become length one)."""
    a = v.array(name, x, ndim=(0, 1))
    return np.atleast_1d(a)


class Prior(ABC):
    """A data-prior Q on datasets in R^n.

    Subclasses expose what scores and Bayes updates need: the log density or pmf, marginal
    moments and sampling. ``discrete`` is True when :meth:`logpdf` is a log pmf (counting
    measure) and False when it is a Lebesgue log density.
    """

    discrete: bool = False

    @property
    @abstractmethod
    def dim(self) -> int:
        """Number of coordinates n of a dataset."""

    @abstractmethod
    def logpdf(self, x: ArrayLike) -> NDArray[np.float64] | float:
        """Log density (or log pmf) of Q at datasets of shape ``(..., n)``; -inf off the support."""

    @abstractmethod
    def mean(self) -> NDArray[np.float64]:
        """Mean vector of Q, shape ``(n,)``."""

    @abstractmethod
    def cov(self) -> NDArray[np.float64]:
        """Covariance matrix of Q, shape ``(n, n)``."""

    def marginal_var(self) -> NDArray[np.float64]:
        """Marginal variances of Q, shape ``(n,)``."""
        return np.diag(self.cov()).copy()

    @abstractmethod
    def sample(self, size: int, rng: np.random.Generator | None = None) -> NDArray[np.float64]:
        """Draw ``size`` datasets, shape ``(size, n)``."""

    def in_support(self, x: ArrayLike) -> bool:
        """True if the dataset ``x`` has positive density/mass under Q."""
        return bool(np.isfinite(self.logpdf(as_dataset(x))))
