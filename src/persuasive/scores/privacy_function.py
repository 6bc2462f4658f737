r"""Privacy functions ρ(d, x) and the scores they induce (Def 1, Prop 2, App. B, Bon et al. 2026).

A *privacy function* :math:`\rho : \mathcal D \times \mathsf X \to \mathbb R` scores a Receiver
decision d at the Sender's data x (Def 1). A Bayes-rational Receiver with belief P takes the
Bayes act (Assumptions 2–3)

.. math:: d^P \in \arg\inf_{d \in \mathcal D} \mathbb E_{X \sim P}\, \rho(d, X),

and the induced *privacy score* :math:`S(P, x) = \rho(d^P, x)` is proper (Prop 2). Because the
Bayes act need not be unique, every :class:`PrivacyFunction` fixes a tie-break rule.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _tolerances as tol
from persuasive import _validation as v
from persuasive.errors import ValidationError
from persuasive.priors.base import Prior, as_dataset
from persuasive.priors.discrete import DiscretePrior
from persuasive.scores.base import Score

TIE_RTOL = tol.TIE_RTOL


class PrivacyFunction(ABC):
    r"""A privacy function :math:`\rho(d, x)` with its Bayes act (Def 1, Bon et al. 2026).

    Subclasses implement :meth:`__call__` (the value :math:`\rho(d, x)`) and :meth:`bayes_act`
    (a minimiser of :math:`\mathbb E_P \rho(d, X)` chosen by a documented tie-break rule).

    Examples
    --------
    >>> import persuasive as pp
    >>> rho = pp.FinitePrivacyFunction(["keep", "guess"], [[1.0, 1.0], [0.0, 2.0]])
    >>> rho.bayes_act(pp.DiscretePrior([0, 1], [0.8, 0.2]))
    'guess'
    """

    @abstractmethod
    def __call__(self, d: Any, x: ArrayLike) -> float:
        """The value :math:`\\rho(d, x)` of decision d at dataset x."""

    @abstractmethod
    def bayes_act(self, P: Prior) -> Any:
        """A minimiser of :math:`\\mathbb E_{X \\sim P}\\rho(d, X)` (documented tie-break)."""

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description (name and parameters)."""
        return {"privacy_function": type(self).__name__}


@dataclass(frozen=True)
class InducedScore(Score):
    r"""The privacy score induced by a privacy function (Prop 2, Bon et al. 2026).

    .. math:: S(P, x) = \rho(d^P, x), \qquad
              d^P \in \arg\inf_d \mathbb E_{X\sim P}\rho(d, X)

    It is proper (Grünwald & Dawid 2004, §3.4): :math:`S(Q, Q) = \inf_d \mathbb E_Q \rho(d, X)
    \le \mathbb E_Q \rho(d^P, X) = S(P, Q)` [proof RECON, docs/math.md §2]. Properness relies on
    ``rho.bayes_act`` returning an exact minimiser.

    Parameters
    ----------
    rho : PrivacyFunction
        The privacy function; its tie-break rule fixes :math:`d^P`.

    Examples
    --------
    >>> import persuasive as pp
    >>> s = pp.InducedScore(pp.IntervalPrivacyFunction(1.0))
    >>> q = pp.GaussianPrior([0.0], [[1.0]])
    >>> s(q, 0.3), s(q, 0.7)
    (0.0, 1.0)
    """

    rho: PrivacyFunction

    def __post_init__(self) -> None:
        if not isinstance(self.rho, PrivacyFunction):
            raise ValidationError(
                f"rho must be a PrivacyFunction (e.g. pp.IntervalPrivacyFunction(1.0)); "
                f"got {self.rho!r}"
            )

    def __call__(self, P: Prior, x: ArrayLike) -> float:
        return float(self.rho(self.rho.bayes_act(P), x))

    def _evaluate_many(self, P: Prior, xs: NDArray[np.float64]) -> NDArray[np.float64]:
        """S(P, x) for datasets of shape (m, n), the Bayes act computed once."""
        d = self.rho.bayes_act(P)
        return np.array([self.rho(d, x) for x in np.asarray(xs, dtype=np.float64)])

    def describe(self) -> dict[str, Any]:
        return {"score": "InducedScore", "rho": self.rho.describe()}


@dataclass(frozen=True)
class LogPrivacyFunction(PrivacyFunction):
    r"""The negative log-probability privacy function (Example 2, Bon et al. 2026).

    .. math:: \rho(d, x) = -\log d(x),

    where the decision d is a density (or pmf) with respect to a fixed dominating measure, here
    any :class:`~persuasive.priors.Prior` (its ``logpdf``). By the Gibbs inequality the Bayes
    act is :math:`d^P = P` itself, so the induced score is the log score
    :class:`~persuasive.scores.log.LogScore` (Example 4).

    Examples
    --------
    >>> import persuasive as pp
    >>> q = pp.DiscretePrior([0, 1], [0.25, 0.75])
    >>> rho = pp.LogPrivacyFunction()
    >>> rho.bayes_act(q) is q, round(pp.InducedScore(rho)(q, 0), 6)
    (True, 1.386294)
    """

    def __call__(self, d: Any, x: ArrayLike) -> float:
        if not isinstance(d, Prior):
            raise ValidationError(f"d must be a density, i.e. a Prior; got {d!r}")
        return float(-np.asarray(d.logpdf(as_dataset(x))))

    def bayes_act(self, P: Prior) -> Prior:
        """:math:`d^P = P` (Gibbs inequality; unique up to μ-null sets)."""
        if not isinstance(P, Prior):
            raise ValidationError(f"P must be a Prior; got {P!r}")
        return P


def _outcome_table(outcomes: ArrayLike | None, k: int) -> NDArray[np.float64]:
    if outcomes is None:
        return np.arange(k, dtype=np.float64)[:, None]
    out = v.array("outcomes", outcomes, ndim=(1, 2))
    out = out[:, None] if out.ndim == 1 else out
    if out.shape[0] != k:
        raise ValidationError(
            f"outcomes must have one row per column of rho_matrix ({k}); got {out.shape[0]}"
        )
    if np.unique(out, axis=0).shape[0] != k:
        raise ValidationError(f"outcomes must be distinct; got {out.tolist()}")
    return out


@dataclass(frozen=True, eq=False)
class FinitePrivacyFunction(PrivacyFunction):
    r"""A privacy function on a finite decision space and a finite data space.

    .. math:: \rho(d_j, x_k) = R_{jk}, \qquad d^P = d_{j^*},\quad
              j^* = \min\arg\min_j \sum_k P(\{x_k\}) R_{jk}

    Tie-break: the *first* decision (lowest index j) whose expected loss is within a relative
    ``TIE_RTOL`` of the minimum.

    Parameters
    ----------
    decisions : sequence
        Labels of the decisions :math:`d_1, \dots, d_J` (any distinct hashable objects).
    rho_matrix : array_like, shape (J, K)
        :math:`R_{jk} = \rho(d_j, x_k)`, finite.
    outcomes : array_like, shape (K,) or (K, n), optional
        The datasets :math:`x_1, \dots, x_K`; default ``0, 1, ..., K-1`` (scalar datasets).

    Examples
    --------
    >>> import persuasive as pp
    >>> rho = pp.FinitePrivacyFunction(["a", "b"], [[0.0, 1.0], [1.0, 0.0]])
    >>> rho.bayes_act(pp.DiscretePrior([0, 1], [0.5, 0.5]))  # a tie: the first decision
    'a'
    >>> rho("b", 1)
    0.0
    """

    decisions: tuple[Any, ...]
    rho_matrix: NDArray[np.float64] = field(repr=False)
    outcomes: NDArray[np.float64] = field(repr=False)

    def __init__(
        self, decisions: Sequence[Any], rho_matrix: ArrayLike, outcomes: ArrayLike | None = None
    ) -> None:
        if isinstance(decisions, (str, bytes)) or not hasattr(decisions, "__len__"):
            raise ValidationError(f"decisions must be a sequence of labels; got {decisions!r}")
        labels = tuple(decisions)
        if len(set(labels)) != len(labels):
            raise ValidationError(f"decisions must be distinct; got {list(labels)!r}")
        mat = v.array("rho_matrix", rho_matrix, ndim=2)
        if mat.shape[0] != len(labels):
            raise ValidationError(
                f"rho_matrix must have one row per decision ({len(labels)}); got shape {mat.shape}"
            )
        mat.setflags(write=False)
        out = _outcome_table(outcomes, mat.shape[1])
        out.setflags(write=False)
        object.__setattr__(self, "decisions", labels)
        object.__setattr__(self, "rho_matrix", mat)
        object.__setattr__(self, "outcomes", out)

    def _column(self, x: ArrayLike) -> int:
        xs = as_dataset(x)
        hit = np.all(np.abs(self.outcomes - xs) <= tol.OUTPUT_ATOL, axis=1)
        if xs.shape[0] != self.outcomes.shape[1] or not hit.any():
            raise ValidationError(
                f"x must be one of the outcomes {self.outcomes.tolist()}; got {xs.tolist()}"
            )
        return int(np.argmax(hit))

    def __call__(self, d: Any, x: ArrayLike) -> float:
        if d not in self.decisions:
            raise ValidationError(f"d must be one of {list(self.decisions)!r}; got {d!r}")
        return float(self.rho_matrix[self.decisions.index(d), self._column(x)])

    def expected_losses(self, P: Prior) -> NDArray[np.float64]:
        """:math:`\\mathbb E_P \\rho(d_j, X)` for every decision, shape (J,)."""
        if not isinstance(P, DiscretePrior):
            raise ValidationError(f"P must be a DiscretePrior on the outcomes; got {P!r}")
        weights = np.zeros(self.outcomes.shape[0])
        for pt, p in zip(P.support, P.probs, strict=True):
            if p > 0.0:
                weights[self._column(pt)] += p
        return self.rho_matrix @ weights

    def bayes_act(self, P: Prior) -> Any:
        """The first decision within ``TIE_RTOL`` of the minimal expected loss."""
        e = self.expected_losses(P)
        best = float(e.min())
        slack = TIE_RTOL * max(1.0, abs(best))
        return self.decisions[int(np.flatnonzero(e <= best + slack)[0])]

    def describe(self) -> dict[str, Any]:
        return {
            "privacy_function": "FinitePrivacyFunction",
            "decisions": [str(d) for d in self.decisions],
            "rho_matrix": self.rho_matrix.tolist(),
            "outcomes": self.outcomes.tolist(),
        }


@dataclass(frozen=True)
class ScorePrivacyFunction(PrivacyFunction):
    r"""The privacy function of a proper score, :math:`\rho(d, x) = S(d, x)` on
    :math:`\mathcal D = \mathcal P` (Appendix B converse, Bon et al. 2026) [RECON, docs/math.md §2].

    The Bayes act is :math:`d^P = P` (tie-break: the belief itself, a minimiser by propriety),
    so :class:`InducedScore` of it gives back :math:`S`.

    Examples
    --------
    >>> import persuasive as pp
    >>> rho = pp.privacy_function_from_score(pp.BrierScore())
    >>> q = pp.DiscretePrior([0, 1], [0.5, 0.5])
    >>> pp.InducedScore(rho)(q, 0) == pp.BrierScore()(q, 0)
    True
    """

    score: Score

    def __call__(self, d: Any, x: ArrayLike) -> float:
        return float(self.score(d, x))

    def bayes_act(self, P: Prior) -> Prior:
        return P

    def describe(self) -> dict[str, Any]:
        return {"privacy_function": "ScorePrivacyFunction", "score": self.score.describe()}


def privacy_function_from_score(score: Score) -> ScorePrivacyFunction:
    r"""The privacy function :math:`\rho(d, x) = S(d, x)` of a proper score (Appendix B).

    Appendix B's converse of Prop 2 [RECON, docs/math.md §2]: take :math:`\mathcal D = \mathcal P`
    and :math:`\rho = S`; by propriety :math:`P \in \arg\inf_d S(d, P)`, so with the tie-break
    :math:`d^P = P` the induced score is :math:`S(P, x) = \rho(d^P, x)`.

    Parameters
    ----------
    score : Score
        A proper score (``score.proper`` is True) that is not a family.

    Raises
    ------
    ValidationError
        If ``score`` is not proper (e.g. :class:`SmallCellLogScore`) or is a family.

    Examples
    --------
    >>> import persuasive as pp
    >>> pp.privacy_function_from_score(pp.LogScore()).describe()
    {'privacy_function': 'ScorePrivacyFunction', 'score': {'score': 'LogScore'}}
    """
    if not isinstance(score, Score):
        raise ValidationError(f"score must be a Score (e.g. pp.LogScore()); got {score!r}")
    if not score.proper:
        raise ValidationError(
            f"score must be proper for the Appendix B converse (d^P = P minimises E_P S(d, X)); "
            f"got {score!r}, which is not proper"
        )
    if score.is_family:
        raise ValidationError(
            f"score must be a single score, not a family; got {score!r}; "
            "use one member, e.g. score.members(n)[0]"
        )
    return ScorePrivacyFunction(score)
