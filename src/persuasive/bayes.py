r"""Exact Bayes updates :math:`Q_T(dx) \propto Q(dx)\, m(x, T)` (eq. 1, Bon et al. 2026).

This is the one place where posteriors are computed. Supported pairs (all exact):

=============================  ==============================================================
prior                          mechanism
=============================  ==============================================================
DiscretePrior                  any mechanism with a likelihood (reweighting, log domain)
GaussianPrior                  ExactMean / LinearStatistic (degenerate conditioning on Ax = t)
GaussianPrior                  GaussianMechanism (T = x + N(0, σ²I))
GaussianPrior                  Chain(ExactMean | LinearStatistic, GaussianMechanism)
GaussianPrior                  Chain(ExactMean | 1-row LinearStatistic, LaplaceMechanism):
                               a two-piece truncated-normal mixture (LaplaceMeanPosterior)
GaussianPrior                  LinearGaussian (T = A x + N(0, R), any PSD R incl. 0)
IndependentCellsPrior          CellSuppression (cell-wise truncation / point mass)
any of the above               Joint(M, K) with K post-processing (Prop 4: Q_{T,U} = Q_T)
any of the above               Composition(M₁, M₂) (sequential update)
=============================  ==============================================================

Anything else raises :class:`~persuasive.errors.UnsupportedCombinationError`: the library never
silently approximates a posterior.
"""

from __future__ import annotations

from typing import Any, NoReturn

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp

from persuasive import _tolerances as tol
from persuasive._validation import echo
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.mechanisms import (
    CellSuppression,
    Chain,
    ComposedRelease,
    Composition,
    ExactMean,
    FiniteKernel,
    GaussianMechanism,
    GeometricMechanism,
    Joint,
    LaplaceMechanism,
    LinearGaussian,
    LinearStatistic,
    Mechanism,
)
from persuasive.priors import DiscretePrior, GaussianPrior, IndependentCellsPrior, Prior
from persuasive.priors._conditioning import gaussian_condition, gaussian_log_evidence
from persuasive.priors.laplace_posterior import LaplaceMeanPosterior

__all__ = ["check_output", "gaussian_condition", "log_evidence", "output_shape", "posterior"]


def _unsupported(prior: Prior, mechanism: Mechanism, what: str = "posterior") -> NoReturn:
    raise UnsupportedCombinationError(
        f"no exact {what} for {type(prior).__name__} x {type(mechanism).__name__}; supported: "
        "DiscretePrior x any mechanism with a likelihood, GaussianPrior x ExactMean / "
        "LinearStatistic / GaussianMechanism / Chain(linear, GaussianMechanism) / "
        "Chain(one-row linear, LaplaceMechanism), "
        "IndependentCellsPrior x CellSuppression (and Joint / Composition of these)"
    )


# --------------------------------------------------------------------------------------------
# Validating an output t (the public boundary of posterior / log_evidence / relative_loss)
# --------------------------------------------------------------------------------------------


def output_shape(mechanism: Mechanism, n: int) -> tuple[int, ...] | None:
    """The shape of one output of ``mechanism`` on datasets of n coordinates, or None when the
    library does not know it (a user-defined kernel). A shape ``(1,)`` also admits a number."""
    if isinstance(mechanism, (ExactMean, FiniteKernel)):
        return (1,)
    if isinstance(mechanism, LinearStatistic):
        return (int(mechanism.A.shape[0]),)
    if isinstance(mechanism, LinearGaussian):
        return (mechanism.k,)
    if isinstance(
        mechanism, (GaussianMechanism, LaplaceMechanism, GeometricMechanism, CellSuppression)
    ):
        return (n,)
    if isinstance(mechanism, Chain):
        inner = output_shape(mechanism.first, n)
        return None if inner is None else output_shape(mechanism.post, int(np.prod(inner)))
    return None


def _shape_text(shape: tuple[int, ...]) -> str:
    return "a single number (or shape (1,))" if shape == (1,) else f"shape {shape}"


def check_output(mechanism: Mechanism, t: Any, n: int | None, name: str = "t") -> Any:
    """Validate an observed output ``t`` of ``mechanism`` on datasets of n coordinates.

    Pairs of :class:`Joint` / :class:`Composition` outputs and the parts of a
    :class:`ComposedRelease` are checked part by part (``t[0]``, ``t[1]``, ...); every other
    output must be numeric, finite and, when the library knows it, of the mechanism's output
    shape. Returns ``t`` (pairs rebuilt as tuples).

    Raises
    ------
    ValidationError
        Naming ``t`` (or the part), echoing it and saying what is expected.
    """
    if isinstance(mechanism, (Joint, Composition)):
        if not isinstance(t, (tuple, list)) or len(t) != 2:
            raise ValidationError(
                f"{name} must be a pair (t1, t2) for {type(mechanism).__name__}; got {echo(t)}"
            )
        t1 = check_output(mechanism.first, t[0], n, f"{name}[0]")
        if isinstance(mechanism, Joint):
            inner = None if n is None else output_shape(mechanism.first, n)
            n2 = None if inner is None else int(np.prod(inner))
            t2 = check_output(mechanism.post, t[1], n2, f"{name}[1]")
        else:
            t2 = check_output(mechanism.second, t[1], n, f"{name}[1]")
        return (t1, t2)
    if isinstance(mechanism, ComposedRelease):
        parts = [
            m for m, c in zip(mechanism.mechanisms, mechanism.counts, strict=True) for _ in range(c)
        ]
        if not isinstance(t, (tuple, list)) or len(t) != len(parts):
            raise ValidationError(
                f"{name} must be a sequence of {len(parts)} outputs; got {echo(t)}"
            )
        return tuple(
            check_output(m, ti, n, f"{name}[{i}]")
            for i, (m, ti) in enumerate(zip(parts, t, strict=True))
        )
    try:
        arr = np.asarray(t)
        if arr.dtype.kind not in "iuf":  # not strings, booleans or objects
            raise TypeError
        arr = arr.astype(np.float64)
    except (TypeError, ValueError):
        raise ValidationError(
            f"{name} must be numeric (an output of the mechanism); got {echo(t)}"
        ) from None
    shape = None if n is None else output_shape(mechanism, n)
    if shape is not None and arr.shape != shape and not (shape == (1,) and arr.ndim == 0):
        raise ValidationError(
            f"{name} must have {_shape_text(shape)} for {type(mechanism).__name__} on datasets "
            f"of n = {n}; got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise ValidationError(f"{name} must contain only finite numbers; got {echo(t)}")
    return t


def _check_args(prior: Any, mechanism: Any) -> None:
    if not isinstance(prior, Prior):
        raise ValidationError(f"prior must be a Prior (e.g. pp.GaussianPrior); got {echo(prior)}")
    if not isinstance(mechanism, Mechanism):
        raise ValidationError(
            f"mechanism must be a Mechanism (e.g. pp.ExactMean()); got {echo(mechanism)}"
        )


# --------------------------------------------------------------------------------------------
# Gaussian priors
# --------------------------------------------------------------------------------------------


def _linear_gaussian(
    mechanism: Mechanism, n: int
) -> tuple[NDArray[np.float64], float | NDArray[np.float64]] | None:
    """(A, noise) if the mechanism is T = A x + N(0, R), else None; noise is s² (R = s² I)
    or the (k, k) matrix R of a LinearGaussian."""
    if isinstance(mechanism, LinearGaussian):
        return mechanism.coefficients(n), np.asarray(mechanism.R)
    if isinstance(mechanism, (ExactMean, LinearStatistic)):
        return mechanism.coefficients(n), 0.0
    if isinstance(mechanism, GaussianMechanism):
        return np.eye(n), mechanism.sigma**2
    if (
        isinstance(mechanism, Chain)
        and isinstance(mechanism.first, (ExactMean, LinearStatistic))
        and isinstance(mechanism.post, GaussianMechanism)
    ):
        return mechanism.first.coefficients(n), mechanism.post.sigma**2
    return None


def _linear_laplace(mechanism: Mechanism, n: int) -> tuple[NDArray[np.float64], float] | None:
    """(a, Laplace scale) if the mechanism is T = aᵀx + Lap(b) for one row a, else None."""
    if (
        isinstance(mechanism, Chain)
        and isinstance(mechanism.first, (ExactMean, LinearStatistic))
        and isinstance(mechanism.post, LaplaceMechanism)
    ):
        a = mechanism.first.coefficients(n)
        if a.shape[0] == 1:
            return a[0], mechanism.post.scale
    return None


def _laplace_posterior(
    prior: GaussianPrior, a: NDArray[np.float64], scale: float, t: Any
) -> LaplaceMeanPosterior | None:
    """The exact Laplace posterior, or None when the prior fixes aᵀx (flat likelihood)."""
    tt = np.asarray(t, dtype=np.float64).reshape(-1)
    if tt.shape != (1,):
        raise ValidationError(f"t must be one number for a one-row statistic; got {t!r}")
    top = float(np.max(np.abs(prior.cov_)))
    if top == 0.0:
        return None
    unit = prior.cov_ / top  # scale-free: no overflow or underflow of aᵀΣa
    if float(a @ unit @ a) <= tol.PSD_RTOL * float(np.trace(unit)):
        return None
    return LaplaceMeanPosterior(prior, a, scale, float(tt[0]))


def _posterior(prior: Prior, mechanism: Mechanism, t: Any) -> Prior:
    """:func:`posterior` on validated arguments."""
    if isinstance(mechanism, Joint):
        t1, _ = t
        return _posterior(prior, mechanism.first, t1)
    if isinstance(mechanism, Composition):
        t1, t2 = t
        return _posterior(_posterior(prior, mechanism.first, t1), mechanism.second, t2)
    if isinstance(prior, DiscretePrior):
        log_w = prior.log_probs + mechanism.log_likelihood(prior.support, t)
        if not np.isfinite(np.max(log_w)):
            raise ValidationError(f"t = {t!r} has probability zero under the prior predictive")
        keep = np.isfinite(log_w)
        return DiscretePrior._from_log_weights(prior.support[keep], log_w[keep])
    if isinstance(prior, GaussianPrior):
        ll = _linear_laplace(mechanism, prior.dim)
        if ll is not None:
            post = _laplace_posterior(prior, ll[0], ll[1], t)
            return prior if post is None else post
        lg = _linear_gaussian(mechanism, prior.dim)
        if lg is None:
            _unsupported(prior, mechanism)
        A, s2 = lg
        tt = np.atleast_1d(np.asarray(t, dtype=np.float64))
        m, v = gaussian_condition(prior.mean_, prior.cov_, A, s2, tt)
        return GaussianPrior._trusted(m, v)
    if isinstance(prior, IndependentCellsPrior) and isinstance(mechanism, CellSuppression):
        return _suppression_posterior(prior, mechanism, t)
    _unsupported(prior, mechanism)


def posterior(prior: Prior, mechanism: Mechanism, t: Any) -> Prior:
    r"""The data-posterior :math:`Q_T` of ``prior`` after observing ``t`` from ``mechanism``.

    Parameters
    ----------
    prior : Prior
        The Receiver's data-prior Q.
    mechanism : Mechanism
        The release kernel M (known to the Receiver, Assumption 1).
    t : output
        The observed output T: finite numbers of the mechanism's output shape (one number for
        ``ExactMean`` and finite kernels, k for a k-row statistic, n for additive noise and
        cell suppression), a pair for ``Joint`` / ``Composition``.

    Returns
    -------
    Prior
        :math:`Q_T(dx) \propto Q(dx)\, m(x, T)`, of the same family as ``prior``.

    Raises
    ------
    UnsupportedCombinationError
        When no exact update exists for the pair.
    ValidationError
        When ``t`` is not a finite output of the mechanism's shape, or has probability zero
        under the prior predictive.

    Examples
    --------
    >>> import persuasive as pp
    >>> q = pp.GaussianPrior([0.0, 0.0], [3.0, 1.0])
    >>> post = pp.posterior(q, pp.ExactMean(), 1.0)
    >>> post.mean().round(6).tolist(), round(float(post.marginal_var()[0]), 6)
    ([1.5, 0.5], 0.75)
    >>> pp.posterior(q, pp.ExactMean(), float("nan"))
    Traceback (most recent call last):
    ...
    persuasive.errors.ValidationError: t must contain only finite numbers; got nan
    """
    _check_args(prior, mechanism)
    return _posterior(prior, mechanism, check_output(mechanism, t, prior.dim))


def _suppression_split(
    prior: IndependentCellsPrior, mech: CellSuppression, t: Any
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Validate a suppression output against the prior; return it and the suppressed mask."""
    tt = np.asarray(t, dtype=np.float64)
    if tt.shape != (prior.dim,):
        raise ValidationError(f"t must have {prior.dim} cells; got shape {tt.shape}")
    supp = tt == CellSuppression.SUPPRESSED
    bad = ~supp & ((tt < mech.h) | (tt != np.round(tt)))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValidationError(
            f"t[{i}] = {tt[i]} cannot be released by CellSuppression(h={mech.h}): a released "
            f"cell is an integer >= h, a suppressed one is {CellSuppression.SUPPRESSED}"
        )
    return tt, supp


def _suppression_posterior(
    prior: IndependentCellsPrior, mech: CellSuppression, t: Any
) -> IndependentCellsPrior:
    """Cell-wise: Q_i(· | x_i < h) for suppressed cells, δ_{t_i} for released ones."""
    tt, supp = _suppression_split(prior, mech, t)
    released = np.flatnonzero(~supp)
    if released.size and not np.all(
        np.isfinite(prior.logpmf_cells(np.where(supp, 0.0, tt))[released])
    ):
        raise ValidationError(f"t = {tt.tolist()} has probability zero under the prior")
    hidden = np.flatnonzero(supp)
    table = None
    if hidden.size:
        grid = np.broadcast_to(np.arange(mech.h, dtype=np.float64)[:, None], (mech.h, prior.dim))
        below = np.exp(prior.logpmf_cells(grid)).T[hidden]  # (suppressed cells, h)
        mass = below.sum(axis=1)
        if np.any(mass <= 0.0):
            i = int(hidden[np.argmax(mass <= 0.0)])
            raise ValidationError(
                f"cell {i} is suppressed but the prior gives it no mass below h = {mech.h}"
            )
        table = (hidden, below / mass[:, None])
    return IndependentCellsPrior._from_parts(prior.dim, table, (released, tt[released]))


def _noise_definite(noise: float | NDArray[np.float64]) -> bool:
    """Whether the noise covariance (scalar s² or matrix R) is positive definite."""
    r = np.asarray(noise, dtype=np.float64)
    if r.ndim == 0:
        return bool(r > 0)
    top = float(np.max(np.abs(r)))
    if top == 0.0:
        return False
    w = np.linalg.eigvalsh(r / top)
    return bool(w[0] > tol.PSD_RTOL * float(w[-1]))


def _log_evidence(prior: Prior, mechanism: Mechanism, t: Any) -> float:
    """:func:`log_evidence` on validated arguments."""
    if isinstance(mechanism, Joint):
        t1, t2 = t
        return _log_evidence(prior, mechanism.first, t1) + float(
            mechanism.post.log_likelihood(np.atleast_1d(np.asarray(t1, dtype=float)), t2)
        )
    if isinstance(mechanism, Composition):
        t1, t2 = t
        return _log_evidence(prior, mechanism.first, t1) + _log_evidence(
            _posterior(prior, mechanism.first, t1), mechanism.second, t2
        )
    if isinstance(prior, DiscretePrior):
        return float(logsumexp(prior.log_probs + mechanism.log_likelihood(prior.support, t)))
    if isinstance(prior, GaussianPrior):
        lg = _linear_gaussian(mechanism, prior.dim)
        if lg is not None and _noise_definite(lg[1]):
            A, s2 = lg
            tt = np.atleast_1d(np.asarray(t, dtype=np.float64))
            return gaussian_log_evidence(prior.mean_, prior.cov_, A, s2, tt)
        ll = _linear_laplace(mechanism, prior.dim)
        if ll is not None:
            post = _laplace_posterior(prior, ll[0], ll[1], t)
            if post is not None:
                return post.log_evidence
            tt = np.atleast_1d(np.asarray(t, dtype=np.float64))
            flat = LaplaceMechanism(ll[1]).log_likelihood(np.atleast_1d(ll[0] @ prior.mean_), tt)
            return float(flat)
    if isinstance(prior, IndependentCellsPrior) and isinstance(mechanism, CellSuppression):
        tt, supp = _suppression_split(prior, mechanism, t)
        with np.errstate(divide="ignore"):
            log_below = np.log(prior.cdf_below(mechanism.h))
        released = prior.logpmf_cells(np.where(supp, 0.0, tt))
        return float(np.where(supp, log_below, released).sum())
    _unsupported(prior, mechanism, "prior predictive density")


def log_evidence(prior: Prior, mechanism: Mechanism, t: Any) -> float:
    r"""The log prior predictive :math:`\log m_Q(t) = \log \int m(z, t)\, Q(dz)`.

    Exact for the pairs of :func:`posterior` that have a dominating measure: discrete priors
    (log-sum-exp), Gaussian priors with Gaussian noise, independent cells with suppression.
    Deterministic releases of a Gaussian prior have no density with respect to the noise-free
    likelihood and raise :class:`UnsupportedCombinationError`. ``t`` is validated as in
    :func:`posterior`.

    Examples
    --------
    >>> import persuasive as pp
    >>> q = pp.GaussianPrior([0.0], [3.0])
    >>> round(pp.log_evidence(q, pp.GaussianMechanism(1.0), [0.0]), 6)  # log N(0; 0, 4)
    -1.612086
    """
    _check_args(prior, mechanism)
    return _log_evidence(prior, mechanism, check_output(mechanism, t, prior.dim))
