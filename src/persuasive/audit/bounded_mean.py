r"""Witnesses of the mean's audits inside the bounded-error class :math:`\mathcal G^{r,V,r_0}_x`.

The class (:class:`~persuasive.classes.bounded_error.BoundedErrorGaussianClass`; this
library's extension of Prop 7, Bon et al. 2026, ``docs/release_means.md`` section (e)) adds
:math:`|z_j| \le r_0` for every person j to Prop 7's class. The search audits of the exact mean
(:mod:`persuasive.audit.gaussian_search`) and of the noisy mean
(:mod:`persuasive.audit.noisy_mean`) build their witnesses here.

**The witness.** :math:`\Phi = I`, x given (default 0), the target person i with variance share
:math:`\rho_i^2 = \sigma_i^2/\|\sigma\|^2 \le c = 1 - 1/r_2` (Lemma 0), the other n − 1 people
with equal shares :math:`(1-\rho_i^2)/(n-1) \le c`, total :math:`\mathbf 1^\top\Sigma\mathbf 1 =
n^2\bar\Sigma`. The person's error is :math:`z_i = z` and the others share one error
:math:`z_o` so that the mean error is w: since :math:`w = \sum_j\sigma_j z_j/\|\sigma\|`,

.. math:: z_o = \frac{w - \rho_i z}{\sqrt{(n-1)(1-\rho_i^2)}},

and :math:`|z_o| \le r_0` for n large enough (:func:`people_needed`). Such a prior is a member:
:math:`c_\Phi = 1 \le r_2(1 - \max_j\sigma_j^2/\|\sigma\|^2)`, :math:`w^2 \le r_1`,
:math:`\bar\Sigma \le V^2`, every :math:`|z_j| \le r_0`. Lemma 2 gives its loss from
(:math:`\rho_i^2`, :math:`\gamma`, w, z) alone, so the search runs on those statistics and the
witness is built once; membership is then checked with the class's own ``contains``.

**Exact mean.** :math:`\Delta_i = -\log(1-\rho^2) + z^2 - (z - \rho w)^2/(1-\rho^2)` is concave
in z with its maximum at :math:`z = w/\rho`, so for each (ρ², w) the best z is
:math:`\mathrm{clip}(w/\rho, -r_0, r_0)`. At :math:`\rho^2 = c`: when
:math:`r_0 \ge \sqrt{r_1/c}` the supremum :math:`r_1 + \log r_2` is attained (w = √r1), else
:math:`\log r_2 + r_0^2` (w = r0/ρ), which are two of the certificate's three terms.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive.audit.core import finish
from persuasive.classes.bounded_error import BoundedErrorGaussianClass
from persuasive.errors import ValidationError
from persuasive.loss import relative_loss
from persuasive.mechanisms import Mechanism
from persuasive.priors import GaussianPrior
from persuasive.results import Audit, Witness
from persuasive.scores import MarginalDSS

__all__ = [
    "MAX_GIVEN",
    "MAX_PEOPLE",
    "bounded_exact_audit",
    "bounded_noisy_witness",
    "bounded_witness",
    "exact_design",
    "exact_loss",
    "gamma_grid",
    "noisy_design",
    "people_cap",
    "people_needed",
]

#: Witnesses have at most this many people (a dense prior; the design keeps only
#: (ρ², w, z) whose witness fits, so a very small r0 lowers the audit rather than the memory);
#: more only when r2 is so close to 1 that every member needs more (:func:`people_cap`).
MAX_PEOPLE: int = 400

#: A dataset given to the exact mean's audit may have at most this many entries (the witness
#: is a dense n x n prior).
MAX_GIVEN: int = 2000

#: Grid of the exact mean's design: variance shares ρ² and mean errors w.
N_RHO, N_W = 60, 121

#: Relative margin inside every class constraint (ρ², w, z and the others' z): membership
#: never hinges on rounding; costs about 1e-9 of κ.
MARGIN: float = 1e-9


def people_needed(
    rho2: ArrayLike, w: ArrayLike, z: ArrayLike, r0: float, c: float, i: int = 0
) -> NDArray[np.float64]:
    r"""The smallest n for which the witness of (ρ², w, z) is a member: the others' error
    :math:`|z_o| \le r_0` and share :math:`(1-\rho^2)/(n-1) \le c` (inf where ρ² > c)."""
    rho2, w, z = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (rho2, w, z)))
    rho = np.sqrt(rho2)
    lim = r0 * (1.0 - 2.0 * MARGIN)
    err = np.ceil((w - rho * z) ** 2 / ((1.0 - rho2) * lim * lim) * (1.0 + MARGIN))
    share = np.ceil((1.0 - rho2) / (c * (1.0 - MARGIN)))
    n = 1.0 + np.maximum(err, share)
    n = np.maximum(n, max(2.0, i + 1.0))
    return np.asarray(np.where(rho2 <= c * (1.0 - MARGIN) * (1 + 1e-15), n, np.inf))


def people_cap(r2: float, i: int = 0) -> int:
    r"""How many people a witness may have: :data:`MAX_PEOPLE`, or four times the fewest that
    any member needs (:math:`1 + \lceil 1/(r_2 - 1)\rceil`, the others' shares at most c when
    person i has c) if that is more, up to :data:`MAX_GIVEN`; a class that needs more people
    than that is refused (r2 very close to 1)."""
    c = 1.0 - 1.0 / r2
    fewest = int(people_needed(c * (1.0 - MARGIN), 0.0, 0.0, 1.0, c, i).min())
    if fewest > MAX_GIVEN:
        raise ValidationError(
            f"r2 must leave room for a witness of at most {MAX_GIVEN} people in the bounded-error "
            f"audit (every member has at least 1 + 1/(r2 - 1) people); got r2 = {r2:g}, which "
            f"needs {fewest}"
        )
    return min(MAX_GIVEN, max(MAX_PEOPLE, 4 * fewest))


def bounded_witness(
    rho2: float, w: float, z: float, sbar: float, i: int, x: ArrayLike
) -> tuple[GaussianPrior, NDArray[np.float64]]:
    r"""The prior of the module docstring at dataset x (n = len(x)): person i with share ρ²
    and error z, the mean error w, :math:`\bar\Sigma` = ``sbar`` (Φ = I)."""
    xs = np.asarray(x, dtype=np.float64)
    n = xs.shape[0]
    total = n * n * sbar
    var = np.full(n, (1.0 - rho2) * total / (n - 1))
    var[i] = rho2 * total
    sd = np.sqrt(var)
    rho = math.sqrt(rho2)
    z_other = (w - rho * z) / math.sqrt((n - 1) * (1.0 - rho2))
    zs = np.full(n, z_other)
    zs[i] = z
    return GaussianPrior(xs - sd * zs, np.diag(var)), xs


def exact_loss(rho2: ArrayLike, w: ArrayLike, z: ArrayLike) -> NDArray[np.float64]:
    r"""Lemma 2 at g = 1: :math:`-\log(1-\rho^2) + z^2 - (z - \rho w)^2/(1-\rho^2)`."""
    rho2, w, z = (np.asarray(a, dtype=np.float64) for a in (rho2, w, z))
    rho = np.sqrt(rho2)
    return np.asarray(-np.log1p(-rho2) + z * z - (z - rho * w) ** 2 / (1.0 - rho2))


def exact_design(
    r1: float, r2: float, r0: float, n_max: int, i: int = 0, n_rho: int = N_RHO, n_w: int = N_W
) -> tuple[float, float, float, int, float]:
    r"""(ρ², w, z, n, Δ) maximising the exact mean's loss over the class's statistics whose
    witness has at most ``n_max`` people: a (ρ², w) grid (with w = ±√r1 and the optimum
    w = r0/ρ of each ρ), z = clip(w/ρ, ±r0) (the concave maximum)."""
    c = 1.0 - 1.0 / r2
    rho2 = c * (1.0 - MARGIN) * np.linspace(1.0, 1.0 / n_rho, n_rho)
    wmax = math.sqrt(r1) * (1.0 - MARGIN)
    rho = np.sqrt(rho2)[:, None]
    w = np.concatenate(
        [np.broadcast_to(np.linspace(-wmax, wmax, n_w), (n_rho, n_w)), np.minimum(r0 / rho, wmax)],
        axis=1,
    )
    zlim = r0 * (1.0 - MARGIN)
    z = np.clip(w / rho, -zlim, zlim)
    r2d = np.broadcast_to(rho2[:, None], w.shape)
    loss = exact_loss(r2d, w, z)
    n = people_needed(r2d, w, z, r0, c, i)
    loss = np.where(n <= n_max, loss, -np.inf)
    j = np.unravel_index(int(np.argmax(loss)), loss.shape)
    return float(r2d[j]), float(w[j]), float(z[j]), int(n[j]), float(loss[j])


def _target(definition: Any) -> tuple[int, MarginalDSS]:
    """The audited person i (the first score naming one, else 0) and the score to report."""
    i = next((s.i for s in definition.scores if s.i is not None), 0)
    every = any(s.i is None for s in definition.scores)
    return i, MarginalDSS() if every else MarginalDSS(i)


def _dataset(x: Any, i: int, n_needed: int) -> NDArray[np.float64]:
    """x as one dataset with at least ``n_needed`` entries and person i in it (default 0s)."""
    if x is None:
        return np.zeros(n_needed)
    xs = np.asarray(x, dtype=np.float64)
    if xs.ndim == 1 and xs.shape[0] > MAX_GIVEN:
        raise ValidationError(
            f"x must have at most {MAX_GIVEN} entries for the bounded-error audit (its witness "
            f"is a dense prior; the loss does not depend on n, so audit a shorter x); got "
            f"{xs.shape[0]}"
        )
    if xs.ndim != 1 or xs.shape[0] < max(n_needed, i + 1):
        raise ValidationError(
            f"x must be one dataset of at least {max(n_needed, i + 1)} entries for a witness in "
            f"the bounded-error class (every |z_j| <= r0); got x of shape {xs.shape}"
        )
    return xs


def bounded_exact_audit(mech: Mechanism, definition: Any, x: Any) -> Audit:
    r"""Search audit of ExactMean under :math:`(\mathcal I, \mathcal G^{r,V,r_0}_x, \kappa, 0)`:
    :func:`exact_design`, the witness of :func:`bounded_witness` checked with the class's
    ``contains``, its loss recomputed by :func:`persuasive.relative_loss`.

    Examples
    --------
    >>> import persuasive as pp
    >>> from persuasive.classes.bounded_error import BoundedErrorGaussianClass
    >>> cls = BoundedErrorGaussianClass(1.0, 4.0, max_person_error=0.5)
    >>> d = pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 3.0)
    >>> a = pp.audit(pp.ExactMean(), d)
    >>> round(a.kappa, 6), round(pp.certify(pp.ExactMean(), d).kappa, 6)  # log 4 + 1/4
    (1.636294, 1.636294)
    """
    cls: BoundedErrorGaussianClass = definition.priors
    r0 = float(cls.max_person_error)  # type: ignore[arg-type]
    i, score = _target(definition)
    n_max = people_cap(cls.r2, i) if x is None else min(int(np.size(x)), MAX_GIVEN)
    rho2, w, z, n, value = exact_design(cls.r1, cls.r2, r0, n_max, i)
    if not math.isfinite(value):
        raise ValidationError(
            f"x must be one dataset of more entries for a witness in the bounded-error class "
            f"(every |z_j| <= r0 = {r0:g}); got {n_max} entries"
        )
    xs = _dataset(x, i, n)
    sbar = 1.0 if cls.max_mean_sd is None else cls.max_mean_sd**2 * (1.0 - MARGIN)
    prior, xs = bounded_witness(rho2, w, z, sbar, i, xs)
    if not cls.contains(prior, xs):  # pragma: no cover - the margins keep it inside
        raise ValidationError("the audit could not place a witness inside the class")
    kappa = relative_loss(score, prior, mech, xs)
    notes = (
        f"witness Phi = I, rho_i^2 = {rho2:.6g} (c = {1 - 1 / cls.r2:.6g}), w = {w:.6g}, "
        f"z_i = {z:.6g}, n = {xs.shape[0]}; every |z_j| <= r0 = {r0:g} (docs/release_means.md, "
        "section (e)); loss recomputed with relative_loss",
    )
    return finish(
        definition, kappa, Witness(score, xs, prior, mech.apply(xs)), "optimisation",
        evaluations=N_RHO * (N_W + 1), notes=notes,
    )  # fmt: skip


#: Grid of the noisy mean's design: shares ρ², γ, mean errors w and person errors z.
N_RHO_NOISY, N_GAMMA, N_W_NOISY, N_Z = 8, 40, 9, 21


def gamma_grid(gmax: float, size: int) -> NDArray[np.float64]:
    """γ in (0, γ_max]: half geometric from 1e-4 γ_max, half linear from 0.02 γ_max (the
    quantile's maximiser moves towards small γ as the noise grows)."""
    half = size // 2
    grid = np.concatenate([np.geomspace(1e-4, 1.0, half), np.linspace(0.02, 1.0, half)])
    return np.asarray(gmax * np.unique(grid))


def noisy_design(
    r1: float, r2: float, r0: float, gmax: float, delta: float, n_max: int, i: int = 0
) -> tuple[float, float, float, float, int, float]:
    r"""(ρ², γ, w, z, n, quantile) maximising the exact (1 − δ)-quantile of Lemma 2's loss
    (:func:`persuasive.audit.noisy_mean.quadratic_quantile` at :math:`\zeta = \rho\sqrt\gamma z`)
    on a grid with ρ² ≤ c, γ ≤ γ_max, |w| ≤ √r1, |z| ≤ r0, whose witness has at most ``n_max``
    people. At δ = 0 the supremum over outputs is :math:`-\log(1 - \rho^2\gamma) + z^2`
    (Lemma 2's third term), largest at γ = γ_max and z = r0, whatever w; w then puts v's mean
    nearest its argmax."""
    from persuasive.audit.noisy_mean import quadratic_quantile

    c = 1.0 - 1.0 / r2
    m = 1.0 - MARGIN
    rho2 = c * m * np.linspace(1.0, 1.0 / N_RHO_NOISY, N_RHO_NOISY)
    gam = gamma_grid(gmax, N_GAMMA)
    w = np.linspace(-1.0, 1.0, N_W_NOISY) * math.sqrt(r1) * m
    z = np.linspace(-1.0, 1.0, N_Z) * r0 * m
    r4, g4, w4, z4 = np.meshgrid(rho2, gam, w, z, indexing="ij")
    n = people_needed(r4, w4, z4, r0, c, i)
    if delta <= 0.0:  # the sup of the loss over v is -log b + z^2, at v = z / (rho sqrt(g))
        sup = -np.log1p(-r4 * g4) + z4 * z4
        # ties broken towards v's mean w sqrt(g) nearest that argmax (the sampled maximum)
        far = np.abs(w4 * np.sqrt(g4) - z4 / np.sqrt(r4 * g4))
        q = np.where((g4 == gam[-1]) & (z4 >= 0), sup - 1e-9 * far / (1.0 + far), -np.inf)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):  # b = 1 in floats: no quadratic
            q = quadratic_quantile(g4, w4, np.sqrt(r4 * g4) * z4, r4, delta)
        q = np.where(np.isfinite(q), q, -np.inf)  # such points are left out (a lower audit)
    q = np.where(n <= n_max, q, -np.inf)  # w = rho z (on the grid at 0) always fits
    j = np.unravel_index(int(np.argmax(q)), q.shape)
    return float(r4[j]), float(g4[j]), float(w4[j]), float(z4[j]), int(n[j]), float(q[j])


def bounded_noisy_witness(
    cls: BoundedErrorGaussianClass, sigma: float, gmax: float, delta: float, i: int
) -> tuple[GaussianPrior, NDArray[np.float64], str]:
    r"""The noisy mean's witness in the bounded class: :func:`noisy_design`, then
    :func:`bounded_witness` at x = 0 with :math:`\bar\Sigma = s^2\gamma/(1-\gamma)`
    (≤ V² since γ ≤ γ_max); the design's line for the audit's notes."""
    r0 = float(cls.max_person_error)  # type: ignore[arg-type]
    cap = people_cap(cls.r2, i)
    rho2, gam, w, z, n, q = noisy_design(cls.r1, cls.r2, r0, gmax, delta, cap, i)
    prior, x = bounded_witness(rho2, w, z, sigma**2 * gam / (1.0 - gam), i, np.zeros(n))
    line = (
        f"witness Phi = I, rho_i^2 = {rho2:.4g} (c = {1 - 1 / cls.r2:.4g}), gamma = {gam:.4g}, "
        f"w = {w:.4g}, z_i = {z:.4g}, n = {n}, every |z_j| <= r0 = {r0:g} (grid design on the "
        f"exact quantile, {q:.6g}); loss recomputed with relative_loss"
    )
    return prior, x, line
