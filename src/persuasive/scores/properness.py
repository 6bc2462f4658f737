r"""A numerical properness check for scores on a finite family of beliefs (§1, Bon et al. 2026).

A score is proper if :math:`S(Q, Q) \le S(P, Q)` for all beliefs P, Q, where
:math:`S(P, Q) = \mathbb E_{X \sim Q} S(P, X)`. :func:`check_properness` evaluates every ordered
pair of a given family and reports the worst violation it finds. Passing is evidence on that
family only; failing exhibits a genuine counterexample (exactly, or beyond ``MC_Z`` standard
errors under Monte Carlo).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from persuasive import _domains as dm
from persuasive import _tolerances as tol
from persuasive.errors import ValidationError
from persuasive.priors.base import Prior
from persuasive.priors.cells import IndependentCellsPrior
from persuasive.priors.discrete import DiscretePrior
from persuasive.priors.gaussian import GaussianPrior
from persuasive.scores.base import Score
from persuasive.scores.dss import DawidSebastiani, MarginalDSS
from persuasive.scores.interval import IntervalScore
from persuasive.scores.log import LogScore

#: IndependentCellsPrior: largest product grid enumerated exactly (beyond it, Monte Carlo).
GRID_MAX: int = 200_000
PROPER_ATOL = tol.PROPER_ATOL
PROPER_RTOL = tol.PROPER_RTOL
MC_Z = tol.PROPER_MC_Z
CELL_TAIL = tol.CELL_TAIL


@dataclass(frozen=True)
class ProperCounterexample:
    """A pair of beliefs with :math:`S(Q, Q) > S(P, Q)` (beyond the check's tolerance)."""

    score: Score
    P: Prior
    Q: Prior
    S_QQ: float
    S_PQ: float
    standard_error: float = 0.0

    @property
    def gap(self) -> float:
        """:math:`S(Q, Q) - S(P, Q) > 0`."""
        return self.S_QQ - self.S_PQ


@dataclass(frozen=True)
class ProperCheck:
    """Result of :func:`check_properness`.

    Attributes
    ----------
    proper : bool
        No pair violated properness beyond the tolerance.
    counterexample : ProperCounterexample or None
        The worst violating pair, if any.
    gap : float
        The largest :math:`S(Q, Q) - S(P, Q)` over the ordered pairs P != Q checked
        (``-inf`` if none was comparable); positive values within the tolerance are rounding.
    pairs : int
        Number of (score member, P, Q) triples compared.
    method : str
        ``"exact"``, ``"closed form"``, ``"monte carlo"`` or a ``+``-joined mix.
    """

    proper: bool
    counterexample: ProperCounterexample | None
    gap: float
    pairs: int
    method: str
    notes: tuple[str, ...] = field(default=())

    def explain(self) -> str:
        """A one-sentence human summary."""
        if self.counterexample is None:
            return (
                f"No properness violation among {self.pairs} belief pairs ({self.method}); "
                f"largest S(Q,Q) - S(P,Q) = {self.gap:.3g}."
            )
        c = self.counterexample
        return (
            f"Not proper: S(Q,Q) = {c.S_QQ:.8g} > S(P,Q) = {c.S_PQ:.8g} for P = {c.P!r}, "
            f"Q = {c.Q!r} ({self.method})."
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        c = self.counterexample
        return {
            "proper": self.proper,
            "gap": self.gap,
            "pairs": self.pairs,
            "method": self.method,
            "counterexample": None
            if c is None
            else {
                "score": c.score.describe(),
                "P": repr(c.P),
                "Q": repr(c.Q),
                "S_QQ": c.S_QQ,
                "S_PQ": c.S_PQ,
                "standard_error": c.standard_error,
            },
            "notes": list(self.notes),
        }


def _evaluate(score: Score, P: Prior, xs: NDArray[np.float64]) -> NDArray[np.float64]:
    """S(P, x) for each row of xs (vectorised where the score offers it)."""
    many = getattr(score, "_evaluate_many", None)
    if many is not None:
        return np.asarray(many(P, xs), dtype=np.float64).reshape(-1)
    if isinstance(score, LogScore):
        return -np.asarray(P.logpdf(xs), dtype=np.float64).reshape(-1)
    return np.array([score(P, x) for x in xs], dtype=np.float64)


def _cell_table(prior: IndependentCellsPrior, i: int) -> tuple[NDArray[Any], NDArray[Any]]:
    cell = prior.cells[i]
    if isinstance(cell, np.ndarray):
        nz = np.flatnonzero(cell > 0.0)
        return nz.astype(np.float64), cell[nz]
    top = float(cell.isf(CELL_TAIL))
    vals = np.arange(0.0, top + 1.0)
    pmf = np.exp(prior.cell_logpmf(i, vals))
    keep = pmf > 0.0
    return vals[keep], pmf[keep] / pmf[keep].sum()


def _outcomes(
    Q: Prior, n_samples: int, rng: np.random.Generator
) -> tuple[NDArray[Any], NDArray[Any] | None, str]:
    """(datasets, weights or None for i.i.d. samples, method) to integrate against Q."""
    if isinstance(Q, DiscretePrior):
        keep = Q.probs > 0.0
        return Q.support[keep], Q.probs[keep], "exact"
    if isinstance(Q, IndependentCellsPrior):
        tables = [_cell_table(Q, i) for i in range(Q.dim)]
        if np.prod([float(t[0].size) for t in tables]) <= GRID_MAX:
            xs = np.array(list(product(*(t[0] for t in tables))), dtype=np.float64)
            w = np.prod(np.array(list(product(*(t[1] for t in tables)))), axis=1)
            exact = all(isinstance(c, np.ndarray) for c in Q.cells)
            return xs, w, "exact" if exact else "exact (truncated grid)"
    return Q.sample(n_samples, rng), None, "monte carlo"


def _closed_form(score: Score, P: Prior, Q: Prior) -> float | None:
    r"""E_Q S(P, X) in closed form where one exists, else None."""
    if isinstance(score, DawidSebastiani):
        sign, logdet = np.linalg.slogdet(P.cov())
        if sign <= 0:
            return None
        d = Q.mean() - P.mean()
        inv = np.linalg.inv(P.cov())
        return float(logdet + np.trace(inv @ Q.cov()) + d @ inv @ d)
    if isinstance(score, MarginalDSS) and score.i is not None:
        i = score.i
        vp = float(P.marginal_var()[i])
        if vp <= 0.0:
            return None
        d2 = float(Q.mean()[i] - P.mean()[i]) ** 2
        return float(np.log(vp) + (float(Q.marginal_var()[i]) + d2) / vp)
    if isinstance(score, IntervalScore) and isinstance(Q, GaussianPrior) and Q.dim == 1:
        var = float(Q.cov_[0, 0])
        if var > 0.0:
            a, b = score.bayes_act(P)
            law = stats.norm(float(Q.mean_[0]), np.sqrt(var))
            return float(1.0 - (law.cdf(b) - law.cdf(a)))
    return None


def _weighted_mean(values: NDArray[Any], w: NDArray[Any]) -> float:
    with np.errstate(invalid="ignore"):
        return float(np.sum(w * values))


def check_properness(
    score: Score,
    beliefs: Sequence[Prior],
    *,
    n_samples: int = 20_000,
    rng: np.random.Generator | int | None = None,
) -> ProperCheck:
    r"""Look for a properness violation of ``score`` among a family of beliefs.

    For every ordered pair (P, Q) of distinct beliefs (and every member of a score family),
    compare

    .. math:: S(Q, Q) \quad\text{and}\quad S(P, Q) = \mathbb E_{X \sim Q} S(P, X),

    flagging :math:`S(Q, Q) > S(P, Q) + \text{tol}` (definition of properness, §1 of
    Bon et al. 2026; Gneiting & Raftery 2007).

    The expectation is computed

    - in closed form for the Dawid–Sebastiani scores (any Q with moments:
      :math:`\log\det\Sigma_P + \operatorname{tr}(\Sigma_P^{-1}\Sigma_Q) + (\mu_Q - \mu_P)^\top
      \Sigma_P^{-1}(\mu_Q - \mu_P)`) and for the interval score under a univariate Gaussian Q;
    - exactly for a ``DiscretePrior`` Q (sum over its support) and an
      ``IndependentCellsPrior`` Q whose product grid has at most ``GRID_MAX`` points (scipy
      cells truncated at upper-tail mass ``CELL_TAIL`` and renormalised);
    - otherwise by Monte Carlo with ``n_samples`` draws from Q, paired across P and Q; a gap
      is flagged only if it exceeds the tolerance plus ``MC_Z`` standard errors.

    Parameters
    ----------
    score : Score
        The score (or score family) to check.
    beliefs : sequence of Prior
        At least two beliefs of the same dimension, all acceptable to ``score``.
    n_samples : int
        Monte Carlo sample size (>= 2), used only where no exact computation applies.
    rng : numpy Generator, int or None
        Seed or generator for Monte Carlo.

    Returns
    -------
    ProperCheck
        ``.proper``, the worst ``.counterexample`` (or None) and the largest ``.gap``.

    Examples
    --------
    >>> import numpy as np
    >>> import persuasive as pp
    >>> from scipy import stats
    >>> q = pp.IndependentCellsPrior([stats.poisson(2.0)])
    >>> below = stats.poisson(2.0).pmf(np.arange(3))
    >>> p = pp.IndependentCellsPrior([below / below.sum()])  # Poisson(2) given X < 3
    >>> res = pp.check_properness(pp.SmallCellLogScore(0, r=3), [p, q])
    >>> res.proper, round(res.counterexample.S_QQ, 8), round(res.counterexample.S_PQ, 8)
    (False, 0.97812375, 0.7138396)
    >>> pp.check_properness(pp.LogScore(), [p, q]).proper
    True
    """
    if not isinstance(score, Score):
        raise ValidationError(f"score must be a Score (e.g. pp.LogScore()); got {score!r}")
    if isinstance(beliefs, (str, bytes)) or not hasattr(beliefs, "__len__"):
        raise ValidationError(f"beliefs must be a sequence of Priors; got {beliefs!r}")
    beliefs = list(beliefs)
    if len(beliefs) < 2:
        raise ValidationError(f"beliefs must hold at least two Priors; got {len(beliefs)}")
    for k, b in enumerate(beliefs):
        if not isinstance(b, Prior):
            raise ValidationError(f"beliefs[{k}] must be a Prior; got {b!r}")
        if b.dim != beliefs[0].dim:
            raise ValidationError(
                f"beliefs must share one dimension; beliefs[{k}] has dim "
                f"{b.dim}, beliefs[0] has dim {beliefs[0].dim}"
            )
    n_samples = dm.N_SAMPLES.check("n_samples", n_samples)
    gen = np.random.default_rng(rng)

    worst: ProperCounterexample | None = None
    worst_excess = 0.0
    best_gap = -np.inf
    methods: set[str] = set()
    pairs = 0
    for member in score.members(beliefs[0].dim):
        for qi, Q in enumerate(beliefs):
            xs: NDArray[Any] | None = None
            w: NDArray[Any] | None = None
            sq: NDArray[Any] = np.empty(0)
            for pi, P in enumerate(beliefs):
                if pi == qi:
                    continue
                s_qq, s_pq = _closed_form(member, Q, Q), _closed_form(member, P, Q)
                se = 0.0
                if s_qq is not None and s_pq is not None:
                    methods.add("closed form")
                else:
                    if xs is None:
                        xs, w, how = _outcomes(Q, n_samples, gen)
                        methods.add(how)
                        sq = _evaluate(member, Q, xs)
                    sp = _evaluate(member, P, xs)
                    if w is not None:
                        s_qq, s_pq = _weighted_mean(sq, w), _weighted_mean(sp, w)
                    else:
                        s_qq, s_pq = float(np.mean(sq)), float(np.mean(sp))
                        with np.errstate(invalid="ignore"):
                            diff = sq - sp
                        if np.all(np.isfinite(diff)):
                            se = float(np.std(diff, ddof=1) / np.sqrt(diff.size))
                pairs += 1
                with np.errstate(invalid="ignore"):
                    gap = s_qq - s_pq
                if np.isnan(gap):
                    continue
                best_gap = max(best_gap, gap)
                allowed = PROPER_ATOL + PROPER_RTOL * (abs(s_pq) if np.isfinite(s_pq) else 0.0)
                excess = gap - allowed - MC_Z * se
                if excess > 0.0 and (worst is None or excess > worst_excess):
                    worst = ProperCounterexample(member, P, Q, s_qq, s_pq, se)
                    worst_excess = excess
    return ProperCheck(
        proper=worst is None,
        counterexample=worst,
        gap=float(best_gap),
        pairs=pairs,
        method="+".join(sorted(methods)) or "none",
    )
