r"""Tight composition under (log score, neighbour priors): Prop 6 + privacy-loss distributions.

Prop 6 (Bon et al. 2026) makes :math:`(L, \mathcal H, \kappa, \delta)`-PP the same as PDP, so
for releases :math:`M_1^{\otimes k_1} \otimes \cdots` of the same data the exact failure
probability is the tail of the summed privacy loss, the same neighbour pair in every part
(Meiser & Mohammadi 2018),

.. math:: \kappa(\delta) = \inf\Big\{\varepsilon \ge 0 : \sup_{x \sim x'}
          P\Big[\sum_{i, r} \ell^{(r)}_{i,x,x'} > \varepsilon\Big] \le \delta\Big\},

computed from a pessimistically discretised privacy-loss distribution by FFT (Koskela et al.
2020; :mod:`persuasive.pld`), or in closed form when every part is Gaussian (one Gaussian with
:math:`\sigma_{\rm eff}^{-2} = \sum_i k_i/\sigma_i^2`; exact). Prop 3's additive bound
:math:`\sum_i k_i\,\kappa_i(\delta/K)` (or its optimised split for two parts) is also valid;
the certificate reports the smaller and gives both in its notes, with the discretisation
bracket.

At δ = 0 the value is exact and needs no grid: the essential supremum of a sum of independent
losses is the sum of their essential suprema *at the same neighbour pair*,

.. math:: \kappa(0) = \sup_{x \sim x'} \sum_i k_i \operatorname{ess\,sup}
          \ell_{i,x,x'},

which for finite kernels is in general smaller than Prop 3's
:math:`\sum_i k_i \sup_{x \sim x'} \operatorname{ess\,sup} \ell_{i,x,x'}` (the parts' worst
pairs differ); Laplace and geometric parts contribute :math:`k_i/b_i` at every pair, Gaussian
parts ∞. Every value is rounded up past its floating-point error
(:mod:`persuasive._rounding`).

For PPE with the mean (KL) or Rényi risk the divergences add exactly (App. C [RECON];
Mironov 2017), see :mod:`persuasive.pld.renyi`.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from persuasive._rounding import above, div_up, sum_up
from persuasive.certify.composition import Prop3
from persuasive.certify.prop6 import (
    Prop6,
    finite_matrix,
    finite_pairs,
    gaussian_delta,
    gaussian_kappa,
    loss_table_up,
)
from persuasive.certify.registry import THEOREMS, Bound, Theorem, all_of, score_names
from persuasive.classes import NeighbourPriors
from persuasive.definitions import Mean, PersuasivePrivacy, PersuasivePrivacyExpectation, Renyi
from persuasive.mechanisms import (
    Composition,
    GaussianMechanism,
    GeometricMechanism,
    LaplaceMechanism,
    Mechanism,
    RandomizedResponse,
)
from persuasive.mechanisms.composed import ComposedRelease, flatten
from persuasive.scores import LogScore

if TYPE_CHECKING:
    from persuasive.pld.compose import ComposedPLD

#: Default grid width of the privacy-loss distributions (persuasive.pld.STEP; persuasive.pld
#: imports this package, so it is imported lazily here).
STEP: float = 1e-4


def _pld_api() -> Any:
    import persuasive.pld as pld

    return pld


_NOISE = (LaplaceMechanism, GaussianMechanism, GeometricMechanism)
Part = tuple[Mechanism, int]
_CACHE: dict[str, ComposedPLD] = {}
_CACHE_SIZE = 16


def _pld(parts: list[Part], priors: Any, step: float = STEP) -> ComposedPLD:
    key = json.dumps([[m.describe(), k] for m, k in parts], default=str) + repr(priors)
    key += f"|{step!r}"
    if key not in _CACHE:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        pld = _pld_api()
        _CACHE[key] = pld.compose(parts, step, priors, pld.TAIL_MASS)
    return _CACHE[key]


def _additive_kappa(mechanism: Mechanism, parts: list[Part], d: Any, delta: float) -> float:
    """Prop 3: the optimised split for a binary Composition, else the even split δ/K."""
    if isinstance(mechanism, Composition) and len(parts) == sum(k for _, k in parts) == 2:
        return float(Prop3().kappa_at(mechanism, d, delta)[0])
    total = sum(k for _, k in parts)
    th = Prop6()
    return float(sum(k * th.kappa_at(m, d, delta / total)[0] for m, k in parts))


def _additive_delta(
    mechanism: Mechanism, parts: list[tuple[Mechanism, int]], d: Any, kappa: float
) -> float:
    if isinstance(mechanism, Composition) and len(parts) == sum(k for _, k in parts) == 2:
        return float(Prop3().delta_at(mechanism, d, kappa))
    total = sum(k for _, k in parts)
    th = Prop6()
    return float(min(1.0, sum(k * th.delta_at(m, d, kappa / total) for m, k in parts)))


def pure_kappa(parts: list[Part], priors: NeighbourPriors) -> tuple[float, str]:
    r"""Exact :math:`\kappa(0) = \sup_{x \sim x'} \sum_i k_i \operatorname{ess\,sup}
    \ell_{i,x,x'}` of a composition, rounded up, and a note naming the worst pair.

    Noise parts have the same essential supremum at every pair (1/b for Laplace and
    geometric, ∞ for Gaussian); a finite kernel's is the largest loss over the outputs x can
    produce (∞ if x' cannot produce one of them).

    Examples
    --------
    >>> import numpy as np, persuasive as pp
    >>> a = pp.FiniteKernel([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]])
    >>> round(pure_kappa([(a, 1), (pp.LaplaceMechanism(2.0), 2)], pp.NeighbourPriors())[0], 12)
    1.69314718056
    """
    noise: list[tuple[int, float]] = []
    finite: list[tuple[int, np.ndarray]] = []
    pairs = None
    for m, k in parts:
        if isinstance(m, GaussianMechanism):
            return math.inf, "a Gaussian part: its loss is unbounded, no finite kappa at delta = 0"
        if isinstance(m, (LaplaceMechanism, GeometricMechanism)):
            noise.append((k, div_up(1.0, m.scale)))
            continue
        matrix = finite_matrix(m)
        assert matrix is not None
        found = finite_pairs(priors, matrix.shape[0])
        assert not isinstance(found, str)
        pairs = found
        if isinstance(m, RandomizedResponse):  # the loss is exactly ±eps0 or 0 at every pair
            finite.append((k, np.full(found.shape[0], m.epsilon)))
            continue
        loss, p = loss_table_up(matrix, found)
        finite.append((k, np.max(np.where(p > 0, loss, -np.inf), axis=1)))
    if pairs is None:
        return sum_up(noise), "noise parts only: the sum of k_i / b_i (every pair is worst)"
    if pairs.shape[0] == 0:
        return 0.0, "no neighbouring datasets: every loss is 0"
    totals = [
        sum_up(noise + [(k, float(sup[r])) for k, sup in finite]) for r in range(pairs.shape[0])
    ]
    worst = int(np.argmax(totals))
    a, b = (int(u) for u in pairs[worst])
    return totals[worst], f"worst neighbour pair (x, x') = ({a}, {b}), the same pair in every part"


class TightComposition(Theorem):
    """Exact-up-to-discretisation κ(δ) of compositions of Prop 6 mechanisms (PDP accounting).

    Examples
    --------
    >>> import persuasive as pp
    >>> m = pp.ComposedRelease.repeat(pp.GaussianMechanism(10.0), 100)
    >>> cert = pp.certify(m, pp.probabilistic_dp(1.0, 1e-5))
    >>> cert.exact, round(cert.kappa, 4)  # one Gaussian with sigma = 1
    (True, 4.7648)
    """

    name = "tight"
    basis = "Prop 6 + privacy-loss distribution (tight composition)"

    def __init__(self, step: float = STEP) -> None:
        #: Grid width of the privacy-loss distributions (the registered instance uses STEP).
        self.step = float(step)

    def supports(self, mechanism: Mechanism, definition: Any) -> str | None:
        if not isinstance(mechanism, (Composition, ComposedRelease)):
            return "applies to Composition / ComposedRelease only"
        if not isinstance(definition, (PersuasivePrivacy, PersuasivePrivacyExpectation)):
            return "needs a PersuasivePrivacy or PersuasivePrivacyExpectation definition"
        if not all_of(definition.scores, LogScore):
            return f"needs scores = LogScore only; got {score_names(definition.scores)}"
        priors = definition.priors
        if not isinstance(priors, NeighbourPriors):
            return f"needs priors = NeighbourPriors; got {type(priors).__name__}"
        if isinstance(definition, PersuasivePrivacyExpectation):
            if not isinstance(definition.risk, (Mean, Renyi)):
                return "only the mean (KL) and Rényi risks add under composition"
            if not isinstance(mechanism, ComposedRelease):
                # binary Composition under PPE stays refused (tests/test_composition.py pins
                # it); use ComposedRelease for Rényi composition
                return "PPE composition is certified for ComposedRelease (use it for Rényi)"
        parts = flatten(mechanism)
        rows = set()
        for m, _ in parts:
            if isinstance(m, _NOISE):
                if priors.pairs is not None:
                    return (
                        "noise mechanisms use the default relation; explicit pairs are for "
                        "finite kernels"
                    )
                continue
            matrix = finite_matrix(m)
            if matrix is None:
                return f"part {type(m).__name__} has no privacy-loss distribution"
            rows.add(matrix.shape[0])
        if len(rows) > 1:
            return "finite kernels in one composition must act on the same datasets (rows)"
        return None

    def basis_for(self, mechanism: Mechanism, definition: Any) -> str:
        if isinstance(definition, PersuasivePrivacyExpectation):
            return "App. C + Rényi additivity (Bon et al. 2026; Mironov 2017)"
        return self.basis

    def kappa_at(self, mechanism: Mechanism, definition: Any, delta: float) -> Bound:
        parts = flatten(mechanism)
        if isinstance(definition, PersuasivePrivacyExpectation):
            risk = definition.risk
            alpha = float(risk.alpha) if isinstance(risk, Renyi) else 1.0
            k = _pld_api().composed_renyi(parts, alpha, definition.priors)
            return k, True, ("exact: divergences of independent releases add (orders add)",)
        if delta <= 0:  # pure DP: exact, the supremum over pairs of the summed essential suprema
            k, where = pure_kappa(parts, definition.priors)
            additive = _additive_kappa(mechanism, parts, definition, 0.0)
            return (
                min(k, additive),
                True,
                (
                    "exact at delta = 0: the supremum over neighbour pairs of the sum of the "
                    f"parts' essential suprema of the privacy loss at that pair; {where}",
                    f"additive Prop 3 bound for comparison: kappa = {additive:.6g}",
                ),
            )
        additive = _additive_kappa(mechanism, parts, definition, delta)
        sigma = _pld_api().gaussian_sigma(parts)
        if sigma is not None:
            k = gaussian_kappa(sigma, delta) if delta > 0 else math.inf
            return (
                min(k, additive),
                True,
                (
                    f"exact: every part is Gaussian, so the summed loss is one Gaussian release "
                    f"with sigma_eff = {sigma:.6g} (closed form)",
                    f"additive Prop 3 bound for comparison: kappa = {additive:.6g}",
                ),
            )
        pld = _pld(parts, definition.priors, self.step)
        lo, hi = (float(a[0]) for a in pld.kappa_bracket(delta))
        # the grid values j * step are float products and the grid snaps quotients within a
        # few ulps (persuasive.pld.pmf.SNAP): add that error back, towards larger kappa
        hi = above(hi, _magnitude(pld))
        notes = (
            f"tight: PDP tail of the summed loss from a pessimistic privacy-loss distribution "
            f"(grid {pld.step:g}, K = {pld.rounds} rounded losses, tail mass "
            f"{_pld_api().TAIL_MASS:g} "
            "counted at +inf); same neighbour pair in every part",
            f"discretisation: the exact kappa lies in [{lo:.6g}, {hi:.6g}] (width {hi - lo:.3g})",
            f"additive Prop 3 bound for comparison: kappa = {additive:.6g}",
        )
        return min(hi, additive), False, notes

    def delta_at(self, mechanism: Mechanism, definition: Any, kappa: float) -> float:
        if math.isinf(kappa):
            return 0.0
        parts = flatten(mechanism)
        additive = _additive_delta(mechanism, parts, definition, kappa)
        sigma = _pld_api().gaussian_sigma(parts)
        if sigma is not None:
            return min(gaussian_delta(sigma, kappa), additive)
        if kappa < 0:
            return 1.0
        pld = _pld(parts, definition.priors, self.step)
        # the tail at kappa minus the grid's rounding allowance (larger delta)
        eps = kappa - (above(kappa, _magnitude(pld)) - kappa)
        return min(float(pld.tail(eps)[0]), additive)


def _magnitude(pld: ComposedPLD) -> float:
    """The largest |grid value| of the composed pmfs (scale of their rounding error)."""
    return max(
        max(abs(p.offset), abs(p.offset + p.masses.size)) * p.step for p in pld.pmfs.values()
    )


def _register() -> None:
    """Insert before Prop 3 (idempotent)."""
    if any(t.name == TightComposition.name for t in THEOREMS):
        return
    names = [t.name for t in THEOREMS]
    THEOREMS.insert(names.index("prop3") if "prop3" in names else len(THEOREMS), TightComposition())


_register()
