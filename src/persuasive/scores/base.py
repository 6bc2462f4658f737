"""Privacy scores: negatively oriented scoring rules S(P, x) (Bon et al. 2026, §2).

A :class:`Score` evaluates a belief P (a :class:`~persuasive.priors.Prior`) at a dataset x;
lower is better for the Receiver, so the Sender's relative loss is
:math:`\\Delta_S(Q, T, x) = S(Q, x) - S(Q_T, x)` (see :mod:`persuasive.loss`).

A *family* of scores (e.g. the marginal DSS :math:`\\mathcal I = \\{D_i\\}_{i=1}^n` of §5.1) is a
Score whose :meth:`Score.members` expands, given the dataset dimension n, into concrete scores;
Definition 3 takes the worst member.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive.priors.base import Prior


def score_differences(before: ArrayLike, after: ArrayLike) -> NDArray[np.float64]:
    """Elementwise ``before - after`` with the convention ∞ − ∞ = 0 (App. E.5)."""
    b = np.asarray(before, dtype=np.float64)
    a = np.asarray(after, dtype=np.float64)
    same_inf = np.isinf(b) & np.isinf(a) & (np.sign(b) == np.sign(a))
    with np.errstate(invalid="ignore"):
        return np.where(same_inf, 0.0, b - a)


class Score(ABC):
    """A negatively oriented scoring rule :math:`S : \\mathcal P \\times \\mathsf X \\to
    \\mathbb R \\cup \\{\\pm\\infty\\}`."""

    #: Whether S is proper (S(Q, Q) <= S(P, Q) for all P, Q). Set False where it is not (L_i^r).
    proper: bool = True

    @abstractmethod
    def __call__(self, P: Prior, x: ArrayLike) -> float:
        """S(P, x) for one belief P and one dataset x."""

    def members(self, n: int) -> list[Score]:
        """The concrete scores of this family for datasets of dimension n (default: itself)."""
        return [self]

    def member_values(self, P: Prior, x: ArrayLike, n: int) -> NDArray[np.float64]:
        """``[S(P, x) for S in members(n)]`` as an array; families override it vectorised."""
        return np.array([s(P, x) for s in self.members(n)], dtype=np.float64)

    def member_losses(self, prior: Prior, post: Prior, x: ArrayLike, n: int) -> NDArray[np.float64]:
        """The relative losses :math:`S(Q, x) - S(Q_T, x)` of every member, with ∞ − ∞ = 0.

        The default subtracts :meth:`member_values`; scores override it where the difference
        has a form that avoids cancellation (e.g. :class:`MarginalDSS`).
        """
        return score_differences(self.member_values(prior, x, n), self.member_values(post, x, n))

    @property
    def is_family(self) -> bool:
        return False

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description (name and parameters)."""
        return {"score": type(self).__name__}
