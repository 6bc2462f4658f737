r"""Exact audits by enumeration: finite kernels and deterministic releases.

For neighbour two-point priors (Prop 6, Bon et al. 2026) and a finite output space the
distribution of the log-score loss is known exactly: with
:math:`\ell(t) = \log m(x, t) - \log m(x', t)`,

.. math:: \Delta_q(t) = -\log\big(q + (1 - q)e^{-\ell(t)}\big),
          \qquad T \sim M(x, \cdot) \text{ on finitely many outputs.}

:math:`\Delta_q` is increasing in ℓ for every q < 1, so the upper (1 − δ)-quantile output is
the same for every q; the audit evaluates the whole q grid there and keeps the best q (the
supremum is the limit q → 0, docs/math.md §6). Joint and chained releases of two finite kernels are
enumerated through ``as_finite()``; :class:`~persuasive.classes.FiniteClass` priors are
evaluated output by output with :func:`persuasive.relative_loss`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from persuasive.audit.core import finish, tail_quantile, two_point_delta
from persuasive.audit.expectation import exact_risk
from persuasive.classes import FiniteClass, NeighbourPriors
from persuasive.definitions import PersuasivePrivacy
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.loss import relative_loss
from persuasive.mechanisms import Chain, Composition, FiniteKernel, Joint, Mechanism
from persuasive.mechanisms.composed import ComposedRelease
from persuasive.priors import DiscretePrior, TwoPointPrior
from persuasive.results import Audit, Witness

#: Datasets tried for a deterministic release under the integer neighbour relation when no x is
#: given: the scalars 0, 1, ..., 10.
DEFAULT_SCALAR_DATASETS = np.arange(11.0)[:, None]


def finite_view(mech: Mechanism) -> tuple[Mechanism, Callable[[Any], Any]] | None:
    """The mechanism to enumerate and a map from its outputs to the original's outputs
    (compositions of finite kernels: their product kernel, when small enough)."""
    if isinstance(mech, (Composition, ComposedRelease)):
        from persuasive.audit.composition import finite_composition

        return finite_composition(mech)
    if isinstance(mech, FiniteKernel) or (mech.deterministic and mech.finite):
        return mech, lambda t: t
    if isinstance(mech, Joint):
        k = mech.as_finite()
        j = mech.post.n_outputs  # type: ignore[attr-defined]
        return k, lambda t: (float(int(t) // j), float(int(t) % j))
    if isinstance(mech, Chain) and mech.finite:
        return mech.as_finite(), lambda t: t
    return None


def _datasets(mech: Mechanism, priors: NeighbourPriors, x: Any) -> NDArray[np.float64]:
    if x is not None:
        xs = np.asarray(x, dtype=np.float64)
        return xs.reshape(1, -1) if xs.ndim <= 1 else xs
    if isinstance(mech, FiniteKernel):
        return np.arange(float(mech.n_inputs))[:, None]
    if priors.pairs is not None:
        return np.array(sorted({float(i) for i, _ in priors.pairs}))[:, None]
    return DEFAULT_SCALAR_DATASETS


def _pairs(
    mech: Mechanism, priors: NeighbourPriors, datasets: NDArray[np.float64]
) -> list[tuple[NDArray[np.float64], NDArray[np.float64]]]:
    out = []
    for x in datasets:
        for xp in priors.neighbours(x):
            if isinstance(mech, FiniteKernel) and not 0 <= xp[0] < mech.n_inputs:
                continue
            out.append((x, np.asarray(xp, dtype=np.float64)))
    return out


def _loss_table(
    mech: Mechanism, x: NDArray[np.float64], xp: NDArray[np.float64]
) -> tuple[Any, NDArray[np.float64], NDArray[np.float64]]:
    """Outputs of M(x, ·), their probabilities and the privacy loss ℓ(t) against x'."""
    outs, probs = mech.output_distribution(x)
    with np.errstate(divide="ignore"):
        lx = np.log(probs)
    lxp = np.asarray(mech.log_likelihood(xp, outs), dtype=np.float64).reshape(lx.shape)
    with np.errstate(invalid="ignore"):
        ell = np.where(np.isneginf(lxp), np.inf, lx - lxp)
    return outs, probs, ell


def neighbour_audit(mech: Mechanism, definition: Any, x: Any, q_grid: NDArray[np.float64]) -> Audit:
    r"""Exact audit of a finite or deterministic release against neighbour priors (Prop 6).

    Examples
    --------
    >>> import persuasive as pp
    >>> a = pp.audit(pp.RandomizedResponse(2.0, 4), pp.probabilistic_dp(1.0, 0.5))
    >>> round(a.kappa, 9), a.method
    (2.0, 'enumeration')
    """
    view = finite_view(mech)
    if view is None:
        raise UnsupportedCombinationError(f"no finite enumeration of {type(mech).__name__}")
    kern, to_out = view
    priors: NeighbourPriors = definition.priors
    expectation = not isinstance(definition, PersuasivePrivacy)
    try:
        pairs = _pairs(kern, priors, _datasets(kern, priors, x))
    except ValidationError as exc:
        raise ValidationError(
            f"cannot enumerate neighbours for {type(mech).__name__}; pass "
            f"x (a dataset or a 2-d array of datasets): {exc}"
        ) from exc
    best, best_w, evals, unbounded = -np.inf, None, 0, False
    for xx, xp in pairs:
        outs, probs, ell = _loss_table(kern, xx, xp)
        evals += q_grid.size
        if expectation:
            vals = exact_risk(
                definition.risk, two_point_delta(q_grid[:, None], ell[None, :]), probs
            )
            g = int(np.argmax(vals))
            val, t = float(vals[g]), None
        else:
            _, idx = tail_quantile(ell, probs, definition.delta)
            if idx < 0:
                continue
            vals = two_point_delta(q_grid, ell[idx])
            g = int(np.argmax(vals))
            val, t = float(vals[g]), to_out(np.asarray(outs)[idx])
            unbounded |= bool(np.isinf(ell[idx]) and q_grid[g] < 1)
        if val > best:
            best = val
            best_w = Witness(definition.scores[0], xx, TwoPointPrior(xx, xp, q_grid[g]), t)
    notes: tuple[str, ...] = (
        "supremum over q is the limit q -> 0 (Prop 6); evaluated on a grid down to "
        f"q = {q_grid.min():g}",
    )
    if unbounded:
        notes += (
            "the neighbour can never produce the witness output (infinite privacy loss): "
            "the loss -log q grows without bound as q -> 0",
        )
    method = "enumeration"
    return finish(
        definition,
        max(best, 0.0) if best_w is None else best,
        best_w,
        method,
        evaluations=evals,
        notes=notes,
    )


def finite_class_audit(mech: Mechanism, definition: Any, x: Any) -> Audit:
    """Exact audit over an explicit :class:`~persuasive.classes.FiniteClass` of priors.

    Examples
    --------
    >>> import persuasive as pp
    >>> q = pp.DiscretePrior([0, 1], [0.5, 0.5])
    >>> d = pp.PersuasivePrivacy(pp.LogScore(), pp.FiniteClass([q]), 1.0)
    >>> round(pp.audit(pp.RandomizedResponse(1.0, 2), d).kappa, 6)
    0.379885
    """
    view = finite_view(mech)
    if view is None or not isinstance(definition, PersuasivePrivacy):
        raise UnsupportedCombinationError(
            f"FiniteClass audits need a finite mechanism and "
            f"PersuasivePrivacy; got {type(mech).__name__}"
        )
    kern, to_out = view
    priors = definition.priors
    assert isinstance(priors, FiniteClass)
    best, best_w, evals = -np.inf, None, 0
    for prior in priors.priors:
        if x is not None:
            cands = np.asarray(x, dtype=np.float64).reshape(-1, prior.dim)
        elif isinstance(prior, DiscretePrior):
            cands = prior.support
        else:
            raise ValidationError(
                f"pass x: the prior {prior!r} has no finite support to enumerate datasets from"
            )
        for xx in cands:
            outs, probs = kern.output_distribution(xx)
            for s in definition.scores:
                for member in s.members(prior.dim):
                    ts = [to_out(t) for t in np.asarray(outs)]
                    losses = np.array([relative_loss(member, prior, mech, xx, t) for t in ts])
                    evals += 1
                    val, idx = tail_quantile(losses, probs, definition.delta)
                    if idx >= 0 and val > best:
                        best, best_w = val, Witness(member, xx, prior, ts[idx])
    return finish(definition, best, best_w, "enumeration", evaluations=evals)
