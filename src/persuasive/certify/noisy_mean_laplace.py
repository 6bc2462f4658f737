r"""Prop 7 with Laplace noise: the mean released with Laplace noise has **no finite κ**.

*Not a result of the paper*: this library's extension of Prop 7 (Bon et al. 2026), proved in
``docs/release_means.md`` ("Laplace noise: no finite κ"). The release is
:math:`T = \bar x + \mathrm{Lap}(b)`, the scores the marginal Dawid–Sebastiani family
:math:`\mathcal I` and the priors :math:`\mathcal G^{r,V}_x` of
:class:`~persuasive.GaussianMeanClass`. In the standardised coordinates of
:mod:`persuasive.priors.laplace_posterior` (:math:`\lambda = b/\sqrt{\bar\Sigma}`,
:math:`\alpha = 1/\lambda`, :math:`y = (T - \bar\mu)/\sqrt{\bar\Sigma} = w + \varepsilon`,
:math:`\varepsilon \sim \mathrm{Lap}(\lambda)`) the loss of coordinate i is

.. math::

    \Delta_i = -\log B + \frac{-\rho_i^2 g z_i^2 + 2\rho_i m z_i - \rho_i^2 m^2}{B},
    \qquad B = 1 - \rho_i^2 g .

**Theorem (this library).** For :math:`0 \le \delta < 1/2` and every finite k there is a member
of :math:`\mathcal G^{r,V}_x` with :math:`P_x[\Delta_i > k] > \delta`: κ(δ) = ∞, exactly.

*Proof sketch* (full proof in the docs). The class bounds :math:`\bar\Sigma` above only, so
:math:`\lambda \ge b/V` is unbounded. Take w = 0 and :math:`y_0 < \lambda\log\frac{1}{2\delta}`
with :math:`y_0 \ge \alpha + 1`, so :math:`P[\varepsilon > y_0] > \delta`. For
:math:`y \ge y_0`, Stein's identity :math:`g = 2\alpha\pi(y) - 4\alpha^2p_1p_2` and
:math:`\pi(y) \le \varphi(y - \alpha)/\Phi(y - \alpha)` give
:math:`g \le \bar\eta := 2\alpha\varphi(y_0 - \alpha)/\Phi(y_0 - \alpha)`, and the Mills ratio
gives :math:`p_2/p_1 \le \varphi(1)/\Phi(1) < 1/3`, so :math:`m \ge \alpha/2`. With
:math:`z_i = \alpha/(2\rho_i\bar\eta)` the numerator is at least
:math:`\alpha^2/(4\bar\eta) - \rho_i^2\alpha^2 \ge 0`, hence

.. math:: \Delta_i \ge L(\lambda) := \frac{\alpha\,\Phi(y_0 - \alpha)}{8\,\varphi(y_0 - \alpha)}
          - \alpha^2 \quad\text{on } \{y > y_0\},

and :math:`L(\lambda) \sim e^{(\lambda\log\frac{1}{2\delta})^2/2}/(8\lambda) \to \infty` as
:math:`\lambda \to \infty`. ∎

The cause: on an outlying output the Laplace posterior of the mean moves by about
:math:`\bar\Sigma/b` *without* shrinking its variance (:math:`g \to 0`), and the
Dawid–Sebastiani gain :math:`2\rho_i m z_i` of an :math:`x_i` far from its prior mean is then
unbounded. A finite κ needs a *lower* bound on the prior sd of the mean (λ bounded), which
:class:`~persuasive.GaussianMeanClass` does not state. Gaussian noise keeps
:math:`g = \gamma` constant and is certified by :class:`~persuasive.certify.NoisyMean`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import log_ndtr

from persuasive.certify.noisy_mean import noise_of
from persuasive.certify.prop7 import _n_of
from persuasive.certify.registry import (
    THEOREMS,
    Bound,
    Theorem,
    tail_definition_reason,
)
from persuasive.classes import GaussianMeanClass
from persuasive.mechanisms import LaplaceMechanism, Mechanism
from persuasive.scores import MarginalDSS

#: The witness event :math:`\{\varepsilon > y_0\}` has probability ``OVERSHOOT * delta``
#: (strictly above δ, as the theorem needs).
OVERSHOOT: float = 1.25

LAPLACE_NO_FINITE_KAPPA = (
    "Laplace noise on the mean has no finite kappa against GaussianMeanClass (proved in "
    "docs/release_means.md, 'Laplace noise: no finite kappa'): a Receiver whose prior sd of the "
    "mean is small against the noise scale, facing an x_i far from its prior mean, gains "
    "without bound on an outlying output; use Gaussian noise (NoisyMean)"
)


def is_laplace_mean(mechanism: Mechanism) -> bool:
    """True for Chain(ExactMean or LinearStatistic 1ᵀ/n, LaplaceMechanism)."""
    return isinstance(noise_of(mechanism), LaplaceMechanism)


def witness_bound(lam: ArrayLike, delta: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""The explicit lower bound :math:`L(\lambda)` of the theorem and the witness's
    :math:`\rho_i z_i = \Phi(y_0 - \alpha)/(4\varphi(y_0 - \alpha))` (broadcasting).

    With :math:`y_0 = \lambda\log\frac{1}{2\,\mathrm{OVERSHOOT}\,\delta}` the event
    :math:`\{\varepsilon > y_0\}` has probability OVERSHOOT·δ > δ, and on it
    :math:`\Delta_i \ge L(\lambda)` for the witness of the module docstring. ``nan`` where the
    proof's condition :math:`y_0 \ge \alpha + 1` fails or δ is outside (0, 1/(2·OVERSHOOT)).

    Examples
    --------
    >>> from persuasive.certify.noisy_mean_laplace import witness_bound
    >>> bound, rho_z = witness_bound([2.0, 3.0], 0.05)
    >>> [round(float(v), 1) for v in bound]  # unbounded as lambda grows
    [126.2, 3895551.2]
    """
    ll = np.asarray(lam, dtype=np.float64)
    alpha = 1.0 / ll
    if not 0.0 < delta < 0.5 / OVERSHOOT:
        nan = np.full(ll.shape, np.nan)
        return nan, nan
    y0 = ll * math.log(1.0 / (2.0 * OVERSHOOT * delta))
    d = y0 - alpha
    # Phi(d) / phi(d) in the log domain
    log_ratio = log_ndtr(d) + 0.5 * d**2 + 0.5 * math.log(2.0 * math.pi)
    with np.errstate(over="ignore"):
        ratio = np.exp(log_ratio)
    ok = d >= 1.0
    bound = np.where(ok, alpha * ratio / 8.0 - alpha**2, np.nan)
    return np.asarray(bound), np.asarray(np.where(ok, ratio / 4.0, np.nan))


class NoisyMeanLaplace(Theorem):
    r"""κ(δ) = ∞ for the mean plus Laplace noise under :math:`(\mathcal I, \mathcal G^{r,V}_x)`.

    Exact for δ < 1/2 (no finite κ holds); for δ ≥ 1/2, ∞ is only an upper bound. Proved in
    ``docs/release_means.md``.

    Examples
    --------
    >>> import persuasive as pp
    >>> m = pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(1.0))
    >>> d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(4.0, 4.0, 0.1), 9.0, 0.05)
    >>> c = pp.certify(m, d)
    >>> c.kappa, c.exact, c.holds
    (inf, True, False)
    """

    name = "noisy_mean_laplace"
    basis = (
        "Prop 7 with Laplace noise (persuasive extension of Bon et al. 2026, "
        "docs/release_means.md): no finite kappa"
    )

    def supports(self, mechanism: Mechanism, definition: Any) -> str | None:
        if not is_laplace_mean(mechanism):
            return "applies to Chain(ExactMean or LinearStatistic 1ᵀ/n, LaplaceMechanism) only"
        why = tail_definition_reason(definition, MarginalDSS, GaussianMeanClass)
        if why is not None:
            return why
        return None

    def kappa_at(self, mechanism: Mechanism, definition: Any, delta: float) -> Bound:
        cls: GaussianMeanClass = definition.priors
        n = _n_of(mechanism.first)  # type: ignore[attr-defined]
        if n is not None and cls.r2 * (1.0 - 1.0 / n) < 1.0:
            return 0.0, True, (f"the class is empty for n = {n}: the guarantee holds vacuously",)
        b = float(mechanism.post.scale)  # type: ignore[attr-defined]
        lam_min = 0.0 if cls.max_mean_sd is None else b / cls.max_mean_sd
        notes = [
            "no finite kappa: the class bounds the prior sd of the mean above only, so "
            f"lambda = b / sqrt(Sigma_bar) ranges over [{lam_min:.6g}, inf); the witness "
            "(Phi = I, rho_i^2 -> 1 - 1/r2, w = 0, x_i far from its prior mean) has "
            "P[Delta_i >= L(lambda)] > delta with L(lambda) -> inf (docs/release_means.md, "
            "'Laplace noise: no finite kappa')",
            "the cause: on an outlying output the Laplace posterior of the mean shifts without "
            "shrinking its variance, so the Dawid-Sebastiani gain 2 rho_i m z_i is unbounded "
            "in z_i; a finite kappa would need a lower bound on the prior sd of the mean, "
            "which GaussianMeanClass does not state; Gaussian noise is certified (NoisyMean)",
        ]
        if delta >= 0.5:
            notes.append(
                "delta >= 1/2: infinity is an upper bound only (the witness needs a one-sided "
                "event of probability > delta)"
            )
        return math.inf, bool(delta < 0.5), tuple(notes)


def _register() -> None:
    """Register once, just before the Prop 5 refusal (which turns every Chain away)."""
    if any(t.name == NoisyMeanLaplace.name for t in THEOREMS):
        return
    names = [t.name for t in THEOREMS]
    where = names.index("prop5") if "prop5" in names else len(THEOREMS)
    THEOREMS.insert(where, NoisyMeanLaplace())


_register()
