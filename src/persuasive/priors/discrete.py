"""Discrete data-prior on a finite set of datasets, and the two-point prior of Prop 6."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import logsumexp

from persuasive import _domains as dm
from persuasive import _tolerances as tol
from persuasive import _validation as v
from persuasive.errors import ValidationError
from persuasive.priors.base import Prior


@dataclass(frozen=True, eq=False)
class DiscretePrior(Prior):
    r"""A data-prior with finite support :math:`Q = \sum_k p_k \delta_{x^{(k)}}`.

    Parameters
    ----------
    support : array_like, shape (K,) or (K, n)
        The datasets :math:`x^{(k)}`; a 1-d array is K scalar datasets (n = 1).
    probs : array_like, shape (K,)
        Their probabilities; non-negative, summing to one. Repeated datasets are merged.

    Examples
    --------
    >>> import persuasive as pp
    >>> q = pp.DiscretePrior([0, 1], [0.25, 0.75])
    >>> float(q.logpdf([1.0]))  # doctest: +ELLIPSIS
    -0.287...
    """

    support: NDArray[np.float64] = field(repr=False)
    probs: NDArray[np.float64] = field(repr=False)
    log_probs: NDArray[np.float64] = field(repr=False)

    discrete = True

    def __init__(self, support: ArrayLike, probs: ArrayLike) -> None:
        params = dm.PRIORS["discrete"]
        s = params["support"].check("support", support)
        if s.ndim == 1:
            s = s[:, None]
        p = v.probabilities("probs", params["probs"].check("probs", probs))
        if p.shape[0] != s.shape[0]:
            raise ValidationError(
                f"probs must have one entry per support point ({s.shape[0]}); got {p.shape[0]}"
            )
        self._set(s, p)

    def _set(self, s: NDArray[np.float64], p: NDArray[np.float64]) -> None:
        uniq, inverse = np.unique(s, axis=0, return_inverse=True)
        merged = np.zeros(uniq.shape[0])
        np.add.at(merged, inverse.ravel(), p)
        with np.errstate(divide="ignore"):
            logp = np.log(merged)
        for name, val in (("support", uniq), ("probs", merged), ("log_probs", logp)):
            val.setflags(write=False)
            object.__setattr__(self, name, val)

    @classmethod
    def _from_log_weights(
        cls, support: NDArray[np.float64], log_w: NDArray[np.float64]
    ) -> DiscretePrior:
        """Internal constructor: normalise log weights in the log domain (trusted input)."""
        obj = cls.__new__(cls)
        logp = log_w - logsumexp(log_w)
        obj._set(support, np.exp(logp))
        return obj

    def __repr__(self) -> str:
        pts = self.support[:, 0].tolist() if self.dim == 1 else self.support.tolist()
        return f"DiscretePrior(support={pts}, probs={self.probs.tolist()})"

    @property
    def dim(self) -> int:
        return int(self.support.shape[1])

    def index(self, x: ArrayLike) -> NDArray[np.intp]:
        """Index of each dataset in the support (``-1`` if absent); x has shape (..., n)."""
        xs = np.asarray(x, dtype=np.float64)
        if xs.ndim == 0 or xs.shape[-1] != self.dim:
            xs = xs[..., None] if self.dim == 1 else xs
        close = np.all(np.abs(xs[..., None, :] - self.support) <= tol.OUTPUT_ATOL, axis=-1)
        found = close.any(axis=-1)
        return np.where(found, close.argmax(axis=-1), -1)

    def logpdf(self, x: ArrayLike) -> NDArray[np.float64] | float:
        """Log pmf (counting measure); -inf off the support."""
        idx = self.index(x)
        out = np.where(idx >= 0, self.log_probs[np.maximum(idx, 0)], -np.inf)
        return float(out) if out.ndim == 0 else out

    def mean(self) -> NDArray[np.float64]:
        return self.probs @ self.support

    def cov(self) -> NDArray[np.float64]:
        d = self.support - self.mean()
        return (d * self.probs[:, None]).T @ d

    def sample(self, size: int, rng: np.random.Generator | None = None) -> NDArray[np.float64]:
        rng = np.random.default_rng(rng)
        return self.support[rng.choice(self.support.shape[0], size=size, p=self.probs)]


def TwoPointPrior(x: ArrayLike, x_prime: ArrayLike, q: float) -> DiscretePrior:
    r"""The two-point prior :math:`Q_q(\{x\}) = q,\ Q_q(\{x'\}) = 1 - q` of Prop 6.

    Examples
    --------
    >>> import persuasive as pp
    >>> pp.TwoPointPrior(0, 1, 0.1).probs.tolist()
    [0.1, 0.9]
    """
    params = dm.PRIORS["two_point"]
    qq = params["q"].check("q", q)
    a = np.atleast_1d(params["x"].check("x", x))
    b = np.atleast_1d(params["x_prime"].check("x_prime", x_prime))
    if a.shape != b.shape:
        raise ValidationError(
            f"x and x_prime must be datasets of the same size; got shapes {a.shape} and {b.shape}"
        )
    return DiscretePrior(np.stack([a, b]), [qq, 1.0 - qq])
