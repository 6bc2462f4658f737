r"""Prop 7 with noise: the mean released with Gaussian noise (this library's extension).

*Not a result of the paper*: an extension of Prop 7 (Bon et al. 2026) derived and proved in
``docs/release_means.md``. The release is :math:`T = \bar x + e`, :math:`e \sim \mathcal N(0,
s^2)`, the scores are the marginal Dawid–Sebastiani family :math:`\mathcal I` and the priors the
class :math:`\mathcal G^{r,V}_x = \mathcal G^r_x \cap \{\bar\Sigma \le V^2\}` of
:class:`~persuasive.GaussianMeanClass` (``max_mean_sd = V``; ``None`` means
:math:`V = \infty`). With :math:`\gamma = \bar\Sigma/(\bar\Sigma + s^2) \in (0, \gamma_{\max}]`,
:math:`\gamma_{\max} = V^2/(V^2 + s^2)`, :math:`c = 1 - 1/r_2` and
:math:`Z \sim \mathcal N(0, 1)`,

.. math::

    \Delta_i \le -\log(1 - c\gamma) + v^2, \qquad
    v = \frac{T - \bar\mu}{\sqrt{\bar\Sigma + s^2}} \sim \sqrt{r_1\gamma'} + \sqrt{1-\gamma}\,Z
    \quad (\text{in law, } \gamma' \le \gamma),

so :math:`\kappa(\delta) = \sup_{0 < \gamma \le \gamma_{\max}} -\log(1 - c\gamma) +
q_{1-\delta}\big[(\sqrt{r_1\gamma} + \sqrt{1-\gamma}\,Z)^2\big]`. The supremum is *not* at
:math:`\gamma_{\max}` in general (the function is not monotone in γ: at γ → 0 it tends to the
:math:`\chi^2_1` quantile), so it is bounded over a partition of :math:`[0, \gamma_{\max}]` by
interval arithmetic that errs towards larger κ (:func:`gaussian_noise_kappa`).

Laplace noise is handled by :mod:`persuasive.certify.noisy_mean_laplace`, which proves there is no
finite κ against this class for δ < 1/2 (docs/release_means.md, section c′).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from persuasive._rounding import above
from persuasive.certify.prop7 import _n_of
from persuasive.certify.registry import (
    THEOREMS,
    Bound,
    Theorem,
    tail_definition_reason,
)
from persuasive.classes import GaussianMeanClass
from persuasive.mechanisms import Chain, GaussianMechanism, LaplaceMechanism, Mechanism
from persuasive.scores import MarginalDSS

#: Number of uniform cells of the fixed partition of γ ∈ [0, 1] (refined geometrically near 0,
#: clipped at γ_max) over which the supremum in γ is bounded; finer is tighter, never less safe.
#: The partition does not depend on γ_max, so the bound is monotone in the noise sd and in r1.
GAMMA_CELLS: int = 4096

#: A candidate threshold k is accepted only if the bound on the tail mass is below
#: ``delta * (1 - TAIL_RTOL)``, so rounding in the normal tail never lowers κ.
TAIL_RTOL: float = 1e-9

#: Bisection steps for the tail threshold (the bracket shrinks by 2^-BISECT_STEPS).
BISECT_STEPS: int = 80

LAPLACE_MISSING = (
    "Laplace noise on the mean is not certified yet: it needs the posterior of the mean under a "
    "Laplace likelihood (a two-piece truncated-normal mixture) and a tail bound over the output "
    "that errs towards larger kappa (docs/release_means.md, 'Laplace noise'); use Gaussian "
    "noise, or audit the Laplace release with pp.audit"
)


def tail_threshold(
    a: NDArray[np.float64], g_lo: NDArray[np.float64], g_hi: NDArray[np.float64], delta: float
) -> NDArray[np.float64]:
    r"""Upper bound k on the (1 − δ)-quantile of :math:`|a\sqrt\gamma + \sqrt{1-\gamma}\,Z|`,
    uniformly over :math:`\gamma \in [\gamma_{lo}, \gamma_{hi}]` (``g_lo < 1``).

    For :math:`k \ge a\sqrt{\gamma_{hi}}` and every γ in the cell,

    .. math:: P[|a\sqrt\gamma + \sqrt{1-\gamma} Z| > k] \le
              \bar\Phi\Big(\frac{k - a\sqrt{\gamma_{hi}}}{\sqrt{1-\gamma_{lo}}}\Big)
              + \Phi\Big(\frac{-k - a\sqrt{\gamma_{lo}}}{\sqrt{1-\gamma_{lo}}}\Big)
              =: \Psi(k),

    (each argument is moved to its least favourable end of the cell; exact when
    :math:`\gamma_{lo} = \gamma_{hi}`), which decreases in k; bisection returns the upper end
    of a bracket with
    :math:`\Psi(k) \le \delta(1 - \text{TAIL\_RTOL})`. δ = 0 gives ``inf``.

    Examples
    --------
    >>> import numpy as np
    >>> from persuasive.certify.noisy_mean import tail_threshold
    >>> k = tail_threshold(np.array(0.0), np.array(0.0), np.array(0.0), 0.05)
    >>> round(float(k), 6)  # the two-sided normal quantile 1.959964
    1.959964
    """
    a, g_lo, g_hi = np.broadcast_arrays(*(np.asarray(u, dtype=np.float64) for u in (a, g_lo, g_hi)))
    if delta <= 0.0:
        return np.full(a.shape, np.inf)
    scale = np.sqrt(1.0 - g_lo)
    shift, shift_lo = a * np.sqrt(g_hi), a * np.sqrt(g_lo)
    target = delta * (1.0 - TAIL_RTOL)

    def psi(k: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(
            stats.norm.sf((k - shift) / scale) + stats.norm.cdf((-k - shift_lo) / scale),
            dtype=np.float64,
        )

    lo = shift.copy()
    hi = a + float(stats.norm.isf(target / 2.0))  # Psi(hi) <= 2 sf(hi - a) <= target
    hi = np.maximum(hi, shift)
    for _ in range(BISECT_STEPS):
        mid = 0.5 * (lo + hi)
        ok = psi(mid) <= target
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    return np.asarray(hi)


def gamma_max(sigma: float, max_mean_sd: float | None) -> float:
    r""":math:`\gamma_{\max} = V^2/(V^2 + s^2)` (1 when V is unbounded)."""
    if max_mean_sd is None:
        return 1.0
    return max_mean_sd**2 / (max_mean_sd**2 + sigma**2)


def gaussian_noise_kappa(
    r1: float, r2: float, sigma: float, max_mean_sd: float | None, delta: float
) -> tuple[float, float]:
    r"""Certified κ(δ) of :math:`T = \bar x + \mathcal N(0, s^2)` under
    :math:`(\mathcal I, \mathcal G^{r,V}_x)`, and the largest pointwise value on the grid.

    The first number is the certificate: the supremum over
    :math:`\gamma \in (0, \gamma_{\max}]` of
    :math:`-\log(1 - c\gamma) + q_{1-\delta}[(\sqrt{r_1\gamma} + \sqrt{1-\gamma} Z)^2]`,
    bounded on each cell :math:`[\gamma_j, \gamma_{j+1}]` of a fixed partition by
    :math:`-\log(1 - c\gamma_{j+1}) + k_j^2` (:func:`tail_threshold`), an upper bound.
    The second is the same function evaluated at the grid points (a lower estimate of the
    supremum): their difference is the discretisation slack.

    Examples
    --------
    >>> from persuasive.certify.noisy_mean import gaussian_noise_kappa
    >>> k, lower = gaussian_noise_kappa(4.0, 4.0, 1.0, 0.1, 0.05)
    >>> round(k, 3), bool(0 <= k - lower < 1e-2)
    (3.964, True)
    """
    gmax = gamma_max(sigma, max_mean_sd)
    if delta <= 0.0:
        return math.inf, math.inf
    grid = np.unique(
        np.concatenate([np.linspace(0.0, 1.0, GAMMA_CELLS + 1), np.geomspace(1e-9, 1.0, 600)])
    )
    pts = np.concatenate([grid[grid < gmax], [gmax]])
    g_lo, g_hi = pts[:-1], pts[1:]
    c = 1.0 - 1.0 / r2
    a = math.sqrt(r1)
    upper = -np.log1p(-c * g_hi) + tail_threshold(np.array(a), g_lo, g_hi, delta) ** 2
    inner = pts[pts < 1.0]
    point = -np.log1p(-c * inner) + tail_threshold(np.array(a), inner, inner, delta) ** 2
    best = float(upper.max())
    return above(best, abs(best)), float(point.max())  # the last additions, rounded up


def noise_of(mechanism: Mechanism) -> Mechanism | None:
    """The noise kernel of Chain(mean, noise), or None if the mechanism has another shape."""
    if isinstance(mechanism, Chain) and _n_of(mechanism.first) != -1:
        return mechanism.post
    return None


class NoisyMean(Theorem):
    r"""κ(δ) of the mean plus Gaussian noise under :math:`(\mathcal I, \mathcal G^{r,V}_x)`.

    An upper bound (``exact = False``), proved in ``docs/release_means.md``; ∞ at δ = 0.

    Examples
    --------
    >>> import persuasive as pp
    >>> m = pp.Chain(pp.ExactMean(), pp.GaussianMechanism(1.0))
    >>> d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(4.0, 4.0, 0.1), 4.5, 0.05)
    >>> c = pp.certify(m, d)
    >>> round(c.kappa, 3), c.exact, c.holds  # below Prop 7's 4 + log 4 = 5.386
    (3.964, False, True)
    """

    name = "noisy_mean"
    basis = "Prop 7 with noise (persuasive extension of Bon et al. 2026, docs/release_means.md)"

    def supports(self, mechanism: Mechanism, definition: Any) -> str | None:
        post = noise_of(mechanism)
        if post is None:
            return "applies to Chain(ExactMean or LinearStatistic 1ᵀ/n, noise) only"
        why = tail_definition_reason(definition, MarginalDSS, GaussianMeanClass)
        if why is not None:
            return why
        if isinstance(post, LaplaceMechanism):  # NoisyMeanLaplace's, when it is registered
            laplace = any(t.name == "noisy_mean_laplace" for t in THEOREMS)
            return "Laplace noise: see NoisyMeanLaplace" if laplace else LAPLACE_MISSING
        if not isinstance(post, GaussianMechanism):
            return f"needs GaussianMechanism noise on the mean; got {type(post).__name__}"
        n = _n_of(mechanism.first)  # type: ignore[attr-defined]
        if n is not None and n < 2:
            return "needs n >= 2 data points (the class is empty for n = 1)"
        return None

    def kappa_at(self, mechanism: Mechanism, definition: Any, delta: float) -> Bound:
        cls: GaussianMeanClass = definition.priors
        post = mechanism.post  # type: ignore[attr-defined]
        n = _n_of(mechanism.first)  # type: ignore[attr-defined]
        if n is not None and cls.r2 * (1.0 - 1.0 / n) < 1.0:
            return 0.0, True, (f"the class is empty for n = {n}: the guarantee holds vacuously",)
        if delta <= 0.0:
            return (
                math.inf,
                True,
                (
                    "delta = 0: Gaussian noise is unbounded, so for every kappa some member of "
                    "the class and some x exceed it with positive probability (no finite kappa)",
                ),
            )
        k, lower = gaussian_noise_kappa(cls.r1, cls.r2, post.sigma, cls.max_mean_sd, delta)
        gm = gamma_max(post.sigma, cls.max_mean_sd)
        notes = [
            "upper bound: the sup over x_i is taken for each output before the tail, and the "
            f"sup over gamma in (0, {gm:.6g}] is bounded on {GAMMA_CELLS} cells by interval "
            f"arithmetic (largest value at the grid points {lower:.6g}); errs towards larger "
            "kappa",
            "no noise level certifies below the normal quantile z_{1-delta}^2: a Receiver "
            "with a very precise prior on the mean (gamma -> 0) and x_i far from its prior "
            "mean reaches it (docs/release_means.md)",
        ]
        if cls.max_mean_sd is None:
            notes.append(
                "max_mean_sd is unbounded: gamma ranges up to 1, so the bound is at least the "
                "Prop 7 value r1 + log r2 (noise cannot help against an arbitrarily vague prior)"
            )
        return k, False, tuple(notes)
