r"""Privacy definitions as frozen, validated specs (Def 3 and App. C, Bon et al. 2026).

:class:`PersuasivePrivacy` is Definition 3:

.. math::

    \inf_{S\in\mathcal S}\ \inf_{x\in\mathsf X}\ \inf_{Q\in\mathcal Q_x}\
    \mathbb P_x\big[\Delta_S(Q, T, x) \le \kappa\big] \ \ge\ 1 - \delta .

:class:`PersuasivePrivacyExpectation` replaces the tail by an expectation (Assumption 4*,
App. C; reconstructed in docs/math.md §7):

.. math::

    \sup_{S}\sup_x\sup_{Q\in\mathcal Q_x}\ \varphi^{-1}\Big(\mathbb E_{T\sim M(x,\cdot)}
    \big[\varphi(\Delta_S(Q, T, x))\big]\Big) \le \kappa .

A spec's meaning never changes once released; new behaviour is a new class
(docs/architecture.md, rule 3).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from persuasive import _domains as dm
from persuasive.classes.base import PriorClass
from persuasive.classes.neighbours import NeighbourPriors
from persuasive.errors import ValidationError
from persuasive.scores.base import Score
from persuasive.scores.log import LogScore


def _scores(scores: Score | Sequence[Score]) -> tuple[Score, ...]:
    seq = (scores,) if isinstance(scores, Score) else tuple(scores)
    if not seq:
        raise ValidationError("scores must be a Score or a non-empty sequence of Scores")
    for k, s in enumerate(seq):
        if not isinstance(s, Score):
            raise ValidationError(f"scores[{k}] must be a Score (e.g. pp.LogScore()); got {s!r}")
    return seq


def _priors(priors: PriorClass) -> PriorClass:
    if not isinstance(priors, PriorClass):
        raise ValidationError(
            f"priors must be a prior class (e.g. pp.NeighbourPriors()); got {priors!r}"
        )
    return priors


@dataclass(frozen=True)
class PersuasivePrivacy:
    """(𝒮, 𝒬_x, κ, δ)-Persuasive Privacy (Definition 3, Bon et al. 2026).

    Parameters
    ----------
    scores : Score or sequence of Score
        The privacy scores 𝒮 (families such as ``MarginalDSS()`` expand to every coordinate).
    priors : PriorClass
        The class of Receiver data-priors 𝒬_x.
    kappa : float
        Allowed relative loss, ``kappa >= 0`` (``inf`` allowed: "any finite loss").
    delta : float
        Allowed failure probability, ``0 <= delta < 1``.

    Examples
    --------
    >>> import persuasive as pp
    >>> d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0), 2.4, 0.0)
    >>> d.certify(pp.ExactMean()).holds
    True
    """

    scores: tuple[Score, ...]
    priors: PriorClass
    kappa: float
    delta: float = 0.0

    def __init__(
        self, scores: Score | Sequence[Score], priors: PriorClass, kappa: float, delta: float = 0.0
    ) -> None:
        object.__setattr__(self, "scores", _scores(scores))
        object.__setattr__(self, "priors", _priors(priors))
        object.__setattr__(self, "kappa", dm.KAPPA.check("kappa", kappa))
        object.__setattr__(self, "delta", dm.DELTA.but(required=True).check("delta", delta))

    def with_kappa(self, kappa: float) -> PersuasivePrivacy:
        return PersuasivePrivacy(self.scores, self.priors, kappa, self.delta)

    def with_delta(self, delta: float) -> PersuasivePrivacy:
        return PersuasivePrivacy(self.scores, self.priors, self.kappa, delta)

    def certify(self, mechanism: Any) -> Any:
        """Prove a guarantee for ``mechanism``; see :func:`persuasive.certify`."""
        from persuasive.certify import certify

        return certify(mechanism, self)

    def audit(self, mechanism: Any, **kwargs: Any) -> Any:
        """Search for a violation; see :func:`persuasive.audit`."""
        from persuasive.audit import audit

        return audit(mechanism, self, **kwargs)

    def profile(self, mechanism: Any, **kwargs: Any) -> Any:
        """κ as a function of δ; see :func:`persuasive.profile`."""
        from persuasive.profile import profile

        return profile(mechanism, self, **kwargs)

    def describe(self) -> dict[str, Any]:
        return {
            "definition": "PersuasivePrivacy",
            "scores": [s.describe() for s in self.scores],
            "priors": self.priors.describe(),
            "kappa": self.kappa,
            "delta": self.delta,
        }


@dataclass(frozen=True)
class Mean:
    """Risk transform φ = id: the plain expectation E[Δ] (Assumption 4*, Prop 11)."""

    def describe(self) -> dict[str, Any]:
        return {"risk": "mean"}


@dataclass(frozen=True)
class Renyi:
    r"""Risk transform :math:`\varphi_\alpha(t) = e^{(\alpha-1)t}`, order α > 1 (Prop 12).

    The reported value is :math:`\frac{1}{\alpha-1}\log\mathbb E[e^{(\alpha-1)\Delta}]`.
    """

    alpha: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha", dm.RENYI_ORDER.check("alpha", self.alpha))

    def describe(self) -> dict[str, Any]:
        return {"risk": "renyi", "alpha": self.alpha}


#: f-divergences supported by :class:`FDivergence`: name -> f(u).
F_DIVERGENCES: dict[str, Any] = {
    "kl": lambda u: u * math.log(u) if u > 0 else 0.0,
    "tv": lambda u: abs(u - 1.0) / 2.0,
    "chi2": lambda u: (u - 1.0) ** 2,
}


@dataclass(frozen=True)
class FDivergence:
    r"""Risk :math:`\mathbb E[g_f(\Delta)]`, :math:`g_f(t) = f(e^t)e^{-t}` (Prop 13).

    Parameters
    ----------
    name : {"kl", "tv", "chi2"}
        The f-divergence: f(u) = u log u, |u − 1|/2 or (u − 1)².
    """

    name: str

    def __post_init__(self) -> None:
        dm.F_DIVERGENCE.check("name", self.name)

    def describe(self) -> dict[str, Any]:
        return {"risk": "f-divergence", "name": self.name}


Risk = Mean | Renyi | FDivergence


@dataclass(frozen=True)
class PersuasivePrivacyExpectation:
    """(𝒮, 𝒬_x, κ; φ)-Persuasive Privacy in expectation (App. C; docs/math.md §7, reconstructed).

    Parameters
    ----------
    scores, priors, kappa
        As in :class:`PersuasivePrivacy`.
    risk : Mean, Renyi or FDivergence
        The risk transform φ (default :class:`Mean`).

    Examples
    --------
    >>> import persuasive as pp
    >>> d = pp.PersuasivePrivacyExpectation(pp.LogScore(), pp.NeighbourPriors(), 0.5,
    ...                                     pp.Renyi(2.0))
    >>> round(d.certify(pp.GaussianMechanism(2.0)).kappa, 6)
    0.25
    """

    scores: tuple[Score, ...]
    priors: PriorClass
    kappa: float
    risk: Risk

    def __init__(
        self,
        scores: Score | Sequence[Score],
        priors: PriorClass,
        kappa: float,
        risk: Risk | None = None,
    ) -> None:
        object.__setattr__(self, "scores", _scores(scores))
        object.__setattr__(self, "priors", _priors(priors))
        object.__setattr__(self, "kappa", dm.KAPPA.check("kappa", kappa))
        r = Mean() if risk is None else risk
        if not isinstance(r, (Mean, Renyi, FDivergence)):
            raise ValidationError(
                f"risk must be pp.Mean(), pp.Renyi(alpha) or pp.FDivergence(name); got {risk!r}"
            )
        object.__setattr__(self, "risk", r)

    def with_kappa(self, kappa: float) -> PersuasivePrivacyExpectation:
        return PersuasivePrivacyExpectation(self.scores, self.priors, kappa, self.risk)

    def certify(self, mechanism: Any) -> Any:
        from persuasive.certify import certify

        return certify(mechanism, self)

    def audit(self, mechanism: Any, **kwargs: Any) -> Any:
        from persuasive.audit import audit

        return audit(mechanism, self, **kwargs)

    def describe(self) -> dict[str, Any]:
        return {
            "definition": "PersuasivePrivacyExpectation",
            "scores": [s.describe() for s in self.scores],
            "priors": self.priors.describe(),
            "kappa": self.kappa,
            "risk": self.risk.describe(),
        }


Definition = PersuasivePrivacy | PersuasivePrivacyExpectation


def _preset(name: str, **values: Any) -> dict[str, Any]:
    """Check the arguments of a preset by their own names (ε is not κ) against
    :data:`persuasive._domains.PRESETS`."""
    params = dm.PRESETS[name]
    return {key: params[key].check(key, value) for key, value in values.items()}


def _dp_priors(priors: PriorClass | None) -> PriorClass:
    return NeighbourPriors() if priors is None else priors


def pure_dp(epsilon: float, priors: NeighbourPriors | None = None) -> PersuasivePrivacy:
    """ε-DP as (L, 𝓗, ε, 0)-PP (Prop 6 with δ = 0).

    Parameters
    ----------
    epsilon : float
        ε >= 0 (``inf`` allowed: no guarantee), the κ of the definition.
    priors : NeighbourPriors, optional
        The neighbouring two-point priors (default ``NeighbourPriors()``, i.e. 𝓗).

    Examples
    --------
    >>> import persuasive as pp
    >>> pp.pure_dp(1.0).kappa, pp.pure_dp(1.0).delta
    (1.0, 0.0)
    """
    p = _preset("pure_dp", epsilon=epsilon)
    return PersuasivePrivacy(LogScore(), _dp_priors(priors), p["epsilon"], 0.0)


def probabilistic_dp(
    epsilon: float, delta: float, priors: NeighbourPriors | None = None
) -> PersuasivePrivacy:
    """(ε, δ)-probabilistic DP as (L, 𝓗, ε, δ)-PP (Prop 6).

    Parameters
    ----------
    epsilon : float
        ε >= 0 (``inf`` allowed), the κ of the definition.
    delta : float
        δ in [0, 1).
    priors : NeighbourPriors, optional
        As in :func:`pure_dp`.
    """
    p = _preset("probabilistic_dp", epsilon=epsilon, delta=delta)
    return PersuasivePrivacy(LogScore(), _dp_priors(priors), p["epsilon"], p["delta"])


def renyi_dp(
    alpha: float, epsilon: float, priors: NeighbourPriors | None = None
) -> PersuasivePrivacyExpectation:
    """(α, ε)-Rényi DP as PP in expectation with the Rényi risk of order α (Props 11–12).

    Parameters
    ----------
    alpha : float
        The Rényi order, α > 1 as for :class:`Renyi`. The KL case α = 1 is not a Rényi risk:
        state it as ``PersuasivePrivacyExpectation(LogScore(), NeighbourPriors(), epsilon,
        Mean())`` (Prop 11).
    epsilon : float
        ε >= 0 (``inf`` allowed), the κ of the definition.
    priors : NeighbourPriors, optional
        As in :func:`pure_dp`.

    Examples
    --------
    >>> import persuasive as pp
    >>> pp.renyi_dp(2.0, 0.5).risk
    Renyi(alpha=2.0)
    """
    p = _preset("renyi_dp", alpha=alpha, epsilon=epsilon)
    return PersuasivePrivacyExpectation(
        LogScore(), _dp_priors(priors), p["epsilon"], Renyi(p["alpha"])
    )
