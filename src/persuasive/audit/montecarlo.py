r"""Monte Carlo audits of continuous-output releases against neighbour priors (Prop 6).

For each dataset x and neighbour x', N outputs :math:`T_1, \dots, T_N \sim M(x, \cdot)` are drawn
once and the privacy loss :math:`\ell(T_j) = \log m(x, T_j) - \log m(x', T_j)` is computed
vectorised. The two-point loss :math:`\Delta_q = -\log(q + (1 - q)e^{-\ell})` is increasing in
ℓ, so its k-th largest sample is :math:`\Delta_q(\ell_{(k)})` for every q at once.

The reported κ is :math:`\Delta_q(\ell_{(k)})` maximised over the q grid, where k is the smallest
count whose one-sided Clopper–Pearson lower bound on :math:`P_x[\ell \ge \ell_{(k)}]` exceeds δ:
with the stated confidence, PP fails for every smaller κ. The confidence is split over the
(x, x') pairs (Bonferroni), so the whole audit holds at the stated level. For δ = 0 the maximum
observed loss is reported; it was observed, so it has positive probability (density).

Persuasive Privacy in expectation (App. C, [RECON, docs/math.md §7]) uses a CLT lower confidence
bound of :math:`\mathbb E_x[\varphi(\Delta_q)]` (Bonferroni over q and pairs), an asymptotic
rather than finite-sample bound.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from persuasive.audit.core import finish, required_rank, two_point_delta
from persuasive.audit.expectation import mc_risk_lower, normal_quantile
from persuasive.audit.stream import CHUNK_VALUES
from persuasive.classes import NeighbourPriors
from persuasive.definitions import PersuasivePrivacy
from persuasive.mechanisms import (
    GaussianMechanism,
    GeometricMechanism,
    LaplaceMechanism,
    Mechanism,
)
from persuasive.priors import TwoPointPrior
from persuasive.results import Audit, Witness

#: The in-memory path holds at most this many values at once; larger audits are streamed in
#: chunks (:mod:`persuasive.audit.stream`, :func:`persuasive.audit.composition.mc_audit`).
IN_MEMORY_VALUES: int = 4 * CHUNK_VALUES


def fits_in_memory(mech: Mechanism, priors: NeighbourPriors, x: Any, n_samples: int) -> bool:
    """Whether the in-memory path (all N draws at once) stays below :data:`IN_MEMORY_VALUES`."""
    xs = np.zeros((1, 1)) if x is None else np.asarray(x, dtype=np.float64)
    xs = xs.reshape(1, -1) if xs.ndim <= 1 else xs
    dim = xs.shape[1]
    width = dim + 2 * dim + 1  # the draws, the losses against x +- e_j, and a work array
    if priors.pairs is not None:
        width = dim + len(priors.pairs) + 1
    return n_samples * width <= IN_MEMORY_VALUES


def _noise_loss(mech: Mechanism, z: NDArray[np.float64], d: float) -> NDArray[np.float64] | None:
    r"""Per-coordinate privacy loss :math:`\log f(z) - \log f(z + d)` of additive noise f."""
    if isinstance(mech, GaussianMechanism):
        c = 1.0 / (2.0 * mech.sigma**2)
        out = z * (2.0 * d * c)
        out += d * d * c
        return out
    if isinstance(mech, (LaplaceMechanism, GeometricMechanism)):
        # |z + d| - |z| = sign(d) * clip(2z + d, -|d|, |d|)
        out = z * 2.0
        out += d
        np.clip(out, -abs(d), abs(d), out=out)
        out *= np.sign(d) / mech.scale
        return out
    return None


def loss_samples(
    mech: Mechanism,
    x: NDArray[np.float64],
    neighbours: list[NDArray[np.float64]],
    n_samples: int,
    rng: np.random.Generator,
) -> tuple[Callable[[int], Any], list[NDArray[np.float64]]]:
    r"""Draw :math:`T \sim M(x, \cdot)` once; return :math:`j \mapsto T_j` and
    :math:`\ell_{x,x'}(T)` for each neighbour x'.

    For additive Gaussian, Laplace and geometric noise :math:`T = x + Z`, the loss against a
    neighbour differing in coordinate j by d is computed from the noise alone,
    :math:`\ell = \log f(Z_j) - \log f(Z_j + d)` (the other coordinates cancel), so no
    likelihood of the full output is evaluated; other mechanisms use ``log_likelihood``.

    Examples
    --------
    >>> import numpy as np, persuasive as pp
    >>> from persuasive.audit.montecarlo import loss_samples
    >>> t, ells = loss_samples(pp.LaplaceMechanism(1.0), np.zeros(1), [np.ones(1)], 1000,
    ...                        np.random.default_rng(0))
    >>> t(0).shape, bool(np.all(np.abs(ells[0]) <= 1.0 + 1e-12))
    ((1,), True)
    """
    diffs = [x - xp for xp in neighbours]
    single = all(np.count_nonzero(dd) == 1 for dd in diffs)
    if single and _noise_loss(mech, np.zeros(1), 1.0) is not None:
        z = mech._noise(rng, (n_samples, x.shape[0]))  # type: ignore[attr-defined]
        ells = []
        for dd in diffs:
            j = int(np.flatnonzero(dd)[0])
            ells.append(_noise_loss(mech, z[:, j], float(dd[j])))
        return (lambda k: x + z[k]), ells  # type: ignore[return-value]
    t = mech.sample(x, n_samples, rng)
    lx = np.asarray(mech.log_likelihood(x, t), dtype=np.float64)
    return (lambda k: t[k]), [
        lx - np.asarray(mech.log_likelihood(xp, t), dtype=np.float64) for xp in neighbours
    ]


def monotone_tail_losses(
    mech: Mechanism,
    x: NDArray[np.float64],
    neighbours: list[NDArray[np.float64]],
    n_samples: int,
    k: int,
    rng: np.random.Generator,
) -> list[tuple[float, NDArray[np.float64]]] | None:
    r"""The k-th largest privacy loss against each neighbour, and the output attaining it,
    without computing the loss of every sample.

    For additive Gaussian, Laplace and geometric noise the loss against a neighbour differing in
    one coordinate j by d, :math:`\ell = \log f(Z_j) - \log f(Z_j + d)`, is a monotone function
    of :math:`Z_j` (non-decreasing for d > 0, non-increasing for d < 0). So the k-th largest
    loss is the loss at the k-th largest (or k-th smallest) noise draw: one ``np.partition``
    of each noise column at both ranks serves every neighbour. ``None`` when the mechanism or the
    neighbours do not have this form.
    """
    diffs = [x - xp for xp in neighbours]
    if not all(np.count_nonzero(dd) == 1 for dd in diffs):
        return None
    if _noise_loss(mech, np.zeros(1), 1.0) is None:
        return None
    z = mech._noise(rng, (n_samples, x.shape[0]))  # type: ignore[attr-defined]
    out = []
    for dd in diffs:
        j = int(np.flatnonzero(dd)[0])
        idx = _kth_largest_continuous(z[:, j], k, largest=bool(dd[j] > 0))
        ell = _noise_loss(mech, z[idx : idx + 1, j].copy(), float(dd[j]))
        out.append((float(ell[0]) if ell is not None else -np.inf, x + z[idx]))
    return out


#: Size of the sub-sample that sets the pre-filter threshold of ``_kth_largest_continuous``.
_PILOT = 20_000


def _kth_largest_continuous(a: NDArray[np.float64], k: int, largest: bool = True) -> int:
    """Index of the k-th largest (or, with ``largest=False``, k-th smallest) entry of ``a``,
    exact, in one comparison pass when k << N.

    A pilot quantile of a sub-sample sets a threshold just beyond the k-th value; the entries
    past it (about 1.2 k + a few hundred) are then partitioned exactly. If the threshold turns
    out too far (fewer than k entries pass), a full partition is used, so the result never
    depends on the pilot.
    """
    n = a.size
    if k <= n // 4 and n > 4 * _PILOT:
        pilot = a[:: n // _PILOT]
        level = min(1.0, 1.2 * k / n + 5.0 / np.sqrt(pilot.size))
        thr = np.quantile(pilot, 1.0 - level if largest else level)
        cand = np.flatnonzero(a >= thr if largest else a <= thr)
        if cand.size >= k:
            pos = cand.size - k if largest else k - 1
            return int(cand[np.argpartition(a[cand], pos)[pos]])
    pos = n - k if largest else k - 1
    return int(np.argpartition(a, pos)[pos])


def _kth_largest(a: NDArray[np.float64], k: int) -> int:
    """Index of the k-th largest entry (k >= 1), in O(N).

    An atom at the maximum (Laplace and geometric losses put mass >= 1/2 on ℓ = 1/b) is
    detected by counting first: introselect is slow on many ties.
    """
    top = int(np.argmax(a))
    if k == 1:
        return top
    if np.count_nonzero(a[:256] == a[top]) >= 2 and np.count_nonzero(a == a[top]) >= k:
        return top  # cheap probe first: a continuous loss has no ties
    pos = a.size - k
    return int(np.argpartition(a, pos)[pos])


def neighbour_mc_audit(
    mech: Mechanism,
    definition: Any,
    x: Any,
    q_grid: NDArray[np.float64],
    n_samples: int,
    confidence: float,
    rng: np.random.Generator,
) -> Audit:
    r"""Monte Carlo audit of (L, 𝓗, κ, δ)-PP, or of PPE, for a continuous release.

    Examples
    --------
    >>> import persuasive as pp
    >>> a = pp.audit(pp.LaplaceMechanism(1.0), pp.probabilistic_dp(0.5, 0.3), rng=0,
    ...              n_samples=20_000)
    >>> round(a.kappa, 6), a.method  # the atom at l = 1/b has mass 1/2 > 0.3
    (1.0, 'monte-carlo')
    """
    priors: NeighbourPriors = definition.priors
    xs = np.zeros((1, 1)) if x is None else np.asarray(x, dtype=np.float64)
    xs = xs.reshape(1, -1) if xs.ndim <= 1 else xs
    pairs = [(xx, [np.asarray(p, dtype=np.float64) for p in priors.neighbours(xx)]) for xx in xs]
    n_tests = max(sum(len(nb) for _, nb in pairs), 1)
    tail = isinstance(definition, PersuasivePrivacy)
    if tail:
        k = required_rank(n_samples, definition.delta, 1.0 - (1.0 - confidence) / n_tests)
    else:
        z = normal_quantile(confidence, n_tests * q_grid.size)
    best, best_w, evals = -np.inf, None, 0
    for xx, nbs in pairs:
        fast = monotone_tail_losses(mech, xx, nbs, n_samples, k, rng) if tail else None
        if fast is not None:
            for xp, (ell_k, tk) in zip(nbs, fast, strict=True):
                evals += q_grid.size
                vals = two_point_delta(q_grid, ell_k)
                g = int(np.argmax(vals))
                if vals[g] > best:
                    best = float(vals[g])
                    best_w = Witness(definition.scores[0], xx, TwoPointPrior(xx, xp, q_grid[g]), tk)
            continue
        t, ells = loss_samples(mech, xx, nbs, n_samples, rng)
        for xp, ell in zip(nbs, ells, strict=True):
            evals += q_grid.size
            if tail:
                j = _kth_largest(ell, k)
                vals = two_point_delta(q_grid, ell[j])
                tj: Any = t(j)
            else:
                vals = mc_risk_lower(
                    definition.risk, two_point_delta(q_grid[:, None], ell[None, :]), z
                )
                tj = None
            g = int(np.argmax(vals))
            if vals[g] > best:
                best = float(vals[g])
                best_w = Witness(definition.scores[0], xx, TwoPointPrior(xx, xp, q_grid[g]), tj)
    kind = "one-sided Clopper-Pearson" if tail else "one-sided normal (CLT, asymptotic)"
    notes = (
        f"{kind} bound at confidence {confidence:g}, Bonferroni over {n_tests} "
        f"neighbour pair(s); {n_samples} samples per dataset",
        f"supremum over q is the limit q -> 0 (Prop 6); grid down to q = {q_grid.min():g}",
    )
    return finish(
        definition,
        best,
        best_w,
        "monte-carlo",
        confidence=confidence,
        evaluations=evals,
        notes=notes,
    )
