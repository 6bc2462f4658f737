r"""Receiver models for count tables: where the α of Prop 8 comes from (Bon et al. 2026).

Prop 8 protects cell :math:`i` against every Receiver whose prior on that cell lies in

.. math:: \mathcal C^{h,\alpha} = \{P \in \mathcal P_{\mathbb N} : P(X < h) \ge \alpha\},

with :math:`\kappa = -\log\alpha` (docs/math.md §9). A *Receiver model* is a statement about the
Receivers the agency wants to cover: either the class itself (:class:`SmallCellReceiver`), or a
parametric family of cell priors from which α is derived as the smallest mass below h over the
family,

.. math:: \alpha(h) = \inf_{P \in \mathcal F} P(X < h),

so that :math:`\mathcal F \subseteq \mathcal C^{h,\alpha(h)}` and Prop 8 applies with
:math:`\kappa = -\log\alpha(h)`. The guarantee then covers every Receiver whose prior on each cell
is in the family *or* puts at least α(h) below h. Every model is data-independent
(Assumption 1): nothing here looks at the table.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from persuasive import _domains as dm
from persuasive.errors import ValidationError

#: α(h) of a parametric family is scipy's cdf shrunk by this relative amount, so that floating
#: point rounding in the cdf can only *raise* the certified κ (docs/architecture.md, rule 6).
ALPHA_RTOL: float = 1e-12

#: The smallest score threshold r (hence threshold h >= r): the lower bound of the declared
#: domain of r (:data:`persuasive._domains.SCORE_R`, shared with the spec format), so that a
#: release always round-trips through ``spec_from_dict``.
R_MIN: int = dm.R_MIN


def _threshold(h: Any) -> int:
    return int(dm.THRESHOLD.check("h", h))


@functools.lru_cache(maxsize=1024)
def _poisson_alpha(h: int, mean: float) -> float:
    """P(X < h) under Poisson(mean), shrunk by ALPHA_RTOL (memoised: a release asks twice)."""
    return float(stats.poisson.cdf(h - 1, mean)) * (1.0 - ALPHA_RTOL)


@functools.lru_cache(maxsize=1024)
def _nbinom_alpha(h: int, size: float, p: float) -> float:
    """P(X < h) under NegativeBinomial(size, p), shrunk by ALPHA_RTOL (memoised)."""
    return float(stats.nbinom.cdf(h - 1, size, p)) * (1.0 - ALPHA_RTOL)


def kappa_of(alpha: float) -> float:
    """κ = −log α rounded up to a float, as the Prop 8 certificate states it
    (:func:`persuasive._rounding.ceil_log_sum`); κ = inf at α = 0 and κ = 0 at α = 1."""
    from persuasive._rounding import ceil_log_sum

    if alpha <= 0.0:
        return math.inf
    return max(0.0, ceil_log_sum(0.0, alpha, -1))


def check_thresholds(h: Any, r: Any = None) -> tuple[int, int]:
    """Validate the suppression threshold h and the score threshold r (default h) of Prop 8:
    ``R_MIN <= r <= h <= H_MAX`` (the declared domains ``_domains.RELEASE["h"]`` and
    ``["r"]``); return ``(h, r)``."""
    n = int(dm.Param("int").check("h", h))
    if n < R_MIN:
        raise ValidationError(
            f"h must be an integer >= {R_MIN}: counts below h are suppressed, and Prop 8 needs "
            f"h >= r with a score threshold r >= {R_MIN} (Bon et al. 2026, §5.2); got h = {n}"
        )
    h_ = int(dm.RELEASE["h"].check("h", h))
    if r is None:
        return h_, h_
    r_ = int(dm.RELEASE["r"].check("r", r))
    if r_ > h_:
        raise ValidationError(
            f"r = {r_} exceeds h = {h_}: Prop 8 needs h >= r, otherwise a released cell with "
            f"{h_} <= count < {r_} loses -log q(count), unbounded (docs/math.md §9); "
            "lower r or raise h"
        )
    return h_, r_


class Receiver:
    """Base class of the Receiver models (data-independent statements about cell priors)."""

    def alpha(self, h: int) -> float:
        """The smallest prior mass P(X < h) over the model: the α of 𝒞^{h,α}."""
        raise NotImplementedError  # pragma: no cover

    def kappa(self, h: int) -> float:
        """The certified κ = −log α(h) of Prop 8 at threshold h (inf when α(h) = 0)."""
        return kappa_of(self.alpha(h))

    def worst_prior(self, h: int) -> Any:
        """A cell prior of the model attaining α(h)."""
        raise NotImplementedError  # pragma: no cover

    def describe(self) -> dict[str, Any]:
        """A JSON description with a ``"model"`` key, read back by :func:`receiver_from_dict`."""
        raise NotImplementedError  # pragma: no cover


@dataclass(frozen=True, init=False)
class SmallCellReceiver(Receiver):
    r"""The class :math:`\mathcal C^{h,\alpha}` stated directly: every prior with
    :math:`P(X < h) \ge \alpha` (Prop 8, Bon et al. 2026).

    Parameters
    ----------
    alpha : float
        Minimum prior mass below the threshold, ``0 < alpha <= 1``.

    Notes
    -----
    ``alpha(h)`` is ``alpha`` whatever h. The worst prior is the pmf array
    :math:`(\alpha/h, \dots, \alpha/h, 1-\alpha)` on :math:`\{0, \dots, h\}`: its mass below h is
    exactly α and every small count has positive mass, so every suppressed cell below r loses
    exactly :math:`-\log\alpha`.

    Examples
    --------
    >>> rc = SmallCellReceiver(0.2)
    >>> rc.alpha(5), round(rc.kappa(5), 10), rc.worst_prior(2).tolist()
    (0.2, 1.6094379124, [0.1, 0.1, 0.8])
    """

    alpha_: float = field(repr=False)

    def __init__(self, alpha: float) -> None:
        a = dm.RECEIVERS["small_cell"]["alpha"].check("alpha", alpha)
        object.__setattr__(self, "alpha_", a)

    def __repr__(self) -> str:
        return f"SmallCellReceiver(alpha={self.alpha_!r})"

    def alpha(self, h: int) -> float:
        _threshold(h)
        return self.alpha_

    def worst_prior(self, h: int) -> np.ndarray:
        n = _threshold(h)
        pmf = np.full(n + 1, self.alpha_ / n)
        pmf[n] = 1.0 - self.alpha_
        return pmf

    def describe(self) -> dict[str, Any]:
        return {"model": "small_cell", "alpha": self.alpha_}


def _means(mean_min: Any, mean_max: Any) -> tuple[float, float]:
    lo = dm.CELL_MEAN.check("mean_min", mean_min)
    hi = dm.CELL_MEAN.check("mean_max", mean_max)
    if hi < lo:
        raise ValidationError(
            f"mean_max must be at least mean_min = {lo:g}; got {hi:g} (the prior means of the "
            "cells are assumed to lie in [mean_min, mean_max])"
        )
    return lo, hi


@dataclass(frozen=True)
class PoissonReceiver(Receiver):
    r"""Poisson cell priors with the mean anywhere in ``[mean_min, mean_max]``.

    .. math:: \alpha(h) = \min_{\mu \in [\mu_-, \mu_+]} P_{\mathrm{Poi}(\mu)}(X < h)
              = P_{\mathrm{Poi}(\mu_+)}(X \le h - 1).

    **Proof that the minimum is at** :math:`\mu_+`. For :math:`k = h-1 \ge 0`,

    .. math:: \frac{d}{d\mu} P_\mu(X \le k)
              = \sum_{j \le k} \Big(\frac{\mu^{j-1}}{(j-1)!} - \frac{\mu^j}{j!}\Big) e^{-\mu}
              = -\frac{\mu^k e^{-\mu}}{k!} \le 0

    (the sum telescopes), so :math:`P_\mu(X < h)` is non-increasing in μ: the Poisson family is
    stochastically increasing in its mean, and the infimum over the range is attained at its
    upper end. The worst prior is Poisson(mean_max); with :math:`\kappa = -\log\alpha(h)` Prop 8
    covers every Receiver whose cell priors are Poisson with a mean in the range (or, more
    generally, put at least α(h) below h).

    Parameters
    ----------
    mean_min, mean_max : float
        Range of the prior mean of a cell, ``0 <= mean_min <= mean_max < inf``. Only
        ``mean_max`` enters α; ``mean_min`` documents the model.

    Examples
    --------
    >>> rc = PoissonReceiver(0.5, 4.0)
    >>> round(rc.alpha(3), 6), round(rc.kappa(3), 6)   # docs/math.md §9: Poisson(4), h = 3
    (0.238103, 1.435051)
    """

    mean_min: float
    mean_max: float

    def __post_init__(self) -> None:
        lo, hi = _means(self.mean_min, self.mean_max)
        object.__setattr__(self, "mean_min", lo)
        object.__setattr__(self, "mean_max", hi)

    def alpha(self, h: int) -> float:
        return _poisson_alpha(_threshold(h), self.mean_max)

    def worst_prior(self, h: int) -> Any:
        _threshold(h)
        return stats.poisson(self.mean_max)

    def describe(self) -> dict[str, Any]:
        return {"model": "poisson", "mean_min": self.mean_min, "mean_max": self.mean_max}


@dataclass(frozen=True)
class NegativeBinomialReceiver(Receiver):
    r"""Negative-binomial cell priors with fixed ``size`` and the mean in ``[mean_min, mean_max]``.

    Mean parametrisation: size :math:`n > 0` (shape, or dispersion: variance
    :math:`\mu + \mu^2/n`) and :math:`p = n / (n + \mu)`, i.e. ``scipy.stats.nbinom(n, p)``.

    .. math:: \alpha(h) = \min_{\mu \in [\mu_-, \mu_+]} P_{\mathrm{NB}(n,\mu)}(X < h)
              = P_{\mathrm{NB}(n,\mu_+)}(X \le h - 1).

    **Proof that the minimum is at** :math:`\mu_+`. NB(n, μ) is the Poisson–Gamma mixture
    :math:`X \mid \Lambda \sim \mathrm{Poi}(\Lambda)`, :math:`\Lambda = (\mu/n)\,G` with
    :math:`G \sim \mathrm{Gamma}(n, 1)`. For :math:`\mu \le \mu'` couple both through the same G:
    :math:`\Lambda \le \Lambda'` pointwise, and :math:`P(X \le k \mid \Lambda)` is non-increasing
    in Λ (see :class:`PoissonReceiver`), so taking expectations over G,
    :math:`P_{\mu}(X \le k) \ge P_{\mu'}(X \le k)`: the family is stochastically increasing in μ
    at fixed size, and the infimum is at the upper end of the range. The worst prior is
    NB(size, mean_max).

    Parameters
    ----------
    mean_min, mean_max : float
        Range of the prior mean of a cell, ``0 <= mean_min <= mean_max < inf``.
    size : float
        Shape n > 0 (smaller: more overdispersed; n → ∞ gives the Poisson model).

    Examples
    --------
    >>> rc = NegativeBinomialReceiver(1.0, 4.0, size=2.0)
    >>> round(rc.alpha(3), 6), round(rc.kappa(3), 6)
    (0.407407, 0.897942)
    """

    mean_min: float
    mean_max: float
    size: float

    def __post_init__(self) -> None:
        lo, hi = _means(self.mean_min, self.mean_max)
        n = dm.RECEIVERS["negative_binomial"]["size"].check("size", self.size)
        object.__setattr__(self, "mean_min", lo)
        object.__setattr__(self, "mean_max", hi)
        object.__setattr__(self, "size", n)

    def _p(self) -> float:
        return self.size / (self.size + self.mean_max)

    def alpha(self, h: int) -> float:
        return _nbinom_alpha(_threshold(h), self.size, self._p())

    def worst_prior(self, h: int) -> Any:
        _threshold(h)
        return stats.nbinom(self.size, self._p())

    def describe(self) -> dict[str, Any]:
        return {
            "model": "negative_binomial",
            "mean_min": self.mean_min,
            "mean_max": self.mean_max,
            "size": self.size,
        }


#: ``model -> (class, keys)`` for :func:`receiver_from_dict`.
#: The keys are the declared parameters (:data:`persuasive._domains.RECEIVERS`).
MODELS: dict[str, tuple[type[Receiver], tuple[str, ...]]] = {
    "small_cell": (SmallCellReceiver, tuple(dm.RECEIVERS["small_cell"])),
    "poisson": (PoissonReceiver, tuple(dm.RECEIVERS["poisson"])),
    "negative_binomial": (NegativeBinomialReceiver, tuple(dm.RECEIVERS["negative_binomial"])),
}


def receiver_from_dict(d: Mapping[str, Any]) -> Receiver:
    """Rebuild a Receiver model from its :meth:`~Receiver.describe` dictionary.

    Examples
    --------
    >>> receiver_from_dict({"model": "poisson", "mean_min": 0, "mean_max": 3})
    PoissonReceiver(mean_min=0.0, mean_max=3.0)
    >>> receiver_from_dict(SmallCellReceiver(0.2).describe()) == SmallCellReceiver(0.2)
    True
    """
    allowed = ", ".join(f'"{m}"' for m in MODELS)
    if not isinstance(d, Mapping):
        raise ValidationError(f"receiver must be a table with a 'model' key; got {d!r}")
    if "model" not in d:
        raise ValidationError(f"receiver.model is required: one of {allowed}")
    model = d["model"]
    if not isinstance(model, str) or model not in MODELS:
        raise ValidationError(f"receiver.model must be one of {allowed}; got {model!r}")
    cls, keys = MODELS[model]
    for key in d:
        if key != "model" and key not in keys:
            raise ValidationError(
                f"unknown key 'receiver.{key}' for model = {model!r}; allowed: {', '.join(keys)}"
            )
    missing = [k for k in keys if k not in d]
    if missing:
        raise ValidationError(f"receiver.{missing[0]} is required for model = {model!r}")
    return cls(*(d[k] for k in keys))
