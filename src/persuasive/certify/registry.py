r"""The registry of theorems and the :func:`certify` entry point (docs/architecture.md, rule 7).

A :class:`Theorem` is a claim separate from the engine: :meth:`Theorem.supports` says whether it
covers a (mechanism, definition) pair (``None``) or why not (a reason string), and
:meth:`Theorem.kappa_at` returns the smallest κ it proves at a given δ,

.. math:: \kappa(\delta) = \inf\{\kappa \ge 0 : \text{the mechanism is }
          (\mathcal S, \mathcal Q_x, \kappa, \delta)\text{-PP}\},

together with whether that value is exact (no smaller κ holds) or only an upper bound.
:meth:`Theorem.delta_at` is the inverse view :math:`\delta(\kappa)` used by
:func:`persuasive.profile`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from persuasive.definitions import PersuasivePrivacy, PersuasivePrivacyExpectation
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.mechanisms import Mechanism
from persuasive.results import Certificate

#: What :meth:`Theorem.kappa_at` returns: (κ, exact, notes).
Bound = tuple[float, bool, tuple[str, ...]]


class Theorem(ABC):
    """A proof-based result that can certify some (mechanism, definition) pairs."""

    #: Short identifier, e.g. ``"prop6"``.
    name: str = ""
    #: The citation stored on the certificate, e.g. ``"Prop 6 (Bon et al. 2026)"``.
    basis: str = ""

    @abstractmethod
    def supports(self, mechanism: Mechanism, definition: Any) -> str | None:
        """``None`` if the theorem covers the pair, else the reason it does not."""

    @abstractmethod
    def kappa_at(self, mechanism: Mechanism, definition: Any, delta: float) -> Bound:
        """The smallest κ proven at failure probability δ: ``(kappa, exact, notes)``."""

    def delta_at(self, mechanism: Mechanism, definition: Any, kappa: float) -> float:
        """The smallest δ proven at κ (δ(κ)); theorems without one raise."""
        raise UnsupportedCombinationError(f"{self.basis} gives no delta(kappa)")

    def basis_for(self, mechanism: Mechanism, definition: Any) -> str:
        """The basis stored on the certificate (combinators may refine it)."""
        return self.basis

    def __repr__(self) -> str:
        return f"<Theorem {self.name}: {self.basis}>"


#: The registered theorems, asked in order; the first that supports a pair certifies it.
THEOREMS: list[Theorem] = []


def register(theorem: Theorem) -> Theorem:
    """Add ``theorem`` to the registry (idempotent by name)."""
    if all(t.name != theorem.name for t in THEOREMS):
        THEOREMS.append(theorem)
    return theorem


def find_theorem(mechanism: Mechanism, definition: Any) -> Theorem:
    """The first registered theorem supporting the pair, else UnsupportedCombinationError.

    The error lists every theorem's reason, so the caller sees what is missing.
    """
    reasons = []
    for th in THEOREMS:
        why = th.supports(mechanism, definition)
        if why is None:
            return th
        reasons.append(f"- {th.basis}: {why}")
    raise UnsupportedCombinationError(
        f"no theorem certifies {type(mechanism).__name__} under {type(definition).__name__}:\n"
        + "\n".join(reasons)
        + "\nTry pp.audit(mechanism, definition) for a search-based lower bound."
    )


def check_inputs(mechanism: Any, definition: Any) -> None:
    """Validate the public arguments of :func:`certify` / :func:`persuasive.profile`."""
    if not isinstance(mechanism, Mechanism):
        raise ValidationError(
            f"mechanism must be a Mechanism (e.g. pp.GaussianMechanism(1.0)); got {mechanism!r}"
        )
    if not isinstance(definition, (PersuasivePrivacy, PersuasivePrivacyExpectation)):
        raise ValidationError(
            "definition must be pp.PersuasivePrivacy(...) or "
            f"pp.PersuasivePrivacyExpectation(...); got {definition!r}"
        )


def certify(mechanism: Mechanism, definition: Any) -> Certificate:
    r"""Prove a persuasive-privacy guarantee for ``mechanism`` from a theorem of the paper.

    For a :class:`~persuasive.PersuasivePrivacy` definition the certificate's ``kappa`` is the
    smallest κ proven at the definition's δ,

    .. math:: \hat\kappa = \kappa(\delta), \qquad \text{holds} \iff \hat\kappa \le \kappa,

    (``inf`` when the theorem proves no finite bound), compared with no tolerance: every theorem
    rounds :math:`\hat\kappa` up past its floating-point error, so rounding can only make a
    certificate refuse, never hold. For a
    :class:`~persuasive.PersuasivePrivacyExpectation` definition it is the worst expected risk
    (App. C) and ``delta`` is 0.

    Parameters
    ----------
    mechanism : Mechanism
        The release.
    definition : PersuasivePrivacy or PersuasivePrivacyExpectation
        The guarantee to prove.

    Returns
    -------
    Certificate
        ``holds``, ``kappa``, ``delta``, ``basis`` (the proposition used), ``exact``.

    Raises
    ------
    ValidationError
        If ``mechanism`` is not a Mechanism or ``definition`` not a definition.
    UnsupportedCombinationError
        If no registered theorem covers the pair; the message gives each theorem's reason.

    Examples
    --------
    >>> import persuasive as pp
    >>> cert = pp.certify(pp.GaussianMechanism(1.0), pp.probabilistic_dp(1.0, 0.30853754))
    >>> cert.basis, cert.exact, round(cert.kappa, 6)
    ('Prop 6 (Bon et al. 2026)', True, 1.0)
    """
    check_inputs(mechanism, definition)
    th = find_theorem(mechanism, definition)
    if isinstance(definition, PersuasivePrivacy):
        delta = definition.delta
        kappa, exact, notes = th.kappa_at(mechanism, definition, delta)
    else:
        delta = 0.0
        kappa, exact, notes = th.kappa_at(mechanism, definition, 0.0)
        notes = (
            *notes,
            "an expectation guarantee (App. C, PPE): delta does not apply and is reported as 0",
        )
    kappa = float(kappa)
    return Certificate(
        # no slack: rounding may only make a certificate refuse, never hold (each theorem
        # rounds its κ up, persuasive._rounding)
        holds=bool(kappa <= definition.kappa),
        kappa=kappa,
        delta=float(delta),
        basis=th.basis_for(mechanism, definition),
        exact=bool(exact),
        mechanism=mechanism.describe(),
        definition=definition.describe(),
        notes=tuple(notes),
    )


def all_of(scores: tuple[Any, ...], cls: type) -> bool:
    """True when every score is an instance of ``cls``."""
    return all(isinstance(s, cls) for s in scores)


def score_names(scores: tuple[Any, ...]) -> str:
    return ", ".join(type(s).__name__ for s in scores)


def tail_definition_reason(definition: Any, score_cls: type, class_cls: type) -> str | None:
    """Why a PP (tail) definition with scores of ``score_cls`` only and priors of ``class_cls``
    is not given, or ``None`` when it is: the shared first checks of a theorem's ``supports``."""
    if not isinstance(definition, PersuasivePrivacy):
        return "needs a PersuasivePrivacy (tail) definition"
    if not all_of(definition.scores, score_cls):
        return f"needs scores = {score_cls.__name__} only; got {score_names(definition.scores)}"
    if not isinstance(definition.priors, class_cls):
        return f"needs priors = {class_cls.__name__}; got {type(definition.priors).__name__}"
    return None
