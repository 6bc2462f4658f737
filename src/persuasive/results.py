"""Result objects: :class:`Certificate` (a proven upper bound on κ) and :class:`Audit`
(a found lower bound on κ, with its witness). Small, frozen, JSON-ready (docs/architecture.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def _json(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value > 0 else ("-inf" if value < 0 else "nan")
    if isinstance(value, np.ndarray):
        return [_json(v) for v in value.tolist()]
    if isinstance(value, (np.floating, np.integer)):
        return _json(value.item())
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    if hasattr(value, "describe"):
        return _json(value.describe())
    return value


@dataclass(frozen=True)
class Certificate:
    """A proven guarantee: the mechanism is (𝒮, 𝒬_x, κ, δ)-PP with κ = ``kappa`` at ``delta``.

    Attributes
    ----------
    holds : bool
        Whether the definition's κ is at least the proven ``kappa``.
    kappa : float
        The smallest κ proven at the definition's δ (``inf`` when none is proven).
    delta : float
        The definition's δ.
    basis : str
        The theorem applied, e.g. ``"Prop 7 (Bon et al. 2026)"``.
    exact : bool
        True when ``kappa`` is the exact worst case (no smaller κ holds), False when it is only
        an upper bound (e.g. additive composition).
    mechanism, definition : dict
        Descriptions of what was certified.
    notes : tuple of str
        Assumptions, approximations and their direction.
    """

    holds: bool
    kappa: float
    delta: float
    basis: str
    exact: bool
    mechanism: dict[str, Any] = field(default_factory=dict)
    definition: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def __repr__(self) -> str:
        holds = "holds" if self.holds else "does not hold"
        exact = "exact" if self.exact else "upper bound"
        kappa = "∞" if self.kappa == math.inf else f"{self.kappa:.4g}"
        return f"<Certificate κ={kappa}, δ={self.delta:.4g}, {holds}, {exact}; {self.basis}>"

    def _repr_html_(self) -> str:
        """The sentence, κ, δ and the basis, for a notebook."""
        from persuasive.release.display import certificate_html

        return certificate_html(self)

    def explain(self) -> str:
        """The certificate in plain words: the verdict, κ with its unit and, for the log and
        Dawid–Sebastiani scores, one line saying what the unit means."""
        from persuasive.report.words import explain_certificate

        return explain_certificate(self)

    def to_dict(self) -> dict[str, Any]:
        return _json(
            {
                "holds": self.holds,
                "kappa": self.kappa,
                "delta": self.delta,
                "basis": self.basis,
                "exact": self.exact,
                "mechanism": self.mechanism,
                "definition": self.definition,
                "notes": list(self.notes),
            }
        )


@dataclass(frozen=True)
class Witness:
    """What exhibits an audit's loss: the score S, dataset x, prior Q and output T."""

    score: Any
    x: Any
    prior: Any
    t: Any

    def to_dict(self) -> dict[str, Any]:
        return _json(
            {
                "score": self.score,
                "x": np.asarray(self.x),
                "prior": repr(self.prior),
                "t": self.t,
            }
        )


@dataclass(frozen=True)
class Audit:
    """A found lower bound on κ at δ: for every κ' < ``kappa`` the witness violates PP.

    Attributes
    ----------
    kappa : float
        The largest κ exhibited at ``delta`` (PP fails for every smaller κ).
    delta : float
        The definition's δ.
    witness : Witness
        The score, dataset, prior and output that exhibit it.
    method : str
        ``"optimisation"``, ``"enumeration"`` or ``"monte-carlo"``.
    holds : bool
        False when the audit disproves the definition (``kappa`` > the definition's κ).
    confidence : float
        1 for exact methods, else the Clopper–Pearson confidence level.
    evaluations : int
        How many (x, Q) pairs were evaluated.
    """

    kappa: float
    delta: float
    witness: Witness | None
    method: str
    holds: bool
    confidence: float = 1.0
    evaluations: int = 0
    notes: tuple[str, ...] = ()

    def explain(self) -> str:
        verdict = "found no violation" if self.holds else "found a VIOLATION"
        return (
            f"The audit ({self.method}, confidence {self.confidence:g}) {verdict}: a "
            f"Receiver reaches kappa = {self.kappa:.6g} at delta = {self.delta:g}."
        )

    def to_dict(self) -> dict[str, Any]:
        return _json(
            {
                "kappa": self.kappa,
                "delta": self.delta,
                "holds": self.holds,
                "method": self.method,
                "confidence": self.confidence,
                "evaluations": self.evaluations,
                "witness": None if self.witness is None else self.witness.to_dict(),
                "notes": list(self.notes),
            }
        )
