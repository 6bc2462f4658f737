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

    @property
    def is_family(self) -> bool:
        return False

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description (name and parameters)."""
        return {"score": type(self).__name__}
