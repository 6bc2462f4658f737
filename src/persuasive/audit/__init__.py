r"""Search-based audits: found *lower* bounds on κ, each with the witness that exhibits it.

:func:`audit` is the entry point (``definition.audit(m, **kw)`` forwards here). It dispatches on
the (mechanism, definition) pair:

======================================  ======================================  ===============
mechanism                               prior class                             method
======================================  ======================================  ===============
ExactMean                               GaussianMeanClass (Prop 7)              optimisation
Chain(ExactMean, GaussianMechanism)     GaussianMeanClass (noisy mean)          monte-carlo
Chain(ExactMean, LaplaceMechanism)      GaussianMeanClass (no finite κ)         monte-carlo
ExactMean, Chain(ExactMean, Gaussian /  BoundedErrorGaussianClass (docs/         optimisation /
LaplaceMechanism)                       release_means.md (e))                   monte-carlo
CellSuppression                         SmallCellClass (Prop 8)                 optimisation
FiniteKernel, RandomizedResponse,       NeighbourPriors (Prop 6) / FiniteClass  enumeration
Joint / Chain of finite kernels,
deterministic releases
Laplace, Gaussian, geometric noise      NeighbourPriors (Prop 6)                monte-carlo
Composition / ComposedRelease           NeighbourPriors (Prop 6, summed loss)   enumeration
                                                                                (small finite)
                                                                                or monte-carlo
======================================  ======================================  ===============

Monte Carlo draws are generated in chunks of bounded memory (:mod:`persuasive.audit.stream`),
so any ``n_samples`` up to :data:`~persuasive.audit.stream.MAX_SAMPLES` runs without holding
all draws at once.

Persuasive Privacy in expectation (App. C) is audited by enumeration (finite outputs) or Monte
Carlo with a CLT lower confidence bound. Anything else raises
:class:`~persuasive.errors.UnsupportedCombinationError`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from persuasive import _domains as dm
from persuasive import _tolerances as tol
from persuasive import _validation as v
from persuasive.audit.core import q_grid_or_default
from persuasive.audit.noisy_mean_laplace import is_laplace_mean, laplace_mean_audit
from persuasive.classes import FiniteClass, GaussianMeanClass, NeighbourPriors, SmallCellClass
from persuasive.definitions import PersuasivePrivacy, PersuasivePrivacyExpectation
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.mechanisms import (
    CellSuppression,
    Composition,
    ExactMean,
    GaussianMechanism,
    Mechanism,
)
from persuasive.mechanisms.composed import ComposedRelease
from persuasive.results import Audit
from persuasive.scores import LogScore, MarginalDSS

#: Default number of refined starts per covariance family in the Prop 7 search.
DEFAULT_N_STARTS: int = 4


def _unsupported(
    mechanism: Mechanism, definition: Any, why: str = ""
) -> UnsupportedCombinationError:
    return UnsupportedCombinationError(
        f"no audit for {type(mechanism).__name__} x {type(definition.priors).__name__} "
        f"({', '.join(type(s).__name__ for s in definition.scores)}){': ' + why if why else ''}"
    )


def _check_rng(rng: Any) -> Any:
    """``rng`` if it is None, a seed (an int >= 0) or a numpy Generator, else ValidationError."""
    if rng is None or isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and int(rng) >= 0:
        return int(rng)
    raise ValidationError(
        "rng must be None (fresh entropy), a non-negative int seed or a "
        f"numpy.random.Generator; got {v.echo(rng)}"
    )


def _noisy_mean(mechanism: Mechanism) -> bool:
    from persuasive.certify.noisy_mean import noise_of

    return isinstance(noise_of(mechanism), GaussianMechanism)


def audit(
    mechanism: Mechanism,
    definition: Any,
    *,
    x: ArrayLike | None = None,
    rng: Any = None,
    n_samples: int = 100_000,
    confidence: float = tol.MC_CONFIDENCE,
    n_starts: int = DEFAULT_N_STARTS,
    q_grid: ArrayLike | None = None,
) -> Audit:
    r"""Search for the largest relative loss a Receiver in the class can reach.

    The exhibited κ of a witness (S, x, Q) at the definition's δ is the upper (1 − δ)-quantile
    of :math:`\Delta_S(Q, T, x)` under :math:`T \sim M(x, \cdot)`:

    .. math:: k^\ast = \max\{k : \mathbb P_x[\Delta_S(Q, T, x) \ge k] > \delta\},

    so (𝒮, 𝒬_x, κ', δ)-PP (Definition 3, Bon et al. 2026) fails for every κ' < k*. The audit
    reports the largest k* found; a certificate's κ is an upper bound on it.

    Parameters
    ----------
    mechanism : Mechanism
        The release M.
    definition : PersuasivePrivacy or PersuasivePrivacyExpectation
        The guarantee to audit (scores, prior class, κ, δ or risk).
    x : array_like, optional
        The Sender's dataset, or a 2-d array of datasets to try. Defaults: the finite kernel's
        inputs; ``[0]`` for noise mechanisms (translation invariant); ``0..10`` for deterministic
        releases under integer neighbours; zeros of the smallest admissible n for Prop 7.
    rng : None, int or numpy.random.Generator
        Randomness of Monte Carlo and random search starts: None (fresh entropy), a seed
        (an int >= 0) or a Generator.
    n_samples : int
        Monte Carlo sample size per dataset (continuous outputs), from 2 to
        ``MAX_SAMPLES`` = 1e10; drawn in chunks, so memory stays bounded.
    confidence : float
        Confidence of Monte Carlo lower bounds, in (0, 1).
    n_starts : int
        Refined starts per covariance family (Prop 7 search).
    q_grid : array_like, optional
        Two-point weights q = Q({x}) in (0, 1] for neighbour priors; default down to
        ``TWO_POINT_Q_MIN`` (the supremum is the limit q -> 0).

    Returns
    -------
    Audit
        ``kappa`` (the lower bound), ``witness`` (score, x, prior, t), ``method``,
        ``confidence`` (1 for exact methods) and ``holds`` (``kappa <= definition.kappa``
        up to ``LOSS_ATOL``).

    Raises
    ------
    ValidationError
        A bad argument, named (e.g. ``rng="abc"``, ``n_samples`` above ``MAX_SAMPLES``).
    UnsupportedCombinationError
        When no audit method covers the (mechanism, definition) pair.

    Examples
    --------
    >>> import persuasive as pp
    >>> a = pp.audit(pp.RandomizedResponse(1.0, 2), pp.pure_dp(1.0))
    >>> round(a.kappa, 9), a.holds, a.method
    (1.0, True, 'enumeration')
    """
    if not isinstance(mechanism, Mechanism):
        raise ValidationError(
            f"mechanism must be a Mechanism (e.g. pp.ExactMean()); got {mechanism!r}"
        )
    if not isinstance(definition, (PersuasivePrivacy, PersuasivePrivacyExpectation)):
        raise ValidationError(
            f"definition must be pp.PersuasivePrivacy or "
            f"pp.PersuasivePrivacyExpectation; got {definition!r}"
        )
    n_samples = dm.check("n_samples", n_samples)  # up to MAX_SAMPLES: streamed in chunks
    n_starts = dm.check("n_starts", n_starts)
    confidence = dm.check("confidence", confidence)
    grid = q_grid_or_default(q_grid)
    gen = np.random.default_rng(_check_rng(rng))
    if x is not None:
        x = v.array("x", x, ndim=(0, 1, 2))
    priors = definition.priors
    tail = isinstance(definition, PersuasivePrivacy)
    if isinstance(priors, NeighbourPriors):
        if not all(isinstance(s, LogScore) for s in definition.scores):
            raise _unsupported(
                mechanism, definition, "neighbour priors are audited with the log score (Prop 6)"
            )
        from persuasive.audit.enumeration import finite_view, neighbour_audit

        try:
            view = finite_view(mechanism)
        except (UnsupportedCombinationError, ValidationError):
            view = None
        if view is not None:
            return neighbour_audit(mechanism, definition, x, grid)
        if mechanism.finite:
            raise _unsupported(mechanism, definition, "finite but not enumerable")
        from persuasive.audit.composition import mc_audit
        from persuasive.audit.montecarlo import fits_in_memory, neighbour_mc_audit

        if isinstance(mechanism, (Composition, ComposedRelease)) or not fits_in_memory(
            mechanism, priors, x, n_samples
        ):
            return mc_audit(mechanism, definition, x, grid, n_samples, confidence, gen)
        return neighbour_mc_audit(mechanism, definition, x, grid, n_samples, confidence, gen)
    if isinstance(priors, FiniteClass) and tail:
        from persuasive.audit.enumeration import finite_class_audit

        return finite_class_audit(mechanism, definition, x)
    if isinstance(priors, GaussianMeanClass) and tail and isinstance(mechanism, ExactMean):
        if not all(isinstance(s, MarginalDSS) for s in definition.scores):
            raise _unsupported(mechanism, definition, "Prop 7 audits use MarginalDSS scores")
        from persuasive.audit.gaussian_search import gaussian_mean_audit

        return gaussian_mean_audit(mechanism, definition, x, gen, n_starts)
    if isinstance(priors, GaussianMeanClass) and tail and _noisy_mean(mechanism):
        if not all(isinstance(s, MarginalDSS) for s in definition.scores):
            raise _unsupported(mechanism, definition, "noisy-mean audits use MarginalDSS scores")
        from persuasive.audit.noisy_mean import noisy_mean_audit

        return noisy_mean_audit(mechanism, definition, n_samples, confidence, gen)
    if isinstance(priors, GaussianMeanClass) and tail and is_laplace_mean(mechanism):
        return laplace_mean_audit(mechanism, definition, n_samples, confidence, gen)
    if isinstance(priors, SmallCellClass) and tail and isinstance(mechanism, CellSuppression):
        from persuasive.audit.small_cell import small_cell_audit

        return small_cell_audit(mechanism, definition, x)
    raise _unsupported(mechanism, definition)


__all__ = ["audit"]
