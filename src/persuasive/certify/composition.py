r"""Composition (Prop 3) and post-processing (Props 4–5) of certificates (Bon et al. 2026).

**Prop 3.** If :math:`M_1` is :math:`(\mathcal S, \mathcal Q_x, \kappa_1, \delta_1)`-PP,
:math:`M_2` is :math:`(\mathcal S, \mathcal Q_x, \kappa_2, \delta_2)`-PP and
:math:`\mathcal Q_x` is conjugate to :math:`M_1` (the posterior of every prior in the class
stays in the class), then

.. math:: M_1 \otimes M_2 \text{ is }
          (\mathcal S, \mathcal Q_x, \kappa_1 + \kappa_2, \delta_1 + \delta_2)\text{-PP},

so :math:`\kappa(\delta) \le \min_{\delta_1 + \delta_2 = \delta} \kappa_1(\delta_1) +
\kappa_2(\delta_2)`. Every split is a valid bound; we minimise over a grid of splits, so the
result is an upper bound (never smaller than the true minimum over splits).

**Prop 4.** :math:`M \otimes K` with K reading only M's output keeps M's guarantee exactly:
:math:`Q_{T,U} = Q_T`, so Δ is unchanged.

**Prop 5.** Sender post-processing :math:`MK` is *not* covered in general; finite chains are
certified directly (as one finite kernel) by Prop 6 instead.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from persuasive import _tolerances as tol
from persuasive.certify.registry import Bound, Theorem, find_theorem
from persuasive.classes import FiniteClass, GaussianMeanClass, NeighbourPriors, SmallCellClass
from persuasive.closed.pdp import finite_matrix
from persuasive.definitions import PersuasivePrivacy
from persuasive.errors import UnsupportedCombinationError
from persuasive.mechanisms import Chain, Composition, Joint, Mechanism
from persuasive.priors import DiscretePrior

#: Number of interior grid points of the δ (or κ) split in Prop 3 (endpoints are added).
SPLITS = 201


def _finite_class_closed(cls: FiniteClass, mechanism: Mechanism) -> str | None:
    """None if every posterior of every member (for every output some dataset can produce)
    is again a member, else the reason. Checked by enumeration for finite kernels."""
    matrix = finite_matrix(mechanism)
    if matrix is None:
        return (
            "closure of a FiniteClass under Bayes updates is only checked for finite "
            f"kernels; got {type(mechanism).__name__}"
        )
    members = []
    for q in cls.priors:
        if not isinstance(q, DiscretePrior) or q.dim != 1:
            return "closure is only checked for FiniteClass members that are scalar DiscretePriors"
        pts = q.support[:, 0]
        if np.any(pts != np.round(pts)) or np.any(pts < 0) or np.any(pts >= matrix.shape[0]):
            return "FiniteClass members must live on the kernel's datasets 0..K-1"
        dense = np.zeros(matrix.shape[0])
        dense[pts.astype(int)] = q.probs
        members.append(dense)
    table = np.array(members)  # (C, K)
    reachable = matrix.sum(axis=0) > 0
    joint = table[:, :, None] * matrix[None, :, reachable]  # (C, K, J')
    evid = joint.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        post = np.where(evid > 0, joint / evid, np.nan)  # (C, K, J')
    post = np.moveaxis(post, 1, 2).reshape(-1, matrix.shape[0])
    post = post[~np.isnan(post).any(axis=1)]
    close = np.abs(post[:, None, :] - table[None, :, :]).max(axis=2) <= tol.PROB_SUM_ATOL
    if not close.any(axis=1).all():
        return "the FiniteClass is not closed under Bayes updates by the first mechanism"
    return None


def conjugacy_failure(priors: Any, mechanism: Mechanism) -> str | None:
    """None if the class is known conjugate to ``mechanism`` (Def 4), else the reason."""
    if isinstance(priors, NeighbourPriors):
        return None  # the posterior of a two-point prior is a two-point prior on the same pair
    if isinstance(priors, GaussianMeanClass):
        return (
            "GaussianMeanClass is not conjugate to the first mechanism: after an exact "
            "release the posterior is singular (not in the class), and no conjugacy is "
            "established for other releases"
        )
    if isinstance(priors, SmallCellClass):
        return (
            "SmallCellClass is not conjugate to the first mechanism: released cells give "
            "point masses above h, which put no mass below h"
        )
    if isinstance(priors, FiniteClass):
        return _finite_class_closed(priors, mechanism)
    return f"no conjugacy result for {type(priors).__name__}"


class Prop3(Theorem):
    """Additive composition of two PP certificates (Prop 3, Bon et al. 2026).

    Examples
    --------
    >>> import persuasive as pp
    >>> m = pp.Composition(pp.RandomizedResponse(1.0), pp.RandomizedResponse(0.5))
    >>> pp.certify(m, pp.pure_dp(2.0)).kappa
    1.5
    """

    name = "prop3"
    basis = "Prop 3 (Bon et al. 2026)"

    def supports(self, mechanism: Mechanism, definition: Any) -> str | None:
        if not isinstance(mechanism, Composition):
            return "applies to Composition(M1, M2) only"
        if not isinstance(definition, PersuasivePrivacy):
            return "Prop 3 is stated for PersuasivePrivacy (tail) definitions"
        why = conjugacy_failure(definition.priors, mechanism.first)
        if why is not None:
            return f"conjugacy (Def 4) fails: {why}"
        for part in (mechanism.first, mechanism.second):
            try:
                find_theorem(part, definition)
            except UnsupportedCombinationError as exc:
                return f"part {type(part).__name__} is not certifiable: {exc}"
        return None

    def kappa_at(self, mechanism: Mechanism, definition: Any, delta: float) -> Bound:
        assert isinstance(mechanism, Composition)
        m1, m2 = mechanism.first, mechanism.second
        t1, t2 = find_theorem(m1, definition), find_theorem(m2, definition)
        splits = np.unique(np.concatenate([[0.0, 1.0], np.linspace(0.0, 1.0, SPLITS)]))
        if delta <= 0.0:  # every split is delta1 = delta2 = 0
            splits = np.zeros(1)
        best = math.inf
        for u in splits:
            d1 = delta * u
            k = t1.kappa_at(m1, definition, d1)[0] + t2.kappa_at(m2, definition, delta - d1)[0]
            best = min(best, k)
        notes = (
            f"upper bound: kappa1(delta1) + kappa2(delta2) minimised over {splits.size} "
            "splits of delta; any split is valid, so the grid only errs towards larger "
            "kappa",
            f"parts: {t1.basis} and {t2.basis}",
        )
        return float(best), False, notes

    def delta_at(self, mechanism: Mechanism, definition: Any, kappa: float) -> float:
        assert isinstance(mechanism, Composition)
        m1, m2 = mechanism.first, mechanism.second
        t1, t2 = find_theorem(m1, definition), find_theorem(m2, definition)
        if math.isinf(kappa):
            return 0.0
        best = 1.0
        for u in np.unique(np.concatenate([[0.0, 1.0], np.linspace(0.0, 1.0, SPLITS)])):
            k1 = kappa * u
            d = t1.delta_at(m1, definition, k1) + t2.delta_at(m2, definition, kappa - k1)
            best = min(best, d)
        return float(best)


class Prop4(Theorem):
    """Receiver post-processing M ⊗ K keeps M's certificate (Prop 4, Bon et al. 2026).

    Examples
    --------
    >>> import persuasive as pp
    >>> j = pp.Joint(pp.RandomizedResponse(1.0), pp.FiniteKernel([[0.5, 0.5], [0.1, 0.9]]))
    >>> pp.certify(j, pp.pure_dp(1.0)).basis
    'Prop 4 (Bon et al. 2026)'
    """

    name = "prop4"
    basis = "Prop 4 (Bon et al. 2026)"

    def supports(self, mechanism: Mechanism, definition: Any) -> str | None:
        if not isinstance(mechanism, Joint):
            return "applies to Joint(M, K) (receiver post-processing) only"
        try:
            find_theorem(mechanism.first, definition)
        except UnsupportedCombinationError as exc:
            return f"the first mechanism is not certifiable: {exc}"
        return None

    def kappa_at(self, mechanism: Mechanism, definition: Any, delta: float) -> Bound:
        assert isinstance(mechanism, Joint)
        th = find_theorem(mechanism.first, definition)
        k, exact, notes = th.kappa_at(mechanism.first, definition, delta)
        return (
            k,
            exact,
            (
                f"Q_(T,U) = Q_T: the certificate of the first mechanism by {th.basis} "
                "carries over unchanged",
                *notes,
            ),
        )

    def delta_at(self, mechanism: Mechanism, definition: Any, kappa: float) -> float:
        assert isinstance(mechanism, Joint)
        return find_theorem(mechanism.first, definition).delta_at(
            mechanism.first, definition, kappa
        )


class Prop5Chain(Theorem):
    """Sender post-processing MK: refused unless MK is one finite kernel (Prop 5).

    Finite chains are certified directly by the theorem covering the combined kernel; this
    entry only explains the refusal otherwise.

    Examples
    --------
    >>> import persuasive as pp
    >>> c = pp.Chain(pp.GaussianMechanism(1.0), pp.GaussianMechanism(1.0))
    >>> Prop5Chain().supports(c, pp.pure_dp(1.0)) is not None
    True
    """

    name = "prop5"
    basis = "Prop 5 (Bon et al. 2026)"

    def supports(self, mechanism: Mechanism, definition: Any) -> str | None:
        if not isinstance(mechanism, Chain):
            return "applies to Chain(M, K) only"
        return (
            "sender post-processing MK is not covered: PP is not closed under it (Prop 5); "
            "only chains of finite kernels are certified, as one kernel, by Prop 6 / App. C"
        )

    def kappa_at(self, mechanism: Mechanism, definition: Any, delta: float) -> Bound:
        raise UnsupportedCombinationError(str(self.supports(mechanism, definition)))
