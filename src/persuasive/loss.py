r"""The relative privacy score :math:`\Delta_S(Q, T, x) = S(Q, x) - S(Q_T, x)`.

Section 3 of Bon et al. (2026).

Negatively oriented for the Sender: small means private; it can be negative. The paper's
convention :math:`\infty - \infty = 0` (App. E.5) is applied: when both scores are infinite
with the same sign, the loss is 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from persuasive.bayes import _log_evidence, _posterior, check_output
from persuasive.errors import ValidationError
from persuasive.mechanisms import Mechanism
from persuasive.priors import GaussianPrior, Prior, as_dataset
from persuasive.scores.base import Score, score_differences
from persuasive.scores.log import LogScore

__all__ = ["relative_loss", "score_differences"]


def _log_loss(prior: Prior, mechanism: Mechanism, x: Any, t: Any) -> float:
    """Δ_L = log m(x, t) − log m_Q(t) (App. A; docs/math.md §2), 0 off the support of Q."""
    if not np.isfinite(prior.logpdf(x)):
        return 0.0  # L(Q, x) = L(Q_T, x) = ∞: the ∞ − ∞ = 0 convention
    log_m = float(np.asarray(mechanism.log_likelihood(x, t)))
    if log_m == -np.inf:
        raise ValidationError(f"t = {t!r} cannot be produced from x = {x.tolist()}")
    if isinstance(prior, GaussianPrior) and mechanism.deterministic:
        # Q_T lives on the affine set {z : f(z) = t}, a Q-null set: dQ_T/dQ = +∞ there.
        return np.inf
    return log_m - _log_evidence(prior, mechanism, t)


def relative_loss(
    score: Score, prior: Prior, mechanism: Mechanism, x: ArrayLike, t: Any = None
) -> float:
    r"""The relative privacy score :math:`\Delta_S(Q, T, x) = S(Q, x) - S(Q_T, x)`.

    Parameters
    ----------
    score : Score
        The privacy score S. For a family (e.g. ``MarginalDSS()``) the worst member is returned,
        as in Definition 3.
    prior : Prior
        The Receiver's data-prior Q.
    mechanism : Mechanism
        The release M.
    x : array_like
        The Sender's dataset.
    t : output, optional
        The released value T (validated as in :func:`persuasive.posterior`); defaults to
        ``mechanism.apply(x)`` for deterministic mechanisms.

    Notes
    -----
    For the log score the value is computed as :math:`\log m(x, T) - \log m_Q(T)` (App. A),
    never as a difference of two log densities; for a deterministic release of a continuous
    (Gaussian) prior the posterior is singular with respect to the prior and the log score loss
    is :math:`+\infty`. Other scores are differenced by :meth:`Score.member_losses`, in a form
    that avoids cancellation where the score has one (the marginal DSS: a log-ratio of
    variances), and Gaussian posteriors are computed in scaled square-root form
    (:func:`persuasive.bayes.gaussian_condition`): huge or tiny variances give the right loss
    or a clear error, never a wrong finite number.

    Examples
    --------
    >>> import persuasive as pp
    >>> q = pp.GaussianPrior([0.0, 0.0], [3.0, 1.0])
    >>> round(pp.relative_loss(pp.MarginalDSS(), q, pp.ExactMean(), [2.0, 0.0]), 10)
    2.3862943611
    """
    if not isinstance(score, Score):
        raise ValidationError(f"score must be a Score (e.g. pp.LogScore()); got {score!r}")
    if not isinstance(prior, Prior):
        raise ValidationError(f"prior must be a Prior (e.g. pp.GaussianPrior); got {prior!r}")
    if not isinstance(mechanism, Mechanism):
        raise ValidationError(f"mechanism must be a Mechanism; got {mechanism!r}")
    xs = as_dataset(x)
    if xs.shape[0] != prior.dim:
        raise ValidationError(
            f"x must have n = {prior.dim} entries to match the prior; got {xs.shape[0]}"
        )
    if t is None:
        if not mechanism.deterministic:
            raise ValidationError(f"t is required for the randomised {type(mechanism).__name__}")
        t = mechanism.apply(xs)
    else:
        t = check_output(mechanism, t, prior.dim)
    if isinstance(score, LogScore):
        return _log_loss(prior, mechanism, xs, t)
    post = _posterior(prior, mechanism, t)
    return float(np.max(score.member_losses(prior, post, xs, prior.dim)))
