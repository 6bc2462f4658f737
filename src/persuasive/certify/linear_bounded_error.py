r"""κ of exact and noisy linear statistics against Receivers with bounded error on every person.

*Not a result of the paper*: this library's extension of Prop 7 (Bon et al. 2026) to
:math:`T = Ax + e`, :math:`e \sim \mathcal N(0, R)`, proved in ``docs/linear_bounded.md``. The
priors are :math:`\mathcal G^{r,V,r_0}_{A,x}`
(:class:`~persuasive.linear.bounded_error.BoundedErrorLinearClass`): the class
:math:`\mathcal G^{r}_{A,x}` of ``docs/linear.md`` with :math:`\lambda_{\max}(A\Sigma A^\top)
\le V^2` and every person's standardized prior error :math:`|x_i - \mu_i|/\sigma_i \le r_0`.
With :math:`c = 1 - 1/r_2`, :math:`\gamma_{\max} = V^2/(V^2 + \lambda_{\min}(R))` (1 for the
exact statistics, when V is unbounded or when R is singular) and
:math:`k = \sqrt{r_1\gamma_{\max}} + z_{1-\delta/2}` (:math:`\sqrt{r_1}` for the exact
statistics), two bounds hold for every individual:

.. math::

    \kappa_{r_0} = -\log(1 - c\gamma_{\max})
        + \frac{2 r_0 \sqrt{c\gamma_{\max}}\, k}{1 - c\gamma_{\max}}
    \quad\text{(at δ)}, \qquad
    \kappa_{\mathrm{pt}} = -\log(1 - c\gamma_{\max}) + r_0^2 \quad\text{(at every δ, also 0)}.

The class is a subclass of :math:`\mathcal G^{r}_{A,x}`, so the bound of ``docs/linear.md``
(Thms 3–4) holds too: the certificate is the smallest of the three. It is the mean's number
(:func:`persuasive.certify.bounded_error.bounded_error_kappa`, ``docs/release_means.md`` (e)),
with V the bound on the prior sd of the statistics and :math:`s^2 = \lambda_{\min}(R)`; it
decreases to :math:`\min(\kappa_{r_0}, \kappa_{\mathrm{pt}}) \to 0` as the noise grows (V given).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from persuasive import _domains as dm
from persuasive.certify.bounded_error import bounded_error_kappa
from persuasive.certify.registry import THEOREMS, Bound, Theorem, tail_definition_reason
from persuasive.errors import ValidationError
from persuasive.mechanisms import Mechanism
from persuasive.scores import MarginalDSS

__all__ = ["LinearBoundedError", "bounded_kappa", "linear_bounded_error_kappa"]


def bounded_kappa(
    r1: float,
    r2: float,
    r0: float,
    max_stat_sd: float | None,
    sigma: float,
    delta: float,
    *,
    exact: bool,
) -> float:
    r"""κ(δ) under :math:`\mathcal G^{r,V,r_0}_{A,x}` for statistics that expose nobody (not
    checked here): it depends on them only through that, and on the noise through
    ``sigma`` :math:`= \sqrt{\lambda_{\min}(R)}` and whether there is any (``exact``).

    The number is the mean's :func:`~persuasive.certify.bounded_error.bounded_error_kappa` at
    :math:`\gamma_{\max} = V^2/(V^2 + s^2)` (``docs/linear_bounded.md``); when
    :math:`\gamma_{\max} = 1` (V unbounded, or R singular: some combination of the statistics
    carries no noise) it is the mean's bound with V unbounded, whatever the noise sd.

    Examples
    --------
    >>> round(bounded_kappa(1.0, 4.0, 0.1, None, 0.0, 0.0, exact=True), 4)  # log 4 + 0.01
    1.3963
    >>> round(bounded_kappa(1.0, 4.0, 1.0, 1.0, 32.0, 0.05, exact=False), 3)
    0.109
    """
    if exact:  # V plays no part without noise
        return bounded_error_kappa(r1, r2, max_person_error=r0)
    if max_stat_sd is not None and sigma > 0.0:
        return bounded_error_kappa(
            r1, r2, max_person_error=r0, max_mean_sd=max_stat_sd, sigma=sigma, delta=delta
        )
    # gamma_max = 1: with V unbounded the noise sd plays no part, so any positive one serves
    return bounded_error_kappa(r1, r2, max_person_error=r0, sigma=1.0, delta=delta)


def linear_bounded_error_kappa(
    A: ArrayLike,
    r1: float,
    r2: float,
    *,
    max_person_error: float,
    max_stat_sd: float | None = None,
    noise_sd: float | ArrayLike | None = 0.0,
    delta: float = 0.0,
) -> float:
    r"""Certified κ(δ) of :math:`T = Ax` (``noise_sd = 0``) or :math:`T = Ax +
    \mathcal N(0, \mathrm{diag}(s^2))` against :math:`(\mathcal I, \mathcal G^{r,V,r_0}_{A,x})`
    (``docs/linear_bounded.md``): the same bound for every individual.

    Parameters
    ----------
    A : array_like, shape (k, n)
        The statistics. Only who they expose matters (found from A's column patterns, O(nk)
        for statistics over subsets of records; never an n × n matrix).
    r1, r2 : float
        The class of ``docs/linear.md``.
    max_person_error : float
        :math:`r_0 > 0`: every person's standardized prior error is at most it.
    max_stat_sd : float, optional
        V: the Receiver's prior sd of the statistics, :math:`\sqrt{\lambda_{\max}(A\Sigma
        A^\top)}`, is at most it (without it, noise cannot lower κ).
    noise_sd : float or array_like of shape (k,)
        The noise sd on every statistic, or one per statistic (0 or None: exact).
    delta : float
        Failure probability; with noise and δ = 0 only the pointwise bound
        :math:`-\log(1 - c\gamma_{\max}) + r_0^2` holds.

    Returns
    -------
    float
        κ, an upper bound (``docs/linear_bounded.md``).

    Raises
    ------
    ValidationError
        When A exposes someone (the class is empty), or a parameter is out of its domain.

    Examples
    --------
    >>> a = [[0.5, 0.5, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]]
    >>> k = [linear_bounded_error_kappa(a, 1.0, 4.0, max_person_error=1.0, max_stat_sd=1.0,
    ...      noise_sd=s, delta=0.05) for s in (0.5, 2.0, 8.0, 32.0)]
    >>> [round(x, 3) for x in k]
    [1.916, 1.163, 0.465, 0.109]
    >>> round(linear_bounded_error_kappa(a, 1.0, 4.0, max_person_error=0.1), 4)  # log 4 + 0.01
    1.3963
    """
    from persuasive.linear.bounded_error import BoundedErrorLinearClass

    cls = BoundedErrorLinearClass(
        r1, r2, max_stat_sd=max_stat_sd, max_person_error=max_person_error
    )
    delta = dm.check("delta", delta)
    sds = np.atleast_1d(np.asarray(0.0 if noise_sd is None else noise_sd, dtype=float))
    if sds.ndim != 1 or not np.all(np.isfinite(sds)) or np.any(sds < 0):
        raise ValidationError(
            f"noise_sd must be a noise sd >= 0, or one per statistic; got {noise_sd!r}"
        )
    return cls.class_kappa(A, sds**2 if sds.size > 1 else float(sds[0]) ** 2, delta)


class LinearBoundedError(Theorem):
    """κ of T = A x (+ N(0, R)) under (MarginalDSS, BoundedErrorLinearClass).

    Asked before :class:`~persuasive.certify.linear.LinearStats` (which would certify the
    larger bound of the class without the per-person error bound).

    Examples
    --------
    >>> import persuasive as pp
    >>> from persuasive.linear.bounded_error import BoundedErrorLinearClass
    >>> cls = BoundedErrorLinearClass(1.0, 4.0, max_stat_sd=1.0, max_person_error=1.0)
    >>> d = pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 1.0, 0.05)
    >>> c = pp.certify(pp.LinearGaussian([[1, 1, 1], [1, -1, 0]], 64.0), d)
    >>> round(c.kappa, 3), c.exact, c.holds
    (0.465, False, True)
    """

    name = "linear_bounded_error"
    basis = (
        "Linear statistics, bounded error on every person (persuasive extension of Prop 7, "
        "Bon et al. 2026, docs/linear_bounded.md)"
    )

    def supports(self, mechanism: Mechanism, definition: Any) -> str | None:
        from persuasive.linear.bounded_error import BoundedErrorLinearClass

        why = tail_definition_reason(definition, MarginalDSS, BoundedErrorLinearClass)
        if why is not None:
            return why
        from persuasive.certify.linear import LinearStats

        return LinearStats().supports(mechanism, definition)  # A bound, n >= 2, nobody exposed

    def kappa_at(self, mechanism: Mechanism, definition: Any, delta: float) -> Bound:
        from persuasive.certify.linear import emptiness_notes, refusal
        from persuasive.mechanisms import LinearGaussian

        cls = definition.priors
        why = refusal(mechanism, cls)  # A checked, nobody exposed, class not proven empty
        if why is not None:
            raise ValidationError(why)
        r = np.asarray(mechanism.R) if isinstance(mechanism, LinearGaussian) else np.zeros((1, 1))
        # = cls.class_kappa(A, R, delta), which depends on A only through that check
        kappa = cls.noise_kappa(r if np.any(r) else None, r.shape[0], delta)
        notes = [
            "upper bound: the smallest of the bound of docs/linear.md (Thms 3-4), the tail bound "
            "-log(1 - c g) + 2 r0 sqrt(c g) k / (1 - c g) and the pointwise bound "
            "-log(1 - c g) + r0^2, g <= V^2/(V^2 + lambda_min(R)) (docs/linear_bounded.md); "
            "errs towards larger kappa"
        ]
        if np.any(r) and cls.max_stat_sd is None:
            notes.append("max_stat_sd unbounded: gamma up to 1, noise cannot lower kappa")
        notes.extend(emptiness_notes(mechanism, cls.r2))
        return kappa, False, tuple(notes)


def _register() -> None:
    """Ask this theorem before ``linear`` (idempotent)."""
    if any(t.name == LinearBoundedError.name for t in THEOREMS):
        return
    names = [t.name for t in THEOREMS]
    THEOREMS.insert(
        names.index("linear") if "linear" in names else len(THEOREMS), LinearBoundedError()
    )


_register()
