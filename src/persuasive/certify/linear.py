r"""Linear statistics under the class :math:`\mathcal G^r_{A,x}` (this library's extension).

*Not a result of the paper*: Prop 7 (Bon et al. 2026) generalised to any k x n matrix A and
Gaussian noise N(0, R); proved in ``docs/linear.md`` (Thms 3–4).

- R = 0: :math:`\kappa = r_1 + \log r_2` at every δ, exact (attained with Φ = I).
- R ≠ 0: :math:`\kappa(\delta) = \sup_{0<\gamma\le\gamma_{\max}} -\log(1 - c\gamma) +
  q_{1-\delta}[(\sqrt{r_1\gamma} + \sqrt{1-\gamma}Z)^2]`, :math:`c = 1 - 1/r_2`,
  :math:`\gamma_{\max} = V^2/(V^2 + \lambda_{\min}(R))`, an upper bound (the machinery of
  :mod:`persuasive.certify.noisy_mean`).

Refused when A exposes an individual, or when the class is proven empty from A's column
patterns (:func:`persuasive.linear.emptiness.class_emptiness`, ``docs/linear.md`` §4): a
certificate would then be vacuous. When neither emptiness nor a member is proven the
certificate carries a note saying so.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from persuasive.certify.registry import Bound, Theorem, all_of, score_names
from persuasive.definitions import PersuasivePrivacy
from persuasive.errors import ValidationError
from persuasive.linear.classes import LinearGaussianClass, exposed_by
from persuasive.linear.emptiness import Emptiness, class_emptiness, patterns_of_matrix
from persuasive.mechanisms import LinearGaussian, LinearStatistic, Mechanism
from persuasive.scores import MarginalDSS


def _a_r(mechanism: Mechanism) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(mechanism, LinearGaussian):
        return np.asarray(mechanism.A), np.asarray(mechanism.R)
    a = np.asarray(mechanism.A)  # type: ignore[attr-defined]
    return a, np.zeros((a.shape[0], a.shape[0]))


def _checked_a(mechanism: Mechanism, cls: LinearGaussianClass) -> str | None:
    """Why A does not fit the class (None when it does), checking A as the class does. A
    mechanism given by its column patterns is checked on its distinct columns (A is finite
    when they are) and formed densely only to compare with an A bound to the class."""
    pat = mechanism.patterns if isinstance(mechanism, LinearGaussian) else None
    try:
        if pat is None or cls.A is not None:
            a, _ = _a_r(mechanism)
            if a.shape[1] < 2:
                return "needs n >= 2 individuals"
            cls._a(a)
        elif pat.shape[1] < 2:
            return "needs n >= 2 individuals"
    except ValidationError as exc:
        return str(exc)
    return None


def _exposed(mechanism: Mechanism) -> np.ndarray:
    """Who A exposes: the mechanism's own (cached, from its patterns when known) or
    :func:`~persuasive.linear.classes.exposed_by`."""
    if isinstance(mechanism, LinearGaussian):
        return mechanism.exposed()
    return exposed_by(_a_r(mechanism)[0])


def _exposure_reason(mechanism: Mechanism) -> str | None:
    bad = np.flatnonzero(_exposed(mechanism))
    if bad.size:
        return (
            f"A exposes individual(s) {bad.tolist()} exactly (e_i in A's row space): the "
            "class is empty, so no guarantee is certified; see persuasive.linear.analyse"
        )
    return None


def emptiness(mechanism: Mechanism, r2: float) -> Emptiness:
    """:func:`~persuasive.linear.emptiness.class_emptiness` of the mechanism's A: from its
    column patterns when it is given by them (A never formed), else from the dense A's."""
    cache: dict[float, Emptiness] | None = getattr(mechanism, "_emptiness", None)
    if cache is not None and r2 in cache:  # asked by supports, kappa_at and the notes
        return cache[r2]
    pat = mechanism.patterns if isinstance(mechanism, LinearGaussian) else None
    if pat is None:
        pat = patterns_of_matrix(_a_r(mechanism)[0])
    out = class_emptiness(pat, r2)
    try:
        if cache is None:
            cache = {}
            mechanism._emptiness = cache  # type: ignore[attr-defined]
        cache[r2] = out
    except AttributeError:  # a mechanism that takes no attributes: decided again next time
        pass
    return out


def refusal(mechanism: Mechanism, cls: LinearGaussianClass) -> str | None:
    """Why no certificate is issued for A under the class (None when one is): A does not
    fit, someone is exposed, or the class is proven empty."""
    why = _checked_a(mechanism, cls) or _exposure_reason(mechanism)
    if why is None:
        e = emptiness(mechanism, cls.r2)
        why = e.reason if e.empty else None
    return why


def emptiness_notes(mechanism: Mechanism, r2: float) -> tuple[str, ...]:
    """The certificate's note when the class was not proven non-empty."""
    e = emptiness(mechanism, r2)
    return () if e.verdict == "non-empty" else (e.reason,)


class LinearStats(Theorem):
    """κ of T = A x (+ N(0, R)) under (MarginalDSS, LinearGaussianClass).

    Examples
    --------
    >>> import persuasive as pp
    >>> from persuasive.linear import LinearGaussianClass
    >>> d = pp.PersuasivePrivacy(pp.MarginalDSS(), LinearGaussianClass(1.0, 4.0), 2.4)
    >>> c = pp.certify(pp.LinearGaussian([[1, 1, 1], [1, -1, 0]]), d)
    >>> round(c.kappa, 10), c.exact
    (2.3862943611, True)
    """

    name = "linear"
    basis = "Linear statistics (persuasive extension of Prop 7, Bon et al. 2026, docs/linear.md)"

    def supports(self, mechanism: Mechanism, definition: Any) -> str | None:
        if not isinstance(mechanism, (LinearGaussian, LinearStatistic)):
            return "applies to LinearGaussian / LinearStatistic only"
        if not isinstance(definition, PersuasivePrivacy):
            return "needs a PersuasivePrivacy (tail) definition"
        if not all_of(definition.scores, MarginalDSS):
            return f"needs scores = MarginalDSS only; got {score_names(definition.scores)}"
        cls = definition.priors
        if not isinstance(cls, LinearGaussianClass):
            return f"needs priors = LinearGaussianClass; got {type(cls).__name__}"
        return refusal(mechanism, cls)

    def kappa_at(self, mechanism: Mechanism, definition: Any, delta: float) -> Bound:
        cls: LinearGaussianClass = definition.priors
        r = np.asarray(mechanism.R) if isinstance(mechanism, LinearGaussian) else None
        if r is None or not np.any(r):
            empty = emptiness_notes(mechanism, cls.r2)
            if empty:  # sharpness needs a member
                return cls.kappa, False, ("upper bound r1 + log r2 (Thm 3)", *empty)
            return cls.kappa, True, ("sharp: attained by Phi = I with min_i D_i/sigma_i^2 = 1/r2",)
        if delta <= 0.0:
            return math.inf, True, ("delta = 0: Gaussian noise is unbounded (no finite kappa)",)
        why = refusal(mechanism, cls)
        if why is not None:
            raise ValidationError(why)
        # = cls.class_kappa(A, R, delta): A checked and nobody exposed, κ depends on R only
        k = cls.noise_kappa(r, r.shape[0], delta)
        notes = ["upper bound: sup over x_i inside the tail, gamma sup by interval arithmetic"]
        notes.extend(emptiness_notes(mechanism, cls.r2))
        if cls.max_stat_sd is None:
            notes.append("max_stat_sd unbounded: gamma up to 1, noise cannot beat r1 + log r2")
        return k, False, tuple(notes)
