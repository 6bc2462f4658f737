r"""The small-cell log score :math:`L_i^r` of private cell suppression (§5.2, Prop 8,
Bon et al. 2026) [RECON, docs/math.md §9]."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _domains as dm
from persuasive import _tolerances as tol
from persuasive.errors import ValidationError
from persuasive.priors.base import Prior, as_dataset
from persuasive.priors.cells import IndependentCellsPrior
from persuasive.priors.discrete import DiscretePrior
from persuasive.scores.base import Score


def _marginal_logpmf(P: Prior, i: int, values: NDArray[np.float64]) -> NDArray[np.float64]:
    """log q_i(values): the i-th marginal pmf of P (-inf off its support)."""
    if isinstance(P, IndependentCellsPrior):
        return np.asarray(P.cell_logpmf(i, values), dtype=np.float64)
    if isinstance(P, DiscretePrior):
        col = P.support[:, i]
        hit = np.abs(values[:, None] - col[None, :]) <= tol.OUTPUT_ATOL
        mass = hit.astype(np.float64) @ P.probs
        with np.errstate(divide="ignore"):
            return np.log(mass)
    raise ValidationError(
        f"P must be a discrete belief with a marginal pmf (IndependentCellsPrior or "
        f"DiscretePrior) for the small-cell log score; got {type(P).__name__}"
    )


@dataclass(frozen=True)
class SmallCellLogScore(Score):
    r"""The small-cell log score :math:`L_i^r` (§5.2 and Prop 8, Bon et al. 2026).

    .. math:: L_i^r(Q, x) = \begin{cases} -\log q_i(x_i) & x_i < r \\ 0 & x_i \ge r
              \end{cases}, \qquad \mathcal L_n^r = \{L_i^r\}_{i=1}^n

    where :math:`q_i` is the i-th marginal pmf of Q: a cell count of at least r is "inherently
    private" and scores 0. The displayed formula is missing from the paper; this is the only
    natural variant consistent with Prop 8's :math:`\kappa = -\log\alpha`
    [RECON, docs/math.md §9].

    **Not proper** (``proper = False``): for :math:`Q` = Poisson(2) and r = 3,
    :math:`S(Q, Q) = 0.97812375 > S(Q(\cdot \mid X < 3), Q) = 0.71383960` (docs/math.md §9), since a
    belief concentrated below r lowers the log loss on small counts at no cost on large ones.
    Definition 3 only evaluates it at Bayes beliefs Q and :math:`Q_T`, so it is still usable.

    Parameters
    ----------
    i : int or None
        The cell (0-based). ``None`` is the family :math:`\mathcal L_n^r` (every cell, the
        worst one counting in Definition 3).
    r : int
        The privacy threshold, an integer ``2 <= r <= 10**6`` (§5.2 takes r >= 2; the
        declared domain :data:`persuasive._domains.SCORE_R`, shared with the spec format).

    Examples
    --------
    >>> import persuasive as pp
    >>> from scipy import stats
    >>> q = pp.IndependentCellsPrior([stats.poisson(4.0)])
    >>> round(pp.SmallCellLogScore(0, r=3)(q, [1]), 6), pp.SmallCellLogScore(0, r=3)(q, [5])
    (2.613706, 0.0)
    >>> m = pp.CellSuppression(3)
    >>> round(max(pp.relative_loss(pp.SmallCellLogScore(r=3), q, m, [k]) for k in range(9)), 10)
    1.4350506425
    """

    i: int | None = None
    r: int = 2

    proper = False

    def __post_init__(self) -> None:
        params = dm.SCORES["small_cell_log"]
        object.__setattr__(self, "i", params["i"].check("i", self.i))
        object.__setattr__(self, "r", params["r"].check("r", self.r))

    @property
    def is_family(self) -> bool:
        return self.i is None

    def members(self, n: int) -> list[Score]:
        if self.i is None:
            return [SmallCellLogScore(j, self.r) for j in range(n)]
        if self.i >= n:
            raise ValidationError(f"SmallCellLogScore cell index i must be < n = {n}; got {self.i}")
        return [self]

    def _cell(self, n: int) -> int:
        if self.i is None:
            raise ValidationError(
                "SmallCellLogScore() without i is the family of every L_i^r; "
                "use members(n) or SmallCellLogScore(i, r)"
            )
        if self.i >= n:
            raise ValidationError(f"SmallCellLogScore cell index i must be < n = {n}; got {self.i}")
        return self.i

    def member_values(self, P: Prior, x: ArrayLike, n: int) -> NDArray[np.float64]:
        """Every :math:`L_i^r(P, x)` of the family at once (vectorised over cells)."""
        if self.i is not None or not isinstance(P, IndependentCellsPrior):
            return super().member_values(P, x, n)
        xs = as_dataset(x)
        small = xs < self.r
        return np.where(small, -P.logpmf_cells(np.where(small, xs, 0.0)), 0.0)

    def _evaluate_many(self, P: Prior, xs: NDArray[np.float64]) -> NDArray[np.float64]:
        """L_i^r(P, x) for datasets of shape (m, n)."""
        i = self._cell(P.dim)
        vals = np.asarray(xs, dtype=np.float64)[:, i]
        small = vals < self.r
        out = np.zeros(vals.shape[0])
        if small.any():
            out[small] = -_marginal_logpmf(P, i, vals[small])
        return out

    def __call__(self, P: Prior, x: ArrayLike) -> float:
        xs = as_dataset(x)
        if not isinstance(P, Prior) or xs.shape[0] != P.dim:
            raise ValidationError(
                f"x must have n = {getattr(P, 'dim', '?')} cells to match the "
                f"belief; got {xs.tolist()}"
            )
        return float(self._evaluate_many(P, xs[None, :])[0])

    def describe(self) -> dict[str, Any]:
        return {"score": "SmallCellLogScore", "i": self.i, "r": self.r}
